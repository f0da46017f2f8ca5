/*
 * scar/model.h - the interface every workload (mlr, ridge, mf, lda) implements.
 *
 * A model is data plus an update rule. All of its checkpointed state lives in
 * a struct scar_state that the trainer owns: server parameters as
 * SCAR_ROLE_PARAM tensors (sharded by row, lost in partial failures) and
 * worker-side state as SCAR_ROLE_STATE tensors (RNG words, data order,
 * LDA token assignments, optimizer state). The model instance holds only
 * what is derived from the config and never changes (the data set, sizes).
 *
 * Contract: a model keeps no pointer into the state between calls, because
 * the trainer replaces and edits state (resume, recovery, fault injection).
 * Everything a step does is a function of (config, data, state): that is
 * what makes the same seed bit-identical and resume exact.
 *
 * A new model's distributed step goes into its own lib/model_*.c as a
 * struct scar_model_dist (below) pointed to by def->dist, written over
 * lib/transport.h; tests/unit/test-transport.c checks it against the
 * one-process step over the one-process transport.
 */
#ifndef SCAR_MODEL_H
#define SCAR_MODEL_H

#include <stdint.h>

#include <jansson.h>

#include "scar/error.h"
#include "scar/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

struct scar_model;	/* opaque, one per workload implementation */
struct scar_dist_model;	/* opaque: one rank's part of a distributed model, per workload */
struct scar_transport;	/* libscar-internal (lib/transport.h): the ranks, as a step sees them */

/*
 * How a model runs distributed (scar-mpi(7)); in the model's own file,
 * next to its one-process step, sharing its data loader, kernels, step
 * size and schedule. The MPI trainer (lib/dist_mpi.c) knows no model: it
 * creates the model on the ranks every_rank says, calls setup, spreads the
 * state, calls bind, then step and objective on every rank, in the same
 * order. The per-rank functions run over the transport, whose one-process
 * version (P = 1) lets the unit tests check them against the one-process
 * step without MPI.
 */
struct scar_model_dist {
	/*
	 * 0: create() runs on rank 0 alone (what is not distributed - a step
	 * size, c, x*, the held-out metric - is computed there; the other
	 * ranks' setup gets m = NULL); 1: on every rank (its step calls the
	 * model's own code on the rank's share).
	 */
	int every_rank;
	/*
	 * This rank's part: its data, buffers, what it learns from rank 0
	 * (over tp: every rank calls it). shards: the row-ownership rule's S.
	 */
	int (*setup)(struct scar_model *m, const json_t *config, struct scar_transport *tp,
		     uint32_t shards, struct scar_dist_model **out, struct scar_error *err);
	/* Optional: check the state (the same on every rank) and size buffers by it. */
	int (*bind)(struct scar_dist_model *dm, const struct scar_state *st, struct scar_error *err);
	/* One iteration, the same state on every rank before and after. */
	int (*step)(struct scar_dist_model *dm, struct scar_state *st, struct scar_error *err);
	/* The training objective, the same double on every rank. */
	int (*objective)(struct scar_dist_model *dm, const struct scar_state *st, double *out,
			 struct scar_error *err);
	/* Optional: the state's params were changed outside step (recovery): drop caches. */
	void (*changed)(struct scar_dist_model *dm);
	void (*free)(struct scar_dist_model *dm);
};

/* The type of a configuration key's value. */
enum scar_key_type {
	SCAR_KEY_INT,		/* a JSON integer (an integral real such as 7.0 is taken as 7) */
	SCAR_KEY_REAL,		/* a JSON number */
	SCAR_KEY_STRING,	/* a JSON string, not empty; one of choices when there are any */
};

/* struct scar_model_key flags */
#define SCAR_KEY_SYNTHETIC 1u	/* of the synthetic data generator: refused with real data */
#define SCAR_KEY_SYNTH_DEFAULT 2u	/* the default only with synthetic data; real data sets it */
#define SCAR_KEY_OPTIONAL 4u	/* no default: absent unless given (a path) */

/*
 * One configuration key of a workload. A model's table of them is the one
 * description of its configuration: its configure() checks the values and
 * adds the defaults from it, `scar-train --list-keys` prints it, and
 * scar-train(1) documents it (a test holds the page to the table).
 */
struct scar_model_key {
	const char *name;
	enum scar_key_type type;
	unsigned flags;			/* SCAR_KEY_SYNTHETIC ... */
	int64_t int_def, int_min, int_max;	/* SCAR_KEY_INT */
	double real_def, real_min, real_max;	/* SCAR_KEY_REAL */
	const char *str_def;		/* SCAR_KEY_STRING; NULL: no default */
	const char *const *choices;	/* SCAR_KEY_STRING: NULL-terminated, or NULL: any */
	const char *def_key;		/* not NULL: the default is this other key's value */
	const char *help;		/* one line: what the key sets */
};

struct scar_model_def {
	const char *name;		/* "mlr" */
	const char *summary;		/* one line for --help and --list-models */
	const char *objective_name;	/* "cross_entropy", "rmse_penalized", "loglik_per_token" */
	int objective_higher_better;	/* 1 for log-likelihood, 0 for losses */
	const char *heldout_name;	/* "test_accuracy", "test_rmse", ...; NULL when none */
	int heldout_higher_better;

