/*
 * crc32c.c - CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the
 * checksum of every fixed-size structure and raw section of a checkpoint.
 *
 * Portable path: slicing-by-8 tables built once. On x86-64 with SSE4.2 the
 * crc32 instruction does 8 bytes per cycle-ish; it is picked at run time so
 * the library still runs on older CPUs.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "scar/ckpt.h"
#include "ckpt_internal.h"

static uint32_t crc_tab[8][256];
static int crc_tab_ready;

static void crc_tab_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
		crc_tab[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^ crc_tab[0][crc_tab[t - 1][i] & 0xff];
	/* Benign race: every thread computes the same tables. */
	crc_tab_ready = 1;
}

static uint32_t crc_soft(uint32_t c, const unsigned char *p, size_t n)
{
	if (!crc_tab_ready)
		crc_tab_init();
	while (n && ((uintptr_t)p & 7)) {
		c = crc_tab[0][(c ^ *p++) & 0xff] ^ (c >> 8);
		n--;
	}
	while (n >= 8) {
		uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 |
				   (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
		uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 |
			      (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;

		c = crc_tab[7][lo & 0xff] ^ crc_tab[6][(lo >> 8) & 0xff] ^
		    crc_tab[5][(lo >> 16) & 0xff] ^ crc_tab[4][lo >> 24] ^
		    crc_tab[3][hi & 0xff] ^ crc_tab[2][(hi >> 8) & 0xff] ^
		    crc_tab[1][(hi >> 16) & 0xff] ^ crc_tab[0][hi >> 24];
		p += 8;
		n -= 8;
	}
	while (n--)
		c = crc_tab[0][(c ^ *p++) & 0xff] ^ (c >> 8);
	return c;
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("sse4.2")))
static uint32_t crc_hw(uint32_t c, const unsigned char *p, size_t n)
{
	uint64_t c64;

	while (n && ((uintptr_t)p & 7)) {
		c = __builtin_ia32_crc32qi(c, *p++);
		n--;
	}
	c64 = c;
	while (n >= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		c64 = __builtin_ia32_crc32di(c64, v);
		p += 8;
		n -= 8;
	}
	c = (uint32_t)c64;
	while (n--)
		c = __builtin_ia32_crc32qi(c, *p++);
	return c;
}

static int crc_use_hw = -1;
#endif

uint32_t scar_crc32c(uint32_t crc, const void *buf, size_t len)
{
	uint32_t c = ~crc;

#if defined(__x86_64__) && defined(__GNUC__)
	if (crc_use_hw < 0)
		crc_use_hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
	if (crc_use_hw)
		return ~crc_hw(c, buf, len);
#endif
	return ~crc_soft(c, buf, len);
}

uint32_t scar_ckpt_crc32c_soft(uint32_t crc, const void *buf, size_t len)
{
	return ~crc_soft(~crc, buf, len);
}
