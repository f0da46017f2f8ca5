/*
 * ckpt_read.c - reading checkpoint files, format v1 (scar-ckpt(5)).
 *
 * The reader streams: header, metadata, then one section at a time, so a
 * checkpoint can come down a pipe, and verify never holds more than one
 * LZ4 block. Every declared length is checked before anything is sized from
 * it: against the metadata (a section's rows and bytes follow from the
 * tensor table), against the LZ4 frame bound, and on a regular file
 * against the bytes that remain.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lz4.h>
#include <lz4frame.h>

#include "scar/ckpt.h"
#include "scar/shard.h"
#include "ckpt_internal.h"
#include "nameidx.h"

#define IBUF_LEN ((size_t)64 << 10)

struct cursor {
	int random;		/* pread at pos; else the sequential stream */
	uint64_t pos;
};

struct scar_ckpt_reader {
	int fd, own_fd;
	char *name;
	int seekable;
	uint64_t base;		/* file offset of byte 0 of the checkpoint */
	uint64_t fsize;		/* bytes from base to end of file (seekable only) */
	int complete;		/* the trailer at the end is intact: overruns are corruption */
	uint64_t off;		/* bytes consumed by the stream */
	unsigned char *ibuf;
	size_t ipos, ilen;
	int eof;

	json_t *meta;
	struct scar_ckpt_info info;
	struct scar_ckpt_tensor_info *tinfo;
	struct scar_nameidx names;	/* of tinfo, for the duplicate check */
	uint64_t (*ranges)[2];
	size_t *row_bytes;
	uint64_t meta_end;	/* offset of the first section */

	/* streaming position: the next (tensor, shard) to look at */
	size_t cur_t;
	uint32_t cur_s;
	uint64_t *counts;	/* present rows per shard of tensor counts_for */
	size_t counts_for;
	int done, failed;
	struct scar_ckpt_section_info *seen;
	size_t nseen, seen_cap;

	/* What decoding a section writes to: a worker reader has its own
	 * (ckpt_reader_worker), so a buffer added here must be added there. */
	unsigned char *raw, *chunk, *scratch, *unshuf;
	size_t raw_cap, chunk_cap, scratch_cap, unshuf_cap;
	uint64_t *rows;
	size_t rows_cap;
	LZ4F_dctx *dctx;

	struct scar_ckpt_section_info *index;
	size_t nindex;
	int have_index;
};

int64_t scar_ckpt_read_full(int fd, void *buf, size_t n)
{
	char *p = buf;
	size_t got = 0;

	while (got < n) {
		size_t want = n - got > ((size_t)1 << 30) ? (size_t)1 << 30 : n - got;
		ssize_t k = read(fd, p + got, want);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			break;
		got += (size_t)k;
	}
	return (int64_t)got;
}

int64_t scar_ckpt_pread_full(int fd, void *buf, size_t n, uint64_t off)
{
	char *p = buf;
	size_t got = 0;

	while (got < n) {
		size_t want = n - got > ((size_t)1 << 30) ? (size_t)1 << 30 : n - got;
		ssize_t k = pread(fd, p + got, want, (off_t)(off + got));

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			break;
		got += (size_t)k;
	}
	return (int64_t)got;
}

