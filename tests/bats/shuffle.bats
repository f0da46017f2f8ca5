#!/usr/bin/env bats
# The byte shuffle before LZ4 (format 1.3, --shuffle; scar-ckpt(5) "Byte
# shuffle"): every dtype round-trips through every writer and reader, the
# independent reader agrees, the bytes do not depend on threads or pipes, a
# shuffled run resumes as an unshuffled one, damage is found, and bad
# options are usage errors. The flag's hostile combinations are in
# hostile-reader.bats, built by a writer that knows only the page.
bats_require_minimum_version 1.5.0
load helper

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
}

indep() { "$SCAR_ROOT/tools/ckpt-reader-indep" "$@"; }
mkckpt() { "$SCAR_ROOT/tools/mkckpt" "$@"; }
# minor FILE: the minor version in the file header
minor() { od -An -tu2 -j10 -N2 "$1" | tr -d ' '; }
# codecs FILE: the codec column of info, one per section
codecs() { scar-ckpt info "$1" | awk '/^section +tensor/ { s = 1; next } s { print $NF }'; }

@test "every dtype round-trips shuffled; 1.3 exactly when a section is shuffled" {
	for d in f32 f64 f16 bf16 i32 u32 i64 u64 u8; do
		# 7 columns, an odd row count, 3 shards: sections of odd lengths
		mkckpt --bytes 300K --cols 7 --shards 3 --dtype $d --no-state --no-sync a.ckpt
		for s in on auto off; do
			scar-ckpt convert --no-sync --shuffle $s a.ckpt b.ckpt
			scar-ckpt verify -q b.ckpt
			cmp <(scar-ckpt export --tensor w a.ckpt) <(scar-ckpt export --tensor w b.ckpt)
			cmp <(indep a.ckpt) <(indep b.ckpt)
			n=$(codecs b.ckpt | grep -c '^shuffle+lz4$' || true)
			if [ $d = u8 ] || [ $s = off ]; then
				[ "$n" -eq 0 ] && [ "$(minor b.ckpt)" = "$(minor a.ckpt)" ]
			else
				[ "$(minor b.ckpt)" = 3 ] && [ "$n" -ge 1 ]
			fi
			[ $s != on ] || [ $d = u8 ] || [ "$n" -eq 3 ]
			[ "$(codecs b.ckpt | wc -l)" -eq 3 ]
		done
		# f16 and bf16 need 1.2: shuffled they say 1.3, which holds both
		case $d in f16|bf16) [ "$(minor a.ckpt)" = 2 ] ;; *) [ "$(minor a.ckpt)" = 0 ] ;; esac
	done
	# info --json says which sections are shuffled; a pipe reads them too
	mkckpt --bytes 300K --cols 7 --shards 3 --dtype i32 --shuffle on --no-sync c.ckpt
	[ "$(scar-ckpt info --json c.ckpt | jq -c '[.minor_version, [.sections[] | .shuffled]]')" = \
		'[3,[true,true,true,true]]' ]
	cat c.ckpt | scar-ckpt info - | grep -qx 'version: *1\.3'
	cat c.ckpt | scar-ckpt convert --shuffle off - d.ckpt
	cmp <(scar-ckpt export --tensor w c.ckpt) <(scar-ckpt export --tensor w d.ckpt)
	[ "$(minor d.ckpt)" = 0 ]
}

@test "the bytes are the same for every --threads and through a pipe" {
	# sections of 4.5 MiB: two LZ4 blocks each, the second a short one
	mkckpt --bytes 9M --cols 1000 --shards 2 --dtype i32 --no-sync a.ckpt
	for s in on auto; do
		scar-ckpt convert --no-sync --threads 1 --shuffle $s a.ckpt t1.ckpt
		scar-ckpt convert --no-sync --threads 2 --shuffle $s a.ckpt t2.ckpt
		scar-ckpt convert --no-sync --threads 3 --shuffle $s a.ckpt t3.ckpt
		scar-ckpt convert --threads 2 --shuffle $s a.ckpt - > p.ckpt
		cmp t1.ckpt t2.ckpt && cmp t1.ckpt t3.ckpt && cmp t1.ckpt p.ckpt
		[ "$(minor t1.ckpt)" = 3 ]
		scar-ckpt export --tensor w --format raw -o w.raw t2.ckpt
		scar-ckpt import --no-sync --threads 1 --shuffle $s --dtype i32 --shape 2359,1000 -o i1.ckpt w.raw
		scar-ckpt import --no-sync --threads 2 --shuffle $s --dtype i32 --shape 2359,1000 -o i2.ckpt w.raw
		cmp i1.ckpt i2.ckpt
	done
	for j in 1 2; do
		scar-train -m lda -n 9 --policy round-robin --interval 4 --shuffle auto --threads $j \
			--checkpoint-dir r$j --no-timing -q --save s$j.ckpt > e$j.jsonl
	done
	diff -r r1 r2 && cmp s1.ckpt s2.ckpt && cmp e1.jsonl e2.jsonl
	[ "$(minor r1/ckpt-0000000000.ckpt)" = 3 ]
}

