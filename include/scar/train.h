/*
 * scar/train.h - the training loop with SCAR's fault-tolerance machinery:
 * checkpoint policies, scheduled partial failures, recovery strategies, and
 * the iteration cost against an unperturbed reference.
 *
 * Vocabulary (scar(7) has the long form):
 *   clock      iterations executed so far, monotone; what costs are counted in.
 *   state_iter the state's own iteration; a full rollback sends it back to C.
 *   saved view each parameter row's most recently saved value. The iteration-0
 *              state is saved in full, so every row has one.
 *
 * Checkpoint I/O budget: `full` writes every row each `interval` iterations;
 * the partial policies write a `fraction` r = 1/m of each parameter tensor's
 * rows every interval/m iterations, m dividing the interval (other fractions
 * are refused), so every interval writes the same rows under every policy.
 *
 * Determinism: the model owns its RNG in the state; the trainer's own random
 * choices (random policy rows, random failures and which shards they lose)
 * come from streams seeded by (fail_seed, iteration), so they consume no
 * model randomness and need no extra saved state.
 */
#ifndef SCAR_TRAIN_H
#define SCAR_TRAIN_H

#include <stdint.h>
#include <stdio.h>
#include <jansson.h>

#include "scar/error.h"
#include "scar/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

enum scar_policy {
	SCAR_POLICY_NONE = 0,		/* only the iteration-0 snapshot */
	SCAR_POLICY_FULL,		/* all rows every interval (traditional) */
	SCAR_POLICY_ROUND_ROBIN,	/* fraction r, fixed cycle through rows */
	SCAR_POLICY_RANDOM,		/* fraction r, random rows each time */
	SCAR_POLICY_PRIORITY,		/* fraction r, rows furthest from their saved value */
};

enum scar_recovery {
	SCAR_RECOVER_PARTIAL = 0,	/* lost rows from the saved view; all else goes on */
	SCAR_RECOVER_FULL,		/* whole state back to the last full checkpoint */
	SCAR_RECOVER_NONE,		/* leave lost rows destroyed (zero) - for studies */
	SCAR_RECOVER_REBUILD,		/* partial, then the model recomputes what survivors imply */
	SCAR_RECOVER_REWIND,		/* partial; restored rows step at their saved iteration's rate */
	SCAR_RECOVER_AUTO,		/* at each failure the one of these the bound predicts cheapest */
};
#define SCAR_RECOVER_COUNT 6

/* How a failure picks the shards it loses. */
enum scar_lose_mode {
	SCAR_LOSE_LIST = 0,		/* the listed shards */
	SCAR_LOSE_COUNT,		/* this many, chosen by seed */
	SCAR_LOSE_FRACTION,		/* round(fraction * S) >= 1, chosen by seed */
};

const char *scar_policy_name(enum scar_policy p);
int scar_policy_parse(const char *name);	/* policy, or -1 */
const char *scar_recovery_name(enum scar_recovery r);
int scar_recovery_parse(const char *name);	/* strategy, or -1 */

/*
 * What a resume passed over to find its checkpoint (scar_train_resume_scan).
 * A partial checkpoint holds only some parameter rows and no worker state
 * (generator, data order, optimizer state), so no run continues exactly from
 * it: a directory of a partial policy resumes from its newest full
 * checkpoint, the iteration-0 one unless a full state was saved there later.
 */
struct scar_train_resume_info {
	uint64_t iter;			/* state iteration of the checkpoint resumed from */
	uint64_t newest_iter;		/* the newest checkpoint's in the directory (>= iter) */
	size_t newer_partial;		/* partial checkpoints of later iterations, passed over */
	uint64_t first_partial;		/* the oldest and newest of them, when there are any */
	uint64_t last_partial;
	size_t damaged;			/* damaged checkpoints the loader skipped */
};

/*
 * What opts->progress is told: once when a run (or its reference) starts,
 * with clock at its first iteration, then after every iteration.
 */
