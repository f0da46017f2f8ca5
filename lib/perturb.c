/* perturb.c - perturbations of a training state (see scar/perturb.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scar/numeric.h"
#include "scar/perturb.h"
#include "scar/shard.h"

void scar_select_init(struct scar_select *s)
{
	s->tensor = NULL;
	s->shard = -1;
	s->row_lo = 0;
	s->row_hi = UINT64_MAX;
}

static int tensor_in(const struct scar_tensor *t, const struct scar_select *sel)
{
	if (sel->tensor)
		return strcmp(t->name, sel->tensor) == 0;
	return t->role == SCAR_ROLE_PARAM;
}

int scar_select_row(const struct scar_tensor *t, uint32_t S, const struct scar_select *sel,
		    uint64_t r)
{
	if (r < sel->row_lo || r >= sel->row_hi || !scar_tensor_has_row(t, r))
		return 0;
	if (sel->shard >= 0 &&
	    scar_shard_of_row(r, scar_tensor_shards(t, S ? S : 1)) != (uint64_t)sel->shard)
		return 0;
	return 1;
}

/* "A:B", "A:" when open-ended, for messages. */
static const char *range_str(const struct scar_select *sel, char *buf, size_t n)
{
	if (sel->row_hi == UINT64_MAX)
		snprintf(buf, n, "%llu:", (unsigned long long)sel->row_lo);
	else
		snprintf(buf, n, "%llu:%llu", (unsigned long long)sel->row_lo,
			 (unsigned long long)sel->row_hi);
	return buf;
}

int scar_select_check_rows(const char *name, uint64_t rows, uint32_t shards,
			   const struct scar_select *sel, struct scar_error *err)
{
	uint64_t hi = sel->row_hi < rows ? sel->row_hi : rows;
	char r[48];

	if (sel->row_lo >= sel->row_hi)
		return scar_error_set(err, SCAR_ERANGE, "empty row range %s",
				      range_str(sel, r, sizeof(r)));
	if (sel->row_lo >= rows || (sel->row_hi != UINT64_MAX && sel->row_hi > rows))
		return scar_error_set(err, SCAR_ERANGE,
				      "rows %s are out of range for tensor '%s' (%llu rows)",
				      range_str(sel, r, sizeof(r)), name, (unsigned long long)rows);
	if (sel->shard < 0)
		return 0;
	if ((uint64_t)sel->shard >= shards)
		return scar_error_set(err, SCAR_ERANGE, "no shard %lld of tensor '%s' (%u shards)",
				      (long long)sel->shard, name, shards);
	/* the first row of the shard at or after row_lo */
	if (sel->row_lo + ((uint64_t)sel->shard + shards - sel->row_lo % shards) % shards >= hi)
		return scar_error_set(err, SCAR_ERANGE,
				      "rows %s of tensor '%s' (%llu rows) hold no row of shard %lld of %u",
				      range_str(sel, r, sizeof(r)), name, (unsigned long long)rows,
				      (long long)sel->shard, shards);
	return 0;
}

int scar_select_check(const struct scar_state *st, const struct scar_select *sel,
		      struct scar_error *err)
{
	uint32_t S = st->shards ? st->shards : 1;
	const struct scar_tensor *t = NULL;

	if (sel->tensor) {
		if (!(t = scar_state_find(st, sel->tensor)))
			return scar_error_set(err, SCAR_ENOTFOUND, "no tensor '%s'", sel->tensor);
		return scar_select_check_rows(t->name, scar_tensor_rows(t), scar_tensor_shards(t, S),
					      sel, err);
	}
	/*
	 * Every parameter tensor: the selection must lie within the largest,
	 * so that it selects rows of at least one and none past them all.
	 */
	for (size_t i = 0; i < st->ntensors; i++)
		if (st->tensors[i]->role == SCAR_ROLE_PARAM &&
		    (!t || scar_tensor_rows(st->tensors[i]) > scar_tensor_rows(t)))
			t = st->tensors[i];
	if (!t)
		return scar_error_set(err, SCAR_ENOTFOUND, "no parameter tensor to select from");
	return scar_select_check_rows(t->name, scar_tensor_rows(t), S, sel, err);
}

int scar_shards_check(const uint32_t *list, size_t n, uint32_t count, uint32_t S,
		      struct scar_error *err)
{
	for (size_t i = 0; i < n; i++)
		if (list[i] >= S)
			return scar_error_set(err, SCAR_ERANGE, "shard %u does not exist (there are %u shards, 0..%u)",
					      list[i], S, S ? S - 1 : 0);
	if (count > S)
		return scar_error_set(err, SCAR_ERANGE, "cannot lose %u of %u shards", count, S);
	return 0;
}

static int is_float(const struct scar_tensor *t)
{
	return scar_dtype_is_float(t->dtype);
}

static int is_half(const struct scar_tensor *t)
{
	return t->dtype == SCAR_F16 || t->dtype == SCAR_BF16;
}

