#!/bin/sh
# compare-strategies.sh - the paper's comparison (SCAR, ICML 2019, Table/Fig. 5):
# iteration cost of a partial failure under five strategies at equal
# checkpoint I/O, for lost fractions 1/8, 1/4 and 1/2 of the shards, with
# bootstrap confidence intervals, paired reductions and a noise floor.
#
#   examples/compare-strategies.sh [options] [SPEC...]
#
# A SPEC is a workload: LABEL=SCAR-TRAIN-ARGS, e.g.
#   'mlr-fmnist=-m mlr --data ~/.cache/scar/fashion-mnist --set lr=0.05 --set lr_decay=0 -n 30'
# (the arguments are split at blanks, without quotes; a leading ~/ is
# $HOME), or the NAME of a built-in workload (the table below). Default:
# mlr mlr-decay mf lda, on the data sets of `make data`. The label names
# the workload in the tables, the data set is the base name of --data
# ("synthetic" without). The comparison sets the checkpoint policy, the
# failures, the recovery and the reference itself: a SPEC that sets them is
# refused. Options (environment variable, default):
#   -t, --trials N          failure trials per cell (TRIALS, 20)
#   -j, --jobs N            parallel runs (JOBS, 2)
#   -o, --out DIR           output directory (OUT, results)
#   -s, --shards S          parameter shards (SHARDS, 8)
#   -c, --interval C        full checkpoint every C iterations (INTERVAL, 8)
#   -r, --fraction R        r of the partial policies (FRACTION, 1/4)
#   -l, --lost "F ..."      lost fractions (LOST, "1/8 1/4 1/2")
#   -S, --strategies "..."  of traditional partial-recovery round-robin random
#                           scar scar-rebuild scar-rewind scar-auto
#                           (STRATEGIES, all eight; traditional is the
#                           baseline of the reductions; scar-* are the
#                           priority policy with recovery partial, rebuild,
#                           rewind and auto, scar(7); rebuild runs only on
#                           mf and lda, rewind only on mlr)
#   -b, --seed N            bootstrap seed (BOOT_SEED, 1)
#   -B, --resamples N       bootstrap resamples (RESAMPLES, 10000)
#   -N, --null-args "ARGS"  scar-train arguments of the null trials, or
#                           "none" (NULL_ARGS, chosen by the script, below)
#   -a, --aggregate         make no run: tables and plot from OUT/compare-runs.tsv
#                           (AGGREGATE=1)
#   -p, --plan              print the plan and exit
#   -h, --help              print this help and exit
# SCAR_DATA is the `make data` cache (default ~/.cache/scar).
#
# Trial t (1..TRIALS) fails once, at T_t = C + 1 + (t - 1) * (N/2 - C) / TRIALS
# (integer division: spread evenly over (C, N/2], so every phase of the
# checkpoint cycle up to N/2 is represented), losing round(f * S) shards
# chosen by --fail-seed t. The same trials are run for every strategy, so
# cells differ only by strategy, and the reductions are paired by trial.
# Each workload also gets TRIALS null trials: the same failure times and
# seeds with nothing lost (--lose-count 0 when scar-train accepts it; else a
# full checkpoint every iteration and partial recovery, which restores rows
# equal to the lost ones); their costs are the noise floor of the measure.
#
# Statistics by tools/compare-stats (tools/compare-stats.md): per cell the
# mean of cost_interp with a 95% percentile-bootstrap interval over trials;
# the reduction 1 - mean / mean(traditional) with a 95% interval from a
# paired bootstrap (trial indices resampled jointly), marked (n.s.) when it
# includes 0; per workload the null trials' mean, interval and max |cost|.
#
# Writes OUT/compare.md, OUT/compare-auto.md (auto in hindsight),
# OUT/compare-vs-scar.md (the reductions against scar instead), OUT/compare.json, OUT/compare.png (with gnuplot;
# OUT/compare.gp is its script), the raw runs in OUT/compare-runs.tsv
# (label, data, lost, strategy, trial, T, cost_interp, censored; sorted by
# workload, lost fraction, strategy and trial, so re-runs compare with cmp;
# a "# null:" line says how the null trials were made),
# and OUT/compare-workloads.tsv. Progress (runs done / total, elapsed, ETA)
# goes to stderr.
set -eu

