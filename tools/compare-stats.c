/*
 * compare-stats - the statistics of examples/compare-strategies.sh. From the
 * raw runs (one line per failure trial), per cell (label, lost fraction,
 * strategy): the mean iteration cost with a percentile-bootstrap confidence
 * interval over trials, the reduction against a baseline strategy with a
 * paired-bootstrap interval (the trial indices resampled jointly: trial t
 * fails at the same time and loses the same shards under every strategy),
 * and per label a noise floor from null trials. Tables in Markdown, JSON,
 * and a gnuplot script of the figure. The method is documented in
 * tools/compare-stats.md; keep the two in step.
 *
 * Deterministic: every cell's resamples come from scar_rng seeded with
 * --seed and a stream named by the cell, so the output is byte-identical
 * for a given seed and input, and a cell's interval does not depend on
 * which other cells the input holds.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scar/rng.h"

#define PROG "compare-stats"
#define LEVEL_PCT 95		/* the confidence level of every interval */
#define NULL_STRATEGY "null"

static const char usage_text[] =
	"usage: " PROG " [--baseline name] [--gnuplot file] [--json file] [--markdown file]\n"
	"                     [--null-desc text] [--resamples n] [--seed n] [--workloads file]\n"
	"                     [runs.tsv]\n"
	"       " PROG " --help\n"
	"\n"
	"Statistics of the strategy comparison from its raw runs (a TSV file, or stdin:\n"
	"label, data, lost, strategy, trial, fail_at, cost_interp, censored; '#' lines\n"
	"are comments; a line '# null: text' is the default --null-desc). Markdown to\n"
	"stdout unless --markdown is given.\n"
	"\n"
	"  --baseline name   the strategy reductions are measured against (default traditional)\n"
	"  --gnuplot file    write a gnuplot script of the figure (no terminal, no output set)\n"
	"  --help            print this help and exit\n"
	"  --json file       write the cells and noise floors as one JSON object\n"
	"  --markdown file   write the tables to file instead of stdout\n"
	"  --null-desc text  how the null trials were made, for the tables and the JSON\n"
	"  --resamples n     bootstrap resamples per interval (default 10000)\n"
	"  --seed n          bootstrap seed (default 1)\n"
	"  --workloads file  TSV of label, model, data, data_path, args: listed in the JSON\n";

struct run {
	char *label, *data, *lost, *strategy;
	long trial, fail_at;
	double cost;
	int censored;
};

struct names {
	char **v;
	size_t n, cap;
};

/* The statistics of one cell (or of a label's null trials). */
struct cell {
	const char *label, *data, *lost, *strategy;
	size_t n, censored;
	double mean, ci[2], max_abs;
	int has_red;		/* a reduction against the baseline (not the baseline itself) */
	size_t paired;
	double red, red_ci[2];
	int significant;
};

static struct {
	struct run *v;
	size_t n, cap;
} runs;
static struct names labels, losts, strats;
static struct cell *cells, *floors;
static size_t ncells, nfloors;
static char *file_null_desc;	/* from a "# null: " line of the input */

/* "compare-stats: " and the message, on stderr; the three below share it. */
static void vmsg(const char *fmt, va_list ap)
{
	fprintf(stderr, PROG ": ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
	exit(2);
}

static void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
}

static void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
	fprintf(stderr, "try '" PROG " --help'\n");
	exit(2);
}

static void *xrealloc(void *p, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		die("out of memory");
	p = realloc(p, n * size > 0 ? n * size : 1);
	if (!p)
		die("out of memory");
	return p;
}

static char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = xrealloc(NULL, n, 1);

	memcpy(d, s, n);
	return d;
}

/* The index of s in the list, appended when new: first appearance gives the order. */
static size_t intern(struct names *l, const char *s)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (!strcmp(l->v[i], s))
			return i;
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 8;
		l->v = xrealloc(l->v, l->cap, sizeof *l->v);
	}
	l->v[l->n] = xstrdup(s);
	return l->n++;
}

