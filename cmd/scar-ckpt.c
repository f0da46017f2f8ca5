/*
 * scar-ckpt - inspect, verify, convert, merge and extract scar checkpoints.
 *
 * A git-style front end over scar/ckpt.h: `scar-ckpt COMMAND [options]
 * [operands]`. Every command is one cmd_* function: parse options, call the
 * library, report. The getopt_long tables below are the one source of the
 * options; --help, scar-ckpt(1) and the completions follow them (a bats test
 * holds them to it).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

#ifndef MAP_POPULATE
#define MAP_POPULATE 0
#endif

enum {
	OPT_COMPRESS = 256, OPT_DTYPE, OPT_FORMAT, OPT_ITERATION, OPT_JSON, OPT_LEVEL,
	OPT_MODEL, OPT_NAME, OPT_NO_COMPRESS, OPT_NO_SYNC, OPT_ROLE, OPT_ROWS, OPT_SHAPE,
	OPT_SHARD, OPT_SHARDS, OPT_TENSOR,
};

/* ---- the option tables ---- */

static const struct option info_opts[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "json", no_argument, NULL, OPT_JSON },
	{ NULL, 0, NULL, 0 },
};

static const struct option verify_opts[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "quiet", no_argument, NULL, 'q' },
	{ NULL, 0, NULL, 0 },
};

static const struct option export_opts[] = {
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "help", no_argument, NULL, 'h' },
	{ "output", required_argument, NULL, 'o' },
	{ "rows", required_argument, NULL, OPT_ROWS },
	{ "shard", required_argument, NULL, OPT_SHARD },
	{ "tensor", required_argument, NULL, OPT_TENSOR },
	{ NULL, 0, NULL, 0 },
};

static const struct option import_opts[] = {
	{ "dtype", required_argument, NULL, OPT_DTYPE },
	{ "help", no_argument, NULL, 'h' },
	{ "iteration", required_argument, NULL, OPT_ITERATION },
	{ "model", required_argument, NULL, OPT_MODEL },
	{ "name", required_argument, NULL, OPT_NAME },
	{ "no-sync", no_argument, NULL, OPT_NO_SYNC },
	{ "output", required_argument, NULL, 'o' },
	{ "role", required_argument, NULL, OPT_ROLE },
	{ "shape", required_argument, NULL, OPT_SHAPE },
	{ "shards", required_argument, NULL, OPT_SHARDS },
	{ NULL, 0, NULL, 0 },
};

static const struct option apply_opts[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "no-sync", no_argument, NULL, OPT_NO_SYNC },
	{ "output", required_argument, NULL, 'o' },
	{ NULL, 0, NULL, 0 },
};

static const struct option convert_opts[] = {
	{ "compress", no_argument, NULL, OPT_COMPRESS },
	{ "dtype", required_argument, NULL, OPT_DTYPE },
	{ "help", no_argument, NULL, 'h' },
	{ "level", required_argument, NULL, OPT_LEVEL },
	{ "no-compress", no_argument, NULL, OPT_NO_COMPRESS },
	{ "no-sync", no_argument, NULL, OPT_NO_SYNC },
	{ "shards", required_argument, NULL, OPT_SHARDS },
	{ NULL, 0, NULL, 0 },
};

static const struct option ls_opts[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "json", no_argument, NULL, OPT_JSON },
	{ NULL, 0, NULL, 0 },
};

/* ---- commands and their help ---- */

static int cmd_apply(int argc, char **argv);
static int cmd_convert(int argc, char **argv);
static int cmd_export(int argc, char **argv);
static int cmd_import(int argc, char **argv);
static int cmd_info(int argc, char **argv);
static int cmd_ls(int argc, char **argv);
static int cmd_verify(int argc, char **argv);

static const struct cli_command commands[] = {
	{ "apply", cmd_apply,
	  "[--help] [--no-sync] [-o OUT] BASE [PARTIAL...]",
	  "Apply partial checkpoints, oldest first, onto a full base: the saved view.",
	  "  --help          show this help and exit\n"
	  "  --no-sync       do not fsync the output (faster, not crash-safe)\n"
	  "  -o, --output OUT  write the full checkpoint to OUT (default stdout)\n"
	  "A directory operand stands for all its checkpoints; when BASE is a\n"
	  "directory its oldest full checkpoint is the base.\n" },
	{ "convert", cmd_convert,
	  "[--compress | --no-compress] [--dtype f32|f64] [--help] [--level N]\n"
	  "                         [--no-sync] [--shards S] IN OUT",
	  "Rewrite a checkpoint: compression, float precision, shard count.",
	  "  --compress      LZ4-compress the sections (default)\n"
	  "  --dtype f32|f64 convert floating-point tensors to this type\n"
	  "  --help          show this help and exit\n"
	  "  --level N       LZ4 level: 1 fast (default), 2..12 LZ4HC\n"
	  "  --no-compress   store sections raw with a CRC-32C\n"
	  "  --no-sync       do not fsync the output (faster, not crash-safe)\n"
	  "  --shards S      split parameter rows into S shards\n"
	  "IN and OUT may be '-' for stdin and stdout, and may be the same file.\n" },
	{ "export", cmd_export,
	  "[--format raw|npy|json|safetensors] [--help] [-o OUT] [--rows A:B] [--shard N]\n"
	  "                        [--tensor NAME] [FILE | -]",
	  "Write a tensor's present rows as raw little-endian bytes, .npy or JSON.",
	  "  --format F      raw, npy, json or safetensors (default: from OUT's suffix, else raw)\n"
	  "  --help          show this help and exit\n"
	  "  -o, --output OUT  write to OUT (default stdout)\n"
	  "  --rows A:B      only rows A..B-1 (either end may be left out)\n"
	  "  --shard N       only the rows of shard N\n"
	  "  --tensor NAME   the tensor to export (needed when there are several)\n" },
	{ "import", cmd_import,
	  "[--dtype T --shape A,B,...] [--help] [--iteration N] [--model M]\n"
	  "                        [--name NAME] [--no-sync] [--role param|state] [--shards S]\n"
	  "                        -o OUT FILE...",
	  "Make a new checkpoint of raw or .npy arrays, one tensor per FILE.",
	  "  --dtype T       element type: f32 f64 i32 u32 i64 u64 u8 (raw input;\n"
	  "                  converts .npy input)\n"
	  "  --help          show this help and exit\n"
	  "  --iteration N   the checkpoint's iteration (default 0)\n"
	  "  --model M       the model name (default none; at most 127 bytes)\n"
	  "  --name NAME     tensor name (one FILE only; default FILE's base name;\n"
	  "                  at most 127 bytes of UTF-8)\n"
	  "  --no-sync       do not fsync the output (faster, not crash-safe)\n"
	  "  -o, --output OUT  the new checkpoint ('-' for stdout)\n"
	  "  --role R        param (default) or state\n"
	  "  --shape A,B,... the shape of raw input (a stream must hold exactly\n"
	  "                  its bytes: more or fewer is an error)\n"
	  "  --shards S      parameter shards (default 1)\n" },
	{ "info", cmd_info,
	  "[--help] [--json] [FILE | -]",
	  "Show metadata, the tensor table and per-section sizes.",
	  "  --help          show this help and exit\n"
	  "  --json          print one JSON object\n" },
	{ "ls", cmd_ls,
	  "[--help] [--json] DIR",
	  "List the checkpoints of a directory: iteration, kind, size, path.",
	  "  --help          show this help and exit\n"
	  "  --json          print one JSON object\n" },
	{ "verify", cmd_verify,
	  "[--help] [-q] [FILE... | -]",
	  "Check structure and every checksum; exit 0 intact, 1 damaged, 2 unreadable.",
	  "  --help          show this help and exit\n"
	  "  -q, --quiet     say nothing about intact files\n" },
};
/* ---- small helpers ---- */

/* Print a library error, naming path when the library did not. */
static void warn_err(const char *path, struct scar_error *e)
{
	if (!e->file[0] && path)
		snprintf(e->file, sizeof(e->file), "%s", path);
	if (e->code == SCAR_EIO && e->errno_value == EPIPE)
		exit(EXIT_TROUBLE);
	cli_warn_error(e);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		cli_die("out of memory (%zu bytes)", n);
	return p;
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		cli_die("out of memory (%zu bytes)", n);
	return p;
}

/* dir without trailing slashes (but "/" stays), so listings say "d/x.ckpt". */
static char *trim_dir(const char *dir)
{
	size_t n = strlen(dir);
	char *p;

	while (n > 1 && dir[n - 1] == '/')
		n--;
	p = xmalloc(n + 1);
	memcpy(p, dir, n);
	p[n] = 0;
	return p;
}

/* The input operand: "-" (stdin) when absent; stdin must not be a terminal. */
static const char *input_path(const char *operand)
{
	if (cli_is_stdio(operand)) {
		cli_refuse_tty_stdin();
		return "-";
	}
	return operand;
}

static double ratio(uint64_t raw, uint64_t stored)
{
	return stored ? (double)raw / (double)stored : 0.0;
}

static void json_put(json_t *o, const char *k, json_t *v)
{
	if (!v || json_object_set_new(o, k, v) != 0)
		cli_die("out of memory");
}

static void print_json(json_t *o)
{
	if (json_dumpf(o, stdout, JSON_COMPACT) != 0)
		cli_flush_stdout();
	putchar('\n');
}

static const char *kind_name(int partial)
{
	return partial ? "partial" : "full";
}

/* ---- output files: temporary file + rename, or stdout ---- */

/* Nonzero unless path exists and is not a regular file (a device, a FIFO). */
static int is_regular_target(const char *path)
{
	struct stat sb;

	return stat(path, &sb) != 0 || S_ISREG(sb.st_mode);
}

struct outfile {
	FILE *f;
	const char *path;
	char *tmp;
};

static void out_open(struct outfile *o, const char *path)
{
	struct scar_error e;
	int fd;

	o->path = path;
	o->tmp = NULL;
	if (cli_is_stdio(path)) {
		o->f = stdout;
		return;
	}
	if (!is_regular_target(path)) {
		/* /dev/null, a FIFO: write to it; renaming over it would be wrong. */
		o->f = fopen(path, "wb");
		if (!o->f)
			cli_die("cannot open '%s': %s", path, strerror(errno));
		return;
	}
	/* The library's temporary: the mode of the file replaced, removed on a signal. */
	scar_error_clear(&e);
	fd = scar_tmp_create(path, &o->tmp, &e);
	if (fd < 0)
		cli_die_error(&e);
	o->f = fdopen(fd, "wb");
	if (!o->f)
		cli_die("cannot open '%s': %s", path, strerror(errno));
}

