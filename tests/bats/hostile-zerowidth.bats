#!/usr/bin/env bats
# Zero-width tensors and damaged array files (issue 16 follow-up, F1 and F6).
# A tensor of zero-byte rows ([N, 0]) holds nothing, so a tiny file can
# declare any N: every reader (file or pipe, verify, info, export, diff,
# import, .npy, safetensors) refuses more than 2^20 such rows with exit 2
# (scar-ckpt(5)), and work and memory stay small at the limit. A .npy or
# safetensors file whose data does not tile its file exactly is refused by
# the one reader every tool uses. Commands run under timeout and, outside
# sanitizer and valgrind builds, a 1 GB address-space limit, so that a
# regression fails fast instead of swapping.
bats_require_minimum_version 1.5.0
load helper

FX="$SCAR_ROOT/tests/fixtures/zw"

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
}

# bounded CMD...: CMD under a 1 GB address-space limit and a 30 s timeout.
bounded() {
	(
		if [ -z "$SCAR_SANITIZE" ] && [ -z "${SCAR_TEST_WRAPPER:-}" ]; then
			ulimit -v 1000000
		fi
		exec timeout 30 "$@"
	)
}

mk() {
	python3 "$FX/mk-zerowidth.py" "$@"
}

# A valid f32 (3,) .npy of zeros, the pair of npy-trailing-byte.npy.
mk_zeros_npy() {
	python3 - "$1" <<'PY'
import sys
h = b"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }"
h += b" " * (64 - 10 - len(h) - 1) + b"\n"
open(sys.argv[1], "wb").write(b"\x93NUMPY\x01\x00" + bytes([len(h), 0]) + h + bytes(12))
PY
}

@test "zero-width: 1e8 declared rows are refused by every reader, file or pipe" {
	mk 100000000 1 z.ckpt
	[ "$(stat -c %s z.ckpt)" -lt 1000 ]
	for c in "scar-ckpt info z.ckpt" "scar-ckpt verify z.ckpt" \
		 "scar-ckpt export -o x.raw z.ckpt" "scar-ckpt export --format json z.ckpt" \
		 "scar-ckpt convert z.ckpt y.ckpt" "scar-diff z.ckpt z.ckpt"; do
		run -2 bounded $c
		[[ $output == *"100000000 rows of zero bytes, more than the 1048576 allowed"* ]] ||
			{ echo "$c: $output"; false; }
	done
	for c in "scar-ckpt info -" "scar-ckpt verify -" "scar-ckpt export -o x.raw -" \
		 "scar-diff - z.ckpt"; do
		run -2 bounded $c < z.ckpt
		[[ $output == *"rows of zero bytes"* ]] || { echo "$c: $output"; false; }
	done
	[ ! -e y.ckpt ]
}

@test "zero-width: 2^40 rows: the pipe and the file agree" {
	mk $((1 << 40)) 1 z.ckpt
	run -2 bounded scar-ckpt info z.ckpt
	[[ $output == *"1099511627776 rows of zero bytes"* ]]
	run -2 bounded scar-ckpt info - < z.ckpt
	[[ $output == *"1099511627776 rows of zero bytes"* ]]
	run -2 bounded scar-ckpt verify z.ckpt
	[[ $output == *"rows of zero bytes"* ]]
	run -2 bounded scar-ckpt verify - < z.ckpt
	[[ $output == *"rows of zero bytes"* ]]
}

@test "zero-width: 2^33 rows over 4096 shards: scar-diff refuses at once" {
	mk $((1 << 33)) 4096 z.ckpt
	run -2 bounded scar-diff z.ckpt z.ckpt
	[[ $output == *"8589934592 rows of zero bytes"* ]]
}

@test "zero-width: 2^20 rows, the limit, are read, exported and compared in little memory" {
	mk 1048576 4 z.ckpt
	run -0 bounded scar-ckpt verify z.ckpt
	run -0 bounded scar-ckpt info - < z.ckpt
	run -0 bounded scar-ckpt export -o x.raw z.ckpt
	[ "$(stat -c %s x.raw)" -eq 0 ]
	bounded scar-ckpt export --format json -o x.json z.ckpt
	python3 -c 'import json,sys; d=json.load(open("x.json")); assert d["shape"]==[1048576,0] and len(d["data"])==1048576 and d["data"][5]==[]'
	run -0 bounded scar-diff z.ckpt z.ckpt
	run -0 bounded scar-diff - z.ckpt < z.ckpt
	run -0 bounded scar-ckpt convert z.ckpt y.ckpt
	run -0 bounded scar-ckpt verify y.ckpt
}

