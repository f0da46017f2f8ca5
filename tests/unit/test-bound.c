/* test-bound.c - the bound's formulas, the fit, observed costs and the plan, on hand-computed values. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "scar/bound.h"
#include "unit.h"

static void test_evaluate(void)
{
	struct scar_bound_pert one = { 1, 1 }, two[2] = { { 1, 1 }, { 0.25, 2 } };
	struct scar_bound_pert late = { 1, 2000 }, tiny = { 1e-20, 0 };
	struct scar_bound_eval e;
	struct scar_error err;
	double v;

	/* c = 1/2, D = 1, ||delta|| = 1 at t = 1: rel = 1 / (1/2) = 2 */
	CHECK_RC(scar_bound_evaluate(0.5, 1, &one, 1, 0.01, &e, NULL));
	CHECK_NEAR(e.rel, 2, 1e-15);
	CHECK_NEAR(e.iota, log(3) / log(2), 1e-14);
	CHECK_NEAR(e.k_unperturbed, 7, 0);	/* ceil(log2 100) */
	CHECK_NEAR(e.k_max, 9, 0);		/* ceil(log2 300) */
	CHECK_NEAR(e.log_envelope, log(3), 1e-15);

	/* two perturbations add: 1/0.5 + 0.25/0.25 = 3, so iota = log2 4 = 2 */
	CHECK_RC(scar_bound_iota(0.5, 1, two, 2, &v, NULL));
	CHECK_NEAR(v, 2, 1e-14);
	CHECK_RC(scar_bound_kmax(0.5, 1, two, 2, 0.5, &v, NULL));
	CHECK_NEAR(v, 3, 0);			/* ceil(log2 (4 / 0.5)) */

	/* no perturbation: no cost; D = eps: no iterations needed */
	CHECK_RC(scar_bound_evaluate(0.9, 2, NULL, 0, 2, &e, NULL));
	CHECK_NEAR(e.iota, 0, 0);
	CHECK_NEAR(e.k_max, 0, 0);

	/* c^2000 underflows, the log-space sum does not: iota = log2(1 + 2^2000) */
	CHECK_RC(scar_bound_evaluate(0.5, 1, &late, 1, 0, &e, NULL));
	CHECK(isinf(e.rel));
	CHECK_NEAR(e.iota, 2000, 1e-9);
	CHECK(isnan(e.k_max));

	/* tiny perturbations keep their precision (log1p) */
	CHECK_RC(scar_bound_iota(exp(-1), 1, &tiny, 1, &v, NULL));
	CHECK_NEAR(v / 1e-20, 1, 1e-12);

	scar_error_clear(&err);
	CHECK(scar_bound_iota(1, 1, &one, 1, &v, &err) == SCAR_ERANGE);
	CHECK(strstr(err.msg, "contraction") != NULL);
	CHECK(scar_bound_iota(0, 1, &one, 1, &v, NULL) == SCAR_ERANGE);
	CHECK(scar_bound_iota(0.5, 0, &one, 1, &v, NULL) == SCAR_ERANGE);
	CHECK(scar_bound_iota(0.5, NAN, &one, 1, &v, NULL) == SCAR_ERANGE);
	one.norm = -1;
	CHECK(scar_bound_iota(0.5, 1, &one, 1, &v, NULL) == SCAR_ERANGE);
	CHECK(scar_bound_kmax(0.5, 1, NULL, 0, 0, &v, NULL) == SCAR_ERANGE);
}

static void test_t_quantile(void)
{
	CHECK_NEAR(scar_bound_t_quantile(0.975, 1), 12.706204736174703, 1e-9);
	CHECK_NEAR(scar_bound_t_quantile(0.975, 2), 4.302652729749464, 1e-10);
	CHECK_NEAR(scar_bound_t_quantile(0.975, 3), 3.182446305284263, 1e-10);
	CHECK_NEAR(scar_bound_t_quantile(0.975, 10), 2.228138851986274, 1e-10);
	CHECK_NEAR(scar_bound_t_quantile(0.975, 30), 2.0422724563012373, 1e-10);
	CHECK_NEAR(scar_bound_t_quantile(0.025, 10), -2.228138851986274, 1e-10);
	CHECK_NEAR(scar_bound_t_quantile(0.5, 7), 0, 0);
	CHECK_NEAR(scar_bound_t_quantile(0.975, 100000), 1.959986, 1e-5);
	CHECK(isnan(scar_bound_t_quantile(1, 3)));
	CHECK(isnan(scar_bound_t_quantile(0.9, 0)));
}

