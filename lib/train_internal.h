/*
 * train_internal.h - what the single-process trainer (train_local.c) and the MPI
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
#include "scar/store.h"
#include "scar/tensor.h"
#include "scar/train.h"

/* Stream ids that keep the trainer's random choices apart. */
#define SCAR_STREAM_FAIL_PROB 1
#define SCAR_STREAM_FAIL_SHARDS 2
#define SCAR_STREAM_RANDOM_POLICY 3

/*
 * The checkpoint schedule. A partial policy's fraction is r = 1/m with m
 * dividing the interval C (scar_train_check_schedule): it checkpoints every
 * C/m iterations, and its m checkpoints of each interval write each row of
 * every parameter tensor once, as the one checkpoint of the full policy
 * does, so both write the same rows in every interval, exactly.
 */
/* m: 1/r for a partial policy, 1 for the others. */
uint64_t scar_train_policy_parts(const struct scar_train_opts *o);
/*
 * Rows of a tensor of `rows` rows the ncp-th checkpoint writes (all for
 * full): floor((t+1) * rows / m) - floor(t * rows / m), t = ncp mod m, so
 * counts differ by at most one and a tensor of fewer than m rows is absent
 * from some checkpoints; *first (may be NULL) gets floor(t * rows / m), where
 * round-robin's run of rows starts.
 */
uint64_t scar_train_policy_rows(const struct scar_train_opts *o, uint64_t rows, uint64_t ncp,
				uint64_t *first);
/* Iterations between checkpoints: C for full, C/m for partial policies. */
uint64_t scar_train_policy_period(const struct scar_train_opts *o);
/*
 * SCAR_EINVAL, naming the nearest fractions that can, when a partial
 * policy's fraction is not 1/m with m dividing the interval: no schedule of
 * whole checkpoints would then write what full does in each interval.
 */
int scar_train_check_schedule(const struct scar_train_opts *o, struct scar_error *err);
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

/* ---- the trainer both run (train_loop.c) ---- */

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
	/*
	 * Background checkpoints (--async; NULL: none): emit the events of
	 * those that became durable, waiting for all of them when wait.
	 */
	int (*collect)(struct scar_train_ctx *c, int wait);
	/*
	 * Around a failure's recovery: reverted 1 takes the rows of the
	 * checkpoints still in flight out of the saved view (and their full
	 * base, their ages), so that recovery sees only durable checkpoints,
	 * returning how many were in flight; reverted 0 puts them back.
	 */
	unsigned (*durable_view)(struct scar_train_ctx *c, int reverted);
	/*
	 * The state at the start and after each completed iteration (c->st,
	 * c->clock) is the last one a real failure could keep (MPI survivor
	 * files, scar-mpi(7)); NULL: nothing.
	 */
	int (*publish)(struct scar_train_ctx *c);
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
	struct scar_store store;	/* o->ckpt_dir (dir NULL without one); the lock is the run's */
	uint32_t P, R;			/* ranks and this rank */
	int dist;			/* the MPI trainer: events add its fields (scar-mpi(7)) */
	uint64_t comm_total;		/* dist: all ranks' bytes sent, for the summary */
	uint64_t clock, last_fail_clock;
	/*
	 * Where the cost is measured from (scar-train(1), COST): the clock of the
	 * last perturbation (a failure, or the resume of a checkpoint) and the
	 * state iteration the run went on from there, which indexes the reference.
	 */
	uint64_t cost_clock, cost_iter;
	double t0;
	/*
	 * Objective by clock of the state the run goes on from: at a failure's
	 * clock that of the recovered state (the iteration event keeps the one
	 * before the failure), for the cost.
	 */
	double *obj;
	size_t nobj, capobj;
	struct scar_train_result *res;
	struct scar_error *err;
	/*
	 * Divergence by growth (train_loop.c, scar-train(1)): the best
	 * objective so far; over the run's starts (its first record and the
	 * first after each failure) the largest magnitude and the worst value;
	 * the failures counted at the last record.
	 */
	double div_best, div_start_abs, div_start_worst;
	uint64_t div_failures;
	/*
	 * Per param tensor (NULL for the others), per row r: [2 r] the state
	 * iteration its saved-view value comes from, [2 r + 1] the step
	 * schedule's point it had reached (recovery "rewind", train_rewind.c).
	 */
	uint64_t **ages;
	size_t nages;
	/*
	 * --async: the writer, the checkpoints in flight, oldest first, the
	 * partial snapshots free for reuse and the full one (train_local.c).
	 */
	struct scar_store_async *writer;
	struct scar_train_inflight **inflight;
	unsigned ninflight;
	struct scar_state **pool;
	unsigned npool;
	struct scar_state *spare_full;
};

/*
 * The iteration cost's target, from the reference objectives: the smoothed
 * objective at --iters, and the reference objectives themselves (borrowed
 * from the caller until scar_train_finish), in which the reference's
 * crossing is found once the run knows where the last perturbation left it.
 */
struct scar_train_cost {
	int have;
	double target;
	const double *ref;
	size_t nref;
};

/* A trainer's entry, also run again as the reference: objs gets the objective by clock. */
typedef int scar_train_core_fn(const struct scar_train_opts *o, struct scar_train_result *res,
			       struct scar_error *err, double **objs, size_t *nobjs);

/*
 * Start c (and clear *res) for a run of o with ops as rank 0 of 1; c->def
 * is the model o names or resumes (NULL when unknown).
 */
void scar_train_ctx_init(struct scar_train_ctx *c, const struct scar_train_opts *o,
			 const struct scar_train_ops *ops, struct scar_train_result *res,
			 struct scar_error *err);
