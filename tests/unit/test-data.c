/*
 * test-data.c - the data-set readers on tiny fixtures (exact values), their
 * bad inputs, the ratings split, and the real data sets when `make data`
 * has put them in the cache (skipped with a message otherwise).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data_common.h"
#include "scar/data.h"
#include "scar/rng.h"
#include "unit.h"

static char fixdir[1024];

static const char *fx(const char *name)
{
	static char buf[4][1200];
	static int k;

	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", fixdir, name);
	return buf[k];
}

static int exists(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0;
}

static void find_fixtures(const char *argv0)
{
	const char *slash = strrchr(argv0, '/');

	snprintf(fixdir, sizeof(fixdir), "tests/fixtures/data");
	if (exists(fixdir))
		return;
	if (slash)
		snprintf(fixdir, sizeof(fixdir), "%.*s/../fixtures/data", (int)(slash - argv0), argv0);
}

/* An IDX load that must fail with code, at offset off (-2 = do not check). */
static void idx_bad(const char *img, const char *lab, int code, int64_t off)
{
	struct scar_dense *ds = (struct scar_dense *)1;
	struct scar_error e;
	int rc;

	scar_error_clear(&e);
	rc = scar_idx_load(img ? fx(img) : NULL, lab ? fx(lab) : NULL, &ds, &e);
	CHECK(rc == code);
	CHECK(e.code == code);
	CHECK(ds == NULL);
	CHECK(e.msg[0] != '\0');
	if (off != -2)
		CHECK(e.offset == off);
	if (rc != code || (off != -2 && e.offset != off))
		fprintf(stderr, "  %s: rc %d offset %lld: %s\n", img, rc, (long long)e.offset, e.msg);
}

static void test_idx(void)
{
	const char *variants[][2] = {
		{ "idx-images.idx3", "idx-labels.idx1" },
		{ "idx-images.idx3.gz", "idx-labels.idx1.gz" },
		{ "idx-images.idx3.gz", "idx-labels.idx1" },
	};
	static const unsigned char px[12] = { 0, 255, 51, 102, 1, 2, 3, 4, 250, 251, 252, 253 };

	for (size_t v = 0; v < 3; v++) {
		struct scar_dense *ds = NULL;

		CHECK_RC(scar_idx_load(fx(variants[v][0]), fx(variants[v][1]), &ds, NULL));
		if (!ds)
			continue;
		CHECK(ds->n == 3 && ds->d == 4 && ds->classes == 3);
		CHECK(ds->label && ds->label[0] == 2 && ds->label[1] == 0 && ds->label[2] == 1);
		CHECK(ds->target == NULL);
		for (int i = 0; i < 12; i++)
			CHECK(ds->x[i] == (float)(px[i] / 255.0));
		CHECK(ds->x[1] == 1.0f && ds->x[0] == 0.0f);
		scar_dense_free(ds);
	}
	{
		struct scar_dense *ds = NULL;

		CHECK_RC(scar_idx_load(fx("idx-images.idx3"), NULL, &ds, NULL));
		CHECK(ds && ds->n == 3 && ds->label == NULL && ds->classes == 0);
		scar_dense_free(ds);
	}
	idx_bad("idx-bad-magic.idx3", NULL, SCAR_EFORMAT, 0);
	idx_bad("idx-truncated.idx3", NULL, SCAR_ETRUNC, 25);
	idx_bad("idx-truncated.idx3.gz", NULL, SCAR_ETRUNC, -2);
	idx_bad("idx-trailing.idx3", NULL, SCAR_ECORRUPT, 28);
	idx_bad("idx-images.idx3", "idx-labels-4.idx1", SCAR_EMISMATCH, -2);
	idx_bad("idx-float.idx3", NULL, SCAR_EUNSUPPORTED, 2);
	idx_bad("idx-huge.idx3", NULL, SCAR_ECORRUPT, -2);
	idx_bad("idx-huge.idx3.gz", NULL, SCAR_ECORRUPT, -2);
	idx_bad("idx-short-header.idx3", NULL, SCAR_ETRUNC, 9);
	idx_bad("idx-empty.idx3", NULL, SCAR_EFORMAT, 0);
	idx_bad("idx-zero-dim.idx3", NULL, SCAR_ECORRUPT, 4);
	idx_bad("idx-labels.idx1", NULL, SCAR_EFORMAT, 3);	/* 1-d file as images */
	idx_bad("idx-images.idx3", "idx-images.idx3", SCAR_EFORMAT, 3);
	idx_bad("no-such-file.idx3", NULL, SCAR_EIO, -2);
}

