/*
 * arrayfile_npy.c - opening array files (both formats), reading their data,
 * the .npy reader and writer (see scar/arrayfile.h); files are replaced
 * through scar_file_replace (scar/file.h). The safetensors header parser and writer live in
 * arrayfile_safetensors.c.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arrayfile_internal.h"
#include "scar/ckpt.h"
#include "scar/file.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "scar array files assume a little-endian host"
#endif

#define NPY_MAGIC "\x93NUMPY"
#define NPY_HEADER_MAX (1u << 20)
#define ST_HEADER_MAX (100u << 20)

struct scar_arrayfile {
	enum scar_array_format format;
	int fd;			/* -1 once the file is in mem */
	int own_fd;
	char *name;
	unsigned char *mem;	/* whole file, for pipes */
	uint64_t size;
	size_t n;
	struct scar_array_info *t;
	json_t *meta;
	struct stat sb;		/* of a regular file, as opened */
	int regular;
	/* a sharded snapshot: tensor i is tensor tidx[i] of part[tfile[i]] */
	struct scar_hf_index *ix;
	struct scar_arrayfile **part;
	size_t *tfile, *tidx;
};

/* ---- reading ---- */

static int rd(struct scar_arrayfile *f, uint64_t off, void *buf, size_t len,
	      struct scar_error *err)
{
	char *p = buf;

	if (off > f->size || len > f->size - off)
		return scar_error_set_at(err, SCAR_ETRUNC, f->name, (int64_t)f->size, -1,
					 "'%s' ends early (%llu bytes, needed %llu)", f->name,
					 (unsigned long long)f->size,
					 (unsigned long long)(off + len));
	if (f->mem) {
		memcpy(buf, f->mem + off, len);
		return 0;
	}
	while (len) {
		ssize_t r = pread(f->fd, p, len, (off_t)off);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return scar_error_set_errno(err, errno, f->name, "cannot read '%s'", f->name);
		}
		if (r == 0)
			return scar_error_set_at(err, SCAR_ETRUNC, f->name, (int64_t)off, -1,
						 "'%s' ends early", f->name);
		p += r;
		off += (uint64_t)r;
		len -= (size_t)r;
	}
	return 0;
}

static uint64_t le64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

int scar_array_sniff(const void *head, size_t n)
{
	const unsigned char *p = head;

	if (n >= 6 && memcmp(p, NPY_MAGIC, 6) == 0)
		return SCAR_ARRAY_NPY;
	if (n >= 9) {
		uint64_t len = le64(p);

		if (len >= 2 && len <= ST_HEADER_MAX && p[8] == '{')
			return SCAR_ARRAY_SAFETENSORS;
	}
	return 0;
}

int scar_array_sniff_file(const char *path)
{
	unsigned char head[16];
	struct stat sb;
	ssize_t n;
	int fd;

	if (!path || !strcmp(path, "-") || stat(path, &sb) != 0 || !S_ISREG(sb.st_mode) ||
	    (fd = scar_open_input(path, 0, NULL)) < 0)
		return 0;
	n = scar_read_upto(fd, head, sizeof(head));
	close(fd);
	return n > 0 ? scar_array_sniff(head, (size_t)n) : 0;
}

/* A tiny reader of the Python dict literal in a .npy header. */
struct pylit {
	const char *p, *end;
};

static void py_ws(struct pylit *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n'))
		s->p++;
}

static int py_char(struct pylit *s, char c)
{
	py_ws(s);
	if (s->p < s->end && *s->p == c) {
		s->p++;
		return 1;
	}
	return 0;
}

static int py_str(struct pylit *s, char *out, size_t cap)
{
	char q;
	size_t n = 0;

	py_ws(s);
	if (s->p >= s->end || (*s->p != '\'' && *s->p != '"'))
		return -1;
	q = *s->p++;
	while (s->p < s->end && *s->p != q) {
		if (n + 1 >= cap)
			return -1;
		out[n++] = *s->p++;
	}
	if (s->p >= s->end)
		return -1;
	s->p++;
	out[n] = 0;
	return 0;
}

static int py_word(struct pylit *s, const char *w)
{
	size_t n = strlen(w);

	py_ws(s);
	if ((size_t)(s->end - s->p) >= n && memcmp(s->p, w, n) == 0) {
		s->p += n;
		return 1;
	}
	return 0;
}

