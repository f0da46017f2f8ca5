/* test-ckpt.c - checkpoint format v1: round trips, random access, pipes, apply, list, atomicity,
 * interleaved rows (present bitmaps, format 1.1), the byte shuffle (format 1.3). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scar/ckpt.h"
#include "scar/shard.h"
#include "ckpt_internal.h"
#include "unit.h"

/* As CHECK_RC, printing the library's message on failure. */
#define CHECK_E(expr, e) do { \
	int ce_rc_; \
	scar_error_clear(&(e)); \
	ce_rc_ = (expr); \
	unit_checks++; \
	if (ce_rc_ < 0) { \
		unit_failures++; \
		fprintf(stderr, "%s:%d: %s returned %d: %s: %s\n", __FILE__, __LINE__, #expr, \
			ce_rc_, (e).file, (e).msg); \
	} \
} while (0)

static const char *dir;	/* the scratch directory (unit.h) */
static uint64_t seed = 88172645463325252ull;

static uint64_t rnd(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

static struct scar_tensor *mk(const char *name, enum scar_dtype dt, enum scar_role role, int ndim,
			      const uint64_t *shape, int smooth)
{
	struct scar_tensor *t = NULL;
	unsigned char *p;

	CHECK_RC(scar_tensor_new(&t, name, dt, role, ndim, shape, NULL));
	if (!t)
		exit(1);
	p = t->data;
	/* Smooth data compresses; random bytes do not (both paths of LZ4). */
	for (size_t i = 0; i < scar_tensor_bytes(t); i++)
		p[i] = smooth ? (unsigned char)(i / 64) : (unsigned char)rnd();
	return t;
}

static int same_state(const struct scar_state *a, const struct scar_state *b)
{
	int ok = 1;

	ok &= strcmp(a->model, b->model) == 0;
	ok &= a->iteration == b->iteration && a->shards == b->shards;
	ok &= a->ntensors == b->ntensors;
	ok &= json_equal(a->config, b->config) && json_equal(a->extra, b->extra);
	for (size_t i = 0; ok && i < a->ntensors; i++) {
		const struct scar_tensor *x = a->tensors[i], *y = b->tensors[i];
		size_t rb = scar_tensor_row_bytes(x);
		uint64_t rows = scar_tensor_rows(x);

		ok &= strcmp(x->name, y->name) == 0 && x->role == y->role;
		ok &= scar_tensor_same_layout(x, y);
		if (!ok)
			break;
		for (uint64_t r = 0; r < rows; r++) {
			int px = scar_tensor_has_row(x, r), py = scar_tensor_has_row(y, r);
			const unsigned char *ry = (const unsigned char *)y->data + r * rb;

			ok &= px == py;
			if (px)
				ok &= memcmp((const char *)x->data + r * rb, ry, rb) == 0;
			else
				for (size_t k = 0; k < rb; k++)
					ok &= ry[k] == 0;
		}
		/* The loaded state carries a present map exactly where rows are absent. */
		ok &= (y->present != NULL) == (scar_tensor_rows_present(x) < rows);
	}
	return ok;
}

static struct scar_state *mkstate(uint32_t shards, int smooth)
{
	static const enum scar_dtype dts[] = { SCAR_F32, SCAR_F64, SCAR_I32, SCAR_U32,
					       SCAR_I64, SCAR_U64, SCAR_U8 };
	struct scar_state *st = NULL;
	char name[32];
	int n = 0;

	CHECK_RC(scar_state_new(&st, "mlr", NULL));
	st->shards = shards;
	st->iteration = 1234567;
	json_object_set_new(st->config, "lr", json_real(0.125));
	json_object_set_new(st->extra, "note", json_string("caf\xc3\xa9"));
	for (size_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++)
		for (int nd = 0; nd <= 3; nd++) {
			uint64_t shape[3] = { 5 + d + (uint64_t)nd, 3, 2 };

			snprintf(name, sizeof(name), "t%d", n++);
			CHECK_RC(scar_state_add(st, mk(name, dts[d], n % 3 ? SCAR_ROLE_PARAM : SCAR_ROLE_STATE,
						       nd, shape, smooth), NULL));
		}
	{
		uint64_t e0[2] = { 0, 4 }, e1[2] = { 4, 0 };

		CHECK_RC(scar_state_add(st, mk("empty_rows", SCAR_F32, SCAR_ROLE_PARAM, 2, e0, 0), NULL));
		CHECK_RC(scar_state_add(st, mk("empty_cols", SCAR_F32, SCAR_ROLE_PARAM, 2, e1, 0), NULL));
	}
	return st;
}

static void make_partial(struct scar_state *st)
{
	for (size_t i = 0; i < st->ntensors; i++) {
		struct scar_tensor *t = st->tensors[i];
		uint64_t rows = scar_tensor_rows(t);

		if (i % 4 == 3)
			continue;	/* some tensors stay whole */
		CHECK_RC(scar_tensor_init_present(t, 0, NULL));
		for (uint64_t r = 0; r < rows; r++)
			t->present[r] = (rnd() % 3) == 0;
		if (i % 4 == 1)
			memset(t->present, 0, rows);	/* and some lose every row */
		for (uint64_t r = 0; r < rows; r++)
			if (!t->present[r])
				memset(scar_tensor_row(t, r), 0, scar_tensor_row_bytes(t));
	}
}

static void test_crc(void)
{
	unsigned char buf[1000];

	CHECK(scar_crc32c(0, "123456789", 9) == 0xE3069283u);
	CHECK(scar_ckpt_crc32c_soft(0, "123456789", 9) == 0xE3069283u);
	CHECK(scar_crc32c(0, "", 0) == 0);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)rnd();
	for (size_t off = 0; off < 9; off++)
		for (size_t n = 0; n < 300; n += 7) {
			uint32_t a = scar_crc32c(0, buf + off, n);

			CHECK(a == scar_ckpt_crc32c_soft(0, buf + off, n));
			CHECK(a == scar_crc32c(scar_crc32c(0, buf + off, n / 3), buf + off + n / 3, n - n / 3));
		}
}

