#!/bin/sh
# bound-validate.sh - hold the bound of scar(7) against many perturbed runs.
#
# Trains an unperturbed reference, then N runs of the same configuration
# perturbed by scheduled failures of random count (1-3), iteration, size
# (shards lost, checkpoint policy and interval) and recovery strategy, and
# runs `scar-bound check` on each. On ridge, where c and x* are known
# exactly, it checks the theorem: every perturbed run has ||x - x*|| <= eps
# from K(eps) on; any violation is a bug and makes the script exit 1. On
# every model it reports the observed iteration cost (perturbed run minus
# the actual reference) beside the worst-case bound, as a markdown table.
#
# usage: bound-validate.sh [-e EPS] [-i ITERS] [-k DIR] [-m MODEL] [-n RUNS] [-s SEED] [-w W]
#
#   -e EPS    ridge: the distance to the optimum to reach (default 1e-3)
#   -i ITERS  iterations of every run (default 400 for ridge, 60 otherwise)
#   -k DIR    keep the streams and the per-run results in DIR
#   -m MODEL  ridge (default), mlr, mf or lda; not ridge: fitted c, objective
#   -n RUNS   perturbed runs (default 100)
#   -s SEED   seed of the perturbation schedule (default 1)
#   -w W      smooth objectives over W iterations (default 1 for ridge, 3 otherwise)
#
# scar-train and scar-bound are taken from PATH; jq is needed.
set -eu

eps=1e-3 iters= keep= model=ridge runs=100 seed=1 window=
usage() {
	echo "usage: bound-validate.sh [-e EPS] [-i ITERS] [-k DIR] [-m MODEL] [-n RUNS] [-s SEED] [-w W]" >&2
	exit 2
}
while getopts e:i:k:m:n:s:w:h opt; do
	case $opt in
	e) eps=$OPTARG ;;
	i) iters=$OPTARG ;;
	k) keep=$OPTARG ;;
	m) model=$OPTARG ;;
	n) runs=$OPTARG ;;
	s) seed=$OPTARG ;;
	w) window=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || usage
for t in scar-train scar-bound jq; do
	command -v "$t" >/dev/null || { echo "bound-validate.sh: '$t' not found in PATH" >&2; exit 2; }
done
case $model in
ridge) : "${iters:=400}" "${window:=1}" ;;
mlr|mf|lda) : "${iters:=60}" "${window:=3}" ;;
*) echo "bound-validate.sh: unknown model '$model'" >&2; exit 2 ;;
esac

if [ -n "$keep" ]; then
	mkdir -p "$keep"
	dir=$keep
else
	dir=$(mktemp -d)
	trap 'rm -rf "$dir"' EXIT
fi

# Failures happen in the first 30% of the run, so the perturbed run has time to recover.
last=$((iters * 3 / 10))
[ "$last" -ge 2 ] || { echo "bound-validate.sh: -i $iters is too short" >&2; exit 2; }

scar-train -q -m "$model" -n "$iters" --no-timing > "$dir/ref.jsonl"

# One line per run: run fail-at policy interval fraction lose-count recovery
awk -v n="$runs" -v seed="$seed" -v last="$last" 'BEGIN {
	srand(seed)
	split("none full round-robin random priority", pol, " ")
	split("1/2 1/4 1/8", frac, " ")
	split("partial partial partial full none", rec, " ")
	for (i = 1; i <= n; i++) {
		nf = 1 + int(rand() * 3)
		delete used
		at = ""
		for (j = 0; j < nf; j++) {
			do t = 1 + int(rand() * last); while (t in used)
			used[t] = 1
		}
		# the list in increasing order
		for (t = 1; t <= last; t++)
			if (t in used)
				at = at (at == "" ? "" : ",") t
		# A partial policy takes 1/m with m dividing the interval (scar-train(1)).
		p = pol[1 + int(rand() * 5)]
		k = 1 + int(rand() * 3)
		m = 2 ^ k
		every = m * (1 + int(rand() * int(16 / m)))
		printf "%d %s %s %d %s %d %s\n", i, at, p, every, frac[k], 1 + int(rand() * 8),
			rec[1 + int(rand() * 5)]
	}
}' > "$dir/schedule"