static int npy_dtype(const char *descr, struct scar_array_info *t)
{
	char order = descr[0];

	if (order != '<' && order != '>' && order != '|' && order != '=')
		return -1;
	t->dtype = scar_array_dtype(descr + 1, &t->stored, &t->stored_size);
	if (!t->dtype || isupper((unsigned char)descr[1]))
		return -1;
	t->swap = order == '>' && t->stored_size > 1;
	return 0;
}

static void npy_stem(const char *path, char *out)
{
	const char *base, *dot;
	size_t n;

	if (!path || strcmp(path, "-") == 0) {
		strcpy(out, "array");
		return;
	}
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	dot = strrchr(base, '.');
	n = dot && dot != base ? (size_t)(dot - base) : strlen(base);
	if (n == 0) {
		strcpy(out, "array");
		return;
	}
	if (n >= SCAR_NAME_MAX) {
		n = SCAR_NAME_MAX - 1;
		/* Not inside a UTF-8 character: the name must stay valid in JSON metadata. */
		while (n > 1 && ((unsigned char)base[n] & 0xC0) == 0x80)
			n--;
	}
	memcpy(out, base, n);
	out[n] = 0;
}

/* What npy_dict found wrong with a header's dict. */
enum { NPY_OK, NPY_MALFORMED, NPY_DTYPE, NPY_FORTRAN };

/*
 * Parse the Python dict of a .npy header (hlen bytes at h) into t's dtype,
 * shape and swap; *elems_out gets the element count. descr (32 bytes)
 * keeps the dtype string for messages.
 */
static int npy_dict(const char *h, size_t hlen, struct scar_array_info *t, uint64_t *elems_out,
		    char *descr)
{
	char key[32];
	struct pylit s;
	int have_descr = 0, have_shape = 0, fortran = 0;
	uint64_t elems = 1;

	s.p = h;
	s.end = h + hlen;
	if (!py_char(&s, '{'))
		goto bad;
	while (!py_char(&s, '}')) {
		if (py_str(&s, key, sizeof(key)) < 0 || !py_char(&s, ':'))
			goto bad;
		if (strcmp(key, "descr") == 0) {
			if (py_str(&s, descr, 32) < 0)
				goto bad;
			have_descr = 1;
		} else if (strcmp(key, "fortran_order") == 0) {
			if (py_word(&s, "True"))
				fortran = 1;
			else if (!py_word(&s, "False"))
				goto bad;
		} else if (strcmp(key, "shape") == 0) {
			if (!py_char(&s, '('))
				goto bad;
			while (!py_char(&s, ')')) {
				uint64_t v = 0;
				int digits = 0;

				py_ws(&s);
				while (s.p < s.end && *s.p >= '0' && *s.p <= '9') {
					if (v > (UINT64_MAX - 9) / 10)
						goto bad;
					v = v * 10 + (uint64_t)(*s.p++ - '0');
					digits++;
				}
				if (s.p < s.end && *s.p == 'L')
					s.p++;
				if (!digits || t->ndim >= SCAR_MAX_DIMS)
					goto bad;
				t->shape[t->ndim++] = v;
				if (v && elems > UINT64_MAX / v)
					goto bad;
				elems *= v;
				if (!py_char(&s, ',')) {
					if (!py_char(&s, ')'))
						goto bad;
					break;
				}
			}
			have_shape = 1;
		} else {
			goto bad;
		}
		if (!py_char(&s, ',')) {
			if (!py_char(&s, '}'))
				goto bad;
			break;
		}
	}
	if (!have_descr || !have_shape)
		goto bad;
	if (npy_dtype(descr, t) < 0)
		return NPY_DTYPE;
	if (fortran && t->ndim > 1)
		return NPY_FORTRAN;
	*elems_out = elems;
	return NPY_OK;
bad:
	return NPY_MALFORMED;
}

