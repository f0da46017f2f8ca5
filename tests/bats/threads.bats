#!/usr/bin/env bats
# Checkpoints on several threads: verify and info check sections side by
# side and report damage exactly as on one thread; convert writes the
# single-threaded file byte for byte. In TSAN_BATS (make tsan-check).
bats_require_minimum_version 1.5.0
load helper

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
}

# same_verdict FILE: verify and info on 2 and 4 threads say what they say on
# one; prints verify's exit status.
same_verdict() {
	local t c one_out one_err one_st
	for c in info verify; do
		run --separate-stderr scar-ckpt "$c" --threads 1 "$1"
		one_st=$status one_out=$output one_err=$stderr
		for t in 2 4; do
			run --separate-stderr scar-ckpt "$c" --threads "$t" "$1"
			if [ "$status" != "$one_st" ] || [ "$output" != "$one_out" ] ||
			   [ "$stderr" != "$one_err" ]; then
				echo "$c --threads $t '$1': status $status, '$stderr'; one thread: $one_st, '$one_err'" >&2
				return 1
			fi
		done
	done
	echo "$one_st"
}

@test "verify and info --threads: damage anywhere is reported as on one thread, at the same offset" {
	# 3 sections of 3 LZ4 blocks each (4 MiB), a partial tensor's 3 more, a state tensor.
	"$SCAR_ROOT/tools/mkckpt" --bytes 30M --cols 1000 --shards 3 --no-sync c.ckpt
	"$SCAR_ROOT/tools/mkckpt" --bytes 6M --cols 300 --shards 3 --present 100:4000 --tensors 2 \
		--no-sync p.ckpt
	[ "$(same_verdict c.ckpt)" = 0 ]
	[ "$(same_verdict p.ckpt)" = 0 ]
	local f size off n=0 st
	for f in c p; do
		size=$(stat -c %s "$f.ckpt")
		# header, metadata, the first section's header and blocks, later sections, index, trailer
		for off in 3 30 200 $((size / 9)) $((size / 3)) $((size / 3 + 4194304 + 100)) \
			   $((size / 2)) $((size * 5 / 6)) $((size - 200)) $((size - 40)) $((size - 3)); do
			cp "$f.ckpt" x.ckpt
			printf '\x5a' | dd of=x.ckpt bs=1 seek="$off" conv=notrunc status=none
			cmp -s "$f.ckpt" x.ckpt && continue
			st=$(same_verdict x.ckpt)
			[ "$st" = 1 ] || { echo "byte $off of $f.ckpt: status $st" >&2; return 1; }
			n=$((n + 1))
		done
		# damage in sections 2 and 1 (payloads): the first in file order is named
		cp "$f.ckpt" x.ckpt
		for off in $(scar-ckpt info --json "$f.ckpt" | jq '.sections[2, 1].offset + 5000'); do
			printf '\x5a' | dd of=x.ckpt bs=1 seek="$off" conv=notrunc status=none
		done
		[ "$(same_verdict x.ckpt)" = 1 ]
		run -1 --separate-stderr scar-ckpt verify --threads 2 x.ckpt
		[[ $stderr == *": section 1 (tensor "* ]]
		for off in $((size / 2)) $((size - 20)) 100; do
			head -c "$off" "$f.ckpt" > x.ckpt
			[ "$(same_verdict x.ckpt)" = 1 ]
		done
	done
	[ "$n" -ge 18 ]
	# standard input that is a regular file is checked on threads, and
	# damage found again from its first byte; a pipe is read on one thread
	cp c.ckpt x.ckpt
	printf '\x5a' | dd of=x.ckpt bs=1 seek=$(($(stat -c %s c.ckpt) / 2)) conv=notrunc status=none
	run -1 --separate-stderr scar-ckpt verify --threads 1 - < x.ckpt
	local one=$stderr
	run -1 --separate-stderr scar-ckpt verify --threads 4 - < x.ckpt
	[ "$stderr" = "$one" ] && [[ $one == *"section 1 "* ]]
	run -1 --separate-stderr sh -c 'cat x.ckpt | scar-ckpt verify --threads 4 -'
	[ "$stderr" = "$one" ]
	scar-ckpt verify --threads 4 - < c.ckpt
	cat c.ckpt | scar-ckpt verify --threads 4 -
}

@test "convert --threads: a partial checkpoint of rows that straddle the blocks is the one-thread file" {
	"$SCAR_ROOT/tools/mkckpt" --bytes 20M --cols 999 --shards 3 --present 7:4000 --no-sync p.ckpt
	local t
	for t in 1 2 3 8; do
		scar-ckpt convert --threads "$t" --shards 5 --no-sync p.ckpt "c$t.ckpt"
		scar-ckpt convert --threads "$t" --shards 5 p.ckpt - > "s$t.ckpt"
	done
	for t in 2 3 8; do
		cmp c1.ckpt "c$t.ckpt"
		cmp c1.ckpt "s$t.ckpt"
	done
	cmp c1.ckpt s1.ckpt
	scar-ckpt verify -q --threads 3 c1.ckpt
}

@test "verify and info --threads: 0 or a word is a usage error" {
	"$SCAR_ROOT/tools/mkckpt" --bytes 4K --no-sync c.ckpt
	local c
	for c in verify info; do
		run -2 --separate-stderr scar-ckpt "$c" --threads 0 c.ckpt
		[[ $stderr == "scar-ckpt: "*"--threads"* ]]
		run -2 --separate-stderr scar-ckpt "$c" --threads two c.ckpt
		[[ $stderr == "scar-ckpt: "*"--threads"* ]]
		run -2 --separate-stderr scar-ckpt "$c" --threads 65 c.ckpt
		[[ $stderr == "scar-ckpt: "*"--threads"* ]]
	done
}
