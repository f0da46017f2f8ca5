/*
 * test-synth.c - the synthetic generators: pure functions of their
 * arguments (same seed, same bytes; another seed, other data), the shapes
 * promised in scar/data.h, and the planted structure really there.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scar/data.h"
#include "unit.h"

static void test_classification(void)
{
	struct scar_dense *a = NULL, *b = NULL, *c = NULL;
	struct scar_error err;
	double mean[3][4] = { { 0 } }, cnt[3] = { 0 };

	CHECK_RC(scar_synth_classification(3000, 4, 3, 5.0, 7, &a, &err));
	CHECK_RC(scar_synth_classification(3000, 4, 3, 5.0, 7, &b, &err));
	CHECK_RC(scar_synth_classification(3000, 4, 3, 5.0, 8, &c, &err));
	if (!a || !b || !c)
		goto out;
	CHECK(a->n == 3000 && a->d == 4 && a->classes == 3 && a->label && !a->target);
	CHECK(memcmp(a->x, b->x, 3000 * 4 * sizeof(float)) == 0);
	CHECK(memcmp(a->label, b->label, 3000 * sizeof(uint32_t)) == 0);
	CHECK(memcmp(a->x, c->x, 3000 * 4 * sizeof(float)) != 0);
	for (uint64_t i = 0; i < a->n; i++) {
		CHECK(a->label[i] < 3);
		cnt[a->label[i]]++;
		for (int j = 0; j < 4; j++)
			mean[a->label[i]][j] += a->x[i * 4 + j];
	}
	/* Within-class spread is N(0, 1): each class mean is estimated to ~0.03. */
	for (int k = 0; k < 3; k++) {
		double var = 0;

		CHECK(cnt[k] > 800);
		for (int j = 0; j < 4; j++)
			mean[k][j] /= cnt[k];
		for (uint64_t i = 0; i < a->n; i++)
			if (a->label[i] == (uint32_t)k)
				var += (a->x[i * 4] - mean[k][0]) * (a->x[i * 4] - mean[k][0]);
		CHECK_NEAR(var / cnt[k], 1.0, 0.15);
	}
out:
	scar_dense_free(a);
	scar_dense_free(b);
	scar_dense_free(c);
	CHECK(scar_synth_classification(10, 0, 3, 1, 1, &a, &err) == SCAR_EINVAL);
	CHECK(scar_synth_classification(10, 2, 1, 1, 1, &a, &err) == SCAR_EINVAL);
	CHECK(a == NULL);
}

static void test_regression(void)
{
	struct scar_dense *a = NULL, *b = NULL;
	struct scar_error err;
	double v0 = 0, vl = 0;

	CHECK_RC(scar_synth_regression(4000, 10, 0.0, 3, &a, &err));
	CHECK_RC(scar_synth_regression(4000, 10, 0.0, 3, &b, &err));
	if (!a || !b)
		goto out;
	CHECK(a->target && !a->label && a->classes == 0);
	CHECK(memcmp(a->target, b->target, 4000 * sizeof(float)) == 0);
	/* Column scales run from 1 down to 1/4. */
	for (uint64_t i = 0; i < a->n; i++) {
		v0 += a->x[i * 10] * a->x[i * 10];
		vl += a->x[i * 10 + 9] * a->x[i * 10 + 9];
	}
	CHECK_NEAR(v0 / 4000, 1.0, 0.1);
	CHECK_NEAR(vl / 4000, 1.0 / 16, 0.01);
out:
	scar_dense_free(a);
	scar_dense_free(b);
	CHECK(scar_synth_regression(0, 3, 0.1, 1, &a, &err) == SCAR_EINVAL);
}

