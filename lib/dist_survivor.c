/*
 * dist_survivor.c - survivor files for --resume DIR (scar/dist.h,
 * scar-mpi(7), Real failures): what the ranks that outlived a rank's death
 * wrote (dist_mpi.c) merged over the checkpoint resumed. Its own file:
 * it reads the store and the trainer's clock, and neither reads it.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scar/ckpt.h"
#include "scar/dist.h"
#include "scar/file.h"
#include "scar/model.h"
#include "scar/shard.h"
#include "scar/store.h"
#include "rewind.h"
#include "store_internal.h"
#include "train_internal.h"

/* Whether name is survivor-N.rank-R.ckpt; *it gets N, *rank R (UINT32_MAX when huge). */
static int survivor_name(const char *name, uint64_t *it, uint32_t *rank)
{
	unsigned long long r;
	char *end;

	if (strncmp(name, "survivor-", 9) != 0 || name[9] < '0' || name[9] > '9')
		return 0;
	errno = 0;
	*it = strtoull(name + 9, &end, 10);
	if (errno || strncmp(end, ".rank-", 6) != 0 || !scar_store_is_rank_file(name))
		return 0;
	errno = 0;
	r = strtoull(end + 6, NULL, 10);
	*rank = errno || r >= UINT32_MAX ? UINT32_MAX : (uint32_t)r;
	return 1;
}

/*
 * A survivor file of st's run: same model, shards, configuration and
 * tensors, and worker state a resume can take (its clock, rewind record
 * and recovery strategy valid: they become the resumed run's). NULL when
 * it is; else what is wrong, for the message.
 */
static const char *survivor_unfit(const struct scar_state *f, const struct scar_state *st,
				  uint32_t name_rank, uint32_t *ranks)
{
	const json_t *sv = json_object_get(f->extra, "survivor"), *p = json_object_get(sv, "ranks");
	const json_t *rec = json_object_get(sv, "recovery");
	const json_t *rk = json_object_get(sv, "rank"), *sh = json_object_get(sv, "shards"), *v;
	const struct scar_model_def *def = scar_model_find(f->model);
	struct scar_error e;
	uint32_t P, R, k;
	size_t j;
	int strategy = -1;

	if (strcmp(f->model, st->model) || f->shards != st->shards || !def ||
	    !json_equal(f->config, st->config) || f->ntensors != st->ntensors ||
	    !json_is_integer(p) || json_integer_value(p) < 1 || json_integer_value(p) > 1 << 20)
		return "is not of this run";
	*ranks = P = (uint32_t)json_integer_value(p);
	for (size_t i = 0; i < f->ntensors; i++) {
		const struct scar_tensor *x = f->tensors[i], *y = scar_state_find(st, x->name);

		if (!y || y->dtype != x->dtype || y->role != x->role || y->ndim != x->ndim ||
		    memcmp(y->shape, x->shape, sizeof(x->shape[0]) * (size_t)x->ndim))
			return "is not of this run";
	}
	/* Its rank's, as its name says, and only its rank's shards and rows. */
	if (!json_is_integer(rk) || json_integer_value(rk) < 0 || json_integer_value(rk) >= P ||
	    (uint32_t)json_integer_value(rk) != name_rank)
		return "has a rank that is not its name's, or not below its ranks";
	R = (uint32_t)json_integer_value(rk);
	if (!json_is_array(sh))
		return "claims shards that are not its rank's";
	k = R;
	json_array_foreach(sh, j, v) {
		if (!json_is_integer(v) || json_integer_value(v) != k)
			return "claims shards that are not its rank's";
		k += P;
	}
	if (k < f->shards)
		return "claims shards that are not its rank's";
	for (size_t i = 0; i < f->ntensors; i++) {
		const struct scar_tensor *x = f->tensors[i];

		if (x->role != SCAR_ROLE_PARAM)
			continue;
		for (uint64_t r = 0; r < scar_tensor_rows(x); r++)
			if (scar_tensor_has_row(x, r) && scar_shard_of_row(r, f->shards) % P != R)
				return "holds rows of shards that are not its rank's";
	}
	if (!scar_train_clock_ok(f))
		return "has an extra \"clock\" that is not a whole number at or after its iteration";
	if (rec && (!json_is_string(rec) || (strategy = scar_recovery_parse(json_string_value(rec))) < 0))
		return "names no recovery strategy this build knows";
	if (rec && ((strategy == SCAR_RECOVER_REBUILD && !def->rebuild) ||
		    (strategy == SCAR_RECOVER_REWIND && !def->rewinds)))
		return "names a recovery strategy its model does not have";
	scar_error_clear(&e);
	if (json_object_get(f->extra, "rewind") && (scar_rewind_check(f, &e) || !def->rewinds))
		return "has a rewind record that is not valid";
	return NULL;
}

