/*
 * test-models.c - the workloads on synthetic data: convergence to known
 * answers, recovery of planted structure, determinism and exact resume.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scar/data.h"
#include "scar/model.h"
#include "scar/tensor.h"
#include "model_mf.h"
#include "unit.h"

struct run {
	const struct scar_model_def *def;
	struct scar_model *m;
	struct scar_state *st;
	json_t *cfg;
};

/* Configure, create and init a model from a JSON config text; NULL on failure. */
static int run_open(struct run *r, const char *model, const char *cfgtext)
{
	struct scar_error err;
	json_error_t jerr;

	memset(r, 0, sizeof(*r));
	scar_error_clear(&err);
	r->def = scar_model_find(model);
	if (!r->def) {
		fprintf(stderr, "no model '%s'\n", model);
		return -1;
	}
	r->cfg = json_loads(cfgtext, 0, &jerr);
	if (!r->cfg || r->def->configure(r->cfg, &err) || r->def->create(&r->m, r->cfg, &err) ||
	    scar_state_new(&r->st, model, &err)) {
		fprintf(stderr, "%s: %s\n", model, err.msg);
		return -1;
	}
	json_decref(r->st->config);
	r->st->config = json_deep_copy(r->cfg);
	if (r->def->init_state(r->m, r->st, &err)) {
		fprintf(stderr, "%s: init: %s\n", model, err.msg);
		return -1;
	}
	return 0;
}

static int run_steps(struct run *r, int n)
{
	struct scar_error err;

	for (int i = 0; i < n; i++) {
		if (r->def->step(r->m, r->st, &err)) {
			fprintf(stderr, "%s: step: %s\n", r->def->name, err.msg);
			return -1;
		}
		r->st->iteration++;
	}
	return 0;
}

static double run_obj(struct run *r)
{
	struct scar_error err;
	double f = NAN;

	if (r->def->objective(r->m, r->st, &f, &err))
		fprintf(stderr, "%s: objective: %s\n", r->def->name, err.msg);
	return f;
}

static double run_heldout(struct run *r)
{
	struct scar_error err;
	double f = NAN;

	if (r->def->heldout && r->def->heldout(r->m, r->st, &f, &err))
		fprintf(stderr, "%s: heldout: %s\n", r->def->name, err.msg);
	return f;
}

static void run_close(struct run *r)
{
	if (r->def && r->m)
		r->def->free(r->m);
	scar_state_free(r->st);
	json_decref(r->cfg);
}

/* Nonzero when the two states hold bit-identical tensors. */
static int states_equal(const struct scar_state *a, const struct scar_state *b)
{
	if (a->ntensors != b->ntensors)
		return 0;
	for (size_t i = 0; i < a->ntensors; i++) {
		const struct scar_tensor *x = a->tensors[i], *y = scar_state_find(b, x->name);

		if (!y || !scar_tensor_same_layout(x, y) || x->role != y->role ||
		    memcmp(x->data, y->data, scar_tensor_bytes(x)) != 0)
			return 0;
	}
	return 1;
}

/* Determinism and exact resume: N straight == k, clone, N - k; two runs equal. */
static void check_resume(const char *model, const char *cfg, int k, int n)
{
	struct run a, b;
	struct scar_state *mid = NULL;
	struct scar_error err;

	if (run_open(&a, model, cfg) || run_open(&b, model, cfg)) {
		CHECK(0);
		return;
	}
	CHECK(states_equal(a.st, b.st));
	CHECK(run_steps(&a, n) == 0);
	CHECK(run_steps(&b, k) == 0);
	CHECK_RC(scar_state_clone(&mid, b.st, &err));
	/* Continue from the clone in a fresh model instance, as a resumed run would. */
	run_close(&b);
	CHECK(run_open(&b, model, cfg) == 0);
	scar_state_free(b.st);
	b.st = mid;
	CHECK(run_steps(&b, n - k) == 0);
	CHECK(states_equal(a.st, b.st));
	CHECK(run_obj(&a) == run_obj(&b));
	run_close(&a);
	run_close(&b);
}

