#!/usr/bin/env bats
# readme-tour.bats - README.md's getting started and its tour, run as printed.
#
# The commands of a README section are its indented (4 spaces) code lines.
# In a block that uses "$ " prompts only the prompted lines are commands and
# the other lines are the output shown for the command before them; otherwise
# every line is a command. A line ending in a backslash continues on the
# next. All commands of a section run in one scratch directory, in order,
# as a shell runs them (without pipefail: scar-diff's 1 for "different"
# before a pipe is how a reader sees it too); each must exit 0 and write
# nothing to stderr but JSON (scar-inject's report), so a failing earlier
# stage of a pipe fails by its message; each output line shown must appear
# in what the command printed, in the order shown, where "..." stands for
# any text. The getting-started lines are checked against a scratch install.

bats_require_minimum_version 1.5.0
load helper

# Write the commands of README section $1 (its "## " title) into $2/001,
# $2/002, ..., and the output shown for command NNN into $2/NNN.out.
extract_section() {
	mkdir -p "$2"
	awk -v want="$1" -v dir="$2" '
	function emit() {
		if (cmd == "") return
		f = sprintf("%s/%03d", dir, ++ncmd)
		printf "%s\n", cmd > f
		close(f)
		printf "" > (f ".out")
		close(f ".out")
		cmd = ""
	}
	function block(   i, s, prompted, cont, f) {
		prompted = 0
		for (i = 0; i < nl; i++)
			if (l[i] ~ /^    \$ /) prompted = 1
		cmd = ""; cont = 0
		for (i = 0; i < nl; i++) {
			s = l[i]
			if (cont) {
				sub(/^[ \t]+/, "", s)
				cmd = cmd " " s
			} else if (prompted && s ~ /^    \$ /) {
				emit(); sub(/^    \$ /, "", s); cmd = s
			} else if (!prompted && s ~ /[^ \t]/) {
				emit(); sub(/^    /, "", s); cmd = s
			} else {
				# output shown for the command before
				emit()
				sub(/^    /, "", s)
				if (ncmd > 0 && s != "") {
					f = sprintf("%s/%03d.out", dir, ncmd)
					print s >> f
					close(f)
				}
				continue
			}
			cont = 0
			if (cmd ~ /\\$/) { sub(/[ \t]*\\$/, "", cmd); cont = 1 }
		}
		emit()
		nl = 0
	}
	/^## / { if (nl) block(); sec = ($0 == "## " want); next }
	!sec { next }
	/^    / { l[nl++] = $0; next }
	/^[ \t]*$/ { next }	# a blank line inside a block keeps it open
	{ if (nl) block() }
	END { if (nl) block() }
	' "$SCAR_ROOT/README.md"
}

# Does every line of $1 (the output shown) match a line of $2 (the output),
# in order, "..." matching any text?
shown_in() {
	awk '
	function glob(s,   r, i, c) {
		r = ""
		while ((i = index(s, "...")) > 0) {
			r = r quote(substr(s, 1, i - 1)) ".*"
			s = substr(s, i + 3)
		}
		return "^" r quote(s) "$"
	}
	function quote(s,   out, i, c) {
		out = ""
		for (i = 1; i <= length(s); i++) {
			c = substr(s, i, 1)
			if (c ~ /[][\\^$.|?*+(){}]/) out = out "\\" c
			else out = out c
		}
		return out
	}
	BEGIN { k = 0; n = 0 }
	FILENAME == ARGV[1] { want[n++] = glob($0); text[n - 1] = $0; next }
	k < n && $0 ~ want[k] { k++ }
	END {
		if (k < n) { print "not in the output: " text[k]; exit 1 }
	}' "$1" "$2"
}

# Run the commands of README section $1 in one scratch directory.
run_section() {
	local cmds=$BATS_TEST_TMPDIR/cmds work=$BATS_TEST_TMPDIR/work f rc ran=0
	extract_section "$1" "$cmds"
	mkdir -p "$work"
	for f in "$cmds"/[0-9][0-9][0-9]; do
		[ -f "$f" ] || { echo "README: no commands in '## $1'"; return 1; }
		rc=0
		(cd "$work" && bash -c "$(cat "$f")") </dev/null \
			>"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" || rc=$?
		if [ "$rc" -ne 0 ] && grep -q "No module named 'numpy'" "$BATS_TEST_TMPDIR/err"; then
			echo "# README: skipped (numpy not installed): $(cat "$f")" >&3
			continue
		fi
		: > "$BATS_TEST_TMPDIR/why"
		if grep -v '^{' "$BATS_TEST_TMPDIR/err" >/dev/null; then
			echo "stderr says more than JSON" > "$BATS_TEST_TMPDIR/why"
			[ "$rc" -ne 0 ] || rc=stderr
		fi
		if [ "$rc" != 0 ] || ! shown_in "$f.out" "$BATS_TEST_TMPDIR/out" >"$BATS_TEST_TMPDIR/why"; then
			echo "README, '## $1': exit status $rc:"
			echo "  \$ $(cat "$f")"
			sed 's/^/  /' "$BATS_TEST_TMPDIR/why" 2>/dev/null
			sed 's/^/  stderr: /' "$BATS_TEST_TMPDIR/err" | head -n 20
			sed 's/^/  stdout: /' "$BATS_TEST_TMPDIR/out" | head -n 20
			return 1
		fi
		ran=$((ran + 1))
	done
	echo "ran $ran"
}

