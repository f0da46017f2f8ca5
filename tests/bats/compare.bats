#!/usr/bin/env bats
# compare.bats - tools/compare-stats (the statistics of the strategy
# comparison) on known inputs, and examples/compare-strategies.sh end to
# end on tiny synthetic workloads.

bats_require_minimum_version 1.5.0
load helper

STATS="$SCAR_ROOT/tools/compare-stats"
CMP="$SCAR_ROOT/examples/compare-strategies.sh"

stats() {
	${SCAR_WRAP:-} "$STATS" "$@"
}

# runs.tsv rows: label data lost strategy trial fail_at cost censored
row() {
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@"
}

# Four trials of traditional (1..4), scar (halves), a copy of traditional
# ("same") and zero-cost null trials.
known_runs() {
	local t
	printf '# label\tdata\tlost\tstrategy\ttrial\tfail_at\tcost_interp\tcensored\n'
	for t in 1 2 3 4; do row a synth 1/4 traditional $t $((8 + t)) $t false; done
	for t in 1 2 3 4; do row a synth 1/4 scar $t $((8 + t)) "$(echo "$t / 2" | bc -l)" false; done
	for t in 1 2 3 4; do row a synth 1/4 same $t $((8 + t)) $t false; done
	for t in 1 2 3 4; do row a synth 0 null $t $((8 + t)) 0.0 false; done
}

@test "compare-stats --help prints the usage and every long option" {
	run -0 stats --help
	assert_line --index 0 --partial "usage: compare-stats"
	local o
	for o in $(sed -n 's/^[[:space:]]*{ "\([a-z-]*\)", .*/\1/p' "$STATS.c"); do
		[[ $output == *"--$o"* ]]
		grep -q -- "--$o" "$SCAR_ROOT/tools/compare-stats.md"
	done
	run -2 stats --no-such-option
	run -2 stats --resamples 0 /dev/null
	run -2 stats a b
}

@test "compare-stats: known inputs give known means, counts and a reduction" {
	known_runs > runs.tsv
	run -0 stats --json out.json runs.tsv
	run -0 jq -e '.cells | length == 3' out.json
	run -0 jq -e '.cells[] | select(.strategy == "traditional") |
		.mean_cost == 2.5 and .trials == 4 and .reduction == 0 and .significant == null' out.json
	run -0 jq -e '.cells[] | select(.strategy == "scar") |
		.mean_cost == 1.25 and .reduction == 0.5 and .paired_trials == 4 and .censored == 0' out.json
	# paired: scar costs half of traditional in every trial, so every resample says 50%
	run -0 jq -e '.cells[] | select(.strategy == "scar") |
		(.reduction_ci[0] - 0.5 | fabs) < 1e-12 and (.reduction_ci[1] - 0.5 | fabs) < 1e-12' out.json
	run -0 jq -e '.bootstrap == {"method":"percentile","level":95,"resamples":10000,"seed":1,"paired_reduction":true}' out.json
	run -0 grep -F '| a | synth | 1/4 | scar | 4 | 1.25 |' <(stats runs.tsv)
}

@test "compare-stats: every interval covers its mean and lies within the data" {
	known_runs > runs.tsv
	# a noisier cell: costs 0.5 .. 9.5 over 10 trials
	for t in $(seq 1 10); do row b synth 1/8 traditional $t 9 $((t * 3 % 10)).5 false; done >> runs.tsv
	for t in $(seq 1 10); do row b synth 1/8 scar $t 9 $((t * 7 % 5)).25 false; done >> runs.tsv
	run -0 stats --json out.json runs.tsv
	run -0 jq -e 'all(.cells[]; .ci[0] <= .mean_cost and .mean_cost <= .ci[1] and .ci[0] < .ci[1])' out.json
	run -0 jq -e 'all(.cells[] | select(.reduction_ci); .reduction_ci[0] <= .reduction and .reduction <= .reduction_ci[1])' out.json
	run -0 jq -e '.cells[] | select(.label == "b" and .strategy == "traditional") | .ci[0] >= 0.5 and .ci[1] <= 9.5' out.json
}

