/*
 * model_mlr.c - multinomial (softmax) logistic regression by minibatch SGD.
 *
 * One iteration is one epoch: the data order (state "order") is a
 * permutation that is a function of (seed, iteration) alone, a keyed draw
 * (scar/rng.h, mu_keyed_order), so a perturbed run and its reference visit
 * the examples in the same order; the examples are taken in consecutive minibatches
 * of `batch` (the last one may be smaller). For a minibatch B, with every
 * softmax output computed from the weights at the start of the minibatch,
 *     W <- W - lr_e (l2 W + (1/|B|) sum_{i in B} x_i (p_i - e_{y_i})^T)
 * where x_i is extended by a constant 1 for the bias row, which has no
 * L2 penalty. The learning rate of epoch e (counted from 0) is
 *     lr_e = lr / (1 + lr_decay * e).
 *
 * Objective: mean training cross-entropy, without the penalty
 * ("cross_entropy"). Held out: accuracy on the test set ("test_accuracy").
 *
 * State: param "weights" f32 [d + 1, classes], one row per feature and a
 * last row of biases; state "rng" u64 [6] (the seeded generator state of
 * earlier versions, which shuffled the order from it; kept, never advanced,
 * so checkpoints keep their layout), "order" u32 [n] (the data order of the
 * last epoch), "epoch" u64 [1].
 *
 * Configuration keys: mlr_keys below (scar-train --list-keys mlr). Notes:
 *   data          a directory holding the IDX files train-images-idx3-ubyte,
 *                 train-labels-idx1-ubyte, t10k-images-idx3-ubyte,
 *                 t10k-labels-idx1-ubyte (each optionally .gz; Fashion-MNIST,
 *                 MNIST), or a LIBSVM file
 *   test_data     class ids come from the training file alone (its distinct
 *                 labels, sorted); the test file may lack some of them, and
 *                 a test label the training file does not have is refused
 *                 (file:line): the model has no class for it, and the
 *                 weights' shape must not depend on the test file
 *   d             with a LIBSVM file, the feature count (default: its
 *                 largest index), and an index above d in the training or
 *                 test file is refused (file:line); not for IDX data
 * With real data, n, n_test, classes and sep are refused and get no
 * default, so the configuration holds nothing that is not in effect; the
 * sizes taken from the data are in the header event's "effective".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <limits.h>

#include "scar/data.h"
#include "scar/dist.h"
#include "scar/model.h"
#include "model_util.h"
#include "rewind.h"
#include "transport.h"

#define MLR_SPLIT_STREAM 31	/* the held-out split's draws (by data_seed) */

typedef float v8f __attribute__((vector_size(32)));
typedef float v8fu __attribute__((vector_size(32), aligned(4)));

struct scar_model {
	struct scar_dense *train, *test;	/* test may be NULL */
	int test_view;		/* test points into train's arrays (synthetic split) */
	uint64_t n, ntest, d;
	uint32_t classes;
	uint64_t batch;
	double lr, lr_decay, l2, init_scale;
	size_t ld;		/* padded row length of the class-major working copy */
	float *wt;		/* classes x ld (d weights; bias apart) */
	float *bias;		/* classes */
	float *delta;		/* batch x classes */
	float *sdelta;		/* batch x classes, delta times the step */
	const float **xs;	/* batch rows of the minibatch */
};

/* In the order configure() adds the defaults: the header's order of keys. */
static const struct scar_model_key mlr_keys[] = {
	MU_SEEDS("the data orders (keyed by seed and epoch) and the initial weights",
		 "the synthetic data set and the held-out split"),
	MU_PATH("data", "an IDX directory or a LIBSVM file; absent: synthetic Gaussian classes"),
	MU_PATH("train_images", "IDX training images, named one by one (instead of data)"),
	MU_PATH("train_labels", "IDX training labels (with train_images)"),
	MU_PATH("test_images", "IDX test images (with test_labels)"),
	MU_PATH("test_labels", "IDX test labels (with test_images)"),
	MU_PATH("test_data", "the LIBSVM test file, when data is a LIBSVM file"),
	MU_REAL("test_frac", 0.1, 1e-6, 0.9, "without a test file, the fraction held out for the test set"),
	MU_INT("batch", 128, 1, 1 << 20, "minibatch size"),
	MU_REAL("lr", 0.2, 0, 1e6, "initial learning rate"),
	MU_REAL("lr_decay", 0.3, 0, 1e6, "learning-rate decay per epoch: lr / (1 + lr_decay epoch)"),
	MU_REAL("l2", 1e-4, 0, 1e6, "L2 penalty on the weights (not the biases)"),
	MU_REAL("init_scale", 0, 0, 1e6, "initial weights ~ N(0, init_scale^2); 0: zeros"),
	MU_SYNTH_INT("n", 5000, 1, INT32_MAX, "synthetic training examples"),
	MU_SYNTH_INT("n_test", 1000, 0, INT32_MAX, "synthetic test examples"),
	{ .name = "d", .type = SCAR_KEY_INT, .flags = SCAR_KEY_SYNTH_DEFAULT, .int_def = 20,
	  .int_min = 1, .int_max = 1 << 20,
	  .help = "synthetic features; with a LIBSVM file, the feature count (default: its largest index)" },
	MU_SYNTH_INT("classes", 5, 2, 1 << 16, "synthetic classes"),
	MU_SYNTH_REAL("sep", 1.0, 0, 1e6, "synthetic class-mean spread: means ~ N(0, sep^2 I)"),
	MU_END
};