/* Element k of p, a buffer of t's floating-point dtype, as a double (exact). */
static double fval(const struct scar_tensor *t, const void *p, uint64_t k)
{
	switch (t->dtype) {
	case SCAR_F32: return ((const float *)p)[k];
	case SCAR_F16: return scar_f16_to_f32(((const uint16_t *)p)[k]);
	case SCAR_BF16: return scar_bf16_to_f32(((const uint16_t *)p)[k]);
	default: return ((const double *)p)[k];
	}
}

/* The f16 or bf16 value next to element k of t in the direction of toward. */
static double next_half(const struct scar_tensor *t, uint64_t k, double toward)
{
	uint16_t h = ((const uint16_t *)t->data)[k];
	double x = fval(t, t->data, k);
	int up = toward > x;

	if (isnan(x) || isnan(toward) || x == toward)
		return x;
	if (x == 0)
		h = up ? 0x0001 : 0x8001;
	else if (!(h & 0x8000))
		h = (uint16_t)(up ? h + 1 : h - 1);
	else
		h = (uint16_t)(up ? h - 1 : h + 1);
	return t->dtype == SCAR_F16 ? scar_f16_to_f32(h) : scar_bf16_to_f32(h);
}

static uint64_t row_end(const struct scar_tensor *t, const struct scar_select *sel)
{
	uint64_t rows = scar_tensor_rows(t);

	return sel->row_hi < rows ? sel->row_hi : rows;
}

static void count_rows(struct scar_perturb_report *rep, const struct scar_tensor *t,
		       uint64_t rows)
{
	if (!rep || !rows)
		return;
	rep->tensors++;
	rep->rows += rows;
	rep->elements += rows * scar_tensor_row_elems(t);
}

static void report_clear(struct scar_perturb_report *rep)
{
	if (rep)
		memset(rep, 0, sizeof(*rep));
}

/* ---- losing shards ---- */

int scar_perturb_pick_shards(uint32_t S, uint32_t count, struct scar_rng *rng, uint8_t *lost,
			     struct scar_error *err)
{
	uint32_t *v;

	int rc = scar_shards_check(NULL, 0, count, S, err);

	if (rc < 0)
		return rc;
	v = malloc((S ? S : 1) * sizeof(*v));
	if (!v)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < S; i++) {
		v[i] = i;
		lost[i] = 0;
	}
	/* a partial Fisher-Yates: the first count entries are the sample */
	for (uint32_t i = 0; i < count; i++) {
		uint32_t j = i + (uint32_t)scar_rng_below(rng, S - i), t = v[i];

		v[i] = v[j];
		v[j] = t;
		lost[v[i]] = 1;
	}
	free(v);
	return 0;
}

/* Mean and sample sd of the finite present elements, each divided by scale. */
static void moments_scaled(const struct scar_tensor *t, double scale, double *mean, double *sd)
{
	struct scar_sum s = { 0, 0 }, q = { 0, 0 };
	uint64_t rows = scar_tensor_rows(t), re = scar_tensor_row_elems(t), n = 0;

	for (uint64_t r = 0; r < rows; r++)
		if (scar_tensor_has_row(t, r))
			for (uint64_t k = 0; k < re; k++) {
				double v = scar_tensor_get(t, r * re + k);

				if (isfinite(v)) {
					scar_sum_add(&s, v / scale);
					n++;
				}
			}
	*mean = n ? scar_sum_value(&s) / (double)n : 0;
	for (uint64_t r = 0; r < rows; r++)
		if (scar_tensor_has_row(t, r))
			for (uint64_t k = 0; k < re; k++) {
				double v = scar_tensor_get(t, r * re + k) / scale - *mean;

				if (isfinite(v))
					scar_sum_add(&q, v * v);
			}
	*sd = n > 1 ? sqrt(scar_sum_value(&q) / (double)(n - 1)) : 0;
}

/*
 * Mean and sd of a tensor's finite present elements. Squares of elements
 * beyond about 1e154 overflow, so such tensors are measured again in units
 * of their largest magnitude (a power of two: exact); ordinary tensors keep
 * the plain sums, bit for bit.
 */
static void tensor_moments(const struct scar_tensor *t, double *mean, double *sd)
{
	uint64_t rows = scar_tensor_rows(t), re = scar_tensor_row_elems(t);
	double big = 0;
	int ex;

	moments_scaled(t, 1.0, mean, sd);
	if (isfinite(*mean) && isfinite(*sd))
		return;
	for (uint64_t r = 0; r < rows; r++)
		if (scar_tensor_has_row(t, r))
			for (uint64_t k = 0; k < re; k++) {
				double v = fabs(scar_tensor_get(t, r * re + k));

				if (isfinite(v) && v > big)
					big = v;
			}
	frexp(big, &ex);
	moments_scaled(t, ldexp(1.0, ex), mean, sd);
	*mean = ldexp(*mean, ex);
	*sd = ldexp(*sd, ex);
}

int scar_perturb_lose(struct scar_state *st, const struct scar_select *sel, const uint8_t *lost,
		      enum scar_reset how, const struct scar_state *src, struct scar_rng *rng,
		      struct scar_perturb_report *rep, struct scar_error *err)
{
	uint32_t S = st->shards ? st->shards : 1;
	int rc = scar_select_check(st, sel, err);

