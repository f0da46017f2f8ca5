#!/usr/bin/env bats
# man.bats - the man pages: mandoc lint clean, the required sections, and
# every command of their EXAMPLES run as a test.
#
# The commands of a page are the lines of its .Bd -literal blocks in the
# EXAMPLES section. In a block that uses "$ " prompts only the prompted
# lines are commands (the others are sample output); otherwise every line
# is. A line ending in a backslash, "|", "&&" or "||" continues on the
# next. \e is a backslash, \& and \- are dropped to their text. All
# commands of a page run in one scratch directory, in page order, with the
# built tools first on PATH, so a later example can use what an earlier one
# wrote. A tool's "no" answer (exit status 1, see no_answer) passes. A
# command that fails because a file it reads is not here (data the page
# assumes the reader has) or a program that is not installed is skipped
# with a message; any other failure fails the page.

bats_require_minimum_version 1.5.0
load helper

PAGES="scar-bound.1 scar-ckpt.1 scar-ckpt.5 scar-diff.1 scar-events.7 scar-inject.1 scar-mpi.7 scar-train.1 scar.7"

# Write the EXAMPLES commands of page $1 into files $2/001, $2/002, ...
extract_examples() {
	mkdir -p "$2"
	awk -v dir="$2" '
	function emit() {
		if (cmd == "") return
		f = sprintf("%s/%03d", dir, ++ncmd)
		printf "%s\n", cmd > f
		close(f)
		cmd = ""
	}
	function unroff(s) {
		gsub(/\\e/, "\001", s)
		gsub(/\\&/, "", s)
		gsub(/\\-/, "-", s)
		gsub(/\001/, "\\", s)
		return s
	}
	function block(   i, s, prompted, cont) {
		prompted = 0
		for (i = 0; i < nl; i++)
			if (l[i] ~ /^[ \t]*\$ /) prompted = 1
		cmd = ""; cont = 0
		for (i = 0; i < nl; i++) {
			s = l[i]
			if (s ~ /^\./) continue		# a macro inside the block
			s = unroff(s)
			if (cont) {
				sub(/^[ \t]+/, "", s)
				cmd = cmd " " s
			} else if (prompted && s ~ /^[ \t]*\$ /) {
				emit(); sub(/^[ \t]*\$ /, "", s); cmd = s
			} else if (!prompted && s ~ /[^ \t]/) {
				emit(); sub(/^[ \t]+/, "", s); cmd = s
			} else {
				emit(); continue	# output, or a blank line
			}
			cont = 0
			if (cmd ~ /\\$/) { sub(/[ \t]*\\$/, "", cmd); cont = 1 }
			else if (cmd ~ /(\||&&)[ \t]*$/) cont = 1
		}
		emit()
	}
	/^\.Sh / { ex = ($0 ~ /^\.Sh[ \t]+EXAMPLES/); next }
	!ex { next }
	/^\.Bd[ \t]+-literal/ { inb = 1; nl = 0; next }
	/^\.Ed/ { if (inb) block(); inb = 0; next }
	inb { l[nl++] = $0 }
	' "$1"
}

# Why a failed command may be skipped: prints the reason, or fails.
skip_reason() {
	local err=$1 rc=$2 dir=$3 p prog
	if [ "$rc" = 127 ]; then
		prog=$(sed -n 's/^.*: \([^:]*\): command not found$/\1/p' "$err" | head -n 1)
		case $prog in
		'' | scar-*) ;;
		*) echo "'$prog' is not installed"; return 0 ;;
		esac
	fi
	# Files it reads that are not here: "'p': No such file" or "p: No such file".
	while IFS= read -r p; do
		[ -n "$p" ] || continue
		if [ ! -e "$dir/$p" ] && [ ! -e "$p" ]; then
			echo "needs '$p', absent here"
			return 0
		fi
	done < <(sed -n -e "s/.*'\([^']*\)'.*No such file or directory.*/\1/p" \
		-e "/'/!s/.*[: ]\([^: ']\{1,\}\): No such file or directory.*/\1/p" "$err")
	return 1
}

# Around each example: remember the last simple command it ran, and the
# statuses of its last pipeline; exit as pipefail would.
EXAMPLE_PRELUDE='trap '"'"'__prev=$__cur; __cur=$BASH_COMMAND'"'"' DEBUG
'
EXAMPLE_POSTLUDE='
__ps=("${PIPESTATUS[@]}") __last=$__prev
trap - DEBUG
echo "${__ps[*]}" > "$SCAR_EX_PS"
printf "%s\n" "$__last" > "$SCAR_EX_LAST"
__rc=0
for __s in "${__ps[@]}"; do [ "$__s" -eq 0 ] || __rc=$__s; done
exit $__rc
'