static int mlr_configure(json_t *cfg, struct scar_error *err)
{
	int rc, real = json_object_get(cfg, "data") || json_object_get(cfg, "train_images") ||
		json_object_get(cfg, "train_labels");

	if ((rc = mu_cfg_apply(cfg, mlr_keys, real, "mlr", err)))
		return rc;
	if (!real && json_object_get(cfg, "test_data"))
		return scar_error_set(err, SCAR_EINVAL, "mlr: 'test_data' goes with a LIBSVM 'data' file");
	if (!!json_object_get(cfg, "train_images") != !!json_object_get(cfg, "train_labels") ||
	    !!json_object_get(cfg, "test_images") != !!json_object_get(cfg, "test_labels"))
		return scar_error_set(err, SCAR_EINVAL,
				      "mlr: IDX images and labels must be given together");
	if (json_object_get(cfg, "train_images") && json_object_get(cfg, "data"))
		return scar_error_set(err, SCAR_EINVAL,
				      "mlr: give either 'data' or 'train_images', not both");
	return 0;
}

static void mlr_free(struct scar_model *m)
{
	if (!m)
		return;
	if (m->test_view)
		free(m->test);
	else
		scar_dense_free(m->test);
	scar_dense_free(m->train);
	free(m->wt);
	free(m->bias);
	free(m->delta);
	free(m->sdelta);
	free(m->xs);
	free(m);
}

/* dir/name.gz when it is readable, else dir/name (whose absence the reader reports); NULL: no memory. */
static char *idx_path(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 8;
	char *p = malloc(n);

	if (!p)
		return NULL;
	snprintf(p, n, "%s/%s.gz", dir, name);
	if (access(p, R_OK) == 0)
		return p;
	snprintf(p, n, "%s/%s", dir, name);
	return p;
}

static int load_idx_dir(struct scar_model *m, const char *dir, struct scar_error *err)
{
	char *ti = idx_path(dir, "train-images-idx3-ubyte");
	char *tl = idx_path(dir, "train-labels-idx1-ubyte");
	char *si = idx_path(dir, "t10k-images-idx3-ubyte");
	char *sl = idx_path(dir, "t10k-labels-idx1-ubyte");
	int rc;

	if (!ti || !tl || !si || !sl)
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
	else if (!(rc = scar_idx_load(ti, tl, &m->train, err)))
		rc = scar_idx_load(si, sl, &m->test, err);
	free(ti);
	free(tl);
	free(si);
	free(sl);
	return rc;
}

/* data names a file (LIBSVM), not a directory of IDX files. */
static int data_is_libsvm(const json_t *cfg)
{
	const char *data = mu_get_str(cfg, "data");
	struct stat sb;

	return data && !(stat(data, &sb) == 0 && S_ISDIR(sb.st_mode));
}

static int load_data(struct scar_model *m, const json_t *cfg, struct scar_error *err)
{
	const char *data = mu_get_str(cfg, "data");
	/* d names the LIBSVM feature count; the IDX files fix theirs. */
	uint64_t dim = json_object_get(cfg, "d") ? (uint64_t)mu_get_int(cfg, "d") : 0;
	int rc;

	if ((mu_get_str(cfg, "train_images") || data) && dim && !data_is_libsvm(cfg))
		return scar_error_set(err, SCAR_EINVAL,
				      "mlr: key 'd' sets the feature count of LIBSVM data; IDX files fix their own");
	if (mu_get_str(cfg, "train_images")) {
		rc = scar_idx_load(mu_get_str(cfg, "train_images"), mu_get_str(cfg, "train_labels"),
				   &m->train, err);
		if (!rc && mu_get_str(cfg, "test_images"))
			rc = scar_idx_load(mu_get_str(cfg, "test_images"),
					   mu_get_str(cfg, "test_labels"), &m->test, err);
		return rc;
	}
	if (data) {
		struct stat sb;

		if (stat(data, &sb) == 0 && S_ISDIR(sb.st_mode)) {
			if (mu_get_str(cfg, "test_data"))
				return scar_error_set(err, SCAR_EINVAL,
						      "mlr: 'test_data' goes with a LIBSVM 'data' file, not a directory");
			return load_idx_dir(m, data, err);
		}
		rc = scar_libsvm_load(data, dim, 1, &m->train, err);
		/* The training file's classes, and its feature count unless d gives one. */
		if (!rc && mu_get_str(cfg, "test_data"))
			rc = scar_libsvm_load_like(mu_get_str(cfg, "test_data"), m->train->d, m->train,
						   &m->test, err);
		return rc;
	}
	{
		uint64_t n = (uint64_t)mu_get_int(cfg, "n"), nt = (uint64_t)mu_get_int(cfg, "n_test");
		struct scar_dense *all;

		/* One draw of train + test so both share the class means; then split. */
		rc = scar_synth_classification(n + nt, (uint64_t)mu_get_int(cfg, "d"),
					       (uint32_t)mu_get_int(cfg, "classes"),
					       mu_get_real(cfg, "sep"),
					       (uint64_t)mu_get_int(cfg, "data_seed"), &all, err);
		if (rc)
			return rc;
		m->train = all;
		if (nt) {
			/* The test set views the tail of the same arrays; freed with train. */
			m->test = calloc(1, sizeof(*m->test));
			if (!m->test)
				return scar_error_set(err, SCAR_ENOMEM, "out of memory");
			*m->test = *all;
			m->test->n = nt;
			m->test->x = all->x + n * all->d;
			m->test->label = all->label + n;
			m->test_view = 1;
			all->n = n;
			m->ntest = nt;
			m->train = all;
		}
	}
	return 0;
}

/*
 * Move a seeded fraction of train's examples into a new test set (kept in
 * order); train is compacted in place.
 */
