#!/usr/bin/env bats
# The iteration cost's defining properties (scar-train(1), THE ITERATION
# COST): a perturbation that changes nothing costs exactly 0 wherever it
# falls, a traditional restart costs exactly T - C, the cost grows with the
# size of a perturbation along a fixed direction, and scar-bound check
# measures the same cost from the event streams.
bats_require_minimum_version 1.5.0
load helper

# "cost" and "cost_interp" of the cost record on stdin, as "COST INTERP".
costs() {
	grep '"type":"cost"' | sed 's/.*"cost":\(-*[0-9]*\),"cost_interp":\([^,]*\),.*/\1 \2/'
}

# A small noisy 3-class LIBSVM set (deterministic): with a large constant
# step, mlr's objective bounces, and the reference reaches its final value
# long before the last iteration.
bumpy_svm() {
	awk -v seed=7 -v n=1500 -v d=12 'BEGIN {
		s = seed
		for (i = 0; i < n; i++) {
			s = (s * 1103515245 + 12345) % 2147483648; y = s % 3; line = y
			for (j = 1; j <= d; j++) {
				s = (s * 1103515245 + 12345) % 2147483648
				v = (s / 2147483648.0 - 0.5) * 2; if (j % 3 == y) v += 0.6
				line = line " " j ":" sprintf("%.4f", v)
			}
			print line
		}
	}' > "$1"
}

# The workloads, one per line: label, then scar-train's arguments.
workloads() {
	bumpy_svm "$BATS_TEST_TMPDIR/bumpy.svm"
	cat <<EOF
mlr-bumpy -m mlr --data $BATS_TEST_TMPDIR/bumpy.svm --set lr=2 --set lr_decay=0 -n 40
ridge -m ridge -n 40
mf-als -m mf -n 40
mf-sgd -m mf --set solver=sgd -n 40
lda -m lda -n 40
EOF
}

@test "cost: the bumpy mlr reference reaches its target long before the end" {
	bumpy_svm "$BATS_TEST_TMPDIR/bumpy.svm"
	run -0 scar-train -q --no-timing -m mlr --data "$BATS_TEST_TMPDIR/bumpy.svm" \
		--set lr=2 --set lr_decay=0 -n 40 --cost
	ref=$(printf '%s\n' "$output" | grep '"type":"cost"' | sed 's/.*"reference_iter":\([0-9]*\).*/\1/')
	# So failures at 10..39 fall after the reference's first crossing.
	[ "$ref" -lt 10 ]
}

@test "cost: a failure that restores the current rows costs exactly 0, at any time, on every model" {
	# --policy full --interval 1: the checkpoint of the failure's own
	# iteration holds the rows lost, so recovery restores them unchanged.
	while read -r label args; do
		for T in 2 10 20 30 39; do
			# shellcheck disable=SC2086
			out=$(scar-train -q --no-timing $args --policy full --interval 1 \
				--recovery partial --fail-at "$T" --lose-fraction 1/4 --cost)
			delta=$(printf '%s\n' "$out" | grep '"type":"recovery"' |
				sed 's/.*"delta_norm":\([^,]*\),.*/\1/')
			got=$(printf '%s\n' "$out" | costs)
			echo "$label T=$T delta=$delta cost=$got"
			[ "$delta" = 0.0 ]
			[ "$got" = "0 0.0" ]
		done
	done < <(workloads)
}

@test "cost: a null failure (--lose-count 0) costs exactly 0 and restores nothing" {
	run -0 scar-train -q --no-timing -m ridge -n 30 --fail-at 12 --lose-count 0 --cost
	[[ "$output" == *'"shards":[],"rows_lost":0'* ]]
	[ "$(printf '%s\n' "$output" | costs)" = "0 0.0" ]
	run -2 scar-train -m ridge --lose-count -1
}

@test "cost: lda's coupled chains give exactly 0 for a zero perturbation over 20 failure seeds" {
	for seed in $(seq 1 20); do
		T=$((5 + seed))
		got=$(scar-train -q --no-timing -m lda -n 30 --policy full --interval 1 \
			--fail-at "$T" --lose-fraction 1/2 --fail-seed "$seed" --cost | costs)
		echo "seed $seed T=$T: $got"
		[ "$got" = "0 0.0" ]
	done
}

