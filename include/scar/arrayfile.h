/*
 * scar/arrayfile.h - NumPy .npy and safetensors files: read and write.
 *
 * These are the interchange formats of the toolkit: scar-diff compares them
 * with checkpoints (tensors matched by name), scar-ckpt exports to and
 * imports from them. Both hold plain little-endian row-major arrays, so a
 * reader can fetch any byte range of a tensor without decoding the rest.
 *
 *   .npy (NumPy format versions 1.0, 2.0 and 3.0): one array. Its tensor is
 *        named after the file stem ("w.npy" -> "w"; "-" -> "array").
 *        Accepted dtypes '<f4' '<f8' '<f2' '<i4' '<u4' '<i8' '<u8' '|u1' (and the
 *        '>' big-endian forms, swapped on read); C order, or Fortran order
 *        for ndim <= 1 (where it is the same thing).
 *   safetensors: an 8-byte little-endian header length N, N bytes of JSON
 *        {"name": {"dtype": "F32", "shape": [...], "data_offsets": [b, e]},
 *        "__metadata__": {string: string}}, then the byte buffer. Dtypes
 *        F32 F64 F16 BF16 I32 U32 I64 U64 U8. The writer pads the header with spaces
 *        to a multiple of 8 and lays tensors out in the given order.
 *
 * f16 and bf16 (safetensors F16 and BF16, .npy '<f2') are read as they
 * are, SCAR_F16 and SCAR_BF16; .npy has no bfloat16, so a bf16 tensor
 * cannot be written as .npy (SCAR_EINVAL naming the tensor).
 * Other narrow types are widened exactly as they are read: the safetensors
 * 8-bit floats F8_E4M3 (PyTorch's float8_e4m3fn: bias 7, no infinities,
 * S.1111.111 NaN, largest 448) and F8_E5M2 (IEEE-like: bias 15,
 * infinities and NaNs) become f32, i8 and i16 become i32, u16 becomes
 * u32, bool becomes u8 (the info's dtype and nbytes are the widened ones;
 * "stored" names the file's type: "f8_e4m3", "f8_e5m2" for the 8-bit
 * floats). So 8-bit PyTorch and Hugging Face files can be compared. Other
 * dtypes (complex, F8_E8M0, ...) fail with SCAR_EUNSUPPORTED and a
 * message naming the tensor and the dtype.
 *
 * A Hugging Face sharded snapshot (save_pretrained of a large model) is a
 * directory of safetensors files and an index, FILE.safetensors.index.json:
 * {"metadata": {"total_size": N, ...}, "weight_map": {"tensor": "file", ...}}.
 * scar_arrayfile_open reads the directory, or the index named itself, as
 * one snapshot whose tensors are those of all its files (see
 * scar_array_is_sharded).
 *
 * Tensors read from these files have role SCAR_ROLE_PARAM and no present
 * map (every row is present); a safetensors writer stores the role of state
 * tensors in __metadata__ as "scar.role.<name>": "state" and the reader
 * restores it, so that export followed by import keeps roles.
 */
#ifndef SCAR_ARRAYFILE_H
#define SCAR_ARRAYFILE_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "scar/error.h"
#include "scar/file.h"
#include "scar/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

enum scar_array_format {
	SCAR_ARRAY_NPY = 1,
	SCAR_ARRAY_SAFETENSORS = 2,
	SCAR_ARRAY_SAFETENSORS_INDEX = 3,	/* a sharded snapshot: index and its files */
};

/* One tensor of an open array file (metadata only). */
struct scar_array_info {
	char name[SCAR_NAME_MAX];
	enum scar_dtype dtype;
	enum scar_role role;
	int ndim;
	uint64_t shape[SCAR_MAX_DIMS];
	uint64_t offset;	/* of the first data byte in the file */
	uint64_t nbytes;	/* elements * dtype size (of the widened type) */
	int swap;		/* stored big-endian: reads byte-swap */
	const char *stored;	/* file type when widened: "i8" "i16" "u16" "bool"; else NULL */
	unsigned stored_size;	/* bytes per element in the file */
};

struct scar_arrayfile;	/* opaque */

/*
 * Which array format the first bytes of a file are: SCAR_ARRAY_NPY for the
 * "\x93NUMPY" magic, SCAR_ARRAY_SAFETENSORS for a plausible header length
 * followed by '{', or 0. n is how many bytes head holds (>= 9 for a sure
 * answer).
 */
