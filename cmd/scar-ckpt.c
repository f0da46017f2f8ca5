/*
 * scar-ckpt - inspect, verify, convert, merge and extract scar checkpoints.
 *
 * A git-style front end over scar/ckpt.h: `scar-ckpt COMMAND [options]
 * [operands]`. Every command is one cmd_* function in cmd/ckpt/COMMAND.c:
 * parse options, call the library, report. This file holds main, the
 * command table, the helpers the commands share and the getopt_long tables,
 * the one source of the options; --help, scar-ckpt(1) and the completions
 * follow them (a bats test holds them to it).
 */
#include "ckpt.h"

/* ---- the option tables ---- */

const struct option info_opts[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "threads", required_argument, NULL, OPT_THREADS },
	{ NULL, 0, NULL, 0 },
};

const struct option verify_opts[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "threads", required_argument, NULL, OPT_THREADS },
	{ NULL, 0, NULL, 0 },
};

const struct option export_opts[] = {
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "help", no_argument, NULL, 'h' },
	{ "output", required_argument, NULL, 'o' },
	{ "rows", required_argument, NULL, OPT_ROWS },
	{ "shard", required_argument, NULL, OPT_SHARD },
	{ "tensor", required_argument, NULL, OPT_TENSOR },
	{ NULL, 0, NULL, 0 },
};

const struct option import_opts[] = {
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
	{ "shuffle", required_argument, NULL, OPT_SHUFFLE },
	{ "threads", required_argument, NULL, OPT_THREADS },
	{ NULL, 0, NULL, 0 },
};

const struct option apply_opts[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "no-sync", no_argument, NULL, OPT_NO_SYNC },
	{ "output", required_argument, NULL, 'o' },
	{ "threads", required_argument, NULL, OPT_THREADS },
	{ "shuffle", required_argument, NULL, OPT_SHUFFLE },
	{ NULL, 0, NULL, 0 },
};

const struct option convert_opts[] = {
	{ "compress", no_argument, NULL, OPT_COMPRESS },
	{ "dtype", required_argument, NULL, OPT_DTYPE },
	{ "help", no_argument, NULL, 'h' },
	{ "level", required_argument, NULL, OPT_LEVEL },
	{ "no-compress", no_argument, NULL, OPT_NO_COMPRESS },
	{ "no-sync", no_argument, NULL, OPT_NO_SYNC },
	{ "shards", required_argument, NULL, OPT_SHARDS },
	{ "shuffle", required_argument, NULL, OPT_SHUFFLE },
	{ "threads", required_argument, NULL, OPT_THREADS },
	{ NULL, 0, NULL, 0 },
};

const struct option save_opts[] = {
	{ "force", no_argument, NULL, OPT_FORCE },
	{ "fraction", required_argument, NULL, OPT_FRACTION },
	{ "help", no_argument, NULL, 'h' },
	{ "interval", required_argument, NULL, OPT_INTERVAL },
	{ "iteration", required_argument, NULL, OPT_ITERATION },
	{ "no-sync", no_argument, NULL, OPT_NO_SYNC },
	{ "policy", required_argument, NULL, OPT_POLICY },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "shards", required_argument, NULL, OPT_SHARDS },
	{ "shuffle", required_argument, NULL, OPT_SHUFFLE },
	{ "stream", no_argument, NULL, OPT_STREAM },
	{ "threads", required_argument, NULL, OPT_THREADS },
	{ NULL, 0, NULL, 0 },
};

const struct option ls_opts[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "json", no_argument, NULL, OPT_JSON },
	{ NULL, 0, NULL, 0 },
};

/* ---- commands and their help ---- */

