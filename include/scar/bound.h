/*
 * scar/bound.h - the iteration-cost bound of SCAR (scar(7) derives it):
 * evaluate it, fit the contraction rate c and the initial distance D from a
 * training stream, hold an observed cost against it, and plan checkpoints.
 *
 * Notation. An iterative algorithm x(k+1) = f(x(k)) contracts towards x* at
 * rate c in (0, 1): ||f(x) - x*|| <= c ||x - x*||. D = ||x(0) - x*||. A run
 * perturbed by delta_t right after clock iteration t (y(t) = x(t) + delta_t)
 * satisfies
 *
 *     ||y(k) - x*|| <= c^k (D + sum_{t <= k} ||delta_t|| / c^t)
 *
 * hence it reaches ||y - x*|| <= eps within
 *
 *     K(eps) = ceil(log((D + sum_t ||delta_t|| / c^t) / eps) / log(1/c))
 *
 * iterations (a theorem), and its worst-case iteration cost, the perturbed
 * envelope against the unperturbed one, is
 *
 *     iota = log(1 + sum_t ||delta_t|| / (c^t D)) / log(1/c).
 *
 * Everything here is pure computation: nothing prints, allocates behind the
 * caller's back (except where a _release function is named) or keeps state.
 * Sums of ||delta_t|| / c^t are formed in log space, so a late perturbation
 * (c^t far below DBL_MIN) still gives a finite, correct bound.
 */
#ifndef SCAR_BOUND_H
#define SCAR_BOUND_H

#include <stddef.h>
#include <stdint.h>

#include "scar/error.h"
#include "scar/events.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One perturbation: its L2 norm ||delta_t|| >= 0 and the clock iteration t >= 0. */
struct scar_bound_pert {
	double norm;
	double iter;
};

/* What scar_bound_evaluate computes. */
struct scar_bound_eval {
	double rel;		/* sum_t ||delta_t|| / (c^t D); +inf when it overflows */
	double log_envelope;	/* log(D + sum_t ||delta_t|| / c^t), always finite */
	double iota;		/* the iteration-cost bound, >= 0 */
	double eps;		/* as given; 0 when none */
	double k_unperturbed;	/* ceil(log(D / eps) / log(1/c)), >= 0; NaN without eps */
	double k_max;		/* K(eps), >= 0; NaN without eps */
};

/*
 * Evaluate the bound for contraction c in (0, 1), distance D > 0 and n
 * perturbations p (NULL allowed when n is 0). eps > 0 also computes K(eps)
 * and the unperturbed K; eps == 0 leaves them NaN. Returns 0, or
 * SCAR_ERANGE naming the argument that is out of range (c, D, eps, a norm
 * or iteration that is negative or not finite).
 */
int scar_bound_evaluate(double c, double D, const struct scar_bound_pert *p, size_t n,
			double eps, struct scar_bound_eval *out, struct scar_error *err);

/* The iteration-cost bound alone (see scar_bound_evaluate); *iota = 0 when n is 0. */
int scar_bound_iota(double c, double D, const struct scar_bound_pert *p, size_t n,
		    double *iota, struct scar_error *err);

/* K(eps) alone: the guaranteed number of iterations to reach ||y - x*|| <= eps. */
int scar_bound_kmax(double c, double D, const struct scar_bound_pert *p, size_t n,
		    double eps, double *k, struct scar_error *err);

/*
 * Quantile of Student's t distribution with dof >= 1 degrees of freedom:
 * the x with P(T <= x) = prob, for prob in (0, 1). Exact to about 1e-12
 * (bisection on the closed-form CDF of integer dof). NaN on bad arguments.
 */
double scar_bound_t_quantile(double prob, unsigned dof);

/*
 * Fitting c from step norms s_k = ||x(k) - x(k-1)|| (k = 1, 2, ...).
 *
 * The window: points are taken in order; the first point with s_k <= 0, s_k
 * not finite, or s_k <= floor * max(s_1..s_k) ends the window there (the
 * float noise floor: steps that small are rounding, not contraction). Of the
 * points before it, the first `skip` are dropped as transient; skip < 0 means
 * automatic: half of them, rounded down, but never leaving fewer than
 * SCAR_BOUND_FIT_MIN (the slowest mode dominates the late steps, and it is the rate
 * the bound needs). Then log s_k = a + b k is fitted by least squares: c = exp(b).
 */
