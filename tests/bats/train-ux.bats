#!/usr/bin/env bats
# train-ux.bats - what scar-train tells a person: --list-keys and the key
# tables behind it (held to the man page and to what a run records), "did
# you mean" for keys and tensor names, the progress line at a terminal,
# hints for a file that is no checkpoint or a path left out, and -n 0.

bats_require_minimum_version 1.5.0
load helper

MODELS="mlr ridge mf lda"

need_script() { command -v script > /dev/null || skip "script(1) is not installed"; }

# Run "$1" under script(1), stdin from /dev/null: its stdout and stderr are
# a terminal unless redirected; the terminal's bytes go to stdout.
tty_run() { script -qec "$1" /dev/null < /dev/null; }

# ---- --list-keys

@test "--list-keys: a table per model, the same keys as --json, in the parser's order" {
	local m
	for m in $MODELS; do
		run -0 scar-train --list-keys "$m"
		[[ ${lines[0]} == "KEY "*" TYPE "*" DEFAULT "*" VALUES "*" MEANING" ]]
		[ "$(printf '%s\n' "${lines[@]:1}" | awk '{ print $1 }')" = \
		  "$(scar-train --list-keys "$m" --json | jq -r '.keys[].name')" ]
		scar-train --json --list-keys "$m" | jq -e --arg m "$m" \
			'.model == $m and (.keys | length) > 5 and
			 all(.keys[]; (.type | IN("integer", "real", "string")) and (.description | length) > 0)'
	done
	run -0 scar-train --list-keys mf
	[[ $output == *$'\nsolver '*' string '*' als '*' als|sgd '*'alternating least squares'* ]]
	[[ $output == *$'\ndata_seed '*' integer '*' seed '* ]]
	[[ $output == *$'\ndata '*' string '*' none '* ]]
	run -0 scar-train --list-models --json
	[ "$(jq -r '.models[].name' <<<"$output")" = "$(scar-train --list-models | awk '{ print $1 }')" ]
}

@test "--list-keys: the defaults listed are the configuration a run records" {
	local m
	for m in $MODELS; do
		scar-train -q -m "$m" -n 0 --no-timing | head -n 1 | jq -c '.config' > got
		scar-train --list-keys "$m" --json | jq -c '
			(.keys | map(select(.default != null) | {(.name): .default}) | add) as $d
			| $d + (.keys | map(select(.default_key) | {(.name): $d[.default_key]}) | add)' > want
		# the recorded configuration, key for key (jq -S: the order aside)
		[ "$(jq -S . got)" = "$(jq -S . want)" ] || { echo "$m"; diff <(jq -S . want) <(jq -S . got); return 1; }
	done
}

@test "--list-keys: every range and choice listed is the one --set enforces" {
	local m k
	for m in $MODELS; do
		scar-train --list-keys "$m" --json > keys.json
		# one past each end of a range is refused; each end itself is in range
		for k in $(jq -r '.keys[] | select(.type != "string" and .max < 1e15) | .name' keys.json); do
			max=$(jq -r --arg k "$k" '.keys[] | select(.name == $k) | .max' keys.json)
			min=$(jq -r --arg k "$k" '.keys[] | select(.name == $k) | .min' keys.json)
			run -2 scar-train -q -m "$m" -n 0 --set "$k=$(jq -n "$max * 2 + 1")"
			[[ $output == *"configuration key '$k' = "*" is out of range"* ]] || { echo "$m $k: $output"; return 1; }
			run -2 scar-train -q -m "$m" -n 0 --set "$k=$(jq -n "$min - 1")"
			[[ $output == *"configuration key '$k' = "*" is out of range"* ]] || { echo "$m $k: $output"; return 1; }
		done
		for k in $(jq -r '.keys[] | select(.choices) | .name' keys.json); do
			for v in $(jq -r --arg k "$k" '.keys[] | select(.name == $k) | .choices[]' keys.json); do
				run -0 scar-train -q -m "$m" -n 0 --no-timing --set "$k=$v"
			done
			run -2 scar-train -q -m "$m" -n 0 --set "$k=nosuch"
			[[ $output == *"configuration key '$k': unknown value 'nosuch'"* ]]
		done
		# with real data, a synthetic key is refused; --list-keys says which
		for k in $(jq -r '.keys[] | select(.synthetic) | .name' keys.json); do
			run -2 scar-train -q -m "$m" -n 0 --data /nonexistent --set "$k=1"
			[[ $output == *"key '$k' is for synthetic data"* ]] || { echo "$m $k: $output"; return 1; }
		done
	done
}

