/*
 * model_ridge.c - ridge regression by full-batch gradient descent, the
 * workload whose contraction rate is known exactly.
 *
 * Objective: f(w) = 0.5/n ||X w - y||^2 + 0.5 lambda ||w||^2 ("ridge_objective").
 * Hessian H = X^T X / n + lambda I. One iteration is one gradient step
 * w <- w - eta (X^T (X w - y) / n + lambda w), so w - x* contracts by
 * I - eta H: c = max(|1 - eta lambda_min|, |1 - eta lambda_max|) exactly.
 * lambda_min and lambda_max are the ends of H's whole spectrum, from a dense
 * symmetric eigen-solver (symeig.c: Householder tridiagonalization, implicit
 * QL), which is right on any data: no start vector can miss an eigenvector
 * (features that are exact negatives or copies of each other, zero columns,
 * any conditioning). It is backward stable, so each eigenvalue is off by at
 * most a small multiple of d * DBL_EPSILON * lambda_max, and so is c.
 * The default step is 1 / lambda_max of that spectrum, so c = 1 -
 * lambda_min / lambda_max < 1. x* solves the normal equations
 * H x* = X^T y / n by Cholesky. All of it once, in create(): forming H
 * costs n d^2 / 2 and the solver about 2/3 d^3 multiply-adds (d = 2048,
 * the limit: a few seconds).
 *
 * State: param "w" f64 [d, 1] (one row per feature). No worker state: the
 * update is deterministic.
 *
 * Configuration keys: ridge_keys below (scar-train --list-keys ridge). d is
 * at most 2048 in any case: the Hessian is formed and solved densely; a
 * LIBSVM file with more features is refused (SCAR_EUNSUPPORTED). At eta
 * 2 / lambda_max or more c >= 1 and the iteration diverges.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <limits.h>

#include "scar/data.h"
#include "scar/dist.h"
#include "scar/model.h"
#include "model_util.h"
#include "symeig.h"
#include "transport.h"

#define RIDGE_MAX_D 2048

struct scar_model {
	struct scar_dense *data;
	uint64_t n, d;
	double lambda, eta, lmin, lmax, c, init_scale;
	double *xstar;		/* d */
	double *r;		/* n scratch: residuals */
};

static const struct scar_model_key ridge_keys[] = {
	MU_SEEDS("draws of the initial weights (with init_scale > 0)", "the synthetic data set"),
	MU_PATH("data", "a LIBSVM/svmlight file of real targets; absent: a planted linear model"),
	MU_INT("n", 1000, 1, INT32_MAX, "synthetic examples"),
	MU_INT("d", 50, 1, RIDGE_MAX_D, "synthetic features"),
	MU_REAL("noise", 0.1, 0, 1e6, "synthetic target noise standard deviation"),
	MU_REAL("lambda", 0.01, 0, 1e12, "L2 penalty (> 0 keeps the Hessian positive definite)"),
	MU_REAL("eta", 0, 0, 1e12, "step size; 0: 1 / lambda_max, the usual 1/L"),
	MU_REAL("init_scale", 0, 0, 1e6, "w(0) ~ N(0, init_scale^2) per weight; 0: zeros"),
	MU_END
};

static int ridge_configure(json_t *cfg, struct scar_error *err)
{
	return mu_cfg_apply(cfg, ridge_keys, 0, "ridge", err);
}

static void ridge_free(struct scar_model *m)
{
	if (!m)
		return;
	scar_dense_free(m->data);
	free(m->xstar);
	free(m->r);
	free(m);
}

/* The data set of cfg (the model's and every rank's); *ds is set even on failure. */
static int ridge_load(const json_t *cfg, struct scar_dense **ds, struct scar_error *err)
{
	const char *path = mu_get_str(cfg, "data");
	int rc;

	*ds = NULL;
	if (path)
		rc = scar_libsvm_load(path, 0, 0, ds, err);
	else
		rc = scar_synth_regression((uint64_t)mu_get_int(cfg, "n"), (uint64_t)mu_get_int(cfg, "d"),
					   mu_get_real(cfg, "noise"),
					   (uint64_t)mu_get_int(cfg, "data_seed"), ds, err);
	if (rc)
		return rc;
	if (!(*ds)->target || !(*ds)->n || !(*ds)->d)
		return scar_error_set(err, SCAR_EINVAL, "ridge: data has no real targets");
	return 0;
}

