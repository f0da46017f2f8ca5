/*
 * scar-inject - perturb a checkpoint: lose shards and reset their rows, add
 * noise of an exact norm, flip bits, reduce precision, mix in an older
 * checkpoint. Reads IN (default stdin), writes OUT (default stdout) with
 * every state tensor kept, so scar-train can resume from it, and reports
 * what it did with ||OUT - IN|| as JSON on stderr (none with -q) or to
 * --report FILE ('-': stdout, when OUT is a file).
 * The work is in scar/perturb.h; delta_norm comes from scar/diff.h, the same
 * code scar-diff measures with.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>
#include <sys/stat.h>

#include "scar/arrayfile.h"
#include "scar/ckpt.h"
#include "scar/diff.h"
#include "scar/file.h"
#include "scar/model.h"
#include "scar/perturb.h"
#include "scar/shard.h"
#include "cli.h"
#include "options.h"

enum {
	OPT_BITFLIP_COUNT = 256, OPT_BITFLIP_RATE, OPT_BITS, OPT_LOSE_COUNT, OPT_LOSE_FRACTION,
	OPT_LOSE_SHARDS, OPT_MIX, OPT_NOISE_L2, OPT_NOISE_REL, OPT_QUANTIZE, OPT_REPORT,
	OPT_RESET, OPT_ROWS, OPT_SEED, OPT_SHARD, OPT_SHARDS, OPT_SHUFFLE, OPT_STALE, OPT_TENSOR,
};

static const struct option opts[] = {
	{ "bitflip-count", required_argument, NULL, OPT_BITFLIP_COUNT },
	{ "bitflip-rate", required_argument, NULL, OPT_BITFLIP_RATE },
	{ "bits", required_argument, NULL, OPT_BITS },
	{ "help", no_argument, NULL, 'h' },
	{ "lose-count", required_argument, NULL, OPT_LOSE_COUNT },
	{ "lose-fraction", required_argument, NULL, OPT_LOSE_FRACTION },
	{ "lose-shards", required_argument, NULL, OPT_LOSE_SHARDS },
	{ "mix", required_argument, NULL, OPT_MIX },
	{ "noise-l2", required_argument, NULL, OPT_NOISE_L2 },
	{ "noise-rel", required_argument, NULL, OPT_NOISE_REL },
	{ "quiet", no_argument, NULL, 'q' },
	{ "quantize", required_argument, NULL, OPT_QUANTIZE },
	{ "report", required_argument, NULL, OPT_REPORT },
	{ "reset", required_argument, NULL, OPT_RESET },
	{ "rows", required_argument, NULL, OPT_ROWS },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "shard", required_argument, NULL, OPT_SHARD },
	{ "shards", required_argument, NULL, OPT_SHARDS },
	{ "shuffle", required_argument, NULL, OPT_SHUFFLE },
	{ "stale", required_argument, NULL, OPT_STALE },
	{ "tensor", required_argument, NULL, OPT_TENSOR },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: scar-inject [--bitflip-count N | --bitflip-rate P] [--bits CLASS]\n"
		"                   [--lose-count N | --lose-fraction F | --lose-shards LIST]\n"
		"                   [--mix A] [--noise-l2 X | --noise-rel R] [--quantize FMT] [-q]\n"
		"                   [--report FILE] [--reset HOW] [--rows A:B] [--seed N]\n"
		"                   [--shard N] [--shards S] [--shuffle WHEN] [--stale OLD]\n"
		"                   [--tensor NAME] [IN [OUT]]\n"
		"\n"
		"Perturb checkpoint IN (default stdin) into OUT (default stdout) in exactly one\n"
		"way, and report it with delta_norm = ||OUT - IN|| as JSON on stderr\n"
		"(-q: not at all; --report FILE: there instead).\n"
		"IN may be a safetensors or .npy snapshot (a file), or a Hugging Face sharded\n"
		"directory (or its *.safetensors.index.json): then lose shards of it\n"
		"(--shards S) and zero them or restore them from another snapshot\n"
		"(--reset from=OLD); OUT is written in IN's format, every other byte kept\n"
		"(for a sharded IN, OUT is a directory of the same layout).\n"
		"\n"
		"      --bitflip-count N    flip exactly N distinct bits\n"
		"      --bitflip-rate P     flip each eligible bit with probability P\n"
		"      --bits CLASS         which bits flip: any (default), sign, exponent, mantissa\n"
		"  -h, --help               show this help and exit\n"
		"      --lose-count N       lose N shards chosen by --seed\n"
		"      --lose-fraction F    lose a fraction F of the shards (at least one)\n"
		"      --lose-shards LIST   lose these shards (e.g. 0,3,5-7)\n"
		"      --mix A              with --stale: x = (1-A) x + A old (default 1)\n"
		"      --noise-l2 X         add Gaussian noise of L2 norm exactly X\n"
		"      --noise-rel R        add Gaussian noise of norm R times the selection's norm\n"
		"  -q, --quiet              no report on stderr (errors still go there)\n"
		"      --quantize FMT       round through f16, bf16 or int8 (per-row scale)\n"
		"      --report FILE        write the JSON report to FILE instead of stderr\n"
		"                           ('-': stdout, when OUT is a file)\n"
		"      --reset HOW          lost rows become: zero (default), random, init,\n"
		"                           or from=OLD (the rows of checkpoint OLD)\n"
		"      --rows A:B           only rows A..B-1 (either end may be left out)\n"
		"      --seed N             seed of every random choice (default 1)\n"
		"      --shard N            only the rows of shard N\n"
		"      --shards S           a snapshot's shard count: row r is in shard r mod S\n"
		"      --shuffle WHEN       byte-shuffle OUT's sections before LZ4: off (default),\n"
		"                           on, or auto (each section, when it compresses better)\n"
		"      --stale OLD          mix the selected rows with checkpoint OLD's\n"
		"      --tensor NAME        only this tensor (default: every parameter tensor)\n"
		"  -V, --version            show the version and exit\n");
}

enum kind { K_NONE, K_LOSE, K_NOISE, K_BITFLIP, K_QUANT, K_STALE };
static const char *const kind_names[] = { "none", "lose", "noise", "bitflip", "quantize", "stale" };

struct args {
	enum kind kind;
	const char *kind_opt;
	struct cli_shard_list lose_list;
	int have_lose_list;
	uint64_t lose_count;
	double lose_fraction;
	const char *reset;
	double noise_l2, noise_rel;
	int noise_is_rel;
	double bit_rate;
	uint64_t bit_count;
	int bit_is_count;
	const char *bits;
	const char *quant;
	const char *stale;
	double mix;
	int have_mix;
	uint64_t seed;
	int have_seed;
	struct scar_select sel;
	const char *report;	/* NULL: stderr; "-": stdout */
	int quiet;		/* no report on stderr */
	uint32_t shards;	/* --shards, 0 when not given */
	int shuffle;		/* --shuffle, -1 when not given */
};

