#!/usr/bin/env bats
# scar-bound: the bound against hand-computed values, the fit on synthetic
# and real streams, check's verdicts and exit codes, plan, usage errors.
bats_require_minimum_version 1.5.0
load helper

# jq is a test dependency of the JSON outputs
need_jq() { command -v jq >/dev/null || skip "jq not installed"; }

# near A B TOL: |A - B| <= TOL
near() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t) }'; }

HDR='{"type":"header","format":"scar-events","version":1,"objective_higher_better":false'

# geometric STREAM C N [CONTRACTION]: x(k) - x* = 4 c^k, steps 4 c^(k-1) |1 - c|, objective dist^2
geometric() {
	{
		if [ -n "${4:-}" ]; then echo "$HDR,\"contraction\":$4}"; else echo "$HDR}"; fi
		awk -v c="$2" -v n="$3" 'BEGIN {
			for (k = 0; k <= n; k++) {
				d = 4 * c ^ k
				if (k == 0)
					printf "{\"type\":\"iteration\",\"iter\":0,\"objective\":%.17g,\"dist_opt\":%.17g}\n", d * d, d
				else
					printf "{\"type\":\"iteration\",\"iter\":%d,\"objective\":%.17g,\"step_norm\":%.17g,\"dist_opt\":%.17g}\n", k, d * d, 4 * c ^ (k - 1) * (c < 1 ? 1 - c : c - 1), d
			}
		}'
	} > "$1"
}

# perturbed STREAM N T DELTA SCALE: c = 1/2; after clock T the distance is SCALE times the reference's
perturbed() {
	{
		echo "$HDR,\"contraction\":0.5}"
		awk -v n="$2" -v T="$3" -v dl="$4" -v s="$5" 'BEGIN {
			for (k = 0; k <= n; k++) {
				d = 4 * 0.5 ^ k
				if (k > T) d *= s
				printf "{\"type\":\"iteration\",\"iter\":%d,\"objective\":%.17g,\"step_norm\":1,\"dist_opt\":%.17g}\n", k, d * d, d
				if (k == T) {
					printf "{\"type\":\"failure\",\"iter\":%d,\"shards\":[0],\"rows_lost\":1}\n", T
					printf "{\"type\":\"recovery\",\"iter\":%d,\"strategy\":\"partial\",\"delta_norm\":%.17g,\"future\":1}\n", T, dl
					printf "{\"type\":\"mystery-record\"}\n"
				}
			}
		}'
	} > "$1"
}

@test "scar-bound: --help, help COMMAND and --version exit 0 on stdout" {
	run -0 scar-bound --help
	[[ $output == *"commands:"* ]]
	for c in check evaluate fit plan; do
		run -0 scar-bound "$c" --help
		[[ ${lines[0]} == "usage: scar-bound $c "* ]]
		run -0 scar-bound help "$c"
	done
	run -0 scar-bound --version
	[[ $output == "scar-bound "* ]]
}

@test "scar-bound: usage errors exit 2 with a hint" {
	run -2 scar-bound
	run -2 scar-bound frobnicate
	[[ $output == *"unknown command 'frobnicate'"* ]]
	[[ $output == *"try 'scar-bound --help'"* ]]
	run -2 scar-bound evaluate --D 1 --delta 1@1
	[[ $output == *"missing --c"* ]]
	run -2 scar-bound evaluate --c 1 --D 1 --delta 1@1
	run -2 scar-bound evaluate --c 0.5 --D 0 --delta 1@1
	run -2 scar-bound evaluate --c 0.5 --D 1 --delta 1
	[[ $output == *"no @T"* ]]
	run -2 scar-bound evaluate --c 0.5 --D 1 --delta -1@2
	run -2 scar-bound evaluate --c 0.5 --D 1 --delta x@2
	run -2 scar-bound evaluate --c 0.5 --D 1 --delta 1@2 --eps 0
	run -2 scar-bound evaluate --c 0.5 --D 1 --delta 1@2 --bogus
	run -2 scar-bound evaluate --c 0.5 --D 1 --delta 1@2 extra
	run -2 scar-bound check only-one.jsonl
	run -2 scar-bound check --metric energy a b
	[[ $output == *"not objective or dist_opt"* ]]
	run -2 scar-bound check --delta 0.1 a b
	run -2 scar-bound check - -
	run -2 scar-bound plan --c 0.5 --failure-rate 0.1
	[[ $output == *"missing --budget"* ]]
	run -2 scar-bound plan --c 0.5 --budget 2 --failure-rate 0.1
	# a whole number is an interval typed for a budget: say what to type
	run -2 --separate-stderr scar-bound plan --c 0.5 --budget 10 --failure-rate 0.1
	[ "${stderr_lines[0]}" = "scar-bound: option '--budget': 10 is not a fraction in (0, 1]; did you mean 1/10?" ]
	run -2 scar-bound plan --c 0.5 --budget 0 --failure-rate 0.1
	[[ $output == *"not a fraction in (0, 1]"* ]]
	run -2 scar-bound plan --c 0.5 --budget 1/2 --failure-rate 0.1 --step 1
	run -2 scar-bound plan --c 0.5 --budget 1/2 --failure-rate 1/100
	run -2 scar-bound fit --skip -1 x
	run -2 scar-bound fit a b
}