/* Whether b holds the same state tensors and worker state as a (the ranks share them). */
static int same_shared_state(const struct scar_state *a, const struct scar_state *b)
{
	json_t *xa = json_deep_copy(a->extra), *xb = json_deep_copy(b->extra);
	int same = xa && xb;

	if (same) {
		json_object_del(xa, "survivor");
		json_object_del(xb, "survivor");
		same = json_equal(xa, xb);
	}
	json_decref(xa);
	json_decref(xb);
	for (size_t i = 0; same && i < a->ntensors; i++)
		if (a->tensors[i]->role != SCAR_ROLE_PARAM)
			same = memcmp(a->tensors[i]->data, b->tensors[i]->data,
				      scar_tensor_bytes(a->tensors[i])) == 0;
	return same;
}

int scar_dist_survivors(const char *dir, struct scar_state *st, struct scar_dist_survivors *sv,
			struct scar_error *err)
{
	uint64_t base = scar_train_resume_clock(st), newest = 0, it;
	struct scar_state **files = NULL;
	uint32_t S = st->shards, ranks = 0, nr;
	uint8_t *seen = NULL;	/* per rank: a file of it was taken */
	size_t nf = 0, total = 0, older = 0;
	struct dirent *de;
	struct stat sb;
	DIR *d;
	int rc = 0;

