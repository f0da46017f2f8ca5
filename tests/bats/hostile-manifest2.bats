#!/usr/bin/env bats
# Hostile distributed checkpoints, second round (campaign A, F7 and F8): a
# manifest whose fields disagree with its rank files is damaged alike for
# verify, info, ls, convert and a resume (one check, scar-ckpt(5)
# MANIFESTS); a hard-linked .scar.lock is refused, not written through; a
# manifest's temporary is removed when a signal ends its writer.
bats_require_minimum_version 1.5.0
load helper

mpi() {
	local np=$1
	shift
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 \
		mpirun --oversubscribe -np "$np" "$@"
}

# mkman DIR ITERATION KIND CLOCK SHARDS NAME... : a version 2 manifest of
# model ridge in DIR listing NAME for rank 0, 1, ..., with their real sizes
# and CRC-32Cs and a valid checksum (what a deliberate edit can write).
mkman() {
	python3 - "$@" <<'EOF'
import json, os, sys
T = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    T.append(c)
def crc(b):
    c = 0xFFFFFFFF
    for x in b:
        c = T[(c ^ x) & 0xff] ^ (c >> 8)
    return c ^ 0xFFFFFFFF
d, it, kind, clock, shards, names = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6:]
files = []
for r, n in enumerate(names):
    b = open(os.path.join(d, n), 'rb').read()
    files.append({"rank": r, "name": n, "size": len(b), "crc32c": crc(b)})
m = {"format": "scar-dist-manifest", "version": 2, "model": "ridge", "iteration": it,
     "clock": clock, "ranks": len(names), "shards": shards, "kind": kind, "files": files}
t = json.dumps(m, separators=(',', ':')).encode()[:-1]
t += b',"checksum":"%08x"}\n' % crc(t)
open(os.path.join(d, "ckpt-%010d.manifest" % it), 'wb').write(t)
EOF
}

setup_file() {
	cd "$BATS_FILE_TMPDIR" || return 1
	# Single-process checkpoints of ridge at iteration 4: full, and partial (half the rows).
	scar-train -q -m ridge -n 4 --interval 4 --policy full --checkpoint-dir full > /dev/null
	scar-train -q -m ridge -n 4 --interval 2 --policy round-robin --fraction 0.5 \
		--checkpoint-dir part > /dev/null
	if ! command -v mpirun >/dev/null 2>&1; then
		export SCAR_MPI_SKIP="mpirun not found (apt-get install openmpi-bin libopenmpi-dev)"
	elif ! mpi 2 scar-train --model ridge --iters 1 --no-timing -q > probe.jsonl 2> probe.err ||
	     ! grep -q '"ranks":2' probe.jsonl; then
		export SCAR_MPI_SKIP="scar-train is not the MPI variant (needs mpicc at build time)"
	fi
}

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
}

need_mpi() {
	[ -z "${SCAR_MPI_SKIP:-}" ] || skip "$SCAR_MPI_SKIP"
}

# A directory c holding rank file r0 (a copy of SRC) and a manifest from mkman ARGS.
one_rank() {
	local src=$1
	shift
	mkdir c
	cp "$src" c/ckpt-0000000004.rank-0.ckpt
	mkman c 4 "$@" ckpt-0000000004.rank-0.ckpt
}

# Every reader calls c's manifest damaged, with MSG: verify 1, ls 1 (listed
# damaged), info and convert 2 (a damaged input), a resume passes it over.
all_refuse() {
	local msg=$1 m=c/ckpt-0000000004.manifest
	run -1 scar-ckpt verify "$m"
	[[ "$output" == *"$msg"* ]]
	run -1 scar-ckpt ls c
	[[ "$output" == *"damaged"* ]]
	run -2 scar-ckpt info "$m"
	[[ "$output" == *"$msg"* ]]
	run -2 scar-ckpt convert "$m" one.ckpt
	[ ! -e one.ckpt ]
	run -2 scar-train -q -n 8 --no-timing --resume c
	[[ "$output" == *"no complete full checkpoint"* ]]
}

@test "manifest: the honest one-rank manifest passes every reader" {
	one_rank "$BATS_FILE_TMPDIR/full/ckpt-0000000004.ckpt" full 4 8
	run -0 scar-ckpt verify c/ckpt-0000000004.manifest
	run -0 scar-ckpt ls c
	run -0 scar-ckpt info c/ckpt-0000000004.manifest
	run -0 scar-ckpt convert c/ckpt-0000000004.manifest one.ckpt
	run -0 scar-train -q -n 8 --no-timing --resume c
}

@test "manifest: shards differ from the rank file's (3 against 8): damaged for all" {
	one_rank "$BATS_FILE_TMPDIR/full/ckpt-0000000004.ckpt" full 4 3
	all_refuse "has 8 shards, the manifest says 3"
}

@test "manifest: kind partial over a full rank file: damaged for all" {
	one_rank "$BATS_FILE_TMPDIR/full/ckpt-0000000004.ckpt" partial 4 8
	all_refuse "manifest says partial, but every file it lists is full"
}

