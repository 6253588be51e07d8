// SPDX-License-Identifier: MIT
/* pmetrics analyze end to end in memory: JSON lines in, upstream's report
 * out, compared byte for byte with results worked out by hand. */
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
#include "analyze/report.h"
#include "analyze/semver.h"

#define UVICORN "python3 -m uvicorn robot_server.app:app --port 31950"
#define RENDERER "/opt/opentrons-app/opentrons --type=renderer --lang=en"
#define NA "\"N/A - Not enough data available.\""
#define HEADER REPORT_HEADER "\n"

struct run {
	struct analyze_config cfg;
	struct analysis *a;
	struct jsonl_reader r;
	char *out;
	size_t out_len;
};

static void start(struct run *t, const char *const *versions, int n_versions)
{
	struct analyze_rule *agg, *drop;
	int n_agg, n_drop;

	memset(t, 0, sizeof(*t));
	assert_int_equal(analyze_default_rules(&agg, &n_agg, &drop, &n_drop), 0);
	t->cfg.aggregate = agg;
	t->cfg.n_aggregate = n_agg;
	t->cfg.drop = drop;
	t->cfg.n_drop = n_drop;
	t->cfg.min_samples = 30;
	t->cfg.versions = versions;
	t->cfg.n_versions = n_versions;
	t->a = analysis_new(&t->cfg);
	assert_non_null(t->a);
	assert_int_equal(jsonl_reader_init(&t->r, t->a, "test"), 0);
}

static void feed(struct run *t, const char *fmt, ...)
{
	char line[4096];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	assert_true(n > 0 && (size_t)n < sizeof(line) - 1);
	line[n++] = '\n';
	jsonl_feed(&t->r, line, (size_t)n);
}

/* One report: VERSION at uptime U with the given processes JSON array. */
static void report(struct run *t, const char *version, double u, double avail,
		   const char *procs)
{
	feed(t, "{\"event\":\"resourceMonitorReport\",\"properties\":{\"appVersion\":\"%s\","
		"\"appMode\":\"ODD\",\"systemUptimeHrs\":\"%.2f\",\"systemAvailMemMb\":\"%.2f\","
		"\"processesDetails\":%s}}",
	     version, u, avail, procs);
}

static const char *render(struct run *t, enum p_method m, int extended)
{
	struct report_opts o = { .p_method = m, .extended = extended, .min_samples = 30 };
	struct version_result *res;
	FILE *f;

	jsonl_finish(&t->r);
	analysis_order_versions(t->a);
	assert_int_equal(report_compute(t->a, &o, &res), 0);
	free(t->out);
	f = open_memstream(&t->out, &t->out_len);
	assert_non_null(f);
	report_write_json(f, res, t->a->n_versions, &o);
	fclose(f);
	report_free(res, t->a->n_versions);
	return t->out;
}

/* Byte-for-byte comparison that shows where the texts part on failure. */
static void assert_text(const char *got, const char *want)
{
	size_t i = 0;

	while (got[i] && got[i] == want[i])
		i++;
	if (got[i] || want[i])
		fail_msg("texts differ at byte %zu:\n--- got from there:\n%.300s\n--- want:\n%.300s",
			 i, got + (i > 40 ? i - 40 : 0), want + (i > 40 ? i - 40 : 0));
}

static void finish(struct run *t)
{
	jsonl_reader_destroy(&t->r);
	analysis_free(t->a);
	free(t->out);
}

/* The averageMemoryMbByUptime block with only 0-20hrs filled. */
#define BUCKETS_0_20(v)                                                        \
	"      \"averageMemoryMbByUptime\": {\n"                               \
	"        \"0-20hrs\": " v ",\n        \"20-40hrs\": " NA ",\n"     \
	"        \"40-60hrs\": " NA ",\n        \"60-80hrs\": " NA ",\n"   \
	"        \"80-120hrs\": " NA ",\n        \"120-240hrs\": " NA ",\n" \
	"        \"240+hrs\": " NA "\n      }\n"

