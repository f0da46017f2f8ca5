/*
 * train.c - the training loop: checkpoint policies, failures, recovery and
 * iteration cost (see scar/train.h; the semantics are in scar-train(1)).
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "scar/ckpt.h"
#include "scar/events.h"
#include "scar/model.h"
#include "scar/rng.h"
#include "scar/shard.h"
#include "scar/train.h"
#include "train_internal.h"
#include "topk.h"


static const char *const policy_names[] = { "none", "full", "round-robin", "random", "priority" };
static const char *const recovery_names[] = { "partial", "full", "none" };

const char *scar_policy_name(enum scar_policy p)
{
	return (unsigned)p < 5 ? policy_names[p] : NULL;
}

int scar_policy_parse(const char *name)
{
	for (int i = 0; name && i < 5; i++)
		if (strcmp(name, policy_names[i]) == 0)
			return i;
	return -1;
}

const char *scar_recovery_name(enum scar_recovery r)
{
	return (unsigned)r < 3 ? recovery_names[r] : NULL;
}

int scar_recovery_parse(const char *name)
{
	for (int i = 0; name && i < 3; i++)
		if (strcmp(name, recovery_names[i]) == 0)
			return i;
	return -1;
}

void scar_train_opts_init(struct scar_train_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->shards = 1;
	o->iters = 50;
	o->policy = SCAR_POLICY_NONE;
	o->interval = 8;
	o->fraction = 1.0;
	o->ckpt_compress = 1;
	o->ckpt_sync = 1;
	o->recovery = SCAR_RECOVER_PARTIAL;
	o->lose_mode = SCAR_LOSE_COUNT;
	o->lose_count = 1;
	o->cost_window = 1;
	o->tool = "scar-train";
}

struct trainer {
	const struct scar_train_opts *o;
	const struct scar_model_def *def;
	struct scar_model *m;
	struct scar_state *st;		/* live state */
	struct scar_state *saved;	/* saved view: param rows as last checkpointed */
	struct scar_state *last_full;	/* the last full checkpoint, whole */
	void **prev;			/* per tensor: param values before the step */
	uint64_t clock;
	double t0;
	double *obj;			/* objective by clock, for the cost */
	size_t nobj, capobj;
	uint64_t last_fail_clock;
	struct scar_train_result *res;
	struct scar_error *err;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/*
 * A run killed while writing a checkpoint leaves its temporary file
 * (.ckpt-N.ckpt.tmp.XXXXXX, see scar_ckpt_save) behind. Remove those last
 * modified before this run started: no live writer of ours owns them (two
 * trainers sharing one directory are not supported anyway). Best effort:
 * a temporary that cannot be removed is only clutter, never read.
 */
static void remove_stale_temps(const char *dir)
{
	struct timespec start;
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return;
	clock_gettime(CLOCK_REALTIME, &start);
	while ((de = readdir(d))) {
		char path[4096];
		struct stat sb;

		if (strncmp(de->d_name, ".ckpt-", 6) != 0 || !strstr(de->d_name, ".ckpt.tmp."))
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= sizeof(path))
			continue;
		if (lstat(path, &sb) == 0 && S_ISREG(sb.st_mode) &&
		    (sb.st_mtim.tv_sec < start.tv_sec ||
		     (sb.st_mtim.tv_sec == start.tv_sec && sb.st_mtim.tv_nsec < start.tv_nsec)))
			unlink(path);
	}
	closedir(d);
}

static int emit(struct trainer *t, json_t *rec)
{
	int rc = 0;

	if (!rec)
		return scar_error_set(t->err, SCAR_ENOMEM, "out of memory");
	if (t->o->events)
		rc = scar_event_write(t->o->events, rec, t->err);
	json_decref(rec);
	return rc;
}

static int is_param(const struct scar_tensor *x)
{
	return x->role == SCAR_ROLE_PARAM;
}

/* The squared distance both trainers share (train_internal.h). */
#define sqdist scar_train_sqdist

static int push_obj(struct trainer *t, double v)
{
	if (t->nobj == t->capobj) {
		size_t ncap = t->capobj ? t->capobj * 2 : 256;
		double *p = realloc(t->obj, ncap * sizeof(*p));

		if (!p)
			return scar_error_set(t->err, SCAR_ENOMEM, "out of memory");
		t->obj = p;
		t->capobj = ncap;
	}
	t->obj[t->nobj++] = v;
	return 0;
}

/* ---- checkpoints ---- */

