/* nameidx.c - hash index from names to positions (see nameidx.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nameidx.h"

static size_t hash(const char *s)
{
	uint64_t h = 14695981039346656037u;	/* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211u;
	return (size_t)(h ^ (h >> 29));
}

size_t scar_nameidx_find(const struct scar_nameidx *x, const char *name,
			 scar_nameidx_get get, const void *ctx)
{
	if (!x->cap)
		return SCAR_NAMEIDX_NONE;
	for (size_t i = hash(name) & (x->cap - 1);; i = (i + 1) & (x->cap - 1)) {
		size_t p = x->slot[i];

		if (!p)
			return SCAR_NAMEIDX_NONE;
		if (strcmp(get(ctx, p - 1), name) == 0)
			return p - 1;
	}
}

static void put(size_t *slot, size_t cap, size_t h, size_t pos)
{
	size_t i = h & (cap - 1);

	while (slot[i])
		i = (i + 1) & (cap - 1);
	slot[i] = pos + 1;
}

int scar_nameidx_add(struct scar_nameidx *x, size_t pos, scar_nameidx_get get, const void *ctx,
		     size_t *dup)
{
	size_t d = scar_nameidx_find(x, get(ctx, pos), get, ctx);

	if (d != SCAR_NAMEIDX_NONE) {
		if (dup)
			*dup = d;
		return 1;
	}
	/* at most half full, so probes stay short and always end */
	if (2 * (x->n + 1) > x->cap) {
		size_t cap = x->cap ? 2 * x->cap : 64, *slot;

		if (cap < x->cap || cap > SIZE_MAX / sizeof(*slot) || !(slot = calloc(cap, sizeof(*slot))))
			return -1;
		for (size_t i = 0; i < x->cap; i++)
			if (x->slot[i])
				put(slot, cap, hash(get(ctx, x->slot[i] - 1)), x->slot[i] - 1);
		free(x->slot);
		x->slot = slot;
		x->cap = cap;
	}
	put(x->slot, x->cap, hash(get(ctx, pos)), pos);
	x->n++;
	return 0;
}

void scar_nameidx_free(struct scar_nameidx *x)
{
	free(x->slot);
	x->slot = NULL;
	x->cap = x->n = 0;
}
