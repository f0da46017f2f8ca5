#!/usr/bin/env bats
# Hostile checkpoints against the reader and scar-ckpt(5) (issue 16, items 3
# and 12 and the independent reader's questions): a few hundred bytes that
# declare gigabytes, data after the trailer on a pipe, and each point the
# page settles: mislabelled bitmaps, flag combinations, unknown roles, empty
# tensors, the JSON limits, required keys, the LZ4 frame bound and the order
# of checks. Every file is built here, byte by byte, by a small Python
# writer that knows only the page; tools/ckpt-reader-indep must agree with
# scar-ckpt verify on each.
bats_require_minimum_version 1.5.0
load helper

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
	command -v python3 > /dev/null || skip "python3 is not installed"
	cat > mk.py <<'PY'
import json, struct, sys
T = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
    T.append(c)
def crc(b):
    c = 0xFFFFFFFF
    for x in b:
        c = T[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF
M = 0xFFFFFFFF
P1, P2, P3, P4, P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
rot = lambda x, r: ((x << r) | (x >> (32 - r))) & M
def xxh32(b, seed=0):
    n, i = len(b), 0
    if n >= 16:
        v = [(seed + P1 + P2) & M, (seed + P2) & M, seed, (seed - P1) & M]
        while i + 16 <= n:
            for k in range(4):
                v[k] = (rot((v[k] + struct.unpack_from("<I", b, i + 4 * k)[0] * P2) & M, 13) * P1) & M
            i += 16
        h = (rot(v[0], 1) + rot(v[1], 7) + rot(v[2], 12) + rot(v[3], 18)) & M
    else:
        h = (seed + P5) & M
    h = (h + n) & M
    while i + 4 <= n:
        h = (rot((h + struct.unpack_from("<I", b, i)[0] * P3) & M, 17) * P4) & M
        i += 4
    while i < n:
        h = (rot((h + b[i] * P5) & M, 11) * P1) & M
        i += 1
    h ^= h >> 15; h = (h * P2) & M; h ^= h >> 13; h = (h * P3) & M; h ^= h >> 16
    return h
def lz4(raw, blocks):
    """An LZ4 frame of raw in stored (uncompressed) blocks of the given sizes."""
    d = bytes([0x7C, 0x40]) + struct.pack("<Q", len(raw))
    out = struct.pack("<I", 0x184D2204) + d + bytes([(xxh32(d) >> 8) & 0xFF])
    at = 0
    for n in blocks:
        b = raw[at:at + n]; at += n
        out += struct.pack("<I", n | 0x80000000) + b + struct.pack("<I", xxh32(b))
    return out + struct.pack("<II", 0, xxh32(raw))
def shuffle(b, e):
    """scar-ckpt(5), Byte shuffle: byte j of element i to j * m + i, a partial element kept."""
    m = len(b) // e
    out = bytearray(b)
    for i in range(m):
        for j in range(e):
            out[j * m + i] = b[i * e + j]
    return bytes(out)
def lz4s(raw, blocks, e, content=None):
    """As lz4(), each block's content shuffled; the content checksum of the shuffled bytes."""
    d = bytes([0x7C, 0x40]) + struct.pack("<Q", len(raw))
    out = struct.pack("<I", 0x184D2204) + d + bytes([(xxh32(d) >> 8) & 0xFF])
    at, s = 0, b""
    for n in blocks:
        b = shuffle(raw[at:at + n], e); at += n; s += b
        out += struct.pack("<I", n | 0x80000000) + b + struct.pack("<I", xxh32(b))
    return out + struct.pack("<II", 0, xxh32(s if content is None else content))
def meta(tensors, kind="full", drop=(), raw=None, **kw):
    m = {"format": "scar-ckpt", "version": 1, "model": "", "iteration": 0, "shards": 1,
         "shard_rule": "row mod shards", "kind": kind, "config": {}, "extra": {},
         "tensors": tensors}
    m.update(kw)
    for k in drop:
        del m[k]
    return json.dumps(m, separators=(",", ":")).encode()
def ten(rows, present="all", dtype="u8", role="param", shape=None):
    return {"name": "w", "dtype": dtype, "role": role,
            "shape": [rows] if shape is None else shape, "rows": rows, "present": present}
def ckpt(mj, sections=(), minor=0, tail=b"", tflags=0):
    h = b"\x89SCARCK\n" + struct.pack("<HH", 1, minor)
    out = h + struct.pack("<I", crc(h)) + struct.pack("<II", len(mj), crc(mj)) + mj
    idx = b""
    for (nrows, raw, flags, reserved, stored) in sections:
        if stored is None:
            stored = raw + struct.pack("<I", crc(raw))
        sh = b"SCSE" + struct.pack("<IIIQQQI", 0, 0, flags, nrows, len(raw), len(stored), reserved)
        idx += struct.pack("<IIQQQQ", 0, 0, len(out), nrows, len(raw), len(stored))
        out += sh + struct.pack("<I", crc(sh)) + stored
    io = len(out)
    ib = b"SCIX" + struct.pack("<I", len(sections)) + idx
    out += ib + struct.pack("<I", crc(ib))
    tr = struct.pack("<QQI", io, len(out) + 32, tflags)
    return out + tr + struct.pack("<I", crc(tr)) + b"SCAREND\n" + tail
def sec(raw=b"abcd", flags=0, reserved=0, stored=None):
    return (len(raw), raw, flags, reserved, stored)
def w(name, data):
    open(name, "wb").write(data)
good = meta([ten(4)])
w("good.ckpt", ckpt(good, [sec()]))
# item 3: 313 bytes, one u8 tensor of 4e9 rows, none present
w("bomb.ckpt", ckpt(meta([ten(4000000000, [])], kind="partial")))
# item 12: one byte, or a few, after the trailer
w("tail1.ckpt", ckpt(good, [sec()], tail=b"\0"))
w("tail7.ckpt", ckpt(good, [sec()], tail=b"GARBAGE"))
w("tail-ckpt.ckpt", ckpt(good, [sec()]) * 2)
# damaged (verify exits 1)
w("bad-bitmap-in-1.0.ckpt", ckpt(meta([ten(4, {"bitmap": "Dw=="})]), [sec()], minor=0))
w("bad-empty-bitmap-in-1.0.ckpt", ckpt(meta([ten(0, {"bitmap": ""})])))
w("bad-int-2^63.ckpt", ckpt(meta([ten(4)], iteration=2**63), [sec()]))
w("bad-int-2^64-extra.ckpt", ckpt(meta([ten(4)], extra={"x": 2**64}), [sec()]))
w("bad-int-below-2^63.ckpt", ckpt(meta([ten(4)], extra={"x": -2**63 - 1}), [sec()]))
w("bad-nul-value.ckpt", ckpt(meta([ten(4)], extra={"x": "a\0b"}), [sec()]))
w("bad-nul-key.ckpt", ckpt(meta([ten(4)], extra={"a\0b": 1}), [sec()]))
w("bad-lone-surrogate.ckpt", ckpt(meta([ten(4)]).replace(b'"extra":{}', b'"extra":{"x":"\\ud800"}'), [sec()]))
w("bad-low-surrogate.ckpt", ckpt(meta([ten(4)]).replace(b'"extra":{}', b'"extra":{"x":"\\udc00x"}'), [sec()]))
w("bad-depth-2049.ckpt", ckpt(meta([ten(4)]).replace(b'"extra":{}', b'"extra":{"d":' + b"[" * 2047 + b"]" * 2047 + b"}"), [sec()]))
w("bad-real-iteration.ckpt", ckpt(meta([ten(4)]).replace(b'"iteration":0', b'"iteration":7.0'), [sec()]))
w("bad-exp-shards.ckpt", ckpt(meta([ten(4)]).replace(b'"shards":1', b'"shards":1e0'), [sec()]))
w("bad-real-rows.ckpt", ckpt(meta([ten(4)]).replace(b'"rows":4', b'"rows":4.0'), [sec()]))
for k in ("version", "model", "iteration", "shards", "shard_rule", "kind", "config", "extra", "tensors"):
    w("bad-no-%s.ckpt" % k, ckpt(meta([ten(4)], drop=(k,)), [sec()]))
for k in ("name", "dtype", "role", "shape", "rows", "present"):
    t = ten(4); del t[k]
    w("bad-tensor-no-%s.ckpt" % k, ckpt(meta([t]), [sec()]))
w("bad-no-format.ckpt", ckpt(meta([ten(4)], drop=("format",)), [sec()]))
raw = bytes(range(256)) * 3
w("bad-lz4-514-blocks.ckpt", ckpt(meta([ten(514)]), [sec(raw[:514], flags=1, stored=lz4(raw[:514], [1] * 514))]))
# unsupported (verify exits 2)
w("unsup-bcode-without-lz4.ckpt", ckpt(good, [sec(flags=2)]))
w("unsup-bcode3-without-lz4.ckpt", ckpt(good, [sec(flags=6)]))
w("unsup-flag-bit3.ckpt", ckpt(good, [sec(flags=8)]))
w("unsup-reserved.ckpt", ckpt(good, [sec(reserved=1)]))
w("unsup-trailer-flags.ckpt", ckpt(good, [sec()], tflags=1))
w("unsup-role.ckpt", ckpt(meta([ten(4, role="optimizer")]), [sec()]))
w("unsup-dtype.ckpt", ckpt(meta([ten(4, dtype="f8")]), [sec()]))
# f16 and bf16 are 1.2 dtypes: in a file that says 1.0 or 1.1, unknown, as to a 1.1 reader
w("unsup-f16-in-1.1.ckpt", ckpt(meta([ten(2, dtype="f16")]), [sec()], minor=1))
w("unsup-bf16-in-1.0.ckpt", ckpt(meta([ten(2, dtype="bf16")]), [sec()], minor=0))
w("unsup-shard-rule.ckpt", ckpt(meta([ten(4)], shard_rule="row div shards"), [sec()]))
# order of checks: the first failing check decides
w("order-unsup-flags-before-raw-len.ckpt", ckpt(good, [(4, b"abcde", 8, 0, None)]))
w("order-unsup-trailer-before-tail.ckpt", ckpt(good, [sec()], tflags=1, tail=b"x"))
w("order-role-before-shape.ckpt", ckpt(meta([ten(4, role="optimizer", shape=[4, -1])]), [sec()]))
# 1.3: the byte shuffle; blocks of 7, 50 and 43 bytes end in partial i32 elements
i32 = struct.pack("<25i", *[k * k - 300 for k in range(25)])
u64 = struct.pack("<8Q", *[k << 40 | k for k in range(8)])
w("ok-shuffle-i32.ckpt", ckpt(meta([ten(25, dtype="i32")]), [(25, i32, 9, 0, lz4s(i32, [7, 50, 43], 4))], minor=3))
w("ok-shuffle-u64.ckpt", ckpt(meta([ten(8, dtype="u64")]), [(8, u64, 9, 0, lz4s(u64, [24, 40], 8))], minor=3))
w("unsup-shuffle-in-1.2.ckpt", ckpt(meta([ten(25, dtype="i32")]), [(25, i32, 9, 0, lz4s(i32, [100], 4))], minor=2))
w("unsup-shuffle-u8.ckpt", ckpt(good, [sec(b"abcd", flags=9, stored=lz4s(b"abcd", [4], 1))], minor=3))
w("unsup-shuffle-without-lz4.ckpt", ckpt(good, [sec(flags=8)], minor=3))
w("unsup-flag-bit4-lz4.ckpt", ckpt(meta([ten(25, dtype="i32")]), [(25, i32, 0x11, 0, lz4(i32, [100]))], minor=3))
# the content checksum is of the shuffled bytes: one of the unshuffled ones is damage
w("bad-shuffle-unshuffled-checksum.ckpt", ckpt(meta([ten(25, dtype="i32")]), [(25, i32, 9, 0, lz4s(i32, [100], 4, content=i32))], minor=3))
# intact (verify exits 0)
w("ok-zero-rows-all.ckpt", ckpt(meta([ten(0)])))
w("ok-zero-rows-list.ckpt", ckpt(meta([ten(0, [])])))
w("ok-zero-rows-bitmap.ckpt", ckpt(meta([ten(0, {"bitmap": ""})]), minor=1))
w("ok-bitmap-in-1.1.ckpt", ckpt(meta([ten(4, {"bitmap": "Dw=="})]), [sec()], minor=1))
w("ok-minor-7.ckpt", ckpt(good, [sec()], minor=7))
# 1.2: "abcd" is f16 0x6261 0x6463 (816.5 and 1123), bf16 the top halves of binary32
w("ok-f16-in-1.2.ckpt", ckpt(meta([ten(2, dtype="f16")]), [(2, b"abcd", 0, 0, None)], minor=2))
w("ok-bf16-in-1.2.ckpt", ckpt(meta([ten(2, dtype="bf16")]), [(2, b"\x80\x3f\xc0\x7f", 0, 0, None)], minor=2))
w("ok-int-2^63-1.ckpt", ckpt(meta([ten(4)], extra={"x": 2**63 - 1, "y": -2**63}), [sec()]))
w("ok-surrogate-pair.ckpt", ckpt(meta([ten(4)]).replace(b'"extra":{}', b'"extra":{"x":"\\ud83d\\ude00"}'), [sec()]))
w("ok-depth-2048.ckpt", ckpt(meta([ten(4)]).replace(b'"extra":{}', b'"extra":{"d":' + b"[" * 2046 + b"]" * 2046 + b"}"), [sec()]))
w("ok-lz4-513-blocks.ckpt", ckpt(meta([ten(513)]), [sec(raw[:513], flags=1, stored=lz4(raw[:513], [1] * 513))]))
w("ok-lz4-short-blocks.ckpt", ckpt(meta([ten(700)]), [sec(raw[:700], flags=1, stored=lz4(raw[:700], [100] * 7))]))
PY
	python3 mk.py
}

