"""lda_gensim.py TRAIN TEST K PASSES ALPHA BETA [SCAR_DUMP...] - gensim's
LdaModel (online variational Bayes, one process) beside scar's collapsed
Gibbs sampler, judged by one held-out estimator.

TRAIN and TEST are UCI docword files with disjoint documents. gensim
trains on TRAIN with K topics, symmetric priors ALPHA and BETA (eta), for
PASSES passes; its training time is measured alone. Each SCAR_DUMP is a
raw native int32 V x K word-topic count matrix written by
tools/bench-models after some sweep (the file name ends in -SWEEP.raw);
its topics are (n_wk + BETA) / (n_k + V BETA), counts clamped at 0.

The estimator is document completion on TEST: the tokens of a document
(expanded in file order, as scar does) at even positions are observed,
theta is fitted to them by 100 EM iterations with the topics fixed and
ALPHA as a pseudo-count, and the mean log-probability of the odd-position
tokens is reported. The same code scores both, so only the topics differ.

Prints "gensim passes P seconds S cpu C heldout H", then per dump, in
sweep order, "scar sweep N heldout H", stopping at the first dump that
scores at least gensim's H."""
import re
import sys
import time

import numpy as np


def read_uci(path):
    with open(path) as f:
        docs, vocab = int(f.readline()), int(f.readline())
        f.readline()
        rows = np.loadtxt(f, dtype=np.int64, ndmin=2)
    out = [[] for _ in range(docs)]
    for d, w, c in rows:
        out[d - 1].append((int(w) - 1, int(c)))
    return out, vocab


def heldout(phi, test, alpha):
    k = phi.shape[0]
    total, count = 0.0, 0
    for bow in test:
        words = np.repeat([w for w, _ in bow], [c for _, c in bow])
        if len(words) < 2:
            continue
        obs, pred = words[0::2], words[1::2]
        po = phi[:, obs]
        theta = np.full(k, 1.0 / k)
        for _ in range(100):
            r = theta[:, None] * po
            r /= r.sum(axis=0, keepdims=True)
            theta = r.sum(axis=1) + alpha
            theta /= theta.sum()
        total += float(np.log(theta @ phi[:, pred]).sum())
        count += len(pred)
    return total / count


def main():
    train, vocab = read_uci(sys.argv[1])
    test, _ = read_uci(sys.argv[2])
    k, passes = int(sys.argv[3]), int(sys.argv[4])
    alpha, beta = float(sys.argv[5]), float(sys.argv[6])
    from gensim.models import LdaModel
    import logging
    logging.disable(logging.CRITICAL)
    id2word = {i: str(i) for i in range(vocab)}
    t0, c0 = time.perf_counter(), time.process_time()
    lda = LdaModel(corpus=train, id2word=id2word, num_topics=k, passes=passes, alpha=alpha,
                   eta=beta, random_state=1, eval_every=None, chunksize=2000, iterations=50)
    t, c = time.perf_counter() - t0, time.process_time() - c0
    target = heldout(lda.get_topics(), test, alpha)
    print("gensim passes %d seconds %.3f cpu %.3f heldout %.4f" % (passes, t, c, target))
    sys.stdout.flush()
    dumps = sorted(sys.argv[7:], key=lambda p: int(re.search(r"-(\d+)\.raw$", p).group(1)))
    for path in dumps:
        n = np.fromfile(path, dtype=np.int32).reshape(vocab, k).T.astype(np.float64)
        n = np.maximum(n, 0)
        phi = (n + beta) / (n.sum(axis=1, keepdims=True) + vocab * beta)
        sweep = int(re.search(r"-(\d+)\.raw$", path).group(1))
        h = heldout(phi, test, alpha)
        print("scar sweep %d heldout %.4f" % (sweep, h))
        sys.stdout.flush()
        if h >= target:
            break


main()
