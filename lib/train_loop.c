/*
 * train_loop.c - the training run both trainers share (train_internal.h):
 * row selection, recovery, the event records, the loop and the cost. What
 * differs between one process and MPI ranks is behind struct scar_train_ops
 * and the row ownership rule, which gives rank 0 every row when P = 1.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scar/ckpt.h"
#include "scar/dist.h"
#include "scar/events.h"
#include "scar/perturb.h"
#include "scar/rng.h"
#include "scar/shard.h"
#include "train_internal.h"
#include "topk.h"

double scar_train_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void scar_train_ctx_init(struct scar_train_ctx *c, const struct scar_train_opts *o,
			 const struct scar_train_ops *ops, struct scar_train_result *res,
			 struct scar_error *err)
{
	memset(c, 0, sizeof(*c));
	memset(res, 0, sizeof(*res));
	c->o = o;
	c->ops = ops;
	c->P = 1;
	c->res = res;
	c->err = err;
	c->t0 = scar_train_now();
	scar_store_init(&c->store, o->ckpt_dir);
	c->def = scar_model_find(o->resume ? o->resume->model : o->model);
}

int scar_train_emit(struct scar_train_ctx *c, json_t *rec)
{
	int rc = 0;

	if (!rec)
		return scar_error_set(c->err, SCAR_ENOMEM, "out of memory");
	if (c->R == 0 && c->o->events)
		rc = scar_event_write(c->o->events, rec, c->err);
	json_decref(rec);
	return rc;
}

static int agree(struct scar_train_ctx *c, int rc)
{
	return c->ops->agree ? c->ops->agree(c, rc) : rc;
}

static int is_param(const struct scar_tensor *x)
{
	return x->role == SCAR_ROLE_PARAM;
}

static int owns(const struct scar_train_ctx *c, uint64_t r)
{
	return scar_dist_row_owner(r, c->st->shards, c->P) == c->R;
}

static int push_obj(struct scar_train_ctx *c, double v)
{
	if (c->nobj == c->capobj) {
		size_t ncap = c->capobj ? c->capobj * 2 : 256;
		double *p = realloc(c->obj, ncap * sizeof(*p));

		if (!p)
			return scar_error_set(c->err, SCAR_ENOMEM, "out of memory");
		c->obj = p;
		c->capobj = ncap;
	}
	c->obj[c->nobj++] = v;
	return 0;
}

int scar_train_schedule_extra(json_t *extra, uint64_t clock, const struct scar_train_opts *o,
			      struct scar_error *err)
{
	/* The clock first: a state resumed from an older file then keeps its order of keys. */
	if (json_object_set_new(extra, "clock", json_integer((json_int_t)clock)) ||
	    json_object_set_new(extra, "schedule",
				json_pack("{s:s, s:I, s:f, s:I}", "policy", scar_policy_name(o->policy),
					  "interval", (json_int_t)o->interval,
					  "fraction", o->fraction,
					  "fail_seed", (json_int_t)o->fail_seed)))
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	return 0;
}

int scar_train_set_clock(struct scar_train_ctx *c, struct scar_state *s)
{
	return scar_train_schedule_extra(s->extra, c->clock, c->o, c->err);
}

/* ---- setting up ---- */

int scar_train_check_opts(const struct scar_train_opts *o, const struct scar_model_def *def,
			  struct scar_error *err)
{
	uint64_t N = o->iters;
	int rc;

	if (!def)
		return scar_error_set(err, SCAR_EINVAL, "unknown model '%s'",
				      o->resume ? o->resume->model : o->model ? o->model : "");
	if (!(o->fraction > 0 && o->fraction <= 1))
		return scar_error_set(err, SCAR_EINVAL, "checkpoint fraction %g is not in (0, 1]",
				      o->fraction);
	if (o->interval < 1)
		return scar_error_set(err, SCAR_EINVAL, "checkpoint interval must be at least 1");
	if (o->recovery == SCAR_RECOVER_REBUILD && !def->rebuild)
		return scar_error_set(err, SCAR_EINVAL,
				      "recovery 'rebuild' needs a model whose parameters are a function of what survives; %s has none (scar(7))",
				      def->name);
	if (o->recovery == SCAR_RECOVER_REWIND && !def->rewinds)
		return scar_error_set(err, SCAR_EINVAL,
				      "recovery 'rewind' needs a model with a decaying step schedule; %s has none (scar(7))",
				      def->name);
	if (o->shards < 1 || o->shards > SCAR_MAX_SHARDS)
		return scar_error_set(err, SCAR_EINVAL, "shard count %u is not in [1, %u]",
				      o->shards, SCAR_MAX_SHARDS);
	/* -n 0 (the header and the starting state) has no window, and needs none without a cost */
	if (o->cost_window < 1 || (o->measure_cost && o->cost_window > N))
		return scar_error_set(err, SCAR_EINVAL, "cost window %llu is not in 1..%llu (the iterations)",
				      (unsigned long long)o->cost_window, (unsigned long long)N);
	for (size_t i = 0; i < o->nfail_at; i++)
		if (o->fail_at[i] < 1 || o->fail_at[i] > N)
			return scar_error_set(err, SCAR_EINVAL,
					      "failure at iteration %llu is outside 1..%llu",
					      (unsigned long long)o->fail_at[i], (unsigned long long)N);
	/* Against the shards of the run: a resumed run's are the checkpoint's. */
	if (o->lose_mode == SCAR_LOSE_LIST &&
	    (rc = scar_shards_check(o->lose_list, o->nlose_list, 0,
				    o->resume ? o->resume->shards : o->shards, err)))
		return rc;
	if (o->lose_mode == SCAR_LOSE_COUNT &&
	    (rc = scar_shards_check(NULL, 0, o->lose_count,
				    o->resume ? o->resume->shards : o->shards, err)))
		return rc;
	if (o->lose_mode == SCAR_LOSE_FRACTION && !(o->lose_fraction >= 0 && o->lose_fraction <= 1))
		return scar_error_set(err, SCAR_EINVAL, "lost fraction %g is not in [0, 1]",
				      o->lose_fraction);
	if (o->fail_prob < 0 || o->fail_prob > 1)
		return scar_error_set(err, SCAR_EINVAL, "failure probability %g is not in [0, 1]",
				      o->fail_prob);
	return scar_train_check_schedule(o, err);
}

