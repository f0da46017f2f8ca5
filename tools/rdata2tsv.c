/*
 * rdata2tsv - write columns of a data frame stored in an R lazy-load
 * database (DIR/Rdata.rdx and DIR/Rdata.rdb, as installed R packages ship
 * their data sets) as tab-separated text, one row a line. `make data` uses
 * it on lme4's InstEval (students rating lecturers) for the mf workload.
 *
 * Formats: the .rdx index is a gzip-compressed R serialization (XDR,
 * version 2 or 3) of list(variables = named list of c(offset, length),
 * references, compressed); an object in the .rdb is a 4-byte big-endian
 * length and a zlib stream of its serialization (compressed = TRUE; the
 * bzip2 and xz variants are refused). The reader understands the vector,
 * pairlist and symbol types that data frames are made of; anything else
 * (environments, closures, ALTREP columns) is refused with its type number.
 * Factors are written as their 1-based codes, integers and logicals as
 * numbers, doubles with %.17g; an NA is an error (the loaders take none).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define PROG "rdata2tsv"
#define NA_INT INT32_MIN
#define MAX_DEPTH 1000

enum {
	NILSXP = 0, SYMSXP = 1, LISTSXP = 2, CLOSXP = 3, PROMSXP = 5, LANGSXP = 6,
	CHARSXP = 9, LGLSXP = 10, INTSXP = 13, REALSXP = 14, CPLXSXP = 15, STRSXP = 16,
	DOTSXP = 17, VECSXP = 19, EXPRSXP = 20, RAWSXP = 24, S4SXP = 25,
	ATTRLISTSXP = 239, ATTRLANGSXP = 240, BASEENV_SXP = 241, EMPTYENV_SXP = 242,
	MISSINGARG_SXP = 251, UNBOUNDVALUE_SXP = 252, GLOBALENV_SXP = 253, NILVALUE_SXP = 254,
	REFSXP = 255
};

struct rnode {
	int type;
	uint64_t len;
	int32_t *iv;		/* LGLSXP, INTSXP */
	double *dv;		/* REALSXP (CPLXSXP: 2 len) */
	char *s;		/* CHARSXP (NULL: NA) */
	struct rnode **v;	/* STRSXP, VECSXP, EXPRSXP elements */
	struct rnode *attr, *tag, *car, *cdr;	/* pairlists; attr for any type */
	struct rnode *next;	/* every node, for freeing */
};

struct reader {
	const unsigned char *p, *end;
	struct rnode **refs;
	size_t nrefs, caprefs;
	struct rnode *all;
	const char *what;	/* for messages */
};

static char *out_tmp;		/* the output being written, removed on failure */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	if (out_tmp)
		remove(out_tmp);

	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p)
		die("out of memory");
	return p;
}

static struct rnode *node(struct reader *r, int type)
{
	struct rnode *x = xcalloc(1, sizeof(*x));

	x->type = type;
	x->next = r->all;
	r->all = x;
	return x;
}

static void need(struct reader *r, uint64_t n)
{
	if ((uint64_t)(r->end - r->p) < n)
		die("%s: the serialization ends early", r->what);
}

static uint32_t in_u32(struct reader *r)
{
	uint32_t v;

	need(r, 4);
	v = (uint32_t)r->p[0] << 24 | (uint32_t)r->p[1] << 16 | (uint32_t)r->p[2] << 8 | r->p[3];
	r->p += 4;
	return v;
}

static int32_t in_int(struct reader *r)
{
	return (int32_t)in_u32(r);
}

static double in_double(struct reader *r)
{
	uint64_t b = (uint64_t)in_u32(r) << 32;
	double d;

	b |= in_u32(r);
	memcpy(&d, &b, sizeof(d));
	return d;
}

