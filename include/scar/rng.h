/*
 * scar/rng.h - the deterministic random number generator.
 *
 * xoshiro256** (Blackman and Vigna) seeded through splitmix64. The whole
 * state is the struct below, a plain value: copy it to save it, store its
 * words in a checkpoint (scar_rng_save/_load, SCAR_RNG_WORDS u64 values) and
 * the stream continues exactly. Same seed, same numbers, on every platform.
 *
 * Beside the sequential streams, counter-based (keyed) draws: a 64-bit key
 * that is a pure function of the words it is built from,
 *     k = scar_rng_key(seed, stream), then k = scar_rng_key_sub(k, x) for each
 *     further word x (e.g. the iteration, then the item, then a sub-index),
 * and numbers that are pure functions of a key (scar_rng_key_uniform,
 * scar_rng_key_u32, or a sequential stream seeded by it, scar_rng_seed_key).
 * What this guarantees: the same words give the same key and the same
 * numbers on every platform (integer arithmetic only), whatever the order
 * the keys are made in, however the items are split over threads or
 * processes (any P), and whatever else was drawn before or beside: there
 * is no state. Two runs that build the same key for the same (iteration,
 * item) use the same numbers there, which is what couples a perturbed run
 * to its reference. Keys built from different words behave as independent
 * uniform 64-bit values: each step is one output of a splitmix64 sequence
 * (Steele, Lea and Flood 2014) started at the previous key, i.e.
 *     key_sub(k, x) = mix64(k + (x + 1) * 0x9e3779b97f4a7c15),
 *     key(seed, stream) = key_sub(mix64(seed + 0x9e3779b97f4a7c15), stream)
 * with mix64 splitmix64's output function (a bijection with full avalanche).
 */
#ifndef SCAR_RNG_H
#define SCAR_RNG_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SCAR_RNG_WORDS 6

struct scar_rng {
	uint64_t s[4];
	uint64_t has_spare;	/* a cached second normal deviate is valid */
	uint64_t spare_bits;	/* its IEEE-754 bits, so the state is all integers */
};

/* Seed from one 64-bit value; any seed (including 0) is fine. */
void scar_rng_seed(struct scar_rng *r, uint64_t seed);
/* An independent stream: the seed mixed with a stream id (e.g. a shard or thread). */
void scar_rng_seed_stream(struct scar_rng *r, uint64_t seed, uint64_t stream);
uint64_t scar_rng_u64(struct scar_rng *r);
/* Uniform in [0, 1) with 53 random bits. */
double scar_rng_uniform(struct scar_rng *r);
/* Uniform integer in [0, n), unbiased; n = 0 returns 0. */
uint64_t scar_rng_below(struct scar_rng *r, uint64_t n);
/* Standard normal deviate (polar Box-Muller; the spare is part of the state). */
double scar_rng_normal(struct scar_rng *r);
/* Fisher-Yates shuffle of n uint32 values. */
void scar_rng_shuffle_u32(struct scar_rng *r, uint32_t *v, uint64_t n);

/* ---- counter-based (keyed) draws ---- */

/* The root key of a (seed, stream) pair. */
uint64_t scar_rng_key(uint64_t seed, uint64_t stream);
/* The key one word further: key_sub(key_sub(scar_rng_key(s, st), iter), item). */
uint64_t scar_rng_key_sub(uint64_t key, uint64_t x);
/* Uniform in [0, 1) with 53 bits: the key's top 53 bits times 2^-53. */
double scar_rng_key_uniform(uint64_t key);
/*
 * A 32-bit value for sub-index lane of a key, defined with 32-bit
 * operations only so that 8 lanes can be computed in one SIMD register
 * (model_lda.c does, bit-identical to this function):
 *     x = mix32((uint32_t)key ^ lane * 0x9e3779b9), x = mix32(x ^ (key >> 32))
 * with mix32 the xorshift-multiply hash x ^= x >> 16, x *= 0x7feb352d,
 * x ^= x >> 15, x *= 0x846ca68b, x ^= x >> 16 (constants from Wellons'
 * hash-prospector "lowbias32"). The lanes of one key are distinct.
 */
uint32_t scar_rng_key_u32(uint64_t key, uint32_t lane);
/* A sequential stream that is a function of the key alone (e.g. a keyed shuffle). */
void scar_rng_seed_key(struct scar_rng *r, uint64_t key);

void scar_rng_save(const struct scar_rng *r, uint64_t out[SCAR_RNG_WORDS]);
/* Restore; returns SCAR_ECORRUPT (-5) when the words cannot be a valid state (all-zero). */
int scar_rng_load(struct scar_rng *r, const uint64_t in[SCAR_RNG_WORDS]);

#ifdef __cplusplus
}
#endif
#endif
