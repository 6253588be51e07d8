// SPDX-License-Identifier: MIT
#include "span_stats.h"

void span_stats_add(struct span_stats *s, uint64_t duration_ns)
{
	if (s->count == 0 || duration_ns < s->min_ns)
		s->min_ns = duration_ns;
	if (duration_ns > s->max_ns)
		s->max_ns = duration_ns;
	s->sum_ns += (long double)duration_ns;
	s->count++;
}

uint64_t span_stats_mean_ns(const struct span_stats *s)
{
	return s->count ? (uint64_t)(s->sum_ns / (long double)s->count + 0.5L) : 0;
}

void format_duration(char *buf, size_t len, uint64_t ns)
{
	if (ns < 1000)
		snprintf(buf, len, "%lluns", (unsigned long long)ns);
	else if (ns < 1000000)
		snprintf(buf, len, "%.3gus", (double)ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, len, "%.4gms", (double)ns / 1e6);
	else
		snprintf(buf, len, "%.4gs", (double)ns / 1e9);
}
