/*
 * model_mf.c - matrix factorisation of a ratings matrix with a global mean,
 * user and item biases and L2: r_ui ~ mu + b_u + b_i + p_u . q_i.
 *
 * Loss over the training ratings:
 *     L = sum (r_ui - mu - b_u - b_i - p_u . q_i)^2
 *       + lambda sum_u w_u (|p_u|^2 + b_u^2) + lambda sum_i w_i (|q_i|^2 + b_i^2)
 * with w = the entity's number of training ratings (lambda_scale "count",
 * the weighted-lambda regularisation of Zhou et al. 2008) or w = 1
 * ("none"). mu is not penalised.
 *
 * One iteration:
 *   als  one sweep of alternating least squares: every user's (p_u, b_u)
 *        given the items (a Cholesky solve of a rank+1 system), then every
 *        item's (q_i, b_i) given the users, then mu given both. Each block
 *        update is exact, so L never increases.
 *   sgd  one epoch of stochastic gradient descent over the training
 *        ratings in an order that is a function of (seed, iteration)
 *        alone (a keyed draw, scar/rng.h, so a perturbed run and its
 *        reference visit the ratings in the same order), with the
 *        per-rating share of the penalty (lambda for "count", lambda / w
 *        for "none"); mu stays at the training mean. With "workers"
 *        W > 1 the epoch is DSGD's (stratified SGD, Gemulla et al., KDD
 *        2011): user block b(u) = u mod W, item block b(i) = i mod W; the
 *        epoch is W strata s = 0..W-1, and in stratum s worker w updates,
 *        in the epoch's shuffled order, the ratings with b(u) = w and
 *        b(i) = (w + s) mod W. The W blocks of a stratum share no user or
 *        item row (nor bias), so running the workers one after another
 *        here gives what running them in parallel gives: the MPI trainer
 *        runs them on different ranks, bit-identical (scar-mpi(7)).
 *
 * Objective: sqrt(L / n_train) ("rmse_penalized", the training RMSE with
 * the penalty folded in). Sums over the training ratings (the squared
 * error, the mean's update) are taken per user, then over users in order,
 * so the MPI trainer can reproduce them bit for bit (scar-mpi(7)). Held out: RMSE on the test ratings ("test_rmse").
 * The test set is a seeded 80/20 (test_frac) split by scar_ratings_split.
 *
 * State: params "user_factors" f32 [users, rank], "item_factors" f32
 * [items, rank], "user_bias" f32 [users], "item_bias" f32 [items],
 * "global_mean" f64 [1]; with sgd also state "rng" u64 [6] (the seeded
 * generator of earlier versions, which shuffled the order from it; kept,
 * never advanced, so checkpoints keep their layout) and "order" u32
 * [n_train] (the last epoch's order).
 *
 * Configuration keys: mf_keys below (scar-train --list-keys mf). data is
 * MovieLens ratings (u.data, ratings.dat or ratings.csv, or a directory
 * holding one). workers W > 1 only with solver "sgd"; W = 1 is the
 * sequential epoch; the results depend on W, never on the number of MPI
 * ranks that run the workers.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <limits.h>

#include "scar/data.h"
#include "scar/dist.h"
#include "scar/model.h"
#include "scar/shard.h"
#include "model_mf.h"
#include "model_util.h"
#include "transport.h"

struct scar_model {
	struct scar_ratings *train, *test;
	uint32_t users, items, rank;
	int sgd, weighted;
	double lambda, lr, init_scale, mean;
	/* Training ratings grouped by user and by item (CSR / CSC). */
	uint64_t *uptr, *iptr;	/* users + 1, items + 1 */
	uint32_t *uidx, *iidx;	/* the other side's id */
	float *ur, *ir;		/* ratings */
	double *work;		/* (rank + 1)^2 + 2 (rank + 1) */
	/* sgd with workers W > 1: the epoch's order split into the W x W blocks */
	uint32_t workers;
	uint64_t *bptr, *bfill;	/* W W + 1: block (bu, bi) is blk[bptr[bu W + bi] ..) */
	uint32_t *blk;		/* n_train: rating indices, shuffled order within a block */
};

#define mf_params scar_mf_params

static const char *const solvers[] = { "als", "sgd", NULL };
static const char *const scales[] = { "count", "none", NULL };

static const struct scar_model_key mf_keys[] = {
	MU_SEEDS("the initial factors and (sgd) the data order",
		 "the synthetic data and the train/test split"),
	MU_PATH("data", "MovieLens ratings, a file or a directory; absent: synthetic ratings"),
	MU_SYNTH_INT("users", 1000, 1, INT32_MAX, "synthetic users"),
	MU_SYNTH_INT("items", 800, 1, INT32_MAX, "synthetic items"),
	MU_SYNTH_INT("synth_rank", 5, 1, 4096, "rank of the planted synthetic matrix"),
	MU_SYNTH_REAL("density", 0.1, 1e-9, 1, "fraction of synthetic cells rated"),
	MU_SYNTH_REAL("noise", 0.1, 0, 1e6, "synthetic rating noise standard deviation"),
	MU_REAL("test_frac", 0.2, 1e-6, 0.99, "fraction of the ratings held out"),
	MU_STR("solver", "als", solvers, "alternating least squares or stochastic gradient descent"),
	MU_INT("rank", 10, 1, 1024, "factor rank"),
	MU_REAL("lambda", 0.1, 0, 1e9, "L2 penalty"),
	MU_STR("lambda_scale", "count", scales,
	       "penalty per row times its ratings (weighted lambda), or not"),
	MU_REAL("lr", 0.01, 0, 1e3, "learning rate of solver sgd"),
	MU_REAL("init_scale", 0.1, 0, 1e6, "initial factors ~ N(0, init_scale^2)"),
	MU_INT("workers", 1, 1, 1024, "DSGD workers of an epoch (W x W blocks); above 1 only with solver sgd"),
	MU_END
};

