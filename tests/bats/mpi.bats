#!/usr/bin/env bats
# Distributed training on Open MPI (scar-mpi(7)): P = 1, 2, 4 ranks over
# loopback give the single-process results (within 1e-6 relative; the
# partial gradients are summed in rank order), checkpoints are rank files
# plus a manifest written last, resume works with another P and after a
# rank is killed, failures cost what they cost in one process; mlr, mf
# (ALS, and SGD as DSGD with workers W) and lda are bit-identical to one
# process.
bats_require_minimum_version 1.5.0
load helper
load mpi-helper

setup() {
	[ -z "${SCAR_MPI_SKIP:-}" ] || skip "$SCAR_MPI_SKIP"
	cd "$BATS_TEST_TMPDIR" || return 1
}

# A job left running by a failed test is ended (only the mpirun this file started).
teardown() {
	if [ -f "$BATS_TEST_TMPDIR/mpirun.pid" ]; then
		kill "$(cat "$BATS_TEST_TMPDIR/mpirun.pid")" 2>/dev/null || true
	fi
}

# Largest relative difference between two event streams, record by record,
# over every field but sizes, timings and the MPI-only ones; 1 when the
# streams differ in length, types or any non-numeric field.
maxdiff() {
	jq -n --slurpfile a "$1" --slurpfile b "$2" '
	  def skip: ["bytes","checkpoint_bytes","elapsed","seconds","checkpoint_seconds",
	             "files","ranks","comm_bytes"];
	  def rel(x; y):
	    if (x|type) == "number" and (y|type) == "number" then
	      ((x - y)|length) / ([(x|length), (y|length), 1e-300]|max)
	    elif x == y then 0 else 1 end;
	  if ($a|length) != ($b|length) then 1 else
	    [range(0; $a|length) as $i | $a[$i] as $x | $b[$i] as $y
	     | ($x|keys[]) as $k | select(skip|index([$k])|not) | rel($x[$k]; $y[$k])] | max
	  end'
}

# Exit 0 when the two streams agree within 1e-6 relative.
agree() {
	local d
	d=$(maxdiff "$1" "$2")
	echo "max relative difference: $d"
	awk -v d="$d" 'BEGIN { exit !(d <= 1e-6) }'
}

# The stream without the fields only a distributed run has.
plain() { jq -c 'del(.ranks, .comm_bytes, .files)' "$1"; }

field() { grep "\"type\":\"$1\"" | head -1 | sed "s/.*\"$2\":\([^,}]*\).*/\1/"; }

# bit_identical_on "P..." TRAIN_ARGS...: one process (one.jsonl) and mpirun
# -np P (pP.jsonl) for each P give the same event stream, to the bit.
bit_identical_on() {
	local ps=$1 p
	shift
	scar-train "$@" | jq -c . > one.jsonl
	for p in $ps; do
		mpi "$p" "$@" > "p$p.jsonl"
		plain "p$p.jsonl" | cmp - one.jsonl
	done
}

RIDGE="--model ridge --shards 4 --no-timing -q --no-sync"

@test "mpi: P = 1, 2, 4 give the single-process run within 1e-6 relative" {
	scar-train $RIDGE --iters 40 --set n=999 --set d=23 > one.jsonl
	for p in 1 2 4; do
		mpi $p $RIDGE --iters 40 --set n=999 --set d=23 > p$p.jsonl
		run -0 agree one.jsonl p$p.jsonl
	done
	# P = 1 is the plain trainer: identical bytes.
	cmp one.jsonl p1.jsonl
	grep -q '"ranks":4' p4.jsonl
}

@test "mpi: a fixed P is deterministic to the bit" {
	mpi 3 $RIDGE --iters 25 --set init_scale=1 > a.jsonl
	mpi 3 $RIDGE --iters 25 --set init_scale=1 > b.jsonl
	cmp a.jsonl b.jsonl
}