# The test binaries, not wrappers: under `ulimit -v` valgrind cannot run.
bare() {
	local p=$1
	shift
	"$SCAR_ROOT/$p" "$@"
}

@test "item 3: a 313-byte checkpoint declaring 4e9 rows is refused by every loading tool, quickly, with a message" {
	[ -z "$SCAR_SANITIZE" ] || skip "the sanitizers' shadow memory does not fit under ulimit -v"
	[ "$(stat -c %s bomb.ckpt)" -eq 313 ]
	# It is a valid file: verify, info and export stream it in no memory.
	run -0 scar-ckpt verify bomb.ckpt
	# 2 GB of address space: a tool that tried to allocate the tensor would
	# fail with a bare "out of memory" (or swap, without the limit). Standard
	# input is a pipe, so "-" streams and scar-diff of two pipes loads whole.
	for cmd in "scar-ckpt convert bomb.ckpt out.ckpt" \
		   "scar-ckpt convert --shards 3 - out.ckpt" \
		   "scar-ckpt apply bomb.ckpt good.ckpt -o out.ckpt" \
		   "scar-inject --lose-count 1 bomb.ckpt out.ckpt" \
		   "scar-inject --lose-count 1 - out.ckpt" \
		   "scar-train --resume bomb.ckpt -n 1 -q" \
		   "scar-diff - <(cat bomb.ckpt)"; do
		st=0
		bash -c "ulimit -v 2000000; cat bomb.ckpt | timeout 20 \"\$0\"/$cmd > out.txt 2> err.txt" \
			"$SCAR_ROOT" || st=$?
		echo "$cmd: exit $st: $(cat err.txt)"
		[ "$st" -eq 2 ]
		grep -q "^${cmd%% *}: .*loading needs [0-9]* bytes of memory (8000000000 bytes of tensors and present maps.*), more than the [0-9]* bytes available" err.txt
	done
	# The streaming commands need no more than the file.
	( ulimit -v 2000000; bare scar-ckpt verify bomb.ckpt && bare scar-ckpt info bomb.ckpt > /dev/null &&
	  bare scar-ckpt export --tensor w -o w.npy bomb.ckpt && bare scar-diff bomb.ckpt bomb.ckpt > /dev/null )
}