# The checkout's tools, unless PATH has them already (`make valgrind-check`
# puts its wrappers of them ahead).
bin=$(cd "$(dirname "$0")/.." && pwd)
case ":$PATH:" in
*":$bin:"*) ;;
*) PATH="$bin:$PATH" ;;
esac
data=${SCAR_DATA:-${XDG_CACHE_HOME:-$HOME/.cache}/scar}

# ---- The built-in workloads: the one place to add a data set. ------------
# One line each: NAME | DATA (its name in the tables) | a FILE that must
# exist ("-": none) | the scar-train arguments. $data is SCAR_DATA, where
# `make data` (tools/fetch-data.sh) puts the real data sets. mlr runs twice:
# "mlr" with a constant step of 0.05, "mlr-decay" with scar-train's default
# lr / (1 + 0.3 e) from 0.2 (about 0.05 in the failure window); the
# decaying step works a perturbation off ever more slowly.
builtin_workloads() {
	cat <<EOF
mlr       | fashion-mnist | $data/fashion-mnist/train-images-idx3-ubyte.gz | -m mlr --data $data/fashion-mnist --set lr=0.05 --set lr_decay=0 -n 30
mlr-decay | fashion-mnist | $data/fashion-mnist/train-images-idx3-ubyte.gz | -m mlr --data $data/fashion-mnist -n 30
mf        | movielens     | $data/movielens/ratings.csv                    | -m mf --data $data/movielens/ratings.csv -n 30
lda       | spam          | $data/spam/docword.spam.txt                    | -m lda --data $data/spam/docword.spam.txt -n 40
mlr-spam  | spam-labels   | $data/spam/spam.libsvm                         | -m mlr --data $data/spam/spam.libsvm --set lr=1 -n 30
mf-insteval | insteval    | $data/insteval/ratings.tsv                     | -m mf --data $data/insteval/ratings.tsv --set lambda=0.5 -n 30
lda-sotu  | sotu          | $data/sotu/docword.sotu.txt                    | -m lda --data $data/sotu/docword.sotu.txt -n 40
ridge     | synthetic     | -                                              | -m ridge -n 60
EOF
}
default_workloads="mlr mlr-decay mf lda mlr-spam mf-insteval lda-sotu"
all_strategies="traditional partial-recovery round-robin random scar scar-rebuild scar-rewind scar-auto"

strategy_args() {
	case $1 in
	traditional)      echo "--policy full --recovery full" ;;
	partial-recovery) echo "--policy full --recovery partial" ;;
	round-robin)      echo "--policy round-robin --fraction $r --recovery partial" ;;
	random)           echo "--policy random --fraction $r --recovery partial" ;;
	scar)             echo "--policy priority --fraction $r --recovery partial" ;;
	scar-rebuild)     echo "--policy priority --fraction $r --recovery rebuild" ;;
	scar-rewind)      echo "--policy priority --fraction $r --recovery rewind" ;;
	scar-auto)        echo "--policy priority --fraction $r --recovery auto" ;;
	*) return 1 ;;
	esac
}

# Whether strategy $1 applies to model $2 (scar(7): rebuild needs a model
# whose parameters are a function of what survives, rewind a decaying step).
strategy_applies() {
	case $1:$2 in
	scar-rebuild:mf|scar-rebuild:lda) return 0 ;;
	scar-rebuild:*) return 1 ;;
	scar-rewind:mlr) return 0 ;;
	scar-rewind:*) return 1 ;;
	esac
	return 0
}

