/*
 * model_lda.c - latent Dirichlet allocation by collapsed Gibbs sampling,
 * symmetric priors alpha (doc-topic) and beta (topic-word), K topics.
 *
 * One iteration is one sweep over every training token in corpus order:
 * remove the token's topic from the counts, draw a new one from
 *     p(k) ~ (n_dk + alpha) (n_wk + beta) / (n_k + V beta)
 * and add it back. After a partial recovery the server counts no longer
 * match the assignments: a restored row holds old counts. A decrement that
 * would take a count below zero leaves it at zero instead (and counts
 * found negative, e.g. injected, are clamped at the start of a sweep), so
 * a count's deficit against the assignments only ever shrinks and the
 * sampler never fails. The topic totals are recomputed as the column sums
 * of the word-topic rows at the start of every sweep (an aggregate the
 * servers can form themselves), so they agree with the rows. At the end of
 * a sweep (config "resync", default "sweep") the servers rebuild their
 * counts from the workers' assignments, the bulk-synchronous exchange of
 * AD-LDA, so a restored row's stale counts steer one sweep and are then
 * corrected; with "none" the offset persists. The draw computes the K
 * weights w_k in SIMD blocks of 8; 1 / (n_k + V beta) is cached per topic.
 *
 * Coupled draws. Every random number of a sweep is a keyed draw (scar/rng.h)
 * of (seed, sweep, token), the sweep being the state's iteration and the
 * token its index in the training corpus: a pure function of the key, not
 * of a stream's position, so the numbers do not depend on the order the
 * tokens are visited in, on the AD-LDA blocks or on the MPI ranks, and a
 * run whose counts were perturbed at sweep T draws the same numbers as its
 * unperturbed reference at every (sweep, token). How a token's topic is
 * drawn from its numbers (config "sampler") decides how long the two chains
 * stay together:
 *   race  (default) the exponential race: topic = the k minimizing E_k / w_k
 *         (compared as E_k w_j < E_j w_k, see pick_race), with
 *         E_k = -log U_k and U_k = (x_k >> 8 + 1) 2^-24 from
 *         the 32-bit value x_k = scar_rng_key_u32(token key, k). The E_k
 *         are independent Exp(1), so P(topic = k) = w_k / sum w (an exact
 *         sampler, up to the 24-bit U_k), and a change of one weight w_j
 *         changes the draw only when it reorders j against the winner: the
 *         other topics keep their E_k. -log is a SIMD float logarithm
 *         accurate to about an ulp (tests/unit/test-models checks every
 *         U_k against the correctly rounded value).
 *   cdf   inverse CDF: one uniform u = scar_rng_key_uniform(token key) per
 *         token, the topic whose cumulative weight interval holds u sum w
 *         (per-block sums, then a scan). Exact too, but a poor coupling: a
 *         change of any weight moves every later boundary (and the total),
 *         so a perturbed chain takes different topics at many more tokens.
 * The two samplers give different (equally valid) chains. tools/lda-coupling
 * measures how many assignments a perturbation changes with each.
 *
 * Objective ("loglik_per_token", higher is better): the mean over training
 * tokens of log sum_k theta_dk phi_kw with the point estimates
 * theta_dk = (n_dk + alpha) / (n_d + K alpha) and
 * phi_kw = (n_wk + beta) / (sum_w n_wk + V beta) (counts clamped at 0).
 * Held out ("heldout_loglik_per_token"): document completion on the
 * held-out documents: with phi fixed at the current estimate, the tokens at
 * even positions of each document are sampled for heldout_sweeps sweeps
 * (an RNG seeded from "seed" alone, so the value is a function of the
 * state); the mean log-probability of the odd-position tokens under the
 * resulting theta is reported.
 *
 * State: params "word_topic" i32 [V, K] (one row per word) and
 * "topic_totals" i32 [K] (one row per topic, n_k, held by the servers;
 * rebuilt from word_topic at each sweep, so losing it alone costs
 * nothing); state "z" u32 [training tokens] (assignments),
 * "doc_topic" i32 [training docs, K], "rng" u64 [6] (the generator state
 * after the initial assignments: earlier versions continued it in the
 * sweeps; kept, never advanced, so checkpoints keep their layout).
 *
 * Configuration keys: lda_keys below (scar-train --list-keys lda). resync
 * "sweep" rebuilds the server counts from the assignments after every sweep
 * (see resync_counts), "none" keeps purely incremental counts. workers W > 1
 * makes a sweep AD-LDA's over W workers: the training documents in W
 * contiguous blocks (scar_dist_part_lo), each block sampled against the
 * counts of the start of the sweep plus its own changes, with the same
 * keyed draws as W = 1 (a token's numbers do not depend on its block), then
 * the counts rebuilt from the assignments (needs resync "sweep"). The
 * blocks are independent, so the MPI trainer samples them on different
 * ranks and gets the same result (scar-mpi(7)). W = 1 is the sequential
 * sampler above.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <limits.h>

#include "scar/data.h"
#include "scar/dist.h"
#include "scar/model.h"
#include "scar/shard.h"
#include "model_lda.h"
#include "model_util.h"
#include "transport.h"

typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));
typedef int32_t v8iu __attribute__((vector_size(32), aligned(4)));
typedef uint32_t v8u __attribute__((vector_size(32)));

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

struct docs {
	uint64_t n, tokens;
	uint64_t *start;	/* n + 1 */
	uint32_t *words;
};

struct scar_model {
	struct docs train, test;
	uint64_t vocab;
	uint32_t k, kpad;
	float alpha, beta, vbeta;
	uint64_t seed;
	int heldout_sweeps;
	int resync;		/* rebuild the server counts from z after each sweep */
	int sampler;		/* SAMPLER_RACE or SAMPLER_CDF */
	uint32_t workers;	/* AD-LDA blocks of documents per sweep (1: sequential) */
	int32_t *bwk, *bk;	/* workers > 1: a block's copy of the counts, V K and K */
	/* Sweep scratch, kpad floats each. */
	float *p, *inv, *dka, *bsum;
};

