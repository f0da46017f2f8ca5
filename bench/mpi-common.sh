# mpi-common.sh - sourced by the MPI benchmarks (bench-mpi.sh,
# shellcheck disable=SC2154 # name and tools are the caller's
# bench-mpi-kill.sh) after they set name (for messages) and the tools they
# need besides mpirun: sets train (SCAR_MPI_TRAIN, else the tree's
# scar-train), lets mpirun run as root on one machine, and exits 0 with a
# note when mpirun, a tool, or the MPI variant of scar-train is missing.
# Also median (of numbers on stdin). Not run by bench/run.sh (no bench-
# prefix).
train=${SCAR_MPI_TRAIN:-$PWD/scar-train}
for t in mpirun $tools; do
	command -v "$t" >/dev/null || { echo "$name: '$t' not installed (make deps); skipped"; exit 0; }
done
# yield_when_idle: a rank waiting in a collective gives its core away,
# which matters when ranks share cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
if ! mpirun --oversubscribe -np 2 "$train" --model ridge --iters 1 -q --no-timing 2>/dev/null |
	grep -q '"ranks":2'; then
	echo "$name: $train is not the MPI variant (build with mpicc); skipped"
	exit 0
fi

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
