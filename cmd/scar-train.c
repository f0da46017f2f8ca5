/*
 * scar-train - train a workload with checkpoints, failures and recovery,
 * writing one JSON event per line (see scar-train(1), scar-events(7)).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "options.h"
#include "scar/ckpt.h"
#include "scar/dist.h"
#include "scar/events.h"
#include "scar/file.h"
#include "scar/model.h"
#include "scar/store.h"
#include "scar/train.h"

/* Training diverged (scar-train(1) EXIT STATUS): not a usage error, not a "no". */
#define EXIT_DIVERGED 3

static const char usage_text[] =
"usage: scar-train [--model NAME] [--iters N] [--shards S] [options]\n"
"       scar-train --resume PATH [--iters N] [options]\n"
"       scar-train --list-models [--json]\n"
"       scar-train --list-keys MODEL [--json]\n"
"\n"
"Train an iterative-convergent workload and write JSON-lines events to stdout.\n"
"\n"
"Workload:\n"
"  -m, --model NAME        mlr, ridge, mf or lda (default mlr)\n"
"      --data PATH         real data set (default: the built-in synthetic one)\n"
"      --seed N            seed of the model and its data (default 1)\n"
"      --set KEY=VALUE     set a model configuration key (repeatable; see --list-keys)\n"
"      --config FILE       model configuration as a JSON object\n"
"  -n, --iters N           iterations to run; with --resume, the total (default 50);\n"
"                          0: only the header and the starting state\n"
"      --shards S          parameter shards, row r in shard r mod S (default 8)\n"
"      --heldout-every N   held-out metric every N iterations (default: first and last)\n"
"      --list-models       list the workloads and exit\n"
"      --list-keys MODEL   list a workload's configuration keys and exit\n"
"      --json              --list-models and --list-keys as one JSON object\n"
"Checkpoints:\n"
"      --policy P          none, full, round-robin, random or priority (default none)\n"
"      --interval C        full checkpoint every C iterations (default 8)\n"
"      --fraction R        partial policies: R = 1/m of the rows every C/m iterations,\n"
"                          m dividing C (default 1/4)\n"
"      --checkpoint-dir D  write checkpoints into D (default: an in-memory store)\n"
"      --no-compress       store checkpoint sections uncompressed\n"
"      --no-sync           do not fsync checkpoint files\n"
"      --shuffle WHEN      byte-shuffle sections before LZ4: off (default), on, or\n"
"                          auto (each section, when it compresses better)\n"
"      --threads N         compress each checkpoint on N threads (default: the cores)\n"
"      --async[=N]         write checkpoints in the background, at most N in flight\n"
"                          (default 1); the loop waits only for a free slot\n"
"Failures and recovery:\n"
"      --fail-at LIST      fail after these iterations (comma-separated)\n"
"      --fail-prob P       fail after each iteration with probability P\n"
"      --lose-shards LIST  a failure loses these shards (e.g. 0,3,5-7)\n"
"      --lose-count N      a failure loses N shards chosen by seed (default 1; 0: a null failure)\n"
"      --lose-fraction F   a failure loses a fraction F of the shards\n"
"      --fail-seed N       seed of failure times, lost shards, random rows (default 1)\n"
"      --recovery R        partial, rebuild, rewind, auto, full or none (default partial)\n"
"Iteration cost:\n"
"      --cost              measure the cost against an unperturbed reference run\n"
"      --reference FILE    take the reference from this event stream instead\n"
"      --cost-window W     smooth the objective over W iterations (default 1)\n"
"      --cost-cap N        give up N iterations after --iters (default: --iters)\n"
"State and output:\n"
"      --resume PATH       continue from a checkpoint, a directory's newest full one, or -\n"
"      --save PATH         write the final state as a full checkpoint (- = stdout)\n"
"      --events FILE       write events to FILE (default stdout; none with --save -)\n"
"      --no-timing         leave out timing fields, for bit-identical streams\n"
"  -q, --quiet             no progress line on stderr\n"
"  -h, --help              show this help and exit\n"
"  -V, --version           show the version and exit\n";

enum {
	OPT_DATA = 256, OPT_SEED, OPT_SET, OPT_CONFIG, OPT_SHARDS, OPT_HELDOUT, OPT_LIST,
	OPT_POLICY, OPT_INTERVAL, OPT_FRACTION, OPT_CKPTDIR, OPT_NOCOMPRESS, OPT_NOSYNC, OPT_ASYNC, OPT_THREADS,
	OPT_FAILAT, OPT_FAILPROB, OPT_LOSESHARDS, OPT_LOSECOUNT, OPT_LOSEFRAC, OPT_FAILSEED,
	OPT_RECOVERY, OPT_COST, OPT_REFERENCE, OPT_WINDOW, OPT_CAP, OPT_RESUME, OPT_SAVE,
	OPT_EVENTS, OPT_NOTIMING, OPT_SHUFFLE,
	OPT_JSON, OPT_LISTKEYS,
};

