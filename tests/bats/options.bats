#!/usr/bin/env bats
# options.bats - one source of truth for options: every long option of a
# tool's getopt_long table (cmd/<tool>.c) must be in its --help, its man
# page and its bash, zsh and fish completions; every tool has --help and
# --version; subcommands are completed; completion files load.

bats_require_minimum_version 1.5.0
load helper

# Print "SUB NAME" for every long option of cmd/$1.c. SUB is the subcommand
# whose table holds it ("-" for a single-command tool or the main table):
# when a file has several tables, a table called X_opts belongs to
# subcommand X and main_opts to the tool itself. A tool made of
# subcommands takes its main table from cmd/common/subcmd.c.
long_options_parse() {
	local src="$SCAR_ROOT/cmd/$1.c" common=
	[ -f "$src" ] || { echo "no source '$src'" >&2; return 1; }
	if grep -q '#include "subcmd.h"' "$src"; then
		common=$SCAR_ROOT/cmd/common/subcmd.c
	fi
	awk '
	BEGIN { n = 0; nt = 0 }
	/struct option [A-Za-z_0-9]+[ \t]*\[\][ \t]*=/ {
		s = $0; sub(/.*struct option[ \t]+/, "", s); sub(/[ \t]*\[.*/, "", s)
		t = s; if (!(t in seen)) { seen[t] = 1; order[nt++] = t }
		next
	}
	t != "" && /^[ \t]*\{[ \t]*"/ {
		s = $0; sub(/^[ \t]*\{[ \t]*"/, "", s); sub(/".*/, "", s)
		tab[n] = t; name[n++] = s
		next
	}
	t != "" && /^[ \t]*\}[ \t]*;/ { t = "" }
	END {
		for (i = 0; i < n; i++) {
			sub_ = "-"
			if (nt > 1 && tab[i] ~ /_opts$/ && tab[i] != "main_opts") {
				sub_ = tab[i]; sub(/_opts$/, "", sub_)
			}
			print sub_, name[i]
		}
	}' "$src" $common
}

# Subcommands of a tool: the SUB column, without "-".
subcommands() {
	long_options "$1" | awk '$1 != "-" && !seen[$1]++ { print $1 }'
}

# The long-option names a file mentions, one per line, sorted and unique:
#   dashdash  "--NAME" (help text, bash and zsh completions)
#   mdoc      "Fl Fl NAME" (or "Fl \-NAME", "Fl -NAME")
#   fish      "-l NAME" or "--long(-option) NAME", quoted or not
# A name is a whole token: "--c" is not found in "--cost".
names_in() {
	case $1 in
	dashdash) grep -oE -- '--[A-Za-z0-9_][A-Za-z0-9_-]*' "$2" | sed 's/^--//' ;;
	mdoc) grep -oE -- 'Fl (Fl |\\-|-)[A-Za-z0-9_][A-Za-z0-9_-]*' "$2" | sed -E 's/^Fl (Fl |\\-|-)//' ;;
	fish) grep -oE -- "(-l|--long(-option)?)[ =]+['\"]?[A-Za-z0-9_][A-Za-z0-9_-]*" "$2" |
		sed -E "s/^(-l|--long(-option)?)[ =]+['\"]?//" ;;
	esac | LC_ALL=C sort -u
}

# check_all TOOL KIND FILE: every long option of TOOL is among the names
# FILE mentions; print the missing ones and fail when any is.
check_all() {
	local tool=$1 kind=$2 file=$3 missing
	[ -f "$file" ] || { echo "$tool: missing file '${file#"$SCAR_ROOT"/}'"; return 1; }
	long_options "$tool" | awk '{ print $2 }' | LC_ALL=C sort -u > "$BATS_TEST_TMPDIR/want"
	[ -s "$BATS_TEST_TMPDIR/want" ] || { echo "$tool: no getopt_long table found in cmd/$tool.c"; return 1; }
	names_in "$kind" "$file" > "$BATS_TEST_TMPDIR/have"
	missing=$(LC_ALL=C comm -23 "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/have" | sed 's/^/--/' | tr '\n' ' ')
	if [ -n "$missing" ]; then
		echo "$tool: long options missing from ${file#"$SCAR_ROOT"/}: $missing"
		return 1
	fi
}

