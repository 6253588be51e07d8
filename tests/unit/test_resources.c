// SPDX-License-Identifier: MIT
/* Unit tests of the resource sampler's pure parts: the upstream
 * environment settings and flag overrides, command line formatting as
 * psutil splits it, Python fnmatch semantics, the kernel's cputime
 * adjustment, the command field's quoting, and sd_notify. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include "resources.h"
#include "sd_notify.h"
#include "resource_procfs.h"
#include "span_resources.h"

#define ENV "OT_SYSTEM_RESOURCE_TRACKER_"

static void clear_env(void)
{
	unsetenv(ENV "ENABLED");
	unsetenv(ENV "PROCESS_FILTERS");
	unsetenv(ENV "REFRESH_INTERVAL");
	unsetenv(ENV "STORAGE_DIR");
	unsetenv(ENV "LOGGING_LEVEL");
}

static int setup(void **state)
{
	(void)state;
	clear_env();
	return 0;
}

static void defaults_match_upstream(void **state)
{
	struct resource_opts o;
	char err[256];

	(void)state;
	assert_int_equal(resource_opts_from_env(&o, err, sizeof(err)), 0);
	assert_false(o.enabled);
	assert_int_equal(o.n_filters, 2);
	assert_string_equal(o.filters[0], "/opt/opentrons*");
	assert_string_equal(o.filters[1], "python3*");
	assert_false(o.filters_set);
	assert_true(o.interval_s == 10.0);
	assert_string_equal(o.storage_dir, "/data/performance_metrics_data/");
	assert_int_equal(o.log_level, LOG_INFO);
}

static void env_values_are_read(void **state)
{
	struct resource_opts o;
	char err[256];

	(void)state;
	setenv(ENV "ENABLED", "TrUe", 1);
	setenv(ENV "PROCESS_FILTERS", " a* , ,b?c,, ", 1);
	setenv(ENV "REFRESH_INTERVAL", " 2.5 ", 1);
	setenv(ENV "STORAGE_DIR", "/tmp/x", 1);
	setenv(ENV "LOGGING_LEVEL", "DEBUG", 1);
	assert_int_equal(resource_opts_from_env(&o, err, sizeof(err)), 0);
	assert_true(o.enabled);
	assert_int_equal(o.n_filters, 2);
	assert_string_equal(o.filters[0], "a*");
	assert_string_equal(o.filters[1], "b?c");
	assert_true(o.filters_set);
	assert_true(o.interval_s == 2.5);
	assert_string_equal(o.storage_dir, "/tmp/x");
	assert_int_equal(o.log_level, LOG_DEBUG);
}

static void expect_env_rejected(const char *name, const char *value, const char *needle)
{
	struct resource_opts o;
	char err[256] = "";

	clear_env();
	setenv(name, value, 1);
	assert_int_equal(resource_opts_from_env(&o, err, sizeof(err)), -1);
	assert_non_null(strstr(err, needle));
	assert_null(strchr(err, '\n')); /* one line */
}

static void bad_env_values_are_rejected(void **state)
{
	(void)state;
	expect_env_rejected(ENV "ENABLED", "yes", "ENABLED must be true or false");
	expect_env_rejected(ENV "ENABLED", "", "ENABLED");
	expect_env_rejected(ENV "PROCESS_FILTERS", " , ,", "PROCESS_FILTERS must be");
	expect_env_rejected(ENV "PROCESS_FILTERS", "", "PROCESS_FILTERS");
	expect_env_rejected(ENV "REFRESH_INTERVAL", "0.5", "at least 1.0");
	expect_env_rejected(ENV "REFRESH_INTERVAL", "ten", "a number");
	expect_env_rejected(ENV "REFRESH_INTERVAL", "10s", "a number"); /* env: float() only */
	expect_env_rejected(ENV "REFRESH_INTERVAL", "nan", "a number");
	expect_env_rejected(ENV "REFRESH_INTERVAL", "0x10", "a number"); /* float() has no hex */
	expect_env_rejected(ENV "STORAGE_DIR", "data/pm", "absolute");
	expect_env_rejected(ENV "LOGGING_LEVEL", "info", "LOGGING_LEVEL must be one of");
	expect_env_rejected(ENV "LOGGING_LEVEL", "VERBOSE", "LOGGING_LEVEL");
}

