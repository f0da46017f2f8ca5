/*
 * ckpt_store.c - a directory of checkpoints (scar/store.h): the names of
 * its files, listing them, the newest complete checkpoint, the saved view
 * a resume rebuilds, the writer's lock and what a killed writer left, and
 * writing a checkpoint of one process or of MPI ranks (the ranks' exchange
 * is the caller's, behind struct scar_store_comm: no MPI here).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "scar/ckpt.h"
#include "scar/dist.h"
#include "scar/file.h"
#include "scar/store.h"
#include "scar/train.h"
#include "rewind.h"
#include "store_internal.h"

void scar_store_init(struct scar_store *s, const char *dir)
{
	s->dir = dir;
	s->lock = -1;
}

/* ---- naming ---- */

int scar_store_file_name(char *buf, size_t len, uint64_t iteration)
{
	int n = snprintf(buf, len, "ckpt-%010llu.ckpt", (unsigned long long)iteration);

	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int scar_store_rank_file_name(char *buf, size_t len, uint64_t iteration, uint32_t rank)
{
	int n = snprintf(buf, len, "ckpt-%010llu.rank-%u.ckpt", (unsigned long long)iteration, rank);

	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int scar_store_manifest_name(char *buf, size_t len, uint64_t iteration)
{
	int n = snprintf(buf, len, "ckpt-%010llu.manifest", (unsigned long long)iteration);

	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int scar_store_is_rank_file(const char *path)
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

/*
 * Whether path is a checkpoint the trainer wrote at iteration it (ckpt-N.ckpt,
 * or ckpt-N.manifest of MPI ranks): the saved view is made of those, not of a
 * final state someone saved into the directory, which no policy wrote.
 */
int scar_store_is_policy_file(const char *path, uint64_t it)
{
	const char *base = strrchr(path, '/');
	char one[64], ranks[64];

	base = base ? base + 1 : path;
	scar_store_file_name(one, sizeof(one), it);
	scar_store_manifest_name(ranks, sizeof(ranks), it);
	return strcmp(base, one) == 0 || strcmp(base, ranks) == 0;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* ---- listing ---- */

/*
 * Every *.ckpt whose header and metadata read cleanly, by iteration then
 * name.
 */

static int entry_cmp(const void *a, const void *b)
{
	const struct scar_ckpt_entry *x = a, *y = b;

	if (x->iteration != y->iteration)
		return x->iteration < y->iteration ? -1 : 1;
	return strcmp(x->path, y->path);
}

void scar_ckpt_list_free(struct scar_ckpt_entry *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i].path);
	free(v);
}

/* strict: an I/O error on a file ends the listing; else it is skipped and counted. */
static int list_dir(const char *dir, int strict, struct scar_ckpt_entry **out, size_t *n,
		    size_t *skipped, struct scar_error *err)
{
	struct scar_ckpt_entry *v = NULL;
	size_t cnt = 0, cap = 0, skip = 0;
	struct scar_error e2;
	struct dirent *de;
	DIR *d;
	int rc = 0;

	*out = NULL;
	*n = 0;
	if (skipped)
		*skipped = 0;
	d = opendir(dir);
	if (!d)
		return scar_error_set_errno(err, errno, dir, "cannot open directory '%s'", dir);
	while ((errno = 0, de = readdir(d))) {
		size_t len = strlen(de->d_name);
		struct scar_ckpt_reader *r;
		struct stat sb;
		char *path;
		int fd;

		if (len < 6 || strcmp(de->d_name + len - 5, ".ckpt") || de->d_name[0] == '.')
			continue;
		path = malloc(strlen(dir) + len + 2);
		if (!path) {
			rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
			goto out;
		}
		sprintf(path, "%s/%s", dir, de->d_name);
		if (stat(path, &sb) < 0) {
			if (errno == ENOENT || !strict) {	/* ENOENT: removed since readdir */
				skip += errno != ENOENT;
				free(path);
				continue;
			}
			rc = scar_error_set_errno(err, errno, path, "cannot stat '%s'", path);
			free(path);
			goto out;
		}
		if (!S_ISREG(sb.st_mode)) {
			free(path);
			skip++;
			continue;
		}
		scar_error_clear(&e2);
		/* Opened as a regular file: one swapped for a FIFO since the stat never blocks. */
		if ((fd = scar_open_input(path, SCAR_OPEN_REGULAR, &e2)) < 0)
			rc = fd;
		else if ((rc = scar_ckpt_reader_open_fd(&r, fd, path, &e2)))
			close(fd);
		if (rc) {
			/* Damage is skipped; an I/O error may hide an intact file. */
			if (!strict || scar_error_is_damage(rc) ||
			    (rc == SCAR_EIO && e2.errno_value == ENOENT)) {
				skip += !(rc == SCAR_EIO && e2.errno_value == ENOENT);
				rc = 0;
				free(path);
				continue;
			}
			if (err)
				*err = e2;
			free(path);
			goto out;
		}
		if (cnt == cap) {
			size_t nc = cap ? 2 * cap : 16;
			struct scar_ckpt_entry *nv = realloc(v, nc * sizeof(*nv));

			if (!nv) {
				scar_ckpt_reader_close(r);
				close(fd);
				free(path);
				rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
				goto out;
			}
			v = nv;
			cap = nc;
		}
		v[cnt].path = path;
		v[cnt].iteration = scar_ckpt_reader_info(r)->iteration;
		v[cnt].partial = scar_ckpt_reader_info(r)->partial;
		v[cnt].size = (uint64_t)sb.st_size;
		cnt++;
		scar_ckpt_reader_close(r);
		close(fd);
	}
	if (errno) {
		rc = scar_error_set_errno(err, errno, dir, "cannot read directory '%s'", dir);
		goto out;
	}
	if (cnt)	/* qsort(NULL, 0, ...) is undefined behaviour */
		qsort(v, cnt, sizeof(*v), entry_cmp);
out:
	closedir(d);
	if (rc) {
		scar_ckpt_list_free(v, cnt);
		return rc;
	}
	*out = v;
	*n = cnt;
	if (skipped)
		*skipped = skip;
	return 0;
}

int scar_ckpt_list(const char *dir, struct scar_ckpt_entry **out, size_t *n,
		   size_t *skipped, struct scar_error *err)
{
	return list_dir(dir, 1, out, n, skipped, err);
}

int scar_ckpt_list_readable(const char *dir, struct scar_ckpt_entry **out, size_t *n,
			    size_t *skipped, struct scar_error *err)
{
	return list_dir(dir, 0, out, n, skipped, err);
}

/* Each checkpoint once: single files, and distributed ones as their manifests. */
static int list_ckpts(const char *dir, struct scar_ckpt_entry **out, size_t *n,
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
	if ((rc = list_dir(dir, 1, &v, &cnt, &skip, err)))
		return rc;
	for (size_t i = 0; i < cnt; i++) {
		if (scar_store_is_rank_file(v[i].path)) {
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
		if (scar_store_is_rank_file(de->d_name))
			rank_files++;
		if (!ends_with(de->d_name, ".manifest"))
			continue;
		if (!(p = malloc(strlen(dir) + strlen(de->d_name) + 2))) {
			rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
			break;
		}
		sprintf(p, "%s/%s", dir, de->d_name);
		/* Never through a link, never a FIFO: what the directory holds itself. */
		if (lstat(p, &sb) < 0 || !S_ISREG(sb.st_mode) ||
		    scar_dist_manifest_read_entry(p, &m, NULL) ||
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

int scar_store_list(const struct scar_store *s, unsigned flags, struct scar_ckpt_entry **out,
		    size_t *n, size_t *skipped, struct scar_error *err)
{
	if (flags & SCAR_STORE_LIST_FILES)
		return list_dir(s->dir, !(flags & SCAR_STORE_LIST_READABLE), out, n, skipped, err);
	return list_ckpts(s->dir, out, n, skipped, err);
}

/* ---- the newest complete checkpoint ---- */

/*
 * What a resume from a directory passes over with a warning: damage, an
 * incomplete distributed checkpoint, a file that is gone or not a regular
 * file. Anything else (EIO, no memory) may hide an intact newer
 * checkpoint and stops the resume instead.
 */
static int passable(int rc, const struct scar_error *e)
{
	return scar_error_is_damage(rc) || rc == SCAR_ENOTFOUND || rc == SCAR_EMISMATCH ||
	       (rc == SCAR_EIO && (e->errno_value == ENOENT || e->errno_value == ELOOP));
}

/*
 * The checkpoint's own file is gone since readdir: ENOTFOUND for a single
 * file (open_regular); for a manifest that means a rank file is missing, an
 * incomplete checkpoint, while the manifest itself gone is EIO with ENOENT.
 */
static int gone(int rc, const struct scar_error *e, int manifest)
{
	return manifest ? rc == SCAR_EIO && e->errno_value == ENOENT : rc == SCAR_ENOTFOUND;
}

struct cand {
	char *path;
	uint64_t iteration;
	int manifest, partial;
};

/* Newest first; on a tie a single file before a manifest, then by path, last first. */
static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->iteration != y->iteration)
		return x->iteration > y->iteration ? -1 : 1;
	if (x->manifest != y->manifest)
		return x->manifest - y->manifest;
	return -strcmp(x->path, y->path);
}

/* Header and metadata of a single-file checkpoint, without hanging on what is not a file. */
static int probe_file(const char *p, struct cand *c, struct scar_error *err)
{
	struct scar_ckpt_reader *r;
	int fd = scar_dist_open_regular(p, 0, err), rc;

	if (fd < 0)
		return fd;
	if (!(rc = scar_ckpt_reader_open_fd(&r, fd, p, err))) {
		c->iteration = scar_ckpt_reader_info(r)->iteration;
		c->partial = scar_ckpt_reader_info(r)->partial;
		scar_ckpt_reader_close(r);
	}
	close(fd);
	return rc;
}

static int load_file(const char *p, struct scar_state **out, struct scar_error *err)
{
	int fd = scar_dist_open_regular(p, 0, err), rc;

	if (fd < 0)
		return fd;
	rc = scar_ckpt_load_fd(fd, p, out, err);
	close(fd);
	return rc;
}

int scar_store_newest(const struct scar_store *s, struct scar_state **out, size_t *skipped,
		      char *used_path, size_t used_len, scar_store_skip_fn skip, void *arg,
		      struct scar_error *err)
{
	const char *path = s->dir;
	struct cand *v = NULL;
	size_t n = 0, bad = 0;
	struct scar_error e2;
	struct dirent *de;
	DIR *d;
	int rc = 0, found = 0;

	if (!(d = opendir(path)))
		return scar_error_set_errno(err, errno, path, "cannot open directory '%s'", path);
	while ((errno = 0, de = readdir(d))) {
		struct cand c = { NULL, 0, 0, 0 };
		struct cand *nv;

		if (de->d_name[0] == '.')
			continue;
		c.manifest = ends_with(de->d_name, ".manifest");
		if (!c.manifest && (!ends_with(de->d_name, ".ckpt") ||
				    scar_store_is_rank_file(de->d_name)))
			continue;
		if (!(c.path = malloc(strlen(path) + strlen(de->d_name) + 2))) {
			rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
			break;
		}
		sprintf(c.path, "%s/%s", path, de->d_name);
		scar_error_clear(&e2);
		if (c.manifest) {
			struct scar_dist_manifest *m;

			if (!(rc = scar_dist_manifest_read_entry(c.path, &m, &e2))) {
				c.iteration = m->iteration;
				c.partial = m->partial;
				scar_dist_manifest_free(m);
			}
		} else {
			rc = probe_file(c.path, &c, &e2);
		}
		if (rc) {
			if (!passable(rc, &e2)) {
				if (err)
					*err = e2;
				free(c.path);
				break;
			}
			/* A file removed since readdir is simply gone (another run pruning). */
			if (!gone(rc, &e2, c.manifest)) {
				bad++;
				if (skip)
					skip(arg, c.path, &e2);
			}
			rc = 0;
			free(c.path);
			continue;
		}
		if (!(nv = realloc(v, (n + 1) * sizeof(*v)))) {
			free(c.path);
			rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
			break;
		}
		v = nv;
		v[n++] = c;
	}
	if (!rc && errno)
		rc = scar_error_set_errno(err, errno, path, "cannot read directory '%s'", path);
	closedir(d);
	if (!rc && n)
		qsort(v, n, sizeof(*v), cand_cmp);
	/* Newest first: a damaged or incomplete newest checkpoint gives way to an older one. */
	for (size_t i = 0; !rc && !found && i < n; i++) {
		if (v[i].partial)
			continue;	/* no worker state: scar_train_resume_scan reports these */
		scar_error_clear(&e2);
		rc = v[i].manifest ? scar_dist_manifest_load_entry(v[i].path, out, &e2) :
			load_file(v[i].path, out, &e2);
		/* intact is not enough: its configuration must be one the model takes */
		if (!rc && (rc = scar_train_check_resume(*out, NULL, &e2))) {
			scar_state_free(*out);
			*out = NULL;
		}
		if (!rc) {
			found = 1;
			if (used_path)
				snprintf(used_path, used_len, "%s", v[i].path);
			break;
		}
		if (!passable(rc, &e2)) {
			if (err)
				*err = e2;
			break;
		}
		if (!gone(rc, &e2, v[i].manifest)) {
			bad++;
			if (skip)
				skip(arg, v[i].path, &e2);
		}
		rc = 0;
	}
	for (size_t i = 0; i < n; i++)
		free(v[i].path);
	free(v);
	if (skipped)
		*skipped = bad;
	if (rc)
		return rc;
	if (!found)
		return scar_error_set_at(err, SCAR_ENOTFOUND, path, -1, -1,
					 "no complete full checkpoint in directory '%s'%s", path,
					 bad ? " (every one is damaged or incomplete)" : "");
	return 0;
}

int scar_store_resume_load(const char *path, struct scar_state **out, size_t *skipped,
			   char *used_path, size_t used_len, scar_store_skip_fn skip, void *arg,
			   struct scar_error *err)
{
	struct scar_store s;
	struct stat sb;

	*out = NULL;
	if (skipped)
		*skipped = 0;
	if (strcmp(path, "-") != 0 && ends_with(path, ".manifest")) {
		if (used_path)
			snprintf(used_path, used_len, "%s", path);
		return scar_dist_manifest_load(path, out, err);
	}
	if (strcmp(path, "-") == 0 || stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))
		return scar_store_load_single(path, out, skipped, used_path, used_len, err);
	scar_store_init(&s, path);
	return scar_store_newest(&s, out, skipped, used_path, used_len, skip, arg, err);
}
int scar_store_load_single(const char *path, struct scar_state **out, size_t *skipped,
			   char *used_path, size_t used_len, struct scar_error *err)
{
	struct scar_ckpt_entry *ents = NULL;
	struct stat sb;
	size_t n = 0, bad = 0;
	int rc;

	*out = NULL;
	if (skipped)
		*skipped = 0;
	if (strcmp(path, "-") == 0 || stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
		if (used_path)
			snprintf(used_path, used_len, "%s", path);
		return strcmp(path, "-") == 0 ? scar_ckpt_load_fd(0, "-", out, err) :
			scar_ckpt_load(path, out, err);
	}
	if ((rc = list_dir(path, 1, &ents, &n, &bad, err)))
		return rc;
	rc = scar_error_set_at(err, SCAR_ENOTFOUND, path, -1, -1,
			       "no complete full checkpoint in directory '%s'", path);
	/* Newest first: a damaged newest checkpoint is skipped for the previous good one. */
	for (size_t i = n; i-- > 0;) {
		struct scar_error e2;

		if (ents[i].partial)
			continue;
		scar_error_clear(&e2);
		if (scar_ckpt_load(ents[i].path, out, &e2) == 0) {
			if (used_path)
				snprintf(used_path, used_len, "%s", ents[i].path);
			rc = 0;
			break;
		}
		/*
		 * Only damage is skipped: an intact newest checkpoint that could
		 * not be read (EIO, no memory) must not silently cost the
		 * iterations since the one before. A file removed since the
		 * listing (another run pruning) is simply gone.
		 */
		if (!scar_error_is_damage(e2.code) &&
		    !(e2.code == SCAR_EIO && e2.errno_value == ENOENT)) {
			if (err)
				*err = e2;
			rc = e2.code;
			break;
		}
		bad++;
	}
	if (skipped)
		*skipped = bad;
	scar_ckpt_list_free(ents, n);
	return rc;
}

int scar_store_resume_scan(const char *path, const struct scar_state *st, size_t damaged,
			   struct scar_train_resume_info *info, struct scar_error *err)
{
	struct scar_ckpt_entry *v = NULL;
	struct stat sb;
	size_t n = 0;
	int rc;

	memset(info, 0, sizeof(*info));
	info->iter = info->newest_iter = st->iteration;
	info->damaged = damaged;
	if (strcmp(path, "-") == 0 || stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))
		return 0;
	/* Manifests too: the ranks of an MPI run write one per checkpoint. */
	if ((rc = list_ckpts(path, &v, &n, NULL, err)))
		return rc;
	for (size_t i = 0; i < n; i++) {
		if (v[i].iteration > info->newest_iter)
			info->newest_iter = v[i].iteration;
		if (v[i].iteration <= st->iteration || !v[i].partial)
			continue;
		if (!info->newer_partial++)
			info->first_partial = v[i].iteration;
		info->last_partial = v[i].iteration;	/* the list is by iteration */
	}
	scar_ckpt_list_free(v, n);
	return 0;
}

/* ---- the saved view ---- */

static int load_entry(const struct scar_ckpt_entry *e, struct scar_state **s, struct scar_error *err)
{
	size_t len = strlen(e->path);

	return len > 9 && strcmp(e->path + len - 9, ".manifest") == 0 ?
		scar_dist_manifest_load(e->path, s, err) : scar_ckpt_load(e->path, s, err);
}

/* Where the rows checkpoint s holds stand (lib/rewind.h), into ages. */
static int mark_ages(const struct scar_state *saved, const struct scar_state *s,
		     uint64_t *const *ages, struct scar_error *err)
{
	for (size_t t = 0; ages && t < saved->ntensors; t++) {
		const struct scar_tensor *x = scar_state_find(s, saved->tensors[t]->name);
		int rc;

		if (!ages[t] || !x || scar_tensor_rows(x) != scar_tensor_rows(saved->tensors[t]))
			continue;
		if ((rc = scar_rewind_ages(s, x, x->present, ages[t], err)))
			return rc;
	}
	return 0;
}

/*
 * The saved view and the base of full recovery after a resume, as the run
 * had them at the resumed state's iteration k: the newest full checkpoint
 * the policy wrote at or before k, then its partial checkpoints after that
 * up to k, in order. Newer checkpoints play no part; without a directory,
 * or without a full checkpoint at or before k in it, both stay the resumed
 * state.
 */
int scar_store_saved_view(const struct scar_store *store, const struct scar_state *st,
			  struct scar_state *saved, struct scar_state **last_full,
			  uint64_t *const *ages, struct scar_error *err)
{
	struct scar_ckpt_entry *v = NULL;
	struct scar_state *s = NULL;
	uint64_t k = st->iteration, it = saved->iteration;
	size_t nv = 0, base = 0;
	int rc, have = 0;

	if (!store->dir)
		return 0;
	/* Manifests too: one process may resume what P ranks wrote. */
	if ((rc = list_ckpts(store->dir, &v, &nv, NULL, err)))
		return rc;
	for (size_t i = 0; i < nv && v[i].iteration <= k; i++)
		if (!v[i].partial && scar_store_is_policy_file(v[i].path, v[i].iteration)) {
			base = i;
			have = 1;
		}
	if (!have)
		goto out;
	if ((rc = load_entry(&v[base], &s, err)))
		goto out;
	if (strcmp(s->model, st->model) || s->shards != st->shards ||
	    s->ntensors != st->ntensors) {
		rc = scar_error_set_at(err, SCAR_EMISMATCH, v[base].path, -1, -1,
				       "checkpoint '%s' is not of the resumed run (model, shards or tensors differ)",
				       v[base].path);
		goto out;
	}
	for (size_t t = 0; t < s->ntensors; t++)
		if (strcmp(s->tensors[t]->name, st->tensors[t]->name) ||
		    !scar_tensor_same_layout(s->tensors[t], st->tensors[t]) ||
		    s->tensors[t]->role != st->tensors[t]->role) {
			rc = scar_error_set_at(err, SCAR_EMISMATCH, v[base].path, -1, -1,
					       "checkpoint '%s' tensor '%s' is not the resumed run's",
					       v[base].path, s->tensors[t]->name);
			goto out;
		}
	/* A full checkpoint replaces the view outright. */
	for (size_t t = 0; t < s->ntensors; t++)
		if (s->tensors[t]->role == SCAR_ROLE_PARAM)
			memcpy(saved->tensors[t]->data, s->tensors[t]->data,
			       scar_tensor_bytes(s->tensors[t]));
	if ((rc = mark_ages(saved, s, ages, err)))
		goto out;
	/* Older than k: the run's last full checkpoint was it, not the resumed state. */
	if (v[base].iteration < k) {
		scar_state_free(*last_full);
		*last_full = s;
		s = NULL;
	}
	saved->iteration = v[base].iteration;
	for (size_t i = base + 1; i < nv && v[i].iteration <= k; i++) {
		if (!v[i].partial || !scar_store_is_policy_file(v[i].path, v[i].iteration))
			continue;
		scar_state_free(s);
		s = NULL;
		if ((rc = load_entry(&v[i], &s, err)) ||
		    (rc = scar_ckpt_apply(saved, s, err)) ||
		    (rc = mark_ages(saved, s, ages, err)))
			break;
	}
out:
	saved->iteration = it;
	scar_state_free(s);
	scar_ckpt_list_free(v, nv);
	return rc;
}

/* ---- one writer per checkpoint directory ---- */

/* The pid a lock file holds, 0 when it says none (yet). */
static long lock_holder(int fd)
{
	for (int tries = 0; tries < 50; tries++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		char buf[32];
		ssize_t r = pread(fd, buf, sizeof(buf) - 1, 0);

		if (r > 0) {
			buf[r] = '\0';
			return strtol(buf, NULL, 10);
		}
		nanosleep(&ts, NULL);	/* the holder writes its pid just after taking the lock */
	}
	return 0;
}

/*
 * Temporaries of checkpoints (.ckpt-*.ckpt.tmp.*, scar_ckpt_save) and
 * manifests (.ckpt-*.manifest.tmp.*, likewise) that a killed writer left. Called
 * holding the directory's lock, so no live writer owns any: every writer
 * holds the lock while it writes. Files modified after the lock was taken
 * are spared all the same. Best effort: a temporary that cannot be removed
 * is only clutter, never read.
 */
static void remove_stale_temps(const char *dir, const struct timespec *start)
{
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d))) {
		char path[4096];
		struct stat sb;

		/*
		 * And the survivor files of a run that died (scar-mpi(7)), with
		 * their temporaries: a run now writing here supersedes them (its
		 * resume, if it was one, has read them), and a later resume must
		 * not take an earlier run's.
		 */
		if (strncmp(de->d_name, "survivor-", 9) == 0 ?
		    !scar_store_is_rank_file(de->d_name) :
		    strncmp(de->d_name, ".survivor-", 10) == 0 ? !strstr(de->d_name, ".ckpt.tmp.") :
		    (strncmp(de->d_name, ".ckpt-", 6) != 0 ||
		     (!strstr(de->d_name, ".ckpt.tmp.") && !strstr(de->d_name, ".manifest.tmp."))))
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= sizeof(path))
			continue;
		if (lstat(path, &sb) == 0 && S_ISREG(sb.st_mode) &&
		    (sb.st_mtim.tv_sec < start->tv_sec ||
		     (sb.st_mtim.tv_sec == start->tv_sec && sb.st_mtim.tv_nsec < start->tv_nsec)))
			unlink(path);
	}
	closedir(d);
}