static const char *const resync_choices[] = { "sweep", "none", NULL };
/* In the order of SCAR_LDA_SAMPLER_*. */
static const char *const sampler_choices[] = { "race", "cdf", NULL };

static const struct scar_model_key lda_keys[] = {
	MU_SEEDS("the initial assignments and the keyed draws",
		 "the synthetic corpus and the held-out split"),
	MU_PATH("data", "a UCI bag-of-words docword.*.txt file; absent: a synthetic corpus"),
	MU_PATH("vocab", "the matching vocab.*.txt (with data)"),
	MU_SYNTH_INT("docs", 1000, 1, INT32_MAX, "synthetic documents"),
	MU_SYNTH_INT("words", 1000, 1, INT32_MAX, "synthetic vocabulary size"),
	MU_SYNTH_INT("doc_len", 100, 1, 1 << 24, "synthetic tokens per document"),
	MU_SYNTH_INT("synth_topics", 10, 1, 65536, "planted topics"),
	MU_SYNTH_REAL("synth_alpha", 0.1, 1e-6, 1e6, "Dirichlet parameter of the planted doc mixtures"),
	MU_SYNTH_REAL("synth_beta", 0.05, 1e-6, 1e6, "Dirichlet parameter of the planted topics"),
	MU_INT("topics", 10, 1, 65536, "K, the topics"),
	MU_REAL("alpha", 0.1, 1e-9, 1e6, "doc-topic prior"),
	MU_REAL("beta", 0.01, 1e-9, 1e6, "topic-word prior"),
	MU_REAL("heldout_frac", 0.1, 1e-6, 0.9, "fraction of the documents held out"),
	MU_INT("heldout_sweeps", 10, 1, 10000, "fold-in sweeps of the held-out estimate"),
	MU_STR("resync", "sweep", resync_choices,
	       "rebuild the server counts from the assignments after each sweep, or not"),
	MU_STR("sampler", "race", sampler_choices,
	       "a topic from its keyed numbers: exponential race or inverse CDF"),
	MU_INT("workers", 1, 1, 65536, "AD-LDA blocks of documents per sweep; above 1 needs resync sweep"),
	MU_END
};

static int lda_configure(json_t *cfg, struct scar_error *err)
{
	int rc;

	if ((rc = mu_cfg_apply(cfg, lda_keys, json_object_get(cfg, "data") != NULL, "lda", err)))
		return rc;
	if (mu_get_int(cfg, "workers") > 1 && strcmp(mu_get_str(cfg, "resync"), "sweep"))
		return scar_error_set(err, SCAR_EINVAL, "lda: 'workers' above 1 needs resync \"sweep\"");
	if (json_object_get(cfg, "vocab") && !json_object_get(cfg, "data"))
		return scar_error_set(err, SCAR_EINVAL, "lda: 'vocab' needs 'data'");
	return 0;
}

static void lda_free(struct scar_model *m)
{
	if (!m)
		return;
	free(m->train.start);
	free(m->train.words);
	free(m->test.start);
	free(m->test.words);
	free(m->p);
	free(m->inv);
	free(m->dka);
	free(m->bsum);
	free(m->bwk);
	free(m->bk);
	free(m);
}

/* Split the corpus's documents into train and test (seeded per-document draws). */
static int split_docs(struct scar_model *m, const struct scar_corpus *c, double frac,
		      uint64_t seed)
{
	struct scar_rng r;
	uint8_t *held = malloc(c->docs ? c->docs : 1);
	struct docs *ds[2] = { &m->train, &m->test };

	if (!held)
		return -1;
	scar_rng_seed_stream(&r, seed, 21);
	for (uint64_t d = 0; d < c->docs; d++) {
		struct docs *x;

		held[d] = frac > 0 && scar_rng_uniform(&r) < frac;
		x = ds[held[d]];
		x->n++;
		x->tokens += c->doc_start[d + 1] - c->doc_start[d];
	}
	for (int s = 0; s < 2; s++) {
		ds[s]->start = malloc((ds[s]->n + 1) * sizeof(uint64_t));
		ds[s]->words = malloc((ds[s]->tokens ? ds[s]->tokens : 1) * sizeof(uint32_t));
		if (!ds[s]->start || !ds[s]->words) {
			free(held);
			return -1;
		}
		ds[s]->start[0] = 0;
		ds[s]->n = 0;
	}
	for (uint64_t d = 0; d < c->docs; d++) {
		struct docs *x = ds[held[d]];
		uint64_t len = c->doc_start[d + 1] - c->doc_start[d];

		memcpy(x->words + x->start[x->n], c->words + c->doc_start[d], len * sizeof(uint32_t));
		x->start[x->n + 1] = x->start[x->n] + len;
		x->n++;
	}
	free(held);
	return 0;
}