/* A scratch LIBSVM file of the given text; returns its path. */
static const char *svm_tmp(const char *name, const char *text)
{
	static char path[2][256];
	static int k;
	FILE *f;

	k = (k + 1) % 2;
	snprintf(path[k], sizeof(path[k]), "%s/scar-test-data-%ld-%s",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (long)getpid(), name);
	f = fopen(path[k], "w");
	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
	return path[k];
}

/* A test file's labels mean the training file's classes, whichever it holds. */
static void test_libsvm_like(void)
{
	struct scar_dense *tr = NULL, *te = NULL;
	struct scar_error e;
	const char *p;

	CHECK_RC(scar_libsvm_load(fx("svm-good.txt"), 0, 1, &tr, NULL));
	if (!tr)
		return;
	CHECK(tr->class_value && tr->class_value[0] == -1 && tr->class_value[1] == 1);
	/* only the label +1: still class 1 of 2 */
	p = svm_tmp("one.txt", "1 1:2\n+1.0 2:3\n");
	CHECK_RC(scar_libsvm_load_like(p, tr->d, tr, &te, NULL));
	CHECK(te && te->n == 2 && te->classes == 2 && te->label[0] == 1 && te->label[1] == 1);
	CHECK(te && te->d == 4 && te->x[0] == 2 && te->x[4 + 1] == 3);
	scar_dense_free(te);
	unlink(p);
	/* a label the training file does not have: refused at its line */
	p = svm_tmp("new.txt", "-1 1:1\n# comment\n2 1:1\n");
	scar_error_clear(&e);
	te = (struct scar_dense *)1;
	CHECK(scar_libsvm_load_like(p, tr->d, tr, &te, &e) == SCAR_EMISMATCH);
	CHECK(te == NULL && e.line == 3 && strcmp(e.file, p) == 0);
	CHECK(strcmp(e.msg, "label '2' is not a class of the training data") == 0);
	unlink(p);
	/* a feature beyond the dimension */
	p = svm_tmp("wide.txt", "-1 5:1\n");
	scar_error_clear(&e);
	CHECK(scar_libsvm_load_like(p, tr->d, tr, &te, &e) == SCAR_ERANGE && e.line == 1);
	CHECK_RC(scar_libsvm_load_like(p, 5, tr, &te, NULL));
	CHECK(te && te->d == 5 && te->label[0] == 0 && te->x[4] == 1);
	scar_dense_free(te);
	unlink(p);
	/* without training labels */
	tr->classes = 0;
	CHECK(scar_libsvm_load_like(fx("svm-good.txt"), 0, tr, &te, &e) == SCAR_EINVAL);
	scar_dense_free(tr);
}