@test "item 3: scar-inject counts the copies it keeps: four times the table against the limit" {
	[ -z "$SCAR_SANITIZE" ] || skip "the sanitizers' shadow memory does not fit under ulimit -v"
	# 600 MB of table: convert (x1) loads it under 2 GB, inject (x4) refuses.
	python3 -c "
exec(open('mk.py').read().split('good = ')[0])
w('mid.ckpt', ckpt(meta([ten(300000000, [[0, 1]])], kind='partial'), [sec(b'a')]))"
	( ulimit -v 2000000; bare scar-ckpt convert mid.ckpt out.ckpt )
	run -2 bash -c 'ulimit -v 2000000; exec "$0" --lose-count 1 mid.ckpt out.ckpt' "$SCAR_ROOT/scar-inject"
	[[ $output == *"loading needs 2400000000 bytes of memory (600000000 bytes of tensors and present maps, times 4)"* ]]
}

# piped CODE FILE PROG ARGS...: PROG reads FILE from a pipe, exits CODE and
# says that data follows the trailer.
piped() {
	local want=$1 f=$2 st=0
	shift 2
	cat "$f" | "$@" > out.txt 2> err.txt || st=$?
	[ "$st" -eq "$want" ] || { echo "$f | $*: exit $st, want $want: $(cat err.txt)"; return 1; }
	grep -Eq "^$1: '(\(stdin\)|-)': offset [0-9]+: data after the trailer" err.txt ||
		{ echo "$f | $*: $(cat err.txt)"; return 1; }
}

