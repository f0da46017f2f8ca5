#!/usr/bin/env bats
# scar-ckpt: every command, text and JSON, damaged input, usage errors.
bats_require_minimum_version 1.5.0
load helper

mkckpt() { "$SCAR_ROOT/tools/mkckpt" "$@"; }

# The JSON checks use jq(1).
need_jq() { command -v jq >/dev/null || skip "jq not installed"; }

# json FILE FILTER: FILTER applied to FILE's JSON, compact.
json() { jq -c "$2" "$1"; }

# flip_byte FILE OFFSET: invert every bit of one byte in place.
flip_byte() {
	local b
	b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	printf "$(printf '\\%03o' $((b ^ 255)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

# A small f32 checkpoint: 64 rows x 8 in 4 shards, plus a u64 state tensor.
small() {
	mkckpt --bytes 2048 --cols 8 --shards 4 --iteration 7 --model mlr --no-sync \
		--raw "${2:-w.raw}" "${1:-a.ckpt}"
}

@test "--help and help COMMAND print usage to stdout and exit 0" {
	run -0 scar-ckpt --help
	[[ $output == *"usage: scar-ckpt COMMAND"* ]]
	main=$output
	for c in apply convert export import info ls verify; do
		[[ $main == *"  $c "* ]]
		run -0 scar-ckpt "$c" --help
		[[ $output == "usage: scar-ckpt $c "* ]]
		run -0 scar-ckpt help "$c"
		[[ $output == "usage: scar-ckpt $c "* ]]
	done
	run -0 scar-ckpt help
	[[ $output == *"commands:"* ]]
}

@test "--version prints the version" {
	run -0 scar-ckpt --version
	[[ $output == "scar-ckpt "[0-9]* ]]
}

@test "usage errors exit 2 and point to --help" {
	run -2 scar-ckpt
	[[ $output == *"usage:"* ]]
	run -2 scar-ckpt frobnicate
	[[ $output == *"unknown command 'frobnicate'"* ]]
	[[ $output == *"try 'scar-ckpt --help'"* ]]
	run -2 scar-ckpt info --bogus a.ckpt
	[[ $output == *"unknown option '--bogus'"* ]]
	[[ $output == *"try 'scar-ckpt --help'"* ]]
	run -2 scar-ckpt verify -x
	[[ $output == *"unknown option '-x'"* ]]
	run -2 scar-ckpt info --json=yes
	[[ $output == *"takes no value"* ]]
	run -2 scar-ckpt export --tensor
	[[ $output == *"needs a value"* ]]
	run -2 scar-ckpt ls
	[[ $output == *"missing operand"* ]]
	[[ $output == *"try 'scar-ckpt --help'"* ]]
	run -2 scar-ckpt convert a.ckpt
	[[ $output == *"missing operand"* ]]
	run -2 scar-ckpt import -o x.ckpt
	[[ $output == *"missing operand"* ]]
	run -2 scar-ckpt import w.raw
	[[ $output == *"-o OUT"* ]]
	run -2 scar-ckpt apply
	[[ $output == *"missing operand"* ]]
	run -2 scar-ckpt export --format tar a.ckpt
	run -2 scar-ckpt export --rows 5:2 a.ckpt
	run -2 scar-ckpt convert --level 99 a.ckpt b.ckpt
	run -2 scar-ckpt convert --no-compress --level 3 a.ckpt b.ckpt
	run -2 scar-ckpt convert --dtype i32 a.ckpt b.ckpt
	run -2 scar-ckpt help nosuch
}

@test "info prints metadata, tensors and sections" {
	small
	run -0 scar-ckpt info a.ckpt
	[[ $output == *"model:      mlr"* ]]
	[[ $output == *"iteration:  7"* ]]
	[[ $output == *"kind:       full"* ]]
	[[ $output == *"shards:     4"* ]]
	[[ $output == *"64/64"* ]]
	[[ $output == *"rng "* ]]
	[[ $output == *"section"*"ratio"* ]]
	# 4 sections of w, 1 of rng
	[ "$(printf '%s\n' "$output" | grep -cE '^ +[0-9]+  (w|rng) ')" -eq 5 ]
}

@test "info --json is one object with the tensor table and section sizes" {
	need_jq
	small
	scar-ckpt info --json a.ckpt > i.json
	[ "$(wc -l < i.json)" -eq 1 ]
	[ "$(json i.json .iteration)" = 7 ]
	[ "$(json i.json .shards)" = 4 ]
	[ "$(json i.json .kind)" = '"full"' ]
	[ "$(json i.json .model)" = '"mlr"' ]
	[ "$(json i.json '[.tensors[].name]')" = '["w","rng"]' ]
	[ "$(json i.json '.tensors[0].shape')" = '[64,8]' ]
	[ "$(json i.json '.sections|length')" = 5 ]
	[ "$(json i.json '[.sections[]|select(.tensor=="w")|.rows]')" = '[16,16,16,16]' ]
	[ "$(json i.json '.tensors[0].raw_bytes')" = 2048 ]
	[ "$(json i.json '.file_bytes')" = "$(wc -c < a.ckpt)" ]
	[ "$(json i.json '.config.generator')" = '"mkckpt"' ]
}

@test "info reads stdin for '-' and for no operand" {
	small
	run -0 scar-ckpt info --json - < a.ckpt
	[[ $output == *'"iteration":7'* ]]
	run -0 scar-ckpt info --json < a.ckpt
	[[ $output == *'"iteration":7'* ]]
}

@test "verify: intact, quiet, several operands with the worst status" {
	small
	cp a.ckpt b.ckpt
	run -0 scar-ckpt verify a.ckpt b.ckpt
	[ "${lines[0]}" = "a.ckpt: ok" ]
	[ "${lines[1]}" = "b.ckpt: ok" ]
	run -0 scar-ckpt verify -q a.ckpt
	[ -z "$output" ]
	head -c 1000 a.ckpt > t.ckpt
	run -1 scar-ckpt verify a.ckpt t.ckpt b.ckpt
	[[ $output == *"a.ckpt: ok"* ]]
	[[ $output == *"scar-ckpt: "*"t.ckpt"* ]]
	[[ $output == *"b.ckpt: ok"* ]]
	run -2 scar-ckpt verify t.ckpt nosuch.ckpt a.ckpt
	[[ $output == *"cannot open 'nosuch.ckpt'"* ]]
	[[ $output == *"a.ckpt: ok"* ]]
	run -2 scar-ckpt verify nosuch.ckpt
	[[ $output == "scar-ckpt: cannot open 'nosuch.ckpt': No such file or directory"* ]]
}

@test "verify and info name the file and section of a flipped payload byte" {
	need_jq
	small
	off=$(scar-ckpt info --json a.ckpt | jq '.sections[1].offset + 48 + 20')
	flip_byte a.ckpt "$off"
	run -1 scar-ckpt verify a.ckpt
	[[ $output == "scar-ckpt: "*"'a.ckpt'"* ]]
	[[ $output == *"section"* ]]
	[[ $output == *"shard 1"* ]]
	run -2 scar-ckpt info a.ckpt
	[[ $output == *"'a.ckpt'"*"section"* ]]
	[[ $output != *"model:"* ]]
	run -1 scar-ckpt verify - < a.ckpt
	[[ $output == *"section"* ]]
}

@test "truncation at every section boundary and mid-section is damage" {
	need_jq
	small
	scar-ckpt info --json a.ckpt > i.json
	size=$(wc -c < a.ckpt)
	for off in 0 8 16 30 $(jq '.sections[]|.offset, .offset+30' i.json) $((size - 1)); do
		head -c "$off" a.ckpt > t.ckpt
		run -1 scar-ckpt verify t.ckpt
		[[ $output == *"t.ckpt"* ]]
		run -2 scar-ckpt info t.ckpt
	done
}

@test "golden corrupt fixtures: verify exits 1, info exits 2, both name the file" {
	d="$FIXTURES/ckpt"
	[ -d "$d" ] || skip "no fixtures in $d"
	run -0 scar-ckpt verify "$d/good.ckpt"
	n=0
	for f in "$d"/*.ckpt; do
		[ "${f##*/}" = good.ckpt ] && continue
		n=$((n + 1))
		run -1 scar-ckpt verify "$f"
		[[ $output == *"${f##*/}"* ]] || { echo "verify $f: $output"; false; }
		run -2 scar-ckpt info "$f"
		[[ $output == *"${f##*/}"* ]] || { echo "info $f: $output"; false; }
		run -1 scar-ckpt verify - < "$f"
	done
	[ "$n" -ge 5 ]
}

