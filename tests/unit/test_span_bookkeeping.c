// SPDX-License-Identifier: MIT
/* Clock conversion and per-state statistics. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "span_stats.h"
#include "wall_clock.h"

static void converts_with_offset(void **state)
{
	struct wall_clock c = { .offset_ns = 1700000000000000000ll };
	(void)state;
	assert_int_equal(wall_clock_from_mono(&c, 5), 1700000000000000005ull);
	c.offset_ns = -10;
	assert_int_equal(wall_clock_from_mono(&c, 15), 5);
}

/* The measured offset turns a monotonic reading into the realtime
 * reading taken next to it: they must agree to well under 1 ms. */
static void sync_matches_realtime(void **state)
{
	struct wall_clock c;
	(void)state;
	wall_clock_sync(&c);
	for (int i = 0; i < 100; i++) {
		uint64_t mono = monotonic_ns();
		uint64_t wall = realtime_ns();
		int64_t diff = (int64_t)(wall_clock_from_mono(&c, mono) - wall);
		assert_true(diff > -1000000 && diff < 1000000);
	}
}

static void stats_min_mean_max(void **state)
{
	struct span_stats s;
	(void)state;
	memset(&s, 0, sizeof(s));
	assert_int_equal(span_stats_mean_ns(&s), 0);
	span_stats_add(&s, 30);
	span_stats_add(&s, 10);
	span_stats_add(&s, 21);
	assert_int_equal(s.count, 3);
	assert_int_equal(s.min_ns, 10);
	assert_int_equal(s.max_ns, 30);
	assert_int_equal(span_stats_mean_ns(&s), 20); /* 61/3 = 20.33 */
}

static void stats_do_not_overflow(void **state)
{
	struct span_stats s;
	(void)state;
	memset(&s, 0, sizeof(s));
	for (int i = 0; i < 4; i++)
		span_stats_add(&s, UINT64_MAX / 2);
	assert_int_equal(span_stats_mean_ns(&s), UINT64_MAX / 2);
}

static void durations_read_well(void **state)
{
	char buf[32];
	(void)state;
	format_duration(buf, sizeof(buf), 999);
	assert_string_equal(buf, "999ns");
	format_duration(buf, sizeof(buf), 20088955);
	assert_string_equal(buf, "20.09ms");
	format_duration(buf, sizeof(buf), 14028043893ull);
	assert_string_equal(buf, "14.03s");
	format_duration(buf, sizeof(buf), 76073);
	assert_string_equal(buf, "76.1us");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(converts_with_offset),
		cmocka_unit_test(sync_matches_realtime),
		cmocka_unit_test(stats_min_mean_max),
		cmocka_unit_test(stats_do_not_overflow),
		cmocka_unit_test(durations_read_well),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
