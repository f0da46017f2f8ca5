/* test-diff.c - norms against a quad-precision reference, and snapshot diffs. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "scar/arrayfile.h"
#include "scar/ckpt.h"
#include "scar/diff.h"
#include "scar/rng.h"
#include "unit.h"

#ifdef __SIZEOF_FLOAT128__
__extension__ typedef __float128 quad;
#else
typedef long double quad;
#endif

static const char *dir;	/* the scratch directory (unit.h) */

static double relerr(double got, quad want)
{
	quad d = (quad)got - want;

	if (d < 0)
		d = -d;
	return want == 0 ? (double)d : (double)(d / want);
}

/* Reference sums in quad precision of |a-b| and (a-b)^2 (a-b exact in quad). */
static void reference(const double *a, const double *b, size_t n, quad *l1, quad *l2sq)
{
	*l1 = 0;
	*l2sq = 0;
	for (size_t i = 0; i < n; i++) {
		quad d = (quad)a[i] - (quad)b[i];

		if (d < 0)
			d = -d;
		*l1 += d;
		*l2sq += d * (quad)d;
	}
}

/*
 * One huge term then ten million ones: a plain double loop drops every
 * one (1e16 + 1 == 1e16), a compensated one keeps them.
 */
static void test_adversarial(void)
{
	size_t n = 10000000;
	double *a = malloc(n * sizeof(double)), *b = calloc(n, sizeof(double));
	double naive = 0;
	quad l1, l2sq;
	struct scar_diff_acc acc;
	struct scar_norms nr;
	struct scar_rng rng;

	CHECK(a && b);
	if (!a || !b)
		return;
	a[0] = 1e16;
	for (size_t i = 1; i < n; i++)
		a[i] = 1.0;
	scar_diff_acc_init(&acc);
	scar_diff_acc_add(&acc, a, b, SCAR_F64, n);
	scar_diff_acc_result(&acc, &nr);
	reference(a, b, n, &l1, &l2sq);
	for (size_t i = 0; i < n; i++)
		naive += a[i];
	CHECK(relerr(naive, l1) > 1e-12);	/* the data does defeat a plain sum */
	CHECK(relerr(nr.l1, l1) < 256 * 0x1p-53);
	CHECK(nr.changed == n && nr.elements == n);
	CHECK(nr.linf == 1e16);

	/* magnitudes over 20 decades, mixed signs, in awkward piece sizes */
	scar_rng_seed(&rng, 42);
	for (size_t i = 0; i < n; i++) {
		a[i] = (scar_rng_uniform(&rng) - 0.5) * pow(10, 20 * scar_rng_uniform(&rng) - 10);
		b[i] = (scar_rng_uniform(&rng) - 0.5) * pow(10, 20 * scar_rng_uniform(&rng) - 10);
	}
	scar_diff_acc_init(&acc);
	for (size_t off = 0, step = 1; off < n; off += step, step = step * 3 % 100003 + 1) {
		size_t m = n - off < step ? n - off : step;

		scar_diff_acc_add(&acc, a + off, b + off, SCAR_F64, m);
	}
	scar_diff_acc_result(&acc, &nr);
	reference(a, b, n, &l1, &l2sq);
	CHECK(relerr(nr.l1, l1) < 1e-13);
	CHECK(relerr(nr.l2 * nr.l2, l2sq) < 1e-13);
	CHECK(nr.elements == n);
	free(a);
	free(b);
}

/* The hand-vectorised f32 kernel sums exactly as the generic one does on the same values. */
static void test_f32_kernel(void)
{
	size_t n = 100003;
	float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));
	double *a8 = malloc(n * sizeof(double)), *b8 = malloc(n * sizeof(double));
	struct scar_diff_acc x, y;
	struct scar_rng rng;

	CHECK(a && b && a8 && b8);
	if (!a || !b || !a8 || !b8)
		return;
	scar_rng_seed(&rng, 11);
	for (size_t i = 0; i < n; i++) {
		a[i] = (float)(scar_rng_normal(&rng) * 100);
		b[i] = i % 7 ? a[i] + (float)scar_rng_normal(&rng) : a[i];
		a8[i] = a[i];
		b8[i] = b[i];
	}
	for (size_t off = 0, step = 1; off < n; off += step, step = step * 5 % 4099 + 1) {
		size_t m = n - off < step ? n - off : step;

		scar_diff_acc_init(&x);
		scar_diff_acc_init(&y);
		scar_diff_acc_add(&x, a + off, b + off, SCAR_F32, m);
		scar_diff_acc_add(&y, a8 + off, b8 + off, SCAR_F64, m);
		CHECK(memcmp(&x, &y, sizeof(x)) == 0);
	}
	scar_diff_acc_init(&x);
	scar_diff_acc_init(&y);
	scar_diff_acc_add(&x, a, b, SCAR_F32, n);
	scar_diff_acc_add(&y, a8, b8, SCAR_F64, n);
	CHECK(memcmp(&x, &y, sizeof(x)) == 0);
	CHECK(x.changed == n - (n + 6) / 7);
	free(a);
	free(b);
	free(a8);
	free(b8);
}

