/*
 * data_common.h - internal helpers shared by the data-set readers
 * (lib/data_*.c): a buffered line reader that knows its file and line for
 * error reports, strict number parsers, and growable arrays. Not installed;
 * not part of the public API.
 */
#ifndef SCAR_DATA_COMMON_H
#define SCAR_DATA_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "scar/error.h"

/*
 * A line reader over a file descriptor with one growing buffer. Lines are
 * returned NUL-terminated in place, without the '\n' (and without a '\r'
 * before it), valid until the next call.
 */
/*
 * Longest line a data file may have: 64 MiB, far above any real line (a
 * LIBSVM example of a million features is about 20 MB), and a bound on the
 * memory a file without newlines (/dev/zero, an endless pipe) can take.
 */
#define SCAR_DATA_LINE_MAX ((size_t)64 << 20)

struct scar_lines {
	int fd;
	const char *path;	/* borrowed, for error reports */
	char *buf;
	size_t cap, pos, end;
	int eof;
	int64_t line;		/* 1-based number of the line last returned */
	int64_t line_off;	/* byte offset of that line */
	int64_t consumed;	/* bytes of the file before buf[0] */
	uint64_t size;		/* file size from fstat (0 for non-regular files) */
};

/* Open path for reading. On failure nothing needs closing. */
int scar_lines_open(struct scar_lines *lr, const char *path, struct scar_error *err);
void scar_lines_close(struct scar_lines *lr);
/*
 * Next line: 1 with *line and *len set, 0 at end of file, or a negative code
 * (read error, or a NUL byte in the line: SCAR_EFORMAT).
 */
int scar_lines_next(struct scar_lines *lr, char **line, size_t *len, struct scar_error *err);
/* Fill err with code, the message, lr's file and current line; returns code. */
int scar_lines_fail(const struct scar_lines *lr, struct scar_error *err, int code,
		    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Skip spaces and tabs. */
static inline const char *scar_data_skip_blank(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

/*
 * Parse an unsigned decimal integer at s: returns the end pointer, or NULL
 * when there is no digit or the value exceeds max.
 */
const char *scar_data_parse_u64(const char *s, uint64_t max, uint64_t *out);
/*
 * Parse a finite decimal floating-point number at s ("-3", "4.5", "1e-3"):
 * returns the end pointer or NULL. Exact (correctly rounded) like strtod,
 * with a fast path for the short decimals data files are made of.
 */
const char *scar_data_parse_double(const char *s, double *out);

/*
 * Copy of a token for messages, in buf: at most 40 bytes, up to a blank, a
 * NUL or one of the characters in stops (NULL: none).
 */
const char *scar_data_token(const char *s, const char *stops, char *buf, size_t size);

/*
 * Make room for need elements of size elem in *p (capacity *cap elements),
 * growing geometrically. Returns 0 or SCAR_ENOMEM (with err filled).
 */
int scar_data_reserve(void **p, size_t *cap, size_t need, size_t elem, struct scar_error *err);

/*
 * malloc for big arrays (data sets): 2 MiB aligned and, where the system has
 * it, advised for transparent huge pages, which makes first touch several
 * times faster. The result is released with free().
 */
void *scar_data_alloc_big(size_t bytes);

#endif
