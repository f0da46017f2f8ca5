/*
 * test-store.c - a directory of checkpoints (scar/store.h): names, listing
 * files and manifests, the newest complete checkpoint, the saved view of a
 * resume, the lock and the cleanup of a killed writer's temporaries, over
 * a scratch directory.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "scar/ckpt.h"
#include "scar/dist.h"
#include "scar/store.h"
#include "unit.h"

static char dir[] = "/tmp/scar-test-store-XXXXXX";

static struct scar_state *make_state(uint64_t iteration)
{
	struct scar_state *st;
	struct scar_tensor *w, *rng;
	uint64_t shw[2] = { 12, 2 }, shr[1] = { 4 };
	struct scar_error e;

	scar_error_clear(&e);
	if (scar_state_new(&st, "ridge", &e) ||
	    scar_tensor_new(&w, "w", SCAR_F32, SCAR_ROLE_PARAM, 2, shw, &e) ||
	    scar_state_add(st, w, &e) ||
	    scar_tensor_new(&rng, "rng", SCAR_U64, SCAR_ROLE_STATE, 1, shr, &e) ||
	    scar_state_add(st, rng, &e)) {
		fprintf(stderr, "make_state: %s\n", e.msg);
		exit(2);
	}
	st->shards = 3;
	st->iteration = iteration;
	for (uint64_t i = 0; i < 12 * 2; i++)
		((float *)w->data)[i] = (float)i + 1000.0f * (float)iteration;
	for (uint64_t i = 0; i < 4; i++)
		((uint64_t *)rng->data)[i] = i + iteration;
	return st;
}

static void path_of(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

static int exists(const char *name)
{
	char p[4096];
	struct stat sb;

	path_of(p, sizeof(p), name);
	return lstat(p, &sb) == 0;
}

static void put(const char *name, const char *text)
{
	char p[4096];
	int fd;

	path_of(p, sizeof(p), name);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	if (fd >= 0)
		close(fd);
}

/* One rank of one, all in this process: the ranks' exchange is a copy. */
static int one_agree(void *arg, int rc)
{
	return rc;
}

static void one_gather(void *arg, const struct scar_store_part *mine, struct scar_store_part *all)
{
	if (all)
		all[0] = *mine;
}

static void one_bcast(void *arg, uint64_t *v)
{
}

static const struct scar_store_comm one_rank = { one_agree, one_gather, one_bcast, NULL };

static void write_ckpt(const struct scar_store *s, const struct scar_state *view, int dist,
		       int partial)
{
	struct scar_store_write_opts wo = { 0 };
	struct scar_error e;
	uint64_t bytes = 0;

	wo.sync = 0;
	wo.compress = 1;
	wo.clock = view->iteration;
	wo.partial = partial;
	wo.rank = 0;
	wo.ranks = 1;
	wo.comm = dist ? &one_rank : NULL;
	scar_error_clear(&e);
	CHECK_RC(scar_store_write(s, view, &wo, &bytes, &e));
	CHECK(bytes > 0);
}

static void test_names(void)
{
	char b[64];

	CHECK(scar_store_file_name(b, sizeof(b), 42) == 0 && strcmp(b, "ckpt-0000000042.ckpt") == 0);
	CHECK(scar_store_rank_file_name(b, sizeof(b), 42, 3) == 0 &&
	      strcmp(b, "ckpt-0000000042.rank-3.ckpt") == 0);
	CHECK(scar_store_manifest_name(b, sizeof(b), 42) == 0 &&
	      strcmp(b, "ckpt-0000000042.manifest") == 0);
	CHECK(scar_store_file_name(b, 10, 42) == -1);
	CHECK(scar_store_is_rank_file("d/ckpt-0000000042.rank-3.ckpt"));
	CHECK(!scar_store_is_rank_file("d/ckpt-0000000042.rank-.ckpt"));
	CHECK(!scar_store_is_rank_file("d.rank-3.ckpt/ckpt-0000000042.ckpt"));
	CHECK(scar_store_is_policy_file("d/ckpt-0000000042.ckpt", 42));
	CHECK(scar_store_is_policy_file("ckpt-0000000042.manifest", 42));
	CHECK(!scar_store_is_policy_file("d/ckpt-0000000042.ckpt", 41));
	CHECK(!scar_store_is_policy_file("d/final.ckpt", 42));
}

