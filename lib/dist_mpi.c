/*
 * dist_mpi.c - scar_train_run over MPI ranks (scar/dist.h, scar-mpi(7)).
 *
 * Every rank is the server of the shards it owns (shard s -> rank s mod P)
 * and a worker over a contiguous block of the examples. One iteration is
 * bulk-synchronous: each worker computes its partial gradient, partials go
 * to the owning ranks (alltoallv) and are summed there in rank order, the
 * owners apply the update to their rows, and the updated rows are gathered
 * to every worker (allgatherv); mlr and mf (ALS) follow the same pattern
 * with the model's own order of operations (see their sections); mf SGD
 * runs DSGD's strata, passing the travelling blocks between neighbours
 * (point to point) and gathering all rows after the last. Every
 * collective's result is independent of MPI's algorithm choices: no MPI
 * reduction operation is used on floating point data, so a run is
 * deterministic for a given P.
 *
 * Compiled to nothing unless SCAR_MPI is defined (the Makefile defines it
 * when it finds mpicc).
 */
#ifdef SCAR_MPI

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mpi.h>

#include "scar/ckpt.h"
#include "scar/data.h"
#include "scar/dist.h"
#include "scar/model.h"
#include "scar/rng.h"
#include "scar/train.h"
#include "model_lda.h"
#include "model_mf.h"
#include "model_util.h"
#include "topk.h"
#include "train_internal.h"


static int g_inited, g_rank, g_size = 1;

int scar_dist_init(int launched, int *argc, char ***argv, struct scar_error *err)
{
	int flag = 0;

	if (!launched || g_inited)
		return 0;
	MPI_Initialized(&flag);
	if (!flag && MPI_Init(argc, argv) != MPI_SUCCESS)
		return scar_error_set(err, SCAR_EIO, "cannot start MPI");
	g_inited = 1;
	MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &g_size);
	return 0;
}

void scar_dist_finalize(void)
{
	int flag = 1;

	if (!g_inited)
		return;
	MPI_Finalized(&flag);
	if (!flag)
		MPI_Finalize();
	g_inited = 0;
}

int scar_dist_bcast_int(int v)
{
	if (g_inited && g_size > 1)
		MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD);
	return v;
}

int scar_dist_active(void)
{
	return g_inited && g_size > 1;
}

int scar_dist_rank(void)
{
	return g_inited ? g_rank : 0;
}

int scar_dist_size(void)
{
	return g_inited ? g_size : 1;
}

/* ---- the trainer ---- */

/* c first: the shared trainer's hooks get &t->c and find t (dt_of). */
struct dt {
	struct scar_train_ctx c;	/* c.m: rank 0 (mf, lda: every rank) */
	uint32_t S;

	/* ridge: this rank's examples [lo, hi) of n, and the math */
	uint64_t n, d, lo, hi;
	float *x, *y;
	double eta, lambda;
	double *g;			/* d: partial gradient of the local block at w */
	double sse;			/* local sum of squared residuals at w */
	int valid;			/* g and sse belong to the current w */

	/* mlr: the whole training set on every rank, and the math */
	int mlr;
	float *mx;			/* mn x md */
	uint32_t *my;
	uint64_t mn, md, mbatch;
	uint32_t mk;
	double lr0, lr_decay, l2;
	float *sd;			/* mbatch x mk: scaled softmax deltas of the minibatch */
	int *bcnt, *bdispl;		/* per rank: its share of a minibatch or of batches */
	double *bloss;			/* per evaluation batch: summed cross-entropy */
	float *wt;			/* mk x md class-major copy of the weights, then biases */

	/* mf: every rank holds the model (all ratings); it solves its own rows */
	int mf;
	struct scar_mf_info mfi;
	uint32_t *mf_u, *mf_i;		/* the users and items this rank owns, ascending */
	uint32_t mf_nu, mf_ni;
	double *mf_uv, *mf_iv;		/* per user 2 values, per item 1: owners' terms of a sum */
	int mf_umove;			/* sgd: user blocks travel (else item blocks) */
	uint32_t *mf_home;		/* sgd: per block of the side that stays, its rank */
	float *mf_sb, *mf_rb;		/* sgd: rows packed, k + 1 floats each */
	int *mf_cnt, *mf_displ;		/* sgd: per rank, floats in a gather */
	uint64_t *mf_pos;		/* sgd: per rank, the unpacking cursor */

	/* lda: every rank holds the model (the corpus); it samples its blocks */
	int lda;
	struct scar_lda_info ldi;
	double *ld_ll;			/* per training document: its log-likelihood */
	int *ld_cnt, *ld_displ;		/* per rank: its tokens (z) or its documents */

	/* the w rows each rank owns (every rank knows every rank's list) */
	int *cnt, *displ;		/* per rank: owned rows, offsets (elements) */
	uint64_t *order;		/* rows grouped by owner, ascending within */
	double *sbuf, *rbuf;		/* d and P * own */
	uint64_t comm_bytes;		/* bytes this rank sent to other ranks */
};

static struct dt *dt_of(struct scar_train_ctx *c)
{
	return (struct dt *)c;
}

/*
 * Every rank learns whether any rank failed; the lowest failing rank's
 * error is copied to all, so each returns the same code and message.
 */
