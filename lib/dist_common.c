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
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scar/ckpt.h"
#include "scar/dist.h"
#include "scar/shard.h"

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

int scar_dist_rank_file_name(char *buf, size_t len, uint64_t iteration, uint32_t rank)
{
	int n = snprintf(buf, len, "ckpt-%010llu.rank-%u.ckpt", (unsigned long long)iteration, rank);

	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int scar_dist_manifest_name(char *buf, size_t len, uint64_t iteration)
{
	int n = snprintf(buf, len, "ckpt-%010llu.manifest", (unsigned long long)iteration);

	return n < 0 || (size_t)n >= len ? -1 : 0;
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

int scar_dist_manifest_write(const char *path, const struct scar_dist_manifest *m, int sync,
			     struct scar_error *err)
{
	json_t *files = json_array(), *obj = NULL;
	char tmp[4096], dir[4096], *text = NULL;
	int rc = 0, fd = -1;
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
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= sizeof(tmp)) {
		rc = scar_error_set(err, SCAR_EINVAL, "manifest name too long '%s'", path);
		goto out;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = scar_error_set_errno(err, errno, tmp, "cannot create '%s'", tmp);
		goto out;
	}
	len = strlen(text);
	text[len] = '\n';	/* json_dumps leaves room for the NUL; it is not written */
	for (size_t off = 0; off < len + 1;) {
		ssize_t w = write(fd, text + off, len + 1 - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			rc = scar_error_set_errno(err, errno, tmp, "cannot write '%s'", tmp);
			goto out;
		}
		off += (size_t)w;
	}
	if (sync && fsync(fd) < 0) {
		rc = scar_error_set_errno(err, errno, tmp, "cannot sync '%s'", tmp);
		goto out;
	}
	if (close(fd) < 0) {
		fd = -1;
		rc = scar_error_set_errno(err, errno, tmp, "cannot write '%s'", tmp);
		goto out;
	}
	fd = -1;
	if (rename(tmp, path) < 0) {
		rc = scar_error_set_errno(err, errno, path, "cannot rename a temporary file to '%s'",
					  path);
		goto out;
	}
	if (sync) {
		int dfd;

		dir_of(path, dir, sizeof(dir));
		dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0 || fsync(dfd) < 0)
			rc = scar_error_set_errno(err, errno, dir, "cannot sync directory '%s'", dir);
		if (dfd >= 0)
			close(dfd);
	}
out:
	if (fd >= 0)
		close(fd);
	if (rc)
		unlink(tmp);
	free(text);
	if (obj)
		json_decref(obj);
	else
		json_decref(files);
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

int scar_dist_manifest_read(const char *path, struct scar_dist_manifest **out,
			    struct scar_error *err)
{
	struct scar_dist_manifest *m = NULL;
	json_error_t je;
	json_t *root, *files, *v;
	const char *s;
	uint64_t u;
	size_t i;
	int rc = 0;

	*out = NULL;
	root = json_load_file(path, 0, &je);
	if (!root) {
		if (access(path, R_OK) != 0)
			return scar_error_set_errno(err, errno, path, "cannot open '%s'", path);
		return scar_error_set_at(err, SCAR_EFORMAT, path, -1, je.line,
					 "not a manifest: %s", je.text);
	}
#define BAD(what) do { rc = scar_error_set_at(err, SCAR_EFORMAT, path, -1, -1, \
					       "manifest: %s", what); goto out; } while (0)
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
	if (get_uint(root, "ranks", INT32_MAX, &u) || u < 1)
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
	if (!json_is_array(files) || json_array_size(files) < 1)
		BAD("no files");
	m->files = calloc(json_array_size(files), sizeof(*m->files));
	if (!m->files) {
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
		goto out;
	}
	json_array_foreach(files, i, v) {
		struct scar_dist_file *f = &m->files[i];

		s = json_string_value(json_object_get(v, "name"));
		if (!s || !*s || strlen(s) >= sizeof(f->name) || strchr(s, '/'))
			BAD("a file has a bad name");
		strcpy(f->name, s);
		if (get_uint(v, "rank", m->ranks - 1, &u))
			BAD("a file has a bad rank");
		f->rank = (uint32_t)u;
		if (get_uint(v, "size", INT64_MAX, &f->size))
			BAD("a file has a bad size");
		if (get_uint(v, "crc32c", UINT32_MAX, &u))
			BAD("a file has a bad crc32c");
		f->crc32c = (uint32_t)u;
		m->nfiles++;
	}
#undef BAD
	*out = m;
	m = NULL;
out:
	scar_dist_manifest_free(m);
	json_decref(root);
	return rc;
}

/* Size and CRC-32C of a whole file. */
static int file_crc(const char *path, uint64_t *size, uint32_t *crc, struct scar_error *err)
{
	static const size_t bufsz = 1 << 20;
	char *buf = malloc(bufsz);
	int fd, rc = 0;
	uint32_t c = 0;
	uint64_t n = 0;

	if (!buf)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = scar_error_set_at(err, SCAR_ENOTFOUND, path, -1, -1, "cannot open '%s': %s", path,
				       strerror(errno));
		free(buf);
		return rc;
	}
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
	close(fd);
	free(buf);
	*size = n;
	*crc = c;
	return rc;
}

