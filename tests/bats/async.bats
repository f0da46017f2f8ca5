#!/usr/bin/env bats
# scar-train --async: checkpoints snapshotted and written in the background
# (scar-train(1), "CHECKPOINTS IN THE BACKGROUND"). What may differ from the
# synchronous mode is exactly what the page says: where a checkpoint record
# stands in the stream, and, when a failure falls while a checkpoint is in
# flight, the recovery (from the durable checkpoints only).
bats_require_minimum_version 1.5.0
load helper

SHIM="$SCAR_ROOT/tests/fault-shim.so"
PY=/usr/bin/python3

# same_run DIR_A EVENTS_A DIR_B EVENTS_B: the two runs wrote the same files
# byte for byte and the same events, checkpoint records compared apart.
same_run() {
	local f
	diff <(ls "$1") <(ls "$3")
	for f in "$1"/ckpt-*.ckpt; do cmp "$f" "$3/${f##*/}"; done
	diff <(grep -v '"type":"checkpoint"' "$2") <(grep -v '"type":"checkpoint"' "$4")
	diff <(grep '"type":"checkpoint"' "$2") <(grep '"type":"checkpoint"' "$4")
}

@test "--async without failures: the same files and events as the synchronous mode, every policy and model" {
	local m p n
	for m in mlr ridge mf lda; do
		for p in full round-robin random priority; do
			n=12
			rm -rf s a
			scar-train -q --no-timing -m "$m" -n "$n" --policy "$p" --interval 4 \
				--checkpoint-dir s > s.jsonl
			# one snapshot reused at every checkpoint, and two in turn
			for k in 1 2; do
				rm -rf a
				scar-train -q --no-timing -m "$m" -n "$n" --policy "$p" --interval 4 \
					--checkpoint-dir a --async="$k" > a.jsonl
				same_run s s.jsonl a a.jsonl || { echo "$m $p --async=$k differs" >&2; return 1; }
			done
		done
	done
}

@test "--async with a failure outside any write: the same costs, files and events as the synchronous mode" {
	local m tries
	# Checkpoints at 8 and 16 (interval 32, 1/4 of the rows every 8), the
	# failure five iterations after the first.
	local args=(-q --no-timing --no-sync -n 20 --policy priority --interval 32
		    --fail-at 13 --lose-fraction 1/4 --cost)
	for m in mlr mf lda; do
		rm -rf s
		scar-train "${args[@]}" -m "$m" --checkpoint-dir s > s.jsonl
		# Whether the write of iteration 8 is still going at 13 depends on the
		# machine; the run is taken when it was not (the failure record says).
		for tries in 1 2 3 4 5; do
			rm -rf a
			scar-train "${args[@]}" -m "$m" --checkpoint-dir a --async > a.jsonl
			grep -q '"ckpt_in_flight"' a.jsonl || break
		done
		grep -q '"type":"cost"' a.jsonl
		! grep -q '"ckpt_in_flight"' a.jsonl || skip "the write was in flight in 5 runs (a very slow disk)"
		same_run s s.jsonl a a.jsonl || { echo "$m differs" >&2; return 1; }
	done
}

@test "--async: a failure while a checkpoint is in flight recovers from the durable ones, and says so" {
	# A slow disk (every fsync of a checkpoint 400 ms) keeps iteration 12's
	# checkpoint in flight at the failure after iteration 13.
	run -0 env SCAR_FAULT='fsync:delay400:*' SCAR_FAULT_PATH=ckpt- LD_PRELOAD="$SHIM" \
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
		scar-train -q --no-timing -m ridge -n 13 --policy priority --interval 4 --fraction 1/2 \
		--fail-at 13 --lose-shards 0,1 --checkpoint-dir d --async --save final.ckpt
	[[ $output == *'"type":"failure","iter":13,'*'"ckpt_in_flight":1}'* ]]
	# Its checkpoint record comes once it is durable, after the recovery.
	local order
	order=$(printf '%s\n' "$output" | jq -r 'select(.type == "checkpoint" or .type == "recovery") | .type + " " + (.iter | tostring)' | tail -2 | tr '\n' ' ')
	[ "$order" = "recovery 13 checkpoint 12 " ]
	# The lost rows are the durable view's (checkpoints 0 to 10), not 12's.
	scar-ckpt apply -o v10.ckpt d/ckpt-00000000{00,02,04,06,08,10}.ckpt
	scar-ckpt apply -o v12.ckpt d/ckpt-00000000{00,02,04,06,08,10,12}.ckpt
	scar-inject --lose-shards 0,1 --reset from=v10.ckpt final.ckpt r10.ckpt 2> /dev/null
	scar-inject --lose-shards 0,1 --reset from=v12.ckpt final.ckpt r12.ckpt 2> /dev/null
	run -0 scar-diff -q final.ckpt r10.ckpt
	run -1 scar-diff -q final.ckpt r12.ckpt
	# Every checkpoint was written all the same, and is intact.
	scar-ckpt verify -q d/ckpt-*.ckpt
	[ -f d/ckpt-0000000012.ckpt ]
}

