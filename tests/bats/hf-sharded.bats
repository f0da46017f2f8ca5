#!/usr/bin/env bats
# Hugging Face sharded safetensors snapshots (issue 19): a directory of
# model-0000k-of-0000n.safetensors files and model.safetensors.index.json,
# read by scar-diff, scar-ckpt import and scar-inject as one snapshot, and
# the index held against the files; and the 8-bit floats F8_E4M3 and
# F8_E5M2, widened exactly. The snapshots are made by tests/mkhfsharded.py
# with Debian's python3 and numpy.
bats_require_minimum_version 1.5.0
load helper

PY=/usr/bin/python3

setup() {
	"$PY" -c 'import numpy' 2>/dev/null || skip "Debian's python3 with numpy is not installed"
	cd "$BATS_TEST_TMPDIR"
}

mk() {
	"$PY" "$SCAR_ROOT/tests/mkhfsharded.py" "$@"
}

# Rewrite DIR's index with the Python statement $2 (j: the index, wm: its weight_map).
edit_index() {
	"$PY" - "$1/model.safetensors.index.json" "$2" <<'PY'
import json, sys
p = sys.argv[1]
j = json.load(open(p)); wm = j["weight_map"]
exec(sys.argv[2])
open(p, "w").write(j if isinstance(j, str) else json.dumps(j))
PY
}

@test "diff: a sharded directory against one file of the same tensors is exactly 0, however it is split" {
	mk single one.safetensors 1
	mk sharded d2 1 2
	mk sharded d3 1 3
	run -0 scar-diff --json d2 one.safetensors
	[ "$(jq -r '[.l2, .changed, .elements, (.tensors | length)] | @tsv' <<< "$output")" = "$(printf '0\t0\t127\t6')" ]
	[ "$(jq -r '.a.kind' <<< "$output")" = safetensors ]
	run -0 scar-diff -q d3/model.safetensors.index.json d2
	run -0 scar-diff -q one.safetensors d3
	# --strict: no tensor in one side only
	run -0 scar-diff -q --strict d3 one.safetensors
}

@test "diff: per-tensor norms across files are those of the single files" {
	mk single one.safetensors 1
	mk single two.safetensors 2
	mk sharded d 1 2
	mk sharded e 2 3
	scar-diff --json one.safetensors two.safetensors | jq -c '[.l2, .linf, .changed, ([.tensors[] | {name, l2, changed}] | sort_by(.name))]' > want
	run -1 scar-diff --json d e
	jq -c '[.l2, .linf, .changed, ([.tensors[] | {name, l2, changed}] | sort_by(.name))]' <<< "$output" > got
	diff want got
	run -1 scar-diff --json --tensor ids d e
	[ "$(jq -r '.tensors[0].name, .tensors[0].changed' <<< "$output" | paste -sd' ')" = "ids 4" ]
}

@test "diff: F8_E4M3 and F8_E5M2, all 256 codes, equal bit for bit the values of their definitions" {
	mk f8 f8.safetensors ref.safetensors
	run -0 scar-diff --json f8.safetensors ref.safetensors
	[ "$(jq -r '[.changed, .elements] | @tsv' <<< "$output")" = "$(printf '0\t512')" ]
	# an independent second reference for E5M2: it is the high byte of an IEEE half (numpy's decoder)
	"$PY" - <<'PY'
import json, struct
import numpy as np
codes = np.arange(256, dtype=np.uint16)
v = (codes << 8).view(np.float16).astype(np.float32)
hdr = json.dumps({"e5m2": {"dtype": "F32", "shape": [256], "data_offsets": [0, 1024]}}).encode()
hdr += b" " * ((8 - len(hdr) % 8) % 8)
open("half.safetensors", "wb").write(struct.pack("<Q", len(hdr)) + hdr + v.tobytes())
PY
	run -0 scar-diff --json --tensor e5m2 f8.safetensors half.safetensors
	[ "$(jq -r '[.changed, .elements] | @tsv' <<< "$output")" = "$(printf '0\t256')" ]
	# the references are not vacuous: 448 is E4M3's largest, 57344 E5M2's
	run -0 scar-diff --json --per row f8.safetensors f8.safetensors
	"$PY" - <<'PY'
import struct, math
d = open("ref.safetensors", "rb").read()
n = struct.unpack("<Q", d[:8])[0]
v = struct.unpack("<512f", d[8 + n:])
e4, e5 = v[:256], v[256:]
assert max(x for x in e4 if not math.isnan(x)) == 448 and sum(map(math.isnan, e4)) == 2
assert max(x for x in e5 if math.isfinite(x)) == 57344 and sum(map(math.isinf, e5)) == 2
assert sum(map(math.isnan, e5)) == 6 and e4[1] == 2.0 ** -9 and e5[1] == 2.0 ** -16
PY
}