static const struct option long_options[] = {
	{ "checkpoint-dir", required_argument, NULL, OPT_CKPTDIR },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "cost", no_argument, NULL, OPT_COST },
	{ "cost-cap", required_argument, NULL, OPT_CAP },
	{ "cost-window", required_argument, NULL, OPT_WINDOW },
	{ "data", required_argument, NULL, OPT_DATA },
	{ "events", required_argument, NULL, OPT_EVENTS },
	{ "fail-at", required_argument, NULL, OPT_FAILAT },
	{ "fail-prob", required_argument, NULL, OPT_FAILPROB },
	{ "fail-seed", required_argument, NULL, OPT_FAILSEED },
	{ "fraction", required_argument, NULL, OPT_FRACTION },
	{ "heldout-every", required_argument, NULL, OPT_HELDOUT },
	{ "help", no_argument, NULL, 'h' },
	{ "interval", required_argument, NULL, OPT_INTERVAL },
	{ "iters", required_argument, NULL, 'n' },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "list-keys", required_argument, NULL, OPT_LISTKEYS },
	{ "list-models", no_argument, NULL, OPT_LIST },
	{ "lose-count", required_argument, NULL, OPT_LOSECOUNT },
	{ "lose-fraction", required_argument, NULL, OPT_LOSEFRAC },
	{ "lose-shards", required_argument, NULL, OPT_LOSESHARDS },
	{ "model", required_argument, NULL, 'm' },
	{ "no-compress", no_argument, NULL, OPT_NOCOMPRESS },
	{ "no-sync", no_argument, NULL, OPT_NOSYNC },
	{ "async", optional_argument, NULL, OPT_ASYNC },
	{ "threads", required_argument, NULL, OPT_THREADS },
	{ "no-timing", no_argument, NULL, OPT_NOTIMING },
	{ "policy", required_argument, NULL, OPT_POLICY },
	{ "quiet", no_argument, NULL, 'q' },
	{ "recovery", required_argument, NULL, OPT_RECOVERY },
	{ "reference", required_argument, NULL, OPT_REFERENCE },
	{ "resume", required_argument, NULL, OPT_RESUME },
	{ "save", required_argument, NULL, OPT_SAVE },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "set", required_argument, NULL, OPT_SET },
	{ "shards", required_argument, NULL, OPT_SHARDS },
	{ "shuffle", required_argument, NULL, OPT_SHUFFLE },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

/*
 * The progress line on stderr (scar-train(1) DESCRIPTION): where the run is,
 * its objective, the rate and the time left, redrawn in place with '\r' at
 * most ten times a second, only at a terminal (cli_progress_ok). Taken off
 * the screen before any message; a run that finishes leaves its last line.
 */
static struct {
	int len;		/* columns drawn on the screen; 0: nothing drawn */
	int reference;		/* the phase shown: the reference run of --cost */
	double t0, t_phase, t_drawn;	/* the first report, the phase's start, the last draw */
	double t_last;		/* the last report */
	uint64_t clock_phase;	/* the clock at the phase's start */
	struct scar_train_progress p;	/* the last report */
	int have;
} bar;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* "0.4 s", "0:07", "12:30", "1:02:03"; tenths only when seconds asked for */
static void fmt_duration(char *buf, size_t n, double s, int tenths)
{
	unsigned long long t = s < 0 ? 0 : s > 1e9 ? 1000000000ull : (unsigned long long)(s + 0.5);

	if (tenths && s < 59.95)
		snprintf(buf, n, "%.1f s", s < 0 ? 0 : s);
	else if (t >= 3600)
		snprintf(buf, n, "%llu:%02llu:%02llu", t / 3600, t / 60 % 60, t % 60);
	else
		snprintf(buf, n, "%llu:%02llu", t / 60, t % 60);
}

static void bar_clear(void)
{
	if (bar.len)
		fprintf(stderr, "\r%*s\r", bar.len, "");
	bar.len = 0;
}

/* Draw the last report; final: the run is over, keep the line with its time. */
static void bar_draw(double t, int final)
{
	const struct scar_train_progress *p = &bar.p;
	double dt = bar.t_last - bar.t_phase, rate = 0;
	uint64_t did = p->clock - bar.clock_phase;
	char line[512], d[32];
	int n, width = cli_terminal_width() - 1;

	if (p->reference)
		n = snprintf(line, sizeof(line), "%s: reference run %llu/%llu", cli_progname,
			     (unsigned long long)p->clock, (unsigned long long)p->iters);
	else if (p->clock <= p->iters || isnan(p->target) || final)
		n = snprintf(line, sizeof(line), p->clock <= p->iters ? "%s: iteration %llu/%llu" :
			     "%s: iteration %llu", cli_progname, (unsigned long long)p->clock,
			     (unsigned long long)p->iters);
	else	/* --cost, past --iters: on until the objective reaches the reference's */
		n = snprintf(line, sizeof(line), "%s: iteration %llu/%llu (cost: to %.6g)", cli_progname,
			     (unsigned long long)p->clock, (unsigned long long)p->limit, p->target);
	if (p->objective_name)
		n += snprintf(line + n, sizeof(line) - (size_t)n, ", %s %.6g", p->objective_name,
			      p->objective);
	if (did && dt > 0) {
		rate = (double)did / dt;
		n += snprintf(line + n, sizeof(line) - (size_t)n,
			      rate >= 100 ? ", %.0f it/s" : rate >= 1 ? ", %.1f it/s" : ", %.1f s/it",
			      rate >= 1 ? rate : 1 / rate);
	}
	if (final) {
		fmt_duration(d, sizeof(d), t - bar.t0, 1);
		n += snprintf(line + n, sizeof(line) - (size_t)n, ", done in %s", d);
	} else if (rate > 0 && p->clock < p->iters) {
		fmt_duration(d, sizeof(d), (double)(p->iters - p->clock) / rate, 0);
		n += snprintf(line + n, sizeof(line) - (size_t)n, ", ETA %s", d);
	}
	if (n >= (int)sizeof(line))
		n = (int)sizeof(line) - 1;
	/* a line wider than the terminal would wrap, and '\r' then redraw only its tail */
	if (width > 0 && n > width)
		n = width;
	fprintf(stderr, "\r%.*s%*s", n, line, bar.len > n ? bar.len - n : 0, "");
	if (final) {
		fputc('\n', stderr);
		bar.len = 0;
	} else {
		bar.len = n;
	}
	fflush(stderr);
	bar.t_drawn = t;
}

