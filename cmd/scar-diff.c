/*
 * scar-diff - the perturbation between two snapshots (checkpoints, .npy,
 * safetensors): norms overall, per tensor, per shard, and the rows that
 * moved most. Exit 0 when equal or within --tolerance, 1 when they differ,
 * 2 on trouble, like cmp(1). The work is scar_diff_files (scar/diff.h).
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scar/diff.h"
#include "scar/file.h"
#include "cli.h"

enum { OPT_ALL = 256, OPT_JSON, OPT_PER, OPT_STRICT, OPT_TENSOR, OPT_TEXT, OPT_TOLERANCE, OPT_TOP };

static const struct option opts[] = {
	{ "all", no_argument, NULL, OPT_ALL },
	{ "help", no_argument, NULL, 'h' },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "per", required_argument, NULL, OPT_PER },
	{ "quiet", no_argument, NULL, 'q' },
	{ "strict", no_argument, NULL, OPT_STRICT },
	{ "tensor", required_argument, NULL, OPT_TENSOR },
	{ "text", no_argument, NULL, OPT_TEXT },
	{ "tolerance", required_argument, NULL, OPT_TOLERANCE },
	{ "top", required_argument, NULL, OPT_TOP },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: scar-diff [--all] [--json | --text] [--per row|tensor] [-q] [--strict]\n"
		"                 [--tensor NAME]... [--tolerance X] [--top K] A B\n"
		"\n"
		"Measure A - B between two snapshots: scar checkpoints, .npy or safetensors\n"
		"files, or Hugging Face sharded safetensors directories (or their\n"
		"*.safetensors.index.json), matched by tensor name; '-' reads one of them\n"
		"from stdin.\n"
		"\n"
		"      --all          compare state tensors too (default: parameters only)\n"
		"  -h, --help         show this help and exit\n"
		"      --json         JSON output even on a terminal\n"
		"      --per WHAT     'row': one JSON line per compared row, then the summary;\n"
		"                     'tensor' (default): the summary only\n"
		"  -q, --quiet        print nothing; the exit status says it\n"
		"      --strict       rows or tensors present in one side only count as differences\n"
		"      --tensor NAME  compare only this tensor (repeatable; any role)\n"
		"      --text         readable text even when stdout is not a terminal\n"
		"      --tolerance X  equal when max |A - B| <= X (default 0: bit-equal values)\n"
		"      --top K        report the K rows with the largest L2 change (default 10)\n"
		"  -V, --version      show the version and exit\n"
		"\n"
		"Exit status: 0 equal or within tolerance, 1 different, 2 trouble.\n");
}

struct out {
	int text;
	int quiet;
};

/* A norm for people: "nan" whatever the NaN's sign bit (printf says "-nan"). */
static const char *g(double v, int prec)
{
	static char buf[8][32];
	static int next;
	char *b = buf[next++ & 7];

	if (isnan(v))
		return "nan";
	snprintf(b, sizeof(buf[0]), "%.*g", prec, v);
	return b;
}

/*
 * A name or path for the terminal: names come from the files, and control
 * characters in them must not act (scar/file.h). Four rotating buffers.
 */
static const char *q(const char *s)
{
	static char buf[4][4 * SCAR_ERROR_FILE_MAX + 1];
	static int next;
	char *b = buf[next++ & 3];

	scar_quote_text(b, sizeof(buf[0]), s);
	return b;
}

static void pr_norms(const struct scar_norms *n)
{
	printf("l2 %-11s rel_l2 %-11s l1 %-11s linf %-11s changed %llu/%llu",
	       g(n->l2, 5), g(n->rel_l2, 5), g(n->l1, 5), g(n->linf, 5),
	       (unsigned long long)n->changed, (unsigned long long)n->elements);
}

static int row_out(void *ctx, const struct scar_diff_result *r, const struct scar_diff_row *row)
{
	struct out *o = ctx;

	if (o->quiet)
		return 0;
	if (o->text) {
		printf("%s row %llu shard %u: ", q(r->tensors[row->tensor].name),
		       (unsigned long long)row->row, row->shard);
		pr_norms(&row->n);
		putchar('\n');
	} else {
		json_t *j = scar_diff_row_json(r, row);

		if (!j)
			cli_die("out of memory");
		json_dumpf(j, stdout, JSON_COMPACT);
		putchar('\n');
		json_decref(j);
	}
	if (ferror(stdout))
		cli_flush_stdout();
	return 0;
}

static void side_text(const struct scar_diff_side *s)
{
	printf("'%s' (%s", q(s->path), s->kind);
	if (s->model[0])
		printf(", %s", q(s->model));
	if (s->has_iteration)
		printf(", iteration %llu", (unsigned long long)s->iteration);
	if (s->shards > 1)
		printf(", %u shards", s->shards);
	printf(")");
}

