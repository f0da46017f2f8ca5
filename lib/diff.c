/*
 * diff.c - norms of A - B over snapshots, streamed (see scar/diff.h).
 *
 * One side ("P") is walked in file order a chunk at a time (a checkpoint
 * section, or a run of array rows); for every row of the chunk the same row
 * of the other side ("Q") is fetched by random access: the matching
 * checkpoint section, an array window, or a state in memory. Norms are
 * always computed as A - B whichever side is P.
 */
#define _GNU_SOURCE	/* tee(2), to peek at a pipe without consuming it */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "scar/arrayfile.h"
#include "scar/ckpt.h"
#include "scar/diff.h"
#include "scar/events.h"
#include "scar/shard.h"
#include "ckpt_internal.h"
#include "nameidx.h"
#include "numeric_internal.h"

#define CHUNK ((size_t)256 << 10)	/* array bytes read at a time, per side */
#define RANGES_JSON_MAX 64	/* missing-row ranges listed per tensor and side */

void scar_diff_opts_init(struct scar_diff_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->top_k = 10;
}

/* ---- the two sides ---- */

enum side_kind { SIDE_CKPT = 1, SIDE_ARRAY, SIDE_STATE };

struct tinfo {
	const char *name;
	enum scar_dtype dtype;
	enum scar_role role;
	int ndim;
	const uint64_t *shape;
	uint64_t rows, rows_present;
	size_t nranges;
	const uint64_t (*ranges)[2];	/* NULL = all rows */
	uint64_t (*own_ranges)[2];
};

struct side {
	enum side_kind kind;
	const char *path;
	int fd, own_fd;		/* the one descriptor path was opened as */
	struct scar_ckpt_reader *rd;
	int seekable;
	/* a seekable checkpoint's index, and which of its sections were decoded */
	const struct scar_ckpt_section_info *idx;
	size_t nidx;
	unsigned char *decoded;
	struct scar_arrayfile *af;
	const struct scar_state *st;
	struct scar_state *own_st;
	size_t nt;
	struct tinfo *t;
	uint32_t shards;
	/* array window (Q side) */
	unsigned char *wbuf;
	size_t wcap;
	long wfile;
	uint64_t w0, wn;
};

static void side_release(struct side *s)
{
	for (size_t i = 0; s->t && i < s->nt; i++)
		free(s->t[i].own_ranges);
	free(s->t);
	s->t = NULL;
	scar_ckpt_reader_close(s->rd);
	s->rd = NULL;
	free(s->decoded);
	s->decoded = NULL;
	scar_arrayfile_close(s->af);
	s->af = NULL;
	if (s->own_fd)
		close(s->fd);
	s->own_fd = 0;
	scar_state_free(s->own_st);
	s->own_st = NULL;
	free(s->wbuf);
	s->wbuf = NULL;
}

/* Present rows of a state tensor as ranges (NULL when all are present). */
static int state_ranges(const struct scar_tensor *t, struct tinfo *ti, struct scar_error *err)
{
	uint64_t rows = scar_tensor_rows(t), n = 0, cap = 16;

	ti->rows_present = scar_tensor_rows_present(t);
	if (!t->present || ti->rows_present == rows)
		return 0;
	ti->own_ranges = malloc(cap * sizeof(*ti->own_ranges));
	if (!ti->own_ranges)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	for (uint64_t r = 0; r < rows;) {
		uint64_t s;

		while (r < rows && !t->present[r])
			r++;
		if (r == rows)
			break;
		s = r;
		while (r < rows && t->present[r])
			r++;
		if (n == cap) {
			void *nr = realloc(ti->own_ranges, 2 * cap * sizeof(*ti->own_ranges));

			if (!nr)
				return scar_error_set(err, SCAR_ENOMEM, "out of memory");
			ti->own_ranges = nr;
			cap *= 2;
		}
		ti->own_ranges[n][0] = s;
		ti->own_ranges[n][1] = r - s;
		n++;
	}
	ti->ranges = (const uint64_t (*)[2])ti->own_ranges;
	ti->nranges = n;
	return 0;
}

