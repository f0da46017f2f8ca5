#!/usr/bin/env bats
# Hostile run directories (issue 16, items 2, 7 and 9): manifests carry a
# checksum and every single-bit flip is refused; --resume DIR falls back
# past damaged or incomplete checkpoints, saying which and why; FIFOs and
# symbolic links in a run directory or named by a manifest are refused,
# never waited on or followed out of the directory; one writer per
# checkpoint directory (a lock naming its holder's pid), and the cleanup of
# stale temporaries never touches a live writer's. Commands that used to hang
# run under `timeout`, so a regression fails instead of hanging.
bats_require_minimum_version 1.5.0
load helper

MPI=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	mpirun --allow-run-as-root --oversubscribe -np 2 scar-train)
mpi() {
	"${MPI[@]}" "$@"
}

# resign FILE: recompute the checksum member of a manifest that was edited
# on purpose, so that only the reader's other checks stand between it and use.
build_resign() {
	cat > resign.c <<'EOF'
#include <stdio.h>
#include <string.h>
#include "scar/ckpt.h"
int main(int argc, char **argv)
{
	static char buf[1 << 20];
	const char *tail = ",\"checksum\":\"";
	FILE *f;
	size_t n;
	char *p;

	if (argc != 2 || !(f = fopen(argv[1], "rb")))
		return 2;
	n = fread(buf, 1, sizeof(buf) - 64, f);
	fclose(f);
	buf[n] = '\0';
	if (!(p = strstr(buf, tail)))
		return 2;
	n = (size_t)(p - buf);
	sprintf(p, "%s%08lx\"}\n", tail, (unsigned long)scar_crc32c(0, buf, n));
	if (!(f = fopen(argv[1], "wb")) || fputs(buf, f) < 0 || fclose(f))
		return 2;
	return 0;
}
EOF
	"${CC:-cc}" -I"$SCAR_ROOT/include" -o resign resign.c "$SCAR_ROOT/lib/libscar.a" \
		-ljansson -llz4 -lz -lm $SCAR_SANFLAGS
}

setup_file() {
	cd "$BATS_FILE_TMPDIR" || return 1
	if ! command -v mpirun >/dev/null 2>&1; then
		export SCAR_MPI_SKIP="mpirun not found"
	elif ! mpi --model ridge --iters 1 --no-timing -q > probe.jsonl 2> probe.err ||
	     ! grep -q '"ranks":2' probe.jsonl; then
		export SCAR_MPI_SKIP="scar-train is not the MPI variant"
	else
		mkdir run
		mpi -q -m ridge -n 6 --policy full --interval 3 --no-timing --checkpoint-dir run > /dev/null
	fi
	build_resign
}

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
}

need_mpi() {
	[ -z "${SCAR_MPI_SKIP:-}" ] || skip "$SCAR_MPI_SKIP"
	cp -r "$BATS_FILE_TMPDIR/run" d
}

resign() {
	"$BATS_FILE_TMPDIR/resign" "$1"
}

# ---- item 2: the manifest's checksum ----

