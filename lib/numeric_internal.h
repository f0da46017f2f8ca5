/*
 * numeric_internal.h - the block kernels behind scar/numeric.h, for diff.c,
 * which folds rows of them itself (a row's norms, small rows batched).
 */
#ifndef SCAR_NUMERIC_INTERNAL_H
#define SCAR_NUMERIC_INTERNAL_H

#include <stdint.h>

#include "scar/numeric.h"

#define SCAR_NUM_BLOCK 1024	/* terms per plain partial sum */

/* Plain sums of one block or row; accurate because short. */
struct scar_part {
	double l1, l2, aa, bb, mx;
	uint64_t ch, n;
	struct scar_sumsq x2, xa, xb;	/* l2, aa, bb scaled: see part_ranges */
};

/* Sums of a - b (and of a, b) over n elements of one dtype into *p. */
typedef void (*scar_kernel_fn)(const void *a, const void *b, uint64_t n, struct scar_part *p);

/* The kernel of a dtype; NULL for an unknown one. */
scar_kernel_fn scar_num_kernel(enum scar_dtype dt);
/* Add one part's sums to acc. */
void scar_diff_acc_add_part(struct scar_diff_acc *acc, const struct scar_part *p);
/* The norms from plain sums (and their scaled copies where those overflowed). */
void scar_norms_from(double l1, double l2sq, double asq, double bsq, double linf,
		     uint64_t changed, uint64_t n, const struct scar_sumsq *x2,
		     const struct scar_sumsq *xa, const struct scar_sumsq *xb,
		     struct scar_norms *out);

#endif
