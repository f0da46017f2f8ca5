/*
 * test-ckpt-corrupt.c - damaged checkpoints are rejected with the right class
 * of error and never crash: truncation at every byte, every single bit
 * flipped, wrong magic, a future version, absurd declared sizes, an empty
 * file, trailing garbage, unknown flags, malformed present bitmaps; all of it
 * for raw, LZ4 and byte-shuffled LZ4 sections (format 1.3).
 *
 * With --write-fixtures DIR it writes the golden files of tests/fixtures/ckpt
 * instead (see the README there).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scar/ckpt.h"
#include "ckpt_internal.h"
#include "unit.h"

static const char *dir;	/* the scratch directory (unit.h) */
static char path[300];

static struct scar_state *mkstate(void)
{
	struct scar_state *st = NULL;
	struct scar_tensor *t = NULL;
	uint64_t ws[2] = { 7, 3 }, rs[1] = { 4 }, ps[2] = { 9, 2 };

	CHECK_RC(scar_state_new(&st, "mlr", NULL));
	st->shards = 3;
	st->iteration = 40;
	json_object_set_new(st->config, "lr", json_real(0.5));
	CHECK_RC(scar_tensor_new(&t, "w", SCAR_F32, SCAR_ROLE_PARAM, 2, ws, NULL));
	for (uint64_t i = 0; i < scar_tensor_elems(t); i++)
		((float *)t->data)[i] = (float)i * 0.25f - 1;
	CHECK_RC(scar_state_add(st, t, NULL));
	CHECK_RC(scar_tensor_new(&t, "rng", SCAR_U64, SCAR_ROLE_STATE, 1, rs, NULL));
	for (uint64_t i = 0; i < 4; i++)
		((uint64_t *)t->data)[i] = 0x9E3779B97F4A7C15ull * (i + 1);
	CHECK_RC(scar_state_add(st, t, NULL));
	/* A partially present tensor, so present ranges are covered too. */
	CHECK_RC(scar_tensor_new(&t, "b", SCAR_F64, SCAR_ROLE_PARAM, 2, ps, NULL));
	for (uint64_t i = 0; i < scar_tensor_elems(t); i++)
		((double *)t->data)[i] = (double)i;
	CHECK_RC(scar_tensor_init_present(t, 1, NULL));
	t->present[2] = t->present[3] = t->present[7] = 0;
	memset(scar_tensor_row(t, 2), 0, 32);
	memset(scar_tensor_row(t, 7), 0, 16);
	CHECK_RC(scar_state_add(st, t, NULL));
	return st;
}

/* The checkpoint of mkstate(), in memory: raw (mode 0), LZ4 (1), shuffled LZ4 (2). */
static unsigned char *image(int mode, size_t *n)
{
	struct scar_state *st = mkstate();
	struct scar_ckpt_save_opts o;
	unsigned char *buf;
	struct stat sb;
	int fd;

	scar_ckpt_save_opts_init(&o);
	o.compress = mode > 0;
	o.shuffle = mode == 2 ? SCAR_SHUFFLE_ON : SCAR_SHUFFLE_OFF;
	o.sync = 0;
	CHECK_RC(scar_ckpt_save(st, path, &o, NULL));
	scar_state_free(st);
	fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &sb) < 0)
		exit(2);
	*n = (size_t)sb.st_size;
	buf = malloc(*n);
	if (!buf || read(fd, buf, *n) != (ssize_t)*n)
		exit(2);
	close(fd);
	return buf;
}

static void put(const char *p, const void *buf, size_t n)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0 || (n && write(fd, buf, n) != (ssize_t)n))
		exit(2);
	close(fd);
}

/* Load through a pipe: the streaming path, with no file size to check against. */
static int load_pipe(const void *buf, size_t n, struct scar_error *e)
{
	struct scar_state *st = NULL;
	int fds[2], rc;

	/* The images are a few KB: they fit the pipe buffer, no writer process needed. */
	if (pipe(fds) < 0 || (n && write(fds[1], buf, n) != (ssize_t)n))
		exit(2);
	close(fds[1]);
	rc = scar_ckpt_load_fd(fds[0], "pipe", &st, e);
	close(fds[0]);
	scar_state_free(st);
	return rc;
}