static int npy_parse(struct scar_arrayfile *f, struct scar_error *err)
{
	unsigned char pre[12];
	uint64_t hlen, hstart;
	char *h = NULL, descr[32] = "";
	struct scar_array_info *t;
	int rc, s;
	uint64_t elems = 1;
	size_t esz;

	rc = rd(f, 0, pre, 10, err);
	if (rc < 0)
		return rc;
	if (pre[6] == 1) {
		hlen = (uint64_t)pre[8] | (uint64_t)pre[9] << 8;
		hstart = 10;
	} else if (pre[6] == 2 || pre[6] == 3) {
		rc = rd(f, 0, pre, 12, err);
		if (rc < 0)
			return rc;
		hlen = (uint64_t)pre[8] | (uint64_t)pre[9] << 8 | (uint64_t)pre[10] << 16 |
		       (uint64_t)pre[11] << 24;
		hstart = 12;
	} else {
		return scar_error_set_at(err, SCAR_EVERSION, f->name, 6, -1,
					 "unsupported .npy version %u.%u", pre[6], pre[7]);
	}
	if (hlen > NPY_HEADER_MAX)
		return scar_error_set_at(err, SCAR_EFORMAT, f->name, 8, -1,
					 ".npy header too long (%llu bytes)", (unsigned long long)hlen);
	t = calloc(1, sizeof(*t));
	h = malloc(hlen + 1);
	if (!t || !h) {
		free(t);
		free(h);
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	}
	f->t = t;
	f->n = 1;
	npy_stem(f->name, t->name);
	rc = rd(f, hstart, h, hlen, err);
	if (rc < 0)
		goto out;
	h[hlen] = 0;
	s = npy_dict(h, (size_t)hlen, t, &elems, descr);
	if (s == NPY_DTYPE) {
		rc = scar_error_set_at(err, SCAR_EUNSUPPORTED, f->name, (int64_t)hstart, -1,
				       "tensor '%s': unsupported .npy dtype '%s'", t->name, descr);
		goto out;
	}
	if (s == NPY_FORTRAN) {
		rc = scar_error_set_at(err, SCAR_EUNSUPPORTED, f->name, (int64_t)hstart, -1,
				       "tensor '%s': Fortran-order arrays are not supported", t->name);
		goto out;
	}
	rc = SCAR_EFORMAT;
	if (s != NPY_OK)
		goto bad;
	esz = scar_dtype_size(t->dtype);
	if (elems > UINT64_MAX / esz)
		goto bad;
	t->role = SCAR_ROLE_PARAM;
	t->offset = hstart + hlen;
	t->nbytes = elems * esz;
	if (t->ndim > 0 && !elems && t->shape[0] > SCAR_ZERO_WIDTH_ROWS_MAX) {
		rc = scar_error_set_at(err, SCAR_EUNSUPPORTED, f->name, (int64_t)hstart, -1,
				       "tensor '%s': %llu rows of zero bytes, more than the %llu allowed",
				       t->name, (unsigned long long)t->shape[0],
				       (unsigned long long)SCAR_ZERO_WIDTH_ROWS_MAX);
		goto out;
	}
	if (t->offset > f->size || elems * t->stored_size > f->size - t->offset) {
		rc = scar_error_set_at(err, SCAR_ETRUNC, f->name, (int64_t)f->size, -1,
				       "'%s' ends early: tensor '%s' needs %llu data bytes", f->name,
				       t->name, (unsigned long long)t->nbytes);
		goto out;
	}
	/* The data is exactly what the shape declares: a longer file is damaged. */
	if (elems * t->stored_size != f->size - t->offset) {
		rc = scar_error_set_at(err, SCAR_ECORRUPT, f->name,
				       (int64_t)(t->offset + elems * t->stored_size), -1,
				       "%llu bytes after the data of tensor '%s' (its shape declares "
				       "%llu bytes)",
				       (unsigned long long)(f->size - t->offset - elems * t->stored_size),
				       t->name, (unsigned long long)(elems * t->stored_size));
		goto out;
	}
	rc = 0;
	goto out;
bad:
	rc = scar_error_set_at(err, SCAR_EFORMAT, f->name, (int64_t)hstart, -1,
			       "malformed .npy header");
out:
	free(h);
	return rc;
}

