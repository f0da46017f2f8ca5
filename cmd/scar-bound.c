/*
 * scar-bound - the iteration-cost bound of SCAR: evaluate it, fit c and D
 * from a training stream, hold an observed cost against it, plan checkpoints.
 *
 * `scar-bound COMMAND [options] [operands]`; each command is one cmd_*
 * function over scar/bound.h. The getopt_long tables are the one source of
 * options: --help, scar-bound(1) and the completions follow them.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scar/bound.h"
#include "scar/events.h"
#include "scar/file.h"
#include "cli.h"
#include "options.h"
#include "subcmd.h"

enum {
	OPT_BUDGET = 256, OPT_C, OPT_D, OPT_DELTA, OPT_EPS, OPT_FAILURE_RATE, OPT_FLOOR,
	OPT_ITERS, OPT_JSON, OPT_LOST_FRACTION, OPT_METRIC, OPT_SKIP, OPT_STEP, OPT_T, OPT_TARGET, OPT_WINDOW,
};

static const struct option evaluate_opts[] = {
	{ "c", required_argument, NULL, OPT_C },
	{ "D", required_argument, NULL, OPT_D },
	{ "delta", required_argument, NULL, OPT_DELTA },
	{ "eps", required_argument, NULL, OPT_EPS },
	{ "help", no_argument, NULL, 'h' },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "T", required_argument, NULL, OPT_T },
	{ NULL, 0, NULL, 0 },
};

static const struct option fit_opts[] = {
	{ "floor", required_argument, NULL, OPT_FLOOR },
	{ "help", no_argument, NULL, 'h' },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "skip", required_argument, NULL, OPT_SKIP },
	{ NULL, 0, NULL, 0 },
};

static const struct option check_opts[] = {
	{ "delta", required_argument, NULL, OPT_DELTA },
	{ "eps", required_argument, NULL, OPT_EPS },
	{ "floor", required_argument, NULL, OPT_FLOOR },
	{ "help", no_argument, NULL, 'h' },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "metric", required_argument, NULL, OPT_METRIC },
	{ "skip", required_argument, NULL, OPT_SKIP },
	{ "target", required_argument, NULL, OPT_TARGET },
	{ "window", required_argument, NULL, OPT_WINDOW },
	{ NULL, 0, NULL, 0 },
};

static const struct option cost_opts[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "target", required_argument, NULL, OPT_TARGET },
	{ "window", required_argument, NULL, OPT_WINDOW },
	{ NULL, 0, NULL, 0 },
};

static const struct option plan_opts[] = {
	{ "budget", required_argument, NULL, OPT_BUDGET },
	{ "c", required_argument, NULL, OPT_C },
	{ "D", required_argument, NULL, OPT_D },
	{ "failure-rate", required_argument, NULL, OPT_FAILURE_RATE },
	{ "help", no_argument, NULL, 'h' },
	{ "iters", required_argument, NULL, OPT_ITERS },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "lost-fraction", required_argument, NULL, OPT_LOST_FRACTION },
	{ "step", required_argument, NULL, OPT_STEP },
	{ NULL, 0, NULL, 0 },
};

static int cmd_check(int argc, char **argv);
static int cmd_cost(int argc, char **argv);
static int cmd_evaluate(int argc, char **argv);
static int cmd_fit(int argc, char **argv);
static int cmd_plan(int argc, char **argv);

static const struct cli_command commands[] = {
	{ "check", cmd_check,
	  "[--delta X@T]... [--eps E] [--floor F] [--help] [--json]\n"
	  "                        [--metric objective|dist_opt] [--skip N] [--target F]\n"
	  "                        [--window W] REFERENCE PERTURBED",
	  "The observed iteration cost of a perturbed run beside its bound; exit 1 when it exceeds it.",
	  "  --delta X@T     an extra perturbation of norm X after clock T (repeatable)\n"
	  "  --eps E         also check the theorem: dist_opt <= E from clock K(E) on\n"
	  "  --floor F       fit: noise floor relative to the largest step (default 1e-06)\n"
	  "  --help          show this help and exit\n"
	  "  --json          print one JSON object\n"
	  "  --metric M      measure reaching the target on objective (default) or dist_opt\n"
	  "  --skip N        fit: transient steps to drop (default: half the window)\n"
	  "  --target F      value to reach (default: the reference's final one)\n"
	  "  --window W      smooth objectives over W iterations (default 1)\n"
	  "c and D are those `scar-bound fit REFERENCE` reports; the perturbations are\n"
	  "PERTURBED's recovery records. One of the streams may be '-' (stdin).\n" },
	{ "cost", cmd_cost,
	  "[--help] [--json] [--target F] [--window W] REFERENCE PERTURBED",
	  "The iteration cost of a perturbed run against its reference, from any trainer's stream.",
	  "  --help          show this help and exit\n"
	  "  --json          print one JSON object\n"
	  "  --target F      value to reach (default: the reference's final one)\n"
	  "  --window W      smooth objectives over W iterations (default 1)\n"
	  "Measured as scar-train --cost measures it, from the perturbed run's last\n"
	  "recovery record on (else from the start). The streams need only the minimal\n"
	  "schema of scar-events(7): a header with objective_higher_better, iteration\n"
	  "records with iter and objective. One of the streams may be '-' (stdin).\n" },
	{ "evaluate", cmd_evaluate,
	  "--c C --D D [--delta X[@T]]... [--eps E] [--help] [--json] [--T T]",
	  "The bound for contraction C, distance D and perturbations of norm X after clock T.",
	  "  --c C           contraction rate, in (0, 1)\n"
	  "  --D D           distance ||x(0) - x*|| of the start from the optimum\n"
	  "  --delta X[@T]   a perturbation of norm X after clock T (default --T; repeatable)\n"
	  "  --eps E         also the iterations K(E) guaranteed to reach ||x - x*|| <= E\n"
	  "  --help          show this help and exit\n"
	  "  --json          print one JSON object\n"
	  "  --T T           clock of the perturbations without @T\n"
	  "Without --delta, reads one scar-diff JSON object (at most 4 MiB) on stdin: its\n"
	  "\"l2\" is the norm and its \"iteration_a\" the clock, unless --T is given.\n" },
	{ "fit", cmd_fit,
	  "[--floor F] [--help] [--json] [--skip N] [STREAM | -]",
	  "Estimate c and D from a scar-train event stream, with goodness of fit and a 95% interval.",
	  "  --floor F       noise floor relative to the largest step (default 1e-06)\n"
	  "  --help          show this help and exit\n"
	  "  --json          print one JSON object\n"
	  "  --skip N        transient steps to drop (default: half the window)\n"
	  "Only iteration records before the first failure are used. The header's exact\n"
	  "contraction (ridge) is used for c when present, and dist_opt at iteration 0\n"
	  "for D; the fit is reported beside them.\n" },
	{ "plan", cmd_plan,
	  "--budget B --c C [--D D] --failure-rate P [--help] [--iters N] [--json]\n"
	  "                       [--lost-fraction F] [--step S]",
	  "The checkpoint interval and partial fraction minimising the expected bound on rework.",
	  "  --budget B      rows fraction written per iteration, in [1e-4, 1] (1/10 = a full\n"
	  "                  checkpoint every 10 iterations)\n"
	  "  --c C           contraction rate, in (0, 1)\n"
	  "  --D D           distance ||x(0) - x*|| (used with --step; alone it cancels out,\n"
	  "                  with a warning)\n"
	  "  --failure-rate P  failures per iteration, in [0, 1]\n"
	  "  --help          show this help and exit\n"
	  "  --iters N       average over failures at clocks 1..N (default: steady state)\n"
	  "  --json          print one JSON object with the whole curve\n"
	  "  --lost-fraction F  fraction of rows a failure loses (default 1)\n"
	  "  --step S        first step ||x(1) - x(0)|| (default (1 - c) D, as fit bounds D)\n"
	  "Prints a few settings scar-train can run (1/B whole, the interval a multiple of\n"
	  "the partial one) with their predicted rework, the recommendation and why.\n"
	  "The model spreads drift evenly over the rows: it cannot credit prioritized\n"
	  "checkpoints (scar-bound(1) compares it with measured costs).\n" },
};
/* ---- output ---- */

