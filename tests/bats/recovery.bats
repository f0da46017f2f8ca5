#!/usr/bin/env bats
# Recovery beyond SCAR (scar(7) "Recovery"): the strategies a partial
# failure can take besides restoring the saved view, their events, their
# null tests and their refusals. The exactness of what "rebuild" computes
# is checked in tests/unit/test-rebuild.c; MPI in mpi.bats.
bats_require_minimum_version 1.5.0
load helper

field() { grep "\"type\":\"$1\"" | head -1 | sed "s/.*\"$2\":\([^,}]*\).*/\1/"; }

FAIL="--shards 8 --policy priority --fraction 1/4 --interval 8 --fail-at 13 --lose-count 2 --no-timing -q"

@test "recovery: rebuild is refused, exit 2, on a model without one (mlr, ridge)" {
	for m in mlr ridge; do
		run -2 scar-train -m "$m" -n 3 --recovery rebuild
		[[ "$output" == *"recovery 'rebuild'"*"$m has none"* ]]
	done
	run -2 scar-train -m mf -n 3 --recovery rebuilt
	[[ "$output" == *"unknown recovery 'rebuilt' (partial, rebuild, rewind, auto, full, none)"* ]]
}

@test "recovery: rebuild on lda recounts the lost rows from the assignments: no perturbation, no cost" {
	run -0 scar-train -m lda -n 25 $FAIL --recovery rebuild --cost
	[ "$(field recovery strategy <<< "$output")" = '"rebuild"' ]
	[ "$(field recovery delta_norm <<< "$output")" = 0.0 ]
	[ "$(field recovery rows_rebuilt <<< "$output")" -gt 0 ]
	[ "$(field cost cost <<< "$output")" = 0 ]
	# partial recovery of the same failure leaves stale counts, which cost
	run -0 scar-train -m lda -n 25 $FAIL --recovery partial --cost
	[ "$(field recovery delta_norm <<< "$output")" != 0.0 ]
}

@test "recovery: rebuild on mf ALS perturbs less than restoring the saved view" {
	a=$(scar-train -m mf -n 20 $FAIL --recovery partial | field recovery delta_norm)
	b=$(scar-train -m mf -n 20 $FAIL --recovery rebuild | field recovery delta_norm)
	echo "partial $a rebuild $b"
	awk -v a="$a" -v b="$b" 'BEGIN { exit !(b < a / 4) }'
}

@test "recovery: a null failure under rebuild changes nothing and costs 0" {
	for m in lda mf; do
		run -0 scar-train -m "$m" -n 20 $FAIL --lose-count 0 --recovery rebuild --cost
		[ "$(field recovery delta_norm <<< "$output")" = 0.0 ]
		[ "$(field cost cost <<< "$output")" = 0 ]
	done
}

@test "recovery: rebuild runs are deterministic and resume exactly" {
	opts="--shards 8 --policy full --interval 4 --fail-at 13 --lose-count 2 --no-timing -q --recovery rebuild"
	scar-train -m mf -n 20 $opts > a.jsonl
	scar-train -m mf -n 20 $opts > b.jsonl
	cmp a.jsonl b.jsonl
	mkdir ck
	scar-train -m mf -n 20 $opts --checkpoint-dir ck --no-sync > c.jsonl
	# resumed at 12, before the failure at 13: the rest of the stream is the same
	scar-train -n 20 --resume ck/ckpt-0000000012.ckpt ${opts/--shards 8/} > r.jsonl
	sel='select(.type == "iteration" or .type == "failure" or .type == "recovery")'
	diff <(jq -c "$sel | select(.iter > 12)" r.jsonl) <(jq -c "$sel | select(.iter > 12)" c.jsonl)
	[ "$(field summary final_objective < r.jsonl)" = "$(field summary final_objective < a.jsonl)" ]
}

@test "recovery: rewind is refused, exit 2, on a model without a decaying step (mf, lda, ridge)" {
	for m in mf lda ridge; do
		run -2 scar-train -m "$m" -n 3 --recovery rewind
		[[ "$output" == *"recovery 'rewind' needs a model with a decaying step schedule; $m has none"* ]]
	done
}