__attribute__((format(printf, 4, 5)))
static int rerr(const struct scar_ckpt_reader *r, struct scar_error *err, int code,
		const char *fmt, ...)
{
	char msg[SCAR_ERROR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return scar_error_set_at(err, code, r->name, -1, -1, "%s", msg);
}

__attribute__((format(printf, 5, 6)))
static int rerr_at(const struct scar_ckpt_reader *r, struct scar_error *err, int code,
		   uint64_t off, const char *fmt, ...)
{
	char msg[SCAR_ERROR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return scar_error_set_at(err, code, r->name, (int64_t)off, -1, "%s", msg);
}

/* What running past the end of the data means: truncation, unless the file
 * visibly ends in an intact trailer, when a length must be damaged. */
static int overrun(const struct scar_ckpt_reader *r)
{
	return r->complete ? SCAR_ECORRUPT : SCAR_ETRUNC;
}

/* Bytes left after pos, for a regular file; UINT64_MAX for a stream. */
static uint64_t left_at(const struct scar_ckpt_reader *r, uint64_t pos)
{
	if (!r->seekable)
		return UINT64_MAX;
	return pos < r->fsize ? r->fsize - pos : 0;
}

/* Read exactly n bytes at the cursor; ETRUNC (naming what) at end of file. */
static int in_read(struct scar_ckpt_reader *r, struct cursor *c, void *buf, size_t n,
		   const char *what, struct scar_error *err)
{
	unsigned char *p = buf;
	uint64_t start = c->random ? c->pos : r->off;
	int64_t k;

	if (c->random) {
		k = scar_ckpt_pread_full(r->fd, p, n, r->base + c->pos);
		if (k < 0)
			return scar_error_set_errno(err, (int)-k, r->name, "cannot read '%s'", r->name);
		c->pos += (uint64_t)k;
		if ((size_t)k < n)
			goto trunc;
		return 0;
	}
	while (n) {
		if (r->ipos < r->ilen) {
			size_t m = r->ilen - r->ipos < n ? r->ilen - r->ipos : n;

			memcpy(p, r->ibuf + r->ipos, m);
			r->ipos += m;
			r->off += m;
			p += m;
			n -= m;
			continue;
		}
		if (r->eof)
			goto trunc;
		if (n >= IBUF_LEN) {
			k = scar_ckpt_read_full(r->fd, p, n);
			if (k < 0)
				return scar_error_set_errno(err, (int)-k, r->name, "cannot read '%s'",
							    r->name);
			r->off += (uint64_t)k;
			p += k;
			n -= (size_t)k;
			if (n)
				r->eof = 1;
			continue;
		}
		k = read(r->fd, r->ibuf, IBUF_LEN);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return scar_error_set_errno(err, errno, r->name, "cannot read '%s'", r->name);
		}
		if (k == 0)
			r->eof = 1;
		r->ipos = 0;
		r->ilen = (size_t)k;
	}
	return 0;
trunc:
	if (c->random)
		c->pos = start;
	return rerr_at(r, err, SCAR_ETRUNC, c->random ? c->pos : r->off,
		       "file ends inside the %s", what);
}

/* Pass over n bytes at the cursor without reading them (a regular file's). */
static int in_skip(struct scar_ckpt_reader *r, struct cursor *c, uint64_t n,
		   struct scar_error *err)
{
	uint64_t m = r->ilen - r->ipos;

	if (c->random) {
		c->pos += n;
		return 0;
	}
	if (m > n)
		m = n;
	r->ipos += (size_t)m;
	r->off += m;
	n -= m;
	if (n && lseek(r->fd, (off_t)n, SEEK_CUR) < 0)
		return scar_error_set_errno(err, errno, r->name, "cannot read '%s'", r->name);
	r->off += n;
	return 0;
}

static int grow_buf(unsigned char **p, size_t *cap, size_t need)
{
	unsigned char *n;

	if (need <= *cap)
		return 0;
	n = malloc(need ? need : 1);
	if (!n)
		return SCAR_ENOMEM;
	free(*p);
	*p = n;
	*cap = need;
	return 0;
}

/* ---- metadata ---- */

static int get_u64(json_t *o, const char *key, uint64_t *v)
{
	json_t *x = json_object_get(o, key);

	if (!json_is_integer(x) || json_integer_value(x) < 0)
		return -1;
	*v = (uint64_t)json_integer_value(x);
	return 0;
}

/*
 * A present bitmap (format 1.1): {"bitmap": base64 of ceil(rows/8) bytes},
 * bit r % 8 of byte r / 8 for row r, bits past the last row 0. Decodes it
 * into *bits (malloc'd); -1 when it is malformed. rows is at most six times
 * the text's length, so what it yields is bounded by the metadata.
 */
static int bitmap_decode(json_t *pres, uint64_t rows, unsigned char **bits)
{
	json_t *b = json_object_get(pres, "bitmap");
	const char *txt = json_string_value(b);
	size_t len = json_string_length(b), nbytes, o = 0;
	unsigned char *out;

	*bits = NULL;
	if (!json_is_object(pres) || !txt || json_object_size(pres) != 1 ||
	    rows > (uint64_t)SIZE_MAX - 7)
		return -1;
	nbytes = (size_t)((rows + 7) / 8);
	if (len != 4 * ((nbytes + 2) / 3))
		return -1;
	out = malloc(nbytes ? nbytes : 1);
	if (!out)
		return -1;
	for (size_t i = 0; i < len; i += 4) {
		uint32_t v = 0;
		int pad = 0;

		for (int k = 0; k < 4; k++) {
			char c = txt[i + k];
			unsigned d;

			if (c >= 'A' && c <= 'Z')
				d = (unsigned)(c - 'A');
			else if (c >= 'a' && c <= 'z')
				d = (unsigned)(c - 'a') + 26;
			else if (c >= '0' && c <= '9')
				d = (unsigned)(c - '0') + 52;
			else if (c == '+')
				d = 62;
			else if (c == '/')
				d = 63;
			else if (c == '=' && i + 4 == len && k >= 2)
				d = 0, pad++;
			else
				goto bad;
			if (pad && c != '=')
				goto bad;
			v = v << 6 | d;
		}
		for (int k = 0; k < 3; k++, v <<= 8)
			if (o < nbytes)
				out[o++] = (unsigned char)(v >> 16 & 0xff);
			else if (v >> 16 & 0xff)
				goto bad;	/* nonzero bits in the padding */
		if (pad != (int)(i + 4 == len ? (3 - nbytes % 3) % 3 : 0))
			goto bad;
	}
	if (rows % 8 && out[nbytes - 1] >> (rows % 8))
		goto bad;	/* a row past the last one */
	*bits = out;
	return 0;
bad:
	free(out);
	return -1;
}

/* The runs of present rows of a decoded bitmap, stored in out unless it is NULL. */
static size_t bitmap_runs(const unsigned char *bits, uint64_t rows, uint64_t (*out)[2])
{
	size_t n = 0;

	for (uint64_t a = 0; a < rows; a++) {
		uint64_t e = a;

		if (!(bits[a / 8] >> (a % 8) & 1))
			continue;
		while (e < rows && bits[e / 8] >> (e % 8) & 1)
			e++;
		if (out) {
			out[n][0] = a;
			out[n][1] = e - a;
		}
		n++;
		a = e;
	}
	return n;
}

/* Tensor i of the table; bits is its present bitmap, decoded by parse_table, or NULL. */
static const char *tinfo_name(const void *ctx, size_t i)
{
	return ((const struct scar_ckpt_tensor_info *)ctx)[i].name;
}

static int parse_tensor(struct scar_ckpt_reader *r, size_t i, json_t *o,
			const unsigned char *bits, size_t *range_at, struct scar_error *err)
{
	struct scar_ckpt_tensor_info *ti = &r->tinfo[i];
	json_t *name = json_object_get(o, "name"), *shape = json_object_get(o, "shape");
	json_t *pres = json_object_get(o, "present");
	const char *dt = json_string_value(json_object_get(o, "dtype"));
	const char *role = json_string_value(json_object_get(o, "role"));
	uint64_t rows, row_elems = 1, prev_end = 0;
	size_t esz, n;
	int dup;

	if (!json_is_object(o) || !json_is_string(name) || !json_is_array(shape) || !dt || !role ||
	    !pres)
		return rerr(r, err, SCAR_ECORRUPT, "metadata: tensor %zu lacks a field", i);
	if (!json_string_length(name) || json_string_length(name) >= SCAR_NAME_MAX ||
	    memchr(json_string_value(name), 0, json_string_length(name)))
		return rerr(r, err, SCAR_ECORRUPT, "metadata: tensor %zu has a bad name", i);
	memcpy(ti->name, json_string_value(name), json_string_length(name) + 1);
	if ((dup = scar_nameidx_add(&r->names, i, tinfo_name, r->tinfo, NULL)))
		return dup < 0 ? rerr(r, err, SCAR_ENOMEM, "out of memory for the tensor table") :
			       rerr(r, err, SCAR_ECORRUPT, "metadata: duplicate tensor '%s'", ti->name);
	ti->dtype = scar_dtype_parse(dt);
	ti->role = scar_role_parse(role);
	if (!ti->dtype || !ti->role)
		return rerr(r, err, SCAR_EUNSUPPORTED, "metadata: tensor '%s' has unknown %s '%s'",
			    ti->name, ti->dtype ? "role" : "dtype", ti->dtype ? role : dt);
	/* f16 and bf16 are 1.2 types: a file that says less is mislabelled, and a
	 * 1.1 reader finds the dtype unknown, so it is unsupported here too */
	if ((ti->dtype == SCAR_F16 || ti->dtype == SCAR_BF16) && r->info.minor < 2)
		return rerr(r, err, SCAR_EUNSUPPORTED,
			    "metadata: tensor '%s' has dtype '%s' in a version 1.%d file (it needs 1.2)",
			    ti->name, dt, r->info.minor);
	esz = scar_dtype_size(ti->dtype);
	n = json_array_size(shape);
	if (n > SCAR_MAX_DIMS)
		return rerr(r, err, SCAR_ECORRUPT, "metadata: tensor '%s' has %zu dimensions",
			    ti->name, n);
	ti->ndim = (int)n;
	for (size_t d = 0; d < n; d++) {
		json_t *x = json_array_get(shape, d);

		if (!json_is_integer(x) || json_integer_value(x) < 0)
			return rerr(r, err, SCAR_ECORRUPT, "metadata: tensor '%s' has a bad shape",
				    ti->name);
		ti->shape[d] = (uint64_t)json_integer_value(x);
	}
	for (size_t d = 1; d < n; d++) {
		if (ti->shape[d] && row_elems > (UINT64_MAX >> 2) / ti->shape[d])
			goto toobig;
		row_elems *= ti->shape[d];
	}
	rows = n ? ti->shape[0] : 1;
	if (get_u64(o, "rows", &ti->rows) || ti->rows != rows)
		return rerr(r, err, SCAR_ECORRUPT, "metadata: tensor '%s': rows disagree with shape",
			    ti->name);
	if (row_elems > (UINT64_MAX >> 2) / esz)
		goto toobig;
	r->row_bytes[i] = (size_t)(row_elems * esz);
	if (r->row_bytes[i] && rows > (UINT64_MAX >> 2) / r->row_bytes[i])
		goto toobig;
	/* Zero-byte rows cost per-row work whatever the file holds: bound them. */
	if (!r->row_bytes[i] && rows > SCAR_ZERO_WIDTH_ROWS_MAX)
		return rerr(r, err, SCAR_EUNSUPPORTED,
			    "metadata: tensor '%s' has %llu rows of zero bytes, more than the %llu "
			    "allowed", ti->name, (unsigned long long)rows,
			    (unsigned long long)SCAR_ZERO_WIDTH_ROWS_MAX);
	ti->shards = ti->role == SCAR_ROLE_PARAM ? r->info.shards : 1;

	ti->ranges = NULL;
	ti->nranges = 0;
	if (json_is_string(pres)) {
		if (strcmp(json_string_value(pres), "all"))
			return rerr(r, err, SCAR_ECORRUPT, "metadata: tensor '%s': bad present value",
				    ti->name);
		ti->rows_present = rows;
		if (rows) {
			/* "all" is one range, so the section code has a single shape. */
			r->ranges[*range_at][0] = 0;
			r->ranges[*range_at][1] = rows;
			ti->ranges = (const uint64_t (*)[2])&r->ranges[*range_at];
			ti->nranges = 1;
			++*range_at;
		}
		return 0;
	}
	ti->ranges = (const uint64_t (*)[2])&r->ranges[*range_at];
	ti->rows_present = 0;
	if (json_is_object(pres)) {
		if (!bits)
			return rerr(r, err, SCAR_ECORRUPT, "metadata: tensor '%s': bad present bitmap",
				    ti->name);
		ti->nranges = bitmap_runs(bits, rows, &r->ranges[*range_at]);
		for (size_t k = 0; k < ti->nranges; k++)
			ti->rows_present += r->ranges[*range_at + k][1];
		*range_at += ti->nranges;
		return 0;
	}
	if (!json_is_array(pres))
		return rerr(r, err, SCAR_ECORRUPT, "metadata: tensor '%s': bad present value", ti->name);
	for (size_t k = 0; k < json_array_size(pres); k++) {
		json_t *p = json_array_get(pres, k), *a = json_array_get(p, 0), *b = json_array_get(p, 1);
		uint64_t s, c;

		if (!json_is_array(p) || json_array_size(p) != 2 || !json_is_integer(a) ||
		    !json_is_integer(b) || json_integer_value(a) < 0 || json_integer_value(b) < 1)
			return rerr(r, err, SCAR_ECORRUPT, "metadata: tensor '%s': bad present range %zu",
				    ti->name, k);
		s = (uint64_t)json_integer_value(a);
		c = (uint64_t)json_integer_value(b);
		if ((k && s <= prev_end) || s >= rows || c > rows - s)
			return rerr(r, err, SCAR_ECORRUPT,
				    "metadata: tensor '%s': present range %zu is out of order or bounds",
				    ti->name, k);
		prev_end = s + c;
		r->ranges[*range_at][0] = s;
		r->ranges[*range_at][1] = c;
		++*range_at;
		ti->nranges++;
		ti->rows_present += c;
	}
	return 0;
toobig:
	return rerr(r, err, SCAR_ECORRUPT, "metadata: tensor '%s' is absurdly large", ti->name);
}

/*
 * The tensor table. Present ranges are counted first, from JSON that is in
 * memory, so that one allocation (bounded by the file) holds them all; the
 * bitmaps decoded for the count are kept for parse_tensor.
 */
static int parse_table(struct scar_ckpt_reader *r, json_t *tv, struct scar_error *err)
{
	size_t n = json_array_size(tv), nr = 0, at = 0;
	unsigned char **bitmaps = calloc(n ? n : 1, sizeof(*bitmaps));
	int rc = 0, any_partial = 0;

	if (!bitmaps)
		return rerr(r, err, SCAR_ENOMEM, "out of memory for the tensor table");
	r->info.ntensors = n;
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_array_get(tv, i), *p = json_object_get(o, "present");

		if (json_is_object(p)) {
			/* rows is checked again, with the shape, by parse_tensor */
			json_t *rows = json_object_get(o, "rows");

			/* A bitmap is a 1.1 feature: a file that says 1.0 and has one
			 * is mislabelled, as a 1.0 reader would find it corrupt. */
			if (r->info.minor < 1) {
				rc = rerr(r, err, SCAR_ECORRUPT,
					  "metadata: tensor %zu: present bitmap in a version 1.0 file", i);
				goto out;
			}
			if (!json_is_integer(rows) || json_integer_value(rows) < 0 ||
			    bitmap_decode(p, (uint64_t)json_integer_value(rows), &bitmaps[i])) {
				rc = rerr(r, err, SCAR_ECORRUPT, "metadata: tensor %zu: bad present bitmap",
					  i);
				goto out;
			}
			nr += bitmap_runs(bitmaps[i], (uint64_t)json_integer_value(rows), NULL);
		} else {
			nr += json_is_array(p) ? json_array_size(p) : 1;
		}
	}
	r->tinfo = calloc(n ? n : 1, sizeof(*r->tinfo));
	r->row_bytes = calloc(n ? n : 1, sizeof(*r->row_bytes));
	r->ranges = malloc((nr ? nr : 1) * sizeof(*r->ranges));
	r->counts = malloc((size_t)r->info.shards * sizeof(*r->counts));
	if (!r->tinfo || !r->row_bytes || !r->ranges || !r->counts) {
		rc = rerr(r, err, SCAR_ENOMEM, "out of memory for the tensor table");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if ((rc = parse_tensor(r, i, json_array_get(tv, i), bitmaps[i], &at, err)))
			goto out;
		if (r->tinfo[i].rows_present < r->tinfo[i].rows)
			any_partial = 1;
	}
	if (any_partial != r->info.partial) {
		rc = rerr(r, err, SCAR_ECORRUPT, "metadata: kind \"%s\" disagrees with the rows present",
			  r->info.partial ? "partial" : "full");
		goto out;
	}
	r->info.tensors = r->tinfo;
	r->counts_for = SIZE_MAX;
out:
	for (size_t i = 0; i < n; i++)
		free(bitmaps[i]);
	free(bitmaps);
	return rc;
}

