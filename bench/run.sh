#!/bin/sh
# run.sh - `make bench`: every bench/bench-*.sh in turn. Each prints its
# figures (medians of repeated runs) beside the peer it is compared to, and
# the ratio. Set BENCH_QUICK=1 for smaller inputs.
set -eu
cd "$(dirname "$0")/.."
mkdir -p bench/out
status=0
for b in bench/bench-*.sh; do
	[ -f "$b" ] || continue
	echo "== $b"
	sh "$b" || { echo "bench: $b failed" >&2; status=1; }
done
exit $status
