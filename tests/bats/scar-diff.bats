#!/usr/bin/env bats
# scar-diff: norms and exit codes, partial checkpoints, .npy and safetensors,
# pipes, layout mismatches, usage errors, options in help/man/completions.
bats_require_minimum_version 1.5.0
load helper

# Two ridge checkpoints 10 and 12 iterations in (8 shards, f64 w of 50x1).
two() {
	scar-train -q --model ridge --iters 10 --save a.ckpt >/dev/null
	scar-train -q --model ridge --iters 12 --save b.ckpt >/dev/null
}

need_jq() {
	command -v jq >/dev/null || skip "jq not installed"
}

need_numpy() {
	/usr/bin/python3 -c 'import numpy' 2>/dev/null || skip "numpy not installed"
}

# close X Y [REL]: |X - Y| <= REL * max(|X|, |Y|, tiny)
close() {
	awk -v x="$1" -v y="$2" -v r="${3:-1e-12}" 'BEGIN {
		d = x - y; if (d < 0) d = -d; m = x < 0 ? -x : x; n = y < 0 ? -y : y;
		if (n > m) m = n; if (m < 1e-300) m = 1e-300; exit !(d <= r * m) }'
}

@test "scar-diff: --help to stdout exit 0; misuse exits 2 with a usage hint" {
	run -0 scar-diff --help
	[[ $output == "usage: scar-diff "* ]]
	run -2 scar-diff a.ckpt
	[[ $output == *"two snapshots to compare are needed"* ]]
	[[ $output == *"try 'scar-diff --help'"* ]]
	run -2 scar-diff a b c
	run -2 scar-diff --per column a b
	[[ $output == *"'column' is not 'row' or 'tensor'"* ]]
	run -2 scar-diff --json --text a b
	run -2 scar-diff --tolerance -1 a b
	run -2 scar-diff --bogus a b
	run -2 scar-diff --sort size a b
	[[ $output == *"option '--sort': 'size' is not l2, linf, rel or name"* ]]
	run -2 scar-diff --limit -1 a b
	run -2 scar-diff --limit 1x a b
	run -0 scar-diff --version
	[[ $output == "scar-diff "* ]]
}

@test "scar-diff: equal snapshots exit 0 with zero norms" {
	need_jq
	two
	run -0 --separate-stderr scar-diff --json a.ckpt a.ckpt
	[ "$(jq ".l2 == 0" <<<"$output")" = true ]
	[ "$(jq .changed <<<"$output")" = 0 ]
	[ "$(jq .elements <<<"$output")" = 50 ]
	[ "$(jq .differ <<<"$output")" = false ]
	[ "$(jq '.top_rows | length' <<<"$output")" = 0 ]
}

@test "scar-diff: different snapshots exit 1; totals agree with tensors, shards and rows" {
	need_jq
	two
	run -1 --separate-stderr scar-diff --json a.ckpt b.ckpt
	j=$output
	[ "$(jq -r .type <<<"$j")" = diff ]
	[ "$(jq .iteration_a <<<"$j")" = 10 ]
	[ "$(jq .iteration_b <<<"$j")" = 12 ]
	[ "$(jq '.shards | length' <<<"$j")" = 8 ]
	[ "$(jq '.top_rows | length' <<<"$j")" = 10 ]
	l2=$(jq .l2 <<<"$j")
	close "$l2" "$(jq '.tensors[0].l2' <<<"$j")"
	# shards partition the rows: their squared norms add up
	close "$l2" "$(jq '[.shards[].l2 | . * .] | add | sqrt' <<<"$j")" 1e-12
	close "$(jq .l1 <<<"$j")" "$(jq '[.shards[].l1] | add' <<<"$j")" 1e-12
	# per-row lines add up too, and the top rows are the largest ones
	run -1 --separate-stderr scar-diff --per row a.ckpt b.ckpt
	[ "$(head -1 <<<"$output" | jq -r .format)" = scar-diff-rows ]
	[ "$(grep -c '"type":"row"' <<<"$output")" = 50 ]
	[ "$(tail -1 <<<"$output" | jq -r .type)" = diff ]
	close "$l2" "$(grep '"type":"row"' <<<"$output" | jq -s '[.[].l2 | . * .] | add | sqrt')" 1e-12
	top=$(grep '"type":"row"' <<<"$output" | jq -s 'max_by(.l2) | .row')
	[ "$(jq '.top_rows[0].row' <<<"$j")" = "$top" ]
	# the relative norm is against B
	close "$(jq .rel_l2 <<<"$j")" "$(jq '.l2 / .norm_b' <<<"$j")"
}

