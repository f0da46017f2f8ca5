/* error.c - error codes and reports (see scar/error.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "scar/error.h"

int scar_error_is_damage(int code)
{
	return code == SCAR_EFORMAT || code == SCAR_ECORRUPT || code == SCAR_EVERSION ||
	       code == SCAR_ETRUNC;
}

const char *scar_strerror(int code)
{
	switch (code) {
	case SCAR_OK:		return "success";
	case SCAR_EINVAL:	return "invalid argument";
	case SCAR_ENOMEM:	return "out of memory";
	case SCAR_EIO:		return "input/output error";
	case SCAR_EFORMAT:	return "bad format";
	case SCAR_ECORRUPT:	return "corrupt input";
	case SCAR_EVERSION:	return "unsupported version";
	case SCAR_ETRUNC:	return "truncated input";
	case SCAR_EMISMATCH:	return "operands do not match";
	case SCAR_ENOTFOUND:	return "not found";
	case SCAR_EDIVERGED:	return "training diverged";
	case SCAR_EUNSUPPORTED:	return "not supported";
	case SCAR_ERANGE:	return "value out of range";
	}
	return "unknown error";
}

void scar_error_clear(struct scar_error *e)
{
	if (!e)
		return;
	memset(e, 0, sizeof(*e));
	e->offset = -1;
	e->line = -1;
}

static void vset(struct scar_error *e, int code, const char *fmt, va_list ap)
{
	e->code = code;
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
}

int scar_error_set(struct scar_error *e, int code, const char *fmt, ...)
{
	va_list ap;

	if (!e)
		return code;
	va_start(ap, fmt);
	vset(e, code, fmt, ap);
	va_end(ap);
	return code;
}

int scar_error_set_at(struct scar_error *e, int code, const char *file,
		      int64_t offset, int64_t line, const char *fmt, ...)
{
	va_list ap;

	if (!e)
		return code;
	va_start(ap, fmt);
	vset(e, code, fmt, ap);
	va_end(ap);
	snprintf(e->file, sizeof(e->file), "%s", file ? file : "");
	e->offset = offset;
	e->line = line;
	return code;
}

int scar_error_set_errno(struct scar_error *e, int errnum, const char *file,
			 const char *fmt, ...)
{
	va_list ap;
	size_t n;

	if (!e)
		return SCAR_EIO;
	va_start(ap, fmt);
	vset(e, SCAR_EIO, fmt, ap);
	va_end(ap);
	n = strlen(e->msg);
	snprintf(e->msg + n, sizeof(e->msg) - n, ": %s", strerror(errnum));
	snprintf(e->file, sizeof(e->file), "%s", file ? file : "");
	e->errno_value = errnum;
	return SCAR_EIO;
}