static void test_small(void)
{
	float a[] = { 1, 2, 3, 4, 5 }, b[] = { 1, 2, 0, 4, 9 };
	int32_t ia[] = { 5, -3 }, ib[] = { 5, 3 };
	double x[] = { 1, NAN }, y[] = { 1, 1 };
	struct scar_diff_acc acc;
	struct scar_norms n;

	scar_diff_acc_init(&acc);
	scar_diff_acc_add(&acc, a, b, SCAR_F32, 5);
	scar_diff_acc_result(&acc, &n);
	CHECK(n.l1 == 7 && n.l2 == 5 && n.linf == 4 && n.changed == 2 && n.elements == 5);
	CHECK_NEAR(n.norm_b, sqrt(1 + 4 + 0 + 16 + 81), 1e-12);
	CHECK_NEAR(n.rel_l2, 5 / sqrt(102.0), 1e-15);
	scar_diff_acc_init(&acc);
	scar_diff_acc_add(&acc, ia, ib, SCAR_I32, 2);
	scar_diff_acc_result(&acc, &n);
	CHECK(n.l1 == 6 && n.linf == 6 && n.changed == 1);
	scar_diff_acc_init(&acc);
	scar_diff_acc_add(&acc, x, y, SCAR_F64, 2);
	scar_diff_acc_result(&acc, &n);
	CHECK(isnan(n.l2) && isnan(n.linf) && n.changed == 1);
	scar_diff_acc_init(&acc);
	scar_diff_acc_result(&acc, &n);
	CHECK(n.l2 == 0 && n.rel_l2 == 0 && n.elements == 0);
	CHECK_NEAR(scar_norm_l2(b, SCAR_F32, 5), sqrt(102.0), 1e-12);
}

static struct scar_state *mkstate(uint32_t shards)
{
	struct scar_state *s = unit_state("test", shards);

	s->iteration = 7;
	unit_state_add(s, unit_tensor("w", SCAR_F32, SCAR_ROLE_PARAM, 12, 3, 0));
	unit_state_add(s, unit_tensor("b", SCAR_F64, SCAR_ROLE_PARAM, 12, 0, 1));
	unit_state_add(s, unit_tensor("rng", SCAR_U64, SCAR_ROLE_STATE, 6, 0, 3));
	return s;
}

struct rows_seen {
	int n;
	double sumsq;
};

static int count_rows(void *ctx, const struct scar_diff_result *r, const struct scar_diff_row *row)
{
	struct rows_seen *s = ctx;

	CHECK(row->tensor < r->ntensors);
	CHECK(row->shard == row->row % r->nshards);
	s->n++;
	s->sumsq += row->n.l2 * row->n.l2;
	return 0;
}

