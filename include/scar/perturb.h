/*
 * scar/perturb.h - perturbations of a training state, in place.
 *
 * What scar-inject does, as library calls: lose shards and reset their rows,
 * add Gaussian noise of an exact L2 norm, flip bits, reduce precision, mix in
 * an older state. Every call touches only the rows a struct scar_select
 * admits, and only rows present in the state (partial snapshots keep their
 * present map). All randomness comes from the caller's struct scar_rng, in
 * a fixed order (tensors in state order, rows ascending, elements in row
 * order), so a seed gives the same perturbation on every platform.
 *
 * Floating-point results are rounded to the tensor's dtype as they are
 * stored. Noise and quantisation apply to f32 and f64 tensors only; integer
 * tensors are skipped (SCAR_EINVAL when the selection names one).
 */
#ifndef SCAR_PERTURB_H
#define SCAR_PERTURB_H

#include <stdint.h>

#include "scar/error.h"
#include "scar/rng.h"
#include "scar/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which rows may be touched. */
struct scar_select {
	const char *tensor;	/* this tensor (any role); NULL = every param tensor */
	int64_t shard;		/* only rows of this shard; -1 = all */
	uint64_t row_lo, row_hi;	/* only rows in [row_lo, row_hi) */
};

/* Everything: all param tensors, all shards, all rows. */
void scar_select_init(struct scar_select *s);

/*
 * Check a selection against st, the one place selections are validated:
 * the tensor exists (SCAR_ENOTFOUND), then scar_select_check_rows on it;
 * without a tensor, on the parameter tensor with the most rows (the
 * selection must lie within it). Every perturbation call checks it too.
 */
int scar_select_check(const struct scar_state *st, const struct scar_select *sel,
		      struct scar_error *err);

/*
 * Check a selection against one tensor `name` of `rows` rows in `shards`
 * shards (SCAR_ERANGE, the message naming the tensor, its rows or shards
 * and the selection): the row range is not empty and lies within the
 * tensor (an open end, row_hi = UINT64_MAX, stops at its last row); the
 * shard, when given, is below shards and holds at least one row of the
 * range. So a selection that can touch nothing is an error, never a no-op.
 */
int scar_select_check_rows(const char *name, uint64_t rows, uint32_t shards,
			   const struct scar_select *sel, struct scar_error *err);

/* Nonzero when row r of t (in a state of S shards) is selected and present. */
int scar_select_row(const struct scar_tensor *t, uint32_t S, const struct scar_select *sel,
		    uint64_t r);

struct scar_perturb_report {
	uint64_t tensors;	/* tensors with a touched row */
	uint64_t rows;		/* rows touched (lost, noised, quantised, ...) */
	uint64_t elements;	/* elements of those rows */
	uint64_t bits;		/* bits flipped */
	uint64_t skipped;	/* selected rows left alone (absent from the older state) */
};

/* ---- losing shards ---- */

enum scar_reset {
	SCAR_RESET_ZERO = 1,	/* rows become 0 */
	SCAR_RESET_RANDOM = 2,	/* Gaussian with the tensor's mean and std over its present rows */
	SCAR_RESET_FROM = 3,	/* the rows of another state (older checkpoint, initial state) */
};

/*
 * Choose count distinct shards of S at random: lost[s] = 1 for the chosen,
 * 0 for the others (lost has S entries). SCAR_ERANGE when count > S.
 */
int scar_perturb_pick_shards(uint32_t S, uint32_t count, struct scar_rng *rng, uint8_t *lost,
			     struct scar_error *err);

/*
 * Check the shards a failure loses in a state of S shards: every entry of
 * list (n of them; list may be NULL when n is 0) below S, and count (0 when
 * none) at most S; SCAR_ERANGE naming the first that is not. The one check
 * of scar-inject's and the trainer's lost-shard options.
 */
int scar_shards_check(const uint32_t *list, size_t n, uint32_t count, uint32_t S,
		      struct scar_error *err);

/*
 * Lose the selected rows of param tensors that lie in a shard s with
 * lost[s] != 0 (lost has st->shards entries) and reset them as how says.
 * For SCAR_RESET_FROM, src must hold every such tensor with the same dtype
 * and shape (SCAR_EMISMATCH) and every such row (SCAR_ENOTFOUND naming it).
 * rng is used by SCAR_RESET_RANDOM only (may be NULL otherwise).
 */
int scar_perturb_lose(struct scar_state *st, const struct scar_select *sel, const uint8_t *lost,
		      enum scar_reset how, const struct scar_state *src, struct scar_rng *rng,
		      struct scar_perturb_report *rep, struct scar_error *err);

