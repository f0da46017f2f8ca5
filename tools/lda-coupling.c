/*
 * lda-coupling.c - how well the lda samplers couple a perturbed chain to
 * its reference (model_lda.c, "Coupled draws").
 *
 *   lda-coupling DOCWORD [TOPICS [AT [DIRECTIONS]]]
 *
 * For each sampler ("cdf", "race"): train lda on the UCI bag-of-words file
 * DOCWORD (TOPICS topics, default 10) for AT sweeps (default 20); that
 * state is the start of an unperturbed reference chain and of perturbed
 * chains whose "word_topic" counts get, at that point, a perturbation of
 * L2 norm eps |word_topic| (eps 0, 1e-6, 1e-3, 1e-1): a Gaussian direction
 * over the K counts of R random rows, R = (eps |W|)^2 / (4 K) rounded down
 * (at least 1, at most V) so that the counts move by about 2 or more and
 * rounding to integers keeps the norm; the counts are i32, so the norm of
 * what remains after rounding is printed (1e-6 rounds to nothing on the
 * spam corpus). A last chain has a single count moved by one (the smallest
 * non-zero perturbation), and one more, unperturbed but drawing the numbers
 * of other sweeps (its iteration shifted by 10^6: uncoupled, the baseline
 * of two independent chains from the same state). Every chain then
 * runs 20 sweeps with the same keyed draws; printed is the fraction of the
 * token assignments z that differ from the reference after 1, 5, 10 and 20
 * sweeps (mean over DIRECTIONS random directions, default 3), and whether
 * the eps = 0 chain stayed bit-identical (z and every count). Last, the
 * time per sweep of each sampler: the median CPU and wall time of the
 * reference's AT + 20 sweeps.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scar/model.h"
#include "scar/rng.h"
#include "scar/tensor.h"

#define AFTER 20

static const int marks[] = { 1, 5, 10, 20 };

static double clock_s(clockid_t id)
{
	struct timespec t;

	clock_gettime(id, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int die(const char *what, const struct scar_error *e)
{
	fprintf(stderr, "lda-coupling: %s: %s\n", what, e ? e->msg : "out of memory");
	exit(2);
}

static void step(const struct scar_model_def *def, struct scar_model *m, struct scar_state *st,
		 double *cpu, double *wall)
{
	struct scar_error err;
	double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID), w0 = clock_s(CLOCK_MONOTONIC);

	if (def->step(m, st, &err))
		die("step", &err);
	st->iteration++;
	if (cpu)
		*cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
	if (wall)
		*wall = clock_s(CLOCK_MONOTONIC) - w0;
}

static struct scar_tensor *get(const struct scar_state *st, const char *name)
{
	struct scar_tensor *t = scar_state_find(st, name);

	if (!t) {
		fprintf(stderr, "lda-coupling: no tensor '%s'\n", name);
		exit(2);
	}
	return t;
}

static double zdiff(const struct scar_state *a, const struct scar_state *b)
{
	const struct scar_tensor *za = get(a, "z"), *zb = get(b, "z");
	uint64_t n = scar_tensor_elems(za), d = 0;

	for (uint64_t i = 0; i < n; i++)
		d += ((const uint32_t *)za->data)[i] != ((const uint32_t *)zb->data)[i];
	return (double)d / (double)n;
}

static int same_state(const struct scar_state *a, const struct scar_state *b)
{
	for (size_t i = 0; i < a->ntensors; i++) {
		const struct scar_tensor *t = a->tensors[i], *u = get(b, t->name);

		if (memcmp(t->data, u->data, scar_tensor_bytes(t)))
			return 0;
	}
	return 1;
}

/*
 * Add round(eps * |W| * g / |g|) to the counts W, g a Gaussian direction
 * over R random rows (see the top; dir < 0: one count, the largest, plus
 * one); the rounded perturbation's L2 norm and non-zero count into *l2,
 * *nnz.
 */
static void perturb(struct scar_state *st, double eps, int dir, double *l2, uint64_t *nnz)
{
	struct scar_tensor *w = get(st, "word_topic");
	int32_t *c = w->data;
	uint64_t n = scar_tensor_elems(w), rows = w->shape[0], k = w->shape[1], want;
	double norm = 0, gn = 0, *g = malloc(n * sizeof(*g));
	struct scar_rng r;

	*l2 = 0;
	*nnz = 0;
	if (!g)
		die("perturb", NULL);
	if (dir < 0) {
		uint64_t best = 0;

		for (uint64_t i = 1; i < n; i++)
			if (c[i] > c[best])
				best = i;
		c[best]++;
		*l2 = 1;
		*nnz = 1;
		free(g);
		return;
	}
	scar_rng_seed_stream(&r, 7, (uint64_t)dir);
	for (uint64_t i = 0; i < n; i++)
		norm += (double)c[i] * c[i];
	want = (uint64_t)floor(eps * eps * norm / (4.0 * (double)k));
	want = want < 1 ? 1 : want > rows ? rows : want;
	/* Row i is picked with probability (rows still wanted) / (rows left). */
	for (uint64_t i = 0, left = want; i < rows; i++) {
		int pick = scar_rng_below(&r, rows - i) < left;

		left -= (uint64_t)pick;
		for (uint64_t j = 0; j < k; j++) {
			g[i * k + j] = pick ? scar_rng_normal(&r) : 0;
			gn += g[i * k + j] * g[i * k + j];
		}
	}
	for (uint64_t i = 0; i < n; i++) {
		double d = nearbyint(eps * sqrt(norm) * g[i] / sqrt(gn));

		c[i] += (int32_t)d;
		*l2 += d * d;
		*nnz += d != 0;
	}
	*l2 = sqrt(*l2);
	free(g);
}