static int split_test(struct scar_model *m, double frac, uint64_t seed, struct scar_error *err)
{
	struct scar_dense *tr = m->train, *te = calloc(1, sizeof(*te));
	struct scar_rng r;
	uint64_t nt = 0, a = 0, b = 0, d = tr->d;
	uint8_t *held = malloc(tr->n ? tr->n : 1);

	if (!te || !held)
		goto oom;
	scar_rng_seed_stream(&r, seed, MLR_SPLIT_STREAM);
	for (uint64_t i = 0; i < tr->n; i++)
		nt += held[i] = scar_rng_uniform(&r) < frac;
	if (!nt || nt == tr->n) {
		free(te);
		free(held);
		return scar_error_set(err, SCAR_EINVAL, "mlr: %llu examples are too few to hold %g out",
				      (unsigned long long)tr->n, frac);
	}
	te->n = nt;
	te->d = d;
	te->classes = tr->classes;
	if (!(te->x = malloc(nt * d * sizeof(float))) || !(te->label = malloc(nt * sizeof(uint32_t))))
		goto oom;
	for (uint64_t i = 0; i < tr->n; i++) {
		if (held[i]) {
			memcpy(te->x + b * d, tr->x + i * d, d * sizeof(float));
			te->label[b++] = tr->label[i];
		} else {
			memmove(tr->x + a * d, tr->x + i * d, d * sizeof(float));
			tr->label[a++] = tr->label[i];
		}
	}
	tr->n = a;
	m->test = te;
	free(held);
	return 0;
oom:
	free(held);
	scar_dense_free(te);
	return scar_error_set(err, SCAR_ENOMEM, "out of memory");
}

static int mlr_create(struct scar_model **out, const json_t *cfg, struct scar_error *err)
{
	struct scar_model *m = calloc(1, sizeof(*m));
	int rc;

	*out = NULL;
	if (!m)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	rc = load_data(m, cfg, err);
	if (rc)
		goto fail;
	if (!m->train->label || m->train->classes < 2) {
		rc = scar_error_set(err, SCAR_EINVAL, "mlr: training data needs labels of 2 classes or more");
		goto fail;
	}
	if (!m->test && (rc = split_test(m, mu_get_real(cfg, "test_frac"),
					 (uint64_t)mu_get_int(cfg, "data_seed"), err)))
		goto fail;
	m->n = m->train->n;
	m->d = m->train->d;
	m->classes = m->train->classes;
	if (m->test) {
		if (m->test->d != m->d || !m->test->label) {
			rc = scar_error_set(err, SCAR_EMISMATCH,
					    "mlr: test data has %llu features, training data %llu",
					    (unsigned long long)m->test->d, (unsigned long long)m->d);
			goto fail;
		}
		if (m->test->classes > m->classes)
			m->classes = m->test->classes;
		m->ntest = m->test->n;
	}
	m->batch = (uint64_t)mu_get_int(cfg, "batch");
	if (m->batch > m->n)
		m->batch = m->n;
	m->lr = mu_get_real(cfg, "lr");
	m->lr_decay = mu_get_real(cfg, "lr_decay");
	m->l2 = mu_get_real(cfg, "l2");
	m->init_scale = mu_get_real(cfg, "init_scale");
	m->ld = (m->d + 7) & ~(size_t)7;
	m->wt = aligned_alloc(32, m->classes * m->ld * sizeof(float));
	m->bias = malloc(m->classes * sizeof(float));
	m->delta = malloc(m->batch * m->classes * sizeof(float));
	m->sdelta = malloc(m->batch * m->classes * sizeof(float));
	m->xs = malloc(m->batch * sizeof(*m->xs));
	if (!m->wt || !m->bias || !m->delta || !m->sdelta || !m->xs) {
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
		goto fail;
	}
	memset(m->wt, 0, m->classes * m->ld * sizeof(float));
	*out = m;
	return 0;
fail:
	mlr_free(m);
	return rc;
}

static int mlr_init_state(struct scar_model *m, struct scar_state *st, struct scar_error *err)
{
	struct scar_tensor *w, *order;
	uint64_t seed = mu_state_seed(st, 1);
	int rc;

	if ((rc = mu_add(st, "weights", SCAR_F32, SCAR_ROLE_PARAM, 2, m->d + 1, m->classes, &w, err)) ||
	    (rc = mu_rng_add(st, seed, 1, err)) ||
	    (rc = mu_add(st, "order", SCAR_U32, SCAR_ROLE_STATE, 1, m->n, 0, &order, err)) ||
	    (rc = mu_add(st, "epoch", SCAR_U64, SCAR_ROLE_STATE, 1, 1, 0, NULL, err)))
		return rc;
	for (uint64_t i = 0; i < m->n; i++)
		((uint32_t *)order->data)[i] = (uint32_t)i;
	if (m->init_scale > 0) {
		struct scar_rng r;
		float *p = w->data;

		scar_rng_seed_stream(&r, seed, 2);
		for (uint64_t i = 0; i < m->d * m->classes; i++)
			p[i] = (float)(m->init_scale * scar_rng_normal(&r));
	}
	return 0;
}

/* weights [d + 1, classes] <-> the class-major working copy wt, bias. */
static void to_work(struct scar_model *m, const float *w)
{
	for (uint64_t j = 0; j < m->d; j++)
		for (uint32_t c = 0; c < m->classes; c++)
			m->wt[c * m->ld + j] = w[j * m->classes + c];
	memcpy(m->bias, w + m->d * m->classes, m->classes * sizeof(float));
}

static void from_work(const struct scar_model *m, float *w)
{
	for (uint64_t j = 0; j < m->d; j++)
		for (uint32_t c = 0; c < m->classes; c++)
			w[j * m->classes + c] = m->wt[c * m->ld + j];
	memcpy(w + m->d * m->classes, m->bias, m->classes * sizeof(float));
}

static inline float hsum(const v8f *pv)
{
	v8f v = *pv;

	return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));
}

/*
 * The kernels are compiled twice (AVX2 and baseline) and picked at load
 * time. Both do the same lane-wise float operations in the same order, and
 * ISO C mode keeps the compiler from fusing multiply-adds, so the result is
 * bit-identical whichever runs.
 */
