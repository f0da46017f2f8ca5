/*
 * ckpt_apply.c - applying a partial checkpoint over a base: the rows a
 * partial holds replace the base's, which is how the "saved view" of SCAR's
 * partial checkpoints is rebuilt (scar-ckpt(5), APPLYING PARTIAL CHECKPOINTS).
 */
#include <string.h>

#include "scar/ckpt.h"

int scar_ckpt_apply(struct scar_state *base, const struct scar_state *over,
		    struct scar_error *err)
{
	json_t *applied, *it;

	if (strcmp(base->model, over->model))
		return scar_error_set(err, SCAR_EMISMATCH, "model '%s' cannot apply over model '%s'",
				      over->model, base->model);
	if (base->shards != over->shards)
		return scar_error_set(err, SCAR_EMISMATCH, "%u shards cannot apply over %u shards",
				      over->shards, base->shards);
	if (over->iteration < base->iteration)
		return scar_error_set(err, SCAR_EMISMATCH,
				      "iteration %llu is older than the base's iteration %llu",
				      (unsigned long long)over->iteration,
				      (unsigned long long)base->iteration);
	/* Check everything before changing anything. */
	for (size_t i = 0; i < over->ntensors; i++) {
		const struct scar_tensor *o = over->tensors[i];
		const struct scar_tensor *b = scar_state_find(base, o->name);

		if (!b)
			return scar_error_set(err, SCAR_EMISMATCH, "tensor '%s' is not in the base",
					      o->name);
		if (!scar_tensor_same_layout(b, o) || b->role != o->role)
			return scar_error_set(err, SCAR_EMISMATCH,
					      "tensor '%s' differs in dtype, shape or role", o->name);
	}
	applied = json_object_get(base->extra, "applied");
	if (applied && !json_is_array(applied))
		return scar_error_set(err, SCAR_EMISMATCH, "base extra.applied is not an array");
	it = json_integer((json_int_t)over->iteration);
	if (!it)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	if (!applied) {
		applied = json_array();
		if (!applied || json_object_set_new(base->extra, "applied", applied)) {
			json_decref(it);
			return scar_error_set(err, SCAR_ENOMEM, "out of memory");
		}
	}
	if (json_array_append_new(applied, it))
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");

	for (size_t i = 0; i < over->ntensors; i++) {
		const struct scar_tensor *o = over->tensors[i];
		struct scar_tensor *b = scar_state_find(base, o->name);
		uint64_t rows = scar_tensor_rows(o), all = 1;
		size_t rb = scar_tensor_row_bytes(o);

		if (!o->present) {
			memcpy(b->data, o->data, scar_tensor_bytes(o));
			free(b->present);
			b->present = NULL;
			continue;
		}
		for (uint64_t r = 0; r < rows;) {
			uint64_t a;

			while (r < rows && !o->present[r])
				r++;
			a = r;
			while (r < rows && o->present[r])
				r++;
			if (r > a) {
				memcpy((char *)b->data + a * rb, (const char *)o->data + a * rb,
				       (size_t)(r - a) * rb);
				if (b->present)
					memset(b->present + a, 1, (size_t)(r - a));
			}
		}
		for (uint64_t r = 0; b->present && r < rows && all; r++)
			all = b->present[r] != 0;
		if (b->present && all) {
			free(b->present);
			b->present = NULL;
		}
	}
	base->iteration = over->iteration;
	/*
	 * The clock goes with the iteration: a base's older clock would put the
	 * result's clock before its iteration, which a resume rightly refuses.
	 */
	{
		json_t *clock = over->extra ? json_object_get(over->extra, "clock") : NULL;

		if (json_is_integer(clock) && base->extra &&
		    json_object_set(base->extra, "clock", clock))
			return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	}
	return 0;
}
