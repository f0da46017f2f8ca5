/*
 * test-train.c - the training loop (scar/train.h) driven with options in
 * memory: determinism, resume from a checkpoint directory, failures under
 * the recovery strategies, the cost of a failure that loses nothing, and
 * the refusal of bad options.
 */
#include <string.h>
#include <sys/stat.h>

#include "scar/train.h"
#include "unit.h"

/* Small, fast workloads: a ridge regression and a softmax regression. */
static json_t *config(const char *model)
{
	if (strcmp(model, "ridge") == 0)
		return json_pack("{s:i, s:i}", "n", 120, "d", 8);
	return json_pack("{s:i, s:i, s:i, s:i}", "n", 240, "n_test", 60, "d", 6, "classes", 3);
}

static void opts(struct scar_train_opts *o, const char *model, json_t *cfg, uint64_t iters)
{
	scar_train_opts_init(o);
	o->model = model;
	o->config = cfg;
	o->shards = 4;
	o->iters = iters;
	o->ckpt_sync = 0;
	o->tool = "test-train";
}

/* Run o, the event stream into *ev (malloc'd, NUL-terminated); res as scar_train_run's. */
static int run(struct scar_train_opts *o, struct scar_train_result *res, char **ev)
{
	size_t len = 0;
	FILE *f = NULL;
	int rc;

	*ev = NULL;
	if (!(f = open_memstream(ev, &len))) {
		perror("open_memstream");
		exit(2);
	}
	o->events = f;
	memset(res, 0, sizeof(*res));
	scar_error_clear(UNIT_ERR);
	rc = scar_train_run(o, res, UNIT_ERR);
	fclose(f);
	o->events = NULL;
	return rc;
}

/* The "objective" fields of the iteration records, in order, as text. */
static int objectives(const char *ev, double *out, int cap)
{
	int n = 0;

	for (const char *p = ev; p && *p && n < cap; p = strchr(p, '\n'), p = p ? p + 1 : p) {
		const char *o;

		if (strncmp(p, "{\"type\":\"iteration\"", 19) != 0)
			continue;
		if ((o = strstr(p, "\"objective\":")) && o < strchr(p, '\n'))
			out[n++] = strtod(o + 12, NULL);
	}
	return n;
}

static void test_names(void)
{
	CHECK(scar_policy_parse("priority") == SCAR_POLICY_PRIORITY);
	CHECK(scar_policy_parse("round-robin") == SCAR_POLICY_ROUND_ROBIN);
	CHECK(scar_policy_parse("nope") == -1);
	CHECK(scar_policy_parse(scar_policy_name(SCAR_POLICY_FULL)) == SCAR_POLICY_FULL);
	CHECK(scar_recovery_parse(scar_recovery_name(SCAR_RECOVER_NONE)) == SCAR_RECOVER_NONE);
	CHECK(scar_recovery_parse("nope") == -1);
}

/* The same options twice: the same events byte for byte, the same state. */
static void test_determinism(const char *model)
{
	json_t *cfg = config(model), *cfg2 = json_deep_copy(cfg);
	struct scar_train_opts o;
	struct scar_train_result a, b, c;
	char *ea, *eb, *ec;
	double oa[64], ob[64];
	int na, nb;

	json_object_set_new(cfg2, "seed", json_integer(12345));
	opts(&o, model, cfg, 12);
	CHECK_RC(run(&o, &a, &ea));
	CHECK_RC(run(&o, &b, &eb));
	CHECK(a.clock == 12 && b.clock == 12 && a.failures == 0);
	CHECK(ea && eb && strcmp(ea, eb) == 0);
	na = objectives(ea, oa, 64);
	nb = objectives(eb, ob, 64);
	CHECK(na == 13 && nb == na);	/* clock 0..12 */
	for (int i = 0; i < na && i < nb; i++)
		CHECK(memcmp(&oa[i], &ob[i], sizeof(double)) == 0);
	CHECK(na > 1 && oa[na - 1] < oa[0]);	/* it trains */
	CHECK(a.final_objective == b.final_objective);
	CHECK(unit_same_tensors(a.final_state, b.final_state));
	/* another model seed is another run */
	opts(&o, model, cfg2, 12);
	CHECK_RC(run(&o, &c, &ec));
	CHECK(c.final_objective != a.final_objective);
	scar_state_free(a.final_state);
	scar_state_free(b.final_state);
	scar_state_free(c.final_state);
	free(ea);
	free(eb);
	free(ec);
	json_decref(cfg);
	json_decref(cfg2);
}

