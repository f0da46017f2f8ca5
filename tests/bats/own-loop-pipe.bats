#!/usr/bin/env bats
# SCAR for your own training loop, long-running (issue 19): scar-ckpt save
# --stream reads the loop's snapshots from a pipe and writes exactly what
# one call per snapshot writes; and scar-bound fit on the minimal stream
# with step_norm.
bats_require_minimum_version 1.5.0
load helper

# scar-train's snapshots of its own trajectory as safetensors s0 .. sN,
# each with its iteration in __metadata__ scar.iteration (scar-ckpt export).
snapshots() {
	local n=$1 k
	scar-train -q --no-timing -m mlr -n 1 --checkpoint-dir A0 --no-sync > /dev/null
	cp A0/ckpt-0000000000.ckpt s0.ckpt
	for k in $(seq 1 "$n"); do
		scar-train -q --no-timing -m mlr -n "$k" --save "s$k.ckpt" > /dev/null
	done
	for k in $(seq 0 "$n"); do
		scar-ckpt export "s$k.ckpt" -o "s$k.safetensors"
	done
}

# Snapshots without metadata, of a loop that is not scar-train: a decaying
# walk of two tensors, as safetensors (p0.safetensors ..) or .npy (its one
# tensor; pK/array.npy): gen FORMAT N [ROWS]
gen() {
	/usr/bin/python3 - "$@" <<'PY'
import json, os, struct, sys
import numpy as np
fmt, n = sys.argv[1], int(sys.argv[2])
rows = int(sys.argv[3]) if len(sys.argv) > 3 else 12
rng = np.random.default_rng(7)
w = rng.standard_normal((rows, 3)).astype(np.float32)
b = rng.standard_normal(rows).astype(np.float64)
for k in range(n + 1):
    if fmt == "npy":
        os.makedirs(f"p{k}", exist_ok=True)
        np.save(f"p{k}/array.npy", w)
    else:
        h, off, blobs = {}, 0, []
        for name, a, dt in (("w", w, "F32"), ("b", b, "F64")):
            by = a.tobytes()
            h[name] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [off, off + len(by)]}
            blobs.append(by)
            off += len(by)
        js = json.dumps(h).encode()
        with open(f"p{k}.safetensors", "wb") as f:
            f.write(struct.pack("<Q", len(js)) + js + b"".join(blobs))
    w = (w * 0.8 + 0.1 * rng.standard_normal(w.shape)).astype(np.float32)
    b = b * 0.9 + 0.05 * rng.standard_normal(b.shape)
PY
}

# No temporary, and every checkpoint of DIR intact.
intact() {
	! ls -A "$1" | grep -q '\.tmp\.'
	scar-ckpt verify -q "$1"/ckpt-*.ckpt "$1"/.scar-view.ckpt
}

OPTS="--no-sync --fraction 1/4 --interval 4 --shards 8"

@test "--stream writes byte for byte the files and events of one call per snapshot, for every policy" {
	snapshots 9
	for pol in priority random round-robin full; do
		rm -rf B C
		for k in $(seq 0 9); do
			scar-ckpt save $OPTS --policy "$pol" --iteration "$k" "s$k.safetensors" B
		done > evB.jsonl
		cat s{0..9}.safetensors | scar-ckpt save $OPTS --policy "$pol" --stream - C > evC.jsonl
		cmp evB.jsonl evC.jsonl
		diff -r B C
		[ "$(ls -A C | grep -c '^ckpt-')" = "$(wc -l < evC.jsonl)" ]
	done
	# a stream picks up a directory where calls left it, and the other way round
	rm -rf B C
	for k in 0 1 2; do scar-ckpt save $OPTS --policy priority --iteration "$k" "s$k.safetensors" B; done > evB.jsonl
	cat s{3..6}.safetensors | scar-ckpt save $OPTS --policy priority --stream - B >> evB.jsonl
	for k in 7 8 9; do scar-ckpt save $OPTS --policy priority --iteration "$k" "s$k.safetensors" B; done >> evB.jsonl
	cat s{0..9}.safetensors | scar-ckpt save $OPTS --policy priority --stream - C > evC.jsonl
	cmp evB.jsonl evC.jsonl
	diff -r B C
}

