/*
 * bench-models.c - time the workloads through the public model API, for
 * bench/bench-models.sh.
 *
 *   bench-models MODEL CONFIG ITERS [TARGET]
 *
 * CONFIG is a JSON object (the model's configuration keys). The model is
 * created (data loaded; not timed), then ITERS iterations are run; after
 * each one line
 *   iter K step S cpu C objective F heldout H
 * where S is the wall time of step() alone, C its CPU time (what to
 * compare on a busy machine), F the objective and H the
 * held-out metric (nan when the model has none). With TARGET, the run
 * stops at the first iteration whose held-out metric reaches it (>= when
 * higher is better, else <=) and prints
 *   target K elapsed T cpu C
 * with T the wall time (C the CPU time) of all steps and held-out
 * evaluations so far (what it costs to get there and know it), or
 * "target none" when not reached.
 * A first line "tokens N" gives the element count of the state tensor "z"
 * (LDA token assignments) when there is one, for samples per second.
 *
 * With BENCH_DUMP=PREFIX in the environment, the data of the state tensor
 * BENCH_DUMP_TENSOR (default "word_topic") is written raw, in native byte
 * order, to PREFIX-K.raw after every BENCH_DUMP_EVERY-th iteration K
 * (default 1), outside the timings, for a peer to score.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scar/model.h"
#include "scar/tensor.h"

static double clock_s(clockid_t id)
{
	struct timespec t;

	clock_gettime(id, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double now(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

static int dump(const struct scar_state *st, const char *prefix, const char *name, long k)
{
	const struct scar_tensor *t = scar_state_find(st, name);
	char path[4096];
	FILE *f;
	int ok;

	if (!t) {
		fprintf(stderr, "bench-models: no tensor '%s' to dump\n", name);
		return -1;
	}
	snprintf(path, sizeof(path), "%s-%ld.raw", prefix, k);
	f = fopen(path, "wb");
	ok = f && fwrite(t->data, 1, scar_tensor_bytes(t), f) == scar_tensor_bytes(t);
	if (f && fclose(f))
		ok = 0;
	if (!ok)
		fprintf(stderr, "bench-models: cannot write '%s'\n", path);
	return ok ? 0 : -1;
}

static int fail(const char *what, const struct scar_error *e)
{
	fprintf(stderr, "bench-models: %s: %s\n", what, e->msg);
	return 2;
}

int main(int argc, char **argv)
{
	const struct scar_model_def *def;
	struct scar_model *m = NULL;
	struct scar_state *st = NULL;
	struct scar_error err;
	struct scar_tensor *z;
	json_error_t jerr;
	json_t *cfg;
	double target = NAN, spent = 0, spent_cpu = 0;
	const char *dprefix = getenv("BENCH_DUMP"), *dname = getenv("BENCH_DUMP_TENSOR");
	long iters, devery = getenv("BENCH_DUMP_EVERY") ? atol(getenv("BENCH_DUMP_EVERY")) : 1;
	int rc = 0, reached = 0;

	if (argc < 4 || argc > 5) {
		fprintf(stderr, "usage: bench-models MODEL CONFIG ITERS [TARGET]\n");
		return 2;
	}
	scar_error_clear(&err);
	def = scar_model_find(argv[1]);
	if (!def) {
		fprintf(stderr, "bench-models: unknown model '%s'\n", argv[1]);
		return 2;
	}
	cfg = json_loads(argv[2], 0, &jerr);
	iters = strtol(argv[3], NULL, 10);
	if (argc == 5)
		target = strtod(argv[4], NULL);
	if (!cfg || iters < 1) {
		fprintf(stderr, "bench-models: bad CONFIG or ITERS\n");
		return 2;
	}
	if (def->configure(cfg, &err) || def->create(&m, cfg, &err))
		return fail("create", &err);
	if (scar_state_new(&st, def->name, &err))
		return fail("state", &err);
	json_decref(st->config);
	st->config = json_deep_copy(cfg);
	if (def->init_state(m, st, &err))
		return fail("init", &err);
	z = scar_state_find(st, "z");
	if (z)
		printf("tokens %llu\n", (unsigned long long)scar_tensor_elems(z));
	for (long k = 1; k <= iters; k++) {
		double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID), t0 = now(), t1, t2, c1;
		double f = NAN, h = NAN;

		if (def->step(m, st, &err)) {
			rc = fail("step", &err);
			break;
		}
		t1 = now();
		c1 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
		st->iteration++;
		if (def->heldout && def->heldout(m, st, &h, &err))
			h = NAN;
		t2 = now();
		spent_cpu += clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
		if (def->objective(m, st, &f, &err))
			f = NAN;
		spent += t2 - t0;
		printf("iter %ld step %.6f cpu %.6f objective %.9g heldout %.9g\n", k, t1 - t0, c1 - c0,
		       f, h);
		fflush(stdout);
		if (dprefix && *dprefix && devery > 0 && k % devery == 0 &&
		    dump(st, dprefix, dname && *dname ? dname : "word_topic", k)) {
			rc = 2;
			break;
		}
		if (!isnan(target) && !isnan(h) &&
		    (def->heldout_higher_better ? h >= target : h <= target)) {
			printf("target %ld elapsed %.6f cpu %.6f\n", k, spent, spent_cpu);
			reached = 1;
			break;
		}
	}
	if (!isnan(target) && !reached && !rc)
		printf("target none\n");
	def->free(m);
	scar_state_free(st);
	json_decref(cfg);
	return rc;
}
