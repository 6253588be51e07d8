// SPDX-License-Identifier: MIT
/* simdjson fast path of the JSON lines reader. json-c builds a tree of
 * heap objects for every line, ~4 us for a 1 KB report; simdjson's DOM
 * parser validates the same line into a reused tape in ~0.3 us. Any line
 * simdjson refuses (bad UTF-8, numbers out of range, trailing text,
 * nesting deeper than json-c allows...) goes back to the json-c path, which
 * decides whether it is malformed, so both paths skip and use the same
 * lines. The walk below mirrors add_report() in jsonl.c field by
 * field: a JSON null counts as absent, and of duplicate keys the last one
 * wins, as with json-c (and JavaScript's JSON.parse). */
#include <simdjson.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

extern "C" {
#include "readers.h"
}

using namespace simdjson;

/* json-c's tokenizer depth in jsonl.c; deeper lines go to json-c */
static const size_t JSON_DEPTH = 64;

struct jsonl_simd {
	dom::parser parser{ANALYZE_LINE_MAX};
	char *buf = nullptr; /* the line plus SIMDJSON_PADDING readable bytes */
	size_t cap = 0;
};

extern "C" struct jsonl_simd *jsonl_simd_new(void)
{
	jsonl_simd *s = new (std::nothrow) jsonl_simd();

	if (s && s->parser.allocate(4096, JSON_DEPTH) != SUCCESS) {
		delete s;
		s = nullptr;
	}
	return s;
}

extern "C" void jsonl_simd_free(struct jsonl_simd *s)
{
	if (!s)
		return;
	free(s->buf);
	delete s;
}

static bool present(const dom::element &e)
{
	return e.type() != dom::element_type::NULL_VALUE;
}

static bool string_is(const dom::element &e, std::string_view want)
{
	return e.is_string() && e.get_string().value_unsafe() == want;
}

/* report_number() of jsonl.c */
static double number(const dom::element &e)
{
	switch (e.type()) {
	case dom::element_type::STRING: {
		std::string_view s = e.get_string().value_unsafe();
		return js_parse_float(s.data(), s.size());
	}
	case dom::element_type::INT64:
		return (double)e.get_int64().value_unsafe();
	case dom::element_type::UINT64:
		return (double)e.get_uint64().value_unsafe();
	case dom::element_type::DOUBLE:
		return e.get_double().value_unsafe();
	default:
		return NAN;
	}
}

static void add_processes(struct analysis *a, size_t version, double uptime,
			  const dom::element &list)
{
	if (!list.is_array()) {
		a->values_skipped++;
		return;
	}
	dom::array procs = list.get_array().value_unsafe(); /* a copy: no dangling */

	for (dom::element p : procs) {
		dom::element name, mem;
		dom::object fields;
		bool has_name = false, has_mem = false;

		if (p.get_object().get(fields) != SUCCESS) {
			a->values_skipped++;
			continue;
		}
		for (dom::key_value_pair kv : fields) {
			if (kv.key == "name") {
				name = kv.value;
				has_name = true;
			} else if (kv.key == "memRssMb") {
				mem = kv.value;
				has_mem = true;
			}
		}
		if (!has_name || !name.is_string()) {
			a->values_skipped++;
			continue;
		}
		std::string_view n = name.get_string().value_unsafe();
		long key = analysis_resolve_name(a, n.data(), n.size());
		if (key < 0) {
			a->processes_dropped++;
			continue;
		}
		double mb = has_mem ? number(mem) : NAN;
		if (!std::isfinite(mb)) {
			a->values_skipped++;
			continue;
		}
		analysis_add_process(a, version, key, uptime, mb);
	}
}

static void add_report(struct jsonl_reader *r, dom::object ev)
{
	struct analysis *a = r->a;
	dom::element event, props, mode, version, uptime_e, avail_e, procs;
	bool has_event = false, has_props = false, has_mode = false, has_version = false;
	bool has_uptime = false, has_avail = false, has_procs = false;

	for (dom::key_value_pair kv : ev) {
		if (kv.key == "event") {
			event = kv.value;
			has_event = present(kv.value);
		} else if (kv.key == "properties") {
			props = kv.value;
			has_props = true;
		}
	}
	if (has_event && !string_is(event, "resourceMonitorReport")) {
		a->other_event++;
		return;
	}
	dom::object pf;

	if (!has_props || props.get_object().get(pf) != SUCCESS) {
		analysis_skip(a, r->source, r->lineno, SKIP_NOT_REPORT);
		return;
	}
	for (dom::key_value_pair kv : pf) {
		std::string_view k = kv.key;

		if (k == "appMode") {
			mode = kv.value;
			has_mode = present(kv.value);
		} else if (k == "appVersion") {
			version = kv.value;
			has_version = true;
		} else if (k == "systemUptimeHrs") {
			uptime_e = kv.value;
			has_uptime = true;
		} else if (k == "systemAvailMemMb") {
			avail_e = kv.value;
			has_avail = true;
		} else if (k == "processesDetails") {
			procs = kv.value;
			has_procs = present(kv.value);
		}
	}
	if (has_mode && !string_is(mode, "ODD")) {
		a->other_event++;
		return;
	}
	if (!has_version || !version.is_string()) {
		analysis_skip(a, r->source, r->lineno, SKIP_NO_VERSION);
		return;
	}
	std::string_view v = version.get_string().value_unsafe();
	long vi = analysis_version(a, v.data(), v.size());
	if (vi < 0) {
		a->other_version++;
		return;
	}
	a->versions[vi].has_reports = 1;
	double uptime = has_uptime ? number(uptime_e) : NAN;
	if (!std::isfinite(uptime)) {
		analysis_skip(a, r->source, r->lineno, SKIP_BAD_UPTIME);
		return;
	}
	a->records_used++;
	double avail = has_avail ? number(avail_e) : NAN;
	if (std::isfinite(avail))
		analysis_add_system(a, (size_t)vi, uptime, avail);
	else
		a->values_skipped++;
	if (has_procs)
		add_processes(a, (size_t)vi, uptime, procs);
}

extern "C" int jsonl_simd_line(struct jsonl_simd *s, struct jsonl_reader *r,
			       const char *line, size_t len)
{
	dom::element ev;
	dom::object obj;

	if (len + SIMDJSON_PADDING > s->cap) {
		size_t cap = len + SIMDJSON_PADDING + 4096;
		char *p = (char *)realloc(s->buf, cap);

		if (!p)
			return -1;
		s->buf = p;
		s->cap = cap;
	}
	memcpy(s->buf, line, len);
	memset(s->buf + len, 0, SIMDJSON_PADDING);
	if (s->parser.parse(s->buf, len, false).get(ev) != SUCCESS)
		return -1;
	if (ev.get_object().get(obj) != SUCCESS)
		analysis_skip(r->a, r->source, r->lineno, SKIP_NOT_REPORT);
	else
		add_report(r, obj);
	return 0;
}