static int parse_meta(struct scar_ckpt_reader *r, const char *buf, size_t len,
		      struct scar_error *err)
{
	json_error_t je;
	json_t *m, *tv, *x;
	const char *s;
	uint64_t v;

	m = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (!m)
		return rerr_at(r, err, SCAR_ECORRUPT, CKPT_HEADER_LEN + CKPT_META_HDR_LEN +
			       (uint64_t)(je.position > 0 ? je.position : 0),
			       "metadata is not valid JSON: %s", je.text);
	r->meta = m;
	if (!json_is_object(m))
		return rerr(r, err, SCAR_ECORRUPT, "metadata is not a JSON object");
	s = json_string_value(json_object_get(m, "format"));
	if (!s || strcmp(s, "scar-ckpt"))
		return rerr(r, err, SCAR_EFORMAT, "metadata does not say format \"scar-ckpt\"");
	if (get_u64(m, "version", &v) || v != CKPT_MAJOR)
		return rerr(r, err, SCAR_ECORRUPT, "metadata version disagrees with the file header");
	r->info.version = CKPT_MAJOR;
	x = json_object_get(m, "model");
	if (!json_is_string(x) || json_string_length(x) >= SCAR_NAME_MAX)
		return rerr(r, err, SCAR_ECORRUPT, "metadata: bad model");
	memcpy(r->info.model, json_string_value(x), json_string_length(x) + 1);
	if (get_u64(m, "iteration", &r->info.iteration))
		return rerr(r, err, SCAR_ECORRUPT, "metadata: bad iteration");
	if (get_u64(m, "shards", &v) || v < 1 || v > SCAR_MAX_SHARDS)
		return rerr(r, err, SCAR_ECORRUPT, "metadata: bad shard count");
	r->info.shards = (uint32_t)v;
	s = json_string_value(json_object_get(m, "shard_rule"));
	if (!s)
		return rerr(r, err, SCAR_ECORRUPT, "metadata: no shard_rule");
	if (strcmp(s, "row mod shards"))
		return rerr(r, err, SCAR_EUNSUPPORTED, "metadata: unknown shard rule '%s'", s);
	s = json_string_value(json_object_get(m, "kind"));
	if (!s || (strcmp(s, "full") && strcmp(s, "partial")))
		return rerr(r, err, SCAR_ECORRUPT, "metadata: kind must be \"full\" or \"partial\"");
	r->info.partial = strcmp(s, "partial") == 0;
	r->info.config = json_object_get(m, "config");
	x = json_object_get(m, "extra");
	if (!json_is_object(r->info.config) || !json_is_object(x))
		return rerr(r, err, SCAR_ECORRUPT, "metadata: config and extra must be objects");
	r->info.meta = m;
	tv = json_object_get(m, "tensors");
	if (!json_is_array(tv))
		return rerr(r, err, SCAR_ECORRUPT, "metadata: no tensor table");
	return parse_table(r, tv, err);
}

/*
 * One read(2) into ibuf at offset at, retried on EINTR: the bytes read (0
 * sets eof), or a negative scar_err.
 */
static ssize_t read_some(struct scar_ckpt_reader *r, size_t at, struct scar_error *err)
{
	ssize_t k;

	do
		k = read(r->fd, r->ibuf + at, IBUF_LEN - at);
	while (k < 0 && errno == EINTR);
	if (k < 0)
		return scar_error_set_errno(err, errno, r->name, "cannot read '%s'", r->name);
	if (k == 0)
		r->eof = 1;
	return k;
}

static int read_head(struct scar_ckpt_reader *r, struct scar_error *err)
{
	unsigned char h[CKPT_HEADER_LEN];
	struct cursor c = { 0, 0 };
	uint32_t meta_len;
	char *meta;
	int rc;

	/* Before anything else: the file's first bytes, to tell "empty" and "not ours". */
	while (r->ilen < CKPT_HEADER_LEN && !r->eof) {
		ssize_t k = read_some(r, r->ilen, err);

		if (k < 0)
			return (int)k;
		r->ilen += (size_t)k;
	}
	if (r->ilen == 0)
		return rerr_at(r, err, SCAR_ETRUNC, 0, "empty file, not a checkpoint");
	if (memcmp(r->ibuf, SCAR_CKPT_MAGIC, r->ilen < 8 ? r->ilen : 8))
		return rerr_at(r, err, SCAR_EFORMAT, 0, "not a scar checkpoint (bad magic)");
	if ((rc = in_read(r, &c, h, sizeof(h), "file header", err)))
		return rc;
	if (scar_crc32c(0, h, 12) != ckpt_get32(h + 12))
		return rerr_at(r, err, SCAR_ECORRUPT, 12, "file header checksum mismatch");
	if (ckpt_get16(h + 8) != CKPT_MAJOR)
		return rerr_at(r, err, ckpt_get16(h + 8) > CKPT_MAJOR ? SCAR_EVERSION : SCAR_EFORMAT, 8,
			       "format version %u.%u is not supported (this reader knows 1.x)",
			       ckpt_get16(h + 8), ckpt_get16(h + 10));
	r->info.minor = ckpt_get16(h + 10);
	if ((rc = in_read(r, &c, h, CKPT_META_HDR_LEN, "metadata block", err)))
		return rc;
	meta_len = ckpt_get32(h);
	if (meta_len < 1 || meta_len > SCAR_CKPT_META_MAX)
		return rerr_at(r, err, SCAR_ECORRUPT, CKPT_HEADER_LEN,
			       "metadata length %u out of range 1..%u", meta_len, SCAR_CKPT_META_MAX);
	if (meta_len > left_at(r, r->off))
		return rerr_at(r, err, overrun(r), CKPT_HEADER_LEN,
			       "metadata of %u bytes extends past the end of the file", meta_len);
	meta = malloc(meta_len);
	if (!meta)
		return rerr(r, err, SCAR_ENOMEM, "out of memory for %u bytes of metadata", meta_len);
	rc = in_read(r, &c, meta, meta_len, "metadata block", err);
	if (!rc && scar_crc32c(0, meta, meta_len) != ckpt_get32(h + 4))
		rc = rerr_at(r, err, SCAR_ECORRUPT, CKPT_HEADER_LEN + 4, "metadata checksum mismatch");
	if (!rc)
		rc = parse_meta(r, meta, meta_len, err);
	free(meta);
	r->meta_end = r->off;
	return rc;
}

/*
 * On a regular file, peek at the trailer: intact means the file is whole.
 * A read error is reported, not taken for "no trailer": that would turn an
 * unreadable file into a truncated or corrupt one.
 */
static int probe_trailer(struct scar_ckpt_reader *r, struct scar_error *err)
{
	unsigned char t[CKPT_TRAILER_LEN];
	int64_t k;

	if (!r->seekable || r->fsize < CKPT_HEADER_LEN + CKPT_META_HDR_LEN + 12 + CKPT_TRAILER_LEN)
		return 0;
	k = scar_ckpt_pread_full(r->fd, t, sizeof(t), r->base + r->fsize - CKPT_TRAILER_LEN);
	if (k < 0)
		return scar_error_set_errno(err, (int)-k, r->name, "cannot read '%s'", r->name);
	if (k != (int64_t)sizeof(t))
		return 0;	/* shrank since fstat: the stream reader will say where */
	r->complete = memcmp(t + 24, CKPT_END_MAGIC, 8) == 0 &&
		      scar_crc32c(0, t, 20) == ckpt_get32(t + 20) && ckpt_get64(t + 8) == r->fsize;
	return 0;
}

int scar_ckpt_reader_open_fd(struct scar_ckpt_reader **out, int fd, const char *name,
			     struct scar_error *err)
{
	struct scar_ckpt_reader *r = calloc(1, sizeof(*r));
	struct stat sb;
	int rc;

	*out = NULL;
	if (!r || !(r->name = strdup(name ? name : "(fd)")) || !(r->ibuf = malloc(IBUF_LEN))) {
		if (r)
			free(r->name);
		free(r);
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	}
	r->fd = fd;
	if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode)) {
		off_t pos = lseek(fd, 0, SEEK_CUR);

		if (pos >= 0 && pos <= sb.st_size) {
			r->seekable = 1;
			r->base = (uint64_t)pos;
			r->fsize = (uint64_t)(sb.st_size - pos);
		}
	}
	rc = probe_trailer(r, err);
	if (!rc)
		rc = read_head(r, err);
	if (rc) {
		scar_ckpt_reader_close(r);
		return rc;
	}
	*out = r;
	return 0;
}