static void test_roundtrips(void)
{
	static const uint32_t shards[] = { 1, 2, 3, 7 };

	for (size_t k = 0; k < sizeof(shards) / sizeof(shards[0]); k++)
		for (int comp = 0; comp <= 1; comp++)
			for (int part = 0; part <= 1; part++)
				for (int smooth = 0; smooth <= 1; smooth++) {
					struct scar_state *st = mkstate(shards[k], smooth), *ld = NULL;
					struct scar_ckpt_save_opts o;
					struct scar_error e;
					const char *p = unit_tmp("rt.ckpt");

					if (part)
						make_partial(st);
					scar_ckpt_save_opts_init(&o);
					o.compress = comp;
					o.sync = 0;
					o.block_size = (size_t)64 << 10 << (2 * (k % 4));
					CHECK_E(scar_ckpt_save(st, p, &o, &e), e);
					CHECK_E(scar_ckpt_verify(p, &e), e);
					CHECK_E(scar_ckpt_load(p, &ld, &e), e);
					CHECK(ld && same_state(st, ld));
					if (ld && !same_state(st, ld))
						fprintf(stderr, "round trip: shards %u comp %d part %d\n",
							shards[k], comp, part);
					scar_state_free(ld);
					scar_state_free(st);
				}
}

/* A larger tensor, several LZ4 blocks per section, level HC too. */
static void test_big(void)
{
	uint64_t shape[2] = { 3001, 97 };
	struct scar_state *st = NULL, *ld = NULL;
	struct scar_ckpt_save_opts o;

	CHECK_RC(scar_state_new(&st, "ridge", NULL));
	st->shards = 4;
	CHECK_RC(scar_state_add(st, mk("w", SCAR_F32, SCAR_ROLE_PARAM, 2, shape, 1), NULL));
	for (int level = 0; level <= 9; level += 9) {
		scar_ckpt_save_opts_init(&o);
		o.sync = 0;
		o.level = level;
		o.block_size = 64 << 10;
		CHECK_RC(scar_ckpt_save(st, unit_tmp("big.ckpt"), &o, NULL));
		CHECK_RC(scar_ckpt_verify(unit_tmp("big.ckpt"), NULL));
		CHECK_RC(scar_ckpt_load(unit_tmp("big.ckpt"), &ld, NULL));
		CHECK(ld && same_state(st, ld));
		scar_state_free(ld);
		ld = NULL;
	}
	scar_state_free(st);
}

/*
 * The rows a rank of a distributed run holds interleave with the others'
 * (row mod S, shard mod P). Listed one [r,1] at a time, 12 million rows
 * every other present needed over 64 MiB of metadata, over the format's
 * limit; as a present bitmap (format 1.1) it is 2 MB, and loads back.
 */
static void test_interleaved_rows(void)
{
	uint64_t shape[2] = { 12000000, 1 }, want = 0;
	struct scar_state *st = NULL, *ld = NULL;
	struct scar_ckpt_save_opts o;
	struct scar_tensor *t;
	struct scar_error e;
	unsigned char h[24];
	FILE *f;

	CHECK_RC(scar_state_new(&st, "mf", NULL));
	st->shards = 8;
	t = mk("user_bias", SCAR_F32, SCAR_ROLE_PARAM, 2, shape, 1);
	CHECK_RC(scar_tensor_init_present(t, 0, NULL));
	for (uint64_t r = 0; r < shape[0]; r++)
		if ((r % 8) % 2 == 1)	/* rank 1 of 2 */
			t->present[r] = 1, want++;
	CHECK_RC(scar_state_add(st, t, NULL));
	scar_ckpt_save_opts_init(&o);
	o.sync = 0;
	CHECK_E(scar_ckpt_save(st, unit_tmp("interleaved.ckpt"), &o, &e), e);
	f = fopen(unit_tmp("interleaved.ckpt"), "rb");
	CHECK(f && fread(h, 1, sizeof(h), f) == sizeof(h));
	if (f)
		fclose(f);
	CHECK(ckpt_get16(h + 10) == 1);			/* minor version 1: a bitmap */
	CHECK(ckpt_get32(h + 16) < (3u << 20));		/* metadata under 3 MB */
	CHECK_E(scar_ckpt_load(unit_tmp("interleaved.ckpt"), &ld, &e), e);
	t = ld ? scar_state_find(ld, "user_bias") : NULL;
	CHECK(t && t->present);
	if (t && t->present) {
		uint64_t n = 0, wrong = 0;

		for (uint64_t r = 0; r < shape[0]; r++) {
			n += t->present[r] != 0;
			wrong += (t->present[r] != 0) != ((r % 8) % 2 == 1);
		}
		CHECK(n == want && wrong == 0);
	}
	CHECK(ld && same_state(st, ld));
	scar_state_free(ld);
	scar_state_free(st);
	unlink(unit_tmp("interleaved.ckpt"));
}

/* The minor version a saved state's header says. */
static unsigned saved_minor(const struct scar_state *st, const char *name)
{
	struct scar_ckpt_save_opts o;
	struct scar_error e;
	unsigned char h[12] = { 0 };
	FILE *f;

	scar_ckpt_save_opts_init(&o);
	o.sync = 0;
	CHECK_E(scar_ckpt_save(st, unit_tmp(name), &o, &e), e);
	f = fopen(unit_tmp(name), "rb");
	CHECK(f && fread(h, 1, sizeof(h), f) == sizeof(h));
	if (f)
		fclose(f);
	return ckpt_get16(h + 10);
}