static int side_from_state(struct side *s, const struct scar_state *st, struct scar_error *err)
{
	s->st = st;
	s->shards = st->shards ? st->shards : 1;
	s->nt = st->ntensors;
	s->t = calloc(st->ntensors ? st->ntensors : 1, sizeof(*s->t));
	if (!s->t)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	for (size_t i = 0; i < st->ntensors; i++) {
		const struct scar_tensor *t = st->tensors[i];
		struct tinfo *ti = &s->t[i];
		int rc;

		ti->name = t->name;
		ti->dtype = t->dtype;
		ti->role = t->role;
		ti->ndim = t->ndim;
		ti->shape = t->shape;
		ti->rows = scar_tensor_rows(t);
		rc = state_ranges(t, ti, err);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int side_from_ckpt(struct side *s, struct scar_error *err)
{
	const struct scar_ckpt_info *in = scar_ckpt_reader_info(s->rd);

	s->shards = in->shards ? in->shards : 1;
	s->nt = in->ntensors;
	s->t = calloc(in->ntensors ? in->ntensors : 1, sizeof(*s->t));
	if (!s->t)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	for (size_t i = 0; i < in->ntensors; i++) {
		const struct scar_ckpt_tensor_info *c = &in->tensors[i];
		struct tinfo *ti = &s->t[i];

		ti->name = c->name;
		ti->dtype = c->dtype;
		ti->role = c->role;
		ti->ndim = c->ndim;
		ti->shape = c->shape;
		ti->rows = c->rows;
		ti->rows_present = c->rows_present;
		if (c->rows_present != c->rows) {
			ti->ranges = c->ranges;
			ti->nranges = c->nranges;
		}
	}
	return 0;
}

static int side_from_array(struct side *s, struct scar_error *err)
{
	size_t n = scar_arrayfile_count(s->af);

	s->shards = 1;
	s->nt = n;
	s->wfile = -1;
	s->t = calloc(n ? n : 1, sizeof(*s->t));
	if (!s->t)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const struct scar_array_info *a = scar_arrayfile_tensor(s->af, i);
		struct tinfo *ti = &s->t[i];
		uint64_t rows = a->ndim ? a->shape[0] : 1;

		ti->name = a->name;
		ti->dtype = a->dtype;
		ti->role = a->role;
		ti->ndim = a->ndim;
		ti->shape = a->shape;
		ti->rows = rows;
		ti->rows_present = rows;
	}
	return 0;
}

/*
 * Read a checkpoint's sections into a new state (for the Q side when it
 * cannot be read by random access).
 */
static int load_whole(struct side *s, struct scar_error *err)
{
	const struct scar_ckpt_info *in = scar_ckpt_reader_info(s->rd);
	struct scar_state *st = NULL;
	struct scar_ckpt_section sec;
	int rc;

	if ((rc = scar_ckpt_reader_check_memory(s->rd, err)) < 0)
		return rc;
	rc = scar_state_new(&st, in->model, err);
	if (rc < 0)
		return rc;
	st->iteration = in->iteration;
	st->shards = in->shards;
	for (size_t i = 0; rc == 0 && i < in->ntensors; i++) {
		const struct scar_ckpt_tensor_info *c = &in->tensors[i];
		struct scar_tensor *t;

		rc = scar_tensor_new(&t, c->name, c->dtype, c->role, c->ndim, c->shape, err);
		if (rc == 0 && c->rows_present != c->rows)
			rc = scar_tensor_init_present(t, 0, err);
		if (rc == 0)
			rc = scar_state_add(st, t, err);
	}
	while (rc == 0 && (rc = scar_ckpt_reader_next(s->rd, &sec, err)) == 1) {
		struct scar_tensor *t = st->tensors[sec.info.tensor];
		size_t rb = scar_tensor_row_bytes(t);

		rc = 0;
		for (uint64_t i = 0; i < sec.info.nrows; i++) {
			memcpy(scar_tensor_row(t, sec.rows[i]), (const char *)sec.data + i * rb, rb);
			if (t->present)
				t->present[sec.rows[i]] = 1;
		}
	}
	if (rc < 0) {
		scar_state_free(st);
		return rc;
	}
	for (size_t i = 0; s->t && i < s->nt; i++)
		free(s->t[i].own_ranges);
	free(s->t);
	s->t = NULL;
	s->own_st = st;
	s->kind = SIDE_STATE;
	rc = side_from_state(s, st, err);
	/* the reader's tensor table is no longer needed; its names were copied */
	return rc;
}

/*
 * Look at the first bytes of fd without consuming them: pread on a
 * regular file, tee(2) on a pipe. Returns bytes seen (0 = unknown), or a
 * negative error.
 */
static int peek(int fd, const char *path, unsigned char *buf, size_t cap, struct scar_error *err)
{
	struct stat st;
	ssize_t n = 0;

	if (fstat(fd, &st) < 0) {
		n = scar_error_set_errno(err, errno, path, "cannot stat '%s'", path);
	} else if (S_ISDIR(st.st_mode)) {
		n = scar_error_set(err, SCAR_EINVAL, "'%s' is a directory", path);
	} else if (S_ISREG(st.st_mode)) {
		do	/* a signal is no read error */
			n = pread(fd, buf, cap, 0);
		while (n < 0 && errno == EINTR);
		if (n < 0)
			n = scar_error_set_errno(err, errno, path, "cannot read '%s'", path);
	} else if (S_ISFIFO(st.st_mode)) {
		int p[2];

		if (pipe(p) == 0) {
			struct timespec ts = { 0, 2000000 };

			for (int tries = 0; tries < 1000; tries++) {
				ssize_t t = tee(fd, p[1], cap, 0);
				struct pollfd pf = { fd, POLLIN, 0 };

				/* drain what tee copied, or p fills up (it has few buffer slots) */
				n = t > 0 ? read(p[0], buf, (size_t)t) : 0;
				if (t <= 0 || t >= 9)
					break;
				/*
				 * Fewer bytes than a head: wait for more, unless the
				 * writer has gone (then that is all there is).
				 */
				if (poll(&pf, 1, 0) == 1 && (pf.revents & POLLHUP))
					break;
				nanosleep(&ts, NULL);
			}
			close(p[0]);
			close(p[1]);
			if (n < 0)
				n = 0;
		}
	}
	return (int)n;
}

static int side_open(struct side *s, const char *path, struct scar_error *err)
{
	unsigned char head[16];
	int n, rc, is_stdin = strcmp(path, "-") == 0;

	memset(s, 0, sizeof(*s));
	s->path = path;
	if (!is_stdin && scar_array_is_sharded(path)) {
		/* a directory of safetensors files and their index: the reader opens them all */
		s->kind = SIDE_ARRAY;
		s->fd = -1;
		if ((rc = scar_arrayfile_open(&s->af, path, err)) < 0)
			return rc;
		return side_from_array(s, err);
	}
	/*
	 * Open once and hand the same descriptor to the reader: a FIFO opened
	 * a second time is a new stream, empty or waiting for a writer that
	 * has already gone.
	 */
	if (is_stdin) {
		s->fd = STDIN_FILENO;
	} else if ((s->fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		return scar_error_set_errno(err, errno, path, "cannot open '%s'", path);
	} else {
		s->own_fd = 1;
	}
	n = peek(s->fd, path, head, sizeof(head), err);
	if (n < 0)
		return n;
	if (n >= 8 && memcmp(head, SCAR_CKPT_MAGIC, 8) == 0) {
		s->kind = SIDE_CKPT;
	} else if (n > 0 && scar_array_sniff(head, (size_t)n)) {
		s->kind = SIDE_ARRAY;
	} else if (n == 0) {
		/* unknown (a socket, say, or empty): let the checkpoint reader say */
		s->kind = SIDE_CKPT;
	} else {
		return scar_error_set_at(err, SCAR_EFORMAT, path, 0, -1,
					 "'%s' is not a checkpoint, .npy or safetensors file", path);
	}
	if (s->kind == SIDE_CKPT) {
		const struct scar_ckpt_section_info *idx;

		rc = scar_ckpt_reader_open_fd(&s->rd, s->fd, is_stdin ? "(stdin)" : path, err);
		if (rc < 0)
			return rc;
		rc = scar_ckpt_reader_index(s->rd, &idx, err);
		if (rc >= 0) {
			s->seekable = 1;
			s->idx = idx;
			s->nidx = (size_t)rc;
			if (!(s->decoded = calloc(s->nidx + 1, 1)))
				return scar_error_set(err, SCAR_ENOMEM, "out of memory");
		} else if (rc != SCAR_EUNSUPPORTED) {
			return rc;
		}
		scar_error_clear(err);
		return side_from_ckpt(s, err);
	}
	rc = scar_arrayfile_open_fd(&s->af, s->fd, is_stdin ? "-" : path, NULL, 0, err);
	if (rc < 0)
		return rc;
	return side_from_array(s, err);
}

static const char *kind_name(const struct side *s, int was_ckpt)
{
	if (was_ckpt)
		return "ckpt";
	if (s->kind == SIDE_ARRAY)
		return scar_arrayfile_format(s->af) == SCAR_ARRAY_NPY ? "npy" : "safetensors";
	return s->kind == SIDE_CKPT ? "ckpt" : "state";
}

/* Note that the section (tensor, shard) of a seekable checkpoint was decoded, checksums and all. */
static void mark_decoded(struct side *s, uint32_t tensor, uint32_t shard)
{
	size_t lo = 0, hi = s->nidx;

	if (!s->decoded)
		return;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->idx[mid].tensor < tensor ||
		    (s->idx[mid].tensor == tensor && s->idx[mid].shard < shard))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < s->nidx && s->idx[lo].tensor == tensor && s->idx[lo].shard == shard)
		s->decoded[lo] = 1;
}

/*
 * Damage anywhere is exit 2 in scar-diff(1), also in the sections it had no
 * use for (state tensors, tensors the other side lacks): check theirs too,
 * without keeping them. A streamed checkpoint was read whole already.
 */
static int check_rest(struct side *s, struct scar_error *err)
{
	if (s->kind != SIDE_CKPT || !s->decoded)
		return 0;
	for (size_t i = 0; i < s->nidx; i++) {
		int rc;

		if (s->decoded[i])
			continue;
		if ((rc = scar_ckpt_reader_check_section(s->rd, i, err)) < 0)
			return rc;
		s->decoded[i] = 1;
	}
	return 0;
}

/* ---- the comparison ---- */

struct match {
	size_t ta, tb;		/* indices in side A's and side B's tables */
};