@test "own corruptions: bad magic, header bit, empty file, not a checkpoint" {
	small
	cp a.ckpt m.ckpt; flip_byte m.ckpt 1
	cp a.ckpt h.ckpt; flip_byte h.ckpt 9
	cp a.ckpt x.ckpt; flip_byte x.ckpt $(( $(wc -c < a.ckpt) - 40 ))
	: > e.ckpt
	printf 'hello world, not a checkpoint\n' > n.ckpt
	for f in m h x e n; do
		run -1 scar-ckpt verify "$f.ckpt"
		[[ $output == *"$f.ckpt"* ]]
		run -2 scar-ckpt info "$f.ckpt"
		[[ $output == *"$f.ckpt"* ]]
	done
}

@test "export raw equals the generated bytes; tensor must be chosen" {
	small
	run -2 scar-ckpt export -o out.raw a.ckpt
	[[ $output == *"choose one with --tensor"* ]]
	run -2 scar-ckpt export --tensor nope -o out.raw a.ckpt
	[[ $output == *"no tensor 'nope'"* ]]
	scar-ckpt export --tensor w -o out.raw a.ckpt
	cmp out.raw w.raw
	scar-ckpt export --tensor w a.ckpt > out2.raw
	cmp out2.raw w.raw
	scar-ckpt export --tensor w - < a.ckpt > out3.raw
	cmp out3.raw w.raw
}