# The Python line wants numpy: Debian's python3 has it where a python3
# earlier on PATH (pyenv) may not.
python_with_numpy() {
	if ! python3 -c 'import numpy' 2>/dev/null && /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
		mkdir -p "$BATS_TEST_TMPDIR/py"
		ln -sf /usr/bin/python3 "$BATS_TEST_TMPDIR/py/python3"
		PATH=$BATS_TEST_TMPDIR/py:$PATH
	fi
}

@test "the README's extractor: prompts, output shown, continuations, sections" {
	mkdir -p root
	cat > root/README.md <<'EOF'
# t
## Other
    $ echo not this
## Tour
Text.

    $ echo one \
        two
    one ...

    $ printf 'a\nb\n'
    b
    not a prompt, output
## Box
    echo three
    echo four
EOF
	SCAR_ROOT=$PWD/root run -0 extract_section Tour c
	run -0 cat c/001
	[ "$output" = "echo one two" ]
	run -0 cat c/001.out
	[ "$output" = "one ..." ]
	run -0 cat c/002
	[ "$output" = "printf 'a\nb\n'" ]
	[ "$(wc -l < c/002.out)" -eq 2 ]
	[ ! -e c/003 ]
	SCAR_ROOT=$PWD/root run -0 extract_section Box b
	run -0 cat b/002
	[ "$output" = "echo four" ]
}

@test "the README's runner: a failing command, or output not shown, fails" {
	mkdir -p root
	printf '%s\n' '## T' '    $ echo "one two three"' '    one ... three' '    $ true' > root/README.md
	SCAR_ROOT=$PWD/root run -0 run_section T
	[[ $output == "ran 2" ]]
	rm -rf "$BATS_TEST_TMPDIR/cmds" "$BATS_TEST_TMPDIR/work"
	printf '%s\n' '## T' '    $ echo "one two"' '    one three' > root/README.md
	SCAR_ROOT=$PWD/root run -1 run_section T
	[[ $output == *"not in the output: one three"* ]]
	rm -rf "$BATS_TEST_TMPDIR/cmds" "$BATS_TEST_TMPDIR/work"
	# "..." is any text, the rest literally: "." is no wildcard
	printf '%s\n' '## T' '    $ echo "abc"' '    a.c' > root/README.md
	SCAR_ROOT=$PWD/root run -1 run_section T
	rm -rf "$BATS_TEST_TMPDIR/cmds" "$BATS_TEST_TMPDIR/work"
	printf '%s\n' '## T' '    $ echo a | cat | false' > root/README.md
	SCAR_ROOT=$PWD/root run -1 run_section T
	[[ $output == *"exit status 1"* ]]
	rm -rf "$BATS_TEST_TMPDIR/cmds" "$BATS_TEST_TMPDIR/work"
	# a failing first stage of a pipe fails by its message
	printf '%s\n' '## T' '    $ { echo "scar-x: broken" >&2; exit 2; } | cat' > root/README.md
	SCAR_ROOT=$PWD/root run -1 run_section T
	[[ $output == *"exit status stderr"* ]]
	[[ $output == *"scar-x: broken"* ]]
}

@test "README: the getting-started lines put the tools and the man pages where they are found" {
	local home=$BATS_TEST_TMPDIR/home line
	mkdir -p "$home"
	# the install line as printed, for this scratch HOME (with the build's
	# SANITIZE, or make would rebuild the tree without it)
	line=$(grep -m 1 '^    make install PREFIX=\$HOME/.local$' "$SCAR_ROOT/README.md")
	[ -n "$line" ]
	run -0 env HOME="$home" make -s -C "$SCAR_ROOT" install SANITIZE="$SCAR_SANITIZE" PREFIX="$home/.local"
	line=$(grep -m 1 '^    export PATH=\$HOME/.local/bin:\$PATH' "$SCAR_ROOT/README.md")
	[ -n "$line" ]
	# a PATH without the build tree, as a new user's
	run -0 env -u MANPATH HOME="$home" PATH=/usr/local/bin:/usr/bin:/bin bash -c "$line"'
		command -v scar-train; scar-train --version
		command -v man >/dev/null || exit 0
		man -w scar; man -w 5 scar-ckpt'
	[[ ${lines[0]} == "$home/.local/bin/scar-train" ]]
	[[ ${lines[1]} == "scar-train "* ]]
	if command -v man >/dev/null; then
		[[ ${lines[2]} == "$home/.local/share/man/man7/scar.7"* ]]
		[[ ${lines[3]} == "$home/.local/share/man/man5/scar-ckpt.5"* ]]
	fi
	# and from the tree: man -l on the page
	if command -v man >/dev/null; then
		run -0 bash -c "cd '$SCAR_ROOT' && MANPAGER=cat MANWIDTH=80 man -l man/scar.7 2>/dev/null | head -n 3"
		[[ $output == *SCAR* ]]
	fi
}

@test "README: the tour runs as printed and prints what it shows" {
	python_with_numpy
	run run_section "A five-minute tour"
	echo "$output"
	[ "$status" -eq 0 ]
	[ -f "$BATS_TEST_TMPDIR/work/run/ckpt-0000000020.ckpt" ]
}

@test "README: the composing examples of 'What is in the box' run" {
	run run_section "What is in the box"
	echo "$output"
	[ "$status" -eq 0 ]
	[ -s "$BATS_TEST_TMPDIR/work/resumed.jsonl" ]
}
