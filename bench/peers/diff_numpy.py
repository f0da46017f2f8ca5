#!/usr/bin/python3
"""diff_numpy.py A.npy B.npy - the numpy peer of scar-diff for bench-diff.sh.

Loads both arrays and computes np.linalg.norm(a - b), the way a user would.
Prints one JSON object: the norm, the same norm accumulated in float64 (numpy's
float32 norm accumulates in float32 through BLAS and loses digits on big
arrays), and the seconds spent loading and computing.
"""
import json
import sys
import time

import numpy as np


def main():
    if len(sys.argv) != 3:
        sys.stderr.write("usage: diff_numpy.py A.npy B.npy\n")
        return 2
    t0 = time.perf_counter()
    a = np.load(sys.argv[1])
    b = np.load(sys.argv[2])
    t1 = time.perf_counter()
    l2 = float(np.linalg.norm(a - b))
    t2 = time.perf_counter()
    d = a.astype(np.float64) - b.astype(np.float64)
    exact = float(np.sqrt(np.dot(d.ravel(), d.ravel())))
    print(json.dumps({"l2": l2, "l2_f64": exact, "load_s": t1 - t0, "norm_s": t2 - t1}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
