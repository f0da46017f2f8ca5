/*
 * dist_common.c - the MPI-free half of distributed training (scar/dist.h):
 * the data partition, the fixed reduction order, and distributed
 * checkpoints (rank files plus a manifest written last).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scar/ckpt.h"
#include "scar/dist.h"
#include "scar/file.h"
#include "scar/shard.h"
#include "scar/store.h"
#include "scar/train.h"
#include "store_internal.h"

uint64_t scar_dist_part_lo(uint64_t n, uint32_t R, uint32_t P)
{
	uint64_t q = n / P, rem = n % P;

	return (uint64_t)R * q + (R < rem ? R : rem);
}

double scar_dist_sum_ordered(const double *v, uint32_t P)
{
	double s;

	if (!P)
		return 0;
	s = v[0];
	for (uint32_t i = 1; i < P; i++)
		s += v[i];
	return s;
}

int scar_dist_is_manifest(const char *path)
{
	size_t n = strlen(path);

	return n > 9 && strcmp(path + n - 9, ".manifest") == 0;
}

void scar_dist_manifest_free(struct scar_dist_manifest *m)
{
	if (!m)
		return;
	free(m->files);
	free(m);
}

/* Directory part of path into buf ("." when there is none). */
static void dir_of(const char *path, char *buf, size_t len)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		snprintf(buf, len, ".");
	else if (slash == path)
		snprintf(buf, len, "/");
	else
		snprintf(buf, len, "%.*s", (int)(slash - path), path);
}

/* The manifest's last bytes: ,"checksum":"HHHHHHHH"}\n (see scar-ckpt(5) MANIFESTS). */
#define SUM_HEAD ",\"checksum\":\""
#define SUM_LEN (sizeof(SUM_HEAD) - 1 + 8 + 3)

struct manifest_job {
	const char *text;
	size_t len;
};

static int manifest_job_run(int fd, const char *name, void *ctx, struct scar_error *err)
{
	struct manifest_job *j = ctx;

	return scar_write_all(fd, j->text, j->len, name, err);
}

int scar_dist_manifest_write(const char *path, const struct scar_dist_manifest *m, int sync,
			     struct scar_error *err)
{
	json_t *files = json_array(), *obj = NULL;
	char *text = NULL, *full = NULL;
	struct manifest_job job;
	int rc = 0;
	size_t len;

	if (!files)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	for (size_t i = 0; i < m->nfiles; i++) {
		const struct scar_dist_file *f = &m->files[i];

		if (json_array_append_new(files, json_pack("{s:I, s:s, s:I, s:I}", "rank",
							   (json_int_t)f->rank, "name", f->name,
							   "size", (json_int_t)f->size,
							   "crc32c", (json_int_t)f->crc32c))) {
			json_decref(files);
			return scar_error_set(err, SCAR_ENOMEM, "out of memory");
		}
	}
	obj = json_pack("{s:s, s:i, s:s, s:I, s:I, s:I, s:I, s:s, s:o}", "format",
			SCAR_DIST_MANIFEST_FORMAT, "version", SCAR_DIST_MANIFEST_VERSION,
			"model", m->model, "iteration", (json_int_t)m->iteration,
			"clock", (json_int_t)m->clock, "ranks", (json_int_t)m->ranks,
			"shards", (json_int_t)m->shards, "kind", m->partial ? "partial" : "full",
			"files", files);
	if (!obj || !(text = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER))) {
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
		goto out;
	}
	/* The object without its closing brace, then the checksum of exactly those bytes. */
	len = strlen(text) - 1;
	if (!(full = malloc(len + SUM_LEN + 1))) {
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
		goto out;
	}
	memcpy(full, text, len);
	snprintf(full + len, SUM_LEN + 1, SUM_HEAD "%08lx\"}\n",
		 (unsigned long)scar_crc32c(0, full, len));
	len += SUM_LEN;
	/* .NAME.tmp.XXXXXX beside path, synced and renamed into place (scar/file.h). */
	job.text = full;
	job.len = len;
	rc = scar_file_replace(path, sync ? SCAR_REPLACE_SYNC : 0, manifest_job_run, &job, err);
