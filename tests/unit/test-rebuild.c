/*
 * test-rebuild.c - recovery "rebuild" (scar(7)) checked against what it
 * claims to compute, by other code: lda's lost count rows against the
 * model's full recount from the assignments; mf's lost rows against an
 * ALS half-step solved here, from the ratings regenerated here, by
 * Gaussian elimination rather than the model's Cholesky.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scar/data.h"
#include "scar/model.h"
#include "scar/shard.h"
#include "scar/tensor.h"
#include "model_lda.h"
#include "rewind.h"
#include "unit.h"

/* A configured, created, initialized model and its state, stepped n times. */
static int open_model(const char *model, const char *cfgtext, int n,
		      const struct scar_model_def **def, struct scar_model **m,
		      struct scar_state **st, json_t **cfg)
{
	json_error_t jerr;

	*def = scar_model_find(model);
	*cfg = json_loads(cfgtext, 0, &jerr);
	if (!*def || !*cfg || (*def)->configure(*cfg, UNIT_ERR) ||
	    (*def)->create(m, *cfg, UNIT_ERR) || scar_state_new(st, model, UNIT_ERR))
		return -1;
	json_decref((*st)->config);
	(*st)->config = json_deep_copy(*cfg);
	if ((*def)->init_state(*m, *st, UNIT_ERR))
		return -1;
	for (int i = 0; i < n; i++, (*st)->iteration++)
		if ((*def)->step(*m, *st, UNIT_ERR))
			return -1;
	return 0;
}

/* Every param row of a lost shard of st gets the value it has in from. */
static void restore_lost(struct scar_state *st, const struct scar_state *from,
			 const uint8_t *lost, uint32_t S)
{
	for (size_t i = 0; i < st->ntensors; i++) {
		struct scar_tensor *x = st->tensors[i];

		if (x->role != SCAR_ROLE_PARAM)
			continue;
		for (uint64_t r = 0; r < scar_tensor_rows(x); r++)
			if (lost[scar_shard_of_row(r, S)])
				memcpy(scar_tensor_row(x, r), scar_tensor_row(from->tensors[i], r),
				       scar_tensor_row_bytes(x));
	}
}

static void test_lda(void)
{
	const struct scar_model_def *def;
	struct scar_model *m = NULL;
	struct scar_state *st = NULL, *old = NULL, *pre = NULL, *full = NULL;
	json_t *cfg = NULL;
	uint8_t lost[5] = { 0, 1, 0, 0, 1 };
	uint64_t rows = 0, want = 0;
	const struct scar_tensor *wt, *tt;

	if (open_model("lda", "{\"docs\": 120, \"words\": 90, \"doc_len\": 30, \"topics\": 7}", 2,
		       &def, &m, &st, &cfg)) {
		CHECK_RC(-1);
		return;
	}
	CHECK_RC(scar_state_clone(&old, st, UNIT_ERR));	/* the saved view: 2 sweeps old */
	for (int i = 0; i < 3; i++, st->iteration++)
		CHECK_RC(def->step(m, st, UNIT_ERR));
	CHECK_RC(scar_state_clone(&pre, st, UNIT_ERR));
	/* Stale rows, as recovery "partial" leaves them; then rebuild. */
	restore_lost(st, old, lost, 5);
	CHECK(def->rebuild != NULL);
	CHECK_RC(def->rebuild(m, st, lost, 5, &rows, UNIT_ERR));
	/* The model's full recount of every count from z, on a copy. */
	CHECK_RC(scar_state_clone(&full, st, UNIT_ERR));
	CHECK_RC(scar_lda_sweep_end(m, full, UNIT_ERR));
	wt = scar_state_find(st, "word_topic");
	tt = scar_state_find(st, "topic_totals");
	CHECK(wt && tt);
	if (!wt || !tt)
		goto out;
	for (uint64_t r = 0; r < scar_tensor_rows(wt); r++) {
		const void *a = scar_tensor_row(wt, r);
		const void *b = scar_tensor_row(lost[r % 5] ? scar_state_find(full, "word_topic") :
						scar_state_find(pre, "word_topic"), r);

		want += lost[r % 5];
		CHECK(memcmp(a, b, scar_tensor_row_bytes(wt)) == 0);
	}
	for (uint64_t r = 0; r < scar_tensor_rows(tt); r++) {
		want += lost[r % 5];
		CHECK(memcmp(scar_tensor_row(tt, r),
			     scar_tensor_row(scar_state_find(full, "topic_totals"), r), 4) == 0);
	}
	CHECK(rows == want);
	/* Nothing perturbed: counts agree with z already, so rebuild changes nothing. */
	CHECK(memcmp(wt->data, scar_state_find(pre, "word_topic")->data,
		     scar_tensor_bytes(wt)) == 0);
	/* The assignments and worker counts are not the rebuild's to touch. */
	CHECK(memcmp(scar_state_find(st, "z")->data, scar_state_find(pre, "z")->data,
		     scar_tensor_bytes(scar_state_find(pre, "z"))) == 0);
out:
	scar_state_free(old);
	scar_state_free(pre);
	scar_state_free(full);
	scar_state_free(st);
	def->free(m);
	json_decref(cfg);
}

