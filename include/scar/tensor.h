/*
 * scar/tensor.h - named dense tensors, and the training state made of them.
 *
 * A tensor is contiguous row-major storage. Its first dimension is the row:
 * the unit of sharding, of partial checkpoints and of recovery. A scalar or
 * 1-d tensor of n elements has n rows of one element... except ndim 0, which
 * has one row of one element.
 *
 * Ownership: a tensor owns its name, data and present map; scar_tensor_free()
 * releases all three. A state owns its tensors and its config.
 */
#ifndef SCAR_TENSOR_H
#define SCAR_TENSOR_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "scar/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SCAR_MAX_DIMS 8
#define SCAR_NAME_MAX 128	/* longest tensor or model name, bytes incl. NUL */
/*
 * Most rows a tensor of zero-byte rows (a later dimension is 0) may have.
 * Such rows hold no bytes, so nothing in a file bounds their count; every
 * reader and writer refuses more, so per-row work stays a few MiB.
 */
#define SCAR_ZERO_WIDTH_ROWS_MAX ((uint64_t)1 << 20)

/* Values are stored in checkpoint files: never renumber. */
enum scar_dtype {
	SCAR_F32 = 1,
	SCAR_F64 = 2,
	SCAR_I32 = 3,
	SCAR_U32 = 4,
	SCAR_I64 = 5,
	SCAR_U64 = 6,
	SCAR_U8 = 7,
	SCAR_F16 = 8,	/* IEEE 754 binary16 (checkpoint format 1.2) */
	SCAR_BF16 = 9,	/* bfloat16: the top 16 bits of a binary32 (format 1.2) */
};

/*
 * What a tensor is to the fault-tolerance machinery. Parameters live on the
 * (simulated) parameter server, are sharded by row and are what a partial
 * failure loses; state is worker-side (data position, RNG, LDA assignments,
 * optimizer) and is only ever restored whole.
 */
enum scar_role {
	SCAR_ROLE_PARAM = 1,
	SCAR_ROLE_STATE = 2,
};

struct scar_tensor {
	char *name;
	enum scar_dtype dtype;
	enum scar_role role;
	int ndim;
	uint64_t shape[SCAR_MAX_DIMS];
	void *data;		/* rows * row_elems elements; NULL only while being built */
	/*
	 * Row presence for partial snapshots: NULL means every row is present;
	 * otherwise one byte per row, nonzero = present. Absent rows' data is
	 * unspecified (zero after reading a checkpoint).
	 */
	uint8_t *present;
};

/* "f32", "f64", ..., "f16", "bf16"; NULL for an unknown value. */
const char *scar_dtype_name(enum scar_dtype t);
/* Parse a dtype name; returns the dtype or 0 when unknown. */
enum scar_dtype scar_dtype_parse(const char *name);
/* Bytes per element, 0 for an unknown dtype. */
size_t scar_dtype_size(enum scar_dtype t);
/* "param" or "state"; NULL for an unknown value. */
const char *scar_role_name(enum scar_role r);
enum scar_role scar_role_parse(const char *name);

/*
 * The 16-bit float formats (IEEE binary16 and bfloat16) that .npy and
 * safetensors files may store and that quantization rounds through:
 * round to nearest even; NaN stays NaN, overflow goes to infinity.
 */
uint16_t scar_f32_to_f16(float f);
float scar_f16_to_f32(uint16_t h);
uint16_t scar_f32_to_bf16(float f);
float scar_bf16_to_f32(uint16_t h);
/*
 * A double rounded once to binary16 or bfloat16, to nearest even (not
 * through a float, which could round twice); the same NaN and overflow
 * rules. scar_tensor_set stores f16 and bf16 elements with these.
 */
uint16_t scar_f64_to_f16(double v);
uint16_t scar_f64_to_bf16(double v);
/* Nonzero for the floating-point dtypes: f32, f64, f16 and bf16. */
int scar_dtype_is_float(enum scar_dtype t);

