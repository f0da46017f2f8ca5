#!/usr/bin/env bats
# python.bats - interop with Python users: what scar-ckpt exports as .npy
# and safetensors reads in numpy (Debian's python3-numpy) with the values
# of `scar-ckpt export --format json`; what numpy writes scar-ckpt imports
# and scar-diff compares; and the JSON outputs parse strictly (no NaN or
# Infinity tokens, one object per line), as jq and json.loads want them.

bats_require_minimum_version 1.5.0
load helper

PY=/usr/bin/python3

# Two models with different dtypes: mlr has f32 weights and u64/u32
# state, ridge f64 weights.
setup_file() {
	cd "$BATS_FILE_TMPDIR" || return 1
	scar-train -q -m mlr -n 6 --shards 4 --no-timing --save mlr.ckpt --events /dev/null
	scar-train -q -m ridge -n 6 --shards 3 --no-timing --save ridge.ckpt --events /dev/null
}

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
	unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
	if [ ! -x "$PY" ] || ! "$PY" -c 'import numpy' 2>/dev/null; then
		skip "python3-numpy is not installed ($PY cannot import numpy)"
	fi
	cp "$BATS_FILE_TMPDIR/mlr.ckpt" "$BATS_FILE_TMPDIR/ridge.ckpt" .
}

# The reader side, in Python: compare array files with JSON exports.
#   py_compare KIND:FILE:JSON[:NAME]...   KIND npy or safetensors
py_compare() {
	"$PY" - "$@" <<'EOF'
import json, struct, sys
import numpy as np

DT = {"f32": "<f4", "f64": "<f8", "i32": "<i4", "u32": "<u4",
      "i64": "<i8", "u64": "<u8", "u8": "|u1"}
ST = {"F32": "<f4", "F64": "<f8", "I32": "<i4", "U32": "<u4",
      "I64": "<i8", "U64": "<u8", "U8": "|u1"}

def read_safetensors(path, name):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    tensors = {k: v for k, v in header.items() if k != "__metadata__"}
    if name is None:
        if len(tensors) != 1:
            sys.exit("want one tensor, got %s" % sorted(tensors))
        name = next(iter(tensors))
    t = tensors[name]
    lo, hi = t["data_offsets"]
    dt = np.dtype(ST[t["dtype"]])
    a = np.frombuffer(blob[8 + n + lo:8 + n + hi], dtype=dt)
    return a.reshape(t["shape"])

for spec in sys.argv[1:]:
    kind, path, jpath, name = (spec.split(":") + [None])[:4]
    a = np.load(path) if kind == "npy" else read_safetensors(path, name)
    with open(jpath) as f:
        j = json.load(f)
    want = np.dtype(DT[j["dtype"]])
    if a.dtype != want:
        sys.exit("%s: dtype %s, JSON says %s" % (path, a.dtype, want))
    if list(a.shape) != j["shape"]:
        sys.exit("%s: shape %s, JSON says %s" % (path, a.shape, j["shape"]))
    b = np.array(j["data"], dtype=want).reshape(j["shape"])
    if a.tobytes() != b.tobytes():
        bad = np.argwhere(a != b)
        sys.exit("%s: values differ at %d places, first %s: %r vs %r"
                 % (path, len(bad), bad[0], a[tuple(bad[0])], b[tuple(bad[0])]))
    print("ok", path, j["tensor"], a.dtype, a.shape)
EOF
}

