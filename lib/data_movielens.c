/* data_movielens.c - MovieLens ratings: u.data, ratings.dat ('::') and ml-latest CSV. */
#include <stdlib.h>
#include <string.h>

#include "data_common.h"
#include "scar/data.h"

enum ml_format { ML_TAB, ML_COLONS, ML_CSV };

static const char *ml_format_name[] = { "tab-separated", "'::'-separated", "CSV" };

/* Field separator after a field: returns the start of the next field or NULL. */
static const char *ml_sep(const char *p, enum ml_format f)
{
	switch (f) {
	case ML_TAB:
		if (*p != ' ' && *p != '\t')
			return NULL;
		return scar_data_skip_blank(p);
	case ML_COLONS:
		return p[0] == ':' && p[1] == ':' ? p + 2 : NULL;
	case ML_CSV:
		return *p == ',' ? p + 1 : NULL;
	}
	return NULL;
}

/* Only blanks left on the line. */
static int ml_end(const char *p)
{
	return *scar_data_skip_blank(p) == '\0';
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/*
 * Dense ids in increasing raw-id order. With small raw ids (the usual case) a
 * direct table; otherwise sort the distinct ids and binary-search.
 */
static int ml_remap(uint32_t *ids, uint64_t n, uint32_t *count, struct scar_error *err)
{
	uint32_t max = 0, *map = NULL, k = 0;
	uint64_t i;

	for (i = 0; i < n; i++)
		if (ids[i] > max)
			max = ids[i];
	if ((uint64_t)max <= 4 * n + (1u << 20)) {
		map = calloc((size_t)max + 1, sizeof(*map));
		if (!map)
			return scar_error_set(err, SCAR_ENOMEM, "out of memory remapping ids");
		for (i = 0; i < n; i++)
			map[ids[i]] = 1;
		for (uint64_t v = 0; v <= max; v++)
			if (map[v])
				map[v] = ++k;
		for (i = 0; i < n; i++)
			ids[i] = map[ids[i]] - 1;
	} else {
		uint32_t *sorted = malloc(n * sizeof(*sorted));

		if (!sorted)
			return scar_error_set(err, SCAR_ENOMEM, "out of memory remapping ids");
		memcpy(sorted, ids, n * sizeof(*sorted));
		qsort(sorted, n, sizeof(*sorted), cmp_u32);
		for (i = 0; i < n; i++)
			if (i == 0 || sorted[i] != sorted[k - 1])
				sorted[k++] = sorted[i];
		for (i = 0; i < n; i++) {
			uint32_t lo = 0, hi = k;

			while (hi - lo > 1) {
				uint32_t mid = lo + (hi - lo) / 2;

				if (sorted[mid] <= ids[i])
					lo = mid;
				else
					hi = mid;
			}
			ids[i] = lo;
		}
		map = sorted;
	}
	free(map);
	*count = k;
	return 0;
}

int scar_movielens_load(const char *path, struct scar_ratings **out, struct scar_error *err)
{
	struct scar_lines lr;
	struct scar_ratings *r = NULL;
	size_t cap_u = 0, cap_i = 0, cap_r = 0, len;
	enum ml_format fmt = ML_TAB;
	int rc, first = 1;
	char *line, tok[48];
	uint64_t n = 0;

	*out = NULL;
	rc = scar_lines_open(&lr, path, err);
	if (rc < 0)
		return rc;
	r = calloc(1, sizeof(*r));
	if (!r) {
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
		goto out;
	}
	while ((rc = scar_lines_next(&lr, &line, &len, err)) > 0) {
		const char *p = scar_data_skip_blank(line), *q;
		uint64_t u, it, ts;
		double v;

		if (*p == '\0')
			continue;
		if (first) {
			first = 0;
			if (strstr(p, "::"))
				fmt = ML_COLONS;
			else if (strchr(p, ','))
				fmt = ML_CSV;
			if (fmt == ML_CSV && (*p < '0' || *p > '9')) {
				if (strncmp(p, "userId,movieId,rating", 21) != 0) {
					rc = scar_lines_fail(&lr, err, SCAR_EFORMAT,
							     "expected header 'userId,movieId,rating,timestamp', got '%s'",
							     scar_data_token(p, ",:", tok, sizeof(tok)));
					goto out;
				}
				continue;
			}
		}
		if (!(q = scar_data_parse_u64(p, UINT32_MAX, &u)) || !(q = ml_sep(q, fmt))) {
			rc = scar_lines_fail(&lr, err, SCAR_EFORMAT, "expected %s 'user item rating [timestamp]', got '%s'",
					     ml_format_name[fmt], scar_data_token(p, ",:", tok, sizeof(tok)));
			goto out;
		}
		p = q;
		if (!(q = scar_data_parse_u64(p, UINT32_MAX, &it)) || !(q = ml_sep(q, fmt))) {
			rc = scar_lines_fail(&lr, err, SCAR_EFORMAT, "expected an item id, got '%s'",
					     scar_data_token(p, ",:", tok, sizeof(tok)));
			goto out;
		}
		p = q;
		if (!(q = scar_data_parse_double(p, &v))) {
			rc = scar_lines_fail(&lr, err, SCAR_EFORMAT, "expected a rating, got '%s'",
					     scar_data_token(p, ",:", tok, sizeof(tok)));
			goto out;
		}
		p = q;
		if (!ml_end(p)) {
			if (!(q = ml_sep(p, fmt)) || !(q = scar_data_parse_u64(q, UINT64_MAX, &ts)) ||
			    !ml_end(q)) {
				rc = scar_lines_fail(&lr, err, SCAR_EFORMAT,
						     "expected a timestamp at the end of the line, got '%s'",
						     scar_data_token(p, ",:", tok, sizeof(tok)));
				goto out;
			}
		}
		if ((rc = scar_data_reserve((void **)&r->user, &cap_u, n + 1, sizeof(*r->user), err)) < 0 ||
		    (rc = scar_data_reserve((void **)&r->item, &cap_i, n + 1, sizeof(*r->item), err)) < 0 ||
		    (rc = scar_data_reserve((void **)&r->rating, &cap_r, n + 1, sizeof(*r->rating), err)) < 0)
			goto out;
		r->user[n] = (uint32_t)u;
		r->item[n] = (uint32_t)it;
		r->rating[n] = (float)v;
		n++;
	}
	if (rc < 0)
		goto out;
	if (n == 0) {
		rc = scar_error_set_at(err, SCAR_EFORMAT, path, -1, -1, "no ratings in '%s'", path);
		goto out;
	}
	r->n = n;
	/* Give back the growth slack: the arrays stay for the whole run. */
	{
		void *a = realloc(r->user, n * sizeof(*r->user));
		void *b = realloc(r->item, n * sizeof(*r->item));
		void *c = realloc(r->rating, n * sizeof(*r->rating));

		r->user = a ? a : r->user;
		r->item = b ? b : r->item;
		r->rating = c ? c : r->rating;
	}
	if ((rc = ml_remap(r->user, n, &r->users, err)) < 0 ||
	    (rc = ml_remap(r->item, n, &r->items, err)) < 0)
		goto out;
	*out = r;
	r = NULL;
	rc = 0;
out:
	scar_ratings_free(r);
	scar_lines_close(&lr);
	return rc;
}
