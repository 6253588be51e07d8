// SPDX-License-Identifier: MIT
/* What counts as a report, as one table: each row is one JSON line and
 * what it must be worth (used with which samples, or skipped and why).
 * Every row runs through the json-c reader alone and through the simdjson
 * fast path (when built in), and both must give exactly the row's result:
 * the two readers share one rule set (event.c), and this proves that what
 * they extract for it is the same, awkward lines included. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/model.h"
#include "analyze/readers.h"

/* Lines are written with ' for " to stay readable; RAW rows are fed as
 * they are (for a real '). */
#define REPORT(props) "{'event':'resourceMonitorReport','properties':{" props "}}"
#define ODD "'appVersion':'8.2.0','appMode':'ODD',"
#define ODD_JSON "\"appVersion\":\"8.2.0\",\"appMode\":\"ODD\","
#define UVICORN "python3 -m uvicorn robot_server.app:app"

enum verdict {
	USED,          /* a report: its samples are below */
	BLANK,         /* not even counted as a line */
	/* skipped, one per skip_reason */
	MALFORMED,
	NOT_REPORT,
	NO_VERSION,
	BAD_UPTIME,
	INFINITE_UPTIME,
	/* left out: not what upstream's query selects */
	OTHER_EVENT,
	NO_MODE,
	OTHER_MODE,
};

static const int skip_of[] = {
	[MALFORMED] = SKIP_MALFORMED, [NOT_REPORT] = SKIP_NOT_REPORT, [NO_VERSION] = SKIP_NO_VERSION,
	[BAD_UPTIME] = SKIP_BAD_UPTIME, [INFINITE_UPTIME] = SKIP_INFINITE_UPTIME,
};
static const int left_out_of[] = {
	[OTHER_EVENT] = LEFT_OTHER_EVENT, [NO_MODE] = LEFT_NO_MODE, [OTHER_MODE] = LEFT_OTHER_MODE,
};

struct want_sample {
	const char *key;
	size_t key_len; /* 0: strlen(key) */
	double mb;      /* the mean of its samples */
	uint64_t n;     /* 0: one sample */
};

struct rule_case {
	const char *what;
	const char *line;
	char *(*build)(size_t *len); /* makes the line when it is too long to write */
	size_t len;         /* 0: strlen(line) */
	int raw;            /* fed as written: no ' -> " */
	enum verdict verdict;
	const char *version; /* USED: NULL means 8.2.0 */
	double uptime;
	double avail;       /* NAN: no system sample */
	struct want_sample procs[3]; /* keys in first-seen order */
	unsigned values_skipped, infinite, dropped;
};

#define LONG_NAME_LEN 5000
static char *long_name_line(size_t *len);
static char *nested_1023_line(size_t *len);
static char *nested_1024_line(size_t *len);