static long parse_long(const char *s, long min, const char *what, const char *src, size_t line)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (!*s || *end || errno || v < min)
		die("%s:%zu: %s '%s' is not an integer >= %ld", src, line, what, s, min);
	return v;
}

static void add_run(char **f, const char *src, size_t line)
{
	struct run *r;
	char *end;
	size_t i;

	if (runs.n == runs.cap) {
		runs.cap = runs.cap ? 2 * runs.cap : 256;
		runs.v = xrealloc(runs.v, runs.cap, sizeof *runs.v);
	}
	r = &runs.v[runs.n];
	for (i = 0; i < 4; i++)
		if (!*f[i])
			die("%s:%zu: field %zu is empty", src, line, i + 1);
	r->label = xstrdup(f[0]);
	r->data = xstrdup(f[1]);
	r->lost = xstrdup(f[2]);
	r->strategy = xstrdup(f[3]);
	r->trial = parse_long(f[4], 1, "trial", src, line);
	r->fail_at = parse_long(f[5], 0, "failure time", src, line);
	errno = 0;
	r->cost = strtod(f[6], &end);
	if (!*f[6] || *end || errno || !isfinite(r->cost))
		die("%s:%zu: cost '%s' is not a finite number", src, line, f[6]);
	if (!strcmp(f[7], "true"))
		r->censored = 1;
	else if (!strcmp(f[7], "false"))
		r->censored = 0;
	else
		die("%s:%zu: censored '%s' is neither true nor false", src, line, f[7]);
	/* A label names one data set. */
	for (i = 0; i < runs.n; i++)
		if (!strcmp(runs.v[i].label, r->label) && strcmp(runs.v[i].data, r->data))
			die("%s:%zu: label '%s' has data '%s' here and '%s' before", src, line,
			    r->label, r->data, runs.v[i].data);
	intern(&labels, r->label);
	if (strcmp(r->strategy, NULL_STRATEGY)) {
		intern(&losts, r->lost);
		intern(&strats, r->strategy);
	}
	runs.n++;
}

static void read_runs(FILE *in, const char *src)
{
	char *buf = NULL, *f[8], *p;
	size_t cap = 0, line = 0, k;
	ssize_t len;

	while ((len = getline(&buf, &cap, in)) >= 0) {
		line++;
		if (len && buf[len - 1] == '\n')
			buf[--len] = '\0';
		if (len && buf[len - 1] == '\r')
			buf[--len] = '\0';
		if (!strncmp(buf, "# null: ", 8) && !file_null_desc)
			file_null_desc = xstrdup(buf + 8);
		if (!len || buf[0] == '#')
			continue;
		for (k = 1, p = buf; *p; p++)
			k += *p == '\t';
		if (k != 8)
			die("%s:%zu: %zu fields, expected 8 (label, data, lost, strategy, trial, "
			    "fail_at, cost_interp, censored)", src, line, k);
		for (k = 0, p = buf; k < 8; k++) {
			f[k] = p;
			p = strchr(p, '\t');
			if (p)
				*p++ = '\0';
		}
		add_run(f, src, line);
	}
	if (ferror(in))
		die("cannot read '%s': %s", src, strerror(errno));
	free(buf);
}

static int by_trial(const void *a, const void *b)
{
	const struct run *x = *(const struct run *const *)a, *y = *(const struct run *const *)b;

	return (x->trial > y->trial) - (x->trial < y->trial);
}

