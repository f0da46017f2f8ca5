#!/bin/sh
# deps.sh - install the Debian packages scar's build and tests need, once.
# Runs apt-get through sudo when not root; does nothing when all are there.
set -eu
pkgs="make gcc clang libjansson-dev liblz4-dev lz4 zlib1g-dev pkg-config bats bats-assert
bats-support mandoc valgrind gnuplot-nox jq libopenmpi-dev openmpi-bin"
# Optional extras (benchmarks' peers, real data, MPI) with SCAR_DEPS_ALL=1.
if [ "${SCAR_DEPS_ALL:-0}" = 1 ]; then
	pkgs="$pkgs python3-numpy python3-sklearn dataset-fashion-mnist hyperfine
libopenmpi-dev openmpi-bin libclang-rt-14-dev libopenblas0-pthread python3-gensim time zsh fish
python3-jsonschema python3-torch"
fi
missing=
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps: installing$missing" >&2
if [ "$(id -u)" = 0 ]; then sudo=; else sudo=sudo; fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing
