// SPDX-License-Identifier: MIT
/* Both CSV layouts byte for byte, Python float repr, whole-row writes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>
#include <signal.h>
#include <sys/resource.h>

#include "csv_writer.h"

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	static char buf[65536];
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void span_row(struct csv_row *row, enum csv_layout layout, const char *state)
{
	csv_row_begin(row, layout);
	csv_row_str(row, state);
	csv_row_u64(row, 1718739269730290312ull);
	csv_row_u64(row, 14028043893ull);
	assert_true(csv_row_end(row) > 0);
}

static void context_row(void **state)
{
	struct csv_row row;
	(void)state;
	span_row(&row, CSV_LAYOUT_CONTEXT, "ANALYZING_PROTOCOL");
	assert_int_equal(row.len, strlen("ANALYZING_PROTOCOL,1718739269730290312,14028043893\n"));
	assert_memory_equal(row.buf, "ANALYZING_PROTOCOL,1718739269730290312,14028043893\n", row.len);
}

static void activity_row(void **state)
{
	static const char want[] = "\"ANALYZING_PROTOCOL\",\"1718739269730290312\",\"14028043893\"\r\n";
	struct csv_row row;
	(void)state;
	span_row(&row, CSV_LAYOUT_ACTIVITY, "ANALYZING_PROTOCOL");
	assert_int_equal(row.len, strlen(want));
	assert_memory_equal(row.buf, want, row.len);
}

static void activity_doubles_quotes(void **state)
{
	struct csv_row row;
	(void)state;
	csv_row_begin(&row, CSV_LAYOUT_ACTIVITY);
	csv_row_str(&row, "python3 -c \"print(1)\"");
	csv_row_str(&row, "");
	csv_row_end(&row);
	row.buf[row.len] = '\0';
	assert_string_equal(row.buf, "\"python3 -c \"\"print(1)\"\"\",\"\"\r\n");
}

static void python_repr_floats(void **state)
{
	static const struct { double v; const char *want; } cases[] = {
		{ 1720546820.17, "1720546820.17" }, { 12.34, "12.34" }, { 0.0, "0.0" },
		{ 1.0, "1.0" }, { 10.0, "10.0" }, { 0.1, "0.1" }, { 1e-05, "1e-05" },
		{ 0.0001, "0.0001" }, { 123456789012345.0, "123456789012345.0" },
		{ 1e16, "1e+16" }, { 1.5e16, "1.5e+16" }, { 0.3333333333333333, "0.3333333333333333" },
		{ 2.5, "2.5" }, { -3.75, "-3.75" }, { 100.0 / 3.0, "33.333333333333336" },
		{ 5e-324, "5e-324" }, { 1.7976931348623157e308, "1.7976931348623157e+308" },
	};
	char buf[64];
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		format_pyfloat(buf, sizeof(buf), cases[i].v);
		assert_string_equal(buf, cases[i].want);
	}
}

static void file_appends_and_writes_header(void **state)
{
	static const char *const header[] = { "state_name", "function_start_time", "duration" };
	char dir[] = "/tmp/pm-csv-XXXXXX", path[256], err[256];
	struct csv_row row;
	struct csv_file *f;
	(void)state;

	assert_non_null(mkdtemp(dir));
	for (int round = 0; round < 2; round++) {
		f = csv_file_open(dir, "robot_context_data", header, 3, CSV_LAYOUT_CONTEXT, err, sizeof(err));
		assert_non_null(f);
		span_row(&row, CSV_LAYOUT_CONTEXT, round ? "B" : "A");
		assert_int_equal(csv_file_append(f, &row), 0);
		assert_int_equal(csv_file_close(f), 0);
	}
	snprintf(path, sizeof(path), "%s/robot_context_data", dir);
	assert_string_equal(read_file(path), "A,1718739269730290312,14028043893\n"
					     "B,1718739269730290312,14028043893\n");
	unlink(path);
	snprintf(path, sizeof(path), "%s/robot_context_data_headers", dir);
	/* exactly one line, no trailing newline, as upstream */
	assert_string_equal(read_file(path), "state_name,function_start_time,duration");
	unlink(path);
	rmdir(dir);
}

