/*
 * numeric.c - compensated and scaled sums, and the streaming norms of
 * A - B (see scar/numeric.h): the arithmetic scar-diff and scar-inject
 * share. The kernels sum blocks of BLOCK elements plainly (four lanes) and
 * add the block sums with Neumaier's compensation; sums of squares beyond
 * the double range are taken again scaled (struct scar_sumsq).
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "scar/numeric.h"
#include "numeric_internal.h"

#define BLOCK SCAR_NUM_BLOCK	/* terms per plain partial sum */

/* ---- sums of squares beyond the double range ---- */

/*
 * Below this a plain sum of squares may have lost terms to underflow (each
 * term's error is under 2^-1074, so above it they are negligible); an
 * overflowed one is Inf. Between the two the plain sum is used as it is.
 */
#define SUMSQ_TINY 0x1p-900

/* Add q * 2^e (q >= 0). */
static void sumsq_put(struct scar_sumsq *s, double q, int e)
{
	int x;

	if (q == 0 || isnan(s->q))
		return;
	if (!isfinite(q) || isinf(s->q)) {
		s->q = isinf(s->q) && !isnan(q) ? s->q : q;
		return;
	}
	if (s->q == 0) {
		s->q = q;
		s->e = e;
	} else if (e > s->e) {
		s->q = ldexp(s->q, s->e - e) + q;
		s->e = e;
	} else {
		s->q += ldexp(q, e - s->e);
	}
	s->q = frexp(s->q, &x);
	s->e += x;
}

void scar_sumsq_add(struct scar_sumsq *s, double x)
{
	double m;
	int e;

	x = fabs(x);
	if (!isfinite(x)) {
		sumsq_put(s, x, 0);
		return;
	}
	m = frexp(x, &e);	/* x*x = m*m * 2^(2e), m*m in [0.25, 1) */
	sumsq_put(s, m * m, 2 * e);
}

void scar_sumsq_add_sum(struct scar_sumsq *s, double ss)
{
	double m;
	int e;

	if (!isfinite(ss)) {
		sumsq_put(s, ss, 0);
		return;
	}
	m = frexp(ss, &e);
	sumsq_put(s, m, e);
}

void scar_sumsq_merge(struct scar_sumsq *s, const struct scar_sumsq *o)
{
	sumsq_put(s, o->q, o->e);
}

double scar_sumsq_root(const struct scar_sumsq *s)
{
	double q = s->q;
	int e = s->e;

	if (q == 0 || !isfinite(q))
		return sqrt(q);
	if (e & 1) {
		q *= 2;
		e--;
	}
	return ldexp(sqrt(q), e / 2);
}

double scar_sumsq_pick(double plain, const struct scar_sumsq *x)
{
	if (isnan(plain) || (isfinite(plain) && (plain >= SUMSQ_TINY || x->q == 0)))
		return sqrt(plain);
	return scar_sumsq_root(x);
}

/* A plain sum of squares that is right as it is (0 only when every term was). */
static int plain_ok(double ss, int all_zero)
{
	return isnan(ss) || (isfinite(ss) && (ss >= SUMSQ_TINY || (ss == 0 && all_zero)));
}

/* The scaled sums from the plain ones: exact for every dtype but f64. */
static void part_ranges(struct scar_part *p)
{
	memset(&p->x2, 0, sizeof(p->x2));
	memset(&p->xa, 0, sizeof(p->xa));
	memset(&p->xb, 0, sizeof(p->xb));
	scar_sumsq_add_sum(&p->x2, p->l2);
	scar_sumsq_add_sum(&p->xa, p->aa);
	scar_sumsq_add_sum(&p->xb, p->bb);
}

/*
 * Blocks of BLOCK elements, four interleaved lanes each (independent
 * dependency chains, and SLP-vectorisable), block sums compensated.
 */
/*
 * The difference of two elements as a double. Every dtype but the 64-bit
 * integers converts exactly, so u - v rounds once; 64-bit integers beyond
 * 2^53 would round before subtracting (2^60 and 2^60 + 1 both become
 * 2^60), so their difference is taken exactly in the integers first.
 */
#define DIFF_PLAIN(x, y, u, v) ((u) - (v))
#define DIFF_U64(x, y, u, v) ((x) > (y) ? (double)((uint64_t)(x) - (uint64_t)(y)) : \
			      -(double)((uint64_t)(y) - (uint64_t)(x)))

#define DEF_KERNEL(NAME, T, DIFF) DEF_KERNEL_CV(NAME, T, DIFF, (double))