/*
 * Allocate a zero-filled tensor. Fails with SCAR_EINVAL on a bad dtype, ndim
 * (0..SCAR_MAX_DIMS), empty or over-long name; SCAR_ERANGE on a size that
 * overflows or more than SCAR_ZERO_WIDTH_ROWS_MAX rows of zero bytes.
 * On success *out owns a new tensor.
 */
int scar_tensor_new(struct scar_tensor **out, const char *name,
		    enum scar_dtype dtype, enum scar_role role, int ndim,
		    const uint64_t *shape, struct scar_error *err);
void scar_tensor_free(struct scar_tensor *t);
/* Deep copy, including the present map. */
int scar_tensor_clone(struct scar_tensor **out, const struct scar_tensor *t,
		      struct scar_error *err);

uint64_t scar_tensor_rows(const struct scar_tensor *t);	/* shape[0], 1 for ndim 0 */
uint64_t scar_tensor_row_elems(const struct scar_tensor *t);	/* product of shape[1..] */
uint64_t scar_tensor_elems(const struct scar_tensor *t);
size_t scar_tensor_row_bytes(const struct scar_tensor *t);
size_t scar_tensor_bytes(const struct scar_tensor *t);
/* Pointer to row r (no bounds check beyond an assert). */
void *scar_tensor_row(const struct scar_tensor *t, uint64_t r);
/* Nonzero when row r is present (always, when present is NULL). */
int scar_tensor_has_row(const struct scar_tensor *t, uint64_t r);
/* Number of present rows. */
uint64_t scar_tensor_rows_present(const struct scar_tensor *t);
/* Allocate the present map with every row marked absent (0) or present (1). */
int scar_tensor_init_present(struct scar_tensor *t, int value, struct scar_error *err);
/* Nonzero when shape and dtype of a and b agree. */
int scar_tensor_same_layout(const struct scar_tensor *a, const struct scar_tensor *b);
/* Element i (row-major) converted to double, for any dtype. */
double scar_tensor_get(const struct scar_tensor *t, uint64_t i);
/* Store v at element i, converting (rounding to nearest for integers, saturating). */
void scar_tensor_set(struct scar_tensor *t, uint64_t i, double v);

/*
 * The complete training state: what a checkpoint holds and what resuming
 * restores. model is a workload name ("mlr", ...) or "" for a generic
 * snapshot; config is a JSON object (never NULL once built); shards is the
 * number of parameter shards the rows of every SCAR_ROLE_PARAM tensor are
 * split into (see scar/shard.h).
 */
struct scar_state {
	char model[SCAR_NAME_MAX];
	json_t *config;		/* owned reference */
	uint64_t iteration;
	uint32_t shards;
	size_t ntensors;
	struct scar_tensor **tensors;	/* owned, ntensors of them */
	/*
	 * Free-form JSON object of extra metadata carried through checkpoints
	 * (e.g. which partial checkpoints were applied); owned, never NULL.
	 */
	json_t *extra;
	/*
	 * Private to tensor.c: a name index that keeps scar_state_add and
	 * scar_state_find O(1), trusted only while tensors and ntensors are
	 * those it was built for (a copied or hand-built state falls back to
	 * a linear search). Zero in a hand-built state.
	 */
	struct {
		void *idx;
		const void *of;
		size_t n;
	} index_;
};

/* A new empty state (no tensors, config {}, extra {}, shards 1). */
int scar_state_new(struct scar_state **out, const char *model, struct scar_error *err);
void scar_state_free(struct scar_state *s);
/* Append t; the state takes ownership (also on failure, when t is freed). Names must be unique. */
int scar_state_add(struct scar_state *s, struct scar_tensor *t, struct scar_error *err);
/* Tensor by name, or NULL. */
struct scar_tensor *scar_state_find(const struct scar_state *s, const char *name);
/* Deep copy. */
int scar_state_clone(struct scar_state **out, const struct scar_state *s, struct scar_error *err);
/* Total bytes of tensors with the given role (0 = all roles). */
uint64_t scar_state_bytes(const struct scar_state *s, int role);

#ifdef __cplusplus
}
#endif
#endif