static void test_ridge(void)
{
	struct run r;
	struct scar_error err;
	double c = 0, d0 = 0, d1 = 0, f0, f1;

	if (run_open(&r, "ridge", "{\"n\": 400, \"d\": 20, \"seed\": 3}")) {
		CHECK(0);
		return;
	}
	CHECK_RC(r.def->contraction(r.m, &c, &err));
	CHECK(c > 0 && c < 1);
	CHECK_RC(r.def->dist_to_opt(r.m, r.st, &d0, &err));
	f0 = run_obj(&r);
	CHECK(run_steps(&r, 1) == 0);
	CHECK_RC(r.def->dist_to_opt(r.m, r.st, &d1, &err));
	/* One step contracts by at most c (a tiny slack for rounding). */
	CHECK(d1 <= c * d0 * (1 + 1e-12));
	/* The slowest direction dominates: successive distances shrink by c itself. */
	{
		double da, db;

		CHECK(run_steps(&r, 300) == 0);
		CHECK_RC(r.def->dist_to_opt(r.m, r.st, &da, &err));
		CHECK(run_steps(&r, 1) == 0);
		CHECK_RC(r.def->dist_to_opt(r.m, r.st, &db, &err));
		CHECK_NEAR(db / da, c, 1e-4);
	}
	CHECK(run_steps(&r, 1699) == 0);
	CHECK_RC(r.def->dist_to_opt(r.m, r.st, &d1, &err));
	CHECK(d1 < 1e-9 * d0);
	f1 = run_obj(&r);
	CHECK(f1 < f0);
	/* Independently: solve (X^T X / n + lambda I) w = X^T y / n by Gaussian elimination. */
	{
		struct scar_dense *ds = NULL;
		double a[20][21] = { { 0 } }, maxdiff = 0;
		const double *w = scar_state_find(r.st, "w")->data;

		CHECK_RC(scar_synth_regression(400, 20, 0.1, 3, &ds, &err));
		for (uint64_t i = 0; ds && i < ds->n; i++)
			for (int p = 0; p < 20; p++) {
				for (int q = 0; q < 20; q++)
					a[p][q] += (double)ds->x[i * 20 + p] * ds->x[i * 20 + q] / 400;
				a[p][20] += (double)ds->x[i * 20 + p] * ds->target[i] / 400;
			}
		for (int p = 0; p < 20; p++)
			a[p][p] += 0.01;
		for (int p = 0; p < 20; p++)
			for (int q = p + 1; q < 20; q++) {
				double f = a[q][p] / a[p][p];

				for (int c2 = p; c2 <= 20; c2++)
					a[q][c2] -= f * a[p][c2];
			}
		for (int p = 19; p >= 0; p--) {
			for (int q = p + 1; q < 20; q++)
				a[p][20] -= a[p][q] * a[q][20];
			a[p][20] /= a[p][p];
			maxdiff = fmax(maxdiff, fabs(a[p][20] - w[p]));
		}
		CHECK(maxdiff < 1e-9);
		scar_dense_free(ds);
	}
	printf("ridge: c = %.6f, D = %.4g, dist after 2001 steps %.3g, objective %.6g -> %.6g\n",
	       c, d0, d1, f0, f1);
	run_close(&r);

	/* Unknown keys and bad values are rejected. */
	{
		json_t *cfg = json_pack("{s:i}", "bogus", 1);

		CHECK(r.def->configure(cfg, &err) == SCAR_EINVAL);
		CHECK(strstr(err.msg, "bogus") != NULL);
		json_decref(cfg);
		cfg = json_pack("{s:f}", "lambda", -1.0);
		CHECK(r.def->configure(cfg, &err) == SCAR_ERANGE);
		json_decref(cfg);
	}
	/* A step past 2 / lambda_max: c > 1 is reported, and divergence is an error. */
	if (run_open(&r, "ridge", "{\"eta\": 1000.0, \"init_scale\": 1.0}") == 0) {
		int rc = 0;

		CHECK_RC(r.def->contraction(r.m, &c, &err));
		CHECK(c > 1);
		for (int i = 0; i < 10000 && !rc; i++)
			rc = r.def->step(r.m, r.st, &err);
		CHECK(rc == SCAR_EDIVERGED);
	} else {
		CHECK(0);
	}
	run_close(&r);
	check_resume("ridge", "{\"init_scale\": 1.0}", 7, 20);
}