out:
	free(text);
	free(full);
	/* json_pack took files with "o", even when it failed (jansson >= 2.12) */
	json_decref(obj);
	return rc;
}

static int get_uint(const json_t *o, const char *key, uint64_t max, uint64_t *out)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (uint64_t)json_integer_value(v) > max)
		return -1;
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

/* Nonzero when every member of o is one of keys (NULL-terminated). */
static int only_keys(json_t *o, const char *const *keys)
{
	const char *k;
	json_t *v;

	json_object_foreach(o, k, v) {
		size_t i;

		for (i = 0; keys[i] && strcmp(keys[i], k); i++)
			;
		if (!keys[i])
			return 0;
	}
	return 1;
}

/*
 * A rank file's name: one plain name in the manifest's directory. No '/',
 * no leading '.' (so neither "." nor ".." nor a hidden temporary), no
 * control characters, and a checkpoint's suffix.
 */
static int good_file_name(const char *s)
{
	size_t n = strlen(s);

	if (n < 6 || s[0] == '.' || strcmp(s + n - 5, ".ckpt"))
		return 0;
	for (const unsigned char *c = (const unsigned char *)s; *c; c++)
		if (*c == '/' || *c < 0x20 || *c == 0x7f)
			return 0;
	return 1;
}

/* The whole of a regular file of at most SCAR_DIST_MANIFEST_MAX bytes, NUL-terminated. */
static int slurp(const char *path, int flags, char **out, size_t *len, struct scar_error *err)
{
	char *buf = NULL;
	size_t n = 0, cap = 4096;
	int fd, rc = 0;

	*out = NULL;
	if ((fd = scar_open_input(path, flags | SCAR_OPEN_REGULAR, err)) < 0)
		return fd;
	for (;;) {
		ssize_t r;

		if (n + 1 >= cap || !buf) {
			char *nb;

			if (buf)
				cap *= 2;
			if (!(nb = realloc(buf, cap))) {
				rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
				break;
			}
			buf = nb;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = scar_error_set_errno(err, errno, path, "cannot read '%s'", path);
			break;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > SCAR_DIST_MANIFEST_MAX) {
			rc = scar_error_set_at(err, SCAR_EFORMAT, path, -1, -1,
					       "manifest: larger than %u bytes", SCAR_DIST_MANIFEST_MAX);
			break;
		}
	}
	close(fd);
	if (rc) {
		free(buf);
		return rc;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

/* Why bytes b[0..n) do not end in a checksum member: an old manifest, a newer one, or damage. */
static int no_checksum(const char *path, const char *b, size_t n, struct scar_error *err)
{
	json_error_t je;
	json_t *root = json_loadb(b, n, 0, &je);
	const char *fmt = json_string_value(json_object_get(root, "format"));
	uint64_t v = 0;
	int rc;

	if (!root)
		return scar_error_set_at(err, SCAR_EFORMAT, path, -1, je.line, "not a manifest: %s",
					 je.text);
	if (!fmt || strcmp(fmt, SCAR_DIST_MANIFEST_FORMAT))
		rc = scar_error_set_at(err, SCAR_EFORMAT, path, -1, -1,
				       "manifest: format is not '" SCAR_DIST_MANIFEST_FORMAT "'");
	else if (get_uint(root, "version", INT32_MAX, &v) == 0 && v < 2)
		rc = scar_error_set_at(err, SCAR_EFORMAT, path, -1, -1,
				       "manifest version %llu has no checksum: written by an older scar, "
				       "it is no longer read (see scar-ckpt(5), MANIFESTS)",
				       (unsigned long long)v);
	else if (v > SCAR_DIST_MANIFEST_VERSION)
		rc = scar_error_set_at(err, SCAR_EVERSION, path, -1, -1,
				       "manifest version %llu is newer than %d", (unsigned long long)v,
				       SCAR_DIST_MANIFEST_VERSION);
	else
		rc = scar_error_set_at(err, SCAR_ECORRUPT, path, -1, -1,
				       "manifest does not end in its checksum member");
	json_decref(root);
	return rc;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int parse_manifest(const char *path, const char *b, size_t n,
			  struct scar_dist_manifest **out, struct scar_error *err)
{
	static const char *const top_keys[] = { "format", "version", "model", "iteration", "clock",
		"ranks", "shards", "kind", "files", "checksum", NULL };
	static const char *const file_keys[] = { "rank", "name", "size", "crc32c", NULL };
	const size_t head = sizeof(SUM_HEAD) - 1;
	struct scar_dist_manifest *m = NULL;
	unsigned long want = 0;
	unsigned char *seen = NULL;
	const char **byname = NULL;
	json_error_t je;
	json_t *root, *files, *v;
	const char *s;
	uint32_t got;
	uint64_t u;
	size_t i;
	int rc = 0;

	*out = NULL;
	/*
	 * The checksum first, over the exact bytes: every flip of a byte
	 * before the member changes the CRC; every flip inside it breaks its
	 * fixed form or changes the (lowercase hex) value it states.
	 */
	if (n < SUM_LEN + 2 || memcmp(b + n - SUM_LEN, SUM_HEAD, head) ||
	    memcmp(b + n - 3, "\"}\n", 3))
		return no_checksum(path, b, n, err);
	for (i = n - SUM_LEN + head; i < n - 3; i++) {
		unsigned char c = (unsigned char)b[i];

		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return no_checksum(path, b, n, err);
		want = want << 4 | (unsigned long)(c <= '9' ? c - '0' : c - 'a' + 10);
	}
	got = scar_crc32c(0, b, n - SUM_LEN);
	if (got != want)
		return scar_error_set_at(err, SCAR_ECORRUPT, path, -1, -1,
					 "manifest checksum mismatch: it says %08lx, its bytes give %08lx",
					 want, (unsigned long)got);
	root = json_loadb(b, n, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return scar_error_set_at(err, SCAR_EFORMAT, path, -1, je.line, "not a manifest: %s",
					 je.text);
#define BAD(what) do { rc = scar_error_set_at(err, SCAR_EFORMAT, path, -1, -1, \
					       "manifest: %s", what); goto out; } while (0)
	if (!json_is_object(root))
		BAD("not a JSON object");
	s = json_string_value(json_object_get(root, "format"));
	if (!s || strcmp(s, SCAR_DIST_MANIFEST_FORMAT))
		BAD("format is not '" SCAR_DIST_MANIFEST_FORMAT "'");
	if (get_uint(root, "version", INT32_MAX, &u))
		BAD("no version");
	if (u > SCAR_DIST_MANIFEST_VERSION) {
		rc = scar_error_set_at(err, SCAR_EVERSION, path, -1, -1,
				       "manifest version %llu is newer than %d",
				       (unsigned long long)u, SCAR_DIST_MANIFEST_VERSION);
		goto out;
	}
	if (u != SCAR_DIST_MANIFEST_VERSION)
		BAD("version 1 has no checksum member");
	if (!only_keys(root, top_keys))
		BAD("unknown member");
	m = calloc(1, sizeof(*m));
	if (!m) {
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
		goto out;
	}
	s = json_string_value(json_object_get(root, "model"));
	if (!s || strlen(s) >= sizeof(m->model))
		BAD("bad model");
	strcpy(m->model, s);
	if (get_uint(root, "iteration", INT64_MAX, &m->iteration) ||
	    get_uint(root, "clock", INT64_MAX, &m->clock))
		BAD("bad iteration or clock");
	/* Rollbacks only add to the clock: it never falls behind the state (as a resume checks). */
	if (m->clock < m->iteration)
		BAD("clock is below iteration");
	if (get_uint(root, "ranks", SCAR_DIST_MANIFEST_MAX, &u) || u < 1)
		BAD("bad ranks");
	m->ranks = (uint32_t)u;
	if (get_uint(root, "shards", SCAR_MAX_SHARDS, &u) || u < 1)
		BAD("bad shards");
	m->shards = (uint32_t)u;
	s = json_string_value(json_object_get(root, "kind"));
	if (!s || (strcmp(s, "full") && strcmp(s, "partial")))
		BAD("kind is not full or partial");
	m->partial = strcmp(s, "partial") == 0;
	files = json_object_get(root, "files");
	/* One file per rank: a rank file missing or listed twice is no checkpoint. */
	if (!json_is_array(files) || json_array_size(files) != m->ranks)
		BAD("files does not list one file per rank");
	m->files = calloc(json_array_size(files), sizeof(*m->files));
	seen = calloc(m->ranks, 1);
	if (!m->files || !seen) {
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
		goto out;
	}
	json_array_foreach(files, i, v) {
		struct scar_dist_file *f = &m->files[i];

		if (!json_is_object(v) || !only_keys(v, file_keys))
			BAD("a file is not a rank, name, size and crc32c");
		s = json_string_value(json_object_get(v, "name"));
		if (!s || strlen(s) >= sizeof(f->name) || !good_file_name(s))
			BAD("a file has a bad name (a plain '*.ckpt' name in the manifest's directory)");
		strcpy(f->name, s);
		if (get_uint(v, "rank", m->ranks - 1, &u) || seen[u])
			BAD("a file has a bad or repeated rank");
		seen[u] = 1;
		f->rank = (uint32_t)u;
		if (get_uint(v, "size", INT64_MAX, &f->size))
			BAD("a file has a bad size");
		if (get_uint(v, "crc32c", UINT32_MAX, &u))
			BAD("a file has a bad crc32c");
		f->crc32c = (uint32_t)u;
		m->nfiles++;
	}
	/* Each rank its own file: one listed for two ranks would stand in for a missing one. */
	if (!(byname = malloc(m->nfiles * sizeof(*byname)))) {
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < m->nfiles; i++)
		byname[i] = m->files[i].name;
	qsort(byname, m->nfiles, sizeof(*byname), name_cmp);
	for (i = 1; i < m->nfiles; i++)
		if (!strcmp(byname[i - 1], byname[i]))
			BAD("a file is listed for two ranks");
#undef BAD
	*out = m;
	m = NULL;
out:
	free(byname);
	free(seen);
	scar_dist_manifest_free(m);
	json_decref(root);
	return rc;
}

/* flags: SCAR_OPEN_NOFOLLOW for a manifest found in a directory (never through a link). */
static int read_manifest(const char *path, int flags, struct scar_dist_manifest **out,
			 struct scar_error *err)
{
	char *b;
	size_t n;
	int rc;

	*out = NULL;
	if ((rc = slurp(path, flags, &b, &n, err)))
		return rc;
	rc = parse_manifest(path, b, n, out, err);
	free(b);
	return rc;
}

int scar_dist_manifest_read(const char *path, struct scar_dist_manifest **out,
			    struct scar_error *err)
{
	return read_manifest(path, 0, out, err);
}

int scar_dist_manifest_read_entry(const char *path, struct scar_dist_manifest **out,
				  struct scar_error *err)
{
	return read_manifest(path, SCAR_OPEN_NOFOLLOW, out, err);
}

/* Size and CRC-32C of the rest of an open file. */
static int fd_crc(int fd, const char *path, uint64_t *size, uint32_t *crc, struct scar_error *err)
{
	static const size_t bufsz = 1 << 20;
	char *buf = malloc(bufsz);
	int rc = 0;
	uint32_t c = 0;
	uint64_t n = 0;

	if (!buf)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	for (;;) {
		ssize_t r = read(fd, buf, bufsz);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = scar_error_set_errno(err, errno, path, "cannot read '%s'", path);
			break;
		}
		if (r == 0)
			break;
		c = scar_crc32c(c, buf, (size_t)r);
		n += (uint64_t)r;
	}
	free(buf);
	*size = n;
	*crc = c;
	return rc;
}

/*
 * Open path as a regular file (flags as scar_open_input's): a file that is
 * not there is SCAR_ENOTFOUND, as scar_dist_file_crc promises.
 */
static int open_regular(const char *path, int flags, struct scar_error *err)
{
	struct scar_error e;
	int fd;

	scar_error_clear(&e);
	fd = scar_open_input(path, flags | SCAR_OPEN_REGULAR, &e);
	if (fd == SCAR_EIO && e.errno_value == ENOENT)
		return scar_error_set_at(err, SCAR_ENOTFOUND, path, -1, -1, "cannot open '%s': %s",
					 path, strerror(ENOENT));
	if (fd < 0 && err)
		*err = e;
	return fd;
}

int scar_dist_file_crc(const char *path, uint64_t *size, uint32_t *crc, struct scar_error *err)
{
	int fd = open_regular(path, 0, err), rc;

	if (fd < 0)
		return fd;
	rc = fd_crc(fd, path, size, crc, err);
	close(fd);
	return rc;
}

static int join(char *buf, size_t len, const char *dir, const char *name, struct scar_error *err)
{
	if ((size_t)snprintf(buf, len, "%s/%s", dir, name) >= len)
		return scar_error_set(err, SCAR_EINVAL, "path too long '%s/%s'", dir, name);
	return 0;
}

/*
 * Open rank file f of a manifest in dir and check its size and CRC-32C;
 * the descriptor is returned positioned at the start. A rank file is a
 * regular file in the manifest's directory itself: a symbolic link is
 * refused (its name cannot hold a '/', see good_file_name).
 */
static int open_checked(const char *dir, const struct scar_dist_file *f, char *p, size_t plen,
			struct scar_error *err)
{
	uint64_t size;
	uint32_t crc;
	int fd, rc;

	if ((rc = join(p, plen, dir, f->name, err)))
		return rc;
	if ((fd = open_regular(p, SCAR_OPEN_NOFOLLOW, err)) < 0)
		return fd;
	if ((rc = fd_crc(fd, p, &size, &crc, err)))
		goto fail;
	if (size != f->size) {
		rc = scar_error_set_at(err, SCAR_ECORRUPT, p, -1, -1,
				       "'%s' has %llu bytes, the manifest says %llu", p,
				       (unsigned long long)size, (unsigned long long)f->size);
		goto fail;
	}
	if (crc != f->crc32c) {
		rc = scar_error_set_at(err, SCAR_ECORRUPT, p, -1, -1,
				       "'%s' does not match the manifest's CRC-32C", p);
		goto fail;
	}
	if (lseek(fd, 0, SEEK_SET) < 0) {
		rc = scar_error_set_errno(err, errno, p, "cannot seek '%s'", p);
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return rc;
}

/* Present rows [a, a+n) of rank 0's tensor t, in one of the rank files. */
struct cover {
	size_t t;
	uint64_t a, n;
};

static int cover_cmp(const void *x, const void *y)
{
	const struct cover *p = x, *q = y;

	if (p->t != q->t)
		return p->t < q->t ? -1 : 1;
	if (p->a != q->a)
		return p->a < q->a ? -1 : 1;
	return 0;
}

struct file_id {
	dev_t dev;
	ino_t ino;
};

static int id_cmp(const void *x, const void *y)
{
	const struct file_id *p = x, *q = y;

	if (p->dev != q->dev)
		return p->dev < q->dev ? -1 : 1;
	if (p->ino != q->ino)
		return p->ino < q->ino ? -1 : 1;
	return 0;
}

static int same_layout(const struct scar_ckpt_tensor_info *a, const struct scar_ckpt_tensor_info *b)
{
	if (a->dtype != b->dtype || a->role != b->role || a->ndim != b->ndim)
		return 0;
	for (int d = 0; d < a->ndim; d++)
		if (a->shape[d] != b->shape[d])
			return 0;
	return 1;
}

/*
 * One rank file's header against the manifest and rank 0's file (base,
 * NULL for rank 0 itself): its rows go into *cv. Only the header and
 * metadata are read, the file's CRC-32C having been checked already.
 */
static int check_rank_file(const struct scar_dist_manifest *m, const char *p,
			   const struct scar_ckpt_info *in, const struct scar_ckpt_info *base,
			   struct cover **cv, size_t *ncv, size_t *cap, struct scar_error *err)
{
	if (strcmp(in->model, m->model) || in->iteration != m->iteration)
		return scar_error_set_at(err, SCAR_ECORRUPT, p, -1, -1,
					 "'%s' is not part of the manifest's checkpoint (model or iteration differs)",
					 p);
	if (in->shards != m->shards)
		return scar_error_set_at(err, SCAR_ECORRUPT, p, -1, -1,
					 "'%s' has %u shards, the manifest says %u", p, in->shards,
					 m->shards);
	for (size_t j = 0; j < in->ntensors; j++) {
		const struct scar_ckpt_tensor_info *x = &in->tensors[j];
		size_t t = j, k;

		if (base) {
			for (t = 0; t < base->ntensors && strcmp(base->tensors[t].name, x->name); t++)
				;
			if (t == base->ntensors || !same_layout(&base->tensors[t], x))
				return scar_error_set_at(err, SCAR_ECORRUPT, p, -1, -1,
							 "'%s': tensor '%s' is not in rank 0's file as it is here",
							 p, x->name);
		}
		k = x->rows_present == x->rows ? 1 : x->nranges;
		if (*ncv + k > *cap) {
			size_t nc = (*cap ? *cap * 2 : 64) + k;
			struct cover *nv = realloc(*cv, nc * sizeof(**cv));

			if (!nv)
				return scar_error_set(err, SCAR_ENOMEM, "out of memory");
			*cv = nv;
			*cap = nc;
		}
		if (x->rows_present == x->rows) {
			(*cv)[(*ncv)++] = (struct cover){ t, 0, x->rows };
			continue;
		}
		for (size_t r = 0; r < x->nranges; r++)
			(*cv)[(*ncv)++] = (struct cover){ t, x->ranges[r][0], x->ranges[r][1] };
	}
	return 0;
}

/*
 * The one check of a manifest against its files, which verify, info, ls,
 * convert and every load (so a resume) go through: each file there, whole
 * (size and CRC-32C), a different file for each rank, of the manifest's
 * model, iteration and shard count, with rank 0's tensors; for kind
 * "full" every row of every tensor in some file, for "partial" some file
 * partial.
 */
int scar_dist_manifest_verify(const char *path, const struct scar_dist_manifest *m,
			      struct scar_error *err)
{
	struct scar_ckpt_reader *base = NULL, *rd = NULL;
	const struct scar_ckpt_info *bi = NULL;
	struct file_id *ids = NULL;
	struct cover *cv = NULL;
	size_t *byrank = NULL, ncv = 0, cap = 0;
	char dir[4096], p[4096];
	int fd = -1, bfd = -1, rc = 0, any_partial = 0;

	dir_of(path, dir, sizeof(dir));
	ids = calloc(m->nfiles ? m->nfiles : 1, sizeof(*ids));
	byrank = calloc(m->ranks, sizeof(*byrank));
	if (!ids || !byrank || m->nfiles != m->ranks) {
		rc = !ids || !byrank ? scar_error_set(err, SCAR_ENOMEM, "out of memory") :
			scar_error_set_at(err, SCAR_EFORMAT, path, -1, -1,
					  "manifest: files does not list one file per rank");
		goto out;
	}
	for (size_t i = 0; i < m->nfiles; i++)
		byrank[m->files[i].rank] = i;
	/* Rank order, as a load applies them: rank 0's file is the base. */
	for (uint32_t r = 0; r < m->ranks; r++) {
		struct stat sb;

		if ((fd = open_checked(dir, &m->files[byrank[r]], p, sizeof(p), err)) < 0) {
			rc = fd;
			fd = -1;
			goto out;
		}
		if (fstat(fd, &sb) < 0) {
			rc = scar_error_set_errno(err, errno, p, "cannot stat '%s'", p);
			goto out;
		}
		ids[r] = (struct file_id){ sb.st_dev, sb.st_ino };
		if ((rc = scar_ckpt_reader_open_fd(&rd, fd, p, err)))
			goto out;
		if ((rc = check_rank_file(m, p, scar_ckpt_reader_info(rd), bi, &cv, &ncv, &cap, err)))
			goto out;
		any_partial |= scar_ckpt_reader_info(rd)->partial;
		if (!base) {
			base = rd;
			bfd = fd;
			bi = scar_ckpt_reader_info(rd);
		} else {
			scar_ckpt_reader_close(rd);
			close(fd);
		}
		rd = NULL;
		fd = -1;
	}
	/* Two names of one file (hard links) are still one rank's rows twice. */
	qsort(ids, m->nfiles, sizeof(*ids), id_cmp);
	for (size_t i = 1; i < m->nfiles; i++)
		if (!id_cmp(&ids[i - 1], &ids[i])) {
			rc = scar_error_set_at(err, SCAR_ECORRUPT, path, -1, -1,
					       "manifest lists one file for two ranks");
			goto out;
		}
	if (ncv)
		qsort(cv, ncv, sizeof(*cv), cover_cmp);
	for (size_t t = 0, k = 0; bi && t < bi->ntensors; t++) {
		uint64_t next = 0;

		for (; k < ncv && cv[k].t == t; k++)
			if (cv[k].a <= next && cv[k].a + cv[k].n > next)
				next = cv[k].a + cv[k].n;
		if (next < bi->tensors[t].rows && !m->partial) {
			rc = scar_error_set_at(err, SCAR_ECORRUPT, path, -1, -1,
					       "manifest says full, but rows of tensor '%s' are in none of its files",
					       bi->tensors[t].name);
			goto out;
		}
	}
	if (m->partial && !any_partial)
		rc = scar_error_set_at(err, SCAR_ECORRUPT, path, -1, -1,
				       "manifest says partial, but every file it lists is full");
out:
	if (rd)
		scar_ckpt_reader_close(rd);
	if (fd >= 0)
		close(fd);
	if (base)
		scar_ckpt_reader_close(base);
	if (bfd >= 0)
		close(bfd);
	free(cv);
	free(ids);
	free(byrank);
	return rc;
}

static int manifest_load(const char *path, int flags, struct scar_state **out,
			 struct scar_error *err)
{
	struct scar_dist_manifest *m = NULL;
	struct scar_state *base = NULL, *over = NULL;
	char dir[4096], p[4096];
	json_t *extra = NULL;
	int rc, fd;

	*out = NULL;
	if ((rc = read_manifest(path, flags, &m, err)) ||
	    (rc = scar_dist_manifest_verify(path, m, err)))
		goto out;
	dir_of(path, dir, sizeof(dir));
	/* Rank order; rank 0's file carries the state tensors and the extra metadata. */
	for (uint32_t r = 0; r < m->ranks; r++) {
		for (size_t i = 0; i < m->nfiles; i++) {
			struct scar_state *got;

			if (m->files[i].rank != r)
				continue;
			/* Checked again on the descriptor read: what was verified is what loads. */
			if ((fd = open_checked(dir, &m->files[i], p, sizeof(p), err)) < 0) {
				rc = fd;
				goto out;
			}
			rc = scar_ckpt_load_fd(fd, p, base ? &over : &base, err);
			close(fd);
			if (rc)
				goto out;
			got = over ? over : base;
			if (strcmp(got->model, m->model) || got->iteration != m->iteration) {
				rc = scar_error_set_at(err, SCAR_EMISMATCH, p, -1, -1,
						       "'%s' is not part of the manifest's checkpoint",
						       p);
				goto out;
			}
			if (!over) {
				extra = json_deep_copy(base->extra);
				if (!extra) {
					rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
					goto out;
				}
				continue;
			}
			rc = scar_ckpt_apply(base, over, err);
			scar_state_free(over);
			over = NULL;
			if (rc)
				goto out;
		}
	}
	if (!base) {
		rc = scar_error_set_at(err, SCAR_EFORMAT, path, -1, -1, "manifest lists no files");
		goto out;
	}
	json_decref(base->extra);
	base->extra = extra;
	extra = NULL;
	if (json_object_set_new(base->extra, "clock", json_integer((json_int_t)m->clock))) {
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
		goto out;
	}
	*out = base;
	base = NULL;
out:
	json_decref(extra);
	scar_state_free(base);
	scar_state_free(over);
	scar_dist_manifest_free(m);
	return rc;
}

int scar_dist_manifest_load(const char *path, struct scar_state **out, struct scar_error *err)
{
	return manifest_load(path, 0, out, err);
}

int scar_dist_manifest_load_entry(const char *path, struct scar_state **out,
				  struct scar_error *err)
{
	return manifest_load(path, SCAR_OPEN_NOFOLLOW, out, err);
}

int scar_dist_open_regular(const char *path, int flags, struct scar_error *err)
{
	return open_regular(path, flags, err);
}