int scar_ckpt_reader_open(struct scar_ckpt_reader **out, const char *path,
			  struct scar_error *err)
{
	int fd, rc;

	*out = NULL;
	if (!path || strcmp(path, "-") == 0)
		return scar_ckpt_reader_open_fd(out, STDIN_FILENO, "(stdin)", err);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return scar_error_set_errno(err, errno, path, "cannot open '%s'", path);
	rc = scar_ckpt_reader_open_fd(out, fd, path, err);
	if (rc)
		close(fd);
	else
		(*out)->own_fd = 1;
	return rc;
}

const struct scar_ckpt_info *scar_ckpt_reader_info(const struct scar_ckpt_reader *r)
{
	return &r->info;
}

uint64_t scar_ckpt_reader_offset(const struct scar_ckpt_reader *r)
{
	return r->off;
}

uint64_t scar_ckpt_reader_file_size(const struct scar_ckpt_reader *r)
{
	return r->seekable ? r->fsize : UINT64_MAX;
}

void scar_ckpt_reader_close(struct scar_ckpt_reader *r)
{
	if (!r)
		return;
	if (r->own_fd)
		close(r->fd);
	json_decref(r->meta);
	free(r->name);
	free(r->ibuf);
	free(r->tinfo);
	scar_nameidx_free(&r->names);
	free(r->ranges);
	free(r->row_bytes);
	free(r->counts);
	free(r->seen);
	free(r->raw);
	free(r->chunk);
	free(r->scratch);
	free(r->unshuf);
	free(r->rows);
	free(r->index);
	LZ4F_freeDecompressionContext(r->dctx);
	free(r);
}

/* ---- sections ---- */

static const uint64_t *shard_counts(struct scar_ckpt_reader *r, size_t t)
{
	if (r->counts_for != t) {
		const struct scar_ckpt_tensor_info *ti = &r->tinfo[t];

		scar_ckpt_shard_counts(ti->ranges, ti->nranges, ti->shards, r->counts);
		r->counts_for = t;
	}
	return r->counts;
}

/* The next (tensor, shard) with present rows at or after (*t, *s); 0 when none is left. */
static int next_expected(struct scar_ckpt_reader *r, size_t *t, uint32_t *s, uint64_t *nrows)
{
	for (; *t < r->info.ntensors; (*t)++, *s = 0) {
		const uint64_t *c;

		if (!r->tinfo[*t].rows_present)
			continue;
		c = shard_counts(r, *t);
		for (; *s < r->tinfo[*t].shards; (*s)++)
			if (c[*s]) {
				*nrows = c[*s];
				return 1;
			}
	}
	return 0;
}

/* The global row numbers of (tensor t, shard s), ascending. */
static int fill_rows(struct scar_ckpt_reader *r, size_t t, uint32_t s, uint64_t nrows)
{
	const struct scar_ckpt_tensor_info *ti = &r->tinfo[t];
	uint32_t S = ti->shards;
	size_t n = 0;

	if (nrows > SIZE_MAX / 8)
		return SCAR_ENOMEM;
	if (nrows > r->rows_cap) {
		uint64_t *v = malloc((size_t)nrows * 8);

		if (!v)
			return SCAR_ENOMEM;
		free(r->rows);
		r->rows = v;
		r->rows_cap = (size_t)nrows;
	}
	for (size_t k = 0; k < ti->nranges && n < nrows; k++) {
		uint64_t a = ti->ranges[k][0], e = a + ti->ranges[k][1];
		uint64_t first = a + (s + S - a % S) % S;

		for (uint64_t row = first; row < e && n < nrows; row += S)
			r->rows[n++] = row;
	}
	return n == nrows ? 0 : SCAR_ECORRUPT;
}

/*
 * LZ4F's error names (ERROR_frameType_unknown) are for programmers: say
 * it in words. Only allocation is not damage; *code says which.
 */
static const char *lz4_problem(size_t lz4_code, int *code)
{
	const char *n = LZ4F_getErrorName(lz4_code);

	*code = SCAR_ECORRUPT;
	if (strstr(n, "blockChecksum"))
		return "LZ4 block checksum mismatch";
	if (strstr(n, "contentChecksum"))
		return "content checksum mismatch";
	if (strstr(n, "headerChecksum"))
		return "LZ4 frame header checksum mismatch";
	if (strstr(n, "frameSize"))
		return "LZ4 frame content size mismatch";
	if (strstr(n, "decompressionFailed"))
		return "corrupt LZ4 block";
	if (strstr(n, "allocation")) {
		*code = SCAR_ENOMEM;
		return "out of memory decoding the LZ4 frame";
	}
	return "corrupt LZ4 frame";
}

struct sec_ctx {
	size_t no;		/* section number, for messages */
	const char *tname;
	uint32_t shard;
	uint64_t hoff;		/* offset of the section header */
};

#define SECFMT "section %zu (tensor '%s', shard %u): "
#define SECARG(x) (x)->no, (x)->tname, (x)->shard

/* Feed n bytes of the frame to LZ4F and take what it decodes. */
struct lz4_out {
	unsigned char *dst;		/* next output byte, or NULL for the scratch buffer */
	uint64_t produced, raw_len;
	const struct ckpt_sink *sink;
	struct ckpt_xxh32 content;
	size_t esz;			/* a shuffled section kept: its element size, else 0 */
	size_t staged;			/* then the block decoded so far, in scratch */
};

static int lz4_feed(struct scar_ckpt_reader *r, const struct sec_ctx *x, uint64_t at,
		    const unsigned char *src, size_t n, struct lz4_out *o, size_t *ret,
		    struct scar_error *err)
{
	LZ4F_decompressOptions_t opt;
	size_t pos = 0;
	int rc;

	memset(&opt, 0, sizeof(opt));
#if LZ4_VERSION_NUMBER >= 10904
	opt.skipChecksums = 1;	/* checked by the caller, faster (ckpt_xxh32.c) */
#endif
	while (pos < n) {
		size_t in = n - pos, cap;
		unsigned char *out = o->esz ? r->scratch + o->staged : o->dst ? o->dst : r->scratch;

		cap = o->esz ? r->scratch_cap - o->staged :
		      o->dst ? (size_t)(o->raw_len - o->produced) : r->scratch_cap;
		*ret = LZ4F_decompress(r->dctx, out, &cap, src + pos, &in, &opt);
		if (LZ4F_isError(*ret)) {
			const char *what = lz4_problem(*ret, &rc);

			return rerr_at(r, err, rc, at + pos, SECFMT "%s", SECARG(x), what);
		}
		pos += in;
		if (cap > o->raw_len - o->produced)
			return rerr_at(r, err, SCAR_ECORRUPT, at + pos,
				       SECFMT "LZ4 frame decodes to more than %llu bytes", SECARG(x),
				       (unsigned long long)o->raw_len);
		scar_ckpt_xxh32_update(&o->content, out, cap);
		o->produced += cap;
		if (o->esz)
			o->staged += cap;	/* unshuffled when the block is whole */
		else if (o->dst)
			o->dst += cap;
		else if (o->sink && cap && (rc = o->sink->put(o->sink->ctx, out, cap)))
			return rerr_at(r, err, rc, at + pos, SECFMT "cannot store the rows", SECARG(x));
		if (*ret == 0 && pos < n)
			return rerr_at(r, err, SCAR_ECORRUPT, at + pos,
				       SECFMT "data after the end of the LZ4 frame", SECARG(x));
		if (!in && !cap)
			return rerr_at(r, err, SCAR_ECORRUPT, at + pos,
				       SECFMT "LZ4 frame decodes to more than %llu bytes", SECARG(x),
				       (unsigned long long)o->raw_len);
	}
	return 0;
}

/*
 * Format 1.3: the block just decoded into scratch is unshuffled into the
 * destination, or handed on to the sink; the checksums are of the shuffled
 * bytes, so verify, which keeps nothing, never unshuffles.
 */
static int unshuffle_block(struct scar_ckpt_reader *r, const struct sec_ctx *x, uint64_t at,
			   struct lz4_out *o, struct scar_error *err)
{
	int rc;

	if (o->dst) {
		scar_ckpt_unshuffle(o->dst, r->scratch, o->staged, o->esz);
		o->dst += o->staged;
	} else {
		scar_ckpt_unshuffle(r->unshuf, r->scratch, o->staged, o->esz);
		if (o->staged && (rc = o->sink->put(o->sink->ctx, r->unshuf, o->staged)))
			return rerr_at(r, err, rc, at, SECFMT "cannot store the rows", SECARG(x));
	}
	o->staged = 0;
	return 0;
}

/*
 * An LZ4 section: the frame is walked block by block here (its layout is
 * fixed by format v1), each block's and the content's xxHash-32 checked, and
 * each whole block handed to LZ4F to decode (and, shuffled, unshuffled).
 */