static int load_file(struct scar_error *e)
{
	struct scar_state *st = NULL;
	int rc = scar_ckpt_load(path, &st, e);

	scar_state_free(st);
	return rc;
}

/*
 * scar_ckpt_verify of path, and the same on 2 and 4 threads, which must
 * say the same thing: result, message, offset, file. verify_sampled does
 * the threaded runs at every THREAD_STRIDE-th call only: the loops over
 * every truncation and bit flip call it about 400,000 times, and starting
 * threads that often took most of this test's time (over 15 minutes under
 * AddressSanitizer, which clears each new thread's shadow). A stride prime
 * to 8 moves through the bits and offsets of every region.
 */
#define THREAD_STRIDE 7

/*
 * Under AddressSanitizer every reader's 4 MiB block buffers (and LZ4F's)
 * are mapped and poisoned afresh, which made the sweeps below take over
 * 15 minutes: there they test every SWEEP_STRIDE-th truncation and bit
 * flip (a stride prime to 8, so every bit position and region is hit).
 * Plain builds test every one.
 */
#if defined(__SANITIZE_ADDRESS__)
#define SWEEP_STRIDE 5
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SWEEP_STRIDE 5
#endif
#endif
#ifndef SWEEP_STRIDE
#define SWEEP_STRIDE 1
#endif

static int verify_threads(struct scar_error *e, int every)
{
	static unsigned long calls;
	int a = scar_ckpt_verify(path, e);

	if (calls++ % (unsigned long)every)
		return a;
	for (unsigned t = 2; t <= 4; t += 2) {
		struct scar_error et;
		int b = scar_ckpt_verify_threads(path, t, &et);

		CHECK(b == a);
		if (a && b == a) {
			CHECK(strcmp(et.msg, e->msg) == 0);
			CHECK(strcmp(et.file, e->file) == 0);
			CHECK(et.offset == e->offset);
		}
		if (b != a || (a && strcmp(et.msg, e->msg)))
			fprintf(stderr, "%u threads: %d '%s', one thread: %d '%s'\n", t, b, et.msg, a,
				e->msg);
	}
	return a;
}

static int verify_same(struct scar_error *e)
{
	return verify_threads(e, 1);
}

static int verify_sampled(struct scar_error *e)
{
	return verify_threads(e, THREAD_STRIDE);
}

/* Random access over a damaged file must not crash either; any result is fine. */
static void poke_random(void)
{
	struct scar_ckpt_reader *r = NULL;
	const struct scar_ckpt_section_info *ix;
	struct scar_ckpt_section s;
	int n;

	if (scar_ckpt_reader_open(&r, path, NULL))
		return;
	n = scar_ckpt_reader_index(r, &ix, NULL);
	for (int i = 0; i < n; i++)
		(void)scar_ckpt_reader_section(r, ix[i].tensor, ix[i].shard, &s, NULL);
	scar_ckpt_reader_close(r);
}

struct layout {
	size_t first_section, index, trailer;
};

static struct layout layout_of(const unsigned char *b, size_t n)
{
	struct layout l;

	l.first_section = 24 + ckpt_get32(b + 16);
	l.trailer = n - CKPT_TRAILER_LEN;
	l.index = (size_t)ckpt_get64(b + l.trailer);
	return l;
}