	report_clear(rep);
	if (rc < 0)
		return rc;
	if (how == SCAR_RESET_FROM && !src)
		return scar_error_set(err, SCAR_EINVAL, "reset from what: no source state");
	if (how == SCAR_RESET_RANDOM && !rng)
		return scar_error_set(err, SCAR_EINVAL, "reset to random needs a random generator");
	if (how != SCAR_RESET_ZERO && how != SCAR_RESET_RANDOM && how != SCAR_RESET_FROM)
		return scar_error_set(err, SCAR_EINVAL, "unknown reset %d", (int)how);
	/* check everything before changing anything */
	for (size_t i = 0; how == SCAR_RESET_FROM && i < st->ntensors; i++) {
		const struct scar_tensor *t = st->tensors[i], *o;

		if (!tensor_in(t, sel) || t->role != SCAR_ROLE_PARAM)
			continue;
		o = scar_state_find(src, t->name);
		if (!o)
			return scar_error_set(err, SCAR_ENOTFOUND, "the source has no tensor '%s'",
					      t->name);
		if (!scar_tensor_same_layout(t, o))
			return scar_error_set(err, SCAR_EMISMATCH,
					      "tensor '%s' differs in dtype or shape in the source",
					      t->name);
		for (uint64_t r = sel->row_lo; r < row_end(t, sel); r++)
			if (scar_select_row(t, S, sel, r) && lost[scar_shard_of_row(r, S)] &&
			    !scar_tensor_has_row(o, r))
				return scar_error_set(err, SCAR_ENOTFOUND,
						      "row %llu of tensor '%s' is not in the source",
						      (unsigned long long)r, t->name);
	}
	for (size_t i = 0; i < st->ntensors; i++) {
		struct scar_tensor *t = st->tensors[i];
		const struct scar_tensor *o = how == SCAR_RESET_FROM ? scar_state_find(src, t->name) : NULL;
		size_t rb = scar_tensor_row_bytes(t);
		uint64_t re = scar_tensor_row_elems(t), touched = 0;
		double mean = 0, sd = 0;

		if (!tensor_in(t, sel) || t->role != SCAR_ROLE_PARAM)
			continue;
		if (how == SCAR_RESET_RANDOM)
			tensor_moments(t, &mean, &sd);
		for (uint64_t r = sel->row_lo; r < row_end(t, sel); r++) {
			if (!scar_select_row(t, S, sel, r) || !lost[scar_shard_of_row(r, S)])
				continue;
			touched++;
			if (how == SCAR_RESET_ZERO)
				memset(scar_tensor_row(t, r), 0, rb);
			else if (how == SCAR_RESET_FROM)
				memcpy(scar_tensor_row(t, r), scar_tensor_row(o, r), rb);
			else
				for (uint64_t k = 0; k < re; k++) {
					double v = mean + sd * scar_rng_normal(rng);

					scar_tensor_set(t, r * re + k, v);
					/* Near a narrow type's largest value a draw may not fit: refused, as noise is. */
					if (isfinite(v) && !isfinite(scar_tensor_get(t, r * re + k)))
						return scar_error_set(err, SCAR_ERANGE,
							"reset random: a value %.17g drawn for tensor '%s' (%s) "
							"passes its largest finite value (its values' mean %g, sd %g)",
							v, t->name, scar_dtype_name(t->dtype), mean, sd);
				}
		}
		count_rows(rep, t, touched);
	}
	return 0;
}

/* ---- noise ---- */

/* L2 norm of an integer tensor's row (exact enough in double for counts). */
static double int_row_norm(const struct scar_tensor *t, uint64_t r, uint64_t re)
{
	double ss = 0;

	for (uint64_t k = r * re; k < (r + 1) * re; k++) {
		double v = scar_tensor_get(t, k);

		ss += v * v;
	}
	return sqrt(ss);
}

/*
 * The tensors noise goes to: the selected floating-point ones, or the
 * selected integer ones (lda's counts) when the selection has no float
 * tensor, so that a mixed state keeps its integer tensors as they were.
 */
static int noise_takes(const struct scar_state *st, const struct scar_select *sel,
		       const struct scar_tensor *t)
{
	if (!tensor_in(t, sel) || t->dtype == SCAR_I64 || t->dtype == SCAR_U64)
		return 0;	/* 64-bit integers (ids, RNG words) do not survive a double */
	if (is_float(t))
		return 1;
	for (size_t i = 0; i < st->ntensors; i++)
		if (tensor_in(st->tensors[i], sel) && is_float(st->tensors[i]))
			return 0;
	return 1;
}

double scar_perturb_norm(const struct scar_state *st, const struct scar_select *sel)
{
	uint32_t S = st->shards ? st->shards : 1;
	struct scar_sum s = { 0, 0 };
	struct scar_sumsq x = { 0, 0 };	/* the same, should s overflow or underflow */

	for (size_t i = 0; i < st->ntensors; i++) {
		const struct scar_tensor *t = st->tensors[i];
		uint64_t re = scar_tensor_row_elems(t);

		if (!noise_takes(st, sel, t))
			continue;
		for (uint64_t r = sel->row_lo; r < row_end(t, sel); r++) {
			double n;

			if (!scar_select_row(t, S, sel, r))
				continue;
			n = is_float(t) ? scar_norm_l2(scar_tensor_row(t, r), t->dtype, re) :
				int_row_norm(t, r, re);
			scar_sum_add(&s, n * n);
			scar_sumsq_add(&x, n);
		}
	}
	return scar_sumsq_pick(scar_sum_value(&s), &x);
}

