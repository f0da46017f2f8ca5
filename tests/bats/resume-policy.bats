#!/usr/bin/env bats
# Resuming the directory of a partial checkpoint policy, and the I/O budget
# of partial policies (issue 15, items 4 and 5). A partial checkpoint holds
# only some parameter rows and no worker state, so such a directory resumes
# from its newest full checkpoint, says so on stderr and in the header, and
# goes on with the checkpoint's policy, interval, fraction and seed: the run
# is then bit-identical to one never interrupted. A partial policy's
# fraction must be 1/m with m dividing the interval, so that each interval
# writes exactly the rows a full checkpoint does; others are refused.
bats_require_minimum_version 1.5.0
load helper

field() { grep "\"type\":\"$1\"" | head -1 | sed "s/.*\"$2\":\([^,}]*\).*/\1/"; }
# Records after clock $2 of stream $1 (header and summary have no iter).
after() { jq -c --argjson k "$2" 'select(.iter != null and .iter > $k)' "$1"; }

COMMON=(-q --no-timing --no-sync -m ridge)

@test "resume of a partial-policy directory: newest full checkpoint, said, bit-identical (priority, round-robin, random)" {
	# A failure after the resume point restores rows from the saved view,
	# so the final state depends on the policy's rows, the seed and the view.
	local fail=(--fail-at 45 --lose-count 3)
	for p in priority round-robin random; do
		rm -rf u r
		scar-train "${COMMON[@]}" -n 50 --policy $p --fail-seed 5 --checkpoint-dir u \
			"${fail[@]}" --save u.ckpt > u.jsonl
		scar-train "${COMMON[@]}" -n 40 --policy $p --fail-seed 5 --checkpoint-dir r > /dev/null
		run -0 --separate-stderr scar-train -q --no-timing --no-sync --resume r -n 50 \
			--checkpoint-dir r "${fail[@]}" --save r.ckpt
		printf '%s\n' "$output" > r.jsonl
		[[ $stderr == *"resuming 'r' from its newest full checkpoint 'r/ckpt-0000000000.ckpt', iteration 0"* ]]
		[[ $stderr == *"passed over 20 partial checkpoints of later iterations (2 to 40)"* ]]
		[[ $stderr == *"only some parameter rows and no worker state"* ]]
		[ "$(field header policy < r.jsonl)" = "\"$p\"" ]
		[ "$(field header resume_iter < r.jsonl)" = 0 ]
		[ "$(field header resume_newest_iter < r.jsonl)" = 40 ]
		[ "$(field header resume_skipped_partial < r.jsonl)" = 20 ]
		[ "$(field header resume_skipped_damaged < r.jsonl)" = 0 ]
		grep -q '"type":"recovery"' r.jsonl
		cmp <(after u.jsonl 0) <(after r.jsonl 0)
		cmp u.ckpt r.ckpt
	done
}

@test "resume from a full state saved into a partial-policy directory rebuilds the view and the full-recovery base" {
	# The saved view at 40 is iteration 0's rows overwritten by the
	# partials 2..40, not the saved state; full recovery goes back to 0.
	for rec in partial full; do
		for p in priority random; do
			rm -rf u r
			local fail=(--fail-at 45 --lose-count 3 --recovery $rec)
			scar-train "${COMMON[@]}" -n 50 --policy $p --checkpoint-dir u "${fail[@]}" \
				--save u.ckpt > u.jsonl
			scar-train "${COMMON[@]}" -n 40 --policy $p --checkpoint-dir r --save r/final.ckpt > /dev/null
			run -0 --separate-stderr scar-train -q --no-timing --no-sync --resume r -n 50 \
				--checkpoint-dir r "${fail[@]}" --save r.ckpt
			printf '%s\n' "$output" > r.jsonl
			[ -z "$stderr" ]
			[ "$(field header resume_iter < r.jsonl)" = 40 ]
			[ "$(field header resume_skipped_partial < r.jsonl)" = 0 ]
			cmp <(after u.jsonl 40) <(after r.jsonl 40)
			cmp u.ckpt r.ckpt
		done
	done
}

