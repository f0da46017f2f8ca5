/*
 * model_util.h - internal helpers shared by the workloads (lib/model_*.c)
 * and the synthetic generators: typed config keys with defaults, the RNG
 * kept in a state tensor, state-tensor lookup, small dense linear algebra.
 * Everything is static so each model file gets its own copy; nothing here
 * is exported from libscar.
 */
#ifndef SCAR_MODEL_UTIL_H
#define SCAR_MODEL_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "scar/error.h"
#include "scar/model.h"
#include "scar/rng.h"
#include "scar/tensor.h"

/* The workloads, defined in lib/model_*.c, listed by lib/models.c. */
extern const struct scar_model_def scar_model_mlr, scar_model_ridge, scar_model_mf,
	scar_model_lda;

/* ---- config ---- */

/* An integer key in [lo, hi]; absent = def (stored back). */
static inline int mu_cfg_int(json_t *cfg, const char *key, json_int_t def, json_int_t lo,
			     json_int_t hi, struct scar_error *err)
{
	json_t *v = json_object_get(cfg, key);

	if (!v)
		return json_object_set_new(cfg, key, json_integer(def)) ?
			scar_error_set(err, SCAR_ENOMEM, "out of memory") : 0;
	if (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)) &&
	    fabs(json_real_value(v)) < 0x1p53) {
		json_int_t iv = (json_int_t)json_real_value(v);

		if (json_object_set_new(cfg, key, json_integer(iv)))
			return scar_error_set(err, SCAR_ENOMEM, "out of memory");
		v = json_object_get(cfg, key);
	}
	if (!json_is_integer(v))
		return scar_error_set(err, SCAR_EINVAL, "configuration key '%s' must be an integer", key);
	if (json_integer_value(v) < lo || json_integer_value(v) > hi)
		return scar_error_set(err, SCAR_ERANGE, "configuration key '%s' = %lld is out of range [%lld, %lld]",
				      key, (long long)json_integer_value(v), (long long)lo, (long long)hi);
	return 0;
}

/* A real key in [lo, hi] (integers accepted and stored as reals); absent = def. */
static inline int mu_cfg_real(json_t *cfg, const char *key, double def, double lo, double hi,
			      struct scar_error *err)
{
	json_t *v = json_object_get(cfg, key);
	double x;

	if (!v)
		x = def;
	else if (json_is_number(v))
		x = json_number_value(v);
	else
		return scar_error_set(err, SCAR_EINVAL, "configuration key '%s' must be a number", key);
	if (!(x >= lo && x <= hi))
		return scar_error_set(err, SCAR_ERANGE, "configuration key '%s' = %g is out of range [%g, %g]",
				      key, x, lo, hi);
	if (!v || !json_is_real(v))
		if (json_object_set_new(cfg, key, json_real(x)))
			return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	return 0;
}

/*
 * A string key; absent = def (NULL def: the key stays absent). When choices
 * (NULL-terminated) is given the value must be one of them.
 */
static inline int mu_cfg_str(json_t *cfg, const char *key, const char *def,
			     const char *const *choices, struct scar_error *err)
{
	json_t *v = json_object_get(cfg, key);

	if (!v) {
		if (!def)
			return 0;
		return json_object_set_new(cfg, key, json_string(def)) ?
			scar_error_set(err, SCAR_ENOMEM, "out of memory") : 0;
	}
	if (!json_is_string(v))
		return scar_error_set(err, SCAR_EINVAL, "configuration key '%s' must be a string", key);
	if (choices) {
		for (size_t i = 0; choices[i]; i++)
			if (strcmp(choices[i], json_string_value(v)) == 0)
				return 0;
		return scar_error_set(err, SCAR_EINVAL, "configuration key '%s': unknown value '%s'",
				      key, json_string_value(v));
	}
	if (!*json_string_value(v))
		return scar_error_set(err, SCAR_EINVAL, "configuration key '%s' is empty", key);
	return 0;
}

/* Readers for a configured object (keys are known to be present and typed). */
static inline int64_t mu_get_int(const json_t *cfg, const char *key)
{
	return (int64_t)json_integer_value(json_object_get(cfg, key));
}