usage() {
	cat <<EOF
usage: compare-strategies.sh [options] [SPEC...]

The iteration cost of a partial failure under checkpoint strategies at equal
checkpoint I/O, with bootstrap confidence intervals and a noise floor.
SPEC is LABEL=SCAR-TRAIN-ARGS or a built-in workload: $(builtin_workloads | cut -d '|' -f 1 | tr -s ' \n' ' ')
(default: $default_workloads).

  -a, --aggregate         make no run: tables and plot from OUT/compare-runs.tsv
  -B, --resamples N       bootstrap resamples (RESAMPLES, 10000)
  -b, --seed N            bootstrap seed (BOOT_SEED, 1)
  -c, --interval C        full checkpoint every C iterations (INTERVAL, 8)
  -h, --help              print this help and exit
  -j, --jobs N            parallel runs (JOBS, 2)
  -l, --lost "F ..."      lost fractions (LOST, "1/8 1/4 1/2")
  -N, --null-args "ARGS"  scar-train arguments of the null trials, or none (NULL_ARGS)
  -o, --out DIR           output directory (OUT, results)
  -p, --plan              print the plan and exit
  -r, --fraction R        r of the partial policies (FRACTION, 1/4)
  -S, --strategies "..."  strategies (STRATEGIES, "$all_strategies")
  -s, --shards S          parameter shards (SHARDS, 8)
  -t, --trials N          failure trials per cell (TRIALS, 20)

Example: compare-strategies.sh -t 5 'mine=-m mlr --data ~/my.libsvm --set lr=0.05 -n 40' mf
EOF
}

die() { echo "compare: $*" >&2; exit 2; }
usage_error() { echo "compare: $*" >&2; echo "try 'compare-strategies.sh --help'" >&2; exit 2; }

trials=${TRIALS:-20}
jobs=${JOBS:-2}
out=${OUT:-results}
S=${SHARDS:-8}
C=${INTERVAL:-8}
r=${FRACTION:-1/4}
lost=${LOST:-1/8 1/4 1/2}
strategies=${STRATEGIES:-$all_strategies}
bseed=${BOOT_SEED:-1}
resamples=${RESAMPLES:-10000}
null_args=${NULL_ARGS:-auto}
aggregate=${AGGREGATE:-0}
plan_only=0

while [ $# -gt 0 ]; do
	opt=$1
	case $opt in
	--*=*) val=${opt#*=}; opt=${opt%%=*}; shift; set -- "$opt" "$val" "$@" ;;
	esac
	case $opt in
	-a|--aggregate) aggregate=1; shift; continue ;;
	-p|--plan) plan_only=1; shift; continue ;;
	-h|--help) usage; exit 0 ;;
	--) shift; break ;;
	-t|--trials|-j|--jobs|-o|--out|-s|--shards|-c|--interval|-r|--fraction|-l|--lost|\
	-S|--strategies|-b|--seed|-B|--resamples|-N|--null-args)
		[ $# -ge 2 ] || usage_error "option '$opt' needs a value" ;;
	-*) usage_error "unknown option '$opt'" ;;
	*) break ;;
	esac
	case $opt in
	-t|--trials) trials=$2 ;;
	-j|--jobs) jobs=$2 ;;
	-o|--out) out=$2 ;;
	-s|--shards) S=$2 ;;
	-c|--interval) C=$2 ;;
	-r|--fraction) r=$2 ;;
	-l|--lost) lost=$2 ;;
	-S|--strategies) strategies=$2 ;;
	-b|--seed) bseed=$2 ;;
	-B|--resamples) resamples=$2 ;;
	-N|--null-args) null_args=$2 ;;
	esac
	shift 2
done

posint() {
	case $2 in
	''|*[!0-9]*) usage_error "$1 '$2' is not a positive integer" ;;
	esac
	[ "$2" -ge 1 ] || usage_error "$1 '$2' is not a positive integer"
}
posint trials "$trials"
posint jobs "$jobs"
posint shards "$S"
posint interval "$C"
posint resamples "$resamples"
case $bseed in ''|*[!0-9]*) usage_error "seed '$bseed' is not a non-negative integer" ;; esac
[ -n "$(echo $lost)" ] || usage_error "no lost fraction"
for s in $strategies; do
	strategy_args "$s" > /dev/null || usage_error "unknown strategy '$s' (of $all_strategies)"
