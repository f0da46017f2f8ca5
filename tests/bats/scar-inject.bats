#!/usr/bin/env bats
# scar-inject: every perturbation kind, delta_norm against scar-diff, seeds,
# selections, pipes and resume, usage errors, options in help/man/completions.
bats_require_minimum_version 1.5.0
load helper

need_jq() {
	command -v jq >/dev/null || skip "jq not installed"
}

# close X Y [REL]: |X - Y| <= REL * max(|X|, |Y|, tiny)
close() {
	awk -v x="$1" -v y="$2" -v r="${3:-1e-9}" 'BEGIN {
		d = x - y; if (d < 0) d = -d; m = x < 0 ? -x : x; n = y < 0 ? -y : y;
		if (n > m) m = n; if (m < 1e-300) m = 1e-300; exit !(d <= r * m) }'
}

# mlr: f32 weights 21x5 in 8 shards plus state tensors; old.ckpt 3 iterations earlier
mlr() {
	scar-train -q --model mlr --iters 3 --save old.ckpt >/dev/null
	scar-train -q --model mlr --iters 6 --save in.ckpt >/dev/null
}

# inject ARGS...: run scar-inject in.ckpt out.ckpt, report in r.json, and
# check the output verifies and that delta_norm is what scar-diff measures
inject() {
	scar-inject --report r.json "$@" in.ckpt out.ckpt
	scar-ckpt verify -q out.ckpt
	local dn l2
	dn=$(jq .delta_norm r.json)
	l2=$(scar-diff --json in.ckpt out.ckpt | jq .l2)
	echo "delta_norm $dn, scar-diff l2 $l2 ($*)"
	close "$dn" "$l2" 1e-9
}

@test "scar-inject: every kind; delta_norm equals scar-diff's l2; output verifies" {
	need_jq
	mlr
	inject --lose-shards 1,3-4
	[ "$(jq -c .shards_lost r.json)" = '[1,3,4]' ]
	[ "$(jq .rows_touched r.json)" = 9 ]	# of 21 rows: 1,9,17 3,11,19 4,12,20
	inject --lose-count 2 --reset random
	inject --lose-fraction 1/4 --reset from=old.ckpt
	[ "$(jq '.shards_lost | length' r.json)" = 2 ]
	inject --lose-count 1 --reset init --seed 5
	inject --noise-l2 0.25
	close "$(jq .delta_norm r.json)" 0.25 1e-9
	inject --noise-rel 0.01
	close "$(jq .delta_norm r.json)" "$(jq .noise_l2 r.json)" 1e-9
	inject --bitflip-count 7 --bits mantissa
	[ "$(jq .bits_flipped r.json)" = 7 ]
	inject --bitflip-rate 0.01 --bits sign
	inject --quantize f16
	inject --quantize bf16
	inject --quantize int8
	inject --stale old.ckpt --mix 0.5
	inject --stale old.ckpt
}

@test "scar-inject: only the rows of the lost shards change" {
	need_jq
	mlr
	scar-inject --lose-shards 1,4 --report r.json in.ckpt out.ckpt
	scar-diff --per row --json in.ckpt out.ckpt |
		jq -c 'select(.type == "row" and .changed > 0) | .row' >changed
	[ -s changed ]
	# shard 1: rows 1, 9, 17; shard 4: rows 4, 12, 20
	! grep -vxE '1|9|17|4|12|20' changed
	run -1 --separate-stderr scar-diff --json in.ckpt out.ckpt
	[ "$(jq -c '[.shards[] | select(.changed > 0) | .shard]' <<<"$output")" = '[1,4]' ]
	# reset to zero: the change is the norm of the lost rows themselves
	close "$(jq .l2 <<<"$output")" "$(jq '[.shards[1,4].l2 | . * .] | add | sqrt' <<<"$output")"
}