@test "export --rows and --shard select rows, in row order" {
	need_jq
	small
	scar-ckpt export --tensor w --rows 2:4 -o r.raw a.ckpt
	tail -c +$((2 * 32 + 1)) w.raw | head -c 64 > want.raw
	cmp r.raw want.raw
	scar-ckpt export --tensor w --rows 2:5 --format json a.ckpt > r.json
	[ "$(json r.json .rows)" = '[2,3,4]' ]
	[ "$(json r.json .shape)" = '[3,8]' ]
	[ "$(json r.json '.data|length')" = 3 ]
	[ "$(json r.json '.data[0]|length')" = 8 ]
	[ "$(json r.json .dtype)" = '"f32"' ]
	[ "$(json r.json .tensor)" = '"w"' ]
	scar-ckpt export --tensor w --shard 1 --format json a.ckpt > s.json
	[ "$(json s.json '.rows[0:4]')" = '[1,5,9,13]' ]
	[ "$(json s.json '.rows|length')" = 16 ]
	scar-ckpt export --tensor w --shard 1 --rows 4:12 --format json a.ckpt > sr.json
	[ "$(json sr.json .rows)" = '[5,9]' ]
	run -2 scar-ckpt export --tensor w --shard 4 a.ckpt
	[[ $output == *"no shard 4"* ]]
	run -2 scar-ckpt export --tensor rng --shard 1 a.ckpt
	run -2 scar-ckpt export --tensor w --rows 0:65 -o x.raw a.ckpt
	[[ $output == *"out of range"* ]]
	[ ! -e x.raw ]
	scar-ckpt export --tensor rng --format json a.ckpt > g.json
	[ "$(json g.json '.data|length')" = 6 ]
}

@test "export JSON of a seekable file and of a pipe agree; values match raw" {
	need_jq
	small
	scar-ckpt export --tensor w --format json a.ckpt > f.json
	scar-ckpt export --tensor w --format json - < a.ckpt > p.json
	cmp f.json p.json
	# the first element of the raw bytes, as printed by od, equals data[0][0]
	want=$(od -An -tf4 -N4 w.raw | tr -d ' ')
	got=$(jq '.data[0][0]' f.json)
	awk -v a="$want" -v b="$got" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d < 1e-6) }'
}

@test "export npy writes a valid NPY 1.0 header and import reads it back" {
	need_jq
	small
	scar-ckpt export --tensor w -o w.npy a.ckpt
	[ "$(head -c 6 w.npy | od -An -c | tr -d ' ')" = '223NUMPY' ]
	hl=$(od -An -tu2 -j8 -N2 w.npy | tr -d ' ')
	[ $(( (10 + hl) % 64 )) -eq 0 ]
	head -c $((10 + hl)) w.npy | tail -c +11 | grep -q "'descr': '<f4', 'fortran_order': False, 'shape': (64, 8), }"
	[ $(( $(wc -c < w.npy) - 10 - hl )) -eq 2048 ]
	scar-ckpt import --shards 3 --iteration 9 -o b.ckpt w.npy
	run -0 scar-ckpt info --json b.ckpt
	[[ $output == *'"name":"w"'* ]]
	[[ $output == *'"shards":3'* ]]
	[[ $output == *'"iteration":9'* ]]
	scar-ckpt export --tensor w -o back.raw b.ckpt
	cmp back.raw w.raw
}

@test "import raw arrays: dtype, shape, names, roles, size checks" {
	need_jq
	small
	run -2 scar-ckpt import -o b.ckpt w.raw
	[[ $output == *"needs --dtype and --shape"* ]]
	run -2 scar-ckpt import --dtype f32 --shape 10,8 -o b.ckpt w.raw
	[[ $output == *"w.raw"* ]]
	[ ! -e b.ckpt ]
	run -2 scar-ckpt import --dtype f32 --shape 64,8 -o b.ckpt nosuch.raw
	[[ $output == *"cannot open 'nosuch.raw'"* ]]
	run -2 scar-ckpt import --dtype f9 --shape 64,8 -o b.ckpt w.raw
	run -2 scar-ckpt import --role boss --dtype f32 --shape 64,8 -o b.ckpt w.raw
	run -2 scar-ckpt import --name a --dtype f32 --shape 64,8 -o b.ckpt w.raw w.raw
	cp w.raw v.raw
	scar-ckpt import --dtype f32 --shape 64,8 --shards 8 --model mf -o b.ckpt w.raw v.raw
	scar-ckpt info --json b.ckpt > i.json
	[ "$(json i.json '[.tensors[].name]')" = '["w","v"]' ]
	[ "$(json i.json '.sections|length')" = 16 ]
	[ "$(json i.json .model)" = '"mf"' ]
	scar-ckpt export --tensor v -o v2.raw b.ckpt
	cmp v2.raw w.raw
	scar-ckpt import --dtype f64 --shape 32,8 --role state --name s -o c.ckpt w.raw
	scar-ckpt info --json c.ckpt > c.json
	[ "$(json c.json '.tensors[0].role')" = '"state"' ]
	[ "$(json c.json '.tensors[0].dtype')" = '"f64"' ]
	[ "$(json c.json '.sections|length')" = 1 ]
	run -2 scar-ckpt import --dtype f32 --shape 64,8 -o d.ckpt w.raw w.raw
}