static inline double mu_get_real(const json_t *cfg, const char *key)
{
	return json_number_value(json_object_get(cfg, key));
}

/* NULL when absent. */
static inline const char *mu_get_str(const json_t *cfg, const char *key)
{
	return json_string_value(json_object_get(cfg, key));
}

/*
 * SCAR_EINVAL naming the first key of cfg that is not in the table, with
 * the nearest key as a "did you mean" or else the table's keys.
 */
static inline int mu_cfg_known(json_t *cfg, const struct scar_model_key *keys,
			       const char *model, struct scar_error *err)
{
	const char *k, *names[64];
	size_t n = 0, near;
	json_t *v;

	if (!json_is_object(cfg))
		return scar_error_set(err, SCAR_EINVAL, "%s: configuration is not an object", model);
	for (n = 0; keys[n].name && n < sizeof(names) / sizeof(*names); n++)
		names[n] = keys[n].name;
	json_object_foreach(cfg, k, v) {
		size_t i, len = 0;
		char list[400];

		for (i = 0; i < n; i++)
			if (strcmp(names[i], k) == 0)
				break;
		if (i < n)
			continue;
		if ((near = scar_name_nearest(k, names, n)) < n)
			return scar_error_set(err, SCAR_EINVAL,
					      "%s: unknown configuration key '%s'; did you mean '%s'?",
					      model, k, names[near]);
		list[0] = 0;
		for (i = 0; i < n && len < sizeof(list); i++)
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", i ? ", " : "",
						names[i]);
		return scar_error_set(err, SCAR_EINVAL, "%s: unknown configuration key '%s' (its keys: %s)",
				      model, k, list);
	}
	return 0;
}

/*
 * Configure cfg by the model's key table (scar/model.h): refuse an
 * unknown key; then, in table order, with real data (real nonzero) a key
 * of the synthetic generator, which would be ignored, and every key's
 * value of the wrong type or out of range, and add the defaults, so that
 * the recorded configuration is complete and holds nothing that is not in
 * effect.
 */
static inline int mu_cfg_apply(json_t *cfg, const struct scar_model_key *keys, int real,
			       const char *model, struct scar_error *err)
{
	int rc;

	if ((rc = mu_cfg_known(cfg, keys, model, err)))
		return rc;
	for (const struct scar_model_key *k = keys; k->name; k++) {
		int given = json_object_get(cfg, k->name) != NULL;

		if (given && real && (k->flags & SCAR_KEY_SYNTHETIC))
			return scar_error_set(err, SCAR_EINVAL,
					      "%s: key '%s' is for synthetic data; the data set fixes it",
					      model, k->name);
		if (!given && ((k->flags & SCAR_KEY_OPTIONAL) ||
			       (real && (k->flags & (SCAR_KEY_SYNTHETIC | SCAR_KEY_SYNTH_DEFAULT)))))
			continue;
		switch (k->type) {
		case SCAR_KEY_INT:
			rc = mu_cfg_int(cfg, k->name, k->def_key ? mu_get_int(cfg, k->def_key) : k->int_def,
					k->int_min, k->int_max, err);
			break;
		case SCAR_KEY_REAL:
			rc = mu_cfg_real(cfg, k->name, k->real_def, k->real_min, k->real_max, err);
			break;
		default:
			rc = mu_cfg_str(cfg, k->name, k->str_def, k->choices, err);
			break;
		}
		if (rc)
			return rc;
	}
	return 0;
}

/* Table entries (scar/model.h): a key with a default, one without, one of the generator. */
#define MU_INT(nm, def, lo, hi, h) \
	{ .name = nm, .type = SCAR_KEY_INT, .int_def = def, .int_min = lo, .int_max = hi, .help = h }
#define MU_REAL(nm, def, lo, hi, h) \
	{ .name = nm, .type = SCAR_KEY_REAL, .real_def = def, .real_min = lo, .real_max = hi, .help = h }
#define MU_STR(nm, def, ch, h) \
	{ .name = nm, .type = SCAR_KEY_STRING, .str_def = def, .choices = ch, .help = h }
#define MU_PATH(nm, h) \
	{ .name = nm, .type = SCAR_KEY_STRING, .flags = SCAR_KEY_OPTIONAL, .help = h }
