/*
 * unit.h - a tiny test harness for the C unit tests of libscar.
 * CHECK(cond) records a failure and goes on; main returns nonzero on any.
 * CHECK_RC(call) wants a call to succeed (>= 0), CHECK_CODE(call, code) to
 * return exactly code; pass UNIT_ERR as the call's struct scar_error * and
 * a failed check prints the library's message as well as the code.
 * Fixtures: a scratch directory (unit_scratch, unit_tmp,
 * unit_scratch_remove) and tensors and states (unit_tensor, unit_state,
 * unit_same_tensors).
 */
#ifndef SCAR_UNIT_H
#define SCAR_UNIT_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scar/error.h"
#include "scar/tensor.h"

static int unit_failures;
static int unit_checks;
static struct scar_error unit_err_;

/* The error report CHECK_RC and CHECK_CODE print from. */
#define UNIT_ERR (&unit_err_)

/* A failed CHECK_RC/CHECK_CODE: the call, both codes by name, the message. */
static inline void unit_rc_failed(const char *file, int line, const char *expr, int rc,
				  int want, int exact)
{
	unit_failures++;
	fprintf(stderr, "%s:%d: %s returned %d (%s)", file, line, expr, rc,
		rc ? scar_strerror(rc) : "success");
	if (exact)
		fprintf(stderr, ", expected %d (%s)", want, want ? scar_strerror(want) : "success");
	if (unit_err_.code && unit_err_.msg[0])
		fprintf(stderr, ": %s%s%s", unit_err_.msg, unit_err_.file[0] ? " in " : "",
			unit_err_.file);
	fputc('\n', stderr);
}

#define CHECK(cond) do { \
	unit_checks++; \
	if (!(cond)) { \
		unit_failures++; \
		fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
	} \
} while (0)

#define CHECK_RC(expr) do { \
	int unit_rc_; \
	scar_error_clear(&unit_err_); \
	unit_rc_ = (expr); \
	unit_checks++; \
	if (unit_rc_ < 0) \
		unit_rc_failed(__FILE__, __LINE__, #expr, unit_rc_, 0, 0); \
} while (0)

#define CHECK_CODE(expr, code) do { \
	int unit_rc_, unit_want_ = (code); \
	scar_error_clear(&unit_err_); \
	unit_rc_ = (expr); \
	unit_checks++; \
	if (unit_rc_ != unit_want_) \
		unit_rc_failed(__FILE__, __LINE__, #expr, unit_rc_, unit_want_, 1); \
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

/* ---- a scratch directory, removed at the end ---- */

static char unit_dir_[256];

/* Create /tmp/scar-test-NAME-XXXXXX (or under $TMPDIR); exits 2 when it cannot. */
static inline const char *unit_scratch(const char *name)
{
	const char *t = getenv("TMPDIR");

	snprintf(unit_dir_, sizeof(unit_dir_), "%s/scar-test-%s-XXXXXX", t && *t ? t : "/tmp", name);
	if (!mkdtemp(unit_dir_)) {
		perror(unit_dir_);
		exit(2);
	}
	return unit_dir_;
}

/* NAME in the scratch directory; the last four results stay valid. */
static inline const char *unit_tmp(const char *name)
{
	static char buf[4][512];
	static int k;

	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", unit_dir_, name);
	return buf[k];
}

static inline void unit_scratch_remove(void)
{
	char cmd[600];

	if (!unit_dir_[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", unit_dir_);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", unit_dir_);
	unit_dir_[0] = 0;
}

/* ---- tensors and states ---- */

/*
 * A rows x cols tensor (1-d when cols is 0) holding base + (i % 97) at
 * element i: small integers, exact in every dtype. Exits when it cannot.
 */
static inline struct scar_tensor *unit_tensor(const char *name, enum scar_dtype dt,
					      enum scar_role role, uint64_t rows, uint64_t cols,
					      double base)
{
	struct scar_tensor *t = NULL;
	uint64_t shape[2] = { rows, cols };

	if (scar_tensor_new(&t, name, dt, role, cols ? 2 : 1, shape, UNIT_ERR) < 0) {
		fprintf(stderr, "unit_tensor %s: %s\n", name, unit_err_.msg);
		exit(2);
	}
	for (uint64_t i = 0; i < scar_tensor_elems(t); i++)
		scar_tensor_set(t, i, base + (double)(i % 97));
	return t;
}

/* A state of model NAME and S shards, empty; add unit_tensor()s to it. */
static inline struct scar_state *unit_state(const char *model, uint32_t shards)
{
	struct scar_state *st = NULL;

	if (scar_state_new(&st, model, UNIT_ERR) < 0) {
		fprintf(stderr, "unit_state: %s\n", unit_err_.msg);
		exit(2);
	}
	st->shards = shards;
	return st;
}

static inline void unit_state_add(struct scar_state *st, struct scar_tensor *t)
{
	if (scar_state_add(st, t, UNIT_ERR) < 0) {
		fprintf(stderr, "unit_state_add %s: %s\n", t->name, unit_err_.msg);
		exit(2);
	}
}

/* The same tensors (names, roles, layouts, present rows and their bytes), in order. */
static inline int unit_same_tensors(const struct scar_state *a, const struct scar_state *b)
{
	if (!a || !b || a->ntensors != b->ntensors)
		return 0;
	for (size_t i = 0; i < a->ntensors; i++) {
		const struct scar_tensor *x = a->tensors[i], *y = b->tensors[i];
		size_t rb = scar_tensor_row_bytes(x);

		if (strcmp(x->name, y->name) != 0 || x->role != y->role ||
		    !scar_tensor_same_layout(x, y))
			return 0;
		for (uint64_t r = 0; r < scar_tensor_rows(x); r++) {
			if (scar_tensor_has_row(x, r) != scar_tensor_has_row(y, r))
				return 0;
			if (scar_tensor_has_row(x, r) &&
			    memcmp(scar_tensor_row(x, r), scar_tensor_row(y, r), rb) != 0)
				return 0;
		}
	}
	return 1;
}

static inline int unit_done(const char *name)
{
	printf("%s: %d checks, %d failed\n", name, unit_checks, unit_failures);
	return unit_failures ? 1 : 0;
}

#endif
