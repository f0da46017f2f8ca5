/* bound_fit.c - c and D from step norms and event streams, observed costs (see scar/bound.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scar/bound.h"

void scar_bound_fit_opts_init(struct scar_bound_fit_opts *o)
{
	o->skip = -1;
	o->floor = SCAR_BOUND_FIT_FLOOR;
}

const char *scar_bound_stop_name(enum scar_bound_stop s)
{
	switch (s) {
	case SCAR_BOUND_STOP_END:	return "end";
	case SCAR_BOUND_STOP_FLOOR:	return "noise-floor";
	case SCAR_BOUND_STOP_ZERO:	return "zero-step";
	case SCAR_BOUND_STOP_NONFINITE:	return "non-finite";
	case SCAR_BOUND_STOP_FAILURE:	return "failure";
	}
	return "unknown";
}

int scar_bound_fit(const double *k, const double *s, size_t n,
		   const struct scar_bound_fit_opts *o, struct scar_bound_fit *out,
		   struct scar_error *err)
{
	struct scar_bound_fit_opts def;
	size_t m = 0, skip, first;
	double smax = 0, kbar = 0, ybar = 0, sxx = 0, sxy = 0, syy = 0, rss = 0;

	if (!o) {
		scar_bound_fit_opts_init(&def);
		o = &def;
	}
	memset(out, 0, sizeof(*out));
	out->s0 = out->d_upper = out->d_upper_hi = NAN;
	out->c = out->c_lo = out->c_hi = NAN;
	if (!(o->floor >= 0 && o->floor < 1))
		return scar_error_set(err, SCAR_ERANGE, "noise floor %.17g is not in [0, 1)", o->floor);
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(k[i]) || (i > 0 && !(k[i] > k[i - 1])))
			return scar_error_set(err, SCAR_EINVAL,
					      "iterations are not strictly increasing at point %zu", i + 1);
		if (k[i] == 1 && isnan(out->s0) && s[i] > 0 && isfinite(s[i]))
			out->s0 = s[i];
	}
	out->stop = SCAR_BOUND_STOP_END;
	for (m = 0; m < n; m++) {
		if (!isfinite(s[m])) {
			out->stop = SCAR_BOUND_STOP_NONFINITE;
			break;
		}
		if (s[m] <= 0) {
			out->stop = SCAR_BOUND_STOP_ZERO;
			break;
		}
		if (s[m] > smax)
			smax = s[m];
		if (s[m] <= o->floor * smax) {
			out->stop = SCAR_BOUND_STOP_FLOOR;
			break;
		}
	}
	if (o->skip < 0)
		skip = m >= 4 ? (m / 2 < m - SCAR_BOUND_FIT_MIN ? m / 2 : m - SCAR_BOUND_FIT_MIN) : 0;
	else
		skip = (size_t)o->skip < m ? (size_t)o->skip : m;
	first = skip;
	out->skipped = skip;
	out->n = m - first;
	if (out->n > 0) {
		out->k_first = k[first];
		out->k_last = k[m - 1];
	}
	if (out->n < SCAR_BOUND_FIT_MIN)
		return scar_error_set(err, SCAR_ERANGE,
				      "too few step norms to fit c: %zu in the window, need %d",
				      out->n, SCAR_BOUND_FIT_MIN);
	/* centred sums: k can be large and log s nearly constant */
	for (size_t i = first; i < m; i++) {
		kbar += k[i];
		ybar += log(s[i]);
	}
	kbar /= (double)out->n;
	ybar /= (double)out->n;
	for (size_t i = first; i < m; i++) {
		double dk = k[i] - kbar, dy = log(s[i]) - ybar;

		sxx += dk * dk;
		sxy += dk * dy;
		syy += dy * dy;
	}
	out->slope = sxy / sxx;
	out->intercept = ybar - out->slope * kbar;
	for (size_t i = first; i < m; i++) {
		double r = log(s[i]) - out->intercept - out->slope * k[i];

		rss += r * r;
	}
	out->r2 = syy > 0 ? 1 - rss / syy : 1;
	if (out->r2 < 0)
		out->r2 = 0;
	out->se_slope = sqrt(rss / (double)(out->n - 2) / sxx);
	out->tq = scar_bound_t_quantile(0.975, (unsigned)(out->n - 2 < 4000000000u ? out->n - 2 : 4000000000u));
	out->c = exp(out->slope);
	out->c_lo = exp(out->slope - out->tq * out->se_slope);
	out->c_hi = exp(out->slope + out->tq * out->se_slope);
	if (!isnan(out->s0) && out->c < 1)
		out->d_upper = out->s0 / (1 - out->c);
	if (!isnan(out->s0) && out->c_hi < 1)
		out->d_upper_hi = out->s0 / (1 - out->c_hi);
	return 0;
}

