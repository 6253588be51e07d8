// SPDX-License-Identifier: MIT
/* The sampler's pure parts: --sample's rate, and the qualified name of a
 * 3.8-3.10 function read from its source. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "python_stack.h"
#include "sampler.h"

static char err[512];

static int parse(const char *arg, unsigned int *hz)
{
	return sampler_parse_hz(arg, 1000, hz, err, sizeof(err));
}

static void rates_in_range(void **state)
{
	unsigned int hz = 0;

	(void)state;
	assert_int_equal(parse("1", &hz), 0);
	assert_int_equal(hz, 1);
	assert_int_equal(parse("99", &hz), 0);
	assert_int_equal(hz, 99);
	assert_int_equal(parse("1000", &hz), 0);
	assert_int_equal(hz, 1000);
}

static void bad_rates_name_the_limit(void **state)
{
	static const char *const bad[] = { "0", "1001", "abc", "99x", "", "-5", "+5", " 5",
					   "99999999999999999999999" };
	unsigned int hz = 7;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i], &hz), -1);
		assert_non_null(strstr(err, "a whole number from 1 to 1000"));
		assert_null(strchr(err, '\n'));
	}
	assert_int_equal(hz, 7);
}

static void the_limit_is_pmetrics_or_the_kernels(void **state)
{
	unsigned int max = sampler_max_rate();

	(void)state;
	assert_true(max >= 1 && max <= SAMPLER_MAX_HZ);
	assert_true(SAMPLER_DEFAULT_HZ <= SAMPLER_MAX_HZ);
}

static const char SRC[] =
	"import asyncio\n"                       /* 1 */
	"\n"                                     /* 2 */
	"class Worker:\n"                        /* 3 */
	"    async def inner(self):\n"           /* 4 */
	"        return 1\n"                     /* 5 */
	"\n"                                     /* 6 */
	"    def outer(self):\n"                 /* 7 */
	"        def helper():\n"                /* 8 */
	"            return 2\n"                 /* 9 */
	"        return helper\n"                /* 10 */
	"\n"                                     /* 11 */
	"def plain():\n"                         /* 12 */
	"    pass\n";                            /* 13 */

static void qualname(int line, const char *name, const char *want)
{
	char out[256];

	python_source_qualname(SRC, sizeof(SRC) - 1, line, name, out, sizeof(out));
	assert_string_equal(out, want);
}

static void qualnames_from_the_source(void **state)
{
	(void)state;
	qualname(4, "inner", "Worker.inner");
	qualname(7, "outer", "Worker.outer");
	qualname(8, "helper", "Worker.outer.<locals>.helper");
	qualname(12, "plain", "plain");
}

static void a_source_that_does_not_show_it_gives_the_name(void **state)
{
	(void)state;
	qualname(5, "inner", "inner");   /* not a def line */
	qualname(40, "gone", "gone");    /* past the end: the file changed */
	qualname(12, "other", "other");  /* another function's line */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rates_in_range),
		cmocka_unit_test(bad_rates_name_the_limit),
		cmocka_unit_test(the_limit_is_pmetrics_or_the_kernels),
		cmocka_unit_test(qualnames_from_the_source),
		cmocka_unit_test(a_source_that_does_not_show_it_gives_the_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
