import os, sys
import numpy as np
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mkhfsharded import write  # one safetensors writer for the tests

seed = int(sys.argv[2])
rng = np.random.default_rng(seed)
w = rng.standard_normal((10, 4)).astype(np.float32)
h = rng.standard_normal((7, 3)).astype(np.float16)
bf = (rng.standard_normal((6, 2)).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
ids = np.arange(5, dtype=np.int64) * (seed + 1)
write(sys.argv[1], {"fc.weight": ("F32", w.tobytes(), [10, 4]), "emb.half": ("F16", h.tobytes(), [7, 3]),
                    "norm.bf16": ("BF16", bf.tobytes(), [6, 2]), "ids": ("I64", ids.tobytes(), [5])},
      {"format": "pt", "note": "test"})