@test "scar-train(1) lists every model's keys as --list-keys does: name, type, default" {
	local m page=$SCAR_ROOT/man/scar-train.1
	for m in $MODELS; do
		scar-train --list-keys "$m" | awk 'NR > 1 { print $1, $2 ", " $3 }' > want
		awk -v m="$m" '
			$0 == ".Ss Keys of " m { on = 1; next }
			on && /^\.El/ { exit }
			on && /^\.It Cm / { sub(/^\.It Cm /, ""); sub(/ Pq /, " "); print }' "$page" > got
		[ -s got ] || { echo "no '.Ss Keys of $m' in scar-train.1"; return 1; }
		diff want got || { echo "scar-train.1's keys of $m differ from --list-keys (< list, > page)"; return 1; }
	done
}

@test "--list-keys, --json: mistakes are usage errors" {
	run -2 scar-train --list-keys nosuch
	[ "${lines[0]}" = "scar-train: unknown model 'nosuch' (see --list-models)" ]
	run -2 scar-train --list-keys
	run -2 scar-train -m ridge -n 1 --json
	[ "${lines[0]}" = "scar-train: option '--json' goes with --list-models or --list-keys" ]
	run -2 scar-train --list-keys ridge extra
}

# ---- did you mean

@test "an unknown key names the nearest, or lists the keys; from --set, --config and a checkpoint" {
	run -2 scar-train -q -m mlr -n 1 --set lr_decy=0.1
	[ "${lines[0]}" = "scar-train: mlr: unknown configuration key 'lr_decy'; did you mean 'lr_decay'?" ]
	run -2 scar-train -q -m ridge -n 1 --set lr=0.1
	[ "${lines[0]}" = "scar-train: ridge: unknown configuration key 'lr' (its keys: seed, data_seed, data, n, d, noise, lambda, eta, init_scale)" ]
	echo '{"Topics": 5}' > c.json
	run -2 scar-train -q -m lda -n 1 --config c.json
	[ "${lines[0]}" = "scar-train: lda: unknown configuration key 'Topics'; did you mean 'topics'?" ]
}

@test "scar-ckpt export --tensor: a near name is suggested, and the tensors listed" {
	scar-train -q -m mf -n 1 --save mf.ckpt > /dev/null
	run -2 scar-ckpt export --tensor item_factor mf.ckpt
	[ "${lines[0]}" = "scar-ckpt: no tensor 'item_factor' in 'mf.ckpt'; did you mean 'item_factors'?" ]
	[[ ${lines[1]} == *"item_factors"* ]]
	run -2 scar-ckpt export --tensor zzz mf.ckpt
	[ "${lines[0]}" = "scar-ckpt: no tensor 'zzz' in 'mf.ckpt'" ]
}

# ---- the progress line

@test "progress: at a terminal, iteration, objective, rate; the last line stays" {
	need_script
	run -0 tty_run "scar-train -m ridge -n 5 > ev.jsonl"
	[[ $output == *"scar-train: iteration 0/5, ridge_objective "* ]]
	[[ $output == *$'\r'"scar-train: iteration 5/5, ridge_objective "*" it/s, done in "* ]]
	[ "$(jq -r 'select(.type == "summary") | .iters' ev.jsonl)" = 5 ]
	# the events are untouched by it
	scar-train -q -m ridge -n 5 --no-timing > a.jsonl
	tty_run "scar-train -m ridge -n 5 --no-timing > b.jsonl" > /dev/null
	cmp a.jsonl b.jsonl
}

@test "progress: never beside events on the same terminal, with -q, or to a file" {
	need_script
	run -0 tty_run "scar-train -m ridge -n 3"
	[[ $output != *"iteration 3/3"* ]]
	[[ $output == *'{"type":"summary"'* ]]
	run -0 tty_run "scar-train -m ridge -n 3 --events ev.jsonl"
	[[ $output == *"iteration 3/3"* ]]
	run -0 tty_run "scar-train -q -m ridge -n 3 > /dev/null"
	[ -z "$output" ]
	run -0 tty_run "scar-train -m ridge -n 3 > /dev/null 2> err"
	[ ! -s err ]
	run -0 scar-train -m ridge -n 3 --events /dev/null
	[ -z "$output" ]
}