@test "mpi: the comparison can fail (a different seed is noticed)" {
	scar-train $RIDGE --iters 10 > one.jsonl
	mpi 2 $RIDGE --iters 10 --seed 2 > two.jsonl
	run -1 agree one.jsonl two.jsonl
}

@test "mpi: more ranks than shards, shards not divisible by ranks" {
	mkdir ck
	scar-train --model ridge --shards 3 --no-timing -q --iters 20 --policy priority --fail-at 7 > one.jsonl
	mpi 4 --model ridge --shards 3 --no-timing -q --iters 20 --policy priority --fail-at 7 \
		--checkpoint-dir ck --no-sync > four.jsonl
	run -0 agree one.jsonl four.jsonl
	# Rank 3 owns no shard: its file is a valid checkpoint of no rows.
	run -0 scar-ckpt verify ck/ckpt-0000000000.rank-3.ckpt
}

@test "mpi: a partial failure costs what it costs in one process" {
	opts="$RIDGE --iters 40 --policy priority --fraction 0.25 --interval 8 --fail-at 13 --lose-shards 1 --cost"
	scar-train $opts > one.jsonl
	mpi 2 $opts > two.jsonl
	run -0 agree one.jsonl two.jsonl
	[ "$(field cost cost < one.jsonl)" = "$(field cost cost < two.jsonl)" ]
	[ "$(field failure ranks < two.jsonl)" = "[1]" ]
	[ "$(field recovery rows_restored < two.jsonl)" = "13" ]
}

@test "mpi: full recovery rolls every rank back, cost T - C" {
	opts="$RIDGE --iters 30 --policy full --interval 5 --fail-at 13 --recovery full --cost"
	scar-train $opts > one.jsonl
	mpi 4 $opts > four.jsonl
	run -0 agree one.jsonl four.jsonl
	[ "$(field recovery resume_state_iter < four.jsonl)" = "10" ]
	[ "$(field cost cost < four.jsonl)" = "3" ]
}