static void set_kind(struct args *a, enum kind k, const char *opt)
{
	if (a->kind != K_NONE && (a->kind != k || strcmp(a->kind_opt, opt) != 0))
		cli_usage_error("'%s' and '%s' exclude each other: give one perturbation "
				"(pipe scar-inject into itself to combine)", a->kind_opt, opt);
	a->kind = k;
	a->kind_opt = opt;
}

static struct scar_state *load(const char *path)
{
	struct scar_state *st = NULL;
	struct scar_error err;

	scar_error_clear(&err);
	if (scar_ckpt_load(path, &st, &err) < 0)
		cli_die_error(&err);
	return st;
}

/*
 * The iteration-0 state of the checkpoint's model under another seed. Its
 * configuration goes through the one validation a resume and --set use
 * (scar_model_configure): a value the model would refuse is named here.
 */
static struct scar_state *initial_state(const struct scar_state *st, uint64_t seed,
					const char *name)
{
	const struct scar_model_def *def = scar_model_find(st->model);
	struct scar_model *m = NULL;
	struct scar_state *init = NULL;
	struct scar_error err;
	json_t *config, *valid;

	if (!def)
		cli_die("cannot draw initial rows: unknown model '%s' (use --reset zero, random "
			"or from=OLD)", st->model[0] ? st->model : "(none)");
	scar_error_clear(&err);
	if (scar_model_configure(st->model, st->config, NULL, &err) < 0)
		cli_die("'%s': checkpoint metadata: %s", cli_is_stdio(name) ? "(stdin)" : name,
			err.msg);
	config = json_deep_copy(st->config);
	if (!config || json_object_set_new(config, "seed", json_integer((json_int_t)seed)) < 0)
		cli_die("out of memory");
	if (scar_model_configure(st->model, config, &valid, &err) < 0)
		cli_die("option '--seed': %s", err.msg);
	json_decref(config);
	if (def->create(&m, valid, &err) < 0 || scar_state_new(&init, st->model, &err) < 0)
		cli_die_error(&err);
	json_decref(init->config);
	init->config = valid;
	init->shards = st->shards;
	if (def->init_state(m, init, &err) < 0)
		cli_die_error(&err);
	def->free(m);
	return init;
}