# Exit status 1 is a tool's "no" answer (scar-diff: different, scar-bound
# check: exceeded), fine in an example, when nothing complained on stderr
# (scar-inject's report is JSON) and either it came from an earlier stage of
# the last pipeline (scar-diff ... | jq .l2) or the last command run was a
# scar tool (scar-diff -q a b && echo same). A last stage that is not a scar tool saying 1 (cmp: differ,
# grep: no match) is a failure.
no_answer() {
	local ps
	grep -qv '^{' "$BATS_TEST_TMPDIR/err" && return 1
	[ -s "$SCAR_EX_PS" ] || return 1
	read -r -a ps < "$SCAR_EX_PS"
	[ "${#ps[@]}" -gt 1 ] && [ "${ps[${#ps[@]}-1]}" -eq 0 ] && return 0
	grep -q '^scar-[a-z]*\( \|$\)' "$SCAR_EX_LAST"
}

# Run the examples of man/$1; fail on the first that fails for a reason
# other than absent data.
run_examples() {
	local page=$1 src=$SCAR_ROOT/man/$1 work=$BATS_TEST_TMPDIR/work cmds=$BATS_TEST_TMPDIR/cmds
	local f rc why ran=0 skipped=0
	[ -f "$src" ] || { echo "no page '$src'"; return 1; }
	extract_examples "$src" "$cmds"
	mkdir -p "$work"
	# scar-mpi(7): Open MPI refuses root unless told, and 4 ranks may be
	# more than the cores here.
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
		OMPI_MCA_rmaps_base_oversubscribe=1
	export SCAR_EX_PS=$BATS_TEST_TMPDIR/ex.ps SCAR_EX_LAST=$BATS_TEST_TMPDIR/ex.last
	for f in "$cmds"/*; do
		[ -f "$f" ] || { echo "$page: no commands in its EXAMPLES"; return 1; }
		rc=0
		: > "$SCAR_EX_PS"
		: > "$SCAR_EX_LAST"
		(cd "$work" && bash -c "$EXAMPLE_PRELUDE$(cat "$f")$EXAMPLE_POSTLUDE") </dev/null \
			>"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" || rc=$?
		if [ "$rc" -eq 0 ]; then
			ran=$((ran + 1))
			continue
		fi
		if [ "$rc" -eq 1 ] && no_answer; then
			echo "# $page: exit status 1, a 'no' answer: $(cat "$f")" >&3
			ran=$((ran + 1))
			continue
		fi
		if why=$(skip_reason "$BATS_TEST_TMPDIR/err" "$rc" "$work"); then
			echo "# $page: skipped ($why): $(cat "$f")" >&3
			skipped=$((skipped + 1))
			continue
		fi
		echo "$page: example failed with exit status $rc:"
		echo "  \$ $(cat "$f")"
		sed 's/^/  stderr: /' "$BATS_TEST_TMPDIR/err" | head -n 20
		sed 's/^/  stdout: /' "$BATS_TEST_TMPDIR/out" | head -n 5
		return 1
	done
	if [ "$ran" -eq 0 ]; then
		skip "$page: every example needs data absent here"
	fi
}

@test "every man page is lint clean (mandoc -Tlint -W warning)" {
	local m bad=0
	command -v mandoc >/dev/null || skip "mandoc not installed"
	for m in "$SCAR_ROOT"/man/*.[157]; do
		if ! mandoc -Tlint -W warning "$m" >"$BATS_TEST_TMPDIR/lint" 2>&1; then
			cat "$BATS_TEST_TMPDIR/lint"
			bad=1
		fi
	done
	[ "$bad" -eq 0 ]
}

@test "every man page has NAME, SYNOPSIS, DESCRIPTION, EXIT STATUS and EXAMPLES" {
	local m bad=0
	for m in "$SCAR_ROOT"/man/*.[157]; do
		awk -v page="${m##*/}" '
		/^\.Sh / { sec = substr($0, 5); have[sec] = 1; next }
		sec == "EXAMPLES" && /^\.Bd -literal/ { lit = 1 }
		END {
			n = split("NAME|SYNOPSIS|DESCRIPTION|EXIT STATUS|EXAMPLES", want, "|")
			for (i = 1; i <= n; i++)
				if (!(want[i] in have)) { print page ": no section " want[i]; bad = 1 }
			if (!lit) { print page ": no .Bd -literal example in EXAMPLES"; bad = 1 }
			exit bad
		}' "$m" || bad=1
	done
	[ "$bad" -eq 0 ]
}