/* f16 and bf16 tensors: format 1.2, bytes kept; without them the file is as before. */
static void test_halves(void)
{
	uint64_t shape[2] = { 37, 3 };
	struct scar_state *st = NULL, *ld = NULL;
	struct scar_tensor *t;
	struct scar_error e;

	CHECK_RC(scar_state_new(&st, "", NULL));
	st->shards = 4;
	CHECK_RC(scar_state_add(st, mk("w", SCAR_F32, SCAR_ROLE_PARAM, 2, shape, 0), NULL));
	CHECK(saved_minor(st, "h.ckpt") == 0);
	CHECK_RC(scar_state_add(st, mk("h", SCAR_F16, SCAR_ROLE_PARAM, 2, shape, 0), NULL));
	CHECK_RC(scar_state_add(st, mk("b", SCAR_BF16, SCAR_ROLE_STATE, 2, shape, 1), NULL));
	CHECK(saved_minor(st, "h.ckpt") == 2);
	CHECK_E(scar_ckpt_load(unit_tmp("h.ckpt"), &ld, &e), e);
	CHECK(ld && same_state(st, ld));
	t = ld ? scar_state_find(ld, "b") : NULL;
	CHECK(t && t->dtype == SCAR_BF16 && t->role == SCAR_ROLE_STATE);
	scar_state_free(ld);
	/* scattered rows (a bitmap, 1.1) and f16: 1.2 says both */
	t = scar_state_find(st, "h");
	CHECK_RC(scar_tensor_init_present(t, 0, NULL));
	for (uint64_t r = 0; r < shape[0]; r += 2)
		t->present[r] = 1;
	CHECK(saved_minor(st, "h.ckpt") == 2);
	CHECK_E(scar_ckpt_load(unit_tmp("h.ckpt"), &ld, &e), e);
	CHECK(ld && same_state(st, ld));
	scar_state_free(ld);
	scar_state_free(st);
	unlink(unit_tmp("h.ckpt"));
}

/* The shuffle of scar-ckpt(5), written out: byte j of element i to j * m + i, the tail kept. */
static void shuffle_ref(unsigned char *d, const unsigned char *s, size_t n, size_t e)
{
	size_t m = n / e;

	for (size_t k = 0; k < n; k++)
		d[k] = s[k];
	for (size_t i = 0; i < m; i++)
		for (size_t j = 0; j < e; j++)
			d[j * m + i] = s[i * e + j];
}

static void test_shuffle_kernel(void)
{
	/* scar-ckpt(5)'s example: i32 1, 2, 258 */
	static const unsigned char r[12] = { 1, 0, 0, 0, 2, 0, 0, 0, 2, 1, 0, 0 };
	static const unsigned char want[12] = { 1, 2, 2, 0, 0, 1, 0, 0, 0, 0, 0, 0 };
	unsigned char a[1000], b[1000], c[1000], ref[1000];
	int bad = 0;

	scar_ckpt_shuffle(b, r, 12, 4);
	CHECK(memcmp(b, want, 12) == 0);
	for (size_t i = 0; i < sizeof(a); i++)
		a[i] = (unsigned char)rnd();
	/* every element size the code has a path for, and others; every tail */
	for (size_t e = 1; e <= 9; e++)
		for (size_t n = 0; n <= 300; n += (n < 40 ? 1 : 13)) {
			memset(b, 0xAA, sizeof(b));
			memset(c, 0x55, sizeof(c));
			shuffle_ref(ref, a + 3, n, e);
			scar_ckpt_shuffle(b, a + 3, n, e);
			scar_ckpt_unshuffle(c, b, n, e);
			if (memcmp(b, ref, n) || memcmp(c, a + 3, n) || b[n] != 0xAA || c[n] != 0x55)
				if (bad++ < 5)
					fprintf(stderr, "shuffle: e %zu n %zu wrong\n", e, n);
		}
	CHECK(bad == 0);
	/* auto: small integers pay, random bytes do not, a tie is no */
	{
		uint32_t v[4096];
		unsigned char scratch[2 * CKPT_SHUFFLE_SAMPLE];

		for (size_t i = 0; i < 4096; i++)
			v[i] = (uint32_t)(rnd() % 1000);
		CHECK(scar_ckpt_shuffle_pays(v, sizeof(v), 4, scratch) == 1);
		CHECK(scar_ckpt_shuffle_pays(v, sizeof(v), 1, scratch) == 0);
		for (size_t i = 0; i < 4096; i++)
			v[i] = (uint32_t)rnd();
		CHECK(scar_ckpt_shuffle_pays(v, sizeof(v), 4, scratch) == 0);
		memset(v, 0, sizeof(v));
		CHECK(scar_ckpt_shuffle_pays(v, sizeof(v), 4, scratch) == 0);
	}
	CHECK(scar_shuffle_parse("auto") == SCAR_SHUFFLE_AUTO && scar_shuffle_parse("On") == -1);
	CHECK(strcmp(scar_shuffle_name(SCAR_SHUFFLE_OFF), "off") == 0 && !scar_shuffle_name(3));
}

/* The file at path, in memory. */
static unsigned char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	unsigned char *b = NULL;
	long len;

	*n = 0;
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (b = malloc((size_t)len + 1)) && fread(b, 1, (size_t)len, f) == (size_t)len)
		*n = (size_t)len;
	fclose(f);
	return b;
}

