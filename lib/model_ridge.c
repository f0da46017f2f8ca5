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
 * Configuration keys (type, default: meaning):
 *   seed        integer, 1: draws of the initial weights (init_scale > 0)
 *   data_seed   integer, = seed: the synthetic data set
 *   data        string, absent: a LIBSVM/svmlight file of real targets;
 *               absent = the synthetic planted linear model below
 *   n           integer, 1000: synthetic examples
 *   d           integer, 50: synthetic features (at most 2048 in any case:
 *               the Hessian is formed and solved densely; a LIBSVM file
 *               with more features is refused, SCAR_EUNSUPPORTED)
 *   noise       real, 0.1: synthetic target noise standard deviation
 *   lambda      real, 0.01: L2 penalty (> 0 keeps H positive definite)
 *   eta         real, 0: step size; 0 = 1 / lambda_max (the usual 1/L); at
 *               2 / lambda_max or more c >= 1 and the iteration diverges
 *   init_scale  real, 0: w(0) ~ N(0, init_scale^2) per weight; 0 = zeros
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scar/data.h"
#include "scar/model.h"
#include "model_util.h"
#include "symeig.h"

#define RIDGE_MAX_D 2048

struct scar_model {
	struct scar_dense *data;
	uint64_t n, d;
	double lambda, eta, lmin, lmax, c, init_scale;
	double *xstar;		/* d */
	double *r;		/* n scratch: residuals */
};

static const char *const ridge_keys[] = {
	"seed", "data_seed", "data", "n", "d", "noise", "lambda", "eta", "init_scale", NULL
};

static int ridge_configure(json_t *cfg, struct scar_error *err)
{
	int rc;

	if ((rc = mu_cfg_known(cfg, ridge_keys, "ridge", err)) ||
	    (rc = mu_cfg_seeds(cfg, err)) ||
	    (rc = mu_cfg_str(cfg, "data", NULL, NULL, err)) ||
	    (rc = mu_cfg_int(cfg, "n", 1000, 1, INT32_MAX, err)) ||
	    (rc = mu_cfg_int(cfg, "d", 50, 1, RIDGE_MAX_D, err)) ||
	    (rc = mu_cfg_real(cfg, "noise", 0.1, 0, 1e6, err)) ||
	    (rc = mu_cfg_real(cfg, "lambda", 0.01, 0, 1e12, err)) ||
	    (rc = mu_cfg_real(cfg, "eta", 0, 0, 1e12, err)) ||
	    (rc = mu_cfg_real(cfg, "init_scale", 0, 0, 1e6, err)))
		return rc;
	return 0;
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

static int ridge_create(struct scar_model **out, const json_t *cfg, struct scar_error *err)
{
	struct scar_model *m = calloc(1, sizeof(*m));
	const char *path = mu_get_str(cfg, "data");
	double *h = NULL, *l = NULL, *v = NULL;
	uint64_t n, d;
	int rc;

	*out = NULL;
	if (!m)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	if (path)
		rc = scar_libsvm_load(path, 0, 0, &m->data, err);
	else
		rc = scar_synth_regression((uint64_t)mu_get_int(cfg, "n"), (uint64_t)mu_get_int(cfg, "d"),
					   mu_get_real(cfg, "noise"),
					   (uint64_t)mu_get_int(cfg, "data_seed"), &m->data, err);
	if (rc)
		goto fail;
	if (!m->data->target || !m->data->n || !m->data->d) {
		rc = scar_error_set(err, SCAR_EINVAL, "ridge: data has no real targets");
		goto fail;
	}
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

const struct scar_model_def scar_model_ridge = {
	.name = "ridge",
	.summary = "ridge regression by full-batch gradient descent (exact contraction rate)",
	.objective_name = "ridge_objective",
	.objective_higher_better = 0,
	.heldout_name = NULL,
	.heldout_higher_better = 0,
	.configure = ridge_configure,
	.create = ridge_create,
	.init_state = ridge_init_state,
	.step = ridge_step,
	.objective = ridge_objective,
	.heldout = NULL,
	.contraction = ridge_contraction,
	.dist_to_opt = ridge_dist_to_opt,
	.free = ridge_free,
	.effective = ridge_effective,
};
