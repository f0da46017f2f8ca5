#!/usr/bin/env bats
# SCAR for your own training loop (issue 19): the minimal event schema any
# loop can write (man/scar-events.schema.json, scar-events(7)), and
# scar-bound cost measuring it with scar-train's definition.
bats_require_minimum_version 1.5.0
load helper

SCHEMA="$SCAR_ROOT/man/scar-events.schema.json"

# Validate every line of the files against the schema (Debian's python3 with
# python3-jsonschema); prints "file:line: message" per violation.
validate() {
	/usr/bin/python3 - "$SCHEMA" "$@" <<'PY'
import json, sys
import jsonschema
v = jsonschema.Draft202012Validator(json.load(open(sys.argv[1])))
bad = 0
for name in sys.argv[2:]:
    for n, line in enumerate(open(name), 1):
        if line.strip():
            for e in v.iter_errors(json.loads(line)):
                print(f"{name}:{n}: {e.message}")
                bad += 1
sys.exit(1 if bad else 0)
PY
}

need_jsonschema() {
	/usr/bin/python3 -c 'import jsonschema' 2>/dev/null ||
		skip "python3-jsonschema is not installed (SCAR_DEPS_ALL=1 sh tools/deps.sh)"
}

# The minimal stream of a scar-train stream: what any loop would write.
MIN='if .type == "header" then {type, format, version, objective, objective_higher_better}
	elif .type == "iteration" then {type, iter, objective}
	elif .type == "recovery" then {type, iter, resume_state_iter, objective}
	else empty end'

@test "schema: the schema is valid JSON Schema, and every scar-train record follows it" {
	need_jsonschema
	run -0 /usr/bin/python3 -c 'import json, sys, jsonschema; jsonschema.Draft202012Validator.check_schema(json.load(open(sys.argv[1])))' "$SCHEMA"
	for m in mlr ridge mf lda; do
		scar-train -q -m "$m" -n 12 --policy priority --fail-at 6 --lose-count 2 --recovery auto --cost > "$m.jsonl"
		run -0 validate "$m.jsonl"
	done
}

@test "schema: a minimal stream validates; a header without the objective's direction does not" {
	need_jsonschema
	scar-train -q --no-timing -m ridge -n 10 | jq -c "$MIN" > min.jsonl
	run -0 validate min.jsonl
	printf '%s\n' '{"type":"header","format":"scar-events","version":1,"objective":"loss"}' > bad.jsonl
	run -1 validate bad.jsonl
	[[ "$output" == *"'objective_higher_better' is a required property"* ]]
	printf '%s\n' '{"type":"header","format":"scar-events","version":1,"objective":"loss","objective_higher_better":false}' \
		'{"type":"iteration","iter":1.5,"objective":2}' > bad2.jsonl
	run -1 validate bad2.jsonl
	[[ "$output" == *"bad2.jsonl:2:"* ]]
}

@test "scar-bound cost equals scar-train's cost on the same two streams, every model and recovery" {
	for m in mlr ridge mf lda; do
		scar-train -q --no-timing -m "$m" -n 30 > ref.jsonl
		for r in partial full auto; do
			scar-train -q --no-timing -m "$m" -n 30 --policy priority --fail-at 11 --lose-count 2 \
				--recovery "$r" --cost > p.jsonl
			want=$(jq -c 'select(.type == "cost") | [.cost, .cost_interp, .censored]' p.jsonl)
			got=$(scar-bound cost --json ref.jsonl p.jsonl | jq -c '[.cost, .cost_interp, .censored]')
			[ "$want" = "$got" ] || { echo "$m $r: scar-train $want, scar-bound $got"; return 1; }
			# and from the minimal streams any loop can write
			got=$(scar-bound cost --json <(jq -c "$MIN" ref.jsonl) <(jq -c "$MIN" p.jsonl) |
				jq -c '[.cost, .cost_interp, .censored]')
			[ "$want" = "$got" ] || { echo "$m $r minimal: scar-train $want, scar-bound $got"; return 1; }
		done
	done
}

@test "scar-bound cost: nothing perturbed costs exactly 0; the comparison can fail" {
	scar-train -q --no-timing -m mf -n 20 > ref.jsonl
	run -0 scar-bound cost --json ref.jsonl ref.jsonl
	jq -e '.cost == 0 and .cost_interp == 0 and .censored == false' <<< "$output"
	# another seed is another run: refused as a reference for it
	scar-train -q --no-timing -m mf -n 20 --seed 2 > other.jsonl
	run -2 scar-bound cost --json ref.jsonl other.jsonl
	[[ "$output" == *"not a reference for"* ]]
	scar-train -q --no-timing -m mf -n 20 --fail-at 5 --lose-count 3 --recovery none > p.jsonl
	run -0 scar-bound cost --json ref.jsonl p.jsonl
	jq -e '.cost != 0 or .censored' <<< "$output"
}