@test "scar-bound evaluate: hand-computed bound and K(eps)" {
	# c 1/2, D 1, ||delta|| 1 after clock 1: relative 2, iota log2 3, K = ceil(log2 300) = 9
	run -0 scar-bound evaluate --c 0.5 --D 1 --delta 1@1 --eps 0.01
	[[ $output == *"relative           2"* ]]
	[[ $output == *"iota_bound         1.58496250072115"* ]]
	[[ $output == *"k_unperturbed      7"* ]]
	[[ $output == *"k_max              9"* ]]
	need_jq
	# two perturbations sum: 1/0.5 + 0.25/0.25 = 3, iota = log2 4 = 2; a bare X takes --T
	run -0 scar-bound evaluate --json --c 0.5 --D 1 --delta 1@1 --delta 0.25 --T 2
	[ "$(jq -r '.perturbations | length' <<<"$output")" = 2 ]
	near "$(jq -r .iota <<<"$output")" 2 1e-12
	[ "$(jq -r .k_max <<<"$output")" = null ]
	# a perturbation where c^t underflows still has a finite bound: log2(1 + 2^2000)
	run -0 scar-bound evaluate --json --c 0.5 --D 1 --delta 1@2000
	near "$(jq -r .iota <<<"$output")" 2000 1e-9
	[ "$(jq -r .relative <<<"$output")" = null ]
}

@test "scar-bound evaluate: reads scar-diff's JSON on stdin" {
	need_jq
	run -0 bash -c 'echo "{\"l2\":1,\"iteration_a\":1,\"linf\":0.5}" | scar-bound evaluate --json --c 0.5 --D 1'
	near "$(jq -r .iota <<<"$output")" 1.584962500721156 1e-12
	# --T overrides iteration_a; "overall" holds l2 in the nested layout
	run -0 bash -c 'echo "{\"overall\":{\"l2\":1},\"iteration_a\":7}" | scar-bound evaluate --json --c 0.5 --D 1 --T 1'
	near "$(jq -r .iota <<<"$output")" 1.584962500721156 1e-12
	run -2 bash -c 'echo "{\"l1\":1}" | scar-bound evaluate --c 0.5 --D 1'
	[[ $output == *'no numeric "l2"'* ]]
	run -2 bash -c 'echo "not json" | scar-bound evaluate --c 0.5 --D 1'
}

@test "scar-bound fit: a geometric sequence gives c exactly, D from s0 / (1 - c)" {
	need_jq
	geometric g.jsonl 0.8 40
	# no contraction in the header and no dist_opt used for c: the fit decides
	run -0 scar-bound fit --json g.jsonl
	near "$(jq -r .c <<<"$output")" 0.8 1e-12
	[ "$(jq -r .c_source <<<"$output")" = fit ]
	near "$(jq -r .fit.r2 <<<"$output")" 1 1e-9
	[ "$(jq -r .fit.n <<<"$output")" = 20 ]
	[ "$(jq -r .fit.k_first <<<"$output")" = 21 ]
	# s0 = 4 * 0.2 = 0.8, so D <= 0.8 / 0.2 = 4, which here is exact
	near "$(jq -r .fit.d_upper <<<"$output")" 4 1e-9
	[ "$(jq -r .d_source <<<"$output")" = dist_opt ]
	run -0 scar-bound fit --json --skip 0 - < g.jsonl
	[ "$(jq -r .fit.n <<<"$output")" = 40 ]
	run -0 scar-bound fit g.jsonl
	[[ $output == *"(fitted)"* ]]
}