# The options a subcommand (or "-") owns, one "--NAME" per line.
options_of() {
	long_options "$1" | awk -v s="$2" '$1 == s { print "--" $2 }'
}

# The parse, once per tool and test.
long_options() {
	local f=$BATS_TEST_TMPDIR/opts-$1
	[ -f "$f" ] || long_options_parse "$1" > "$f" || { rm -f "$f"; return 1; }
	cat "$f"
}

# Help text of TOOL or TOOL SUB into $BATS_TEST_TMPDIR/help.
help_text() {
	local tool=$1 sub=$2
	if [ "$sub" = - ]; then
		"$tool" --help >"$BATS_TEST_TMPDIR/help" 2>"$BATS_TEST_TMPDIR/help.err"
	else
		"$tool" "$sub" --help >"$BATS_TEST_TMPDIR/help" 2>"$BATS_TEST_TMPDIR/help.err"
	fi
}

check_help() {
	local tool=$1 sub missing rc=0
	for sub in - $(subcommands "$tool"); do
		if ! help_text "$tool" "$sub"; then
			echo "$tool ${sub/#-/}--help: exit status not 0"; rc=1; continue
		fi
		names_in dashdash "$BATS_TEST_TMPDIR/help" > "$BATS_TEST_TMPDIR/have"
		missing=$(options_of "$tool" "$sub" | sed 's/^--//' | LC_ALL=C sort -u |
			LC_ALL=C comm -23 - "$BATS_TEST_TMPDIR/have" | sed 's/^/--/' | tr '\n' ' ')
		if [ -n "$missing" ]; then
			echo "$tool ${sub/#-/}--help lacks: $missing"; rc=1
		fi
	done
	return $rc
}

check_help_version() {
	local tool=$1 sub
	run -0 --separate-stderr "$tool" --help
	[ -n "$output" ] || { echo "$tool --help: nothing on stdout"; return 1; }
	[ -z "$stderr" ] || { echo "$tool --help: wrote to stderr: $stderr"; return 1; }
	run -0 --separate-stderr "$tool" --version
	[[ $output == "$tool "[0-9]* ]] || { echo "$tool --version: '$output'"; return 1; }
	for sub in $(subcommands "$tool"); do
		run -0 --separate-stderr "$tool" "$sub" --help
		[ -n "$output" ] || { echo "$tool $sub --help: nothing on stdout"; return 1; }
	done
	# misuse is a usage error: exit 2, a hint on stderr, nothing on stdout
	run -2 --separate-stderr "$tool" --no-such-option-at-all
	[ -z "$output" ] || { echo "$tool: usage error wrote to stdout"; return 1; }
	[[ $stderr == *"$tool"* ]] || { echo "$tool: usage error does not name the program"; return 1; }
}