static void progress(const struct scar_train_progress *p, void *arg)
{
	double t = now();
	int first = !bar.have || p->reference != bar.reference || p->clock == p->start;

	(void)arg;
	if (!bar.have)
		bar.t0 = t;
	if (first) {
		bar.t_phase = t;
		bar.clock_phase = p->clock;
		bar.reference = p->reference;
	}
	bar.p = *p;
	bar.have = 1;
	bar.t_last = t;
	if (first || t - bar.t_drawn >= 0.1 || p->clock == p->iters)
		bar_draw(t, 0);
}

/* The run is over: its last line stays when it finished, else goes. */
static void bar_end(int finished)
{
	if (finished && bar.have && bar.len)
		bar_draw(now(), 1);
	bar_clear();
}

static void bar_at_exit(void)
{
	bar_clear();
}

/* --set KEY=VALUE: VALUE is JSON when it parses as JSON, else a string. */
static void set_key(json_t *config, const char *kv)
{
	const char *eq = strchr(kv, '=');
	char key[128];
	json_t *v;

	if (!eq || eq == kv || (size_t)(eq - kv) >= sizeof(key))
		cli_usage_error("option '--set': '%s' is not KEY=VALUE", kv);
	memcpy(key, kv, (size_t)(eq - kv));
	key[eq - kv] = 0;
	v = json_loads(eq + 1, JSON_DECODE_ANY, NULL);
	if (!v)
		v = json_string(eq + 1);
	if (!v || json_object_set_new(config, key, v))
		cli_die("out of memory");
}

/*
 * Why path cannot be written by a save (an errno), or 0: its directory must
 * exist and be writable, and path must not be a directory itself.
 */
static int save_path_error(const char *path)
{
	const char *slash = strrchr(path, '/');
	struct stat sb;
	char *dir;
	int e = 0;

	if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
		return EISDIR;
	if (!slash)
		dir = strdup(".");
	else if (slash == path)
		dir = strdup("/");
	else
		dir = strndup(path, (size_t)(slash - path));
	if (!dir)
		cli_die("out of memory");
	if (stat(dir, &sb) != 0)
		e = errno;
	else if (!S_ISDIR(sb.st_mode))
		e = ENOTDIR;
	else if (access(dir, W_OK | X_OK) != 0)
		e = errno;
	free(dir);
	return e;
}

/* Rank 0, or the only process: the one that warns once for the job. */
static int is_rank0(void)
{
	return !scar_dist_active() || scar_dist_rank() == 0;
}

/* A checkpoint --resume DIR passed over for an older one: which, and why. */
static void resume_skipped(void *arg, const char *path, const struct scar_error *why)
{
	(void)arg;
	if (is_rank0())
		cli_warn("skipping checkpoint '%s': %s", path,
			 why->msg[0] ? why->msg : scar_strerror(why->code));
}

/* path opened for reading without waiting for a FIFO's writer; dies on failure */
static FILE *open_input(const char *path, struct scar_error *err)
{
	int fd;
	FILE *f;

	scar_error_clear(err);
	if ((fd = scar_open_input(path, 0, err)) < 0)
		cli_die_error(err);
	if (!(f = fdopen(fd, "r"))) {
		close(fd);
		cli_die("cannot open '%s': %s", path, strerror(errno));
	}
	return f;
}

/* --config: one JSON document of at most SCAR_JSON_DOC_MAX bytes; dies on failure */
static json_t *load_config(const char *path, struct scar_error *err)
{
	FILE *f = open_input(path, err);
	json_t *j;
	int rc = scar_json_read_doc(f, path, SCAR_JSON_DOC_MAX, &j, err);

	fclose(f);
	if (rc) {
		if (err->line >= 0)
			cli_die("cannot read config '%s': line %lld: %s", path, (long long)err->line,
				err->msg);
		if (err->offset >= 0)
			cli_die("cannot read config '%s': offset %lld: %s", path,
				(long long)err->offset, err->msg);
		cli_die("cannot read config '%s': %s", path, err->msg);
	}
	return j;
}

