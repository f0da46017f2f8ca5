#!/usr/bin/env bats
# Drift between copies of the same I/O (issue 17): scar-ckpt import reads
# .npy through the reader scar-diff uses, and every writer replaces a file
# through one function, which writes into a FIFO or device in place and
# keeps the mode of a regular file it replaces.
bats_require_minimum_version 1.5.0
load helper

need_jq() { command -v jq >/dev/null || skip "jq not installed"; }

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
}

# npy NAME DESCR SHAPE STRUCTFMT VALUES...: a .npy 1.0 file, in python3.
npy() {
	python3 - "$@" <<'PY'
import struct, sys
name, descr, shape, fmt = sys.argv[1:5]
vals = [float(v) if 'e' in fmt or 'f' in fmt else int(v) for v in sys.argv[5:]]
d = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
d += ' ' * ((64 - (10 + len(d) + 1) % 64) % 64) + '\n'
open(name, 'wb').write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(d)) + d.encode() +
                       struct.pack(fmt, *vals))
PY
}

@test "every .npy dtype scar-diff reads, f16 too (kept native), imports to the values scar-diff reads" {
	command -v python3 >/dev/null || skip "python3 not installed"
	need_jq
	mkdir h f
	npy h/w.npy '<f2' '(2, 3)' '<6e' 1.5 -2.25 3 0.0009765625 65504 -0.5
	npy f/w.npy '<f4' '(2, 3)' '<6f' 1.5 -2.25 3 0.0009765625 65504 -0.5
	run -0 scar-diff h/w.npy f/w.npy
	run -0 scar-ckpt import -o h.ckpt h/w.npy
	run -0 scar-diff h.ckpt f/w.npy
	# f16 stays f16 (format 1.2), and export writes the file's bytes back
	[ "$(scar-ckpt export --format json h.ckpt | jq -c '[.dtype, .data]')" = \
	  '["f16",[[1.5,-2.25,3],[0.0009765625,65504,-0.5]]]' ]
	scar-ckpt export -o back.npy h.ckpt
	cmp h/w.npy back.npy
	# big-endian, and --dtype converts after widening
	npy h/b.npy '>f2' '(6,)' '>6e' 1.5 -2.25 3 0.0009765625 65504 -0.5
	run -0 scar-ckpt import --dtype f64 -o b.ckpt h/b.npy
	[ "$(scar-ckpt export --format json b.ckpt | jq -c '[.dtype, .data[1], .data[4]]')" = '["f64",[-2.25],[65504]]' ]
	# the small integer types and bool widen as scar-diff widens them
	local t
	for t in "i1 <6b i32" "i2 <6h i32" "u2 <6H u32" "b1 <6B u8"; do
		set -- $t
		mkdir -p "$1"
		npy "$1/w.npy" "<$1" '(3, 2)' "$2" 1 0 1 1 0 1
		run -0 scar-ckpt import -o "$1.ckpt" "$1/w.npy"
		run -0 scar-diff "$1.ckpt" "$1/w.npy"
		[ "$(scar-ckpt info --json "$1.ckpt" | jq -r '.tensors[0].dtype')" = "$3" ]
	done
	# a stream of f16 is read to the bytes its header declares, and no further
	run -0 bash -c 'scar-ckpt import -o s.ckpt - < h/w.npy'
	run -0 scar-diff s.ckpt f/w.npy
	run -2 bash -c 'cat h/w.npy h/w.npy | scar-ckpt import -o s2.ckpt -'
	[[ $output == *"more input than the 12 bytes its .npy header declares"* ]]
}

# writer TARGET: scar_npy_write of a 2x3 f32 tensor [0..5] to TARGET.
writer() {
	cat > npyw.c <<'C'
#include <stdio.h>
#include "scar/arrayfile.h"
int main(int argc, char **argv)
{
	const uint64_t shape[2] = { 2, 3 };
	struct scar_tensor *t;
	struct scar_error e;

	scar_error_clear(&e);
	if (argc != 2 || scar_tensor_new(&t, "w", SCAR_F32, SCAR_ROLE_PARAM, 2, shape, &e) < 0)
		return 2;
	for (int i = 0; i < 6; i++)
		((float *)t->data)[i] = (float)i;
	if (scar_npy_write(argv[1], t, 0, &e) < 0) {
		fprintf(stderr, "npyw: %s\n", e.msg);
		return 2;
	}
	scar_tensor_free(t);
	return 0;
}
C
	${CC:-cc} -std=c11 -O2 $SCAR_SANFLAGS -I"$SCAR_ROOT/include" -o npyw npyw.c \
		"$SCAR_ROOT/lib/libscar.a" -ljansson -llz4 -lz -lm $SCAR_SANFLAGS
}

@test "scar_npy_write and scar-ckpt export write into a FIFO and keep a regular target's mode" {
	writer
	./npyw ref.npy
	printf '\0\0\0\0\0\0\x80\x3f\0\0\0\x40\0\0\x40\x40\0\0\x80\x40\0\0\xa0\x40' > w.raw
	scar-ckpt import --dtype f32 --shape 2,3 --name w -o w.ckpt w.raw
	scar-ckpt export -o exp.npy w.ckpt
	cmp ref.npy exp.npy
	# a FIFO target stays a FIFO and its reader gets the file
	local prog
	for prog in "./npyw p" "scar-ckpt export --format npy -o p w.ckpt"; do
		rm -f p got
		mkfifo p
		timeout 20 cat p > got &
		run -0 timeout 20 $prog
		[ -p p ] || { echo "'$prog' replaced the FIFO: $(ls -l p)" >&2; kill $! 2>/dev/null; return 1; }
		wait $!
		cmp got ref.npy
		[ -z "$(ls -A | grep '\.tmp\.')" ]
	done
	# an existing regular file keeps its mode
	for prog in "./npyw m.npy" "scar-ckpt export --format npy -o m.npy w.ckpt"; do
		rm -f m.npy
		: > m.npy
		chmod 0604 m.npy
		run -0 $prog
		[ "$(stat -c %a m.npy)" = 604 ]
		cmp m.npy ref.npy
	done
}