/* 30 reports at uptime 0, 0.5, ... 14.5 h (mean 7.25 h):
 *  uvicorn 100 + u        -> r = 1, mean 107.25
 *  renderer 50 - 0.2 u    -> r = -1 but kept (protected), mean 48.55
 *  otherproc 200 - u      -> r = -1, removed by the negative filter
 *  /usr/bin/python3, nmcli -> dropped by name
 *  symmetric 101, 99, 101... mirrored around u = 7.25 -> r = 0 exactly,
 *    kept; mean (16 * 101 + 14 * 99) / 30 = 100.07
 *  available 1000 - 2 u   -> r = -1, mean 985.50 */
static void lines_dataset(struct run *t, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		double u = i * 0.5;
		int j = i < 15 ? i : 29 - i;
		char procs[1024];

		snprintf(procs, sizeof(procs),
			 "[{\"name\":\"" UVICORN "\",\"memRssMb\":\"%.2f\"},"
			 "{\"name\":\"" RENDERER "\",\"memRssMb\":%.1f},"
			 "{\"name\":\"otherproc\",\"memRssMb\":\"%.2f\"},"
			 "{\"name\":\"/usr/bin/python3 -m x\",\"memRssMb\":\"1\"},"
			 "{\"name\":\"nmcli monitor\",\"memRssMb\":\"1\"},"
			 "{\"name\":\"symmetric\",\"memRssMb\":\"%d\"}]",
			 100 + u, 50 - 0.2 * u, 200 - u, j % 2 ? 99 : 101);
		report(t, "8.2.0", u, 1000 - 2 * u, procs);
	}
}

static void upstream_json_byte_for_byte(void **state)
{
	static const char *const versions[] = { "8.2.0", "8.1.0" };
	static const char want[] = HEADER
		"{\n  \"8.2.0\": {\n"
		"    \"robot-server-uvicorn-processes\": {\n"
		"      \"correlation\": \"1.0000\",\n      \"sampleSize\": 30,\n"
		"      \"interpretation\": \"Strong positive correlation (>0.7)\",\n"
		BUCKETS_0_20("\"107.25\"") "    },\n"
		"    \"app-renderer-processes\": {\n"
		"      \"correlation\": \"-1.0000\",\n      \"sampleSize\": 30,\n"
		"      \"interpretation\": \"Strong negative correlation (>0.7)\",\n"
		BUCKETS_0_20("\"48.55\"") "    },\n"
		"    \"symmetric\": {\n"
		"      \"correlation\": \"0.0000\",\n      \"sampleSize\": 30,\n"
		"      \"interpretation\": \"No significant correlation found\",\n"
		BUCKETS_0_20("\"100.07\"") "    },\n"
		"    \"odd-available-memory\": {\n"
		"      \"correlation\": \"-1.0000\",\n      \"sampleSize\": 30,\n"
		"      \"interpretation\": \"Strong negative correlation (>0.7)\",\n"
		BUCKETS_0_20("\"985.50\"") "    }\n"
		"  },\n  \"8.1.0\": \"N/A - No data available\"\n}\n";
	struct run t;
	(void)state;
	start(&t, versions, 2);
	lines_dataset(&t, 30);
	assert_text(render(&t, P_UPSTREAM, 0), want);
	/* same words with the exact p-value: every verdict is clear-cut */
	assert_text(render(&t, P_EXACT, 0), want);
	assert_int_equal(t.a->processes_dropped, 60);
	finish(&t);
}

/* 29 reports: every process key is dropped; upstream's code still reports
 * odd-available-memory, as "not enough samples" with r = 0. */
static void n_29_drops_process_keys_but_reports_the_system(void **state)
{
	static const char want[] = HEADER
		"{\n  \"8.2.0\": {\n"
		"    \"odd-available-memory\": {\n"
		"      \"correlation\": \"0.0000\",\n      \"sampleSize\": 29,\n"
		"      \"interpretation\": \"Not enough samples for analysis\",\n"
		BUCKETS_0_20(NA) "    }\n  }\n}\n";
	struct run t;
	(void)state;
	start(&t, NULL, 0);
	lines_dataset(&t, 29);
	assert_text(render(&t, P_UPSTREAM, 0), want);
	finish(&t);
}

