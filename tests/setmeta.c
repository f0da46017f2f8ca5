/*
 * setmeta IN OUT CONFIG [EXTRA]: merge JSON objects into a checkpoint's
 * config and extra (a null value deletes the key) and write it back through
 * the library, so that every checksum is valid. A test tool for hostile
 * metadata (tests/bats/setmeta.bash builds it).
 */
#include <stdio.h>
#include <jansson.h>
#include "scar/ckpt.h"

static int patch(json_t *dst, const char *s)
{
	json_t *p = json_loads(s, 0, NULL), *v;
	const char *k;

	if (!json_is_object(p))
		return fprintf(stderr, "setmeta: bad patch '%s'\n", s), -1;
	json_object_foreach(p, k, v) {
		if (json_is_null(v))
			json_object_del(dst, k);
		else
			json_object_set(dst, k, v);
	}
	json_decref(p);
	return 0;
}

int main(int argc, char **argv)
{
	struct scar_ckpt_save_opts so;
	struct scar_state *st;
	struct scar_error err;

	scar_ckpt_save_opts_init(&so);
	so.sync = 0;	/* scratch files: no fsync */
	if (argc < 4)
		return fprintf(stderr, "usage: setmeta IN OUT CONFIG [EXTRA]\n"), 2;
	scar_error_clear(&err);
	if (scar_ckpt_load(argv[1], &st, &err))
		return fprintf(stderr, "setmeta: %s\n", err.msg), 2;
	if (patch(st->config, argv[3]) || (argc > 4 && patch(st->extra, argv[4])))
		return 2;
	if (scar_ckpt_save(st, argv[2], &so, &err))
		return fprintf(stderr, "setmeta: %s\n", err.msg), 2;
	scar_state_free(st);
	return 0;
}