static void print_json(json_t *o)
{
	if (!o || json_dumpf(o, stdout, JSON_COMPACT | JSON_REAL_PRECISION(17)) != 0)
		cli_die("out of memory");
	putchar('\n');
	json_decref(o);
}

static _Noreturn void list_models(int json)
{
	const struct scar_model_def *const *m;
	json_t *a = json ? json_array() : NULL;

	for (m = scar_models(); *m; m++) {
		if (!json) {
			printf("%-6s %s\n", (*m)->name, (*m)->summary);
			continue;
		}
		if (!a || json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:b, s:s?, s:b}",
				"name", (*m)->name, "summary", (*m)->summary,
				"objective", (*m)->objective_name,
				"objective_higher_better", (*m)->objective_higher_better,
				"heldout", (*m)->heldout_name,
				"heldout_higher_better", (*m)->heldout_higher_better)))
			cli_die("out of memory");
	}
	if (json)
		print_json(json_pack("{s:o}", "models", a));
	exit(0);
}

/* A key's default as --list-keys prints it: a value, another key's name, or "none". */
static void key_default(const struct scar_model_key *k, char *buf, size_t n)
{
	if (k->def_key)
		snprintf(buf, n, "%s", k->def_key);
	else if (k->flags & SCAR_KEY_OPTIONAL)
		snprintf(buf, n, "none");
	else if (k->type == SCAR_KEY_INT)
		snprintf(buf, n, "%lld", (long long)k->int_def);
	else if (k->type == SCAR_KEY_REAL)
		snprintf(buf, n, "%g", k->real_def);
	else
		snprintf(buf, n, "%s", k->str_def ? k->str_def : "none");
}

/* Its values: a range, the choices, or "-" for any string. */
static void key_values(const struct scar_model_key *k, char *buf, size_t n)
{
	size_t len = 0;

	if (k->type == SCAR_KEY_INT && k->int_max == INT64_MAX)
		snprintf(buf, n, ">= %lld", (long long)k->int_min);
	else if (k->type == SCAR_KEY_INT)
		snprintf(buf, n, "%lld..%lld", (long long)k->int_min, (long long)k->int_max);
	else if (k->type == SCAR_KEY_REAL)
		snprintf(buf, n, "%g..%g", k->real_min, k->real_max);
	else if (!k->choices)
		snprintf(buf, n, "-");
	else
		for (size_t i = 0; k->choices[i] && len < n; i++)
			len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? "|" : "", k->choices[i]);
}

static json_t *key_json(const struct scar_model_key *k)
{
	json_t *o = json_pack("{s:s, s:s}", "name", k->name, "type", scar_key_type_name(k->type));
	json_t *def = json_null();

	if (!o)
		return NULL;
	if (k->def_key || (k->flags & SCAR_KEY_OPTIONAL))
		;
	else if (k->type == SCAR_KEY_INT)
		def = json_integer((json_int_t)k->int_def);
	else if (k->type == SCAR_KEY_REAL)
		def = json_real(k->real_def);
	else if (k->str_def)
		def = json_string(k->str_def);
	json_object_set_new(o, "default", def);
	if (k->def_key)
		json_object_set_new(o, "default_key", json_string(k->def_key));
	if (k->type == SCAR_KEY_INT) {
		json_object_set_new(o, "min", json_integer((json_int_t)k->int_min));
		json_object_set_new(o, "max", json_integer((json_int_t)k->int_max));
	} else if (k->type == SCAR_KEY_REAL) {
		json_object_set_new(o, "min", json_real(k->real_min));
		json_object_set_new(o, "max", json_real(k->real_max));
	} else if (k->choices) {
		json_t *c = json_array();

		for (size_t i = 0; c && k->choices[i]; i++)
			json_array_append_new(c, json_string(k->choices[i]));
		json_object_set_new(o, "choices", c);
	}
	json_object_set_new(o, "synthetic", json_boolean(k->flags & SCAR_KEY_SYNTHETIC));
	json_object_set_new(o, "synthetic_default", json_boolean(k->flags & SCAR_KEY_SYNTH_DEFAULT));
	json_object_set_new(o, "description", json_string(k->help));
	return o;
}

