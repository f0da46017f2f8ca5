/*
 * scar/file.h - opening inputs without hanging, and printing names from
 * files without letting them drive the terminal.
 *
 * Every path the tools read goes through scar_open_input: it never blocks
 * on a FIFO without a writer, and where the caller needs a regular file
 * (a checkpoint directory's entries, a manifest's rank files) anything else
 * is refused before a byte is read.
 *
 * Every file the toolkit writes goes through scar_file_replace: the one
 * implementation of a temporary beside the target, fsync, rename and the
 * directory's fsync, and of writing straight into a target that is not a
 * regular file (a FIFO, a terminal, /dev/null), which is never renamed over.
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
#include <sys/types.h>

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

/* ---- whole reads and writes ---- */

/* Up to n bytes from fd, retrying EINTR: the count (short only at the end of input), or -errno. */
ssize_t scar_read_upto(int fd, void *buf, size_t n);
/* n bytes from fd: 1 all of them, 0 the input ended first, -errno a read error. */
int scar_read_full(int fd, void *buf, size_t n);
/* Write all of buf to fd, retrying on EINTR and short writes; errors name name. */
int scar_write_all(int fd, const void *buf, size_t len, const char *name,
		   struct scar_error *err);

/* ---- replacing a file ---- */

/*
 * Writes the contents of a file to fd; name is the target's path, or
 * "(stdout)", for messages. Returns 0 or a negative enum scar_err.
 */
typedef int (*scar_write_fn)(int fd, const char *name, void *ctx, struct scar_error *err);

#define SCAR_REPLACE_SYNC 1	/* fsync the file, and its directory after the rename */

/*
 * Replace path with what fn writes, atomically: fn writes a temporary
 * beside path (scar_tmp_create: the mode of the regular file replaced, else
 * 0666 & ~umask; removed on a signal), which is then fsync'ed (with
 * SCAR_REPLACE_SYNC), closed and renamed over path, and the directory
 * fsync'ed (with SCAR_REPLACE_SYNC; a file system that cannot sync a
 * directory is not an error). On failure path is untouched and the
 * temporary removed. An existing path that is not a regular file or a
 * directory (a FIFO, a character device such as /dev/stdout) is opened and
 * written in place: no temporary, no rename. path NULL or "-" is stdout.
 */
int scar_file_replace(const char *path, int flags, scar_write_fn fn, void *ctx,
		      struct scar_error *err);

/* Nonzero when path exists and is neither a regular file nor a directory. */
int scar_file_is_special(const char *path);

/* fsync the directory holding path (see scar_file_replace). */
int scar_file_sync_dir(const char *path, struct scar_error *err);

/*
 * The temporary of scar_file_replace: "DIR/.BASE.tmp.XXXXXX" beside path,
 * BASE its last component cut to its first 243 bytes so the temporary's
 * name fits NAME_MAX (255) whenever path's does. scar_tmp_name returns that
 * mkstemp template (malloc'd, NULL when out of memory). scar_tmp_create
 * makes the file with the mode of the regular file it is to replace, else
 * 0666 & ~umask, and has it removed should SIGINT, SIGTERM or SIGHUP (when
 * their action is the default) end the process, or the process exit; it
 * returns the descriptor and the name in *tmp, or a negative error.
 * scar_tmp_done(tmp, 0) once it is renamed into place, (tmp, 1) to remove
 * it; both free tmp.
 */
char *scar_tmp_name(const char *path);
int scar_tmp_create(const char *path, char **tmp, struct scar_error *err);
void scar_tmp_done(char *tmp, int remove);

/*
 * Nonzero when the directory entry name is such a temporary
 * (".BASE.tmp.XXXXXX"); BASE, the name of the file it was to become (cut
 * as above), goes to target (cap bytes, NUL-terminated) unless target is
 * NULL. For removing what a killed writer left in a directory.
 */
int scar_tmp_match(const char *name, char *target, size_t cap);

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