@test "progress: with --cost, the reference run is named, then the run goes past --iters to the target" {
	need_script
	run -0 tty_run "scar-train -m ridge -n 20 --policy priority --fail-at 10 --recovery none --cost > ev.jsonl"
	[[ $output == *"reference run 0/20"*"reference run 20/20"*"iteration 0/20"* ]]
	k=$(jq -r 'select(.type == "summary") | .iters' ev.jsonl)
	[ "$k" -gt 20 ]
	[[ $output == *"iteration $k, ridge_objective "*", done in "* ]]
}

@test "progress: taken off the screen before a message; never wider than the terminal" {
	need_script
	# a diverging run: the message begins its own line, after the line is wiped
	run -3 tty_run "scar-train -m ridge -n 60 --set eta=5 > /dev/null"
	[[ $output == *$'\r'"     "*$'\r'"scar-train: training diverged at iteration "* ]]
	run -0 tty_run "stty cols 40; scar-train -m mlr -n 4 --cost > /dev/null"
	[ "$(printf '%s' "$output" | tr '\r' '\n' | awk 'length > 39' | wc -l)" -eq 0 ]
}

# ---- what to do about a mistake

@test "--resume of an array file or an event stream says what it is and what to do" {
	scar-train -q -m ridge -n 2 --save r.ckpt > ev.jsonl
	scar-ckpt export --tensor w -o w.npy r.ckpt
	run -2 scar-train --resume w.npy
	[ "${lines[0]}" = "scar-train: 'w.npy': offset 0: not a scar checkpoint (bad magic)" ]
	[ "${lines[1]}" = "scar-train: 'w.npy' is a NumPy .npy array, not a checkpoint; 'scar-ckpt import --model M --name TENSOR -o w.ckpt w.npy' makes one, which --resume takes when it holds all of model M's tensors" ]
	# and what it says works: ridge's state is its one tensor w
	scar-ckpt import --model ridge --name w -o w.ckpt w.npy
	run -0 --separate-stderr scar-train -q --resume w.ckpt -n 4
	scar-ckpt export --format safetensors -o r.safetensors r.ckpt
	run -2 scar-train --resume r.safetensors
	[[ ${lines[1]} == "scar-train: 'r.safetensors' is a safetensors file, not a checkpoint; 'scar-ckpt import -o r.ckpt r.safetensors' makes one"* ]]
	run -2 scar-train --resume ev.jsonl
	[ "${lines[1]}" = "scar-train: 'ev.jsonl' is a scar-events stream, not a checkpoint; scar-train's --save and --checkpoint-dir write checkpoints" ]
	for c in info verify export; do
		run scar-ckpt "$c" w.npy
		[ "$status" -eq "$([ "$c" = verify ] && echo 1 || echo 2)" ]
		[ "${lines[1]}" = "scar-ckpt: 'w.npy' is a NumPy .npy array; 'scar-ckpt import -o w.ckpt w.npy' makes a checkpoint of it" ] ||
			{ echo "$c: $output"; return 1; }
	done
	# a damaged checkpoint gets no such hint
	printf 'garbage!' > g.ckpt
	run -2 scar-train --resume g.ckpt
	[ "${#lines[@]}" -eq 1 ]
}

@test "a path left out of an option is named, not taken for a file" {
	scar-train -q -m ridge -n 2 --save r.ckpt > /dev/null
	run -2 bash -c 'cat r.ckpt | scar-train --resume -n 4'
	[ "${lines[0]}" = "scar-train: option '--resume' takes a path ('-' for standard input), not '-n', which looks like an option; for a file of that name write './-n'" ]
	run -2 scar-train -m ridge --save -q
	[[ ${lines[0]} == "scar-train: option '--save' takes a path ('-' for standard output), not '-q'"* ]]
	run -2 scar-train -m ridge --events -n 3
	run -2 scar-train -m ridge --checkpoint-dir -q
	[[ ${lines[0]} == "scar-train: option '--checkpoint-dir' takes a path, not '-q'"* ]]
	run -2 scar-train -m ridge --config --cost
	run -2 scar-train -m ridge --reference --cost
	run -2 scar-train -m ridge --data -q
	run -2 scar-ckpt export -o --format json r.ckpt
	[[ ${lines[0]} == "scar-ckpt: option '--output' takes a path ('-' for standard output), not '--format'"* ]]
	run -2 scar-ckpt import -o -q r.ckpt
	# a file of that name is a path
	cp r.ckpt ./-n
	run -0 --separate-stderr scar-train -q --resume -n -n 4
	# and an operand that is a number was meant for -n
	run -2 scar-train -m ridge 40
	[ "${lines[0]}" = "scar-train: unexpected operand '40' (iterations are given as '-n 40')" ]
	run -2 scar-train -m ridge extra
	[ "${lines[0]}" = "scar-train: unexpected operand 'extra'" ]
}

