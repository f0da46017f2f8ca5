#!/bin/sh
# bench-mpi.sh - distributed training on Open MPI (issue 8 section 6):
# iteration throughput and bytes communicated per iteration for P = 1, 2, 4
# ranks on this machine, checkpoint volume per P, and the model of how both
# grow with P (scar-mpi(7), COST MODEL), beside the peer: the single-process
# trainer run without mpirun ("solo"), which every ratio divides by.
#
# Workloads, 8 shards, a full checkpoint every C iterations (--no-sync):
#   ridge  synthetic, n = 100000 examples, d = 200; 20 iterations, C = 10;
#   mlr    synthetic, n = 50000, d = 100, 10 classes, minibatches of 128;
#          6 epochs, C = 2;
#   mf     ALS, rank 10, on MovieLens ml-latest-small when `make data` has
#          fetched it, else the synthetic ratings (the output says which);
#          30 sweeps, C = 10;
#   mf-sgd SGD as DSGD with workers=4 (1, 2 and 4 divide it; the same epoch,
#          bit for bit, on every P), rank 10, the same ratings; 30 epochs,
#          C = 10;
#   lda    10 topics, workers=4 (AD-LDA over 4 blocks of documents; 1, 2 and
#          4 divide it, so every P computes the same sweep, bit for bit), on
#          the SpamAssassin corpus when fetched, else the synthetic corpus;
#          10 sweeps, C = 5.
# BENCH_QUICK=1: a fifth of ridge's and mlr's examples, fewer iterations.
#
# Every configuration - solo, then mpirun -np 1, 2 and 4 - runs BENCH_RUNS
# times (default 3), interleaved so that load drifts hit them alike. Columns,
# medians over the runs:
#   iters/s       iterations / (elapsed at the last iteration - elapsed at
#                 iteration 0) from the event stream: start-up (MPI, data,
#                 the model's set-up) is left out, checkpoints are in;
#   vs_solo       iters/s against solo's;
#   comm_B/iter   the summary's comm_bytes (what all ranks sent during
#                 training) per iteration, beside model_B/iter, the formula
#                 of scar-mpi(7) from the workload's dimensions (read off the
#                 solo run's checkpoint);
#   ckpt_B        bytes of the last full checkpoint (the rank files together,
#                 as the checkpoint event reports them), beside model_ckpt_B,
#                 scar-mpi(7)'s ckpt(P) from the solo run's checkpoint file;
#   ckpt_vs_solo  ckpt_B against solo's;
#   ckpt_s        mean seconds per checkpoint.
# Wall time only: a rank's CPU time includes its start-up and, with
# OMPI_MCA_mpi_yield_when_idle=1 (set here; it matters on a shared machine),
# the time it spins yielding in collectives. P > cores is oversubscribed:
# ranks share cores and the figures show it. uptime is printed before and
# after each workload: on a busy machine every collective waits for the other
# ranks to get a time slice.
# shellcheck disable=SC2016 # jq programs in single quotes
set -eu
cd "$(dirname "$0")/.."
PATH="$PWD:$PATH"
out=bench/out/mpi
rm -rf "$out"
mkdir -p "$out"
runs=${BENCH_RUNS:-3}
data=${SCAR_DATA:-${XDG_CACHE_HOME:-$HOME/.cache}/scar}
if [ "${BENCH_QUICK:-0}" = 1 ]; then q=5 h=2; else q=1 h=1; fi
name=bench-mpi tools="jq od dd"
# shellcheck source=bench/mpi-common.sh
. bench/mpi-common.sh

# The JSON metadata block of a checkpoint file (scar-ckpt(5): u32 meta_len at
# offset 16, the JSON at 24).
meta_len() { od -An -tu4 -j16 -N4 "$1" | tr -d ' '; }
meta() { dd if="$1" bs=1 skip=24 count="$(meta_len "$1")" 2>/dev/null; }