static void test_truncation(const unsigned char *img, size_t n)
{
	struct scar_error e;
	int bad = 0, fd;

	put(path, img, n);
	fd = open(path, O_WRONLY);
	CHECK(fd >= 0);
	for (size_t len = n; len-- > 0;) {
		int a, b, c;

		if (len % SWEEP_STRIDE)
			continue;
		CHECK(ftruncate(fd, (off_t)len) == 0);
		a = verify_sampled(&e);
		b = load_file(&e);
		c = load_pipe(img, len, &e);
		if (a != SCAR_ETRUNC || b != SCAR_ETRUNC || c != SCAR_ETRUNC) {
			if (bad++ < 5)
				fprintf(stderr, "truncated to %zu of %zu: verify %d load %d pipe %d: %s\n",
					len, n, a, b, c, e.msg);
		}
		if (len % 97 == 0)
			poke_random();
	}
	close(fd);
	CHECK(bad == 0);
}

static void test_bitflips(unsigned char *img, size_t n)
{
	struct layout l = layout_of(img, n);
	struct scar_error e;
	int bad = 0, fd, tested = 0;

	put(path, img, n);
	fd = open(path, O_WRONLY);
	CHECK(fd >= 0);
	for (size_t i = 0; i < n; i++)
		for (int bit = 0; bit < 8; bit++) {
			int want = i < 8 ? SCAR_EFORMAT : SCAR_ECORRUPT, a, b, c;
			int named = 1;

			if ((i * 8 + (size_t)bit) % SWEEP_STRIDE)
				continue;
			img[i] ^= (unsigned char)(1u << bit);
			CHECK(pwrite(fd, img + i, 1, (off_t)i) == 1);
			tested++;
			a = verify_sampled(&e);
			named &= strcmp(e.file, path) == 0 && e.offset >= 0;
			if (i >= l.first_section && i < l.index)
				named &= strstr(e.msg, "section ") != NULL;
			b = load_file(&e);
			c = load_pipe(img, n, &e);
			if (a != want || b != want || !named ||
			    (c != want && !(c == SCAR_ETRUNC && i >= 16 && i < 20))) {
				if (bad++ < 5)
					fprintf(stderr, "bit %d of byte %zu: verify %d load %d pipe %d: %s\n",
						bit, i, a, b, c, e.msg);
			}
			if ((i * 8 + (size_t)bit) % 13 == 0)
				poke_random();
			img[i] ^= (unsigned char)(1u << bit);
			CHECK(pwrite(fd, img + i, 1, (off_t)i) == 1);
		}
	close(fd);
	CHECK(bad == 0 && tested == ((int)n * 8 + SWEEP_STRIDE - 1) / SWEEP_STRIDE);
}

/* Re-seal a damaged structure so that only the field under test is wrong. */
static void recrc(unsigned char *p, size_t covered)
{
	ckpt_put32(p + covered, scar_crc32c(0, p, covered));
}