/* The stored change of element k of tensor i (orig as scar_perturb_noise keeps it). */
static double elem_delta(const struct scar_tensor *t, const void *orig, uint64_t k)
{
	if (!is_float(t))
		return scar_tensor_get(t, k) - ((const double *)orig)[k];
	return fval(t, t->data, k) - fval(t, orig, k);
}

/*
 * One pass over the selected elements in the fixed order: with orig ==
 * NULL, the L2 norm of the deviates; else x = orig + scale*g stored
 * (rounded to the nearest integer, saturating, in integer tensors: counts
 * stay counts), returning the L2 norm of the stored change. Norms are
 * summed plainly (as they always were) and, where a row's plain sum of
 * squares overflows or may have underflowed, scaled (scar_sumsq). *over
 * (when orig) names the first tensor where a finite element became Inf:
 * the noise does not fit the dtype.
 */
static double noise_pass(struct scar_state *st, const struct scar_select *sel,
			 struct scar_rng *rng, void **orig, double scale,
			 struct scar_perturb_report *rep, const char **over)
{
	uint32_t S = st->shards ? st->shards : 1;
	struct scar_sum acc = { 0, 0 };
	struct scar_sumsq x = { 0, 0 };

	for (size_t i = 0; i < st->ntensors; i++) {
		struct scar_tensor *t = st->tensors[i];
		uint64_t re = scar_tensor_row_elems(t), touched = 0;

		if (!noise_takes(st, sel, t))
			continue;
		for (uint64_t r = sel->row_lo; r < row_end(t, sel); r++) {
			double rs = 0;
			int nz = 0;

			if (!scar_select_row(t, S, sel, r))
				continue;
			touched++;
			for (uint64_t k = r * re; k < (r + 1) * re; k++) {
				double g = scar_rng_normal(rng), d;

				if (!orig) {
					d = g;
				} else if (!is_float(t)) {
					double x0 = ((const double *)orig[i])[k];

					scar_tensor_set(t, k, x0 + nearbyint(scale * g));
					d = scar_tensor_get(t, k) - x0;
				} else if (t->dtype == SCAR_F32) {
					float x0 = ((const float *)orig[i])[k];
					float xv = (float)((double)x0 + scale * g);

					((float *)t->data)[k] = xv;
					d = (double)xv - (double)x0;
					if (isinf(xv) && isfinite(x0) && !*over)
						*over = t->name;
				} else if (is_half(t)) {
					/* rounded once, to nearest even, as f32 is */
					double x0 = fval(t, orig[i], k), xv;

					scar_tensor_set(t, k, x0 + scale * g);
					xv = scar_tensor_get(t, k);
					d = xv - x0;
					if (isinf(xv) && isfinite(x0) && !*over)
						*over = t->name;
				} else {
					double x0 = ((const double *)orig[i])[k];
					double xv = x0 + scale * g;

					((double *)t->data)[k] = xv;
					d = xv - x0;
					if (isinf(xv) && isfinite(x0) && !*over)
						*over = t->name;
				}
				rs += d * d;
				nz |= d != 0;
			}
			scar_sum_add(&acc, rs);
			if (!orig || (isfinite(rs) && (rs >= 0x1p-900 || !nz)))
				scar_sumsq_add_sum(&x, rs);
			else
				for (uint64_t k = r * re; k < (r + 1) * re; k++)
					scar_sumsq_add(&x, elem_delta(t, orig[i], k));
		}
		if (orig)
			count_rows(rep, t, touched);
	}
	return scar_sumsq_pick(scar_sum_value(&acc), &x);
}

/*
 * Nudge single elements by one ulp where that brings the squared norm of the
 * change closer to want2; returns the squared norm achieved. This closes the
 * gap that rounding to f32 leaves (about 1e-7 relative) down to a few ulps
 * of one element's contribution. Returns the norm. The arithmetic is in
 * units of 2^k ~ l2 (exact powers of two: the same as unscaled in the
 * normal range), so that squares of a huge or tiny change stay in range.
 */
