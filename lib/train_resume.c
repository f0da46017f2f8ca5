/*
 * train_resume.c - whether a checkpoint can be resumed: its configuration
 * through the model's one validation and its clock. Its own file because
 * the checkpoint store (choosing what --resume DIR loads) and the trainer
 * both ask, and neither should depend on the other for it.
 */
#include <jansson.h>

#include "scar/model.h"
#include "scar/train.h"
#include "train_internal.h"

/* The clock check of train_internal.h. */
int scar_train_clock_ok(const struct scar_state *st)
{
	const json_t *ck = json_object_get(st->extra, "clock");

	return !ck || (json_is_integer(ck) && json_integer_value(ck) >= 0 &&
		       (uint64_t)json_integer_value(ck) >= st->iteration);
}

int scar_train_check_resume(const struct scar_state *st, json_t **config, struct scar_error *err)
{
	struct scar_error e;
	int rc;

	if (config)
		*config = NULL;
	scar_error_clear(&e);
	/* The same validation as --set and --config; only the class of the error differs. */
	if ((rc = scar_model_configure(st->model, st->config, config, &e)))
		return rc == SCAR_ENOMEM ? scar_error_set(err, rc, "out of memory") :
			scar_error_set(err, SCAR_ECORRUPT, "checkpoint metadata: %s", e.msg);
	if (!scar_train_clock_ok(st)) {
		if (config) {
			json_decref(*config);
			*config = NULL;
		}
		return scar_error_set(err, SCAR_ECORRUPT,
				      "checkpoint metadata: extra \"clock\" is not a whole number at or after its iteration %llu",
				      (unsigned long long)st->iteration);
	}
	return 0;
}