static int agree(struct dt *t, int rc)
{
	int flag = rc ? (int)t->c.R : (int)t->c.P, first;
	struct scar_error e;

	MPI_Allreduce(&flag, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (first == (int)t->c.P)
		return 0;
	if ((int)t->c.R == first && t->c.err)
		e = *t->c.err;
	else
		scar_error_clear(&e);
	MPI_Bcast(&e, (int)sizeof(e), MPI_BYTE, first, MPI_COMM_WORLD);
	if (t->c.err)
		*t->c.err = e;
	return e.code ? e.code : SCAR_EIO;
}

static int is_param(const struct scar_tensor *x)
{
	return x->role == SCAR_ROLE_PARAM;
}

static uint32_t owner(const struct dt *t, uint64_t r)
{
	return scar_dist_row_owner(r, t->S, t->c.P);
}

/*
 * Bring every rank's copy of the param tensors up to date with the rows
 * their owners hold: each rank contributes its rows, all receive all.
 */
static int sync_params(struct dt *t, struct scar_state *st)
{
	for (size_t ti = 0; ti < st->ntensors; ti++) {
		struct scar_tensor *x = st->tensors[ti];
		uint64_t rows = scar_tensor_rows(x), *pos = NULL;
		size_t rb = scar_tensor_row_bytes(x);
		int *cnt = NULL, *displ = NULL, rc = 0;
		char *send = NULL, *recv = NULL;
		uint64_t own = 0, total = 0;

		if (!is_param(x) || t->c.P == 1)
			continue;
		cnt = calloc(t->c.P, sizeof(*cnt));
		displ = calloc(t->c.P, sizeof(*displ));
		pos = calloc(t->c.P, sizeof(*pos));
		if (!cnt || !displ || !pos)
			rc = -1;
		for (uint64_t r = 0; !rc && r < rows; r++)
			cnt[owner(t, r)]++;
		for (uint32_t q = 0; !rc && q < t->c.P; q++) {
			if ((uint64_t)cnt[q] * rb > INT_MAX || total * rb > INT_MAX)
				rc = -2;
			displ[q] = (int)(total * rb);
			pos[q] = total;
			total += (uint64_t)cnt[q];
			cnt[q] = (int)((uint64_t)cnt[q] * rb);
		}
		if (!rc) {
			own = (uint64_t)cnt[t->c.R] / (rb ? rb : 1);
			send = malloc(own * rb + 1);
			recv = malloc(rows * rb + 1);
			if (!send || !recv)
				rc = -1;
		}
		if (!rc) {
			uint64_t k = 0;

			for (uint64_t r = 0; r < rows; r++)
				if (owner(t, r) == t->c.R)
					memcpy(send + (k++) * rb, scar_tensor_row(x, r), rb);
			MPI_Allgatherv(send, (int)(own * rb), MPI_BYTE, recv, cnt, displ, MPI_BYTE,
				       MPI_COMM_WORLD);
			t->comm_bytes += own * rb * (t->c.P - 1);
			for (uint64_t r = 0; r < rows; r++) {
				uint32_t q = owner(t, r);

				memcpy(scar_tensor_row(x, r), recv + (pos[q]++) * rb, rb);
			}
		}
		free(cnt);
		free(displ);
		free(pos);
		free(send);
		free(recv);
		if (rc == -1)
			return scar_error_set(t->c.err, SCAR_ENOMEM, "out of memory");
		if (rc == -2)
			return scar_error_set(t->c.err, SCAR_EUNSUPPORTED,
					      "tensor '%s' is too large for one MPI message", x->name);
	}
	return 0;
}

/* ---- ridge: the distributed math ---- */

static struct scar_tensor *ridge_w(const struct dt *t)
{
	return scar_state_find(t->c.st, "w");
}

/*
 * One pass over the local examples at the current w: the squared residuals
 * and the partial gradient X_b^T (X_b w - y_b), summed over examples in
 * order. The dot product keeps four partial sums (the latency of one
 * chain of additions would bound the pass); P > 1 is not bit-identical to
 * the single-process model anyway, only within 1e-6 (scar-mpi(7)).
 */
static void ridge_pass(struct dt *t)
{
	const double *w = ridge_w(t)->data;
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
static int ridge_objective(struct dt *t, double *out)
{
	const double *w = ridge_w(t)->data;
	double *all = t->rbuf;		/* at least P doubles */

	if (!t->valid)
		ridge_pass(t);
	MPI_Allgather(&t->sse, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, MPI_COMM_WORLD);
	t->comm_bytes += sizeof(double) * (t->c.P - 1);
	*out = 0.5 * scar_dist_sum_ordered(all, t->c.P) / (double)t->n +
		0.5 * t->lambda * mu_dot(w, w, t->d);
	return 0;
}

static int ridge_step(struct dt *t)
{
	double *w = ridge_w(t)->data;
	int own = t->cnt[t->c.R];
	int *rcnt = t->cnt + t->c.P, *rdispl = t->displ + t->c.P;

	if (!t->valid)
		ridge_pass(t);
	/* Partials to their owners: send block q holds rank q's rows in order. */
	for (uint64_t k = 0; k < t->d; k++)
		t->sbuf[k] = t->g[t->order[k]];
	for (uint32_t p = 0; p < t->c.P; p++) {
		rcnt[p] = own;
		rdispl[p] = (int)p * own;
	}
	MPI_Alltoallv(t->sbuf, t->cnt, t->displ, MPI_DOUBLE, t->rbuf, rcnt, rdispl, MPI_DOUBLE,
		      MPI_COMM_WORLD);
	t->comm_bytes += sizeof(double) * (t->d - (uint64_t)own);
	/* Owners sum in rank order and apply the step to their rows. */
	for (int k = 0; k < own; k++) {
		uint64_t row = t->order[t->displ[t->c.R] + k];
		double gk = t->rbuf[k];

		for (uint32_t p = 1; p < t->c.P; p++)
			gk += t->rbuf[(size_t)p * own + k];
		w[row] -= t->eta * (gk / (double)t->n + t->lambda * w[row]);
		t->sbuf[k] = w[row];
	}
	/* Every worker needs all of w. */
	MPI_Allgatherv(t->sbuf, own, MPI_DOUBLE, t->rbuf, t->cnt, t->displ, MPI_DOUBLE,
		       MPI_COMM_WORLD);
	t->comm_bytes += sizeof(double) * (uint64_t)own * (t->c.P - 1);
	for (uint64_t k = 0; k < t->d; k++)
		w[t->order[k]] = t->rbuf[k];
	t->valid = 0;
	return 0;
}

/*
 * The model's step size. A configured eta is used as is; eta = 0 means
 * 1 / lambda_max, which the model computes in create(): read it off one
 * model step from w = 0, where w(1) = eta X^T y / n (rank 0, full data).
 */
static int ridge_eta(struct dt *t, const json_t *config, const struct scar_dense *ds)
{
	struct scar_state *st = NULL;
	struct scar_tensor *w;
	double *g = NULL, best = 0;
	uint64_t jb = 0;
	int rc;

	t->eta = mu_get_real(config, "eta");
	if (t->eta > 0)
		return 0;
	if ((rc = scar_state_new(&st, t->c.def->name, t->c.err)))
		return rc;
	json_decref(st->config);
	st->config = json_deep_copy(config);
	st->shards = t->S;
	if (!st->config) {
		rc = scar_error_set(t->c.err, SCAR_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = t->c.def->init_state(t->c.m, st, t->c.err)))
		goto out;
	w = scar_state_find(st, "w");
	g = calloc(ds->d, sizeof(*g));
	if (!w || !g || scar_tensor_elems(w) != ds->d) {
		rc = scar_error_set(t->c.err, w && g ? SCAR_EMISMATCH : SCAR_ENOMEM,
				    w && g ? "ridge: unexpected state layout" : "out of memory");
		goto out;
	}
	memset(w->data, 0, scar_tensor_bytes(w));
	if ((rc = t->c.def->step(t->c.m, st, t->c.err)))
		goto out;
	for (uint64_t i = 0; i < ds->n; i++) {
		const float *x = ds->x + i * ds->d;
		double r = 0.0 - ds->target[i];

		for (uint64_t j = 0; j < ds->d; j++)
			g[j] += x[j] * r;
	}
	for (uint64_t j = 0; j < ds->d; j++)
		if (fabs(g[j] / (double)ds->n) > best) {
			best = fabs(g[j] / (double)ds->n);
			jb = j;
		}
	if (best > 0) {
		t->eta = -((double *)w->data)[jb] / (g[jb] / (double)ds->n);
	} else {
		/* y = 0: probe from w = e_0 instead, w(1)_0 = 1 - eta (H_00). */
		double h = 0;

		memset(w->data, 0, scar_tensor_bytes(w));
		((double *)w->data)[0] = 1;
		if ((rc = t->c.def->step(t->c.m, st, t->c.err)))
			goto out;
		for (uint64_t i = 0; i < ds->n; i++)
			h += (double)ds->x[i * ds->d] * ds->x[i * ds->d];
		h = h / (double)ds->n + t->lambda;
		t->eta = h > 0 ? (1 - ((double *)w->data)[0]) / h : 1;
	}
	if (!(t->eta > 0) || !isfinite(t->eta))
		rc = scar_error_set(t->c.err, SCAR_EINVAL, "ridge: cannot determine the step size");
out:
	free(g);
	scar_state_free(st);
	return rc;
}

/* Load this rank's block of the data, the ownership lists and buffers. */
static int ridge_setup(struct dt *t, const json_t *config)
{
	const char *path = mu_get_str(config, "data");
	struct scar_dense *ds = NULL;
	uint64_t *pos = NULL;
	int rc;

	if (path)
		rc = scar_libsvm_load(path, 0, 0, &ds, t->c.err);
	else
		rc = scar_synth_regression((uint64_t)mu_get_int(config, "n"),
					   (uint64_t)mu_get_int(config, "d"),
					   mu_get_real(config, "noise"),
					   (uint64_t)mu_get_int(config, "data_seed"), &ds, t->c.err);
	if (rc)
		return rc;
	if (!ds->target || !ds->n || !ds->d) {
		rc = scar_error_set(t->c.err, SCAR_EINVAL, "ridge: data has no real targets");
		goto out;
	}
	t->n = ds->n;
	t->d = ds->d;
	t->lambda = mu_get_real(config, "lambda");
	t->lo = scar_dist_part_lo(t->n, t->c.R, t->c.P);
	t->hi = scar_dist_part_lo(t->n, t->c.R + 1, t->c.P);
	t->x = malloc((t->hi - t->lo) * t->d * sizeof(*t->x) + 1);
	t->y = malloc((t->hi - t->lo) * sizeof(*t->y) + 1);
	t->g = calloc(t->d, sizeof(*t->g));
	t->cnt = calloc(2 * (size_t)t->c.P, sizeof(*t->cnt));
	t->displ = calloc(2 * (size_t)t->c.P, sizeof(*t->displ));
	t->order = malloc(t->d * sizeof(*t->order));
	pos = calloc(t->c.P, sizeof(*pos));
	t->sbuf = malloc((t->d + t->c.P) * sizeof(*t->sbuf));
	t->rbuf = malloc(((size_t)t->c.P * t->d + t->c.P) * sizeof(*t->rbuf));
	if (!t->x || !t->y || !t->g || !t->cnt || !t->displ || !t->order || !pos ||
	    !t->sbuf || !t->rbuf) {
		rc = scar_error_set(t->c.err, SCAR_ENOMEM, "out of memory");
		goto out;
	}
	if ((uint64_t)t->c.P * t->d > INT_MAX) {
		rc = scar_error_set(t->c.err, SCAR_EUNSUPPORTED, "ridge: too many features for MPI");
		goto out;
	}
	memcpy(t->x, ds->x + t->lo * t->d, (t->hi - t->lo) * t->d * sizeof(*t->x));
	memcpy(t->y, ds->target + t->lo, (t->hi - t->lo) * sizeof(*t->y));
	for (uint64_t r = 0; r < t->d; r++)
		t->cnt[owner(t, r)]++;
	for (uint32_t q = 1; q < t->c.P; q++)
		t->displ[q] = t->displ[q - 1] + t->cnt[q - 1];
	for (uint32_t q = 0; q < t->c.P; q++)
		pos[q] = (uint64_t)t->displ[q];
	for (uint64_t r = 0; r < t->d; r++)
		t->order[pos[owner(t, r)]++] = r;
	if (t->c.R == 0)
		rc = ridge_eta(t, config, ds);
	rc = agree(t, rc);
	if (!rc)
		MPI_Bcast(&t->eta, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
out:
	free(pos);
	scar_dense_free(ds);
	return rc;
}

/* ---- mlr: the distributed math ---- */

/*
 * Minibatch SGD as lib/model_mlr.c does it, with every floating-point
 * operation of the single-process model done in the same order, so the
 * distributed run is bit-identical to it:
 *   - forward (data parallel): rank R computes the softmax deltas of its
 *     contiguous share of the minibatch (scar_dist_part_lo over the
 *     minibatch), logits as the model's kernels do (8 lanes in order, the
 *     lanes pairwise, the tail, the bias);
 *   - the scaled deltas of the whole minibatch are gathered to every rank
 *     (sufficient factors: batch x classes floats, not a gradient);
 *   - each owner applies the update to its weight rows, the examples in
 *     minibatch order, from the data it holds;
 *   - the updated rows are gathered to every worker for the next forward.
 * The objective is the rank-order sum of per-batch cross-entropies over
 * the training set in the model's evaluation batches.
 */

static struct scar_tensor *mlr_w(const struct dt *t)
{
	return scar_state_find(t->c.st, "weights");
}

/* Class-major working copy (as the model's wt), biases after mk * md. */
static void mlr_to_work(struct dt *t)
{
	const float *w = mlr_w(t)->data;

	for (uint64_t j = 0; j < t->md; j++)
		for (uint32_t c = 0; c < t->mk; c++)
			t->wt[c * t->md + j] = w[j * t->mk + c];
	memcpy(t->wt + (size_t)t->mk * t->md, w + t->md * t->mk, t->mk * sizeof(float));
}

static float mlr_logit(const struct dt *t, const float *x, uint32_t c)
{
	const float *w = t->wt + (size_t)c * t->md;
	uint64_t d = t->md, d8 = d & ~(uint64_t)7, j;
	float a[8] = { 0 }, s;

	for (j = 0; j < d8; j += 8)
		for (int l = 0; l < 8; l++)
			a[l] += x[j + l] * w[j + l];
	s = ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]));
	for (; j < d; j++)
		s += x[j] * w[j];
	return s + t->wt[(size_t)t->mk * t->md + c];
}