static int mf_configure(json_t *cfg, struct scar_error *err)
{
	int rc;

	if ((rc = mu_cfg_apply(cfg, mf_keys, json_object_get(cfg, "data") != NULL, "mf", err)))
		return rc;
	if (mu_get_int(cfg, "workers") > 1 && strcmp(mu_get_str(cfg, "solver"), "sgd"))
		return scar_error_set(err, SCAR_EINVAL,
				      "mf: 'workers' above 1 needs solver \"sgd\" (ALS solves its rows in parallel already)");
	return 0;
}

static void mf_free(struct scar_model *m)
{
	if (!m)
		return;
	scar_ratings_free(m->train);
	scar_ratings_free(m->test);
	free(m->uptr);
	free(m->iptr);
	free(m->uidx);
	free(m->iidx);
	free(m->ur);
	free(m->ir);
	free(m->work);
	free(m->bptr);
	free(m->bfill);
	free(m->blk);
	free(m);
}

/* A MovieLens file, or the first of ratings.csv, ratings.dat, u.data in a directory. */
static int load_movielens(const char *path, struct scar_ratings **out, struct scar_error *err)
{
	static const char *const names[] = { "ratings.csv", "ratings.dat", "u.data" };
	struct stat sb;

	if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
		char buf[4096];

		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			snprintf(buf, sizeof(buf), "%s/%s", path, names[i]);
			if (stat(buf, &sb) == 0)
				return scar_movielens_load(buf, out, err);
		}
		return scar_error_set_at(err, SCAR_ENOTFOUND, path, -1, -1,
					 "no ratings.csv, ratings.dat or u.data in directory");
	}
	return scar_movielens_load(path, out, err);
}

/* Group n ratings by key (user or item) into CSR arrays. */
static int group(const uint32_t *key, const uint32_t *other, const float *r, uint64_t n,
		 uint32_t nkeys, uint64_t **ptr, uint32_t **idx, float **val)
{
	uint64_t *p = calloc((uint64_t)nkeys + 1, sizeof(*p)), *fill;
	uint32_t *ix = malloc((n ? n : 1) * sizeof(*ix));
	float *v = malloc((n ? n : 1) * sizeof(*v));

	*ptr = p;
	*idx = ix;
	*val = v;
	if (!p || !ix || !v)
		return -1;
	for (uint64_t i = 0; i < n; i++)
		p[key[i] + 1]++;
	for (uint32_t k = 0; k < nkeys; k++)
		p[k + 1] += p[k];
	fill = malloc(((uint64_t)nkeys + 1) * sizeof(*fill));
	if (!fill)
		return -1;
	memcpy(fill, p, ((uint64_t)nkeys + 1) * sizeof(*fill));
	for (uint64_t i = 0; i < n; i++) {
		uint64_t at = fill[key[i]]++;

		ix[at] = other[i];
		v[at] = r[i];
	}
	free(fill);
	return 0;
}

/* The sizes of the W x W blocks (they depend on the ratings, not on the order). */
static int dsgd_blocks(struct scar_model *m, struct scar_error *err)
{
	uint64_t nb = (uint64_t)m->workers * m->workers;

	m->bptr = calloc(nb + 1, sizeof(*m->bptr));
	m->bfill = malloc(nb * sizeof(*m->bfill));
	m->blk = malloc((m->train->n ? m->train->n : 1) * sizeof(*m->blk));
	if (!m->bptr || !m->bfill || !m->blk)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	for (uint64_t e = 0; e < m->train->n; e++)
		m->bptr[(uint64_t)(m->train->user[e] % m->workers) * m->workers +
			m->train->item[e] % m->workers + 1]++;
	for (uint64_t b = 0; b < nb; b++)
		m->bptr[b + 1] += m->bptr[b];
	return 0;
}

static int mf_create(struct scar_model **out, const json_t *cfg, struct scar_error *err)
{
	struct scar_model *m = calloc(1, sizeof(*m));
	struct scar_ratings *all = NULL;
	const char *path = mu_get_str(cfg, "data");
	uint64_t seed = (uint64_t)mu_get_int(cfg, "data_seed");
	double sum = 0;
	int rc;

	*out = NULL;
	if (!m)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	if (path)
		rc = load_movielens(path, &all, err);
	else
		rc = scar_synth_ratings((uint32_t)mu_get_int(cfg, "users"),
					(uint32_t)mu_get_int(cfg, "items"),
					(uint32_t)mu_get_int(cfg, "synth_rank"),
					mu_get_real(cfg, "density"), mu_get_real(cfg, "noise"), seed,
					&all, err);
	if (rc || (rc = scar_ratings_split(all, mu_get_real(cfg, "test_frac"), seed, &m->train,
					   &m->test, err)))
		goto fail;
	if (!m->train->n || !m->test->n) {
		rc = scar_error_set(err, SCAR_EINVAL, "mf: %llu ratings leave no %s ratings (test_frac %g)",
				    (unsigned long long)all->n, m->train->n ? "test" : "training",
				    mu_get_real(cfg, "test_frac"));
		goto fail;
	}
	m->users = m->train->users;
	m->items = m->train->items;
	m->rank = (uint32_t)mu_get_int(cfg, "rank");
	m->sgd = strcmp(mu_get_str(cfg, "solver"), "sgd") == 0;
	m->weighted = strcmp(mu_get_str(cfg, "lambda_scale"), "count") == 0;
	m->lambda = mu_get_real(cfg, "lambda");
	m->lr = mu_get_real(cfg, "lr");
	m->init_scale = mu_get_real(cfg, "init_scale");
	for (uint64_t i = 0; i < m->train->n; i++)
		sum += m->train->rating[i];
	m->mean = sum / (double)m->train->n;
	m->work = malloc(((size_t)(m->rank + 1) * (m->rank + 1) + 2 * (m->rank + 1)) *
			 sizeof(*m->work));
	if (!m->work ||
	    group(m->train->user, m->train->item, m->train->rating, m->train->n, m->users,
		  &m->uptr, &m->uidx, &m->ur) ||
	    group(m->train->item, m->train->user, m->train->rating, m->train->n, m->items,
		  &m->iptr, &m->iidx, &m->ir)) {
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
		goto fail;
	}
	/* A checkpoint from before the key holds no "workers": 1. */
	m->workers = mu_get_int(cfg, "workers") > 1 ? (uint32_t)mu_get_int(cfg, "workers") : 1;
	if (m->sgd && m->workers > 1 && (rc = dsgd_blocks(m, err)))
		goto fail;
	scar_ratings_free(all);
	*out = m;
	return 0;
fail:
	scar_ratings_free(all);
	mf_free(m);
	return rc;
}

