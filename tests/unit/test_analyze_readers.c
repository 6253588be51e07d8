// SPDX-License-Identifier: MIT
/* The input readers of pmetrics analyze: chunking never changes what is
 * read, every kind of bad line is skipped and counted, and the memory
 * series CSV is read in both layouts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/model.h"
#include "analyze/readers.h"

static struct analyze_config cfg;

static struct analysis *new_analysis(void)
{
	struct analyze_rule *agg, *drop;
	int n_agg, n_drop;

	memset(&cfg, 0, sizeof(cfg));
	assert_int_equal(analyze_default_rules(&agg, &n_agg, &drop, &n_drop), 0);
	cfg.aggregate = agg;
	cfg.n_aggregate = n_agg;
	cfg.drop = drop;
	cfg.n_drop = n_drop;
	cfg.min_samples = 30;
	return analysis_new(&cfg);
}

static const char good[] =
	"{\"event\":\"resourceMonitorReport\",\"properties\":{\"appVersion\":\"8.2.0\",\"appMode\":\"ODD\","
	"\"systemUptimeHrs\":\"26.00\",\"systemAvailMemMb\":\"1043.12\",\"processesDetails\":["
	"{\"name\":\"python3 -m uvicorn robot_server\",\"memRssMb\":\"201.55\"},"
	"{\"name\":\"nmcli\",\"memRssMb\":\"3\"},{\"name\":\"x\",\"memRssMb\":12.5}]}}\n";

/* Feeds LEN bytes of TEXT in chunks of CHUNK bytes, through json-c alone
 * or with the simdjson fast path when it is built in. */
static struct analysis *read_jsonl_n(const char *text, size_t len, size_t chunk, int json_c_only)
{
	struct analysis *a = new_analysis();
	struct jsonl_reader r;
	size_t off;

	assert_int_equal(jsonl_reader_init(&r, a, "t.jsonl"), 0);
	if (json_c_only)
		jsonl_reader_json_c_only(&r);
	for (off = 0; off < len; off += chunk)
		jsonl_feed(&r, text + off, len - off < chunk ? len - off : chunk);
	jsonl_finish(&r);
	jsonl_reader_destroy(&r);
	return a;
}

static struct analysis *read_jsonl(const char *text, size_t chunk)
{
	return read_jsonl_n(text, strlen(text), chunk, 0);
}

static void good_report_fills_system_and_keys(void **state)
{
	struct analysis *a = read_jsonl(good, 1 << 20);
	struct version_stats *v;
	(void)state;
	assert_int_equal(a->n_versions, 1);
	v = &a->versions[0];
	assert_string_equal(v->name, "8.2.0");
	assert_int_equal(v->system.trend.n, 1);
	assert_true(v->system.trend.mean_y == 1043.12);
	assert_int_equal(v->n_keys, 2); /* uvicorn aggregate and x; nmcli dropped */
	assert_true(v->keys[0].trend.mean_y == 201.55);
	assert_true(v->keys[1].trend.mean_y == 12.5);
	assert_true(v->keys[1].trend.mean_x == 26.0);
	assert_int_equal(a->processes_dropped, 1);
	assert_int_equal(a->samples, 3);
	analysis_free(a);
}

static void chunk_size_does_not_matter(void **state)
{
	char text[4 * sizeof(good)];
	size_t chunk;
	(void)state;
	snprintf(text, sizeof(text), "%s%s%s", good, good, good);
	text[strlen(text) - 1] = '\0'; /* last line without a newline */
	for (chunk = 1; chunk < 40; chunk += 3) {
		struct analysis *a = read_jsonl(text, chunk);

		assert_int_equal(a->samples, 9);
		assert_int_equal(a->records_used, 3);
		assert_true(a->versions[0].keys[0].trend.mean_y == 201.55);
		analysis_free(a);
	}
}

#define EV "{\"event\":\"resourceMonitorReport\","
#define ODD_82 "\"appMode\":\"ODD\",\"appVersion\":\"8.2.0\""