static int slurp(struct scar_arrayfile *f, const void *head, size_t n, struct scar_error *err)
{
	size_t cap = n > 65536 ? n * 2 : 65536, len = n;
	unsigned char *buf = malloc(cap);

	if (!buf)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	if (n)
		memcpy(buf, head, n);
	for (;;) {
		ssize_t r;

		if (len == cap) {
			unsigned char *nb = cap > SIZE_MAX / 2 ? NULL : realloc(buf, cap * 2);

			if (!nb) {
				free(buf);
				return scar_error_set(err, SCAR_ENOMEM, "out of memory reading '%s'",
						      f->name);
			}
			buf = nb;
			cap *= 2;
		}
		r = read(f->fd, buf + len, cap - len);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			free(buf);
			return scar_error_set_errno(err, errno, f->name, "cannot read '%s'", f->name);
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	f->mem = buf;
	f->size = len;
	return 0;
}

int scar_arrayfile_open_fd(struct scar_arrayfile **out, int fd, const char *name,
			   const void *head, size_t n, struct scar_error *err)
{
	struct scar_arrayfile *f;
	struct stat st;
	unsigned char sniff[16];
	int rc;

	*out = NULL;
	f = calloc(1, sizeof(*f));
	if (!f || !(f->name = strdup(name ? name : "-"))) {
		free(f);
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	}
	f->fd = fd;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		f->size = (uint64_t)st.st_size;
		f->sb = st;
		f->regular = 1;
	} else {
		rc = slurp(f, head, n, err);
		if (rc < 0)
			goto fail;
	}
	memset(sniff, 0, sizeof(sniff));
	rc = rd(f, 0, sniff, f->size < sizeof(sniff) ? (size_t)f->size : sizeof(sniff), err);
	if (rc < 0)
		goto fail;
	switch (scar_array_sniff(sniff, f->size < sizeof(sniff) ? (size_t)f->size : sizeof(sniff))) {
	case SCAR_ARRAY_NPY:
		f->format = SCAR_ARRAY_NPY;
		rc = npy_parse(f, err);
		break;
	case SCAR_ARRAY_SAFETENSORS: {
		uint64_t hlen = le64(sniff);
		char *h = malloc(hlen);

		f->format = SCAR_ARRAY_SAFETENSORS;
		if (!h) {
			rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
			break;
		}
		rc = rd(f, 8, h, hlen, err);
		if (rc == 0)
			rc = scar_safetensors_parse(h, hlen, 8 + hlen, f->size, &f->t, &f->n,
						    &f->meta, err);
		free(h);
		if (rc < 0 && err)
			snprintf(err->file, sizeof(err->file), "%s", f->name);
		break;
	}
	default:
		rc = scar_error_set_at(err, SCAR_EFORMAT, f->name, 0, -1,
				       "'%s' is not a .npy or safetensors file", f->name);
	}
	if (rc < 0)
		goto fail;
	*out = f;
	return 0;
fail:
	scar_arrayfile_close(f);
	return rc;
}

/*
 * A sharded snapshot: the index read and checked alone, then each of its
 * files opened (as a regular safetensors file, never as an index: a file
 * may not lead to another) and checked against the weight_map, then the
 * weight_map against the files. Only then is the tensor table built.
 */
static int sharded_open(struct scar_arrayfile **out, const char *path, struct scar_error *err)
{
	struct scar_arrayfile *f = calloc(1, sizeof(*f));
	json_t *seen = NULL;
	size_t total = 0, i = 0;
	int rc;

	if (!f || !(f->name = strdup(path)) || !(f->ix = calloc(1, sizeof(*f->ix)))) {
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
		goto fail;
	}
	f->fd = -1;
	f->format = SCAR_ARRAY_SAFETENSORS_INDEX;
	if ((rc = scar_hf_index_load(f->ix, path, err)) < 0) {
		free(f->ix);
		f->ix = NULL;
		goto fail;
	}
	f->part = calloc(f->ix->nfiles, sizeof(*f->part));
	if (!f->part || !(seen = json_object())) {
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
		goto fail;
	}
	for (size_t k = 0; k < f->ix->nfiles; k++) {
		struct scar_arrayfile *p;
		char *pp = scar_hf_path_join(f->ix->dir, f->ix->files[k]);
		int fd;

		if (!pp) {
			rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
			goto fail;
		}
		fd = scar_open_input(pp, SCAR_OPEN_REGULAR, err);
		rc = fd < 0 ? fd : scar_arrayfile_open_fd(&f->part[k], fd, pp, NULL, 0, err);
		if (rc < 0 && fd >= 0)
			close(fd);
		free(pp);
		if (rc < 0)
			goto fail;
		p = f->part[k];
		p->own_fd = 1;
		if (p->format != SCAR_ARRAY_SAFETENSORS) {
			rc = scar_error_set_at(err, SCAR_EFORMAT, p->name, -1, -1,
					       "'%s', named by '%s', is not a safetensors file", p->name,
					       f->ix->path);
			goto fail;
		}
	}
	/* Every file is there before one is held against the weight_map. */
	for (size_t k = 0; k < f->ix->nfiles; k++) {
		if ((rc = scar_hf_index_check_file(f->ix, k, f->part[k]->t, f->part[k]->n, seen,
						   err)) < 0)
			goto fail;
		total += f->part[k]->n;
	}
	if ((rc = scar_hf_index_check_all(f->ix, seen, err)) < 0)
		goto fail;
	f->t = calloc(total, sizeof(*f->t));
	f->tfile = calloc(total, sizeof(*f->tfile));
	f->tidx = calloc(total, sizeof(*f->tidx));
	if (!f->t || !f->tfile || !f->tidx) {
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
		goto fail;
	}
	for (size_t k = 0; k < f->ix->nfiles; k++)
		for (size_t j = 0; j < f->part[k]->n; j++, i++) {
			f->t[i] = f->part[k]->t[j];
			f->tfile[i] = k;
			f->tidx[i] = j;
		}
	f->n = total;
	f->meta = json_incref(f->part[0]->meta);
	json_decref(seen);
	*out = f;
	return 0;
fail:
	json_decref(seen);
	scar_arrayfile_close(f);
	return rc;
}

