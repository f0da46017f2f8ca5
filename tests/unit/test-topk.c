/*
 * test-topk.c - scar_prio_select chooses exactly the rows a full sort puts
 * first, for every k, with and without ties, on sorted, reversed and random
 * input.
 */
#include <stdlib.h>
#include <string.h>

#include "scar/error.h"
#include "scar/rng.h"
#include "topk.h"
#include "unit.h"

static int by_priority(const void *a, const void *b)
{
	const struct scar_prio *x = a, *y = b;

	if (x->p != y->p)
		return x->p < y->p ? 1 : -1;
	return x->row < y->row ? -1 : x->row > y->row;
}

/* Fill n priorities: 0 random, 1 ascending, 2 descending, 3 few distinct values. */
static void fill(struct scar_prio *pr, size_t n, int shape, struct scar_rng *rng)
{
	for (size_t i = 0; i < n; i++) {
		pr[i].row = i;
		switch (shape) {
		case 0: pr[i].p = scar_rng_uniform(rng); break;
		case 1: pr[i].p = (double)i; break;
		case 2: pr[i].p = (double)(n - i); break;
		default: pr[i].p = (double)scar_rng_below(rng, 3); break;
		}
	}
}

static void test_against_sort(void)
{
	struct scar_rng rng;
	size_t sizes[] = { 1, 2, 3, 7, 64, 257 };

	scar_rng_seed(&rng, 42);
	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		size_t n = sizes[si];
		struct scar_prio *a = malloc(n * sizeof(*a)), *b = malloc(n * sizeof(*b));
		unsigned char *want = malloc(n), *got = malloc(n);

		for (int shape = 0; shape < 4; shape++)
			for (size_t k = 0; k <= n; k++) {
				fill(a, n, shape, &rng);
				memcpy(b, a, n * sizeof(*a));
				qsort(b, n, sizeof(*b), by_priority);
				scar_prio_select(a, n, k);
				memset(want, 0, n);
				memset(got, 0, n);
				for (size_t i = 0; i < k; i++) {
					want[b[i].row] = 1;
					got[a[i].row] = 1;
				}
				CHECK(memcmp(want, got, n) == 0);
				/* Still a permutation of the rows. */
				memset(got, 0, n);
				for (size_t i = 0; i < n; i++)
					got[a[i].row]++;
				for (size_t i = 0; i < n; i++)
					CHECK(got[i] == 1);
			}
		free(a);
		free(b);
		free(want);
		free(got);
	}
}

int main(void)
{
	test_against_sort();
	return unit_done("test-topk");
}