static void test_states(void)
{
	struct scar_state *a = mkstate(3), *b = mkstate(3);
	struct scar_diff_result *r = NULL;
	struct scar_diff_opts o;
	struct rows_seen seen = { 0, 0 };
	struct scar_tensor *w = scar_state_find(b, "w");
	const char *only = "b";
	struct scar_error e;
	json_t *j;

	CHECK_RC(scar_diff_states(a, b, NULL, &r, NULL));
	CHECK(r && r->total.l2 == 0 && r->total.changed == 0 && r->ntop == 0);
	CHECK(r && r->ntensors == 2 && r->nshards == 3);
	scar_diff_result_free(r);

	/* change rows 4 (shard 1) and 5 (shard 2) of w; drop rows 0-1 of b's w */
	((float *)w->data)[4 * 3 + 0] += 3;
	((float *)w->data)[5 * 3 + 2] -= 4;
	CHECK_RC(scar_tensor_init_present(w, 1, NULL));
	w->present[0] = w->present[1] = 0;
	((float *)w->data)[0] = 100;	/* absent: must not count */
	scar_diff_opts_init(&o);
	o.row_fn = count_rows;
	o.row_ctx = &seen;
	CHECK_RC(scar_diff_states(a, b, &o, &r, NULL));
	if (r) {
		CHECK(r->total.l2 == 5 && r->total.changed == 2 && r->total.linf == 4);
		CHECK(r->tensors[0].n.l1 == 7 && r->tensors[0].rows_compared == 10);
		CHECK(r->tensors[0].rows_only_a == 2 && r->tensors[0].nonly_a == 1);
		CHECK(r->tensors[0].only_a[0][0] == 0 && r->tensors[0].only_a[0][1] == 2);
		CHECK(r->rows_only_b == 0);
		CHECK(r->shards[1].l2 == 3 && r->shards[2].l2 == 4 && r->shards[0].l2 == 0);
		CHECK(r->ntop == 2 && r->top[0].row == 5 && r->top[0].n.l2 == 4 && r->top[1].row == 4);
		CHECK(seen.n == 10 + 12 && seen.sumsq == 25);
		j = scar_diff_result_json(r);
		CHECK(j && json_real_value(json_object_get(j, "l2")) == 5);
		CHECK(j && json_integer_value(json_object_get(j, "iteration_a")) == 7);
		CHECK(j && json_array_size(json_object_get(j, "shards")) == 3);
		CHECK(j && json_integer_value(json_object_get(json_object_get(j, "missing"),
							      "rows_only_a")) == 2);
		json_decref(j);
	}
	scar_diff_result_free(r);

	/* state tensors only on request; a named tensor alone */
	((uint64_t *)scar_state_find(b, "rng")->data)[0] += 1;
	scar_diff_opts_init(&o);
	o.all = 1;
	CHECK_RC(scar_diff_states(a, b, &o, &r, NULL));
	CHECK(r && r->ntensors == 3 && r->total.changed == 3);
	scar_diff_result_free(r);
	o.all = 0;
	o.names = &only;
	o.nnames = 1;
	CHECK_RC(scar_diff_states(a, b, &o, &r, NULL));
	CHECK(r && r->ntensors == 1 && r->total.l2 == 0);
	scar_diff_result_free(r);
	only = "nope";
	CHECK(scar_diff_states(a, b, &o, &r, &e) == SCAR_ENOTFOUND);

	/* layouts must agree */
	scar_state_find(b, "b")->dtype = SCAR_F32;
	CHECK(scar_diff_states(a, b, NULL, &r, &e) == SCAR_EMISMATCH);
	CHECK(strstr(e.msg, "'b'") != NULL);
	scar_state_free(a);
	scar_state_free(b);
}

/* The tensor list's orders: NaN first, ties by name, names in byte order; the JSON cut. */
static void test_order(void)
{
	struct scar_diff_result r;
	struct scar_diff_tensor t[4];
	static const char *const names[4] = { "d", "b", "a", "c" };
	static const double l2[4] = { 1, 2, 2, 0 }, linf[4] = { 1, 0.5, 0.5, 0 };
	size_t *o;
	json_t *j;

	memset(&r, 0, sizeof(r));
	memset(t, 0, sizeof(t));
	for (int i = 0; i < 4; i++) {
		snprintf(t[i].name, sizeof(t[i].name), "%s", names[i]);
		t[i].n.l2 = l2[i];
		t[i].n.linf = linf[i];
		t[i].n.rel_l2 = i == 3 ? NAN : 0.1 * i;
	}
	r.tensors = t;
	r.ntensors = 4;
	o = scar_diff_tensor_order(&r, SCAR_DIFF_SORT_L2);	/* a(2) b(2) d(1) c(0) */
	CHECK(o && o[0] == 2 && o[1] == 1 && o[2] == 0 && o[3] == 3);
	free(o);
	o = scar_diff_tensor_order(&r, SCAR_DIFF_SORT_LINF);	/* d(1) a b (0.5) c */
	CHECK(o && o[0] == 0 && o[1] == 2 && o[2] == 1 && o[3] == 3);
	free(o);
	o = scar_diff_tensor_order(&r, SCAR_DIFF_SORT_REL);	/* c(NaN) a(0.2) b(0.1) d(0) */
	CHECK(o && o[0] == 3 && o[1] == 2 && o[2] == 1 && o[3] == 0);
	free(o);
	o = scar_diff_tensor_order(&r, SCAR_DIFF_SORT_NAME);
	CHECK(o && o[0] == 2 && o[1] == 1 && o[2] == 3 && o[3] == 0);
	j = o ? scar_diff_result_json_list(&r, o, 2) : NULL;
	CHECK(j && json_array_size(json_object_get(j, "tensors")) == 2);
	CHECK(j && !strcmp(json_string_value(json_object_get(json_array_get(json_object_get(j,
		"tensors"), 1), "name")), "b"));
	CHECK(j && json_integer_value(json_object_get(j, "tensors_omitted")) == 2);
	json_decref(j);
	free(o);
	o = scar_diff_tensor_order(&r, SCAR_DIFF_SORT_FILE);
	CHECK(o && o[0] == 0 && o[3] == 3);
	free(o);
	r.ntensors = 0;
	CHECK(scar_diff_tensor_order(&r, SCAR_DIFF_SORT_L2) == NULL);
}