static void test_mlr(void)
{
	struct run r;
	double f0, f1, acc;

	if (run_open(&r, "mlr", "{\"seed\": 5}")) {
		CHECK(0);
		return;
	}
	f0 = run_obj(&r);
	CHECK_NEAR(f0, log(5.0), 1e-6);	/* zero weights: uniform over 5 classes */
	CHECK(run_steps(&r, 10) == 0);
	f1 = run_obj(&r);
	acc = run_heldout(&r);
	printf("mlr: cross-entropy %.4f -> %.4f, test accuracy %.4f\n", f0, f1, acc);
	CHECK(f1 < 0.2 * f0);
	CHECK(acc >= 0.95);
	run_close(&r);
	/* Without a test set a seeded fraction of the examples is held out. */
	if (run_open(&r, "mlr", "{\"n\": 2000, \"n_test\": 0, \"test_frac\": 0.25}") == 0) {
		CHECK(run_steps(&r, 3) == 0);
		acc = run_heldout(&r);
		CHECK(acc >= 0.95 && acc <= 1);
		CHECK(scar_tensor_rows(scar_state_find(r.st, "order")) < 1700);
	} else {
		CHECK(0);
	}
	run_close(&r);
	check_resume("mlr", "{\"n\": 1000, \"batch\": 50, \"init_scale\": 0.01}", 3, 8);
	/* A batch that does not divide n and one larger than n. */
	check_resume("mlr", "{\"n\": 300, \"batch\": 128}", 2, 5);
	check_resume("mlr", "{\"n\": 100, \"batch\": 1000, \"d\": 3}", 1, 3);
}

static void test_mf(void)
{
	struct run r;
	double prev, f, rmse = 0;
	int mono = 1;

	/* Planted rank 5, noise 0.1: the held-out RMSE must come within 10% of the noise. */
	if (run_open(&r, "mf", "{\"rank\": 5, \"density\": 0.2, \"lambda\": 0.005}")) {
		CHECK(0);
		return;
	}
	prev = run_obj(&r);
	for (int i = 0; i < 30; i++) {
		CHECK(run_steps(&r, 1) == 0);
		f = run_obj(&r);
		/* Every ALS block update is exact: the loss never rises (float storage slack). */
		if (f > prev * (1 + 1e-5))
			mono = 0;
		prev = f;
	}
	CHECK(mono);
	rmse = run_heldout(&r);
	printf("mf: planted noise 0.1, ALS test RMSE %.4f, objective %.4f\n", rmse, prev);
	CHECK(rmse <= 0.11);
	run_close(&r);

	if (run_open(&r, "mf", "{\"rank\": 5, \"density\": 0.2, \"lambda\": 0.005, "
		     "\"solver\": \"sgd\", \"lr\": 0.02}")) {
		CHECK(0);
		return;
	}
	f = run_heldout(&r);
	CHECK(run_steps(&r, 20) == 0);
	rmse = run_heldout(&r);
	printf("mf: SGD test RMSE %.4f -> %.4f after 20 epochs\n", f, rmse);
	CHECK(rmse < 0.5 * f);
	run_close(&r);
	{
		struct scar_error err;
		json_t *cfg = json_pack("{s:f}", "test_frac", 0.0);

		CHECK(r.def->configure(cfg, &err) == SCAR_ERANGE);
		json_decref(cfg);
	}
	check_resume("mf", "{\"users\": 200, \"items\": 150}", 3, 7);
	check_resume("mf", "{\"users\": 200, \"items\": 150, \"solver\": \"sgd\", "
		     "\"lambda_scale\": \"none\"}", 2, 5);
}

/*
 * DSGD (mf, solver sgd, workers W > 1): the workers of a stratum run in
 * parallel, each on its own copy of the stratum's starting state, and
 * their rows merged afterwards give bit for bit the model's sequential
 * step; each worker touches only its user block and its item block.
 */
