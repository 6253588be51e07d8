/* SPDX-License-Identifier: MIT */
/* The span event: one completed call, sent from BPF to the loader.
 * Every span source (native uprobes in bpf/span.bpf.c, Python frames in
 * bpf/pyspan.bpf.c) emits exactly this record into a ring buffer. */
#ifndef PMETRICS_SPAN_H
#define PMETRICS_SPAN_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Pending calls tracked per thread. The kernel keeps at most 64 pending
 * return probes per task (MAX_URETPROBE_DEPTH), so deeper calls never get
 * a return event: we stop pushing at the same depth and count the loss. */
#define SPAN_MAX_DEPTH 64

/* Probes one BPF object can carry (probe_id < SPAN_MAX_PROBES). */
#define SPAN_MAX_PROBES 64

struct span_event {
	__u64 start_ns;    /* bpf_ktime_get_ns() at entry: CLOCK_MONOTONIC */
	__u64 duration_ns; /* return time minus start_ns */
	__u32 probe_id;    /* index into the loader's probe table */
	__u32 tgid;
	__u32 tid;
	__u32 pad;
};

/* Per-CPU counters, summed by the loader for the summary. */
enum span_counter {
	SPAN_CNT_RINGBUF_FULL,   /* bpf_ringbuf_reserve failed: span lost */
	SPAN_CNT_DEPTH_OVERFLOW, /* call deeper than SPAN_MAX_DEPTH: no row */
	SPAN_CNT_THREAD_EXIT,    /* open calls of a thread that exited */
	SPAN_CNT_UNWOUND,        /* calls skipped by longjmp/unwinding */
	SPAN_CNT_NO_ENTRY,       /* return without a matching entry */
	SPAN_CNT_STACK_FULL,     /* no room for a new thread's call stack */
	SPAN_CNT_MAX,
};

#endif