static int lda_create(struct scar_model **out, const json_t *cfg, struct scar_error *err)
{
	struct scar_model *m = calloc(1, sizeof(*m));
	struct scar_corpus *c = NULL;
	const char *path = mu_get_str(cfg, "data");
	uint64_t seed = (uint64_t)mu_get_int(cfg, "data_seed");
	int rc;

	*out = NULL;
	if (!m)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	if (path)
		rc = scar_uci_bow_load(path, mu_get_str(cfg, "vocab"), &c, err);
	else
		rc = scar_synth_corpus((uint64_t)mu_get_int(cfg, "docs"),
				       (uint64_t)mu_get_int(cfg, "words"),
				       (uint32_t)mu_get_int(cfg, "synth_topics"),
				       (uint64_t)mu_get_int(cfg, "doc_len"),
				       mu_get_real(cfg, "synth_alpha"), mu_get_real(cfg, "synth_beta"),
				       seed, &c, NULL, err);
	if (rc)
		goto fail;
	m->vocab = c->vocab;
	m->k = (uint32_t)mu_get_int(cfg, "topics");
	m->kpad = (m->k + 7) & ~7u;
	m->alpha = (float)mu_get_real(cfg, "alpha");
	m->beta = (float)mu_get_real(cfg, "beta");
	m->vbeta = (float)((double)m->vocab * mu_get_real(cfg, "beta"));
	m->seed = (uint64_t)mu_get_int(cfg, "seed");
	m->heldout_sweeps = (int)mu_get_int(cfg, "heldout_sweeps");
	m->resync = strcmp(mu_get_str(cfg, "resync"), "sweep") == 0;
	m->sampler = strcmp(mu_get_str(cfg, "sampler"), "cdf") == 0 ? SCAR_LDA_SAMPLER_CDF :
		     SCAR_LDA_SAMPLER_RACE;
	m->workers = (uint32_t)mu_get_int(cfg, "workers");
	if (split_docs(m, c, mu_get_real(cfg, "heldout_frac"), seed)) {
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
		goto fail;
	}
	if (!m->train.tokens) {
		rc = scar_error_set(err, SCAR_EINVAL, "lda: no training tokens");
		goto fail;
	}
	{
		uint64_t d = 0;

		while (d < m->test.n && m->test.start[d + 1] - m->test.start[d] < 2)
			d++;
		if (d == m->test.n) {
			rc = scar_error_set(err, SCAR_EINVAL,
					    "lda: no held-out document of 2 tokens or more (heldout_frac %g)",
					    mu_get_real(cfg, "heldout_frac"));
			goto fail;
		}
	}
	m->p = aligned_alloc(32, m->kpad * sizeof(float));
	m->inv = aligned_alloc(32, m->kpad * sizeof(float));
	m->dka = aligned_alloc(32, m->kpad * sizeof(float));
	m->bsum = malloc((m->kpad / 8 + 1) * sizeof(float));
	if (m->workers > 1) {
		m->bwk = malloc(m->vocab * m->k * sizeof(*m->bwk) + 1);
		m->bk = malloc(m->k * sizeof(*m->bk));
	}
	if (!m->p || !m->inv || !m->dka || !m->bsum || (m->workers > 1 && (!m->bwk || !m->bk))) {
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
		goto fail;
	}
	scar_corpus_free(c);
	*out = m;
	return 0;
fail:
	scar_corpus_free(c);
	lda_free(m);
	return rc;
}

static int lda_init_state(struct scar_model *m, struct scar_state *st, struct scar_error *err)
{
	struct scar_tensor *wt, *tt, *zt, *dt;
	struct scar_rng r;
	uint32_t k = m->k;
	int rc;

	if ((rc = mu_add(st, "word_topic", SCAR_I32, SCAR_ROLE_PARAM, 2, m->vocab, k, &wt, err)) ||
	    (rc = mu_add(st, "topic_totals", SCAR_I32, SCAR_ROLE_PARAM, 1, k, 0, &tt, err)) ||
	    (rc = mu_add(st, "z", SCAR_U32, SCAR_ROLE_STATE, 1, m->train.tokens, 0, &zt, err)) ||
	    (rc = mu_add(st, "doc_topic", SCAR_I32, SCAR_ROLE_STATE, 2, m->train.n, k, &dt, err)))
		return rc;
	scar_rng_seed_stream(&r, mu_state_seed(st, 1), 1);
	for (uint64_t d = 0; d < m->train.n; d++) {
		int32_t *nd = (int32_t *)dt->data + d * k;

		for (uint64_t t = m->train.start[d]; t < m->train.start[d + 1]; t++) {
			uint32_t z = (uint32_t)scar_rng_below(&r, k);

			((uint32_t *)zt->data)[t] = z;
			nd[z]++;
			((int32_t *)wt->data)[(uint64_t)m->train.words[t] * k + z]++;
			((int32_t *)tt->data)[z]++;
		}
	}
	/* Kept for the checkpoint layout of earlier versions (the sweeps use keyed draws). */
	if ((rc = mu_add(st, "rng", SCAR_U64, SCAR_ROLE_STATE, 1, SCAR_RNG_WORDS, 0, &zt, err)))
		return rc;
	scar_rng_save(&r, zt->data);
	return 0;
}

static inline float clamp0(int32_t v)
{
	return v > 0 ? (float)v : 0.0f;
}

static inline float hsum(const v8f *pv)
{
	v8f v = *pv;

	return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));
}

struct sweep {
	const struct scar_model *m;
	int32_t *nwk, *nk;
	float *inv, *dka, *p, *bsum;
	uint64_t key;		/* the sweep's key: a token's is scar_rng_key_sub(key, token) */
};

#define ALWAYS_INLINE inline __attribute__((always_inline))

/* Vectors are passed by pointer: by value would change the ABI between the clones. */
static ALWAYS_INLINE void mix32v(v8u *px)
{
	v8u x = *px;

	x ^= x >> 16;
	x *= 0x7feb352dU;
	x ^= x >> 15;
	x *= 0x846ca68bU;
	*px = x ^ (x >> 16);
}

/*
 * -log u for u in [2^-24, 1] (the race's U_k), in float: u = 2^e m with m
 * in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s), s = f / (2 + f), f = m - 1
 * (exact), by its series to s^9 (truncation below 1e-9), arranged as
 * f - (f^2/2 - s (f^2/2 + R)) so the leading term is exact; e log 2 with
 * log 2 split in a short high part (e ln2_hi exact) and a low part.
 */
static ALWAYS_INLINE void neglog8(v8f *pu)
{
	v8i bits = (v8i)*pu, e, big;
	v8f m, f, s, z, r, hf, ef;

	e = ((bits >> 23) & 0xff) - 127;
	bits = (bits & 0x007fffff) | 0x3f800000;	/* m in [1, 2) */
	m = (v8f)bits;
	big = m > 1.41421356f;
	bits -= big & 0x00800000;			/* m / 2, exactly */
	e -= big;					/* big is -1 where true */
	m = (v8f)bits;
	f = m - 1.0f;
	s = f / (2.0f + f);
	z = s * s;
	r = z * (0.66666667f + z * (0.4f + z * (0.28571429f + z * 0.22222222f)));
	hf = 0.5f * f * f;
	ef = __builtin_convertvector(e, v8f);
	/* ln2_hi = 0x1.62e4p-1 has 17 bits, so e ln2_hi is exact for |e| < 128. */
	*pu = -(ef * 0x1.62e4p-1f + ((f - (hf - s * (hf + r))) + ef * 0x1.7f7d1cp-20f));
}

