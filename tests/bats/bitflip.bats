#!/usr/bin/env bats
# Integrity: every single-bit flip anywhere in a checkpoint is detected, and
# `scar-ckpt verify` names the damaged part (file header, metadata, section N,
# index or trailer). Every bit of each small checkpoint is flipped, one file
# per bit, and a single scar-ckpt invocation verifies them all.
bats_require_minimum_version 1.5.0
load helper

# flipper SRC DIR: write DIR/bNNNNNN.ckpt = SRC with bit NNNNNN flipped, for every bit.
build_flipper() {
	cat > flipper.c <<'EOF'
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
	static unsigned char buf[1 << 20];
	char name[4096];
	FILE *f;
	size_t n;

	if (argc != 3 || !(f = fopen(argv[1], "rb")))
		return 2;
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	for (size_t bit = 0; bit < 8 * n; bit++) {
		snprintf(name, sizeof(name), "%s/b%06zu.ckpt", argv[2], bit);
		buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
		if (!(f = fopen(name, "wb")) || fwrite(buf, 1, n, f) != n || fclose(f))
			return 2;
		buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
	}
	return 0;
}
EOF
	"${CC:-cc}" -O2 -o flipper flipper.c
}

# flip_all CKPT: every bit flipped must fail verify with exit 1 and a message
# naming the damaged part; nothing may verify as intact.
flip_all() {
	local src=$1 bits
	mkdir flips
	./flipper "$src" flips
	bits=$(( $(stat -c %s "$src") * 8 ))
	[ "$(ls flips | wc -l)" -eq "$bits" ]
	run -1 --separate-stderr scar-ckpt verify flips/*.ckpt
	# No flipped file may be reported intact.
	[ -z "$output" ]
	# One message per file, each naming the damaged part.
	local named unnamed
	named=$(printf '%s\n' "$stderr" | grep -cE "^scar-ckpt: 'flips/b[0-9]+\.ckpt': .*(magic|file header|metadata|section [0-9]+|index|trailer)")
	unnamed=$(printf '%s\n' "$stderr" | grep -vE "(magic|file header|metadata|section [0-9]+|index|trailer)" | head -5)
	[ -z "$unnamed" ] || { echo "messages that name no section:" >&2; echo "$unnamed" >&2; return 1; }
	[ "$named" -eq "$bits" ] || { echo "$named messages for $bits flipped bits" >&2; return 1; }
	# Each file is named exactly once.
	[ "$(printf '%s\n' "$stderr" | sed -n "s/^scar-ckpt: '\([^']*\)'.*/\1/p" | sort -u | wc -l)" -eq "$bits" ]
	echo "# $bits bits flipped in $(basename "$src"), $bits detected" >&3
	rm -rf flips
}

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
	build_flipper
}

@test "every bit of a small LZ4 ridge checkpoint (header, metadata, 2 sections, index, trailer)" {
	scar-train -m ridge --set n=20 --set d=4 -n 2 --shards 2 --no-timing -q --save r.ckpt > /dev/null
	scar-ckpt verify -q r.ckpt
	flip_all r.ckpt
}

@test "every bit of an uncompressed (raw + CRC-32C) checkpoint" {
	scar-train -m ridge --set n=20 --set d=6 -n 2 --shards 3 --no-timing -q --save r.ckpt > /dev/null
	scar-ckpt convert --no-compress --no-sync r.ckpt raw.ckpt
	scar-ckpt verify -q raw.ckpt
	flip_all raw.ckpt
}

@test "every bit of a partial checkpoint with a state tensor" {
	"$SCAR_ROOT/tools/mkckpt" --bytes 512 --cols 4 --shards 2 --present 3:9 --iteration 5 --no-sync p.ckpt
	scar-ckpt verify -q p.ckpt
	flip_all p.ckpt
}

@test "every bit of an f16 and bf16 checkpoint (format 1.2: F32, F16, BF16, I64, 2 shards)" {
	/usr/bin/python3 -c 'import numpy' 2>/dev/null || skip "Debian's python3-numpy is not installed"
	/usr/bin/python3 "$SCAR_ROOT/tests/mksafetensors.py" h.safetensors 4
	scar-ckpt import --no-sync --shards 2 -o h.ckpt h.safetensors
	[ "$(od -An -tu2 -j10 -N2 h.ckpt | tr -d ' ')" = 2 ]
	scar-ckpt verify -q h.ckpt
	flip_all h.ckpt
}

@test "other byte values (00, 55, aa, ff) at offsets in every part are detected" {
	scar-train -m ridge --set n=20 --set d=4 -n 2 --shards 1 --no-timing -q --save s.ckpt > /dev/null
	# Not only single bits: whole-byte overwrites in header, metadata, sections, index, trailer.
	local size off v
	size=$(stat -c %s s.ckpt)
	mkdir bytes
	for off in 0 9 13 20 100 $((size / 2)) $((size - 40)) $((size - 20)) $((size - 1)); do
		for v in 00 55 aa ff; do
			cp s.ckpt "bytes/o${off}v$v.ckpt"
			printf "\\x$v" | dd of="bytes/o${off}v$v.ckpt" bs=1 seek="$off" conv=notrunc status=none
			cmp -s s.ckpt "bytes/o${off}v$v.ckpt" && rm "bytes/o${off}v$v.ckpt"
		done
	done
	run -1 --separate-stderr scar-ckpt verify bytes/*.ckpt
	[ -z "$output" ]
	[ "$(printf '%s\n' "$stderr" | wc -l)" -eq "$(ls bytes | wc -l)" ]
}