/* Mark in `sel` (rows bytes) the rows the policy saves this time for tensor x. */
static int select_rows(struct trainer *t, size_t ti, uint8_t *sel, uint64_t ncp)
{
	const struct scar_train_opts *o = t->o;
	struct scar_tensor *x = t->st->tensors[ti];
	uint64_t rows = scar_tensor_rows(x), n = scar_train_policy_rows(o, rows);

	memset(sel, 0, rows);
	if (n == rows) {
		memset(sel, 1, rows);
		return 0;
	}
	switch (o->policy) {
	case SCAR_POLICY_ROUND_ROBIN: {
		uint64_t start = ((ncp % rows) * (n % rows)) % rows; /* rows < 2^32 */

		for (uint64_t i = 0; i < n; i++)
			sel[(start + i) % rows] = 1;
		return 0;
	}
	case SCAR_POLICY_RANDOM: {
		struct scar_rng rng;
		uint32_t *idx = malloc(rows * sizeof(*idx));

		if (!idx)
			return scar_error_set(t->err, SCAR_ENOMEM, "out of memory");
		scar_rng_seed_stream(&rng, o->fail_seed ^ (ti * 0x9e3779b97f4a7c15ULL),
				     SCAR_STREAM_RANDOM_POLICY + (t->st->iteration << 4));
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
		const struct scar_tensor *sv = t->saved->tensors[ti];
		struct scar_prio *pr = malloc(rows * sizeof(*pr));

		if (!pr)
			return scar_error_set(t->err, SCAR_ENOMEM, "out of memory");
		for (uint64_t r = 0; r < rows; r++) {
			pr[r].p = scar_row_priority(x, sv, r);
			if (isnan(pr[r].p))
				pr[r].p = INFINITY;	/* a destroyed row differs most */
			pr[r].row = r;
		}
		scar_prio_select(pr, rows, n);
		for (uint64_t i = 0; i < n; i++)
			sel[pr[i].row] = 1;
		free(pr);
		return 0;
	}
	default:
		memset(sel, 1, rows);
		return 0;
	}
}

static int set_extra(struct trainer *t, struct scar_state *s)
{
	if (json_object_set_new(s->extra, "clock", json_integer((json_int_t)t->clock)))
		return scar_error_set(t->err, SCAR_ENOMEM, "out of memory");
	return 0;
}

static int write_file(struct trainer *t, const struct scar_state *s, uint64_t *file_bytes)
{
	struct scar_ckpt_save_opts so;
	char path[4096];
	struct stat sb;
	int rc;

	scar_ckpt_save_opts_init(&so);
	so.compress = t->o->ckpt_compress;
	so.sync = t->o->ckpt_sync;
	if ((size_t)snprintf(path, sizeof(path), "%s/ckpt-%010llu.ckpt", t->o->ckpt_dir,
			     (unsigned long long)s->iteration) >= sizeof(path))
		return scar_error_set(t->err, SCAR_EINVAL, "checkpoint directory name too long");
	rc = scar_ckpt_save(s, path, &so, t->err);
	if (rc)
		return rc;
	*file_bytes = stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
	return 0;
}

/*
 * Take a checkpoint now: full (the whole state, also the base of full
 * recovery) or partial (the selected param rows only). Updates the saved
 * view, writes the file when there is a directory, emits the event.
 */
