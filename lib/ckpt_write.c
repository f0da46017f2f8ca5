/*
 * ckpt_write.c - writing checkpoint files, format v1 (scar-ckpt(5)).
 *
 * Everything goes out front to back so that a checkpoint can be written to
 * a pipe. A section header carries the stored length: on a regular file the
 * header is patched once the section is written, on a pipe each LZ4 section
 * is built in memory first. Rows are gathered into a chunk only when the
 * section is not one contiguous run of the tensor.
 *
 * LZ4 frames are assembled here from LZ4 blocks rather than with LZ4F: the
 * frame layout is fixed by format v1 anyway, and the checksums then use our
 * own xxHash-32, several times faster than some liblz4 builds' (see
 * ckpt_xxh32.c). The levels mean what they mean to LZ4F and lz4(1).
 * With --shuffle, a block is byte-shuffled (ckpt_shuffle.c, format 1.3)
 * as it is gathered, before anything else sees it.
 */
#ifdef __linux__
#define _GNU_SOURCE	/* sync_file_range(2) */
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lz4.h>
#include <lz4hc.h>

#include "scar/ckpt.h"
#include "scar/shard.h"
#include "ckpt_internal.h"
#include "nameidx.h"

#define OBUF_LEN ((size_t)64 << 10)

void scar_ckpt_save_opts_init(struct scar_ckpt_save_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->compress = 1;
	o->level = 0;
	o->sync = 1;
	o->block_size = (size_t)4 << 20;
	o->threads = 1;
	o->shuffle = SCAR_SHUFFLE_OFF;
}