#define MU_SYNTH_INT(nm, def, lo, hi, h) \
	{ .name = nm, .type = SCAR_KEY_INT, .flags = SCAR_KEY_SYNTHETIC, .int_def = def, \
	  .int_min = lo, .int_max = hi, .help = h }
#define MU_SYNTH_REAL(nm, def, lo, hi, h) \
	{ .name = nm, .type = SCAR_KEY_REAL, .flags = SCAR_KEY_SYNTHETIC, .real_def = def, \
	  .real_min = lo, .real_max = hi, .help = h }
/* The common "seed" and "data_seed" keys: seed default 1, data_seed default = seed. */
#define MU_SEEDS(seed_help, data_seed_help) \
	MU_INT("seed", 1, 0, INT64_MAX, seed_help), \
	{ .name = "data_seed", .type = SCAR_KEY_INT, .def_key = "seed", .int_min = 0, \
	  .int_max = INT64_MAX, .help = data_seed_help }
#define MU_END { .name = NULL }

/* ---- state ---- */

/* Find tensor name with the given dtype and element count, else SCAR_EMISMATCH. */
static inline int mu_find(const struct scar_state *st, const char *name, enum scar_dtype dt,
			  uint64_t elems, struct scar_tensor **out, struct scar_error *err)
{
	struct scar_tensor *t = scar_state_find(st, name);

	*out = NULL;
	if (!t)
		return scar_error_set(err, SCAR_ENOTFOUND, "state has no tensor '%s'", name);
	if (t->dtype != dt || scar_tensor_elems(t) != elems)
		return scar_error_set(err, SCAR_EMISMATCH, "tensor '%s' has the wrong layout", name);
	*out = t;
	return 0;
}

/* Create a zero tensor and add it to st; *out (optional) borrows it. */
static inline int mu_add(struct scar_state *st, const char *name, enum scar_dtype dt,
			 enum scar_role role, int ndim, uint64_t d0, uint64_t d1,
			 struct scar_tensor **out, struct scar_error *err)
{
	uint64_t shape[2] = { d0, d1 };
	struct scar_tensor *t;
	int rc = scar_tensor_new(&t, name, dt, role, ndim, shape, err);

	if (rc)
		return rc;
	rc = scar_state_add(st, t, err);
	if (out)
		*out = rc ? NULL : t;
	return rc;
}

/* The worker RNG lives in the u64 [SCAR_RNG_WORDS] state tensor "rng". */
static inline int mu_rng_add(struct scar_state *st, uint64_t seed, uint64_t stream,
			     struct scar_error *err)
{
	struct scar_tensor *t;
	struct scar_rng r;
	int rc = mu_add(st, "rng", SCAR_U64, SCAR_ROLE_STATE, 1, SCAR_RNG_WORDS, 0, &t, err);

	if (rc)
		return rc;
	scar_rng_seed_stream(&r, seed, stream);
	scar_rng_save(&r, t->data);
	return 0;
}

static inline int mu_rng_get(const struct scar_state *st, struct scar_rng *r,
			     struct scar_error *err)
{
	struct scar_tensor *t;
	int rc = mu_find(st, "rng", SCAR_U64, SCAR_RNG_WORDS, &t, err);

	if (rc)
		return rc;
	if (scar_rng_load(r, t->data))
		return scar_error_set(err, SCAR_ECORRUPT, "tensor 'rng' is not a valid generator state");
	return 0;
}

static inline void mu_rng_put(struct scar_state *st, const struct scar_rng *r)
{
	struct scar_tensor *t = scar_state_find(st, "rng");

	scar_rng_save(r, t->data);
}

/* The "seed" of a state's config (init_state draws from it), else def. */
static inline uint64_t mu_state_seed(const struct scar_state *st, uint64_t def)
{
	json_t *v = st->config ? json_object_get(st->config, "seed") : NULL;

	return json_is_integer(v) ? (uint64_t)json_integer_value(v) : def;
}

/*
 * The data order of an epoch: a permutation of 0..n-1 that is a function of
 * (seed, stream, iteration) alone (a Fisher-Yates shuffle of the identity by
 * a keyed stream, scar/rng.h), not of the orders before it, so a run whose
 * parameters were perturbed visits the examples in the same order as its
 * reference, and a rolled-back run replays its orders.
 */