#define SCAR_BOUND_FIT_FLOOR 1e-6	/* default floor, relative to the largest step */
#define SCAR_BOUND_FIT_MIN 3		/* fewest points a fit accepts */

struct scar_bound_fit_opts {
	long skip;		/* transient points to drop; < 0 = automatic */
	double floor;		/* in [0, 1); 0 = no floor except s_k <= 0 */
};

/* Defaults: skip automatic, floor SCAR_BOUND_FIT_FLOOR. */
void scar_bound_fit_opts_init(struct scar_bound_fit_opts *o);

enum scar_bound_stop {
	SCAR_BOUND_STOP_END = 0,	/* the data ran out */
	SCAR_BOUND_STOP_FLOOR,		/* a step reached the noise floor */
	SCAR_BOUND_STOP_ZERO,		/* a step was exactly 0 */
	SCAR_BOUND_STOP_NONFINITE,	/* a step was NaN or infinite */
	SCAR_BOUND_STOP_FAILURE,	/* (streams) a failure or recovery record */
};

/* Static name: "end", "noise-floor", "zero-step", "non-finite", "failure". */
const char *scar_bound_stop_name(enum scar_bound_stop s);

struct scar_bound_fit {
	size_t n;		/* points fitted */
	size_t skipped;		/* transient points dropped */
	double k_first, k_last;	/* the fitted window, inclusive */
	enum scar_bound_stop stop;
	double slope;		/* b = log c */
	double intercept;	/* a */
	double se_slope;	/* standard error of b; 0 for an exact fit */
	double r2;		/* coefficient of determination; 1 when all s_k are equal */
	double tq;		/* t quantile (0.975, n - 2) used for the interval */
	double c;		/* exp(b); may be >= 1 (not contracting) */
	double c_lo, c_hi;	/* 95% interval exp(b -+ tq * se) */
	double s0;		/* the step at k = 1, ||x(1) - x(0)||; NaN when absent */
	double d_upper;		/* s0 / (1 - c); NaN unless s0 is known and c < 1 */
	double d_upper_hi;	/* s0 / (1 - c_hi); NaN unless c_hi < 1 */
};

/*
 * Fit c from n points (k[i], s[i]) with k strictly increasing (SCAR_EINVAL
 * otherwise). o may be NULL for the defaults. SCAR_ERANGE when the window
 * keeps fewer than SCAR_BOUND_FIT_MIN points; out is then still filled with
 * the window found (n, skipped, stop).
 */
int scar_bound_fit(const double *k, const double *s, size_t n,
		   const struct scar_bound_fit_opts *o, struct scar_bound_fit *out,
		   struct scar_error *err);

/*
 * c and D of a scar-train event stream. Only iteration records before the
 * first failure or recovery record are used. c is the header's exact
 * "contraction" when present (c_source "header"), else the fit ("fit").
 * D is dist_opt of the iteration-0 record when present ("dist_opt"), else
 * s0 / (1 - c) ("step-bound", an upper bound on D given c).
 */
struct scar_bound_stream {
	struct scar_bound_fit fit;
	int fit_ok;			/* 0 when too few points; fit then has the window */
	double c, D;
	const char *c_source;		/* "header" or "fit"; static */
	const char *d_source;		/* "dist_opt" or "step-bound"; static */
	double header_contraction;	/* NaN when absent */
	double dist_opt0;		/* NaN when absent */
	int higher_better;		/* the header's objective_higher_better */
	size_t iterations;		/* iteration records before the first failure */
	/*
	 * 1 when the fit contracts (c < 1) and the header's contraction is below
	 * its 95% interval: the steps shrink more slowly than it says, so it
	 * cannot be the run's (faster is fine: the contraction is the worst case)
	 */
	int c_disagrees;
};

