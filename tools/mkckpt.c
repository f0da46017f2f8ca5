/*
 * mkckpt - make a test checkpoint of a given size, shard count and dtype
 * through the public API, for the scar-ckpt tests and bench/bench-ckpt.sh.
 *
 * Parameters are gaussian N(0, 0.02^2) (floats; integers are uniform in
 * [0, 1000)), like trained weights: near-incompressible mantissas, which is
 * the honest case for a codec. The same options and seed give the same bytes.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scar/ckpt.h"
#include "scar/rng.h"
#include "scar/tensor.h"

static const char usage[] =
	"usage: mkckpt [--bytes N[K|M|G]] [--cols C] [--dtype T] [--help] [--iteration N]\n"
	"              [--level N] [--model M] [--no-compress] [--no-state] [--no-sync]\n"
	"              [--present A:B] [--raw FILE] [--seed N] [--shards S]\n"
	"              [--shuffle off|on|auto] [--tensors N] [--threads N] [--time] [OUT | -]\n"
	"Write a checkpoint of gaussian parameters to OUT; --raw also (or only)\n"
	"writes the parameter bytes, tensor after tensor, to FILE. --time prints\n"
	"the seconds the checkpoint write took to stderr.\n";

static const struct option opts[] = {
	{ "bytes", required_argument, NULL, 'b' },
	{ "cols", required_argument, NULL, 'c' },
	{ "dtype", required_argument, NULL, 'd' },
	{ "help", no_argument, NULL, 'h' },
	{ "iteration", required_argument, NULL, 'i' },
	{ "level", required_argument, NULL, 'l' },
	{ "model", required_argument, NULL, 'm' },
	{ "no-compress", no_argument, NULL, 'C' },
	{ "no-state", no_argument, NULL, 'S' },
	{ "no-sync", no_argument, NULL, 'Y' },
	{ "present", required_argument, NULL, 'p' },
	{ "raw", required_argument, NULL, 'r' },
	{ "seed", required_argument, NULL, 'e' },
	{ "shards", required_argument, NULL, 's' },
	{ "shuffle", required_argument, NULL, 'u' },
	{ "tensors", required_argument, NULL, 't' },
	{ "threads", required_argument, NULL, 'j' },
	{ "time", no_argument, NULL, 'T' },
	{ NULL, 0, NULL, 0 },
};

static void die(const char *msg, const char *arg)
{
	fprintf(stderr, "mkckpt: %s '%s'\n", msg, arg);
	exit(2);
}

static void die_err(const struct scar_error *e)
{
	fprintf(stderr, "mkckpt: %s%s%s\n", e->file[0] ? e->file : "", e->file[0] ? ": " : "",
		e->msg[0] ? e->msg : scar_strerror(e->code));
	exit(2);
}

static uint64_t num(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	if (*s < '0' || *s > '9')
		die("not a number:", s);
	v = strtoull(s, &end, 10);
	if (errno)
		die("not a number:", s);
	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M')
		v <<= 20, end++;
	else if (*end == 'G')
		v <<= 30, end++;
	if (*end)
		die("not a number:", s);
	return v;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void fill(struct scar_tensor *t, struct scar_rng *rng)
{
	uint64_t i, n = scar_tensor_elems(t);

	if (t->dtype == SCAR_F32) {
		float *p = t->data;
		for (i = 0; i < n; i++)
			p[i] = (float)(0.02 * scar_rng_normal(rng));
	} else if (t->dtype == SCAR_F64) {
		double *p = t->data;
		for (i = 0; i < n; i++)
			p[i] = 0.02 * scar_rng_normal(rng);
	} else {
		for (i = 0; i < n; i++)
			scar_tensor_set(t, i, (double)scar_rng_below(rng, 1000));
	}
}

int main(int argc, char **argv)
{
	struct scar_ckpt_save_opts so;
	struct scar_state *st = NULL;
	struct scar_error e;
	struct scar_rng rng;
	uint64_t bytes = 4096, cols = 16, iteration = 0, seed = 1, shards = 1, ntens = 1;
	uint64_t pa = 0, pb = 0, k;
	enum scar_dtype dtype = SCAR_F32;
	const char *model = "bench", *raw = NULL, *out;
	int c, state = 1, partial = 0, timeit = 0;
	FILE *rf = NULL;

	scar_ckpt_save_opts_init(&so);
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'b': bytes = num(optarg); break;
		case 'c': cols = num(optarg); break;
		case 'd':
			dtype = scar_dtype_parse(optarg);
			if (!dtype)
				die("unknown dtype", optarg);
			break;
		case 'h': fputs(usage, stdout); return 0;
		case 'i': iteration = num(optarg); break;
		case 'l': so.level = (int)num(optarg); break;
		case 'm': model = optarg; break;
		case 'C': so.compress = 0; break;
		case 'S': state = 0; break;
		case 'Y': so.sync = 0; break;
		case 'p': {
			char *colon = strchr(optarg, ':');
			if (!colon)
				die("--present wants A:B, not", optarg);
			*colon = 0;
			pa = num(optarg);
			pb = num(colon + 1);
			partial = 1;
			break;
		}
		case 'r': raw = optarg; break;
		case 'e': seed = num(optarg); break;
		case 's': shards = num(optarg); break;
		case 't': ntens = num(optarg); break;
		case 'u':
			if ((so.shuffle = scar_shuffle_parse(optarg)) < 0)
				die("unknown shuffle", optarg);
			break;
		case 'j': so.threads = (unsigned)num(optarg); break;
		case 'T': timeit = 1; break;
		default: fputs(usage, stderr); return 2;
		}
	}
	if (argc - optind > 1 || (argc == optind && !raw)) {
		fputs(usage, stderr);
		return 2;
	}
	out = optind < argc ? argv[optind] : NULL;
	if (!cols || !ntens || !shards || shards > 65536) {
		fputs("mkckpt: --cols, --tensors and --shards must be positive\n", stderr);
		return 2;
	}

	scar_error_clear(&e);
	scar_rng_seed(&rng, seed);
	if (scar_state_new(&st, model, &e) < 0)
		die_err(&e);
	st->iteration = iteration;
	st->shards = (uint32_t)shards;
	json_object_set_new(st->config, "generator", json_string("mkckpt"));
	json_object_set_new(st->config, "seed", json_integer((json_int_t)seed));
	if (raw && !(rf = fopen(raw, "wb")))
		die("cannot create", raw);
	for (k = 0; k < ntens; k++) {
		uint64_t row = cols * scar_dtype_size(dtype);
		uint64_t shape[2] = { bytes / ntens / row, cols };
		struct scar_tensor *t;
		char name[32];

		if (ntens == 1)
			snprintf(name, sizeof(name), "w");
		else
			snprintf(name, sizeof(name), "w%llu", (unsigned long long)k);
		if (shape[0] == 0)
			shape[0] = 1;
		if (scar_tensor_new(&t, name, dtype, SCAR_ROLE_PARAM, 2, shape, &e) < 0)
			die_err(&e);
		fill(t, &rng);
		if (rf && fwrite(t->data, 1, scar_tensor_bytes(t), rf) != scar_tensor_bytes(t))
			die("cannot write", raw);
		if (partial) {
			uint64_t r;

			if (scar_tensor_init_present(t, 0, &e) < 0)
				die_err(&e);
			for (r = pa; r < pb && r < shape[0]; r++)
				t->present[r] = 1;
		}
		if (scar_state_add(st, t, &e) < 0)
			die_err(&e);
	}
	if (rf && fclose(rf) != 0)
		die("cannot write", raw);
	if (state) {
		uint64_t shape[1] = { SCAR_RNG_WORDS };
		struct scar_tensor *t;

		if (scar_tensor_new(&t, "rng", SCAR_U64, SCAR_ROLE_STATE, 1, shape, &e) < 0)
			die_err(&e);
		scar_rng_save(&rng, t->data);
		if (scar_state_add(st, t, &e) < 0)
			die_err(&e);
	}
	if (out) {
		double t0 = now();

		if (scar_ckpt_save(st, out, &so, &e) < 0)
			die_err(&e);
		if (timeit)
			fprintf(stderr, "%.6f\n", now() - t0);
	}
	scar_state_free(st);
	return 0;
}