static json_t *select_json(const struct scar_select *sel)
{
	json_t *o = json_object();

	json_object_set_new(o, "tensor", sel->tensor ? json_string(sel->tensor) : json_null());
	json_object_set_new(o, "shard", sel->shard >= 0 ? json_integer(sel->shard) : json_null());
	json_object_set_new(o, "rows", json_pack("[I,o]", (json_int_t)sel->row_lo,
						 sel->row_hi == UINT64_MAX ? json_null() :
						 json_integer((json_int_t)sel->row_hi)));
	return o;
}

static void record(struct scar_state *st, json_t *what)
{
	json_t *log = json_object_get(st->extra, "injections");

	if (!json_is_array(log)) {
		log = json_array();
		json_object_set_new(st->extra, "injections", log);
	}
	json_array_append(log, what);
}

/*
 * Write the report to path, to stdout when path is "-", or to stderr when
 * path is NULL; any failure dies (exit 2), saying whether OUT was written
 * (done). Returns 1 when path is a regular file (removed again if the
 * checkpoint cannot be written).
 */
static int write_report(json_t *j, const char *path, int done)
{
	int std = !path || cli_is_stdio(path);
	FILE *f = !path ? stderr : std ? stdout : fopen(path, "w");
	const char *name = !path ? "(stderr)" : std ? "(stdout)" : path;
	struct stat sb;
	int regular, bad;

	errno = 0;
	if (!f)
		cli_die("cannot write report '%s': %s; the checkpoint was not written", name,
			strerror(errno));
	regular = !std && fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode);
	bad = json_dumpf(j, f, JSON_COMPACT) < 0;
	bad |= fputc('\n', f) == EOF;
	bad |= fflush(f) == EOF;
	bad |= ferror(f) != 0;
	if (!std)
		bad |= fclose(f) != 0;
	if (bad) {
		if (regular)
			(void)unlink(path);
		cli_die("cannot write report '%s': %s; the checkpoint was %s", name,
			errno ? strerror(errno) : "write error", done ? "written" : "not written");
	}
	return regular;
}


/*
 * The shards a lose perturbation loses, of S (calloc'd flags): the listed
 * ones, or a count or fraction of them drawn from rng. One choice for
 * checkpoints and snapshots alike.
 */
static uint8_t *pick_lost(struct args *a, uint32_t S, struct scar_rng *rng)
{
	struct scar_error err;
	uint64_t n = a->lose_count;
	uint8_t *lost;

	scar_error_clear(&err);
	/* usage errors first, before anything is allocated */
	if (!a->have_lose_list) {
		if (!n) {
			n = (uint64_t)llround(a->lose_fraction * S);
			n = n < 1 ? 1 : n;
		}
		if (scar_shards_check(NULL, 0, n > UINT32_MAX ? UINT32_MAX : (uint32_t)n, S, &err) < 0)
			cli_usage_error("option '%s': %s", a->kind_opt, err.msg);
	}
	if (a->have_lose_list) {
		uint32_t *v = malloc(S * sizeof(*v));
		size_t k;

		if (!v)
			cli_die("out of memory");
		k = cli_shard_list_expand("--lose-shards", &a->lose_list, S, v, S);
		if (!(lost = calloc(S, 1)))
			cli_die("out of memory");
		for (size_t i = 0; i < k; i++)
			lost[v[i]] = 1;
		free(v);
		cli_shard_list_free(&a->lose_list);
		return lost;
	}
	if (!(lost = calloc(S, 1)))
		cli_die("out of memory");
	if (scar_perturb_pick_shards(S, (uint32_t)n, rng, lost, &err) < 0) {
		cli_die_error(&err);
	}
	return lost;
}

/*
 * ||OUT - IN|| as scar-diff measures it, computed in memory (OUT may be
 * stdout, or IN itself): IN and the donor read as scar-diff reads them
 * (narrow integer types widened), the lost rows of IN replaced by the donor's (a
 * .npy file's one array matches whatever its name) or zeroed. NAN when a
 * file cannot be read that way.
 */