/* ---- event streams ---- */

static const char *rec_type(const json_t *r)
{
	const char *t = json_string_value(json_object_get(r, "type"));

	return t ? t : "";
}

static double num_or_nan(const json_t *r, const char *key)
{
	const json_t *v = json_object_get(r, key);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

struct dvec {
	double *v;
	size_t n, cap;
};

static int dvec_push(struct dvec *d, double x)
{
	if (d->n == d->cap) {
		size_t ncap = d->cap ? 2 * d->cap : 256;
		double *nv = realloc(d->v, ncap * sizeof(*nv));

		if (!nv)
			return -1;
		d->v = nv;
		d->cap = ncap;
	}
	d->v[d->n++] = x;
	return 0;
}

/* iteration records of ev up to (not including) the first failure/recovery when stop_at_failure */
struct curve {
	struct dvec iter, obj, step_k, step, dist_k, dist;
	int stopped_at_failure;
	size_t failures, recoveries;
};

static void curve_free(struct curve *c)
{
	free(c->iter.v);
	free(c->obj.v);
	free(c->step_k.v);
	free(c->step.v);
	free(c->dist_k.v);
	free(c->dist.v);
}

static int read_curve(const struct scar_events *ev, const char *name, int stop_at_failure,
		      struct curve *cv, struct scar_error *err)
{
	double last = -INFINITY;

	memset(cv, 0, sizeof(*cv));
	for (size_t i = 1; i < ev->n; i++) {
		const json_t *r = ev->records[i];
		const char *t = rec_type(r);
		double it, v;

		if (strcmp(t, "failure") == 0 || strcmp(t, "recovery") == 0) {
			if (strcmp(t, "failure") == 0)
				cv->failures++;
			else
				cv->recoveries++;
			if (stop_at_failure) {
				cv->stopped_at_failure = 1;
				break;
			}
			continue;
		}
		if (strcmp(t, "iteration") != 0)
			continue;
		it = num_or_nan(r, "iter");
		/* clocks are whole: a fraction or a huge value is no clock of a run */
		if (!(it >= 0 && it <= 9007199254740992.0 && it == floor(it)))
			return scar_error_set_at(err, SCAR_EFORMAT, name, -1, (int64_t)i + 1,
						 "iteration record has no whole \"iter\" in 0..2^53");
		if (it < last)
			return scar_error_set_at(err, SCAR_EFORMAT, name, -1, (int64_t)i + 1,
						 "clock goes back from %.17g to %.17g", last, it);
		if (it == last)
			continue;	/* a repeated clock: the first record stands */
		last = it;
		v = num_or_nan(r, "objective");
		if (dvec_push(&cv->iter, it) || dvec_push(&cv->obj, v))
			goto nomem;
		/* present but not a step norm is refused, not read as absent */
		if (json_object_get(r, "step_norm") &&
		    !((v = num_or_nan(r, "step_norm")) >= 0))
			return scar_error_set_at(err, SCAR_EFORMAT, name, -1, (int64_t)i + 1,
						 "iteration record's \"step_norm\" is not a number >= 0");
		v = num_or_nan(r, "step_norm");
		if (it > 0 && !isnan(v) && (dvec_push(&cv->step_k, it) || dvec_push(&cv->step, v)))
			goto nomem;
		v = num_or_nan(r, "dist_opt");
		if (!isnan(v) && (dvec_push(&cv->dist_k, it) || dvec_push(&cv->dist, v)))
			goto nomem;
	}
	return 0;
nomem:
	return scar_error_set(err, SCAR_ENOMEM, "out of memory");
}

static int fit_from_curve(const struct scar_events *ev, const char *name, const struct curve *cv,
			  const struct scar_bound_fit_opts *o, struct scar_bound_stream *out,
			  struct scar_error *err)
{
	const json_t *hdr = ev->records[0];
	struct scar_error ferr;
	int rc;

	const json_t *hc = json_object_get(hdr, "contraction");
	const json_t *hb = json_object_get(hdr, "objective_higher_better");

	memset(out, 0, sizeof(*out));
	/* present but of the wrong type is refused, not read as absent */
	if (hc && !json_is_number(hc) && !json_is_null(hc))
		return scar_error_set_at(err, SCAR_EFORMAT, name, -1, 1,
					 "header \"contraction\" is not a number");
	if (hb && !json_is_boolean(hb))
		return scar_error_set_at(err, SCAR_EFORMAT, name, -1, 1,
					 "header \"objective_higher_better\" is not true or false");
	out->header_contraction = num_or_nan(hdr, "contraction");
	out->higher_better = json_is_true(hb);
	out->dist_opt0 = cv->dist_k.n && cv->dist_k.v[0] == 0 ? cv->dist.v[0] : NAN;
	out->iterations = cv->iter.n;
	scar_error_clear(&ferr);
	rc = scar_bound_fit(cv->step_k.v, cv->step.v, cv->step.n, o, &out->fit, &ferr);
	if (rc && rc != SCAR_ERANGE)
		return scar_error_set_at(err, rc, name, -1, -1, "%s", ferr.msg);
	out->fit_ok = rc == 0;
	if (cv->stopped_at_failure && out->fit.stop == SCAR_BOUND_STOP_END)
		out->fit.stop = SCAR_BOUND_STOP_FAILURE;
	if (!isnan(out->header_contraction)) {
		out->c = out->header_contraction;
		out->c_source = "header";
	} else if (out->fit_ok) {
		out->c = out->fit.c;
		out->c_source = "fit";
	} else if (!cv->step.n) {
		return scar_error_set_at(err, SCAR_EFORMAT, name, -1, -1,
					 "cannot fit c: no iteration record after the first has \"step_norm\": write ||x(k) - x(k-1)||, the L2 norm of the change of all parameters over iteration k, into the record of each iteration k >= 1 (scar-events(7), THE MINIMAL STREAM)");
	} else {
		return scar_error_set_at(err, SCAR_ERANGE, name, -1, -1, "cannot fit c: %s", ferr.msg);
	}
	if (!isnan(out->header_contraction) && out->fit_ok && out->fit.c < 1 &&
	    out->header_contraction < out->fit.c_lo)
		out->c_disagrees = 1;
	if (!(out->c > 0 && out->c < 1))
		return scar_error_set_at(err, SCAR_ERANGE, name, -1, -1,
					 "%s contraction c = %.17g is not in (0, 1): the run does not contract",
					 out->c_source, out->c);
	if (out->dist_opt0 > 0) {
		out->D = out->dist_opt0;
		out->d_source = "dist_opt";
	} else if (out->fit.s0 > 0) {
		out->D = out->fit.s0 / (1 - out->c);
		out->d_source = "step-bound";
	} else {
		return scar_error_set_at(err, SCAR_ERANGE, name, -1, -1,
					 "cannot bound D: no dist_opt at iteration 0 and no step_norm at iteration 1");
	}
	return 0;
}

int scar_bound_fit_events(const struct scar_events *ev, const char *name,
			  const struct scar_bound_fit_opts *o, struct scar_bound_stream *out,
			  struct scar_error *err)
{
	struct curve cv;
	int rc = read_curve(ev, name, 1, &cv, err);

	if (rc == 0)
		rc = fit_from_curve(ev, name, &cv, o, out, err);
	curve_free(&cv);
	return rc;
}

/*
 * The first clock of (iter[i], obj[i]) at or after `from` (strictly after
 * when !inclusive) at which the trailing mean of `window` values reaches
 * target, with obj at clock `from` read as from_obj unless that is NaN; -1
 * when it never does.
 */
static double reach_from(const double *iter, const double *obj, size_t n, double target,
			 int higher_better, size_t window, double from, int inclusive,
			 double from_obj)
{
	if (window < 1)
		window = 1;
	for (size_t i = 0; i < n; i++) {
		/* summed afresh each time: a running sum's rounding could decide "reached" */
		size_t lo = i + 1 >= window ? i + 1 - window : 0;
		double sum = 0, m;

		if (iter[i] < from || (iter[i] == from && !inclusive))
			continue;
		for (size_t j = lo; j <= i; j++)
			sum += iter[j] == from && !isnan(from_obj) ? from_obj : obj[j];
		m = sum / (double)(i + 1 - lo);
		if (higher_better ? m >= target : m <= target)
			return iter[i];
	}
	return -1;
}

double scar_bound_reach(const double *iter, const double *obj, size_t n, double target,
			int higher_better, size_t window, double after)
{
	return reach_from(iter, obj, n, target, higher_better, window, after, 0, NAN);
}

/* The trailing mean at record i, the value at clock from read as from_obj (when not NaN). */
static double smoothed_at(const double *iter, const double *obj, size_t i, size_t window,
			  double from, double from_obj)
{
	size_t lo = i + 1 >= window ? i + 1 - window : 0;
	double sum = 0;

	for (size_t j = lo; j <= i; j++)
		sum += iter[j] == from && !isnan(from_obj) ? from_obj : obj[j];
	return sum / (double)(i + 1 - lo);
}

/*
 * Where the curve crossed target at clock k, as k - 1 plus the fraction of
 * the step from k - 1 to k, the way scar-train interpolates (lib/train_loop.c
 * crossing()): whole and fraction apart, so two crossings of the same
 * values differ by an exact integer. No interpolation at or before from,
 * at clock 0, or without a record at k - 1.
 */
static void crossing(const double *iter, const double *obj, size_t n, double k, size_t window,
		     double from, double from_obj, double target, double *whole, double *frac)
{
	size_t i = 0;
	double prev, cur;

	*whole = k;
	*frac = 0;
	if (k <= 0 || k <= from)
		return;
	while (i < n && iter[i] != k)
		i++;
	if (i == 0 || i == n || iter[i - 1] != k - 1)
		return;
	prev = smoothed_at(iter, obj, i - 1, window, from, from_obj);
	cur = smoothed_at(iter, obj, i, window, from, from_obj);
	if (isnan(prev) || prev == cur)
		return;
	*whole = k - 1;
	*frac = fmin(1.0, fmax(0.0, (prev - target) / (prev - cur)));
}

static double final_smoothed(const double *obj, size_t n, size_t window)
{
	double sum = 0;
	size_t w = window < n ? window : n;

	for (size_t i = n - w; i < n; i++)
		sum += obj[i];
	return sum / (double)w;
}

int scar_bound_observed_cost_from(const double *ref_iter, const double *ref_obj, size_t nref,
				  const double *pert_iter, const double *pert_obj, size_t npert,
				  double target, int higher_better, size_t window, double ref_from,
				  double pert_from, double from_obj, struct scar_bound_cost *out,
				  struct scar_error *err)
{
	int inclusive = !isnan(from_obj);

	memset(out, 0, sizeof(*out));
	if (window < 1)
		window = 1;
	if (nref == 0 || npert == 0)
		return scar_error_set(err, SCAR_ERANGE, "%s curve has no objective values",
				      nref == 0 ? "the reference" : "the perturbed");
	if (isnan(target))
		target = final_smoothed(ref_obj, nref, window);
	if (!isfinite(target))
		return scar_error_set(err, SCAR_ERANGE, "target objective %.17g is not finite", target);
	out->target = target;
	out->reference_iter = reach_from(ref_iter, ref_obj, nref, target, higher_better, window,
					 ref_from, inclusive, NAN);
	if (out->reference_iter < 0)
		return scar_error_set(err, SCAR_ERANGE,
				      "the reference never reaches the target objective %.17g%s", target,
				      ref_from >= 0 ? " after the iteration the perturbed run went on from" : "");
	out->perturbed_iter = reach_from(pert_iter, pert_obj, npert, target, higher_better, window,
					 pert_from, inclusive, from_obj);
	if (out->perturbed_iter < 0) {
		out->censored = 1;
		/* it had not reached the target by its last clock, so the cost is at least this */
		out->perturbed_iter = pert_iter[npert - 1] + 1;
	}
	out->cost = out->perturbed_iter - out->reference_iter;
	out->cost_interp = out->cost;
	if (!out->censored) {
		double wr, fr, wp, fp;

		crossing(ref_iter, ref_obj, nref, out->reference_iter, window, ref_from, NAN, target,
			 &wr, &fr);
		crossing(pert_iter, pert_obj, npert, out->perturbed_iter, window, pert_from, from_obj,
			 target, &wp, &fp);
		out->cost_interp = (wp - wr) + (fp - fr);
	}
	return 0;
}

int scar_bound_observed_cost(const double *ref_iter, const double *ref_obj, size_t nref,
			     const double *pert_iter, const double *pert_obj, size_t npert,
			     double target, int higher_better, size_t window, double after,
			     struct scar_bound_cost *out, struct scar_error *err)
{
	return scar_bound_observed_cost_from(ref_iter, ref_obj, nref, pert_iter, pert_obj, npert,
					     target, higher_better, window, -1, after, NAN, out,
					     err);
}

void scar_bound_check_opts_init(struct scar_bound_check_opts *o)
{
	memset(o, 0, sizeof(*o));
	scar_bound_fit_opts_init(&o->fit);
	o->target = NAN;
	o->window = 1;
}

void scar_bound_check_release(struct scar_bound_check *out)
{
	if (!out)
		return;
	free(out->pert);
	out->pert = NULL;
	out->npert = 0;
	free(out->autos);
	out->autos = NULL;
	out->nauto = 0;
}

/* A number or null of an auto candidate: the value, NaN for null; -1 when neither. */
static int num_or_null(const json_t *o, const char *key, double *v)
{
	const json_t *x = json_object_get(o, key);

	*v = NAN;
	if (!x || json_is_null(x))
		return 0;
	if (!json_is_number(x) || !isfinite(json_number_value(x)))
		return -1;
	*v = json_number_value(x);
	return 0;
}

/*
 * Recovery record r (line) of an auto run: its candidates into a, each
 * estimate's bound under c and D. SCAR_EFORMAT naming the line when the
 * "auto" object is not as scar-events(7) says.
 */
static int read_auto(const json_t *r, const char *name, size_t line, double c, double D,
		     struct scar_bound_auto *a, struct scar_error *err)
{
	static const char *const known[] = { "partial", "rebuild", "rewind", "full", NULL };
	const json_t *au = json_object_get(r, "auto"), *cands = json_object_get(au, "candidates");
	const json_t *choice = json_object_get(au, "choice"), *e;
	size_t i;

	memset(a, 0, sizeof(*a));
	a->iter = num_or_nan(r, "iter");
	if (!json_is_array(cands) || !json_array_size(cands) ||
	    json_array_size(cands) > SCAR_BOUND_AUTO_MAX || !json_is_string(choice) ||
	    json_string_length(choice) >= sizeof(a->choice))
		goto bad;
	strcpy(a->choice, json_string_value(choice));
	json_array_foreach(cands, i, e) {
		const json_t *s = json_object_get(e, "strategy");
		int ok = 0;

		if (!json_is_string(s))
			goto bad;
		for (size_t k = 0; known[k]; k++)
			ok |= strcmp(json_string_value(s), known[k]) == 0;
		for (size_t k = 0; k < i; k++)
			ok &= strcmp(json_string_value(s), a->cand[k].strategy) != 0;
		if (!ok || num_or_null(e, "delta_est", &a->cand[i].delta_est) ||
		    num_or_null(e, "predicted_cost", &a->cand[i].predicted) ||
		    a->cand[i].delta_est < 0 || a->cand[i].predicted < 0)
			goto bad;
		strcpy(a->cand[i].strategy, json_string_value(s));
		a->cand[i].bound = NAN;
		if (isfinite(a->cand[i].delta_est) && c > 0 && c < 1 && D > 0 && a->iter >= 0) {
			struct scar_bound_pert p = { .norm = a->cand[i].delta_est, .iter = a->iter };
			struct scar_error e2;

			scar_error_clear(&e2);
			if (scar_bound_iota(c, D, &p, 1, &a->cand[i].bound, &e2))
				a->cand[i].bound = NAN;
		}
		a->n++;
	}
	/* The choice is one of the candidates (so a known name, safe to print). */
	for (i = 0; i < a->n; i++)
		if (!strcmp(a->choice, a->cand[i].strategy))
			return 0;
bad:
	return scar_error_set_at(err, SCAR_EFORMAT, name, -1, (int64_t)line,
				 "recovery record's \"auto\" is not a choice among 1 to %d distinct candidates of strategy, delta_est and predicted_cost",
				 SCAR_BOUND_AUTO_MAX);
}

/* The theorem and the envelope against the perturbed run's dist_opt (see scar/bound.h). */
static int envelope_check(struct scar_bound_check *out, const struct curve *pc, double eps,
			  struct scar_error *err)
{
	const double *k = pc->dist_k.v, *d = pc->dist.v;
	size_t n = pc->dist.n, np;
	double logc = log(out->ref.c);
	int rc;

	/* perturbations in clock order, so those before clock k are a prefix */
	struct scar_bound_pert *sorted = malloc((out->npert + 1) * sizeof(*sorted));

	if (!sorted)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	memcpy(sorted, out->pert, out->npert * sizeof(*sorted));
	for (size_t i = 1; i < out->npert; i++)
		for (size_t j = i; j > 0 && sorted[j - 1].iter > sorted[j].iter; j--) {
			struct scar_bound_pert t = sorted[j];

			sorted[j] = sorted[j - 1];
			sorted[j - 1] = t;
		}
	out->envelope_max = -INFINITY;
	np = 0;
	for (size_t i = 0; i < n; i++) {
		struct scar_bound_eval e;
		double ratio;

		while (np < out->npert && sorted[np].iter < k[i])
			np++;
		rc = scar_bound_evaluate(out->ref.c, out->ref.D, sorted, np, 0, &e, err);
		if (rc) {
			free(sorted);
			return rc;
		}
		ratio = d[i] / exp(k[i] * logc + e.log_envelope);
		if (ratio > out->envelope_max) {
			out->envelope_max = ratio;
			out->envelope_iter = k[i];
		}
	}
	free(sorted);
	if (!(eps > 0))
		return 0;
	out->settle_eps = -1;
	for (size_t i = n; i > 0 && d[i - 1] <= eps; i--)
		out->settle_eps = k[i - 1];
	out->theorem = -1;
	for (size_t i = 0; i < n; i++) {
		if (k[i] < out->bound.k_max)
			continue;
		if (d[i] > eps) {
			out->theorem = 0;
			break;
		}
		out->theorem = 1;
	}
	return 0;
}

/*
 * Where a perturbed run went on from after recovery record r (line):
 * its clock "iter", the whole state iteration "resume_state_iter" no later
 * than the failed one (absent: the failure's own), and the recovered
 * state's "objective" (absent: NaN); kept in *last, *state, *obj when it is
 * the latest so far. The one reading of these fields, for check and cost.
 */
static int recovery_point(const json_t *r, const char *name, size_t line, double *last,
			  double *state, double *obj, struct scar_error *err)
{
	const json_t *rs = json_object_get(r, "resume_state_iter");
	const json_t *fs = json_object_get(r, "failed_state_iter");
	const json_t *ob = json_object_get(r, "objective");
	double it = num_or_nan(r, "iter");

	if (!(it >= 0 && it <= 9007199254740992.0 && it == floor(it)))
		return scar_error_set_at(err, SCAR_EFORMAT, name, -1, (int64_t)line,
					 "recovery record needs a whole \"iter\" in 0..2^53");
	if (rs && (!json_is_integer(rs) || json_integer_value(rs) < 0 ||
		   (json_is_integer(fs) && json_integer_value(rs) > json_integer_value(fs)) ||
		   json_integer_value(rs) > (json_int_t)it))
		return scar_error_set_at(err, SCAR_EFORMAT, name, -1, (int64_t)line,
					 "recovery record needs a whole \"resume_state_iter\" in 0..\"failed_state_iter\"");
	if (ob && !(json_is_number(ob) && isfinite(json_number_value(ob))))
		return scar_error_set_at(err, SCAR_EFORMAT, name, -1, (int64_t)line,
					 "recovery record's \"objective\" is not a finite number");
	if (it >= *last) {
		*last = it;
		*state = rs ? (double)json_integer_value(rs) : it;
		*obj = ob ? json_number_value(ob) : NAN;
	}
	return 0;
}

int scar_bound_check_events(const struct scar_events *ref, const char *ref_name,
			    const struct scar_events *pert, const char *pert_name,
			    const struct scar_bound_check_opts *o, struct scar_bound_check *out,
			    struct scar_error *err)
{
	struct curve rc_curve, pc_curve;
	size_t np = 0, failures = 0, recoveries = 0;
	double last_pert = -1, last_rec = -1, rec_state = NAN, rec_obj = NAN;
	int rc;

	memset(out, 0, sizeof(*out));
	out->settle_eps = out->envelope_max = out->envelope_iter = NAN;
	out->theorem = -1;
	rc = read_curve(ref, ref_name, 0, &rc_curve, err);
	if (rc) {
		curve_free(&rc_curve);
		return rc;
	}
	rc = read_curve(pert, pert_name, 0, &pc_curve, err);
	if (rc)
		goto out;
	{
		/* c and D come from the reference up to its first failure (it should have none) */
		struct curve head;

		rc = read_curve(ref, ref_name, 1, &head, err);
		if (rc == 0)
			rc = fit_from_curve(ref, ref_name, &head, &o->fit, &out->ref, err);
		curve_free(&head);
		if (rc)
			goto out;
	}
	for (size_t i = 1; i < pert->n; i++) {
		const char *t = rec_type(pert->records[i]);

		if (strcmp(t, "failure") == 0)
			failures++;
		else if (strcmp(t, "recovery") == 0)
			recoveries++;
	}
	if (failures > recoveries) {
		rc = scar_error_set_at(err, SCAR_EFORMAT, pert_name, -1, -1,
				       "%zu failures but only %zu recovery records", failures, recoveries);
		goto out;
	}
	out->pert = calloc(recoveries + o->nextra + 1, sizeof(*out->pert));
	if (!out->pert) {
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 1; i < pert->n; i++) {
		const json_t *r = pert->records[i];
		double it, d;

		if (strcmp(rec_type(r), "recovery") != 0)
			continue;
		it = num_or_nan(r, "iter");
		d = num_or_nan(r, "delta_norm");
		/* A real failure's recovery (scar-mpi(7)): the lost rows' change is unknown. */
		if (json_is_null(json_object_get(r, "delta_norm")) &&
		    json_is_true(json_object_get(r, "real"))) {
			rc = scar_error_set_at(err, SCAR_EFORMAT, pert_name, -1, (int64_t)i + 1,
					       "recovery of a real failure: its delta_norm is unknown (null), so it gives no point to fit");
			goto out;
		}
		if (!(it >= 0) || !(d >= 0) || !isfinite(it) || !isfinite(d)) {
			rc = scar_error_set_at(err, SCAR_EFORMAT, pert_name, -1, (int64_t)i + 1,
					       "recovery record needs numeric \"iter\" and \"delta_norm\"");
			goto out;
		}
		out->pert[np].norm = d;
		out->pert[np].iter = it;
		np++;
		if ((rc = recovery_point(r, pert_name, i + 1, &last_rec, &rec_state, &rec_obj, err)))
			goto out;
	}
	for (size_t i = 0; i < o->nextra; i++)
		out->pert[np++] = o->extra[i];
	out->npert = np;
	for (size_t i = 0; i < np; i++)
		if (out->pert[i].iter > last_pert)
			last_pert = out->pert[i].iter;
	rc = scar_bound_evaluate(out->ref.c, out->ref.D, out->pert, np, o->eps, &out->bound, err);
	if (rc)
		goto out;
	/* The auto recoveries' candidates, each bounded as if it had been taken. */
	out->autos = calloc(recoveries + 1, sizeof(*out->autos));
	if (!out->autos) {
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 1; i < pert->n; i++)
		if (strcmp(rec_type(pert->records[i]), "recovery") == 0 &&
		    json_object_get(pert->records[i], "auto") &&
		    (rc = read_auto(pert->records[i], pert_name, i + 1, out->ref.c, out->ref.D,
				    &out->autos[out->nauto++], err)))
			goto out;
	if (isnan(o->target)) {
		/* the default target is the reference's final values: name a bad one */
		int dist = o->metric == SCAR_BOUND_METRIC_DIST;
		const struct dvec *k = dist ? &rc_curve.dist_k : &rc_curve.iter;
		const struct dvec *v = dist ? &rc_curve.dist : &rc_curve.obj;
		size_t w = o->window < 1 ? 1 : o->window;

		for (size_t i = v->n > w ? v->n - w : 0; i < v->n; i++)
			if (!isfinite(v->v[i])) {
				rc = scar_error_set_at(err, SCAR_EFORMAT, ref_name, -1, -1,
						       "%s at iteration %.0f, which the default target is taken from, "
						       "is not a finite number (give --target)",
						       dist ? "dist_opt" : "objective", k->v[i]);
				goto out;
			}
	}
	if (o->metric == SCAR_BOUND_METRIC_DIST) {
		if (rc_curve.dist.n == 0 || pc_curve.dist.n == 0) {
			rc = scar_error_set_at(err, SCAR_ENOTFOUND,
					       rc_curve.dist.n ? pert_name : ref_name, -1, -1,
					       "no dist_opt in the iteration records");
			goto out;
		}
		rc = scar_bound_observed_cost(rc_curve.dist_k.v, rc_curve.dist.v, rc_curve.dist.n,
					      pc_curve.dist_k.v, pc_curve.dist.v, pc_curve.dist.n,
					      o->target, 0, o->window, last_pert, &out->cost, err);
	} else {
		/*
		 * As scar-train --cost measures it: from the last recovery on, the
		 * reference from the state iteration the run went on from. Extra
		 * perturbations (--perturbation) only move where the perturbed run
		 * is searched from, as before.
		 */
		if (last_rec >= 0 && last_rec == last_pert && rec_state >= 0)
			rc = scar_bound_observed_cost_from(rc_curve.iter.v, rc_curve.obj.v,
							   rc_curve.iter.n, pc_curve.iter.v,
							   pc_curve.obj.v, pc_curve.iter.n, o->target,
							   out->ref.higher_better, o->window,
							   rec_state, last_pert, rec_obj, &out->cost,
							   err);
		else
			rc = scar_bound_observed_cost(rc_curve.iter.v, rc_curve.obj.v,
						      rc_curve.iter.n, pc_curve.iter.v,
						      pc_curve.obj.v, pc_curve.iter.n, o->target,
						      out->ref.higher_better, o->window, last_pert,
						      &out->cost, err);
	}
	if (rc)
		goto out;
	/*
	 * Arrival clocks are whole numbers: envelopes that cross a level at
	 * reals a and a + iota arrive at ceil(a) and ceil(a + iota), at most
	 * ceil(iota) apart. So only a cost above ceil(iota) exceeds the bound.
	 */
	out->exceeded = out->cost.cost > ceil(out->bound.iota - 1e-12);
	out->undecided = out->cost.censored && !out->exceeded;
	if (pc_curve.dist.n > 0) {
		rc = envelope_check(out, &pc_curve, o->eps, err);
		if (rc)
			goto out;
	}
out:
	curve_free(&rc_curve);
	curve_free(&pc_curve);
	if (rc)
		scar_bound_check_release(out);
	return rc;
}

int scar_bound_cost_events(const struct scar_events *ref, const char *ref_name,
			   const struct scar_events *pert, const char *pert_name, double target,
			   size_t window, struct scar_bound_cost *out, struct scar_error *err)
{
	const json_t *hb = json_object_get(ref->records[0], "objective_higher_better");
	const json_t *pb = json_object_get(pert->records[0], "objective_higher_better");
	struct curve rc_curve, pc_curve;
	double last_rec = -1, rec_state = NAN, rec_obj = NAN;
	int rc;

	memset(out, 0, sizeof(*out));
	/* Which way is better is the one thing a stream cannot leave out. */
	if (!json_is_boolean(hb))
		return scar_error_set_at(err, SCAR_EFORMAT, ref_name, -1, 1,
					 "header needs \"objective_higher_better\": true or false");
	if (!json_is_boolean(pb))
		return scar_error_set_at(err, SCAR_EFORMAT, pert_name, -1, 1,
					 "header needs \"objective_higher_better\": true or false");
	if (!json_equal(hb, pb))
		return scar_error_set_at(err, SCAR_EMISMATCH, pert_name, -1, 1,
					 "header's \"objective_higher_better\" is not the reference's");
	{
		const json_t *ro = json_object_get(ref->records[0], "objective");
		const json_t *po = json_object_get(pert->records[0], "objective");

		if (json_is_string(ro) && json_is_string(po) && !json_equal(ro, po))
			return scar_error_set_at(err, SCAR_EMISMATCH, pert_name, -1, 1,
						 "header's objective '%s' is not the reference's '%s'",
						 json_string_value(po), json_string_value(ro));
	}
	rc = read_curve(ref, ref_name, 0, &rc_curve, err);
	if (rc) {
		curve_free(&rc_curve);
		return rc;
	}
	if ((rc = read_curve(pert, pert_name, 0, &pc_curve, err)))
		goto out;
	for (int side = 0; side < 2; side++) {
		const struct curve *cv = side ? &pc_curve : &rc_curve;
		const char *nm = side ? pert_name : ref_name;

		if (!cv->iter.n) {
			rc = scar_error_set_at(err, SCAR_EFORMAT, nm, -1, -1,
					       "no iteration record with an objective");
			goto out;
		}
		for (size_t i = 0; i < cv->obj.n; i++)
			if (!isfinite(cv->obj.v[i])) {
				rc = scar_error_set_at(err, SCAR_EFORMAT, nm, -1, -1,
						       "the objective at iteration %.0f is not a finite number",
						       cv->iter.v[i]);
				goto out;
			}
	}
	for (size_t i = 1; i < pert->n; i++) {
		double before = last_rec;

		if (strcmp(rec_type(pert->records[i]), "recovery") != 0)
			continue;
		if ((rc = recovery_point(pert->records[i], pert_name, i + 1, &last_rec, &rec_state,
					 &rec_obj, err)))
			goto out;
		/* in clock order, at a clock the run reached */
		if (last_rec == before || last_rec > pc_curve.iter.v[pc_curve.iter.n - 1]) {
			rc = scar_error_set_at(err, SCAR_EFORMAT, pert_name, -1, (int64_t)i + 1,
					       "recovery record at clock %.17g is out of order or after the run's last iteration %.0f",
					       num_or_nan(pert->records[i], "iter"),
					       pc_curve.iter.v[pc_curve.iter.n - 1]);
			goto out;
		}
	}
	/* As scar-train --cost: from the last recovery on, the reference from where the run went on. */
	rc = scar_bound_observed_cost_from(rc_curve.iter.v, rc_curve.obj.v, rc_curve.iter.n,
					   pc_curve.iter.v, pc_curve.obj.v, pc_curve.iter.n, target,
					   json_is_true(hb), window, last_rec >= 0 ? rec_state : -1,
					   last_rec, rec_obj, out, err);
out:
	curve_free(&rc_curve);
	curve_free(&pc_curve);
	return rc;
}
