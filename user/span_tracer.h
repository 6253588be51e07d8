/* Loader of bpf/span.bpf.c: native function spans from uprobes. */
#ifndef PMETRICS_SPAN_TRACER_H
#define PMETRICS_SPAN_TRACER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "span.h"

struct span_tracer;

struct span_tracer_opts {
	bool follow_children;
	uint64_t ringbuf_bytes; /* power of two */
	const char *btf_path;   /* NULL: the running kernel's */
	bool empty_probes;      /* benchmark floor: probes that do nothing */
	bool resources;         /* spans carry their resource context
				 * (struct span_resource_event) */
};

/* open + set read-only data + load. Returns 0 or -errno. */
int span_tracer_load(struct span_tracer **out, const struct span_tracer_opts *opts);
/* Traces PID's calls (and, with follow_children, those of its future
 * children). Call before attaching probes. */
int span_tracer_add_process(struct span_tracer *t, pid_t pid);
/* Attaches the fork/exit bookkeeping programs. */
int span_tracer_attach_tracking(struct span_tracer *t);
/* Places entry and return probes on PATH at file OFFSET; spans carry
 * PROBE_ID. PID_FILTER > 0 limits the probes to that process in the
 * kernel (no trap in any other process), -1 traps system-wide and
 * filters by PID in BPF (needed to follow children). */
int span_tracer_attach_probe(struct span_tracer *t, uint32_t probe_id,
			     const char *path, uint64_t offset, pid_t pid_filter);
int span_tracer_ringbuf_fd(const struct span_tracer *t);
/* Sums the per-CPU loss counters. */
void span_tracer_counters(const struct span_tracer *t, uint64_t out[SPAN_CNT_MAX]);
/* Calls still open (entered, not returned) in traced threads. */
uint64_t span_tracer_open_calls(const struct span_tracer *t);
void span_tracer_destroy(struct span_tracer *t);

#endif