static void n_30_is_enough(void **state)
{
	struct run t;
	const char *out;
	(void)state;
	start(&t, NULL, 0);
	lines_dataset(&t, 30);
	out = render(&t, P_EXACT, 0);
	assert_non_null(strstr(out, "\"robot-server-uvicorn-processes\": {\n      \"correlation\": \"1.0000\",\n      \"sampleSize\": 30,"));
	assert_null(strstr(out, "otherproc"));
	assert_null(strstr(out, "python3 -m x"));
	assert_null(strstr(out, "nmcli"));
	finish(&t);
}

static void add(struct analysis *a, const char *name, double u, double mb)
{
	long key = analysis_resolve_name(a, name, strlen(name));

	assert_true(key >= 0);
	analysis_add_process(a, 0, key, u, mb);
}

/* Uptime 20.0 belongs to 20-40hrs and 240.0 to 240+hrs (lower bound
 * inclusive); 19.99 stays in 0-20hrs. */
static void bucket_edges_at_20_and_240_hours(void **state)
{
	static const char want[] = HEADER
		"{\n  \"8.2.0\": {\n"
		"    \"edge\": {\n"
		"      \"correlation\": \"0.8660\",\n      \"sampleSize\": 90,\n"
		"      \"interpretation\": \"Strong positive correlation (>0.7)\",\n"
		"      \"averageMemoryMbByUptime\": {\n"
		"        \"0-20hrs\": \"1.00\",\n        \"20-40hrs\": \"2.00\",\n"
		"        \"40-60hrs\": " NA ",\n        \"60-80hrs\": " NA ",\n"
		"        \"80-120hrs\": " NA ",\n        \"120-240hrs\": " NA ",\n"
		"        \"240+hrs\": \"3.00\"\n      }\n    },\n"
		"    \"odd-available-memory\": {\n"
		"      \"correlation\": \"0.0000\",\n      \"sampleSize\": 0,\n"
		"      \"interpretation\": \"Not enough samples for analysis\",\n"
		BUCKETS_0_20(NA) "    }\n  }\n}\n";
	struct run t;
	int i;
	(void)state;
	start(&t, NULL, 0);
	assert_int_equal(analysis_version(t.a, "8.2.0", 5), 0);
	t.a->versions[0].has_reports = 1;
	for (i = 0; i < 30; i++) {
		add(t.a, "edge", 19.99, 1);
		add(t.a, "edge", 20.0, 2);
		add(t.a, "edge", 240.0, 3);
	}
	/* r by hand: x = {19.99, 20, 240} y = {1, 2, 3}, 30 times each:
	 * r = Sxy / sqrt(Sxx Syy) = 220.01 / sqrt(32268.13 * 2) = 0.866045 */
	assert_text(render(&t, P_UPSTREAM, 0), want);
	assert_int_equal(t.a->versions[0].keys[0].bucket_n[0], 30);
	assert_int_equal(t.a->versions[0].keys[0].bucket_n[1], 30);
	assert_int_equal(t.a->versions[0].keys[0].bucket_n[5], 0);
	assert_int_equal(t.a->versions[0].keys[0].bucket_n[6], 30);
	finish(&t);
}

/* y = 100 + 0.2 u +- 2.3 (mirrored around the middle, so it adds no
 * trend): r = 0.35290 (0.3529 rounded), n = 30, df = 28.
 *  upstream: p = 0.5 (1 - 0.3529^2)^14 = 0.07768 -> not significant
 *  exact:    t = 1.9945, P(T > t) = 0.0278856 (mpmath, 40 digits)
 *  slope 0.2 MB/h, 95% CI [-0.00527621, 0.405276] (t 2.0484071) */
static void moderate_trend(struct run *t)
{
	static const double y[30] = {
		102.3, 97.8, 102.5, 98.0, 102.7, 98.2, 102.9, 98.4, 103.1, 98.6,
		103.3, 98.8, 103.5, 99.0, 103.7, 103.8, 99.3, 104.0, 99.5, 104.2,
		99.7, 104.4, 99.9, 104.6, 100.1, 104.8, 100.3, 105.0, 100.5, 105.2,
	};
	int i;

	for (i = 0; i < 30; i++) {
		char procs[256];

		snprintf(procs, sizeof(procs), "[{\"name\":\"leaky\",\"memRssMb\":\"%.1f\"}]", y[i]);
		report(t, "8.2.0", i * 0.5, 1000, procs);
	}
}