static int dsgd_parallel_equal(const char *cfg, uint32_t W, int epochs)
{
	struct run a, b;
	struct scar_state **cp = calloc(W + 1, sizeof(*cp));
	struct scar_error err;
	int ok = 1;

	if (!cp || run_open(&a, "mf", cfg) || run_open(&b, "mf", cfg)) {
		free(cp);
		return 0;
	}
	for (int ep = 0; ep < epochs && ok; ep++) {
		struct scar_mf_params x, y, z;
		struct scar_mf_info mi;

		ok &= run_steps(&a, 1) == 0;
		ok &= scar_mf_sgd_begin(b.m, b.st, &err) == 0;
		scar_mf_info(b.m, &mi);
		ok &= mi.workers == W;
		for (uint32_t s = 0; s < W && ok; s++) {
			/* cp[W] is the stratum's start, cp[w] worker w's copy. */
			for (uint32_t w = 0; w <= W && ok; w++) {
				ok &= scar_state_clone(&cp[w], b.st, &err) == 0 &&
					scar_mf_params(b.m, cp[w], &y, &err) == 0;
				if (ok && w < W)
					scar_mf_sgd_block(b.m, cp[w], &y, w, s);
			}
			ok &= scar_mf_params(b.m, b.st, &x, &err) == 0 &&
				scar_mf_params(b.m, cp[W], &z, &err) == 0;
			for (uint32_t w = 0; w < W && ok; w++) {
				uint32_t ib = (w + s) % W, k = mi.rank;

				scar_mf_params(b.m, cp[w], &y, &err);
				for (uint32_t u = 0; u < mi.users; u++) {
					if (u % W == w) {
						memcpy(x.p + (uint64_t)u * k, y.p + (uint64_t)u * k, k * sizeof(float));
						x.bu[u] = y.bu[u];
					} else if (memcmp(z.p + (uint64_t)u * k, y.p + (uint64_t)u * k,
							  k * sizeof(float)) || z.bu[u] != y.bu[u]) {
						ok = 0;	/* a row outside the worker's blocks moved */
					}
				}
				for (uint32_t i = 0; i < mi.items; i++) {
					if (i % W == ib) {
						memcpy(x.q + (uint64_t)i * k, y.q + (uint64_t)i * k, k * sizeof(float));
						x.bi[i] = y.bi[i];
					} else if (memcmp(z.q + (uint64_t)i * k, y.q + (uint64_t)i * k,
							  k * sizeof(float)) || z.bi[i] != y.bi[i]) {
						ok = 0;
					}
				}
			}
			for (uint32_t w = 0; w <= W; w++) {
				scar_state_free(cp[w]);
				cp[w] = NULL;
			}
		}
		b.st->iteration++;
		ok &= states_equal(a.st, b.st);
	}
	run_close(&a);
	run_close(&b);
	free(cp);
	return ok;
}

static void test_mf_dsgd(void)
{
	struct run r, s;
	struct scar_error err;
	double f, rmse;
	static const char *const bad[] = {
		"{\"workers\": 2}", "{\"solver\": \"sgd\", \"workers\": 0}",
		"{\"solver\": \"sgd\", \"workers\": 1025}",
	};
	static const int bad_rc[] = { SCAR_EINVAL, SCAR_ERANGE, SCAR_ERANGE };

	/* DSGD learns as SGD does. */
	if (run_open(&r, "mf", "{\"rank\": 5, \"density\": 0.2, \"lambda\": 0.005, "
		     "\"solver\": \"sgd\", \"lr\": 0.02, \"workers\": 4}")) {
		CHECK(0);
		return;
	}
	f = run_heldout(&r);
	CHECK(run_steps(&r, 20) == 0);
	rmse = run_heldout(&r);
	printf("mf: DSGD (4 workers) test RMSE %.4f -> %.4f after 20 epochs\n", f, rmse);
	CHECK(rmse < 0.5 * f);
	run_close(&r);
	/* The stratified epoch is another algorithm than the sequential one. */
	if (run_open(&r, "mf", "{\"users\": 200, \"items\": 150, \"solver\": \"sgd\"}") ||
	    run_open(&s, "mf", "{\"users\": 200, \"items\": 150, \"solver\": \"sgd\", \"workers\": 4}")) {
		CHECK(0);
		return;
	}
	CHECK(states_equal(r.st, s.st));
	CHECK(run_steps(&r, 1) == 0 && run_steps(&s, 1) == 0);
	CHECK(!states_equal(r.st, s.st));
	run_close(&r);
	run_close(&s);
	/* Users and items not multiples of W; both penalty scalings. */
	CHECK(dsgd_parallel_equal("{\"users\": 203, \"items\": 151, \"solver\": \"sgd\", \"workers\": 4}", 4, 3));
	CHECK(dsgd_parallel_equal("{\"users\": 97, \"items\": 120, \"solver\": \"sgd\", \"workers\": 3, "
				  "\"lambda_scale\": \"none\"}", 3, 2));
	check_resume("mf", "{\"users\": 200, \"items\": 150, \"solver\": \"sgd\", \"workers\": 4}", 2, 5);
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		json_t *cfg = json_loads(bad[k], 0, NULL);

		CHECK(scar_model_find("mf")->configure(cfg, &err) == bad_rc[k]);
		json_decref(cfg);
	}
}

