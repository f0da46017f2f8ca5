/* data_common.c - line reader, number parsers, free functions and the ratings split. */
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data_common.h"
#include "scar/data.h"
#include "scar/file.h"
#include "scar/rng.h"

#define LINES_CHUNK (256 * 1024)

int scar_lines_open(struct scar_lines *lr, const char *path, struct scar_error *err)
{
	struct stat st;

	memset(lr, 0, sizeof(*lr));
	lr->path = path;
	/* never waits for a FIFO's writer: one without reads as empty */
	lr->fd = scar_open_input(path, 0, err);
	if (lr->fd < 0)
		return lr->fd;
	if (fstat(lr->fd, &st) == 0 && S_ISREG(st.st_mode))
		lr->size = (uint64_t)st.st_size;
	lr->cap = LINES_CHUNK;
	lr->buf = malloc(lr->cap + 1);
	if (!lr->buf) {
		close(lr->fd);
		lr->fd = -1;
		return scar_error_set(err, SCAR_ENOMEM, "out of memory reading '%s'", path);
	}
	return 0;
}

void scar_lines_close(struct scar_lines *lr)
{
	if (lr->fd >= 0)
		close(lr->fd);
	lr->fd = -1;
	free(lr->buf);
	lr->buf = NULL;
}

int scar_lines_fail(const struct scar_lines *lr, struct scar_error *err, int code,
		    const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return code;
	va_start(ap, fmt);
	err->code = code;
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	snprintf(err->file, sizeof(err->file), "%s", lr->path);
	err->line = lr->line;
	err->offset = lr->line_off;
	return code;
}

/* Read more data after buf[end]; first moves the unread tail to the front. */
static int lines_fill(struct scar_lines *lr, struct scar_error *err)
{
	ssize_t got;

	if (lr->pos > 0) {
		memmove(lr->buf, lr->buf + lr->pos, lr->end - lr->pos);
		lr->consumed += (int64_t)lr->pos;
		lr->end -= lr->pos;
		lr->pos = 0;
	}
	if (lr->end == lr->cap) {
		/* One line longer than the buffer: grow it, up to the limit. */
		char *nb;

		if (lr->cap >= SCAR_DATA_LINE_MAX)
			return scar_error_set_at(err, SCAR_EFORMAT, lr->path, -1, lr->line + 1,
						 "line %lld longer than %zu bytes",
						 (long long)lr->line + 1, (size_t)SCAR_DATA_LINE_MAX);
		nb = realloc(lr->buf, lr->cap * 2 + 1);

		if (!nb)
			return scar_error_set(err, SCAR_ENOMEM, "out of memory reading '%s'", lr->path);
		lr->buf = nb;
		lr->cap *= 2;
	}
	do
		got = read(lr->fd, lr->buf + lr->end, lr->cap - lr->end);
	while (got < 0 && errno == EINTR);
	if (got < 0)
		return scar_error_set_errno(err, errno, lr->path, "cannot read '%s'", lr->path);
	if (got == 0)
		lr->eof = 1;
	lr->end += (size_t)got;
	return 0;
}

int scar_lines_next(struct scar_lines *lr, char **line, size_t *len, struct scar_error *err)
{
	char *s, *nl;
	size_t scanned = 0, n;

	for (;;) {
		s = lr->buf + lr->pos;
		nl = memchr(s + scanned, '\n', lr->end - lr->pos - scanned);
		if (nl || lr->eof)
			break;
		scanned = lr->end - lr->pos;
		if (lines_fill(lr, err) < 0)
			return err ? err->code : SCAR_EIO;
	}
	s = lr->buf + lr->pos;
	if (!nl && lr->pos == lr->end)
		return 0;
	n = nl ? (size_t)(nl - s) : lr->end - lr->pos;
	lr->line++;
	lr->line_off = lr->consumed + (int64_t)lr->pos;
	lr->pos += n + (nl ? 1 : 0);
	if (memchr(s, '\0', n))
		return scar_lines_fail(lr, err, SCAR_EFORMAT, "NUL byte in text (binary file?)");
	if (n > 0 && s[n - 1] == '\r')
		n--;
	s[n] = '\0';
	*line = s;
	*len = n;
	return 1;
}

const char *scar_data_parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	const char *p = s;

	if (*p == '+')
		p++;
	if (*p < '0' || *p > '9')
		return NULL;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (max - d) / 10)
			return NULL;
		v = v * 10 + d;
	}
	*out = v;
	return p;
}

static const double pow10_exact[] = {
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

const char *scar_data_parse_double(const char *s, double *out)
{
	const char *p = s;
	uint64_t m = 0;
	int digits = 0, frac = 0, neg = 0;
	char *end;
	double v;

	if (*p == '-' || *p == '+')
		neg = *p++ == '-';
	for (; *p >= '0' && *p <= '9'; p++, digits++)
		m = m * 10 + (uint64_t)(*p - '0');
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++, digits++, frac++)
			m = m * 10 + (uint64_t)(*p - '0');
	}
	/*
	 * Fast path: up to 15 digits and no exponent, so m and 10^frac are exact
	 * doubles and one division rounds correctly. Anything else goes to strtod.
	 */
	if (digits > 0 && digits <= 15 && *p != 'e' && *p != 'E') {
		v = (double)m / pow10_exact[frac];
		*out = neg ? -v : v;
		return p;
	}
	if (digits == 0 && !(*p == 'e' || *p == 'E' || *p == 'i' || *p == 'I' || *p == 'n' || *p == 'N'))
		return NULL;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || !isfinite(v) || (errno == ERANGE && fabs(v) > 1.0))
		return NULL;
	*out = v;
	return end;
}