static void bad_lines_are_skipped_and_counted(void **state)
{
	static const char text[] =
		"not json\n"                                           /* malformed */
		"{\"event\":\"resourceMonitorReport\",\n"                /* cut: malformed */
		"[1,2]\n"                                              /* not a report */
		"{\"event\":\"resourceMonitorReport\",\"properties\":3}\n" /* not a report */
		EV "\"properties\":{\"appMode\":\"ODD\",\"systemUptimeHrs\":\"1\"}}\n" /* no version */
		EV "\"properties\":{" ODD_82 ",\"systemUptimeHrs\":\"NaN\"}}\n"
		EV "\"properties\":{" ODD_82 ",\"systemUptimeHrs\":\"Infinity\"}}\n"
		EV "\"properties\":{" ODD_82 ",\"systemUptimeHrs\":null}}\n"
		EV "\"properties\":{" ODD_82 ",\"systemUptimeHrs\":1} } trailing\n"
		"{\"event\":\"other\",\"properties\":{}}\n"              /* another event */
		EV "\"properties\":{\"appVersion\":\"8.2.0\",\"appMode\":\"OT2\"}}\n"
		EV "\"properties\":{\"appVersion\":\"8.2.0\",\"systemUptimeHrs\":\"5\"}}\n" /* no appMode */
		"{\"properties\":{" ODD_82 ",\"systemUptimeHrs\":\"5\"}}\n" /* no event */
		"\n   \n"                                                /* blank: silent */
		EV "\"properties\":{" ODD_82 ",\"systemUptimeHrs\":\"5\","
		"\"systemAvailMemMb\":\"abc\",\"processesDetails\":[{\"name\":\"p\",\"memRssMb\":\"x\"},"
		"{\"name\":[1],\"memRssMb\":\"1\"},7,{\"name\":\"q\",\"memRssMb\":\"1e400\"},{\"name\":\"r\",\"memRssMb\":\"2\"}]}}\n";
	struct analysis *a = read_jsonl(text, 7);
	(void)state;
	assert_int_equal(a->skipped[SKIP_MALFORMED], 3);
	assert_int_equal(a->skipped[SKIP_NOT_REPORT], 2);
	assert_int_equal(a->skipped[SKIP_NO_VERSION], 1);
	assert_int_equal(a->skipped[SKIP_BAD_UPTIME], 2);
	assert_int_equal(a->skipped[SKIP_INFINITE_UPTIME], 1);
	assert_int_equal(a->left_out[LEFT_OTHER_EVENT], 2);
	assert_int_equal(a->left_out[LEFT_OTHER_MODE], 1);
	assert_int_equal(a->left_out[LEFT_NO_MODE], 1);
	assert_int_equal(a->records_used, 1);
	/* avail "abc", memRssMb "x", a name that is an array, 7, 1e400 (inf) */
	assert_int_equal(a->values_skipped, 5);
	assert_int_equal(a->values_infinite, 1);
	assert_int_equal(a->samples, 1); /* r = 2 */
	assert_int_equal(a->lines, 14);
	analysis_free(a);
}

/* A line over ANALYZE_LINE_MAX is skipped as too long without being kept
 * in memory; the lines around it are used. */
static void runaway_line_is_skipped(void **state)
{
	struct analysis *a = new_analysis();
	struct jsonl_reader r;
	size_t chunk = 1 << 20, fed;
	char *junk = malloc(chunk);
	(void)state;
	assert_non_null(junk);
	memset(junk, ' ', chunk);
	junk[0] = '{';
	assert_int_equal(jsonl_reader_init(&r, a, "big"), 0);
	jsonl_feed(&r, good, strlen(good));
	for (fed = 0; fed <= ANALYZE_LINE_MAX; fed += chunk)
		jsonl_feed(&r, junk, chunk);
	assert_true(r.cap <= ANALYZE_LINE_MAX);
	jsonl_feed(&r, "\n", 1);
	jsonl_feed(&r, good, strlen(good));
	jsonl_finish(&r);
	jsonl_reader_destroy(&r);
	assert_int_equal(a->skipped[SKIP_TOO_LONG], 1);
	assert_int_equal(a->records_used, 2);
	assert_int_equal(a->lines, 3);
	analysis_free(a);
	free(junk);
}