@test "item 12: data after the trailer is refused from a pipe as from a file, by every reading command" {
	for f in tail1.ckpt tail7.ckpt tail-ckpt.ckpt; do
		run -1 scar-ckpt verify "$f"
		[[ $output == *"garbage after the trailer"* ]]
		piped 1 "$f" scar-ckpt verify -
		piped 2 "$f" scar-ckpt info -
		piped 2 "$f" scar-ckpt convert - out.ckpt
		[ ! -e out.ckpt ]
		piped 2 "$f" scar-ckpt export --tensor w -o w.npy -
		piped 2 "$f" scar-diff - good.ckpt
		piped 2 "$f" scar-inject --lose-count 1 - out.ckpt
		piped 2 "$f" scar-train --resume - -n 1 -q
		cat "$f" | { run -1 "$SCAR_ROOT/tools/ckpt-reader-indep" -; }
	done
	# and the intact file still passes everywhere
	cat good.ckpt | scar-ckpt verify -
	cat good.ckpt | scar-ckpt convert - out.ckpt
	cat good.ckpt | scar-diff - good.ckpt
}

# verify each file of a class from a path and from a pipe, and check that
# the independent reader gives the same exit status.
classify() {
	local want=$1 f st
	shift
	for f in "$@"; do
		[ -e "$f" ] || { echo "no file $f"; return 1; }
		st=0; scar-ckpt verify "$f" > out.txt 2> err.txt || st=$?
		[ "$st" -eq "$want" ] || { echo "$f: verify exit $st, want $want: $(cat err.txt)"; return 1; }
		st=0; scar-ckpt verify - < "$f" > out.txt 2> err.txt || st=$?
		[ "$st" -eq "$want" ] || { echo "$f: verify - exit $st, want $want: $(cat err.txt)"; return 1; }
		st=0; "$SCAR_ROOT/tools/ckpt-reader-indep" "$f" > out.txt 2> err.txt || st=$?
		[ "$st" -eq "$want" ] || { echo "$f: ckpt-reader-indep exit $st, want $want: $(cat err.txt)"; return 1; }
	done
}