@test "--stream without metadata: --iteration N for the first, one more each; .npy too; a file operand" {
	gen safetensors 9
	rm -rf B C D
	for k in $(seq 0 9); do
		scar-ckpt save $OPTS --policy priority --iteration $((k + 5)) "p$k.safetensors" B
	done > evB.jsonl
	cat p{0..9}.safetensors | scar-ckpt save $OPTS --policy priority --iteration 5 --stream - C > evC.jsonl
	cmp evB.jsonl evC.jsonl
	diff -r B C
	cat p{0..9}.safetensors > all.st
	scar-ckpt save $OPTS --policy priority --iteration 5 --stream all.st D > evD.jsonl
	cmp evB.jsonl evD.jsonl
	diff -r B D
	# the first snapshot's iteration is needed
	run -2 scar-ckpt save $OPTS --policy priority --stream all.st E
	[[ "$output" == *"snapshot 1 has no __metadata__ scar.iteration: give the first snapshot's iteration with --iteration N"* ]]
	rm -rf p* B C
	gen npy 9
	for k in $(seq 0 9); do
		scar-ckpt save $OPTS --policy round-robin --iteration "$k" "p$k/array.npy" B
	done > evB.jsonl
	cat p{0..9}/array.npy | scar-ckpt save $OPTS --policy round-robin --iteration 0 --stream - C > evC.jsonl
	cmp evB.jsonl evC.jsonl
	diff -r B C
}

@test "--stream: each event is out as soon as its snapshot is handled" {
	snapshots 4
	mkfifo in
	scar-ckpt save $OPTS --policy priority --stream - C < in > ev.jsonl &
	pid=$!
	exec 7> in
	lines() { local t; for t in $(seq 1 200); do [ "$(wc -l < ev.jsonl)" -ge "$1" ] && return 0; sleep 0.05; done; return 1; }
	cat s0.safetensors >&7
	lines 1
	cat s1.safetensors >&7
	lines 2
	cat s2.safetensors s3.safetensors s4.safetensors >&7
	lines 5
	exec 7>&-
	wait "$pid"
	[ "$(wc -l < ev.jsonl)" = 5 ]
	intact C
}

@test "--stream: the stream ending inside a snapshot is exit 2 naming it and the byte; earlier ones intact" {
	snapshots 3
	cat s{0..2}.safetensors > ok.st
	size=$(stat -c %s ok.st)
	{ cat ok.st; head -c 1000 s3.safetensors; } > cut.st
	run -2 --separate-stderr scar-ckpt save $OPTS --policy priority --stream - C < cut.st
	[[ "$stderr" == "scar-ckpt: '-': offset $((size + 1000)): snapshot 4 (from byte $size): the stream ends inside its tensor "* ]]
	[ "$(echo "$output" | grep -c '"type":"checkpoint"')" = 3 ]
	intact C
	# and the directory goes on from there, as if the call for snapshot 4 had not happened
	for k in 0 1 2 3; do scar-ckpt save $OPTS --policy priority --iteration "$k" "s$k.safetensors" B; done > /dev/null
	scar-ckpt save $OPTS --policy priority --stream - C < s3.safetensors > /dev/null
	diff -r B C
	# inside the first 9 bytes, the header, the data
	for cut in 5 20 $(($(stat -c %s s3.safetensors) - 1)); do
		rm -rf D
		head -c "$cut" s3.safetensors > c.st
		run -2 scar-ckpt save $OPTS --policy priority --stream - D < c.st
		[[ "$output" == *"offset $cut: snapshot 1 (from byte 0): the stream ends inside its "* ]]
		[ ! -e D/ckpt-0000000003.ckpt ]
	done
	# an empty stream is a clean end with nothing written
	run -0 scar-ckpt save $OPTS --policy priority --stream - E < /dev/null
	[ -z "$output" ]
	[ -z "$(ls E)" ]
}

