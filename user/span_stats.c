// SPDX-License-Identifier: MIT
#include "span_stats.h"

#include <stdio.h>
#include <string.h>

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

/* VALUE in DIGITS significant digits, trailing zeros kept ("28.00"), a
 * bare trailing point dropped ("100", not "100."), then UNIT. */
static void format_scaled(char *buf, size_t len, double value, int digits, const char *unit)
{
	char num[32];
	size_t n;

	snprintf(num, sizeof(num), "%#.*g", digits, value);
	n = strlen(num);
	if (n && num[n - 1] == '.')
		num[n - 1] = '\0';
	snprintf(buf, len, "%s%s", num, unit);
}

void format_duration(char *buf, size_t len, uint64_t ns)
{
	if (ns < 1000)
		snprintf(buf, len, "%lluns", (unsigned long long)ns);
	else if (ns < 1000000)
		format_scaled(buf, len, (double)ns / 1e3, 3, "us");
	else if (ns < 1000000000)
		format_scaled(buf, len, (double)ns / 1e6, 4, "ms");
	else
		format_scaled(buf, len, (double)ns / 1e9, 4, "s");
}
