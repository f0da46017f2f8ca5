/* bound.c - evaluating the SCAR bound and planning checkpoints (see scar/bound.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scar/bound.h"

/* log(exp(a) + exp(b)) without overflow; -inf stands for log 0. */
static double logaddexp(double a, double b)
{
	double hi = a > b ? a : b, lo = a > b ? b : a;

	if (hi == -INFINITY)
		return -INFINITY;
	return hi + log1p(exp(lo - hi));
}

/* log(1 + exp(x)) */
static double log1pexp(double x)
{
	return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
}

static int check_c(double c, struct scar_error *err)
{
	if (!(c > 0 && c < 1))
		return scar_error_set(err, SCAR_ERANGE,
				      "contraction c = %.17g is not in (0, 1)", c);
	return 0;
}

static int check_args(double c, double D, const struct scar_bound_pert *p, size_t n,
		      struct scar_error *err)
{
	int rc = check_c(c, err);

	if (rc)
		return rc;
	if (!(D > 0 && isfinite(D)))
		return scar_error_set(err, SCAR_ERANGE, "distance D = %.17g is not positive", D);
	for (size_t i = 0; i < n; i++) {
		if (!(p[i].norm >= 0 && isfinite(p[i].norm)))
			return scar_error_set(err, SCAR_ERANGE,
					      "perturbation %zu: norm %.17g is not a finite number >= 0",
					      i + 1, p[i].norm);
		if (!(p[i].iter >= 0 && isfinite(p[i].iter)))
			return scar_error_set(err, SCAR_ERANGE,
					      "perturbation %zu: iteration %.17g is not >= 0",
					      i + 1, p[i].iter);
	}
	return 0;
}

int scar_bound_evaluate(double c, double D, const struct scar_bound_pert *p, size_t n,
			double eps, struct scar_bound_eval *out, struct scar_error *err)
{
	double logc, logD, lrel = -INFINITY;
	int rc = check_args(c, D, p, n, err);

	if (rc)
		return rc;
	if (!(eps >= 0 && isfinite(eps)))
		return scar_error_set(err, SCAR_ERANGE, "eps = %.17g is not positive", eps);
	logc = log(c);
	logD = log(D);
	/* log(sum_t ||delta_t|| / (c^t D)): each term is exp(log d - t log c - log D) */
	for (size_t i = 0; i < n; i++)
		if (p[i].norm > 0)
			lrel = logaddexp(lrel, log(p[i].norm) - p[i].iter * logc - logD);
	out->rel = exp(lrel);
	out->log_envelope = logD + log1pexp(lrel);
	/* log1p keeps tiny perturbations accurate; log1pexp covers overflow */
	out->iota = (isfinite(out->rel) ? log1p(out->rel) : log1pexp(lrel)) / -logc;
	out->eps = eps;
	if (eps > 0) {
		double ku = (logD - log(eps)) / -logc, km = (out->log_envelope - log(eps)) / -logc;

		out->k_unperturbed = ku > 0 ? ceil(ku) : 0;
		out->k_max = km > 0 ? ceil(km) : 0;
	} else {
		out->k_unperturbed = NAN;
		out->k_max = NAN;
	}
	return 0;
}

int scar_bound_iota(double c, double D, const struct scar_bound_pert *p, size_t n,
		    double *iota, struct scar_error *err)
{
	struct scar_bound_eval e;
	int rc = scar_bound_evaluate(c, D, p, n, 0, &e, err);

	if (rc == 0)
		*iota = e.iota;
	return rc;
}

int scar_bound_kmax(double c, double D, const struct scar_bound_pert *p, size_t n,
		    double eps, double *k, struct scar_error *err)
{
	struct scar_bound_eval e;
	int rc;

	if (!(eps > 0))
		return scar_error_set(err, SCAR_ERANGE, "eps = %.17g is not positive", eps);
	rc = scar_bound_evaluate(c, D, p, n, eps, &e, err);
	if (rc == 0)
		*k = e.k_max;
	return rc;
}

/*
 * P(|T| <= x) for Student's t with integer dof, x >= 0, from the finite
 * series in theta = atan(x / sqrt(dof)) (Abramowitz and Stegun 26.7.3-4).
 */
static double t_abs_cdf(double x, unsigned dof)
{
	double th = atan(x / sqrt((double)dof)), s = sin(th), c2 = cos(th) * cos(th);
	double term = 1, sum = 1;

	if (dof == 1)
		return 2 * th / M_PI;
	if (dof % 2 == 0) {
		for (unsigned j = 2; j + 2 <= dof; j += 2) {
			term *= c2 * (j - 1) / j;
			sum += term;
		}
		return s * sum;
	}
	for (unsigned j = 3; j + 2 <= dof; j += 2) {
		term *= c2 * (j - 1) / j;
		sum += term;
	}
	return 2 / M_PI * (th + s * cos(th) * sum);
}

