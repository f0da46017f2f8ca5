#!/bin/sh
# bench-overhead.sh - what checkpointing costs a training run (issue 4
# section 6), beside the same run without checkpoints.
#
# For each workload (mlr on Fashion-MNIST, mf on MovieLens, lda on the
# SpamAssassin corpus; synthetic data when `make data` has not fetched them),
# at the comparison's settings (S = 8 shards, C = 8, r = 1/4, as in
# examples/compare-strategies.sh), runs scar-train with --policy none and
# with each policy writing checkpoint files to a directory (fsync on, LZ4 on,
# as a user would), BENCH_RUNS times each (default 3), interleaved so that
# load drifts hit every policy alike. Reported, medians over the runs:
#
#   train s      training time: the last iteration record's elapsed minus
#                the initial record's (data loading left out);
#   overhead     train s against the none run's median, as a percentage;
#   ckpt s       time inside checkpoints (selection, copy, compression, write);
#   ckpt %       ckpt s against the none run's train s (measured inside the
#                run, so steadier than overhead on a loaded machine);
#   select s     of which choosing the rows (priority: every row's distance
#                from its saved value, then a sort); with +async it is done
#                on the writer thread, part of bg s, not of ckpt s;
#   select %     select s against the none run's train s: the issue's
#                at-most-3% figure for priority;
#   bg s         with --async (the policies marked +async): the writer
#                thread's time, off the loop (choosing the rows, then the
#                write); ckpt s is then the loop's stall (waiting for a
#                slot, copying the state into the snapshot);
#   bytes/iter   checkpoint bytes written (file sizes) per iteration -
#                deterministic, the same in every run; the policies write
#                equal rows per iteration by construction, the bytes differ
#                by compression and per-file overhead.
#
# BENCH_QUICK=1: one run each, fewer iterations. BENCH_ASYNC=N: the +async
# policies with --async=N, N checkpoints in flight (default 1).
set -eu
cd "$(dirname "$0")/.."
out=bench/out/overhead
mkdir -p "$out"
runs=${BENCH_RUNS:-3}
n_mlr=10 n_mf=20 n_lda=20
if [ "${BENCH_QUICK:-0}" = 1 ]; then runs=1; n_mlr=4 n_mf=8 n_lda=8; fi
data=${SCAR_DATA:-${XDG_CACHE_HOME:-$HOME/.cache}/scar}
train=./scar-train
command -v jq > /dev/null || { echo "bench-overhead: jq is needed (make deps)" >&2; exit 2; }

model_args() {
	case $1 in
	mlr)
		if [ -e "$data/fashion-mnist/train-images-idx3-ubyte.gz" ]; then
			echo "-m mlr --data $data/fashion-mnist -n $n_mlr"
		else
			echo "-m mlr -n $n_mlr"
		fi ;;
	mf)
		if [ -e "$data/movielens/ratings.csv" ]; then
			echo "-m mf --data $data/movielens/ratings.csv -n $n_mf"
		else
			echo "-m mf -n $n_mf"
		fi ;;
	lda)
		if [ -e "$data/spam/docword.spam.txt" ]; then
			echo "-m lda --data $data/spam/docword.spam.txt -n $n_lda"
		else
			echo "-m lda -n $n_lda"
		fi ;;
	esac
}

# One run: prints "train_s ckpt_s select_s bytes iters bg_s". A policy
# P+async is P with --async (checkpoints written in the background).
one() {
	m=$1 policy=${2%+async} extra=""
	[ "$policy" = "$2" ] || extra=--async=${BENCH_ASYNC:-1}
	dir=$out/ckpt-$m-$policy
	rm -rf "$dir"
	if [ "$policy" = none ]; then
		pa="--policy none"
	else
		pa="--policy $policy --fraction 1/4 --checkpoint-dir $dir"
		[ "$policy" = full ] && pa="--policy full --checkpoint-dir $dir"
	fi
	# shellcheck disable=SC2086
	$train -q --shards 8 --interval 8 $(model_args "$m") $pa $extra > "$out/run.jsonl"
	rm -rf "$dir"
	jq -r -s '
		[.[] | select(.type == "iteration")] as $it
		| (.[] | select(.type == "summary")) as $s
		| "\($it[-1].elapsed - $it[0].elapsed) \($s.checkpoint_seconds // 0) \($s.select_seconds // 0) \($s.checkpoint_bytes) \($s.iters) \($s.background_seconds // 0)"
	' "$out/run.jsonl"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

policies="none full round-robin random priority full+async round-robin+async random+async priority+async"
printf '%-4s %-18s %9s %9s %9s %9s %9s %9s %9s %12s\n' model policy "train s" overhead "ckpt s" "ckpt %" "select s" "select %" "bg s" "bytes/iter"
for m in mlr mf lda; do
	: > "$out/$m.txt"
	i=1
	while [ "$i" -le "$runs" ]; do
		for p in $policies; do
			echo "$p $(one "$m" "$p")" >> "$out/$m.txt"
		done
		i=$((i + 1))
	done
	base=$(awk '$1 == "none" { print $2 }' "$out/$m.txt" | median)
	for p in $policies; do
		tr=$(awk -v p="$p" '$1 == p { print $2 }' "$out/$m.txt" | median)
		ck=$(awk -v p="$p" '$1 == p { print $3 }' "$out/$m.txt" | median)
		se=$(awk -v p="$p" '$1 == p { print $4 }' "$out/$m.txt" | median)
		bpi=$(awk -v p="$p" '$1 == p { printf "%.0f\n", $5 / $6 }' "$out/$m.txt" | median)
		bg=$(awk -v p="$p" '$1 == p { print $7 }' "$out/$m.txt" | median)
		awk -v m="$m" -v p="$p" -v tr="$tr" -v b="$base" -v ck="$ck" -v se="$se" -v bpi="$bpi" -v bg="$bg" 'BEGIN {
			printf "%-4s %-18s %9.3f %8.1f%% %9.4f %8.2f%% %9.5f %8.3f%% %9.4f %12d\n",
			    m, p, tr, 100 * (tr - b) / b, ck, 100 * ck / b, se, 100 * se / b, bg, bpi
		}'
	done
done
echo "(medians of $runs runs each, interleaved; wall clock on a shared machine: compare within a model, not across runs;"
echo " with +async (--async=${BENCH_ASYNC:-1}), ckpt s is the loop's stall, and bg s the writer thread's time:"
echo " the choice of the rows, select s, then the write)"