int scar_array_sniff(const void *head, size_t n);
/*
 * The same for the file at path, when it is a regular file (a FIFO's or
 * stdin's bytes would be consumed): its format, or 0.
 */
int scar_array_sniff_file(const char *path);

/*
 * Nonzero when path is to be read as a sharded safetensors snapshot: an
 * existing directory, or an existing file whose name ends in ".json" (its
 * index). Then scar_arrayfile_open reads it as one, or says why it is
 * none. By name alone: nothing is opened or read. "-" and a missing path
 * are 0.
 */
int scar_array_is_sharded(const char *path);

/*
 * Open an array file and parse its header. A seekable file is read on
 * demand (scar_arrayfile_read uses pread); "-" or a pipe is read into
 * memory whole. The format comes from the file's contents, not its name.
 * Fails with SCAR_EFORMAT (not an array file, bad header), SCAR_ETRUNC
 * (data shorter than the header says), SCAR_EUNSUPPORTED (dtype, order),
 * SCAR_EIO.
 *
 * A path that scar_array_is_sharded says is a sharded snapshot opens as
 * SCAR_ARRAY_SAFETENSORS_INDEX. A directory's index is its
 * model.safetensors.index.json, else its one file named
 * *.safetensors.index.json (none, or several, is SCAR_ENOTFOUND). The
 * index is checked whole before a tensor is read, and any fault is
 * SCAR_EFORMAT naming the index or the file and the tensor: it must be a
 * JSON object (at most 32 MiB, no duplicate key at any level) whose
 * "weight_map" is a non-empty object of tensor name -> file name, and
 * whose "metadata", if any, is an object with "total_size", if any, a
 * non-negative integer (not compared with the data: the files' own
 * headers say what they hold, as for transformers and safetensors). A
 * file name must be a plain name in the index's directory: not empty,
 * not "." or "..", no '/' (so no absolute path), at most 255 bytes; a
 * symbolic link there is followed (the Hugging Face hub's cache links its
 * snapshots' files to blobs elsewhere), a directory or FIFO refused. Every
 * file named must be a safetensors file, every tensor of it must be named
 * by the weight_map and mapped to it, and every tensor the weight_map
 * names must be in the file it maps it to; so no tensor is in two files.
 * Tensors are in the order of their files' names (byte order), each
 * file's in the order of its data. A tensor's offset is in its own file;
 * scar_arrayfile_metadata is the first file's __metadata__. Every file is
 * held open until scar_arrayfile_close.
 */
int scar_arrayfile_open(struct scar_arrayfile **out, const char *path,
			struct scar_error *err);
/* As above over head bytes already read from fd (n may be 0) and the rest of fd. */
int scar_arrayfile_open_fd(struct scar_arrayfile **out, int fd, const char *name,
			   const void *head, size_t n, struct scar_error *err);
void scar_arrayfile_close(struct scar_arrayfile *f);

enum scar_array_format scar_arrayfile_format(const struct scar_arrayfile *f);
size_t scar_arrayfile_count(const struct scar_arrayfile *f);
/* Tensor i (0-based, in file order), or NULL. Borrowed until close. */
const struct scar_array_info *scar_arrayfile_tensor(const struct scar_arrayfile *f, size_t i);
/* Index of the tensor called name, or -1. */
long scar_arrayfile_find(const struct scar_arrayfile *f, const char *name);
/* safetensors "__metadata__" object (borrowed), or NULL when absent / npy. */
const json_t *scar_arrayfile_metadata(const struct scar_arrayfile *f);

/*
 * Copy len bytes of tensor i starting at byte off of its data into buf, in
 * native (little-endian) byte order and the widened type. off and len must
 * lie within the tensor (nbytes) and be multiples of the element size.
 * SCAR_ETRUNC when the file is short.
 */
int scar_arrayfile_read(struct scar_arrayfile *f, size_t i, uint64_t off, void *buf,
			size_t len, struct scar_error *err);

/* Read tensor i whole into a new tensor (*out owns it). */
int scar_arrayfile_load_tensor(struct scar_arrayfile *f, size_t i,
			       struct scar_tensor **out, struct scar_error *err);

