"""mlr_sklearn.py DIR TARGET RUNS - time for scikit-learn's
LogisticRegression (lbfgs, multinomial, default C = 1) to fit Fashion-MNIST
to TARGET test accuracy. L-BFGS cannot be stopped and resumed without
changing its path, so fits with growing max_iter are run until one
reaches the target; that fit is repeated RUNS times in all. Prints
"max_iter M seconds S cpu C accuracy A" per fit and then
"target M seconds MEDIAN cpu MEDIAN" (or "target none")."""
import statistics
import sys
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

import fashion


def fit(x, y, xt, yt, iters):
    clf = LogisticRegression(solver="lbfgs", max_iter=iters, tol=0.0)
    t0, c0 = time.perf_counter(), time.process_time()
    clf.fit(x, y)
    t, c = time.perf_counter() - t0, time.process_time() - c0
    return t, c, float(np.mean(clf.predict(xt) == yt))


def main():
    xtr, ytr, xte, yte = fashion.load(sys.argv[1])
    target, runs = float(sys.argv[2]), int(sys.argv[3])
    warnings.simplefilter("ignore", ConvergenceWarning)
    for iters in (10, 20, 30, 40, 50, 60, 80, 100, 150, 200, 300):
        t, c, acc = fit(xtr, ytr, xte, yte, iters)
        print("max_iter %d seconds %.3f cpu %.3f accuracy %.4f" % (iters, t, c, acc))
        sys.stdout.flush()
        if acc >= target:
            times, cpus = [t], [c]
            for _ in range(runs - 1):
                t, c, acc = fit(xtr, ytr, xte, yte, iters)
                print("max_iter %d seconds %.3f cpu %.3f accuracy %.4f" % (iters, t, c, acc))
                times.append(t)
                cpus.append(c)
            print("target %d seconds %.3f cpu %.3f"
                  % (iters, statistics.median(times), statistics.median(cpus)))
            return
    print("target none")


main()