/* Softmax outputs minus the one-hot label of example ex into p; returns its cross-entropy. */
static double mlr_delta(const struct dt *t, uint64_t ex, float *p)
{
	uint32_t k = t->mk, y = t->my[ex];
	const float *x = t->mx + ex * t->md;
	float mx, s = 0, ly = 0;

	for (uint32_t c = 0; c < k; c++)
		p[c] = mlr_logit(t, x, c);
	if (y < k)
		ly = p[y];
	mx = p[0];
	for (uint32_t c = 1; c < k; c++)
		if (p[c] > mx)
			mx = p[c];
	for (uint32_t c = 0; c < k; c++)
		s += (p[c] = expf(p[c] - mx));
	for (uint32_t c = 0; c < k; c++)
		p[c] /= s;
	if (y >= k)
		return 0;
	p[y] -= 1;
	return (double)mx + log((double)s) - (double)ly;
}

static int mlr_objective(struct dt *t, double *out)
{
	uint64_t nb = (t->mn + t->mbatch - 1) / t->mbatch;
	uint64_t lo = scar_dist_part_lo(nb, t->c.R, t->c.P), hi = scar_dist_part_lo(nb, t->c.R + 1, t->c.P);
	float *p = t->sd;
	double *mine = t->bloss + nb;

	mlr_to_work(t);
	for (uint64_t b = lo; b < hi; b++) {
		uint64_t first = b * t->mbatch, cnt = t->mn - first < t->mbatch ? t->mn - first : t->mbatch;
		double loss = 0;

		for (uint64_t i = 0; i < cnt; i++)
			loss += mlr_delta(t, first + i, p);
		mine[b - lo] = loss;
	}
	for (uint32_t q = 0; q < t->c.P; q++) {
		t->bcnt[q] = (int)(scar_dist_part_lo(nb, q + 1, t->c.P) - scar_dist_part_lo(nb, q, t->c.P));
		t->bdispl[q] = (int)scar_dist_part_lo(nb, q, t->c.P);
	}
	MPI_Allgatherv(mine, (int)(hi - lo), MPI_DOUBLE, t->bloss, t->bcnt, t->bdispl, MPI_DOUBLE,
		       MPI_COMM_WORLD);
	t->comm_bytes += sizeof(double) * (hi - lo) * (t->c.P - 1);
	{
		double loss = 0;

		for (uint64_t b = 0; b < nb; b++)
			loss += t->bloss[b];
		*out = loss / (double)t->mn;
	}
	return 0;
}