/* Not under TSan: its runtime is not up when the loader runs the ifunc resolver. */
#if !defined(KERNEL) && defined(__x86_64__) && defined(__GNUC__) && defined(__has_attribute) && \
	!defined(__SANITIZE_THREAD__)
#if __has_attribute(target_clones)
#define KERNEL __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef KERNEL
#define KERNEL
#endif

/* Softmax of logits in place; returns log of the normaliser relative to the max. */
static float softmax(float *p, uint32_t k, float *mx_out)
{
	float mx = p[0], s = 0;

	for (uint32_t c = 1; c < k; c++)
		if (p[c] > mx)
			mx = p[c];
	for (uint32_t c = 0; c < k; c++)
		s += (p[c] = expf(p[c] - mx));
	for (uint32_t c = 0; c < k; c++)
		p[c] /= s;
	*mx_out = mx;
	return s;
}

/* Classes per register block of the kernels. */
#define CB 5

/* x . w over d features: 8-lane partial sums in order, then the lanes, then the tail. */
static inline __attribute__((always_inline)) float dot1(const float *x, const float *w,
							 uint64_t d)
{
	uint64_t d8 = d & ~(uint64_t)7, j;
	v8f a = { 0 };
	float s;

	for (j = 0; j < d8; j += 8)
		a += *(const v8fu *)(x + j) * *(const v8f *)(w + j);
	s = hsum(&a);
	for (; j < d; j++)
		s += x[j] * w[j];
	return s;
}

/*
 * out[i * k + c] = bias[c] + xs[i] . wt[c] for cnt rows. Pairs of rows
 * against blocks of CB classes keep 10 accumulators in registers; the rest
 * goes through dot1, which does the very same operations, so a logit does
 * not depend on which path computed it.
 */
KERNEL
static void logits(const struct scar_model *m, const float *const *xs, uint64_t cnt, float *out)
{
	uint64_t d = m->d, d8 = d & ~(uint64_t)7;
	uint32_t k = m->classes;

	for (uint32_t c0 = 0; c0 < k; c0 += CB) {
		uint32_t cn = k - c0 < CB ? k - c0 : CB;
		uint64_t i = 0;

		if (cn == CB)
			for (; i + 2 <= cnt; i += 2) {
				const float *x = xs[i], *y = xs[i + 1];
				const float *w0 = m->wt + c0 * m->ld, *w1 = w0 + m->ld, *w2 = w1 + m->ld;
				const float *w3 = w2 + m->ld, *w4 = w3 + m->ld;
				v8f a0 = { 0 }, a1 = { 0 }, a2 = { 0 }, a3 = { 0 }, a4 = { 0 };
				v8f b0 = { 0 }, b1 = { 0 }, b2 = { 0 }, b3 = { 0 }, b4 = { 0 };
				const float *wr[CB] = { w0, w1, w2, w3, w4 };
				v8f *ar[CB] = { &a0, &a1, &a2, &a3, &a4 }, *br[CB] = { &b0, &b1, &b2, &b3, &b4 };

				/*
				 * Rows come in shuffled order, so the hardware
				 * prefetcher cannot guess the next pair: fetch it
				 * line by line while this pair is computed.
				 */
				const float *nx = i + 2 < cnt ? xs[i + 2] : x;
				const float *ny = i + 3 < cnt ? xs[i + 3] : y;

				for (uint64_t j = 0; j < d8; j += 8) {
					v8f xv = *(const v8fu *)(x + j), yv = *(const v8fu *)(y + j), wv;

					if (c0 == 0 && (j & 15) == 0) {
						__builtin_prefetch(nx + j);
						__builtin_prefetch(ny + j);
					}

					wv = *(const v8f *)(w0 + j);
					a0 += xv * wv;
					b0 += yv * wv;
					wv = *(const v8f *)(w1 + j);
					a1 += xv * wv;
					b1 += yv * wv;
					wv = *(const v8f *)(w2 + j);
					a2 += xv * wv;
					b2 += yv * wv;
					wv = *(const v8f *)(w3 + j);
					a3 += xv * wv;
					b3 += yv * wv;
					wv = *(const v8f *)(w4 + j);
					a4 += xv * wv;
					b4 += yv * wv;
				}
				for (uint32_t c = 0; c < CB; c++) {
					float sx = hsum(ar[c]), sy = hsum(br[c]);

					for (uint64_t j = d8; j < d; j++) {
						sx += x[j] * wr[c][j];
						sy += y[j] * wr[c][j];
					}
					out[i * k + c0 + c] = sx + m->bias[c0 + c];
					out[(i + 1) * k + c0 + c] = sy + m->bias[c0 + c];
				}
			}
		for (; i < cnt; i++)
			for (uint32_t c = c0; c < c0 + cn; c++)
				out[i * k + c] = dot1(xs[i], m->wt + c * m->ld, d) + m->bias[c];
	}
}

/*
 * Logits of cnt rows (idx[i] of ds, or first + i when idx is NULL) into
 * delta, turned into softmax outputs minus the one-hot labels; returns the
 * summed cross-entropy and sets *right to the correct argmax predictions.
 */
static double batch_forward(struct scar_model *m, const struct scar_dense *ds,
			    const uint32_t *idx, uint64_t first, uint64_t cnt, float *delta,
			    uint64_t *right)
{
	uint32_t k = m->classes;
	double loss = 0;
	uint64_t ok = 0;

	for (uint64_t i = 0; i < cnt; i++)
		m->xs[i] = ds->x + (idx ? idx[i] : first + i) * ds->d;
	logits(m, m->xs, cnt, delta);
	for (uint64_t i = 0; i < cnt; i++) {
		uint64_t ex = idx ? idx[i] : first + i;
		uint32_t y = ds->label[ex], best = 0;
		float *p = delta + i * k, mx, s;

		for (uint32_t c = 1; c < k; c++)
			if (p[c] > p[best])
				best = c;
		ok += best == y;
		if (y < k) {
			float ly = p[y];

			s = softmax(p, k, &mx);
			loss += (double)mx + log((double)s) - (double)ly;
			p[y] -= 1;
		} else {
			softmax(p, k, &mx);
		}
	}
	*right = ok;
	return loss;
}

