/*
 * ckpt_internal.h - what the checkpoint files of libscar share: the byte
 * layout constants of format v1 (see scar-ckpt(5)), little-endian codecs,
 * I/O loops and the reader's internal decode modes. Not installed.
 */
#ifndef SCAR_CKPT_INTERNAL_H
#define SCAR_CKPT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "scar/ckpt.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "scar checkpoints are little-endian; this host is not (payloads would need swapping)"
#endif

#define CKPT_HEADER_LEN 16
#define CKPT_META_HDR_LEN 8
#define CKPT_SEC_HDR_LEN 48
#define CKPT_IDX_ENTRY_LEN 40
#define CKPT_TRAILER_LEN 32
#define CKPT_SEC_MAGIC "SCSE"
#define CKPT_IDX_MAGIC "SCIX"
#define CKPT_END_MAGIC "SCAREND\n"
#define CKPT_MAJOR 1
/*
 * A writer puts the lowest minor version that can read its file: 0, 1
 * when a tensor's present rows are a bitmap (format 1.1), 2 when a tensor
 * is f16 or bf16 (format 1.2), 3 when a section is byte-shuffled (format
 * 1.3). The reader knows every 1.x up to CKPT_MINOR and reads any 1.x whose
 * features it knows.
 */
#define CKPT_MINOR 3

/* Section flags: bit 0 LZ4 frame; bits 1-2 LZ4 block size code b (64 KiB << 2b);
 * bit 3 (1.3) each LZ4 block's content byte-shuffled by the dtype's size. */
#define CKPT_SF_LZ4 0x1u
#define CKPT_SF_BCODE_SHIFT 1
#define CKPT_SF_BCODE_MASK 0x6u
#define CKPT_SF_SHUFFLE 0x8u
#define CKPT_SF_KNOWN (CKPT_SF_LZ4 | CKPT_SF_BCODE_MASK | CKPT_SF_SHUFFLE)

/* The only LZ4 frame descriptor byte FLG v1 allows (version 01, independent
 * blocks, block checksums, content size, content checksum, no dictionary). */
#define CKPT_LZ4_FLG 0x7Cu
#define CKPT_LZ4_MAGIC 0x184D2204u
/* Frame header (15) + end mark (4) + content checksum (4). */
#define CKPT_LZ4_MIN_FRAME 23u

/* I/O chunk: reads and gathered writes move this much at a time. */
#define CKPT_IO_CHUNK ((size_t)1 << 20)

static inline void ckpt_put16(unsigned char *p, uint16_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
}

static inline void ckpt_put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline void ckpt_put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint16_t ckpt_get16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t ckpt_get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t ckpt_get64(const unsigned char *p)
{
	return (uint64_t)ckpt_get32(p) | (uint64_t)ckpt_get32(p + 4) << 32;
}

/* LZ4 block size of block code b (0..3). */
static inline size_t ckpt_block_size(unsigned b)
{
	return (size_t)65536 << (2 * b);
}

/* Largest LZ4 frame (as written by format v1) holding raw_len bytes in blocks
 * of code b; UINT64_MAX on overflow. */
uint64_t scar_ckpt_lz4_bound(uint64_t raw_len, unsigned bcode);

/* write(2) everything, retrying on EINTR and short writes: 0 or an errno. */
int scar_ckpt_write_all(int fd, const void *buf, size_t n);
/* read(2) up to n bytes, retrying on EINTR and short reads until n or EOF:
 * the byte count, or -errno. */
int64_t scar_ckpt_read_full(int fd, void *buf, size_t n);
/* As read_full with pread(2) at off. */
int64_t scar_ckpt_pread_full(int fd, void *buf, size_t n, uint64_t off);

/* xxHash-32 (the LZ4 frame checksums), one-shot and streaming. */
struct ckpt_xxh32 {
	uint32_t v[4], seed;
	uint64_t total;
	unsigned char buf[16];
	size_t nbuf;
};
void scar_ckpt_xxh32_init(struct ckpt_xxh32 *s, uint32_t seed);
void scar_ckpt_xxh32_update(struct ckpt_xxh32 *s, const void *buf, size_t n);
uint32_t scar_ckpt_xxh32_digest(const struct ckpt_xxh32 *s);
uint32_t scar_ckpt_xxh32(const void *buf, size_t n, uint32_t seed);