double scar_bound_t_quantile(double prob, unsigned dof)
{
	double target, lo = 0, hi = 1;

	if (!(prob > 0 && prob < 1) || dof == 0)
		return NAN;
	if (prob == 0.5)
		return 0;
	target = fabs(2 * prob - 1);
	while (t_abs_cdf(hi, dof) < target && hi < 1e300)
		hi *= 2;
	for (int i = 0; i < 200 && hi - lo > 1e-13 * hi; i++) {
		double mid = 0.5 * (lo + hi);

		if (t_abs_cdf(mid, dof) < target)
			lo = mid;
		else
			hi = mid;
	}
	return prob > 0.5 ? 0.5 * (lo + hi) : -0.5 * (lo + hi);
}

/* ---- planning ---- */

/* log(exp(x) - 1) for x > 0 */
static double logexpm1(double x)
{
	return x > 30 ? x + log1p(-exp(-x)) : log(expm1(x));
}

/*
 * 2 log h(a), h(a) = min(1 + c^-a, kappa (c^-a - 1)) for a >= 1, h(0) = 0;
 * L = -log c > 0, lk = log kappa
 */
static double log_h2(double a, double L, double lk)
{
	double x, y;

	if (a <= 0)
		return -INFINITY;
	x = log1pexp(a * L);
	y = lk + logexpm1(a * L);
	return 2 * (x < y ? x : y);
}

struct plan_acc {
	double sum_l1p;		/* sum of log(1 + rho) */
	double sum_rho;
	double count;
};

/* n failures with the same bound. */
static void acc_add_n(struct plan_acc *acc, double lphi, double lsum, double n)
{
	double lrho = 0.5 * (lphi + lsum);

	acc->sum_l1p += n * log1pexp(lrho);
	acc->sum_rho += n * exp(lrho);
	acc->count += n;
}

static void acc_add(struct plan_acc *acc, double lphi, double lsum)
{
	acc_add_n(acc, lphi, lsum, 1);
}

/*
 * One candidate: rows fraction r every `every` iterations. Groups j = 0..G-1
 * are the rows written by the j-th most recent checkpoint, weight r (the
 * oldest: what is left). For a failure at T = m * every + p, group j has
 * age p + j * every when that checkpoint exists (m - j >= 1), else its rows
 * still hold the iteration-0 save (age T).
 */
static void plan_point(const struct scar_bound_plan_opts *o, double kappa, uint64_t every,
		       struct scar_bound_plan_point *pt)
{
	double L = -log(o->c), lphi = log(o->lost_fraction), lk = log(kappa);
	double r = (double)every / (1 / o->budget);	/* 3 / 10, not 3 * 0.1 */
	uint64_t G;
	struct plan_acc acc = { 0, 0, 0 };

	if (r >= 1 - 1e-12)
		r = 1;
	G = (uint64_t)ceil(1 / r - 1e-9);
	if (G < 1)
		G = 1;
	for (uint64_t p = 0; p < every; p++) {
		double prefix = -INFINITY, wsum = 0;

		if (o->iters == 0) {
			for (uint64_t j = 0; j < G; j++) {
				double w = j + 1 < G ? r : 1 - r * (double)(G - 1);

				prefix = logaddexp(prefix, log(w) + log_h2((double)(p + j * every), L, lk));
			}
			acc_add(&acc, lphi, prefix);
			continue;
		}
		/* clocks T = m * every + p in 1..iters, the older groups appearing as m grows */
		for (uint64_t m = 0;; m++) {
			uint64_t T = m * every + p;
			double lsum;

			if (T > o->iters)
				break;
			if (m >= 1 && m <= G) {
				uint64_t j = m - 1;
				double w = j + 1 < G ? r : 1 - r * (double)(G - 1);

				prefix = logaddexp(prefix, log(w) + log_h2((double)(p + j * every), L, lk));
				wsum += w;
			}
			if (T == 0)
				continue;
			lsum = prefix;
			if (wsum < 1 - 1e-12) {
				lsum = logaddexp(lsum, log(1 - wsum) + log_h2((double)T, L, lk));
			} else if (m > G) {
				/*
				 * Every group is written: the later clocks of this phase
				 * have the same bound, counted at once, so the work is
				 * that of one rewrite cycle, not of --iters.
				 */
				acc_add_n(&acc, lphi, lsum, (double)((o->iters - T) / every + 1));
				break;
			}
			acc_add(&acc, lphi, lsum);
		}
	}
	pt->every = every;
	pt->fraction = r;
	pt->mean_rho = acc.count ? acc.sum_rho / acc.count : 0;
	pt->iota = acc.count ? acc.sum_l1p / acc.count / L : 0;
	pt->rework = o->fail_rate * pt->iota * (o->iters ? (double)o->iters : 1);
}

