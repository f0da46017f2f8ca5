/*
 * train-embed.c - the training loop as a library call: train a workload,
 * fail part of the parameter server once, recover, and print what the
 * failure cost, for traditional checkpoint-restart beside SCAR.
 *
 *     train-embed [MODEL [ITERS [FAIL_AT]]]     (default ridge 60 20)
 *
 * Both runs write the same number of checkpoint rows per iteration: a full
 * checkpoint every 8 iterations, or a prioritized quarter every 2. The
 * failure after FAIL_AT loses 2 of 8 shards. Traditional recovery rolls
 * everything back to the last full checkpoint; SCAR restores only the lost
 * rows from the saved view. The cost is the extra iterations the run needs
 * to reach the objective an unperturbed run reaches at ITERS.
 *
 * Exit status: 0 done, 2 an error. Uses only include/scar.
 */
#include <stdio.h>
#include <stdlib.h>

#include <scar/train.h>

struct strategy {
	const char *name;
	enum scar_policy policy;
	double fraction;
	enum scar_recovery recovery;
};

static int run(const char *model, uint64_t iters, uint64_t fail_at, const struct strategy *s,
	       struct scar_train_result *res, struct scar_error *err)
{
	struct scar_train_opts o;

	scar_train_opts_init(&o);
	o.model = model;
	o.shards = 8;
	o.iters = iters;
	o.policy = s->policy;
	o.interval = 8;
	o.fraction = s->fraction;
	o.fail_at[0] = fail_at;
	o.nfail_at = 1;
	o.lose_mode = SCAR_LOSE_COUNT;
	o.lose_count = 2;
	o.fail_seed = 1;
	o.recovery = s->recovery;
	o.measure_cost = 1;		/* runs the unperturbed reference too */
	o.cost_window = 1;
	o.cost_cap = iters;
	o.events = NULL;		/* a FILE * here gets the JSON-lines stream */
	o.tool = "train-embed";
	return scar_train_run(&o, res, err);
}

int main(int argc, char **argv)
{
	static const struct strategy strategies[] = {
		{ "traditional", SCAR_POLICY_FULL, 1.0, SCAR_RECOVER_FULL },
		{ "scar", SCAR_POLICY_PRIORITY, 0.25, SCAR_RECOVER_PARTIAL },
	};
	const char *model = argc > 1 ? argv[1] : "ridge";
	uint64_t iters = argc > 2 ? strtoull(argv[2], NULL, 10) : 60;
	uint64_t fail_at = argc > 3 ? strtoull(argv[3], NULL, 10) : 20;
	struct scar_error err;

	if (argc > 4 || iters == 0 || fail_at == 0 || fail_at >= iters) {
		fprintf(stderr, "usage: train-embed [MODEL [ITERS [FAIL_AT]]] (0 < FAIL_AT < ITERS)\n");
		return 2;
	}
	printf("# %s, %llu iterations, 2 of 8 shards lost after iteration %llu\n", model,
	       (unsigned long long)iters, (unsigned long long)fail_at);
	printf("%-12s %6s %8s %16s %12s\n", "strategy", "cost", "censored", "final_objective",
	       "ckpt_rows");
	for (size_t i = 0; i < sizeof strategies / sizeof strategies[0]; i++) {
		struct scar_train_result res;
		int rc;

		scar_error_clear(&err);
		if ((rc = run(model, iters, fail_at, &strategies[i], &res, &err))) {
			fprintf(stderr, "train-embed: %s: %s\n", strategies[i].name,
				err.msg[0] ? err.msg : scar_strerror(rc));
			return 2;
		}
		printf("%-12s %6lld %8s %16.10g %12llu\n", strategies[i].name,
		       (long long)res.total_cost, res.censored ? "yes" : "no",
		       res.final_objective, (unsigned long long)res.checkpoint_rows);
		scar_state_free(res.final_state);
	}
	return 0;
}
