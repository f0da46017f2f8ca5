"""mf_numpy.py RATINGS SWEEPS - ALS for matrix factorisation with biases in
numpy, the same algorithm as scar's mf at its defaults: rank 10, weighted
lambda 0.1 (lambda * n_u on user u, lambda * n_i on item i, also on the
biases), each user's (p_u, b_u) by one (rank+1) x (rank+1) solve, then each
item's, then the global mean; an 80/20 seeded split. Prints per sweep
"sweep SECONDS cpu CPU_SECONDS test_rmse R"."""
import sys
import time

import numpy as np


def main():
    raw = np.loadtxt(sys.argv[1], delimiter=",", skiprows=1, usecols=(0, 1, 2))
    sweeps = int(sys.argv[2])
    users = np.unique(raw[:, 0], return_inverse=True)[1]
    items = np.unique(raw[:, 1], return_inverse=True)[1]
    r = raw[:, 2]
    nu, ni, k, lam = users.max() + 1, items.max() + 1, 10, 0.1
    rng = np.random.default_rng(1)
    test = rng.random(len(r)) < 0.2
    tu, ti, tr = users[~test], items[~test], r[~test]
    eu, ei, er = users[test], items[test], r[test]
    by_user = [np.flatnonzero(tu == u) for u in range(nu)]
    by_item = [np.flatnonzero(ti == i) for i in range(ni)]
    p = rng.normal(0, 0.1, (nu, k))
    q = rng.normal(0, 0.1, (ni, k))
    bu, bi, mu = np.zeros(nu), np.zeros(ni), tr.mean()

    def solve(rows, other, obias, target):
        z = np.hstack([other, np.ones((len(rows), 1))])
        a = z.T @ z + lam * len(rows) * np.eye(k + 1)
        return np.linalg.solve(a, z.T @ (target - mu - obias))

    for _ in range(sweeps):
        t0, c0 = time.perf_counter(), time.process_time()
        for u in range(nu):
            rows = by_user[u]
            if len(rows) == 0:
                p[u], bu[u] = 0, 0
                continue
            x = solve(rows, q[ti[rows]], bi[ti[rows]], tr[rows])
            p[u], bu[u] = x[:k], x[k]
        for i in range(ni):
            rows = by_item[i]
            if len(rows) == 0:
                q[i], bi[i] = 0, 0
                continue
            x = solve(rows, p[tu[rows]], bu[tu[rows]], tr[rows])
            q[i], bi[i] = x[:k], x[k]
        mu = float(np.mean(tr - bu[tu] - bi[ti] - np.sum(p[tu] * q[ti], axis=1)))
        t, c = time.perf_counter() - t0, time.process_time() - c0
        pred = mu + bu[eu] + bi[ei] + np.sum(p[eu] * q[ei], axis=1)
        print("sweep %.6f cpu %.6f test_rmse %.4f"
              % (t, c, float(np.sqrt(np.mean((pred - er) ** 2)))))
        sys.stdout.flush()


main()