/* Seconds on the monotonic clock. */
double scar_train_now(void);
/* Write rec (owned: released here) when this is rank 0 and there is a stream; NULL is SCAR_ENOMEM. */
int scar_train_emit(struct scar_train_ctx *c, json_t *rec);
/* Record the clock and the checkpoint schedule in s->extra, for an exact resume. */
int scar_train_set_clock(struct scar_train_ctx *c, struct scar_state *s);
/* What set_clock writes: extra's "clock" and "schedule" (also for scar-ckpt save's files). */
int scar_train_schedule_extra(json_t *extra, uint64_t clock, const struct scar_train_opts *o,
			      struct scar_error *err);
/* The options' ranges and the model (def NULL: unknown model). */
int scar_train_check_opts(const struct scar_train_opts *o, const struct scar_model_def *def,
			  struct scar_error *err);
/* The reference objectives of --cost: the given stream's, or those of an unperturbed run of core. */
int scar_train_reference(const struct scar_train_opts *o, scar_train_core_fn *core, double **ref,
			 size_t *nref, struct scar_error *err);
/* The run's configuration (a new reference): the checkpoint's, or the options' completed by the model. */
int scar_train_config(const struct scar_train_opts *o, const struct scar_model_def *def,
		      json_t **config, struct scar_error *err);
/*
 * A fresh state of config (borrowed) with o->shards shards, initialised by the
 * model c->m; SCAR_EINVAL when there are more shards than the rows of the
 * largest parameter tensor (a shard would hold nothing).
 */
int scar_train_new_state(struct scar_train_ctx *c, json_t *config, struct scar_state **out);
/* c->st, resumed, must have exactly the tensors of fresh: SCAR_EMISMATCH or SCAR_EINVAL else. */
int scar_train_check_layout(struct scar_train_ctx *c, const struct scar_state *fresh);
/* The clock a resumed c->st was saved at (its extra "clock", else its iteration). */
uint64_t scar_train_resume_clock(const struct scar_state *st);
/* A resumed clock counts the iterations executed: absent, or an integer at or after st->iteration (train_resume.c). */
int scar_train_clock_ok(const struct scar_state *st);
/* The cost's target from nref reference objectives, which ci borrows (SCAR_EINVAL when fewer than --iters + 1). */
int scar_train_cost_target(const struct scar_train_ctx *c, const double *ref, size_t nref,
			   struct scar_train_cost *ci);
/*
 * Mark in sel (rows bytes) the rows the policy saves this time of param
 * tensor ti, the ncp-th checkpoint of the policy. The same on every rank.
 */
int scar_train_select_rows(struct scar_train_ctx *c, size_t ti, uint8_t *sel, uint64_t ncp);

/*
 * train_rewind.c: the saved view's row ages (every param row at iter; then
 * the rows of tensor ti a checkpoint of the state writes, sel NULL: all),
 * and the state's "rewind" record: written by a recovery that restored the
 * lost shards' rows (*rows: the rows that lag), checked after every step.
 */
int scar_train_ages_init(struct scar_train_ctx *c, uint64_t iter);
int scar_train_ages_mark(struct scar_train_ctx *c, size_t ti, const uint8_t *sel);
void scar_train_ages_free(struct scar_train_ctx *c);
int scar_train_rewind_begin(struct scar_train_ctx *c, const uint8_t *lost, uint64_t *rows);
int scar_train_rewind_check(struct scar_train_ctx *c);

/*
 * train_auto.c: record the step norm s of the step into the current clock;
 * at a failure that lost the shards in lost, choose the recovery among
 * the model's by the bound's predicted cost (full_cost: T - C of a
 * rollback). *info gets the record for the recovery event ("auto").
 */
int scar_train_auto_step(struct scar_train_ctx *c, double s);
void scar_train_auto_reset(struct scar_train_ctx *c);	/* after a failure: a new window */
int scar_train_auto_choose(struct scar_train_ctx *c, const uint8_t *lost, uint64_t full_cost,
			   enum scar_recovery *choice, json_t **info);
/*
 * Count a checkpoint of `rows` rows (`bytes` raw, `file_bytes` written,
 * 0 without files) that took secs, sel_secs of them choosing the rows, in
 * c->res; its event record, new (NULL: out of memory).
 */
json_t *scar_train_checkpoint_record(struct scar_train_ctx *c, int full, uint64_t rows,
				     uint64_t bytes, uint64_t file_bytes, double secs,
				     double sel_secs);
/*
 * The same for a checkpoint taken at clock and state_iter and written in
 * the background in bg_secs; the ages are the caller's to mark.
 */
json_t *scar_train_checkpoint_event(struct scar_train_ctx *c, int full, uint64_t clock,
				    uint64_t state_iter, uint64_t rows, uint64_t bytes,
				    uint64_t file_bytes, double secs, double sel_secs,
				    double bg_secs);
/*
 * The run from the header up to the loop: the header, the saved view
 * (rebuilt from c->o->ckpt_dir after a resume), the first iteration record
 * and, when fresh, the first full checkpoint.
 */
int scar_train_begin(struct scar_train_ctx *c, json_t *config);
/*
 * The loop: steps, iteration records, checkpoints, failures and recovery,
 * until --iters (with --cost: until the target of ci is reached after the
 * last failure, or the cap). *done is 0 when the cap cut it short.
 */
int scar_train_loop(struct scar_train_ctx *c, const struct scar_train_cost *ci, int *done);
/* The cost (ci->have) and summary records; c->st becomes c->res->final_state. */
int scar_train_finish(struct scar_train_ctx *c, const struct scar_train_cost *ci, int done);
/* Hand the objective series to *objs when rc is 0 and objs is not NULL; free c's states and model. */
void scar_train_ctx_release(struct scar_train_ctx *c, int rc, double **objs, size_t *nobjs);

#endif