@test "scar-bound cost: bad streams are exit 2 naming what is wrong" {
	scar-train -q --no-timing -m ridge -n 10 | jq -c "$MIN" > ref.jsonl
	jq -c 'if .type == "header" then del(.objective_higher_better) else . end' ref.jsonl > nodir.jsonl
	run -2 scar-bound cost nodir.jsonl ref.jsonl
	[[ "$output" == *"nodir.jsonl"*"objective_higher_better"* ]]
	jq -c 'if .type == "header" then .objective_higher_better = true else . end' ref.jsonl > up.jsonl
	run -2 scar-bound cost ref.jsonl up.jsonl
	[[ "$output" == *"up.jsonl"*"not the reference's"* ]]
	{ cat ref.jsonl; echo '{"type":"recovery","iter":3,"resume_state_iter":5}'; } > badrec.jsonl
	run -2 scar-bound cost ref.jsonl badrec.jsonl
	[[ "$output" == *"badrec.jsonl:13: "*"resume_state_iter"* ]]
	{ cat ref.jsonl; echo '{"type":"failure","iter":3}'; } > failref.jsonl
	run -2 scar-bound cost failref.jsonl ref.jsonl
	[[ "$output" == *"perturbed run is no reference"* ]]
	run -2 scar-bound cost ref.jsonl
	run -2 scar-bound cost - -
	jq -c 'if .type == "iteration" and .iter == 4 then .iter = 2 else . end' ref.jsonl > back.jsonl
	run -2 scar-bound cost ref.jsonl back.jsonl
	[[ "$output" == *"clock goes back"* ]]
}

@test "scar-bound cost: a stream passed through jq (0.0 written as 0) is still the same run" {
	scar-train -q --no-timing -m ridge -n 30 | jq -c . > ref.jsonl
	grep -q '"eta":0[,}]' ref.jsonl
	scar-train -q --no-timing -m ridge -n 30 --fail-at 10 --lose-count 2 --cost > p.jsonl
	grep -q '"eta":0.0' p.jsonl
	run -0 scar-bound cost --json ref.jsonl p.jsonl
	[ "$(jq -c '[.cost, .cost_interp]' <<< "$output")" = "$(jq -c 'select(.type == "cost") | [.cost, .cost_interp]' p.jsonl)" ]
}

# A safetensors snapshot of mixed dtypes (F32, F16, BF16, I64) with
# __metadata__, written by tests/mksafetensors.py from seed $2.
mkst() {
	/usr/bin/python3 -c 'import numpy' 2>/dev/null ||
		skip "Debian's python3-numpy is not installed (SCAR_DEPS_ALL=1 sh tools/deps.sh)"
	/usr/bin/python3 "$SCAR_ROOT/tests/mksafetensors.py" "$1" "$2"
}

# Python: compare two safetensors files tensor by tensor, row by row, as raw bytes.
rows_check() {
	/usr/bin/python3 - "$@" <<'PY'
import json, struct, sys
def load(p):
    b = open(p, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    return b[:8 + n], h, b[8 + n:]
out, donor, src, S, lost = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), set(map(int, sys.argv[5].split(",")))
ho, jo, bo = load(out); hd, jd, bd = load(donor) if donor != "zero" else (None, None, None); hs, js, bs = load(src)
assert ho == hs, "header changed"
for name, t in js.items():
    if name == "__metadata__":
        continue
    a, e = t["data_offsets"]
    rows = t["shape"][0] if t["shape"] else 1
    rb = (e - a) // rows if rows else 0
    for r in range(rows):
        got = bo[a + r * rb: a + (r + 1) * rb]
        if r % S in lost:
            want = bd[jd[name]["data_offsets"][0] + r * rb: jd[name]["data_offsets"][0] + (r + 1) * rb] if bd is not None else bytes(rb)
        else:
            want = bs[a + r * rb: a + (r + 1) * rb]
        assert got == want, f"{name} row {r}"
print("ok")
PY
}

@test "snapshot recovery: safetensors in, safetensors out; lost rows from the donor, every other byte kept" {
	mkst cur.safetensors 1
	mkst old.safetensors 2
	run -0 scar-inject --shards 4 --lose-shards 1,3 --reset from=old.safetensors cur.safetensors rec.safetensors
	jq -e '.rows_touched == 13 and .tensors_touched == 4 and .shards_lost == [1, 3]' <<< "$output"
	run -0 rows_check rec.safetensors old.safetensors cur.safetensors 4 1,3
	# delta_norm is scar-diff's l2 between input and output
	d=$(scar-diff --json cur.safetensors rec.safetensors | jq .l2 || :)
	scar-inject --shards 4 --lose-shards 1,3 --reset from=old.safetensors cur.safetensors rec2.safetensors \
		--report rep.json
	[ "$(jq .delta_norm rep.json)" = "$d" ]
	cmp rec.safetensors rec2.safetensors
	# zero, by seed, one tensor only
	run -0 scar-inject --shards 4 --lose-shards 2 cur.safetensors z.safetensors
	run -0 rows_check z.safetensors zero cur.safetensors 4 2
	run -0 scar-inject --shards 3 --lose-count 1 --seed 5 --tensor ids cur.safetensors t.safetensors
	jq -e '.tensors_touched == 1' <<< "$output"
	# nothing lost is nothing changed
	run -0 scar-inject --shards 4 --lose-shards 1 --reset from=cur.safetensors cur.safetensors same.safetensors
	cmp cur.safetensors same.safetensors
	jq -e '.delta_norm == 0' <<< "$output"
}

