/*
 * cli.h - the small module every scar command shares: program name,
 * messages, strict number parsing, stdout/stdin conventions.
 *
 * Messages follow "scar-diff: cannot open 'a.ckpt': No such file or
 * directory": program name, the problem first, the subject quoted, no full
 * stop. Exit codes are the same in every tool: 0 ok, 1 a "no" answer,
 * 2 usage or system error.
 */
#ifndef SCAR_CLI_H
#define SCAR_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "scar/error.h"

#define EXIT_NO 1
#define EXIT_TROUBLE 2

extern const char *cli_progname;

/*
 * Set the program name, ignore SIGPIPE (a closed pipe then shows up as
 * EPIPE, which cli ends quietly) and register the final stdout check.
 */
void cli_init(const char *progname);

void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void cli_die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "prog: MSG" then "try 'prog --help'", exit 2. */
_Noreturn void cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * From now on cli_usage_error exits 2 without a word: for the MPI ranks
 * other than 0, which parse the same arguments and would repeat rank 0's
 * message.
 */
void cli_quiet_usage_errors(void);

/* Print a library error as "prog: [file:line: | file: offset N: ]msg". */
void cli_warn_error(const struct scar_error *e);
_Noreturn void cli_die_error(const struct scar_error *e);

/* Parse option values strictly: the whole string, finite, in range; else usage error. */
uint64_t cli_parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max);
int64_t cli_parse_i64(const char *opt, const char *s, int64_t min, int64_t max);
double cli_parse_double(const char *opt, const char *s, double min, double max);
/*
 * A comma-separated list (seps are the separators): usage error naming opt
 * when it is empty or has an empty item ("1,,2", ",1", "1,"), which
 * strtok would skip in silence.
 */
void cli_check_list(const char *opt, const char *s, const char *seps);
/* Fractions, row ranges, shard lists: options.h. */

/* "-" or NULL */
int cli_is_stdio(const char *path);
/* Die unless stdout may take binary data (not a terminal). */
void cli_refuse_binary_tty(void);
/* Die unless stdin is not a terminal (for reading a checkpoint from it). */
void cli_refuse_tty_stdin(void);
/*
 * Nonzero when progress may be shown: stderr is a terminal, and not the one
 * stdout writes to when stdout_busy (stdout carries the output).
 */
int cli_progress_ok(int stdout_busy);
/* Columns of the terminal on stderr (80 when unknown). */
int cli_terminal_width(void);
/*
 * fn runs before every message cli prints (and cli_flush_stdout's): to
 * take a progress line off the terminal first.
 */
void cli_set_message_hook(void (*fn)(void));

/*
 * An option's path that looks like an option ("--resume -n 40": the path
 * forgotten, "-n" taken for it) is a usage error saying so, unless a file of
 * that name exists. dash: what "-" means for opt ("standard input"), or
 * NULL when nothing.
 */
void cli_check_path_arg(const char *opt, const char *path, const char *dash);
/*
 * After "not a scar checkpoint": when path is a .npy or safetensors file or
 * an event stream, a second message saying so and what to do; resume: for
 * scar-train --resume, which needs a whole model.
 */
void cli_hint_not_checkpoint(const char *path, int resume);
/* Most threads --threads takes, and its default: the online cores, at most that. */
#define CLI_THREADS_MAX 64
unsigned cli_default_threads(void);

/* Print --version text and exit 0. */
_Noreturn void cli_version(void);

/* Flush stdout; die with a message on a write error, quietly on EPIPE. */
void cli_flush_stdout(void);

#endif