static void json_put(json_t *o, const char *k, json_t *v)
{
	if (!v || json_object_set_new(o, k, v) != 0)
		cli_die("out of memory");
}

/* A real, or null when it is not finite (JSON has no infinity). */
static json_t *jnum(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

/* A count that is a whole number: an integer in JSON. */
static json_t *jint(double v)
{
	return isfinite(v) && fabs(v) < 9e15 ? json_integer((json_int_t)v) : json_null();
}

/*
 * The shortest decimal that reads back as v (at most 17 digits), so 0.9
 * prints as 0.9 and nothing is lost. Eight rotating buffers: a printf call
 * may use up to eight.
 */
static const char *num(double v)
{
	static char buf[8][40];
	static int next;
	char *b = buf[next++ & 7];

	for (int prec = 6; prec <= 17; prec++) {
		snprintf(b, 40, "%.*g", prec, v);
		if (strtod(b, NULL) == v || !isfinite(v))
			break;
	}
	return b;
}

static void print_json(json_t *o)
{
	if (json_dumpf(o, stdout, JSON_COMPACT | JSON_REAL_PRECISION(17)) != 0)
		cli_flush_stdout();
	putchar('\n');
	json_decref(o);
}

static void put_line(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put_line(const char *key, const char *fmt, ...)
{
	va_list ap;

	printf("%-18s ", key);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* ---- input ---- */

static struct scar_events *read_stream(const char *path)
{
	struct scar_events *ev;
	struct scar_error err;
	FILE *f;
	const char *name = cli_is_stdio(path) ? "-" : path;
	int rc;

	scar_error_clear(&err);
	if (cli_is_stdio(path)) {
		if (isatty(STDIN_FILENO))
			cli_usage_error("no input: give an event stream, or pipe one into stdin");
		f = stdin;
	} else {
		/* never waits for a FIFO's writer: one without reads as empty */
		int fd = scar_open_input(path, 0, &err);

		if (fd < 0)
			cli_die_error(&err);
		if (!(f = fdopen(fd, "r"))) {
			close(fd);
			cli_die("cannot open '%s': %s", path, strerror(errno));
		}
	}
	rc = scar_events_read(f, name, &ev, &err);
	if (f != stdin)
		fclose(f);
	if (rc) {
		if (!err.file[0])
			snprintf(err.file, sizeof(err.file), "%s", name);
		cli_die_error(&err);
	}
	return ev;
}

/* --delta X[@T]; T < 0 means "not given" */
static struct scar_bound_pert parse_delta(const char *s)
{
	struct scar_bound_pert p;
	const char *at = strchr(s, '@');

	if (at) {
		char num[128];
		size_t n = (size_t)(at - s);

		if (n == 0 || n >= sizeof(num))
			cli_usage_error("option '--delta': '%s' is not X@T", s);
		memcpy(num, s, n);
		num[n] = 0;
		p.norm = cli_parse_double("--delta", num, 0, 1e300);
		p.iter = (double)cli_parse_u64("--delta", at + 1, 0, UINT64_C(1) << 53);
	} else {
		p.norm = cli_parse_double("--delta", s, 0, 1e300);
		p.iter = -1;
	}
	return p;
}

struct pert_list {
	struct scar_bound_pert *v;
	size_t n;
};

static void pert_push(struct pert_list *l, struct scar_bound_pert p)
{
	struct scar_bound_pert *nv = realloc(l->v, (l->n + 1) * sizeof(*nv));

	if (!nv)
		cli_die("out of memory");
	l->v = nv;
	l->v[l->n++] = p;
}

static json_t *pert_json(const struct scar_bound_pert *p, size_t n)
{
	json_t *a = json_array();

	if (!a)
		cli_die("out of memory");
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_object();

		if (!o)
			cli_die("out of memory");
		json_put(o, "norm", jnum(p[i].norm));
		json_put(o, "iter", jint(p[i].iter));
		if (json_array_append_new(a, o))
			cli_die("out of memory");
	}
	return a;
}

/* ---- evaluate ---- */

/* scar-diff's JSON on stdin: "l2" and "iteration_a", at the top or under "overall" */
static void read_diff_json(struct pert_list *l, double T)
{
	struct scar_error err;
	json_t *o, *l2, *it, *sub;
	struct scar_bound_pert p;

	if (isatty(STDIN_FILENO))
		cli_usage_error("no perturbation: give --delta, or pipe scar-diff's JSON into stdin");
	/* one object, at most SCAR_JSON_DOC_MAX bytes: a second one is refused, not dropped */
	scar_error_clear(&err);
	if (scar_json_read_doc(stdin, "-", SCAR_JSON_DOC_MAX, &o, &err)) {
		if (err.code == SCAR_EFORMAT && strncmp(err.msg, "text after", 10) == 0)
			snprintf(err.msg, sizeof(err.msg), "text after the JSON object on stdin: "
				 "evaluate takes one scar-diff result (use --delta for several)");
		/* a checkpoint or array piped in where its diff was meant */
		if (err.code == SCAR_EFORMAT && strstr(err.msg, ", not JSON text")) {
			char m[sizeof(err.msg)];

			snprintf(m, sizeof(m), "%s", err.msg);
			snprintf(err.msg, sizeof(err.msg), "%.*s, not scar-diff's JSON: pipe "
				 "'scar-diff --json A B' into evaluate", (int)(strlen(m) -
				 strlen(", not JSON text")), m);
		}
		cli_die_error(&err);
	}
	if (!json_is_object(o))
		cli_die("'-': not scar-diff's JSON: not an object");
	l2 = json_object_get(o, "l2");
	sub = json_object_get(o, "overall");
	if (!json_is_number(l2) && json_is_object(sub))
		l2 = json_object_get(sub, "l2");
	if (!json_is_number(l2))
		cli_die("'-': scar-diff's JSON has no numeric \"l2\"");
	it = json_object_get(o, "iteration_a");
	p.norm = json_number_value(l2);
	if (T >= 0)
		p.iter = T;
	else if (json_is_number(it))
		p.iter = json_number_value(it);
	else
		cli_die("'-': no \"iteration_a\" in scar-diff's JSON; give --T");
	if (!(p.norm >= 0) || !(p.iter >= 0))
		cli_die("'-': \"l2\" or \"iteration_a\" is negative");
	pert_push(l, p);
	json_decref(o);
}

static int cmd_evaluate(int argc, char **argv)
{
	double c = NAN, D = NAN, eps = 0, T = -1;
	int json = 0, opt;
	struct pert_list l = { NULL, 0 };
	struct scar_bound_eval e;
	struct scar_error err;

	while ((opt = cli_command_getopt(argc, argv, ":h", evaluate_opts)) != -1) {
		switch (opt) {
		case OPT_C: c = cli_parse_double("--c", optarg, 0, 1); break;
		case OPT_D: D = cli_parse_double("--D", optarg, 0, 1e300); break;
		case OPT_DELTA: pert_push(&l, parse_delta(optarg)); break;
		case OPT_EPS: eps = cli_parse_double("--eps", optarg, 1e-300, 1e300); break;
		case OPT_JSON: json = 1; break;
		case OPT_T: T = (double)cli_parse_u64("--T", optarg, 0, UINT64_C(1) << 53); break;
		}
	}
	if (optind < argc)
		cli_usage_error("unexpected operand '%s'", argv[optind]);
	if (isnan(c))
		cli_usage_error("missing --c");
	if (isnan(D))
		cli_usage_error("missing --D");
	if (!(c > 0 && c < 1))
		cli_usage_error("option '--c': %.17g is not in (0, 1)", c);
	if (!(D > 0))
		cli_usage_error("option '--D': %.17g is not positive", D);
	if (l.n == 0)
		read_diff_json(&l, T);
	for (size_t i = 0; i < l.n; i++) {
		if (l.v[i].iter >= 0)
			continue;
		if (T < 0)
			cli_usage_error("option '--delta': %.17g has no @T and there is no --T",
					l.v[i].norm);
		l.v[i].iter = T;
	}
	scar_error_clear(&err);
	if (scar_bound_evaluate(c, D, l.v, l.n, eps, &e, &err))
		cli_die_error(&err);
	if (json) {
		json_t *o = json_object();

		if (!o)
			cli_die("out of memory");
		json_put(o, "c", json_real(c));
		json_put(o, "D", json_real(D));
		json_put(o, "perturbations", pert_json(l.v, l.n));
		json_put(o, "relative", jnum(e.rel));
		json_put(o, "log_envelope", jnum(e.log_envelope));
		json_put(o, "iota", jnum(e.iota));
		json_put(o, "eps", eps > 0 ? json_real(eps) : json_null());
		json_put(o, "k_unperturbed", jint(e.k_unperturbed));
		json_put(o, "k_max", jint(e.k_max));
		print_json(o);
	} else {
		put_line("c", "%s", num(c));
		put_line("D", "%s", num(D));
		for (size_t i = 0; i < l.n; i++)
			put_line("delta", "%s at iteration %.0f", num(l.v[i].norm), l.v[i].iter);
		put_line("relative", "%s", num(e.rel));
		put_line("iota_bound", "%s", num(e.iota));
		if (eps > 0) {
			put_line("eps", "%s", num(eps));
			put_line("k_unperturbed", "%.0f", e.k_unperturbed);
			put_line("k_max", "%.0f", e.k_max);
		}
	}
	free(l.v);
	return 0;
}

/* ---- fit ---- */

static void fit_options(int opt, struct scar_bound_fit_opts *fo)
{
	if (opt == OPT_FLOOR)
		fo->floor = cli_parse_double("--floor", optarg, 0, 0.999999);
	else if (opt == OPT_SKIP)
		fo->skip = (long)cli_parse_u64("--skip", optarg, 0, 1000000000);
}

static json_t *fit_json(const struct scar_bound_stream *s)
{
	json_t *o = json_object(), *f = json_object();
	const struct scar_bound_fit *ft = &s->fit;

	if (!o || !f)
		cli_die("out of memory");
	json_put(o, "c", json_real(s->c));
	json_put(o, "c_source", json_string(s->c_source));
	json_put(o, "D", json_real(s->D));
	json_put(o, "d_source", json_string(s->d_source));
	json_put(o, "header_contraction", jnum(s->header_contraction));
	json_put(o, "dist_opt0", jnum(s->dist_opt0));
	json_put(o, "iterations", json_integer((json_int_t)s->iterations));
	json_put(f, "ok", json_boolean(s->fit_ok));
	json_put(f, "n", json_integer((json_int_t)ft->n));
	json_put(f, "skipped", json_integer((json_int_t)ft->skipped));
	json_put(f, "k_first", ft->n ? jint(ft->k_first) : json_null());
	json_put(f, "k_last", ft->n ? jint(ft->k_last) : json_null());
	json_put(f, "stop", json_string(scar_bound_stop_name(ft->stop)));
	json_put(f, "c", s->fit_ok ? jnum(ft->c) : json_null());
	json_put(f, "c_lo", s->fit_ok ? jnum(ft->c_lo) : json_null());
	json_put(f, "c_hi", s->fit_ok ? jnum(ft->c_hi) : json_null());
	json_put(f, "slope", s->fit_ok ? jnum(ft->slope) : json_null());
	json_put(f, "se_slope", s->fit_ok ? jnum(ft->se_slope) : json_null());
	json_put(f, "r2", s->fit_ok ? jnum(ft->r2) : json_null());
	json_put(f, "s0", jnum(ft->s0));
	json_put(f, "d_upper", s->fit_ok ? jnum(ft->d_upper) : json_null());
	json_put(f, "d_upper_hi", s->fit_ok ? jnum(ft->d_upper_hi) : json_null());
	json_put(o, "fit", f);
	return o;
}

static void fit_text(const struct scar_bound_stream *s)
{
	const struct scar_bound_fit *f = &s->fit;

	if (strcmp(s->c_source, "header") == 0)
		put_line("c", "%s (exact, from the stream's header)", num(s->c));
	else
		put_line("c", "%s (fitted)", num(s->c));
	if (s->fit_ok) {
		put_line("fit_c", "%s, 95%% interval [%s, %s]", num(f->c), num(f->c_lo), num(f->c_hi));
		put_line("fit_r2", "%s", num(f->r2));
		put_line("fit_se_log_c", "%s", num(f->se_slope));
	} else {
		put_line("fit_c", "none (too few step norms in the window)");
	}
	put_line("fit_window", "iterations %.0f..%.0f, %zu points (%zu transient dropped), ended by %s",
		 f->k_first, f->k_last, f->n, f->skipped, scar_bound_stop_name(f->stop));
	if (strcmp(s->d_source, "dist_opt") == 0)
		put_line("D", "%s (exact, dist_opt at iteration 0)", num(s->D));
	else
		put_line("D", "%s (upper bound s0 / (1 - c))", num(s->D));
	if (s->fit_ok && isfinite(f->d_upper) && isfinite(f->d_upper_hi))
		put_line("fit_D_upper", "%s (s0 / (1 - fitted c); %s with the interval's upper c)",
			 num(f->d_upper), num(f->d_upper_hi));
	else if (s->fit_ok && isfinite(f->d_upper))
		put_line("fit_D_upper", "%s (s0 / (1 - fitted c); none with the interval's upper c,"
			 " which is >= 1)", num(f->d_upper));
	put_line("iterations", "%zu records used", s->iterations);
}

/* A header contraction the steps contradict is used as documented, but not silently. */
static void warn_c(const struct scar_bound_stream *s, const char *name)
{
	if (s->c_disagrees)
		cli_warn("'%s': the header's contraction %.17g is below the fit's 95%% interval "
			 "[%.17g, %.17g]: the steps shrink more slowly than it says", name,
			 s->header_contraction, s->fit.c_lo, s->fit.c_hi);
}

static int cmd_fit(int argc, char **argv)
{
	struct scar_bound_fit_opts fo;
	struct scar_bound_stream s;
	struct scar_events *ev;
	struct scar_error err;
	const char *path;
	int json = 0, opt;

	scar_bound_fit_opts_init(&fo);
	while ((opt = cli_command_getopt(argc, argv, ":h", fit_opts)) != -1) {
		if (opt == OPT_JSON)
			json = 1;
		else
			fit_options(opt, &fo);
	}
	if (argc - optind > 1)
		cli_usage_error("unexpected operand '%s'", argv[optind + 1]);
	path = optind < argc ? argv[optind] : "-";
	ev = read_stream(path);
	scar_error_clear(&err);
	if (scar_bound_fit_events(ev, cli_is_stdio(path) ? "-" : path, &fo, &s, &err))
		cli_die_error(&err);
	warn_c(&s, cli_is_stdio(path) ? "-" : path);
	if (json)
		print_json(fit_json(&s));
	else
		fit_text(&s);
	scar_events_free(ev);
	return 0;
}

/* ---- check ---- */

/*
 * The reference must be an unperturbed run of the perturbed run's model,
 * shards and configuration: the checks scar-train --reference makes.
 */
static void check_pair(const struct scar_events *ref, const char *rn,
		       const struct scar_events *pert, const char *pn)
{
	const json_t *ph = pert->records[0];
	struct scar_error err;

	scar_error_clear(&err);
	if (scar_events_unperturbed((const json_t *const *)ref->records, ref->n, &err)) {
		snprintf(err.file, sizeof(err.file), "%s", rn);
		cli_die_error(&err);
	}
	if (scar_events_same_run(ref->records[0], json_string_value(json_object_get(ph, "model")),
				 json_object_get(ph, "shards"), json_object_get(ph, "config"), &err))
		cli_die("'%s' is not a reference for '%s': %s", rn, pn, err.msg);
}

static const char *num_or_dash(double v)
{
	return isnan(v) ? "-" : num(v);
}

/* The auto recoveries of a check: an array, empty when the run chose none. */
static json_t *auto_json(const struct scar_bound_check *ck)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < ck->nauto; i++) {
		const struct scar_bound_auto *au = &ck->autos[i];
		json_t *cands = json_array();

		for (size_t j = 0; cands && j < au->n; j++)
			json_array_append_new(cands, json_pack("{s:s, s:o, s:o, s:o}",
				"strategy", au->cand[j].strategy, "delta_est", jnum(au->cand[j].delta_est),
				"predicted_cost", jnum(au->cand[j].predicted), "bound", jnum(au->cand[j].bound)));
		json_array_append_new(a, json_pack("{s:o, s:s, s:o}", "iter", jint(au->iter),
						   "choice", au->choice, "candidates", cands));
	}
	if (!a)
		cli_die("out of memory");
	return a;
}