@test "scar-inject: the same seed gives the same output, another seed another" {
	need_jq
	mlr
	scar-inject --noise-l2 1 --seed 1 in.ckpt a.ckpt 2>/dev/null
	scar-inject --noise-l2 1 --seed 1 in.ckpt b.ckpt 2>/dev/null
	scar-inject --noise-l2 1 --seed 2 in.ckpt c.ckpt 2>/dev/null
	run -0 scar-diff -q --all a.ckpt b.ckpt
	run -1 scar-diff -q a.ckpt c.ckpt
	scar-inject --bitflip-rate 0.05 --seed 4 in.ckpt a.ckpt 2>/dev/null
	scar-inject --bitflip-rate 0.05 --seed 4 in.ckpt b.ckpt 2>/dev/null
	run -0 scar-diff -q --all a.ckpt b.ckpt
	scar-inject --lose-count 3 --seed 9 in.ckpt x.ckpt 2>x.json
	scar-inject --lose-count 3 --seed 9 in.ckpt y.ckpt 2>y.json
	[ "$(jq -c .shards_lost x.json)" = "$(jq -c .shards_lost y.json)" ]
}

@test "scar-inject: keeps every state tensor and the iteration; training resumes" {
	need_jq
	mlr
	scar-inject --lose-shards 0 --report r.json in.ckpt out.ckpt
	run -1 --separate-stderr scar-diff --json --all in.ckpt out.ckpt
	[ "$(jq '[.tensors[] | select(.role == "state") | .changed] | add // 0' <<<"$output")" = 0 ]
	[ "$(jq .iteration_b <<<"$output")" = 6 ]
	run -0 scar-train -q --resume out.ckpt --iters 8
	[[ $output == *'"type":"summary"'* ]]
	[ "$(jq -r '.tensors[0].role' r.json)" = param ]
}

@test "scar-inject: works in a pipe between two scar-train runs" {
	need_jq
	run -0 bash -c 'scar-train -q --model mlr --iters 4 --save - |
		scar-inject --lose-shards 2 --reset zero 2>rep.json |
		scar-train -q --resume - --iters 6 > resumed.jsonl'
	[ "$(jq -r .input rep.json)" = - ]
	[ "$(jq '.delta_norm > 0' rep.json)" = true ]
	[ "$(tail -1 resumed.jsonl | jq -r .type)" = summary ]
	# stdin and stdout by name, too
	scar-train -q --model mlr --iters 4 --save in.ckpt >/dev/null
	scar-inject --quantize bf16 - - <in.ckpt >out.ckpt 2>/dev/null
	scar-ckpt verify -q out.ckpt
}

@test "scar-inject: --tensor, --shard and --rows restrict the perturbation" {
	need_jq
	mlr
	scar-inject --noise-l2 1 --shard 3 --report r.json in.ckpt out.ckpt
	run -1 --separate-stderr scar-diff --json in.ckpt out.ckpt
	[ "$(jq '[.shards[] | select(.changed > 0) | .shard]' -c <<<"$output")" = '[3]' ]
	scar-inject --noise-l2 1 --rows 2:5 --report r.json in.ckpt out.ckpt
	[ "$(jq .rows_touched r.json)" = 3 ]
	run -1 --separate-stderr scar-diff --per row --json in.ckpt out.ckpt
	[ "$(grep '"type":"row"' <<<"$output" | jq -c 'select(.changed > 0) | .row' | tr '\n' ' ')" = "2 3 4 " ]
	scar-inject --noise-l2 1 --tensor weights --report r.json in.ckpt out.ckpt
	[ "$(jq -r .select.tensor r.json)" = weights ]
}

