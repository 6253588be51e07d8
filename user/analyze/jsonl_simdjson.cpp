// SPDX-License-Identifier: MIT
/* simdjson fast path of the JSON lines reader. json-c builds a tree of
 * heap objects for every line, ~4 us for a 1 KB report; simdjson's DOM
 * parser validates the same line into a reused tape in ~0.3 us. Any line
 * simdjson refuses (bad UTF-8, numbers out of range, trailing text,
 * nesting deeper than json-c allows...) goes back to the json-c path, which
 * decides whether it is malformed. A line simdjson takes has its fields
 * copied into the same struct raw_event as json-c's extract_event() in
 * jsonl.c fills (of duplicate keys the last one wins, as with json-c and
 * JavaScript's JSON.parse), and event_take() judges it: what counts as a
 * report is decided in one place. */
#include <simdjson.h>

#include <cstdlib>
#include <cstring>
#include <new>

extern "C" {
#include "readers.h"
}

using namespace simdjson;

/* Reports nest 4 deep; a deeper line (rare) goes to json-c, which takes
 * up to JSPARSE_MAX_DEPTH levels. */
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

/* The value as the rules see it (raw_kind in event.h); the same mapping
 * as raw_scalar() in jsonl.c. Inlined by force: it runs for every field of
 * every process, and as a call it cost 3% of the whole run. */
static inline __attribute__((always_inline)) void raw_field(const dom::element &v, struct raw_value *out)
{
	switch (v.type()) {
	case dom::element_type::NULL_VALUE:
		out->kind = RAW_NULL;
		break;
	case dom::element_type::BOOL:
		out->kind = v.get_bool().value_unsafe() ? RAW_TRUE : RAW_FALSE;
		break;
	case dom::element_type::STRING: {
		std::string_view s = v.get_string().value_unsafe();
		out->kind = RAW_STRING;
		out->str = s.data();
		out->len = s.size();
		break;
	}
	case dom::element_type::INT64:
		out->kind = RAW_NUMBER;
		out->num = (double)v.get_int64().value_unsafe();
		break;
	case dom::element_type::UINT64:
		out->kind = RAW_NUMBER;
		out->num = (double)v.get_uint64().value_unsafe();
		break;
	case dom::element_type::DOUBLE:
		out->kind = RAW_NUMBER;
		out->num = v.get_double().value_unsafe();
		break;
	case dom::element_type::ARRAY:
		out->kind = RAW_ARRAY;
		break;
	default:
		out->kind = RAW_OBJECT;
		break;
	}
}

/* A numeric field: of an array, its first element (event.h), as
 * raw_number_field() in jsonl.c. */
static inline __attribute__((always_inline)) void raw_number_field(dom::element v, struct raw_value *out)
{
	while (v.type() == dom::element_type::ARRAY) {
		dom::array a = v.get_array().value_unsafe();

		if (a.begin() == a.end()) {
			out->kind = RAW_NULL;
			return;
		}
		v = *a.begin();
	}
	raw_field(v, out);
}

static void extract_processes(struct raw_event *ev, const dom::element &list)
{
	dom::array procs = list.get_array().value_unsafe(); /* a copy: no dangling */

	for (dom::element p : procs) {
		struct raw_process *rp = raw_event_add_process(ev);
		dom::object fields;

		rp->is_object = p.get_object().get(fields) == SUCCESS;
		if (!rp->is_object)
			continue;
		for (dom::key_value_pair kv : fields) { /* a repeated key: the last wins */
			if (kv.key == "name")
				raw_field(kv.value, &rp->name);
			else if (kv.key == "memRssMb")
				raw_number_field(kv.value, &rp->mem_rss_mb);
		}
	}
}

static void extract_properties(struct raw_event *ev, dom::object props)
{
	dom::element procs;

	for (dom::key_value_pair kv : props) {
		std::string_view k = kv.key;

		if (k == "appMode")
			raw_field(kv.value, &ev->app_mode);
		else if (k == "appVersion")
			raw_field(kv.value, &ev->app_version);
		else if (k == "systemUptimeHrs")
			raw_number_field(kv.value, &ev->uptime_hrs);
		else if (k == "systemAvailMemMb")
			raw_number_field(kv.value, &ev->avail_mem_mb);
		else if (k == "processesDetails") {
			raw_field(kv.value, &ev->processes);
			procs = kv.value;
		}
	}
	if (ev->processes.kind == RAW_ARRAY)
		extract_processes(ev, procs);
}

/* Copies the fields the rules look at into EV, like extract_event() in
 * jsonl.c. */
static void extract_event(struct raw_event *ev, const dom::element &root)
{
	dom::object obj, props;
	dom::element props_e;
	bool has_props = false;

	raw_event_clear(ev);
	ev->is_object = root.get_object().get(obj) == SUCCESS;
	if (!ev->is_object)
		return;
	for (dom::key_value_pair kv : obj) {
		if (kv.key == "event") {
			raw_field(kv.value, &ev->event);
		} else if (kv.key == "properties") {
			props_e = kv.value;
			has_props = true;
		}
	}
	ev->has_properties = has_props && props_e.get_object().get(props) == SUCCESS;
	if (ev->has_properties)
		extract_properties(ev, props);
}

extern "C" int jsonl_simd_line(struct jsonl_simd *s, struct jsonl_reader *r,
			       const char *line, size_t len)
{
	dom::element root;

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
	if (s->parser.parse(s->buf, len, false).get(root) != SUCCESS)
		return -1;
	extract_event(&r->event, root);
	event_take(r->a, &r->event, r->source, r->lineno);
	return 0;
}
