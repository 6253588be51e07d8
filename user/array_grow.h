/* SPDX-License-Identifier: MIT */
/* Growing a heap array by doubling: the sampler's and symbolizer's
 * tables of processes, files, symbols and events. */
#ifndef PMETRICS_ARRAY_GROW_H
#define PMETRICS_ARRAY_GROW_H

#include <stdbool.h>
#include <stdlib.h>

/* Makes *ARR (*CAP elements of ELEM bytes) hold at least NEED elements.
 * False when out of memory, *ARR then unchanged. */
static inline bool array_grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t want;
	void *p;

	if (need <= *cap)
		return true;
	want = *cap ? *cap * 2 : 16;
	while (want < need)
		want *= 2;
	p = realloc(*arr, want * elem);
	if (!p)
		return false;
	*arr = p;
	*cap = want;
	return true;
}

#endif