int scar_ckpt_write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n) {
		/* Stay well under the 2 GiB a single write(2) may move on Linux. */
		ssize_t w = write(fd, p, n > ((size_t)1 << 30) ? (size_t)1 << 30 : n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		if (w == 0)
			return EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

uint64_t scar_ckpt_lz4_bound(uint64_t raw_len, unsigned bcode)
{
	uint64_t bs = ckpt_block_size(bcode), nblocks = raw_len / bs + (raw_len % bs != 0);

	if (raw_len > UINT64_MAX / 2)
		return UINT64_MAX;
	/* Slack for writers that flush a few short blocks. */
	return CKPT_LZ4_MIN_FRAME + raw_len + 8 * nblocks + 4096;
}

void scar_ckpt_shard_counts(const uint64_t (*ranges)[2], size_t nranges, uint32_t S,
			    uint64_t *counts)
{
	/* Whole cycles add to every shard; the rest is a run of shards mod S,
	 * accumulated as a difference array. */
	uint64_t base = 0;

	memset(counts, 0, S * sizeof(*counts));
	for (size_t i = 0; i < nranges; i++) {
		uint64_t a = ranges[i][0], c = ranges[i][1], rem = c % S;
		uint32_t s0 = (uint32_t)(a % S);

		base += c / S;
		if (!rem)
			continue;
		if (s0 + rem <= S) {
			counts[s0]++;
			if (s0 + rem < S)
				counts[s0 + rem]--;
		} else {
			counts[s0]++;
			counts[0]++;
			counts[s0 + rem - S]--;
		}
	}
	for (uint32_t s = 0, run = 0; s < S; s++) {
		run += (uint32_t)counts[s];
		counts[s] = base + run;
	}
}

struct wr {
	int fd;
	const char *name;
	uint64_t off;		/* bytes written so far */
	unsigned char *obuf;	/* small structures are staged here */
	size_t olen;
	struct scar_error *err;
	int seekable;		/* a regular file: section headers can be patched */
	uint64_t base;		/* its offset of byte 0 of the checkpoint */
	int writeback;		/* start writing back early (an fsync or a rename follows) */
	uint64_t wb_off;	/* bytes whose writeback has been started */
};

#define WB_STEP ((uint64_t)8 << 20)

/*
 * Ask the kernel to start writing back what was written since the last
 * call, every WB_STEP bytes, so that the disk works while the rest is
 * compressed and the final fsync (or ext4's flush at a rename over
 * another file) finds little left. Only a start: errors
 * are the fsync's to report (SYNC_FILE_RANGE_WRITE alone does not consume
 * them), and where the call does not exist nothing changes but the speed.
 */
static void wr_writeback(struct wr *w)
{
#ifdef SYNC_FILE_RANGE_WRITE
	if (w->writeback && w->off - w->wb_off >= WB_STEP) {
		(void)sync_file_range(w->fd, (off_t)(w->base + w->wb_off), (off_t)(w->off - w->wb_off),
				      SYNC_FILE_RANGE_WRITE);
		w->wb_off = w->off;
	}
#else
	(void)w;
#endif
}

static void sec_header(unsigned char *h, uint32_t tidx, uint32_t s, uint32_t flags,
		       uint64_t nrows, uint64_t raw_len, uint64_t stored_len)
{
	memcpy(h, CKPT_SEC_MAGIC, 4);
	ckpt_put32(h + 4, tidx);
	ckpt_put32(h + 8, s);
	ckpt_put32(h + 12, flags);
	ckpt_put64(h + 16, nrows);
	ckpt_put64(h + 24, raw_len);
	ckpt_put64(h + 32, stored_len);
	ckpt_put32(h + 40, 0);
	ckpt_put32(h + 44, scar_crc32c(0, h, 44));
}

static int wr_fail(struct wr *w, int e)
{
	int rc = scar_error_set_errno(w->err, e, w->name, "cannot write '%s'", w->name);

	if (w->err)
		w->err->offset = (int64_t)w->off;
	return rc;
}

static int wr_flush(struct wr *w)
{
	int e;

	if (!w->olen)
		return 0;
	e = scar_ckpt_write_all(w->fd, w->obuf, w->olen);
	if (e)
		return wr_fail(w, e);
	w->off += w->olen;
	w->olen = 0;
	wr_writeback(w);
	return 0;
}

/* Write n bytes: staged when small, directly when large. p may be NULL when
 * n is 0 (the index of a checkpoint without sections). */
static int wr_bytes(struct wr *w, const void *p, size_t n)
{
	int e;

	if (!n)
		return 0;
	if (n <= OBUF_LEN - w->olen) {
		memcpy(w->obuf + w->olen, p, n);
		w->olen += n;
		return 0;
	}
	if ((e = wr_flush(w)))
		return e;
	if (n < OBUF_LEN) {
		memcpy(w->obuf, p, n);
		w->olen = n;
		return 0;
	}
	e = scar_ckpt_write_all(w->fd, p, n);
	if (e)
		return wr_fail(w, e);
	w->off += n;
	wr_writeback(w);
	return 0;
}

/* Rewrite n bytes at off (a section header already written). */
static int pwrite_all(struct wr *w, const void *p, size_t n, uint64_t off)
{
	const char *q = p;

	while (n) {
		ssize_t k = pwrite(w->fd, q, n, (off_t)(w->base + off));

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return wr_fail(w, k < 0 ? errno : EIO);
		q += k;
		n -= (size_t)k;
		off += (uint64_t)k;
	}
	return 0;
}

static uint64_t wr_pos(const struct wr *w)
{
	return w->off + w->olen;
}

/* Sorted disjoint non-adjacent ranges of present rows; *n = 0 and *all = 1 when all are. */
static int present_ranges(const struct scar_tensor *t, uint64_t (**out)[2], size_t *n,
			  int *all)
{
	uint64_t rows = scar_tensor_rows(t), (*v)[2] = NULL;
	size_t cnt = 0, cap = 0;

	*out = NULL;
	*n = 0;
	*all = 1;
	if (!t->present)
		return 0;
	for (uint64_t r = 0; r < rows; r++)
		if (!t->present[r]) {
			*all = 0;
			break;
		}
	if (*all)
		return 0;
	for (uint64_t r = 0; r < rows;) {
		uint64_t a;

		while (r < rows && !t->present[r])
			r++;
		if (r == rows)
			break;
		a = r;
		while (r < rows && t->present[r])
			r++;
		if (cnt == cap) {
			size_t nc = cap ? 2 * cap : 16;
			uint64_t (*nv)[2] = realloc(v, nc * sizeof(*v));

			if (!nv) {
				free(v);
				return SCAR_ENOMEM;
			}
			v = nv;
			cap = nc;
		}
		v[cnt][0] = a;
		v[cnt][1] = r - a;
		cnt++;
	}
	*out = v;
	*n = cnt;
	return 0;
}

static unsigned digits(uint64_t v)
{
	unsigned n = 1;

	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

/* Bytes of "present" written as a list of [start,count] pairs. */
static uint64_t list_json_len(uint64_t (*rg)[2], size_t nr)
{
	uint64_t len = 2;	/* [] */

	for (size_t k = 0; k < nr; k++)
		len += (k ? 1 : 0) + 3 + digits(rg[k][0]) + digits(rg[k][1]);
	return len;
}

/*
 * "present" as {"bitmap":"..."}: base64 of ceil(rows/8) bytes, bit r % 8 of
 * byte r / 8 set for a present row (format 1.1). A rank file of a
 * distributed run holds every P-th row, which as a list costs digits + 5
 * bytes a row; the bitmap costs 1/6 byte a row whatever the pattern.
 */
static uint64_t bitmap_json_len(uint64_t rows)
{
	return 13 + 4 * (((rows + 7) / 8 + 2) / 3);
}

static json_t *bitmap_json(const struct scar_tensor *t, uint64_t rows)
{
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t nbytes = (size_t)((rows + 7) / 8), o = 0;
	unsigned char *bits = calloc(nbytes ? nbytes : 1, 1);
	char *txt = malloc(4 * ((nbytes + 2) / 3) + 1);
	json_t *j = NULL;

	if (bits && txt) {
		for (uint64_t r = 0; r < rows; r++)
			if (t->present[r])
				bits[r / 8] |= (unsigned char)(1u << (r % 8));
		for (size_t i = 0; i < nbytes; i += 3) {
			uint32_t v = (uint32_t)bits[i] << 16;

			if (i + 1 < nbytes)
				v |= (uint32_t)bits[i + 1] << 8;
			if (i + 2 < nbytes)
				v |= bits[i + 2];
			txt[o++] = b64[v >> 18 & 63];
			txt[o++] = b64[v >> 12 & 63];
			txt[o++] = i + 1 < nbytes ? b64[v >> 6 & 63] : '=';
			txt[o++] = i + 2 < nbytes ? b64[v & 63] : '=';
		}
		j = json_pack("{s:s%}", "bitmap", txt, o);
	}
	free(bits);
	free(txt);
	return j;
}

/* Length of the valid UTF-8 prefix of s, of n bytes (RFC 3629: no overlongs, surrogates). */
static size_t utf8_valid(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned c = s[i], k, lo = 0x80, hi = 0xBF;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xC2 && c <= 0xDF) {
			k = 1;
		} else if (c >= 0xE0 && c <= 0xEF) {
			k = 2;
			if (c == 0xE0)
				lo = 0xA0;
			else if (c == 0xED)
				hi = 0x9F;
		} else if (c >= 0xF0 && c <= 0xF4) {
			k = 3;
			if (c == 0xF0)
				lo = 0x90;
			else if (c == 0xF4)
				hi = 0x8F;
		} else {
			break;
		}
		if (n - i <= k || s[i + 1] < lo || s[i + 1] > hi)
			break;
		for (unsigned j = 2; j <= k; j++)
			if ((s[i + j] & 0xC0) != 0x80)
				return i;
		i += k + 1;
	}
	return i;
}

int scar_name_check(const char *name, const char *what, int may_be_empty,
		    struct scar_error *err)
{
	size_t n = name ? strlen(name) : 0;

	if (!n && !may_be_empty)
		return scar_error_set(err, SCAR_EINVAL, "%s is empty", what);
	if (n >= SCAR_NAME_MAX)
		return scar_error_set(err, SCAR_EINVAL,
				      "%s '%.40s...' is too long: %zu bytes, at most %d", what, name,
				      n, SCAR_NAME_MAX - 1);
	if (utf8_valid((const unsigned char *)name, n) != n)
		return scar_error_set(err, SCAR_EINVAL,
				      "%s '%s' is not UTF-8 (byte %zu), as checkpoint metadata needs",
				      what, name, utf8_valid((const unsigned char *)name, n));
	return 0;
}

static const char *tensor_name(const void *ctx, size_t i)
{
	return ((struct scar_tensor *const *)ctx)[i]->name;
}

/* Hashed, as st may be a hand-built view without scar_state_add's index. */
static int check_unique(const struct scar_state *st, struct scar_error *err)
{
	struct scar_nameidx x = { 0 };
	int rc = 0;

	for (size_t i = 0; i < st->ntensors && !rc; i++) {
		int d = scar_nameidx_add(&x, i, tensor_name, st->tensors, NULL);

		if (d < 0)
			rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
		else if (d)
			rc = scar_error_set(err, SCAR_EINVAL, "duplicate tensor name '%s'",
					    st->tensors[i]->name);
	}
	scar_nameidx_free(&x);
	return rc;
}

static int check_state(const struct scar_state *st, struct scar_error *err)
{
	int rc;

	if ((rc = scar_name_check(st->model, "model name", 1, err)))
		return rc;
	if (st->shards < 1 || st->shards > SCAR_MAX_SHARDS)
		return scar_error_set(err, SCAR_EINVAL, "shard count %u out of range 1..%u",
				      st->shards, SCAR_MAX_SHARDS);
	if (st->iteration > INT64_MAX)
		return scar_error_set(err, SCAR_ERANGE, "iteration too large");
	if ((st->config && !json_is_object(st->config)) || (st->extra && !json_is_object(st->extra)))
		return scar_error_set(err, SCAR_EINVAL, "config and extra must be JSON objects");
	for (size_t i = 0; i < st->ntensors; i++) {
		const struct scar_tensor *t = st->tensors[i];

		if (t && t->name && (rc = scar_name_check(t->name, "tensor name", 0, err)))
			return rc;
		if (!t || !t->name || !scar_dtype_size(t->dtype) || !scar_role_name(t->role) || t->ndim < 0 ||
		    t->ndim > SCAR_MAX_DIMS || !t->data)
			return scar_error_set(err, SCAR_EINVAL, "tensor %zu is malformed", i);
		for (int d = 0; d < t->ndim; d++)
			if (t->shape[d] > INT64_MAX)
				return scar_error_set(err, SCAR_ERANGE, "tensor '%s': dimension too large",
						      t->name);
	}
	return check_unique(st, err);
}

/* The metadata block; *minor is the format's minor version it needs. */
static int build_meta(const struct scar_state *st, const char *name, char **out, size_t *len,
		      unsigned *minor, struct scar_error *err)
{
	json_t *m = json_object(), *tv = json_array();
	int partial = 0, rc = 0;

	*minor = 0;
	*out = NULL;
	if (!m || !tv)
		goto oom;
	for (size_t i = 0; i < st->ntensors; i++) {
		const struct scar_tensor *t = st->tensors[i];
		json_t *o = json_object(), *shape = json_array(), *pres;
		uint64_t (*rg)[2];
		size_t nr;
		int all;

		if (!o || !shape || json_array_append_new(tv, o)) {
			json_decref(shape);
			goto oom;
		}
		for (int d = 0; d < t->ndim; d++)
			if (json_array_append_new(shape, json_integer((json_int_t)t->shape[d]))) {
				json_decref(shape);
				goto oom;
			}
		if (t->dtype == SCAR_F16 || t->dtype == SCAR_BF16)
			*minor = 2;
		if (present_ranges(t, &rg, &nr, &all))
			goto oom;
		if (all) {
			pres = json_string("all");
		} else if (bitmap_json_len(scar_tensor_rows(t)) < list_json_len(rg, nr)) {
			partial = 1;
			if (*minor < 1)
				*minor = 1;
			pres = bitmap_json(t, scar_tensor_rows(t));
		} else {
			partial = 1;
			pres = json_array();
			for (size_t k = 0; pres && k < nr; k++) {
				json_t *p = json_pack("[II]", (json_int_t)rg[k][0], (json_int_t)rg[k][1]);

				if (!p || json_array_append_new(pres, p)) {
					json_decref(pres);
					pres = NULL;
				}
			}
		}
		free(rg);
		if (json_object_set_new(o, "name", json_string(t->name)) ||
		    json_object_set_new(o, "dtype", json_string(scar_dtype_name(t->dtype))) ||
		    json_object_set_new(o, "role", json_string(scar_role_name(t->role))) ||
		    json_object_set_new(o, "shape", shape) ||
		    json_object_set_new(o, "rows", json_integer((json_int_t)scar_tensor_rows(t))) ||
		    !pres || json_object_set_new(o, "present", pres))
			goto oom;
	}
	if (json_object_set_new(m, "format", json_string("scar-ckpt")) ||
	    json_object_set_new(m, "version", json_integer(SCAR_CKPT_VERSION)) ||
	    json_object_set_new(m, "model", json_string(st->model)) ||
	    json_object_set_new(m, "iteration", json_integer((json_int_t)st->iteration)) ||
	    json_object_set_new(m, "shards", json_integer(st->shards)) ||
	    json_object_set_new(m, "shard_rule", json_string("row mod shards")) ||
	    json_object_set_new(m, "kind", json_string(partial ? "partial" : "full")) ||
	    json_object_set_new(m, "config", st->config ? json_deep_copy(st->config) : json_object()) ||
	    json_object_set_new(m, "extra", st->extra ? json_deep_copy(st->extra) : json_object()) ||
	    json_object_set(m, "tensors", tv))
		goto oom;
	*out = json_dumps(m, JSON_COMPACT | JSON_ENSURE_ASCII);
	if (!*out)
		goto oom;
	*len = strlen(*out);
	if (*len > SCAR_CKPT_META_MAX) {
		free(*out);
		*out = NULL;
		rc = scar_error_set_at(err, SCAR_ERANGE, name, -1, -1,
				       "cannot write '%s': its metadata would be %zu bytes, over the "
				       "%u-byte limit", name, *len, SCAR_CKPT_META_MAX);
	}
	goto out;
oom:
	rc = scar_error_set(err, SCAR_ENOMEM, "out of memory building checkpoint metadata");
out:
	json_decref(tv);
	json_decref(m);
	return rc;
}

/* Gathers the present rows of one shard of a tensor, in row order, into chunks. */
struct gather {
	const unsigned char *data;
	const uint8_t *present;
	uint64_t rows, r;
	uint32_t S;
	size_t rb, inrow;
};

static void gather_skip(struct gather *g)
{
	if (g->present)
		while (g->r < g->rows && !g->present[g->r])
			g->r += g->S;
}

static size_t gather_fill(struct gather *g, unsigned char *dst, size_t cap)
{
	size_t n = 0;

	while (n < cap && g->r < g->rows) {
		const unsigned char *src = g->data + g->r * g->rb;

		if (g->inrow == 0 && cap - n >= g->rb) {
			if (g->rb == 4) {
				memcpy(dst + n, src, 4);
			} else if (g->rb == 8) {
				memcpy(dst + n, src, 8);
			} else {
				memcpy(dst + n, src, g->rb);
			}
			n += g->rb;
			g->r += g->S;
		} else {
			size_t k = g->rb - g->inrow;

			if (k > cap - n)
				k = cap - n;
			memcpy(dst + n, src + g->inrow, k);
			n += k;
			g->inrow += k;
			if (g->inrow < g->rb)
				continue;
			g->inrow = 0;
			g->r += g->S;
		}
		gather_skip(g);
	}
	return n;
}

/*
 * One LZ4 block to compress: src (n bytes) into dst as the frame stores it,
 * the u32 size (bit 31: stored as is), the data and its xxHash-32; len is
 * the record's length.
 */
struct block_job {
	const unsigned char *src;
	size_t n;
	unsigned char *dst;
	size_t len;
	unsigned char *buf;	/* when set (= src), the rows of g are gathered into it first */
	struct gather g;
	unsigned char *shuf;	/* when set, src is byte-shuffled into it by esz first */
	size_t esz;
};

/* Compress job with state (LZ4 fast, or LZ4HC for levels 3 to 12). */
static void block_compress(struct block_job *j, void *state, int level)
{
	unsigned char *blk = j->dst + 4;
	/* Room for one byte less than the input: what does not shrink is stored. */
	int c = level >= 3 ? LZ4_compress_HC_extStateHC(state, (const char *)j->src, (char *)blk,
							(int)j->n, (int)j->n - 1, level)
			   : LZ4_compress_fast_extState(state, (const char *)j->src, (char *)blk,
							(int)j->n, (int)j->n - 1, 1);

	if (c <= 0) {
		memcpy(blk, j->src, j->n);
		ckpt_put32(j->dst, (uint32_t)j->n | 0x80000000u);
		c = (int)j->n;
	} else {
		ckpt_put32(j->dst, (uint32_t)c);
	}
	ckpt_put32(blk + c, scar_ckpt_xxh32(blk, (size_t)c, 0));
	j->len = 8 + (size_t)c;
}

static void *lz4_state_new(int level)
{
	return malloc((size_t)(level >= 3 ? LZ4_sizeofStateHC() : LZ4_sizeofState()));
}

/*
 * Threads that compress a section's blocks with the writer (opts.threads):
 * blocks are independent in the frame, so each is compressed alone, and
 * the writer puts them out in order: the file is the single-threaded one,
 * byte for byte. The work goes in rounds of tasks: gather and compress
 * each block of batch k, and hash batch k-1's raw bytes into the content
 * checksum (one task: that hash runs through the section in order), while
 * the writer thread puts batch k-1 out; then it takes tasks too. Batches
 * k and k-1 use the two halves of the buffers (struct sect_ctx).
 */
struct hash_task {
	struct ckpt_xxh32 *content;
	const struct block_job *blocks;
	size_t n;			/* blocks to hash; 0 for none */
};

struct block_pool {
	pthread_t *th;
	void **state;			/* one LZ4 state per worker */
	unsigned n;			/* workers */
	int level, stop, started;
	pthread_mutex_t mu;
	pthread_cond_t go, done;
	unsigned long gen;		/* rounds started */
	struct hash_task hash;		/* task 0 of the round when hash.n */
	struct block_job *jobs;		/* then one task a block */
	size_t ntasks, next, finished;
};

static void hash_blocks(const struct hash_task *h)
{
	for (size_t k = 0; k < h->n; k++)
		scar_ckpt_xxh32_update(h->content, h->blocks[k].src, h->blocks[k].n);
}

/* Gather a block's rows (when they are not one run of the tensor), then compress it. */
static void block_run(struct block_job *j, void *state, int level)
{
	if (j->buf) {
		struct gather g = j->g;

		gather_fill(&g, j->buf, j->n);
	}
	/* Shuffled, the frame (and its content checksum) holds the shuffled bytes. */
	if (j->shuf) {
		scar_ckpt_shuffle(j->shuf, j->src, j->n, j->esz);
		j->src = j->shuf;
	}
	block_compress(j, state, level);
}

/* Take and run tasks of the current round until none is left. */
static void pool_work(struct block_pool *p, void *state)
{
	for (;;) {
		struct hash_task h;
		struct block_job *j = NULL;
		size_t k;

		pthread_mutex_lock(&p->mu);
		if (p->next == p->ntasks) {
			pthread_mutex_unlock(&p->mu);
			return;
		}
		k = p->next++;
		h = p->hash;
		if (!h.n || k)
			j = &p->jobs[h.n ? k - 1 : k];
		pthread_mutex_unlock(&p->mu);
		if (j)
			block_run(j, state, p->level);
		else
			hash_blocks(&h);
		pthread_mutex_lock(&p->mu);
		if (++p->finished == p->ntasks)
			pthread_cond_signal(&p->done);
		pthread_mutex_unlock(&p->mu);
	}
}

struct pool_arg {
	struct block_pool *p;
	unsigned i;
};

static void *pool_main(void *arg)
{
	struct pool_arg *a = arg;
	struct block_pool *p = a->p;
	void *state = p->state[a->i];
	unsigned long seen = 0;
	sigset_t all;

	free(a);
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	for (;;) {
		pthread_mutex_lock(&p->mu);
		while (!p->stop && p->gen == seen)
			pthread_cond_wait(&p->go, &p->mu);
		if (p->stop) {
			pthread_mutex_unlock(&p->mu);
			return NULL;
		}
		seen = p->gen;
		pthread_mutex_unlock(&p->mu);
		pool_work(p, state);
	}
}

static void pool_free(struct block_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	for (unsigned i = 0; i < (unsigned)p->started; i++)
		pthread_join(p->th[i], NULL);
	for (unsigned i = 0; p->state && i < p->n; i++)
		free(p->state[i]);
	pthread_cond_destroy(&p->go);
	pthread_cond_destroy(&p->done);
	pthread_mutex_destroy(&p->mu);
	free(p->state);
	free(p->th);
	free(p);
}

/* A pool of n workers; NULL when they cannot be had (the writer then works alone). */
static struct block_pool *pool_new(unsigned n, int level)
{
	struct block_pool *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->go, NULL);
	pthread_cond_init(&p->done, NULL);
	p->n = n;
	p->level = level;
	p->th = calloc(n, sizeof(*p->th));
	p->state = calloc(n, sizeof(*p->state));
	if (!p->th || !p->state)
		goto fail;
	for (unsigned i = 0; i < n; i++)
		if (!(p->state[i] = lz4_state_new(level)))
			goto fail;
	for (unsigned i = 0; i < n; i++) {
		struct pool_arg *a = malloc(sizeof(*a));

		if (!a)
			goto fail;
		a->p = p;
		a->i = i;
		if (pthread_create(&p->th[i], NULL, pool_main, a)) {
			free(a);
			goto fail;
		}
		p->started++;
	}
	return p;
fail:
	pool_free(p);
	return NULL;
}

