// SPDX-License-Identifier: MIT
/* JSON lines reader: splits the input into lines and has each parsed,
 * by simdjson when it takes the line, else by json-c after jsparse.c has
 * checked it against JSON.parse's grammar (which decides what is
 * malformed) and rewritten what json-c would read otherwise. Either way
 * the fields go into a struct raw_event and event_take() (event.c)
 * judges them. */
#include "readers.h"

#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

int jsonl_reader_init(struct jsonl_reader *r, struct analysis *a, const char *source)
{
	memset(r, 0, sizeof(*r));
	r->a = a;
	r->source = source;
	r->tok = json_tokener_new_ex(JSPARSE_MAX_DEPTH + 1);
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
	raw_event_free(&r->event);
	jsparse_buf_free(&r->fixed);
	free(r->line);
	r->tok = NULL;
	r->line = NULL;
}

/* V (NULL for JSON null) as the rules see it (raw_kind). */
static void raw_scalar(struct json_object *v, struct raw_value *out)
{
	switch (json_object_get_type(v)) {
	case json_type_null:
		out->kind = RAW_NULL;
		break;
	case json_type_boolean:
		out->kind = json_object_get_boolean(v) ? RAW_TRUE : RAW_FALSE;
		break;
	case json_type_string:
		out->kind = RAW_STRING;
		out->str = json_object_get_string(v);
		out->len = (size_t)json_object_get_string_len(v);
		break;
	case json_type_double:
	case json_type_int:
		out->kind = RAW_NUMBER;
		out->num = json_object_get_double(v);
		break;
	case json_type_array:
		out->kind = RAW_ARRAY;
		break;
	default:
		out->kind = RAW_OBJECT;
		break;
	}
}

/* The value under NAME in O. */
static void raw_field(struct json_object *o, const char *name, struct raw_value *out)
{
	struct json_object *v = NULL;

	if (json_object_object_get_ex(o, name, &v))
		raw_scalar(v, out);
	else
		out->kind = RAW_ABSENT;
}

/* A numeric field: of an array, its first element (event.h). */
static void raw_number_field(struct json_object *o, const char *name, struct raw_value *out)
{
	struct json_object *v = NULL;

	if (!json_object_object_get_ex(o, name, &v)) {
		out->kind = RAW_ABSENT;
		return;
	}
	while (json_object_is_type(v, json_type_array))
		v = json_object_array_length(v) ? json_object_array_get_idx(v, 0) : NULL;
	raw_scalar(v, out);
}

static void extract_processes(struct raw_event *ev, struct json_object *list)
{
	size_t i, n = json_object_array_length(list);

	for (i = 0; i < n; i++) {
		struct json_object *p = json_object_array_get_idx(list, i);
		struct raw_process *rp = raw_event_add_process(ev);

		rp->is_object = json_object_is_type(p, json_type_object);
		if (!rp->is_object)
			continue;
		raw_field(p, "name", &rp->name);
		raw_number_field(p, "memRssMb", &rp->mem_rss_mb);
	}
}

/* Copies the fields the rules look at from a parsed line into EV. */
static void extract_event(struct raw_event *ev, struct json_object *root)
{
	struct json_object *props = NULL, *list = NULL;

	raw_event_clear(ev);
	ev->is_object = json_object_is_type(root, json_type_object);
	if (!ev->is_object)
		return;
	raw_field(root, "event", &ev->event);
	json_object_object_get_ex(root, "properties", &props);
	ev->has_properties = json_object_is_type(props, json_type_object);
	if (!ev->has_properties)
		return;
	raw_field(props, "appMode", &ev->app_mode);
	raw_field(props, "appVersion", &ev->app_version);
	raw_number_field(props, "systemUptimeHrs", &ev->uptime_hrs);
	raw_number_field(props, "systemAvailMemMb", &ev->avail_mem_mb);
	raw_field(props, "processesDetails", &ev->processes);
	if (ev->processes.kind == RAW_ARRAY) {
		json_object_object_get_ex(props, "processesDetails", &list);
		extract_processes(ev, list);
	}
}

/* A line simdjson did not take: checked and, where json-c would read it
 * otherwise than JSON.parse, rewritten (jsparse.h), then parsed. */
static void json_c_line(struct jsonl_reader *r, const char *line, size_t len)
{
	struct json_object *ev = NULL;
	enum jsparse_verdict v = jsparse_prepare(line, len, &r->fixed);
	int parsed = 0;

	if (v == JSPARSE_REWRITTEN) {
		line = r->fixed.s;
		len = r->fixed.len;
	}
	if (v != JSPARSE_MALFORMED) {
		json_tokener_reset(r->tok);
		ev = json_tokener_parse_ex(r->tok, line, (int)len);
		if (!ev && json_tokener_get_error(r->tok) == json_tokener_continue)
			/* A bare number ("123") only ends at a delimiter. */
			ev = json_tokener_parse_ex(r->tok, " ", 1);
		/* success with NULL: the line is the JSON null */
		parsed = json_tokener_get_error(r->tok) == json_tokener_success;
	}
	if (!parsed) {
		analysis_skip(r->a, r->source, r->lineno, SKIP_MALFORMED);
	} else {
		extract_event(&r->event, ev);
		event_take(r->a, &r->event, r->source, r->lineno);
	}
	json_object_put(ev);
}

void jsonl_process_line(struct jsonl_reader *r, const char *line, size_t len)
{
	r->lineno++;
	if (js_space_len(line, len) == len)
		return; /* upstream drops the lines trim() empties, silently */
	r->a->lines++;
#ifdef PM_HAVE_SIMDJSON
	if (r->simd && jsonl_simd_line(r->simd, r, line, len) == 0) {
		r->fast_lines++;
		return;
	}
#endif
	json_c_line(r, line, len);
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