static double noise_nudge(struct scar_state *st, const struct scar_select *sel, void **orig,
			  double l2)
{
	uint32_t S = st->shards ? st->shards : 1;
	struct scar_sum acc = { 0, 0 };
	double R, want2;
	int k2;

	(void)frexp(l2, &k2);
	want2 = ldexp(l2, -k2) * ldexp(l2, -k2);

	for (int pass = 0; pass < 4; pass++) {
		acc.s = acc.c = 0;
		for (size_t i = 0; i < st->ntensors; i++) {
			const struct scar_tensor *t = st->tensors[i];
			uint64_t re = scar_tensor_row_elems(t);

			if (!tensor_in(t, sel) || !is_float(t))
				continue;
			for (uint64_t r = sel->row_lo; r < row_end(t, sel); r++) {
				if (!scar_select_row(t, S, sel, r))
					continue;
				for (uint64_t k = r * re; k < (r + 1) * re; k++) {
					double d = ldexp(scar_tensor_get(t, k) - fval(t, orig[i], k), -k2);

					scar_sum_add(&acc, d * d);
				}
			}
		}
		R = want2 - scar_sum_value(&acc);
		if (fabs(R) <= 4e-16 * want2 || pass == 3)
			break;
		for (size_t i = 0; i < st->ntensors && fabs(R) > 4e-16 * want2; i++) {
			struct scar_tensor *t = st->tensors[i];
			uint64_t re = scar_tensor_row_elems(t);

			if (!tensor_in(t, sel) || !is_float(t))
				continue;
			for (uint64_t r = sel->row_lo; r < row_end(t, sel); r++) {
				if (!scar_select_row(t, S, sel, r))
					continue;
				for (uint64_t k = r * re; k < (r + 1) * re; k++) {
					double x, x0, d, nx, gain;

					if (t->dtype == SCAR_F32) {
						float xf = ((float *)t->data)[k], x0f = ((const float *)orig[i])[k];
						float away = (xf >= x0f) ? INFINITY : -INFINITY;

						x = xf;
						x0 = x0f;
						nx = R > 0 ? nextafterf(xf, away) : nextafterf(xf, x0f);
					} else if (is_half(t)) {
						x = fval(t, t->data, k);
						x0 = fval(t, orig[i], k);
						nx = next_half(t, k, R > 0 ? (x >= x0 ? INFINITY : -INFINITY) : x0);
					} else {
						x = ((double *)t->data)[k];
						x0 = ((const double *)orig[i])[k];
						nx = R > 0 ? nextafter(x, x >= x0 ? INFINITY : -INFINITY) :
							     nextafter(x, x0);
					}
					d = ldexp(x - x0, -k2);
					gain = ldexp(nx - x0, -k2) * ldexp(nx - x0, -k2) - d * d;
					if (!isfinite(nx) || !(R > 0 ? gain > 0 && gain < 2 * R :
								gain < 0 && gain > 2 * R))
						continue;
					scar_tensor_set(t, k, nx);
					R -= gain;
				}
			}
		}
	}
	return ldexp(sqrt(scar_sum_value(&acc)), k2);
}

int scar_perturb_noise(struct scar_state *st, const struct scar_select *sel, double l2,
		       struct scar_rng *rng, double *achieved, struct scar_perturb_report *rep,
		       struct scar_error *err)
{
	struct scar_rng start = *rng, r;
	void **orig = NULL;
	const char *over = NULL;
	double gn, scale, got = 0;
	int rc = scar_select_check(st, sel, err), all_float = 1;

	report_clear(rep);
	if (achieved)
		*achieved = 0;
	if (rc < 0)
		return rc;
	if (!(l2 >= 0) || !isfinite(l2))
		return scar_error_set(err, SCAR_ERANGE, "noise norm must be finite and >= 0");
	if (sel->tensor) {
		const struct scar_tensor *nt = scar_state_find(st, sel->tensor);

		if (nt && (nt->dtype == SCAR_I64 || nt->dtype == SCAR_U64))
			return scar_error_set(err, SCAR_EINVAL,
					      "tensor '%s' holds 64-bit integers, which noise cannot change exactly",
					      sel->tensor);
	}
	if (l2 == 0)
		return 0;
	r = start;
	gn = noise_pass(st, sel, &r, NULL, 0, NULL, NULL);
	if (gn == 0)
		return scar_error_set(err, SCAR_EINVAL, "no elements selected");
	orig = calloc(st->ntensors, sizeof(*orig));
	if (!orig)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	for (size_t i = 0; i < st->ntensors; i++) {
		const struct scar_tensor *t = st->tensors[i];

		if (!noise_takes(st, sel, t))
			continue;
		/* Integer tensors' values as doubles: noise_pass adds to them and rounds. */
		orig[i] = malloc(is_float(t) ? scar_tensor_bytes(t) + 1 :
			scar_tensor_elems(t) * sizeof(double) + 1);
		if (!orig[i]) {
			rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
			goto out;
		}
		if (is_float(t))
			memcpy(orig[i], t->data, scar_tensor_bytes(t));
		else
			for (uint64_t k = 0; k < scar_tensor_elems(t); k++)
				((double *)orig[i])[k] = scar_tensor_get(t, k);
	}
	scale = l2 / gn;
	/* rounding to the dtype shrinks or grows the change a little: correct the scale */
	for (int pass = 0; pass < 4; pass++) {
		r = start;
		report_clear(rep);
		got = noise_pass(st, sel, &r, orig, scale, rep, &over);
		if (over || got == 0 || fabs(got / l2 - 1) < 1e-15)
			break;
		scale *= l2 / got;
	}
	/* One-ulp nudges are for floats; integers keep the norm rounding gave. */
	for (size_t i = 0; i < st->ntensors; i++)
		if (orig[i] && !is_float(st->tensors[i]))
			all_float = 0;
	if (over) {
		const struct scar_tensor *ot = scar_state_find(st, over);

		rc = scar_error_set(err, SCAR_ERANGE,
				    "noise of L2 norm %g does not fit tensor '%s' (%s): elements would "
				    "pass its largest finite value", l2, over,
				    ot ? scar_dtype_name(ot->dtype) : "?");
		goto undo;
	}
	if (got > 0 && all_float)
		got = noise_nudge(st, sel, orig, l2);
	/* Never a silent other perturbation: the stored norm is checked. */
	if (all_float && !(fabs(got - l2) <= SCAR_NOISE_TOLERANCE * l2)) {
		rc = scar_error_set(err, SCAR_ERANGE,
				    "noise of L2 norm %g cannot be stored: after rounding to the "
				    "tensors' precision the change has norm %g (tolerance %g relative)",
				    l2, got, SCAR_NOISE_TOLERANCE);
		goto undo;
	}
	*rng = r;
	if (achieved)
		*achieved = got;
	goto out;
undo:
	/* the state as it was: a refused perturbation changes nothing */
	report_clear(rep);
	for (size_t i = 0; i < st->ntensors; i++) {
		struct scar_tensor *t = st->tensors[i];

		if (!orig[i])
			continue;
		if (is_float(t))
			memcpy(t->data, orig[i], scar_tensor_bytes(t));
		else
			for (uint64_t k = 0; k < scar_tensor_elems(t); k++)
				scar_tensor_set(t, k, ((double *)orig[i])[k]);
	}
out:
	for (size_t i = 0; i < st->ntensors; i++)
		free(orig[i]);
	free(orig);
	return rc;
}

