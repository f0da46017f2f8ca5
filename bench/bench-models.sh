#!/bin/sh
# bench-models.sh - the workloads beside their peers (issue 3 section 6).
#
#   mlr  one epoch of minibatch softmax SGD on Fashion-MNIST (batch 128,
#        zero init, scar's default schedule) beside the same algorithm in
#        numpy (bench/peers/mlr_numpy.py), with the training loss after the
#        epoch to show they did the same work; then the time to 0.84 test
#        accuracy (epochs plus the test evaluation after each) beside
#        scikit-learn's LogisticRegression(lbfgs) (bench/peers/mlr_sklearn.py:
#        the quickest max_iter whose fit reaches 0.84, that fit's time).
#   mf   one ALS sweep on MovieLens ml-latest-small (rank 10, weighted
#        lambda 0.1, 80/20 split) beside the same ALS in numpy
#        (bench/peers/mf_numpy.py), with the test RMSE after the sweeps.
#   lda  collapsed Gibbs token samples per second on one core at K = 100
#        over the SpamAssassin corpus (synthetic when it is missing); then
#        beside gensim's LdaModel (online variational Bayes, a different
#        algorithm) at K = 50, alpha 0.1, beta 0.01 on 90% of the documents:
#        both are scored by one document-completion estimator on the other
#        10% (bench/peers/lda_gensim.py), and scar's time is its training
#        time up to the first sweep that scores at least what gensim scores
#        after its passes (gensim: training time of one run).
#
# Every figure is the median of BENCH_RUNS (default 3) runs, wall clock,
# with peak RSS of the scar runs beside the in-memory size of data plus
# parameters. Peers run under Debian's /usr/bin/python3 with
# OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset; numpy uses whatever BLAS
# it is linked to (OpenBLAS with libopenblas0-pthread, both cores), scar
# one core. BENCH_QUICK=1: one run each, fewer sweeps. Real data comes from
# ${SCAR_DATA:-${XDG_CACHE_HOME:-$HOME/.cache}/scar} (`make data`); a
# missing set skips its lines.
set -eu
cd "$(dirname "$0")/.."
out=bench/out/models
mkdir -p "$out"
runs=${BENCH_RUNS:-3}
msweeps=6
passes=5
if [ "${BENCH_QUICK:-0}" = 1 ]; then runs=1; msweeps=3; passes=2; fi
data=${SCAR_DATA:-${XDG_CACHE_HOME:-$HOME/.cache}/scar}
bm=tools/bench-models
[ -x "$bm" ] || { echo "bench-models: run 'make all' first" >&2; exit 2; }

