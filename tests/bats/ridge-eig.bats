#!/usr/bin/env bats
# ridge-eig.bats - ridge's contraction rate c = max |1 - eta lambda_i| and
# its default step 1 / lambda_max against numpy's eigvalsh of the same
# Hessian, on random and adversarial data (features that are exact
# negatives or copies of each other, a zero column, a spread of 10^12 in
# feature scale); the header reports the step in effect and both ends of
# the spectrum; and on the negated-feature data that a power iteration from
# a fixed start got wrong, the default step converges and the bound holds.

bats_require_minimum_version 1.5.0
load helper

PY=/usr/bin/python3

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
	unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
	if [ ! -x "$PY" ] || ! "$PY" -c 'import numpy' 2>/dev/null; then
		skip "python3-numpy is not installed ($PY cannot import numpy)"
	fi
}

# gen KIND SEED N D FILE: a LIBSVM file of real targets (float32 features,
# printed so that they read back exactly).
#   random   standard normal features
#   negated  features 1 and 8 exact negatives of each other, on rows where
#            every other feature is 0 (exactly uncorrelated with the rest),
#            with 4 times their variance: the largest eigenvector is
#            e1 - e8, orthogonal to any start vector with equal entries 1, 8
#   dup      features 4 and 10 copies of feature 6
#   zero     feature 5 zero throughout (the file still names feature D)
#   graded   feature j scaled by 10^(-4 + 6 j / (D - 1)): condition 1e12
gen() {
	"$PY" - "$@" <<'EOF'
import sys
import numpy as np
kind, seed, n, d, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
rng = np.random.default_rng(seed)
X = rng.standard_normal((n, d)).astype(np.float32)
if kind == "negated":
    h = n // 2
    X[:h, :] = 0
    X[:h, 0] = np.float32(2) * rng.standard_normal(h).astype(np.float32)
    X[:h, 7] = -X[:h, 0]
    X[h:, 0] = 0
    X[h:, 7] = 0
elif kind == "dup":
    X[:, 3] = X[:, 5]
    X[:, 9] = X[:, 5]
elif kind == "zero":
    X[:, 4] = 0
elif kind == "graded":
    X = (X * np.float32(10.0) ** np.linspace(-4, 2, d).astype(np.float32)).astype(np.float32)
y = X.astype(np.float64) @ rng.standard_normal(d) + 0.1 * rng.standard_normal(n)
with open(out, "w") as f:
    for i in range(n):
        f.write(repr(float(y[i])))
        for j in range(d):
            if X[i, j] != 0 or (i == 0 and j == d - 1):
                f.write(" %d:%r" % (j + 1, float(X[i, j])))
        f.write("\n")
EOF
}

# truth FILE LAMBDA HEADER_JSON: compare the header's eta, c, lambda_min and
# lambda_max with numpy's; prints both and exits nonzero on a mismatch.
truth() {
	"$PY" - "$@" <<'EOF'
import json, sys
import numpy as np
path, lam, hdr = sys.argv[1], float(sys.argv[2]), json.loads(sys.argv[3])
rows, y, d = [], [], 0
for line in open(path):
    t = line.split()
    y.append(float(t[0]))
    r = {}
    for kv in t[1:]:
        k, v = kv.split(":")
        r[int(k) - 1] = float(np.float32(float(v)))
        d = max(d, int(k))
    rows.append(r)
X = np.zeros((len(rows), d))
for i, r in enumerate(rows):
    for k, v in r.items():
        X[i, k] = v
H = X.T @ X / len(rows) + lam * np.eye(d)
ev = np.linalg.eigvalsh(H)
lmin, lmax = ev[0], ev[-1]
eta = 1 / lmax
c = max(abs(1 - eta * lmin), abs(1 - eta * lmax))
eff = hdr.get("effective", {})
got = {k: eff.get(k, hdr.get(k)) for k in ("eta", "contraction", "lambda_min", "lambda_max")}
print("numpy: lambda_min %.17g lambda_max %.17g eta %.17g c %.17g" % (lmin, lmax, eta, c))
print("scar:  " + json.dumps(got))
# backward-stable solvers: eigenvalues within a small multiple of d eps lambda_max
tol = 1e-12 * lmax
ok = (got["lambda_min"] is not None and abs(got["lambda_min"] - lmin) <= tol and
      got["lambda_max"] is not None and abs(got["lambda_max"] - lmax) <= tol and
      got["eta"] is not None and abs(got["eta"] * lmax - 1) <= 1e-12 and
      abs(got["contraction"] - c) <= 1e-12)
sys.exit(0 if ok else 1)
EOF
}

# check KIND SEED N D [LAMBDA]
check() {
	local lam=${5:-0.01}
	gen "$1" "$2" "$3" "$4" data.svm
	run -0 scar-train -q -m ridge --data data.svm --set lambda="$lam" -n 1 --shards 1 --no-timing
	run truth data.svm "$lam" "${lines[0]}"
	echo "$1 $2 $3 $4 lambda $lam: $output"
	[ "$status" -eq 0 ]
}

@test "ridge-eig: c and the step agree with numpy on random data" {
	check random 1 400 20
	check random 2 100 80
	check random 3 60 120 0.001
	check random 4 2000 3
}

@test "ridge-eig: negated features (the case power iteration missed) agree with numpy" {
	check negated 1 400 20
	check negated 2 400 20 0.001
	check negated 3 1000 50
}

@test "ridge-eig: duplicated features, a zero column and 10^12 graded scales agree with numpy" {
	check dup 1 400 20
	check zero 1 400 20
	check graded 1 400 20 1e-6
	check graded 2 400 30 1e-9
}

@test "ridge-eig: the header reports the step in effect, a set one or the default" {
	gen random 1 200 10 data.svm
	run -0 scar-train -q -m ridge --data data.svm --set eta=0.125 -n 1 --no-timing
	[[ ${lines[0]} == *'"eta":0.125,'* ]]
	[[ ${lines[0]} == *'"lambda_min":'* ]]
	[[ ${lines[0]} == *'"lambda_max":'* ]]
	run -0 scar-train -q -m ridge -n 1 --no-timing
	[[ ${lines[0]} =~ \"config\":\{[^}]*\"eta\":0\.0 ]]	# 0 = 1 / lambda_max, as configured
	[[ ${lines[0]} =~ \"eta\":0\.[0-9]*[1-9] ]]		# and what that is
}

@test "ridge-eig: on negated-feature data the default step converges and the bound holds" {
	gen negated 1 400 20 data.svm
	run -0 scar-train -q -m ridge --data data.svm -n 400 --no-timing --events ref.jsonl
	run -0 "$PY" -c '
import json, sys
it = [json.loads(l) for l in open("ref.jsonl") if "\"iteration\"" in l]
print(it[-1])
sys.exit(0 if it[-1]["dist_opt"] < 1e-9 * max(1, it[0]["dist_opt"]) else 1)'
	scar-train -q -m ridge --data data.svm -n 400 --no-timing --policy priority \
		--fail-at 40 --lose-fraction 1/4 > pert.jsonl
	run -0 scar-bound check --metric dist_opt --target 1e-6 --eps 1e-6 ref.jsonl pert.jsonl
	[[ $output == *"within the bound"* ]]
}

@test "ridge-eig: more features than the dense Hessian takes is refused, exit 2" {
	printf '1 2049:1\n2 1:1\n' > wide.svm
	run -2 scar-train -q -m ridge --data wide.svm -n 1
	[[ $output == *"2049 features, more than the 2048"* ]]
	run -2 scar-train -q -m ridge --set d=2049 -n 1
}