static int mlr_step(struct dt *t)
{
	struct scar_tensor *wt = mlr_w(t), *ord = scar_state_find(t->c.st, "order");
	struct scar_tensor *ep = scar_state_find(t->c.st, "epoch");
	uint64_t epoch, d = t->md;
	uint32_t k = t->mk, *order;
	float lr, decay, *w = wt->data;
	int own = t->cnt[t->c.R], *rc2 = t->cnt + t->c.P, *rd2 = t->displ + t->c.P;

	if (!ord || !ep || ord->dtype != SCAR_U32 || scar_tensor_elems(ord) != t->mn ||
	    ep->dtype != SCAR_U64 || scar_tensor_elems(ep) != 1)
		return scar_error_set(t->c.err, SCAR_EMISMATCH, "mlr: unexpected state layout");
	order = ord->data;
	epoch = *(uint64_t *)ep->data;
	lr = (float)(t->lr0 / (1 + t->lr_decay * (double)epoch));
	decay = (float)(1 - (double)lr * t->l2);
	mu_keyed_order(order, t->mn, mu_state_seed(t->c.st, 1), SCAR_MLR_ORDER_STREAM,
		       t->c.st->iteration);
	for (uint32_t q = 0; q < t->c.P; q++) {
		rc2[q] = t->cnt[q] * (int)k;
		rd2[q] = t->displ[q] * (int)k;
	}
	for (uint64_t b0 = 0; b0 < t->mn; b0 += t->mbatch) {
		uint64_t bs = t->mn - b0 < t->mbatch ? t->mn - b0 : t->mbatch;
		uint64_t lo = scar_dist_part_lo(bs, t->c.R, t->c.P), hi = scar_dist_part_lo(bs, t->c.R + 1, t->c.P);
		float scale = -lr / (float)bs, *sbuf = (float *)t->sbuf, *rbuf = (float *)t->rbuf;

		mlr_to_work(t);
		for (uint64_t i = lo; i < hi; i++) {
			float *p = sbuf + (i - lo) * k;

			mlr_delta(t, order[b0 + i], p);
			for (uint32_t c = 0; c < k; c++)
				p[c] = scale * p[c];
		}
		for (uint32_t q = 0; q < t->c.P; q++) {
			t->bcnt[q] = (int)((scar_dist_part_lo(bs, q + 1, t->c.P) -
					    scar_dist_part_lo(bs, q, t->c.P)) * k);
			t->bdispl[q] = (int)(scar_dist_part_lo(bs, q, t->c.P) * k);
		}
		MPI_Allgatherv(sbuf, (int)((hi - lo) * k), MPI_FLOAT, t->sd, t->bcnt, t->bdispl,
			       MPI_FLOAT, MPI_COMM_WORLD);
		t->comm_bytes += sizeof(float) * (hi - lo) * k * (t->c.P - 1);
		/*
		 * Owners: W_j <- decay W_j (not the bias row), then W_j += sd_i x_ij
		 * example by example, so every element sees the model's additions
		 * in the model's order.
		 */
		if (decay != 1)
			for (int a = 0; a < own; a++) {
				uint64_t j = t->order[t->displ[t->c.R] + a];

				for (uint32_t c = 0; j < d && c < k; c++)
					w[j * k + c] *= decay;
			}
		for (uint64_t i = 0; i < bs; i++) {
			const float *si = t->sd + i * k, *x = t->mx + order[b0 + i] * d;

			for (int a = 0; a < own; a++) {
				uint64_t j = t->order[t->displ[t->c.R] + a];
				float *wj = w + j * k;

				if (j < d) {
					float xij = x[j];

					for (uint32_t c = 0; c < k; c++)
						wj[c] += si[c] * xij;
				} else {
					for (uint32_t c = 0; c < k; c++)
						wj[c] += si[c];
				}
			}
		}
		for (int a = 0; a < own; a++)
			memcpy(sbuf + (size_t)a * k, w + t->order[t->displ[t->c.R] + a] * k,
			       k * sizeof(float));
		MPI_Allgatherv(sbuf, own * (int)k, MPI_FLOAT, rbuf, rc2, rd2, MPI_FLOAT, MPI_COMM_WORLD);
		t->comm_bytes += sizeof(float) * (uint64_t)own * k * (t->c.P - 1);
		for (uint64_t a = 0; a <= d; a++)
			memcpy(w + t->order[a] * k, rbuf + a * k, k * sizeof(float));
	}
	for (uint64_t i = 0; i < (d + 1) * k; i++)
		if (!isfinite(w[i]))
			return scar_error_set(t->c.err, SCAR_EDIVERGED, "mlr: weights diverged (lower lr)");
	*(uint64_t *)ep->data = epoch + 1;
	return 0;
}

/* dir/name.gz when readable, else dir/name, as the model looks for IDX files. */
static char *mlr_idx_path(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 8;
	char *p = malloc(n);

	if (!p)
		return NULL;
	snprintf(p, n, "%s/%s.gz", dir, name);
	if (access(p, R_OK) == 0)
		return p;
	snprintf(p, n, "%s/%s", dir, name);
	return p;
}

/*
 * The model's training set: the same sources and the same held-out split
 * (a test_frac of the examples drawn by data_seed when there is no test
 * set), so every rank trains on exactly the examples the model would.
 */
static int mlr_setup(struct dt *t, const json_t *cfg)
{
	const char *data = mu_get_str(cfg, "data");
	struct scar_dense *tr = NULL;
	int rc, have_test = 0;

	if (mu_get_str(cfg, "train_images")) {
		rc = scar_idx_load(mu_get_str(cfg, "train_images"), mu_get_str(cfg, "train_labels"),
				   &tr, t->c.err);
		have_test = mu_get_str(cfg, "test_images") != NULL;
	} else if (data) {
		struct stat sb;

		if (stat(data, &sb) == 0 && S_ISDIR(sb.st_mode)) {
			char *ti = mlr_idx_path(data, "train-images-idx3-ubyte");
			char *tl = mlr_idx_path(data, "train-labels-idx1-ubyte");

			rc = ti && tl ? scar_idx_load(ti, tl, &tr, t->c.err) :
				scar_error_set(t->c.err, SCAR_ENOMEM, "out of memory");
			free(ti);
			free(tl);
			have_test = 1;
		} else {
			/* d, when given, is the feature count (model_mlr.c) */
			rc = scar_libsvm_load(data, json_object_get(cfg, "d") ?
					      (uint64_t)mu_get_int(cfg, "d") : 0, 1, &tr, t->c.err);
			have_test = mu_get_str(cfg, "test_data") != NULL;
		}
	} else {
		uint64_t n = (uint64_t)mu_get_int(cfg, "n"), nt = (uint64_t)mu_get_int(cfg, "n_test");

		rc = scar_synth_classification(n + nt, (uint64_t)mu_get_int(cfg, "d"),
					       (uint32_t)mu_get_int(cfg, "classes"),
					       mu_get_real(cfg, "sep"),
					       (uint64_t)mu_get_int(cfg, "data_seed"), &tr, t->c.err);
		if (!rc && nt) {
			tr->n = n;
			have_test = 1;
		}
	}
	if (rc)
		goto out;
	if (!tr->label || tr->classes < 2) {
		rc = scar_error_set(t->c.err, SCAR_EINVAL, "mlr: training data needs labels of 2 classes or more");
		goto out;
	}
	t->md = tr->d;
	t->mx = malloc(tr->n * tr->d * sizeof(float) + 1);
	t->my = malloc(tr->n * sizeof(uint32_t) + 1);
	if (!t->mx || !t->my) {
		rc = scar_error_set(t->c.err, SCAR_ENOMEM, "out of memory");
		goto out;
	}
	if (have_test) {
		t->mn = tr->n;
		memcpy(t->mx, tr->x, tr->n * tr->d * sizeof(float));
		memcpy(t->my, tr->label, tr->n * sizeof(uint32_t));
	} else {
		struct scar_rng r;
		double frac = mu_get_real(cfg, "test_frac");
		uint64_t a = 0;

		scar_rng_seed_stream(&r, (uint64_t)mu_get_int(cfg, "data_seed"), 31);
		for (uint64_t i = 0; i < tr->n; i++)
			if (!(scar_rng_uniform(&r) < frac)) {
				memcpy(t->mx + a * tr->d, tr->x + i * tr->d, tr->d * sizeof(float));
				t->my[a++] = tr->label[i];
			}
		t->mn = a;
		if (!a || a == tr->n) {
			rc = scar_error_set(t->c.err, SCAR_EINVAL, "mlr: %llu examples are too few to hold %g out",
					    (unsigned long long)tr->n, frac);
			goto out;
		}
	}
	t->mbatch = (uint64_t)mu_get_int(cfg, "batch");
	if (t->mbatch > t->mn)
		t->mbatch = t->mn;
	t->lr0 = mu_get_real(cfg, "lr");
	t->lr_decay = mu_get_real(cfg, "lr_decay");
	t->l2 = mu_get_real(cfg, "l2");
out:
	scar_dense_free(tr);
	return rc;
}