/* A state of every dtype whose sections span several 64 KiB blocks, and end off a block. */
static struct scar_state *shuffle_state(void)
{
	static const enum scar_dtype dts[] = { SCAR_F32, SCAR_F64, SCAR_F16, SCAR_BF16, SCAR_I32,
					       SCAR_U32, SCAR_I64, SCAR_U64, SCAR_U8 };
	struct scar_state *st = NULL;
	char name[32];

	CHECK_RC(scar_state_new(&st, "lda", NULL));
	st->shards = 3;
	for (size_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++) {
		uint64_t shape[2] = { 9001 + d, 7 };
		struct scar_tensor *t = NULL;

		snprintf(name, sizeof(name), "%s", scar_dtype_name(dts[d]));
		CHECK_RC(scar_tensor_new(&t, name, dts[d], d % 2 ? SCAR_ROLE_STATE : SCAR_ROLE_PARAM,
					 2, shape, NULL));
		/* small integers: what shuffling is for */
		for (uint64_t i = 0; i < scar_tensor_elems(t); i++)
			scar_tensor_set(t, i, (double)(rnd() % 50));
		CHECK_RC(scar_state_add(st, t, NULL));
	}
	return st;
}

/*
 * Shuffled checkpoints (format 1.3): every dtype round-trips through every
 * decoding path (load from a file and a pipe, whole tensors and scattered
 * shards, the streaming and the random-access reader); exactly the LZ4
 * sections of 2- to 8-byte dtypes are shuffled, and only then is the file
 * 1.3; the bytes are the same for every thread count, file or pipe.
 */
static void test_shuffle(void)
{
	struct scar_state *st = shuffle_state(), *ld = NULL;
	struct scar_ckpt_save_opts o;
	struct scar_error e;
	size_t n1 = 0, n2;

	make_partial(st);
	for (int mode = SCAR_SHUFFLE_OFF; mode <= SCAR_SHUFFLE_AUTO; mode++) {
		unsigned char *one = NULL;

		for (unsigned threads = 1; threads <= 5; threads += 2) {
			struct scar_ckpt_reader *r = NULL, *q = NULL;
			const struct scar_ckpt_section_info *ix;
			struct scar_ckpt_section sec, sq;
			unsigned char *b;
			int rc, nidx, k = 0;

			scar_ckpt_save_opts_init(&o);
			o.sync = 0;
			o.block_size = (size_t)64 << 10;
			o.shuffle = mode;
			o.threads = threads;
			CHECK_E(scar_ckpt_save(st, unit_tmp("sh.ckpt"), &o, &e), e);
			b = slurp(unit_tmp("sh.ckpt"), &n2);
			if (!one) {
				one = b;
				n1 = n2;
			} else {
				CHECK(b && n1 == n2 && memcmp(one, b, n1) == 0);
				free(b);
			}
			CHECK_E(scar_ckpt_verify(unit_tmp("sh.ckpt"), &e), e);
			CHECK_E(scar_ckpt_load(unit_tmp("sh.ckpt"), &ld, &e), e);
			CHECK(ld && same_state(st, ld));
			scar_state_free(ld);
			ld = NULL;
			CHECK_E(scar_ckpt_reader_open(&r, unit_tmp("sh.ckpt"), &e), e);
			CHECK_E(scar_ckpt_reader_open(&q, unit_tmp("sh.ckpt"), &e), e);
			if (!r || !q)
				break;
			nidx = scar_ckpt_reader_index(q, &ix, &e);
			while ((rc = scar_ckpt_reader_next(r, &sec, &e)) == 1) {
				const struct scar_tensor *t = st->tensors[sec.info.tensor];
				size_t rb = scar_tensor_row_bytes(t), esz = scar_dtype_size(t->dtype);
				int bad = 0;

				for (uint64_t i = 0; i < sec.info.nrows; i++)
					bad |= memcmp(scar_tensor_row(t, sec.rows[i]),
						      (const char *)sec.data + i * rb, rb) != 0;
				CHECK(!bad);
				CHECK(k < nidx && ix[k].shuffled == sec.info.shuffled);
				CHECK(sec.info.compressed);
				CHECK(!sec.info.shuffled || esz > 1);
				if (mode == SCAR_SHUFFLE_ON)
					CHECK(sec.info.shuffled == (esz > 1));
				if (mode == SCAR_SHUFFLE_OFF)
					CHECK(!sec.info.shuffled);
				/* small integers: auto shuffles them (not f16 and bf16) */
				if (mode == SCAR_SHUFFLE_AUTO && !scar_dtype_is_float(t->dtype))
					CHECK(sec.info.shuffled == (esz > 1));
				CHECK_E(scar_ckpt_reader_section(q, sec.info.tensor, sec.info.shard, &sq, &e),
					e);
				CHECK(sq.info.raw_len == sec.info.raw_len &&
				      memcmp(sq.data, sec.data, (size_t)sq.info.raw_len) == 0);
				k++;
			}
			CHECK(rc == 0 && k == nidx);
			CHECK(scar_ckpt_reader_info(r)->minor == (mode ? 3 : 2));
			scar_ckpt_reader_close(r);
			scar_ckpt_reader_close(q);
		}
		/* through a pipe: the same bytes, and they load */
		{
			int fds[2], status = -1;
			size_t got = 0;
			unsigned char *b = malloc(n1 + 1);
			ssize_t k;
			pid_t pid;

			CHECK(b && pipe(fds) == 0);
			pid = fork();
			if (pid == 0) {
				close(fds[0]);
				_exit(scar_ckpt_write_fd(st, fds[1], "pipe", &o, NULL) ? 1 : 0);
			}
			close(fds[1]);
			while (b && (k = read(fds[0], b + got, n1 + 1 - got)) > 0)
				got += (size_t)k;
			close(fds[0]);
			waitpid(pid, &status, 0);
			CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
			CHECK(got == n1 && one && memcmp(b, one, n1) == 0);
			CHECK(pipe(fds) == 0);
			pid = fork();
			if (pid == 0) {
				close(fds[0]);
				_exit(write(fds[1], b, got) == (ssize_t)got ? 0 : 1);
			}
			close(fds[1]);
			CHECK_E(scar_ckpt_load_fd(fds[0], "pipe", &ld, &e), e);
			CHECK(ld && same_state(st, ld));
			scar_state_free(ld);
			ld = NULL;
			close(fds[0]);
			waitpid(pid, &status, 0);
			free(b);
		}
		free(one);
	}
	/* Whole tensors (one shard, every row): they decode into the tensor itself. */
	st->shards = 1;
	for (size_t i = 0; i < st->ntensors; i++) {
		free(st->tensors[i]->present);
		st->tensors[i]->present = NULL;
	}
	scar_ckpt_save_opts_init(&o);
	o.sync = 0;
	o.shuffle = SCAR_SHUFFLE_ON;
	o.level = 9;
	CHECK_E(scar_ckpt_save(st, unit_tmp("sh.ckpt"), &o, &e), e);
	CHECK_E(scar_ckpt_load(unit_tmp("sh.ckpt"), &ld, &e), e);
	CHECK(ld && same_state(st, ld));
	scar_state_free(ld);
	/* Shuffle without compression is nothing: a 1.2 file of raw sections. */
	o.compress = 0;
	CHECK_E(scar_ckpt_save(st, unit_tmp("sh.ckpt"), &o, &e), e);
	{
		struct scar_ckpt_reader *r = NULL;
		struct scar_ckpt_section sec;
		int rc, any = 0;

		CHECK_E(scar_ckpt_reader_open(&r, unit_tmp("sh.ckpt"), &e), e);
		CHECK(r && scar_ckpt_reader_info(r)->minor == 2);
		while (r && (rc = scar_ckpt_reader_next(r, &sec, &e)) == 1)
			any |= sec.info.compressed | sec.info.shuffled;
		CHECK(!any);
		scar_ckpt_reader_close(r);
	}
	o.shuffle = 7;
	CHECK(scar_ckpt_save(st, unit_tmp("sh.ckpt"), &o, &e) == SCAR_EINVAL);
	scar_state_free(st);
	unlink(unit_tmp("sh.ckpt"));
}