int scar_arrayfile_open(struct scar_arrayfile **out, const char *path, struct scar_error *err)
{
	int fd, rc;

	*out = NULL;
	if (path && strcmp(path, "-") && scar_array_is_sharded(path))
		return sharded_open(out, path, err);
	if (!path || strcmp(path, "-") == 0)
		return scar_arrayfile_open_fd(out, STDIN_FILENO, "-", NULL, 0, err);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return scar_error_set_errno(err, errno, path, "cannot open '%s'", path);
	rc = scar_arrayfile_open_fd(out, fd, path, NULL, 0, err);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	(*out)->own_fd = 1;
	return 0;
}

void scar_arrayfile_close(struct scar_arrayfile *f)
{
	if (!f)
		return;
	for (size_t k = 0; f->part && k < f->ix->nfiles; k++)
		scar_arrayfile_close(f->part[k]);
	free(f->part);
	free(f->tfile);
	free(f->tidx);
	if (f->ix)
		scar_hf_index_release(f->ix);
	free(f->ix);
	if (f->own_fd && f->fd >= 0)
		close(f->fd);
	free(f->name);
	free(f->mem);
	free(f->t);
	json_decref(f->meta);
	free(f);
}

enum scar_array_format scar_arrayfile_format(const struct scar_arrayfile *f)
{
	return f->format;
}

size_t scar_arrayfile_count(const struct scar_arrayfile *f)
{
	return f->n;
}

const struct scar_array_info *scar_arrayfile_tensor(const struct scar_arrayfile *f, size_t i)
{
	return i < f->n ? &f->t[i] : NULL;
}

long scar_arrayfile_find(const struct scar_arrayfile *f, const char *name)
{
	for (size_t i = 0; i < f->n; i++)
		if (strcmp(f->t[i].name, name) == 0)
			return (long)i;
	return -1;
}

const json_t *scar_arrayfile_metadata(const struct scar_arrayfile *f)
{
	return f->meta;
}

const struct scar_hf_index *scar_arrayfile_index(const struct scar_arrayfile *f)
{
	return f->ix;
}

size_t scar_arrayfile_file_of(const struct scar_arrayfile *f, size_t i)
{
	return f->tfile && i < f->n ? f->tfile[i] : 0;
}

int scar_arrayfile_read_raw(struct scar_arrayfile *f, size_t i, uint64_t off, void *buf,
			    size_t len, struct scar_error *err)
{
	const struct scar_array_info *t = scar_arrayfile_tensor(f, i);
	uint64_t stored;

	if (t && f->tfile)
		return scar_arrayfile_read_raw(f->part[f->tfile[i]], f->tidx[i], off, buf, len, err);
	stored = t ? t->nbytes / scar_dtype_size(t->dtype) * t->stored_size : 0;
	if (!t || off > stored || len > stored - off)
		return scar_error_set(err, SCAR_ERANGE, "read outside tensor %zu of '%s'", i, f->name);
	return rd(f, t->offset + off, buf, len, err);
}