/* ---- mf: an ALS half-step, solved here ---- */

struct ratings_by {
	uint32_t n;		/* entities on this side */
	uint64_t *ptr;		/* n + 1 */
	uint32_t *other;
	float *r;
};

static void group_by(const struct scar_ratings *t, int by_user, struct ratings_by *g)
{
	uint64_t *fill;

	g->n = by_user ? t->users : t->items;
	g->ptr = calloc(g->n + 1, sizeof(*g->ptr));
	g->other = malloc(t->n * sizeof(*g->other));
	g->r = malloc(t->n * sizeof(*g->r));
	fill = calloc(g->n, sizeof(*fill));
	for (uint64_t e = 0; e < t->n; e++)
		g->ptr[(by_user ? t->user[e] : t->item[e]) + 1]++;
	for (uint32_t i = 0; i < g->n; i++)
		g->ptr[i + 1] += g->ptr[i];
	for (uint64_t e = 0; e < t->n; e++) {
		uint32_t k = by_user ? t->user[e] : t->item[e];
		uint64_t at = g->ptr[k] + fill[k]++;

		g->other[at] = by_user ? t->item[e] : t->user[e];
		g->r[at] = t->rating[e];
	}
	free(fill);
}

/*
 * Row e of one side: minimize sum (r - mu - ob_j - f.of_j - b)^2 +
 * lambda cnt (|f|^2 + b^2) by Gaussian elimination with partial pivoting.
 */
static void solve_row(const struct ratings_by *g, uint32_t e, uint32_t k, double lambda,
		      const float *of, const float *ob, double mu, float *f, float *b)
{
	uint32_t k1 = k + 1;
	double a[12][13] = { { 0 } }, z[12], x[12];
	uint64_t cnt = g->ptr[e + 1] - g->ptr[e];

	if (!cnt) {
		memset(f, 0, k * sizeof(*f));
		*b = 0;
		return;
	}
	for (uint64_t t = g->ptr[e]; t < g->ptr[e + 1]; t++) {
		uint32_t j = g->other[t];
		double y = g->r[t] - mu - ob[j];

		for (uint32_t i = 0; i < k; i++)
			z[i] = of[(uint64_t)j * k + i];
		z[k] = 1;
		for (uint32_t i = 0; i < k1; i++) {
			for (uint32_t c = 0; c < k1; c++)
				a[i][c] += z[i] * z[c];
			a[i][k1] += z[i] * y;
		}
	}
	for (uint32_t i = 0; i < k1; i++)
		a[i][i] += lambda * (double)cnt;
	for (uint32_t c = 0; c < k1; c++) {
		uint32_t p = c;

		for (uint32_t i = c + 1; i < k1; i++)
			if (fabs(a[i][c]) > fabs(a[p][c]))
				p = i;
		for (uint32_t j = 0; j <= k1; j++) {
			double tmp = a[c][j];

			a[c][j] = a[p][j];
			a[p][j] = tmp;
		}
		for (uint32_t i = c + 1; i < k1; i++) {
			double q = a[i][c] / a[c][c];

			for (uint32_t j = c; j <= k1; j++)
				a[i][j] -= q * a[c][j];
		}
	}
	for (uint32_t i = k1; i-- > 0;) {
		double s = a[i][k1];

		for (uint32_t j = i + 1; j < k1; j++)
			s -= a[i][j] * x[j];
		x[i] = s / a[i][i];
	}
	for (uint32_t i = 0; i < k; i++)
		f[i] = (float)x[i];
	*b = (float)x[k];
}

static float *param(struct scar_state *st, const char *name)
{
	return scar_state_find(st, name)->data;
}

