/*
 * train_local.c - scar_train_run in one process: the loop of train_loop.c
 * with the model's own step, its checkpoints written by the store, and the
 * reference run of --cost (see scar/train.h; the semantics are in
 * scar-train(1)). The MPI trainer is dist_mpi.c.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "scar/ckpt.h"
#include "scar/events.h"
#include "scar/model.h"
#include "scar/store.h"
#include "scar/train.h"
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
	.checkpoint = checkpoint,
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
	if (!(rc = scar_train_begin(&t, config)) && !(rc = scar_train_loop(&t, &ci, &done)))
		rc = scar_train_finish(&t, &ci, done);
out:
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
