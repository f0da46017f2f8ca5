/*
 * train_rewind.c - what recovery "rewind" needs from the trainer: where
 * each saved-view row stands (the iteration it was saved at and the
 * updates its value had had), and the rewind record a recovery leaves in
 * the state for the model's step (lib/rewind.h; scar(7), "Recovery beyond
 * the saved view").
 *
 * A row lost at state iteration T whose saved value had had p updates
 * (p = its iteration s, less its lag then) goes on from there: its lag
 * becomes T - p ([row, T - p]), and it steps at the schedule's points
 * p, p + 1, ... as the iterations go on. Only iteration numbers are read,
 * never the lost values. The record lives in the state, so checkpoints
 * carry it and a resume goes on exactly.
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

/*
 * The record a resumed checkpoint brought, or the run wrote, checked after
 * every step and at the start: the one validation of it, for every model
 * (one without a decaying step has no business with one).
 */
int scar_train_rewind_check(struct scar_train_ctx *c)
{
	int rc;

	if (!json_object_get(c->st->extra, "rewind"))
		return 0;
	if ((rc = scar_rewind_check(c->st, c->err)))
		return rc;
	if (!c->def->rewinds)
		return scar_error_set(c->err, SCAR_ECORRUPT,
				      "state's extra \"rewind\" is for a model with a decaying step; %s has none",
				      c->def->name);
	return 0;
}

/*
 * After the lost rows were restored from the saved view at state iteration
 * start: each lost row whose saved value had had fewer than start updates
 * lags (its entry replaces one an earlier failure left for the same row;
 * a row restored to a value with no lag has none). *rows gets how many.
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
			uint64_t updates = c->ages[i][2 * r + 1];
			json_t *t = NULL;

			if (had)
				j++;
			if (lost[scar_shard_of_row(r, st->shards)]) {
				if (updates < start) {
					t = json_pack("[I, I]", (json_int_t)r, (json_int_t)(start - updates));
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