static int decode_lz4(struct scar_ckpt_reader *r, struct cursor *c, const struct sec_ctx *x,
		      unsigned bcode, size_t esz, uint64_t raw_len, uint64_t stored_len,
		      unsigned char *dst, const struct ckpt_sink *sink, struct scar_error *err)
{
	uint64_t left = stored_len, poff = c->random ? c->pos : r->off, at = poff;
	size_t bs = ckpt_block_size(bcode), ret = 1;
	struct lz4_out o;
	unsigned char *h;
	int rc;

	if (!dst && !sink)
		esz = 0;	/* nothing kept: the checksums need no unshuffling */
	if (grow_buf(&r->chunk, &r->chunk_cap, bs + 16) ||
	    ((!dst || esz) && grow_buf(&r->scratch, &r->scratch_cap, bs)) ||
	    (esz && !dst && grow_buf(&r->unshuf, &r->unshuf_cap, bs)))
		return rerr(r, err, SCAR_ENOMEM, SECFMT "out of memory", SECARG(x));
	if (!r->dctx && LZ4F_isError(LZ4F_createDecompressionContext(&r->dctx, LZ4F_VERSION)))
		return rerr(r, err, SCAR_ENOMEM, SECFMT "out of memory", SECARG(x));
	LZ4F_resetDecompressionContext(r->dctx);
	o.dst = dst;
	o.produced = 0;
	o.raw_len = raw_len;
	o.sink = sink;
	o.esz = esz;
	o.staged = 0;
	scar_ckpt_xxh32_init(&o.content, 0);
	h = r->chunk;

	/* Everything in the frame header is fixed by format v1 but its checksum
	 * byte, so check it exactly: LZ4's one-byte header checksum alone would
	 * miss 1 in 256 damaged headers. */
	if ((rc = in_read(r, c, h, 15, "section payload", err)))
		return rc;
	left -= 15;
	if (ckpt_get32(h) != CKPT_LZ4_MAGIC)
		return rerr_at(r, err, SCAR_ECORRUPT, at, SECFMT "bad LZ4 frame magic", SECARG(x));
	if (h[4] != CKPT_LZ4_FLG || h[5] != (4 + bcode) << 4)
		return rerr_at(r, err, SCAR_ECORRUPT, at + 4,
			       SECFMT "LZ4 frame descriptor is not the one format v1 requires", SECARG(x));
	if (ckpt_get64(h + 6) != raw_len)
		return rerr_at(r, err, SCAR_ECORRUPT, at + 6,
			       SECFMT "LZ4 frame content size disagrees with the section header",
			       SECARG(x));
	if (((scar_ckpt_xxh32(h + 4, 10, 0) >> 8) & 0xFF) != h[14])
		return rerr_at(r, err, SCAR_ECORRUPT, at + 14,
			       SECFMT "LZ4 frame header checksum mismatch", SECARG(x));
	if ((rc = lz4_feed(r, x, at, h, 15, &o, &ret, err)))
		return rc;
	for (;;) {
		uint32_t bsz, size;

		at = c->random ? c->pos : r->off;
		if (left < 4)
			return rerr_at(r, err, SCAR_ECORRUPT, at, SECFMT "LZ4 frame ends early", SECARG(x));
		if ((rc = in_read(r, c, h, 4, "section payload", err)))
			return rc;
		left -= 4;
		bsz = ckpt_get32(h);
		if (bsz == 0) {
			if (left != 4)
				return rerr_at(r, err, SCAR_ECORRUPT, at, SECFMT "%s", SECARG(x),
					       left < 4 ? "LZ4 frame ends early"
							: "data after the end of the LZ4 frame");
			if ((rc = in_read(r, c, h + 4, 4, "section payload", err)))
				return rc;
			if (o.produced != raw_len)
				return rerr_at(r, err, SCAR_ECORRUPT, at,
					       SECFMT "LZ4 frame holds %llu bytes, not %llu", SECARG(x),
					       (unsigned long long)o.produced, (unsigned long long)raw_len);
			if (scar_ckpt_xxh32_digest(&o.content) != ckpt_get32(h + 4))
				return rerr_at(r, err, SCAR_ECORRUPT, at + 4,
					       SECFMT "content checksum mismatch", SECARG(x));
			if ((rc = lz4_feed(r, x, at, h, 8, &o, &ret, err)))
				return rc;
			if (ret != 0)
				return rerr_at(r, err, SCAR_ECORRUPT, at, SECFMT "LZ4 frame ends early",
					       SECARG(x));
			return 0;
		}
		size = bsz & 0x7FFFFFFFu;
		if (size > bs || (uint64_t)size + 4 > left)
			return rerr_at(r, err, SCAR_ECORRUPT, at,
				       SECFMT "LZ4 block of %u bytes does not fit", SECARG(x), size);
		if ((rc = in_read(r, c, h + 4, (size_t)size + 4, "section payload", err)))
			return rc;
		left -= (uint64_t)size + 4;
		if (scar_ckpt_xxh32(h + 4, size, 0) != ckpt_get32(h + 4 + size))
			return rerr_at(r, err, SCAR_ECORRUPT, at, SECFMT "LZ4 block checksum mismatch",
				       SECARG(x));
		if ((rc = lz4_feed(r, x, at, h, (size_t)size + 8, &o, &ret, err)) ||
		    (esz && (rc = unshuffle_block(r, x, at, &o, err))))
			return rc;
		if (ret == 0)
			return rerr_at(r, err, SCAR_ECORRUPT, at, SECFMT "LZ4 frame ends early",
				       SECARG(x));
	}
}

static int decode_raw(struct scar_ckpt_reader *r, struct cursor *c, const struct sec_ctx *x,
		      uint64_t raw_len, unsigned char *dst, const struct ckpt_sink *sink,
		      struct scar_error *err)
{
	unsigned char cb[4];
	uint32_t crc = 0;
	uint64_t poff = c->random ? c->pos : r->off;
	int rc;

	if (dst) {
		if ((rc = in_read(r, c, dst, (size_t)raw_len, "section payload", err)))
			return rc;
		crc = scar_crc32c(0, dst, (size_t)raw_len);
	} else {
		if (grow_buf(&r->chunk, &r->chunk_cap, CKPT_IO_CHUNK))
			return rerr(r, err, SCAR_ENOMEM, SECFMT "out of memory", SECARG(x));
		for (uint64_t left = raw_len; left;) {
			size_t n = left < r->chunk_cap ? (size_t)left : r->chunk_cap;

			if ((rc = in_read(r, c, r->chunk, n, "section payload", err)))
				return rc;
			crc = scar_crc32c(crc, r->chunk, n);
			left -= n;
			if (sink && (rc = sink->put(sink->ctx, r->chunk, n)))
				return rerr_at(r, err, rc, poff, SECFMT "cannot store the rows",
					       SECARG(x));
		}
	}
	if ((rc = in_read(r, c, cb, 4, "section payload", err)))
		return rc;
	if (crc != ckpt_get32(cb))
		return rerr_at(r, err, SCAR_ECORRUPT, poff, SECFMT "payload checksum mismatch",
			       SECARG(x));
	return 0;
}

/*
 * Read and check the section header at the cursor, which must be section
 * number `no` = (t, s, nrows) of the metadata, then its payload.
 */
static int read_section(struct scar_ckpt_reader *r, struct cursor *c, uint64_t hoff, size_t no,
			size_t t, uint32_t s, uint64_t nrows, enum ckpt_decode mode,
			const struct ckpt_sink *sink, struct scar_ckpt_section *sec,
			struct scar_ckpt_section_info *sio, struct scar_error *err)
{
	const struct scar_ckpt_tensor_info *ti = &r->tinfo[t];
	struct sec_ctx x = { no, ti->name, s, hoff };
	struct scar_ckpt_section_info si;
	unsigned char h[CKPT_SEC_HDR_LEN];
	uint32_t flags;
	unsigned bcode;
	unsigned char *dst = NULL;
	int rc;

	if ((rc = in_read(r, c, h + 4, CKPT_SEC_HDR_LEN - 4, "section header", err)))
		return rc;
	memcpy(h, CKPT_SEC_MAGIC, 4);
	if (scar_crc32c(0, h, 44) != ckpt_get32(h + 44))
		return rerr_at(r, err, SCAR_ECORRUPT, x.hoff, SECFMT "header checksum mismatch",
			       SECARG(&x));
	si.tensor = ckpt_get32(h + 4);
	si.shard = ckpt_get32(h + 8);
	flags = ckpt_get32(h + 12);
	si.nrows = ckpt_get64(h + 16);
	si.raw_len = ckpt_get64(h + 24);
	si.stored_len = ckpt_get64(h + 32);
	si.offset = x.hoff;
	si.compressed = (flags & CKPT_SF_LZ4) != 0;
	si.shuffled = (flags & CKPT_SF_SHUFFLE) != 0;
	bcode = (flags & CKPT_SF_BCODE_MASK) >> CKPT_SF_BCODE_SHIFT;
	if (si.tensor != t || si.shard != s)
		return rerr_at(r, err, SCAR_ECORRUPT, x.hoff,
			       SECFMT "header says tensor %u shard %u", SECARG(&x), si.tensor, si.shard);
	if (si.nrows != nrows)
		return rerr_at(r, err, SCAR_ECORRUPT, x.hoff + 16,
			       SECFMT "%llu rows, the metadata says %llu", SECARG(&x),
			       (unsigned long long)si.nrows, (unsigned long long)nrows);
	/* A block size code or a shuffle without LZ4 means nothing in format
	 * 1.x: a flag combination from a later version, like an unknown bit. */
	if ((flags & ~CKPT_SF_KNOWN) || (!si.compressed && (bcode || si.shuffled)) ||
	    ckpt_get32(h + 40))
		return rerr_at(r, err, SCAR_EUNSUPPORTED, x.hoff + 12,
			       SECFMT "unknown flags 0x%x or reserved field set", SECARG(&x), flags);
	/* As a 1.2 reader would find it: a shuffle in a file that says less is
	 * unsupported, and so is one of 1-byte elements, which 1.3 leaves undefined. */
	if (si.shuffled && (r->info.minor < 3 || scar_dtype_size(ti->dtype) < 2))
		return rerr_at(r, err, SCAR_EUNSUPPORTED, x.hoff + 12,
			       SECFMT "byte shuffle (flag 0x8) %s", SECARG(&x),
			       r->info.minor < 3 ? "in a file below version 1.3" :
						   "of 1-byte elements");
	if (si.raw_len != nrows * r->row_bytes[t])
		return rerr_at(r, err, SCAR_ECORRUPT, x.hoff + 24,
			       SECFMT "raw length %llu is not rows times row size", SECARG(&x),
			       (unsigned long long)si.raw_len);
	if (si.compressed ? !si.raw_len || si.stored_len < CKPT_LZ4_MIN_FRAME ||
			    si.stored_len > scar_ckpt_lz4_bound(si.raw_len, bcode)
			  : bcode || si.stored_len != si.raw_len + 4)
		return rerr_at(r, err, SCAR_ECORRUPT, x.hoff + 32,
			       SECFMT "stored length %llu is impossible for %llu raw bytes",
			       SECARG(&x), (unsigned long long)si.stored_len,
			       (unsigned long long)si.raw_len);
	/* The smallest index and the trailer must still fit after the payload. */
	if (si.stored_len + 12 + CKPT_TRAILER_LEN > left_at(r, x.hoff + CKPT_SEC_HDR_LEN))
		return rerr_at(r, err, overrun(r), x.hoff + 32,
			       SECFMT "%llu payload bytes extend past the end of the file",
			       SECARG(&x), (unsigned long long)si.stored_len);
	if (si.raw_len > SIZE_MAX / 2)
		return rerr_at(r, err, SCAR_ENOMEM, x.hoff, SECFMT "too large for memory", SECARG(&x));
	if (mode == CKPT_DECODE_SKIP) {
		if ((rc = in_skip(r, c, si.stored_len, err)))
			return rc;
		*sio = si;
		if (sec) {
			memset(sec, 0, sizeof(*sec));
			sec->info = si;
			sec->tensor = ti;
		}
		return 0;
	}