@test "--stream: garbage between snapshots, a checkpoint, a huge header length are exit 2 naming the snapshot" {
	snapshots 1
	size=$(stat -c %s s0.safetensors)
	{ cat s0.safetensors; printf 'garbage!!'; cat s1.safetensors; } > g.st
	run -2 scar-ckpt save $OPTS --policy priority --stream - C < g.st
	[[ "$output" == *"'-': offset $size: snapshot 2 (from byte $size): not a safetensors or .npy snapshot (bytes 67 61 72 62)"* ]]
	intact C
	{ cat s0.safetensors s1.ckpt; } > k.st
	run -2 scar-ckpt save $OPTS --policy priority --stream - D < k.st
	[[ "$output" == *"snapshot 2 (from byte $size): a scar checkpoint, which a stream cannot carry"* ]]
	printf '\377\377\377\377\377\377\377\177{' > h.st
	run -2 scar-ckpt save $OPTS --policy priority --stream - E < h.st
	[[ "$output" == *"snapshot 1 (from byte 0): safetensors header length 9223372036854775807 is not in 2..104857600"* ]]
	# a length it believes, and a stream that does not hold it
	printf '\000\000\000\004\000\000\000\000{' > h2.st
	run -2 scar-ckpt save $OPTS --policy priority --stream - F < h2.st
	[[ "$output" == *"offset 9: snapshot 1 (from byte 0): the stream ends inside its safetensors header (0 of 67108863 bytes)"* ]]
	# a header that is no safetensors header
	printf '\010\000\000\000\000\000\000\000{"a":1} ' > h3.st
	run -2 scar-ckpt save $OPTS --policy priority --stream - G < h3.st
	[[ "$output" == *"snapshot 1 (from byte 0): not a valid safetensors file: "* ]]
	# data declared beyond memory is refused before it is allocated
	printf '{"w":{"dtype":"F32","shape":[1000000000000],"data_offsets":[0,4000000000000]}}' > j
	/usr/bin/python3 -c 'import struct,sys; j=open("j","rb").read(); sys.stdout.buffer.write(struct.pack("<Q",len(j))+j)' > big.st
	run -2 scar-ckpt save $OPTS --policy priority --iteration 0 --stream - H < big.st
	[[ "$output" == *"snapshot 1 (from byte 0): its tensors need 4000000000000 bytes of memory, more than the "* ]]
	[ ! -e H/ckpt-0000000000.ckpt ]
}

@test "--stream: a layout that changes, an iteration that does not increase: exit 2, earlier checkpoints intact" {
	gen safetensors 3
	cp p3.safetensors good3.safetensors
	rm p*.safetensors
	gen safetensors 0 13
	mv p0.safetensors wide.safetensors
	gen safetensors 3
	cat p0.safetensors p1.safetensors p2.safetensors > ok.st
	size=$(stat -c %s ok.st)
	cat ok.st wide.safetensors > l.st
	run -2 --separate-stderr scar-ckpt save $OPTS --policy full --interval 1 --iteration 0 --stream - C < l.st
	[[ "$stderr" == "scar-ckpt: 'C/.scar-view.ckpt': snapshot 4 of '-' (from byte $size, iteration 3): the snapshot's tensor 'w' has another dtype or shape than the run directory's" ]]
	[ -e C/ckpt-0000000002.ckpt ] && [ ! -e C/ckpt-0000000003.ckpt ]
	intact C
	for k in 0 1 2; do scar-ckpt save $OPTS --policy full --interval 1 --iteration "$k" "p$k.safetensors" B; done > /dev/null
	diff -r B C
	# iterations from metadata that go back
	snapshots 3
	cat s0.safetensors s2.safetensors s1.safetensors > back.st
	size=$(($(stat -c %s s0.safetensors) + $(stat -c %s s2.safetensors)))
	run -2 scar-ckpt save $OPTS --policy priority --stream - D < back.st
	[[ "$output" == *"'-': snapshot 3 (from byte $size): iteration 1 is not after the previous snapshot's, 2" ]]
	cat s0.safetensors s2.safetensors s2.safetensors > same.st
	run -2 scar-ckpt save $OPTS --policy priority --stream - E < same.st
	[[ "$output" == *"iteration 2 is not after the previous snapshot's, 2" ]]
	# --iteration that contradicts the first snapshot's own
	run -2 scar-ckpt save $OPTS --policy priority --iteration 4 --stream - F < back.st
	[[ "$output" == *"snapshot 1: its __metadata__ scar.iteration 0 is not --iteration 4" ]]
	# usage
	run -2 scar-ckpt save --no-sync --policy priority --stream - G < back.st
	[[ "$output" == *"--stream needs --shards S"* ]]
}