/* Buffers once the state (and with it the class count) is known. */
static int mlr_buffers(struct dt *t)
{
	struct scar_tensor *w = mlr_w(t);
	uint64_t rows, nb = (t->mn + t->mbatch - 1) / t->mbatch, *pos;
	size_t big;

	if (!w || w->dtype != SCAR_F32 || w->ndim != 2 || w->shape[0] != t->md + 1 || w->shape[1] < 2)
		return scar_error_set(t->c.err, SCAR_EMISMATCH, "mlr: unexpected state layout");
	t->mk = (uint32_t)w->shape[1];
	rows = t->md + 1;
	if (rows * t->mk * t->c.P > INT_MAX || t->mbatch * t->mk > INT_MAX)
		return scar_error_set(t->c.err, SCAR_EUNSUPPORTED, "mlr: too many weights for MPI");
	big = (rows > t->mbatch ? rows : t->mbatch) * t->mk + t->c.P;
	t->sd = malloc(t->mbatch * t->mk * sizeof(float) + sizeof(float) * t->mk);
	t->bcnt = calloc(t->c.P, sizeof(int));
	t->bdispl = calloc(t->c.P, sizeof(int));
	t->bloss = malloc(2 * (nb + 1) * sizeof(double));
	t->wt = malloc(((size_t)t->mk * t->md + t->mk) * sizeof(float));
	t->sbuf = malloc(big * sizeof(double));
	t->rbuf = malloc(big * sizeof(double));
	t->cnt = calloc(2 * (size_t)t->c.P, sizeof(*t->cnt));
	t->displ = calloc(2 * (size_t)t->c.P, sizeof(*t->displ));
	t->order = malloc(rows * sizeof(*t->order));
	pos = calloc(t->c.P, sizeof(*pos));
	if (!t->sd || !t->bcnt || !t->bdispl || !t->bloss || !t->wt || !t->sbuf || !t->rbuf ||
	    !t->cnt || !t->displ || !t->order || !pos) {
		free(pos);
		return scar_error_set(t->c.err, SCAR_ENOMEM, "out of memory");
	}
	for (uint64_t r = 0; r < rows; r++)
		t->cnt[owner(t, r)]++;
	for (uint32_t q = 1; q < t->c.P; q++)
		t->displ[q] = t->displ[q - 1] + t->cnt[q - 1];
	for (uint32_t q = 0; q < t->c.P; q++)
		pos[q] = (uint64_t)t->displ[q];
	for (uint64_t r = 0; r < rows; r++)
		t->order[pos[owner(t, r)]++] = r;
	free(pos);
	return 0;
}

/* ---- mf: the distributed math ---- */

/*
 * One ALS sweep as lib/model_mf.c does it, the rows solved by their owners:
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

/*
 * Gather a rows x cols table of doubles whose row r is filled in by its
 * owner (r's owner as for a param tensor of that many rows) to every rank.
 */
static int sync_table(struct dt *t, double *v, uint64_t rows, uint64_t cols)
{
	struct scar_tensor pt, *ptp = &pt;
	struct scar_state ps;

	static char name[] = "values";

	memset(&pt, 0, sizeof(pt));
	pt.name = name;
	pt.dtype = SCAR_F64;
	pt.role = SCAR_ROLE_PARAM;
	pt.ndim = cols > 1 ? 2 : 1;
	pt.shape[0] = rows;
	pt.shape[1] = cols;
	pt.data = v;
	memset(&ps, 0, sizeof(ps));
	ps.ntensors = 1;
	ps.tensors = &ptp;
	return sync_params(t, &ps);
}

/* Gather the two named param tensors of the state from their owners. */
static int sync_two(struct dt *t, const char *a, const char *b)
{
	struct scar_tensor *v[2] = { scar_state_find(t->c.st, a), scar_state_find(t->c.st, b) };
	struct scar_state ps;

	if (!v[0] || !v[1])
		return scar_error_set(t->c.err, SCAR_EMISMATCH, "mf: unexpected state layout");
	memset(&ps, 0, sizeof(ps));
	ps.ntensors = 2;
	ps.tensors = v;
	return sync_params(t, &ps);
}

static int mf_step(struct dt *t)
{
	struct scar_mf_params x;
	double s = 0;
	int rc;

	if ((rc = scar_mf_params(t->c.m, t->c.st, &x, t->c.err)))
		return rc;
	for (uint32_t k = 0; k < t->mf_nu; k++)
		scar_mf_solve_user(t->c.m, &x, t->mf_u[k]);
	if ((rc = sync_two(t, "user_factors", "user_bias")))
		return rc;
	for (uint32_t k = 0; k < t->mf_ni; k++)
		scar_mf_solve_item(t->c.m, &x, t->mf_i[k]);
	if ((rc = sync_two(t, "item_factors", "item_bias")))
		return rc;
	for (uint32_t k = 0; k < t->mf_nu; k++)
		t->mf_uv[t->mf_u[k]] = scar_mf_user_resid(t->c.m, &x, t->mf_u[k]);
	if ((rc = sync_table(t, t->mf_uv, t->mfi.users, 1)))
		return rc;
	for (uint32_t u = 0; u < t->mfi.users; u++)
		s += t->mf_uv[u];
	*x.mu = scar_mf_mean(t->c.m, s);
	if (!isfinite(*x.mu))
		return scar_error_set(t->c.err, SCAR_EDIVERGED, "mf: parameters diverged");
	return 0;
}

static int mf_objective(struct dt *t, double *out)
{
	struct scar_mf_params x;
	double e = 0, pen = 0;
	int rc;

	if ((rc = scar_mf_params(t->c.m, t->c.st, &x, t->c.err)))
		return rc;
	for (uint32_t k = 0; k < t->mf_nu; k++) {
		uint32_t u = t->mf_u[k];

		t->mf_uv[2 * (size_t)u] = scar_mf_user_sse(t->c.m, &x, u);
		t->mf_uv[2 * (size_t)u + 1] = scar_mf_user_pen(t->c.m, &x, u);
	}
	for (uint32_t k = 0; k < t->mf_ni; k++)
		t->mf_iv[t->mf_i[k]] = scar_mf_item_pen(t->c.m, &x, t->mf_i[k]);
	if ((rc = sync_table(t, t->mf_uv, t->mfi.users, 2)) ||
	    (rc = sync_table(t, t->mf_iv, t->mfi.items, 1)))
		return rc;
	for (uint32_t u = 0; u < t->mfi.users; u++)
		e += t->mf_uv[2 * (size_t)u];
	for (uint32_t u = 0; u < t->mfi.users; u++)
		pen += t->mf_uv[2 * (size_t)u + 1];
	for (uint32_t i = 0; i < t->mfi.items; i++)
		pen += t->mf_iv[i];
	*out = scar_mf_objective_of(t->c.m, e, pen);
	return 0;
}

/* ---- mf, solver sgd: DSGD, the distributed math ---- */

/*
 * A DSGD epoch as lib/model_mf.c does it with "workers" W > 1: the W
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
static void mf_pass(struct dt *t, float *f, float *b, uint64_t n, uint32_t js, uint32_t jr,
		    uint32_t to, uint32_t from)
{
	uint32_t W = t->mfi.workers, k = t->mfi.rank;
	uint64_t ns = mf_block_rows(n, js, W), nr = mf_block_rows(n, jr, W);

	mf_block_copy(t->mf_sb, f, b, n, js, W, k, 1);
	MPI_Sendrecv(t->mf_sb, (int)(ns * (k + 1)), MPI_FLOAT, (int)to, 0, t->mf_rb,
		     (int)(nr * (k + 1)), MPI_FLOAT, (int)from, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	t->comm_bytes += ns * (k + 1) * sizeof(float);
	mf_block_copy(t->mf_rb, f, b, n, jr, W, k, 0);
}

/*
 * Every rank's copy of a table (factors f [n, k], biases b [n]) from the
 * ranks that updated its rows last: row r's is the home of block
 * (r mod W + shift) mod W.
 */
static void mf_gather_rows(struct dt *t, float *f, float *b, uint64_t n, uint32_t shift)
{
	uint32_t W = t->mfi.workers, k = t->mfi.rank, P = t->c.P;
	uint64_t own = 0;
	float *p = t->mf_sb;

	memset(t->mf_cnt, 0, P * sizeof(*t->mf_cnt));
	for (uint64_t r = 0; r < n; r++) {
		uint32_t q = t->mf_home[(r % W + shift) % W];

		t->mf_cnt[q] += (int)(k + 1);
		if (q == t->c.R) {
			memcpy(p, f + r * k, k * sizeof(*f));
			p[k] = b[r];
			p += k + 1;
			own++;
		}
	}
	for (uint32_t q = 0; q < P; q++) {
		t->mf_displ[q] = q ? t->mf_displ[q - 1] + t->mf_cnt[q - 1] : 0;
		t->mf_pos[q] = (uint64_t)t->mf_displ[q];
	}
	MPI_Allgatherv(t->mf_sb, (int)(own * (k + 1)), MPI_FLOAT, t->mf_rb, t->mf_cnt, t->mf_displ,
		       MPI_FLOAT, MPI_COMM_WORLD);
	t->comm_bytes += own * (k + 1) * sizeof(float) * (P - 1);
	for (uint64_t r = 0; r < n; r++) {
		const float *src = t->mf_rb + t->mf_pos[t->mf_home[(r % W + shift) % W]];

		memcpy(f + r * k, src, k * sizeof(*f));
		b[r] = src[k];
		t->mf_pos[t->mf_home[(r % W + shift) % W]] += k + 1;
	}
}

