#!/usr/bin/env bats
# scar-ckpt reads a distributed (MPI) checkpoint's manifest as one (issue 8).
bats_require_minimum_version 1.5.0
load helper

mpi() {
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
		mpirun --allow-run-as-root --oversubscribe -np 2 scar-train "$@"
}

setup_file() {
	if ! command -v mpirun >/dev/null 2>&1; then
		export SCAR_MPI_SKIP="mpirun not found (apt-get install openmpi-bin libopenmpi-dev)"
		return 0
	fi
	cd "$BATS_FILE_TMPDIR" || return 1
	if ! mpi --model ridge --iters 1 --no-timing -q > probe.jsonl 2> probe.err ||
	   ! grep -q '"ranks":2' probe.jsonl; then
		export SCAR_MPI_SKIP="scar-train is not the MPI variant (needs mpicc at build time)"
		return 0
	fi
	mkdir d
	mpi -q -m ridge -n 6 --policy full --interval 3 --checkpoint-dir d > train.jsonl
	scar-train -q -m ridge -n 6 --save ref.ckpt > /dev/null
}

setup() {
	[ -z "${SCAR_MPI_SKIP:-}" ] || skip "$SCAR_MPI_SKIP"
	cd "$BATS_FILE_TMPDIR" || return 1
}

@test "convert: a manifest gives one checkpoint equal to a single-process run" {
	run -0 scar-ckpt convert d/ckpt-0000000006.manifest "$BATS_TEST_TMPDIR/one.ckpt"
	run -0 scar-diff --tolerance 1e-9 "$BATS_TEST_TMPDIR/one.ckpt" ref.ckpt
}

@test "apply: manifests as base and partial" {
	run -0 scar-ckpt apply d/ckpt-0000000003.manifest d/ckpt-0000000006.manifest -o "$BATS_TEST_TMPDIR/ap.ckpt"
	run -0 scar-diff --tolerance 1e-9 "$BATS_TEST_TMPDIR/ap.ckpt" ref.ckpt
}

@test "verify: 0 when complete, 1 naming a missing rank file" {
	run -0 scar-ckpt verify d/ckpt-0000000006.manifest
	cp -r d "$BATS_TEST_TMPDIR/d2"
	rm "$BATS_TEST_TMPDIR/d2/ckpt-0000000006.rank-1.ckpt"
	run -1 --separate-stderr scar-ckpt verify "$BATS_TEST_TMPDIR/d2/ckpt-0000000006.manifest"
	[[ "$stderr" == *rank-1.ckpt* ]]
}

@test "info: the combined state, distributed, with its rank files" {
	run -0 scar-ckpt info d/ckpt-0000000006.manifest
	[[ "$output" == *"model:      ridge"* ]]
	[[ "$output" == *"iteration:  6"* ]]
	[[ "$output" == *"shards:     8"* ]]
	[[ "$output" == *"kind:       full"* ]]
	[[ "$output" == *"tensors:    1"* ]]
	[[ "$output" == *distributed* ]]
	[[ "$output" == *ckpt-0000000006.rank-0.ckpt* ]]
	[[ "$output" == *ckpt-0000000006.rank-1.ckpt* ]]
}

@test "ls: each manifest once, no rank files" {
	run -0 scar-ckpt ls d
	[ "$(grep -c 'ckpt-0000000006.manifest' <<< "$output")" -eq 1 ]
	[[ "$output" == *distributed* ]]
	[[ "$output" != *rank-* ]]
}

# mf is bit-identical across P, so a distributed directory and a
# single-process one of the same run must fold into the same saved view.
MF="-q -m mf --set users=120 --set items=90 --shards 5 --no-timing --no-sync -n 10
    --policy round-robin --fraction 0.5 --interval 4"

@test "apply DIR: a distributed directory folds like a single-process one" {
	cd "$BATS_TEST_TMPDIR"
	mpi $MF --checkpoint-dir dd > /dev/null
	scar-train $MF --checkpoint-dir sd > /dev/null
	run -0 scar-ckpt apply -o one.ckpt sd
	run -0 scar-ckpt apply -o dist.ckpt dd
	run -0 scar-diff --all one.ckpt dist.ckpt
	run -0 scar-ckpt info dist.ckpt
	[[ "$output" == *"iteration:  10"* ]]
	# As a partial operand too, over a base from elsewhere.
	run -0 scar-ckpt apply -o mixed.ckpt sd/ckpt-0000000000.ckpt dd
	run -0 scar-diff --all one.ckpt mixed.ckpt
}

@test "apply DIR: rank files without a manifest are not used, a damaged one refuses" {
	cd "$BATS_TEST_TMPDIR"
	mpi $MF --checkpoint-dir dd > /dev/null
	scar-train $MF --checkpoint-dir sd > /dev/null
	# A crash before the manifest of iteration 10: its rank files stay.
	rm dd/ckpt-0000000010.manifest sd/ckpt-0000000010.ckpt
	[ -f dd/ckpt-0000000010.rank-1.ckpt ]
	run -0 scar-ckpt apply -o one.ckpt sd
	run -0 scar-ckpt apply -o dist.ckpt dd
	run -0 scar-diff --all one.ckpt dist.ckpt
	run -0 scar-ckpt info dist.ckpt
	[[ "$output" == *"iteration:  8"* ]]
	# A damaged rank file makes its checkpoint damaged: the directory is refused.
	printf 'x' | dd of=dd/ckpt-0000000004.rank-1.ckpt bs=1 seek=60 conv=notrunc 2>/dev/null
	run -2 --separate-stderr scar-ckpt apply -o bad.ckpt dd
	[[ "$stderr" == *"'dd': 1 damaged or unreadable checkpoints"* ]]
	[ ! -e bad.ckpt ]
}
