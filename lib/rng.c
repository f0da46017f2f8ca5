/* rng.c - xoshiro256** with splitmix64 seeding (see scar/rng.h). */
#include <math.h>
#include <string.h>

#include "scar/error.h"
#include "scar/rng.h"

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* splitmix64's output function: a bijection of the 64-bit words. */
static inline uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline uint32_t mix32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352dU;
	x ^= x >> 15;
	x *= 0x846ca68bU;
	return x ^ (x >> 16);
}

uint64_t scar_rng_key_sub(uint64_t key, uint64_t x)
{
	return mix64(key + (x + 1) * 0x9e3779b97f4a7c15ULL);
}

uint64_t scar_rng_key(uint64_t seed, uint64_t stream)
{
	return scar_rng_key_sub(mix64(seed + 0x9e3779b97f4a7c15ULL), stream);
}

double scar_rng_key_uniform(uint64_t key)
{
	return (double)(key >> 11) * 0x1.0p-53;
}

uint32_t scar_rng_key_u32(uint64_t key, uint32_t lane)
{
	uint32_t x = mix32((uint32_t)key ^ (lane * 0x9e3779b9U));

	return mix32(x ^ (uint32_t)(key >> 32));
}

void scar_rng_seed_key(struct scar_rng *r, uint64_t key)
{
	scar_rng_seed(r, key);
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

void scar_rng_seed(struct scar_rng *r, uint64_t seed)
{
	uint64_t x = seed;

	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
	r->has_spare = 0;
	r->spare_bits = 0;
}

void scar_rng_seed_stream(struct scar_rng *r, uint64_t seed, uint64_t stream)
{
	uint64_t x = stream;

	/* Mix the stream id through splitmix first so nearby ids decorrelate. */
	scar_rng_seed(r, seed ^ splitmix64(&x));
}

uint64_t scar_rng_u64(struct scar_rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

double scar_rng_uniform(struct scar_rng *r)
{
	return (double)(scar_rng_u64(r) >> 11) * 0x1.0p-53;
}

uint64_t scar_rng_below(struct scar_rng *r, uint64_t n)
{
	uint64_t x, lim;

	if (n == 0)
		return 0;
	/* Rejection keeps it unbiased; lim is 2^64 mod n. */
	lim = (0 - n) % n;
	do
		x = scar_rng_u64(r);
	while (x < lim);
	return x % n;
}

double scar_rng_normal(struct scar_rng *r)
{
	double u, v, s, m;

	if (r->has_spare) {
		double d;

		memcpy(&d, &r->spare_bits, sizeof(d));
		r->has_spare = 0;
		return d;
	}
	do {
		u = 2.0 * scar_rng_uniform(r) - 1.0;
		v = 2.0 * scar_rng_uniform(r) - 1.0;
		s = u * u + v * v;
	} while (s >= 1.0 || s == 0.0);
	m = sqrt(-2.0 * log(s) / s);
	v *= m;
	memcpy(&r->spare_bits, &v, sizeof(v));
	r->has_spare = 1;
	return u * m;
}

void scar_rng_shuffle_u32(struct scar_rng *r, uint32_t *v, uint64_t n)
{
	for (uint64_t i = n; i > 1; i--) {
		uint64_t j = scar_rng_below(r, i);
		uint32_t t = v[i - 1];

		v[i - 1] = v[j];
		v[j] = t;
	}
}

void scar_rng_save(const struct scar_rng *r, uint64_t out[SCAR_RNG_WORDS])
{
	memcpy(out, r->s, sizeof(r->s));
	out[4] = r->has_spare;
	out[5] = r->spare_bits;
}

int scar_rng_load(struct scar_rng *r, const uint64_t in[SCAR_RNG_WORDS])
{
	if ((in[0] | in[1] | in[2] | in[3]) == 0 || in[4] > 1)
		return SCAR_ECORRUPT;
	memcpy(r->s, in, sizeof(r->s));
	r->has_spare = in[4];
	r->spare_bits = in[5];
	return 0;
}