static const struct cli_command commands[] = {
	{ "apply", cmd_apply,
	  "[--help] [--no-sync] [-o OUT] [--shuffle WHEN] [--threads N] BASE [PARTIAL...]",
	  "Apply partial checkpoints, oldest first, onto a full base: the saved view.",
	  "  --help          show this help and exit\n"
	  "  --no-sync       do not fsync the output (faster, not crash-safe)\n"
	  "  -o, --output OUT  write the full checkpoint to OUT (default stdout)\n"
	  "  --threads N     compress on N threads (default: the cores); the file is\n"
	  "                  the same byte for byte\n"
	  "  --shuffle WHEN  byte-shuffle sections before LZ4: off (default), on, or auto\n"
	  "                  (each section, when it compresses better; scar-ckpt(5) 1.3)\n"
	  "A directory operand stands for all its checkpoints; when BASE is a\n"
	  "directory its oldest full checkpoint is the base.\n" },
	{ "convert", cmd_convert,
	  "[--compress | --no-compress] [--dtype T] [--help] [--level N]\n"
	  "                         [--no-sync] [--shards S] [--shuffle WHEN] [--threads N]\n"
	  "                         IN OUT",
	  "Rewrite a checkpoint: compression, float precision, shard count.",
	  "  --compress      LZ4-compress the sections (default)\n"
	  "  --dtype T       convert floating-point tensors to T: f32 f64 f16 bf16\n"
	  "                  (f16 and bf16 round to nearest even)\n"
	  "  --help          show this help and exit\n"
	  "  --level N       LZ4 level: 1 fast (default), 2..12 LZ4HC\n"
	  "  --no-compress   store sections raw with a CRC-32C\n"
	  "  --no-sync       do not fsync the output (faster, not crash-safe)\n"
	  "  --shards S      split parameter rows into S shards\n"
	  "  --shuffle WHEN  byte-shuffle sections before LZ4: off (default), on, or auto\n"
	  "                  (each section, when it compresses better; scar-ckpt(5) 1.3)\n"
	  "  --threads N     compress on N threads (default: the cores); the file is\n"
	  "                  the same byte for byte\n"
	  "IN and OUT may be '-' for stdin and stdout, and may be the same file.\n" },
	{ "export", cmd_export,
	  "[--format raw|npy|json|safetensors] [--help] [-o OUT] [--rows A:B] [--shard N]\n"
	  "                        [--tensor NAME] [FILE | -]",
	  "Write a tensor's present rows as raw bytes, .npy, JSON or safetensors.",
	  "  --format F      raw, npy, json or safetensors (default: from OUT's suffix, else raw);\n"
	  "                  safetensors without --tensor writes the whole model\n"
	  "  --help          show this help and exit\n"
	  "  -o, --output OUT  write to OUT (default stdout)\n"
	  "  --rows A:B      only rows A..B-1 (either end may be left out)\n"
	  "  --shard N       only the rows of shard N\n"
	  "  --tensor NAME   the tensor to export (needed when there are several)\n" },
	{ "import", cmd_import,
	  "[--dtype T --shape A,B,...] [--help] [--iteration N] [--model M]\n"
	  "                        [--name NAME] [--no-sync] [--role param|state] [--shards S]\n"
	  "                        [--shuffle WHEN] [--threads N] -o OUT FILE...",
	  "Make a new checkpoint of raw or .npy arrays, one tensor per FILE, or of\n"
	  "every tensor of safetensors files and Hugging Face sharded directories\n"
	  "(F8 types refused: a checkpoint has no 8-bit float).",
	  "  --dtype T       element type: f32 f64 f16 bf16 i32 u32 i64 u64 u8 (raw input;\n"
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
	  "  --shards S      parameter shards (default 1)\n"
	  "  --shuffle WHEN  byte-shuffle sections before LZ4: off (default), on, or auto\n"
	  "                  (each section, when it compresses better; scar-ckpt(5) 1.3)\n"
	  "  --threads N     compress on N threads (default: the cores); the file is\n"
	  "                  the same byte for byte\n" },
	{ "info", cmd_info,
	  "[--help] [--json] [--threads N] [FILE | -]",
	  "Show metadata, the tensor table and per-section sizes.",
	  "  --help          show this help and exit\n"
	  "  --json          print one JSON object\n"
	  "  --threads N     check the sections of a regular file on N threads\n"
	  "                  (default: the cores)\n" },
	{ "ls", cmd_ls,
	  "[--help] [--json] DIR",
	  "List the checkpoints of a directory: iteration, kind, size, path.",
	  "  --help          show this help and exit\n"
	  "  --json          print one JSON object\n" },
	{ "save", cmd_save,
	  "--policy P [--force] [--fraction R] [--help] [--interval C] [--iteration N]\n"
	  "                      [--no-sync] [--seed N] [--shards S] [--shuffle WHEN] [--stream]\n"
	  "                      [--threads N]\n"
	  "                      SNAPSHOT DIR",
	  "Checkpoint another trainer's snapshot into run directory DIR by a policy.",
	  "  --force         go on although DIR was checkpointed by another policy\n"
	  "  --fraction R    partial policies: R = 1/m of the rows every C/m iterations (default 1/4)\n"
	  "  --help          show this help and exit\n"
	  "  --interval C    a full cycle every C iterations (default 8)\n"
	  "  --iteration N   the snapshot's iteration (default: a checkpoint's own)\n"
	  "  --no-sync       do not fsync (faster, not crash-safe)\n"
	  "  --policy P      full, round-robin, random or priority\n"
	  "  --seed N        the random policy's seed (scar-train --fail-seed; default 1)\n"
	  "  --shards S      a safetensors or .npy snapshot's shard count (row r: shard r mod S)\n"
	  "  --shuffle WHEN  byte-shuffle sections before LZ4: off (default), on, or auto\n"
	  "                  (each section, when it compresses better; scar-ckpt(5) 1.3)\n"
	  "  --stream        SNAPSHOT (- for stdin) is safetensors or .npy snapshots, one after\n"
	  "                  another, each handled as a call would; iterations from __metadata__\n"
	  "                  scar.iteration, else --iteration N for the first and one more each\n"
	  "  --threads N     compress on N threads (default: the cores); the files are\n"
	  "                  the same byte for byte\n"
	  "SNAPSHOT is a scar checkpoint, a safetensors or a .npy file. The rows\n"
	  "scar-train's policy would write at that iteration, against DIR's saved view,\n"
	  "go into DIR/ckpt-N.ckpt; one checkpoint event line goes to stdout, none when\n"
	  "N is not a checkpoint iteration. The first call writes a full checkpoint.\n" },
	{ "verify", cmd_verify,
	  "[--help] [-q] [--threads N] [FILE... | -]",
	  "Check structure and every checksum; exit 0 intact, 1 damaged, 2 unreadable.",
	  "  --help          show this help and exit\n"
	  "  -q, --quiet     say nothing about intact files\n"
	  "  --threads N     check the sections of a regular file on N threads\n"
	  "                  (default: the cores); damage is reported the same\n" },
};
/* ---- small helpers ---- */

