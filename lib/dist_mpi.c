/*
 * dist_mpi.c - scar_train_run over MPI ranks (scar/dist.h, scar-mpi(7)).
 *
 * Every rank is the server of the shards it owns (shard s -> rank s mod P)
 * and a worker over a contiguous block of the examples. One iteration is
 * bulk-synchronous: each worker computes its partial gradient, partials go
 * to the owning ranks (alltoallv) and are summed there in rank order, the
 * owners apply the update to their rows, and the updated rows are gathered
 * to every worker (allgatherv); mlr and mf (ALS) follow the same pattern
 * with the model's own order of operations (see their sections); mf SGD
 * runs DSGD's strata, passing the travelling blocks between neighbours
 * (point to point) and gathering all rows after the last. Every
 * collective's result is independent of MPI's algorithm choices: no MPI
 * reduction operation is used on floating point data, so a run is
 * deterministic for a given P.
 *
 * The MPI part is compiled only when SCAR_MPI is defined (the Makefile
 * defines it when it finds mpicc); without it, the entry points of
 * scar/dist.h say MPI is not there (at the end).
 */
#ifdef SCAR_MPI

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "scar/ckpt.h"
#include "scar/dist.h"
#include "scar/file.h"
#include "scar/model.h"
#include "scar/train.h"
#include "topk.h"
#include "train_internal.h"
#include "transport.h"


static int g_inited, g_rank, g_size = 1;

int scar_dist_init(int launched, int *argc, char ***argv, struct scar_error *err)
{
	int flag = 0;

	if (!launched || g_inited)
		return 0;
	MPI_Initialized(&flag);
	if (!flag && MPI_Init(argc, argv) != MPI_SUCCESS)
		return scar_error_set(err, SCAR_EIO, "cannot start MPI");
	g_inited = 1;
	MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &g_size);
	return 0;
}

void scar_dist_finalize(void)
{
	int flag = 1;

	if (!g_inited)
		return;
	MPI_Finalized(&flag);
	if (!flag)
		MPI_Finalize();
	g_inited = 0;
}

int scar_dist_bcast_int(int v)
{
	if (g_inited && g_size > 1)
		MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD);
	return v;
}