static void test_libsvm(void)
{
	struct scar_dense *ds = NULL;
	struct scar_error e;

	CHECK_RC(scar_libsvm_load(fx("svm-good.txt"), 0, 1, &ds, NULL));
	if (ds) {
		static const float want[3][4] = {
			{ 0.5f, 0, -2, 0 }, { 0, 0.1f, 0, 7 }, { 0, 0, 0, 0 },
		};

		CHECK(ds->n == 3 && ds->d == 4 && ds->classes == 2);
		CHECK(ds->label[0] == 1 && ds->label[1] == 0 && ds->label[2] == 1);
		CHECK(ds->target == NULL);
		for (int i = 0; i < 3; i++)
			for (int j = 0; j < 4; j++)
				CHECK(ds->x[i * 4 + j] == want[i][j]);
		scar_dense_free(ds);
	}
	ds = NULL;
	CHECK_RC(scar_libsvm_load(fx("svm-good.txt"), 6, 0, &ds, NULL));
	if (ds) {
		CHECK(ds->n == 3 && ds->d == 6 && ds->classes == 0 && ds->label == NULL);
		CHECK(ds->target[0] == 1.0f && ds->target[1] == -1.0f && ds->target[2] == 1.0f);
		CHECK(ds->x[6 + 3] == 7.0f && ds->x[6 + 5] == 0.0f);
		scar_dense_free(ds);
	}
	ds = NULL;
	CHECK_RC(scar_libsvm_load(fx("svm-regression.txt"), 0, 0, &ds, NULL));
	CHECK(ds && ds->n == 2 && ds->d == 2 && ds->target[0] == 2.5f && ds->target[1] == -0.25f);
	CHECK(ds && ds->x[0] == 1.0f && ds->x[3] == 2.0f && ds->x[1] == 0.0f);
	scar_dense_free(ds);

	scar_error_clear(&e);
	ds = (struct scar_dense *)1;
	CHECK(scar_libsvm_load(fx("svm-bad-token.txt"), 0, 1, &ds, &e) == SCAR_EFORMAT);
	CHECK(ds == NULL && e.line == 3 && strcmp(e.file, fx("svm-bad-token.txt")) == 0);
	CHECK(strcmp(e.msg, "expected 'idx:value', got '3:abc'") == 0);
	scar_error_clear(&e);
	CHECK(scar_libsvm_load(fx("svm-decreasing.txt"), 0, 1, &ds, &e) == SCAR_EFORMAT && e.line == 1);
	scar_error_clear(&e);
	CHECK(scar_libsvm_load(fx("svm-zero-index.txt"), 0, 1, &ds, &e) == SCAR_ERANGE && e.line == 1);
	scar_error_clear(&e);
	CHECK(scar_libsvm_load(fx("svm-dim5.txt"), 4, 1, &ds, &e) == SCAR_ERANGE && e.line == 1);
	scar_error_clear(&e);
	CHECK(scar_libsvm_load(fx("svm-empty.txt"), 0, 1, &ds, &e) == SCAR_EFORMAT);
	CHECK(scar_libsvm_load(fx("idx-images.idx3"), 0, 1, &ds, &e) == SCAR_EFORMAT);
	CHECK(ds == NULL);
}

static void test_movielens(void)
{
	struct scar_ratings *r = NULL;
	struct scar_error e;

	/* users 1,2,7 -> 0,1,2; items 5,10,20 -> 0,1,2 */
	CHECK_RC(scar_movielens_load(fx("ml-100k.data"), &r, NULL));
	if (r) {
		CHECK(r->n == 4 && r->users == 3 && r->items == 3);
		CHECK(r->user[0] == 0 && r->user[1] == 1 && r->user[2] == 0 && r->user[3] == 2);
		CHECK(r->item[0] == 1 && r->item[1] == 1 && r->item[2] == 0 && r->item[3] == 2);
		CHECK(r->rating[0] == 3 && r->rating[1] == 4 && r->rating[2] == 5 && r->rating[3] == 1);
		scar_ratings_free(r);
	}
	r = NULL;
	CHECK_RC(scar_movielens_load(fx("ml-1m.dat"), &r, NULL));
	if (r) {
		CHECK(r->n == 3 && r->users == 2 && r->items == 2);
		CHECK(r->user[0] == 1 && r->user[1] == 0 && r->user[2] == 1);
		CHECK(r->item[0] == 1 && r->item[1] == 1 && r->item[2] == 0);
		CHECK(r->rating[0] == 5 && r->rating[1] == 3 && r->rating[2] == 4);
		scar_ratings_free(r);
	}
	r = NULL;
	CHECK_RC(scar_movielens_load(fx("ml-latest.csv"), &r, NULL));
	if (r) {
		/* users 1,2,5; items 1,3,100000 (a sparse raw id) */
		CHECK(r->n == 4 && r->users == 3 && r->items == 3);
		CHECK(r->user[2] == 2 && r->user[3] == 1);
		CHECK(r->item[0] == 0 && r->item[1] == 1 && r->item[3] == 2);
		CHECK(r->rating[1] == 4.5f && r->rating[2] == 0.5f && r->rating[3] == 2.5f);
		scar_ratings_free(r);
	}
	r = NULL;
	CHECK_RC(scar_movielens_load(fx("ml-crlf.csv"), &r, NULL));
	CHECK(r && r->n == 2 && r->users == 2 && r->items == 2 && r->rating[1] == 4.5f);
	scar_ratings_free(r);
	scar_error_clear(&e);
	r = (struct scar_ratings *)1;
	CHECK(scar_movielens_load(fx("ml-bad-line.csv"), &r, &e) == SCAR_EFORMAT);
	CHECK(r == NULL && e.line == 4 && strstr(e.msg, "x3"));
	scar_error_clear(&e);
	CHECK(scar_movielens_load(fx("ml-bad-rating.data"), &r, &e) == SCAR_EFORMAT && e.line == 2);
	CHECK(strstr(e.msg, "four") != NULL);
	scar_error_clear(&e);
	CHECK(scar_movielens_load(fx("ml-empty.csv"), &r, &e) == SCAR_EFORMAT);
	scar_error_clear(&e);
	CHECK(scar_movielens_load(fx("ml-header-only.csv"), &r, &e) == SCAR_EFORMAT);
	scar_error_clear(&e);
	CHECK(scar_movielens_load(fx("idx-images.idx3.gz"), &r, &e) < 0);
	CHECK(scar_movielens_load(fx("missing.csv"), &r, &e) == SCAR_EIO && e.errno_value != 0);
	CHECK(r == NULL);
}