/* Start a round: hash h (when h.n), then compress jobs[0..n). The workers begin at once. */
static void pool_start(struct block_pool *p, struct hash_task h, struct block_job *jobs, size_t n)
{
	pthread_mutex_lock(&p->mu);
	p->hash = h;
	p->jobs = jobs;
	p->ntasks = n + (h.n != 0);
	p->next = p->finished = 0;
	p->gen++;
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
}

/* Work on the round with the workers until it is done. */
static void pool_finish(struct block_pool *p, void *state)
{
	pool_work(p, state);
	pthread_mutex_lock(&p->mu);
	while (p->finished < p->ntasks)
		pthread_cond_wait(&p->done, &p->mu);
	p->ntasks = p->next = p->finished = 0;
	pthread_mutex_unlock(&p->mu);
}

#define BATCH_MAX 8	/* blocks a batch, one a thread; two batches in flight: 2 x 8 x 2 blocks at most */

struct sect_ctx {
	void *fast, *hc;	/* LZ4 and LZ4HC compression states */
	unsigned char *out;	/* compressed section */
	size_t out_cap;
	unsigned char *chunk;	/* gathered rows */
	size_t chunk_cap;
	struct block_pool *pool;	/* NULL: one thread */
	int pool_failed;
	size_t batch;			/* blocks per batch with the pool: the threads */
	/* per block of a batch, for the two batches in flight */
	unsigned char *bsrc[2][BATCH_MAX], *bdst[2][BATCH_MAX];
	size_t bcap;			/* their size */
	unsigned char *bshuf[2][BATCH_MAX];	/* shuffled blocks, made at the first shuffled section */
	size_t bshuf_cap;
	size_t esz;			/* shuffle this section's blocks by esz bytes; 0: not */
	unsigned char *shuf;		/* a shuffled block, when the batch is 1 */
	size_t shuf_cap;
};