/* Total-variation distance between planted topic a (V doubles) and learned topic k. */
static double topic_tv(const double *a, const struct scar_tensor *wt, uint32_t k, uint32_t kk,
		       uint64_t v)
{
	double tot = 0, d = 0;

	for (uint64_t w = 0; w < v; w++)
		tot += ((const int32_t *)wt->data)[w * kk + k];
	for (uint64_t w = 0; w < v; w++)
		d += fabs(a[w] - ((const int32_t *)wt->data)[w * kk + k] / tot);
	return 0.5 * d;
}

/*
 * Server rows lost and reset to zero (a partial recovery from an old
 * checkpoint is milder): the counts go inconsistent and negative, sampling
 * must go on and the likelihood come back.
 */
static void test_lda_rollback(void)
{
	struct run r;
	struct scar_tensor *wt, *tt, *z;
	struct scar_error err;
	double f1, f2, f3;
	int neg = 0;
	double f4;

	if (run_open(&r, "lda", "{\"docs\": 300, \"words\": 200, \"topics\": 8, \"synth_topics\": 8}")) {
		CHECK(0);
		return;
	}
	CHECK(run_steps(&r, 40) == 0);
	f1 = run_obj(&r);
	wt = scar_state_find(r.st, "word_topic");
	tt = scar_state_find(r.st, "topic_totals");
	memset(wt->data, 0, scar_tensor_bytes(wt) / 2);
	memset(tt->data, 0, scar_tensor_bytes(tt));
	f2 = run_obj(&r);
	CHECK(isfinite(f2));
	CHECK(run_steps(&r, 1) == 0);
	for (uint64_t i = 0; i < scar_tensor_elems(wt); i++)
		neg |= ((int32_t *)wt->data)[i] < 0;
	CHECK(!neg);	/* decrements stop at zero */
	CHECK(run_steps(&r, 40) == 0);
	f3 = run_obj(&r);
	CHECK(run_steps(&r, 80) == 0);
	f4 = run_obj(&r);
	printf("lda: rows reset: loglik %.4f -> %.4f, 41 sweeps later %.4f, 121 later %.4f\n", f1, f2, f3, f4);
	CHECK(isfinite(f3) && f3 > f2 && f4 > f1 - 0.1);
	/* Negative counts (injected) are clamped, not trusted. */
	((int32_t *)wt->data)[3] = -5;
	((int32_t *)tt->data)[1] = -7;
	CHECK(run_steps(&r, 1) == 0);
	CHECK(((int32_t *)wt->data)[3] >= 0 && ((int32_t *)tt->data)[1] >= 0);
	CHECK(isfinite(run_obj(&r)));
	/* A corrupt assignment is refused, not followed out of bounds. */
	z = scar_state_find(r.st, "z");
	((uint32_t *)z->data)[5] = 8;
	CHECK(r.def->step(r.m, r.st, &err) == SCAR_ECORRUPT);
	run_close(&r);
}

