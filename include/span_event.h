/* SPDX-License-Identifier: MIT */
/* What every span source shares with the loader: the span record (one
 * completed call, sent from BPF), the limits of the per-thread call
 * stack, and the one table of loss counters. Native uprobes
 * (bpf/span.bpf.c) and Python frames (bpf/pyspan.bpf.c) both run the
 * span engine of bpf/call_stack.bpf.h and emit exactly this record. */
#ifndef PMETRICS_SPAN_EVENT_H
#define PMETRICS_SPAN_EVENT_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Pending calls tracked per thread. The kernel keeps at most 64 pending
 * return probes per task (MAX_URETPROBE_DEPTH), so deeper calls never get
 * a return event: we stop pushing at the same depth and count the loss. */
#define SPAN_MAX_DEPTH 64

/* One call between its entry and its return. */
struct pending_call {
	__u64 start_ns;
	__u64 entry_sp;  /* stack pointer at entry: identifies its return */
	__u64 key;       /* the tracer's identity of the call (Python: frame) */
	__u64 aux;       /* the tracer's own (Python: the generator stepped) */
	__u32 probe;     /* the tracer's probe: span id or table index */
	__u32 flags;     /* CALL_* */
	/* Native calls: the address the call returns to, read at entry
	 * (before the return probe swaps it for the kernel's trampoline):
	 * what a CPU sample inside the call needs to see its caller where
	 * the kernel does not say it. 0: not read. */
	__u64 ret;
};

/* The calls of one thread entered and not yet returned, outermost
 * first: the value of the span engine's call_stacks map, by thread ID
 * (the sampler reads it too). */
struct call_stack {
	__u32 depth;
	__u32 tgid;
	/* native calls: when one last returned (or was unwound), so that a
	 * reader that comes later than a sample knows whether the calls
	 * pending at the sample are still all here */
	__u64 last_return_ns;
	struct pending_call calls[SPAN_MAX_DEPTH];
};

/* Probes one capture can carry (probe_id < SPAN_MAX_PROBES). */
#define SPAN_MAX_PROBES 64

struct span_event {
	__u64 start_ns;    /* bpf_ktime_get_ns() at entry: CLOCK_MONOTONIC */
	__u64 duration_ns; /* return time minus start_ns */
	__u32 probe_id;    /* index into the loader's probe table */
	__u32 tgid;
	__u32 tid;
	__u32 pad;
};

/* Read-only settings of the span engine, set by the loader before load
 * (user/span_engine.c) and read by bpf/call_stack.bpf.h. */
struct span_engine_config {
	__u64 wakeup_bytes; /* wake the consumer once this much is queued */
	__u32 resources;    /* spans carry their resource context
			     * (struct span_resource_event) */
	/* Every return probe hit belongs to an entry that was pushed (native
	 * probes). Python hooks also see the returns of untimed calls,
	 * which are not losses. */
	__u32 returns_need_entry;
	/* pmetrics' own PID namespace (st_dev and st_ino of
	 * /proc/self/ns/pid) when it is not the initial one: the loader
	 * then names processes by their PIDs there, and BPF, which sees
	 * initial-namespace PIDs, translates. 0: the initial namespace. */
	__u64 pidns_dev;
	__u64 pidns_ino;
};

/* The loss counters of the span engine and of the tracers around it, in
 * one per-CPU array per BPF object: X(NAME, what the summary calls it).
 * The loader sums them over CPUs and objects (user/span_engine.c). */
#define SPAN_COUNTERS(X)                                                        \
	X(RINGBUF_FULL, "ring buffer full")                                     \
	X(DEPTH_OVERFLOW, "nesting deeper than 64")                             \
	X(THREAD_EXIT, "thread exited")                                         \
	X(UNWOUND, "unwound by longjmp/exception")                              \
	X(NO_ENTRY, "returns without a seen entry")                             \
	X(STACK_FULL, "calls in threads beyond the tracking table or its memory") \
	X(CORO_TABLE_FULL, "too many open coroutines")                          \
	X(MID_CORO, "coroutines started before pmetrics attached")              \
	X(CORO_NO_START, "coroutine ends whose start was lost")                 \
	X(CORO_UNSTARTED, "coroutines freed before their first step")         \
	X(WATCH_UNASKED, "timed modules run that the watch hook missed (ring full, or the stop refused)")

#define SPAN_COUNTER_ENUM(name, text) SPAN_CNT_##name,
enum span_counter {
	SPAN_COUNTERS(SPAN_COUNTER_ENUM)
	SPAN_CNT_MAX,
};
#undef SPAN_COUNTER_ENUM

#endif