static const struct rule_case cases[] = {
	{ "numbers as strings, the ODD's own form",
	  REPORT(ODD "'systemUptimeHrs':'26.00','systemAvailMemMb':'1043.12','processesDetails':"
		 "[{'name':'" UVICORN "','memRssMb':'201.55'},{'name':'nmcli c','memRssMb':'3'},"
		 "{'name':'x','memRssMb':'12.5'}]"),
	  .verdict = USED, .uptime = 26, .avail = 1043.12,
	  .procs = { { "robot-server-uvicorn-processes", 0, 201.55 }, { "x", 0, 12.5 } },
	  .dropped = 1 },
	{ "numbers as JSON numbers",
	  REPORT(ODD "'systemUptimeHrs':26.5,'systemAvailMemMb':1043,'processesDetails':"
		 "[{'name':'x','memRssMb':-1.5e2}]"),
	  .verdict = USED, .uptime = 26.5, .avail = 1043, .procs = { { "x", 0, -150 } } },
	{ "strings read like parseFloat: space before, text after",
	  REPORT(ODD "'systemUptimeHrs':' \\t26.5h','systemAvailMemMb':'1e3MB','processesDetails':"
		 "[{'name':'x','memRssMb':'+.5'},{'name':'y','memRssMb':'-0x10'}]"),
	  .verdict = USED, .uptime = 26.5, .avail = 1000, .procs = { { "x", 0, 0.5 }, { "y", 0, 0 } } },
	{ "strings read like parseFloat: Unicode spaces before",
	  REPORT(ODD "'systemUptimeHrs':'\xe3\x80\x80\\u2003 7','systemAvailMemMb':'\\u00a05'"),
	  .verdict = USED, .uptime = 7, .avail = 5 },
	{ "Infinity as a string is a number to parseFloat, but not a finite one",
	  REPORT(ODD "'systemUptimeHrs':'-Infinity'"), .verdict = INFINITE_UPTIME },
	{ "an infinite value is skipped, the rest of its line used",
	  REPORT(ODD "'systemUptimeHrs':'1','systemAvailMemMb':'1e999','processesDetails':"
		 "[{'name':'x','memRssMb':'Infinityx'},{'name':'y','memRssMb':'2'}]"),
	  .verdict = USED, .uptime = 1, .avail = NAN, .procs = { { "y", 0, 2 } },
	  .values_skipped = 2, .infinite = 2 },
	{ "extra fields anywhere are ignored",
	  "{'x':[1,{'y':null}],'event':'resourceMonitorReport','time':1,'properties':{'a':{},"
	  ODD "'systemUptimeHrs':'1','z':[],'processesDetails':[{'pid':3,'name':'x','memRssMb':'2','q':true}]}}",
	  .verdict = USED, .uptime = 1, .avail = NAN, .procs = { { "x", 0, 2 } }, .values_skipped = 1 },
	{ "whitespace between every token, CR at the end",
	  " { 'event' : 'resourceMonitorReport' ,\t'properties' : { 'appVersion' : '8.2.0' , 'appMode':'ODD' , "
	  "'systemUptimeHrs' : 3 , 'processesDetails' : [ { 'name' : 'x' , 'memRssMb' : 4 } ] } }\r",
	  .verdict = USED, .uptime = 3, .avail = NAN, .procs = { { "x", 0, 4 } }, .values_skipped = 1 },
	{ "a repeated key: the last one wins, as in JSON.parse",
	  REPORT("'appMode':'OT2','appMode':'ODD','appVersion':'1','appVersion':'8.2.0','systemUptimeHrs':'9','systemUptimeHrs':'2',"
		 "'processesDetails':[{'name':'a','name':'b','memRssMb':'1','memRssMb':'7'}]"),
	  .verdict = USED, .uptime = 2, .avail = NAN, .procs = { { "b", 0, 7 } }, .values_skipped = 1 },
	{ "null is no number, and a null process list no list",
	  REPORT(ODD "'systemUptimeHrs':'1','systemAvailMemMb':null,'processesDetails':null"),
	  .verdict = USED, .uptime = 1, .avail = NAN, .values_skipped = 1 },
	{ "no event name: not what the query selects",
	  "{'properties':{" ODD "'systemUptimeHrs':'1','systemAvailMemMb':'5'}}", .verdict = OTHER_EVENT },
	{ "another event", "{'event':'appStart','properties':{" ODD "'systemUptimeHrs':'1'}}",
	  .verdict = OTHER_EVENT },
	{ "event name of the wrong type", "{'event':7,'properties':{" ODD "'systemUptimeHrs':'1'}}",
	  .verdict = OTHER_EVENT },
	{ "no appMode", REPORT("'appVersion':'8.2.0','systemUptimeHrs':'1'"), .verdict = NO_MODE },
	{ "appMode of another kind of robot", REPORT("'appVersion':'8.2.0','appMode':'OT2','systemUptimeHrs':'1'"),
	  .verdict = OTHER_MODE },
	{ "appMode in lower case", REPORT("'appVersion':'8.2.0','appMode':'odd','systemUptimeHrs':'1'"),
	  .verdict = OTHER_MODE },
	{ "appMode null", REPORT("'appVersion':'8.2.0','appMode':null,'systemUptimeHrs':'1'"),
	  .verdict = OTHER_MODE },
	{ "appMode in an array", REPORT("'appVersion':'8.2.0','appMode':['ODD'],'systemUptimeHrs':'1'"),
	  .verdict = OTHER_MODE },
	{ "no appVersion", REPORT("'appMode':'ODD','systemUptimeHrs':'1'"), .verdict = NO_VERSION },
	{ "appVersion as a number", REPORT("'appMode':'ODD','appVersion':8.2,'systemUptimeHrs':'1'"),
	  .verdict = NO_VERSION },
	{ "uptime missing", REPORT(ODD "'systemAvailMemMb':'5'"), .verdict = BAD_UPTIME },
	{ "uptime not a number", REPORT(ODD "'systemUptimeHrs':'abc'"), .verdict = BAD_UPTIME },
	{ "uptime true", REPORT(ODD "'systemUptimeHrs':true"), .verdict = BAD_UPTIME },
	{ "uptime an object", REPORT(ODD "'systemUptimeHrs':{'h':1}"), .verdict = BAD_UPTIME },
	{ "uptime NaN in letters", REPORT(ODD "'systemUptimeHrs':'NaN'"), .verdict = BAD_UPTIME },
	{ "uptime beyond the largest double", REPORT(ODD "'systemUptimeHrs':1e400"), .verdict = INFINITE_UPTIME },
	{ "numbers in arrays read as parseFloat reads the array's text: its first element",
	  REPORT(ODD "'systemUptimeHrs':['26.5h',2],'systemAvailMemMb':[[7]],'processesDetails':"
		 "[{'name':'c','memRssMb':[['4.5x',2]]},{'name':'e','memRssMb':[]},{'name':'f','memRssMb':[null,3]},"
		 "{'name':'g','memRssMb':[{}]},{'name':'h','memRssMb':[true]}]"),
	  .verdict = USED, .uptime = 26.5, .avail = 7, .procs = { { "c", 0, 4.5 } }, .values_skipped = 4 },
	{ "an empty array is no uptime", REPORT(ODD "'systemUptimeHrs':[]"), .verdict = BAD_UPTIME },
	{ "integers beyond 64 bits: the nearest double, as JSON.parse reads them",
	  REPORT(ODD "'systemUptimeHrs':123456789012345678901234567890,"
		 "'systemAvailMemMb':-98765432109876543210987,'processesDetails':"
		 "[{'name':'x','memRssMb':18446744073709551616},{'name':'y','memRssMb':9223372036854775807}]"),
	  .verdict = USED, .uptime = 1.2345678901234568e29, .avail = -9.876543210987654e22,
	  .procs = { { "x", 0, 18446744073709551616.0 }, { "y", 0, 9223372036854775807.0 } } },
	{ "digits of another script are not digits",
	  REPORT(ODD "'systemUptimeHrs':'\xd9\xa1\xd9\xa2'"), .verdict = BAD_UPTIME },
	{ "the process list of the wrong type",
	  REPORT(ODD "'systemUptimeHrs':'1','systemAvailMemMb':'5','processesDetails':'x'"),
	  .verdict = USED, .uptime = 1, .avail = 5, .values_skipped = 1 },
	{ "process entries that are no objects, or hold no number, or are named by an object",
	  REPORT(ODD "'systemUptimeHrs':'1','systemAvailMemMb':'5','processesDetails':"
		 "[7,null,[],'p',{},{'name':'a','memRssMb':'x'},{'name':'d'},"
		 "{'name':{'x':1},'memRssMb':'1'},{'name':[2],'memRssMb':'1'},{'name':'b','memRssMb':1e400}]"),
	  .verdict = USED, .uptime = 1, .avail = 5, .values_skipped = 10, .infinite = 1 },
	{ "a process without a name is the key undefined, as in upstream's Map",
	  REPORT(ODD "'systemUptimeHrs':'1','systemAvailMemMb':'5','processesDetails':[{'memRssMb':'1'}]"),
	  .verdict = USED, .uptime = 1, .avail = 5, .procs = { { "undefined", 0, 1 } } },
	{ "names of other JSON types are keys of their own, named as String() names them",
	  REPORT(ODD "'systemUptimeHrs':'1','systemAvailMemMb':'5','processesDetails':"
		 "[{'name':3,'memRssMb':'1'},{'name':null,'memRssMb':'2'},{'name':true,'memRssMb':'3'}]"),
	  .verdict = USED, .uptime = 1, .avail = 5,
	  .procs = { { "3", 0, 1 }, { "null", 0, 2 }, { "true", 0, 3 } } },
	{ "more of them: false, 1e21, -0",
	  REPORT(ODD "'systemUptimeHrs':'1','systemAvailMemMb':'5','processesDetails':"
		 "[{'name':false,'memRssMb':'1'},{'name':1e21,'memRssMb':'2'},{'name':-0,'memRssMb':'3'}]"),
	  .verdict = USED, .uptime = 1, .avail = 5,
	  .procs = { { "false", 0, 1 }, { "1e+21", 0, 2 }, { "0", 0, 3 } } },
	{ "the number 5 and the string \"5\" are two keys (the report merges them)",
	  REPORT(ODD "'systemUptimeHrs':'1','systemAvailMemMb':'5','processesDetails':"
		 "[{'name':5,'memRssMb':'1'},{'name':'5','memRssMb':'2'},{'name':5.0,'memRssMb':'3'}]"),
	  .verdict = USED, .uptime = 1, .avail = 5, .procs = { { "5", 0, 2, 2 }, { "5", 0, 2 } } },
	{ "nested oddities stay where they are",
	  REPORT(ODD "'systemUptimeHrs':'1','systemAvailMemMb':'5','processesDetails':"
		 "[[[[[[{'name':'deep','memRssMb':'1'}]]]]],{'name':{'name':'x'},'memRssMb':'1'},"
		 "{'name':'e','memRssMb':'2','more':{'a':[[[[[[[[[[1]]]]]]]]]]}}]"),
	  .verdict = USED, .uptime = 1, .avail = 5, .procs = { { "e", 0, 2 } }, .values_skipped = 2 },
	{ "a name holding NUL and non-ASCII is kept whole",
	  REPORT(ODD "'systemUptimeHrs':'1','systemAvailMemMb':'5','processesDetails':"
		 "[{'name':'a\\u0000b \\u00e9\xe2\x82\xac','memRssMb':'1'}]"),
	  .verdict = USED, .uptime = 1, .avail = 5, .procs = { { "a\0b \xc3\xa9\xe2\x82\xac", 9, 1 } } },
	{ "invalid UTF-8 reads as Node decodes it: one U+FFFD per bad sequence",
	  REPORT(ODD "'systemUptimeHrs':'1','systemAvailMemMb':'5','processesDetails':"
		 "[{'name':'a\xff\xfe','memRssMb':'1'},{'name':'b\xf0\x9f\x41','memRssMb':'2'},"
		 "{'name':'a\xef\xbf\xbd\xef\xbf\xbd','memRssMb':'3'}]"),
	  .verdict = USED, .uptime = 1, .avail = 5,
	  .procs = { { "a\xef\xbf\xbd\xef\xbf\xbd", 0, 2, 2 }, { "b\xef\xbf\xbd" "A", 0, 2 } } },
	{ "a lone surrogate is a code unit of its own (WTF-8), a pair is one character",
	  REPORT(ODD "'systemUptimeHrs':'1','systemAvailMemMb':'5','processesDetails':"
		 "[{'name':'x\\ud800','memRssMb':'1'},{'name':'x\\uDFFF\\ud800','memRssMb':'2'},"
		 "{'name':'x\\ud83d\\ude00','memRssMb':'3'}]"),
	  .verdict = USED, .uptime = 1, .avail = 5,
	  .procs = { { "x\xed\xa0\x80", 0, 1 }, { "x\xed\xbf\xbf\xed\xa0\x80", 0, 2 },
		     { "x\xf0\x9f\x98\x80", 0, 3 } } },
	{ "U+FFFD escaped is not a lone surrogate",
	  REPORT(ODD "'systemUptimeHrs':'1','systemAvailMemMb':'5','processesDetails':"
		 "[{'name':'x\\ufffd','memRssMb':'4'}]"),
	  .verdict = USED, .uptime = 1, .avail = 5, .procs = { { "x\xef\xbf\xbd", 0, 4 } } },
	{ "an escaped NUL makes a key of its own, not the key before it",
	  REPORT("'appMode':'ODD','appVersion':'8.2.0','appVersion\\u0000':'9','systemUptimeHrs\\u0000x':'7',"
		 "'systemUptimeHrs':'1','sys\\u0074emAvailMemMb':'5'"),
	  .verdict = USED, .uptime = 1, .avail = 5 },
	{ "__proto__ and constructor are names like any other",
	  REPORT(ODD "'systemUptimeHrs':'1','processesDetails':[{'name':'__proto__','memRssMb':'1'},"
		 "{'name':'constructor','memRssMb':'2'}]"),
	  .verdict = USED, .uptime = 1, .avail = NAN,
	  .procs = { { "__proto__", 0, 1 }, { "constructor", 0, 2 } }, .values_skipped = 1 },
	{ "a very long name", .build = long_name_line, .verdict = USED, .uptime = 1, .avail = NAN,
	  .procs = { { NULL, LONG_NAME_LEN, 1 } }, .values_skipped = 1 },
	{ "1023 levels of nesting in a field nobody reads", .build = nested_1023_line,
	  .verdict = USED, .uptime = 1, .avail = 5 },
	{ "1024 levels: too deep for both readers (JSON.parse has no limit)", .build = nested_1024_line,
	  .verdict = MALFORMED },
	{ "blank", " \t \r", .verdict = BLANK },
	{ "blank to trim(): Unicode spaces, a byte order mark", " \xe3\x80\x80\xc2\xa0\xef\xbb\xbf\f",
	  .verdict = BLANK },
	{ "cut short", "{'event':'resourceMonitorReport','properties':{'appVersion':'8.2", .verdict = MALFORMED },
	{ "text after the object", REPORT(ODD "'systemUptimeHrs':'1'") " x", .verdict = MALFORMED },
	{ "a byte order mark before the object", "\xef\xbb\xbf" REPORT(ODD "'systemUptimeHrs':'1'"),
	  .verdict = MALFORMED },
	{ "not JSON at all", "hello", .verdict = MALFORMED },
	{ "a trailing comma", REPORT(ODD "'systemUptimeHrs':'1',"), .verdict = MALFORMED },
	{ "single quotes, which json-c takes for an object", "{'a':1}", .raw = 1, .verdict = MALFORMED },
	{ "NaN as a bare word, which json-c takes for a number",
	  REPORT(ODD "'systemUptimeHrs':NaN"), .verdict = MALFORMED },
	{ "Infinity as a bare word", REPORT(ODD "'systemUptimeHrs':1,'systemAvailMemMb':-Infinity"),
	  .verdict = MALFORMED },
	{ "a number with a leading zero", REPORT(ODD "'systemUptimeHrs':01"), .verdict = MALFORMED },
	{ "a negative number with a leading zero, which json-c reads",
	  REPORT(ODD "'systemUptimeHrs':-01,'systemAvailMemMb':'5'"), .verdict = MALFORMED },
	{ "a number ending in a point, which json-c reads",
	  REPORT(ODD "'systemUptimeHrs':1.,'systemAvailMemMb':'5'"), .verdict = MALFORMED },
	{ "a leading plus", REPORT(ODD "'systemUptimeHrs':+1"), .verdict = MALFORMED },
	{ "an exponent without digits", REPORT(ODD "'systemUptimeHrs':1e"), .verdict = MALFORMED },
	{ "a raw tab inside a string, which json-c reads",
	  REPORT(ODD "'systemUptimeHrs':'1\t','systemAvailMemMb':'5'"), .verdict = MALFORMED },
	{ "an unknown escape", REPORT(ODD "'systemUptimeHrs':'1\\x'"), .verdict = MALFORMED },
	{ "a bad \\u escape", REPORT(ODD "'systemUptimeHrs':'1\\u12g4'"), .verdict = MALFORMED },
	{ "a word that is not a literal", REPORT(ODD "'systemUptimeHrs':nul"), .verdict = MALFORMED },
	{ "a raw byte outside strings", REPORT(ODD "'systemUptimeHrs':1\xff"), .verdict = MALFORMED },
	{ "an array", "[1,2]", .verdict = NOT_REPORT },
	{ "a string", "'resourceMonitorReport'", .verdict = NOT_REPORT },
	{ "a bare number", "123", .verdict = NOT_REPORT },
	{ "null", "null", .verdict = NOT_REPORT },
	{ "true", " true ", .verdict = NOT_REPORT },
	{ "properties of the wrong type", "{'event':'resourceMonitorReport','properties':[1]}",
	  .verdict = NOT_REPORT },
	{ "no properties", "{'event':'resourceMonitorReport'}", .verdict = NOT_REPORT },
};

