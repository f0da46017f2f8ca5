#!/bin/sh
# run.sh - build the libFuzzer targets (tests/fuzz/fuzz-*.c) against the
# library with ASan and UBSan, and run them.
#
#   tests/fuzz/run.sh [--smoke] [--build-only] [TARGET...]
#
# Default: each target fuzzes for FUZZ_SECONDS (60) from a copy of its seed
# corpus (tests/fuzz/corpus/TARGET) plus its regression inputs
# (tests/fuzz/regress/TARGET), FUZZ_JOBS (the number of CPUs) targets at a
# time. New findings go to tests/fuzz/bin/crashes/TARGET/, logs to
# tests/fuzz/bin/log/. --smoke runs every seed and regression input once
# instead (a few seconds in all), which is what `make check` does.
# Exit status: 0 clean, 1 a target crashed, leaked or timed out, 2 no
# fuzzer toolchain or a build failure.
set -u
cd "$(dirname "$0")/../.." || exit 2

smoke=0
build_only=0
targets=
for a in "$@"; do
	case $a in
	--smoke) smoke=1 ;;
	--build-only) build_only=1 ;;
	-h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "run.sh: unknown option '$a'" >&2; exit 2 ;;
	*) targets="$targets ${a#fuzz-}" ;;
	esac
done
[ -n "$targets" ] || targets=$(for f in tests/fuzz/fuzz-*.c; do f=${f##*/fuzz-}; echo "${f%.c}"; done)

CLANG=${CLANG:-clang}
BIN=tests/fuzz/bin
SEC=${FUZZ_SECONDS:-60}
JOBS=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
DEFS="-std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -DSCAR_VERSION=\"fuzz\" -Iinclude -O1 -g"

if ! command -v "$CLANG" >/dev/null 2>&1; then
	echo "run.sh: no '$CLANG' found; install clang to fuzz" >&2
	exit 2
fi
mkdir -p "$BIN/obj" "$BIN/log"
probe=$BIN/obj/probe
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n);\nint LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' > "$probe.c"
if ! "$CLANG" -fsanitize=fuzzer,address,undefined -o "$probe" "$probe.c" 2>"$probe.err"; then
	echo "run.sh: clang cannot link libFuzzer (the fuzzer runtime, e.g. libclang-rt-dev, is missing)" >&2
	exit 2
fi

# The library, instrumented once (JOBS compilers at a time); rebuilt when a
# source or any header is newer than its object.
objs=
n=0
fail=$BIN/obj/failed
rm -f "$fail"
for src in lib/*.c; do
	o=$BIN/obj/$(basename "$src" .c).o
	if [ ! -f "$o" ] || [ "$src" -nt "$o" ] ||
	    [ -n "$(find include/scar lib -name '*.h' -newer "$o" | head -1)" ]; then
		# shellcheck disable=SC2086
		{ "$CLANG" $DEFS $SAN -fsanitize=fuzzer-no-link -c -o "$o.tmp" "$src" &&
			mv "$o.tmp" "$o"; } || : > "$fail" &
		n=$((n + 1))
		[ $((n % JOBS)) -ne 0 ] || wait
	fi
	objs="$objs $o"
done
wait
[ ! -f "$fail" ] || { echo "run.sh: building the library failed" >&2; exit 2; }
for t in $targets; do
	[ -f "tests/fuzz/fuzz-$t.c" ] || { echo "run.sh: no target 'fuzz-$t'" >&2; exit 2; }
	# shellcheck disable=SC2086
	"$CLANG" -std=c11 -D_GNU_SOURCE -Iinclude -O1 -g $SAN -fsanitize=fuzzer \
		-o "$BIN/fuzz-$t" "tests/fuzz/fuzz-$t.c" $objs -ljansson -llz4 -lz -lm || exit 2
done
[ "$build_only" = 1 ] && exit 0

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:allocator_may_return_null=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
# Allocations must be bounded by what the input can hold: a single malloc
# of more than 256 MB from inputs of at most a few hundred KB is a finding.
LIMITS="-rss_limit_mb=2048 -malloc_limit_mb=256 -timeout=20"

run_one() {
	t=$1
	log=$BIN/log/fuzz-$t.log
	dirs=
	for d in tests/fuzz/corpus/$t tests/fuzz/regress/$t; do
		[ -d "$d" ] && dirs="$dirs $d"
	done
	if [ "$smoke" = 1 ]; then
		# shellcheck disable=SC2086
		if "$BIN/fuzz-$t" $LIMITS -runs=0 $dirs >"$log" 2>&1; then
			echo "fuzz-$t: smoke ok ($(cat $dirs/* 2>/dev/null | wc -c | tr -d ' ') bytes of inputs)"
			return 0
		fi
		echo "fuzz-$t: FAILED on a seed or regression input; see $log" >&2
		tail -40 "$log" >&2
		return 1
	fi
	work=$BIN/corpus/$t
	mkdir -p "$work" "$BIN/crashes/$t"
	# shellcheck disable=SC2086
	[ -n "$dirs" ] && for d in $dirs; do cp -n "$d"/* "$work"/ 2>/dev/null; done
	# shellcheck disable=SC2086
	"$BIN/fuzz-$t" $LIMITS -max_total_time="$SEC" -print_final_stats=1 \
		-artifact_prefix="$BIN/crashes/$t/" "$work" >"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	found=$(ls "$BIN/crashes/$t" | wc -l | tr -d ' ')
	echo "fuzz-$t: ${execs:-?} executions in ${SEC}s, corpus $(ls "$work" | wc -l | tr -d ' ') inputs, $found finding(s) in $BIN/crashes/$t, exit $rc"
	[ "$rc" = 0 ]
}

status=0
if [ "$smoke" = 1 ] || [ "$JOBS" -le 1 ]; then
	for t in $targets; do
		run_one "$t" || status=1
	done
else
	# A few targets at a time, one per CPU.
	running=0
	pids=
	for t in $targets; do
		run_one "$t" &
		pids="$pids $!"
		running=$((running + 1))
		if [ "$running" -ge "$JOBS" ]; then
			for p in $pids; do wait "$p" || status=1; done
			pids=
			running=0
		fi
	done
	for p in $pids; do wait "$p" || status=1; done
fi
exit $status