static void test_mf(const char *solver)
{
	const struct scar_model_def *def;
	struct scar_model *m = NULL;
	struct scar_state *st = NULL, *old = NULL, *mine = NULL;
	struct scar_ratings *all = NULL, *train = NULL, *test = NULL;
	struct ratings_by gu, gi;
	json_t *cfg = NULL;
	char text[256];
	const uint32_t S = 4, K = 4;
	uint8_t lost[4] = { 1, 0, 0, 1 };	/* shard 0: the global mean too */
	uint64_t rows = 0;
	double maxd = 0, moved = 0;
	float *p, *q, *bu, *bi;
	double *mu;

	snprintf(text, sizeof(text),
		 "{\"users\": 150, \"items\": 110, \"density\": 0.2, \"rank\": %u, "
		 "\"lambda\": 0.05, \"solver\": \"%s\"}", K, solver);
	if (open_model("mf", text, 2, &def, &m, &st, &cfg)) {
		CHECK_RC(-1);
		return;
	}
	CHECK_RC(scar_state_clone(&old, st, UNIT_ERR));
	for (int i = 0; i < 4; i++, st->iteration++)
		CHECK_RC(def->step(m, st, UNIT_ERR));
	restore_lost(st, old, lost, S);
	CHECK_RC(scar_state_clone(&mine, st, UNIT_ERR));
	CHECK_RC(def->rebuild(m, st, lost, S, &rows, UNIT_ERR));

	/* The same ratings and split as the model (its defaults: data_seed 1, test_frac 0.2). */
	CHECK_RC(scar_synth_ratings(150, 110, 5, 0.2, 0.1, 1, &all, UNIT_ERR));
	CHECK_RC(scar_ratings_split(all, 0.2, 1, &train, &test, UNIT_ERR));
	group_by(train, 1, &gu);
	group_by(train, 0, &gi);
	p = param(mine, "user_factors");
	q = param(mine, "item_factors");
	bu = param(mine, "user_bias");
	bi = param(mine, "item_bias");
	mu = scar_state_find(mine, "global_mean")->data;
	/* users, items, users again: both sides lost rows */
	for (int pass = 0; pass < 3; pass++) {
		const struct ratings_by *g = pass == 1 ? &gi : &gu;

		for (uint32_t e = 0; e < g->n; e++)
			if (lost[e % S]) {
				if (pass == 1)
					solve_row(g, e, K, 0.05, p, bu, *mu, q + (uint64_t)e * K, bi + e);
				else
					solve_row(g, e, K, 0.05, q, bi, *mu, p + (uint64_t)e * K, bu + e);
			}
	}
	if (strcmp(solver, "als") == 0) {
		double s = 0;

		for (uint64_t e = 0; e < train->n; e++) {
			uint32_t u = train->user[e], i = train->item[e];
			float dot = 0;

			for (uint32_t j = 0; j < K; j++)
				dot += p[(uint64_t)u * K + j] * q[(uint64_t)i * K + j];
			s += train->rating[e] - bu[u] - bi[i] - dot;
		}
		*mu = s / (double)train->n;
	}
	for (size_t t = 0; t < st->ntensors; t++) {
		const struct scar_tensor *x = st->tensors[t], *y = mine->tensors[t];

		if (x->role != SCAR_ROLE_PARAM)
			continue;
		for (uint64_t e = 0; e < scar_tensor_elems(x); e++) {
			double a = x->dtype == SCAR_F64 ? ((double *)x->data)[e] : ((float *)x->data)[e];
			double b = y->dtype == SCAR_F64 ? ((double *)y->data)[e] : ((float *)y->data)[e];
			double o = y->dtype == SCAR_F64 ? ((double *)old->tensors[t]->data)[e] :
				((float *)old->tensors[t]->data)[e];

			maxd = fmax(maxd, fabs(a - b) / fmax(1, fabs(b)));
			moved = fmax(moved, fabs(a - o));
		}
	}
	printf("mf %s: rebuild vs the half-step solved here: max relative difference %.3g; "
	       "rows rebuilt %llu\n", solver, maxd, (unsigned long long)rows);
	CHECK(maxd < 1e-4);
	CHECK(moved > 1e-3);	/* the rebuild did something the saved rows did not have */
	/* 2 rows per lost user and item, and the global mean (shard 0). */
	{
		uint64_t want = 1;

		for (uint32_t u = 0; u < gu.n; u++)
			want += 2 * lost[u % S];
		for (uint32_t i = 0; i < gi.n; i++)
			want += 2 * lost[i % S];
		CHECK(rows == want);
	}
	free(gu.ptr), free(gu.other), free(gu.r);
	free(gi.ptr), free(gi.other), free(gi.r);
	scar_ratings_free(all);
	scar_ratings_free(train);
	scar_ratings_free(test);
	scar_state_free(old);
	scar_state_free(mine);
	scar_state_free(st);
	def->free(m);
	json_decref(cfg);
}

