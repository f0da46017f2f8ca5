/*
 * transport.h - what the distributed steps of the models (lib/model_*.c,
 * struct scar_model_dist in scar/model.h) need from the ranks: moving
 * bytes, never reducing floating point. Not part of the public API.
 *
 * Two implementations: over MPI (lib/dist_mpi.c, SCAR_MPI builds) and the
 * one-process transport (scar_transport_local, P = 1, R = 0: copies),
 * compiled in every build, which lets the unit tests run every model's
 * distributed step without mpicc.
 *
 * Counts and displacements are in elements of es bytes (es = 1, 4 or 8),
 * as MPI takes them (int). Every collective is called by every rank in the
 * same order. The scar_tp_* wrappers add what this rank sends to other
 * ranks to t->sent (the summary's comm_bytes), the same in both
 * implementations.
 */
#ifndef SCAR_TRANSPORT_H
#define SCAR_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "scar/error.h"
#include "scar/tensor.h"

struct scar_transport;

struct scar_transport_ops {
	/* recv + displ[q] gets rank q's cnt[q] elements; send NULL: this rank's are in place. */
	void (*allgatherv)(struct scar_transport *t, const void *send, void *recv, const int *cnt,
			   const int *displ, size_t es);
	/* Block q of send (scnt[q] at sdispl[q]) goes to rank q, rank q's arrives at rdispl[q]. */
	void (*alltoallv)(struct scar_transport *t, const void *send, const int *scnt,
			  const int *sdispl, void *recv, const int *rcnt, const int *rdispl, size_t es);
	/* scnt elements to rank to, rcnt from rank from (the DSGD ring). */
	void (*sendrecv)(struct scar_transport *t, const void *send, int scnt, uint32_t to,
			 void *recv, int rcnt, uint32_t from, size_t es);
	/* Rank root's bytes to every rank. */
	void (*bcast)(struct scar_transport *t, void *buf, size_t bytes, uint32_t root);
	/*
	 * Every rank learns whether any rank failed (rc != 0); the lowest
	 * failing rank's error is copied into every rank's err, so all return
	 * the same code and message. 0 when none failed.
	 */
	int (*agree)(struct scar_transport *t, int rc, struct scar_error *err);
};

struct scar_transport {
	const struct scar_transport_ops *ops;
	uint32_t P, R;		/* ranks, this rank */
	uint64_t sent;		/* bytes this rank sent to other ranks */
};

/* The one-process transport: P = 1, R = 0, collectives copy. */
void scar_transport_local(struct scar_transport *t);

void scar_tp_allgatherv(struct scar_transport *t, const void *send, void *recv, const int *cnt,
			const int *displ, size_t es);
void scar_tp_alltoallv(struct scar_transport *t, const void *send, const int *scnt,
		       const int *sdispl, void *recv, const int *rcnt, const int *rdispl, size_t es);
void scar_tp_sendrecv(struct scar_transport *t, const void *send, int scnt, uint32_t to,
		      void *recv, int rcnt, uint32_t from, size_t es);
void scar_tp_bcast(struct scar_transport *t, void *buf, size_t bytes, uint32_t root);
int scar_tp_agree(struct scar_transport *t, int rc, struct scar_error *err);

/*
 * Every rank's v, added in rank order (scar_dist_sum_ordered): the same
 * double on every rank, whatever MPI's algorithms. SCAR_ENOMEM only.
 */
int scar_tp_sum_ordered(struct scar_transport *t, double v, double *out, struct scar_error *err);

/*
 * Bring every rank's copy of the param tensors among tensors[0, n) up to
 * date with the rows their owners hold (row r's owner: scar_dist_row_owner
 * with S shards): each rank contributes its rows, all receive all. Other
 * tensors are left alone. SCAR_ENOMEM, or SCAR_EUNSUPPORTED when a tensor
 * is too large for one message.
 */
int scar_tp_sync_rows(struct scar_transport *t, uint32_t S, struct scar_tensor *const *tensors,
		      size_t n, struct scar_error *err);

/*
 * The same for a rows x cols table of doubles whose row r is filled in by
 * its owner (as for a param tensor of that many rows).
 */
int scar_tp_sync_table(struct scar_transport *t, uint32_t S, double *v, uint64_t rows,
		       uint64_t cols, struct scar_error *err);

/*
 * The rows [0, rows) grouped by owner, ascending within (order, rows
 * entries), with each owner's count and first index (cnt, displ: P
 * entries each). SCAR_ENOMEM or SCAR_EUNSUPPORTED (more than int rows).
 */
int scar_tp_owned_rows(const struct scar_transport *t, uint32_t S, uint64_t rows, int *cnt,
		       int *displ, uint64_t *order, struct scar_error *err);

#endif
