/*
 * synth.c - deterministic synthetic data sets (see scar/data.h), the
 * embedded defaults of the workloads. Every draw comes from one
 * scar_rng stream seeded by the caller's seed, in a fixed order, so a call
 * gives the same bytes on every machine. Objects are allocated field by
 * field (calloc'd struct, malloc'd arrays) as the scar_*_free functions
 * expect.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scar/data.h"
#include "scar/rng.h"
#include "model_util.h"

/* Streams, so the generators do not share draws for a common seed. */
enum { STREAM_CLASS = 11, STREAM_REGR = 12, STREAM_RATINGS = 13, STREAM_CORPUS = 14 };

static int nomem(struct scar_error *err)
{
	return scar_error_set(err, SCAR_ENOMEM, "out of memory for synthetic data");
}

static void dense_release(struct scar_dense *ds)
{
	if (!ds)
		return;
	free(ds->x);
	free(ds->label);
	free(ds->target);
	free(ds);
}

int scar_synth_classification(uint64_t n, uint64_t d, uint32_t classes, double sep,
			      uint64_t seed, struct scar_dense **out, struct scar_error *err)
{
	struct scar_dense *ds;
	struct scar_rng r;
	double *mean;

	*out = NULL;
	if (!n || !d || classes < 2 || !(sep >= 0) || d > (1u << 24) || n > UINT64_MAX / d / 4)
		return scar_error_set(err, SCAR_EINVAL, "synthetic classification: bad size");
	ds = calloc(1, sizeof(*ds));
	mean = malloc(classes * d * sizeof(*mean));
	if (!ds || !mean || !(ds->x = malloc(n * d * sizeof(float))) ||
	    !(ds->label = malloc(n * sizeof(uint32_t)))) {
		free(mean);
		dense_release(ds);
		return nomem(err);
	}
	ds->n = n;
	ds->d = d;
	ds->classes = classes;
	scar_rng_seed_stream(&r, seed, STREAM_CLASS);
	for (uint64_t i = 0; i < classes * d; i++)
		mean[i] = sep * scar_rng_normal(&r);
	for (uint64_t i = 0; i < n; i++) {
		uint32_t c = (uint32_t)scar_rng_below(&r, classes);
		float *x = ds->x + i * d;

		ds->label[i] = c;
		for (uint64_t j = 0; j < d; j++)
			x[j] = (float)(mean[c * d + j] + scar_rng_normal(&r));
	}
	free(mean);
	*out = ds;
	return 0;
}

int scar_synth_regression(uint64_t n, uint64_t d, double noise, uint64_t seed,
			  struct scar_dense **out, struct scar_error *err)
{
	struct scar_dense *ds;
	struct scar_rng r;
	double *w, *scale;

	*out = NULL;
	if (!n || !d || !(noise >= 0) || d > (1u << 24) || n > UINT64_MAX / d / 4)
		return scar_error_set(err, SCAR_EINVAL, "synthetic regression: bad size");
	ds = calloc(1, sizeof(*ds));
	w = malloc(2 * d * sizeof(*w));
	if (!ds || !w || !(ds->x = malloc(n * d * sizeof(float))) ||
	    !(ds->target = malloc(n * sizeof(float)))) {
		free(w);
		dense_release(ds);
		return nomem(err);
	}
	scale = w + d;
	ds->n = n;
	ds->d = d;
	scar_rng_seed_stream(&r, seed, STREAM_REGR);
	/*
	 * Column j is scaled by 4^(-j/(d-1)): feature variances span 1 to 1/16,
	 * so gradient descent contracts at a rate clearly below 1 but not in a
	 * handful of steps.
	 */
	for (uint64_t j = 0; j < d; j++) {
		scale[j] = d > 1 ? pow(4.0, -(double)j / (double)(d - 1)) : 1.0;
		w[j] = scar_rng_normal(&r);
	}
	for (uint64_t i = 0; i < n; i++) {
		float *x = ds->x + i * d;
		double y = 0;

		for (uint64_t j = 0; j < d; j++) {
			x[j] = (float)(scale[j] * scar_rng_normal(&r));
			y += (double)x[j] * w[j];
		}
		ds->target[i] = (float)(y + noise * scar_rng_normal(&r));
	}
	free(w);
	*out = ds;
	return 0;
}

/* The planted global mean of synthetic ratings. */
#define SYNTH_RATING_MEAN 3.0

int scar_synth_ratings(uint32_t users, uint32_t items, uint32_t rank, double density,
		       double noise, uint64_t seed, struct scar_ratings **out,
		       struct scar_error *err)
{
	struct scar_ratings *rt;
	struct scar_rng r;
	double *u, *v, sd, lq;
	uint64_t cap, n = 0;

