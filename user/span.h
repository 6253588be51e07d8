/* SPDX-License-Identifier: MIT */
/* Native function spans: the loader of bpf/span.bpf.c, uprobes on
 * function entry and return in executables and shared libraries. */
#ifndef PMETRICS_SPAN_H
#define PMETRICS_SPAN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "span_engine.h"

struct span_tracer;

struct span_tracer_opts {
	bool follow_children;
	uint64_t ringbuf_bytes; /* power of two */
	bool empty_probes;      /* benchmark floor: probes that do nothing */
	bool resources;         /* spans carry their resource context
				 * (struct span_resource_event) */
	bool no_probes;         /* no native probe will be attached: loaded
				 * to follow the target's processes only */
	bool sampled;           /* the CPU sampler may read the call stacks */
};

/* open + set read-only data + load. Returns 0, or -errno after printing
 * a one-line error. */
int span_tracer_load(struct span_tracer **out, const struct span_tracer_opts *opts);
/* Traces PID's calls (and, with follow_children, those of its future
 * children). Call before attaching probes. */
int span_tracer_add_process(struct span_tracer *t, pid_t pid);
/* Attaches the fork/exit bookkeeping programs. */
int span_tracer_attach_tracking(struct span_tracer *t);
/* Places entry and return probes on PATH at file OFFSET; spans carry
 * PROBE_ID. PID_FILTER > 0 limits the probes to that process in the
 * kernel (no trap in any other process), -1 traps system-wide and
 * filters by PID in BPF (needed to follow children). Returns 0 or
 * -errno, printing nothing (the caller names the probe). */
int span_tracer_attach_probe(struct span_tracer *t, uint32_t probe_id,
			     const char *path, uint64_t offset, pid_t pid_filter);
/* Calls FN for every process traced now (the target and the children
 * followed so far). */
void span_tracer_for_each_process(const struct span_tracer *t, void (*fn)(pid_t, void *), void *arg);
/* A ring buffer of the PIDs (__u32) of traced processes that exec'd a
 * new program, as the loader numbers them. */
int span_tracer_execs_fd(const struct span_tracer *t);
/* The span engine's object: ring buffer, counters, open calls. */
struct bpf_object *span_tracer_object(const struct span_tracer *t);
void span_tracer_destroy(struct span_tracer *t);

#endif