/*
 * 10 one process full, 20 one rank full (rank file + manifest), 25 one
 * process partial, 30 damaged, 40 a rank file whose manifest is missing.
 */
static void test_list_newest_view(void)
{
	struct scar_store s;
	struct scar_state *a = make_state(10), *b = make_state(20), *c = make_state(25);
	struct scar_state *got = NULL, *saved, *last_full = NULL, *view;
	struct scar_ckpt_entry *v = NULL;
	struct scar_tensor pw;
	struct scar_tensor *vp[1];
	struct scar_error e;
	char used[4096];
	size_t n = 0, skipped = 0;
	float *w;

	scar_store_init(&s, dir);
	write_ckpt(&s, a, 0, 0);
	write_ckpt(&s, b, 1, 0);
	/* The partial checkpoint at 25: rows 1 and 4 of w. */
	pw = *c->tensors[0];
	pw.present = calloc(12, 1);
	pw.present[1] = pw.present[4] = 1;
	vp[0] = &pw;
	view = calloc(1, sizeof(*view));
	*view = *c;
	view->ntensors = 1;
	view->tensors = vp;
	write_ckpt(&s, view, 0, 1);
	free(view);
	free(pw.present);
	put("ckpt-0000000030.ckpt", "not a checkpoint");
	{
		char p[4096];
		struct scar_state *d = make_state(40);
		struct scar_store t;

		/* 40: written as one rank, then its manifest removed (a crash before it). */
		scar_store_init(&t, dir);
		write_ckpt(&t, d, 1, 0);
		path_of(p, sizeof(p), "ckpt-0000000040.manifest");
		CHECK(unlink(p) == 0);
		CHECK(exists("ckpt-0000000040.rank-0.ckpt"));
		scar_state_free(d);
	}

	/* Each checkpoint once; the damaged file counts, the orphan rank file does not. */
	scar_error_clear(&e);
	CHECK_RC(scar_store_list(&s, 0, &v, &n, &skipped, &e));
	CHECK(n == 3 && skipped == 1);
	if (n == 3) {
		CHECK(v[0].iteration == 10 && strstr(v[0].path, "ckpt-0000000010.ckpt"));
		CHECK(v[1].iteration == 20 && strstr(v[1].path, "ckpt-0000000020.manifest"));
		CHECK(v[2].iteration == 25 && v[2].partial);
	}
	scar_ckpt_list_free(v, n);
	/* Files: rank files too, no manifests; as scar_ckpt_list. */
	CHECK_RC(scar_store_list(&s, SCAR_STORE_LIST_FILES, &v, &n, &skipped, &e));
	CHECK(n == 4 && skipped == 1);
	if (n == 4)
		CHECK(scar_store_is_rank_file(v[1].path) && scar_store_is_rank_file(v[3].path));
	scar_ckpt_list_free(v, n);
	CHECK_RC(scar_ckpt_list(dir, &v, &n, &skipped, &e));
	CHECK(n == 4 && skipped == 1);
	scar_ckpt_list_free(v, n);

	/* The newest complete full one: 30 is damaged (passed over), 25 partial, 20 loads. */
	CHECK_RC(scar_store_newest(&s, &got, &skipped, used, sizeof(used), NULL, NULL, &e));
	CHECK(got && got->iteration == 20 && skipped == 1);
	CHECK(strstr(used, "ckpt-0000000020.manifest") != NULL);
	scar_state_free(got);
	got = NULL;
	CHECK_RC(scar_dist_load_resume(dir, &got, &skipped, used, sizeof(used), &e));
	CHECK(got && got->iteration == 20 && skipped == 1);
	scar_state_free(got);
	got = NULL;
	/*
	 * scar_train_load_resume of a directory: every *.ckpt, manifests
	 * unread, so the orphan rank file of 40 (a whole state here) wins.
	 */
	CHECK_RC(scar_store_load_single(dir, &got, &skipped, used, sizeof(used), &e));
	CHECK(got && got->iteration == 40 && strstr(used, "ckpt-0000000040.rank-0.ckpt"));
	CHECK(skipped == 1);	/* the damaged file, counted by the listing */
	scar_state_free(got);
	got = NULL;

	/* The saved view at 25: 20's rows, then 25's rows 1 and 4; last_full is 20's. */
	CHECK(scar_state_clone(&saved, c, NULL) == 0);
	for (size_t i = 0; i < 24; i++)
		((float *)saved->tensors[0]->data)[i] = -1;
	CHECK_RC(scar_store_saved_view(&s, c, saved, &last_full, NULL, &e));
	w = saved->tensors[0]->data;
	CHECK(w[0] == 20000.0f && w[2] == 25002.0f && w[3] == 25003.0f && w[8] == 25008.0f &&
	      w[10] == 20010.0f);
	CHECK(saved->iteration == 25);
	CHECK(last_full && last_full->iteration == 20);
	scar_state_free(last_full);
	scar_state_free(saved);
	scar_state_free(a);
	scar_state_free(b);
	scar_state_free(c);
}