static void test_split(void)
{
	struct scar_ratings all = { 0 }, *tr = NULL, *te = NULL, *tr2 = NULL, *te2 = NULL;
	uint64_t n = 20000;

	all.n = n;
	all.users = 100;
	all.items = 50;
	all.user = malloc(n * sizeof(*all.user));
	all.item = malloc(n * sizeof(*all.item));
	all.rating = malloc(n * sizeof(*all.rating));
	for (uint64_t i = 0; i < n; i++) {
		all.user[i] = (uint32_t)(i % 100);
		all.item[i] = (uint32_t)(i % 50);
		all.rating[i] = (float)i;
	}
	CHECK_RC(scar_ratings_split(&all, 0.2, 42, &tr, &te, NULL));
	CHECK_RC(scar_ratings_split(&all, 0.2, 42, &tr2, &te2, NULL));
	if (tr && te && tr2 && te2) {
		CHECK(tr->n + te->n == n);
		CHECK(te->n > 0.18 * n && te->n < 0.22 * n);
		CHECK(tr->users == 100 && te->items == 50);
		CHECK(te->n == te2->n && memcmp(te->rating, te2->rating, te->n * 4) == 0);
		CHECK(memcmp(tr->user, tr2->user, tr->n * 4) == 0);
		/* order kept, and every rating in exactly one part */
		for (uint64_t i = 1; i < te->n; i++)
			CHECK(te->rating[i] > te->rating[i - 1]);
		{
			double s = 0;

			for (uint64_t i = 0; i < tr->n; i++)
				s += tr->rating[i];
			for (uint64_t i = 0; i < te->n; i++)
				s += te->rating[i];
			CHECK(s == (double)n * (n - 1) / 2);
		}
		CHECK(te->user[0] == (uint32_t)te->rating[0] % 100);
	}
	scar_ratings_free(tr2);
	scar_ratings_free(te2);
	tr2 = te2 = NULL;
	CHECK_RC(scar_ratings_split(&all, 0.2, 43, &tr2, &te2, NULL));
	CHECK(tr && tr2 && (tr->n != tr2->n || memcmp(tr->rating, tr2->rating, tr->n * 4) != 0));
	scar_ratings_free(tr);
	scar_ratings_free(te);
	scar_ratings_free(tr2);
	scar_ratings_free(te2);
	tr = te = NULL;
	CHECK_RC(scar_ratings_split(&all, 0.0, 1, &tr, &te, NULL));
	CHECK(tr && te && tr->n == n && te->n == 0);
	scar_ratings_free(tr);
	scar_ratings_free(te);
	CHECK(scar_ratings_split(&all, 1.5, 1, &tr, &te, NULL) == SCAR_EINVAL && !tr && !te);
	free(all.user);
	free(all.item);
	free(all.rating);
	scar_ratings_free(NULL);
	scar_dense_free(NULL);
	scar_corpus_free(NULL);
}

static void uci_bad(const char *docword, const char *vocab, int code, int64_t line)
{
	struct scar_corpus *c = (struct scar_corpus *)1;
	struct scar_error e;
	int rc;

	scar_error_clear(&e);
	rc = scar_uci_bow_load(fx(docword), vocab ? fx(vocab) : NULL, &c, &e);
	CHECK(rc == code && c == NULL && e.msg[0]);
	if (line != -2)
		CHECK(e.line == line);
	if (rc != code || (line != -2 && e.line != line))
		fprintf(stderr, "  %s: rc %d line %lld: %s\n", docword, rc, (long long)e.line, e.msg);
}