/*
 * The exponential race over the weights p[0, 8 nb) (padding lanes weigh 0
 * and never win): the k minimizing E_k / p_k, compared without a division
 * as E_k p_j < E_j p_k (float products): per lane over the blocks in
 * order, then over the lanes in order, a tie going to the smaller topic.
 */
static ALWAYS_INLINE uint32_t pick_race(const float *p, uint32_t nb, uint64_t key)
{
	const v8u lane0 = { 0, 1, 2, 3, 4, 5, 6, 7 };
	const v8f one = { 1, 1, 1, 1, 1, 1, 1, 1 };
	v8u lo = lane0 * 0 + (uint32_t)key, hi = lane0 * 0 + (uint32_t)(key >> 32);
	v8f be = one, bw = { 0 };	/* the lane's leader so far: E, w (start: ratio infinite) */
	v8i bidx = { 0 };
	uint32_t nt;
	float e, w;

	for (uint32_t b = 0; b < nb; b++) {
		v8u lane = lane0 + 8 * b, x = lo ^ (lane * 0x9e3779b9U);
		v8f r, pw = *(const v8f *)(p + 8 * b);
		v8i lt;

		mix32v(&x);
		x ^= hi;
		mix32v(&x);
		r = __builtin_convertvector((v8i)((x >> 8) + 1), v8f) * 0x1p-24f;
		neglog8(&r);
		lt = r * bw < be * pw;
		be = (v8f)(((v8i)r & lt) | ((v8i)be & ~lt));
		bw = (v8f)(((v8i)pw & lt) | ((v8i)bw & ~lt));
		bidx = ((v8i)lane & lt) | (bidx & ~lt);
	}
	nt = (uint32_t)bidx[0];
	e = be[0];
	w = bw[0];
	for (int j = 1; j < 8; j++) {
		float l = be[j] * w, r = e * bw[j];

		if (l < r || (l == r && (uint32_t)bidx[j] < nt)) {
			e = be[j];
			w = bw[j];
			nt = (uint32_t)bidx[j];
		}
	}
	return nt;
}

/*
 * Inverse CDF: the topic whose interval of the cumulative weights holds
 * u * total, by block sums bsum[0, nbs) and then within the block; rounding
 * can leave u past the end: take the last topic.
 */
static ALWAYS_INLINE uint32_t pick_cdf(const float *p, const float *bsum, uint32_t nbs,
				       uint32_t k, uint64_t key)
{
	float total = 0, u;
	uint32_t b, nt, end;

	for (b = 0; b < nbs; b++)
		total += bsum[b];
	u = (float)scar_rng_key_uniform(key) * total;
	for (b = 0; b + 1 < nbs && u >= bsum[b]; b++)
		u -= bsum[b];
	nt = 8 * b;
	end = 8 * b + 8 < k ? 8 * b + 8 : k;
	while (nt + 1 < end && u >= p[nt]) {
		u -= p[nt];
		nt++;
	}
	return nt;
}

/* Resample every token of one document; its first token is training token t0. */
KERNEL
static void sample_doc(const struct sweep *s, const uint32_t *words, uint32_t *z, uint64_t len,
		       int32_t *nd, uint64_t t0)
{
	const struct scar_model *m = s->m;
	uint32_t k = m->k, k8 = k & ~7u, nb = k8 / 8;
	float alpha = m->alpha, beta = m->beta, vbeta = m->vbeta;
	float *inv = s->inv, *dka = s->dka, *p = s->p, *bsum = s->bsum;
	const v8f bv = { beta, beta, beta, beta, beta, beta, beta, beta };
	const v8i zero = { 0 };
	int race = m->sampler == SCAR_LDA_SAMPLER_RACE;

	for (uint32_t t = 0; t < k; t++)
		dka[t] = clamp0(nd[t]) + alpha;
	for (uint64_t i = 0; i < len; i++) {
		uint32_t old = z[i], nt;
		int32_t *nw = s->nwk + (uint64_t)words[i] * k;
		uint64_t key = scar_rng_key_sub(s->key, t0 + i);
		uint32_t b;

		/* The next token's word row is a random one of V: start fetching it now. */
		if (i + 1 < len) {
			const int32_t *nx = s->nwk + (uint64_t)words[i + 1] * k;

			for (uint32_t t = 0; t < k; t += 16)
				__builtin_prefetch(nx + t, 1);
		}
		/* Decrement, but never below zero (see the top of the file). */
		nd[old] -= nd[old] > 0;
		nw[old] -= nw[old] > 0;
		s->nk[old] -= s->nk[old] > 0;
		dka[old] = clamp0(nd[old]) + alpha;
		inv[old] = 1.0f / (clamp0(s->nk[old]) + vbeta);
		for (b = 0; b < nb; b++) {
			v8i c = *(const v8iu *)(nw + 8 * b);
			v8f w;

			c &= c > zero;
			w = (__builtin_convertvector(c, v8f) + bv) * *(const v8f *)(dka + 8 * b) *
			    *(const v8f *)(inv + 8 * b);
			*(v8f *)(p + 8 * b) = w;
			if (!race)
				bsum[b] = hsum(&w);
		}
		if (k8 < k) {
			float tail = 0;

			for (uint32_t t = k8; t < k; t++)
				tail += (p[t] = (clamp0(nw[t]) + beta) * dka[t] * inv[t]);
			bsum[nb] = tail;
		}
		if (race)
			nt = pick_race(p, nb + (k8 < k), key);
		else
			nt = pick_cdf(p, bsum, nb + (k8 < k), k, key);
		z[i] = nt;
		nd[nt]++;
		nw[nt]++;
		s->nk[nt]++;
		dka[nt] = clamp0(nd[nt]) + alpha;
		inv[nt] = 1.0f / (clamp0(s->nk[nt]) + vbeta);
	}
}

void scar_lda_neglog(const float *u, float *out, size_t n)
{
	for (size_t i = 0; i + 8 <= n; i += 8) {
		v8f x;

		memcpy(&x, u + i, sizeof(x));
		neglog8(&x);
		memcpy(out + i, &x, sizeof(x));
	}
}