static double snapshot_delta(const char *in, const char *donor, const char *tensor,
			     const uint8_t *lost, uint32_t S, double *norm_a)
{
	struct scar_state *x = NULL, *y = NULL, *d = NULL;
	struct scar_diff_result *r = NULL;
	struct scar_diff_opts o;
	struct scar_error err;
	double v = NAN;

	*norm_a = NAN;
	scar_error_clear(&err);
	scar_diff_opts_init(&o);
	o.top_k = 0;
	if (scar_array_load(in, &x, &err) || scar_state_clone(&y, x, &err) ||
	    (donor && scar_array_load(donor, &d, &err)))
		goto out;
	for (size_t i = 0; i < y->ntensors; i++) {
		struct scar_tensor *t = y->tensors[i];
		const struct scar_tensor *u = d ? (d->ntensors == 1 && x->ntensors == 1 ? d->tensors[0] :
						   scar_state_find(d, t->name)) : NULL;
		uint64_t rows = scar_tensor_rows(t);
		size_t rb = scar_tensor_row_bytes(t);

		if ((tensor && strcmp(tensor, t->name)) || (d && (!u || !scar_tensor_same_layout(t, u))))
			continue;
		for (uint64_t rr = 0; rr < rows; rr++)
			if (lost[scar_shard_of_row(rr, S)]) {
				if (u)
					memcpy(scar_tensor_row(t, rr), scar_tensor_row(u, rr), rb);
				else
					memset(scar_tensor_row(t, rr), 0, rb);
			}
	}
	if (scar_diff_states(x, y, &o, &r, &err) == 0) {
		v = r->total.l2;
		*norm_a = r->total.norm_a;
	}
out:
	scar_diff_result_free(r);
	scar_state_free(x);
	scar_state_free(y);
	scar_state_free(d);
	return v;
}

/*
 * Is directory dir a run directory of scar-ckpt save (its saved view is
 * there) rather than a sharded snapshot (its index is)? One with neither
 * is a run directory, for view_donor's message, unless it names itself
 * as an index.
 */
static int is_run_dir(const char *dir)
{
	char path[4096];
	struct dirent *de;
	DIR *d;
	int index = 0;

	if (snprintf(path, sizeof(path), "%s/.scar-view.ckpt", dir) >= (int)sizeof(path) ||
	    access(path, F_OK) == 0)
		return 1;
	if (!(d = opendir(dir)))
		return 1;
	while (!index && (de = readdir(d))) {
		size_t n = strlen(de->d_name), m = strlen(".safetensors.index.json");

		index = n > m && !strcmp(de->d_name + n - m, ".safetensors.index.json");
	}
	closedir(d);
	return !index;
}

/*
 * The saved view of run directory dir (dir/.scar-view.ckpt, which scar-ckpt
 * save keeps) as a temporary file in the format of snapshot in, for the
 * byte-level restore; *tmp its name, removed by scar_tmp_done or at exit.
 */
static void view_donor(const char *dir, const char *in, char **tmp)
{
	char path[4096];
	struct scar_state *view = NULL;
	struct scar_error err;
	const char *t = getenv("TMPDIR");
	int fd, npy;

	scar_error_clear(&err);
	if (snprintf(path, sizeof(path), "%s/.scar-view.ckpt", dir) >= (int)sizeof(path))
		cli_die("'%s': directory name too long", dir);
	if (access(path, F_OK) != 0)
		cli_die("'%s' has no saved view (.scar-view.ckpt, kept by scar-ckpt save): make one with "
			"scar-ckpt apply and export it; nor is it a sharded safetensors snapshot (no "
			"*.safetensors.index.json)", dir);
	if (scar_ckpt_load(path, &view, &err) < 0)
		cli_die_error(&err);
	npy = scar_array_sniff_file(in) == SCAR_ARRAY_NPY;
	snprintf(path, sizeof(path), "%s/scar-view", t && *t ? t : "/tmp");
	if ((fd = scar_tmp_create(path, tmp, &err)) < 0)
		cli_die_error(&err);
	if (npy) {
		size_t k, np = 0;

		for (k = 0; k < view->ntensors; k++)
			np += view->tensors[k]->role == SCAR_ROLE_PARAM;
		if (np != 1)
			cli_die("'%s' holds %zu parameter tensors: not the view of a .npy snapshot", dir, np);
		for (k = 0; view->tensors[k]->role != SCAR_ROLE_PARAM; k++)
			;
		if (scar_npy_write_fd(fd, *tmp, view->tensors[k], 0, &err) < 0)
			cli_die_error(&err);
	} else if (scar_safetensors_write_fd(fd, *tmp, view, SCAR_ROLE_PARAM, NULL, &err) < 0) {
		cli_die_error(&err);
	}
	if (close(fd) < 0)
		cli_die("cannot write '%s': %s", *tmp, strerror(errno));
	scar_state_free(view);
}

