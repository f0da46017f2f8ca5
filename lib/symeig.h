/*
 * symeig.h - every eigenvalue of a dense symmetric matrix (not part of the
 * public API; ridge uses it for its Hessian).
 */
#ifndef SCAR_SYMEIG_H
#define SCAR_SYMEIG_H

#include <stddef.h>

/*
 * The n eigenvalues of the symmetric n x n matrix a (row-major; only the
 * lower triangle, diagonal included, is read) into w[0..n), ascending.
 * a is overwritten. work holds at least n doubles.
 *
 * Householder reduction to tridiagonal form, then the implicit QL method
 * with Wilkinson shifts: backward stable, so every eigenvalue is within a
 * small multiple of n * DBL_EPSILON * ||a|| of the exact one, whatever the
 * matrix (repeated, clustered or zero eigenvalues, any start). About
 * 2/3 n^3 multiply-adds, memory in place.
 *
 * Returns 0, or -1 when a is not finite or an eigenvalue takes more than
 * 60 QL sweeps (not seen on finite input; w is then unspecified).
 */
int scar_symeig(double *a, size_t n, double *w, double *work);

#endif
