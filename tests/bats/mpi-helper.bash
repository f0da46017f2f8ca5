# mpi-helper.bash - loaded by the Open MPI suites (mpi.bats, mpi-kill.bats)
# after helper.bash: mpi NP ARGS runs the scar-train under test on NP
# ranks, and setup_file skips the suite when there is no mpirun or the
# build is not the MPI variant.

# The scar-train under test (SCAR_MPI_TRAIN overrides, e.g. a patched
# build), by name: the built one (PATH, helper.bash), or its wrapper.
TRAIN="${SCAR_MPI_TRAIN:-scar-train}"

mpi() {
	local np=$1
	shift
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 \
		mpirun --oversubscribe -np "$np" "$TRAIN" "$@"
}

setup_file() {
	if ! command -v mpirun >/dev/null 2>&1; then
		export SCAR_MPI_SKIP="mpirun not found (apt-get install openmpi-bin libopenmpi-dev)"
		return 0
	fi
	# The MPI variant says how many ranks it ran on in its header.
	cd "$BATS_FILE_TMPDIR" || return 1
	if ! mpi 2 --model ridge --iters 1 --no-timing -q > probe.jsonl 2> probe.err ||
	   ! grep -q '"ranks":2' probe.jsonl; then
		export SCAR_MPI_SKIP="scar-train is not the MPI variant (needs mpicc at build time and cmd/scar-train.c calling scar_dist_train_run)"
	fi
}