/* fsync the directory holding path, so that a rename into it is durable. */
static int sync_dir(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir;
	int fd, rc = 0;

	if (slash == path)
		dir = strdup("/");
	else if (slash)
		dir = strndup(path, (size_t)(slash - path));
	else
		dir = strdup(".");
	if (!dir)
		cli_die("out of memory");
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	/* Some file systems cannot sync a directory (EINVAL); nothing to report. */
	if (fd >= 0 && fsync(fd) != 0 && errno != EINVAL && errno != EROFS) {
		cli_warn("cannot sync directory '%s': %s", dir, strerror(errno));
		rc = -1;
	}
	if (fd >= 0)
		close(fd);
	free(dir);
	return rc;
}

/* Finish: rename into place, or remove the temporary file when ok is 0. */
static int out_close(struct outfile *o, int ok)
{
	if (o->f == stdout) {
		cli_flush_stdout();
		return ok ? 0 : -1;
	}
	if (!o->tmp) {
		if (fclose(o->f) != 0 && ok) {
			cli_warn("cannot write '%s': %s", o->path, strerror(errno));
			ok = 0;
		}
		return ok ? 0 : -1;
	}
	if (fflush(o->f) != 0 || ferror(o->f)) {
		if (ok)
			cli_warn("cannot write '%s': %s", o->path, strerror(errno));
		ok = 0;
	}
	/* Data on disk before the name points at it, as scar_ckpt_save does. */
	if (ok && fsync(fileno(o->f)) != 0) {
		cli_warn("cannot sync '%s': %s", o->path, strerror(errno));
		ok = 0;
	}
	if (fclose(o->f) != 0 && ok) {
		cli_warn("cannot write '%s': %s", o->path, strerror(errno));
		ok = 0;
	}
	if (ok && rename(o->tmp, o->path) != 0) {
		cli_warn("cannot rename to '%s': %s", o->path, strerror(errno));
		ok = 0;
	}
	scar_tmp_done(o->tmp, !ok);
	if (ok)
		ok = sync_dir(o->path) == 0;
	return ok ? 0 : -1;
}

static void refuse_tty_out(const char *path)
{
	if (cli_is_stdio(path))
		cli_refuse_binary_tty();
}

/* ---- info ---- */

static void shape_text(char *buf, size_t n, int ndim, const uint64_t *shape)
{
	size_t used = 0;
	int i;

	buf[0] = 0;
	if (ndim == 0) {
		snprintf(buf, n, "scalar");
		return;
	}
	for (i = 0; i < ndim && used < n; i++)
		used += (size_t)snprintf(buf + used, n - used, "%s%llu", i ? "x" : "",
					 (unsigned long long)shape[i]);
}

static json_t *shape_json(int ndim, const uint64_t *shape)
{
	json_t *a = json_array();
	int i;

	for (i = 0; i < ndim; i++)
		json_array_append_new(a, json_integer((json_int_t)shape[i]));
	return a;
}


/* ---- distributed checkpoints: a manifest stands for its rank files ---- */

/* Nonzero when path names a distributed checkpoint's manifest. */
static int is_manifest(const char *path)
{
	size_t n = strlen(path);

	return n > 9 && strcmp(path + n - 9, ".manifest") == 0;
}

/* Nonzero when name is a rank file of a distributed checkpoint ("*.rank-R.ckpt"). */
static int is_rank_file(const char *name)
{
	const char *s = strrchr(name, '/');
	const char *r = strstr(s ? s + 1 : name, ".rank-");
	size_t n = strlen(name);

	return r && n > 5 && strcmp(name + n - 5, ".ckpt") == 0;
}

/* The path of file name next to the manifest at mpath; caller frees. */
static char *beside(const char *mpath, const char *name)
{
	const char *s = strrchr(mpath, '/');
	size_t d = s ? (size_t)(s - mpath) + 1 : 0;
	char *p = xmalloc(d + strlen(name) + 1);

	memcpy(p, mpath, d);
	strcpy(p + d, name);
	return p;
}

/* Load an ordinary checkpoint, or a distributed one (manifest) as one state. */
static int load_any(const char *path, struct scar_state **out, struct scar_error *e)
{
	if (strcmp(path, "-") != 0 && is_manifest(path))
		return scar_dist_manifest_load(path, out, e);
	return scar_ckpt_load(path, out, e);
}

static const char *kind_name(int partial);

/* s quoted for a terminal (scar/file.h) into a buffer that holds any name; caller frees. */
static char *quoted(const char *s)
{
	size_t n = scar_quote_text(NULL, 0, s);
	char *q = xmalloc(n + 1);

	scar_quote_text(q, n + 1, s);
	return q;
}

/* "label:      {json}", cut to 200 columns, quoted; "{}" when absent. */
static void print_json_quoted(const char *label, const json_t *j)
{
	char *text = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL, *q;

	/* jansson escapes C0 controls but passes C1 and other bytes through. */
	if (text && strlen(text) > 200)
		strcpy(text + 197, "...");
	q = quoted(text ? text : "{}");
	printf("%-11s %s\n", label, q);
	free(q);
	free(text);
}

/* info on a manifest: the combined state, and the rank files it is made of. */
static int info_manifest(const char *path, int json)
{
	struct scar_dist_manifest *m = NULL;
	struct scar_state *st = NULL;
	struct scar_error e;
	size_t i;

	scar_error_clear(&e);
	if (scar_dist_manifest_read(path, &m, &e) < 0 ||
	    scar_dist_manifest_load(path, &st, &e) < 0) {
		warn_err(path, &e);
		scar_dist_manifest_free(m);
		return EXIT_TROUBLE;
	}
	if (json) {
		json_t *o = json_object(), *ts = json_array(), *fs = json_array();

		if (!o || !ts || !fs)
			cli_die("out of memory");
		for (i = 0; i < st->ntensors; i++) {
			const struct scar_tensor *t = st->tensors[i];
			json_t *jt = json_object();

			json_put(jt, "name", scar_json_text(t->name));
			json_put(jt, "dtype", json_string(scar_dtype_name(t->dtype) ? scar_dtype_name(t->dtype) : "?"));
			json_put(jt, "role", json_string(scar_role_name(t->role) ? scar_role_name(t->role) : "?"));
			json_put(jt, "shape", shape_json(t->ndim, t->shape));
			json_put(jt, "rows", json_integer((json_int_t)scar_tensor_rows(t)));
			json_put(jt, "rows_present", json_integer((json_int_t)scar_tensor_rows_present(t)));
			json_array_append_new(ts, jt);
		}
		for (i = 0; i < m->nfiles; i++) {
			json_t *jf = json_object();
			char *fp = beside(path, m->files[i].name);

			json_put(jf, "rank", json_integer(m->files[i].rank));
			json_put(jf, "path", scar_json_text(fp));
			json_put(jf, "size", json_integer((json_int_t)m->files[i].size));
			json_put(jf, "crc32c", json_integer((json_int_t)m->files[i].crc32c));
			json_array_append_new(fs, jf);
			free(fp);
		}
		json_put(o, "file", scar_json_text(path));
		json_put(o, "distributed", json_true());
		json_put(o, "model", scar_json_text(st->model));
		json_put(o, "iteration", json_integer((json_int_t)st->iteration));
		json_put(o, "clock", json_integer((json_int_t)m->clock));
		json_put(o, "kind", scar_json_text(kind_name(m->partial)));
		json_put(o, "shards", json_integer(st->shards));
		json_put(o, "ranks", json_integer(m->ranks));
		json_put(o, "config", st->config ? json_deep_copy(st->config) : json_object());
		json_put(o, "extra", st->extra ? json_deep_copy(st->extra) : json_object());
		json_put(o, "tensors", ts);
		json_put(o, "files", fs);
		print_json(o);
		json_decref(o);
	} else {
		char shape[160], **qn = xmalloc((st->ntensors ? st->ntensors : 1) * sizeof(*qn)), *q;
		int w = 6;

		for (i = 0; i < st->ntensors; i++) {
			qn[i] = quoted(st->tensors[i]->name);
			if ((int)strlen(qn[i]) > w)
				w = (int)strlen(qn[i]);
		}
		q = quoted(path);
		printf("file:       %s\n", q);
		free(q);
		printf("format:     distributed (manifest of %zu rank files)\n", m->nfiles);
		q = quoted(st->model[0] ? st->model : "-");
		printf("model:      %s\n", q);
		free(q);
		printf("iteration:  %llu\n", (unsigned long long)st->iteration);
		printf("kind:       %s\n", kind_name(m->partial));
		printf("shards:     %u\n", st->shards);
		printf("ranks:      %u\n", m->ranks);
		print_json_quoted("config:", st->config);
		printf("tensors:    %zu\n\n", st->ntensors);
		printf("%-*s  %-5s  %-5s  %-16s  %13s\n", w, "tensor", "dtype", "role", "shape",
		       "present/rows");
		for (i = 0; i < st->ntensors; i++) {
			const struct scar_tensor *t = st->tensors[i];
			char pr[48];

			shape_text(shape, sizeof(shape), t->ndim, t->shape);
			snprintf(pr, sizeof(pr), "%llu/%llu",
				 (unsigned long long)scar_tensor_rows_present(t),
				 (unsigned long long)scar_tensor_rows(t));
			printf("%-*s  %-5s  %-5s  %-16s  %13s\n", w, qn[i],
			       scar_dtype_name(t->dtype) ? scar_dtype_name(t->dtype) : "?",
			       scar_role_name(t->role) ? scar_role_name(t->role) : "?", shape, pr);
			free(qn[i]);
		}
		free(qn);
		printf("\n%4s  %12s  %10s  %s\n", "rank", "bytes", "crc32c", "file");
		for (i = 0; i < m->nfiles; i++) {
			char *fp = beside(path, m->files[i].name);

			q = quoted(fp);
			printf("%4u  %12llu  %10lu  %s\n", m->files[i].rank,
			       (unsigned long long)m->files[i].size,
			       (unsigned long)m->files[i].crc32c, q);
			free(q);
			free(fp);
		}
	}
	scar_state_free(st);
	scar_dist_manifest_free(m);
	return 0;
}