struct scar_train_progress {
	/*
	 * 1: the unperturbed reference run that --cost computes first (from
	 * iteration 0 to iters, whatever the run resumed from); 0: the run.
	 */
	int reference;
	uint64_t clock;		/* iterations executed (the clock) */
	uint64_t start;		/* the clock this run started at: 0, or a checkpoint's */
	uint64_t iters;		/* --iters: the clock the run goes to */
	/*
	 * The most it may go to: iters, or with --cost iters plus the cap:
	 * past iters a run measuring its cost goes on until its objective
	 * reaches target.
	 */
	uint64_t limit;
	double target;		/* the cost's target objective; NAN when none */
	double objective;	/* at clock */
	const char *objective_name;	/* "cross_entropy", ... */
};

/* The checkpoint schedule a state was saved under (scar_train_saved_schedule). */
struct scar_train_schedule {
	enum scar_policy policy;
	uint64_t interval;
	double fraction;
	uint64_t fail_seed;		/* it also seeds the random policy's rows */
};

#define SCAR_TRAIN_MAX_FAILS 1024
#define SCAR_TRAIN_MAX_LOSE 4096

struct scar_train_opts {
	/* what to train: a model name and its config (borrowed; NULL = {}) */
	const char *model;
	json_t *config;
	uint32_t shards;		/* S >= 1 */
	uint64_t iters;			/* clock iterations (the reference's length) */
	uint64_t heldout_every;		/* 0 = only at the end */

	/* resuming: a checkpoint to continue from (borrowed; NULL = fresh) */
	const struct scar_state *resume;
	/* what was passed over to find it, for the header (borrowed; may be NULL) */
	const struct scar_train_resume_info *resume_info;
	/*
	 * S bytes, nonzero for the shards a real failure lost at the resume
	 * point (survivor files, scar-mpi(7)): the run starts with their
	 * failure and recovery. NULL: none.
	 */
	const uint8_t *resume_lost;
	/*
	 * Where the saved view and full recovery's base are rebuilt from at
	 * the resume point, before ckpt_dir: the directory of the run whose
	 * survivor files are resumed (its checkpoints are what it had saved
	 * when the rank died, wherever this run writes). NULL: ckpt_dir.
	 */
	const char *resume_view_dir;

	/* checkpoints */
	enum scar_policy policy;
	uint64_t interval;		/* C */
	double fraction;		/* r, in (0, 1] */
	const char *ckpt_dir;		/* NULL = in-memory store only */
	int ckpt_compress;		/* LZ4 frames in files */
	int ckpt_sync;			/* fsync files (default 1) */
	/*
	 * 0: write each checkpoint before going on. N >= 1: copy it and write
	 * it in the background, at most N in flight (scar-train --async).
	 */
	unsigned ckpt_in_flight;
	unsigned ckpt_threads;		/* compression threads per checkpoint (0: 1) */
	int ckpt_shuffle;		/* enum scar_shuffle (scar/ckpt.h; default off) */

	/* failures */
	uint64_t fail_at[SCAR_TRAIN_MAX_FAILS];
	size_t nfail_at;
	double fail_prob;		/* per-iteration probability, 0 = off */
	enum scar_lose_mode lose_mode;
	uint32_t lose_list[SCAR_TRAIN_MAX_LOSE];
	size_t nlose_list;
	uint32_t lose_count;
	double lose_fraction;
	uint64_t fail_seed;
	enum scar_recovery recovery;

	/* iteration cost */
	int measure_cost;		/* run (or use) a reference, report cost */
	const json_t *reference;	/* array of reference objectives by clock, or NULL = run it */
	/*
	 * the header record of the reference's stream (borrowed; NULL =
	 * unchecked): its model, shards and configuration must be the run's
	 */
	const json_t *reference_header;
	uint64_t cost_window;		/* objective smoothing window (>= 1) */
	uint64_t cost_cap;		/* extra clock iterations allowed to reach the target */

	/* output */
	FILE *events;			/* JSON lines; NULL = none */
	int timing;			/* include elapsed/seconds fields (breaks bit-identity) */
	const char *tool;		/* "scar-train" for the header */
	/* progress callback (below), may be NULL; called on rank 0 only */
	void (*progress)(const struct scar_train_progress *p, void *arg);
	void *progress_arg;
};

/*
 * The rows of tensor ti of st that a checkpoint by policy o writes at st's
 * iteration, the ncp-th checkpoint of the schedule (ncp = iteration /
 * period), against the saved view saved (same layout): sel[r] = 1 for each
 * (rows bytes). prio (NULL: computed from saved) are the rows' priorities
 * for the priority policy. The one selection: scar-train's and scar-ckpt
 * save's.
 */