/* A vector length; every element takes a byte or more, so a longer one is damage. */
static uint64_t in_length(struct reader *r)
{
	int32_t n = in_int(r);
	uint64_t len = (uint64_t)n;

	if (n == -1) {
		uint64_t hi = in_u32(r), lo = in_u32(r);

		len = hi << 32 | lo;
	} else if (n < 0) {
		die("%s: negative vector length %d", r->what, (int)n);
	}
	if (len > (uint64_t)(r->end - r->p))
		die("%s: the serialization ends early", r->what);
	return len;
}

static struct rnode *read_item(struct reader *r, int depth);

/* A pairlist (LISTSXP and its kin): attr, tag, car, then the rest, iteratively. */
static struct rnode *read_pairlist(struct reader *r, uint32_t flags, int depth)
{
	struct rnode *head = NULL, **at = &head;

	for (;;) {
		struct rnode *x = node(r, (int)(flags & 0xff));

		if (flags & (1u << 9))
			x->attr = read_item(r, depth + 1);
		if (flags & (1u << 10))
			x->tag = read_item(r, depth + 1);
		x->car = read_item(r, depth + 1);
		*at = x;
		at = &x->cdr;
		flags = in_u32(r);
		switch (flags & 0xff) {
		case LISTSXP: case LANGSXP: case ATTRLISTSXP: case ATTRLANGSXP: case DOTSXP:
			continue;
		default:
			r->p -= 4;
			*at = read_item(r, depth + 1);
			return head;
		}
	}
}

static struct rnode *read_item(struct reader *r, int depth)
{
	uint32_t flags = in_u32(r);
	int type = (int)(flags & 0xff);
	struct rnode *x;

	if (depth > MAX_DEPTH)
		die("%s: nested deeper than %d", r->what, MAX_DEPTH);
	switch (type) {
	case NILVALUE_SXP:
		return NULL;
	case EMPTYENV_SXP: case BASEENV_SXP: case GLOBALENV_SXP: case UNBOUNDVALUE_SXP:
	case MISSINGARG_SXP:
		return node(r, type);
	case REFSXP: {
		uint32_t i = flags >> 8;

		if (i == 0)
			i = in_u32(r);
		if (i < 1 || i > r->nrefs)
			die("%s: reference %u to an unknown item", r->what, i);
		return r->refs[i - 1];
	}
	case SYMSXP:
		x = node(r, type);
		x->car = read_item(r, depth + 1);
		if (!x->car || x->car->type != CHARSXP)
			die("%s: a symbol without a name", r->what);
		if (r->nrefs == r->caprefs) {
			r->caprefs = r->caprefs ? 2 * r->caprefs : 64;
			r->refs = realloc(r->refs, r->caprefs * sizeof(*r->refs));
			if (!r->refs)
				die("out of memory");
		}
		r->refs[r->nrefs++] = x;
		return x;
	case LISTSXP: case LANGSXP: case ATTRLISTSXP: case ATTRLANGSXP: case DOTSXP:
		return read_pairlist(r, flags, depth);
	case CHARSXP: {
		int32_t n = in_int(r);

		x = node(r, type);
		if (n == -1)
			return x;
		if (n < 0)
			die("%s: negative string length %d", r->what, (int)n);
		need(r, (uint64_t)n);
		x->s = xcalloc((size_t)n + 1, 1);
		memcpy(x->s, r->p, (size_t)n);
		r->p += n;
		return x;
	}
	case LGLSXP: case INTSXP:
		x = node(r, type);
		x->len = in_length(r);
		need(r, 4 * x->len);
		x->iv = xcalloc(x->len, sizeof(*x->iv));
		for (uint64_t i = 0; i < x->len; i++)
			x->iv[i] = in_int(r);
		break;
	case REALSXP: case CPLXSXP: {
		uint64_t n;

		x = node(r, type);
		x->len = in_length(r);
		n = type == CPLXSXP ? 2 * x->len : x->len;
		need(r, 8 * n);
		x->dv = xcalloc(n, sizeof(*x->dv));
		for (uint64_t i = 0; i < n; i++)
			x->dv[i] = in_double(r);
		break;
	}
	case STRSXP: case VECSXP: case EXPRSXP:
		x = node(r, type);
		x->len = in_length(r);
		need(r, 4 * x->len);	/* every element takes 4 bytes or more */
		x->v = xcalloc(x->len, sizeof(*x->v));
		for (uint64_t i = 0; i < x->len; i++)
			x->v[i] = read_item(r, depth + 1);
		break;
	case RAWSXP:
		x = node(r, type);
		x->len = in_length(r);
		need(r, x->len);
		r->p += x->len;
		break;
	case S4SXP:
		x = node(r, type);
		break;
	default:
		die("%s: R type %d is not supported (only data frames of vectors are)", r->what, type);
	}
	if (flags & (1u << 9))
		x->attr = read_item(r, depth + 1);
	return x;
}