static int ridge_create(struct scar_model **out, const json_t *cfg, struct scar_error *err)
{
	struct scar_model *m = calloc(1, sizeof(*m));
	double *h = NULL, *l = NULL, *v = NULL;
	uint64_t n, d;
	int rc;

	*out = NULL;
	if (!m)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	if ((rc = ridge_load(cfg, &m->data, err)))
		goto fail;
	n = m->n = m->data->n;
	d = m->d = m->data->d;
	if (d > RIDGE_MAX_D) {
		rc = scar_error_set(err, SCAR_EUNSUPPORTED,
				    "ridge: %llu features, more than the %d its dense Hessian takes",
				    (unsigned long long)d, RIDGE_MAX_D);
		goto fail;
	}
	m->lambda = mu_get_real(cfg, "lambda");
	m->init_scale = mu_get_real(cfg, "init_scale");
	h = calloc(d * d, sizeof(*h));
	l = malloc(d * d * sizeof(*l));
	v = malloc(2 * d * sizeof(*v));
	m->xstar = calloc(d, sizeof(*m->xstar));
	m->r = malloc(n * sizeof(*m->r));
	if (!h || !l || !v || !m->xstar || !m->r) {
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
		goto fail;
	}
	/* H = X^T X / n + lambda I (lower triangle, mirrored), b = X^T y / n into xstar. */
	for (uint64_t i = 0; i < n; i++) {
		const float *x = m->data->x + i * d;
		double y = m->data->target[i];

		for (uint64_t a = 0; a < d; a++) {
			double xa = x[a];
			double *row = h + a * d;

			if (xa == 0)
				continue;
			m->xstar[a] += xa * y;
			for (uint64_t b = 0; b <= a; b++)
				row[b] += xa * x[b];
		}
	}
	for (uint64_t a = 0; a < d; a++) {
		m->xstar[a] /= (double)n;
		for (uint64_t b = 0; b <= a; b++) {
			h[a * d + b] /= (double)n;
			h[b * d + a] = h[a * d + b];
		}
		h[a * d + a] += m->lambda;
	}
	memcpy(l, h, d * d * sizeof(*l));
	if (mu_cholesky(l, d)) {
		rc = scar_error_set(err, SCAR_EINVAL,
				    "ridge: the Hessian is singular (use lambda > 0)");
		goto fail;
	}
	mu_cholesky_solve(l, d, m->xstar);
	/* Every eigenvalue of H (h is overwritten), ascending, into v. */
	if (scar_symeig(h, d, v, v + d)) {
		rc = scar_error_set(err, SCAR_EINVAL,
				    "ridge: the Hessian's eigenvalues cannot be computed (not finite)");
		goto fail;
	}
	m->lmin = v[0];
	m->lmax = v[d - 1];
	if (!(m->lmin > 0)) {
		rc = scar_error_set(err, SCAR_EINVAL,
				    "ridge: the Hessian is singular to working precision (eigenvalues %g to %g; use a larger lambda)",
				    m->lmin, m->lmax);
		goto fail;
	}
	m->eta = mu_get_real(cfg, "eta");
	if (m->eta == 0)
		m->eta = 1.0 / m->lmax;
	m->c = fmax(fabs(1 - m->eta * m->lmin), fabs(1 - m->eta * m->lmax));
	free(h);
	free(l);
	free(v);
	*out = m;
	return 0;
fail:
	free(h);
	free(l);
	free(v);
	ridge_free(m);
	return rc;
}

static int ridge_init_state(struct scar_model *m, struct scar_state *st, struct scar_error *err)
{
	struct scar_tensor *w;
	double scale = m->init_scale;
	int rc = mu_add(st, "w", SCAR_F64, SCAR_ROLE_PARAM, 2, m->d, 1, &w, err);

	if (rc)
		return rc;
	if (scale > 0) {
		struct scar_rng r;
		double *p = w->data;

		scar_rng_seed_stream(&r, mu_state_seed(st, 1), 2);
		for (uint64_t j = 0; j < m->d; j++)
			p[j] = scale * scar_rng_normal(&r);
	}
	return 0;
}