int scar_arrayfile_file_bytes(struct scar_arrayfile *f, size_t k, unsigned char **buf,
			      uint64_t *len, struct scar_error *err)
{
	struct scar_arrayfile *p = f->ix && k < f->ix->nfiles ? f->part[k] : NULL;
	struct stat now;
	int rc;

	*buf = NULL;
	*len = 0;
	if (!p || !p->regular)
		return scar_error_set(err, SCAR_EINVAL, "'%s' has no file %zu", f->name, k);
	if (!(*buf = malloc(p->size ? p->size : 1)))
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	rc = rd(p, 0, *buf, p->size, err);
	if (rc == 0 && (fstat(p->fd, &now) < 0 || now.st_size != p->sb.st_size ||
			now.st_mtim.tv_sec != p->sb.st_mtim.tv_sec ||
			now.st_mtim.tv_nsec != p->sb.st_mtim.tv_nsec))
		rc = scar_error_set_at(err, SCAR_ETRUNC, p->name, -1, -1, "'%s' changed while read",
				       p->name);
	if (rc < 0) {
		free(*buf);
		*buf = NULL;
		return rc;
	}
	*len = p->size;
	return 0;
}

static void swap_bytes(void *buf, size_t len, size_t esz)
{
	unsigned char *p = buf;

	for (size_t i = 0; i + esz <= len; i += esz)
		for (size_t a = 0, b = esz - 1; a < b; a++, b--) {
			unsigned char c = p[i + a];

			p[i + a] = p[i + b];
			p[i + b] = c;
		}
}

/*
 * Widen n narrow elements stored at the end of buf into the whole of buf,
 * front to back: element i is read before anything overwrites it.
 */
static void widen(const struct scar_array_info *t, unsigned char *buf, size_t n)
{
	const unsigned char *src = buf + n * (scar_dtype_size(t->dtype) - t->stored_size);

	for (size_t i = 0; i < n; i++) {
		const unsigned char *s = src + i * t->stored_size;
		uint16_t h = (uint16_t)(s[0] | (t->stored_size > 1 ? s[1] << 8 : 0));

		if (!strcmp(t->stored, "f16")) {
			float v = scar_f16_to_f32(h);

			memcpy(buf + 4 * i, &v, 4);
		} else if (!strcmp(t->stored, "bf16")) {
			float v = scar_bf16_to_f32(h);

			memcpy(buf + 4 * i, &v, 4);
		} else if (!strcmp(t->stored, "f8_e4m3")) {
			float v = scar_f8e4m3_to_f32(s[0]);

			memcpy(buf + 4 * i, &v, 4);
		} else if (!strcmp(t->stored, "f8_e5m2")) {
			float v = scar_f8e5m2_to_f32(s[0]);

			memcpy(buf + 4 * i, &v, 4);
		} else if (!strcmp(t->stored, "i8")) {
			int32_t v = (int8_t)s[0];

			memcpy(buf + 4 * i, &v, 4);
		} else if (!strcmp(t->stored, "i16")) {
			int32_t v = (int16_t)h;

			memcpy(buf + 4 * i, &v, 4);
		} else if (!strcmp(t->stored, "u16")) {
			uint32_t v = h;

			memcpy(buf + 4 * i, &v, 4);
		} else {
			buf[i] = s[0] != 0;	/* bool */
		}
	}
}

int scar_arrayfile_read(struct scar_arrayfile *f, size_t i, uint64_t off, void *buf,
			size_t len, struct scar_error *err)
{
	const struct scar_array_info *t = scar_arrayfile_tensor(f, i);
	size_t esz, n;
	int rc;

	if (!t || off > t->nbytes || len > t->nbytes - off)
		return scar_error_set(err, SCAR_ERANGE, "read outside tensor %zu of '%s'", i, f->name);
	if (f->tfile)
		return scar_arrayfile_read(f->part[f->tfile[i]], f->tidx[i], off, buf, len, err);
	esz = scar_dtype_size(t->dtype);
	if (!t->stored) {
		rc = rd(f, t->offset + off, buf, len, err);
		if (rc == 0 && t->swap)
			swap_bytes(buf, len, esz);
		return rc;
	}
	n = len / esz;
	rc = rd(f, t->offset + off / esz * t->stored_size,
		(unsigned char *)buf + len - n * t->stored_size, n * t->stored_size, err);
	if (rc == 0 && t->swap)
		swap_bytes((unsigned char *)buf + len - n * t->stored_size, n * t->stored_size,
			   t->stored_size);
	if (rc == 0)
		widen(t, buf, n);
	return rc;
}

void scar_array_decode(const struct scar_array_info *t, void *buf, size_t n)
{
	size_t esz = scar_dtype_size(t->dtype);
	unsigned char *src = (unsigned char *)buf + n * (esz - t->stored_size);

	if (!t->stored) {
		if (t->swap)
			swap_bytes(buf, n * esz, esz);
		return;
	}
	if (t->swap)
		swap_bytes(src, n * t->stored_size, t->stored_size);
	widen(t, buf, n);
}

