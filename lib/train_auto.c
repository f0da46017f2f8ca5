/*
 * train_auto.c - recovery "auto": at a failure, choose among the recoveries
 * the model has by the bound's predicted cost (scar(7), "Recovery beyond
 * the saved view"; the paper's RQ5: does the bound guide real-time
 * decisions?).
 *
 * Only what survives is read: the surviving rows, the saved view, the
 * step norms of the iterations so far and the checkpoint iterations.
 * For each candidate an estimate of the perturbation it causes:
 *   partial, rewind  the surviving rows' drift from their saved values,
 *                    ||x_r - saved_r||^2 summed over survivors, times
 *                    lost rows / surviving rows, per tensor (the lost rows
 *                    drifted like the others since they were saved);
 *   rebuild          a dry run on surviving shards (as many as were lost):
 *                    their rows are set to their saved values and rebuilt,
 *                    and the distance from their current values, scaled
 *                    the same way, stands for the lost rows';
 *   full             no estimate needed: the rollback redoes T - C
 *                    iterations, its cost.
 * c and the current distance to the optimum come from the step norms since
 * the last failure or the start, the last 64 of them: log s_k = a + b k fitted
 * (scar_bound_fit), c = e^b, dist = e^(a + b T) / (1 - c), and a perturbation
 * of size delta is predicted to cost log(1 + delta / dist) / log(1 / c)
 * iterations. Without a contraction estimate (too few steps, c >= 1) auto
 * cannot weigh a perturbation against T - C: it takes the candidate with
 * the smallest estimated perturbation, full last. Everything is a function
 * of the state, so the choice is deterministic and the same on every rank.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "scar/bound.h"
#include "scar/shard.h"
#include "scar/train.h"
#include "train_internal.h"

static int is_param(const struct scar_tensor *x)
{
	return x->role == SCAR_ROLE_PARAM;
}

/*
 * The step norms the fit reads: the state's extra "auto_steps", the last
 * up to SCAR_AUTO_STEPS norms since the last failure, newest last. In the
 * state so that checkpoints carry it and a resume chooses as the run it
 * continues would have (only with recovery auto: other runs' states are
 * as before). The one reader: NULL when absent; SCAR_ECORRUPT in *rc for
 * anything but an array of at most SCAR_AUTO_STEPS finite numbers >= 0.
 */
#define SCAR_AUTO_STEPS 64

static json_t *auto_steps(struct scar_train_ctx *c, int *rc)
{
	json_t *a = json_object_get(c->st->extra, "auto_steps"), *v;
	size_t i;

	*rc = 0;
	if (!a)
		return NULL;
	if (!json_is_array(a) || json_array_size(a) > SCAR_AUTO_STEPS)
		goto bad;
	json_array_foreach(a, i, v)
		if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) < 0)
			goto bad;
	return a;
bad:
	*rc = scar_error_set(c->err, SCAR_ECORRUPT,
			     "state's extra \"auto_steps\" is not an array of at most %d step norms",
			     SCAR_AUTO_STEPS);
	return NULL;
}

int scar_train_auto_step(struct scar_train_ctx *c, double s)
{
	json_t *a;
	int rc;

	if (c->o->recovery != SCAR_RECOVER_AUTO)
		return 0;
	a = auto_steps(c, &rc);
	if (rc)
		return rc;
	if (!a) {
		if (json_object_set_new(c->st->extra, "auto_steps", json_array()))
			return scar_error_set(c->err, SCAR_ENOMEM, "out of memory");
		a = json_object_get(c->st->extra, "auto_steps");
	}
	if (json_array_append_new(a, json_real(isfinite(s) ? s : 0)))
		return scar_error_set(c->err, SCAR_ENOMEM, "out of memory");
	if (json_array_size(a) > SCAR_AUTO_STEPS)
		json_array_remove(a, 0);
	return 0;
}

void scar_train_auto_reset(struct scar_train_ctx *c)
{
	json_object_del(c->st->extra, "auto_steps");
}