done
[ -n "$(echo $strategies)" ] || usage_error "no strategy"
[ $# -gt 0 ] || set -- $default_workloads

stats=$(command -v compare-stats 2>/dev/null || echo "$bin/tools/compare-stats")
[ -x "$stats" ] || die "tools/compare-stats is not built (run make)"

mkdir -p "$out"
runs="$out/compare-runs.tsv"
wl="$out/compare-workloads.tsv"

# The words of a workload's arguments; sets w_model, w_path, w_n, w_args.
parse_workload() {
	w_model=mlr w_path='' w_n=50 w_args='' prev=''
	set -f
	for a in $2; do
		case $a in
		\~/*) a=$HOME/${a#\~/} ;;
		--data=\~/*) a=--data=$HOME/${a#--data=\~/} ;;
		esac
		case $prev in
		-m|--model) w_model=$a ;;
		--data) w_path=$a ;;
		-n|--iters) w_n=$a ;;
		esac
		case $a in
		--model=*) w_model=${a#*=} ;;
		--data=*) w_path=${a#*=} ;;
		--iters=*) w_n=${a#*=} ;;
		--policy*|--interval*|--fraction*|--fail-*|--lose-*|--recovery*|--reference*|\
		--cost|--shards*|--resume*|--save*|--events*|--checkpoint-dir*|-q|--quiet|--no-timing)
			set +f
			die "workload '$1' sets '${a%%=*}', which the comparison sets itself" ;;
		esac
		w_args="$w_args${w_args:+ }$a"
		prev=$a
	done
	set +f
	case $w_n in ''|*[!0-9]*) die "workload '$1': -n '$w_n' is not a number" ;; esac
}

# The iterations -n of resolved arguments (scar-train's default 50).
iters_of() {
	printf '%s\n' "$1" | awk '{ for (i = 1; i < NF; i++) if ($i == "-n" || $i == "--iters") n = $(i + 1)
		for (i = 1; i <= NF; i++) if ($i ~ /^--iters=/) n = substr($i, 9) } END { print n ? n : 50 }'
}

if [ "$aggregate" != 1 ]; then
	case $out$data in *[[:space:]]*) die "OUT and SCAR_DATA must not contain blanks" ;; esac
	# The workloads, resolved: label, model, data, data path, args.
	: > "$wl.tmp"
	labels=
	for spec in "$@"; do
		case $spec in
		*=*)
			label=${spec%%=*}
			parse_workload "$label" "${spec#*=}"
			if [ -n "$w_path" ]; then
				dname=${w_path%/}
				dname=${dname##*/}
			else
				dname=synthetic
			fi ;;
		*)
			label=$spec
			line=$(builtin_workloads | awk -F '|' -v n="$spec" '{
				for (i = 1; i <= 4; i++) gsub(/^ +| +$/, "", $i)
				if ($1 == n) { print $2 "\t" $3 "\t" $4; exit } }')
			[ -n "$line" ] || usage_error "unknown workload '$spec' (built in: $(builtin_workloads | cut -d '|' -f 1 | tr -s ' \n' ' '); or LABEL=ARGS)"
			dname=$(printf '%s\n' "$line" | cut -f 1)
			need=$(printf '%s\n' "$line" | cut -f 2)
			[ "$need" = - ] || [ -e "$need" ] || die "workload '$spec' needs '$need' (run 'make data', or set SCAR_DATA)"
			parse_workload "$label" "$(printf '%s\n' "$line" | cut -f 3)" ;;
		esac
		case $label in
		''|*[!A-Za-z0-9._-]*) die "label '$label' is not made of letters, digits, '.', '_' and '-'" ;;
		esac
		case " $labels " in *" $label "*) die "label '$label' is given twice" ;; esac
		labels="$labels${labels:+ }$label"
		[ $((w_n / 2 - C)) -ge 1 ] || die "workload '$label': -n $w_n is too small for failures in ($C, n/2] (interval $C)"
		printf '%s\t%s\t%s\t%s\t%s\n' "$label" "$w_model" "$dname" "$(printf '%s' "${w_path:--}" | sed "s|^$HOME/|~/|")" "$w_args" >> "$wl.tmp"
	done
	mv "$wl.tmp" "$wl"

	# The null trials: nothing lost, if scar-train can say so.
	set -- $lost
	if [ "$null_args" = auto ]; then
		if scar-train -q --no-timing -m ridge -n 3 --policy full --interval 1 --recovery partial \
			--fail-at 1 --lose-count 0 > /dev/null 2>&1; then
			null_args="--policy full --interval $C --recovery partial --lose-count 0"
			null_desc="the same failure times and seeds, nothing lost: $null_args"
		else
			null_args="--policy full --interval 1 --recovery partial --lose-fraction $1"
			null_desc="the same failure times and seeds; scar-train cannot lose nothing, so a full checkpoint every iteration restores rows equal to the lost ones: $null_args"
		fi
	elif [ "$null_args" = none ]; then
		null_desc=
	else
		null_desc="the same failure times and seeds: $null_args"
	fi

	nl=$(wc -l < "$wl")
	nf=$#
	ns=$(set -- $strategies; echo $#)
	nnull=$([ "$null_args" = none ] && echo 0 || echo 1)
	# (label, strategy) pairs that apply: rebuild and rewind are per model
	npairs=0
	while IFS="$(printf '\t')" read -r _ model _ _ _; do
		for s in $strategies; do
			! strategy_applies "$s" "$model" || npairs=$((npairs + 1))
		done
	done < "$wl"
	per_label=$((trials * (nf * npairs / nl + nnull)))
	nruns=$((trials * (nf * npairs + nl * nnull)))
	total=$((nl + nruns))
	{
		echo "compare: plan: $nl workloads x $nf lost fractions ($lost) x $ns strategies = $((nf * npairs)) cells, $trials trials each$([ "$npairs" -eq $((nl * ns)) ] || echo ' (rebuild and rewind only on the models that have them)')"
		[ "$nnull" = 0 ] || echo "compare: null trials: $trials per workload ($null_args)"
		while IFS="$(printf '\t')" read -r label _ dname _ args; do
			n=$(iters_of "$args")
			echo "compare:   $label ($dname): scar-train $args; failures after iterations $((C + 1))..$((C + 1 + (trials - 1) * (n / 2 - C) / trials))"
		done < "$wl"
		echo "compare: $nl reference runs + $nruns runs = $total, $jobs at a time; shards $S, interval $C, fraction $r"
	} >&2
	[ "$plan_only" = 0 ] || exit 0

	# Progress on stderr: a line per 1% done (a \r line on a terminal).
	prog="$out/.compare-progress"
	: > "$prog"
	start=$(date +%s)
	progress() {
		last=-1
		while :; do
			d=$(wc -l < "$prog")
			pct=$((100 * d / total))
			now=$(date +%s)
			el=$((now - start))
			if [ "$d" -gt 0 ]; then eta=$((el * (total - d) / d)); else eta=-1; fi
			msg=$(awk -v d="$d" -v t="$total" -v p="$pct" -v e="$el" -v a="$eta" 'function hms(s) {
				return s < 0 ? "?" : s >= 3600 ? sprintf("%d:%02d:%02d", s / 3600, s % 3600 / 60, s % 60) : sprintf("%d:%02d", s / 60, s % 60) }
				BEGIN { printf "compare: %d/%d runs (%d%%), %s elapsed, ETA %s", d, t, p, hms(e), hms(a) }')
			if [ -t 2 ]; then
				printf '\r%s ' "$msg" >&2
			elif [ "$pct" -gt "$last" ]; then
				echo "$msg" >&2
			fi
			last=$pct
			if [ "$d" -ge "$total" ]; then
				[ ! -t 2 ] || echo >&2
				break
			fi
			sleep 1
		done
	}
	progress &
	mon=$!
	trap 'kill "$mon" 2>/dev/null || :' EXIT
	trap 'kill "$mon" 2>/dev/null || :; exit 130' INT TERM

	# Phase 1: the references, one per workload.
	tab=$(printf '\t')
	t0=$(date +%s.%N 2>/dev/null)
	case $t0 in *[!0-9.]*|'') t0=$(date +%s) ;; esac
	while IFS="$tab" read -r label _ dname _ args; do
		printf '%s --shards %s %s\n' "$label" "$S" "$args"
	done < "$wl" | tr '\n' '\0' | xargs -0 -P "$jobs" -n 1 sh -c '
		set -f
		set -- $1
		l=$1
		shift
		scar-train -q --no-timing "$@" > "$0/ref-$l.jsonl" || { echo "compare: reference run failed: scar-train -q --no-timing $*" >&2; exit 255; }
		echo ref >> "$0/.compare-progress"
	' "$out" || die "a reference run failed"
	t1=$(date +%s.%N 2>/dev/null)
	case $t1 in *[!0-9.]*|'') t1=$(date +%s) ;; esac
	awk -v a="$t0" -v b="$t1" -v nl="$nl" -v j="$jobs" -v k="$per_label" 'BEGIN {
		w = b - a; p = nl < j ? nl : j
		e = w * p / j * k
		printf "compare: the references took %.1f s: the runs about %d:%02d (minutes:seconds)\n", w, e / 60, e % 60 }' >&2

	# Phase 2: the runs, trial by trial (so that the rate, and the ETA, stay even).
	cmds="$out/compare-cmds.txt"
	: > "$cmds"
	t=1
	while [ "$t" -le "$trials" ]; do
		li=0
		while IFS="$tab" read -r label model dname _ args; do
			li=$((li + 1))
			n=$(iters_of "$args")
			T=$((C + 1 + (t - 1) * (n / 2 - C) / trials))
			base="-q --no-timing --shards $S $args --interval $C --fail-at $T --fail-seed $t --reference $out/ref-$label.jsonl"
			fi=0
			for f in $lost; do
				fi=$((fi + 1))
				si=0
				for s in $strategies; do
					si=$((si + 1))
					strategy_applies "$s" "$model" || continue
					printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$li" "$fi" "$si" "$label" "$dname" "$f" "$s" "$t" "$T" \
						"$base $(strategy_args "$s") --lose-fraction $f" >> "$cmds"
				done
			done
			# (the null arguments come last: their --interval wins)
			[ "$nnull" = 0 ] || printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$li" "$((nf + 1))" 0 "$label" "$dname" 0 null "$t" "$T" \
				"$base $null_args" >> "$cmds"
		done < "$wl"
		t=$((t + 1))
	done

	# Each line: run the command, keep its cost record's cost and censored flag.
	raw="$out/.compare-runs.unsorted"
	: > "$raw"
	tr '\n' '\0' < "$cmds" | xargs -0 -P "$jobs" -n 1 sh -c '
		line=$1
		meta=$(printf "%s" "$line" | cut -f1-9)
		cmd=$(printf "%s" "$line" | cut -f10)
		set -f
		rec=$(scar-train $cmd | grep "\"type\":\"cost\"") || { echo "compare: failed: scar-train $cmd" >&2; exit 255; }
		cost=$(printf "%s" "$rec" | sed "s/.*\"cost_interp\":\([-0-9.e+]*\).*/\1/")
		cens=$(printf "%s" "$rec" | sed "s/.*\"censored\":\([a-z]*\).*/\1/")
		printf "%s\t%s\t%s\n" "$meta" "$cost" "$cens" >> "$0"
		echo run >> "$(dirname "$0")/.compare-progress"
	' "$raw" || die "a run failed (see above)"
	wait "$mon" || :
	trap - EXIT INT TERM
	{
		printf '# label\tdata\tlost\tstrategy\ttrial\tfail_at\tcost_interp\tcensored\n'
		[ -z "$null_desc" ] || printf '# null: %s\n' "$null_desc"
		LC_ALL=C sort -t "$tab" -k1,1n -k2,2n -k3,3n -k8,8n "$raw" | cut -f 4-
	} > "$runs"
	rm -f "$raw" "$prog"
