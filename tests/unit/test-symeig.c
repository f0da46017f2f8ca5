/*
 * test-symeig.c - the dense symmetric eigen-solver (lib/symeig.c) on
 * matrices whose eigenvalues are known in closed form, and ridge's
 * contraction rate on data built so that its Hessian's spectrum is known,
 * including the features that power iteration from a fixed start misses.
 * (tests/bats/ridge-eig.bats checks both against numpy on random and
 * adversarial data.)
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scar/model.h"
#include "scar/tensor.h"
#include "symeig.h"
#include "unit.h"

#define PI 3.14159265358979323846

/* Eigenvalues of a (copied, n x n) into w; -1 when the solver refuses. */
static int eig(const double *a, size_t n, double *w)
{
	double *c = malloc(n * n * sizeof(*c) + 1), *work = malloc(n * sizeof(*work) + 1);
	int rc = -1;

	if (c && work) {
		memcpy(c, a, n * n * sizeof(*c));
		rc = scar_symeig(c, n, w, work);
	}
	free(c);
	free(work);
	return rc;
}

static int cmp_double(const void *pa, const void *pb)
{
	double a = *(const double *)pa, b = *(const double *)pb;

	return (a > b) - (a < b);
}

/* Largest |w[i] - want[i]| after sorting want ascending. */
static double max_err(const double *w, double *want, size_t n)
{
	double e = 0;

	qsort(want, n, sizeof(*want), cmp_double);
	for (size_t i = 0; i < n; i++)
		e = fmax(e, fabs(w[i] - want[i]));
	return e;
}

/* A deterministic uniform in [-1, 1) (splitmix64). */
static double unif(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	return (double)(z >> 11) / 4503599627370496.0 - 1.0;
}

/*
 * a = Q diag(lam) Q^T with Q a product of k random Householder reflections
 * (orthogonal to rounding), so a's eigenvalues are lam.
 */
static void with_spectrum(double *a, const double *lam, size_t n, int k, uint64_t seed)
{
	double *v = malloc(n * sizeof(*v)), *t = malloc(n * sizeof(*t));

	memset(a, 0, n * n * sizeof(*a));
	for (size_t i = 0; i < n; i++)
		a[i * n + i] = lam[i];
	for (int r = 0; r < k && v && t; r++) {
		double vv = 0, vtv;

		for (size_t i = 0; i < n; i++) {
			v[i] = unif(&seed);
			vv += v[i] * v[i];
		}
		vtv = 2.0 / vv;
		/* a <- (I - 2 v v^T / v^T v) a (I - 2 v v^T / v^T v), as two one-sided products. */
		for (int side = 0; side < 2; side++) {
			for (size_t j = 0; j < n; j++) {
				double s = 0;

				for (size_t i = 0; i < n; i++)
					s += v[i] * (side ? a[j * n + i] : a[i * n + j]);
				t[j] = s * vtv;
			}
			for (size_t i = 0; i < n; i++)
				for (size_t j = 0; j < n; j++)
					if (side)
						a[j * n + i] -= t[j] * v[i];
					else
						a[i * n + j] -= v[i] * t[j];
		}
	}
	/* Exactly symmetric. */
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < i; j++)
			a[j * n + i] = a[i * n + j] = 0.5 * (a[i * n + j] + a[j * n + i]);
	free(v);
	free(t);
}

