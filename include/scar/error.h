/*
 * scar/error.h - error codes and the error report every call can fill.
 *
 * Library calls return 0 on success or a negative enum scar_err. Those that
 * take a struct scar_error * fill it on failure when it is not NULL: a
 * human-readable message (the problem first, no program name, no full stop),
 * and where known the file, byte offset and line the problem was found at.
 * Codes are stable: new ones are only ever appended.
 */
#ifndef SCAR_ERROR_H
#define SCAR_ERROR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum scar_err {
	SCAR_OK = 0,
	SCAR_EINVAL = -1,	/* bad argument or configuration */
	SCAR_ENOMEM = -2,	/* allocation failed */
	SCAR_EIO = -3,		/* a system call failed; errno_value says which */
	SCAR_EFORMAT = -4,	/* input is not in the expected format */
	SCAR_ECORRUPT = -5,	/* input has the format but fails a check (checksum, size) */
	SCAR_EVERSION = -6,	/* input is from a newer, unsupported format version */
	SCAR_ETRUNC = -7,	/* input ends early */
	SCAR_EMISMATCH = -8,	/* operands disagree: shapes, dtypes, models */
	SCAR_ENOTFOUND = -9,	/* no such tensor, shard, row or file */
	SCAR_EDIVERGED = -10,	/* training diverged: NaN or Inf, or runaway objective */
	SCAR_EUNSUPPORTED = -11,/* valid request this build or input cannot do */
	SCAR_ERANGE = -12,	/* value out of range */
};

#define SCAR_ERROR_MSG_MAX 512
#define SCAR_ERROR_FILE_MAX 256

struct scar_error {
	int code;			/* enum scar_err, 0 when nothing failed */
	int errno_value;		/* errno for SCAR_EIO, else 0 */
	char msg[SCAR_ERROR_MSG_MAX];	/* "section 3 (w, shard 1): checksum mismatch" */
	char file[SCAR_ERROR_FILE_MAX];	/* the file involved, "" when none */
	int64_t offset;			/* byte offset in file, -1 when unknown */
	int64_t line;			/* 1-based line in file, -1 when unknown */
};

/* Static name of a code, e.g. "corrupt input"; never NULL. */
const char *scar_strerror(int code);

/*
 * Nonzero when code says the input itself is damaged (SCAR_EFORMAT,
 * SCAR_ECORRUPT, SCAR_EVERSION, SCAR_ETRUNC): reading it again will fail the
 * same way. An I/O error or a lack of memory is not damage: the file may be
 * intact, so it must not be passed over as a bad one.
 */
int scar_error_is_damage(int code);

/* Reset *e to "no error" (code 0, empty strings, offset and line -1). NULL is fine. */
void scar_error_clear(struct scar_error *e);

/*
 * Fill *e (when not NULL) with code, the printf-style message, and return
 * code, so that callers can write `return scar_error_set(e, SCAR_EINVAL, ...)`.
 * File, offset and line are left as they were; set them with the _at variant.
 */
int scar_error_set(struct scar_error *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* As scar_error_set, and records file (may be NULL), offset and line (-1 = unknown). */
int scar_error_set_at(struct scar_error *e, int code, const char *file,
		      int64_t offset, int64_t line, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

/* As scar_error_set with code SCAR_EIO, appending strerror(errnum) and recording errnum. */
int scar_error_set_errno(struct scar_error *e, int errnum, const char *file,
			 const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/*
 * For a "did you mean" in a message: the index in cands[0..n) of the name
 * nearest to name - the fewest insertions, deletions, substitutions and
 * swaps of neighbouring characters, case ignored - when it is near enough
 * to be a slip: at most 1 edit for a name of up to 4 bytes, 2 up to 8 and
 * 3 beyond, and fewer edits than name has bytes. The first of equals; n
 * when none is near (names over 255 bytes are never near). NULL entries
 * are skipped.
 */
size_t scar_name_nearest(const char *name, const char *const *cands, size_t n);

#ifdef __cplusplus
}
#endif
#endif