/*
 * Read a .npy header from fd with read(2), so from a pipe too: head holds
 * the n (<= 10) bytes already read from the file's start. On success fd is
 * at the first data byte and t describes the array (offset: the header's
 * length; name empty; the data, when stored is set, is stored_size bytes an
 * element). size is the file's size when known (else UINT64_MAX): a header
 * longer than the file is refused. A read error is SCAR_EIO with an errno;
 * a header that is refused sets err->msg to the reason alone ("truncated
 * header", "unsupported NPY version", "bad header length", "malformed
 * header", "unsupported dtype '<c16'", "Fortran order is not supported"),
 * for a caller's "not a valid .npy file: REASON". scar_arrayfile_open reads
 * the same headers.
 */
int scar_npy_header_read(int fd, const char *name, const void *head, size_t n, uint64_t size,
			 struct scar_array_info *t, struct scar_error *err);

/*
 * Turn n elements of t as the file stores them, held at the end of buf
 * (n * t->stored_size bytes), into n elements of t->dtype filling buf
 * (n * scar_dtype_size(t->dtype) bytes): byte-swapped and widened as
 * scar_arrayfile_read does.
 */
void scar_array_decode(const struct scar_array_info *t, void *buf, size_t n);

/*
 * Read a whole array file into a new state (model "", iteration 0, shards 1;
 * for safetensors, __metadata__ is copied into extra as "safetensors").
 */
int scar_array_load(const char *path, struct scar_state **out, struct scar_error *err);

/*
 * Snapshots concatenated on descriptor fd, a pipe say (lib/arrayfile_stream.c):
 * each a whole safetensors or .npy file, read with exact reads so that
 * nothing of the next one is consumed. next gives 1 and a new state as
 * scar_array_load makes it (the .npy tensor is named "array", as "-" is),
 * 0 when the input ends cleanly between two snapshots, or a negative error
 * naming the snapshot's ordinal and the byte where it began, with
 * err->offset the stream offset of the problem: SCAR_ETRUNC when the input
 * ends inside one, SCAR_EFORMAT for bytes that are no snapshot (garbage
 * between two; a safetensors header length outside 2..100 MiB),
 * SCAR_EUNSUPPORTED for a scar checkpoint (it is delimited only by reading
 * to the end) or a dtype, SCAR_ENOMEM when its tensors would need more
 * than max_bytes (0: no limit), SCAR_EIO. Memory is one snapshot's
 * tensors (plus its header while it is parsed). name (copied) is for
 * messages; fd is borrowed. close(NULL) does nothing.
 */
struct scar_array_stream;
int scar_array_stream_open(struct scar_array_stream **out, int fd, const char *name,
			   uint64_t max_bytes, struct scar_error *err);
int scar_array_stream_next(struct scar_array_stream *s, struct scar_state **out,
			   struct scar_error *err);
/* Snapshots begun so far (the ordinal of the last), and the byte it began at. */
uint64_t scar_array_stream_count(const struct scar_array_stream *s);
uint64_t scar_array_stream_start(const struct scar_array_stream *s);
void scar_array_stream_close(struct scar_array_stream *s);

/*
 * Write t as a .npy file. version 0 picks 1.0, or 2.0 when the header does
 * not fit 1.0's 16-bit length; 1 or 2 forces it. The header is padded so the
 * data starts at a multiple of 64 bytes. Absent rows of a partial tensor are
 * written as they are stored (zero after reading a checkpoint).
 * The path variant replaces path through scar_file_replace (scar/file.h):
 * atomically, synced, a FIFO or device written in place; "-" is stdout.
 */
int scar_npy_write(const char *path, const struct scar_tensor *t, int version,
		   struct scar_error *err);
int scar_npy_write_fd(int fd, const char *name, const struct scar_tensor *t,
		      int version, struct scar_error *err);

/*
 * Write the tensors of st (all of them, or only those whose role matches
 * role when role is nonzero) as one safetensors file. metadata (may be NULL)
 * is an object of string values copied into "__metadata__", to which the
 * writer adds "scar.role.<name>": "state" for state tensors. Atomic like
 * scar_npy_write; "-" is stdout. SCAR_EINVAL for a non-string metadata value.
 */
int scar_safetensors_write(const char *path, const struct scar_state *st, int role,
			   const json_t *metadata, struct scar_error *err);