static void test_ratings(void)
{
	struct scar_ratings *a = NULL, *b = NULL, *c = NULL;
	struct scar_error err;
	double mean = 0, expect = 300.0 * 200 * 0.05;
	int sorted = 1;

	CHECK_RC(scar_synth_ratings(300, 200, 4, 0.05, 0.1, 11, &a, &err));
	CHECK_RC(scar_synth_ratings(300, 200, 4, 0.05, 0.1, 11, &b, &err));
	CHECK_RC(scar_synth_ratings(300, 200, 4, 1.0, 0.1, 11, &c, &err));
	if (!a || !b || !c)
		goto out;
	CHECK(a->users == 300 && a->items == 200);
	CHECK(fabs((double)a->n - expect) < 5 * sqrt(expect));
	CHECK(a->n == b->n && memcmp(a->rating, b->rating, a->n * sizeof(float)) == 0);
	CHECK(memcmp(a->item, b->item, a->n * sizeof(uint32_t)) == 0);
	for (uint64_t i = 0; i < a->n; i++) {
		CHECK(a->user[i] < 300 && a->item[i] < 200);
		if (i && (a->user[i] < a->user[i - 1] ||
			  (a->user[i] == a->user[i - 1] && a->item[i] <= a->item[i - 1])))
			sorted = 0;	/* each cell at most once */
		mean += a->rating[i];
	}
	CHECK(sorted);
	CHECK_NEAR(mean / (double)a->n, 3.0, 0.05);
	CHECK(c->n == 300 * 200);	/* density 1: every cell */
out:
	scar_ratings_free(a);
	scar_ratings_free(b);
	scar_ratings_free(c);
	CHECK(scar_synth_ratings(3, 3, 2, 0.0, 0.1, 1, &a, &err) == SCAR_EINVAL);
	CHECK(scar_synth_ratings(3, 3, 2, 1.5, 0.1, 1, &a, &err) == SCAR_EINVAL);
}

static void test_corpus(void)
{
	struct scar_corpus *a = NULL, *b = NULL;
	struct scar_error err;
	double *phi = NULL, *phi2 = NULL;
	uint64_t *hits = NULL;
	int ok = 1;

	CHECK_RC(scar_synth_corpus(500, 100, 4, 60, 0.1, 0.1, 9, &a, &phi, &err));
	CHECK_RC(scar_synth_corpus(500, 100, 4, 60, 0.1, 0.1, 9, &b, &phi2, &err));
	if (!a || !b || !phi || !phi2)
		goto out;
	CHECK(a->docs == 500 && a->vocab == 100 && a->tokens == 500 * 60);
	CHECK(a->doc_start[0] == 0 && a->doc_start[500] == a->tokens);
	CHECK(memcmp(a->words, b->words, a->tokens * sizeof(uint32_t)) == 0);
	CHECK(memcmp(phi, phi2, 4 * 100 * sizeof(double)) == 0);
	for (int k = 0; k < 4; k++) {
		double s = 0;

		for (int w = 0; w < 100; w++) {
			s += phi[k * 100 + w];
			ok &= phi[k * 100 + w] >= 0;
		}
		CHECK_NEAR(s, 1.0, 1e-9);
	}
	CHECK(ok);
	/* Word frequencies follow the average of the planted topics (doc mixtures vary). */
	hits = calloc(100, sizeof(*hits));
	for (uint64_t i = 0; hits && i < a->tokens; i++) {
		CHECK(a->words[i] < 100);
		hits[a->words[i]]++;
	}
	if (hits) {
		uint64_t zero_mass = 0;

		for (int w = 0; w < 100; w++) {
			double p = 0;

			for (int k = 0; k < 4; k++)
				p += phi[k * 100 + w];
			if (p < 1e-12)
				zero_mass += hits[w];
		}
		CHECK(zero_mass == 0);
	}
out:
	free(hits);
	free(phi);
	free(phi2);
	scar_corpus_free(a);
	scar_corpus_free(b);
	/* Tiny beta must not underflow into NaN topics. */
	a = NULL;
	phi = NULL;
	CHECK_RC(scar_synth_corpus(5, 1000, 3, 10, 0.01, 0.001, 1, &a, &phi, &err));
	if (phi) {
		double s = 0;

		for (int w = 0; w < 1000; w++)
			s += phi[w];
		CHECK(isfinite(s) && fabs(s - 1) < 1e-9);
	}
	free(phi);
	scar_corpus_free(a);
	CHECK(scar_synth_corpus(5, 10, 0, 10, 0.1, 0.1, 1, &a, NULL, &err) == SCAR_EINVAL);
	CHECK(scar_synth_corpus(5, 10, 2, 10, 0.0, 0.1, 1, &a, NULL, &err) == SCAR_EINVAL);
}

int main(void)
{
	test_classification();
	test_regression();
	test_ratings();
	test_corpus();
	return unit_done("test-synth");
}
