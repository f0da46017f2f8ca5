#!/usr/bin/env bats
# Crash consistency: scar-train checkpointing into a directory is killed with
# SIGKILL at many moments (mid-iteration and mid-write) and resumed from the
# directory each time. Every resume must work from the newest complete
# checkpoint, no file under a checkpoint's name may ever be torn, and the
# final checkpoint must be bit-identical to an uninterrupted run's.
bats_require_minimum_version 1.5.0
load helper

# The workload: synthetic mlr, a full checkpoint after every iteration.
ITERS=40
# --no-sync: a killed process loses no page cache, so fsync plays no part here
# (it only matters for power loss), and runs are four times faster.
CKPT_ARGS=(--policy full --interval 1 --no-sync --no-timing -q)

train_fresh() { scar-train -m mlr -n "$ITERS" "${CKPT_ARGS[@]}" --checkpoint-dir "$1"; }
train_resume() { scar-train --resume "$1" -n "$ITERS" "${CKPT_ARGS[@]}" --checkpoint-dir "$1"; }
final_name() { printf 'ckpt-%010d.ckpt' "$ITERS"; }

# Every ckpt-*.ckpt of directory $1 must verify (one scar-ckpt for them all).
verify_all() {
	compgen -G "$1/ckpt-*.ckpt" > /dev/null || return 0
	if ! scar-ckpt verify -q "$1"/ckpt-*.ckpt > verify.out 2>&1; then
		echo "a torn or damaged file under a checkpoint's name in $1:" >&2
		cat verify.out >&2
		return 1
	fi
}

# kill_chains N: kill runs with CKPT_ARGS at N+ random moments, resuming
# each time, and check what the test above promises.
kill_chains() {
	local want=$1
	mkdir ref
	local t0 t1 dur_ms
	t0=$(date +%s%N)
	train_fresh ref > /dev/null
	t1=$(date +%s%N)
	[ -f "ref/$(final_name)" ]
	# The run's duration only sets the range of kill moments; nothing is asserted on it.
	dur_ms=$(( (t1 - t0) / 1000000 ))
	[ "$dur_ms" -ge 20 ] || dur_ms=20

	RANDOM=6	# a deterministic list of delays
	local kills=0 rounds=0 chains=0 finished=0 resumes=0 stale=0 d="" st delay
	while [ "$kills" -lt "$want" ]; do
		rounds=$((rounds + 1))
		[ "$rounds" -le 400 ] || { echo "only $kills kills in $rounds rounds" >&2; return 1; }
		if [ -z "$d" ]; then
			chains=$((chains + 1))
			d=chain$chains
			mkdir "$d"
		fi
		if [ -f "$d/$(final_name)" ]; then
			# Killed after the last checkpoint was in place: the chain is complete.
			cmp "ref/$(final_name)" "$d/$(final_name)"
			finished=$((finished + 1))
			d=""
			continue
		fi
		delay=$(( (RANDOM * 32768 + RANDOM) % (dur_ms * 2 / 3) ))
		# The binary itself goes in the background, so that $! is its pid
		# (a function would run in a subshell and the kill would miss it).
		if compgen -G "$d/ckpt-*.ckpt" > /dev/null; then
			resumes=$((resumes + 1))
			scar-train --resume "$d" -n "$ITERS" "${CKPT_ARGS[@]}" \
				--checkpoint-dir "$d" > /dev/null 2> "$d.err" &
		else
			scar-train -m mlr -n "$ITERS" "${CKPT_ARGS[@]}" \
				--checkpoint-dir "$d" > /dev/null 2> "$d.err" &
		fi
		local pid=$!
		sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
		kill -KILL "$pid" 2>/dev/null || true
		st=0
		wait "$pid" || st=$?
		if [ "$st" = 137 ]; then
			kills=$((kills + 1))
		elif [ "$st" = 0 ]; then
			# This chain ran to the end before the kill: it must match the reference.
			cmp "ref/$(final_name)" "$d/$(final_name)"
			finished=$((finished + 1))
			d=""
		else
			echo "round $rounds: scar-train exited $st" >&2
			cat "$d.err" >&2
			return 1
		fi
		[ -z "$d" ] || verify_all "$d"
	done
	# Finish the last chain and resume every earlier one once more (a no-op check).
	if [ -n "$d" ] && [ ! -f "$d/$(final_name)" ]; then
		if compgen -G "$d/ckpt-*.ckpt" > /dev/null; then
			run -0 train_resume "$d"
		else
			run -0 train_fresh "$d"
		fi
	fi
	if [ -n "$d" ]; then
		cmp "ref/$(final_name)" "$d/$(final_name)"
		verify_all "$d"
		finished=$((finished + 1))
	fi
	for f in chain*/.*.tmp.*; do
		[ -e "$f" ] && stale=$((stale + 1))
	done
	echo "# $kills kills survived in $rounds rounds ($resumes resumes, $chains chains, $finished bit-identical); $stale stale temporary files" >&3
	[ "$finished" -ge 1 ]
	# A run removes the temporary files that killed runs left in its directory.
	[ "$stale" -eq 0 ]
}