/*
 * Fill *out from ev. SCAR_EFORMAT when a record the fit needs is malformed
 * (iter not a whole number in 0..2^53, step_norm missing after iteration 0,
 * clock not increasing) or the header's "contraction" is not a number or
 * "objective_higher_better" not a boolean; SCAR_ERANGE when c cannot be had (no header contraction and
 * too few points, or a fitted c >= 1) or D cannot be had. name is for
 * messages.
 */
int scar_bound_fit_events(const struct scar_events *ev, const char *name,
			  const struct scar_bound_fit_opts *o, struct scar_bound_stream *out,
			  struct scar_error *err);

/*
 * Observed iteration cost between two objective curves (by clock). A curve
 * is smoothed by a trailing mean over the last `window` records (window 1 =
 * raw) to keep stochastic noise from deciding "reached". A curve reaches
 * target at the first record whose smoothed objective is <= target (>= when
 * higher_better).
 */
struct scar_bound_cost {
	double target;
	double reference_iter;	/* clock at which the reference reached target */
	double perturbed_iter;	/* same for the perturbed run; its last clock if censored */
	double cost;		/* perturbed_iter - reference_iter; a lower bound if censored */
	/*
	 * The same with each crossing interpolated linearly within the step
	 * that crossed (scar-train's cost_interp, scar-train(1)); = cost when
	 * censored.
	 */
	double cost_interp;
	int censored;		/* the perturbed run never reached target */
};

/*
 * The first clock after `after` (pass -1 for any) at which curve (iter[i],
 * obj[i]), i < n, reaches target; -1 when it never does. The trailing mean
 * may include records at or before `after`. window >= 1.
 */
double scar_bound_reach(const double *iter, const double *obj, size_t n, double target,
			int higher_better, size_t window, double after);

/*
 * Cost of the perturbed curve against the reference. target NaN means the
 * reference's final smoothed objective. The perturbed run must reach the
 * target after its last perturbation, at a clock > after (-1: anywhere), as
 * scar-train --cost counts it. SCAR_ERANGE when the reference never reaches
 * target (or a curve is empty); censoring is not an error.
 */
int scar_bound_observed_cost(const double *ref_iter, const double *ref_obj, size_t nref,
			     const double *pert_iter, const double *pert_obj, size_t npert,
			     double target, int higher_better, size_t window, double after,
			     struct scar_bound_cost *out, struct scar_error *err);

/*
 * The cost measured from a perturbation, the way scar-train --cost does
 * (scar-train(1), THE ITERATION COST): the perturbed curve is searched from
 * clock pert_from on, reading its value there as from_obj (the objective of
 * the state the run went on from), and the reference from its iteration
 * ref_from (the state iteration the perturbed run went on from; -1: from
 * the start). With from_obj NaN (not known) both are searched strictly
 * after those points. So a perturbation that changes nothing costs exactly
 * 0, and a rollback from T to a checkpoint at C exactly T - C. Errors as
 * scar_bound_observed_cost's.
 */
int scar_bound_observed_cost_from(const double *ref_iter, const double *ref_obj, size_t nref,
				  const double *pert_iter, const double *pert_obj, size_t npert,
				  double target, int higher_better, size_t window, double ref_from,
				  double pert_from, double from_obj, struct scar_bound_cost *out,
				  struct scar_error *err);

/*
 * The iteration cost of a perturbed stream against a reference stream,
 * measured as scar-train --cost measures it, from streams of any trainer
 * that follow the minimal schema (scar-events(7)): a header with
 * "objective_higher_better", iteration records with "iter" and
 * "objective"; a "recovery" record says where the perturbed run went on
 * from (its "iter", optional "resume_state_iter" and "objective"), else the
 * cost is measured from the start. target NaN: the reference's final
 * (smoothed) objective. Errors as scar_bound_observed_cost_from's;
 * SCAR_EFORMAT for a header without the direction, a non-finite reference
 * objective or a bad recovery record (naming its line).
 */
int scar_bound_cost_events(const struct scar_events *ref, const char *ref_name,
			   const struct scar_events *pert, const char *pert_name, double target,
			   size_t window, struct scar_bound_cost *out, struct scar_error *err);