int scar_dist_file_crc(const char *path, uint64_t *size, uint32_t *crc, struct scar_error *err)
{
	return file_crc(path, size, crc, err);
}

static int join(char *buf, size_t len, const char *dir, const char *name, struct scar_error *err)
{
	if ((size_t)snprintf(buf, len, "%s/%s", dir, name) >= len)
		return scar_error_set(err, SCAR_EINVAL, "path too long '%s/%s'", dir, name);
	return 0;
}

int scar_dist_manifest_verify(const char *path, const struct scar_dist_manifest *m,
			      struct scar_error *err)
{
	char dir[4096], p[4096];
	int rc;

	dir_of(path, dir, sizeof(dir));
	for (size_t i = 0; i < m->nfiles; i++) {
		uint64_t size;
		uint32_t crc;

		if ((rc = join(p, sizeof(p), dir, m->files[i].name, err)) ||
		    (rc = file_crc(p, &size, &crc, err)))
			return rc;
		if (size != m->files[i].size)
			return scar_error_set_at(err, SCAR_ECORRUPT, p, -1, -1,
						 "'%s' has %llu bytes, the manifest says %llu", p,
						 (unsigned long long)size,
						 (unsigned long long)m->files[i].size);
		if (crc != m->files[i].crc32c)
			return scar_error_set_at(err, SCAR_ECORRUPT, p, -1, -1,
						 "'%s' does not match the manifest's CRC-32C", p);
	}
	return 0;
}