int scar_store_lock(struct scar_store *s, struct scar_error *err)
{
	const char *dir = s->dir;
	char path[4096], pid[32];
	struct timespec start;
	int fd = -1, n;

	s->lock = -1;
	clock_gettime(CLOCK_REALTIME, &start);
	if ((size_t)snprintf(path, sizeof(path), "%s/" SCAR_STORE_LOCK_NAME, dir) >= sizeof(path))
		return scar_error_set(err, SCAR_EINVAL, "checkpoint directory name too long");
	/* The file may be unlinked by a holder that is done: lock the file the name still names. */
	for (int tries = 0;; tries++) {
		struct stat a, b;

		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
		if (fd < 0)
			return scar_error_set_errno(err, errno, path, "cannot open the lock file '%s'",
						    path);
		if (fstat(fd, &a) < 0 || !S_ISREG(a.st_mode)) {
			close(fd);
			return scar_error_set_at(err, SCAR_EIO, path, -1, -1,
						 "the lock file '%s' is not a regular file", path);
		}
		/* A hard link to some other file: writing the pid would overwrite that file. */
		if (a.st_nlink > 1) {
			close(fd);
			return scar_error_set_at(err, SCAR_EIO, path, -1, -1,
						 "the lock file '%s' has %lu links: not writing into a file that has other names",
						 path, (unsigned long)a.st_nlink);
		}
		if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			int e = errno;
			long holder;

			if (e != EWOULDBLOCK && e != EINTR) {
				close(fd);
				return scar_error_set_errno(err, e, path, "cannot lock '%s'", path);
			}
			holder = lock_holder(fd);
			close(fd);
			if (holder > 0)
				return scar_error_set_at(err, SCAR_EIO, dir, -1, -1,
							 "checkpoint directory '%s' is in use by another run (pid %ld holds '%s')",
							 dir, holder, path);
			return scar_error_set_at(err, SCAR_EIO, dir, -1, -1,
						 "checkpoint directory '%s' is in use by another run (it holds '%s')",
						 dir, path);
		}
		if (stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
			break;
		close(fd);
		if (tries == 100)
			return scar_error_set_at(err, SCAR_EIO, path, -1, -1,
						 "cannot lock '%s': it keeps being replaced", path);
	}
	n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
		int e = errno;

		unlink(path);
		close(fd);
		return scar_error_set_errno(err, e, path, "cannot write the lock file '%s'", path);
	}
	remove_stale_temps(dir, &start);
	s->lock = fd;
	return 0;
}

