/* data_idx.c - IDX files (MNIST, Fashion-MNIST), gzip-compressed or plain. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "data_common.h"
#include "scar/data.h"
#include "scar/file.h"

#define IDX_MAX_DIMS 4
#define IDX_CHUNK (1u << 20)
/* Deflate cannot expand more than about 1032:1; a little slack for tiny files. */
#define IDX_GZ_RATIO 1032u
#define IDX_GZ_SLACK (1u << 16)
/* Without a file size to check against (a pipe), the most a header may declare. */
#define IDX_UNSIZED_MAX (256u << 20)

struct idx_file {
	const char *path;
	gzFile gz;
	uint64_t fsize;		/* 0 when not a regular file */
	int plain;
	uint32_t ndims;
	uint64_t dims[IDX_MAX_DIMS];
	uint64_t payload;	/* bytes after the header */
	uint64_t off;		/* uncompressed bytes read so far */
};

static int idx_fail(const struct idx_file *f, struct scar_error *err, int code, uint64_t off,
		    const char *what)
{
	return scar_error_set_at(err, code, f->path, (int64_t)off, -1, "%s%s", what,
				 f->plain ? "" : " (offset in the uncompressed data)");
}

/* Read exactly n bytes; a short read is SCAR_ETRUNC at the offset reached. */
static int idx_read(struct idx_file *f, void *buf, size_t n, struct scar_error *err)
{
	size_t got = 0;

	while (got < n) {
		unsigned want = n - got > IDX_CHUNK ? IDX_CHUNK : (unsigned)(n - got);
		int r = gzread(f->gz, (char *)buf + got, want);

		if (r < 0) {
			int zerr;
			const char *msg = gzerror(f->gz, &zerr);

			if (zerr == Z_ERRNO)
				return scar_error_set_errno(err, errno, f->path, "cannot read '%s'", f->path);
			return scar_error_set_at(err, SCAR_ECORRUPT, f->path, (int64_t)(f->off + got), -1,
						 "bad gzip data: %s (offset in the uncompressed data)", msg);
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	f->off += got;
	if (got < n) {
		int zerr;

		gzerror(f->gz, &zerr);
		return idx_fail(f, err, SCAR_ETRUNC, f->off,
				zerr == Z_BUF_ERROR ? "gzip stream ends early" : "file ends early");
	}
	return 0;
}

static void idx_close(struct idx_file *f)
{
	if (f->gz)
		gzclose(f->gz);
	f->gz = NULL;
}

/* Open, read and check the header: u8 data of min_dims..max_dims dimensions. */
static int idx_open(struct idx_file *f, const char *path, uint32_t min_dims, uint32_t max_dims,
		    struct scar_error *err)
{
	unsigned char h[4 * (IDX_MAX_DIMS + 1)];
	struct stat st;
	uint64_t limit;
	int fd, rc;

	memset(f, 0, sizeof(*f));
	f->path = path;
	/* never waits for a FIFO's writer: one without reads as empty */
	fd = scar_open_input(path, 0, err);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		if (st.st_size == 0) {
			close(fd);
			return scar_error_set_at(err, SCAR_EFORMAT, path, 0, -1,
						 "empty file, expected IDX data");
		}
		f->fsize = (uint64_t)st.st_size;
	}
	f->gz = gzdopen(fd, "rb");
	if (!f->gz) {
		close(fd);
		return scar_error_set(err, SCAR_ENOMEM, "out of memory opening '%s'", path);
	}
	gzbuffer(f->gz, 1u << 17);
	rc = idx_read(f, h, 4, err);
	f->plain = gzdirect(f->gz);
	if (rc < 0)
		return rc;
	if (h[0] != 0 || h[1] != 0)
		return scar_error_set_at(err, SCAR_EFORMAT, path, 0, -1,
					 "not an IDX file: magic %02x %02x %02x %02x", h[0], h[1], h[2], h[3]);
	if (h[2] != 0x08)
		return scar_error_set_at(err, SCAR_EUNSUPPORTED, path, 2, -1,
					 "IDX element type 0x%02x: only unsigned bytes (0x08) are supported",
					 h[2]);
	if (h[3] < min_dims || h[3] > max_dims) {
		if (min_dims == max_dims)
			return scar_error_set_at(err, SCAR_EFORMAT, path, 3, -1,
						 "IDX file of %u dimensions, expected %u", h[3], min_dims);
		return scar_error_set_at(err, SCAR_EFORMAT, path, 3, -1,
					 "IDX file of %u dimensions, expected %u to %u", h[3], min_dims,
					 max_dims);
	}
	f->ndims = h[3];
	if ((rc = idx_read(f, h + 4, 4 * f->ndims, err)) < 0)
		return rc;
	f->payload = 1;
	for (uint32_t i = 0; i < f->ndims; i++) {
		const unsigned char *b = h + 4 + 4 * i;

		f->dims[i] = (uint64_t)b[0] << 24 | (uint64_t)b[1] << 16 | (uint64_t)b[2] << 8 | b[3];
		if (f->dims[i] == 0)
			return scar_error_set_at(err, SCAR_ECORRUPT, path, 4 + 4 * i, -1,
						 "IDX dimension %u of %u is 0", i + 1, f->ndims);
		f->payload *= f->dims[i];	/* at most 2^32 * 2^32 * ...: checked below */
		if (f->payload > (uint64_t)1 << 40)
			return scar_error_set_at(err, SCAR_ECORRUPT, path, 4 + 4 * i, -1,
						 "IDX dimensions declare more than 2^40 bytes");
	}
	/* Check the declared size against what the file can hold before allocating. */
	if (f->plain && f->fsize) {
		uint64_t want = f->off + f->payload;

		if (f->fsize < want)
			return scar_error_set_at(err, SCAR_ETRUNC, path, (int64_t)f->fsize, -1,
						 "file ends early: the header declares %llu bytes, the file has %llu",
						 (unsigned long long)want, (unsigned long long)f->fsize);
		if (f->fsize > want)
			return scar_error_set_at(err, SCAR_ECORRUPT, path, (int64_t)want, -1,
						 "%llu bytes of trailing data after the declared end",
						 (unsigned long long)(f->fsize - want));
		return 0;
	}
	limit = f->fsize ? f->fsize * IDX_GZ_RATIO + IDX_GZ_SLACK : IDX_UNSIZED_MAX;
	if (f->payload > limit)
		return scar_error_set_at(err, SCAR_ECORRUPT, path, (int64_t)f->off, -1,
					 "the header declares %llu bytes: more than %s can hold",
					 (unsigned long long)f->payload,
					 f->fsize ? "this compressed file" : "the limit for unsized input");
	return 0;
}

/* After the payload: nothing more may follow. */
static int idx_finish(struct idx_file *f, struct scar_error *err)
{
	unsigned char b;
	int r = gzread(f->gz, &b, 1);

	if (r > 0)
		return idx_fail(f, err, SCAR_ECORRUPT, f->off, "trailing data after the declared end");
	if (r < 0) {
		int zerr;
		const char *msg = gzerror(f->gz, &zerr);

		if (zerr == Z_ERRNO)	/* a read error, not bad data */
			return scar_error_set_errno(err, errno, f->path, "cannot read '%s'", f->path);
		return scar_error_set_at(err, SCAR_ECORRUPT, f->path, (int64_t)f->off, -1,
					 "bad gzip data: %s (offset in the uncompressed data)", msg);
	}
	return 0;
}

static int idx_images(const char *path, struct scar_dense *ds, struct scar_error *err)
{
	struct idx_file f;
	unsigned char *buf = NULL;
	float tab[256];
	uint64_t done = 0;
	int rc;

	if ((rc = idx_open(&f, path, 2, IDX_MAX_DIMS, err)) < 0)
		goto out;
	ds->n = f.dims[0];
	ds->d = f.payload / f.dims[0];
	ds->x = scar_data_alloc_big(f.payload * sizeof(float));
	buf = malloc(IDX_CHUNK);
	if (!ds->x || !buf) {
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory reading '%s'", path);
		goto out;
	}
	for (int i = 0; i < 256; i++)
		tab[i] = (float)(i / 255.0);
	while (done < f.payload) {
		size_t n = f.payload - done > IDX_CHUNK ? IDX_CHUNK : (size_t)(f.payload - done);
		float *x = ds->x + done;

		if ((rc = idx_read(&f, buf, n, err)) < 0)
			goto out;
		for (size_t i = 0; i < n; i++)
			x[i] = tab[buf[i]];
		done += n;
	}
	rc = idx_finish(&f, err);
out:
	free(buf);
	idx_close(&f);
	return rc;
}

static int idx_labels(const char *path, struct scar_dense *ds, struct scar_error *err)
{
	struct idx_file f;
	unsigned char *buf = NULL;
	uint32_t max = 0;
	int rc;

	if ((rc = idx_open(&f, path, 1, 1, err)) < 0)
		goto out;
	if (f.dims[0] != ds->n) {
		rc = scar_error_set_at(err, SCAR_EMISMATCH, path, 4, -1,
				       "%llu labels for %llu images", (unsigned long long)f.dims[0],
				       (unsigned long long)ds->n);
		goto out;
	}
	buf = malloc(f.payload);
	ds->label = malloc(f.payload * sizeof(*ds->label));
	if (!buf || !ds->label) {
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory reading '%s'", path);
		goto out;
	}
	if ((rc = idx_read(&f, buf, f.payload, err)) < 0)
		goto out;
	for (uint64_t i = 0; i < f.payload; i++) {
		ds->label[i] = buf[i];
		if (buf[i] > max)
			max = buf[i];
	}
	ds->classes = max + 1;
	rc = idx_finish(&f, err);
out:
	free(buf);
	idx_close(&f);
	return rc;
}

int scar_idx_load(const char *images, const char *labels, struct scar_dense **out,
		  struct scar_error *err)
{
	struct scar_dense *ds;
	int rc;

	*out = NULL;
	ds = calloc(1, sizeof(*ds));
	if (!ds)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	if ((rc = idx_images(images, ds, err)) < 0 ||
	    (labels && (rc = idx_labels(labels, ds, err)) < 0)) {
		scar_dense_free(ds);
		return rc;
	}
	*out = ds;
	return 0;
}
