#!/usr/bin/env bats
# Coupled randomness (scar(7), "Coupled randomness"; scar/rng.h keyed
# draws): every random number of a training step is keyed by the state's
# iteration and the item, so a token's draws do not depend on the worker
# blocks, a null perturbation leaves a run bit-identical to its reference,
# and lda's sampler is selectable.
bats_require_minimum_version 1.5.0
load helper

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
}

LDA=(-m lda --set docs=300 --set words=200)

@test "coupled: lda's draws are keyed by token, not by block: after one sweep the first AD-LDA block equals the sequential sampler" {
	# Block 0 of workers=2 samples its documents against the counts of the
	# start of the sweep plus its own changes: what workers=1 does for them.
	# With the same draws per token its assignments are the same; the
	# second block (stale counts) may differ.
	run -0 scar-train "${LDA[@]}" -n 1 --save w1.ckpt --no-timing -q
	run -0 scar-train "${LDA[@]}" --set workers=2 -n 1 --save w2.ckpt --no-timing -q
	for w in w1 w2; do
		run -0 scar-ckpt export --tensor z --format raw -o "$w.z" "$w.ckpt"
	done
	n=$(stat -c %s w1.z)
	run -1 cmp w1.z w2.z
	first=$(printf '%s\n' "$output" | sed -n 's/.* byte \([0-9]*\),.*/\1/p')
	[ -n "$first" ]
	# The first difference is past 40% of the tokens (block 0 is half the documents).
	[ "$first" -gt $((n * 4 / 10)) ]
}

@test "coupled: a failure that restores rows equal to the current ones leaves lda, mlr and mf-sgd bit-identical to the reference" {
	for m in "lda --set docs=200 --set words=150" "lda --set docs=200 --set words=150 --set sampler=cdf" \
		"lda --set docs=200 --set words=150 --set workers=3" "mlr --set n=400" \
		"mf --set solver=sgd --set users=120 --set items=90"; do
		# shellcheck disable=SC2086
		run -0 scar-train -m $m -n 24 --policy full --interval 1 --no-timing --events ref.jsonl
		# shellcheck disable=SC2086
		run -0 scar-train -m $m -n 24 --policy full --interval 1 --no-timing --events per.jsonl \
			--fail-at 9,17 --recovery partial --lose-count 3
		grep '"type":"iteration"' ref.jsonl | sed 's/"iter":[0-9]*,//' > ref.it
		grep '"type":"iteration"' per.jsonl | sed 's/"iter":[0-9]*,//' > per.it
		[ "$(wc -l < ref.it)" -eq 25 ]
		run -0 cmp ref.it per.it
	done
}

@test "coupled: lda's sampler defaults to the race, cdf is selectable and gives another chain, an unknown one is exit 2" {
	run -0 scar-train "${LDA[@]}" -n 3 --no-timing --events race.jsonl
	grep -q '"sampler":"race"' race.jsonl
	run -0 scar-train "${LDA[@]}" --set sampler=cdf -n 3 --no-timing --events cdf.jsonl
	grep -q '"sampler":"cdf"' cdf.jsonl
	run -1 cmp <(grep '"type":"iteration"' race.jsonl) <(grep '"type":"iteration"' cdf.jsonl)
	run -2 scar-train "${LDA[@]}" --set sampler=gumbel -n 1
	assert_output --partial "'sampler': unknown value 'gumbel'"
}

@test "coupled: a traditional restart replays the draws (lda, mlr, mf-sgd): the run after the restart repeats the reference" {
	for m in "lda --set docs=200 --set words=150" "mlr --set n=400" \
		"mf --set solver=sgd --set users=120 --set items=90"; do
		# shellcheck disable=SC2086
		run -0 scar-train -m $m -n 20 --policy full --interval 5 --no-timing --events ref.jsonl
		# shellcheck disable=SC2086
		run -0 scar-train -m $m -n 20 --policy full --interval 5 --no-timing --events per.jsonl \
			--fail-at 13 --recovery full
		# state_iter and objective of every iteration record: the reference's
		# up to state 17, with 11..13 (rolled back to 10) run twice.
		grep '"type":"iteration"' ref.jsonl | sed 's/.*"state_iter":\([0-9]*\),"objective":\([^,}]*\).*/\1 \2/' > ref.it
		grep '"type":"iteration"' per.jsonl | sed 's/.*"state_iter":\([0-9]*\),"objective":\([^,}]*\).*/\1 \2/' > per.it
		[ "$(wc -l < per.it)" -eq 21 ]
		[ "$(sed -n 15p per.it | cut -d' ' -f1)" -eq 11 ]
		sort -n -u per.it > per.u
		head -n 18 ref.it > ref.s
		run -0 cmp ref.s per.u
	done
}
