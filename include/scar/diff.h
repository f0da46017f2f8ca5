/*
 * scar/diff.h - the perturbation between two snapshots: streaming norms.
 *
 * d = A - B elementwise, over the elements present in both:
 *   l1 = sum |d|, l2 = sqrt(sum d^2), linf = max |d|,
 *   rel_l2 = l2 / ||B|| (0 when l2 is 0, +inf when l2 is Inf or ||B|| 0),
 *   changed = elements whose bits differ, elements compared.
 * Non-finite values (scar-diff(1) has the table): two elements with the
 * same bits have d = 0, Inf and NaN alike, so identical files are equal.
 * Otherwise d = A - B: an Inf against a finite value or the opposite Inf
 * makes |d| Inf, and a NaN against anything with other bits makes d NaN,
 * and l1, l2 and linf NaN. -0 and +0 differ in bits (changed) by d = 0.
 *
 * Accuracy: elements are converted to double and summed in blocks of at
 * most 1024 terms (four interleaved partial sums each); block sums are
 * added with Neumaier's compensated summation. The error of a sum of n
 * non-negative terms is then about 256 u + n u^2 relative (u = 2^-53),
 * whatever n: good to ~1e-13 for 1e9 elements, where a plain double loop
 * can lose 1e-7 and a float loop everything.
 *
 * Range: squares are summed as above while that is exact enough; when a
 * plain sum of squares would overflow or underflow (f64 elements beyond
 * about 1e+-150), it is taken again scaled by powers of two (struct
 * scar_sumsq), so l2, norm_a and norm_b are right for every finite input:
 * Inf only when an element is Inf or the norm itself exceeds the largest
 * double (about 1.8e308). The scaled sums are good to about 1e-13 relative
 * per 1e6 terms. l1 and linf are Inf likewise only beyond the double range.
 *
 * Snapshots are checkpoints (scar/ckpt.h), .npy or safetensors files
 * (scar/arrayfile.h), in any mix; tensors are matched by name. By default
 * only SCAR_ROLE_PARAM tensors are compared (the parameters a failure can
 * perturb); opts.all adds state tensors, and naming a tensor selects it
 * whatever its role.
 */
#ifndef SCAR_DIFF_H
#define SCAR_DIFF_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "scar/error.h"
#include "scar/numeric.h"	/* the norms: struct scar_norms, scar_diff_acc */
#include "scar/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- comparing snapshots ---- */

/* One compared row (param tensors only). */
struct scar_diff_row {
	size_t tensor;		/* index into scar_diff_result.tensors */
	uint64_t row;
	uint32_t shard;
	struct scar_norms n;
};

struct scar_diff_result;

struct scar_diff_opts {
	int all;			/* also compare state tensors */
	const char *const *names;	/* compare only these tensors (any role); NULL = all */
	size_t nnames;
	size_t top_k;			/* rows kept in top (default 10 after _init; 0 = none) */
	/*
	 * Called for every compared row of a param tensor, in file order; r is
	 * the partial result (its tensor table and sides are already filled). A
	 * negative return stops the comparison with that code.
	 */
	int (*row_fn)(void *ctx, const struct scar_diff_result *r, const struct scar_diff_row *row);
	void *row_ctx;
};
void scar_diff_opts_init(struct scar_diff_opts *o);

/* Names the kind of a snapshot: "ckpt", "npy", "safetensors", "state". */
struct scar_diff_side {
	char path[SCAR_ERROR_FILE_MAX];
	const char *kind;
	char model[SCAR_NAME_MAX];
	int has_iteration;		/* checkpoints and states have one, arrays not */
	uint64_t iteration;
	uint32_t shards;		/* 1 for arrays */
	size_t only_tensors;		/* compared-role tensors missing from the other side */
};

struct scar_diff_tensor {
	char name[SCAR_NAME_MAX];
	enum scar_dtype dtype;
	enum scar_role role;
	int ndim;
	uint64_t shape[SCAR_MAX_DIMS];
	uint64_t rows;
	uint64_t rows_compared;		/* present in both */
	uint64_t rows_only_a, rows_only_b;
	/* Rows present in one side only, as {start, count} ranges; owned by the result. */
	size_t nonly_a, nonly_b;
	uint64_t (*only_a)[2], (*only_b)[2];
	struct scar_norms n;
};

