// SPDX-License-Identifier: MIT
/* JSON lines reader: one resourceMonitorReport event per line, parsed
 * with json-c's strict tokenizer. */
#include "readers.h"

#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int jsonl_reader_init(struct jsonl_reader *r, struct analysis *a, const char *source)
{
	memset(r, 0, sizeof(*r));
	r->a = a;
	r->source = source;
	r->tok = json_tokener_new_ex(64);
	if (!r->tok)
		return -1;
	json_tokener_set_flags(r->tok, JSON_TOKENER_STRICT);
#ifdef PM_HAVE_SIMDJSON
	r->simd = jsonl_simd_new(); /* NULL (out of memory): json-c does it all */
#endif
	return 0;
}

void jsonl_reader_json_c_only(struct jsonl_reader *r)
{
#ifdef PM_HAVE_SIMDJSON
	jsonl_simd_free(r->simd);
#endif
	r->simd = NULL;
}

void jsonl_reader_destroy(struct jsonl_reader *r)
{
	if (r->tok)
		json_tokener_free(r->tok);
	jsonl_reader_json_c_only(r);
	free(r->line);
	r->tok = NULL;
	r->line = NULL;
}

/* A number the way upstream reads it: parseFloat of a string, or a JSON
 * number. Everything else is NaN. */
static double report_number(struct json_object *o)
{
	switch (json_object_get_type(o)) {
	case json_type_string:
		return js_parse_float(json_object_get_string(o),
				      (size_t)json_object_get_string_len(o));
	case json_type_double:
	case json_type_int:
		return json_object_get_double(o);
	default:
		return NAN;
	}
}

static struct json_object *field(struct json_object *o, const char *name)
{
	struct json_object *v = NULL;

	json_object_object_get_ex(o, name, &v);
	return v;
}

static int string_is(struct json_object *o, const char *want)
{
	size_t n = strlen(want);

	return json_object_get_string_len(o) == (int)n &&
		memcmp(json_object_get_string(o), want, n) == 0;
}

static void add_processes(struct analysis *a, size_t version, double uptime,
			  struct json_object *list)
{
	size_t i, n;

	if (!json_object_is_type(list, json_type_array)) {
		if (list)
			a->values_skipped++;
		return;
	}
	n = json_object_array_length(list);
	for (i = 0; i < n; i++) {
		struct json_object *p = json_object_array_get_idx(list, i);
		struct json_object *name = field(p, "name");
		double mb;
		long key;

		if (!json_object_is_type(p, json_type_object) ||
		    !json_object_is_type(name, json_type_string)) {
			a->values_skipped++;
			continue;
		}
		key = analysis_resolve_name(a, json_object_get_string(name),
					    (size_t)json_object_get_string_len(name));
		if (key < 0) {
			a->processes_dropped++;
			continue;
		}
		mb = report_number(field(p, "memRssMb"));
		if (!isfinite(mb)) {
			a->values_skipped++;
			continue;
		}
		analysis_add_process(a, version, key, uptime, mb);
	}
}

/* One parsed event. */
static void add_report(struct jsonl_reader *r, struct json_object *ev)
{
	struct analysis *a = r->a;
	struct json_object *props, *event, *version, *mode;
	double uptime, avail;
	long vi;

	event = field(ev, "event");
	if (event && !string_is(event, "resourceMonitorReport")) {
		a->other_event++;
		return;
	}
	props = field(ev, "properties");
	if (!json_object_is_type(props, json_type_object)) {
		analysis_skip(a, r->source, r->lineno, SKIP_NOT_REPORT);
		return;
	}
	mode = field(props, "appMode");
	if (mode && !string_is(mode, "ODD")) {
		a->other_event++; /* upstream asks for appMode == "ODD" only */
		return;
	}
	version = field(props, "appVersion");
	if (!json_object_is_type(version, json_type_string)) {
		analysis_skip(a, r->source, r->lineno, SKIP_NO_VERSION);
		return;
	}
	vi = analysis_version(a, json_object_get_string(version),
			      (size_t)json_object_get_string_len(version));
	if (vi < 0) {
		a->other_version++;
		return;
	}
	/* Upstream reports a version that had events even when none of them
	 * had a usable uptime. */
	a->versions[vi].has_reports = 1;
	uptime = report_number(field(props, "systemUptimeHrs"));
	if (!isfinite(uptime)) {
		analysis_skip(a, r->source, r->lineno, SKIP_BAD_UPTIME);
		return;
	}
	a->records_used++;
	avail = report_number(field(props, "systemAvailMemMb"));
	if (isfinite(avail))
		analysis_add_system(a, (size_t)vi, uptime, avail);
	else
		a->values_skipped++;
	add_processes(a, (size_t)vi, uptime, field(props, "processesDetails"));
}

