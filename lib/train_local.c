/*
 * train_local.c - scar_train_run in one process: the loop of train_loop.c
 * with the model's own step, its checkpoints written by the store, and the
 * reference run of --cost (see scar/train.h; the semantics are in
 * scar-train(1)). The MPI trainer is dist_mpi.c.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "scar/ckpt.h"
#include "scar/events.h"
#include "scar/model.h"
#include "scar/store.h"
#include "scar/train.h"
#include "rewind.h"
#include "train_internal.h"

static int is_param(const struct scar_tensor *x)
{
	return x->role == SCAR_ROLE_PARAM;
}

/* ---- checkpoints ---- */

/* The file of view, ckpt-N.ckpt in the store; *file_bytes its size. */
static int write_file(struct scar_train_ctx *t, const struct scar_state *s, uint64_t *file_bytes)
{
	struct scar_store_write_opts wo = {
		.compress = t->o->ckpt_compress, .sync = t->o->ckpt_sync,
		.threads = t->o->ckpt_threads, .shuffle = t->o->ckpt_shuffle,
		.clock = t->clock, .rank = 0, .ranks = 1, .comm = NULL,
	};

	return scar_store_write(&t->store, s, &wo, file_bytes, t->err);
}

/*
 * Take a checkpoint now: full (the whole state, also the base of full
 * recovery) or partial (the selected param rows only). Updates the saved
 * view, writes the file when there is a directory, emits the event. One
 * file of the whole state, where the MPI trainer writes one per rank.
 */
static int checkpoint(struct scar_train_ctx *t, int full)
{
	struct scar_state *st = t->st, view;
	struct scar_tensor *vt = NULL, **vp = NULL;
	uint64_t rows_written = 0, bytes = 0, file_bytes = 0, ncp;
	double t1 = scar_train_now(), sel_secs = 0, ts;
	int rc = 0;
	size_t nv = 0;

	ncp = st->iteration / scar_train_policy_period(t->o);
	if (full) {
		struct scar_state *c;

		if ((rc = scar_train_set_clock(t, st)))
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
		ts = scar_train_now();
		if ((rc = scar_train_select_rows(t, i, vt[nv - 1].present, ncp)))
			goto out;
		sel_secs += scar_train_now() - ts;
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
		if ((rc = scar_train_set_clock(t, st)))
			goto out;
		if ((rc = write_file(t, &view, &file_bytes)))
			goto out;
	}
done:
	rc = scar_train_emit(t, scar_train_checkpoint_record(t, full, rows_written, bytes, file_bytes,
							     scar_train_now() - t1, sel_secs));
out:
	for (size_t i = 0; vt && i < nv; i++)
		free(vt[i].present);
	free(vt);
	free(vp);
	return rc;
}

/* ---- checkpoints in the background (--async) ---- */

/*
 * A checkpoint submitted to the writer and not yet collected. The loop
 * only copies the state into a snapshot (a full one becomes the full
 * base; a partial one is a copy of the param tensors, from a pool of at
 * most --async of them, reused); the rest is done on the writer thread by
 * inflight_prepare, in submission order, before the write: choosing a
 * partial checkpoint's rows against the saved view, taking them into the
 * view, the ages and the full base - the next checkpoint's selection sees
 * them, as in the synchronous mode - and keeping here what they held
 * before, so that a failure while it is in flight can recover from the
 * durable checkpoints only (durable_view, after scar_store_async_prepared:
 * until then the saved view, the ages and the full base are the writer's).
 */
struct scar_train_inflight {
	struct scar_train_ctx *t;
	struct scar_state *snap;	/* what the writer writes (owned until based) */
	struct scar_state *prev_full;	/* full: the base it replaced, freed once durable */
	int full, based;		/* based: snap is the full base (last_full) now */
	size_t ntensors;		/* of the state, the length of old_rows and old_ages */
	uint64_t clock, state_iter, ncp;
	/* loop thread: the loop's stall; writer (read once collected): the rest */
	double secs;
	uint64_t rows, bytes;
	double sel_secs;
	/* per tensor of the state: the saved rows and ages it replaced, packed in row order */
	unsigned char **old_rows;
	uint64_t **old_ages;
};