@test "scar-ckpt export --format npy: numpy reads the values the JSON export has" {
	local c t specs=()
	for c in mlr:weights mlr:rng mlr:order ridge:w; do
		t=${c#*:}
		run -0 scar-ckpt export --tensor "$t" --format npy -o "$t.npy" "${c%%:*}.ckpt"
		scar-ckpt export --tensor "$t" --format json "${c%%:*}.ckpt" > "$t.json"
		specs+=("npy:$t.npy:$t.json")
	done
	# to stdout, too
	scar-ckpt export --tensor weights --format npy mlr.ckpt > out.npy
	run -0 py_compare "${specs[@]}" npy:out.npy:weights.json
}

@test "scar-ckpt export --shard and --rows: numpy sees the rows the JSON names" {
	scar-ckpt export --tensor weights --format npy -o all.npy mlr.ckpt
	scar-ckpt export --tensor weights --shard 1 --format npy -o s1.npy mlr.ckpt
	scar-ckpt export --tensor weights --shard 1 --format json mlr.ckpt > s1.json
	scar-ckpt export --tensor weights --rows 3:9 --format npy -o r.npy mlr.ckpt
	scar-ckpt export --tensor weights --rows 3:9 --format json mlr.ckpt > r.json
	run -0 py_compare npy:s1.npy:s1.json npy:r.npy:r.json
	run -0 "$PY" - <<'EOF'
import json
import numpy as np
full = np.load("all.npy")
for npy, js in (("s1.npy", "s1.json"), ("r.npy", "r.json")):
    rows = json.load(open(js))["rows"]
    assert np.array_equal(np.load(npy), full[rows]), npy
# shard 1 of 4 is rows 1, 5, 9, ...
assert json.load(open("s1.json"))["rows"] == list(range(1, full.shape[0], 4))
assert json.load(open("r.json"))["rows"] == list(range(3, 9))
EOF
}

@test "scar-ckpt export --format safetensors: numpy reads the values the JSON export has" {
	local c t specs=()
	for c in mlr:weights mlr:rng ridge:w; do
		t=${c#*:}
		run -0 scar-ckpt export --tensor "$t" --format safetensors -o "$t.safetensors" "${c%%:*}.ckpt"
		scar-ckpt export --tensor "$t" --format json "${c%%:*}.ckpt" > "$t.json"
		specs+=("safetensors:$t.safetensors:$t.json:$t")
	done
	run -0 py_compare "${specs[@]}"
}

@test "numpy-written .npy files import into a checkpoint with the same values" {
	run -0 "$PY" - <<'EOF'
import numpy as np
rng = np.random.default_rng(5)
np.save("w.npy", rng.standard_normal((40, 7)).astype("<f4"))
np.save("b.npy", rng.standard_normal(40))
np.save("n.npy", np.arange(-20, 20, dtype="<i4").reshape(10, 4))
np.save("wf.npy", rng.integers(0, 255, size=(4, 3, 2), dtype="u1"))
EOF
	run -0 scar-ckpt import --shards 4 --model demo --iteration 7 -o w.ckpt w.npy
	run -0 scar-ckpt import --name bias -o b.ckpt b.npy
	run -0 scar-ckpt import --name n -o n.ckpt n.npy
	run -0 scar-ckpt import --name wf -o wf.ckpt wf.npy
	run -0 scar-ckpt verify w.ckpt b.ckpt n.ckpt wf.ckpt
	scar-ckpt export --tensor w --format json w.ckpt > w.json
	scar-ckpt export --tensor bias --format json b.ckpt > b.json
	scar-ckpt export --tensor n --format json n.ckpt > n.json
	scar-ckpt export --tensor wf --format json wf.ckpt > wf.json
	run -0 py_compare npy:w.npy:w.json npy:b.npy:b.json npy:n.npy:n.json npy:wf.npy:wf.json
	# and the checkpoint says what it was told
	run -0 scar-ckpt info --json w.ckpt
	run -0 jq -e '.model == "demo" and .iteration == 7 and .shards == 4' <<<"$output"
	# scar-diff agrees: the checkpoint equals numpy's array, and a changed
	# copy differs by exactly the change
	run -0 scar-diff -q --tensor w w.ckpt w.npy
	"$PY" -c '
import numpy as np
a = np.load("w.npy"); a[3, 2] += 0.5; np.save("w2.npy", a)'
	run -1 scar-diff --json w.ckpt w2.npy
	run -0 jq -e '.changed == 1 and (.l2 - 0.5 | fabs) < 1e-6' <<<"$output"
}

@test "a numpy-written safetensors file is compared by scar-diff and imported by scar-ckpt" {
	run -0 "$PY" - <<'EOF'
import json, struct
import numpy as np
rng = np.random.default_rng(9)
arrays = {"w": rng.standard_normal((12, 3)).astype("<f4"),
          "b": np.arange(12, dtype="<f8")}
header, blobs, off = {}, [], 0
for name, a in arrays.items():
    raw = a.tobytes()
    header[name] = {"dtype": {"float32": "F32", "float64": "F64"}[a.dtype.name],
                    "shape": list(a.shape), "data_offsets": [off, off + len(raw)]}
    blobs.append(raw)
    off += len(raw)
h = json.dumps(header, separators=(",", ":")).encode()
h += b" " * (-len(h) % 8)
with open("ab.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
for name, a in arrays.items():
    np.save(name + ".npy", a)
EOF
	scar-ckpt import --name w -o w.ckpt w.npy
	run -0 scar-diff -q --tensor w w.ckpt ab.safetensors
	run -0 scar-diff -q --tensor b b.npy ab.safetensors
	run -0 scar-ckpt import -o ab.ckpt ab.safetensors
	run -0 scar-diff -q ab.ckpt ab.safetensors
	scar-ckpt export --tensor b --format json ab.ckpt > b.json
	run -0 py_compare npy:b.npy:b.json
}

@test "JSON outputs parse strictly in Python and jq: one object per line, no NaN" {
	scar-train -q -m ridge -n 12 --fail-at 5 --cost > run.jsonl
	scar-ckpt info --json mlr.ckpt > info.json
	scar-ckpt ls --json . > ls.json
	scar-inject --noise-l2 0.5 --report rep.json ridge.ckpt hit.ckpt
	scar-diff --json ridge.ckpt ridge.ckpt > diff.json
	run -1 --separate-stderr scar-diff --json ridge.ckpt hit.ckpt
	printf '%s\n' "$output" > diff2.json
	run -1 --separate-stderr scar-diff --per row ridge.ckpt hit.ckpt
	printf '%s\n' "$output" > rows.jsonl
	scar-bound evaluate --json --c 0.9 --D 5 --delta 1@3 > eval.json
	scar-bound fit --json run.jsonl > fit.json
	run -0 "$PY" - <<'EOF'
import json
def strict(tok):
    raise ValueError("non-standard JSON number %s" % tok)
for path in ("run.jsonl", "info.json", "ls.json", "diff.json", "diff2.json", "rows.jsonl",
             "rep.json", "eval.json", "fit.json"):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    assert lines[-1] == "", path + ": no newline at the end"
    assert len(lines) > 1, path + ": empty"
    for i, line in enumerate(lines[:-1], 1):
        rec = json.loads(line, parse_constant=strict)
        assert isinstance(rec, dict), "%s:%d: not an object" % (path, i)
types = [json.loads(l)["type"] for l in open("run.jsonl")]
assert types[0] == "header" and types[-1] == "summary", types
assert "failure" in types and "recovery" in types and "cost" in types, types
EOF
	run -0 jq -e -s 'length > 3' run.jsonl
	run -0 jq -e '.l2 == 0' diff.json
	run -0 jq -e '(.l2 - 0.5 | fabs) < 1e-9' diff2.json
	run -0 jq -e '.delta_norm > 0.49 and .delta_norm < 0.51' rep.json
}