/*
 * The REFERENCE and PERTURBED operands of check and cost, read, the
 * reference checked as scar-train --reference checks it (check_pair).
 */
static void read_pair(const char *cmd, int argc, char **argv, const char **rp, const char **pp,
		      struct scar_events **ref, struct scar_events **pert)
{
	if (argc - optind < 2)
		cli_usage_error("%s needs REFERENCE and PERTURBED streams", cmd);
	if (argc - optind > 2)
		cli_usage_error("unexpected operand '%s'", argv[optind + 2]);
	*rp = argv[optind];
	*pp = argv[optind + 1];
	if (cli_is_stdio(*rp) && cli_is_stdio(*pp))
		cli_usage_error("only one of REFERENCE and PERTURBED can be '-'");
	*ref = read_stream(*rp);
	*pert = read_stream(*pp);
	check_pair(*ref, cli_is_stdio(*rp) ? "-" : *rp, *pert, cli_is_stdio(*pp) ? "-" : *pp);
}

/* cost: the iteration cost alone, for streams of any trainer (no fit, no bound). */
static int cmd_cost(int argc, char **argv)
{
	struct scar_bound_cost cost;
	struct scar_events *ref, *pert;
	struct scar_error err;
	double target = NAN;
	size_t window = 1;
	int json = 0, opt;
	const char *rp, *pp;

	while ((opt = cli_command_getopt(argc, argv, ":h", cost_opts)) != -1) {
		switch (opt) {
		case OPT_JSON: json = 1; break;
		case OPT_TARGET: target = cli_parse_double("--target", optarg, -1e300, 1e300); break;
		case OPT_WINDOW: window = (size_t)cli_parse_u64("--window", optarg, 1, 1000000); break;
		}
	}
	read_pair("cost", argc, argv, &rp, &pp, &ref, &pert);
	scar_error_clear(&err);
	if (scar_bound_cost_events(ref, rp, pert, pp, target, window, &cost, &err))
		cli_die_error(&err);
	if (json) {
		json_t *o = json_object();

		if (!o)
			cli_die("out of memory");
		json_put(o, "target", jnum(cost.target));
		json_put(o, "window", json_integer((json_int_t)window));
		json_put(o, "reference_iter", jint(cost.reference_iter));
		json_put(o, "perturbed_iter", jint(cost.perturbed_iter));
		json_put(o, "cost", jint(cost.cost));
		json_put(o, "cost_interp", jnum(cost.cost_interp));
		json_put(o, "censored", json_boolean(cost.censored));
		print_json(o);
	} else {
		put_line("target", "objective %s (window %zu)", num(cost.target), window);
		put_line("reference_iter", "%.0f", cost.reference_iter);
		put_line("perturbed_iter", "%.0f%s", cost.perturbed_iter,
			 cost.censored ? " (censored: not reached by the end)" : "");
		put_line("cost", "%s%.0f", cost.censored ? ">= " : "", cost.cost);
		put_line("cost_interp", "%s", num(cost.cost_interp));
	}
	if (cost.censored)
		cli_warn("'%s' never reaches the target %.17g: the cost is at least %.0f", pp,
			 cost.target, cost.cost);
	scar_events_free(ref);
	scar_events_free(pert);
	return 0;
}