py() { env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 "$@"; }
have_py() { py -c "import $1" 2>/dev/null; }
median() {
	sort -g | awk '{ a[NR] = $1 } END { if (!NR) print "nan"; else if (NR % 2) print a[(NR + 1) / 2];
		else printf "%.6g\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0 && a == a + 0) printf "%.2fx", a / b; else print "n/a" }'; }
# rss FILE: the peak resident set in MiB recorded by /usr/bin/time -f %M.
timed() {
	f=$1
	shift
	if [ -x /usr/bin/time ]; then /usr/bin/time -f %M -o "$f" "$@"; else echo 0 > "$f"; "$@"; fi
}
mib() { awk '{ printf "%.0f", $1 / 1024 }' "$1"; }

# ---- mlr ----
fm=$data/fashion-mnist
if [ -e "$fm/train-images-idx3-ubyte.gz" ] || [ -e "$fm/train-images-idx3-ubyte" ]; then
	cfg="{\"data\":\"$fm\"}"
	: > "$out/mlr.c"
	i=0
	while [ $i -lt "$runs" ]; do
		timed "$out/mlr.rss" "$bm" mlr "$cfg" 1 | awk '$1 == "iter" { print $4, $6, $8 }' >> "$out/mlr.c"
		i=$((i + 1))
	done
	c_t=$(awk '{ print $1 }' "$out/mlr.c" | median)
	c_c=$(awk '{ print $2 }' "$out/mlr.c" | median)
	c_l=$(awk '{ print $3 }' "$out/mlr.c" | median)
	if have_py numpy; then
		(cd bench/peers && py mlr_numpy.py "$fm" "$runs") > "$out/mlr.numpy"
		n_t=$(awk '{ print $2 }' "$out/mlr.numpy" | median)
		n_c=$(awk '{ print $4 }' "$out/mlr.numpy" | median)
		n_l=$(awk '{ print $6 }' "$out/mlr.numpy" | median)
	else
		n_t=nan n_c=nan n_l=nan
	fi
	printf 'mlr epoch     scar %7.4f s wall %7.4f s cpu (loss %.4f)  numpy %7.4f s wall %7.4f s cpu (loss %.4f)  scar faster %s wall, %s cpu (target 3x)\n' \
		"$c_t" "$c_c" "$c_l" "$n_t" "$n_c" "$n_l" "$(ratio "$n_t" "$c_t")" "$(ratio "$n_c" "$c_c")"
	# Data 70000 x 784 f32 + labels, weights 785 x 10 f32.
	printf 'mlr memory    scar peak RSS %s MiB, data + parameters %s MiB\n' "$(mib "$out/mlr.rss")" \
		"$(awk 'BEGIN { printf "%.0f", (70000 * 784 * 4 + 70000 * 4 + 785 * 10 * 4) / 1048576 }')"

	: > "$out/mlr.c84"
	i=0
	while [ $i -lt "$runs" ]; do
		"$bm" mlr "$cfg" 40 0.84 | awk '$1 == "target" && $2 != "none" { print $4, $6, $2 }' >> "$out/mlr.c84"
		i=$((i + 1))
	done
	c_t=$(awk 'NF == 3 { print $1 }' "$out/mlr.c84" | median)
	c_c=$(awk 'NF == 3 { print $2 }' "$out/mlr.c84" | median)
	c_e=$(awk 'NF == 3 { print $3 }' "$out/mlr.c84" | median)
	s_t=nan s_c=nan s_i=none
	if have_py sklearn; then
		(cd bench/peers && py mlr_sklearn.py "$fm" 0.84 "$runs") > "$out/mlr.sklearn"
		if grep -q '^target [0-9]' "$out/mlr.sklearn"; then
			s_i=$(awk '$1 == "target" { print $2 }' "$out/mlr.sklearn")
			s_t=$(awk '$1 == "target" { print $4 }' "$out/mlr.sklearn")
			s_c=$(awk '$1 == "target" { print $6 }' "$out/mlr.sklearn")
		fi
	fi
	printf 'mlr to 0.84   scar %7.3f s wall %7.3f s cpu (%s epochs)  sklearn lbfgs %7.3f s wall %7.3f s cpu (max_iter %s)  scar faster %s wall, %s cpu\n' \
		"$c_t" "$c_c" "$c_e" "$s_t" "$s_c" "$s_i" "$(ratio "$s_t" "$c_t")" "$(ratio "$s_c" "$c_c")"
else
	echo "mlr: skipped, Fashion-MNIST not found under $fm (run 'make data')"
fi

# ---- mf ----
ml=$data/movielens/ratings.csv
if [ -e "$ml" ]; then
	cfg="{\"data\":\"$ml\"}"
	: > "$out/mf.c"
	: > "$out/mf.crmse"
	i=0
	while [ $i -lt "$runs" ]; do
		timed "$out/mf.rss" "$bm" mf "$cfg" "$msweeps" > "$out/mf.run"
		awk '$1 == "iter" { print $4, $6 }' "$out/mf.run" >> "$out/mf.c"
		awk '$1 == "iter" { r = $10 } END { print r }' "$out/mf.run" >> "$out/mf.crmse"
		i=$((i + 1))
	done
	c_t=$(awk '{ print $1 }' "$out/mf.c" | median)
	c_c=$(awk '{ print $2 }' "$out/mf.c" | median)
	c_r=$(median < "$out/mf.crmse")
	if have_py numpy; then
		(cd bench/peers && py mf_numpy.py "$ml" "$msweeps") > "$out/mf.numpy"
		n_t=$(awk '{ print $2 }' "$out/mf.numpy" | median)
		n_c=$(awk '{ print $4 }' "$out/mf.numpy" | median)
		n_r=$(awk 'END { print $6 }' "$out/mf.numpy")
	else
		n_t=nan n_c=nan n_r=nan
	fi
	printf 'mf ALS sweep  scar %7.4f s wall %7.4f s cpu (test RMSE %.4f after %d)  numpy %7.4f s wall %7.4f s cpu (test RMSE %.4f)  scar faster %s wall, %s cpu (target 10x)\n' \
		"$c_t" "$c_c" "$c_r" "$msweeps" "$n_t" "$n_c" "$n_r" "$(ratio "$n_t" "$c_t")" "$(ratio "$n_c" "$c_c")"
	printf 'mf memory     scar peak RSS %s MiB (100836 ratings, 610 + 9724 factor rows of 10)\n' "$(mib "$out/mf.rss")"
else
	echo "mf: skipped, MovieLens not found at $ml (run 'make data')"
fi

# ---- lda ----
dw=$data/spam/docword.spam.txt
if [ -e "$dw" ]; then
	cfg="{\"data\":\"$dw\",\"topics\":100,\"heldout_frac\":0.01}"
	what="SpamAssassin"
else
	cfg='{"docs":20000,"words":5000,"doc_len":100,"synth_topics":20,"topics":100,"heldout_frac":0.01}'
	what="synthetic (SpamAssassin not found)"
fi
: > "$out/lda.c"
i=0
while [ $i -lt "$runs" ]; do
	timed "$out/lda.rss" "$bm" lda "$cfg" 3 > "$out/lda.run"
	tok=$(awk '$1 == "tokens" { print $2 }' "$out/lda.run")
	awk -v n="$tok" '$1 == "iter" { print n / $4, n / $6 }' "$out/lda.run" >> "$out/lda.c"
	i=$((i + 1))
done
c_s=$(awk '{ print $1 }' "$out/lda.c" | median)
c_c=$(awk '{ print $2 }' "$out/lda.c" | median)
printf 'lda Gibbs     scar %.3g token samples/s wall, %.3g per CPU second, one core, K=100, %s tokens of %s (target 5e6)\n' \
	"$c_s" "$c_c" "$tok" "$what"
printf 'lda memory    scar peak RSS %s MiB\n' "$(mib "$out/lda.rss")"

# ---- lda beside gensim ----
if [ -e "$dw" ] && have_py gensim; then
	ld=$PWD/$out/lda-gensim
	rm -rf "$ld"
	mkdir -p "$ld"
	# Documents with id % 10 == 0 are the test set; both sides renumbered from 1.
	awk -v dir="$ld" 'NR == 2 { v = $1 } NR <= 3 { next }
		{ d = $1; if (d % 10 == 0) { if (!(d in te)) te[d] = ++nte; print te[d], $2, $3 > (dir "/test.body") }
		  else { if (!(d in tr)) tr[d] = ++ntr; print tr[d], $2, $3 > (dir "/train.body") } }
		END { print ntr, v > (dir "/train.head"); print nte, v > (dir "/test.head") }' "$dw"
	for s in train test; do
		{ tr ' ' '\n' < "$ld/$s.head"; wc -l < "$ld/$s.body"; cat "$ld/$s.body"; } > "$ld/docword.$s.txt"
	done
	lcfg="{\"data\":\"$ld/docword.train.txt\",\"topics\":50,\"alpha\":0.1,\"beta\":0.01,\"heldout_frac\":0.001}"
	BENCH_DUMP=$ld/dump "$bm" lda "$lcfg" 30 > "$ld/gibbs.0"
	(cd bench/peers && py lda_gensim.py "$ld/docword.train.txt" "$ld/docword.test.txt" 50 "$passes" \
		0.1 0.01 "$ld"/dump-*.raw) > "$ld/score"
	g_t=$(awk '$1 == "gensim" { print $5 }' "$ld/score")
	g_c=$(awk '$1 == "gensim" { print $7 }' "$ld/score")
	g_h=$(awk '$1 == "gensim" { print $9 }' "$ld/score")
	hit=$(awk -v g="$g_h" '$1 == "scar" && $5 >= g { print $3; exit }' "$ld/score")
	last=$(awk '$1 == "scar" { h = $5 } END { print h }' "$ld/score")
	if [ -n "$hit" ]; then
		: > "$ld/times"
		i=0
		while [ $i -lt "$runs" ]; do
			"$bm" lda "$lcfg" "$hit" | awk '$1 == "iter" { w += $4; c += $6 } END { print w, c }' >> "$ld/times"
			i=$((i + 1))
		done
		s_t=$(awk '{ print $1 }' "$ld/times" | median)
		s_c=$(awk '{ print $2 }' "$ld/times" | median)
		printf 'lda vs gensim scar %7.3f s wall %7.3f s cpu (%s sweeps, held-out %s)  gensim %7.3f s wall %7.3f s cpu (%s passes, held-out %s)  scar faster %s wall, %s cpu\n' \
			"$s_t" "$s_c" "$hit" "$last" "$g_t" "$g_c" "$passes" "$g_h" "$(ratio "$g_t" "$s_t")" "$(ratio "$g_c" "$s_c")"
	else
		printf 'lda vs gensim scar did not reach gensim held-out %s in 30 sweeps (reached %s)\n' "$g_h" "$last"
	fi
	rm -f "$ld"/dump-*.raw
else
	echo "lda vs gensim: skipped (needs the SpamAssassin corpus and python3-gensim)"
fi