static int blank(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\f' && s[i] != '\v')
			return 0;
	return 1;
}

void jsonl_process_line(struct jsonl_reader *r, const char *line, size_t len)
{
	struct json_object *ev;
	size_t end;

	r->lineno++;
	if (blank(line, len))
		return; /* upstream drops blank lines silently */
	r->a->lines++;
#ifdef PM_HAVE_SIMDJSON
	if (r->simd && jsonl_simd_line(r->simd, r, line, len) == 0)
		return;
#endif
	json_tokener_reset(r->tok);
	ev = json_tokener_parse_ex(r->tok, line, (int)len);
	end = json_tokener_get_parse_end(r->tok);
	if (!ev && json_tokener_get_error(r->tok) == json_tokener_continue && end == len) {
		/* A bare number ("123") only ends at a delimiter: give it one, so
		 * it is "not a report" as simdjson says, rather than malformed. */
		ev = json_tokener_parse_ex(r->tok, " ", 1);
	}
	if (!ev || json_tokener_get_error(r->tok) != json_tokener_success ||
	    !blank(line + end, len - end)) {
		analysis_skip(r->a, r->source, r->lineno, SKIP_MALFORMED);
	} else if (!json_object_is_type(ev, json_type_object)) {
		analysis_skip(r->a, r->source, r->lineno, SKIP_NOT_REPORT);
	} else {
		add_report(r, ev);
	}
	json_object_put(ev);
}

static void append_partial(struct jsonl_reader *r, const char *buf, size_t len)
{
	if (r->too_long)
		return;
	if (r->len + len > ANALYZE_LINE_MAX) {
		r->too_long = 1;
		return;
	}
	if (r->len + len > r->cap) {
		size_t cap = r->cap ? r->cap : 4096;
		char *p;

		while (cap < r->len + len)
			cap *= 2;
		p = realloc(r->line, cap);
		if (!p) {
			r->too_long = 1;
			return;
		}
		r->line = p;
		r->cap = cap;
	}
	memcpy(r->line + r->len, buf, len);
	r->len += len;
}

static void finish_partial(struct jsonl_reader *r)
{
	if (r->too_long) {
		r->lineno++;
		r->a->lines++;
		analysis_skip(r->a, r->source, r->lineno, SKIP_TOO_LONG);
	} else {
		jsonl_process_line(r, r->line, r->len);
	}
	r->len = 0;
	r->too_long = 0;
}

void jsonl_feed(struct jsonl_reader *r, const char *buf, size_t len)
{
	const char *end = buf + len;

	while (buf < end) {
		const char *nl = memchr(buf, '\n', (size_t)(end - buf));

		if (!nl) {
			append_partial(r, buf, (size_t)(end - buf));
			return;
		}
		if (r->len || r->too_long) {
			append_partial(r, buf, (size_t)(nl - buf));
			finish_partial(r);
		} else if ((size_t)(nl - buf) > ANALYZE_LINE_MAX) {
			r->too_long = 1;
			finish_partial(r);
		} else {
			jsonl_process_line(r, buf, (size_t)(nl - buf));
		}
		buf = nl + 1;
	}
}

void jsonl_finish(struct jsonl_reader *r)
{
	if (r->len || r->too_long)
		finish_partial(r);
}