static int mf_init_state(struct scar_model *m, struct scar_state *st, struct scar_error *err)
{
	struct scar_tensor *p, *q, *mu, *ord;
	uint64_t seed = mu_state_seed(st, 1);
	struct scar_rng r;
	int rc;

	if ((rc = mu_add(st, "user_factors", SCAR_F32, SCAR_ROLE_PARAM, 2, m->users, m->rank, &p, err)) ||
	    (rc = mu_add(st, "item_factors", SCAR_F32, SCAR_ROLE_PARAM, 2, m->items, m->rank, &q, err)) ||
	    (rc = mu_add(st, "user_bias", SCAR_F32, SCAR_ROLE_PARAM, 1, m->users, 0, NULL, err)) ||
	    (rc = mu_add(st, "item_bias", SCAR_F32, SCAR_ROLE_PARAM, 1, m->items, 0, NULL, err)) ||
	    (rc = mu_add(st, "global_mean", SCAR_F64, SCAR_ROLE_PARAM, 1, 1, 0, &mu, err)))
		return rc;
	scar_rng_seed_stream(&r, seed, 2);
	for (uint64_t i = 0; i < (uint64_t)m->users * m->rank; i++)
		((float *)p->data)[i] = (float)(m->init_scale * scar_rng_normal(&r));
	for (uint64_t i = 0; i < (uint64_t)m->items * m->rank; i++)
		((float *)q->data)[i] = (float)(m->init_scale * scar_rng_normal(&r));
	*(double *)mu->data = m->mean;
	if (m->sgd) {
		if ((rc = mu_rng_add(st, seed, 1, err)) ||
		    (rc = mu_add(st, "order", SCAR_U32, SCAR_ROLE_STATE, 1, m->train->n, 0, &ord, err)))
			return rc;
		for (uint64_t i = 0; i < m->train->n; i++)
			((uint32_t *)ord->data)[i] = (uint32_t)i;
	}
	return 0;
}

static int get_params(const struct scar_model *m, const struct scar_state *st,
		      struct mf_params *x, struct scar_error *err)
{
	struct scar_tensor *t[5];
	int rc;

	if ((rc = mu_find(st, "user_factors", SCAR_F32, (uint64_t)m->users * m->rank, &t[0], err)) ||
	    (rc = mu_find(st, "item_factors", SCAR_F32, (uint64_t)m->items * m->rank, &t[1], err)) ||
	    (rc = mu_find(st, "user_bias", SCAR_F32, m->users, &t[2], err)) ||
	    (rc = mu_find(st, "item_bias", SCAR_F32, m->items, &t[3], err)) ||
	    (rc = mu_find(st, "global_mean", SCAR_F64, 1, &t[4], err)))
		return rc;
	x->p = t[0]->data;
	x->q = t[1]->data;
	x->bu = t[2]->data;
	x->bi = t[3]->data;
	x->mu = t[4]->data;
	return 0;
}

static inline float dotf(const float *a, const float *b, uint32_t k)
{
	float s = 0;

	for (uint32_t j = 0; j < k; j++)
		s += a[j] * b[j];
	return s;
}

/*
 * Solve for one side's row e (factor f[k], bias *b) given the other side's
 * factors of and biases ob: least squares over the ratings ptr[e]..ptr[e+1)
 * against r - mu - ob, penalty lambda * w.
 */
static int als_solve(const struct scar_model *m, uint64_t lo, uint64_t hi, const uint32_t *idx,
		     const float *val, const float *of, const float *ob, double mu, float *f,
		     float *b)
{
	uint32_t k = m->rank, k1 = k + 1;
	double *a = m->work, *rhs = a + (size_t)k1 * k1, *z = rhs + k1;
	double reg = m->lambda * (m->weighted ? (double)(hi - lo) : 1.0);

	if (hi == lo) {
		/* No ratings: the penalty alone puts the row at zero. */
		memset(f, 0, k * sizeof(*f));
		*b = 0;
		return 1;
	}
	memset(a, 0, (size_t)k1 * k1 * sizeof(*a));
	memset(rhs, 0, k1 * sizeof(*rhs));
	for (uint64_t t = lo; t < hi; t++) {
		const float *o = of + (uint64_t)idx[t] * k;
		double y = (double)val[t] - mu - ob[idx[t]];

		for (uint32_t i = 0; i < k; i++)
			z[i] = o[i];
		z[k] = 1;
		for (uint32_t i = 0; i < k1; i++) {
			double zi = z[i];
			double *row = a + (size_t)i * k1;

			rhs[i] += zi * y;
			for (uint32_t j = 0; j <= i; j++)
				row[j] += zi * z[j];
		}
	}
	for (uint32_t i = 0; i < k1; i++) {
		a[(size_t)i * k1 + i] += reg > 0 ? reg : 1e-9;
		for (uint32_t j = 0; j < i; j++)
			a[(size_t)j * k1 + i] = a[(size_t)i * k1 + j];
	}
	if (mu_cholesky(a, k1)) {
		/* Numerically singular: leave the row as it is. */
		return 0;
	}
	mu_cholesky_solve(a, k1, rhs);
	for (uint32_t i = 0; i < k; i++)
		f[i] = (float)rhs[i];
	*b = (float)rhs[k];
	return 1;
}

int scar_mf_solve_user(struct scar_model *m, struct scar_mf_params *x, uint32_t u)
{
	return als_solve(m, m->uptr[u], m->uptr[u + 1], m->uidx, m->ur, x->q, x->bi, *x->mu,
			 x->p + (uint64_t)u * m->rank, x->bu + u);
}