@test "scar-bound fit: the header's exact contraction wins; the noise floor ends the window" {
	need_jq
	geometric g.jsonl 0.5 60 0.5
	run -0 scar-bound fit --json g.jsonl
	[ "$(jq -r .c_source <<<"$output")" = header ]
	[ "$(jq -r .c <<<"$output")" = 0.5 ]
	# steps fall below 1e-6 of the largest at k = 21: the window ends there
	[ "$(jq -r .fit.stop <<<"$output")" = noise-floor ]
	[ "$(jq -r .fit.k_last <<<"$output")" = 20 ]
	run -0 scar-bound fit --json --floor 0 g.jsonl
	[ "$(jq -r .fit.stop <<<"$output")" = end ]
	[ "$(jq -r .fit.k_last <<<"$output")" = 60 ]
}

@test "scar-bound fit, check, evaluate: a checkpoint or array given for JSON is named as such" {
	scar-train -q -m ridge -n 3 --save x.ckpt > x.jsonl
	scar-ckpt export --tensor w -o w.npy x.ckpt
	scar-ckpt export -o x.safetensors x.ckpt
	run -2 --separate-stderr scar-bound fit x.ckpt
	[ "$stderr" = "scar-bound: 'x.ckpt' is a scar checkpoint, not an event stream (JSON lines, as scar-train writes on stdout)" ]
	run -2 --separate-stderr scar-bound fit - < x.ckpt
	[ "$stderr" = "scar-bound: '-' is a scar checkpoint, not an event stream (JSON lines, as scar-train writes on stdout)" ]
	run -2 --separate-stderr scar-bound fit w.npy
	[[ $stderr == *"'w.npy' is a .npy array, not an event stream"* ]]
	run -2 --separate-stderr scar-bound fit x.safetensors
	[[ $stderr == *"'x.safetensors' is a safetensors file, not an event stream"* ]]
	run -2 --separate-stderr scar-bound check x.jsonl x.ckpt
	[[ $stderr == *"'x.ckpt' is a scar checkpoint, not an event stream"* ]]
	run -2 --separate-stderr scar-bound evaluate --c 0.9 --D 3 < x.ckpt
	[ "$stderr" = "scar-bound: '-' is a scar checkpoint, not scar-diff's JSON: pipe 'scar-diff --json A B' into evaluate" ]
	run -2 --separate-stderr scar-bound evaluate --c 0.9 --D 3 < x.safetensors
	[[ $stderr == *"'-' is a safetensors file, not scar-diff's JSON"* ]]
	# scar-train's --reference reads streams the same way
	run -2 --separate-stderr scar-train -q -m ridge -n 3 --reference x.ckpt
	[[ $stderr == *"'x.ckpt' is a scar checkpoint, not an event stream"* ]]
	# other bytes are still "not JSON", where they are
	printf 'ab\0cd' > nul.bin
	run -2 --separate-stderr scar-bound evaluate --c 0.9 --D 3 < nul.bin
	[ "$stderr" = "scar-bound: '-': offset 2: a NUL byte: not JSON text" ]
}

@test "scar-bound fit: only iterations before the first failure; errors are exit 2" {
	need_jq
	perturbed p.jsonl 10 4 0.25 2
	run -0 scar-bound fit --json p.jsonl
	[ "$(jq -r .iterations <<<"$output")" = 5 ]
	[ "$(jq -r .fit.stop <<<"$output")" = failure ]
	# too few steps and no exact c
	{ echo "$HDR}"; echo '{"type":"iteration","iter":0,"objective":1}'
	  echo '{"type":"iteration","iter":1,"objective":0.5,"step_norm":1}'; } > short.jsonl
	run -2 scar-bound fit short.jsonl
	[[ $output == *"too few step norms"* ]]
	# not contracting
	geometric up.jsonl 1.1 20
	run -2 scar-bound fit up.jsonl
	[[ $output == *"does not contract"* ]]
	# malformed line, named with its number
	{ echo "$HDR}"; echo '{"type":"iteration","iter":0}'; echo '{oops'; } > bad.jsonl
	run -2 scar-bound fit bad.jsonl
	[[ $output == *"bad.jsonl:3:"* ]]
	run -2 scar-bound fit missing.jsonl
	[[ $output == *"cannot open 'missing.jsonl'"* ]]
}