static int cmd_check(int argc, char **argv)
{
	struct scar_bound_check_opts co;
	struct scar_bound_check ck;
	struct scar_events *ref, *pert;
	struct scar_error err;
	struct pert_list extra = { NULL, 0 };
	int json = 0, opt, status;
	const char *rp, *pp;

	scar_bound_check_opts_init(&co);
	while ((opt = cli_command_getopt(argc, argv, ":h", check_opts)) != -1) {
		switch (opt) {
		case OPT_DELTA: {
			struct scar_bound_pert p = parse_delta(optarg);

			if (p.iter < 0)
				cli_usage_error("option '--delta': '%s' needs @T here", optarg);
			pert_push(&extra, p);
			break;
		}
		case OPT_EPS: co.eps = cli_parse_double("--eps", optarg, 1e-300, 1e300); break;
		case OPT_JSON: json = 1; break;
		case OPT_METRIC:
			if (strcmp(optarg, "objective") == 0)
				co.metric = SCAR_BOUND_METRIC_OBJECTIVE;
			else if (strcmp(optarg, "dist_opt") == 0)
				co.metric = SCAR_BOUND_METRIC_DIST;
			else
				cli_usage_error("option '--metric': '%s' is not objective or dist_opt",
						optarg);
			break;
		case OPT_TARGET: co.target = cli_parse_double("--target", optarg, -1e300, 1e300); break;
		case OPT_WINDOW: co.window = (size_t)cli_parse_u64("--window", optarg, 1, 1000000); break;
		default: fit_options(opt, &co.fit); break;
		}
	}
	read_pair("check", argc, argv, &rp, &pp, &ref, &pert);
	co.extra = extra.v;
	co.nextra = extra.n;
	scar_error_clear(&err);
	if (scar_bound_check_events(ref, rp, pert, pp, &co, &ck, &err))
		cli_die_error(&err);
	warn_c(&ck.ref, cli_is_stdio(rp) ? "-" : rp);
	status = ck.exceeded || ck.theorem == 0 ? EXIT_NO : 0;
	if (ck.undecided)
		status = EXIT_TROUBLE;
	if (json) {
		json_t *o = json_object();

		if (!o)
			cli_die("out of memory");
		json_put(o, "c", json_real(ck.ref.c));
		json_put(o, "c_source", json_string(ck.ref.c_source));
		json_put(o, "D", json_real(ck.ref.D));
		json_put(o, "d_source", json_string(ck.ref.d_source));
		json_put(o, "perturbations", pert_json(ck.pert, ck.npert));
		json_put(o, "relative", jnum(ck.bound.rel));
		json_put(o, "bound", jnum(ck.bound.iota));
		json_put(o, "bound_whole", jint(ceil(ck.bound.iota - 1e-12)));
		json_put(o, "metric", json_string(co.metric ? "dist_opt" : "objective"));
		json_put(o, "target", jnum(ck.cost.target));
		json_put(o, "window", json_integer((json_int_t)co.window));
		json_put(o, "reference_iter", jint(ck.cost.reference_iter));
		json_put(o, "perturbed_iter", jint(ck.cost.perturbed_iter));
		json_put(o, "observed", jint(ck.cost.cost));
		json_put(o, "censored", json_boolean(ck.cost.censored));
		json_put(o, "exceeded", json_boolean(ck.exceeded));
		json_put(o, "ratio", ck.cost.cost > 0 ? jnum(ck.bound.iota / ck.cost.cost) : json_null());
		json_put(o, "envelope_max", jnum(ck.envelope_max));
		json_put(o, "envelope_iter", jint(ck.envelope_iter));
		json_put(o, "eps", co.eps > 0 ? json_real(co.eps) : json_null());
		json_put(o, "k_max", jint(ck.bound.k_max));
		json_put(o, "settle_eps", jint(ck.settle_eps));
		json_put(o, "theorem", ck.theorem < 0 ? json_null() : json_boolean(ck.theorem));
		json_put(o, "auto", auto_json(&ck));
		print_json(o);
	} else {
		put_line("c", "%s (%s)", num(ck.ref.c), ck.ref.c_source);
		put_line("D", "%s (%s)", num(ck.ref.D), ck.ref.d_source);
		for (size_t i = 0; i < ck.npert; i++)
			put_line("delta", "%s at iteration %.0f", num(ck.pert[i].norm), ck.pert[i].iter);
		put_line("target", "%s %s (window %zu)", co.metric ? "dist_opt" : "objective",
			 num(ck.cost.target), co.window);
		put_line("reference_iter", "%.0f", ck.cost.reference_iter);
		put_line("perturbed_iter", "%.0f%s", ck.cost.perturbed_iter,
			 ck.cost.censored ? " (censored: not reached by the end)" : "");
		put_line("observed", "%s%.0f", ck.cost.censored ? ">= " : "", ck.cost.cost);
		put_line("bound", "%s (whole iterations: %.0f)", num(ck.bound.iota),
			 ceil(ck.bound.iota - 1e-12));
		put_line("verdict", "%s", ck.exceeded ? "observed cost exceeds the bound"
			 : ck.undecided ? "undecided (censored below the bound)"
			 : "within the bound");
		if (!isnan(ck.envelope_max))
			put_line("envelope_max", "%s at iteration %.0f", num(ck.envelope_max),
				 ck.envelope_iter);
		for (size_t i = 0; i < ck.nauto; i++) {
			const struct scar_bound_auto *a = &ck.autos[i];

			put_line("auto", "at iteration %.0f chose %s", a->iter, a->choice);
			for (size_t j = 0; j < a->n; j++)
				put_line("  candidate", "%-8s delta_est %s, predicted %s, bound %s",
					 a->cand[j].strategy, num_or_dash(a->cand[j].delta_est),
					 num_or_dash(a->cand[j].predicted), num_or_dash(a->cand[j].bound));
		}
		if (co.eps > 0) {
			put_line("k_max", "%.0f (eps %s)", ck.bound.k_max, num(co.eps));
			if (ck.theorem < 0 && isnan(ck.settle_eps))
				put_line("theorem", "unchecked (no dist_opt in the perturbed stream)");
			else
				put_line("theorem", "%s (settles at %.0f)",
					 ck.theorem == 1 ? "holds" : ck.theorem == 0 ? "VIOLATED"
					 : "undecided (stream ends before K)", ck.settle_eps);
		}
	}
	if (ck.undecided)
		cli_warn("'%s' never reaches the target %.17g: the observed cost is at least %.0f",
			 pp, ck.cost.target, ck.cost.cost);
	if (ck.theorem == 0)
		cli_warn("'%s' violates the theorem: dist_opt > %.17g after K = %.0f iterations",
			 pp, co.eps, ck.bound.k_max);
	scar_bound_check_release(&ck);
	scar_events_free(ref);
	scar_events_free(pert);
	free(extra.v);
	return status;
}