static int grow(unsigned char **p, size_t *cap, size_t need)
{
	unsigned char *n;

	if (need <= *cap)
		return 0;
	n = malloc(need);
	if (!n)
		return SCAR_ENOMEM;
	free(*p);
	*p = n;
	*cap = need;
	return 0;
}

/*
 * The 15-byte LZ4 frame header format v1 fixes (scar-ckpt(5)): independent
 * blocks with checksums, content size and checksum, no dictionary.
 */
static void lz4_frame_header(unsigned char *h, unsigned bcode, uint64_t raw_len)
{
	ckpt_put32(h, CKPT_LZ4_MAGIC);
	h[4] = CKPT_LZ4_FLG;
	h[5] = (unsigned char)((4 + bcode) << 4);
	ckpt_put64(h + 6, raw_len);
	h[14] = (unsigned char)(scar_ckpt_xxh32(h + 4, 10, 0) >> 8);
}

static unsigned bcode_of(size_t block_size)
{
	unsigned b = 0;

	while (b < 3 && ckpt_block_size(b) < block_size)
		b++;
	return b;
}

/* The two batches' buffers for blocks of bs bytes. */
static int batch_buffers(struct sect_ctx *sc, size_t bs)
{
	for (int b = 0; b < 2; b++)
		for (size_t k = 0; k < sc->batch; k++) {
			free(sc->bsrc[b][k]);
			free(sc->bdst[b][k]);
			sc->bsrc[b][k] = malloc(bs);
			sc->bdst[b][k] = malloc(bs + 16);
			if (!sc->bsrc[b][k] || !sc->bdst[b][k]) {
				sc->bcap = 0;
				return SCAR_ENOMEM;
			}
		}
	sc->bcap = bs + 16;
	return 0;
}

