#!/usr/bin/env bats
# examples.bats - the programs and scripts of examples/ run, in a small
# configuration, and say what the tools say.

bats_require_minimum_version 1.5.0
load helper

EX=$SCAR_ROOT/examples

# Build examples/$1.c the way a user would, against include/ and the
# built library only (make check builds them in place too); with the
# sanitizer runtime when the library is a SANITIZE build.
build_example() {
	[ -f "$SCAR_ROOT/lib/libscar.a" ] || skip "lib/libscar.a not built (run make)"
	${CC:-cc} -std=c11 -Wall -Wextra -Werror -O2 $SCAR_SANFLAGS -I"$SCAR_ROOT/include" \
		-o "$1" "$EX/$1.c" "$SCAR_ROOT/lib/libscar.a" -ljansson -llz4 -lz -lm $SCAR_SANFLAGS
}

# The markdown table rows of a script's output ("| ... |" lines after the separator).
table_rows() { grep '^| ' | grep -v '^| *---' | tail -n +2; }

# ---- C programs

@test "ckpt-roundtrip: the state comes back bit for bit, as a checkpoint the tools read" {
	build_example ckpt-roundtrip
	run -0 ./ckpt-roundtrip rt.ckpt
	[[ $output == *"3 tensors"* && $output == *"l2 0, identical"* ]]
	run -0 scar-ckpt verify rt.ckpt
	run -0 scar-ckpt info --json rt.ckpt
	run -0 jq -e '.model == "demo" and .iteration == 42 and .shards == 4' <<<"$output"
	run -2 ./ckpt-roundtrip a b
	run -2 ./ckpt-roundtrip no-such-dir/rt.ckpt
	[[ $output == *no-such-dir* ]]
}

@test "perturbation-study: its L2 is scar-inject's and its bound scar-bound's" {
	build_example perturbation-study
	scar-train -q -m ridge -n 20 --no-timing --save r.ckpt > r.jsonl
	run -0 ./perturbation-study r.ckpt
	printf '%s\n' "$output" > table
	[ "$(grep -c '^[1-4] ' table)" -eq 4 ]
	# losing shard 0 alone, reset to zero, is scar-inject --lose-shards 0
	local l2 iota c D
	l2=$(awk '$1 == 1 { print $3 }' table)
	iota=$(awk '$1 == 1 { print $5 }' table)
	scar-inject --lose-shards 0 --reset zero --report rep.json r.ckpt hit.ckpt
	run -0 jq -e --argjson x "$l2" '(.delta_norm - $x | fabs) <= 1e-5 * .delta_norm' rep.json
	# c and D as the model knows them (the header of the stream)
	c=$(jq -r 'select(.type == "header") | .contraction' r.jsonl)
	D=$(jq -r 'select(.type == "iteration" and .iter == 0) | .dist_opt' r.jsonl)
	grep -q "c = $(printf '%.6g' "$c"), D = $(printf '%.6g' "$D")" table
	run -0 scar-bound evaluate --json --c "$c" --D "$D" --delta "$l2@20"
	run -0 jq -e --argjson i "$iota" '(.iota - $i | fabs) <= 1e-3 * .iota' <<<"$output"
	# the bound grows with the shards lost
	run -0 awk '/^[1-4] / { if ($5 <= prev) exit 1; prev = $5 }' table
	# a model without an exact c needs C and D
	scar-train -q -m mlr -n 5 --save m.ckpt > /dev/null
	run -2 ./perturbation-study m.ckpt
	[[ $output == *"give C and D"* ]]
	run -0 ./perturbation-study m.ckpt 0.9 5
	run -2 ./perturbation-study m.ckpt 0.9
}