/* ---- plan ---- */

/* v as people write it: "1/8" when 1/v is a whole number, else 3 significant digits. */
static const char *frac(double v)
{
	static char buf[4][40];
	static int next;
	char *b = buf[next++ & 3];
	double inv = 1 / v;

	if (v > 0 && v < 1 && fabs(inv - round(inv)) <= 1e-9 * inv && inv < 1e15)
		snprintf(b, 40, "1/%.0f", round(inv));
	else
		snprintf(b, 40, "%.3g", v);
	return b;
}

/*
 * A predicted number: 3 significant digits are all the model is good for,
 * without an exponent from 1e-4 to 1e6 (8740, not 8.74e+03; 7500 for 7496)
 * and without trailing zeros (4.5, not 4.50).
 */
static const char *sig3(double v)
{
	static char buf[8][40];
	static int next;
	char *b = buf[next++ & 7];
	double a = fabs(v);

	if (a >= 1e-4 && a < 1e6) {
		int dec = 2 - (int)floor(log10(a));
		char *dot;

		if (dec < 0) {	/* 7496 -> 7500 */
			double p = pow(10, -dec);

			v = round(v / p) * p;
			dec = 0;
		}
		snprintf(b, 40, "%.*f", dec, v);
		if ((dot = strchr(b, '.'))) {
			char *e = b + strlen(b);

			while (e > dot + 1 && e[-1] == '0')
				*--e = 0;
			if (e == dot + 1)
				*dot = 0;
		}
	} else {
		snprintf(b, 40, "%.3g", v);
	}
	return b;
}