/* A flag replaces its variable: a bad value there is not judged, but it
 * still is where no flag replaces it. */
static void flags_override_the_environment_unread(void **state)
{
	static const char *const filters[] = { "python3*" };
	struct resource_opts o;
	char err[256];

	(void)state;
	setenv(ENV "REFRESH_INTERVAL", "abc", 1);
	setenv(ENV "PROCESS_FILTERS", " , ,", 1);
	assert_int_equal(resource_opts_for_record(&o, filters, 1, 2.0, err, sizeof(err)), 0);
	assert_true(o.interval_s == 2.0);
	assert_int_equal(resource_opts_for_record(&o, filters, 1, 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "REFRESH_INTERVAL"));
	assert_int_equal(resource_opts_for_record(&o, NULL, 0, 2.0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "PROCESS_FILTERS"));
}

/* From 1 s (upstream's minimum) to a day; a huge value once overflowed
 * the nanosecond schedule into a busy loop. */
static void interval_range_is_one_second_to_one_day(void **state)
{
	static const char *const bad[] = { "86401", "2e10", "1e308", "0.999", "inf", "nan", "-1" };
	struct resource_opts o;
	char err[256];

	(void)state;
	assert_int_equal(resource_opts_from_env(&o, err, sizeof(err)), 0);
	assert_int_equal(resource_opts_set_interval(&o, "86400", err, sizeof(err)), 0);
	assert_true(o.interval_s == 86400.0);
	assert_int_equal(resource_opts_set_interval(&o, "1s", err, sizeof(err)), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(resource_opts_set_interval(&o, bad[i], err, sizeof(err)), -1);
		assert_non_null(strstr(err, "86400"));
		assert_null(strchr(err, '\n'));
	}
	assert_true(o.interval_s == 1.0);
	expect_env_rejected(ENV "REFRESH_INTERVAL", "2e10", "at most 86400 seconds (1 day)");
}

static void control_characters_in_names_are_rejected(void **state)
{
	struct resource_opts o;
	char err[256];

	(void)state;
	assert_int_equal(resource_opts_from_env(&o, err, sizeof(err)), 0);
	assert_int_equal(resource_opts_add_filter(&o, "python3\n*", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "'python3?*' holds a control character"));
	expect_env_rejected(ENV "STORAGE_DIR", "/data/x\ny", "without control characters");
	expect_env_rejected(ENV "ENABLED", "tr\nue", "not \"tr?ue\"");
}

static void flags_override_env(void **state)
{
	struct resource_opts o;
	char err[256];

	(void)state;
	setenv(ENV "PROCESS_FILTERS", "x*,y*", 1);
	assert_int_equal(resource_opts_from_env(&o, err, sizeof(err)), 0);
	assert_int_equal(resource_opts_add_filter(&o, "/opt/opentrons*", err, sizeof(err)), 0);
	assert_int_equal(resource_opts_add_filter(&o, "python3*", err, sizeof(err)), 0);
	assert_int_equal(o.n_filters, 2);
	assert_string_equal(o.filters[0], "/opt/opentrons*");
	assert_string_equal(o.filters[1], "python3*");
	assert_int_equal(resource_opts_add_filter(&o, "", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "non-empty"));

	assert_int_equal(resource_opts_set_interval(&o, "10s", err, sizeof(err)), 0);
	assert_true(o.interval_s == 10.0);
	assert_int_equal(resource_opts_set_interval(&o, "1", err, sizeof(err)), 0);
	assert_true(o.interval_s == 1.0);
	assert_int_equal(resource_opts_set_interval(&o, "0.9s", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "--interval must be at least 1.0"));
	assert_int_equal(resource_opts_set_interval(&o, "5m", err, sizeof(err)), -1);
	assert_true(o.interval_s == 1.0); /* unchanged on error */
}