/* Move g on by n bytes without copying them: where a worker is to gather a block from. */
static void gather_advance(struct gather *g, size_t n)
{
	if (!g->present) {
		g->r += (g->inrow + n) / g->rb * g->S;
		g->inrow = (g->inrow + n) % g->rb;
		return;
	}
	while (n && g->r < g->rows) {
		size_t k = g->rb - g->inrow;

		if (k > n) {
			g->inrow += n;
			return;
		}
		n -= k;
		g->inrow = 0;
		g->r += g->S;
		gather_skip(g);
	}
}

/* Put out compressed blocks: to the file after the *pos staged bytes of sc->out, or into sc->out. */
static int put_blocks(struct wr *w, struct sect_ctx *sc, const struct block_job *jobs, size_t n,
		      int stream, size_t *pos, uint64_t *stored_len)
{
	int rc;

	if (stream && *pos) {
		if ((rc = wr_bytes(w, sc->out, *pos)))
			return rc;
		*stored_len += *pos;
		*pos = 0;
	}
	for (size_t k = 0; k < n; k++) {
		if (stream) {
			if ((rc = wr_bytes(w, jobs[k].dst, jobs[k].len)))
				return rc;
			*stored_len += jobs[k].len;
		} else {
			memcpy(sc->out + *pos, jobs[k].dst, jobs[k].len);
			*pos += jobs[k].len;
		}
	}
	return 0;
}

/*
 * An LZ4 section's blocks on the pool, in rounds (see struct block_pool):
 * batch k gathered and compressed into one half of the buffers while batch
 * k-1 is hashed and put out from the other. state is this thread's.
 */
/* The shuffled blocks of the two batches in flight, as batch_buffers. */
static int shuffle_buffers(struct sect_ctx *sc, size_t bs)
{
	for (int b = 0; b < 2; b++)
		for (size_t k = 0; k < sc->batch; k++) {
			free(sc->bshuf[b][k]);
			if (!(sc->bshuf[b][k] = malloc(bs))) {
				sc->bshuf_cap = 0;
				return SCAR_ENOMEM;
			}
		}
	sc->bshuf_cap = bs;
	return 0;
}

