#!/usr/bin/env bats
# Hostile event streams and JSON inputs of scar-bound and scar-train (a
# second campaign): one JSON object per line, one scar-diff result on
# evaluate's stdin, a check's streams of one run, FIFOs without a writer,
# endless JSON on stdin and --config, and the stream header's values. Each
# bad input is exit 2 with "prog: what (where)", never a quiet answer.
bats_require_minimum_version 1.5.0
load helper

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
	local a="-m ridge --set n=60 --set d=8 -n 40 --no-timing -q"
	# shellcheck disable=SC2086
	scar-train $a > ref.jsonl
	# shellcheck disable=SC2086
	scar-train $a --policy full --interval 2 --fail-at 10 > pert.jsonl
}

@test "hostile-events2: two records or trailing text on a line are refused, naming the line" {
	run -0 scar-bound fit ref.jsonl
	{ head -2 ref.jsonl | tr -d '\n'; echo; tail -n +3 ref.jsonl; } > tworec.jsonl
	run -2 --separate-stderr scar-bound fit tworec.jsonl
	[[ $stderr == "scar-bound: tworec.jsonl:1: text after the record at column "*": one JSON object per line" ]]
	[ -z "$output" ]
	sed 's/}$/} trailing junk/' ref.jsonl > trail.jsonl
	run -2 --separate-stderr scar-bound fit trail.jsonl
	[[ $stderr == "scar-bound: trail.jsonl:1: text after the record"* ]]
	run -2 --separate-stderr scar-bound check ref.jsonl trail.jsonl
	[[ $stderr == "scar-bound: trail.jsonl:1: "* ]]
	run -2 --separate-stderr scar-train -m ridge --set n=60 --set d=8 -n 40 -q --reference trail.jsonl
	[[ $stderr == "scar-train: trail.jsonl:1: text after the record"* ]]
	# whitespace around the object is fine, as a blank line is
	sed 's/^/  /; s/$/ \t /' ref.jsonl > spaced.jsonl
	run -0 scar-bound fit --json spaced.jsonl
	[ "$output" = "$(scar-bound fit --json ref.jsonl)" ]
}

@test "hostile-events2: evaluate takes one scar-diff object on stdin, nothing after it" {
	run -2 --separate-stderr bash -c \
		'printf "{\"l2\":0.5,\"iteration_a\":20}\n{\"l2\":99,\"iteration_a\":1}\n" | scar-bound evaluate --c 0.9 --D 10'
	[[ $stderr == "scar-bound: -:2: text after the JSON object on stdin: evaluate takes one"* ]]
	[ -z "$output" ]
	run -2 bash -c 'printf "{\"l2\":0.5,\"iteration_a\":20} junk" | scar-bound evaluate --c 0.9 --D 10'
	run -2 bash -c 'printf "{\"l2\":0.5,\"iteration_a\":20}\0" | scar-bound evaluate --c 0.9 --D 10'
	[[ $output == *"NUL byte"* ]]
	# one object, pretty-printed or not, with whitespace after it
	run -0 bash -c 'printf "{\n  \"l2\": 0.5,\n  \"iteration_a\": 20\n}\n\n" | scar-bound evaluate --c 0.9 --D 10'
	[[ $output == *"delta              0.5 at iteration 20"* ]]
}

@test "hostile-events2: check refuses a reference of another run or a perturbed one" {
	scar-train -m mlr -n 6 --no-timing -q --policy full --interval 1 --fail-at 3 > mlr-pert.jsonl
	run -2 --separate-stderr scar-bound check ref.jsonl mlr-pert.jsonl
	[ "$stderr" = "scar-bound: 'ref.jsonl' is not a reference for 'mlr-pert.jsonl': the reference is a run of model 'ridge', not 'mlr'" ]
	[ -z "$output" ]
	scar-train -m ridge --set n=60 --set d=8 --seed 2 -n 40 --no-timing -q --policy full \
		--interval 2 --fail-at 10 > seed2.jsonl
	run -2 --separate-stderr scar-bound check ref.jsonl seed2.jsonl
	[[ $stderr == *"configuration (seed, data, keys) is not this run's" ]]
	scar-train -m ridge --set n=60 --set d=8 --shards 4 -n 40 --no-timing -q --policy full \
		--interval 2 --fail-at 10 > shards4.jsonl
	run -2 --separate-stderr scar-bound check ref.jsonl shards4.jsonl
	[[ $stderr == *"other shards"* ]]
	line=$(grep -n '"type":"failure"' pert.jsonl | head -1 | cut -d: -f1)
	run -2 --separate-stderr scar-bound check pert.jsonl pert.jsonl
	[ "$stderr" = "scar-bound: pert.jsonl:$line: reference stream has a failure record: a perturbed run is no reference" ]
	# the same checks as scar-train --reference
	run -2 --separate-stderr scar-train -m ridge --set n=60 --set d=8 -n 40 -q --reference pert.jsonl
	[ "$stderr" = "scar-train: pert.jsonl:$line: reference stream has a failure record: a perturbed run is no reference" ]
	run -0 scar-bound check ref.jsonl pert.jsonl
}

