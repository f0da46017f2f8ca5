/*
 * ckpt_verify.c - verifying a whole checkpoint, on one thread or several.
 *
 * On several threads (a regular file only) this thread walks the file as
 * the one-thread verify does, checking every section header, the index and
 * the trailer, but passes over the payloads (CKPT_DECODE_SKIP); the other
 * threads, and this one once the walk is done, check the payloads, a
 * section each at a time, by pread(2) at their offsets. A payload's
 * checksums run through it in order, so a file of one section gains
 * nothing. Damage is not reported from there: the file is verified again
 * on one thread, which names the first problem in file order with the same
 * words and offset as always. A damaged file is rare, and a second pass
 * over it costs less than reporting a later problem first.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>

#include "scar/ckpt.h"
#include "ckpt_internal.h"

#define VERIFY_THREADS_MAX 64

struct vjob {
	size_t no;				/* section number, file order */
	struct scar_ckpt_section_info si;
};

struct vpool {
	pthread_mutex_t mu;
	pthread_cond_t more;		/* a job came, the walk ended or a check failed */
	struct vjob *jobs;
	size_t njobs, cap, next;
	int walked;			/* no more jobs will come */
	int failed;			/* a check failed or could not be made: stop */
};

struct vworker {
	struct vpool *p;
	struct scar_ckpt_reader *w;
	pthread_t th;
};

/* Check jobs with reader w until none is left and (wait) none will come. */
static void vpool_work(struct vpool *p, struct scar_ckpt_reader *w, int wait)
{
	pthread_mutex_lock(&p->mu);
	for (;;) {
		struct vjob j;
		int rc;

		while (wait && !p->failed && !p->walked && p->next == p->njobs)
			pthread_cond_wait(&p->more, &p->mu);
		if (p->failed || p->next == p->njobs)
			break;
		j = p->jobs[p->next++];
		pthread_mutex_unlock(&p->mu);
		rc = ckpt_reader_check_at(w, j.no, &j.si, NULL);
		pthread_mutex_lock(&p->mu);
		if (rc) {
			p->failed = 1;
			pthread_cond_broadcast(&p->more);
		}
	}
	pthread_mutex_unlock(&p->mu);
}

static void *vworker_main(void *arg)
{
	struct vworker *v = arg;
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	vpool_work(v->p, v->w, 1);
	return NULL;
}

/* Add a job; 0, or -1 when it cannot be had or a check failed already. */
static int vpool_add(struct vpool *p, size_t no, const struct scar_ckpt_section_info *si)
{
	int rc = -1;

	pthread_mutex_lock(&p->mu);
	if (!p->failed && p->njobs == p->cap) {
		size_t nc = p->cap ? 2 * p->cap : 64;
		struct vjob *v = realloc(p->jobs, nc * sizeof(*v));

		if (v) {
			p->jobs = v;
			p->cap = nc;
		} else {
			p->failed = 1;
		}
	}
	if (!p->failed) {
		p->jobs[p->njobs].no = no;
		p->jobs[p->njobs].si = *si;
		p->njobs++;
		pthread_cond_signal(&p->more);
		rc = 0;
	}
	pthread_mutex_unlock(&p->mu);
	return rc;
}

/*
 * Verify r on n threads: 0 when every check passed, -1 when one failed or
 * could not be made (the caller then verifies on one thread, for the
 * report).
 */
static int verify_parallel(struct scar_ckpt_reader *r, unsigned n)
{
	struct vpool p = { .walked = 0 };
	struct vworker *v = calloc(n, sizeof(*v));
	struct scar_ckpt_section sec;
	struct scar_error e;
	size_t no = 0;
	int rc;

	if (!v)
		return -1;
	pthread_mutex_init(&p.mu, NULL);
	pthread_cond_init(&p.more, NULL);
	/* Made before the walk moves r on: v[0] is this thread's. */
	for (unsigned i = 0; i < n; i++) {
		v[i].p = &p;
		v[i].w = ckpt_reader_worker(r);
	}
	for (unsigned i = 1; i < n && v[0].w; i++) {
		if (v[i].w && pthread_create(&v[i].th, NULL, vworker_main, &v[i])) {
			ckpt_reader_worker_free(v[i].w);
			v[i].w = NULL;	/* fewer threads is slower, not wrong */
		}
	}
	if (!v[0].w) {
		rc = -1;
	} else {
		while ((rc = scar_ckpt_reader_next_mode(r, &sec, CKPT_DECODE_SKIP, NULL, &e)) > 0)
			if (vpool_add(&p, no++, &sec.info)) {
				rc = -1;
				break;
			}
		if (rc < 0)
			rc = -1;
	}
	pthread_mutex_lock(&p.mu);
	p.walked = 1;
	if (rc)
		p.failed = 1;
	pthread_cond_broadcast(&p.more);
	pthread_mutex_unlock(&p.mu);
	if (v[0].w)
		vpool_work(&p, v[0].w, 0);
	for (unsigned i = 1; i < n; i++)
		if (v[i].w)
			pthread_join(v[i].th, NULL);
	if (p.failed)
		rc = -1;
	for (unsigned i = 0; i < n; i++)
		ckpt_reader_worker_free(v[i].w);
	pthread_cond_destroy(&p.more);
	pthread_mutex_destroy(&p.mu);
	free(p.jobs);
	free(v);
	return rc;
}

int scar_ckpt_verify_threads(const char *path, unsigned threads, struct scar_error *err)
{
	struct scar_ckpt_reader *r;
	int rc = scar_ckpt_reader_open(&r, path, err);

	if (rc)
		return rc;
	if (threads > 1 && scar_ckpt_reader_file_size(r) != UINT64_MAX) {
		if (verify_parallel(r, threads > VERIFY_THREADS_MAX ? VERIFY_THREADS_MAX : threads) == 0) {
			scar_ckpt_reader_close(r);
			return 0;
		}
		/* Damage, or a check that could not be made: one thread says which, from the start. */
		if ((rc = ckpt_reader_restart(&r, err)))
			return rc;
	}
	while ((rc = scar_ckpt_reader_next_mode(r, NULL, CKPT_DECODE_DISCARD, NULL, err)) > 0)
		;
	scar_ckpt_reader_close(r);
	return rc;
}

int scar_ckpt_verify(const char *path, struct scar_error *err)
{
	return scar_ckpt_verify_threads(path, 1, err);
}
