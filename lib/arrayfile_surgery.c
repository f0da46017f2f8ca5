/*
 * arrayfile_surgery.c - partial recovery of a foreign snapshot (safetensors
 * or .npy) byte for byte: the rows of lost shards come from a donor
 * snapshot, or are zeroed, and every other byte of the file - its header,
 * __metadata__, the other rows, dtypes the toolkit does not compute with
 * (f16, bf16, i8, ...) - is kept. So a PyTorch state_dict saved as
 * safetensors goes through scar-inject and loads back with
 * load_state_dict, untouched tensors bit-identical. The headers are read by
 * the one reader (scar_arrayfile_open); this file only moves bytes. A
 * Hugging Face sharded snapshot (a directory of safetensors files and
 * their index) goes through file by file into a directory of the same
 * layout.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arrayfile_internal.h"
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

/*
 * Does donor fd hold tensor t (name, or for a .npy donor its one array) in
 * the same layout? Its index in *j; else SCAR_EMISMATCH naming t.
 */
static int donor_match(const struct scar_array_info *t, struct scar_arrayfile *fd,
		       const char *donor, const char *in, long *j, struct scar_error *err)
{
	const struct scar_array_info *u;

	/* A .npy file is one array, named after the file: it matches whatever its name. */
	*j = scar_arrayfile_format(fd) == SCAR_ARRAY_NPY ? 0 : scar_arrayfile_find(fd, t->name);
	u = *j >= 0 ? scar_arrayfile_tensor(fd, (size_t)*j) : NULL;
	if (!u || !same_layout(t, u))
		return scar_error_set_at(err, SCAR_EMISMATCH, donor, -1, -1,
					 u ? "tensor '%s' of '%s' has another dtype or shape than in '%s'"
					   : "tensor '%s' is not in '%s' (it is in '%s')",
					 t->name, donor, in);
	return 0;
}

/*
 * The lost rows of tensor t, whose stored bytes are at buf + t->offset
 * (len bytes in all, checked), become donor tensor j's (read as stored)
 * or zero. *touched counts the rows.
 */
static int patch(const struct scar_array_info *t, unsigned char *buf, uint64_t len,
		 const char *path, struct scar_arrayfile *fd, long j, const uint8_t *lost,
		 uint32_t shards, uint64_t *touched, struct scar_error *err)
{
	uint64_t nrows = t->ndim ? t->shape[0] : 1, bytes = elements(t) * t->stored_size, rb;
	int rc;

	*touched = 0;
	/* The reader checked that the data lies in the file; re-check against what was read. */
	if (t->offset > len || bytes > len - t->offset)
		return scar_error_set_at(err, SCAR_ETRUNC, path, -1, -1,
					 "'%s' changed while read (tensor '%s')", path, t->name);
	if (!nrows || !bytes)
		return 0;	/* no row, or rows of no byte: nothing to replace */
	rb = bytes / nrows;
	for (uint64_t r = 0; r < nrows; r++) {
		unsigned char *row = buf + t->offset + r * rb;

		if (!lost[scar_shard_of_row(r, shards)])
			continue;
		if (fd && (rc = scar_arrayfile_read_raw(fd, (size_t)j, r * rb, row, rb, err)) < 0)
			return rc;
		if (!fd)
			memset(row, 0, rb);
		(*touched)++;
	}
	return 0;
}

/* The bytes of the index file named by an absolute or relative path: its last component. */
static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/*
 * A sharded snapshot: every tensor checked against the donor first, then
 * file by file into directory out (made if missing), each replaced
 * atomically, the index last. out being in's own directory is in-place:
 * only the files with a lost row are replaced, and the index is kept.
 */
