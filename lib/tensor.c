/* tensor.c - tensors and training states (see scar/tensor.h). */
#include <assert.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scar/tensor.h"
#include "nameidx.h"

static const struct {
	enum scar_dtype t;
	const char *name;
	size_t size;
} dtypes[] = {
	{ SCAR_F32, "f32", 4 }, { SCAR_F64, "f64", 8 }, { SCAR_I32, "i32", 4 },
	{ SCAR_U32, "u32", 4 }, { SCAR_I64, "i64", 8 }, { SCAR_U64, "u64", 8 },
	{ SCAR_U8, "u8", 1 }, { SCAR_F16, "f16", 2 }, { SCAR_BF16, "bf16", 2 },
};

const char *scar_dtype_name(enum scar_dtype t)
{
	for (size_t i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++)
		if (dtypes[i].t == t)
			return dtypes[i].name;
	return NULL;
}

enum scar_dtype scar_dtype_parse(const char *name)
{
	for (size_t i = 0; name && i < sizeof(dtypes) / sizeof(dtypes[0]); i++)
		if (strcmp(dtypes[i].name, name) == 0)
			return dtypes[i].t;
	return 0;
}

size_t scar_dtype_size(enum scar_dtype t)
{
	for (size_t i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++)
		if (dtypes[i].t == t)
			return dtypes[i].size;
	return 0;
}

const char *scar_role_name(enum scar_role r)
{
	return r == SCAR_ROLE_PARAM ? "param" : r == SCAR_ROLE_STATE ? "state" : NULL;
}

enum scar_role scar_role_parse(const char *name)
{
	if (name && strcmp(name, "param") == 0)
		return SCAR_ROLE_PARAM;
	if (name && strcmp(name, "state") == 0)
		return SCAR_ROLE_STATE;
	return 0;
}

/* ---- 16-bit float formats (stored f16 and bf16 elements, quantization) ---- */

static uint32_t f2u(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
}

static float u2f(uint32_t u)
{
	float f;

	memcpy(&f, &u, 4);
	return f;
}

uint16_t scar_f32_to_f16(float f)
{
	uint32_t x = f2u(f), sign = (x >> 16) & 0x8000, exp = (x >> 23) & 0xff, man = x & 0x7fffff;
	uint32_t h, rem, half;
	int e;

	if (exp == 0xff)
		return (uint16_t)(sign | 0x7c00 | (man ? 0x200 | (man >> 13) : 0));
	e = (int)exp - 127 + 15;
	if (e >= 31)
		return (uint16_t)(sign | 0x7c00);
	if (e <= 0) {
		unsigned shift;

		if (e < -10)
			return (uint16_t)sign;
		man |= 0x800000;
		shift = (unsigned)(14 - e);
		h = man >> shift;
		rem = man & ((1u << shift) - 1);
		half = 1u << (shift - 1);
		if (rem > half || (rem == half && (h & 1)))
			h++;
		return (uint16_t)(sign | h);
	}
	h = (uint32_t)e << 10 | man >> 13;
	rem = man & 0x1fff;
	if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
		h++;	/* a carry into the exponent is right, up to infinity */
	return (uint16_t)(sign | h);
}

float scar_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;

	if (exp == 0x1f)
		return u2f(sign | 0x7f800000 | man << 13);
	if (exp == 0) {
		float v = (float)man * 0x1p-24f;

		return sign ? -v : v;
	}
	return u2f(sign | (exp + 112) << 23 | man << 13);
}

