/* test-perturb.c - every perturbation kind, its selection and its determinism. */
#include <string.h>

#include "scar/diff.h"
#include "scar/perturb.h"
#include "unit.h"

static struct scar_state *mkstate(void)
{
	struct scar_state *s = NULL;
	struct scar_tensor *w = NULL, *b = NULL, *c = NULL, *rng = NULL;
	uint64_t sw[2] = { 40, 5 }, sb[1] = { 40 }, sc[1] = { 40 }, sr[1] = { 6 };

	CHECK_RC(scar_state_new(&s, "test", NULL));
	s->shards = 4;
	CHECK_RC(scar_tensor_new(&w, "w", SCAR_F32, SCAR_ROLE_PARAM, 2, sw, NULL));
	CHECK_RC(scar_tensor_new(&b, "b", SCAR_F64, SCAR_ROLE_PARAM, 1, sb, NULL));
	CHECK_RC(scar_tensor_new(&c, "counts", SCAR_I32, SCAR_ROLE_PARAM, 1, sc, NULL));
	CHECK_RC(scar_tensor_new(&rng, "rng", SCAR_U64, SCAR_ROLE_STATE, 1, sr, NULL));
	for (uint64_t i = 0; i < 200; i++)
		((float *)w->data)[i] = (float)(i % 13) - 6.25f;
	for (uint64_t i = 0; i < 40; i++) {
		((double *)b->data)[i] = 1.0 / (double)(i + 1);
		((int32_t *)c->data)[i] = (int32_t)i - 20;
	}
	for (uint64_t i = 0; i < 6; i++)
		((uint64_t *)rng->data)[i] = i + 11;
	CHECK_RC(scar_state_add(s, w, NULL));
	CHECK_RC(scar_state_add(s, b, NULL));
	CHECK_RC(scar_state_add(s, c, NULL));
	CHECK_RC(scar_state_add(s, rng, NULL));
	return s;
}

static int same(const struct scar_state *a, const struct scar_state *b)
{
	for (size_t i = 0; i < a->ntensors; i++)
		if (memcmp(a->tensors[i]->data, b->tensors[i]->data, scar_tensor_bytes(a->tensors[i])))
			return 0;
	return 1;
}

static double delta(const struct scar_state *a, const struct scar_state *b)
{
	struct scar_diff_result *r = NULL;
	double l2 = -1;

	CHECK_RC(scar_diff_states(a, b, NULL, &r, NULL));
	if (r)
		l2 = r->total.l2;
	scar_diff_result_free(r);
	return l2;
}

