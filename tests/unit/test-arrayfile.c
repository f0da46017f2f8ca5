/* test-arrayfile.c - .npy and safetensors round trips and rejections. */
#include <fcntl.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "scar/arrayfile.h"
#include "unit.h"

static const char *dir;	/* the scratch directory (unit.h) */

static void put(const char *path, const void *data, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	CHECK(fd >= 0);
	CHECK(write(fd, data, n) == (ssize_t)n);
	close(fd);
}

static struct scar_tensor *mk(const char *name, enum scar_dtype dt, int ndim,
			      const uint64_t *shape)
{
	struct scar_tensor *t = NULL;

	CHECK_RC(scar_tensor_new(&t, name, dt, SCAR_ROLE_PARAM, ndim, shape, NULL));
	for (uint64_t i = 0; i < scar_tensor_elems(t); i++)
		scar_tensor_set(t, i, (double)i * 0.5 - 3);
	return t;
}

static void npy_roundtrip(enum scar_dtype dt, int ndim, const uint64_t *shape, int version)
{
	struct scar_tensor *t = mk("w", dt, ndim, shape), *u = NULL;
	struct scar_arrayfile *f = NULL;
	const struct scar_array_info *ti;
	const char *p = unit_tmp("w.npy");

	CHECK_RC(scar_npy_write(p, t, version, NULL));
	CHECK_RC(scar_arrayfile_open(&f, p, NULL));
	if (!f)
		return;
	CHECK(scar_arrayfile_format(f) == SCAR_ARRAY_NPY);
	CHECK(scar_arrayfile_count(f) == 1);
	ti = scar_arrayfile_tensor(f, 0);
	CHECK(strcmp(ti->name, "w") == 0);
	CHECK(ti->dtype == dt && ti->ndim == ndim);
	CHECK(ti->offset % 64 == 0);
	CHECK_RC(scar_arrayfile_load_tensor(f, 0, &u, NULL));
	CHECK(u && scar_tensor_same_layout(t, u));
	CHECK(u && memcmp(t->data, u->data, scar_tensor_bytes(t)) == 0);
	scar_tensor_free(u);
	scar_arrayfile_close(f);
	scar_tensor_free(t);
}

static void test_npy(void)
{
	uint64_t s2[] = { 3, 5 }, s1[] = { 7 }, s3[] = { 2, 3, 4 }, s0[] = { 0, 4 };

	npy_roundtrip(SCAR_F32, 2, s2, 0);
	npy_roundtrip(SCAR_F64, 1, s1, 0);
	npy_roundtrip(SCAR_I64, 3, s3, 2);
	npy_roundtrip(SCAR_U8, 0, s1, 1);
	npy_roundtrip(SCAR_I32, 2, s0, 0);
	npy_roundtrip(SCAR_U32, 1, s1, 2);
}

/* A header as numpy 1.x writes it, with a big-endian dtype and an L suffix. */
static void test_npy_foreign(void)
{
	const char dict[] = "{'descr': '>f8', 'fortran_order': False, 'shape': (2L, 1L), }";
	unsigned char file[128 + 16];
	size_t hl = 118, n;
	struct scar_arrayfile *f = NULL;
	double v[2];
	struct scar_error e;

	memset(file, ' ', sizeof(file));
	memcpy(file, "\x93NUMPY\x01\x00", 8);
	file[8] = (unsigned char)hl;
	file[9] = 0;
	memcpy(file + 10, dict, strlen(dict));
	file[10 + hl - 1] = '\n';
	n = 10 + hl;
	/* 1.0 and -2.0 big-endian */
	memcpy(file + n, "\x3f\xf0\0\0\0\0\0\0\xc0\0\0\0\0\0\0\0", 16);
	put(unit_tmp("be.npy"), file, n + 16);
	CHECK_RC(scar_arrayfile_open(&f, unit_tmp("be.npy"), NULL));
	if (f) {
		CHECK(scar_arrayfile_tensor(f, 0)->shape[0] == 2);
		CHECK_RC(scar_arrayfile_read(f, 0, 0, v, sizeof(v), NULL));
		CHECK(v[0] == 1.0 && v[1] == -2.0);
		scar_arrayfile_close(f);
	}
	/* truncated data */
	put(unit_tmp("short.npy"), file, n + 10);
	CHECK(scar_arrayfile_open(&f, unit_tmp("short.npy"), &e) == SCAR_ETRUNC);
	CHECK(f == NULL);
	/* half precision is read as it is stored: f16, its bytes */
	memcpy(file + 10 + 11, "<f2", 3);
	memcpy(file + n, "\x00\x3c\x00\xc0", 4);
	put(unit_tmp("half.npy"), file, n + 4);
	CHECK_RC(scar_arrayfile_open(&f, unit_tmp("half.npy"), NULL));
	if (f) {
		uint16_t h[2];
		const struct scar_array_info *ti = scar_arrayfile_tensor(f, 0);

		CHECK(ti->dtype == SCAR_F16 && ti->nbytes == 4 && ti->stored_size == 2);
		CHECK(ti->stored == NULL);
		CHECK_RC(scar_arrayfile_read(f, 0, 0, h, 4, NULL));
		CHECK(scar_f16_to_f32(h[0]) == 1.0f && scar_f16_to_f32(h[1]) == -2.0f);
		CHECK_RC(scar_arrayfile_read(f, 0, 2, h, 2, NULL));
		CHECK(h[0] == 0xc000);
		scar_arrayfile_close(f);
	}
	put(unit_tmp("half.npy"), file, n + 3);
	CHECK(scar_arrayfile_open(&f, unit_tmp("half.npy"), &e) == SCAR_ETRUNC);
	/* unsupported dtype */
	memcpy(file + 10 + 11, "<c8", 3);
	put(unit_tmp("cplx.npy"), file, n + 16);
	CHECK(scar_arrayfile_open(&f, unit_tmp("cplx.npy"), &e) == SCAR_EUNSUPPORTED);
	CHECK(strstr(e.msg, "'<c8'") != NULL);
	/* garbage header */
	memcpy(file + 10, "{'descr' '<f8'", 14);
	put(unit_tmp("bad.npy"), file, n + 16);
	CHECK(scar_arrayfile_open(&f, unit_tmp("bad.npy"), &e) == SCAR_EFORMAT);
	put(unit_tmp("text.npy"), "hello world, not an array", 25);
	CHECK(scar_arrayfile_open(&f, unit_tmp("text.npy"), &e) == SCAR_EFORMAT);
	CHECK(scar_arrayfile_open(&f, unit_tmp("missing.npy"), &e) == SCAR_EIO);
}