uint16_t scar_f32_to_bf16(float f)
{
	uint32_t x = f2u(f);

	if ((x & 0x7fffffff) > 0x7f800000)
		return (uint16_t)(x >> 16 | 0x40);	/* NaN stays NaN (quiet) */
	return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

float scar_bf16_to_f32(uint16_t h)
{
	return u2f((uint32_t)h << 16);
}

/*
 * v rounded to a float by round-to-odd: truncated, the last bit set when
 * inexact. A float has at least two bits more than binary16 and bfloat16
 * everywhere they are finite, so rounding this float to nearest even gives
 * what rounding v directly would (no double rounding).
 */
static float f32_round_odd(double v)
{
	float f = (float)v;
	uint32_t u;

	if (isnan(v) || (double)f == v)
		return f;
	if (isinf(f))
		return v > 0 ? FLT_MAX : -FLT_MAX;	/* finite v: odd, and still overflows */
	u = f2u(f);
	if (!(u & 1))
		u = fabs((double)f) > fabs(v) ? u - 1 : u + 1;	/* the neighbour on v's other side */
	return u2f(u);
}

uint16_t scar_f64_to_f16(double v)
{
	return scar_f32_to_f16(f32_round_odd(v));
}

uint16_t scar_f64_to_bf16(double v)
{
	return scar_f32_to_bf16(f32_round_odd(v));
}

int scar_dtype_is_float(enum scar_dtype t)
{
	return t == SCAR_F32 || t == SCAR_F64 || t == SCAR_F16 || t == SCAR_BF16;
}

int scar_tensor_new(struct scar_tensor **out, const char *name,
		    enum scar_dtype dtype, enum scar_role role, int ndim,
		    const uint64_t *shape, struct scar_error *err)
{
	struct scar_tensor *t;
	uint64_t elems = 1;
	size_t esz = scar_dtype_size(dtype), nlen;

	*out = NULL;
	if (!name || !(nlen = strlen(name)) || nlen >= SCAR_NAME_MAX)
		return scar_error_set(err, SCAR_EINVAL, "tensor name must be 1 to %d bytes",
				      SCAR_NAME_MAX - 1);
	if (!esz)
		return scar_error_set(err, SCAR_EINVAL, "tensor '%s': unknown dtype %d", name,
				      (int)dtype);
	if (!scar_role_name(role))
		return scar_error_set(err, SCAR_EINVAL, "tensor '%s': unknown role %d", name,
				      (int)role);
	if (ndim < 0 || ndim > SCAR_MAX_DIMS)
		return scar_error_set(err, SCAR_EINVAL, "tensor '%s': %d dimensions (at most %d)",
				      name, ndim, SCAR_MAX_DIMS);
	for (int i = 0; i < ndim; i++) {
		if (shape[i] && elems > UINT64_MAX / shape[i])
			return scar_error_set(err, SCAR_ERANGE, "tensor '%s': size overflows", name);
		elems *= shape[i];
	}
	if (elems > SIZE_MAX / esz)
		return scar_error_set(err, SCAR_ERANGE, "tensor '%s': size overflows", name);
	if (ndim > 0 && !elems && shape[0] > SCAR_ZERO_WIDTH_ROWS_MAX)
		return scar_error_set(err, SCAR_ERANGE,
				      "tensor '%s': %llu rows of zero bytes, more than the %llu allowed",
				      name, (unsigned long long)shape[0],
				      (unsigned long long)SCAR_ZERO_WIDTH_ROWS_MAX);
	t = calloc(1, sizeof(*t));
	if (!t)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	t->name = strdup(name);
	/* calloc(0) may return NULL; keep data non-NULL for empty tensors. */
	t->data = calloc(elems ? elems : 1, esz);
	if (!t->name || !t->data) {
		scar_tensor_free(t);
		return scar_error_set(err, SCAR_ENOMEM, "out of memory for tensor '%s' (%llu elements)",
				      name, (unsigned long long)elems);
	}
	t->dtype = dtype;
	t->role = role;
	t->ndim = ndim;
	for (int i = 0; i < ndim; i++)
		t->shape[i] = shape[i];
	*out = t;
	return 0;
}

void scar_tensor_free(struct scar_tensor *t)
{
	if (!t)
		return;
	free(t->name);
	free(t->data);
	free(t->present);
	free(t);
}

int scar_tensor_clone(struct scar_tensor **out, const struct scar_tensor *t,
		      struct scar_error *err)
{
	int rc = scar_tensor_new(out, t->name, t->dtype, t->role, t->ndim, t->shape, err);

	if (rc)
		return rc;
	memcpy((*out)->data, t->data, scar_tensor_bytes(t));
	if (t->present) {
		rc = scar_tensor_init_present(*out, 0, err);
		if (rc) {
			scar_tensor_free(*out);
			*out = NULL;
			return rc;
		}
		memcpy((*out)->present, t->present, scar_tensor_rows(t));
	}
	return 0;
}

uint64_t scar_tensor_rows(const struct scar_tensor *t)
{
	return t->ndim == 0 ? 1 : t->shape[0];
}

uint64_t scar_tensor_row_elems(const struct scar_tensor *t)
{
	uint64_t n = 1;

	for (int i = 1; i < t->ndim; i++)
		n *= t->shape[i];
	return n;
}

uint64_t scar_tensor_elems(const struct scar_tensor *t)
{
	return scar_tensor_rows(t) * scar_tensor_row_elems(t);
}

size_t scar_tensor_row_bytes(const struct scar_tensor *t)
{
	return (size_t)scar_tensor_row_elems(t) * scar_dtype_size(t->dtype);
}

size_t scar_tensor_bytes(const struct scar_tensor *t)
{
	return (size_t)scar_tensor_elems(t) * scar_dtype_size(t->dtype);
}

void *scar_tensor_row(const struct scar_tensor *t, uint64_t r)
{
	assert(r < scar_tensor_rows(t));
	return (char *)t->data + r * scar_tensor_row_bytes(t);
}

int scar_tensor_has_row(const struct scar_tensor *t, uint64_t r)
{
	return !t->present || t->present[r];
}

uint64_t scar_tensor_rows_present(const struct scar_tensor *t)
{
	uint64_t n = 0, rows = scar_tensor_rows(t);

	if (!t->present)
		return rows;
	for (uint64_t r = 0; r < rows; r++)
		n += t->present[r] != 0;
	return n;
}

int scar_tensor_init_present(struct scar_tensor *t, int value, struct scar_error *err)
{
	uint64_t rows = scar_tensor_rows(t);

	free(t->present);
	/* calloc for "absent": the pages of rows never marked present are never
	 * touched, so a partial checkpoint's absent rows cost no memory. */
	t->present = value ? malloc(rows ? rows : 1) : calloc(rows ? rows : 1, 1);
	if (!t->present)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	if (value)
		memset(t->present, 1, rows);
	return 0;
}

int scar_tensor_same_layout(const struct scar_tensor *a, const struct scar_tensor *b)
{
	if (a->dtype != b->dtype || a->ndim != b->ndim)
		return 0;
	for (int i = 0; i < a->ndim; i++)
		if (a->shape[i] != b->shape[i])
			return 0;
	return 1;
}

double scar_tensor_get(const struct scar_tensor *t, uint64_t i)
{
	switch (t->dtype) {
	case SCAR_F32: return ((const float *)t->data)[i];
	case SCAR_F64: return ((const double *)t->data)[i];
	case SCAR_I32: return ((const int32_t *)t->data)[i];
	case SCAR_U32: return ((const uint32_t *)t->data)[i];
	case SCAR_I64: return (double)((const int64_t *)t->data)[i];
	case SCAR_U64: return (double)((const uint64_t *)t->data)[i];
	case SCAR_U8: return ((const uint8_t *)t->data)[i];
	case SCAR_F16: return scar_f16_to_f32(((const uint16_t *)t->data)[i]);
	case SCAR_BF16: return scar_bf16_to_f32(((const uint16_t *)t->data)[i]);
	}
	return 0;
}

static double clampd(double v, double lo, double hi)
{
	if (isnan(v))
		return 0;
	return v < lo ? lo : v > hi ? hi : v;
}

void scar_tensor_set(struct scar_tensor *t, uint64_t i, double v)
{
	switch (t->dtype) {
	case SCAR_F32: ((float *)t->data)[i] = (float)v; break;
	case SCAR_F64: ((double *)t->data)[i] = v; break;
	case SCAR_I32: ((int32_t *)t->data)[i] = (int32_t)llround(clampd(v, INT32_MIN, INT32_MAX)); break;
	case SCAR_U32: ((uint32_t *)t->data)[i] = (uint32_t)llround(clampd(v, 0, UINT32_MAX)); break;
	case SCAR_I64: ((int64_t *)t->data)[i] = llround(clampd(v, -0x1p63, 0x1p63 - 1024)); break;
	case SCAR_U64: ((uint64_t *)t->data)[i] = (uint64_t)clampd(nearbyint(v), 0, 0x1p64 - 2048); break;
	case SCAR_U8: ((uint8_t *)t->data)[i] = (uint8_t)llround(clampd(v, 0, 255)); break;
	case SCAR_F16: ((uint16_t *)t->data)[i] = scar_f64_to_f16(v); break;
	case SCAR_BF16: ((uint16_t *)t->data)[i] = scar_f64_to_bf16(v); break;
	}
}

/* ---- states ---- */

static void index_drop(struct scar_state *s);

int scar_state_new(struct scar_state **out, const char *model, struct scar_error *err)
{
	struct scar_state *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (!s)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	if (model && strlen(model) >= sizeof(s->model)) {
		free(s);
		return scar_error_set(err, SCAR_EINVAL, "model name too long");
	}
	snprintf(s->model, sizeof(s->model), "%s", model ? model : "");
	s->config = json_object();
	s->extra = json_object();
	s->shards = 1;
	if (!s->config || !s->extra) {
		scar_state_free(s);
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	}
	*out = s;
	return 0;
}

void scar_state_free(struct scar_state *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->ntensors; i++)
		scar_tensor_free(s->tensors[i]);
	free(s->tensors);
	index_drop(s);
	json_decref(s->config);
	json_decref(s->extra);
	free(s);
}