static void text_report(const struct scar_diff_result *r)
{
	side_text(&r->a);
	printf(" vs ");
	side_text(&r->b);
	printf("\ntotal      ");
	pr_norms(&r->total);
	printf("\n");
	for (size_t i = 0; i < r->ntensors; i++) {
		const struct scar_diff_tensor *t = &r->tensors[i];

		printf("tensor %-20s ", q(t->name));
		pr_norms(&t->n);
		if (t->rows_only_a || t->rows_only_b)
			printf(" missing %llu+%llu rows", (unsigned long long)t->rows_only_a,
			       (unsigned long long)t->rows_only_b);
		printf("\n");
	}
	for (uint32_t s = 0; r->nshards > 1 && s < r->nshards; s++) {
		printf("shard %-5u ", s);
		pr_norms(&r->shards[s]);
		printf("\n");
	}
	if (r->ntop)
		printf("top rows by L2 change:\n");
	for (size_t i = 0; i < r->ntop; i++)
		printf("  %s row %llu (shard %u): l2 %s linf %s\n",
		       q(r->tensors[r->top[i].tensor].name), (unsigned long long)r->top[i].row,
		       r->top[i].shard, g(r->top[i].n.l2, 6), g(r->top[i].n.linf, 6));
	if (r->rows_only_a || r->rows_only_b)
		printf("rows present in one side only: %llu in A, %llu in B (not compared)\n",
		       (unsigned long long)r->rows_only_a, (unsigned long long)r->rows_only_b);
	for (size_t i = 0; i < r->nonly_a; i++)
		printf("tensor '%s' only in A\n", q(r->only_a[i]));
	for (size_t i = 0; i < r->nonly_b; i++)
		printf("tensor '%s' only in B\n", q(r->only_b[i]));
}

int main(int argc, char **argv)
{
	struct scar_diff_opts o;
	struct scar_diff_result *r = NULL;
	struct scar_error err;
	struct out out = { 0, 0 };
	const char **names = NULL;
	size_t nnames = 0;
	int c, force_json = 0, force_text = 0, per_row = 0, strict = 0, differ;
	double tol = 0;

	cli_init(argv[0]);
	scar_diff_opts_init(&o);
	while ((c = getopt_long(argc, argv, "hqV", opts, NULL)) != -1) {
		switch (c) {
		case OPT_ALL: o.all = 1; break;
		case 'h': usage(stdout); return 0;
		case OPT_JSON: force_json = 1; break;
		case OPT_PER:
			if (strcmp(optarg, "row") == 0)
				per_row = 1;
			else if (strcmp(optarg, "tensor") == 0)
				per_row = 0;
			else
				cli_usage_error("option '--per': '%s' is not 'row' or 'tensor'", optarg);
			break;
		case 'q': out.quiet = 1; break;
		case OPT_STRICT: strict = 1; break;
		case OPT_TENSOR:
			names = realloc(names, (nnames + 1) * sizeof(*names));
			if (!names)
				cli_die("out of memory");
			names[nnames++] = optarg;
			break;
		case OPT_TEXT: force_text = 1; break;
		case OPT_TOLERANCE: tol = cli_parse_double("--tolerance", optarg, 0, 1e308); break;
		case OPT_TOP: o.top_k = (size_t)cli_parse_u64("--top", optarg, 0, 1000000); break;
		case 'V': cli_version();
		default: usage(stderr); return EXIT_TROUBLE;
		}
	}
	if (force_json && force_text)
		cli_usage_error("--json and --text exclude each other");
	if (argc - optind != 2)
		cli_usage_error(argc - optind < 2 ? "two snapshots to compare are needed" :
				"too many operands");
	if (cli_is_stdio(argv[optind]) || cli_is_stdio(argv[optind + 1]))
		cli_refuse_tty_stdin();
	out.text = force_text || (!force_json && isatty(STDOUT_FILENO));
	o.names = names;
	o.nnames = nnames;
	if (per_row) {
		o.row_fn = row_out;
		o.row_ctx = &out;
		if (!out.quiet && !out.text)
			printf("{\"type\":\"header\",\"format\":\"scar-diff-rows\",\"version\":1}\n");
	}
	scar_error_clear(&err);
	if (scar_diff_files(argv[optind], argv[optind + 1], &o, &r, &err) < 0)
		cli_die_error(&err);
	differ = !(r->total.linf <= tol) || (tol == 0 && r->total.changed > 0);
	if (strict && (r->rows_only_a || r->rows_only_b || r->nonly_a || r->nonly_b))
		differ = 1;
	if (!out.quiet) {
		if (out.text) {
			text_report(r);
			printf("%s\n", differ ? "differ" : tol > 0 ? "within tolerance" : "equal");
		} else {
			json_t *j = scar_diff_result_json(r);

			if (!j)
				cli_die("out of memory");
			json_object_set_new(j, "differ", json_boolean(differ));
			json_object_set_new(j, "tolerance", json_real(tol));
			json_dumpf(j, stdout, JSON_COMPACT);
			putchar('\n');
			json_decref(j);
		}
	}
	scar_diff_result_free(r);
	free(names);
	cli_flush_stdout();
	return differ ? EXIT_NO : 0;
}