int scar_mf_solve_item(struct scar_model *m, struct scar_mf_params *x, uint32_t i)
{
	return als_solve(m, m->iptr[i], m->iptr[i + 1], m->iidx, m->ir, x->p, x->bu, *x->mu,
			 x->q + (uint64_t)i * m->rank, x->bi + i);
}

double scar_mf_user_resid(const struct scar_model *m, const struct scar_mf_params *x, uint32_t u)
{
	const float *pu = x->p + (uint64_t)u * m->rank;
	double s = 0;

	for (uint64_t t = m->uptr[u]; t < m->uptr[u + 1]; t++) {
		uint32_t i = m->uidx[t];

		s += (double)m->ur[t] - x->bu[u] - x->bi[i] - dotf(pu, x->q + (uint64_t)i * m->rank, m->rank);
	}
	return s;
}

double scar_mf_mean(const struct scar_model *m, double resid_sum)
{
	return resid_sum / (double)m->train->n;
}

/*
 * The sums over ratings (the mean here, the squared error in the
 * objective) are summed per user and then over users in user order: the
 * order the MPI trainer reproduces from the users' owners (scar-mpi(7)).
 */
static void als_sweep(struct scar_model *m, struct mf_params *x)
{
	double s = 0;

	for (uint32_t u = 0; u < m->users; u++)
		scar_mf_solve_user(m, x, u);
	for (uint32_t i = 0; i < m->items; i++)
		scar_mf_solve_item(m, x, i);
	for (uint32_t u = 0; u < m->users; u++)
		s += scar_mf_user_resid(m, x, u);
	*x->mu = scar_mf_mean(m, s);
}

/* One SGD update on training rating e. */
static inline void sgd_rating(const struct scar_model *m, struct mf_params *x, uint64_t e,
			      float lr, float mu)
{
	const struct scar_ratings *tr = m->train;
	uint32_t u = tr->user[e], i = tr->item[e], k = m->rank;
	float *pu = x->p + (uint64_t)u * k, *qi = x->q + (uint64_t)i * k;
	float ru = (float)m->lambda, ri = ru, err_ui;

	if (!m->weighted) {
		ru /= (float)(m->uptr[u + 1] - m->uptr[u]);
		ri /= (float)(m->iptr[i + 1] - m->iptr[i]);
	}
	err_ui = tr->rating[e] - mu - x->bu[u] - x->bi[i] - dotf(pu, qi, k);
	x->bu[u] += lr * (err_ui - ru * x->bu[u]);
	x->bi[i] += lr * (err_ui - ri * x->bi[i]);
	for (uint32_t j = 0; j < k; j++) {
		float pj = pu[j], qj = qi[j];

		pu[j] += lr * (err_ui * qj - ru * pj);
		qi[j] += lr * (err_ui * pj - ri * qj);
	}
}

int scar_mf_sgd_begin(struct scar_model *m, struct scar_state *st, struct scar_error *err)
{
	struct scar_tensor *ord;
	const struct scar_ratings *tr = m->train;
	uint64_t nb = (uint64_t)m->workers * m->workers;
	uint32_t *order, W = m->workers;
	int rc;

	if ((rc = mu_find(st, "order", SCAR_U32, tr->n, &ord, err)))
		return rc;
	order = ord->data;
	mu_keyed_order(order, tr->n, mu_state_seed(st, 1), SCAR_MF_ORDER_STREAM, st->iteration);
	if (W == 1)
		return 0;
	/* A stable split of the shuffled order into the blocks. */
	memcpy(m->bfill, m->bptr, nb * sizeof(*m->bfill));
	for (uint64_t t = 0; t < tr->n; t++) {
		uint64_t e = order[t];

		m->blk[m->bfill[(uint64_t)(tr->user[e] % W) * W + tr->item[e] % W]++] = (uint32_t)e;
	}
	return 0;
}

void scar_mf_sgd_block(const struct scar_model *m, const struct scar_state *st,
		       struct scar_mf_params *x, uint32_t w, uint32_t s)
{
	float lr = (float)m->lr, mu = (float)*x->mu;
	uint32_t W = m->workers;

	if (W == 1) {
		const uint32_t *order = scar_state_find(st, "order")->data;

		for (uint64_t t = 0; t < m->train->n; t++)
			sgd_rating(m, x, order[t], lr, mu);
	} else {
		uint64_t b = (uint64_t)w * W + (w + s) % W;

		for (uint64_t t = m->bptr[b]; t < m->bptr[b + 1]; t++)
			sgd_rating(m, x, m->blk[t], lr, mu);
	}
}

static int sgd_epoch(struct scar_model *m, struct scar_state *st, struct mf_params *x,
		     struct scar_error *err)
{
	int rc = scar_mf_sgd_begin(m, st, err);

	if (rc)
		return rc;
	for (uint32_t s = 0; s < m->workers; s++)
		for (uint32_t w = 0; w < m->workers; w++)
			scar_mf_sgd_block(m, st, x, w, s);
	return 0;
}

static int mf_step(struct scar_model *m, struct scar_state *st, struct scar_error *err)
{
	struct mf_params x;
	int rc = get_params(m, st, &x, err);

	if (rc)
		return rc;
	if (m->sgd) {
		if ((rc = sgd_epoch(m, st, &x, err)))
			return rc;
	} else {
		als_sweep(m, &x);
	}
	if (!isfinite(*x.mu))
		return scar_error_set(err, SCAR_EDIVERGED, "mf: parameters diverged");
	return 0;
}

/*
 * Recovery "rebuild" (scar(7)): a lost user row (p_u, b_u) is the solution
 * of its regularized least-squares problem given the items and the ratings
 * the workers hold - the ALS half-step, for the lost rows only - and a lost
 * item row likewise given the users. Lost rows enter holding the saved
 * view's values. When a shard lost rows of both sides, the users are
 * solved against items some of which are those stale saved rows, so the
 * order is: users, then items (given the rebuilt users), then the users
 * again (given the rebuilt items). A lost global mean is then its ALS
 * update given both sides, or, with sgd, the training mean it never leaves.
 * The same objective as both solvers', so it serves sgd as well.
 */
