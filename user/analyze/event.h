// SPDX-License-Identifier: MIT
/* One resourceMonitorReport event as a JSON reader found it, and the one
 * rule set that decides what of it counts. Both JSON readers (json-c in
 * jsonl.c, simdjson in jsonl_simdjson.cpp) only copy the fields they find
 * into a struct raw_event, without judging them; event_take() then
 * decides, counts what it refuses and feeds the model. So what counts as
 * a report is written once, and the two readers cannot drift apart. */
#ifndef PMETRICS_ANALYZE_EVENT_H
#define PMETRICS_ANALYZE_EVENT_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

/* What a reader found under a name: the JSON value's type, with "no
 * such key" apart, since JavaScript tells undefined from null (a process
 * without a name is the key "undefined", one named null is "null"). */
enum raw_kind {
	RAW_ABSENT,
	RAW_NULL,
	RAW_FALSE,
	RAW_TRUE,
	RAW_NUMBER,
	RAW_STRING,
	RAW_ARRAY,
	RAW_OBJECT,
};

struct raw_value {
	enum raw_kind kind;
	const char *str; /* RAW_STRING: not NUL-terminated, may hold NULs */
	size_t len;
	double num;      /* RAW_NUMBER */
};

/* The numeric fields (uptime, available memory, memRssMb) go through
 * parseFloat upstream, which reads an array as its text, "a,b,...": so
 * for them a reader hands on the first element of an array (of an array
 * ..., innermost first), and RAW_NULL for an empty one. */

struct raw_process {
	int is_object;
	struct raw_value name, mem_rss_mb;
};

/* Strings point into the reader's parse of the line: valid until the
 * reader moves on to the next line. */
struct raw_event {
	int is_object;       /* the line is a JSON object */
	int has_properties;  /* its "properties" is an object */
	struct raw_value event, app_mode, app_version;
	struct raw_value uptime_hrs, avail_mem_mb;
	struct raw_value processes; /* RAW_ARRAY: the entries are in procs */
	struct raw_process *procs;
	size_t n_procs, cap_procs;
};

/* Empties EV for the next line, keeping its process buffer. */
void raw_event_clear(struct raw_event *ev);
void raw_event_grow(struct raw_event *ev);
/* A new entry at the end of ev->procs, its fields absent. Inline: it runs
 * once per process of every report. */
static inline struct raw_process *raw_event_add_process(struct raw_event *ev)
{
	struct raw_process *p;

	if (ev->n_procs == ev->cap_procs)
		raw_event_grow(ev);
	p = &ev->procs[ev->n_procs++];
	p->is_object = 0;
	p->name.kind = RAW_ABSENT;
	p->mem_rss_mb.kind = RAW_ABSENT;
	return p;
}
void raw_event_free(struct raw_event *ev);

/* Decides what line LINE of SOURCE is worth, counts it in A and adds its
 * samples. */
void event_take(struct analysis *a, const struct raw_event *ev, const char *source,
		uint64_t line);

#endif
