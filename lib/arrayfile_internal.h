/*
 * arrayfile_internal.h - what the arrayfile_*.c files share beyond
 * scar/arrayfile.h: the Hugging Face index reader (arrayfile_hfindex.c),
 * which arrayfile_npy.c's opener calls, and the per-file access to a
 * sharded snapshot that the byte-level surgery (arrayfile_surgery.c)
 * needs. Not installed.
 */
#ifndef SCAR_ARRAYFILE_INTERNAL_H
#define SCAR_ARRAYFILE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "scar/arrayfile.h"

/* The largest index file read: 32 MiB, far above any real model's (a few MB). */
#define SCAR_HF_INDEX_MAX (32u << 20)

/* A parsed, checked index: which files a sharded snapshot has. */
struct scar_hf_index {
	char *dir;		/* the directory its files are in ("." for none) */
	char *path;		/* the index file */
	unsigned char *text;	/* its bytes, len of them */
	size_t len;
	json_t *root;
	json_t *weight_map;	/* borrowed from root */
	const char **files;	/* distinct file names, sorted; borrowed from root */
	size_t nfiles;
};

/*
 * Find the index of path (a directory, or the index itself), read it and
 * check it alone (see scar_arrayfile_open in scar/arrayfile.h): JSON,
 * weight_map, file names. On success ix owns what it holds
 * (scar_hf_index_release); on failure nothing is held.
 */
int scar_hf_index_load(struct scar_hf_index *ix, const char *path, struct scar_error *err);
void scar_hf_index_release(struct scar_hf_index *ix);
/* "dir/name", new (NULL: out of memory): a sharded snapshot's file paths. */
char *scar_hf_path_join(const char *dir, const char *name);

/*
 * Check file k's n tensors t against the weight_map: each must be mapped
 * to file k. seen (an object) collects the names checked, for
 * scar_hf_index_check_all, which then checks that every name the
 * weight_map maps is in its file.
 */
int scar_hf_index_check_file(const struct scar_hf_index *ix, size_t k,
			     const struct scar_array_info *t, size_t n, json_t *seen,
			     struct scar_error *err);
int scar_hf_index_check_all(const struct scar_hf_index *ix, const json_t *seen,
			    struct scar_error *err);

/* ---- a sharded snapshot's files (arrayfile_npy.c) ---- */

/* The index of a SCAR_ARRAY_SAFETENSORS_INDEX file (borrowed), else NULL. */
const struct scar_hf_index *scar_arrayfile_index(const struct scar_arrayfile *f);
/* The file tensor i is in (an index into the index's files), or 0 for a single file. */
size_t scar_arrayfile_file_of(const struct scar_arrayfile *f, size_t i);
/*
 * Copy len bytes of tensor i from byte off of its data as the file stores
 * them: no byte swap, no widening (off and len count stored bytes).
 */
int scar_arrayfile_read_raw(struct scar_arrayfile *f, size_t i, uint64_t off, void *buf,
			    size_t len, struct scar_error *err);
/*
 * The whole of file k of a sharded snapshot in a new buffer (*buf, *len),
 * read through the descriptor its header was parsed from, and checked to
 * be the version parsed (size and modification time unchanged).
 */
int scar_arrayfile_file_bytes(struct scar_arrayfile *f, size_t k, unsigned char **buf,
			      uint64_t *len, struct scar_error *err);

#endif