/* r = X w - y */
static void residuals(const struct scar_model *m, const double *w, double *r)
{
	for (uint64_t i = 0; i < m->n; i++) {
		const float *x = m->data->x + i * m->d;
		double s = 0;

		for (uint64_t j = 0; j < m->d; j++)
			s += x[j] * w[j];
		r[i] = s - m->data->target[i];
	}
}

static int ridge_step(struct scar_model *m, struct scar_state *st, struct scar_error *err)
{
	struct scar_tensor *t;
	double *w, *g;
	int rc = mu_find(st, "w", SCAR_F64, m->d, &t, err);

	if (rc)
		return rc;
	w = t->data;
	g = calloc(m->d, sizeof(*g));
	if (!g)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	residuals(m, w, m->r);
	for (uint64_t i = 0; i < m->n; i++) {
		const float *x = m->data->x + i * m->d;
		double ri = m->r[i];

		for (uint64_t j = 0; j < m->d; j++)
			g[j] += x[j] * ri;
	}
	for (uint64_t j = 0; j < m->d; j++)
		w[j] -= m->eta * (g[j] / (double)m->n + m->lambda * w[j]);
	free(g);
	for (uint64_t j = 0; j < m->d; j++)
		if (!isfinite(w[j]))
			return scar_error_set(err, SCAR_EDIVERGED,
					      "ridge: weights diverged (eta %g, contraction %g >= 1)",
					      m->eta, m->c);
	return 0;
}

static int ridge_objective(struct scar_model *m, const struct scar_state *st, double *out,
			   struct scar_error *err)
{
	struct scar_tensor *t;
	const double *w;
	double sse = 0, ww;
	int rc = mu_find(st, "w", SCAR_F64, m->d, &t, err);

	if (rc)
		return rc;
	w = t->data;
	residuals(m, w, m->r);
	for (uint64_t i = 0; i < m->n; i++)
		sse += m->r[i] * m->r[i];
	ww = mu_dot(w, w, m->d);
	*out = 0.5 * sse / (double)m->n + 0.5 * m->lambda * ww;
	return 0;
}

static int ridge_contraction(struct scar_model *m, double *c, struct scar_error *err)
{
	*c = m->c;
	return 0;
}

/* The sizes, the step in effect and the ends of the Hessian's spectrum, for the header. */
static int ridge_effective(struct scar_model *m, json_t *out, struct scar_error *err)
{
	if (json_object_set_new(out, "n", json_integer((json_int_t)m->n)) ||
	    json_object_set_new(out, "d", json_integer((json_int_t)m->d)) ||
	    json_object_set_new(out, "lambda", json_real(m->lambda)) ||
	    json_object_set_new(out, "eta", json_real(m->eta)) ||
	    json_object_set_new(out, "lambda_min", json_real(m->lmin)) ||
	    json_object_set_new(out, "lambda_max", json_real(m->lmax)))
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	return 0;
}

static int ridge_dist_to_opt(struct scar_model *m, const struct scar_state *st, double *out,
			     struct scar_error *err)
{
	struct scar_tensor *t;
	const double *w;
	double s = 0;
	int rc = mu_find(st, "w", SCAR_F64, m->d, &t, err);

	if (rc)
		return rc;
	w = t->data;
	for (uint64_t j = 0; j < m->d; j++)
		s += (w[j] - m->xstar[j]) * (w[j] - m->xstar[j]);
	*out = sqrt(s);
	return 0;
}

/* ---- distributed (scar-mpi(7)) ---- */

/*
 * Every rank is a worker over its contiguous block of the examples and the
 * owner of the rows of w its shards hold. One step: each worker computes
 * its partial gradient at w, partials go to the owners (alltoallv), which
 * add them in rank order and apply the model's update to their rows with
 * the model's eta (rank 0's create(), broadcast); the updated rows are
 * gathered to every worker (allgatherv). The objective adds the workers'
 * squared residuals in rank order.
 */
struct scar_dist_model {
	struct scar_transport *tp;
	uint64_t n, d, lo, hi;		/* this rank's examples [lo, hi) of n */
	float *x, *y;
	double eta, lambda;
	double *g;			/* d: partial gradient of the local block at w */
	double sse;			/* local sum of squared residuals at w */
	int valid;			/* g and sse belong to the current w */
	int *cnt, *displ;		/* per rank: owned rows, offsets; then the receive side */
	uint64_t *order;		/* rows grouped by owner, ascending within */
	double *sbuf, *rbuf;		/* d and P * own */
};