static void test_crafted(const unsigned char *orig, size_t n)
{
	unsigned char *b = malloc(n + 64);
	struct layout l = layout_of(orig, n);
	struct scar_error e;

	/* Wrong magic. */
	memcpy(b, orig, n);
	b[1] = 'X';
	put(path, b, n);
	CHECK(verify_same(&e) == SCAR_EFORMAT);
	CHECK(strstr(e.msg, "magic") != NULL);
	/* A future major version, correctly sealed. */
	memcpy(b, orig, n);
	ckpt_put16(b + 8, 2);
	recrc(b, 12);
	put(path, b, n);
	CHECK(verify_same(&e) == SCAR_EVERSION);
	CHECK(load_file(&e) == SCAR_EVERSION);
	CHECK(load_pipe(b, n, &e) == SCAR_EVERSION);
	/* Major 0 was never a version. */
	ckpt_put16(b + 8, 0);
	recrc(b, 12);
	put(path, b, n);
	CHECK(verify_same(&e) == SCAR_EFORMAT);
	/* A newer minor version is fine. */
	memcpy(b, orig, n);
	ckpt_put16(b + 10, 7);
	recrc(b, 12);
	put(path, b, n);
	CHECK(verify_same(&e) == 0);
	/* meta_len of 4 GiB. */
	memcpy(b, orig, n);
	ckpt_put32(b + 16, 0xFFFFFFFFu);
	put(path, b, n);
	CHECK(verify_same(&e) == SCAR_ECORRUPT);
	CHECK(load_pipe(b, n, &e) == SCAR_ECORRUPT);
	ckpt_put32(b + 16, 0);
	put(path, b, n);
	CHECK(verify_same(&e) == SCAR_ECORRUPT);
	/* Absurd nrows, raw_len, stored_len in the first section, checksums valid. */
	for (int f = 0; f < 3; f++) {
		static const uint64_t vals[3] = { 1ull << 60, 1ull << 62, 1ull << 60 };
		static const int offs[3] = { 16, 24, 32 };

		memcpy(b, orig, n);
		ckpt_put64(b + l.first_section + offs[f], vals[f]);
		recrc(b + l.first_section, 44);
		put(path, b, n);
		CHECK(verify_same(&e) == SCAR_ECORRUPT);
		CHECK(e.offset >= (int64_t)l.first_section);
		CHECK(load_file(&e) == SCAR_ECORRUPT);
		CHECK(load_pipe(b, n, &e) == SCAR_ECORRUPT);
	}
	/* An unknown section flag, sealed: unsupported, not misread. */
	memcpy(b, orig, n);
	b[l.first_section + 12] |= 0x80;
	recrc(b + l.first_section, 44);
	put(path, b, n);
	CHECK(verify_same(&e) == SCAR_EUNSUPPORTED);
	/* Unknown trailer flags, sealed. */
	memcpy(b, orig, n);
	b[l.trailer + 16] = 1;
	recrc(b + l.trailer, 20);
	put(path, b, n);
	CHECK(verify_same(&e) == SCAR_EUNSUPPORTED);
	/* An index count that disagrees, sealed. */
	memcpy(b, orig, n);
	ckpt_put32(b + l.index + 4, 1000000);
	put(path, b, n);
	CHECK(verify_same(&e) == SCAR_ECORRUPT);
	/* Garbage after the trailer. */
	memcpy(b, orig, n);
	memset(b + n, 0, 64);
	put(path, b, n + 64);
	CHECK(verify_same(&e) == SCAR_ECORRUPT);
	CHECK(strstr(e.msg, "after the trailer") != NULL);
	/* Empty file. */
	put(path, b, 0);
	CHECK(verify_same(&e) == SCAR_ETRUNC);
	CHECK(strstr(e.msg, "empty") != NULL);
	free(b);
}

/*
 * The checkpoint orig with the first "from" in its metadata replaced by
 * "to", the metadata's length and CRC resealed; NULL when from is absent.
 */
static unsigned char *splice_meta(const unsigned char *orig, size_t n, const char *from,
				  const char *to, size_t *nn)
{
	uint32_t mlen = ckpt_get32(orig + 16);
	char *meta = malloc(mlen + 1), *hit;
	unsigned char *b;
	size_t nl;

	memcpy(meta, orig + 24, mlen);
	meta[mlen] = 0;
	hit = strstr(meta, from);
	CHECK(hit != NULL);
	if (!hit) {
		free(meta);
		return NULL;
	}
	nl = mlen - strlen(from) + strlen(to);
	b = malloc(n + strlen(to) + 1);
	memcpy(b, orig, 16);
	ckpt_put32(b + 16, (uint32_t)nl);
	memcpy(b + 24, meta, (size_t)(hit - meta));
	memcpy(b + 24 + (hit - meta), to, strlen(to));
	memcpy(b + 24 + (hit - meta) + strlen(to), hit + strlen(from),
	       mlen - (size_t)(hit - meta) - strlen(from));
	ckpt_put32(b + 20, scar_crc32c(0, b + 24, nl));
	*nn = 24 + nl + (n - 24 - mlen);
	memcpy(b + 24 + nl, orig + 24 + mlen, n - 24 - mlen);
	free(meta);
	return b;
}