static int mf_rebuild(struct scar_model *m, struct scar_state *st, const uint8_t *lost,
		      uint32_t shards, uint64_t *rows, struct scar_error *err)
{
	struct mf_params x;
	uint64_t users_lost = 0, items_lost = 0;
	uint8_t *done_u = NULL, *done_i = NULL;
	int rc = get_params(m, st, &x, err);

	*rows = 0;
	if (rc)
		return rc;
	done_u = calloc(m->users + 1, 1);
	done_i = calloc(m->items + 1, 1);
	if (!done_u || !done_i) {
		free(done_u);
		free(done_i);
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	}
	for (uint32_t u = 0; u < m->users; u++)
		users_lost += lost[scar_shard_of_row(u, shards)];
	for (uint32_t i = 0; i < m->items; i++)
		items_lost += lost[scar_shard_of_row(i, shards)];
	/*
	 * SGD never moves a row without ratings from its initial value, which
	 * the saved view holds exactly: such rows keep it (ALS's sweep puts
	 * them at zero, the solve's answer).
	 */
	for (int pass = 0; pass < 3; pass++) {
		if (pass == 2 && !(users_lost && items_lost))
			break;
		if (pass != 1) {
			for (uint32_t u = 0; u < m->users; u++)
				if (lost[scar_shard_of_row(u, shards)] &&
				    !(m->sgd && m->uptr[u + 1] == m->uptr[u]))
					done_u[u] |= (uint8_t)scar_mf_solve_user(m, &x, u);
		} else {
			for (uint32_t i = 0; i < m->items; i++)
				if (lost[scar_shard_of_row(i, shards)] &&
				    !(m->sgd && m->iptr[i + 1] == m->iptr[i]))
					done_i[i] |= (uint8_t)scar_mf_solve_item(m, &x, i);
		}
	}
	/* A user or an item solved is two rows: its factor row and its bias. */
	for (uint32_t u = 0; u < m->users; u++)
		*rows += 2 * (uint64_t)done_u[u];
	for (uint32_t i = 0; i < m->items; i++)
		*rows += 2 * (uint64_t)done_i[i];
	free(done_u);
	free(done_i);
	if (lost[scar_shard_of_row(0, shards)]) {
		double s = 0;

		if (m->sgd) {
			*x.mu = m->mean;
		} else {
			for (uint32_t u = 0; u < m->users; u++)
				s += scar_mf_user_resid(m, &x, u);
			*x.mu = scar_mf_mean(m, s);
		}
		(*rows)++;
	}
	return 0;
}

/* Sum of squared errors of the model over a ratings set. */
static double sse(const struct scar_model *m, const struct mf_params *x,
		  const struct scar_ratings *rs)
{
	uint32_t k = m->rank;
	double s = 0;

	for (uint64_t t = 0; t < rs->n; t++) {
		uint32_t u = rs->user[t], i = rs->item[t];
		double e;

		if (u >= m->users || i >= m->items)
			continue;
		e = (double)rs->rating[t] - *x->mu - x->bu[u] - x->bi[i] -
		    dotf(x->p + (uint64_t)u * k, x->q + (uint64_t)i * k, k);
		s += e * e;
	}
	return s;
}

double scar_mf_user_sse(const struct scar_model *m, const struct scar_mf_params *x, uint32_t u)
{
	const float *pu = x->p + (uint64_t)u * m->rank;
	double s = 0;

	for (uint64_t t = m->uptr[u]; t < m->uptr[u + 1]; t++) {
		uint32_t i = m->uidx[t];
		double e = (double)m->ur[t] - *x->mu - x->bu[u] - x->bi[i] -
			dotf(pu, x->q + (uint64_t)i * m->rank, m->rank);

		s += e * e;
	}
	return s;
}

double scar_mf_user_pen(const struct scar_model *m, const struct scar_mf_params *x, uint32_t u)
{
	double w = m->weighted ? (double)(m->uptr[u + 1] - m->uptr[u]) : 1.0;
	const float *pu = x->p + (uint64_t)u * m->rank;

	return w * ((double)dotf(pu, pu, m->rank) + (double)x->bu[u] * x->bu[u]);
}

double scar_mf_item_pen(const struct scar_model *m, const struct scar_mf_params *x, uint32_t i)
{
	double w = m->weighted ? (double)(m->iptr[i + 1] - m->iptr[i]) : 1.0;
	const float *qi = x->q + (uint64_t)i * m->rank;

	return w * ((double)dotf(qi, qi, m->rank) + (double)x->bi[i] * x->bi[i]);
}

double scar_mf_objective_of(const struct scar_model *m, double sse, double pen)
{
	return sqrt((sse + m->lambda * pen) / (double)m->train->n);
}

void scar_mf_info(const struct scar_model *m, struct scar_mf_info *out)
{
	out->users = m->users;
	out->items = m->items;
	out->rank = m->rank;
	out->sgd = m->sgd;
	out->workers = m->workers;
	out->n_train = m->train->n;
}

int scar_mf_params(const struct scar_model *m, const struct scar_state *st,
		   struct scar_mf_params *x, struct scar_error *err)
{
	return get_params(m, st, x, err);
}

/* The training squared error per user, then over users in user order (as the mean). */
static int mf_objective(struct scar_model *m, const struct scar_state *st, double *out,
			struct scar_error *err)
{
	struct mf_params x;
	double e = 0, pen = 0;
	int rc = get_params(m, st, &x, err);

	if (rc)
		return rc;
	for (uint32_t u = 0; u < m->users; u++)
		e += scar_mf_user_sse(m, &x, u);
	for (uint32_t u = 0; u < m->users; u++)
		pen += scar_mf_user_pen(m, &x, u);
	for (uint32_t i = 0; i < m->items; i++)
		pen += scar_mf_item_pen(m, &x, i);
	*out = scar_mf_objective_of(m, e, pen);
	return 0;
}

static int mf_heldout(struct scar_model *m, const struct scar_state *st, double *out,
		      struct scar_error *err)
{
	struct mf_params x;
	int rc = get_params(m, st, &x, err);

	if (rc)
		return rc;
	if (!m->test->n)
		return scar_error_set(err, SCAR_EUNSUPPORTED, "mf: no test ratings (test_frac 0)");
	*out = sqrt(sse(m, &x, m->test) / (double)m->test->n);
	return 0;
}