static int lz4_rounds(struct wr *w, struct sect_ctx *sc, const unsigned char *data,
		      struct gather *g, int contiguous, uint64_t raw_len, size_t bs, int stream,
		      size_t *pos, uint64_t *stored_len, struct ckpt_xxh32 *content, void *state)
{
	struct block_job jobs[2][BATCH_MAX];
	struct hash_task h = { content, NULL, 0 };
	uint64_t done = 0;
	int cur = 0, rc = 0;

	do {
		size_t n = 0;

		for (; n < sc->batch && done < raw_len; n++) {
			struct block_job *j = &jobs[cur][n];

			j->n = raw_len - done < bs ? (size_t)(raw_len - done) : bs;
			j->dst = sc->bdst[cur][n];
			j->shuf = sc->esz ? sc->bshuf[cur][n] : NULL;
			j->esz = sc->esz;
			if (contiguous) {
				j->src = data + done;
				j->buf = NULL;
			} else {
				j->src = j->buf = sc->bsrc[cur][n];
				j->g = *g;
				gather_advance(g, j->n);
			}
			done += j->n;
		}
		pool_start(sc->pool, h, jobs[cur], n);
		if (h.n)
			rc = put_blocks(w, sc, h.blocks, h.n, stream, pos, stored_len);
		/* Even after a failed write: the workers must be done with the buffers. */
		pool_finish(sc->pool, state);
		if (rc)
			return rc;
		h.blocks = jobs[cur];
		h.n = n;
		cur = !cur;
	} while (h.n);
	return 0;
}

static int write_section(struct wr *w, struct sect_ctx *sc, const struct scar_tensor *t,
			 uint32_t tidx, uint32_t s, uint32_t S, uint64_t nrows,
			 const struct scar_ckpt_save_opts *o, unsigned char *idx_entry)
{
	size_t rb = scar_tensor_row_bytes(t);
	uint64_t raw_len = nrows * rb, stored_len, hdr_off;
	int contiguous = S == 1 && nrows == scar_tensor_rows(t);
	unsigned bcode = bcode_of(o->block_size);
	uint32_t flags = 0, crc = 0;
	unsigned char h[CKPT_SEC_HDR_LEN];
	struct gather g = { t->data, t->present, scar_tensor_rows(t), s, S, rb, 0 };
	const unsigned char *payload = NULL;
	int rc;

	gather_skip(&g);
	if (!contiguous && grow(&sc->chunk, &sc->chunk_cap,
				o->compress ? ckpt_block_size(bcode) : CKPT_IO_CHUNK))
		goto oom;
	/* An LZ4 frame cannot record a content size of 0, so empty payloads go raw. */
	if (o->compress && raw_len) {
		size_t bs = ckpt_block_size(bcode), pos;
		/* On a regular file, write block by block and patch the header after;
		 * a pipe needs the whole frame first, for its length. */
		int stream = w->seekable;
		uint64_t nblocks = raw_len / bs + (raw_len % bs != 0);
		struct ckpt_xxh32 content;
		void *state;

		flags = CKPT_SF_LZ4 | bcode << CKPT_SF_BCODE_SHIFT | (sc->esz ? CKPT_SF_SHUFFLE : 0);
		if (grow(&sc->out, &sc->out_cap, stream ? bs + 32 : (size_t)(raw_len + 8 * nblocks + 32)))
			goto oom;
		if (o->level >= 3 ? !sc->hc && !(sc->hc = malloc((size_t)LZ4_sizeofStateHC()))
				  : !sc->fast && !(sc->fast = malloc((size_t)LZ4_sizeofState())))
			goto oom;
		state = o->level >= 3 ? sc->hc : sc->fast;
		hdr_off = wr_pos(w);
		stored_len = 0;
		if (stream) {
			sec_header(h, tidx, s, flags, nrows, raw_len, 0);
			if ((rc = wr_bytes(w, h, sizeof(h))))
				return rc;
		}
		/* Threads for a section of several blocks, started at the first such. */
		if (o->threads > 1 && nblocks > 1 && !sc->pool && !sc->pool_failed) {
			unsigned nt = o->threads > BATCH_MAX ? BATCH_MAX : o->threads;

			if ((sc->pool = pool_new(nt - 1, o->level)))
				sc->batch = nt;
			else
				sc->pool_failed = 1;	/* fewer threads is slower, not wrong */
		}
		scar_ckpt_xxh32_init(&content, 0);
		lz4_frame_header(sc->out, bcode, raw_len);
		pos = 15;
		if (sc->pool && nblocks > 1) {
			if (sc->bcap < bs + 16 && batch_buffers(sc, bs))
				goto oom;
			if (sc->esz && sc->bshuf_cap < bs && shuffle_buffers(sc, bs))
				goto oom;
			if ((rc = lz4_rounds(w, sc, t->data, &g, contiguous, raw_len, bs, stream, &pos,
					     &stored_len, &content, state)))
				return rc;
		} else {
			if (sc->esz && grow(&sc->shuf, &sc->shuf_cap, raw_len < bs ? (size_t)raw_len : bs))
				goto oom;
			for (uint64_t done = 0; done < raw_len;) {
				struct block_job j = { 0 };

				if (stream && pos) {
					if ((rc = wr_bytes(w, sc->out, pos)))
						return rc;
					stored_len += pos;
					pos = 0;
				}
				j.n = raw_len - done < bs ? (size_t)(raw_len - done) : bs;
				if (contiguous) {
					j.src = (const unsigned char *)t->data + done;
				} else {
					gather_fill(&g, sc->chunk, j.n);
					j.src = sc->chunk;
				}
				if (sc->esz) {
					j.shuf = sc->shuf;
					j.esz = sc->esz;
				}
				/* Alone, a block goes straight into the section buffer. */
				j.dst = sc->out + pos;
				block_run(&j, state, o->level);
				scar_ckpt_xxh32_update(&content, j.src, j.n);
				pos += j.len;
				done += j.n;
			}
		}
		ckpt_put32(sc->out + pos, 0);
		ckpt_put32(sc->out + pos + 4, scar_ckpt_xxh32_digest(&content));
		pos += 8;
		if (stream) {
			if ((rc = wr_bytes(w, sc->out, pos)))
				return rc;
			stored_len += pos;
			sec_header(h, tidx, s, flags, nrows, raw_len, stored_len);
			if (hdr_off >= w->off) {
				memcpy(w->obuf + (hdr_off - w->off), h, sizeof(h));
			} else if ((rc = pwrite_all(w, h, sizeof(h), hdr_off))) {
				return rc;
			}
		} else {
			stored_len = pos;
			payload = sc->out;
		}
	} else {
		stored_len = raw_len + 4;
	}

	if (!(flags & CKPT_SF_LZ4) || !w->seekable) {
		hdr_off = wr_pos(w);
		sec_header(h, tidx, s, flags, nrows, raw_len, stored_len);
		if ((rc = wr_bytes(w, h, sizeof(h))))
			return rc;
	}

	if (flags & CKPT_SF_LZ4) {
		if (payload && (rc = wr_bytes(w, payload, stored_len)))
			return rc;
	} else if (contiguous) {
		crc = scar_crc32c(0, t->data, raw_len);
		if ((rc = wr_bytes(w, t->data, raw_len)))
			return rc;
	} else {
		for (uint64_t done = 0; done < raw_len;) {
			size_t n = gather_fill(&g, sc->chunk, sc->chunk_cap);

			crc = scar_crc32c(crc, sc->chunk, n);
			if ((rc = wr_bytes(w, sc->chunk, n)))
				return rc;
			done += n;
		}
	}
	if (!(flags & CKPT_SF_LZ4)) {
		unsigned char c[4];

		ckpt_put32(c, crc);
		if ((rc = wr_bytes(w, c, 4)))
			return rc;
	}
	ckpt_put32(idx_entry, tidx);
	ckpt_put32(idx_entry + 4, s);
	ckpt_put64(idx_entry + 8, hdr_off);
	ckpt_put64(idx_entry + 16, nrows);
	ckpt_put64(idx_entry + 24, raw_len);
	ckpt_put64(idx_entry + 32, stored_len);
	return 0;
oom:
	return scar_error_set(w->err, SCAR_ENOMEM, "out of memory writing tensor '%s'", t->name);
}