@test "scar-bound check: within the bound exits 0, with the theorem" {
	need_jq
	geometric ref.jsonl 0.5 12 0.5
	# after clock 4 (distance 0.25) a delta of 0.25 doubles the distance:
	# relative 0.25 / (0.5^4 * 4) = 1, iota = 1, observed one iteration later
	perturbed pert.jsonl 16 4 0.25 2
	run -0 scar-bound check --json --eps 0.01 ref.jsonl pert.jsonl
	near "$(jq -r .bound <<<"$output")" 1 1e-12
	[ "$(jq -r .reference_iter <<<"$output")" = 12 ]
	[ "$(jq -r .perturbed_iter <<<"$output")" = 13 ]
	[ "$(jq -r .observed <<<"$output")" = 1 ]
	[ "$(jq -r .exceeded <<<"$output")" = false ]
	# K(0.01) = ceil(log2(8 / 0.01)) = 10, and 8 * 0.5^10 <= 0.01
	[ "$(jq -r .k_max <<<"$output")" = 10 ]
	[ "$(jq -r .theorem <<<"$output")" = true ]
	near "$(jq -r .envelope_max <<<"$output")" 1 1e-12
	run -0 scar-bound check --metric dist_opt --target 0.01 ref.jsonl pert.jsonl
	[[ $output == *"within the bound"* ]]
	run -0 scar-bound check ref.jsonl - < pert.jsonl
}

@test "scar-bound check: a cost above the bound exits 1, as does a theorem violation" {
	need_jq
	geometric ref.jsonl 0.5 12 0.5
	# a reported delta of 0.01 cannot explain a distance 4 times larger
	perturbed pert.jsonl 20 4 0.01 4
	run -1 --separate-stderr scar-bound check --json --eps 0.01 ref.jsonl pert.jsonl
	[[ $stderr == *"violates the theorem"* ]]
	[ "$(jq -r .observed <<<"$output")" = 2 ]
	[ "$(jq -r .exceeded <<<"$output")" = true ]
	[ "$(jq -r .theorem <<<"$output")" = false ]
	jq -e '.envelope_max > 1' <<<"$output"
	# an extra perturbation given on the command line explains it
	run -0 scar-bound check --delta 0.74@4 ref.jsonl pert.jsonl
}

@test "scar-bound check: censored below the bound exits 2; unreachable target exits 2" {
	geometric ref.jsonl 0.5 12 0.5
	perturbed pert.jsonl 12 4 0.25 2
	run -2 scar-bound check ref.jsonl pert.jsonl
	[[ $output == *"censored"* ]]
	[[ $output == *"at least 1"* ]]
	run -2 scar-bound check --target 1e-30 ref.jsonl pert.jsonl
	[[ $output == *"never reaches"* ]]
	# a failure without a recovery record
	grep -v recovery pert.jsonl > norec.jsonl
	run -2 scar-bound check ref.jsonl norec.jsonl
	[[ $output == *"recovery"* ]]
}

@test "scar-bound fit and check on a real ridge run" {
	need_jq
	scar-train -q -m ridge -n 300 --no-timing > ref.jsonl
	run -0 scar-bound fit --json ref.jsonl
	c=$(jq -r .c <<<"$output")
	[ "$(jq -r .c_source <<<"$output")" = header ]
	[ "$(jq -r .d_source <<<"$output")" = dist_opt ]
	# the fit of the step norms lands near the exact rate
	near "$(jq -r .fit.c <<<"$output")" "$c" 0.005
	jq -e '.fit.r2 > 0.99' <<<"$output"
	scar-train -q -m ridge -n 300 --no-timing --policy priority --fraction 1/4 \
		--fail-at 30 --lose-fraction 1/4 > pert.jsonl
	run -0 scar-bound check --json --metric dist_opt --target 1e-3 --eps 1e-3 ref.jsonl pert.jsonl
	[ "$(jq -r .theorem <<<"$output")" = true ]
	jq -e '.envelope_max <= 1.000001' <<<"$output"
	jq -e '.perturbations | length == 1' <<<"$output"
}

