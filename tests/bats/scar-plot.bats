#!/usr/bin/env bats
# scar-plot.bats - scar-plot(1), examples/scar-plot.sh built into ./scar-plot:
# real streams of scar-train give a valid PNG of the size asked for, the
# envelope follows the contraction rate, bad input is a clear error with
# exit status 2, and its options are in --help, the man page and the
# completions.

bats_require_minimum_version 1.5.0
load helper

setup() {
	command -v gnuplot >/dev/null || skip "gnuplot not installed"
	command -v jq >/dev/null || skip "jq not installed"
	cd "$BATS_TEST_TMPDIR"
}

# png_size FILE: "WIDTH HEIGHT" from the IHDR chunk, after checking the
# signature and that IHDR is the first chunk (PNG spec, 5.2 and 11.2.2).
png_size() {
	local sig ihdr w h
	sig=$(od -An -tx1 -N8 "$1" | tr -d ' \n')
	[ "$sig" = 89504e470d0a1a0a ] || { echo "not a PNG signature: $sig"; return 1; }
	ihdr=$(od -An -c -j12 -N4 "$1" | tr -d ' \n')
	[ "$ihdr" = IHDR ] || { echo "first chunk is not IHDR: $ihdr"; return 1; }
	w=$(od -An -tu1 -j16 -N4 "$1" | awk '{ print ((($1 * 256 + $2) * 256 + $3) * 256 + $4) }')
	h=$(od -An -tu1 -j20 -N4 "$1" | awk '{ print ((($1 * 256 + $2) * 256 + $3) * 256 + $4) }')
	echo "$w $h"
}

# A reference and a perturbed ridge run with partial checkpoints, a failure
# and a recovery.
streams() {
	scar-train -q -m ridge -n 40 --no-timing > ref.jsonl
	scar-train -q -m ridge -n 40 --no-timing --policy priority --interval 8 --fraction 1/4 \
		--fail-at 13 --lose-fraction 1/4 --checkpoint-dir run > pert.jsonl
	grep -q '"type":"recovery"' pert.jsonl
	grep -q '"kind":"partial"' pert.jsonl
}

@test "scar-plot: the PNG of real streams has the size asked for" {
	streams
	run -0 --separate-stderr scar-plot --size 640x480 -o out.png ref.jsonl pert.jsonl
	[ -z "$output" ]
	[ -z "$stderr" ]
	run -0 png_size out.png
	[ "$output" = "640 480" ]
	# the default size, to standard output, from standard input
	scar-plot < pert.jsonl > stdout.png
	run -0 png_size stdout.png
	[ "$output" = "800 500" ]
	# the same input gives the same image
	scar-plot --size 640x480 -o again.png ref.jsonl pert.jsonl
	cmp out.png again.png
	# and a file and standard input together
	scar-plot --size 640x480 -o both.png ref.jsonl - < pert.jsonl
	run -0 png_size both.png
	[ "$output" = "640 480" ]
}

@test "scar-plot: every workload's stream draws, mf and lda through a pipe" {
	local m
	for m in mf lda mlr; do
		scar-train -q -m "$m" -n 6 --no-timing --fail-at 3 --lose-count 1 | scar-plot --size 300x200 > "$m.png"
		run -0 png_size "$m.png"
		[ "$output" = "300 200" ]
	done
}

@test "scar-plot: --y dist draws the envelope from the header's c, or from --c" {
	local c
	scar-train -q -m ridge -n 60 --no-timing --fail-at 20 --lose-count 2 --recovery none > pert.jsonl
	run -0 scar-plot --y dist -o dist.png pert.jsonl
	run -0 png_size dist.png
	[ "$output" = "800 500" ]
	# the same c given by hand draws the same image
	c=$(jq -r 'select(.type == "header") | .contraction' pert.jsonl)
	run -0 scar-plot --y dist --c "$c" -o dist-c.png pert.jsonl
	cmp dist.png dist-c.png
	# without c there is no envelope: another image; another c, another one
	# (under the same name: the legend names the file)
	mkdir no-c
	jq -c 'del(.contraction)' pert.jsonl > no-c/pert.jsonl
	run -0 scar-plot --y dist -o no-c.png no-c/pert.jsonl
	! cmp -s dist.png no-c.png
	run -0 scar-plot --y dist --c 0.99 -o other-c.png pert.jsonl
	! cmp -s dist.png other-c.png
	(cd no-c && scar-plot --y dist --c "$c" -o ../c-again.png pert.jsonl)
	cmp dist.png c-again.png
}

@test "scar-plot: a stream of another trainer, in the minimal schema, draws" {
	printf '%s\n' '{"type":"header","format":"scar-events","version":1,"objective":"loss","objective_higher_better":false}' \
		'{"type":"iteration","iter":0,"objective":2.3}' '{"type":"iteration","iter":1,"objective":1.1}' \
		'{"type":"recovery","iter":1,"resume_state_iter":1,"objective":1.5}' \
		'{"type":"iteration","iter":2,"objective":0.8}' > min.jsonl
	run -0 scar-plot --log --title "my loop" -o min.png min.jsonl
	run -0 png_size min.png
	[ "$output" = "800 500" ]
}