/* An element of type T as a double: CV(x), exact for every dtype (f16, bf16 too). */
#define DEF_KERNEL_CV(NAME, T, DIFF, CV)						\
static void NAME(const void *va, const void *vb, uint64_t n, struct scar_part *p)	\
{										\
	const T *a = va, *b = vb;						\
	struct scar_sum L1 = { 0, 0 }, L2 = { 0, 0 }, AA = { 0, 0 }, BB = { 0, 0 };	\
	double mx = 0;								\
	uint64_t ch = 0;							\
	for (uint64_t i = 0; i < n; i += BLOCK) {				\
		uint64_t m = n - i < BLOCK ? n - i : BLOCK, j = 0;		\
		double s1[4] = { 0 }, s2[4] = { 0 }, sa[4] = { 0 }, sb[4] = { 0 };	\
		double mm[4] = { 0 };						\
		uint64_t c4[4] = { 0 };						\
		const T *x = a + i, *y = b + i;					\
		for (; j + 4 <= m; j += 4) {					\
			for (int k = 0; k < 4; k++) {				\
				double u = CV(x[j + k]), v = CV(y[j + k]);	\
				int ne = memcmp(x + j + k, y + j + k, sizeof(T)) != 0;	\
				double d = ne ? DIFF(x[j + k], y[j + k], u, v) : 0;	\
				double ad = fabs(d);				\
				s1[k] += ad;					\
				s2[k] += d * d;					\
				sa[k] += u * u;					\
				sb[k] += v * v;					\
				mm[k] = ad > mm[k] ? ad : mm[k];		\
				c4[k] += (uint64_t)ne;				\
			}							\
		}								\
		for (; j < m; j++) {						\
			double u = CV(x[j]), v = CV(y[j]);			\
			int ne = memcmp(x + j, y + j, sizeof(T)) != 0;		\
			double d = ne ? DIFF(x[j], y[j], u, v) : 0;		\
			double ad = fabs(d);					\
			s1[0] += ad;						\
			s2[0] += d * d;						\
			sa[0] += u * u;						\
			sb[0] += v * v;						\
			mm[0] = ad > mm[0] ? ad : mm[0];			\
			c4[0] += (uint64_t)ne;					\
		}								\
		scar_sum_add(&L1, (s1[0] + s1[1]) + (s1[2] + s1[3]));		\
		scar_sum_add(&L2, (s2[0] + s2[1]) + (s2[2] + s2[3]));		\
		scar_sum_add(&AA, (sa[0] + sa[1]) + (sa[2] + sa[3]));		\
		scar_sum_add(&BB, (sb[0] + sb[1]) + (sb[2] + sb[3]));		\
		for (int k = 0; k < 4; k++)					\
			mx = mm[k] > mx ? mm[k] : mx;				\
		ch += c4[0] + c4[1] + c4[2] + c4[3];				\
	}									\
	p->l1 = scar_sum_value(&L1);						\
	p->l2 = scar_sum_value(&L2);						\
	p->aa = scar_sum_value(&AA);						\
	p->bb = scar_sum_value(&BB);						\
	p->mx = mx;								\
	p->ch = ch;								\
	p->n = n;								\
	part_ranges(p);								\
}

/*
 * f32, the common case, by hand in GCC vector types: the same four lanes
 * (lanes 0-1 and 2-3 in two registers), so the sums are bit-identical to
 * DEF_KERNEL's, but the loop is SIMD even at -O2 without -mavx.
 */
typedef double v2d __attribute__((vector_size(16)));
typedef int64_t v2i __attribute__((vector_size(16)));