/* The runs of a cell (lost NULL: any), sorted by trial; a repeated trial is an error. */
static size_t gather(const char *label, const char *lost, const char *strategy,
		     const struct run **out)
{
	size_t i, n = 0;

	for (i = 0; i < runs.n; i++) {
		const struct run *r = &runs.v[i];
		if (!strcmp(r->label, label) && !strcmp(r->strategy, strategy) &&
		    (!lost || !strcmp(r->lost, lost)))
			out[n++] = r;
	}
	qsort(out, n, sizeof *out, by_trial);
	for (i = 1; i < n; i++)
		if (out[i]->trial == out[i - 1]->trial)
			die("trial %ld of %s, lost %s, %s appears twice", out[i]->trial, label,
			    out[i]->lost, strategy);
	return n;
}

/* FNV-1a over the parts with a separator: the stream of a cell's resamples. */
static uint64_t stream_of(const char *a, const char *b, const char *c, const char *d)
{
	const char *parts[4] = { a, b, c, d };
	uint64_t h = 0xcbf29ce484222325u;
	size_t i;
	const unsigned char *p;

	for (i = 0; i < 4; i++) {
		for (p = (const unsigned char *)parts[i]; *p; p++)
			h = (h ^ *p) * 0x100000001b3u;
		h = (h ^ 0x1f) * 0x100000001b3u;
	}
	return h;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * The percentile interval: the k-th smallest and k-th largest of the B
 * resampled statistics, k = floor(B (100 - LEVEL_PCT) / 200) (0-based), so
 * 250 and 9749 of 10000 for 95%.
 */
static void percentile(double *v, long B, double ci[2])
{
	size_t k = (size_t)B * (100 - LEVEL_PCT) / 200;

	qsort(v, (size_t)B, sizeof *v, cmp_double);
	ci[0] = v[k];
	ci[1] = v[(size_t)B - 1 - k];
}

static double mean_of(const double *x, size_t n)
{
	double s = 0;
	size_t i;

	for (i = 0; i < n; i++)
		s += x[i];
	return s / (double)n;
}

/*
 * 1 - m / base. When the baseline's mean is not positive the ratio means
 * nothing; it is then +inf, -inf or 0 by the sign of base - m, so that the
 * interval still includes 0 exactly when the difference's would.
 */
static double reduction(double m, double base)
{
	double d = base - m;

	if (base > 0)
		return 1 - m / base;
	return d > 0 ? INFINITY : d < 0 ? -INFINITY : 0;
}

static void boot_mean(const double *x, size_t n, uint64_t seed, uint64_t stream, long B,
		      double *buf, double ci[2])
{
	struct scar_rng r;
	long b;
	size_t i;

	scar_rng_seed_stream(&r, seed, stream);
	for (b = 0; b < B; b++) {
		double s = 0;
		for (i = 0; i < n; i++)
			s += x[scar_rng_below(&r, n)];
		buf[b] = s / (double)n;
	}
	percentile(buf, B, ci);
}

static void boot_reduction(const double *x, const double *base, size_t n, uint64_t seed,
			   uint64_t stream, long B, double *buf, double ci[2])
{
	struct scar_rng r;
	long b;
	size_t i, j;

	scar_rng_seed_stream(&r, seed, stream);
	for (b = 0; b < B; b++) {
		double sx = 0, sb = 0;
		for (i = 0; i < n; i++) {
			j = scar_rng_below(&r, n);
			sx += x[j];
			sb += base[j];
		}
		buf[b] = reduction(sx / (double)n, sb / (double)n);
	}
	percentile(buf, B, ci);
}

static void describe(struct cell *c, const struct run *const *v, size_t n, double *x)
{
	size_t i;

	c->n = n;
	c->censored = 0;
	c->max_abs = 0;
	for (i = 0; i < n; i++) {
		x[i] = v[i]->cost;
		c->censored += (size_t)v[i]->censored;
		if (fabs(x[i]) > c->max_abs)
			c->max_abs = fabs(x[i]);
	}
	c->mean = mean_of(x, n);
}

static void compute(const char *baseline, uint64_t seed, long B)
{
	const struct run **v = xrealloc(NULL, runs.n + 1, sizeof *v);
	const struct run **bv = xrealloc(NULL, runs.n + 1, sizeof *bv);
	double *x = xrealloc(NULL, runs.n + 1, sizeof *x);
	double *px = xrealloc(NULL, runs.n + 1, sizeof *px);
	double *pb = xrealloc(NULL, runs.n + 1, sizeof *pb);
	double *buf = xrealloc(NULL, (size_t)B, sizeof *buf);
	size_t li, fi, si, n, nb, i, j;

	cells = xrealloc(NULL, labels.n * losts.n * strats.n + 1, sizeof *cells);
	floors = xrealloc(NULL, labels.n + 1, sizeof *floors);
	for (li = 0; li < labels.n; li++) {
		const char *label = labels.v[li], *data = NULL;
		for (i = 0; i < runs.n && !data; i++)
			if (!strcmp(runs.v[i].label, label))
				data = runs.v[i].data;
		for (fi = 0; fi < losts.n; fi++) {
			const char *lost = losts.v[fi];
			nb = gather(label, lost, baseline, bv);
			for (si = 0; si < strats.n; si++) {
				const char *strategy = strats.v[si];
				struct cell *c = &cells[ncells];
				n = gather(label, lost, strategy, v);
				if (!n)
					continue;
				ncells++;
				memset(c, 0, sizeof *c);
				c->label = label;
				c->data = data;
				c->lost = lost;
				c->strategy = strategy;
				describe(c, v, n, x);
				boot_mean(x, n, seed, stream_of(label, lost, strategy, "mean"), B, buf, c->ci);
				if (!nb || !strcmp(strategy, baseline))
					continue;
				/* Pair by trial: both lists are sorted by it. */
				c->paired = 0;
				for (i = j = 0; i < n && j < nb;) {
					if (v[i]->trial < bv[j]->trial) {
						i++;
					} else if (v[i]->trial > bv[j]->trial) {
						j++;
					} else {
						if (v[i]->fail_at != bv[j]->fail_at)
							die("trial %ld of %s, lost %s fails at %ld under %s "
							    "and at %ld under %s: not the same trial",
							    v[i]->trial, label, lost, v[i]->fail_at, strategy,
							    bv[j]->fail_at, baseline);
						px[c->paired] = v[i]->cost;
						pb[c->paired++] = bv[j]->cost;
						i++;
						j++;
					}
				}
				if (c->paired != n || c->paired != nb)
					warn("%s, lost %s: %zu of %zu %s trials paired with %zu %s trials",
					     label, lost, c->paired, n, strategy, nb, baseline);
				if (!c->paired)
					continue;
				c->has_red = 1;
				c->red = reduction(mean_of(px, c->paired), mean_of(pb, c->paired));
				boot_reduction(px, pb, c->paired, seed,
					       stream_of(label, lost, strategy, "reduction"), B, buf, c->red_ci);
				c->significant = !(c->red_ci[0] <= 0 && c->red_ci[1] >= 0);
			}
		}
		n = gather(label, NULL, NULL_STRATEGY, v);
		if (n) {
			struct cell *c = &floors[nfloors++];
			memset(c, 0, sizeof *c);
			c->label = label;
			c->data = data;
			c->lost = "0";
			c->strategy = NULL_STRATEGY;
			describe(c, v, n, x);
			boot_mean(x, n, seed, stream_of(label, "0", NULL_STRATEGY, "mean"), B, buf, c->ci);
		}
	}
	free(v);
	free(bv);
	free(x);
	free(px);
	free(pb);
	free(buf);
}

/* A cost: "0" when exactly zero, so that the tables show an exact null. */
static void put_cost(FILE *f, double x)
{
	if (x == 0)
		fputs("0", f);
	else
		fprintf(f, "%.2f", x);
}

static void put_pct(FILE *f, double x)
{
	char s[64];

	if (isinf(x)) {
		fputs(x > 0 ? "inf" : "-inf", f);
		return;
	}
	snprintf(s, sizeof s, "%.0f", 100 * x);
	fputs(strcmp(s, "-0") ? s : "0", f);
	fputc('%', f);
}

static void write_markdown(FILE *f, const char *baseline, uint64_t seed, long B,
			   const char *null_desc)
{
	size_t i;

	fprintf(f, "| label | data | lost | strategy | trials | mean cost | %d%% CI | "
		"reduction vs %s | %d%% CI | censored |\n", LEVEL_PCT, baseline, LEVEL_PCT);
	fputs("|---|---|---|---|---:|---:|---:|---:|---:|---:|\n", f);
	for (i = 0; i < ncells; i++) {
		const struct cell *c = &cells[i];
		fprintf(f, "| %s | %s | %s | %s | %zu | ", c->label, c->data, c->lost, c->strategy, c->n);
		put_cost(f, c->mean);
		fputs(" | [", f);
		put_cost(f, c->ci[0]);
		fputs(", ", f);
		put_cost(f, c->ci[1]);
		fputs("] | ", f);
		if (!strcmp(c->strategy, baseline)) {
			fputs("baseline | |", f);
		} else if (!c->has_red) {
			fputs("- | - |", f);
		} else {
			if (isfinite(c->red))
				put_pct(f, c->red);
			else
				fputs("n/a", f);
			fputs(c->significant ? "" : " (n.s.)", f);
			fputs(" | [", f);
			put_pct(f, c->red_ci[0]);
			fputs(", ", f);
			put_pct(f, c->red_ci[1]);
			fputs("] |", f);
		}
		fprintf(f, " %zu |\n", c->censored);
	}
	if (nfloors) {
		fprintf(f, "\nNoise floor: null trials%s%s%s.\n\n", null_desc ? " (" : "",
			null_desc ? null_desc : "", null_desc ? ")" : "");
		fprintf(f, "| label | data | null trials | mean cost | %d%% CI | max abs cost | censored |\n",
			LEVEL_PCT);
		fputs("|---|---|---:|---:|---:|---:|---:|\n", f);
		for (i = 0; i < nfloors; i++) {
			const struct cell *c = &floors[i];
			fprintf(f, "| %s | %s | %zu | ", c->label, c->data, c->n);
			put_cost(f, c->mean);
			fputs(" | [", f);
			put_cost(f, c->ci[0]);
			fputs(", ", f);
			put_cost(f, c->ci[1]);
			fputs("] | ", f);
			put_cost(f, c->max_abs);
			fprintf(f, " | %zu |\n", c->censored);
		}
	}
	fprintf(f, "\nCost: iterations, mean of cost_interp over the trials; 0 is exactly zero. "
		"%d%% CI: percentile bootstrap over trials, %ld resamples, seed %llu. "
		"Reduction: 1 - mean / mean of %s over the same trials, its CI by a paired bootstrap "
		"(trial indices resampled jointly); (n.s.): the interval includes 0.\n",
		LEVEL_PCT, B, (unsigned long long)seed, baseline);
}

static json_t *jreal(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

static json_t *jcell(const struct cell *c, const char *baseline, int floor)
{
	json_t *o = json_object();

	json_object_set_new(o, "label", json_string(c->label));
	json_object_set_new(o, "data", json_string(c->data));
	if (!floor) {
		json_object_set_new(o, "lost", json_string(c->lost));
		json_object_set_new(o, "strategy", json_string(c->strategy));
	}
	json_object_set_new(o, "trials", json_integer((json_int_t)c->n));
	json_object_set_new(o, "mean_cost", jreal(c->mean));
	json_object_set_new(o, "ci", json_pack("[oo]", jreal(c->ci[0]), jreal(c->ci[1])));
	if (floor) {
		json_object_set_new(o, "max_abs_cost", jreal(c->max_abs));
	} else if (!strcmp(c->strategy, baseline)) {
		json_object_set_new(o, "reduction", json_real(0));
		json_object_set_new(o, "reduction_ci", json_null());
		json_object_set_new(o, "significant", json_null());
	} else if (c->has_red) {
		json_object_set_new(o, "paired_trials", json_integer((json_int_t)c->paired));
		json_object_set_new(o, "reduction", jreal(c->red));
		json_object_set_new(o, "reduction_ci",
				    json_pack("[oo]", jreal(c->red_ci[0]), jreal(c->red_ci[1])));
		json_object_set_new(o, "significant", json_boolean(c->significant));
	}
	json_object_set_new(o, "censored", json_integer((json_int_t)c->censored));
	return o;
}

static json_t *read_workloads(const char *path)
{
	json_t *a = json_array();
	FILE *in = fopen(path, "r");
	char *buf = NULL, *f[5], *p;
	size_t cap = 0, line = 0, k;
	ssize_t len;

	if (!in)
		die("cannot open '%s': %s", path, strerror(errno));
	while ((len = getline(&buf, &cap, in)) >= 0) {
		json_t *o;
		line++;
		if (len && buf[len - 1] == '\n')
			buf[--len] = '\0';
		if (!len || buf[0] == '#')
			continue;
		for (k = 0, p = buf; k < 5; k++) {
			f[k] = p;
			p = strchr(p, '\t');
			if (!p)
				break;
			*p++ = '\0';
		}
		if (k != 4)
			die("%s:%zu: expected 5 fields (label, model, data, data_path, args)", path, line);
		o = json_pack("{ssssssssss}", "label", f[0], "model", f[1], "data", f[2],
			      "data_path", f[3], "args", f[4]);
		if (!o)
			die("%s:%zu: not UTF-8", path, line);
		json_array_append_new(a, o);
	}
	if (ferror(in))
		die("cannot read '%s': %s", path, strerror(errno));
	fclose(in);
	free(buf);
	return a;
}

static void write_json(FILE *f, const char *baseline, uint64_t seed, long B,
		       const char *null_desc, const char *workloads)
{
	json_t *root = json_object(), *a;
	size_t i;
	char *s;

	json_object_set_new(root, "type", json_string("comparison"));
	json_object_set_new(root, "version", json_integer(2));
	json_object_set_new(root, "baseline", json_string(baseline));
	json_object_set_new(root, "bootstrap",
			    json_pack("{sssisIsIsb}", "method", "percentile", "level", LEVEL_PCT,
				      "resamples", (json_int_t)B, "seed", (json_int_t)seed,
				      "paired_reduction", 1));
	json_object_set_new(root, "null", null_desc ? json_string(null_desc) : json_null());
	if (workloads)
		json_object_set_new(root, "workloads", read_workloads(workloads));
	a = json_array();
	for (i = 0; i < ncells; i++)
		json_array_append_new(a, jcell(&cells[i], baseline, 0));
	json_object_set_new(root, "cells", a);
	a = json_array();
	for (i = 0; i < nfloors; i++)
		json_array_append_new(a, jcell(&floors[i], baseline, 1));
	json_object_set_new(root, "floors", a);
	s = json_dumps(root, JSON_COMPACT | JSON_REAL_PRECISION(10));
	if (!s)
		die("cannot encode the JSON (a string not UTF-8?)");
	fputs(s, f);
	fputc('\n', f);
	free(s);
	json_decref(root);
}

static void put_gp_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '\n') {
			fputs("\\n", f);
			continue;
		}
		if (*s == '"' || *s == '\\' || *s == '$')
			fputc('\\', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static const struct cell *floor_of(const char *label)
{
	size_t i;

	for (i = 0; i < nfloors; i++)
		if (!strcmp(floors[i].label, label))
			return &floors[i];
	return NULL;
}

/*
 * One cluster per (label, lost): a bar per strategy at x = cluster * (S + 1)
 * + strategy, its interval as an error bar; behind each cluster a grey band
 * from -m to +m, m the largest |cost| of the label's null trials.
 */
static void write_gnuplot(FILE *f, uint64_t seed, long B)
{
	size_t si, i, k, cl = 0, stride = strats.n + 1;
	const char *prev_label = NULL, *prev_lost = NULL;
	size_t *cluster = xrealloc(NULL, ncells + 1, sizeof *cluster);

	fprintf(f, "# written by " PROG ": mean iteration cost and %d%% percentile bootstrap "
		"interval (%ld resamples, seed %llu)\n", LEVEL_PCT, B, (unsigned long long)seed);
	for (i = 0; i < ncells; i++) {
		if (i && (strcmp(cells[i].label, prev_label) || strcmp(cells[i].lost, prev_lost)))
			cl++;
		cluster[i] = cl;
		prev_label = cells[i].label;
		prev_lost = cells[i].lost;
	}
	for (si = 0; si < strats.n; si++) {
		fprintf(f, "$bars%zu << EOD\n", si);
		for (i = 0; i < ncells; i++)
			if (!strcmp(cells[i].strategy, strats.v[si]))
				fprintf(f, "%zu %.6g %.6g %.6g\n", cluster[i] * stride + si + 1,
					cells[i].mean, cells[i].ci[0], cells[i].ci[1]);
		fputs("EOD\n", f);
	}
	if (nfloors) {
		fputs("$floor << EOD\n", f);
		for (i = 0; i < ncells; i++) {
			const struct cell *fl = floor_of(cells[i].label);
			if (fl && (i == 0 || cluster[i] != cluster[i - 1]))
				fprintf(f, "%.1f %.1f %.6g\n", (double)(cluster[i] * stride) + 0.5,
					(double)(cluster[i] * stride + strats.n) + 0.5, fl->max_abs);
		}
		fputs("EOD\n", f);
	}
	fputs("set style fill solid 0.8 border -1\n"
	      "set boxwidth 0.9 absolute\n"
	      "set key outside right top vertical Left reverse\n"
	      "set bmargin 6\n"
	      "set offsets 0, 0, graph 0.05, 0\n"
	      "set xzeroaxis lt -1\n"
	      "set grid ytics\n", f);
	fprintf(f, "set ylabel \"iteration cost (mean, %d%% CI)\"\n",
		LEVEL_PCT);
	fprintf(f, "set xrange [0:%zu]\n", (cl + 1) * stride);
	fputs("set xtics scale 0 (", f);
	for (i = 0, k = 0; i < ncells; i++) {
		const struct cell *fl = floor_of(cells[i].label);
		char text[512];
		if (i && cluster[i] == cluster[i - 1])
			continue;
		if (fl)
			snprintf(text, sizeof text, "%s\n%s\n%s lost\nfloor %.2g", cells[i].label,
				 cells[i].data, cells[i].lost, fl->max_abs);
		else
			snprintf(text, sizeof text, "%s\n%s\n%s lost", cells[i].label, cells[i].data,
				 cells[i].lost);
		fputs(k++ ? ", " : "", f);
		put_gp_string(f, text);
		fprintf(f, " %.1f", (double)(cluster[i] * stride) + (double)(strats.n + 1) / 2);
	}
	fputs(")\n", f);
	fputs("plot ", f);
	if (nfloors)
		fputs("$floor using (($1+$2)/2):(0):1:2:(-$3):3 with boxxyerror "
		      "fs transparent solid 0.3 noborder lc rgb \"gray40\" "
		      "title \"noise floor (null trials, +-max |cost|)\", \\\n     ", f);
	for (si = 0; si < strats.n; si++) {
		fprintf(f, "%s$bars%zu using 1:2:3:4:(0.45) with boxerrorbars title ",
			si ? ", \\\n     " : "", si);
		put_gp_string(f, strats.v[si]);
	}
	fputc('\n', f);
	free(cluster);
}

static FILE *open_out(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		die("cannot open '%s': %s", path, strerror(errno));
	return f;
}

static void close_out(FILE *f, const char *path)
{
	if (ferror(f) | (f == stdout ? fflush(f) : fclose(f)))
		die("cannot write '%s': %s", path, strerror(errno));
}

static long parse_opt_long(const char *opt, const char *s, long min)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (!*s || *end || errno || v < min)
		usage_error("option '--%s': '%s' is not an integer >= %ld", opt, s, min);
	return v;
}

int main(int argc, char **argv)
{
	enum { O_BASELINE = 256, O_GNUPLOT, O_JSON, O_MARKDOWN, O_NULL_DESC, O_RESAMPLES, O_SEED,
	       O_WORKLOADS };
	static const struct option opts[] = {
		{ "baseline", required_argument, NULL, O_BASELINE },
		{ "gnuplot", required_argument, NULL, O_GNUPLOT },
		{ "help", no_argument, NULL, 'h' },
		{ "json", required_argument, NULL, O_JSON },
		{ "markdown", required_argument, NULL, O_MARKDOWN },
		{ "null-desc", required_argument, NULL, O_NULL_DESC },
		{ "resamples", required_argument, NULL, O_RESAMPLES },
		{ "seed", required_argument, NULL, O_SEED },
		{ "workloads", required_argument, NULL, O_WORKLOADS },
		{ NULL, 0, NULL, 0 },
	};
	const char *baseline = "traditional", *gp_path = NULL, *json_path = NULL, *md_path = NULL;
	const char *null_desc = NULL, *workloads = NULL, *src = "-";
	long B = 10000, seed = 1;
	FILE *in = stdin, *f;
	size_t i;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			fputs(usage_text, stdout);
			return fflush(stdout) || ferror(stdout) ? 2 : 0;
		case O_BASELINE: baseline = optarg; break;
		case O_GNUPLOT: gp_path = optarg; break;
		case O_JSON: json_path = optarg; break;
		case O_MARKDOWN: md_path = optarg; break;
		case O_NULL_DESC: null_desc = optarg; break;
		case O_RESAMPLES: B = parse_opt_long("resamples", optarg, 1); break;
		case O_SEED: seed = parse_opt_long("seed", optarg, 0); break;
		case O_WORKLOADS: workloads = optarg; break;
		default:
			fprintf(stderr, "try '" PROG " --help'\n");
			return 2;
		}
	}
	if (argc - optind > 1)
		usage_error("one runs file at most, not %d", argc - optind);
	if (B > 100000000)
		usage_error("option '--resamples': %ld is more than 100000000", B);
	if (optind < argc && strcmp(argv[optind], "-")) {
		src = argv[optind];
		in = fopen(src, "r");
		if (!in)
			die("cannot open '%s': %s", src, strerror(errno));
	}
	read_runs(in, src);
	if (in != stdin)
		fclose(in);
	if (!runs.n)
		die("no runs in '%s'", src);
	if (!null_desc)
		null_desc = file_null_desc;
	if (!strats.n)
		die("no runs but null trials in '%s'", src);
	for (i = 0; i < strats.n && strcmp(strats.v[i], baseline); i++)
		;
	if (i == strats.n)
		warn("no runs of the baseline '%s': no reductions", baseline);
	compute(baseline, (uint64_t)seed, B);

	f = md_path ? open_out(md_path) : stdout;
	write_markdown(f, baseline, (uint64_t)seed, B, null_desc);
	close_out(f, md_path ? md_path : "stdout");
	if (json_path) {
		f = open_out(json_path);
		write_json(f, baseline, (uint64_t)seed, B, null_desc, workloads);
		close_out(f, json_path);
	}
	if (gp_path) {
		f = open_out(gp_path);
		write_gnuplot(f, (uint64_t)seed, B);
		close_out(f, gp_path);
	}
	return 0;
}