/* verify on a manifest: complete (sizes, CRCs), then every rank file in full. */
static int verify_manifest(const char *path, struct scar_error *e)
{
	struct scar_dist_manifest *m = NULL;
	size_t i;
	int rc;

	rc = scar_dist_manifest_read(path, &m, e);
	if (rc < 0)
		return rc;
	rc = scar_dist_manifest_verify(path, m, e);
	/* A rank file that is missing leaves the checkpoint incomplete: damage, not trouble. */
	if (rc == SCAR_ENOTFOUND || (rc < 0 && e->code == SCAR_ENOTFOUND)) {
		e->code = SCAR_ECORRUPT;
		rc = SCAR_ECORRUPT;
	}
	for (i = 0; rc >= 0 && i < m->nfiles; i++) {
		char *fp = beside(path, m->files[i].name);

		rc = scar_ckpt_verify(fp, e);
		if (rc < 0 && !e->file[0])
			snprintf(e->file, sizeof(e->file), "%s", fp);
		free(fp);
	}
	scar_dist_manifest_free(m);
	return rc < 0 ? rc : 0;
}


/*
 * The human-readable description. Names come from the file: each is
 * quoted (a tensor called "\e[2J" must not clear the screen, nor one
 * holding "\n" forge a line); --json prints them exactly.
 */
static void info_text(const char *path, const struct scar_ckpt_info *in,
		      const struct scar_ckpt_section_info *secs, size_t nsec,
		      const uint64_t *traw, const uint64_t *tstored, uint64_t file_bytes)
{
	const json_t *extra = json_object_get(in->meta, "extra");
	uint64_t raw = 0, stored = 0;
	char shape[160], **qn = xmalloc((in->ntensors + 1) * sizeof(*qn)), *qp, *qm;
	int w = 6;
	size_t i;

	for (i = 0; i < in->ntensors; i++) {
		int l;

		qn[i] = quoted(in->tensors[i].name);
		l = (int)strlen(qn[i]);
		raw += traw[i];
		stored += tstored[i];
		if (l > w)
			w = l;
	}
	qp = quoted(path);
	qm = quoted(in->model[0] ? in->model : "-");
	printf("file:       %s\n", qp);
	printf("version:    %d.%d\n", in->version, in->minor);
	printf("model:      %s\n", qm);
	printf("iteration:  %llu\n", (unsigned long long)in->iteration);
	printf("kind:       %s\n", kind_name(in->partial));
	printf("shards:     %u\n", in->shards);
	print_json_quoted("config:", in->config);
	if (extra && json_object_size(extra))
		print_json_quoted("extra:", extra);
	printf("tensors:    %zu\n", in->ntensors);
	printf("sections:   %zu\n", nsec);
	printf("bytes:      %llu in file, %llu raw, %llu stored (ratio %.2f)\n\n",
	       (unsigned long long)file_bytes, (unsigned long long)raw,
	       (unsigned long long)stored, ratio(raw, stored));

	printf("%-*s  %-5s  %-5s  %-16s  %13s  %6s  %12s  %12s  %5s\n", w, "tensor", "dtype",
	       "role", "shape", "present/rows", "shards", "raw", "stored", "ratio");
	for (i = 0; i < in->ntensors; i++) {
		const struct scar_ckpt_tensor_info *t = &in->tensors[i];
		char pr[48];

		shape_text(shape, sizeof(shape), t->ndim, t->shape);
		snprintf(pr, sizeof(pr), "%llu/%llu", (unsigned long long)t->rows_present,
			 (unsigned long long)t->rows);
		printf("%-*s  %-5s  %-5s  %-16s  %13s  %6u  %12llu  %12llu  %5.2f\n", w, qn[i],
		       scar_dtype_name(t->dtype) ? scar_dtype_name(t->dtype) : "?",
		       scar_role_name(t->role) ? scar_role_name(t->role) : "?", shape, pr,
		       t->shards, (unsigned long long)traw[i], (unsigned long long)tstored[i],
		       ratio(traw[i], tstored[i]));
	}
	if (nsec)
		printf("\n%7s  %-*s  %5s  %10s  %12s  %12s  %12s  %5s  %s\n", "section", w, "tensor",
		       "shard", "rows", "offset", "raw", "stored", "ratio", "codec");
	for (i = 0; i < nsec; i++) {
		const struct scar_ckpt_section_info *s = &secs[i];
		const char *name = s->tensor < in->ntensors ? qn[s->tensor] : "?";

		printf("%7zu  %-*s  %5u  %10llu  %12llu  %12llu  %12llu  %5.2f  %s\n", i, w, name,
		       s->shard, (unsigned long long)s->nrows, (unsigned long long)s->offset,
		       (unsigned long long)s->raw_len, (unsigned long long)s->stored_len,
		       ratio(s->raw_len, s->stored_len), s->compressed ? "lz4" : "raw");
	}
	for (i = 0; i < in->ntensors; i++)
		free(qn[i]);
	free(qn);
	free(qp);
	free(qm);
}

static void info_json(const char *path, const struct scar_ckpt_info *in,
		      const struct scar_ckpt_section_info *secs, size_t nsec,
		      const uint64_t *traw, const uint64_t *tstored, uint64_t file_bytes)
{
	json_t *o = json_object(), *ts = json_array(), *ss = json_array();
	const json_t *extra = json_object_get(in->meta, "extra");
	uint64_t raw = 0, stored = 0;
	size_t i;

	if (!o || !ts || !ss)
		cli_die("out of memory");
	for (i = 0; i < in->ntensors; i++) {
		const struct scar_ckpt_tensor_info *t = &in->tensors[i];
		json_t *jt = json_object();

		raw += traw[i];
		stored += tstored[i];
		json_put(jt, "name", scar_json_text(t->name));
		json_put(jt, "dtype", json_string(scar_dtype_name(t->dtype) ? scar_dtype_name(t->dtype) : "?"));
		json_put(jt, "role", json_string(scar_role_name(t->role) ? scar_role_name(t->role) : "?"));
		json_put(jt, "shape", shape_json(t->ndim, t->shape));
		json_put(jt, "rows", json_integer((json_int_t)t->rows));
		json_put(jt, "rows_present", json_integer((json_int_t)t->rows_present));
		json_put(jt, "shards", json_integer(t->shards));
		json_put(jt, "raw_bytes", json_integer((json_int_t)traw[i]));
		json_put(jt, "stored_bytes", json_integer((json_int_t)tstored[i]));
		json_array_append_new(ts, jt);
	}
	for (i = 0; i < nsec; i++) {
		const struct scar_ckpt_section_info *s = &secs[i];
		json_t *js = json_object();

		json_put(js, "section", json_integer((json_int_t)i));
		json_put(js, "tensor", scar_json_text(s->tensor < in->ntensors ?
						   in->tensors[s->tensor].name : "?"));
		json_put(js, "shard", json_integer(s->shard));
		json_put(js, "rows", json_integer((json_int_t)s->nrows));
		json_put(js, "offset", json_integer((json_int_t)s->offset));
		json_put(js, "raw_bytes", json_integer((json_int_t)s->raw_len));
		json_put(js, "stored_bytes", json_integer((json_int_t)s->stored_len));
		json_put(js, "compressed", json_boolean(s->compressed));
		json_array_append_new(ss, js);
	}
	json_put(o, "file", scar_json_text(path));
	json_put(o, "version", json_integer(in->version));
	json_put(o, "minor_version", json_integer(in->minor));
	json_put(o, "model", scar_json_text(in->model));
	json_put(o, "iteration", json_integer((json_int_t)in->iteration));
	json_put(o, "kind", scar_json_text(kind_name(in->partial)));
	json_put(o, "shards", json_integer(in->shards));
	json_put(o, "config", in->config ? json_deep_copy(in->config) : json_object());
	json_put(o, "extra", extra ? json_deep_copy(extra) : json_object());
	json_put(o, "file_bytes", json_integer((json_int_t)file_bytes));
	json_put(o, "raw_bytes", json_integer((json_int_t)raw));
	json_put(o, "stored_bytes", json_integer((json_int_t)stored));
	json_put(o, "tensors", ts);
	json_put(o, "sections", ss);
	print_json(o);
	json_decref(o);
}

static int cmd_info(int argc, char **argv)
{
	struct scar_ckpt_section_info *secs = NULL;
	const struct scar_ckpt_info *in;
	struct scar_ckpt_reader *r = NULL;
	struct scar_ckpt_section sec;
	struct scar_error e;
	uint64_t *traw = NULL, *tstored = NULL, file_bytes;
	size_t nsec = 0, cap = 0, i;
	const char *path;
	int json = 0, c, rc, status = 0, seekable;
	struct stat sb;

	while ((c = cli_command_getopt(argc, argv, ":h", info_opts)) != -1)
		if (c == OPT_JSON)
			json = 1;
	if (argc - optind > 1)
		cli_usage_error("too many operands");
	path = input_path(argv[optind]);
	if (strcmp(path, "-") != 0 && is_manifest(path))
		return info_manifest(path, json);

	/*
	 * info reports only what it has checked. A regular file is verified
	 * first (streaming, nothing kept) and then described from its index;
	 * a pipe is decoded section by section as it comes.
	 */
	seekable = strcmp(path, "-") != 0 && stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
	scar_error_clear(&e);
	if (seekable && scar_ckpt_verify(path, &e) < 0) {
		warn_err(path, &e);
		return EXIT_TROUBLE;
	}
	rc = scar_ckpt_reader_open(&r, path, &e);
	if (rc < 0) {
		warn_err(path, &e);
		return EXIT_TROUBLE;
	}
	in = scar_ckpt_reader_info(r);
	traw = calloc(in->ntensors + 1, sizeof(*traw));
	tstored = calloc(in->ntensors + 1, sizeof(*tstored));
	if (!traw || !tstored)
		cli_die("out of memory");
	if (seekable) {
		const struct scar_ckpt_section_info *idx;

		rc = scar_ckpt_reader_index(r, &idx, &e);
		if (rc >= 0) {
			nsec = (size_t)rc;
			secs = xmalloc(nsec * sizeof(*secs));
			memcpy(secs, idx, nsec * sizeof(*secs));
		}
		file_bytes = (uint64_t)sb.st_size;
	} else {
		while ((rc = scar_ckpt_reader_next(r, &sec, &e)) == 1) {
			if (nsec == cap) {
				cap = cap ? 2 * cap : 64;
				secs = xrealloc(secs, cap * sizeof(*secs));
			}
			secs[nsec++] = sec.info;
		}
		file_bytes = scar_ckpt_reader_offset(r);
	}
	for (i = 0; i < nsec; i++) {
		if (secs[i].tensor < in->ntensors) {
			traw[secs[i].tensor] += secs[i].raw_len;
			tstored[secs[i].tensor] += secs[i].stored_len;
		}
	}
	if (rc < 0) {
		warn_err(path, &e);
		status = EXIT_TROUBLE;
	} else if (json) {
		info_json(path, in, secs, nsec, traw, tstored, file_bytes);
	} else {
		info_text(path, in, secs, nsec, traw, tstored, file_bytes);
	}
	scar_ckpt_reader_close(r);
	free(secs);
	free(traw);
	free(tstored);
	return status;
}

