/*
 * ckpt-roundtrip.c - build a training state by hand, save it as a scar
 * checkpoint, verify the file, load it back and check that every tensor
 * came back bit for bit.
 *
 *     ckpt-roundtrip [FILE]        (default roundtrip.ckpt)
 *
 * Exit status: 0 identical, 1 something differs, 2 an error.
 * Uses only include/scar; build with
 *     cc ckpt-roundtrip.c $(pkg-config --cflags --libs scar)
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <scar/ckpt.h>
#include <scar/diff.h>
#include <scar/rng.h>
#include <scar/tensor.h>

/* Add a new tensor of the given layout to st; its data is returned in *data. */
static int add_tensor(struct scar_state *st, const char *name, enum scar_dtype dt,
		      enum scar_role role, int ndim, const uint64_t *shape, void **data,
		      struct scar_error *err)
{
	struct scar_tensor *t;
	int rc = scar_tensor_new(&t, name, dt, role, ndim, shape, err);

	if (rc)
		return rc;
	*data = t->data;
	return scar_state_add(st, t, err);	/* st owns t from here, also on failure */
}

static int build(struct scar_state **out, struct scar_error *err)
{
	struct scar_state *st;
	struct scar_rng rng;
	uint64_t wshape[2] = { 1000, 16 }, bshape[1] = { 10 }, rshape[1] = { SCAR_RNG_WORDS };
	float *w;
	double *b;
	uint64_t *words;
	int rc;

	if ((rc = scar_state_new(&st, "demo", err)))
		return rc;
	st->iteration = 42;
	st->shards = 4;
	json_object_set_new(st->config, "lr", json_real(0.1));

	scar_rng_seed(&rng, 7);
	if ((rc = add_tensor(st, "w", SCAR_F32, SCAR_ROLE_PARAM, 2, wshape, (void **)&w, err)))
		goto fail;
	for (uint64_t i = 0; i < wshape[0] * wshape[1]; i++)
		w[i] = (float)scar_rng_normal(&rng);
	if ((rc = add_tensor(st, "b", SCAR_F64, SCAR_ROLE_PARAM, 1, bshape, (void **)&b, err)))
		goto fail;
	for (uint64_t i = 0; i < bshape[0]; i++)
		b[i] = sin((double)i);
	/* Worker-side state travels too, so a resume is exact: here an RNG. */
	if ((rc = add_tensor(st, "rng", SCAR_U64, SCAR_ROLE_STATE, 1, rshape, (void **)&words, err)))
		goto fail;
	scar_rng_save(&rng, words);
	*out = st;
	return 0;
fail:
	scar_state_free(st);
	return rc;
}

/* Number of tensors of b that differ from a's (by layout or bytes); -1 on a missing one. */
static int compare(const struct scar_state *a, const struct scar_state *b)
{
	int bad = 0;

	if (strcmp(a->model, b->model) || a->iteration != b->iteration ||
	    a->shards != b->shards || a->ntensors != b->ntensors ||
	    !json_equal(a->config, b->config)) {
		fprintf(stderr, "ckpt-roundtrip: metadata differs\n");
		bad++;
	}
	for (size_t i = 0; i < a->ntensors; i++) {
		const struct scar_tensor *ta = a->tensors[i];
		const struct scar_tensor *tb = scar_state_find(b, ta->name);

		if (!tb) {
			fprintf(stderr, "ckpt-roundtrip: tensor '%s' missing\n", ta->name);
			return -1;
		}
		if (!scar_tensor_same_layout(ta, tb) || ta->role != tb->role ||
		    memcmp(ta->data, tb->data, scar_tensor_bytes(ta))) {
			fprintf(stderr, "ckpt-roundtrip: tensor '%s' differs\n", ta->name);
			bad++;
		}
	}
	return bad;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "roundtrip.ckpt";
	struct scar_state *st = NULL, *back = NULL;
	struct scar_diff_result *d = NULL;
	struct scar_diff_opts dopts;
	struct scar_error err;
	int rc, bad, status = 2;

	scar_error_clear(&err);
	if (argc > 2) {
		fprintf(stderr, "usage: ckpt-roundtrip [FILE]\n");
		return 2;
	}
	if ((rc = build(&st, &err)) ||
	    (rc = scar_ckpt_save(st, path, NULL, &err)) ||	/* atomic: temp file, fsync, rename */
	    (rc = scar_ckpt_verify(path, &err)) ||		/* every checksum */
	    (rc = scar_ckpt_load(path, &back, &err)))
		goto out;

	bad = compare(st, back);
	/* The diff API says the same in numbers: all tensors, state ones too. */
	scar_diff_opts_init(&dopts);
	dopts.all = 1;
	if ((rc = scar_diff_states(st, back, &dopts, &d, &err)))
		goto out;
	printf("%s: model %s, iteration %llu, %u shards, %zu tensors, %llu elements, "
	       "l2 %g, %s\n", path, back->model, (unsigned long long)back->iteration,
	       back->shards, back->ntensors, (unsigned long long)d->total.elements,
	       d->total.l2, bad ? "DIFFERENT" : "identical");
	status = bad || d->total.changed ? 1 : 0;
out:
	if (rc)
		fprintf(stderr, "ckpt-roundtrip: %s%s%s\n", err.file[0] ? err.file : "",
			err.file[0] ? ": " : "", err.msg[0] ? err.msg : scar_strerror(rc));
	scar_diff_result_free(d);
	scar_state_free(back);
	scar_state_free(st);
	return status;
}