struct engine {
	const struct scar_diff_opts *o;
	struct scar_diff_result *r;
	struct side *P, *Q;	/* P walked in order; Q fetched */
	int swapped;		/* P is B */
	long *p2r, *q2r;	/* side tensor index -> result tensor index, -1 */
	size_t *r2q, *r2p;
	struct scar_diff_acc *tacc, *sacc, total, cur;
	struct scar_part pend;
	scar_kernel_fn k;
	size_t heap_n;
	unsigned char *pbuf;	/* P array chunk */
	size_t pcap;
	unsigned char *wide[2];	/* a P and a Q row of f16 or bf16 widened to f32 */
	size_t wcap[2];
};

/*
 * Tensors of these two dtypes pair up (compared as f32, to which f16 and
 * bf16 widen exactly): a half-precision copy against its f32 original.
 */
static int mixable(enum scar_dtype a, enum scar_dtype b)
{
	return a != b && (a == SCAR_F32 || a == SCAR_F16 || a == SCAR_BF16) &&
	       (b == SCAR_F32 || b == SCAR_F16 || b == SCAR_BF16);
}

/* n elements of dtype dt (f16 or bf16) at src as f32 at dst; dst may be src - 2n bytes. */
static void widen16(unsigned char *dst, const unsigned char *src, uint64_t n, enum scar_dtype dt)
{
	for (uint64_t i = 0; i < n; i++) {
		uint16_t h = (uint16_t)(src[2 * i] | src[2 * i + 1] << 8);
		float v = dt == SCAR_F16 ? scar_f16_to_f32(h) : scar_bf16_to_f32(h);

		memcpy(dst + 4 * i, &v, 4);
	}
}

/* A row of n elements of dtype dt as the compared dtype cdt: p itself, or widened into buffer w. */
static const void *as_compared(struct engine *e, int w, const void *p, enum scar_dtype dt,
			       enum scar_dtype cdt, uint64_t n, struct scar_error *err)
{
	if (dt == cdt)
		return p;
	if (e->wcap[w] < n * 4 || !e->wide[w]) {
		void *nb = realloc(e->wide[w], n ? n * 4 : 1);

		if (!nb) {
			scar_error_set(err, SCAR_ENOMEM, "out of memory");
			return NULL;
		}
		e->wide[w] = nb;
		e->wcap[w] = n * 4;
	}
	widen16(e->wide[w], p, n, dt);
	return e->wide[w];
}

static int cmp_row_l2(const void *x, const void *y)
{
	const struct scar_diff_row *a = x, *b = y;

	return a->n.l2 < b->n.l2 ? 1 : a->n.l2 > b->n.l2 ? -1 :
	       a->tensor != b->tensor ? (a->tensor < b->tensor ? -1 : 1) :
	       (a->row > b->row) - (a->row < b->row);
}