void scar_store_unlock(struct scar_store *s)
{
	char path[4096];

	if (s->lock < 0)
		return;
	/* Removed while still held: a writer that opened it meanwhile sees it replaced and retries. */
	if ((size_t)snprintf(path, sizeof(path), "%s/" SCAR_STORE_LOCK_NAME, s->dir) < sizeof(path))
		unlink(path);
	close(s->lock);
	s->lock = -1;
}


/* ---- writing a checkpoint ---- */

/* dir/name into path; SCAR_EINVAL when it does not fit. */
static int store_path(char *path, size_t len, const char *dir, const char *name,
		      struct scar_error *err)
{
	if ((size_t)snprintf(path, len, "%s/%s", dir, name) >= len)
		return scar_error_set(err, SCAR_EINVAL, "checkpoint directory name too long");
	return 0;
}

/* One process: the whole view as ckpt-N.ckpt; *bytes its size. */
static int write_file(const struct scar_store *s, const struct scar_state *view,
		      const struct scar_ckpt_save_opts *so, uint64_t *bytes, struct scar_error *err)
{
	char name[64], path[4096];
	struct stat sb;
	int rc;

	if (scar_store_file_name(name, sizeof(name), view->iteration) ||
	    store_path(path, sizeof(path), s->dir, name, NULL))
		return scar_error_set(err, SCAR_EINVAL, "checkpoint directory name too long");
	rc = scar_ckpt_save(view, path, so, err);
	if (rc)
		return rc;
	*bytes = stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
	return 0;
}