void scar_bound_plan_release(struct scar_bound_plan *p)
{
	if (!p)
		return;
	free(p->points);
	p->points = NULL;
	p->n = 0;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return (a > b) - (a < b);
}

int scar_bound_plan(const struct scar_bound_plan_opts *o, struct scar_bound_plan *out,
		    struct scar_error *err)
{
	uint64_t top, every_t, cycle, *ev;
	size_t maxp = o->max_points ? o->max_points : 256, n = 0, nev = 0, cap;
	double mean_age, kappa = 1, inv;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = check_c(o->c, err)))
		return rc;
	/* The work is about 256 / budget evaluations: a smaller budget would take minutes. */
	if (!(o->budget >= SCAR_BOUND_PLAN_MIN_BUDGET && o->budget <= 1))
		return scar_error_set(err, SCAR_ERANGE, "budget %.17g is not in [%g, 1]", o->budget,
				      SCAR_BOUND_PLAN_MIN_BUDGET);
	if (!(o->fail_rate >= 0 && o->fail_rate <= 1))
		return scar_error_set(err, SCAR_ERANGE, "failure rate %.17g is not in [0, 1]",
				      o->fail_rate);
	if (!(o->lost_fraction > 0 && o->lost_fraction <= 1))
		return scar_error_set(err, SCAR_ERANGE, "lost fraction %.17g is not in (0, 1]",
				      o->lost_fraction);
	if (o->iters > 100000000)
		return scar_error_set(err, SCAR_ERANGE, "iterations %llu exceed 1e8",
				      (unsigned long long)o->iters);
	if (o->D > 0 && o->step0 > 0) {
		if (!isfinite(o->D) || !isfinite(o->step0))
			return scar_error_set(err, SCAR_ERANGE, "D and the first step must be finite");
		kappa = o->step0 / ((1 - o->c) * o->D);
	}
	if (maxp < 2)
		maxp = 2;
	top = (uint64_t)ceil(1 / o->budget - 1e-9);
	if (top < 1)
		top = 1;
	/* 1/B whole (1/10 typed as 0.1 is 10 to rounding): scar-train's cycle */
	inv = 1 / o->budget;
	cycle = (uint64_t)llround(inv);
	if (!(fabs(inv - (double)cycle) <= 1e-9 * inv))
		cycle = 0;
	/* at most maxp grid points and the divisors of cycle (<= 10^4: fewer than 100) */
	cap = (top < maxp ? top : maxp) + 128;
	ev = malloc(cap * sizeof(*ev));
	if (!ev)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	if (top <= maxp) {
		for (uint64_t e = 1; e <= top; e++)
			ev[nev++] = e;
	} else {
		/* geometric grid from 1 to top, and the divisors scar-train can run */
		for (size_t i = 0; i < maxp; i++)
			ev[nev++] = i + 1 == maxp ? top :
				(uint64_t)llround(exp(log((double)top) * (double)i / (double)(maxp - 1)));
		for (uint64_t d = 1; cycle && d * d <= cycle && nev + 2 <= cap; d++)
			if (cycle % d == 0) {
				ev[nev++] = d;
				ev[nev++] = cycle / d;
			}
		qsort(ev, nev, sizeof(*ev), cmp_u64);
	}
	out->points = calloc(nev, sizeof(*out->points));
	if (!out->points) {
		free(ev);
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < nev; i++) {
		if (i > 0 && ev[i] == ev[i - 1])
			continue;	/* duplicates after rounding */
		plan_point(o, kappa, ev[i], &out->points[n]);
		out->points[n].runnable = cycle && cycle % ev[i] == 0;
		n++;
	}
	free(ev);
	out->n = n;
	out->cycle = cycle;
	out->kappa = kappa;
	/* points[0] is every = 1, which divides any cycle */
	out->best = 0;
	for (size_t i = 1; i < n; i++)
		if ((out->points[i].runnable || !cycle) &&
		    out->points[i].iota < out->points[out->best].iota)
			out->best = i;

	/* the rollback's full checkpoints, within the budget: 1/B rounded up */
	every_t = top;
	if (o->iters == 0) {
		mean_age = (double)(every_t - 1) / 2;
	} else {
		/* sum of T mod every_t over T = 1..iters: whole cycles, then the rest (exact) */
		uint64_t q = o->iters / every_t, rem = o->iters % every_t;
		double s = (double)q * ((double)every_t * (double)(every_t - 1) / 2) +
			(double)rem * (double)(rem + 1) / 2;

		mean_age = s / (double)o->iters;
	}
	out->traditional.every = every_t;
	out->traditional.fraction = 1;
	out->traditional.mean_rho = NAN;
	out->traditional.iota = mean_age;
	out->traditional.rework = o->fail_rate * mean_age * (o->iters ? (double)o->iters : 1);
	return 0;
}