/*
 * The byte shuffle of format 1.3 (ckpt_shuffle.c): byte j of element i of
 * the n bytes at src goes to dst[j * m + i], m = n / esz whole elements; the
 * n % esz bytes after them are copied as they are. unshuffle undoes it.
 * dst and src must not overlap.
 */
void scar_ckpt_shuffle(void *dst, const void *src, size_t n, size_t esz);
void scar_ckpt_unshuffle(void *dst, const void *src, size_t n, size_t esz);
/* Bytes of a section that --shuffle auto compresses both ways. */
#define CKPT_SHUFFLE_SAMPLE ((size_t)64 << 10)
/*
 * --shuffle auto's choice for a section whose raw bytes begin with sample
 * (n bytes, of which the first CKPT_SHUFFLE_SAMPLE are used): 1 when LZ4's
 * fast level makes them smaller shuffled than plain, else 0 (a tie is 0).
 * buf is scratch of 2 * CKPT_SHUFFLE_SAMPLE bytes. The same bytes give the
 * same answer.
 */
int scar_ckpt_shuffle_pays(const void *sample, size_t n, size_t esz, unsigned char *buf);

/* Software CRC-32C, for testing the table path against the hardware one. */
uint32_t scar_ckpt_crc32c_soft(uint32_t crc, const void *buf, size_t len);

/*
 * Present rows of every shard: counts[s] for s < S, from sorted disjoint
 * {start, count} ranges, in O(nranges + S).
 */
void scar_ckpt_shard_counts(const uint64_t (*ranges)[2], size_t nranges, uint32_t S,
			    uint64_t *counts);

/* How the reader decodes a section payload. */
enum ckpt_decode {
	CKPT_DECODE_BUF,	/* into the reader's buffer, with the row list */
	CKPT_DECODE_DST,	/* into caller memory of raw_len bytes, no row list */
	CKPT_DECODE_DISCARD,	/* check every checksum, keep nothing */
	CKPT_DECODE_SKIP,	/* check the header, pass over the payload (another
				   thread checks it: ckpt_reader_check_at) */
};

/*
 * Where a decoded section goes (CKPT_DECODE_DST). dst_for is called once per
 * section, after its header has been checked, and returns raw_len bytes of
 * memory to decode into, or NULL; then put (when set) receives the decoded
 * bytes in order, a block at a time, and returns 0 or a negative error.
 * With neither, the section goes to the reader's buffer (CKPT_DECODE_BUF).
 */
struct ckpt_sink {
	void *(*dst_for)(void *ctx, const struct scar_ckpt_section_info *si);
	int (*put)(void *ctx, const void *p, size_t n);
	void *ctx;
};
/* scar_ckpt_reader_next with a choice of destination; sink only for CKPT_DECODE_DST. */
int scar_ckpt_reader_next_mode(struct scar_ckpt_reader *r, struct scar_ckpt_section *sec,
			       enum ckpt_decode mode, const struct ckpt_sink *sink,
			       struct scar_error *err);

/* Bytes of the regular file behind the reader, or UINT64_MAX for a pipe. */
uint64_t scar_ckpt_reader_file_size(const struct scar_ckpt_reader *r);

/*
 * Check every checksum of section i of the index (file order) by seeking,
 * keeping nothing, as scar_ckpt_verify does: for a reader that took only
 * some sections and must vouch for the rest (scar-diff). A regular file only.
 */
int scar_ckpt_reader_check_section(struct scar_ckpt_reader *r, size_t i, struct scar_error *err);

/*
 * For checking sections on several threads (ckpt_verify.c): a reader of
 * r's regular file with r's tables, shared read-only, and buffers of its
 * own; NULL when out of memory. ckpt_reader_check_at checks section no,
 * whose header the stream passed over (CKPT_DECODE_SKIP) as *si, exactly as
 * CKPT_DECODE_DISCARD would have. Free with ckpt_reader_worker_free, before r.
 */
struct scar_ckpt_reader *ckpt_reader_worker(const struct scar_ckpt_reader *r);
int ckpt_reader_check_at(struct scar_ckpt_reader *w, size_t no,
			 const struct scar_ckpt_section_info *si, struct scar_error *err);
void ckpt_reader_worker_free(struct scar_ckpt_reader *w);
/*
 * Replace *r, of a regular file, with a new reader of the same descriptor
 * from the checkpoint's first byte (standard input too: nothing is
 * reopened). *r is closed either way; on failure it is NULL.
 */
int ckpt_reader_restart(struct scar_ckpt_reader **r, struct scar_error *err);

#endif