/* Metadata that declares a tensor far larger than the file, resealed. */
static void test_huge_shape(const unsigned char *orig, size_t n)
{
	size_t nn;
	unsigned char *b = splice_meta(orig, n, "\"shape\":[7,3],\"rows\":7",
				       "\"shape\":[34359738368,1024],\"rows\":34359738368", &nn);
	struct scar_error e;
	int rc;

	if (!b)
		return;
	put(path, b, nn);
	CHECK(verify_same(&e) == SCAR_ECORRUPT);
	CHECK(load_file(&e) == SCAR_ECORRUPT);
	CHECK(strstr(e.msg, "more than") != NULL);
	/* Through a pipe the size cannot be checked up front; it must still fail cleanly. */
	rc = load_pipe(b, nn, &e);
	CHECK(rc == SCAR_ECORRUPT || rc == SCAR_ENOMEM);
	free(b);
}

/*
 * Tensor b (9 rows, rows 2, 3 and 7 absent) is written with a present
 * bitmap, format 1.1: bytes 0x73 0x01, "cwE=". Every way a bitmap can be
 * malformed is corrupt, from a file and from a pipe; a valid one loads.
 */
static void test_bitmaps(const unsigned char *orig, size_t n)
{
	static const struct {
		const char *present;
		int rc;
	} cases[] = {
		{ "{\"bitmap\":\"cwE=\"}", 0 },		/* as written */
		{ "{\"bitmap\":\"cwM=\"}", SCAR_ECORRUPT },	/* row 9 of 9 rows */
		{ "{\"bitmap\":\"cwF=\"}", SCAR_ECORRUPT },	/* a padding bit set */
		{ "{\"bitmap\":\"cwE\"}", SCAR_ECORRUPT },	/* short */
		{ "{\"bitmap\":\"cwE=AAAA\"}", SCAR_ECORRUPT },	/* long */
		{ "{\"bitmap\":\"cw!=\"}", SCAR_ECORRUPT },	/* not base64 */
		{ "{\"bitmap\":\"c=E=\"}", SCAR_ECORRUPT },	/* padding inside */
		{ "{\"bitmap\":\"cwEA\"}", SCAR_ECORRUPT },	/* padding missing */
		{ "{\"bitmap\":7}", SCAR_ECORRUPT },
		{ "{\"bitmap\":\"cwE=\",\"x\":1}", SCAR_ECORRUPT },
		{ "{}", SCAR_ECORRUPT },
	};
	struct scar_error e;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t nn;
		unsigned char *b = splice_meta(orig, n, "{\"bitmap\":\"cwE=\"}", cases[i].present,
					       &nn);
		struct scar_state *st = NULL;
		int rc;

		if (!b)
			return;
		put(path, b, nn);
		rc = verify_same(&e);
		if (rc != cases[i].rc)
			fprintf(stderr, "bitmap %s: verify gives %d\n", cases[i].present, rc);
		CHECK(rc == cases[i].rc);
		CHECK(load_file(&e) == cases[i].rc);
		CHECK(load_pipe(b, nn, &e) == cases[i].rc);
		if (cases[i].rc) {
			CHECK(strstr(e.msg, "present bitmap") != NULL);
		} else {
			CHECK_RC(scar_ckpt_load(path, &st, &e));
			if (st) {
				const struct scar_tensor *t = scar_state_find(st, "b");
				uint64_t got = 0;

				CHECK(t && t->present);
				for (uint64_t r = 0; t && t->present && r < 9; r++)
					got |= (uint64_t)(t->present[r] != 0) << r;
				CHECK(got == 0x173);	/* rows 0, 1, 4, 5, 6, 8 */
				scar_state_free(st);
			}
		}
		free(b);
	}
}