static void heap_down(struct scar_diff_row *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		struct scar_diff_row t;

		if (l < n && h[l].n.l2 < h[m].n.l2)
			m = l;
		if (l + 1 < n && h[l + 1].n.l2 < h[m].n.l2)
			m = l + 1;
		if (m == i)
			return;
		t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

static void heap_push(struct engine *e, const struct scar_diff_row *row)
{
	struct scar_diff_row *h = e->r->top;
	size_t k = e->o->top_k;

	if (!k || !(row->n.l2 > 0))
		return;
	if (e->heap_n < k) {
		size_t i = e->heap_n++;

		h[i] = *row;
		while (i > 0 && h[(i - 1) / 2].n.l2 > h[i].n.l2) {
			struct scar_diff_row t = h[i];

			h[i] = h[(i - 1) / 2];
			h[(i - 1) / 2] = t;
			i = (i - 1) / 2;
		}
	} else if (row->n.l2 > h[0].n.l2) {
		h[0] = *row;
		heap_down(h, e->heap_n, 0);
	}
}

static void flush_pending(struct engine *e)
{
	if (e->pend.n)
		scar_diff_acc_add_part(&e->cur, &e->pend);
	memset(&e->pend, 0, sizeof(e->pend));
}

/* Fold one row's sums (a is A's row, b is B's). */
static int fold_row(struct engine *e, size_t ri, uint64_t row, const struct scar_part *p)
{
	struct scar_diff_tensor *rt = &e->r->tensors[ri];

	if (rt->role == SCAR_ROLE_PARAM && (e->o->top_k || e->o->row_fn)) {
		struct scar_diff_row rr;

		rr.tensor = ri;
		rr.row = row;
		rr.shard = scar_shard_of_row(row, e->r->nshards);
		scar_norms_from(p->l1, p->l2, p->aa, p->bb, p->mx, p->ch, p->n, &p->x2, &p->xa,
			   &p->xb, &rr.n);
		heap_push(e, &rr);
		if (e->o->row_fn) {
			int rc = e->o->row_fn(e->o->row_ctx, e->r, &rr);

			if (rc < 0)
				return rc;
		}
	}
	if (p->n >= SCAR_NUM_BLOCK) {
		scar_diff_acc_add_part(&e->cur, p);
	} else {
		e->pend.l1 += p->l1;
		e->pend.l2 += p->l2;
		e->pend.aa += p->aa;
		e->pend.bb += p->bb;
		scar_sumsq_merge(&e->pend.x2, &p->x2);
		scar_sumsq_merge(&e->pend.xa, &p->xa);
		scar_sumsq_merge(&e->pend.xb, &p->xb);
		if (p->mx > e->pend.mx || isnan(p->mx))
			e->pend.mx = p->mx;
		e->pend.ch += p->ch;
		e->pend.n += p->n;
		if (e->pend.n >= SCAR_NUM_BLOCK)
			flush_pending(e);
	}
	rt->rows_compared++;
	return 0;
}

static int compare_row(struct engine *e, size_t ri, uint64_t row, const void *pp,
		       const void *qp, uint64_t n)
{
	struct scar_part p;

	if (e->swapped)
		e->k(qp, pp, n, &p);
	else
		e->k(pp, qp, n, &p);
	return fold_row(e, ri, row, &p);
}

static void end_chunk(struct engine *e, size_t ri, uint32_t shard)
{
	flush_pending(e);
	scar_diff_acc_merge(&e->tacc[ri], &e->cur);
	if (e->r->tensors[ri].role == SCAR_ROLE_PARAM && shard < e->r->nshards)
		scar_diff_acc_merge(&e->sacc[shard], &e->cur);
	scar_diff_acc_merge(&e->total, &e->cur);
	scar_diff_acc_init(&e->cur);
}

/* Row r of Q's tensor qt, or NULL when Q lacks it. */
static int q_array_row(struct engine *e, size_t qt, uint64_t r, const void **out,
		       struct scar_error *err)
{
	struct side *q = e->Q;
	const struct tinfo *ti = &q->t[qt];
	size_t rb = scar_dtype_size(ti->dtype);
	uint64_t nr;
	int rc;

	for (int d = 1; d < ti->ndim; d++)
		rb *= ti->shape[d];
	if (rb == 0) {
		*out = "";	/* rows of no elements: present, nothing to read */
		return 0;
	}
	if ((long)qt != q->wfile || r < q->w0 || r >= q->w0 + q->wn) {
		nr = rb ? CHUNK / rb : 1;
		if (nr < 1)
			nr = 1;
		if (nr > ti->rows - r)
			nr = ti->rows - r;
		if (nr * rb > q->wcap) {
			void *nb = realloc(q->wbuf, nr * rb);

			if (!nb)
				return scar_error_set(err, SCAR_ENOMEM, "out of memory");
			q->wbuf = nb;
			q->wcap = nr * rb;
		}
		rc = scar_arrayfile_read(q->af, qt, r * rb, q->wbuf, nr * rb, err);
		if (rc < 0)
			return rc;
		q->wfile = (long)qt;
		q->w0 = r;
		q->wn = nr;
	}
	*out = q->wbuf + (r - q->w0) * rb;
	return 0;
}

/*
 * One chunk of P: nrows rows of P's tensor pt, the i-th being global row
 * rows[i] (or first + i when rows is NULL) at pdata + i * rb (or, for a
 * state, its own row). shard is the chunk's shard.
 */
static int chunk_q(struct engine *e, size_t pt, uint32_t shard, uint64_t nrows,
		   const uint64_t *rows, uint64_t first, const unsigned char *pdata, int last,
		   const struct scar_ckpt_section *qpre, struct scar_error *err);

static int chunk(struct engine *e, size_t pt, uint32_t shard, uint64_t nrows,
		 const uint64_t *rows, uint64_t first, const unsigned char *pdata, int last,
		 struct scar_error *err)
{
	return chunk_q(e, pt, shard, nrows, rows, first, pdata, last, NULL, err);
}

/* As chunk, with Q's section already decoded (qpre) when Q is a checkpoint. */
static int chunk_q(struct engine *e, size_t pt, uint32_t shard, uint64_t nrows,
		   const uint64_t *rows, uint64_t first, const unsigned char *pdata, int last,
		   const struct scar_ckpt_section *qpre, struct scar_error *err)
{
	long ri = e->p2r[pt];
	size_t qt, rb, qrb;
	enum scar_dtype cdt, pdt, qdt;
	uint64_t re;
	const struct scar_tensor *ps = NULL, *qs = NULL;
	struct scar_ckpt_section qsec;
	uint64_t j = 0;
	int have_qsec = 0, rc;

	if (ri < 0)
		return 0;
	qt = e->r2q[ri];
	re = 1;
	for (int d = 1; d < e->r->tensors[ri].ndim; d++)
		re *= e->r->tensors[ri].shape[d];
	cdt = e->r->tensors[ri].dtype;
	pdt = e->P->t[pt].dtype;
	qdt = e->Q->t[qt].dtype;
	rb = re * scar_dtype_size(pdt);
	qrb = re * scar_dtype_size(qdt);
	e->k = scar_num_kernel(cdt);
	if (e->P->kind == SIDE_STATE)
		ps = e->P->st->tensors[pt];
	if (e->Q->kind == SIDE_STATE) {
		qs = e->Q->st->tensors[qt];
	} else if (qpre) {
		qsec = *qpre;
		have_qsec = 1;
	} else if (e->Q->kind == SIDE_CKPT) {
		rc = scar_ckpt_reader_section(e->Q->rd, (uint32_t)qt, shard, &qsec, err);
		if (rc == SCAR_ENOTFOUND) {
			scar_error_clear(err);
			return 0;
		}
		if (rc < 0)
			return rc;
		mark_decoded(e->Q, (uint32_t)qt, shard);
		have_qsec = 1;
	}
	for (uint64_t i = 0; i < nrows; i++) {
		uint64_t r = rows ? rows[i] : first + i;
		const void *pp, *qp = NULL;

		if (ps) {
			if (!scar_tensor_has_row(ps, r))
				continue;
			pp = scar_tensor_row(ps, r);
		} else {
			pp = pdata + i * rb;
		}
		if (qs) {
			if (scar_tensor_has_row(qs, r))
				qp = scar_tensor_row(qs, r);
		} else if (have_qsec) {
			while (j < qsec.info.nrows && qsec.rows[j] < r)
				j++;
			if (j < qsec.info.nrows && qsec.rows[j] == r)
				qp = (const unsigned char *)qsec.data + j * qrb;
		} else {
			rc = q_array_row(e, qt, r, &qp, err);
			if (rc < 0)
				return rc;
		}
		if (!qp)
			continue;
		if (!(pp = as_compared(e, 0, pp, pdt, cdt, re, err)) ||
		    !(qp = as_compared(e, 1, qp, qdt, cdt, re, err)))
			return SCAR_ENOMEM;
		rc = compare_row(e, (size_t)ri, r, pp, qp, re);
		if (rc < 0)
			return rc;
	}
	if (last)
		end_chunk(e, (size_t)ri, shard);
	return 0;
}

/* A row too large for one CHUNK, array against array, in pieces. */
static int big_row(struct engine *e, size_t pt, size_t ri, uint64_t r, uint64_t re,
		   struct scar_error *err)
{
	size_t qt = e->r2q[ri];
	enum scar_dtype cdt = e->r->tensors[ri].dtype, pdt = e->P->t[pt].dtype,
			qdt = e->Q->t[qt].dtype;
	size_t esz = scar_dtype_size(cdt), pz = scar_dtype_size(pdt), qz = scar_dtype_size(qdt);
	uint64_t per = CHUNK / esz;
	struct scar_diff_acc acc;
	struct scar_norms n;
	struct scar_part p;
	int rc;

	if (e->pcap < 2 * CHUNK) {
		void *nb = realloc(e->pbuf, 2 * CHUNK);

		if (!nb)
			return scar_error_set(err, SCAR_ENOMEM, "out of memory");
		e->pbuf = nb;
		e->pcap = 2 * CHUNK;
	}
	scar_diff_acc_init(&acc);
	for (uint64_t off = 0; off < re; off += per) {
		uint64_t m = re - off < per ? re - off : per;
		unsigned char *a = e->pbuf, *b = e->pbuf + CHUNK;

		/* a narrower side is read to the end of its buffer and widened in place */
		unsigned char *pa = a + m * (esz - pz), *qb = b + m * (esz - qz);

		rc = scar_arrayfile_read(e->P->af, pt, (r * re + off) * pz, pa, m * pz, err);
		if (rc == 0)
			rc = scar_arrayfile_read(e->Q->af, qt, (r * re + off) * qz, qb, m * qz, err);
		if (rc < 0)
			return rc;
		if (pdt != cdt)
			widen16(a, pa, m, pdt);
		if (qdt != cdt)
			widen16(b, qb, m, qdt);
		if (e->swapped)
			scar_diff_acc_add(&acc, b, a, cdt, m);
		else
			scar_diff_acc_add(&acc, a, b, cdt, m);
	}
	scar_diff_acc_result(&acc, &n);
	p.l1 = scar_sum_value(&acc.l1);
	p.l2 = scar_sum_value(&acc.l2sq);
	p.aa = scar_sum_value(&acc.asq);
	p.bb = scar_sum_value(&acc.bsq);
	p.mx = acc.linf;
	p.ch = acc.changed;
	p.n = acc.elements;
	p.x2 = acc.x2;
	p.xa = acc.xa;
	p.xb = acc.xb;
	return fold_row(e, ri, r, &p);
}

static int walk_array(struct engine *e, struct scar_error *err)
{
	for (size_t pt = 0; pt < e->P->nt; pt++) {
		long ri = e->p2r[pt];
		const struct tinfo *ti = &e->P->t[pt];
		uint64_t re = 1, rb, per;
		int rc;

		if (ri < 0)
			continue;
		for (int d = 1; d < ti->ndim; d++)
			re *= ti->shape[d];
		rb = re * scar_dtype_size(ti->dtype);
		if (rb > CHUNK) {
			for (uint64_t r = 0; r < ti->rows; r++) {
				rc = big_row(e, pt, (size_t)ri, r, re, err);
				if (rc < 0)
					return rc;
				end_chunk(e, (size_t)ri, 0);
			}
			continue;
		}
		per = rb ? CHUNK / rb : ti->rows;
		if (e->pcap < CHUNK) {
			void *nb = realloc(e->pbuf, CHUNK);

			if (!nb)
				return scar_error_set(err, SCAR_ENOMEM, "out of memory");
			e->pbuf = nb;
			e->pcap = CHUNK;
		}
		for (uint64_t r = 0; r < ti->rows; r += per) {
			uint64_t m = ti->rows - r < per ? ti->rows - r : per;

			rc = scar_arrayfile_read(e->P->af, pt, r * rb, e->pbuf, m * rb, err);
			if (rc == 0)
				rc = chunk(e, pt, 0, m, NULL, r, e->pbuf, 1, err);
			if (rc < 0)
				return rc;
		}
		if (ti->rows == 0)
			end_chunk(e, (size_t)ri, 0);
	}
	return 0;
}

static int walk_state(struct engine *e, struct scar_error *err)
{
	const struct scar_state *st = e->P->st;

	for (size_t pt = 0; pt < st->ntensors; pt++) {
		const struct scar_tensor *t = st->tensors[pt];
		uint32_t S = scar_tensor_shards(t, e->P->shards);
		uint64_t rows = scar_tensor_rows(t);

		if (e->p2r[pt] < 0)
			continue;
		/* shards in the order a checkpoint stores them: row r mod S */
		for (uint32_t s = 0; s < S; s++) {
			uint64_t nr = scar_shard_rows(rows, s, S);
			int rc;

			for (uint64_t i = 0; i < nr; i += 4096) {
				uint64_t rowv[4096], m = nr - i < 4096 ? nr - i : 4096;

				for (uint64_t k = 0; k < m; k++)
					rowv[k] = scar_shard_row(i + k, s, S);
				rc = chunk(e, pt, s, m, rowv, 0, NULL, i + m == nr, err);
				if (rc < 0)
					return rc;
			}
		}
	}
	return 0;
}

static int cmp_sec_offset(const void *x, const void *y)
{
	const struct scar_ckpt_section_info *a = x, *b = y;

	return a->offset < b->offset ? -1 : a->offset > b->offset;
}

/* Q's section of a (tensor, shard), decoded on another thread while P's decodes. */
struct fetch {
	struct scar_ckpt_reader *rd;
	uint32_t tensor, shard;
	struct scar_ckpt_section sec;
	struct scar_error err;
	int rc;
};

static void *fetch_run(void *arg)
{
	struct fetch *f = arg;

	f->rc = scar_ckpt_reader_section(f->rd, f->tensor, f->shard, &f->sec, &f->err);
	return NULL;
}

static int walk_ckpt(struct engine *e, struct scar_error *err)
{
	struct scar_ckpt_section sec;
	int rc;

	if (e->P->seekable) {
		const struct scar_ckpt_section_info *idx;
		struct scar_ckpt_section_info *order;
		int n = scar_ckpt_reader_index(e->P->rd, &idx, err);

		if (n < 0)
			return n;
		order = malloc((size_t)(n ? n : 1) * sizeof(*order));
		if (!order)
			return scar_error_set(err, SCAR_ENOMEM, "out of memory");
		memcpy(order, idx, (size_t)n * sizeof(*order));
		qsort(order, (size_t)n, sizeof(*order), cmp_sec_offset);
		rc = 0;
		scar_crc32c(0, "", 1);	/* set up its tables before two threads use them */
		for (int i = 0; rc == 0 && i < n; i++) {
			long ri = e->p2r[order[i].tensor];
			struct fetch f;
			pthread_t th;
			int threaded = 0;

			if (ri < 0)
				continue;
			if (e->Q->kind == SIDE_CKPT) {
				f.rd = e->Q->rd;
				f.tensor = (uint32_t)e->r2q[ri];
				f.shard = order[i].shard;
				scar_error_clear(&f.err);
				/* a thread only pays off for sizeable sections: 200k tiny
				 * tensors would start 200k threads */
				threaded = order[i].raw_len >= (64u << 10) &&
					   pthread_create(&th, NULL, fetch_run, &f) == 0;
				if (!threaded)
					fetch_run(&f);
			}
			rc = scar_ckpt_reader_section(e->P->rd, order[i].tensor, order[i].shard, &sec, err);
			if (threaded)
				pthread_join(th, NULL);
			if (rc == 0)
				mark_decoded(e->P, order[i].tensor, order[i].shard);
			if (e->Q->kind == SIDE_CKPT && f.rc == 0)
				mark_decoded(e->Q, f.tensor, f.shard);
			if (rc == 0 && e->Q->kind == SIDE_CKPT && f.rc < 0) {
				if (f.rc == SCAR_ENOTFOUND)
					continue;
				if (err)
					*err = f.err;
				rc = f.rc;
			}
			if (rc == 0)
				rc = chunk_q(e, sec.info.tensor, sec.info.shard, sec.info.nrows, sec.rows, 0,
					     sec.data, 1, e->Q->kind == SIDE_CKPT ? &f.sec : NULL, err);
		}
		free(order);
		return rc;
	}
	while ((rc = scar_ckpt_reader_next(e->P->rd, &sec, err)) == 1) {
		rc = chunk(e, sec.info.tensor, sec.info.shard, sec.info.nrows, sec.rows, 0,
			   sec.data, 1, err);
		if (rc < 0)
			return rc;
	}
	return rc;
}

/* ---- ranges present in one side only ---- */

static int range_minus(const struct tinfo *x, const struct tinfo *y, uint64_t (**out)[2],
		       size_t *nout, uint64_t *rows, struct scar_error *err)
{
	uint64_t full_x[1][2] = { { 0, x->rows } }, full_y[1][2] = { { 0, y->rows } };
	const uint64_t (*xr)[2] = x->ranges ? x->ranges : (const uint64_t (*)[2])full_x;
	const uint64_t (*yr)[2] = y->ranges ? y->ranges : (const uint64_t (*)[2])full_y;
	size_t nx = x->ranges ? x->nranges : 1, ny = y->ranges ? y->nranges : 1, j = 0, n = 0,
	       cap = 0;
	uint64_t (*v)[2] = NULL;

	*out = NULL;
	*nout = 0;
	*rows = 0;
	if (!x->ranges && !y->ranges)
		return 0;
	for (size_t i = 0; i < nx; i++) {
		uint64_t s = xr[i][0], end = xr[i][0] + xr[i][1];

		while (s < end) {
			uint64_t stop = end;

			while (j < ny && yr[j][0] + yr[j][1] <= s)
				j++;
			if (j < ny && yr[j][0] <= s) {
				s = yr[j][0] + yr[j][1] < end ? yr[j][0] + yr[j][1] : end;
				continue;
			}
			if (j < ny && yr[j][0] < end)
				stop = yr[j][0];
			if (n == cap) {
				size_t nc = cap ? cap * 2 : 16;
				void *nv = realloc(v, nc * sizeof(*v));

				if (!nv) {
					free(v);
					return scar_error_set(err, SCAR_ENOMEM, "out of memory");
				}
				v = nv;
				cap = nc;
			}
			v[n][0] = s;
			v[n][1] = stop - s;
			*rows += stop - s;
			n++;
			s = stop;
		}
	}
	*out = v;
	*nout = n;
	return 0;
}

/* ---- setting up ---- */

/* Name indexes for setup: files may hold hundreds of thousands of tensors. */
struct names {
	struct scar_nameidx a, b, sel;
};

static const char *tinfo_name(const void *ctx, size_t i)
{
	return ((const struct tinfo *)ctx)[i].name;
}

static const char *str_name(const void *ctx, size_t i)
{
	return ((const char *const *)ctx)[i];
}

static int index_side(struct scar_nameidx *x, const struct side *s)
{
	for (size_t i = 0; i < s->nt; i++)
		if (scar_nameidx_add(x, i, tinfo_name, s->t, NULL) < 0)
			return -1;
	return 0;
}

static int selected(const struct scar_diff_opts *o, const struct names *ix, const char *name,
		    enum scar_role role)
{
	if (o->names && o->nnames)
		return scar_nameidx_find(&ix->sel, name, str_name, o->names) != SCAR_NAMEIDX_NONE;
	return role == SCAR_ROLE_PARAM || o->all;
}

static long find_t(const struct side *s, const struct scar_nameidx *x, const char *name)
{
	size_t i = scar_nameidx_find(x, name, tinfo_name, s->t);

	return i == SCAR_NAMEIDX_NONE ? -1 : (long)i;
}

static void shape_str(const struct tinfo *t, char *buf, size_t cap)
{
	size_t n = (size_t)snprintf(buf, cap, "[");

	for (int d = 0; d < t->ndim && n < cap; d++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%llu", d ? ", " : "",
				      (unsigned long long)t->shape[d]);
	if (n < cap)
		snprintf(buf + n, cap - n, "]");
}

static int push_name(char (**v)[SCAR_NAME_MAX], size_t *n, const char *name,
		     struct scar_error *err)
{
	void *nv = realloc(*v, (*n + 1) * sizeof(**v));

	if (!nv)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	*v = nv;
	snprintf((*v)[*n], SCAR_NAME_MAX, "%s", name);
	(*n)++;
	return 0;
}

static void fill_side(struct scar_diff_side *d, const struct side *s, int was_ckpt,
		      const char *model, int has_it, uint64_t it)
{
	snprintf(d->path, sizeof(d->path), "%s", s->path ? s->path : "");
	d->kind = kind_name(s, was_ckpt);
	snprintf(d->model, sizeof(d->model), "%s", model ? model : "");
	d->has_iteration = has_it;
	d->iteration = it;
	d->shards = s->shards;
}

static void side_meta(const struct side *s, const char **model, int *has_it, uint64_t *it)
{
	*model = "";
	*has_it = 0;
	*it = 0;
	if (s->kind == SIDE_CKPT) {
		const struct scar_ckpt_info *in = scar_ckpt_reader_info(s->rd);

		*model = in->model;
		*has_it = 1;
		*it = in->iteration;
	} else if (s->kind == SIDE_STATE) {
		*model = s->st->model;
		*has_it = 1;
		*it = s->st->iteration;
	}
}

static int is_npy(const struct side *s)
{
	return s->kind == SIDE_ARRAY && scar_arrayfile_format(s->af) == SCAR_ARRAY_NPY;
}

static int setup_indexed(struct engine *e, struct side *A, struct side *B, struct names *ix,
			 struct scar_error *err);

/* Match tensors, check layouts, build the result's tables. */
static int setup(struct engine *e, struct side *A, struct side *B, struct scar_error *err)
{
	struct names ix;
	int rc;

	memset(&ix, 0, sizeof(ix));
	rc = setup_indexed(e, A, B, &ix, err);
	scar_nameidx_free(&ix.a);
	scar_nameidx_free(&ix.b);
	scar_nameidx_free(&ix.sel);
	return rc;
}

static int setup_indexed(struct engine *e, struct side *A, struct side *B, struct names *ix,
			 struct scar_error *err)
{
	struct scar_diff_result *r = e->r;
	size_t nm = 0;
	int rc;

	r->tensors = calloc(A->nt ? A->nt : 1, sizeof(*r->tensors));
	e->tacc = calloc(A->nt ? A->nt : 1, sizeof(*e->tacc));
	e->p2r = malloc((e->P->nt + 1) * sizeof(long));
	e->q2r = malloc((e->Q->nt + 1) * sizeof(long));
	e->r2q = calloc(A->nt + 1, sizeof(size_t));
	e->r2p = calloc(A->nt + 1, sizeof(size_t));
	if (!r->tensors || !e->tacc || !e->p2r || !e->q2r || !e->r2q || !e->r2p)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	/* a .npy names its tensor after its file: two single arrays pair up whatever their names */
	if (A->nt == 1 && B->nt == 1 && (is_npy(A) || is_npy(B)) && !e->o->nnames)
		B->t[0].name = A->t[0].name;
	if (index_side(&ix->a, A) || index_side(&ix->b, B))
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	for (size_t i = 0; e->o->names && i < e->o->nnames; i++)
		if (scar_nameidx_add(&ix->sel, i, str_name, e->o->names, NULL) < 0)
			return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	for (size_t i = 0; i < e->P->nt; i++)
		e->p2r[i] = -1;
	for (size_t i = 0; i < e->Q->nt; i++)
		e->q2r[i] = -1;
	for (size_t i = 0; i < A->nt; i++) {
		const struct tinfo *ta = &A->t[i], *tb;
		long j = find_t(B, &ix->b, ta->name);
		struct scar_diff_tensor *rt;
		int same = 1;

		if (!selected(e->o, ix, ta->name, ta->role))
			continue;
		if (j < 0) {
			rc = push_name(&r->only_a, &r->nonly_a, ta->name, err);
			if (rc < 0)
				return rc;
			continue;
		}
		tb = &B->t[j];
		same = (ta->dtype == tb->dtype || mixable(ta->dtype, tb->dtype)) &&
		       ta->ndim == tb->ndim;
		for (int d = 0; same && d < ta->ndim; d++)
			same = ta->shape[d] == tb->shape[d];
		if (!same) {
			char sa[160], sb[160];

			shape_str(ta, sa, sizeof(sa));
			shape_str(tb, sb, sizeof(sb));
			return scar_error_set(err, SCAR_EMISMATCH,
					      "tensor '%s' differs in layout: %s %s in '%s', %s %s in '%s'",
					      ta->name, scar_dtype_name(ta->dtype), sa, A->path,
					      scar_dtype_name(tb->dtype), sb, B->path);
		}
		rt = &r->tensors[nm];
		snprintf(rt->name, sizeof(rt->name), "%s", ta->name);
		rt->dtype = ta->dtype == tb->dtype ? ta->dtype : SCAR_F32;
		rt->role = ta->role;
		rt->ndim = ta->ndim;
		memcpy(rt->shape, ta->shape, sizeof(uint64_t) * (size_t)ta->ndim);
		rt->rows = ta->rows;
		rc = range_minus(ta, tb, &rt->only_a, &rt->nonly_a, &rt->rows_only_a, err);
		if (rc == 0)
			rc = range_minus(tb, ta, &rt->only_b, &rt->nonly_b, &rt->rows_only_b, err);
		if (rc < 0)
			return rc;
		r->rows_only_a += rt->rows_only_a;
		r->rows_only_b += rt->rows_only_b;
		r->ntensors = nm + 1;	/* so that a failure below frees its ranges */
		if (e->swapped) {
			e->p2r[j] = (long)nm;
			e->q2r[i] = (long)nm;
			e->r2q[nm] = i;
			e->r2p[nm] = (size_t)j;
		} else {
			e->p2r[i] = (long)nm;
			e->q2r[j] = (long)nm;
			e->r2q[nm] = (size_t)j;
			e->r2p[nm] = i;
		}
		nm++;
	}
	for (size_t j = 0; j < B->nt; j++)
		if (selected(e->o, ix, B->t[j].name, B->t[j].role) &&
		    find_t(A, &ix->a, B->t[j].name) < 0) {
			rc = push_name(&r->only_b, &r->nonly_b, B->t[j].name, err);
			if (rc < 0)
				return rc;
		}
	for (size_t i = 0; e->o->names && i < e->o->nnames; i++)
		if (find_t(A, &ix->a, e->o->names[i]) < 0 && find_t(B, &ix->b, e->o->names[i]) < 0)
			return scar_error_set(err, SCAR_ENOTFOUND, "no tensor '%s' in '%s' or '%s'",
					      e->o->names[i], A->path, B->path);
	r->ntensors = nm;
	r->a.only_tensors = r->nonly_a;
	r->b.only_tensors = r->nonly_b;
	if (nm == 0)
		return scar_error_set(err, SCAR_ENOTFOUND, "no tensor to compare in both '%s' and '%s'",
				      A->path, B->path);
	r->nshards = A->kind != SIDE_ARRAY ? A->shards : B->shards;
	if (!r->nshards)
		r->nshards = 1;
	r->shards = calloc(r->nshards, sizeof(*r->shards));
	e->sacc = calloc(r->nshards, sizeof(*e->sacc));
	if (e->o->top_k)
		r->top = calloc(e->o->top_k, sizeof(*r->top));
	if (!r->shards || !e->sacc || (e->o->top_k && !r->top))
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	return 0;
}

static void finish(struct engine *e)
{
	struct scar_diff_result *r = e->r;

	for (size_t i = 0; i < r->ntensors; i++)
		scar_diff_acc_result(&e->tacc[i], &r->tensors[i].n);
	for (uint32_t s = 0; s < r->nshards; s++)
		scar_diff_acc_result(&e->sacc[s], &r->shards[s]);
	scar_diff_acc_result(&e->total, &r->total);
	r->ntop = e->heap_n;
	if (r->top)
		qsort(r->top, r->ntop, sizeof(*r->top), cmp_row_l2);
}

static void engine_release(struct engine *e)
{
	free(e->tacc);
	free(e->sacc);
	free(e->p2r);
	free(e->q2r);
	free(e->r2q);
	free(e->r2p);
	free(e->pbuf);
	free(e->wide[0]);
	free(e->wide[1]);
}

static int run(struct side *A, struct side *B, const struct scar_diff_opts *opts,
	       struct scar_diff_result **out, struct scar_error *err)
{
	struct scar_diff_opts defaults;
	struct engine e;
	struct scar_diff_result *r;
	const char *model;
	int has_it, rc, a_ckpt = A->kind == SIDE_CKPT, b_ckpt = B->kind == SIDE_CKPT;
	uint64_t it;

	if (!opts) {
		scar_diff_opts_init(&defaults);
		opts = &defaults;
	}
	memset(&e, 0, sizeof(e));
	e.o = opts;
	r = calloc(1, sizeof(*r));
	if (!r)
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	e.r = r;
	side_meta(A, &model, &has_it, &it);
	fill_side(&r->a, A, a_ckpt, model, has_it, it);
	side_meta(B, &model, &has_it, &it);
	fill_side(&r->b, B, b_ckpt, model, has_it, it);

	/*
	 * Who walks (P), who is fetched (Q). A checkpoint is fetched by section
	 * when seekable and laid out alike; otherwise B is read whole.
	 */
	if (a_ckpt && b_ckpt) {
		if (A->shards != B->shards || (!A->seekable && !B->seekable)) {
			rc = load_whole(B, err);
			if (rc < 0)
				goto out;
			r->loaded_whole = 1;
		} else if (!B->seekable) {
			e.swapped = 1;
		}
	} else if (b_ckpt) {
		e.swapped = 1;
	}
	e.P = e.swapped ? B : A;
	e.Q = e.swapped ? A : B;
	rc = setup(&e, A, B, err);
	if (rc < 0)
		goto out;
	switch (e.P->kind) {
	case SIDE_CKPT: rc = walk_ckpt(&e, err); break;
	case SIDE_ARRAY: rc = walk_array(&e, err); break;
	case SIDE_STATE: rc = walk_state(&e, err); break;
	}
	if (rc == 0)
		rc = check_rest(A, err);
	if (rc == 0)
		rc = check_rest(B, err);
	if (rc < 0)
		goto out;
	finish(&e);
	rc = 0;
out:
	engine_release(&e);
	if (rc < 0) {
		scar_diff_result_free(r);
		return rc;
	}
	*out = r;
	return 0;
}

int scar_diff_files(const char *a, const char *b, const struct scar_diff_opts *opts,
		    struct scar_diff_result **out, struct scar_error *err)
{
	struct side A, B;
	int rc;

	*out = NULL;
	memset(&B, 0, sizeof(B));
	if (strcmp(a, "-") == 0 && strcmp(b, "-") == 0)
		return scar_error_set(err, SCAR_EINVAL, "only one operand can be standard input");
	rc = side_open(&A, a, err);
	if (rc == 0)
		rc = side_open(&B, b, err);
	if (rc == 0)
		rc = run(&A, &B, opts, out, err);
	side_release(&A);
	side_release(&B);
	return rc;
}

int scar_diff_states(const struct scar_state *a, const struct scar_state *b,
		     const struct scar_diff_opts *opts, struct scar_diff_result **out,
		     struct scar_error *err)
{
	struct side A, B;
	int rc;

	*out = NULL;
	memset(&A, 0, sizeof(A));
	memset(&B, 0, sizeof(B));
	A.kind = B.kind = SIDE_STATE;
	A.path = "a";
	B.path = "b";
	rc = side_from_state(&A, a, err);
	if (rc == 0)
		rc = side_from_state(&B, b, err);
	if (rc == 0)
		rc = run(&A, &B, opts, out, err);
	side_release(&A);
	side_release(&B);
	return rc;
}

void scar_diff_result_free(struct scar_diff_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; r->tensors && i < r->ntensors; i++) {
		free(r->tensors[i].only_a);
		free(r->tensors[i].only_b);
	}
	free(r->tensors);
	free(r->shards);
	free(r->top);
	free(r->only_a);
	free(r->only_b);
	free(r);
}

