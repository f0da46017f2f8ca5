#!/usr/bin/env bats
# Hostile arguments: every numeric flag of every tool gets empty, negative,
# zero, NaN, Inf, huge, trailing-garbage and non-numeric values; every path
# gets a missing file, a directory, /dev/null, garbage, an empty file, a FIFO;
# inputs and outputs name the same file; binary output goes to a terminal.
# Each must give its documented exit code (2 for usage and system errors)
# with a "prog: " message, and nothing may crash (an exit >= 128).
bats_require_minimum_version 1.5.0
load helper

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
	scar-train -m ridge --set n=50 --set d=8 -n 3 --no-timing -q --save a.ckpt > /dev/null
	scar-train -m ridge --set n=50 --set d=8 -n 5 --no-timing -q --events ev.jsonl --save b.ckpt > /dev/null
	scar-train -m ridge --set n=50 --set d=8 -n 8 --no-timing -q --fail-at 4 --policy full \
		--interval 2 > pert.jsonl
	"$SCAR_ROOT/tools/mkckpt" --bytes 2K --cols 8 --iteration 4 --seed 7 --present 1:3 --no-sync p.ckpt
	scar-ckpt export --tensor w -o w.npy a.ckpt
}

# Replace the word V (or a trailing =V) of template $1 with $2 into ARGS.
subst() {
	local x
	ARGS=()
	read -ra words <<< "$1"
	for x in "${words[@]}"; do
		if [ "$x" = V ]; then ARGS+=("$2")
		elif [[ $x == *=V ]]; then ARGS+=("${x%V}$2")
		else ARGS+=("$x")
		fi
	done
}

# expect CODE VALUE TEMPLATE: run it (20 s at most), check the exit code and,
# for 2, that the first line of stderr starts with the program's name.
FAILS=0
expect() {
	local want=$1 v=$2 st=0
	subst "$3" "$v"
	rm -f x.ckpt
	timeout 20 "${ARGS[@]}" > out.txt 2> err.txt < /dev/null || st=$?
	if [ "$st" != "$want" ]; then
		echo "'$3' with '$v': exit $st, expected $want: $(head -c 200 err.txt)" >&2
		FAILS=$((FAILS + 1))
	elif [ "$st" = 2 ] && [[ $(head -1 err.txt) != "${ARGS[0]}: "* ]]; then
		echo "'$3' with '$v': message '$(head -1 err.txt)' does not start with '${ARGS[0]}: '" >&2
		FAILS=$((FAILS + 1))
	fi
}

# The values every numeric flag refuses (usage error, exit 2).
BAD_NUMBERS=("" "-1" "nan" "inf" "5x" "abc")

# numeric ZERO HUGE TEMPLATE: BAD_NUMBERS exit 2; 0 and 1e23 exit ZERO and HUGE.
numeric() {
	local v
	for v in "${BAD_NUMBERS[@]}"; do
		expect 2 "$v" "$3"
	done
	expect "$1" 0 "$3"
	expect "$2" 99999999999999999999999 "$3"
}

@test "scar-train: hostile numbers for every numeric flag" {
	numeric 0 2 "scar-train -m ridge -n 2 -q --iters V"	# 0: the header and the starting state
	numeric 0 2 "scar-train -m ridge -n 2 -q --seed V"
	numeric 2 2 "scar-train -m ridge -n 2 -q --shards V"
	numeric 2 2 "scar-train -m ridge -n 2 -q --heldout-every V"
	numeric 2 2 "scar-train -m ridge -n 2 -q --policy full --interval V"
	numeric 2 2 "scar-train -m ridge -n 2 -q --policy priority --fraction V"
	numeric 2 2 "scar-train -m ridge -n 4 -q --fail-at V"
	numeric 0 2 "scar-train -m ridge -n 4 -q --fail-prob V"
	numeric 0 2 "scar-train -m ridge -n 4 -q --lose-shards V"
	numeric 0 2 "scar-train -m ridge -n 4 -q --lose-count V"	# 0: a null failure
	numeric 2 2 "scar-train -m ridge -n 4 -q --lose-fraction V"
	numeric 0 2 "scar-train -m ridge -n 4 -q --fail-seed V"
	numeric 2 2 "scar-train -m ridge -n 4 -q --cost --cost-window V"
	numeric 2 2 "scar-train -m ridge -n 4 -q --cost --cost-cap V"
	numeric 0 2 "scar-train -m ridge -n 2 -q --set lambda=V"
	numeric 2 2 "scar-train -m ridge -n 2 -q --set n=V"
	[ "$FAILS" = 0 ]
}