@test "train-embed: the library run costs what scar-train --cost reports" {
	build_example train-embed
	run -0 ./train-embed ridge 60 20
	printf '%s\n' "$output" > table
	local trad scar cli
	trad=$(awk '$1 == "traditional" { print $2 }' table)
	scar=$(awk '$1 == "scar" { print $2 }' table)
	# a full rollback from 20 to the checkpoint at 16 redoes 4 iterations
	[ "$trad" -eq 4 ]
	[ "$scar" -le "$trad" ]
	cli=$(scar-train -q -m ridge -n 60 --shards 8 --policy priority --interval 8 --fraction 1/4 \
		--fail-at 20 --lose-count 2 --fail-seed 1 --recovery partial --cost |
		jq -r 'select(.type == "cost") | .cost')
	[ "$scar" -eq "$cli" ]
	run -2 ./train-embed ridge 10 20
	run -2 ./train-embed no-such-model
}

# ---- shell scripts, small

@test "bound-check.sh: a small ridge check holds the theorem on every strategy" {
	run -0 "$EX/bound-check.sh" -i 100 -e 1e-2 -l 1/4
	printf '%s\n' "$output" > out
	[ "$(table_rows < out | wc -l)" -eq 4 ]
	# a full rollback from iteration 20 to 16 costs exactly 4
	grep -q '^| 1/4 | traditional | .* | 4 | .* | holds |$' out
	[ "$(grep -c '| holds |$' out)" -eq 4 ]
	grep -q 'exactly' out
	# too few iterations to reach the target is a clear error
	run -2 "$EX/bound-check.sh" -i 50 -l 1/4
	[[ $output == *"raise -i or -e"* ]]
	run -2 "$EX/bound-check.sh" -x
}

@test "perturbation-study.sh: cost and bound grow with the noise" {
	run -0 "$EX/perturbation-study.sh" -i 150 -t 10 -l "0.01 0.3 3"
	printf '%s\n' "$output" > out
	[ "$(table_rows < out | wc -l)" -eq 3 ]
	# bound (column 4) and observed (column 5) never shrink as the noise grows
	run -0 awk -F '|' '/^\| [0-9]/ { b = $4 + 0; o = $5 + 0
		if (n++ && (b <= pb || o < po)) exit 1; pb = b; po = o }' out
	[ "$(grep -c '| holds |$' out)" -eq 3 ]
	run -0 "$EX/perturbation-study.sh" -m mlr -i 20 -l "0.1 1"
	[ "$(table_rows <<<"$output" | wc -l)" -eq 2 ]
	run -2 "$EX/perturbation-study.sh" -t 500
}

@test "compare-strategies.sh: one trial per cell on ridge gives the full table" {
	run -0 env TRIALS=1 JOBS=2 OUT="$BATS_TEST_TMPDIR/cmp" "$EX/compare-strategies.sh" ridge
	# 18 cells (6 strategies of 8 apply to ridge, 3 lost fractions), then the noise floor's one row
	[ "$(table_rows < cmp/compare.md | wc -l)" -eq 20 ]
	run -0 jq -e '.cells | length == 18 and all(.[]; .trials == 1 and (.mean_cost | type) == "number")' \
		cmp/compare.json
	run -0 jq -e '.floors | length == 1' cmp/compare.json
	# traditional is the baseline: its reduction is 0
	run -0 jq -e '[.cells[] | select(.strategy == "traditional") | .reduction] | all(. == 0)' \
		cmp/compare.json
}

@test "bound-validate.sh: a few ridge runs, the theorem holds" {
	run -0 "$EX/bound-validate.sh" -n 3 -i 150 -k kept
	printf '%s\n' "$output" > out
	grep -q '^| all | 3 | 3/3 |' out
	[ -s kept/ref.jsonl ]
}

@test "the shell examples are POSIX sh: dash parses them, shellcheck finds no error" {
	local f
	for f in "$EX"/*.sh; do
		[ -x "$f" ] || { echo "${f##*/} is not executable"; return 1; }
		head -n 1 "$f" | grep -qx '#!/bin/sh' || { echo "${f##*/}: not #!/bin/sh"; return 1; }
		if command -v dash >/dev/null; then
			run -0 dash -n "$f"
		fi
	done
	if command -v shellcheck >/dev/null; then
		run -0 shellcheck -S error -s sh "$EX"/*.sh
	else
		echo "# shellcheck not installed: only dash -n" >&3
	fi
}
