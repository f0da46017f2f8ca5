/*
 * symeig.c - the eigenvalues of a dense symmetric matrix (symeig.h).
 *
 * Two stages, both orthogonal similarity transforms, so the eigenvalues
 * are those of a nearby matrix (backward stability) whatever the input:
 *
 * 1. Householder tridiagonalization. Step k reflects rows and columns
 *    k+1..n-1 so that column k is zero below its subdiagonal. With
 *    x = A[k+1.., k], v = x - alpha e_1 (alpha = -sign(x_1) ||x||, no
 *    cancellation) and beta = 2 / v^T v, the trailing block B becomes
 *    (I - beta v v^T) B (I - beta v v^T) = B - v q^T - q v^T, where
 *    p = beta B v and q = p - (beta/2)(v^T p) v. Only the lower triangle
 *    is read and updated, row by row (contiguous in memory).
 *
 * 2. The implicit QL method on the tridiagonal matrix (diagonal d,
 *    off-diagonal e[i] between i and i+1): from the top of each unreduced
 *    block, a QL step shifted by the eigenvalue of the leading 2 x 2 block
 *    nearer d[l] (Wilkinson's shift), done as a chain of plane rotations
 *    from the bottom of the block up. An off-diagonal is negligible, and
 *    the block splits there, when it is at most DBL_EPSILON times its two
 *    diagonal neighbours' magnitudes.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "symeig.h"

#define SYMEIG_MAX_SWEEPS 60

static int cmp_double(const void *pa, const void *pb)
{
	double a = *(const double *)pa, b = *(const double *)pb;

	return (a > b) - (a < b);
}

/*
 * Reduce a to tridiagonal form: diagonal into d[0..n), off-diagonal into
 * e[0..n-1). Step k keeps v contiguous in row k's upper part (unused: only
 * the lower triangle is the matrix) and p, then q, in d[k+1..n), which
 * later steps fill.
 */
static void tridiagonalize(double *a, size_t n, double *d, double *e)
{
	for (size_t k = 0; k + 2 < n; k++) {
		double *v = a + k * n, *p = d;	/* v[j], p[j] for j > k */
		double scale = 0, norm = 0, x1, alpha, beta, vp = 0, half;

		d[k] = a[k * n + k];
		for (size_t i = k + 1; i < n; i++) {
			v[i] = a[i * n + k];
			scale = fmax(scale, fabs(v[i]));
		}
		if (scale == 0) {
			e[k] = 0;
			continue;
		}
		for (size_t i = k + 1; i < n; i++) {
			double t = v[i] / scale;

			norm += t * t;
		}
		norm = scale * sqrt(norm);
		x1 = v[k + 1];
		alpha = x1 >= 0 ? -norm : norm;
		e[k] = alpha;
		v[k + 1] = x1 - alpha;			/* v = x - alpha e_1 */
		beta = 1.0 / (norm * (norm + fabs(x1)));	/* 2 / v^T v */
		/* p = beta B v over the lower triangle of B = A[k+1.., k+1..]. */
		for (size_t i = k + 1; i < n; i++)
			p[i] = 0;
		for (size_t i = k + 1; i < n; i++) {
			const double *row = a + i * n;
			double vi = v[i], s = 0;

			for (size_t j = k + 1; j < i; j++) {
				s += row[j] * v[j];
				p[j] += row[j] * vi;
			}
			p[i] += s + row[i] * vi;
		}
		for (size_t i = k + 1; i < n; i++) {
			p[i] *= beta;
			vp += v[i] * p[i];
		}
		half = 0.5 * beta * vp;
		for (size_t i = k + 1; i < n; i++)
			p[i] -= half * v[i];		/* q */
		for (size_t i = k + 1; i < n; i++) {
			double *row = a + i * n, vi = v[i], qi = p[i];

			for (size_t j = k + 1; j <= i; j++)
				row[j] -= vi * p[j] + qi * v[j];
		}
	}
	if (n >= 2) {
		d[n - 2] = a[(n - 2) * n + n - 2];
		e[n - 2] = a[(n - 1) * n + n - 2];
	}
	if (n >= 1) {
		d[n - 1] = a[(n - 1) * n + n - 1];
		e[n - 1] = 0;
	}
}

/* Eigenvalues of the tridiagonal (d, e) into d (unsorted); e is destroyed. */
static int tridiagonal_ql(double *d, double *e, size_t n)
{
	for (size_t l = 0; l < n; l++) {
		int sweeps = 0;

		for (;;) {
			double g, r, s = 1, c = 1, p = 0;
			size_t m;
			int split = 0;

			for (m = l; m + 1 < n; m++)
				if (fabs(e[m]) <= DBL_EPSILON * (fabs(d[m]) + fabs(d[m + 1])))
					break;
			if (m == l)
				break;
			if (++sweeps > SYMEIG_MAX_SWEEPS)
				return -1;
			/* Shift: the eigenvalue of [d_l e_l; e_l d_l+1] nearer d_l. */
			g = (d[l + 1] - d[l]) / (2 * e[l]);
			r = hypot(g, 1.0);
			g = d[m] - d[l] + e[l] / (g + copysign(r, g));
			for (size_t i = m; i-- > l;) {
				double f = s * e[i], b = c * e[i];

				r = hypot(f, g);
				e[i + 1] = r;
				if (r == 0) {
					/* e[i] vanished: the block splits above i + 1. */
					d[i + 1] -= p;
					e[m] = 0;
					split = 1;
					break;
				}
				s = f / r;
				c = g / r;
				g = d[i + 1] - p;
				r = (d[i] - g) * s + 2 * c * b;
				p = s * r;
				d[i + 1] = g + p;
				g = c * r - b;
			}
			if (split)
				continue;
			d[l] -= p;
			e[l] = g;
			e[m] = 0;
		}
	}
	return 0;
}

int scar_symeig(double *a, size_t n, double *w, double *work)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j <= i; j++)
			if (!isfinite(a[i * n + j]))
				return -1;
	tridiagonalize(a, n, w, work);
	if (tridiagonal_ql(w, work, n))
		return -1;
	qsort(w, n, sizeof(*w), cmp_double);
	return 0;
}