/* The value of attribute `name` of x, or NULL. */
static const struct rnode *attr(const struct rnode *x, const char *name)
{
	for (const struct rnode *a = x ? x->attr : NULL; a; a = a->cdr)
		if (a->tag && a->tag->type == SYMSXP && a->tag->car->s &&
		    strcmp(a->tag->car->s, name) == 0)
			return a->car;
	return NULL;
}

/* Element `name` of a named list (VECSXP), or NULL. */
static const struct rnode *member(const struct rnode *list, const char *name)
{
	const struct rnode *names = attr(list, "names");

	if (!list || list->type != VECSXP || !names || names->type != STRSXP)
		return NULL;
	for (uint64_t i = 0; i < names->len && i < list->len; i++)
		if (names->v[i] && names->v[i]->s && strcmp(names->v[i]->s, name) == 0)
			return list->v[i];
	return NULL;
}

static int has_class(const struct rnode *x, const char *cls)
{
	const struct rnode *c = attr(x, "class");

	for (uint64_t i = 0; c && c->type == STRSXP && i < c->len; i++)
		if (c->v[i] && c->v[i]->s && strcmp(c->v[i]->s, cls) == 0)
			return 1;
	return 0;
}

static struct rnode *unserialize(struct reader *r, const unsigned char *buf, size_t n,
				 const char *what)
{
	int32_t version;

	r->p = buf;
	r->end = buf + n;
	r->what = what;
	need(r, 2);
	if (memcmp(buf, "X\n", 2) != 0)
		die("%s: not an XDR R serialization", what);
	r->p += 2;
	version = in_int(r);
	if (version != 2 && version != 3)
		die("%s: serialization version %d (2 or 3 are read)", what, (int)version);
	in_int(r);		/* the writer's R version */
	in_int(r);		/* the oldest R that reads it */
	if (version == 3) {
		int32_t n_enc = in_int(r);

		if (n_enc < 0 || n_enc > 64)
			die("%s: bad native encoding length %d", what, (int)n_enc);
		need(r, (uint64_t)n_enc);
		r->p += n_enc;
	}
	return read_item(r, 0);
}

static void reader_free(struct reader *r)
{
	while (r->all) {
		struct rnode *x = r->all;

		r->all = x->next;
		free(x->iv);
		free(x->dv);
		free(x->s);
		free(x->v);
		free(x);
	}
	free(r->refs);
	r->refs = NULL;
	r->nrefs = r->caprefs = 0;
}

/* The whole of a gzip (or plain) file, via zlib. */
static unsigned char *read_gz(const char *path, size_t *n)
{
	gzFile f = gzopen(path, "rb");
	unsigned char *buf = NULL;
	size_t cap = 0, len = 0;
	int k;

	if (!f)
		die("cannot open '%s': %s", path, strerror(errno ? errno : ENOMEM));
	do {
		if (cap - len < 65536) {
			cap = cap ? 2 * cap : 1 << 16;
			if (!(buf = realloc(buf, cap)))
				die("out of memory");
		}
		k = gzread(f, buf + len, (unsigned)(cap - len));
		if (k < 0)
			die("cannot read '%s': %s", path, gzerror(f, &k));
		len += (size_t)k;
	} while (k > 0);
	gzclose(f);
	*n = len;
	return buf;
}