@test "a shuffled run resumes bit-identically to an unshuffled one" {
	for s in off auto on; do
		scar-train -m lda -n 10 --policy full --interval 4 --checkpoint-dir $s --shuffle $s \
			--no-timing -q > a-$s.jsonl
		scar-train --resume $s -n 16 --policy full --interval 4 --checkpoint-dir $s --shuffle $s \
			--no-timing -q --save f-$s.ckpt > b-$s.jsonl
		# the same state, whatever the bytes: the events less their byte counts
		jq -c 'del(.bytes, .checkpoint_bytes)' a-$s.jsonl b-$s.jsonl > ev-$s.jsonl
		scar-ckpt convert --no-sync --shuffle off f-$s.ckpt g-$s.ckpt
	done
	[ "$(minor auto/ckpt-0000000008.ckpt)" = 3 ] && [ "$(minor off/ckpt-0000000008.ckpt)" = 0 ]
	codecs auto/ckpt-0000000008.ckpt | grep -qx 'shuffle+lz4'
	cmp ev-off.jsonl ev-auto.jsonl && cmp ev-off.jsonl ev-on.jsonl
	cmp g-off.ckpt g-auto.ckpt && cmp g-off.ckpt g-on.ckpt
	# and as the run that never stopped
	scar-train -m lda -n 16 --policy full --interval 4 --no-timing -q --save straight.ckpt > /dev/null
	cmp straight.ckpt g-off.ckpt
	# the shuffled files are smaller: lda's counts and assignments are small integers
	[ "$(stat -c %s auto/ckpt-0000000008.ckpt)" -lt "$(stat -c %s off/ckpt-0000000008.ckpt)" ]
}

@test "save, apply and scar-inject write shuffled checkpoints when asked" {
	scar-train -m mlr -n 6 --no-timing -q --save m.ckpt > /dev/null
	for i in 0 1 2 3 4; do
		scar-ckpt save --no-sync --policy round-robin --interval 4 --shuffle on \
			--iteration $i m.ckpt run > /dev/null
	done
	for f in run/ckpt-*.ckpt run/.scar-view.ckpt; do
		[ "$(minor "$f")" = 3 ] || { echo "$f: $(minor "$f")"; return 1; }
	done
	scar-ckpt apply --no-sync --shuffle auto -o v.ckpt run
	scar-ckpt apply --no-sync -o w.ckpt run
	[ "$(minor v.ckpt)" = 3 ] && [ "$(minor w.ckpt)" = 0 ]
	cmp <(scar-ckpt convert v.ckpt -) <(scar-ckpt convert w.ckpt -)
	scar-inject --lose-count 1 --shuffle on m.ckpt x.ckpt 2> /dev/null
	scar-inject --lose-count 1 m.ckpt y.ckpt 2> /dev/null
	[ "$(minor x.ckpt)" = 3 ] && [ "$(minor y.ckpt)" = 0 ]
	cmp <(scar-ckpt convert x.ckpt -) <(scar-ckpt convert y.ckpt -)
}

@test "damage in a shuffled section is found, and named" {
	scar-train -m lda -n 4 --no-timing -q --shuffle on --save a.ckpt > /dev/null
	off=$(scar-ckpt info --json a.ckpt | jq '.sections[0].offset + 48 + 15 + 4 + 100')
	for bit in 1 16 128; do
		cp a.ckpt b.ckpt
		printf "$(printf '\\%03o' $(( $(od -An -tu1 -j$off -N1 a.ckpt) ^ bit )))" |
			dd of=b.ckpt bs=1 seek=$off conv=notrunc status=none
		run -1 scar-ckpt verify b.ckpt
		[[ $output == *"b.ckpt': offset "*": section 0 (tensor 'word_topic', shard 0): "* ]]
		run -2 scar-ckpt export --tensor word_topic b.ckpt
		run -1 indep b.ckpt
	done
}

@test "bad --shuffle values and combinations are usage errors" {
	for cmd in "scar-train -m ridge -n 1" "scar-ckpt convert a b" "scar-ckpt import -o a b" \
		   "scar-ckpt apply a" "scar-ckpt save --policy full a b" "scar-inject --lose-count 1 a b"; do
		run -2 $cmd --shuffle yes
		[[ $output == *"option '--shuffle': unknown value 'yes' (off, on, auto)"* ]] || {
			echo "$cmd: $output"; return 1; }
	done
	run -2 scar-train -m ridge -n 1 --no-compress --shuffle on
	[[ $output == *"--shuffle on needs compression"* ]]
	run -2 scar-ckpt convert --no-compress --shuffle auto a b
	[[ $output == *"--shuffle auto needs compression"* ]]
	# off goes with anything
	scar-train -m ridge -n 2 -q --no-timing --no-compress --shuffle off --save r.ckpt > /dev/null
	scar-ckpt convert --no-compress --shuffle off r.ckpt s.ckpt
	# a snapshot is written back in its own format: nothing to shuffle
	scar-ckpt export --tensor w --format npy -o w.npy r.ckpt
	run -2 scar-inject --lose-count 1 --shards 2 --shuffle on w.npy o.npy
	[[ $output == *"'w.npy' is a snapshot, written back in its own format: --shuffle is for checkpoints"* ]]
}

@test "distributed rank files are shuffled too, and resume" {
	command -v mpirun > /dev/null || skip "mpirun is not installed"
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
	mpirun --oversubscribe -np 2 scar-train -m lda -n 6 --policy full --interval 4 --shuffle on \
		--checkpoint-dir d --no-timing -q > /dev/null
	for f in d/*.rank-*.ckpt; do
		[ "$(minor "$f")" = 3 ] || { echo "$f: $(minor "$f")"; return 1; }
	done
	scar-ckpt verify -q d/ckpt-0000000004.manifest
	scar-train --resume d -n 8 --no-timing -q --save a.ckpt > /dev/null
	scar-train -m lda -n 8 --policy full --interval 4 --no-timing -q --save b.ckpt > /dev/null
	cmp a.ckpt b.ckpt
}