/* The caller's progress callback, told that the run is the reference. */
struct reference_progress {
	void (*fn)(const struct scar_train_progress *p, void *arg);
	void *arg;
};

static void reference_progress(const struct scar_train_progress *p, void *arg)
{
	const struct reference_progress *rp = arg;
	struct scar_train_progress q = *p;

	q.reference = 1;
	rp->fn(&q, rp->arg);
}

int scar_train_reference(const struct scar_train_opts *o, scar_train_core_fn *core, double **ref,
			 size_t *nref, struct scar_error *err)
{
	struct reference_progress rp = { o->progress, o->progress_arg };
	struct scar_train_opts ro = *o;
	struct scar_train_result rr;
	int rc;

	*ref = NULL;
	*nref = 0;
	if (!o->measure_cost)
		return 0;
	if (o->reference) {
		size_t i;
		json_t *v;

		*nref = json_array_size(o->reference);
		if (!(*ref = malloc((*nref ? *nref : 1) * sizeof(**ref))))
			return scar_error_set(err, SCAR_ENOMEM, "out of memory");
		json_array_foreach(o->reference, i, v)
			(*ref)[i] = json_number_value(v);
		return 0;
	}
	/*
	 * The unperturbed run with the same seed and data order: of the
	 * checkpoint's model, configuration and shards when resuming, so that
	 * a resumed checkpoint is measured against the run it came from.
	 */
	if (o->resume) {
		ro.model = o->resume->model;
		ro.config = o->resume->config;
		ro.shards = o->resume->shards;
	}
	ro.policy = SCAR_POLICY_NONE;
	ro.ckpt_dir = NULL;
	ro.nfail_at = 0;
	ro.fail_prob = 0;
	ro.measure_cost = 0;
	ro.events = NULL;
	/* Say so: the reference may take as long as the run. */
	ro.progress = o->progress ? reference_progress : NULL;
	ro.progress_arg = &rp;
	ro.resume = NULL;
	if ((rc = core(&ro, &rr, err, ref, nref)))
		return rc;
	scar_state_free(rr.final_state);
	return 0;
}

int scar_train_config(const struct scar_train_opts *o, const struct scar_model_def *def,
		      json_t **config, struct scar_error *err)
{
	if (o->resume)
		return scar_train_check_resume(o->resume, config, err);
	return scar_model_configure(def->name, o->config, config, err);
}

/* A shard that can hold no row of any parameter tensor is a mistake. */
static int check_shards(struct scar_train_ctx *c, const struct scar_state *st)
{
	const struct scar_tensor *big = NULL;

	for (size_t i = 0; i < st->ntensors; i++) {
		const struct scar_tensor *x = st->tensors[i];

		if (is_param(x) && (!big || scar_tensor_rows(x) > scar_tensor_rows(big)))
			big = x;
	}
	if (big && c->o->shards > scar_tensor_rows(big))
		return scar_error_set(c->err, SCAR_EINVAL,
				      "%u shards are more than the %llu rows of the largest parameter tensor '%s'",
				      (unsigned)c->o->shards, (unsigned long long)scar_tensor_rows(big),
				      big->name);
	return 0;
}

int scar_train_new_state(struct scar_train_ctx *c, json_t *config, struct scar_state **out)
{
	int rc;

	if ((rc = scar_state_new(out, c->def->name, c->err)))
		return rc;
	json_decref((*out)->config);
	(*out)->config = json_incref(config);
	(*out)->shards = c->o->shards;
	if ((rc = c->def->init_state(c->m, *out, c->err)))
		return rc;
	return check_shards(c, *out);
}

/*
 * A resumed checkpoint's clock counts the iterations executed, so it is an
 * integer at or after its state iteration (rollbacks only add to it); a
 * failure scheduled at or before it could never happen.
 */
static int check_resume_clock(struct scar_train_ctx *c)
{
	uint64_t clock;

	if (!scar_train_clock_ok(c->st))
		return scar_error_set(c->err, SCAR_ECORRUPT,
				      "checkpoint's extra \"clock\" is not a whole number at or after its iteration %llu",
				      (unsigned long long)c->st->iteration);
	clock = scar_train_resume_clock(c->st);
	for (size_t i = 0; i < c->o->nfail_at; i++)
		if (c->o->fail_at[i] <= clock)
			return scar_error_set(c->err, SCAR_EINVAL,
					      "failure at iteration %llu is not after the resume point %llu",
					      (unsigned long long)c->o->fail_at[i],
					      (unsigned long long)clock);
	return 0;
}

int scar_train_check_layout(struct scar_train_ctx *c, const struct scar_state *fresh)
{
	const struct scar_state *st = c->st;

	if (fresh->ntensors != st->ntensors)
		return scar_error_set(c->err, SCAR_EMISMATCH,
				      "checkpoint has %zu tensors, model '%s' expects %zu",
				      st->ntensors, c->def->name, fresh->ntensors);
	for (size_t i = 0; i < fresh->ntensors; i++) {
		const struct scar_tensor *a = fresh->tensors[i], *b = st->tensors[i];

		if (!strcmp(a->name, b->name) && a->dtype != b->dtype)
			return scar_error_set(c->err, SCAR_EMISMATCH,
					      "checkpoint tensor '%s' is %s, model '%s' keeps it as %s "
					      "(scar-ckpt convert --dtype %s converts it)",
					      b->name, scar_dtype_name(b->dtype), c->def->name,
					      scar_dtype_name(a->dtype), scar_dtype_name(a->dtype));
		if (strcmp(a->name, b->name) || !scar_tensor_same_layout(a, b) || a->role != b->role)
			return scar_error_set(c->err, SCAR_EMISMATCH,
					      "checkpoint tensor '%s' does not match model '%s' tensor '%s'",
					      b->name, c->def->name, a->name);
		if (b->present)
			return scar_error_set(c->err, SCAR_EINVAL,
					      "cannot resume from a partial checkpoint (tensor '%s' lacks rows); apply it over a full one first",
					      b->name);
	}
	return check_resume_clock(c);
}