static void test_closed_forms(void)
{
	double w[64], want[64], a[64 * 64] = { 0 };

	/* Empty and 1 x 1. */
	CHECK(eig(a, 0, w) == 0);
	a[0] = -3.5;
	CHECK(eig(a, 1, w) == 0 && w[0] == -3.5);

	/* [[2, 1], [1, 2]]: 1 and 3. */
	{
		double b[4] = { 2, 1, 1, 2 };

		CHECK(eig(b, 2, w) == 0);
		CHECK_NEAR(w[0], 1, 4 * DBL_EPSILON);
		CHECK_NEAR(w[1], 3, 8 * DBL_EPSILON);
	}
	/* Diagonal, unsorted, with repeats, zeros and negatives: itself, sorted. */
	{
		double dg[7] = { 5, -2, 0, 5, 1e-300, -1e10, 0 };

		memset(a, 0, 49 * sizeof(*a));
		for (int i = 0; i < 7; i++)
			a[i * 7 + i] = want[i] = dg[i];
		CHECK(eig(a, 7, w) == 0);
		CHECK(max_err(w, want, 7) == 0);
	}
	/* The zero matrix. */
	memset(a, 0, 9 * sizeof(*a));
	CHECK(eig(a, 3, w) == 0 && w[0] == 0 && w[1] == 0 && w[2] == 0);

	/* tridiag(-1, 2, -1) of order 50: 2 - 2 cos(k pi / 51), k = 1..50. */
	{
		size_t n = 50;

		memset(a, 0, n * n * sizeof(*a));
		for (size_t i = 0; i < n; i++) {
			a[i * n + i] = 2;
			if (i + 1 < n)
				a[i * n + i + 1] = a[(i + 1) * n + i] = -1;
			want[i] = 2 - 2 * cos((double)(i + 1) * PI / (double)(n + 1));
		}
		CHECK(eig(a, n, w) == 0);
		CHECK(max_err(w, want, n) < 1e-14);
	}
	/* The all-ones matrix of order 40: 40 once, 0 39 times. */
	{
		size_t n = 40;

		for (size_t i = 0; i < n * n; i++)
			a[i] = 1;
		for (size_t i = 0; i < n; i++)
			want[i] = i + 1 == n ? (double)n : 0;
		CHECK(eig(a, n, w) == 0);
		CHECK(max_err(w, want, n) < 64 * 40 * DBL_EPSILON);
	}
	/* Not finite: refused. */
	{
		double b[4] = { 1, NAN, NAN, 1 }, c2[4] = { INFINITY, 0, 0, 1 };

		CHECK(eig(b, 2, w) == -1);
		CHECK(eig(c2, 2, w) == -1);
	}
}

/* Rotated spectra: clustered, repeated, graded over 16 orders, indefinite. */
static void test_rotated(void)
{
	size_t n = 64;
	double *a = malloc(n * n * sizeof(*a)), lam[64], want[64], w[64];

	if (!a) {
		CHECK(0);
		return;
	}
	for (int kind = 0; kind < 4; kind++) {
		double scale = 0, err;

		for (size_t i = 0; i < n; i++) {
			switch (kind) {
			case 0: lam[i] = (double)(i % 3); break;			/* 0, 1, 2 repeated */
			case 1: lam[i] = 1 + 1e-9 * (double)i; break;		/* one tight cluster */
			case 2: lam[i] = pow(10.0, -12 + 16.0 * (double)i / (double)(n - 1)); break;
			default: lam[i] = (double)i - 31.5; break;		/* indefinite */
			}
			scale = fmax(scale, fabs(lam[i]));
			want[i] = lam[i];
		}
		with_spectrum(a, lam, n, 3, 17 + (uint64_t)kind);
		CHECK(eig(a, n, w) == 0);
		err = max_err(w, want, n);
		printf("symeig: rotated spectrum %d: max error %.3g (scale %.3g)\n", kind, err, scale);
		CHECK(err <= 1e3 * DBL_EPSILON * scale);
		for (size_t i = 1; i < n; i++)
			CHECK(w[i - 1] <= w[i]);
	}
	free(a);
}

/* Invariants on a random dense matrix: the trace and the Frobenius norm. */
static void test_invariants(void)
{
	size_t n = 300;
	double *a = malloc(n * n * sizeof(*a)), *w = malloc(n * sizeof(*w));
	double tr = 0, fro = 0, s1 = 0, s2 = 0;
	uint64_t seed = 5;

	if (!a || !w) {
		CHECK(0);
		free(a);
		free(w);
		return;
	}
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j <= i; j++)
			a[i * n + j] = a[j * n + i] = unif(&seed);
	for (size_t i = 0; i < n; i++) {
		tr += a[i * n + i];
		for (size_t j = 0; j < n; j++)
			fro += a[i * n + j] * a[i * n + j];
	}
	CHECK(eig(a, n, w) == 0);
	for (size_t i = 0; i < n; i++) {
		s1 += w[i];
		s2 += w[i] * w[i];
	}
	CHECK_NEAR(s1, tr, 1e-10 * sqrt(fro));
	CHECK_NEAR(s2, fro, 1e-11 * fro);
	free(a);
	free(w);
}

