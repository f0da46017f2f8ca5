"""mkhfsharded.py - Hugging Face sharded snapshots for tests/bats/hf-sharded.bats.

  mkhfsharded.py single OUT.safetensors SEED      every tensor in one file
  mkhfsharded.py sharded DIR SEED [NFILES]        the same tensors as DIR/model-0000k-of-0000n
                                                  .safetensors and model.safetensors.index.json
  mkhfsharded.py f8 OUT.safetensors REF.safetensors
      OUT: all 256 codes as F8_E4M3 ("e4m3") and F8_E5M2 ("e5m2"); REF: the
      same tensors as F32 computed here from the formats' definitions.

Written the way save_pretrained lays them out (index metadata total_size,
weight_map sorted by tensor name), with numpy only.
"""
import json, math, os, struct, sys
import numpy as np


def write(path, tensors, meta):
    hdr = {}; off = 0; blobs = []
    for name, (dt, data, shape) in tensors.items():
        hdr[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(data)]}
        off += len(data); blobs.append(data)
    if meta is not None:
        hdr["__metadata__"] = meta
    h = json.dumps(hdr).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h))); f.write(h)
        for b in blobs: f.write(b)


def tensors(seed):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((10, 4)).astype(np.float32)
    h = rng.standard_normal((7, 3)).astype(np.float16)
    bf = (rng.standard_normal((6, 2)).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    ids = np.arange(5, dtype=np.int64) * (seed + 1)
    emb = rng.standard_normal((9, 5)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float64)
    return {"fc.weight": ("F32", w.tobytes(), [10, 4]), "emb.half": ("F16", h.tobytes(), [7, 3]),
            "norm.bf16": ("BF16", bf.tobytes(), [6, 2]), "ids": ("I64", ids.tobytes(), [5]),
            "embed.weight": ("F32", emb.tobytes(), [9, 5]), "fc.bias": ("F64", b.tobytes(), [4])}


def sharded(d, seed, nfiles):
    ts = tensors(seed)
    names = list(ts)
    os.makedirs(d, exist_ok=True)
    wm = {}; total = 0
    for k in range(nfiles):
        fn = "model-%05d-of-%05d.safetensors" % (k + 1, nfiles)
        part = {n: ts[n] for n in names[k::nfiles]}
        write(os.path.join(d, fn), part, {"format": "pt"})
        for n, (_, data, _) in part.items():
            wm[n] = fn; total += len(data)
    idx = {"metadata": {"total_size": total}, "weight_map": dict(sorted(wm.items()))}
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump(idx, f, indent=2)


# Each code's f32 bit pattern, from the format's definition: a value is
# exact in f32, so struct rounds nothing; NaNs are given bit by bit.
def bits(v):
    return struct.unpack("<I", struct.pack("<f", v))[0]


def e4m3(b):
    s = -1.0 if b & 0x80 else 1.0
    e = (b >> 3) & 15; m = b & 7
    if e == 15 and m == 7:
        return (b & 0x80) << 24 | 0x7fc00000          # a quiet NaN of its sign
    return bits(s * (m / 8 * 2.0 ** -6 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7)))


def e5m2(b):
    s = -1.0 if b & 0x80 else 1.0
    e = (b >> 2) & 31; m = b & 3
    if e == 31 and m:
        return (b & 0x80) << 24 | 0x7f800000 | m << 21  # sign and payload kept, as F16's
    if e == 31:
        return bits(s * math.inf)
    return bits(s * (m / 4 * 2.0 ** -14 if e == 0 else (1 + m / 4) * 2.0 ** (e - 15)))


def f32(patterns):
    return b"".join(struct.pack("<I", u) for u in patterns)


if __name__ == "__main__":
    if sys.argv[1] == "single":
        write(sys.argv[2], tensors(int(sys.argv[3])), {"format": "pt"})
    elif sys.argv[1] == "sharded":
        sharded(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 2)
    elif sys.argv[1] == "f8":
        codes = bytes(range(256))
        write(sys.argv[2], {"e4m3": ("F8_E4M3", codes, [256]), "e5m2": ("F8_E5M2", codes, [256])},
              {"format": "pt"})
        write(sys.argv[3], {"e4m3": ("F32", f32(e4m3(b) for b in range(256)), [256]),
                            "e5m2": ("F32", f32(e5m2(b) for b in range(256)), [256])}, None)
    else:
        sys.exit("usage: mkhfsharded.py single|sharded|f8 ...")