static void test_halves(void)
{
	int bad = 0;

	CHECK(scar_f32_to_f16(1.0f) == 0x3c00);
	CHECK(scar_f32_to_f16(-2.0f) == 0xc000);
	CHECK(scar_f32_to_f16(65504.0f) == 0x7bff);
	CHECK(scar_f32_to_f16(65519.0f) == 0x7bff);
	CHECK(scar_f32_to_f16(65520.0f) == 0x7c00);
	CHECK(scar_f32_to_f16(0x1p-24f) == 0x0001);
	CHECK(scar_f32_to_f16(0x1p-25f) == 0x0000);	/* tie to even */
	CHECK(scar_f32_to_f16(0x1.8p-25f) == 0x0001);
	CHECK(scar_f32_to_f16(0x1p-14f) == 0x0400);
	CHECK(scar_f32_to_f16(0.1f) == 0x2e66);
	CHECK(scar_f32_to_f16(1.0f + 0x1p-11f) == 0x3c00);	/* tie to even */
	CHECK(scar_f32_to_f16(1.0f + 0x3p-11f) == 0x3c02);
	CHECK(isnan(scar_f16_to_f32(scar_f32_to_f16(NAN))));
	CHECK(isinf(scar_f16_to_f32(scar_f32_to_f16(-INFINITY))));
	/* every finite half survives the round trip */
	for (uint32_t h = 0; h < 0x10000; h++) {
		if ((h & 0x7c00) == 0x7c00)
			continue;
		if (scar_f32_to_f16(scar_f16_to_f32((uint16_t)h)) != h)
			bad++;
	}
	CHECK(bad == 0);
	CHECK(scar_f32_to_bf16(1.0f) == 0x3f80);
	CHECK(scar_bf16_to_f32(0x3f80) == 1.0f);
	CHECK(scar_f32_to_bf16(1.0f + 0x1p-8f) == 0x3f80);	/* tie to even */
	CHECK(scar_f32_to_bf16(1.0f + 0x3p-8f) == 0x3f82);
	CHECK(isnan(scar_bf16_to_f32(scar_f32_to_bf16(NAN))));
	/* from a double, rounded once: a float would land on the tie and round down */
	CHECK(scar_f64_to_f16(1.0 + 0x1p-11 + 0x1p-40) == 0x3c01);
	CHECK(scar_f64_to_f16(1.0 + 0x1p-11) == 0x3c00);
	CHECK(scar_f64_to_f16(-(1.0 + 0x1p-11 + 0x1p-40)) == 0xbc01);
	CHECK(scar_f64_to_f16(0x1p-25 + 0x1p-60) == 0x0001);
	CHECK(scar_f64_to_f16(1e300) == 0x7c00 && scar_f64_to_f16(65519.99) == 0x7bff);
	CHECK(scar_f64_to_bf16(1.0 + 0x1p-8 + 0x1p-40) == 0x3f81);
	CHECK(scar_f64_to_bf16(1.0 + 0x1p-8) == 0x3f80);
	CHECK(scar_f64_to_bf16(1e300) == 0x7f80 && scar_f64_to_bf16(-1e-300) == 0x8000);
	CHECK(scar_f64_to_bf16(0x1p-134 + 0x1p-180) == 0x0001);
	CHECK(isnan(scar_f16_to_f32(scar_f64_to_f16(NAN))));
	for (uint32_t h = 0; h < 0x10000; h++) {
		if ((h & 0x7c00) != 0x7c00 && scar_f64_to_f16(scar_f16_to_f32((uint16_t)h)) != h)
			bad++;
		if ((h & 0x7f80) != 0x7f80 && scar_f64_to_bf16(scar_bf16_to_f32((uint16_t)h)) != h)
			bad++;
	}
	CHECK(bad == 0);
	CHECK(scar_dtype_size(SCAR_F16) == 2 && scar_dtype_size(SCAR_BF16) == 2);
	CHECK(scar_dtype_parse("f16") == SCAR_F16 && scar_dtype_parse("bf16") == SCAR_BF16);
	CHECK(strcmp(scar_dtype_name(SCAR_BF16), "bf16") == 0);
}

static uint64_t popdiff(const struct scar_tensor *a, const struct scar_tensor *b, uint64_t mask);

/* A state of one f16 and one bf16 parameter tensor, and the same widened to f32. */
static struct scar_state *mkhalf(int widened)
{
	struct scar_state *s = NULL;
	const char *names[2] = { "h", "b" };
	enum scar_dtype dt[2] = { SCAR_F16, SCAR_BF16 };
	uint64_t sh[2] = { 24, 3 };

	CHECK_RC(scar_state_new(&s, "", NULL));
	s->shards = 4;
	for (int i = 0; i < 2; i++) {
		struct scar_tensor *t = NULL;

		CHECK_RC(scar_tensor_new(&t, names[i], widened ? SCAR_F32 : dt[i], SCAR_ROLE_PARAM, 2,
					 sh, NULL));
		for (uint64_t k = 0; k < 72; k++)
			scar_tensor_set(t, k, dt[i] == SCAR_F16 ? ((double)(k % 11) - 5) / 7 :
					      ((double)(k % 7) - 3) * 1.1e30);
		if (widened)	/* the f32 value of the rounded half */
			for (uint64_t k = 0; k < 72; k++)
				((float *)t->data)[k] = dt[i] == SCAR_F16 ?
					scar_f16_to_f32(scar_f64_to_f16(((double)(k % 11) - 5) / 7)) :
					scar_bf16_to_f32(scar_f64_to_bf16(((double)(k % 7) - 3) * 1.1e30));
		CHECK_RC(scar_state_add(s, t, NULL));
	}
	return s;
}