/* f and what it owns; a partial snapshot goes back to the pool when there is room. */
static void inflight_free(struct scar_train_ctx *t, struct scar_train_inflight *f)
{
	if (!f)
		return;
	for (size_t i = 0; f->old_rows && i < f->ntensors; i++)
		free(f->old_rows[i]);
	for (size_t i = 0; f->old_ages && i < f->ntensors; i++)
		free(f->old_ages[i]);
	free(f->old_rows);
	free(f->old_ages);
	/* The base a durable full checkpoint replaced: the next full one's snapshot. */
	if (f->prev_full && !t->spare_full)
		t->spare_full = f->prev_full;
	else
		scar_state_free(f->prev_full);
	if (!f->full && f->snap && t->npool < t->o->ckpt_in_flight)
		t->pool[t->npool++] = f->snap;
	else if (!f->based)
		scar_state_free(f->snap);
	free(f);
}

static void swap_bytes(unsigned char *a, unsigned char *b, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		unsigned char x = a[k];

		a[k] = b[k];
		b[k] = x;
	}
}

/*
 * Exchange f's rows in the saved view (and their ages, and the full base)
 * with those f keeps: done twice, nothing changed. The rows are the
 * snapshot's present ones (all of them when full).
 */
static void inflight_swap(struct scar_train_ctx *t, struct scar_train_inflight *f)
{
	for (size_t i = 0; i < t->saved->ntensors; i++) {
		struct scar_tensor *sv = t->saved->tensors[i];
		const struct scar_tensor *sn;
		size_t rb = scar_tensor_row_bytes(sv), k = 0;
		uint64_t *ages = t->ages && i < t->nages ? t->ages[i] : NULL;

		if (!f->old_rows[i])
			continue;
		sn = scar_state_find(f->snap, sv->name);
		for (uint64_t r = 0; r < scar_tensor_rows(sv); r++) {
			if (sn && sn->present && !sn->present[r])
				continue;
			swap_bytes(scar_tensor_row(sv, r), f->old_rows[i] + k * rb, rb);
			if (ages && f->old_ages[i]) {
				uint64_t a0 = ages[2 * r], a1 = ages[2 * r + 1];

				ages[2 * r] = f->old_ages[i][2 * k];
				ages[2 * r + 1] = f->old_ages[i][2 * k + 1];
				f->old_ages[i][2 * k] = a0;
				f->old_ages[i][2 * k + 1] = a1;
			}
			k++;
		}
	}
	if (f->full) {
		struct scar_state *x = t->last_full;

		t->last_full = f->prev_full;
		f->prev_full = x;
	}
}

/*
 * Keep the saved rows and ages of tensor i that snapshot tensor sn
 * (present rows) replaces, then take sn's rows into the saved view and
 * mark their ages (the snapshot is the state they come from).
 */
static int inflight_take(struct scar_train_inflight *f, size_t i, const struct scar_tensor *sn,
			 struct scar_error *err)
{
	struct scar_train_ctx *t = f->t;
	struct scar_tensor *sv = t->saved->tensors[i];
	size_t rb = scar_tensor_row_bytes(sv), k = 0;
	uint64_t rows = scar_tensor_rows(sv), n = 0;
	uint64_t *ages = t->ages && i < t->nages ? t->ages[i] : NULL;
	unsigned char *keep;
	int rc;