/*
 * Each rank writes its file of view (its rows) in parallel; once all have
 * (an agreement is the barrier), rank 0 writes the manifest. *bytes is the
 * total of the rank files, the same on every rank.
 */
static int write_dist(const struct scar_store *s, const struct scar_state *view,
		      const struct scar_store_write_opts *o, const struct scar_ckpt_save_opts *so,
		      uint64_t *bytes, struct scar_error *err)
{
	const struct scar_store_comm *comm = o->comm;
	struct scar_store_part mine = { 0, 0, 0 }, *all = NULL;
	char name[256], path[4096];
	int rc = 0;

	if (scar_store_rank_file_name(name, sizeof(name), view->iteration, o->rank) ||
	    store_path(path, sizeof(path), s->dir, name, NULL))
		rc = scar_error_set(err, SCAR_EINVAL, "checkpoint directory name too long");
	if (!rc)
		rc = scar_ckpt_save(view, path, so, err);
	if (!rc)
		rc = scar_dist_file_crc(path, &mine.size, &mine.crc32c, err);
	if ((rc = comm->agree(comm->arg, rc)))
		return rc;
	if (o->rank == 0 && !(all = calloc(o->ranks, sizeof(*all))))
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
	comm->gather(comm->arg, &mine, all);
	*bytes = 0;
	if (o->rank == 0 && !rc) {
		struct scar_dist_manifest m;

		memset(&m, 0, sizeof(m));
		snprintf(m.model, sizeof(m.model), "%s", view->model);
		m.iteration = view->iteration;
		m.clock = o->clock;
		m.ranks = o->ranks;
		m.shards = view->shards;
		m.partial = o->partial;
		m.nfiles = o->ranks;
		m.files = calloc(o->ranks, sizeof(*m.files));
		if (!m.files)
			rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
		for (uint32_t q = 0; !rc && q < o->ranks; q++) {
			scar_store_rank_file_name(m.files[q].name, sizeof(m.files[q].name),
						  view->iteration, q);
			m.files[q].rank = q;
			m.files[q].size = all[q].size;
			m.files[q].crc32c = all[q].crc32c;
			*bytes += all[q].size;
		}
		if (!rc && (scar_store_manifest_name(name, sizeof(name), view->iteration) ||
			    store_path(path, sizeof(path), s->dir, name, NULL)))
			rc = scar_error_set(err, SCAR_EINVAL, "checkpoint directory name too long");
		if (!rc)
			rc = scar_dist_manifest_write(path, &m, so->sync, err);
		free(m.files);
	}
	free(all);
	rc = comm->agree(comm->arg, rc);
	if (!rc)
		comm->bcast(comm->arg, bytes);
	return rc;
}

