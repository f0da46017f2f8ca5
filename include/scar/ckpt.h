/*
 * scar/ckpt.h - checkpoint files, format version 1 (specified in scar-ckpt(5)).
 *
 * A checkpoint is one struct scar_state on disk: a fixed file header, a JSON
 * metadata block (model, config, iteration, shard layout, tensor table, the
 * rows present), then one section per (tensor, shard) that holds present
 * rows, each an LZ4 frame with block and content checksums (or raw bytes and
 * a CRC-32C), then an index of the sections and a fixed trailer. Everything
 * is written front to back, so a checkpoint can go down a pipe; the trailer
 * lets a seekable reader jump to any one section.
 *
 * Full and partial checkpoints share the format: a partial one lists fewer
 * rows as present. Applying partials in iteration order over a full base
 * gives the "saved view" (scar_ckpt_apply).
 *
 * Paths: "-" means stdout (writing) or stdin (reading).
 */
#ifndef SCAR_CKPT_H
#define SCAR_CKPT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "scar/error.h"
#include "scar/file.h"
#include "scar/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SCAR_CKPT_VERSION 1
#define SCAR_CKPT_MAGIC "\x89SCARCK\n"	/* 8 bytes */
/* Largest metadata block a reader accepts. */
#define SCAR_CKPT_META_MAX (64u << 20)

struct scar_ckpt_save_opts {
	int compress;		/* 1 = LZ4 frames (default), 0 = raw + CRC-32C */
	int level;		/* LZ4 level as in lz4(1): 0..2 fast (default 0), 3..12 LZ4HC */
	int sync;		/* fsync file and directory (default 1); on Linux the
				   file's writeback starts as it is written (sync_file_range),
				   so that the fsync finds little left; scar_ckpt_save does
				   that also when the file replaces another */
	size_t block_size;	/* LZ4 block size: 64K, 256K, 1M or 4M (default 4M); other
				   values round up to the next of these, at most 4M */
	unsigned threads;	/* compress a section's blocks on this many threads (default
				   1); the file is the same byte for byte whatever the number */
	int shuffle;		/* enum scar_shuffle (default SCAR_SHUFFLE_OFF) */
};
/* The defaults above. */
void scar_ckpt_save_opts_init(struct scar_ckpt_save_opts *o);

/*
 * The byte shuffle before LZ4 (format 1.3): each LZ4 block of a section is
 * regrouped so that the first bytes of all its elements come first, then
 * the second bytes, and so on (scar-ckpt(5)), which lets LZ4 find the runs
 * in small integers and in float exponents. Only compressed sections of
 * tensors of 2-, 4- and 8-byte dtypes are shuffled; a file with a shuffled
 * section says version 1.3, which scar before 1.3 refuses as unsupported.
 *
 *   OFF   never (the default)
 *   ON    every section that can be
 *   AUTO  each section that can be, when LZ4's fast level makes its first
 *         64 KiB smaller shuffled than plain; the same state gives the same
 *         file, whatever the threads
 */
enum scar_shuffle { SCAR_SHUFFLE_OFF, SCAR_SHUFFLE_ON, SCAR_SHUFFLE_AUTO };
/* "off", "on", "auto" to an enum scar_shuffle; -1 for another name. */
int scar_shuffle_parse(const char *name);
/* The name of an enum scar_shuffle, or NULL. */
const char *scar_shuffle_name(int shuffle);

/*
 * Write st to path atomically: a temporary file in the same directory, fsync,
 * rename over path, fsync the directory. On any failure path is untouched
 * and the temporary file is removed. "-" writes to stdout (not atomic, of
 * course). opts may be NULL for defaults. Tensors with a present map write
 * only present rows (a partial checkpoint).
 */
int scar_ckpt_save(const struct scar_state *st, const char *path,
		   const struct scar_ckpt_save_opts *opts, struct scar_error *err);

/*
 * Write st to an open descriptor front to back. name is for messages. On a
 * regular file (not opened O_APPEND) each LZ4 section is written block by
 * block and its header patched with pwrite(2) afterwards; on a pipe each
 * section is compressed into memory first, since its header, which carries
 * the stored length, must go out before it.
 */
int scar_ckpt_write_fd(const struct scar_state *st, int fd, const char *name,
		       const struct scar_ckpt_save_opts *opts, struct scar_error *err);