	for (uint64_t r = 0; r < rows; r++)
		n += !sn->present || sn->present[r];
	f->old_rows[i] = keep = malloc(n * rb + 1);
	if (ages)
		f->old_ages[i] = malloc(2 * n * sizeof(**f->old_ages) + 1);
	if (!keep || (ages && !f->old_ages[i]))
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	for (uint64_t r = 0; r < rows; r++) {
		if (sn->present && !sn->present[r])
			continue;
		memcpy(keep + k * rb, scar_tensor_row(sv, r), rb);
		memcpy(scar_tensor_row(sv, r), scar_tensor_row(sn, r), rb);
		if (ages) {
			f->old_ages[i][2 * k] = ages[2 * r];
			f->old_ages[i][2 * k + 1] = ages[2 * r + 1];
		}
		k++;
	}
	/* The ages as scar_train_select_rows marks them, from the snapshot's iteration and record. */
	if (ages && (rc = scar_rewind_ages(f->snap, sn, sn->present, ages, err)))
		return rc;
	f->rows += n;
	f->bytes += n * rb;
	return 0;
}

/* scar_store_async's prepare hook: the writer thread's part of checkpoint_async. */
static int inflight_prepare(void *tag, struct scar_store_write_opts *wo, struct scar_error *err)
{
	struct scar_train_inflight *f = tag;
	struct scar_train_ctx *t = f->t;
	struct scar_tensor **by_index = NULL;
	struct scar_state sel;
	size_t j = 0;
	int rc = 0;

	(void)wo;
	f->old_rows = calloc(f->ntensors ? f->ntensors : 1, sizeof(*f->old_rows));
	f->old_ages = calloc(f->ntensors ? f->ntensors : 1, sizeof(*f->old_ages));
	if (!f->full)
		by_index = calloc(f->ntensors ? f->ntensors : 1, sizeof(*by_index));
	if (!f->old_rows || !f->old_ages || (!f->full && !by_index)) {
		free(by_index);
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	}
	/* The selection's state: the snapshot's tensors at the state's indices. */
	sel = *f->snap;
	sel.ntensors = f->ntensors;
	sel.tensors = by_index;
	memset(&sel.index_, 0, sizeof(sel.index_));
	for (size_t i = 0; !rc && i < f->ntensors; i++) {
		struct scar_tensor *sn;

		if (!is_param(t->saved->tensors[i]))
			continue;
		sn = f->full ? f->snap->tensors[i] : f->snap->tensors[j++];
		if (!f->full) {
			double ts = scar_train_now();

			by_index[i] = sn;
			rc = scar_train_policy_select(t->o, &sel, t->saved, i, f->ncp, NULL,
						      sn->present, err);
			f->sel_secs += scar_train_now() - ts;
		}
		if (!rc)
			rc = inflight_take(f, i, sn, err);
	}
	free(by_index);
	if (!rc && f->full) {
		f->prev_full = t->last_full;
		t->last_full = f->snap;
		f->based = 1;
	}
	return rc;
}

/*
 * Copy st (its param tensors only when params) into snapshot s of the same
 * layout, buffers kept: 1 when copied, 0 when s has another layout.
 */
static int snapshot_copy(struct scar_train_ctx *t, struct scar_state *s,
			 const struct scar_state *st, int params)
{
	json_t *config, *extra;
	size_t n = 0;

	for (size_t i = 0; i < st->ntensors; i++) {
		const struct scar_tensor *x = st->tensors[i], *y;

		if (params && !is_param(x))
			continue;
		if (n >= s->ntensors)
			return 0;
		y = s->tensors[n++];
		/* a partial snapshot has present maps for the writer; a full one none */
		if (!scar_tensor_same_layout(x, y) || strcmp(x->name, y->name) ||
		    x->role != y->role || (params ? !y->present : y->present != NULL) ||
		    x->present)
			return 0;
	}
	if (n != s->ntensors)
		return 0;
	config = json_deep_copy(st->config);
	extra = json_deep_copy(st->extra);
	if (!config || !extra) {
		json_decref(config);
		json_decref(extra);
		return scar_error_set(t->err, SCAR_ENOMEM, "out of memory");
	}
	json_decref(s->config);
	json_decref(s->extra);
	s->config = config;
	s->extra = extra;
	s->iteration = st->iteration;
	s->shards = st->shards;
	n = 0;
	for (size_t i = 0; i < st->ntensors; i++)
		if (!params || is_param(st->tensors[i]))
			memcpy(s->tensors[n++]->data, st->tensors[i]->data,
			       scar_tensor_bytes(st->tensors[i]));
	return 1;
}

