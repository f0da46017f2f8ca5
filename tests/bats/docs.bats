#!/usr/bin/env bats
# docs.bats - mistakes the docs made once and must not make again: quotes
# nested in quotes in the man pages, and checkpoint file names the trainer
# never writes.

bats_require_minimum_version 1.5.0
load helper

# mdoc's quoting macros enclose the rest of their line, so a second one on
# the line lands inside the first: ".Pq Ql full No or Ql partial" renders
# as (‘full or ‘partial’’). Prints file:line of each such line.
nested_quotes() {
	grep -nE '^\.(.* )?(Ql|Sq|Dq|Qq) .* (Ql|Sq|Dq|Qq)( |$)' "$@"
}

@test "no man page nests a quoting macro in another on one line" {
	run nested_quotes "$SCAR_ROOT"/man/*.[157]
	echo "$output"
	[ "$status" -eq 1 ]
	[ -z "$output" ]
}

@test "no man page renders a quote opened inside another" {
	local m bad=0
	command -v mandoc >/dev/null || skip "mandoc not installed"
	for m in "$SCAR_ROOT"/man/*.[157]; do
		# ‘a ‘b’’: a second opening single quote before the first closes
		if mandoc -Tutf8 "$m" | col -b | grep -n '‘[^’]*‘'; then
			echo "in ${m##*/}"
			bad=1
		fi
	done
	[ "$bad" -eq 0 ]
}

@test "the nested-quote check finds what it is for" {
	printf '%s\n' '.Pq Ql full No or Ql partial ,' '.Brq Qq dir : ... , Qq ckpt' \
		'.Ql a' '.Po' '.Ql full' 'or' '.Ql partial' '.Pc ,' '.Pq Ql b' > page.1
	run -0 nested_quotes page.1
	[ "${#lines[@]}" -eq 2 ]
	[[ ${lines[0]} == 1:* ]]
	[[ ${lines[1]} == 2:* ]]
}

@test "the docs name checkpoints as the trainer writes them (ckpt-NNNNNNNNNN.ckpt)" {
	local f
	# what the trainer writes
	run -0 scar-train -q -m ridge -n 4 --policy full --interval 4 --checkpoint-dir run
	[ -f run/ckpt-0000000004.ckpt ]
	# and no page or README names a run's checkpoint otherwise
	run grep -nE 'ckpt-[0-9]{1,9}\.ckpt' "$SCAR_ROOT"/man/*.[157] "$SCAR_ROOT"/README.md \
		"$SCAR_ROOT"/RELIABILITY.md "$SCAR_ROOT"/examples/README.md
	echo "$output"
	[ "$status" -eq 1 ]
}