static void upstream_and_exact_p_disagree_on_a_moderate_trend(void **state)
{
	static const char key_up[] =
		"    \"leaky\": {\n"
		"      \"correlation\": \"0.3529\",\n      \"sampleSize\": 30,\n"
		"      \"interpretation\": \"No significant correlation found\",\n"
		BUCKETS_0_20("\"101.60\"") "    },\n";
	static const char key_exact[] =
		"    \"leaky\": {\n"
		"      \"correlation\": \"0.3529\",\n      \"sampleSize\": 30,\n"
		"      \"interpretation\": \"Moderate positive correlation (>0.3 and <0.7)\",\n"
		"      \"averageMemoryMbByUptime\": {\n"
		"        \"0-20hrs\": \"101.60\",\n        \"20-40hrs\": " NA ",\n"
		"        \"40-60hrs\": " NA ",\n        \"60-80hrs\": " NA ",\n"
		"        \"80-120hrs\": " NA ",\n        \"120-240hrs\": " NA ",\n"
		"        \"240+hrs\": " NA "\n      },\n"
		"      \"pValue\": 0.0278856,\n      \"pValueMethod\": \"exact\",\n"
		"      \"slopeMbPerHour\": 0.2,\n"
		"      \"slopeCi95MbPerHour\": [\n        -0.00527621,\n        0.405276\n      ]\n"
		"    },\n";
	struct run t;
	(void)state;
	start(&t, NULL, 0);
	moderate_trend(&t);
	assert_non_null(strstr(render(&t, P_UPSTREAM, 0), key_up));
	assert_non_null(strstr(render(&t, P_EXACT, 1), key_exact));
	assert_non_null(strstr(render(&t, P_UPSTREAM, 1), "\"pValue\": 0.0776764,\n      \"pValueMethod\": \"upstream\""));
	finish(&t);
}

/* Memory or uptime that never varies. calculate-correlation then divides
 * 0 by 0 (r NaN) when the constant's plain-sum mean comes out exact (30
 * times 5, 30 times 26), and otherwise finds r from that mean's rounding
 * error: 0 for one constant series (0.1, 1043.12, an uptime of 26.1), 1
 * when one point repeats (uptime and memory 0.1). Expected bytes as
 * upstream's analyzeMemoryTrends printed them on these lines (node 20,
 * calculate-correlation 1.2.3). */