uint64_t scar_train_resume_clock(const struct scar_state *st)
{
	json_t *c = json_object_get(st->extra, "clock");

	return json_is_integer(c) ? (uint64_t)json_integer_value(c) : st->iteration;
}

/* ---- the iteration cost ---- */

/* Smoothed objective ending at clock k (window w), for the cost. */
static double smoothed(const double *v, uint64_t k, uint64_t w)
{
	double s = 0;
	uint64_t n = 0;

	for (uint64_t i = k + 1 > w ? k + 1 - w : 0; i <= k; i++, n++)
		s += v[i];
	return s / (double)n;
}

static int reached(const struct scar_model_def *d, double v, double target)
{
	return d->objective_higher_better ? v >= target : v <= target;
}

/*
 * Where the smoothed objective crossed the target at clock k, as k - 1 plus
 * the fraction of the step from k - 1 to k (linear interpolation), so that
 * costs below one iteration can be told apart. The whole part and the
 * fraction are kept apart: a cost is the difference of two crossings, and
 * two crossings of the same values then differ by an exact integer. A
 * crossing at the point measured from (k == from) has nothing before it to
 * interpolate with: k itself.
 */
static void crossing(const double *v, uint64_t k, uint64_t from, uint64_t w, double target,
		     uint64_t *whole, double *frac)
{
	double prev, cur;

	*whole = k;
	*frac = 0;
	if (k == 0 || k <= from)
		return;
	prev = smoothed(v, k - 1, w);
	cur = smoothed(v, k, w);
	if (isnan(prev) || prev == cur)
		return;
	*whole = k - 1;
	*frac = fmin(1.0, fmax(0.0, (prev - target) / (prev - cur)));
}

/* The first clock in [from, n) at which v's smoothed objective reaches target; n if none. */
static uint64_t first_reach(const struct scar_model_def *d, const double *v, uint64_t from,
			    uint64_t n, uint64_t w, double target)
{
	for (uint64_t k = from; k < n; k++)
		if (!isnan(v[k]) && reached(d, smoothed(v, k, w), target))
			return k;
	return n;
}

int scar_train_cost_target(const struct scar_train_ctx *c, const double *ref, size_t nref,
			   struct scar_train_cost *ci)
{
	uint64_t N = c->o->iters, w = c->o->cost_window;

	if (nref < N + 1)
		return scar_error_set(c->err, SCAR_EINVAL,
				      "reference has %zu iterations, need %llu", nref ? nref - 1 : 0,
				      (unsigned long long)N);
	for (uint64_t k = 0; k <= N; k++)
		if (!isfinite(ref[k]))
			return scar_error_set(c->err, SCAR_EINVAL,
					      "reference objective at iteration %llu is not a number",
					      (unsigned long long)k);
	if (c->o->reference_header) {
		json_t *shards = json_integer((json_int_t)c->st->shards);
		int rc;

		if (!shards)
			return scar_error_set(c->err, SCAR_ENOMEM, "out of memory");
		/* the same check as scar-bound check's (scar/events.h) */
		rc = scar_events_same_run(c->o->reference_header, c->def->name, shards,
					  c->st->config, c->err);
		json_decref(shards);
		if (rc)
			return rc;
	}
	ci->target = smoothed(ref, N, w);
	ci->ref = ref;
	ci->nref = N + 1;
	ci->have = 1;
	return 0;
}

/* ---- checkpoints ---- */

int scar_train_policy_select(const struct scar_train_opts *o, const struct scar_state *st,
			     const struct scar_state *saved, size_t ti, uint64_t ncp,
			     const double *prio, uint8_t *sel, struct scar_error *err)
{
	const struct scar_tensor *x = st->tensors[ti];
	uint64_t rows = scar_tensor_rows(x), start, n = scar_train_policy_rows(o, rows, ncp, &start);

	memset(sel, 0, rows);
	if (n == rows) {
		memset(sel, 1, rows);
		return 0;
	}
	if (n == 0)
		return 0;
	switch (o->policy) {
	case SCAR_POLICY_ROUND_ROBIN: {
		for (uint64_t i = 0; i < n; i++)
			sel[(start + i) % rows] = 1;
		return 0;
	}
	case SCAR_POLICY_RANDOM: {
		struct scar_rng rng;
		uint32_t *idx = malloc(rows * sizeof(*idx));

		if (!idx)
			return scar_error_set(err, SCAR_ENOMEM, "out of memory");
		scar_rng_seed_stream(&rng, o->fail_seed ^ (ti * 0x9e3779b97f4a7c15ULL),
				     SCAR_STREAM_RANDOM_POLICY + (st->iteration << 4));
		for (uint64_t i = 0; i < rows; i++)
			idx[i] = (uint32_t)i;
		for (uint64_t i = 0; i < n; i++) {
			uint64_t j = i + scar_rng_below(&rng, rows - i);
			uint32_t tmp = idx[i];

			idx[i] = idx[j];
			idx[j] = tmp;
			sel[idx[i]] = 1;
		}
		free(idx);
		return 0;
	}
	case SCAR_POLICY_PRIORITY: {
		struct scar_prio *pr = malloc(rows * sizeof(*pr));
		double *pv = malloc(rows * sizeof(*pv) + 1);
		int rc = 0;

		if (!pr || !pv) {
			free(pr);
			free(pv);
			return scar_error_set(err, SCAR_ENOMEM, "out of memory");
		}
		if (prio)
			memcpy(pv, prio, rows * sizeof(*pv));
		else
			for (uint64_t r = 0; r < rows; r++)
				pv[r] = scar_row_priority(x, saved->tensors[ti], r);
		for (uint64_t r = 0; r < rows; r++) {
			pr[r].p = isnan(pv[r]) ? INFINITY : pv[r];	/* a destroyed row differs most */
			pr[r].row = r;
		}
		free(pv);
		if (!rc) {
			scar_prio_select(pr, rows, n);
			for (uint64_t i = 0; i < n; i++)
				sel[pr[i].row] = 1;
		}
		free(pr);
		return rc;
	}
	default:
		memset(sel, 1, rows);
		return 0;
	}
}