#define N_CASES (sizeof(cases) / sizeof(cases[0]))

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

static char *line_of(const char *head, size_t middle, char fill, const char *tail, size_t *len)
{
	size_t h = strlen(head), t = strlen(tail);
	char *s = malloc(h + middle + t + 1);

	assert_non_null(s);
	memcpy(s, head, h);
	memset(s + h, fill, middle);
	memcpy(s + h + middle, tail, t);
	*len = h + middle + t;
	return s;
}

static char *long_name_line(size_t *len)
{
	return line_of("{\"event\":\"resourceMonitorReport\",\"properties\":{\"appVersion\":\"8.2.0\","
		       "\"appMode\":\"ODD\",\"systemUptimeHrs\":1,\"processesDetails\":[{\"name\":\"",
		       LONG_NAME_LEN, 'n', "\",\"memRssMb\":1}]}}", len);
}

/* DEPTH levels in all: the line's object, then arrays in "x". */
static char *nested_line(size_t depth, size_t *len)
{
	char *open, *s;
	size_t n;

	s = line_of("", depth - 1, ']', "}", &n);
	open = line_of("{\"event\":\"resourceMonitorReport\",\"properties\":{" ODD_JSON
		       "\"systemUptimeHrs\":1,\"systemAvailMemMb\":5},\"x\":", depth - 1, '[', "", len);
	open = realloc(open, *len + n);
	assert_non_null(open);
	memcpy(open + *len, s, n);
	*len += n;
	free(s);
	return open;
}