static const char *tensor_name(const void *ctx, size_t i)
{
	return ((struct scar_tensor *const *)ctx)[i]->name;
}

static int index_valid(const struct scar_state *s)
{
	return s->index_.idx && s->index_.of == (const void *)s->tensors &&
	       s->index_.n == s->ntensors;
}

static void index_drop(struct scar_state *s)
{
	if (s->index_.idx) {
		scar_nameidx_free(s->index_.idx);
		free(s->index_.idx);
	}
	memset(&s->index_, 0, sizeof(s->index_));
}

/* (Re)build the index of s's tensors; on failure s is left without one. */
static int index_build(struct scar_state *s)
{
	struct scar_nameidx *x;

	index_drop(s);
	if (!(x = calloc(1, sizeof(*x))))
		return -1;
	for (size_t i = 0; i < s->ntensors; i++)
		if (scar_nameidx_add(x, i, tensor_name, s->tensors, NULL) < 0) {
			scar_nameidx_free(x);
			free(x);
			return -1;
		}
	s->index_.idx = x;
	s->index_.of = s->tensors;
	s->index_.n = s->ntensors;
	return 0;
}

int scar_state_add(struct scar_state *s, struct scar_tensor *t, struct scar_error *err)
{
	struct scar_tensor **v;

	if (!index_valid(s))
		index_build(s);	/* without one, scar_state_find searches */
	if (scar_state_find(s, t->name)) {
		int rc = scar_error_set(err, SCAR_EINVAL, "duplicate tensor name '%s'", t->name);

		scar_tensor_free(t);
		return rc;
	}
	v = realloc(s->tensors, (s->ntensors + 1) * sizeof(*v));
	if (!v) {
		scar_tensor_free(t);
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	}
	v[s->ntensors++] = t;
	s->tensors = v;
	if (s->index_.idx) {
		if (scar_nameidx_add(s->index_.idx, s->ntensors - 1, tensor_name, v, NULL) < 0) {
			index_drop(s);
		} else {
			s->index_.of = v;
			s->index_.n = s->ntensors;
		}
	}
	return 0;
}