static void test_halves_perturbed(void)
{
	struct scar_state *s = mkhalf(0), *orig = mkhalf(0), *w = mkhalf(1), *w2;
	struct scar_select sel;
	struct scar_perturb_report rep;
	struct scar_rng rng;
	struct scar_error e;
	uint8_t lost[4] = { 0, 1, 0, 0 }, none[4] = { 0 };
	double got;

	scar_select_init(&sel);
	scar_rng_seed(&rng, 9);
	/* the same values in f16/bf16 and in f32 are no difference */
	CHECK(delta(s, orig) == 0);
	CHECK(scar_perturb_norm(s, &sel) == scar_perturb_norm(w, &sel));
	/* nothing perturbed is exactly nothing changed */
	CHECK_RC(scar_perturb_noise(s, &sel, 0, &rng, &got, &rep, NULL));
	CHECK_RC(scar_perturb_lose(s, &sel, none, SCAR_RESET_ZERO, NULL, &rng, &rep, NULL));
	CHECK(same(s, orig) && delta(s, orig) == 0);
	/* noise reaches its norm in f16 (bf16's 1e30 values take none: selected alone) */
	sel.tensor = "h";
	CHECK_RC(scar_perturb_noise(s, &sel, 0.5, &rng, &got, &rep, NULL));
	CHECK_NEAR(got, 0.5, 0.5 * SCAR_NOISE_TOLERANCE);
	CHECK_NEAR(delta(s, orig), got, 1e-12);
	CHECK(rep.tensors == 1 && rep.rows == 24);
	CHECK(memcmp(s->tensors[1]->data, orig->tensors[1]->data, 144) == 0);
	/* noise past f16's largest finite value is refused and changes nothing */
	CHECK_RC(scar_state_clone(&w2, s, NULL));
	CHECK(scar_perturb_noise(s, &sel, 1e6, &rng, &got, &rep, &e) == SCAR_ERANGE);
	CHECK(strstr(e.msg, "'h' (f16)") != NULL);
	CHECK(same(s, w2));
	scar_state_free(w2);
	/* bf16 too, at its own scale */
	sel.tensor = "b";
	CHECK_RC(scar_perturb_noise(s, &sel, 3e29, &rng, &got, &rep, NULL));
	CHECK_NEAR(got, 3e29, 3e29 * SCAR_NOISE_TOLERANCE);
	/* lost rows restored from the original are the original's bytes */
	sel.tensor = NULL;
	CHECK_RC(scar_perturb_lose(s, &sel, lost, SCAR_RESET_ZERO, NULL, &rng, &rep, NULL));
	for (uint64_t r = 1; r < 24; r += 4)
		CHECK(scar_tensor_get(s->tensors[0], r * 3) == 0);
	/* bit classes: f16 has 5 exponent and 10 mantissa bits, bf16 8 and 7 */
	scar_state_free(s);
	CHECK_RC(scar_state_clone(&s, orig, NULL));
	sel.tensor = "h";
	CHECK_RC(scar_perturb_bitflip_count(s, &sel, SCAR_BITS_EXPONENT, 72 * 5, &rng, &rep, NULL));
	CHECK(popdiff(s->tensors[0], orig->tensors[0], 0x7c00) == 72 * 5);
	sel.tensor = "b";
	CHECK_RC(scar_perturb_bitflip_count(s, &sel, SCAR_BITS_MANTISSA, 72 * 7, &rng, &rep, NULL));
	CHECK(popdiff(s->tensors[1], orig->tensors[1], 0x7f) == 72 * 7);
	/* quantizing bf16 to bf16 changes nothing */
	CHECK_RC(scar_perturb_quantize(s, &sel, SCAR_QUANT_BF16, &rep, NULL));
	CHECK(popdiff(s->tensors[1], orig->tensors[1], 0x7f) == 72 * 7);
	/* mixing with itself changes nothing; halfway to the original is rounded to even */
	scar_state_free(s);
	CHECK_RC(scar_state_clone(&s, orig, NULL));
	sel.tensor = NULL;
	CHECK_RC(scar_perturb_mix(s, &sel, orig, 0.5, &rep, NULL));
	CHECK(same(s, orig));
	scar_state_free(s);
	scar_state_free(orig);
	scar_state_free(w);
}