/*
 * The scar-train options that write candidate p, or "" when none can
 * (only the runnable points: a whole cycle C = 1/B that p.every divides).
 */
static void scar_train_flags(char *buf, size_t n, const struct scar_bound_plan *pl,
			     const struct scar_bound_plan_point *p)
{
	buf[0] = 0;
	if (!p->runnable)
		return;
	if (p->every == pl->cycle)
		snprintf(buf, n, "--policy full --interval %llu", (unsigned long long)p->every);
	else
		snprintf(buf, n, "--policy round-robin --interval %llu --fraction 1/%llu",
			 (unsigned long long)pl->cycle, (unsigned long long)(pl->cycle / p->every));
}

static json_t *point_json(const struct scar_bound_plan_point *p)
{
	json_t *o = json_object();

	if (!o)
		cli_die("out of memory");
	json_put(o, "every", json_integer((json_int_t)p->every));
	json_put(o, "fraction", json_real(p->fraction));
	json_put(o, "mean_rho", jnum(p->mean_rho));
	json_put(o, "iota", jnum(p->iota));
	json_put(o, "rework", jnum(p->rework));
	json_put(o, "runnable", json_boolean(p->runnable));
	return o;
}

#define PLAN_ROWS 5	/* candidates in the text table, besides the baseline */