static void constant_series_as_upstream_computes_them(void **state)
{
	static const char *const versions[] = { "8.2.0", "8.1.0", "8.0.0" };
	static const char want[] = HEADER
		"{\n  \"8.2.0\": {\n"
		"    \"flat-five\": {\n"
		"      \"correlation\": \"NaN\",\n      \"sampleSize\": 30,\n"
		"      \"interpretation\": \"No significant correlation found\",\n"
		BUCKETS_0_20("\"5.00\"") "    },\n"
		"    \"flat-tenth\": {\n"
		"      \"correlation\": \"0.0000\",\n      \"sampleSize\": 30,\n"
		"      \"interpretation\": \"No significant correlation found\",\n"
		BUCKETS_0_20("\"0.10\"") "    },\n"
		"    \"flat-big\": {\n"
		"      \"correlation\": \"0.0000\",\n      \"sampleSize\": 30,\n"
		"      \"interpretation\": \"No significant correlation found\",\n"
		BUCKETS_0_20("\"1043.12\"") "    },\n"
		"    \"odd-available-memory\": {\n"
		"      \"correlation\": \"-1.0000\",\n      \"sampleSize\": 30,\n"
		"      \"interpretation\": \"Strong negative correlation (>0.7)\",\n"
		BUCKETS_0_20("\"985.50\"") "    }\n"
		"  },\n  \"8.1.0\": {\n"
		"    \"robot-server-uvicorn-processes\": {\n"
		"      \"correlation\": \"0.0000\",\n      \"sampleSize\": 30,\n"
		"      \"interpretation\": \"No significant correlation found\",\n"
		"      \"averageMemoryMbByUptime\": {\n"
		"        \"0-20hrs\": " NA ",\n        \"20-40hrs\": \"114.50\",\n"
		"        \"40-60hrs\": " NA ",\n        \"60-80hrs\": " NA ",\n"
		"        \"80-120hrs\": " NA ",\n        \"120-240hrs\": " NA ",\n"
		"        \"240+hrs\": " NA "\n      }\n    },\n"
		"    \"odd-available-memory\": {\n"
		"      \"correlation\": \"NaN\",\n      \"sampleSize\": 30,\n"
		"      \"interpretation\": \"No significant correlation found\",\n"
		"      \"averageMemoryMbByUptime\": {\n"
		"        \"0-20hrs\": " NA ",\n        \"20-40hrs\": \"900.00\",\n"
		"        \"40-60hrs\": " NA ",\n        \"60-80hrs\": " NA ",\n"
		"        \"80-120hrs\": " NA ",\n        \"120-240hrs\": " NA ",\n"
		"        \"240+hrs\": " NA "\n      }\n    }\n"
		"  },\n  \"8.0.0\": {\n"
		"    \"odd-available-memory\": {\n"
		"      \"correlation\": \"1.0000\",\n      \"sampleSize\": 30,\n"
		"      \"interpretation\": \"Strong positive correlation (>0.7)\",\n"
		BUCKETS_0_20("\"0.10\"") "    }\n  }\n}\n";
	struct run t;
	char procs[256];
	int i;
	(void)state;
	start(&t, versions, 3);
	for (i = 0; i < 30; i++) {
		snprintf(procs, sizeof(procs), "[{\"name\":\"flat-five\",\"memRssMb\":\"5\"},"
			 "{\"name\":\"flat-tenth\",\"memRssMb\":\"0.1\"},"
			 "{\"name\":\"flat-big\",\"memRssMb\":\"1043.12\"}]");
		report(&t, "8.2.0", i * 0.5, 1000 - i, procs);
		snprintf(procs, sizeof(procs), "[{\"name\":\"" UVICORN "\",\"memRssMb\":\"%d\"}]", 100 + i);
		report(&t, "8.1.0", 26.1, 900, procs);
		report(&t, "8.0.0", 0.1, 0.1, "[]");
	}
	assert_text(render(&t, P_UPSTREAM, 0), want);
	assert_text(render(&t, P_EXACT, 0), want);
	finish(&t);
}

/* --format text says which series did not vary, since r means little
 * then. */
static void text_names_the_constant_series(void **state)
{
	struct report_opts o = { .p_method = P_EXACT, .min_samples = 30 };
	struct version_result *res;
	struct run t;
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	int i;
	(void)state;
	start(&t, NULL, 0);
	for (i = 0; i < 30; i++)
		report(&t, "8.2.0", 26.1, 900 + i, "[{\"name\":\"flat\",\"memRssMb\":\"5\"}]");
	jsonl_finish(&t.r);
	assert_int_equal(report_compute(t.a, &o, &res), 0);
	f = open_memstream(&text, &len);
	assert_non_null(f);
	report_write_text(f, res, t.a->n_versions, &o);
	fclose(f);
	assert_non_null(strstr(text, "No significant correlation found [constant uptime and memory]\n"));
	assert_non_null(strstr(text, "No significant correlation found [constant uptime]\n"));
	report_free(res, t.a->n_versions);
	free(text);
	finish(&t);
}

/* Strings as JSON.stringify writes them: a lone surrogate kept by the
 * readers (ED A0 80) as \ud800, control characters escaped, the rest as
 * it is; invalid UTF-8 (which the readers repair first) as U+FFFD. */
