/*
 * train_rewind.c - what recovery "rewind" needs from the trainer: where
 * each saved-view row stands (the iteration it was saved at and the step
 * schedule's point it had reached), and the rewind record a recovery
 * leaves in the state for the model's step (lib/rewind.h; scar(7),
 * "Recovery beyond the saved view").
 *
 * A row lost at state iteration T whose saved value is from iteration s,
 * at schedule point p (p = s unless it was rewinding then), missed the
 * T - s updates of s..T-1: it redoes them at the points p, p + 1, ...
 * ([row, p, T, T - s]), then follows the global schedule again. Only
 * iteration numbers are read, never the lost values. The record lives in
 * the state, so checkpoints carry it and a resume goes on exactly.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "scar/shard.h"
#include "scar/train.h"
#include "rewind.h"
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
		c->ages[i] = malloc((rows ? 2 * rows : 1) * sizeof(**c->ages));
		if (!c->ages[i])
			return scar_error_set(c->err, SCAR_ENOMEM, "out of memory");
		for (uint64_t r = 0; r < 2 * rows; r++)
			c->ages[i][r] = iter;
	}
	return 0;
}

int scar_train_ages_mark(struct scar_train_ctx *c, size_t ti, const uint8_t *sel)
{
	if (!c->ages || ti >= c->nages || !c->ages[ti])
		return 0;
	return scar_rewind_ages(c->st, c->st->tensors[ti], sel, c->ages[ti], c->err);
}

void scar_train_ages_free(struct scar_train_ctx *c)
{
	for (size_t i = 0; c->ages && i < c->nages; i++)
		free(c->ages[i]);
	free(c->ages);
	c->ages = NULL;
	c->nages = 0;
}

/* Whether entry e = [row, origin, start, length] still rewinds at state iteration k. */
static int still_rewinding(const json_t *e, uint64_t k)
{
	uint64_t start = (uint64_t)json_integer_value(json_array_get(e, 2));
	uint64_t length = (uint64_t)json_integer_value(json_array_get(e, 3));

	return k - start < length;
}

/*
 * Check the record (every step: the one validation of a record a resumed
 * checkpoint brought), then drop the entries whose window ended by the
 * state's iteration, and the record when none is left, so that a finished
 * rewind leaves the state as a run without one would have it.
 */
int scar_train_rewind_prune(struct scar_train_ctx *c)
{
	json_t *rw = json_object_get(c->st->extra, "rewind"), *rows;
	uint64_t k = c->st->iteration;
	const char *name;
	void *tmp;
	int rc;

	if (!rw)
		return 0;
	if ((rc = scar_rewind_check(c->st, c->err)))
		return rc;
	if (!c->def->rewinds)
		return scar_error_set(c->err, SCAR_ECORRUPT,
				      "state's extra \"rewind\" is for a model with a decaying step; %s has none",
				      c->def->name);
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
 * start: each lost row saved before start rewinds (its entry replaces one
 * an earlier failure left for the same row). *rows gets how many.
 */
int scar_train_rewind_begin(struct scar_train_ctx *c, const uint8_t *lost, uint64_t *rows)
{
	struct scar_state *st = c->st;
	uint64_t start = st->iteration;
	json_t *rw;
	int rc;

	*rows = 0;
	if (!c->ages)
		return scar_error_set(c->err, SCAR_EINVAL, "rewind: the saved view's iterations are unknown");
	if ((rc = scar_rewind_check(st, c->err)))
		return rc;
	rw = json_object_get(st->extra, "rewind");
	if (!rw) {
		if (json_object_set_new(st->extra, "rewind", json_object()))
			return scar_error_set(c->err, SCAR_ENOMEM, "out of memory");
		rw = json_object_get(st->extra, "rewind");
	}
	for (size_t i = 0; i < st->ntensors && i < c->nages; i++) {
		const struct scar_tensor *x = st->tensors[i];
		json_t *old = json_object_get(rw, x->name), *fresh;
		uint64_t n = scar_tensor_rows(x);
		size_t j = 0;

		if (!is_param(x) || !c->ages[i])
			continue;
		fresh = json_array();
		if (!fresh)
			return scar_error_set(c->err, SCAR_ENOMEM, "out of memory");
		/* Entries of rows not lost now stay; rows ascending (checked above). */
		for (uint64_t r = 0; r < n; r++) {
			const json_t *e = json_array_get(old, j);
			int had = e && (uint64_t)json_integer_value(json_array_get(e, 0)) == r;
			uint64_t saved_at = c->ages[i][2 * r], point = c->ages[i][2 * r + 1];
			json_t *t = NULL;

			if (had)
				j++;
			if (lost[scar_shard_of_row(r, st->shards)]) {
				if (saved_at < start) {
					t = json_pack("[I, I, I, I]", (json_int_t)r, (json_int_t)point,
						      (json_int_t)start, (json_int_t)(start - saved_at));
					(*rows)++;
					if (!t)
						goto nomem;
				}
			} else if (had && !(t = json_deep_copy(e))) {
				goto nomem;
			}
			if (t && json_array_append_new(fresh, t))
				goto nomem;
			continue;
nomem:
			json_decref(fresh);
			return scar_error_set(c->err, SCAR_ENOMEM, "out of memory");
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
