#!/usr/bin/env bats
# scar-ckpt reads a distributed (MPI) checkpoint's manifest as one (issue 8).
bats_require_minimum_version 1.5.0
load helper

mpi() {
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
		mpirun --allow-run-as-root --oversubscribe -np 2 "$SCAR_ROOT/scar-train" "$@"
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
	"$SCAR_ROOT/scar-train" -q -m ridge -n 6 --save ref.ckpt > /dev/null
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