@test "apply reconstructs the saved view from partials, in iteration order" {
	need_jq
	mkckpt --bytes 2048 --cols 8 --shards 4 --seed 1 --iteration 0 --no-sync base.ckpt
	mkckpt --bytes 2048 --cols 8 --shards 4 --seed 2 --iteration 5 --present 0:4 --no-sync p5.ckpt
	mkckpt --bytes 2048 --cols 8 --shards 4 --seed 3 --iteration 10 --present 2:6 --no-sync p10.ckpt
	run -0 scar-ckpt info --json p5.ckpt
	[[ $output == *'"kind":"partial"'* ]]
	# operands out of order: apply sorts them by iteration
	scar-ckpt apply -o view.ckpt base.ckpt p10.ckpt p5.ckpt
	scar-ckpt verify -q view.ckpt
	scar-ckpt info --json view.ckpt > v.json
	[ "$(json v.json .kind)" = '"full"' ]
	[ "$(json v.json .iteration)" = 10 ]
	ex() { scar-ckpt export --tensor w --format json --rows "$1" "$2" | jq -c .data; }
	[ "$(ex 0:2 view.ckpt)" = "$(ex 0:2 p5.ckpt)" ]
	[ "$(ex 2:6 view.ckpt)" = "$(ex 2:6 p10.ckpt)" ]
	[ "$(ex 6:64 view.ckpt)" = "$(ex 6:64 base.ckpt)" ]
	[ "$(ex 0:2 view.ckpt)" != "$(ex 0:2 base.ckpt)" ]
	# a directory: its oldest full checkpoint is the base
	mkdir run
	cp base.ckpt p5.ckpt p10.ckpt run/
	scar-ckpt apply --no-sync -o view2.ckpt run
	[ "$(ex : view2.ckpt)" = "$(ex : view.ckpt)" ]
	scar-ckpt apply run > view3.ckpt
	[ "$(ex : view3.ckpt)" = "$(ex : view.ckpt)" ]
}

@test "apply refuses partial bases, stale partials and mismatches" {
	mkckpt --bytes 2048 --cols 8 --shards 4 --iteration 5 --no-sync base.ckpt
	mkckpt --bytes 2048 --cols 8 --shards 4 --iteration 3 --present 0:4 --no-sync old.ckpt
	mkckpt --bytes 2048 --cols 8 --shards 2 --iteration 9 --present 0:4 --no-sync s2.ckpt
	mkckpt --bytes 4096 --cols 8 --shards 4 --iteration 9 --present 0:4 --no-sync big.ckpt
	run -2 scar-ckpt apply -o v.ckpt base.ckpt old.ckpt
	[[ $output == *"not newer than the base"* ]]
	run -2 scar-ckpt apply -o v.ckpt old.ckpt
	[[ $output == *"partial"* ]]
	run -2 scar-ckpt apply -o v.ckpt base.ckpt s2.ckpt
	[[ $output == *"s2.ckpt"* ]]
	run -2 scar-ckpt apply -o v.ckpt base.ckpt big.ckpt
	[[ $output == *"big.ckpt"* ]]
	run -2 scar-ckpt apply -o v.ckpt base.ckpt nosuch.ckpt
	[[ $output == *"nosuch.ckpt"* ]]
	[ ! -e v.ckpt ]
	mkdir d
	cp old.ckpt d/
	run -2 scar-ckpt apply -o v.ckpt d
	[[ $output == *"no full checkpoint"* ]]
}

@test "convert re-shards, changes precision and compression, keeps values" {
	need_jq
	small
	scar-ckpt convert --shards 3 --no-sync a.ckpt b.ckpt
	scar-ckpt info --json b.ckpt > b.json
	[ "$(json b.json .shards)" = 3 ]
	[ "$(json b.json '[.sections[]|select(.tensor=="w")|.rows]')" = '[22,21,21]' ]
	scar-ckpt export --tensor w -o b.raw b.ckpt
	cmp b.raw w.raw
	scar-ckpt convert --dtype f64 a.ckpt d.ckpt
	scar-ckpt info --json d.ckpt > d.json
	[ "$(json d.json '.tensors[0].dtype')" = '"f64"' ]
	[ "$(json d.json '.tensors[1].dtype')" = '"u64"' ]
	[ "$(json d.json '.tensors[0].raw_bytes')" = 4096 ]
	scar-ckpt convert --dtype f32 d.ckpt e.ckpt
	scar-ckpt export --tensor w -o e.raw e.ckpt
	cmp e.raw w.raw
	scar-ckpt convert --no-compress a.ckpt r.ckpt
	[ "$(scar-ckpt info --json r.ckpt | jq -c '[.sections[].compressed]|unique')" = '[false]' ]
	scar-ckpt convert --level 9 r.ckpt h.ckpt
	[ "$(scar-ckpt info --json h.ckpt | jq -c '[.sections[].compressed]|unique')" = '[true]' ]
	scar-ckpt verify -q r.ckpt h.ckpt
}

