/*
 * train_schedule.c - checkpoint and failure schedules shared by both trainers
 * (train_internal.h), and the names and defaults of the options (scar/train.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scar/rng.h"
#include "train_internal.h"

static int is_partial(enum scar_policy p)
{
	return p == SCAR_POLICY_ROUND_ROBIN || p == SCAR_POLICY_RANDOM || p == SCAR_POLICY_PRIORITY;
}

/* m of a fraction r = 1/m, or 0 when r is not the inverse of a whole number. */
static uint64_t inverse(double r)
{
	double m;

	if (!(r > 0 && r <= 1))
		return 0;
	m = nearbyint(1.0 / r);
	if (m < 1 || m > 1e15 || fabs(r * m - 1.0) > 1e-9)
		return 0;
	return (uint64_t)m;
}

uint64_t scar_train_policy_parts(const struct scar_train_opts *o)
{
	uint64_t m = is_partial(o->policy) ? inverse(o->fraction) : 1;

	return m < 1 || m > o->interval ? 1 : m;
}

uint64_t scar_train_policy_rows(const struct scar_train_opts *o, uint64_t rows, uint64_t ncp,
				uint64_t *first)
{
	uint64_t m = scar_train_policy_parts(o), t = ncp % m, lo, hi;

	/*
	 * The cycle's rows 0..rows split into m runs at floor(t * rows / m):
	 * the m checkpoints of an interval write each of its rows once, rows
	 * in all, whatever rows mod m is (rows < 2^32, m <= 10^8: no overflow).
	 */
	lo = t * rows / m;
	hi = (t + 1) * rows / m;
	if (first)
		*first = lo;
	return hi - lo;
}

uint64_t scar_train_policy_period(const struct scar_train_opts *o)
{
	return o->interval / scar_train_policy_parts(o);
}

/* Divisors of c nearest 1/r from either side: lo >= 1/r (a smaller fraction), hi <= 1/r. */
static void nearest_parts(uint64_t c, double r, uint64_t *lo, uint64_t *hi)
{
	double want = 1.0 / r;

	*lo = 0;
	*hi = 1;
	for (uint64_t d = 1; d <= c / d; d++) {
		uint64_t pair[2] = { d, c / d };

		if (c % d)
			continue;
		for (int k = 0; k < 2; k++) {
			double v = (double)pair[k];

			if (v >= want && (!*lo || pair[k] < *lo))
				*lo = pair[k];
			if (v <= want && pair[k] > *hi)
				*hi = pair[k];
		}
	}
}

static void fraction_name(char *buf, size_t len, uint64_t m)
{
	if (m == 1)
		snprintf(buf, len, "1");
	else
		snprintf(buf, len, "1/%llu", (unsigned long long)m);
}

int scar_train_check_schedule(const struct scar_train_opts *o, struct scar_error *err)
{
	uint64_t m, lo, hi;
	char a[32], b[32];

	if (!is_partial(o->policy))
		return 0;
	m = inverse(o->fraction);
	if (m && o->interval % m == 0)
		return 0;
	nearest_parts(o->interval, o->fraction, &lo, &hi);
	fraction_name(b, sizeof(b), hi);
	if (lo && lo != hi) {
		fraction_name(a, sizeof(a), lo);
		return scar_error_set(err, SCAR_EINVAL,
				      "checkpoint fraction %g cannot write the rows of a full checkpoint every %llu iterations (it must be 1/m with m dividing the interval); nearest that can: %s and %s",
				      o->fraction, (unsigned long long)o->interval, a, b);
	}
	return scar_error_set(err, SCAR_EINVAL,
			      "checkpoint fraction %g cannot write the rows of a full checkpoint every %llu iterations (it must be 1/m with m dividing the interval); nearest that can: %s",
			      o->fraction, (unsigned long long)o->interval, b);
}

int scar_train_fails_at(const struct scar_train_opts *o, uint64_t clock)
{
	for (size_t i = 0; i < o->nfail_at; i++)
		if (o->fail_at[i] == clock)
			return 1;
	if (o->fail_prob > 0) {
		struct scar_rng rng;

		scar_rng_seed_stream(&rng, o->fail_seed, SCAR_STREAM_FAIL_PROB + (clock << 4));
		return scar_rng_uniform(&rng) < o->fail_prob;
	}
	return 0;
}

