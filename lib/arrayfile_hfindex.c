/*
 * arrayfile_hfindex.c - the index of a Hugging Face sharded safetensors
 * snapshot (model.safetensors.index.json beside its files): finding it,
 * reading it and checking it against the files' own tables. The rules are
 * in scar/arrayfile.h (scar_arrayfile_open); arrayfile_npy.c opens the
 * files. Names from the index are data from the internet: a file name is
 * a plain name inside the index's directory, or it is refused.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arrayfile_internal.h"
#include "scar/file.h"

#define INDEX_DEFAULT "model.safetensors.index.json"
#define INDEX_SUFFIX ".safetensors.index.json"

/*
 * By name, not contents: the test opens and reads nothing, so a tool's
 * first open and read of its operand stay the reading of it (the fault
 * shim of the tests counts them), and nothing is consumed from a FIFO.
 */
int scar_array_is_sharded(const char *path)
{
	struct stat sb;
	size_t n;

	if (!path || !strcmp(path, "-") || stat(path, &sb) != 0)
		return 0;
	n = strlen(path);
	return S_ISDIR(sb.st_mode) || (n > 5 && !strcmp(path + n - 5, ".json"));
}

char *scar_hf_path_join(const char *dir, const char *name)
{
	size_t a = strlen(dir), b = strlen(name);
	char *p = malloc(a + b + 2);

	if (p) {
		memcpy(p, dir, a);
		p[a] = '/';
		memcpy(p + a + 1, name, b + 1);
	}
	return p;
}

static int has_suffix(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);

	return a > b && strcmp(s + a - b, suf) == 0;
}

/* The index of directory dir into *path (malloc'ed). */
static int find_index(const char *dir, char **path, struct scar_error *err)
{
	char *first = NULL, *second = NULL;
	struct dirent *de;
	struct stat sb;
	DIR *d;
	int rc = 0;

	*path = scar_hf_path_join(dir, INDEX_DEFAULT);
	if (!*path)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	if (stat(*path, &sb) == 0)
		return 0;
	free(*path);
	*path = NULL;
	if (!(d = opendir(dir)))
		return scar_error_set_errno(err, errno, dir, "cannot read directory '%s'", dir);
	while ((de = readdir(d))) {
		char *c;

		if (!has_suffix(de->d_name, INDEX_SUFFIX) || second)
			continue;	/* two are enough to say that there are several */
		if (!(c = strdup(de->d_name))) {
			rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
			break;
		}
		if (!first) {
			first = c;
		} else if (strcmp(c, first) < 0) {
			second = first;
			first = c;
		} else {
			second = c;
		}
	}
	closedir(d);
	if (rc == 0 && !first)
		rc = scar_error_set_at(err, SCAR_ENOTFOUND, dir, -1, -1,
				       "'%s' is a directory without a safetensors index (%s, or one "
				       "file *%s): name the snapshot's file", dir, INDEX_DEFAULT,
				       INDEX_SUFFIX);
	else if (rc == 0 && second)
		rc = scar_error_set_at(err, SCAR_ENOTFOUND, dir, -1, -1,
				       "'%s' holds several safetensors indexes ('%s', '%s'): name the "
				       "one to read", dir, first, second);
	else if (rc == 0 && !(*path = scar_hf_path_join(dir, first)))
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
	free(first);
	free(second);
	return rc;
}

static int read_index(struct scar_hf_index *ix, struct scar_error *err)
{
	struct stat sb;
	int fd = scar_open_input(ix->path, SCAR_OPEN_REGULAR, err), rc;

	if (fd < 0)
		return fd;
	if (fstat(fd, &sb) < 0) {
		rc = scar_error_set_errno(err, errno, ix->path, "cannot stat '%s'", ix->path);
		goto out;
	}
	if ((uint64_t)sb.st_size > SCAR_HF_INDEX_MAX) {
		rc = scar_error_set_at(err, SCAR_EFORMAT, ix->path, -1, -1,
				       "'%s' is no safetensors index: %llu bytes, more than the %u "
				       "allowed", ix->path, (unsigned long long)sb.st_size,
				       SCAR_HF_INDEX_MAX);
		goto out;
	}
	ix->len = (size_t)sb.st_size;
	if (!(ix->text = malloc(ix->len + 1))) {
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
		goto out;
	}
	rc = scar_read_full(fd, ix->text, ix->len);
	if (rc < 0)
		rc = scar_error_set_errno(err, -rc, ix->path, "cannot read '%s'", ix->path);
	else if (rc == 0)
		rc = scar_error_set_at(err, SCAR_ETRUNC, ix->path, -1, -1, "'%s' changed while read",
				       ix->path);
	else
		rc = 0;
out:
	close(fd);
	return rc;
}

