/*
 * unit.h - a tiny test harness for the C unit tests of libscar.
 * CHECK(cond) records a failure and goes on; main returns nonzero on any.
 */
#ifndef SCAR_UNIT_H
#define SCAR_UNIT_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int unit_failures;
static int unit_checks;

#define CHECK(cond) do { \
	unit_checks++; \
	if (!(cond)) { \
		unit_failures++; \
		fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
	} \
} while (0)

#define CHECK_RC(expr) do { \
	struct scar_error unit_err_; \
	int unit_rc_; \
	scar_error_clear(&unit_err_); \
	unit_rc_ = (expr); \
	unit_checks++; \
	if (unit_rc_ < 0) { \
		unit_failures++; \
		fprintf(stderr, "%s:%d: %s returned %d\n", __FILE__, __LINE__, #expr, unit_rc_); \
	} \
} while (0)

#define CHECK_NEAR(a, b, tol) do { \
	double unit_a_ = (a), unit_b_ = (b); \
	unit_checks++; \
	if (!(fabs(unit_a_ - unit_b_) <= (tol))) { \
		unit_failures++; \
		fprintf(stderr, "%s:%d: %s = %.17g, expected %.17g (tol %g)\n", \
			__FILE__, __LINE__, #a, unit_a_, unit_b_, (double)(tol)); \
	} \
} while (0)

static inline int unit_done(const char *name)
{
	printf("%s: %d checks, %d failed\n", name, unit_checks, unit_failures);
	return unit_failures ? 1 : 0;
}

#endif
