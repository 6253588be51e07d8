// SPDX-License-Identifier: MIT
/* Folded stacks, the input of flamegraph.pl, inferno and speedscope: one
 * line per distinct stack, "root;caller;leaf COUNT", COUNT the kept
 * samples of both kinds (or the one --kind keeps), or their time in
 * microseconds (the unit of bcc's offcputime) when weighed by time;
 * sorted by stack text so the same capture gives the same bytes. */
#include "outputs.h"

#include <inttypes.h>

uint64_t profile_agg_value(const struct profile_agg *a, enum profile_weight weight)
{
	return weight == PROFILE_WEIGHT_TIME ? a->weight_ns : a->count;
}

int profile_folded(const struct profile *p, const struct report_view *v, struct out_buf *b)
{
	/* The aggregates are sorted by stack text first: one stack's
	 * aggregates (per span set and kind) are adjacent. */
	for (size_t i = 0; i < p->n_aggs;) {
		uint32_t stack = p->aggs[i].stack;
		uint64_t value = 0;

		for (; i < p->n_aggs && p->aggs[i].stack == stack; i++)
			value = profile_add_held(value, profile_agg_value(&p->aggs[i], v->weight));
		if (v->weight == PROFILE_WEIGHT_TIME)
			value = value / 1000 + (value % 1000 >= 500);
		out_str(b, p->stack_texts.str[p->stacks[stack].text]);
		out_printf(b, " %" PRIu64 "\n", value);
	}
	return b->oom ? -1 : 0;
}