@test "scar-ckpt: hostile numbers for every numeric flag" {
	numeric 2 2 "scar-ckpt export --tensor w --rows V a.ckpt"
	numeric 0 2 "scar-ckpt export --tensor w --shard V a.ckpt"
	numeric 0 2 "scar-ckpt import --iteration V -o x.ckpt w.npy"
	numeric 2 2 "scar-ckpt import --shards V -o x.ckpt w.npy"
	numeric 2 2 "scar-ckpt import --dtype f32 --shape V -o x.ckpt w.npy"
	numeric 0 2 "scar-ckpt convert --level V a.ckpt x.ckpt"
	numeric 2 2 "scar-ckpt convert --shards V a.ckpt x.ckpt"
	[ "$FAILS" = 0 ]
}

@test "scar-diff and scar-inject: hostile numbers for every numeric flag" {
	# A real tolerance: 0 means bit-equal (these differ: 1), huge means anything goes.
	numeric 1 0 "scar-diff --tolerance V a.ckpt b.ckpt"
	numeric 1 2 "scar-diff --top V a.ckpt b.ckpt"
	numeric 0 2 "scar-inject --bitflip-count V a.ckpt x.ckpt"
	numeric 0 2 "scar-inject --bitflip-rate V a.ckpt x.ckpt"
	numeric 2 2 "scar-inject --lose-count V a.ckpt x.ckpt"
	numeric 2 2 "scar-inject --lose-fraction V a.ckpt x.ckpt"
	numeric 0 0 "scar-inject --noise-l2 V a.ckpt x.ckpt"
	numeric 0 0 "scar-inject --noise-rel V a.ckpt x.ckpt"
	numeric 0 2 "scar-inject --stale b.ckpt --mix V a.ckpt x.ckpt"
	numeric 2 2 "scar-inject --noise-l2 1 --rows V a.ckpt x.ckpt"
	numeric 0 2 "scar-inject --noise-l2 1 --seed V a.ckpt x.ckpt"
	numeric 0 2 "scar-inject --noise-l2 1 --shard V a.ckpt x.ckpt"
	local v
	for v in "" "," "1,,2" "1," ",1" "1-" "-1" "nan" "5x" "1,5x" "99999999999999999999999"; do
		expect 2 "$v" "scar-inject --lose-shards V a.ckpt x.ckpt"
	done
	expect 0 0 "scar-inject --lose-shards V a.ckpt x.ckpt"
	[ "$FAILS" = 0 ]
}

