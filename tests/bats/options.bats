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
# subcommand X and main_opts to the tool itself.
long_options() {
	local src="$SCAR_ROOT/cmd/$1.c"
	[ -f "$src" ] || { echo "no source '$src'" >&2; return 1; }
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
	}' "$src"
}

# Subcommands of a tool: the SUB column, without "-".
subcommands() {
	long_options "$1" | awk '$1 != "-" && !seen[$1]++ { print $1 }'
}

# A long option spelt "--NAME" in a file, not as the prefix of a longer one.
has_dashdash() { grep -Eq -- "--$2([^A-Za-z0-9_-]|\$)" "$1"; }
# In mdoc: "Fl Fl NAME" (or "Fl \-NAME", "Fl -NAME").
has_mdoc() { grep -Eq -- "Fl (Fl |\\\\-|-)$2([^A-Za-z0-9_-]|\$)" "$1"; }
# In fish: "-l NAME" or "--long(-option) NAME", quoted or not.
has_fish() { grep -Eq -- "(-l|--long(-option)?)[ =]+['\"]?$2([^A-Za-z0-9_-]|\$)" "$1"; }

# check_all TOOL WHERE PREDICATE FILE: every long option of TOOL passes
# PREDICATE FILE NAME; print the missing ones and fail when any is.
check_all() {
	local tool=$1 where=$2 pred=$3 file=$4 sub name missing=
	[ -f "$file" ] || { echo "$tool: missing file '$file'"; return 1; }
	local opts
	opts=$(long_options "$tool") || return 1
	[ -n "$opts" ] || { echo "$tool: no getopt_long table found in cmd/$tool.c"; return 1; }
	while read -r sub name; do
		case " $missing " in *" --$name "*) continue ;; esac
		"$pred" "$file" "$name" || missing="$missing --$name"
	done <<<"$opts"
	if [ -n "$missing" ]; then
		echo "$tool: long options missing from $where:$missing"
		return 1
	fi
}

# The options a subcommand (or "-") owns, one "--NAME" per line.
options_of() {
	long_options "$1" | awk -v s="$2" '$1 == s { print "--" $2 }'
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
	local tool=$1 sub o missing= rc=0
	for sub in - $(subcommands "$tool"); do
		if ! help_text "$tool" "$sub"; then
			echo "$tool ${sub/#-/}--help: exit status not 0"; rc=1; continue
		fi
		for o in $(options_of "$tool" "$sub"); do
			has_dashdash "$BATS_TEST_TMPDIR/help" "${o#--}" || missing="$missing $o"
		done
		if [ -n "$missing" ]; then
			echo "$tool ${sub/#-/}--help lacks:$missing"; rc=1; missing=
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
	local tool=$1 file=$SCAR_ROOT/completions/bash/$1 sub o out missing= rc=0
	[ -f "$file" ] || { echo "$tool: missing file '$file'"; return 1; }
	for sub in - $(subcommands "$tool"); do
		if [ "$sub" = - ]; then
			out=$(bash_complete "$file" "$tool" --) || { echo "$tool: bash completion failed"; return 1; }
		else
			out=$(bash_complete "$file" "$tool" "$sub" --) || { echo "$tool: bash completion failed"; return 1; }
		fi
		for o in $(options_of "$tool" "$sub"); do
			grep -qxF -- "$o" <<<"$out" || missing="$missing $o"
		done
		if [ -n "$missing" ]; then
			echo "$tool ${sub/#-/}--<TAB> in bash does not offer:$missing"; rc=1; missing=
		fi
	done
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
	SCAR_ROOT=$PWD run -1 check_all scar-fake "the man page" has_mdoc fake.1
	[[ $output == *"--frobnicate"* && $output != *"--help"* ]]
	printf '%s\n' '.It Fl Fl help' '.It Fl Fl frobnicate' > fake.1
	SCAR_ROOT=$PWD run -0 check_all scar-fake "the man page" has_mdoc fake.1
	printf '%s\n' '--frobnicate-more --help' > fake.bash
	SCAR_ROOT=$PWD run -1 check_all scar-fake "bash" has_dashdash fake.bash
	printf '%s\n' "complete -c scar-fake -l help" "complete -c scar-fake -l 'frobnicate'" > fake.fish
	SCAR_ROOT=$PWD run -0 check_all scar-fake "fish" has_fish fake.fish
}

# ---- per tool

@test "scar-train: --help, --version, usage errors" { check_help_version scar-train; }
@test "scar-train: every long option is in --help" { check_help scar-train; }
@test "scar-train: every long option is in scar-train(1)" {
	check_all scar-train "man/scar-train.1" has_mdoc "$SCAR_ROOT/man/scar-train.1"
}
@test "scar-train: every long option is in the bash completion" {
	check_all scar-train "completions/bash/scar-train" has_dashdash "$SCAR_ROOT/completions/bash/scar-train"
	check_bash_offers scar-train
}
@test "scar-train: every long option is in the zsh completion" {
	check_all scar-train "completions/zsh/_scar-train" has_dashdash "$SCAR_ROOT/completions/zsh/_scar-train"
}
@test "scar-train: every long option is in the fish completion" {
	check_all scar-train "completions/fish/scar-train.fish" has_fish "$SCAR_ROOT/completions/fish/scar-train.fish"
}
@test "scar-train: completion files load" { check_loads scar-train; }

