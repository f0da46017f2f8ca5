/* options.c - the option grammars several tools share (see options.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "options.h"
#include "scar/ckpt.h"
#include "scar/perturb.h"
#include "scar/shard.h"

static void need_value(const char *opt, const char *s)
{
	if (!s || !*s)
		cli_usage_error("option '%s' needs a value", opt);
}

static char *xstrndup(const char *s, size_t n)
{
	char *p = strndup(s, n);

	if (!p)
		cli_die("out of memory");
	return p;
}

void cli_parse_rows(const char *opt, const char *s, uint64_t *lo, uint64_t *hi)
{
	const char *colon;
	char *a;

	need_value(opt, s);
	if (!(colon = strchr(s, ':')))
		cli_usage_error("option '%s': '%s' is not A:B", opt, s);
	a = xstrndup(s, (size_t)(colon - s));
	*lo = *a ? cli_parse_u64(opt, a, 0, UINT64_MAX) : 0;
	*hi = colon[1] ? cli_parse_u64(opt, colon + 1, 0, UINT64_MAX) : UINT64_MAX;
	free(a);
	/* refused here, in every tool, before any input is read: 3:3 selects nothing */
	if (*hi <= *lo)
		cli_usage_error("option '%s': '%s' is an empty range", opt, s);
}

uint32_t cli_parse_shard(const char *opt, const char *s)
{
	return (uint32_t)cli_parse_u64(opt, s, 0, SCAR_MAX_SHARDS - 1);
}

void cli_shard_list_free(struct cli_shard_list *l)
{
	free(l->range);
	l->range = NULL;
	l->n = 0;
}

void cli_parse_shard_list(const char *opt, const char *s, struct cli_shard_list *l)
{
	char *copy, *save = NULL, *tok;

	cli_shard_list_free(l);
	cli_check_list(opt, s, ",");
	copy = xstrndup(s, strlen(s));
	/* at most one item per two characters, and one more */
	l->range = malloc((strlen(s) / 2 + 1) * sizeof(*l->range));
	if (!l->range)
		cli_die("out of memory");
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *dash = strchr(tok, '-');
		uint32_t a, b;

		/* a leading '-' is a negative number, which cli_parse_u64 names */
		if (dash && dash != tok) {
			if (!dash[1])
				cli_usage_error("option '%s': '%s' is not a shard or a range A-B", opt, tok);
			*dash = 0;
			a = cli_parse_shard(opt, tok);
			b = cli_parse_shard(opt, dash + 1);
			*dash = '-';
			if (a > b)
				cli_usage_error("option '%s': '%s' is an empty range", opt, tok);
		} else {
			a = b = cli_parse_shard(opt, tok);
		}
		l->range[l->n][0] = a;
		l->range[l->n][1] = b;
		l->n++;
	}
	free(copy);
}

size_t cli_shard_list_expand(const char *opt, const struct cli_shard_list *l, uint32_t S,
			     uint32_t *out, size_t cap)
{
	struct scar_error err;
	uint8_t *mark;
	size_t n = 0;

	scar_error_clear(&err);
	for (size_t i = 0; i < l->n; i++)
		if (scar_shards_check(&l->range[i][1], 1, 0, S, &err) < 0)
			cli_usage_error("option '%s': %s", opt, err.msg);
	if (!(mark = calloc(S ? S : 1, 1)))
		cli_die("out of memory");
	for (size_t i = 0; i < l->n; i++)
		for (uint64_t s = l->range[i][0]; s <= l->range[i][1]; s++)
			mark[s] = 1;
	for (uint32_t s = 0; s < S; s++) {
		if (!mark[s])
			continue;
		if (n == cap)
			cli_usage_error("option '%s': more than %zu shards", opt, cap);
		out[n++] = s;
	}
	free(mark);
	return n;
}

double cli_parse_fraction(const char *opt, const char *s)
{
	const char *slash;
	double v;

	need_value(opt, s);
	slash = strchr(s, '/');
	if (slash) {
		char *num;
		double a, b;

		if (slash == s || !slash[1])
			cli_usage_error("option '%s': '%s' is not a fraction", opt, s);
		num = xstrndup(s, (size_t)(slash - s));
		a = cli_parse_double(opt, num, 0, 1e18);
		free(num);
		b = cli_parse_double(opt, slash + 1, 0, 1e18);
		if (b == 0)
			cli_usage_error("option '%s': '%s' divides by zero", opt, s);
		v = a / b;
	} else {
		v = cli_parse_double(opt, s, -1e308, 1e308);
	}
	/* "10" for "1/10" (a full checkpoint every 10, one shard in 4) */
	if (!slash && v >= 2 && v < 1e15 && v == floor(v))
		cli_usage_error("option '%s': %s is not a fraction in (0, 1]; did you mean 1/%s?",
				opt, s, s);
	if (!(v > 0 && v <= 1))
		cli_usage_error("option '%s': %s is not a fraction in (0, 1]", opt, s);
	return v;
}

double cli_parse_probability(const char *opt, const char *s)
{
	return cli_parse_double(opt, s, 0, 1);
}

size_t cli_parse_u64_list(const char *opt, const char *s, uint64_t *v, size_t cap,
			  uint64_t min, uint64_t max)
{
	char *copy, *save = NULL, *tok;
	size_t n = 0;

	cli_check_list(opt, s, ",");
	copy = xstrndup(s, strlen(s));
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == cap)
			cli_usage_error("option '%s': more than %zu values", opt, cap);
		v[n++] = cli_parse_u64(opt, tok, min, max);
	}
	free(copy);
	return n;
}

int cli_parse_shuffle(const char *opt, const char *s)
{
	int v;

	need_value(opt, s);
	if ((v = scar_shuffle_parse(s)) < 0)
		cli_usage_error("option '%s': unknown value '%s' (off, on, auto)", opt, s);
	return v;
}