int scar_store_write(const struct scar_store *s, const struct scar_state *view,
		     const struct scar_store_write_opts *o, uint64_t *bytes,
		     struct scar_error *err)
{
	struct scar_ckpt_save_opts so;

	scar_ckpt_save_opts_init(&so);
	so.compress = o->compress;
	so.sync = o->sync;
	so.threads = o->threads ? o->threads : 1;
	so.shuffle = o->shuffle;
	return o->comm ? write_dist(s, view, o, &so, bytes, err) :
		write_file(s, view, &so, bytes, err);
}

/*
 * ---- scar/dist.h's names for the directory functions, kept for their
 * callers: the store is where they live now ----
 */

int scar_dist_rank_file_name(char *buf, size_t len, uint64_t iteration, uint32_t rank)
{
	return scar_store_rank_file_name(buf, len, iteration, rank);
}

int scar_dist_manifest_name(char *buf, size_t len, uint64_t iteration)
{
	return scar_store_manifest_name(buf, len, iteration);
}

int scar_dist_is_rank_file(const char *path)
{
	return scar_store_is_rank_file(path);
}

int scar_dist_ckpt_list(const char *dir, struct scar_ckpt_entry **out, size_t *n,
			size_t *skipped, struct scar_error *err)
{
	struct scar_store s;

	scar_store_init(&s, dir);
	return scar_store_list(&s, 0, out, n, skipped, err);
}

int scar_dist_resume_load(const char *path, struct scar_state **out, size_t *skipped,
			  char *used_path, size_t used_len, scar_dist_skip_fn skip, void *arg,
			  struct scar_error *err)
{
	return scar_store_resume_load(path, out, skipped, used_path, used_len, skip, arg, err);
}

int scar_dist_load_resume(const char *path, struct scar_state **out, size_t *skipped,
			  char *used_path, size_t used_len, struct scar_error *err)
{
	return scar_dist_resume_load(path, out, skipped, used_path, used_len, NULL, NULL, err);
}

int scar_dist_dir_lock(const char *dir, int *fd_out, struct scar_error *err)
{
	struct scar_store s;
	int rc;

	scar_store_init(&s, dir);
	rc = scar_store_lock(&s, err);
	*fd_out = s.lock;
	return rc;
}

void scar_dist_dir_unlock(const char *dir, int fd)
{
	struct scar_store s;

	scar_store_init(&s, dir);
	s.lock = fd;
	scar_store_unlock(&s);
}