@test "convert in place keeps the input on failure and replaces it on success" {
	need_jq
	small
	cp a.ckpt keep.ckpt
	scar-ckpt convert --shards 2 a.ckpt a.ckpt
	[ "$(scar-ckpt info --json a.ckpt | jq .shards)" = 2 ]
	scar-ckpt export --tensor w -o x.raw a.ckpt
	cmp x.raw w.raw
	head -c 500 keep.ckpt > t.ckpt
	cp t.ckpt t0.ckpt
	run -2 scar-ckpt convert t.ckpt t.ckpt
	cmp t.ckpt t0.ckpt
	mkdir ro
	chmod 555 ro
	if [ "$(id -u)" != 0 ]; then
		run -2 scar-ckpt convert keep.ckpt ro/x.ckpt
		[[ $output == *"ro/x.ckpt"* ]]
	fi
	[ -z "$(ls -A ro)" ]
	[ -z "$(ls -A . | grep tmp)" ]
}

@test "ls lists iteration, kind and size; damaged files with a warning" {
	need_jq
	mkdir run
	mkckpt --bytes 2048 --cols 8 --iteration 0 --no-sync run/c0.ckpt
	mkckpt --bytes 2048 --cols 8 --iteration 20 --no-sync run/c20.ckpt
	mkckpt --bytes 2048 --cols 8 --iteration 10 --present 0:3 --no-sync run/c10.ckpt
	echo notes > run/README
	run -0 scar-ckpt ls run
	[ "${#lines[@]}" -eq 3 ]
	[[ ${lines[0]} == *" 0  full "*"run/c0.ckpt" ]]
	[[ ${lines[1]} == *" 10  partial "*"run/c10.ckpt" ]]
	[[ ${lines[2]} == *" 20  full "*"run/c20.ckpt" ]]
	[[ ${lines[0]} == *" $(wc -c < run/c0.ckpt)  "* ]]
	run -0 scar-ckpt ls run/
	[[ ${lines[0]} == *"  run/c0.ckpt" ]]
	printf 'garbage' > run/bad.ckpt
	run -1 scar-ckpt ls run
	[[ $output == *"scar-ckpt: damaged checkpoint 'run/bad.ckpt'"* ]]
	[[ ${lines[-1]} == *"-  damaged "*"run/bad.ckpt" ]]
	scar-ckpt ls --json run > l.json || [ $? -eq 1 ]
	[ "$(json l.json '.checkpoints|length')" = 4 ]
	[ "$(json l.json '[.checkpoints[].kind]')" = '["full","partial","full","damaged"]' ]
	[ "$(json l.json '[.checkpoints[].iteration]')" = '[0,10,20,null]' ]
	[ "$(json l.json '.checkpoints[3].error|length > 0')" = true ]
	run -2 scar-ckpt ls nosuch
	[[ $output == *"nosuch"* ]]
	mkdir empty
	run -0 scar-ckpt ls empty
	[ -z "$output" ]
}

@test "binary output to a terminal is refused" {
	command -v script >/dev/null || skip "script(1) not installed"
	small
	run -2 script -qec "scar-ckpt export --tensor w a.ckpt" /dev/null
	[[ $output == *"refusing to write"* ]]
	run -0 script -qec "scar-ckpt export --tensor w a.ckpt; echo status=\$?" /dev/null
	[[ $output == *"status=2"* ]]
	run -0 script -qec "scar-ckpt convert a.ckpt -; echo status=\$?" /dev/null
	[[ $output == *"refusing"*"status=2"* ]]
	run -0 script -qec "scar-ckpt export --tensor w --format json --rows 0:1 a.ckpt; echo status=\$?" /dev/null
	[[ $output == *'"rows":[0]'*"status=0"* ]]
	run -0 script -qec "scar-ckpt info; echo status=\$?" /dev/null
	[[ $output == *"no input"*"status=2"* ]]
}

@test "every long option is in --help, the man page and all three completions" {
	src="$SCAR_ROOT/cmd/scar-ckpt.c"
	opts=$(grep -hoE '^[[:space:]]*\{ "[a-z][a-z-]*", (no|required|optional)_argument' "$src" "$SCAR_ROOT/cmd/common/subcmd.c" |
		sed -E 's/.*"([a-z-]+)".*/\1/' | sort -u)
	[ "$(printf '%s\n' "$opts" | wc -l)" -ge 20 ]
	help=$(scar-ckpt --help; for c in apply convert export import info ls save verify; do scar-ckpt "$c" --help; done)
	man=$(MANWIDTH=200 mandoc -Tascii "$SCAR_ROOT/man/scar-ckpt.1" | col -b)
	for o in $opts; do
		[[ $help == *"--$o"* ]] || { echo "--$o missing from --help"; false; }
		[[ $man == *"--$o"* ]] || { echo "--$o missing from the man page"; false; }
		grep -q -- "--$o\b" "$SCAR_ROOT/completions/bash/scar-ckpt" || { echo "--$o missing from bash"; false; }
		grep -q -- "--$o\b" "$SCAR_ROOT/completions/zsh/_scar-ckpt" || { echo "--$o missing from zsh"; false; }
		grep -qE -- "-l $o( |\$)" "$SCAR_ROOT/completions/fish/scar-ckpt.fish" || { echo "--$o missing from fish"; false; }
	done
}