/* Print a library error, naming path when the library did not. */
void warn_err(const char *path, struct scar_error *e)
{
	if (!e->file[0] && path)
		snprintf(e->file, sizeof(e->file), "%s", path);
	if (e->code == SCAR_EIO && e->errno_value == EPIPE)
		exit(EXIT_TROUBLE);
	cli_warn_error(e);
	/* an array file or an event stream where a checkpoint was wanted: say what it is */
	if (e->code == SCAR_EFORMAT && path && strstr(e->msg, "not a scar checkpoint"))
		cli_hint_not_checkpoint(path, 0);
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		cli_die("out of memory (%zu bytes)", n);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		cli_die("out of memory (%zu bytes)", n);
	return p;
}

/* dir without trailing slashes (but "/" stays), so listings say "d/x.ckpt". */
char *trim_dir(const char *dir)
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
const char *input_path(const char *operand)
{
	if (cli_is_stdio(operand)) {
		cli_refuse_tty_stdin();
		return "-";
	}
	return operand;
}

double ratio(uint64_t raw, uint64_t stored)
{
	return stored ? (double)raw / (double)stored : 0.0;
}

void json_put(json_t *o, const char *k, json_t *v)
{
	if (!v || json_object_set_new(o, k, v) != 0)
		cli_die("out of memory");
}

void print_json(json_t *o)
{
	if (json_dumpf(o, stdout, JSON_COMPACT) != 0)
		cli_flush_stdout();
	putchar('\n');
}

const char *kind_name(int partial)
{
	return partial ? "partial" : "full";
}

void refuse_tty_out(const char *path)
{
	if (cli_is_stdio(path))
		cli_refuse_binary_tty();
}

/* ---- shapes ---- */

void shape_text(char *buf, size_t n, int ndim, const uint64_t *shape)
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

json_t *shape_json(int ndim, const uint64_t *shape)
{
	json_t *a = json_array();
	int i;

	for (i = 0; i < ndim; i++)
		json_array_append_new(a, json_integer((json_int_t)shape[i]));
	return a;
}

/* ---- distributed checkpoints: a manifest stands for its rank files ---- */

/* The path of file name next to the manifest at mpath; caller frees. */
char *beside(const char *mpath, const char *name)
{
	const char *s = strrchr(mpath, '/');
	size_t d = s ? (size_t)(s - mpath) + 1 : 0;
	char *p = xmalloc(d + strlen(name) + 1);

	memcpy(p, mpath, d);
	strcpy(p + d, name);
	return p;
}

/* Load an ordinary checkpoint, or a distributed one (manifest) as one state. */
int load_any(const char *path, struct scar_state **out, struct scar_error *e)
{
	if (strcmp(path, "-") != 0 && scar_dist_is_manifest(path))
		return scar_dist_manifest_load(path, out, e);
	return scar_ckpt_load(path, out, e);
}

/* s quoted for a terminal (scar/file.h) into a buffer that holds any name; caller frees. */
char *quoted(const char *s)
{
	size_t n = scar_quote_text(NULL, 0, s);
	char *q = xmalloc(n + 1);

	scar_quote_text(q, n + 1, s);
	return q;
}

/* "label:      {json}", cut to 200 columns, quoted; "{}" when absent. */
void print_json_quoted(const char *label, const json_t *j)
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

int has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);

	return n >= m && strcmp(s + n - m, suf) == 0;
}

/* Convert t to dtype (any to any through double), replacing *tp. */
void convert_tensor(struct scar_tensor **tp, enum scar_dtype dtype)
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

enum scar_dtype parse_dtype_opt(const char *s)
{
	enum scar_dtype t = scar_dtype_parse(s);

	if (!t)
		cli_usage_error("option '--dtype': unknown type '%s'", s);
	return t;
}

int save_state(const struct scar_state *st, const char *out,
		      const struct scar_ckpt_save_opts *so)
{
	struct scar_error e;

	scar_error_clear(&e);
	/* Atomic replace; stdout, a device or a FIFO written through (scar/file.h). */
	if (scar_ckpt_save(st, cli_is_stdio(out) ? "-" : out, so, &e) < 0) {
		warn_err(out, &e);
		return EXIT_TROUBLE;
	}
	return 0;
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