static void test_lose(void)
{
	struct scar_state *s = mkstate(), *orig = mkstate(), *src = mkstate(), *s2;
	struct scar_select sel;
	struct scar_perturb_report rep;
	struct scar_rng rng, rng2;
	struct scar_error e;
	uint8_t lost[4], lost2[4];
	int n = 0;

	scar_rng_seed(&rng, 5);
	CHECK_RC(scar_perturb_pick_shards(4, 2, &rng, lost, NULL));
	for (int i = 0; i < 4; i++)
		n += lost[i];
	CHECK(n == 2);
	scar_rng_seed(&rng2, 5);
	CHECK_RC(scar_perturb_pick_shards(4, 2, &rng2, lost2, NULL));
	CHECK(memcmp(lost, lost2, 4) == 0);
	CHECK(scar_perturb_pick_shards(4, 5, &rng, lost, &e) == SCAR_ERANGE);

	memset(lost, 0, 4);
	lost[1] = 1;
	scar_select_init(&sel);
	CHECK_RC(scar_perturb_lose(s, &sel, lost, SCAR_RESET_ZERO, NULL, NULL, &rep, NULL));
	CHECK(rep.tensors == 3 && rep.rows == 30 && rep.elements == 10 * 5 + 10 + 10);
	CHECK(((float *)s->tensors[0]->data)[5 * 1] == 0 && ((double *)s->tensors[1]->data)[5] == 0);
	CHECK(((double *)s->tensors[1]->data)[4] == 1.0 / 5);
	CHECK(memcmp(s->tensors[3]->data, orig->tensors[3]->data, 48) == 0);	/* state untouched */

	/* restricted to a tensor and a row range; from a source */
	for (uint64_t i = 0; i < 40; i++)
		((double *)src->tensors[1]->data)[i] = 100;
	sel.tensor = "b";
	sel.row_lo = 10;
	sel.row_hi = 20;
	CHECK_RC(scar_perturb_lose(s, &sel, lost, SCAR_RESET_FROM, src, NULL, &rep, NULL));
	CHECK(rep.rows == 2);	/* of rows 10..19, shard 1 has 13 and 17 */
	CHECK(((double *)s->tensors[1]->data)[13] == 100 && ((double *)s->tensors[1]->data)[17] == 100);
	CHECK(((double *)s->tensors[1]->data)[21] == 0 && ((double *)s->tensors[1]->data)[9] == 0);
	/* a source missing a row */
	CHECK_RC(scar_tensor_init_present(src->tensors[1], 1, NULL));
	src->tensors[1]->present[17] = 0;
	CHECK(scar_perturb_lose(s, &sel, lost, SCAR_RESET_FROM, src, NULL, &rep, &e) == SCAR_ENOTFOUND);
	CHECK(strstr(e.msg, "row 17") != NULL);
	sel.tensor = "nope";
	CHECK(scar_perturb_lose(s, &sel, lost, SCAR_RESET_ZERO, NULL, NULL, &rep, &e) == SCAR_ENOTFOUND);

	/* random reset: deterministic per seed */
	scar_state_free(s);
	s = mkstate();
	s2 = mkstate();
	scar_select_init(&sel);
	scar_rng_seed(&rng, 9);
	scar_rng_seed(&rng2, 9);
	CHECK_RC(scar_perturb_lose(s, &sel, lost, SCAR_RESET_RANDOM, NULL, &rng, &rep, NULL));
	CHECK_RC(scar_perturb_lose(s2, &sel, lost, SCAR_RESET_RANDOM, NULL, &rng2, &rep, NULL));
	CHECK(same(s, s2) && !same(s, orig));
	scar_state_free(s);
	scar_state_free(s2);
	scar_state_free(orig);
	scar_state_free(src);
}

