# build_setmeta DIR: DIR/setmeta from tests/setmeta.c against the built
# lib/libscar.a, instrumented as the tree is: rewrites a checkpoint's config
# and extra with valid checksums, for tests of hostile metadata.
build_setmeta() {
	# shellcheck disable=SC2086 # SCAR_SANFLAGS is words
	${CC:-cc} -std=c11 -O2 $SCAR_SANFLAGS -I"$SCAR_ROOT/include" -o "$1/setmeta" \
		"$SCAR_ROOT/tests/setmeta.c" "$SCAR_ROOT/lib/libscar.a" -ljansson -llz4 -lz -lm \
		$SCAR_SANFLAGS
}
