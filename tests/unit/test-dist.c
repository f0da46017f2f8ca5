/*
 * test-dist.c - the MPI-free half of distributed training: the data
 * partition, row ownership, the fixed reduction order, and distributed
 * checkpoints (rank files + manifest) read back as one.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scar/ckpt.h"
#include "scar/dist.h"
#include "scar/shard.h"
#include "unit.h"

static char dir[] = "/tmp/scar-test-dist-XXXXXX";

static void test_partition(void)
{
	static const uint64_t ns[] = { 0, 1, 2, 7, 1000, 1001, 65537 };

	for (size_t a = 0; a < sizeof(ns) / sizeof(ns[0]); a++)
		for (uint32_t P = 1; P <= 9; P++) {
			uint64_t n = ns[a], prev = 0, mn = UINT64_MAX, mx = 0;

			CHECK(scar_dist_part_lo(n, 0, P) == 0);
			CHECK(scar_dist_part_lo(n, P, P) == n);
			for (uint32_t R = 0; R < P; R++) {
				uint64_t lo = scar_dist_part_lo(n, R, P), hi = scar_dist_part_lo(n, R + 1, P);

				CHECK(lo == prev && hi >= lo);
				prev = hi;
				mn = hi - lo < mn ? hi - lo : mn;
				mx = hi - lo > mx ? hi - lo : mx;
			}
			CHECK(mx - mn <= 1);	/* balanced */
		}
}

static void test_owner(void)
{
	/* Every row has one owner; every rank owns whole shards. */
	for (uint32_t S = 1; S <= 8; S++)
		for (uint32_t P = 1; P <= 6; P++)
			for (uint64_t r = 0; r < 40; r++) {
				uint32_t q = scar_dist_row_owner(r, S, P);

				CHECK(q < P);
				CHECK(q == scar_dist_shard_owner(scar_shard_of_row(r, S), P));
			}
	CHECK(scar_dist_row_owner(13, 8, 3) == 2);	/* shard 5 -> rank 2 */
}

static void test_sum_order(void)
{
	/* Rank order, left to right: 1 + 1e16 - 1e16 = 0 in doubles; other orders give 1. */
	double v[3] = { 1, 1e16, -1e16 };

	CHECK(scar_dist_sum_ordered(v, 3) == 0);
	CHECK(scar_dist_sum_ordered(v, 1) == 1);
	CHECK(scar_dist_sum_ordered(v, 0) == 0);
}

static struct scar_state *make_state(uint64_t iteration)
{
	struct scar_state *st;
	struct scar_tensor *w, *rng;
	uint64_t shw[2] = { 37, 3 }, shr[1] = { 6 };
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
	st->shards = 5;
	st->iteration = iteration;
	for (uint64_t i = 0; i < 37 * 3; i++)
		((float *)w->data)[i] = (float)i * 0.25f - (float)iteration;
	for (uint64_t i = 0; i < 6; i++)
		((uint64_t *)rng->data)[i] = 0x9e3779b97f4a7c15ull * (i + 1) + iteration;
	return st;
}