@test "compare-stats: identical strategies give reduction 0, an interval containing 0, not significant" {
	known_runs > runs.tsv
	run -0 stats --json out.json runs.tsv
	run -0 jq -e '.cells[] | select(.strategy == "same") |
		.reduction == 0 and .reduction_ci == [0, 0] and .significant == false' out.json
	run -0 jq -e '.cells[] | select(.strategy == "scar") | .significant == true and .reduction_ci[0] > 0' out.json
	run -0 stats runs.tsv
	assert_line --partial '| a | synth | 1/4 | same | 4 | 2.50 |'
	[[ $(grep -F '| same |' <<<"$output") == *"(n.s.)"* ]]
	[[ $(grep -F '| scar |' <<<"$output") != *"(n.s.)"* ]]
}

@test "compare-stats: a null column of zeros gives a floor of exactly 0" {
	known_runs > runs.tsv
	run -0 stats --json out.json runs.tsv
	run -0 jq -e '.floors == [{"label":"a","data":"synth","trials":4,"mean_cost":0,"ci":[0,0],"max_abs_cost":0,"censored":0}]' out.json
	run -0 stats runs.tsv
	assert_line '| a | synth | 4 | 0 | [0, 0] | 0 | 0 |'
	# a null trial that costs something shows in the floor
	row a synth 0 null 5 13 -0.75 true >> runs.tsv
	run -0 stats --json out.json runs.tsv
	run -0 jq -e '.floors[0] | .max_abs_cost == 0.75 and .mean_cost == -0.15 and .censored == 1 and .ci[0] < 0' out.json
}

@test "compare-stats: a fixed seed gives byte-identical output, another seed other intervals" {
	known_runs > runs.tsv
	stats --seed 7 --json a.json --gnuplot a.gp runs.tsv > a.md
	stats --seed 7 --json b.json --gnuplot b.gp runs.tsv > b.md
	cmp a.md b.md
	cmp a.json b.json
	cmp a.gp b.gp
	stats --seed 8 --json c.json runs.tsv > c.md
	! cmp -s a.json c.json
	# a cell's interval does not depend on the other cells in the input
	grep -v -e '	same	' runs.tsv > fewer.tsv
	stats --seed 7 --json d.json fewer.tsv > /dev/null
	[ "$(jq -c '.cells[] | select(.strategy == "scar")' a.json)" = "$(jq -c '.cells[] | select(.strategy == "scar")' d.json)" ]
}

@test "compare-stats: refuses malformed input with exit 2" {
	printf 'a\tb\tc\n' > short.tsv
	run -2 stats short.tsv
	[[ $output == *"short.tsv:1: 3 fields, expected 8"* ]]
	row a synth 1/4 scar 1 9 abc false > bad.tsv
	run -2 stats bad.tsv
	[[ $output == *"cost 'abc'"* ]]
	{ row a synth 1/4 scar 1 9 1 false; row a synth 1/4 scar 1 9 2 false; } > dup.tsv
	run -2 stats dup.tsv
	[[ $output == *"appears twice"* ]]
	{ row a synth 1/4 traditional 1 9 1 false; row a synth 1/4 scar 1 10 2 false; } > unpaired.tsv
	run -2 stats unpaired.tsv
	[[ $output == *"not the same trial"* ]]
	{ row a one 1/4 scar 1 9 1 false; row a two 1/4 scar 2 9 2 false; } > twodata.tsv
	run -2 stats twodata.tsv
	run -2 stats no-such-file.tsv
}

@test "compare-strategies.sh --help, --plan and bad arguments" {
	run -0 "$CMP" --help
	assert_line --index 0 --partial "usage: compare-strategies.sh [options] [SPEC...]"
	run -0 "$CMP" --plan -t 20 -o out ridge 'tiny=-m ridge -n 40 --seed 3'
	# 8 strategies, of which ridge has 6 (no rebuild, no rewind)
	[[ $output == *"2 workloads x 3 lost fractions (1/8 1/4 1/2) x 8 strategies = 36 cells, 20 trials each (rebuild and rewind only on the models that have them)"* ]]
	[[ $output == *"2 reference runs + 760 runs = 762"* ]]
	[[ $output == *"tiny (synthetic): scar-train -m ridge -n 40 --seed 3; failures after iterations 9..20"* ]]
	[ "$(cut -f 1-3 out/compare-workloads.tsv | tr '\t' ' ')" = "$(printf 'ridge ridge synthetic\ntiny ridge synthetic')" ]
	run -2 "$CMP" --plan -o out no-such-workload
	run -2 "$CMP" --plan -o out 'x=-m ridge -n 40 --policy full'
	[[ $output == *"sets '--policy'"* ]]
	run -2 "$CMP" --plan -o out 'x=-m ridge -n 12'
	run -2 "$CMP" --plan -o out 'a b=-m ridge -n 40'
	run -2 "$CMP" --plan -o out ridge ridge
	run -2 "$CMP" --plan -o out -t 0 ridge
	run -2 "$CMP" --plan -o out -S "traditional nope" ridge
	run -2 "$CMP" --no-such-option
	run -2 "$CMP" --trials
	SCAR_DATA=$PWD/empty run -2 "$CMP" --plan -o out mlr
	[[ $output == *"make data"* ]]
}