@test "scar-ckpt: --help, --version, usage errors" { check_help_version scar-ckpt; }
@test "scar-ckpt: every long option is in --help" { check_help scar-ckpt; }
@test "scar-ckpt: every long option is in scar-ckpt(1)" {
	check_all scar-ckpt "man/scar-ckpt.1" has_mdoc "$SCAR_ROOT/man/scar-ckpt.1"
}
@test "scar-ckpt: every long option is in the bash completion" {
	check_all scar-ckpt "completions/bash/scar-ckpt" has_dashdash "$SCAR_ROOT/completions/bash/scar-ckpt"
	check_bash_offers scar-ckpt
}
@test "scar-ckpt: every long option is in the zsh completion" {
	check_all scar-ckpt "completions/zsh/_scar-ckpt" has_dashdash "$SCAR_ROOT/completions/zsh/_scar-ckpt"
}
@test "scar-ckpt: every long option is in the fish completion" {
	check_all scar-ckpt "completions/fish/scar-ckpt.fish" has_fish "$SCAR_ROOT/completions/fish/scar-ckpt.fish"
}
@test "scar-ckpt: subcommands are completed" { check_subcommands scar-ckpt; }
@test "scar-ckpt: completion files load" { check_loads scar-ckpt; }

@test "scar-diff: --help, --version, usage errors" { check_help_version scar-diff; }
@test "scar-diff: every long option is in --help" { check_help scar-diff; }
@test "scar-diff: every long option is in scar-diff(1)" {
	check_all scar-diff "man/scar-diff.1" has_mdoc "$SCAR_ROOT/man/scar-diff.1"
}
@test "scar-diff: every long option is in the bash completion" {
	check_all scar-diff "completions/bash/scar-diff" has_dashdash "$SCAR_ROOT/completions/bash/scar-diff"
	check_bash_offers scar-diff
}
@test "scar-diff: every long option is in the zsh completion" {
	check_all scar-diff "completions/zsh/_scar-diff" has_dashdash "$SCAR_ROOT/completions/zsh/_scar-diff"
}
@test "scar-diff: every long option is in the fish completion" {
	check_all scar-diff "completions/fish/scar-diff.fish" has_fish "$SCAR_ROOT/completions/fish/scar-diff.fish"
}
@test "scar-diff: completion files load" { check_loads scar-diff; }

@test "scar-inject: --help, --version, usage errors" { check_help_version scar-inject; }
@test "scar-inject: every long option is in --help" { check_help scar-inject; }
@test "scar-inject: every long option is in scar-inject(1)" {
	check_all scar-inject "man/scar-inject.1" has_mdoc "$SCAR_ROOT/man/scar-inject.1"
}
@test "scar-inject: every long option is in the bash completion" {
	check_all scar-inject "completions/bash/scar-inject" has_dashdash "$SCAR_ROOT/completions/bash/scar-inject"
	check_bash_offers scar-inject
}
@test "scar-inject: every long option is in the zsh completion" {
	check_all scar-inject "completions/zsh/_scar-inject" has_dashdash "$SCAR_ROOT/completions/zsh/_scar-inject"
}
@test "scar-inject: every long option is in the fish completion" {
	check_all scar-inject "completions/fish/scar-inject.fish" has_fish "$SCAR_ROOT/completions/fish/scar-inject.fish"
}
@test "scar-inject: completion files load" { check_loads scar-inject; }

@test "scar-bound: --help, --version, usage errors" { check_help_version scar-bound; }
@test "scar-bound: every long option is in --help" { check_help scar-bound; }
@test "scar-bound: every long option is in scar-bound(1)" {
	check_all scar-bound "man/scar-bound.1" has_mdoc "$SCAR_ROOT/man/scar-bound.1"
}
@test "scar-bound: every long option is in the bash completion" {
	check_all scar-bound "completions/bash/scar-bound" has_dashdash "$SCAR_ROOT/completions/bash/scar-bound"
	check_bash_offers scar-bound
}
@test "scar-bound: every long option is in the zsh completion" {
	check_all scar-bound "completions/zsh/_scar-bound" has_dashdash "$SCAR_ROOT/completions/zsh/_scar-bound"
}
@test "scar-bound: every long option is in the fish completion" {
	check_all scar-bound "completions/fish/scar-bound.fish" has_fish "$SCAR_ROOT/completions/fish/scar-bound.fish"
}
@test "scar-bound: subcommands are completed" { check_subcommands scar-bound; }
@test "scar-bound: completion files load" { check_loads scar-bound; }
