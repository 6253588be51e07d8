// SPDX-License-Identifier: MIT
/* What counts as a report: the rules of upstream's query and of its
 * processMixpanelData, applied to what a JSON reader extracted. */
#include "event.h"

#include <math.h>
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

/* A number the way upstream reads it: parseFloat of a string, or a JSON
 * number. Everything else is NaN. */
static double raw_number(const struct raw_value *v)
{
	if (v->kind == RAW_STRING)
		return js_parse_float(v->str, v->len);
	return v->kind == RAW_NUMBER ? v->num : NAN;
}

static void take_processes(struct analysis *a, size_t version, double uptime,
			   const struct raw_event *ev)
{
	size_t i;

	if (ev->processes.kind != RAW_ARRAY) {
		if (ev->processes.kind != RAW_ABSENT)
			a->values_skipped++;
		return;
	}
	for (i = 0; i < ev->n_procs; i++) {
		const struct raw_process *p = &ev->procs[i];
		double mb;
		long key;

		if (!p->is_object || p->name.kind != RAW_STRING) {
			a->values_skipped++;
			continue;
		}
		key = analysis_resolve_name(a, p->name.str, p->name.len);
		if (key < 0) {
			a->processes_dropped++;
			continue;
		}
		mb = raw_number(&p->mem_rss_mb);
		if (!isfinite(mb)) {
			a->values_skipped++;
			continue;
		}
		analysis_add_process(a, version, key, uptime, mb);
	}
}

void event_take(struct analysis *a, const struct raw_event *ev, const char *source,
		uint64_t line)
{
	double uptime, avail;
	long vi;

	if (!ev->is_object) {
		analysis_skip(a, source, line, SKIP_NOT_REPORT);
		return;
	}
	if (ev->event.kind != RAW_ABSENT && !raw_is(&ev->event, "resourceMonitorReport")) {
		a->other_event++;
		return;
	}
	if (!ev->has_properties) {
		analysis_skip(a, source, line, SKIP_NOT_REPORT);
		return;
	}
	if (ev->app_mode.kind != RAW_ABSENT && !raw_is(&ev->app_mode, "ODD")) {
		a->other_event++; /* upstream asks for appMode == "ODD" only */
		return;
	}
	if (ev->app_version.kind != RAW_STRING) {
		analysis_skip(a, source, line, SKIP_NO_VERSION);
		return;
	}
	vi = analysis_version(a, ev->app_version.str, ev->app_version.len);
	if (vi < 0) {
		a->other_version++;
		return;
	}
	/* Upstream reports a version that had events even when none of them
	 * had a usable uptime. */
	a->versions[vi].has_reports = 1;
	uptime = raw_number(&ev->uptime_hrs);
	if (!isfinite(uptime)) {
		analysis_skip(a, source, line, SKIP_BAD_UPTIME);
		return;
	}
	a->records_used++;
	avail = raw_number(&ev->avail_mem_mb);
	if (isfinite(avail))
		analysis_add_system(a, (size_t)vi, uptime, avail);
	else
		a->values_skipped++;
	take_processes(a, (size_t)vi, uptime, ev);
}