static void unicode_names_and_nul_bytes_are_kept_whole(void **state)
{
	static const char text[] =
		EV "\"properties\":{" ODD_82 ",\"systemUptimeHrs\":\"1\","
		"\"processesDetails\":[{\"name\":\"a\\u0000b \\u00e9\",\"memRssMb\":\"1\"}]}}\n";
	struct analysis *a = read_jsonl(text, 5);
	size_t len;
	const char *name;
	(void)state;
	assert_int_equal(a->versions[0].n_keys, 1);
	name = analysis_key_name(a, a->versions[0].keys[0].key_id, &len);
	assert_int_equal(len, 6);
	assert_memory_equal(name, "a\0b \xc3\xa9", 6);
	analysis_free(a);
}

/* The simdjson fast path and json-c must use and skip the same lines and
 * values: every counter and every accumulated sample agrees. */
static void assert_same_analysis(const struct analysis *x, const struct analysis *y)
{
	size_t i, j;
	int k;

	assert_int_equal(x->lines, y->lines);
	assert_int_equal(x->records_used, y->records_used);
	for (k = 0; k < SKIP_REASONS; k++)
		assert_int_equal(x->skipped[k], y->skipped[k]);
	for (k = 0; k < LEFT_OUT_REASONS; k++)
		assert_int_equal(x->left_out[k], y->left_out[k]);
	assert_int_equal(x->values_skipped, y->values_skipped);
	assert_int_equal(x->values_infinite, y->values_infinite);
	assert_int_equal(x->processes_dropped, y->processes_dropped);
	assert_int_equal(x->samples, y->samples);
	assert_int_equal(x->n_versions, y->n_versions);
	for (i = 0; i < x->n_versions; i++) {
		const struct version_stats *vx = &x->versions[i], *vy = &y->versions[i];

		assert_string_equal(vx->name, vy->name);
		assert_int_equal(vx->has_reports, vy->has_reports);
		assert_int_equal(vx->n_keys, vy->n_keys);
		assert_memory_equal(&vx->system.trend, &vy->system.trend, sizeof(vx->system.trend));
		for (j = 0; j < vx->n_keys; j++) {
			size_t lx, ly;
			const char *nx = analysis_key_name(x, vx->keys[j].key_id, &lx);
			const char *ny = analysis_key_name(y, vy->keys[j].key_id, &ly);

			assert_int_equal(lx, ly);
			assert_memory_equal(nx, ny, lx);
			assert_memory_equal(&vx->keys[j].trend, &vy->keys[j].trend,
					    sizeof(vx->keys[j].trend));
		}
	}
}

static void simdjson_and_json_c_agree(void **state)
{
	static const char *const texts[] = {
		good,
		"{\"properties\":{\"appVersion\":\"1\",\"appVersion\":\"2\",\"systemUptimeHrs\":1,"
		"\"processesDetails\":[{\"name\":\"a\",\"name\":\"b\",\"memRssMb\":1,\"memRssMb\":null}]}}\n",
		"{\"event\":null,\"properties\":{\"appMode\":null,\"appVersion\":\"8\",\"systemUptimeHrs\":-0,"
		"\"systemAvailMemMb\":18446744073709551615,\"processesDetails\":null}}\n",
		"{\"properties\":{\"appVersion\":\"8\",\"systemUptimeHrs\":1e400}}\n",
		"{\"properties\":{\"appVersion\":\"8\",\"systemUptimeHrs\":123456789012345678901234567890}}\n",
		"{\"properties\":{\"appVersion\":\"\xff\xfe\",\"systemUptimeHrs\":\"2\"}}\n",
		"{\"properties\":{\"appVersion\":\"\\ud800\",\"systemUptimeHrs\":\"2\"}}\n",
		"{\"properties\":{\"appVersion\":\"8\",\"systemUptimeHrs\":\"2\",\"processesDetails\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}}\n",
		"{\"properties\":{\"appVersion\":\"8\",\"systemUptimeHrs\":\"2\"}}\f\n{'a':1}\n[1,]\n{\"a\":1}x\n\"str\"\n123\n",
		"{\"properties\":{\"appVersion\":\"8\",\"systemUptimeHrs\":\"2\",\"processesDetails\":[{\"name\":\"a\\u0000b\",\"memRssMb\":\"1\tx\"}]}}\n",
	};
	size_t i;
	(void)state;
	for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		struct analysis *x = read_jsonl_n(texts[i], strlen(texts[i]), 1 << 20, 0);
		struct analysis *y = read_jsonl_n(texts[i], strlen(texts[i]), 1 << 20, 1);

		assert_same_analysis(x, y);
		analysis_free(x);
		analysis_free(y);
	}
}

