/*
 * store_internal.h - what the checkpoint store (ckpt_store.c) takes from the
 * manifest code (dist_common.c). Not part of the public API.
 */
#ifndef SCAR_STORE_INTERNAL_H
#define SCAR_STORE_INTERNAL_H

#include "scar/error.h"
#include "scar/tensor.h"

/*
 * Open path as a regular file (flags as scar_open_input's): a file that is
 * not there is SCAR_ENOTFOUND. Returns the descriptor or a negative scar_err.
 */
int scar_dist_open_regular(const char *path, int flags, struct scar_error *err);
/* scar_dist_manifest_load of a manifest found in a directory: never through a link. */
int scar_dist_manifest_load_entry(const char *path, struct scar_state **out,
				  struct scar_error *err);

#endif