/*
 * A safetensors or .npy snapshot of any trainer: lose shards and zero their
 * rows or restore them from another snapshot, byte for byte
 * (scar_array_lose_rows); OUT in IN's format.
 */
static int inject_snapshot(struct args *a, const char *in, const char *out)
{
	const char *reset = a->reset ? a->reset : "zero", *donor = NULL;
	char *tmp = NULL;
	struct stat sb;
	struct scar_error err;
	struct scar_rng rng;
	uint64_t rows, tensors;
	uint8_t *lost;
	double delta, norm_a;
	json_t *j, *ls;
	uint32_t S = a->shards;
	int sharded = scar_array_is_sharded(in);

	if (a->kind != K_LOSE)
		cli_usage_error("'%s' is a safetensors or .npy snapshot: only --lose-shards, "
				"--lose-count or --lose-fraction apply to it", in);
	if (strcmp(reset, "zero") && strncmp(reset, "from=", 5))
		cli_usage_error("'%s' is a snapshot: --reset zero or from=SNAPSHOT, not '%s'", in,
				reset);
	if (a->shuffle >= 0)
		cli_usage_error("'%s' is a snapshot, written back in its own format: --shuffle is "
				"for checkpoints", in);
	if (!S)
		cli_usage_error("'%s' is a snapshot, which has no shard count: give --shards S "
				"(row r of a tensor is in shard r mod S)", in);
	if (a->sel.row_lo || a->sel.row_hi != UINT64_MAX || a->sel.shard >= 0)
		cli_usage_error("--rows and --shard do not apply to a snapshot; --tensor does");
	if (cli_is_stdio(out))
		cli_refuse_binary_tty();
	if (!strncmp(reset, "from=", 5))
		donor = reset + 5;
	if (sharded && cli_is_stdio(out))
		cli_usage_error("'%s' is a sharded snapshot: give OUT, the directory to write it to",
				in);
	if (donor && stat(donor, &sb) == 0 && S_ISDIR(sb.st_mode) && is_run_dir(donor)) {
		/* a run directory of scar-ckpt save: its saved view (else a sharded snapshot) */
		view_donor(donor, in, &tmp);
		donor = tmp;
	}
	ls = json_array();
	if (!ls)
		cli_die("out of memory");
	scar_error_clear(&err);
	scar_rng_seed(&rng, a->seed);
	lost = pick_lost(a, S, &rng);
	/* before the write: OUT may be IN */
	delta = snapshot_delta(in, donor, a->sel.tensor, lost, S, &norm_a);
	if (scar_array_lose_rows(in, donor, a->sel.tensor, lost, S, out, 1, &rows, &tensors, &err)) {
		if (tmp && err.code == SCAR_EMISMATCH)
			cli_die("the saved view of '%s' does not fit '%s' (%s): from=DIR restores the "
				"tensors the view holds in the snapshot's dtypes and shapes", reset + 5, in,
				err.msg);
		cli_die_error(&err);
	}
	if (tmp)
		scar_tmp_done(tmp, 1);
	for (uint32_t s = 0; s < S; s++)
		if (lost[s])
			json_array_append_new(ls, json_integer(s));
	/* ||OUT - IN|| as scar-diff measures it (narrow integer types widened as read) */
	j = json_pack("{s:s, s:s, s:s, s:I, s:I, s:o, s:s, s:I, s:I, s:o, s:o}", "type", "inject",
		      "kind", "lose", "input_format", "snapshot", "seed", (json_int_t)a->seed,
		      "shards", (json_int_t)S, "shards_lost", ls, "reset", reset,
		      "tensors_touched", (json_int_t)tensors, "rows_touched", (json_int_t)rows,
		      "delta_norm", isnan(delta) ? json_null() : json_real(delta),
		      "rel_delta_norm", isnan(delta) || !(norm_a > 0) ? json_null() : json_real(delta / norm_a));
	if (!j)
		cli_die("out of memory");
	if (a->report || !a->quiet)
		write_report(j, a->report, 1);
	json_decref(j);
	free(lost);
	return 0;
}