int scar_safetensors_write_fd(int fd, const char *name, const struct scar_state *st,
			      int role, const json_t *metadata, struct scar_error *err);

/*
 * Write the rows of t as one JSON object and a newline, the form of
 * `scar-ckpt export --format json`:
 *   {"tensor":NAME,"dtype":"f32","shape":[...],"rows":[...],"data":[[...],...]}
 * rows[i] is the index (in the tensor t was cut from) of t's row i: t has
 * shape[0] rows, a scalar one. Floats print with 9 (f32) or 17 (f64)
 * significant digits, non-finite values as null.
 */
int scar_json_rows_write_fd(int fd, const char *name, const struct scar_tensor *t,
			    const uint64_t *rows, struct scar_error *err);

/*
 * Partial recovery of an array file (safetensors or .npy), byte for byte
 * (lib/arrayfile_surgery.c): in every tensor (or in tensor only, when not
 * NULL) the rows - index along dimension 0; a 0-d tensor is one row - of
 * the lost shards (row r is in shard r mod shards, lost[s] nonzero) get the
 * donor's bytes when donor is not NULL (an array file of the same format,
 * or for safetensors a sharded snapshot, whose tensor of the same name -
 * for .npy, its one array - has the same dtype, byte order and shape),
 * else zero bytes. Everything else - the header and its __metadata__, the
 * other tensors and rows, whatever their dtype (f16, bf16, f8, integers) -
 * is copied unchanged. in must be a regular file (it is read twice: by the
 * reader, then whole); the donor's rows are read through the descriptor
 * its header was parsed from. out is written as scar_file_replace does
 * (SCAR_REPLACE_SYNC with sync). *rows and *tensors count what was
 * replaced. SCAR_EMISMATCH names the first tensor the donor lacks or holds
 * with another dtype or shape; SCAR_ENOTFOUND a tensor that in lacks.
 *
 * When in is a sharded snapshot (scar_array_is_sharded), out is a
 * directory, made if missing (SCAR_EINVAL when it is "-" or another kind
 * of file), and gets the same layout: each of in's files with its lost
 * rows replaced, byte for byte as above, then the index, each replaced
 * atomically on its own (files out holds of other names are left alone).
 * Every tensor is checked against the donor before a file is written. out
 * the very directory in is in (by device and inode) is in place: only the
 * files with a replaced row are rewritten and the index is kept; a run cut
 * short leaves each file whole, old or new, and the same call again
 * finishes it, since what it writes does not depend on what it wrote.
 */
int scar_array_lose_rows(const char *in, const char *donor, const char *tensor,
			 const uint8_t *lost, uint32_t shards, const char *out, int sync,
			 uint64_t *rows, uint64_t *tensors, struct scar_error *err);

/*
 * 8-bit floats, exactly: b as float8_e4m3fn (bias 7, S.1111.111 NaN, no
 * infinities) and as float8_e5m2 (bias 15, exponent 31 infinity or NaN).
 * The sign of zero and of infinity is kept. E4M3's NaN is a quiet NaN of
 * b's sign; an E5M2 NaN keeps its sign and its two payload bits at the top
 * of the f32 mantissa, as scar_f16_to_f32 keeps an F16 NaN's (E5M2 is the
 * high byte of an F16).
 */
float scar_f8e4m3_to_f32(uint8_t b);
float scar_f8e5m2_to_f32(uint8_t b);

/* ---- building blocks (shared by the two writers; usable by anyone) ---- */

/*
 * Parse a safetensors JSON header of len bytes whose byte buffer starts at
 * file offset data_start in a file of file_size bytes. On success *tensors
 * (malloc'ed, sorted by offset, caller frees) holds *n entries and *metadata
 * (may be NULL on input to ignore it) a new reference or NULL.
 */
int scar_safetensors_parse(const char *json, size_t len, uint64_t data_start,
			   uint64_t file_size, struct scar_array_info **tensors,
			   size_t *n, json_t **metadata, struct scar_error *err);

/*
 * The dtype a file type code is read as, and its size in the file: code is
 * a safetensors dtype ("F16") or a NumPy kind+size ("f2"). Returns the
 * scar dtype or 0; *stored gets the narrow type's name or NULL.
 */
enum scar_dtype scar_array_dtype(const char *code, const char **stored, unsigned *stored_size);

#ifdef __cplusplus
}
#endif
#endif