/* ---- noise ---- */

/* Accurate L2 norm of the elements scar_perturb_noise would change (any finite range). */
double scar_perturb_norm(const struct scar_state *st, const struct scar_select *sel);

/*
 * Add Gaussian noise to the selected elements (of the floating-point
 * tensors, or of the integer ones when none is selected), scaled so that the stored
 * change has L2 norm l2: after rounding to the dtype the norm is measured
 * and the scale corrected (up to 4 passes), so the result is l2 to within
 * rounding (about 1e-15 relative for f64; for f32, unless l2 is tiny
 * against the values). In integer tensors (lda's counts) each element's
 * noise is rounded to a whole number, so the norm is l2 only roughly, and a
 * noise much smaller than 1 per element rounds to no change at all.
 * *achieved (may be NULL) gets the norm of the change actually stored.
 * l2 = 0 changes nothing. Norms are computed without overflow or underflow
 * (scar_sumsq), so any finite l2 is honoured or refused, never silently
 * changed: SCAR_ERANGE, with the state left as it was, when an element
 * would pass its dtype's largest finite value (f32: about 3.4e38 per
 * element), or when the norm stored in float tensors differs from l2 by
 * more than SCAR_NOISE_TOLERANCE relative (the noise is too small to
 * survive rounding to the values' precision).
 */
#define SCAR_NOISE_TOLERANCE 1e-6

int scar_perturb_noise(struct scar_state *st, const struct scar_select *sel, double l2,
		       struct scar_rng *rng, double *achieved, struct scar_perturb_report *rep,
		       struct scar_error *err);

/* ---- bit flips ---- */

enum scar_bits {
	SCAR_BITS_ANY = 1,	/* every bit of the element */
	SCAR_BITS_SIGN = 2,	/* the top bit (floats and signed integers) */
	SCAR_BITS_EXPONENT = 3,	/* float exponent bits */
	SCAR_BITS_MANTISSA = 4,	/* float fraction bits */
};

/* "any", "sign", ... and back; 0 / NULL when unknown. */
enum scar_bits scar_bits_parse(const char *name);
const char *scar_bits_name(enum scar_bits b);

/*
 * Flip each eligible bit of the selected elements independently with
 * probability rate (0..1). Eligible bits are those of the class in every
 * selected tensor the class applies to (exponent and mantissa: floats only;
 * sign: floats and signed integers; any: all).
 */
int scar_perturb_bitflip_rate(struct scar_state *st, const struct scar_select *sel,
			      enum scar_bits bits, double rate, struct scar_rng *rng,
			      struct scar_perturb_report *rep, struct scar_error *err);
/* Flip exactly count distinct eligible bits, uniformly at random (SCAR_ERANGE if too few). */
int scar_perturb_bitflip_count(struct scar_state *st, const struct scar_select *sel,
			       enum scar_bits bits, uint64_t count, struct scar_rng *rng,
			       struct scar_perturb_report *rep, struct scar_error *err);

/* ---- precision ---- */

enum scar_quant {
	SCAR_QUANT_F16 = 1,	/* IEEE binary16, round to nearest even */
	SCAR_QUANT_BF16 = 2,	/* bfloat16, round to nearest even */
	SCAR_QUANT_INT8 = 3,	/* symmetric int8 with a per-row scale max|x| / 127 */
};

enum scar_quant scar_quant_parse(const char *name);
const char *scar_quant_name(enum scar_quant q);

/*
 * Round the selected float elements through the format and back (the value
 * a reduced-precision copy would restore). Non-finite values are kept; for
 * int8 they are left out of the row's scale.
 */
int scar_perturb_quantize(struct scar_state *st, const struct scar_select *sel,
			  enum scar_quant q, struct scar_perturb_report *rep,
			  struct scar_error *err);

/* The f16 and bf16 conversions are in scar/tensor.h. */

/* ---- staleness ---- */

/*
 * x = (1 - alpha) x + alpha old on the selected float rows that old also
 * has (same dtype and shape, else SCAR_EMISMATCH); selected rows old lacks
 * are counted in rep->skipped. Integer tensors take old's value when
 * alpha >= 0.5. alpha in [0, 1] (SCAR_ERANGE).
 */
int scar_perturb_mix(struct scar_state *st, const struct scar_select *sel,
		     const struct scar_state *old, double alpha,
		     struct scar_perturb_report *rep, struct scar_error *err);

#ifdef __cplusplus
}
#endif
#endif