static void test_fit(void)
{
	double k[64], s[64];
	struct scar_bound_fit f;
	struct scar_bound_fit_opts o;
	struct scar_error err;

	/* a geometric sequence gives c exactly */
	for (int i = 0; i < 30; i++) {
		k[i] = i + 1;
		s[i] = 2 * pow(0.8, i + 1);
	}
	CHECK_RC(scar_bound_fit(k, s, 30, NULL, &f, NULL));
	CHECK_NEAR(f.c, 0.8, 1e-13);
	CHECK_NEAR(f.r2, 1, 1e-12);
	CHECK_NEAR(f.se_slope, 0, 1e-12);
	CHECK(f.skipped == 15 && f.n == 15);	/* automatic: half of 30 */
	CHECK_NEAR(f.k_first, 16, 0);
	CHECK_NEAR(f.k_last, 30, 0);
	CHECK(f.stop == SCAR_BOUND_STOP_END);
	CHECK_NEAR(f.s0, 1.6, 1e-15);
	CHECK_NEAR(f.d_upper, 8, 1e-12);

	/* the noise floor ends the window: here from k = 21 */
	for (int i = 20; i < 40; i++) {
		k[i] = i + 1;
		s[i] = 1e-8 * (1 + 0.3 * (i % 3));
	}
	scar_bound_fit_opts_init(&o);
	o.skip = 0;
	CHECK_RC(scar_bound_fit(k, s, 40, &o, &f, NULL));
	CHECK(f.stop == SCAR_BOUND_STOP_FLOOR);
	CHECK(f.n == 20 && f.skipped == 0);
	CHECK_NEAR(f.k_last, 20, 0);
	CHECK_NEAR(f.c, 0.8, 1e-13);

	/* hand-computed regression: slope -0.305, se 0.019790570145063198, R^2 0.98752653927813 */
	{
		double kk[5] = { 2, 3, 4, 5, 6 }, y[5] = { 0, -0.3, -0.5, -0.95, -1.2 }, ss[5];
		double tq = 3.182446305284263;

		for (int i = 0; i < 5; i++)
			ss[i] = exp(y[i]);
		CHECK_RC(scar_bound_fit(kk, ss, 5, &o, &f, NULL));
		CHECK_NEAR(f.slope, -0.305, 1e-13);
		CHECK_NEAR(f.intercept, 0.63, 1e-13);
		CHECK_NEAR(f.se_slope, 0.019790570145063198, 1e-13);
		CHECK_NEAR(f.r2, 0.9875265392781316, 1e-12);
		CHECK_NEAR(f.tq, tq, 1e-9);
		CHECK_NEAR(f.c_lo, exp(-0.305 - tq * 0.019790570145063198), 1e-9);
		CHECK_NEAR(f.c_hi, exp(-0.305 + tq * 0.019790570145063198), 1e-9);
		CHECK(isnan(f.s0) && isnan(f.d_upper));	/* no k = 1 */
	}
	scar_error_clear(&err);
	CHECK(scar_bound_fit(k, s, 2, &o, &f, &err) == SCAR_ERANGE);
}