static void test_lda(void)
{
	struct run r;
	struct scar_corpus *c = NULL;
	struct scar_error err;
	double *phi = NULL, f0, f1, h0, h1, worst = 0, mean = 0;
	const uint32_t k = 8;
	const uint64_t v = 300;
	int used[8] = { 0 }, distinct = 1;

	if (run_open(&r, "lda", "{\"docs\": 800, \"words\": 300, \"synth_topics\": 8, "
		     "\"topics\": 8, \"doc_len\": 80, \"seed\": 4}")) {
		CHECK(0);
		return;
	}
	/* The same generator call as the model's: the planted topics. */
	CHECK_RC(scar_synth_corpus(800, 300, 8, 80, 0.1, 0.05, 4, &c, &phi, &err));
	f0 = run_obj(&r);
	h0 = run_heldout(&r);
	CHECK(run_steps(&r, 100) == 0);
	f1 = run_obj(&r);
	h1 = run_heldout(&r);
	CHECK(f1 > f0 + 0.3);
	CHECK(h1 > h0 + 0.3);
	for (uint32_t a = 0; a < k && phi; a++) {
		double best = 2;
		uint32_t bk = 0;

		for (uint32_t b = 0; b < k; b++) {
			double d = topic_tv(phi + a * v, scar_state_find(r.st, "word_topic"), b, k, v);

			if (d < best) {
				best = d;
				bk = b;
			}
		}
		distinct &= !used[bk];
		used[bk] = 1;
		worst = fmax(worst, best);
		mean += best / k;
	}
	printf("lda: loglik/token %.4f -> %.4f, held-out %.4f -> %.4f, topic TV mean %.3f worst %.3f\n",
	       f0, f1, h0, h1, mean, worst);
	CHECK(distinct);
	CHECK(mean < 0.15);
	CHECK(worst < 0.3);
	run_close(&r);
	scar_corpus_free(c);
	free(phi);
	test_lda_rollback();
	check_resume("lda", "{\"docs\": 100, \"words\": 50, \"topics\": 13}", 3, 7);
	check_resume("lda", "{\"docs\": 60, \"words\": 40, \"topics\": 16, \"doc_len\": 7}", 2, 4);
}

