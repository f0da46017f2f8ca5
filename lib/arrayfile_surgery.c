/*
 * arrayfile_surgery.c - partial recovery of a foreign snapshot (safetensors
 * or .npy) byte for byte: the rows of lost shards come from a donor
 * snapshot, or are zeroed, and every other byte of the file - its header,
 * __metadata__, the other rows, dtypes the toolkit does not compute with
 * (f16, bf16, i8, ...) - is kept. So a PyTorch state_dict saved as
 * safetensors goes through scar-inject and loads back with
 * load_state_dict, untouched tensors bit-identical. The headers are read by
 * the one reader (scar_arrayfile_open); this file only moves bytes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scar/arrayfile.h"
#include "scar/file.h"
#include "scar/shard.h"

/*
 * The whole of a regular file, whose size the reader's header check has
 * bounded; *id gets what identifies the version read.
 */
static int read_whole(const char *path, unsigned char **buf, uint64_t *len, struct stat *id,
		      struct scar_error *err)
{
	struct stat sb;
	int fd = scar_open_input(path, 0, err), rc;

	*buf = NULL;
	if (fd < 0)
		return fd;
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		close(fd);
		return scar_error_set_at(err, SCAR_EINVAL, path, -1, -1,
					 "'%s' is not a regular file: a snapshot to recover is read twice",
					 path);
	}
	*id = sb;
	*len = (uint64_t)sb.st_size;
	*buf = malloc(*len ? *len : 1);
	if (!*buf) {
		close(fd);
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	}
	rc = scar_read_full(fd, *buf, *len);
	close(fd);
	if (rc != 1) {
		free(*buf);
		*buf = NULL;
		return rc < 0 ? scar_error_set_errno(err, -rc, path, "cannot read '%s'", path) :
			scar_error_set_at(err, SCAR_ETRUNC, path, -1, -1, "'%s' changed while read", path);
	}
	return 0;
}

/* stat path into *before (after NULL), or check that *after is the file *before was. */
static int same_file(const char *path, struct stat *before, const struct stat *after,
		     struct scar_error *err)
{
	if (!after)
		return stat(path, before) == 0 ? 0 :
			scar_error_set_errno(err, errno, path, "cannot open '%s'", path);
	if (before->st_dev != after->st_dev || before->st_ino != after->st_ino ||
	    before->st_size != after->st_size || before->st_mtim.tv_sec != after->st_mtim.tv_sec ||
	    before->st_mtim.tv_nsec != after->st_mtim.tv_nsec)
		return scar_error_set_at(err, SCAR_ETRUNC, path, -1, -1,
					 "'%s' changed while read", path);
	return 0;
}

static uint64_t elements(const struct scar_array_info *t)
{
	uint64_t n = 1;

	for (int d = 0; d < t->ndim; d++)
		n *= t->shape[d];
	return n;
}

static int same_layout(const struct scar_array_info *a, const struct scar_array_info *b)
{
	if (a->dtype != b->dtype || a->stored_size != b->stored_size || a->swap != b->swap ||
	    a->ndim != b->ndim || (a->stored == NULL) != (b->stored == NULL) ||
	    (a->stored && strcmp(a->stored, b->stored)))
		return 0;
	for (int d = 0; d < a->ndim; d++)
		if (a->shape[d] != b->shape[d])
			return 0;
	return 1;
}

struct blob {
	const unsigned char *p;
	uint64_t n;
};

static int write_blob(int fd, const char *name, void *ctx, struct scar_error *err)
{
	const struct blob *b = ctx;

	return scar_write_all(fd, b->p, b->n, name, err);
}