/* Sizes from the ratings, the solver and its step (sgd: a constant lr). */
static int mf_effective(struct scar_model *m, json_t *out, struct scar_error *err)
{
	if (json_object_set_new(out, "n", json_integer((json_int_t)m->train->n)) ||
	    json_object_set_new(out, "n_test", json_integer((json_int_t)m->test->n)) ||
	    json_object_set_new(out, "users", json_integer((json_int_t)m->users)) ||
	    json_object_set_new(out, "items", json_integer((json_int_t)m->items)) ||
	    json_object_set_new(out, "rank", json_integer((json_int_t)m->rank)) ||
	    json_object_set_new(out, "solver", json_string(m->sgd ? "sgd" : "als")) ||
	    json_object_set_new(out, "lambda", json_real(m->lambda)) ||
	    (m->sgd && (json_object_set_new(out, "lr", json_real(m->lr)) ||
			json_object_set_new(out, "workers", json_integer((json_int_t)m->workers)))) ||
	    json_object_set_new(out, "step", json_string(m->sgd ? "constant lr per rating" :
							   "exact block solves (no step size)")))
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	return 0;
}

/* ---- distributed (scar-mpi(7)) ---- */

/* Every rank holds the model (all ratings); it solves or updates the rows it owns. */
struct scar_dist_model {
	struct scar_model *m;
	struct scar_transport *tp;
	uint32_t S;
	struct scar_mf_info mfi;
	uint32_t *mf_u, *mf_i;		/* the users and items this rank owns, ascending */
	uint32_t mf_nu, mf_ni;
	double *mf_uv, *mf_iv;		/* per user 2 values, per item 1: owners' terms of a sum */
	int mf_umove;			/* sgd: user blocks travel (else item blocks) */
	uint32_t *mf_home;		/* sgd: per block of the side that stays, its rank */
	float *mf_sb, *mf_rb;		/* sgd: rows packed, k + 1 floats each */
	int *mf_cnt, *mf_displ;		/* sgd: per rank, floats in a gather */
	uint64_t *mf_pos;		/* sgd: per rank, the unpacking cursor */
};

static void mf_dist_free(struct scar_dist_model *t)
{
	if (!t)
		return;
	free(t->mf_u);
	free(t->mf_i);
	free(t->mf_uv);
	free(t->mf_iv);
	free(t->mf_home);
	free(t->mf_sb);
	free(t->mf_rb);
	free(t->mf_cnt);
	free(t->mf_displ);
	free(t->mf_pos);
	free(t);
}

/*
 * One ALS sweep as mf_step does it, the rows solved by their owners:
 *   - each owner solves its users' (p_u, b_u) given the items (every rank
 *     holds all ratings and all rows, so the solve is the model's own);
 *   - the solved user rows are gathered to every rank;
 *   - each owner solves its items given the users; item rows are gathered;
 *   - each user's owner computes the user's part of the mean's sum, the
 *     parts are gathered and added in user order, as the model adds them.
 * The objective is the model's: per-user squared errors and penalties and
 * per-item penalties computed by the owners, gathered, added in user then
 * item order. Every floating-point operation is the model's, in its order:
 * the result is bit-identical to one process.
 */

/* Gather the two named param tensors of the state from their owners. */
static int sync_two(struct scar_dist_model *t, struct scar_state *st, const char *a, const char *b,
		    struct scar_error *err)
{
	struct scar_tensor *v[2] = { scar_state_find(st, a), scar_state_find(st, b) };
	struct scar_state ps;

	if (!v[0] || !v[1])
		return scar_error_set(err, SCAR_EMISMATCH, "mf: unexpected state layout");
	memset(&ps, 0, sizeof(ps));
	ps.ntensors = 2;
	ps.tensors = v;
	return scar_tp_sync_rows(t->tp, t->S, ps.tensors, ps.ntensors, err);
}

static int mf_dist_als_step(struct scar_dist_model *t, struct scar_state *st, struct scar_error *err)
{
	struct scar_mf_params x;
	double s = 0;
	int rc;

	if ((rc = scar_mf_params(t->m, st, &x, err)))
		return rc;
	for (uint32_t k = 0; k < t->mf_nu; k++)
		scar_mf_solve_user(t->m, &x, t->mf_u[k]);
	if ((rc = sync_two(t, st, "user_factors", "user_bias", err)))
		return rc;
	for (uint32_t k = 0; k < t->mf_ni; k++)
		scar_mf_solve_item(t->m, &x, t->mf_i[k]);
	if ((rc = sync_two(t, st, "item_factors", "item_bias", err)))
		return rc;
	for (uint32_t k = 0; k < t->mf_nu; k++)
		t->mf_uv[t->mf_u[k]] = scar_mf_user_resid(t->m, &x, t->mf_u[k]);
	if ((rc = scar_tp_sync_table(t->tp, t->S, t->mf_uv, t->mfi.users, 1, err)))
		return rc;
	for (uint32_t u = 0; u < t->mfi.users; u++)
		s += t->mf_uv[u];
	*x.mu = scar_mf_mean(t->m, s);
	if (!isfinite(*x.mu))
		return scar_error_set(err, SCAR_EDIVERGED, "mf: parameters diverged");
	return 0;
}

static int mf_dist_objective(struct scar_dist_model *t, const struct scar_state *st, double *out,
			     struct scar_error *err)
{
	struct scar_mf_params x;
	double e = 0, pen = 0;
	int rc;