/* The real-data paths of each model, on tiny files written here. */
static void test_data_paths(void)
{
	char dir[] = "/tmp/test-models-XXXXXX", path[256], cfg[512];
	struct run r;
	FILE *f;
	double v;

	if (!mkdtemp(dir)) {
		CHECK(0);
		return;
	}
	/* ridge: y = 2 x1 - x2 exactly; with a tiny lambda w ends near (2, -1). */
	snprintf(path, sizeof(path), "%s/reg.svm", dir);
	f = fopen(path, "w");
	for (int i = 0; f && i < 40; i++) {
		double a = (i % 7) - 3, b = (i % 5) - 2;

		fprintf(f, "%g 1:%g 2:%g\n", 2 * a - b, a, b);
	}
	if (f)
		fclose(f);
	snprintf(cfg, sizeof(cfg), "{\"data\": \"%s\", \"lambda\": 1e-9}", path);
	if (run_open(&r, "ridge", cfg) == 0) {
		const double *w;

		CHECK(run_steps(&r, 500) == 0);
		w = scar_state_find(r.st, "w")->data;
		CHECK_NEAR(w[0], 2, 1e-6);
		CHECK_NEAR(w[1], -1, 1e-6);
	} else {
		CHECK(0);
	}
	run_close(&r);
	/* mlr: two separable classes labelled -1 / +1, held out by test_frac. */
	snprintf(path, sizeof(path), "%s/cls.svm", dir);
	f = fopen(path, "w");
	for (int i = 0; f && i < 200; i++)
		fprintf(f, "%s 1:%g 3:%g\n", i % 2 ? "+1" : "-1", (i % 2 ? 1.0 : -1.0) + 0.01 * (i % 13),
			0.1 * (i % 3));
	if (f)
		fclose(f);
	snprintf(cfg, sizeof(cfg), "{\"data\": \"%s\", \"test_frac\": 0.2}", path);
	if (run_open(&r, "mlr", cfg) == 0) {
		CHECK(scar_tensor_rows(scar_state_find(r.st, "weights")) == 4);	/* d = 3, + bias */
		CHECK(run_steps(&r, 5) == 0);
		v = run_heldout(&r);
		CHECK(v == 1.0);
	} else {
		CHECK(0);
	}
	run_close(&r);
	/* mf: an ml-100k style u.data file. */
	snprintf(path, sizeof(path), "%s/u.data", dir);
	f = fopen(path, "w");
	for (int u = 1; f && u <= 30; u++)
		for (int i = 1; i <= 20; i++)
			if ((u * 7 + i * 3) % 4)
				fprintf(f, "%d\t%d\t%d\t8800000%02d\n", u, i, 1 + (u + i) % 5, i);
	if (f)
		fclose(f);
	snprintf(cfg, sizeof(cfg), "{\"data\": \"%s\", \"rank\": 2}", dir);	/* a directory */
	if (run_open(&r, "mf", cfg) == 0) {
		double h0 = run_heldout(&r);

		CHECK(run_steps(&r, 5) == 0);
		v = run_heldout(&r);
		CHECK(isfinite(v) && v < h0);
	} else {
		CHECK(0);
	}
	run_close(&r);
	/* lda: a UCI bag-of-words file of 20 documents. */
	snprintf(path, sizeof(path), "%s/docword.t.txt", dir);
	f = fopen(path, "w");
	if (f) {
		fprintf(f, "20\n12\n%d\n", 20 * 4);
		for (int d = 1; d <= 20; d++)
			for (int w = 0; w < 4; w++)
				fprintf(f, "%d %d %d\n", d, 1 + (d % 3) * 4 + w, 1 + w);
		fclose(f);
	}
	snprintf(cfg, sizeof(cfg), "{\"data\": \"%s\", \"topics\": 3, \"heldout_frac\": 0.3}", path);
	if (run_open(&r, "lda", cfg) == 0) {
		double f0 = run_obj(&r);

		CHECK(run_steps(&r, 30) == 0);
		CHECK(run_obj(&r) > f0);
		CHECK(isfinite(run_heldout(&r)));
	} else {
		CHECK(0);
	}
	run_close(&r);
	/* A missing file is an error naming it, not a crash. */
	snprintf(cfg, sizeof(cfg), "{\"data\": \"%s/none.txt\"}", dir);
	{
		const char *models[] = { "ridge", "mlr", "mf", "lda" };

		for (int i = 0; i < 4; i++) {
			const struct scar_model_def *def = scar_model_find(models[i]);
			struct scar_model *m = NULL;
			struct scar_error err;
			json_error_t jerr;
			json_t *c = json_loads(cfg, 0, &jerr);

			scar_error_clear(&err);
			CHECK(def->configure(c, &err) == 0);
			CHECK(def->create(&m, c, &err) < 0 && m == NULL);
			CHECK(strstr(err.msg, "none.txt") || strstr(err.file, "none.txt"));
			json_decref(c);
		}
	}
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	CHECK(system(path) == 0);
}

static void test_registry(void)
{
	const struct scar_model_def *const *m = scar_models();
	int n = 0;

	for (; m[n]; n++) {
		CHECK(scar_model_find(m[n]->name) == m[n]);
		CHECK(m[n]->configure && m[n]->create && m[n]->init_state && m[n]->step &&
		      m[n]->objective && m[n]->free && m[n]->objective_name && m[n]->summary);
	}
	CHECK(n == 4);
	CHECK(scar_model_find("nope") == NULL);
	/* configure fills every default, is idempotent, and refuses unknown keys. */
	for (int i = 0; i < n; i++) {
		struct scar_error err;
		json_t *a = json_object(), *b, *bad = json_pack("{s:i}", "no_such_key", 1);

		CHECK_RC(m[i]->configure(a, &err));
		CHECK(json_object_get(a, "seed") && json_object_get(a, "data_seed"));
		b = json_deep_copy(a);
		CHECK_RC(m[i]->configure(b, &err));
		CHECK(json_equal(a, b));
		CHECK(m[i]->configure(bad, &err) == SCAR_EINVAL);
		CHECK(strstr(err.msg, "no_such_key") != NULL);
		json_decref(a);
		json_decref(b);
		json_decref(bad);
	}
	CHECK(scar_model_find(NULL) == NULL);
}

