// SPDX-License-Identifier: MIT
/* Folded stacks, the input of flamegraph.pl, inferno and speedscope: one
 * line per distinct stack, "root;caller;leaf COUNT", counts of the kept
 * samples of both kinds (or the one --kind keeps), sorted by stack text
 * so the same capture gives the same bytes. */
#include "outputs.h"

#include <inttypes.h>

int profile_folded(const struct profile *p, struct out_buf *b)
{
	/* The aggregates are sorted by stack text first: one stack's
	 * aggregates (per span set and kind) are adjacent. */
	for (size_t i = 0; i < p->n_aggs;) {
		uint32_t stack = p->aggs[i].stack;
		uint64_t count = 0;

		for (; i < p->n_aggs && p->aggs[i].stack == stack; i++)
			count += p->aggs[i].count;
		out_str(b, p->stack_texts.str[p->stacks[stack].text]);
		out_printf(b, " %" PRIu64 "\n", count);
	}
	return b->oom ? -1 : 0;
}
