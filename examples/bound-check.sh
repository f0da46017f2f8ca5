#!/bin/sh
# bound-check.sh - the bound of scar(7) on ridge regression, where the
# contraction rate c and the optimum x* are known exactly.
#
# Trains an unperturbed reference and shows c and D as the header gives
# them beside what `scar-bound fit` estimates from the step norms alone.
# Then, for each fraction of the shards lost after iteration T and each
# recovery strategy, trains a perturbed run and holds it against the bound
# with `scar-bound check`: the size of the perturbation the recovery left,
# the worst-case iteration cost, the observed one (reaching a distance EPS
# to the optimum), and the theorem ||x(k) - x*|| <= EPS from K(EPS) on.
#
# usage: bound-check.sh [-e EPS] [-i ITERS] [-k DIR] [-l "F ..."] [-t T]
#
#   -e EPS    the distance to the optimum to reach (default 1e-3)
#   -i ITERS  iterations of the reference (default 200)
#   -k DIR    keep the event streams and the check reports in DIR
#   -l LIST   fractions of the 8 shards a failure loses (default "1/8 1/4 1/2")
#   -t T      the failure happens after iteration T (default 20)
#
# The strategies, all writing the same checkpoint rows per iteration:
#   traditional  a full checkpoint every 8 iterations, full rollback
#   partial      the same checkpoints, only the lost rows restored
#   scar         a prioritized quarter of the rows every 2 iterations, partial recovery
#   none         no recovery: the lost rows stay zero
#
# scar-train and scar-bound are taken from PATH; jq is needed.
# Exit status: 0 the theorem held on every run, 1 it failed (a bug), 2 trouble.
set -eu

eps=1e-3 iters=200 keep='' fractions="1/8 1/4 1/2" at=20
usage() {
	echo "usage: bound-check.sh [-e EPS] [-i ITERS] [-k DIR] [-l \"F ...\"] [-t T]" >&2
	exit 2
}
while getopts e:i:k:l:t:h opt; do
	case $opt in
	e) eps=$OPTARG ;;
	i) iters=$OPTARG ;;
	k) keep=$OPTARG ;;
	l) fractions=$OPTARG ;;
	t) at=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || usage
for t in scar-train scar-bound jq; do
	command -v "$t" >/dev/null || { echo "bound-check.sh: '$t' not found in PATH" >&2; exit 2; }
done
if [ "$at" -lt 1 ] || [ "$at" -ge "$iters" ]; then
	echo "bound-check.sh: -t $at must be in 1..$((iters - 1))" >&2
	exit 2
fi

if [ -n "$keep" ]; then
	mkdir -p "$keep"
	dir=$keep
else
	dir=$(mktemp -d)
	trap 'rm -rf "$dir"' EXIT
fi

scar-train -q -m ridge -n "$iters" --no-timing > "$dir/ref.jsonl"
last=$(jq -rs '[.[] | select(.type == "iteration")] | last | .dist_opt' "$dir/ref.jsonl")
if ! awk -v d="$last" -v e="$eps" 'BEGIN { exit !(d <= e) }'; then
	echo "bound-check.sh: the reference ends at ||x - x*|| = $last > $eps: raise -i or -e" >&2
	exit 2
fi
scar-bound fit --json "$dir/ref.jsonl" > "$dir/fit.json"
jq -r '"# ridge: c = \(.header_contraction) exactly, \(.fit.c) fitted " +
	"(95% \(.fit.c_lo)..\(.fit.c_hi), r2 \(.fit.r2)); " +
	"D = \(.dist_opt0) exactly, <= \(.fit.d_upper) from the first step"' "$dir/fit.json"
printf '# a failure after iteration %s loses a fraction of the 8 shards; cost = extra iterations to reach ||x - x*|| <= %s\n\n' \
	"$at" "$eps"

echo "| lost | strategy | delta L2 | bound | observed | within | K(eps) | theorem |"
echo "|---:|:---|---:|---:|---:|:---:|---:|:---:|"
bad=0
for f in $fractions; do
	for s in traditional partial scar none; do
		case $s in
		traditional) opts="--policy full --interval 8 --recovery full" ;;
		partial) opts="--policy full --interval 8 --recovery partial" ;;
		scar) opts="--policy priority --interval 8 --fraction 1/4 --recovery partial" ;;
		none) opts="--policy none --recovery none" ;;
		esac
		p=$dir/run-$(echo "$f" | tr / _)-$s
		# twice the reference's length, so a costly run still gets there
		# shellcheck disable=SC2086
		scar-train -q -m ridge -n $((iters * 2)) --no-timing $opts \
			--fail-at "$at" --lose-fraction "$f" > "$p.jsonl"
		rc=0
		scar-bound check --json --metric dist_opt --target "$eps" --eps "$eps" \
			"$dir/ref.jsonl" "$p.jsonl" > "$p.check.json" 2> "$p.check.err" || rc=$?
		if [ "$rc" -eq 2 ]; then
			cat "$p.check.err" >&2
			echo "bound-check.sh: scar-bound check failed for $s, $f lost" >&2
			exit 2
		fi
		jq -r --arg f "$f" --arg s "$s" '"| \($f) | \($s) | " +
			"\([.perturbations[].norm] | add // 0 | . * 10000 | round / 10000) | " +
			"\(.bound * 100 | round / 100) | \(.observed)\(if .censored then "+" else "" end) | " +
			"\(if .exceeded then "no" else "yes" end) | \(.k_max) | " +
			"\(if .theorem == null then "n/a" elif .theorem then "holds" else "VIOLATED" end) |"' \
			"$p.check.json"
		[ "$(jq -r .theorem "$p.check.json")" != false ] || bad=1
	done
done
echo
echo "delta L2: the norm of the perturbation recovery left behind; bound: log(1 + sum ||delta_t|| / (c^t D)) / log(1/c);"
echo "observed: perturbed run minus the actual reference (+ = never reached); within: observed <= ceil(bound)."
exit "$bad"