/* ---- ordering the tensor list ---- */

struct order_key {
	double v;
	const char *name;
	size_t i;
};

/* Descending by v (NaN first, then +inf), ties by name: see scar/diff.h. */
static int cmp_order_key(const void *x, const void *y)
{
	const struct order_key *a = x, *b = y;
	int an = isnan(a->v), bn = isnan(b->v);

	if (an != bn)
		return an ? -1 : 1;
	if (!an && a->v != b->v)
		return a->v > b->v ? -1 : 1;
	return strcmp(a->name, b->name);
}

static int cmp_order_name(const void *x, const void *y)
{
	const struct order_key *a = x, *b = y;

	return strcmp(a->name, b->name);
}

size_t *scar_diff_tensor_order(const struct scar_diff_result *r, enum scar_diff_sort key)
{
	struct order_key *k;
	size_t *out;

	if (!r->ntensors)
		return NULL;
	k = malloc(r->ntensors * sizeof(*k));
	out = malloc(r->ntensors * sizeof(*out));
	if (!k || !out) {
		free(k);
		free(out);
		return NULL;
	}
	for (size_t i = 0; i < r->ntensors; i++) {
		const struct scar_norms *n = &r->tensors[i].n;

		k[i].v = key == SCAR_DIFF_SORT_L2 ? n->l2 : key == SCAR_DIFF_SORT_LINF ? n->linf :
			 key == SCAR_DIFF_SORT_REL ? n->rel_l2 : 0;
		k[i].name = r->tensors[i].name;
		k[i].i = i;
	}
	if (key == SCAR_DIFF_SORT_NAME)
		qsort(k, r->ntensors, sizeof(*k), cmp_order_name);
	else if (key != SCAR_DIFF_SORT_FILE)
		qsort(k, r->ntensors, sizeof(*k), cmp_order_key);
	for (size_t i = 0; i < r->ntensors; i++)
		out[i] = k[i].i;
	free(k);
	return out;
}