int scar_train_pick_shards(const struct scar_train_opts *o, uint32_t S, uint64_t clock,
			   uint8_t *lost, struct scar_error *err)
{
	struct scar_rng rng;
	uint32_t *idx, n;

	memset(lost, 0, S);
	if (o->lose_mode == SCAR_LOSE_LIST) {
		for (size_t i = 0; i < o->nlose_list; i++)
			if (o->lose_list[i] < S)
				lost[o->lose_list[i]] = 1;
		return 0;
	}
	n = o->lose_mode == SCAR_LOSE_COUNT ? o->lose_count :
		(uint32_t)llround(o->lose_fraction * S);
	/* A small fraction still loses a shard; only 0 asked for is a null failure. */
	if (n < 1 && (o->lose_mode == SCAR_LOSE_COUNT ? o->lose_count : o->lose_fraction > 0))
		n = 1;
	if (n > S)
		n = S;
	if (!(idx = malloc(S * sizeof(*idx))))
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	for (uint32_t s = 0; s < S; s++)
		idx[s] = s;
	/* A partial Fisher-Yates shuffle: the first n of a seeded permutation. */
	scar_rng_seed_stream(&rng, o->fail_seed, SCAR_STREAM_FAIL_SHARDS + (clock << 4));
	for (uint32_t i = 0; i < n; i++) {
		uint32_t j = i + (uint32_t)scar_rng_below(&rng, S - i), tmp = idx[i];

		idx[i] = idx[j];
		idx[j] = tmp;
		lost[idx[i]] = 1;
	}
	free(idx);
	return 0;
}

/* Value of element i as double, for norms over any dtype. */
static double elem(const struct scar_tensor *x, const void *data, uint64_t i)
{
	switch (x->dtype) {
	case SCAR_F32: return ((const float *)data)[i];
	case SCAR_F64: return ((const double *)data)[i];
	case SCAR_I32: return ((const int32_t *)data)[i];
	case SCAR_U32: return ((const uint32_t *)data)[i];
	case SCAR_I64: return (double)((const int64_t *)data)[i];
	case SCAR_U64: return (double)((const uint64_t *)data)[i];
	case SCAR_U8: return ((const uint8_t *)data)[i];
	case SCAR_F16: return scar_f16_to_f32(((const uint16_t *)data)[i]);
	case SCAR_BF16: return scar_bf16_to_f32(((const uint16_t *)data)[i]);
	}
	return 0;
}

/* Squared L2 distance of n elements; Neumaier-compensated so long tensors stay exact enough. */
double scar_train_sqdist(const struct scar_tensor *x, const void *a, const void *b, uint64_t off,
			 uint64_t n)
{
	double sum = 0, comp = 0;

	if (x->dtype == SCAR_F32) {
		const float *fa = (const float *)a + off, *fb = (const float *)b + off;

		for (uint64_t i = 0; i < n; i++) {
			double d = (double)fa[i] - fb[i], y = d * d, s = sum + y;

			comp += fabs(sum) >= y ? (sum - s) + y : (y - s) + sum;
			sum = s;
		}
		return sum + comp;
	}
	for (uint64_t i = 0; i < n; i++) {
		double d = elem(x, a, off + i) - elem(x, b, off + i), y = d * d, s = sum + y;

		comp += fabs(sum) >= y ? (sum - s) + y : (y - s) + sum;
		sum = s;
	}
	return sum + comp;
}

/* ---- the names of policies and recoveries, and the options' defaults ---- */

static const char *const policy_names[] = { "none", "full", "round-robin", "random", "priority" };
static const char *const recovery_names[SCAR_RECOVER_COUNT] = { "partial", "full", "none", "rebuild", "rewind", "auto" };

const char *scar_policy_name(enum scar_policy p)
{
	return (unsigned)p < 5 ? policy_names[p] : NULL;
}

int scar_policy_parse(const char *name)
{
	for (int i = 0; name && i < 5; i++)
		if (strcmp(name, policy_names[i]) == 0)
			return i;
	return -1;
}

const char *scar_recovery_name(enum scar_recovery r)
{
	return (unsigned)r < SCAR_RECOVER_COUNT ? recovery_names[r] : NULL;
}

int scar_recovery_parse(const char *name)
{
	for (int i = 0; name && i < SCAR_RECOVER_COUNT; i++)
		if (strcmp(name, recovery_names[i]) == 0)
			return i;
	return -1;
}

void scar_train_opts_init(struct scar_train_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->shards = 1;
	o->iters = 50;
	o->policy = SCAR_POLICY_NONE;
	o->interval = 8;
	o->fraction = 1.0;
	o->ckpt_compress = 1;
	o->ckpt_sync = 1;
	o->ckpt_shuffle = SCAR_SHUFFLE_OFF;
	o->recovery = SCAR_RECOVER_PARTIAL;
	o->lose_mode = SCAR_LOSE_COUNT;
	o->lose_count = 1;
	o->cost_window = 1;
	o->tool = "scar-train";
}
