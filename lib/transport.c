/*
 * transport.c - the transport's wrappers (they count the bytes sent), the
 * operations built on them, and the one-process transport (transport.h).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "scar/dist.h"
#include "transport.h"

/* ---- one process: P = 1, R = 0 ---- */

static void local_allgatherv(struct scar_transport *t, const void *send, void *recv,
			     const int *cnt, const int *displ, size_t es)
{
	if (send)
		memmove((char *)recv + (size_t)displ[0] * es, send, (size_t)cnt[0] * es);
}

static void local_alltoallv(struct scar_transport *t, const void *send, const int *scnt,
			    const int *sdispl, void *recv, const int *rcnt, const int *rdispl,
			    size_t es)
{
	memmove((char *)recv + (size_t)rdispl[0] * es, (const char *)send + (size_t)sdispl[0] * es,
		(size_t)scnt[0] * es);
}

static void local_sendrecv(struct scar_transport *t, const void *send, int scnt, uint32_t to,
			   void *recv, int rcnt, uint32_t from, size_t es)
{
	memmove(recv, send, (size_t)scnt * es);
}

static void local_bcast(struct scar_transport *t, void *buf, size_t bytes, uint32_t root)
{
}

static int local_agree(struct scar_transport *t, int rc, struct scar_error *err)
{
	if (!rc)
		return 0;
	return err && err->code ? err->code : rc > 0 ? rc : SCAR_EIO;
}

static const struct scar_transport_ops local_ops = {
	.allgatherv = local_allgatherv,
	.alltoallv = local_alltoallv,
	.sendrecv = local_sendrecv,
	.bcast = local_bcast,
	.agree = local_agree,
};

void scar_transport_local(struct scar_transport *t)
{
	memset(t, 0, sizeof(*t));
	t->ops = &local_ops;
	t->P = 1;
}

/* ---- the wrappers: what this rank sends to others ---- */

void scar_tp_allgatherv(struct scar_transport *t, const void *send, void *recv, const int *cnt,
			const int *displ, size_t es)
{
	t->sent += (uint64_t)cnt[t->R] * es * (t->P - 1);
	t->ops->allgatherv(t, send, recv, cnt, displ, es);
}

void scar_tp_alltoallv(struct scar_transport *t, const void *send, const int *scnt,
		       const int *sdispl, void *recv, const int *rcnt, const int *rdispl, size_t es)
{
	for (uint32_t q = 0; q < t->P; q++)
		if (q != t->R)
			t->sent += (uint64_t)scnt[q] * es;
	t->ops->alltoallv(t, send, scnt, sdispl, recv, rcnt, rdispl, es);
}

void scar_tp_sendrecv(struct scar_transport *t, const void *send, int scnt, uint32_t to,
		      void *recv, int rcnt, uint32_t from, size_t es)
{
	if (to != t->R)
		t->sent += (uint64_t)scnt * es;
	t->ops->sendrecv(t, send, scnt, to, recv, rcnt, from, es);
}

void scar_tp_bcast(struct scar_transport *t, void *buf, size_t bytes, uint32_t root)
{
	if (t->R == root)
		t->sent += (uint64_t)bytes * (t->P - 1);
	t->ops->bcast(t, buf, bytes, root);
}

int scar_tp_agree(struct scar_transport *t, int rc, struct scar_error *err)
{
	return t->ops->agree(t, rc, err);
}

/* ---- built on them ---- */

int scar_tp_sum_ordered(struct scar_transport *t, double v, double *out, struct scar_error *err)
{
	double *all = malloc(t->P * sizeof(*all));
	int *cnt = malloc(2 * (size_t)t->P * sizeof(*cnt));

	if (!all || !cnt) {
		free(all);
		free(cnt);
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	}
	for (uint32_t q = 0; q < t->P; q++) {
		cnt[q] = 1;
		cnt[t->P + q] = (int)q;
	}
	all[t->R] = v;
	scar_tp_allgatherv(t, NULL, all, cnt, cnt + t->P, sizeof(double));
	*out = scar_dist_sum_ordered(all, t->P);
	free(all);
	free(cnt);
	return 0;
}

