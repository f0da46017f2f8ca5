#!/bin/sh
# bench-ckpt.sh - checkpoint write and read against the lz4 command-line tool
# on the same bytes (issue 2 section 6): a 1 GiB f32 checkpoint of gaussian
# weights in 8 shards (128 MiB with BENCH_QUICK=1), 5 runs each, medians.
#
# write = `scar-ckpt import` of the raw matrix (read raw, compress, write,
# fsync on or off; on 1 and 2 threads, and `dd conv=fsync` of the same
# bytes for the disk's own limit) beside `lz4 -1 raw out.lz4`; read = `scar-ckpt verify`
# (decode and check every section) beside `lz4 -d -c out.lz4 > /dev/null`;
# `cat raw > /dev/null` is the floor. scar sections carry LZ4 block and
# content checksums, so `lz4 -1 -BX` (block checksums on) is the like-for-like peer. All from the page cache. Peak RSS of
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

# median_of CMD...: run CMD $runs times; print the median wall seconds and
# the median CPU (user + system) seconds. CPU time is what to compare when
# the machine is busy with other work.
median_of() {
	i=0
	: > "$out/wall"
	: > "$out/cpu"
	while [ "$i" -lt "$runs" ]; do
		sync	# no writeback of the previous run's output during this one
		s=$(now)
		/usr/bin/time -f '%U %S' -o "$out/t1" "$@"
		e=$(now)
		echo $(((e - s) / 1000)) >> "$out/wall"
		awk '{ print $1 + $2 }' "$out/t1" >> "$out/cpu"
		i=$((i + 1))
	done
	w=$(sort -n "$out/wall" | awk -v n="$runs" 'NR == int((n + 1) / 2) { printf "%.3f", $1 / 1e6 }')
	c=$(sort -n "$out/cpu" | awk -v n="$runs" 'NR == int((n + 1) / 2) { printf "%.2f", $1 }')
	echo "$w $c"
}

t_cat=$(median_of sh -c "cat '$raw' > /dev/null")
t_lz4c=$(median_of lz4 -1 -q -f "$raw" "$lz")
t_lz4d=$(median_of sh -c "lz4 -d -q -c '$lz' > /dev/null")
# The same checksums as a scar section: -BX adds block checksums to the content one.
t_lz4cx=$(median_of lz4 -1 -BX -q -f "$raw" "$lz.x")
t_lz4dx=$(median_of sh -c "lz4 -d -q -c '$lz.x' > /dev/null")
t_wnosync1=$(median_of scar-ckpt import --threads 1 --no-sync --dtype f32 --shape "$rows,$cols" --shards 8 --name w -o "$ck" "$raw")
t_wnosync=$(median_of scar-ckpt import --threads 2 --no-sync --dtype f32 --shape "$rows,$cols" --shards 8 --name w -o "$ck" "$raw")
t_wsync=$(median_of scar-ckpt import --threads 2 --dtype f32 --shape "$rows,$cols" --shards 8 --name w -o "$ck" "$raw")
# The disk's own limit for a durable write of the same number of bytes.
t_dd=$(median_of dd if="$raw" of="$out/w.dd" bs=4M conv=fsync status=none)
rm -f "$out/w.dd"
t_read=$(median_of scar-ckpt verify -q "$ck")
t_info=$(median_of sh -c "scar-ckpt info '$ck' > /dev/null")

rss_verify=$(/usr/bin/time -f %M scar-ckpt verify -q "$ck" 2>&1 >/dev/null | tail -n 1)
rss_info=$(/usr/bin/time -f %M scar-ckpt info "$ck" 2>&1 >/dev/null | tail -n 1)
rss_pipe=$(/usr/bin/time -f %M sh -c "scar-ckpt info - < '$ck' > /dev/null" 2>&1 | tail -n 1)
largest=$(scar-ckpt info --json "$ck" | jq '[.sections[] | .raw_bytes, .stored_bytes] | max')
bound=$(((2 * largest + (16 << 20)) / 1024))

raw_b=$(wc -c < "$raw")
lz_b=$(wc -c < "$lz")
ck_b=$(wc -c < "$ck")

mb() { awk -v b="$raw_b" -v t="$1" 'BEGIN { if (t > 0) printf "%.0f", b / t / 1048576; else printf "-" }'; }
x() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else printf "-" }'; }
# row LABEL WALL CPU [PEER_WALL PEER_CPU PEER_NAME]
row() {
	if [ $# -ge 6 ]; then
		printf '%-32s %8s %7s %6s  %6s %6s  %s\n' "$1" "$2" "$(mb "$2")" "$3" \
			"$(x "$4" "$2")" "$(x "$5" "$3")" "$6"
	else
		printf '%-32s %8s %7s %6s\n' "$1" "$2" "$(mb "$2")" "$3"
	fi
}

printf 'scar checkpoint vs lz4 %s: %d MiB of gaussian f32 in 8 shards, median of %d runs\n' \
	"$(lz4 -V 2>&1 | sed -n 's/.* v\([0-9.]*\).*/\1/p')" $((raw_b >> 20)) "$runs"
printf '%-32s %8s %7s %6s  %6s %6s  %s\n' operation wall_s MiB/s cpu_s wall_x cpu_x "speed relative to"
row "cat raw > /dev/null" $t_cat
row "lz4 -1 raw -> file" $t_lz4c
row "lz4 -1 -BX (block checksums too)" $t_lz4cx
row "dd conv=fsync (the disk's limit)" $t_dd
row "scar write, fsync off, 1 thread" $t_wnosync1 $t_lz4c "lz4 -1"
row "scar write, fsync off, 2 threads" $t_wnosync $t_lz4c "lz4 -1"
row "" $t_wnosync $t_lz4cx "lz4 -1 -BX"
row "scar write, fsync on, 2 threads" $t_wsync $t_lz4c "lz4 -1"
row "" $t_wsync $t_dd "dd conv=fsync"
row "lz4 -d -> /dev/null" $t_lz4d
row "lz4 -d of the -BX file" $t_lz4dx
row "scar read (verify)" $t_read $t_lz4d "lz4 -d"
row "" $t_read $t_lz4dx "lz4 -d, -BX file"
row "scar info (verify + index)" $t_info $t_lz4d "lz4 -d"
printf 'sizes: raw %d, lz4 %d (ratio %s), checkpoint %d (ratio %s)\n' "$raw_b" "$lz_b" \
	"$(x "$raw_b" "$lz_b")" "$ck_b" "$(x "$raw_b" "$ck_b")"
printf 'peak RSS KiB: verify %d, info %d, info from a pipe %d; bound 2 x largest section + 16 MiB = %d: %s\n' \
	"$rss_verify" "$rss_info" "$rss_pipe" "$bound" \
	"$([ "$rss_verify" -le "$bound" ] && [ "$rss_info" -le "$bound" ] && [ "$rss_pipe" -le "$bound" ] &&
		echo within || echo EXCEEDED)"
rm -f "$raw" "$ck" "$lz" "$lz.x" "$out/wall" "$out/cpu" "$out/t1"