static void test_random_access(void)
{
	struct scar_state *st = mkstate(3, 1);
	struct scar_ckpt_reader *a = NULL, *b = NULL;
	const struct scar_ckpt_section_info *ix;
	struct scar_ckpt_section s1, s2;
	struct scar_error e;
	int n, rc, k = 0;

	make_partial(st);
	CHECK_RC(scar_ckpt_save(st, unit_tmp("ra.ckpt"), NULL, &e));
	CHECK_RC(scar_ckpt_reader_open(&a, unit_tmp("ra.ckpt"), &e));
	CHECK_RC(scar_ckpt_reader_open(&b, unit_tmp("ra.ckpt"), &e));
	if (!a || !b)
		return;
	CHECK(scar_ckpt_reader_info(a)->partial == 1);
	CHECK(scar_ckpt_reader_info(a)->iteration == 1234567);
	n = scar_ckpt_reader_index(b, &ix, &e);
	CHECK(n > 0);
	while ((rc = scar_ckpt_reader_next(a, &s1, &e)) == 1) {
		uint32_t t = s1.info.tensor, sh = s1.info.shard;
		const struct scar_tensor *tt = st->tensors[t];
		size_t rb = scar_tensor_row_bytes(tt);
		size_t copy_len = (size_t)s1.info.raw_len;
		void *copy = malloc(copy_len ? copy_len : 1);
		uint64_t *rows = malloc((size_t)s1.info.nrows * 8 + 8);

		memcpy(copy, s1.data, copy_len);
		memcpy(rows, s1.rows, (size_t)s1.info.nrows * 8);
		CHECK(k < n && ix[k].tensor == t && ix[k].shard == sh && ix[k].offset == s1.info.offset);
		CHECK(k < n && ix[k].compressed == s1.info.compressed);
		CHECK_RC(scar_ckpt_reader_section(b, t, sh, &s2, &e));
		CHECK(s2.info.nrows == s1.info.nrows && s2.info.raw_len == s1.info.raw_len);
		CHECK(memcmp(s2.data, copy, copy_len) == 0);
		CHECK(memcmp(s2.rows, rows, (size_t)s1.info.nrows * 8) == 0);
		for (uint64_t i = 0; i < s1.info.nrows; i++) {
			CHECK(scar_shard_of_row(rows[i], scar_tensor_shards(tt, st->shards)) == sh);
			CHECK(scar_tensor_has_row(tt, rows[i]));
			CHECK(i == 0 || rows[i] > rows[i - 1]);
			CHECK(memcmp(scar_tensor_row(tt, rows[i]), (char *)copy + i * rb, rb) == 0);
		}
		free(copy);
		free(rows);
		k++;
	}
	CHECK(rc == 0 && k == n);
	CHECK(scar_ckpt_reader_section(b, 0, 999, &s2, &e) == SCAR_ENOTFOUND);
	/* After the stream, random access still works on the same reader. */
	CHECK(scar_ckpt_reader_index(a, &ix, &e) == n);
	CHECK(scar_ckpt_reader_offset(a) > 0);
	scar_ckpt_reader_close(a);
	scar_ckpt_reader_close(b);
	scar_state_free(st);
}

