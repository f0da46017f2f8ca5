#!/bin/sh
# perturbation-cost.sh - the iteration cost of small perturbations of a
# running model: is the measure null-safe, and how much do costs spread?
#
#   examples/perturbation-cost.sh [-t TRIALS] [-o OUT] [-r "REL ..."] SCAR-TRAIN-ARGS...
#
# e.g. examples/perturbation-cost.sh -m lda --data ~/.cache/scar/spam/docword.spam.txt -n 60
#
# Trial t (1..TRIALS, default 20) trains to iteration T_t = N/6 + (t - 1) mod
# (N/3) (spread over the first half of the run), saves the state, adds
# Gaussian noise of norm REL times the parameters' norm with seed t
# (scar-inject --noise-rel; on lda's integer counts the noise is rounded to
# whole counts, so a tiny REL may round to no change at all: the achieved
# norm is reported), resumes and measures the cost against the unperturbed
# run (scar-train --resume --cost). REL 0 resumes the state unchanged: its
# cost must be exactly 0 in every trial. Prints one line per trial to
# OUT/perturbation-cost.tsv (rel, trial, T, achieved relative norm,
# cost_interp, censored) and a summary per REL: trials, how many cost exactly
# 0, mean, standard deviation, min and max.
set -eu

bin=$(cd "$(dirname "$0")/.." && pwd)
case ":$PATH:" in
*":$bin:"*) ;;
*) PATH="$bin:$PATH" ;;
esac
trials=20
out=results
rels="0 1e-6 1e-3"
while [ $# -gt 0 ]; do
	case $1 in
	-t) trials=$2; shift 2 ;;
	-o) out=$2; shift 2 ;;
	-r) rels=$2; shift 2 ;;
	-h|--help) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || { echo "perturbation-cost: no scar-train arguments (try -h)" >&2; exit 2; }
n=$(printf '%s\n' "$*" | sed -n 's/.*\(-n\|--iters\) *\([0-9][0-9]*\).*/\2/p')
[ -n "$n" ] && [ "$n" -ge 6 ] || { echo "perturbation-cost: give -n N (N >= 6)" >&2; exit 2; }
mkdir -p "$out"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/scar-pcost.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 2' HUP INT TERM
tsv="$out/perturbation-cost.tsv"
printf '# scar-train %s\n' "$*" > "$tsv"
# The unperturbed run, once: every trial's cost is measured against it.
# shellcheck disable=SC2068
scar-train -q --no-timing $@ > "$tmp/ref.jsonl"
t=1
while [ "$t" -le "$trials" ]; do
	T=$((n / 6 + (t - 1) % (n / 3)))
	# The saved state at T: the first T iterations of the same run.
	# shellcheck disable=SC2068
	scar-train -q --no-timing $@ -n "$T" --save "$tmp/s.ckpt" > /dev/null
	for r in $rels; do
		if [ "$r" = 0 ]; then
			cp "$tmp/s.ckpt" "$tmp/p.ckpt"
			ach=0
		else
			scar-inject --noise-rel "$r" --seed "$t" --report "$tmp/rep.json" \
				"$tmp/s.ckpt" "$tmp/p.ckpt"
			ach=$(sed 's/.*"rel_delta_norm":\([^,]*\),.*/\1/' "$tmp/rep.json")
		fi
		rec=$(scar-train -q --no-timing --resume "$tmp/p.ckpt" -n "$n" --cost \
			--reference "$tmp/ref.jsonl" |
			grep '"type":"cost"')
		c=$(printf '%s' "$rec" | sed 's/.*"cost_interp":\([^,]*\),.*/\1/')
		cens=$(printf '%s' "$rec" | sed 's/.*"censored":\([a-z]*\).*/\1/')
		printf '%s\t%d\t%d\t%s\t%s\t%s\n' "$r" "$t" "$T" "$ach" "$c" "$cens" >> "$tsv"
	done
	printf 'perturbation-cost: trial %d/%d done\n' "$t" "$trials" >&2
	t=$((t + 1))
done
printf 'rel\ttrials\texact_0\tmean_rel_norm\tmean_cost\tsd\tmin\tmax\tcensored\n'
awk -F '\t' '!/^#/ {
	k = $1; if (!(k in n)) o[++no] = k
	n[k]++; s[k] += $5; ss[k] += $5 * $5; rn[k] += $4
	if ($5 == 0) z[k]++
	if (!(k in mn) || $5 < mn[k]) mn[k] = $5
	if (!(k in mx) || $5 > mx[k]) mx[k] = $5
	if ($6 == "true") ce[k]++
}
END {
	for (i = 1; i <= no; i++) {
		k = o[i]; m = s[k] / n[k]
		v = n[k] > 1 ? (ss[k] - n[k] * m * m) / (n[k] - 1) : 0
		sd = v > 0 ? sqrt(v) : 0
		printf("%s\t%d\t%d\t%.3g\t%.4f\t%.4f\t%.4f\t%.4f\t%d\n", k, n[k], z[k] + 0,
		       rn[k] / n[k], m, sd, mn[k], mx[k], ce[k] + 0)
	}
}' "$tsv"
