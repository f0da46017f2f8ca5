/*
 * model_lda.h - the pieces of the lda model (model_lda.c) that its
 * distributed step runs on different ranks: the AD-LDA sweep of
 * "workers" W > 1 blocks of documents, each sampled against the counts of
 * the start of the sweep with the sweep's keyed draws, and the per-document
 * log-likelihoods the objective adds in document order. Declared here for
 * the unit tests; not part of the public API; the model pointer must be an instance of the "lda" model.
 */
#ifndef SCAR_MODEL_LDA_H
#define SCAR_MODEL_LDA_H

#include <stddef.h>
#include <stdint.h>

#include "scar/error.h"
#include "scar/model.h"
#include "scar/tensor.h"

struct scar_lda_info {
	uint32_t workers;		/* W, the blocks of documents of a sweep */
	uint64_t docs, tokens;		/* training documents and tokens */
	const uint64_t *doc_start;	/* docs + 1: document d's tokens start..start[d+1] */
};

void scar_lda_info(const struct scar_model *m, struct scar_lda_info *out);
/*
 * A W > 1 sweep is: scar_lda_sweep_begin (check and clamp the counts,
 * recompute the totals, give the sweep's key in *seed: a function of the
 * config's seed and the state's iteration, which keys every draw), then
 * scar_lda_sample_block for every block b < W in any order and on any
 * process holding the begin's counts (it samples block b's documents,
 * changing only their z and doc_topic rows), then, once every block's z is
 * in place, scar_lda_sweep_end (rebuild all counts from z).
 */
int scar_lda_sweep_begin(struct scar_model *m, struct scar_state *st, uint64_t *seed,
			 struct scar_error *err);
int scar_lda_sample_block(struct scar_model *m, struct scar_state *st, uint32_t b,
			  uint64_t seed, struct scar_error *err);
int scar_lda_sweep_end(struct scar_model *m, struct scar_state *st, struct scar_error *err);
/* Values of the "sampler" key. */
#define SCAR_LDA_SAMPLER_RACE 0
#define SCAR_LDA_SAMPLER_CDF 1
/*
 * For tests: one draw of the given sampler from the weights w[0, k) (all
 * > 0) with a token's key, by the code the sweeps run (UINT32_MAX when out
 * of memory); and -log u, u in [2^-24, 1], by the race's float logarithm,
 * for n a multiple of 8.
 */
uint32_t scar_lda_draw(int sampler, const float *w, uint32_t k, uint64_t key);
void scar_lda_neglog(const float *u, float *out, size_t n);
/* The log-likelihood of each training document d0 <= d < d1 into out[d - d0]. */
int scar_lda_doc_logliks(struct scar_model *m, const struct scar_state *st, uint64_t d0,
			 uint64_t d1, double *out, struct scar_error *err);
/* The objective from the document-order sum of the documents' log-likelihoods. */
double scar_lda_objective_of(const struct scar_model *m, double loglik_sum);

#endif
