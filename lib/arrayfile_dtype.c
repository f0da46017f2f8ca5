/*
 * arrayfile_dtype.c - the element types of foreign array files: safetensors
 * dtype codes and .npy type codes, and the scar dtype each is read as
 * (scar/arrayfile.h). One table for both formats, in its own file so that
 * neither format's reader depends on the other's.
 */
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