@test "--async=3: a failure with checkpoints in flight recovers from the durable ones, every policy" {
	# A slow disk (every checkpoint's fsync 300 ms) keeps checkpoints in
	# flight at the failure after 13 (two, as the writer goes; the failure
	# first waits until the writer has chosen the rows of 12): the rows
	# chosen on the writer thread come out of the saved view, however many.
	local p n last step told=0
	for p in full round-robin random priority; do
		step=2
		[ "$p" = full ] && step=4
		rm -rf d ./*.ckpt
		run -0 env SCAR_FAULT='fsync:delay300:*' SCAR_FAULT_PATH=ckpt- LD_PRELOAD="$SHIM" \
			ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
			scar-train -q --no-timing -m mf -n 13 --policy "$p" --interval 4 --fraction 1/2 \
			--fail-at 13 --lose-shards 0,1 --checkpoint-dir d --async=3 --save final.ckpt
		n=$(printf '%s\n' "$output" | jq -r 'select(.type == "failure") | .ckpt_in_flight // 0')
		[ "$n" -ge 1 ] && [ "$n" -le 3 ]
		# every checkpoint's record comes, in order, once durable
		[ "$(printf '%s\n' "$output" | jq -r 'select(.type == "checkpoint") | .iter' | tr '\n' ' ')" = \
		  "$(seq -s ' ' 0 "$step" 12) " ]
		last=$((12 - step * n))
		scar-ckpt apply -o durable.ckpt $(for k in $(seq 0 "$step" "$last"); do printf 'd/ckpt-%010d.ckpt ' "$k"; done)
		scar-ckpt apply -o all.ckpt d
		scar-inject --lose-shards 0,1 --reset from=durable.ckpt final.ckpt r.ckpt 2> /dev/null
		scar-inject --lose-shards 0,1 --reset from=all.ckpt final.ckpt r12.ckpt 2> /dev/null
		run -0 scar-diff -q final.ckpt r.ckpt
		# The in-flight rows were other values (unless the ones in flight
		# held no changed row of shards 0 and 1, as a partial policy's may).
		if ! scar-diff -q r.ckpt r12.ckpt > /dev/null; then
			run -1 scar-diff -q final.ckpt r12.ckpt
			told=$((told + 1))
		fi
		scar-ckpt verify -q d/ckpt-*.ckpt
	done
	# full's checkpoint 12 in flight always holds them.
	[ "$told" -ge 1 ]
}

@test "--async: the summary and checkpoint records carry the stall and the background time" {
	run -0 scar-train -q -m mlr -n 8 --policy full --interval 4 --checkpoint-dir d --async
	printf '%s\n' "$output" | jq -s -e 'map(select(.type == "checkpoint")) | length == 3 and all(.background_seconds >= 0 and .seconds >= 0)' > /dev/null
	printf '%s\n' "$output" | jq -s -e 'map(select(.type == "summary")) | length == 1 and all(.background_seconds >= 0 and .checkpoint_seconds >= 0)' > /dev/null
	# Without it, no background time is reported.
	run -0 scar-train -q -m mlr -n 8 --policy full --interval 4 --checkpoint-dir e
	[[ $output != *background_seconds* ]]
}

@test "--async: resume from the directory continues exactly as an uninterrupted run" {
	scar-train -q --no-timing -m mf -n 16 --policy priority --interval 4 --checkpoint-dir ref --async > /dev/null
	scar-train -q --no-timing -m mf -n 9 --policy priority --interval 4 --checkpoint-dir d --async > /dev/null
	scar-train -q --no-timing --resume d -n 16 --policy priority --interval 4 --checkpoint-dir d --async > /dev/null
	cmp ref/ckpt-0000000016.ckpt d/ckpt-0000000016.ckpt
}

@test "--async: SIGTERM while a checkpoint is being written leaves no temporary and no torn file" {
	env SCAR_FAULT='fsync:delay2000:*' SCAR_FAULT_PATH=ckpt- LD_PRELOAD="$SHIM" \
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
		scar-train -q -m mlr -n 100 --policy full --interval 1 --checkpoint-dir d --async \
		> /dev/null 2>&1 &
	local pid=$! i st=0
	for i in $(seq 100); do
		compgen -G "d/.ckpt-*.tmp.*" > /dev/null && break
		sleep 0.05
	done
	compgen -G "d/.ckpt-*.tmp.*" > /dev/null
	kill -TERM "$pid"
	wait "$pid" || st=$?
	[ "$st" -eq 143 ]
	! compgen -G "d/.ckpt-*.tmp.*"
	! compgen -G "d/ckpt-*.ckpt" > /dev/null || scar-ckpt verify -q d/ckpt-*.ckpt
}

@test "--async: bad counts are usage errors" {
	run -2 --separate-stderr scar-train -m ridge -n 2 --async=0
	[[ $stderr == "scar-train: "*"--async"* ]]
	run -2 --separate-stderr scar-train -m ridge -n 2 --async=65
	[[ $stderr == "scar-train: "*"--async"* ]]
	run -2 --separate-stderr scar-train -m ridge -n 2 --async=x
	[[ $stderr == "scar-train: "*"--async"* ]]
}

@test "--threads: a checkpoint is the same byte for byte on 1, 2 and 8 threads, to a file or a pipe, fast or HC" {
	"$PY" -c 'import numpy' 2> /dev/null || skip "Debian's python3-numpy is not installed (make deps)"
	# 4 MiB blocks: 48 MiB of small integers in 2 shards is 6 blocks a section.
	"$PY" -c "
import numpy as np
r = np.random.default_rng(3)
np.save('c.npy', r.integers(0, 50, (6144, 2048)).astype(np.int32))"
	local t l
	for t in 1 2 8; do
		scar-ckpt import --threads "$t" --shards 2 --no-sync -o "i$t.ckpt" c.npy
		scar-ckpt import --threads "$t" --shards 2 -o - c.npy > "p$t.ckpt"
		for l in 1 4; do
			scar-ckpt convert --threads "$t" --level "$l" --no-sync i1.ckpt "c$t-$l.ckpt"
		done
	done
	for t in 2 8; do
		cmp i1.ckpt "i$t.ckpt"
		cmp i1.ckpt "p$t.ckpt"
		cmp c1-1.ckpt "c$t-1.ckpt"
		cmp c1-4.ckpt "c$t-4.ckpt"
	done
	cmp i1.ckpt p1.ckpt
	scar-ckpt verify -q c8-4.ckpt
	run -2 --separate-stderr scar-ckpt convert --threads 0 i1.ckpt x.ckpt
	[[ $stderr == "scar-ckpt: "*"--threads"* ]]
}

@test "--threads: scar-ckpt save and apply write the same files byte for byte on 1, 2 and 8 threads" {
	"$PY" -c 'import numpy' 2> /dev/null || skip "Debian's python3-numpy is not installed (make deps)"
	# 48 MiB of small integers in 2 shards: 6 blocks of 4 MiB a section; the
	# second snapshot moves a tenth of the rows, which priority then picks.
	mkdir s0 s2
	"$PY" -c "
import numpy as np
r = np.random.default_rng(5)
a = r.integers(0, 50, (6144, 2048)).astype(np.int32)
np.save('s0/c.npy', a)
a[r.choice(6144, 614, replace=False)] += 7
np.save('s2/c.npy', a)"
	local t k
	for t in 1 2 8; do
		for k in 0 2; do
			scar-ckpt save --threads "$t" --no-sync --policy priority --shards 2 --iteration "$k" \
				"s$k/c.npy" "d$t" > "e$t-$k.jsonl"
		done
		scar-ckpt apply --threads "$t" --no-sync -o "v$t.ckpt" "d$t"
	done
	[ "$(jq -r .kind e1-2.jsonl)" = partial ]
	for t in 2 8; do
		diff <(ls -A d1) <(ls -A "d$t")
		for f in d1/ckpt-*.ckpt d1/.scar-view.ckpt; do cmp "$f" "d$t/${f#d1/}"; done
		cmp v1.ckpt "v$t.ckpt"
		diff e1-2.jsonl "e$t-2.jsonl"
	done
	# and what they wrote is the saved view: apply gives save's view
	run -0 scar-diff -q v8.ckpt d8/.scar-view.ckpt
	run -2 --separate-stderr scar-ckpt save --threads 0 --policy full s0/c.npy x
	[[ $stderr == "scar-ckpt: "*"--threads"* ]]
	run -2 --separate-stderr scar-ckpt apply --threads 65 -o x.ckpt d1
	[[ $stderr == "scar-ckpt: "*"--threads"* ]]
	[ ! -e x ] && [ ! -e x.ckpt ]
}

@test "--threads: scar-train writes the same checkpoints on 1 and 2 threads, with and without --async" {
	scar-train -q --no-timing -m lda -n 4 --policy full --interval 2 --threads 1 --checkpoint-dir a > a.jsonl
	scar-train -q --no-timing -m lda -n 4 --policy full --interval 2 --threads 2 --checkpoint-dir b > b.jsonl
	scar-train -q --no-timing -m lda -n 4 --policy full --interval 2 --threads 2 --async --checkpoint-dir c > c.jsonl
	same_run a a.jsonl b b.jsonl
	same_run a a.jsonl c c.jsonl
}