/* The trainer's selection: the distributed trainer brings the priorities, the same on every rank. */
static int select_rows(struct scar_train_ctx *c, size_t ti, uint8_t *sel, uint64_t ncp)
{
	double *pv = NULL;
	int rc;

	if (c->o->policy == SCAR_POLICY_PRIORITY && c->ops->priorities) {
		pv = malloc(scar_tensor_rows(c->st->tensors[ti]) * sizeof(*pv) + 1);
		if (!pv)
			return scar_error_set(c->err, SCAR_ENOMEM, "out of memory");
		if ((rc = c->ops->priorities(c, ti, pv))) {
			free(pv);
			return rc;
		}
	}
	rc = scar_train_policy_select(c->o, c->st, c->saved, ti, ncp, pv, sel, c->err);
	free(pv);
	return rc;
}

/* The rows a partial checkpoint writes, which become their saved values (ages). */
int scar_train_select_rows(struct scar_train_ctx *c, size_t ti, uint8_t *sel, uint64_t ncp)
{
	int rc = select_rows(c, ti, sel, ncp);

	return rc ? rc : scar_train_ages_mark(c, ti, sel);
}

json_t *scar_train_checkpoint_record(struct scar_train_ctx *c, int full, uint64_t rows,
				     uint64_t bytes, uint64_t file_bytes, double secs,
				     double sel_secs)
{
	/*
	 * A full checkpoint is every row's saved value (a partial one:
	 * select_rows). The rewind record was checked after the step, so only
	 * memory can fail here: NULL, which the caller's emit reports so.
	 */
	for (size_t i = 0; full && i < c->st->ntensors; i++)
		if (scar_train_ages_mark(c, i, NULL))
			return NULL;
	return scar_train_checkpoint_event(c, full, c->clock, c->st->iteration, rows, bytes,
					   file_bytes, secs, sel_secs, -1);
}

json_t *scar_train_checkpoint_event(struct scar_train_ctx *c, int full, uint64_t clock,
				    uint64_t state_iter, uint64_t rows, uint64_t bytes,
				    uint64_t file_bytes, double secs, double sel_secs,
				    double bg_secs)
{
	const struct scar_train_opts *o = c->o;
	json_t *rec;

	c->res->checkpoints++;
	c->res->checkpoint_rows += rows;
	c->res->checkpoint_bytes += file_bytes ? file_bytes : bytes;
	c->res->checkpoint_seconds += secs;
	c->res->select_seconds += sel_secs;
	if (bg_secs >= 0)
		c->res->background_seconds += bg_secs;
	rec = json_pack("{s:s, s:I, s:I, s:s, s:s, s:I, s:I}", "type", "checkpoint",
			"iter", (json_int_t)clock, "state_iter", (json_int_t)state_iter,
			"policy", full && o->policy != SCAR_POLICY_FULL ? "full" :
				scar_policy_name(o->policy),
			"kind", full ? "full" : "partial", "rows", (json_int_t)rows,
			"bytes", (json_int_t)(file_bytes ? file_bytes : bytes));
	if (rec && c->dist && o->ckpt_dir)
		json_object_set_new(rec, "files", json_integer((json_int_t)c->P));
	if (rec && o->timing) {
		json_object_set_new(rec, "seconds", json_real(secs));
		json_object_set_new(rec, "select_seconds", json_real(sel_secs));
		if (bg_secs >= 0)
			json_object_set_new(rec, "background_seconds", json_real(bg_secs));
	}
	return rec;
}

/* ---- failures and recovery ---- */

/*
 * The owners of the lost shards' rows destroy them (floats NaN, integers
 * all-ones, so a recovery that forgets a row shows up at once; zero for
 * recovery "none") and restore them from their saved view (partial), or
 * every rank rolls back to the last full checkpoint (full). Then every
 * rank's copy is refreshed from the owners.
 */
