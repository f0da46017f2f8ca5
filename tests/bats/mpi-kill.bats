#!/usr/bin/env bats
# Real partial failures on Open MPI (scar-mpi(7), Real failures): one rank
# of a running job is killed with SIGKILL; the others write survivor files
# of the last completed iteration (valid partial checkpoints, their rows
# bit-identical to an uninterrupted run's at that iteration), and
# --resume DIR takes them: only the dead rank's shards come from the saved
# view, and the result is bit-identical to the simulated failure of the
# same shards at the same iteration (--fail-at, --lose-shards). Every model
# on 2 and 4 ranks; mpirun itself killed with SIGKILL.
bats_require_minimum_version 1.5.0
load helper
load mpi-helper
load setmeta

setup() {
	[ -z "${SCAR_MPI_SKIP:-}" ] || skip "$SCAR_MPI_SKIP"
	# mpirun's window (1 s) is for a process at full speed, not under a checker.
	[ -z "${SCAR_TEST_WRAPPER:-}" ] || skip "signal timing does not hold under $SCAR_TEST_WRAPPER"
	cd "$BATS_TEST_TMPDIR" || return 1
}

teardown() {
	if [ -f "$BATS_TEST_TMPDIR/mpirun.pid" ]; then
		kill "$(cat "$BATS_TEST_TMPDIR/mpirun.pid")" 2>/dev/null || true
	fi
}

# The iteration of ck's newest manifest.
newest_manifest() {
	ls ck/ckpt-*.manifest | sort | tail -1 | sed 's/.*ckpt-0*\([0-9][0-9]*\)\.manifest/\1/'
}