/*
 * Check a tensor or model name before it is written: at most
 * SCAR_NAME_MAX - 1 bytes, valid UTF-8 (the metadata is JSON), not empty
 * unless may_be_empty (a model name). what ("tensor name", "option
 * '--name'") starts the message, which states the limit. SCAR_EINVAL.
 */
int scar_name_check(const char *name, const char *what, int may_be_empty,
		    struct scar_error *err);

/* The temporary every writer replaces a file through: scar_tmp_create, scar/file.h. */

/*
 * Read a whole checkpoint into a new state, verifying every checksum. For
 * partial checkpoints the absent rows are zero and the tensors that lack rows
 * carry a present map (tensors with every row present have none). "-" reads
 * stdin. Damage is reported as for scar_ckpt_verify; err->file names the
 * file and err->offset the byte where the problem was found.
 */
int scar_ckpt_load(const char *path, struct scar_state **out, struct scar_error *err);
int scar_ckpt_load_fd(int fd, const char *name, struct scar_state **out,
		      struct scar_error *err);

/*
 * The memory guard of scar_ckpt_load: loading makes every tensor dense, so
 * a checkpoint is loaded only when what its tensor table declares (rows times
 * row size, plus one byte per row of a partial tensor's present map), times
 * the caller's factor, is at most scar_ckpt_memory_limit(); otherwise
 * SCAR_ENOMEM, saying so, before anything is allocated. A program that keeps
 * copies of what it loads sets its factor once, before loading (default 1).
 */
void scar_ckpt_set_memory_factor(unsigned factor);
/* The smaller of physical memory and the RLIMIT_AS and RLIMIT_DATA limits. */
uint64_t scar_ckpt_memory_limit(void);
/* That check on an open reader, for code that builds a state from its sections. */
struct scar_ckpt_reader;
int scar_ckpt_reader_check_memory(const struct scar_ckpt_reader *r, struct scar_error *err);

/* ---- streaming reader: one section in memory at a time ---- */

/* One entry of the tensor table (metadata only). */
struct scar_ckpt_tensor_info {
	char name[SCAR_NAME_MAX];
	enum scar_dtype dtype;
	enum scar_role role;
	int ndim;
	uint64_t shape[SCAR_MAX_DIMS];
	uint64_t rows;			/* shape[0] (1 for ndim 0) */
	uint64_t rows_present;
	uint32_t shards;		/* sections this tensor is split into (1 for state) */
	/* Present rows as sorted, disjoint [start, start+count) ranges. */
	size_t nranges;
	const uint64_t (*ranges)[2];	/* {start, count}; borrowed from the reader */
};

/* One entry of the section index. */
struct scar_ckpt_section_info {
	uint32_t tensor;		/* index into the tensor table */
	uint32_t shard;
	uint64_t nrows;			/* present rows in this section */
	uint64_t offset;		/* of the section header in the file */
	uint64_t raw_len;		/* decoded payload bytes = nrows * row bytes */
	uint64_t stored_len;		/* payload bytes on disk */
	int compressed;
	int shuffled;			/* LZ4 blocks byte-shuffled (format 1.3) */
};

struct scar_ckpt_info {
	int version;			/* the major format version, 1 */
	int minor;			/* the file's minor version: 3 with a shuffled section, else 2
					   with an f16 or bf16 tensor, else 1 with a present bitmap, else 0 */
	char model[SCAR_NAME_MAX];
	uint64_t iteration;
	uint32_t shards;
	int partial;			/* some param row is absent */
	const json_t *meta;		/* the whole metadata object; borrowed */
	const json_t *config;		/* borrowed */
	size_t ntensors;
	const struct scar_ckpt_tensor_info *tensors;	/* borrowed */
};

/* A decoded section; pointers stay valid until the next reader call. */
struct scar_ckpt_section {
	struct scar_ckpt_section_info info;
	const struct scar_ckpt_tensor_info *tensor;
	const uint64_t *rows;		/* the nrows global row indices, ascending */
	const void *data;		/* nrows rows, packed, little-endian */
};

struct scar_ckpt_reader;

/* Open and read header and metadata. "-" is stdin. */
int scar_ckpt_reader_open(struct scar_ckpt_reader **out, const char *path,
			  struct scar_error *err);
/* Same over an open descriptor; the reader does not close it. */
int scar_ckpt_reader_open_fd(struct scar_ckpt_reader **out, int fd, const char *name,
			     struct scar_error *err);
