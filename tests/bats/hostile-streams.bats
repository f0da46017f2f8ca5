#!/usr/bin/env bats
# Hostile event streams and snapshots (issue 16, items 4, 5, 8, 10 and 11):
# the event reader under valgrind, streams it cannot hold in memory, lines
# without end, damage in sections scar-diff has no use for, non-finite
# values, and names that would drive the terminal.
bats_require_minimum_version 1.5.0
load helper

CORPUS="$SCAR_ROOT/tests/fuzz/corpus/events"

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
}

need_python() {
	command -v python3 >/dev/null || skip "python3 not installed"
}

# The bare tool, for runs that wrap it themselves (valgrind, ulimit -v).
need_bare() {
	[ -z "$SCAR_SANITIZE" ] || skip "sanitizer build: ASan cannot run under valgrind or ulimit -v"
}

# ---- item 4: the event reader under valgrind ----

@test "hostile-streams: a newer stream's version is named right (no use after free)" {
	run -2 --separate-stderr scar-bound fit "$CORPUS/streams-version2.jsonl"
	[[ $stderr == *"event stream version 2 is newer than 1"* ]]
	run -2 --separate-stderr scar-train -m ridge --set n=50 --set d=8 -n 2 --no-timing -q \
		--reference "$CORPUS/streams-version2.jsonl"
	[[ $stderr == *"event stream version 2 is newer than 1"* ]]
}