static int checkpoint(struct trainer *t, int full)
{
	struct scar_state *st = t->st, view;
	struct scar_tensor *vt = NULL, **vp = NULL;
	uint64_t rows_written = 0, bytes = 0, file_bytes = 0, ncp;
	double t1 = now(), secs, sel_secs = 0, ts;
	int rc = 0;
	size_t nv = 0;
	json_t *rec;

	ncp = st->iteration / scar_train_policy_period(t->o);
	if (full) {
		struct scar_state *c;

		if ((rc = set_extra(t, st)))
			return rc;
		for (size_t i = 0; i < st->ntensors; i++)
			if (is_param(st->tensors[i])) {
				rows_written += scar_tensor_rows(st->tensors[i]);
				bytes += scar_tensor_bytes(st->tensors[i]);
			}
		if (t->o->ckpt_dir && (rc = write_file(t, st, &file_bytes)))
			return rc;
		if ((rc = scar_state_clone(&c, st, t->err)))
			return rc;
		scar_state_free(t->last_full);
		t->last_full = c;
		for (size_t i = 0; i < st->ntensors; i++)
			if (is_param(st->tensors[i]))
				memcpy(t->saved->tensors[i]->data, st->tensors[i]->data,
				       scar_tensor_bytes(st->tensors[i]));
		goto done;
	}

	/* Partial: a borrowed view of the param tensors with present maps. */
	vt = calloc(st->ntensors, sizeof(*vt));
	vp = calloc(st->ntensors, sizeof(*vp));
	if (!vt || !vp) {
		rc = scar_error_set(t->err, SCAR_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < st->ntensors; i++) {
		struct scar_tensor *x = st->tensors[i];
		uint64_t rows = scar_tensor_rows(x);
		size_t rb = scar_tensor_row_bytes(x);

		if (!is_param(x))
			continue;
		vt[nv] = *x;
		vt[nv].present = malloc(rows ? rows : 1);
		if (!vt[nv].present) {
			rc = scar_error_set(t->err, SCAR_ENOMEM, "out of memory");
			goto out;
		}
		vp[nv] = &vt[nv];
		nv++;
		ts = now();
		if ((rc = select_rows(t, i, vt[nv - 1].present, ncp)))
			goto out;
		sel_secs += now() - ts;
		for (uint64_t r = 0; r < rows; r++)
			if (vt[nv - 1].present[r]) {
				memcpy(scar_tensor_row(t->saved->tensors[i], r), scar_tensor_row(x, r), rb);
				rows_written++;
				bytes += rb;
			}
	}
	if (t->o->ckpt_dir) {
		view = *st;
		view.ntensors = nv;
		view.tensors = vp;
		if ((rc = set_extra(t, st)))
			goto out;
		if ((rc = write_file(t, &view, &file_bytes)))
			goto out;
	}
done:
	secs = now() - t1;
	t->res->checkpoints++;
	t->res->checkpoint_rows += rows_written;
	t->res->checkpoint_bytes += file_bytes ? file_bytes : bytes;
	t->res->checkpoint_seconds += secs;
	t->res->select_seconds += sel_secs;
	rec = json_pack("{s:s, s:I, s:I, s:s, s:s, s:I, s:I}", "type", "checkpoint",
			"iter", (json_int_t)t->clock, "state_iter", (json_int_t)st->iteration,
			"policy", full && t->o->policy != SCAR_POLICY_FULL ? "full" :
				scar_policy_name(t->o->policy),
			"kind", full ? "full" : "partial", "rows", (json_int_t)rows_written,
			"bytes", (json_int_t)(file_bytes ? file_bytes : bytes));
	if (rec && t->o->timing) {
		json_object_set_new(rec, "seconds", json_real(secs));
		json_object_set_new(rec, "select_seconds", json_real(sel_secs));
	}
	rc = emit(t, rec);
out:
	for (size_t i = 0; vt && i < nv; i++)
		free(vt[i].present);
	free(vt);
	free(vp);
	return rc;
}

/* ---- failures and recovery ---- */

/*
 * Destroy the lost rows: floats become NaN, integers all-ones, so a recovery
 * that forgets a row shows up at once. With recovery "none" they become zero.
 */
static void destroy_rows(struct scar_tensor *x, const uint8_t *lost, uint32_t S, int zero)
{
	uint64_t rows = scar_tensor_rows(x);
	size_t rb = scar_tensor_row_bytes(x);

	for (uint64_t r = 0; r < rows; r++)
		if (lost[scar_shard_of_row(r, S)])
			memset(scar_tensor_row(x, r), zero ? 0 : 0xff, rb);
}

static int fail_and_recover(struct trainer *t)
{
	struct scar_state *st = t->st;
	uint32_t S = st->shards;
	uint8_t *lost = malloc(S);
	uint64_t rows_lost = 0, pre_iter = st->iteration;
	struct scar_state *pre = NULL;
	double d2 = 0;
	json_t *shards = json_array(), *rec;
	int rc = 0;

	if (!lost || !shards) {
		rc = scar_error_set(t->err, SCAR_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = scar_train_pick_shards(t->o, S, t->clock, lost, t->err)))
		goto out;
	for (uint32_t s = 0; s < S; s++)
		if (lost[s])
			json_array_append_new(shards, json_integer(s));
	/* Keep the pre-failure state to measure the perturbation recovery causes. */
	if ((rc = scar_state_clone(&pre, st, t->err)))
		goto out;
	for (size_t i = 0; i < st->ntensors; i++) {
		struct scar_tensor *x = st->tensors[i];

		if (!is_param(x))
			continue;
		for (uint64_t r = 0; r < scar_tensor_rows(x); r++)
			rows_lost += lost[scar_shard_of_row(r, S)];
		destroy_rows(x, lost, S, t->o->recovery == SCAR_RECOVER_NONE);
	}
	t->res->failures++;
	t->last_fail_clock = t->clock;
	rec = json_pack("{s:s, s:I, s:I, s:O, s:I}", "type", "failure", "iter", (json_int_t)t->clock,
			"state_iter", (json_int_t)st->iteration, "shards", shards,
			"rows_lost", (json_int_t)rows_lost);
	if ((rc = emit(t, rec)))
		goto out;

	if (t->o->recovery == SCAR_RECOVER_FULL) {
		struct scar_state *c;

		if ((rc = scar_state_clone(&c, t->last_full, t->err)))
			goto out;
		scar_state_free(t->st);
		t->st = st = c;
	} else if (t->o->recovery == SCAR_RECOVER_PARTIAL) {
		for (size_t i = 0; i < st->ntensors; i++) {
			struct scar_tensor *x = st->tensors[i];
			size_t rb = scar_tensor_row_bytes(x);

			if (!is_param(x))
				continue;
			for (uint64_t r = 0; r < scar_tensor_rows(x); r++)
				if (lost[scar_shard_of_row(r, S)])
					memcpy(scar_tensor_row(x, r),
					       scar_tensor_row(t->saved->tensors[i], r), rb);
		}
	}
	for (size_t i = 0; i < st->ntensors; i++) {
		struct scar_tensor *x = st->tensors[i];

		if (is_param(x))
			d2 += sqdist(x, x->data, pre->tensors[i]->data, 0, scar_tensor_elems(x));
	}
	rec = json_pack("{s:s, s:I, s:s, s:O, s:I, s:f, s:I, s:I}", "type", "recovery",
			"iter", (json_int_t)t->clock, "strategy", scar_recovery_name(t->o->recovery),
			"shards", shards,
			"rows_restored", (json_int_t)(t->o->recovery == SCAR_RECOVER_NONE ? 0 : rows_lost),
			"delta_norm", sqrt(d2), "failed_state_iter", (json_int_t)pre_iter,
			"resume_state_iter", (json_int_t)st->iteration);
	rc = emit(t, rec);
out:
	scar_state_free(pre);
	json_decref(shards);
	free(lost);
	return rc;
}

/* ---- the loop ---- */

/* A shard that can hold no row of any parameter tensor is a mistake. */
static int check_shards(struct trainer *t)
{
	const struct scar_tensor *big = NULL;

	for (size_t i = 0; i < t->st->ntensors; i++) {
		const struct scar_tensor *x = t->st->tensors[i];

		if (is_param(x) && (!big || scar_tensor_rows(x) > scar_tensor_rows(big)))
			big = x;
	}
	if (big && t->o->shards > scar_tensor_rows(big))
		return scar_error_set(t->err, SCAR_EINVAL,
				      "%u shards are more than the %llu rows of the largest parameter tensor '%s'",
				      (unsigned)t->o->shards, (unsigned long long)scar_tensor_rows(big),
				      big->name);
	return 0;
}

static int build_fresh(struct trainer *t, json_t *config)
{
	int rc;

	if ((rc = scar_state_new(&t->st, t->def->name, t->err)))
		return rc;
	json_decref(t->st->config);
	t->st->config = json_incref(config);
	t->st->shards = t->o->shards;
	if ((rc = t->def->init_state(t->m, t->st, t->err)))
		return rc;
	return check_shards(t);
}

/* The resumed state must have exactly the tensors a fresh one would. */
static int check_layout(struct trainer *t, json_t *config)
{
	struct scar_state *fresh = NULL;
	struct scar_state *keep = t->st;
	int rc;

	t->st = NULL;
	rc = build_fresh(t, config);
	fresh = t->st;
	t->st = keep;
	if (rc)
		goto out;
	if (fresh->ntensors != keep->ntensors) {
		rc = scar_error_set(t->err, SCAR_EMISMATCH,
				    "checkpoint has %zu tensors, model '%s' expects %zu",
				    keep->ntensors, t->def->name, fresh->ntensors);
		goto out;
	}
	for (size_t i = 0; i < fresh->ntensors; i++) {
		const struct scar_tensor *a = fresh->tensors[i], *b = keep->tensors[i];

		if (strcmp(a->name, b->name) || !scar_tensor_same_layout(a, b) || a->role != b->role) {
			rc = scar_error_set(t->err, SCAR_EMISMATCH,
					    "checkpoint tensor '%s' does not match model '%s' tensor '%s'",
					    b->name, t->def->name, a->name);
			goto out;
		}
		if (b->present) {
			rc = scar_error_set(t->err, SCAR_EINVAL,
					    "cannot resume from a partial checkpoint (tensor '%s' lacks rows); apply it over a full one first",
					    b->name);
			goto out;
		}
	}
out:
	scar_state_free(fresh);
	return rc;
}

static int record_iteration(struct trainer *t, double step2, int first)
{
	const struct scar_model_def *d = t->def;
	double obj, v;
	json_t *rec;
	int rc;

	if ((rc = d->objective(t->m, t->st, &obj, t->err)))
		return rc;
	if (!isfinite(obj) || (!first && !isfinite(step2)))
		return scar_error_set(t->err, SCAR_EDIVERGED,
				      "training diverged at iteration %llu (objective %g)",
				      (unsigned long long)t->clock, obj);
	if ((rc = push_obj(t, obj)))
		return rc;
	t->res->final_objective = obj;
	rec = json_pack("{s:s, s:I, s:I, s:f}", "type", "iteration", "iter", (json_int_t)t->clock,
			"state_iter", (json_int_t)t->st->iteration, "objective", obj);
	if (!rec)
		return scar_error_set(t->err, SCAR_ENOMEM, "out of memory");
	if (!first)
		json_object_set_new(rec, "step_norm", json_real(sqrt(step2)));
	if (d->dist_to_opt) {
		if ((rc = d->dist_to_opt(t->m, t->st, &v, t->err))) {
			json_decref(rec);
			return rc;
		}
		json_object_set_new(rec, "dist_opt", json_real(v));
	}
	if (d->heldout && (first || t->clock == t->o->iters ||
			   (t->o->heldout_every && t->clock % t->o->heldout_every == 0))) {
		if ((rc = d->heldout(t->m, t->st, &v, t->err))) {
			json_decref(rec);
			return rc;
		}
		json_object_set_new(rec, "heldout", json_real(v));
	}
	if (t->o->timing)
		json_object_set_new(rec, "elapsed", json_real(now() - t->t0));
	return emit(t, rec);
}

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

struct costinfo {
	int have;
	double target;
	uint64_t ref_iter;
	double ref_cross;	/* interpolated clock of reaching the target */
};

/*
 * Where between clocks k-1 and k the smoothed objective crossed the target,
 * by linear interpolation, so that costs below one iteration can be told
 * apart; k itself when there is no usable previous value.
 */
static double crossing(const double *v, uint64_t k, uint64_t w, double target)
{
	double prev, cur;

	if (k == 0)
		return 0;
	prev = smoothed(v, k - 1, w);
	cur = smoothed(v, k, w);
	if (isnan(prev) || prev == cur)
		return (double)k;
	return (double)(k - 1) + fmin(1.0, fmax(0.0, (prev - target) / (prev - cur)));
}

static int reference_target(const struct trainer *t, const double *ref, size_t nref,
			    struct costinfo *ci)
{
	uint64_t N = t->o->iters, w = t->o->cost_window;

	if (nref < N + 1)
		return scar_error_set(t->err, SCAR_EINVAL,
				      "reference has %zu iterations, need %llu", nref ? nref - 1 : 0,
				      (unsigned long long)N);
	ci->target = smoothed(ref, N, w);
	ci->ref_iter = N;
	for (uint64_t k = 0; k <= N; k++)
		if (reached(t->def, smoothed(ref, k, w), ci->target)) {
			ci->ref_iter = k;
			break;
		}
	ci->ref_cross = crossing(ref, ci->ref_iter, w, ci->target);
	ci->have = 1;
	return 0;
}

static int train_core(const struct scar_train_opts *o, struct scar_train_result *res,
		      struct scar_error *err, double **objs, size_t *nobjs);

/* The unperturbed run with the same seed and data order: its objectives by clock. */
static int run_reference(const struct scar_train_opts *o, double **ref, size_t *nref,
			 struct scar_error *err)
{
	struct scar_train_opts ro = *o;
	struct scar_train_result rr;
	int rc;

	ro.policy = SCAR_POLICY_NONE;
	ro.ckpt_dir = NULL;
	ro.nfail_at = 0;
	ro.fail_prob = 0;
	ro.measure_cost = 0;
	ro.events = NULL;
	ro.progress = NULL;
	ro.resume = NULL;
	rc = train_core(&ro, &rr, err, ref, nref);
	if (rc)
		return rc;
	scar_state_free(rr.final_state);
	return 0;
}

static int rebuild_saved_view(struct trainer *t)
{
	struct scar_ckpt_entry *ents = NULL;
	size_t n = 0, skipped = 0;
	int rc, based = 0;

	if (!t->o->ckpt_dir)
		return 0;
	rc = scar_ckpt_list(t->o->ckpt_dir, &ents, &n, &skipped, t->err);
	if (rc)
		return rc;
	for (size_t i = 0; i < n && ents[i].iteration <= t->st->iteration; i++) {
		struct scar_state *c;

		if (!based && ents[i].partial)
			continue;
		if ((rc = scar_ckpt_load(ents[i].path, &c, t->err)))
			break;
		if (!ents[i].partial) {
			/* A full one replaces the view outright. */
			for (size_t k = 0; k < c->ntensors && k < t->saved->ntensors; k++)
				if (is_param(c->tensors[k]) &&
				    scar_tensor_same_layout(c->tensors[k], t->saved->tensors[k]))
					memcpy(t->saved->tensors[k]->data, c->tensors[k]->data,
					       scar_tensor_bytes(c->tensors[k]));
			based = 1;
		} else {
			uint64_t it = t->saved->iteration;

			rc = scar_ckpt_apply(t->saved, c, t->err);
			t->saved->iteration = it;
		}
		scar_state_free(c);
		if (rc)
			break;
	}
	scar_ckpt_list_free(ents, n);
	return rc;
}

int scar_train_run(const struct scar_train_opts *o, struct scar_train_result *res,
		   struct scar_error *err)
{
	return train_core(o, res, err, NULL, NULL);
}

static int train_core(const struct scar_train_opts *o, struct scar_train_result *res,
		      struct scar_error *err, double **objs, size_t *nobjs)
{
	struct trainer t;
	size_t nprev = 0;
	json_t *config = NULL, *rec;
	double step2 = 0, *ref = NULL;
	size_t nref = 0;
	struct costinfo ci = { 0 };
	uint64_t period, N = o->iters, limit;
	int rc = 0, done = 0;

	memset(&t, 0, sizeof(t));
	memset(res, 0, sizeof(*res));
	t.o = o;
	t.res = res;
	t.err = err;
	t.t0 = now();
	if (o->ckpt_dir)
		remove_stale_temps(o->ckpt_dir);

	/* Validate. */
	t.def = scar_model_find(o->resume ? o->resume->model : o->model);
	if (!t.def)
		return scar_error_set(err, SCAR_EINVAL, "unknown model '%s'",
				      o->resume ? o->resume->model : o->model ? o->model : "");
	if (!(o->fraction > 0 && o->fraction <= 1))
		return scar_error_set(err, SCAR_EINVAL, "checkpoint fraction %g is not in (0, 1]",
				      o->fraction);
	if (o->interval < 1)
		return scar_error_set(err, SCAR_EINVAL, "checkpoint interval must be at least 1");
	if (o->shards < 1 || o->shards > SCAR_MAX_SHARDS)
		return scar_error_set(err, SCAR_EINVAL, "shard count %u is not in [1, %u]",
				      o->shards, SCAR_MAX_SHARDS);
	if (o->cost_window < 1)
		return scar_error_set(err, SCAR_EINVAL, "cost window must be at least 1");
	for (size_t i = 0; i < o->nfail_at; i++)
		if (o->fail_at[i] < 1 || o->fail_at[i] > N)
			return scar_error_set(err, SCAR_EINVAL,
					      "failure at iteration %llu is outside 1..%llu",
					      (unsigned long long)o->fail_at[i], (unsigned long long)N);
	if (o->lose_mode == SCAR_LOSE_FRACTION && !(o->lose_fraction > 0 && o->lose_fraction <= 1))
		return scar_error_set(err, SCAR_EINVAL, "lost fraction %g is not in (0, 1]",
				      o->lose_fraction);
	if (o->fail_prob < 0 || o->fail_prob > 1)
		return scar_error_set(err, SCAR_EINVAL, "failure probability %g is not in [0, 1]",
				      o->fail_prob);

	/* Reference objectives for the iteration cost. */
	if (o->measure_cost) {
		if (o->reference) {
			size_t i;
			json_t *v;

			nref = json_array_size(o->reference);
			ref = malloc((nref ? nref : 1) * sizeof(*ref));
			if (!ref)
				return scar_error_set(err, SCAR_ENOMEM, "out of memory");
			json_array_foreach(o->reference, i, v)
				ref[i] = json_number_value(v);
		} else {
			rc = run_reference(o, &ref, &nref, err);
			if (rc)
				return rc;
		}
	}

	if (o->resume) {
		config = json_incref(o->resume->config);
	} else {
		config = o->config ? json_deep_copy(o->config) : json_object();
		if (!config) {
			rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
			goto out;
		}
		if ((rc = t.def->configure(config, err)))
			goto out;
	}
	if ((rc = t.def->create(&t.m, config, err)))
		goto out;
	if (o->resume) {
		if ((rc = scar_state_clone(&t.st, o->resume, err)))
			goto out;
		if ((rc = check_layout(&t, config)))
			goto out;
		{
			json_t *c = json_object_get(t.st->extra, "clock");

			t.clock = json_is_integer(c) ? (uint64_t)json_integer_value(c) : t.st->iteration;
		}
	} else if ((rc = build_fresh(&t, config))) {
		goto out;
	}
	if (ref && (rc = reference_target(&t, ref, nref, &ci)))
		goto out;

	/* Header. */
	rec = json_pack("{s:s, s:s, s:i, s:s, s:s, s:s, s:O, s:I, s:s, s:b, s:s?, s:s, s:s, s:I, s:I, s:f, s:s}",
			"type", "header", "format", SCAR_EVENTS_FORMAT, "version", SCAR_EVENTS_VERSION,
			"tool", o->tool ? o->tool : "scar", "tool_version", SCAR_VERSION,
			"model", t.def->name, "config", config, "shards", (json_int_t)t.st->shards,
			"objective", t.def->objective_name,
			"objective_higher_better", t.def->objective_higher_better,
			"heldout", t.def->heldout_name,
			"policy", scar_policy_name(o->policy), "recovery", scar_recovery_name(o->recovery),
			"iters", (json_int_t)N, "interval", (json_int_t)o->interval,
			"fraction", o->fraction, "resumed", o->resume ? "yes" : "no");
	if (rec) {
		double c;

		json_object_set_new(rec, "dist_opt_known", json_boolean(t.def->dist_to_opt != NULL));
		if (t.def->contraction && t.def->contraction(t.m, &c, err) == 0)
			json_object_set_new(rec, "contraction", json_real(c));
		if (o->resume)
			json_object_set_new(rec, "resume_iter", json_integer((json_int_t)t.clock));
	}
	if ((rc = emit(&t, rec)))
		goto out;

	/* The saved view starts as the current state, saved in full. */
	if ((rc = scar_state_clone(&t.saved, t.st, err)))
		goto out;
	if (o->resume) {
		if ((rc = scar_state_clone(&t.last_full, t.st, err)) || (rc = rebuild_saved_view(&t)))
			goto out;
		/* Objectives before the resume point are unknown; pad so clocks index. */
		for (uint64_t k = 0; k < t.clock; k++)
			if ((rc = push_obj(&t, NAN)))
				goto out;
		if ((rc = record_iteration(&t, 0, 1)))
			goto out;
	} else {
		if ((rc = record_iteration(&t, 0, 1)) || (rc = checkpoint(&t, 1)))
			goto out;
	}

	nprev = t.st->ntensors;
	t.prev = calloc(nprev, sizeof(*t.prev));
	if (!t.prev) {
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
		goto out;
	}
	period = scar_train_policy_period(o);
	limit = o->measure_cost ? N + (o->cost_cap ? o->cost_cap : N) : N;
	while (!done && t.clock < limit) {
		struct scar_state *st = t.st;

		for (size_t i = 0; i < st->ntensors; i++) {
			if (!is_param(st->tensors[i]))
				continue;
			if (!t.prev[i] && !(t.prev[i] = malloc(scar_tensor_bytes(st->tensors[i]) + 1))) {
				rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
				goto out;
			}
			memcpy(t.prev[i], st->tensors[i]->data, scar_tensor_bytes(st->tensors[i]));
		}
		if ((rc = t.def->step(t.m, st, err)))
			goto out;
		st->iteration++;
		t.clock++;
		step2 = 0;
		for (size_t i = 0; i < st->ntensors; i++)
			if (is_param(st->tensors[i]))
				step2 += sqdist(st->tensors[i], st->tensors[i]->data, t.prev[i], 0,
						scar_tensor_elems(st->tensors[i]));
		if ((rc = record_iteration(&t, step2, 0)))
			goto out;
		if (o->policy != SCAR_POLICY_NONE && st->iteration % period == 0) {
			int full = o->policy == SCAR_POLICY_FULL;

			if ((rc = checkpoint(&t, full)))
				goto out;
		}
		if (t.clock <= N && scar_train_fails_at(o, t.clock) && (rc = fail_and_recover(&t)))
			goto out;
		if (o->progress)
			o->progress(t.clock, limit, o->progress_arg);
		if (o->measure_cost && ci.have && t.clock >= N && t.clock > t.last_fail_clock &&
		    reached(t.def, smoothed(t.obj, t.clock, o->cost_window), ci.target))
			done = 1;
		if (!o->measure_cost && t.clock >= N)
			done = 1;
	}

	if (o->measure_cost && ci.have) {
		uint64_t k2 = t.clock;
		int censored = !done;

		/* First clock after the last failure at which the target is reached. */
		for (uint64_t k = t.last_fail_clock + 1; done && k <= t.clock; k++)
			if (k < t.nobj && !isnan(t.obj[k]) &&
			    reached(t.def, smoothed(t.obj, k, o->cost_window), ci.target)) {
				k2 = k;
				break;
			}
		res->total_cost = (int64_t)k2 - (int64_t)ci.ref_iter;
		res->censored = censored;
		res->cost_interp = censored ? (double)res->total_cost :
			crossing(t.obj, k2, o->cost_window, ci.target) - ci.ref_cross;
		rec = json_pack("{s:s, s:f, s:I, s:I, s:I, s:f, s:b, s:I}", "type", "cost",
				"target", ci.target, "reference_iter", (json_int_t)ci.ref_iter,
				"perturbed_iter", (json_int_t)k2, "cost", (json_int_t)res->total_cost,
				"cost_interp", res->cost_interp, "censored", censored,
				"window", (json_int_t)o->cost_window);
		if ((rc = emit(&t, rec)))
			goto out;
	}
	res->clock = t.clock;
	rec = json_pack("{s:s, s:I, s:I, s:f, s:I, s:I, s:I, s:I, s:I}", "type", "summary",
			"iters", (json_int_t)t.clock, "state_iter", (json_int_t)t.st->iteration,
			"final_objective", res->final_objective, "failures", (json_int_t)res->failures,
			"total_cost", (json_int_t)res->total_cost,
			"checkpoints", (json_int_t)res->checkpoints,
			"checkpoint_rows", (json_int_t)res->checkpoint_rows,
			"checkpoint_bytes", (json_int_t)res->checkpoint_bytes);
	if (rec) {
		json_object_set_new(rec, "censored", json_boolean(res->censored));
		if (t.def->heldout) {
			double v;

			if ((rc = t.def->heldout(t.m, t.st, &v, err))) {
				json_decref(rec);
				goto out;
			}
			json_object_set_new(rec, "final_heldout", json_real(v));
		}
		if (o->timing) {
			json_object_set_new(rec, "checkpoint_seconds", json_real(res->checkpoint_seconds));
			json_object_set_new(rec, "select_seconds", json_real(res->select_seconds));
			json_object_set_new(rec, "elapsed", json_real(now() - t.t0));
		}
	}
	if ((rc = emit(&t, rec)))
		goto out;
	if ((rc = set_extra(&t, t.st)))
		goto out;
	res->final_state = t.st;
	t.st = NULL;
out:
	/* Hand the objective series to a caller running this as a reference. */
	if (!rc && objs) {
		*objs = t.obj;
		*nobjs = t.nobj;
		t.obj = NULL;
	}
	free(ref);
	for (size_t i = 0; t.prev && i < nprev; i++)
		free(t.prev[i]);
	free(t.prev);
	free(t.obj);
	scar_state_free(t.st);
	scar_state_free(t.saved);
	scar_state_free(t.last_full);
	if (t.m)
		t.def->free(t.m);
	json_decref(config);
	return rc;
}

json_t *scar_train_reference_from_events(const json_t *const *records, size_t n,
					 struct scar_error *err)
{
	json_t *arr = json_array();
	size_t got = 0;

	if (!arr) {
		scar_error_set(err, SCAR_ENOMEM, "out of memory");
		return NULL;
	}
	/* Index by clock; a stream of an unperturbed run has every clock once. */
	for (size_t i = 0; i < n; i++) {
		const char *type = json_string_value(json_object_get(records[i], "type"));
		json_t *it = json_object_get(records[i], "iter");
		json_t *obj = json_object_get(records[i], "objective");

		if (!type || strcmp(type, "iteration") || !json_is_integer(it) || !json_is_number(obj))
			continue;
		if ((size_t)json_integer_value(it) != got) {
			json_decref(arr);
			scar_error_set(err, SCAR_EFORMAT,
				       "reference stream: iteration %lld where %zu was expected",
				       (long long)json_integer_value(it), got);
			return NULL;
		}
		json_array_append_new(arr, json_real(json_number_value(obj)));
		got++;
	}
	if (!got) {
		json_decref(arr);
		scar_error_set(err, SCAR_EFORMAT, "reference stream has no iteration records");
		return NULL;
	}
	return arr;
}

int scar_train_load_resume(const char *path, struct scar_state **out, size_t *skipped,
			   char *used_path, size_t used_len, struct scar_error *err)
{
	struct scar_ckpt_entry *ents = NULL;
	struct stat sb;
	size_t n = 0, bad = 0;
	int rc;

	*out = NULL;
	if (skipped)
		*skipped = 0;
	if (strcmp(path, "-") == 0 || stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
		if (used_path)
			snprintf(used_path, used_len, "%s", path);
		return strcmp(path, "-") == 0 ? scar_ckpt_load_fd(0, "-", out, err) :
			scar_ckpt_load(path, out, err);
	}
	if ((rc = scar_ckpt_list(path, &ents, &n, &bad, err)))
		return rc;
	rc = scar_error_set_at(err, SCAR_ENOTFOUND, path, -1, -1,
			       "no complete full checkpoint in directory '%s'", path);
	/* Newest first: a damaged newest checkpoint is skipped for the previous good one. */
	for (size_t i = n; i-- > 0;) {
		struct scar_error e2;

		if (ents[i].partial)
			continue;
		scar_error_clear(&e2);
		if (scar_ckpt_load(ents[i].path, out, &e2) == 0) {
			if (used_path)
				snprintf(used_path, used_len, "%s", ents[i].path);
			rc = 0;
			break;
		}
		bad++;
	}
	if (skipped)
		*skipped = bad;
	scar_ckpt_list_free(ents, n);
	return rc;
}