fi

[ -s "$runs" ] || die "no runs in '$runs'"
set -- --seed "$bseed" --resamples "$resamples" --markdown "$out/compare.md" \
	--json "$out/compare.json" --gnuplot "$out/compare.gp"
[ ! -r "$wl" ] || set -- "$@" --workloads "$wl"
${SCAR_WRAP:-} "$stats" "$@" "$runs"
# The recoveries beyond SCAR against SCAR itself (same policy, same trials).
if grep -q "$(printf '\tscar-re')\|$(printf '\tscar-auto')" "$runs"; then
	${SCAR_WRAP:-} "$stats" --seed "$bseed" --resamples "$resamples" --baseline scar \
		--markdown "$out/compare-vs-scar.md" "$runs" > /dev/null
fi

if command -v gnuplot >/dev/null 2>&1; then
	clusters=$(grep -c '^[0-9]' "$out/compare.gp" || :)	# bars and floor bands
	width=$((450 + 14 * clusters))
	[ "$width" -le 2400 ] || width=2400
	[ "$width" -ge 1100 ] || width=1100
	gnuplot -e "set terminal pngcairo size $width,560 noenhanced; set output '$out/compare.png'; set title 'Iteration cost of a partial failure at equal checkpoint I/O (scar examples/compare-strategies.sh)'" \
		"$out/compare.gp"
