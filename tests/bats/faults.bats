#!/usr/bin/env bats
# I/O faults: tests/fault-shim.so (LD_PRELOAD) makes chosen calls fail.
# Every tool must report "prog: ... 'file' ...: <strerror>", exit 2, and leave
# no damaged or partial file: the old target intact, no temporary file left.
# EINTR and short reads and writes must succeed (the library retries), and a
# closed stdout pipe ends a tool quietly.
bats_require_minimum_version 1.5.0
load helper

SHIM="$SCAR_ROOT/tests/fault-shim.so"

# Hard faults for writers, and the strerror text each must report.
WRITE_FAULTS=(open:EACCES:1 write:ENOSPC:1 write:EIO:1+ write:EDQUOT:1+ fsync:EIO:1 rename:EIO:1 close:EIO:1)
declare -A STRERR=(
	[EACCES]="Permission denied" [ENOSPC]="No space left on device" [EIO]="Input/output error"
	[EDQUOT]="Disk quota exceeded"
)

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
	[ -f "$SHIM" ] || skip "tests/fault-shim.so is not built (make tests/fault-shim.so)"
	scar-train -m ridge --set n=50 --set d=8 -n 3 --no-timing -q --save in.ckpt > /dev/null
	scar-train -m ridge --set n=50 --set d=8 -n 5 --no-timing -q --save in2.ckpt > /dev/null
	"$SCAR_ROOT/tools/mkckpt" --bytes 2K --cols 8 --iteration 0 --no-sync base.ckpt
	"$SCAR_ROOT/tools/mkckpt" --bytes 2K --cols 8 --iteration 4 --seed 7 --present 1:3 --no-sync p.ckpt
	scar-ckpt export --tensor w -o in.npy in.ckpt
}

# faulty RULE FILTER CMD...: run CMD (a binary on PATH) under the shim.
faulty() {
	local rule=$1 filter=$2
	shift 2
	# SCAR_FAULT_TALLY=FILE counts the faulted runs (the README's figure).
	[ -z "${SCAR_FAULT_TALLY:-}" ] || printf '%s %s\n' "$rule" "$(basename "$1")" >> "$SCAR_FAULT_TALLY"
	# Under SANITIZE=address builds ASan must tolerate a library preloaded before it.
	env SCAR_FAULT="$rule" SCAR_FAULT_PATH="$filter" SCAR_FAULT_LOG="$PWD/fault.log" \
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
		LD_PRELOAD="$SHIM" "$@"
}

