/*
 * model_mf.h - the pieces of the mf model (model_mf.c) that its distributed
 * step runs on the owners of the rows, so that a distributed ALS
 * sweep does every floating-point operation of the single-process one:
 * the per-row solves, and the per-user and per-item terms of the sums the
 * model adds up in user (then item) order; and the DSGD epoch of solver
 * "sgd" with "workers" W > 1, whose blocks the ranks run. Declared here for
 * the unit tests (test-models, test-coupled); not part of the public API; the model pointer must be an instance of the "mf" model.
 */
#ifndef SCAR_MODEL_MF_H
#define SCAR_MODEL_MF_H

#include <stdint.h>

#include "scar/error.h"
#include "scar/model.h"
#include "scar/tensor.h"

struct scar_mf_params {
	float *p, *q, *bu, *bi;	/* user and item factors [rows, rank], biases */
	double *mu;		/* the global mean */
};

struct scar_mf_info {
	uint32_t users, items, rank;
	int sgd;		/* solver "sgd" (else "als") */
	uint32_t workers;	/* sgd: W, the DSGD workers (1: the sequential epoch) */
	uint64_t n_train;
};

void scar_mf_info(const struct scar_model *m, struct scar_mf_info *out);
/* The parameter tensors of st, checked against the model's sizes. */
int scar_mf_params(const struct scar_model *m, const struct scar_state *st,
		   struct scar_mf_params *x, struct scar_error *err);
/*
 * The ALS update of user u's (p_u, b_u) given the items, and of item i's
 * given the users: 1, or 0 when the system is numerically singular and the
 * row is left as it was.
 */
int scar_mf_solve_user(struct scar_model *m, struct scar_mf_params *x, uint32_t u);
int scar_mf_solve_item(struct scar_model *m, struct scar_mf_params *x, uint32_t i);
/* Sum over user u's training ratings, in rating order, of r - b_u - b_i - p_u.q_i (the mean's part). */
double scar_mf_user_resid(const struct scar_model *m, const struct scar_mf_params *x, uint32_t u);
/* Sum over user u's training ratings, in rating order, of the squared error. */
double scar_mf_user_sse(const struct scar_model *m, const struct scar_mf_params *x, uint32_t u);
/* The penalty term w (|f|^2 + b^2) of user u and of item i (before lambda). */
double scar_mf_user_pen(const struct scar_model *m, const struct scar_mf_params *x, uint32_t u);
double scar_mf_item_pen(const struct scar_model *m, const struct scar_mf_params *x, uint32_t i);
/*
 * An sgd epoch is scar_mf_sgd_begin (set the "order" tensor to the
 * epoch's keyed order, split it into the W x W blocks), then
 * scar_mf_sgd_block for every stratum s = 0..W-1 in order and, within a
 * stratum, for every worker w < W in any order and on any process whose
 * copy of w's user rows and of item block (w + s) mod W is current: it
 * updates, in the shuffled order, the ratings of user block w and item
 * block (w + s) mod W, changing only those rows of x (factors and biases).
 * With W = 1 the one block is every rating (w = s = 0). Begin fails as the
 * step does (a missing or misshapen "order"); a block cannot fail.
 */
int scar_mf_sgd_begin(struct scar_model *m, struct scar_state *st, struct scar_error *err);
void scar_mf_sgd_block(const struct scar_model *m, const struct scar_state *st,
		       struct scar_mf_params *x, uint32_t w, uint32_t s);
/* The global mean from the user-order sum of the residual parts. */
double scar_mf_mean(const struct scar_model *m, double resid_sum);
/* The objective from the user-order sum of squared errors and the user-then-item-order penalty. */
double scar_mf_objective_of(const struct scar_model *m, double sse, double pen);

#endif
