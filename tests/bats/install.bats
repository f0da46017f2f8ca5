#!/usr/bin/env bats
# install.bats - make install / make uninstall with PREFIX and DESTDIR: the
# files land in their conventional places, an example program builds
# against the installed library with pkg-config, the installed tools run,
# the installed man pages render, and uninstall leaves nothing behind but
# the directories that were there before.

bats_require_minimum_version 1.5.0
load helper

VERSION_RE='^VERSION[[:space:]]*:=[[:space:]]*'

# A staging root that looks like a system's /usr/local before the install:
# the conventional directories, one holding another package's files.
setup_file() {
	export ROOT=$BATS_FILE_TMPDIR/root
	export P=$ROOT/usr/local
	mkdir -p "$P/bin" "$P/lib" "$P/include" "$P/share/man/man1" "$P/share/doc" "$P/sbin"
	printf '#!/bin/sh\n' > "$P/bin/other-tool"
	printf '.TH OTHER 1\n' > "$P/share/man/man1/other.1"
	(cd "$ROOT" && find . | LC_ALL=C sort) > "$BATS_FILE_TMPDIR/before"
	# (with the build's own SANITIZE, or make would rebuild it without)
	make -C "$SCAR_ROOT" install SANITIZE="$SCAR_SANITIZE" DESTDIR="$ROOT" PREFIX=/usr/local \
		>"$BATS_FILE_TMPDIR/install.log" 2>&1 && touch "$BATS_FILE_TMPDIR/installed"
	(cd "$ROOT" && find . | LC_ALL=C sort) > "$BATS_FILE_TMPDIR/after"
}

need_install() {
	if [ ! -e "$BATS_FILE_TMPDIR/installed" ]; then
		tail -n 30 "$BATS_FILE_TMPDIR/install.log"
		echo "make install failed"
		return 1
	fi
}

@test "make install puts every file in its conventional place" {
	need_install
	local t h m f bad=0
	for t in scar-train scar-ckpt scar-diff scar-inject scar-bound; do
		[ -x "$P/bin/$t" ] || { echo "no bin/$t"; bad=1; }
	done
	[ -f "$P/lib/libscar.a" ] || { echo "no lib/libscar.a"; bad=1; }
	[ -f "$P/lib/pkgconfig/scar.pc" ] || { echo "no lib/pkgconfig/scar.pc"; bad=1; }
	for h in "$SCAR_ROOT"/include/scar/*.h; do
		cmp -s "$h" "$P/include/scar/${h##*/}" || { echo "no include/scar/${h##*/}"; bad=1; }
	done
	for m in "$SCAR_ROOT"/man/*.[157]; do
		f=$P/share/man/man${m##*.}/${m##*/}
		cmp -s "$m" "$f" || { echo "no ${f#"$P"/}"; bad=1; }
	done
	for f in "$SCAR_ROOT"/completions/bash/*; do
		[ -f "$P/share/bash-completion/completions/${f##*/}" ] || { echo "no bash completion ${f##*/}"; bad=1; }
	done
	for f in "$SCAR_ROOT"/completions/zsh/*; do
		[ -f "$P/share/zsh/site-functions/${f##*/}" ] || { echo "no zsh completion ${f##*/}"; bad=1; }
	done
	for f in "$SCAR_ROOT"/completions/fish/*; do
		[ -f "$P/share/fish/vendor_completions.d/${f##*/}" ] || { echo "no fish completion ${f##*/}"; bad=1; }
	done
	# nothing outside PREFIX
	if grep -v '^\./usr/local' "$BATS_FILE_TMPDIR/after" | grep -vxF -e . -e ./usr; then
		echo "installed outside PREFIX (above)"; bad=1
	fi
	# the build tree's own paths do not leak into what is installed
	if grep -rlF "$SCAR_ROOT" "$P/lib/pkgconfig" "$P/include" "$P/share"; then
		echo "the build directory is named in installed files (above)"; bad=1
	fi
	[ "$bad" -eq 0 ]
}

@test "scar.pc describes the installed library" {
	need_install
	local version
	version=$(sed -n "s/$VERSION_RE//p" "$SCAR_ROOT/Makefile")
	export PKG_CONFIG_PATH=$P/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$ROOT
	run -0 pkg-config --modversion scar
	[ "$output" = "$version" ]
	# (variables are not sysroot-relative, so ask without the sysroot)
	run -0 env -u PKG_CONFIG_SYSROOT_DIR pkg-config --variable=prefix scar
	[ "$output" = /usr/local ]
	run -0 pkg-config --cflags scar
	[[ $output == *"-I$P/include"* ]]
	run -0 pkg-config --libs scar
	[[ $output == *"-L$P/lib"* && $output == *-lscar* && $output == *-ljansson* && $output == *-llz4* ]]
}

