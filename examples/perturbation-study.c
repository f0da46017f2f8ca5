/*
 * perturbation-study.c - how big is the perturbation a partial failure
 * causes, and what does the SCAR bound say it costs?
 *
 *     perturbation-study CKPT [C D]
 *
 * Loads checkpoint CKPT (taken after clock iteration T), then for k = 1,
 * 2, ... up to half the shards: loses the first k shards (their rows reset
 * to zero) in a copy, measures ||delta|| = ||perturbed - original|| with the
 * diff API, and evaluates the bound on the iteration cost of a perturbation
 * of that norm at T:
 *
 *     iota <= log(1 + ||delta|| / (c^T D)) / log(1/c)
 *
 * c and D are the contraction rate and the initial distance to the
 * optimum. Give them (e.g. from `scar-bound fit run.jsonl`), or leave them
 * out for a model that knows both exactly (ridge): c from the model and D
 * from a fresh iteration-0 state of the checkpoint's configuration.
 *
 * Exit status: 0 done, 2 an error. Uses only include/scar.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <scar/bound.h>
#include <scar/ckpt.h>
#include <scar/diff.h>
#include <scar/model.h>
#include <scar/perturb.h>
#include <scar/tensor.h>

static void report(const struct scar_error *e, int rc)
{
	fprintf(stderr, "perturbation-study: %s%s%s\n", e->file[0] ? e->file : "",
		e->file[0] ? ": " : "", e->msg[0] ? e->msg : scar_strerror(rc));
}

static int parse_double(const char *s, double *out)
{
	char *end;

	*out = strtod(s, &end);
	return end == s || *end != '\0';
}

/*
 * c and D from the model itself, when it knows them: c exactly, and D as
 * the distance of its iteration-0 state (rebuilt from the configuration
 * the checkpoint records) to the optimum. *dist_now gets st's distance.
 */
static int exact_c_and_d(const struct scar_state *st, double *c, double *D, double *dist_now,
			 struct scar_error *err)
{
	const struct scar_model_def *def = scar_model_find(st->model);
	struct scar_model *m = NULL;
	struct scar_state *fresh = NULL;
	int rc;

	if (!def || !def->contraction || !def->dist_to_opt)
		return scar_error_set(err, SCAR_EUNSUPPORTED,
				      "model '%s' does not know c and D: give C and D", st->model);
	if ((rc = def->create(&m, st->config, err)) ||
	    (rc = def->contraction(m, c, err)) ||
	    (rc = def->dist_to_opt(m, st, dist_now, err)) ||
	    (rc = scar_state_new(&fresh, st->model, err)))
		goto out;
	json_decref(fresh->config);
	fresh->config = json_deep_copy(st->config);
	fresh->shards = st->shards;
	if (!fresh->config) {
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = def->init_state(m, fresh, err)) ||
	    (rc = def->dist_to_opt(m, fresh, D, err)))
		goto out;
out:
	scar_state_free(fresh);
	if (m && def->free)
		def->free(m);
	return rc;
}

int main(int argc, char **argv)
{
	struct scar_state *st = NULL, *pert = NULL;
	struct scar_diff_result *d = NULL;
	struct scar_diff_opts dopts;
	struct scar_select sel;
	struct scar_error err;
	uint8_t *lost = NULL;
	double c, D, dist_now = -1;
	int rc = 0;

	scar_error_clear(&err);
	if (argc != 2 && argc != 4) {
		fprintf(stderr, "usage: perturbation-study CKPT [C D]\n");
		return 2;
	}
	if (argc == 4 && (parse_double(argv[2], &c) || parse_double(argv[3], &D))) {
		fprintf(stderr, "perturbation-study: C and D must be numbers\n");
		return 2;
	}
	if ((rc = scar_ckpt_load(argv[1], &st, &err)))
		goto out;
	if (argc == 2 && (rc = exact_c_and_d(st, &c, &D, &dist_now, &err)))
		goto out;
	if (!(lost = calloc(st->shards, 1))) {
		rc = scar_error_set(&err, SCAR_ENOMEM, "out of memory");
		goto out;
	}

	printf("# %s: model %s, T = %llu, %u shards, c = %.6g, D = %.6g",
	       argv[1], st->model, (unsigned long long)st->iteration, st->shards, c, D);
	if (dist_now >= 0)
		printf(", ||x(T) - x*|| = %.6g", dist_now);
	printf("\n%-11s %10s %14s %10s %12s\n", "lost_shards", "rows", "delta_l2", "rel_l2",
	       "iota_bound");

	scar_select_init(&sel);
	scar_diff_opts_init(&dopts);
	dopts.top_k = 0;
	for (uint32_t k = 1; k <= (st->shards + 1) / 2; k++) {
		struct scar_perturb_report rep;
		struct scar_bound_pert p;
		struct scar_bound_eval ev;

		lost[k - 1] = 1;	/* shards 0 .. k-1 */
		if ((rc = scar_state_clone(&pert, st, &err)) ||
		    (rc = scar_perturb_lose(pert, &sel, lost, SCAR_RESET_ZERO, NULL, NULL, &rep,
					    &err)) ||
		    (rc = scar_diff_states(pert, st, &dopts, &d, &err)))
			goto out;
		p.norm = d->total.l2;
		p.iter = (double)st->iteration;
		if ((rc = scar_bound_evaluate(c, D, &p, 1, 0, &ev, &err)))
			goto out;
		printf("%-11u %10llu %14.6g %10.4g %12.4g\n", k, (unsigned long long)rep.rows,
		       d->total.l2, d->total.rel_l2, ev.iota);
		scar_diff_result_free(d);
		d = NULL;
		scar_state_free(pert);
		pert = NULL;
	}
out:
	if (rc)
		report(&err, rc);
	free(lost);
	scar_diff_result_free(d);
	scar_state_free(pert);
	scar_state_free(st);
	return rc ? 2 : 0;
}