/* ---- bit flips ---- */

enum scar_bits scar_bits_parse(const char *name)
{
	static const char *const names[] = { NULL, "any", "sign", "exponent", "mantissa" };

	for (int i = 1; name && i <= 4; i++)
		if (strcmp(name, names[i]) == 0)
			return (enum scar_bits)i;
	return 0;
}

const char *scar_bits_name(enum scar_bits b)
{
	static const char *const names[] = { NULL, "any", "sign", "exponent", "mantissa" };

	return b >= 1 && b <= 4 ? names[b] : NULL;
}

/* Bits [*lo, *lo + *n) of an element of t are eligible; 0 when none. */
static int bit_range(const struct scar_tensor *t, enum scar_bits bits, unsigned *lo, unsigned *n)
{
	unsigned w = (unsigned)scar_dtype_size(t->dtype) * 8, m = 0;
	int fl = is_float(t), sg = t->dtype == SCAR_I32 || t->dtype == SCAR_I64;

	if (t->dtype == SCAR_F32)
		m = 23;
	else if (t->dtype == SCAR_F64)
		m = 52;
	else if (t->dtype == SCAR_F16)
		m = 10;
	else if (t->dtype == SCAR_BF16)
		m = 7;
	switch (bits) {
	case SCAR_BITS_ANY: *lo = 0; *n = w; return 1;
	case SCAR_BITS_SIGN:
		*lo = w - 1;
		*n = 1;
		return fl || sg;
	case SCAR_BITS_EXPONENT:
		*lo = m;
		*n = w - 1 - m;
		return fl;
	case SCAR_BITS_MANTISSA:
		*lo = 0;
		*n = m;
		return fl;
	}
	return 0;
}

static void flip(struct scar_tensor *t, uint64_t elem, unsigned bit)
{
	unsigned char *p = (unsigned char *)t->data + elem * scar_dtype_size(t->dtype);

	p[bit / 8] ^= (unsigned char)(1u << (bit % 8));	/* little-endian host */
}

/* Next flipped position after pos (UINT64_MAX: none), rate mode. */
static uint64_t geo_next(uint64_t pos, double rate, double lq, struct scar_rng *rng)
{
	double skip;

	if (rate >= 1)
		return pos + 1;
	skip = floor(log1p(-scar_rng_uniform(rng)) / lq);
	if (!(skip < 1.8e19) || pos + 1 > UINT64_MAX - (uint64_t)skip)
		return UINT64_MAX;
	return pos + 1 + (uint64_t)skip;
}

struct flip_src {
	int rate_mode;
	double rate, lq;
	struct scar_rng *rng;
	const uint64_t *pos;	/* count mode: sorted positions */
	uint64_t npos, at;
	uint64_t next;
};

static uint64_t src_next(struct flip_src *f)
{
	if (f->rate_mode)
		return f->next = geo_next(f->next, f->rate, f->lq, f->rng);
	f->at++;
	return f->next = f->at < f->npos ? f->pos[f->at] : UINT64_MAX;
}

static int check_bits_sel(const struct scar_state *st, const struct scar_select *sel,
			  enum scar_bits bits, struct scar_error *err)
{
	unsigned lo, n;
	int rc = scar_select_check(st, sel, err);

	if (rc < 0)
		return rc;
	if (!scar_bits_name(bits))
		return scar_error_set(err, SCAR_EINVAL, "unknown bit class %d", (int)bits);
	if (sel->tensor && !bit_range(scar_state_find(st, sel->tensor), bits, &lo, &n))
		return scar_error_set(err, SCAR_EINVAL, "tensor '%s' (%s) has no %s bits", sel->tensor,
				      scar_dtype_name(scar_state_find(st, sel->tensor)->dtype),
				      scar_bits_name(bits));
	return 0;
}