static void kern_f32(const void *va, const void *vb, uint64_t n, struct scar_part *p)
{
	const float *a = va, *b = vb;
	struct scar_sum L1 = { 0, 0 }, L2 = { 0, 0 }, AA = { 0, 0 }, BB = { 0, 0 };
	const v2i absmask = { INT64_MAX, INT64_MAX };
	double mx = 0;
	uint64_t ch = 0;

	for (uint64_t i = 0; i < n; i += BLOCK) {
		uint64_t m = n - i < BLOCK ? n - i : BLOCK, j = 0;
		v2d s1a = { 0, 0 }, s1b = { 0, 0 }, s2a = { 0, 0 }, s2b = { 0, 0 };
		v2d saa = { 0, 0 }, sab = { 0, 0 }, sba = { 0, 0 }, sbb = { 0, 0 };
		v2d mma = { 0, 0 }, mmb = { 0, 0 };
		v2i ca = { 0, 0 }, cb = { 0, 0 };
		const float *x = a + i, *y = b + i;

		for (; j + 4 <= m; j += 4) {
			v2d u0 = { x[j], x[j + 1] }, u1 = { x[j + 2], x[j + 3] };
			v2d v0 = { y[j], y[j + 1] }, v1 = { y[j + 2], y[j + 3] };
			uint32_t xb[4], yb[4];

			memcpy(xb, x + j, sizeof(xb));
			memcpy(yb, y + j, sizeof(yb));
			/* lanes whose bits differ: the others (Inf, NaN too) differ by 0 */
			v2i n0 = (v2i){ xb[0], xb[1] } != (v2i){ yb[0], yb[1] };
			v2i n1 = (v2i){ xb[2], xb[3] } != (v2i){ yb[2], yb[3] };
			v2d d0 = (v2d)((v2i)(u0 - v0) & n0), d1 = (v2d)((v2i)(u1 - v1) & n1);
			v2d a0 = (v2d)((v2i)d0 & absmask), a1 = (v2d)((v2i)d1 & absmask);
			v2i g0 = a0 > mma, g1 = a1 > mmb;

			s1a += a0;
			s1b += a1;
			s2a += d0 * d0;
			s2b += d1 * d1;
			saa += u0 * u0;
			sab += u1 * u1;
			sba += v0 * v0;
			sbb += v1 * v1;
			mma = (v2d)(((v2i)a0 & g0) | ((v2i)mma & ~g0));
			mmb = (v2d)(((v2i)a1 & g1) | ((v2i)mmb & ~g1));
			ca -= n0;
			cb -= n1;
		}
		for (; j < m; j++) {
			int ne = memcmp(x + j, y + j, sizeof(*x)) != 0;
			double u = x[j], v = y[j], d = ne ? u - v : 0, ad = fabs(d);

			s1a[0] += ad;
			s2a[0] += d * d;
			saa[0] += u * u;
			sba[0] += v * v;
			mma[0] = ad > mma[0] ? ad : mma[0];
			ca[0] += ne;
		}
		scar_sum_add(&L1, (s1a[0] + s1a[1]) + (s1b[0] + s1b[1]));
		scar_sum_add(&L2, (s2a[0] + s2a[1]) + (s2b[0] + s2b[1]));
		scar_sum_add(&AA, (saa[0] + saa[1]) + (sab[0] + sab[1]));
		scar_sum_add(&BB, (sba[0] + sba[1]) + (sbb[0] + sbb[1]));
		mx = mma[0] > mx ? mma[0] : mx;
		mx = mma[1] > mx ? mma[1] : mx;
		mx = mmb[0] > mx ? mmb[0] : mx;
		mx = mmb[1] > mx ? mmb[1] : mx;
		ch += (uint64_t)(ca[0] + ca[1] + cb[0] + cb[1]);
	}
	p->l1 = scar_sum_value(&L1);
	p->l2 = scar_sum_value(&L2);
	p->aa = scar_sum_value(&AA);
	p->bb = scar_sum_value(&BB);
	p->mx = mx;
	p->ch = ch;
	p->n = n;
	part_ranges(p);
}

DEF_KERNEL(kern_f64_plain, double, DIFF_PLAIN)

/*
 * f64: the plain kernel; then, only where a plain sum of squares overflowed
 * or may have underflowed (elements beyond about 1e+-150), the sum again,
 * scaled. Elements are f64 only here: f32 and integer squares fit a double
 * with room for 2^64 terms, so their plain sums are always right.
 */
static void kern_f64(const void *va, const void *vb, uint64_t n, struct scar_part *p)
{
	const double *a = va, *b = vb;

	kern_f64_plain(va, vb, n, p);
	if (!plain_ok(p->l2, p->mx == 0)) {
		memset(&p->x2, 0, sizeof(p->x2));
		for (uint64_t i = 0; i < n; i++)
			if (memcmp(a + i, b + i, sizeof(*a)) != 0)
				scar_sumsq_add(&p->x2, a[i] - b[i]);
	}
	if (!plain_ok(p->aa, 0)) {
		memset(&p->xa, 0, sizeof(p->xa));
		for (uint64_t i = 0; i < n; i++)
			if (a[i] != 0)
				scar_sumsq_add(&p->xa, a[i]);
	}
	if (!plain_ok(p->bb, 0)) {
		memset(&p->xb, 0, sizeof(p->xb));
		for (uint64_t i = 0; i < n; i++)
			if (b[i] != 0)
				scar_sumsq_add(&p->xb, b[i]);
	}
}
DEF_KERNEL(kern_i32, int32_t, DIFF_PLAIN)
DEF_KERNEL(kern_u32, uint32_t, DIFF_PLAIN)
DEF_KERNEL(kern_i64, int64_t, DIFF_U64)
DEF_KERNEL(kern_u64, uint64_t, DIFF_U64)
DEF_KERNEL(kern_u8, uint8_t, DIFF_PLAIN)
/* 16-bit floats widen exactly; their squares fit a double like f32's do. */
#define CV_F16(x) ((double)scar_f16_to_f32(x))
#define CV_BF16(x) ((double)scar_bf16_to_f32(x))
DEF_KERNEL_CV(kern_f16, uint16_t, DIFF_PLAIN, CV_F16)
DEF_KERNEL_CV(kern_bf16, uint16_t, DIFF_PLAIN, CV_BF16)