/*
 * W <- decay W (non-bias rows), then W += scale * sum_i x_i delta_i^T, the
 * examples added in order. Blocks of CB classes x 16 features stay in
 * registers for the whole minibatch, so W is loaded and stored once per
 * minibatch rather than once per example; every element still sees the
 * same additions in the same order.
 */
KERNEL
static void batch_update(struct scar_model *m, const uint32_t *idx, uint64_t cnt,
			 const float *delta, float scale, float decay)
{
	uint64_t d = m->d, d16 = d & ~(uint64_t)15, d8 = d & ~(uint64_t)7;
	uint32_t k = m->classes;
	float *sd = m->sdelta;
	const float **xs = m->xs;

	for (uint64_t i = 0; i < cnt; i++) {
		xs[i] = m->train->x + idx[i] * d;
		for (uint32_t c = 0; c < k; c++)
			sd[i * k + c] = scale * delta[i * k + c];
	}
	if (decay != 1)
		for (uint32_t c = 0; c < k; c++) {
			v8f dv = { decay, decay, decay, decay, decay, decay, decay, decay };
			float *wc = m->wt + c * m->ld;

			for (uint64_t j = 0; j < m->ld; j += 8)
				*(v8f *)(wc + j) *= dv;
		}
	for (uint32_t c0 = 0; c0 < k; c0 += CB) {
		uint32_t cn = k - c0 < CB ? k - c0 : CB;
		uint64_t jdone = 0;

		if (cn == CB) {
			for (uint64_t j = 0; j < d16; j += 16) {
				float *w0 = m->wt + c0 * m->ld + j, *w1 = w0 + m->ld, *w2 = w1 + m->ld;
				float *w3 = w2 + m->ld, *w4 = w3 + m->ld;
				v8f a0 = *(v8f *)w0, b0 = *(v8f *)(w0 + 8);
				v8f a1 = *(v8f *)w1, b1 = *(v8f *)(w1 + 8);
				v8f a2 = *(v8f *)w2, b2 = *(v8f *)(w2 + 8);
				v8f a3 = *(v8f *)w3, b3 = *(v8f *)(w3 + 8);
				v8f a4 = *(v8f *)w4, b4 = *(v8f *)(w4 + 8);

				for (uint64_t i = 0; i < cnt; i++) {
					v8f x0 = *(const v8fu *)(xs[i] + j);
					v8f x1 = *(const v8fu *)(xs[i] + j + 8);
					const float *si = sd + i * k + c0;
					v8f sv;

#define UPD(a, b, c) (sv = (v8f){ si[c], si[c], si[c], si[c], si[c], si[c], si[c], si[c] }, \
		      a += sv * x0, b += sv * x1)
					UPD(a0, b0, 0);
					UPD(a1, b1, 1);
					UPD(a2, b2, 2);
					UPD(a3, b3, 3);
					UPD(a4, b4, 4);
#undef UPD
				}
				*(v8f *)w0 = a0;
				*(v8f *)(w0 + 8) = b0;
				*(v8f *)w1 = a1;
				*(v8f *)(w1 + 8) = b1;
				*(v8f *)w2 = a2;
				*(v8f *)(w2 + 8) = b2;
				*(v8f *)w3 = a3;
				*(v8f *)(w3 + 8) = b3;
				*(v8f *)w4 = a4;
				*(v8f *)(w4 + 8) = b4;
			}
			jdone = d16;
		}
		/* The rest of the features (or of the classes), example by example. */
		for (uint64_t i = 0; i < cnt; i++) {
			const float *x = xs[i];

			for (uint32_t c = c0; c < c0 + cn; c++) {
				float sc = sd[i * k + c];
				v8f sv = { sc, sc, sc, sc, sc, sc, sc, sc };
				float *wc = m->wt + c * m->ld;
				uint64_t j = jdone;

				for (; j < d8; j += 8)
					*(v8f *)(wc + j) += sv * *(const v8fu *)(x + j);
				for (; j < d; j++)
					wc[j] += sc * x[j];
			}
		}
	}
	for (uint64_t i = 0; i < cnt; i++)
		for (uint32_t c = 0; c < k; c++)
			m->bias[c] += sd[i * k + c];
}

/* The learning rate of an epoch and the weight decay it gives (both steps' one schedule). */
static void mlr_rate(const struct scar_model *m, uint64_t epoch, float *lr, float *decay)
{
	*lr = (float)(m->lr / (1 + m->lr_decay * (double)epoch));
	*decay = (float)(1 - (double)*lr * m->l2);
}

/*
 * Recovery "rewind" (scar(7)): a row restored from an older saved value
 * steps at its own count of updates, behind the epoch (lib/rewind.h). Its
 * update over a minibatch, from its value r before it (classes floats), is
 * the model's with lr_j for lr: r <- decay_j r (not the bias row), then
 * r += (sd_i ratio_j) x_ij example by example, sd being the minibatch's
 * scaled deltas (scale -lr / |B|) and ratio_j = lr_j / lr. The one-process
 * and the distributed step both call it, so both give the same bits.
 */
struct rewind_rate {
	uint64_t row;
	float ratio, decay;
};

static int rewind_rates(const struct scar_model *m, const struct scar_state *st, float lr,
			struct rewind_rate **out, size_t *n, struct scar_error *err)
{
	struct scar_rewind_row *rw;
	int rc = scar_rewind_rows(st, "weights", m->d + 1, st->iteration, &rw, n, err);