/* Walk the eligible bits in order, flipping those f yields. */
static void flip_walk(struct scar_state *st, const struct scar_select *sel, enum scar_bits bits,
		      struct flip_src *f, struct scar_perturb_report *rep)
{
	uint32_t S = st->shards ? st->shards : 1;
	uint64_t base = 0;

	for (size_t i = 0; i < st->ntensors && f->next != UINT64_MAX; i++) {
		struct scar_tensor *t = st->tensors[i];
		uint64_t re = scar_tensor_row_elems(t), touched = 0;
		unsigned lo, nb;

		if (!tensor_in(t, sel) || !bit_range(t, bits, &lo, &nb))
			continue;
		for (uint64_t r = sel->row_lo; r < row_end(t, sel) && f->next != UINT64_MAX; r++) {
			uint64_t span = re * nb, hit = 0;

			if (!scar_select_row(t, S, sel, r))
				continue;
			while (f->next < base + span) {
				uint64_t off = f->next - base;

				flip(t, r * re + off / nb, lo + (unsigned)(off % nb));
				hit++;
				src_next(f);
			}
			if (hit) {
				touched++;
				if (rep)
					rep->bits += hit;
			}
			base += span;
		}
		if (touched && rep) {
			rep->tensors++;
			rep->rows += touched;
			rep->elements += touched * re;
		}
	}
}

static uint64_t eligible_bits(const struct scar_state *st, const struct scar_select *sel,
			      enum scar_bits bits)
{
	uint32_t S = st->shards ? st->shards : 1;
	uint64_t total = 0;

	for (size_t i = 0; i < st->ntensors; i++) {
		const struct scar_tensor *t = st->tensors[i];
		unsigned lo, nb;

		if (!tensor_in(t, sel) || !bit_range(t, bits, &lo, &nb))
			continue;
		for (uint64_t r = sel->row_lo; r < row_end(t, sel); r++)
			if (scar_select_row(t, S, sel, r))
				total += scar_tensor_row_elems(t) * nb;
	}
	return total;
}

int scar_perturb_bitflip_rate(struct scar_state *st, const struct scar_select *sel,
			      enum scar_bits bits, double rate, struct scar_rng *rng,
			      struct scar_perturb_report *rep, struct scar_error *err)
{
	struct flip_src f;
	int rc;

	report_clear(rep);
	rc = check_bits_sel(st, sel, bits, err);
	if (rc < 0)
		return rc;
	if (!(rate >= 0 && rate <= 1))
		return scar_error_set(err, SCAR_ERANGE, "bit-flip rate must be in [0, 1]");
	if (rate == 0)
		return 0;
	memset(&f, 0, sizeof(f));
	f.rate_mode = 1;
	f.rate = rate;
	f.lq = rate < 1 ? log1p(-rate) : 0;
	f.rng = rng;
	f.next = rate >= 1 ? 0 : geo_next((uint64_t)-1, rate, f.lq, rng);
	flip_walk(st, sel, bits, &f, rep);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int scar_perturb_bitflip_count(struct scar_state *st, const struct scar_select *sel,
			       enum scar_bits bits, uint64_t count, struct scar_rng *rng,
			       struct scar_perturb_report *rep, struct scar_error *err)
{
	struct flip_src f;
	uint64_t total, *pos, have = 0;
	int rc;

	report_clear(rep);
	rc = check_bits_sel(st, sel, bits, err);
	if (rc < 0)
		return rc;
	total = eligible_bits(st, sel, bits);
	if (count > total)
		return scar_error_set(err, SCAR_ERANGE, "cannot flip %llu bits: only %llu are eligible",
				      (unsigned long long)count, (unsigned long long)total);
	if (count == 0)
		return 0;
	pos = malloc(count * sizeof(*pos));
	if (!pos)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	/* draw, sort, drop repeats, draw again for the gap: distinct and uniform */
	while (have < count) {
		uint64_t w = 1;

		while (have < count)
			pos[have++] = scar_rng_below(rng, total);
		qsort(pos, have, sizeof(*pos), cmp_u64);
		for (uint64_t i = 1; i < have; i++)
			if (pos[i] != pos[w - 1])
				pos[w++] = pos[i];
		have = w;
	}
	memset(&f, 0, sizeof(f));
	f.pos = pos;
	f.npos = count;
	f.next = pos[0];
	flip_walk(st, sel, bits, &f, rep);
	free(pos);
	return 0;
}

/* ---- precision ---- */

enum scar_quant scar_quant_parse(const char *name)
{
	if (!name)
		return 0;
	if (strcmp(name, "f16") == 0)
		return SCAR_QUANT_F16;
	if (strcmp(name, "bf16") == 0)
		return SCAR_QUANT_BF16;
	if (strcmp(name, "int8") == 0)
		return SCAR_QUANT_INT8;
	return 0;
}

const char *scar_quant_name(enum scar_quant q)
{
	return q == SCAR_QUANT_F16 ? "f16" : q == SCAR_QUANT_BF16 ? "bf16" :
	       q == SCAR_QUANT_INT8 ? "int8" : NULL;
}

static double quant1(double v, enum scar_quant q)
{
	if (!isfinite(v))
		return v;
	if (q == SCAR_QUANT_F16)
		return scar_f16_to_f32(scar_f32_to_f16((float)v));
	return scar_bf16_to_f32(scar_f32_to_bf16((float)v));
}

int scar_perturb_quantize(struct scar_state *st, const struct scar_select *sel,
			  enum scar_quant q, struct scar_perturb_report *rep,
			  struct scar_error *err)
{
	uint32_t S = st->shards ? st->shards : 1;
	int rc = scar_select_check(st, sel, err);