static void json_strings_like_json_stringify(void **state)
{
	static const struct { const char *in; size_t len; const char *want; } cases[] = {
		{ "x\xed\xa0\x80", 4, "\"x\\ud800\"" },
		{ "\xed\xbf\xbf\xed\xa0\x80", 6, "\"\\udfff\\ud800\"" },
		{ "\xf0\x9f\x98\x80\xe2\x80\xa8\x7f", 8, "\"\xf0\x9f\x98\x80\xe2\x80\xa8\x7f\"" },
		{ "a\0\x1f\"\\\n\t/", 8, "\"a\\u0000\\u001f\\\"\\\\\\n\\t/\"" },
		{ "a\xff\xf0\x9f\x41", 5, "\"a\xef\xbf\xbd\xef\xbf\xbd" "A\"" },
	};
	size_t i;
	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);

		assert_non_null(f);
		json_write_string(f, cases[i].in, cases[i].len);
		fclose(f);
		assert_string_equal(text, cases[i].want);
		free(text);
	}
}

/* Process names as upstream's object gets them, analysis[name] = result:
 * "__proto__" sets its prototype and is not printed; the number 5 and
 * the string "5" are two keys of its Map but one of the object, in the
 * place of the first, with the value of the last; a process without a
 * name is "undefined", and the string "undefined", filtered out for its
 * negative trend first, takes nothing from it; index-like keys come
 * first. Expected bytes as upstream's analyzeMemoryTrends printed them on
 * these lines (node 20). */
static void names_as_upstream_object_keys(void **state)
{
	static const char want[] = HEADER
		"{\n  \"8.2.0\": {\n"
		"    \"5\": {\n"
		"      \"correlation\": \"1.0000\",\n      \"sampleSize\": 30,\n"
		"      \"interpretation\": \"Strong positive correlation (>0.7)\",\n"
		BUCKETS_0_20("\"63.50\"") "    },\n"
		"    \"constructor\": {\n"
		"      \"correlation\": \"1.0000\",\n      \"sampleSize\": 30,\n"
		"      \"interpretation\": \"Strong positive correlation (>0.7)\",\n"
		BUCKETS_0_20("\"129.00\"") "    },\n"
		"    \"undefined\": {\n"
		"      \"correlation\": \"1.0000\",\n      \"sampleSize\": 30,\n"
		"      \"interpretation\": \"Strong positive correlation (>0.7)\",\n"
		BUCKETS_0_20("\"54.50\"") "    },\n"
		"    \"odd-available-memory\": {\n"
		"      \"correlation\": \"-1.0000\",\n      \"sampleSize\": 30,\n"
		"      \"interpretation\": \"Strong negative correlation (>0.7)\",\n"
		BUCKETS_0_20("\"885.50\"") "    }\n  }\n}\n";
	struct run t;
	char procs[512];
	int i;
	(void)state;
	start(&t, NULL, 0);
	for (i = 0; i < 30; i++) {
		snprintf(procs, sizeof(procs), "[{\"name\":\"__proto__\",\"memRssMb\":\"%d\"},"
			 "{\"name\":\"constructor\",\"memRssMb\":\"%d\"},{\"name\":5,\"memRssMb\":\"%d\"},"
			 "{\"name\":\"5\",\"memRssMb\":\"%d\"},{\"memRssMb\":\"%d\"},"
			 "{\"name\":\"undefined\",\"memRssMb\":\"%d\"}]",
			 100 + i, 100 + 2 * i, 10 + i, 20 + 3 * i, 40 + i, 50 - i);
		report(&t, "8.2.0", i * 0.5, 900 - i, procs);
	}
	assert_text(render(&t, P_UPSTREAM, 0), want);
	finish(&t);
}

static void versions_newest_first_with_pre_releases(void **state)
{
	static const char *const order[] = { "8.2.0", "8.2.0-alpha.2", "8.2.0-alpha.1", "8.1.0" };
	struct run t;
	const char *out, *p[4];
	int i;
	(void)state;
	start(&t, NULL, 0);
	for (i = 0; i < 30; i++) {
		report(&t, "8.1.0", i, 900, "[]");
		report(&t, "8.2.0-alpha.1", i, 900, "[]");
		report(&t, "8.2.0", i, 900, "[]");
		report(&t, "8.2.0-alpha.2", i, 900, "[]");
	}
	out = render(&t, P_EXACT, 0);
	for (i = 0; i < 4; i++) {
		char needle[64];

		snprintf(needle, sizeof(needle), "\n  \"%s\": {", order[i]);
		p[i] = strstr(out, needle);
		assert_non_null(p[i]);
		if (i)
			assert_true(p[i - 1] < p[i]);
	}
	finish(&t);
}

