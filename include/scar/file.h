/*
 * scar/file.h - opening inputs without hanging, and printing names from
 * files without letting them drive the terminal.
 *
 * Every path the tools read goes through scar_open_input: it never blocks
 * on a FIFO without a writer, and where the caller needs a regular file
 * (a checkpoint directory's entries, a manifest's rank files) anything else
 * is refused before a byte is read.
 *
 * Names and strings that come from files (tensor and model names, paths,
 * configuration values) are printed to a person through the quoting below:
 * control characters become visible escapes, as `ls -b` and git do. JSON
 * output is exact and never goes through it.
 */
#ifndef SCAR_FILE_H
#define SCAR_FILE_H

#include <stddef.h>
#include <stdio.h>

#include "scar/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Flags of scar_open_input. */
#define SCAR_OPEN_REGULAR 1	/* refuse anything but a regular file (SCAR_EFORMAT) */
#define SCAR_OPEN_NOFOLLOW 2	/* refuse a symbolic link as the last component */

/*
 * Open path for reading (close-on-exec) and return the descriptor, or a
 * negative enum scar_err with *err filled. The open itself never waits for
 * a FIFO's writer; a FIFO without one then reads as empty. Directories are
 * always refused.
 */
int scar_open_input(const char *path, int flags, struct scar_error *err);

/*
 * Copy src into dst (cap bytes, always NUL-terminated when cap > 0) with
 * each byte a terminal could act on written as an escape: \n \r \t \e as
 * such, other C0 controls, DEL and the C1 controls (U+0080..U+009F) and
 * bytes that are not UTF-8 as \xNN, and a backslash as \\. Printable UTF-8
 * passes unchanged. Returns the length the full result needs, as snprintf.
 */
size_t scar_quote_text(char *dst, size_t cap, const char *src);

/* Write s to f quoted as above; returns EOF on a write error, else 0. */
int scar_fputs_quoted(const char *s, FILE *f);

/*
 * Length of the well-formed UTF-8 sequence at s (1 for any ASCII byte but
 * NUL), or 0 where s holds NUL or a byte that starts no valid sequence.
 */
size_t scar_utf8_len(const char *s);

/*
 * s as valid UTF-8 in a new string (free it), each byte that is not
 * replaced by U+FFFD, as jq does: JSON output must be UTF-8, and a path
 * from argv need not be. NULL if out of memory.
 */
char *scar_utf8_valid(const char *s);

#ifdef __cplusplus
}
#endif
#endif
