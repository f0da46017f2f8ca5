#!/usr/bin/env bats
# One grammar, one parser (issue 17): every option that takes a row range, a
# shard, a shard list, a fraction or a probability goes through the parser of
# cmd/common/options.c, so the same value is taken or refused alike by every
# tool, with the same message but for the program's and the option's names.
bats_require_minimum_version 1.5.0
load helper

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
	# 8 shards (the default); its tensor w has 8 rows
	scar-train -m ridge --set n=50 --set d=8 -n 3 --no-timing -q --save a.ckpt > /dev/null
}

@test "drift: scar-train --lose-shards takes a range A-B, as scar-inject does" {
	run -0 --separate-stderr scar-train -q --no-timing -m ridge --set n=50 --set d=8 -n 6 \
		--fail-at 3 --lose-shards 1-2,5
	[[ $output == *'"type":"recovery","iter":3,"strategy":"partial","shards":[1,2,5]'* ]]
	run -0 --separate-stderr scar-inject --lose-shards 1-2,5 --report rep.json a.ckpt x.ckpt
	[ "$(jq -c .shards_lost rep.json)" = "[1,2,5]" ]
}

@test "drift: --rows 3:3 is an empty range, refused alike by scar-ckpt export and scar-inject" {
	run -2 --separate-stderr scar-ckpt export --tensor w --rows 3:3 --format json a.ckpt
	[ "${stderr_lines[0]}" = "scar-ckpt: option '--rows': '3:3' is an empty range" ]
	[ -z "$output" ]
	run -2 --separate-stderr scar-inject --noise-l2 1 --rows 3:3 a.ckpt x.ckpt
	[ "${stderr_lines[0]}" = "scar-inject: option '--rows': '3:3' is an empty range" ]
	[ ! -e x.ckpt ]
}

# verdict TEMPLATE VALUE: run TEMPLATE with its word V replaced by VALUE; set
# VERDICT to "refused: MSG" when the first line of stderr is a usage error
# about the option (MSG with the program's and the option's names taken
# out), else to "taken" (the run may go on to fail on its input: a missing
# file keeps the test to the parsing).
verdict() {
	local x st=0 first
	local -a args=()
	read -ra words <<< "$1"
	for x in "${words[@]}"; do
		if [ "$x" = V ]; then args+=("$2"); else args+=("$x"); fi
	done
	rm -f x.ckpt
	timeout 60 "${args[@]}" > out.txt 2> err.txt < /dev/null || st=$?
	first=$(head -1 err.txt)
	first=${first#"${args[0]}: "}
	if [[ $first == "option '--"* ]]; then
		[ "$st" = 2 ] || { echo "'$1' with '$2': refused with exit $st" >&2; return 1; }
		[ "$(sed -n 2p err.txt)" = "try '${args[0]} --help'" ] ||
			{ echo "'$1' with '$2': no 'try' line" >&2; return 1; }
		VERDICT="refused: $(sed -E "s/^option '--[a-z-]+'/option/" <<< "$first")"
	else
		VERDICT=taken
	fi
}

# agree VALUES -- TEMPLATES: each value gets the same verdict from every template.
agree() {
	local -a values=() templates=()
	local v t want fails=0
	while [ "$1" != -- ]; do values+=("$1"); shift; done
	shift
	templates=("$@")
	for v in "${values[@]}"; do
		verdict "${templates[0]}" "$v" || return 1
		want=$VERDICT
		for t in "${templates[@]:1}"; do
			verdict "$t" "$v" || return 1
			if [ "$VERDICT" != "$want" ]; then
				echo "'$v': '${templates[0]}' $want; '$t' $VERDICT" >&2
				fails=$((fails + 1))
			fi
		done
	done
	[ "$fails" = 0 ]
}

@test "row ranges: scar-ckpt export --rows and scar-inject --rows agree on every value" {
	agree "3:9" "0:1" "3:" ":9" ":" "00:07" "3:3" "9:3" ":0" "18446744073709551615:" \
	      "" "3" "a:9" "3:b" "-1:4" "3:-1" "1:2:3" " 1:2" "3:99999999999999999999999" -- \
		"scar-ckpt export --tensor w --rows V missing.ckpt" \
		"scar-inject --noise-l2 1 --rows V missing.ckpt x.ckpt"
	# on a real tensor (w has 8 rows): both select rows 3 to 6
	run -0 scar-ckpt export --tensor w --rows 3:7 --format json a.ckpt
	[ "$(jq -c .rows <<< "$output")" = "[3,4,5,6]" ]
	run -0 --separate-stderr scar-inject --noise-l2 1 --rows 3:7 --report rep.json a.ckpt x.ckpt
	[ "$(jq .rows_touched rep.json)" = 4 ]
}

@test "one shard: scar-ckpt export --shard and scar-inject --shard agree on every value" {
	agree "0" "7" "65535" "65536" "4294967296" "" "-1" "1-2" "1,2" "x" "1.0" -- \
		"scar-ckpt export --tensor w --shard V missing.ckpt" \
		"scar-inject --noise-l2 1 --shard V missing.ckpt x.ckpt"
}

@test "shard lists: scar-train --lose-shards and scar-inject --lose-shards agree on every value" {
	# the grammar, before any input is read
	agree "0" "0,3,5-7" "5-7" "7-7" "1,1" "0-3,2-5" "65535" "65536" "" "," "1,,2" "1," ",1" \
	      "1-" "-1" "3-1" "1--2" "1-2-3" "x" "1,5x" "99999999999999999999999" -- \
		"scar-inject --lose-shards V missing.ckpt x.ckpt" \
		"scar-train -q --resume missing.ckpt -n 20 --lose-shards V"
	# against the 8 shards of a checkpoint
	agree "0-7" "7" "8" "0-8" "3,9-12" -- \
		"scar-inject --lose-shards V a.ckpt x.ckpt" \
		"scar-train -q --no-timing --resume a.ckpt -n 6 --fail-at 4 --lose-shards V"
	verdict "scar-train -q --resume a.ckpt -n 6 --fail-at 4 --lose-shards V" "3,9-12"
	[ "$VERDICT" = "refused: option: shard 12 does not exist (there are 8 shards, 0..7)" ]
}

@test "fractions: every option of the grammar agrees on every value" {
	agree "1/4" "0.25" "1" "3/3" "1e-1" ".5" "0" "1.5" "2/1" "4" "0/4" "-1" "-1/4" "1/" "/4" \
	      "1/0" "1/x" "x" "" "nan" "inf" "1/2/3" " 0.5" -- \
		"scar-train -q --resume missing.ckpt --fraction V" \
		"scar-train -q --resume missing.ckpt --lose-fraction V" \
		"scar-inject --lose-fraction V missing.ckpt x.ckpt" \
		"scar-bound plan --c 0.9 --failure-rate 0.01 --budget V" \
		"scar-bound plan --c 0.9 --failure-rate 0.01 --budget 0.1 --lost-fraction V"
}

@test "probabilities: --fail-prob, --bitflip-rate and --failure-rate agree on every value" {
	agree "0" "0.5" "1" "1e-3" "" "-0.1" "1.1" "1/2" "nan" "inf" "x" "0x1" -- \
		"scar-train -q --resume missing.ckpt --fail-prob V" \
		"scar-inject --bitflip-rate V missing.ckpt x.ckpt" \
		"scar-bound plan --c 0.9 --budget 0.1 --failure-rate V"
}