static void test_lock(void)
{
	struct scar_store s, t;
	struct scar_error e;
	struct timespec old[2] = { { 1000000, 0 }, { 1000000, 0 } };
	char p[4096];

	put(".ckpt-0000000050.ckpt.tmp.AbCdEf", "half");
	put(".ckpt-0000000050.manifest.tmp.AbCdEf", "half");
	put(".ckpt-0000000060.ckpt.tmp.XyZ", "new");	/* modified after the lock: spared */
	put("notes.tmp.1", "not ours");
	path_of(p, sizeof(p), ".ckpt-0000000050.ckpt.tmp.AbCdEf");
	CHECK(utimensat(AT_FDCWD, p, old, 0) == 0);
	path_of(p, sizeof(p), ".ckpt-0000000050.manifest.tmp.AbCdEf");
	CHECK(utimensat(AT_FDCWD, p, old, 0) == 0);
	path_of(p, sizeof(p), "notes.tmp.1");
	CHECK(utimensat(AT_FDCWD, p, old, 0) == 0);
	path_of(p, sizeof(p), ".ckpt-0000000060.ckpt.tmp.XyZ");
	{
		struct timespec future[2] = { { 0, UTIME_OMIT }, { time(NULL) + 3600, 0 } };

		CHECK(utimensat(AT_FDCWD, p, future, 0) == 0);
	}
	scar_store_init(&s, dir);
	scar_error_clear(&e);
	CHECK_RC(scar_store_lock(&s, &e));
	CHECK(s.lock >= 0 && exists(SCAR_STORE_LOCK_NAME));
	CHECK(!exists(".ckpt-0000000050.ckpt.tmp.AbCdEf"));
	CHECK(!exists(".ckpt-0000000050.manifest.tmp.AbCdEf"));
	CHECK(exists(".ckpt-0000000060.ckpt.tmp.XyZ"));
	CHECK(exists("notes.tmp.1"));
	/* A second writer is refused, naming the holder. */
	scar_store_init(&t, dir);
	CHECK(scar_store_lock(&t, &e) == SCAR_EIO && t.lock == -1);
	CHECK(strstr(e.msg, "is in use by another run (pid") != NULL);
	scar_store_unlock(&s);
	CHECK(s.lock == -1 && !exists(SCAR_STORE_LOCK_NAME));
	scar_store_unlock(&s);	/* not held: nothing */
	CHECK_RC(scar_store_lock(&t, &e));
	scar_store_unlock(&t);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 2;
	}
	test_names();
	test_list_newest_view();
	test_lock();
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			return 2;
	}
	return unit_done("test-store");
}
