#!/usr/bin/env bats
# A short smoke of every libFuzzer target: each seed and regression input
# (tests/fuzz/corpus, tests/fuzz/regress) runs once under ASan and UBSan.
# `make fuzz` does the real fuzzing.
bats_require_minimum_version 1.5.0
load helper

@test "every fuzz target runs its seeds and regression inputs clean" {
	command -v "${CLANG:-clang}" > /dev/null || skip "clang is not installed: no fuzz smoke (install clang to run it)"
	printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n);\nint LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' > probe.c
	"${CLANG:-clang}" -fsanitize=fuzzer,address,undefined -o probe probe.c 2> probe.err ||
		skip "clang's libFuzzer runtime is missing (e.g. libclang-rt-dev): no fuzz smoke"
	run -0 "$SCAR_ROOT/tests/fuzz/run.sh" --smoke
	echo "$output" | sed 's/^/# /' >&3
	local n
	n=$(ls "$SCAR_ROOT"/tests/fuzz/fuzz-*.c | wc -l)
	[ "$(grep -c ': smoke ok' <<< "$output")" -eq "$n" ]
}