const struct scar_ckpt_info *scar_ckpt_reader_info(const struct scar_ckpt_reader *r);

/*
 * Decode the next section in file order into *sec. Returns 1 with a section,
 * 0 at the end (after the index and trailer have been read and checked
 * against the sections seen), or a negative error. Every checksum of the
 * section is checked before it is returned.
 */
int scar_ckpt_reader_next(struct scar_ckpt_reader *r, struct scar_ckpt_section *sec,
			  struct scar_error *err);

/*
 * Random access: the index (reading the trailer) of a seekable file. Returns
 * the number of sections, or a negative error (SCAR_EUNSUPPORTED on a pipe).
 */
int scar_ckpt_reader_index(struct scar_ckpt_reader *r,
			   const struct scar_ckpt_section_info **index,
			   struct scar_error *err);
/* Decode the section of (tensor, shard) by seeking; SCAR_ENOTFOUND when absent. */
int scar_ckpt_reader_section(struct scar_ckpt_reader *r, uint32_t tensor, uint32_t shard,
			     struct scar_ckpt_section *sec, struct scar_error *err);
/* Bytes consumed so far (for messages and progress). */
uint64_t scar_ckpt_reader_offset(const struct scar_ckpt_reader *r);
void scar_ckpt_reader_close(struct scar_ckpt_reader *r);

/*
 * Verify a checkpoint completely (structure, every checksum, index against
 * sections), holding at most one LZ4 block in memory. Returns 0 when intact;
 * when damaged SCAR_ETRUNC (ends early), SCAR_EFORMAT (not a checkpoint),
 * SCAR_EVERSION (newer major version), SCAR_ECORRUPT (a check failed) or
 * SCAR_EUNSUPPORTED (unknown flags, dtype or shard rule), with err naming
 * the file, the offset and the section, numbered from 0 in file order:
 * "section 3 (tensor 'w', shard 1): content checksum mismatch"; SCAR_EIO when
 * it cannot be read.
 */
int scar_ckpt_verify(const char *path, struct scar_error *err);
/*
 * scar_ckpt_verify on up to threads threads (at most 64): on a regular
 * file the sections are checked side by side, a section each at a time,
 * holding at most an LZ4 block and its decoded bytes per thread. Damage is
 * reported exactly as scar_ckpt_verify reports it (the first problem in
 * file order), found again on one thread.
 */
int scar_ckpt_verify_threads(const char *path, unsigned threads, struct scar_error *err);

/*
 * Apply a partial (or full) checkpoint's present rows onto base, in place:
 * every present row of every tensor of over replaces base's row; tensors
 * must match by name, dtype and shape (SCAR_EMISMATCH otherwise) and the
 * shard counts must agree. base->iteration becomes over's; extra.applied
 * records the iterations applied.
 */
int scar_ckpt_apply(struct scar_state *base, const struct scar_state *over,
		    struct scar_error *err);

/* ---- directories of checkpoints ---- */

struct scar_ckpt_entry {
	char *path;		/* dir/name, owned */
	uint64_t iteration;
	int partial;
	uint64_t size;		/* bytes on disk */
};

/*
 * List the checkpoints (*.ckpt that carry a readable header and metadata) of
 * a directory, sorted by iteration then name. Damaged files and ones that are
 * not regular files are skipped and counted in *skipped (may be NULL); files
 * removed while listing are passed over. An I/O error reading one is returned
 * (SCAR_EIO, naming the file): it may be intact. Free with scar_ckpt_list_free.
 */
int scar_ckpt_list(const char *dir, struct scar_ckpt_entry **out, size_t *n,
		   size_t *skipped, struct scar_error *err);
/*
 * As scar_ckpt_list, but a file that cannot be read for any reason is
 * skipped and counted too: for listings that report each file on its own
 * (scar-ckpt ls), not for choosing a checkpoint to resume from.
 */
int scar_ckpt_list_readable(const char *dir, struct scar_ckpt_entry **out, size_t *n,
			    size_t *skipped, struct scar_error *err);
void scar_ckpt_list_free(struct scar_ckpt_entry *v, size_t n);

/* CRC-32C (Castagnoli) of buf, continuing from crc (start with 0). */
uint32_t scar_crc32c(uint32_t crc, const void *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
