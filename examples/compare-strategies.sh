#!/bin/sh
# compare-strategies.sh - the paper's comparison (SCAR, ICML 2019, Table/Fig. 5):
# iteration cost of a partial failure under five strategies at equal
# checkpoint I/O, for lost fractions 1/8, 1/4 and 1/2 of the shards.
#
#   examples/compare-strategies.sh [MODEL...]   (default: mlr mlr-decay mf lda)
#
# mlr is run twice: "mlr" with a constant step of 0.05 (plain minibatch
# SGD), "mlr-decay" with scar-train's default schedule lr / (1 + 0.3 e)
# from 0.2, whose step is about 0.05 in the failure window (epochs 9-15)
# and both reach about 0.84 test accuracy after 30 epochs. The decaying
# step works a perturbation off ever more slowly, and the iteration cost
# measures exactly that, so the two show how much the schedule matters.
#
# Environment: TRIALS (failure trials per cell, default 10), JOBS (parallel
# runs, default 2), OUT (output directory, default results), SCAR_DATA (the
# `make data` cache), SHARDS (default 8), INTERVAL (C, default 8), FRACTION
# (r of the partial policies, default 1/4).
#
# Trial t (1..TRIALS) fails once, at T_t = C + 1 + (t - 1) * (N/2 - C) / TRIALS
# (integer division: spread evenly over (C, N/2], so every phase of the
# checkpoint cycle is represented), losing round(f * S) shards chosen by
# --fail-seed t. The same trials are run for every strategy, so cells differ
# only by strategy.
# Writes OUT/compare.md, OUT/compare.json, OUT/compare.png (when gnuplot is
# installed) and the raw per-run lines in OUT/compare-runs.tsv (model, lost
# fraction, strategy, trial, T, cost_interp, censored). With AGGREGATE=1 no
# run is made: the tables and the plot are rebuilt from an existing
# OUT/compare-runs.tsv (e.g. one concatenated from several runs).
set -eu

# The checkout's tools, unless PATH has them already (`make valgrind-check`
# puts its wrappers of them ahead).
bin=$(cd "$(dirname "$0")/.." && pwd)
case ":$PATH:" in
*":$bin:"*) ;;
*) PATH="$bin:$PATH" ;;
esac
trials=${TRIALS:-10}
jobs=${JOBS:-2}
out=${OUT:-results}
data=${SCAR_DATA:-${XDG_CACHE_HOME:-$HOME/.cache}/scar}
S=${SHARDS:-8}
C=${INTERVAL:-8}
r=${FRACTION:-1/4}
models=${*:-mlr mlr-decay mf lda}
mkdir -p "$out"
runs="$out/compare-runs.tsv"
if [ "${AGGREGATE:-0}" != 1 ]; then
: > "$runs"

# Per-model arguments: real data when `make data` has fetched it.
model_args() {
	case $1 in
	mlr|mlr-decay)
		step="--set lr=0.05 --set lr_decay=0"
		[ "$1" = mlr-decay ] && step=
		if [ -e "$data/fashion-mnist/train-images-idx3-ubyte.gz" ]; then
			echo "-m mlr --data $data/fashion-mnist $step -n 30"
		else
			echo "-m mlr $step -n 30"
		fi ;;
	mf)
		if [ -e "$data/movielens/ratings.csv" ]; then
			echo "-m mf --data $data/movielens/ratings.csv -n 30"
		else
			echo "-m mf -n 30"
		fi ;;
	lda)
		if [ -e "$data/spam/docword.spam.txt" ]; then
			echo "-m lda --data $data/spam/docword.spam.txt -n 60"
		else
			echo "-m lda -n 60"
		fi ;;
	ridge) echo "-m ridge -n 60" ;;
	*) echo "compare-strategies: unknown model '$1'" >&2; exit 2 ;;
	esac
}

strategies="traditional partial-recovery round-robin random scar"
strategy_args() {
	case $1 in
	traditional)      echo "--policy full --recovery full" ;;
	partial-recovery) echo "--policy full --recovery partial" ;;
	round-robin)      echo "--policy round-robin --fraction $r --recovery partial" ;;
	random)           echo "--policy random --fraction $r --recovery partial" ;;
	scar)             echo "--policy priority --fraction $r --recovery partial" ;;
	esac
}

cmds="$out/compare-cmds.txt"
: > "$cmds"
for m in $models; do
	args=$(model_args "$m")
	n=$(echo "$args" | sed 's/.*-n \([0-9]*\).*/\1/')
	ref="$out/ref-$m.jsonl"
	echo "compare: reference run for $m ($args)" >&2
	# shellcheck disable=SC2086
	scar-train -q --no-timing --shards "$S" $args > "$ref"
	span=$((n / 2 - C))
	[ "$span" -ge 1 ] || { echo "compare: -n too small for C=$C" >&2; exit 2; }
	for f in 1/8 1/4 1/2; do
		for s in $strategies; do
			t=1
			while [ "$t" -le "$trials" ]; do
				T=$((C + 1 + (t - 1) * span / trials))
				echo "$m	$f	$s	$t	$T	scar-train -q --no-timing --shards $S $args $(strategy_args "$s") --interval $C --fail-at $T --lose-fraction $f --fail-seed $t --reference $ref" >> "$cmds"
				t=$((t + 1))
			done
		done
	done
