#!/bin/sh
# check-includes.sh [-a ALLOW] [-v] [FILE.c ...] - find cycles among the
# library's source files: lib/X.c uses lib/Y.c when X.c names a function that
# Y.c defines with external linkage. Every cycle (a strongly connected
# component of that graph) is printed with its members and, per edge, the
# functions that make it; the exit status is 1 when there is one, 0 when
# there is none.
#
# Why calls and not #include lines: a public header (include/scar/*.h) is
# often implemented by several files (arrayfile.h by arrayfile_npy.c and
# arrayfile_safetensors.c), and a file includes headers for types alone, so
# an include graph says "may use" for most pairs. The functions a file names
# are what it needs at link time: this is the graph of libscar.a's objects
# (nm) computed from the sources, without a build. Comments, string and
# character literals and preprocessor lines are ignored; a definition is a
# line at column 0, not static, whose parenthesised part is not followed
# by ';' (the OpenBSD-ish style of lib/*.c: "int name(args" on one line).
#
# -a ALLOW: a file of known cycles, one a line as the sorted member list
#    (# comments allowed); those are reported as "known cycle" and do not
#    fail. A known cycle that grew, or a new one, fails. `make check` uses
#    tools/check-includes.allow.
# -v: print the whole graph (edges with their functions) too.
# Default FILEs: lib/*.c of the current directory.
set -eu

allow=
verbose=0
while getopts a:v opt; do
	case $opt in
	a) allow=$OPTARG ;;
	v) verbose=1 ;;
	*) echo "usage: check-includes.sh [-a ALLOW] [-v] [FILE.c ...]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || set -- lib/*.c
for f in "$@"; do
	[ -r "$f" ] || { echo "check-includes.sh: cannot read $f" >&2; exit 2; }
done
if [ -n "$allow" ] && [ ! -r "$allow" ]; then
	echo "check-includes.sh: cannot read $allow" >&2
	exit 2
fi

# The files are read twice: pass 1 finds the definitions, pass 2 the uses.
awk -v allowfile="$allow" -v verbose="$verbose" -v nfiles=$# '
# Strip comments (state in incomment across lines), string and character
# literals from a line.
function strip(s,    out, i, c, n, q) {
	out = ""
	n = length(s)
	for (i = 1; i <= n; i++) {
		c = substr(s, i, 1)
		if (incomment) {
			if (c == "*" && substr(s, i + 1, 1) == "/") { incomment = 0; i++ }
			continue
		}
		if (c == "/" && substr(s, i + 1, 1) == "*") { incomment = 1; i++; out = out " "; continue }
		if (c == "/" && substr(s, i + 1, 1) == "/") break
		if (c == "\"" || c == "\047") {
			q = c
			for (i++; i <= n; i++) {
				c = substr(s, i, 1)
				if (c == "\\") { i++; continue }
				if (c == q) break
			}
			out = out " "
			continue
		}
		out = out c
	}
	return out
}

function balance(s,    t, o, cl) {
	t = s; o = gsub(/\(/, "", t)
	t = s; cl = gsub(/\)/, "", t)
	return o - cl
}

# Record the edges from file f to the definers of the names on line s.
function uses(f, s,    n, w, i, e) {
	gsub(/[^A-Za-z0-9_]+/, " ", s)
	n = split(s, w, " ")
	for (i = 1; i <= n; i++) {
		if (!(w[i] in def) || def[w[i]] == f) continue
		e = f SUBSEP def[w[i]]
		if (!(e in edge)) {
			edge[e] = 1
			adj[f, ++nadj[f]] = def[w[i]]
		}
		if (!((e, w[i]) in why)) {
			why[e, w[i]] = 1
			because[e] = because[e] (because[e] == "" ? "" : " ") w[i]
		}
	}
}