/* A header read from a stream that ends, or is refused, early: the reason alone. */
static int npy_refuse(struct scar_error *err, int code, const char *name, const char *why)
{
	int rc = scar_error_set(err, code, "%s", why);

	if (err && name)
		snprintf(err->file, sizeof(err->file), "%s", name);
	return rc;
}

int scar_npy_header_read(int fd, const char *name, const void *head, size_t n, uint64_t size,
			 struct scar_array_info *t, struct scar_error *err)
{
	unsigned char pre[12];
	uint64_t hlen, elems = 0;
	char *h, descr[32] = "";
	size_t off;
	int rc;

	memset(t, 0, sizeof(*t));
	if (n > 10)
		return scar_error_set(err, SCAR_EINVAL, "scar_npy_header_read: %zu head bytes", n);
	memcpy(pre, head, n);
	if ((rc = scar_read_full(fd, pre + n, 10 - n)) < 0)
		return scar_error_set_errno(err, -rc, name, "cannot read '%s'", name);
	if (rc == 0 || memcmp(pre, NPY_MAGIC, 6) != 0)
		return npy_refuse(err, rc ? SCAR_EFORMAT : SCAR_ETRUNC, name,
				  rc ? "no .npy magic" : "truncated header");
	if (pre[6] == 1) {
		hlen = (uint64_t)pre[8] | (uint64_t)pre[9] << 8;
		off = 10;
	} else if (pre[6] == 2 || pre[6] == 3) {
		/* A read error is no truncation: it is reported as what it is. */
		if ((rc = scar_read_full(fd, pre + 10, 2)) < 0)
			return scar_error_set_errno(err, -rc, name, "cannot read '%s'", name);
		if (rc == 0)
			return npy_refuse(err, SCAR_ETRUNC, name, "truncated header");
		hlen = (uint64_t)pre[8] | (uint64_t)pre[9] << 8 | (uint64_t)pre[10] << 16 |
		       (uint64_t)pre[11] << 24;
		off = 12;
	} else {
		return npy_refuse(err, SCAR_EVERSION, name, "unsupported NPY version");
	}
	if (hlen > NPY_HEADER_MAX || off + hlen > size)
		return npy_refuse(err, SCAR_EFORMAT, name, "bad header length");
	if (!(h = malloc(hlen + 1)))
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	if ((rc = scar_read_full(fd, h, (size_t)hlen)) <= 0) {
		free(h);
		if (rc < 0)
			return scar_error_set_errno(err, -rc, name, "cannot read '%s'", name);
		return npy_refuse(err, SCAR_ETRUNC, name, "truncated header");
	}
	h[hlen] = 0;
	rc = npy_dict(h, (size_t)hlen, t, &elems, descr);
	free(h);
	if (rc == NPY_DTYPE) {
		char why[64];

		snprintf(why, sizeof(why), "unsupported dtype '%s'", descr);
		return npy_refuse(err, SCAR_EUNSUPPORTED, name, why);
	}
	if (rc == NPY_FORTRAN)
		return npy_refuse(err, SCAR_EUNSUPPORTED, name, "Fortran order is not supported");
	if (rc != NPY_OK || elems > UINT64_MAX / scar_dtype_size(t->dtype))
		return npy_refuse(err, SCAR_EFORMAT, name, "malformed header");
	t->role = SCAR_ROLE_PARAM;
	t->offset = off + hlen;
	t->nbytes = elems * scar_dtype_size(t->dtype);
	return 0;
}

int scar_arrayfile_load_tensor(struct scar_arrayfile *f, size_t i, struct scar_tensor **out,
			       struct scar_error *err)
{
	const struct scar_array_info *info = scar_arrayfile_tensor(f, i);
	struct scar_tensor *t;
	int rc;

	*out = NULL;
	if (!info)
		return scar_error_set(err, SCAR_ENOTFOUND, "no tensor %zu in '%s'", i, f->name);
	rc = scar_tensor_new(&t, info->name, info->dtype, info->role, info->ndim, info->shape, err);
	if (rc < 0)
		return rc;
	rc = scar_arrayfile_read(f, i, 0, t->data, (size_t)info->nbytes, err);
	if (rc < 0) {
		scar_tensor_free(t);
		return rc;
	}
	*out = t;
	return 0;
}

