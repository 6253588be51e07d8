// SPDX-License-Identifier: MIT
/* --probe and --duration parsing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "probe_spec.h"

static struct probe_spec spec;
static char err[1024];

static void native_with_path(void **state)
{
	(void)state;
	assert_int_equal(probe_spec_parse("ANALYZING_PROTOCOL=/opt/app/bin/server:analyze_protocol",
					  &spec, err, sizeof(err)), 0);
	assert_string_equal(spec.state, "ANALYZING_PROTOCOL");
	assert_int_equal(spec.kind, PROBE_NATIVE);
	assert_string_equal(spec.binary, "/opt/app/bin/server");
	assert_string_equal(spec.symbol, "analyze_protocol");
	assert_string_equal(spec.target, "/opt/app/bin/server:analyze_protocol");
}

static void native_soname_and_main(void **state)
{
	(void)state;
	assert_int_equal(probe_spec_parse("M=libc.so.6:malloc", &spec, err, sizeof(err)), 0);
	assert_string_equal(spec.binary, "libc.so.6");
	assert_string_equal(spec.symbol, "malloc");
	assert_int_equal(probe_spec_parse("A1_b=:analyze", &spec, err, sizeof(err)), 0);
	assert_string_equal(spec.binary, "");
	assert_string_equal(spec.symbol, "analyze");
}

static void python_spec(void **state)
{
	(void)state;
	assert_int_equal(probe_spec_parse("G=py:robot_server.protocols.router:"
					  "create_protocol.<locals>._get_cached_protocol_analysis",
					  &spec, err, sizeof(err)), 0);
	assert_int_equal(spec.kind, PROBE_PYTHON);
	assert_string_equal(spec.binary, "robot_server.protocols.router");
	assert_string_equal(spec.symbol, "create_protocol.<locals>._get_cached_protocol_analysis");
	/* __main__ names no file; an outer function's <locals> no function */
	assert_int_equal(probe_spec_parse("M=py:__main__:leaf", &spec, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "py:server:leaf for server.py"));
	assert_int_equal(probe_spec_parse("L=py:a1:outer.<locals>", &spec, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "e.g. outer.<locals>.inner"));
	assert_int_equal(probe_spec_parse("M=py:app.__main__:run", &spec, err, sizeof(err)), 0);
}

static void rejects_malformed(void **state)
{
	static const char *const bad[] = {
		"NOEQUALS", "=:f", "BAD-STATE=:f", "S p=:f", "S=", "S=nocolon", "S=bin:",
		"S=:f g", "S=py:", "S=py:mod", "S=py::Q", "S=py:mod:", "S=py:mo d:f",
		"S=py:mod:f(x)", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=:f",
	};
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(probe_spec_parse(bad[i], &spec, err, sizeof(err)), -1);
		assert_true(strlen(err) > 10); /* a reason was given */
		assert_null(strchr(err, '\n'));
	}
}

/* A control character would split the one-line error that echoes it. */
static void rejects_control_characters(void **state)
{
	(void)state;
	assert_int_equal(probe_spec_parse("S=lib\nx.so:f", &spec, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "'S=lib?x.so:f'"));
	assert_null(strchr(err, '\n'));
	assert_int_equal(probe_spec_parse("S=/opt/a\tb:f", &spec, err, sizeof(err)), -1);
	assert_int_equal(probe_spec_parse("S=/opt/a b:f", &spec, err, sizeof(err)), 0);
	/* in the state name, and with no '=' at all: an escape sequence
	 * would reach the terminal */
	assert_int_equal(probe_spec_parse("A\033[31m=:main", &spec, err, sizeof(err)), -1);
	assert_null(strchr(err, '\033'));
	assert_int_equal(probe_spec_parse("NO\033EQUALS", &spec, err, sizeof(err)), -1);
	assert_null(strchr(err, '\033'));
}

static void durations(void **state)
{
	uint64_t ns;
	(void)state;
	assert_int_equal(duration_parse("500ms", &ns), 0);
	assert_int_equal(ns, 500000000ull);
	assert_int_equal(duration_parse("30s", &ns), 0);
	assert_int_equal(ns, 30000000000ull);
	assert_int_equal(duration_parse("5m", &ns), 0);
	assert_int_equal(ns, 300000000000ull);
	assert_int_equal(duration_parse("1.5s", &ns), 0);
	assert_int_equal(ns, 1500000000ull);
	assert_int_equal(duration_parse("2h", &ns), 0);
	assert_int_equal(ns, 7200000000000ull);
	assert_int_equal(duration_parse("250us", &ns), 0);
	assert_int_equal(ns, 250000ull);
}

static void bad_durations(void **state)
{
	static const char *const bad[] = { "", "30", "s", "-1s", "0s", "1x", "1 s", "ms5",
					   "nan s", "infs", "1e30h", "1.5.2s" };
	uint64_t ns;
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(duration_parse(bad[i], &ns), -1);
}

/* --duration: from 1 ms to a year, and the error names the range. */
static void duration_option_range(void **state)
{
	static const char *const out_of_range[] = { "250us", "999us", "8761h", "1e9h", "1e308h" };
	char err[256];
	uint64_t ns;
	(void)state;
	assert_int_equal(duration_option_parse("1ms", &ns, err, sizeof(err)), 0);
	assert_int_equal(ns, 1000000ull);
	assert_int_equal(duration_option_parse("8760h", &ns, err, sizeof(err)), 0);
	assert_int_equal(ns, 8760ull * 3600 * 1000000000);
	for (size_t i = 0; i < sizeof(out_of_range) / sizeof(out_of_range[0]); i++) {
		assert_int_equal(duration_option_parse(out_of_range[i], &ns, err, sizeof(err)), -1);
		assert_non_null(strstr(err, "it must be from 1ms to 8760h (1 year)"));
	}
	assert_int_equal(duration_option_parse("10", &ns, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "bad --duration '10': use a number with a unit"));
	assert_non_null(strstr(err, "from 1ms to 8760h"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(native_with_path),
		cmocka_unit_test(native_soname_and_main),
		cmocka_unit_test(python_spec),
		cmocka_unit_test(rejects_malformed),
		cmocka_unit_test(rejects_control_characters),
		cmocka_unit_test(durations),
		cmocka_unit_test(duration_option_range),
		cmocka_unit_test(bad_durations),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