@test "resume keeps the checkpoint's schedule; the command line overrides each part" {
	scar-train "${COMMON[@]}" -n 8 --policy random --interval 4 --fraction 1/2 --fail-seed 9 \
		--checkpoint-dir d --save s.ckpt > /dev/null
	scar-train -q --no-timing --resume s.ckpt -n 16 > kept.jsonl
	[ "$(jq -c 'select(.type == "header") | [.policy, .interval, .fraction]' kept.jsonl)" = '["random",4,0.5]' ]
	[ "$(grep -c '"kind":"partial"' kept.jsonl)" = 4 ]
	scar-train -q --no-timing --resume s.ckpt -n 16 --policy full --interval 2 > full.jsonl
	[ "$(jq -c 'select(.type == "header") | [.policy, .interval]' full.jsonl)" = '["full",2]' ]
	[ "$(grep -c '"kind":"full"' full.jsonl)" = 4 ]
	scar-train -q --no-timing --resume s.ckpt -n 16 --fraction 1/4 > frac.jsonl
	[ "$(jq -c 'select(.type == "header") | [.policy, .interval, .fraction]' frac.jsonl)" = '["random",4,0.25]' ]
	[ "$(grep -c '"kind":"partial"' frac.jsonl)" = 8 ]
	# The seed of the random rows goes on too: the same rows as without a stop.
	# The saved view is rebuilt from the run's directory (without one it
	# would start as the saved state, all rows saved at 8).
	scar-train "${COMMON[@]}" -n 16 --policy random --interval 4 --fraction 1/2 --fail-seed 9 \
		--checkpoint-dir w --fail-at 14 --save whole.ckpt > whole.jsonl
	scar-train -q --no-timing --no-sync --resume s.ckpt -n 16 --checkpoint-dir d --fail-at 14 \
		--save resumed.ckpt > resumed.jsonl
	grep -q '"type":"recovery"' resumed.jsonl
	cmp <(after whole.jsonl 8) <(after resumed.jsonl 8)
	cmp whole.ckpt resumed.ckpt
	# An override the schedule cannot take is refused as any other.
	run -2 scar-train -q --resume s.ckpt -n 16 --interval 3
	[[ $output == *"nearest that can: 1/3 and 1"* ]]
}

@test "resume of a full-policy directory passes over nothing and says nothing" {
	scar-train "${COMMON[@]}" -n 12 --policy full --interval 4 --checkpoint-dir d > /dev/null
	run -0 --separate-stderr scar-train -q --no-timing --resume d -n 16
	[ -z "$stderr" ]
	[ "$(printf '%s\n' "$output" | field header resume_iter)" = 12 ]
	[ "$(printf '%s\n' "$output" | field header resume_skipped_partial)" = 0 ]
	[ "$(printf '%s\n' "$output" | field header policy)" = '"full"' ]
}