@test "compare-strategies.sh end to end on two tiny ridge workloads: CIs, floor, plot, sorted raw runs" {
	run -0 "$CMP" -t 3 -j 2 -l "1/4 1/2" -S "traditional scar" -o out \
		'r20=-m ridge -n 20' 'r24=-m ridge -n 24 --seed 2'
	printf '%s\n' "$output" > log
	# progress on stderr: the plan, runs done / total, elapsed, ETA
	grep -q '^compare: plan: 2 workloads x 2 lost fractions (1/4 1/2) x 2 strategies = 8 cells, 3 trials each' log
	grep -q '^compare: 32/32 runs (100%), .* elapsed, ETA 0:00$' log
	[ "$(table_rows < out/compare.md | wc -l)" -ge 8 ]
	run -0 jq -e '(.cells | length) == 8 and all(.cells[]; .trials == 3 and (.ci | length) == 2)' out/compare.json
	run -0 jq -e '[.cells[].label] | unique == ["r20", "r24"]' out/compare.json
	run -0 jq -e '[.cells[].data] | unique == ["synthetic"]' out/compare.json
	run -0 jq -e '.workloads[1] == {"label":"r24","model":"ridge","data":"synthetic","data_path":"-","args":"-m ridge -n 24 --seed 2"}' out/compare.json
	# the null trials restore what was lost: exactly 0 on ridge
	run -0 jq -e '(.floors | length) == 2 and all(.floors[]; .trials == 3 and .max_abs_cost == 0)' out/compare.json
	grep -q '^| r20 | synthetic | 3 | 0 | \[0, 0\] | 0 | 0 |$' out/compare.md
	# the raw runs say how the null trials were made, and the tables repeat it
	grep -q '^# null: the same failure times and seeds' out/compare-runs.tsv
	grep -q '^Noise floor: null trials (the same failure times and seeds' out/compare.md
	# raw runs: header, 2 x (2 x 2 x 3 + 3) rows in workload, lost, strategy, trial order
	[ "$(grep -vc '^#' out/compare-runs.tsv)" -eq 30 ]
	[ "$(grep -v '^#' out/compare-runs.tsv | sed -n 1p | cut -f 1-5 | tr '\t' ' ')" = "r20 synthetic 1/4 traditional 1" ]
	[ "$(grep -v '^#' out/compare-runs.tsv | sed -n 15p | cut -f 1-5 | tr '\t' ' ')" = "r20 synthetic 0 null 3" ]
	if command -v gnuplot > /dev/null; then
		[ -s out/compare.png ]
	fi
	# aggregating again gives the same tables
	cp out/compare.md first.md
	run -0 "$CMP" --aggregate -o out
	cmp first.md out/compare.md
}

@test "compare-strategies.sh: a re-run gives the same raw runs and tables, byte for byte" {
	"$CMP" -t 2 -j 2 -l 1/4 -S "traditional round-robin" -o a 'r=-m ridge -n 20' 2> /dev/null > /dev/null
	"$CMP" -t 2 -j 1 -l 1/4 -S "traditional round-robin" -o b 'r=-m ridge -n 20' 2> /dev/null > /dev/null
	cmp a/compare-runs.tsv b/compare-runs.tsv
	cmp a/compare.md b/compare.md
	cmp a/compare.json b/compare.json
}

# The markdown table rows (after the header and separator) of the first table.
table_rows() { awk '/^\| *---/ { in_t = 1; next } in_t && /^\| / { print; next } in_t { exit }'; }