@test "scar-bound plan: a short table, the recommendation and why; the curve in --json" {
	need_jq
	run -0 --separate-stderr scar-bound plan --c 0.95 --budget 1/10 --failure-rate 0.01 --lost-fraction 1/8
	[ -z "$stderr" ]
	echo "$output"
	# the divisors of 10 scar-train can run, full first, and the baseline
	[ "${lines[2]}" = "checkpoint                 rework per failure      per iteration" ]
	[[ ${lines[3]} == "every 10, all rows "*" 1.76 "*" 0.0176  <- recommended" ]]
	[[ ${lines[4]} == "every 5, 1/2 of the rows "*" 2.08 "* ]]
	[[ ${lines[5]} == "every 2, 1/5 of the rows "* ]]
	[[ ${lines[6]} == "every 1, 1/10 of the rows "* ]]
	[[ ${lines[7]} == "every 10, full rollback "*" 4.5 "*" 0.045  (traditional)" ]]
	[ "${lines[8]}" = "recommended: full checkpoints every 10 iterations, restoring only the lost rows" ]
	[ "${lines[9]}" = "  scar-train --policy full --interval 10" ]
	[[ $output == *"why: under this model, which spreads drift evenly over the rows,"* ]]
	[[ $output == *"(1.76 iterations per failure against"* ]]
	[[ $output == *"2.08 for the best partial setting and 4.5 for a full rollback)"* ]]
	[[ $output == *"note: the model cannot credit prioritized partial checkpoints"* ]]
	# three significant digits, no line wider than 80 columns
	[ -z "$(grep -oE '[0-9]+\.[0-9]+' <<<"$output" | tr -d . | sed 's/^0*//' | grep -E '^[0-9]{4,}')" ]
	while IFS= read -r l; do [ "${#l}" -le 80 ] || { echo "too long: $l"; false; }; done <<<"$output"
	# the numbers are the JSON's, rounded
	run -0 scar-bound plan --json --c 0.95 --budget 1/10 --failure-rate 0.01 --lost-fraction 1/8
	[ "$(jq '.points | length' <<<"$output")" = 10 ]
	[ "$(jq -r '.best.iota * 1000 | round' <<<"$output")" = 1763 ]
	[ "$(jq -r .scar_train <<<"$output")" = "--policy full --interval 10" ]
	# a partial recommendation runs as printed (ridge has 50 rows)
	run -0 scar-bound plan --c 0.95 --budget 1/50 --failure-rate 0.001 --iters 30
	[[ $output == *"recommended: 1/50 of the rows every iteration, restoring only the lost rows"* ]]
	flags=$(sed -n '/^recommended:/{n;s/^  scar-train //p;}' <<<"$output")
	[ "$flags" = "--policy round-robin --interval 50 --fraction 1/50" ]
	[[ $output == *"why: failures come before full checkpoints every 50 iterations"* ]]
	run -0 scar-train -q -m ridge -n 3 $flags --checkpoint-dir ck
	# a budget whose 1/B is not whole: the model's answer, and no scar-train setting
	run -0 scar-bound plan --c 0.95 --budget 0.3 --failure-rate 0.01
	[[ $output == *"(no scar-train setting: its schedules need a whole 1/budget, here 3.33)"* ]]
	# the baseline keeps within the budget: a full checkpoint every 4, not 3
	[[ $output == *$'\nevery 4, full rollback '* ]]
	run -0 scar-bound plan --json --c 0.95 --budget 0.3 --failure-rate 0.01
	[ "$(jq .scar_train <<<"$output")" = null ]
	[ "$(jq .cycle <<<"$output")" = null ]
	[ "$(jq .traditional.every <<<"$output")" = 4 ]
	# --D alone changes nothing, and says so
	run -0 --separate-stderr scar-bound plan --json --c 0.95 --budget 1/10 --failure-rate 0.01
	want=$output
	run -0 --separate-stderr scar-bound plan --json --c 0.95 --budget 1/10 --failure-rate 0.01 --D 7
	[ "$stderr" = "scar-bound: warning: --D without --step changes nothing: D cancels out of the plan's model (give --step, the first step ||x(1) - x(0)||, to use it)" ]
	[ "$(jq -c 'del(.D)' <<<"$output")" = "$(jq -c 'del(.D)' <<<"$want")" ]
	run -0 --separate-stderr scar-bound plan --json --c 0.95 --budget 1/10 --failure-rate 0.01 --D 7 --step 0.1
	[ -z "$stderr" ]
	[ "$(jq -c .points <<<"$output")" != "$(jq -c .points <<<"$want")" ]
}

