#!/bin/sh
# bench-recovery.sh - what each recovery computes at a failure (issue 18),
# beside the iteration it interrupts, so that no strategy wins the
# comparison (examples/compare-strategies.sh) by hiding work.
#
# For each workload (mlr with its decaying step on Fashion-MNIST, mf on
# MovieLens, lda on the SpamAssassin corpus; synthetic data when `make data`
# has not fetched them), at the comparison's settings (S = 8, C = 8,
# r = 1/4, priority policy) with a quarter of the shards lost at T = 12,
# runs scar-train once per applicable recovery, BENCH_RUNS times (default
# 3), interleaved. Reported, medians over the runs:
#
#   iter s       one iteration: the median over the run of the differences
#                of consecutive iteration records' elapsed (the peer);
#   recovery s   the recovery's own computation: rebuild_seconds (rebuild),
#                auto.seconds (auto: its estimates and dry run) plus the
#                rebuild it chose, 0 for restoring rows (a memcpy) and rewind
#                (no work at the failure; during its window each rewinding
#                row costs one more pass over a minibatch's examples, inside
#                the iterations' time);
#   iters worth  recovery s / iter s: the recovery's work in iterations, to
#                be read beside the iteration costs of the comparison.
#
# BENCH_QUICK=1: one run each.
set -eu
cd "$(dirname "$0")/.."
out=bench/out/recovery
mkdir -p "$out"
runs=${BENCH_RUNS:-3}
if [ "${BENCH_QUICK:-0}" = 1 ]; then runs=1; fi
data=${SCAR_DATA:-${XDG_CACHE_HOME:-$HOME/.cache}/scar}
train=./scar-train
command -v jq > /dev/null || { echo "bench-recovery: jq is needed (make deps)" >&2; exit 2; }

model_args() {
	case $1 in
	mlr)
		if [ -e "$data/fashion-mnist/train-images-idx3-ubyte.gz" ]; then
			echo "-m mlr --data $data/fashion-mnist -n 16"
		else
			echo "-m mlr -n 16"
		fi ;;
	mf)
		if [ -e "$data/movielens/ratings.csv" ]; then
			echo "-m mf --data $data/movielens/ratings.csv -n 16"
		else
			echo "-m mf -n 16"
		fi ;;
	lda)
		if [ -e "$data/spam/docword.spam.txt" ]; then
			echo "-m lda --data $data/spam/docword.spam.txt -n 16"
		else
			echo "-m lda -n 16"
		fi ;;
	esac
}

recoveries() {
	case $1 in
	mlr) echo "partial rewind auto" ;;
	*) echo "partial rebuild auto" ;;
	esac
}

# One run: prints "iter_s recovery_s chosen".
one() {
	# shellcheck disable=SC2046
	$train -q --shards 8 --interval 8 --policy priority --fraction 1/4 --fail-at 12 \
		--lose-count 2 --recovery "$2" $(model_args "$1") > "$out/run.jsonl"
	jq -r -s '
		. as $all
		| [$all[] | select(.type == "iteration") | .elapsed] as $e
		| ([range(1; $e | length) | $e[.] - $e[. - 1]] | sort) as $d
		| ($d[($d | length) / 2 | floor]) as $it
		| ($all[] | select(.type == "recovery")) as $r
		| "\($it) \(($r.rebuild_seconds // 0) + ($r.auto.seconds // 0)) \($r.strategy)"
	' "$out/run.jsonl"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

printf '%-4s %-9s %-9s %10s %11s %12s\n' model recovery chose "iter s" "recovery s" "iters worth"
for m in mlr mf lda; do
	: > "$out/$m.txt"
	i=1
	while [ "$i" -le "$runs" ]; do
		for r in $(recoveries "$m"); do
			echo "$r $(one "$m" "$r")" >> "$out/$m.txt"
		done
		i=$((i + 1))
	done
	for r in $(recoveries "$m"); do
		it=$(awk -v r="$r" '$1 == r { print $2 }' "$out/$m.txt" | median)
		rs=$(awk -v r="$r" '$1 == r { print $3 }' "$out/$m.txt" | median)
		ch=$(awk -v r="$r" '$1 == r { print $4 }' "$out/$m.txt" | sort | uniq -c | sort -rn | awk 'NR == 1 { print $2 }')
		awk -v m="$m" -v r="$r" -v ch="$ch" -v it="$it" -v rs="$rs" 'BEGIN {
			printf "%-4s %-9s %-9s %10.4f %11.4f %12.3f\n", m, r, ch, it, rs, (it > 0 ? rs / it : 0) }'
	done
done
echo "(medians of $runs runs each, interleaved; the recovery's time against the same run's iterations)"
