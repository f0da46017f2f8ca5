/*
 * rewind.c - the state's "rewind" record (lib/rewind.h): read, validated,
 * and turned into the saved rows' schedule points.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "rewind.h"

int scar_rewind_rows(const struct scar_state *st, const char *name, uint64_t rows, uint64_t k,
		     struct scar_rewind_row **out, size_t *n, struct scar_error *err)
{
	const json_t *rw = json_object_get(st->extra, "rewind"), *a, *e;
	uint64_t last = 0;
	size_t i;

	*out = NULL;
	*n = 0;
	if (!rw)
		return 0;
	a = json_object_get(rw, name);
	if (!json_is_object(rw) || (a && !json_is_array(a)))
		return scar_error_set(err, SCAR_ECORRUPT,
				      "state's extra \"rewind\" is not an object of arrays");
	if (!a || !json_array_size(a))
		return 0;
	*out = malloc(json_array_size(a) * sizeof(**out));
	if (!*out)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	json_array_foreach(a, i, e) {
		const json_t *r = json_array_get(e, 0), *l = json_array_get(e, 1);
		json_int_t row = -1, lag = -1;

		if (json_is_integer(r))
			row = json_integer_value(r);
		if (json_is_integer(l))
			lag = json_integer_value(l);
		if (!json_is_array(e) || json_array_size(e) != 2 || row < 0 || (uint64_t)row >= rows ||
		    lag < 1 || (uint64_t)lag > k || (i && (uint64_t)row <= last)) {
			free(*out);
			*out = NULL;
			*n = 0;
			return scar_error_set(err, SCAR_ECORRUPT,
					      "state's extra \"rewind\" of tensor '%s', entry %zu: not [row, lag] with row < %llu, 1 <= lag <= %llu, rows ascending",
					      name, i, (unsigned long long)rows, (unsigned long long)k);
		}
		last = (uint64_t)row;
		(*out)[*n].row = (uint64_t)row;
		(*out)[*n].clock = k - (uint64_t)lag;
		(*n)++;
	}
	return 0;
}

int scar_rewind_check(const struct scar_state *st, struct scar_error *err)
{
	json_t *rw = json_object_get(st->extra, "rewind"), *v;
	const char *name;

	if (!rw)
		return 0;
	if (!json_is_object(rw))
		return scar_error_set(err, SCAR_ECORRUPT,
				      "state's extra \"rewind\" is not an object of arrays");
	json_object_foreach(rw, name, v) {
		const struct scar_tensor *t = scar_state_find(st, name);
		struct scar_rewind_row *rows;
		size_t n;
		int rc;

		(void)v;
		if (!t || t->role != SCAR_ROLE_PARAM)
			return scar_error_set(err, SCAR_ECORRUPT,
					      "state's extra \"rewind\" names '%s', not a parameter tensor of the state",
					      name);
		if ((rc = scar_rewind_rows(st, name, scar_tensor_rows(t), st->iteration, &rows, &n, err)))
			return rc;
		free(rows);
	}
	return 0;
}

int scar_rewind_ages(const struct scar_state *st, const struct scar_tensor *t, const uint8_t *sel,
		     uint64_t *age, struct scar_error *err)
{
	uint64_t rows = scar_tensor_rows(t), k = st->iteration;
	struct scar_rewind_row *rw;
	size_t n;
	int rc = scar_rewind_rows(st, t->name, rows, k, &rw, &n, err);

	if (rc)
		return rc;
	for (uint64_t r = 0; r < rows; r++)
		if (!sel || sel[r])
			age[2 * r] = age[2 * r + 1] = k;
	for (size_t i = 0; i < n; i++)
		if (!sel || sel[rw[i].row])
			age[2 * rw[i].row + 1] = rw[i].clock;
	free(rw);
	return 0;
}