/* Many random multi-byte smudges: never a crash, always an error. */
static void test_smudges(const unsigned char *orig, size_t n)
{
	unsigned char *b = malloc(n);
	uint64_t s = 12345;
	int ok = 0;

	for (int k = 0; k < 1500; k++) {
		struct scar_error e;
		int cnt;

		memcpy(b, orig, n);
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		cnt = 1 + (int)(s >> 60);
		for (int j = 0; j < cnt; j++) {
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			b[(s >> 33) % n] = (unsigned char)(s >> 20);
		}
		if (memcmp(b, orig, n) == 0 || k % SWEEP_STRIDE)
			continue;
		put(path, b, n);
		ok += verify_sampled(&e) < 0 && load_pipe(b, n, &e) < 0;
		if (k % 10 == 0)
			poke_random();
		if (memcmp(b, orig, n))
			continue;
	}
	CHECK(ok >= 1500 / SWEEP_STRIDE - 10);
	free(b);
}

/*
 * A compressed block that LZ4 cannot decode, under a valid block checksum:
 * the error must be in words and name the section, never LZ4F's own error
 * name (ERROR_decompressionFailed), on every path that decodes.
 */
static void test_lz4_undecodable(const unsigned char *orig, size_t n)
{
	unsigned char *b = malloc(n), *blk;
	struct layout l = layout_of(orig, n);
	struct scar_error e;
	uint32_t size;
	int rc;

	memcpy(b, orig, n);
	blk = b + l.first_section + CKPT_SEC_HDR_LEN + 15;
	size = ckpt_get32(blk) & 0x7FFFFFFFu;
	/* token 0xFF: a literal run longer than the block, which LZ4 refuses */
	ckpt_put32(blk, size);
	memset(blk + 4, 0xFF, size);
	ckpt_put32(blk + 4 + size, scar_ckpt_xxh32(blk + 4, size, 0));
	put(path, b, n);
	rc = verify_same(&e);
	CHECK(rc == SCAR_ECORRUPT);
	CHECK(strstr(e.msg, "section 0 (tensor 'w', shard 0): corrupt LZ4 block") == e.msg);
	CHECK(strstr(e.msg, "ERROR_") == NULL);
	if (rc != SCAR_ECORRUPT || strstr(e.msg, "ERROR_"))
		fprintf(stderr, "undecodable LZ4 block: %d: %s\n", rc, e.msg);
	CHECK(load_file(&e) == SCAR_ECORRUPT);
	CHECK(strstr(e.msg, "ERROR_") == NULL && strstr(e.msg, "section 0") != NULL);
	CHECK(load_pipe(b, n, &e) == SCAR_ECORRUPT);
	CHECK(strstr(e.msg, "ERROR_") == NULL && strstr(e.msg, "section 0") != NULL);
	free(b);
}

/*
 * The byte shuffle's flag where format 1.3 does not define it, each resealed:
 * unsupported, as a 1.2 reader finds any shuffled section, on every path.
 */
static void test_shuffle_flags(const unsigned char *orig, size_t n)
{
	unsigned char *b = malloc(n);
	struct layout l = layout_of(orig, n);
	unsigned char *f = b + l.first_section + 12;
	struct scar_error e;

	memcpy(b, orig, n);
	CHECK(ckpt_get16(b + 10) == 3 && (*f & 0x9) == 0x9);
	for (int k = 0; k < 3; k++) {
		memcpy(b, orig, n);
		if (k == 0) {
			ckpt_put16(b + 10, 2);	/* a file that says 1.2 */
			recrc(b, 12);
		} else {
			*f = k == 1 ? (unsigned char)(*f & ~1u) & ~6u : *f | 0x10;	/* no LZ4; bit 4 */
			recrc(b + l.first_section, 44);
		}
		put(path, b, n);
		CHECK(scar_ckpt_verify(path, &e) == SCAR_EUNSUPPORTED);
		CHECK(strstr(e.msg, "section 0 (tensor 'w', shard 0)") == e.msg);
		CHECK(load_file(&e) == SCAR_EUNSUPPORTED);
		CHECK(load_pipe(b, n, &e) == SCAR_EUNSUPPORTED);
	}
	free(b);
}