@test "scar-inject: bad arguments exit 2 with a clear message" {
	mlr
	run -2 scar-inject in.ckpt out.ckpt
	[[ $output == *"nothing to do: give one perturbation"* ]]
	run -2 scar-inject --noise-l2 1 --quantize f16 in.ckpt out.ckpt
	[[ $output == *"'--noise-l2' and '--quantize' exclude each other"* ]]
	run -2 scar-inject --noise-l2 1 --reset zero in.ckpt out.ckpt
	[[ $output == *"--reset goes with"* ]]
	run -2 scar-inject --bitflip-count 3 --bits middle in.ckpt out.ckpt
	[[ $output == *"'middle' is not any, sign, exponent or mantissa"* ]]
	run -2 scar-inject --lose-shards 9 in.ckpt out.ckpt
	[[ $output == *"shard 9 does not exist (there are 8 shards, 0..7)"* ]]
	run -2 scar-inject --lose-shards 3-1 in.ckpt out.ckpt
	# An empty list loses no shard: refused, not taken as a no-op.
	run -2 --separate-stderr scar-inject --lose-shards '' in.ckpt out.ckpt
	[ "$stderr" = "scar-inject: option '--lose-shards' needs a value"$'\n'"try 'scar-inject --help'" ]
	run -2 --separate-stderr scar-inject --lose-shards 1,,2 in.ckpt out.ckpt
	[ "${stderr_lines[0]}" = "scar-inject: option '--lose-shards': '1,,2' has an empty item" ]
	[ ! -e out.ckpt ]
	run -2 scar-inject --lose-count 9 in.ckpt out.ckpt
	run -2 scar-inject --rows 5:2 --noise-l2 1 in.ckpt out.ckpt
	[[ $output == *"empty range"* ]]
	run -2 scar-inject --tensor nope --noise-l2 1 in.ckpt out.ckpt
	[[ $output == *"no tensor 'nope'"* ]]
	run -2 scar-inject --quantize f8 in.ckpt out.ckpt
	run -2 scar-inject --mix 2 --stale old.ckpt in.ckpt out.ckpt
	run -2 scar-inject --reset from= --lose-count 1 in.ckpt out.ckpt
	run -2 scar-inject --bitflip-count 100000 --bits sign in.ckpt out.ckpt
	[[ $output == *"only 105 are eligible"* ]]
	run -2 scar-inject --noise-l2 1 missing.ckpt out.ckpt
	[[ $output == *"cannot open 'missing.ckpt'"* ]]
	run -2 scar-inject --lose-count 1 --reset from=missing.ckpt in.ckpt out.ckpt
	[ ! -e out.ckpt ]
	run -2 scar-inject --noise-l2 1 in.ckpt out.ckpt extra
	[[ $output == *"too many operands"* ]]
	run -0 scar-inject --help
	[[ $output == "usage: scar-inject "* ]]
}

@test "scar-inject: -q silences the report on stderr, --report - puts it on stdout" {
	need_jq
	mlr
	# by default the report is the one line on stderr, also in a pipe
	run -0 --separate-stderr scar-inject --lose-count 1 in.ckpt out.ckpt
	[ -z "$output" ]
	[ "$(jq -r .kind <<<"$stderr")" = lose ]
	run -0 --separate-stderr scar-inject -q --lose-count 1 in.ckpt q.ckpt
	[ -z "$output" ] && [ -z "$stderr" ]
	cmp out.ckpt q.ckpt
	run -0 --separate-stderr bash -c 'scar-inject --quiet --noise-l2 0.5 < in.ckpt | scar-ckpt verify -q -'
	[ -z "$stderr" ]
	# errors still reach stderr under -q
	run -2 --separate-stderr scar-inject -q --noise-l2 1 missing.ckpt out.ckpt
	[[ $stderr == "scar-inject: cannot open 'missing.ckpt'"* ]]
	# -q does not silence a report that was asked for
	run -0 --separate-stderr scar-inject -q --report r.json --lose-count 1 in.ckpt out2.ckpt
	[ -z "$stderr" ]
	[ "$(jq -r .kind r.json)" = lose ]
	run -0 --separate-stderr scar-inject --report - --lose-count 1 in.ckpt out3.ckpt
	[ -z "$stderr" ]
	[ "$(jq -r .output <<<"$output")" = out3.ckpt ]
	[ ! -e ./- ]
	cmp out.ckpt out3.ckpt
	# a checkpoint and a report cannot share stdout
	run -2 --separate-stderr scar-inject --report - --lose-count 1 in.ckpt
	[[ $stderr == *"--report - and OUT on standard output would mix"* ]]
	[ -z "$output" ]
	# snapshots too
	scar-ckpt export --tensor weights -o w.npy in.ckpt
	run -0 --separate-stderr scar-inject -q --shards 8 --lose-count 1 w.npy w2.npy
	[ -z "$stderr" ]
	run -0 --separate-stderr scar-inject --report - --shards 8 --lose-count 1 w.npy w3.npy
	[ "$(jq -r .input_format <<<"$output")" = snapshot ]
	cmp w2.npy w3.npy
}