/* --list-keys: the model's key table, which its configuration is checked against. */
static _Noreturn void list_keys(const char *name, int json)
{
	const struct scar_model_def *def = scar_model_find(name);
	const struct scar_model_key *k;
	int wk = 3, wt = 4, wd = 7, wv = 6;
	char d[64], v[128];
	json_t *a;

	if (!def)
		cli_usage_error("unknown model '%s' (see --list-models)", name);
	if (json) {
		if (!(a = json_array()))
			cli_die("out of memory");
		for (k = def->keys; k->name; k++)
			if (json_array_append_new(a, key_json(k)))
				cli_die("out of memory");
		print_json(json_pack("{s:s, s:o}", "model", def->name, "keys", a));
		exit(0);
	}
	for (k = def->keys; k->name; k++) {
		key_default(k, d, sizeof(d));
		key_values(k, v, sizeof(v));
		wk = (int)strlen(k->name) > wk ? (int)strlen(k->name) : wk;
		wt = (int)strlen(scar_key_type_name(k->type)) > wt ? (int)strlen(scar_key_type_name(k->type)) : wt;
		wd = (int)strlen(d) > wd ? (int)strlen(d) : wd;
		wv = (int)strlen(v) > wv ? (int)strlen(v) : wv;
	}
	printf("%-*s  %-*s  %-*s  %-*s  %s\n", wk, "KEY", wt, "TYPE", wd, "DEFAULT", wv, "VALUES",
	       "MEANING");
	for (k = def->keys; k->name; k++) {
		key_default(k, d, sizeof(d));
		key_values(k, v, sizeof(v));
		printf("%-*s  %-*s  %-*s  %-*s  %s\n", wk, k->name, wt, scar_key_type_name(k->type),
		       wd, d, wv, v, k->help);
	}
	exit(0);
}