static int fail_and_recover(struct scar_train_ctx *c, const uint8_t *given)
{
	struct scar_state *st = c->st, *pre = NULL;
	uint32_t S = st->shards;
	uint8_t *lost = malloc(S), *rlost = calloc(c->P, 1);
	uint64_t rows_lost = 0, pre_iter = st->iteration, rows_rebuilt = 0, rows_rewound = 0;
	double rebuild_secs = 0;
	enum scar_recovery how = c->o->recovery;
	json_t *autoinfo = NULL;
	json_t *shards = json_array(), *ranks = json_array(), *rec;
	double d2 = 0, obj;
	unsigned in_flight = 0;
	int rc = 0;

	/*
	 * Recovery reads durable checkpoints only: what is still being
	 * written in the background is out of the saved view until out.
	 */
	if (c->ops->durable_view)
		in_flight = c->ops->durable_view(c, 1);
	if (!lost || !rlost || !shards || !ranks) {
		rc = scar_error_set(c->err, SCAR_ENOMEM, "out of memory");
		goto out;
	}
	if (given)
		memcpy(lost, given, S);
	else if ((rc = scar_train_pick_shards(c->o, S, c->clock, lost, c->err)))
		goto out;
	for (uint32_t s = 0; s < S; s++)
		if (lost[s]) {
			json_array_append_new(shards, json_integer(s));
			rlost[scar_dist_shard_owner(s, c->P)] = 1;
		}
	for (uint32_t q = 0; q < c->P; q++)
		if (rlost[q])
			json_array_append_new(ranks, json_integer(q));
	/* Keep the pre-failure state to measure the perturbation recovery causes. */
	if ((rc = scar_state_clone(&pre, st, c->err)))
		goto out;
	for (size_t i = 0; i < st->ntensors; i++) {
		struct scar_tensor *x = st->tensors[i];
		size_t rb = scar_tensor_row_bytes(x);

		if (!is_param(x))
			continue;
		for (uint64_t r = 0; r < scar_tensor_rows(x); r++) {
			if (!lost[scar_shard_of_row(r, S)])
				continue;
			rows_lost++;
			if (owns(c, r))
				memset(scar_tensor_row(x, r),
				       how == SCAR_RECOVER_NONE ? 0 : 0xff, rb);
		}
	}
	c->res->failures++;
	c->last_fail_clock = c->clock;
	rec = json_pack("{s:s, s:I, s:I, s:O, s:I}", "type", "failure", "iter", (json_int_t)c->clock,
			"state_iter", (json_int_t)st->iteration, "shards", shards,
			"rows_lost", (json_int_t)rows_lost);
	if (rec && c->dist)
		json_object_set(rec, "ranks", ranks);
	if (rec && in_flight)
		json_object_set_new(rec, "ckpt_in_flight", json_integer((json_int_t)in_flight));
	/* A real process death (survivor files resumed, scar-mpi(7)), not a simulated one. */
	if (rec && given)
		json_object_set_new(rec, "real", json_true());
	if ((rc = scar_train_emit(c, rec)))
		goto out;
	/* auto: the choice reads the survivors and the saved view only (lost rows are destroyed). */
	if (how == SCAR_RECOVER_AUTO) {
		double t1 = scar_train_now();

		if ((rc = agree(c, scar_train_auto_choose(c, lost,
							  st->iteration - c->last_full->iteration,
							  &how, &autoinfo))))
			goto out;
		if (c->o->timing && autoinfo)
			json_object_set_new(autoinfo, "seconds", json_real(scar_train_now() - t1));
	}

	if (how == SCAR_RECOVER_FULL) {
		struct scar_state *s;

		if ((rc = scar_state_clone(&s, c->last_full, c->err)))
			goto out;
		scar_state_free(c->st);
		c->st = st = s;
	} else if (how == SCAR_RECOVER_PARTIAL ||
		   how == SCAR_RECOVER_REBUILD ||
		   how == SCAR_RECOVER_REWIND) {
		for (size_t i = 0; i < st->ntensors; i++) {
			struct scar_tensor *x = st->tensors[i];
			size_t rb = scar_tensor_row_bytes(x);

			if (!is_param(x))
				continue;
			for (uint64_t r = 0; r < scar_tensor_rows(x); r++)
				if (lost[scar_shard_of_row(r, S)] && owns(c, r))
					memcpy(scar_tensor_row(x, r),
					       scar_tensor_row(c->saved->tensors[i], r), rb);
		}
	}
	if (c->ops->sync && (rc = c->ops->sync(c)))
		goto out;
	if (how == SCAR_RECOVER_REBUILD) {
		/*
		 * Every rank holds the model (the rebuilding models' every_rank)
		 * and, after the sync, the same state: each rebuilds the same rows
		 * the same way, the one-process result; the second sync lets the
		 * distributed step drop what it cached.
		 */
		double t1 = scar_train_now();

		if ((rc = agree(c, c->m ? c->def->rebuild(c->m, st, lost, S, &rows_rebuilt, c->err) :
				scar_error_set(c->err, SCAR_EINVAL, "rebuild: rank %u holds no model",
					       (unsigned)c->R))))
			goto out;
		if (c->ops->sync && (rc = c->ops->sync(c)))
			goto out;
		rebuild_secs = scar_train_now() - t1;
	}
	if (how == SCAR_RECOVER_REWIND &&
	    (rc = agree(c, scar_train_rewind_begin(c, lost, &rows_rewound))))
		goto out;
	for (size_t i = 0; i < st->ntensors; i++) {
		struct scar_tensor *x = st->tensors[i];

		if (is_param(x))
			d2 += scar_train_sqdist(x, x->data, pre->tensors[i]->data, 0,
						scar_tensor_elems(x));
	}
	/*
	 * The cost is measured from here: the run goes on from the recovered
	 * state, so its objective replaces the one before the failure in the
	 * cost's series (c->obj), and the reference is searched from the state
	 * iteration it goes on from (the checkpoint's after a rollback).
	 */
	if ((rc = c->ops->objective(c, &obj)))
		goto out;
	c->obj[c->clock] = obj;
	c->cost_clock = c->clock;
	scar_train_auto_reset(c);	/* the steps after a failure start a new window */
	c->cost_iter = st->iteration;
	rec = json_pack("{s:s, s:I, s:s, s:O, s:I, s:f, s:I, s:I, s:f}", "type", "recovery",
			"iter", (json_int_t)c->clock, "strategy", scar_recovery_name(how),
			"shards", shards,
			"rows_restored", (json_int_t)(how == SCAR_RECOVER_NONE ? 0 : rows_lost),
			"delta_norm", sqrt(d2), "failed_state_iter", (json_int_t)pre_iter,
			"resume_state_iter", (json_int_t)st->iteration, "objective", obj);
	/* The dead rank's rows at the failure died with it: their change is unknown. */
	if (rec && given) {
		json_object_set_new(rec, "delta_norm", json_null());
		json_object_set_new(rec, "real", json_true());
	}
	if (rec && autoinfo)
		json_object_set(rec, "auto", autoinfo);
	if (rec && how == SCAR_RECOVER_REWIND)
		json_object_set_new(rec, "rows_rewound", json_integer((json_int_t)rows_rewound));
	if (rec && how == SCAR_RECOVER_REBUILD) {
		json_object_set_new(rec, "rows_rebuilt", json_integer((json_int_t)rows_rebuilt));
		if (c->o->timing)
			json_object_set_new(rec, "rebuild_seconds", json_real(rebuild_secs));
	}
	rc = scar_train_emit(c, rec);
out:
	if (c->ops->durable_view)
		c->ops->durable_view(c, 0);
	json_decref(autoinfo);
	scar_state_free(pre);
	json_decref(shards);
	json_decref(ranks);
	free(lost);
	free(rlost);
	return rc;
}

/* ---- the run ---- */

/*
 * Divergence by growth: the objective is worse than the best so far by more
 * than this many times the run's scale (record_iteration, scar-train(1)).
 */
#define SCAR_TRAIN_DIVERGE_FACTOR 1e3