static void test_uci(void)
{
	struct scar_corpus *c = NULL;

	CHECK_RC(scar_uci_bow_load(fx("uci-docword.txt"), fx("uci-vocab.txt"), &c, NULL));
	if (c) {
		/* doc 1: w2 x2, w4; doc 2: w3; doc 3: w1, w2 x3 */
		static const uint32_t words[] = { 1, 1, 3, 2, 0, 1, 1, 1 };

		CHECK(c->docs == 3 && c->vocab == 4 && c->tokens == 8);
		CHECK(c->doc_start[0] == 0 && c->doc_start[1] == 3 && c->doc_start[2] == 4 &&
		      c->doc_start[3] == 8);
		CHECK(memcmp(c->words, words, sizeof(words)) == 0);
		CHECK(c->vocab_words && strcmp(c->vocab_words[0], "apple") == 0 &&
		      strcmp(c->vocab_words[3], "date") == 0);
		scar_corpus_free(c);
	}
	c = NULL;
	CHECK_RC(scar_uci_bow_load(fx("uci-docword.txt"), NULL, &c, NULL));
	CHECK(c && c->vocab_words == NULL && c->tokens == 8);
	scar_corpus_free(c);
	uci_bad("uci-docword.txt", "uci-vocab-short.txt", SCAR_EMISMATCH, -2);
	uci_bad("uci-docword-short.txt", NULL, SCAR_ETRUNC, -2);
	uci_bad("uci-docword-long.txt", NULL, SCAR_EMISMATCH, 6);
	uci_bad("uci-docword-range.txt", NULL, SCAR_ERANGE, 5);
	uci_bad("uci-docword-docrange.txt", NULL, SCAR_ERANGE, 5);
	uci_bad("uci-docword-bad.txt", NULL, SCAR_EFORMAT, 5);
	uci_bad("uci-docword-huge.txt", NULL, SCAR_ECORRUPT, 3);
	uci_bad("uci-docword-header.txt", NULL, SCAR_EFORMAT, 2);
	uci_bad("uci-docword-noheader.txt", NULL, SCAR_ETRUNC, -2);
	uci_bad("uci-docword-empty.txt", NULL, SCAR_EFORMAT, -2);
	uci_bad("idx-images.idx3", NULL, SCAR_EFORMAT, -2);
}

/* The number parser agrees bit for bit with strtod, fast path or not. */
static void test_numbers(void)
{
	static const char *const cases[] = {
		"0", "-0", "4.0", "3.5", "0.1", "1e-1", "-2.5E+3", "123456789012345",
		"1234567890123456789", "0.000000000000000000001", "1.7976931348623157e308",
		"4.9e-324", "+7", ".5", "5.",
	};
	static const char *const bad[] = { "", "-", "abc", ".", "e5", "inf", "nan", "1e999" };
	struct scar_rng r;
	char buf[64];
	int mismatches = 0;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		double v = -1;
		const char *end = scar_data_parse_double(cases[i], &v);

		CHECK(end && *end == '\0' && v == strtod(cases[i], NULL));
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		double v;
		const char *end = scar_data_parse_double(bad[i], &v);

		CHECK(end == NULL || *end != '\0');
	}
	scar_rng_seed(&r, 7);
	for (int i = 0; i < 100000; i++) {
		double v, w;
		int frac = (int)scar_rng_below(&r, 12);

		snprintf(buf, sizeof(buf), "%.*f", frac,
			 (scar_rng_uniform(&r) - 0.5) * pow(10, (double)scar_rng_below(&r, 10)));
		w = strtod(buf, NULL);
		if (!scar_data_parse_double(buf, &v) || memcmp(&v, &w, sizeof(v)) != 0)
			mismatches++;
	}
	CHECK(mismatches == 0);
	{
		uint64_t u;

		CHECK(scar_data_parse_u64("4294967295", UINT32_MAX, &u) && u == UINT32_MAX);
		CHECK(scar_data_parse_u64("4294967296", UINT32_MAX, &u) == NULL);
		CHECK(scar_data_parse_u64("18446744073709551615", UINT64_MAX, &u) && u == UINT64_MAX);
		CHECK(scar_data_parse_u64("18446744073709551616", UINT64_MAX, &u) == NULL);
		CHECK(scar_data_parse_u64("-1", UINT64_MAX, &u) == NULL);
	}
}

