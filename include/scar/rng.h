/*
 * scar/rng.h - the deterministic random number generator.
 *
 * xoshiro256** (Blackman and Vigna) seeded through splitmix64. The whole
 * state is the struct below, a plain value: copy it to save it, store its
 * words in a checkpoint (scar_rng_save/_load, SCAR_RNG_WORDS u64 values) and
 * the stream continues exactly. Same seed, same numbers, on every platform.
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

void scar_rng_save(const struct scar_rng *r, uint64_t out[SCAR_RNG_WORDS]);
/* Restore; returns SCAR_ECORRUPT (-5) when the words cannot be a valid state (all-zero). */
int scar_rng_load(struct scar_rng *r, const uint64_t in[SCAR_RNG_WORDS]);

#ifdef __cplusplus
}
#endif
#endif
