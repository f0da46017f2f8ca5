#!/bin/sh
# bench-mpi-kill.sh - what a real rank death costs (issue 22, scar-mpi(7)
# Real failures), beside the two things it must be compared with, in one run:
#   real      one rank of a P-rank job killed with SIGKILL from outside at a
#             seeded iteration; the job ends, the survivors write their
#             files, and `mpirun -np P scar-train --resume D` goes on from
#             them with only the dead rank's shards from the saved view;
#   simulated the same shards lost at the same iteration inside one job
#             (--fail-at, --lose-shards): SCAR's promise, which the real
#             failure must match (bit for bit for a given P, so the costs
#             are equal, not merely close: the coupled runs leave no noise);
#   restart   the traditional restart, everything rolled back to the newest
#             full checkpoint C before the failure at T: it redoes T - C
#             iterations (the simulated --recovery full, whose cost is
#             exactly T - C, is run as a check of that figure).
# Costs are scar-train(1)'s iteration cost (--cost against the same
# unperturbed reference, --reference): the extra iterations the perturbed
# run needs to reach the reference's objective at --iters.
# Also the survivors' own figures: the largest survivor file, how long its
# write took and how long after the first signal it was in place, against
# the time mpirun gives (SIGKILL about 1 s after SIGTERM, which comes about
# 1 s after the death: odls_base_sigkill_timeout).
#
# Workloads (synthetic, the sizes of tests/bats/mpi-kill.bats; full
# checkpoints every C, --no-sync), P = 2 and 4, BENCH_RUNS seeds each
# (default 3): the seed picks the victim rank and the iteration the kill is
# aimed at, in the first half of the third or fourth interval (2C, 2.5C] or
# (3C, 3.5C]; the kill lands a few iterations later (the stream is polled),
# and the table gives where it landed.
# BENCH_QUICK=1: P = 2 only, one seed.
# shellcheck disable=SC2016,SC2086,SC2012 # jq programs in single quotes; $sched is
# words on purpose; ls of a directory this script made
set -eu
cd "$(dirname "$0")/.."
PATH="$PWD:$PATH"
out=bench/out/mpi-kill
rm -rf "$out"
mkdir -p "$out"
runs=${BENCH_RUNS:-3}
ranks="2 4"
if [ "${BENCH_QUICK:-0}" = 1 ]; then runs=1 ranks=2; fi
name=bench-mpi-kill tools="jq pgrep"
# shellcheck source=bench/mpi-common.sh
. bench/mpi-common.sh
mpi() { np=$1; shift; mpirun --oversubscribe -np "$np" "$train" "$@"; }
cost() { jq -r 'select(.type == "cost") | .cost' "$1"; }

# kill_at P VICTIM K DIR ARGS...: run ARGS on P ranks, checkpoints in DIR;
# once the stream shows iteration K, SIGKILL rank VICTIM. Returns when
# mpirun has ended; the stream and stderr are DIR.jsonl and DIR.err.
kill_at() {
	P=$1 victim=$2 K=$3 dir=$4
	shift 4
	mkdir "$dir"
	# mpirun itself, not a function's subshell: its children are the ranks.
	mpirun --oversubscribe -np "$P" "$train" "$@" --checkpoint-dir "$dir" \
		> "$dir.jsonl" 2> "$dir.err" &
	mpid=$!
	n=0
	until grep -q "\"iter\":$K," "$dir.jsonl"; do
		n=$((n + 1))
		if [ "$n" -gt 6000 ] || ! kill -0 "$mpid" 2>/dev/null; then
			echo "bench-mpi-kill: iteration $K never came ($dir.err)" >&2
			kill "$mpid" 2>/dev/null || true
			return 1
		fi
		sleep 0.005
	done
	killed=
	for p in $(pgrep -P "$mpid"); do
		if tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null |
			grep -qx "OMPI_COMM_WORLD_RANK=$victim"; then
			kill -9 "$p" && killed=$p
		fi
	done
	wait "$mpid" || true
	if [ -z "$killed" ]; then
		echo "bench-mpi-kill: rank $victim of mpirun $mpid not found" >&2
		return 1
	fi
}

