/*
 * ckpt_dir.c - the checkpoints of a directory: every *.ckpt whose header and
 * metadata read cleanly, by iteration then name.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scar/ckpt.h"
#include "scar/file.h"

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