@test "scar-diff: --tolerance, --quiet and text output" {
	two
	run -0 scar-diff -q --tolerance 10 a.ckpt b.ckpt
	[ -z "$output" ]
	run -1 scar-diff -q --tolerance 1e-9 a.ckpt b.ckpt
	[ -z "$output" ]
	run -1 scar-diff --text a.ckpt b.ckpt
	[[ $output == *"'a.ckpt' (ckpt, ridge, iteration 10, 8 shards) vs 'b.ckpt'"* ]]
	[[ $output == *$'\ntensor  '*'l2'*'rel_l2'*'l1'*$'linf  changed\nw  '* ]]
	[[ $output == *$'\nshard  '*$'changed\n0  '* ]]
	[[ $output == *"top rows by L2 change:"* ]]
	[[ ${lines[-1]} == differ ]]
	run -0 scar-diff --text --tolerance 10 a.ckpt b.ckpt
	[[ ${lines[-1]} == "within tolerance" ]]
}

@test "scar-diff: pipes and standard input give the same numbers as files" {
	need_jq
	two
	want=$(scar-diff --json a.ckpt b.ckpt | jq .l2)
	run -1 --separate-stderr scar-diff --json - b.ckpt <a.ckpt
	[ "$(jq .l2 <<<"$output")" = "$want" ]
	run -1 --separate-stderr scar-diff --json a.ckpt - <b.ckpt
	[ "$(jq .l2 <<<"$output")" = "$want" ]
	[ "$(jq .loaded_whole <<<"$output")" = false ]
	run -1 --separate-stderr scar-diff --json <(cat a.ckpt) <(cat b.ckpt)
	[ "$(jq .l2 <<<"$output")" = "$want" ]
	[ "$(jq .loaded_whole <<<"$output")" = true ]
	run -2 scar-diff - - <a.ckpt
	[[ $output == *"only one operand can be standard input"* ]]
	# a writer that pauses inside the magic number, and a tiny one that ends
	run -0 timeout 20 bash -c '{ head -c 3 a.ckpt; sleep 0.3; tail -c +4 a.ckpt; } | scar-diff -q - a.ckpt'
	run -2 timeout 20 bash -c 'printf hi | scar-diff - a.ckpt'
	[[ $output == *"'-' is not a checkpoint, .npy or safetensors file"* ]]
}

@test "scar-diff: a FIFO operand is opened once and read as a stream" {
	need_jq
	two
	scar-ckpt export --tensor w -o a.npy a.ckpt
	want=$(scar-diff --json a.ckpt b.ckpt | jq .l2)
	mkfifo fifo
	# Each writer writes its file in one write(2) and exits: a second open
	# of the FIFO would find no writer and wait (124 after the timeout).
	[ "$(stat -c %s b.ckpt)" -lt 65536 ]
	(cat b.ckpt > fifo &)
	run -1 --separate-stderr timeout 20 scar-diff --json a.ckpt fifo
	[ "$(jq .l2 <<<"$output")" = "$want" ]
	[ "$(jq -r .b.path <<<"$output")" = fifo ]
	(cat a.ckpt > fifo &)
	run -1 --separate-stderr timeout 20 scar-diff --json fifo b.ckpt
	[ "$(jq .l2 <<<"$output")" = "$want" ]
	(cat a.npy > fifo &)
	run -0 --separate-stderr timeout 20 scar-diff --json a.npy fifo
	[ "$(jq -r .b.kind <<<"$output")" = npy ]
	(printf 'not a snapshot\n' > fifo &)
	run -2 --separate-stderr timeout 20 scar-diff a.ckpt fifo
	[ "$stderr" = "scar-diff: 'fifo' is not a checkpoint, .npy or safetensors file" ]
}

