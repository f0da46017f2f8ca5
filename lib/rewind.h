/*
 * rewind.h - the state's "rewind" record of recovery "rewind" (scar(7),
 * "Recovery beyond the saved view"), libscar-internal: the one reader and
 * validation, for the models that follow it, the trainer that writes it and
 * the checkpoint store that rebuilds the saved view's row ages from it.
 *
 * A decaying step schedule lr(e) counts the updates a parameter has had.
 * A row restored from a saved value has had fewer than the iteration says:
 * its own count lags. The record is the state's extra "rewind": an object
 * of param tensor names, each an array of [row, lag] in ascending row
 * order, 1 <= lag <= the state's iteration: at state iteration k the row
 * steps at the schedule's point k - lag (the updates its value has had),
 * the others at k. As k grows, lr(k - lag) / lr(k) goes to 1: the row
 * converges to the global schedule. Rows not listed have lag 0.
 */
#ifndef SCAR_REWIND_H
#define SCAR_REWIND_H

#include <stddef.h>
#include <stdint.h>

#include "scar/error.h"
#include "scar/tensor.h"

struct scar_rewind_row {
	uint64_t row, clock;	/* clock: the schedule point of its step at k, k - lag */
};

/*
 * The rows of tensor name (rows rows) that step at their own point at
 * state iteration k, in ascending order, into *out (free it; NULL when
 * none). SCAR_ECORRUPT for an entry that is not [row, lag] with
 * row < rows, 1 <= lag <= k, rows ascending.
 */
int scar_rewind_rows(const struct scar_state *st, const char *name, uint64_t rows, uint64_t k,
		     struct scar_rewind_row **out, size_t *n, struct scar_error *err);

/* The whole record against st: every key a param tensor, every entry valid at st's iteration. */
int scar_rewind_check(const struct scar_state *st, struct scar_error *err);

/*
 * Where the rows of param tensor t of st stand, as a checkpoint of st
 * saves them: for each row selected by sel (NULL: all), age[2 r] = st's
 * iteration and age[2 r + 1] = the updates its value has had (the
 * iteration less its lag).
 */
int scar_rewind_ages(const struct scar_state *st, const struct scar_tensor *t, const uint8_t *sel,
		     uint64_t *age, struct scar_error *err);

#endif