/* 20 iterations at once, or 10 into a checkpoint directory and 10 more from it. */
static void test_resume(const char *model, enum scar_policy policy)
{
	json_t *cfg = config(model);
	struct scar_train_opts o;
	struct scar_train_result whole, first, rest;
	struct scar_state *st = NULL;
	char *e1, *e2, *e3, used[512], name[64];
	size_t skipped = 99;
	const char *dir;

	snprintf(name, sizeof(name), "%s-%s", model, scar_policy_name(policy));
	dir = unit_tmp(name);
	CHECK(mkdir(dir, 0755) == 0);
	opts(&o, model, cfg, 20);
	o.policy = policy;
	o.interval = 5;
	o.fraction = policy == SCAR_POLICY_FULL ? 1 : 0.2;
	CHECK_RC(run(&o, &whole, &e1));

	o.iters = 10;
	o.ckpt_dir = dir;
	CHECK_RC(run(&o, &first, &e2));
	CHECK(first.checkpoints > 0);
	CHECK_RC(scar_train_load_resume(dir, &st, &skipped, used, sizeof(used), UNIT_ERR));
	CHECK(skipped == 0);
	if (st) {
		/* a partial policy resumes from its newest full checkpoint: iteration 0 */
		CHECK(st->iteration == (policy == SCAR_POLICY_FULL ? 10u : 0u));
		CHECK_RC(scar_train_check_resume(st, NULL, UNIT_ERR));
		o.iters = 20;
		o.resume = st;
		CHECK_RC(run(&o, &rest, &e3));
		CHECK(rest.clock == 20);	/* the clock goes on from the checkpoint's */
		CHECK(rest.final_objective == whole.final_objective);
		CHECK(unit_same_tensors(rest.final_state, whole.final_state));
		CHECK(rest.final_state && rest.final_state->iteration == 20);
		scar_state_free(rest.final_state);
		free(e3);
	}
	scar_state_free(st);
	scar_state_free(whole.final_state);
	scar_state_free(first.final_state);
	free(e1);
	free(e2);
	json_decref(cfg);
}

/*
 * One failure after iteration 7 losing 2 of 4 shards, with the cost against
 * the unperturbed run. With a full checkpoint every iteration partial
 * recovery restores exactly what was lost: nothing changes, the cost is 0.
 * Without recovery the rows stay zero: the run goes elsewhere.
 */
static void test_failures(const char *model)
{
	json_t *cfg = config(model);
	struct scar_train_opts o;
	struct scar_train_result ref, part, none, full;
	char *e0, *e1, *e2, *e3;

	opts(&o, model, cfg, 16);
	o.policy = SCAR_POLICY_FULL;
	o.interval = 1;
	CHECK_RC(run(&o, &ref, &e0));

	o.fail_at[0] = 7;
	o.nfail_at = 1;
	o.lose_mode = SCAR_LOSE_COUNT;
	o.lose_count = 2;
	o.measure_cost = 1;
	o.recovery = SCAR_RECOVER_PARTIAL;
	CHECK_RC(run(&o, &part, &e1));
	CHECK(part.failures == 1 && !part.censored);
	CHECK(part.total_cost == 0 && part.cost_interp == 0);
	CHECK(unit_same_tensors(part.final_state, ref.final_state));
	CHECK(e1 && strstr(e1, "\"type\":\"failure\"") && strstr(e1, "\"type\":\"recovery\""));
	CHECK(e1 && strstr(e1, "\"type\":\"cost\""));

	o.recovery = SCAR_RECOVER_NONE;
	CHECK_RC(run(&o, &none, &e2));
	CHECK(none.failures == 1);
	CHECK(!unit_same_tensors(none.final_state, ref.final_state));
	CHECK(none.final_objective != ref.final_objective);

	/* a full rollback to the checkpoint at 7 loses nothing either */
	o.recovery = SCAR_RECOVER_FULL;
	CHECK_RC(run(&o, &full, &e3));
	CHECK(full.failures == 1 && full.total_cost == 0);

	scar_state_free(ref.final_state);
	scar_state_free(part.final_state);
	scar_state_free(none.final_state);
	scar_state_free(full.final_state);
	free(e0);
	free(e1);
	free(e2);
	free(e3);
	json_decref(cfg);
}

