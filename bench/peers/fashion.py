"""fashion.py - read the Fashion-MNIST IDX files (gzip or plain) for the peers."""
import gzip
import os

import numpy as np


def _open(path):
    if os.path.exists(path + ".gz"):
        return gzip.open(path + ".gz", "rb")
    return open(path, "rb")


def _idx(path):
    with _open(path) as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load(directory):
    """(x_train, y_train, x_test, y_test): x float32 in [0, 1], n x 784."""
    out = []
    for part in ("train", "t10k"):
        x = _idx(os.path.join(directory, part + "-images-idx3-ubyte"))
        y = _idx(os.path.join(directory, part + "-labels-idx1-ubyte"))
        out += [x.reshape(len(x), -1).astype(np.float32) / np.float32(255), y.astype(np.int64)]
    return tuple(out)
