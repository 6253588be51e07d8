/* SPDX-License-Identifier: MIT */
/* User side of the span engine (bpf/call_stack.bpf.h) that every span
 * tracer object carries under the same names: its read-only config and
 * map sizes, its loss counters and the calls still open. */
#ifndef PMETRICS_SPAN_ENGINE_H
#define PMETRICS_SPAN_ENGINE_H

#include <bpf/libbpf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "bpf_loader.h"
#include "span_event.h"

struct span_engine_opts {
	uint64_t ringbuf_bytes;  /* power of two */
	bool resources;          /* spans carry their resource context */
	bool returns_need_entry; /* see struct span_engine_config */
	/* Tables no program of the object will fill, shrunk to nothing
	 * (locked kernel memory: the call stacks take 13 MB, the ring
	 * ringbuf_bytes): no call pushed (hooks that keep no call stack),
	 * no span emitted either (an object loaded only to follow the
	 * target's processes). */
	bool no_call_stacks;
	bool no_spans;
	/* A thread's call stack is allocated as it first enters a traced
	 * call instead of all 4096 at load, where the kernel allows it
	 * safely (Linux 6.1, not PREEMPT_RT). No perf_event program, such
	 * as the CPU sampler's, may read the table then: those need it
	 * preallocated. */
	bool call_stacks_on_demand;
};

/* Before load: fills CONFIG (the object's `engine` read-only global),
 * sizes the span ring and the call stacks, and when resources are off
 * shrinks the context tables to one entry and leaves their tracepoint
 * unloaded. WHAT names the object in errors. Returns 0 or -errno. */
int span_engine_configure(struct bpf_object *obj, struct span_engine_config *config,
			  const struct span_engine_opts *o, const char *what);
/* Whether pmetrics runs in a PID namespace other than the initial one
 * (a container): then the PIDs it knows are not the ones BPF sees, and
 * the engine translates (struct span_engine_config). Fills DEV and INO
 * of /proc/self/ns/pid then. */
bool span_engine_in_pidns(uint64_t *dev, uint64_t *ino);
/* After load: attaches the engine's own programs (the rss_stat
 * tracepoint of the resource context, when on). */
int span_engine_attach(struct bpf_object *obj, struct bpf_links *links);
/* The ring buffer of finished spans (struct span_event). */
int span_engine_ringbuf_fd(struct bpf_object *obj);
/* The calls in progress, by thread (struct call_stack): for a reader
 * that needs what a thread is inside of, such as the CPU sampler. */
int span_engine_call_stacks_fd(struct bpf_object *obj);
/* Adds OBJ's loss counters, summed over CPUs, to SUMS. */
void span_engine_add_counters(struct bpf_object *obj, uint64_t sums[SPAN_CNT_MAX]);
/* Calls entered and not yet returned, over all threads. */
uint64_t span_engine_open_calls(struct bpf_object *obj);
/* What the summary calls counter C ("ring buffer full"). */
const char *span_counter_name(enum span_counter c);

#endif