int main(int argc, char **argv)
{
	struct scar_train_opts o;
	struct scar_train_result res;
	struct scar_error err;
	struct scar_state *resume = NULL;
	json_t *config = json_object(), *reference = NULL, *reference_header = NULL;
	const char *model = "mlr", *save = NULL, *events_path = NULL, *resume_path = NULL;
	const char *reference_path = NULL, *keys_of = NULL;
	struct cli_shard_list lose_shards = { 0, NULL };
	struct scar_train_resume_info resume_info;
	struct scar_dist_survivors survivors = { 0 };
	int c, quiet = 0, shards_given = 0, model_given = 0, shuffle = -1, rc;
	int policy_given = 0, interval_given = 0, fraction_given = 0, seed_given = 0;
	int recovery_given = 0;
	int list = 0, json = 0;
	FILE *events = stdout;

	cli_init(argv[0]);
	if (scar_dist_init(getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_SIZE"),
			   &argc, &argv, &err))
		cli_die_error(&err);
	atexit(scar_dist_finalize);
	if (scar_dist_active() && scar_dist_rank() != 0)
		cli_quiet_usage_errors();
	scar_error_clear(&err);
	scar_train_opts_init(&o);
	o.shards = 8;
	o.fraction = 0.25;
	o.timing = 1;
	o.ckpt_threads = cli_default_threads();
	if (!config)
		cli_die("out of memory");
	while ((c = getopt_long(argc, argv, "hm:n:qV", long_options, NULL)) != -1) {
		switch (c) {
		case 'h':
			json_decref(config);
			fputs(usage_text, stdout);
			return 0;
		case 'V': cli_version();
		case 'm': model = optarg; model_given = 1; break;
		case 'n': o.iters = cli_parse_u64("--iters", optarg, 0, 100000000); break;
		case 'q': quiet = 1; break;
		case OPT_DATA:
			if (!*optarg)
				cli_usage_error("option '--data' needs a value");
			cli_check_path_arg("--data", optarg, NULL);
			json_object_set_new(config, "data", json_string(optarg));
			break;
		case OPT_SEED:
			json_object_set_new(config, "seed", json_integer(
				(json_int_t)cli_parse_u64("--seed", optarg, 0, INT64_MAX)));
			break;
		case OPT_SET: set_key(config, optarg); break;
		case OPT_CONFIG: {
			json_t *f;

			cli_check_path_arg("--config", optarg, NULL);
			f = load_config(optarg, &err);

			if (!json_is_object(f))
				cli_die("config '%s' is not a JSON object", optarg);
			json_object_update(config, f);
			json_decref(f);
			break;
		}
		case OPT_SHARDS:
			o.shards = (uint32_t)cli_parse_u64("--shards", optarg, 1, SCAR_TRAIN_MAX_LOSE);
			shards_given = 1;
			break;
		case OPT_HELDOUT: o.heldout_every = cli_parse_u64("--heldout-every", optarg, 1, UINT32_MAX); break;
		case OPT_LIST: list = 1; break;
		case OPT_LISTKEYS: keys_of = optarg; break;
		case OPT_JSON: json = 1; break;
		case OPT_POLICY:
			if ((rc = scar_policy_parse(optarg)) < 0)
				cli_usage_error("unknown policy '%s' (none, full, round-robin, random, priority)", optarg);
			o.policy = rc;
			policy_given = 1;
			break;
		case OPT_INTERVAL:
			o.interval = cli_parse_u64("--interval", optarg, 1, 100000000);
			interval_given = 1;
			break;
		case OPT_FRACTION:
			o.fraction = cli_parse_fraction("--fraction", optarg);
			fraction_given = 1;
			break;
		case OPT_CKPTDIR:
			if (!*optarg)
				cli_usage_error("option '--checkpoint-dir' needs a value");
			cli_check_path_arg("--checkpoint-dir", optarg, NULL);
			o.ckpt_dir = optarg;
			break;
		case OPT_NOCOMPRESS: o.ckpt_compress = 0; break;
		case OPT_NOSYNC: o.ckpt_sync = 0; break;
		case OPT_SHUFFLE: shuffle = cli_parse_shuffle("--shuffle", optarg); break;
		case OPT_THREADS:
			o.ckpt_threads = (unsigned)cli_parse_u64("--threads", optarg, 1, CLI_THREADS_MAX);
			break;
		case OPT_ASYNC:
			o.ckpt_in_flight = optarg ? (unsigned)cli_parse_u64("--async", optarg, 1,
									    SCAR_STORE_ASYNC_MAX) : 1;
			break;
		case OPT_FAILAT:
			o.nfail_at = cli_parse_u64_list("--fail-at", optarg, o.fail_at, SCAR_TRAIN_MAX_FAILS,
							 1, 100000000);
			break;
		case OPT_FAILPROB: o.fail_prob = cli_parse_probability("--fail-prob", optarg); break;
		case OPT_LOSESHARDS:
			/* checked against the shards once they are known (a resume's) */
			cli_parse_shard_list("--lose-shards", optarg, &lose_shards);
			o.lose_mode = SCAR_LOSE_LIST;
			break;
		case OPT_LOSECOUNT:
			o.lose_count = (uint32_t)cli_parse_u64("--lose-count", optarg, 0, SCAR_TRAIN_MAX_LOSE);
			o.lose_mode = SCAR_LOSE_COUNT;
			break;
		case OPT_LOSEFRAC:
			o.lose_fraction = cli_parse_fraction("--lose-fraction", optarg);
			o.lose_mode = SCAR_LOSE_FRACTION;
			break;
		case OPT_FAILSEED:
			o.fail_seed = cli_parse_u64("--fail-seed", optarg, 0, UINT64_MAX);
			seed_given = 1;
			break;
		case OPT_RECOVERY:
			if ((rc = scar_recovery_parse(optarg)) < 0)
				cli_usage_error("unknown recovery '%s' (partial, rebuild, rewind, auto, full, none)", optarg);
			o.recovery = rc;
			recovery_given = 1;
			break;
		case OPT_COST: o.measure_cost = 1; break;
		case OPT_REFERENCE:
			cli_check_path_arg("--reference", optarg, NULL);
			reference_path = optarg;
			o.measure_cost = 1;
			break;
		case OPT_WINDOW: o.cost_window = cli_parse_u64("--cost-window", optarg, 1, 1000000); break;
		case OPT_CAP: o.cost_cap = cli_parse_u64("--cost-cap", optarg, 1, 100000000); break;
		case OPT_RESUME:
			cli_check_path_arg("--resume", optarg, "standard input");
			resume_path = optarg;
			break;
		case OPT_SAVE:
			cli_check_path_arg("--save", optarg, "standard output");
			save = optarg;
			break;
		case OPT_EVENTS:
			cli_check_path_arg("--events", optarg, "standard output");
			events_path = optarg;
			break;
		case OPT_NOTIMING: o.timing = 0; break;
		default:
			json_decref(config);
			fprintf(stderr, "try '%s --help'\n", cli_progname);
			return EXIT_TROUBLE;
		}
	}
	if (optind < argc) {
		char *end;

		/* "scar-train -m ridge 40": the number of iterations without its option */
		if (strtoull(argv[optind], &end, 10), argv[optind][0] && !*end)
			cli_usage_error("unexpected operand '%s' (iterations are given as '-n %s')",
					argv[optind], argv[optind]);
		cli_usage_error("unexpected operand '%s'", argv[optind]);
	}
	if (keys_of || list) {
		json_decref(config);
		if (keys_of)
			list_keys(keys_of, json);
		list_models(json);
	}
	if (json)
		cli_usage_error("option '--json' goes with --list-models or --list-keys");
	if (o.iters == 0 && o.measure_cost)
		cli_usage_error("--cost needs iterations to measure; -n 0 runs none");
	if (shuffle > 0 && !o.ckpt_compress)
		cli_usage_error("--shuffle %s needs compression", scar_shuffle_name(shuffle));
	if (shuffle >= 0)
		o.ckpt_shuffle = shuffle;
	if (o.fail_seed == 0)
		o.fail_seed = 1;
	if (!resume_path && !scar_model_find(model))
		cli_usage_error("unknown model '%s' (see --list-models)", model);

	/* Resume: the checkpoint carries model, config and shard count. */
	if (resume_path) {
		char used[4096];
		size_t skipped = 0;

		if (cli_is_stdio(resume_path))
			cli_refuse_tty_stdin();
		if (model_given || json_object_size(config))
			cli_usage_error("--resume takes model and configuration from the checkpoint");
		if (scar_dist_resume_load(resume_path, &resume, &skipped, used, sizeof(used),
					  resume_skipped, NULL, &err)) {
			cli_warn_error(&err);
			if (err.code == SCAR_EFORMAT)
				cli_hint_not_checkpoint(err.file[0] ? err.file : resume_path, 1);
			exit(EXIT_TROUBLE);
		}
		/*
		 * The checksums say the file is as written, not that its
		 * configuration is one the model takes: the same validation as
		 * --set and --config, naming the file, before anything runs.
		 */
		{
			json_t *valid;

			const char *key;
			json_t *v;

			if (scar_train_check_resume(resume, &valid, &err))
				cli_die("'%s': %s", used, err.msg);
			/* scar writes every key: one missing is an older or edited file */
			json_object_foreach(valid, key, v) {
				if (!json_object_get(resume->config, key) && is_rank0()) {
					char *text = json_dumps(v, JSON_ENCODE_ANY);

					cli_warn("'%s': the checkpoint's configuration has no '%s'; "
						 "resuming with the default %s", used, key,
						 text ? text : "");
					free(text);
				}
			}
			json_decref(resume->config);
			resume->config = valid;
		}
		if (skipped)
			cli_warn("skipped %zu damaged checkpoint%s in '%s'; resuming from '%s'", skipped,
				 skipped == 1 ? "" : "s", resume_path, used);
		if (scar_train_resume_scan(resume_path, resume, skipped, &resume_info, &err))
			cli_die_error(&err);
		/* Survivor files of a real failure newer than the checkpoint (scar-mpi(7)). */
		if (!cli_is_stdio(resume_path) && scar_dist_survivors(resume_path, resume, &survivors, &err))
			cli_die_error(&err);
		/*
		 * Under mpirun every rank read the files itself: all must have read
		 * them before rank 0 takes the directory (which removes them, when
		 * it is -d), and all must have found the same.
		 */
		{
			uint32_t d = (uint32_t)survivors.iter * 2654435761u + (uint32_t)(survivors.iter >> 32);
			int h;

			for (uint32_t k = 0; survivors.lost && k < resume->shards; k++)
				d = d * 31u + survivors.lost[k];
			h = (int)(d & 0x3fffffff);
			if (scar_dist_max_int(h) != -scar_dist_max_int(-h))
				cli_die("the ranks found different survivor files in '%s': is another process writing there?",
					resume_path);
		}
		if (survivors.iter) {
			/* Every rank's file (mpirun itself ended): a whole state, nothing lost. */
			o.resume_lost = survivors.nlost ? survivors.lost : NULL;
			/* The lost shards come back as that run had saved them, whatever -d says. */
			o.resume_view_dir = resume_path;
			/* ... and recovered as it would have recovered them, unless told otherwise. */
			if (!recovery_given && survivors.recovery >= 0)
				o.recovery = survivors.recovery;
			if (is_rank0())
				cli_warn("resuming '%s' from %zu survivor file%s of iteration %llu (a %u-rank run); "
					 "%u shard%s no survivor held restored as after a failure",
					 resume_path, survivors.nfiles, survivors.nfiles == 1 ? "" : "s",
					 (unsigned long long)survivors.iter, survivors.ranks, survivors.nlost,
					 survivors.nlost == 1 ? "" : "s");
		} else if (survivors.why[0] && is_rank0()) {
			cli_warn("resuming '%s' from its newest complete checkpoint '%s': %s", resume_path,
				 used, survivors.why);
		}
		if (resume_info.newer_partial && !survivors.iter && is_rank0())
			cli_warn("resuming '%s' from its newest full checkpoint '%s', iteration %llu: "
				 "passed over %zu partial checkpoint%s of later iterations (%llu to %llu), "
				 "which hold only some parameter rows and no worker state", resume_path,
				 used, (unsigned long long)resume_info.iter, resume_info.newer_partial,
				 resume_info.newer_partial == 1 ? "" : "s",
				 (unsigned long long)resume_info.first_partial,
				 (unsigned long long)resume_info.last_partial);
		o.resume_info = &resume_info;
		/* The checkpoint's schedule goes on, unless the command line says otherwise. */
		{
			struct scar_train_schedule sch;

			if ((rc = scar_train_saved_schedule(resume, &sch, &err)) < 0)
				cli_die("cannot resume from '%s': %s", used, err.msg);
			if (rc) {
				if (!policy_given)
					o.policy = sch.policy;
				if (!interval_given)
					o.interval = sch.interval;
				if (!fraction_given)
					o.fraction = sch.fraction;
				if (!seed_given)
					o.fail_seed = sch.fail_seed;
			}
		}
		if (shards_given && o.shards != resume->shards)
			cli_usage_error("checkpoint has %u shards; --shards %u differs", resume->shards, o.shards);
		o.shards = resume->shards;
		o.resume = resume;
		{
			json_t *ck = json_object_get(resume->extra, "clock");
			uint64_t at = json_is_integer(ck) ? (uint64_t)json_integer_value(ck) : resume->iteration;

			if (o.iters <= at)
				cli_usage_error("checkpoint is at iteration %llu; --iters %llu leaves nothing to do "
						"(with --resume, --iters is the total: give more than %llu)",
						(unsigned long long)at, (unsigned long long)o.iters,
						(unsigned long long)at);
		}
	}
	for (size_t i = 0; i < o.nfail_at; i++)
		if (o.fail_at[i] > o.iters)
			cli_usage_error("option '--fail-at': iteration %llu is after the last (%llu)",
					(unsigned long long)o.fail_at[i], (unsigned long long)o.iters);
	if (o.lose_mode == SCAR_LOSE_LIST)
		o.nlose_list = cli_shard_list_expand("--lose-shards", &lose_shards, o.shards,
						     o.lose_list, SCAR_TRAIN_MAX_LOSE);
	cli_shard_list_free(&lose_shards);
	if (reference_path) {
		FILE *f = open_input(reference_path, &err);
		struct scar_events *ev;

		if (scar_events_read(f, reference_path, &ev, &err))
			cli_die_error(&err);
		fclose(f);
		reference = scar_train_reference_from_events((const json_t *const *)ev->records, ev->n, &err);
		/* Only a usable reference keeps its header: die with nothing held. */
		reference_header = reference && ev->n ? json_incref(ev->records[0]) : NULL;
		scar_events_free(ev);
		if (!reference) {
			snprintf(err.file, sizeof(err.file), "%s", reference_path);
			cli_die_error(&err);
		}
		o.reference = reference;
		o.reference_header = reference_header;
	}
	/*
	 * Create the checkpoint directory (one level, like mkdir) when it is
	 * missing. Under MPI rank 0 creates it while the others wait for its
	 * outcome, and only rank 0 reports a failure.
	 */
	if (o.ckpt_dir) {
		int e = 0;

		/* One rank decides for all (always this one without MPI). */
		if (scar_dist_rank() == 0 && access(o.ckpt_dir, F_OK) != 0 && errno == ENOENT &&
		    mkdir(o.ckpt_dir, 0777) != 0)
			e = errno;
		if ((e = scar_dist_bcast_int(e)) && scar_dist_rank() != 0)
			exit(EXIT_TROUBLE);
		if (e)
			cli_die("cannot create checkpoint directory '%s': %s", o.ckpt_dir, strerror(e));
	}
	if (o.ckpt_dir && access(o.ckpt_dir, W_OK | X_OK) != 0)
		cli_die("cannot write checkpoints into '%s': %s", o.ckpt_dir, strerror(errno));
	/* --save is written after the run: find out before it whether it can be. */
	if (save && !cli_is_stdio(save)) {
		int e = 0;

		if (scar_dist_rank() == 0)
			e = save_path_error(save);
		if ((e = scar_dist_bcast_int(e)) && scar_dist_rank() != 0)
			exit(EXIT_TROUBLE);
		if (e)
			cli_die("cannot write '%s': %s", save, strerror(e));
	}

	if (scar_dist_active() && scar_dist_rank() != 0)
		events_path = NULL;	/* rank 0 writes the events; do not truncate its file */
	if (save && cli_is_stdio(save)) {
		cli_refuse_binary_tty();
		events = NULL;
	}
	if (events_path) {
		if (cli_is_stdio(events_path)) {
			if (!events)
				cli_usage_error("--save - and --events - both want stdout");
			events = stdout;
		} else if (!(events = fopen(events_path, "w"))) {
			cli_die("cannot open '%s': %s", events_path, strerror(errno));
		}
	}
	o.model = model;
	o.config = config;
	o.events = events;
	if (!quiet && cli_progress_ok(events == stdout)) {
		o.progress = progress;
		cli_set_message_hook(bar_clear);
		atexit(bar_at_exit);
	}

	if (scar_dist_active()) {
		rc = scar_dist_train_run(&o, &res, &err);
		if (scar_dist_rank() != 0) {	/* rank 0 reports and saves */
			save = NULL;
			if (rc)
				exit(rc == SCAR_EDIVERGED ? EXIT_DIVERGED : EXIT_TROUBLE);
		}
	} else
		rc = scar_train_run(&o, &res, &err);
	bar_end(rc == 0);
	if (rc) {
		if (rc == SCAR_EDIVERGED) {
			cli_warn_error(&err);
			scar_state_free(resume);
	free(survivors.lost);
			json_decref(reference);
			json_decref(reference_header);
			json_decref(config);
			return EXIT_DIVERGED;
		}
		/* The library cannot name the event stream; this is where it is known. */
		if (rc == SCAR_EIO && !err.file[0] && events && ferror(events) &&
		    err.errno_value != EPIPE)
			cli_die("cannot write '%s': %s", events == stdout ? "(stdout)" : events_path,
				strerror(err.errno_value));
		cli_die_error(&err);
	}
	if (save) {
		struct scar_ckpt_save_opts so;

		/* As the run's checkpoints: --no-compress, --no-sync and --shuffle hold here too. */
		scar_ckpt_save_opts_init(&so);
		so.compress = o.ckpt_compress;
		so.shuffle = o.ckpt_shuffle;
		so.sync = o.ckpt_sync;
		so.threads = o.ckpt_threads;
		if (cli_is_stdio(save)) {
			fflush(stdout);
			rc = scar_ckpt_write_fd(res.final_state, STDOUT_FILENO, "(stdout)", &so, &err);
		} else {
			rc = scar_ckpt_save(res.final_state, save, &so, &err);
		}
		if (rc)
			cli_die_error(&err);
	}
	if (events && events != stdout && fclose(events) != 0)
		cli_die("cannot write '%s': %s", events_path, strerror(errno));
	scar_state_free(res.final_state);
	scar_state_free(resume);
	free(survivors.lost);
	json_decref(reference);
	json_decref(reference_header);
	json_decref(config);
	return 0;
}