/* ---- verify ---- */

static int cmd_verify(int argc, char **argv)
{
	int quiet = 0, c, status = 0, i;

	while ((c = cli_command_getopt(argc, argv, ":hq", verify_opts)) != -1)
		if (c == 'q')
			quiet = 1;
	for (i = optind; i < argc || i == optind; i++) {
		const char *path = input_path(i < argc ? argv[i] : NULL);
		struct scar_error e;
		int rc;

		scar_error_clear(&e);
		if (strcmp(path, "-") != 0 && is_manifest(path))
			rc = verify_manifest(path, &e);
		else
			rc = scar_ckpt_verify(path, &e);
		if (rc == 0) {
			if (!quiet) {
				/* A file named "a\nb.ckpt: ok" must not forge a second line. */
				scar_fputs_quoted(path, stdout);
				fputs(": ok\n", stdout);
			}
			continue;
		}
		warn_err(path, &e);
		if (scar_error_is_damage(rc)) {
			if (status < EXIT_NO)
				status = EXIT_NO;
		} else {
			status = EXIT_TROUBLE;
		}
		if (i >= argc)
			break;
	}
	return status;
}

/* ---- export ---- */

enum format { FMT_NONE, FMT_RAW, FMT_NPY, FMT_JSON, FMT_SAFETENSORS };

static enum format parse_format(const char *s)
{
	if (strcmp(s, "raw") == 0)
		return FMT_RAW;
	if (strcmp(s, "npy") == 0)
		return FMT_NPY;
	if (strcmp(s, "json") == 0)
		return FMT_JSON;
	if (strcmp(s, "safetensors") == 0)
		return FMT_SAFETENSORS;
	cli_usage_error("option '--format': '%s' is not raw, npy, json or safetensors", s);
}

static int has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);

	return n >= m && strcmp(s + n - m, suf) == 0;
}

static const char *npy_descr(enum scar_dtype t)
{
	switch (t) {
	case SCAR_F32: return "<f4";
	case SCAR_F64: return "<f8";
	case SCAR_I32: return "<i4";
	case SCAR_U32: return "<u4";
	case SCAR_I64: return "<i8";
	case SCAR_U64: return "<u8";
	case SCAR_U8: return "|u1";
	}
	return NULL;
}

/* NPY format 1.0: magic, version, u16 header length, a padded Python dict. */
static void npy_header(FILE *f, enum scar_dtype t, int ndim, const uint64_t *shape)
{
	char dict[512];
	size_t n, total;
	int i;

	n = (size_t)snprintf(dict, sizeof(dict), "{'descr': '%s', 'fortran_order': False, 'shape': (",
			     npy_descr(t));
	/* Python's tuple repr: (3,) for one dimension, (3, 4) for more. */
	for (i = 0; i < ndim; i++)
		n += (size_t)snprintf(dict + n, sizeof(dict) - n, "%s%llu%s", i ? ", " : "",
				      (unsigned long long)shape[i], ndim == 1 ? "," : "");
	n += (size_t)snprintf(dict + n, sizeof(dict) - n, "), }");
	total = (10 + n + 1 + 63) / 64 * 64;
	while (10 + n + 1 < total)
		dict[n++] = ' ';
	dict[n++] = '\n';
	fwrite("\x93NUMPY\x01\x00", 1, 8, f);
	fputc((int)(n & 0xff), f);
	fputc((int)(n >> 8), f);
	fwrite(dict, 1, n, f);
}

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
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Copy the selected rows of one decoded section into their places in out. */
static void place_rows(const struct scar_ckpt_section *sec, const uint64_t *sel, uint64_t nsel,
		       unsigned char *out, size_t rb, uint64_t *placed)
{
	const unsigned char *src = sec->data;
	uint64_t i;

	for (i = 0; i < sec->info.nrows; i++) {
		const uint64_t *hit = bsearch(&sec->rows[i], sel, nsel, sizeof(*sel), cmp_u64);

		if (hit) {
			/* A zero-width row has no bytes; its section's data may be NULL. */
			if (rb)
				memcpy(out + (size_t)(hit - sel) * rb, src + i * rb, rb);
			(*placed)++;
		}
	}
}

static int cmd_export(int argc, char **argv)
{
	const char *out_path = NULL, *tname = NULL, *path;
	const struct scar_ckpt_tensor_info *t = NULL;
	const struct scar_ckpt_info *in;
	struct scar_ckpt_reader *r = NULL;
	struct scar_ckpt_section sec;
	struct scar_error e;
	enum format fmt = FMT_NONE;
	uint64_t a = 0, b = UINT64_MAX, shard = UINT64_MAX, nsel = 0, placed = 0, i;
	int asked;
	uint64_t *sel = NULL, shape[SCAR_MAX_DIMS];
	unsigned char *buf = NULL;
	struct outfile o;
	size_t k, rb, elem;
	int c, rc, status = EXIT_TROUBLE, ndim;
	uint32_t tk = 0, S;

	while ((c = cli_command_getopt(argc, argv, ":ho:", export_opts)) != -1) {
		switch (c) {
		case OPT_FORMAT: fmt = parse_format(optarg); break;
		case 'o': out_path = optarg; break;
		case OPT_ROWS: cli_parse_rows("--rows", optarg, &a, &b); break;
		case OPT_SHARD: shard = cli_parse_shard("--shard", optarg); break;
		case OPT_TENSOR: tname = optarg; break;
		}
	}
	if (argc - optind > 1)
		cli_usage_error("too many operands");
	if (fmt == FMT_NONE)
		fmt = out_path && has_suffix(out_path, ".safetensors") ? FMT_SAFETENSORS :
		      out_path && has_suffix(out_path, ".npy") ? FMT_NPY :
		      out_path && has_suffix(out_path, ".json") ? FMT_JSON : FMT_RAW;
	if (fmt != FMT_JSON)
		refuse_tty_out(out_path);
	path = input_path(argv[optind]);

	scar_error_clear(&e);
	if (scar_ckpt_reader_open(&r, path, &e) < 0) {
		warn_err(path, &e);
		return EXIT_TROUBLE;
	}
	in = scar_ckpt_reader_info(r);
	for (k = 0; k < in->ntensors; k++)
		if (tname ? strcmp(in->tensors[k].name, tname) == 0 : in->ntensors == 1)
			break;
	if (k == in->ntensors) {
		if (tname)
			cli_warn("no tensor '%s' in '%s'", tname, path);
		else
			cli_warn("'%s' has %zu tensors: choose one with --tensor", path, in->ntensors);
		goto out;
	}
	t = &in->tensors[k];
	tk = (uint32_t)k;
	S = t->role == SCAR_ROLE_PARAM ? in->shards : 1;
	{
		/* The selection checks scar-inject makes, in the same place. */
		struct scar_select sl;

		scar_select_init(&sl);
		sl.shard = shard == UINT64_MAX ? -1 : (int64_t)shard;
		sl.row_lo = a;
		sl.row_hi = b;
		/* A tensor of 0 rows exports as an empty array unless rows are asked for. */
		if ((t->rows || a || b != UINT64_MAX || shard != UINT64_MAX) &&
		    scar_select_check_rows(t->name, t->rows, S, &sl, &e) < 0) {
			cli_warn("%s in '%s'", e.msg, path);
			goto out;
		}
	}
	asked = a || b != UINT64_MAX || shard != UINT64_MAX;
	if (b == UINT64_MAX)
		b = t->rows;

	/* The selected rows: present, in [a, b), in the shard; ascending. */
	for (k = 0; k < t->nranges; k++) {
		uint64_t lo = t->ranges[k][0], hi = lo + t->ranges[k][1];

		lo = lo > a ? lo : a;
		hi = hi < b ? hi : b;
		if (lo < hi)
			nsel += hi - lo;
	}
	sel = xmalloc((size_t)nsel * sizeof(*sel));
	nsel = 0;
	for (k = 0; k < t->nranges; k++) {
		uint64_t lo = t->ranges[k][0], hi = lo + t->ranges[k][1];

		lo = lo > a ? lo : a;
		hi = hi < b ? hi : b;
		for (i = lo; i < hi; i++)
			if (shard == UINT64_MAX || scar_shard_of_row(i, S) == shard)
				sel[nsel++] = i;
	}
	/* Rows asked for that this partial checkpoint lacks: an error, not "[]". */
	if (!nsel && asked && a < b) {
		cli_warn("no selected row of tensor '%s' is present in '%s' (a partial checkpoint "
			 "holding %llu of its %llu rows)", t->name, path,
			 (unsigned long long)t->rows_present,
			 (unsigned long long)t->rows);
		goto out;
	}
	elem = scar_dtype_size(t->dtype);
	rb = elem;
	for (k = 1; k < (size_t)t->ndim; k++)
		rb *= (size_t)t->shape[k];
	if (rb && nsel > SIZE_MAX / rb)
		cli_die("out of memory");
	buf = xmalloc((size_t)nsel * rb);

	if (nsel) {
		const struct scar_ckpt_section_info *idx;
		int n = scar_ckpt_reader_index(r, &idx, &e);

		if (n >= 0) {
			/* Seekable: decode only this tensor's sections. */
			for (k = 0; k < S; k++) {
				if (shard != UINT64_MAX && k != shard)
					continue;
				rc = scar_ckpt_reader_section(r, tk, (uint32_t)k, &sec, &e);
				if (rc == SCAR_ENOTFOUND)
					continue;
				if (rc < 0) {
					warn_err(path, &e);
					goto out;
				}
				place_rows(&sec, sel, nsel, buf, rb, &placed);
			}
		} else if (n == SCAR_EUNSUPPORTED) {
			scar_error_clear(&e);
			while ((rc = scar_ckpt_reader_next(r, &sec, &e)) == 1)
				if (sec.info.tensor == tk)
					place_rows(&sec, sel, nsel, buf, rb, &placed);
			if (rc < 0) {
				warn_err(path, &e);
				goto out;
			}
		} else {
			warn_err(path, &e);
			goto out;
		}
		if (placed != nsel) {
			cli_warn("'%s': tensor '%s': %llu of %llu rows missing from its sections",
				 path, t->name, (unsigned long long)(nsel - placed),
				 (unsigned long long)nsel);
			goto out;
		}
	}

	/* The exported array: nsel rows of the tensor's row shape (a scalar stays one). */
	ndim = t->ndim;
	memcpy(shape, t->shape, sizeof(shape));
	if (ndim == 0 && nsel != 1) {
		ndim = 1;
		shape[0] = nsel;
	} else if (ndim > 0) {
		shape[0] = nsel;
	}
	out_open(&o, out_path);
	if (fmt == FMT_NPY)
		npy_header(o.f, t->dtype, ndim, shape);
	if (fmt == FMT_RAW || fmt == FMT_NPY) {
		fwrite(buf, 1, (size_t)nsel * rb, o.f);
	} else if (fmt == FMT_SAFETENSORS) {
		/* One tensor, borrowed: a state on the stack around the exported rows. */
		struct scar_tensor view, *vp = &view;
		struct scar_state one;
		struct scar_error se;
		char st_name[SCAR_NAME_MAX];

		memset(&one, 0, sizeof(one));
		memset(&view, 0, sizeof(view));
		snprintf(st_name, sizeof(st_name), "%s", t->name);
		view.name = st_name;
		view.dtype = t->dtype;
		view.role = t->role;
		view.ndim = ndim;
		memcpy(view.shape, shape, sizeof(view.shape));
		view.data = buf;
		view.present = NULL;
		one.ntensors = 1;
		one.tensors = &vp;
		one.shards = 1;
		scar_error_clear(&se);
		fflush(o.f);
		if (scar_safetensors_write_fd(fileno(o.f), cli_is_stdio(out_path) ? "(stdout)" : out_path,
					      &one, 0, NULL, &se) < 0) {
			warn_err(cli_is_stdio(out_path) ? "(stdout)" : out_path, &se);
			out_close(&o, 0);
			goto out;
		}
	} else {
		json_t *js = scar_json_text(t->name);
		int d;

		fputs("{\"tensor\":", o.f);
		json_dumpf(js, o.f, JSON_ENCODE_ANY);
		json_decref(js);
		fprintf(o.f, ",\"dtype\":\"%s\",\"shape\":[", scar_dtype_name(t->dtype));
		for (d = 0; d < ndim; d++)
			fprintf(o.f, "%s%llu", d ? "," : "", (unsigned long long)shape[d]);
		fputs("],\"rows\":[", o.f);
		for (i = 0; i < nsel; i++)
			fprintf(o.f, "%s%llu", i ? "," : "", (unsigned long long)sel[i]);
		fputs("],\"data\":[", o.f);
		for (i = 0; i < nsel; i++) {
			size_t j;

			fputs(i ? ",[" : "[", o.f);
			for (j = 0; j < rb / (elem ? elem : 1); j++) {
				if (j)
					fputc(',', o.f);
				json_value(o.f, t->dtype, buf + i * rb + j * elem);
			}
			fputc(']', o.f);
		}
		fputs("]}\n", o.f);
	}
	status = out_close(&o, 1) == 0 ? 0 : EXIT_TROUBLE;
out:
	scar_ckpt_reader_close(r);
	free(sel);
	free(buf);
	return status;
}

