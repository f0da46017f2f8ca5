/*
 * test-transport.c - the one-process transport (lib/transport.h) and
 * every model's distributed step run over it (P = 1, R = 0), checked
 * against the model's one-process step, in every build, MPI or not:
 * bit-identical for mlr, mf (als, sgd) and lda, whose distributed steps
 * do the one-process step's floating-point operations in its order; for
 * ridge within a relative 1e-12, because its distributed pass sums each
 * dot product x.w in four partial sums (the one-process step in one
 * chain): the same terms reassociated, off by a few ulps of sum |x_j w_j|
 * per dot product, which the update's contraction (c < 1) does not let
 * grow.
 */
#include <string.h>

#include "scar/dist.h"
#include "scar/model.h"
#include "scar/tensor.h"
#include "transport.h"
#include "unit.h"

static void test_local(void)
{
	struct scar_transport t;
	struct scar_error err;
	double v[4] = { 1, 2, 3, 4 }, w[4] = { 0 }, s;
	int cnt[2] = { 4, 0 }, displ[2] = { 0, 0 };
	uint64_t order[5];

	scar_error_clear(&err);
	scar_transport_local(&t);
	CHECK(t.P == 1 && t.R == 0 && t.sent == 0);
	scar_tp_allgatherv(&t, v, w, cnt, displ, sizeof(double));
	CHECK(memcmp(v, w, sizeof(v)) == 0);
	memset(w, 0, sizeof(w));
	scar_tp_alltoallv(&t, v, cnt, displ, w, cnt, displ, sizeof(double));
	CHECK(memcmp(v, w, sizeof(v)) == 0);
	memset(w, 0, sizeof(w));
	scar_tp_sendrecv(&t, v, 3, 0, w, 3, 0, sizeof(double));
	CHECK(w[0] == 1 && w[2] == 3 && w[3] == 0);
	CHECK(scar_tp_sum_ordered(&t, 2.5, &s, &err) == 0 && s == 2.5);
	CHECK(scar_tp_agree(&t, 0, &err) == 0);
	scar_error_set(&err, SCAR_EINVAL, "x");
	CHECK(scar_tp_agree(&t, SCAR_EINVAL, &err) == SCAR_EINVAL);
	scar_error_clear(&err);
	CHECK(scar_tp_owned_rows(&t, 8, 5, cnt, displ, order, &err) == 0);
	CHECK(cnt[0] == 5 && displ[0] == 0 && order[0] == 0 && order[4] == 4);
	CHECK(t.sent == 0);	/* one process sends nothing */
}

/* A model, its configuration and a fresh state. */
struct run {
	const struct scar_model_def *def;
	json_t *cfg;
	struct scar_model *m;
	struct scar_state *st;
};

static int run_open(struct run *r, const char *model, const char *config)
{
	struct scar_error err;
	json_t *raw = json_loads(config, 0, NULL);

	memset(r, 0, sizeof(*r));
	scar_error_clear(&err);
	r->def = scar_model_find(model);
	if (!raw || !r->def || scar_model_configure(model, raw, &r->cfg, &err) ||
	    r->def->create(&r->m, r->cfg, &err) || scar_state_new(&r->st, model, &err)) {
		fprintf(stderr, "%s %s: %s\n", model, config, err.msg);
		json_decref(raw);
		return -1;
	}
	json_decref(raw);
	json_decref(r->st->config);
	r->st->config = json_incref(r->cfg);
	r->st->shards = 8;
	if (r->def->init_state(r->m, r->st, &err)) {
		fprintf(stderr, "%s: %s\n", model, err.msg);
		return -1;
	}
	return 0;
}

static void run_close(struct run *r)
{
	scar_state_free(r->st);
	if (r->m)
		r->def->free(r->m);
	json_decref(r->cfg);
}

/* Largest |a - b| / max(|b|) over a tensor of f64 or f32, 0 when bit-identical. */
static double tensor_reldiff(const struct scar_tensor *a, const struct scar_tensor *b)
{
	uint64_t n = scar_tensor_elems(a);
	double mx = 0, md = 0;

	if (!memcmp(a->data, b->data, scar_tensor_bytes(a)))
		return 0;
	for (uint64_t i = 0; i < n; i++) {
		double x, y;

		if (a->dtype == SCAR_F64) {
			x = ((const double *)a->data)[i];
			y = ((const double *)b->data)[i];
		} else if (a->dtype == SCAR_F32) {
			x = ((const float *)a->data)[i];
			y = ((const float *)b->data)[i];
		} else {
			return INFINITY;	/* integer tensors must match exactly */
		}
		mx = fmax(mx, fabs(y));
		md = fmax(md, fabs(x - y));
	}
	return md / (mx > 0 ? mx : 1);
}

/*
 * iters steps of the model's one-process step and of its distributed step
 * over the one-process transport, from the same state: every tensor and
 * every objective within rel (0: bit-identical).
 */
