/*
 * train_rewind.c - what recovery "rewind" needs from the trainer: the
 * state iteration each saved-view row comes from, and the rewind record a
 * recovery leaves in the state for the model's step (scar(7), "Recovery
 * beyond the saved view").
 *
 * The record is the state's extra "rewind": an object of param tensor
 * names, each an array of [row, origin, start] triples: row was restored
 * at state iteration start from a saved value of state iteration origin
 * (origin < start). While k - start < start - origin, the row's step at
 * state iteration k is the schedule's at origin + (k - start): it redoes
 * the updates it missed at the step sizes they had; after that it is on the
 * global schedule again. It lives in the state so that checkpoints carry
 * it and a resume goes on exactly; it needs only the iteration numbers of
 * the saved values, never the lost ones.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "scar/shard.h"
#include "scar/train.h"
#include "train_internal.h"

static int is_param(const struct scar_tensor *x)
{
	return x->role == SCAR_ROLE_PARAM;
}

int scar_train_ages_init(struct scar_train_ctx *c, uint64_t iter)
{
	const struct scar_state *st = c->st;

	scar_train_ages_free(c);
	c->ages = calloc(st->ntensors ? st->ntensors : 1, sizeof(*c->ages));
	if (!c->ages)
		return scar_error_set(c->err, SCAR_ENOMEM, "out of memory");
	c->nages = st->ntensors;
	for (size_t i = 0; i < st->ntensors; i++) {
		uint64_t rows = scar_tensor_rows(st->tensors[i]);

		if (!is_param(st->tensors[i]))
			continue;
		c->ages[i] = malloc((rows ? rows : 1) * sizeof(**c->ages));
		if (!c->ages[i])
			return scar_error_set(c->err, SCAR_ENOMEM, "out of memory");
		for (uint64_t r = 0; r < rows; r++)
			c->ages[i][r] = iter;
	}
	return 0;
}

void scar_train_ages_mark(struct scar_train_ctx *c, size_t ti, const uint8_t *sel, uint64_t iter)
{
	uint64_t rows;

	if (!c->ages || ti >= c->nages || !c->ages[ti])
		return;
	rows = scar_tensor_rows(c->st->tensors[ti]);
	for (uint64_t r = 0; r < rows; r++)
		if (!sel || sel[r])
			c->ages[ti][r] = iter;
}

void scar_train_ages_free(struct scar_train_ctx *c)
{
	for (size_t i = 0; c->ages && i < c->nages; i++)
		free(c->ages[i]);
	free(c->ages);
	c->ages = NULL;
	c->nages = 0;
}

/* Whether triple e = [row, origin, start] still rewinds at state iteration k. */
static int still_rewinding(const json_t *e, uint64_t k)
{
	uint64_t origin = (uint64_t)json_integer_value(json_array_get(e, 1));
	uint64_t start = (uint64_t)json_integer_value(json_array_get(e, 2));

	return k - start < start - origin;
}

/*
 * Drop the triples whose window ended by state iteration k, and the
 * record when none is left, so that a finished rewind leaves the state as
 * a run without one would have it.
 */
int scar_train_rewind_prune(struct scar_train_ctx *c)
{
	json_t *rw = json_object_get(c->st->extra, "rewind"), *rows;
	uint64_t k = c->st->iteration;
	const char *name;
	void *tmp;

	if (!rw)
		return 0;
	json_object_foreach_safe(rw, tmp, name, rows) {
		size_t i = 0;

		while (i < json_array_size(rows))
			if (still_rewinding(json_array_get(rows, i), k))
				i++;
			else
				json_array_remove(rows, i);
		if (!json_array_size(rows))
			json_object_del(rw, name);
	}
	if (!json_object_size(rw))
		json_object_del(c->st->extra, "rewind");
	return 0;
}

/*
 * After the lost rows were restored from the saved view at state iteration
 * start: each lost row whose saved value is older than start rewinds (its
 * triple replaces one an earlier failure left for the same row). *rows gets
 * how many.
 */
int scar_train_rewind_begin(struct scar_train_ctx *c, const uint8_t *lost, uint64_t *rows)
{
	struct scar_state *st = c->st;
	uint64_t start = st->iteration;
	json_t *rw = json_object_get(st->extra, "rewind");

	*rows = 0;
	if (!c->ages)
		return scar_error_set(c->err, SCAR_EINVAL, "rewind: the saved view's iterations are unknown");
	if (!rw) {
		if (json_object_set_new(st->extra, "rewind", json_object()))
			return scar_error_set(c->err, SCAR_ENOMEM, "out of memory");
		rw = json_object_get(st->extra, "rewind");
	}
	for (size_t i = 0; i < st->ntensors && i < c->nages; i++) {
		const struct scar_tensor *x = st->tensors[i];
		json_t *old = json_object_get(rw, x->name), *fresh;
		uint64_t n = scar_tensor_rows(x);

		if (!is_param(x) || !c->ages[i])
			continue;
		fresh = json_array();
		if (!fresh)
			return scar_error_set(c->err, SCAR_ENOMEM, "out of memory");
		/* Triples of rows not lost now stay, in row order with the new ones. */
		for (uint64_t r = 0, j = 0; r < n; r++) {
			const json_t *e = json_array_get(old, j);
			int had = e && (uint64_t)json_integer_value(json_array_get(e, 0)) == r;
			json_t *t = NULL;

			if (had)
				j++;
			if (lost[scar_shard_of_row(r, st->shards)]) {
				if (c->ages[i][r] < start) {
					t = json_pack("[I, I, I]", (json_int_t)r,
						      (json_int_t)c->ages[i][r], (json_int_t)start);
					(*rows)++;
				}
			} else if (had) {
				t = json_deep_copy(e);
			}
			if ((had || t) && t && json_array_append_new(fresh, t)) {
				json_decref(fresh);
				return scar_error_set(c->err, SCAR_ENOMEM, "out of memory");
			}
		}
		if (json_array_size(fresh)) {
			if (json_object_set_new(rw, x->name, fresh))
				return scar_error_set(c->err, SCAR_ENOMEM, "out of memory");
		} else {
			json_decref(fresh);
			json_object_del(rw, x->name);
		}
	}
	if (!json_object_size(rw))
		json_object_del(st->extra, "rewind");
	return 0;
}
