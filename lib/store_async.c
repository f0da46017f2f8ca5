/*
 * store_async.c - checkpoints persisted in the background (scar/store.h,
 * "the background writer"): one writer thread takes snapshots in order
 * and writes each with scar_store_write, so the trainer blocks only when
 * more than max_in_flight snapshots wait. A prepare hook, when given, is
 * run on each snapshot first, in submission order and ahead of any write
 * still to do (the trainer chooses a partial checkpoint's rows there, off
 * its loop); scar_store_async_prepared waits until all are.
 *
 * One thread, not a pool: checkpoints become durable in the order they
 * were taken, which is what the saved view's bookkeeping relies on. The
 * thread blocks every signal, so SIGINT/SIGTERM/SIGHUP reach the main
 * thread, whose handler (lib/file.c) removes the writer's temporary.
 */
#define _GNU_SOURCE	/* SCHED_BATCH (Linux) */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scar/store.h"

struct async_job {
	struct scar_state *snap;	/* owned */
	struct scar_store_write_opts wo;
	void *tag;
	int done, rc;
	uint64_t bytes;
	double seconds;
	struct scar_error err;
};

struct scar_store_async {
	struct scar_store store;	/* the directory; the lock stays the caller's */
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;		/* a job queued, finished, or stop */
	struct async_job *ring;		/* max_in_flight slots, FIFO */
	/* next: the oldest not yet written; prep: the oldest not yet prepared */
	unsigned cap, head, count, next, prep;
	scar_store_async_prepare_fn prepare;
	int stop, started;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * The writer is a batch thread while it waits for work: a thread woken with
 * the normal policy may preempt the waker on its core (the loop, at a
 * submit, for milliseconds on a busy machine), a batch one does not. Once
 * it has work it is a normal thread again, its share of the CPU a fair
 * one. Best effort: where the policy is not there, the wake is as it was.
 */
static void writer_batch(int on)
{
#ifdef SCHED_BATCH
	struct sched_param sp = { 0 };

	(void)pthread_setschedparam(pthread_self(), on ? SCHED_BATCH : SCHED_OTHER, &sp);
#else
	(void)on;
#endif
}

static void *writer_main(void *arg)
{
	struct scar_store_async *a = arg;
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	pthread_mutex_lock(&a->mu);
	for (;;) {
		struct async_job *j;
		double t0;

		if (!a->stop && a->next == a->count && a->prep == a->count) {
			writer_batch(1);
			while (!a->stop && a->next == a->count && a->prep == a->count)
				pthread_cond_wait(&a->cv, &a->mu);
			writer_batch(0);
		}
		if (a->prep < a->count) {
			/* Preparing comes first: the trainer may be waiting for it. */
			j = &a->ring[(a->head + a->prep) % a->cap];
			pthread_mutex_unlock(&a->mu);
			t0 = now();
			if (a->prepare)
				j->rc = a->prepare(j->tag, &j->wo, &j->err);
			j->seconds = now() - t0;
			pthread_mutex_lock(&a->mu);
			a->prep++;
			pthread_cond_broadcast(&a->cv);
			continue;
		}
		if (a->next == a->count)	/* stop, and nothing left to write */
			break;
		j = &a->ring[(a->head + a->next) % a->cap];
		pthread_mutex_unlock(&a->mu);
		/* The job's fields are this thread's until done is set. */
		t0 = now();
		if (!j->rc)
			j->rc = scar_store_write(&a->store, j->snap, &j->wo, &j->bytes, &j->err);
		j->seconds += now() - t0;
		pthread_mutex_lock(&a->mu);
		j->done = 1;
		a->next++;
		pthread_cond_broadcast(&a->cv);
	}
	pthread_mutex_unlock(&a->mu);
	return NULL;
}

int scar_store_async_open(struct scar_store_async **out, const struct scar_store *s,
			  unsigned max_in_flight, scar_store_async_prepare_fn prepare,
			  struct scar_error *err)
{
	struct scar_store_async *a;
	int e;

	*out = NULL;
	if (max_in_flight < 1 || max_in_flight > SCAR_STORE_ASYNC_MAX)
		return scar_error_set(err, SCAR_EINVAL, "checkpoints in flight must be 1 to %u",
				      (unsigned)SCAR_STORE_ASYNC_MAX);
	a = calloc(1, sizeof(*a));
	if (!a || !(a->ring = calloc(max_in_flight, sizeof(*a->ring)))) {
		free(a);
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	}
	a->store = *s;
	a->cap = max_in_flight;
	a->prepare = prepare;
	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->cv, NULL);
	if ((e = pthread_create(&a->thread, NULL, writer_main, a))) {
		pthread_cond_destroy(&a->cv);
		pthread_mutex_destroy(&a->mu);
		free(a->ring);
		free(a);
		return scar_error_set_errno(err, e, NULL, "cannot start the checkpoint writer thread");
	}
	a->started = 1;
	*out = a;
	return 0;
}

int scar_store_async_submit(struct scar_store_async *a, struct scar_state *snap,
			    const struct scar_store_write_opts *wo, void *tag)
{
	struct async_job *j;

	pthread_mutex_lock(&a->mu);
	if (a->count == a->cap) {
		pthread_mutex_unlock(&a->mu);
		return -1;	/* the caller collects the oldest first */
	}
	j = &a->ring[(a->head + a->count) % a->cap];
	memset(j, 0, sizeof(*j));
	j->snap = snap;
	j->wo = *wo;
	j->tag = tag;
	a->count++;
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
	return 0;
}

int scar_store_async_collect(struct scar_store_async *a, int wait,
			     struct scar_store_async_result *res)
{
	struct async_job *j;

	pthread_mutex_lock(&a->mu);
	for (;;) {
		if (a->count == 0) {
			pthread_mutex_unlock(&a->mu);
			return 0;
		}
		j = &a->ring[a->head];
		if (j->done || !wait)
			break;
		pthread_cond_wait(&a->cv, &a->mu);
	}
	if (!j->done) {
		pthread_mutex_unlock(&a->mu);
		return 0;
	}
	res->tag = j->tag;
	res->rc = j->rc;
	res->bytes = j->bytes;
	res->seconds = j->seconds;
	res->err = j->err;
	j->snap = NULL;
	a->head = (a->head + 1) % a->cap;
	a->count--;
	a->next--;
	a->prep--;
	pthread_mutex_unlock(&a->mu);
	return 1;
}

void scar_store_async_prepared(struct scar_store_async *a)
{
	pthread_mutex_lock(&a->mu);
	while (a->prep < a->count)
		pthread_cond_wait(&a->cv, &a->mu);
	pthread_mutex_unlock(&a->mu);
}

void scar_store_async_close(struct scar_store_async *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->mu);
	a->stop = 1;
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
	if (a->started)
		pthread_join(a->thread, NULL);
	/* What nobody collected was written all the same: stop lets the queue drain. */
	pthread_cond_destroy(&a->cv);
	pthread_mutex_destroy(&a->mu);
	free(a->ring);
	free(a);
}