/*
 * Which candidates the text table shows: the recommendation, the full
 * checkpoint, the smallest partial one, and the runnable ones of least
 * rework up to PLAN_ROWS; in order of every, largest first. Returns how
 * many of pl->points' indices it put in rows.
 */
static size_t plan_rows(const struct scar_bound_plan *pl, size_t *rows)
{
	size_t n = 0, full = pl->n - 1;

	rows[n++] = pl->best;
	if (full != pl->best)
		rows[n++] = full;
	if (pl->n > 1 && pl->best != 0 && full != 0)
		rows[n++] = 0;
	while (n < PLAN_ROWS) {
		size_t pick = pl->n;

		for (size_t i = 0; i < pl->n; i++) {
			int taken = 0;

			for (size_t k = 0; k < n; k++)
				taken |= rows[k] == i;
			if (taken || (pl->cycle && !pl->points[i].runnable))
				continue;
			if (pick == pl->n || pl->points[i].iota < pl->points[pick].iota)
				pick = i;
		}
		if (pick == pl->n)
			break;
		rows[n++] = pick;
	}
	for (size_t i = 1; i < n; i++)	/* by every, descending (indices are in every's order) */
		for (size_t k = i; k > 0 && rows[k] > rows[k - 1]; k--) {
			size_t t = rows[k];

			rows[k] = rows[k - 1];
			rows[k - 1] = t;
		}
	return n;
}

/* "every iteration", "every 10 iterations" (four rotating buffers) */
static const char *every_str(uint64_t n)
{
	static char buf[4][48];
	static int next;
	char *b = buf[next++ & 3];

	if (n == 1)
		snprintf(b, 48, "every iteration");
	else
		snprintf(b, 48, "every %llu iterations", (unsigned long long)n);
	return b;
}

/* A paragraph of text in lines of at most 78 columns, the later ones indented by two. */
static void put_wrapped(const char *text)
{
	size_t col = 0;

	while (*text) {
		size_t w = strcspn(text, " ");

		if (col && col + 1 + w > 78) {
			fputs("\n  ", stdout);
			col = 2;
		} else if (col) {
			putchar(' ');
			col++;
		}
		fwrite(text, 1, w, stdout);
		col += w;
		text += w;
		text += strspn(text, " ");
	}
	putchar('\n');
}

static void plan_text(const struct scar_bound_plan_opts *po, const struct scar_bound_plan *pl,
		      const char *flags)
{
	const struct scar_bound_plan_point *b = &pl->points[pl->best], *part = NULL;
	const struct scar_bound_plan_point *full = &pl->points[pl->n - 1];
	size_t rows[PLAN_ROWS], n = plan_rows(pl, rows);
	char label[PLAN_ROWS + 1][64], para[1024], roll[64];
	size_t w = strlen("every 10, 1/10 of the rows");
	int lost_all = po->lost_fraction >= 1;

	for (size_t i = 0; i < pl->n; i++) {
		const struct scar_bound_plan_point *p = &pl->points[i];

		if (p->fraction < 1 && (p->runnable || !pl->cycle) && (!part || p->iota < part->iota))
			part = p;
	}
	snprintf(para, sizeof(para), "# c %s, %s%s the rows lost per failure, %s failures per "
		 "iteration, %s; every setting writes %s%s the rows per iteration", num(po->c),
		 lost_all ? "all" : frac(po->lost_fraction), lost_all ? "" : " of",
		 num(po->fail_rate), po->iters ? "failures at clocks 1..iters" : "steady state",
		 po->budget >= 1 ? "all" : frac(po->budget), po->budget >= 1 ? "" : " of");
	put_wrapped(para);
	/* the labels first: the column is as wide as the longest */
	for (size_t k = 0; k <= n; k++) {
		const struct scar_bound_plan_point *p = k < n ? &pl->points[rows[k]] : &pl->traditional;

		if (k == n)
			snprintf(label[k], sizeof(label[k]), "every %llu, full rollback",
				 (unsigned long long)p->every);
		else if (p->fraction >= 1)
			snprintf(label[k], sizeof(label[k]), "every %llu, all rows",
				 (unsigned long long)p->every);
		else
			snprintf(label[k], sizeof(label[k]), "every %llu, %s of the rows",
				 (unsigned long long)p->every, frac(p->fraction));
		if (strlen(label[k]) > w)
			w = strlen(label[k]);
	}
	printf("%-*s %18s %18s\n", (int)w, "checkpoint", "rework per failure",
	       po->iters ? "over the run" : "per iteration");
	for (size_t k = 0; k <= n; k++) {
		const struct scar_bound_plan_point *p = k < n ? &pl->points[rows[k]] : &pl->traditional;

		printf("%-*s %18s %18s%s\n", (int)w, label[k], sig3(p->iota), sig3(p->rework),
		       k == n ? "  (traditional)" : rows[k] == pl->best ? "  <- recommended" : "");
	}

	if (b->fraction >= 1)
		printf("recommended: full checkpoints %s%s\n", every_str(b->every),
		       lost_all ? "" : ", restoring only the lost rows");
	else
		printf("recommended: %s of the rows %s, restoring only the lost rows\n",
		       frac(b->fraction), every_str(b->every));
	if (flags[0])
		printf("  scar-train %s\n", flags);
	else
		printf("  (no scar-train setting: its schedules need a whole 1/budget, here %s)\n",
		       sig3(1 / po->budget));
	/* a full rollback is worth naming only when it differs from restoring the lost rows */
	snprintf(roll, sizeof(roll), " and %s for a full rollback", sig3(pl->traditional.iota));
	if (lost_all)
		roll[0] = 0;
	if (b->fraction >= 1 && part)
		snprintf(para, sizeof(para), "why: under this model, which spreads drift evenly over "
			 "the rows, the rows a partial schedule saved longest ago dominate the "
			 "perturbation, so full checkpoints bound the rework lowest (%s iterations per "
			 "failure against %s for the best partial setting%s)", sig3(b->iota),
			 sig3(part->iota), roll);
	else if (b->fraction >= 1)
		snprintf(para, sizeof(para), "why: a budget of %s leaves no partial setting to "
			 "compare (%s iterations per failure%s)", po->budget >= 1 ? "1" : frac(po->budget),
			 sig3(b->iota), roll);
	else
		snprintf(para, sizeof(para), "why: failures come before full checkpoints %s would "
			 "have saved the rows (%s iterations per failure against %s for full "
			 "checkpoints%s)", every_str(full->every), sig3(b->iota), sig3(full->iota), roll);
	put_wrapped(para);
	put_wrapped("note: the model cannot credit prioritized partial checkpoints (scar-train "
		    "--policy priority), which save the rows that moved most and cost less than full "
		    "ones on the workloads measured in scar-bound(1): measure yours with scar-train "
		    "--cost");
}