static int mf_sgd_step(struct dt *t)
{
	struct scar_mf_params x;
	uint32_t W = t->mfi.workers, P = t->c.P, R = t->c.R, Pw = P < W ? P : W;
	uint64_t a = scar_dist_part_lo(W, R, P), b = scar_dist_part_lo(W, R + 1, P);
	uint64_t U = t->mfi.users, I = t->mfi.items;
	int rc;

	if ((rc = scar_mf_params(t->c.m, t->c.st, &x, t->c.err)) ||
	    (rc = scar_mf_sgd_begin(t->c.m, t->c.st, t->c.err)))
		return rc;
	for (uint32_t s = 0; s < W; s++) {
		for (uint64_t h = a; h < b; h++)
			scar_mf_sgd_block(t->c.m, t->c.st, &x,
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
		return scar_error_set(t->c.err, SCAR_EDIVERGED, "mf: parameters diverged");
	return 0;
}

/* sgd: which side travels, the homes of the blocks, the buffers. */
static int mf_sgd_setup(struct dt *t)
{
	uint32_t W = t->mfi.workers, P = t->c.P, k = t->mfi.rank;
	uint64_t big = (t->mfi.users > t->mfi.items ? t->mfi.users : t->mfi.items) * (uint64_t)(k + 1);

	if (W == 1)
		return scar_error_set(t->c.err, SCAR_EUNSUPPORTED,
				      "mf: solver 'sgd' with workers=1 is one chain of updates, each on the last, and does not run distributed; set workers=W > 1 for DSGD (best a multiple of the ranks: its results depend on W, never on the ranks)");
	if (big > INT_MAX)
		return scar_error_set(t->c.err, SCAR_EUNSUPPORTED, "mf: too many rows for MPI");
	t->mf_umove = t->mfi.users <= t->mfi.items;
	t->mf_home = malloc(W * sizeof(*t->mf_home));
	t->mf_sb = malloc((big + 1) * sizeof(*t->mf_sb));
	t->mf_rb = malloc((big + 1) * sizeof(*t->mf_rb));
	t->mf_cnt = calloc(P, sizeof(*t->mf_cnt));
	t->mf_displ = calloc(P, sizeof(*t->mf_displ));
	t->mf_pos = calloc(P, sizeof(*t->mf_pos));
	if (!t->mf_home || !t->mf_sb || !t->mf_rb || !t->mf_cnt || !t->mf_displ || !t->mf_pos)
		return scar_error_set(t->c.err, SCAR_ENOMEM, "out of memory");
	for (uint32_t q = 0; q < P; q++)
		for (uint64_t h = scar_dist_part_lo(W, q, P); h < scar_dist_part_lo(W, q + 1, P); h++)
			t->mf_home[h] = q;
	return 0;
}

/* The model on every rank (it loaded the ratings); the rows this rank owns. */
static int mf_setup(struct dt *t)
{
	int rc;

	scar_mf_info(t->c.m, &t->mfi);
	if (t->mfi.sgd && (rc = mf_sgd_setup(t)))
		return rc;
	t->mf_u = malloc(((size_t)t->mfi.users + 1) * sizeof(*t->mf_u));
	t->mf_i = malloc(((size_t)t->mfi.items + 1) * sizeof(*t->mf_i));
	t->mf_uv = calloc(2 * (size_t)t->mfi.users + 1, sizeof(*t->mf_uv));
	t->mf_iv = calloc((size_t)t->mfi.items + 1, sizeof(*t->mf_iv));
	if (!t->mf_u || !t->mf_i || !t->mf_uv || !t->mf_iv)
		return scar_error_set(t->c.err, SCAR_ENOMEM, "out of memory");
	for (uint32_t u = 0; u < t->mfi.users; u++)
		if (owner(t, u) == t->c.R)
			t->mf_u[t->mf_nu++] = u;
	for (uint32_t i = 0; i < t->mfi.items; i++)
		if (owner(t, i) == t->c.R)
			t->mf_i[t->mf_ni++] = i;
	return 0;
}

/* ---- lda: the distributed math ---- */

/*
 * One AD-LDA sweep as lib/model_lda.c does it with "workers" W blocks of
 * documents: every rank prepares the counts and computes the sweep's key (the
 * same replicated state, so the same values); rank R samples the blocks
 * [lo(R), lo(R+1)) of W by the partition rule, each against the counts of
 * the start of the sweep; the assignments z of every rank's documents are
 * gathered to every rank; every rank rebuilds the counts from z (the
 * resync). The blocks do not see each other's changes in one process
 * either, so the result is the model's, bit for bit. The objective is the
 * documents' log-likelihoods, computed by the ranks over the partition of
 * the documents, gathered and added in document order.
 */

static void lda_blocks(const struct dt *t, uint32_t q, uint64_t *d0, uint64_t *d1)
{
	uint32_t W = t->ldi.workers;
	uint64_t b0 = scar_dist_part_lo(W, q, t->c.P), b1 = scar_dist_part_lo(W, q + 1, t->c.P);

	*d0 = scar_dist_part_lo(t->ldi.docs, (uint32_t)b0, W);
	*d1 = scar_dist_part_lo(t->ldi.docs, (uint32_t)b1, W);
}

static int lda_step(struct dt *t)
{
	uint32_t W = t->ldi.workers;
	uint64_t seed, b0 = scar_dist_part_lo(W, t->c.R, t->c.P), b1 = scar_dist_part_lo(W, t->c.R + 1, t->c.P);
	struct scar_tensor *z = scar_state_find(t->c.st, "z");
	int rc;

	/* W = 1 is one sequential chain of draws: every rank runs it itself. */
	if (W == 1)
		return t->c.def->step(t->c.m, t->c.st, t->c.err);
	if ((rc = scar_lda_sweep_begin(t->c.m, t->c.st, &seed, t->c.err)))
		return rc;
	if (!z || z->dtype != SCAR_U32 || scar_tensor_elems(z) != t->ldi.tokens)
		return scar_error_set(t->c.err, SCAR_EMISMATCH, "lda: unexpected state layout");
	for (uint64_t b = b0; b < b1; b++)
		if ((rc = scar_lda_sample_block(t->c.m, t->c.st, (uint32_t)b, seed, t->c.err)))
			return rc;
	for (uint32_t q = 0; q < t->c.P; q++) {
		uint64_t d0, d1;

		lda_blocks(t, q, &d0, &d1);
		t->ld_cnt[q] = (int)(t->ldi.doc_start[d1] - t->ldi.doc_start[d0]);
		t->ld_displ[q] = (int)t->ldi.doc_start[d0];
	}
	MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, z->data, t->ld_cnt, t->ld_displ,
		       MPI_UINT32_T, MPI_COMM_WORLD);
	t->comm_bytes += sizeof(uint32_t) * (uint64_t)t->ld_cnt[t->c.R] * (t->c.P - 1);
	return scar_lda_sweep_end(t->c.m, t->c.st, t->c.err);
}

static int lda_objective(struct dt *t, double *out)
{
	uint64_t d0 = scar_dist_part_lo(t->ldi.docs, t->c.R, t->c.P);
	uint64_t d1 = scar_dist_part_lo(t->ldi.docs, t->c.R + 1, t->c.P);
	double sum = 0;
	int rc;

	if ((rc = scar_lda_doc_logliks(t->c.m, t->c.st, d0, d1, t->ld_ll + d0, t->c.err)))
		return rc;
	for (uint32_t q = 0; q < t->c.P; q++) {
		t->ld_cnt[q] = (int)(scar_dist_part_lo(t->ldi.docs, q + 1, t->c.P) -
				     scar_dist_part_lo(t->ldi.docs, q, t->c.P));
		t->ld_displ[q] = (int)scar_dist_part_lo(t->ldi.docs, q, t->c.P);
	}
	MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, t->ld_ll, t->ld_cnt, t->ld_displ,
		       MPI_DOUBLE, MPI_COMM_WORLD);
	t->comm_bytes += sizeof(double) * (d1 - d0) * (t->c.P - 1);
	for (uint64_t d = 0; d < t->ldi.docs; d++)
		sum += t->ld_ll[d];
	*out = scar_lda_objective_of(t->c.m, sum);
	return 0;
}