@test "mpi: every rank writes its file, the manifest comes last and lists them" {
	mkdir ck
	mpi 2 $RIDGE --iters 10 --policy round-robin --fraction 0.5 --interval 4 --checkpoint-dir ck > two.jsonl
	[ -f ck/ckpt-0000000000.manifest ]
	[ -f ck/ckpt-0000000000.rank-0.ckpt ]
	[ -f ck/ckpt-0000000000.rank-1.ckpt ]
	[ -f ck/ckpt-0000000010.manifest ]
	run -0 jq -r '.format, .kind, .ranks, (.files|length), .files[1].name' ck/ckpt-0000000000.manifest
	[ "${lines[0]}" = "scar-dist-manifest" ]
	[ "${lines[1]}" = "full" ]
	[ "${lines[2]}" = "2" ] && [ "${lines[3]}" = "2" ]
	[ "${lines[4]}" = "ckpt-0000000000.rank-1.ckpt" ]
	[ "$(jq -r .kind ck/ckpt-0000000002.manifest)" = "partial" ]
	# Each rank file is a valid checkpoint of its own rows.
	for f in ck/*.rank-*.ckpt; do
		run -0 scar-ckpt verify "$f"
	done
	# Sizes match the manifest.
	[ "$(jq '.files[0].size' ck/ckpt-0000000000.manifest)" = "$(stat -c %s ck/ckpt-0000000000.rank-0.ckpt)" ]
	# A rank's rows interleave with the other's: a present bitmap (format
	# 1.1, minor version 1 at offset 10), not one [r,1] per row.
	for f in ck/ckpt-0000000000.rank-*.ckpt; do
		[ "$(od -An -tu2 -j10 -N2 "$f" | tr -d ' ')" = 1 ]
		scar-ckpt info --json "$f" | jq -e '[.tensors[] | select(.name == "w") | .rows_present] == [25]'
	done
	dd if=ck/ckpt-0000000000.rank-1.ckpt bs=1 skip=24 count=2000 2>/dev/null | grep -a -q '"present":{"bitmap":"'
}

@test "mpi: a missing checkpoint directory is created once, by rank 0" {
	for i in 1 2 3; do
		mpi 4 $RIDGE --iters 4 --policy full --interval 2 --checkpoint-dir "new$i" > run.jsonl
		[ -f "new$i/ckpt-0000000004.manifest" ]
		[ -f "new$i/ckpt-0000000004.rank-3.ckpt" ]
	done
	# Only one level, as in one process; the error is said once, exit 2.
	run -2 --separate-stderr mpi 2 $RIDGE --iters 4 --checkpoint-dir missing/ck
	[ "$(grep -c "scar-train: cannot create checkpoint directory 'missing/ck': No such file or directory" <<< "$stderr")" -eq 1 ]
	[ ! -e missing ]
}

@test "mpi: resume with a different P continues the same run" {
	mkdir ck
	opts="--policy full --interval 5 --checkpoint-dir ck"
	mpi 2 $RIDGE --iters 17 $opts > first.jsonl
	mpi 4 --resume ck --iters 40 --no-timing -q --no-sync $opts > resumed.jsonl
	[ "$(field header resume_iter < resumed.jsonl)" = "15" ]
	scar-train $RIDGE --iters 40 > whole.jsonl
	a=$(field summary final_objective < whole.jsonl)
	b=$(field summary final_objective < resumed.jsonl)
	awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-6 * a) }'
	# One process (no mpirun) resumes a distributed checkpoint as well.
	mkdir ck2
	"$TRAIN" --resume ck/ckpt-0000000015.manifest --iters 40 --no-timing -q --no-sync \
		--policy full --interval 5 --checkpoint-dir ck2 > single.jsonl
	run -0 agree resumed.jsonl single.jsonl
}

@test "mpi: a checkpoint without its manifest is not used" {
	mkdir ck
	mpi 2 $RIDGE --iters 12 --policy full --interval 5 --checkpoint-dir ck > first.jsonl
	rm ck/ckpt-0000000010.manifest
	mpi 2 --resume ck --iters 20 --no-timing -q > resumed.jsonl
	[ "$(field header resume_iter < resumed.jsonl)" = "5" ]
	# A damaged rank file makes its manifest's checkpoint incomplete too.
	printf 'x' | dd of=ck/ckpt-0000000005.rank-1.ckpt bs=1 seek=50 conv=notrunc 2>/dev/null
	mpi 2 --resume ck --iters 20 --no-timing -q > again.jsonl
	[ "$(field header resume_iter < again.jsonl)" = "0" ]
}

@test "mpi: a killed rank stops the job; resume restarts from the newest manifest" {
	mkdir ck
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe -np 2 "$TRAIN" \
		$RIDGE --iters 100000000 --set n=4000 --policy full --interval 20 --checkpoint-dir ck \
		> run.jsonl 2> run.err 3>&- &
	mpid=$!
	echo "$mpid" > "$BATS_TEST_TMPDIR/mpirun.pid"
	# Wait (up to a minute) for a complete checkpoint past the first.
	for _ in $(seq 600); do
		[ -f ck/ckpt-0000000020.manifest ] && break
		sleep 0.1
	done
	[ -f ck/ckpt-0000000020.manifest ]
	victim=
	for p in $(pgrep -P "$mpid"); do
		if tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1'; then
			victim=$p
		fi
	done
	[ -n "$victim" ]
	kill -9 "$victim"
	st=0
	wait "$mpid" || st=$?
	[ "$st" -ne 0 ]
	# Rank 0 survived and left its rows (mpi-kill.bats resumes them); without them, the manifest.
	ls ck/survivor-*.rank-0.ckpt
	rm ck/survivor-*.ckpt
	newest=$(ls ck/*.manifest | sort | tail -1)
	it=$(jq .clock "$newest")
	mpi 4 --resume ck --iters $((it + 5)) --no-timing -q > resumed.jsonl
	[ "$(field header resume_iter < resumed.jsonl)" = "$it" ]
	[ "$(field summary iters < resumed.jsonl)" = "$((it + 5))" ]
}

@test "mpi: mlr on 2 and 4 ranks is bit-identical to one process" {
	opts="--model mlr --shards 5 --no-timing -q --iters 8 --set d=37 --set classes=7 --set batch=100
	      --set n=1234 --set init_scale=0.1 --policy priority --fraction 1/4 --fail-at 5 --lose-count 2 --cost"
	bit_identical_on "2 4" $opts
	[ "$(field cost cost < one.jsonl)" = "$(field cost cost < p4.jsonl)" ]
	grep -q '"final_heldout"' p4.jsonl
}

# A full rollback at 8 with full checkpoints every 3 on 3 ranks equals one
# process, and so does a resume of the newest on 2 ranks (in ck; ck1 is the
# single-process directory). Leaves r2.jsonl, the resumed 2-rank stream.
rollback_and_resume() {
	mkdir ck ck1
	scar-train "$@" --iters 12 --fail-at 8 --recovery full --checkpoint-dir ck1 |
		jq -c 'del(.bytes, .checkpoint_bytes)' > one.jsonl
	mpi 3 "$@" --iters 12 --fail-at 8 --recovery full --checkpoint-dir ck | plain /dev/stdin |
		jq -c 'del(.bytes, .checkpoint_bytes)' | cmp - one.jsonl
	mpi 2 --resume ck --iters 16 --no-timing -q > r2.jsonl
	scar-train --resume ck1 --iters 16 --no-timing -q | jq -c . > r1.jsonl
	plain r2.jsonl | cmp - r1.jsonl
}

@test "mpi: mlr full recovery and a resume on another P stay bit-identical" {
	rollback_and_resume --model mlr --no-timing -q --no-sync --policy full --interval 3
	# The newest is state 9 at clock 11, after the rollback.
	[ "$(field header resume_iter < r2.jsonl)" = "11" ]
}

MF="--model mf --set users=200 --set items=150 --shards 5 --no-timing -q --no-sync"

@test "mpi: mf (ALS) on 1, 2 and 4 ranks is bit-identical to one process" {
	opts="$MF --iters 12 --policy priority --fraction 1/4 --fail-at 5 --lose-count 2 --cost"
	bit_identical_on "1 2 4" $opts
	[ "$(field cost cost < one.jsonl)" = "$(field cost cost < p4.jsonl)" ]
	[ "$(field failure ranks < p4.jsonl)" != "" ]
	grep -q '"final_heldout"' p4.jsonl
	grep -q '"ranks":4' p4.jsonl
}

@test "mpi: mf on MovieLens (the data cache) is bit-identical on 2 ranks" {
	ml="${SCAR_DATA:-$HOME/.cache/scar}/movielens"
	[ -d "$ml" ] || skip "MovieLens not in the data cache (make data)"
	opts="--model mf --data $ml --shards 4 --no-timing -q --iters 3 --policy round-robin --fail-at 2"
	bit_identical_on 2 $opts
}

@test "mpi: mf checkpoints, full recovery and a resume on another P stay bit-identical" {
	rollback_and_resume $MF --policy full --interval 3
	[ -f ck/ckpt-0000000009.manifest ] && [ -f ck/ckpt-0000000009.rank-2.ckpt ]
	[ "$(field header resume_iter < r2.jsonl)" = "11" ]
}

@test "mpi: a resume rebuilds the saved view from partial manifests as one process does" {
	opts="--no-timing -q --no-sync --policy priority --fraction 0.5 --interval 4"
	mpi 2 $MF $opts --iters 9 --checkpoint-dir pa > /dev/null
	scar-train $MF $opts --iters 9 --checkpoint-dir pb > /dev/null
	[ "$(jq -r .kind pa/ckpt-0000000008.manifest)" = "partial" ]
	# The failure at 14 restores from the view the partials at 2..8 built.
	mpi 3 --resume pa --iters 20 $opts --fail-at 14 --checkpoint-dir pa |
		jq -c 'del(.ranks, .comm_bytes, .files, .bytes, .checkpoint_bytes)' > a.jsonl
	scar-train --resume pb --iters 20 $opts --fail-at 14 --checkpoint-dir pb |
		jq -c 'del(.bytes, .checkpoint_bytes)' | cmp - a.jsonl
	grep -q '"type":"recovery"' a.jsonl
	# One process (no mpirun) resuming the ranks' directory builds the same view.
	mpi 2 $MF $opts --iters 9 --checkpoint-dir pc > /dev/null
	"$TRAIN" --resume pc --iters 20 $opts --fail-at 14 --checkpoint-dir pc |
		jq -c 'del(.bytes, .checkpoint_bytes)' | cmp - a.jsonl
}

@test "mpi: the mf comparison can fail (another seed differs)" {
	scar-train $MF --iters 3 | jq -c . > one.jsonl
	mpi 2 $MF --iters 3 --seed 2 > two.jsonl
	run -1 cmp <(plain two.jsonl) one.jsonl
}

# DSGD: users 200 > items 150, so item blocks travel; 150 < 200 users travel.
MFS="--model mf --set solver=sgd --set users=200 --set items=150 --shards 5 --no-timing -q --no-sync"

@test "mpi: mf SGD (DSGD, workers=4) on 1, 2, 3, 4 ranks is bit-identical to one process" {
	opts="$MFS --set workers=4 --iters 8 --policy priority --fraction 1/4 --fail-at 4 --lose-count 2 --cost"
	bit_identical_on "1 2 3 4" $opts
	[ "$(field cost cost < one.jsonl)" = "$(field cost cost < p4.jsonl)" ]
	grep -q '"type":"recovery"' p4.jsonl
	grep -q '"ranks":4' p4.jsonl
}

@test "mpi: mf SGD with user blocks travelling, and with fewer workers than ranks" {
	# items 200 > users 150: the user blocks travel; W = 3 on 4 ranks leaves rank 3 idle.
	for w in 3 5; do
		opts="--model mf --set solver=sgd --set users=150 --set items=200 --set workers=$w
		      --set lambda_scale=none --shards 4 --no-timing -q --no-sync --iters 5
		      --policy round-robin --fraction 0.5 --fail-at 3 --lose-shards 2"
		bit_identical_on "2 4" $opts
	done
}

@test "mpi: mf SGD on MovieLens (the data cache) is bit-identical on 2 ranks" {
	ml="${SCAR_DATA:-$HOME/.cache/scar}/movielens"
	[ -d "$ml" ] || skip "MovieLens not in the data cache (make data)"
	opts="--model mf --data $ml --set solver=sgd --set workers=4 --shards 4 --no-timing -q --iters 2"
	bit_identical_on 2 $opts
}

@test "mpi: mf SGD full recovery and a resume on another P stay bit-identical" {
	rollback_and_resume $MFS --set workers=4 --policy full --interval 3
	[ "$(field header resume_iter < r2.jsonl)" = "11" ]
}

@test "mpi: mf SGD with workers=4 is not the sequential epoch (the comparison can fail)" {
	scar-train $MFS --iters 3 | jq -c 'del(.config.workers)' > w1.jsonl
	mpi 2 $MFS --set workers=4 --iters 3 | plain /dev/stdin | jq -c 'del(.config.workers)' > w4.jsonl
	run -1 cmp w4.jsonl w1.jsonl
	# Only the values differ: the same records, the same objective at iteration 0.
	[ "$(wc -l < w4.jsonl)" = "$(wc -l < w1.jsonl)" ]
	[ "$(sed -n 2p w4.jsonl)" = "$(sed -n 2p w1.jsonl)" ]
}

@test "mpi: mf SGD bytes per epoch are the cost model's" {
	# U = 200, I = 150, k = 10, W = 4, P = 2: items travel, Q = 2, lo = 0, 2;
	# I_j = 38 38 37 37; passes 44 (2 150 - I_3 - I_1) = 44 (300 - 37 - 38) = 9900;
	# gather 44 (350) = 15400; objective 8 (400 + 150) = 4400: 29700 an epoch.
	mpi 2 $MFS --set workers=4 --iters 3 > two.jsonl
	[ "$(field summary comm_bytes < two.jsonl)" = "$((3 * 29700))" ]
	# P = 4: Q = 4, lo = 0 1 2 3, passes 44 (600 - I_3 - I_0 - I_1 - I_2) = 19800;
	# gather 3 44 350 = 46200; objective 3 4400 = 13200: 79200.
	mpi 4 $MFS --set workers=4 --iters 3 > four.jsonl
	[ "$(field summary comm_bytes < four.jsonl)" = "$((3 * 79200))" ]
}

LDA="--model lda --set docs=200 --set words=300 --shards 5 --no-timing -q --no-sync"

@test "mpi: lda (AD-LDA, workers=4 and the sequential workers=1) is bit-identical on 2, 3, 4 ranks" {
	for w in 1 4; do
		opts="$LDA --set workers=$w --iters 6 --policy priority --fraction 1/4 --fail-at 3 --lose-count 2 --cost"
		bit_identical_on "2 3 4" $opts
	done
	# Integer count tensors have step norms (not 0).
	grep -q '"step_norm":[1-9]' p4.jsonl
}

@test "mpi: lda full recovery and a resume on another P stay bit-identical" {
	rollback_and_resume $LDA --set workers=4 --policy full --interval 3
}

@test "mpi: mf SGD with workers=1 does not run distributed and says to set workers, exit 2" {
	run -2 --separate-stderr mpi 2 --model mf --set solver=sgd --iters 2 -q
	[[ "$stderr" == *"mf: solver 'sgd' with workers=1 is one chain of updates"*"set workers=W > 1"* ]]
	[ "$(grep -c "scar-train: mf: solver 'sgd'" <<< "$stderr")" -eq 1 ]
	[ -z "$output" ]
}

@test "mpi: a usage error is reported once, not once per rank" {
	run -2 --separate-stderr mpi 3 --model ridge --iters 2x
	[ "$(grep -c "^scar-train: option '--iters': '2x' is not a non-negative integer" <<< "$stderr")" -eq 1 ]
	[ "$(grep -c "^try 'scar-train --help'" <<< "$stderr")" -eq 1 ]
}

@test "mpi: recovery rebuild (mf ALS, mf SGD, lda) is bit-identical to one process on 2 and 3 ranks" {
	fail="--shards 8 --no-timing -q --no-sync --iters 16 --policy priority --fail-at 9 --lose-count 3 --recovery rebuild"
	bit_identical_on "2 3" --model mf $fail
	grep -q '"rows_rebuilt":' one.jsonl
	bit_identical_on "2 3" --model mf --set solver=sgd --set workers=4 $fail
	bit_identical_on "2 3" --model lda --set workers=4 $fail
	grep -q '"rows_rebuilt":' one.jsonl
}

@test "mpi: recovery rewind (mlr, two failures) is bit-identical to one process on 2 and 3 ranks" {
	bit_identical_on "2 3" --model mlr --shards 8 --no-timing -q --no-sync --iters 24 \
		--policy priority --fail-at 9,15 --lose-count 3 --recovery rewind
	[ "$(grep -c '"rows_rewound":' one.jsonl)" = 2 ]
}

@test "mpi: recovery auto (mf, mlr, lda) chooses and recovers as one process does, on 2 and 3 ranks" {
	fail="--shards 8 --no-timing -q --no-sync --iters 24 --policy priority --fail-at 9,15 --lose-count 3 --recovery auto"
	bit_identical_on "2 3" --model mf $fail
	bit_identical_on "2 3" --model mlr $fail
	bit_identical_on "2 3" --model lda --set workers=4 $fail
	[ "$(grep -c '"choice":"rebuild"' one.jsonl)" = 2 ]
}