@test "import: an F8 tensor is refused by name; inject restores F8 rows byte for byte" {
	mk f8 f8.safetensors ref.safetensors
	run -2 scar-ckpt import -o x.ckpt f8.safetensors
	[[ "$output" == *"'f8.safetensors': tensor 'e4m3' is F8_E4M3: a checkpoint has no 8-bit float type"* ]]
	[ ! -e x.ckpt ]
	# scar-ckpt save turns snapshots into checkpoints too: the same refusal, also in a stream.
	run -2 scar-ckpt save --policy full --shards 2 --iteration 1 f8.safetensors run
	[[ "$output" == *"'f8.safetensors': tensor 'e4m3' is F8_E4M3: a checkpoint has no 8-bit float type"* ]]
	run -2 scar-ckpt save --policy full --shards 2 --stream - run2 < f8.safetensors
	[[ "$output" == *"tensor 'e4m3' is F8_E4M3: a checkpoint has no 8-bit float type"* ]]
	! compgen -G "run*/ckpt-*" > /dev/null
	cp f8.safetensors old.safetensors
	"$PY" -c "
import struct
d = bytearray(open('f8.safetensors','rb').read()); n = struct.unpack('<Q', d[:8])[0]
for i in range(512): d[8 + n + i] ^= 0x55
open('now.safetensors','wb').write(d)"
	run -0 scar-inject --shards 4 --lose-shards 1 --reset from=old.safetensors now.safetensors rec.safetensors
	"$PY" -c "
import struct
a = open('old.safetensors','rb').read(); b = open('now.safetensors','rb').read(); r = open('rec.safetensors','rb').read()
n = 8 + struct.unpack('<Q', a[:8])[0]
assert r[:n] == b[:n]
for i in range(512):
    assert r[n + i] == (a if (i % 256) % 4 == 1 else b)[n + i], i"
}

@test "import: a sharded directory or its index, and export, round-trip" {
	mk sharded d 3 2
	run -0 scar-ckpt import -o d.ckpt d
	run -0 scar-ckpt import -o i.ckpt d/model.safetensors.index.json
	run -0 scar-diff -q d.ckpt i.ckpt
	run -0 scar-ckpt export d.ckpt -o back.safetensors
	run -0 scar-diff -q --strict back.safetensors d
	run -2 scar-ckpt import --name x -o n.ckpt d
	[[ "$output" == *"--name does not apply"* ]]
}

@test "inject: a sharded directory keeps untouched files and rows bit for bit and loses exactly the named rows" {
	mk sharded d 1 2
	mk sharded old 2 3
	mk single one.safetensors 1
	mk single two.safetensors 2
	run -0 scar-inject --shards 4 --lose-shards 1,3 --reset from=old d out
	[ "$(jq -r '[.rows_touched, .tensors_touched] | @tsv' <<< "$output")" = "$(printf '19\t6')" ]
	# the same as on one file with one donor file
	scar-inject --shards 4 --lose-shards 1,3 --reset from=two.safetensors one.safetensors want.safetensors 2> /dev/null
	run -0 scar-diff -q --strict out want.safetensors
	# every byte outside the lost rows kept, every lost row the donor's, the index copied
	cmp d/model.safetensors.index.json out/model.safetensors.index.json
	[ "$(ls out | wc -l)" -eq 3 ]
	run -1 scar-diff --json --per row d out
	[ "$(jq -r 'select(.type == "row" and .changed > 0) | .row % 4' <<< "$output" | sort -u | paste -sd,)" = 1,3 ]
	"$PY" - <<'PY'
import json, struct
def tensors(d):
    out = {}
    for f in sorted(set(json.load(open(d + "/model.safetensors.index.json"))["weight_map"].values())):
        b = open(d + "/" + f, "rb").read(); n = struct.unpack("<Q", b[:8])[0]
        h = json.loads(b[8:8 + n]); h.pop("__metadata__", None)
        for k, v in h.items():
            out[k] = (f, b[:8 + n], b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]], v["shape"])
    return out
