/*
 * ckpt_xxh32.c - xxHash-32, the block and content checksum of LZ4 frames.
 *
 * liblz4 computes these itself, but some builds of it (Debian's 1.9.4, for
 * one) vectorise the 32-bit multiplies badly and hash at about a fifth of
 * the speed of this plain scalar loop, which made checksums most of the cost
 * of reading a checkpoint. The reader therefore asks LZ4F to skip them and
 * checks both here; the algorithm is Yann Collet's published xxHash-32.
 */
#include <string.h>

#include "ckpt_internal.h"

#define XP1 0x9E3779B1u
#define XP2 0x85EBCA77u
#define XP3 0xC2B2AE3Du
#define XP4 0x27D4EB2Fu
#define XP5 0x165667B1u

static inline uint32_t rotl32(uint32_t x, int r)
{
	return (x << r) | (x >> (32 - r));
}

static inline uint32_t rd32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);	/* little-endian host, see ckpt_internal.h */
	return v;
}

static inline uint32_t lane(uint32_t acc, uint32_t in)
{
	return rotl32(acc + in * XP2, 13) * XP1;
}

static const unsigned char *stripes(uint32_t v[4], const unsigned char *p, size_t n)
{
	const unsigned char *end = p + (n & ~(size_t)15);

	for (; p < end; p += 16) {
		v[0] = lane(v[0], rd32(p));
		v[1] = lane(v[1], rd32(p + 4));
		v[2] = lane(v[2], rd32(p + 8));
		v[3] = lane(v[3], rd32(p + 12));
	}
	return p;
}

static uint32_t finish(uint32_t h, const unsigned char *p, size_t n)
{
	for (; n >= 4; n -= 4, p += 4)
		h = rotl32(h + rd32(p) * XP3, 17) * XP4;
	for (; n; n--, p++)
		h = rotl32(h + *p * XP5, 11) * XP1;
	h ^= h >> 15;
	h *= XP2;
	h ^= h >> 13;
	h *= XP3;
	return h ^ (h >> 16);
}

void scar_ckpt_xxh32_init(struct ckpt_xxh32 *s, uint32_t seed)
{
	memset(s, 0, sizeof(*s));
	s->v[0] = seed + XP1 + XP2;
	s->v[1] = seed + XP2;
	s->v[2] = seed;
	s->v[3] = seed - XP1;
	s->seed = seed;
}

void scar_ckpt_xxh32_update(struct ckpt_xxh32 *s, const void *buf, size_t n)
{
	const unsigned char *p = buf;

	s->total += n;
	if (s->nbuf) {
		size_t k = 16 - s->nbuf < n ? 16 - s->nbuf : n;

		memcpy(s->buf + s->nbuf, p, k);
		s->nbuf += k;
		p += k;
		n -= k;
		if (s->nbuf < 16)
			return;
		stripes(s->v, s->buf, 16);
		s->nbuf = 0;
	}
	{
		const unsigned char *q = stripes(s->v, p, n);

		n -= (size_t)(q - p);
		memcpy(s->buf, q, n);
		s->nbuf = n;
	}
}

uint32_t scar_ckpt_xxh32_digest(const struct ckpt_xxh32 *s)
{
	uint32_t h;

	if (s->total >= 16)
		h = rotl32(s->v[0], 1) + rotl32(s->v[1], 7) + rotl32(s->v[2], 12) + rotl32(s->v[3], 18);
	else
		h = s->seed + XP5;
	return finish(h + (uint32_t)s->total, s->buf, s->nbuf);
}

uint32_t scar_ckpt_xxh32(const void *buf, size_t n, uint32_t seed)
{
	struct ckpt_xxh32 s;

	scar_ckpt_xxh32_init(&s, seed);
	scar_ckpt_xxh32_update(&s, buf, n);
	return scar_ckpt_xxh32_digest(&s);
}