@test "spec: a 1.0-labelled file with a present bitmap is corrupt; 1.1 reads it" {
	classify 1 bad-bitmap-in-1.0.ckpt bad-empty-bitmap-in-1.0.ckpt
	run -1 scar-ckpt verify bad-bitmap-in-1.0.ckpt
	[[ $output == *"present bitmap in a version 1.0 file"* ]]
	classify 0 ok-bitmap-in-1.1.ckpt ok-minor-7.ckpt
}

@test "spec: f16 and bf16 are format 1.2; in a 1.0 or 1.1 file they are unsupported, as to a 1.1 reader" {
	classify 2 unsup-f16-in-1.1.ckpt unsup-bf16-in-1.0.ckpt
	run -2 scar-ckpt verify unsup-f16-in-1.1.ckpt
	[[ $output == *"tensor 'w' has dtype 'f16' in a version 1.1 file (it needs 1.2)"* ]]
	classify 0 ok-f16-in-1.2.ckpt ok-bf16-in-1.2.ckpt
	# the independent reader's numbers are scar's
	[ "$("$SCAR_ROOT/tools/ckpt-reader-indep" ok-f16-in-1.2.ckpt | tail -2)" = "$(printf 'w 0 816.5\nw 1 1123')" ]
	[ "$("$SCAR_ROOT/tools/ckpt-reader-indep" ok-bf16-in-1.2.ckpt | tail -2)" = "$(printf 'w 0 1\nw 1 nan')" ]
	[ "$(scar-ckpt export --format json ok-f16-in-1.2.ckpt | jq -c .data)" = '[[816.5],[1123]]' ]
	[ "$(scar-ckpt export --format json ok-bf16-in-1.2.ckpt | jq -c .data)" = '[[1],[null]]' ]
}