fi
# Recovery "auto" in hindsight: per cell, the trials where it took the
# strategy that was cheapest (its run is then that strategy's, bit for bit),
# among the priority-policy recoveries that ran (scar, scar-rebuild,
# scar-rewind) and the rollback, whose cost is the failure's iteration T
# (under the priority policy the only full checkpoint is iteration 0's);
# its mean cost against the best fixed strategy's and the per-trial best's.
auto_md="$out/compare-auto.md"
awk -F '\t' '
	/^#/ { next }
	$4 == "scar-auto" { k = $1 SUBSEP $3 SUBSEP $5; auto[k] = $7; cell[$1 SUBSEP $3] = 1
		if (!((($1 SUBSEP $3) in order))) { order[$1 SUBSEP $3] = ++no; key[no] = $1 SUBSEP $3; data[$1 SUBSEP $3] = $2 }
		T[k] = $6; next }
	$4 == "scar" || $4 == "scar-rebuild" || $4 == "scar-rewind" {
		k = $1 SUBSEP $3 SUBSEP $5; c[k, $4] = $7; has[k, $4] = 1
		sum[$1 SUBSEP $3, $4] += $7; cnt[$1 SUBSEP $3, $4]++ }
	END {
		if (!no) exit
		print "| label | data | lost | trials | auto picked the cheapest | mean cost: auto | best fixed | per-trial best |"
		print "|---|---|---|---|---|---|---|---|"
		for (i = 1; i <= no; i++) {
			split(key[i], lk, SUBSEP); n = hit = sa = so = 0
			for (k in auto) {
				split(k, p, SUBSEP)
				if (p[1] != lk[1] || p[2] != lk[2]) continue
				best = T[k]
				split("scar scar-rebuild scar-rewind", ss, " ")
				for (j = 1; j <= 3; j++) if ((k, ss[j]) in has && c[k, ss[j]] < best) best = c[k, ss[j]]
				n++; sa += auto[k]; so += best
				d = auto[k] - best; if (d < 0) d = -d
				if (d <= 1e-9 * (1 + (best < 0 ? -best : best))) hit++
			}
			bf = ""; bm = 0
			split("scar scar-rebuild scar-rewind", ss, " ")
			for (j = 1; j <= 3; j++) if (cnt[key[i], ss[j]]) {
				m = sum[key[i], ss[j]] / cnt[key[i], ss[j]]
				if (bf == "" || m < bm) { bf = ss[j]; bm = m } }
			printf "| %s | %s | %s | %d | %d/%d (%.0f%%) | %.2f | %.2f (%s) | %.2f |\n", lk[1], data[key[i]], lk[2], n, hit, n, 100 * hit / n, sa / n, bm, bf, so / n
		}
	}' "$runs" > "$auto_md"
cat "$out/compare.md"
if [ -s "$auto_md" ]; then
	printf '\nRecovery "auto" in hindsight (the cheapest of scar, scar-rebuild, scar-rewind and the rollback, per trial):\n\n'
	cat "$auto_md"
fi
