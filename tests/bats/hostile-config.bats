#!/usr/bin/env bats
# Hostile configurations in checksum-valid checkpoints (issue 16): every
# configuration source goes through one validation (scar_model_configure),
# so a checkpoint whose config the model would refuse from --set is refused
# by scar-train --resume (one process and MPI) and scar-inject --reset init,
# exit 2 naming the file and the key; never a crash, a hang or a nonsense run.
# Also: --save checked before the run and honouring --no-compress, a
# negative clock, and scar-bound plan's work bounded.
bats_require_minimum_version 1.5.0
load helper
load setmeta

# setmeta IN OUT CONFIG [EXTRA]: merge JSON objects into a checkpoint's
# config and extra (a null value deletes the key) and write it back through
# the library, so that every checksum is valid.
setup_file() {
	cd "$BATS_FILE_TMPDIR" || return 1
	[ -f "$SCAR_ROOT/lib/libscar.a" ] || return 0
	build_setmeta "$BATS_FILE_TMPDIR" || return 1
	# Small runs of every model, 2 iterations.
	scar-train -q --no-timing --no-sync -m mf --set users=40 --set items=30 -n 2 --save mf.ckpt > /dev/null &&
	scar-train -q --no-timing --no-sync -m mlr --set n=200 --set n_test=50 -n 2 --save mlr.ckpt > /dev/null &&
	scar-train -q --no-timing --no-sync -m lda --set docs=40 --set words=50 --set doc_len=20 -n 2 \
		--save lda.ckpt > /dev/null &&
	scar-train -q --no-timing --no-sync -m ridge --set n=50 --set d=8 -n 2 --save ridge.ckpt > /dev/null
}