struct scar_tensor *scar_state_find(const struct scar_state *s, const char *name)
{
	if (index_valid(s)) {
		size_t i = scar_nameidx_find(s->index_.idx, name, tensor_name, s->tensors);

		return i < s->ntensors ? s->tensors[i] : NULL;
	}
	for (size_t i = 0; i < s->ntensors; i++)
		if (strcmp(s->tensors[i]->name, name) == 0)
			return s->tensors[i];
	return NULL;
}

int scar_state_clone(struct scar_state **out, const struct scar_state *s, struct scar_error *err)
{
	struct scar_state *c;
	int rc = scar_state_new(&c, s->model, err);

	if (rc)
		return rc;
	json_decref(c->config);
	json_decref(c->extra);
	c->config = json_deep_copy(s->config);
	c->extra = json_deep_copy(s->extra);
	c->iteration = s->iteration;
	c->shards = s->shards;
	if (!c->config || !c->extra) {
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < s->ntensors; i++) {
		struct scar_tensor *t;

		rc = scar_tensor_clone(&t, s->tensors[i], err);
		if (rc || (rc = scar_state_add(c, t, err)))
			goto fail;
	}
	*out = c;
	return 0;
fail:
	scar_state_free(c);
	*out = NULL;
	return rc;
}

uint64_t scar_state_bytes(const struct scar_state *s, int role)
{
	uint64_t n = 0;

	for (size_t i = 0; i < s->ntensors; i++)
		if (!role || (int)s->tensors[i]->role == role)
			n += scar_tensor_bytes(s->tensors[i]);
	return n;
}