/*
 * Everything `scar-bound check` reports: c and D from the reference, the
 * perturbations (recovery records of the perturbed stream: delta_norm at
 * iter, then the extra ones given), the bound, the observed cost, and with
 * eps > 0 and dist_opt in the perturbed stream, the theorem check.
 */
enum scar_bound_metric {
	SCAR_BOUND_METRIC_OBJECTIVE = 0,	/* the training objective (any workload) */
	SCAR_BOUND_METRIC_DIST,			/* dist_opt, lower is better (ridge) */
};

struct scar_bound_check_opts {
	struct scar_bound_fit_opts fit;
	enum scar_bound_metric metric;	/* what "reaching the target" is measured on */
	double target;			/* NaN = the reference's final value of the metric */
	size_t window;			/* >= 1 */
	double eps;			/* 0 = no theorem check */
	const struct scar_bound_pert *extra;	/* borrowed; may be NULL */
	size_t nextra;
};

void scar_bound_check_opts_init(struct scar_bound_check_opts *o);

/*
 * A recovery scar-train --recovery auto chose (scar-events(7)): its
 * candidates with the perturbation each was estimated to cause, the cost
 * the trainer predicted online, and the bound of that perturbation under
 * the check's c and D (NaN for the rollback, whose cost T - C is known and
 * is its predicted cost, and where an estimate is missing).
 */
#define SCAR_BOUND_AUTO_MAX 4
struct scar_bound_auto {
	double iter;
	char choice[16];
	size_t n;
	struct {
		char strategy[16];
		double delta_est, predicted, bound;
	} cand[SCAR_BOUND_AUTO_MAX];
};

struct scar_bound_check {
	struct scar_bound_stream ref;
	struct scar_bound_cost cost;
	struct scar_bound_pert *pert;	/* owned: scar_bound_check_release() */
	size_t npert;
	struct scar_bound_eval bound;	/* with eps when given */
	/*
	 * cost > ceil(bound.iota) (censored: its lower bound is): arrivals are
	 * whole clocks, so envelopes iota apart arrive at most ceil(iota) apart.
	 */
	int exceeded;
	int undecided;			/* censored below the bound: cannot tell */
	/*
	 * The theorem, when the perturbed stream has dist_opt. Since the
	 * envelope c^k (D + sum_t ||delta_t|| / c^t) is <= eps for every
	 * k >= K(eps), every record at a clock >= K(eps) must have
	 * dist_opt <= eps (with eps given). settle_eps: the first clock from
	 * which dist_opt stays <= eps to the end of the stream, -1 if the last
	 * one is above eps, NaN unchecked. envelope_max: the largest
	 * dist_opt(k) / (c^k (D + sum_{t < k} ||delta_t|| / c^t)) over the
	 * records (a perturbation at t shows from clock t + 1 on), which a true
	 * contraction keeps <= 1 up to rounding; at clock envelope_iter.
	 */
	double settle_eps;
	int theorem;			/* 1 holds, 0 violated, -1 unchecked or undecided */
	double envelope_max, envelope_iter;	/* NaN without dist_opt */
	struct scar_bound_auto *autos;	/* the perturbed stream's auto recoveries; owned */
	size_t nauto;
};

/*
 * Compare a reference and a perturbed stream. Errors as for
 * scar_bound_fit_events and scar_bound_observed_cost; SCAR_EFORMAT when a
 * recovery record has no numeric delta_norm or a failure has no recovery;
 * SCAR_ENOTFOUND when the metric is dist_opt and a stream lacks it.
 */
int scar_bound_check_events(const struct scar_events *ref, const char *ref_name,
			    const struct scar_events *pert, const char *pert_name,
			    const struct scar_bound_check_opts *o, struct scar_bound_check *out,
			    struct scar_error *err);
/* Free what scar_bound_check_events allocated in *out; safe on a zeroed struct. */
void scar_bound_check_release(struct scar_bound_check *out);