@test "hostile-events2: a FIFO without a writer reads as empty, nothing hangs" {
	mkfifo ff
	run -2 --separate-stderr timeout 10 scar-bound fit ff
	[ "$stderr" = "scar-bound: 'ff': empty event stream" ]
	run -2 --separate-stderr timeout 10 scar-bound check ref.jsonl ff
	[ "$stderr" = "scar-bound: 'ff': empty event stream" ]
	run -2 --separate-stderr timeout 10 scar-train -m ridge -n 3 -q --reference ff
	[ "$stderr" = "scar-train: 'ff': empty event stream" ]
	run -2 --separate-stderr timeout 10 scar-train -m ridge -n 3 -q --config ff
	[ "$stderr" = "scar-train: cannot read config 'ff': empty: no JSON value" ]
	run -2 --separate-stderr timeout 10 scar-train -m ridge -n 3 -q --data ff
	[[ $stderr == "scar-train: "* ]]
	# a pipe with a writer still works
	run -0 bash -c 'cat ref.jsonl | scar-bound fit /dev/stdin'
}

@test "hostile-events2: endless JSON on stdin or --config is refused at a documented size" {
	# ASan cannot start under ulimit -v; the limit guards the plain build
	local UL='ulimit -v 400000;'
	[ -z "$SCAR_SANITIZE" ] || UL=
	run -2 --separate-stderr bash -c \
		'(printf "{\"l2\":\""; yes aaaa | tr -d "\n") | ('"$UL"' timeout 60 scar-bound evaluate --c .9 --D 1)'
	[ "$stderr" = "scar-bound: '-': longer than 4194304 bytes: not a JSON document this tool reads" ]
	run -2 --separate-stderr bash -c \
		'(printf "{\"seed\":\""; yes aaaa | tr -d "\n") | ('"$UL"' timeout 60 scar-train -m ridge -n 3 -q --config /dev/stdin)'
	[ "$stderr" = "scar-train: cannot read config '/dev/stdin': longer than 4194304 bytes: not a JSON document this tool reads" ]
	run -2 --separate-stderr timeout 20 scar-train -m ridge -n 3 -q --config /dev/zero
	[ "$stderr" = "scar-train: cannot read config '/dev/zero': offset 0: a NUL byte: not JSON text" ]
	echo '{"seed":3} x' > cfg.json
	run -2 --separate-stderr scar-train -m ridge -n 3 -q --config cfg.json
	[[ $stderr == "scar-train: cannot read config 'cfg.json': line 1: text after the JSON value"* ]]
	echo '{"seed":3}' > cfg.json
	run -0 scar-train -m ridge -n 3 -q --no-timing --config cfg.json
}

@test "hostile-events2: header and clock values out of range are refused, not used" {
	sed 's/"version":1/"version":-7/' ref.jsonl > ver.jsonl
	run -2 --separate-stderr scar-bound fit ver.jsonl
	[ "$stderr" = "scar-bound: ver.jsonl:1: event stream version -7 is not a version (1 or more)" ]
	{ head -5 ref.jsonl; head -1 ref.jsonl; tail -n +6 ref.jsonl; } > dup.jsonl
	run -2 --separate-stderr scar-bound fit dup.jsonl
	[[ $stderr == "scar-bound: dup.jsonl:6: a second header record"* ]]
	sed 's/"iter":\([0-9]*\),/"iter":\1e290,/' ref.jsonl > big.jsonl
	run -2 --separate-stderr scar-bound fit --json big.jsonl
	[[ $stderr == "scar-bound: big.jsonl:4: iteration record has no whole \"iter\" in 0..2^53" ]]
	sed 's/"iter":\([0-9]*\),/"iter":\1.5,/' ref.jsonl > frac.jsonl
	run -2 scar-bound fit frac.jsonl
	sed 's/"contraction":[0-9.e-]*/"contraction":"0.9"/' ref.jsonl > cstr.jsonl
	run -2 --separate-stderr scar-bound fit cstr.jsonl
	[ "$stderr" = "scar-bound: cstr.jsonl:1: header \"contraction\" is not a number" ]
	sed 's/"objective_higher_better":false/"objective_higher_better":"no"/' ref.jsonl > hb.jsonl
	run -2 scar-bound fit hb.jsonl
	[[ $output == *"objective_higher_better"* ]]
	# a contraction the steps contradict is used, as documented, but not silently
	sed 's/"contraction":[0-9.e-]*/"contraction":1e-300/' ref.jsonl > tiny.jsonl
	run -0 --separate-stderr scar-bound fit tiny.jsonl
	[[ $stderr == "scar-bound: 'tiny.jsonl': the header's contraction 1e-300 is below the fit's 95% interval"* ]]
	run -0 --separate-stderr scar-bound fit ref.jsonl
	[ -z "$stderr" ]
	# a reference whose final objective is null: named, with the way out
	sed 's/"objective":[0-9][0-9.e+-]*/"objective":null/' ref.jsonl > objnull.jsonl
	run -2 --separate-stderr scar-bound check objnull.jsonl pert.jsonl
	[ "$stderr" = "scar-bound: 'objnull.jsonl': objective at iteration 40, which the default target is taken from, is not a finite number (give --target)" ]
}