/* ---- JSON ---- */

static json_t *num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static void put_norms(json_t *o, const struct scar_norms *n)
{
	json_object_set_new(o, "l1", num(n->l1));
	json_object_set_new(o, "l2", num(n->l2));
	json_object_set_new(o, "linf", num(n->linf));
	json_object_set_new(o, "rel_l2", num(n->rel_l2));
	json_object_set_new(o, "changed", json_integer((json_int_t)n->changed));
	json_object_set_new(o, "elements", json_integer((json_int_t)n->elements));
}

static json_t *side_json(const struct scar_diff_side *s)
{
	json_t *o = json_object();

	json_object_set_new(o, "path", scar_json_text(s->path));
	json_object_set_new(o, "kind", scar_json_text(s->kind));
	json_object_set_new(o, "model", scar_json_text(s->model));
	json_object_set_new(o, "iteration", s->has_iteration ?
			    json_integer((json_int_t)s->iteration) : json_null());
	json_object_set_new(o, "shards", json_integer(s->shards));
	return o;
}

static json_t *ranges_json(uint64_t (*v)[2], size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n && i < RANGES_JSON_MAX; i++)
		json_array_append_new(a, json_pack("[I,I]", (json_int_t)v[i][0], (json_int_t)v[i][1]));
	return a;
}