int scar_train_policy_select(const struct scar_train_opts *o, const struct scar_state *st,
			     const struct scar_state *saved, size_t ti, uint64_t ncp,
			     const double *prio, uint8_t *sel, struct scar_error *err);


/* Defaults: S = 1, iters 50, policy none, interval 8, fraction 1, recovery partial, window 1. */
void scar_train_opts_init(struct scar_train_opts *o);

struct scar_train_result {
	uint64_t clock;			/* iterations executed */
	double final_objective;
	uint64_t failures;
	int64_t total_cost;		/* clocks to the target minus the reference's; censored: at the cap */
	double cost_interp;		/* the same with both crossings linearly interpolated */
	int censored;
	uint64_t checkpoints, checkpoint_rows, checkpoint_bytes;
	double checkpoint_seconds;	/* all checkpoint work, selection and writes */
	double select_seconds;		/* of which choosing the rows (priorities, sort) */
	/*
	 * --async: checkpoint_seconds is the loop's stall (selection, copy and
	 * waits for a free slot); this, the writes in the background.
	 */
	double background_seconds;
	struct scar_state *final_state;	/* owned by the caller: scar_state_free() it */
};

/*
 * Train as opts says, writing events. Returns 0, or a negative error
 * (SCAR_EDIVERGED naming the iteration when the objective, a step or the
 * parameters are not finite or the objective has grown by orders of
 * magnitude, after a "diverged" event - scar-train(1) Divergence; SCAR_EIO
 * when a checkpoint cannot be written - nothing damaged is left behind). On
 * success res->final_state holds the final state.
 */
int scar_train_run(const struct scar_train_opts *opts, struct scar_train_result *res,
		   struct scar_error *err);

/*
 * The reference objectives of an event stream (by clock 0..n), as a JSON
 * array of reals, for opts->reference. Returns NULL and fills err when the
 * stream has no iteration records, or has failure or recovery records (a
 * perturbed run is no reference).
 */
json_t *scar_train_reference_from_events(const json_t *const *records, size_t n,
					 struct scar_error *err);

/*
 * What the resume from path (as scar_train_load_resume's or
 * scar_dist_load_resume's) of st passed over: in a directory, the
 * checkpoints (files and manifests) newer than st, of which the partial
 * ones are counted; damaged is the loader's count of skipped ones. A path
 * that is not a directory passes over nothing. SCAR_EIO and the like when
 * the directory cannot be listed.
 */
int scar_train_resume_scan(const char *path, const struct scar_state *st, size_t damaged,
			   struct scar_train_resume_info *info, struct scar_error *err);

/*
 * The checkpoint schedule st was saved under: every checkpoint and final
 * state the trainer writes records its policy, interval, fraction and
 * failure seed in extra "schedule", so that a resume keeps them. Returns 1
 * and fills *out when st says, 0 when it does not (a state of another tool
 * or of an older scar), SCAR_EFORMAT when the record is malformed.
 */
int scar_train_saved_schedule(const struct scar_state *st, struct scar_train_schedule *out,
			      struct scar_error *err);

/*
 * Whether st can be resumed: its model is known, its configuration passes
 * the models' one validation (scar_model_configure, as --set and --config
 * do) and its extra "clock", when present, is an integer at or after its
 * iteration. SCAR_ECORRUPT naming the key when not (the checksums held, the
 * content does not). *config (optional) gets the configuration the run
 * uses, as scar_model_configure gives it. scar_train_run checks this
 * itself; a caller that knows the file name checks first, to name it.
 */
int scar_train_check_resume(const struct scar_state *st, json_t **config,
			    struct scar_error *err);

/*
 * Build a resumable state from a checkpoint path, a directory (its newest
 * full checkpoint that verifies; damaged newer ones are skipped and counted
 * in *skipped) or "-" (stdin). An I/O error on a newer checkpoint is
 * returned (SCAR_EIO), not skipped: the file may be intact.
 */
int scar_train_load_resume(const char *path, struct scar_state **out, size_t *skipped,
			   char *used_path, size_t used_len, struct scar_error *err);

#ifdef __cplusplus
}
#endif
#endif