int main(int argc, char **argv)
{
	struct args a;
	struct scar_state *st, *orig, *other = NULL;
	struct scar_perturb_report rep;
	struct scar_diff_result *dp = NULL, *da = NULL;
	struct scar_diff_opts dopt;
	struct scar_ckpt_save_opts so;
	struct scar_error err;
	struct scar_rng rng;
	const char *in = "-", *out = "-";
	json_t *j, *what;
	uint8_t *lost = NULL;
	double achieved = 0, target = 0, in_norm;
	int c, rc = 0, report_regular;

	cli_init(argv[0]);
	/* The input is kept, perturbed, compared and written: about 4 copies (scar-inject(1)). */
	scar_ckpt_set_memory_factor(4);
	memset(&a, 0, sizeof(a));
	a.seed = 1;
	a.mix = 1;
	a.shuffle = -1;
	scar_select_init(&a.sel);
	while ((c = getopt_long(argc, argv, "hqV", opts, NULL)) != -1) {
		switch (c) {
		case OPT_BITFLIP_COUNT:
			set_kind(&a, K_BITFLIP, "--bitflip-count");
			a.bit_count = cli_parse_u64("--bitflip-count", optarg, 0, UINT64_MAX / 2);
			a.bit_is_count = 1;
			break;
		case OPT_BITFLIP_RATE:
			set_kind(&a, K_BITFLIP, "--bitflip-rate");
			a.bit_rate = cli_parse_probability("--bitflip-rate", optarg);
			break;
		case OPT_BITS:
			if (!scar_bits_parse(optarg))
				cli_usage_error("option '--bits': '%s' is not any, sign, exponent or "
						"mantissa", optarg);
			a.bits = optarg;
			break;
		case 'h': usage(stdout); return 0;
		case OPT_LOSE_COUNT:
			set_kind(&a, K_LOSE, "--lose-count");
			a.lose_count = cli_parse_u64("--lose-count", optarg, 1, UINT32_MAX);
			break;
		case OPT_LOSE_FRACTION:
			set_kind(&a, K_LOSE, "--lose-fraction");
			a.lose_fraction = cli_parse_fraction("--lose-fraction", optarg);
			break;
		case OPT_LOSE_SHARDS:
			set_kind(&a, K_LOSE, "--lose-shards");
			/* now, not after reading the input: a usage error costs no I/O */
			cli_parse_shard_list("--lose-shards", optarg, &a.lose_list);
			a.have_lose_list = 1;
			break;
		case OPT_MIX:
			a.mix = cli_parse_double("--mix", optarg, 0, 1);
			a.have_mix = 1;
			break;
		case OPT_NOISE_L2:
			set_kind(&a, K_NOISE, "--noise-l2");
			a.noise_l2 = cli_parse_double("--noise-l2", optarg, 0, 1e300);
			break;
		case OPT_NOISE_REL:
			set_kind(&a, K_NOISE, "--noise-rel");
			a.noise_rel = cli_parse_double("--noise-rel", optarg, 0, 1e300);
			a.noise_is_rel = 1;
			break;
		case OPT_QUANTIZE:
			set_kind(&a, K_QUANT, "--quantize");
			if (!scar_quant_parse(optarg))
				cli_usage_error("option '--quantize': '%s' is not f16, bf16 or int8", optarg);
			a.quant = optarg;
			break;
		case 'q': a.quiet = 1; break;
		case OPT_REPORT: a.report = optarg; break;
		case OPT_RESET:
			if (strcmp(optarg, "zero") && strcmp(optarg, "random") && strcmp(optarg, "init") &&
			    (strncmp(optarg, "from=", 5) || !optarg[5]))
				cli_usage_error("option '--reset': '%s' is not zero, random, init or "
						"from=OLD", optarg);
			a.reset = optarg;
			break;
		case OPT_ROWS: cli_parse_rows("--rows", optarg, &a.sel.row_lo, &a.sel.row_hi); break;
		case OPT_SEED:
			a.seed = cli_parse_u64("--seed", optarg, 0, UINT64_MAX);
			a.have_seed = 1;
			break;
		case OPT_SHARD:
			a.sel.shard = cli_parse_shard("--shard", optarg);
			break;
		case OPT_SHARDS:
			a.shards = (uint32_t)cli_parse_u64("--shards", optarg, 1, SCAR_MAX_SHARDS);
			break;
		case OPT_STALE:
			set_kind(&a, K_STALE, "--stale");
			a.stale = optarg;
			break;
		case OPT_SHUFFLE: a.shuffle = cli_parse_shuffle("--shuffle", optarg); break;
		case OPT_TENSOR: a.sel.tensor = optarg; break;
		case 'V': cli_version();
		default: usage(stderr); return EXIT_TROUBLE;
		}
	}
	if (a.kind == K_NONE)
		cli_usage_error("nothing to do: give one perturbation (--lose-*, --noise-*, "
				"--bitflip-*, --quantize or --stale)");
	if (a.reset && a.kind != K_LOSE)
		cli_usage_error("--reset goes with --lose-shards, --lose-count or --lose-fraction");
	if (a.bits && a.kind != K_BITFLIP)
		cli_usage_error("--bits goes with --bitflip-rate or --bitflip-count");
	if (a.have_mix && a.kind != K_STALE)
		cli_usage_error("--mix goes with --stale");
	if (argc - optind > 2)
		cli_usage_error("too many operands");
	if (optind < argc)
		in = argv[optind];
	if (optind + 1 < argc)
		out = argv[optind + 1];
	if (cli_is_stdio(in))
		cli_refuse_tty_stdin();
	if (cli_is_stdio(out))
		cli_refuse_binary_tty();
	if (a.report && cli_is_stdio(a.report) && cli_is_stdio(out))
		cli_usage_error("--report - and OUT on standard output would mix JSON into the "
				"checkpoint: give OUT a file name, or --report FILE");
	/* standard input holds one checkpoint: two operands cannot both read it */
	{
		const char *second = a.stale ? a.stale :
			a.reset && strncmp(a.reset, "from=", 5) == 0 ? a.reset + 5 : NULL;

		if (second && cli_is_stdio(in) && cli_is_stdio(second))
			cli_usage_error("%s and the input cannot both be standard input",
					a.stale ? "--stale" : "--reset from=");
	}

	scar_error_clear(&err);
	/* a directory, or an index file: a sharded safetensors snapshot (its reader says if not) */
	if (scar_array_is_sharded(in))
		return inject_snapshot(&a, in, out);
	if (scar_ckpt_load(in, &st, &err) < 0) {
		/* a snapshot, asked once the checkpoint reader found none: a checkpoint is read as always */
		if (err.code == SCAR_EFORMAT && scar_array_sniff_file(in))
			return inject_snapshot(&a, in, out);
		cli_die_error(&err);
	}
	scar_error_clear(&err);
	if (a.shards && a.shards != st->shards)
		cli_usage_error("option '--shards': %u is not the checkpoint's %u (it says its own)",
				(unsigned)a.shards, (unsigned)st->shards);
	if (scar_state_clone(&orig, st, &err) < 0)
		cli_die_error(&err);
	scar_rng_seed(&rng, a.seed);
	what = json_pack("{s:s, s:s, s:I, s:o}", "type", "inject", "kind", kind_names[a.kind],
			 "seed", (json_int_t)a.seed, "select", select_json(&a.sel));
	if (!what)
		cli_die("out of memory");
	if (scar_select_check(st, &a.sel, &err) < 0)
		cli_die("%s in '%s'", err.msg, in);

	switch (a.kind) {
	case K_LOSE: {
		uint32_t S = st->shards ? st->shards : 1;
		const char *reset = a.reset ? a.reset : "zero";
		enum scar_reset how = SCAR_RESET_ZERO;
		json_t *ls = json_array();

		if (!ls)
			cli_die("out of memory");
		lost = pick_lost(&a, S, &rng);
		if (strcmp(reset, "random") == 0) {
			how = SCAR_RESET_RANDOM;
		} else if (strcmp(reset, "init") == 0) {
			how = SCAR_RESET_FROM;
			other = initial_state(st, a.seed, in);
		} else if (strncmp(reset, "from=", 5) == 0) {
			how = SCAR_RESET_FROM;
			other = load(reset + 5);
		}
		rc = scar_perturb_lose(st, &a.sel, lost, how, other, &rng, &rep, &err);
		for (uint32_t s = 0; s < S; s++)
			if (lost[s])
				json_array_append_new(ls, json_integer(s));
		json_object_set_new(what, "shards_lost", ls);
		json_object_set_new(what, "reset", json_string(reset));
		break;
	}
	case K_NOISE:
		target = a.noise_l2;
		if (a.noise_is_rel) {
			target = a.noise_rel * scar_perturb_norm(st, &a.sel);
			json_object_set_new(what, "noise_rel", json_real(a.noise_rel));
		}
		json_object_set_new(what, "noise_l2", json_real(target));
		rc = scar_perturb_noise(st, &a.sel, target, &rng, &achieved, &rep, &err);
		break;
	case K_BITFLIP: {
		enum scar_bits bits = a.bits ? scar_bits_parse(a.bits) : SCAR_BITS_ANY;

		json_object_set_new(what, "bits", json_string(scar_bits_name(bits)));
		if (a.bit_is_count) {
			json_object_set_new(what, "count", json_integer((json_int_t)a.bit_count));
			rc = scar_perturb_bitflip_count(st, &a.sel, bits, a.bit_count, &rng, &rep, &err);
		} else {
			json_object_set_new(what, "rate", json_real(a.bit_rate));
			rc = scar_perturb_bitflip_rate(st, &a.sel, bits, a.bit_rate, &rng, &rep, &err);
		}
		json_object_set_new(what, "bits_flipped", json_integer((json_int_t)rep.bits));
		break;
	}
	case K_QUANT:
		json_object_set_new(what, "format", json_string(a.quant));
		rc = scar_perturb_quantize(st, &a.sel, scar_quant_parse(a.quant), &rep, &err);
		break;
	case K_STALE:
		other = load(a.stale);
		json_object_set_new(what, "stale", json_string(a.stale));
		json_object_set_new(what, "stale_iteration", json_integer((json_int_t)other->iteration));
		json_object_set_new(what, "mix", json_real(a.mix));
		rc = scar_perturb_mix(st, &a.sel, other, a.mix, &rep, &err);
		break;
	case K_NONE:
		break;
	}
	if (rc < 0)
		cli_die_error(&err);

	/* ||OUT - IN|| exactly as scar-diff measures it: param tensors, same code */
	scar_diff_opts_init(&dopt);
	dopt.top_k = 0;
	if (scar_diff_states(orig, st, &dopt, &dp, &err) < 0)
		cli_die_error(&err);
	dopt.all = 1;
	if (scar_diff_states(orig, st, &dopt, &da, &err) < 0)
		cli_die_error(&err);
	in_norm = dp->total.norm_a;
	json_object_set_new(what, "tensors_touched", json_integer((json_int_t)rep.tensors));
	json_object_set_new(what, "rows_touched", json_integer((json_int_t)rep.rows));
	json_object_set_new(what, "elements_touched", json_integer((json_int_t)rep.elements));
	if (rep.skipped)
		json_object_set_new(what, "rows_skipped", json_integer((json_int_t)rep.skipped));
	json_object_set_new(what, "delta_norm", isfinite(dp->total.l2) ?
			    json_real(dp->total.l2) : json_null());
	json_object_set_new(what, "rel_delta_norm", isfinite(dp->total.l2 / in_norm) ?
			    json_real(in_norm > 0 ? dp->total.l2 / in_norm : 0) : json_null());
	json_object_set_new(what, "changed", json_integer((json_int_t)da->total.changed));
	record(st, what);

	j = json_pack("{s:s, s:i}", "type", "inject", "version", 1);
	if (!j || json_object_update(j, what) < 0)
		cli_die("out of memory");
	json_object_set_new(j, "input", json_string(in));
	json_object_set_new(j, "output", json_string(out));
	json_object_set_new(j, "model", json_string(st->model));
	json_object_set_new(j, "iteration", json_integer((json_int_t)st->iteration));
	{
		json_t *ts = json_array();

		for (size_t i = 0; i < da->ntensors; i++) {
			const struct scar_diff_tensor *t = &da->tensors[i];

			if (!t->n.changed)
				continue;
			json_array_append_new(ts, json_pack("{s:s, s:s, s:o, s:I}", "name", t->name,
							    "role", scar_role_name(t->role), "l2",
							    isfinite(t->n.l2) ? json_real(t->n.l2) :
							    json_null(), "changed",
							    (json_int_t)t->n.changed));
		}
		json_object_set_new(j, "tensors", ts);
	}

	/*
	 * A report file first, then the checkpoint: a failure to write either
	 * leaves neither (exit 2: OUT was not written). A report on stderr or
	 * stdout comes last, after any error message and only for a written
	 * checkpoint; if that stream fails it is exit 2 with the checkpoint
	 * written (scar-inject(1), EXIT STATUS).
	 */
	report_regular = a.report && !cli_is_stdio(a.report) ? write_report(j, a.report, 0) : 0;
	scar_ckpt_save_opts_init(&so);
	if (a.shuffle >= 0)
		so.shuffle = a.shuffle;
	if (scar_ckpt_save(st, out, &so, &err) < 0) {
		if (report_regular)
			(void)unlink(a.report);
		cli_die_error(&err);
	}
	if (a.report ? cli_is_stdio(a.report) : !a.quiet)
		write_report(j, a.report, 1);
	json_decref(j);
	json_decref(what);
	scar_diff_result_free(dp);
	scar_diff_result_free(da);
	scar_state_free(st);
	scar_state_free(orig);
	scar_state_free(other);
	free(lost);
	return 0;
}
