/*
 * ckpt_policy.c - checkpoints by a policy for a trainer that is not
 * scar-train (scar-ckpt save): a snapshot of the current parameters, the
 * iteration the caller passes, a run directory. The rows are chosen by the
 * one selection scar-train uses (scar_train_policy_select), against the
 * directory's saved view, which is kept in the directory as one file,
 * .scar-view.ckpt, updated with each checkpoint: a call reads one view,
 * not every checkpoint in the directory. The checkpoint files are the ones
 * scar-train writes (ckpt-N.ckpt, with the schedule in extra), so the
 * directory's tools (scar-ckpt ls, apply, resume) read them as theirs.
 * A run of snapshots (scar_store_policy_open/put) reads the view once and
 * keeps it in memory.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "scar/ckpt.h"
#include "scar/store.h"
#include "scar/train.h"
#include "train_internal.h"

#define VIEW_NAME ".scar-view.ckpt"

static int is_param(const struct scar_tensor *x)
{
	return x->role == SCAR_ROLE_PARAM;
}

/* The policy a view was written by, as its extra "policy" holds it. */
static json_t *policy_json(const struct scar_train_opts *o, uint64_t iter)
{
	return json_pack("{s:s, s:I, s:f, s:I, s:I}", "policy", scar_policy_name(o->policy),
			 "interval", (json_int_t)o->interval, "fraction", o->fraction,
			 "seed", (json_int_t)o->fail_seed, "iter", (json_int_t)iter);
}

/* Snapshot st against the view's layout: SCAR_EMISMATCH naming the first difference. */
static int same_layout(const struct scar_state *view, const struct scar_state *st,
		       const char *vpath, struct scar_error *err)
{
	size_t nv = 0, ns = 0;

	for (size_t i = 0; i < view->ntensors; i++)
		nv += is_param(view->tensors[i]);
	for (size_t i = 0; i < st->ntensors; i++) {
		const struct scar_tensor *x = st->tensors[i], *y;

		if (!is_param(x))
			continue;
		ns++;
		y = scar_state_find(view, x->name);
		if (!y || !is_param(y))
			return scar_error_set_at(err, SCAR_EMISMATCH, vpath, -1, -1,
						 "the snapshot's tensor '%s' is not in the run directory's saved view",
						 x->name);
		if (!scar_tensor_same_layout(x, y))
			return scar_error_set_at(err, SCAR_EMISMATCH, vpath, -1, -1,
						 "the snapshot's tensor '%s' has another dtype or shape than the run directory's",
						 x->name);
	}
	if (ns != nv || st->shards != view->shards)
		return scar_error_set_at(err, SCAR_EMISMATCH, vpath, -1, -1,
					 ns != nv ? "the snapshot has %zu parameter tensors, the run directory %zu"
						  : "the snapshot has %zu shards, the run directory %zu",
					 ns != nv ? ns : (size_t)st->shards,
					 ns != nv ? nv : (size_t)view->shards);
	return 0;
}

/* The policy of the view against o: SCAR_EINVAL saying what changed, unless forced. */
static int same_policy(const json_t *p, const struct scar_train_opts *o, const char *vpath,
		       struct scar_error *err)
{
	const char *name = json_string_value(json_object_get(p, "policy"));
	const json_t *iv = json_object_get(p, "interval"), *fr = json_object_get(p, "fraction");
	const json_t *sd = json_object_get(p, "seed");

	if (!name || !json_is_integer(iv) || !json_is_number(fr) || !json_is_integer(sd))
		return scar_error_set_at(err, SCAR_ECORRUPT, vpath, -1, -1,
					 "the saved view's extra \"policy\" is not a policy, interval, fraction and seed");
	if (strcmp(name, scar_policy_name(o->policy)) || (uint64_t)json_integer_value(iv) != o->interval ||
	    json_number_value(fr) != o->fraction || (uint64_t)json_integer_value(sd) != o->fail_seed)
		return scar_error_set_at(err, SCAR_EINVAL, vpath, -1, -1,
					 "the run directory was checkpointed by policy %s, interval %lld, fraction %g, seed %lld: a change in the middle of a run needs --force",
					 name, (long long)json_integer_value(iv), json_number_value(fr),
					 (long long)json_integer_value(sd));
	return 0;
}