	*out = NULL;
	if (rc || !*n) {
		free(rw);
		return rc;
	}
	*out = malloc(*n * sizeof(**out));
	if (!*out) {
		free(rw);
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	}
	for (size_t a = 0; a < *n; a++) {
		float lrj, decay;

		mlr_rate(m, rw[a].clock, &lrj, &decay);
		(*out)[a].row = rw[a].row;
		(*out)[a].ratio = lr > 0 ? lrj / lr : 1;
		(*out)[a].decay = decay;
	}
	free(rw);
	return 0;
}

static void rewind_row(const struct scar_model *m, const struct rewind_rate *rr, float *r,
		       const uint32_t *idx, uint64_t cnt, const float *sd)
{
	uint64_t j = rr->row, d = m->d;
	uint32_t k = m->classes;

	if (j < d)
		for (uint32_t c = 0; c < k; c++)
			r[c] *= rr->decay;
	for (uint64_t i = 0; i < cnt; i++) {
		float xij = j < d ? m->train->x[idx[i] * d + j] : 1;

		for (uint32_t c = 0; c < k; c++)
			r[c] += (sd[i * k + c] * rr->ratio) * xij;
	}
}

static int mlr_step(struct scar_model *m, struct scar_state *st, struct scar_error *err)
{
	struct scar_tensor *w, *ord, *ep;
	uint32_t *order;
	uint64_t epoch, d = m->d;
	uint32_t k = m->classes;
	float lr, decay, *old = NULL;
	struct rewind_rate *rr = NULL;
	size_t nrr = 0;
	int rc;

	if ((rc = mu_find(st, "weights", SCAR_F32, (d + 1) * k, &w, err)) ||
	    (rc = mu_find(st, "order", SCAR_U32, m->n, &ord, err)) ||
	    (rc = mu_find(st, "epoch", SCAR_U64, 1, &ep, err)))
		return rc;
	order = ord->data;
	epoch = *(uint64_t *)ep->data;
	mlr_rate(m, epoch, &lr, &decay);
	if ((rc = rewind_rates(m, st, lr, &rr, &nrr, err)))
		return rc;
	if (nrr && !(old = malloc(nrr * k * sizeof(*old)))) {
		free(rr);
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	}
	mu_keyed_order(order, m->n, mu_state_seed(st, 1), SCAR_MLR_ORDER_STREAM, st->iteration);
	to_work(m, w->data);
	for (uint64_t b0 = 0; b0 < m->n; b0 += m->batch) {
		uint64_t bs = m->n - b0 < m->batch ? m->n - b0 : m->batch, right;

		/* The rewinding rows as they were: the kernel updates every row. */
		for (size_t a = 0; a < nrr; a++)
			for (uint32_t c = 0; c < k; c++)
				old[a * k + c] = rr[a].row < d ? m->wt[c * m->ld + rr[a].row] : m->bias[c];
		batch_forward(m, m->train, order + b0, 0, bs, m->delta, &right);
		batch_update(m, order + b0, bs, m->delta, -lr / (float)bs, decay);
		for (size_t a = 0; a < nrr; a++) {
			rewind_row(m, &rr[a], old + a * k, order + b0, bs, m->sdelta);
			for (uint32_t c = 0; c < k; c++)
				*(rr[a].row < d ? &m->wt[c * m->ld + rr[a].row] : &m->bias[c]) =
					old[a * k + c];
		}
	}
	free(rr);
	free(old);
	from_work(m, w->data);
	for (uint64_t i = 0; i < (d + 1) * k; i++)
		if (!isfinite(((float *)w->data)[i]))
			return scar_error_set(err, SCAR_EDIVERGED, "mlr: weights diverged (lower lr)");
	*(uint64_t *)ep->data = epoch + 1;
	return 0;
}

/* Mean cross-entropy (ce) and accuracy of the weights on a data set. */
static void evaluate(struct scar_model *m, const struct scar_dense *ds, double *ce, double *acc)
{
	uint64_t right = 0, r;
	double loss = 0;

	for (uint64_t i = 0; i < ds->n; i += m->batch) {
		uint64_t cnt = ds->n - i < m->batch ? ds->n - i : m->batch;

		loss += batch_forward(m, ds, NULL, i, cnt, m->delta, &r);
		right += r;
	}

	*ce = ds->n ? loss / (double)ds->n : 0;
	*acc = ds->n ? (double)right / (double)ds->n : 0;
}

static int mlr_objective(struct scar_model *m, const struct scar_state *st, double *out,
			 struct scar_error *err)
{
	struct scar_tensor *w;
	double acc;
	int rc = mu_find(st, "weights", SCAR_F32, (m->d + 1) * m->classes, &w, err);

	if (rc)
		return rc;
	to_work(m, w->data);
	evaluate(m, m->train, out, &acc);
	return 0;
}

static int mlr_heldout(struct scar_model *m, const struct scar_state *st, double *out,
		       struct scar_error *err)
{
	struct scar_tensor *w;
	double ce;
	int rc = mu_find(st, "weights", SCAR_F32, (m->d + 1) * m->classes, &w, err);

	if (rc)
		return rc;
	if (!m->test || !m->ntest)
		return scar_error_set(err, SCAR_EUNSUPPORTED, "mlr: no test set");
	to_work(m, w->data);
	evaluate(m, m->test, &ce, out);
	return 0;
}

/* Sizes from the data, the batch as clamped and the step-size schedule. */
static int mlr_effective(struct scar_model *m, json_t *out, struct scar_error *err)
{
	if (json_object_set_new(out, "n", json_integer((json_int_t)m->n)) ||
	    json_object_set_new(out, "n_test", json_integer((json_int_t)m->ntest)) ||
	    json_object_set_new(out, "d", json_integer((json_int_t)m->d)) ||
	    json_object_set_new(out, "classes", json_integer((json_int_t)m->classes)) ||
	    json_object_set_new(out, "batch", json_integer((json_int_t)m->batch)) ||
	    json_object_set_new(out, "lr", json_real(m->lr)) ||
	    json_object_set_new(out, "lr_decay", json_real(m->lr_decay)) ||
	    json_object_set_new(out, "lr_schedule", json_string("lr / (1 + lr_decay * epoch)")) ||
	    json_object_set_new(out, "l2", json_real(m->l2)))
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	return 0;
}

