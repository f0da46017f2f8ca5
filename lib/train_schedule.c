/* train_schedule.c - checkpoint and failure schedules shared by both trainers (train_internal.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scar/rng.h"
#include "train_internal.h"

uint64_t scar_train_policy_rows(const struct scar_train_opts *o, uint64_t rows)
{
	uint64_t n;

	if (o->policy == SCAR_POLICY_FULL)
		return rows;
	n = (uint64_t)llround(o->fraction * (double)rows);
	return n < 1 ? 1 : n > rows ? rows : n;
}

uint64_t scar_train_policy_period(const struct scar_train_opts *o)
{
	uint64_t p;

	if (o->policy == SCAR_POLICY_FULL)
		return o->interval;
	p = (uint64_t)llround(o->fraction * (double)o->interval);
	return p < 1 ? 1 : p;
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