@test "--stream: killed or its reader gone, no checkpoint is torn" {
	snapshots 6
	# SIGINT in the middle of a run (fsync on, so it is mid-write more often);
	# a background job of a script would ignore SIGINT, so python starts it
	run -0 /usr/bin/python3 - <<'PY'
import signal, subprocess, time
p = subprocess.Popen(["scar-ckpt", "save", "--fraction", "1/4", "--interval", "4", "--shards", "8",
                      "--policy", "priority", "--stream", "-", "C"], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
for k in range(3):
    p.stdin.write(open(f"s{k}.safetensors", "rb").read())
p.stdin.flush()
p.stdout.readline()
try:
    for k in range(3, 7):
        p.stdin.write(open(f"s{k}.safetensors", "rb").read())
    p.stdin.flush()
except BrokenPipeError:
    pass
p.send_signal(signal.SIGINT)
print(p.wait())
PY
	[ "$output" = -2 ]	# it died of the signal
	intact C
	# the reader gone: the stream ends at the next event, quietly, with the files intact
	cat s{0..6}.safetensors > all.st
	run -0 /usr/bin/python3 - <<'PY'
import os, subprocess, sys
r, w = os.pipe()
os.close(r)
p = subprocess.run(["scar-ckpt", "save", "--no-sync", "--shards", "8", "--policy", "full",
                    "--interval", "1", "--stream", "-", "D"], stdin=open("all.st", "rb"), stdout=w,
                   stderr=subprocess.PIPE)
print(p.returncode)
print(p.stderr.decode(), end="")
PY
	[ "$output" = 2 ]
	intact D
	[ "$(ls -A D)" = "$(printf '.scar-view.ckpt\nckpt-0000000000.ckpt')" ]	# and the lock released
}

SCHEMA="$SCAR_ROOT/man/scar-events.schema.json"

# The minimal stream of a scar-train stream, with the step norms fit needs.
CUT='if .type == "header" then {type, format, version, objective, objective_higher_better}
	elif .type == "iteration" then {type, iter, objective} + (if has("step_norm") then {step_norm} else {} end)
	else empty end'

need_jsonschema() {
	/usr/bin/python3 -c 'import jsonschema' 2>/dev/null ||
		skip "python3-jsonschema is not installed (SCAR_DEPS_ALL=1 sh tools/deps.sh)"
}

# Validate each line of $1 against the schema; prints the violations.
validate() {
	/usr/bin/python3 - "$SCHEMA" "$1" <<'PY'
import json, sys
import jsonschema
v = jsonschema.Draft202012Validator(json.load(open(sys.argv[1])))
bad = 0
for n, line in enumerate(open(sys.argv[2]), 1):
    for e in v.iter_errors(json.loads(line)):
        print(f"{n}: {e.message}")
        bad += 1
sys.exit(1 if bad else 0)
PY
}

@test "fit: the minimal stream with step_norm fits as scar-train's own, bit for bit; it follows the schema" {
	need_jsonschema
	for m in mlr mf lda ridge; do
		scar-train -q --no-timing -m "$m" -n 30 > full.jsonl
		jq -c "$CUT" full.jsonl > min.jsonl
		grep -q '"step_norm"' min.jsonl
		run -0 validate min.jsonl
		[ "$(scar-bound fit --json full.jsonl | jq -c .fit)" = "$(scar-bound fit --json min.jsonl | jq -c .fit)" ]
		if [ "$m" != ridge ]; then	# ridge's header carries its exact c and D; the rest is the fit
			cmp <(scar-bound fit --json full.jsonl) <(scar-bound fit --json min.jsonl)
			cmp <(scar-bound fit full.jsonl) <(scar-bound fit min.jsonl)
		fi
	done
	# and check holds the same streams the same way
	scar-train -q --no-timing -m mf -n 40 > ref.jsonl
	scar-train -q --no-timing -m mf -n 40 --policy priority --fraction 1/4 --fail-at 12 --lose-fraction 1/4 > pert.jsonl
	# (check compares the headers' model, shards and config where both say them)
	jq -c "$CUT" ref.jsonl | jq -c --argjson h "$(head -n 1 ref.jsonl | jq -c '{model, shards, config}')" \
		'if .type == "header" then . + $h else . end' > ref-min.jsonl
	run -0 scar-bound check --json ref.jsonl pert.jsonl
	full=$(echo "$output" | jq -c '{c, D}')
	run -0 scar-bound check --json ref-min.jsonl pert.jsonl
	[ "$(echo "$output" | jq -c '{c, D}')" = "$full" ]
}

@test "fit: without step_norm, fit and check say which field is missing and how to write it; a bad one is refused" {
	need_jsonschema
	scar-train -q --no-timing -m mlr -n 20 | jq -c "$CUT | del(.step_norm)" > nostep.jsonl
	msg="cannot fit c: no iteration record after the first has \"step_norm\": write ||x(k) - x(k-1)||, the L2 norm of the change of all parameters over iteration k, into the record of each iteration k >= 1 (scar-events(7), THE MINIMAL STREAM)"
	run -2 scar-bound fit nostep.jsonl
	[ "$output" = "scar-bound: 'nostep.jsonl': $msg" ]
	run -2 scar-bound check nostep.jsonl nostep.jsonl
	[ "$output" = "scar-bound: 'nostep.jsonl': $msg" ]
	# cost needs no step norms
	run -0 scar-bound cost nostep.jsonl nostep.jsonl
	# a step_norm that is not a step norm: the schema and fit refuse it, naming the line
	for bad in '"x"' -1 null; do
		scar-train -q --no-timing -m mlr -n 20 | jq -c "$CUT" |
			sed "4s/\"step_norm\":[^,}]*/\"step_norm\":$bad/" > bad.jsonl
		run -1 validate bad.jsonl
		[[ "$output" == "4: "* ]]
		run -2 scar-bound fit bad.jsonl
		[ "$output" = "scar-bound: bad.jsonl:4: iteration record's \"step_norm\" is not a number >= 0" ]
	done
}

@test "fit: a PyTorch loop's stream (examples/pytorch) fits a c in (0, 1)" {
	/usr/bin/python3 -c 'import torch' 2>/dev/null || skip "python3-torch is not installed"
	[ -e "${SCAR_DATA:-$HOME/.cache/scar}/fashion-mnist/train-images-idx3-ubyte.gz" ] ||
		skip "Fashion-MNIST is not in the data cache (make data)"
	run -0 /usr/bin/python3 "$SCAR_ROOT/examples/pytorch/scar_torch.py" --iters 16 --trials 1 \
		--examples 2000 --extra 16 --out out
	ref=out/reference-0-0/events.jsonl
	[ "$(jq -s '[.[] | select(.type == "iteration" and .iter > 0 and .step_norm > 0)] | length' "$ref")" = 16 ]
	run -0 scar-bound fit --json "$ref"
	echo "$output" | jq -e '.c > 0 and .c < 1 and .c_source == "fit" and .D > 0'
	# the perturbed runs carry it too; check needs the perturbation's norm as
	# well, which the example's recovery records do not give: it says so
	run -0 scar-bound fit --json out/scar-9-1/events.jsonl
	run -2 scar-bound check "$ref" out/scar-9-1/events.jsonl
	[[ "$output" == *'recovery record needs numeric "iter" and "delta_norm"'* ]]
}

# reorder.py OUT: two snapshots (iterations 0 and 8) of tensors a (3x2) and
# b (50x8) and a state tensor s holding the iteration; the second lists s and
# b first and has b's rows 40..49 moved.
mk_reorder() {
	/usr/bin/python3 - "$1" <<'PY'
import json, struct, sys
import numpy as np
def st(tensors, meta):
    hdr, off, blobs = {}, 0, []
    for name, (dt, arr) in tensors.items():
        b = arr.tobytes()
        hdr[name] = {"dtype": dt, "shape": list(arr.shape), "data_offsets": [off, off + len(b)]}
        off += len(b); blobs.append(b)
    hdr["__metadata__"] = meta
    h = json.dumps(hdr).encode(); h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + b"".join(blobs)
r = np.random.default_rng(0)
a = r.standard_normal((3, 2)).astype(np.float32)
b = r.standard_normal((50, 8)).astype(np.float32)
b1 = b.copy(); b1[40:] += 5
s = np.full(2, 8, np.float32)
out = st({"a": ("F32", a), "b": ("F32", b), "s": ("F32", s * 0)}, {"scar.iteration": "0", "scar.role.s": "state"})
out += st({"s": ("F32", s), "b": ("F32", b1), "a": ("F32", a)}, {"scar.iteration": "8", "scar.role.s": "state"})
open(sys.argv[1], "wb").write(out)
PY
}

@test "save: a snapshot listing its tensors in another order is matched by name (priority picks the rows that moved)" {
	mk_reorder r.bin
	run -0 scar-ckpt save --stream --policy priority --interval 8 --fraction 1/4 --shards 1 - run < r.bin
	# 12 rows of b's 50: the 10 that moved, then the lowest of the ties.
	run -0 scar-ckpt export --tensor b --format json run/ckpt-0000000008.ckpt
	[ "$(printf '%s\n' "$output" | jq -c .rows)" = "[0,1,40,41,42,43,44,45,46,47,48,49]" ]
}

@test "save: the saved view takes a full checkpoint's state tensors, as apply of the directory does" {
	mk_reorder r.bin
	run -0 scar-ckpt save --stream --policy full --interval 8 --shards 1 - run < r.bin
	scar-ckpt apply -o ap.ckpt run
	run -0 scar-diff --all -q ap.ckpt run/.scar-view.ckpt
}