/* Files: npy against safetensors, large rows read in pieces, equals the in-memory diff. */
static void test_files(void)
{
	struct scar_state *a = NULL, *b = NULL;
	struct scar_diff_result *r1 = NULL, *r2 = NULL, *r3 = NULL;
	struct scar_tensor *big, *big2;
	struct scar_rng rng;
	struct scar_error e;

	CHECK_RC(scar_state_new(&a, "", NULL));
	CHECK_RC(scar_state_new(&b, "", NULL));
	big = unit_tensor("emb", SCAR_F64, SCAR_ROLE_PARAM, 3, 70000, 0);	/* 560 KB rows */
	big2 = unit_tensor("emb", SCAR_F64, SCAR_ROLE_PARAM, 3, 70000, 0);
	scar_rng_seed(&rng, 1);
	for (uint64_t i = 0; i < scar_tensor_elems(big2); i++)
		((double *)big2->data)[i] += scar_rng_normal(&rng) * 1e-2;
	CHECK_RC(scar_state_add(a, big, NULL));
	CHECK_RC(scar_state_add(b, big2, NULL));
	CHECK_RC(scar_state_add(a, unit_tensor("w", SCAR_F32, SCAR_ROLE_PARAM, 100000, 3, 0), NULL));
	CHECK_RC(scar_state_add(b, unit_tensor("w", SCAR_F32, SCAR_ROLE_PARAM, 100000, 3, 0.5), NULL));
	{
		struct scar_tensor *z = NULL;
		uint64_t zs[2] = { 4, 0 };

		CHECK_RC(scar_tensor_new(&z, "z", SCAR_F32, SCAR_ROLE_PARAM, 2, zs, NULL));
		CHECK_RC(scar_state_add(a, z, NULL));
		CHECK_RC(scar_tensor_new(&z, "z", SCAR_F32, SCAR_ROLE_PARAM, 2, zs, NULL));
		CHECK_RC(scar_state_add(b, z, NULL));
	}
	CHECK_RC(scar_safetensors_write(unit_tmp("a.safetensors"), a, 0, NULL, NULL));
	CHECK_RC(scar_safetensors_write(unit_tmp("b.safetensors"), b, 0, NULL, NULL));
	CHECK_RC(scar_npy_write(unit_tmp("w.npy"), b->tensors[1], 0, NULL));
	CHECK_RC(scar_diff_states(a, b, NULL, &r1, NULL));
	CHECK_RC(scar_diff_files(unit_tmp("a.safetensors"), unit_tmp("b.safetensors"), NULL, &r2, NULL));
	if (r1 && r2) {
		CHECK(r2->ntensors == 3 && r2->nshards == 1);
		CHECK(r2->tensors[2].rows_compared == 4 && r2->tensors[2].n.elements == 0);
		CHECK(strcmp(r2->a.kind, "safetensors") == 0 && !r2->a.has_iteration);
		CHECK_NEAR(r2->total.l2, r1->total.l2, 1e-12 * r1->total.l2);
		CHECK_NEAR(r2->tensors[0].n.l1, r1->tensors[0].n.l1, 1e-12 * r1->tensors[0].n.l1);
		CHECK(r2->tensors[1].n.changed == 300000 && r2->tensors[1].n.linf == 0.5);
		CHECK(r2->top[0].tensor == 0 && r2->ntop == 3 + 7);
	}
	CHECK_RC(scar_diff_files(unit_tmp("a.safetensors"), unit_tmp("w.npy"), NULL, &r3, NULL));
	if (r3) {
		CHECK(r3->ntensors == 1 && r3->nonly_a == 2 && strcmp(r3->only_a[0], "emb") == 0);
		CHECK(strcmp(r3->b.kind, "npy") == 0);
		CHECK_NEAR(r3->total.l2, 0.5 * sqrt(300000.0), 1e-9);
	}
	scar_diff_result_free(r1);
	scar_diff_result_free(r2);
	scar_diff_result_free(r3);
	CHECK(scar_diff_files(unit_tmp("a.safetensors"), unit_tmp("missing"), NULL, &r3, &e) == SCAR_EIO);
	CHECK(r3 == NULL);
	CHECK(scar_diff_files("-", "-", NULL, &r3, &e) == SCAR_EINVAL);
	scar_state_free(a);
	scar_state_free(b);
}