	if ((rc = scar_mf_params(t->m, st, &x, err)))
		return rc;
	for (uint32_t k = 0; k < t->mf_nu; k++) {
		uint32_t u = t->mf_u[k];

		t->mf_uv[2 * (size_t)u] = scar_mf_user_sse(t->m, &x, u);
		t->mf_uv[2 * (size_t)u + 1] = scar_mf_user_pen(t->m, &x, u);
	}
	for (uint32_t k = 0; k < t->mf_ni; k++)
		t->mf_iv[t->mf_i[k]] = scar_mf_item_pen(t->m, &x, t->mf_i[k]);
	if ((rc = scar_tp_sync_table(t->tp, t->S, t->mf_uv, t->mfi.users, 2, err)) ||
	    (rc = scar_tp_sync_table(t->tp, t->S, t->mf_iv, t->mfi.items, 1, err)))
		return rc;
	for (uint32_t u = 0; u < t->mfi.users; u++)
		e += t->mf_uv[2 * (size_t)u];
	for (uint32_t u = 0; u < t->mfi.users; u++)
		pen += t->mf_uv[2 * (size_t)u + 1];
	for (uint32_t i = 0; i < t->mfi.items; i++)
		pen += t->mf_iv[i];
	*out = scar_mf_objective_of(t->m, e, pen);
	return 0;
}

/* ---- distributed, solver sgd: DSGD ---- */

/*
 * A DSGD epoch as mf_step does it with "workers" W > 1: the W
 * blocks of a stratum share no row, so different ranks run them. The
 * side with more rows stays put, the other travels (users when U <= I).
 * Rank R is the home of the contiguous blocks h in [lo(R), lo(R+1)) of
 * the side that stays (the partition rule of W over P; ranks >= W have
 * none). In stratum s home h runs worker h (user block h, item block
 * (h + s) mod W) when items travel, worker (h - s) mod W (user block
 * (h - s) mod W, item block h) when users do: the stratum's W blocks
 * either way. The travelling block home h updated in stratum s is the one
 * home h - 1 (items) or h + 1 (users) needs in stratum s + 1, so after
 * every stratum but the last each rank with homes passes one block to its
 * neighbour in the ring of such ranks (MPI_Sendrecv; the blocks between
 * its own homes stay on the rank). After the last stratum every factor
 * row and bias is gathered to every rank from the rank that updated it
 * last. Each update is the model's, in the epoch's shuffled order, on
 * rows that are current: the result is one process's, bit for bit. The
 * shuffle is replicated worker state: every rank draws it itself.
 */

/* The rows of block j of n rows over W blocks (rows r = j mod W). */
static uint64_t mf_block_rows(uint64_t n, uint32_t j, uint32_t W)
{
	return n > j ? (n - j + W - 1) / W : 0;
}

/* Block j's factor rows and biases to or from buf, k + 1 floats a row. */
static void mf_block_copy(float *buf, float *f, float *b, uint64_t n, uint32_t j, uint32_t W,
			  uint32_t k, int out)
{
	for (uint64_t r = j; r < n; r += W, buf += k + 1) {
		if (out) {
			memcpy(buf, f + r * k, k * sizeof(*f));
			buf[k] = b[r];
		} else {
			memcpy(f + r * k, buf, k * sizeof(*f));
			b[r] = buf[k];
		}
	}
}

/* Send block js of the travelling table to rank to, receive block jr from rank from. */
static void mf_pass(struct scar_dist_model *t, float *f, float *b, uint64_t n, uint32_t js, uint32_t jr,
		    uint32_t to, uint32_t from)
{
	uint32_t W = t->mfi.workers, k = t->mfi.rank;
	uint64_t ns = mf_block_rows(n, js, W), nr = mf_block_rows(n, jr, W);

	mf_block_copy(t->mf_sb, f, b, n, js, W, k, 1);
	scar_tp_sendrecv(t->tp, t->mf_sb, (int)(ns * (k + 1)), to, t->mf_rb, (int)(nr * (k + 1)),
			 from, sizeof(float));
	mf_block_copy(t->mf_rb, f, b, n, jr, W, k, 0);
}

/*
 * Every rank's copy of a table (factors f [n, k], biases b [n]) from the
 * ranks that updated its rows last: row r's is the home of block
 * (r mod W + shift) mod W.
 */
static void mf_gather_rows(struct scar_dist_model *t, float *f, float *b, uint64_t n, uint32_t shift)
{
	uint32_t W = t->mfi.workers, k = t->mfi.rank, P = t->tp->P;
	float *p = t->mf_sb;

	memset(t->mf_cnt, 0, P * sizeof(*t->mf_cnt));
	for (uint64_t r = 0; r < n; r++) {
		uint32_t q = t->mf_home[(r % W + shift) % W];

		t->mf_cnt[q] += (int)(k + 1);
		if (q == t->tp->R) {
			memcpy(p, f + r * k, k * sizeof(*f));
			p[k] = b[r];
			p += k + 1;
		}
	}
	for (uint32_t q = 0; q < P; q++) {
		t->mf_displ[q] = q ? t->mf_displ[q - 1] + t->mf_cnt[q - 1] : 0;
		t->mf_pos[q] = (uint64_t)t->mf_displ[q];
	}
	scar_tp_allgatherv(t->tp, t->mf_sb, t->mf_rb, t->mf_cnt, t->mf_displ, sizeof(float));
	for (uint64_t r = 0; r < n; r++) {
		const float *src = t->mf_rb + t->mf_pos[t->mf_home[(r % W + shift) % W]];

		memcpy(f + r * k, src, k * sizeof(*f));
		b[r] = src[k];
		t->mf_pos[t->mf_home[(r % W + shift) % W]] += k + 1;
	}
}