@test "manifest: every single-bit flip is refused by verify and ls" {
	need_mpi
	local m=d/ckpt-0000000006.manifest bits
	grep -q ',"checksum":"[0-9a-f]\{8\}"}$' "$m"
	mkdir flips
	cp d/ckpt-0000000006.rank-*.ckpt flips/
	cat > flipper.c <<'EOF'
#include <stdio.h>
int main(int argc, char **argv)
{
	static unsigned char buf[1 << 16];
	char name[4096];
	FILE *f;
	size_t n;

	if (argc != 3 || !(f = fopen(argv[1], "rb")))
		return 2;
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	for (size_t bit = 0; bit < 8 * n; bit++) {
		snprintf(name, sizeof(name), "%s/b%06zu.manifest", argv[2], bit);
		buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
		if (!(f = fopen(name, "wb")) || fwrite(buf, 1, n, f) != n || fclose(f))
			return 2;
		buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
	}
	return 0;
}
EOF
	"${CC:-cc}" -O2 -o flipper flipper.c
	./flipper "$m" flips
	bits=$(( $(stat -c %s "$m") * 8 ))
	[ "$(ls flips/*.manifest | wc -l)" -eq "$bits" ]
	run -1 --separate-stderr scar-ckpt verify flips/*.manifest
	[ -z "$output" ]	# none reported intact
	[ "$(printf '%s\n' "$stderr" | grep -c "^scar-ckpt: ")" -eq "$bits" ]
	# ls lists each as damaged, none as a checkpoint.
	run -1 --separate-stderr scar-ckpt ls flips
	[ "$(printf '%s\n' "$output" | grep -c ' damaged ')" -eq "$bits" ]
	echo "# $bits bits flipped, $bits refused" >&3
}

@test "manifest: \"clock\":6 changed to 7 is refused, and --resume falls back" {
	need_mpi
	sed -i 's/"clock":6/"clock":7/' d/ckpt-0000000006.manifest
	grep -q '"clock":7' d/ckpt-0000000006.manifest
	run -1 --separate-stderr scar-ckpt verify d/ckpt-0000000006.manifest
	[[ $stderr == *"checksum mismatch"* ]]
	run -0 --separate-stderr timeout 60 scar-train --resume d -n 12 --no-timing -q
	[[ $stderr == *"skipping checkpoint 'd/ckpt-0000000006.manifest'"*"checksum mismatch"* ]]
	[[ $stderr == *"resuming from 'd/ckpt-0000000003.manifest'"* ]]
	# It ran to 12, where the damaged manifest stopped it at 11.
	[ "$(grep -c '"type":"iteration"' <<< "$output")" -ge 9 ]
	grep -q '"iter":12' <<< "$output"
}

@test "resume: a damaged newest checkpoint falls back, bit-identical to resuming the older one" {
	need_mpi
	cp -r d direct
	# Flip one bit of the newest manifest, and make the middle one incomplete.
	printf '\x01' | dd of=d/ckpt-0000000006.manifest bs=1 seek=40 conv=notrunc status=none
	run -0 --separate-stderr scar-train --resume d -n 10 --no-timing -q \
		--checkpoint-dir d --save fallback.ckpt
	[[ $stderr == *"skipping checkpoint 'd/ckpt-0000000006.manifest'"* ]]
	[[ $stderr == *"skipped 1 damaged checkpoint in 'd'; resuming from 'd/ckpt-0000000003.manifest'"* ]]
	printf '%s\n' "$output" | grep '"type":"iteration"' > fallback.iter
	run -0 scar-train --resume direct/ckpt-0000000003.manifest -n 10 --no-timing -q \
		--checkpoint-dir direct --save direct.ckpt
	printf '%s\n' "$output" | grep '"type":"iteration"' > direct.iter
	cmp fallback.ckpt direct.ckpt
	cmp fallback.iter direct.iter
	[ -s direct.iter ]
}

@test "resume: an incomplete or inconsistent manifest is skipped with its reason" {
	need_mpi
	# Newest: a rank file is missing. Next: checksum-valid but not of its rank files.
	rm d/ckpt-0000000006.rank-1.ckpt
	sed -i 's/"iteration":3,"clock":3,/"iteration":4,"clock":4,/' d/ckpt-0000000003.manifest
	mv d/ckpt-0000000003.manifest d/ckpt-0000000004.manifest
	resign d/ckpt-0000000004.manifest
	# Sizes and CRCs match, the rank files' iteration does not: verify says so as a resume does.
	run -1 scar-ckpt verify d/ckpt-0000000004.manifest
	[[ $output == *"not part of the manifest's checkpoint"* ]]
	run -0 --separate-stderr scar-train --resume d -n 8 --no-timing -q
	[[ $stderr == *"skipping checkpoint 'd/ckpt-0000000006.manifest'"*"rank-1.ckpt"* ]]
	[[ $stderr == *"skipping checkpoint 'd/ckpt-0000000004.manifest'"*"not part of the manifest's checkpoint"* ]]
	[[ $stderr == *"resuming from 'd/ckpt-0000000000.manifest'"* ]]
}

@test "resume: nothing usable is exit 2 after a warning for each" {
	need_mpi
	for m in d/*.manifest; do
		printf 'x' | dd of="$m" bs=1 seek=2 conv=notrunc status=none
	done
	run -2 --separate-stderr scar-train --resume d -n 8 --no-timing -q
	[ "$(grep -c "skipping checkpoint" <<< "$stderr")" -eq 3 ]
	[[ $stderr == *"no complete full checkpoint in directory 'd'"* ]]
}

@test "manifest: version 1 (no checksum) is refused with a message saying so" {
	need_mpi
	sed 's/"version":2/"version":1/; s/,"checksum":"[0-9a-f]*"}$/}/' d/ckpt-0000000006.manifest \
		> d/ckpt-0000000007.manifest
	run -1 --separate-stderr scar-ckpt verify d/ckpt-0000000007.manifest
	[[ $stderr == *"manifest version 1 has no checksum"* ]]
	run -0 --separate-stderr scar-train --resume d -n 8 --no-timing -q
	[[ $stderr == *"skipping checkpoint 'd/ckpt-0000000007.manifest'"*"version 1"* ]]
	[[ $stderr == *"resuming from 'd/ckpt-0000000006.manifest'"* ]]
}

@test "manifest: rank file names cannot leave the directory" {
	need_mpi
	local m=d/ckpt-0000000006.manifest name
	mkdir out
	cp d/ckpt-0000000006.rank-1.ckpt out/
	for name in '..' '../out/ckpt-0000000006.rank-1.ckpt' '.ckpt-0000000006.rank-1.ckpt' \
		    'sub/x.ckpt'; do
		cp "$BATS_FILE_TMPDIR/run/ckpt-0000000006.manifest" "$m"
		sed -i "s|\"ckpt-0000000006.rank-1.ckpt\"|\"$name\"|" "$m"
		resign "$m"
		grep -qF "\"$name\"" "$m"
		run -1 --separate-stderr timeout 20 scar-ckpt verify "$m"
		[[ $stderr == *"bad name"* ]] || { echo "name '$name': $stderr" >&2; return 1; }
	done
}

# ---- item 7 and symbolic links: FIFOs and links in a run directory ----

@test "a FIFO named *.manifest: ls and --resume refuse it without hanging" {
	need_mpi
	mkfifo d/ckpt-0000000009.manifest
	run -1 --separate-stderr timeout 20 scar-ckpt ls d
	[[ $output == *"damaged"*"ckpt-0000000009.manifest"* ]]
	[[ $stderr == *"FIFO"* ]]
	run -0 --separate-stderr timeout 20 scar-train --resume d -n 8 --no-timing -q
	[[ $stderr == *"skipping checkpoint 'd/ckpt-0000000009.manifest'"*"FIFO"* ]]
	[[ $stderr == *"resuming from 'd/ckpt-0000000006.manifest'"* ]]
	run timeout 20 scar-ckpt apply d -o applied.ckpt
	[ "$status" -ne 124 ]
}

@test "a manifest naming a FIFO rank file: verify, info, convert and --resume refuse it" {
	need_mpi
	rm d/ckpt-0000000006.rank-1.ckpt
	mkfifo d/ckpt-0000000006.rank-1.ckpt
	run -1 --separate-stderr timeout 20 scar-ckpt verify d/ckpt-0000000006.manifest
	[[ $stderr == *"rank-1.ckpt"*"FIFO"* ]]
	run -2 --separate-stderr timeout 20 scar-ckpt info d/ckpt-0000000006.manifest
	[[ $stderr == *"FIFO"* ]]
	run -2 --separate-stderr timeout 20 scar-ckpt convert d/ckpt-0000000006.manifest one.ckpt
	[[ $stderr == *"FIFO"* ]]
	run -1 --separate-stderr timeout 20 scar-ckpt ls d
	run -0 --separate-stderr timeout 20 scar-train --resume d -n 8 --no-timing -q
	[[ $stderr == *"resuming from 'd/ckpt-0000000003.manifest'"* ]]
}

@test "symbolic links: a rank file or a listed manifest is never followed out of the directory" {
	need_mpi
	mkdir elsewhere
	# A rank file that is a link to an identical file outside: refused all the same.
	mv d/ckpt-0000000006.rank-1.ckpt elsewhere/
	ln -s "$PWD/elsewhere/ckpt-0000000006.rank-1.ckpt" d/ckpt-0000000006.rank-1.ckpt
	run -1 --separate-stderr timeout 20 scar-ckpt verify d/ckpt-0000000006.manifest
	[[ $stderr == *"symbolic link"* ]]
	run -2 --separate-stderr timeout 20 scar-ckpt info d/ckpt-0000000006.manifest
	[[ $stderr == *"symbolic link"* ]]
	# A manifest in the directory that is a link to one outside it.
	cp -r "$BATS_FILE_TMPDIR/run" other
	sed 's/"iteration":6/"iteration":9/; s/"clock":6/"clock":9/' other/ckpt-0000000006.manifest \
		> elsewhere/ckpt-0000000009.manifest
	resign elsewhere/ckpt-0000000009.manifest
	ln -s "$PWD/elsewhere/ckpt-0000000009.manifest" d/ckpt-0000000009.manifest
	run -1 --separate-stderr timeout 20 scar-ckpt ls d
	[[ $stderr == *"ckpt-0000000009.manifest"*"symbolic link"* ]]
	run -0 --separate-stderr timeout 20 scar-train --resume d -n 8 --no-timing -q
	[[ $stderr == *"skipping checkpoint 'd/ckpt-0000000009.manifest'"*"symbolic link"* ]]
	[[ $stderr == *"resuming from 'd/ckpt-0000000003.manifest'"* ]]
}

@test "a FIFO named *.ckpt in a run directory: --resume passes over it without hanging" {
	scar-train -q -m mlr -n 6 --policy full --interval 3 --no-timing --checkpoint-dir d > /dev/null
	mkfifo d/ckpt-0000000009.ckpt
	run -0 --separate-stderr timeout 20 scar-train --resume d -n 8 --no-timing -q
	[[ $stderr == *"skipping checkpoint 'd/ckpt-0000000009.ckpt'"*"FIFO"* ]]
	[[ $stderr == *"resuming from 'd/ckpt-0000000006.ckpt'"* ]]
	run -1 timeout 20 scar-ckpt ls d
}

# ---- item 9: one writer per checkpoint directory ----

# Start a long run on d in the background, stopped once it holds the lock.
start_holder() {
	scar-train -q -m mlr -n 400 --policy full --interval 1 --no-timing --checkpoint-dir d \
		> holder.jsonl 2> holder.err &
	HOLDER=$!
	local i
	for i in $(seq 200); do
		[ -s d/.scar.lock ] && break
		sleep 0.05
	done
	kill -STOP "$HOLDER"
	[ -s d/.scar.lock ]
}

@test "a second writer on a checkpoint directory refuses, naming the holder's pid" {
	mkdir d
	start_holder
	run -2 --separate-stderr timeout 20 scar-train -q -m mlr -n 5 --policy full --interval 1 \
		--no-timing --checkpoint-dir d
	kill -CONT "$HOLDER"
	[[ $stderr == "scar-train: "*"'d' is in use by another run (pid $HOLDER"* ]]
	# Readers need no lock.
	run -0 timeout 20 scar-ckpt ls d
	wait "$HOLDER"
	[ ! -e d/.scar.lock ]
	run -0 scar-ckpt verify -q d/*.ckpt
}

@test "a refused writer leaves the live writer's temporaries alone" {
	mkdir d
	start_holder
	# As if the holder were writing a checkpoint right now (an old mtime, as a slow write has).
	printf 'half a checkpoint' > d/.ckpt-0000009999.ckpt.tmp.AbCdEf
	touch -d '-1 minute' d/.ckpt-0000009999.ckpt.tmp.AbCdEf
	run -2 timeout 20 scar-train -q -m mlr -n 5 --policy full --interval 1 --no-timing \
		--checkpoint-dir d
	[ -e d/.ckpt-0000009999.ckpt.tmp.AbCdEf ]
	kill -CONT "$HOLDER"
	wait "$HOLDER"
	# Once the writer is gone, the next run removes what it left.
	run -0 scar-train -q -m mlr -n 2 --no-timing --checkpoint-dir d
	[ ! -e d/.ckpt-0000009999.ckpt.tmp.AbCdEf ]
}

@test "concurrent trainers on one directory: each finishes or refuses, none dies mid-run" {
	mkdir d
	local i pids=() st ok=0 refused=0
	for i in 1 2 3 4 5 6; do
		scar-train -q -m mlr -n 60 --policy full --interval 1 --no-timing --checkpoint-dir d \
			> "run$i.jsonl" 2> "run$i.err" &
		pids+=($!)
	done
	for i in 1 2 3 4 5 6; do
		st=0
		wait "${pids[$((i - 1))]}" || st=$?
		if [ "$st" -eq 0 ]; then
			ok=$((ok + 1))
		elif [ "$st" -eq 2 ] && grep -q "is in use by another run (pid [0-9]*" "run$i.err"; then
			refused=$((refused + 1))
		else
			echo "run $i: exit $st: $(cat "run$i.err")" >&2
			return 1
		fi
	done
	echo "# $ok finished, $refused refused" >&3
	[ "$ok" -ge 1 ]
	! grep -l "cannot rename" run*.err
	run -0 scar-ckpt verify -q d/*.ckpt
}

@test "a distributed run takes the directory's lock on rank 0" {
	[ -z "${SCAR_MPI_SKIP:-}" ] || skip "$SCAR_MPI_SKIP"
	mkdir d
	start_holder
	run -2 --separate-stderr timeout 60 "${MPI[@]}" -q -m ridge -n 3 --policy full --interval 1 \
		--no-timing --checkpoint-dir d
	kill -CONT "$HOLDER"
	[[ $stderr == *"'d' is in use by another run (pid $HOLDER"* ]]
	wait "$HOLDER"
}