# ---- -n 0

@test "-n 0: the header, the starting state and the summary, nothing trained" {
	run -0 scar-train -q -m mf -n 0 --no-timing --save s.ckpt
	[ "$(jq -r .type <<<"$output" | tr '\n' ' ')" = "header iteration checkpoint summary " ]
	[ "$(jq -r 'select(.type == "header") | .iters' <<<"$output")" = 0 ]
	[ "$(jq -r 'select(.type == "iteration") | .iter' <<<"$output")" = 0 ]
	jq -e 'select(.type == "summary") | .iters == 0 and .state_iter == 0 and .failures == 0' <<<"$output"
	[ "$(scar-ckpt info --json s.ckpt | jq .iteration)" = 0 ]
	# the state saved is the one a run of more iterations starts from
	scar-train -q -m mf -n 3 --no-timing > three.jsonl
	scar-train -q --resume s.ckpt -n 3 --no-timing > resumed.jsonl
	[ "$(jq -c 'select(.type == "summary") | .final_objective' three.jsonl)" = \
	  "$(jq -c 'select(.type == "summary") | .final_objective' resumed.jsonl)" ]
	run -2 scar-train -q -m mf -n 0 --cost
	[ "${lines[0]}" = "scar-train: --cost needs iterations to measure; -n 0 runs none" ]
	run -2 scar-train -q --resume s.ckpt -n 0
	[[ ${lines[0]} == *"leaves nothing to do (with --resume, --iters is the total: give more than 0)" ]]
}

# ---- completions

@test "completions: --set offers the model's keys, then a key's choices; --list-keys the models" {
	local f=$SCAR_ROOT/completions/bash/scar-train out
	bc() {
		(cd "$BATS_TEST_TMPDIR" && bash -c '
			source "$1"; shift
			COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
			COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; COMPREPLY=()
			_scar_train; printf "%s\n" "${COMPREPLY[@]}"' _ "$f" "$@")
	}
	out=$(bc scar-train -m ridge --set "")
	[ "$out" = "$(scar-train --list-keys ridge | awk 'NR > 1 { print $1 "=" }')" ]
	out=$(bc scar-train --model=mf --set so)
	[ "$out" = "solver=" ]
	out=$(bc scar-train -m mf --set solver=)
	[ "$out" = "$(printf 'solver=als\nsolver=sgd')" ]
	out=$(bc scar-train -m lda --set "")
	[[ $out == *"sampler="* ]]
	out=$(bc scar-train --set "")		# mlr by default
	[[ $out == *"lr_decay="* ]]
	out=$(bc scar-train --list-keys "")
	[ "$out" = "$(scar-train --list-models | awk '{ print $1 }')" ]
	# bash splits KEY=VALUE at '=': the line, not the words, says which key
	out=$(cd "$BATS_TEST_TMPDIR" && bash -c 'source "$1"
		COMP_WORDS=(scar-train -m mf --set solver = ""); COMP_CWORD=6
		COMP_LINE="scar-train -m mf --set solver="; COMP_POINT=${#COMP_LINE}
		_scar_train; printf "%s\n" "${COMPREPLY[@]}"' _ "$f")
	[ "$out" = "$(printf 'als\nsgd')" ]
	if command -v fish > /dev/null; then
		out=$(fish -c "source $SCAR_ROOT/completions/fish/scar-train.fish; complete -C 'scar-train -m mf --set solver='")
		[[ $out == *"solver=als"*"solver=sgd"* ]]
		out=$(fish -c "source $SCAR_ROOT/completions/fish/scar-train.fish; complete -C 'scar-train -m ridge --set '" | cut -f 1 | sort)
		[ "$out" = "$(scar-train --list-keys ridge | awk 'NR > 1 { print $1 "=" }' | sort)" ]
		out=$(cd "$BATS_TEST_TMPDIR" && touch from-me.ckpt && fish -c "source $SCAR_ROOT/completions/fish/scar-inject.fish; complete -C 'scar-inject --reset from=from-m'")
		[ "$out" = "from=from-me.ckpt" ]
	fi
}
