/* SPDX-License-Identifier: MIT */
/* CLOCK_MONOTONIC (bpf_ktime_get_ns) to CLOCK_REALTIME conversion.
 * The offset between the two only moves when the wall clock is stepped,
 * so it is re-measured on every drain rather than once at start. */
#ifndef PMETRICS_WALL_CLOCK_H
#define PMETRICS_WALL_CLOCK_H

#include <stdint.h>

struct wall_clock {
	int64_t offset_ns; /* realtime - monotonic */
};

uint64_t monotonic_ns(void);
uint64_t realtime_ns(void);
/* Measures the offset, bracketing the realtime read between two
 * monotonic reads and keeping the tightest of a few tries. */
void wall_clock_sync(struct wall_clock *c);
uint64_t wall_clock_from_mono(const struct wall_clock *c, uint64_t mono_ns);

#endif