# Run a bash completion function the way bash would: print COMPREPLY for
# the command line "$@" whose last word is being completed.
bash_complete() {
	local file=$1
	shift
	mkdir -p "$BATS_TEST_TMPDIR/empty"
	(cd "$BATS_TEST_TMPDIR/empty" && bash -c '
		file=$1; shift
		source "$file" || exit 3
		spec=$(complete -p "$1" 2>/dev/null) || { echo "no complete spec for $1" >&2; exit 4; }
		fn=${spec##*-F }; fn=${fn%% *}
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; COMP_TYPE=9; COMP_KEY=9
		COMPREPLY=()
		"$fn" "$1" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
		printf "%s\n" "${COMPREPLY[@]}"
	' _ "$file" "$@")
}

# Offering the options after "--" (per subcommand), and the subcommands.
check_bash_offers() {
	local tool=$1 file=$SCAR_ROOT/completions/bash/$1 sub out missing rc=0
	[ -f "$file" ] || { echo "$tool: missing file '$file'"; return 1; }
	for sub in - $(subcommands "$tool"); do
		if [ "$sub" = - ]; then
			out=$(bash_complete "$file" "$tool" --) || { echo "$tool: bash completion failed"; return 1; }
		else
			out=$(bash_complete "$file" "$tool" "$sub" --) || { echo "$tool: bash completion failed"; return 1; }
		fi
		missing=$(options_of "$tool" "$sub" | LC_ALL=C sort -u |
			LC_ALL=C comm -23 - <(LC_ALL=C sort -u <<<"$out") | tr '\n' ' ')
		if [ -n "$missing" ]; then
			echo "$tool ${sub/#-/}--<TAB> in bash does not offer: $missing"; rc=1
		fi
	done
	return $rc
}

# The same for fish, when it is installed: `complete -C LINE` lists what
# fish would offer for LINE, one "candidate<TAB>description" per line.
fish_complete() {
	local file=$1
	shift
	mkdir -p "$BATS_TEST_TMPDIR/empty"
	(cd "$BATS_TEST_TMPDIR/empty" &&
		fish --no-config -c 'source $argv[1]; complete -C $argv[2]' "$file" "$*") | cut -f1
}

check_fish_offers() {
	local tool=$1 file=$SCAR_ROOT/completions/fish/$1.fish sub out missing rc=0
	if ! command -v fish >/dev/null; then
		echo "# fish not installed: what it offers is not checked" >&3
		return 0
	fi
	for sub in - $(subcommands "$tool"); do
		if [ "$sub" = - ]; then
			out=$(fish_complete "$file" "$tool" --) || { echo "$tool: fish completion failed"; return 1; }
		else
			out=$(fish_complete "$file" "$tool" "$sub" --) || { echo "$tool: fish completion failed"; return 1; }
		fi
		missing=$(options_of "$tool" "$sub" | LC_ALL=C sort -u |
			LC_ALL=C comm -23 - <(LC_ALL=C sort -u <<<"$out") | tr '\n' ' ')
		if [ -n "$missing" ]; then
			echo "$tool ${sub/#-/}--<TAB> in fish does not offer: $missing"; rc=1
		fi
	done
	if [ -n "$(subcommands "$tool")" ]; then
		out=$(fish_complete "$file" "$tool" "")
		missing=$(subcommands "$tool" | LC_ALL=C sort -u |
			LC_ALL=C comm -23 - <(LC_ALL=C sort -u <<<"$out") | tr '\n' ' ')
		[ -z "$missing" ] || { echo "$tool <TAB> in fish does not offer: $missing"; rc=1; }
	fi
	return $rc
}

check_subcommands() {
	local tool=$1 sub out missing= f
	out=$(bash_complete "$SCAR_ROOT/completions/bash/$tool" "$tool" "") ||
		{ echo "$tool: bash completion failed"; return 1; }
	for sub in $(subcommands "$tool"); do
		grep -qxF -- "$sub" <<<"$out" || missing="$missing bash:$sub"
		f=$SCAR_ROOT/completions/zsh/_$tool
		grep -Eq "(^|[^A-Za-z0-9_-])$sub([^A-Za-z0-9_-]|\$)" "$f" || missing="$missing zsh:$sub"
		f=$SCAR_ROOT/completions/fish/$tool.fish
		grep -Eq "(^|[^A-Za-z0-9_-])$sub([^A-Za-z0-9_-]|\$)" "$f" || missing="$missing fish:$sub"
	done
	[ -z "$missing" ] || { echo "$tool: subcommands not completed:$missing"; return 1; }
}

check_loads() {
	local tool=$1 f
	f=$SCAR_ROOT/completions/bash/$tool
	[ -f "$f" ] || { echo "$tool: missing file '$f'"; return 1; }
	run -0 --separate-stderr bash -c 'source "$1"' _ "$f"
	[ -z "$stderr" ] || { echo "$f: $stderr"; return 1; }
	f=$SCAR_ROOT/completions/zsh/_$tool
	[ -f "$f" ] || { echo "$tool: missing file '$f'"; return 1; }
	head -n 1 "$f" | grep -q "^#compdef .*$tool" || { echo "$f: first line is not '#compdef $tool'"; return 1; }
	if command -v zsh >/dev/null; then
		run -0 zsh -n "$f"
	else
		echo "# zsh not installed: '$f' not parsed" >&3
	fi
	f=$SCAR_ROOT/completions/fish/$tool.fish
	[ -f "$f" ] || { echo "$tool: missing file '$f'"; return 1; }
	if command -v fish >/dev/null; then
		run -0 fish -n "$f"
	else
		echo "# fish not installed: '$f' not parsed" >&3
	fi
}

# ---- the parser itself: it must see the options, or every check is vacuous

@test "getopt_long tables are found in every tool" {
	local t n
	for t in scar-train scar-ckpt scar-diff scar-inject scar-bound; do
		n=$(long_options "$t" | wc -l)
		[ "$n" -ge 3 ] || { echo "$t: only $n long options parsed"; return 1; }
		long_options "$t" | grep -q ' help$' || { echo "$t: no --help in the table"; return 1; }
	done
	run -0 subcommands scar-ckpt
	[[ $output == *export* && $output == *verify* ]]
	run -0 subcommands scar-bound
	[[ $output == *evaluate* && $output == *plan* ]]
	run -0 subcommands scar-diff
	[ -z "$output" ]
}

@test "the checks can fail: an option nobody documents is reported" {
	mkdir -p cmd
	printf '%s\n' 'static const struct option opts[] = {' \
		'	{ "help", no_argument, NULL, 0 },' '	{ "frobnicate", no_argument, NULL, 0 },' \
		'	{ NULL, 0, NULL, 0 },' '};' > cmd/scar-fake.c
	printf '%s\n' '.It Fl Fl help' > fake.1
	SCAR_ROOT=$PWD run -1 check_all scar-fake mdoc fake.1
	[[ $output == *"--frobnicate"* && $output != *"--help"* ]]
	printf '%s\n' '.It Fl Fl help' '.It Fl Fl frobnicate' > fake.1
	SCAR_ROOT=$PWD run -0 check_all scar-fake mdoc fake.1
	printf '%s\n' '--frobnicate-more --help' > fake.bash
	SCAR_ROOT=$PWD run -1 check_all scar-fake dashdash fake.bash
	printf '%s\n' "complete -c scar-fake -l help" "complete -c scar-fake -l 'frobnicate'" > fake.fish
	SCAR_ROOT=$PWD run -0 check_all scar-fake fish fake.fish
	SCAR_ROOT=$PWD run -1 check_all scar-fake fish fake.1
}

# ---- per tool: its --help, its man page, its three completions

check_docs() {
	local tool=$1 rc=0
	check_help "$tool" || rc=1
	check_all "$tool" mdoc "$SCAR_ROOT/man/$tool.1" || rc=1
	return $rc
}

check_completions() {
	local tool=$1 rc=0
	check_all "$tool" dashdash "$SCAR_ROOT/completions/bash/$tool" || rc=1
	check_all "$tool" dashdash "$SCAR_ROOT/completions/zsh/_$tool" || rc=1
	check_all "$tool" fish "$SCAR_ROOT/completions/fish/$tool.fish" || rc=1
	[ "$rc" -ne 0 ] || check_bash_offers "$tool" || rc=1
	[ "$rc" -ne 0 ] || check_fish_offers "$tool" || rc=1
	return $rc
}

@test "scar-train: --help, --version, usage errors" { check_help_version scar-train; }
@test "scar-train: every long option is in --help and scar-train(1)" { check_docs scar-train; }
@test "scar-train: every long option is in the bash, zsh and fish completions" { check_completions scar-train; }
@test "scar-train: completion files load" { check_loads scar-train; }

@test "scar-ckpt: --help, --version, usage errors" { check_help_version scar-ckpt; }
@test "scar-ckpt: every long option is in --help and scar-ckpt(1)" { check_docs scar-ckpt; }
@test "scar-ckpt: every long option is in the bash, zsh and fish completions" { check_completions scar-ckpt; }
@test "scar-ckpt: subcommands are completed" { check_subcommands scar-ckpt; }
@test "scar-ckpt: completion files load" { check_loads scar-ckpt; }

@test "scar-diff: --help, --version, usage errors" { check_help_version scar-diff; }
@test "scar-diff: every long option is in --help and scar-diff(1)" { check_docs scar-diff; }
@test "scar-diff: every long option is in the bash, zsh and fish completions" { check_completions scar-diff; }
@test "scar-diff: completion files load" { check_loads scar-diff; }

@test "scar-inject: --help, --version, usage errors" { check_help_version scar-inject; }
@test "scar-inject: every long option is in --help and scar-inject(1)" { check_docs scar-inject; }
@test "scar-inject: every long option is in the bash, zsh and fish completions" { check_completions scar-inject; }
@test "scar-inject: completion files load" { check_loads scar-inject; }

@test "scar-bound: --help, --version, usage errors" { check_help_version scar-bound; }
@test "scar-bound: every long option is in --help and scar-bound(1)" { check_docs scar-bound; }
@test "scar-bound: every long option is in the bash, zsh and fish completions" { check_completions scar-bound; }
@test "scar-bound: subcommands are completed" { check_subcommands scar-bound; }
@test "scar-bound: completion files load" { check_loads scar-bound; }

# ---- values: model, policy and strategy names, and file names

@test "scar-train: completions offer the models --list-models lists, the policies and strategies" {
	local f=$SCAR_ROOT/completions/bash/scar-train models out w missing=
	models=$(scar-train --list-models | awk '{ print $1 }')
	[ -n "$models" ]
	out=$(bash_complete "$f" scar-train --model "")
	for w in $models; do grep -qxF -- "$w" <<<"$out" || missing="$missing bash:--model:$w"; done
	out=$(bash_complete "$f" scar-train --policy "")
	for w in none full round-robin random priority; do
		grep -qxF -- "$w" <<<"$out" || missing="$missing bash:--policy:$w"
	done
	out=$(bash_complete "$f" scar-train --recovery "")
	for w in partial full none; do
		grep -qxF -- "$w" <<<"$out" || missing="$missing bash:--recovery:$w"
	done
	for w in $models round-robin priority partial; do
		grep -qw -- "$w" "$SCAR_ROOT/completions/zsh/_scar-train" || missing="$missing zsh:$w"
		grep -qw -- "$w" "$SCAR_ROOT/completions/fish/scar-train.fish" || missing="$missing fish:$w"
	done
	# the names completed are the names the tool takes
	for w in round-robin priority partial; do
		scar-train --help | grep -qw -- "$w" || missing="$missing --help:$w"
	done
	[ -z "$missing" ] || { echo "not offered:$missing"; return 1; }
}

@test "bash completes file names where a file is expected" {
	mkdir -p "$BATS_TEST_TMPDIR/empty"
	touch "$BATS_TEST_TMPDIR/empty/run.ckpt" "$BATS_TEST_TMPDIR/empty/run.jsonl"
	local c=$SCAR_ROOT/completions/bash bad=0 out
	check_file() {
		local tool=$1
		shift
		out=$(bash_complete "$c/$tool" "$tool" "$@" run)
		grep -qx 'run\.ckpt\|run\.jsonl' <<<"$out" || { echo "$tool $* run<TAB>: no file offered"; bad=1; }
	}
	check_file scar-train --resume
	check_file scar-train --save
	check_file scar-train --reference
	check_file scar-ckpt info
	check_file scar-ckpt verify
	check_file scar-ckpt export -o
	check_file scar-diff
	check_file scar-diff run.ckpt
	check_file scar-inject
	check_file scar-inject --stale
	check_file scar-bound fit
	check_file scar-bound check
	# and not where a number is
	out=$(bash_complete "$c/scar-train" scar-train --seed run)
	[ -z "$out" ] || { echo "scar-train --seed run<TAB> offers: $out"; bad=1; }
	[ "$bad" -eq 0 ]
}

@test "the subcommand tools answer the same mistake the same way" {
	local t
	for t in scar-ckpt scar-bound; do
		run -2 "$t"
		[[ $output == "usage: $t COMMAND"* ]]
		run -2 "$t" help a b
		[ "${lines[0]}" = "$t: help takes one COMMAND" ]
		run -2 "$t" help nosuch
		[ "${lines[0]}" = "$t: unknown command 'nosuch'" ]
		run -2 "$t" nosuch
		[ "${lines[0]}" = "$t: unknown command 'nosuch'" ]
		run -2 "$t" --help=3
		[ "${lines[0]}" = "$t: option '--help' takes no value" ]
		run -2 "$t" --bogus
		[ "${lines[0]}" = "$t: unknown option '--bogus'" ]
		run -2 "$t" -z
		[ "${lines[0]}" = "$t: unknown option '-z'" ]
		run -0 "$t" help
		[[ $output == *"See '$t help COMMAND' and $t(1)."* ]]
	done
	run -2 scar-ckpt verify --quiet=1
	[ "${lines[0]}" = "scar-ckpt: option '--quiet' takes no value" ]
	run -2 scar-bound evaluate --c
	[ "${lines[0]}" = "scar-bound: option '--c' needs a value" ]
}
