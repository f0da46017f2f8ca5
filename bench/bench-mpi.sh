#!/bin/sh
# bench-mpi.sh - distributed training on Open MPI (issue 8 section 6):
# iteration throughput and bytes communicated per iteration for P = 1, 2, 4
# ranks on this machine, checkpoint volume per P, and the model of how both
# grow with P (scar-mpi(7), COST MODEL).
#
# ridge: n = 200000 examples, d = 200 features, 40 iterations;
# mlr:   n = 50000, d = 100, 10 classes, 6 epochs (iterations);
# (BENCH_QUICK=1: a fifth of the examples); 8 shards, a full checkpoint
# every 10 iterations (ridge) or 2 (mlr). Throughput is iterations /
# (elapsed at the last iteration - elapsed at iteration 0) from the event
# stream, so start-up (MPI, data, the model's set-up) is left out; medians of
# BENCH_RUNS (3) runs. P = 1 is the single-process trainer (mpirun -np 1
# runs it unchanged). Ranks yield when idle (OMPI_MCA_mpi_yield_when_idle=1),
# which matters when the machine is shared. P > cores is oversubscribed:
# ranks then share cores and the figures show it. The load average is
# printed: on a busy machine every collective waits for a time slice.
set -eu
cd "$(dirname "$0")/.."
PATH="$PWD:$PATH"
out=bench/out/mpi
mkdir -p "$out"
runs=${BENCH_RUNS:-3}
train=${SCAR_MPI_TRAIN:-$PWD/scar-train}
if [ "${BENCH_QUICK:-0}" = 1 ]; then q=5; else q=1; fi

for t in mpirun jq; do
	command -v "$t" >/dev/null || { echo "bench-mpi: '$t' not installed (make deps); skipped"; exit 0; }
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
mpi() { np=$1; shift; mpirun --oversubscribe -np "$np" "$train" "$@"; }
if ! mpi 2 --model ridge --iters 1 -q --no-timing 2>/dev/null | grep -q '"ranks":2'; then
	echo "bench-mpi: $train is not the MPI variant (build with mpicc); skipped"
	exit 0
fi

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# bench NAME ITERS INTERVAL MODEL_BYTES_CMD -- TRAIN_ARGS...
bench() {
	name=$1 iters=$2 interval=$3 model=$4
	shift 4
	echo "$name $*, $iters iterations, $(nproc 2>/dev/null || echo 1) cores, load $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?'), $runs runs, medians"
	printf '%-3s %10s %9s %14s %14s %10s %10s\n' P iters/s speedup comm_B/iter model_B/iter ckpt_B ckpt_s
	base=
	for P in 1 2 4; do
		: > "$out/tput"
		: > "$out/ckpts"
		i=0
		while [ "$i" -lt "$runs" ]; do
			rm -rf "$out/ck"
			mkdir -p "$out/ck"
			mpi "$P" "$@" --iters "$iters" -q --no-sync --policy full --interval "$interval" \
				--checkpoint-dir "$out/ck" > "$out/$name-p$P.jsonl"
			jq -rs '[.[] | select(.type == "iteration")] as $it
			        | ($it | length - 1) / ($it[-1].elapsed - $it[0].elapsed)' \
				"$out/$name-p$P.jsonl" >> "$out/tput"
			jq -rs '[.[] | select(.type == "checkpoint")]
			        | "\(.[-1].bytes) \(map(.seconds) | add / length)"' \
				"$out/$name-p$P.jsonl" >> "$out/ckpts"
			i=$((i + 1))
		done
		tput=$(median < "$out/tput")
		comm=$(jq -rs --argjson it "$iters" '.[] | select(.type == "summary") | (.comm_bytes // 0) / $it' \
			"$out/$name-p$P.jsonl")
		ckb=$(awk '{ print $1 }' "$out/ckpts" | median)
		cks=$(awk '{ print $2 }' "$out/ckpts" | median)
		[ -n "$base" ] || base=$tput
		printf '%-3s %10.2f %9.2f %14.0f %14.0f %10d %10.4f\n' "$P" "$tput" \
			"$(awk -v a="$tput" -v b="$base" 'BEGIN { print a / b }')" "$comm" \
			"$(awk -v P="$P" "BEGIN { print $model }")" "$ckb" "$cks"
	done
	echo
}

n=$((200000 / q))
d=200
# alltoallv of partial gradients + allgatherv of w: (P-1) d doubles each; the
# objective's allgather: P (P-1) doubles.
bench ridge 40 10 "2 * (P - 1) * $d * 8 + P * (P - 1) * 8" \
	--model ridge --set n=$n --set d=$d --shards 8

n=$((50000 / q))
d=100
k=10
b=128
nb=$(((n + b - 1) / b))
# The held-out split keeps n, as there is a synthetic test set (n_test).
# Per epoch: every example's k deltas and the (d+1) k weights per minibatch,
# floats, to the P-1 others; the objective's batch sums, doubles.
bench mlr 6 2 "(P - 1) * 4 * $k * ($n + $nb * ($d + 1)) + (P - 1) * 8 * $nb" \
	--model mlr --set n=$n --set d=$d --set classes=$k --set batch=$b --shards 8

rm -rf "$out/ck"
cat <<EOF
Model (scar-mpi(7), COST MODEL): communication per iteration is linear in
P - ridge 2 (P-1) d 8 + 8 P (P-1) bytes, independent of n; mlr per epoch
(P-1) 4 k (n + ceil(n/b) (d+1)) + (P-1) 8 ceil(n/b) - and model_B/iter is
that formula beside the measured comm_B/iter. A checkpoint writes every row
once whatever P, plus per rank file a header, metadata and index and the
list of the rank's (interleaved) rows; the P files are written in parallel.
EOF