/* A file is told JSON lines by its first '{', past the blank lines that
 * trim() would drop, Unicode spaces included (they are no CSV either). */
static void export_opening_with_unicode_blank_lines_is_json(void **state)
{
	char path[] = "/tmp/pmetrics-test-XXXXXX";
	int fd = mkstemp(path);
	struct analysis *a = new_analysis();
	static const char blank[] = " \xc2\xa0\xe3\x80\x80\n\t\n";
	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, blank, strlen(blank)), (ssize_t)strlen(blank));
	assert_int_equal(write(fd, good, strlen(good)), (ssize_t)strlen(good));
	close(fd);
	assert_int_equal(analyze_read_input(a, path), 0);
	assert_int_equal(a->records_used, 1);
	assert_int_equal(a->lines, 1);
	unlink(path);
	analysis_free(a);
}

/* ---- memory series ------------------------------------------------------ */

static struct analysis *read_series(const char *header, const char *text, size_t chunk)
{
	struct analysis *a = new_analysis();
	struct series_reader r;
	size_t len = strlen(text), off;

	assert_int_equal(series_reader_init(&r, a, "series"), 0);
	if (header)
		series_set_header(&r, header, strlen(header));
	for (off = 0; off < len; off += chunk)
		series_feed(&r, text + off, len - off < chunk ? len - off : chunk);
	series_finish(&r);
	series_reader_destroy(&r);
	return a;
}

static void series_context_layout(void **state)
{
	static const char text[] =
		"1718739269730290312,26.5,1043.12,,\n"
		"1718739269730290312,,,python3 -m uvicorn robot_server,201.55\n"
		"1718739269730290312,26.5,,\"/opt/x --a=1,2\",10\n"
		"1718739269730290312,,,nmcli monitor,3\n"
		"broken,row\n";
	size_t chunk;
	(void)state;
	for (chunk = 1; chunk <= 64; chunk *= 4) {
		struct analysis *a = read_series(NULL, text, chunk);
		struct version_stats *v = &a->versions[0];
		size_t len;

		assert_string_equal(v->name, ANALYZE_CAPTURE_VERSION);
		assert_int_equal(v->system.trend.n, 1);
		assert_true(v->system.trend.mean_y == 1043.12);
		assert_int_equal(v->n_keys, 2);
		/* the process row without uptime takes its poll's */
		assert_true(v->keys[0].trend.mean_x == 26.5);
		assert_string_equal(analysis_key_name(a, v->keys[0].key_id, &len),
				    "robot-server-uvicorn-processes");
		assert_string_equal(analysis_key_name(a, v->keys[1].key_id, &len), "/opt/x --a=1,2");
		assert_int_equal(a->processes_dropped, 1);
		assert_int_equal(a->skipped[SKIP_MALFORMED], 1);
		analysis_free(a);
	}
}

static void series_activity_layout_with_header_order(void **state)
{
	static const char header[] = "\"query_time\",\"command\",\"mem_rss_mb\",\"system_uptime_hrs\",\"system_avail_mem_mb\"";
	static const char text[] =
		"\"1\",\"\",\"\",\"3.25\",\"900.5\"\r\n"
		"\"1\",\"say \"\"hi\"\"\",\"12.5\",\"3.25\",\"\"\r\n"
		"\"1\",\"unterminated,\"3\",\"3.25\",\"\"\r\n";
	struct analysis *a = read_series(header, text, 3);
	struct version_stats *v = &a->versions[0];
	size_t len;
	(void)state;
	assert_true(v->system.trend.mean_y == 900.5);
	assert_int_equal(v->n_keys, 1);
	assert_string_equal(analysis_key_name(a, v->keys[0].key_id, &len), "say \"hi\"");
	assert_true(v->keys[0].trend.mean_y == 12.5);
	assert_int_equal(a->skipped[SKIP_MALFORMED], 1); /* ends inside quotes */
	analysis_free(a);
}

