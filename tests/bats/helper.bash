# helper.bash - loaded by every bats file: finds the built binaries and
# test libraries, and gives each test a scratch directory.

SCAR_ROOT="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
export SCAR_ROOT
PATH="$SCAR_ROOT:$PATH"
export PATH

# bats-support and bats-assert from Debian's packages.
for d in /usr/lib/bats /usr/lib/bats-core /usr/share/bats; do
	if [ -f "$d/bats-support/load.bash" ]; then
		load "$d/bats-support/load.bash"
		load "$d/bats-assert/load.bash"
		break
	fi
done

# A sanitizer build (`make check SANITIZE=address,undefined`) names its
# sanitizers in sanitize.stamp (Makefile). Tests that link C programs against
# lib/libscar.a add $SCAR_SANFLAGS, for the sanitizer runtime the library
# calls. Sanitizer reports exit 99 (as valgrind-check's do), so that none
# passes for a tool's 1, a "no" answer.
SCAR_SANITIZE=
if [ -r "$SCAR_ROOT/sanitize.stamp" ]; then
	read -r SCAR_SANITIZE < "$SCAR_ROOT/sanitize.stamp" || SCAR_SANITIZE=
fi
SCAR_SANFLAGS=${SCAR_SANITIZE:+-fsanitize=$SCAR_SANITIZE}
export SCAR_SANITIZE SCAR_SANFLAGS
if [ -n "$SCAR_SANITIZE" ]; then
	# verify_asan_link_order=0: tests/fault-shim.so is preloaded ahead of
	# the ASan runtime; it defines no allocation function, and its calls go
	# on through ASan's interceptors (dlsym RTLD_NEXT), so the order is
	# harmless. fast_unwind_on_malloc=0: whole stacks through libraries
	# built without frame pointers (jansson, Open MPI), so that a leak names
	# its caller and tests/lsan-thirdparty.supp can match Open MPI's own.
	export ASAN_OPTIONS="exitcode=99:verify_asan_link_order=0:fast_unwind_on_malloc=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
	export LSAN_OPTIONS="exitcode=99:suppressions=$SCAR_ROOT/tests/lsan-thirdparty.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
	export UBSAN_OPTIONS="exitcode=99:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
fi

# Under `make valgrind-check` every scar tool runs through the wrapper.
if [ -n "${SCAR_TEST_WRAPPER:-}" ]; then
	for p in scar-train scar-ckpt scar-diff scar-bound scar-inject; do
		eval "$p() { $SCAR_TEST_WRAPPER \"$SCAR_ROOT/$p\" \"\$@\"; }"
	done
fi

FIXTURES="$SCAR_ROOT/tests/fixtures"
export FIXTURES

# Where real data lives after `make data` (tools/fetch-data.sh).
SCAR_DATA="${SCAR_DATA:-${XDG_CACHE_HOME:-$HOME/.cache}/scar}"
export SCAR_DATA

need_data() {
	if [ ! -e "$SCAR_DATA/$1" ]; then
		skip "real data '$1' not found under $SCAR_DATA (run 'make data')"
	fi
}

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
}
