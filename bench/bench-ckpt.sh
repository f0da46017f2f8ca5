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
# verify and info is held against 2 x the largest section + 16 MiB, that of
# verify on N threads against N x 2 blocks + 16 MiB, that of the write
# against its mapped input + N x 4 blocks + 16 MiB.
#
# Before every timed run 3 x the raw size of tmpfs is filled and freed
# (BENCH_WARM=0: not): on a VM that hands free memory back to its host
# (virtio-balloon free page reporting) the first touch of such a page is a
# fault in the host, which made whichever command came after an idle spell
# up to 3x slower in system time. The warm-up gives every command the same
# start; it is not timed.
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

warm_mb=$((3 * size >> 20))
if [ "${BENCH_WARM:-1}" = 0 ] || [ ! -w /dev/shm ] ||
   [ "$(awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo 2>/dev/null || echo 0)" -lt $((2 * warm_mb)) ]; then
	warm_mb=0
fi
warm() {
	[ "$warm_mb" -gt 0 ] || return 0
	dd if=/dev/zero of=/dev/shm/bench-ckpt-warm.$$ bs=1M count="$warm_mb" status=none
	rm -f /dev/shm/bench-ckpt-warm.$$
}
trap 'rm -f /dev/shm/bench-ckpt-warm.$$' EXIT

# median_of CMD...: run CMD $runs times; print the median wall seconds and
# the median CPU (user + system) seconds. CPU time is what to compare when
# the machine is busy with other work.
median_of() {
	i=0
	: > "$out/wall"
	: > "$out/cpu"
	while [ "$i" -lt "$runs" ]; do
		sync	# no writeback of the previous run's output during this one
		warm
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
t_read1=$(median_of scar-ckpt verify --threads 1 -q "$ck")
t_read=$(median_of scar-ckpt verify --threads 2 -q "$ck")
t_info=$(median_of sh -c "scar-ckpt info --threads 2 '$ck' > /dev/null")

rss_verify1=$(/usr/bin/time -f %M scar-ckpt verify --threads 1 -q "$ck" 2>&1 >/dev/null | tail -n 1)
rss_verify=$(/usr/bin/time -f %M scar-ckpt verify --threads 2 -q "$ck" 2>&1 >/dev/null | tail -n 1)
rss_info=$(/usr/bin/time -f %M scar-ckpt info --threads 2 "$ck" 2>&1 >/dev/null | tail -n 1)
rss_write=$(/usr/bin/time -f %M scar-ckpt import --threads 2 --no-sync --dtype f32 --shape "$rows,$cols" \
	--shards 8 --name w -o "$ck" "$raw" 2>&1 >/dev/null | tail -n 1)
rss_pipe=$(/usr/bin/time -f %M sh -c "scar-ckpt info - < '$ck' > /dev/null" 2>&1 | tail -n 1)
largest=$(scar-ckpt info --json "$ck" | jq '[.sections[] | .raw_bytes, .stored_bytes] | max')
bound=$(((2 * largest + (16 << 20)) / 1024))
block=$((4 << 20))
bound_verify=$(((2 * 2 * block + (16 << 20)) / 1024))

raw_b=$(wc -c < "$raw")
bound_write=$(((raw_b + 2 * 4 * block + (16 << 20)) / 1024))
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
row "scar read (verify), 1 thread" $t_read1 $t_lz4d "lz4 -d"
row "scar read (verify), 2 threads" $t_read $t_lz4d "lz4 -d"
row "" $t_read $t_lz4dx "lz4 -d, -BX file"
row "scar info, 2 threads" $t_info $t_lz4d "lz4 -d"
printf 'sizes: raw %d, lz4 %d (ratio %s), checkpoint %d (ratio %s)\n' "$raw_b" "$lz_b" \
	"$(x "$raw_b" "$lz_b")" "$ck_b" "$(x "$raw_b" "$ck_b")"
within() { [ "$1" -le "$2" ] && echo within || echo EXCEEDED; }
printf 'peak RSS KiB: verify 1 thread %d, 2 threads %d, info 2 threads %d, info from a pipe %d;\n' \
	"$rss_verify1" "$rss_verify" "$rss_info" "$rss_pipe"
printf '  bound 2 x largest section + 16 MiB = %d: %s; 2 threads x 2 blocks + 16 MiB = %d: %s\n' \
	"$bound" "$(within "$(printf '%s\n' "$rss_verify1" "$rss_verify" "$rss_info" "$rss_pipe" | sort -n | tail -n 1)" "$bound")" \
	"$bound_verify" "$(within "$rss_verify" "$bound_verify")"
printf 'peak RSS KiB: write on 2 threads %d; bound the mapped input + 2 threads x 4 blocks + 16 MiB = %d: %s\n' \
	"$rss_write" "$bound_write" "$(within "$rss_write" "$bound_write")"
rm -f "$raw" "$ck" "$lz" "$lz.x" "$out/wall" "$out/cpu" "$out/t1"