/* Object `off`, `len` of the .rdb: its serialization, uncompressed. */
static unsigned char *read_rdb(const char *path, double off, double len, size_t *n)
{
	FILE *f = fopen(path, "rb");
	unsigned char *z, *out;
	uLongf outlen;
	uint32_t want;

	if (!f)
		die("cannot open '%s': %s", path, strerror(errno));
	if (!(off >= 0 && len >= 5 && off + len < 9e15))
		die("'%s': bad object position %.17g, %.17g in the index", path, off, len);
	z = xcalloc((size_t)len, 1);
	if (fseeko(f, (off_t)off, SEEK_SET) < 0 || fread(z, 1, (size_t)len, f) != (size_t)len)
		die("'%s': cannot read %.17g bytes at %.17g (file too short?)", path, len, off);
	fclose(f);
	want = (uint32_t)z[0] << 24 | (uint32_t)z[1] << 16 | (uint32_t)z[2] << 8 | z[3];
	if (z[4] == 'Z' || z[4] == '2' || z[4] == '0')
		die("'%s': the object is stored with compression type '%c' (only zlib is read)",
		    path, z[4]);
	out = xcalloc(want, 1);
	outlen = want;
	if (uncompress(out, &outlen, z + 4, (uLong)(len - 4)) != Z_OK || outlen != want)
		die("'%s': the object at %.17g does not inflate to its %u bytes", path, off, want);
	free(z);
	*n = want;
	return out;
}

static const char usage_text[] =
	"usage: " PROG " --object name --columns a,b,... [--output file] dir/Rdata\n"
	"       " PROG " --help\n"
	"Write columns of a data frame stored in an R lazy-load database\n"
	"(dir/Rdata.rdx and dir/Rdata.rdb) as tab-separated lines.\n"
	"  --columns a,b,... the columns to write, in this order\n"
	"  --help            show this help\n"
	"  --object name     the data frame's name in the database\n"
	"  --output file     write here (via file.tmp, renamed) instead of stdout\n";