@test "snapshot recovery: bad inputs are exit 2 naming the problem, and write nothing" {
	mkst cur.safetensors 1
	/usr/bin/python3 - <<'PY'
import json, struct
b = open("cur.safetensors", "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n]); data = b[8 + n:]
def write(p, h):
    s = json.dumps(h).encode(); s += b" " * ((8 - len(s) % 8) % 8)
    open(p, "wb").write(struct.pack("<Q", len(s)) + s + data)
h2 = dict(h); h2["idx"] = h2.pop("ids"); write("noids.safetensors", h2)
h3 = json.loads(json.dumps(h)); h3["emb.half"]["dtype"] = "I16"; write("i16.safetensors", h3)
PY
	run -2 scar-inject --shards 4 --lose-shards 1 --reset from=noids.safetensors cur.safetensors o.safetensors
	[[ "$output" == *"tensor 'ids' is not in 'noids.safetensors'"* ]]
	run -2 scar-inject --shards 4 --lose-shards 1 --reset from=i16.safetensors cur.safetensors o.safetensors
	[[ "$output" == *"'emb.half'"*"another dtype or shape"* ]]
	[ ! -e o.safetensors ]
	run -2 scar-inject --lose-shards 1 cur.safetensors o.safetensors
	[[ "$output" == *"give --shards S"* ]]
	run -2 scar-inject --shards 4 --noise-l2 1 cur.safetensors o.safetensors
	[[ "$output" == *"only --lose-shards, --lose-count or --lose-fraction apply"* ]]
	run -2 scar-inject --shards 4 --lose-shards 1 --reset random cur.safetensors o.safetensors
	run -2 scar-inject --shards 4 --lose-shards 1 --rows 0:2 cur.safetensors o.safetensors
	run -2 scar-inject --shards 4 --lose-shards 9 cur.safetensors o.safetensors
	run -2 scar-inject --shards 4 --lose-shards 1 --tensor nope cur.safetensors o.safetensors
	[[ "$output" == *"has no tensor 'nope'"* ]]
	[ ! -e o.safetensors ]
	# a checkpoint says its own shard count
	scar-train -q -m ridge -n 2 --shards 4 --save r.ckpt > /dev/null
	run -2 scar-inject --shards 8 --lose-shards 1 r.ckpt o.ckpt
	[[ "$output" == *"not the checkpoint's 4"* ]]
	run -0 scar-inject --shards 4 --lose-shards 1 r.ckpt o.ckpt
}

@test "snapshot recovery: a .npy snapshot too" {
	/usr/bin/python3 -c 'import numpy' 2>/dev/null || skip "Debian's python3-numpy is not installed"
	/usr/bin/python3 -c 'import numpy as np; np.save("a.npy", np.arange(20, dtype=np.float32).reshape(10, 2)); np.save("b.npy", -np.arange(20, dtype=np.float32).reshape(10, 2))'
	run -0 scar-inject --shards 5 --lose-shards 0 --reset from=b.npy a.npy c.npy
	run -0 /usr/bin/python3 -c 'import numpy as np; a, b, c = (np.load(f) for f in ("a.npy", "b.npy", "c.npy")); m = np.arange(10) % 5 == 0; assert (c[m] == b[m]).all() and (c[~m] == a[~m]).all(); print("ok")'
}

@test "whole model: export every tensor to one safetensors file, import it back, resume as from the original" {
	for m in mf lda mlr; do
		scar-train -q --no-timing -m "$m" -n 3 --save "$m.ckpt" > /dev/null
		scar-ckpt export "$m.ckpt" -o "$m.safetensors"
		run -0 scar-diff -q "$m.ckpt" "$m.safetensors"
		scar-ckpt import -o "$m-back.ckpt" "$m.safetensors"
		run -0 scar-diff -q --all "$m.ckpt" "$m-back.ckpt"
		scar-ckpt export "$m-back.ckpt" -o "$m-2.safetensors"
		cmp "$m.safetensors" "$m-2.safetensors"
		diff <(scar-train -q --no-timing --resume "$m.ckpt" -n 6 | tail -n +2) \
			<(scar-train -q --no-timing --resume "$m-back.ckpt" -n 6 | tail -n +2)
	done
	# one tensor (ridge) is a whole model too
	scar-train -q --no-timing -m ridge -n 3 --save r.ckpt > /dev/null
	scar-ckpt export r.ckpt -o r.safetensors
	scar-ckpt import -o r-back.ckpt r.safetensors
	diff <(scar-train -q --no-timing --resume r.ckpt -n 6 | tail -n +2) \
		<(scar-train -q --no-timing --resume r-back.ckpt -n 6 | tail -n +2)
	# state tensors keep their role, the model its name
	run -0 scar-ckpt info --json lda-back.ckpt
	jq -e '.model == "lda" and .iteration == 3 and ([.tensors[] | select(.name == "z") | .role] == ["state"])' <<< "$output"
}

@test "whole model: what cannot be exported whole says why, and names the tensors" {
	scar-train -q --no-timing -m mf -n 3 --save m.ckpt > /dev/null
	run -2 scar-ckpt export m.ckpt -o x.npy
	[[ "$output" == *"has 5 tensors: choose one with --tensor, or export them all with --format safetensors"* ]]
	[[ "$output" == *"its tensors: user_factors item_factors user_bias item_bias global_mean"* ]]
	run -2 scar-ckpt export --tensor nope m.ckpt -o x.npy
	[[ "$output" == *"no tensor 'nope'"*"its tensors: user_factors"* ]]
	run -2 scar-ckpt export -o x.safetensors - < m.ckpt
	[[ "$output" == *"give a file, or --tensor"* ]]
	mkdir run
	scar-train -q --no-timing -m mf -n 4 --policy priority --interval 4 --fraction 1/4 --checkpoint-dir run > /dev/null
	run -2 scar-ckpt export run/ckpt-0000000002.ckpt -o p.safetensors
	[[ "$output" == *"is a partial checkpoint"*"scar-ckpt apply"* ]]
	[ ! -e p.safetensors ]
	# metadata that is not what it says is refused on import
	scar-ckpt export m.ckpt -o m.safetensors
	/usr/bin/python3 - <<'PY' || skip "Debian's python3 is needed to edit the file"
import json, struct
b = open("m.safetensors", "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n]); h["__metadata__"]["scar.shards"] = "0"
s = json.dumps(h).encode(); s += b" " * ((8 - len(s) % 8) % 8)
open("bad.safetensors", "wb").write(struct.pack("<Q", len(s)) + s + b[8 + n:])
PY
	run -2 scar-ckpt import -o bad.ckpt bad.safetensors
	[[ "$output" == *"scar.shards '0' is not a shard count"* ]]
	run -0 scar-ckpt import --shards 4 -o ok.ckpt bad.safetensors
}

# scar-train's snapshots of its own trajectory, s0 .. sN (s0: its first
# checkpoint): trajectory N MODEL POLICY-ARGS...
trajectory() {
	local n=$1 m=$2 k
	shift 2
	scar-train -q --no-timing -m "$m" -n "$n" "$@" --checkpoint-dir A --no-sync > a.jsonl
	cp A/ckpt-0000000000.ckpt s0.ckpt
	for k in $(seq 1 "$n"); do
		scar-train -q --no-timing -m "$m" -n "$k" --save "s$k.ckpt" > /dev/null
	done
}

# Every checkpoint of A is in B with the same present rows and values.
same_checkpoints() {
	local f b
	for f in A/ckpt-*.ckpt; do
		b=B/${f#A/}
		[ -e "$b" ] || { echo "missing $b"; return 1; }
		scar-diff -q "$f" "$b" || { echo "values differ: $f"; return 1; }
		[ "$(scar-ckpt info --json "$f" | jq -c '[.tensors[] | .rows_present]')" = \
		  "$(scar-ckpt info --json "$b" | jq -c '[.tensors[] | .rows_present]')" ] ||
			{ echo "rows differ: $f"; return 1; }
	done
	[ "$(ls A | wc -l)" = "$(ls B | wc -l)" ]
}

@test "scar-ckpt save writes exactly the rows scar-train's policy writes, for every policy" {
	for pol in priority random round-robin full; do
		rm -rf A B
		trajectory 12 mf --policy "$pol" --fraction 1/4 --interval 4
		for k in $(seq 0 12); do
			scar-ckpt save --no-sync --policy "$pol" --fraction 1/4 --interval 4 "s$k.ckpt" B
		done > ev.jsonl
		run -0 same_checkpoints
		# and says so as scar-train does
		diff <(jq -c 'select(.type == "checkpoint") | del(.bytes)' a.jsonl) <(jq -c 'del(.bytes)' ev.jsonl)
	done
	# the directory is a run directory: its saved view is the view save keeps
	scar-ckpt apply -o view.ckpt B
	run -0 scar-diff -q view.ckpt B/.scar-view.ckpt
}

@test "scar-ckpt save from safetensors snapshots chooses the same rows" {
	trajectory 8 mlr --policy priority --fraction 1/4 --interval 4
	for k in $(seq 0 8); do
		scar-ckpt export "s$k.ckpt" -o "s$k.safetensors" 2> /dev/null ||
			scar-ckpt export --tensor weights "s$k.ckpt" -o "s$k.safetensors"
		scar-ckpt save --no-sync --policy priority --fraction 1/4 --interval 4 --shards 8 \
			--iteration "$k" "s$k.safetensors" B > /dev/null
	done
	for f in A/ckpt-*.ckpt; do
		b=B/${f#A/}
		[ "$(scar-ckpt info --json "$f" | jq -c '[.tensors[] | select(.role == "param") | .rows_present]')" = \
		  "$(scar-ckpt info --json "$b" | jq -c '[.tensors[] | select(.role == "param") | .rows_present]')" ]
		run -0 scar-diff -q "$f" "$b"
	done
}

@test "scar-ckpt save: bad input is exit 2 naming it; a policy change needs --force" {
	scar-train -q --no-timing -m mf -n 2 --save s2.ckpt > /dev/null
	scar-train -q --no-timing -m mf -n 4 --save s4.ckpt > /dev/null
	scar-train -q --no-timing -m mf -n 4 --set rank=3 --save r3.ckpt > /dev/null
	run -0 scar-ckpt save --no-sync --policy priority --interval 4 s2.ckpt B
	run -2 scar-ckpt save --no-sync --policy priority --interval 4 r3.ckpt B
	[[ "$output" == *"tensor 'user_factors' has another dtype or shape"* ]]
	run -2 scar-ckpt save --no-sync --policy random --interval 4 s4.ckpt B
	[[ "$output" == *"checkpointed by policy priority"*"needs --force"* ]]
	run -0 scar-ckpt save --no-sync --policy priority --interval 4 s4.ckpt B
	run -2 scar-ckpt save --no-sync --policy priority --interval 4 s4.ckpt B
	[[ "$output" == *"iteration 4 is not after the run directory's last, 4"* ]]
	run -2 scar-ckpt save --no-sync --policy priority --interval 4 --fraction 1/3 s4.ckpt C
	run -2 scar-ckpt save --no-sync --interval 4 s4.ckpt C
	[[ "$output" == *"save needs --policy"* ]]
	scar-ckpt export s2.ckpt -o s2.safetensors
	run -2 scar-ckpt save --no-sync --policy full s2.safetensors D
	[[ "$output" == *"give --shards S"* ]]
	run -2 scar-ckpt save --no-sync --policy full --shards 8 s2.safetensors D
	[[ "$output" == *"give its iteration with --iteration N"* ]]
	run -2 scar-ckpt save --no-sync --policy full --shards 4 s2.ckpt D
	[[ "$output" == *"not the checkpoint's 8"* ]]
	# not a checkpoint iteration (interval 8, 1/4: every 2): nothing written, nothing said
	run -0 scar-ckpt save --no-sync --policy priority s2.ckpt E
	run -0 scar-ckpt save --no-sync --policy priority --iteration 5 s4.ckpt E
	[ -z "$output" ]
	[ ! -e E/ckpt-0000000005.ckpt ]
}

need_torch() {
	/usr/bin/python3 -c 'import torch' 2>/dev/null ||
		skip "Debian's python3-torch is not installed (SCAR_DEPS_ALL=1 sh tools/deps.sh)"
}

@test "pytorch: state_dict -> safetensors -> scar-inject -> load_state_dict keeps other tensors bit-identical and every dtype" {
	need_torch
	/usr/bin/python3 - <<'PY'
import json, struct, torch
torch.manual_seed(0)
sd = {"fc.weight": torch.randn(12, 5), "fc.bias": torch.randn(12).half(),
      "emb.weight": torch.randn(9, 4).to(torch.bfloat16), "steps": torch.arange(6, dtype=torch.int64),
      "w64": torch.randn(7, 2, dtype=torch.float64)}
code = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.int64: "I64", torch.float64: "F64"}
def raw(t):
    return (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).contiguous().numpy().tobytes()
def save(path, sd):
    h, blobs, off = {}, [], 0
    for k, t in sd.items():
        b = raw(t); h[k] = {"dtype": code[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b); off += len(b)
    h["__metadata__"] = {"format": "pt"}
    s = json.dumps(h).encode(); s += b" " * (-len(s) % 8)
    open(path, "wb").write(struct.pack("<Q", len(s)) + s + b"".join(blobs))
save("now.safetensors", sd)
save("old.safetensors", {k: (v * 2 if v.is_floating_point() else v + 100) for k, v in sd.items()})
torch.save(sd, "sd.pt")
PY
	scar-inject --shards 4 --lose-shards 1 --tensor emb.weight --reset from=old.safetensors now.safetensors rec.safetensors 2> /dev/null
	/usr/bin/python3 - <<'PY'
import json, struct, torch
inv = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "I64": torch.int64, "F64": torch.float64}
def load(path):
    b = open(path, "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n]); out = {}
    for k, t in h.items():
        if k == "__metadata__": continue
        x, y = t["data_offsets"]; raw = bytearray(b[8 + n + x: 8 + n + y]); dt = inv[t["dtype"]]
        v = torch.frombuffer(raw, dtype=torch.int16 if dt == torch.bfloat16 else dt)
        out[k] = (v.view(torch.bfloat16) if dt == torch.bfloat16 else v).reshape(t["shape"])
    return out, h["__metadata__"]
sd = torch.load("sd.pt"); rec, meta = load("rec.safetensors")
assert meta == {"format": "pt"}
m = torch.nn.Module()
for k, v in rec.items():
    assert v.dtype == sd[k].dtype, k
    if k != "emb.weight":
        assert torch.equal(v.view(torch.int16) if v.dtype == torch.bfloat16 else v,
                           sd[k].view(torch.int16) if v.dtype == torch.bfloat16 else sd[k]), k
e, o = rec["emb.weight"].float(), sd["emb.weight"].float()
for r in range(9):
    want = o[r] * 2 if r % 4 == 1 else o[r]
    assert torch.equal(e[r], want), r
print("ok")
PY
}

@test "pytorch: the example measures SCAR and traditional recovery on Fashion-MNIST with the tools only (quick)" {
	need_torch
	[ -e "${SCAR_DATA:-$HOME/.cache/scar}/fashion-mnist/train-images-idx3-ubyte.gz" ] ||
		skip "Fashion-MNIST is not in the data cache (make data)"
	run -0 /usr/bin/python3 "$SCAR_ROOT/examples/pytorch/scar_torch.py" --iters 16 --trials 2 \
		--examples 2000 --extra 16 --out out
	# the null trials restore what was there: exactly 0; a rollback from T to C costs T - C
	jq -e 'all(.[]; .null.cost == 0 and .null.cost_interp == 0 and
		.traditional.cost == .fail_at - (.fail_at - .fail_at % 8) and (.scar.censored | not))' out/pytorch.json
	grep -q '^| mean |' out/pytorch.md
	# every event stream follows the minimal schema; the runs wrote scar-train's checkpoints
	for d in out/*/; do
		[ -e "$d/events.jsonl" ] || continue
		[ ! -d "$d/run" ] || run -0 scar-ckpt verify -q "$d"/run/*.ckpt
	done
}

@test "snapshot recovery from a run directory's saved view (--reset from=DIR)" {
	need_torch
	/usr/bin/python3 - <<'PY'
import json, struct, numpy as np
def save(path, seed):
    rng = np.random.default_rng(seed)
    t = {"a": rng.standard_normal((10, 3)).astype(np.float32), "b": rng.standard_normal(6).astype(np.float64)}
    h, blobs, off = {}, [], 0
    for k, v in t.items():
        b = v.tobytes(); h[k] = {"dtype": {"float32": "F32", "float64": "F64"}[str(v.dtype)], "shape": list(v.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b); off += len(b)
    s = json.dumps(h).encode(); s += b" " * (-len(s) % 8)
    open(path, "wb").write(struct.pack("<Q", len(s)) + s + b"".join(blobs))
save("s0.safetensors", 0); save("s1.safetensors", 1)
PY
	scar-ckpt save --no-sync --policy full --interval 1 --shards 4 --iteration 0 s0.safetensors R > /dev/null
	run -0 scar-inject --shards 4 --lose-shards 2 --reset from=R s1.safetensors rec.safetensors
	scar-inject --shards 4 --lose-shards 2 --reset from=s0.safetensors s1.safetensors want.safetensors 2> /dev/null
	cmp rec.safetensors want.safetensors
	# no temporary left behind
	[ -z "$(ls -A "${TMPDIR:-/tmp}" | grep '^\.scar-view\.tmp\.' || :)" ]
	mkdir empty
	run -2 scar-inject --shards 4 --lose-shards 2 --reset from=empty s1.safetensors x.safetensors
	[[ "$output" == *"'empty' has no saved view"* ]]
}

@test "scar-ckpt save: a removed, foreign or special saved view is refused, not a silent restart" {
	for k in 2 4 6; do scar-train -q --no-timing -m mf -n "$k" --save "s$k.ckpt" > /dev/null; done
	for k in 2 4; do scar-ckpt save --no-sync --policy round-robin --interval 8 "s$k.ckpt" v > /dev/null; done
	cp -r v w
	rm v/.scar-view.ckpt
	run -2 scar-ckpt save --no-sync --policy round-robin --interval 8 s6.ckpt v
	[[ "$output" == *"has checkpoints"*"but no saved view"* ]]
	# another run's view (one checkpoint behind)
	scar-ckpt save --no-sync --policy round-robin --interval 8 s2.ckpt x > /dev/null
	cp x/.scar-view.ckpt w/.scar-view.ckpt
	run -2 scar-ckpt save --no-sync --policy round-robin --interval 8 s6.ckpt w
	[[ "$output" == *"not this directory's view"* ]]
	rm w/.scar-view.ckpt
	mkfifo w/.scar-view.ckpt
	run -2 timeout 20 scar-ckpt save --no-sync --policy round-robin --interval 8 s6.ckpt w
	[[ "$output" == *"is not a regular file"* ]]
}

@test "snapshot recovery: delta_norm is the change, also for .npy and in place" {
	mkst cur.safetensors 1
	cp cur.safetensors same.safetensors
	run -0 scar-inject --shards 4 --lose-shards 1 same.safetensors same.safetensors
	want=$(scar-diff --json cur.safetensors same.safetensors | jq .l2 || :)
	[ "$(jq .delta_norm <<< "$output")" = "$want" ]
	/usr/bin/python3 -c 'import numpy as np; np.save("a.npy", np.arange(1, 21, dtype=np.float32).reshape(10, 2))'
	run -0 scar-inject --shards 2 --lose-shards 0 a.npy o.npy
	jq -e '.delta_norm > 0' <<< "$output"
}

@test "scar-bound cost: the perturbed stream is checked as the reference is" {
	scar-train -q --no-timing -m ridge -n 20 > ref.jsonl
	scar-train -q --no-timing -m ridge -n 20 --fail-at 8 --lose-count 2 --cost > p.jsonl
	jq -c 'if .type == "iteration" and .iter == 15 then .objective = "0.1" else . end' p.jsonl > s.jsonl
	run -2 scar-bound cost ref.jsonl s.jsonl
	[[ "$output" == *"s.jsonl"*"objective at iteration 15 is not a finite number"* ]]
	jq -c 'if .type == "header" then del(.objective_higher_better) else . end' p.jsonl > h.jsonl
	run -2 scar-bound cost ref.jsonl h.jsonl
	[[ "$output" == *"h.jsonl"*"objective_higher_better"* ]]
	jq -c 'if .type == "header" then .objective = "accuracy" else . end' p.jsonl > o.jsonl
	run -2 scar-bound cost ref.jsonl o.jsonl
	[[ "$output" == *"objective 'accuracy' is not the reference's"* ]]
	jq -c 'if .type == "recovery" then .iter = 1000 else . end' p.jsonl > r.jsonl
	run -2 scar-bound cost ref.jsonl r.jsonl
	[[ "$output" == *"after the run's last iteration"* ]]
	head -1 p.jsonl > only.jsonl
	run -2 scar-bound cost ref.jsonl only.jsonl
	[[ "$output" == *"only.jsonl"*"no iteration record"* ]]
}

# Python: tensor by tensor, dtype, shape and data bytes of two safetensors files agree.
same_tensors() {
	/usr/bin/python3 - "$@" <<'PY'
import json, struct, sys
def load(p):
    b = open(p, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n]); d = b[8 + n:]
    return {k: (v["dtype"], v["shape"], d[v["data_offsets"][0]:v["data_offsets"][1]])
            for k, v in h.items() if k != "__metadata__"}
a, b = load(sys.argv[1]), load(sys.argv[2])
assert a == b, "tensors differ"
print(" ".join("%s:%s" % (k, a[k][0]) for k in a))
PY
}

@test "f16 and bf16: safetensors F32, F16, BF16, I64 import and export back byte for byte, dtypes kept" {
	mkst m.safetensors 1
	scar-ckpt import --shards 4 -o m.ckpt m.safetensors
	[ "$(scar-ckpt info --json m.ckpt | jq -c '[.minor_version, [.tensors[] | .dtype]]')" = \
	  '[2,["f32","f16","bf16","i64"]]' ]
	scar-ckpt export m.ckpt -o back.safetensors
	run -0 same_tensors m.safetensors back.safetensors
	[ "$output" = "fc.weight:F32 emb.half:F16 norm.bf16:BF16 ids:I64" ]
	run -0 scar-diff -q m.safetensors m.ckpt
	# f16 to .npy is '<f2', the same numbers; .npy has no bf16: refused, naming the tensor
	scar-ckpt export --tensor emb.half -o h.npy m.ckpt
	/usr/bin/python3 -c 'import numpy as np, sys; h = np.load("h.npy"); assert h.dtype == np.float16 and h.shape == (7, 3); print("ok")'
	run -2 scar-ckpt export --tensor norm.bf16 -o b.npy m.ckpt
	[[ "$output" == "scar-ckpt: 'b.npy': tensor 'norm.bf16' is bf16, which .npy has no type for"* ]]
	[ ! -e b.npy ]
	# widened to f32 (exactly): no difference, and a 1.0 file again
	scar-ckpt convert --dtype f32 m.ckpt w.ckpt
	[ "$(scar-ckpt info --json w.ckpt | jq -c '[.minor_version, [.tensors[] | .dtype]]')" = \
	  '[0,["f32","f32","f32","i64"]]' ]
	run -0 --separate-stderr scar-diff --json m.ckpt w.ckpt
	jq -e '.l2 == 0 and .changed == 0 and ([.tensors[].dtype] == ["f32", "f32", "f32", "i64"])' <<< "$output"
	run -0 scar-diff -q w.ckpt m.safetensors
	# and narrowed back: the same bytes as before
	scar-ckpt convert --dtype f16 w.ckpt h16.ckpt
	scar-ckpt export --tensor emb.half h16.ckpt -o h16.npy
	cmp h.npy h16.npy
	# a file without f16 or bf16 is written as before: format 1.0
	scar-train -q --no-timing -m ridge -n 2 --save r.ckpt > /dev/null
	[ "$(od -An -tu2 -j10 -N2 r.ckpt | tr -d ' ')" = 0 ]
}

@test "f16 and bf16: inject and apply; nothing perturbed is exactly no change" {
	mkst m.safetensors 1
	scar-ckpt import --shards 4 -o m.ckpt m.safetensors
	scar-ckpt export m.ckpt -o m2.safetensors
	# null perturbations: exactly zero
	run -0 scar-inject --noise-l2 0 --report r0.json m.ckpt z.ckpt
	run -0 scar-diff -q --all m.ckpt z.ckpt
	jq -e '.delta_norm == 0' r0.json
	run -0 scar-inject --lose-shards 1 --reset from=m.ckpt --report r1.json m.ckpt same.ckpt
	run -0 scar-diff -q --all m.ckpt same.ckpt
	jq -e '.delta_norm == 0' r1.json
	# noise on the f16 tensor reaches its norm, stays f16 and leaves the others' bytes
	scar-inject --tensor emb.half --noise-l2 0.5 --report rn.json m.ckpt n.ckpt
	jq -e '(.delta_norm - 0.5 | fabs) < 1e-6' rn.json
	[ "$(scar-ckpt info --json n.ckpt | jq -r '.tensors[1].dtype')" = f16 ]
	run -1 --separate-stderr scar-diff --json m.ckpt n.ckpt
	jq -e '(.l2 - 0.5 | fabs) < 1e-6 and ([.tensors[] | select(.l2 > 0) | .name] == ["emb.half"])' <<< "$output"
	# noise that would pass f16's largest finite value is refused
	run -2 scar-inject --tensor emb.half --noise-l2 1e6 m.ckpt big.ckpt
	[[ "$output" == *"does not fit tensor 'emb.half' (f16)"* ]]
	# lost shards zeroed: the other rows' bytes kept, in every dtype
	scar-inject --lose-shards 1,3 --reset zero m.ckpt l.ckpt 2> /dev/null
	scar-ckpt export l.ckpt -o l.safetensors
	run -0 rows_check l.safetensors zero m2.safetensors 4 1,3
	# bit flips land in bf16's 7 mantissa bits
	run -0 scar-inject --tensor norm.bf16 --bitflip-count 5 --bits mantissa --report rb.json m.ckpt fb.ckpt
	run -1 --separate-stderr scar-diff --json --tensor norm.bf16 m.ckpt fb.ckpt
	jq -e '.changed >= 1 and .changed <= 5' <<< "$output"
	# a partial checkpoint of f16 rows applied over the base gives them back
	scar-ckpt save --no-sync --policy priority --fraction 1/2 --interval 2 --shards 4 --iteration 0 m.safetensors R > /dev/null
	scar-ckpt save --no-sync --policy priority --fraction 1/2 --interval 2 --shards 4 --iteration 1 l.safetensors R > /dev/null
	scar-ckpt apply --no-sync -o v.ckpt R
	run -0 scar-diff -q --all v.ckpt R/.scar-view.ckpt
	[ "$(scar-ckpt info --json R/ckpt-0000000001.ckpt | jq -c '[.kind, .minor_version]')" = '["partial",2]' ]
}

@test "f16 and bf16: from=DIR restores a bf16 snapshot's lost rows from the saved view, bytes exact" {
	mkst s0.safetensors 1
	mkst s1.safetensors 2
	mkst s2.safetensors 3
	scar-ckpt save --no-sync --policy priority --fraction 1/2 --interval 2 --shards 4 --iteration 0 s0.safetensors R > /dev/null
	scar-ckpt save --no-sync --policy priority --fraction 1/2 --interval 2 --shards 4 --iteration 1 s1.safetensors R > /dev/null
	[ "$(scar-ckpt info --json R/.scar-view.ckpt | jq -c '[.tensors[] | .dtype]')" = '["f32","f16","bf16","i64"]' ]
	scar-ckpt export R/.scar-view.ckpt -o view.safetensors
	run -0 scar-inject --shards 4 --lose-shards 1,2 --reset from=R s2.safetensors rec.safetensors
	jq -e '.rows_touched > 0 and .tensors_touched == 4' <<< "$output"
	run -0 rows_check rec.safetensors view.safetensors s2.safetensors 4 1,2
	scar-inject --shards 4 --lose-shards 1,2 --reset from=view.safetensors s2.safetensors want.safetensors 2> /dev/null
	cmp rec.safetensors want.safetensors
	# one tensor only: the bf16 one
	run -0 scar-inject --shards 4 --lose-shards 3 --tensor norm.bf16 --reset from=R s2.safetensors one.safetensors
	jq -e '.tensors_touched == 1' <<< "$output"
}

@test "f16 and bf16: the built-in models refuse to resume from another dtype, naming the tensor and both" {
	scar-train -q --no-timing -m ridge -n 3 --save r.ckpt > /dev/null
	scar-ckpt convert --dtype f16 r.ckpt r16.ckpt
	run -2 scar-train -q --no-timing --resume r16.ckpt -n 6
	[[ "$output" == "scar-train: checkpoint tensor 'w' is f16, model 'ridge' keeps it as f64"* ]]
	scar-train -q --no-timing -m mlr -n 2 --save m.ckpt > /dev/null
	scar-ckpt convert --dtype bf16 m.ckpt mb.ckpt
	run -2 scar-train -q --no-timing --resume mb.ckpt -n 4
	[[ "$output" == *"checkpoint tensor '"*"' is bf16, model 'mlr' keeps it as f32"* ]]
}

@test "f16: --reset random that would pass the largest finite f16 is refused, nothing written" {
	/usr/bin/python3 -c "import numpy" 2> /dev/null || skip "Debian's python3-numpy is not installed (make deps)"
	/usr/bin/python3 -c "
import numpy as np
np.save('big16.npy', np.where(np.arange(400) % 2 == 0, 60000, -60000).astype(np.float16).reshape(100, 4))"
	scar-ckpt import --shards 2 -o b16.ckpt big16.npy
	run -2 --separate-stderr scar-inject --lose-shards 0 --reset random b16.ckpt o16.ckpt
	[[ $stderr == "scar-inject: reset random: "*"tensor 'big16' (f16) passes its largest finite value"* ]]
	[ ! -e o16.ckpt ]
	# Values well inside the range reset as before.
	/usr/bin/python3 -c "
import numpy as np
np.save('small16.npy', (np.arange(400) % 7).astype(np.float16).reshape(100, 4))"
	scar-ckpt import --shards 2 -o s16.ckpt small16.npy
	run -0 scar-inject --lose-shards 0 --reset random s16.ckpt o16.ckpt
}