static int lose_rows_sharded(const char *in, const char *donor, const char *tensor,
			     const uint8_t *lost, uint32_t shards, const char *out, int sync,
			     uint64_t *rows, uint64_t *tensors, struct scar_error *err)
{
	struct scar_arrayfile *fi = NULL, *fd = NULL;
	const struct scar_hf_index *ix;
	unsigned char *buf = NULL;
	long *dj = NULL;
	struct stat so, sd;
	struct blob b;
	size_t n;
	int rc, found = 0, inplace;

	*rows = *tensors = 0;
	if (!out || !strcmp(out, "-"))
		return scar_error_set(err, SCAR_EINVAL, "'%s' is a sharded snapshot: its output is a "
				      "directory, not standard output", in);
	if ((rc = scar_arrayfile_open(&fi, in, err)) < 0 ||
	    (donor && (rc = scar_arrayfile_open(&fd, donor, err)) < 0))
		goto out;
	ix = scar_arrayfile_index(fi);
	n = scar_arrayfile_count(fi);
	if (fd && scar_arrayfile_format(fd) == SCAR_ARRAY_NPY) {
		rc = scar_error_set_at(err, SCAR_EMISMATCH, donor, -1, -1,
				       "'%s' is not in the format of '%s'", donor, in);
		goto out;
	}
	if (!(dj = calloc(n ? n : 1, sizeof(*dj)))) {
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const struct scar_array_info *t = scar_arrayfile_tensor(fi, i);

		dj[i] = -1;
		if (tensor && strcmp(tensor, t->name))
			continue;
		found = 1;
		if (fd && (rc = donor_match(t, fd, donor, in, &dj[i], err)) < 0)
			goto out;
	}
	if (tensor && !found) {
		rc = scar_error_set_at(err, SCAR_ENOTFOUND, in, -1, -1, "'%s' has no tensor '%s'", in,
				       tensor);
		goto out;
	}
	if (mkdir(out, 0777) < 0 && errno != EEXIST) {
		rc = scar_error_set_errno(err, errno, out, "cannot make directory '%s'", out);
		goto out;
	}
	if (stat(out, &so) < 0 || !S_ISDIR(so.st_mode)) {
		rc = scar_error_set_at(err, SCAR_EINVAL, out, -1, -1, "'%s' is not a directory: the "
				       "output of sharded snapshot '%s' is one", out, in);
		goto out;
	}
	if (stat(ix->dir, &sd) < 0) {
		rc = scar_error_set_errno(err, errno, ix->dir, "cannot open '%s'", ix->dir);
		goto out;
	}
	inplace = so.st_dev == sd.st_dev && so.st_ino == sd.st_ino;
	for (size_t k = 0; k < ix->nfiles; k++) {
		uint64_t len, touched = 0;
		char *path;

		if ((rc = scar_arrayfile_file_bytes(fi, k, &buf, &len, err)) < 0)
			goto out;
		for (size_t i = 0; i < n; i++) {
			const struct scar_array_info *t = scar_arrayfile_tensor(fi, i);
			uint64_t tr;

			if (scar_arrayfile_file_of(fi, i) != k || (tensor && strcmp(tensor, t->name)))
				continue;
			if ((rc = patch(t, buf, len, ix->files[k], fd, dj[i], lost, shards, &tr,
					err)) < 0)
				goto out;
			*rows += tr;
			*tensors += tr > 0;
			touched += tr;
		}
		if (touched || !inplace) {
			if (!(path = scar_hf_path_join(out, ix->files[k]))) {
				rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
				goto out;
			}
			b.p = buf;
			b.n = len;
			rc = scar_file_replace(path, sync ? SCAR_REPLACE_SYNC : 0, write_blob, &b, err);
			free(path);
			if (rc < 0)
				goto out;
		}
		free(buf);
		buf = NULL;
	}
	if (!inplace) {
		char *path = scar_hf_path_join(out, base_name(ix->path));

		if (!path) {
			rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
			goto out;
		}
		b.p = ix->text;
		b.n = ix->len;
		rc = scar_file_replace(path, sync ? SCAR_REPLACE_SYNC : 0, write_blob, &b, err);
		free(path);
	}
out:
	scar_arrayfile_close(fi);
	scar_arrayfile_close(fd);
	free(buf);
	free(dj);
	return rc;
}

int scar_array_lose_rows(const char *in, const char *donor, const char *tensor,
			 const uint8_t *lost, uint32_t shards, const char *out, int sync,
			 uint64_t *rows, uint64_t *tensors, struct scar_error *err)
{
	struct scar_arrayfile *fi = NULL, *fd = NULL;
	unsigned char *buf = NULL;
	uint64_t len = 0;
	struct blob b;
	struct stat before, after;
	int rc, found = 0, dfmt;

	memset(&after, 0, sizeof(after));
	*rows = *tensors = 0;
	if (shards < 1)
		return scar_error_set(err, SCAR_EINVAL, "shards must be at least 1");
	if (scar_array_is_sharded(in))
		return lose_rows_sharded(in, donor, tensor, lost, shards, out, sync, rows, tensors,
					 err);
	/*
	 * The file is parsed by the reader, then read whole: the same file
	 * (device, inode, size, modification time) before and after, or the
	 * offsets parsed would be applied to other bytes. The donor's rows are
	 * read through the descriptor its header was parsed from.
	 */
	if ((rc = same_file(in, &before, NULL, err)) || (rc = scar_arrayfile_open(&fi, in, err)) ||
	    (rc = read_whole(in, &buf, &len, &after, err)) ||
	    (rc = same_file(in, &before, &after, err)))
		goto out;
	if (donor && (rc = scar_arrayfile_open(&fd, donor, err)))
		goto out;
	/* A safetensors file takes its rows from a sharded snapshot as from a file. */
	dfmt = fd ? scar_arrayfile_format(fd) : 0;
	if (dfmt == SCAR_ARRAY_SAFETENSORS_INDEX)
		dfmt = SCAR_ARRAY_SAFETENSORS;
	if (fd && dfmt != (int)scar_arrayfile_format(fi)) {
		rc = scar_error_set_at(err, SCAR_EMISMATCH, donor, -1, -1,
				       "'%s' is not in the format of '%s'", donor, in);
		goto out;
	}
	for (size_t i = 0; i < scar_arrayfile_count(fi); i++) {
		const struct scar_array_info *t = scar_arrayfile_tensor(fi, i);
		uint64_t touched;
		long j = -1;

		if (tensor && strcmp(tensor, t->name))
			continue;
		found = 1;
		if ((fd && (rc = donor_match(t, fd, donor, in, &j, err)) < 0) ||
		    (rc = patch(t, buf, len, in, fd, j, lost, shards, &touched, err)) < 0)
			goto out;
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
	return rc;
}