static void test_pipe(void)
{
	struct scar_state *st = mkstate(2, 0), *ld = NULL;
	struct scar_ckpt_reader *r = NULL;
	const struct scar_ckpt_section_info *ix;
	struct scar_error e;
	int fds[2], status = -1;
	pid_t pid;

	for (int pass = 0; pass < 2; pass++) {
		CHECK(pipe(fds) == 0);
		pid = fork();
		if (pid == 0) {
			close(fds[0]);
			_exit(scar_ckpt_write_fd(st, fds[1], "pipe", NULL, NULL) ? 1 : 0);
		}
		close(fds[1]);
		if (pass == 0) {
			CHECK_E(scar_ckpt_load_fd(fds[0], "pipe", &ld, &e), e);
			CHECK(ld && same_state(st, ld));
			scar_state_free(ld);
		} else {
			CHECK_RC(scar_ckpt_reader_open_fd(&r, fds[0], "pipe", &e));
			CHECK(r && scar_ckpt_reader_index(r, &ix, &e) == SCAR_EUNSUPPORTED);
			scar_ckpt_reader_close(r);
		}
		close(fds[0]);
		waitpid(pid, &status, 0);
		CHECK(pass == 1 || (WIFEXITED(status) && WEXITSTATUS(status) == 0));
	}
	scar_state_free(st);
}

static struct scar_state *small(const char *model, uint64_t iter, uint64_t rows)
{
	struct scar_state *st = NULL;
	uint64_t shape[2] = { rows, 2 };
	struct scar_tensor *t = NULL;

	CHECK_RC(scar_state_new(&st, model, NULL));
	st->iteration = iter;
	st->shards = 2;
	CHECK_RC(scar_tensor_new(&t, "w", SCAR_F64, SCAR_ROLE_PARAM, 2, shape, NULL));
	for (uint64_t i = 0; i < rows * 2; i++)
		((double *)t->data)[i] = (double)iter;
	CHECK_RC(scar_state_add(st, t, NULL));
	return st;
}

/* A checkpoint without a single row (an MPI rank that holds no shard):
 * no sections, an empty index; it writes, verifies and loads. */
static void test_no_sections(void)
{
	struct scar_state *st = small("mf", 3, 4), *ld = NULL;
	struct scar_error e;

	CHECK_RC(scar_tensor_init_present(st->tensors[0], 0, NULL));
	memset(st->tensors[0]->present, 0, 4);
	CHECK_E(scar_ckpt_save(st, unit_tmp("none.ckpt"), NULL, &e), e);
	CHECK_E(scar_ckpt_verify(unit_tmp("none.ckpt"), &e), e);
	CHECK_E(scar_ckpt_load(unit_tmp("none.ckpt"), &ld, &e), e);
	CHECK(ld && ld->ntensors == 1 && scar_tensor_rows_present(ld->tensors[0]) == 0);
	scar_state_free(ld);
	scar_state_free(st);
}

static void test_apply(void)
{
	struct scar_state *base = small("mf", 10, 6), *p1 = small("mf", 12, 6), *p2 = small("mf", 14, 6);
	struct scar_state *ld = NULL, *bad;
	struct scar_error e;
	json_t *ap;

	CHECK_RC(scar_tensor_init_present(p1->tensors[0], 0, NULL));
	p1->tensors[0]->present[1] = p1->tensors[0]->present[4] = 1;
	CHECK_RC(scar_tensor_init_present(p2->tensors[0], 0, NULL));
	p2->tensors[0]->present[4] = p2->tensors[0]->present[5] = 1;
	/* Through files, as scar-ckpt apply does it. */
	CHECK_RC(scar_ckpt_save(p1, unit_tmp("p1.ckpt"), NULL, NULL));
	CHECK_RC(scar_ckpt_load(unit_tmp("p1.ckpt"), &ld, NULL));
	CHECK_RC(scar_ckpt_apply(base, ld, &e));
	scar_state_free(ld);
	CHECK_RC(scar_ckpt_apply(base, p2, &e));
	{
		const double *w = base->tensors[0]->data;
		static const double want[6] = { 10, 12, 10, 10, 14, 14 };

		for (int r = 0; r < 6; r++)
			CHECK(w[2 * r] == want[r] && w[2 * r + 1] == want[r]);
	}
	CHECK(base->iteration == 14);
	CHECK(base->tensors[0]->present == NULL);
	ap = json_object_get(base->extra, "applied");
	CHECK(json_array_size(ap) == 2 && json_integer_value(json_array_get(ap, 0)) == 12 &&
	      json_integer_value(json_array_get(ap, 1)) == 14);
	/* Mismatches change nothing. */
	CHECK(scar_ckpt_apply(base, p1, &e) == SCAR_EMISMATCH);	/* older */
	bad = small("lda", 20, 6);
	CHECK(scar_ckpt_apply(base, bad, &e) == SCAR_EMISMATCH);
	scar_state_free(bad);
	bad = small("mf", 20, 7);
	CHECK(scar_ckpt_apply(base, bad, &e) == SCAR_EMISMATCH);
	scar_state_free(bad);
	bad = small("mf", 20, 6);
	bad->shards = 3;
	CHECK(scar_ckpt_apply(base, bad, &e) == SCAR_EMISMATCH);
	scar_state_free(bad);
	CHECK(base->iteration == 14 && json_array_size(ap) == 2);
	/* A partial over a partial base fills its present map. */
	{
		struct scar_state *pb = small("mf", 1, 4), *pc = small("mf", 2, 4);

		CHECK_RC(scar_tensor_init_present(pb->tensors[0], 0, NULL));
		pb->tensors[0]->present[0] = 1;
		CHECK_RC(scar_tensor_init_present(pc->tensors[0], 0, NULL));
		pc->tensors[0]->present[2] = 1;
		CHECK_RC(scar_ckpt_apply(pb, pc, &e));
		CHECK(pb->tensors[0]->present && pb->tensors[0]->present[0] &&
		      !pb->tensors[0]->present[1] && pb->tensors[0]->present[2]);
		scar_state_free(pb);
		scar_state_free(pc);
	}
	scar_state_free(base);
	scar_state_free(p1);
	scar_state_free(p2);
}