uint32_t scar_lda_draw(int sampler, const float *w, uint32_t k, uint64_t key)
{
	uint32_t kpad = (k + 7) & ~7u, nbs = kpad / 8, nt;
	float *p = aligned_alloc(32, kpad * sizeof(float)), bsum[8192];

	if (!p || nbs > 8192) {
		free(p);
		return UINT32_MAX;
	}
	memset(p, 0, kpad * sizeof(float));
	memcpy(p, w, k * sizeof(float));
	for (uint32_t b = 0; b < nbs; b++) {
		bsum[b] = 0;
		if (8 * b + 8 <= k)
			bsum[b] = hsum((const v8f *)(p + 8 * b));
		else
			for (uint32_t t = 8 * b; t < k; t++)
				bsum[b] += p[t];
	}
	nt = sampler == SCAR_LDA_SAMPLER_RACE ? pick_race(p, nbs, key) :
		pick_cdf(p, bsum, nbs, k, key);
	free(p);
	return nt;
}

struct lda_view {
	struct scar_tensor *wt, *tt, *zt, *dt;
};

static int get_view(const struct scar_model *m, const struct scar_state *st,
		    struct lda_view *v, struct scar_error *err)
{
	int rc;

	if ((rc = mu_find(st, "word_topic", SCAR_I32, m->vocab * m->k, &v->wt, err)) ||
	    (rc = mu_find(st, "topic_totals", SCAR_I32, m->k, &v->tt, err)) ||
	    (rc = mu_find(st, "z", SCAR_U32, m->train.tokens, &v->zt, err)) ||
	    (rc = mu_find(st, "doc_topic", SCAR_I32, m->train.n * m->k, &v->dt, err)))
		return rc;
	return 0;
}

/*
 * The bulk-synchronous exchange at the end of a sweep (as in AD-LDA, Newman
 * et al. 2009): the servers' word-topic rows and topic totals become the sum
 * of the workers' counts of their assignments z, and each worker's
 * doc-topic rows follow z too. Without a perturbation this changes nothing
 * (the incremental counts already equal these sums, bit for bit); after a
 * recovery restored old count rows, it is what makes the run self-correct:
 * the stale rows steer one sweep of sampling, then the counts agree with
 * the assignments again. With "resync": "none" the counts are only ever
 * updated incrementally and a restored row's offset persists.
 */
static void resync_counts(const struct scar_model *m, const uint32_t *z, int32_t *nwk,
			  int32_t *nk, int32_t *ndk)
{
	memset(nwk, 0, m->vocab * m->k * sizeof(*nwk));
	memset(nk, 0, m->k * sizeof(*nk));
	memset(ndk, 0, m->train.n * m->k * sizeof(*ndk));
	for (uint64_t d = 0; d < m->train.n; d++)
		for (uint64_t t = m->train.start[d]; t < m->train.start[d + 1]; t++) {
			nwk[(uint64_t)m->train.words[t] * m->k + z[t]]++;
			ndk[d * m->k + z[t]]++;
			nk[z[t]]++;
		}
}

/*
 * The start of a sweep: check z, clamp negative counts, recompute the
 * topic totals as the column sums of the word rows.
 */
static int prepare(struct scar_model *m, struct lda_view *v, struct scar_error *err)
{
	const uint32_t *z = v->zt->data;
	int32_t *nwk = v->wt->data, *nk = v->tt->data;

	for (uint64_t t = 0; t < m->train.tokens; t++)
		if (z[t] >= m->k)
			return scar_error_set(err, SCAR_ECORRUPT, "tensor 'z' holds topic %u (K = %u)",
					      z[t], m->k);
	memset(nk, 0, m->k * sizeof(*nk));
	for (uint64_t w = 0; w < m->vocab; w++)
		for (uint32_t t = 0; t < m->k; t++) {
			int32_t c = nwk[w * m->k + t];

			if (c < 0)
				nwk[w * m->k + t] = c = 0;
			nk[t] += c;
		}
	for (uint64_t i = 0; i < m->train.n * m->k; i++)
		if (((int32_t *)v->dt->data)[i] < 0)
			((int32_t *)v->dt->data)[i] = 0;
	return 0;
}

/*
 * Sample documents [d0, d1) against the counts nwk, nk (changed as it
 * goes), with the keyed draws of the sweep key.
 */
static void sample_docs(struct scar_model *m, struct lda_view *v, int32_t *nwk, int32_t *nk,
			uint64_t d0, uint64_t d1, uint64_t key)
{
	uint32_t *z = v->zt->data;
	struct sweep s;

	s.m = m;
	s.nwk = nwk;
	s.nk = nk;
	s.inv = m->inv;
	s.dka = m->dka;
	s.p = m->p;
	s.bsum = m->bsum;
	s.key = key;
	/* Padding lanes get weight 0: inv = 0 and p = 0 there. */
	memset(m->inv, 0, m->kpad * sizeof(float));
	memset(m->dka, 0, m->kpad * sizeof(float));
	memset(m->p, 0, m->kpad * sizeof(float));
	for (uint32_t t = 0; t < m->k; t++)
		m->inv[t] = 1.0f / (clamp0(nk[t]) + m->vbeta);
	for (uint64_t d = d0; d < d1; d++) {
		uint64_t lo = m->train.start[d];

		sample_doc(&s, m->train.words + lo, z + lo, m->train.start[d + 1] - lo,
			   (int32_t *)v->dt->data + d * m->k, lo);
	}
}

/* The key of the sweep that starts at the state's iteration. */
static uint64_t sweep_key(const struct scar_model *m, const struct scar_state *st)
{
	return scar_rng_key_sub(scar_rng_key(m->seed, SCAR_LDA_GIBBS_STREAM), st->iteration);
}

int scar_lda_sweep_begin(struct scar_model *m, struct scar_state *st, uint64_t *seed,
			 struct scar_error *err)
{
	struct lda_view v;
	int rc;

	if ((rc = get_view(m, st, &v, err)) || (rc = prepare(m, &v, err)))
		return rc;
	*seed = sweep_key(m, st);
	return 0;
}