/*
 * Squared drift from the saved view of the rows of tensor i in shards
 * marked in which (NULL: every shard not lost) of state x; *n gets how
 * many rows.
 */
static double drift2(const struct scar_train_ctx *c, const struct scar_state *x, size_t i,
		     const uint8_t *lost, const uint8_t *which, uint64_t *n)
{
	const struct scar_tensor *t = x->tensors[i], *sv = c->saved->tensors[i];
	uint64_t rows = scar_tensor_rows(t), per = rows ? scar_tensor_elems(t) / rows : 0;
	uint32_t S = x->shards;
	double d2 = 0;

	*n = 0;
	for (uint64_t r = 0; r < rows; r++) {
		uint32_t s = scar_shard_of_row(r, S);

		if (which ? !which[s] : lost[s])
			continue;
		d2 += scar_train_sqdist(t, t->data, sv->data, r * per, per);
		(*n)++;
	}
	return d2;
}

/* Rows of tensor i in the lost shards. */
static uint64_t lost_rows(const struct scar_state *x, size_t i, const uint8_t *lost)
{
	uint64_t rows = scar_tensor_rows(x->tensors[i]), n = 0;

	for (uint64_t r = 0; r < rows; r++)
		n += lost[scar_shard_of_row(r, x->shards)];
	return n;
}

/*
 * Scale the squared distances t2[i] over n[i] sample rows of each param
 * tensor to its nl[i] lost rows; a tensor with lost rows but no sample
 * (mf's one-row global mean in a lost shard) gets the mean per element of
 * the others. NAN when no tensor has a sample.
 */
static double scale_to_lost(const struct scar_state *st, const double *t2, const uint64_t *n,
			    const uint64_t *nl)
{
	double d2 = 0, e2 = 0, elems = 0, unsampled = 0;
	int any = 0;

	for (size_t i = 0; i < st->ntensors; i++)
		any |= is_param(st->tensors[i]) && nl[i];
	if (!any)
		return 0;	/* nothing lost, nothing to perturb */
	for (size_t i = 0; i < st->ntensors; i++) {
		const struct scar_tensor *t = st->tensors[i];
		double per = scar_tensor_rows(t) ? (double)scar_tensor_elems(t) / (double)scar_tensor_rows(t) : 0;

		if (!is_param(t) || !nl[i])
			continue;
		if (!n[i]) {
			unsampled += per * (double)nl[i];
			continue;
		}
		d2 += t2[i] * (double)nl[i] / (double)n[i];
		e2 += t2[i];
		elems += per * (double)n[i];
	}
	if (!(elems > 0))
		return NAN;
	return sqrt(d2 + unsampled * e2 / elems);
}