setup() {
	[ -x "$BATS_FILE_TMPDIR/setmeta" ] || skip "lib/libscar.a not built (run make)"
	cd "$BATS_TEST_TMPDIR" || return 1
	SETMETA="$BATS_FILE_TMPDIR/setmeta"
	cp "$BATS_FILE_TMPDIR"/*.ckpt .
}

# refused MODEL KEY VALUE...: each value of KEY in MODEL's checkpoint is
# refused by --resume, exit 2, in a few seconds, naming the file and the key.
FAILS=0
refused() {
	local model=$1 key=$2 v st out
	shift 2
	for v in "$@"; do
		"$SETMETA" "$model.ckpt" x.ckpt "{\"$key\":$v}" || { FAILS=$((FAILS + 1)); continue; }
		st=0
		out=$(timeout 20 scar-train -q --no-timing --resume x.ckpt -n 4 2>&1 > /dev/null) || st=$?
		if [ "$st" != 2 ] || [[ $out != "scar-train: 'x.ckpt': checkpoint metadata: "* ]] ||
		   { [ "$key" != data ] && [[ $out != *"'$key'"* ]]; }; then
			echo "$model $key=$v: exit $st: $out"
			FAILS=$((FAILS + 1))
		fi
	done
}

@test "resume: mf \"solver\":5 is refused naming file and key (was a segfault)" {
	"$SETMETA" mf.ckpt bad.ckpt '{"solver":5}'
	scar-ckpt verify bad.ckpt
	run -2 --separate-stderr timeout 20 scar-train -q --resume bad.ckpt -n 4
	[ "${stderr_lines[0]}" = "scar-train: 'bad.ckpt': checkpoint metadata: configuration key 'solver' must be a string" ]
	[ -z "$output" ]
}

@test "resume: mlr \"batch\":0 is refused at once (was an endless loop)" {
	"$SETMETA" mlr.ckpt bad.ckpt '{"batch":0}'
	run -2 --separate-stderr timeout 20 scar-train -q --resume bad.ckpt -n 4
	[[ ${stderr_lines[0]} == "scar-train: 'bad.ckpt': checkpoint metadata: configuration key 'batch' = 0 is out of range"* ]]
	# from stdin the message names it too
	run -2 --separate-stderr timeout 20 scar-train -q --resume - -n 4 < bad.ckpt
	[[ ${stderr_lines[0]} == "scar-train: '"*"': checkpoint metadata: configuration key 'batch'"* ]]
}

@test "resume: every key of every model refuses wrong types and out-of-range values" {
	local k
	# integers: a string, a fraction, negative, huge, a boolean, an array
	for k in users items synth_rank rank workers; do
		refused mf "$k" '"7"' 1.5 -1 1e300 9223372036854775807 true '[]'
	done
	for k in batch n d classes; do
		refused mlr "$k" '"7"' 1.5 -1 0 1e300 9223372036854775807 true '{}'
	done
	refused mlr n_test '"7"' 1.5 -1 1e300 9223372036854775807
	for k in docs words doc_len synth_topics topics heldout_sweeps workers; do
		refused lda "$k" '"7"' 1.5 -1 0 1e300 9223372036854775807 false
	done
	for k in n d; do
		refused ridge "$k" '"7"' 1.5 -1 0 1e300 9223372036854775807 true
	done
	for m in mf mlr lda ridge; do
		refused "$m" seed '"1"' 1.5 -1 true
		refused "$m" data_seed '"1"' 0.5 -7 '[1]'
	done
	# reals: a string, negative, huge, a boolean
	for k in density noise test_frac lambda lr init_scale; do
		refused mf "$k" '"0.1"' -1 1e300 true
	done
	for k in test_frac lr lr_decay l2 init_scale sep; do
		refused mlr "$k" '"0.1"' -1 1e300 false
	done
	for k in synth_alpha synth_beta alpha beta heldout_frac; do
		refused lda "$k" '"0.1"' -1 0 1e300 true
	done
	for k in noise lambda eta init_scale; do
		refused ridge "$k" '"0.1"' -1 1e300 true
	done
	# strings: a number, a boolean, empty, an unknown choice
	refused mf solver 5 true '""' '"newton"'
	refused mf lambda_scale 1 '"both"'
	refused lda resync 0 '"never"'
	refused lda sampler 1 '"gibbs"'
	for m in mf mlr lda ridge; do
		refused "$m" data 5 true '""'
	done
	for k in train_images train_labels test_images test_labels test_data; do
		refused mlr "$k" 5 '""'
	done
	refused lda vocab 5 '""'
	# combinations the model refuses, and unknown keys
	refused mf workers 4	# ALS with workers
	"$SETMETA" lda.ckpt x1.ckpt '{"resync":"none"}'
	cp x1.ckpt lda.ckpt
	refused lda workers 4	# with resync none
	refused ridge bogus 1
	refused mlr "" 1
	[ "$FAILS" = 0 ]
}

@test "resume: an integral real of an integer key is that integer, as from --set" {
	command -v jq > /dev/null || skip "jq not installed"
	# 7.0 vs 7: the run uses the validated configuration, the same as the original's
	# (the model read 128.0 as batch 0 and never finished an epoch)
	timeout 60 scar-train -q --no-timing --resume mlr.ckpt -n 4 > a.jsonl
	"$SETMETA" mlr.ckpt real.ckpt '{"batch":128.0,"seed":1.0}'
	timeout 60 scar-train -q --no-timing --resume real.ckpt -n 4 > b.jsonl
	cmp a.jsonl b.jsonl
	# a missing key takes its default, as with --config (the header lists it last)
	"$SETMETA" ridge.ckpt nokey.ckpt '{"eta":null}'
	timeout 60 scar-train -q --no-timing --resume ridge.ckpt -n 4 | jq -cS . > c.jsonl
	timeout 60 scar-train -q --no-timing --resume nokey.ckpt -n 4 | jq -cS . > d.jsonl
	cmp c.jsonl d.jsonl
}

@test "resume: a negative or early clock is refused, not read as iteration 18446744073709551611" {
	"$SETMETA" ridge.ckpt neg.ckpt '{}' '{"clock":-5}'
	run -2 --separate-stderr scar-train -q --resume neg.ckpt -n 4
	[[ $stderr != *18446744073709551611* ]]
	[ "${stderr_lines[0]}" = "scar-train: 'neg.ckpt': checkpoint metadata: extra \"clock\" is not a whole number at or after its iteration 2" ]
	"$SETMETA" ridge.ckpt early.ckpt '{}' '{"clock":1}'
	run -2 --separate-stderr scar-train -q --resume early.ckpt -n 4
	[[ ${stderr_lines[0]} == *'extra "clock" is not a whole number'* ]]
	"$SETMETA" ridge.ckpt str.ckpt '{}' '{"clock":"3"}'
	run -2 --separate-stderr scar-train -q --resume str.ckpt -n 4
	[[ ${stderr_lines[0]} == *'extra "clock"'* ]]
}

@test "resume under MPI: the distributed trainer refuses the same checkpoints" {
	command -v mpirun > /dev/null 2>&1 || skip "mpirun not found"
	"$SETMETA" mf.ckpt bad.ckpt '{"solver":5}'
	run -2 --separate-stderr timeout 60 env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
		OMPI_MCA_rmaps_base_oversubscribe=1 mpirun --oversubscribe -np 2 scar-train -q \
		--resume bad.ckpt -n 4
	[[ $stderr == *"scar-train: 'bad.ckpt': checkpoint metadata: configuration key 'solver' must be a string"* ]]
}

@test "scar-inject --reset init: the same validation, naming the file" {
	"$SETMETA" mf.ckpt bad.ckpt '{"solver":5}'
	run -2 --separate-stderr scar-inject --reset init --lose-count 1 bad.ckpt out.ckpt
	[ "${stderr_lines[0]}" = "scar-inject: 'bad.ckpt': checkpoint metadata: configuration key 'solver' must be a string" ]
	[ ! -e out.ckpt ]
	"$SETMETA" mlr.ckpt bad2.ckpt '{"batch":0}'
	run -2 --separate-stderr scar-inject --reset init --lose-count 1 bad2.ckpt out.ckpt
	[[ ${stderr_lines[0]} == "scar-inject: 'bad2.ckpt': checkpoint metadata: configuration key 'batch' = 0 is out of range"* ]]
	# a valid one still works
	scar-inject --reset init --lose-count 1 mlr.ckpt out.ckpt 2> /dev/null
	scar-ckpt verify out.ckpt
}

@test "scar-train --save: a path that cannot be written fails before the run" {
	run -2 --separate-stderr scar-train -q -m ridge --set n=50 --set d=8 -n 3 --save nodir/x.ckpt
	[ "${stderr_lines[0]}" = "scar-train: cannot write 'nodir/x.ckpt': No such file or directory" ]
	[ -z "$output" ]	# no event: nothing ran
	mkdir sub
	run -2 --separate-stderr scar-train -q -m ridge --set n=50 --set d=8 -n 3 --save sub
	[ "${stderr_lines[0]}" = "scar-train: cannot write 'sub': Is a directory" ]
	[ -z "$output" ]
	touch file
	run -2 --separate-stderr scar-train -q -m ridge --set n=50 --set d=8 -n 3 --save file/x.ckpt
	[ "${stderr_lines[0]}" = "scar-train: cannot write 'file/x.ckpt': Not a directory" ]
	if [ "$(id -u)" != 0 ]; then
		mkdir ro && chmod 555 ro
		run -2 --separate-stderr scar-train -q -m ridge --set n=50 --set d=8 -n 3 --save ro/x.ckpt
		[ -z "$output" ]
	fi
}

@test "scar-train --save honours --no-compress" {
	scar-train -q --no-timing --no-sync -m ridge --set n=50 --set d=8 -n 3 --no-compress --save raw.ckpt > a.jsonl
	scar-train -q --no-timing --no-sync -m ridge --set n=50 --set d=8 -n 3 --save lz4.ckpt > b.jsonl
	cmp a.jsonl b.jsonl
	run -0 scar-ckpt info raw.ckpt
	[[ $output == *" raw"* && $output != *" lz4"* ]]
	run -0 scar-ckpt info lz4.ckpt
	[[ $output == *" lz4"* ]]
	# the same state either way
	scar-diff raw.ckpt lz4.ckpt
}

@test "scar-bound plan: a tiny budget is refused at once, the work does not grow with --iters" {
	SECONDS=0
	run -2 --separate-stderr timeout 20 scar-bound plan --budget 1e-6 --c 0.9 --failure-rate 0.01
	[[ ${stderr_lines[0]} == "scar-bound: option '--budget': "*" is below 0.0001"* ]]
	run -0 timeout 20 scar-bound plan --budget 1e-4 --c 0.9 --failure-rate 0.01
	run -0 timeout 20 scar-bound plan --budget 1e-4 --c 0.9 --failure-rate 0.01 --iters 100000000
	[[ $output == *$'\nevery 10000, full rollback '* ]]
	[ "$SECONDS" -lt 15 ]
}

@test "resume: a key the checkpoint lacks takes its default, with a warning naming it" {
	"$SETMETA" ridge.ckpt lacks.ckpt '{"eta":null}'
	run -0 --separate-stderr scar-train -n 4 --no-timing -q --resume lacks.ckpt
	[[ $stderr == *"'lacks.ckpt': the checkpoint's configuration has no 'eta'; resuming with the default"* ]]
	run -0 --separate-stderr scar-train -n 4 --no-timing -q --resume ridge.ckpt
	[ -z "$stderr" ]
}

@test "resume DIR: a newest checkpoint whose configuration is refused gives way to an older one" {
	mkdir run
	scar-train -m ridge --set n=50 --set d=8 -n 4 --interval 2 --policy full --no-timing -q --no-sync \
		--checkpoint-dir run > /dev/null
	newest=$(ls run/*.ckpt | sort | tail -1)
	"$SETMETA" "$newest" bad.ckpt '{"eta":-1}'
	mv bad.ckpt "$newest"
	run -0 --separate-stderr scar-train -n 6 --no-timing -q --resume run
	[[ $stderr == *"skipping checkpoint '$newest'"*"'eta'"* ]]
	[[ $stderr == *"resuming from"* ]]
}