/* A failure that loses no shard costs exactly 0, whenever it happens. */
static void test_null_failure(const char *model)
{
	json_t *cfg = config(model);
	struct scar_train_opts o;
	struct scar_train_result r;
	char *ev;

	for (uint64_t at = 3; at <= 11; at += 4) {
		opts(&o, model, cfg, 14);
		o.policy = SCAR_POLICY_FULL;
		o.interval = 4;
		o.fail_at[0] = at;
		o.nfail_at = 1;
		o.lose_mode = SCAR_LOSE_COUNT;
		o.lose_count = 0;
		o.measure_cost = 1;
		CHECK_RC(run(&o, &r, &ev));
		CHECK(r.failures == 1);
		CHECK(r.total_cost == 0 && r.cost_interp == 0 && !r.censored);
		scar_state_free(r.final_state);
		free(ev);
	}
	json_decref(cfg);
}

/* Bad options: SCAR_EINVAL (a shard out of range SCAR_ERANGE) saying which, and no state. */
static void test_bad_opts(void)
{
	json_t *cfg = config("ridge");
	struct scar_train_opts o;
	struct scar_train_result r;
	char *ev;

#define BAD(stmt, code) do { \
	opts(&o, "ridge", cfg, 10); \
	stmt; \
	CHECK_CODE(run(&o, &r, &ev), code); \
	CHECK(r.final_state == NULL); \
	CHECK(unit_err_.msg[0] != 0); \
	scar_state_free(r.final_state); \
	free(ev); \
} while (0)
	BAD(o.model = "no-such-model", SCAR_EINVAL);
	BAD(o.fraction = 0, SCAR_EINVAL);
	BAD(o.fraction = 1.5, SCAR_EINVAL);
	BAD(o.interval = 0, SCAR_EINVAL);
	BAD(o.shards = 0, SCAR_EINVAL);
	BAD(o.cost_window = 0, SCAR_EINVAL);
	BAD((o.fail_at[0] = 11, o.nfail_at = 1), SCAR_EINVAL);
	BAD((o.fail_at[0] = 0, o.nfail_at = 1), SCAR_EINVAL);
	BAD(o.fail_prob = 2, SCAR_EINVAL);
	BAD((o.lose_mode = SCAR_LOSE_FRACTION, o.lose_fraction = 1.5), SCAR_EINVAL);
	BAD((o.lose_mode = SCAR_LOSE_LIST, o.lose_list[0] = 4, o.nlose_list = 1), SCAR_ERANGE);
#undef BAD
	/* a configuration key the model does not have */
	{
		json_t *bad = json_pack("{s:i}", "no_such_key", 1);

		opts(&o, "ridge", bad, 10);
		CHECK(run(&o, &r, &ev) < 0);
		CHECK(r.final_state == NULL);
		free(ev);
		json_decref(bad);
	}
	/* no iteration records: no reference */
	CHECK(scar_train_reference_from_events(NULL, 0, UNIT_ERR) == NULL);
	CHECK(unit_err_.code < 0);
	json_decref(cfg);
}

int main(void)
{
	unit_scratch("train");
	test_names();
	test_determinism("ridge");
	test_determinism("mlr");
	test_resume("ridge", SCAR_POLICY_FULL);
	test_resume("mlr", SCAR_POLICY_FULL);
	test_resume("ridge", SCAR_POLICY_PRIORITY);
	test_failures("ridge");
	test_failures("mlr");
	test_null_failure("ridge");
	test_null_failure("mlr");
	test_bad_opts();
	unit_scratch_remove();
	return unit_done("test-train");
}
