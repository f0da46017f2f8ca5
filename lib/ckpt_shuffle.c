/*
 * ckpt_shuffle.c - the byte shuffle of format 1.3 (scar-ckpt(5), section
 * flag bit 3), as Blosc and HDF5's shuffle filter do it: the bytes of each
 * LZ4 block are regrouped by their place in an element, byte j of element i
 * going to j * m + i (m whole elements), the n mod e bytes of a partial
 * element left at the end. The high bytes of small integers (lda's topic
 * assignments, mlr's data order) and the exponents of floats then stand
 * together in runs that LZ4 finds.
 *
 * Plain loops over 2, 4 and 8 planes, which the compiler vectorises (the
 * Makefile adds -ftree-vectorize for this file, which GCC's -O2 leaves out):
 * one pass, several GB/s, against LZ4's few hundred MB/s.
 */
#include <string.h>

#include <lz4.h>

#include "scar/ckpt.h"
#include "ckpt_internal.h"

static void shuffle2(unsigned char *restrict d, const unsigned char *restrict s, size_t m)
{
	unsigned char *restrict d1 = d + m;

	for (size_t i = 0; i < m; i++) {
		d[i] = s[2 * i];
		d1[i] = s[2 * i + 1];
	}
}

static void shuffle4(unsigned char *restrict d, const unsigned char *restrict s, size_t m)
{
	unsigned char *restrict d1 = d + m, *restrict d2 = d + 2 * m, *restrict d3 = d + 3 * m;

	for (size_t i = 0; i < m; i++) {
		d[i] = s[4 * i];
		d1[i] = s[4 * i + 1];
		d2[i] = s[4 * i + 2];
		d3[i] = s[4 * i + 3];
	}
}

/* Plane by plane: GCC 12 makes slow code of the eight-way loop of shuffle4's form. */
static void shuffle8(unsigned char *restrict d, const unsigned char *restrict s, size_t m)
{
	for (size_t j = 0; j < 8; j++) {
		unsigned char *restrict dj = d + j * m;

		for (size_t i = 0; i < m; i++)
			dj[i] = s[8 * i + j];
	}
}

static void unshuffle2(unsigned char *restrict d, const unsigned char *restrict s, size_t m)
{
	const unsigned char *restrict s1 = s + m;

	for (size_t i = 0; i < m; i++) {
		d[2 * i] = s[i];
		d[2 * i + 1] = s1[i];
	}
}

static void unshuffle4(unsigned char *restrict d, const unsigned char *restrict s, size_t m)
{
	const unsigned char *restrict s1 = s + m, *restrict s2 = s + 2 * m, *restrict s3 = s + 3 * m;

	for (size_t i = 0; i < m; i++) {
		d[4 * i] = s[i];
		d[4 * i + 1] = s1[i];
		d[4 * i + 2] = s2[i];
		d[4 * i + 3] = s3[i];
	}
}

static void unshuffle8(unsigned char *restrict d, const unsigned char *restrict s, size_t m)
{
	const unsigned char *restrict s1 = s + m, *restrict s2 = s + 2 * m, *restrict s3 = s + 3 * m;
	const unsigned char *restrict s4 = s + 4 * m, *restrict s5 = s + 5 * m;
	const unsigned char *restrict s6 = s + 6 * m, *restrict s7 = s + 7 * m;

	for (size_t i = 0; i < m; i++) {
		d[8 * i] = s[i];
		d[8 * i + 1] = s1[i];
		d[8 * i + 2] = s2[i];
		d[8 * i + 3] = s3[i];
		d[8 * i + 4] = s4[i];
		d[8 * i + 5] = s5[i];
		d[8 * i + 6] = s6[i];
		d[8 * i + 7] = s7[i];
	}
}

void scar_ckpt_shuffle(void *dst, const void *src, size_t n, size_t esz)
{
	unsigned char *d = dst;
	const unsigned char *s = src;
	size_t m = esz ? n / esz : 0, body = m * esz;

	switch (esz) {
	case 2: shuffle2(d, s, m); break;
	case 4: shuffle4(d, s, m); break;
	case 8: shuffle8(d, s, m); break;
	default:
		for (size_t i = 0; i < m; i++)
			for (size_t j = 0; j < esz; j++)
				d[j * m + i] = s[i * esz + j];
	}
	memcpy(d + body, s + body, n - body);
}

void scar_ckpt_unshuffle(void *dst, const void *src, size_t n, size_t esz)
{
	unsigned char *d = dst;
	const unsigned char *s = src;
	size_t m = esz ? n / esz : 0, body = m * esz;

	switch (esz) {
	case 2: unshuffle2(d, s, m); break;
	case 4: unshuffle4(d, s, m); break;
	case 8: unshuffle8(d, s, m); break;
	default:
		for (size_t i = 0; i < m; i++)
			for (size_t j = 0; j < esz; j++)
				d[i * esz + j] = s[j * m + i];
	}
	memcpy(d + body, s + body, n - body);
}

/* LZ4 fast's size for n bytes, n when they do not shrink (stored, as a block would be). */
static size_t lz4_size(const unsigned char *src, size_t n, unsigned char *dst)
{
	int c = LZ4_compress_default((const char *)src, (char *)dst, (int)n, (int)n - 1);

	return c > 0 ? (size_t)c : n;
}

int scar_ckpt_shuffle_pays(const void *sample, size_t n, size_t esz, unsigned char *buf)
{
	const unsigned char *s = sample;

	if (esz < 2 || n < 2 * esz)
		return 0;
	if (n > CKPT_SHUFFLE_SAMPLE)
		n = CKPT_SHUFFLE_SAMPLE;
	scar_ckpt_shuffle(buf, s, n, esz);
	/* Ties go to the plain bytes: cheaper to read, and readable before 1.3. */
	return lz4_size(buf, n, buf + CKPT_SHUFFLE_SAMPLE) < lz4_size(s, n, buf + CKPT_SHUFFLE_SAMPLE);
}

static const char *const shuffle_names[] = { "off", "on", "auto" };

int scar_shuffle_parse(const char *name)
{
	for (int i = 0; name && i < 3; i++)
		if (strcmp(name, shuffle_names[i]) == 0)
			return i;
	return -1;
}

const char *scar_shuffle_name(int shuffle)
{
	return shuffle >= 0 && shuffle < 3 ? shuffle_names[shuffle] : NULL;
}