int scar_array_lose_rows(const char *in, const char *donor, const char *tensor,
			 const uint8_t *lost, uint32_t shards, const char *out, int sync,
			 uint64_t *rows, uint64_t *tensors, struct scar_error *err)
{
	struct scar_arrayfile *fi = NULL, *fd = NULL;
	unsigned char *buf = NULL, *dbuf = NULL;
	uint64_t len = 0, dlen = 0;
	struct blob b;
	struct stat before, after;
	int rc, found = 0;

	*rows = *tensors = 0;
	if (shards < 1)
		return scar_error_set(err, SCAR_EINVAL, "shards must be at least 1");
	/*
	 * Each file is parsed by the reader, then read whole: the same file
	 * (device, inode, size, modification time) before and after, or the
	 * offsets parsed would be applied to other bytes.
	 */
	if ((rc = same_file(in, &before, NULL, err)) || (rc = scar_arrayfile_open(&fi, in, err)) ||
	    (rc = read_whole(in, &buf, &len, &after, err)) ||
	    (rc = same_file(in, &before, &after, err)))
		goto out;
	if (donor && ((rc = same_file(donor, &before, NULL, err)) ||
		      (rc = scar_arrayfile_open(&fd, donor, err)) ||
		      (rc = read_whole(donor, &dbuf, &dlen, &after, err)) ||
		      (rc = same_file(donor, &before, &after, err))))
		goto out;
	if (fd && scar_arrayfile_format(fd) != scar_arrayfile_format(fi)) {
		rc = scar_error_set_at(err, SCAR_EMISMATCH, donor, -1, -1,
				       "'%s' is not in the format of '%s'", donor, in);
		goto out;
	}
	for (size_t i = 0; i < scar_arrayfile_count(fi); i++) {
		const struct scar_array_info *t = scar_arrayfile_tensor(fi, i), *u = NULL;
		uint64_t n = elements(t), nrows = t->ndim ? t->shape[0] : 1, rb;
		uint64_t bytes = n * t->stored_size, touched = 0;

		if (tensor && strcmp(tensor, t->name))
			continue;
		found = 1;
		/* The reader checked that the data lies in the file; re-check against what was read. */
		if (t->offset > len || bytes > len - t->offset) {
			rc = scar_error_set_at(err, SCAR_ETRUNC, in, -1, -1,
					       "'%s' changed while read (tensor '%s')", in, t->name);
			goto out;
		}
		if (fd) {
			/* A .npy file is one array, named after the file: it matches whatever its name. */
			long j = scar_arrayfile_format(fd) == SCAR_ARRAY_NPY ? 0 :
				scar_arrayfile_find(fd, t->name);

			u = j >= 0 ? scar_arrayfile_tensor(fd, (size_t)j) : NULL;
			if (!u || !same_layout(t, u)) {
				rc = scar_error_set_at(err, SCAR_EMISMATCH, donor, -1, -1,
						       u ? "tensor '%s' of '%s' has another dtype or shape than in '%s'"
							 : "tensor '%s' is not in '%s' (it is in '%s')",
						       t->name, donor, in);
				goto out;
			}
			if (u->offset > dlen || bytes > dlen - u->offset) {
				rc = scar_error_set_at(err, SCAR_ETRUNC, donor, -1, -1,
						       "'%s' changed while read (tensor '%s')", donor,
						       t->name);
				goto out;
			}
		}
		if (!nrows || !bytes)
			continue;	/* no row, or rows of no byte: nothing to replace */
		rb = bytes / nrows;
		for (uint64_t r = 0; r < nrows; r++) {
			if (!lost[scar_shard_of_row(r, shards)])
				continue;
			if (u)
				memcpy(buf + t->offset + r * rb, dbuf + u->offset + r * rb, rb);
			else
				memset(buf + t->offset + r * rb, 0, rb);
			touched++;
		}
		*rows += touched;
		*tensors += touched > 0;
	}
	if (tensor && !found) {
		rc = scar_error_set_at(err, SCAR_ENOTFOUND, in, -1, -1, "'%s' has no tensor '%s'", in,
				       tensor);
		goto out;
	}
	b.p = buf;
	b.n = len;
	rc = scar_file_replace(out, sync ? SCAR_REPLACE_SYNC : 0, write_blob, &b, err);
out:
	scar_arrayfile_close(fi);
	scar_arrayfile_close(fd);
	free(buf);
	free(dbuf);
	return rc;
}
