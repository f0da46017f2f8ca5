/*
 * arrayfile_dtype.c - the element types of foreign array files: safetensors
 * dtype codes and .npy type codes, and the scar dtype each is read as
 * (scar/arrayfile.h). One table for both formats, in its own file so that
 * neither format's reader depends on the other's.
 */
#include <math.h>
#include <string.h>

#include "scar/arrayfile.h"

static const struct {
	const char *code, *npy, *stored;
	enum scar_dtype dt;
	unsigned size;
} array_types[] = {
	{ "F32", "f4", NULL, SCAR_F32, 4 }, { "F64", "f8", NULL, SCAR_F64, 8 },
	{ "I32", "i4", NULL, SCAR_I32, 4 }, { "U32", "u4", NULL, SCAR_U32, 4 },
	{ "I64", "i8", NULL, SCAR_I64, 8 }, { "U64", "u8", NULL, SCAR_U64, 8 },
	{ "U8", "u1", NULL, SCAR_U8, 1 }, { "F16", "f2", NULL, SCAR_F16, 2 },
	{ "BF16", NULL, NULL, SCAR_BF16, 2 }, { "I8", "i1", "i8", SCAR_I32, 1 },
	{ "I16", "i2", "i16", SCAR_I32, 2 }, { "U16", "u2", "u16", SCAR_U32, 2 },
	{ "BOOL", "b1", "bool", SCAR_U8, 1 },
	/* No NumPy code: NumPy has no 8-bit float. */
	{ "F8_E4M3", NULL, "f8_e4m3", SCAR_F32, 1 }, { "F8_E5M2", NULL, "f8_e5m2", SCAR_F32, 1 },
};

enum scar_dtype scar_array_dtype(const char *code, const char **stored, unsigned *stored_size)
{
	for (size_t i = 0; i < sizeof(array_types) / sizeof(array_types[0]); i++) {
		if (strcmp(code, array_types[i].code) == 0 ||
		    (array_types[i].npy && strcmp(code, array_types[i].npy) == 0)) {
			*stored = array_types[i].stored;
			*stored_size = array_types[i].size;
			return array_types[i].dt;
		}
	}
	return 0;
}

/*
 * The value is M * 2^(E - bias - mantissa bits), M the significand as an
 * integer (the implicit 1 added unless the exponent field is 0, which
 * then counts as 1): exact in f32, whose 24-bit significand and exponent
 * range hold every 8-bit float.
 */
float scar_f8e4m3_to_f32(uint8_t b)
{
	unsigned e = b >> 3 & 15, m = b & 7;
	float v;

	if (e == 15 && m == 7)
		v = NAN;	/* the FN variant's only NaN; no infinities */
	else
		v = ldexpf((float)(e ? 8 + m : m), (int)(e ? e : 1) - 7 - 3);
	return b & 0x80 ? -v : v;
}

float scar_f8e5m2_to_f32(uint8_t b)
{
	unsigned e = b >> 2 & 31, m = b & 3;
	float v;

	if (e == 31) {
		/* infinity, or a NaN keeping its payload as F16's do (E5M2 is F16's high byte) */
		uint32_t u = (uint32_t)(b & 0x80) << 24 | 0x7f800000u | (uint32_t)m << 21;

		memcpy(&v, &u, sizeof(v));
		return v;
	}
	v = ldexpf((float)(e ? 4 + m : m), (int)(e ? e : 1) - 15 - 2);
	return b & 0x80 ? -v : v;
}