done

echo "compare: $(wc -l < "$cmds") runs, $jobs at a time" >&2
# Each line: run the command, keep its cost record's cost and censored flag.
tr '\n' '\0' < "$cmds" | xargs -0 -P "$jobs" -n 1 sh -c '
	line=$1
	meta=$(printf "%s" "$line" | cut -f1-5)
	cmd=$(printf "%s" "$line" | cut -f6)
	rec=$(eval "$cmd" | grep "\"type\":\"cost\"") || { echo "compare: failed: $cmd" >&2; exit 255; }
	cost=$(printf "%s" "$rec" | sed "s/.*\"cost_interp\":\([-0-9.e+]*\).*/\1/")
	cens=$(printf "%s" "$rec" | sed "s/.*\"censored\":\([a-z]*\).*/\1/")
	printf "%s\t%s\t%s\n" "$meta" "$cost" "$cens"
' sh >> "$runs"
fi

# Aggregate: mean and standard error per cell, reduction against traditional.
awk -F '\t' -v md="$out/compare.md" -v js="$out/compare.json" -v dat="$out/compare.dat" '
{
	k = $1 SUBSEP $2 SUBSEP $3
	n[k]++; s[k] += $6; ss[k] += $6 * $6
	if ($7 == "true") cens[k]++
	if (!($1 in seenm)) { seenm[$1] = 1; mo[++nm] = $1 }
}
END {
	split("1/8 1/4 1/2", fr, " ")
	split("traditional partial-recovery round-robin random scar", st, " ")
	print "| model | lost | strategy | mean cost | s.e. | reduction vs traditional | censored |" > md
	print "|---|---|---|---:|---:|---:|---:|" > md
	printf "{\"type\":\"comparison\",\"cells\":[" > js
	first = 1
	for (i = 1; i <= nm; i++) for (j = 1; j <= 3; j++) {
		kt = mo[i] SUBSEP fr[j] SUBSEP "traditional"
		mt = n[kt] ? s[kt] / n[kt] : 0
		for (l = 1; l <= 5; l++) {
			k = mo[i] SUBSEP fr[j] SUBSEP st[l]
			if (!n[k]) continue
			m = s[k] / n[k]
			v = n[k] > 1 ? (ss[k] - n[k] * m * m) / (n[k] - 1) : 0
			se = v > 0 ? sqrt(v / n[k]) : 0
			red = mt > 0 ? 100 * (1 - m / mt) : 0
			printf "| %s | %s | %s | %.2f | %.2f | %.0f%% | %d |\n", mo[i], fr[j], st[l], m, se, red, cens[k] + 0 > md
			printf "%s{\"model\":\"%s\",\"lost\":\"%s\",\"strategy\":\"%s\",\"trials\":%d,\"mean_cost\":%.4f,\"stderr\":%.4f,\"reduction\":%.4f,\"censored\":%d}", first ? "" : ",", mo[i], fr[j], st[l], n[k], m, se, red / 100, cens[k] + 0 > js
			first = 0
			printf "%s-%s %s %.4f %.4f\n", mo[i], fr[j], st[l], m, se > dat
		}
	}
	print "]}" > js
}' "$runs"

if command -v gnuplot >/dev/null 2>&1; then
	# One cluster per model x lost fraction, one bar per strategy.
	awk '{ cell[$1] = cell[$1] " " $3 " " $4 } END { for (c in cell) print c cell[c] }' "$out/compare.dat" \
		| sort > "$out/compare-plot.dat"
	gnuplot <<GP
set terminal pngcairo size 1100,500 noenhanced
set output "$out/compare.png"
set style data histograms
set style histogram errorbars gap 2 lw 1
set style fill solid 0.8 border -1
set ylabel "iteration cost (mean, s.e.; lower is better)"
set title "Iteration cost of a partial failure, equal checkpoint I/O (scar examples/compare-strategies.sh)"
set xtics rotate by -30
set key top left
set xzeroaxis lt -1
set yrange [*:*]
plot "$out/compare-plot.dat" using 2:3:xtic(1) title "traditional", \
     "" using 4:5 title "partial recovery", \
     "" using 6:7 title "round-robin", \
     "" using 8:9 title "random", \
     "" using 10:11 title "SCAR (priority)"
GP
fi
cat "$out/compare.md"