int scar_dist_manifest_load(const char *path, struct scar_state **out, struct scar_error *err)
{
	struct scar_dist_manifest *m = NULL;
	struct scar_state *base = NULL, *over = NULL;
	char dir[4096], p[4096];
	json_t *extra = NULL;
	int rc;

	*out = NULL;
	if ((rc = scar_dist_manifest_read(path, &m, err)) ||
	    (rc = scar_dist_manifest_verify(path, m, err)))
		goto out;
	dir_of(path, dir, sizeof(dir));
	/* Rank order; rank 0's file carries the state tensors and the extra metadata. */
	for (uint32_t r = 0; r < m->ranks; r++) {
		for (size_t i = 0; i < m->nfiles; i++) {
			if (m->files[i].rank != r)
				continue;
			if ((rc = join(p, sizeof(p), dir, m->files[i].name, err)) ||
			    (rc = scar_ckpt_load(p, base ? &over : &base, err)))
				goto out;
			if (!over) {
				extra = json_deep_copy(base->extra);
				if (!extra) {
					rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
					goto out;
				}
				continue;
			}
			if (strcmp(over->model, m->model) || over->iteration != m->iteration) {
				rc = scar_error_set_at(err, SCAR_EMISMATCH, p, -1, -1,
						       "'%s' is not part of the manifest's checkpoint",
						       p);
				goto out;
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

static int ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && strcmp(s + a - b, suffix) == 0;
}

int scar_dist_load_resume(const char *path, struct scar_state **out, size_t *skipped,
			  char *used_path, size_t used_len, struct scar_error *err)
{
	struct stat sb;
	struct scar_state *plain = NULL;
	char plain_used[4096] = "", best[4096] = "";
	uint64_t best_iter = 0;
	size_t bad = 0, plain_skipped = 0;
	struct scar_error e2;
	struct dirent *de;
	DIR *d;
	int rc, have = 0;

	*out = NULL;
	scar_error_clear(&e2);
	if (skipped)
		*skipped = 0;
	if (strcmp(path, "-") != 0 && ends_with(path, ".manifest")) {
		if (used_path)
			snprintf(used_path, used_len, "%s", path);
		return scar_dist_manifest_load(path, out, err);
	}
	if (strcmp(path, "-") == 0 || stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))
		return scar_train_load_resume(path, out, skipped, used_path, used_len, err);

	/* The newest complete full manifest. */
	d = opendir(path);
	if (!d)
		return scar_error_set_errno(err, errno, path, "cannot open directory '%s'", path);
	while ((de = readdir(d))) {
		struct scar_dist_manifest *m;
		char p[4096];

		if (de->d_name[0] == '.' || !ends_with(de->d_name, ".manifest"))
			continue;
		if ((size_t)snprintf(p, sizeof(p), "%s/%s", path, de->d_name) >= sizeof(p))
			continue;
		if ((rc = scar_dist_manifest_read(p, &m, &e2))) {
			/* As for single files: skip damage, stop at an I/O error. */
			if (!scar_error_is_damage(rc) &&
			    !(rc == SCAR_EIO && e2.errno_value == ENOENT)) {
				closedir(d);
				if (err)
					*err = e2;
				return rc;
			}
			bad++;
			continue;
		}
		if (!m->partial && (!have || m->iteration > best_iter)) {
			if (scar_dist_manifest_verify(p, m, NULL) == 0) {
				have = 1;
				best_iter = m->iteration;
				snprintf(best, sizeof(best), "%s", p);
			} else {
				bad++;
			}
		}
		scar_dist_manifest_free(m);
	}
	closedir(d);

	rc = scar_train_load_resume(path, &plain, &plain_skipped, plain_used, sizeof(plain_used),
				    &e2);
	if (rc && rc != SCAR_ENOTFOUND) {
		if (err)
			*err = e2;
		return rc;
	}
	if (rc == 0 && (!have || plain->iteration >= best_iter)) {
		*out = plain;
		if (used_path)
			snprintf(used_path, used_len, "%s", plain_used);
		if (skipped)
			*skipped = bad + plain_skipped;
		return 0;
	}
	scar_state_free(plain);
	if (!have)
		return scar_error_set_at(err, SCAR_ENOTFOUND, path, -1, -1,
					 "no complete full checkpoint in directory '%s'", path);
	if (skipped)
		*skipped = bad;
	if (used_path)
		snprintf(used_path, used_len, "%s", best);
	return scar_dist_manifest_load(best, out, err);
}

int scar_dist_is_rank_file(const char *path)
{
	const char *b = strrchr(path, '/'), *r, *p;

	b = b ? b + 1 : path;
	if (!(r = strstr(b, ".rank-")))
		return 0;
	while ((p = strstr(r + 1, ".rank-")))
		r = p;
	p = r + 6;
	if (*p < '0' || *p > '9')
		return 0;
	while (*p >= '0' && *p <= '9')
		p++;
	return strcmp(p, ".ckpt") == 0;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct scar_ckpt_entry *x = a, *y = b;

	if (x->iteration != y->iteration)
		return x->iteration < y->iteration ? -1 : 1;
	return strcmp(x->path, y->path);
}

int scar_dist_ckpt_list(const char *dir, struct scar_ckpt_entry **out, size_t *n,
			size_t *skipped, struct scar_error *err)
{
	struct scar_ckpt_entry *v = NULL;
	size_t cnt = 0, skip = 0, k = 0, rank_listed = 0, rank_files = 0;
	struct dirent *de;
	DIR *d;
	int rc;

	*out = NULL;
	*n = 0;
	if (skipped)
		*skipped = 0;
	if ((rc = scar_ckpt_list(dir, &v, &cnt, &skip, err)))
		return rc;
	for (size_t i = 0; i < cnt; i++) {
		if (scar_dist_is_rank_file(v[i].path)) {
			free(v[i].path);
			rank_listed++;
		} else
			v[k++] = v[i];
	}
	cnt = k;
	if (!(d = opendir(dir))) {
		rc = scar_error_set_errno(err, errno, dir, "cannot open directory '%s'", dir);
		goto out;
	}
	while ((errno = 0, de = readdir(d))) {
		struct scar_dist_manifest *m = NULL;
		struct scar_ckpt_entry *nv;
		struct stat sb;
		char *p;

		if (de->d_name[0] == '.')
			continue;
		/* A damaged rank file is its manifest's damage, not one more. */
		if (scar_dist_is_rank_file(de->d_name))
			rank_files++;
		if (!ends_with(de->d_name, ".manifest"))
			continue;
		if (!(p = malloc(strlen(dir) + strlen(de->d_name) + 2))) {
			rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
			break;
		}
		sprintf(p, "%s/%s", dir, de->d_name);
		if (stat(p, &sb) < 0 || !S_ISREG(sb.st_mode) || scar_dist_manifest_read(p, &m, NULL) ||
		    scar_dist_manifest_verify(p, m, NULL)) {
			scar_dist_manifest_free(m);
			free(p);
			skip++;
			continue;
		}
		if (!(nv = realloc(v, (cnt + 1) * sizeof(*v)))) {
			scar_dist_manifest_free(m);
			free(p);
			rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
			break;
		}
		v = nv;
		v[cnt].path = p;
		v[cnt].iteration = m->iteration;
		v[cnt].partial = m->partial;
		v[cnt].size = (uint64_t)sb.st_size;
		for (size_t i = 0; i < m->nfiles; i++)
			v[cnt].size += m->files[i].size;
		cnt++;
		scar_dist_manifest_free(m);
	}
	if (!rc && errno)
		rc = scar_error_set_errno(err, errno, dir, "cannot read directory '%s'", dir);
	closedir(d);
	if (rank_files > rank_listed)
		skip -= rank_files - rank_listed < skip ? rank_files - rank_listed : skip;
out:
	if (rc) {
		scar_ckpt_list_free(v, cnt);
		return rc;
	}
	if (cnt)
		qsort(v, cnt, sizeof(*v), entry_cmp);
	*out = v;
	*n = cnt;
	if (skipped)
		*skipped = skip;
	return 0;
}