/*
 * The newest checkpoint iteration of the directory (*have 0 when none):
 * the view must be its saved view, not a lost one's or another run's.
 */
static int newest_checkpoint(const struct scar_store *s, uint64_t *it, int *have,
			     struct scar_error *err)
{
	struct scar_ckpt_entry *v = NULL;
	size_t n = 0;
	int rc = scar_store_list(s, SCAR_STORE_LIST_FILES, &v, &n, NULL, err);

	*have = 0;
	*it = 0;
	for (size_t i = 0; !rc && i < n; i++)
		if (scar_store_is_policy_file(v[i].path, v[i].iteration) &&
		    (!*have || v[i].iteration > *it)) {
			*it = v[i].iteration;
			*have = 1;
		}
	scar_ckpt_list_free(v, n);
	return rc;
}

/* A run directory's saved view, held in memory from one snapshot to the next. */
struct scar_store_policy {
	const struct scar_store *s;
	struct scar_train_opts o;
	int force, sync;
	unsigned threads;		/* compression threads (0: 1); the files are the same for every count */
	char vpath[4096];
	struct scar_state *view;	/* NULL until the first checkpoint of a new directory */
	json_t *pol;			/* the view file's extra "policy" until it is checked */
	uint64_t last;			/* the view's iteration: the last checkpoint's */
	int broken;			/* a put failed after changing the view */
};

void scar_store_policy_close(struct scar_store_policy *p)
{
	if (!p)
		return;
	scar_state_free(p->view);
	free(p);
}

int scar_store_policy_open(struct scar_store_policy **out, const struct scar_store *s,
			   const struct scar_train_opts *o, int force, int sync, unsigned threads,
			   struct scar_error *err)
{
	struct scar_store_policy *p;
	struct stat sb;
	uint64_t newest;
	int have, rc;

	*out = NULL;
	if ((rc = scar_train_check_schedule(o, err)))
		return rc;
	if (!(p = calloc(1, sizeof(*p))))
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	p->s = s;
	p->o = *o;
	p->force = force;
	p->sync = sync;
	p->threads = threads;
	if (snprintf(p->vpath, sizeof(p->vpath), "%s/%s", s->dir, VIEW_NAME) >= (int)sizeof(p->vpath)) {
		rc = scar_error_set(err, SCAR_EINVAL, "run directory name too long");
		goto fail;
	}
	if ((rc = newest_checkpoint(s, &newest, &have, err)))
		goto fail;
	if (stat(p->vpath, &sb) == 0) {
		if (!S_ISREG(sb.st_mode)) {
			rc = scar_error_set_at(err, SCAR_EINVAL, p->vpath, -1, -1,
					       "the saved view '%s' is not a regular file", p->vpath);
			goto fail;
		}
		if ((rc = scar_ckpt_load(p->vpath, &p->view, err)))
			goto fail;
		p->pol = json_object_get(p->view->extra, "policy");
		if (!json_is_integer(json_object_get(p->pol, "iter"))) {
			rc = scar_error_set_at(err, SCAR_ECORRUPT, p->vpath, -1, -1,
					       "the saved view's extra \"policy\" has no iteration");
			goto fail;
		}
		p->last = (uint64_t)json_integer_value(json_object_get(p->pol, "iter"));
		if (!have || newest != p->last) {
			rc = scar_error_set_at(err, SCAR_ECORRUPT, p->vpath, -1, -1,
					       "the saved view is of iteration %llu, the directory's newest checkpoint of %s%llu: not this directory's view",
					       (unsigned long long)p->last, have ? "" : "(none) ",
					       (unsigned long long)newest);
			goto fail;
		}
	} else if (errno == ENOENT && have) {
		rc = scar_error_set_at(err, SCAR_EINVAL, p->vpath, -1, -1,
				       "the directory has checkpoints (the newest of iteration %llu) but no saved view %s: not a directory of scar-ckpt save, or its view was removed",
				       (unsigned long long)newest, VIEW_NAME);
		goto fail;
	} else if (errno != ENOENT) {
		rc = scar_error_set_errno(err, errno, p->vpath, "cannot read the saved view '%s'",
					  p->vpath);
		goto fail;
	}
	*out = p;
	return 0;
fail:
	scar_store_policy_close(p);
	return rc;
}