/* The models whose parameters are no function of what survives say so. */
static void test_none(void)
{
	CHECK(scar_model_find("mlr")->rebuild == NULL);
	CHECK(scar_model_find("ridge")->rebuild == NULL);
	CHECK(scar_model_find("mf")->rebuild != NULL);
	CHECK(scar_model_find("lda")->rebuild != NULL);
}

/* The one reader of the state's "rewind" record, and hostile records refused. */
static void test_rewind_record(void)
{
	static const char *const bad[] = {
		"[]", "{\"w\": 3}", "{\"w\": [[1]]}", "{\"w\": [[1, 2, 5]]}", "{\"w\": [[1, 0]]}",
		"{\"w\": [[1, 9]]}", "{\"w\": [[10, 1]]}", "{\"w\": [[-1, 1]]}",
		"{\"w\": [[2, 1], [2, 1]]}", "{\"w\": [[3, 1], [2, 1]]}", "{\"w\": [[1, 1.5]]}",
		"{\"w\": [\"x\"]}", "{\"w\": [[1, 9223372036854775807]]}",
	};
	struct scar_state *st = NULL;
	struct scar_rewind_row *rows;
	struct scar_tensor *t = NULL;
	uint64_t shape[2] = { 10, 3 }, age[20];
	json_error_t je;
	size_t n;

	CHECK_RC(scar_state_new(&st, "mlr", UNIT_ERR));
	CHECK_RC(scar_tensor_new(&t, "w", SCAR_F32, SCAR_ROLE_PARAM, 2, shape, UNIT_ERR));
	if (!st || !t)
		return;
	CHECK_RC(scar_state_add(st, t, UNIT_ERR));
	/* rows 1 and 4 lag 3 and 1 updates behind the iteration */
	json_object_set_new(st->extra, "rewind", json_loads("{\"w\": [[1, 3], [4, 1]]}", 0, &je));
	CHECK_RC(scar_rewind_rows(st, "w", 10, 5, &rows, &n, UNIT_ERR));
	CHECK(n == 2 && rows[0].row == 1 && rows[0].clock == 2 && rows[1].row == 4 &&
	      rows[1].clock == 4);
	free(rows);
	CHECK_RC(scar_rewind_rows(st, "w", 10, 8, &rows, &n, UNIT_ERR));
	CHECK(n == 2 && rows[0].clock == 5 && rows[1].clock == 7);
	free(rows);
	CHECK_RC(scar_rewind_rows(st, "other", 10, 5, &rows, &n, UNIT_ERR));
	CHECK(n == 0);
	free(rows);
	/* A checkpoint at 6 saves row 1 with 3 updates, row 4 with 5, the others with 6. */
	st->iteration = 6;
	CHECK_RC(scar_rewind_ages(st, t, NULL, age, UNIT_ERR));
	CHECK(age[2] == 6 && age[3] == 3 && age[8] == 6 && age[9] == 5 && age[0] == 6 && age[1] == 6);
	CHECK_RC(scar_rewind_check(st, UNIT_ERR));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_object_set_new(st->extra, "rewind", json_loads(bad[i], 0, &je));
		CHECK_CODE(scar_rewind_rows(st, "w", 10, 8, &rows, &n, UNIT_ERR), SCAR_ECORRUPT);
		CHECK(rows == NULL && n == 0);
	}
	/* The whole record: names must be param tensors of the state. */
	json_object_set_new(st->extra, "rewind", json_loads("{\"nope\": [[1, 1]]}", 0, &je));
	CHECK_CODE(scar_rewind_check(st, UNIT_ERR), SCAR_ECORRUPT);
	scar_state_free(st);
}

int main(void)
{
	test_none();
	test_rewind_record();
	test_lda();
	test_mf("als");
	test_mf("sgd");
	return unit_done("test-rebuild");
}
