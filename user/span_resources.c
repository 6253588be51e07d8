// SPDX-License-Identifier: MIT
/* Writer of the per-span resource context; see span_resources.h. */
#include "span_resources.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char *const context_header[] = {
	"state_name", "function_start_time", "duration",
	"oncpu_ns", "runq_wait_ns", "blocked_ns", "voluntary_switches",
	"involuntary_switches", "migrations", "minor_faults", "major_faults",
	"rss_start_kb", "rss_end_kb", "rss_peak_kb",
};
#define N_COLUMNS (int)(sizeof(context_header) / sizeof(context_header[0]))

/* The activity layout names its first three columns as robot_activity_data does. */
static const char *const activity_header[N_COLUMNS] = {
	"state", "func_start", "duration",
	"oncpu_ns", "runq_wait_ns", "blocked_ns", "voluntary_switches",
	"involuntary_switches", "migrations", "minor_faults", "major_faults",
	"rss_start_kb", "rss_end_kb", "rss_peak_kb",
};

struct span_resource_writer {
	struct csv_file *csv;
	enum csv_layout layout;
	long page_size;
};

int span_resource_writer_open(struct span_resource_writer **out, const char *dir,
			      enum csv_layout layout, char *err, size_t errlen)
{
	struct span_resource_writer *w = calloc(1, sizeof(*w));
	bool ctx = layout == CSV_LAYOUT_CONTEXT;

	*out = NULL;
	if (!w) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	w->layout = layout;
	w->page_size = sysconf(_SC_PAGESIZE);
	if (w->page_size <= 0)
		w->page_size = 4096;
	w->csv = csv_file_open(dir, ctx ? "robot_context_resources" : "robot_activity_resources",
			       ctx ? context_header : activity_header, N_COLUMNS, layout,
			       err, errlen);
	if (!w->csv) {
		free(w);
		return -1;
	}
	*out = w;
	return 0;
}

static uint64_t delta(uint64_t begin, uint64_t end)
{
	return end > begin ? end - begin : 0;
}

static uint64_t pages_kb(int64_t pages, long page_size)
{
	return pages > 0 ? (uint64_t)pages * (uint64_t)page_size / 1024 : 0;
}

void span_resource_row_from(const struct span_resource_event *e, long page_size,
			    struct span_resource_row *out)
{
	const struct resource_thread_snapshot *b = &e->begin, *x = &e->end;
	uint64_t waited;

	out->oncpu_ns = delta(b->oncpu_ns, x->oncpu_ns);
	out->runq_wait_ns = delta(b->runq_wait_ns, x->runq_wait_ns);
	/* Whatever was neither running nor runnable was blocked (sleeping,
	 * waiting for I/O or a lock). */
	waited = out->oncpu_ns + out->runq_wait_ns;
	out->blocked_ns = e->span.duration_ns > waited ? e->span.duration_ns - waited : 0;
	out->nvcsw = delta(b->nvcsw, x->nvcsw);
	out->nivcsw = delta(b->nivcsw, x->nivcsw);
	out->migrations = delta(b->migrations, x->migrations);
	out->min_flt = delta(b->min_flt, x->min_flt);
	out->maj_flt = delta(b->maj_flt, x->maj_flt);
	out->rss_start_kb = pages_kb(b->rss_pages, page_size);
	out->rss_end_kb = pages_kb(x->rss_pages, page_size);
	out->rss_peak_kb = pages_kb(e->rss_peak_pages, page_size);
}

int span_resource_writer_add(struct span_resource_writer *w, const char *state,
			     uint64_t start_wall_ns, const struct span_resource_event *e)
{
	struct span_resource_row r;
	struct csv_row row;

	span_resource_row_from(e, w->page_size, &r);
	const uint64_t cols[] = {
		r.oncpu_ns, r.runq_wait_ns, r.blocked_ns, r.nvcsw, r.nivcsw, r.migrations,
		r.min_flt, r.maj_flt, r.rss_start_kb, r.rss_end_kb, r.rss_peak_kb,
	};
	_Static_assert(sizeof(cols) / sizeof(cols[0]) == N_COLUMNS - 3, "one value per column");

	csv_row_begin(&row, w->layout);
	csv_row_str(&row, state);
	csv_row_u64(&row, start_wall_ns);
	csv_row_u64(&row, e->span.duration_ns);
	/* Without an entry snapshot the counters are unknown: empty. */
	for (int i = 0; i < N_COLUMNS - 3; i++) {
		if (e->flags & SPAN_RES_NO_BEGIN)
			csv_row_str(&row, "");
		else
			csv_row_u64(&row, cols[i]);
	}
	csv_row_end(&row);
	return csv_file_append(w->csv, &row);
}

int span_resource_writer_flush(struct span_resource_writer *w)
{
	return csv_file_flush(w->csv);
}

uint64_t span_resource_writer_rows(const struct span_resource_writer *w)
{
	return csv_file_rows_written(w->csv);
}

int span_resource_writer_close(struct span_resource_writer *w)
{
	int err;

	if (!w)
		return 0;
	err = csv_file_close(w->csv);
	free(w);
	return err;
}

void span_resource_writer_discard(struct span_resource_writer *w)
{
	if (!w)
		return;
	csv_file_discard(w->csv);
	free(w);
}
