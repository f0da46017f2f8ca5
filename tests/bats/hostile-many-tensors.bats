#!/usr/bin/env bats
# Files with very many tensors (campaign A, F5): every tool must stay near
# linear in the number of tensors. Names were checked for duplicates and
# tensors paired by name with linear searches, so 200k tiny tensors took
# minutes (quadratic); they now take seconds. Each step gets a generous
# `timeout`: a behaviour test (it finishes), not a timing measurement.
bats_require_minimum_version 1.5.0
load helper

# Seconds per step: generous, and more under a sanitizer.
TMO=30
N=100000
M=50000
# A sanitizer build checks memory, not speed: fewer tensors, more time.
[ -z "$SCAR_SANITIZE" ] || { TMO=120; N=5000; M=2500; }

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
	command -v python3 > /dev/null || skip "python3 is not installed"
	[ -z "${SCAR_TEST_WRAPPER:-}" ] || skip "too slow under $SCAR_TEST_WRAPPER"
}

# mkst N OUT [FIRST]: a safetensors file of N one-element f32 tensors
# tFIRST..t(FIRST+N-1), tensor i holding the value i.
mkst() {
	python3 - "$1" "$2" "${3:-0}" <<'PY'
import json, struct, sys
n, out, first = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
h = {"t%d" % (first + i): {"dtype": "F32", "shape": [1], "data_offsets": [4 * i, 4 * i + 4]}
     for i in range(n)}
h["__metadata__"] = {"scar.role.t1": "state"}
b = json.dumps(h, separators=(",", ":")).encode()
b += b" " * (-len(b) % 8)
with open(out, "wb") as f:
    f.write(struct.pack("<Q", len(b)) + b)
    f.write(struct.pack("<%df" % n, *range(n)))
PY
}

@test "100k tensors: safetensors import, then verify, info, convert, diff, export" {
	mkst "$N" m.safetensors
	run timeout "$TMO" scar-ckpt import --no-sync -o m.ckpt m.safetensors
	assert_success
	run timeout "$TMO" scar-ckpt verify m.ckpt
	assert_success
	run timeout "$TMO" scar-ckpt info m.ckpt
	assert_success
	assert_output --partial "t$((N - 1))"
	run timeout "$TMO" scar-ckpt convert --no-sync --no-compress m.ckpt c.ckpt
	assert_success
	run timeout "$TMO" scar-diff -q m.ckpt c.ckpt
	assert_success
	run timeout "$TMO" scar-diff -q m.safetensors m.ckpt
	assert_success
	run timeout "$TMO" scar-ckpt export --tensor t1234 --format json m.ckpt
	assert_success
	assert_output --partial "1234"
	# the role the file's metadata gives survived
	run timeout "$TMO" scar-ckpt info --json m.ckpt
	assert_success
	assert_output --partial '"name":"t1","dtype":"f32","role":"state"'
}

@test "many tensors: a duplicate name is still found, the first and the last" {
	mkst "$M" m.safetensors
	mkst 1 first.safetensors
	mkst 1 last.safetensors $((M - 1))
	mkst 2 new.safetensors "$M"
	run timeout "$TMO" scar-ckpt import --no-sync -o m.ckpt m.safetensors first.safetensors
	assert_failure 2
	assert_output --partial "duplicate tensor name 't0'"
	run timeout "$TMO" scar-ckpt import --no-sync -o m.ckpt m.safetensors last.safetensors
	assert_failure 2
	assert_output --partial "duplicate tensor name 't$((M - 1))'"
	run timeout "$TMO" scar-ckpt import --no-sync -o m.ckpt m.safetensors new.safetensors
	assert_success
	run scar-diff -q --tensor t$((M + 1)) --tensor t7 m.ckpt m.ckpt
	assert_success
	run scar-diff -q --tensor t$((M + 2)) m.ckpt m.ckpt
	assert_failure 2
	assert_output --partial "no tensor 't$((M + 2))'"
}