static void test_safetensors(void)
{
	uint64_t s2[] = { 4, 3 }, s1[] = { 5 };
	struct scar_state *st = NULL, *back = NULL;
	struct scar_tensor *rng = mk("rng", SCAR_U64, 1, s1);
	struct scar_arrayfile *f = NULL;
	json_t *meta = json_pack("{s:s}", "format", "pt");
	const char *p = unit_tmp("m.safetensors");

	CHECK_RC(scar_state_new(&st, "", NULL));
	CHECK_RC(scar_state_add(st, mk("w", SCAR_F32, 2, s2), NULL));
	CHECK_RC(scar_state_add(st, mk("b", SCAR_F64, 1, s1), NULL));
	rng->role = SCAR_ROLE_STATE;
	CHECK_RC(scar_state_add(st, rng, NULL));
	CHECK_RC(scar_safetensors_write(p, st, 0, meta, NULL));
	CHECK_RC(scar_arrayfile_open(&f, p, NULL));
	if (f) {
		CHECK(scar_arrayfile_format(f) == SCAR_ARRAY_SAFETENSORS);
		CHECK(scar_arrayfile_count(f) == 3);
		CHECK(scar_arrayfile_find(f, "b") == 1);
		CHECK(scar_arrayfile_tensor(f, 0)->offset % 8 == 0);
		CHECK(scar_arrayfile_tensor(f, 2)->role == SCAR_ROLE_STATE);
		CHECK(strcmp(json_string_value(json_object_get(scar_arrayfile_metadata(f), "format")),
			     "pt") == 0);
		scar_arrayfile_close(f);
	}
	CHECK_RC(scar_array_load(p, &back, NULL));
	for (size_t i = 0; back && i < 3; i++) {
		CHECK(strcmp(back->tensors[i]->name, st->tensors[i]->name) == 0);
		CHECK(scar_tensor_same_layout(back->tensors[i], st->tensors[i]));
		CHECK(memcmp(back->tensors[i]->data, st->tensors[i]->data,
			     scar_tensor_bytes(st->tensors[i])) == 0);
	}
	scar_state_free(back);
	/* params only */
	CHECK_RC(scar_safetensors_write(p, st, SCAR_ROLE_PARAM, NULL, NULL));
	CHECK_RC(scar_arrayfile_open(&f, p, NULL));
	CHECK(f && scar_arrayfile_count(f) == 2 && !scar_arrayfile_metadata(f));
	scar_arrayfile_close(f);
	scar_state_free(st);
	json_decref(meta);
}

static void st_bad(const char *json, size_t datalen, int code)
{
	unsigned char buf[512] = { 0 };
	size_t n = strlen(json);
	struct scar_arrayfile *f = NULL;
	struct scar_error e;

	for (int b = 0; b < 8; b++)
		buf[b] = (unsigned char)(n >> (8 * b));
	memcpy(buf + 8, json, n);
	put(unit_tmp("bad.safetensors"), buf, 8 + n + datalen);
	CHECK(scar_arrayfile_open(&f, unit_tmp("bad.safetensors"), &e) == code);
	if (f)
		scar_arrayfile_close(f);
}