@test "examples/ckpt-roundtrip.c builds against the installed library with pkg-config and runs" {
	need_install
	export PKG_CONFIG_PATH=$P/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$ROOT
	local flags
	flags=$(pkg-config --cflags --libs scar)
	# only the installed headers and library: compile outside the tree
	cp "$SCAR_ROOT/examples/ckpt-roundtrip.c" .
	run -0 ${CC:-cc} -std=c11 -Wall -Wextra -Werror -O2 -o ckpt-roundtrip ckpt-roundtrip.c $flags
	run -0 ./ckpt-roundtrip rt.ckpt
	[[ $output == *identical* ]]
	# what it wrote is a checkpoint the installed tools accept
	run -0 "$P/bin/scar-ckpt" verify rt.ckpt
}

@test "every installed header compiles on its own" {
	need_install
	export PKG_CONFIG_PATH=$P/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$ROOT
	local h n=0
	for h in "$P"/include/scar/*.h; do
		printf '#include <scar/%s>\nint main(void) { return 0; }\n' "${h##*/}" > "alone-${h##*/}.c"
		n=$((n + 1))
	done
	[ "$n" -ge 10 ]
	# one compiler run; its messages name the file of the header that fails
	run -0 ${CC:-cc} -std=c11 -Wall -Wextra -Wpedantic -Werror -fsyntax-only \
		$(pkg-config --cflags scar) alone-*.c
}

@test "the installed tools run, without the build tree" {
	need_install
	local t
	PATH=$P/bin:/usr/local/bin:/usr/bin:/bin
	for t in scar-train scar-ckpt scar-diff scar-inject scar-bound; do
		[ "$(command -v "$t")" = "$P/bin/$t" ]
		run -0 "$t" --version
		[[ $output == "$t "* ]]
	done
	run -0 scar-train -q -m ridge -n 10 --no-timing --save a.ckpt --events a.jsonl
	run -0 scar-ckpt verify a.ckpt
	run -0 --separate-stderr scar-inject --lose-shards 1 --reset zero a.ckpt b.ckpt
	run -1 scar-diff -q a.ckpt b.ckpt
	run -0 scar-bound fit a.jsonl
	run -0 scar-bound evaluate --c 0.9 --D 5 --delta 1@10
	scar-train -q --resume b.ckpt -n 20 --no-timing > resumed.jsonl
	grep -q '"type":"summary"' resumed.jsonl
}

@test "every installed man page renders, and man finds it under MANDIR" {
	need_install
	local f name sec n=0
	for f in "$P"/share/man/man[157]/scar*; do
		[ -f "$f" ] || continue
		n=$((n + 1))
		if command -v man >/dev/null; then
			run -0 --separate-stderr env MANPAGER=cat MANWIDTH=80 man -l "$f"
		else
			run -0 --separate-stderr mandoc -Tutf8 "$f"
		fi
		[ -n "$output" ] || { echo "$f renders empty"; return 1; }
		[ -z "$stderr" ] || { echo "$f: $stderr"; return 1; }
		[[ $output == *NAME* && $output == *EXAMPLES* ]] || { echo "$f: no NAME or EXAMPLES"; return 1; }
		name=${f##*/}; sec=${name##*.}; name=${name%.*}
		if command -v man >/dev/null; then
			run -0 man -M "$P/share/man" -w "$sec" "$name"
			[ "$output" = "$f" ] || { echo "man -w $sec $name: '$output'"; return 1; }
		fi
	done
	[ "$n" -ge 8 ] || { echo "only $n pages installed"; return 1; }
}

@test "the installed bash completions load and complete" {
	need_install
	local f
	for f in "$P"/share/bash-completion/completions/*; do
		[ -f "$f" ] || continue
		run -0 bash -c 'source "$1" && complete -p "${1##*/}"' _ "$f"
	done
}

@test "make uninstall leaves nothing but the directories that were there before" {
	need_install
	run -0 make -C "$SCAR_ROOT" uninstall DESTDIR="$ROOT" PREFIX=/usr/local
	(cd "$ROOT" && find . | LC_ALL=C sort) > left
	if ! diff -u "$BATS_FILE_TMPDIR/before" left; then
		echo "left behind (+) or removed (-) by install and uninstall, above"
		return 1
	fi
}

@test "PREFIX moves everything, and uninstall with the same PREFIX removes every file" {
	local root=$BATS_TEST_TMPDIR/opt-root
	run -0 make -C "$SCAR_ROOT" install SANITIZE="$SCAR_SANITIZE" DESTDIR="$root" PREFIX=/opt/scar
	[ -x "$root/opt/scar/bin/scar-train" ]
	[ -f "$root/opt/scar/share/man/man7/scar.7" ]
	grep -qx 'prefix=/opt/scar' "$root/opt/scar/lib/pkgconfig/scar.pc"
	grep -qx 'libdir=/opt/scar/lib' "$root/opt/scar/lib/pkgconfig/scar.pc"
	run -0 env PKG_CONFIG_PATH="$root/opt/scar/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$root" \
		pkg-config --cflags scar
	[[ $output == *"-I$root/opt/scar/include"* ]]
	run -0 make -C "$SCAR_ROOT" uninstall DESTDIR="$root" PREFIX=/opt/scar
	run -0 find "$root" ! -type d
	[ -z "$output" ] || { echo "files left: $output"; return 1; }
}
