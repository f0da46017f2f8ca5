#!/usr/bin/env bats
# build.bats - the Makefile's incremental build: a second `make` compiles
# nothing (sanitize.stamp always exists and is rewritten only when SANITIZE
# changes), `make install` after `make` compiles nothing (so that `sudo make
# install` does not build as root), and changing SANITIZE rebuilds what it
# compiles, there and back. Each file builds a copy of the source tree once.

bats_require_minimum_version 1.5.0
load helper

# Copy the tree's sources (tracked and untracked, not the ignored build
# products) and build it once with the build's own SANITIZE.
setup_file() {
	export B=$BATS_FILE_TMPDIR/tree
	command -v "${CC:-cc}" > /dev/null || return 0
	mkdir -p "$B"
	if git -C "$SCAR_ROOT" rev-parse --is-inside-work-tree > /dev/null 2>&1; then
		(cd "$SCAR_ROOT" && git ls-files -z -c -o --exclude-standard |
			tar --null -T - -cf -) | tar -xf - -C "$B"
	else
		cp -r "$SCAR_ROOT/." "$B" && make -C "$B" clean > /dev/null
	fi
	make -C "$B" -j2 SANITIZE="$SCAR_SANITIZE" all > "$BATS_FILE_TMPDIR/build.log" 2>&1 &&
		touch "$BATS_FILE_TMPDIR/built"
}

need_build() {
	command -v "${CC:-cc}" > /dev/null || skip "no C compiler (${CC:-cc}) to build with"
	if [ ! -e "$BATS_FILE_TMPDIR/built" ]; then
		tail -n 30 "$BATS_FILE_TMPDIR/build.log"
		echo "the first make failed"
		return 1
	fi
}

# Lines of make's output that compile, link or archive something.
builds() {
	grep -E '(^|[[:space:]/])(cc|gcc|clang|mpicc|ar)[[:space:]]' || true
}

# Fail, showing the first few, when make's output $1 built anything.
built_nothing() {
	local b
	b=$(builds <<< "$1")
	[ -z "$b" ] && return 0
	echo "built $(wc -l <<< "$b") things, first:"
	head -n 3 <<< "$b" | cut -c1-200
	return 1
}

@test "a second make compiles nothing and make -q finds all up to date" {
	need_build
	run make -C "$B" -j2 SANITIZE="$SCAR_SANITIZE" all
	assert_success
	built_nothing "$output"
	run make -C "$B" -q SANITIZE="$SCAR_SANITIZE" all
	assert_success
	[ -e "$B/sanitize.stamp" ]
}

@test "make install after make compiles nothing" {
	need_build
	run make -C "$B" SANITIZE="$SCAR_SANITIZE" install DESTDIR="$BATS_TEST_TMPDIR/root" PREFIX=/usr
	assert_success
	built_nothing "$output"
	[ -x "$BATS_TEST_TMPDIR/root/usr/bin/scar-train" ]
}

@test "changing SANITIZE recompiles, there and back, and then nothing" {
	need_build
	local other=undefined
	[ "$SCAR_SANITIZE" != undefined ] || other=address
	run make -C "$B" SANITIZE=$other lib/rng.o
	assert_success
	assert_output --partial "-fsanitize=$other"
	run make -C "$B" SANITIZE="$SCAR_SANITIZE" lib/rng.o
	assert_success
	assert_output --partial "lib/rng.c"
	refute_output --partial "-fsanitize=$other"
	run make -C "$B" SANITIZE="$SCAR_SANITIZE" lib/rng.o
	assert_success
	built_nothing "$output"
}

@test "check-includes lists a cycle among library files, and -a lets a known one pass" {
	cd "$BATS_TEST_TMPDIR"
	mkdir lib
	printf 'int a_one(void)\n{\n\treturn b_two() + 1;\n}\n' > lib/a.c
	printf '/* a_one( in a comment is no use */\nint b_two(void)\n{\n\treturn 2;\n}\n' > lib/b.c
	printf '#include "c.h"\nint c_three(void)\n{\n\treturn 3;\n}\n' > lib/c.c
	printf 'static inline int c_inline(void)\n{\n\treturn 0;\n}\n' > lib/c.h
	run sh "$SCAR_ROOT/tools/check-includes.sh" lib/a.c lib/b.c lib/c.c
	assert_success
	assert_output --partial "no cycles among 3 files"
	printf 'int b_two(void)\n{\n\treturn a_one();\n}\n' > lib/b.c
	run sh "$SCAR_ROOT/tools/check-includes.sh" lib/a.c lib/b.c lib/c.c
	assert_failure 1
	assert_line "cycle: lib/a.c lib/b.c"
	assert_line "  lib/a.c -> lib/b.c (b_two)"
	assert_line "  lib/b.c -> lib/a.c (a_one)"
	# c.c uses a.c through its header's inline function, and b.c uses c.c: one cycle of three
	printf 'static inline int c_inline(void)\n{\n\treturn a_one();\n}\n' > lib/c.h
	printf 'int b_two(void)\n{\n\treturn a_one() + c_three();\n}\n' > lib/b.c
	run sh "$SCAR_ROOT/tools/check-includes.sh" lib/a.c lib/b.c lib/c.c
	assert_failure 1
	assert_line "cycle: lib/a.c lib/b.c lib/c.c"
	echo "lib/a.c lib/b.c lib/c.c" > known
	run sh "$SCAR_ROOT/tools/check-includes.sh" -a known lib/a.c lib/b.c lib/c.c
	assert_success
	assert_line "known cycle: lib/a.c lib/b.c lib/c.c"
	# a known cycle that grew is a new one
	echo "lib/a.c lib/b.c" > known
	run sh "$SCAR_ROOT/tools/check-includes.sh" -a known lib/a.c lib/b.c lib/c.c
	assert_failure 1
}

@test "the library has no cycles but the known ones (make check-includes)" {
	# SANITIZE as the build's: any other value would rewrite sanitize.stamp
	# under the suites that run after this one
	run make -s -C "$SCAR_ROOT" SANITIZE="$SCAR_SANITIZE" check-includes
	assert_success
}