/* The golden files and what each must give; checked when they are present. */
static const struct {
	const char *name;
	int code;
} fixtures[] = {
	{ "good.ckpt", 0 },
	{ "truncated.ckpt", SCAR_ETRUNC },
	{ "bitflip-payload.ckpt", SCAR_ECORRUPT },
	{ "bitflip-header.ckpt", SCAR_ECORRUPT },
	{ "bitflip-index.ckpt", SCAR_ECORRUPT },
	{ "bad-magic.ckpt", SCAR_EFORMAT },
	{ "future-version.ckpt", SCAR_EVERSION },
	{ "empty.ckpt", SCAR_ETRUNC },
	{ "huge-meta-len.ckpt", SCAR_ECORRUPT },
};

static int write_fixtures(const char *out)
{
	size_t n;
	unsigned char *img = image(1, &n), *b = malloc(n);
	struct layout l = layout_of(img, n);
	char p[400];

#define FIX(name, len) do { \
	snprintf(p, sizeof(p), "%s/%s", out, name); \
	put(p, b, len); \
} while (0)
	memcpy(b, img, n);
	FIX("good.ckpt", n);
	/* Cut in the middle of the second section's payload. */
	{
		size_t s1 = l.first_section + 48 + (size_t)ckpt_get64(img + l.first_section + 32);

		FIX("truncated.ckpt", s1 + 48 + 10);
	}
	/* One bit of the first section's LZ4 data (after the 15-byte frame header and
	 * the 4-byte block size). */
	b[l.first_section + 48 + 15 + 4 + 2] ^= 0x10;
	FIX("bitflip-payload.ckpt", n);
	memcpy(b, img, n);
	b[9] ^= 0x01;			/* the major version, under the header CRC */
	FIX("bitflip-header.ckpt", n);
	memcpy(b, img, n);
	b[l.index + 8 + 8] ^= 0x04;	/* the first index entry's section offset */
	FIX("bitflip-index.ckpt", n);
	memcpy(b, img, n);
	memcpy(b, "\x89SCARXX\n", 8);
	FIX("bad-magic.ckpt", n);
	memcpy(b, img, n);
	ckpt_put16(b + 8, 2);
	recrc(b, 12);
	FIX("future-version.ckpt", n);
	FIX("empty.ckpt", 0);
	memcpy(b, img, n);
	ckpt_put32(b + 16, 0xFFFFFFFFu);
	FIX("huge-meta-len.ckpt", n);
#undef FIX
	free(b);
	free(img);
	return 0;
}

static void test_fixtures(void)
{
	char p[400];
	struct stat sb;
	struct scar_error e;

	if (stat("tests/fixtures/ckpt/good.ckpt", &sb) < 0)
		return;
	for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
		int rc;

		snprintf(p, sizeof(p), "tests/fixtures/ckpt/%s", fixtures[i].name);
		rc = scar_ckpt_verify(p, &e);
		CHECK(rc == fixtures[i].code);
		if (rc != fixtures[i].code)
			fprintf(stderr, "%s: %d (%s), expected %d\n", p, rc, e.msg, fixtures[i].code);
	}
}

int main(int argc, char **argv)
{
	unsigned char *img;
	size_t n;
	int rc = 0;

	dir = unit_scratch("ckpt-corrupt");
	snprintf(path, sizeof(path), "%s/c.ckpt", dir);
	if (argc == 3 && strcmp(argv[1], "--write-fixtures") == 0) {
		rc = write_fixtures(argv[2]);
	} else {
		for (int mode = 2; mode >= 0; mode--) {
			img = image(mode, &n);
			test_truncation(img, n);
			test_bitflips(img, n);
			test_crafted(img, n);
			if (mode == 2)
				test_shuffle_flags(img, n);
			if (mode) {
				test_huge_shape(img, n);
				test_bitmaps(img, n);
				test_lz4_undecodable(img, n);
			}
			test_smudges(img, n);
			free(img);
		}
		test_fixtures();
	}
	unit_scratch_remove();
	return rc ? rc : unit_done("test-ckpt-corrupt");
}