	report_clear(rep);
	if (rc < 0)
		return rc;
	if (!scar_quant_name(q))
		return scar_error_set(err, SCAR_EINVAL, "unknown quantisation %d", (int)q);
	if (sel->tensor && !is_float(scar_state_find(st, sel->tensor)))
		return scar_error_set(err, SCAR_EINVAL, "tensor '%s' is not floating-point",
				      sel->tensor);
	for (size_t i = 0; i < st->ntensors; i++) {
		struct scar_tensor *t = st->tensors[i];
		uint64_t re = scar_tensor_row_elems(t), touched = 0;

		if (!tensor_in(t, sel) || !is_float(t))
			continue;
		for (uint64_t r = sel->row_lo; r < row_end(t, sel); r++) {
			double mx = 0, scale;

			if (!scar_select_row(t, S, sel, r))
				continue;
			touched++;
			if (q != SCAR_QUANT_INT8) {
				for (uint64_t k = r * re; k < (r + 1) * re; k++)
					scar_tensor_set(t, k, quant1(scar_tensor_get(t, k), q));
				continue;
			}
			for (uint64_t k = r * re; k < (r + 1) * re; k++) {
				double a = fabs(scar_tensor_get(t, k));

				if (isfinite(a) && a > mx)
					mx = a;
			}
			if (mx == 0)
				continue;
			/* the scale is stored as f32, as an int8 copy would store it */
			scale = (float)(mx / 127);
			for (uint64_t k = r * re; k < (r + 1) * re; k++) {
				double v = scar_tensor_get(t, k), qv;

				if (!isfinite(v))
					continue;
				qv = nearbyint(v / scale);
				qv = qv > 127 ? 127 : qv < -127 ? -127 : qv;
				scar_tensor_set(t, k, qv * scale);
			}
		}
		count_rows(rep, t, touched);
	}
	return 0;
}

/* ---- staleness ---- */

int scar_perturb_mix(struct scar_state *st, const struct scar_select *sel,
		     const struct scar_state *old, double alpha,
		     struct scar_perturb_report *rep, struct scar_error *err)
{
	uint32_t S = st->shards ? st->shards : 1;
	int rc = scar_select_check(st, sel, err);

	report_clear(rep);
	if (rc < 0)
		return rc;
	if (!(alpha >= 0 && alpha <= 1))
		return scar_error_set(err, SCAR_ERANGE, "mix weight must be in [0, 1]");
	for (size_t i = 0; i < st->ntensors; i++) {
		const struct scar_tensor *t = st->tensors[i], *o;

		if (!tensor_in(t, sel))
			continue;
		o = scar_state_find(old, t->name);
		if (!o)
			return scar_error_set(err, SCAR_ENOTFOUND, "the older state has no tensor '%s'",
					      t->name);
		if (!scar_tensor_same_layout(t, o))
			return scar_error_set(err, SCAR_EMISMATCH,
					      "tensor '%s' differs in dtype or shape in the older state",
					      t->name);
	}
	for (size_t i = 0; i < st->ntensors; i++) {
		struct scar_tensor *t = st->tensors[i];
		const struct scar_tensor *o;
		uint64_t re = scar_tensor_row_elems(t), touched = 0;

		if (!tensor_in(t, sel))
			continue;
		o = scar_state_find(old, t->name);
		for (uint64_t r = sel->row_lo; r < row_end(t, sel); r++) {
			if (!scar_select_row(t, S, sel, r))
				continue;
			if (!scar_tensor_has_row(o, r)) {
				if (rep)
					rep->skipped++;
				continue;
			}
			touched++;
			if (t->dtype == SCAR_F32) {
				float *x = scar_tensor_row(t, r);
				const float *y = scar_tensor_row(o, r);

				for (uint64_t k = 0; k < re; k++)
					x[k] = (float)((1 - alpha) * x[k] + alpha * y[k]);
			} else if (t->dtype == SCAR_F64) {
				double *x = scar_tensor_row(t, r);
				const double *y = scar_tensor_row(o, r);

				for (uint64_t k = 0; k < re; k++)
					x[k] = (1 - alpha) * x[k] + alpha * y[k];
			} else if (is_half(t)) {
				for (uint64_t k = r * re; k < (r + 1) * re; k++)
					scar_tensor_set(t, k, (1 - alpha) * scar_tensor_get(t, k) +
							      alpha * scar_tensor_get(o, k));
			} else if (alpha >= 0.5) {
				memcpy(scar_tensor_row(t, r), scar_tensor_row(o, r),
				       scar_tensor_row_bytes(t));
			}
		}
		count_rows(rep, t, touched);
	}
	return 0;
}