# scar-mpi(7) ckpt(P) - ckpt(1), as jq over the single-process checkpoint's
# metadata, with $P and $m (its meta_len): per extra rank file 68 bytes of
# header, metadata length and CRC, index frame and trailer plus the metadata
# less the state tensors' entries (rank 0's file alone lists them); "partial"
# for "full" in every file; and per parameter tensor, in place of one "all"
# (5 bytes), each rank file's present rows: "all" if it owns every row, []
# if none, else the shorter of its [start,count] list (digits + 3 bytes a
# run, a comma between runs) and the bitmap, 13 + 4 ceil(ceil(n/8)/3) bytes
# (scar-ckpt(5)). Rank k owns the rows r with (r mod S) mod P = k.
ckpt_model='
	def bitmap(n): 13 + 4 * ((((n + 7) / 8 | floor) + 2) / 3 | floor);
	def present(n; S; P; k):
	  def close: if .a >= 0
	    then .l += (.a | tostring | length) + (.c | tostring | length) + 3 | .runs += 1 | .a = -1
	    else . end;
	  reduce range(0; n) as $r ({l: 0, c: 0, a: -1, runs: 0, cnt: 0};
	      if ($r % S) % P == k
	      then (if .a < 0 then .a = $r | .c = 1 else .c += 1 end) | .cnt += 1
	      else close end)
	  | close
	  | if .cnt == n then 5 elif .runs == 0 then 2
	    else [2 + .l + .runs - 1, bitmap(n)] | min end;
	([.tensors[] | select(.role == "state") | tojson | length + 1] | add // 0) as $s
	| .shards as $S
	| if $P == 1 then 0 else
	  ($P - 1) * (68 + $m - $s) + 3 * $P
	  + ([.tensors[] | select(.role == "param") | .rows as $n
	      | ([range(0; $P) as $k | present($n; $S; $P; $k)] | add) - 5 * $P] | add // 0)
	  end'

# bench NAME ITERS INTERVAL COMM_MODEL DESCRIPTION -- TRAIN_ARGS...
# COMM_MODEL: jq over the solo checkpoint's metadata, with $P: the bytes the
# ranks send per iteration by scar-mpi(7).
bench() {
	name=$1 iters=$2 interval=$3 model=$4 desc=$5
	shift 6
	echo "$name: $desc"
	echo "  $*; $iters iterations, 8 shards, full checkpoint every $interval;" \
		"$(nproc 2>/dev/null || echo 1) cores, $runs runs, medians"
	echo "  before: $(uptime)"
	for P in solo 1 2 4; do
		: > "$out/$name-$P.tput"
		: > "$out/$name-$P.ckb"
	done
	i=0
	while [ "$i" -lt "$runs" ]; do
		for P in solo 1 2 4; do
			rm -rf "$out/ck"
			mkdir -p "$out/ck"
			if [ "$P" = solo ]; then
				"$train" "$@" --iters "$iters" -q --no-sync --policy full \
					--interval "$interval" --checkpoint-dir "$out/ck" > "$out/$name-$P.jsonl"
				for last in "$out/ck"/ckpt-*.ckpt; do :; done	# sorted: the newest
				cp "$last" "$out/$name-solo.last.ckpt"
			else
				mpirun --oversubscribe -np "$P" "$train" "$@" --iters "$iters" -q --no-sync \
					--policy full --interval "$interval" --checkpoint-dir "$out/ck" \
					> "$out/$name-$P.jsonl"
			fi
			jq -rs '[.[] | select(.type == "iteration")] as $it
			        | ($it | length - 1) / ($it[-1].elapsed - $it[0].elapsed)' \
				"$out/$name-$P.jsonl" >> "$out/$name-$P.tput"
			jq -rs '[.[] | select(.type == "checkpoint")]
			        | "\(.[-1].bytes) \(map(.seconds) | add / length)"' \
				"$out/$name-$P.jsonl" >> "$out/$name-$P.ckb"
		done
		i=$((i + 1))
	done
	meta "$out/$name-solo.last.ckpt" > "$out/$name-solo.meta"
	m=$(meta_len "$out/$name-solo.last.ckpt")
	printf '  %-16s %8s %7s %12s %12s %9s %12s %12s %8s\n' ranks iters/s vs_solo \
		comm_B/iter model_B/iter ckpt_B model_ckpt_B ckpt_vs_solo ckpt_s
	agree=yes
	for P in solo 1 2 4; do
		tput=$(median < "$out/$name-$P.tput")
		ckb=$(awk '{ print $1 }' "$out/$name-$P.ckb" | median)
		cks=$(awk '{ print $2 }' "$out/$name-$P.ckb" | median)
		comm=$(jq -rs --argjson it "$iters" \
			'.[] | select(.type == "summary") | (.comm_bytes // 0) / $it' "$out/$name-$P.jsonl")
		np=$P label="mpirun -np $P"
		if [ "$P" = solo ]; then
			np=1 label="solo (no mpirun)" base=$tput ckbase=$ckb
		fi
		mcomm=$(jq --argjson P "$np" "$model" "$out/$name-solo.meta")
		mck=$(jq --argjson P "$np" --argjson m "$m" "$ckpt_model" "$out/$name-solo.meta")
		mck=$(awk -v a="$ckbase" -v b="$mck" 'BEGIN { printf "%.0f", a + b }')
		awk -v a="$comm" -v b="$mcomm" -v c="$ckb" -v d="$mck" \
			'BEGIN { exit !(a == b && c == d) }' || agree=no
		printf '  %-16s %8.2f %7.2f %12.0f %12.0f %9d %12d %12.3f %8.4f\n' "$label" \
			"$tput" "$(awk -v a="$tput" -v b="$base" 'BEGIN { print a / b }')" \
			"$comm" "$mcomm" "$ckb" "$mck" \
			"$(awk -v a="$ckb" -v b="$ckbase" 'BEGIN { print a / b }')" "$cks"
	done
	echo "  measured bytes = model bytes, communication and checkpoints: $agree"
	echo "  after:  $(uptime)"
	echo
}

n=$((100000 / q))
bench ridge $((20 / h)) 10 \
	'[.tensors[] | select(.name == "w") | .rows][0] as $d
	 | 2 * ($P - 1) * $d * 8 + 8 * $P * ($P - 1)' \
	"synthetic, n = $n, d = 200" \
	-- --model ridge --set n=$n --set d=200 --shards 8

n=$((50000 / q))
# The synthetic test set is extra (n_test), so all n examples train.
bench mlr $((6 / h)) 2 \
	'[.tensors[] | select(.name == "weights") | .shape][0] as [$d1, $k]
	 | .config.n as $n | .config.batch as $b | (($n + $b - 1) / $b | floor) as $nb
	 | ($P - 1) * 4 * $k * ($n + $nb * $d1) + ($P - 1) * 8 * $nb' \
	"synthetic, n = $n, d = 100, 10 classes, minibatches of 128" \
	-- --model mlr --set n=$n --set d=100 --set classes=10 --set batch=128 --shards 8

if [ -e "$data/movielens/ratings.csv" ]; then
	set -- --data "$data/movielens/ratings.csv"
	what="ALS, rank 10, MovieLens ml-latest-small ($data/movielens/ratings.csv)"
else
	set --
	what="ALS, rank 10, synthetic ratings (no MovieLens in $data: make data)"
fi
bench mf $((30 / h)) 10 \
	'def rows(t): [.tensors[] | select(.name == t) | .rows][0];
	 rows("user_factors") as $U | rows("item_factors") as $I
	 | [.tensors[] | select(.name == "user_factors") | .shape[1]][0] as $k
	 | ($P - 1) * (4 * ($k + 1) * ($U + $I) + 8 * (3 * $U + $I))' \
	"$what" -- --model mf "$@" --set solver=als --set rank=10 --shards 8

# DSGD: the smaller side's blocks travel between neighbours, Q = min(P, W)
# ranks are homes of blocks (lo(R) the first), block j of M rows has
# ceil((M - j) / W); all rows are gathered after the last stratum.
bench mf-sgd $((30 / h)) 10 \
	'def rows(t): [.tensors[] | select(.name == t) | .rows][0];
	 rows("user_factors") as $U | rows("item_factors") as $I
	 | [.tensors[] | select(.name == "user_factors") | .shape[1]][0] as $k
	 | .config.workers as $W | ([$P, $W] | min) as $Q
	 | (if $U <= $I then $U else $I end) as $M
	 | def lo(r): r * (($W / $P) | floor) + ([r, $W % $P] | min);
	   def mj(j): if $M > j then (($M - j + $W - 1) / $W | floor) else 0 end;
	   if $P == 1 then 0 else
	     ($P - 1) * (4 * ($k + 1) * ($U + $I) + 8 * (2 * $U + $I))
	     + 4 * ($k + 1) * ($Q * $M - ([range(0; $Q) | lo(.)
	         | if $U <= $I then . else (. + $W - 1) % $W end | mj(.)] | add))
	   end' \
	"$(echo "$what" | sed 's/^ALS/SGD (DSGD, 4 workers)/')" \
	-- --model mf "$@" --set solver=sgd --set workers=4 --set rank=10 --shards 8

if [ -e "$data/spam/docword.spam.txt" ]; then
	set -- --data "$data/spam/docword.spam.txt"
	what="10 topics, 4 workers, SpamAssassin corpus ($data/spam/docword.spam.txt)"
else
	set --
	what="10 topics, 4 workers, synthetic corpus (no SpamAssassin corpus in $data: make data)"
fi
bench lda $((10 / h)) 5 \
	'def rows(t): [.tensors[] | select(.name == t) | .rows][0];
	 ($P - 1) * (4 * rows("z") + 8 * rows("doc_topic"))' \
	"$what" -- --model lda "$@" --set topics=10 --set workers=4 --shards 8

rm -rf "$out/ck"
cat <<EOF
Model (scar-mpi(7), COST MODEL), linear in P at fixed data: bytes sent per
iteration, ridge 2 (P-1) 8 d + 8 P (P-1) (independent of n); mlr per epoch
(P-1) 4 k (n + ceil(n/b) (d+1)) + (P-1) 8 ceil(n/b); mf per sweep
(P-1) (4 (k+1) (U+I) + 8 (3U + I)) (independent of the ratings); mf SGD with
W workers per epoch (P-1) (4 (k+1) (U+I) + 8 (2U + I)) plus the travelling
blocks, about 4 (k+1) min(P, W) min(U, I) (W-1)/W; lda per sweep
(P-1) (4 T + 8 N) over T tokens and N documents (independent of vocabulary and
topics). A checkpoint writes every row once whatever P, in sections that are
byte for byte the single process's; each extra rank file adds 68 bytes and
its metadata, and each rank file marks its interleaved rows in a bitmap:
ckpt(P) - ckpt(1) = (P-1)(68 + m - s) + 3P + sum over parameter tensors of
about P (13 + n/6) - 5P bytes (exactly: the shorter of bitmap and row list).
EOF