/* Present rows of each of tensor t's S shards into counts[0..S). */
static void section_rows(const struct scar_tensor *t, uint32_t S, uint64_t *counts)
{
	uint64_t rows = scar_tensor_rows(t);

	for (uint32_t s = 0; s < S; s++)
		counts[s] = scar_shard_rows(rows, s, S);
	if (t->present) {
		memset(counts, 0, S * sizeof(*counts));
		for (uint64_t r = 0; r < rows; r++)
			counts[r % S] += t->present[r] != 0;
	}
}

/*
 * The element size to shuffle section (t, s) of nrows rows by, 0 for none:
 * only LZ4 sections of 2-, 4- and 8-byte elements can be (scar-ckpt(5)).
 * auto tries LZ4 both ways on the section's first bytes; buf has room for
 * them and scar_ckpt_shuffle_pays's scratch.
 */
static size_t shuffle_esz(const struct scar_tensor *t, uint32_t s, uint32_t S, uint64_t nrows,
			  const struct scar_ckpt_save_opts *o, unsigned char *buf)
{
	size_t esz = scar_dtype_size(t->dtype), rb = scar_tensor_row_bytes(t), n;
	uint64_t rows = scar_tensor_rows(t);
	struct gather g = { t->data, t->present, rows, s, S, rb, 0 };
	const unsigned char *p = buf;

	if (o->shuffle == SCAR_SHUFFLE_OFF || !o->compress || esz < 2 || !rb)
		return 0;
	if (o->shuffle == SCAR_SHUFFLE_ON)
		return esz;
	n = nrows * rb < CKPT_SHUFFLE_SAMPLE ? (size_t)(nrows * rb) : CKPT_SHUFFLE_SAMPLE;
	if (S == 1 && nrows == rows) {
		p = t->data;
	} else {
		gather_skip(&g);
		gather_fill(&g, buf, n);
	}
	return scar_ckpt_shuffle_pays(p, n, esz, buf + CKPT_SHUFFLE_SAMPLE) ? esz : 0;
}

/*
 * Which sections to shuffle, in file order, decided before the header goes
 * out: it says 1.3 only when one is. NULL (none) when shuffle is off.
 */
static int plan_shuffle(const struct scar_state *st, const struct scar_ckpt_save_opts *o,
			uint64_t *counts, unsigned char **plan, unsigned *minor,
			struct scar_error *err)
{
	unsigned char *buf = NULL, *v = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;

	*plan = NULL;
	if (o->shuffle == SCAR_SHUFFLE_OFF || !o->compress)
		return 0;
	if (o->shuffle == SCAR_SHUFFLE_AUTO && !(buf = malloc(3 * CKPT_SHUFFLE_SAMPLE)))
		goto oom;
	for (size_t i = 0; i < st->ntensors; i++) {
		const struct scar_tensor *t = st->tensors[i];
		uint32_t S = scar_tensor_shards(t, st->shards);

		if (!scar_tensor_rows(t))
			continue;
		section_rows(t, S, counts);
		for (uint32_t s = 0; s < S; s++) {
			if (!counts[s])
				continue;
			if (n == cap) {
				unsigned char *nv = realloc(v, cap = cap ? 2 * cap : 64);

				if (!nv)
					goto oom;
				v = nv;
			}
			v[n] = (unsigned char)shuffle_esz(t, s, S, counts[s], o, buf);
			if (v[n++])
				*minor = 3;
		}
	}
	*plan = v;
	v = NULL;
	goto out;
oom:
	rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
out:
	free(v);
	free(buf);
	return rc;
}