static int mf_dist_sgd_step(struct scar_dist_model *t, struct scar_state *st, struct scar_error *err)
{
	struct scar_mf_params x;
	uint32_t W = t->mfi.workers, P = t->tp->P, R = t->tp->R, Pw = P < W ? P : W;
	uint64_t a = scar_dist_part_lo(W, R, P), b = scar_dist_part_lo(W, R + 1, P);
	uint64_t U = t->mfi.users, I = t->mfi.items;
	int rc;

	if ((rc = scar_mf_params(t->m, st, &x, err)) ||
	    (rc = scar_mf_sgd_begin(t->m, st, err)))
		return rc;
	for (uint32_t s = 0; s < W; s++) {
		for (uint64_t h = a; h < b; h++)
			scar_mf_sgd_block(t->m, st, &x,
					  t->mf_umove ? (uint32_t)((h + W - s) % W) : (uint32_t)h, s);
		if (s + 1 == W || R >= Pw)
			continue;
		if (t->mf_umove)
			mf_pass(t, x.p, x.bu, U, (uint32_t)((b + W - 1 - s) % W),
				(uint32_t)((a + 2 * (uint64_t)W - 1 - s) % W), (R + 1) % Pw, (R + Pw - 1) % Pw);
		else
			mf_pass(t, x.q, x.bi, I, (uint32_t)((a + s) % W), (uint32_t)((b + s) % W),
				(R + Pw - 1) % Pw, (R + 1) % Pw);
	}
	/* Users last updated by home u mod W (items travel) or the one before it (users travel). */
	mf_gather_rows(t, x.p, x.bu, U, t->mf_umove ? W - 1 : 0);
	mf_gather_rows(t, x.q, x.bi, I, t->mf_umove ? 0 : 1);
	if (!isfinite(*x.mu))
		return scar_error_set(err, SCAR_EDIVERGED, "mf: parameters diverged");
	return 0;
}

/* sgd: which side travels, the homes of the blocks, the buffers. */
static int mf_dist_sgd_setup(struct scar_dist_model *t, struct scar_error *err)
{
	uint32_t W = t->mfi.workers, P = t->tp->P, k = t->mfi.rank;
	uint64_t big = (t->mfi.users > t->mfi.items ? t->mfi.users : t->mfi.items) * (uint64_t)(k + 1);

	if (W == 1)
		return scar_error_set(err, SCAR_EUNSUPPORTED,
				      "mf: solver 'sgd' with workers=1 is one chain of updates, each on the last, and does not run distributed; set workers=W > 1 for DSGD (best a multiple of the ranks: its results depend on W, never on the ranks)");
	if (big > INT_MAX)
		return scar_error_set(err, SCAR_EUNSUPPORTED, "mf: too many rows for MPI");
	t->mf_umove = t->mfi.users <= t->mfi.items;
	t->mf_home = malloc(W * sizeof(*t->mf_home));
	t->mf_sb = malloc((big + 1) * sizeof(*t->mf_sb));
	t->mf_rb = malloc((big + 1) * sizeof(*t->mf_rb));
	t->mf_cnt = calloc(P, sizeof(*t->mf_cnt));
	t->mf_displ = calloc(P, sizeof(*t->mf_displ));
	t->mf_pos = calloc(P, sizeof(*t->mf_pos));
	if (!t->mf_home || !t->mf_sb || !t->mf_rb || !t->mf_cnt || !t->mf_displ || !t->mf_pos)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	for (uint32_t q = 0; q < P; q++)
		for (uint64_t h = scar_dist_part_lo(W, q, P); h < scar_dist_part_lo(W, q + 1, P); h++)
			t->mf_home[h] = q;
	return 0;
}

/* The rows this rank owns; sgd's homes and buffers. */
static int mf_dist_init(struct scar_dist_model *t, struct scar_error *err)
{
	int rc;

	scar_mf_info(t->m, &t->mfi);
	if (t->mfi.sgd && (rc = mf_dist_sgd_setup(t, err)))
		return rc;
	t->mf_u = malloc(((size_t)t->mfi.users + 1) * sizeof(*t->mf_u));
	t->mf_i = malloc(((size_t)t->mfi.items + 1) * sizeof(*t->mf_i));
	t->mf_uv = calloc(2 * (size_t)t->mfi.users + 1, sizeof(*t->mf_uv));
	t->mf_iv = calloc((size_t)t->mfi.items + 1, sizeof(*t->mf_iv));
	if (!t->mf_u || !t->mf_i || !t->mf_uv || !t->mf_iv)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	for (uint32_t u = 0; u < t->mfi.users; u++)
		if (scar_dist_row_owner(u, t->S, t->tp->P) == t->tp->R)
			t->mf_u[t->mf_nu++] = u;
	for (uint32_t i = 0; i < t->mfi.items; i++)
		if (scar_dist_row_owner(i, t->S, t->tp->P) == t->tp->R)
			t->mf_i[t->mf_ni++] = i;
	return 0;
}


/* The model on every rank (it loaded the ratings). */
static int mf_dist_setup(struct scar_model *m, const json_t *config, struct scar_transport *tp,
			 uint32_t shards, struct scar_dist_model **out, struct scar_error *err)
{
	struct scar_dist_model *t = calloc(1, sizeof(*t));
	int rc;

	*out = NULL;
	if (!t)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	t->m = m;
	t->tp = tp;
	t->S = shards;
	if ((rc = mf_dist_init(t, err)))
		mf_dist_free(t);
	else
		*out = t;
	return rc;
}

static int mf_dist_step(struct scar_dist_model *t, struct scar_state *st, struct scar_error *err)
{
	return t->mfi.sgd ? mf_dist_sgd_step(t, st, err) : mf_dist_als_step(t, st, err);
}

/* The state is the same on every rank: one check of it. */
static int mf_dist_bind(struct scar_dist_model *t, const struct scar_state *st,
			struct scar_error *err)
{
	struct scar_mf_params x;

	return scar_mf_params(t->m, st, &x, err);
}

static const struct scar_model_dist mf_dist = {
	.every_rank = 1,	/* the owners' solves and blocks are the model's own */
	.setup = mf_dist_setup,
	.bind = mf_dist_bind,
	.step = mf_dist_step,
	.objective = mf_dist_objective,
	.free = mf_dist_free,
};

const struct scar_model_def scar_model_mf = {
	.name = "mf",
	.summary = "matrix factorisation with biases by ALS (one sweep) or SGD (one epoch)",
	.objective_name = "rmse_penalized",
	.objective_higher_better = 0,
	.heldout_name = "test_rmse",
	.heldout_higher_better = 0,
	.configure = mf_configure,
	.keys = mf_keys,
	.create = mf_create,
	.init_state = mf_init_state,
	.step = mf_step,
	.objective = mf_objective,
	.heldout = mf_heldout,
	.contraction = NULL,
	.dist_to_opt = NULL,
	.free = mf_free,
	.effective = mf_effective,
	.rebuild = mf_rebuild,
	.dist = &mf_dist,
};
