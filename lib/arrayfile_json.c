/*
 * arrayfile_json.c - a tensor's rows as one JSON object, the text form of
 * `scar-ckpt export --format json` (see scar/arrayfile.h).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "scar/arrayfile.h"
#include "scar/events.h"

static void json_value(FILE *f, enum scar_dtype t, const unsigned char *p)
{
	switch (t) {
	case SCAR_F32: {
		float v;
		memcpy(&v, p, sizeof(v));
		if (isfinite(v))
			fprintf(f, "%.9g", (double)v);
		else
			fputs("null", f);
		break;
	}
	case SCAR_F64: {
		double v;
		memcpy(&v, p, sizeof(v));
		if (isfinite(v))
			fprintf(f, "%.17g", v);
		else
			fputs("null", f);
		break;
	}
	case SCAR_I32: {
		int32_t v;
		memcpy(&v, p, sizeof(v));
		fprintf(f, "%ld", (long)v);
		break;
	}
	case SCAR_U32: {
		uint32_t v;
		memcpy(&v, p, sizeof(v));
		fprintf(f, "%lu", (unsigned long)v);
		break;
	}
	case SCAR_I64: {
		int64_t v;
		memcpy(&v, p, sizeof(v));
		fprintf(f, "%lld", (long long)v);
		break;
	}
	case SCAR_U64: {
		uint64_t v;
		memcpy(&v, p, sizeof(v));
		fprintf(f, "%llu", (unsigned long long)v);
		break;
	}
	case SCAR_U8:
		fprintf(f, "%u", (unsigned)*p);
		break;
	case SCAR_F16:
	case SCAR_BF16: {
		/* as the f32 it widens to exactly: the numbers f32 prints */
		uint16_t h = (uint16_t)(p[0] | p[1] << 8);
		float v = t == SCAR_F16 ? scar_f16_to_f32(h) : scar_bf16_to_f32(h);

		if (isfinite(v))
			fprintf(f, "%.9g", (double)v);
		else
			fputs("null", f);
		break;
	}
	}
}

int scar_json_rows_write_fd(int fd, const char *name, const struct scar_tensor *t,
			    const uint64_t *rows, struct scar_error *err)
{
	uint64_t nrows = t->ndim ? t->shape[0] : 1, i;
	size_t elem = scar_dtype_size(t->dtype), rb = elem, j;
	json_t *js;
	FILE *f;
	int dfd, e = 0;

	for (int d = 1; d < t->ndim; d++)
		rb *= (size_t)t->shape[d];
	/* stdio over a copy of fd: the caller closes fd, fclose closes the copy */
	if ((dfd = dup(fd)) < 0 || !(f = fdopen(dfd, "w"))) {
		e = errno;
		if (dfd >= 0)
			close(dfd);
		return scar_error_set_errno(err, e, name, "cannot write '%s'", name);
	}
	js = scar_json_text(t->name);
	fputs("{\"tensor\":", f);
	json_dumpf(js, f, JSON_ENCODE_ANY);
	json_decref(js);
	fprintf(f, ",\"dtype\":\"%s\",\"shape\":[", scar_dtype_name(t->dtype));
	for (int d = 0; d < t->ndim; d++)
		fprintf(f, "%s%llu", d ? "," : "", (unsigned long long)t->shape[d]);
	fputs("],\"rows\":[", f);
	for (i = 0; i < nrows; i++)
		fprintf(f, "%s%llu", i ? "," : "", (unsigned long long)rows[i]);
	fputs("],\"data\":[", f);
	for (i = 0; i < nrows && !ferror(f); i++) {
		const unsigned char *row = (const unsigned char *)t->data + i * rb;

		fputs(i ? ",[" : "[", f);
		for (j = 0; j < rb / (elem ? elem : 1); j++) {
			if (j)
				fputc(',', f);
			json_value(f, t->dtype, row + j * elem);
		}
		fputc(']', f);
	}
	if (!ferror(f))
		fputs("]}\n", f);
	if (ferror(f))
		e = errno ? errno : EIO;
	if (fclose(f) != 0 && !e)
		e = errno;
	if (e)
		return scar_error_set_errno(err, e, name, "cannot write '%s'", name);
	return 0;
}