@test "scar-plot: a file that is not an event stream is exit 2, naming it and the line" {
	streams
	run -2 --separate-stderr scar-plot -o x.png run/ckpt-0000000000.ckpt
	[[ $stderr == "scar-plot: 'run/ckpt-0000000000.ckpt' is a scar checkpoint, not an event stream"* ]]
	(head -n 3 ref.jsonl; echo 'not json'; tail -n +4 ref.jsonl) > bad.jsonl
	run -2 --separate-stderr scar-plot -o x.png bad.jsonl
	[ "$stderr" = "scar-plot: 'bad.jsonl': line 4: not JSON" ]
	cat ref.jsonl pert.jsonl > joined.jsonl
	run -2 --separate-stderr scar-plot -o x.png joined.jsonl
	[[ $stderr == "scar-plot: 'joined.jsonl': line $(($(wc -l < ref.jsonl) + 1)): a second header"* ]]
	tail -n +2 ref.jsonl > headless.jsonl
	run -2 --separate-stderr scar-plot -o x.png headless.jsonl
	[[ $stderr == "scar-plot: 'headless.jsonl': line 1: not a scar-events header"* ]]
	sed '1s/"version":1/"version":2/' ref.jsonl > v2.jsonl
	run -2 --separate-stderr scar-plot -o x.png v2.jsonl
	[[ $stderr == *"line 1: scar-events version 2 is newer"* ]]
	printf '%s\n' "$(head -n 1 ref.jsonl)" '[1,2]' > array.jsonl
	run -2 --separate-stderr scar-plot -o x.png array.jsonl
	[ "$stderr" = "scar-plot: 'array.jsonl': line 2: not a JSON object" ]
	head -n 1 ref.jsonl > header-only.jsonl
	run -2 --separate-stderr scar-plot -o x.png header-only.jsonl
	[ "$stderr" = "scar-plot: 'header-only.jsonl': no iteration records to plot" ]
	: > empty.jsonl
	run -2 --separate-stderr scar-plot -o x.png empty.jsonl
	[[ $stderr == "scar-plot: 'empty.jsonl' is empty"* ]]
	run -2 --separate-stderr scar-plot -o x.png absent.jsonl
	[ "$stderr" = "scar-plot: cannot open 'absent.jsonl': No such file or directory" ]
	run -2 --separate-stderr scar-plot -o x.png run
	[ "$stderr" = "scar-plot: 'run' is a directory, not an event stream" ]
	# a good stream after a bad one: still exit 2, and nothing written
	run -2 --separate-stderr scar-plot -o x.png ref.jsonl bad.jsonl
	[ ! -e x.png ]
}

@test "scar-plot: what cannot be drawn is exit 2 with the reason" {
	scar-train -q -m mf -n 4 --no-timing > mf.jsonl
	run -2 --separate-stderr scar-plot --y dist -o x.png mf.jsonl
	[[ $stderr == "scar-plot: 'mf.jsonl': iteration 0 has no dist_opt"* ]]
	printf '%s\n' '{"type":"header","format":"scar-events","version":1,"objective":"score"}' \
		'{"type":"iteration","iter":0,"objective":-1.5}' > neg.jsonl
	run -2 --separate-stderr scar-plot --log -o x.png neg.jsonl
	[[ $stderr == *"the objective is -1.5 at iteration 0, not above 0: a log axis cannot show it"* ]]
	run -0 scar-plot --linear -o x.png neg.jsonl
	[ -s x.png ]
	mkdir ro && chmod 555 ro
	if [ ! -w ro ]; then
		run -2 --separate-stderr scar-plot -o ro/x.png neg.jsonl
		[[ $stderr == "scar-plot: cannot write in 'ro'"* ]]
	fi
	run -2 --separate-stderr scar-plot -o nodir/x.png neg.jsonl
	[ "$stderr" = "scar-plot: cannot write 'nodir/x.png': No such file or directory" ]
}

@test "scar-plot: usage errors are exit 2 with the usage, nothing on stdout" {
	scar-train -q -m ridge -n 4 --no-timing > ref.jsonl
	local args
	while IFS='|' read -r args want; do
		# shellcheck disable=SC2086 # the arguments are words
		run -2 --separate-stderr scar-plot $args ref.jsonl
		[ -z "$output" ] || { echo "$args: stdout '$output'"; return 1; }
		[[ $stderr == "scar-plot: $want"*"usage: scar-plot"*"try 'scar-plot --help'" ]] ||
			{ echo "$args: '$stderr'"; return 1; }
	done <<'EOF'
--size 100x500 -o x.png|option '--size': '100x500' is out of range
--size 800 -o x.png|option '--size': '800' is not WIDTHxHEIGHT
--size 8x8x8 -o x.png|option '--size': '8x8x8' is not WIDTHxHEIGHT
--y loss -o x.png|option '--y': 'loss' is not objective or dist
--y dist --c 1 -o x.png|option '--c': '1' is out of range
--y dist --c abc -o x.png|option '--c': 'abc' is not a number
--y dist --D 0 -o x.png|option '--D': '0' is out of range
--c 0.9 -o x.png|options '--c' and '--D' draw the envelope of the distance
--frobnicate|unknown option '--frobnicate'
-o x.png - -|standard input ('-') can be read once only
EOF
	run -2 --separate-stderr scar-plot ref.jsonl --log
	[[ $stderr == "scar-plot: option '--log' after the streams: options go first"* ]]
	run -2 --separate-stderr scar-plot --title
	[[ $stderr == "scar-plot: option '--title' needs an argument"* ]]
	[ ! -e x.png ]
}