@test "cost: a traditional restart costs exactly T - C, on every model" {
	while read -r label args; do
		for T in 11 13 20 23; do
			C=$((T / 8 * 8))
			# shellcheck disable=SC2086
			got=$(scar-train -q --no-timing $args --policy full --interval 8 \
				--recovery full --fail-at "$T" --lose-count 1 --cost | costs)
			echo "$label T=$T C=$C: $got"
			[ "$got" = "$((T - C)) $((T - C)).0" ]
		done
	done < <(workloads)
}

@test "cost: a resumed checkpoint is measured against the run it came from" {
	cd "$BATS_TEST_TMPDIR"
	# --model is not given: the reference must still be ridge's, not mlr's.
	scar-train -q --no-timing -m ridge -n 10 --save s10.ckpt > /dev/null
	run -0 scar-train -q --no-timing --resume s10.ckpt -n 40 --cost
	[ "$(printf '%s\n' "$output" | costs)" = "0 0.0" ]
	[[ "$output" == *'"censored":false'* ]]
}

@test "cost: grows with the size of a perturbation along a fixed direction" {
	cd "$BATS_TEST_TMPDIR"
	scar-train -q --no-timing -m ridge -n 10 --save s10.ckpt > /dev/null
	prev=-1
	for r in 0.001 0.01 0.1 0.3 1 3; do
		# The same --seed: the same noise direction, scaled.
		scar-inject --noise-rel "$r" --seed 3 s10.ckpt p.ckpt 2> /dev/null
		out=$(scar-train -q --no-timing --resume p.ckpt -n 40 --cost)
		[[ "$out" == *'"censored":false'* ]]
		got=$(printf '%s\n' "$out" | costs)
		c=${got#* }
		echo "rel $r: $got"
		awk -v a="$prev" -v b="$c" 'BEGIN { exit !(b > 0 && b >= a) }'
		prev=$c
	done
}

@test "cost: scar-bound check measures the same cost from the streams" {
	cd "$BATS_TEST_TMPDIR"
	bumpy_svm bumpy.svm
	# lr 3: as bumpy (the reference first reaches its target at 2), and
	# scar-bound fit still finds a contraction in its step norms.
	args="-m mlr --data bumpy.svm --set lr=3 --set lr_decay=0 -n 40"
	# shellcheck disable=SC2086
	scar-train -q --no-timing $args > ref.jsonl
	# shellcheck disable=SC2086
	scar-train -q --no-timing $args --policy full --interval 1 --fail-at 27 > null.jsonl
	run -0 scar-bound check ref.jsonl null.jsonl
	[[ "$output" == *"observed           0"* ]]
	# shellcheck disable=SC2086
	scar-train -q --no-timing $args --policy full --interval 8 --recovery full \
		--fail-at 21 > trad.jsonl
	run scar-bound check ref.jsonl trad.jsonl
	[[ "$output" == *"observed           5"* ]]
}

@test "cost: lda counts take noise as whole counts; noise that rounds away costs exactly 0" {
	cd "$BATS_TEST_TMPDIR"
	scar-train -q --no-timing -m lda -n 10 --save l10.ckpt > /dev/null
	scar-inject --noise-rel 1e-6 --seed 3 l10.ckpt tiny.ckpt 2> tiny.json
	grep -q '"delta_norm":0.0,' tiny.json
	run -0 scar-train -q --no-timing --resume tiny.ckpt -n 30 --cost
	[ "$(printf '%s\n' "$output" | costs)" = "0 0.0" ]
	scar-inject --noise-rel 1e-3 --seed 3 l10.ckpt small.ckpt 2> small.json
	# Rounded to integers, the norm is about, not exactly, the one asked for.
	rel=$(sed 's/.*"rel_delta_norm":\([^,]*\),.*/\1/' small.json)
	awk -v r="$rel" 'BEGIN { exit !(r > 0.0005 && r < 0.002) }'
	# They differ (exit 1, as cmp(1)).
	run -1 scar-diff -q l10.ckpt small.ckpt
}

@test "cost: examples/perturbation-cost.sh: an unchanged state costs exactly 0 in every trial" {
	run -0 sh "$SCAR_ROOT/examples/perturbation-cost.sh" -t 3 -o "$BATS_TEST_TMPDIR" \
		-r "0 1e-2" -m ridge -n 12
	# rel 0: 3 trials, all 3 exactly 0; rel 1e-2: none is 0.
	[[ "$output" == *$'\n0\t3\t3\t0\t0.0000\t0.0000\t0.0000\t0.0000\t0'* ]]
	[[ "$output" == *$'\n1e-2\t3\t0\t0.01\t'* ]]
	[ "$(grep -vc '^#' "$BATS_TEST_TMPDIR/perturbation-cost.tsv")" = 6 ]
}

@test "cost: a reference from another run, or a perturbed one, is refused" {
	cd "$BATS_TEST_TMPDIR"
	scar-train -q --no-timing -m ridge -n 20 > ref.jsonl
	scar-train -q --no-timing -m ridge -n 20 --seed 7 > seed7.jsonl
	scar-train -q --no-timing -m mlr -n 20 > mlr.jsonl
	scar-train -q --no-timing -m ridge -n 20 --policy full --interval 5 --recovery full \
		--fail-at 13 > pert.jsonl
	f="-m ridge -n 20 --policy full --interval 5 --recovery full --fail-at 13"
	# shellcheck disable=SC2086
	run -0 scar-train -q --no-timing $f --reference ref.jsonl
	[ "$(printf '%s\n' "$output" | costs)" = "3 3.0" ]
	# shellcheck disable=SC2086
	run -2 scar-train -q --no-timing $f --reference seed7.jsonl
	[[ "$output" == *"configuration"* ]]
	# shellcheck disable=SC2086
	run -2 scar-train -q --no-timing $f --reference mlr.jsonl
	[[ "$output" == *"model 'mlr', not 'ridge'"* ]]
	# shellcheck disable=SC2086
	run -2 scar-train -q --no-timing $f --shards 4 --reference ref.jsonl
	# shellcheck disable=SC2086
	run -2 scar-train -q --no-timing $f --reference pert.jsonl
	[[ "$output" == *"pert.jsonl"*"failure record"* ]]
}

@test "cost: a failure at or before the resume point, and a window longer than the run, are refused" {
	cd "$BATS_TEST_TMPDIR"
	scar-train -q --no-timing -m ridge -n 12 --policy full --interval 5 --checkpoint-dir run > /dev/null
	run -2 scar-train -q --no-timing --resume run -n 20 --fail-at 7 --cost
	[[ "$output" == *"failure at iteration 7 is not after the resume point 10"* ]]
	run -2 scar-train -q --no-timing --resume run -n 20 --fail-at 10
	run -0 scar-train -q --no-timing --resume run -n 20 --fail-at 11
	run -2 scar-train -q --no-timing -m ridge -n 20 --cost --cost-window 21
	[[ "$output" == *"cost window 21 is not in 1..20"* ]]
}

@test "cost: scar-bound check refuses a recovery record that cannot be" {
	cd "$BATS_TEST_TMPDIR"
	scar-train -q --no-timing -m ridge -n 20 > ref.jsonl
	# --cost: the run goes on until it reaches the reference's final objective.
	scar-train -q --no-timing -m ridge -n 20 --policy full --interval 5 --recovery full \
		--fail-at 13 --cost > pert.jsonl
	run -0 scar-bound check ref.jsonl pert.jsonl
	[[ "$output" == *"observed           3"* ]]
	for bad in '"resume_state_iter":17' '"resume_state_iter":-5' '"resume_state_iter":10.5' \
		'"objective":"x"'; do
		key=${bad%%:*}
		sed "/\"type\":\"recovery\"/s/$key:[^,}]*/$bad/" pert.jsonl > bad.jsonl
		run -2 scar-bound check ref.jsonl bad.jsonl
		echo "$bad: $output"
		[[ "$output" == *"bad.jsonl"*"recovery record"* ]]
	done
}
