/*
 * ckpt.h - what the scar-ckpt subcommands (cmd/ckpt/COMMAND.c) share with
 * cmd/scar-ckpt.c: the option tables, which stay there as the one source of
 * the options, and the helpers more than one command uses.
 */
#ifndef SCAR_CMD_CKPT_H
#define SCAR_CMD_CKPT_H

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scar/arrayfile.h"
#include "scar/ckpt.h"
#include "scar/dist.h"
#include "scar/events.h"
#include "scar/file.h"
#include "scar/perturb.h"
#include "scar/shard.h"
#include "scar/tensor.h"
#include "cli.h"
#include "options.h"
#include "subcmd.h"

enum {
	OPT_COMPRESS = 256, OPT_DTYPE, OPT_FORMAT, OPT_ITERATION, OPT_JSON, OPT_LEVEL,
	OPT_MODEL, OPT_NAME, OPT_NO_COMPRESS, OPT_NO_SYNC, OPT_ROLE, OPT_ROWS, OPT_SHAPE,
	OPT_SHARD, OPT_SHARDS, OPT_THREADS, OPT_TENSOR, OPT_POLICY, OPT_INTERVAL, OPT_FRACTION, OPT_SEED,
	OPT_FORCE, OPT_STREAM, OPT_SHUFFLE,
};

extern const struct option info_opts[], verify_opts[], export_opts[], import_opts[],
	apply_opts[], convert_opts[], ls_opts[], save_opts[];

/* The subcommands, one file each. */
int cmd_apply(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_save(int argc, char **argv);
int cmd_verify(int argc, char **argv);

/* Print a library error, naming path when the library did not; a closed pipe exits quietly. */
void warn_err(const char *path, struct scar_error *e);
/* -1 (warned) when the snapshot at path has an F8 tensor, which no checkpoint holds. */
int refuse_f8(const char *path);
void *xmalloc(size_t n);
void *xrealloc(void *p, size_t n);
/* dir without trailing slashes (but "/" stays); caller frees. */
char *trim_dir(const char *dir);
/* The input operand: "-" (stdin) when absent; stdin must not be a terminal. */
const char *input_path(const char *operand);
double ratio(uint64_t raw, uint64_t stored);
void json_put(json_t *o, const char *k, json_t *v);
void print_json(json_t *o);
const char *kind_name(int partial);
void refuse_tty_out(const char *path);
void shape_text(char *buf, size_t n, int ndim, const uint64_t *shape);
json_t *shape_json(int ndim, const uint64_t *shape);
/* The path of file name next to the manifest at mpath; caller frees. */
char *beside(const char *mpath, const char *name);
/* Load an ordinary checkpoint, or a distributed one (manifest) as one state. */
int load_any(const char *path, struct scar_state **out, struct scar_error *e);
/* s quoted for a terminal; caller frees. */
char *quoted(const char *s);
void print_json_quoted(const char *label, const json_t *j);
int has_suffix(const char *s, const char *suf);
/* Convert *tp to dtype (any to any through double), replacing it. */
void convert_tensor(struct scar_tensor **tp, enum scar_dtype dtype);
enum scar_dtype parse_dtype_opt(const char *s);
/* Write st to out (a path, '-', a FIFO or device): 0 or EXIT_TROUBLE, said. */
int save_state(const struct scar_state *st, const char *out,
	       const struct scar_ckpt_save_opts *so);

#endif