/* A file size limit makes write() stop part way through a row, as a
 * full disk does: the torn row must be cut back, whole rows kept. */
static void torn_write_is_cut_back_to_whole_rows(void **state)
{
	static const char *const header[] = { "h" };
	char dir[] = "/tmp/pm-csv-XXXXXX", path[256], err[256];
	struct rlimit old, small;
	struct csv_row row;
	struct csv_file *f;
	(void)state;

	assert_non_null(mkdtemp(dir));
	signal(SIGXFSZ, SIG_IGN);
	f = csv_file_open(dir, "robot_context_data", header, 1, CSV_LAYOUT_CONTEXT, err, sizeof(err));
	assert_non_null(f);
	for (int i = 0; i < 3; i++) { /* 3 rows of 52 bytes: the limit cuts the second */
		span_row(&row, CSV_LAYOUT_CONTEXT, "ANALYZING_PROTOCOL");
		assert_int_equal(csv_file_append(f, &row), 0);
	}
	getrlimit(RLIMIT_FSIZE, &old);
	small.rlim_cur = 100; /* soft limit only: raising it back needs no privilege */
	small.rlim_max = old.rlim_max;
	fflush(stdout); /* the limit would also cut the test's own log */
	fflush(stderr);
	setrlimit(RLIMIT_FSIZE, &small);
	assert_int_equal(csv_file_flush(f), -EFBIG);
	setrlimit(RLIMIT_FSIZE, &old);
	assert_int_equal(csv_file_rows_written(f), 1);
	assert_int_equal(csv_file_dropped(f), 2);
	/* later rows are counted as dropped, never half-written */
	assert_int_equal(csv_file_append(f, &row), 0);
	assert_int_equal(csv_file_close(f), -EFBIG);
	snprintf(path, sizeof(path), "%s/robot_context_data", dir);
	assert_string_equal(read_file(path), "ANALYZING_PROTOCOL,1718739269730290312,14028043893\n");
	unlink(path);
	snprintf(path, sizeof(path), "%s/robot_context_data_headers", dir);
	unlink(path);
	rmdir(dir);
}

static void discard_removes_only_new_files(void **state)
{
	static const char *const header[] = { "a", "b" };
	char dir[] = "/tmp/pm-csv-XXXXXX", path[256], err[256];
	struct csv_file *f;
	(void)state;

	assert_non_null(mkdtemp(dir));
	f = csv_file_open(dir, "data", header, 2, CSV_LAYOUT_ACTIVITY, err, sizeof(err));
	assert_non_null(f);
	snprintf(path, sizeof(path), "%s/data_headers", dir);
	assert_string_equal(read_file(path), "a,b"); /* bare in both layouts */
	csv_file_discard(f);
	snprintf(path, sizeof(path), "%s/data", dir);
	assert_int_not_equal(access(path, F_OK), 0);
	snprintf(path, sizeof(path), "%s/data_headers", dir);
	assert_int_not_equal(access(path, F_OK), 0);
	assert_int_equal(rmdir(dir), 0);
}

/* Python's csv.writer (QUOTE_MINIMAL, lineterminator "\n") on the same
 * fields: ['a,b', 'say "hi"', 'cr\rlf\n', '', 'plain', ' sp '] */
static void context_quotes_fields_like_python_csv(void **state)
{
	static const char want[] = "\"a,b\",\"say \"\"hi\"\"\",\"cr\rlf\n\",,plain, sp \n";
	static const char *const fields[] = { "a,b", "say \"hi\"", "cr\rlf\n", "", "plain", " sp " };
	struct csv_row row;
	(void)state;

	csv_row_begin(&row, CSV_LAYOUT_CONTEXT);
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		csv_row_str(&row, fields[i]);
	assert_int_equal(csv_row_end(&row), (int)strlen(want));
	assert_memory_equal(row.buf, want, row.len);
}

