#!/usr/bin/env bats
# Names that are not text (issue 16, siblings of items 5 and 10): a path
# that is not UTF-8 keeps its place in JSON output (stray bytes as U+FFFD,
# as jq does) instead of vanishing or failing as "out of memory", and a
# message keeps its file:line prefix whatever the file is called.
bats_require_minimum_version 1.5.0
load helper

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
	BAD=$(printf 'a\377b.ckpt')
}

@test "hostile-names: JSON output keeps a path that is not UTF-8" {
	scar-train -m ridge --set n=50 --set d=8 -n 2 --no-timing -q --save "$BAD" > /dev/null
	run -0 --separate-stderr scar-diff --json "$BAD" "$BAD"
	[[ $output == *'"path":"a'$'\xef\xbf\xbd''b.ckpt"'* ]]
	run -0 --separate-stderr scar-ckpt info --json "$BAD"
	[[ $output == *'"file":"a'$'\xef\xbf\xbd''b.ckpt"'* ]]
	run -0 --separate-stderr scar-ckpt ls --json .
	[[ $output == *'b.ckpt"'* ]]
	# and the human output quotes the stray byte
	run -0 --separate-stderr scar-ckpt verify "$BAD"
	[[ $output == *'a\xffb.ckpt'* ]]
}

@test "hostile-names: a message keeps its line number when the file name occurs in it" {
	# "d" occurs in "record": the old check for the name dropped the prefix
	printf 'not json\n' > d
	run -2 --separate-stderr scar-bound fit d
	[[ $stderr == "scar-bound: d:1: not a JSON record"* ]]
}

@test "hostile-names: scar-ckpt ls quotes names from the directory" {
	mkdir run
	scar-train -m ridge --set n=50 --set d=8 -n 2 --no-timing -q --interval 1 \
		--checkpoint-dir run > /dev/null
	cp run/ckpt-*.ckpt "run/$(printf 'x\033[2Jy.ckpt')"
	run -0 --separate-stderr scar-ckpt ls run
	[[ $output == *'x\e[2Jy.ckpt'* ]]
	[[ $output != *$'\033'* ]]
}

@test "hostile-names: scar-ckpt info on a manifest quotes its names" {
	command -v mpirun >/dev/null || skip "mpirun not found"
	mkdir mrun
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 \
		mpirun --oversubscribe -np 2 scar-train -m ridge --set n=50 --set d=8 -n 2 \
		--no-timing -q --interval 1 --checkpoint-dir "mrun" > /dev/null ||
		skip "scar-train is not the MPI variant"
	m=$(ls mrun/*.manifest | tail -1)
	[ -n "$m" ] || skip "no manifest written (not the MPI variant)"
	mv mrun "$(printf 'r\033]0;t\007')"
	run -0 --separate-stderr scar-ckpt info "$(printf 'r\033]0;t\007')/${m#mrun/}"
	[[ $output == *'ranks:'* ]]
	[[ $output == *'r\e]0;t\x07/'* ]]
	[[ $output != *$'\033'* ]]
}