/*
 * The run diverged at clock iter (state iteration state_iter) for reason
 * ("nonfinite" or "growth"; c->err has the message): emit the event (rank
 * 0) and return SCAR_EDIVERGED, or the error of writing it. threshold is
 * the objective beyond which growth counts, NAN when not the reason.
 */
static int diverged(struct scar_train_ctx *c, uint64_t iter, uint64_t state_iter, double obj,
		    const char *reason, double threshold)
{
	json_t *rec = json_pack("{s:s, s:I, s:I, s:o, s:s, s:s}", "type", "diverged",
				"iter", (json_int_t)iter, "state_iter", (json_int_t)state_iter,
				"objective", isfinite(obj) ? json_real(obj) : json_null(),
				"reason", reason, "message", c->err->msg);
	int rc;

	if (rec && isfinite(c->div_best))
		json_object_set_new(rec, "best_objective", json_real(c->div_best));
	if (rec && isfinite(threshold))
		json_object_set_new(rec, "threshold", json_real(threshold));
	rc = scar_train_emit(c, rec);
	return rc ? rc : SCAR_EDIVERGED;
}

/*
 * Whether objective obj at this record has grown by orders of magnitude:
 * it is worse than the best objective b so far by more than
 * SCAR_TRAIN_DIVERGE_FACTOR times the scale max(|f_s|, |f_s - b|) over the
 * run's starts f_s, which are its first objective (iteration 0, or the
 * resumed state's) and the first after each failure (a failure may set the
 * objective back anywhere; what follows is measured from there). So a
 * run's scale is the size of its objective and of its progress, whatever
 * the sign or offset of the objective, and no objective a start has had,
 * nor any between it and the best, can count. Keeps the running values in
 * c; *threshold gets the objective beyond which growth counts.
 */
static int grew(struct scar_train_ctx *c, double obj, int first, double *threshold)
{
	int hb = c->def->objective_higher_better;
	double scale;

	if (first) {
		c->div_best = c->div_start_worst = obj;
		c->div_start_abs = fabs(obj);
		c->div_failures = c->res->failures;
	} else if (c->res->failures != c->div_failures) {
		c->div_failures = c->res->failures;
		c->div_start_abs = fmax(c->div_start_abs, fabs(obj));
		if (hb ? obj < c->div_start_worst : obj > c->div_start_worst)
			c->div_start_worst = obj;
	}
	if (hb ? obj > c->div_best : obj < c->div_best)
		c->div_best = obj;
	scale = fmax(c->div_start_abs, fabs(c->div_start_worst - c->div_best));
	*threshold = c->div_best + (hb ? -1 : 1) * SCAR_TRAIN_DIVERGE_FACTOR * scale;
	return hb ? obj < *threshold : obj > *threshold;
}

/* The objective (every rank) and, on rank 0, the iteration's event. */
static int record_iteration(struct scar_train_ctx *c, double step2, int first)
{
	const struct scar_model_def *d = c->def;
	double obj, v, threshold;
	json_t *rec;
	int rc;

	if ((rc = c->ops->objective(c, &obj)))
		return rc;
	/* obj, step2 and the failures are the same on every rank, so all stop together. */
	if (!isfinite(obj) || (!first && !isfinite(step2))) {
		if (first)
			c->div_best = NAN;
		scar_error_set(c->err, SCAR_EDIVERGED,
			       "training diverged at iteration %llu (the %s is not finite)",
			       (unsigned long long)c->clock, isfinite(obj) ? "step" : "objective");
		return diverged(c, c->clock, c->st->iteration, obj, "nonfinite", NAN);
	}
	if (grew(c, obj, first, &threshold)) {
		scar_error_set(c->err, SCAR_EDIVERGED,
			       "training diverged at iteration %llu (objective %g, past %g: more than %g times the run's scale from its best %g)",
			       (unsigned long long)c->clock, obj, threshold, SCAR_TRAIN_DIVERGE_FACTOR,
			       c->div_best);
		return diverged(c, c->clock, c->st->iteration, obj, "growth", threshold);
	}
	if ((rc = push_obj(c, obj)))
		return rc;
	c->res->final_objective = obj;
	if (c->R != 0)
		return 0;
	rec = json_pack("{s:s, s:I, s:I, s:f}", "type", "iteration", "iter", (json_int_t)c->clock,
			"state_iter", (json_int_t)c->st->iteration, "objective", obj);
	if (!rec)
		return scar_error_set(c->err, SCAR_ENOMEM, "out of memory");
	if (!first)
		json_object_set_new(rec, "step_norm", json_real(sqrt(step2)));
	if (d->dist_to_opt) {
		if ((rc = d->dist_to_opt(c->m, c->st, &v, c->err))) {
			json_decref(rec);
			return rc;
		}
		json_object_set_new(rec, "dist_opt", json_real(v));
	}
	if (d->heldout && (first || c->clock == c->o->iters ||
			   (c->o->heldout_every && c->clock % c->o->heldout_every == 0))) {
		if ((rc = d->heldout(c->m, c->st, &v, c->err))) {
			json_decref(rec);
			return rc;
		}
		json_object_set_new(rec, "heldout", json_real(v));
	}
	if (c->o->timing)
		json_object_set_new(rec, "elapsed", json_real(scar_train_now() - c->t0));
	return scar_train_emit(c, rec);
}