/* Checkpoints: both partial with different rows, compared by section and by state. */
static void test_ckpt(void)
{
	struct scar_state *a = mkstate(4), *b = mkstate(4), *c = NULL;
	struct scar_diff_result *rf = NULL, *rs = NULL, *rc3 = NULL;
	struct scar_ckpt_save_opts so;
	struct scar_tensor *wa = scar_state_find(a, "w"), *wb = scar_state_find(b, "w");

	((float *)wb->data)[7 * 3] += 2;	/* row 7, in both */
	((float *)wb->data)[1 * 3] += 9;	/* row 1, only in b */
	CHECK_RC(scar_tensor_init_present(wa, 0, NULL));
	CHECK_RC(scar_tensor_init_present(wb, 0, NULL));
	for (int r = 3; r < 12; r++)
		wa->present[r] = 1;
	for (int r = 0; r < 9; r++)
		wb->present[r] = 1;
	scar_ckpt_save_opts_init(&so);
	so.sync = 0;
	CHECK_RC(scar_ckpt_save(a, unit_tmp("a.ckpt"), &so, NULL));
	CHECK_RC(scar_ckpt_save(b, unit_tmp("b.ckpt"), &so, NULL));
	CHECK_RC(scar_diff_files(unit_tmp("a.ckpt"), unit_tmp("b.ckpt"), NULL, &rf, NULL));
	CHECK_RC(scar_diff_states(a, b, NULL, &rs, NULL));
	if (rf && rs) {
		CHECK(rf->total.l2 == 2 && rs->total.l2 == 2 && !rf->loaded_whole);
		CHECK(rf->tensors[0].rows_compared == 6 && rs->tensors[0].rows_compared == 6);
		CHECK(rf->tensors[0].rows_only_a == 3 && rf->tensors[0].rows_only_b == 3);
		CHECK(rf->tensors[0].nonly_a == 1 && rf->tensors[0].only_a[0][0] == 9 &&
		      rf->tensors[0].only_a[0][1] == 3);
		CHECK(rf->tensors[0].nonly_b == 1 && rf->tensors[0].only_b[0][0] == 0 &&
		      rf->tensors[0].only_b[0][1] == 3);
		CHECK(rf->shards[3].l2 == 2 && rf->ntop == 1 && rf->top[0].row == 7);
		CHECK(rf->a.has_iteration && rf->a.iteration == 7 && strcmp(rf->a.kind, "ckpt") == 0);
	}
	/* another shard count: rows are matched one by one */
	CHECK_RC(scar_state_clone(&c, b, NULL));
	if (c) {
		c->shards = 3;
		CHECK_RC(scar_ckpt_save(c, unit_tmp("c.ckpt"), &so, NULL));
		CHECK_RC(scar_diff_files(unit_tmp("a.ckpt"), unit_tmp("c.ckpt"), NULL, &rc3, NULL));
		CHECK(rc3 && rc3->loaded_whole && rc3->total.l2 == 2 && rc3->nshards == 4);
	}
	scar_diff_result_free(rf);
	scar_diff_result_free(rs);
	scar_diff_result_free(rc3);
	scar_state_free(a);
	scar_state_free(b);
	scar_state_free(c);
}

int main(void)
{
	dir = unit_scratch("diff");
	test_small();
	test_f32_kernel();
	test_adversarial();
	test_states();
	test_order();
	test_files();
	test_ckpt();
	unit_scratch_remove();
	return unit_done("test-diff");
}