static void ridge_dist_free(struct scar_dist_model *t)
{
	if (!t)
		return;
	free(t->x);
	free(t->y);
	free(t->g);
	free(t->cnt);
	free(t->displ);
	free(t->order);
	free(t->sbuf);
	free(t->rbuf);
	free(t);
}

/*
 * One pass over the local examples at the current w: the squared residuals
 * and the partial gradient X_b^T (X_b w - y_b), summed over examples in
 * order. The dot product keeps four partial sums (the latency of one
 * chain of additions would bound the pass); so even P = 1 is not
 * bit-identical to the model's step, only within 1e-6 (scar-mpi(7)).
 */
static void ridge_pass(struct scar_dist_model *t, const double *w)
{
	uint64_t d = t->d, d4 = d & ~(uint64_t)3;
	double *g = t->g, sse = 0;

	memset(g, 0, d * sizeof(*g));
	for (uint64_t i = 0; i < t->hi - t->lo; i++) {
		const float *x = t->x + i * d;
		double s0 = 0, s1 = 0, s2 = 0, s3 = 0, s, r;
		uint64_t j;

		for (j = 0; j < d4; j += 4) {
			s0 += x[j] * w[j];
			s1 += x[j + 1] * w[j + 1];
			s2 += x[j + 2] * w[j + 2];
			s3 += x[j + 3] * w[j + 3];
		}
		s = (s0 + s1) + (s2 + s3);
		for (; j < d; j++)
			s += x[j] * w[j];
		r = s - t->y[i];
		sse += r * r;
		for (j = 0; j < d; j++)
			g[j] += x[j] * r;
	}
	t->sse = sse;
	t->valid = 1;
}

/* The objective at the current w, the same on every rank. */
static int ridge_dist_objective(struct scar_dist_model *t, const struct scar_state *st,
				double *out, struct scar_error *err)
{
	const double *w = scar_state_find(st, "w")->data;
	double sse;
	int rc;

	if (!t->valid)
		ridge_pass(t, w);
	if ((rc = scar_tp_sum_ordered(t->tp, t->sse, &sse, err)))
		return rc;
	*out = 0.5 * sse / (double)t->n + 0.5 * t->lambda * mu_dot(w, w, t->d);
	return 0;
}

static int ridge_dist_step(struct scar_dist_model *t, struct scar_state *st,
			   struct scar_error *err)
{
	double *w = scar_state_find(st, "w")->data;
	uint32_t P = t->tp->P, R = t->tp->R;
	int own = t->cnt[R];
	int *rcnt = t->cnt + P, *rdispl = t->displ + P;

	if (!t->valid)
		ridge_pass(t, w);
	/* Partials to their owners: send block q holds rank q's rows in order. */
	for (uint64_t k = 0; k < t->d; k++)
		t->sbuf[k] = t->g[t->order[k]];
	for (uint32_t p = 0; p < P; p++) {
		rcnt[p] = own;
		rdispl[p] = (int)p * own;
	}
	scar_tp_alltoallv(t->tp, t->sbuf, t->cnt, t->displ, t->rbuf, rcnt, rdispl, sizeof(double));
	/* Owners sum in rank order and apply the step to their rows. */
	for (int k = 0; k < own; k++) {
		uint64_t row = t->order[t->displ[R] + k];
		double gk = t->rbuf[k];

		for (uint32_t p = 1; p < P; p++)
			gk += t->rbuf[(size_t)p * own + k];
		w[row] -= t->eta * (gk / (double)t->n + t->lambda * w[row]);
		t->sbuf[k] = w[row];
	}
	/* Every worker needs all of w. */
	scar_tp_allgatherv(t->tp, t->sbuf, t->rbuf, t->cnt, t->displ, sizeof(double));
	for (uint64_t k = 0; k < t->d; k++)
		w[t->order[k]] = t->rbuf[k];
	t->valid = 0;
	return 0;
}

static void ridge_dist_changed(struct scar_dist_model *t)
{
	t->valid = 0;
}