/*
 * The key table is what configure() checks against: the configuration of
 * {} holds exactly the keys the table gives defaults (synthetic data), with
 * those defaults; a key outside it is refused with the nearest one named.
 */
static void test_key_tables(void)
{
	const struct scar_model_def *const *m = scar_models();
	const char *const cands[] = { "lr", "lr_decay", "l2", "init_scale", "item_factors", "w" };
	const size_t nc = sizeof(cands) / sizeof(*cands);

	for (; *m; m++) {
		const struct scar_model_key *k;
		json_t *c = NULL, *bad;
		const char *name;
		json_t *v;
		size_t nk = 0;

		CHECK((*m)->keys != NULL);
		CHECK_RC(scar_model_configure((*m)->name, NULL, &c, UNIT_ERR));
		for (k = (*m)->keys; c && k->name; k++, nk++) {
			v = json_object_get(c, k->name);
			CHECK(scar_model_key_find(*m, k->name) == k);
			CHECK(k->help && *k->help);
			if (k->flags & SCAR_KEY_OPTIONAL) {
				CHECK(v == NULL);
			} else if (k->def_key) {
				CHECK(json_equal(v, json_object_get(c, k->def_key)));
			} else if (k->type == SCAR_KEY_INT) {
				CHECK(json_is_integer(v) && json_integer_value(v) == k->int_def);
				CHECK(k->int_min <= k->int_def && k->int_def <= k->int_max);
			} else if (k->type == SCAR_KEY_REAL) {
				CHECK(json_is_real(v) && json_real_value(v) == k->real_def);
				CHECK(k->real_min <= k->real_def && k->real_def <= k->real_max);
			} else {
				CHECK(json_is_string(v) && strcmp(json_string_value(v), k->str_def) == 0);
			}
		}
		/* nothing but the table's keys */
		json_object_foreach(c, name, v)
			CHECK(scar_model_key_find(*m, name) != NULL);
		CHECK(json_object_size(c) <= nk);
		json_decref(c);
		/* a slip names the key meant; a stranger lists them all */
		bad = json_pack("{s:i}", "sedd", 1);
		CHECK_CODE(scar_model_configure((*m)->name, bad, NULL, UNIT_ERR), SCAR_EINVAL);
		CHECK(strstr(unit_err_.msg, "unknown configuration key 'sedd'; did you mean 'seed'?") != NULL);
		json_decref(bad);
		bad = json_pack("{s:i}", "learning_rate", 1);
		CHECK_CODE(scar_model_configure((*m)->name, bad, NULL, UNIT_ERR), SCAR_EINVAL);
		CHECK(strstr(unit_err_.msg, "(its keys: seed, data_seed, ") != NULL);
		json_decref(bad);
	}
	CHECK(scar_model_key_find(scar_model_find("mf"), "nope") == NULL);
	CHECK(scar_model_key_find(NULL, "seed") == NULL);
	CHECK(strcmp(scar_key_type_name(SCAR_KEY_REAL), "real") == 0);

	/* "did you mean": slips of an edit or a swap, case ignored; short names need an exact hit */
	CHECK(scar_name_nearest("lr_decy", cands, nc) == 1);
	CHECK(scar_name_nearest("lr_deacy", cands, nc) == 1);	/* a swap is one edit */
	CHECK(scar_name_nearest("LR", cands, nc) == 0);
	CHECK(scar_name_nearest("item_factor", cands, nc) == 4);
	CHECK(scar_name_nearest("init_scal", cands, nc) == 3);
	CHECK(scar_name_nearest("W", cands, nc) == 5);
	CHECK(scar_name_nearest("x", cands, nc) == nc);		/* one letter: not a slip of "w" */
	CHECK(scar_name_nearest("learning_rate", cands, nc) == nc);
	CHECK(scar_name_nearest("", cands, nc) == nc);
	CHECK(scar_name_nearest(NULL, cands, nc) == nc);
	CHECK(scar_name_nearest("lr", NULL, 0) == 0);
}

int main(void)
{
	test_registry();
	test_key_tables();
	test_ridge();
	test_mlr();
	test_mf();
	test_mf_dsgd();
	test_lda();
	test_data_paths();
	return unit_done("test-models");
}