/*
 * The view's copy of state tensor x becomes x's value (a full checkpoint
 * carries the worker state): copied over when the layout is the same,
 * else replaced, or added when the view lacks it.
 */
static int view_take_state(struct scar_state *view, const struct scar_tensor *x,
			   struct scar_error *err)
{
	struct scar_tensor *c;
	int rc;

	for (size_t j = 0; j < view->ntensors; j++) {
		struct scar_tensor *y = view->tensors[j];

		if (strcmp(y->name, x->name))
			continue;
		if (scar_tensor_same_layout(y, x) && !y->present && !x->present) {
			memcpy(y->data, x->data, scar_tensor_bytes(x));
			return 0;
		}
		/* Another layout: y takes a copy's contents (its pointer and name stay, as the index has them). */
		if ((rc = scar_tensor_clone(&c, x, err)))
			return rc;
		{
			struct scar_tensor tmp = *y;

			*y = *c;
			*c = tmp;
		}
		scar_tensor_free(c);
		return 0;
	}
	if ((rc = scar_tensor_clone(&c, x, err)))
		return rc;
	return scar_state_add(view, c, err);
}

/* A view tensor and its position, ordered by the tensor's address. */
struct view_pos {
	const struct scar_tensor *t;
	size_t j;
};

static int by_tensor(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)((const struct view_pos *)a)->t;
	uintptr_t y = (uintptr_t)((const struct view_pos *)b)->t;

	return x < y ? -1 : x > y;
}

int scar_store_policy_put(struct scar_store_policy *p, struct scar_state *st,
			  struct scar_store_policy_result *res, struct scar_error *err)
{
	const struct scar_train_opts *o = &p->o;
	const char *vpath = p->vpath;
	struct scar_state *view = p->view, ck, aligned = { .tensors = NULL };
	struct view_pos *pos = NULL;
	struct scar_tensor *vt = NULL, **vp = NULL;
	struct scar_store_write_opts wo = { .compress = 1, .sync = p->sync,
					    .threads = p->threads, .clock = st->iteration,
					    .shuffle = p->o.ckpt_shuffle, .rank = 0, .ranks = 1,
					    .comm = NULL };
	struct scar_ckpt_save_opts so;
	uint64_t period = scar_train_policy_period(o), k = st->iteration;
	json_t *pol;
	size_t nv = 0;
	int rc, full, fresh = 0;

	memset(res, 0, sizeof(*res));
	if (p->broken)
		return scar_error_set_at(err, SCAR_EINVAL, vpath, -1, -1,
					 "an earlier checkpoint of this run failed: open the run directory again");
	if (view) {
		/* The view file's policy is checked once, after the first snapshot's layout. */
		if ((rc = same_layout(view, st, vpath, err)) ||
		    (p->pol && !p->force && (rc = same_policy(p->pol, o, vpath, err))))
			return rc;
		p->pol = NULL;
		if (k <= p->last)
			return scar_error_set_at(err, SCAR_EINVAL, vpath, -1, -1,
						 "iteration %llu is not after the run directory's last, %llu",
						 (unsigned long long)k, (unsigned long long)p->last);
		if (k % period)
			return 0;	/* not a checkpoint iteration of the schedule: nothing to write */
		full = o->policy == SCAR_POLICY_FULL;
	} else {
		/* The run's first snapshot: a full checkpoint, as scar-train's at iteration 0. */
		if ((rc = scar_state_clone(&view, st, err)))
			return rc;
		fresh = 1;
		full = 1;
	}