static void test_noise(void)
{
	struct scar_state *s = mkstate(), *orig = mkstate(), *s2 = mkstate();
	struct scar_select sel;
	struct scar_perturb_report rep;
	struct scar_rng rng, rng2;
	struct scar_error e;
	double got, n0;

	scar_select_init(&sel);
	scar_rng_seed(&rng, 3);
	CHECK_RC(scar_perturb_noise(s, &sel, 0.75, &rng, &got, &rep, NULL));
	CHECK_NEAR(got, 0.75, 1e-11);	/* f32 and f64 elements: the granularity of f32 */
	CHECK_NEAR(delta(s, orig), got, 1e-15);
	CHECK(rep.tensors == 2 && rep.rows == 80);	/* w and b; the i32 tensor is skipped */
	CHECK(memcmp(s->tensors[2]->data, orig->tensors[2]->data, 160) == 0);
	/* f64 alone reaches the norm to rounding */
	scar_state_free(s2);
	s2 = mkstate();
	sel.tensor = "b";
	CHECK_RC(scar_perturb_noise(s2, &sel, 1e-3, &rng, &got, &rep, NULL));
	CHECK_NEAR(got, 1e-3, 1e-18);
	CHECK_NEAR(delta(s2, orig), got, 1e-18);
	sel.tensor = NULL;
	scar_state_free(s2);
	s2 = mkstate();
	scar_rng_seed(&rng2, 3);
	CHECK_RC(scar_perturb_noise(s2, &sel, 0.75, &rng2, &got, &rep, NULL));
	CHECK(same(s, s2));

	/* relative to the norm of one shard of one tensor */
	scar_state_free(s);
	s = mkstate();
	sel.tensor = "w";
	sel.shard = 2;
	n0 = scar_perturb_norm(s, &sel);
	CHECK(n0 > 0);
	CHECK_RC(scar_perturb_noise(s, &sel, 0.01 * n0, &rng, &got, &rep, NULL));
	CHECK(rep.rows == 10);
	CHECK_NEAR(delta(s, orig), 0.01 * n0, 1e-9 * n0);
	for (uint64_t r = 0; r < 40; r++)
		if (r % 4 != 2)
			CHECK(memcmp(scar_tensor_row(s->tensors[0], r), scar_tensor_row(orig->tensors[0], r),
				     20) == 0);
	/* A named integer tensor takes noise rounded to whole numbers. */
	scar_state_free(s);
	s = mkstate();
	sel.tensor = "counts";
	sel.shard = -1;
	CHECK_RC(scar_perturb_noise(s, &sel, 5, &rng, &got, &rep, &e));
	CHECK(got > 2 && got < 10);
	CHECK_NEAR(delta(s, orig) * delta(s, orig) - floor(delta(s, orig) * delta(s, orig) + 0.5), 0,
		   1e-9);	/* a sum of squared whole numbers */
	CHECK(rep.tensors == 1);
	scar_state_free(s);
	s = mkstate();
	sel.tensor = NULL;
	sel.shard = 4;
	CHECK(scar_perturb_noise(s, &sel, 1, &rng, &got, &rep, &e) == SCAR_ERANGE);
	scar_state_free(s);
	scar_state_free(s2);
	scar_state_free(orig);
}

static uint64_t popdiff(const struct scar_tensor *a, const struct scar_tensor *b, uint64_t mask)
{
	uint64_t n = 0, w = scar_dtype_size(a->dtype);

	for (uint64_t i = 0; i < scar_tensor_elems(a); i++) {
		uint64_t x = 0, y = 0;

		memcpy(&x, (const char *)a->data + i * w, w);
		memcpy(&y, (const char *)b->data + i * w, w);
		n += (uint64_t)__builtin_popcountll((x ^ y) & mask);
		CHECK(((x ^ y) & ~mask) == 0);
	}
	return n;
}