static void test_fit_edges(void)
{
	double k[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, s[8] = { 1, 0.5, 0.25, 0, 1, 1, 1, 1 };
	struct scar_bound_fit_opts o;
	struct scar_bound_fit f;
	struct scar_error err;

	scar_bound_fit_opts_init(&o);
	o.skip = 0;
	/* the window stops at the zero step: exactly 3 points, c = 1/2 */
	CHECK_RC(scar_bound_fit(k, s, 8, &o, &f, NULL));
	CHECK(f.stop == SCAR_BOUND_STOP_ZERO && f.n == 3);
	CHECK_NEAR(f.c, 0.5, 1e-14);
	CHECK_NEAR(f.d_upper, 2, 1e-14);
	o.skip = 1;
	scar_error_clear(&err);
	CHECK(scar_bound_fit(k, s, 8, &o, &f, &err) == SCAR_ERANGE);
	CHECK(f.n == 2 && f.skipped == 1);
	CHECK(strstr(err.msg, "too few") != NULL);
	s[1] = NAN;
	o.skip = 0;
	CHECK(scar_bound_fit(k, s, 8, &o, &f, NULL) == SCAR_ERANGE);
	CHECK(f.stop == SCAR_BOUND_STOP_NONFINITE);
	k[2] = 2;
	CHECK(scar_bound_fit(k, s, 8, &o, &f, NULL) == SCAR_EINVAL);
	o.floor = 1;
	CHECK(scar_bound_fit(k, s, 8, &o, &f, NULL) == SCAR_ERANGE);
}

static void test_cost(void)
{
	double ri[8] = { 0, 1, 2, 3, 4, 5, 6, 7 }, ro[8] = { 10, 5, 3, 2, 1.5, 1.2, 1.1, 1.0 };
	double pi[11] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
	double po[11] = { 10, 5, 3, 6, 4, 2.5, 1.6, 1.3, 1.05, 0.99, 0.98 };
	double hi[4] = { 0.1, 0.5, 0.4, 0.9 };
	struct scar_bound_cost c;

	CHECK_RC(scar_bound_observed_cost(ri, ro, 8, pi, po, 11, NAN, 0, 1, -1, &c, NULL));
	CHECK_NEAR(c.target, 1.0, 0);
	CHECK_NEAR(c.reference_iter, 7, 0);
	CHECK_NEAR(c.perturbed_iter, 9, 0);
	CHECK_NEAR(c.cost, 2, 0);
	CHECK(!c.censored);
	/* explicit target */
	CHECK_RC(scar_bound_observed_cost(ri, ro, 8, pi, po, 11, 2.0, 0, 1, -1, &c, NULL));
	CHECK_NEAR(c.cost, 3, 0);	/* reference at 3, perturbed at 6 */
	/* smoothing over 2: target = (1.1 + 1.0) / 2 = 1.05; reference 7, perturbed (1.05+.99)/2 at 9 */
	CHECK_RC(scar_bound_observed_cost(ri, ro, 8, pi, po, 11, NAN, 0, 2, -1, &c, NULL));
	CHECK_NEAR(c.target, 1.05, 1e-15);
	CHECK_NEAR(c.reference_iter, 7, 0);
	CHECK_NEAR(c.perturbed_iter, 9, 0);
	/* censored: the perturbed run stops at 8 */
	CHECK_RC(scar_bound_observed_cost(ri, ro, 8, pi, po, 9, NAN, 0, 1, -1, &c, NULL));
	CHECK(c.censored);
	CHECK_NEAR(c.cost, 2, 0);	/* at least 9 - 7 */
	/* reached only after the last perturbation counts: explicit target 3 after clock 4 */
	CHECK_RC(scar_bound_observed_cost(ri, ro, 8, pi, po, 11, 3.0, 0, 1, 4, &c, NULL));
	CHECK_NEAR(c.reference_iter, 2, 0);
	CHECK_NEAR(c.perturbed_iter, 5, 0);
	/* unreachable target */
	CHECK(scar_bound_observed_cost(ri, ro, 8, pi, po, 11, 0.5, 0, 1, -1, &c, NULL) == SCAR_ERANGE);
	/* higher is better */
	CHECK_NEAR(scar_bound_reach(ri, hi, 4, 0.45, 1, 1, -1), 1, 0);
	CHECK_NEAR(scar_bound_reach(ri, hi, 4, 0.45, 1, 2, -1), 2, 0);
	CHECK_NEAR(scar_bound_reach(ri, hi, 4, 0.95, 1, 1, -1), -1, 0);
}

static void test_plan(void)
{
	struct scar_bound_plan_opts o = { 0.5, 0.01, 0.5, 1, 0, 0, 0, 0 };
	struct scar_bound_plan p;
	double h1;

	/* budget 1/2: every 1 with r = 1/2 (ages 0 and 1), or every 2 with r = 1 */
	CHECK_RC(scar_bound_plan(&o, &p, NULL));
	CHECK(p.n == 2);
	CHECK_NEAR(p.kappa, 1, 0);
	CHECK(p.points[0].every == 1 && p.points[1].every == 2);
	CHECK_NEAR(p.points[0].fraction, 0.5, 0);
	/* kappa 1: h(1) = min(1 + 2, 2 - 1) = 1, rho = sqrt(1/2 * 1) */
	CHECK_NEAR(p.points[0].mean_rho, 1 / sqrt(2), 1e-13);
	CHECK_NEAR(p.points[0].iota, log(1 + 1 / sqrt(2)) / log(2), 1e-13);
	/* every 2: half the failures find age 0 (rho 0), half age 1 (rho 1): iota (0 + 1) / 2 */
	CHECK_NEAR(p.points[1].iota, 0.5, 1e-13);
	CHECK_NEAR(p.points[1].rework, 0.005, 1e-15);
	CHECK(p.best == 1 && p.cycle == 2 && p.points[0].runnable && p.points[1].runnable);
	/* all lost, full checkpoints, kappa 1: the bound is the traditional rework */
	CHECK(p.traditional.every == 2);
	CHECK_NEAR(p.traditional.iota, 0.5, 0);
	scar_bound_plan_release(&p);

	/* over clocks 1..3, every 2: T = 1 (age 1 from the iteration-0 save), 2 (age 0), 3 (age 1) */
	o.iters = 3;
	CHECK_RC(scar_bound_plan(&o, &p, NULL));
	CHECK_NEAR(p.points[1].iota, 2.0 / 3, 1e-13);
	CHECK_NEAR(p.points[1].rework, 0.01 * 2, 1e-14);
	/* every 1, r = 1/2: T = 1: half age 0, half age 1 (iteration 0); T = 2, 3: ages 0 and 1 */
	CHECK_NEAR(p.points[0].iota, log(1 + 1 / sqrt(2)) / log(2), 1e-13);
	CHECK_NEAR(p.traditional.iota, 2.0 / 3, 1e-15);	/* ages 1, 0, 1 */
	scar_bound_plan_release(&p);

	/* losing a quarter of the rows halves rho */
	o.iters = 0;
	o.lost_fraction = 0.25;
	CHECK_RC(scar_bound_plan(&o, &p, NULL));
	CHECK_NEAR(p.points[0].mean_rho, 0.5 / sqrt(2), 1e-13);
	scar_bound_plan_release(&p);

	/* kappa = s0 / ((1 - c) D) = 8: h(1) = min(3, 8) = 3, the bound through x* */
	o.lost_fraction = 1;
	o.D = 1;
	o.step0 = 4;
	CHECK_RC(scar_bound_plan(&o, &p, NULL));
	CHECK_NEAR(p.kappa, 8, 1e-15);
	CHECK_NEAR(p.points[0].mean_rho, 3 / sqrt(2), 1e-13);
	scar_bound_plan_release(&p);
	/* kappa 2 at c 0.9, age 3 (every 4, budget 1/4): h = min(1 + c^-3, 2 (c^-3 - 1)) */
	o.c = 0.9;
	o.budget = 0.25;
	o.step0 = 0.2;
	CHECK_RC(scar_bound_plan(&o, &p, NULL));
	h1 = 2 * (pow(0.9, -3) - 1);
	CHECK_NEAR(p.kappa, 2, 1e-12);
	CHECK(p.n == 4 && p.points[3].every == 4);
	CHECK_NEAR(p.points[3].iota, (log1p(2 * (pow(0.9, -1) - 1)) + log1p(2 * (pow(0.9, -2) - 1)) +
				      log1p(h1)) / 4 / -log(0.9), 1e-12);
	scar_bound_plan_release(&p);
	o.c = 0.5;
	o.D = o.step0 = 0;

	/*
	 * a small budget: a grid that keeps both ends, budget respected, and
	 * the 16 divisors of 1000 (what scar-train can run) among the points
	 */
	o.budget = 0.001;
	o.max_points = 50;
	CHECK_RC(scar_bound_plan(&o, &p, NULL));
	CHECK(p.n <= 50 + 16 && p.n > 20 && p.cycle == 1000);
	CHECK(p.points[0].every == 1 && p.points[p.n - 1].every == 1000);
	CHECK_NEAR(p.points[p.n - 1].fraction, 1, 0);
	{
		size_t runnable = 0;

		for (size_t i = 0; i < p.n; i++) {
			CHECK(p.points[i].fraction <= 0.001 * (double)p.points[i].every + 1e-12);
			CHECK(i == 0 || p.points[i].every > p.points[i - 1].every);
			CHECK(p.points[i].runnable == (1000 % p.points[i].every == 0));
			runnable += p.points[i].runnable;
			/* the best is the least iota scar-train can run */
			CHECK(!p.points[i].runnable || p.points[i].iota >= p.points[p.best].iota);
		}
		CHECK(runnable == 16 && p.points[p.best].runnable);
	}
	scar_bound_plan_release(&p);
	/* 1/3 of the rows every 3 of budget 1/3: runnable; every 2 of budget 0.3 not */
	o.max_points = 0;
	o.budget = 1.0 / 3;
	CHECK_RC(scar_bound_plan(&o, &p, NULL));
	CHECK(p.cycle == 3 && p.n == 3 && p.points[0].runnable && !p.points[1].runnable &&
	      p.points[2].runnable);
	scar_bound_plan_release(&p);
	o.budget = 0.3;
	CHECK_RC(scar_bound_plan(&o, &p, NULL));
	CHECK(p.cycle == 0 && p.n == 4);
	for (size_t i = 0; i < p.n; i++)
		CHECK(!p.points[i].runnable && p.points[i].iota >= p.points[p.best].iota);
	scar_bound_plan_release(&p);

	o.c = 1;
	CHECK(scar_bound_plan(&o, &p, NULL) == SCAR_ERANGE);
	o.c = 0.5;
	o.budget = 0;
	CHECK(scar_bound_plan(&o, &p, NULL) == SCAR_ERANGE);
	scar_bound_plan_release(NULL);
}

static struct scar_events *parse(const char *text)
{
	FILE *f = fmemopen((void *)(uintptr_t)text, strlen(text), "r");
	struct scar_events *ev = NULL;

	if (!f || scar_events_read(f, "test", &ev, NULL) < 0)
		ev = NULL;
	if (f)
		fclose(f);
	return ev;
}

#define HDR "{\"type\":\"header\",\"format\":\"scar-events\",\"version\":1,\"objective_higher_better\":false"

static void test_events(void)
{
	char ref[8192], pert[8192];
	size_t len = 0, plen = 0;
	struct scar_events *r, *p;
	struct scar_bound_stream st;
	struct scar_bound_check ck;
	struct scar_bound_check_opts co;
	struct scar_error err;

	/* ridge-like: exact c = 0.5, x(k) - x* = 4 * 0.5^k, objective = dist^2 */
	len += (size_t)snprintf(ref + len, sizeof(ref) - len, HDR ",\"contraction\":0.5}\n");
	plen += (size_t)snprintf(pert + plen, sizeof(pert) - plen, HDR ",\"contraction\":0.5}\n");
	for (int k = 0; k <= 12; k++) {
		double d = 4 * pow(0.5, k), s = 4 * pow(0.5, k);	/* step k: 8*0.5^k - 4*0.5^k */

		len += (size_t)snprintf(ref + len, sizeof(ref) - len,
					"{\"type\":\"iteration\",\"iter\":%d,\"objective\":%.17g,"
					"\"dist_opt\":%.17g%s%.17g}\n", k, d * d, d,
					k ? ",\"step_norm\":" : ",\"x\":", s);
	}
	/* perturbed: at T = 4 (dist 0.25) a delta of norm 0.25 doubles the distance */
	for (int k = 0; k <= 14; k++) {
		double d = k <= 4 ? 4 * pow(0.5, k) : 8 * pow(0.5, k);

		plen += (size_t)snprintf(pert + plen, sizeof(pert) - plen,
					 "{\"type\":\"iteration\",\"iter\":%d,\"objective\":%.17g,"
					 "\"dist_opt\":%.17g,\"step_norm\":1}\n", k, d * d, d);
		if (k == 4)
			plen += (size_t)snprintf(pert + plen, sizeof(pert) - plen,
						 "{\"type\":\"failure\",\"iter\":4}\n"
						 "{\"type\":\"recovery\",\"iter\":4,\"delta_norm\":0.25,\"new\":[]}\n"
						 "{\"type\":\"mystery\"}\n");
	}
	r = parse(ref);
	p = parse(pert);
	CHECK(r && p);
	if (!r || !p)
		return;
	CHECK_RC(scar_bound_fit_events(r, "ref", NULL, &st, NULL));
	CHECK_NEAR(st.c, 0.5, 0);
	CHECK(strcmp(st.c_source, "header") == 0);
	CHECK_NEAR(st.fit.c, 0.5, 1e-12);
	CHECK_NEAR(st.D, 4, 0);
	CHECK(strcmp(st.d_source, "dist_opt") == 0);
	CHECK(st.iterations == 13);

	/* the fit stops at the failure in the perturbed stream: 3 steps of 1 before it */
	CHECK_RC(scar_bound_fit_events(p, "pert", NULL, &st, NULL));
	CHECK(st.fit.stop == SCAR_BOUND_STOP_FAILURE);
	CHECK(st.iterations == 5);

	scar_bound_check_opts_init(&co);
	co.eps = 0.01;
	CHECK_RC(scar_bound_check_events(r, "ref", p, "pert", &co, &ck, NULL));
	CHECK(ck.npert == 1);
	/* rel = 0.25 / (0.5^4 * 4) = 1; iota = log2(2) = 1; observed: one iteration later */
	CHECK_NEAR(ck.bound.iota, 1, 1e-14);
	CHECK_NEAR(ck.cost.reference_iter, 12, 0);
	CHECK_NEAR(ck.cost.perturbed_iter, 13, 0);
	CHECK_NEAR(ck.cost.cost, 1, 0);
	CHECK(!ck.exceeded && !ck.undecided);
	/* K(0.01) = ceil(log2(8 / 0.01)) = 10; dist 8 * 0.5^k <= 0.01 first at k = 10 */
	CHECK_NEAR(ck.bound.k_max, 10, 0);
	CHECK_NEAR(ck.settle_eps, 10, 0);
	CHECK(ck.theorem == 1);
	/* the run follows its envelope exactly: 8 * 0.5^k against 0.5^k (4 + 0.25 / 0.5^4) */
	CHECK_NEAR(ck.envelope_max, 1, 1e-12);
	scar_bound_check_release(&ck);

	/* measured on dist_opt: the reference reaches 0.01 at 9 (4 / 2^9), the perturbed run at 10 */
	co.metric = SCAR_BOUND_METRIC_DIST;
	co.target = 0.01;
	CHECK_RC(scar_bound_check_events(r, "ref", p, "pert", &co, &ck, NULL));
	CHECK_NEAR(ck.cost.reference_iter, 9, 0);
	CHECK_NEAR(ck.cost.perturbed_iter, 10, 0);
	CHECK(!ck.exceeded);
	scar_bound_check_release(&ck);
	co.metric = SCAR_BOUND_METRIC_OBJECTIVE;
	co.target = NAN;

	/* an extra perturbation makes the bound larger */
	{
		struct scar_bound_pert x = { 0.125, 5 };

		co.extra = &x;
		co.nextra = 1;
		CHECK_RC(scar_bound_check_events(r, "ref", p, "pert", &co, &ck, NULL));
		CHECK(ck.npert == 2);
		CHECK_NEAR(ck.bound.iota, log(3) / log(2), 1e-14);
		scar_bound_check_release(&ck);
		co.extra = NULL;
		co.nextra = 0;
	}
	/* a target the reference never reaches is an error */
	co.target = 1e-20;
	scar_error_clear(&err);
	CHECK(scar_bound_check_events(r, "ref", p, "pert", &co, &ck, &err) == SCAR_ERANGE);
	scar_bound_check_release(&ck);
	scar_events_free(r);
	scar_events_free(p);

	/* failure without recovery */
	p = parse(HDR "}\n{\"type\":\"iteration\",\"iter\":0,\"objective\":1}\n{\"type\":\"failure\",\"iter\":0}\n");
	r = parse(ref);
	co.target = NAN;
	CHECK(p && r);
	if (p && r)
		CHECK(scar_bound_check_events(r, "ref", p, "pert", &co, &ck, NULL) == SCAR_EFORMAT);
	scar_events_free(r);
	scar_events_free(p);
}

int main(void)
{
	test_evaluate();
	test_t_quantile();
	test_fit();
	test_fit_edges();
	test_cost();
	test_plan();
	test_events();
	return unit_done("test-bound");
}