static void too_many_filters_are_rejected(void **state)
{
	struct resource_opts o;
	char err[256];

	(void)state;
	assert_int_equal(resource_opts_from_env(&o, err, sizeof(err)), 0);
	for (int i = 0; i < RESOURCE_MAX_FILTERS; i++)
		assert_int_equal(resource_opts_add_filter(&o, "a*", err, sizeof(err)), 0);
	assert_int_equal(resource_opts_add_filter(&o, "a*", err, sizeof(err)), -1);
}

static void format(const char *raw, size_t len, const char *want)
{
	char out[256];

	resource_format_command(raw, len, out, sizeof(out));
	assert_string_equal(out, want);
}

static void command_lines_read_like_psutil(void **state)
{
	(void)state;
	/* NUL-separated argv, trailing NUL. */
	format("python3\0-m\0robot_server\0", 24, "python3 -m robot_server");
	/* an argument holding a space stays one argument */
	format("sh\0-c\0echo a b\0", 16, "sh -c echo a b");
	/* each argument and the whole are trimmed */
	format(" python3 \0 x\t\0", 14, "python3 x");
	/* setproctitle() style: one string with spaces, no NUL */
	format("nginx: worker process", 21, "nginx: worker process");
	/* one NUL-terminated string with spaces: split on spaces */
	format("postgres: writer  \0", 19, "postgres: writer");
	/* empty (kernel thread, zombie) */
	format("", 0, "");
	/* empty arguments keep their separators, as " ".join() does */
	format("a\0\0b\0", 5, "a  b");
}

static void command_output_is_bounded(void **state)
{
	char out[8];

	(void)state;
	resource_format_command("abcdef\0ghijkl\0", 14, out, sizeof(out));
	assert_string_equal(out, "abcdef");
}

static void filters_use_python_fnmatch_semantics(void **state)
{
	struct resource_opts o = { .n_filters = 3 };

	(void)state;
	o.filters[0] = "/opt/opentrons*";
	o.filters[1] = "python3 -m uvicorn*";
	o.filters[2] = "C:\\x*";
	/* '*' crosses '/' (no FNM_PATHNAME) */
	assert_true(resource_command_matches(&o, "/opt/opentrons-app/opentrons --type=zygote"));
	assert_true(resource_command_matches(&o, "python3 -m uvicorn robot_server.app:app"));
	assert_false(resource_command_matches(&o, "/usr/bin/python3 -m uvicorn"));
	/* case-sensitive */
	assert_false(resource_command_matches(&o, "/OPT/opentrons"));
	/* a backslash is literal, as in Python */
	assert_true(resource_command_matches(&o, "C:\\xyz"));
	o.filters[0] = ".hidden*";
	assert_true(resource_command_matches(&o, ".hidden/x")); /* no FNM_PERIOD */
	o.filters[0] = "[!a]*";
	assert_true(resource_command_matches(&o, "bash"));
	assert_false(resource_command_matches(&o, "awk"));
}

static void cputime_splits_runtime_by_tick_ratio(void **state)
{
	struct resource_cputime prev = { 0 }, raw, out;

	(void)state;
	/* 3:1 tick ratio of 400 ms exact runtime -> 300 ms user, 100 ms sys */
	raw = (struct resource_cputime){ 240000000, 80000000, 400000000 };
	resource_cputime_adjust(&prev, &raw, &out);
	assert_int_equal(out.utime_ns, 300000000);
	assert_int_equal(out.stime_ns, 100000000);
	/* no system ticks: all runtime is user time */
	prev = (struct resource_cputime){ 0 };
	raw = (struct resource_cputime){ 4000000, 0, 5000000 };
	resource_cputime_adjust(&prev, &raw, &out);
	assert_int_equal(out.utime_ns, 5000000);
	assert_int_equal(out.stime_ns, 0);
}

