/*
 * topk.c - the k highest priorities, by quickselect.
 *
 * A priority checkpoint needs the set of the k rows that moved most, not
 * their order; sorting every row at every partial checkpoint was most of
 * the selection time (bench/bench-overhead.sh). Quickselect with a
 * median-of-three pivot is O(n) expected and, the order being total, picks
 * exactly the set a full sort would.
 */
#include "topk.h"

double scar_row_priority(const struct scar_tensor *cur, const struct scar_tensor *saved,
			 uint64_t r)
{
	uint64_t n = scar_tensor_row_elems(cur), off = r * n;
	double sum = 0;

	switch (cur->dtype) {
	case SCAR_F32: {
		const float *a = (const float *)cur->data + off, *b = (const float *)saved->data + off;

		for (uint64_t i = 0; i < n; i++) {
			double d = (double)a[i] - b[i];

			sum += d * d;
		}
		return sum;
	}
	case SCAR_I32: {
		const int32_t *a = (const int32_t *)cur->data + off;
		const int32_t *b = (const int32_t *)saved->data + off;

		for (uint64_t i = 0; i < n; i++) {
			double d = (double)a[i] - b[i];

			sum += d * d;
		}
		return sum;
	}
	default:
		for (uint64_t i = 0; i < n; i++) {
			double d = scar_tensor_get(cur, off + i) - scar_tensor_get(saved, off + i);

			sum += d * d;
		}
		return sum;
	}
}

static int before(const struct scar_prio *x, const struct scar_prio *y)
{
	if (x->p != y->p)
		return x->p > y->p;
	return x->row < y->row;
}

static void swap(struct scar_prio *a, struct scar_prio *b)
{
	struct scar_prio t = *a;

	*a = *b;
	*b = t;
}

void scar_prio_select(struct scar_prio *pr, size_t n, size_t k)
{
	size_t lo = 0, hi = n;	/* [0, lo) is chosen, [hi, n) is not */

	while (k > lo && k < hi) {
		size_t mid = lo + (hi - lo) / 2, i, j;
		struct scar_prio pivot;

		/* Median of three into pr[mid], then park it at the end. */
		if (before(&pr[hi - 1], &pr[lo]))
			swap(&pr[hi - 1], &pr[lo]);
		if (before(&pr[mid], &pr[lo]))
			swap(&pr[mid], &pr[lo]);
		if (before(&pr[hi - 1], &pr[mid]))
			swap(&pr[hi - 1], &pr[mid]);
		pivot = pr[mid];
		swap(&pr[mid], &pr[hi - 1]);
		/* [lo, i) comes before the pivot, which then goes to i. */
		for (i = lo, j = lo; j < hi - 1; j++)
			if (before(&pr[j], &pivot))
				swap(&pr[i++], &pr[j]);
		swap(&pr[i], &pr[hi - 1]);
		if (k <= i)
			hi = i;
		else
			lo = i + 1;
	}
}