	if (mode != CKPT_DECODE_DST)
		sink = NULL;
	if (sink && sink->dst_for)
		dst = sink->dst_for(sink->ctx, &si);
	if (dst || (sink && !sink->put))
		sink = NULL;
	if (!dst && !sink && mode != CKPT_DECODE_DISCARD) {
		mode = CKPT_DECODE_BUF;
		if (grow_buf(&r->raw, &r->raw_cap, (size_t)si.raw_len))
			return rerr_at(r, err, SCAR_ENOMEM, x.hoff,
				       SECFMT "out of memory for %llu bytes", SECARG(&x),
				       (unsigned long long)si.raw_len);
		dst = r->raw;
	}
	rc = si.compressed ? decode_lz4(r, c, &x, bcode, si.shuffled ? scar_dtype_size(ti->dtype) : 0,
					si.raw_len, si.stored_len, dst, sink, err)
			   : decode_raw(r, c, &x, si.raw_len, dst, sink, err);
	if (rc)
		return rc;
	if (mode == CKPT_DECODE_BUF && fill_rows(r, t, s, nrows))
		return rerr(r, err, SCAR_ENOMEM, "out of memory for a row list");
	*sio = si;
	if (sec) {
		sec->info = si;
		sec->tensor = ti;
		sec->rows = mode == CKPT_DECODE_BUF ? r->rows : NULL;
		sec->data = dst;
	}
	return 0;
}

/* Nothing follows the trailer (scar-ckpt(5)): a stream must end there, as a file must. */
static int stream_ends(struct scar_ckpt_reader *r, uint64_t end, struct scar_error *err)
{
	while (r->ipos == r->ilen && !r->eof) {
		ssize_t k = read_some(r, 0, err);

		if (k < 0)
			return (int)k;
		r->ipos = 0;
		r->ilen = (size_t)k;
	}
	if (r->ipos < r->ilen)
		return rerr_at(r, err, SCAR_ECORRUPT, end, "data after the trailer");
	return 0;
}

static int read_index_and_trailer(struct scar_ckpt_reader *r, struct scar_error *err)
{
	struct cursor c = { 0, 0 };
	uint64_t idx_off = r->off - 4, end;
	unsigned char h[CKPT_TRAILER_LEN], *e;
	size_t bytes;
	uint32_t crc, count;
	int rc;

	if ((rc = in_read(r, &c, h, 4, "index", err)))
		return rc;
	count = ckpt_get32(h);
	if (count != r->nseen)
		return rerr_at(r, err, SCAR_ECORRUPT, idx_off + 4,
			       "index lists %u sections, the file holds %zu", count, r->nseen);
	bytes = (size_t)count * CKPT_IDX_ENTRY_LEN;
	free(r->index);
	r->index = NULL;
	if (grow_buf(&r->chunk, &r->chunk_cap, bytes + 4))
		return rerr(r, err, SCAR_ENOMEM, "out of memory for the index");
	e = r->chunk;
	if ((rc = in_read(r, &c, e, bytes + 4, "index", err)))
		return rc;
	memcpy(h, CKPT_IDX_MAGIC, 4);
	ckpt_put32(h + 4, count);
	crc = scar_crc32c(scar_crc32c(0, h, 8), e, bytes);
	if (crc != ckpt_get32(e + bytes))
		return rerr_at(r, err, SCAR_ECORRUPT, idx_off, "index checksum mismatch");
	for (size_t i = 0; i < count; i++, e += CKPT_IDX_ENTRY_LEN) {
		const struct scar_ckpt_section_info *s = &r->seen[i];

		if (ckpt_get32(e) != s->tensor || ckpt_get32(e + 4) != s->shard ||
		    ckpt_get64(e + 8) != s->offset || ckpt_get64(e + 16) != s->nrows ||
		    ckpt_get64(e + 24) != s->raw_len || ckpt_get64(e + 32) != s->stored_len)
			return rerr_at(r, err, SCAR_ECORRUPT, idx_off + 8 + i * CKPT_IDX_ENTRY_LEN,
				       "index entry %zu disagrees with section %zu", i, i);
	}
	end = r->off + CKPT_TRAILER_LEN;
	if ((rc = in_read(r, &c, h, CKPT_TRAILER_LEN, "trailer", err)))
		return rc;
	if (memcmp(h + 24, CKPT_END_MAGIC, 8))
		return rerr_at(r, err, SCAR_ECORRUPT, end - 8, "bad trailer magic");
	if (scar_crc32c(0, h, 20) != ckpt_get32(h + 20))
		return rerr_at(r, err, SCAR_ECORRUPT, end - 12, "trailer checksum mismatch");
	if (ckpt_get64(h) != idx_off || ckpt_get64(h + 8) != end)
		return rerr_at(r, err, SCAR_ECORRUPT, end - CKPT_TRAILER_LEN,
			       "trailer disagrees with the index offset or file length");
	if (ckpt_get32(h + 16))
		return rerr_at(r, err, SCAR_EUNSUPPORTED, end - 16, "unknown trailer flags 0x%x",
			       ckpt_get32(h + 16));
	if (r->seekable && r->fsize != end)
		return rerr_at(r, err, SCAR_ECORRUPT, end, "%llu bytes of garbage after the trailer",
			       (unsigned long long)(r->fsize - end));
	if (!r->seekable && (rc = stream_ends(r, end, err)))
		return rc;
	/* The stream has shown the index is right: keep it for random access. */
	r->index = r->seen;
	r->nindex = r->nseen;
	r->seen = NULL;
	r->seen_cap = 0;
	r->have_index = 1;
	return 0;
}

int scar_ckpt_reader_next_mode(struct scar_ckpt_reader *r, struct scar_ckpt_section *sec,
			       enum ckpt_decode mode, const struct ckpt_sink *sink,
			       struct scar_error *err)
{
	struct cursor c = { 0, 0 };
	unsigned char m[4];
	uint64_t nrows = 0, hoff = r->off;
	int more, rc;

	if (r->failed)
		return rerr(r, err, SCAR_EINVAL, "reader already failed");
	if (r->done)
		return 0;
	more = next_expected(r, &r->cur_t, &r->cur_s, &nrows);
	if ((rc = in_read(r, &c, m, 4, more ? "section header" : "index", err)))
		goto fail;
	if (!more) {
		if (memcmp(m, CKPT_IDX_MAGIC, 4)) {
			rc = rerr_at(r, err, SCAR_ECORRUPT, hoff, "bad index magic");
			goto fail;
		}
		if ((rc = read_index_and_trailer(r, err)))
			goto fail;
		r->done = 1;
		return 0;
	}
	if (memcmp(m, CKPT_SEC_MAGIC, 4)) {
		rc = rerr_at(r, err, SCAR_ECORRUPT, hoff, SECFMT "%s", r->nseen,
			     r->tinfo[r->cur_t].name, r->cur_s,
			     memcmp(m, CKPT_IDX_MAGIC, 4) ? "bad section magic"
							  : "index found where the section belongs");
		goto fail;
	}
	if (r->nseen == r->seen_cap) {
		size_t nc = r->seen_cap ? 2 * r->seen_cap : 64;
		struct scar_ckpt_section_info *v = realloc(r->seen, nc * sizeof(*v));

		if (!v) {
			rc = rerr(r, err, SCAR_ENOMEM, "out of memory");
			goto fail;
		}
		r->seen = v;
		r->seen_cap = nc;
	}
	rc = read_section(r, &c, hoff, r->nseen, r->cur_t, r->cur_s, nrows, mode, sink, sec,
			  &r->seen[r->nseen], err);
	if (rc)
		goto fail;
	r->nseen++;
	r->cur_s++;
	return 1;
fail:
	r->failed = 1;
	return rc;
}

int scar_ckpt_reader_next(struct scar_ckpt_reader *r, struct scar_ckpt_section *sec,
			  struct scar_error *err)
{
	return scar_ckpt_reader_next_mode(r, sec, CKPT_DECODE_BUF, NULL, err);
}

/* ---- random access ---- */