@test "SIGKILL at 50+ moments: every resume succeeds and the result is bit-identical" {
	# Under valgrind the kill moments would land in its start-up, and a
	# killed valgrind reports nothing; the other tests here run under it.
	[ -z "${SCAR_TEST_WRAPPER:-}" ] || skip "SIGKILL timing: not under SCAR_TEST_WRAPPER (make valgrind-check)"
	kill_chains 50
}

@test "--async=2: SIGKILL at 30+ moments while checkpoints are written in the background" {
	[ -z "${SCAR_TEST_WRAPPER:-}" ] || skip "SIGKILL timing: not under SCAR_TEST_WRAPPER (make valgrind-check)"
	# With fsync on, so that writes stay in flight across several iterations.
	CKPT_ARGS=(--policy full --interval 1 --no-timing -q --async=2)
	kill_chains 30
}

@test "resume skips a damaged newest checkpoint with a warning and takes the previous good one" {
	mkdir ref d
	train_fresh ref > /dev/null
	scar-train -m mlr -n 20 "${CKPT_ARGS[@]}" --checkpoint-dir d > /dev/null
	# Damage the newest checkpoint in its middle (a payload byte).
	local f=d/ckpt-0000000020.ckpt size
	size=$(stat -c %s "$f")
	printf '\xff' | dd of="$f" bs=1 seek=$((size / 2)) conv=notrunc status=none
	run -1 scar-ckpt verify "$f"
	run -0 --separate-stderr train_resume d
	[[ $stderr == *"skipped 1 damaged checkpoint"* ]]
	[[ $stderr == *"ckpt-0000000019.ckpt"* ]]
	cmp "ref/$(final_name)" "d/$(final_name)"
}

@test "resume from a truncated newest checkpoint takes the previous one" {
	mkdir ref d
	train_fresh ref > /dev/null
	scar-train -m mlr -n 10 "${CKPT_ARGS[@]}" --checkpoint-dir d > /dev/null
	truncate -s 100 d/ckpt-0000000010.ckpt
	run -0 --separate-stderr train_resume d
	[[ $stderr == *"skipped 1 damaged checkpoint"* ]]
	cmp "ref/$(final_name)" "d/$(final_name)"
}

@test "a run removes the temporary files a killed run left, and only those" {
	mkdir d
	scar-train -m mlr -n 3 "${CKPT_ARGS[@]}" --checkpoint-dir d > /dev/null
	printf 'half a checkpoint' > d/.ckpt-0000000004.ckpt.tmp.AbCdEf
	touch -d '-1 minute' d/.ckpt-0000000004.ckpt.tmp.AbCdEf
	printf 'not ours' > d/.other.tmp.x
	touch -d '-1 minute' d/.other.tmp.x
	run -0 train_resume d
	[ ! -e d/.ckpt-0000000004.ckpt.tmp.AbCdEf ]
	[ -e d/.other.tmp.x ]
}

@test "resume from a directory without a complete checkpoint fails cleanly" {
	mkdir d
	printf 'not a checkpoint' > d/ckpt-0000000003.ckpt
	: > d/.ckpt-0000000004.ckpt.tmp.abcdef
	run -2 train_resume d
	[[ $output == "scar-train: "*"'d'"* ]]
}