int scar_tp_sync_rows(struct scar_transport *t, uint32_t S, struct scar_tensor *const *tensors,
		      size_t n, struct scar_error *err)
{
	for (size_t ti = 0; ti < n; ti++) {
		struct scar_tensor *x = tensors[ti];
		uint64_t rows = scar_tensor_rows(x), *pos = NULL;
		size_t rb = scar_tensor_row_bytes(x);
		int *cnt = NULL, *displ = NULL, rc = 0;
		char *send = NULL, *recv = NULL;
		uint64_t own = 0, total = 0;

		if (x->role != SCAR_ROLE_PARAM || t->P == 1)
			continue;
		cnt = calloc(t->P, sizeof(*cnt));
		displ = calloc(t->P, sizeof(*displ));
		pos = calloc(t->P, sizeof(*pos));
		if (!cnt || !displ || !pos)
			rc = -1;
		for (uint64_t r = 0; !rc && r < rows; r++)
			cnt[scar_dist_row_owner(r, S, t->P)]++;
		for (uint32_t q = 0; !rc && q < t->P; q++) {
			if ((uint64_t)cnt[q] * rb > INT_MAX || total * rb > INT_MAX)
				rc = -2;
			displ[q] = (int)(total * rb);
			pos[q] = total;
			total += (uint64_t)cnt[q];
			cnt[q] = (int)((uint64_t)cnt[q] * rb);
		}
		if (!rc) {
			own = (uint64_t)cnt[t->R] / (rb ? rb : 1);
			send = malloc(own * rb + 1);
			recv = malloc(rows * rb + 1);
			if (!send || !recv)
				rc = -1;
		}
		if (!rc) {
			uint64_t k = 0;

			for (uint64_t r = 0; r < rows; r++)
				if (scar_dist_row_owner(r, S, t->P) == t->R)
					memcpy(send + (k++) * rb, scar_tensor_row(x, r), rb);
			scar_tp_allgatherv(t, send, recv, cnt, displ, 1);
			for (uint64_t r = 0; r < rows; r++) {
				uint32_t q = scar_dist_row_owner(r, S, t->P);

				memcpy(scar_tensor_row(x, r), recv + (pos[q]++) * rb, rb);
			}
		}
		free(cnt);
		free(displ);
		free(pos);
		free(send);
		free(recv);
		if (rc == -1)
			return scar_error_set(err, SCAR_ENOMEM, "out of memory");
		if (rc == -2)
			return scar_error_set(err, SCAR_EUNSUPPORTED,
					      "tensor '%s' is too large for one MPI message", x->name);
	}
	return 0;
}

int scar_tp_sync_table(struct scar_transport *t, uint32_t S, double *v, uint64_t rows,
		       uint64_t cols, struct scar_error *err)
{
	struct scar_tensor pt, *ptp = &pt;

	static char name[] = "values";

	memset(&pt, 0, sizeof(pt));
	pt.name = name;
	pt.dtype = SCAR_F64;
	pt.role = SCAR_ROLE_PARAM;
	pt.ndim = cols > 1 ? 2 : 1;
	pt.shape[0] = rows;
	pt.shape[1] = cols;
	pt.data = v;
	return scar_tp_sync_rows(t, S, &ptp, 1, err);
}

int scar_tp_owned_rows(const struct scar_transport *t, uint32_t S, uint64_t rows, int *cnt,
		       int *displ, uint64_t *order, struct scar_error *err)
{
	uint64_t *pos = calloc(t->P, sizeof(*pos));

	if (!pos)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	memset(cnt, 0, t->P * sizeof(*cnt));
	memset(displ, 0, t->P * sizeof(*displ));
	for (uint64_t r = 0; r < rows; r++)
		cnt[scar_dist_row_owner(r, S, t->P)]++;
	for (uint32_t q = 1; q < t->P; q++)
		displ[q] = displ[q - 1] + cnt[q - 1];
	for (uint32_t q = 0; q < t->P; q++)
		pos[q] = (uint64_t)displ[q];
	for (uint64_t r = 0; r < rows; r++)
		order[pos[scar_dist_row_owner(r, S, t->P)]++] = r;
	free(pos);
	return 0;
}