@test "scar-bound plan: hand-computed curve, the minimum, the budget" {
	need_jq
	# c 1/2, budget 1/2: every 1 (half the rows, ages 0 and 1) or every 2 (all rows)
	run -0 scar-bound plan --json --c 0.5 --budget 1/2 --failure-rate 0.01
	[ "$(jq -r '.points | length' <<<"$output")" = 2 ]
	near "$(jq -r '.points[0].iota' <<<"$output")" 0.7715533031636121 1e-12
	near "$(jq -r '.points[1].iota' <<<"$output")" 0.5 1e-12
	[ "$(jq -r .best.every <<<"$output")" = 2 ]
	near "$(jq -r .traditional.iota <<<"$output")" 0.5 0
	[ "$(jq -r .scar_train <<<"$output")" = "--policy full --interval 2" ]
	run -0 scar-bound plan --json --c 0.95 --budget 1/20 --failure-rate 0.001 --lost-fraction 1/8 --iters 200
	jq -e '.best.iota == ([.points[] | select(.runnable) | .iota] | min)' <<<"$output"
	# scar-train runs the divisors of 20 only
	[ "$(jq -c '[.points[] | select(.runnable) | .every]' <<<"$output")" = '[1,2,4,5,10,20]' ]
	[ "$(jq .cycle <<<"$output")" = 20 ]
	jq -e 'all(.points[]; .fraction <= .every / 20 + 1e-12)' <<<"$output"
	jq -e '.points[-1].fraction == 1' <<<"$output"
	run -0 scar-bound plan --c 0.95 --budget 0.05 --failure-rate 0.001
	[[ $output == *"<- recommended"* ]]
	[[ $output == *$'\nevery 20, full rollback '*"(traditional)"* ]]
}

@test "scar-bound: every long option is in --help, the man page and all three completions" {
	src="$SCAR_ROOT/cmd/scar-bound.c"
	opts=$(grep -hoE '^[[:space:]]*\{ "[a-zA-Z][a-zA-Z-]*", (no|required|optional)_argument' "$src" "$SCAR_ROOT/cmd/common/subcmd.c" |
		sed -E 's/.*"([a-zA-Z-]+)".*/\1/' | sort -u)
	[ "$(printf '%s\n' "$opts" | wc -l)" -ge 18 ]
	help=$(scar-bound --help; for c in check evaluate fit plan; do scar-bound "$c" --help; done)
	man=$(MANWIDTH=200 mandoc -Tascii "$SCAR_ROOT/man/scar-bound.1" | col -b)
	for o in $opts; do
		[[ $help == *"--$o"* ]] || { echo "--$o missing from --help"; false; }
		[[ $man == *"--$o"* ]] || { echo "--$o missing from the man page"; false; }
		grep -q -- "--$o\b" "$SCAR_ROOT/completions/bash/scar-bound" || { echo "--$o missing from bash"; false; }
		grep -q -- "--$o\b" "$SCAR_ROOT/completions/zsh/_scar-bound" || { echo "--$o missing from zsh"; false; }
		grep -qE -- "-l $o( |\$)" "$SCAR_ROOT/completions/fish/scar-bound.fish" || { echo "--$o missing from fish"; false; }
	done
}

@test "scar-bound: the theorem holds on 20 random perturbations of ridge (examples/bound-validate.sh)" {
	command -v jq >/dev/null || skip "jq not installed"
	run -0 --separate-stderr sh "$SCAR_ROOT/examples/bound-validate.sh" -n 20 -s 7 -i 300 -k v
	echo "$output"
	[[ $output == *"| all | 20 | 20/20 |"* ]]
	[[ $output != *"violation"* ]]
	# every run was checked, and each check saw its perturbations
	[ "$(wc -l < v/results)" -eq 20 ]
	[ "$(awk -F '\t' '$4 < 1' v/results | wc -l)" -eq 0 ]
}