/*
 * This rank's block of the data (rank 0 has the model's), the ownership
 * lists and buffers; eta is the model's, from rank 0.
 */
static int ridge_dist_setup(struct scar_model *m, const json_t *config, struct scar_transport *tp,
			    uint32_t shards, struct scar_dist_model **out, struct scar_error *err)
{
	struct scar_dist_model *t = calloc(1, sizeof(*t));
	struct scar_dense *ds = NULL;
	uint32_t P = tp->P, R = tp->R;
	int rc = 0;

	*out = NULL;
	if (!t)
		return scar_tp_agree(tp, scar_error_set(err, SCAR_ENOMEM, "out of memory"), err);
	t->tp = tp;
	if (m)
		ds = m->data;
	else
		rc = ridge_load(config, &ds, err);
	if (m || !rc) {
		t->n = ds->n;
		t->d = ds->d;
		t->lambda = mu_get_real(config, "lambda");
		t->eta = m ? m->eta : 0;
		t->lo = scar_dist_part_lo(t->n, R, P);
		t->hi = scar_dist_part_lo(t->n, R + 1, P);
		t->x = malloc((t->hi - t->lo) * t->d * sizeof(*t->x) + 1);
		t->y = malloc((t->hi - t->lo) * sizeof(*t->y) + 1);
		t->g = calloc(t->d, sizeof(*t->g));
		t->cnt = calloc(2 * (size_t)P, sizeof(*t->cnt));
		t->displ = calloc(2 * (size_t)P, sizeof(*t->displ));
		t->order = malloc(t->d * sizeof(*t->order));
		t->sbuf = malloc((t->d + P) * sizeof(*t->sbuf));
		t->rbuf = malloc(((size_t)P * t->d + P) * sizeof(*t->rbuf));
		if (!t->x || !t->y || !t->g || !t->cnt || !t->displ || !t->order || !t->sbuf || !t->rbuf)
			rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
		else if ((uint64_t)P * t->d > INT_MAX)
			rc = scar_error_set(err, SCAR_EUNSUPPORTED, "ridge: too many features for MPI");
		else
			rc = scar_tp_owned_rows(tp, shards, t->d, t->cnt, t->displ, t->order, err);
		if (!rc) {
			memcpy(t->x, ds->x + t->lo * t->d, (t->hi - t->lo) * t->d * sizeof(*t->x));
			memcpy(t->y, ds->target + t->lo, (t->hi - t->lo) * sizeof(*t->y));
		}
	}
	if (!m)
		scar_dense_free(ds);
	if (!(rc = scar_tp_agree(tp, rc, err)))
		scar_tp_bcast(tp, &t->eta, sizeof(t->eta), 0);
	if (rc)
		ridge_dist_free(t);
	else
		*out = t;
	return rc;
}

static int ridge_dist_bind(struct scar_dist_model *t, const struct scar_state *st,
			   struct scar_error *err)
{
	const struct scar_tensor *w = scar_state_find(st, "w");

	if (!w || w->dtype != SCAR_F64 || scar_tensor_elems(w) != t->d)
		return scar_error_set(err, SCAR_EMISMATCH, "ridge: unexpected state layout");
	return 0;
}

static const struct scar_model_dist ridge_dist = {
	.every_rank = 0,	/* create() forms and solves the Hessian: rank 0 alone */
	.setup = ridge_dist_setup,
	.bind = ridge_dist_bind,
	.step = ridge_dist_step,
	.objective = ridge_dist_objective,
	.changed = ridge_dist_changed,
	.free = ridge_dist_free,
};

const struct scar_model_def scar_model_ridge = {
	.name = "ridge",
	.summary = "ridge regression by full-batch gradient descent (exact contraction rate)",
	.objective_name = "ridge_objective",
	.objective_higher_better = 0,
	.heldout_name = NULL,
	.heldout_higher_better = 0,
	.configure = ridge_configure,
	.keys = ridge_keys,
	.create = ridge_create,
	.init_state = ridge_init_state,
	.step = ridge_step,
	.objective = ridge_objective,
	.heldout = NULL,
	.contraction = ridge_contraction,
	.dist_to_opt = ridge_dist_to_opt,
	.free = ridge_free,
	.effective = ridge_effective,
	.dist = &ridge_dist,
};