static void version_with_unusable_reports_is_not_no_data(void **state)
{
	static const char *const versions[] = { "8.2.0", "8.1.0" };
	struct run t;
	const char *out;
	int i;
	(void)state;
	start(&t, versions, 2);
	for (i = 0; i < 3; i++) {
		feed(&t, "{\"event\":\"resourceMonitorReport\",\"properties\":{\"appVersion\":\"8.1.0\","
		     "\"appMode\":\"ODD\",\"systemUptimeHrs\":\"x\"}}");
		/* not what upstream's query returns: no appMode */
		feed(&t, "{\"event\":\"resourceMonitorReport\",\"properties\":{\"appVersion\":\"8.2.0\","
		     "\"systemUptimeHrs\":\"1\",\"systemAvailMemMb\":\"1\"}}");
	}
	out = render(&t, P_EXACT, 0);
	/* 8.2.0 had no report upstream's query selects; 8.1.0 had reports,
	 * none usable */
	assert_non_null(strstr(out, "\"8.2.0\": \"N/A - No data available\",\n  \"8.1.0\": {\n    \"odd-available-memory\": {\n      \"correlation\": \"0.0000\",\n      \"sampleSize\": 0,"));
	assert_int_equal(t.a->skipped[SKIP_BAD_UPTIME], 3);
	assert_int_equal(t.a->left_out[LEFT_NO_MODE], 3);
	finish(&t);
}

static void user_rules_come_before_the_defaults(void **state)
{
	struct analyze_rule mine[2];
	struct analyze_rule *agg, *drop, all_agg[8], all_drop[8];
	int n_agg, n_drop, i;
	char err[256];
	struct run t;
	(void)state;
	start(&t, NULL, 0);
	assert_int_equal(analyze_rule_compile(&mine[0], "^python3 -m uvicorn", "mine", err, sizeof(err)), 0);
	assert_int_equal(analyze_rule_compile(&mine[1], "^otherproc$", NULL, err, sizeof(err)), 0);
	assert_int_equal(analyze_default_rules(&agg, &n_agg, &drop, &n_drop), 0);
	all_agg[0] = mine[0];
	for (i = 0; i < n_agg; i++)
		all_agg[1 + i] = agg[i];
	all_drop[0] = mine[1];
	for (i = 0; i < n_drop; i++)
		all_drop[1 + i] = drop[i];
	t.cfg.aggregate = all_agg;
	t.cfg.n_aggregate = n_agg + 1;
	t.cfg.drop = all_drop;
	t.cfg.n_drop = n_drop + 1;
	assert_int_equal(analysis_resolve_name(t.a, UVICORN, strlen(UVICORN)),
			 analysis_resolve_name(t.a, "mine", 4));
	assert_int_equal(analysis_resolve_name(t.a, "otherproc", 9), -1);
	assert_true(analysis_resolve_name(t.a, "otherproc2", 10) >= 0);
	assert_int_equal(analysis_resolve_name(t.a, "nmcli x", 7), -1);
	regfree(&mine[0].re);
	regfree(&mine[1].re);
	assert_int_equal(analyze_rule_compile(&mine[1], "(", NULL, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "bad regular expression '('"));
	finish(&t);
}

/* Regression (fuzz_series): axis ticks were found by adding the step to a
 * double, which never reached the end near 1e17 h; and a single value
 * there made a zero-width axis. The chart must finish, with no NaN. */