if [ "$model" = ridge ]; then
	checkopts="--metric dist_opt --target $eps --eps $eps --window $window"
else
	checkopts="--window $window"
fi

: > "$dir/results"
while read -r i at policy interval fraction lose recovery; do
	p="$dir/run-$i.jsonl"
	# runs past the reference's length so the perturbed run can reach the target
	scar-train -q -m "$model" -n $((iters + iters / 2)) --no-timing --policy "$policy" \
		--interval "$interval" --fraction "$fraction" --fail-at "$at" \
		--lose-count "$lose" --recovery "$recovery" > "$p"
	rc=0
	# shellcheck disable=SC2086
	scar-bound check --json $checkopts "$dir/ref.jsonl" "$p" > "$dir/check-$i.json" \
		2> "$dir/check-$i.err" || rc=$?
	if [ "$rc" -eq 2 ] && ! [ -s "$dir/check-$i.json" ]; then
		cat "$dir/check-$i.err" >&2
		echo "bound-validate.sh: run $i: scar-bound check failed" >&2
		exit 2
	fi
	jq -r --arg i "$i" --arg rec "$recovery" --arg pol "$policy" \
		'[$i, $rec, $pol, (.perturbations | length), .observed, .bound, .bound_whole,
		  (if .censored then 1 else 0 end),
		  (if .theorem == null then "na" elif .theorem then 1 else 0 end),
		  .k_max // "na", .settle_eps // "na", .envelope_max // "na"] | @tsv' \
		"$dir/check-$i.json" >> "$dir/results"
	[ -z "$keep" ] && rm -f "$p"
done < "$dir/schedule"

# The table: per recovery strategy and overall.
awk -F '\t' -v model="$model" -v eps="$eps" -v window="$window" '
function median(a, n,   i, j, t) {
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	if (n == 0) return "-"
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function add(g) {
	runs[g]++
	if ($9 == "1") holds[g]++
	if ($9 == "0") viol[g]++
	if ($9 != "na") checked[g]++
	if ($8 == 1) { cens[g]++; return }
	if ($5 <= $7) within[g]++
	decided[g]++
	nobs[g]++; obs[g, nobs[g]] = $5
	nb[g]++; bnd[g, nb[g]] = $6
	if ($5 > 0) { nr[g]++; rat[g, nr[g]] = $6 / $5 }
}
function row(g,   i, o, b, r, n) {
	if (!runs[g]) return
	n = nobs[g]; for (i = 1; i <= n; i++) o[i] = obs[g, i]
	n = nb[g]; for (i = 1; i <= n; i++) b[i] = bnd[g, i]
	n = nr[g]; for (i = 1; i <= n; i++) r[i] = rat[g, i]
	printf "| %s | %d | %s | %d/%d (%.0f%%) | %s | %s | %s | %d |\n", g, runs[g],
		checked[g] ? sprintf("%d/%d", holds[g], checked[g]) : "n/a",
		within[g], decided[g], decided[g] ? 100 * within[g] / decided[g] : 0,
		nobs[g] ? sprintf("%g", median(o, nobs[g])) : "-",
		nb[g] ? sprintf("%.3g", median(b, nb[g])) : "-",
		nr[g] ? sprintf("%.3g", median(r, nr[g])) : "-", cens[g]
}
{ add($2); add("all") }
END {
	if (model == "ridge")
		printf "Bound validation on ridge (exact c and D, cost measured on dist_opt, target %s):\ntheorem = ||x - x*|| <= %s from K(eps) on;\n", eps, eps
	else
		printf "Bound validation on %s (fitted c and D, cost measured on the objective,\nsmoothed over %s iterations; x* unknown, so no theorem check);\n", model, window
	printf "cost within = observed cost <= ceil(bound); ratio = bound / observed over runs with observed > 0.\n\n"
	printf "| recovery | runs | theorem holds | cost within bound | median observed | median bound | median bound/observed | censored |\n"
	printf "|---|---|---|---|---|---|---|---|\n"
	row("partial"); row("full"); row("none"); row("all")
	bad = viol["all"] + 0
	if (bad) printf "\n**%d theorem violation(s): a bug.**\n", bad
	exit bad ? 1 : 0
}' "$dir/results"