/* ---- distributed (scar-mpi(7)) ---- */

/*
 * Minibatch SGD as mlr_step does it, every floating-point operation of
 * the one-process step in the same order, so the distributed run is
 * bit-identical to it. Every rank holds the model (the training set):
 *   - forward (data parallel): rank R computes the softmax deltas of its
 *     contiguous share of the minibatch (scar_dist_part_lo over the
 *     minibatch) by the model's batch_forward, scaled as batch_update
 *     scales them;
 *   - the scaled deltas of the whole minibatch are gathered to every rank
 *     (sufficient factors: batch x classes floats, not a gradient);
 *   - each owner applies the update to its weight rows, the examples in
 *     minibatch order (every element sees batch_update's additions in
 *     its order);
 *   - the updated rows are gathered to every worker for the next forward.
 * The objective is the rank-order sum of per-batch cross-entropies over
 * the training set in evaluate()'s batches.
 */
struct scar_dist_model {
	struct scar_model *m;
	struct scar_transport *tp;
	uint32_t S, k;
	float *sd;			/* batch x k: scaled softmax deltas of the minibatch */
	float *sbuf, *rbuf;
	int *bcnt, *bdispl;		/* per rank: its share of a minibatch or of batches */
	double *bloss;			/* per evaluation batch: summed cross-entropy */
	int *cnt, *displ;		/* per rank: owned weight rows, offsets; then x k */
	uint64_t *order;		/* weight rows grouped by owner, ascending within */
};

static void mlr_dist_free(struct scar_dist_model *t)
{
	if (!t)
		return;
	free(t->sd);
	free(t->sbuf);
	free(t->rbuf);
	free(t->bcnt);
	free(t->bdispl);
	free(t->bloss);
	free(t->cnt);
	free(t->displ);
	free(t->order);
	free(t);
}

static int mlr_dist_setup(struct scar_model *m, const json_t *config, struct scar_transport *tp,
			  uint32_t shards, struct scar_dist_model **out, struct scar_error *err)
{
	struct scar_dist_model *t = calloc(1, sizeof(*t));

	*out = t;
	if (!t)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	t->m = m;
	t->tp = tp;
	t->S = shards;
	return 0;
}

/* Buffers once the state (the same on every rank) is there. */
static int mlr_dist_bind(struct scar_dist_model *t, const struct scar_state *st,
			 struct scar_error *err)
{
	const struct scar_model *m = t->m;
	const struct scar_tensor *w = scar_state_find(st, "weights");
	uint32_t P = t->tp->P;
	uint64_t rows, nb = (m->n + m->batch - 1) / m->batch;
	size_t big;

	if (!w || w->dtype != SCAR_F32 || w->ndim != 2 || w->shape[0] != m->d + 1 ||
	    w->shape[1] != m->classes)
		return scar_error_set(err, SCAR_EMISMATCH, "mlr: unexpected state layout");
	t->k = m->classes;
	rows = m->d + 1;
	if (rows * t->k * P > INT_MAX || m->batch * t->k > INT_MAX)
		return scar_error_set(err, SCAR_EUNSUPPORTED, "mlr: too many weights for MPI");
	big = (rows > m->batch ? rows : m->batch) * t->k + P;
	t->sd = malloc(m->batch * t->k * sizeof(float) + sizeof(float) * t->k);
	t->bcnt = calloc(P, sizeof(int));
	t->bdispl = calloc(P, sizeof(int));
	t->bloss = malloc(2 * (nb + 1) * sizeof(double));
	t->sbuf = malloc(big * sizeof(float));
	t->rbuf = malloc(big * sizeof(float));
	t->cnt = calloc(2 * (size_t)P, sizeof(*t->cnt));
	t->displ = calloc(2 * (size_t)P, sizeof(*t->displ));
	t->order = malloc(rows * sizeof(*t->order));
	if (!t->sd || !t->bcnt || !t->bdispl || !t->bloss || !t->sbuf || !t->rbuf || !t->cnt ||
	    !t->displ || !t->order)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	return scar_tp_owned_rows(t->tp, t->S, rows, t->cnt, t->displ, t->order, err);
}

static int mlr_dist_objective(struct scar_dist_model *t, const struct scar_state *st,
			      double *out, struct scar_error *err)
{
	struct scar_model *m = t->m;
	uint32_t P = t->tp->P, R = t->tp->R;
	uint64_t nb = (m->n + m->batch - 1) / m->batch, right;
	uint64_t lo = scar_dist_part_lo(nb, R, P), hi = scar_dist_part_lo(nb, R + 1, P);
	double *mine = t->bloss + nb, loss = 0;

	to_work(m, scar_state_find(st, "weights")->data);
	for (uint64_t b = lo; b < hi; b++) {
		uint64_t first = b * m->batch, cnt = m->n - first < m->batch ? m->n - first : m->batch;

		mine[b - lo] = batch_forward(m, m->train, NULL, first, cnt, m->delta, &right);
	}
	for (uint32_t q = 0; q < P; q++) {
		t->bcnt[q] = (int)(scar_dist_part_lo(nb, q + 1, P) - scar_dist_part_lo(nb, q, P));
		t->bdispl[q] = (int)scar_dist_part_lo(nb, q, P);
	}
	scar_tp_allgatherv(t->tp, mine, t->bloss, t->bcnt, t->bdispl, sizeof(double));
	for (uint64_t b = 0; b < nb; b++)
		loss += t->bloss[b];
	*out = loss / (double)m->n;
	return 0;
}