@test "scar-diff: different shard counts are compared row by row" {
	need_jq
	two
	scar-ckpt convert --shards 3 --no-sync b.ckpt b3.ckpt
	want=$(scar-diff --json a.ckpt b.ckpt | jq .l2)
	run -1 --separate-stderr scar-diff --json a.ckpt b3.ckpt
	close "$(jq .l2 <<<"$output")" "$want"
	[ "$(jq '.shards | length' <<<"$output")" = 8 ]
	[ "$(jq .loaded_whole <<<"$output")" = true ]
}

@test "scar-diff: partial checkpoints compare the rows in both and list the rest" {
	need_jq
	mkdir d
	scar-train -q --model mlr --iters 4 --policy round-robin --interval 2 --fraction 1/2 \
		--checkpoint-dir d >/dev/null
	full=d/ckpt-0000000000.ckpt
	part=d/ckpt-0000000004.ckpt
	[ "$(scar-ckpt info "$part" | awk '/^kind:/ { print $2 }')" = partial ]
	run -1 --separate-stderr scar-diff --json "$full" "$part"
	present=$(scar-ckpt info "$part" | awk '$1 == "weights" { split($5, p, "/"); print p[1] }')
	[ "$(jq '.tensors[0].rows_compared' <<<"$output")" = "$present" ]
	[ "$(jq '.missing.rows_only_a' <<<"$output")" = $((21 - present)) ]
	[ "$(jq '.missing.rows_only_b' <<<"$output")" = 0 ]
	[ "$(jq '[.missing.rows[0].only_a[][1]] | add' <<<"$output")" = $((21 - present)) ]
	# the same partial against itself: equal, unless missing rows count
	run -0 scar-diff -q "$part" "$part"
	run -0 scar-diff -q --tolerance 1e9 "$full" "$part"
	run -1 scar-diff -q --strict --tolerance 1e9 "$full" "$part"
}

@test "scar-diff: .npy files, matched by stem, from scar-ckpt export and from numpy" {
	need_jq
	two
	scar-ckpt export --tensor w -o w.npy b.ckpt
	run -0 scar-diff -q b.ckpt w.npy
	want=$(scar-diff --json a.ckpt b.ckpt | jq .l2)
	run -1 --separate-stderr scar-diff --json a.ckpt w.npy
	[ "$(jq .l2 <<<"$output")" = "$want" ]
	[ "$(jq -r .b.kind <<<"$output")" = npy ]
	[ "$(jq .b.iteration <<<"$output")" = null ]
	scar-ckpt export --tensor w -o x.npy a.ckpt
	run -1 --separate-stderr scar-diff --json x.npy w.npy	# two arrays pair up
	# A checkpoint's rows are summed shard by shard, an array's in row
	# order: the norms agree to rounding, not always to the last bit.
	awk -v a="$(jq .l2 <<<"$output")" -v b="$want" \
		'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 4e-16 * b) }'
	need_numpy
	/usr/bin/python3 - <<'EOF'
import numpy as np
rng = np.random.default_rng(3)
a = rng.standard_normal((300, 7))
b = a.copy(); b[5, 2] += 0.25; b[17] -= 1e-3
np.save("p.npy", a); np.save("q.npy", b)
np.save("big.npy", a.astype(">f8"))
np.save("f.npy", a.astype(np.float32))
with open("ref", "w") as f:
    print(repr(float(np.linalg.norm(a - b))), file=f)
EOF
	run -1 --separate-stderr scar-diff --json p.npy q.npy
	close "$(jq .l2 <<<"$output")" "$(cat ref)" 1e-14
	[ "$(jq .changed <<<"$output")" = 8 ]
	[ "$(jq '.top_rows[0].row' <<<"$output")" = 5 ]
	run -0 scar-diff -q p.npy big.npy	# big-endian on disk, same values
	run -2 scar-diff p.npy f.npy
	[[ $output == *"tensor 'p' differs in layout: f64 [300, 7] in 'p.npy', f32 [300, 7] in 'f.npy'"* ]]
}