a, o, old = tensors("d"), tensors("out"), tensors("old")
for k, (f, hdr, data, shape) in a.items():
    assert o[k][0] == f and o[k][1] == hdr, k
    rows = shape[0] if shape else 1; rb = len(data) // rows
    for r in range(rows):
        src = old[k][2] if r % 4 in (1, 3) else data
        assert o[k][2][r * rb:(r + 1) * rb] == src[r * rb:(r + 1) * rb], (k, r)
PY
	# one tensor only: the other file is copied byte for byte
	run -0 scar-inject --shards 4 --lose-shards 1 --tensor ids d one-tensor
	f=$(jq -r '.weight_map.ids' d/model.safetensors.index.json)
	for g in d/model-*.safetensors; do
		[ "$(basename "$g")" = "$f" ] || cmp "$g" "one-tensor/$(basename "$g")"
	done
	! cmp -s "d/$f" "one-tensor/$f"
}

@test "inject: in place on a sharded directory rewrites only the files with lost rows, and again is the same" {
	mk sharded d 1 2
	mk sharded old 2 2
	run -0 scar-inject --shards 4 --lose-shards 0 --tensor ids --reset from=old d want
	cp -r d dd
	f=$(jq -r '.weight_map.ids' d/model.safetensors.index.json)
	other=$(ls d | grep -v -e "$f" -e index)
	ino=$(stat -c %i "dd/$other")
	run -0 scar-inject --shards 4 --lose-shards 0 --tensor ids --reset from=old dd dd
	[ "$(stat -c %i "dd/$other")" = "$ino" ]
	for g in want/*; do cmp "$g" "dd/$(basename "$g")"; done
	run -0 scar-inject --shards 4 --lose-shards 0 --tensor ids --reset from=old dd/model.safetensors.index.json dd
	for g in want/*; do cmp "$g" "dd/$(basename "$g")"; done
	# a file of one snapshot takes its rows from a sharded donor
	mk single one.safetensors 1
	run -0 scar-inject --shards 4 --lose-shards 0 --reset from=old one.safetensors rec.safetensors
	run -1 scar-diff --json rec.safetensors old
	[ "$(jq -r '[.tensors[] | .rows_compared] | add' <<< "$output")" -gt 0 ]
}

@test "inject: a sharded snapshot's usage errors and donors that do not fit are exit 2, nothing written" {
	mk sharded d 1 2
	mk f8 f8.safetensors ref.safetensors
	run -2 scar-inject --shards 4 --lose-shards 1 d
	[[ "$output" == *"'d' is a sharded snapshot: give OUT"* ]]
	touch file
	run -2 scar-inject --shards 4 --lose-shards 1 d file
	[[ "$output" == *"'file' is not a directory"* ]]
	run -2 scar-inject --shards 4 --lose-shards 1 --reset from=f8.safetensors d out
	[[ "$output" == *"tensor '"*"' is not in 'f8.safetensors'"* ]]
	[ ! -e out ]
	run -2 scar-inject --shards 4 --lose-shards 1 --tensor nope d out
	[[ "$output" == *"'d' has no tensor 'nope'"* ]]
	run -2 scar-inject --shards 4 --noise-l2 1 d out
	[ ! -e out ]
	mkdir empty
	run -2 scar-inject --shards 4 --lose-shards 1 --reset from=empty d out
	[[ "$output" == *"'empty' has no saved view"*"nor is it a sharded safetensors snapshot"* ]]
}

# Each hostile index: exit 2 from all three tools, the message's key phrase.
hostile() {
	local edit=$1 want=$2
	rm -rf h
	cp -r d h
	edit_index h "$edit"
	run -2 scar-diff h one.safetensors
	[[ "$output" == *"$want"* ]] || { echo "scar-diff: $output"; return 1; }
	run -2 scar-ckpt import -o x.ckpt h
	[[ "$output" == *"$want"* ]] || { echo "import: $output"; return 1; }
	run -2 scar-inject --shards 2 --lose-shards 0 h out
	[[ "$output" == *"$want"* ]] || { echo "inject: $output"; return 1; }
	[ ! -e out ] && [ ! -e x.ckpt ]
}

@test "hostile index files are exit 2 naming the file and the tensor, from every tool" {
	mk sharded d 1 2
	mk single one.safetensors 1
	f1=model-00001-of-00002.safetensors
	hostile "wm['fc.weight'] = 'model-00009-of-00002.safetensors'" "cannot open 'h/model-00009-of-00002.safetensors'"
	hostile "wm['extra'] = '$f1'" "tensor 'extra' is mapped to '$f1', which does not hold it"
	hostile "del wm['fc.weight']" "tensor 'fc.weight' of '$f1' is not in its weight_map"
	hostile "wm['fc.weight'] = '../one.safetensors'" "tensor 'fc.weight' is mapped to '../one.safetensors', not a file name in the index's directory"
	hostile "wm['fc.weight'] = '$PWD/d/$f1'" "not a file name in the index's directory"
	hostile "wm['fc.weight'] = '..'" "not a file name in the index's directory"
	hostile "wm['fc.weight'] = ''" "tensor 'fc.weight' is mapped to '', not a file name"
	hostile "wm['fc.weight'] = 7" "tensor 'fc.weight' is mapped to no file name"
	hostile "wm['fc.weight'] = 'model.safetensors.index.json'" "'h/model.safetensors.index.json' is not a .npy or safetensors file"
	hostile "j = '[1, 2]'" "is no safetensors index: not a JSON object"
	hostile "j = '{\"weight_map\": {\"ids\": \"a\", \"ids\": \"b\"}}'" "duplicate object key"
	hostile "j = '{\"weight_map\": {}, \"weight_map\": {}}'" "duplicate object key"
	hostile "j = json.dumps(j)[:-3]" "not a safetensors index"
	hostile "j = {'metadata': {}}" "no weight_map"
	hostile "j = {'weight_map': []}" "its weight_map is not an object"
	hostile "j['weight_map'] = {}" "its weight_map names no tensor"
	hostile "j['metadata'] = 'x'" "the index's metadata is not an object"
	hostile "j['metadata']['total_size'] = -1" "total_size is not a byte count"
	hostile "j['metadata']['total_size'] = 1e400" "not a safetensors index"
	hostile "j['metadata']['total_size'] = 10 ** 30" "not a safetensors index"
	hostile "j = '{\"weight_map\": {\"a\\\\u0000b\": \"x\"}}'" "not a safetensors index"
	# a tensor in two files: the one the weight_map does not map it to is named
	rm -rf h && cp -r d h
	"$PY" - h <<'PY'
import json, struct, sys
p = sys.argv[1] + "/model-00002-of-00002.safetensors"
b = open(p, "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n])
h["fc.weight"] = {"dtype": "U8", "shape": [0], "data_offsets": [0, 0]}
t = json.dumps(h).encode(); t += b" " * ((8 - len(t) % 8) % 8)
open(p, "wb").write(struct.pack("<Q", len(t)) + t + b[8 + n:])
PY
	run -2 scar-diff h one.safetensors
	[[ "$output" == *"tensor 'fc.weight' is in 'model-00002-of-00002.safetensors' but mapped to 'model-00001-of-00002.safetensors'"* ]]
	# a listed file that is no safetensors file, or a FIFO, or a directory
	rm -rf h && cp -r d h && printf 'not safetensors at all' > "h/$f1"
	run -2 scar-diff h one.safetensors
	[[ "$output" == *"'h/$f1'"*"not a .npy or safetensors file"* ]]
	rm "h/$f1" && mkfifo "h/$f1"
	run -2 timeout 10 scar-diff h one.safetensors
	[[ "$output" == *"'h/$f1' is a FIFO, not a regular file"* ]]
	rm "h/$f1" && mkdir "h/$f1"
	run -2 scar-diff h one.safetensors
	[[ "$output" == *"is a directory, not a regular file"* ]]
	# a tensor name with control characters reaches the terminal quoted
	rm -rf h && cp -r d h
	edit_index h "wm['x\x1b]0;pwned\x07'] = '$f1'"
	run -2 scar-diff h one.safetensors
	[[ "$output" == *"tensor 'x\\e]0;pwned\\x07' is mapped"* ]]
}

@test "hostile: an index too large, directories without an index or with two, an index from stdin" {
	mk sharded d 1 2
	mk single one.safetensors 1
	"$PY" -c "
import json
wm = {'t%07d' % i: 'model-00001-of-00002.safetensors' for i in range(1200000)}
open('d/big.safetensors.index.json', 'w').write(json.dumps({'weight_map': wm}))"
	run -2 scar-diff d/big.safetensors.index.json one.safetensors
	[[ "$output" == *"is no safetensors index:"*"bytes, more than the 33554432 allowed"* ]]
	# two indexes in a directory without model.safetensors.index.json: which one is not guessed
	mkdir two && cp d/model-*.safetensors two/
	cp d/model.safetensors.index.json two/a.safetensors.index.json
	cp d/model.safetensors.index.json two/b.safetensors.index.json
	run -2 scar-diff two one.safetensors
	[[ "$output" == *"'two' holds several safetensors indexes ('a.safetensors.index.json', 'b.safetensors.index.json')"* ]]
	rm two/b.safetensors.index.json
	run -0 scar-diff -q two one.safetensors
	mkdir none
	run -2 scar-diff none one.safetensors
	[[ "$output" == *"'none' is a directory without a safetensors index"* ]]
	run -2 scar-inject --shards 2 --lose-shards 0 none out
	[[ "$output" == *"'none' is a directory without a safetensors index"* ]]
	# from stdin an index has no directory for its files: it is no snapshot there
	run -2 scar-diff - one.safetensors < d/model.safetensors.index.json
	[[ "$output" == *"is not a checkpoint, .npy or safetensors file"* ]]
}

@test "a symbolic link to a file outside the directory is followed, as the Hugging Face hub's cache makes them" {
	mk sharded d 1 2
	mk single one.safetensors 1
	mkdir -p blobs snap
	for f in d/*; do
		mv "$f" "blobs/$(basename "$f")"
		ln -s "../blobs/$(basename "$f")" "snap/$(basename "$f")"
	done
	run -0 scar-diff -q snap one.safetensors
	# in place replaces the links by files; the blobs are never written
	sum=$(cat blobs/* | md5sum)
	run -0 scar-inject --shards 2 --lose-shards 0 snap snap
	[ "$(cat blobs/* | md5sum)" = "$sum" ]
	run -1 scar-diff -q snap one.safetensors
}

@test "import: --dtype and --shape do not apply to safetensors files or sharded directories (usage error, nothing written)" {
	"$PY" "$SCAR_ROOT/tests/mksafetensors.py" one.safetensors 1
	run -2 --separate-stderr scar-ckpt import --dtype f32 -o x.ckpt one.safetensors
	[[ $stderr == "scar-ckpt: --dtype and --shape do not apply to a safetensors file"* ]]
	run -2 --separate-stderr scar-ckpt import --shape 1 -o x.ckpt one.safetensors
	[ ! -e x.ckpt ]
	# Without them it imports.
	run -0 scar-ckpt import -o x.ckpt one.safetensors
}