/* A new snapshot of the param tensors of the state, with present maps for the writer's choice. */
static int snapshot_new(struct scar_train_ctx *t, struct scar_state **out)
{
	struct scar_state *st = t->st, view;
	struct scar_tensor *vt, **vp;
	size_t nv = 0;
	int rc = 0;

	*out = NULL;
	vt = calloc(st->ntensors ? st->ntensors : 1, sizeof(*vt));
	vp = calloc(st->ntensors ? st->ntensors : 1, sizeof(*vp));
	if (!vt || !vp) {
		rc = scar_error_set(t->err, SCAR_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < st->ntensors; i++)
		if (is_param(st->tensors[i])) {
			vt[nv] = *st->tensors[i];
			vt[nv].present = NULL;
			vp[nv] = &vt[nv];
			nv++;
		}
	view = *st;
	view.ntensors = nv;
	view.tensors = vp;
	memset(&view.index_, 0, sizeof(view.index_));
	if ((rc = scar_state_clone(out, &view, t->err)))
		goto out;
	for (size_t k = 0; !rc && k < nv; k++)
		rc = scar_tensor_init_present((*out)->tensors[k], 0, t->err);
	if (rc) {
		scar_state_free(*out);
		*out = NULL;
	}
out:
	free(vt);
	free(vp);
	return rc;
}

/*
 * The snapshot of a checkpoint: a partial one's from the pool (filled when
 * the writer started, so the loop neither allocates nor faults pages in),
 * a full one's into the base the last durable full one replaced; a new one
 * when there is none of the state's layout.
 */
static int snapshot_take(struct scar_train_ctx *t, int full, struct scar_state **out)
{
	struct scar_state **spare = full ? &t->spare_full : t->npool ? &t->pool[t->npool - 1] : NULL;
	int rc;

	if (spare && *spare) {
		if ((rc = snapshot_copy(t, *spare, t->st, !full)) < 0)
			return rc;
		if (rc) {
			*out = *spare;
			*spare = NULL;
			t->npool -= !full;
			return 0;
		}
		/* another layout (the state's does not change in a run): not reused */
		scar_state_free(*spare);
		*spare = NULL;
		t->npool -= !full;
	}
	return full ? scar_state_clone(out, t->st, t->err) : snapshot_new(t, out);
}

/*
 * Emit the events of background checkpoints that are durable, oldest
 * first, waiting until at most left are in flight.
 */
static int collect_until(struct scar_train_ctx *t, unsigned left)
{
	struct scar_store_async_result res;

	while (t->ninflight &&
	       scar_store_async_collect(t->writer, t->ninflight > left, &res)) {
		struct scar_train_inflight *f = t->inflight[0];
		json_t *rec = NULL;
		int rc = res.rc;

		if (rc)
			*t->err = res.err;
		else
			rec = scar_train_checkpoint_event(t, f->full, f->clock, f->state_iter, f->rows,
							  f->bytes, res.bytes, f->secs, f->sel_secs,
							  res.seconds);
		inflight_free(t, f);
		memmove(t->inflight, t->inflight + 1, --t->ninflight * sizeof(*t->inflight));
		if (rc || (rc = scar_train_emit(t, rec)))
			return rc;
	}
	return 0;
}

/* Those that are durable now; wait: all of them. */
static int collect(struct scar_train_ctx *t, int wait)
{
	return collect_until(t, wait ? 0 : UINT_MAX);
}

static unsigned durable_view(struct scar_train_ctx *t, int reverted)
{
	/*
	 * The view is the writer's until it has taken every snapshot's rows:
	 * wait for that (at most the write it is in), then take what became
	 * durable meanwhile.
	 */
	if (reverted && t->ninflight)
		scar_store_async_prepared(t->writer);
	if (reverted && collect(t, 0))
		return t->ninflight;	/* the error comes back at the next collect */
	/* Newest first out, oldest first back: each swap sees the view it left. */
	if (reverted)
		for (unsigned k = t->ninflight; k-- > 0;)
			inflight_swap(t, t->inflight[k]);
	else
		for (unsigned k = 0; k < t->ninflight; k++)
			inflight_swap(t, t->inflight[k]);
	return t->ninflight;
}

/*
 * checkpoint() of --async: the loop copies the state into a snapshot and
 * goes on; the writer thread chooses the rows and writes them (see struct
 * scar_train_inflight). Only a full queue makes the loop wait.
 */
static int checkpoint_async(struct scar_train_ctx *t, int full)
{
	struct scar_state *st = t->st;
	struct scar_train_inflight *f;
	struct scar_store_write_opts wo = {
		.compress = t->o->ckpt_compress, .sync = t->o->ckpt_sync,
		.threads = t->o->ckpt_threads, .shuffle = t->o->ckpt_shuffle,
		.clock = t->clock, .rank = 0, .ranks = 1, .comm = NULL,
	};
	double t1 = scar_train_now();
	int rc;

	/* A free slot: with the queue full, the oldest must become durable first. */
	if ((rc = collect_until(t, t->o->ckpt_in_flight - 1)))
		return rc;
	if ((rc = scar_train_set_clock(t, st)))
		return rc;
	if (!(f = calloc(1, sizeof(*f))))
		return scar_error_set(t->err, SCAR_ENOMEM, "out of memory");
	f->t = t;
	f->full = full;
	f->clock = t->clock;
	f->state_iter = st->iteration;
	f->ncp = st->iteration / scar_train_policy_period(t->o);
	f->ntensors = st->ntensors;
	if ((rc = snapshot_take(t, full, &f->snap))) {
		free(f);
		return rc;
	}
	/* The slot was made free above, so the queue has room. */
	t->inflight[t->ninflight++] = f;
	scar_store_async_submit(t->writer, f->snap, &wo, f);
	f->secs = scar_train_now() - t1;
	return 0;
}

static int checkpoint_any(struct scar_train_ctx *t, int full)
{
	return t->writer ? checkpoint_async(t, full) : checkpoint(t, full);
}

/* ---- the run ---- */

static int step(struct scar_train_ctx *t)
{
	return t->def->step(t->m, t->st, t->err);
}

static int objective(struct scar_train_ctx *t, double *obj)
{
	return t->def->objective(t->m, t->st, obj, t->err);
}

/* One process: rank 0 of 1 owns every row; nothing to gather or agree on. */
static const struct scar_train_ops one_process = {
	.step = step,
	.objective = objective,
	.checkpoint = checkpoint_any,
	.collect = collect,
	.durable_view = durable_view,
};

static int train_core(const struct scar_train_opts *o, struct scar_train_result *res,
		      struct scar_error *err, double **objs, size_t *nobjs)
{
	struct scar_train_ctx t;
	struct scar_train_cost ci = { 0 };
	json_t *config = NULL;
	double *ref = NULL;
	size_t nref = 0;
	int rc = 0, done = 0;

	scar_train_ctx_init(&t, o, &one_process, res, err);
	if ((rc = scar_train_check_opts(o, t.def, err)) ||
	    (rc = scar_train_reference(o, train_core, &ref, &nref, err)))
		return rc;
	if ((rc = scar_train_config(o, t.def, &config, err)) ||
	    (rc = t.def->create(&t.m, config, err)))
		goto out;
	if (o->resume) {
		struct scar_state *fresh = NULL;

		if ((rc = scar_state_clone(&t.st, o->resume, err)))
			goto out;
		/* The validated configuration (scar_train_config) is what the state carries on. */
		json_decref(t.st->config);
		t.st->config = json_incref(config);
		rc = scar_train_new_state(&t, config, &fresh);
		if (!rc)
			rc = scar_train_check_layout(&t, fresh);
		scar_state_free(fresh);
		if (rc)
			goto out;
		t.clock = scar_train_resume_clock(t.st);
	} else if ((rc = scar_train_new_state(&t, config, &t.st))) {
		goto out;
	}
	if (ref && (rc = scar_train_cost_target(&t, ref, nref, &ci)))
		goto out;
	if (o->ckpt_dir && o->ckpt_in_flight) {
		if (!(t.inflight = calloc(o->ckpt_in_flight, sizeof(*t.inflight))) ||
		    !(t.pool = calloc(o->ckpt_in_flight, sizeof(*t.pool)))) {
			rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
			goto out;
		}
		if ((rc = scar_store_async_open(&t.writer, &t.store, o->ckpt_in_flight,
						 inflight_prepare, err)))
			goto out;
		/* The snapshots' buffers, made before the loop: it only copies into them. */
		while (!rc && t.npool < o->ckpt_in_flight &&
		       !(rc = snapshot_new(&t, &t.pool[t.npool])))
			t.npool++;
		if (rc || (rc = scar_state_clone(&t.spare_full, t.st, err)))
			goto out;
	}
	if (!(rc = scar_train_begin(&t, config)) && !(rc = scar_train_loop(&t, &ci, &done)))
		rc = scar_train_finish(&t, &ci, done);
out:
	/* An error leaves what is in flight to be written (nothing is lost), unreported. */
	scar_store_async_close(t.writer);
	t.writer = NULL;
	for (unsigned k = 0; k < t.ninflight; k++)
		inflight_free(&t, t.inflight[k]);
	free(t.inflight);
	t.inflight = NULL;
	t.ninflight = 0;
	for (unsigned k = 0; k < t.npool; k++)
		scar_state_free(t.pool[k]);
	free(t.pool);
	t.pool = NULL;
	t.npool = 0;
	scar_state_free(t.spare_full);
	t.spare_full = NULL;
	scar_train_ctx_release(&t, rc, objs, nobjs);
	free(ref);
	json_decref(config);
	return rc;
}

int scar_train_run(const struct scar_train_opts *o, struct scar_train_result *res,
		   struct scar_error *err)
{
	struct scar_store store;
	int rc;

	/* One writer per directory; holding the lock, the temporaries of dead writers go. */
	scar_store_init(&store, o->ckpt_dir);
	if (o->ckpt_dir && (rc = scar_store_lock(&store, err))) {
		memset(res, 0, sizeof(*res));
		return rc;
	}
	rc = train_core(o, res, err, NULL, NULL);
	scar_store_unlock(&store);
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
	if (scar_events_unperturbed(records, n, err)) {
		json_decref(arr);
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
	return scar_store_load_single(path, out, skipped, used_path, used_len, err);
}

int scar_train_resume_scan(const char *path, const struct scar_state *st, size_t damaged,
			   struct scar_train_resume_info *info, struct scar_error *err)
{
	return scar_store_resume_scan(path, st, damaged, info, err);
}

int scar_train_saved_schedule(const struct scar_state *st, struct scar_train_schedule *out,
			      struct scar_error *err)
{
	json_t *s = json_object_get(st->extra, "schedule");
	json_t *policy = json_object_get(s, "policy"), *interval = json_object_get(s, "interval");
	json_t *fraction = json_object_get(s, "fraction"), *seed = json_object_get(s, "fail_seed");
	int p;

	if (!s)
		return 0;
	p = scar_policy_parse(json_string_value(policy));
	if (p < 0 || !json_is_integer(interval) || json_integer_value(interval) < 1 ||
	    !json_is_number(fraction) || !(json_number_value(fraction) > 0) ||
	    !(json_number_value(fraction) <= 1) || !json_is_integer(seed))
		return scar_error_set(err, SCAR_EFORMAT,
				      "checkpoint's extra.schedule is not a policy, interval, fraction and fail_seed");
	out->policy = (enum scar_policy)p;
	out->interval = (uint64_t)json_integer_value(interval);
	out->fraction = json_number_value(fraction);
	out->fail_seed = (uint64_t)json_integer_value(seed);
	return 1;
}
