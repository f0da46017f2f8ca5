import json, struct, sys
import numpy as np
def write(path, tensors, meta):
    hdr = {}; off = 0; blobs = []
    for name, (dt, arr_bytes, shape) in tensors.items():
        hdr[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(arr_bytes)]}
        off += len(arr_bytes); blobs.append(arr_bytes)
    hdr["__metadata__"] = meta
    h = json.dumps(hdr).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h))); f.write(h)
        for b in blobs: f.write(b)
seed = int(sys.argv[2])
rng = np.random.default_rng(seed)
w = rng.standard_normal((10, 4)).astype(np.float32)
h = rng.standard_normal((7, 3)).astype(np.float16)
bf = (rng.standard_normal((6, 2)).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
ids = np.arange(5, dtype=np.int64) * (seed + 1)
write(sys.argv[1], {"fc.weight": ("F32", w.tobytes(), [10, 4]), "emb.half": ("F16", h.tobytes(), [7, 3]),
                    "norm.bf16": ("BF16", bf.tobytes(), [6, 2]), "ids": ("I64", ids.tobytes(), [5])},
      {"format": "pt", "note": "test"})
