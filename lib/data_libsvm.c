/* data_libsvm.c - LIBSVM / svmlight text into dense examples. */
#include <stdlib.h>
#include <string.h>

#include "data_common.h"
#include "scar/data.h"

struct svm_entry {
	uint32_t idx;		/* 0-based */
	float val;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Map each label to its rank among the distinct labels, which class_value keeps. */
static int svm_classes(struct scar_dense *ds, const double *y, struct scar_error *err)
{
	double *u = malloc(ds->n * sizeof(*u));
	uint64_t k = 0;

	if (!u)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory mapping labels");
	memcpy(u, y, ds->n * sizeof(*u));
	qsort(u, ds->n, sizeof(*u), cmp_double);
	for (uint64_t i = 0; i < ds->n; i++)
		if (k == 0 || u[i] != u[k - 1])
			u[k++] = u[i];
	if (k > UINT32_MAX) {
		free(u);
		return scar_error_set(err, SCAR_ERANGE, "too many distinct labels");
	}
	for (uint64_t i = 0; i < ds->n; i++)
		ds->label[i] = (uint32_t)((const double *)bsearch(&y[i], u, k, sizeof(*u),
								  cmp_double) - u);
	ds->classes = (uint32_t)k;
	ds->class_value = realloc(u, k * sizeof(*u));
	if (!ds->class_value)
		ds->class_value = u;
	return 0;
}

/*
 * The reader. like (may be NULL) gives a fixed label set: each label must be
 * one of like->class_value, checked on its line.
 */
static int svm_load(const char *path, uint64_t dim, int classification,
		    const struct scar_dense *like, struct scar_dense **out,
		    struct scar_error *err)
{
	struct scar_lines lr;
	struct scar_dense *ds = NULL;
	struct svm_entry *e = NULL;
	double *y = NULL;
	uint64_t *row_end = NULL, n = 0, k = 0, d = 0;
	size_t cap_e = 0, cap_y = 0, cap_r = 0, len;
	char *line, tok[48];
	int rc;

