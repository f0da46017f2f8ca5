/*
 * scar/numeric.h - accurate sums and norms: compensated (Neumaier) sums,
 * sums of squares that neither overflow nor underflow, and the streaming
 * norms of A - B over arrays of any dtype. scar/diff.h compares snapshots
 * with them, scar/perturb.h measures and sizes perturbations with them;
 * scar/diff.h describes their accuracy and range.
 */
#ifndef SCAR_NUMERIC_H
#define SCAR_NUMERIC_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "scar/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A compensated (Neumaier) running sum. Zero-initialise to start. */
struct scar_sum {
	double s, c;
};

static inline void scar_sum_add(struct scar_sum *a, double x)
{
	double t = a->s + x;

	if (!isfinite(t)) {	/* the compensation of an Inf would be NaN */
		a->s = t;
		return;
	}

	if ((a->s < 0 ? -a->s : a->s) >= (x < 0 ? -x : x))
		a->c += (a->s - t) + x;
	else
		a->c += (x - t) + a->s;
	a->s = t;
}

static inline double scar_sum_value(const struct scar_sum *a)
{
	return a->s + a->c;
}

/*
 * A sum of squares kept as q * 2^e, 0.5 <= q < 1 (or q == 0; Inf or NaN
 * once a term is), so that it neither overflows nor underflows. Zero-
 * initialise to start.
 */
struct scar_sumsq {
	double q;
	int e;
};

/* Add x*x, or ss (itself a sum of squares, >= 0), or another scar_sumsq. */
void scar_sumsq_add(struct scar_sumsq *s, double x);
void scar_sumsq_add_sum(struct scar_sumsq *s, double ss);
void scar_sumsq_merge(struct scar_sumsq *s, const struct scar_sumsq *o);
/* sqrt of the sum: Inf when it exceeds the largest double. */
double scar_sumsq_root(const struct scar_sumsq *s);
/*
 * sqrt(plain), plain a sum of squares accumulated in doubles, unless that
 * overflowed or may have underflowed: then the root of x, the same sum
 * kept by scar_sumsq. Normal-range results are exactly sqrt(plain).
 */
double scar_sumsq_pick(double plain, const struct scar_sumsq *x);

struct scar_norms {
	double l1, l2, linf, rel_l2;
	double norm_a, norm_b;		/* ||A||, ||B|| over the compared elements */
	uint64_t changed, elements;
};

/* Accumulates norms of A - B over any number of array pieces. */
struct scar_diff_acc {
	struct scar_sum l1, l2sq, asq, bsq;
	struct scar_sumsq x2, xa, xb;	/* l2sq, asq, bsq without overflow */
	double linf;
	uint64_t changed, elements;
};

/* Zero an accumulator. */
void scar_diff_acc_init(struct scar_diff_acc *acc);
/*
 * Add n elements of a and b (both of dtype dt, native byte order) to acc.
 * Unknown dtypes add nothing.
 */
void scar_diff_acc_add(struct scar_diff_acc *acc, const void *a, const void *b,
		       enum scar_dtype dt, uint64_t n);
/* Add everything of from into into. */
void scar_diff_acc_merge(struct scar_diff_acc *into, const struct scar_diff_acc *from);
/* The norms of what acc has seen. */
void scar_diff_acc_result(const struct scar_diff_acc *acc, struct scar_norms *out);

/* Accurate L2 norm of n elements of dtype dt. */
double scar_norm_l2(const void *a, enum scar_dtype dt, uint64_t n);

#ifdef __cplusplus
}
#endif

#endif