static char *nested_1023_line(size_t *len)
{
	return nested_line(1023, len);
}

static char *nested_1024_line(size_t *len)
{
	return nested_line(1024, len);
}

/* The line of case C as bytes, with its newline. */
static char *case_line(const struct rule_case *c, size_t *len)
{
	size_t n, i;
	char *s;

	if (c->build) {
		s = c->build(&n);
		s = realloc(s, n + 1);
		assert_non_null(s);
	} else {
		n = c->len ? c->len : strlen(c->line);
		s = malloc(n + 1);
		assert_non_null(s);
		memcpy(s, c->line, n);
		for (i = 0; i < n && !c->raw; i++)
			if (s[i] == '\'')
				s[i] = '"';
	}
	s[n] = '\n';
	*len = n + 1;
	return s;
}

static struct analysis *read_case(const struct rule_case *c, int json_c_only, uint64_t *fast)
{
	struct analysis *a = new_analysis();
	struct jsonl_reader r;
	size_t len;
	char *line = case_line(c, &len);

	assert_int_equal(jsonl_reader_init(&r, a, "case"), 0);
	if (json_c_only)
		jsonl_reader_json_c_only(&r);
	jsonl_feed(&r, line, len);
	jsonl_finish(&r);
	*fast += r.fast_lines;
	jsonl_reader_destroy(&r);
	free(line);
	return a;
}