@test "--fraction sweep: accepted fractions write exactly full's rows per interval, others exit 2 naming the nearest" {
	# ridge d=50 and d=3 (fewer rows than most denominators), mf with two tensors.
	local models=("-m ridge" "-m ridge --set d=3 --shards 1" "-m mf --set users=101 --set items=37 --shards 5")
	local C fr p full got m
	for m in "${models[@]}"; do
		for C in 8 12; do
			full=$(scar-train -q --no-timing $m -n $((3 * C)) --policy full --interval $C |
				field summary checkpoint_rows)
			for fr in 1 1/2 1/3 1/4 1/6 1/8 1/12 0.125 0.3 0.05 0.75 3/8 2/3 1/5; do
				for p in round-robin random priority; do
					run scar-train -q --no-timing $m -n $((3 * C)) --policy $p --interval $C \
						--fraction $fr
					case "$C:$fr" in
					8:1|8:1/2|8:1/4|8:1/8|8:0.125|12:1|12:1/2|12:1/3|12:1/4|12:1/6|12:1/12)
						[ "$status" -eq 0 ] || { echo "$m $p C=$C r=$fr: exit $status: $output"; return 1; }
						got=$(printf '%s\n' "$output" | field summary checkpoint_rows)
						[ "$got" = "$full" ] || { echo "$m $p C=$C r=$fr: $got rows, full $full"; return 1; }
						;;
					*)
						[ "$status" -eq 2 ] || { echo "$m $p C=$C r=$fr: exit $status"; return 1; }
						[[ $output == "scar-train: checkpoint fraction "*"nearest that can: "* ]]
						;;
					esac
				done
			done
		done
	done
	# The nearest on either side, or the one there is.
	run -2 scar-train -q -m ridge --policy priority --fraction 0.3
	[[ $output == *"fraction 0.3 "*"every 8 iterations"*"nearest that can: 1/4 and 1/2" ]]
	run -2 scar-train -q -m ridge --policy priority --fraction 0.05
	[[ $output == *"nearest that can: 1/8" ]]
	run -2 scar-train -q -m ridge --policy round-robin --interval 12 --fraction 0.2
	[[ $output == *"nearest that can: 1/6 and 1/4" ]]
	# The fraction plays no part in full and none: not checked there.
	run -0 scar-train -q -m ridge -n 2 --policy full --fraction 0.3
	run -0 scar-train -q -m ridge -n 2 --fraction 0.3
}

@test "a tensor of fewer rows than the denominator writes each row once per interval" {
	# d=3 rows, 1/8: three of every eight checkpoints write one row, round-robin in turn.
	scar-train -q --no-timing -m ridge --set d=3 --shards 1 -n 16 --policy round-robin \
		--fraction 1/8 > rr.jsonl
	[ "$(jq -r 'select(.type == "checkpoint" and .kind == "partial") | .rows' rr.jsonl | tr -d '\n')" = 0100101001001010 ]
}

@test "mpi: resume of a partial-policy manifest directory, on another P, equals one process" {
	command -v mpirun > /dev/null 2>&1 || skip "mpirun not found"
	mpi() {
		local np=$1
		shift
		OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 \
			mpirun --oversubscribe -np "$np" scar-train "$@"
	}
	mpi 2 -m ridge --iters 1 --no-timing -q | grep -q '"ranks":2' || skip "scar-train is not the MPI variant"
	local opts=(-q --no-timing --no-sync -m mf --set users=60 --set items=45 --shards 5)
	local fail=(--fail-at 14 --lose-count 2)
	# The one-process run, uninterrupted.
	scar-train "${opts[@]}" -n 16 --policy priority --fraction 1/2 --interval 4 --checkpoint-dir u \
		"${fail[@]}" --save u.ckpt > /dev/null
	# Two ranks to 10 with a final state in the directory, then three ranks from it.
	mpi 2 "${opts[@]}" -n 10 --policy priority --fraction 1/2 --interval 4 --checkpoint-dir pa \
		--save pa/final.ckpt > /dev/null
	[ -f pa/ckpt-0000000010.manifest ]
	mpi 3 -q --no-timing --no-sync --resume pa -n 16 --checkpoint-dir pa "${fail[@]}" --save a.ckpt > a.jsonl
	[ "$(field header resume_iter < a.jsonl)" = 10 ]
	[ "$(field header policy < a.jsonl)" = '"priority"' ]
	grep -q '"type":"recovery"' a.jsonl
	cmp u.ckpt a.ckpt
	# Without the final state: back to iteration 0 (the resumed run wrote
	# partials up to 16), said once, the same end.
	rm pa/final.ckpt
	run -0 --separate-stderr mpi 3 -q --no-timing --no-sync --resume pa -n 16 --checkpoint-dir pa \
		"${fail[@]}" --save b.ckpt
	printf '%s\n' "$output" > b.jsonl
	[ "$(field header resume_skipped_partial < b.jsonl)" = 8 ]
	[ "$(grep -c 'passed over 8 partial checkpoints of later iterations (2 to 16)' <<< "$stderr")" = 1 ]
	cmp u.ckpt b.ckpt
}