@test "spec: the unsupported class is exit 2 of verify, for every member, and the reason is named" {
	classify 2 unsup-*.ckpt
	run -2 scar-ckpt verify unsup-bcode-without-lz4.ckpt
	[[ $output == *"unknown flags 0x2"* ]]
	run -2 scar-ckpt verify unsup-role.ckpt
	[[ $output == *"unknown role 'optimizer'"* ]]
	# a damaged file is 1, an unsupported one 2, the worst of several 2
	run -2 scar-ckpt verify -q bad-real-rows.ckpt unsup-role.ckpt good.ckpt
}

@test "spec: a rows=0 tensor may say \"all\", [] or (in 1.1) an empty bitmap, and is not partial" {
	classify 0 ok-zero-rows-*.ckpt
	for f in ok-zero-rows-*.ckpt; do
		run -0 scar-ckpt info --json "$f"
		[[ $output == *'"kind":"full"'* ]]
		run -0 scar-ckpt convert "$f" out.ckpt
		run -0 scar-ckpt verify out.ckpt
	done
}

@test "spec: JSON limits: integers beyond 64 bits, \\u0000, lone surrogates and depth over 2048 are corrupt" {
	classify 1 bad-int-*.ckpt bad-nul-*.ckpt bad-*-surrogate.ckpt bad-depth-2049.ckpt
	classify 0 ok-int-2^63-1.ckpt ok-surrogate-pair.ckpt ok-depth-2048.ckpt
}

@test "spec: every metadata key is required, and 7.0 is not an integer" {
	classify 1 bad-no-*.ckpt bad-tensor-no-*.ckpt bad-real-*.ckpt bad-exp-*.ckpt
	run -1 scar-ckpt verify bad-real-iteration.ckpt
	[[ $output == *"bad iteration"* ]]
	run -1 scar-ckpt verify bad-no-format.ckpt
	[[ $output == *"format"* ]]
}

