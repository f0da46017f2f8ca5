#!/bin/sh
# bench-shuffle.sh - the byte shuffle before LZ4 (format 1.3, --shuffle)
# against plain LZ4, side by side (issue 20): the full checkpoints of the
# four models after 10 iterations on real data (mlr on Fashion-MNIST, mf on
# MovieLens, lda on SpamAssassin; ridge is synthetic, and so is a model
# whose data set is missing), then 64 MiB (16 with BENCH_QUICK=1) of
# Gaussian f32 weights and of u32 integers below 1000, like mkckpt's, in 8
# shards. For each, --shuffle off, on and auto: size ratio (tensor bytes
# over file bytes), sections shuffled, and write and read speed in MB of
# tensors per CPU second (tools/bench-shuffle: scar_ckpt_save without
# fsync, scar_ckpt_load, one thread, medians of BENCH_RUNS runs of at least
# 0.2 s each, default 5), with the speed against off in the same run.
set -eu
cd "$(dirname "$0")/.."
PATH="$PWD:$PATH"
out=bench/out/shuffle
mkdir -p "$out"
runs=${BENCH_RUNS:-5}
if [ "${BENCH_QUICK:-0}" = 1 ]; then size=16M; else size=64M; fi
data=${SCAR_DATA:-${XDG_CACHE_HOME:-$HOME/.cache}/scar}
for t in scar-train tools/bench-shuffle tools/mkckpt; do
	[ -x "$t" ] || { echo "bench-shuffle: run 'make all' first" >&2; exit 2; }
done

T='-n 10 -q --no-timing --shards 8'
# train NAME DATAFILE ARGS...: the model on its real data when DATAFILE is there
train() {
	name=$1 need=$2
	shift 2
	if [ -e "$need" ]; then
		scar-train $T "$@" --save "$out/$name.ckpt" > /dev/null
		echo "$name: $*" | sed "s#$data#\$SCAR_DATA#g"
	else
		scar-train $T -m "$name" --save "$out/$name.ckpt" > /dev/null
		echo "$name: synthetic ($need missing)"
	fi
}
echo "checkpoints (scar-train -n 10 --shards 8 --save):"
train mlr "$data/fashion-mnist/train-images-idx3-ubyte.gz" -m mlr --data "$data/fashion-mnist" \
	--set lr=0.05 --set lr_decay=0
train mf "$data/movielens/ratings.csv" -m mf --data "$data/movielens/ratings.csv"
train lda "$data/spam/docword.spam.txt" -m lda --data "$data/spam/docword.spam.txt"
scar-train $T -m ridge --save "$out/ridge.ckpt" > /dev/null
echo "ridge: synthetic (it has no real data set)"
tools/mkckpt --bytes "$size" --cols 1024 --shards 8 --no-sync "$out/f32.ckpt"
tools/mkckpt --bytes "$size" --cols 1024 --shards 8 --dtype u32 --no-sync "$out/u32.ckpt"
echo "f32: $size of Gaussian N(0, 0.02^2) weights; u32: $size of integers uniform below 1000"
echo

tools/bench-shuffle -n "$runs" "$out/mlr.ckpt" "$out/mf.ckpt" "$out/lda.ckpt" "$out/ridge.ckpt" \
	"$out/f32.ckpt" "$out/u32.ckpt" > "$out/raw.txt"
printf 'load: %s\n' "$(uptime | sed 's/.*load average: //')"
printf '%-6s %-5s %10s %7s %9s %9s %7s %9s %7s\n' ckpt mode bytes ratio shuffled write_MB/s "x off" read_MB/s "x off"
awk '{
	name = $1; sub(/.*\//, "", name); sub(/\.ckpt$/, "", name)
	if ($2 == "off") { w0 = $10; r0 = $12 }
	printf "%-6s %-5s %10d %6.2fx %9s %9.0f %6.2fx %9.0f %6.2fx\n", name, $2, $4, $6, $8,
		$10, (w0 > 0 ? $10 / w0 : 0), $12, (r0 > 0 ? $12 / r0 : 0)
}' "$out/raw.txt"
rm -f "$out"/*.ckpt