	memset(sv, 0, sizeof(*sv));
	sv->recovery = -1;
	if (stat(dir, &sb) < 0 || !S_ISDIR(sb.st_mode))
		return 0;
	if (!(d = opendir(dir)))
		return scar_error_set_errno(err, errno, dir, "cannot open directory '%s'", dir);
	/* The newest iteration any survivor file is of. */
	while ((de = readdir(d)))
		if (survivor_name(de->d_name, &it, &nr)) {
			total++;
			if (it > newest)
				newest = it;
		}
	if (!total) {
		closedir(d);
		return 0;
	}
	sv->lost = calloc(S, 1);
	files = calloc(total, sizeof(*files));
	if (!sv->lost || !files) {
		rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
		goto out;
	}
	if (newest <= base) {
		snprintf(sv->why, sizeof(sv->why),
			 "its survivor files (iteration %llu and older) are not newer than the checkpoint",
			 (unsigned long long)newest);
		goto out;
	}
	rewinddir(d);
	while ((de = readdir(d))) {
		char path[4096];
		struct scar_state *f = NULL;
		const char *unfit = NULL;
		struct scar_error e;
		uint32_t p;
		int fd, lrc;

		if (!survivor_name(de->d_name, &it, &nr))
			continue;
		if (it != newest) {
			older++;
			continue;
		}
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= sizeof(path))
			continue;
		scar_error_clear(&e);
		/* A FIFO would block the open, a device feed it forever: regular files only. */
		if ((fd = scar_open_input(path, SCAR_OPEN_REGULAR, &e)) < 0) {
			snprintf(sv->why, sizeof(sv->why), "survivor file %.450s", e.msg);
			goto out;
		}
		lrc = scar_ckpt_load_fd(fd, path, &f, &e);
		close(fd);
		if (lrc ||
		    (f->iteration != newest && (unfit = "is of another iteration than its name's")) ||
		    (unfit = survivor_unfit(f, st, nr, &p)) ||
		    (ranks && p != ranks && (unfit = "has other ranks than the other survivor files")) ||
		    (nf && !same_shared_state(files[0], f) &&
		     (unfit = "has other state tensors or worker state than the other survivor files"))) {
			snprintf(sv->why, sizeof(sv->why), "survivor file '%.300s' %.150s", path,
				 !f ? (e.msg[0] ? e.msg : "cannot be read") : unfit);
			scar_state_free(f);
			goto out;
		}
		if (!seen && !(seen = calloc(p, 1))) {
			scar_state_free(f);
			rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
			goto out;
		}
		if (seen[nr]) {
			snprintf(sv->why, sizeof(sv->why),
				 "survivor file '%.300s' is of rank %u, as another survivor file is", path,
				 (unsigned)nr);
			scar_state_free(f);
			goto out;
		}
		seen[nr] = 1;
		ranks = p;
		files[nf++] = f;
	}
	/* Every row a survivor file holds, exactly; the state tensors from the first. */
	memset(sv->lost, 1, S);
	for (size_t k = 0; k < nf; k++) {
		const struct scar_state *f = files[k];

		for (size_t i = 0; i < f->ntensors; i++) {
			const struct scar_tensor *x = f->tensors[i];
			struct scar_tensor *y = scar_state_find(st, x->name);
			size_t rb = scar_tensor_row_bytes(x);

			if (x->role != SCAR_ROLE_PARAM) {
				if (k == 0)
					memcpy(y->data, x->data, scar_tensor_bytes(x));
				continue;
			}
			for (uint64_t r = 0; r < scar_tensor_rows(x); r++)
				if (scar_tensor_has_row(x, r)) {
					memcpy(scar_tensor_row(y, r), scar_tensor_row(x, r), rb);
					sv->lost[scar_shard_of_row(r, S)] = 0;
				}
		}
		/* A rank's file covers its shards even when they hold no rows. */
		{
			const json_t *sh = json_object_get(json_object_get(f->extra, "survivor"), "shards"), *v;
			size_t j;

			json_array_foreach(sh, j, v)
				if (json_is_integer(v) && json_integer_value(v) >= 0 &&
				    json_integer_value(v) < S)
					sv->lost[json_integer_value(v)] = 0;
		}
	}
	for (uint32_t s = 0; s < S; s++)
		sv->nlost += sv->lost[s];
	/* A state tensor lives in every survivor's file: with no file, there is none. */
	if (!nf) {
		snprintf(sv->why, sizeof(sv->why), "no survivor file of iteration %llu could be used",
			 (unsigned long long)newest);
		goto out;
	}
	st->iteration = newest;
	/*
	 * The worker state in the extra (a rewind record, auto's step norms)
	 * as the survivors had it: the first file's, but for its own survivor
	 * entry. What it holds is checked where every resumed state's is (the
	 * trainer's start).
	 */
	{
		json_t *x = json_deep_copy(files[0]->extra);

		if (!x) {
			rc = scar_error_set(err, SCAR_ENOMEM, "out of memory");
			goto out;
		}
		json_object_del(x, "survivor");
		/* The run's schedule is the checkpoint's, already checked there. */
		if (json_object_get(st->extra, "schedule"))
			json_object_set(x, "schedule", json_object_get(st->extra, "schedule"));
		else
			json_object_del(x, "schedule");
		json_decref(st->extra);
		st->extra = x;
	}
	if (!json_is_integer(json_object_get(st->extra, "clock")))
		json_object_set_new(st->extra, "clock", json_integer((json_int_t)newest));
	sv->iter = newest;
	{
		const char *r = json_string_value(json_object_get(json_object_get(files[0]->extra,
										   "survivor"),
								  "recovery"));

		sv->recovery = r ? scar_recovery_parse(r) : -1;
	}
	sv->nfiles = nf;
	sv->ranks = ranks;
	sv->older = older;
out:
	closedir(d);
	free(seen);
	for (size_t k = 0; k < nf; k++)
		scar_state_free(files[k]);
	free(files);
	if (rc || !sv->iter) {
		free(sv->lost);
		sv->lost = NULL;
		sv->nlost = 0;
	}
	return rc;
}