int scar_ckpt_reader_index(struct scar_ckpt_reader *r,
			   const struct scar_ckpt_section_info **index, struct scar_error *err)
{
	unsigned char t[CKPT_TRAILER_LEN], *e = NULL;
	struct cursor c = { 1, 0 };
	uint64_t idx_off, tr_off, pos, nrows;
	size_t tt = 0, bytes;
	uint32_t ss = 0, count, crc;
	int rc;

	if (r->have_index) {
		*index = r->index;
		return (int)r->nindex;
	}
	if (!r->seekable)
		return rerr(r, err, SCAR_EUNSUPPORTED, "random access needs a regular file, not a pipe");
	if (r->fsize < r->meta_end + 12 + CKPT_TRAILER_LEN)
		return rerr_at(r, err, SCAR_ETRUNC, r->fsize, "file ends before the index");
	tr_off = r->fsize - CKPT_TRAILER_LEN;
	c.pos = tr_off;
	if ((rc = in_read(r, &c, t, CKPT_TRAILER_LEN, "trailer", err)))
		return rc;
	if (memcmp(t + 24, CKPT_END_MAGIC, 8))
		return rerr_at(r, err, SCAR_ETRUNC, tr_off, "no trailer at the end of the file");
	if (scar_crc32c(0, t, 20) != ckpt_get32(t + 20))
		return rerr_at(r, err, SCAR_ECORRUPT, tr_off + 20, "trailer checksum mismatch");
	if (ckpt_get64(t + 8) != r->fsize)
		return rerr_at(r, err, ckpt_get64(t + 8) > r->fsize ? SCAR_ETRUNC : SCAR_ECORRUPT,
			       tr_off + 8, "trailer says the file has %llu bytes, it has %llu",
			       (unsigned long long)ckpt_get64(t + 8), (unsigned long long)r->fsize);
	if (ckpt_get32(t + 16))
		return rerr_at(r, err, SCAR_EUNSUPPORTED, tr_off + 16, "unknown trailer flags");
	idx_off = ckpt_get64(t);
	if (idx_off < r->meta_end || idx_off > tr_off - 12)
		return rerr_at(r, err, SCAR_ECORRUPT, tr_off, "index offset out of range");
	c.pos = idx_off;
	if ((rc = in_read(r, &c, t, 8, "index", err)))
		return rc;
	count = ckpt_get32(t + 4);
	if (memcmp(t, CKPT_IDX_MAGIC, 4))
		return rerr_at(r, err, SCAR_ECORRUPT, idx_off, "bad index magic");
	if ((uint64_t)count * CKPT_IDX_ENTRY_LEN + 12 != tr_off - idx_off)
		return rerr_at(r, err, SCAR_ECORRUPT, idx_off + 4, "index size disagrees with the trailer");
	bytes = (size_t)count * CKPT_IDX_ENTRY_LEN;
	e = malloc(bytes + 4);
	r->index = calloc(count ? count : 1, sizeof(*r->index));
	if (!e || !r->index) {
		rc = rerr(r, err, SCAR_ENOMEM, "out of memory for the index");
		goto out;
	}
	if ((rc = in_read(r, &c, e, bytes + 4, "index", err)))
		goto out;
	crc = scar_crc32c(scar_crc32c(0, t, 8), e, bytes);
	if (crc != ckpt_get32(e + bytes)) {
		rc = rerr_at(r, err, SCAR_ECORRUPT, idx_off, "index checksum mismatch");
		goto out;
	}
	pos = r->meta_end;
	for (size_t i = 0; i < count; i++, ss++) {
		const unsigned char *p = e + i * CKPT_IDX_ENTRY_LEN;
		struct scar_ckpt_section_info *s = &r->index[i];

		s->tensor = ckpt_get32(p);
		s->shard = ckpt_get32(p + 4);
		s->offset = ckpt_get64(p + 8);
		s->nrows = ckpt_get64(p + 16);
		s->raw_len = ckpt_get64(p + 24);
		s->stored_len = ckpt_get64(p + 32);
		if (!next_expected(r, &tt, &ss, &nrows) || s->tensor != tt || s->shard != ss ||
		    s->nrows != nrows || s->offset != pos ||
		    s->raw_len != nrows * r->row_bytes[tt] ||
		    s->stored_len > idx_off - pos - CKPT_SEC_HDR_LEN) {
			rc = rerr_at(r, err, SCAR_ECORRUPT, idx_off + 8 + i * CKPT_IDX_ENTRY_LEN,
				     "index entry %zu disagrees with the metadata or the layout", i);
			goto out;
		}
		pos += CKPT_SEC_HDR_LEN + s->stored_len;
		/* Compression is in the section header, which is small: look. */
		c.pos = s->offset;
		if ((rc = in_read(r, &c, t, CKPT_SEC_HDR_LEN - 16, "section header", err)))
			goto out;
		if (memcmp(t, CKPT_SEC_MAGIC, 4) || ckpt_get32(t + 4) != s->tensor ||
		    ckpt_get32(t + 8) != s->shard) {
			rc = rerr_at(r, err, SCAR_ECORRUPT, s->offset,
				     "index entry %zu does not point at its section", i);
			goto out;
		}
		s->compressed = (ckpt_get32(t + 12) & CKPT_SF_LZ4) != 0;
		s->shuffled = (ckpt_get32(t + 12) & CKPT_SF_SHUFFLE) != 0;
	}
	if (next_expected(r, &tt, &ss, &nrows) || pos != idx_off) {
		rc = rerr_at(r, err, SCAR_ECORRUPT, idx_off, "index does not cover every section");
		goto out;
	}
	r->nindex = count;
	r->have_index = 1;
	rc = (int)count;
	*index = r->index;
out:
	free(e);
	if (rc < 0) {
		free(r->index);
		r->index = NULL;
	}
	return rc;
}

int scar_ckpt_reader_section(struct scar_ckpt_reader *r, uint32_t tensor, uint32_t shard,
			     struct scar_ckpt_section *sec, struct scar_error *err)
{
	const struct scar_ckpt_section_info *ix;
	struct cursor c = { 1, 0 };
	unsigned char m[4];
	size_t lo = 0, hi;
	int n = scar_ckpt_reader_index(r, &ix, err), rc;

	if (n < 0)
		return n;
	if (!r->seekable)
		return rerr(r, err, SCAR_EUNSUPPORTED, "random access needs a regular file, not a pipe");
	hi = (size_t)n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ix[mid].tensor < tensor || (ix[mid].tensor == tensor && ix[mid].shard < shard))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == (size_t)n || ix[lo].tensor != tensor || ix[lo].shard != shard)
		return scar_error_set_at(err, SCAR_ENOTFOUND, r->name, -1, -1,
					 "no section for tensor %u shard %u", tensor, shard);
	c.pos = ix[lo].offset;
	if ((rc = in_read(r, &c, m, 4, "section header", err)))
		return rc;
	if (memcmp(m, CKPT_SEC_MAGIC, 4))
		return rerr_at(r, err, SCAR_ECORRUPT, ix[lo].offset,
			       SECFMT "bad section magic", lo, r->tinfo[tensor].name, shard);
	return read_section(r, &c, ix[lo].offset, lo, tensor, shard, ix[lo].nrows,
			    CKPT_DECODE_BUF, NULL, sec, &r->index[lo], err);
}

/* ---- checking sections on other threads ---- */

struct scar_ckpt_reader *ckpt_reader_worker(const struct scar_ckpt_reader *r)
{
	struct scar_ckpt_reader *w = malloc(sizeof(*w));

	if (!w)
		return NULL;
	/* The file, name and tables are r's, only read; nothing of the stream. */
	*w = *r;
	w->own_fd = 0;
	w->ibuf = NULL;
	w->ipos = w->ilen = 0;
	w->seen = w->index = NULL;
	w->nseen = w->seen_cap = w->nindex = 0;
	w->have_index = 0;
	w->counts = NULL;
	w->raw = w->chunk = w->scratch = w->unshuf = NULL;
	w->raw_cap = w->chunk_cap = w->scratch_cap = w->unshuf_cap = 0;
	w->rows = NULL;
	w->rows_cap = 0;
	w->dctx = NULL;
	return w;
}

int ckpt_reader_check_at(struct scar_ckpt_reader *w, size_t no,
			 const struct scar_ckpt_section_info *si, struct scar_error *err)
{
	struct cursor c = { 1, si->offset + 4 };
	struct scar_ckpt_section_info out;

	return read_section(w, &c, si->offset, no, si->tensor, si->shard, si->nrows,
			    CKPT_DECODE_DISCARD, NULL, NULL, &out, err);
}

void ckpt_reader_worker_free(struct scar_ckpt_reader *w)
{
	if (!w)
		return;
	free(w->raw);
	free(w->chunk);
	free(w->scratch);
	free(w->unshuf);
	free(w->rows);
	LZ4F_freeDecompressionContext(w->dctx);
	free(w);
}

int ckpt_reader_restart(struct scar_ckpt_reader **r, struct scar_error *err)
{
	struct scar_ckpt_reader *old = *r;
	int fd = old->fd, own = old->own_fd, rc;
	char *name = old->name;

	*r = NULL;
	old->own_fd = 0;
	old->name = NULL;
	if (lseek(fd, (off_t)old->base, SEEK_SET) < 0)
		rc = scar_error_set_errno(err, errno, name, "cannot read '%s'", name);
	else
		rc = scar_ckpt_reader_open_fd(r, fd, name, err);
	scar_ckpt_reader_close(old);
	if (*r)
		(*r)->own_fd = own;
	else if (own)
		close(fd);
	free(name);
	return rc;
}

/* ---- whole files ---- */

struct load_ctx {
	struct scar_state *st;
	const struct scar_ckpt_reader *r;
	/* where the next decoded byte of a scattered section goes */
	const struct scar_ckpt_tensor_info *ti;
	unsigned char *data;
	size_t rb, inrow, k;
	uint64_t row, end;
	uint32_t s, S;
};