/* scar_ckpt_write_fd; writeback: start writing a regular file back as it is written. */
static int write_fd(const struct scar_state *st, int fd, const char *name,
		    const struct scar_ckpt_save_opts *opts, int writeback, struct scar_error *err)
{
	struct scar_ckpt_save_opts o;
	struct wr w = { fd, name ? name : "(fd)", 0, NULL, 0, err, 0, 0, 0, 0 };
	struct sect_ctx sc = { .batch = 1 };
	unsigned char h[CKPT_TRAILER_LEN], *idx = NULL, *plan = NULL;
	size_t nsec = 0, idx_cap = 0;
	uint64_t *counts = NULL, idx_off;
	char *meta = NULL;
	size_t meta_len = 0;
	unsigned minor;
	uint32_t crc;
	int rc;

	if (opts)
		o = *opts;
	else
		scar_ckpt_save_opts_init(&o);
	if (o.level < 0 || o.level > 12)
		return scar_error_set(err, SCAR_EINVAL, "LZ4 level %d out of range 0..12", o.level);
	if (!scar_shuffle_name(o.shuffle))
		return scar_error_set(err, SCAR_EINVAL, "unknown shuffle mode %d", o.shuffle);
	if (!o.block_size)
		o.block_size = (size_t)4 << 20;
	if ((rc = check_state(st, err)) || (rc = build_meta(st, w.name, &meta, &meta_len, &minor, err)))
		return rc;
	{
		struct stat sb;
		off_t pos;

		/* pwrite(2) on an O_APPEND descriptor appends: treat it as a pipe. */
		int fl = fcntl(fd, F_GETFL);

		if (fl >= 0 && !(fl & O_APPEND) && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) &&
		    (pos = lseek(fd, 0, SEEK_CUR)) >= 0) {
			w.seekable = 1;
			w.base = (uint64_t)pos;
			w.writeback = writeback;
		}
	}
	w.obuf = malloc(OBUF_LEN);
	counts = malloc((size_t)st->shards * sizeof(*counts));
	if (!w.obuf || !counts) {
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = plan_shuffle(st, &o, counts, &plan, &minor, err)))
		goto out;

	memcpy(h, SCAR_CKPT_MAGIC, 8);
	ckpt_put16(h + 8, CKPT_MAJOR);
	ckpt_put16(h + 10, (uint16_t)minor);
	ckpt_put32(h + 12, scar_crc32c(0, h, 12));
	if ((rc = wr_bytes(&w, h, CKPT_HEADER_LEN)))
		goto out;
	ckpt_put32(h, (uint32_t)meta_len);
	ckpt_put32(h + 4, scar_crc32c(0, meta, meta_len));
	if ((rc = wr_bytes(&w, h, CKPT_META_HDR_LEN)) || (rc = wr_bytes(&w, meta, meta_len)))
		goto out;

	for (size_t i = 0; i < st->ntensors; i++) {
		const struct scar_tensor *t = st->tensors[i];
		uint32_t S = scar_tensor_shards(t, st->shards);

		if (!scar_tensor_rows(t))
			continue;
		section_rows(t, S, counts);
		for (uint32_t s = 0; s < S; s++) {
			if (!counts[s])
				continue;
			if (nsec == idx_cap) {
				size_t nc = idx_cap ? 2 * idx_cap : 64;
				unsigned char *ni = realloc(idx, nc * CKPT_IDX_ENTRY_LEN);

				if (!ni) {
					rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
					goto out;
				}
				idx = ni;
				idx_cap = nc;
			}
			sc.esz = plan ? plan[nsec] : 0;
			rc = write_section(&w, &sc, t, (uint32_t)i, s, S, counts[s], &o,
					   idx + nsec * CKPT_IDX_ENTRY_LEN);
			if (rc)
				goto out;
			nsec++;
		}
	}

	idx_off = wr_pos(&w);
	if (nsec > UINT32_MAX) {
		rc = scar_error_set(err, SCAR_ERANGE, "too many sections");
		goto out;
	}
	memcpy(h, CKPT_IDX_MAGIC, 4);
	ckpt_put32(h + 4, (uint32_t)nsec);
	crc = scar_crc32c(0, h, 8);
	crc = scar_crc32c(crc, idx, nsec * CKPT_IDX_ENTRY_LEN);
	if ((rc = wr_bytes(&w, h, 8)) || (rc = wr_bytes(&w, idx, nsec * CKPT_IDX_ENTRY_LEN)))
		goto out;
	ckpt_put32(h, crc);
	if ((rc = wr_bytes(&w, h, 4)))
		goto out;
	ckpt_put64(h, idx_off);
	ckpt_put64(h + 8, wr_pos(&w) + CKPT_TRAILER_LEN);
	ckpt_put32(h + 16, 0);
	ckpt_put32(h + 20, scar_crc32c(0, h, 20));
	memcpy(h + 24, CKPT_END_MAGIC, 8);
	if ((rc = wr_bytes(&w, h, CKPT_TRAILER_LEN)) || (rc = wr_flush(&w)))
		goto out;
out:
	pool_free(sc.pool);
	for (int b = 0; b < 2; b++)
		for (size_t k = 0; k < BATCH_MAX; k++) {
			free(sc.bsrc[b][k]);
			free(sc.bdst[b][k]);
			free(sc.bshuf[b][k]);
		}
	free(sc.fast);
	free(sc.hc);
	free(sc.out);
	free(sc.chunk);
	free(sc.shuf);
	free(plan);
	free(idx);
	free(counts);
	free(w.obuf);
	free(meta);
	return rc;
}

int scar_ckpt_write_fd(const struct scar_state *st, int fd, const char *name,
		       const struct scar_ckpt_save_opts *opts, struct scar_error *err)
{
	return write_fd(st, fd, name, opts, !opts || opts->sync, err);
}

struct save_job {
	const struct scar_state *st;
	const struct scar_ckpt_save_opts *o;
	int writeback;
};

static int save_job_run(int fd, const char *name, void *ctx, struct scar_error *err)
{
	struct save_job *j = ctx;

	return write_fd(j->st, fd, name, j->o, j->writeback, err);
}

int scar_ckpt_save(const struct scar_state *st, const char *path,
		   const struct scar_ckpt_save_opts *opts, struct scar_error *err)
{
	struct scar_ckpt_save_opts o;
	struct save_job j = { st, &o, 0 };
	const char *base;
	struct stat sb;

	if (opts)
		o = *opts;
	else
		scar_ckpt_save_opts_init(&o);
	if (!path || !*path)
		return scar_error_set(err, SCAR_EINVAL, "empty checkpoint path");
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (strcmp(path, "-") != 0 && !*base && !scar_file_is_special(path))
		return scar_error_set_at(err, SCAR_EINVAL, path, -1, -1,
					 "checkpoint path '%s' names a directory", path);
	/*
	 * Writeback starts early when an fsync follows, and when the file
	 * replaces another: ext4 (auto_da_alloc) and btrfs write a file back
	 * when it is renamed over another, and the rename would wait for all
	 * of it.
	 */
	j.writeback = o.sync || (stat(path, &sb) == 0 && S_ISREG(sb.st_mode));
	/* Temporary, fsync, rename, fsync of the directory; a FIFO or device written through. */
	return scar_file_replace(path, o.sync ? SCAR_REPLACE_SYNC : 0, save_job_run, &j, err);
}