/* The model on every rank (it loaded the corpus); the buffers. */
static int lda_setup(struct dt *t)
{
	scar_lda_info(t->c.m, &t->ldi);
	if (t->ldi.tokens > INT_MAX || t->ldi.docs > INT_MAX)
		return scar_error_set(t->c.err, SCAR_EUNSUPPORTED, "lda: too many tokens for MPI");
	t->ld_ll = malloc((t->ldi.docs + 1) * sizeof(*t->ld_ll));
	t->ld_cnt = calloc(t->c.P, sizeof(*t->ld_cnt));
	t->ld_displ = calloc(t->c.P, sizeof(*t->ld_displ));
	if (!t->ld_ll || !t->ld_cnt || !t->ld_displ)
		return scar_error_set(t->c.err, SCAR_ENOMEM, "out of memory");
	return 0;
}

/* ---- the workload behind the trainer ---- */

static int wl_objective(struct scar_train_ctx *c, double *out)
{
	struct dt *t = dt_of(c);

	return t->mlr ? mlr_objective(t, out) : t->mf ? mf_objective(t, out) :
		t->lda ? lda_objective(t, out) : ridge_objective(t, out);
}

static int wl_step(struct scar_train_ctx *c)
{
	struct dt *t = dt_of(c);

	return t->mlr ? mlr_step(t) : t->mf ? (t->mfi.sgd ? mf_sgd_step(t) : mf_step(t)) : t->lda ? lda_step(t) : ridge_step(t);
}

/* ---- state distribution ---- */

struct tmeta {
	char name[SCAR_NAME_MAX];
	int32_t dtype, role, ndim, pad;
	uint64_t shape[SCAR_MAX_DIMS];
};

/*
 * Rank 0's state, built by the model, to every rank: first the tensor
 * table (every rank allocates, and all agree that it could), then the data
 * in chunks below INT_MAX.
 */