@test "manifest: kind full over a partial rank file: damaged for all" {
	one_rank "$BATS_FILE_TMPDIR/part/ckpt-0000000004.ckpt" full 4 8
	all_refuse "manifest says full, but rows of tensor 'w' are in none of its files"
}

@test "manifest: clock 0 below iteration 4: damaged for all, as a resume already said" {
	one_rank "$BATS_FILE_TMPDIR/full/ckpt-0000000004.ckpt" full 0 8
	all_refuse "clock is below iteration"
}

@test "manifest: one file listed for ranks 0 and 1: damaged for all" {
	one_rank "$BATS_FILE_TMPDIR/full/ckpt-0000000004.ckpt" full 4 8
	mkman c 4 full 4 8 ckpt-0000000004.rank-0.ckpt ckpt-0000000004.rank-0.ckpt
	all_refuse "a file is listed for two ranks"
}

@test "manifest: two names of one file (a hard link) for ranks 0 and 1: damaged for all" {
	one_rank "$BATS_FILE_TMPDIR/full/ckpt-0000000004.ckpt" full 4 8
	ln c/ckpt-0000000004.rank-0.ckpt c/ckpt-0000000004.rank-1.ckpt
	mkman c 4 full 4 8 ckpt-0000000004.rank-0.ckpt ckpt-0000000004.rank-1.ckpt
	all_refuse "manifest lists one file for two ranks"
}

@test "manifest: a rank file of another model or iteration: damaged for verify too" {
	mkdir c
	cp "$BATS_FILE_TMPDIR/full/ckpt-0000000004.ckpt" c/ckpt-0000000004.rank-0.ckpt
	cp "$BATS_FILE_TMPDIR/part/ckpt-0000000002.ckpt" c/ckpt-0000000004.rank-1.ckpt
	mkman c 4 full 4 8 ckpt-0000000004.rank-0.ckpt ckpt-0000000004.rank-1.ckpt
	all_refuse "is not part of the manifest's checkpoint"
}

@test "manifest: real two-rank checkpoints, full and partial, pass; relabelled they are damaged" {
	need_mpi
	mpi 2 scar-train -q -m ridge -n 4 --interval 2 --policy full --checkpoint-dir f --no-timing > /dev/null
	mpi 2 scar-train -q -m ridge -n 4 --interval 2 --policy round-robin --fraction 0.5 \
		--checkpoint-dir p --no-timing > /dev/null
	run -0 scar-ckpt verify f/*.manifest p/*.manifest
	run -0 scar-ckpt ls f
	run -0 scar-ckpt ls p
	# The partial checkpoint at 3 (rows of both ranks) called full.
	mkdir c
	cp p/ckpt-0000000003.rank-*.ckpt c/
	grep -q '"kind":"partial"' p/ckpt-0000000003.manifest
	mkman c 3 full 3 8 ckpt-0000000003.rank-0.ckpt ckpt-0000000003.rank-1.ckpt
	run -1 scar-ckpt verify c/ckpt-0000000003.manifest
	[[ "$output" == *"manifest says full, but rows of tensor 'w' are in none of its files"* ]]
}

@test "lock: a hard-linked .scar.lock is refused and the file it links to keeps its bytes" {
	mkdir d5
	echo precious > victim
	ln victim d5/.scar.lock
	run -2 scar-train -q -m ridge -n 4 --policy full --checkpoint-dir d5 --no-timing
	[[ "$output" == *"the lock file 'd5/.scar.lock' has 2 links"* ]]
	[ "$(cat victim)" = precious ]
	[ -z "$(ls d5 | grep -v '^\.scar\.lock$' || true)" ]
}

@test "lock: a hard-linked .scar.lock is refused under MPI too" {
	need_mpi
	mkdir d5
	echo precious > victim
	ln victim d5/.scar.lock
	run -2 mpi 2 scar-train -q -m ridge -n 4 --policy full --checkpoint-dir d5 --no-timing
	[[ "$output" == *"has 2 links"* ]]
	[ "$(cat victim)" = precious ]
}

@test "manifest: a SIGTERM while the manifest is being written leaves no temporary" {
	need_mpi
	command -v strace >/dev/null 2>&1 || skip "strace not found"
	# Rank 0 under strace: its second rename (the first manifest's) fails
	# with EINTR and SIGTERM arrives, as a kill at that moment would.
	cat > r0.sh <<'EOF'
#!/bin/sh
if [ "$OMPI_COMM_WORLD_RANK" = 0 ]; then
	exec strace -f -qq -o /dev/null -e trace=rename \
		-e inject=rename:error=EINTR:signal=SIGTERM:when=2 "$@"
fi
exec "$@"
EOF
	chmod +x r0.sh
	strace -f -qq -o /dev/null true || skip "strace cannot trace here"
	mkdir s
	run mpi 2 ./r0.sh scar-train -q -m ridge -n 4 --interval 2 --policy full \
		--checkpoint-dir s --no-timing
	[ "$status" -ne 0 ]
	[ -e s/ckpt-0000000000.rank-0.ckpt ]
	[ ! -e s/ckpt-0000000000.manifest ]
	run ls -a s
	[[ "$output" != *".manifest.tmp."* ]]
}