json_t *scar_diff_row_json(const struct scar_diff_result *r, const struct scar_diff_row *row)
{
	json_t *o = json_pack("{s:s, s:s, s:I, s:i}", "type", "row",
			      "tensor", r->tensors[row->tensor].name, "row", (json_int_t)row->row,
			      "shard", (int)row->shard);

	if (o)
		put_norms(o, &row->n);
	return o;
}

json_t *scar_diff_result_json(const struct scar_diff_result *r)
{
	return scar_diff_result_json_list(r, NULL, r->ntensors);
}

json_t *scar_diff_result_json_list(const struct scar_diff_result *r, const size_t *order, size_t n)
{
	json_t *o = json_object(), *ts = json_array(), *ss = json_array(), *top = json_array();
	json_t *miss = json_object(), *mrows = json_array(), *na = json_array(), *nb = json_array();

	if (!o || !ts || !ss || !top || !miss || !mrows || !na || !nb) {
		json_decref(o);
		json_decref(ts);
		json_decref(ss);
		json_decref(top);
		json_decref(miss);
		json_decref(mrows);
		json_decref(na);
		json_decref(nb);
		return NULL;
	}
	json_object_set_new(o, "type", json_string("diff"));
	json_object_set_new(o, "version", json_integer(1));
	json_object_set_new(o, "a", side_json(&r->a));
	json_object_set_new(o, "b", side_json(&r->b));
	put_norms(o, &r->total);
	json_object_set_new(o, "norm_a", num(r->total.norm_a));
	json_object_set_new(o, "norm_b", num(r->total.norm_b));
	json_object_set_new(o, "iteration_a", r->a.has_iteration ?
			    json_integer((json_int_t)r->a.iteration) : json_null());
	json_object_set_new(o, "iteration_b", r->b.has_iteration ?
			    json_integer((json_int_t)r->b.iteration) : json_null());
	json_object_set_new(o, "loaded_whole", json_boolean(r->loaded_whole));
	if (n > r->ntensors)
		n = r->ntensors;
	for (size_t k = 0; k < n; k++) {
		const struct scar_diff_tensor *t = &r->tensors[order ? order[k] : k];
		json_t *to = json_object(), *shape = json_array();

		for (int d = 0; d < t->ndim; d++)
			json_array_append_new(shape, json_integer((json_int_t)t->shape[d]));
		json_object_set_new(to, "name", scar_json_text(t->name));
		json_object_set_new(to, "dtype", json_string(scar_dtype_name(t->dtype)));
		json_object_set_new(to, "role", json_string(scar_role_name(t->role)));
		json_object_set_new(to, "shape", shape);
		put_norms(to, &t->n);
		json_object_set_new(to, "rows_compared", json_integer((json_int_t)t->rows_compared));
		json_object_set_new(to, "missing_rows",
				    json_integer((json_int_t)(t->rows_only_a + t->rows_only_b)));
		json_array_append_new(ts, to);
	}
	json_object_set_new(o, "tensors", ts);
	json_object_set_new(o, "tensors_omitted", json_integer((json_int_t)(r->ntensors - n)));
	/* every tensor with rows on one side only, in file order, listed or not */
	for (size_t i = 0; i < r->ntensors; i++) {
		const struct scar_diff_tensor *t = &r->tensors[i];

		if (t->nonly_a || t->nonly_b) {
			json_t *mo = json_pack("{s:s, s:I, s:I}", "tensor", t->name,
					       "rows_only_a", (json_int_t)t->rows_only_a,
					       "rows_only_b", (json_int_t)t->rows_only_b);

			json_object_set_new(mo, "only_a", ranges_json(t->only_a, t->nonly_a));
			json_object_set_new(mo, "only_b", ranges_json(t->only_b, t->nonly_b));
			if (t->nonly_a > RANGES_JSON_MAX || t->nonly_b > RANGES_JSON_MAX)
				json_object_set_new(mo, "truncated", json_true());
			json_array_append_new(mrows, mo);
		}
	}
	for (uint32_t s = 0; s < r->nshards; s++) {
		json_t *so = json_pack("{s:i}", "shard", (int)s);

		put_norms(so, &r->shards[s]);
		json_array_append_new(ss, so);
	}
	json_object_set_new(o, "shards", ss);
	for (size_t i = 0; i < r->ntop; i++) {
		const struct scar_diff_row *row = &r->top[i];

		json_array_append_new(top, json_pack("{s:s, s:I, s:i, s:o, s:o}", "tensor",
						     r->tensors[row->tensor].name, "row",
						     (json_int_t)row->row, "shard", (int)row->shard,
						     "l2", num(row->n.l2), "linf", num(row->n.linf)));
	}
	json_object_set_new(o, "top_rows", top);
	for (size_t i = 0; i < r->nonly_a; i++)
		json_array_append_new(na, scar_json_text(r->only_a[i]));
	for (size_t i = 0; i < r->nonly_b; i++)
		json_array_append_new(nb, scar_json_text(r->only_b[i]));
	json_object_set_new(miss, "rows_only_a", json_integer((json_int_t)r->rows_only_a));
	json_object_set_new(miss, "rows_only_b", json_integer((json_int_t)r->rows_only_b));
	json_object_set_new(miss, "tensors_only_a", na);
	json_object_set_new(miss, "tensors_only_b", nb);
	json_object_set_new(miss, "rows", mrows);
	json_object_set_new(o, "missing", miss);
	return o;
}