@test "spec: the LZ4 frame bound: 513 one-byte blocks are within it and read, 514 are corrupt" {
	classify 0 ok-lz4-513-blocks.ckpt ok-lz4-short-blocks.ckpt
	classify 1 bad-lz4-514-blocks.ckpt
	run -1 scar-ckpt verify bad-lz4-514-blocks.ckpt
	[[ $output == *"stored length 4649 is impossible for 514 raw bytes"* ]]
	scar-ckpt export --tensor w --format raw -o w.raw ok-lz4-513-blocks.ckpt
	[ "$(stat -c %s w.raw)" -eq 513 ]
}

@test "spec: the byte shuffle (1.3) as the page defines it, odd blocks and tails included" {
	classify 0 ok-shuffle-i32.ckpt ok-shuffle-u64.ckpt
	python3 -c "
import struct, sys
sys.stdout.buffer.write(struct.pack('<25i', *[k * k - 300 for k in range(25)]))" > want.raw
	scar-ckpt export --tensor w --format raw -o got.raw ok-shuffle-i32.ckpt
	cmp want.raw got.raw
	cat ok-shuffle-i32.ckpt | scar-ckpt export --tensor w --format raw -o got.raw -
	cmp want.raw got.raw
	[ "$("$SCAR_ROOT/tools/ckpt-reader-indep" ok-shuffle-i32.ckpt | tail -1)" = \
		"w 24 276" ]
	[ "$(scar-ckpt export --format json ok-shuffle-u64.ckpt | jq -c '.data[7]')" = '[7696581394439]' ]
	[ "$("$SCAR_ROOT/tools/ckpt-reader-indep" ok-shuffle-u64.ckpt | tail -1)" = "w 7 7696581394439" ]
	scar-ckpt info ok-shuffle-i32.ckpt | grep -q ' shuffle+lz4$'
	# what a 1.2 reader (scar before 1.3) does with a shuffled section: unsupported, exit 2
	classify 2 unsup-shuffle-*.ckpt unsup-flag-bit4-lz4.ckpt
	run -2 scar-ckpt verify unsup-shuffle-in-1.2.ckpt
	[[ $output == *"section 0 (tensor 'w', shard 0): byte shuffle (flag 0x8) in a file below version 1.3"* ]]
	run -2 scar-ckpt verify unsup-shuffle-u8.ckpt
	[[ $output == *"byte shuffle (flag 0x8) of 1-byte elements"* ]]
	run -2 scar-ckpt verify unsup-flag-bit4-lz4.ckpt
	[[ $output == *"unknown flags 0x11"* ]]
	classify 1 bad-shuffle-unshuffled-checksum.ckpt
	run -1 scar-ckpt verify bad-shuffle-unshuffled-checksum.ckpt
	[[ $output == *"content checksum mismatch"* ]]
}

@test "spec: the order of checks decides the class of a file with several problems" {
	classify 2 order-unsup-flags-before-raw-len.ckpt order-unsup-trailer-before-tail.ckpt \
		order-role-before-shape.ckpt
}

@test "the hostile files of this file are in the fuzz seed corpora" {
	for f in bomb tail7 bad-bitmap-in-1.0 unsup-bcode-without-lz4 bad-lz4-514-blocks ok-lz4-513-blocks; do
		cmp "$f.ckpt" "$SCAR_ROOT/tests/fuzz/corpus/ckpt-stream/reader-$f.ckpt"
	done
	for f in tail7 bad-bitmap-in-1.0 unsup-bcode-without-lz4 bad-lz4-514-blocks ok-lz4-513-blocks; do
		cmp "$f.ckpt" "$SCAR_ROOT/tests/fuzz/corpus/ckpt-load/reader-$f.ckpt"
	done
	for f in ok-f16-in-1.2 ok-bf16-in-1.2 unsup-f16-in-1.1 ok-shuffle-i32 unsup-shuffle-in-1.2 \
		 bad-shuffle-unshuffled-checksum; do
		cmp "$f.ckpt" "$SCAR_ROOT/tests/fuzz/corpus/ckpt-load/reader-$f.ckpt"
		cmp "$f.ckpt" "$SCAR_ROOT/tests/fuzz/corpus/ckpt-stream/reader-$f.ckpt"
	done
}