/* ---- import ---- */

/* Up to n bytes from fd: the count (short only at the end of input), or -errno. */
static ssize_t read_upto(int fd, void *buf, size_t n)
{
	unsigned char *p = buf;
	size_t got = 0;

	while (got < n) {
		ssize_t k = read(fd, p + got, n - got > (1u << 30) ? (1u << 30) : n - got);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			break;
		got += (size_t)k;
	}
	return (ssize_t)got;
}

/* n bytes from fd: 1 all of them, 0 end of file first, -errno a read error. */
static int read_full(int fd, void *buf, size_t n)
{
	ssize_t k = read_upto(fd, buf, n);

	return k < 0 ? (int)k : k == (ssize_t)n;
}

static void parse_shape(const char *s, int *ndim, uint64_t *shape)
{
	char buf[256], *tok, *save = NULL;

	if (strlen(s) >= sizeof(buf))
		cli_usage_error("option '--shape': '%s' is too long", s);
	strcpy(buf, s);
	*ndim = 0;
	if (strcmp(s, "scalar") == 0)
		return;
	cli_check_list("--shape", s, ",x");
	for (tok = strtok_r(buf, ",x", &save); tok; tok = strtok_r(NULL, ",x", &save)) {
		if (*ndim == SCAR_MAX_DIMS)
			cli_usage_error("option '--shape': more than %d dimensions", SCAR_MAX_DIMS);
		shape[(*ndim)++] = cli_parse_u64("--shape", tok, 0, UINT64_MAX >> 1);
	}
	if (*ndim == 0)
		cli_usage_error("option '--shape': '%s' has no dimensions", s);
}

