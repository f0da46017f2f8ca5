#!/usr/bin/env bats
# divergence.bats - every model's divergence (an objective grown by orders
# of magnitude, or a non-finite objective or parameters) ends the run with
# a "diverged" event and exit status 3 (scar-train(1), scar-events(7)), in
# one process and under MPI alike; and no legitimate run trips it: default
# and real-data runs of all four models, bumpy ones, runs with failures
# that set the objective back, and resumed runs.

bats_require_minimum_version 1.5.0
load helper

need_jq() { command -v jq >/dev/null || skip "jq not installed"; }

mpi() {
	local np=$1
	shift
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 \
		mpirun --oversubscribe -np "$np" scar-train "$@"
}

need_mpi() {
	command -v mpirun >/dev/null 2>&1 || skip "mpirun not found"
	mpi 2 --model ridge --iters 1 --no-timing -q > probe.jsonl 2> /dev/null &&
		grep -q '"ranks":2' probe.jsonl || skip "scar-train is not the MPI variant"
}

# last_is_diverged FILE REASON: the stream's last record is the diverged event
last_is_diverged() {
	jq -e -s --arg r "$2" 'map(select(.type == "diverged"))[0].reason == $r' < "$1" > /dev/null &&
		[ "$(tail -n 1 "$1" | jq -r .type)" = diverged ] &&
		[ "$(grep -c '"type":"diverged"' "$1")" = 1 ] &&
		! grep -q '"type":"summary"' "$1"
}

# no_divergence FILE: a finished stream without a diverged event
no_divergence() {
	! grep -q '"type":"diverged"' "$1" && [ "$(tail -n 1 "$1" | jq -r .type)" = summary ]
}

@test "divergence: ridge past 2 / lambda_max grows by orders of magnitude: event, exit 3" {
	need_jq
	# default data: lambda_max 1.11, so eta 2 gives c 1.22 (the header says so)
	run -3 --separate-stderr scar-train -q -m ridge -n 100 --set eta=2 --no-timing --events ev.jsonl
	[[ $stderr == "scar-train: training diverged at iteration 29 "* ]]
	last_is_diverged ev.jsonl growth
	jq -e -s '.[0] | .type == "header" and .effective.eta == 2 and .contraction > 1.2' ev.jsonl
	run -0 jq -c 'select(.type == "diverged") | [.iter, .state_iter, .objective > .threshold,
		.best_objective < 7.37, (.message | startswith("training diverged at iteration 29"))]' ev.jsonl
	[ "$output" = '[29,29,true,true,true]' ]
	# the iteration before was recorded, and was not yet past the threshold
	jq -e -s --argjson t "$(jq 'select(.type == "diverged") | .threshold' ev.jsonl)" \
		'map(select(.type == "iteration" and .iter == 28))[0].objective < $t' ev.jsonl
}

@test "divergence: non-finite parameters in mlr and mf, a non-finite resumed state: exit 3" {
	need_jq
	run -3 --separate-stderr scar-train -q -m mlr -n 20 --set lr=1e6 --no-timing --events mlr.jsonl
	[ "$stderr" = "scar-train: mlr: weights diverged (lower lr)" ]
	last_is_diverged mlr.jsonl nonfinite
	[ "$(jq -c 'select(.type == "diverged") | [.iter, .objective]' mlr.jsonl)" = '[1,null]' ]
	run -3 scar-train -q -m mf -n 20 --set solver=sgd --set lr=5 --no-timing --events mf.jsonl
	last_is_diverged mf.jsonl nonfinite
	# a state whose objective is not finite, from the start of a resumed run
	scar-train -q -m ridge -n 5 --save r.ckpt --events /dev/null
	scar-inject --noise-l2 1e300 r.ckpt big.ckpt 2> /dev/null
	run -3 --separate-stderr scar-train -q --resume big.ckpt -n 10 --no-timing --events res.jsonl
	[ "$stderr" = "scar-train: training diverged at iteration 5 (the objective is not finite)" ]
	last_is_diverged res.jsonl nonfinite
	[ "$(jq -c 'select(.type == "diverged") | [.iter, .objective, .best_objective]' res.jsonl)" = '[5,null,null]' ]
	# a reference run that diverges stops --cost the same way
	run -3 scar-train -q -m ridge -n 60 --set eta=2 --fail-at 10 --cost --no-timing --events /dev/null
}