static int mlr_dist_step(struct scar_dist_model *t, struct scar_state *st, struct scar_error *err)
{
	struct scar_model *m = t->m;
	struct scar_tensor *wt, *ord, *ep;
	uint32_t P = t->tp->P, R = t->tp->R, k = t->k, *order;
	uint64_t epoch, d = m->d, right;
	float lr, decay, *w;
	int own = t->cnt[R], *rc2 = t->cnt + P, *rd2 = t->displ + P, rc;
	struct rewind_rate *rr = NULL;
	uint8_t *mine = NULL;	/* per row: rewinding */
	size_t nrr = 0;

	if ((rc = mu_find(st, "weights", SCAR_F32, (d + 1) * k, &wt, err)) ||
	    (rc = mu_find(st, "order", SCAR_U32, m->n, &ord, err)) ||
	    (rc = mu_find(st, "epoch", SCAR_U64, 1, &ep, err)))
		return rc;
	w = wt->data;
	order = ord->data;
	epoch = *(uint64_t *)ep->data;
	mlr_rate(m, epoch, &lr, &decay);
	/* Recovery "rewind": its rows (owned here) get rewind_row, not the loop below. */
	if ((rc = rewind_rates(m, st, lr, &rr, &nrr, err)))
		return rc;
	if (nrr && !(mine = calloc(d + 1, 1))) {
		free(rr);
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	}
	for (size_t a = 0; a < nrr; a++)
		mine[rr[a].row] = 1;
	mu_keyed_order(order, m->n, mu_state_seed(st, 1), SCAR_MLR_ORDER_STREAM, st->iteration);
	for (uint32_t q = 0; q < P; q++) {
		rc2[q] = t->cnt[q] * (int)k;
		rd2[q] = t->displ[q] * (int)k;
	}
	for (uint64_t b0 = 0; b0 < m->n; b0 += m->batch) {
		uint64_t bs = m->n - b0 < m->batch ? m->n - b0 : m->batch;
		uint64_t lo = scar_dist_part_lo(bs, R, P), hi = scar_dist_part_lo(bs, R + 1, P);
		float scale = -lr / (float)bs;

		to_work(m, w);
		if (hi > lo)
			batch_forward(m, m->train, order + b0 + lo, 0, hi - lo, m->delta, &right);
		for (uint64_t i = 0; i < (hi - lo) * k; i++)
			t->sbuf[i] = scale * m->delta[i];
		for (uint32_t q = 0; q < P; q++) {
			t->bcnt[q] = (int)((scar_dist_part_lo(bs, q + 1, P) - scar_dist_part_lo(bs, q, P)) * k);
			t->bdispl[q] = (int)(scar_dist_part_lo(bs, q, P) * k);
		}
		scar_tp_allgatherv(t->tp, t->sbuf, t->sd, t->bcnt, t->bdispl, sizeof(float));
		/*
		 * Owners: W_j <- decay W_j (not the bias row), then W_j += sd_i x_ij
		 * example by example, so every element sees the model's additions
		 * in the model's order.
		 */
		if (decay != 1)
			for (int a = 0; a < own; a++) {
				uint64_t j = t->order[t->displ[R] + a];

				for (uint32_t c = 0; j < d && c < k && !(mine && mine[j]); c++)
					w[j * k + c] *= decay;
			}
		for (uint64_t i = 0; i < bs; i++) {
			const float *si = t->sd + i * k, *x = m->train->x + order[b0 + i] * d;

			for (int a = 0; a < own; a++) {
				uint64_t j = t->order[t->displ[R] + a];
				float *wj = w + j * k;

				if (mine && mine[j])
					continue;
				if (j < d) {
					float xij = x[j];

					for (uint32_t c = 0; c < k; c++)
						wj[c] += si[c] * xij;
				} else {
					for (uint32_t c = 0; c < k; c++)
						wj[c] += si[c];
				}
			}
		}
		for (size_t a = 0; a < nrr; a++)
			if (scar_dist_row_owner(rr[a].row, t->S, P) == R)
				rewind_row(m, &rr[a], w + rr[a].row * k, order + b0, bs, t->sd);
		for (int a = 0; a < own; a++)
			memcpy(t->sbuf + (size_t)a * k, w + t->order[t->displ[R] + a] * k,
			       k * sizeof(float));
		scar_tp_allgatherv(t->tp, t->sbuf, t->rbuf, rc2, rd2, sizeof(float));
		for (uint64_t a = 0; a <= d; a++)
			memcpy(w + t->order[a] * k, t->rbuf + a * k, k * sizeof(float));
	}
	free(rr);
	free(mine);
	for (uint64_t i = 0; i < (d + 1) * k; i++)
		if (!isfinite(w[i]))
			return scar_error_set(err, SCAR_EDIVERGED, "mlr: weights diverged (lower lr)");
	*(uint64_t *)ep->data = epoch + 1;
	return 0;
}

static const struct scar_model_dist mlr_dist = {
	.every_rank = 1,	/* the training set and the kernels on every rank */
	.setup = mlr_dist_setup,
	.bind = mlr_dist_bind,
	.step = mlr_dist_step,
	.objective = mlr_dist_objective,
	.free = mlr_dist_free,
};

const struct scar_model_def scar_model_mlr = {
	.name = "mlr",
	.summary = "multinomial logistic regression by minibatch SGD (one epoch per iteration)",
	.objective_name = "cross_entropy",
	.objective_higher_better = 0,
	.heldout_name = "test_accuracy",
	.heldout_higher_better = 1,
	.configure = mlr_configure,
	.keys = mlr_keys,
	.create = mlr_create,
	.init_state = mlr_init_state,
	.step = mlr_step,
	.objective = mlr_objective,
	.heldout = mlr_heldout,
	.contraction = NULL,
	.dist_to_opt = NULL,
	.free = mlr_free,
	.effective = mlr_effective,
	.rewinds = 1,
	.dist = &mlr_dist,
};
