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
 */
#ifndef SCAR_MODEL_H
#define SCAR_MODEL_H

#include <jansson.h>

#include "scar/error.h"
#include "scar/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

struct scar_model;	/* opaque, one per workload implementation */

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
	 * built-in synthetic generator). Unknown keys are an error (SCAR_EINVAL
	 * naming the key).
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

#ifdef __cplusplus
}
#endif
#endif
