/*
 * scar/data.h - data sets: real-file readers and deterministic synthetic
 * generators for the workloads.
 *
 * Readers fail with SCAR_EFORMAT and err->file/err->line (text) or
 * err->offset (binary) set at the first problem; they never return a
 * partial data set. Generators are pure functions of their arguments and
 * seed: the same call gives bit-identical data on every machine.
 *
 * Ownership: every scar_*_load/_synth returns a new object the caller frees
 * with the matching _free; _free(NULL) does nothing.
 */
#ifndef SCAR_DATA_H
#define SCAR_DATA_H

#include <stdint.h>

#include "scar/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Dense examples: x is n rows of d features (row-major f32); labels or targets. */
struct scar_dense {
	uint64_t n, d;
	float *x;		/* n * d */
	uint32_t *label;	/* n class labels in [0, classes), or NULL */
	float *target;		/* n real targets (regression), or NULL */
	uint32_t classes;	/* 0 for regression */
	double *class_value;	/* classes labels as the file wrote them (LIBSVM), or NULL */
};
void scar_dense_free(struct scar_dense *ds);

/*
 * IDX files (MNIST, Fashion-MNIST), gzip-compressed or plain (zlib detects
 * which). Images (u8, 2 to 4 dimensions: n, then the feature shape,
 * flattened into d) are scaled to [0, 1] as v / 255; labels (idx1, u8) give
 * classes = largest label + 1. labels may be NULL (then label is NULL and
 * classes 0). Errors carry err->offset (in the uncompressed data for gzip):
 * SCAR_EFORMAT for a bad magic or dimension count, SCAR_EUNSUPPORTED for a
 * non-u8 element type, SCAR_ECORRUPT for a zero dimension, trailing data or
 * a header that declares more than the file can hold (checked before any
 * allocation; for gzip against the deflate limit of about 1032:1),
 * SCAR_ETRUNC when the data ends early, SCAR_EMISMATCH when the label
 * count differs from the image count.
 */
int scar_idx_load(const char *images, const char *labels, struct scar_dense **out,
		  struct scar_error *err);

/*
 * LIBSVM / svmlight text: "label idx:val idx:val ...", 1-based increasing
 * indices, '#' comments, blank lines ignored, svmlight "qid:N" skipped.
 * d = the largest index seen (1 when there is none), or `dim` when nonzero
 * (then a larger index is SCAR_ERANGE with err->file and err->line).
 * classification = 1 maps the distinct labels, sorted, to 0..classes-1 (so
 * -1/+1 become 0/1) and keeps them in class_value; otherwise labels are
 * real targets. The mapping is the file's own: load a test file with
 * scar_libsvm_load_like so that its class ids mean the training file's. A
 * malformed line is SCAR_EFORMAT with err->file and err->line; a file
 * without examples is SCAR_EFORMAT.
 */
int scar_libsvm_load(const char *path, uint64_t dim, int classification,
		     struct scar_dense **out, struct scar_error *err);

/*
 * A LIBSVM file of labels mapped to the classes of like (a classification
 * set from scar_libsvm_load): the label like->class_value[c] becomes class
 * c, and out->classes = like->classes, whichever labels the file holds. A
 * label that is not one of like's is SCAR_EMISMATCH with err->file and
 * err->line; like without class_value is SCAR_EINVAL. dim as for
 * scar_libsvm_load.
 */
int scar_libsvm_load_like(const char *path, uint64_t dim, const struct scar_dense *like,
			  struct scar_dense **out, struct scar_error *err);

/* Ratings: n triples; users and items are dense 0-based ids. */
struct scar_ratings {
	uint64_t n;
	uint32_t users, items;
	uint32_t *user, *item;
	float *rating;
};
void scar_ratings_free(struct scar_ratings *r);

