/*
 * test-models-real.c - the workloads on real data, when `make data` has put
 * it under ${SCAR_DATA:-${XDG_CACHE_HOME:-$HOME/.cache}/scar}; each check
 * is skipped with a printed reason when its files are missing.
 *   mlr on Fashion-MNIST reaches >= 0.84 test accuracy;
 *   mf (ALS) on MovieLens ml-latest-small, 80/20 split: test RMSE <= 0.87;
 *   lda on the SpamAssassin corpus: the likelihood rises.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scar/model.h"
#include "scar/tensor.h"
#include "unit.h"

static char datadir[4096];

static void find_datadir(void)
{
	const char *d = getenv("SCAR_DATA"), *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");

	if (d && *d)
		snprintf(datadir, sizeof(datadir), "%s", d);
	else if (x && *x)
		snprintf(datadir, sizeof(datadir), "%s/scar", x);
	else
		snprintf(datadir, sizeof(datadir), "%s/.cache/scar", h ? h : ".");
}

/* Nonzero (and a printed skip) when datadir/rel is missing. */
static int missing(const char *what, const char *rel)
{
	char p[4200];

	snprintf(p, sizeof(p), "%s/%s", datadir, rel);
	if (access(p, R_OK) == 0)
		return 0;
	printf("skip %s: real data '%s' not found (run 'make data')\n", what, p);
	return 1;
}

struct run {
	const struct scar_model_def *def;
	struct scar_model *m;
	struct scar_state *st;
	json_t *cfg;
};

static int run_open(struct run *r, const char *model, json_t *cfg)
{
	struct scar_error err;

	memset(r, 0, sizeof(*r));
	r->def = scar_model_find(model);
	r->cfg = cfg;
	if (!r->def || r->def->configure(cfg, &err) || r->def->create(&r->m, cfg, &err) ||
	    scar_state_new(&r->st, model, &err)) {
		fprintf(stderr, "%s: %s\n", model, r->def ? err.msg : "no such model");
		return -1;
	}
	json_decref(r->st->config);
	r->st->config = json_deep_copy(cfg);
	if (r->def->init_state(r->m, r->st, &err)) {
		fprintf(stderr, "%s: %s\n", model, err.msg);
		return -1;
	}
	return 0;
}

static int run_step(struct run *r)
{
	struct scar_error err;

	if (r->def->step(r->m, r->st, &err)) {
		fprintf(stderr, "%s: %s\n", r->def->name, err.msg);
		return -1;
	}
	r->st->iteration++;
	return 0;
}

static void run_close(struct run *r)
{
	if (r->def && r->m)
		r->def->free(r->m);
	scar_state_free(r->st);
	json_decref(r->cfg);
}

static void test_mlr_fashion(void)
{
	struct run r;
	struct scar_error err;
	char dir[4200];
	double acc = 0, best = 0;
	int at = -1;

	if (missing("mlr Fashion-MNIST", "fashion-mnist/train-images-idx3-ubyte.gz") &&
	    missing("mlr Fashion-MNIST", "fashion-mnist/train-images-idx3-ubyte"))
		return;
	snprintf(dir, sizeof(dir), "%s/fashion-mnist", datadir);
	if (run_open(&r, "mlr", json_pack("{s:s}", "data", dir))) {
		CHECK(0);
		run_close(&r);
		return;
	}
	for (int e = 1; e <= 20; e++) {
		CHECK(run_step(&r) == 0);
		CHECK_RC(r.def->heldout(r.m, r.st, &acc, &err));
		if (acc > best)
			best = acc;
		if (at < 0 && acc >= 0.84)
			at = e;
	}
	printf("mlr Fashion-MNIST: best test accuracy %.4f in 20 epochs (0.84 first at epoch %d), last %.4f\n",
	       best, at, acc);
	CHECK(best >= 0.84);
	CHECK(acc >= 0.83);
	run_close(&r);
}

static void test_mf_movielens(void)
{
	struct run r;
	struct scar_error err;
	char path[4200];
	double rmse = 0;

	if (missing("mf MovieLens", "movielens/ratings.csv"))
		return;
	snprintf(path, sizeof(path), "%s/movielens/ratings.csv", datadir);
	if (run_open(&r, "mf", json_pack("{s:s}", "data", path))) {
		CHECK(0);
		run_close(&r);
		return;
	}
	for (int i = 0; i < 25; i++)
		CHECK(run_step(&r) == 0);
	CHECK_RC(r.def->heldout(r.m, r.st, &rmse, &err));
	printf("mf MovieLens ALS: test RMSE %.4f after 25 sweeps (target <= 0.87)\n", rmse);
	CHECK(rmse <= 0.87);
	run_close(&r);
}

static void test_lda_spam(void)
{
	struct run r;
	struct scar_error err;
	char dw[4200], vo[4200];
	double f0 = 0, f1 = 0, h1 = 0;

	if (missing("lda SpamAssassin", "spam/docword.spam.txt"))
		return;
	snprintf(dw, sizeof(dw), "%s/spam/docword.spam.txt", datadir);
	snprintf(vo, sizeof(vo), "%s/spam/vocab.spam.txt", datadir);
	if (run_open(&r, "lda", json_pack("{s:s,s:s,s:i}", "data", dw, "vocab", vo, "topics", 50))) {
		CHECK(0);
		run_close(&r);
		return;
	}
	CHECK_RC(r.def->objective(r.m, r.st, &f0, &err));
	for (int i = 0; i < 10; i++)
		CHECK(run_step(&r) == 0);
	CHECK_RC(r.def->objective(r.m, r.st, &f1, &err));
	CHECK_RC(r.def->heldout(r.m, r.st, &h1, &err));
	printf("lda SpamAssassin K=50: log-likelihood per token %.4f -> %.4f in 10 sweeps, held-out %.4f\n",
	       f0, f1, h1);
	CHECK(f1 > f0 + 0.2);
	run_close(&r);
}

int main(void)
{
	find_datadir();
	test_mlr_fashion();
	test_mf_movielens();
	test_lda_spam();
	return unit_done("test-models-real");
}