static int cmd_plan(int argc, char **argv)
{
	struct scar_bound_plan_opts po = { NAN, NAN, NAN, 1, 0, 0, 0, 0 };
	struct scar_bound_plan pl;
	struct scar_error err;
	double D = NAN;
	int json = 0, opt;
	char flags[160];
	const struct scar_bound_plan_point *b;

	while ((opt = cli_command_getopt(argc, argv, ":h", plan_opts)) != -1) {
		switch (opt) {
		case OPT_BUDGET: po.budget = cli_parse_fraction("--budget", optarg); break;
		case OPT_C: po.c = cli_parse_double("--c", optarg, 0, 1); break;
		case OPT_D: D = cli_parse_double("--D", optarg, 0, 1e300); break;
		case OPT_FAILURE_RATE:
			po.fail_rate = cli_parse_probability("--failure-rate", optarg);
			break;
		case OPT_ITERS: po.iters = cli_parse_u64("--iters", optarg, 1, 100000000); break;
		case OPT_JSON: json = 1; break;
		case OPT_LOST_FRACTION:
			po.lost_fraction = cli_parse_fraction("--lost-fraction", optarg);
			break;
		case OPT_STEP: po.step0 = cli_parse_double("--step", optarg, 0, 1e300); break;
		}
	}
	if (optind < argc)
		cli_usage_error("unexpected operand '%s'", argv[optind]);
	if (isnan(po.budget))
		cli_usage_error("missing --budget");
	if (isnan(po.c))
		cli_usage_error("missing --c");
	if (isnan(po.fail_rate))
		cli_usage_error("missing --failure-rate");
	if (!(po.c > 0 && po.c < 1))
		cli_usage_error("option '--c': %.17g is not in (0, 1)", po.c);
	if (po.budget < SCAR_BOUND_PLAN_MIN_BUDGET)
		cli_usage_error("option '--budget': %.17g is below %g (a full checkpoint every %g iterations; "
				"smaller budgets would take minutes)", po.budget,
				SCAR_BOUND_PLAN_MIN_BUDGET, 1 / SCAR_BOUND_PLAN_MIN_BUDGET);
	if (po.step0 > 0 && !(D > 0))
		cli_usage_error("option '--step' needs --D");
	/* D enters only through kappa = step / ((1 - c) D): alone it changes nothing */
	if (D > 0 && !(po.step0 > 0))
		cli_warn("warning: --D without --step changes nothing: D cancels out of the plan's "
			 "model (give --step, the first step ||x(1) - x(0)||, to use it)");
	po.D = D > 0 ? D : 0;
	scar_error_clear(&err);
	if (scar_bound_plan(&po, &pl, &err))
		cli_die_error(&err);
	b = &pl.points[pl.best];
	scar_train_flags(flags, sizeof(flags), &pl, b);
	if (json) {
		json_t *o = json_object(), *a = json_array();

		if (!o || !a)
			cli_die("out of memory");
		json_put(o, "c", json_real(po.c));
		json_put(o, "D", jnum(D));
		json_put(o, "budget", json_real(po.budget));
		json_put(o, "failure_rate", json_real(po.fail_rate));
		json_put(o, "lost_fraction", json_real(po.lost_fraction));
		json_put(o, "iters", po.iters ? json_integer((json_int_t)po.iters) : json_null());
		json_put(o, "step", po.step0 > 0 ? json_real(po.step0) : json_null());
		json_put(o, "kappa", json_real(pl.kappa));
		json_put(o, "cycle", pl.cycle ? json_integer((json_int_t)pl.cycle) : json_null());
		for (size_t i = 0; i < pl.n; i++)
			if (json_array_append_new(a, point_json(&pl.points[i])))
				cli_die("out of memory");
		json_put(o, "points", a);
		json_put(o, "best", point_json(b));
		json_put(o, "traditional", point_json(&pl.traditional));
		json_put(o, "scar_train", flags[0] ? json_string(flags) : json_null());
		print_json(o);
	} else {
		plan_text(&po, &pl, flags);
	}
	scar_bound_plan_release(&pl);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct cli_command_set set = {
		commands, sizeof(commands) / sizeof(commands[0]),
		"The iteration-cost bound of SCAR: evaluate it, fit c and D, check and plan.\n",
	};

	cli_init("scar-bound");
	return cli_command_main(&set, argc, argv);
}