int scar_lda_sample_block(struct scar_model *m, struct scar_state *st, uint32_t b,
			  uint64_t seed, struct scar_error *err)
{
	struct lda_view v;
	int rc;

	if ((rc = get_view(m, st, &v, err)))
		return rc;
	memcpy(m->bwk, v.wt->data, m->vocab * m->k * sizeof(*m->bwk));
	memcpy(m->bk, v.tt->data, m->k * sizeof(*m->bk));
	sample_docs(m, &v, m->bwk, m->bk, scar_dist_part_lo(m->train.n, b, m->workers),
		    scar_dist_part_lo(m->train.n, b + 1, m->workers), seed);
	return 0;
}

int scar_lda_sweep_end(struct scar_model *m, struct scar_state *st, struct scar_error *err)
{
	struct lda_view v;
	int rc;

	if ((rc = get_view(m, st, &v, err)))
		return rc;
	resync_counts(m, v.zt->data, v.wt->data, v.tt->data, v.dt->data);
	return 0;
}

/*
 * Recovery "rebuild" (scar(7)): the word-topic rows and the topic totals
 * are counts of the workers' token assignments z, so the lost rows are
 * recounted from z, exactly, at recovery time: row w of a lost shard gets
 * n_wk = #{tokens of word w with z = k}, a lost total n_k = #{z = k}.
 */
static int lda_rebuild(struct scar_model *m, struct scar_state *st, const uint8_t *lost,
		       uint32_t shards, uint64_t *rows, struct scar_error *err)
{
	struct lda_view v;
	const uint32_t *z;
	int32_t *nwk, *nk;
	int rc;

	*rows = 0;
	if ((rc = get_view(m, st, &v, err)))
		return rc;
	z = v.zt->data;
	nwk = v.wt->data;
	nk = v.tt->data;
	for (uint64_t t = 0; t < m->train.tokens; t++)
		if (z[t] >= m->k)
			return scar_error_set(err, SCAR_ECORRUPT, "tensor 'z' holds topic %u (K = %u)",
					      z[t], m->k);
	for (uint64_t w = 0; w < m->vocab; w++)
		if (lost[scar_shard_of_row(w, shards)]) {
			memset(nwk + w * m->k, 0, m->k * sizeof(*nwk));
			(*rows)++;
		}
	for (uint32_t k = 0; k < m->k; k++)
		if (lost[scar_shard_of_row(k, shards)]) {
			nk[k] = 0;
			(*rows)++;
		}
	for (uint64_t t = 0; t < m->train.tokens; t++) {
		uint64_t w = m->train.words[t];

		if (lost[scar_shard_of_row(w, shards)])
			nwk[w * m->k + z[t]]++;
		if (lost[scar_shard_of_row(z[t], shards)])
			nk[z[t]]++;
	}
	return 0;
}

void scar_lda_info(const struct scar_model *m, struct scar_lda_info *out)
{
	out->workers = m->workers;
	out->docs = m->train.n;
	out->tokens = m->train.tokens;
	out->doc_start = m->train.start;
}

static int lda_step(struct scar_model *m, struct scar_state *st, struct scar_error *err)
{
	struct lda_view v;
	uint64_t seed;
	int rc;

	if (m->workers > 1) {
		if ((rc = scar_lda_sweep_begin(m, st, &seed, err)))
			return rc;
		for (uint32_t b = 0; b < m->workers; b++)
			if ((rc = scar_lda_sample_block(m, st, b, seed, err)))
				return rc;
		return scar_lda_sweep_end(m, st, err);
	}
	if ((rc = get_view(m, st, &v, err)) || (rc = prepare(m, &v, err)))
		return rc;
	sample_docs(m, &v, v.wt->data, v.tt->data, 0, m->train.n, sweep_key(m, st));
	if (m->resync)
		resync_counts(m, v.zt->data, v.wt->data, v.tt->data, v.dt->data);
	return 0;
}

/* 1 / (sum_w max(n_wk, 0) + V beta) per topic: phi_kw = (n_wk + beta) * colinv[k]. */
static int phi_norms(const struct scar_model *m, const int32_t *nwk, double **out)
{
	double *col = calloc(m->k, sizeof(*col));

	*out = col;
	if (!col)
		return -1;
	for (uint64_t w = 0; w < m->vocab; w++)
		for (uint32_t t = 0; t < m->k; t++)
			col[t] += clamp0(nwk[w * m->k + t]);
	for (uint32_t t = 0; t < m->k; t++)
		col[t] = 1.0 / (col[t] + (double)m->vocab * m->beta);
	return 0;
}

/* Sum over a document's tokens of log sum_k th[k] (max(n_wk, 0) + beta). */
KERNEL
static double doc_loglik(const struct scar_model *m, const int32_t *nwk, const uint32_t *words,
			 uint64_t len, const float *th)
{
	uint32_t k = m->k, k8 = k & ~7u;
	const v8f bv = { m->beta, m->beta, m->beta, m->beta, m->beta, m->beta, m->beta, m->beta };
	const v8i zero = { 0 };
	double ll = 0;

	for (uint64_t i = 0; i < len; i++) {
		const int32_t *nw = nwk + (uint64_t)words[i] * k;
		v8f acc = { 0 };
		float pw;

		for (uint32_t t = 0; t < k8; t += 8) {
			v8i c = *(const v8iu *)(nw + t);

			c &= c > zero;
			acc += (__builtin_convertvector(c, v8f) + bv) * *(const v8f *)(th + t);
		}
		pw = hsum(&acc);
		for (uint32_t t = k8; t < k; t++)
			pw += (clamp0(nw[t]) + m->beta) * th[t];
		ll += log((double)pw);
	}
	return ll;
}

