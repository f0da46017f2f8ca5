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
#include <sys/ioctl.h>
#include <unistd.h>

#include "scar/diff.h"
#include "scar/file.h"
#include "cli.h"

enum {
	OPT_ALL = 256, OPT_JSON, OPT_LIMIT, OPT_PER, OPT_SORT, OPT_STRICT, OPT_TENSOR, OPT_TEXT,
	OPT_TOLERANCE, OPT_TOP,
};

static const struct option opts[] = {
	{ "all", no_argument, NULL, OPT_ALL },
	{ "help", no_argument, NULL, 'h' },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "limit", required_argument, NULL, OPT_LIMIT },
	{ "per", required_argument, NULL, OPT_PER },
	{ "quiet", no_argument, NULL, 'q' },
	{ "sort", required_argument, NULL, OPT_SORT },
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
		"usage: scar-diff [--all] [--json | --text] [--limit N] [--per row|tensor] [-q]\n"
		"                 [--sort l2|linf|rel|name] [--strict] [--tensor NAME]...\n"
		"                 [--tolerance X] [--top K] A B\n"
		"\n"
		"Measure A - B between two snapshots: scar checkpoints, .npy or safetensors\n"
		"files, or Hugging Face sharded safetensors directories (or their\n"
		"*.safetensors.index.json), matched by tensor name; '-' reads one of them\n"
		"from stdin.\n"
		"\n"
		"      --all          compare state tensors too (default: parameters only)\n"
		"  -h, --help         show this help and exit\n"
		"      --json         JSON output even on a terminal\n"
		"      --limit N      list only the first N tensors (totals stay over all)\n"
		"      --per WHAT     'row': one JSON line per compared row, then the summary;\n"
		"                     'tensor' (default): the summary only\n"
		"  -q, --quiet        print nothing on stdout; the exit status says it\n"
		"      --sort KEY     list tensors by l2, linf or rel (largest first) or by name\n"
		"                     (default: in A's order)\n"
		"      --strict       rows or tensors present in one side only count as differences\n"
		"                     (without it a tensor in one side only is a warning)\n"
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
	int tty;		/* stdout is a terminal: long names are shortened to fit it */
	unsigned cols;		/* its width */
	const size_t *order;	/* the tensors to list, in order (NULL: file order) */
	size_t nlist;		/* how many of them */
	size_t limit;		/* --limit, for the line about the others */
};

#define NUMW 10		/* a norm column: "1.2346e-05" (norms are not negative) */

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

/* Columns a quoted name takes: one per code point (its escapes are ASCII). */
static size_t width_of(const char *s)
{
	size_t w = 0;

	for (; *s; s++)
		w += ((unsigned char)*s & 0xC0) != 0x80;
	return w;
}

/* Byte offset of code point k of s (its length when s has fewer). */
static size_t cp_offset(const char *s, size_t k)
{
	size_t i = 0;

	for (; s[i]; i++)
		if (((unsigned char)s[i] & 0xC0) != 0x80 && k-- == 0)
			return i;
	return i;
}

/*
 * Print quoted name s in a column of w: padded, or cut in the middle to
 * "head...tail" when longer (the end of a name tells layers apart, the
 * start says which block). Only at a terminal: a pipe gets names whole.
 */
static void put_name(const char *s, size_t w, int cut)
{
	size_t n = width_of(s);

	if (cut && n > w && w > 3) {
		size_t head = (w - 3) / 2, tail = w - 3 - head;

		fwrite(s, 1, cp_offset(s, head), stdout);
		fputs("...", stdout);
		fputs(s + cp_offset(s, n - tail), stdout);
		n = w;
	} else {
		fputs(s, stdout);
	}
	for (; n < w; n++)
		putchar(' ');
}

/* The terminal's width: $COLUMNS as ls(1) takes it, else the tty's, else 80. */
static unsigned term_cols(void)
{
	struct winsize ws;
	const char *e = getenv("COLUMNS");
	char *end;
	unsigned long v = e && *e ? strtoul(e, &end, 10) : 0;

	if (e && *e && !*end && v > 0 && v < 100000)
		return (unsigned)v;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	return 80;
}

