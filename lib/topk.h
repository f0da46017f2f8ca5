/*
 * topk.h - choosing the rows a priority checkpoint saves (internal).
 */
#ifndef SCAR_TOPK_H
#define SCAR_TOPK_H

#include <stddef.h>
#include <stdint.h>

#include "scar/tensor.h"

/* A row and its priority: how far its value is from its saved value. */
struct scar_prio {
	double p;
	uint64_t row;
};

/*
 * Reorder pr[0, n) so that its first k entries are the k first in the
 * priority order - higher p first, ties by the lower row, so the chosen set
 * is unique - in no particular order among themselves. p must not be NaN.
 */
void scar_prio_select(struct scar_prio *pr, size_t n, size_t k);

/*
 * The priority of row r: the squared L2 distance between its value in cur
 * and in saved (same dtype and shape). A plain sum in double: the terms are
 * non-negative, so its relative error is at most the row length times 2^-53,
 * far below any difference that matters for the choice. NaN when a value is.
 */
double scar_row_priority(const struct scar_tensor *cur, const struct scar_tensor *saved,
			 uint64_t r);

#endif