/* Parse an NPY header dict; fills dtype, ndim, shape and byte-swap need. Returns 0 or -1. */
static int npy_parse_dict(const char *d, enum scar_dtype *t, int *swap, int *ndim,
			  uint64_t *shape, const char **why)
{
	static const struct { char kind; int size; enum scar_dtype t; } map[] = {
		{ 'f', 4, SCAR_F32 }, { 'f', 8, SCAR_F64 }, { 'i', 4, SCAR_I32 },
		{ 'u', 4, SCAR_U32 }, { 'i', 8, SCAR_I64 }, { 'u', 8, SCAR_U64 },
		{ 'u', 1, SCAR_U8 },
	};
	const char *p, *q;
	size_t i;

	*why = "no 'descr'";
	p = strstr(d, "'descr'");
	if (!p || !(p = strchr(p + 7, '\'')))
		return -1;
	p++;
	*why = "unsupported dtype";
	if (!(*p == '<' || *p == '>' || *p == '|' || *p == '=') || !p[1] || !p[2])
		return -1;
	*swap = *p == '>';
	*t = 0;
	for (i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (p[1] == map[i].kind && p[2] == '0' + map[i].size && p[3] == '\'')
			*t = map[i].t;
	if (!*t)
		return -1;
	if (scar_dtype_size(*t) == 1)
		*swap = 0;
	*why = "Fortran order is not supported";
	p = strstr(d, "'fortran_order'");
	if (!p || !strstr(p, "False") || (strstr(p, "True") && strstr(p, "True") < strstr(p, "False")))
		return -1;
	*why = "no 'shape'";
	p = strstr(d, "'shape'");
	if (!p || !(p = strchr(p, '(')) || !(q = strchr(p, ')')))
		return -1;
	*ndim = 0;
	for (p++; p < q;) {
		char *end;
		unsigned long long v;

		while (p < q && (*p == ' ' || *p == ','))
			p++;
		if (p >= q)
			break;
		*why = "bad 'shape'";
		if (*ndim == SCAR_MAX_DIMS || *p < '0' || *p > '9')
			return -1;
		errno = 0;
		v = strtoull(p, &end, 10);
		if (errno || end > q)
			return -1;
		shape[(*ndim)++] = v;
		p = end;
	}
	return 0;
}

static void bswap_data(void *data, size_t n, size_t size)
{
	unsigned char *p = data;
	size_t i, j;

	for (i = 0; i < n; i++, p += size)
		for (j = 0; j < size / 2; j++) {
			unsigned char x = p[j];
			p[j] = p[size - 1 - j];
			p[size - 1 - j] = x;
		}
}

static uint64_t elems_of(int ndim, const uint64_t *shape)
{
	uint64_t n = 1;
	int i;

	for (i = 0; i < ndim; i++) {
		if (shape[i] && n > UINT64_MAX / shape[i])
			return UINT64_MAX;
		n *= shape[i];
	}
	return n;
}

struct import_opts {
	enum scar_dtype dtype;
	int ndim;		/* -1 when --shape was not given */
	uint64_t shape[SCAR_MAX_DIMS];
	enum scar_role role;
};

/* Convert t to dtype (any to any through double), replacing *tp. */
static void convert_tensor(struct scar_tensor **tp, enum scar_dtype dtype)
{
	struct scar_tensor *t = *tp, *n;
	struct scar_error e;
	uint64_t i, count = scar_tensor_elems(t);

	scar_error_clear(&e);
	if (scar_tensor_new(&n, t->name, dtype, t->role, t->ndim, t->shape, &e) < 0)
		cli_die_error(&e);
	if (t->dtype == SCAR_F32 && dtype == SCAR_F64) {
		const float *s = t->data;
		double *d = n->data;
		for (i = 0; i < count; i++)
			d[i] = s[i];
	} else if (t->dtype == SCAR_F64 && dtype == SCAR_F32) {
		const double *s = t->data;
		float *d = n->data;
		for (i = 0; i < count; i++)
			d[i] = (float)s[i];
	} else {
		for (i = 0; i < count; i++)
			scar_tensor_set(n, i, scar_tensor_get(t, i));
	}
	if (t->present) {
		if (scar_tensor_init_present(n, 0, &e) < 0)
			cli_die_error(&e);
		memcpy(n->present, t->present, (size_t)scar_tensor_rows(t));
	}
	scar_tensor_free(t);
	*tp = n;
}

/*
 * A tensor whose data points into a read-only mapping of its input file
 * while the checkpoint is written: no copy, and none of the page faults of
 * filling fresh memory. unmap_tensor puts the tensor's own buffer back.
 */
struct mapping {
	struct scar_tensor *t;
	void *own, *map;
	size_t len;
};

static void unmap_tensor(struct mapping *m)
{
	if (!m->map)
		return;
	m->t->data = m->own;
	munmap(m->map, m->len);
	m->map = NULL;
}

/*
 * One array from path: .npy (its header gives dtype and shape) or raw bytes
 * (--dtype and --shape). A regular file must hold exactly the bytes the
 * shape makes, by its size. A stream (stdin, a pipe, a device) is read up
 * to exactly those bytes and no further: more input is refused, not read,
 * so /dev/zero cannot run the tool out of memory.
 */
static struct scar_tensor *import_file(const char *path, const char *name,
				       const struct import_opts *io, struct mapping *m)
{
	const char *why = NULL, *declared;
	unsigned char head[10];
	enum scar_dtype dtype = io->dtype;
	uint64_t shape[SCAR_MAX_DIMS], n_el, want;
	struct scar_tensor *t = NULL;
	struct scar_error e;
	size_t hlen = 0, bytes, off = 0, pre = 0;
	int fd, is_reg, npy = 0, swap = 0, ndim = io->ndim, rc = 0, stdin_in = strcmp(path, "-") == 0;
	ssize_t k;
	struct stat st;
	char *dict = NULL;
	uint64_t fsize = 0;

	scar_error_clear(&e);
	/* Never waits on a FIFO without a writer: that reads as empty input. */
	fd = stdin_in ? STDIN_FILENO : scar_open_input(path, 0, &e);
	if (fd < 0) {
		warn_err(path, &e);
		return NULL;
	}
	if (fstat(fd, &st) < 0) {
		cli_warn("cannot read '%s': %s", path, strerror(errno));
		goto fail;
	}
	if (S_ISDIR(st.st_mode)) {
		cli_warn("cannot read '%s': %s", path, strerror(EISDIR));
		goto fail;
	}
	is_reg = S_ISREG(st.st_mode);
	fsize = (uint64_t)st.st_size;
	memcpy(shape, io->shape, sizeof(shape));
	/* An .npy file starts with "\x93NUMPY"; anything else is raw. */
	if (!is_reg || fsize >= 10) {
		if ((k = read_upto(fd, head, 10)) < 0) {
			rc = (int)k;
			goto ioerr;
		}
		if (is_reg && k < 10)
			goto shrank;
		pre = (size_t)k;
		npy = pre == 10 && memcmp(head, "\x93NUMPY", 6) == 0;
		if (!npy && is_reg) {
			if (lseek(fd, 0, SEEK_SET) != 0) {
				cli_warn("cannot read '%s': %s", path, strerror(errno));
				goto fail;
			}
			pre = 0;
		}
	}
	if (npy) {
		enum scar_dtype ft;

		pre = 0;
		if (head[6] == 1) {
			hlen = head[8] | (size_t)head[9] << 8;
			off = 10;
		} else if (head[6] == 2 || head[6] == 3) {
			unsigned char x[2];

			/* A read error is no truncation: it is reported as what it is. */
			if ((rc = read_full(fd, x, 2)) < 0)
				goto ioerr;
			if (rc == 0) {
				why = "truncated header";
				goto bad;
			}
			hlen = head[8] | (size_t)head[9] << 8 | (size_t)x[0] << 16 | (size_t)x[1] << 24;
			off = 12;
		} else {
			why = "unsupported NPY version";
			goto bad;
		}
		if (hlen > (1u << 20) || (is_reg && off + hlen > fsize)) {
			why = "bad header length";
			goto bad;
		}
		dict = xmalloc(hlen + 1);
		if ((rc = read_full(fd, dict, hlen)) < 0)
			goto ioerr;
		if (rc == 0) {
			why = "truncated header";
			goto bad;
		}
		dict[hlen] = 0;
		off += hlen;
		if (npy_parse_dict(dict, &ft, &swap, &ndim, shape, &why) < 0)
			goto bad;
		if (io->ndim >= 0 && (io->ndim != ndim ||
				      memcmp(io->shape, shape, (size_t)ndim * sizeof(*shape)))) {
			cli_warn("'%s': shape does not match --shape", path);
			goto fail;
		}
		n_el = elems_of(ndim, shape);
		if (n_el == UINT64_MAX || n_el > UINT64_MAX / scar_dtype_size(ft) ||
		    (is_reg && n_el * scar_dtype_size(ft) != fsize - off)) {
			why = "data length does not match the shape";
			goto bad;
		}
		dtype = ft;
		declared = "its .npy header declares";
	} else {
		if (!dtype || io->ndim < 0) {
			cli_warn("raw input '%s' needs --dtype and --shape", path);
			goto fail;
		}
		n_el = elems_of(ndim, shape);
		if (n_el == UINT64_MAX || n_el > UINT64_MAX / scar_dtype_size(dtype) ||
		    (is_reg && n_el * scar_dtype_size(dtype) != fsize)) {
			cli_warn("'%s': %s bytes do not make a %s array of that shape (%llu bytes)",
				 path, is_reg ? "its" : "the", scar_dtype_name(dtype),
				 n_el == UINT64_MAX || n_el > UINT64_MAX / scar_dtype_size(dtype) ? 0ULL :
				 (unsigned long long)(n_el * scar_dtype_size(dtype)));
			goto fail;
		}
		declared = "--dtype and --shape make";
	}
	want = n_el * scar_dtype_size(dtype);
	if (scar_tensor_new(&t, name, dtype, io->role, ndim, shape, &e) < 0) {
		warn_err(path, &e);
		goto fail;
	}
	bytes = scar_tensor_bytes(t);
	m->map = NULL;
	if (is_reg && !swap && (!io->dtype || io->dtype == dtype) && bytes >= (1u << 20)) {
		void *p = mmap(NULL, (size_t)fsize, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);

		if (p != MAP_FAILED) {
			m->t = t;
			m->own = t->data;
			m->map = p;
			m->len = (size_t)fsize;
			t->data = (unsigned char *)p + off;
			goto done;
		}
	}
	if (is_reg) {
		rc = read_full(fd, t->data, bytes);
		if (rc < 0)
			goto ioerr;
		if (rc == 0)
			goto shrank;
	} else {
		unsigned char extra;

		/*
		 * Exactly the bytes declared, then one more read to see that the
		 * stream ends. The tensor's pages are touched only as bytes arrive.
		 */
		if (pre > bytes)
			goto toomuch;
		memcpy(t->data, head, pre);
		if ((k = read_upto(fd, (unsigned char *)t->data + pre, bytes - pre)) < 0) {
			rc = (int)k;
			goto ioerr;
		}
		if ((size_t)k < bytes - pre) {
			cli_warn("'%s': input ends after %llu bytes of the %llu %s", path,
				 (unsigned long long)(pre + (size_t)k), (unsigned long long)want,
				 declared);
			goto fail;
		}
		if ((k = read_upto(fd, &extra, 1)) < 0) {
			rc = (int)k;
			goto ioerr;
		}
		if (k)
			goto toomuch;
	}
	if (swap)
		bswap_data(t->data, (size_t)scar_tensor_elems(t), scar_dtype_size(dtype));
	if (io->dtype && io->dtype != dtype)
		convert_tensor(&t, io->dtype);
	goto done;
toomuch:
	cli_warn("'%s': more input than the %llu bytes %s", path, (unsigned long long)want,
		 declared);
	goto fail;
ioerr:
	cli_warn("cannot read '%s': %s", path, strerror(-rc));
	goto fail;
shrank:
	cli_warn("'%s': file shrank while reading", path);
	goto fail;
bad:
	cli_warn("'%s': not a valid .npy file: %s", path, why);
fail:
	scar_tensor_free(t);
	t = NULL;
done:
	if (!stdin_in)
		close(fd);
	free(dict);
	return t;
}

static enum scar_dtype parse_dtype_opt(const char *s)
{
	enum scar_dtype t = scar_dtype_parse(s);

	if (!t)
		cli_usage_error("option '--dtype': unknown type '%s'", s);
	return t;
}

/* The tensor name a file gives: its name without the extension; -1 when too long for buf. */
static int default_name(char *buf, size_t n, const char *path)
{
	const char *base = strrchr(path, '/'), *dot;
	int len;

	if (strcmp(path, "-") == 0) {
		snprintf(buf, n, "x");
		return 0;
	}
	base = base ? base + 1 : path;
	dot = strrchr(base, '.');
	if (dot && dot > base)
		len = snprintf(buf, n, "%.*s", (int)(dot - base), base);
	else
		len = snprintf(buf, n, "%s", base);
	return len < 0 || (size_t)len >= n ? -1 : 0;
}

static int save_state(const struct scar_state *st, const char *out,
		      const struct scar_ckpt_save_opts *so)
{
	struct scar_error e;

	scar_error_clear(&e);
	if (!cli_is_stdio(out) && !is_regular_target(out)) {
		/* A device or FIFO: stream into it rather than rename over it. */
		int fd = open(out, O_WRONLY | O_TRUNC), rc;

		if (fd < 0) {
			cli_warn("cannot open '%s': %s", out, strerror(errno));
			return EXIT_TROUBLE;
		}
		rc = scar_ckpt_write_fd(st, fd, out, so, &e);
		if (close(fd) != 0 && rc == 0)
			rc = scar_error_set_errno(&e, errno, out, "cannot write '%s'", out);
		if (rc < 0) {
			warn_err(out, &e);
			return EXIT_TROUBLE;
		}
		return 0;
	}
	if (scar_ckpt_save(st, cli_is_stdio(out) ? "-" : out, so, &e) < 0) {
		warn_err(out, &e);
		return EXIT_TROUBLE;
	}
	return 0;
}

/*
 * Every tensor of a safetensors file into st, by its name. Tensors the file
 * marks "scar.role.NAME": "state" (as our export does) keep that role; the
 * others take --role. Half-precision and small integer types are widened on
 * reading (see scar/arrayfile.h).
 */
static int import_safetensors(struct scar_state *st, const char *path, const char *name,
			      enum scar_role role)
{
	struct scar_state *in = NULL;
	struct scar_error e;
	const json_t *meta;
	size_t k;
	int rc = 0;

	if (name)
		cli_usage_error("--name does not apply to a safetensors file (tensors keep their names)");
	scar_error_clear(&e);
	if (scar_array_load(path, &in, &e) < 0) {
		warn_err(path, &e);
		return -1;
	}
	meta = json_object_get(in->extra, "safetensors");
	for (k = 0; k < in->ntensors; k++) {
		struct scar_tensor *t = in->tensors[k];
		char key[SCAR_NAME_MAX + 16];
		const char *r;

		snprintf(key, sizeof(key), "scar.role.%s", t->name);
		r = json_string_value(json_object_get(meta, key));
		t->role = r && strcmp(r, "state") == 0 ? SCAR_ROLE_STATE : role;
		in->tensors[k] = NULL;
		if (scar_state_add(st, t, &e) < 0) {
			warn_err(path, &e);
			rc = -1;
			for (k++; k < in->ntensors; k++)
				scar_tensor_free(in->tensors[k]);
			break;
		}
	}
	in->ntensors = 0;
	scar_state_free(in);
	return rc;
}

static int cmd_import(int argc, char **argv)
{
	struct import_opts io = { 0, -1, { 0 }, SCAR_ROLE_PARAM };
	struct scar_ckpt_save_opts so;
	const char *out = NULL, *name = NULL, *model = "";
	struct scar_state *st = NULL;
	struct mapping *maps = NULL;
	struct scar_error e;
	uint64_t iteration = 0, shards = 1;
	int c, i, status = EXIT_TROUBLE, sync = 1, nmaps = 0;

	while ((c = cli_command_getopt(argc, argv, ":ho:", import_opts)) != -1) {
		switch (c) {
		case OPT_DTYPE: io.dtype = parse_dtype_opt(optarg); break;
		case OPT_ITERATION: iteration = cli_parse_u64("--iteration", optarg, 0, INT64_MAX); break;
		case OPT_MODEL:
			if (scar_name_check(optarg, "option '--model': model name", 1, &e) < 0)
				cli_usage_error("%s", e.msg);
			model = optarg;
			break;
		case OPT_NAME:
			if (scar_name_check(optarg, "option '--name': tensor name", 0, &e) < 0)
				cli_usage_error("%s", e.msg);
			name = optarg;
			break;
		case OPT_NO_SYNC: sync = 0; break;
		case 'o': out = optarg; break;
		case OPT_ROLE:
			io.role = scar_role_parse(optarg);
			if (!io.role)
				cli_usage_error("option '--role': '%s' is not param or state", optarg);
			break;
		case OPT_SHAPE: parse_shape(optarg, &io.ndim, io.shape); break;
		case OPT_SHARDS: shards = cli_parse_u64("--shards", optarg, 1, SCAR_MAX_SHARDS); break;
		}
	}
	if (!out)
		cli_usage_error("import needs -o OUT");
	if (optind == argc)
		cli_usage_error("missing operand: FILE");
	if (name && argc - optind > 1)
		cli_usage_error("--name needs a single FILE");
	refuse_tty_out(out);

	scar_error_clear(&e);
	if (scar_state_new(&st, model, &e) < 0)
		cli_die_error(&e);
	st->iteration = iteration;
	st->shards = (uint32_t)shards;
	maps = xmalloc((size_t)(argc - optind) * sizeof(*maps));
	for (i = optind; i < argc; i++) {
		const char *path = argv[i];
		struct scar_tensor *t;
		char nm[SCAR_NAME_MAX];

		if (strcmp(path, "-") == 0)
			cli_refuse_tty_stdin();
		if (has_suffix(path, ".safetensors")) {
			if (import_safetensors(st, path, name, io.role) < 0)
				goto out;
			continue;
		}
		scar_error_clear(&e);
		if (name) {
			snprintf(nm, sizeof(nm), "%s", name);
		} else if (default_name(nm, sizeof(nm), path) < 0 ||
			   scar_name_check(nm, "tensor name", 0, &e) < 0) {
			/* Not cut short: two long names could end up one. */
			cli_warn("'%s': %s; choose one with --name", path,
				 e.msg[0] ? e.msg : "the tensor name from the file name is too long");
			goto out;
		}
		t = import_file(path, nm, &io, &maps[nmaps]);
		if (!t)
			goto out;
		nmaps++;
		if (scar_state_add(st, t, &e) < 0) {
			warn_err(path, &e);
			goto out;
		}
	}
	scar_ckpt_save_opts_init(&so);
	so.sync = sync;
	status = save_state(st, out, &so);
out:
	for (i = 0; i < nmaps; i++)
		unmap_tensor(&maps[i]);
	free(maps);
	scar_state_free(st);
	return status;
}

/* ---- apply ---- */

struct item {
	char *path;
	uint64_t iteration;
	int partial;
	size_t order;
	int from_dir;		/* an entry of a directory operand */
	struct scar_state *st;	/* already loaded: a stream can be read only once */
};

static int cmp_item(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	if (x->iteration != y->iteration)
		return x->iteration < y->iteration ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static int peek(const char *path, struct item *it)
{
	struct scar_ckpt_reader *r;
	struct scar_error e;
	struct stat sb;

	scar_error_clear(&e);
	it->st = NULL;
	/* A FIFO or device opened again is another stream: load it now, whole. */
	if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
		if (load_any(path, &it->st, &e) < 0) {
			warn_err(path, &e);
			return -1;
		}
		it->iteration = it->st->iteration;
		it->partial = 0;
		for (size_t k = 0; k < it->st->ntensors; k++)
			if (it->st->tensors[k]->present &&
			    scar_tensor_rows_present(it->st->tensors[k]) !=
			    scar_tensor_rows(it->st->tensors[k]))
				it->partial = 1;
		return 0;
	}
	if (is_manifest(path)) {
		struct scar_dist_manifest *m;

		if (scar_dist_manifest_read(path, &m, &e) < 0) {
			warn_err(path, &e);
			return -1;
		}
		it->iteration = m->iteration;
		it->partial = m->partial;
		scar_dist_manifest_free(m);
		return 0;
	}
	if (scar_ckpt_reader_open(&r, path, &e) < 0) {
		warn_err(path, &e);
		return -1;
	}
	it->iteration = scar_ckpt_reader_info(r)->iteration;
	it->partial = scar_ckpt_reader_info(r)->partial;
	scar_ckpt_reader_close(r);
	return 0;
}

static int cmd_apply(int argc, char **argv)
{
	struct item *items = NULL, base_item;
	struct scar_ckpt_save_opts so;
	struct scar_state *base = NULL;
	struct scar_error e;
	const char *out = NULL;
	size_t n = 0, cap = 0, j, base_at = (size_t)-1, first_dir_end = 0;
	int c, i, rc, status = EXIT_TROUBLE, sync = 1, stdin_used = 0, moved = 0;

	while ((c = cli_command_getopt(argc, argv, ":ho:", apply_opts)) != -1) {
		if (c == 'o')
			out = optarg;
		else if (c == OPT_NO_SYNC)
			sync = 0;
	}
	if (optind == argc)
		cli_usage_error("missing operand: BASE");
	refuse_tty_out(out);

	for (i = optind; i < argc; i++) {
		struct stat sb;

		if (strcmp(argv[i], "-") == 0) {
			if (i != optind || stdin_used)
				cli_usage_error("only BASE may be '-'");
			cli_refuse_tty_stdin();
			stdin_used = 1;
		} else if (stat(argv[i], &sb) == 0 && S_ISDIR(sb.st_mode)) {
			struct scar_ckpt_entry *ents;
			size_t ne, skipped = 0;
			char *dir = trim_dir(argv[i]);

			scar_error_clear(&e);
			/* Distributed checkpoints count once, as their manifests. */
			rc = scar_dist_ckpt_list(dir, &ents, &ne, &skipped, &e);
			free(dir);
			if (rc < 0) {
				warn_err(argv[i], &e);
				goto out;
			}
			if (skipped) {
				cli_warn("'%s': %zu damaged or unreadable checkpoints; see 'scar-ckpt ls'",
					 argv[i], skipped);
				scar_ckpt_list_free(ents, ne);
				goto out;
			}
			for (j = 0; j < ne; j++) {
				if (n == cap) {
					cap = cap ? 2 * cap : 16;
					items = xrealloc(items, cap * sizeof(*items));
				}
				items[n].path = strdup(ents[j].path);
				if (!items[n].path)
					cli_die("out of memory");
				items[n].iteration = ents[j].iteration;
				items[n].partial = ents[j].partial;
				items[n].order = n;
				items[n].from_dir = 1;
				items[n].st = NULL;
				n++;
			}
			scar_ckpt_list_free(ents, ne);
			if (i == optind) {
				first_dir_end = n;
				if (!ne) {
					cli_warn("no checkpoints in '%s'", argv[i]);
					goto out;
				}
			}
			continue;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			items = xrealloc(items, cap * sizeof(*items));
		}
		items[n].path = strdup(argv[i]);
		if (!items[n].path)
			cli_die("out of memory");
		items[n].order = n;
		items[n].from_dir = 0;
		items[n].st = NULL;
		/* stdin can only be read once: its iteration comes when it is loaded. */
		if (strcmp(argv[i], "-") == 0) {
			items[n].iteration = 0;
			items[n].partial = 0;
		} else if (peek(argv[i], &items[n]) < 0) {
			free(items[n].path);
			goto out;
		}
		n++;
	}

	/* The base: the first operand, or the oldest full checkpoint of its directory. */
	if (first_dir_end) {
		for (j = 0; j < first_dir_end; j++)
			if (!items[j].partial && (base_at == (size_t)-1 ||
						  items[j].iteration < items[base_at].iteration))
				base_at = j;
		if (base_at == (size_t)-1) {
			cli_warn("no full checkpoint in '%s' to start from", argv[optind]);
			goto out;
		}
	} else {
		base_at = 0;
	}
	base_item = items[base_at];
	items[base_at] = items[--n];
	moved = 1;
	scar_error_clear(&e);
	if (base_item.st) {
		base = base_item.st;
		base_item.st = NULL;
	} else if (load_any(base_item.path, &base, &e) < 0) {
		warn_err(base_item.path, &e);
		goto out;
	}
	for (j = 0; j < base->ntensors; j++) {
		if (base->tensors[j]->present &&
		    scar_tensor_rows_present(base->tensors[j]) != scar_tensor_rows(base->tensors[j])) {
			cli_warn("base '%s' is a partial checkpoint", base_item.path);
			goto out;
		}
	}
	base_item.iteration = base->iteration;
	qsort(items, n, sizeof(*items), cmp_item);

	for (j = 0; j < n; j++) {
		struct scar_state *over = NULL;

		if (items[j].iteration <= base_item.iteration) {
			if (items[j].from_dir)
				continue;	/* superseded by the full base */
			cli_warn("'%s' (iteration %llu) is not newer than the base '%s' (iteration %llu)",
				 items[j].path, (unsigned long long)items[j].iteration,
				 base_item.path, (unsigned long long)base_item.iteration);
			goto out;
		}
		scar_error_clear(&e);
		if (items[j].st) {
			over = items[j].st;
			items[j].st = NULL;
		} else if (load_any(items[j].path, &over, &e) < 0) {
			warn_err(items[j].path, &e);
			goto out;
		}
		if (scar_ckpt_apply(base, over, &e) < 0) {
			warn_err(items[j].path, &e);
			scar_state_free(over);
			goto out;
		}
		scar_state_free(over);
	}
	scar_ckpt_save_opts_init(&so);
	so.sync = sync;
	status = save_state(base, out ? out : "-", &so);
out:
	scar_state_free(base);
	for (j = 0; j < n; j++) {
		free(items[j].path);
		scar_state_free(items[j].st);
	}
	if (moved) {
		free(base_item.path);
		scar_state_free(base_item.st);
	}
	free(items);
	return status;
}

/* ---- convert ---- */

static int cmd_convert(int argc, char **argv)
{
	struct scar_ckpt_save_opts so;
	struct scar_state *st = NULL;
	struct scar_error e;
	enum scar_dtype dtype = 0;
	uint64_t shards = 0, level = 0;
	int c, compress = 1, sync = 1, have_level = 0, status;
	size_t i;
	const char *in, *out;

	while ((c = cli_command_getopt(argc, argv, ":h", convert_opts)) != -1) {
		switch (c) {
		case OPT_COMPRESS: compress = 1; break;
		case OPT_NO_COMPRESS: compress = 0; break;
		case OPT_DTYPE:
			dtype = parse_dtype_opt(optarg);
			if (dtype != SCAR_F32 && dtype != SCAR_F64)
				cli_usage_error("option '--dtype': '%s' is not f32 or f64", optarg);
			break;
		case OPT_LEVEL:
			level = cli_parse_u64("--level", optarg, 0, 12);
			have_level = 1;
			break;
		case OPT_NO_SYNC: sync = 0; break;
		case OPT_SHARDS: shards = cli_parse_u64("--shards", optarg, 1, SCAR_MAX_SHARDS); break;
		}
	}
	if (argc - optind < 2)
		cli_usage_error("missing operand: convert needs IN and OUT");
	if (argc - optind > 2)
		cli_usage_error("too many operands");
	if (have_level && !compress)
		cli_usage_error("--level needs compression");
	in = input_path(argv[optind]);
	out = argv[optind + 1];
	refuse_tty_out(out);

	scar_error_clear(&e);
	if (load_any(in, &st, &e) < 0) {
		warn_err(in, &e);
		return EXIT_TROUBLE;
	}
	if (dtype)
		for (i = 0; i < st->ntensors; i++)
			if ((st->tensors[i]->dtype == SCAR_F32 || st->tensors[i]->dtype == SCAR_F64) &&
			    st->tensors[i]->dtype != dtype)
				convert_tensor(&st->tensors[i], dtype);
	if (shards)
		st->shards = (uint32_t)shards;
	scar_ckpt_save_opts_init(&so);
	so.compress = compress;
	if (have_level)
		so.level = (int)level;
	so.sync = sync;
	status = save_state(st, out, &so);
	scar_state_free(st);
	return status;
}

/* ---- ls ---- */

struct lsent {
	char *path;
	uint64_t iteration;
	int kind;		/* 0 full, 1 partial, 2 damaged, 3 distributed (a manifest) */
	uint64_t size;
	char *error;
	int owned;		/* path and error are ours to free (a manifest's entry) */
};

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct lsent *)a)->path, ((const struct lsent *)b)->path);
}