/* The partial-recovery estimate: survivors' drift scaled to the lost rows; NAN when none survive. */
static int estimate_restore(const struct scar_train_ctx *c, const uint8_t *lost, double *out)
{
	const struct scar_state *st = c->st;
	double *t2 = calloc(st->ntensors + 1, sizeof(*t2));
	uint64_t *n = calloc(st->ntensors + 1, sizeof(*n)), *nl = calloc(st->ntensors + 1, sizeof(*nl));

	*out = NAN;
	if (!t2 || !n || !nl) {
		free(t2), free(n), free(nl);
		return scar_error_set(c->err, SCAR_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < st->ntensors; i++)
		if (is_param(st->tensors[i]) && (nl[i] = lost_rows(st, i, lost)))
			t2[i] = drift2(c, st, i, lost, NULL, &n[i]);
	*out = scale_to_lost(st, t2, n, nl);
	free(t2), free(n), free(nl);
	return 0;
}

/*
 * The rebuild estimate: a dry run on as many surviving shards as were lost
 * (the first after each lost one, cyclically), on a copy; NAN when none
 * survive.
 */
static int estimate_rebuild(struct scar_train_ctx *c, const uint8_t *lost, double *out)
{
	const struct scar_state *st = c->st;
	uint32_t S = st->shards, nlost = 0, picked = 0;
	uint8_t *mock = calloc(S, 1), *both = calloc(S, 1);
	struct scar_state *x = NULL;
	uint64_t rows, *nm = NULL, *nl = NULL;
	double *t2 = NULL;
	int rc = 0;

	*out = NAN;
	if (!mock || !both) {
		rc = scar_error_set(c->err, SCAR_ENOMEM, "out of memory");
		goto out;
	}
	for (uint32_t s = 0; s < S; s++)
		nlost += lost[s];
	for (uint32_t s = 0; s < S && picked < nlost; s++)
		if (lost[s])
			for (uint32_t j = 1; j < S; j++) {
				uint32_t q = (s + j) % S;

				if (!lost[q] && !mock[q]) {
					mock[q] = 1;
					picked++;
					break;
				}
			}
	if (!nlost)
		*out = 0;	/* nothing lost, nothing to rebuild */
	if (!picked)
		goto out;
	if ((rc = scar_state_clone(&x, st, c->err)))
		goto out;
	/* Lost and mock rows start from the saved view, as the real rebuild's do. */
	for (uint32_t s = 0; s < S; s++)
		both[s] = lost[s] | mock[s];
	for (size_t i = 0; i < x->ntensors; i++) {
		struct scar_tensor *t = x->tensors[i];

		if (!is_param(t))
			continue;
		for (uint64_t r = 0; r < scar_tensor_rows(t); r++)
			if (both[scar_shard_of_row(r, S)])
				memcpy(scar_tensor_row(t, r), scar_tensor_row(c->saved->tensors[i], r),
				       scar_tensor_row_bytes(t));
	}
	if ((rc = c->def->rebuild(c->m, x, mock, S, &rows, c->err)))
		goto out;
	t2 = calloc(x->ntensors + 1, sizeof(*t2));
	nm = calloc(x->ntensors + 1, sizeof(*nm));
	nl = calloc(x->ntensors + 1, sizeof(*nl));
	if (!t2 || !nm || !nl) {
		rc = scar_error_set(c->err, SCAR_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < x->ntensors; i++) {
		const struct scar_tensor *t = x->tensors[i];
		uint64_t per;

		if (!is_param(t) || !(nl[i] = lost_rows(st, i, lost)))
			continue;
		per = scar_tensor_rows(t) ? scar_tensor_elems(t) / scar_tensor_rows(t) : 0;
		for (uint64_t r = 0; r < scar_tensor_rows(t); r++)
			if (mock[scar_shard_of_row(r, S)]) {
				t2[i] += scar_train_sqdist(t, t->data, st->tensors[i]->data, r * per, per);
				nm[i]++;
			}
	}
	*out = scale_to_lost(st, t2, nm, nl);
out:
	free(t2);
	free(nm);
	free(nl);
	scar_state_free(x);
	free(mock);
	free(both);
	return rc;
}

/* Predicted cost of a perturbation of size delta, or NAN without an estimate. */
static double predicted(double delta, double c, double dist)
{
	if (!isfinite(delta) || !(c > 0 && c < 1) || !(dist > 0))
		return NAN;
	return log1p(delta / dist) / -log(c);
}

int scar_train_auto_choose(struct scar_train_ctx *c, const uint8_t *lost, uint64_t full_cost,
			   enum scar_recovery *choice, json_t **info)
{
	static const enum scar_recovery order[] = {
		SCAR_RECOVER_REBUILD, SCAR_RECOVER_REWIND, SCAR_RECOVER_PARTIAL, SCAR_RECOVER_FULL,
	};
	struct scar_bound_fit fit;
	struct scar_error fe;
	double *k = NULL, *s = NULL, cc = NAN, dist = NAN, est[4], pred[4], best = INFINITY;
	size_t n = 0;
	json_t *steps, *cands = json_array(), *rec = json_object();
	int rc = 0, ok[4], pick = -1;

	*info = NULL;
	*choice = SCAR_RECOVER_PARTIAL;
	if (!cands || !rec) {
		rc = scar_error_set(c->err, SCAR_ENOMEM, "out of memory");
		goto out;
	}
	/* c and the distance to the optimum from the steps since the last failure. */
	steps = auto_steps(c, &rc);
	if (rc)
		goto out;
	n = json_array_size(steps);
	k = malloc((n + 1) * sizeof(*k));
	s = malloc((n + 1) * sizeof(*s));
	if (!k || !s) {
		rc = scar_error_set(c->err, SCAR_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t q = 0; q < n; q++) {
		k[q] = (double)c->clock - (double)(n - 1 - q);
		s[q] = json_number_value(json_array_get(steps, q));
	}
	scar_error_clear(&fe);
	if (n >= SCAR_BOUND_FIT_MIN && scar_bound_fit(k, s, n, NULL, &fit, &fe) == 0 &&
	    fit.c > 0 && fit.c < 1) {
		cc = fit.c;
		dist = exp(fit.intercept + fit.slope * (double)c->clock) / (1 - cc);
		json_object_set_new(rec, "c", json_real(cc));
		json_object_set_new(rec, "c_lo", json_real(fit.c_lo));
		json_object_set_new(rec, "c_hi", json_real(fit.c_hi));
		json_object_set_new(rec, "dist", json_real(dist));
		json_object_set_new(rec, "steps_fitted", json_integer((json_int_t)fit.n));
	} else {
		json_object_set_new(rec, "c", json_null());
	}
	for (int i = 0; i < 4; i++) {
		enum scar_recovery r = order[i];

		est[i] = pred[i] = NAN;
		ok[i] = r == SCAR_RECOVER_PARTIAL || r == SCAR_RECOVER_FULL ||
			(r == SCAR_RECOVER_REBUILD && c->def->rebuild && c->m) ||
			(r == SCAR_RECOVER_REWIND && c->def->rewinds);
		if (!ok[i])
			continue;
		if (r == SCAR_RECOVER_REBUILD) {
			if ((rc = estimate_rebuild(c, lost, &est[i])))
				goto out;
		} else if (r != SCAR_RECOVER_FULL) {
			if ((rc = estimate_restore(c, lost, &est[i])))
				goto out;
		}
		pred[i] = r == SCAR_RECOVER_FULL ? (double)full_cost : predicted(est[i], cc, dist);
	}
	/* By predicted cost; without predictions, by estimated perturbation, full last. */
	for (int i = 0; i < 4; i++) {
		double key = isfinite(cc) && isfinite(dist) ? pred[i] :
			order[i] == SCAR_RECOVER_FULL ? INFINITY : est[i];

		if (isnan(key))
			key = INFINITY;	/* no estimate: never ahead of one */
		if (ok[i] && (pick < 0 || key < best)) {
			pick = i;
			best = key;
		}
	}
	if (pick < 0 || (!isfinite(best) && order[pick] != SCAR_RECOVER_FULL)) {
		/* Nothing survived to estimate from: the rollback's cost is the one known. */
		for (int i = 0; i < 4; i++)
			if (order[i] == SCAR_RECOVER_FULL)
				pick = i;
	}
	*choice = order[pick];
	for (int i = 0; i < 4; i++) {
		json_t *e;

		if (!ok[i])
			continue;
		e = json_pack("{s:s, s:o, s:o}", "strategy", scar_recovery_name(order[i]),
			      "delta_est", order[i] == SCAR_RECOVER_FULL || !isfinite(est[i]) ?
				      json_null() : json_real(est[i]),
			      "predicted_cost", isfinite(pred[i]) ? json_real(pred[i]) : json_null());
		if (!e || json_array_append_new(cands, e)) {
			rc = scar_error_set(c->err, SCAR_ENOMEM, "out of memory");
			goto out;
		}
	}
	json_object_set(rec, "candidates", cands);
	json_object_set_new(rec, "choice", json_string(scar_recovery_name(*choice)));
	*info = rec;
	rec = NULL;
out:
	json_decref(cands);
	json_decref(rec);
	free(k);
	free(s);
	return rc;
}