@test "the man page's EXAMPLES run" {
	need_jq
	# (run/ is the scar-train run the first example makes)
	mkckpt --bytes 64K --cols 64 --shards 4 --no-state --no-sync a.ckpt
	mkckpt --bytes 256000 --cols 64 --raw w.raw
	mkckpt --bytes 256 --cols 64 --no-state --no-sync b0.ckpt
	scar-ckpt export -o bias.npy b0.ckpt
	MANWIDTH=100 mandoc -Tascii "$SCAR_ROOT/man/scar-ckpt.1" | col -bx |
		sed -n '/^EXAMPLES/,/^DIAGNOSTICS/p' |
		awk '/^ +\$ / { sub(/^ +\$ /, ""); cmd = $0; while (cmd ~ /\\$/) { getline; sub(/^ +/, ""); sub(/\\$/, "", cmd); cmd = cmd $0 } print cmd }' > examples.sh
	[ "$(wc -l < examples.sh)" -ge 10 ]
	while IFS= read -r cmd; do
		run bash -c "$cmd"
		[ "$status" -eq 0 ] || { echo "$cmd: exit $status: $output"; false; }
	done < examples.sh
	[ -s w2.npy ] && [ -s w.ckpt ] && [ -s b.ckpt ] && [ -s view.ckpt ]
	[ "$(scar-ckpt info --json a.ckpt | jq .shards)" = 4 ]
}

@test "import reads NPY 2.0, big-endian data, and refuses Fortran order and bad headers" {
	need_jq
	command -v python3 >/dev/null || skip "python3 not installed"
	python3 - <<'PY'
import struct
def npy(name, descr, shape, data, major=1, fortran=False, pad=True):
    d = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, shape)
    pre = 10 if major == 1 else 12
    if pad:
        d += ' ' * ((64 - (pre + len(d) + 1) % 64) % 64)
    d += '\n'
    h = b'\x93NUMPY' + bytes([major, 0])
    h += struct.pack('<H' if major == 1 else '<I', len(d))
    open(name, 'wb').write(h + d.encode() + data)
vals = [1.5, -2.25, 3.0, 4.0, 5.0, 6.0]
npy('v2.npy', '<f4', '(2, 3)', struct.pack('<6f', *vals), major=2)
npy('be.npy', '>f8', '(6,)', struct.pack('>6d', *vals))
npy('i64.npy', '<i8', '(3, 2)', struct.pack('<6q', 1, -2, 3, -4, 5, -6))
npy('fortran.npy', '<f4', '(2, 3)', struct.pack('<6f', *vals), fortran=True)
npy('short.npy', '<f4', '(2, 3)', struct.pack('<5f', *vals[:5]))
npy('c16.npy', '<c16', '(1,)', b'\0' * 16)
PY
	scar-ckpt import -o v2.ckpt v2.npy
	[ "$(scar-ckpt export --format json v2.ckpt | jq -c .data)" = '[[1.5,-2.25,3],[4,5,6]]' ]
	scar-ckpt import -o be.ckpt be.npy
	[ "$(scar-ckpt export --format json be.ckpt | jq -c '[.dtype, .shape, .data]')" = '["f64",[6],[[1.5],[-2.25],[3],[4],[5],[6]]]' ]
	scar-ckpt import --dtype f32 -o be32.ckpt be.npy
	[ "$(scar-ckpt export --format json be32.ckpt | jq -c '[.dtype, .data[1]]')" = '["f32",[-2.25]]' ]
	scar-ckpt import --shards 2 -o i.ckpt - < i64.npy
	[ "$(scar-ckpt export --format json --tensor x i.ckpt | jq -c .data)" = '[[1,-2],[3,-4],[5,-6]]' ]
	run -2 scar-ckpt import -o f.ckpt fortran.npy
	[[ $output == *"'fortran.npy': not a valid .npy file: Fortran order"* ]]
	run -2 scar-ckpt import -o s.ckpt short.npy
	[[ $output == *"'short.npy'"*"does not match the shape"* ]]
	run -2 scar-ckpt import -o c.ckpt c16.npy
	[[ $output == *"unsupported dtype"* ]]
	run -2 scar-ckpt import --shape 3,2 -o v.ckpt v2.npy
	[[ $output == *"does not match --shape"* ]]
	[ ! -e f.ckpt ] && [ ! -e s.ckpt ] && [ ! -e c.ckpt ] && [ ! -e v.ckpt ]
}