@test "an empty list or list item is a usage error naming the option, in every tool" {
	local t v opt
	# OPTION|TEMPLATE. The input is missing: the list must be refused before it is read.
	for t in "--lose-shards|scar-inject --lose-shards V missing.ckpt x.ckpt" \
		 "--lose-shards|scar-train -m ridge -n 4 -q --lose-shards V --fail-at 2" \
		 "--fail-at|scar-train -m ridge -n 4 -q --fail-at V" \
		 "--shape|scar-ckpt import --dtype f64 --shape V -o x.ckpt missing.raw"; do
		opt=${t%%|*}
		t=${t#*|}
		for v in "," "1,,2" "1," ",1" ",,"; do
			subst "$t" "$v"
			run -2 --separate-stderr "${ARGS[@]}"
			[ "$stderr" = "${ARGS[0]}: option '$opt': '$v' has an empty item"$'\n'"try '${ARGS[0]} --help'" ] ||
				{ echo "'$t' with '$v': '$stderr'" >&2; return 1; }
		done
		subst "$t" ""
		run -2 --separate-stderr "${ARGS[@]}"
		[ "$stderr" = "${ARGS[0]}: option '$opt' needs a value"$'\n'"try '${ARGS[0]} --help'" ] ||
			{ echo "'$t' with '': '$stderr'" >&2; return 1; }
	done
	# The shape's other separator, x, and a range without its end.
	run -2 --separate-stderr scar-ckpt import --dtype f64 --shape 8x -o x.ckpt w.npy
	[ "${stderr_lines[0]}" = "scar-ckpt: option '--shape': '8x' has an empty item" ]
	run -2 --separate-stderr scar-inject --lose-shards 1- a.ckpt x.ckpt
	[ "${stderr_lines[0]}" = "scar-inject: option '--lose-shards': '1-' is not a shard or a range A-B" ]
	[ ! -e x.ckpt ]
}

@test "scar-bound: hostile numbers for every numeric flag" {
	numeric 2 2 "scar-bound evaluate --c V --D 1 --delta 0.1@3"
	numeric 2 0 "scar-bound evaluate --c 0.9 --D V --delta 0.1@3"
	numeric 2 2 "scar-bound evaluate --c 0.9 --D 1 --delta V"
	numeric 0 2 "scar-bound evaluate --c 0.9 --D 1 --delta 0.1 --T V"
	numeric 2 0 "scar-bound evaluate --c 0.9 --D 1 --delta 0.1@3 --eps V"
	numeric 0 2 "scar-bound fit --floor V ev.jsonl"
	numeric 0 2 "scar-bound fit --skip V ev.jsonl"
	numeric 2 2 "scar-bound check --window V ev.jsonl pert.jsonl"
	# A target every objective meets: both runs meet it where the cost is measured from, cost 0.
	numeric 2 0 "scar-bound check --target V ev.jsonl pert.jsonl"
	numeric 2 2 "scar-bound check --delta V ev.jsonl pert.jsonl"
	numeric 2 0 "scar-bound check --eps V --metric dist_opt ev.jsonl pert.jsonl"
	numeric 2 2 "scar-bound plan --budget V --c 0.9 --failure-rate 0.01"
	numeric 2 2 "scar-bound plan --budget 0.1 --c V --failure-rate 0.01"
	numeric 0 2 "scar-bound plan --budget 0.1 --c 0.9 --failure-rate V"
	numeric 2 2 "scar-bound plan --budget 0.1 --c 0.9 --failure-rate 0.01 --iters V"
	numeric 2 2 "scar-bound plan --budget 0.1 --c 0.9 --failure-rate 0.01 --lost-fraction V"
	numeric 0 0 "scar-bound plan --budget 0.1 --c 0.9 --D 1 --failure-rate 0.01 --step V"
	[ "$FAILS" = 0 ]
}

# paths EMPTY MISSING DIR DEVNULL GARBAGE EMPTYFILE NODIR TEMPLATE: the exit
# codes for '', a missing file, a directory, /dev/null (only ever read here),
# a text file, an empty file and a file in a missing directory. Inputs are
# recreated before every run, since writers may replace them.
paths() {
	local codes=("$1" "$2" "$3" "$4" "$5" "$6" "$7") vals=("" missing.ckpt adir /dev/null garbage.txt empty.txt nodir/x.ckpt) i
	for i in 0 1 2 3 4 5 6; do
		rm -rf missing.ckpt adir
		mkdir adir
		printf 'garbage\n' > garbage.txt
		: > empty.txt
		expect "${codes[$i]}" "${vals[$i]}" "$8"
	done
}

@test "input paths: missing, directory, /dev/null, garbage, empty, in a missing directory" {
	paths 2 2 2 2 2 2 2 "scar-train -m ridge -n 2 -q --data V"
	paths 2 2 2 2 2 2 2 "scar-train -m ridge -n 2 -q --config V"
	paths 2 2 2 2 2 2 2 "scar-train -n 6 -q --resume V"
	paths 2 2 2 2 2 2 2 "scar-train -m ridge -n 4 -q --cost --reference V"
	paths 2 2 2 2 2 2 2 "scar-ckpt info V"
	# verify: a file that is not a checkpoint is damaged (1), one that cannot be read is 2.
	paths 2 2 2 1 1 1 2 "scar-ckpt verify V"
	paths 2 2 2 2 2 2 2 "scar-ckpt export --tensor w V"
	paths 2 2 2 2 2 2 2 "scar-ckpt import -o x.ckpt V"
	paths 2 2 2 2 2 2 2 "scar-ckpt convert V x.ckpt"
	paths 2 2 2 2 2 2 2 "scar-ckpt apply -o x.ckpt V"
	paths 2 2 0 2 2 2 2 "scar-ckpt ls V"
	paths 2 2 2 2 2 2 2 "scar-diff V a.ckpt"
	paths 2 2 2 2 2 2 2 "scar-diff a.ckpt V"
	paths 2 2 2 2 2 2 2 "scar-inject --noise-l2 1 V x.ckpt"
	paths 2 2 2 2 2 2 2 "scar-inject --stale V a.ckpt x.ckpt"
	paths 2 2 2 2 2 2 2 "scar-inject --lose-count 1 --reset from=V a.ckpt x.ckpt"
	paths 2 2 2 2 2 2 2 "scar-bound fit V"
	paths 2 2 2 2 2 2 2 "scar-bound check V pert.jsonl"
	paths 2 2 2 2 2 2 2 "scar-bound check ev.jsonl V"
	[ "$FAILS" = 0 ]
}

@test "output paths: empty, a directory, in a missing directory; new, garbage and empty files are replaced" {
	local t
	for t in "scar-train -m ridge -n 2 -q --save V" "scar-train -m ridge -n 2 -q --events V" \
		 "scar-ckpt export --tensor w -o V a.ckpt" "scar-ckpt import --name w -o V w.npy" \
		 "scar-ckpt convert a.ckpt V" "scar-ckpt apply -o V a.ckpt" \
		 "scar-inject --noise-l2 1 a.ckpt V" "scar-inject --noise-l2 1 --report V a.ckpt x.ckpt"; do
		rm -rf adir; mkdir adir
		expect 2 "" "$t"
		expect 2 adir "$t"
		expect 2 nodir/x.ckpt "$t"
		printf 'garbage\n' > garbage.txt
		expect 0 garbage.txt "$t"
		printf 'garbage\n' > garbage.orig
		! cmp -s garbage.txt garbage.orig || { echo "'$t' did not replace garbage.txt" >&2; FAILS=$((FAILS + 1)); }
		expect 0 new.out "$t"
		[ -s new.out ] || { echo "'$t' wrote nothing to new.out" >&2; FAILS=$((FAILS + 1)); }
		rm -f new.out
	done
	# A missing checkpoint directory is created; one in a missing parent is not.
	paths 2 0 0 2 2 2 2 "scar-train -m ridge -n 2 -q --policy full --checkpoint-dir V"
	[ "$FAILS" = 0 ]
}

@test "a FIFO as input: a checkpoint through it works, garbage and an empty stream fail, nothing hangs" {
	mkfifo fifo
	local t
	for t in "scar-ckpt info V" "scar-ckpt verify V" "scar-ckpt export --tensor w --format json V" \
		 "scar-ckpt convert V x.ckpt" "scar-inject --noise-l2 1 V x.ckpt" \
		 "scar-train -n 6 -q --resume V" "scar-diff a.ckpt V" "scar-diff V b.ckpt" \
		 "scar-ckpt apply -o x.ckpt V"; do
		subst "$t" fifo
		(cat a.ckpt > fifo &)
		run timeout 20 "${ARGS[@]}"
		# scar-diff a.ckpt b.ckpt differ: 1 is its "no" answer.
		[ "$status" = 0 ] || { [ "$status" = 1 ] && [[ $t == scar-diff* ]]; } ||
			{ echo "'$t' on a FIFO with a checkpoint: exit $status: $output" >&2; return 1; }
		(printf 'garbage, not a checkpoint\n' > fifo &)
		run timeout 20 "${ARGS[@]}"
		if [[ $t == "scar-ckpt verify"* ]]; then
			[ "$status" = 1 ] || { echo "'$t' on garbage: exit $status" >&2; return 1; }
		else
			[ "$status" = 2 ] || { echo "'$t' on garbage: exit $status: $output" >&2; return 1; }
			[[ $output == "${ARGS[0]}: "* ]]
		fi
		(: > fifo &)
		run timeout 20 "${ARGS[@]}"
		[ "$status" = 1 ] || [ "$status" = 2 ] || { echo "'$t' on an empty FIFO: exit $status" >&2; return 1; }
	done
	# A partial checkpoint through a FIFO onto a base: read once, whole.
	"$SCAR_ROOT/tools/mkckpt" --bytes 2K --cols 8 --iteration 0 --no-sync base.ckpt
	scar-ckpt apply -o want.ckpt base.ckpt p.ckpt
	(cat p.ckpt > fifo &)
	run -0 timeout 20 scar-ckpt apply -o x.ckpt base.ckpt fifo
	cmp want.ckpt x.ckpt
	# A FIFO named *.ckpt in a directory is listed as damaged, not opened.
	mkdir d
	cp a.ckpt d/
	mkfifo d/f.ckpt
	run -1 --separate-stderr timeout 20 scar-ckpt ls d
	[ "$stderr" = "scar-ckpt: damaged checkpoint 'd/f.ckpt': not a regular file" ]
	# An event stream through a FIFO.
	(cat ev.jsonl > fifo &)
	run -0 timeout 20 scar-bound fit fifo
	(printf '{"type":' > fifo &)
	run -2 timeout 20 scar-bound fit fifo
}

@test "a FIFO as output receives the data and stays a FIFO" {
	mkfifo fifo
	(cat fifo > got.ckpt &)
	run -0 timeout 20 scar-ckpt convert a.ckpt fifo
	[ -p fifo ]
	sleep 0.2
	cmp a.ckpt got.ckpt || scar-ckpt verify -q got.ckpt
}

@test "a device or FIFO named as a checkpoint output is written through, not replaced" {
	local t
	for t in "scar-train -m ridge -n 2 -q --save V" "scar-inject --noise-l2 1 a.ckpt V" \
		 "scar-ckpt convert a.ckpt V" "scar-ckpt apply -o V a.ckpt" \
		 "scar-ckpt import --name w -o V w.npy" "scar-ckpt export --tensor w -o V a.ckpt"; do
		subst "$t" fifo
		rm -f fifo
		mkfifo fifo
		(cat fifo > got.bin &)
		run -0 timeout 20 "${ARGS[@]}"
		[ -p fifo ] || { echo "'$t' replaced the FIFO" >&2; return 1; }
		if [ "$(id -u)" = 0 ]; then
			# A private null device: what /dev/null is, without risking the real one.
			rm -f devnull
			mknod -m 666 devnull c 1 3
			subst "$t" devnull
			run -0 timeout 20 "${ARGS[@]}"
			[ -c devnull ] || { echo "'$t' replaced a character device with a file" >&2; return 1; }
		fi
	done
}

@test "input and output naming the same file: the result is complete, the input is never torn" {
	cp a.ckpt s.ckpt
	run -0 scar-ckpt convert --shards 3 s.ckpt s.ckpt
	run -0 scar-ckpt verify -q s.ckpt
	run -0 scar-diff -q a.ckpt s.ckpt
	cp p.ckpt base.ckpt
	"$SCAR_ROOT/tools/mkckpt" --bytes 2K --cols 8 --iteration 0 --no-sync base.ckpt
	run -0 scar-ckpt apply -o base.ckpt base.ckpt p.ckpt
	run -0 scar-ckpt verify -q base.ckpt
	cp a.ckpt s.ckpt
	run -0 scar-inject --noise-l2 1 --report r.json s.ckpt s.ckpt
	run -0 scar-ckpt verify -q s.ckpt
	run -1 scar-diff -q a.ckpt s.ckpt
	cp a.ckpt s.ckpt
	run -0 scar-train --resume s.ckpt -n 9 -q --no-timing --save s.ckpt
	run -0 scar-ckpt verify -q s.ckpt
	cp w.npy v.npy
	run -0 scar-ckpt import --name w -o v.npy v.npy
	run -0 scar-ckpt verify -q v.npy
	# A reference stream read before the same file is rewritten as the new events.
	cp ev.jsonl e2.jsonl
	run -0 scar-train -m ridge --set n=50 --set d=8 -n 5 -q --no-timing --cost --reference e2.jsonl --events e2.jsonl
	run -0 scar-bound fit e2.jsonl
}

@test "binary output to a terminal is refused, and so is a terminal on stdin" {
	command -v script > /dev/null || skip "script(1) is not installed"
	local c
	for c in "scar-ckpt convert a.ckpt -" "scar-train -m ridge -n 2 -q --save -" \
		 "scar-inject --noise-l2 1 a.ckpt" "scar-ckpt export --tensor w a.ckpt" \
		 "scar-ckpt export --tensor w --format npy a.ckpt" "scar-ckpt import --name w -o - w.npy" \
		 "scar-ckpt apply a.ckpt"; do
		run -2 script -qec "$c" /dev/null < /dev/null
		[[ $output == *"refusing to write a binary checkpoint to a terminal"* ]] ||
			{ echo "'$c': $output" >&2; return 1; }
	done
	for c in "scar-ckpt info" "scar-diff a.ckpt -" "scar-ckpt verify -" "scar-inject --noise-l2 1"; do
		run -2 script -qec "$c" /dev/null < /dev/null
		[[ $output == *"no input"* ]] || { echo "'$c': $output" >&2; return 1; }
	done
}

@test "unknown options, missing values and stray operands are usage errors" {
	local t
	for t in "scar-train --bogus" "scar-train --iters" "scar-train extra" "scar-train -m nosuch" \
		 "scar-ckpt" "scar-ckpt bogus" "scar-ckpt convert a.ckpt" "scar-ckpt info --bogus a.ckpt" \
		 "scar-diff a.ckpt" "scar-diff --per column a.ckpt b.ckpt" "scar-diff a.ckpt b.ckpt c.ckpt" \
		 "scar-inject a.ckpt x.ckpt" "scar-inject --noise-l2 1 --lose-count 1 a.ckpt x.ckpt" \
		 "scar-inject --quantize f12 a.ckpt x.ckpt" "scar-inject --bits most --bitflip-count 1 a.ckpt x.ckpt" \
		 "scar-bound" "scar-bound bogus" "scar-bound evaluate" "scar-bound plan --c 0.9"; do
		subst "$t" ""
		run timeout 20 "${ARGS[@]}" < /dev/null
		[ "$status" = 2 ] || { echo "'$t': exit $status: $output" >&2; return 1; }
		[[ $output == "${ARGS[0]}: "* ]] || [[ $output == "usage: ${ARGS[0]} "* ]] ||
			{ echo "'$t': message '$output'" >&2; return 1; }
	done
}