@test "scar-plot: refuses to write a PNG to a terminal, or to read one" {
	command -v script >/dev/null || skip "script(1) not installed"
	scar-train -q -m ridge -n 4 --no-timing > ref.jsonl
	run script -qec "scar-plot ref.jsonl" /dev/null
	[ "$status" -eq 2 ]
	[[ $output == *"scar-plot: refusing to write a PNG to a terminal: give -o FILE, or redirect"* ]]
	run script -qec "scar-plot -o x.png" /dev/null
	[ "$status" -eq 2 ]
	[[ $output == *"scar-plot: no stream given and standard input is a terminal"* ]]
}

@test "scar-plot: without gnuplot, exit 2 and how to get it" {
	local d=$BATS_TEST_TMPDIR/bin t
	mkdir -p "$d"
	for t in sh awk jq od head tr sed cat grep mktemp rm dirname mv chmod; do
		ln -s "$(command -v "$t")" "$d/$t"
	done
	scar-train -q -m ridge -n 4 --no-timing > ref.jsonl
	run -2 --separate-stderr env PATH="$d" sh "$SCAR_ROOT/scar-plot" -o x.png ref.jsonl
	[[ $stderr == "scar-plot: 'gnuplot' not found in PATH (apt-get install jq gnuplot-nox, or 'make deps')" ]]
}

@test "scar-plot: --help and --version; the built script carries the Makefile's version" {
	local v
	run -0 --separate-stderr scar-plot --help
	[[ ${lines[0]} == "usage: scar-plot "* ]]
	[ -z "$stderr" ]
	v=$(sed -n 's/^VERSION[[:space:]]*:=[[:space:]]*//p' "$SCAR_ROOT/Makefile")
	run -0 scar-plot --version
	[ "$output" = "scar-plot $v" ]
}

@test "scar-plot: every long option is in --help, scar-plot(1) and the three completions" {
	local o f missing=
	# the options the script's parser knows: its case patterns
	sed -n '/^while \[ \$# -gt 0 \]; do$/,/^done$/p' "$SCAR_ROOT/examples/scar-plot.sh" |
		grep -E '^	[-|* a-zA-Z=]+\)' | grep -oE -- '--[a-zA-Z][a-zA-Z-]*' | sort -u > opts
	[ "$(wc -l < opts)" -ge 9 ]
	scar-plot --help > help
	while read -r o; do
		grep -qE -- "$o([^a-zA-Z-]|$)" help || missing="$missing help:$o"
		grep -qE -- "Fl Fl ${o#--}([^a-zA-Z-]|$)" "$SCAR_ROOT/man/scar-plot.1" || missing="$missing man:$o"
		for f in bash/scar-plot zsh/_scar-plot; do
			grep -qE -- "$o([^a-zA-Z-]|$)" "$SCAR_ROOT/completions/$f" || missing="$missing $f:$o"
		done
		grep -qE -- "-l ${o#--}( |$)" "$SCAR_ROOT/completions/fish/scar-plot.fish" || missing="$missing fish:$o"
	done < opts
	[ -z "$missing" ] || { echo "missing:$missing"; return 1; }
	# the bash completion loads and offers the values of --y
	run -0 bash -c 'source "$1" && COMP_WORDS=(scar-plot --y d) COMP_CWORD=2 && _scar_plot && echo "${COMPREPLY[*]}"' \
		_ "$SCAR_ROOT/completions/bash/scar-plot"
	[ "$output" = dist ]
}

@test "scar-plot: make install puts it in BINDIR, and it runs from there" {
	local root=$BATS_TEST_TMPDIR/root
	run -0 make -s -C "$SCAR_ROOT" install SANITIZE="$SCAR_SANITIZE" DESTDIR="$root" PREFIX=/usr/local
	[ -x "$root/usr/local/bin/scar-plot" ]
	[ -f "$root/usr/local/share/man/man1/scar-plot.1" ]
	[ -f "$root/usr/local/share/bash-completion/completions/scar-plot" ]
	[ -f "$root/usr/local/share/zsh/site-functions/_scar-plot" ]
	[ -f "$root/usr/local/share/fish/vendor_completions.d/scar-plot.fish" ]
	scar-train -q -m ridge -n 4 --no-timing > ref.jsonl
	run -0 "$root/usr/local/bin/scar-plot" --size 200x200 -o x.png ref.jsonl
	run -0 png_size x.png
	[ "$output" = "200 200" ]
	run -0 make -s -C "$SCAR_ROOT" uninstall DESTDIR="$root" PREFIX=/usr/local
	[ ! -e "$root/usr/local/bin/scar-plot" ]
}