#define SCAR_MLR_ORDER_STREAM 32	/* mlr's epoch orders (one-process and distributed step) */
#define SCAR_MF_ORDER_STREAM 3		/* mf sgd's epoch orders */
#define SCAR_LDA_GIBBS_STREAM 24	/* lda's Gibbs draws */

static inline void mu_keyed_order(uint32_t *order, uint64_t n, uint64_t seed, uint64_t stream,
				  uint64_t iteration)
{
	struct scar_rng r;

	for (uint64_t i = 0; i < n; i++)
		order[i] = (uint32_t)i;
	scar_rng_seed_key(&r, scar_rng_key_sub(scar_rng_key(seed, stream), iteration));
	scar_rng_shuffle_u32(&r, order, n);
}

/* ---- dense linear algebra (row-major, n x n) ---- */

/* In-place Cholesky A = L L^T (lower triangle); returns -1 if not positive definite. */
static inline int mu_cholesky(double *a, size_t n)
{
	for (size_t j = 0; j < n; j++) {
		double s = a[j * n + j];

		for (size_t k = 0; k < j; k++)
			s -= a[j * n + k] * a[j * n + k];
		if (!(s > 0))
			return -1;
		s = sqrt(s);
		a[j * n + j] = s;
		for (size_t i = j + 1; i < n; i++) {
			double t = a[i * n + j];

			for (size_t k = 0; k < j; k++)
				t -= a[i * n + k] * a[j * n + k];
			a[i * n + j] = t / s;
		}
	}
	return 0;
}

/* Solve L L^T x = b in place (b becomes x), L from mu_cholesky. */
static inline void mu_cholesky_solve(const double *l, size_t n, double *b)
{
	for (size_t i = 0; i < n; i++) {
		double t = b[i];

		for (size_t k = 0; k < i; k++)
			t -= l[i * n + k] * b[k];
		b[i] = t / l[i * n + i];
	}
	for (size_t i = n; i-- > 0;) {
		double t = b[i];

		for (size_t k = i + 1; k < n; k++)
			t -= l[k * n + i] * b[k];
		b[i] = t / l[i * n + i];
	}
}

static inline double mu_dot(const double *a, const double *b, size_t n)
{
	double s0 = 0, s1 = 0;
	size_t i = 0;

	for (; i + 1 < n; i += 2) {
		s0 += a[i] * b[i];
		s1 += a[i + 1] * b[i + 1];
	}
	if (i < n)
		s0 += a[i] * b[i];
	return s0 + s1;
}

/* log Gamma draws for Dirichlet sampling: log of a Gamma(shape, 1) deviate. */
static inline double mu_log_gamma_draw(struct scar_rng *r, double shape)
{
	double boost = 0, d, c;

	if (shape < 1) {
		/* Gamma(a) = Gamma(a + 1) * U^(1/a); in logs so tiny shapes do not underflow. */
		double u;

		do
			u = scar_rng_uniform(r);
		while (u == 0);
		boost = log(u) / shape;
		shape += 1;
	}
	/* Marsaglia and Tsang (2000). */
	d = shape - 1.0 / 3.0;
	c = 1.0 / sqrt(9.0 * d);
	for (;;) {
		double x = scar_rng_normal(r), v = 1 + c * x, u;

		if (v <= 0)
			continue;
		v = v * v * v;
		u = scar_rng_uniform(r);
		if (u > 0 && log(u) < 0.5 * x * x + d - d * v + d * log(v))
			return log(d * v) + boost;
	}
}

/* A Dirichlet(alpha, ..., alpha) draw of n components into p (sums to 1). */
static inline void mu_dirichlet(struct scar_rng *r, double alpha, double *p, size_t n)
{
	double mx = -INFINITY, s = 0;

	for (size_t i = 0; i < n; i++) {
		p[i] = mu_log_gamma_draw(r, alpha);
		if (p[i] > mx)
			mx = p[i];
	}
	for (size_t i = 0; i < n; i++)
		s += (p[i] = exp(p[i] - mx));
	for (size_t i = 0; i < n; i++)
		p[i] /= s;
}

#endif