static void test_safetensors_bad(void)
{
	st_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, 0);
	st_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4, SCAR_ETRUNC);
	st_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 16, SCAR_EFORMAT);
	st_bad("{\"a\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, 0);
	st_bad("{\"a\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
	       SCAR_EFORMAT);
	st_bad("{\"a\":{\"dtype\":\"F8_E4M3\",\"shape\":[2],\"data_offsets\":[0,2]}}", 2, 0);
	st_bad("{\"a\":{\"dtype\":\"F8_E5M2\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4,
	       SCAR_EFORMAT);
	st_bad("{\"a\":{\"dtype\":\"F8_E8M0\",\"shape\":[2],\"data_offsets\":[0,2]}}", 2,
	       SCAR_EUNSUPPORTED);
	st_bad("{\"a\":{\"dtype\":\"f4\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
	       SCAR_EUNSUPPORTED);
	st_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
	       "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 16, SCAR_EFORMAT);
	st_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, SCAR_EFORMAT);
	st_bad("{\"a\":{\"dtype\":\"F32\",\"sha", 8, SCAR_EFORMAT);
	st_bad("{\"__metadata__\":{\"k\":1}}", 0, SCAR_EFORMAT);
}

/* Pipes are read into memory. */
static void test_pipe(void)
{
	uint64_t s2[] = { 3, 2 };
	struct scar_tensor *t = mk("x", SCAR_F64, 2, s2);
	struct scar_arrayfile *f = NULL;
	int fds[2];
	double v[6];

	CHECK(pipe(fds) == 0);
	CHECK_RC(scar_npy_write_fd(fds[1], "pipe", t, 0, NULL));
	close(fds[1]);
	CHECK_RC(scar_arrayfile_open_fd(&f, fds[0], "-", NULL, 0, NULL));
	close(fds[0]);
	if (f) {
		CHECK(strcmp(scar_arrayfile_tensor(f, 0)->name, "array") == 0);
		CHECK_RC(scar_arrayfile_read(f, 0, 8, v, 16, NULL));
		CHECK(v[0] == -2.5 && v[1] == -2.0);
		CHECK(scar_arrayfile_read(f, 0, 40, v, 16, NULL) == SCAR_ERANGE);
		scar_arrayfile_close(f);
	}
	scar_tensor_free(t);
}

/* A few codes of each 8-bit float (tests/bats/hf-sharded.bats checks all 256). */
static void test_f8(void)
{
	CHECK(scar_f8e4m3_to_f32(0x7e) == 448.0f);
	CHECK(scar_f8e4m3_to_f32(0xfe) == -448.0f);
	CHECK(scar_f8e4m3_to_f32(0x01) == 0x1p-9f);
	CHECK(scar_f8e4m3_to_f32(0x08) == 0x1p-6f);
	CHECK(scar_f8e4m3_to_f32(0x38) == 1.0f);
	CHECK(isnan(scar_f8e4m3_to_f32(0x7f)) && isnan(scar_f8e4m3_to_f32(0xff)));
	CHECK(isinf(scar_f8e4m3_to_f32(0x78)) == 0 && scar_f8e4m3_to_f32(0x78) == 256.0f);
	CHECK(signbit(scar_f8e4m3_to_f32(0x80)) && scar_f8e4m3_to_f32(0x80) == 0.0f);
	CHECK(scar_f8e5m2_to_f32(0x7b) == 57344.0f);
	CHECK(scar_f8e5m2_to_f32(0x01) == 0x1p-16f);
	CHECK(scar_f8e5m2_to_f32(0x3c) == 1.0f);
	CHECK(isinf(scar_f8e5m2_to_f32(0x7c)) && scar_f8e5m2_to_f32(0xfc) < 0);
	CHECK(isnan(scar_f8e5m2_to_f32(0x7d)) && isnan(scar_f8e5m2_to_f32(0xff)));
	for (unsigned b = 0; b < 128; b++)	/* E5M2 is F16's high byte */
		CHECK(isnan(scar_f8e5m2_to_f32((uint8_t)b)) ||
		      scar_f8e5m2_to_f32((uint8_t)b) == scar_f16_to_f32((uint16_t)(b << 8)));
}

int main(void)
{
	dir = unit_scratch("arrayfile");
	test_npy();
	test_npy_foreign();
	test_safetensors();
	test_safetensors_bad();
	test_f8();
	test_pipe();
	unit_scratch_remove();
	return unit_done("test-arrayfile");
}