# writer_faults OUT CMD...: CMD writes OUT; under every hard write fault it must
# fail with exit 2 and the right message, OUT keeps its old contents, and no
# temporary file is left. Then short writes and EINTR must give the same OUT
# as a run without faults.
writer_faults() {
	local out=$1 rule e prog fails=0
	shift
	prog=$(basename "$1")
	for rule in "${WRITE_FAULTS[@]}"; do
		rm -f fault.log
		printf 'OLD CONTENTS\n' > "$out"
		cp "$out" old.copy
		run -2 --separate-stderr faulty "$rule" "$out" "$@"
		e=${rule#*:}
		e=${e%%:*}
		if [ ! -s fault.log ]; then
			echo "$rule: the fault never fired" >&2; fails=1
		fi
		if [[ $stderr != "$prog: "*"'$out'"*": ${STRERR[$e]}"* ]]; then
			echo "$rule: message is '$stderr'" >&2; fails=1
		fi
		if ! cmp -s old.copy "$out"; then
			echo "$rule: '$out' was damaged" >&2; fails=1
		fi
		if compgen -G ".$out.tmp.*" > /dev/null || compgen -G "$out.tmp.*" > /dev/null ||
		   compgen -G "*.tmp*" > /dev/null; then
			echo "$rule: a temporary file was left: $(ls -A)" >&2; fails=1
		fi
	done
	# Retried faults: the result is the same as without faults.
	rm -f "$out"
	"$@" > /dev/null 2>&1
	mv "$out" clean.out
	for rule in 'write:short:*' 'write:EINTR:1,write:EINTR:2,write:EINTR:5'; do
		rm -f fault.log "$out"
		run -0 faulty "$rule" "$out" "$@"
		# (a writer through stdio never sees short writes: fwrite retries inside libc)
		if [ ! -s fault.log ] && [[ $rule == *short* ]] && [ -z "${STDIO_WRITER:-}" ]; then
			echo "$rule: the fault never fired" >&2; fails=1
		fi
		# Outputs that depend on nothing random must be identical.
		if ! cmp -s clean.out "$out"; then
			echo "$rule: '$out' differs from a run without faults" >&2; fails=1
		fi
	done
	return "$fails"
}

@test "scar-ckpt convert under write, fsync, rename and close faults" {
	writer_faults out.ckpt scar-ckpt convert --shards 3 in.ckpt out.ckpt
}

@test "scar-ckpt import under write faults" {
	writer_faults out.ckpt scar-ckpt import --name w -o out.ckpt in.npy
}

@test "scar-ckpt apply under write faults" {
	writer_faults out.ckpt scar-ckpt apply -o out.ckpt base.ckpt p.ckpt
}

@test "scar-ckpt export (.npy) under write faults" {
	STDIO_WRITER=1 writer_faults out.npy scar-ckpt export --tensor w -o out.npy in.ckpt
}

@test "scar-train --save under write faults" {
	writer_faults out.ckpt scar-train -m ridge --set n=50 --set d=8 -n 3 --no-timing -q --save out.ckpt
}

@test "scar-inject under write faults" {
	writer_faults out.ckpt scar-inject --noise-l2 0.1 --report report.json in.ckpt out.ckpt
}

# ckpt_dir_faults [OPTION...]: scar-train checkpointing with OPTION under faults.
ckpt_dir_faults() {
	local rule fails=0
	for rule in write:ENOSPC:4 write:EIO:7+ fsync:EIO:3 rename:EIO:5 open:EACCES:6 close:EIO:2; do
		rm -rf d fault.log
		mkdir d
		run -2 --separate-stderr faulty "$rule" ckpt- scar-train -m mlr -n 20 --policy full \
			--interval 1 --no-timing -q --checkpoint-dir d "$@"
		[ -s fault.log ] || { echo "$rule: never fired" >&2; fails=1; }
		[[ $stderr == "scar-train: "*"'d/ckpt-"*".ckpt'"* ]] || { echo "$rule: message '$stderr'" >&2; fails=1; }
		if compgen -G "d/.*" > /dev/null; then
			echo "$rule: temporary files left: $(ls -A d)" >&2; fails=1
		fi
		if compgen -G "d/ckpt-*.ckpt" > /dev/null && ! scar-ckpt verify -q d/ckpt-*.ckpt; then
			echo "$rule: a damaged checkpoint was left" >&2; fails=1
		fi
		# What is there resumes.
		if compgen -G "d/ckpt-*.ckpt" > /dev/null; then
			run -0 scar-train --resume d -n 20 --policy full --interval 1 --no-timing -q --checkpoint-dir d
		fi
	done
	return "$fails"
}

@test "scar-train --checkpoint-dir: a fault mid-run leaves only complete checkpoints" {
	ckpt_dir_faults
}

@test "scar-train --async: a fault in the writer thread is reported, exit 2, the older checkpoints intact" {
	ckpt_dir_faults --async
	ckpt_dir_faults --async=3
}

# reader_faults INPUT CMD...: CMD reads INPUT; open and read errors exit 2 with
# the file and strerror named; short reads and EINTR give the clean output.
reader_faults() {
	local in=$1 prog rule fails=0 clean clean_status=0
	shift
	prog=$(basename "$1")
	clean=$("$@" 2>/dev/null) || clean_status=$?
	local hard=(open:EACCES:1 read:EIO:1 read:EIO:1+ read:EIO:2+)
	[ -z "${READ_FAULTS:-}" ] || read -ra hard <<< "$READ_FAULTS"
	for rule in "${hard[@]}"; do
		rm -f fault.log
		run -2 --separate-stderr faulty "$rule" "$in" "$@"
		e=${rule#*:}
		e=${e%%:*}
		[ -s fault.log ] || { echo "$rule: never fired" >&2; fails=1; }
		if [[ $stderr != "$prog: "*"'$in'"*"${STRERR[$e]}"* ]]; then
			echo "$rule: message is '$stderr'" >&2; fails=1
		fi
	done
	local retry=('read:short:*' 'read:EINTR:1,read:EINTR:2,read:EINTR:4')
	[ -z "${RETRY_FAULTS:-}" ] || retry=("$RETRY_FAULTS")
	for rule in "${retry[@]}"; do
		rm -f fault.log
		run --separate-stderr faulty "$rule" "$in" "$@"
		[ -s fault.log ] || { echo "$rule: never fired" >&2; fails=1; }
		if [ "$status" != "$clean_status" ] || [ "$output" != "$clean" ]; then
			echo "$rule: status $status, output differs from a run without faults: $stderr" >&2; fails=1
		fi
	done
	return "$fails"
}

@test "scar-ckpt verify, info, export and convert under read faults" {
	reader_faults in.ckpt scar-ckpt verify in.ckpt
	reader_faults in.ckpt scar-ckpt info --json in.ckpt
	reader_faults in.ckpt scar-ckpt export --tensor w --format json in.ckpt
	reader_faults in.ckpt scar-ckpt convert in.ckpt x.ckpt
	reader_faults in.npy scar-ckpt import --name w -o x.ckpt in.npy
}

@test "a read error on a checkpoint's trailer is an I/O error, never a damaged or intact file" {
	# N:CMD: the Nth read of in.ckpt is the reader's peek at its trailer
	# (scar-diff first peeks at the file's head).
	local t c n
	for t in "1:scar-ckpt verify in.ckpt" "1:scar-ckpt info in.ckpt" "1:scar-ckpt convert in.ckpt x.ckpt" \
		 "2:scar-diff in.ckpt in2.ckpt" "1:scar-inject --noise-l2 1 in.ckpt x.ckpt" \
		 "1:scar-train --resume in.ckpt -n 6 -q" "1:scar-ckpt apply -o x.ckpt in.ckpt"; do
		n=${t%%:*}
		c=${t#*:}
		rm -f fault.log x.ckpt
		run -2 --separate-stderr faulty "read:EIO:$n" in.ckpt $c
		[[ $(cat fault.log) == "read:EIO #$n "* ]] || { echo "'$c': fault log '$(cat fault.log)'" >&2; return 1; }
		[ "$stderr" = "${c%% *}: cannot read 'in.ckpt': Input/output error" ] ||
			{ echo "'$c': '$stderr'" >&2; return 1; }
		[ -z "$output" ] && [ ! -e x.ckpt ]
	done
}

@test "scar-ckpt ls: an unreadable checkpoint is an I/O error (exit 2), a damaged one exit 1" {
	mkdir d
	cp in.ckpt in2.ckpt d/
	run -2 --separate-stderr faulty 'read:EIO:*' in2.ckpt scar-ckpt ls d
	[ "$stderr" = "scar-ckpt: cannot read 'd/in2.ckpt': Input/output error" ]
	[ "${#lines[@]}" = 2 ]
	printf 'garbage\n' > d/bad.ckpt
	run -1 --separate-stderr scar-ckpt ls d
	[ "$stderr" = "scar-ckpt: damaged checkpoint 'd/bad.ckpt': not a scar checkpoint (bad magic)" ]
}

# npy_v2: a .npy of format version 2.0 (a 4-byte header length) holding [1.0, 2.0].
npy_v2() {
	local d="{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }"
	while [ $(( (12 + ${#d} + 1) % 64 )) != 0 ]; do d+=" "; done
	d+=$'\n'
	printf '\x93NUMPY\x02\x00'
	printf "\\x$(printf %02x ${#d})\\x00\\x00\\x00"
	printf '%s' "$d"
	printf '\x00\x00\x00\x00\x00\x00\xf0\x3f\x00\x00\x00\x00\x00\x00\x00\x40'
}

@test "scar-ckpt import: a read error inside a .npy header is an I/O error, not a truncated header" {
	npy_v2 > v2.npy
	run -0 scar-ckpt import --name w -o v2.ckpt v2.npy
	# v1: read 1 is the fixed part, 2 the header dict, 3 the data; v2 reads
	# its header length's last 2 bytes in between.
	local f n
	for f in in.npy:2 in.npy:3 v2.npy:2 v2.npy:3 v2.npy:4; do
		n=${f#*:}
		f=${f%:*}
		rm -f fault.log x.ckpt
		run -2 --separate-stderr faulty "read:EIO:$n" "$f" scar-ckpt import --name w -o x.ckpt "$f"
		[[ $(cat fault.log) == "read:EIO #$n "* ]] || { echo "$f read $n: fault log '$(cat fault.log)'" >&2; return 1; }
		[ "$stderr" = "scar-ckpt: cannot read '$f': Input/output error" ] ||
			{ echo "$f read $n: '$stderr'" >&2; return 1; }
		[ ! -e x.ckpt ]
	done
	# A header that does end early still says so.
	head -c 11 v2.npy > cut.npy
	run -2 --separate-stderr scar-ckpt import --name w -o x.ckpt cut.npy
	[ "$stderr" = "scar-ckpt: 'cut.npy': not a valid .npy file: truncated header" ]
}

@test "scar-diff under read faults, checkpoints and .npy" {
	reader_faults in.ckpt scar-diff --json in.ckpt in2.ckpt
	reader_faults in.npy scar-diff --json in.npy in.ckpt
}

@test "scar-inject and scar-train --resume under read faults" {
	reader_faults in.ckpt scar-inject --noise-l2 0.5 --report r.json in.ckpt x.ckpt
	reader_faults in.ckpt scar-train --resume in.ckpt -n 6 --no-timing -q
}

@test "a full disk on stdout is reported once, exit 2, by every tool" {
	run -2 --separate-stderr scar-train -m ridge -n 3 -q --events /dev/full
	[ "$stderr" = "scar-train: cannot write '/dev/full': No space left on device" ]
	rm -f x.ckpt
	run -2 --separate-stderr scar-inject --noise-l2 1 --report /dev/full in.ckpt x.ckpt
	[ "$stderr" = "scar-inject: cannot write report '/dev/full': No space left on device; the checkpoint was not written" ]
	[ ! -e x.ckpt ]
	scar-train -m ridge -n 5 --no-timing -q > ev.jsonl
	local c
	for c in "scar-train -m ridge -n 3 -q" "scar-train -m ridge -n 3 -q --events -" \
		 "scar-train -m ridge -n 3 -q --save -" "scar-train --list-models" "scar-train --help" \
		 "scar-ckpt convert in.ckpt -" "scar-ckpt info in.ckpt" "scar-ckpt info --json in.ckpt" \
		 "scar-ckpt verify in.ckpt" "scar-ckpt ls ." "scar-ckpt apply in.ckpt" \
		 "scar-ckpt export --tensor w --format json in.ckpt" "scar-ckpt export --tensor w in.ckpt" \
		 "scar-ckpt export --tensor w --format npy in.ckpt" \
		 "scar-ckpt export --tensor w --format safetensors in.ckpt" \
		 "scar-ckpt import --name w -o - in.npy" "scar-ckpt help export" "scar-ckpt --version" \
		 "scar-diff in.ckpt in2.ckpt" "scar-diff --text in.ckpt in2.ckpt" \
		 "scar-diff --per row in.ckpt in2.ckpt" "scar-diff --help" \
		 "scar-inject --noise-l2 1 --report r.json in.ckpt" "scar-inject --help" \
		 "scar-bound fit ev.jsonl" "scar-bound evaluate --c 0.9 --D 1 --delta 1@2" \
		 "scar-bound plan --budget 0.1 --c 0.9 --failure-rate 0.01" "scar-bound check ev.jsonl ev.jsonl" \
		 "scar-bound --help"; do
		run -2 --separate-stderr bash -c "$c > /dev/full"
		[ "$stderr" = "${c%% *}: cannot write '(stdout)': No space left on device" ] ||
			{ echo "'$c > /dev/full' said: '$stderr'" >&2; return 1; }
	done
}

@test "a closed stdout pipe ends every tool quietly" {
	"$SCAR_ROOT/tools/mkckpt" --bytes 2M --cols 64 --shards 4 --no-sync big.ckpt
	scar-inject --noise-l2 1 --report r.json big.ckpt big2.ckpt
	scar-ckpt export --tensor w -o big.npy big.ckpt
	local c
	for c in "scar-train -m ridge -n 3000 --no-timing -q" \
		 "scar-ckpt export --tensor w --format json big.ckpt" \
		 "scar-ckpt export --tensor w --format raw big.ckpt" \
		 "scar-diff --per row big.ckpt big2.ckpt" \
		 "scar-ckpt convert big.ckpt -" \
		 "scar-ckpt apply big.ckpt" \
		 "scar-ckpt import --name w -o - big.npy" \
		 "scar-inject --noise-l2 1 --report r.json big.ckpt"; do
		run -0 bash -c "$c 2> err | head -c 10 > /dev/null"
		if [ -s err ]; then
			echo "'$c' said on a closed pipe: $(cat err)" >&2
			return 1
		fi
	done
}

@test "the shim itself: a bad rule is refused, stdio descriptors only when asked" {
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
	run -125 env SCAR_FAULT=write:EWHAT:1 LD_PRELOAD="$SHIM" scar-ckpt verify in.ckpt
	[[ $output == *"bad SCAR_FAULT rule"* ]]
	# stdout is not eligible by default...
	run -0 env SCAR_FAULT='write:EIO:*' LD_PRELOAD="$SHIM" scar-ckpt convert in.ckpt - > /dev/null
	# ...and is with SCAR_FAULT_STDIO=1.
	run -2 --separate-stderr bash -c 'SCAR_FAULT="write:EIO:*" SCAR_FAULT_STDIO=1 LD_PRELOAD="$0" scar-ckpt convert in.ckpt - > x.out' "$SHIM"
	[[ $stderr == "scar-ckpt: "*"Input/output error"* ]]
}

@test "scar-train --resume DIR: an unreadable newest checkpoint stops the run, a damaged one is skipped" {
	scar-train -m ridge --set n=50 --set d=8 -n 4 --policy full --interval 2 --no-timing -q \
		--checkpoint-dir d > /dev/null
	[ -f d/ckpt-0000000004.ckpt ]
	# An I/O error may hide an intact file: falling back to iteration 2
	# would silently redo two iterations.
	run -2 --separate-stderr faulty 'read:EIO:*' ckpt-0000000004 scar-train --resume d -n 6 -q
	[ "$stderr" = "scar-train: cannot read 'd/ckpt-0000000004.ckpt': Input/output error" ]
	[ -z "$output" ]
	# Damage is skipped, with a warning, for the previous good one.
	printf 'x' | dd of=d/ckpt-0000000004.ckpt bs=1 seek=100 conv=notrunc 2>/dev/null
	run -0 --separate-stderr scar-train --resume d -n 6 -q --no-timing
	[[ $stderr == *"skipped 1 damaged checkpoint in 'd'; resuming from 'd/ckpt-0000000002.ckpt'"* ]]
}