/*
 * ridge on data whose Hessian H = X^T X / n + lambda I is known: features
 * 1 and 8 (0-based 0 and 7) are exact negatives of each other on rows
 * where nothing else is nonzero, so (e_0 - e_7) is an eigenvector with
 * eigenvalue 4 a^2 / n + lambda and (e_0 + e_7) one with lambda; each
 * other feature j is +-b on two rows of its own: 2 b^2 / n + lambda. The
 * old power iteration started from a vector with equal entries 0 and 7,
 * orthogonal to the largest eigenvector, and never left that subspace.
 */
static void test_ridge_negated(void)
{
	const struct scar_model_def *def = scar_model_find("ridge");
	const double a = 2, b = 1, lambda = 0.01, n = 14;
	double lmax = 4 * a * a / n + lambda, lmin = lambda, c, want_c, dist0 = 0, dist1 = 0;
	char path[] = "/tmp/test-symeig-XXXXXX";
	struct scar_model *m = NULL;
	struct scar_state *st = NULL;
	struct scar_error err;
	json_t *cfg, *hdr = json_object();
	FILE *f;
	int fd = mkstemp(path);

	scar_error_clear(&err);
	if (fd < 0 || !(f = fdopen(fd, "w")) || !def || !hdr) {
		CHECK(0);
		return;
	}
	fprintf(f, "1.5 1:%g 8:%g\n-0.5 1:%g 8:%g\n", a, -a, -a, a);
	for (int j = 2; j <= 7; j++)
		fprintf(f, "%d %d:%g\n%d %d:%g\n", j, j, b, -j, j, -b);
	fclose(f);
	cfg = json_pack("{s:s, s:f}", "data", path, "lambda", lambda);
	CHECK_RC(def->configure(cfg, &err));
	CHECK_RC(def->create(&m, cfg, &err));
	if (!m) {
		fprintf(stderr, "ridge: %s\n", err.msg);
		CHECK(0);
		goto out;
	}
	CHECK_RC(def->contraction(m, &c, &err));
	want_c = 1 - lmin / lmax;
	printf("ridge, negated features: c %.17g, exact %.17g\n", c, want_c);
	CHECK_NEAR(c, want_c, 1e-14);
	CHECK(def->effective != NULL);
	if (def->effective) {
		CHECK_RC(def->effective(m, hdr, &err));
		CHECK_NEAR(json_real_value(json_object_get(hdr, "lambda_max")), lmax, 1e-14);
		CHECK_NEAR(json_real_value(json_object_get(hdr, "lambda_min")), lmin, 1e-14);
		CHECK_NEAR(json_real_value(json_object_get(hdr, "eta")), 1 / lmax, 1e-14);
	}
	/* The default step converges: 200 steps from w = 0 bring w closer to x*. */
	CHECK_RC(scar_state_new(&st, "ridge", &err));
	if (st) {
		json_decref(st->config);
		st->config = json_incref(cfg);
		CHECK_RC(def->init_state(m, st, &err));
		CHECK_RC(def->dist_to_opt(m, st, &dist0, &err));
		for (int i = 0; i < 200; i++)
			CHECK(def->step(m, st, &err) == 0);
		CHECK_RC(def->dist_to_opt(m, st, &dist1, &err));
		CHECK(dist1 <= pow(want_c, 200) * dist0 * (1 + 1e-9) + 1e-12);
	}
out:
	scar_state_free(st);
	def->free(m);
	json_decref(cfg);
	json_decref(hdr);
	unlink(path);
}

int main(void)
{
	test_closed_forms();
	test_rotated();
	test_invariants();
	test_ridge_negated();
	return unit_done("test-symeig");
}