static void cputime_never_goes_down(void **state)
{
	struct resource_cputime prev = { 0 }, raw, out;

	(void)state;
	raw = (struct resource_cputime){ 100, 100, 1000 };
	resource_cputime_adjust(&prev, &raw, &out);
	assert_int_equal(out.utime_ns, 500);
	assert_int_equal(out.stime_ns, 500);
	/* the ratio swings to all-user: stime holds, utime takes the rest */
	raw = (struct resource_cputime){ 300, 0, 1200 };
	resource_cputime_adjust(&prev, &raw, &out);
	assert_int_equal(out.stime_ns, 500);
	assert_int_equal(out.utime_ns, 700);
	/* runtime did not grow: the previous split is kept */
	raw = (struct resource_cputime){ 0, 900, 1100 };
	resource_cputime_adjust(&prev, &raw, &out);
	assert_int_equal(out.utime_ns, 700);
	assert_int_equal(out.stime_ns, 500);
}

static void times_are_cut_to_clock_ticks(void **state)
{
	struct resource_clock c = { .clk_tck = 100, .page_size = 4096, .boot_time_s = 1720546000.0 };

	(void)state;
	assert_true(resource_ticks_seconds(&c, 129999999) == 0.12);
	assert_true(resource_ticks_seconds(&c, 130000000) == 0.13);
	/* psutil: ticks / CLK_TCK + btime */
	assert_true(resource_start_seconds(&c, 820170000000ULL) == 82017 / 100.0 + 1720546000.0);
}

static const char *row_text(struct csv_row *row)
{
	assert_true(csv_row_end(row) > 0);
	row->buf[row->len] = '\0';
	return row->buf;
}

static void command_field_is_quoted_only_when_needed(void **state)
{
	static struct csv_row row;
	static char longcmd[5000];

	(void)state;
	csv_row_begin(&row, CSV_LAYOUT_CONTEXT);
	resource_csv_command(&row, "python3 -m x");
	assert_string_equal(row_text(&row), "python3 -m x\n");

	csv_row_begin(&row, CSV_LAYOUT_CONTEXT);
	resource_csv_command(&row, "sh -c a,\"b\"");
	assert_string_equal(row_text(&row), "\"sh -c a,\"\"b\"\"\"\n");

	csv_row_begin(&row, CSV_LAYOUT_ACTIVITY);
	resource_csv_command(&row, "sh -c a,\"b\"");
	assert_string_equal(row_text(&row), "\"sh -c a,\"\"b\"\"\"\r\n");

	memset(longcmd, 'x', sizeof(longcmd) - 1);
	csv_row_begin(&row, CSV_LAYOUT_CONTEXT);
	resource_csv_command(&row, longcmd);
	assert_int_equal(strlen(row_text(&row)), 4096 + 1);
}

static void notify_sends_ready_to_the_socket(void **state)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	char name[64], buf[64];
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	ssize_t n;

	(void)state;
	assert_true(fd >= 0);
	/* abstract socket: '@' in NOTIFY_SOCKET, NUL in sun_path */
	snprintf(name, sizeof(name), "@pmetrics-test-%d", (int)getpid());
	memcpy(addr.sun_path, name, strlen(name));
	addr.sun_path[0] = '\0';
	assert_int_equal(bind(fd, (struct sockaddr *)&addr,
			      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(name))), 0);
	setenv("NOTIFY_SOCKET", name, 1);
	sd_notify_ready();
	n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
	assert_int_equal(n, 7);
	buf[n] = '\0';
	assert_string_equal(buf, "READY=1");
	close(fd);

	unsetenv("NOTIFY_SOCKET");
	assert_int_equal(sd_notify_state("READY=1"), 1); /* not a service */
	setenv("NOTIFY_SOCKET", "relative", 1);
	assert_int_equal(sd_notify_state("READY=1"), -EINVAL);
	unsetenv("NOTIFY_SOCKET");
}

/* The record flags build on the environment: --resources enables
 * whatever ENABLED says, flag globs replace the env's, a flag interval
 * replaces the env's; a bad env value still fails. */