int main(int argc, char **argv)
{
	static const char *const samplers[] = { "cdf", "race" };
	static const double epss[] = { 0, 1e-6, 1e-3, 1e-1, -1, -2 };
	const struct scar_model_def *def = scar_model_find("lda");
	long topics = argc > 2 ? atol(argv[2]) : 10, at = argc > 3 ? atol(argv[3]) : 20;
	int ndir = argc > 4 ? atoi(argv[4]) : 3;
	double tcpu[2], twall[2];
	struct scar_error err;

	if (argc < 2 || argc > 5 || topics < 1 || at < 0 || ndir < 1 || !def) {
		fprintf(stderr, "usage: lda-coupling DOCWORD [TOPICS [AT [DIRECTIONS]]]\n");
		return 2;
	}
	printf("# lda on %s, K = %ld, perturbed after sweep %ld, %d directions\n", argv[1], topics,
	       at, ndir);
	printf("%-7s %-9s %12s %10s %9s %9s %9s %9s %s\n", "sampler", "eps", "|delta|_2", "nonzero",
	       "after 1", "after 5", "after 10", "after 20", "bit-identical");
	for (int s = 0; s < 2; s++) {
		struct scar_model *m = NULL;
		struct scar_state *st = NULL, *ref[AFTER + 1] = { 0 };
		double cpu[1024], wall[1024], norm = 0;
		int nt = 0;
		json_t *cfg = json_pack("{s:s, s:s, s:I}", "data", argv[1], "sampler", samplers[s],
					"topics", (json_int_t)topics);

		if (!cfg || def->configure(cfg, &err) || def->create(&m, cfg, &err) ||
		    scar_state_new(&st, "lda", &err))
			die("create", cfg ? &err : NULL);
		json_decref(st->config);
		st->config = json_deep_copy(cfg);
		if (def->init_state(m, st, &err))
			die("init", &err);
		for (long i = 0; i < at; i++, nt++)
			step(def, m, st, nt < 1024 ? cpu + nt : NULL, nt < 1024 ? wall + nt : NULL);
		for (uint64_t i = 0; i < scar_tensor_elems(get(st, "word_topic")); i++) {
			double v = ((int32_t *)get(st, "word_topic")->data)[i];

			norm += v * v;
		}
		/* The reference chain, kept after every sweep. */
		if (scar_state_clone(&ref[0], st, &err))
			die("clone", &err);
		for (int k = 1; k <= AFTER; k++, nt++) {
			if (scar_state_clone(&ref[k], ref[k - 1], &err))
				die("clone", &err);
			step(def, m, ref[k], nt < 1024 ? cpu + nt : NULL, nt < 1024 ? wall + nt : NULL);
		}
		for (size_t e = 0; e < sizeof(epss) / sizeof(epss[0]); e++) {
			double frac[4] = { 0 }, l2 = 0;
			uint64_t nnz = 0;
			int same = 1, nd = epss[e] < 0 ? 1 : ndir;
			char label[32];

			for (int d = 0; d < nd; d++) {
				struct scar_state *p = NULL;
				double l2d;
				uint64_t nnzd;

				if (scar_state_clone(&p, st, &err))
					die("clone", &err);
				if (epss[e] == -2) {
					p->iteration += 1000000;
					l2d = 0;
					nnzd = 0;
				} else {
					perturb(p, epss[e], epss[e] < 0 ? -1 : d, &l2d, &nnzd);
				}
				l2 += l2d / nd;
				nnz += nnzd;
				for (int k = 1, j = 0; k <= AFTER; k++) {
					step(def, m, p, NULL, NULL);
					if (k == marks[j])
						frac[j++] += zdiff(p, ref[k]) / nd;
				}
				same &= same_state(p, ref[AFTER]);
				scar_state_free(p);
			}
			if (epss[e] == -2)
				snprintf(label, sizeof(label), "uncoupled");
			else if (epss[e] < 0)
				snprintf(label, sizeof(label), "1 count");
			else
				snprintf(label, sizeof(label), "%g", epss[e]);
			printf("%-7s %-9s %12.4g %10.1f %9.5f %9.5f %9.5f %9.5f %s\n", samplers[s], label, l2,
			       (double)nnz / nd, frac[0], frac[1], frac[2], frac[3], same ? "yes" : "no");
		}
		printf("# %s: |word_topic|_2 = %.1f, %llu tokens\n", samplers[s], sqrt(norm),
		       (unsigned long long)scar_tensor_elems(get(st, "z")));
		tcpu[s] = median(cpu, nt < 1024 ? nt : 1024);
		twall[s] = median(wall, nt < 1024 ? nt : 1024);
		for (int k = 0; k <= AFTER; k++)
			scar_state_free(ref[k]);
		scar_state_free(st);
		def->free(m);
		json_decref(cfg);
	}
	printf("# time per sweep (median of %ld): cdf %.4f s cpu %.4f s wall, race %.4f s cpu %.4f s wall (race/cdf %.2f cpu)\n",
	       at + AFTER, tcpu[0], twall[0], tcpu[1], twall[1], tcpu[1] / tcpu[0]);
	return 0;
}