	*out = NULL;
	if (!users || !items || !rank || rank > 4096 || !(density > 0 && density <= 1) ||
	    !(noise >= 0))
		return scar_error_set(err, SCAR_EINVAL, "synthetic ratings: bad size");
	/* Expected count plus a generous margin; grown if ever exceeded. */
	cap = (uint64_t)(density * users * (double)items * 1.1) + 1024;
	rt = calloc(1, sizeof(*rt));
	u = malloc(((uint64_t)users + items) * rank * sizeof(*u));
	if (!rt || !u || !(rt->user = malloc(cap * 4)) || !(rt->item = malloc(cap * 4)) ||
	    !(rt->rating = malloc(cap * 4)))
		goto oom;
	v = u + (uint64_t)users * rank;
	rt->users = users;
	rt->items = items;
	scar_rng_seed_stream(&r, seed, STREAM_RATINGS);
	sd = 1.0 / sqrt((double)rank);
	for (uint64_t i = 0; i < ((uint64_t)users + items) * rank; i++)
		u[i] = sd * scar_rng_normal(&r);
	/* Cells by geometric skips: O(ratings), not O(users * items). */
	lq = density < 1 ? log1p(-density) : 0;
	for (uint32_t a = 0; a < users; a++) {
		for (uint64_t b = 0;; b++) {
			if (density < 1) {
				double x = scar_rng_uniform(&r);

				b += (uint64_t)floor(log1p(-x) / lq);
			}
			if (b >= items)
				break;
			if (n == cap) {
				void *p;

				cap *= 2;
				if (!(p = realloc(rt->user, cap * 4)))
					goto oom;
				rt->user = p;
				if (!(p = realloc(rt->item, cap * 4)))
					goto oom;
				rt->item = p;
				if (!(p = realloc(rt->rating, cap * 4)))
					goto oom;
				rt->rating = p;
			}
			rt->user[n] = a;
			rt->item[n] = (uint32_t)b;
			rt->rating[n] = (float)(SYNTH_RATING_MEAN +
				mu_dot(u + (uint64_t)a * rank, v + b * rank, rank) +
				noise * scar_rng_normal(&r));
			n++;
		}
	}
	rt->n = n;
	free(u);
	*out = rt;
	return 0;
oom:
	free(u);
	if (rt) {
		free(rt->user);
		free(rt->item);
		free(rt->rating);
		free(rt);
	}
	return nomem(err);
}

/* Index of the first cum[i] > x (cum increasing, cum[n-1] >= x). */
static uint64_t search_cum(const double *cum, uint64_t n, double x)
{
	uint64_t lo = 0, hi = n - 1;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (cum[mid] > x)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

int scar_synth_corpus(uint64_t docs, uint64_t vocab, uint32_t topics, uint64_t doc_len,
		      double alpha, double beta, uint64_t seed, struct scar_corpus **out,
		      double **topics_out, struct scar_error *err)
{
	struct scar_corpus *c;
	struct scar_rng r;
	double *phi = NULL, *cum = NULL, *theta = NULL;

	*out = NULL;
	if (topics_out)
		*topics_out = NULL;
	if (!docs || !vocab || vocab > UINT32_MAX || !topics || topics > 65536 || !doc_len ||
	    docs > UINT64_MAX / doc_len / 4 || !(alpha > 0) || !(beta > 0))
		return scar_error_set(err, SCAR_EINVAL, "synthetic corpus: bad size");
	c = calloc(1, sizeof(*c));
	if (!c || !(phi = malloc(topics * vocab * sizeof(*phi))) ||
	    !(cum = malloc(topics * vocab * sizeof(*cum))) ||
	    !(theta = malloc(topics * 2 * sizeof(*theta))) ||
	    !(c->doc_start = malloc((docs + 1) * sizeof(uint64_t))) ||
	    !(c->words = malloc(docs * doc_len * sizeof(uint32_t)))) {
		free(phi);
		free(cum);
		free(theta);
		if (c) {
			free(c->doc_start);
			free(c);
		}
		return nomem(err);
	}
	c->docs = docs;
	c->vocab = vocab;
	c->tokens = docs * doc_len;
	scar_rng_seed_stream(&r, seed, STREAM_CORPUS);
	for (uint32_t k = 0; k < topics; k++) {
		double s = 0;

		mu_dirichlet(&r, beta, phi + k * vocab, vocab);
		for (uint64_t w = 0; w < vocab; w++)
			cum[k * vocab + w] = (s += phi[k * vocab + w]);
	}
	for (uint64_t d = 0; d < docs; d++) {
		double *tcum = theta + topics, s = 0;

		c->doc_start[d] = d * doc_len;
		mu_dirichlet(&r, alpha, theta, topics);
		for (uint32_t k = 0; k < topics; k++)
			tcum[k] = (s += theta[k]);
		for (uint64_t i = 0; i < doc_len; i++) {
			uint64_t k = search_cum(tcum, topics, scar_rng_uniform(&r) * tcum[topics - 1]);
			const double *wc = cum + k * vocab;

			c->words[d * doc_len + i] =
				(uint32_t)search_cum(wc, vocab, scar_rng_uniform(&r) * wc[vocab - 1]);
		}
	}
	c->doc_start[docs] = docs * doc_len;
	free(cum);
	free(theta);
	if (topics_out)
		*topics_out = phi;
	else
		free(phi);
	*out = c;
	return 0;
}