/* The real data sets, when `make data` has fetched them. */
static void test_real(void)
{
	char dir[1024], a[1200], b[1200];
	const char *env = getenv("SCAR_DATA"), *xdg = getenv("XDG_CACHE_HOME");

	if (env && *env)
		snprintf(dir, sizeof(dir), "%s", env);
	else if (xdg && *xdg)
		snprintf(dir, sizeof(dir), "%s/scar", xdg);
	else
		snprintf(dir, sizeof(dir), "%s/.cache/scar", getenv("HOME") ? getenv("HOME") : ".");

	snprintf(a, sizeof(a), "%s/fashion-mnist/train-images-idx3-ubyte.gz", dir);
	snprintf(b, sizeof(b), "%s/fashion-mnist/train-labels-idx1-ubyte.gz", dir);
	if (exists(a) && exists(b)) {
		struct scar_dense *tr = NULL, *te = NULL;
		uint64_t count[10] = { 0 };

		CHECK_RC(scar_idx_load(a, b, &tr, NULL));
		snprintf(a, sizeof(a), "%s/fashion-mnist/t10k-images-idx3-ubyte.gz", dir);
		snprintf(b, sizeof(b), "%s/fashion-mnist/t10k-labels-idx1-ubyte.gz", dir);
		CHECK_RC(scar_idx_load(a, b, &te, NULL));
		CHECK(tr && tr->n == 60000 && tr->d == 784 && tr->classes == 10);
		CHECK(te && te->n == 10000 && te->d == 784 && te->classes == 10);
		if (tr && te) {
			double s = 0;

			for (uint64_t i = 0; i < tr->n; i++)
				count[tr->label[i] < 10 ? tr->label[i] : 0]++;
			for (int k = 0; k < 10; k++)
				CHECK(count[k] == 6000);
			for (int i = 0; i < 784; i++)
				s += tr->x[i];
			CHECK_NEAR(s, 76247 / 255.0, 1e-3);
			CHECK(te->label[0] == 9 && te->label[1] == 2);
		}
		scar_dense_free(tr);
		scar_dense_free(te);
	} else {
		printf("test-data: skip Fashion-MNIST: not in '%s/fashion-mnist' (run 'make data')\n", dir);
	}

	snprintf(a, sizeof(a), "%s/movielens/ratings.csv", dir);
	if (exists(a)) {
		struct scar_ratings *r = NULL;

		CHECK_RC(scar_movielens_load(a, &r, NULL));
		CHECK(r && r->n == 100836 && r->users == 610 && r->items == 9724);
		if (r) {
			double s = 0;

			for (uint64_t i = 0; i < r->n; i++)
				s += r->rating[i];
			CHECK_NEAR(s / r->n, 3.50156, 1e-5);
		}
		scar_ratings_free(r);
	} else {
		printf("test-data: skip MovieLens: no '%s' (run 'make data')\n", a);
	}

	snprintf(a, sizeof(a), "%s/spam/docword.spam.txt", dir);
	snprintf(b, sizeof(b), "%s/spam/vocab.spam.txt", dir);
	if (exists(a) && exists(b)) {
		struct scar_corpus *c = NULL;

		CHECK_RC(scar_uci_bow_load(a, b, &c, NULL));
		CHECK(c && c->docs > 6000 && c->docs <= 6046 && c->vocab == 10000);
		CHECK(c && c->tokens > 500000 && c->doc_start[c->docs] == c->tokens);
		for (uint64_t i = 1; c && i < c->vocab; i++)
			CHECK(strcmp(c->vocab_words[i - 1], c->vocab_words[i]) < 0);
		scar_corpus_free(c);
	} else {
		printf("test-data: skip the spam corpus: not in '%s/spam' (run 'make data')\n", dir);
	}
}

int main(int argc, char **argv)
{
	(void)argc;
	find_fixtures(argv[0]);
	test_numbers();
	test_idx();
	test_libsvm();
	test_libsvm_like();
	test_movielens();
	test_split();
	test_uci();
	test_real();
	return unit_done("test-data");
}
