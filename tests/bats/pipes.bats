#!/usr/bin/env bats
# Checkpoints through pipes: stdin/stdout, no seeking, closed readers.
bats_require_minimum_version 1.5.0
load helper

mkckpt() { "$SCAR_ROOT/tools/mkckpt" "$@"; }

# The JSON checks use jq(1).
need_jq() { command -v jq >/dev/null || skip "jq not installed"; }

@test "convert - - | verify - : the round trip through pipes" {
	mkckpt --bytes 64K --cols 32 --shards 8 --no-sync --raw w.raw a.ckpt
	run -0 bash -c 'scar-ckpt convert - - < a.ckpt | scar-ckpt verify -'
	[ "$output" = "-: ok" ] || [[ $output == *": ok" ]]
	run -0 bash -c 'cat a.ckpt | scar-ckpt convert --shards 3 - - | scar-ckpt convert --no-compress - - | scar-ckpt export --tensor w - > b.raw'
	cmp b.raw w.raw
}

@test "a generator writing to stdout feeds info and export" {
	need_jq
	run -0 bash -c '"$SCAR_ROOT/tools/mkckpt" --bytes 4K --cols 16 --shards 2 --iteration 3 - | scar-ckpt info --json -'
	[[ $output == *'"iteration":3'* ]]
	[[ $output == *'"shards":2'* ]]
	run -0 bash -c '"$SCAR_ROOT/tools/mkckpt" --bytes 4K --cols 16 - | scar-ckpt export --tensor w --format json --rows 0:2 | jq -c .rows'
	[ "$output" = "[0,1]" ]
}

@test "import from stdin and export to stdout" {
	need_jq
	mkckpt --bytes 8K --cols 16 --shards 2 --no-sync --raw w.raw a.ckpt
	scar-ckpt export --tensor w -o w.npy a.ckpt
	run -0 bash -c 'scar-ckpt import --name w --shards 4 -o - - < w.npy | scar-ckpt export --tensor w --format raw - > back.raw'
	cmp back.raw w.raw
	run -0 bash -c 'cat w.raw | scar-ckpt import --dtype f32 --shape 128,16 -o - - | scar-ckpt info --json - | jq -c "[.tensors[].name]"'
	[ "$output" = '["x"]' ]
	run -0 bash -c 'cat w.raw | scar-ckpt import --dtype f32 --shape 100,16 -o x.ckpt - ; echo status=$?'
	[[ $output == *"status=2"* ]]
	[ ! -e x.ckpt ]
}

@test "apply and verify read stdin" {
	need_jq
	mkckpt --bytes 2K --cols 8 --iteration 0 --no-sync base.ckpt
	mkckpt --bytes 2K --cols 8 --iteration 4 --seed 7 --present 1:3 --no-sync p.ckpt
	run -0 bash -c 'scar-ckpt apply - p.ckpt < base.ckpt | scar-ckpt info --json - | jq .iteration'
	[ "$output" = 4 ]
	run -2 scar-ckpt apply base.ckpt - < p.ckpt
	[[ $output == *"only BASE"* ]]
}

@test "damage arriving on a pipe is damage" {
	mkckpt --bytes 16K --cols 16 --shards 4 --no-sync a.ckpt
	run -1 bash -c 'head -c 9000 a.ckpt | scar-ckpt verify -'
	run -2 bash -c 'head -c 9000 a.ckpt | scar-ckpt info -'
	run -2 bash -c 'head -c 9000 a.ckpt | scar-ckpt convert - - > /dev/null'
	run -2 bash -c 'head -c 9000 a.ckpt | scar-ckpt export --tensor w - > /dev/null'
}

@test "a reader that goes away ends the writer quietly" {
	need_jq
	mkckpt --bytes 4M --cols 64 --no-sync a.ckpt
	run -0 bash -c 'scar-ckpt export --tensor w --format json a.ckpt 2> err | head -c 10 > /dev/null; cat err'
	[ -z "$output" ]
	run -0 bash -c 'scar-ckpt convert a.ckpt - 2> err | head -c 10 > /dev/null; cat err'
	[ -z "$output" ]
}
