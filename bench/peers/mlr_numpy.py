"""mlr_numpy.py DIR RUNS - one epoch of minibatch softmax SGD on Fashion-MNIST
in numpy, the same algorithm as scar's mlr at its defaults: zero init,
batch 128, lr 0.2 (epoch 0 of lr / (1 + 0.3 e)), L2 1e-4 on the non-bias
weights, gradients of a minibatch from the weights at its start, a fresh
shuffle. Each run starts from zero weights; prints per run
"epoch SECONDS cpu CPU_SECONDS loss CE accuracy ACC" (CE = training cross-entropy after
the epoch, ACC = test accuracy)."""
import sys
import time

import numpy as np

import fashion


def cross_entropy(x, y, w, b):
    z = x @ w + b
    z -= z.max(axis=1, keepdims=True)
    lse = np.log(np.exp(z).sum(axis=1))
    return float(np.mean(lse - z[np.arange(len(y)), y]))


def main():
    xtr, ytr, xte, yte = fashion.load(sys.argv[1])
    runs = int(sys.argv[2])
    n, d = xtr.shape
    k = 10
    batch, lr, l2 = 128, np.float32(0.2), np.float32(1e-4)
    rng = np.random.default_rng(1)
    for _ in range(runs):
        w = np.zeros((d, k), dtype=np.float32)
        b = np.zeros(k, dtype=np.float32)
        order = rng.permutation(n)
        t0, c0 = time.perf_counter(), time.process_time()
        for s in range(0, n, batch):
            idx = order[s:s + batch]
            xb = xtr[idx]
            z = xb @ w + b
            z -= z.max(axis=1, keepdims=True)
            p = np.exp(z)
            p /= p.sum(axis=1, keepdims=True)
            p[np.arange(len(idx)), ytr[idx]] -= 1
            g = xb.T @ p
            scale = lr / np.float32(len(idx))
            w *= np.float32(1) - lr * l2
            w -= scale * g
            b -= scale * p.sum(axis=0)
        t, c = time.perf_counter() - t0, time.process_time() - c0
        acc = float(np.mean(np.argmax(xte @ w + b, axis=1) == yte))
        print("epoch %.6f cpu %.6f loss %.6f accuracy %.4f"
              % (t, c, cross_entropy(xtr, ytr, w, b), acc))
        sys.stdout.flush()


main()