static void record_options_are_env_then_flags(void **state)
{
	const char *flags[] = { "python3 -m robot_server*" };
	struct resource_opts o;
	char err[256];

	(void)state;
	setenv("OT_SYSTEM_RESOURCE_TRACKER_ENABLED", "false", 1);
	setenv("OT_SYSTEM_RESOURCE_TRACKER_PROCESS_FILTERS", "a*,b*", 1);
	setenv("OT_SYSTEM_RESOURCE_TRACKER_REFRESH_INTERVAL", "30", 1);
	assert_int_equal(resource_opts_for_record(&o, flags, 1, 0, err, sizeof(err)), 0);
	assert_true(o.enabled);
	assert_int_equal(o.n_filters, 1);
	assert_string_equal(o.filters[0], "python3 -m robot_server*");
	assert_true(o.interval_s == 30.0);
	assert_int_equal(resource_opts_for_record(&o, NULL, 0, 2.5, err, sizeof(err)), 0);
	assert_int_equal(o.n_filters, 2);
	assert_string_equal(o.filters[1], "b*");
	assert_true(o.interval_s == 2.5);
}

/* A span's columns from its two snapshots: differences, blocked as the
 * rest of the duration (0 when the counters overshoot it), pages in kB,
 * and a counter that went backwards gives 0, not a huge number. */
static void span_context_columns_from_snapshots(void **state)
{
	struct span_resource_event e = {
		.span = { .start_ns = 1000, .duration_ns = 300000000 },
		.begin = { .oncpu_ns = 5000000, .runq_wait_ns = 1000000, .nvcsw = 10, .nivcsw = 3,
			   .migrations = 1, .min_flt = 100, .maj_flt = 2, .rss_pages = 256 },
		.end = { .oncpu_ns = 105000000, .runq_wait_ns = 51000000, .nvcsw = 12, .nivcsw = 2,
			 .migrations = 4, .min_flt = 16484, .maj_flt = 2, .rss_pages = 16640 },
		.rss_peak_pages = 20000,
	};
	struct span_resource_row r;

	(void)state;
	span_resource_row_from(&e, 4096, &r);
	assert_int_equal(r.oncpu_ns, 100000000);
	assert_int_equal(r.runq_wait_ns, 50000000);
	assert_int_equal(r.blocked_ns, 150000000);
	assert_int_equal(r.nvcsw, 2);
	assert_int_equal(r.nivcsw, 0); /* went backwards: 0 */
	assert_int_equal(r.migrations, 3);
	assert_int_equal(r.min_flt, 16384);
	assert_int_equal(r.maj_flt, 0);
	assert_int_equal(r.rss_start_kb, 1024);
	assert_int_equal(r.rss_end_kb, 66560);
	assert_int_equal(r.rss_peak_kb, 80000);
	e.span.duration_ns = 140000000; /* oncpu + runq = 150 ms > 140 ms */
	span_resource_row_from(&e, 16384, &r);
	assert_int_equal(r.blocked_ns, 0);
	assert_int_equal(r.rss_start_kb, 4096);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(defaults_match_upstream, setup),
		cmocka_unit_test_setup(env_values_are_read, setup),
		cmocka_unit_test_setup(bad_env_values_are_rejected, setup),
		cmocka_unit_test_setup(interval_range_is_one_second_to_one_day, setup),
		cmocka_unit_test_setup(flags_override_the_environment_unread, setup),
		cmocka_unit_test_setup(control_characters_in_names_are_rejected, setup),
		cmocka_unit_test_setup(flags_override_env, setup),
		cmocka_unit_test_setup(too_many_filters_are_rejected, setup),
		cmocka_unit_test(command_lines_read_like_psutil),
		cmocka_unit_test(command_output_is_bounded),
		cmocka_unit_test(filters_use_python_fnmatch_semantics),
		cmocka_unit_test(cputime_splits_runtime_by_tick_ratio),
		cmocka_unit_test(cputime_never_goes_down),
		cmocka_unit_test(times_are_cut_to_clock_ticks),
		cmocka_unit_test(command_field_is_quoted_only_when_needed),
		cmocka_unit_test(notify_sends_ready_to_the_socket),
		cmocka_unit_test_setup(record_options_are_env_then_flags, setup),
		cmocka_unit_test(span_context_columns_from_snapshots),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