# bench NAME ITERS C REBUILD -- TRAIN_ARGS...: REBUILD yes for a model
# with recovery rebuild (mf, lda), measured after the real failure too.
bench() {
	name=$1 iters=$2 C=$3 rebuild=$4
	shift 5
	sched="--iters $iters --policy full --interval $C"
	echo "$name: $*; $iters iterations, a full checkpoint every $C; $runs seeds"
	echo "  before: $(uptime)"
	printf '  %2s %4s %6s %6s %5s %-12s %6s %9s %8s %11s %9s %9s %8s %8s %6s\n' \
		P seed victim kill_T ckpt lost_shards real sim rebuild restart=T-C full_sim \
		surv_B write_ms in_place_ms equal
	for P in $ranks; do
		mpi "$P" "$@" --iters "$iters" --no-timing -q > "$out/$name-$P.ref.jsonl"
		: > "$out/$name-$P.costs"
		seed=1
		while [ "$seed" -le "$runs" ]; do
			# The seed's victim and aim, from awk's generator (the same on every run).
			va=$(awk -v s="$seed" -v P="$P" -v C="$C" -v m="$name" 'BEGIN {
				srand(s * 7919 + P * 31 + length(m)); v = int(rand() * P)
				print v, 2 * C + int(rand() * 2) * C + 1 + int(rand() * C / 2) }')
			victim=${va% *} aim=${va#* }
			d="$out/$name-$P-$seed"
			kill_at "$P" "$victim" "$aim" "$d" "$@" $sched
			# Where it landed: the survivors' newest iteration, the checkpoint before it.
			T=$(ls "$d" | sed -n 's/^survivor-0*\([0-9][0-9]*\)\..*/\1/p' | sort -n | tail -1)
			Cn=$(ls "$d" | sed -n 's/^ckpt-0*\([0-9][0-9]*\)\.manifest$/\1/p' | sort -n | tail -1)
			if [ -z "$T" ]; then
				echo "bench-mpi-kill: no survivor file in $d ($d.err)" >&2
				return 1
			fi
			sb=$(ls -l "$d"/survivor-*.ckpt | awk '{ if ($5 > m) m = $5 } END { print m }')
			wms=$(sed -n 's/.* in \([0-9]*\) ms, \([0-9]*\) ms after the first signal$/\1/p' "$d.err" | sort -n | tail -1)
			pms=$(sed -n 's/.* in \([0-9]*\) ms, \([0-9]*\) ms after the first signal$/\2/p' "$d.err" | sort -n | tail -1)
			if [ "$Cn" -ge "$T" ]; then
				# Killed just after the checkpoint of that iteration: nothing to recover.
				printf '  %2s %4s %6s %6s %5s %-12s %s\n' "$P" "$seed" "$victim" "$T" "$Cn" - \
					"(a full checkpoint of iteration $T was complete: a plain resume)"
				seed=$((seed + 1))
				continue
			fi
			mpi "$P" --resume "$d" --iters "$iters" --no-timing -q \
				--reference "$out/$name-$P.ref.jsonl" > "$d.res.jsonl" 2> "$d.res.err"
			lost=$(jq -r 'select(.type == "failure") | .shards | map(tostring) | join(",")' "$d.res.jsonl")
			mpi "$P" "$@" $sched --no-timing -q --fail-at "$T" --lose-shards "$lost" \
				--reference "$out/$name-$P.ref.jsonl" > "$d.sim.jsonl"
			mpi "$P" "$@" $sched --no-timing -q --fail-at "$T" --lose-shards "$lost" --recovery full \
				--reference "$out/$name-$P.ref.jsonl" > "$d.full.jsonl"
			rb=-
			if [ "$rebuild" = yes ]; then
				mpi "$P" --resume "$d" --recovery rebuild --iters "$iters" --no-timing -q \
					--reference "$out/$name-$P.ref.jsonl" > "$d.rebuild.jsonl" 2> /dev/null
				rb=$(cost "$d.rebuild.jsonl")
			fi
			# The events from the failure on, but for what the dead rank's rows were
			# and the summary (whose counts are of the whole run or the resumed part).
			eq=yes
			for f in res sim; do
				sed -n '/"type":"failure"/,$p' "$d.$f.jsonl" | grep -v '"type":"summary"' |
					jq -c 'del(.delta_norm, .real)' > "$d.$f.tail"
			done
			cmp -s "$d.res.tail" "$d.sim.tail" || eq=no
			printf '  %2s %4s %6s %6s %5s %-12s %6s %9s %8s %11s %9s %9s %8s %8s %6s\n' \
				"$P" "$seed" "$victim" "$T" "$Cn" "$lost" "$(cost "$d.res.jsonl")" \
				"$(cost "$d.sim.jsonl")" "$rb" $((T - Cn)) "$(cost "$d.full.jsonl")" \
				"$sb" "$wms" "$pms" "$eq"
			echo "$(cost "$d.res.jsonl") $(cost "$d.sim.jsonl") $rb $((T - Cn)) $wms $pms" \
				>> "$out/$name-$P.costs"
			seed=$((seed + 1))
		done
		# Medians over the seeds that recovered a failure.
		if [ -s "$out/$name-$P.costs" ]; then
			col() { awk -v k="$1" '{ print $k }' "$out/$name-$P.costs" | median; }
			[ "$rebuild" = yes ] && rb=$(col 3) || rb=-
			printf '  %2s %-37s %6s %9s %8s %11s %28s %8s\n' "$P" "median" \
				"$(col 1)" "$(col 2)" "$rb" "$(col 4)" "$(col 5)" "$(col 6)"
		fi
	done
	echo "  after:  $(uptime)"
	echo
}

bench ridge 150 20 no -- --model ridge --shards 8 --set n=20000 --set d=100 --no-sync
bench mlr 40 10 no -- --model mlr --shards 8 --no-sync
bench mf 40 10 yes -- --model mf --set users=2000 --set items=1500 --shards 6 --no-sync
bench lda 100 20 yes -- --model lda --shards 8 --no-sync
cat <<EOF
real: iteration cost of the resumed run (survivors' rows exact, the dead
rank's shards from the saved view); sim: the same shards lost at the same
iteration inside one job; rebuild: the real failure resumed with --recovery
rebuild (mf solves the lost rows, lda recounts them; scar-train(1));
equal: the events from the failure on are the
same, bit for bit, in both (all but the unknown delta_norm); restart=T-C: the
iterations a traditional restart redoes (killed at T, newest checkpoint C),
full_sim: the simulated rollback's measured cost, which is that by definition;
surv_B: the largest survivor file; write_ms and in_place_ms: its write, and
the time from the first signal to the file in place (mpirun's SIGKILL comes
about 1000 ms after that: odls_base_sigkill_timeout).
EOF