/* Python's csv.writer with QUOTE_ALL and "\r\n": line breaks stay inside
 * the quotes, quotes are doubled. */
static void activity_keeps_line_breaks_inside_quotes(void **state)
{
	static const char want[] = "\"a,b\",\"say \"\"hi\"\"\",\"cr\rlf\n\",\"\"\r\n";
	struct csv_row row;
	(void)state;

	csv_row_begin(&row, CSV_LAYOUT_ACTIVITY);
	csv_row_str(&row, "a,b");
	csv_row_str(&row, "say \"hi\"");
	csv_row_str(&row, "cr\rlf\n");
	csv_row_str(&row, "");
	assert_int_equal(csv_row_end(&row), (int)strlen(want));
	assert_memory_equal(row.buf, want, row.len);
}

/* Sets a file size limit of LIMIT bytes (soft only) for one flush. */
static int flush_under_limit(struct csv_file *f, rlim_t limit)
{
	struct rlimit old, small;
	int ret;

	signal(SIGXFSZ, SIG_IGN);
	getrlimit(RLIMIT_FSIZE, &old);
	small.rlim_cur = limit;
	small.rlim_max = old.rlim_max;
	fflush(stdout); /* the limit would also cut the test's own log */
	fflush(stderr);
	setrlimit(RLIMIT_FSIZE, &small);
	ret = csv_file_flush(f);
	setrlimit(RLIMIT_FSIZE, &old);
	return ret;
}

/* A quoted line break is not a row end: a write cut inside the third row
 * keeps two rows, counts two, and leaves no part of the third. */
static void torn_write_counts_rows_not_line_breaks(void **state)
{
	static const char *const header[] = { "h" };
	char dir[] = "/tmp/pm-csv-XXXXXX", path[256], err[256];
	struct csv_row row;
	struct csv_file *f;
	(void)state;

	assert_non_null(mkdtemp(dir));
	f = csv_file_open(dir, "data", header, 1, CSV_LAYOUT_ACTIVITY, err, sizeof(err));
	assert_non_null(f);
	for (int i = 0; i < 4; i++) { /* 29 bytes each */
		csv_row_begin(&row, CSV_LAYOUT_ACTIVITY);
		csv_row_str(&row, "A\nB");
		csv_row_u64(&row, 1718739269730290312ull);
		assert_int_equal(csv_row_end(&row), 29);
		assert_int_equal(csv_file_append(f, &row), 0);
	}
	assert_int_equal(flush_under_limit(f, 70), -EFBIG);
	assert_int_equal(csv_file_rows_written(f), 2);
	assert_int_equal(csv_file_dropped(f), 2);
	assert_int_equal(csv_file_close(f), -EFBIG);
	snprintf(path, sizeof(path), "%s/data", dir);
	assert_string_equal(read_file(path), "\"A\nB\",\"1718739269730290312\"\r\n"
					     "\"A\nB\",\"1718739269730290312\"\r\n");
	unlink(path);
	snprintf(path, sizeof(path), "%s/data_headers", dir);
	unlink(path);
	rmdir(dir);
}

/* Opens DIR/data (made with CONTENT) in LAYOUT, appends one span row of
 * state B and returns the file's bytes. */
static const char *append_after(const char *dir, const char *content, enum csv_layout layout)
{
	static const char *const header[] = { "h" };
	char path[256], err[256];
	struct csv_row row;
	struct csv_file *f;
	FILE *out;

	snprintf(path, sizeof(path), "%s/data", dir);
	out = fopen(path, "w");
	fputs(content, out);
	fclose(out);
	f = csv_file_open(dir, "data", header, 1, layout, err, sizeof(err));
	assert_non_null(f);
	span_row(&row, layout, "B");
	assert_int_equal(csv_file_append(f, &row), 0);
	assert_int_equal(csv_file_close(f), 0);
	return read_file(path);
}