int scar_dist_max_int(int v)
{
	int m = v;

	if (g_inited && g_size > 1)
		MPI_Allreduce(&v, &m, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	return m;
}

int scar_dist_active(void)
{
	return g_inited && g_size > 1;
}

int scar_dist_rank(void)
{
	return g_inited ? g_rank : 0;
}

int scar_dist_size(void)
{
	return g_inited ? g_size : 1;
}

/* ---- the trainer ---- */

/* c first: the shared trainer's hooks get &t->c and find t (dt_of). */
struct dt {
	struct scar_train_ctx c;	/* c.m: rank 0, or every rank (dist->every_rank) */
	uint32_t S;
	const struct scar_model_dist *dist;	/* the model's distributed step */
	struct scar_dist_model *part;		/* this rank's part of it */
	struct scar_transport tp;	/* the ranks; tp.sent: bytes this rank sent to others */
};

static struct dt *dt_of(struct scar_train_ctx *c)
{
	return (struct dt *)c;
}

/*
 * Every rank learns whether any rank failed; the lowest failing rank's
 * error is copied to all, so each returns the same code and message.
 */
static int mpi_agree(uint32_t P, uint32_t R, int rc, struct scar_error *err)
{
	int flag = rc ? (int)R : (int)P, first;
	struct scar_error e;

	MPI_Allreduce(&flag, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (first == (int)P)
		return 0;
	if ((int)R == first && err)
		e = *err;
	else
		scar_error_clear(&e);
	MPI_Bcast(&e, (int)sizeof(e), MPI_BYTE, first, MPI_COMM_WORLD);
	if (err)
		*err = e;
	return e.code ? e.code : SCAR_EIO;
}

static int agree(struct dt *t, int rc)
{
	return mpi_agree(t->c.P, t->c.R, rc, t->c.err);
}

/* ---- the transport over MPI (transport.h): moves bits, never reduces them ---- */

/* Elements of es bytes as an MPI type of that size (only moved, never added). */
static MPI_Datatype mpi_type(size_t es)
{
	return es == 8 ? MPI_UINT64_T : es == 4 ? MPI_UINT32_T : MPI_BYTE;
}

static void mpi_allgatherv(struct scar_transport *t, const void *send, void *recv, const int *cnt,
			   const int *displ, size_t es)
{
	MPI_Allgatherv(send ? send : MPI_IN_PLACE, send ? cnt[t->R] : 0,
		       send ? mpi_type(es) : MPI_DATATYPE_NULL, recv, cnt, displ, mpi_type(es),
		       MPI_COMM_WORLD);
}

static void mpi_alltoallv(struct scar_transport *t, const void *send, const int *scnt,
			  const int *sdispl, void *recv, const int *rcnt, const int *rdispl, size_t es)
{
	MPI_Alltoallv(send, scnt, sdispl, mpi_type(es), recv, rcnt, rdispl, mpi_type(es),
		      MPI_COMM_WORLD);
}

static void mpi_sendrecv(struct scar_transport *t, const void *send, int scnt, uint32_t to,
			 void *recv, int rcnt, uint32_t from, size_t es)
{
	MPI_Sendrecv(send, scnt, mpi_type(es), (int)to, 0, recv, rcnt, mpi_type(es), (int)from, 0,
		     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

static void mpi_bcast(struct scar_transport *t, void *buf, size_t bytes, uint32_t root)
{
	char *p = buf;

	while (bytes) {
		int chunk = bytes > (1u << 30) ? 1 << 30 : (int)bytes;

		MPI_Bcast(p, chunk, MPI_BYTE, (int)root, MPI_COMM_WORLD);
		p += chunk;
		bytes -= (size_t)chunk;
	}
}

static int mpi_tp_agree(struct scar_transport *t, int rc, struct scar_error *err)
{
	return mpi_agree(t->P, t->R, rc, err);
}

static const struct scar_transport_ops mpi_ops = {
	.allgatherv = mpi_allgatherv,
	.alltoallv = mpi_alltoallv,
	.sendrecv = mpi_sendrecv,
	.bcast = mpi_bcast,
	.agree = mpi_tp_agree,
};

static int is_param(const struct scar_tensor *x)
{
	return x->role == SCAR_ROLE_PARAM;
}

static uint32_t owner(const struct dt *t, uint64_t r)
{
	return scar_dist_row_owner(r, t->S, t->c.P);
}

/* The state's params changed outside a step: the model's part drops what it cached. */
static void model_changed(struct dt *t)
{
	if (t->dist && t->part && t->dist->changed)
		t->dist->changed(t->part);
}

/*
 * Bring every rank's copy of the param tensors up to date with the rows
 * their owners hold: each rank contributes its rows, all receive all.
 */
static int sync_params(struct dt *t, struct scar_state *st)
{
	return scar_tp_sync_rows(&t->tp, t->S, st->tensors, st->ntensors, t->c.err);
}

/*
 * Gather a rows x cols table of doubles whose row r is filled in by its
 * owner (r's owner as for a param tensor of that many rows) to every rank.
 */
static int sync_table(struct dt *t, double *v, uint64_t rows, uint64_t cols)
{
	return scar_tp_sync_table(&t->tp, t->S, v, rows, cols, t->c.err);
}

/* ---- the workload behind the trainer ---- */

static int wl_objective(struct scar_train_ctx *c, double *out)
{
	struct dt *t = dt_of(c);

	return t->dist->objective(t->part, t->c.st, out, t->c.err);
}

static int wl_step(struct scar_train_ctx *c)
{
	struct dt *t = dt_of(c);

	return t->dist->step(t->part, t->c.st, t->c.err);
}

/* ---- state distribution ---- */

struct tmeta {
	char name[SCAR_NAME_MAX];
	int32_t dtype, role, ndim, pad;
	uint64_t shape[SCAR_MAX_DIMS];
};

/*
 * Rank 0's state, built by the model, to every rank: first the tensor
 * table (every rank allocates, and all agree that it could), then the data
 * in chunks below INT_MAX.
 */
static int bcast_state(struct dt *t)
{
	uint64_t nt = t->c.R == 0 ? t->c.st->ntensors : 0, iter = t->c.R == 0 ? t->c.st->iteration : 0;
	int rc = 0;

	MPI_Bcast(&nt, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
	MPI_Bcast(&iter, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
	if (t->c.R != 0)
		t->c.st->iteration = iter;
	for (uint64_t i = 0; i < nt; i++) {
		struct tmeta mt;
		struct scar_tensor *x;

		memset(&mt, 0, sizeof(mt));
		if (t->c.R == 0) {
			x = t->c.st->tensors[i];
			snprintf(mt.name, sizeof(mt.name), "%s", x->name);
			mt.dtype = x->dtype;
			mt.role = x->role;
			mt.ndim = x->ndim;
			memcpy(mt.shape, x->shape, sizeof(mt.shape));
		}
		MPI_Bcast(&mt, (int)sizeof(mt), MPI_BYTE, 0, MPI_COMM_WORLD);
		if (t->c.R != 0 && !rc) {
			rc = scar_tensor_new(&x, mt.name, (enum scar_dtype)mt.dtype,
					     (enum scar_role)mt.role, mt.ndim, mt.shape, t->c.err);
			if (!rc)
				rc = scar_state_add(t->c.st, x, t->c.err);
		}
	}
	if ((rc = agree(t, rc)))
		return rc;
	for (uint64_t i = 0; i < nt; i++) {
		struct scar_tensor *x = t->c.st->tensors[i];
		char *p = x->data;
		size_t left = scar_tensor_bytes(x);

		while (left) {
			int chunk = left > (1u << 30) ? 1 << 30 : (int)left;

			MPI_Bcast(p, chunk, MPI_BYTE, 0, MPI_COMM_WORLD);
			p += chunk;
			left -= (size_t)chunk;
		}
	}
	return 0;
}

/* ---- checkpoints ---- */

/*
 * Priorities for the shared row selection: computed by each row's owner and
 * gathered, so every rank ranks all rows.
 */
static int priorities(struct scar_train_ctx *c, size_t ti, double *pv)
{
	struct dt *t = dt_of(c);
	const struct scar_tensor *x = c->st->tensors[ti], *sv = c->saved->tensors[ti];
	uint64_t rows = scar_tensor_rows(x);

	for (uint64_t r = 0; r < rows; r++)
		pv[r] = owner(t, r) == c->R ? scar_row_priority(x, sv, r) : 0;
	return sync_table(t, pv, rows, 1);
}

/* The ranks' part of a checkpoint's writing (struct scar_store_comm). */
static int store_agree(void *arg, int rc)
{
	return agree(arg, rc);
}

static void store_gather(void *arg, const struct scar_store_part *mine, struct scar_store_part *all)
{
	MPI_Gather(mine, (int)sizeof(*mine), MPI_BYTE, all, (int)sizeof(*mine), MPI_BYTE, 0,
		   MPI_COMM_WORLD);
}

static void store_bcast(void *arg, uint64_t *v)
{
	MPI_Bcast(v, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
}

/*
 * Each rank writes its file of view (its rows) in parallel; once all have,
 * rank 0 writes the manifest (scar_store_write). *bytes is the total of the
 * rank files, the same on every rank.
 */
static int write_dist(struct dt *t, const struct scar_state *view, int partial, uint64_t *bytes)
{
	const struct scar_store_comm comm = { store_agree, store_gather, store_bcast, t };
	struct scar_store_write_opts wo = {
		.compress = t->c.o->ckpt_compress, .sync = t->c.o->ckpt_sync,
		.threads = t->c.o->ckpt_threads, .shuffle = t->c.o->ckpt_shuffle,
		.clock = t->c.clock, .partial = partial, .rank = t->c.R, .ranks = t->c.P,
		.comm = &comm,
	};

	return scar_store_write(&t->c.store, view, &wo, bytes, t->c.err);
}

/*
 * A checkpoint now: full (rank 0's file adds the state tensors; the whole
 * state becomes the base of full recovery) or partial (the selected rows).
 * Every rank writes a file of its own rows, where one process writes one
 * file of the whole state.
 */
static int checkpoint(struct scar_train_ctx *c, int full)
{
	struct dt *t = dt_of(c);
	struct scar_state *st = t->c.st, view;
	struct scar_tensor *vt = NULL, **vp = NULL;
	uint64_t rows_written = 0, bytes = 0, file_bytes = 0, ncp;
	double t1 = scar_train_now(), sel_secs = 0;
	size_t nv = 0;
	int rc = 0;

	ncp = st->iteration / scar_train_policy_period(t->c.o);
	vt = calloc(st->ntensors, sizeof(*vt));
	vp = calloc(st->ntensors, sizeof(*vp));
	if (!vt || !vp) {
		rc = scar_error_set(t->c.err, SCAR_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < st->ntensors; i++) {
		struct scar_tensor *x = st->tensors[i];
		uint64_t rows = scar_tensor_rows(x);
		size_t rb = scar_tensor_row_bytes(x);
		uint8_t *sel;

		if (!is_param(x)) {
			if (full && t->c.R == 0) {
				vt[nv] = *x;
				vt[nv].present = NULL;
				vp[nv] = &vt[nv];
				nv++;
			}
			continue;
		}
		vt[nv] = *x;
		sel = vt[nv].present = malloc(rows ? rows : 1);
		vp[nv] = &vt[nv];
		nv++;
		if (!sel) {
			rc = scar_error_set(t->c.err, SCAR_ENOMEM, "out of memory");
			goto out;
		}
		if (full) {
			memset(sel, 1, rows);
		} else {
			double ts = scar_train_now();

			if ((rc = scar_train_select_rows(c, i, sel, ncp)))
				goto out;
			sel_secs += scar_train_now() - ts;
		}
		for (uint64_t r = 0; r < rows; r++) {
			if (!sel[r])
				continue;
			if (!full)
				memcpy(scar_tensor_row(t->c.saved->tensors[i], r), scar_tensor_row(x, r), rb);
			rows_written++;
			bytes += rb;
			/* This rank's file holds only its own rows. */
			sel[r] = owner(t, r) == t->c.R;
		}
		if (full)
			memcpy(t->c.saved->tensors[i]->data, x->data, scar_tensor_bytes(x));
	}
	if ((rc = scar_train_set_clock(c, st)))
		goto out;
	if (full) {
		struct scar_state *s;

		if ((rc = scar_state_clone(&s, st, t->c.err)))
			goto out;
		scar_state_free(t->c.last_full);
		t->c.last_full = s;
	}
	if (t->c.o->ckpt_dir) {
		view = *st;
		view.ntensors = nv;
		view.tensors = vp;
		if ((rc = write_dist(t, &view, !full, &file_bytes)))
			goto out;
	}
	rc = scar_train_emit(c, scar_train_checkpoint_record(c, full, rows_written, bytes, file_bytes,
							     scar_train_now() - t1, sel_secs));
out:
	for (size_t i = 0; vt && i < nv; i++)
		if (is_param(&vt[i]))
			free(vt[i].present);
	free(vt);
	free(vp);
	return rc;
}

/* ---- survivor files (scar-mpi(7), Real failures) ---- */

/*
 * When a rank dies, mpirun sends the others SIGCONT, SIGTERM a timeout
 * later and SIGKILL as long again, and their collectives with the dead
 * rank never return. So the state of the last completed iteration is kept
 * in a double buffer the main thread fills between iterations, and a
 * thread that never calls MPI writes it when the signals come. The
 * handlers only write a byte to a pipe (async-signal-safe).
 */
struct surv {
	struct dt *t;
	struct scar_state *buf[2];
	atomic_int pub;		/* the buffer holding the last completed iteration; -1 none */
	atomic_int stop;	/* set by the survivor thread: no copy may start */
	pthread_t th;
	int running;
	struct sigaction old_cont, old_term;
};

static struct surv g_surv;
static int surv_pipe[2] = { -1, -1 };

static void surv_on_signal(int sig)
{
	int e = errno;
	char b = sig == SIGTERM ? 'T' : 'C';

	if (write(surv_pipe[1], &b, 1) < 0) {
		/* Nothing to do about it in a handler: the byte of an earlier signal is there. */
	}
	errno = e;
}

static void surv_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Milliseconds to wait for a SIGTERM after a SIGCONT: twice mpirun's timeout, and 2 s. */
static int surv_grace_ms(void)
{
	const char *v = getenv("OMPI_MCA_odls_base_sigkill_timeout");
	long s = v ? strtol(v, NULL, 10) : 1;

	if (s < 1)
		s = 1;
	if (s > 3600)
		s = 3600;
	return (int)(2 * s * 1000 + 2000);
}

/* Write buf[j] to a temporary beside the survivor file's name; fsynced. */
static int surv_write(struct surv *s, int j, char *final, size_t cap, char **tmp,
		      struct scar_error *err)
{
	const struct scar_state *b = s->buf[j];
	struct scar_ckpt_save_opts so;
	int fd, rc;

	if ((size_t)snprintf(final, cap, "%s/survivor-%010llu.rank-%u.ckpt", s->t->c.o->ckpt_dir,
			     (unsigned long long)b->iteration, s->t->c.R) >= cap)
		return scar_error_set(err, SCAR_EINVAL, "checkpoint directory name too long");
	if ((fd = scar_tmp_create(final, tmp, err)) < 0)
		return fd;
	scar_ckpt_save_opts_init(&so);
	so.compress = s->t->c.o->ckpt_compress;
	so.sync = 0;
	rc = scar_ckpt_write_fd(b, fd, final, &so, err);
	if (!rc && fsync(fd) < 0)
		rc = scar_error_set_errno(err, errno, final, "cannot fsync '%s'", *tmp);
	if (close(fd) < 0 && !rc)
		rc = scar_error_set_errno(err, errno, final, "cannot close '%s'", *tmp);
	if (rc) {
		scar_tmp_done(*tmp, 1);
		*tmp = NULL;
	}
	return rc;
}

static void surv_warn(const struct surv *s, const struct scar_error *e)
{
	fprintf(stderr, "scar-train: rank %u: survivor file: %s\n", s->t->c.R,
		e->msg[0] ? e->msg : scar_strerror(e->code));
}

static void *surv_main(void *arg)
{
	struct surv *s = arg;
	char final[PATH_MAX], *tmp = NULL;
	struct scar_error e;
	double t0 = 0, tw0 = 0, tw = 0;
	uint64_t wit = 0;
	int wrote = 0;

	for (;;) {
		struct pollfd pf = { surv_pipe[0], POLLIN, 0 };
		char b;
		int n = poll(&pf, 1, wrote ? surv_grace_ms() : -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0) {
			/* A SIGCONT with no SIGTERM after it (a stopped and continued job): go on. */
			if (tmp)
				scar_tmp_done(tmp, 1);
			tmp = NULL;
			wrote = 0;
			atomic_store(&s->stop, 0);
			continue;
		}
		if (n < 0 || read(surv_pipe[0], &b, 1) != 1)
			continue;
		if (b == 'Q')
			break;
		if (!wrote) {
			int j;

			t0 = scar_train_now();
			/* An iteration about to complete on this rank may complete (its peers' did). */
			surv_sleep_ms(50);
			tw0 = scar_train_now();
			atomic_store(&s->stop, 1);
			j = atomic_load(&s->pub);
			wrote = 1;
			scar_error_clear(&e);
			if (j >= 0) {
				wit = s->buf[j]->iteration;
				if (surv_write(s, j, final, sizeof(final), &tmp, &e))
					surv_warn(s, &e);
			}
			tw = scar_train_now();
		}
		if (b != 'T')
			continue;
		if (tmp) {
			scar_error_clear(&e);
			if (rename(tmp, final) < 0) {
				scar_error_set_errno(&e, errno, final, "cannot rename '%s' to '%s'", tmp,
						     final);
				surv_warn(s, &e);
				scar_tmp_done(tmp, 1);
			} else {
				scar_tmp_done(tmp, 0);
				if (scar_file_sync_dir(final, &e))
					surv_warn(s, &e);
				fprintf(stderr,
					"scar-train: rank %u: wrote '%s' (iteration %llu) in %.0f ms, %.0f ms after the first signal\n",
					s->t->c.R, final,
					(unsigned long long)wit,
					(tw - tw0) * 1e3, (scar_train_now() - t0) * 1e3);
			}
			tmp = NULL;
		}
		/* Exiting now would make mpirun kill the slower survivors at once. */
		for (;;)
			pause();
	}
	if (tmp)
		scar_tmp_done(tmp, 1);
	return NULL;
}

static void surv_free_bufs(struct surv *s)
{
	for (int j = 0; j < 2; j++) {
		scar_state_free(s->buf[j]);
		s->buf[j] = NULL;
	}
}

/*
 * Start keeping survivor state: the buffers (this rank's rows of each
 * param tensor present, the state tensors whole), the pipe, the handlers
 * and the thread. Failing to is a warning: the run goes on without.
 */
static void surv_start(struct dt *t)
{
	struct surv *s = &g_surv;
	struct scar_error e;
	struct sigaction sa;
	int rc = 0;

	memset(s, 0, sizeof(*s));
	s->t = t;
	atomic_store(&s->pub, -1);
	atomic_store(&s->stop, 0);
	scar_error_clear(&e);
	for (int j = 0; j < 2 && !rc; j++) {
		rc = scar_state_clone(&s->buf[j], t->c.st, &e);
		for (size_t i = 0; !rc && i < t->c.st->ntensors; i++) {
			struct scar_tensor *x = s->buf[j]->tensors[i];
			uint64_t rows = scar_tensor_rows(x);

			if (!is_param(x))
				continue;
			if (!(rc = scar_tensor_init_present(x, 0, &e)))
				for (uint64_t r = 0; r < rows; r++)
					x->present[r] = owner(t, r) == t->c.R;
		}
	}
	if (!rc && pipe(surv_pipe) < 0)
		rc = scar_error_set_errno(&e, errno, NULL, "cannot make a pipe");
	if (rc) {
		surv_warn(s, &e);
		surv_free_bufs(s);
		return;
	}
	fcntl(surv_pipe[1], F_SETFL, O_NONBLOCK);
	fcntl(surv_pipe[0], F_SETFD, FD_CLOEXEC);
	fcntl(surv_pipe[1], F_SETFD, FD_CLOEXEC);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = surv_on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGCONT, &sa, &s->old_cont);
	sigaction(SIGTERM, &sa, &s->old_term);
	if (pthread_create(&s->th, NULL, surv_main, s)) {
		sigaction(SIGCONT, &s->old_cont, NULL);
		sigaction(SIGTERM, &s->old_term, NULL);
		close(surv_pipe[0]);
		close(surv_pipe[1]);
		surv_pipe[0] = surv_pipe[1] = -1;
		surv_free_bufs(s);
		scar_error_set(&e, SCAR_ENOMEM, "cannot start the survivor thread");
		surv_warn(s, &e);
		return;
	}
	/* mpirun killed with SIGKILL signals nobody: its death is the SIGTERM. */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	s->running = 1;
}

/* Wait while the survivor thread has stopped the copies: SIGKILL, or a SIGCONT's end. */
static void surv_wait_stop(struct surv *s)
{
	while (atomic_load(&s->stop))
		surv_sleep_ms(10);
}

/* The publish hook (train_internal.h): the completed iteration into the other buffer. */
static int surv_publish(struct scar_train_ctx *c)
{
	struct surv *s = &g_surv;
	struct scar_state *st = c->st, *b;
	struct scar_error e;
	int j, rc;

	if (!s->running)
		return 0;
	surv_wait_stop(s);
	j = atomic_load(&s->pub) == 0 ? 1 : 0;
	b = s->buf[j];
	if (b->ntensors != st->ntensors)
		return 0;
	for (size_t i = 0; i < st->ntensors; i++) {
		const struct scar_tensor *x = st->tensors[i];
		struct scar_tensor *y = b->tensors[i];
		uint64_t rows = scar_tensor_rows(x);
		size_t rb = scar_tensor_row_bytes(x);

		if (scar_tensor_bytes(x) != scar_tensor_bytes(y))
			return 0;
		if (!is_param(x)) {
			memcpy(y->data, x->data, scar_tensor_bytes(x));
			continue;
		}
		for (uint64_t r = 0; r < rows; r++)
			if (y->present[r])
				memcpy(scar_tensor_row(y, r), scar_tensor_row(x, r), rb);
	}
	b->iteration = st->iteration;
	/*
	 * Out of memory here keeps the older iteration published (and says so):
	 * a survivor file is a bonus the run does not stop for, and a rank
	 * stopping alone would hang the others.
	 */
	scar_error_clear(&e);
	/*
	 * The worker state in the extra too, as a checkpoint of this iteration
	 * would hold it: a rewind record, auto's step norms (the same on every
	 * rank, as the state tensors are).
	 */
	{
		json_t *x = json_deep_copy(st->extra);

		if (!x) {
			scar_error_set(&e, SCAR_ENOMEM, "out of memory");
			surv_warn(s, &e);
			return 0;
		}
		json_decref(b->extra);
		b->extra = x;
	}
	if ((rc = scar_train_schedule_extra(b->extra, c->clock, c->o, &e))) {
		surv_warn(s, &e);
		return 0;
	}
	{
		json_t *sh = json_array(), *sv;

		for (uint32_t k = 0; sh && k < dt_of(c)->S; k++)
			if (k % c->P == c->R)
				json_array_append_new(sh, json_integer(k));
		sv = json_pack("{s:i, s:i, s:o, s:I, s:I, s:s}", "rank", (int)c->R, "ranks", (int)c->P,
			       "shards", sh, "iteration", (json_int_t)st->iteration,
			       "clock", (json_int_t)c->clock,
			       "recovery", scar_recovery_name(c->o->recovery));
		if (!sv) {
			scar_error_set(&e, SCAR_ENOMEM, "out of memory");
			surv_warn(s, &e);
			return 0;
		}
		json_object_set_new(b->extra, "survivor", sv);
	}
	atomic_store(&s->pub, j);
	return 0;
}

/* The run is over: no survivor file now (unless one is being written: then wait for the kill). */
static void surv_stop(void)
{
	struct surv *s = &g_surv;
	char q = 'Q';

	if (!s->running)
		return;
	surv_wait_stop(s);
	prctl(PR_SET_PDEATHSIG, 0);
	sigaction(SIGCONT, &s->old_cont, NULL);
	sigaction(SIGTERM, &s->old_term, NULL);
	if (write(surv_pipe[1], &q, 1) == 1)
		pthread_join(s->th, NULL);
	close(surv_pipe[0]);
	close(surv_pipe[1]);
	surv_pipe[0] = surv_pipe[1] = -1;
	surv_free_bufs(s);
	s->running = 0;
}

/* ---- the hooks of the shared trainer ---- */

/* After the owners restored their lost rows (train_loop.c): every worker's copy from the owners. */
static int sync_recovered(struct scar_train_ctx *c)
{
	struct dt *t = dt_of(c);
	int rc = sync_params(t, c->st);

	model_changed(t);
	return rc;
}

static int agree_hook(struct scar_train_ctx *c, int rc)
{
	return agree(dt_of(c), rc);
}

static const struct scar_train_ops mpi_ranks = {
	.step = wl_step,
	.objective = wl_objective,
	.checkpoint = checkpoint,
	.priorities = priorities,
	.sync = sync_recovered,
	.agree = agree_hook,
	.publish = surv_publish,
};

static void dt_free(struct dt *t)
{
	if (t->dist && t->part)
		t->dist->free(t->part);
}

static int validate(const struct scar_train_opts *o, const struct scar_model_def *def,
		    struct scar_error *err)
{
	if (def && !def->dist)
		return scar_error_set(err, SCAR_EUNSUPPORTED, "model '%s' does not run distributed yet",
				      def->name);
	return scar_train_check_opts(o, def, err);
}

static int core(const struct scar_train_opts *o, struct scar_train_result *res,
		struct scar_error *err, double **objs, size_t *nobjs);

int scar_dist_train_run(const struct scar_train_opts *o, struct scar_train_result *res,
			struct scar_error *err)
{
	struct scar_error e;
	int rc = 0, lock = -1;

	if (!g_inited) {
		memset(res, 0, sizeof(*res));
		return scar_error_set(err, SCAR_EUNSUPPORTED, "MPI is not running");
	}
	/* The manifest is an agreement of every rank: not made from a writer thread yet. */
	if (o->ckpt_in_flight && o->ckpt_dir) {
		memset(res, 0, sizeof(*res));
		return scar_error_set(err, SCAR_EUNSUPPORTED,
				      "--async is not supported under MPI yet (scar-mpi(7))");
	}
	/* One writer per directory: rank 0 locks it for the run, every rank hears the outcome. */
	if (o->ckpt_dir) {
		scar_error_clear(&e);
		if (g_rank == 0)
			rc = scar_dist_dir_lock(o->ckpt_dir, &lock, &e);
		MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
		if (rc) {
			MPI_Bcast(&e, (int)sizeof(e), MPI_BYTE, 0, MPI_COMM_WORLD);
			if (err)
				*err = e;
			memset(res, 0, sizeof(*res));
			return rc;
		}
	}
	rc = core(o, res, err, NULL, NULL);
	if (o->ckpt_dir)
		scar_dist_dir_unlock(o->ckpt_dir, lock);
	return rc;
}

static int core(const struct scar_train_opts *o, struct scar_train_result *res,
		struct scar_error *err, double **objs, size_t *nobjs)
{
	struct dt t;
	struct scar_train_cost ci = { 0 };
	json_t *config = NULL;
	double *ref = NULL;
	size_t nref = 0;
	int rc = 0, done = 0;

	memset(&t, 0, sizeof(t));
	scar_train_ctx_init(&t.c, o, &mpi_ranks, res, err);
	t.c.dist = 1;
	t.c.P = (uint32_t)g_size;
	t.c.R = (uint32_t)g_rank;
	t.tp.ops = &mpi_ops;
	t.tp.P = t.c.P;
	t.tp.R = t.c.R;
	/* Errors so far are the same on every rank. */
	if ((rc = validate(o, t.c.def, err)) ||
	    (rc = scar_train_reference(o, core, &ref, &nref, err)))
		return rc;
	if ((rc = scar_train_config(o, t.c.def, &config, err)))
		goto out;
	t.S = o->resume ? o->resume->shards : o->shards;
	/*
	 * Rank 0 keeps the model itself for what is not distributed (c, x*,
	 * the held-out metric); the other ranks too when the model's
	 * distributed step says so (scar_model_dist.every_rank).
	 */
	t.dist = t.c.def->dist;
	if (t.c.R == 0 || t.dist->every_rank)
		rc = t.c.def->create(&t.c.m, config, err);
	if ((rc = agree(&t, rc)) ||
	    (rc = agree(&t, t.dist->setup(t.c.m, config, &t.tp, t.S, &t.part, err))))
		goto out;
	if (o->resume) {
		rc = scar_state_clone(&t.c.st, o->resume, err);
		if (!rc) {
			/* The validated configuration (scar_train_config) is what the state carries on. */
			json_decref(t.c.st->config);
			t.c.st->config = json_incref(config);
		}
		if (!rc && t.c.R == 0) {
			struct scar_state *fresh = NULL;

			rc = scar_train_new_state(&t.c, config, &fresh);
			if (!rc)
				rc = scar_train_check_layout(&t.c, fresh);
			scar_state_free(fresh);
		}
		if ((rc = agree(&t, rc)))
			goto out;
		t.c.clock = scar_train_resume_clock(t.c.st);
	} else {
		if (t.c.R == 0) {
			rc = scar_train_new_state(&t.c, config, &t.c.st);
		} else if (!(rc = scar_state_new(&t.c.st, t.c.def->name, err))) {
			json_decref(t.c.st->config);
			t.c.st->config = json_incref(config);
			t.c.st->shards = o->shards;
		}
		if ((rc = agree(&t, rc)) || (rc = agree(&t, bcast_state(&t))))
			goto out;
	}
	if (t.dist->bind && (rc = agree(&t, t.dist->bind(t.part, t.c.st, err))))
		goto out;
	if (ref && (rc = scar_train_cost_target(&t.c, ref, nref, &ci)))
		goto out;
	if ((rc = scar_train_begin(&t.c, config)))
		goto out;
	/* A reference run (objs) is no run of the user's: it leaves no survivor files. */
	if (o->ckpt_dir && t.c.P > 1 && !objs)
		surv_start(&t);
	t.tp.sent = 0;	/* what training sends, not the start */
	if ((rc = scar_train_loop(&t.c, &ci, &done)))
		goto out;
	MPI_Allreduce(&t.tp.sent, &t.c.comm_total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
	rc = scar_train_finish(&t.c, &ci, done);
out:
	surv_stop();
	scar_train_ctx_release(&t.c, rc, objs, nobjs);
	free(ref);
	dt_free(&t);
	json_decref(config);
	return rc;
}

#else /* !SCAR_MPI */

/*
 * Without MPI (no mpicc at build time) the entry points exist all the
 * same, so a command needs no #ifdef: a process is never distributed.
 * scar_dist_init starts nothing even under a launcher (each copy runs as
 * one process, as a plain build always did); scar_dist_train_run refuses.
 */
#include <string.h>

#include "scar/dist.h"

int scar_dist_init(int launched, int *argc, char ***argv, struct scar_error *err)
{
	return 0;
}

void scar_dist_finalize(void)
{
}

int scar_dist_bcast_int(int v)
{
	return v;
}

int scar_dist_max_int(int v)
{
	return v;
}

int scar_dist_active(void)
{
	return 0;
}

int scar_dist_rank(void)
{
	return 0;
}

int scar_dist_size(void)
{
	return 1;
}

int scar_dist_train_run(const struct scar_train_opts *o, struct scar_train_result *res,
			struct scar_error *err)
{
	memset(res, 0, sizeof(*res));
	return scar_error_set(err, SCAR_EUNSUPPORTED,
			      "scar-train was built without MPI (no mpicc at build time; scar-mpi(7))");
}
#endif /* SCAR_MPI */