static void check_model(const char *model, const char *config, int iters, double rel)
{
	struct run one, dist;
	struct scar_transport tp;
	struct scar_dist_model *dm = NULL;
	struct scar_error err;
	const struct scar_model_dist *md;
	double worst = 0;

	scar_error_clear(&err);
	scar_transport_local(&tp);
	if (run_open(&one, model, config) || run_open(&dist, model, config)) {
		CHECK(!"model set up");
		return;
	}
	md = dist.def->dist;
	CHECK(md != NULL);
	if (!md)
		goto out;
	if (md->setup(dist.m, dist.cfg, &tp, dist.st->shards, &dm, &err) ||
	    (md->bind && md->bind(dm, dist.st, &err))) {
		fprintf(stderr, "%s: %s\n", model, err.msg);
		CHECK(!"distributed setup");
		goto out;
	}
	for (int it = 0; it <= iters; it++) {
		double o1, o2;

		CHECK(one.def->objective(one.m, one.st, &o1, &err) == 0);
		CHECK(md->objective(dm, dist.st, &o2, &err) == 0);
		if (rel == 0)
			CHECK(memcmp(&o1, &o2, sizeof(o1)) == 0);
		else
			CHECK_NEAR(o2, o1, rel * fabs(o1));
		if (it == iters)
			break;
		CHECK(one.def->step(one.m, one.st, &err) == 0);
		CHECK(md->step(dm, dist.st, &err) == 0);
		one.st->iteration++;
		dist.st->iteration++;
	}
	CHECK(one.st->ntensors == dist.st->ntensors);
	for (size_t i = 0; i < one.st->ntensors && i < dist.st->ntensors; i++) {
		const struct scar_tensor *a = dist.st->tensors[i], *b = one.st->tensors[i];
		double d;

		CHECK(strcmp(a->name, b->name) == 0 && scar_tensor_bytes(a) == scar_tensor_bytes(b));
		d = tensor_reldiff(a, b);
		worst = fmax(worst, d);
		if (!(d <= rel))
			fprintf(stderr, "%s %s: tensor '%s' differs by %g relative\n", model, config,
				a->name, d);
		CHECK(d <= rel);
	}
	if (rel > 0)
		printf("%s: distributed step within %g of one process (bound %g)\n", model, worst, rel);
	CHECK(tp.sent == 0);
out:
	if (dm)
		md->free(dm);
	run_close(&one);
	run_close(&dist);
}

/* mf's sgd with workers=1 is one chain of updates: its distributed setup refuses. */
static void test_mf_sgd_w1(void)
{
	struct run r;
	struct scar_transport tp;
	struct scar_dist_model *dm = NULL;
	struct scar_error err;

	scar_error_clear(&err);
	scar_transport_local(&tp);
	if (run_open(&r, "mf", "{\"users\":30,\"items\":20,\"rank\":3,\"solver\":\"sgd\"}")) {
		CHECK(!"model set up");
		return;
	}
	CHECK(r.def->dist->setup(r.m, r.cfg, &tp, 8, &dm, &err) == SCAR_EUNSUPPORTED);
	CHECK(dm == NULL);
	CHECK(strstr(err.msg, "workers=1") != NULL);
	run_close(&r);
}

int main(void)
{
	const struct scar_model_def *const *all = scar_models();

	test_local();
	check_model("ridge", "{\"n\":300,\"d\":23}", 6, 1e-12);
	check_model("ridge", "{\"n\":50,\"d\":7,\"eta\":0.3,\"init_scale\":1}", 6, 1e-12);
	check_model("mlr", "{\"n\":300,\"n_test\":50,\"d\":13,\"classes\":7,\"batch\":32}", 3, 0);
	check_model("mlr", "{\"n\":200,\"n_test\":0,\"d\":20,\"classes\":5,\"batch\":500,\"l2\":0}", 2, 0);
	check_model("mf", "{\"users\":60,\"items\":45,\"rank\":4}", 3, 0);
	check_model("mf", "{\"users\":60,\"items\":45,\"rank\":4,\"solver\":\"sgd\",\"workers\":3}", 3, 0);
	check_model("mf", "{\"users\":40,\"items\":70,\"rank\":3,\"solver\":\"sgd\",\"workers\":4}", 2, 0);
	check_model("lda", "{\"docs\":40,\"doc_len\":20,\"topics\":5}", 3, 0);
	check_model("lda", "{\"docs\":40,\"doc_len\":20,\"topics\":5,\"workers\":3}", 3, 0);
	test_mf_sgd_w1();
	/* Every built-in model runs distributed (scar-mpi(7) lists them). */
	for (size_t i = 0; all[i]; i++)
		CHECK(all[i]->dist && all[i]->dist->setup && all[i]->dist->step &&
		      all[i]->dist->objective && all[i]->dist->free);
	return unit_done("test-transport");
}