static void test_bitflip(void)
{
	struct scar_state *s = mkstate(), *orig = mkstate();
	struct scar_select sel;
	struct scar_perturb_report rep;
	struct scar_rng rng;
	struct scar_error e;
	uint64_t n;

	scar_select_init(&sel);
	scar_rng_seed(&rng, 7);
	CHECK_RC(scar_perturb_bitflip_count(s, &sel, SCAR_BITS_MANTISSA, 50, &rng, &rep, NULL));
	CHECK(rep.bits == 50);
	n = popdiff(s->tensors[0], orig->tensors[0], 0x7fffff) +
	    popdiff(s->tensors[1], orig->tensors[1], 0xfffffffffffffull);
	CHECK(n == 50);
	CHECK(popdiff(s->tensors[2], orig->tensors[2], 0) == 0);	/* ints have no mantissa */

	/* every sign bit of w */
	scar_state_free(s);
	s = mkstate();
	sel.tensor = "w";
	CHECK_RC(scar_perturb_bitflip_rate(s, &sel, SCAR_BITS_SIGN, 1.0, &rng, &rep, NULL));
	CHECK(rep.bits == 200 && rep.rows == 40);
	CHECK(popdiff(s->tensors[0], orig->tensors[0], 0x80000000u) == 200);
	/* a rate: about rate * bits, and no more than there are */
	scar_state_free(s);
	s = mkstate();
	sel.tensor = NULL;
	CHECK_RC(scar_perturb_bitflip_rate(s, &sel, SCAR_BITS_ANY, 0.05, &rng, &rep, NULL));
	/* eligible: 200*32 + 40*64 + 40*32 = 10240 bits, expect 512 +- 4 sigma (88) */
	CHECK(rep.bits > 424 && rep.bits < 600);
	CHECK(popdiff(s->tensors[0], orig->tensors[0], 0xffffffffu) +
	      popdiff(s->tensors[1], orig->tensors[1], ~0ull) +
	      popdiff(s->tensors[2], orig->tensors[2], 0xffffffffu) == rep.bits);
	CHECK(scar_perturb_bitflip_count(s, &sel, SCAR_BITS_SIGN, 200 + 40 + 40 + 1, &rng, &rep, &e) ==
	      SCAR_ERANGE);
	sel.tensor = "counts";
	CHECK(scar_perturb_bitflip_count(s, &sel, SCAR_BITS_EXPONENT, 1, &rng, &rep, &e) == SCAR_EINVAL);
	/* all eligible bits, exactly: every sign of counts */
	scar_state_free(s);
	s = mkstate();
	CHECK_RC(scar_perturb_bitflip_count(s, &sel, SCAR_BITS_SIGN, 40, &rng, &rep, NULL));
	CHECK(popdiff(s->tensors[2], orig->tensors[2], 0x80000000u) == 40);
	CHECK(scar_bits_parse("exponent") == SCAR_BITS_EXPONENT && !scar_bits_parse("x"));
	scar_state_free(s);
	scar_state_free(orig);
}

static void test_quantize_mix(void)
{
	struct scar_state *s = mkstate(), *orig = mkstate(), *old = mkstate();
	struct scar_select sel;
	struct scar_perturb_report rep;
	struct scar_error e;
	const double *b, *b0;

	scar_select_init(&sel);
	CHECK_RC(scar_perturb_quantize(s, &sel, SCAR_QUANT_INT8, &rep, NULL));
	CHECK(rep.tensors == 2 && rep.rows == 80);
	b = s->tensors[1]->data;
	b0 = orig->tensors[1]->data;
	/* rows of b are single elements: int8 with a per-row scale keeps them (up to the f32 scale) */
	for (int i = 0; i < 40; i++)
		CHECK_NEAR(b[i], b0[i], 1e-7 * b0[i]);
	for (int r = 0; r < 40; r++) {
		const float *x = scar_tensor_row(s->tensors[0], (uint64_t)r);
		const float *x0 = scar_tensor_row(orig->tensors[0], (uint64_t)r);
		double mx = 0;

		for (int k = 0; k < 5; k++)
			mx = fabs(x0[k]) > mx ? fabs(x0[k]) : mx;
		for (int k = 0; k < 5; k++)
			CHECK(fabs(x[k] - x0[k]) <= mx / 127 / 2 * 1.0001);
	}
	scar_state_free(s);
	s = mkstate();
	CHECK_RC(scar_perturb_quantize(s, &sel, SCAR_QUANT_F16, &rep, NULL));
	b = s->tensors[1]->data;
	CHECK(b[2] == (double)scar_f16_to_f32(scar_f32_to_f16(1.0f / 3)));
	CHECK(b[0] == 1.0);
	CHECK_RC(scar_perturb_quantize(s, &sel, SCAR_QUANT_BF16, &rep, NULL));
	CHECK(b[2] == (double)scar_bf16_to_f32(scar_f32_to_bf16((float)b[2])));
	CHECK(scar_quant_parse("bf16") == SCAR_QUANT_BF16 && !scar_quant_parse("f8"));

	/* staleness */
	scar_state_free(s);
	s = mkstate();
	for (int i = 0; i < 40; i++)
		((double *)old->tensors[1]->data)[i] = 0;
	CHECK_RC(scar_tensor_init_present(old->tensors[1], 1, NULL));
	old->tensors[1]->present[0] = 0;
	CHECK_RC(scar_perturb_mix(s, &sel, old, 0.25, &rep, NULL));
	b = s->tensors[1]->data;
	CHECK(b[0] == 1.0 && b[1] == 0.75 * 0.5 && rep.skipped == 1);
	CHECK(memcmp(s->tensors[0]->data, orig->tensors[0]->data, 800) == 0);	/* same values */
	CHECK(scar_perturb_mix(s, &sel, old, 1.5, &rep, &e) == SCAR_ERANGE);
	old->tensors[0]->dtype = SCAR_F64;
	CHECK(scar_perturb_mix(s, &sel, old, 0.5, &rep, &e) == SCAR_EMISMATCH);
	old->tensors[0]->dtype = SCAR_F32;
	scar_state_free(s);
	scar_state_free(old);
	scar_state_free(orig);
}