# A local header (lib/*.h) is part of the file that includes it: what the
# bodies of its static inline functions call (names inside braces), the file
# calls; its prototypes are not uses. Nested local includes too, each header
# once per file.
function uses_header(path,    line, s, h, d, saved, depth, t) {
	if ((FILENAME, path) in hseen) return
	hseen[FILENAME, path] = 1
	saved = incomment; incomment = 0
	d = path; sub(/[^\/]*$/, "", d)
	while ((getline line < path) > 0) {
		if (line ~ /^[ \t]*#[ \t]*include[ \t]*"/) {
			h = line; sub(/^[^"]*"/, "", h); sub(/".*/, "", h)
			uses_header(d h)
			continue
		}
		s = strip(line)
		if (s ~ /^[ \t]*#/) continue
		if (depth > 0) uses(FILENAME, s)
		t = s; depth += gsub(/\{/, "", t)
		t = s; depth -= gsub(/\}/, "", t)
	}
	close(path)
	incomment = saved
}

# Tarjan, recursive: the per-node state is in global arrays.
function visit(v,    i, w) {
	index_[v] = idx; low[v] = idx; idx++
	stack[++sp] = v; onstack[v] = 1
	for (i = 1; i <= nadj[v]; i++) {
		w = adj[v, i]
		if (!(w in index_)) {
			visit(w)
			if (low[w] < low[v]) low[v] = low[w]
		} else if (onstack[w] && index_[w] < low[v])
			low[v] = index_[w]
	}
	if (low[v] == index_[v]) {
		ncomp++
		csize[ncomp] = 0
		do {
			w = stack[sp--]; onstack[w] = 0
			comp[w] = ncomp
			cmem[ncomp, ++csize[ncomp]] = w
		} while (w != v)
	}
}

function sortlist(a, n,    i, j, t) {
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
			t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
		}
}

BEGIN {
	if (allowfile != "")
		while ((getline line < allowfile) > 0) {
			sub(/#.*/, "", line)
			gsub(/[ \t]+/, " ", line); sub(/^ /, "", line); sub(/ $/, "", line)
			if (line != "") allowed[line] = 1
		}
}

FNR == 1 {
	nseen++
	pass = nseen <= nfiles ? 1 : 2
	incomment = 0; pending = ""; depth = 0
	if (pass == 1) { files[++nf] = FILENAME }
}

pass == 2 && /^[ \t]*#[ \t]*include[ \t]*"/ {
	h = $0; sub(/^[^"]*"/, "", h); sub(/".*/, "", h)
	d = FILENAME; sub(/[^\/]*$/, "", d)
	uses_header(d h)
	next
}

{
	s = strip($0)
	if (s ~ /^[ \t]*#/) next
}

pass == 1 {
	# A definition candidate: column 0, an identifier before "(", not static.
	if (pending == "" && s ~ /^[A-Za-z_]/ && s !~ /^(static|typedef|extern|__)/ && index(s, "(")) {
		head = substr(s, 1, index(s, "(") - 1)
		if (head ~ /[=;{]/) next
		n = split(head, w, /[^A-Za-z0-9_]+/)
		name = w[n]; if (name == "" && n > 1) name = w[n - 1]
		if (name == "") next
		pending = name; depth = 0
	}
	if (pending != "") {
		depth += balance(s)
		if (depth <= 0) {
			rest = s; sub(/.*\)/, "", rest)
			if (rest !~ /;/) { def[pending] = FILENAME }
			pending = ""
		}
	}
	next
}

pass == 2 { uses(FILENAME, s) }

END {
	idx = 0; sp = 0; ncomp = 0
	sortlist(files, nf)
	for (i = 1; i <= nf; i++)
		if (!(files[i] in index_)) visit(files[i])
	if (verbose)
		for (i = 1; i <= nf; i++)
			for (j = 1; j <= nf; j++)
				if ((files[i], files[j]) in edge)
					printf "%s -> %s (%s)\n", files[i], files[j], because[files[i], files[j]]
	bad = 0; known = 0
	for (c = 1; c <= ncomp; c++) {
		if (csize[c] < 2) continue
		for (i = 1; i <= csize[c]; i++) m[i] = cmem[c, i]
		sortlist(m, csize[c])
		key = m[1]
		for (i = 2; i <= csize[c]; i++) key = key " " m[i]
		if (key in allowed) { printf "known cycle: %s\n", key; known++ }
		else { printf "cycle: %s\n", key; bad++ }
		for (i = 1; i <= csize[c]; i++)
			for (j = 1; j <= csize[c]; j++)
				if ((m[i], m[j]) in edge)
					printf "  %s -> %s (%s)\n", m[i], m[j], because[m[i], m[j]]
	}
	if (bad == 0 && known == 0)
		printf "check-includes: no cycles among %d files\n", nf
	exit bad > 0
}
' "$@" "$@"