/* A command with invalid UTF-8 is named as Node would decode it, so two
 * that differ only in their invalid bytes are one key. */
static void series_names_with_invalid_utf8_are_decoded_like_node(void **state)
{
	static const char text[] =
		"1,2.5,,a\xff\xfe" "b,7\n"
		"1,3.5,,a\xc0\xaf" "b,9\n"
		"1,4.5,,a\xef\xbf\xbd\xef\xbf\xbd" "b,11\n"
		"1,5.5,,\xfe" "b,13\n"; /* invalid from the first byte */
	struct analysis *a = read_series(NULL, text, 5);
	struct version_stats *v = &a->versions[0];
	size_t len;
	const char *name;
	(void)state;
	assert_int_equal(v->n_keys, 2);
	name = analysis_key_name(a, v->keys[1].key_id, &len);
	assert_int_equal(len, 4);
	assert_memory_equal(name, "\xef\xbf\xbd" "b", 4);
	name = analysis_key_name(a, v->keys[0].key_id, &len);
	assert_int_equal(len, 8);
	assert_memory_equal(name, "a\xef\xbf\xbd\xef\xbf\xbd" "b", 8);
	assert_int_equal(v->keys[0].trend.n, 3);
	assert_true(v->keys[0].trend.mean_y == 9);
	analysis_free(a);
}

/* The record buffer grows from 4 KiB; past ANALYZE_RECORD_MAX the record
 * is skipped as too long and the next one is read as usual. */
static void series_record_buffer_grows_then_stops(void **state)
{
	size_t big = ANALYZE_RECORD_MAX + ANALYZE_RECORD_MAX / 2, mid = 100000;
	char *text = malloc(big + mid + 200), *p = text;
	struct analysis *a;
	(void)state;
	assert_non_null(text);
	p += sprintf(p, "1,2.5,,");
	memset(p, 'x', mid);
	p += mid;
	p += sprintf(p, ",7\n1,2.5,,");
	memset(p, 'y', big);
	p += big;
	sprintf(p, ",8\n1,3.5,,z,9\n");
	a = read_series(NULL, text, 1 << 16);
	assert_int_equal(a->skipped[SKIP_TOO_LONG], 1);
	assert_int_equal(a->versions[0].n_keys, 2); /* the 100 kB name (cut) and z */
	assert_true(a->versions[0].keys[0].trend.mean_y == 7);
	assert_true(a->versions[0].keys[1].trend.mean_y == 9);
	analysis_free(a);
	free(text);
}

static void long_command_is_cut_like_the_odd_does(void **state)
{
	char cmd[300], out[4 * 100 + 4];
	size_t n;
	(void)state;
	memset(cmd, 'a', sizeof(cmd));
	n = series_process_name(cmd, 150, out);
	assert_int_equal(n, 103);
	assert_memory_equal(out + 100, "...", 3);
	n = series_process_name(cmd, 100, out);
	assert_int_equal(n, 100);
	/* 100 characters, not bytes: 2-byte UTF-8 characters stay whole */
	for (n = 0; n < 150; n++)
		memcpy(cmd + 2 * n, "\xc3\xa9", 2);
	n = series_process_name(cmd, 300, out);
	assert_int_equal(n, 203);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(good_report_fills_system_and_keys),
		cmocka_unit_test(chunk_size_does_not_matter),
		cmocka_unit_test(bad_lines_are_skipped_and_counted),
		cmocka_unit_test(runaway_line_is_skipped),
		cmocka_unit_test(unicode_names_and_nul_bytes_are_kept_whole),
		cmocka_unit_test(simdjson_and_json_c_agree),
		cmocka_unit_test(export_opening_with_unicode_blank_lines_is_json),
		cmocka_unit_test(series_context_layout),
		cmocka_unit_test(series_activity_layout_with_header_order),
		cmocka_unit_test(series_names_with_invalid_utf8_are_decoded_like_node),
		cmocka_unit_test(series_record_buffer_grows_then_stops),
		cmocka_unit_test(long_command_is_cut_like_the_odd_does),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
