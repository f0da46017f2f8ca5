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