const char *scar_data_token(const char *s, const char *stops, char *buf, size_t size)
{
	size_t n = 0;

	while (s[n] && s[n] != ' ' && s[n] != '\t' && !(stops && strchr(stops, s[n])) &&
	       n + 1 < size && n < 40)
		n++;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return buf;
}

int scar_data_reserve(void **p, size_t *cap, size_t need, size_t elem, struct scar_error *err)
{
	size_t nc;
	void *np;

	if (need <= *cap)
		return 0;
	nc = *cap ? *cap : 1024;
	while (nc < need) {
		if (nc > SIZE_MAX / 2 / elem)
			return scar_error_set(err, SCAR_ENOMEM, "data set too large");
		nc *= 2;
	}
	np = realloc(*p, nc * elem);
	if (!np)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory (%zu bytes)", nc * elem);
	*p = np;
	*cap = nc;
	return 0;
}

void *scar_data_alloc_big(size_t bytes)
{
	const size_t huge = (size_t)2 << 20;
	size_t n;
	void *p;

	if (bytes < 4 * huge)
		return malloc(bytes ? bytes : 1);
	n = (bytes + huge - 1) / huge * huge;
	p = aligned_alloc(huge, n);
	if (!p)
		return malloc(bytes);
#ifdef MADV_HUGEPAGE
	madvise(p, n, MADV_HUGEPAGE);	/* only advice: failure changes nothing */
#endif
	return p;
}

void scar_dense_free(struct scar_dense *ds)
{
	if (!ds)
		return;
	free(ds->x);
	free(ds->label);
	free(ds->target);
	free(ds->class_value);
	free(ds);
}

void scar_ratings_free(struct scar_ratings *r)
{
	if (!r)
		return;
	free(r->user);
	free(r->item);
	free(r->rating);
	free(r);
}

void scar_corpus_free(struct scar_corpus *c)
{
	if (!c)
		return;
	if (c->vocab_words)
		for (uint64_t i = 0; i < c->vocab; i++)
			free(c->vocab_words[i]);
	free(c->vocab_words);
	free(c->doc_start);
	free(c->words);
	free(c);
}

static struct scar_ratings *ratings_alloc(uint64_t n, uint32_t users, uint32_t items)
{
	struct scar_ratings *r = calloc(1, sizeof(*r));
	size_t k = n ? (size_t)n : 1;

	if (!r)
		return NULL;
	r->n = n;
	r->users = users;
	r->items = items;
	r->user = malloc(k * sizeof(*r->user));
	r->item = malloc(k * sizeof(*r->item));
	r->rating = malloc(k * sizeof(*r->rating));
	if (!r->user || !r->item || !r->rating) {
		scar_ratings_free(r);
		return NULL;
	}
	return r;
}

int scar_ratings_split(const struct scar_ratings *all, double test_frac, uint64_t seed,
		       struct scar_ratings **train, struct scar_ratings **test,
		       struct scar_error *err)
{
	struct scar_ratings *tr = NULL, *te = NULL;
	struct scar_rng rng;
	uint8_t *to_test = NULL;
	uint64_t nte = 0, i, a = 0, b = 0;
	int rc = 0;

	*train = *test = NULL;
	if (!all || !(test_frac >= 0.0 && test_frac <= 1.0))
		return scar_error_set(err, SCAR_EINVAL, "test fraction must be in [0, 1]");
	to_test = malloc(all->n ? all->n : 1);
	if (!to_test)
		goto nomem;
	/* One draw per rating in file order: the split depends on seed and index only. */
	scar_rng_seed(&rng, seed);
	for (i = 0; i < all->n; i++) {
		to_test[i] = scar_rng_uniform(&rng) < test_frac;
		nte += to_test[i];
	}
	tr = ratings_alloc(all->n - nte, all->users, all->items);
	te = ratings_alloc(nte, all->users, all->items);
	if (!tr || !te)
		goto nomem;
	for (i = 0; i < all->n; i++) {
		struct scar_ratings *d = to_test[i] ? te : tr;
		uint64_t *k = to_test[i] ? &b : &a;

		d->user[*k] = all->user[i];
		d->item[*k] = all->item[i];
		d->rating[*k] = all->rating[i];
		(*k)++;
	}
	*train = tr;
	*test = te;
	tr = te = NULL;
	goto out;
nomem:
	rc = scar_error_set(err, SCAR_ENOMEM, "out of memory splitting %llu ratings",
			    (unsigned long long)all->n);
out:
	scar_ratings_free(tr);
	scar_ratings_free(te);
	free(to_test);
	return rc;
}