@test "zero-width: import refuses more than 2^20 rows of zero bytes, and takes the limit" {
	: > empty
	run -0 bounded scar-ckpt import --dtype f32 --shape 1048576,0 -o a.ckpt empty
	run -0 bounded scar-ckpt verify a.ckpt
	run -2 bounded scar-ckpt import --dtype f32 --shape 1048577,0 -o b.ckpt empty
	[[ $output == *"1048577 rows of zero bytes, more than the 1048576 allowed"* ]]
	run -2 bounded scar-ckpt import --dtype u8 --shape 4294967296,3,0 -o b.ckpt empty
	[[ $output == *"rows of zero bytes"* ]]
	[ ! -e b.ckpt ]
}

@test "zero-width: a .npy or safetensors file of 2^40 x 0 is refused by diff and import" {
	for f in zerowidth-2p40x0.npy zerowidth-2p40x0.safetensors; do
		run -2 bounded scar-diff "$FX/$f" "$FX/$f"
		[[ $output == *"1099511627776 rows of zero bytes"* ]] || { echo "$f: $output"; false; }
		run -2 bounded scar-diff - "$FX/$f" < "$FX/$f"
		[[ $output == *"rows of zero bytes"* ]] || { echo "$f: $output"; false; }
		run -2 bounded scar-ckpt import -o x.ckpt "$FX/$f"
		[[ $output == *"rows of zero bytes"* ]] || { echo "$f: $output"; false; }
	done
	[ ! -e x.ckpt ]
}

@test "arrays: a .npy with bytes beyond its shape is damaged for diff as for import" {
	mk_zeros_npy zeros.npy
	run -0 scar-diff zeros.npy zeros.npy
	run -2 bounded scar-diff "$FX/npy-trailing-byte.npy" zeros.npy
	[[ $output == *"1 bytes after the data of tensor"* ]]
	run -2 bounded scar-diff zeros.npy - < "$FX/npy-trailing-byte.npy"
	[[ $output == *"bytes after the data"* ]]
	run -2 bounded scar-ckpt import -o x.ckpt "$FX/npy-trailing-byte.npy"
	[ ! -e x.ckpt ]
}

@test "arrays: safetensors data must tile the file: no trailing bytes, no hole" {
	run -2 bounded scar-diff "$FX/st-trailing-bytes.safetensors" "$FX/st-trailing-bytes.safetensors"
	[[ $output == *"8 bytes after the last tensor's data"* ]]
	run -2 bounded scar-ckpt import -o x.ckpt "$FX/st-trailing-bytes.safetensors"
	[[ $output == *"8 bytes after the last tensor's data"* ]]
	run -2 bounded scar-diff "$FX/st-hole.safetensors" "$FX/st-hole.safetensors"
	[[ $output == *"4 bytes of hole before tensor 'w'"* ]]
	run -2 bounded scar-ckpt import -o x.ckpt "$FX/st-hole.safetensors"
	[[ $output == *"hole"* ]]
	[ ! -e x.ckpt ]
}

@test "arrays: safetensors with empty tensors sharing offsets still read" {
	# z [3,0] and a [2] both start at 0, e [0] and b [1] at 8: one run of 12 bytes
	python3 - <<'PY'
import json, struct
h = {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
     "e": {"dtype": "F32", "shape": [0], "data_offsets": [8, 8]},
     "z": {"dtype": "F32", "shape": [3, 0], "data_offsets": [0, 0]},
     "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}}
j = json.dumps(h).encode()
j += b" " * (-len(j) % 8)
open("m.safetensors", "wb").write(struct.pack("<Q", len(j)) + j + struct.pack("<3f", 1, 2, 3))
PY
	run -0 scar-diff m.safetensors m.safetensors
	run -0 scar-ckpt import -o m.ckpt m.safetensors
	run -0 scar-ckpt verify m.ckpt
}