/* Counter by counter, the verdict and nothing else. */
static void check_verdict(const struct rule_case *c, const struct analysis *a)
{
	int k;

	assert_int_equal(a->lines, c->verdict != BLANK);
	assert_int_equal(a->records_used, c->verdict == USED);
	for (k = 0; k < SKIP_REASONS; k++)
		assert_int_equal(a->skipped[k], c->verdict >= MALFORMED && c->verdict <= INFINITE_UPTIME &&
				 skip_of[c->verdict] == k);
	for (k = 0; k < LEFT_OUT_REASONS; k++)
		assert_int_equal(a->left_out[k], c->verdict >= OTHER_EVENT && left_out_of[c->verdict] == k);
	assert_int_equal(a->values_skipped, c->values_skipped);
	assert_int_equal(a->values_infinite, c->infinite);
	assert_int_equal(a->processes_dropped, c->dropped);
}

static void check_samples(const struct rule_case *c, const struct analysis *a)
{
	const struct version_stats *v;
	const char *version = c->version ? c->version : "8.2.0";
	size_t i, n_procs = 0;

	assert_int_equal(a->n_versions, 1);
	v = &a->versions[0];
	assert_string_equal(v->name, version);
	assert_int_equal(v->has_reports, 1);
	assert_int_equal(v->system.trend.n, isnan(c->avail) ? 0 : 1);
	if (!isnan(c->avail)) {
		assert_true(v->system.trend.mean_x == c->uptime);
		assert_true(v->system.trend.mean_y == c->avail);
	}
	while (n_procs < 3 && c->procs[n_procs].key_len + (c->procs[n_procs].key != NULL))
		n_procs++;
	assert_int_equal(v->n_keys, n_procs);
	for (i = 0; i < n_procs; i++) {
		const struct want_sample *w = &c->procs[i];
		size_t want_len = w->key_len ? w->key_len : strlen(w->key), len;
		const char *name = analysis_key_name(a, v->keys[i].key_id, &len);

		assert_int_equal(len, want_len);
		if (w->key)
			assert_memory_equal(name, w->key, len);
		else
			assert_true(len == LONG_NAME_LEN && strspn(name, "n") == LONG_NAME_LEN);
		assert_int_equal(v->keys[i].trend.n, w->n ? w->n : 1);
		assert_true(v->keys[i].trend.mean_x == c->uptime);
		assert_true(v->keys[i].trend.mean_y == w->mb);
	}
}

