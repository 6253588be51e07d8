// SPDX-License-Identifier: MIT
/* The clocks pmetrics shares with BPF: a time namespace's offsets, read
 * from the text the kernel gives in /proc/self/timens_offsets, come out
 * of the monotonic clock and go into boot-clock start times exactly;
 * text that does not parse is refused rather than half read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <time.h>

#include "wall_clock.h"

static void the_kernels_own_text_is_read(void **state)
{
	struct time_ns_offsets o;

	(void)state;
	assert_int_equal(time_ns_parse_offsets("monotonic      864000         0\n"
					       "boottime          -60 250000000\n", &o), 0);
	assert_int_equal(o.monotonic_ns, 864000ll * 1000000000ll);
	/* a negative offset: seconds below, nanoseconds above (-59.75 s) */
	assert_int_equal(o.boottime_ns, -59750000000ll);
}

static void the_initial_namespace_has_no_offsets(void **state)
{
	struct time_ns_offsets o = { 1, 1 };

	(void)state;
	assert_int_equal(time_ns_parse_offsets("monotonic           0         0\n"
					       "boottime            0         0\n", &o), 0);
	assert_int_equal(o.monotonic_ns, 0);
	assert_int_equal(o.boottime_ns, 0);
	o = (struct time_ns_offsets){ 1, 1 };
	assert_int_equal(time_ns_parse_offsets("", &o), 0);
	assert_int_equal(o.monotonic_ns, 0);
	assert_int_equal(o.boottime_ns, 0);
}

static void clock_ids_and_unknown_clocks(void **state)
{
	struct time_ns_offsets o;

	(void)state;
	/* what one writes there: CLOCK_MONOTONIC is 1, CLOCK_BOOTTIME 7 */
	assert_int_equal(time_ns_parse_offsets("1 5 0\n7 0 3", &o), 0);
	assert_int_equal(o.monotonic_ns, 5000000000ll);
	assert_int_equal(o.boottime_ns, 3);
	assert_int_equal(time_ns_parse_offsets("realtime 9 0\nmonotonic 2 0\n", &o), 0);
	assert_int_equal(o.monotonic_ns, 2000000000ll);
	assert_int_equal(o.boottime_ns, 0);
}

static void text_that_does_not_parse_is_refused(void **state)
{
	struct time_ns_offsets o;

	(void)state;
	assert_int_equal(time_ns_parse_offsets("monotonic 5\n", &o), -EINVAL);
	assert_int_equal(time_ns_parse_offsets("monotonic five 0\n", &o), -EINVAL);
	assert_int_equal(time_ns_parse_offsets("monotonic 5 1000000000\n", &o), -EINVAL);
	assert_int_equal(time_ns_parse_offsets("monotonic 5 -1\n", &o), -EINVAL);
	assert_int_equal(time_ns_parse_offsets("monotonic 1 0\n\nboottime 1 0\n", &o), -EINVAL);
	/* a line short of its nanoseconds does not take the next line's */
	assert_int_equal(time_ns_parse_offsets("monotonic 5\n7 0 3\n", &o), -EINVAL);
	assert_int_equal(time_ns_parse_offsets("monotonic 5 0 extra\n", &o), -EINVAL);
}

/* This process's own offsets are what separate its CLOCK_MONOTONIC
 * from the kernel's. Outside a time namespace, as tests usually run,
 * they are 0 and this checks only that monotonic_ns() reads
 * CLOCK_MONOTONIC; test_target_view.sh runs pmetrics inside one. */
static void monotonic_is_the_kernels_clock(void **state)
{
	const struct time_ns_offsets *own = time_ns_offsets();
	struct timespec ts;
	uint64_t before, here, after;

	(void)state;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	before = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	here = monotonic_ns();
	clock_gettime(CLOCK_MONOTONIC, &ts);
	after = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	assert_true(here + (uint64_t)own->monotonic_ns >= before);
	assert_true(here + (uint64_t)own->monotonic_ns <= after);
	assert_int_equal(boottime_as_seen_here(1000), 1000 + (uint64_t)own->boottime_ns);
}

#define T(f) cmocka_unit_test(f)
int main(void)
{
	const struct CMUnitTest tests[] = {
		T(the_kernels_own_text_is_read),
		T(the_initial_namespace_has_no_offsets),
		T(clock_ids_and_unknown_clocks),
		T(text_that_does_not_parse_is_refused),
		T(monotonic_is_the_kernels_clock),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