	/* The checkpoint: the schedule in extra, as scar-train writes it. */
	if ((rc = scar_train_schedule_extra(st->extra, k, o, err)))
		goto out;
	vt = calloc(st->ntensors + 1, sizeof(*vt));
	vp = calloc(st->ntensors + 1, sizeof(*vp));
	if (!vt || !vp) {
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
		goto out;
	}
	/*
	 * The snapshot as the view orders its tensors: the policy's selection
	 * indexes both by one position (and seeds random by it), and a later
	 * snapshot may list its tensors in another order. The view's positions
	 * by tensor, sorted for bsearch, keep this O(n log n) for models of
	 * many tensors.
	 */
	aligned = *view;
	memset(&aligned.index_, 0, sizeof(aligned.index_));
	aligned.iteration = st->iteration;
	aligned.tensors = malloc((view->ntensors + 1) * sizeof(*aligned.tensors));
	pos = malloc((view->ntensors + 1) * sizeof(*pos));
	if (!aligned.tensors || !pos) {
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
		goto out;
	}
	memcpy(aligned.tensors, view->tensors, view->ntensors * sizeof(*aligned.tensors));
	for (size_t j = 0; j < view->ntensors; j++) {
		pos[j].t = view->tensors[j];
		pos[j].j = j;
	}
	qsort(pos, view->ntensors, sizeof(*pos), by_tensor);
	for (size_t i = 0; i < st->ntensors; i++) {
		struct scar_tensor *x = st->tensors[i];
		struct view_pos key, *at;

		if (!is_param(x))
			continue;
		/* same_layout found every param tensor in the view */
		key.t = scar_state_find(view, x->name);
		at = bsearch(&key, pos, view->ntensors, sizeof(*pos), by_tensor);
		aligned.tensors[at->j] = x;
	}
	for (size_t i = 0; i < st->ntensors; i++) {
		struct scar_tensor *x = st->tensors[i], *y;
		uint64_t rows = scar_tensor_rows(x);
		size_t rb = scar_tensor_row_bytes(x), vi;
		struct view_pos key;

		if (!is_param(x)) {
			if (full) {
				vp[nv++] = x;	/* a full checkpoint holds the worker state too */
				/* and the view takes it, as apply of the checkpoints gives */
				if ((rc = view_take_state(view, x, err)))
					goto out;
			}
			continue;
		}
		key.t = y = scar_state_find(view, x->name);
		vi = ((struct view_pos *)bsearch(&key, pos, view->ntensors, sizeof(*pos),
						 by_tensor))->j;
		vt[nv] = *x;
		vt[nv].present = malloc(rows ? rows : 1);
		if (!vt[nv].present) {
			rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
			goto out;
		}
		if (full)
			memset(vt[nv].present, 1, rows);
		else if ((rc = scar_train_policy_select(o, &aligned, view, vi, k / period, NULL,
							vt[nv].present, err)))
			goto out;
		for (uint64_t r = 0; r < rows; r++)
			if (vt[nv].present[r]) {
				memcpy(scar_tensor_row(y, r), scar_tensor_row(x, r), rb);
				res->rows++;
				res->bytes += rb;
			}
		if (full) {
			free(vt[nv].present);
			vt[nv].present = NULL;
		}
		vp[nv] = &vt[nv];
		nv++;
	}
	ck = *st;
	ck.ntensors = nv;
	ck.tensors = vp;
	if ((rc = scar_store_write(p->s, &ck, &wo, &res->file_bytes, err)))
		goto out;
	/* Then the view, so that a failure between the two loses no row of a written checkpoint. */
	view->iteration = k;
	pol = policy_json(o, k);
	if (!pol || json_object_set_new(view->extra, "policy", pol)) {
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
		goto out;
	}
	scar_ckpt_save_opts_init(&so);
	so.sync = p->sync;
	so.threads = p->threads ? p->threads : 1;
	so.shuffle = o->ckpt_shuffle;
	if ((rc = scar_ckpt_save(view, vpath, &so, err)))
		goto out;
	res->wrote = 1;
	res->full = full;
	p->view = view;
	p->last = k;
out:
	free(aligned.tensors);
	free(pos);
	for (size_t i = 0; vt && i < st->ntensors; i++)
		free(vt[i].present);
	free(vt);
	free(vp);
	if (rc && fresh)
		scar_state_free(view);
	else if (rc) {
		/* The rows copied into the view are not on disk: this view is no longer the directory's. */
		scar_state_free(p->view);
		p->view = NULL;
		p->broken = 1;
	}
	return rc;
}

int scar_store_policy_checkpoint(const struct scar_store *s, const struct scar_train_opts *o,
				 struct scar_state *st, int force, int sync, unsigned threads,
				 struct scar_store_policy_result *res, struct scar_error *err)
{
	struct scar_store_policy *p;
	int rc;

	memset(res, 0, sizeof(*res));
	if ((rc = scar_store_policy_open(&p, s, o, force, sync, threads, err)))
		return rc;
	rc = scar_store_policy_put(p, st, res, err);
	scar_store_policy_close(p);
	return rc;
}
