// SPDX-License-Identifier: MIT
#include "wall_clock.h"

#include <time.h>

static uint64_t read_clock(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t monotonic_ns(void) { return read_clock(CLOCK_MONOTONIC); }
uint64_t realtime_ns(void) { return read_clock(CLOCK_REALTIME); }

void wall_clock_sync(struct wall_clock *c)
{
	uint64_t best_gap = UINT64_MAX;

	for (int i = 0; i < 3; i++) {
		uint64_t before = monotonic_ns();
		uint64_t wall = realtime_ns();
		uint64_t after = monotonic_ns();
		if (after - before < best_gap) {
			best_gap = after - before;
			c->offset_ns = (int64_t)(wall - (before + (after - before) / 2));
		}
	}
}

uint64_t wall_clock_from_mono(const struct wall_clock *c, uint64_t mono_ns)
{
	return (uint64_t)((int64_t)mono_ns + c->offset_ns);
}