static void run_case(const struct rule_case *c, int json_c_only)
{
	uint64_t fast = 0;
	struct analysis *a = read_case(c, json_c_only, &fast);

	check_verdict(c, a);
	if (c->verdict == USED)
		check_samples(c, a);
	analysis_free(a);
}

/* One row of the table, through each reader. */
static void row(void **state)
{
	const struct rule_case *c = *state;

	run_case(c, 1);
	run_case(c, 0);
}

/* The rows exercise both paths: simdjson parsed most lines itself and
 * handed the ones it refuses to json-c. */
static void both_paths_are_taken(void **state)
{
	uint64_t fast = 0;
	size_t i;
	(void)state;
	for (i = 0; i < N_CASES; i++)
		analysis_free(read_case(&cases[i], 0, &fast));
#ifdef PM_HAVE_SIMDJSON
	assert_true(fast > N_CASES / 2 && fast < N_CASES);
#else
	assert_int_equal(fast, 0);
#endif
}

int main(void)
{
	struct CMUnitTest tests[N_CASES + 1];
	size_t i;

	for (i = 0; i < N_CASES; i++) {
		memset(&tests[i], 0, sizeof(tests[i]));
		tests[i].name = cases[i].what;
		tests[i].test_func = row;
		tests[i].initial_state = (void *)&cases[i];
	}
	tests[N_CASES] = (struct CMUnitTest)cmocka_unit_test(both_paths_are_taken);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