	*out = NULL;
	rc = scar_lines_open(&lr, path, err);
	if (rc < 0)
		return rc;
	while ((rc = scar_lines_next(&lr, &line, &len, err)) > 0) {
		const char *p = scar_data_skip_blank(line), *q;
		char *hash = strchr(line, '#');
		uint64_t prev = 0;
		double v;

		if (hash)
			*hash = '\0';
		if (*p == '\0')
			continue;
		if (!(q = scar_data_parse_double(p, &v)) || (*q && *q != ' ' && *q != '\t')) {
			rc = scar_lines_fail(&lr, err, SCAR_EFORMAT, "expected a label, got '%s'",
					     scar_data_token(p, NULL, tok, sizeof(tok)));
			goto out;
		}
		if ((rc = scar_data_reserve((void **)&y, &cap_y, n + 1, sizeof(*y), err)) < 0 ||
		    (rc = scar_data_reserve((void **)&row_end, &cap_r, n + 1, sizeof(*row_end), err)) < 0)
			goto out;
		if (like && !bsearch(&v, like->class_value, like->classes, sizeof(v), cmp_double)) {
			rc = scar_lines_fail(&lr, err, SCAR_EMISMATCH,
					     "label '%s' is not a class of the training data",
					     scar_data_token(p, NULL, tok, sizeof(tok)));
			goto out;
		}
		y[n] = v;
		for (p = scar_data_skip_blank(q); *p; p = scar_data_skip_blank(q)) {
			uint64_t idx;
			double val;

			if (strncmp(p, "qid:", 4) == 0 && (q = scar_data_parse_u64(p + 4, UINT64_MAX, &idx)) &&
			    (*q == '\0' || *q == ' ' || *q == '\t'))
				continue;
			if (!(q = scar_data_parse_u64(p, UINT32_MAX, &idx)) || *q != ':' ||
			    !(q = scar_data_parse_double(q + 1, &val)) ||
			    (*q && *q != ' ' && *q != '\t')) {
				rc = scar_lines_fail(&lr, err, SCAR_EFORMAT, "expected 'idx:value', got '%s'",
						     scar_data_token(p, NULL, tok, sizeof(tok)));
				goto out;
			}
			if (idx == 0) {
				rc = scar_lines_fail(&lr, err, SCAR_ERANGE, "index 0: indices start at 1");
				goto out;
			}
			if (idx <= prev) {
				rc = scar_lines_fail(&lr, err, SCAR_EFORMAT,
						     "index %llu after %llu: indices must increase",
						     (unsigned long long)idx, (unsigned long long)prev);
				goto out;
			}
			if (dim && idx > dim) {
				rc = scar_lines_fail(&lr, err, SCAR_ERANGE, "index %llu above the dimension %llu",
						     (unsigned long long)idx, (unsigned long long)dim);
				goto out;
			}
			prev = idx;
			if (idx > d)
				d = idx;
			if ((rc = scar_data_reserve((void **)&e, &cap_e, k + 1, sizeof(*e), err)) < 0)
				goto out;
			e[k].idx = (uint32_t)(idx - 1);
			e[k].val = (float)val;
			k++;
		}
		row_end[n++] = k;
	}
	if (rc < 0)
		goto out;
	if (n == 0) {
		rc = scar_error_set_at(err, SCAR_EFORMAT, path, -1, -1, "no examples in '%s'", path);
		goto out;
	}
	if (dim)
		d = dim;
	if (d == 0)
		d = 1;	/* labels only: one all-zero feature keeps x valid */
	if (n > SIZE_MAX / sizeof(float) / d) {
		rc = scar_error_set_at(err, SCAR_ERANGE, path, -1, -1, "%llu x %llu dense matrix too large",
				       (unsigned long long)n, (unsigned long long)d);
		goto out;
	}
	ds = calloc(1, sizeof(*ds));
	if (!ds)
		goto nomem;
	ds->n = n;
	ds->d = d;
	ds->x = scar_data_alloc_big((size_t)(n * d) * sizeof(float));
	if (!ds->x)
		goto nomem;
	for (uint64_t i = 0, j = 0; i < n; i++) {
		float *row = ds->x + i * d;

		memset(row, 0, d * sizeof(*row));
		for (; j < row_end[i]; j++)
			row[e[j].idx] = e[j].val;
	}
	if (like) {
		ds->label = malloc(n * sizeof(*ds->label));
		if (!ds->label)
			goto nomem;
		for (uint64_t i = 0; i < n; i++)
			ds->label[i] = (uint32_t)((const double *)bsearch(&y[i], like->class_value,
									  like->classes, sizeof(*y),
									  cmp_double) - like->class_value);
		ds->classes = like->classes;
	} else if (classification) {
		ds->label = malloc(n * sizeof(*ds->label));
		if (!ds->label)
			goto nomem;
		if ((rc = svm_classes(ds, y, err)) < 0)
			goto out;
	} else {
		ds->target = malloc(n * sizeof(*ds->target));
		if (!ds->target)
			goto nomem;
		for (uint64_t i = 0; i < n; i++)
			ds->target[i] = (float)y[i];
	}
	*out = ds;
	ds = NULL;
	rc = 0;
	goto out;
nomem:
	rc = scar_error_set(err, SCAR_ENOMEM, "out of memory reading '%s'", path);
out:
	scar_dense_free(ds);
	free(e);
	free(y);
	free(row_end);
	scar_lines_close(&lr);
	return rc;
}

int scar_libsvm_load(const char *path, uint64_t dim, int classification,
		     struct scar_dense **out, struct scar_error *err)
{
	return svm_load(path, dim, classification, NULL, out, err);
}

int scar_libsvm_load_like(const char *path, uint64_t dim, const struct scar_dense *like,
			  struct scar_dense **out, struct scar_error *err)
{
	*out = NULL;
	if (!like || !like->class_value || !like->classes)
		return scar_error_set(err, SCAR_EINVAL, "no training labels to map '%s' to", path);
	return svm_load(path, dim, 1, like, out, err);
}