@test "scar-inject: --reset init needs a known model" {
	/usr/bin/python3 -c 'import numpy' 2>/dev/null || skip "numpy not installed"
	/usr/bin/python3 -c 'import numpy as np; np.save("w.npy", np.ones((8, 2)))'
	scar-ckpt import --shards 4 --no-sync -o in.ckpt w.npy
	run -2 scar-inject --lose-count 1 --reset init in.ckpt out.ckpt
	[[ $output == *"cannot draw initial rows: unknown model '(none)'"* ]]
	run -0 scar-inject --lose-count 1 --reset zero in.ckpt out.ckpt
}

@test "scar-inject: every long option is in --help, the man page and all three completions" {
	src="$SCAR_ROOT/cmd/scar-inject.c"
	opts=$(grep -oE '^[[:space:]]*\{ "[a-zA-Z][a-zA-Z0-9-]*", (no|required|optional)_argument' "$src" |
		sed -E 's/.*"([a-zA-Z0-9-]+)".*/\1/' | sort -u)
	[ "$(printf '%s\n' "$opts" | wc -l)" -ge 19 ]
	help=$(scar-inject --help)
	man=$(MANWIDTH=200 mandoc -Tascii "$SCAR_ROOT/man/scar-inject.1" | col -b)
	for o in $opts; do
		[[ $help == *"--$o"* ]] || { echo "--$o missing from --help"; false; }
		[[ $man == *"--$o"* ]] || { echo "--$o missing from the man page"; false; }
		grep -q -- "--$o\b" "$SCAR_ROOT/completions/bash/scar-inject" || { echo "--$o missing from bash"; false; }
		grep -q -- "--$o\b" "$SCAR_ROOT/completions/zsh/_scar-inject" || { echo "--$o missing from zsh"; false; }
		grep -qE -- "-l $o( |\$)" "$SCAR_ROOT/completions/fish/scar-inject.fish" || { echo "--$o missing from fish"; false; }
	done
}

@test "scar-inject: a partial checkpoint stays partial; --reset from= needs every lost row" {
	need_jq
	mkdir d
	scar-train -q --model mlr --iters 4 --policy round-robin --interval 2 --fraction 1/2 \
		--checkpoint-dir d >/dev/null
	part=d/ckpt-0000000004.ckpt
	scar-inject --noise-l2 0.5 --report r.json "$part" out.ckpt
	[ "$(scar-ckpt info out.ckpt | awk '/^kind:/ { print $2 }')" = partial ]
	close "$(jq .delta_norm r.json)" 0.5
	close "$(scar-diff --json "$part" out.ckpt | jq .l2)" 0.5
	present=$(scar-ckpt info "$part" | awk '$1 == "weights" { split($5, p, "/"); print p[1] }')
	[ "$(jq .rows_touched r.json)" = "$present" ]
	# restoring the full checkpoint's rows from a partial one cannot work
	run -2 scar-inject --lose-count 8 --reset from="$part" d/ckpt-0000000000.ckpt out2.ckpt
	[[ $output == *"is not in the source"* ]]
	[ ! -e out2.ckpt ]
}
