#!/bin/sh
# bench-diff.sh - scar-diff against its peers (issue 5), on generated data:
#
#  1. uncompressed arrays: `scar-diff A.npy B.npy` against numpy,
#     bench/peers/diff_numpy.py (np.load both, np.linalg.norm(a - b)), whole
#     processes timed alike. Target: scar-diff at least 2x faster.
#  2. compressed checkpoints (8 shards, LZ4): `scar-diff A.ckpt B.ckpt`
#     against `lz4 -d` of the same two payloads framed as checkpoint sections
#     are (4 MiB blocks, block and content checksums), once on random floats
#     (LZ4 stores them) and once on bf16-rounded floats (which compress).
#     Target: at least 0.8x the speed of lz4.
#
# Wall-clock medians of BENCH_RUNS runs (default 5) after one warm-up run,
# side by side with the ratio; with /usr/bin/time, also CPU-time (user +
# system) medians, which a busy machine disturbs less. BENCH_QUICK=1 uses 1e7 instead of 5e7
# elements per array. The numpy peer runs with Debian's /usr/bin/python3 and
# without OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE.
set -eu
cd "$(dirname "$0")/.."
PY=/usr/bin/python3
runs=${BENCH_RUNS:-5}
if [ -n "${BENCH_QUICK:-}" ]; then rows=10000; else rows=50000; fi
cols=1000
dir=bench/out/diff
mkdir -p "$dir"

peer() {
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$@"
}

for t in "$PY" lz4 ./scar-diff ./scar-ckpt; do
	command -v "$t" >/dev/null 2>&1 || { echo "bench-diff: '$t' not found, skipped" >&2; exit 0; }
done
peer "$PY" -c 'import numpy' 2>/dev/null || { echo "bench-diff: numpy not found, skipped" >&2; exit 0; }

# ---- data ----
if [ ! -f "$dir/q-b-$rows.raw" ]; then
	echo "generating ${rows}x${cols} f32 arrays in $dir" >&2
	peer "$PY" - "$dir" "$rows" "$cols" <<'EOF'
import sys
import numpy as np
d, r, c = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(1)
a = rng.standard_normal((r, c), dtype=np.float32)
b = a + rng.standard_normal((r, c), dtype=np.float32) * np.float32(1e-3)
for name, x in (("a", a), ("b", b)):
    np.save(f"{d}/{name}-{r}.npy", x)
    x.tofile(f"{d}/{name}-{r}.raw")
    q = (x.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
    np.save(f"{d}/q-{name}-{r}.npy", q)
    q.tofile(f"{d}/q-{name}-{r}.raw")
EOF
	for p in "" q-; do
		for s in a b; do
			./scar-ckpt import --name w --shards 8 --no-sync -o "$dir/$p$s-$rows.ckpt" \
				"$dir/$p$s-$rows.npy"
			lz4 -q -f -1 -B7 -BX "$dir/$p$s-$rows.raw" "$dir/$p$s-$rows.lz4"
		done
	done
fi

# "WALL CPU": median wall and CPU seconds of command "$@" (a program, not a
# shell function) over $runs runs after one warm-up; CPU is "-" without
# /usr/bin/time. Exit status 1 is fine (scar-diff: they differ).
timeit() {
	"$@" >/dev/null 2>&1 || [ $? -eq 1 ]
	: >"$dir/times"
	: >"$dir/cpu"
	i=0
	while [ $i -lt "$runs" ]; do
		s=$(date +%s%N)
		if [ -x /usr/bin/time ]; then
			/usr/bin/time -o "$dir/one" -f '%U %S' "$@" >/dev/null 2>&1 || [ $? -eq 1 ]
			tail -n 1 "$dir/one" | awk '{ print $1 + $2 }' >>"$dir/cpu"
		else
			"$@" >/dev/null 2>&1 || [ $? -eq 1 ]
		fi
		e=$(date +%s%N)
		echo $(((e - s) / 1000)) >>"$dir/times"
		i=$((i + 1))
	done
	w=$(sort -n "$dir/times" | awk '{ v[NR] = $1 } END { printf "%.3f", v[int((NR + 1) / 2)] / 1e6 }')
	c=$(sort -g "$dir/cpu" | awk '{ v[NR] = $1 } END { if (NR) printf "%.3f", v[int((NR + 1) / 2)]; else print "-" }')
	echo "$w $c"
}

# row LABEL "SCAR_WALL SCAR_CPU" "PEER_WALL PEER_CPU" TARGET
row() {
	set -- "$1" $2 $3 "$4"
	printf '%-34s %8ss %8ss %6.2fx   %8ss %8ss %6s   %s\n' "$1" "$2" "$4" \
		"$(echo "$4 $2" | awk '{ print $1 / $2 }')" "$3" "$5" \
		"$(echo "$5 $3" | awk '$2 > 0 { printf "%.2fx", $1 / $2; next } { print "-" }')" "$6"
}

rss() {
	if [ -x /usr/bin/time ]; then
		/usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1
	else
		echo "?"
	fi
}

A=$dir/a-$rows
B=$dir/b-$rows
elems=$((rows * cols))
echo "scar-diff bench: two f32 arrays of ${rows}x${cols} ($elems elements, $((elems * 4 / 1048576)) MiB each), $runs runs"
l2=$(./scar-diff --json "$A.npy" "$B.npy" | peer "$PY" -c 'import json, sys; print(json.load(sys.stdin)["l2"])')
np=$(peer "$PY" bench/peers/diff_numpy.py "$A.npy" "$B.npy")
echo "l2: scar-diff $l2; numpy $np"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"

printf '%-34s %9s %9s %7s   %9s %9s %6s   %s\n' case "scar wall" "peer wall" ratio \
	"scar cpu" "peer cpu" ratio "target (peer/scar)"
row "npy uncompressed vs numpy" "$(timeit ./scar-diff "$A.npy" "$B.npy")" \
	"$(timeit env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$PY" bench/peers/diff_numpy.py \
		"$A.npy" "$B.npy")" ">= 2"
for p in "" q-; do
	A=$dir/${p}a-$rows
	B=$dir/${p}b-$rows
	row "ckpt lz4 ${p:+bf16-rounded }vs lz4 -d" "$(timeit ./scar-diff "$A.ckpt" "$B.ckpt")" \
		"$(timeit sh -c 'lz4 -d -c "$1" >/dev/null && lz4 -d -c "$2" >/dev/null' _ \
			"$A.lz4" "$B.lz4")" ">= 0.8"
done
A=$dir/a-$rows
B=$dir/b-$rows
sec=$((elems * 4 / 8 / 1024))
echo "max RSS of scar-diff on the checkpoints: $(rss ./scar-diff "$A.ckpt" "$B.ckpt") KiB" \
	"(bound: two sections + 16 MiB = $((2 * sec + 16384)) KiB)"
echo "max RSS of scar-diff on the arrays: $(rss ./scar-diff "$A.npy" "$B.npy") KiB"