static void torn_last_line_is_ended_before_new_rows(void **state)
{
	char dir[] = "/tmp/pm-csv-XXXXXX", cmd[64];
	(void)state;

	assert_non_null(mkdtemp(dir));
	assert_string_equal(append_after(dir, "A,1,2\nA,17187", CSV_LAYOUT_CONTEXT),
			    "A,1,2\nA,17187\nB,1718739269730290312,14028043893\n");
	/* a quote the torn row left open is closed first */
	assert_string_equal(append_after(dir, "\"A\",\"1\",\"2\"\r\n\"A\",\"17", CSV_LAYOUT_ACTIVITY),
			    "\"A\",\"1\",\"2\"\r\n\"A\",\"17\"\r\n"
			    "\"B\",\"1718739269730290312\",\"14028043893\"\r\n");
	assert_string_equal(append_after(dir, "\"A\",\"1\",\"2\"\r", CSV_LAYOUT_ACTIVITY),
			    "\"A\",\"1\",\"2\"\r\n\"B\",\"1718739269730290312\",\"14028043893\"\r\n");
	/* a whole last line is left alone */
	assert_string_equal(append_after(dir, "A,1,2\n", CSV_LAYOUT_CONTEXT),
			    "A,1,2\nB,1718739269730290312,14028043893\n");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

/* Opens DIR/data (made with CONTENT) in the context layout, appends one
 * span row of state B, and checks that the file is CONTENT, then FIX,
 * then that row. */
static void appended_after_fix(const char *dir, const char *content, const char *fix)
{
	static const char row_b[] = "B,1718739269730290312,14028043893\n";
	static const char *const header[] = { "h" };
	size_t len = strlen(content), want = len + strlen(fix) + strlen(row_b);
	char path[256], err[256], *got = malloc(want + 1);
	struct csv_row row;
	struct csv_file *f;
	FILE *io;

	assert_non_null(got);
	snprintf(path, sizeof(path), "%s/data", dir);
	io = fopen(path, "w");
	assert_int_equal(fwrite(content, 1, len, io), len);
	fclose(io);
	f = csv_file_open(dir, "data", header, 1, CSV_LAYOUT_CONTEXT, err, sizeof(err));
	assert_non_null(f);
	span_row(&row, CSV_LAYOUT_CONTEXT, "B");
	assert_int_equal(csv_file_append(f, &row), 0);
	assert_int_equal(csv_file_close(f), 0);
	io = fopen(path, "r");
	assert_int_equal(fread(got, 1, want + 1, io), want);
	fclose(io);
	got[want] = '\0';
	assert_memory_equal(got, content, len);
	assert_memory_equal(got + len, fix, strlen(fix));
	assert_string_equal(got + len + strlen(fix), row_b);
	free(got);
}

/* A torn row longer than the last 4 KiB of the file (rows reach 8 KiB:
 * a long command line) whose quote opened before them: it is still
 * closed, or Python's csv would read the next row into the torn field. */
static void a_long_torn_row_is_closed_from_its_start(void **state)
{
	enum { L = 5000 };
	static char content[300000];
	char dir[] = "/tmp/pm-csv-XXXXXX", cmd[64];
	size_t n;
	(void)state;

	assert_non_null(mkdtemp(dir));
	/* a small file: read from its first byte */
	n = (size_t)sprintf(content, "A,1,2\nA,\"");
	memset(content + n, 'x', L);
	content[n + L] = '\0';
	appended_after_fix(dir, content, "\"\n");
	/* a line break inside the long field is not a row's end */
	strcat(content, "\nmore of the field");
	appended_after_fix(dir, content, "\"\n");
	/* a large file whose fields hold commas, quotes and line breaks: the
	 * window read back starts inside some row */
	for (n = 0; n < 200000;)
		n += (size_t)sprintf(content + n, "S,\"a,b \"\"q\"\"\nc\",%zu\n", n);
	n += (size_t)sprintf(content + n, "T,\"");
	memset(content + n, 'x', L);
	content[n + L] = '\0';
	appended_after_fix(dir, content, "\"\n");
	/* the same torn after its quoted field closed, or in a bare field */
	strcat(content, "\",12");
	appended_after_fix(dir, content, "\n");
	content[n - 3] = '\0';
	strcat(content, "T,1234");
	appended_after_fix(dir, content, "\n");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

static void discard_keeps_files_that_were_there(void **state)
{
	static const char *const header[] = { "a", "b" };
	char dir[] = "/tmp/pm-csv-XXXXXX", data[256], head[256], err[256];
	struct csv_file *f;
	FILE *out;
	(void)state;

	assert_non_null(mkdtemp(dir));
	snprintf(data, sizeof(data), "%s/data", dir);
	snprintf(head, sizeof(head), "%s/data_headers", dir);
	out = fopen(data, "w");
	fputs("1,2\n", out);
	fclose(out);
	out = fopen(head, "w");
	fputs("a,b", out);
	fclose(out);
	f = csv_file_open(dir, "data", header, 2, CSV_LAYOUT_CONTEXT, err, sizeof(err));
	assert_non_null(f);
	csv_file_discard(f);
	assert_string_equal(read_file(data), "1,2\n");
	assert_string_equal(read_file(head), "a,b");
	unlink(data);
	unlink(head);
	assert_int_equal(rmdir(dir), 0);
}

static void planted_symlink_is_refused_in_one_line(void **state)
{
	static const char *const header[] = { "h" };
	char dir[] = "/tmp/pm-csv-XXXXXX", path[256], err[512];
	(void)state;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/robot_context_data", dir);
	assert_int_equal(symlink("/etc/passwd", path), 0);
	assert_null(csv_file_open(dir, "robot_context_data", header, 1, CSV_LAYOUT_CONTEXT,
				  err, sizeof(err)));
	assert_non_null(strstr(err, "robot_context_data: it is a symlink"));
	assert_null(strchr(err, '\n'));
	unlink(path);
	/* nothing else was made: no header file */
	assert_int_equal(rmdir(dir), 0);
}

static void layout_names(void **state)
{
	enum csv_layout l;
	(void)state;
	assert_int_equal(csv_layout_parse("context", &l), 0);
	assert_int_equal(l, CSV_LAYOUT_CONTEXT);
	assert_int_equal(csv_layout_parse("activity", &l), 0);
	assert_int_equal(l, CSV_LAYOUT_ACTIVITY);
	assert_int_equal(csv_layout_parse("Context", &l), -1);
}

static void overlong_row_is_refused(void **state)
{
	static char big[CSV_ROW_MAX + 10];
	struct csv_row row;
	(void)state;
	memset(big, 'x', sizeof(big) - 1);
	csv_row_begin(&row, CSV_LAYOUT_CONTEXT);
	csv_row_str(&row, big);
	assert_int_equal(csv_row_end(&row), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(context_row),
		cmocka_unit_test(activity_row),
		cmocka_unit_test(activity_doubles_quotes),
		cmocka_unit_test(python_repr_floats),
		cmocka_unit_test(file_appends_and_writes_header),
		cmocka_unit_test(torn_write_is_cut_back_to_whole_rows),
		cmocka_unit_test(discard_removes_only_new_files),
		cmocka_unit_test(context_quotes_fields_like_python_csv),
		cmocka_unit_test(activity_keeps_line_breaks_inside_quotes),
		cmocka_unit_test(torn_write_counts_rows_not_line_breaks),
		cmocka_unit_test(torn_last_line_is_ended_before_new_rows),
		cmocka_unit_test(a_long_torn_row_is_closed_from_its_start),
		cmocka_unit_test(discard_keeps_files_that_were_there),
		cmocka_unit_test(planted_symlink_is_refused_in_one_line),
		cmocka_unit_test(layout_names),
		cmocka_unit_test(overlong_row_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
