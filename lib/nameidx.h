/*
 * nameidx.h - a hash index from names to positions in a caller's array
 * (internal). Looking tensors up by name must stay O(1): files with
 * hundreds of thousands of tensors made linear lookups quadratic.
 *
 * The index holds positions only; names are read back through a getter
 * from whatever array the caller keeps, so the array may be reallocated.
 */
#ifndef SCAR_NAMEIDX_H
#define SCAR_NAMEIDX_H

#include <stddef.h>

/* The name at position i of the caller's array ctx. */
typedef const char *(*scar_nameidx_get)(const void *ctx, size_t i);

struct scar_nameidx {
	size_t *slot;		/* position + 1; 0 = empty */
	size_t cap;		/* a power of two, or 0 */
	size_t n;
};

#define SCAR_NAMEIDX_NONE ((size_t)-1)

/* Position of name, or SCAR_NAMEIDX_NONE. */
size_t scar_nameidx_find(const struct scar_nameidx *x, const char *name,
			 scar_nameidx_get get, const void *ctx);
/*
 * Index position pos under its name. Returns 0, 1 when the name is already
 * indexed (*dup, when not NULL, is its position; nothing is added), or -1
 * when out of memory.
 */
int scar_nameidx_add(struct scar_nameidx *x, size_t pos, scar_nameidx_get get, const void *ctx,
		     size_t *dup);
void scar_nameidx_free(struct scar_nameidx *x);

#endif
