// SPDX-License-Identifier: MIT
/* What counts as a report: the filter of upstream's Mixpanel query (event
 * resourceMonitorReport, appMode "ODD", the appVersion asked for) and the
 * reading of its processMixpanelData, applied to what a JSON reader
 * extracted. */
#include "event.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void raw_event_clear(struct raw_event *ev)
{
	struct raw_process *procs = ev->procs;
	size_t cap = ev->cap_procs;

	memset(ev, 0, sizeof(*ev));
	ev->procs = procs;
	ev->cap_procs = cap;
}

void raw_event_grow(struct raw_event *ev)
{
	ev->cap_procs = ev->cap_procs ? ev->cap_procs * 2 : 16;
	ev->procs = analyze_xrealloc(ev->procs, ev->cap_procs * sizeof(*ev->procs));
}

void raw_event_free(struct raw_event *ev)
{
	free(ev->procs);
	memset(ev, 0, sizeof(*ev));
}

static int raw_is(const struct raw_value *v, const char *want)
{
	size_t n = strlen(want);

	return v->kind == RAW_STRING && v->len == n && memcmp(v->str, want, n) == 0;
}

/* parseFloat of the value, as upstream reads every number: a string's
 * decimal prefix, a number as it is (-0 becomes 0, through its text),
 * anything else NaN. */
static double raw_number(const struct raw_value *v)
{
	if (v->kind == RAW_STRING)
		return js_parse_float(v->str, v->len);
	if (v->kind == RAW_NUMBER)
		return v->num == 0 ? 0 : v->num;
	return NAN;
}

/* V for a -v line: the string as written (cut short), else the number as
 * JavaScript prints it. */
static const char *describe(const struct raw_value *v, char *buf, size_t size)
{
	size_t i, n = v->len < 40 ? v->len : 40;

	if (v->kind != RAW_STRING) {
		js_number_to_string(v->num, buf, size);
		return buf;
	}
	if (n + 6 > size)
		n = size - 6;
	buf[0] = '"';
	for (i = 0; i < n; i++)
		buf[i + 1] = (unsigned char)v->str[i] < 0x20 ? '?' : v->str[i];
	strcpy(buf + n + 1, n < v->len ? "...\"" : "\"");
	return buf;
}

/* A value upstream would add to a series: a number to parseFloat. It adds
 * Infinity as well, and calculate-correlation then throws 'Input not
 * valid' on the whole run, so an infinite value is skipped here, and
 * named with -v. */
static int usable(struct analysis *a, double v, const char *field, const struct raw_value *raw,
		  const char *source, uint64_t line)
{
	char buf[64];

	if (isnan(v)) {
		a->values_skipped++;
		return 0;
	}
	if (isinf(v)) {
		analysis_skip_infinite(a, source, line, field, describe(raw, buf, sizeof(buf)));
		return 0;
	}
	return 1;
}

#define NO_KEY (-2)

/* The key of a process's name. Upstream's Map is keyed by the value
 * itself, so a name that is not a string is a key of its own, printed as
 * String() prints it: "undefined" for no name, "null", "true", "5". An
 * object or array is a new key at every sample that never reaches the
 * minimum sample count: NO_KEY. -1: a rule dropped the name. */
static long name_key(struct analysis *a, const struct raw_value *name)
{
	static const char *const words[] = {
		[RAW_ABSENT] = "undefined", [RAW_NULL] = "null", [RAW_FALSE] = "false", [RAW_TRUE] = "true",
	};
	char buf[32];

	switch (name->kind) {
	case RAW_STRING:
		return analysis_resolve_name(a, name->str, name->len);
	case RAW_NUMBER:
		js_number_to_string(name->num, buf, sizeof(buf));
		return analysis_resolve_typed_name(a, buf, strlen(buf));
	case RAW_ABSENT:
	case RAW_NULL:
	case RAW_FALSE:
	case RAW_TRUE:
		return analysis_resolve_typed_name(a, words[name->kind], strlen(words[name->kind]));
	default:
		return NO_KEY;
	}
}

static void take_processes(struct analysis *a, size_t version, double uptime,
			   const struct raw_event *ev, const char *source, uint64_t line)
{
	size_t i;

	if (ev->processes.kind != RAW_ARRAY) {
		/* upstream throws a TypeError on the whole run here; the
		 * system sample is kept */
		if (ev->processes.kind != RAW_ABSENT && ev->processes.kind != RAW_NULL)
			a->values_skipped++;
		return;
	}
	for (i = 0; i < ev->n_procs; i++) {
		const struct raw_process *p = &ev->procs[i];
		double mb;
		long key;

		key = p->is_object ? name_key(a, &p->name) : NO_KEY;
		if (key == NO_KEY) {
			a->values_skipped++;
			continue;
		}
		if (key < 0) {
			a->processes_dropped++;
			continue;
		}
		mb = raw_number(&p->mem_rss_mb);
		if (usable(a, mb, "memRssMb", &p->mem_rss_mb, source, line))
			analysis_add_process(a, version, key, uptime, mb);
	}
}

/* The filter of upstream's query: the index of the version the event
 * counts for, or -1 after counting why it is left out or skipped. */
static long query(struct analysis *a, const struct raw_event *ev, const char *source,
		  uint64_t line)
{
	long vi;

	if (!ev->is_object) {
		analysis_skip(a, source, line, SKIP_NOT_REPORT);
		return -1;
	}
	if (!raw_is(&ev->event, "resourceMonitorReport")) {
		a->left_out[LEFT_OTHER_EVENT]++;
		return -1;
	}
	if (!ev->has_properties) {
		analysis_skip(a, source, line, SKIP_NOT_REPORT);
		return -1;
	}
	if (!raw_is(&ev->app_mode, "ODD")) {
		a->left_out[ev->app_mode.kind == RAW_ABSENT ? LEFT_NO_MODE : LEFT_OTHER_MODE]++;
		return -1;
	}
	if (ev->app_version.kind != RAW_STRING) {
		analysis_skip(a, source, line, SKIP_NO_VERSION);
		return -1;
	}
	vi = analysis_version(a, ev->app_version.str, ev->app_version.len);
	if (vi < 0)
		a->left_out[LEFT_OTHER_VERSION]++;
	return vi;
}

void event_take(struct analysis *a, const struct raw_event *ev, const char *source,
		uint64_t line)
{
	double uptime, avail;
	long vi = query(a, ev, source, line);
	char buf[64];

	if (vi < 0)
		return;
	/* Upstream reports a version that had events even when none of them
	 * had a usable uptime. */
	a->versions[vi].has_reports = 1;
	uptime = raw_number(&ev->uptime_hrs);
	if (isnan(uptime)) {
		analysis_skip(a, source, line, SKIP_BAD_UPTIME);
		return;
	}
	if (isinf(uptime)) {
		analysis_skip_because(a, source, line, SKIP_INFINITE_UPTIME,
				      describe(&ev->uptime_hrs, buf, sizeof(buf)));
		return;
	}
	a->records_used++;
	avail = raw_number(&ev->avail_mem_mb);
	if (usable(a, avail, "systemAvailMemMb", &ev->avail_mem_mb, source, line))
		analysis_add_system(a, (size_t)vi, uptime, avail);
	take_processes(a, (size_t)vi, uptime, ev, source, line);
}