/*
 * Planning checkpoints (the model is in scar-bound(1) and scar(7)).
 *
 * Budget B = rows fraction written per iteration. A candidate writes a
 * fraction r = min(1, B * every) of the rows every `every` iterations, in a
 * round-robin cycle, so each row is rewritten every 1/B iterations. A
 * failure at clock T loses a fraction phi of the rows (phi = 1: all). The
 * row group last saved a iterations ago contributes its drift since then to
 * delta; the whole state's drift over those a iterations is at most
 *
 *     ||x(T) - x(T-a)|| <= min((c^{T-a} + c^T) D, s0 c^{T-a} (1 - c^a) / (1 - c))
 *
 * (through x*; or summing the steps since, when steps contract by c from
 * s0 = ||x(1) - x(0)||, which holds when f is c-Lipschitz),
 * so relative to the current distance c^T D, with kappa = s0 / ((1 - c) D):
 *
 *     rho = sqrt(phi * sum_groups w_g h(a_g)^2),
 *     h(0) = 0, h(a) = min(1 + c^-a, kappa (c^-a - 1))
 *
 * assuming rows share the drift evenly (w_g is the group's row fraction).
 * The expected bound on rework per failure is E[log(1 + rho)] / log(1/c),
 * over a failure time uniform on the checkpoint cycle (iters == 0: steady
 * state) or on clocks 1..iters (ages then cap at T: iteration 0 is saved).
 * With phi = 1, r = 1 and kappa = 1 this is exactly the mean age, the cost
 * of a traditional full rollback. The baseline (full checkpoint every
 * ceil(1/B), full rollback) reworks the age of the last checkpoint.
 */
/*
 * The smallest budget: the work is about max_points / budget evaluations of
 * the bound (whatever iters), a second at 1e-4; 1e-6 took half a minute.
 */
#define SCAR_BOUND_PLAN_MIN_BUDGET 1e-4

struct scar_bound_plan_opts {
	double c;		/* (0, 1) */
	double fail_rate;	/* failures per iteration, in [0, 1] */
	double budget;		/* B in [SCAR_BOUND_PLAN_MIN_BUDGET, 1] */
	double lost_fraction;	/* phi in (0, 1] */
	uint64_t iters;		/* 0 = steady state */
	size_t max_points;	/* candidates; 0 = 256 */
	double D, step0;	/* both > 0 set kappa = step0 / ((1 - c) D); else kappa = 1 */
};

struct scar_bound_plan_point {
	uint64_t every;		/* iterations between checkpoints */
	double fraction;	/* r */
	double mean_rho;	/* E[rho] */
	double iota;		/* expected bound on rework per failure (iterations) */
	double rework;		/* fail_rate * iota * (iters, or 1 = per iteration) */
	/*
	 * scar-train's policies can write it: 1/B is a whole number C and
	 * every divides it (r = 1/m, m = C / every; see scar-train(1)).
	 */
	int runnable;
};

struct scar_bound_plan {
	struct scar_bound_plan_point *points;	/* owned: scar_bound_plan_release() */
	size_t n;
	/*
	 * Index of the minimum iota among the runnable points, or among all
	 * when none is (1/B not whole); ties go to the smaller every.
	 */
	size_t best;
	uint64_t cycle;				/* C = 1/B when whole, else 0 */
	double kappa;				/* as used */
	/*
	 * The baseline: a full checkpoint every ceil(1/B) iterations (within
	 * the budget) and full rollback, whose rework per failure is exactly
	 * the age of the last checkpoint (iota = its mean, mean_rho NaN).
	 */
	struct scar_bound_plan_point traditional;
};

/*
 * Candidates are every = 1 .. ceil(1/B) (r = min(1, B * every)); when there
 * are more than max_points, a geometric grid of them that keeps both ends,
 * and every divisor of a whole 1/B (the settings scar-train can run).
 * SCAR_ERANGE for arguments out of range, SCAR_ENOMEM.
 */
int scar_bound_plan(const struct scar_bound_plan_opts *o, struct scar_bound_plan *out,
		    struct scar_error *err);
void scar_bound_plan_release(struct scar_bound_plan *p);

#ifdef __cplusplus
}
#endif
#endif