/* A file name the index may give: a plain name in its directory. */
static int plain_name(const char *s)
{
	return s[0] && strcmp(s, ".") && strcmp(s, "..") && !strchr(s, '/') && strlen(s) <= 255;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int check_index(struct scar_hf_index *ix, struct scar_error *err)
{
	json_error_t jerr;
	json_t *meta, *v, *set = NULL;
	const char *key;
	int rc = 0;

	ix->root = json_loadb((const char *)ix->text, ix->len, JSON_REJECT_DUPLICATES, &jerr);
	if (!ix->root)
		return scar_error_set_at(err, SCAR_EFORMAT, ix->path, -1, jerr.line,
					 "not a safetensors index: %s", jerr.text);
	if (!json_is_object(ix->root))
		return scar_error_set_at(err, SCAR_EFORMAT, ix->path, -1, -1,
					 "'%s' is no safetensors index: not a JSON object", ix->path);
	meta = json_object_get(ix->root, "metadata");
	if (meta && !json_is_object(meta))
		return scar_error_set_at(err, SCAR_EFORMAT, ix->path, -1, -1,
					 "'%s': the index's metadata is not an object", ix->path);
	v = json_object_get(meta, "total_size");
	if (v && !(json_is_integer(v) && json_integer_value(v) >= 0))
		return scar_error_set_at(err, SCAR_EFORMAT, ix->path, -1, -1,
					 "'%s': the index's metadata total_size is not a byte count",
					 ix->path);
	ix->weight_map = json_object_get(ix->root, "weight_map");
	if (!json_is_object(ix->weight_map) || !json_object_size(ix->weight_map))
		return scar_error_set_at(err, SCAR_EFORMAT, ix->path, -1, -1,
					 "'%s' is no safetensors index: %s", ix->path,
					 !ix->weight_map ? "no weight_map" :
					 !json_is_object(ix->weight_map) ? "its weight_map is not an object" :
					 "its weight_map names no tensor");
	/* At most one file a tensor: the count is bounded by what the index holds. */
	ix->files = malloc(json_object_size(ix->weight_map) * sizeof(*ix->files));
	if (!ix->files || !(set = json_object()))
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	json_object_foreach(ix->weight_map, key, v) {
		const char *file = json_string_value(v);

		if (!file) {
			rc = scar_error_set_at(err, SCAR_EFORMAT, ix->path, -1, -1,
					       "'%s': tensor '%s' is mapped to no file name", ix->path,
					       key);
			break;
		}
		if (!plain_name(file)) {
			rc = scar_error_set_at(err, SCAR_EFORMAT, ix->path, -1, -1,
					       "'%s': tensor '%s' is mapped to '%s', not a file name in "
					       "the index's directory", ix->path, key, file);
			break;
		}
		if (json_object_get(set, file))
			continue;
		if (json_object_set_new(set, file, json_true()) < 0) {
			rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
			break;
		}
		ix->files[ix->nfiles++] = file;
	}
	json_decref(set);
	if (rc == 0)
		qsort(ix->files, ix->nfiles, sizeof(*ix->files), cmp_str);
	return rc;
}

int scar_hf_index_load(struct scar_hf_index *ix, const char *path, struct scar_error *err)
{
	struct stat sb;
	int rc;

	memset(ix, 0, sizeof(*ix));
	if (stat(path, &sb) != 0)
		return scar_error_set_errno(err, errno, path, "cannot open '%s'", path);
	if (S_ISDIR(sb.st_mode)) {
		if (!(ix->dir = strdup(path))) {
			rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
			goto out;
		}
		if ((rc = find_index(path, &ix->path, err)) < 0)
			goto out;
	} else {
		const char *slash = strrchr(path, '/');

		ix->path = strdup(path);
		ix->dir = !slash ? strdup(".") : slash == path ? strdup("/") :
			strndup(path, (size_t)(slash - path));
		if (!ix->path || !ix->dir) {
			rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
			goto out;
		}
	}
	if ((rc = read_index(ix, err)) < 0 || (rc = check_index(ix, err)) < 0)
		goto out;
	return 0;
out:
	scar_hf_index_release(ix);
	return rc;
}

void scar_hf_index_release(struct scar_hf_index *ix)
{
	free(ix->dir);
	free(ix->path);
	free(ix->text);
	free(ix->files);
	json_decref(ix->root);
	memset(ix, 0, sizeof(*ix));
}

int scar_hf_index_check_file(const struct scar_hf_index *ix, size_t k,
			     const struct scar_array_info *t, size_t n, json_t *seen,
			     struct scar_error *err)
{
	for (size_t i = 0; i < n; i++) {
		const char *to = json_string_value(json_object_get(ix->weight_map, t[i].name));

		if (!to)
			return scar_error_set_at(err, SCAR_EFORMAT, ix->path, -1, -1,
						 "'%s': tensor '%s' of '%s' is not in its weight_map",
						 ix->path, t[i].name, ix->files[k]);
		if (strcmp(to, ix->files[k]))
			return scar_error_set_at(err, SCAR_EFORMAT, ix->path, -1, -1,
						 "'%s': tensor '%s' is in '%s' but mapped to '%s'",
						 ix->path, t[i].name, ix->files[k], to);
		if (json_object_set_new(seen, t[i].name, json_true()) < 0)
			return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	}
	return 0;
}

int scar_hf_index_check_all(const struct scar_hf_index *ix, const json_t *seen,
			    struct scar_error *err)
{
	const char *key;
	json_t *v;

	json_object_foreach(ix->weight_map, key, v) {
		if (!json_object_get(seen, key))
			return scar_error_set_at(err, SCAR_EFORMAT, ix->path, -1, -1,
						 "'%s': tensor '%s' is mapped to '%s', which does not "
						 "hold it", ix->path, key, json_string_value(v));
	}
	return 0;
}