@test "the completions parse, and bash completes commands and option values" {
	bash -n "$SCAR_ROOT/completions/bash/scar-ckpt"
	if command -v zsh >/dev/null; then zsh -n "$SCAR_ROOT/completions/zsh/_scar-ckpt"; fi
	if command -v fish >/dev/null; then fish --no-execute "$SCAR_ROOT/completions/fish/scar-ckpt.fish"; fi
	run -0 bash -c '
		source "$SCAR_ROOT/completions/bash/scar-ckpt"
		COMP_WORDS=(scar-ckpt con); COMP_CWORD=1; _scar_ckpt; echo "${COMPREPLY[*]}"
		COMP_WORDS=(scar-ckpt export --format ""); COMP_CWORD=3; _scar_ckpt; echo "${COMPREPLY[*]}"
		COMP_WORDS=(scar-ckpt verify -); COMP_CWORD=2; _scar_ckpt; echo "${COMPREPLY[*]}"'
	[ "${lines[0]}" = convert ]
	[ "${lines[1]}" = "raw npy json safetensors" ]
	[ "${lines[2]}" = "--help -q --quiet --threads" ]
}

@test "I/O errors: exit 2, a message, the target untouched, no temporary left" {
	shim="$SCAR_ROOT/tests/fault-shim.so"
	[ -f "$shim" ] || skip "tests/fault-shim.so not built"
	small
	cp a.ckpt keep.ckpt
	for rule in write:ENOSPC:1 fsync:EIO:1 rename:EIO:1 open:EACCES:1; do
		run -2 env LD_PRELOAD="$shim" SCAR_FAULT="$rule" SCAR_FAULT_PATH=out.ckpt \
			scar-ckpt convert a.ckpt out.ckpt
		[[ $output == "scar-ckpt: "*"out.ckpt"* ]] || { echo "$rule: $output"; false; }
		[ ! -e out.ckpt ]
		run -2 env LD_PRELOAD="$shim" SCAR_FAULT="$rule" SCAR_FAULT_PATH=a.ckpt \
			scar-ckpt convert --shards 2 a.ckpt a.ckpt
		cmp a.ckpt keep.ckpt
	done
	# short writes and EINTR are not errors
	for rule in 'write:short:*' 'write:EINTR:1' 'read:short:*' 'read:EINTR:2'; do
		run -0 env LD_PRELOAD="$shim" SCAR_FAULT="$rule" scar-ckpt convert a.ckpt s.ckpt
		run -0 env LD_PRELOAD="$shim" SCAR_FAULT="$rule" scar-ckpt verify s.ckpt
		cmp <(scar-ckpt export --tensor w s.ckpt) w.raw
		run -0 env LD_PRELOAD="$shim" SCAR_FAULT="$rule" \
			scar-ckpt import --dtype f32 --shape 64,8 -o i.ckpt w.raw
		cmp <(scar-ckpt export i.ckpt) w.raw
	done
	run -2 env LD_PRELOAD="$shim" SCAR_FAULT=write:ENOSPC:1 SCAR_FAULT_PATH=v.ckpt \
		scar-ckpt import --dtype f32 --shape 64,8 -o v.ckpt w.raw
	[[ $output == *"No space left on device"* ]]
	run -2 env LD_PRELOAD="$shim" SCAR_FAULT=close:EIO:1 SCAR_FAULT_PATH=x.raw \
		scar-ckpt export --tensor w -o x.raw a.ckpt
	[[ $output == *"cannot write 'x.raw'"* ]]
	run -2 env LD_PRELOAD="$shim" SCAR_FAULT=read:EIO:2 SCAR_FAULT_PATH=a.ckpt \
		scar-ckpt verify a.ckpt
	[[ $output == *"a.ckpt"* ]]
	run -2 env LD_PRELOAD="$shim" SCAR_FAULT=read:EIO:1 SCAR_FAULT_PATH=w.raw \
		scar-ckpt import --dtype f32 --shape 64,8 -o y.ckpt w.raw
	[[ $output == *"cannot read 'w.raw'"* ]]
	[ ! -e v.ckpt ] && [ ! -e x.raw ] && [ ! -e y.ckpt ]
	[ -z "$(ls -A | grep '\.tmp\.')" ]
}

