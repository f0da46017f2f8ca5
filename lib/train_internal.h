/*
 * train_internal.h - what the single-process trainer (train.c) and the MPI
 * trainer (dist_mpi.c) must do identically: the checkpoint and failure
 * schedules, the rows a checkpoint saves, recovery, the event records, the
 * loop and the iteration cost. One copy, so a distributed run cannot drift
 * from the single-process one it is tested against. Not part of the public
 * API.
 */
#ifndef SCAR_TRAIN_INTERNAL_H
#define SCAR_TRAIN_INTERNAL_H

#include <stdint.h>

#include <jansson.h>

#include "scar/error.h"
#include "scar/model.h"
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

/* ---- the trainer both run (train_common.c) ---- */

struct scar_train_ctx;

/*
 * What differs between one process and MPI ranks. Every hook returns 0 or
 * a negative scar_err with c->err filled in.
 */
struct scar_train_ops {
	/* One iteration of the workload on c->st (not counting it). */
	int (*step)(struct scar_train_ctx *c);
	/* The objective at c->st, the same on every rank. */
	int (*objective)(struct scar_train_ctx *c, double *obj);
	/* Take a checkpoint now (full or by the policy), emitting its event. */
	int (*checkpoint)(struct scar_train_ctx *c, int full);
	/*
	 * Priorities of all rows of param tensor ti (scar_row_priority against
	 * the saved view) into pv, the same on every rank; NULL: computed here.
	 */
	int (*priorities)(struct scar_train_ctx *c, size_t ti, double *pv);
	/* After the owners restored lost rows: bring every rank's copy up to date; NULL: nothing. */
	int (*sync)(struct scar_train_ctx *c);
	/* Every rank's outcome rc of a phase made one, the same on all; NULL: rc. */
	int (*agree)(struct scar_train_ctx *c, int rc);
};

/*
 * The state of one training run. One process is the case P = 1: rank 0
 * owns every row (scar_dist_row_owner) and writes the events.
 */
struct scar_train_ctx {
	const struct scar_train_opts *o;
	const struct scar_train_ops *ops;
	const struct scar_model_def *def;
	struct scar_model *m;		/* NULL on ranks that do not hold the model */
	struct scar_state *st;		/* live state */
	struct scar_state *saved;	/* saved view: param rows as last checkpointed */
	struct scar_state *last_full;	/* the last full checkpoint, whole */
	uint32_t P, R;			/* ranks and this rank */
	int dist;			/* the MPI trainer: events add its fields (scar-mpi(7)) */
	uint64_t comm_total;		/* dist: all ranks' bytes sent, for the summary */
	uint64_t clock, last_fail_clock;
	double t0;
	double *obj;			/* objective by clock, for the cost */
	size_t nobj, capobj;
	struct scar_train_result *res;
	struct scar_error *err;
};

/*
 * The iteration cost's target, from the reference objectives: the smoothed
 * objective at --iters, where the reference first reached it and where it
 * crossed it, interpolated.
 */
struct scar_train_cost {
	int have;
	double target;
	uint64_t ref_iter;
	double ref_cross;
};

#endif