static void pr_norms(const struct scar_norms *n)
{
	printf("l2 %-11s rel_l2 %-11s l1 %-11s linf %-11s changed %llu/%llu",
	       g(n->l2, 5), g(n->rel_l2, 5), g(n->l1, 5), g(n->linf, 5),
	       (unsigned long long)n->changed, (unsigned long long)n->elements);
}

/* One table row's numbers, after its label; l1 only when there is room for it. */
static void pr_cells(const struct scar_norms *n, int l1)
{
	printf("  %*s %*s", NUMW, g(n->l2, 5), NUMW, g(n->rel_l2, 5));
	if (l1)
		printf(" %*s", NUMW, g(n->l1, 5));
	printf(" %*s  %llu/%llu", NUMW, g(n->linf, 5), (unsigned long long)n->changed,
	       (unsigned long long)n->elements);
}

static void pr_head(const char *label, size_t w, int l1)
{
	put_name(label, w, 0);
	printf("  %*s %*s", NUMW, "l2", NUMW, "rel_l2");
	if (l1)
		printf(" %*s", NUMW, "l1");
	printf(" %*s  changed\n", NUMW, "linf");
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

static size_t digits(unsigned long long v)
{
	size_t n = 1;

	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

/*
 * The tensors table: names in a column as wide as the longest. When that
 * is wider than the terminal, l1 goes first (the total line still has it),
 * then the names are cut in the middle.
 */
static void tensor_table(const struct scar_diff_result *r, const struct out *o)
{
	size_t namew = strlen("tensor"), longest = namew, tailw = strlen("changed");
	int l1 = 1;

	for (size_t k = 0; k < o->nlist; k++) {
		const struct scar_diff_tensor *t = &r->tensors[o->order ? o->order[k] : k];
		size_t tw = digits(t->n.changed) + 1 + digits(t->n.elements);

		if (t->rows_only_a || t->rows_only_b)
			tw += strlen(" missing + rows") + digits(t->rows_only_a) + digits(t->rows_only_b);
		if (tw > tailw)
			tailw = tw;
		if (width_of(q(t->name)) > longest)
			longest = width_of(q(t->name));
	}
	namew = longest;
	if (o->tty) {
		size_t rest = 2 + 4 * NUMW + 3 + 2 + tailw, room = o->cols > rest ? o->cols - rest : 0;

		if (namew > room) {
			l1 = 0;
			room += NUMW + 1;
		}
		/* a name column narrower than 16 says too little: let the line wrap */
		if (namew > room)
			namew = room > 16 ? room : longest < 16 ? longest : 16;
	}
	if (o->nlist)
		pr_head("tensor", namew, l1);
	for (size_t k = 0; k < o->nlist; k++) {
		const struct scar_diff_tensor *t = &r->tensors[o->order ? o->order[k] : k];

		put_name(q(t->name), namew, o->tty);
		pr_cells(&t->n, l1);
		if (t->rows_only_a || t->rows_only_b)
			printf(" missing %llu+%llu rows", (unsigned long long)t->rows_only_a,
			       (unsigned long long)t->rows_only_b);
		putchar('\n');
	}
	if (o->nlist < r->ntensors)
		printf("(%zu more tensor%s not listed: --limit %zu)\n", r->ntensors - o->nlist,
		       r->ntensors - o->nlist == 1 ? "" : "s", o->limit);
}

static void text_report(const struct scar_diff_result *r, const struct out *o)
{
	side_text(&r->a);
	printf(" vs ");
	side_text(&r->b);
	printf("\ntotal      ");
	pr_norms(&r->total);
	printf("\n");
	tensor_table(r, o);
	if (r->nshards > 1) {
		size_t w = digits(r->nshards - 1) > 5 ? digits(r->nshards - 1) : 5;

		pr_head("shard", w, 1);
		for (uint32_t s = 0; s < r->nshards; s++) {
			printf("%-*u", (int)w, s);
			pr_cells(&r->shards[s], 1);
			putchar('\n');
		}
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

/*
 * Tensors in one snapshot only are not compared, so an exit status of 0
 * says nothing about them: name them on stderr (the first few of each
 * side; cli_warn quotes them), unless the text report on stdout lists
 * them already.
 */
#define ONLY_NAMED 8

static void warn_only(char (*names)[SCAR_NAME_MAX], size_t n, const char *path, int strict)
{
	for (size_t i = 0; i < n && i < ONLY_NAMED; i++)
		cli_warn("warning: tensor '%s' is only in '%s': not compared%s", names[i], path,
			 strict ? " (a difference: --strict)" : " (--strict makes it a difference)");
	if (n > ONLY_NAMED)
		cli_warn("warning: %zu more tensors are only in '%s'", n - ONLY_NAMED, path);
}

int main(int argc, char **argv)
{
	struct scar_diff_opts o;
	struct scar_diff_result *r = NULL;
	struct scar_error err;
	struct out out;
	const char **names = NULL;
	size_t nnames = 0, limit = SIZE_MAX, *order = NULL;
	enum scar_diff_sort sort = SCAR_DIFF_SORT_FILE;
	int c, force_json = 0, force_text = 0, per_row = 0, strict = 0, differ;
	double tol = 0;

	cli_init(argv[0]);
	memset(&out, 0, sizeof(out));
	scar_diff_opts_init(&o);
	while ((c = getopt_long(argc, argv, "hqV", opts, NULL)) != -1) {
		switch (c) {
		case OPT_ALL: o.all = 1; break;
		case 'h': usage(stdout); return 0;
		case OPT_JSON: force_json = 1; break;
		case OPT_LIMIT: limit = (size_t)cli_parse_u64("--limit", optarg, 0, SIZE_MAX); break;
		case OPT_PER:
			if (strcmp(optarg, "row") == 0)
				per_row = 1;
			else if (strcmp(optarg, "tensor") == 0)
				per_row = 0;
			else
				cli_usage_error("option '--per': '%s' is not 'row' or 'tensor'", optarg);
			break;
		case 'q': out.quiet = 1; break;
		case OPT_SORT:
			if (strcmp(optarg, "l2") == 0)
				sort = SCAR_DIFF_SORT_L2;
			else if (strcmp(optarg, "linf") == 0)
				sort = SCAR_DIFF_SORT_LINF;
			else if (strcmp(optarg, "rel") == 0)
				sort = SCAR_DIFF_SORT_REL;
			else if (strcmp(optarg, "name") == 0)
				sort = SCAR_DIFF_SORT_NAME;
			else
				cli_usage_error("option '--sort': '%s' is not l2, linf, rel or name", optarg);
			break;
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
	out.tty = isatty(STDOUT_FILENO);
	out.text = force_text || (!force_json && out.tty);
	out.cols = out.tty ? term_cols() : 0;
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
	if (out.quiet || !out.text) {
		warn_only(r->only_a, r->nonly_a, r->a.path, strict);
		warn_only(r->only_b, r->nonly_b, r->b.path, strict);
	}
	if (sort != SCAR_DIFF_SORT_FILE && !(order = scar_diff_tensor_order(r, sort)) && r->ntensors)
		cli_die("out of memory");
	out.order = order;
	out.nlist = limit < r->ntensors ? limit : r->ntensors;
	out.limit = limit;
	if (!out.quiet) {
		if (out.text) {
			text_report(r, &out);
			printf("%s\n", differ ? "differ" : tol > 0 ? "within tolerance" : "equal");
		} else {
			json_t *j = scar_diff_result_json_list(r, order, out.nlist);

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
	free(order);
	free(names);
	cli_flush_stdout();
	return differ ? EXIT_NO : 0;
}