int scar_array_load(const char *path, struct scar_state **out, struct scar_error *err)
{
	struct scar_arrayfile *f;
	struct scar_state *st = NULL;
	int rc;

	*out = NULL;
	rc = scar_arrayfile_open(&f, path, err);
	if (rc < 0)
		return rc;
	rc = scar_state_new(&st, "", err);
	for (size_t i = 0; rc == 0 && i < f->n; i++) {
		struct scar_tensor *t;

		rc = scar_arrayfile_load_tensor(f, i, &t, err);
		if (rc == 0)
			rc = scar_state_add(st, t, err);
	}
	if (rc == 0 && f->meta)
		rc = json_object_set(st->extra, "safetensors", f->meta) == 0 ? 0 :
			scar_error_set(err, SCAR_ENOMEM, "out of memory");
	scar_arrayfile_close(f);
	if (rc < 0) {
		scar_state_free(st);
		return rc;
	}
	*out = st;
	return 0;
}

/* ---- writing ---- */

static const char *npy_descr(enum scar_dtype t)
{
	switch (t) {
	case SCAR_F32: return "<f4";
	case SCAR_F64: return "<f8";
	case SCAR_I32: return "<i4";
	case SCAR_U32: return "<u4";
	case SCAR_I64: return "<i8";
	case SCAR_U64: return "<u8";
	case SCAR_U8: return "|u1";
	case SCAR_F16: return "<f2";
	case SCAR_BF16: return NULL;	/* .npy has no bfloat16 */
	}
	return NULL;
}

struct npy_job {
	const struct scar_tensor *t;
	int version;
};

int scar_npy_write_fd(int fd, const char *name, const struct scar_tensor *t, int version,
		      struct scar_error *err)
{
	char dict[600], *hdr;
	size_t dlen, pre, total, pad;
	int n, rc;
	const char *descr = npy_descr(t->dtype);

	if (t->dtype == SCAR_BF16)
		return scar_error_set(err, SCAR_EINVAL,
				      "tensor '%s' is bf16, which .npy has no type for: export it "
				      "as safetensors, or convert it to f32 first", t->name);
	if (!descr || t->ndim < 0 || t->ndim > SCAR_MAX_DIMS)
		return scar_error_set(err, SCAR_EINVAL, "tensor '%s': cannot write as .npy", t->name);
	if (version < 0 || version > 2)
		return scar_error_set(err, SCAR_EINVAL, "bad .npy version %d", version);
	n = snprintf(dict, sizeof(dict), "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
	for (int i = 0; i < t->ndim; i++)
		n += snprintf(dict + n, sizeof(dict) - (size_t)n, "%llu%s",
			      (unsigned long long)t->shape[i], t->ndim == 1 ? "," : i + 1 < t->ndim ? ", " : "");
	n += snprintf(dict + n, sizeof(dict) - (size_t)n, "), }");
	dlen = (size_t)n;
	if (version == 0)
		version = 10 + dlen + 1 <= 65535 ? 1 : 2;
	pre = version == 1 ? 10 : 12;
	total = (pre + dlen + 1 + 63) / 64 * 64;
	pad = total - pre - dlen - 1;
	hdr = malloc(total);
	if (!hdr)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	memcpy(hdr, NPY_MAGIC, 6);
	hdr[6] = (char)version;
	hdr[7] = 0;
	if (version == 1) {
		size_t hl = total - pre;

		hdr[8] = (char)(hl & 0xff);
		hdr[9] = (char)(hl >> 8);
	} else {
		uint32_t hl = (uint32_t)(total - pre);

		for (int i = 0; i < 4; i++)
			hdr[8 + i] = (char)(hl >> (8 * i));
	}
	memcpy(hdr + pre, dict, dlen);
	memset(hdr + pre + dlen, ' ', pad);
	hdr[total - 1] = '\n';
	rc = scar_write_all(fd, hdr, total, name, err);
	free(hdr);
	if (rc == 0)
		rc = scar_write_all(fd, t->data, scar_tensor_bytes(t), name, err);
	return rc;
}

static int npy_job_run(int fd, const char *name, void *ctx, struct scar_error *err)
{
	struct npy_job *j = ctx;

	return scar_npy_write_fd(fd, name, j->t, j->version, err);
}

int scar_npy_write(const char *path, const struct scar_tensor *t, int version,
		   struct scar_error *err)
{
	struct npy_job j = { t, version };

	return scar_file_replace(path, SCAR_REPLACE_SYNC, npy_job_run, &j, err);
}