scar_kernel_fn scar_num_kernel(enum scar_dtype dt)
{
	switch (dt) {
	case SCAR_F32: return kern_f32;
	case SCAR_F64: return kern_f64;
	case SCAR_I32: return kern_i32;
	case SCAR_U32: return kern_u32;
	case SCAR_I64: return kern_i64;
	case SCAR_U64: return kern_u64;
	case SCAR_U8: return kern_u8;
	case SCAR_F16: return kern_f16;
	case SCAR_BF16: return kern_bf16;
	}
	return NULL;
}

void scar_diff_acc_init(struct scar_diff_acc *acc)
{
	memset(acc, 0, sizeof(*acc));
}

void scar_diff_acc_add_part(struct scar_diff_acc *acc, const struct scar_part *p)
{
	scar_sum_add(&acc->l1, p->l1);
	scar_sum_add(&acc->l2sq, p->l2);
	scar_sum_add(&acc->asq, p->aa);
	scar_sum_add(&acc->bsq, p->bb);
	scar_sumsq_merge(&acc->x2, &p->x2);
	scar_sumsq_merge(&acc->xa, &p->xa);
	scar_sumsq_merge(&acc->xb, &p->xb);
	if (p->mx > acc->linf || isnan(p->mx))
		acc->linf = p->mx;
	acc->changed += p->ch;
	acc->elements += p->n;
}

void scar_diff_acc_add(struct scar_diff_acc *acc, const void *a, const void *b,
		       enum scar_dtype dt, uint64_t n)
{
	scar_kernel_fn k = scar_num_kernel(dt);
	struct scar_part p;

	if (!k || !n)
		return;
	k(a, b, n, &p);
	scar_diff_acc_add_part(acc, &p);
}

void scar_diff_acc_merge(struct scar_diff_acc *into, const struct scar_diff_acc *from)
{
	scar_sum_add(&into->l1, from->l1.s);
	scar_sum_add(&into->l1, from->l1.c);
	scar_sum_add(&into->l2sq, from->l2sq.s);
	scar_sum_add(&into->l2sq, from->l2sq.c);
	scar_sum_add(&into->asq, from->asq.s);
	scar_sum_add(&into->asq, from->asq.c);
	scar_sum_add(&into->bsq, from->bsq.s);
	scar_sum_add(&into->bsq, from->bsq.c);
	scar_sumsq_merge(&into->x2, &from->x2);
	scar_sumsq_merge(&into->xa, &from->xa);
	scar_sumsq_merge(&into->xb, &from->xb);
	if (from->linf > into->linf || isnan(from->linf))
		into->linf = from->linf;
	into->changed += from->changed;
	into->elements += from->elements;
}

static double rel(double l2, double nb)
{
	if (isnan(l2))
		return NAN;
	if (l2 == 0)
		return 0;	/* nothing moved, whatever ||B|| is (Inf or NaN too) */
	if (isinf(l2))
		return INFINITY;
	if (isnan(nb))
		return NAN;
	if (nb == 0)
		return INFINITY;
	return l2 / nb;
}

void scar_norms_from(double l1, double l2sq, double asq, double bsq, double linf,
		     uint64_t changed, uint64_t n, const struct scar_sumsq *x2,
		     const struct scar_sumsq *xa, const struct scar_sumsq *xb,
		     struct scar_norms *out)
{
	out->l1 = l1;
	out->l2 = scar_sumsq_pick(l2sq, x2);
	out->linf = isnan(l2sq) ? NAN : linf;
	out->norm_a = scar_sumsq_pick(asq, xa);
	out->norm_b = scar_sumsq_pick(bsq, xb);
	out->rel_l2 = rel(out->l2, out->norm_b);
	out->changed = changed;
	out->elements = n;
}

void scar_diff_acc_result(const struct scar_diff_acc *acc, struct scar_norms *out)
{
	scar_norms_from(scar_sum_value(&acc->l1), scar_sum_value(&acc->l2sq),
			scar_sum_value(&acc->asq), scar_sum_value(&acc->bsq), acc->linf,
			acc->changed, acc->elements, &acc->x2, &acc->xa, &acc->xb, out);
}

double scar_norm_l2(const void *a, enum scar_dtype dt, uint64_t n)
{
	scar_kernel_fn k = scar_num_kernel(dt);
	struct scar_part p;

	if (!k || !n)
		return 0;
	k(a, a, n, &p);
	return scar_sumsq_pick(p.aa, &p.xa);
}