int scar_train_begin(struct scar_train_ctx *c, json_t *config)
{
	const struct scar_train_opts *o = c->o;
	const struct scar_model_def *d = c->def;
	json_t *rec;
	int rc = 0;

	rec = json_pack("{s:s, s:s, s:i, s:s, s:s, s:s, s:O, s:I, s:s, s:b, s:s?, s:s, s:s, s:I, s:I, s:f, s:s}",
			"type", "header", "format", SCAR_EVENTS_FORMAT, "version", SCAR_EVENTS_VERSION,
			"tool", o->tool ? o->tool : "scar", "tool_version", SCAR_VERSION,
			"model", d->name, "config", config, "shards", (json_int_t)c->st->shards,
			"objective", d->objective_name,
			"objective_higher_better", d->objective_higher_better,
			"heldout", d->heldout_name,
			"policy", scar_policy_name(o->policy), "recovery", scar_recovery_name(o->recovery),
			"iters", (json_int_t)o->iters, "interval", (json_int_t)o->interval,
			"fraction", o->fraction, "resumed", o->resume ? "yes" : "no");
	if (rec) {
		double v;

		json_object_set_new(rec, "dist_opt_known", json_boolean(d->dist_to_opt != NULL));
		if (c->R == 0 && d->contraction && d->contraction(c->m, &v, c->err) == 0)
			json_object_set_new(rec, "contraction", json_real(v));
		if (c->R == 0 && d->effective) {
			json_t *eff = json_object();

			if (!eff || (rc = d->effective(c->m, eff, c->err))) {
				json_decref(eff);
				json_decref(rec);
				return agree(c, eff ? rc : scar_error_set(c->err, SCAR_ENOMEM,
									  "out of memory"));
			}
			json_object_set_new(rec, "effective", eff);
		}
		if (o->resume)
			json_object_set_new(rec, "resume_iter", json_integer((json_int_t)c->clock));
		if (o->resume && o->resume_info) {
			const struct scar_train_resume_info *ri = o->resume_info;

			json_object_set_new(rec, "resume_newest_iter",
					    json_integer((json_int_t)ri->newest_iter));
			json_object_set_new(rec, "resume_skipped_partial",
					    json_integer((json_int_t)ri->newer_partial));
			json_object_set_new(rec, "resume_skipped_damaged",
					    json_integer((json_int_t)ri->damaged));
		}
		if (c->dist)
			json_object_set_new(rec, "ranks", json_integer((json_int_t)c->P));
	}
	if ((rc = agree(c, scar_train_emit(c, rec))))
		return rc;

	/* The cost is measured from the start, or from the checkpoint resumed. */
	c->cost_clock = c->clock;
	c->cost_iter = c->st->iteration;
	/* The saved view starts as the current state, saved in full. */
	if ((rc = agree(c, scar_state_clone(&c->saved, c->st, c->err))) ||
	    (rc = agree(c, scar_train_ages_init(c, c->st->iteration))) ||
	    (rc = agree(c, scar_train_rewind_check(c))))
		return rc;
	if (!o->resume)
		return (rc = agree(c, record_iteration(c, 0, 1))) ? rc :
			agree(c, c->ops->checkpoint(c, 1));
	/* The saved view and full recovery's base as the run had them at the resumed iteration. */
	rc = scar_state_clone(&c->last_full, c->st, c->err);
	if (!rc && o->resume_view_dir) {
		struct scar_store from;

		scar_store_init(&from, o->resume_view_dir);
		rc = scar_store_saved_view(&from, c->st, c->saved, &c->last_full, c->ages, c->err);
	} else if (!rc) {
		rc = scar_store_saved_view(&c->store, c->st, c->saved, &c->last_full, c->ages,
					   c->err);
	}
	if ((rc = agree(c, rc)))
		return rc;
	/* Objectives before the resume point are unknown; pad so clocks index. */
	for (uint64_t k = 0; k < c->clock; k++)
		if ((rc = push_obj(c, NAN)))
			break;
	return (rc = agree(c, rc)) ? rc : agree(c, record_iteration(c, 0, 1));
}

/* Tell opts->progress where the run is (rank 0). */
static void progress(const struct scar_train_ctx *c, const struct scar_train_cost *ci,
		     uint64_t start, uint64_t limit)
{
	struct scar_train_progress p = { 0 };

	if (!c->o->progress || c->R != 0)
		return;
	p.clock = c->clock;
	p.start = start;
	p.iters = c->o->iters;
	p.limit = limit;
	p.target = ci->have ? ci->target : NAN;
	p.objective = c->res->final_objective;
	p.objective_name = c->def->objective_name;
	c->o->progress(&p, c->o->progress_arg);
}

int scar_train_loop(struct scar_train_ctx *c, const struct scar_train_cost *ci, int *done)
{
	const struct scar_train_opts *o = c->o;
	uint64_t N = o->iters, period = scar_train_policy_period(o);
	uint64_t limit = o->measure_cost ? N + (o->cost_cap ? o->cost_cap : N) : N;
	uint64_t start = c->clock;
	size_t nprev = c->st->ntensors;
	void **prev = calloc(nprev, sizeof(*prev));	/* per tensor: param values before the step */
	int rc = 0;

	*done = 0;
	for (size_t i = 0; !rc && i < nprev; i++)
		if (!prev || (is_param(c->st->tensors[i]) &&
			      !(prev[i] = malloc(scar_tensor_bytes(c->st->tensors[i]) + 1))))
			rc = scar_error_set(c->err, SCAR_ENOMEM, "out of memory");
	if ((rc = agree(c, rc)))
		goto out;
	/* A real failure's survivors resumed: the dead ranks' shards, as a failure here. */
	if (o->resume && o->resume_lost && (rc = agree(c, fail_and_recover(c, o->resume_lost))))
		goto out;
	if (c->ops->publish && (rc = c->ops->publish(c)))
		goto out;
	progress(c, ci, c->clock, limit);
	while (!*done && c->clock < limit) {
		struct scar_state *st = c->st;
		double step2 = 0;

		for (size_t i = 0; i < nprev; i++)
			if (prev[i])
				memcpy(prev[i], st->tensors[i]->data, scar_tensor_bytes(st->tensors[i]));
		/* A step's errors are the same on every rank (replicated state): no agreement. */
		if ((rc = c->ops->step(c))) {
			if (rc == SCAR_EDIVERGED)	/* the step's own check: non-finite parameters */
				rc = agree(c, diverged(c, c->clock + 1, st->iteration + 1, NAN,
						       "nonfinite", NAN));
			goto out;
		}
		st->iteration++;
		c->clock++;
		if ((rc = agree(c, scar_train_rewind_check(c))))
			goto out;
		/* The tensors' squared distances added in tensor order. */
		for (size_t i = 0; i < nprev; i++)
			if (prev[i])
				step2 += scar_train_sqdist(st->tensors[i], st->tensors[i]->data, prev[i],
							   0, scar_tensor_elems(st->tensors[i]));
		if ((rc = agree(c, scar_train_auto_step(c, sqrt(step2)))) ||
		    (rc = agree(c, record_iteration(c, step2, 0))))
			goto out;
		if (o->policy != SCAR_POLICY_NONE && st->iteration % period == 0 &&
		    (rc = agree(c, c->ops->checkpoint(c, o->policy == SCAR_POLICY_FULL))))
			goto out;
		if (c->clock <= N && scar_train_fails_at(o, c->clock) &&
		    (rc = agree(c, fail_and_recover(c, NULL))))
			goto out;
		/* Background checkpoints that became durable: their events, in order. */
		if (c->ops->collect && (rc = c->ops->collect(c, 0)))
			goto out;
		progress(c, ci, start, limit);
		if (o->measure_cost && ci->have && c->clock >= N && c->clock >= c->cost_clock &&
		    reached(c->def, smoothed(c->obj, c->clock, o->cost_window), ci->target))
			*done = 1;
		if (!o->measure_cost && c->clock >= N)
			*done = 1;
		if (c->ops->publish && (rc = c->ops->publish(c)))
			goto out;
	}
	/* The run's checkpoints are all durable before its summary. */
	if (c->ops->collect)
		rc = c->ops->collect(c, 1);
out:
	for (size_t i = 0; prev && i < nprev; i++)
		free(prev[i]);
	free(prev);
	return rc;
}

