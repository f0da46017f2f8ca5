#!/usr/bin/env bats
# The third campaign's findings (issue 16): an applied checkpoint that
# could not be resumed, NaN written by --reset random for large finite
# values, and --data lines without end.
bats_require_minimum_version 1.5.0
load helper

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
}

@test "campc: a checkpoint built by scar-ckpt apply resumes" {
	scar-train -q --no-timing --no-sync -m ridge --set n=50 --set d=8 -n 9 --policy round-robin \
		--interval 4 --checkpoint-dir cd > /dev/null
	run -0 scar-ckpt apply -o a1.ckpt cd
	run -0 --separate-stderr scar-train -q --no-timing -n 12 --resume a1.ckpt
}

@test "campc: --reset random on values near 1e200 writes finite values of their scale" {
	command -v python3 >/dev/null || skip "python3 not installed"
	python3 -c "import struct;open('g.raw','wb').write(struct.pack('<4d',1e200,2e200,3e200,4e200))"
	scar-ckpt import --no-sync -o g.ckpt --dtype f64 --shape 4,1 --shards 2 g.raw
	run -0 --separate-stderr scar-inject --lose-shards 0 --reset random g.ckpt r.ckpt
	[[ $stderr == *'"delta_norm":'[0-9]* ]]
	run -0 scar-ckpt export --format json r.ckpt
	[[ $output != *null* ]]
	[[ $output == *e+200* ]]
}

@test "campc: a --data file without newlines is refused at the line limit" {
	[ -z "$SCAR_SANITIZE" ] || skip "sanitizer build: ulimit -v"
	run -2 --separate-stderr bash -c 'ulimit -v 1000000; exec timeout 60 scar-train -q --no-timing -m mf -n 1 --data /dev/zero'
	[[ $stderr == *"/dev/zero:1: line 1 longer than 67108864 bytes"* ]]
}

@test "campc: scar-inject refuses two checkpoint operands on standard input" {
	scar-train -q --no-timing --no-sync -m ridge --set n=50 --set d=8 -n 2 --save a.ckpt > /dev/null
	run -2 --separate-stderr scar-inject --stale - --mix 0.5 - out.ckpt < a.ckpt
	[[ $stderr == "scar-inject: --stale and the input cannot both be standard input"* ]]
	run -2 --separate-stderr scar-inject --lose-count 1 --reset from=- - out.ckpt < a.ckpt
	[[ $stderr == "scar-inject: --reset from= and the input cannot both be standard input"* ]]
	[ ! -e out.ckpt ]
}

@test "campc: export of rows a partial checkpoint does not hold is an error, not an empty array" {
	scar-train -q --no-timing --no-sync -m ridge --set n=50 --set d=8 -n 9 --policy round-robin \
		--interval 4 --checkpoint-dir cd > /dev/null
	p=$(ls cd/*.ckpt | tail -1)
	run -0 --separate-stderr scar-ckpt info --json "$p"
	[[ $output == *'"kind":"partial"'* ]]
	run -2 --separate-stderr scar-ckpt export --rows 0:1 --format json "$p"
	[[ $stderr == *"is present in '$p' (a partial checkpoint holding"* ]]
}

@test "campc: scar-diff measures 64-bit integers beyond 2^53 exactly" {
	command -v python3 >/dev/null || skip "python3 not installed"
	mkdir p q
	python3 -c "import struct;open('p/x.raw','wb').write(struct.pack('<QQ',2**60,7));open('q/x.raw','wb').write(struct.pack('<QQ',2**60+1,7))"
	scar-ckpt import --no-sync -o p.ckpt --dtype u64 --shape 2 p/x.raw
	scar-ckpt import --no-sync -o q.ckpt --dtype u64 --shape 2 q/x.raw
	run -1 scar-diff --json p.ckpt q.ckpt
	[[ $output == *'"l1":1.0,"l2":1.0,"linf":1.0'* ]]
	python3 -c "import struct;open('p/x.raw','wb').write(struct.pack('<qq',-2**62,7));open('q/x.raw','wb').write(struct.pack('<qq',2**62,7))"
	scar-ckpt import --no-sync -o p.ckpt --dtype i64 --shape 2 p/x.raw
	scar-ckpt import --no-sync -o q.ckpt --dtype i64 --shape 2 q/x.raw
	run -1 scar-diff --json p.ckpt q.ckpt
	[[ $output == *'"l1":9.2233720368547758e18,'* ]]
}