static void svg_of_huge_and_degenerate_uptimes(void **state)
{
	struct report_opts o = { .p_method = P_EXACT, .min_samples = 30 };
	struct version_result *res;
	char path[] = "/tmp/pmetrics-svg-test.XXXXXX", buf[65536];
	struct run t;
	size_t n;
	FILE *f;
	int i, fd;
	(void)state;
	alarm(20); /* a hang fails the test instead of stalling the suite */
	start(&t, NULL, 0);
	t.cfg.points_per_key = 100;
	assert_int_equal(analysis_version(t.a, "8.2.0", 5), 0);
	t.a->versions[0].has_reports = 1;
	for (i = 0; i < 30; i++) {
		add(t.a, "huge", 1e17 + 32 * (i % 3), 1 + i % 3);
		add(t.a, "one-point", 1e17, 5);
		analysis_add_system(t.a, 0, 1e300, -1e300 * (i % 2));
	}
	analysis_order_versions(t.a);
	assert_int_equal(report_compute(t.a, &o, &res), 0);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(report_write_svg(path, res, t.a->n_versions, &o), 0);
	report_free(res, t.a->n_versions);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	unlink(path);
	buf[n] = '\0';
	assert_true(n > 1000 && n < sizeof(buf) - 1);
	assert_non_null(strstr(buf, "\"title\">8.2.0 \xc2\xb7 huge"));
	if (strstr(buf, "nan"))
		fail_msg("nan in: %.200s", strstr(buf, "nan") - 100);
	assert_int_equal(strcmp(buf + n - 7, "</svg>\n"), 0);
	alarm(0);
	finish(&t);
}

/* ---- semantic version order -------------------------------------------- */

static int newer(const char *a, const char *b)
{
	return version_cmp_newest_first(a, b) < 0 && version_cmp_newest_first(b, a) > 0;
}

static void semver_precedence(void **state)
{
	(void)state;
	assert_true(newer("8.2.0", "8.2.0-alpha.2"));
	assert_true(newer("8.2.0-alpha.2", "8.2.0-alpha.1"));
	assert_true(newer("8.2.0-alpha.1", "8.1.0"));
	assert_true(newer("8.2.0-alpha.10", "8.2.0-alpha.2")); /* numeric, not text */
	assert_true(newer("8.10.0", "8.9.0"));
	assert_true(newer("8.2.0-beta", "8.2.0-alpha.5"));
	assert_true(newer("8.2.0-alpha.1.1", "8.2.0-alpha.1"));  /* more fields */
	assert_true(newer("8.2.0-alpha.a", "8.2.0-alpha.9"));    /* text > number */
	assert_true(newer("1.0.0", "not-a-version"));
	assert_int_equal(version_cmp_newest_first("8.2.0", "8.2.0+build.5") != 0, 1); /* tie, byte order */
	assert_true(newer("v8.3", "8.2.9"));
	/* regression (fuzz_jsonl, clang UBSan): two releases without a
	 * pre-release tag took NULL + 0 in pre_cmp */
	assert_int_equal(version_cmp_newest_first("8.2.0", "8.2.0"), 0);
	assert_true(newer("8.2.0", "v8.2.0")); /* equal precedence: byte order */
	assert_true(version_is_semver("8.2.0-alpha.1"));
	assert_false(version_is_semver("8.2.0-"));
	assert_false(version_is_semver("8.2.0.1"));
	assert_false(version_is_semver("chore_release-8.2.0"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(upstream_json_byte_for_byte),
		cmocka_unit_test(n_29_drops_process_keys_but_reports_the_system),
		cmocka_unit_test(n_30_is_enough),
		cmocka_unit_test(bucket_edges_at_20_and_240_hours),
		cmocka_unit_test(upstream_and_exact_p_disagree_on_a_moderate_trend),
		cmocka_unit_test(constant_series_as_upstream_computes_them),
		cmocka_unit_test(text_names_the_constant_series),
		cmocka_unit_test(json_strings_like_json_stringify),
		cmocka_unit_test(names_as_upstream_object_keys),
		cmocka_unit_test(versions_newest_first_with_pre_releases),
		cmocka_unit_test(version_with_unusable_reports_is_not_no_data),
		cmocka_unit_test(user_rules_come_before_the_defaults),
		cmocka_unit_test(svg_of_huge_and_degenerate_uptimes),
		cmocka_unit_test(semver_precedence),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