static int bcast_state(struct dt *t)
{
	uint64_t nt = t->c.R == 0 ? t->c.st->ntensors : 0, iter = t->c.R == 0 ? t->c.st->iteration : 0;
	int rc = 0;

	MPI_Bcast(&nt, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
	MPI_Bcast(&iter, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
	if (t->c.R != 0)
		t->c.st->iteration = iter;
	for (uint64_t i = 0; i < nt; i++) {
		struct tmeta mt;
		struct scar_tensor *x;

		memset(&mt, 0, sizeof(mt));
		if (t->c.R == 0) {
			x = t->c.st->tensors[i];
			snprintf(mt.name, sizeof(mt.name), "%s", x->name);
			mt.dtype = x->dtype;
			mt.role = x->role;
			mt.ndim = x->ndim;
			memcpy(mt.shape, x->shape, sizeof(mt.shape));
		}
		MPI_Bcast(&mt, (int)sizeof(mt), MPI_BYTE, 0, MPI_COMM_WORLD);
		if (t->c.R != 0 && !rc) {
			rc = scar_tensor_new(&x, mt.name, (enum scar_dtype)mt.dtype,
					     (enum scar_role)mt.role, mt.ndim, mt.shape, t->c.err);
			if (!rc)
				rc = scar_state_add(t->c.st, x, t->c.err);
		}
	}
	if ((rc = agree(t, rc)))
		return rc;
	for (uint64_t i = 0; i < nt; i++) {
		struct scar_tensor *x = t->c.st->tensors[i];
		char *p = x->data;
		size_t left = scar_tensor_bytes(x);

		while (left) {
			int chunk = left > (1u << 30) ? 1 << 30 : (int)left;

			MPI_Bcast(p, chunk, MPI_BYTE, 0, MPI_COMM_WORLD);
			p += chunk;
			left -= (size_t)chunk;
		}
	}
	return 0;
}

/* ---- checkpoints ---- */

/*
 * Priorities for the shared row selection: computed by each row's owner and
 * gathered, so every rank ranks all rows.
 */
static int priorities(struct scar_train_ctx *c, size_t ti, double *pv)
{
	struct dt *t = dt_of(c);
	const struct scar_tensor *x = c->st->tensors[ti], *sv = c->saved->tensors[ti];
	uint64_t rows = scar_tensor_rows(x);

	for (uint64_t r = 0; r < rows; r++)
		pv[r] = owner(t, r) == c->R ? scar_row_priority(x, sv, r) : 0;
	return sync_table(t, pv, rows, 1);
}

/* The ranks' part of a checkpoint's writing (struct scar_store_comm). */
static int store_agree(void *arg, int rc)
{
	return agree(arg, rc);
}

static void store_gather(void *arg, const struct scar_store_part *mine, struct scar_store_part *all)
{
	MPI_Gather(mine, (int)sizeof(*mine), MPI_BYTE, all, (int)sizeof(*mine), MPI_BYTE, 0,
		   MPI_COMM_WORLD);
}

static void store_bcast(void *arg, uint64_t *v)
{
	MPI_Bcast(v, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
}

/*
 * Each rank writes its file of view (its rows) in parallel; once all have,
 * rank 0 writes the manifest (scar_store_write). *bytes is the total of the
 * rank files, the same on every rank.
 */
static int write_dist(struct dt *t, const struct scar_state *view, int partial, uint64_t *bytes)
{
	const struct scar_store_comm comm = { store_agree, store_gather, store_bcast, t };
	struct scar_store_write_opts wo = {
		.compress = t->c.o->ckpt_compress, .sync = t->c.o->ckpt_sync,
		.clock = t->c.clock, .partial = partial, .rank = t->c.R, .ranks = t->c.P,
		.comm = &comm,
	};

	return scar_store_write(&t->c.store, view, &wo, bytes, t->c.err);
}

/*
 * A checkpoint now: full (rank 0's file adds the state tensors; the whole
 * state becomes the base of full recovery) or partial (the selected rows).
 * Every rank writes a file of its own rows, where one process writes one
 * file of the whole state.
 */
static int checkpoint(struct scar_train_ctx *c, int full)
{
	struct dt *t = dt_of(c);
	struct scar_state *st = t->c.st, view;
	struct scar_tensor *vt = NULL, **vp = NULL;
	uint64_t rows_written = 0, bytes = 0, file_bytes = 0, ncp;
	double t1 = scar_train_now(), sel_secs = 0;
	size_t nv = 0;
	int rc = 0;

	ncp = st->iteration / scar_train_policy_period(t->c.o);
	vt = calloc(st->ntensors, sizeof(*vt));
	vp = calloc(st->ntensors, sizeof(*vp));
	if (!vt || !vp) {
		rc = scar_error_set(t->c.err, SCAR_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < st->ntensors; i++) {
		struct scar_tensor *x = st->tensors[i];
		uint64_t rows = scar_tensor_rows(x);
		size_t rb = scar_tensor_row_bytes(x);
		uint8_t *sel;

		if (!is_param(x)) {
			if (full && t->c.R == 0) {
				vt[nv] = *x;
				vt[nv].present = NULL;
				vp[nv] = &vt[nv];
				nv++;
			}
			continue;
		}
		vt[nv] = *x;
		sel = vt[nv].present = malloc(rows ? rows : 1);
		vp[nv] = &vt[nv];
		nv++;
		if (!sel) {
			rc = scar_error_set(t->c.err, SCAR_ENOMEM, "out of memory");
			goto out;
		}
		if (full) {
			memset(sel, 1, rows);
		} else {
			double ts = scar_train_now();

			if ((rc = scar_train_select_rows(c, i, sel, ncp)))
				goto out;
			sel_secs += scar_train_now() - ts;
		}
		for (uint64_t r = 0; r < rows; r++) {
			if (!sel[r])
				continue;
			if (!full)
				memcpy(scar_tensor_row(t->c.saved->tensors[i], r), scar_tensor_row(x, r), rb);
			rows_written++;
			bytes += rb;
			/* This rank's file holds only its own rows. */
			sel[r] = owner(t, r) == t->c.R;
		}
		if (full)
			memcpy(t->c.saved->tensors[i]->data, x->data, scar_tensor_bytes(x));
	}
	if ((rc = scar_train_set_clock(c, st)))
		goto out;
	if (full) {
		struct scar_state *s;

		if ((rc = scar_state_clone(&s, st, t->c.err)))
			goto out;
		scar_state_free(t->c.last_full);
		t->c.last_full = s;
	}
	if (t->c.o->ckpt_dir) {
		view = *st;
		view.ntensors = nv;
		view.tensors = vp;
		if ((rc = write_dist(t, &view, !full, &file_bytes)))
			goto out;
	}
	rc = scar_train_emit(c, scar_train_checkpoint_record(c, full, rows_written, bytes, file_bytes,
							     scar_train_now() - t1, sel_secs));
out:
	for (size_t i = 0; vt && i < nv; i++)
		if (is_param(&vt[i]))
			free(vt[i].present);
	free(vt);
	free(vp);
	return rc;
}

/* ---- the hooks of the shared trainer ---- */

/* After the owners restored their lost rows (train_common.c): every worker's copy from the owners. */
static int sync_recovered(struct scar_train_ctx *c)
{
	struct dt *t = dt_of(c);
	int rc = sync_params(t, c->st);

	t->valid = 0;
	return rc;
}

static int agree_hook(struct scar_train_ctx *c, int rc)
{
	return agree(dt_of(c), rc);
}

static const struct scar_train_ops mpi_ranks = {
	.step = wl_step,
	.objective = wl_objective,
	.checkpoint = checkpoint,
	.priorities = priorities,
	.sync = sync_recovered,
	.agree = agree_hook,
};

static void dt_free(struct dt *t)
{
	free(t->x);
	free(t->y);
	free(t->g);
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
	free(t->ld_ll);
	free(t->ld_cnt);
	free(t->ld_displ);
	free(t->mx);
	free(t->my);
	free(t->sd);
	free(t->bcnt);
	free(t->bdispl);
	free(t->bloss);
	free(t->wt);
	free(t->cnt);
	free(t->displ);
	free(t->order);
	free(t->sbuf);
	free(t->rbuf);
}

static int validate(const struct scar_train_opts *o, const struct scar_model_def *def,
		    struct scar_error *err)
{
	if (def && strcmp(def->name, "ridge") && strcmp(def->name, "mlr") &&
	    strcmp(def->name, "mf") && strcmp(def->name, "lda"))
		return scar_error_set(err, SCAR_EUNSUPPORTED, "model '%s' does not run distributed yet",
				      def->name);
	return scar_train_check_opts(o, def, err);
}

static int core(const struct scar_train_opts *o, struct scar_train_result *res,
		struct scar_error *err, double **objs, size_t *nobjs);

int scar_dist_train_run(const struct scar_train_opts *o, struct scar_train_result *res,
			struct scar_error *err)
{
	struct scar_error e;
	int rc = 0, lock = -1;

	if (!g_inited) {
		memset(res, 0, sizeof(*res));
		return scar_error_set(err, SCAR_EUNSUPPORTED, "MPI is not running");
	}
	/* One writer per directory: rank 0 locks it for the run, every rank hears the outcome. */
	if (o->ckpt_dir) {
		scar_error_clear(&e);
		if (g_rank == 0)
			rc = scar_dist_dir_lock(o->ckpt_dir, &lock, &e);
		MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
		if (rc) {
			MPI_Bcast(&e, (int)sizeof(e), MPI_BYTE, 0, MPI_COMM_WORLD);
			if (err)
				*err = e;
			memset(res, 0, sizeof(*res));
			return rc;
		}
	}
	rc = core(o, res, err, NULL, NULL);
	if (o->ckpt_dir)
		scar_dist_dir_unlock(o->ckpt_dir, lock);
	return rc;
}

static int core(const struct scar_train_opts *o, struct scar_train_result *res,
		struct scar_error *err, double **objs, size_t *nobjs)
{
	struct dt t;
	struct scar_train_cost ci = { 0 };
	json_t *config = NULL;
	double *ref = NULL;
	size_t nref = 0;
	int rc = 0, done = 0;

	memset(&t, 0, sizeof(t));
	scar_train_ctx_init(&t.c, o, &mpi_ranks, res, err);
	t.c.dist = 1;
	t.c.P = (uint32_t)g_size;
	t.c.R = (uint32_t)g_rank;
	/* Errors so far are the same on every rank. */
	if ((rc = validate(o, t.c.def, err)) ||
	    (rc = scar_train_reference(o, core, &ref, &nref, err)))
		return rc;
	if ((rc = scar_train_config(o, t.c.def, &config, err)))
		goto out;
	t.S = o->resume ? o->resume->shards : o->shards;
	/*
	 * Rank 0 keeps the model itself for what is not distributed: eta, c,
	 * x*, the held-out metric. For mf and lda every rank does: the owners'
	 * solves and the blocks' sampling are the model's.
	 */
	t.mlr = strcmp(t.c.def->name, "mlr") == 0;
	t.mf = strcmp(t.c.def->name, "mf") == 0;
	t.lda = strcmp(t.c.def->name, "lda") == 0;
	if (t.c.R == 0 || t.mf || t.lda)
		rc = t.c.def->create(&t.c.m, config, err);
	if ((rc = agree(&t, rc)) ||
	    (rc = agree(&t, t.mlr ? mlr_setup(&t, config) : t.mf ? mf_setup(&t) :
			t.lda ? lda_setup(&t) : 0)) ||
	    (!t.mlr && !t.mf && !t.lda && (rc = ridge_setup(&t, config))))
		goto out;
	if (o->resume) {
		rc = scar_state_clone(&t.c.st, o->resume, err);
		if (!rc) {
			/* The validated configuration (scar_train_config) is what the state carries on. */
			json_decref(t.c.st->config);
			t.c.st->config = json_incref(config);
		}
		if (!rc && t.c.R == 0) {
			struct scar_state *fresh = NULL;

			rc = scar_train_new_state(&t.c, config, &fresh);
			if (!rc)
				rc = scar_train_check_layout(&t.c, fresh);
			scar_state_free(fresh);
		}
		if ((rc = agree(&t, rc)))
			goto out;
		t.c.clock = scar_train_resume_clock(t.c.st);
	} else {
		if (t.c.R == 0) {
			rc = scar_train_new_state(&t.c, config, &t.c.st);
		} else if (!(rc = scar_state_new(&t.c.st, t.c.def->name, err))) {
			json_decref(t.c.st->config);
			t.c.st->config = json_incref(config);
			t.c.st->shards = o->shards;
		}
		if ((rc = agree(&t, rc)) || (rc = agree(&t, bcast_state(&t))))
			goto out;
	}
	if (t.mlr) {
		if ((rc = agree(&t, mlr_buffers(&t))))
			goto out;
	} else if (t.mf) {
		struct scar_mf_params x;

		if ((rc = scar_mf_params(t.c.m, t.c.st, &x, err)))
			goto out;	/* the same state on every rank */
	} else if (t.lda) {
		/* the model checks the layout at every step and objective */
	} else if (!ridge_w(&t) || ridge_w(&t)->dtype != SCAR_F64 ||
		   scar_tensor_elems(ridge_w(&t)) != t.d) {
		rc = scar_error_set(err, SCAR_EMISMATCH, "ridge: unexpected state layout");
		goto out;
	}
	if (ref && (rc = scar_train_cost_target(&t.c, ref, nref, &ci)))
		goto out;
	if ((rc = scar_train_begin(&t.c, config)))
		goto out;
	t.comm_bytes = 0;	/* what training sends, not the start */
	if ((rc = scar_train_loop(&t.c, &ci, &done)))
		goto out;
	MPI_Allreduce(&t.comm_bytes, &t.c.comm_total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
	rc = scar_train_finish(&t.c, &ci, done);
out:
	scar_train_ctx_release(&t.c, rc, objs, nobjs);
	free(ref);
	dt_free(&t);
	json_decref(config);
	return rc;
}

#else
/* ISO C wants at least one declaration in a translation unit. */
typedef int scar_dist_mpi_unused_;
#endif /* SCAR_MPI */