@test "divergence: MPI ranks report it as one process does, exit 3" {
	need_jq
	need_mpi
	scar-train -q -m ridge -n 100 --set eta=2 --no-timing > one.jsonl || [ $? = 3 ]
	run -3 mpi 2 -q -m ridge -n 100 --set eta=2 --no-timing --events two.jsonl
	last_is_diverged two.jsonl growth
	# ridge with P > 1 sums in another order (within 1e-6): compare the rest exactly
	[ "$(jq -c 'select(.type == "diverged") | [.iter, .state_iter, .reason]' two.jsonl)" = \
	  "$(jq -c 'select(.type == "diverged") | [.iter, .state_iter, .reason]' one.jsonl)" ]
	# mlr and mf (DSGD) are bit-identical to one process, the event too
	for m in "mlr --set lr=1e6" "mf --set solver=sgd --set workers=2 --set lr=5"; do
		# shellcheck disable=SC2086
		scar-train -q -m $m -n 10 --no-timing > one.jsonl 2> /dev/null || [ $? = 3 ]
		# shellcheck disable=SC2086
		run -3 mpi 2 -q -m $m -n 10 --no-timing --events two.jsonl
		[ "$(grep diverged two.jsonl)" = "$(grep diverged one.jsonl)" ]
		last_is_diverged two.jsonl nonfinite
	done
}

@test "divergence: default runs of all four models, with failures and resumes, do not trip it" {
	need_jq
	for m in ridge mlr mf lda; do
		run -0 scar-train -q -m "$m" -n 60 --no-timing --events a.jsonl
		no_divergence a.jsonl
		# failures that set the objective back: rows zeroed, or a rollback
		run -0 scar-train -q -m "$m" -n 60 --no-timing --fail-prob 0.2 --recovery none \
			--lose-fraction 1/2 --events b.jsonl
		no_divergence b.jsonl
		run -0 scar-train -q -m "$m" -n 60 --no-timing --fail-at 7,30 --policy full \
			--interval 5 --recovery full --cost --events c.jsonl
		no_divergence c.jsonl
	done
	# resumed near the optimum, then every row lost and zeroed: the objective
	# jumps far above the resumed one (mlr: about 60 times), and that is a start
	for m in ridge mlr mf; do
		scar-train -q -m "$m" -n 150 --no-timing --save "$m.ckpt" --events /dev/null
		run -0 scar-train -q --resume "$m.ckpt" -n 200 --fail-at 151,170 --lose-fraction 1 \
			--recovery none --no-timing --events d.jsonl
		no_divergence d.jsonl
	done
	# the same where the optimum's objective is 1e-8 and the zeroed state's 2:
	# a factor of 1e8 that is a failure's doing, not divergence
	scar-train -q -m ridge --set noise=0 --set lambda=1e-9 -n 600 --no-timing --save z.ckpt \
		--events /dev/null
	run -0 scar-train -q --resume z.ckpt -n 650 --fail-at 601 --lose-fraction 1 --recovery none \
		--no-timing --events z.jsonl
	no_divergence z.jsonl
	jq -e -s 'map(select(.type == "iteration")) | .[0].objective < 1e-7 and .[2].objective > 1' z.jsonl
}

@test "divergence: real-data runs of all four models, bumpy ones too, do not trip it" {
	need_jq
	need_data fashion-mnist
	need_data movielens
	need_data spam
	# a constant step large enough to make the cross-entropy climb above its start
	run -0 scar-train -q -m mlr --data "$SCAR_DATA/fashion-mnist" --set lr=1 --set lr_decay=0 \
		-n 8 --no-timing --events mlr.jsonl
	no_divergence mlr.jsonl
	jq -e -s '[.[] | select(.type == "iteration") | .objective] as $o | ($o | max) > $o[0]' mlr.jsonl
	run -0 scar-train -q -m mlr --data "$SCAR_DATA/fashion-mnist" --set lr=0.05 --set lr_decay=0 \
		-n 8 --fail-at 4 --lose-fraction 1/2 --recovery none --no-timing --events mlr2.jsonl
	no_divergence mlr2.jsonl
	for s in als sgd; do
		run -0 scar-train -q -m mf --data "$SCAR_DATA/movielens/ratings.csv" --set solver=$s \
			-n 10 --fail-at 5 --lose-fraction 1/2 --recovery none --no-timing --events mf.jsonl
		no_divergence mf.jsonl
	done
	# log-likelihood: negative, higher is better
	run -0 scar-train -q -m lda --data "$SCAR_DATA/spam/docword.spam.txt" -n 15 --fail-at 8 \
		--lose-fraction 1/2 --recovery none --no-timing --events lda.jsonl
	no_divergence lda.jsonl
	# ridge on real targets: is a message spam, from log(1 + count) of 200 words
	awk -v K=200 'FNR == NR { y[$1] = ($2 ~ /spam/) ? 1 : 0; n = $1; next }
		FNR > 3 && $2 <= K { f[$1] = f[$1] " " $2 ":" log(1 + $3) }
		END { for (i = 1; i <= n; i++) print y[i] f[i] }' \
		"$SCAR_DATA/spam/docs.spam.txt" "$SCAR_DATA/spam/docword.spam.txt" > spam.svm
	run -0 scar-train -q -m ridge --data spam.svm -n 200 --fail-at 100 --lose-fraction 1/2 \
		--recovery none --no-timing --events ridge.jsonl
	no_divergence ridge.jsonl
}
