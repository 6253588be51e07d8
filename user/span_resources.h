/* SPDX-License-Identifier: MIT */
/* The resource context of every span: the companion
 * file robot_context_resources (robot_activity_resources in the activity
 * layout), one row per row of the span file, keyed by the same state name
 * and start time. Written from the span_resource_event records the span
 * tracer sends when started with resources on. */
#ifndef PMETRICS_SPAN_RESOURCES_H
#define PMETRICS_SPAN_RESOURCES_H

#include <stdint.h>

#include "csv_writer.h"
#include "resource_records.h"

struct span_resource_writer;

/* Opens DIR's companion file for LAYOUT. Returns 0, or -1 with a
 * one-line reason in err. */
int span_resource_writer_open(struct span_resource_writer **out, const char *dir,
			      enum csv_layout layout, char *err, size_t errlen);
/* Queues the row of one span: STATE and START_WALL_NS exactly as the
 * span file's row has them. Returns 0 or -errno. */
int span_resource_writer_add(struct span_resource_writer *w, const char *state,
			     uint64_t start_wall_ns, const struct span_resource_event *e);
int span_resource_writer_flush(struct span_resource_writer *w);
uint64_t span_resource_writer_rows(const struct span_resource_writer *w);
/* Flushes and closes; returns the flush result. */
int span_resource_writer_close(struct span_resource_writer *w);
/* After a failed start: the files it created are removed. */
void span_resource_writer_discard(struct span_resource_writer *w);

/* The derived columns, for the writer and its tests. */
struct span_resource_row {
	uint64_t oncpu_ns, runq_wait_ns, blocked_ns;
	uint64_t nvcsw, nivcsw, migrations, min_flt, maj_flt;
	uint64_t rss_start_kb, rss_end_kb, rss_peak_kb;
};
void span_resource_row_from(const struct span_resource_event *e, long page_size,
			    struct span_resource_row *out);

#endif