@test "recovery: rewind with a constant step is plain partial recovery" {
	sel='select(.type == "iteration" or .type == "failure" or .type == "cost") | tostring'
	scar-train -m mlr --set lr_decay=0 -n 30 $FAIL --cost --recovery partial > p.jsonl
	scar-train -m mlr --set lr_decay=0 -n 30 $FAIL --cost --recovery rewind > r.jsonl
	diff <(jq -r "$sel" p.jsonl) <(jq -r "$sel" r.jsonl)
	[ "$(field recovery rows_rewound < r.jsonl)" -gt 0 ]
	# with the default decaying step it is not (the comparison can fail)
	scar-train -m mlr -n 30 $FAIL --cost --recovery partial > p.jsonl
	scar-train -m mlr -n 30 $FAIL --cost --recovery rewind > r.jsonl
	! diff <(jq -r "$sel" p.jsonl) <(jq -r "$sel" r.jsonl) > /dev/null
}

@test "recovery: rewind's null failure changes nothing and costs 0" {
	run -0 scar-train -m mlr -n 20 $FAIL --lose-count 0 --recovery rewind --cost
	[ "$(field recovery delta_norm <<< "$output")" = 0.0 ]
	[ "$(field recovery rows_rewound <<< "$output")" = 0 ]
	[ "$(field cost cost <<< "$output")" = 0 ]
}

@test "recovery: a resume of a run with lagging rows goes on exactly" {
	opts="--shards 4 --policy full --interval 8 --fail-at 15 --lose-count 2 --no-timing -q --recovery rewind"
	mkdir ck
	scar-train -m mlr -n 30 $opts --checkpoint-dir ck --no-sync > a.jsonl
	# restored at 15 from 8: those rows lag 7 updates; the checkpoints after carry it
	run -0 scar-ckpt info --json ck/ckpt-0000000016.ckpt
	jq -e '.extra.rewind.weights | length > 0 and all(.[]; .[1] == 7)' <<< "$output"
	scar-train -n 30 --resume ck/ckpt-0000000016.ckpt --policy full --interval 8 --no-timing -q > r.jsonl
	sel='select(.type == "iteration") | select(.iter > 16) | tostring'
	diff <(jq -r "$sel" a.jsonl) <(jq -r "$sel" r.jsonl)
}

# The strategies recovery "auto" may take on model $1.
allowed() {
	case $1 in
	mlr) echo "rewind partial full" ;;
	ridge) echo "partial full" ;;
	mf|lda) echo "rebuild partial full" ;;
	esac
}

@test "recovery: auto never picks or weighs a strategy the model lacks; its record is consistent" {
	for m in mlr ridge mf lda; do
		scar-train -m "$m" -n 30 --shards 8 --policy priority --fraction 1/4 --interval 8 \
			--fail-at 7,13,21 --lose-count 2 --no-timing -q --recovery auto > a.jsonl
		[ "$(jq -r 'select(.type == "header") | .recovery' a.jsonl)" = auto ]
		[ "$(grep -c '"type":"recovery"' a.jsonl)" = 3 ]
		ok=" $(allowed "$m") "
		for s in $(jq -r 'select(.type == "recovery") | .strategy, .auto.candidates[].strategy' a.jsonl); do
			[[ "$ok" == *" $s "* ]] || { echo "$m: $s"; return 1; }
		done
		# the applied strategy is the choice, the least predicted cost
		jq -e -s '[.[] | select(.type == "recovery") | . as $r |
			($r.auto.candidates | map(.predicted_cost) | min) as $min |
			($r.auto.candidates[] | select(.strategy == $r.strategy) | .predicted_cost) as $mine |
			$r.strategy == $r.auto.choice and ($r.auto.c == null or $mine == $min)] | all' a.jsonl
		# estimated from survivors: the lost rows are NaN when it runs, yet every estimate is a number
		jq -e -s '[.[] | select(.type == "recovery") | .auto.candidates[] |
			select(.strategy != "full") | .delta_est | type == "number"] | all' a.jsonl
	done
}

@test "recovery: auto's null failure changes nothing and costs 0; auto is deterministic" {
	for m in mlr mf; do
		run -0 scar-train -m "$m" -n 20 $FAIL --lose-count 0 --recovery auto --cost
		[ "$(field recovery delta_norm <<< "$output")" = 0.0 ]
		[ "$(field cost cost <<< "$output")" = 0 ]
	done
	scar-train -m mf -n 20 $FAIL --recovery auto > a.jsonl
	scar-train -m mf -n 20 $FAIL --recovery auto > b.jsonl
	cmp a.jsonl b.jsonl
}