static void usage_error(const char *msg)
{
	fprintf(stderr, PROG ": %s\ntry '" PROG " --help'\n", msg);
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "columns", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ "object", required_argument, NULL, 'o' },
		{ "output", required_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	const char *object = NULL, *output = NULL;
	char *columns = NULL, *rdx, *rdb, *tmp = NULL;
	const struct rnode *index, *vars, *pos, *comp, *df, *cols[64];
	struct reader ri = { 0 }, ro = { 0 };
	unsigned char *buf;
	size_t n, ncol = 0, nb;
	uint64_t nrow = 0;
	FILE *out = stdout;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			fputs(usage_text, stdout);
			return fflush(stdout) || ferror(stdout) ? 2 : 0;
		case 'c': columns = optarg; break;
		case 'o': object = optarg; break;
		case 'w': output = optarg; break;
		default:
			fprintf(stderr, "try '" PROG " --help'\n");
			return 2;
		}
	}
	if (!object || !columns)
		usage_error("--object and --columns are required");
	if (optind + 1 != argc)
		usage_error("give one database: dir/Rdata (for dir/Rdata.rdx and .rdb)");
	nb = strlen(argv[optind]) + 5;
	rdx = xcalloc(nb, 1);
	rdb = xcalloc(nb, 1);
	snprintf(rdx, nb, "%s.rdx", argv[optind]);
	snprintf(rdb, nb, "%s.rdb", argv[optind]);

	buf = read_gz(rdx, &n);
	index = unserialize(&ri, buf, n, rdx);
	vars = member(index, "variables");
	comp = member(index, "compressed");
	if (!vars)
		die("'%s' is not a lazy-load index (no 'variables')", rdx);
	if (comp && !((comp->type == LGLSXP || comp->type == INTSXP) && comp->len == 1 &&
		      comp->iv[0] == 1))
		die("'%s': only zlib-compressed databases (compressed = TRUE) are read", rdx);
	pos = member(vars, object);
	if (!pos)
		die("'%s' has no object '%s'", rdx, object);
	if (pos->type != INTSXP || pos->len != 2)
		die("'%s': the position of '%s' is not two integers", rdx, object);
	free(buf);
	buf = read_rdb(rdb, pos->iv[0], pos->iv[1], &n);
	reader_free(&ri);

	df = unserialize(&ro, buf, n, object);
	if (!df || df->type != VECSXP || !has_class(df, "data.frame"))
		die("'%s' is not a data frame", object);
	for (char *s = strtok(columns, ","); s; s = strtok(NULL, ",")) {
		const struct rnode *x = member(df, s);

		if (ncol == sizeof(cols) / sizeof(cols[0]))
			die("more than %zu columns", ncol);
		if (!x)
			die("'%s' has no column '%s'", object, s);
		if (x->type != INTSXP && x->type != LGLSXP && x->type != REALSXP)
			die("'%s': column '%s' is of R type %d (integer, logical, factor or double are written)",
			    object, s, x->type);
		if (ncol && x->len != nrow)
			die("'%s': column '%s' has %llu rows, not %llu", object, s,
			    (unsigned long long)x->len, (unsigned long long)nrow);
		nrow = x->len;
		cols[ncol++] = x;
	}
	if (ncol == 0)
		usage_error("--columns names no column");
	/* NAs first, so that a refused frame writes nothing. */
	for (uint64_t i = 0; i < nrow; i++)
		for (size_t j = 0; j < ncol; j++)
			if (cols[j]->type == REALSXP ? isnan(cols[j]->dv[i]) : cols[j]->iv[i] == NA_INT)
				die("'%s': row %llu has an NA", object, (unsigned long long)i + 1);
	/* A factor's codes index its levels, 1..nlevels: anything else is damage. */
	for (size_t j = 0; j < ncol; j++) {
		const struct rnode *lv = attr(cols[j], "levels");

		if (cols[j]->type != INTSXP || !has_class(cols[j], "factor"))
			continue;
		if (!lv || lv->type != STRSXP)
			die("'%s': factor column %zu has no levels", object, j + 1);
		for (uint64_t i = 0; i < nrow; i++)
			if (cols[j]->iv[i] < 1 || (uint64_t)cols[j]->iv[i] > lv->len)
				die("'%s': factor column %zu, row %llu: code %d is outside 1..%llu",
				    object, j + 1, (unsigned long long)i + 1, (int)cols[j]->iv[i],
				    (unsigned long long)lv->len);
	}
	if (output) {
		nb = strlen(output) + 5;
		tmp = xcalloc(nb, 1);
		snprintf(tmp, nb, "%s.tmp", output);
		if (!(out = fopen(tmp, "w")))
			die("cannot create '%s': %s", tmp, strerror(errno));
		out_tmp = tmp;
	}
	for (uint64_t i = 0; i < nrow; i++) {
		for (size_t j = 0; j < ncol; j++) {
			const struct rnode *x = cols[j];

			if (j)
				fputc('\t', out);
			if (x->type == REALSXP)
				fprintf(out, "%.17g", x->dv[i]);
			else
				fprintf(out, "%d", (int)x->iv[i]);
		}
		fputc('\n', out);
	}
	if (ferror(out) | (fflush(out) != 0))
		die("cannot write '%s': %s", output ? tmp : "stdout", strerror(errno));
	if (output) {
		if (fclose(out) != 0)
			die("cannot write '%s': %s", tmp, strerror(errno));
		if (rename(tmp, output) < 0)
			die("cannot rename '%s' to '%s': %s", tmp, output, strerror(errno));
		out_tmp = NULL;
	}
	reader_free(&ro);
	free(buf);
	free(rdx);
	free(rdb);
	free(tmp);
	return 0;
}