	/*
	 * Validate config (a JSON object) and add every default the model uses,
	 * so the event header and checkpoint record the complete configuration.
	 * Common keys: "seed" (integer), "data" (path or absent for the
	 * built-in synthetic generator). The keys, their types, ranges and
	 * defaults are those of the table keys (below). Unknown keys are an
	 * error (SCAR_EINVAL naming the key and the nearest one, or else all).
	 */
	int (*configure)(json_t *config, struct scar_error *err);

	/* Load data and precompute; config has been through configure(). */
	int (*create)(struct scar_model **out, const json_t *config, struct scar_error *err);

	/*
	 * Fill an empty state (model name and config already set) with the
	 * iteration-0 tensors. Called for a fresh run only; a resumed run gets
	 * its state from the checkpoint instead, and the trainer checks that
	 * its layout matches what init_state would build.
	 */
	int (*init_state)(struct scar_model *m, struct scar_state *st, struct scar_error *err);

	/* One iteration (as the model documents it), x(k) -> x(k+1). */
	int (*step)(struct scar_model *m, struct scar_state *st, struct scar_error *err);

	/* The training objective at the current state. */
	int (*objective)(struct scar_model *m, const struct scar_state *st, double *out,
			 struct scar_error *err);

	/* Held-out metric, or NULL when the model has none. */
	int (*heldout)(struct scar_model *m, const struct scar_state *st, double *out,
		       struct scar_error *err);

	/*
	 * Optional (NULL when unknown): the exact contraction rate c of the
	 * update map and the optimum's distance ||x - x*|| of a state, over the
	 * server parameters. ridge implements both.
	 */
	int (*contraction)(struct scar_model *m, double *c, struct scar_error *err);
	int (*dist_to_opt)(struct scar_model *m, const struct scar_state *st, double *out,
			   struct scar_error *err);

	/*
	 * Release the instance; NULL is fine. (To draw rows from the initial
	 * distribution, e.g. scar-inject --reset init, build a fresh state with
	 * init_state under another "seed".)
	 */
	void (*free)(struct scar_model *m);

	/*
	 * Optional (NULL: the configuration says it all): the configuration
	 * in effect once the data is loaded, as members added to out (an empty
	 * object) - sizes taken from the data (n, d, classes, ...), values
	 * the model clamped or derived (a batch larger than the data, a step
	 * size computed from it, ridge's eta with the ends lambda_min, lambda_max
	 * of its Hessian's spectrum) and the step-size schedule. The header event
	 * carries it as "effective" (scar-events(7)). Fails only for memory.
	 */
	int (*effective)(struct scar_model *m, json_t *out, struct scar_error *err);

	/*
	 * Optional (NULL: the model has none, scar(7) "Recovery"): recovery
	 * "rebuild". Recompute lost parameter rows from what survives a
	 * partial failure: the surviving param rows and the worker state
	 * (SCAR_ROLE_STATE tensors), never the lost values. lost[s] is 1 for
	 * each lost shard of shards (row r of a param tensor is in shard
	 * r mod shards); on entry a lost row holds the saved view's value,
	 * which the rebuild may start from. Rows the model cannot recompute
	 * keep it. *rows gets the number of param rows recomputed. Deterministic,
	 * a function of (config, data, state, lost): the MPI trainer runs it on
	 * every rank's identical copy and gets the one-process result.
	 */
	int (*rebuild)(struct scar_model *m, struct scar_state *st, const uint8_t *lost,
		       uint32_t shards, uint64_t *rows, struct scar_error *err);

	/*
	 * 1: the step follows the state's extra "rewind" (recovery "rewind",
	 * scar(7)): listed rows take the step size of their own count of
	 * updates (lib/rewind.h scar_rewind_rows). 0: the model has no
	 * decaying step to rewind, and the recovery is refused.
	 */
	int rewinds;

	/* The distributed step (above); NULL: the model does not run distributed. */
	const struct scar_model_dist *dist;

	/*
	 * Its configuration keys (above), ended by one whose name is NULL, in
	 * the order configure() adds their defaults. configure() refuses any
	 * other key.
	 */
	const struct scar_model_key *keys;
};

/* The built-in workloads, NULL-terminated. */
const struct scar_model_def *const *scar_models(void);
/* By name, or NULL. */
const struct scar_model_def *scar_model_find(const char *name);

/*
 * The one validation of a configuration, whatever its source (--set,
 * --config, a checkpoint's or a manifest's metadata, scar-inject's --reset
 * init): a copy of config (NULL: empty) through the model's configure().
 * *out (optional) gets the complete configuration the model runs with,
 * defaults added and integral reals of integer keys made integers; config
 * itself is not changed. SCAR_EINVAL naming the key for an unknown key or a
 * value of the wrong type, SCAR_ERANGE for one out of range; SCAR_EINVAL
 * for an unknown model.
 */
int scar_model_configure(const char *model, const json_t *config, json_t **out,
			 struct scar_error *err);

/* The key of def's table called name, or NULL. */
const struct scar_model_key *scar_model_key_find(const struct scar_model_def *def,
						 const char *name);

/* "integer", "real" or "string": the name of a key type, for listings. */
const char *scar_key_type_name(enum scar_key_type t);

#ifdef __cplusplus
}
#endif
#endif
