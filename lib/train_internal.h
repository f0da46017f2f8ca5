/*
 * train_internal.h - the schedule decisions the single-process trainer
 * (train.c) and the MPI trainer (dist_mpi.c) must make identically: how many
 * rows a checkpoint writes, how often, when a failure strikes and which
 * shards it loses. One copy, so a distributed run cannot drift from the
 * single-process one it is tested against. Not part of the public API.
 */
#ifndef SCAR_TRAIN_INTERNAL_H
#define SCAR_TRAIN_INTERNAL_H

#include <stdint.h>

#include "scar/error.h"
#include "scar/tensor.h"
#include "scar/train.h"

/* Stream ids that keep the trainer's random choices apart. */
#define SCAR_STREAM_FAIL_PROB 1
#define SCAR_STREAM_FAIL_SHARDS 2
#define SCAR_STREAM_RANDOM_POLICY 3

/* Rows of a tensor of `rows` rows one checkpoint writes: all for full, round(r * rows) in [1, rows] else. */
uint64_t scar_train_policy_rows(const struct scar_train_opts *o, uint64_t rows);
/* Iterations between checkpoints: C for full, round(r * C) >= 1 for partial policies. */
uint64_t scar_train_policy_period(const struct scar_train_opts *o);
/* Nonzero when a failure strikes after clock `clock` (the list, or a seeded draw). */
int scar_train_fails_at(const struct scar_train_opts *o, uint64_t clock);
/* Mark in lost[0..S) the shards the failure at `clock` loses. SCAR_ENOMEM on allocation failure. */
int scar_train_pick_shards(const struct scar_train_opts *o, uint32_t S, uint64_t clock,
			   uint8_t *lost, struct scar_error *err);
/*
 * Squared L2 distance of elements off..off+n of two buffers of x's dtype
 * (any dtype, as doubles), Neumaier-compensated: the step norms, the
 * priorities and the recovery norms of both trainers.
 */
double scar_train_sqdist(const struct scar_tensor *x, const void *a, const void *b, uint64_t off,
			 uint64_t n);

#endif