/* First row of shard s at or after a. */
static uint64_t shard_first(uint64_t a, uint32_t s, uint32_t S)
{
	return a + (s + S - a % S) % S;
}

/* Move to the first row of the shard at or after lc->row within the present ranges. */
static int load_settle(struct load_ctx *lc)
{
	while (lc->row >= lc->end) {
		if (++lc->k >= lc->ti->nranges)
			return -1;
		lc->row = shard_first(lc->ti->ranges[lc->k][0], lc->s, lc->S);
		lc->end = lc->ti->ranges[lc->k][0] + lc->ti->ranges[lc->k][1];
	}
	return 0;
}

static int load_next_row(struct load_ctx *lc)
{
	lc->row += lc->S;
	return load_settle(lc);
}

/*
 * A section that is a whole tensor decodes straight into it; any other is
 * scattered a block at a time, so no section-sized buffer is needed.
 */
static void *load_dst(void *vctx, const struct scar_ckpt_section_info *si)
{
	struct load_ctx *lc = vctx;
	const struct scar_ckpt_tensor_info *ti = &lc->r->tinfo[si->tensor];
	struct scar_tensor *t = lc->st->tensors[si->tensor];

	if (si->nrows == ti->rows)
		return t->data;
	lc->ti = ti;
	lc->data = t->data;
	lc->rb = scar_tensor_row_bytes(t);
	lc->inrow = 0;
	lc->k = 0;
	lc->s = si->shard;
	lc->S = ti->shards;
	lc->row = ti->nranges ? shard_first(ti->ranges[0][0], lc->s, lc->S) : 0;
	lc->end = ti->nranges ? ti->ranges[0][0] + ti->ranges[0][1] : 0;
	if (ti->nranges && load_settle(lc))
		lc->k = ti->nranges;
	return NULL;
}

static int load_put(void *vctx, const void *p, size_t n)
{
	struct load_ctx *lc = vctx;
	const unsigned char *src = p;

	while (n) {
		size_t m = lc->rb - lc->inrow;

		if (lc->k >= lc->ti->nranges)
			return SCAR_ECORRUPT;
		if (m > n)
			m = n;
		memcpy(lc->data + lc->row * lc->rb + lc->inrow, src, m);
		src += m;
		n -= m;
		lc->inrow += m;
		if (lc->inrow == lc->rb) {
			lc->inrow = 0;
			if (load_next_row(lc))
				lc->k = lc->ti->nranges;
		}
	}
	return 0;
}

/*
 * Large tensors are filled once, front to back: ask for transparent huge
 * pages, which saves most of the page faults (a hint; failure is harmless).
 */
static void hugepages(void *p, size_t n)
{
#ifdef MADV_HUGEPAGE
	const uintptr_t huge = (uintptr_t)2 << 20;
	uintptr_t a = ((uintptr_t)p + huge - 1) & ~(huge - 1), e = ((uintptr_t)p + n) & ~(huge - 1);

	if (n >= 4 * huge && e > a)
		(void)madvise((void *)a, e - a, MADV_HUGEPAGE);
#else
	(void)p;
	(void)n;
#endif
}

/* ---- the memory guard ---- */

static unsigned mem_factor = 1;

void scar_ckpt_set_memory_factor(unsigned factor)
{
	mem_factor = factor ? factor : 1;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

uint64_t scar_ckpt_memory_limit(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	uint64_t lim = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : UINT64_MAX;
	int which[] = { RLIMIT_AS, RLIMIT_DATA };
	struct rlimit rl;

	for (size_t i = 0; i < sizeof(which) / sizeof(which[0]); i++)
		if (getrlimit(which[i], &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
		    (uint64_t)rl.rlim_cur < lim)
			lim = (uint64_t)rl.rlim_cur;
	return lim;
}

/*
 * Loading makes every tensor dense: rows times row size, and a partial
 * tensor's present map, one byte per row, whatever the file holds. Refuse,
 * before allocating anything, what the tool (with its factor for the copies
 * it keeps) could not hold: a few hundred bytes of metadata must not be able
 * to make a tool allocate gigabytes it does not have.
 */
int scar_ckpt_reader_check_memory(const struct scar_ckpt_reader *r, struct scar_error *err)
{
	const struct scar_ckpt_info *in = &r->info;
	uint64_t total = 0, need, lim = scar_ckpt_memory_limit();

	for (size_t i = 0; i < in->ntensors; i++) {
		const struct scar_ckpt_tensor_info *ti = &in->tensors[i];

		total = add_sat(total, ti->rows * r->row_bytes[i]);
		if (ti->rows_present < ti->rows)
			total = add_sat(total, ti->rows);
	}
	need = total > UINT64_MAX / mem_factor ? UINT64_MAX : total * mem_factor;
	if (need > lim)
		return rerr(r, err, SCAR_ENOMEM,
			    "loading needs %llu bytes of memory (%llu bytes of tensors and present "
			    "maps%s%.0u), more than the %llu bytes available",
			    (unsigned long long)need, (unsigned long long)total,
			    mem_factor > 1 ? ", times " : "", mem_factor > 1 ? mem_factor : 0,
			    (unsigned long long)lim);
	return 0;
}

static int load_reader(struct scar_ckpt_reader *r, struct scar_state **out,
		       struct scar_error *err)
{
	const struct scar_ckpt_info *in = &r->info;
	struct scar_state *st = NULL;
	struct load_ctx lc = { 0 };
	struct ckpt_sink sink = { load_dst, load_put, &lc };
	uint64_t present_bytes = 0;
	int rc;

	/* The data must fit the file: LZ4 expands at most about 255 times. */
	for (size_t i = 0; i < in->ntensors; i++)
		present_bytes += in->tensors[i].rows_present * r->row_bytes[i];
	if (r->seekable && present_bytes / 256 > r->fsize + ((uint64_t)1 << 16))
		return rerr(r, err, SCAR_ECORRUPT,
			    "metadata declares %llu bytes of rows, more than a %llu-byte file can hold",
			    (unsigned long long)present_bytes, (unsigned long long)r->fsize);
	if ((rc = scar_ckpt_reader_check_memory(r, err)))
		return rc;
	if ((rc = scar_state_new(&st, in->model, err)))
		return rc;
	st->iteration = in->iteration;
	st->shards = in->shards;
	json_decref(st->config);
	json_decref(st->extra);
	st->config = json_deep_copy(in->config);
	st->extra = json_deep_copy(json_object_get(in->meta, "extra"));
	if (!st->config || !st->extra) {
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < in->ntensors; i++) {
		const struct scar_ckpt_tensor_info *ti = &in->tensors[i];
		struct scar_tensor *t;

		if ((rc = scar_tensor_new(&t, ti->name, ti->dtype, ti->role, ti->ndim, ti->shape, err))) {
			if (err)
				snprintf(err->file, sizeof(err->file), "%s", r->name);
			goto fail;
		}
		if (ti->rows_present < ti->rows) {
			if ((rc = scar_tensor_init_present(t, 0, err))) {
				scar_tensor_free(t);
				goto fail;
			}
			for (size_t k = 0; k < ti->nranges; k++)
				memset(t->present + ti->ranges[k][0], 1, (size_t)ti->ranges[k][1]);
		}
		hugepages(t->data, scar_tensor_bytes(t));
		if ((rc = scar_state_add(st, t, err)))
			goto fail;
	}
	lc.st = st;
	lc.r = r;
	while ((rc = scar_ckpt_reader_next_mode(r, NULL, CKPT_DECODE_DST, &sink, err)) > 0)
		;
	if (rc < 0)
		goto fail;
	*out = st;
	return 0;
fail:
	scar_state_free(st);
	return rc;
}

int scar_ckpt_load_fd(int fd, const char *name, struct scar_state **out,
		      struct scar_error *err)
{
	struct scar_ckpt_reader *r;
	int rc;

	*out = NULL;
	if ((rc = scar_ckpt_reader_open_fd(&r, fd, name, err)))
		return rc;
	rc = load_reader(r, out, err);
	scar_ckpt_reader_close(r);
	return rc;
}

int scar_ckpt_load(const char *path, struct scar_state **out, struct scar_error *err)
{
	struct scar_ckpt_reader *r;
	int rc;

	*out = NULL;
	if ((rc = scar_ckpt_reader_open(&r, path, err)))
		return rc;
	rc = load_reader(r, out, err);
	scar_ckpt_reader_close(r);
	return rc;
}

/* ---- checking a section without keeping it (added for scar-diff) ---- */

int scar_ckpt_reader_check_section(struct scar_ckpt_reader *r, size_t i, struct scar_error *err)
{
	const struct scar_ckpt_section_info *ix;
	struct cursor c = { 1, 0 };
	unsigned char m[4];
	int n = scar_ckpt_reader_index(r, &ix, err), rc;

	if (n < 0)
		return n;
	if (i >= (size_t)n)
		return scar_error_set_at(err, SCAR_ENOTFOUND, r->name, -1, -1,
					 "no section %zu", i);
	c.pos = ix[i].offset;
	if ((rc = in_read(r, &c, m, 4, "section header", err)))
		return rc;
	if (memcmp(m, CKPT_SEC_MAGIC, 4))
		return rerr_at(r, err, SCAR_ECORRUPT, ix[i].offset, SECFMT "bad section magic", i,
			       r->tinfo[ix[i].tensor].name, ix[i].shard);
	return read_section(r, &c, ix[i].offset, i, ix[i].tensor, ix[i].shard, ix[i].nrows,
			    CKPT_DECODE_DISCARD, NULL, NULL, &r->index[i], err);
}