@test "each tool has a page in section 1" {
	local t bad=0
	for t in scar-train scar-ckpt scar-diff scar-inject scar-bound; do
		[ -f "$SCAR_ROOT/man/$t.1" ] || { echo "no man/$t.1"; bad=1; }
	done
	[ "$bad" -eq 0 ]
}

@test "the example extractor: prompts, output lines, continuations, escapes" {
	cat > page.1 <<'EOF'
.Sh DESCRIPTION
.Bd -literal
$ not an example
.Ed
.Sh EXAMPLES
Two:
.Bd -literal -offset indent
$ echo one \e
    two | tr a-z A-Z
ONE TWO
$ printf '%s\en' a |
    wc -l
.Ed
.Pp
.Bd -literal
echo three \e
  four
\&echo five
.Ed
.Sh SEE ALSO
EOF
	extract_examples page.1 cmds
	run -0 cat cmds/001
	[ "$output" = "echo one two | tr a-z A-Z" ]
	run -0 cat cmds/002
	[ "$output" = "printf '%s\n' a | wc -l" ]
	run -0 cat cmds/003
	[ "$output" = "echo three four" ]
	run -0 cat cmds/004
	[ "$output" = "echo five" ]
	[ ! -e cmds/005 ]
}

@test "the example runner fails on a failing example and skips absent data" {
	mkdir -p man
	printf '%s\n' '.Sh EXAMPLES' '.Bd -literal' '$ true' '$ cat nothing-here.ckpt' \
		'$ echo hi > made.txt' '$ cat made.txt' .Ed > man/ok.1
	SCAR_ROOT=$PWD run -0 run_examples ok.1
	[ -f work/made.txt ]
	rm -rf cmds work
	printf '%s\n' '.Sh EXAMPLES' '.Bd -literal' '$ true' '$ exit 3' .Ed > man/bad.1
	SCAR_ROOT=$PWD run -1 run_examples bad.1
	[[ $output == *"exit status 3"* ]]
	# a tool's "no" answer passes; a last stage's 1 that is not one fails
	rm -rf cmds work
	mkdir -p bin
	printf '#!/bin/sh\nexit 1\n' > bin/scar-diff
	chmod +x bin/scar-diff
	PATH=$PWD/bin:$PATH
	printf '%s\n' '.Sh EXAMPLES' '.Bd -literal' '$ scar-diff a b | cat' '$ scar-diff a b' \
		'$ scar-diff a b && echo same' .Ed > man/no.1
	SCAR_ROOT=$PWD run -0 run_examples no.1
	rm -rf cmds work
	printf '%s\n' '.Sh EXAMPLES' '.Bd -literal' '$ echo a | grep -q b' .Ed > man/grep.1
	SCAR_ROOT=$PWD run -1 run_examples grep.1
	[[ $output == *"exit status 1"* ]]
	rm -rf cmds work
	printf '%s\n' '.Sh EXAMPLES' '.Bd -literal' '$ scar-diff a b; grep -q b /dev/null' .Ed > man/grep2.1
	SCAR_ROOT=$PWD run run_examples grep2.1
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *"exit status 1"* ]]
}

@test "scar-train(1) examples run" { run_examples scar-train.1; }
@test "scar-ckpt(1) examples run" { run_examples scar-ckpt.1; }
@test "scar-ckpt(5) examples run" { run_examples scar-ckpt.5; }
@test "scar-diff(1) examples run" { run_examples scar-diff.1; }
@test "scar-inject(1) examples run" { run_examples scar-inject.1; }
@test "scar-bound(1) examples run" { run_examples scar-bound.1; }
@test "scar-events(7) examples run" { run_examples scar-events.7; }
@test "scar-mpi(7) examples run" {
	command -v mpirun >/dev/null || skip "mpirun not installed"
	# the MPI variant says how many ranks it ran on in its header
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
		mpirun --oversubscribe -np 2 scar-train -q -m ridge -n 1 --no-timing > probe.jsonl 2>&1 || true
	grep -q '"ranks":2' probe.jsonl || skip "scar-train is not the MPI variant (see scar-mpi(7))"
	run_examples scar-mpi.7
}
@test "scar(7) examples run" { run_examples scar.7; }

@test "the examples of any other page in man/ run" {
	local m n=0 rc=0
	for m in "$SCAR_ROOT"/man/*.[157]; do
		case " $PAGES " in *" ${m##*/} "*) continue ;; esac
		n=$((n + 1))
		rm -rf "$BATS_TEST_TMPDIR/work" "$BATS_TEST_TMPDIR/cmds"
		( run_examples "${m##*/}" ) || rc=1
	done
	[ "$n" -gt 0 ] || skip "every page has its own test above"
	return $rc
}