# A safetensors file of one f64 tensor "w" and one f32 tensor "extra" (the
# format is public and small: written here by hand, as PyTorch would).
mksafetensors() {
	/usr/bin/python3 - "$1" "$2" <<'EOF'
import json, struct, sys
import numpy as np
w = np.load(sys.argv[1]).astype("<f8")
extra = np.arange(6, dtype="<f4")
hdr = {"__metadata__": {"format": "pt"},
       "extra": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
       "w": {"dtype": "F64", "shape": list(w.shape), "data_offsets": [24, 24 + w.nbytes]}}
h = json.dumps(hdr).encode()
h += b" " * (-len(h) % 8)
with open(sys.argv[2], "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h + extra.tobytes() + w.tobytes())
EOF
}

@test "scar-diff: safetensors against a checkpoint, by name" {
	need_jq
	need_numpy
	two
	scar-ckpt export --tensor w -o w.npy b.ckpt
	mksafetensors w.npy b.safetensors
	run -0 --separate-stderr scar-diff --json b.ckpt b.safetensors
	[ "$(jq -r .b.kind <<<"$output")" = safetensors ]
	[ "$(jq -c .missing.tensors_only_b <<<"$output")" = '["extra"]' ]
	want=$(scar-diff --json a.ckpt b.ckpt | jq .l2)
	run -1 --separate-stderr scar-diff --json a.ckpt b.safetensors
	[ "$(jq .l2 <<<"$output")" = "$want" ]
	run -0 scar-diff -q --tensor extra b.safetensors b.safetensors
	run -2 scar-diff --tensor nope a.ckpt b.safetensors
	[[ $output == *"no tensor 'nope'"* ]]
}

@test "scar-diff: half-precision arrays (f16, bf16) are widened exactly" {
	need_jq
	need_numpy
	/usr/bin/python3 - <<'EOF'
import json, struct
import numpy as np
rng = np.random.default_rng(5)
h = rng.standard_normal((40, 3)).astype(np.float16)
np.save("h.npy", h)
np.save("w.npy", h.astype(np.float32))
bf = (h.astype(np.float32).view(np.uint32) >> 16).astype("<u2")
hdr = {"w": {"dtype": "BF16", "shape": [40, 3], "data_offsets": [0, bf.nbytes]}}
t = json.dumps(hdr).encode()
with open("bf.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(t)) + t + bf.tobytes())
# bf16 truncation of the f32 values, as a reference
np.save("wbf.npy", (bf.astype(np.uint32) << 16).view(np.float32))
EOF
	run -0 scar-diff -q h.npy w.npy
	run -0 scar-diff -q bf.safetensors wbf.npy
	run -1 --separate-stderr scar-diff --json bf.safetensors w.npy
	[ "$(jq -r '.tensors[0].dtype' <<<"$output")" = f32 ]
}

# A model of Hugging Face names, 12 attention weights of 3 layers moved by
# growing amounts, an untouched embedding, a tie ("tie.b" and "tie.a" moved
# alike) and a NaN difference; B lacks "lm_head.weight" and holds "extra".
hfpair() {
	/usr/bin/python3 - "$SCAR_ROOT/tests" <<'EOF'
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from mkhfsharded import write
rng = np.random.default_rng(7)
A, B = {}, {}
def put(d, name, x):
    d[name] = ("F32", x.astype("<f4").tobytes(), list(x.shape))
k = 1
for layer in range(3):
    for p in ("q_proj", "k_proj", "v_proj", "o_proj"):
        a = rng.standard_normal((8, 4))
        put(A, f"model.layers.{layer}.self_attn.{p}.weight", a)
        put(B, f"model.layers.{layer}.self_attn.{p}.weight", a + 0.001 * k)
        k += 1
e = rng.standard_normal((16, 4)); put(A, "model.embed_tokens.weight", e); put(B, "model.embed_tokens.weight", e)
t = rng.standard_normal((2, 2))
for n in ("tie.b", "tie.a"):
    put(A, n, t); put(B, n, t + 0.5)
put(A, "nan.w", np.ones((2, 2))); put(B, "nan.w", np.array([[1, np.nan], [1, 1]]))
put(A, "lm_head.weight", rng.standard_normal((4, 4)))
put(B, "extra", rng.standard_normal((3,)))
write("a.safetensors", A, None)
write("b.safetensors", B, None)
EOF
}

@test "scar-diff: --sort and --limit order and cut the tensor list; totals stay over all" {
	need_jq
	need_numpy
	hfpair
	run -1 --separate-stderr scar-diff --json a.safetensors b.safetensors
	all=$output
	[ "$(jq '.tensors | length' <<<"$all")" = 16 ]
	[ "$(jq .tensors_omitted <<<"$all")" = 0 ]
	# by l2: the NaN first, then the tie by name, then the layers, largest first
	run -1 --separate-stderr scar-diff --json --sort l2 a.safetensors b.safetensors
	[ "$(jq -c '[.tensors[:5][].name]' <<<"$output")" = \
	  '["nan.w","tie.a","tie.b","model.layers.2.self_attn.o_proj.weight","model.layers.2.self_attn.v_proj.weight"]' ]
	[ "$(jq -r '.tensors[-1].name' <<<"$output")" = model.embed_tokens.weight ]
	jq -e '[.tensors[1:][].l2] | . == (sort | reverse)' <<<"$output"
	# the same measures and totals as in file order, only the order differs
	[ "$(jq -c '[.tensors[] | [.name, .l2]] | sort' <<<"$output")" = "$(jq -c '[.tensors[] | [.name, .l2]] | sort' <<<"$all")" ]
	[ "$(jq -c '[.l2, .l1, .changed, .top_rows]' <<<"$output")" = "$(jq -c '[.l2, .l1, .changed, .top_rows]' <<<"$all")" ]
	run -1 --separate-stderr scar-diff --json --sort name a.safetensors b.safetensors
	[ "$(jq -c '[.tensors[].name]' <<<"$output")" = "$(jq -c '[.tensors[].name] | sort' <<<"$all")" ]
	run -1 --separate-stderr scar-diff --json --sort linf a.safetensors b.safetensors
	jq -e '[.tensors[1:][].linf] | . == (sort | reverse)' <<<"$output"
	run -1 --separate-stderr scar-diff --json --sort rel a.safetensors b.safetensors
	jq -e '[.tensors[1:][].rel_l2] | . == (sort | reverse)' <<<"$output"
	# --limit: the first N of that order, and how many were left out
	run -1 --separate-stderr scar-diff --json --sort l2 --limit 3 a.safetensors b.safetensors
	[ "$(jq -c '[.tensors[].name]' <<<"$output")" = '["nan.w","tie.a","tie.b"]' ]
	[ "$(jq .tensors_omitted <<<"$output")" = 13 ]
	[ "$(jq -c '[.elements, .changed, .shards]' <<<"$output")" = "$(jq -c '[.elements, .changed, .shards]' <<<"$all")" ]
	run -1 --separate-stderr scar-diff --json --limit 0 a.safetensors b.safetensors
	[ "$(jq '.tensors | length' <<<"$output")" = 0 ]
	[ "$(jq .tensors_omitted <<<"$output")" = 16 ]
	run -1 --separate-stderr scar-diff --text --sort l2 --limit 2 --top 0 a.safetensors b.safetensors
	[ "${lines[2]%% *}" = tensor ]
	[ "${lines[3]%% *}" = nan.w ]
	[ "${lines[4]%% *}" = tie.a ]
	[ "${lines[5]}" = "(14 more tensors not listed: --limit 2)" ]
	[[ ${lines[1]} == "total      l2 nan "* ]]
	# the per-row lines stay in file order, all of them
	run -1 --separate-stderr scar-diff --per row --sort name --limit 1 a.safetensors b.safetensors
	[ "$(grep -c '"type":"row"' <<<"$output")" = $((12 * 8 + 16 + 2 + 2 + 2)) ]
	[ "$(tail -1 <<<"$output" | jq '.tensors | length')" = 1 ]
}

@test "scar-diff: long names fit the terminal, cut in the middle there only" {
	need_numpy
	command -v script >/dev/null || skip "script(1) not installed"
	hfpair
	long=model.layers.2.self_attn.v_proj.weight
	# piped, even as text: every name whole, in a column as wide as the longest
	run -1 --separate-stderr scar-diff --text --top 0 a.safetensors b.safetensors
	[[ $output != *...* ]]
	line=$(grep "^$long " <<<"$output")
	[[ $line == "$long  "*" 32/32" ]]
	[ "$(grep -c '^model.embed_tokens.weight  ' <<<"$output")" = 1 ]
	# a wide terminal: the same, l1 included
	run -1 script -qec "COLUMNS=200 scar-diff --top 0 a.safetensors b.safetensors" /dev/null
	[[ $output == *"$long  "* ]]
	[[ $(grep '^tensor ' <<<"$output") == *" l1 "* ]]
	[[ $output != *...* ]]
	# 90 columns: l1 makes room for the names (the total line keeps it)
	run -1 script -qec "COLUMNS=90 scar-diff --top 0 a.safetensors b.safetensors" /dev/null
	[[ $output == *"$long  "* ]]
	[[ $(grep '^tensor ' <<<"$output") != *" l1 "* ]]
	[[ $(grep '^total ' <<<"$output") == *" l1 "* ]]
	# 70 columns: names cut in the middle, every table line within the width
	run -1 script -qec "COLUMNS=70 scar-diff --top 0 a.safetensors b.safetensors" /dev/null
	[[ $output == *$'\nmodel.layers..._proj.weight  '* ]]
	[[ $output == *$'\nmodel.embed_tokens.weight    '* ]]
	[[ $output != *"$long"* ]]
	while IFS= read -r l; do
		l=${l%$'\r'}
		case $l in model.*|tensor*) [ "${#l}" -le 70 ] || { echo "too long: $l"; false; } ;; esac
	done <<<"$output"
	# JSON at a terminal keeps the names whole
	run -1 script -qec "COLUMNS=40 scar-diff --json a.safetensors b.safetensors" /dev/null
	[[ $output == *"\"$long\""* ]]
}

@test "scar-diff: a tensor in one side only is a warning on stderr, a difference with --strict" {
	need_numpy
	/usr/bin/python3 - "$SCAR_ROOT/tests" <<'EOF'
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from mkhfsharded import write
w = np.arange(6, dtype="<f4").tobytes()
common = {"w": ("F32", w, [6])}
write("a.safetensors", dict(common, **{"lm_head.weight": ("F32", w, [6])}), None)
write("b.safetensors", dict(common, **{"x\x1b[2Jy": ("F32", w, [6])}), None)
many = dict(common, **{"t%02d" % i: ("F32", w, [6]) for i in range(11)})
write("many.safetensors", many, None)
EOF
	run -0 --separate-stderr scar-diff -q a.safetensors b.safetensors
	[ -z "$output" ]
	[ "${stderr_lines[0]}" = "scar-diff: warning: tensor 'lm_head.weight' is only in 'a.safetensors': not compared (--strict makes it a difference)" ]
	# names from files are quoted for the terminal
	[ "${stderr_lines[1]}" = "scar-diff: warning: tensor 'x\\e[2Jy' is only in 'b.safetensors': not compared (--strict makes it a difference)" ]
	[ "${#stderr_lines[@]}" = 2 ]
	run -1 --separate-stderr scar-diff -q --strict a.safetensors b.safetensors
	[[ $stderr == *"'lm_head.weight' is only in 'a.safetensors': not compared (a difference: --strict)"* ]]
	run -0 --separate-stderr scar-diff --json a.safetensors b.safetensors
	[[ $stderr == *"'lm_head.weight' is only in 'a.safetensors'"* ]]
	# the text report lists them itself: no warning then
	run -0 --separate-stderr scar-diff --text a.safetensors b.safetensors
	[ -z "$stderr" ]
	[[ $output == *"tensor 'lm_head.weight' only in A"* ]]
	# the first eight of a side by name, then a count
	run -0 --separate-stderr scar-diff -q a.safetensors many.safetensors
	[ "$(grep -c "is only in 'many.safetensors'" <<<"$stderr")" = 8 ]
	[[ $stderr == *"scar-diff: warning: 3 more tensors are only in 'many.safetensors'"* ]]
	# equal files warn about nothing
	run -0 --separate-stderr scar-diff -q a.safetensors a.safetensors
	[ -z "$stderr" ]
}

@test "scar-diff: unreadable, foreign and mismatched inputs exit 2 with the file named" {
	two
	run -2 scar-diff a.ckpt missing.ckpt
	[[ $output == "scar-diff: cannot open 'missing.ckpt': No such file or directory"* ]]
	echo "hello, not a snapshot" >text.txt
	run -2 scar-diff a.ckpt text.txt
	[[ $output == *"'text.txt' is not a checkpoint, .npy or safetensors file"* ]]
	head -c 300 a.ckpt >cut.ckpt
	run -2 scar-diff a.ckpt cut.ckpt
	[[ $output == *"cut.ckpt"* ]]
	scar-train -q --model ridge --set d=20 --iters 2 --save small.ckpt >/dev/null
	run -2 scar-diff a.ckpt small.ckpt
	[[ $output == *"tensor 'w' differs in layout: f64 [50, 1] in 'a.ckpt', f64 [20, 1] in 'small.ckpt'"* ]]
	scar-ckpt export --tensor w -o other.npy a.ckpt
	run -2 scar-diff --tensor q a.ckpt other.npy
}

@test "scar-diff: memory stays within two sections plus 16 MiB" {
	[ -x /usr/bin/time ] || skip "/usr/bin/time not installed"
	# ASan's shadow memory and quarantine are RSS the bound is not about
	[[ $SCAR_SANITIZE != *address* ]] || skip "built with SANITIZE=$SCAR_SANITIZE: RSS is ASan's"
	# (/usr/bin/time runs the binary itself, never SCAR_TEST_WRAPPER's
	# wrapper on PATH: the bound is the tool's RSS, not valgrind's)
	# 64 MiB of f32 in 8 shards: 8 MiB sections
	head -c $((64 << 20)) /dev/urandom >a.raw
	head -c $((64 << 20)) /dev/urandom >b.raw
	scar-ckpt import --dtype f32 --shape 16384,1024 --shards 8 --name w --no-sync -o a.ckpt a.raw
	scar-ckpt import --dtype f32 --shape 16384,1024 --shards 8 --name w --no-sync -o b.ckpt b.raw
	rm a.raw b.raw
	run -1 /usr/bin/time -f 'maxrss %M' "$SCAR_ROOT/scar-diff" -q a.ckpt b.ckpt
	kb=$(sed -n 's/^maxrss //p' <<<"$output")
	echo "max RSS $kb KiB, bound $((2 * 8192 + 16384)) KiB"
	[ "$kb" -le $((2 * 8192 + 16384)) ]
	run -1 /usr/bin/time -f 'maxrss %M' "$SCAR_ROOT/scar-diff" -q - b.ckpt <a.ckpt
	kb=$(sed -n 's/^maxrss //p' <<<"$output")
	echo "from a pipe: max RSS $kb KiB"
	[ "$kb" -le $((2 * 8192 + 16384)) ]
}

@test "scar-diff: state tensors only with --all" {
	need_jq
	scar-train -q --model mlr --iters 3 --save a.ckpt >/dev/null
	scar-train -q --model mlr --iters 4 --save b.ckpt >/dev/null
	run -1 --separate-stderr scar-diff --json a.ckpt b.ckpt
	[ "$(jq '[.tensors[].role] | unique' -c <<<"$output")" = '["param"]' ]
	run -1 --separate-stderr scar-diff --json --all a.ckpt b.ckpt
	[ "$(jq '[.tensors[] | select(.role == "state")] | length' <<<"$output")" -ge 1 ]
}

@test "scar-diff: every long option is in --help, the man page and all three completions" {
	src="$SCAR_ROOT/cmd/scar-diff.c"
	opts=$(grep -oE '^[[:space:]]*\{ "[a-zA-Z][a-zA-Z-]*", (no|required|optional)_argument' "$src" |
		sed -E 's/.*"([a-zA-Z-]+)".*/\1/' | sort -u)
	[ "$(printf '%s\n' "$opts" | wc -l)" -ge 13 ]
	help=$(scar-diff --help)
	man=$(MANWIDTH=200 mandoc -Tascii "$SCAR_ROOT/man/scar-diff.1" | col -b)
	for o in $opts; do
		[[ $help == *"--$o"* ]] || { echo "--$o missing from --help"; false; }
		[[ $man == *"--$o"* ]] || { echo "--$o missing from the man page"; false; }
		grep -q -- "--$o\b" "$SCAR_ROOT/completions/bash/scar-diff" || { echo "--$o missing from bash"; false; }
		grep -q -- "--$o\b" "$SCAR_ROOT/completions/zsh/_scar-diff" || { echo "--$o missing from zsh"; false; }
		grep -qE -- "-l $o( |\$)" "$SCAR_ROOT/completions/fish/scar-diff.fish" || { echo "--$o missing from fish"; false; }
	done
}