int scar_train_finish(struct scar_train_ctx *c, const struct scar_train_cost *ci, int done)
{
	const struct scar_train_opts *o = c->o;
	struct scar_train_result *res = c->res;
	json_t *rec;
	int rc = 0;

	if (o->measure_cost && ci->have) {
		uint64_t w = o->cost_window, k2, kr, wp, wr;
		double fp, fr;
		int censored = !done;

		/*
		 * Both runs are searched from the last perturbation on: the
		 * perturbed run from its clock, the reference from the state
		 * iteration the perturbed run went on from. A perturbation that
		 * changes nothing therefore costs exactly 0 wherever it falls, and
		 * a rollback from T to a checkpoint at C exactly T - C.
		 */
		kr = first_reach(c->def, ci->ref, c->cost_iter, ci->nref, w, ci->target);
		if (kr == ci->nref)
			return agree(c, scar_error_set(c->err, SCAR_EINVAL,
				"the reference does not reach the target after iteration %llu (it ends at %zu)",
				(unsigned long long)c->cost_iter, ci->nref - 1));
		k2 = done ? first_reach(c->def, c->obj, c->cost_clock, c->clock + 1, w, ci->target) :
			c->clock;
		res->total_cost = (int64_t)k2 - (int64_t)kr;
		res->censored = censored;
		crossing(ci->ref, kr, c->cost_iter, w, ci->target, &wr, &fr);
		crossing(c->obj, k2, c->cost_clock, w, ci->target, &wp, &fp);
		res->cost_interp = censored ? (double)res->total_cost :
			(double)((int64_t)wp - (int64_t)wr) + (fp - fr);
		rec = json_pack("{s:s, s:f, s:I, s:I, s:I, s:f, s:b, s:I, s:I, s:I}", "type", "cost",
				"target", ci->target, "reference_iter", (json_int_t)kr,
				"perturbed_iter", (json_int_t)k2, "cost", (json_int_t)res->total_cost,
				"cost_interp", res->cost_interp, "censored", censored,
				"window", (json_int_t)o->cost_window,
				"from_iter", (json_int_t)c->cost_clock,
				"from_state_iter", (json_int_t)c->cost_iter);
		if ((rc = agree(c, scar_train_emit(c, rec))))
			return rc;
	}
	res->clock = c->clock;
	rec = json_pack("{s:s, s:I, s:I, s:f, s:I, s:I, s:I, s:I, s:I}", "type", "summary",
			"iters", (json_int_t)c->clock, "state_iter", (json_int_t)c->st->iteration,
			"final_objective", res->final_objective, "failures", (json_int_t)res->failures,
			"total_cost", (json_int_t)res->total_cost,
			"checkpoints", (json_int_t)res->checkpoints,
			"checkpoint_rows", (json_int_t)res->checkpoint_rows,
			"checkpoint_bytes", (json_int_t)res->checkpoint_bytes);
	if (rec) {
		json_object_set_new(rec, "censored", json_boolean(res->censored));
		if (c->dist) {
			json_object_set_new(rec, "ranks", json_integer((json_int_t)c->P));
			json_object_set_new(rec, "comm_bytes", json_integer((json_int_t)c->comm_total));
		}
		if (c->def->heldout && c->R == 0) {
			double v;

			if ((rc = c->def->heldout(c->m, c->st, &v, c->err))) {
				json_decref(rec);
				return agree(c, rc);
			}
			json_object_set_new(rec, "final_heldout", json_real(v));
		}
		if (o->timing) {
			json_object_set_new(rec, "checkpoint_seconds", json_real(res->checkpoint_seconds));
			json_object_set_new(rec, "select_seconds", json_real(res->select_seconds));
			if (o->ckpt_in_flight && o->ckpt_dir)
				json_object_set_new(rec, "background_seconds",
						    json_real(res->background_seconds));
			json_object_set_new(rec, "elapsed", json_real(scar_train_now() - c->t0));
		}
	}
	if ((rc = agree(c, scar_train_emit(c, rec))) || (rc = agree(c, scar_train_set_clock(c, c->st))))
		return rc;
	res->final_state = c->st;
	c->st = NULL;
	return 0;
}

void scar_train_ctx_release(struct scar_train_ctx *c, int rc, double **objs, size_t *nobjs)
{
	/* Hand the objective series to a caller running this as a reference. */
	if (!rc && objs) {
		*objs = c->obj;
		*nobjs = c->nobj;
		c->obj = NULL;
	}
	free(c->obj);
	c->obj = NULL;
	scar_state_free(c->st);
	scar_train_ages_free(c);
	scar_state_free(c->saved);
	scar_state_free(c->last_full);
	c->st = c->saved = c->last_full = NULL;
	if (c->m)
		c->def->free(c->m);
	c->m = NULL;
}