@test "hostile-streams: the event reader runs clean under valgrind on every hostile stream" {
	command -v valgrind >/dev/null || skip "valgrind not installed: the event reader's memory check needs it"
	need_bare
	local f st fails=0
	scar-train -m ridge --set n=50 --set d=8 -n 4 --no-timing -q --events good.jsonl > /dev/null
	for f in good.jsonl "$CORPUS"/*; do
		st=0
		valgrind -q --error-exitcode=99 --leak-check=full \
			"$SCAR_ROOT/scar-bound" fit "$f" > out.txt 2> err.txt || st=$?
		if [ "$st" != 0 ] && [ "$st" != 2 ]; then
			echo "scar-bound fit $f: exit $st: $(head -c 2000 err.txt)" >&2
			fails=$((fails + 1))
		fi
	done
	st=0
	valgrind -q --error-exitcode=99 --leak-check=full "$SCAR_ROOT/scar-train" -m ridge \
		--set n=50 --set d=8 -n 2 --no-timing -q \
		--reference "$CORPUS/streams-version2.jsonl" > out.txt 2> err.txt || st=$?
	if [ "$st" != 2 ]; then
		echo "scar-train --reference: exit $st: $(head -c 2000 err.txt)" >&2
		fails=$((fails + 1))
	fi
	[ "$fails" = 0 ]
}

# ---- item 5: no stream is cut short silently ----

@test "hostile-streams: /dev/zero is refused at once as a line longer than the limit" {
	run -2 --separate-stderr timeout 20 scar-bound fit /dev/zero
	[ "$stderr" = "scar-bound: /dev/zero:1: line 1 longer than 4194304 bytes" ]
	run -2 --separate-stderr timeout 20 scar-bound fit - < /dev/zero
	[[ $stderr == *":1: line 1 longer than 4194304 bytes" ]]
	run -2 --separate-stderr timeout 20 scar-train -m ridge --set n=50 --set d=8 -n 2 \
		--no-timing -q --reference /dev/zero
	[[ $stderr == *"/dev/zero:1: line 1 longer than 4194304 bytes" ]]
}

@test "hostile-streams: a line at the limit is read, one byte more is refused on its line" {
	need_python
	scar-train -m ridge --set n=50 --set d=8 -n 4 --no-timing -q --events ev.jsonl > /dev/null
	python3 - <<'EOF'
import json
lines = open('ev.jsonl').read().splitlines()
rec = json.loads(lines[2])
rec['pad'] = ''
base = len(json.dumps(rec, separators=(',', ':')))
for name, n in (('at.jsonl', 4194304), ('over.jsonl', 4194305)):
    rec['pad'] = 'x' * (n - base)
    out = list(lines)
    out[2] = json.dumps(rec, separators=(',', ':'))
    assert len(out[2]) == n
    open(name, 'w').write('\n'.join(out) + '\n')
EOF
	run -0 scar-bound fit --json at.jsonl
	run -2 --separate-stderr scar-bound fit over.jsonl
	[ "$stderr" = "scar-bound: over.jsonl:3: line 3 longer than 4194304 bytes" ]
}

@test "hostile-streams: a read error is exit 2 naming the line" {
	mkdir stream.dir
	run -2 --separate-stderr scar-bound fit stream.dir
	[ "$stderr" = "scar-bound: 'stream.dir' is a directory, not a regular file" ]
}

# Under every address-space limit a run either fits all 31 records or fails
# with exit 2 naming the line it could not hold; before, glibc's getline
# said "end of stream" when out of memory, and fit used the 10 lines before.
@test "hostile-streams: out of memory is exit 2 naming the line, never a shorter fit" {
	need_python
	need_bare
	[ -z "${SCAR_TEST_WRAPPER:-}" ] || skip "under $SCAR_TEST_WRAPPER the address space is the wrapper's"
	local v st lo=0 oom=0 full=0 fails=0
	scar-train -m ridge --set n=50 --set d=8 -n 30 --no-timing -q --events ev.jsonl > /dev/null
	python3 - <<'EOF'
import json
lines = open('ev.jsonl').read().splitlines()
assert len(lines) == 34
for name, pad in (('str.jsonl', 'x' * (3 << 20)), ('arr.jsonl', [0] * (1 << 20))):
    out = list(lines)
    rec = json.loads(out[11])
    rec['pad'] = pad
    out[11] = json.dumps(rec, separators=(',', ':'))
    open(name, 'w').write('\n'.join(out) + '\n')
EOF
	# The least address space in which the tool starts at all.
	for v in $(seq 1000 1000 64000); do
		if (ulimit -v "$v"; "$SCAR_ROOT/scar-bound" --version) > /dev/null 2>&1; then
			lo=$v
			break
		fi
	done
	[ "$lo" != 0 ]
	for f in str.jsonl arr.jsonl; do
		for v in $(seq "$lo" 5000 $((lo + 150000))); do
			st=0
			(ulimit -v "$v"; exec "$SCAR_ROOT/scar-bound" fit --json "$f") > out.txt 2> err.txt || st=$?
			if [ "$st" = 0 ] && grep -q '"iterations":31,' out.txt; then
				full=$((full + 1))
			elif [ "$st" = 2 ] && grep -q "^scar-bound: $f:[0-9]*: line [0-9]*: out of memory$" err.txt; then
				oom=$((oom + 1))
			else
				echo "$f under ulimit -v $v: exit $st: $(head -c 300 out.txt) $(head -c 300 err.txt)" >&2
				fails=$((fails + 1))
			fi
		done
	done
	echo "full fits $full, out of memory $oom" >&2
	[ "$fails" = 0 ]
	[ "$oom" -gt 0 ]
	[ "$full" -gt 0 ]
}

# ---- item 8: scar-diff checks every section of both inputs ----

@test "hostile-streams: scar-diff exits 2 on a flip in any section, the state sections too" {
	need_python
	scar-train -m mlr --set n=300 --set n_test=50 --set d=4 -n 2 --shards 4 --no-timing -q \
		--save m.ckpt > /dev/null
	scar-ckpt info --json m.ckpt > info.json
	python3 - <<'EOF'
import json
info = json.load(open('info.json'))
data = open('m.ckpt', 'rb').read()
roles = {t['name']: t['role'] for t in info['tensors']}
state = 0
for s in info['sections']:
    state += roles[s['tensor']] == 'state'
    for where, off in (('header', s['offset'] + 20),
                       ('payload', s['offset'] + 48 + s['stored_bytes'] // 2),
                       ('end', s['offset'] + 48 + s['stored_bytes'] - 1)):
        b = bytearray(data)
        b[off] ^= 0x10
        open('flip-%d-%s-%s.ckpt' % (s['section'], s['tensor'], where), 'wb').write(b)
assert state >= 3, state
EOF
	local f st fails=0 n=0
	for f in flip-*.ckpt; do
		n=$((n + 1))
		for args in "m.ckpt $f" "$f m.ckpt" "--all m.ckpt $f" "--tensor weights $f m.ckpt"; do
			st=0
			# shellcheck disable=SC2086
			scar-diff -q $args 2> err.txt || st=$?
			if [ "$st" != 2 ] || ! grep -q "^scar-diff: " err.txt; then
				echo "scar-diff $args: exit $st: $(cat err.txt)" >&2
				fails=$((fails + 1))
			fi
		done
		st=0
		scar-diff -q "$f" - < m.ckpt 2> err.txt || st=$?
		[ "$st" = 2 ] || { echo "scar-diff $f - (stdin): exit $st" >&2; fails=$((fails + 1)); }
		st=0
		scar-diff -q - "$f" < m.ckpt 2> err.txt || st=$?
		[ "$st" = 2 ] || { echo "scar-diff - $f (stdin): exit $st" >&2; fails=$((fails + 1)); }
	done
	[ "$n" -ge 21 ]
	[ "$fails" = 0 ]
	run -0 scar-diff -q m.ckpt m.ckpt
}

# ---- item 11: non-finite values ----

# npy NAME TYPE HEX...: a 1-D .npy of little-endian f4 or f8 elements given as bit patterns.
npy() {
	python3 - "$@" <<'EOF'
import struct, sys
name, t, *vals = sys.argv[1:]
hdr = "{'descr': '<%s', 'fortran_order': False, 'shape': (%d,), }" % (t, len(vals))
hdr += ' ' * ((64 - (10 + len(hdr) + 1) % 64) % 64) + '\n'
fmt = '<I' if t == 'f4' else '<Q'
with open(name, 'wb') as f:
    f.write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(hdr)) + hdr.encode())
    for v in vals:
        f.write(struct.pack(fmt, int(v, 16)))
EOF
}

# nonfinite TYPE A B EXIT L2 CHANGED [TOL]: five-element arrays, all 1.0 but
# element 4 (the vector kernel's tail) and element 1 (inside its lanes),
# which are A in the first file and B in the second.
nonfinite() {
	local t=$1 a=$2 b=$3 want=$4 l2=$5 changed=$6 tol=${7:-0} one
	if [ "$t" = f4 ]; then one=3f800000; else one=3ff0000000000000; fi
	npy a.npy "$t" "$one" "$a" "$one" "$one" "$a"
	npy b.npy "$t" "$one" "$b" "$one" "$one" "$b"
	run --separate-stderr scar-diff --text --tolerance "$tol" a.npy b.npy
	if [ "$status" != "$want" ] || [[ $output != *"total      l2 $l2 "*"changed $changed/5"* ]]; then
		echo "$t $a vs $b (tolerance $tol): exit $status, expected $want, l2 $l2, changed $changed:" >&2
		echo "$output $stderr" >&2
		return 1
	fi
	[[ $output != *"-nan"* ]]
}

@test "hostile-streams: scar-diff's non-finite semantics, f32 and f64" {
	need_python
	# f32
	nonfinite f4 7f800000 7f800000 0 0 0		# same +Inf: equal
	nonfinite f4 ff800000 ff800000 0 0 0		# same -Inf
	nonfinite f4 7f800000 40000000 1 inf 2		# Inf vs 2: inf
	nonfinite f4 7f800000 40000000 1 inf 2 1e300
	nonfinite f4 7f800000 ff800000 1 inf 2		# +Inf vs -Inf
	nonfinite f4 7fc00001 7fc00001 0 0 0		# NaN, same bits: equal
	nonfinite f4 7fc00001 7fc00002 1 nan 2		# NaN, other payload
	nonfinite f4 ffc00000 7fc00000 1 nan 2		# NaN, other sign
	nonfinite f4 7f800001 7fc00001 1 nan 2		# signalling vs quiet NaN
	nonfinite f4 7fc00000 40000000 1 nan 2		# NaN vs 2
	nonfinite f4 7fc00000 40000000 1 nan 2 1e300
	nonfinite f4 7f800000 7fc00000 1 nan 2		# Inf vs NaN
	nonfinite f4 80000000 00000000 1 0 2		# -0 vs +0: bits differ, by 0
	nonfinite f4 80000000 00000000 0 0 2 1e-9	# ... within any tolerance
	# f64
	nonfinite f8 7ff0000000000000 7ff0000000000000 0 0 0
	nonfinite f8 7ff0000000000000 4000000000000000 1 inf 2
	nonfinite f8 7ff0000000000000 fff0000000000000 1 inf 2
	nonfinite f8 7ff8000000000001 7ff8000000000001 0 0 0
	nonfinite f8 7ff8000000000001 7ff8000000000002 1 nan 2
	nonfinite f8 7ff8000000000000 4000000000000000 1 nan 2
	nonfinite f8 8000000000000000 0000000000000000 1 0 2
	nonfinite f8 8000000000000000 0000000000000000 0 0 2 1e-9
}

@test "hostile-streams: identical files holding Inf and NaN are equal, in JSON too" {
	need_python
	npy a.npy f4 7f800000 ff800000 7fc00000 3f800000 7f800000
	cp a.npy b.npy
	run -0 --separate-stderr scar-diff --text a.npy b.npy
	[[ $output == *"total      l2 0 "*"rel_l2 0 "*"changed 0/5"* ]]
	[ "${lines[-1]}" = equal ]
	run -0 --separate-stderr scar-diff --json a.npy b.npy
	[[ $output == *'"l2":0.0,'* ]]
	[[ $output == *'"differ":false'* ]]
	# Inf against a finite value: JSON has no infinity, so null, and it differs.
	npy b.npy f4 7f800000 ff800000 7fc00000 3f800000 3f800000
	run -1 --separate-stderr scar-diff --json a.npy b.npy
	[[ $output == *'"l2":null,'* ]]
	[[ $output == *'"changed":1,'* ]]
	[[ $output == *'"differ":true'* ]]
}

# ---- item 10: names from files are quoted for the terminal ----

@test "hostile-streams: scar-diff --text quotes tensor names and paths; JSON keeps them exact" {
	need_python
	python3 - <<'EOF'
import json, struct
def st(name, tensors):
    hdr = {}
    data = b''
    for t, vals in tensors:
        hdr[t] = {'dtype': 'F32', 'shape': [len(vals)], 'data_offsets': [len(data), len(data) + 4 * len(vals)]}
        data += struct.pack('<%df' % len(vals), *vals)
    h = json.dumps(hdr).encode()
    h += b' ' * ((8 - len(h) % 8) % 8)
    open(name, 'wb').write(struct.pack('<Q', len(h)) + h + data)
evil = '\x1b]0;pwned\x07w\nx.ckpt: ok'
st('a\x1b[2J.safetensors', [(evil, [1.0, 2.0]), ('only\x1bA', [1.0])])
st('b.safetensors', [(evil, [1.0, 3.0]), ('only\x9bB', [1.0])])
EOF
	run -1 --separate-stderr scar-diff --text --per row $'a\e[2J.safetensors' b.safetensors
	[[ $output != *$'\e'* ]]
	[[ $output != *$'\a'* ]]
	[[ $output != *$'\xc2\x9b'* ]]
	[[ $output == *'\e]0;pwned\x07w\nx.ckpt: ok'* ]]
	[[ $output == *"'a\\e[2J.safetensors'"* ]]
	[[ $output == *"tensor 'only\\eA' only in A"* ]]
	[[ $output == *"tensor 'only\\xc2\\x9bB' only in B"* ]]
	# every line of the report is one of its own, none forged
	! grep -q '^x.ckpt: ok' <<< "$output"
	run -1 --separate-stderr scar-diff --json $'a\e[2J.safetensors' b.safetensors
	[[ $output == *'"name":"\u001B]0;pwned\u0007w\nx.ckpt: ok"'* ]]
}

@test "hostile-streams: damage messages quote what the stream holds" {
	printf '{"type":"header","format":"scar-events","version":1}\n{"type":"iteration","iter":"\e]0;x\a"}\n{"type":"iteration" \e[2J}\n' > esc.jsonl
	run -2 --separate-stderr scar-bound fit esc.jsonl
	[[ $stderr == "scar-bound: esc.jsonl:"* ]]
	[[ $stderr != *$'\e'* ]]
	[[ $stderr != *$'\a'* ]]
}