@test "export agrees with the independent reader of scar-ckpt(5)" {
	need_jq
	indep="$SCAR_ROOT/tools/ckpt-reader-indep"
	[ -x "$indep" ] || skip "tools/ckpt-reader-indep not built"
	rows() {	# the reader's line format, from export --format json
		scar-ckpt export --tensor "$1" --format json "$2" |
			jq -r '.tensor as $n | range(.rows | length) as $i |
				"\($n) \(.rows[$i]) \(.data[$i] | map(tostring) | join(" "))"'
	}
	mkckpt --bytes 4096 --cols 8 --shards 3 --seed 5 --no-sync a.ckpt
	mkckpt --bytes 4096 --cols 8 --shards 4 --seed 6 --present 3:40 --no-sync p.ckpt
	scar-ckpt convert --dtype f64 --shards 5 p.ckpt d.ckpt
	for f in a p d; do
		"$indep" "$f.ckpt" > indep.txt
		grep '^w ' indep.txt > want.txt
		rows w "$f.ckpt" > got.txt
		# same rows, same values as numbers (jq and %.17g may spell a double differently)
		[ "$(wc -l < want.txt)" -eq "$(wc -l < got.txt)" ]
		awk 'NR == FNR { a[FNR] = $0; next }
			{ n = split(a[FNR], x, " "); if (n != NF) exit 1
			  for (i = 1; i <= n; i++) if (x[i] != $i && x[i] + 0 != $i + 0) exit 1 }' want.txt got.txt
		# u64 state: compare as integers (jq would round them to doubles)
		grep '^rng ' indep.txt | cut -d' ' -f3 > want.txt
		scar-ckpt export --tensor rng "$f.ckpt" | od -An -v -tu8 -w8 | tr -d ' ' > got.txt
		diff want.txt got.txt
	done
	# Scattered rows (a random partial checkpoint) are a bitmap, format 1.1.
	mkdir r
	scar-train -m ridge --set n=50 --set d=64 -n 1 --policy random --interval 4 --no-timing -q \
		--shards 4 --checkpoint-dir r > /dev/null
	[ "$(od -An -tu2 -j10 -N2 r/ckpt-0000000001.ckpt | tr -d ' ')" = 1 ]
	scar-ckpt info r/ckpt-0000000001.ckpt | grep -qx 'version: *1\.1'
	scar-ckpt info r/ckpt-0000000000.ckpt | grep -qx 'version: *1\.0'
	[ "$(scar-ckpt info --json r/ckpt-0000000001.ckpt | jq -c '[.version, .minor_version]')" = '[1,1]' ]
	"$indep" r/ckpt-0000000001.ckpt | grep '^w ' > want.txt
	rows w r/ckpt-0000000001.ckpt > got.txt
	[ "$(wc -l < want.txt)" -eq 16 ] && [ "$(wc -l < got.txt)" -eq 16 ]
	awk 'NR == FNR { a[FNR] = $0; next }
		{ n = split(a[FNR], x, " "); if (n != NF) exit 1
		  for (i = 1; i <= n; i++) if (x[i] != $i && x[i] + 0 != $i + 0) exit 1 }' want.txt got.txt
	# f16 and bf16 (format 1.2): the same numbers, every tensor
	if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
		/usr/bin/python3 "$SCAR_ROOT/tests/mksafetensors.py" h.safetensors 3
		scar-ckpt import --no-sync --shards 3 -o h.ckpt h.safetensors
		"$indep" h.ckpt > indep-h.txt
		for t in fc.weight emb.half norm.bf16 ids; do
			grep "^$t " indep-h.txt > want.txt
			rows "$t" h.ckpt > got.txt
			[ "$(wc -l < want.txt)" -gt 0 ] && [ "$(wc -l < want.txt)" -eq "$(wc -l < got.txt)" ]
			awk 'NR == FNR { a[FNR] = $0; next }
				{ n = split(a[FNR], x, " "); if (n != NF) exit 1
				  for (i = 1; i <= n; i++) if (x[i] != $i && x[i] + 0 != $i + 0) exit 1 }' want.txt got.txt
		done
	fi
	# Damage is named in words, not by LZ4's error names.
	run -1 --separate-stderr "$indep" "$FIXTURES/ckpt/bitflip-payload.ckpt"
	[[ $stderr == "ckpt-reader-indep: offset "*": LZ4 block checksum mismatch" ]]
	[ "$(grep -c '^w ' indep.txt)" -eq 37 ]
}

@test "bash completion: export --tensor offers the file operand's tensors" {
	run scar-train -m mf -n 2 --checkpoint-dir "$BATS_TEST_TMPDIR/run" -q
	assert_success
	f=$(ls "$BATS_TEST_TMPDIR"/run/ckpt-*.ckpt | head -n 1)
	# bc [CWORD] WORDS...: the completions at word CWORD (default the last)
	bc() {
		local cw=-1
		case $1 in [0-9]*) cw=$1; shift ;; esac
		bash -c 'cw=$2; source "$1"; shift 2
			COMP_WORDS=("$@"); COMP_CWORD=$cw; ((cw >= 0)) || COMP_CWORD=$(($# - 1)); COMPREPLY=()
			_scar_ckpt; printf "%s\n" "${COMPREPLY[@]}"' _ "$SCAR_ROOT/completions/bash/scar-ckpt" "$cw" "$@"
	}
	want=$(scar-ckpt info --json "$f" | /usr/bin/python3 -c 'import json,sys; print("\n".join(t["name"] for t in json.load(sys.stdin)["tensors"]))')
	[ -n "$want" ]
	[ "$(bc scar-ckpt export "$f" --tensor "")" = "$want" ]
	[ "$(bc 3 scar-ckpt export --tensor "" "$f")" = "$want" ]
	[ "$(bc 3 scar-ckpt export --tensor item "$f")" = "$(printf '%s\n' "$want" | grep '^item')" ]
	# no file operand yet: nothing to offer
	[ -z "$(bc scar-ckpt export --tensor "")" ]
}