@test "recovery: auto's estimate of partial's perturbation is near the one partial causes (mf)" {
	est=$(scar-train -m mf -n 20 $FAIL --recovery auto |
		jq -r 'select(.type == "recovery") | .auto.candidates[] | select(.strategy == "partial") | .delta_est')
	real=$(scar-train -m mf -n 20 $FAIL --recovery partial | field recovery delta_norm)
	echo "estimated $est, caused $real"
	awk -v e="$est" -v r="$real" 'BEGIN { exit !(e > r / 2 && e < r * 2) }'
}

@test "recovery: scar-bound check lists auto's candidates with their predicted cost and bound" {
	scar-train -q --no-timing -m mf -n 30 > ref.jsonl
	scar-train -q --no-timing -m mf -n 30 --policy priority --fail-at 12 --lose-count 2 --recovery auto > a.jsonl
	run -0 scar-bound check ref.jsonl a.jsonl
	[[ "$output" == *"auto               at iteration 12 chose rebuild"* ]]
	[[ "$output" == *"candidate        partial  delta_est "* ]]
	run -0 scar-bound check --json ref.jsonl a.jsonl
	jq -e '.auto[0].choice == "rebuild" and (.auto[0].candidates | length) == 3 and
		(.auto[0].candidates[] | select(.strategy == "partial") | .bound > 0)' <<< "$output"
	# a run without auto has none
	scar-train -q --no-timing -m mf -n 30 --policy priority --fail-at 12 --lose-count 2 > p.jsonl
	run -0 scar-bound check --json ref.jsonl p.jsonl
	jq -e '.auto == []' <<< "$output"
	# a malformed auto object is exit 2 naming its line
	line=$(grep -n '"type":"recovery"' a.jsonl | cut -d: -f1)
	for bad in '.auto.candidates = 3' '.auto.candidates[0].strategy = "magic"' \
		'.auto.candidates[0].delta_est = -1' '.auto.choice = 7' '.auto.candidates = []' \
		'.auto.choice = "rewind"' '.auto.choice = "a\u001b[31m"' '.auto.candidates[1].predicted_cost = -5' \
		'.auto.candidates[1].strategy = "rebuild"'; do
		jq -c "if .type == \"recovery\" then $bad else . end" a.jsonl > bad.jsonl
		run -2 scar-bound check ref.jsonl bad.jsonl
		[[ "$output" == *"bad.jsonl:$line"*'"auto"'* ]] || { echo "$bad: $output"; return 1; }
	done
}

@test "recovery: rewind and auto resume exactly from partial checkpoints (the saved view's iterations and the step window rebuilt)" {
	o="--shards 8 --policy priority --fraction 1/4 --interval 8 -q --no-timing --no-sync"
	sel='select(.type == "iteration" or .type == "recovery") | select(.iter > 12) | tostring'
	for case in "mlr rewind" "mlr auto" "mf auto"; do
		set -- $case
		rm -rf ckA ckB
		scar-train -m "$1" -n 30 $o --fail-at 17,22 --lose-count 3 --recovery "$2" --checkpoint-dir ckA > a.jsonl
		scar-train -m "$1" -n 12 $o --recovery "$2" --checkpoint-dir ckB --save s12.ckpt > /dev/null
		scar-train --resume s12.ckpt -n 30 $o --fail-at 17,22 --lose-count 3 --recovery "$2" \
			--checkpoint-dir ckB > b.jsonl
		diff <(jq -r "$sel" a.jsonl) <(jq -r "$sel" b.jsonl)
	done
}

@test "recovery: a lagging row saved and lost again goes on from the updates its saved value had" {
	o="--shards 4 --policy round-robin --interval 4 --set lr_decay=0.5 --recovery rewind --lose-shards 2 -q --no-timing"
	# lost at 5, row 10 restored from its value of 2: 3 updates behind
	scar-train --iters 6 $o --fail-at 5 --save b6.ckpt > /dev/null
	run -0 scar-ckpt info --json b6.ckpt
	jq -e '.extra.rewind.weights | index([[10, 3]])' <<< "$output"
	# round-robin saves row 10 at 6, with 3 updates; lost again at 8 it is 5 behind
	scar-train --iters 9 $o --fail-at 5,8 --save a.ckpt > /dev/null
	run -0 scar-ckpt info --json a.ckpt
	jq -e '.extra.rewind.weights | index([[10, 5]])' <<< "$output"
}
