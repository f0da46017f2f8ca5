/* arrayfile_safetensors.c - safetensors header parser and writer (see scar/arrayfile.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scar/arrayfile.h"
#include "scar/ckpt.h"

#define ROLE_KEY "scar.role."

static const char *st_code(enum scar_dtype dt)
{
	switch (dt) {
	case SCAR_F32: return "F32";
	case SCAR_F64: return "F64";
	case SCAR_I32: return "I32";
	case SCAR_U32: return "U32";
	case SCAR_I64: return "I64";
	case SCAR_U64: return "U64";
	case SCAR_U8: return "U8";
	case SCAR_F16: return "F16";
	case SCAR_BF16: return "BF16";
	}
	return NULL;
}

static int cmp_offset(const void *a, const void *b)
{
	const struct scar_array_info *x = a, *y = b;

	/* Empty tensors first at an offset, so the data is checked as one run. */
	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	return x->nbytes < y->nbytes ? -1 : x->nbytes > y->nbytes;
}

int scar_safetensors_parse(const char *json, size_t len, uint64_t data_start,
			   uint64_t file_size, struct scar_array_info **tensors,
			   size_t *n, json_t **metadata, struct scar_error *err)
{
	json_error_t jerr;
	json_t *root, *meta = NULL, *v;
	const char *key;
	struct scar_array_info *t = NULL;
	size_t cap, nt = 0;
	int rc = 0;

	*tensors = NULL;
	*n = 0;
	if (metadata)
		*metadata = NULL;
	root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root || !json_is_object(root)) {
		rc = scar_error_set_at(err, SCAR_EFORMAT, NULL, 8 + (root ? 0 : jerr.position), -1,
				       "malformed safetensors header: %s",
				       root ? "not a JSON object" : jerr.text);
		json_decref(root);
		return rc;
	}
	cap = json_object_size(root);
	t = calloc(cap ? cap : 1, sizeof(*t));
	if (!t) {
		json_decref(root);
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	}
	meta = json_object_get(root, "__metadata__");
	if (meta) {
		const char *k;
		json_t *mv;

		if (!json_is_object(meta)) {
			rc = scar_error_set(err, SCAR_EFORMAT, "safetensors __metadata__ is not an object");
			goto out;
		}
		json_object_foreach(meta, k, mv) {
			if (!json_is_string(mv)) {
				rc = scar_error_set(err, SCAR_EFORMAT,
						    "safetensors __metadata__ '%s' is not a string", k);
				goto out;
			}
		}
	}
	json_object_foreach(root, key, v) {
		struct scar_array_info *ti = &t[nt];
		json_t *dt = json_object_get(v, "dtype");
		json_t *shape = json_object_get(v, "shape");
		json_t *offs = json_object_get(v, "data_offsets");
		uint64_t elems = 1, b, e;
		size_t i;
		json_t *d;

		if (strcmp(key, "__metadata__") == 0)
			continue;
		if (!json_is_object(v) || !json_is_string(dt) || !json_is_array(shape) ||
		    !json_is_array(offs) || json_array_size(offs) != 2 ||
		    !json_is_integer(json_array_get(offs, 0)) ||
		    !json_is_integer(json_array_get(offs, 1))) {
			rc = scar_error_set(err, SCAR_EFORMAT,
					    "safetensors tensor '%s': needs dtype, shape and data_offsets",
					    key);
			goto out;
		}
		/* The writer's rule (scar_name_check), so what is read can be written. */
		if (scar_name_check(key, "safetensors tensor name", 0, err) < 0) {
			if (err)
				err->code = SCAR_EUNSUPPORTED;
			rc = SCAR_EUNSUPPORTED;
			goto out;
		}
		strcpy(ti->name, key);
		if (islower((unsigned char)json_string_value(dt)[0]))
			ti->dtype = 0;	/* NumPy codes are not safetensors dtypes */
		else
			ti->dtype = scar_array_dtype(json_string_value(dt), &ti->stored,
						     &ti->stored_size);
		if (!ti->dtype) {
			rc = scar_error_set(err, SCAR_EUNSUPPORTED,
					    "tensor '%s': unsupported safetensors dtype '%s'", key,
					    json_string_value(dt));
			goto out;
		}
		if (json_array_size(shape) > SCAR_MAX_DIMS) {
			rc = scar_error_set(err, SCAR_EUNSUPPORTED, "tensor '%s': more than %d dimensions",
					    key, SCAR_MAX_DIMS);
			goto out;
		}
		json_array_foreach(shape, i, d) {
			json_int_t s = json_is_integer(d) ? json_integer_value(d) : -1;

			if (s < 0) {
				rc = scar_error_set(err, SCAR_EFORMAT, "tensor '%s': bad shape", key);
				goto out;
			}
			ti->shape[i] = (uint64_t)s;
			if (s && elems > UINT64_MAX / (uint64_t)s) {
				rc = scar_error_set(err, SCAR_EFORMAT, "tensor '%s': shape overflows", key);
				goto out;
			}
			elems *= (uint64_t)s;
		}
		ti->ndim = (int)json_array_size(shape);
		if (ti->ndim > 0 && !elems && ti->shape[0] > SCAR_ZERO_WIDTH_ROWS_MAX) {
			rc = scar_error_set(err, SCAR_EUNSUPPORTED,
					    "tensor '%s': %llu rows of zero bytes, more than the %llu "
					    "allowed", key, (unsigned long long)ti->shape[0],
					    (unsigned long long)SCAR_ZERO_WIDTH_ROWS_MAX);
			goto out;
		}
		if (json_integer_value(json_array_get(offs, 0)) < 0 ||
		    json_integer_value(json_array_get(offs, 1)) < 0) {
			rc = scar_error_set(err, SCAR_EFORMAT, "tensor '%s': negative data_offsets", key);
			goto out;
		}
		b = (uint64_t)json_integer_value(json_array_get(offs, 0));
		e = (uint64_t)json_integer_value(json_array_get(offs, 1));
		if (e < b || elems > UINT64_MAX / 8 || e - b != elems * ti->stored_size) {
			rc = scar_error_set(err, SCAR_EFORMAT,
					    "tensor '%s': data_offsets [%llu, %llu] do not match its shape",
					    key, (unsigned long long)b, (unsigned long long)e);
			goto out;
		}
		if (data_start > file_size || e > file_size - data_start) {
			rc = scar_error_set_at(err, SCAR_ETRUNC, NULL, (int64_t)file_size, -1,
					       "file ends early: tensor '%s' needs bytes up to %llu", key,
					       (unsigned long long)(data_start + e));
			goto out;
		}
		ti->offset = data_start + b;
		ti->nbytes = elems * scar_dtype_size(ti->dtype);
		ti->role = SCAR_ROLE_PARAM;
		if (meta) {
			char mk[sizeof(ROLE_KEY) + SCAR_NAME_MAX];
			const char *role;

			snprintf(mk, sizeof(mk), ROLE_KEY "%s", key);
			role = json_string_value(json_object_get(meta, mk));
			if (role && scar_role_parse(role))
				ti->role = scar_role_parse(role);
		}
		nt++;
	}
	qsort(t, nt, sizeof(*t), cmp_offset);
	{
		/* The format forbids holes: the tensors' data tile the data area exactly. */
		uint64_t end = data_start;

		for (size_t i = 0; i < nt; i++) {
			if (t[i].offset < end) {
				rc = scar_error_set(err, SCAR_EFORMAT, "tensors '%s' and '%s' overlap",
						    t[i - 1].name, t[i].name);
				goto out;
			}
			if (t[i].offset > end) {
				rc = scar_error_set_at(err, SCAR_EFORMAT, NULL, (int64_t)end, -1,
						       "%llu bytes of hole before tensor '%s'",
						       (unsigned long long)(t[i].offset - end), t[i].name);
				goto out;
			}
			end += (t[i].nbytes / scar_dtype_size(t[i].dtype)) * t[i].stored_size;
		}
		if (end < file_size) {
			rc = scar_error_set_at(err, SCAR_EFORMAT, NULL, (int64_t)end, -1,
					       "%llu bytes after the last tensor's data",
					       (unsigned long long)(file_size - end));
			goto out;
		}
	}
	if (metadata && meta)
		*metadata = json_incref(meta);