int scar_lda_doc_logliks(struct scar_model *m, const struct scar_state *st, uint64_t d0,
			 uint64_t d1, double *out, struct scar_error *err)
{
	struct lda_view v;
	double *col;
	float *th = m->p;
	uint32_t k = m->k;
	const int32_t *nwk;
	int rc = get_view(m, st, &v, err);

	if (rc)
		return rc;
	nwk = v.wt->data;
	if (phi_norms(m, nwk, &col))
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	for (uint64_t d = d0; d < d1; d++) {
		const int32_t *nd = (const int32_t *)v.dt->data + d * k;
		uint64_t lo = m->train.start[d];
		double nsum = 0;

		for (uint32_t t = 0; t < k; t++)
			nsum += clamp0(nd[t]);
		/* theta_dk * colinv_k, so a token costs one K-long dot product. */
		for (uint32_t t = 0; t < k; t++)
			th[t] = (float)((clamp0(nd[t]) + m->alpha) / (nsum + k * (double)m->alpha) * col[t]);
		out[d - d0] = doc_loglik(m, nwk, m->train.words + lo, m->train.start[d + 1] - lo, th);
	}
	free(col);
	return 0;
}

double scar_lda_objective_of(const struct scar_model *m, double loglik_sum)
{
	return loglik_sum / (double)m->train.tokens;
}

/* The documents' log-likelihoods added in document order. */
static int lda_objective(struct scar_model *m, const struct scar_state *st, double *out,
			 struct scar_error *err)
{
	double *ll = malloc((m->train.n + 1) * sizeof(*ll)), sum = 0;
	int rc;

	if (!ll)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	if (!(rc = scar_lda_doc_logliks(m, st, 0, m->train.n, ll, err))) {
		for (uint64_t d = 0; d < m->train.n; d++)
			sum += ll[d];
		*out = scar_lda_objective_of(m, sum);
	}
	free(ll);
	return rc;
}

static int lda_heldout(struct scar_model *m, const struct scar_state *st, double *out,
		       struct scar_error *err)
{
	struct lda_view v;
	struct scar_rng r;
	double *col, *phiw, *nd, ll = 0;
	uint32_t k = m->k, *z = NULL;
	uint64_t maxlen = 0, npred = 0;
	const int32_t *nwk;
	int rc = get_view(m, st, &v, err);

	if (rc)
		return rc;
	if (!m->test.tokens)
		return scar_error_set(err, SCAR_EUNSUPPORTED, "lda: no held-out documents");
	nwk = v.wt->data;
	for (uint64_t d = 0; d < m->test.n; d++)
		if (m->test.start[d + 1] - m->test.start[d] > maxlen)
			maxlen = m->test.start[d + 1] - m->test.start[d];
	phiw = malloc(2 * k * sizeof(*phiw));
	z = malloc((maxlen / 2 + 1) * sizeof(*z));
	if (phi_norms(m, nwk, &col) || !phiw || !z) {
		free(col);
		free(phiw);
		free(z);
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	}
	nd = phiw + k;
	scar_rng_seed_stream(&r, m->seed, 22);
	for (uint64_t d = 0; d < m->test.n; d++) {
		const uint32_t *w = m->test.words + m->test.start[d];
		uint64_t len = m->test.start[d + 1] - m->test.start[d], nobs = (len + 1) / 2;

		if (len < 2)
			continue;
		memset(nd, 0, k * sizeof(*nd));
		for (uint64_t i = 0; i < nobs; i++) {
			z[i] = (uint32_t)scar_rng_below(&r, k);
			nd[z[i]]++;
		}
		for (int sw = 0; sw < m->heldout_sweeps; sw++)
			for (uint64_t i = 0; i < nobs; i++) {
				const int32_t *nw = nwk + (uint64_t)w[2 * i] * k;
				double tot = 0, u;
				uint32_t t;

				nd[z[i]]--;
				for (t = 0; t < k; t++)
					tot += (phiw[t] = (nd[t] + m->alpha) * (clamp0(nw[t]) + m->beta) * col[t]);
				u = scar_rng_uniform(&r) * tot;
				for (t = 0; t + 1 < k && u >= phiw[t]; t++)
					u -= phiw[t];
				z[i] = t;
				nd[t]++;
			}
		for (uint64_t i = 1; i < len; i += 2) {
			const int32_t *nw = nwk + (uint64_t)w[i] * k;
			double pw = 0;

			for (uint32_t t = 0; t < k; t++)
				pw += (nd[t] + m->alpha) * (clamp0(nw[t]) + m->beta) * col[t];
			ll += log(pw / ((double)nobs + k * (double)m->alpha));
			npred++;
		}
	}
	free(col);
	free(phiw);
	free(z);
	if (!npred)
		return scar_error_set(err, SCAR_EUNSUPPORTED, "lda: held-out documents are too short");
	*out = ll / (double)npred;
	return 0;
}

/* Sizes from the corpus and the sampler's settings (a Gibbs sweep has no step size). */
static int lda_effective(struct scar_model *m, json_t *out, struct scar_error *err)
{
	if (json_object_set_new(out, "docs", json_integer((json_int_t)m->train.n)) ||
	    json_object_set_new(out, "heldout_docs", json_integer((json_int_t)m->test.n)) ||
	    json_object_set_new(out, "vocab", json_integer((json_int_t)m->vocab)) ||
	    json_object_set_new(out, "tokens", json_integer((json_int_t)m->train.tokens)) ||
	    json_object_set_new(out, "heldout_tokens", json_integer((json_int_t)m->test.tokens)) ||
	    json_object_set_new(out, "topics", json_integer((json_int_t)m->k)) ||
	    json_object_set_new(out, "alpha", json_real(m->alpha)) ||
	    json_object_set_new(out, "beta", json_real(m->beta)) ||
	    json_object_set_new(out, "workers", json_integer((json_int_t)m->workers)) ||
	    json_object_set_new(out, "step", json_string("one collapsed Gibbs sweep (no step size)")))
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	return 0;
}

/* ---- distributed (scar-mpi(7)) ---- */

/* Every rank holds the model (the corpus); it samples its blocks. */
struct scar_dist_model {
	struct scar_model *m;
	struct scar_transport *tp;
	struct scar_lda_info ldi;
	double *ld_ll;			/* per training document: its log-likelihood */
	int *ld_cnt, *ld_displ;		/* per rank: its tokens (z) or its documents */
};

static void lda_dist_free(struct scar_dist_model *t)
{
	if (!t)
		return;
	free(t->ld_ll);
	free(t->ld_cnt);
	free(t->ld_displ);
	free(t);
}