# kill_rank P VICTIM INTERVAL TRAIN_ARGS...: a run of TRAIN_ARGS on P ranks
# with full checkpoints every INTERVAL into ck; once the second is complete
# and the stream has shown two more iterations (so that the survivors stand
# after it), rank VICTIM is killed. Checks the survivor files: one per
# surviving rank, each bit-identical to an uninterrupted run at its
# iteration. Sets it (the survivors' newest iteration) and behind (the ranks
# one iteration behind it).
kill_rank() {
	local P=$1 victim=$2 I=$3 mpid pid st f k n rank fit
	shift 3
	mkdir ck
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe -np "$P" \
		"$TRAIN" "$@" --iters 100000000 --policy full --interval "$I" --checkpoint-dir ck \
		> run.jsonl 2> run.err 3>&- &
	mpid=$!
	echo "$mpid" > "$BATS_TEST_TMPDIR/mpirun.pid"
	f=$(printf 'ck/ckpt-%010d.manifest' $((2 * I)))
	for _ in $(seq 3000); do
		[ -f "$f" ] && grep -q "\"iter\":$((2 * I + 2))," run.jsonl && break
		sleep 0.02
	done
	[ -f "$f" ]
	pid=
	for p in $(pgrep -P "$mpid"); do
		if tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$victim"; then
			pid=$p
		fi
	done
	[ -n "$pid" ]
	kill -9 "$pid"
	st=0
	wait "$mpid" || st=$?
	rm "$BATS_TEST_TMPDIR/mpirun.pid"
	[ "$st" -ne 0 ]

	# One survivor file per surviving rank, no temporary left.
	n=$(ls ck/survivor-*.rank-*.ckpt | wc -l)
	[ "$n" -eq $((P - 1)) ]
	[ ! -e "ck/survivor-"*".rank-$victim.ckpt" ]
	[ "$(ls -A ck | grep -c '^\.survivor')" = 0 ]
	grep -q "wrote 'ck/survivor-" run.err
	# Under a sanitizer build (make check SANITIZE=..., make tsan-check), no report.
	[ "$(grep -c Sanitizer run.err)" = 0 ]
	# At most one iteration apart: a rank the dead one had not yet sent its
	# last rows to is stuck one iteration behind the others.
	its=$(ls ck/survivor-*.ckpt | sed 's/.*survivor-0*\([0-9][0-9]*\)\..*/\1/' | sort -nu)
	it=$(echo "$its" | tail -1)
	[ $((it - $(echo "$its" | head -1))) -le 1 ]
	behind=
	for f in ck/survivor-*.ckpt; do
		case $f in ck/survivor-$(printf %010d "$it").*) ;; *) rank=${f##*.rank-}; behind="$behind ${rank%.ckpt}" ;; esac
	done

	# Each is a valid partial checkpoint of its rows, bit-identical to the
	# uninterrupted run's at its iteration.
	for f in ck/survivor-*.ckpt; do
		fit=$(echo "$f" | sed 's/.*survivor-0*\([0-9][0-9]*\)\..*/\1/')
		[ -f "ref$fit.ckpt" ] || mpi "$P" "$@" --iters "$fit" --save "ref$fit.ckpt" > /dev/null
		run -0 scar-ckpt verify "$f"
		run -0 scar-ckpt info "$f"
		[[ "$output" == *"kind:       partial"* ]]
		rank=${f##*.rank-}
		rank=${rank%.ckpt}
		[ "$(scar-ckpt info --json "$f" | jq -c '.extra.survivor | [.rank, .ranks, .iteration]')" = "[$rank,$P,$fit]" ]
		run -0 scar-diff -q "$f" "ref$fit.ckpt"
		# The worker state in the extra (a rewind record, auto's step norms) too.
		[ "$(scar-ckpt info --json "$f" | jq -c '.extra | del(.survivor, .schedule)')" = \
		  "$(scar-ckpt info --json "ref$fit.ckpt" | jq -c '.extra | del(.schedule)')" ]
	done
}

# kill_and_resume P VICTIM INTERVAL TRAIN_ARGS...: kill_rank, then the
# partial resume, checked against the simulated failure of the same shards
# at the same iteration, and against the plain restart.
kill_and_resume() {
	local P=$1 victim=$2 I=$3 k n lost
	kill_rank "$@"
	shift 3
	k=$((it + 6))
	# Killed after a full checkpoint of the survivors' iteration or the next
	# (written within an iteration, before the survivors' copy): that resumes.
	if [ "$(newest_manifest)" -ge "$it" ]; then
		mpi "$P" --resume ck --iters "$k" --no-timing > res.jsonl 2> res.err
		grep -q "newest complete checkpoint .*not newer than the checkpoint" res.err
		[ "$(grep -c '"type":"failure"' res.jsonl)" = 0 ]
		return 0
	fi
	# Resume: the lost shards are the dead rank's (and those of a rank one
	# behind), recovered as a failure at the survivors' iteration.
	mpi "$P" --resume ck --iters "$k" --no-timing --save res.ckpt > res.jsonl 2> res.err
	n=$(ls ck/survivor-$(printf %010d "$it").rank-*.ckpt | wc -l)
	grep -q "from $n survivor file.* of iteration $it (a $P-rank run)" res.err
	[ "$(grep '"type":"failure"' res.jsonl | jq -c '[.iter, .ranks]')" = \
	  "[$it,$(printf '%s\n' $victim $behind | sort -n | jq -sc .)]" ]
	[ "$(grep '"type":"recovery"' res.jsonl | jq -c '[.real, .delta_norm]')" = "[true,null]" ]
	[ "$(grep '"type":"failure"' res.jsonl | jq -c .real)" = "true" ]
	lost=$(grep '"type":"failure"' res.jsonl | jq -r '.shards | map(tostring) | join(",")')
	mpi "$P" "$@" --iters "$k" --policy full --interval "$I" --fail-at "$it" --lose-shards "$lost" \
		--no-timing --save sim.ckpt > sim.jsonl
	run -0 scar-diff -q res.ckpt sim.ckpt
	# The events from the failure on are the simulated failure's, to the bit, but for the
	# change the lost rows made (unknown: they died with the rank).
	sed -n '/"type":"failure"/,$p' sim.jsonl | grep -v '"type":"summary"' | jq -c 'del(.elapsed, .seconds, .bytes, .checkpoint_bytes, .delta_norm, .real)' > sim.tail
	sed -n '/"type":"failure"/,$p' res.jsonl | grep -v '"type":"summary"' | jq -c 'del(.elapsed, .seconds, .bytes, .checkpoint_bytes, .delta_norm, .real)' > res.tail
	cmp sim.tail res.tail

	# Without the survivor files it is the checkpoint's restart, and the result differs.
	rm ck/survivor-*.ckpt
	mpi "$P" --resume ck --iters "$k" --no-timing --save old.ckpt > old.jsonl 2> old.err
	[ "$(grep -c '"type":"failure"' old.jsonl)" = 0 ]
	run -1 scar-diff -q old.ckpt sim.ckpt
}

RIDGE="--model ridge --shards 8 --set n=20000 --set d=100 --no-timing -q --no-sync"
MF="--model mf --set users=2000 --set items=1500 --shards 6 --no-timing -q --no-sync"

@test "mpi-kill: ridge, rank 1 of 2 killed: survivor file, partial resume = simulated failure" {
	kill_and_resume 2 1 10 $RIDGE
	# scar-bound check takes no point from a real failure, whose change is unknown.
	if grep -q '"real":true' res.jsonl; then
		mpi 2 $RIDGE --iters "$(jq -r 'select(.type == "summary") | .iters' res.jsonl)" > plain.jsonl
		run -2 scar-bound check plain.jsonl res.jsonl
		[[ "$output" == *"recovery of a real failure: its delta_norm is unknown (null)"* ]]
	fi
}

@test "mpi-kill: mf, rank 1 of 2 killed: survivor file, partial resume = simulated failure" {
	kill_and_resume 2 1 5 $MF
}

@test "mpi-kill: ridge, rank 0 of 4 killed (the events' rank): the state comes from the others" {
	kill_and_resume 4 0 10 $RIDGE
}

@test "mpi-kill: mf, rank 2 of 4 killed" {
	kill_and_resume 4 2 5 $MF
}

# recovered_as_simulated P I STRATEGY TRAIN_ARGS...: after kill_rank, the
# resume with --recovery STRATEGY ends in the state of the simulated failure
# of the same shards at the same iteration recovered the same way, and its
# events from the failure on are the simulated ones.
recovered_as_simulated() {
	local P=$1 I=$2 s=$3 lost
	shift 3
	mpi "$P" --resume ck --recovery "$s" --iters $((it + 4)) --no-timing -q --save "res-$s.ckpt" \
		> "res-$s.jsonl" 2> "res-$s.err"
	[ "$(grep '"type":"recovery"' "res-$s.jsonl" | jq -c '[.real, .delta_norm]')" = "[true,null]" ]
	lost=$(grep '"type":"failure"' "res-$s.jsonl" | jq -r '.shards | map(tostring) | join(",")')
	[ -n "$lost" ]
	mpi "$P" "$@" --iters $((it + 4)) --policy full --interval "$I" --fail-at "$it" \
		--lose-shards "$lost" --recovery "$s" --no-timing -q --save "sim-$s.ckpt" > "sim-$s.jsonl"
	run -0 scar-diff -q "res-$s.ckpt" "sim-$s.ckpt"
	sed -n '/"type":"failure"/,$p' "sim-$s.jsonl" | grep -v '"type":"summary"' |
		jq -c 'del(.delta_norm, .real, .estimates)' > "sim-$s.tail"
	sed -n '/"type":"failure"/,$p' "res-$s.jsonl" | grep -v '"type":"summary"' |
		jq -c 'del(.delta_norm, .real, .estimates)' > "res-$s.tail"
	cmp "sim-$s.tail" "res-$s.tail"
}

@test "mpi-kill: a real failure is recovered by the resume's --recovery as the simulated one (mf: auto, rebuild, full, none)" {
	# auto's step norms live in the state: the survivors' are what it chooses by.
	kill_rank 2 1 5 $MF --recovery auto
	[ "$(newest_manifest)" -lt "$it" ] || skip "killed after the checkpoint of iteration $it: nothing to recover"
	[ "$(scar-ckpt info --json ck/survivor-*.rank-0.ckpt | jq '.extra.auto_steps | length')" -gt 0 ]
	recovered_as_simulated 2 5 auto $MF --recovery auto
	[ "$(grep '"type":"recovery"' res-auto.jsonl | jq -c '.auto.steps_fitted > 0')" = true ]
	for s in rebuild full none; do
		recovered_as_simulated 2 5 "$s" $MF
	done
	# full is the traditional restart: the checkpoint's state, redone from there.
	[ "$(grep '"type":"recovery"' res-full.jsonl | jq -c .resume_state_iter)" = "$(newest_manifest)" ]
}

@test "mpi-kill: mlr's rewind after a real failure on 4 ranks; an earlier failure's rewind record survives" {
	local R="--model mlr --no-timing -q --no-sync --recovery rewind"
	# A simulated failure of shard 2 (rank 2's) first: its rows lag from then on.
	kill_rank 4 1 10 $R --fail-at 3 --lose-shards 2
	[ "$(newest_manifest)" -lt "$it" ] || skip "killed after the checkpoint of iteration $it: nothing to recover"
	[ "$(scar-ckpt info --json ck/survivor-*.rank-0.ckpt | jq '[.extra.rewind.weights[] | select(.[0] % 8 == 2)] | length')" -gt 0 ]
	mpi 4 --resume ck --iters $((it + 4)) --no-timing -q --save res.ckpt > res.jsonl
	[ "$(grep '"type":"recovery"' res.jsonl | jq -c '[.strategy, .rows_rewound > 0]')" = '["rewind",true]' ]
	# Shard 2's lags are the uninterrupted run's; the lost shards' are new.
	mpi 4 $R --fail-at 3 --lose-shards 2 --iters $((it + 4)) --save plain.ckpt > /dev/null
	lags() { scar-ckpt info --json "$1" | jq -c '[.extra.rewind.weights[] | select(.[0] % 8 == 2)]'; }
	[ "$(lags res.ckpt)" = "$(lags plain.ckpt)" ]
	# Without the earlier failure, a resume is the simulated failure, as for partial.
	rm -r ck ref*.ckpt
	kill_rank 4 1 10 $R
	[ "$(newest_manifest)" -lt "$it" ] || skip "killed after the checkpoint of iteration $it: nothing to recover"
	recovered_as_simulated 4 10 rewind $R
}

@test "mpi-kill: survivor files older than the newest checkpoint are passed over, and said so" {
	mkdir ck
	mpi 2 $RIDGE --iters 20 --policy full --interval 10 --checkpoint-dir ck > a.jsonl
	# As a survivor of an earlier run at 15 would have left, with a checkpoint at 20 after it.
	mpi 2 $RIDGE --iters 15 --save s15.ckpt > /dev/null
	cp s15.ckpt ck/survivor-0000000015.rank-0.ckpt
	mpi 2 --resume ck --iters 25 --no-timing -q > r.jsonl 2> r.err
	grep -q "newest complete checkpoint .*not newer than the checkpoint" r.err
	[ "$(grep -c '"type":"failure"' r.jsonl)" = 0 ]
	# A file named as a survivor's that is not one is refused, and the checkpoint used.
	cp s15.ckpt ck/survivor-0000000024.rank-0.ckpt
	mpi 2 --resume ck --iters 25 --no-timing -q > r2.jsonl 2> r2.err
	grep -q "survivor file .*survivor-0000000024.rank-0.ckpt' is of another iteration than its name's" r2.err
	[ "$(jq -r 'select(.type == "header") | .resume_iter' r2.jsonl)" = "20" ]
	# A run writing in the directory supersedes them, and a killed writer's temporary.
	: > ck/.survivor-0000000022.rank-1.ckpt.tmp.AbC123
	touch -d '1 hour ago' ck/.survivor-0000000022.rank-1.ckpt.tmp.AbC123
	mpi 2 --resume ck --iters 30 --checkpoint-dir ck --no-timing -q > r3.jsonl
	[ "$(ls -A ck | grep -c survivor)" = 0 ]
	[ -f ck/ckpt-0000000030.manifest ]
}

@test "mpi-kill: a survivor file with worker state a resume cannot take is passed over, and said so" {
	[ -f "$SCAR_ROOT/lib/libscar.a" ] || skip "lib/libscar.a not built (run make)"
	build_setmeta .
	kill_rank 2 1 20 $RIDGE
	[ "$(newest_manifest)" -lt "$it" ] || skip "killed after the checkpoint of iteration $it: nothing to recover"
	f=$(ls ck/survivor-*.rank-0.ckpt)
	cp "$f" good.ckpt
	for patch in '{"clock":-5}' '{"clock":"7"}' '{"clock":1}' \
		'{"survivor":{"rank":0,"ranks":2,"shards":[0,2,4,6],"recovery":"bogus"}}' \
		'{"survivor":{"rank":0,"ranks":2,"shards":[0,2,4,6],"recovery":3}}' \
		'{"survivor":{"rank":0,"ranks":2,"shards":[0,2,4,6],"recovery":"rebuild"}}' \
		'{"survivor":{"rank":0,"ranks":2,"shards":[0,1,2,3,4,5,6,7],"recovery":"partial"}}' \
		'{"survivor":{"rank":0,"ranks":2,"shards":[0,2,4],"recovery":"partial"}}' \
		'{"survivor":{"rank":1,"ranks":2,"shards":[1,3,5,7],"recovery":"partial"}}' \
		'{"survivor":{"rank":0,"ranks":4,"shards":[0,4],"recovery":"partial"}}' \
		'{"survivor":{"rank":2,"ranks":2,"shards":[],"recovery":"partial"}}' \
		'{"rewind":{"w":[[0,1]]}}' '{"rewind":{"nosuch":[[0,1]]}}' '{"rewind":[1]}' \
		'{"rewind":{"w":[[1,2],[0,1]]}}' '{"rewind":{"w":[[0,1000000]]}}'; do
		./setmeta good.ckpt "$f" '{}' "$patch"
		mpi 2 --resume ck --iters $((it + 2)) --no-timing -q > r.jsonl 2> r.err
		grep -q "resuming 'ck' from its newest complete checkpoint .*: survivor file '$f' \(has\|names\|claims\|holds\)" r.err ||
			{ echo "$patch:"; cat r.err; false; }
		[ "$(jq -r 'select(.type == "header") | .resume_iter' r.jsonl)" = "$(newest_manifest)" ]
		[ "$(grep -c '"type":"failure"' r.jsonl)" = 0 ]
	done
	# A file of the dead rank's name with the survivor's contents (a rank
	# twice), and a FIFO of that name (which would block a reader's open).
	cp good.ckpt "$f"
	g=${f%.rank-0.ckpt}.rank-1.ckpt
	cp good.ckpt "$g"
	mpi 2 --resume ck --iters $((it + 2)) --no-timing -q > r.jsonl 2> r.err
	grep -q "survivor file '$g' has a rank that is not its name's" r.err
	rm "$g"
	mkfifo "$g"
	timeout 60 "$TRAIN" --resume ck --iters $((it + 2)) --no-timing -q > r.jsonl 2> r.err
	grep -q "survivor file '$g' is a FIFO, not a regular file" r.err
	rm "$g"
	# The file as written resumes.
	cp good.ckpt "$f"
	mpi 2 --resume ck --iters $((it + 2)) --no-timing -q > r.jsonl 2> r.err
	grep -q "from 1 survivor file of iteration $it" r.err
}

@test "mpi-kill: a resume on 3 ranks writing into the directory it resumes: every rank takes the survivors" {
	# Rank 0 takes the directory and removes the old survivor files; the
	# others must have read them first (once they had not: they resumed the
	# checkpoint, rank 0 the survivors, and the job hung).
	kill_rank 2 1 20 $RIDGE
	[ "$(newest_manifest)" -lt "$it" ] || skip "killed after the checkpoint of iteration $it: nothing to recover"
	cp -a ck ck.orig
	for _ in 1 2 3; do
		rm -rf ck
		cp -a ck.orig ck
		timeout 120 env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe \
			-np 3 "$TRAIN" --resume ck --checkpoint-dir ck --iters $((it + 4)) --no-timing -q \
			> r.jsonl 2> r.err
		[ "$(grep -c '"type":"failure"' r.jsonl)" = 1 ]
		[ "$(ls ck | grep -c survivor)" = 0 ]
	done
}

@test "mpi-kill: mlr, rank 3 of 4 killed" {
	kill_and_resume 4 3 5 --model mlr --no-timing -q --no-sync
}

@test "mpi-kill: mlr, rank 0 of 2 killed" {
	kill_and_resume 2 0 5 --model mlr --no-timing -q --no-sync
}

@test "mpi-kill: lda, rank 1 of 2 killed" {
	kill_and_resume 2 1 4 --model lda --no-timing -q --no-sync
}

@test "mpi-kill: lda, rank 2 of 4 killed" {
	kill_and_resume 4 2 4 --model lda --no-timing -q --no-sync
}

@test "mpi-kill: mpirun killed with SIGKILL: every rank leaves its rows (PR_SET_PDEATHSIG)" {
	local mpid kids it n
	mkdir ck
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe -np 2 "$TRAIN" \
		$RIDGE --iters 100000000 --policy full --interval 10 --checkpoint-dir ck \
		> run.jsonl 2> run.err 3>&- &
	mpid=$!
	echo "$mpid" > "$BATS_TEST_TMPDIR/mpirun.pid"
	for _ in $(seq 600); do
		[ -f ck/ckpt-0000000020.manifest ] && break
		sleep 0.1
	done
	[ -f ck/ckpt-0000000020.manifest ]
	kids=$(pgrep -P "$mpid")
	kill -9 "$mpid"
	wait "$mpid" || true
	rm "$BATS_TEST_TMPDIR/mpirun.pid"
	# The ranks end by themselves (Open MPI exits them about 1 s later).
	for _ in $(seq 100); do
		n=0
		for k in $kids; do
			[ "$(ps -o stat= -p "$k" 2>/dev/null | cut -c1)" = "" ] ||
				[ "$(ps -o stat= -p "$k" | cut -c1)" = Z ] || n=$((n + 1))
		done
		[ "$n" -eq 0 ] && break
		sleep 0.1
	done
	[ "$n" -eq 0 ]
	[ "$(ls ck/survivor-*.rank-*.ckpt | wc -l)" -eq 2 ]
	for f in ck/survivor-*.ckpt; do
		it=$(echo "$f" | sed 's/.*survivor-0*\([0-9][0-9]*\)\..*/\1/')
		run -0 scar-ckpt verify "$f"
		mpi 2 $RIDGE --iters "$it" --save "ref$it.ckpt" > /dev/null
		run -0 scar-diff -q "$f" "ref$it.ckpt"
	done
	it=$(ls ck/survivor-*.ckpt | sed 's/.*survivor-0*\([0-9][0-9]*\)\..*/\1/' | sort -n | tail -1)
	mpi 2 --resume ck --iters $((it + 5)) --no-timing --save res.ckpt > res.jsonl 2> res.err
	if [ "$(newest_manifest)" -ge "$it" ]; then
		# Killed just after a full checkpoint of that iteration or the next: that resumes.
		grep -q "newest complete checkpoint .*not newer than the checkpoint" res.err
		[ "$(grep -c '"type":"failure"' res.jsonl)" = 0 ]
	elif [ "$(ls ck/survivor-*.ckpt | sed 's/.*survivor-\([0-9]*\)\..*/\1/' | sort -u | wc -l)" -eq 1 ]; then
		# Both at one iteration: a whole state, no failure, the uninterrupted run's.
		grep -q "from 2 survivor files of iteration $it" res.err
		[ "$(grep -c '"type":"failure"' res.jsonl)" = 0 ]
		mpi 2 $RIDGE --iters $((it + 5)) --save ref.ckpt > /dev/null
		run -0 scar-diff -q res.ckpt ref.ckpt
	else
		# One iteration apart (one rank was between iterations): the older's shards are lost.
		grep -q "from 1 survivor file of iteration $it" res.err
		[ "$(grep '"type":"failure"' res.jsonl | jq -c .real)" = "true" ]
	fi
}