static void path_of(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

/*
 * Write st as the trainer does with P ranks: rank R's file has the param
 * rows R owns (partial: only `partial_rows` rows below that count are
 * selected), rank 0's file the state tensors of a full checkpoint, then the
 * manifest. skip_manifest leaves it out (a crash before it was written).
 */
static void write_dist(const struct scar_state *st, uint32_t P, int partial, int skip_manifest)
{
	struct scar_dist_manifest m;
	struct scar_error e;
	char name[256], p[4096];

	memset(&m, 0, sizeof(m));
	snprintf(m.model, sizeof(m.model), "%s", st->model);
	m.iteration = st->iteration;
	m.clock = st->iteration + 100;
	m.ranks = P;
	m.shards = st->shards;
	m.partial = partial;
	m.nfiles = P;
	m.files = calloc(P, sizeof(*m.files));
	for (uint32_t R = 0; R < P; R++) {
		struct scar_tensor vt[2], *vp[2];
		struct scar_state view = *st;
		size_t nv = 0;

		for (size_t i = 0; i < st->ntensors; i++) {
			const struct scar_tensor *x = st->tensors[i];

			if (x->role != SCAR_ROLE_PARAM) {
				if (!partial && R == 0) {
					vt[nv] = *x;
					vp[nv] = &vt[nv];
					nv++;
				}
				continue;
			}
			vt[nv] = *x;
			vt[nv].present = calloc(scar_tensor_rows(x), 1);
			for (uint64_t r = 0; r < scar_tensor_rows(x); r++)
				vt[nv].present[r] = scar_dist_row_owner(r, st->shards, P) == R &&
					(!partial || r < 10);
			vp[nv] = &vt[nv];
			nv++;
		}
		view.ntensors = nv;
		view.tensors = vp;
		CHECK(scar_dist_rank_file_name(name, sizeof(name), st->iteration, R) == 0);
		path_of(p, sizeof(p), name);
		scar_error_clear(&e);
		CHECK_RC(scar_ckpt_save(&view, p, NULL, &e));
		snprintf(m.files[R].name, sizeof(m.files[R].name), "%s", name);
		m.files[R].rank = R;
		CHECK_RC(scar_dist_file_crc(p, &m.files[R].size, &m.files[R].crc32c, &e));
		for (size_t i = 0; i < nv; i++)
			if (vt[i].role == SCAR_ROLE_PARAM)
				free(vt[i].present);
	}
	CHECK(scar_dist_manifest_name(name, sizeof(name), st->iteration) == 0);
	path_of(p, sizeof(p), name);
	if (!skip_manifest)
		CHECK_RC(scar_dist_manifest_write(p, &m, 0, &e));
	free(m.files);
}

static int same_state(const struct scar_state *a, const struct scar_state *b)
{
	if (strcmp(a->model, b->model) || a->iteration != b->iteration || a->shards != b->shards ||
	    a->ntensors != b->ntensors)
		return 0;
	for (size_t i = 0; i < a->ntensors; i++) {
		const struct scar_tensor *x = a->tensors[i], *y = b->tensors[i];

		if (strcmp(x->name, y->name) || !scar_tensor_same_layout(x, y) || x->role != y->role ||
		    x->present || y->present || memcmp(x->data, y->data, scar_tensor_bytes(x)))
			return 0;
	}
	return 1;
}

static void test_manifest_roundtrip(void)
{
	struct scar_dist_manifest *m = NULL;
	struct scar_state *st = make_state(7), *got = NULL;
	struct scar_error e;
	char p[4096];
	json_t *clock;

	write_dist(st, 3, 0, 0);
	path_of(p, sizeof(p), "ckpt-0000000007.manifest");
	scar_error_clear(&e);
	CHECK_RC(scar_dist_manifest_read(p, &m, &e));
	CHECK(m && m->iteration == 7 && m->clock == 107 && m->ranks == 3 && m->shards == 5 &&
	      !m->partial && m->nfiles == 3 && !strcmp(m->model, "ridge"));
	CHECK(m && !strcmp(m->files[2].name, "ckpt-0000000007.rank-2.ckpt") && m->files[2].rank == 2);
	CHECK(m && scar_dist_manifest_verify(p, m, &e) == 0);
	scar_dist_manifest_free(m);

	CHECK_RC(scar_dist_manifest_load(p, &got, &e));
	CHECK(got && same_state(st, got));
	clock = got ? json_object_get(got->extra, "clock") : NULL;
	CHECK(json_is_integer(clock) && json_integer_value(clock) == 107);
	CHECK(got && !json_object_get(got->extra, "applied"));
	scar_state_free(got);
	scar_state_free(st);
}

static void test_manifest_damage(void)
{
	struct scar_state *st = make_state(9), *got = NULL;
	struct scar_error e;
	char p[4096], f[4096];
	int fd;

	write_dist(st, 2, 0, 0);
	path_of(p, sizeof(p), "ckpt-0000000009.manifest");
	path_of(f, sizeof(f), "ckpt-0000000009.rank-1.ckpt");
	/* One flipped byte in a rank file: the manifest's CRC catches it. */
	fd = open(f, O_RDWR);
	CHECK(fd >= 0);
	if (fd >= 0) {
		unsigned char c;

		CHECK(pread(fd, &c, 1, 40) == 1);
		c ^= 0x10;
		CHECK(pwrite(fd, &c, 1, 40) == 1);
		close(fd);
	}
	scar_error_clear(&e);
	CHECK(scar_dist_manifest_load(p, &got, &e) == SCAR_ECORRUPT);
	CHECK(strstr(e.msg, "rank-1") != NULL);
	CHECK(got == NULL);
	/* A missing rank file. */
	unlink(f);
	CHECK(scar_dist_manifest_load(p, &got, &e) == SCAR_ENOTFOUND);
	/* Not a manifest at all. */
	CHECK(scar_dist_manifest_load(f, &got, &e) < 0);
	path_of(f, sizeof(f), "bad.manifest");
	fd = open(f, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && write(fd, "{\"format\":\"x\"}\n", 15) == 15);
	if (fd >= 0)
		close(fd);
	CHECK(scar_dist_manifest_load(f, &got, &e) == SCAR_EFORMAT);
	unlink(f);
	scar_state_free(st);
}

static void test_resume_choice(void)
{
	struct scar_state *a = make_state(20), *b = make_state(30), *c = make_state(40), *got = NULL;
	struct scar_error e;
	char used[4096];
	size_t skipped = 0;

	/* 20 full, 30 full, 40 only partial, 50 full but its manifest never written. */
	write_dist(a, 2, 0, 0);
	write_dist(b, 4, 0, 0);
	write_dist(c, 3, 1, 0);
	scar_state_free(c);
	c = make_state(50);
	write_dist(c, 2, 0, 1);
	scar_error_clear(&e);
	CHECK_RC(scar_dist_load_resume(dir, &got, &skipped, used, sizeof(used), &e));
	CHECK(got && same_state(b, got));
	CHECK(strstr(used, "ckpt-0000000030.manifest") != NULL);
	scar_state_free(got);
	got = NULL;
	/* A partial manifest alone loads as a partial state. */
	{
		char p[4096];

		path_of(p, sizeof(p), "ckpt-0000000040.manifest");
		CHECK_RC(scar_dist_load_resume(p, &got, NULL, NULL, 0, &e));
		CHECK(got && got->ntensors == 1 && got->tensors[0]->present &&
		      scar_tensor_rows_present(got->tensors[0]) == 10);
		scar_state_free(got);
		got = NULL;
	}
	/* A newer plain full checkpoint wins over the manifests. */
	{
		char p[4096];

		path_of(p, sizeof(p), "ckpt-0000000045.ckpt");
		scar_state_free(c);
		c = make_state(45);
		CHECK_RC(scar_ckpt_save(c, p, NULL, &e));
		CHECK_RC(scar_dist_load_resume(dir, &got, NULL, used, sizeof(used), &e));
		CHECK(got && same_state(c, got));
		scar_state_free(got);
	}
	scar_state_free(a);
	scar_state_free(b);
	scar_state_free(c);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 2;
	}
	test_partition();
	test_owner();
	test_sum_order();
	test_manifest_roundtrip();
	test_manifest_damage();
	test_resume_choice();
	{
		char cmd[4200];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "test-dist: could not remove %s\n", dir);
	}
	return unit_done("test-dist");
}