static void test_list(void)
{
	struct scar_ckpt_entry *v = NULL;
	size_t n = 0, skipped = 0;
	char sub[300];
	int fd;

	snprintf(sub, sizeof(sub), "%s/ls", dir);
	CHECK(mkdir(sub, 0755) == 0);
	for (int k = 0; k < 3; k++) {
		static const uint64_t its[3] = { 50, 10, 30 };
		struct scar_state *st = small("mlr", its[k], 3);
		char p[400];

		if (k == 2) {
			CHECK_RC(scar_tensor_init_present(st->tensors[0], 0, NULL));
			st->tensors[0]->present[1] = 1;
		}
		snprintf(p, sizeof(p), "%s/c%d.ckpt", sub, k);
		CHECK_RC(scar_ckpt_save(st, p, NULL, NULL));
		scar_state_free(st);
	}
	snprintf(sub + strlen(sub), sizeof(sub) - strlen(sub), "/junk.ckpt");
	fd = open(sub, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && write(fd, "nope", 4) == 4);
	close(fd);
	strcpy(strrchr(sub, '/'), "/other.txt");
	fd = open(sub, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	close(fd);
	*strrchr(sub, '/') = 0;
	CHECK_RC(scar_ckpt_list(sub, &v, &n, &skipped, NULL));
	CHECK(n == 3 && skipped == 1);
	if (n == 3) {
		CHECK(v[0].iteration == 10 && v[1].iteration == 30 && v[2].iteration == 50);
		CHECK(!v[0].partial && v[1].partial && !v[2].partial);
		CHECK(strstr(v[1].path, "/c2.ckpt") != NULL && v[1].size > 0);
	}
	scar_ckpt_list_free(v, n);
	CHECK(scar_ckpt_list(unit_tmp("no-such-dir"), &v, &n, NULL, NULL) == SCAR_EIO);
}

static int has_temp(const char *d)
{
	DIR *dd = opendir(d);
	struct dirent *de;
	int found = 0;

	while (dd && (de = readdir(dd)))
		found |= strstr(de->d_name, ".tmp.") != NULL;
	if (dd)
		closedir(dd);
	return found;
}

static void test_atomic(void)
{
	struct scar_state *st = small("mlr", 3, 4), *ld = NULL;
	struct scar_error e;
	struct stat sb;
	char sub[300];
	mode_t um;

	/* The target is a directory: rename fails, no temporary file stays. */
	snprintf(sub, sizeof(sub), "%s/isdir.ckpt", dir);
	CHECK(mkdir(sub, 0755) == 0);
	CHECK(scar_ckpt_save(st, sub, NULL, &e) == SCAR_EIO);
	CHECK(strstr(e.file, "isdir.ckpt") != NULL);
	CHECK(!has_temp(dir));
	/* The directory does not exist. */
	CHECK(scar_ckpt_save(st, unit_tmp("nodir/x.ckpt"), NULL, &e) == SCAR_EIO);
	/* An invalid state fails before anything is created; the old file stays. */
	CHECK_RC(scar_ckpt_save(st, unit_tmp("keep.ckpt"), NULL, &e));
	st->shards = 0;
	CHECK(scar_ckpt_save(st, unit_tmp("keep.ckpt"), NULL, &e) == SCAR_EINVAL);
	CHECK(!has_temp(dir));
	CHECK_RC(scar_ckpt_load(unit_tmp("keep.ckpt"), &ld, &e));
	CHECK(ld && ld->shards == 2);
	scar_state_free(ld);
	/* Mode as open(2) with 0666 would give. */
	um = umask(022);
	umask(um);
	CHECK(stat(unit_tmp("keep.ckpt"), &sb) == 0 && (sb.st_mode & 0777) == (0666 & ~um));
	/* A write that fails half way (the file size limit) leaves the old file and no temporary. */
	{
		struct scar_state *big = small("mlr", 99, 20000);
		pid_t pid = fork();
		int status = -1;

		if (pid == 0) {
			struct rlimit rl = { 4096, 4096 };
			struct scar_ckpt_save_opts o;

			signal(SIGXFSZ, SIG_IGN);
			scar_ckpt_save_opts_init(&o);
			o.compress = 0;
			if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
				_exit(3);
			_exit(scar_ckpt_save(big, unit_tmp("keep.ckpt"), &o, &e) == SCAR_EIO &&
			      e.errno_value == EFBIG ? 0 : 1);
		}
		waitpid(pid, &status, 0);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		CHECK(!has_temp(dir));
		CHECK_E(scar_ckpt_load(unit_tmp("keep.ckpt"), &ld, &e), e);
		CHECK(ld && ld->iteration == 3);
		scar_state_free(ld);
		scar_state_free(big);
	}
	/* A path ending in '/' is refused. */
	st->shards = 2;
	CHECK(scar_ckpt_save(st, unit_tmp("x/"), NULL, &e) == SCAR_EINVAL);
	scar_state_free(st);
}

/* Descriptors that are not at offset 0, or append-only, still give a valid checkpoint. */
static void test_fd_modes(void)
{
	struct scar_state *st = small("mlr", 9, 50), *ld = NULL;
	struct scar_error e;
	int fd;

	fd = open(unit_tmp("app.ckpt"), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
	CHECK_E(scar_ckpt_write_fd(st, fd, "app", NULL, &e), e);
	close(fd);
	CHECK_E(scar_ckpt_verify(unit_tmp("app.ckpt"), &e), e);
	fd = open(unit_tmp("off.ckpt"), O_RDWR | O_CREAT | O_TRUNC, 0644);
	CHECK(write(fd, "JUNKJUNK", 8) == 8);
	CHECK_E(scar_ckpt_write_fd(st, fd, "off", NULL, &e), e);
	CHECK(lseek(fd, 8, SEEK_SET) == 8);
	CHECK_E(scar_ckpt_load_fd(fd, "off", &ld, &e), e);
	CHECK(ld && same_state(st, ld));
	close(fd);
	scar_state_free(ld);
	scar_state_free(st);
}

/* All of fd until end of file, malloc'd; *n its length. */
static unsigned char *slurp_fd(int fd, size_t *n)
{
	size_t cap = 1 << 20;
	unsigned char *b = malloc(cap);
	ssize_t k;

	*n = 0;
	while (b && (k = read(fd, b + *n, cap - *n)) > 0)
		if ((*n += (size_t)k) == cap && !(b = realloc(b, cap *= 2)))
			break;
	if (!b)
		exit(2);
	return b;
}

/* st written with o through a pipe (each LZ4 section built in memory first). */
static unsigned char *through_pipe(const struct scar_state *st, const struct scar_ckpt_save_opts *o,
				   size_t *n)
{
	int fds[2], status = -1;
	unsigned char *b;
	pid_t pid;

	CHECK(pipe(fds) == 0);
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		_exit(scar_ckpt_write_fd(st, fds[1], "pipe", o, NULL) ? 1 : 0);
	}
	close(fds[1]);
	b = slurp_fd(fds[0], n);
	close(fds[0]);
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return b;
}

/*
 * opts.threads: the file is the single-threaded writer's byte for byte,
 * for sections gathered from scattered present rows of rows that straddle
 * the blocks, gathered from whole shards, and contiguous; random and
 * compressible bytes; LZ4 fast and HC; to a file and through a pipe; with
 * more blocks a section than the batches of two rounds hold.
 */
static void test_threads_same_bytes(void)
{
	uint64_t ws[2] = { 20000, 37 }, vs[2] = { 50000, 3 }, ss[1] = { 300001 };
	struct scar_state *st = NULL;
	struct scar_tensor *t;
	unsigned char *ref[2][2] = { { NULL } };
	size_t nref[2][2];

	CHECK_RC(scar_state_new(&st, "mlr", NULL));
	st->shards = 3;
	t = mk("w", SCAR_F32, SCAR_ROLE_PARAM, 2, ws, 0);
	CHECK_RC(scar_tensor_init_present(t, 0, NULL));
	for (uint64_t r = 0; r < ws[0]; r++)
		t->present[r] = rnd() % 5 != 0;
	CHECK_RC(scar_state_add(st, t, NULL));
	CHECK_RC(scar_state_add(st, mk("v", SCAR_F64, SCAR_ROLE_PARAM, 2, vs, 1), NULL));
	CHECK_RC(scar_state_add(st, mk("s", SCAR_U8, SCAR_ROLE_STATE, 1, ss, 1), NULL));
	for (int l = 0; l < 2; l++)
		for (size_t ti = 0; ti < 4; ti++) {
			static const unsigned tv[4] = { 1, 2, 3, 8 };
			unsigned threads = tv[ti];
			struct scar_ckpt_save_opts o;
			unsigned char *b[2];
			size_t n[2];
			int fd;

			scar_ckpt_save_opts_init(&o);
			o.sync = 0;
			o.level = l ? 9 : 0;
			o.block_size = 64 << 10;
			o.threads = threads;
			CHECK_RC(scar_ckpt_save(st, unit_tmp("thr.ckpt"), &o, UNIT_ERR));
			fd = open(unit_tmp("thr.ckpt"), O_RDONLY);
			CHECK(fd >= 0);
			b[0] = slurp_fd(fd, &n[0]);
			close(fd);
			b[1] = through_pipe(st, &o, &n[1]);
			for (int k = 0; k < 2; k++) {
				if (threads == 1) {
					ref[l][k] = b[k];
					nref[l][k] = n[k];
					continue;
				}
				CHECK(n[k] == nref[l][k] && memcmp(b[k], ref[l][k], n[k]) == 0);
				if (n[k] != nref[l][k] || memcmp(b[k], ref[l][k], n[k]))
					fprintf(stderr, "level %d, %u threads, %s: not the 1-thread file\n",
						o.level, threads, k ? "pipe" : "file");
				free(b[k]);
			}
			CHECK(nref[l][0] == nref[l][1] && memcmp(ref[l][0], ref[l][1], nref[l][0]) == 0);
		}
	CHECK_RC(scar_ckpt_verify(unit_tmp("thr.ckpt"), UNIT_ERR));
	for (int l = 0; l < 2; l++)
		for (int k = 0; k < 2; k++)
			free(ref[l][k]);
	scar_state_free(st);
}

int main(void)
{
	dir = unit_scratch("ckpt");
	test_crc();
	test_roundtrips();
	test_big();
	test_interleaved_rows();
	test_halves();
	test_shuffle_kernel();
	test_shuffle();
	test_random_access();
	test_pipe();
	test_no_sections();
	test_apply();
	test_list();
	test_atomic();
	test_fd_modes();
	test_threads_same_bytes();
	unit_scratch_remove();
	return unit_done("test-ckpt");
}
