/* SPDX-License-Identifier: MIT */
/* Per-state duration statistics for the end-of-capture summary. */
#ifndef PMETRICS_SPAN_STATS_H
#define PMETRICS_SPAN_STATS_H

#include <stdint.h>
#include <stdio.h>

struct span_stats {
	uint64_t count;
	uint64_t min_ns;
	uint64_t max_ns;
	long double sum_ns;
};

void span_stats_add(struct span_stats *s, uint64_t duration_ns);
uint64_t span_stats_mean_ns(const struct span_stats *s);
/* "12.35ms", "28.00ms": a duration with a unit, in 4 significant digits
 * (3 for microseconds), trailing zeros kept so every figure reads alike. */
void format_duration(char *buf, size_t len, uint64_t ns);

#endif