out:
	json_decref(root);
	if (rc < 0) {
		free(t);
		return rc;
	}
	*tensors = t;
	*n = nt;
	return 0;
}

struct st_job {
	const struct scar_state *st;
	int role;
	const json_t *metadata;
};

static int want(const struct scar_tensor *t, int role)
{
	return !role || (int)t->role == role;
}

static int st_write(int fd, const char *name, void *ctx, struct scar_error *err)
{
	struct st_job *j = ctx;
	json_t *root = json_object(), *meta = json_object();
	char *text = NULL, *hdr = NULL;
	uint64_t off = 0;
	size_t tlen, hlen;
	int rc = 0;

	if (!root || !meta) {
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
		goto out;
	}
	if (j->metadata) {
		json_t *copy = json_deep_copy(j->metadata), *v;
		const char *k;

		if (!json_is_object(copy)) {
			json_decref(copy);
			rc = scar_error_set(err, SCAR_EINVAL, "safetensors metadata is not an object");
			goto out;
		}
		json_object_foreach(copy, k, v) {
			if (!json_is_string(v)) {
				rc = scar_error_set(err, SCAR_EINVAL,
						    "safetensors metadata '%s' is not a string", k);
				json_decref(copy);
				goto out;
			}
			json_object_set(meta, k, v);
		}
		json_decref(copy);
	}
	for (size_t i = 0; i < j->st->ntensors; i++) {
		const struct scar_tensor *t = j->st->tensors[i];
		json_t *e, *shape;
		uint64_t nb = scar_tensor_bytes(t);

		if (!want(t, j->role))
			continue;
		if (!st_code(t->dtype)) {
			rc = scar_error_set(err, SCAR_EINVAL, "tensor '%s': no safetensors dtype", t->name);
			goto out;
		}
		shape = json_array();
		for (int d = 0; d < t->ndim; d++)
			json_array_append_new(shape, json_integer((json_int_t)t->shape[d]));
		e = json_pack("{s:s, s:o, s:[I,I]}", "dtype", st_code(t->dtype), "shape", shape,
			      "data_offsets", (json_int_t)off, (json_int_t)(off + nb));
		if (!e || json_object_set_new(root, t->name, e) < 0) {
			rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
			goto out;
		}
		off += nb;
		if (t->role == SCAR_ROLE_STATE) {
			char mk[sizeof(ROLE_KEY) + SCAR_NAME_MAX];

			snprintf(mk, sizeof(mk), ROLE_KEY "%s", t->name);
			json_object_set_new(meta, mk, json_string("state"));
		}
	}
	if (json_object_size(meta))
		json_object_set(root, "__metadata__", meta);
	text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (!text) {
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
		goto out;
	}
	tlen = strlen(text);
	hlen = (tlen + 7) / 8 * 8;
	hdr = malloc(8 + hlen);
	if (!hdr) {
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
		goto out;
	}
	for (int b = 0; b < 8; b++)
		hdr[b] = (char)((uint64_t)hlen >> (8 * b));
	memcpy(hdr + 8, text, tlen);
	memset(hdr + 8 + tlen, ' ', hlen - tlen);
	rc = scar_write_all(fd, hdr, 8 + hlen, name, err);
	for (size_t i = 0; rc == 0 && i < j->st->ntensors; i++) {
		const struct scar_tensor *t = j->st->tensors[i];

		if (want(t, j->role))
			rc = scar_write_all(fd, t->data, scar_tensor_bytes(t), name, err);
	}
out:
	free(text);
	free(hdr);
	json_decref(meta);
	json_decref(root);
	return rc;
}

int scar_safetensors_write_fd(int fd, const char *name, const struct scar_state *st,
			      int role, const json_t *metadata, struct scar_error *err)
{
	struct st_job j = { st, role, metadata };

	return st_write(fd, name, &j, err);
}

int scar_safetensors_write(const char *path, const struct scar_state *st, int role,
			   const json_t *metadata, struct scar_error *err)
{
	struct st_job j = { st, role, metadata };

	return scar_file_replace(path, SCAR_REPLACE_SYNC, st_write, &j, err);
}
