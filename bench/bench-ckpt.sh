#!/bin/sh
# bench-ckpt.sh - checkpoint write and read against the lz4 command-line tool
# on the same bytes (issue 2 section 6): a 1 GiB f32 checkpoint of gaussian
# weights in 8 shards (128 MiB with BENCH_QUICK=1), 5 runs each, medians.
#
# write = `scar-ckpt import` of the raw matrix (read raw, compress, write,
# fsync on or off) beside `lz4 -1 raw out.lz4`; read = `scar-ckpt verify`
# (decode and check every section) beside `lz4 -d -c out.lz4 > /dev/null`;
# `cat raw > /dev/null` is the floor. All from the page cache. Peak RSS of
# verify and info is held against 2 x the largest section + 16 MiB.
set -eu
cd "$(dirname "$0")/.."
PATH="$PWD:$PATH"
out=bench/out/ckpt
mkdir -p "$out"
runs=${BENCH_RUNS:-5}
if [ "${BENCH_QUICK:-0}" = 1 ]; then size=$((128 << 20)); else size=$((1 << 30)); fi
cols=1024
rows=$((size / 4 / cols))

for t in lz4 jq; do
	command -v "$t" >/dev/null || { echo "bench-ckpt: '$t' not installed (make deps)" >&2; exit 2; }
done
[ -x /usr/bin/time ] || { echo "bench-ckpt: /usr/bin/time not installed (apt-get install time)" >&2; exit 2; }
[ -x tools/mkckpt ] && [ -x scar-ckpt ] || { echo "bench-ckpt: run 'make all' first" >&2; exit 2; }

raw=$out/w.raw
ck=$out/w.ckpt
lz=$out/w.lz4
tools/mkckpt --bytes "$size" --cols "$cols" --no-state --raw "$raw"

now() { date +%s%N; }

# median_of CMD...: run CMD $runs times, print the median wall time in seconds.
median_of() {
	i=0
	: > "$out/times"
	while [ "$i" -lt "$runs" ]; do
		s=$(now)
		"$@"
		e=$(now)
		echo $(((e - s) / 1000)) >> "$out/times"
		i=$((i + 1))
	done
	sort -n "$out/times" | awk -v n="$runs" 'NR == int((n + 1) / 2) { printf "%.3f\n", $1 / 1e6 }'
}

t_cat=$(median_of sh -c "cat '$raw' > /dev/null")
t_lz4c=$(median_of lz4 -1 -q -f "$raw" "$lz")
t_lz4d=$(median_of sh -c "lz4 -d -q -c '$lz' > /dev/null")
t_wnosync=$(median_of scar-ckpt import --no-sync --dtype f32 --shape "$rows,$cols" --shards 8 --name w -o "$ck" "$raw")
t_wsync=$(median_of scar-ckpt import --dtype f32 --shape "$rows,$cols" --shards 8 --name w -o "$ck" "$raw")
t_read=$(median_of scar-ckpt verify -q "$ck")
t_info=$(median_of sh -c "scar-ckpt info '$ck' > /dev/null")

rss_verify=$(/usr/bin/time -f %M scar-ckpt verify -q "$ck" 2>&1 >/dev/null | tail -n 1)
rss_info=$(/usr/bin/time -f %M scar-ckpt info "$ck" 2>&1 >/dev/null | tail -n 1)
largest=$(scar-ckpt info --json "$ck" | jq '[.sections[] | .raw_bytes, .stored_bytes] | max')
bound=$(((2 * largest + (16 << 20)) / 1024))

raw_b=$(wc -c < "$raw")
lz_b=$(wc -c < "$lz")
ck_b=$(wc -c < "$ck")

mb() { awk -v b="$raw_b" -v t="$1" 'BEGIN { printf "%.0f", b / t / 1048576 }'; }
x() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }

printf 'scar checkpoint vs lz4 %s: %d MiB of gaussian f32 in 8 shards, median of %d runs\n' \
	"$(lz4 -V 2>&1 | sed -n 's/.* v\([0-9.]*\).*/\1/p')" $((raw_b >> 20)) "$runs"
printf '%-34s %9s %9s  %s\n' operation seconds MiB/s "speed vs peer"
printf '%-34s %9s %9s  %s\n' "cat raw > /dev/null" "$t_cat" "$(mb "$t_cat")" "(floor)"
printf '%-34s %9s %9s  %s\n' "lz4 -1 raw -> file" "$t_lz4c" "$(mb "$t_lz4c")" "1.00x"
printf '%-34s %9s %9s  %s\n' "scar write, fsync off (import)" "$t_wnosync" "$(mb "$t_wnosync")" "$(x "$t_lz4c" "$t_wnosync") of lz4 -1"
printf '%-34s %9s %9s  %s\n' "scar write, fsync on (import)" "$t_wsync" "$(mb "$t_wsync")" "$(x "$t_lz4c" "$t_wsync") of lz4 -1"
printf '%-34s %9s %9s  %s\n' "lz4 -d -> /dev/null" "$t_lz4d" "$(mb "$t_lz4d")" "1.00x"
printf '%-34s %9s %9s  %s\n' "scar read (verify)" "$t_read" "$(mb "$t_read")" "$(x "$t_lz4d" "$t_read") of lz4 -d"
printf '%-34s %9s %9s  %s\n' "scar info (reads all sections)" "$t_info" "$(mb "$t_info")" "$(x "$t_lz4d" "$t_info") of lz4 -d"
printf 'sizes: raw %d, lz4 %d (ratio %s), checkpoint %d (ratio %s)\n' "$raw_b" "$lz_b" \
	"$(x "$raw_b" "$lz_b")" "$ck_b" "$(x "$raw_b" "$ck_b")"
printf 'peak RSS KiB: verify %d, info %d; bound 2 x largest section + 16 MiB = %d: %s\n' \
	"$rss_verify" "$rss_info" "$bound" \
	"$([ "$rss_verify" -le "$bound" ] && [ "$rss_info" -le "$bound" ] && echo within || echo EXCEEDED)"
rm -f "$raw" "$ck" "$lz" "$out/times"