/*
 * MovieLens ratings, format detected from the first line: ml-100k u.data
 * (tab-separated "user item rating timestamp"), ml-1m ratings.dat
 * ("u::i::r::t"), ml-latest CSV (header "userId,movieId,rating,timestamp",
 * optional). The timestamp may be missing; it is checked and dropped. Raw
 * ids are remapped to dense 0-based ids in increasing raw-id order, so the
 * mapping does not depend on the order of lines in the file; users and
 * items count the distinct ids seen. A malformed line is SCAR_EFORMAT with
 * err->file and err->line; an empty file is SCAR_EFORMAT.
 */
int scar_movielens_load(const char *path, struct scar_ratings **out, struct scar_error *err);

/*
 * Split ratings into train and test by seed: each rating goes to test with
 * probability test_frac in [0, 1] (one uniform draw per rating, in order,
 * from scar_rng seeded with seed), keeping the order within each part. Ids
 * keep their meaning: both parts have all's users and items counts. On
 * success *train and *test are new objects for scar_ratings_free.
 */
int scar_ratings_split(const struct scar_ratings *all, double test_frac, uint64_t seed,
		       struct scar_ratings **train, struct scar_ratings **test,
		       struct scar_error *err);

/* A bag-of-words corpus: doc d's tokens are words[doc_start[d] .. doc_start[d+1]). */
struct scar_corpus {
	uint64_t docs, vocab, tokens;
	uint64_t *doc_start;	/* docs + 1 */
	uint32_t *words;	/* tokens word ids in [0, vocab) */
	char **vocab_words;	/* vocab strings, or NULL when unknown */
};
void scar_corpus_free(struct scar_corpus *c);

/*
 * UCI bag-of-words: docword.*.txt (D, W, NNZ header lines, then
 * "docID wordID count", 1-based) and optionally vocab.*.txt (one word a
 * line; NULL to skip). Tokens of a document are expanded in file order.
 * Blank lines are ignored. Errors (err->file and err->line set): a header
 * count larger than the file can hold (SCAR_ECORRUPT, checked before
 * anything is allocated), a malformed line (SCAR_EFORMAT), an id outside
 * 1..D or 1..W or a count above SCAR_UCI_MAX_COUNT (SCAR_ERANGE), fewer
 * entries than NNZ (SCAR_ETRUNC), more (SCAR_EMISMATCH), a vocab file whose
 * line count is not W (SCAR_EMISMATCH). Documents without entries are empty.
 */
#define SCAR_UCI_MAX_COUNT 1000000
int scar_uci_bow_load(const char *docword, const char *vocab, struct scar_corpus **out,
		      struct scar_error *err);

/* ---- synthetic generators (the built-in defaults of scar-train) ---- */

/* Gaussian class clusters: classes means ~ N(0, sep^2 I), x = mean + N(0, I). */
int scar_synth_classification(uint64_t n, uint64_t d, uint32_t classes, double sep,
			      uint64_t seed, struct scar_dense **out, struct scar_error *err);
/* Planted linear model: x ~ N(0, I) scaled by column, y = x w* + noise * N(0,1). */
int scar_synth_regression(uint64_t n, uint64_t d, double noise, uint64_t seed,
			  struct scar_dense **out, struct scar_error *err);
/*
 * Planted low-rank ratings: U (users x rank), V (items x rank) ~ N(0, 1/rank),
 * rating = mu + u.v + noise * N(0,1) on a random fraction `density` of cells.
 */
int scar_synth_ratings(uint32_t users, uint32_t items, uint32_t rank, double density,
		       double noise, uint64_t seed, struct scar_ratings **out,
		       struct scar_error *err);
/*
 * Planted topics: K topics over vocab words ~ Dirichlet(beta), documents of
 * doc_len tokens with topic mixtures ~ Dirichlet(alpha). When topics_out is
 * not NULL it receives the K x vocab planted word distributions (malloc'd,
 * row-major doubles) for recovery tests.
 */
int scar_synth_corpus(uint64_t docs, uint64_t vocab, uint32_t topics, uint64_t doc_len,
		      double alpha, double beta, uint64_t seed, struct scar_corpus **out,
		      double **topics_out, struct scar_error *err);

#ifdef __cplusplus
}
#endif
#endif