/* The one place selections are checked: what can touch nothing is an error. */
static void test_select_check(void)
{
	struct scar_select sel;
	struct scar_error e;

	scar_select_init(&sel);
	CHECK_RC(scar_select_check_rows("w", 50, 4, &sel, NULL));
	sel.row_lo = 40;
	CHECK_RC(scar_select_check_rows("w", 50, 4, &sel, NULL));	/* 40: stops at 50 */
	sel.row_lo = 50;
	scar_error_clear(&e);
	CHECK(scar_select_check_rows("w", 50, 4, &sel, &e) == SCAR_ERANGE);
	CHECK(strcmp(e.msg, "rows 50: are out of range for tensor 'w' (50 rows)") == 0);
	sel.row_lo = 40;
	sel.row_hi = 51;
	CHECK(scar_select_check_rows("w", 50, 4, &sel, &e) == SCAR_ERANGE);
	sel.row_lo = 60;
	sel.row_hi = 70;
	CHECK(scar_select_check_rows("w", 50, 4, &sel, &e) == SCAR_ERANGE);
	CHECK(strcmp(e.msg, "rows 60:70 are out of range for tensor 'w' (50 rows)") == 0);
	sel.row_lo = 4;
	sel.row_hi = 4;
	CHECK(scar_select_check_rows("w", 50, 4, &sel, &e) == SCAR_ERANGE);
	CHECK(strcmp(e.msg, "empty row range 4:4") == 0);
	/* shards: rows 4..6 hold shards 0 and 1 of 4 */
	sel.row_hi = 6;
	sel.shard = 1;
	CHECK_RC(scar_select_check_rows("w", 50, 4, &sel, NULL));
	sel.shard = 2;
	CHECK(scar_select_check_rows("w", 50, 4, &sel, &e) == SCAR_ERANGE);
	CHECK(strcmp(e.msg, "rows 4:6 of tensor 'w' (50 rows) hold no row of shard 2 of 4") == 0);
	sel.row_lo = 47;
	sel.row_hi = UINT64_MAX;
	sel.shard = 3;	/* 47 */
	CHECK_RC(scar_select_check_rows("w", 50, 4, &sel, NULL));
	sel.row_lo = 48;	/* 48, 49: shards 0, 1 */
	CHECK(scar_select_check_rows("w", 50, 4, &sel, &e) == SCAR_ERANGE);
	sel.row_lo = 0;
	sel.shard = 4;
	CHECK(scar_select_check_rows("w", 50, 4, &sel, &e) == SCAR_ERANGE);
	CHECK(strcmp(e.msg, "no shard 4 of tensor 'w' (4 shards)") == 0);

	/* lost shards */
	{
		const uint32_t ok[] = { 0, 3 }, bad[] = { 1, 4 };

		CHECK_RC(scar_shards_check(ok, 2, 0, 4, NULL));
		CHECK_RC(scar_shards_check(NULL, 0, 4, 4, NULL));
		CHECK(scar_shards_check(bad, 2, 0, 4, &e) == SCAR_ERANGE);
		CHECK(strcmp(e.msg, "shard 4 does not exist (there are 4 shards, 0..3)") == 0);
		CHECK(scar_shards_check(NULL, 0, 5, 4, &e) == SCAR_ERANGE);
	}
}

int main(void)
{
	test_select_check();
	test_halves();
	test_halves_perturbed();
	test_lose();
	test_noise();
	test_bitflip();
	test_quantize_mix();
	return unit_done("test-perturb");
}
