/* SPDX-License-Identifier: MIT */
/* The four outputs of pmetrics report, each built in memory from the
 * selected profile (profile_model.h) and written by report.c through
 * output_dir.h in one piece. */
#ifndef PMETRICS_PROFILE_OUTPUTS_H
#define PMETRICS_PROFILE_OUTPUTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile_model.h"

/* A growing byte buffer; oom is sticky and checked once at the end. */
struct out_buf {
	char *s;
	size_t len, cap;
	bool oom;
};

void out_put(struct out_buf *b, const char *s, size_t n);
void out_str(struct out_buf *b, const char *s);
void out_printf(struct out_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* S as the inside of a JSON string ('"', '\\', control characters and,
 * for inline scripts, '<' and '>' escaped). */
void out_json_str(struct out_buf *b, const char *s);
/* S as XML character data or an attribute value. Both escapes write a
 * byte that is not part of valid UTF-8, and U+FFFE and U+FFFF (no XML
 * characters), as '?'. */
void out_xml_str(struct out_buf *b, const char *s);
void out_free(struct out_buf *b);
/* The bytes of the character at S (1 for a byte that is no UTF-8). */
size_t out_utf8_char(const char *s);

/* What a stack's share stands for in the folded stacks, the flame graph
 * and pprof's default view. Counts alone make a wait of a microsecond
 * and one of a second alike, so a profile holding off-CPU samples is
 * weighed by time: an on-CPU sample stands for its period, an off-CPU
 * one for its wait. */
enum profile_weight {
	PROFILE_WEIGHT_SAMPLES,
	PROFILE_WEIGHT_TIME,
};

/* What the caller of an output says about the cut (for titles). */
struct report_view {
	const char *source;   /* the capture directory */
	const char *filter;   /* "--span A --kind on-cpu", or "" */
	const char *const *states; /* the --span states (the timeline keeps their spans) */
	size_t n_states;
	const uint32_t *pids;      /* the --pid processes (the timeline keeps their spans) */
	size_t n_pids;
	enum profile_weight weight;
};

/* An aggregate's share under WEIGHT: its samples, or its nanoseconds. */
uint64_t profile_agg_value(const struct profile_agg *a, enum profile_weight weight);
/* Folded stacks: "root;...;leaf COUNT\n" per stack, sorted by stack;
 * COUNT is samples, or microseconds (the stack's nanoseconds rounded)
 * when weighed by time. */
int profile_folded(const struct profile *p, const struct report_view *v, struct out_buf *b);
/* pprof's profile.proto, gzip-compressed. */
int profile_pprof(const struct profile *p, const struct report_view *v, struct out_buf *b,
		  char *err, size_t errlen);
/* The interactive flame graph. */
int profile_svg(const struct profile *p, const struct report_view *v, struct out_buf *b);
/* The Chrome trace-event timeline; reads DIR's span and resource files,
 * whose malformed rows it leaves out and counts in *ROWS_SKIPPED. */
int profile_trace(const struct profile *p, const struct report_view *v, struct out_buf *b,
		  uint64_t *rows_skipped, char *err, size_t errlen);

#endif