/*
 * One AD-LDA sweep as lda_step does it with "workers" W blocks of
 * documents: every rank prepares the counts and computes the sweep's key (the
 * same replicated state, so the same values); rank R samples the blocks
 * [lo(R), lo(R+1)) of W by the partition rule, each against the counts of
 * the start of the sweep; the assignments z of every rank's documents are
 * gathered to every rank; every rank rebuilds the counts from z (the
 * resync). The blocks do not see each other's changes in one process
 * either, so the result is the model's, bit for bit. The objective is the
 * documents' log-likelihoods, computed by the ranks over the partition of
 * the documents, gathered and added in document order.
 */

static void lda_blocks(const struct scar_dist_model *t, uint32_t q, uint64_t *d0, uint64_t *d1)
{
	uint32_t W = t->ldi.workers;
	uint64_t b0 = scar_dist_part_lo(W, q, t->tp->P), b1 = scar_dist_part_lo(W, q + 1, t->tp->P);

	*d0 = scar_dist_part_lo(t->ldi.docs, (uint32_t)b0, W);
	*d1 = scar_dist_part_lo(t->ldi.docs, (uint32_t)b1, W);
}

static int lda_dist_step(struct scar_dist_model *t, struct scar_state *st, struct scar_error *err)
{
	uint32_t W = t->ldi.workers;
	uint64_t seed, b0 = scar_dist_part_lo(W, t->tp->R, t->tp->P), b1 = scar_dist_part_lo(W, t->tp->R + 1, t->tp->P);
	struct scar_tensor *z = scar_state_find(st, "z");
	int rc;

	/* W = 1 is one sequential chain of draws: every rank runs it itself. */
	if (W == 1)
		return lda_step(t->m, st, err);
	if ((rc = scar_lda_sweep_begin(t->m, st, &seed, err)))
		return rc;
	if (!z || z->dtype != SCAR_U32 || scar_tensor_elems(z) != t->ldi.tokens)
		return scar_error_set(err, SCAR_EMISMATCH, "lda: unexpected state layout");
	for (uint64_t b = b0; b < b1; b++)
		if ((rc = scar_lda_sample_block(t->m, st, (uint32_t)b, seed, err)))
			return rc;
	for (uint32_t q = 0; q < t->tp->P; q++) {
		uint64_t d0, d1;

		lda_blocks(t, q, &d0, &d1);
		t->ld_cnt[q] = (int)(t->ldi.doc_start[d1] - t->ldi.doc_start[d0]);
		t->ld_displ[q] = (int)t->ldi.doc_start[d0];
	}
	scar_tp_allgatherv(t->tp, NULL, z->data, t->ld_cnt, t->ld_displ, sizeof(uint32_t));
	return scar_lda_sweep_end(t->m, st, err);
}

static int lda_dist_objective(struct scar_dist_model *t, const struct scar_state *st, double *out,
			      struct scar_error *err)
{
	uint64_t d0 = scar_dist_part_lo(t->ldi.docs, t->tp->R, t->tp->P);
	uint64_t d1 = scar_dist_part_lo(t->ldi.docs, t->tp->R + 1, t->tp->P);
	double sum = 0;
	int rc;

	if ((rc = scar_lda_doc_logliks(t->m, st, d0, d1, t->ld_ll + d0, err)))
		return rc;
	for (uint32_t q = 0; q < t->tp->P; q++) {
		t->ld_cnt[q] = (int)(scar_dist_part_lo(t->ldi.docs, q + 1, t->tp->P) -
				     scar_dist_part_lo(t->ldi.docs, q, t->tp->P));
		t->ld_displ[q] = (int)scar_dist_part_lo(t->ldi.docs, q, t->tp->P);
	}
	scar_tp_allgatherv(t->tp, NULL, t->ld_ll, t->ld_cnt, t->ld_displ, sizeof(double));
	for (uint64_t d = 0; d < t->ldi.docs; d++)
		sum += t->ld_ll[d];
	*out = scar_lda_objective_of(t->m, sum);
	return 0;
}

/* The model on every rank (it loaded the corpus); the buffers. */
static int lda_dist_setup(struct scar_model *m, const json_t *config, struct scar_transport *tp,
			  uint32_t shards, struct scar_dist_model **out, struct scar_error *err)
{
	struct scar_dist_model *t = calloc(1, sizeof(*t));
	int rc = 0;

	*out = NULL;
	if (!t)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	t->m = m;
	t->tp = tp;
	scar_lda_info(t->m, &t->ldi);
	if (t->ldi.tokens > INT_MAX || t->ldi.docs > INT_MAX) {
		rc = scar_error_set(err, SCAR_EUNSUPPORTED, "lda: too many tokens for MPI");
	} else {
		t->ld_ll = malloc((t->ldi.docs + 1) * sizeof(*t->ld_ll));
		t->ld_cnt = calloc(t->tp->P, sizeof(*t->ld_cnt));
		t->ld_displ = calloc(t->tp->P, sizeof(*t->ld_displ));
		if (!t->ld_ll || !t->ld_cnt || !t->ld_displ)
			rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
	}
	if (rc)
		lda_dist_free(t);
	else
		*out = t;
	return rc;
}

/* The model checks the layout at every step and objective. */
static const struct scar_model_dist lda_dist = {
	.every_rank = 1,	/* the blocks' sampling is the model's own */
	.setup = lda_dist_setup,
	.step = lda_dist_step,
	.objective = lda_dist_objective,
	.free = lda_dist_free,
};

const struct scar_model_def scar_model_lda = {
	.name = "lda",
	.summary = "latent Dirichlet allocation by collapsed Gibbs sampling (one sweep per iteration)",
	.objective_name = "loglik_per_token",
	.objective_higher_better = 1,
	.heldout_name = "heldout_loglik_per_token",
	.heldout_higher_better = 1,
	.configure = lda_configure,
	.keys = lda_keys,
	.create = lda_create,
	.init_state = lda_init_state,
	.step = lda_step,
	.objective = lda_objective,
	.heldout = lda_heldout,
	.contraction = NULL,
	.dist_to_opt = NULL,
	.free = lda_free,
	.effective = lda_effective,
	.rebuild = lda_rebuild,
	.dist = &lda_dist,
};