static int cmp_iter(const void *a, const void *b)
{
	const struct lsent *x = a, *y = b;

	if (x->iteration != y->iteration)
		return x->iteration < y->iteration ? -1 : 1;
	return cmp_name(a, b);
}

static int cmd_ls(int argc, char **argv)
{
	static const char *const kinds[] = { "full", "partial", "damaged", "distributed" };
	struct scar_ckpt_entry *ents = NULL;
	struct lsent *v = NULL, *bad;
	struct scar_error e;
	size_t ne = 0, skipped = 0, nv = 0, nbad = 0, nmani = 0, i, j;
	const char *dir;
	char *dirbuf;
	int json = 0, c, status = 0;

	while ((c = cli_command_getopt(argc, argv, ":h", ls_opts)) != -1)
		if (c == OPT_JSON)
			json = 1;
	if (optind == argc)
		cli_usage_error("missing operand: DIR");
	if (argc - optind > 1)
		cli_usage_error("too many operands");
	dir = dirbuf = trim_dir(argv[optind]);

	scar_error_clear(&e);
	if (scar_ckpt_list_readable(dir, &ents, &ne, &skipped, &e) < 0) {
		warn_err(dir, &e);
		free(dirbuf);
		return EXIT_TROUBLE;
	}
	v = xmalloc((ne + 1) * sizeof(*v));
	for (i = 0; i < ne; i++) {
		if (is_rank_file(ents[i].path))
			continue;	/* a part of a distributed checkpoint: listed by its manifest */
		v[nv].path = ents[i].path;
		v[nv].iteration = ents[i].iteration;
		v[nv].kind = ents[i].partial ? 1 : 0;
		v[nv].size = ents[i].size;
		v[nv].error = NULL;
		v[nv].owned = 0;
		nv++;
	}
	{
		/* Distributed checkpoints: one entry per manifest, damaged when incomplete. */
		DIR *d = opendir(dir);
		struct dirent *de;
		size_t nm = 0;
		char **names = NULL;

		while (d && (de = readdir(d)) != NULL) {
			if (!is_manifest(de->d_name))
				continue;
			names = xrealloc(names, (nm + 1) * sizeof(*names));
			names[nm] = xmalloc(strlen(dir) + strlen(de->d_name) + 2);
			sprintf(names[nm], "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/",
				de->d_name);
			nm++;
		}
		if (d)
			closedir(d);
		for (i = 0; i < nm; i++) {
			struct scar_dist_manifest *m = NULL;
			struct stat sb;

			v = xrealloc(v, (nv + 1) * sizeof(*v));
			v[nv].path = names[i];
			v[nv].iteration = 0;
			v[nv].kind = 3;
			v[nv].size = 0;
			v[nv].error = NULL;
			v[nv].owned = 1;
			scar_error_clear(&e);
			/* What DIR holds: a FIFO or a link out of it is damage, never followed or waited on. */
			if (scar_dist_manifest_read_entry(names[i], &m, &e) == 0 &&
			    scar_dist_manifest_verify(names[i], m, &e) == 0) {
				size_t k;

				v[nv].iteration = m->iteration;
				v[nv].size = stat(names[i], &sb) == 0 ? (uint64_t)sb.st_size : 0;
				for (k = 0; k < m->nfiles; k++)
					v[nv].size += m->files[k].size;
			} else {
				v[nv].kind = 2;
				v[nv].size = stat(names[i], &sb) == 0 ? (uint64_t)sb.st_size : 0;
				v[nv].error = strdup(e.msg[0] ? e.msg : scar_strerror(e.code));
				cli_warn("damaged distributed checkpoint '%s': %s", names[i],
					 v[nv].error ? v[nv].error : "?");
				status = EXIT_NO;
			}
			scar_dist_manifest_free(m);
			nv++;
		}
		free(names);
		nmani = nm;
	}
	if (nmani)
		qsort(v, nv, sizeof(*v), cmp_iter);
	bad = v + nv;
	if (skipped) {
		/* The library skips what it cannot read; find those files and say why. */
		DIR *d = opendir(dir);
		struct dirent *de;

		if (!d) {
			cli_warn("cannot open '%s': %s", dir, strerror(errno));
			status = EXIT_TROUBLE;
			goto print;
		}
		while ((de = readdir(d)) != NULL) {
			size_t len = strlen(de->d_name);
			struct scar_ckpt_reader *r;
			struct stat sb;
			char *p;
			int known = 0, have_sb;

			if (len < 6 || strcmp(de->d_name + len - 5, ".ckpt") != 0)
				continue;
			for (j = 0; j < ne && !known; j++) {
				const char *s = strrchr(ents[j].path, '/');
				known = strcmp(s ? s + 1 : ents[j].path, de->d_name) == 0;
			}
			if (known)
				continue;
			p = xmalloc(strlen(dir) + len + 2);
			sprintf(p, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", de->d_name);
			v = xrealloc(v, (nv + nbad + 1) * sizeof(*v));
			bad = v + nv;
			bad[nbad].path = p;
			bad[nbad].iteration = 0;
			bad[nbad].kind = 2;
			have_sb = stat(p, &sb) == 0;
			bad[nbad].size = have_sb ? (uint64_t)sb.st_size : 0;
			scar_error_clear(&e);
			if (have_sb && !S_ISREG(sb.st_mode)) {
				/* opening a FIFO would wait for a writer */
				snprintf(e.msg, sizeof(e.msg), "not a regular file");
			} else if (scar_ckpt_reader_open(&r, p, &e) == 0) {
				scar_ckpt_reader_close(r);
				snprintf(e.msg, sizeof(e.msg), "not a readable checkpoint");
			} else if (!e.msg[0]) {
				snprintf(e.msg, sizeof(e.msg), "%s", scar_strerror(e.code));
			}
			bad[nbad].error = strdup(e.msg);
			if (!e.file[0])
				snprintf(e.file, sizeof(e.file), "%s", p);
			if (e.code == SCAR_EIO) {
				/* unreadable is not damaged: a system error, exit 2 */
				warn_err(p, &e);
				status = EXIT_TROUBLE;
			} else {
				cli_warn("damaged checkpoint '%s': %s", p, e.msg);
			}
			nbad++;
		}
		closedir(d);
		qsort(bad, nbad, sizeof(*bad), cmp_name);
		if (nbad && status == 0)
			status = EXIT_NO;
	}
print:
	if (json) {
		json_t *o = json_object(), *a = json_array();

		if (!o || !a)
			cli_die("out of memory");
		for (i = 0; i < nv + nbad; i++) {
			json_t *x = json_object();

			json_put(x, "path", scar_json_text(v[i].path));
			json_put(x, "iteration", v[i].kind == 2 ? json_null() :
				 json_integer((json_int_t)v[i].iteration));
			json_put(x, "kind", scar_json_text(kinds[v[i].kind]));
			json_put(x, "size", json_integer((json_int_t)v[i].size));
			if (v[i].error)
				json_put(x, "error", scar_json_text(v[i].error));
			json_array_append_new(a, x);
		}
		json_put(o, "dir", scar_json_text(dir));
		json_put(o, "checkpoints", a);
		print_json(o);
		json_decref(o);
	} else {
		for (i = 0; i < nv + nbad; i++) {
			char *q = quoted(v[i].path);	/* a file name may hold anything */

			if (v[i].kind == 2)
				printf("%10s  %-7s  %12llu  %s\n", "-", kinds[2],
				       (unsigned long long)v[i].size, q);
			else
				printf("%10llu  %-7s  %12llu  %s\n", (unsigned long long)v[i].iteration,
				       kinds[v[i].kind], (unsigned long long)v[i].size, q);
			free(q);
		}
	}
	for (i = 0; i < nbad; i++) {
		free(bad[i].path);
		free(bad[i].error);
	}
	for (i = 0; i < nv; i++) {
		if (v[i].owned) {
			free(v[i].path);
			free(v[i].error);
		}
	}
	free(v);
	scar_ckpt_list_free(ents, ne);
	free(dirbuf);
	return status;
}

/* ---- main ---- */

int main(int argc, char **argv)
{
	static const struct cli_command_set set = {
		commands, sizeof(commands) / sizeof(commands[0]),
		"Inspect, verify, convert, merge and extract scar checkpoints.\n"
		"'-' or a missing operand is stdin or stdout.\n",
	};

	cli_init("scar-ckpt");
	return cli_command_main(&set, argc, argv);
}