struct scar_diff_result {
	struct scar_diff_side a, b;
	struct scar_norms total;	/* over all compared tensors */
	uint32_t nshards;		/* shard count used for rows (A's, else B's) */
	struct scar_norms *shards;	/* per shard, param tensors only */
	size_t ntensors;
	struct scar_diff_tensor *tensors;	/* matched tensors, in A's order */
	size_t ntop;
	struct scar_diff_row *top;	/* largest row L2 first; rows with l2 > 0 only */
	/* Names of compared-role tensors found in only one side (owned). */
	size_t nonly_a, nonly_b;
	char (*only_a)[SCAR_NAME_MAX], (*only_b)[SCAR_NAME_MAX];
	uint64_t rows_only_a, rows_only_b;
	/*
	 * 1 when one side had to be read into memory whole: both inputs are
	 * pipes, or two checkpoints have different shard counts.
	 */
	int loaded_whole;
};

/*
 * Compare two snapshot files ("-" = stdin, for one of them). Each file is
 * opened once, so a FIFO is read as the stream it is. Checkpoints
 * are read a section at a time: a seekable one by random access to the
 * section that matches the other side's, so memory stays at two sections
 * plus buffers of a few MiB; .npy and safetensors are read in 1 MiB
 * pieces. Fails with SCAR_EMISMATCH (naming the tensor) when a matched
 * tensor differs in dtype or shape, SCAR_ENOTFOUND when no tensor is in
 * both, and the reader's errors. On success *out owns a new result.
 */
int scar_diff_files(const char *a, const char *b, const struct scar_diff_opts *opts,
		    struct scar_diff_result **out, struct scar_error *err);

/* The same over two states in memory (rows present in both). */
int scar_diff_states(const struct scar_state *a, const struct scar_state *b,
		     const struct scar_diff_opts *opts, struct scar_diff_result **out,
		     struct scar_error *err);

void scar_diff_result_free(struct scar_diff_result *r);

/* Orders of the tensor list (scar-diff --sort). */
enum scar_diff_sort {
	SCAR_DIFF_SORT_FILE = 0,	/* as in the result: A's order */
	SCAR_DIFF_SORT_L2,		/* largest l2 first */
	SCAR_DIFF_SORT_LINF,		/* largest linf first */
	SCAR_DIFF_SORT_REL,		/* largest rel_l2 first */
	SCAR_DIFF_SORT_NAME,		/* names in byte order (strcmp), ascending */
};

/*
 * The indices of r->tensors in the order key asks, as a new array of
 * r->ntensors entries (the caller frees it; NULL when out of memory, or
 * for no tensor). By a measure, NaN comes first (a NaN difference is the
 * worst news), then inf, then the finite values, largest first; equal
 * values go by name, so the order is the same on every run.
 */
size_t *scar_diff_tensor_order(const struct scar_diff_result *r, enum scar_diff_sort key);

/*
 * The result as one JSON object {"type":"diff","version":1, "a":{...},
 * "b":{...}, "l1","l2","linf","rel_l2","changed","elements",
 * "iteration_a","iteration_b", "tensors":[...], "shards":[...],
 * "top_rows":[...], "missing":{...}} (see scar-diff(1)). Non-finite
 * numbers become null. New reference, NULL when out of memory.
 */
json_t *scar_diff_result_json(const struct scar_diff_result *r);
/*
 * The same with "tensors" listing only r->tensors[order[0..n-1]] in that
 * order (order NULL: the first n in file order; n at most r->ntensors),
 * and "tensors_omitted" saying how many were left out. Totals, shards,
 * top rows and "missing" are over every tensor whatever is listed.
 */
json_t *scar_diff_result_json_list(const struct scar_diff_result *r, const size_t *order, size_t n);
/* One row as {"type":"row","tensor","row","shard","l1","l2","linf","changed","elements"}. */
json_t *scar_diff_row_json(const struct scar_diff_result *r, const struct scar_diff_row *row);

#ifdef __cplusplus
}
#endif
#endif
