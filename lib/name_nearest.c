/* name_nearest.c - the "did you mean" of messages (see scar/error.h). */
#include <ctype.h>
#include <string.h>

#include "scar/error.h"

#define NAME_MAX_LEN 255

/*
 * Optimal string alignment distance (Damerau-Levenshtein without edits of
 * a swapped pair), case ignored; cap + 1 for lengths further apart than cap.
 */
static size_t distance(const char *a, size_t la, const char *b, size_t lb, size_t cap)
{
	size_t rows[3][NAME_MAX_LEN + 1], *pp = rows[0], *p = rows[1], *c = rows[2];

	if ((la > lb ? la - lb : lb - la) > cap)
		return cap + 1;
	for (size_t j = 0; j <= lb; j++)
		p[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t *t;

		c[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			int same = tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 1]);
			size_t d = p[j - 1] + !same;

			if (p[j] + 1 < d)
				d = p[j] + 1;
			if (c[j - 1] + 1 < d)
				d = c[j - 1] + 1;
			if (i > 1 && j > 1 &&
			    tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 2]) &&
			    tolower((unsigned char)a[i - 2]) == tolower((unsigned char)b[j - 1]) &&
			    pp[j - 2] + 1 < d)
				d = pp[j - 2] + 1;
			c[j] = d;
		}
		t = pp;
		pp = p;
		p = c;
		c = t;
	}
	return p[lb];
}

size_t scar_name_nearest(const char *name, const char *const *cands, size_t n)
{
	size_t len = name ? strlen(name) : 0, cap, found = n, best;

	if (!len || len > NAME_MAX_LEN)
		return n;
	cap = len <= 4 ? 1 : len <= 8 ? 2 : 3;
	if (cap >= len)
		cap = len - 1;
	best = cap + 1;
	for (size_t i = 0; i < n; i++) {
		size_t lc, d;

		if (!cands[i] || (lc = strlen(cands[i])) > NAME_MAX_LEN)
			continue;
		d = distance(name, len, cands[i], lc, best - 1 < cap ? best - 1 : cap);
		if (d < best) {
			best = d;
			found = i;
		}
	}
	return found;
}
