/* SPDX-License-Identifier: GPL-2.0 */
/* The resource context of a span (with --resources): the calling
 * thread's scheduling and memory counters at the span's start and end,
 * and the highest RSS of its process in between. Part of the span engine
 * (bpf/call_stack.bpf.h); each span object gets its own maps. Include
 * after vmlinux.h, bpf_helpers.h and bpf_tracing.h.
 *
 * It reads kernel structs (task_struct, mm_struct) through CO-RE, so it
 * needs BTF for the running kernel: its own or --btf FILE. The objects
 * built with PMETRICS_NO_BTF, for kernels with neither, leave it out:
 * then these are no-ops and the loader never turns resources on. */
#ifndef PMETRICS_SPAN_CONTEXT_BPF_H
#define PMETRICS_SPAN_CONTEXT_BPF_H

#include "resource_records.h"

/* Which span a start snapshot belongs to. A native call is its thread
 * and stack depth; a Python call or coroutine is its frame in its
 * process (a coroutine may finish on another thread than it began). */
struct span_context_key {
	__u64 id;
	__u32 owner;
	__u32 pad;
};

#ifdef PMETRICS_NO_BTF
static __always_inline void span_context_begin(const struct span_context_key *key,
					       __u32 tgid, __u32 tid) {}
static __always_inline void span_context_drop(const struct span_context_key *key, __u32 tgid) {}
static __always_inline void span_context_finish(struct span_resource_event *e,
						const struct span_context_key *key,
						__u32 tgid, __u32 tid) {}
static __always_inline void span_context_forget_process(__u32 tgid) {}
#else
#include "task_counters.bpf.h"

struct span_context_start {
	struct resource_thread_snapshot snap;
	__u32 tid; /* the thread the snapshot is of */
	__u32 pad;
};

/* Start snapshots of open spans. LRU: a span whose end is never seen (a
 * path no probe covers) must not keep its slot for good. One entry when
 * resources are off (user/span_engine.c). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, struct span_context_key);
	__type(value, struct span_context_start);
} span_starts SEC(".maps");

/* Per traced process with spans open: the highest RSS since the first of
 * them started (so a nested span's peak may include its outer span's
 * earlier peak), raised by the rss_stat tracepoint below. */
struct rss_peak {
	__s64 peak_pages;
	__u32 open;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* tgid */
	__type(value, struct rss_peak);
} rss_peaks SEC(".maps");

static __always_inline void rss_peak_open(__u32 tgid, __s64 rss_pages)
{
	struct rss_peak fresh = { .peak_pages = rss_pages, .open = 1 };
	struct rss_peak *p = bpf_map_lookup_elem(&rss_peaks, &tgid);

	if (!p && bpf_map_update_elem(&rss_peaks, &tgid, &fresh, BPF_NOEXIST) == 0)
		return;
	p = p ? p : bpf_map_lookup_elem(&rss_peaks, &tgid);
	if (!p)
		return;
	__sync_fetch_and_add(&p->open, 1);
	if (rss_pages > p->peak_pages)
		p->peak_pages = rss_pages;
}

/* One span of TGID closed (returned, unwound or its thread exited). */
static __always_inline void rss_peak_close(__u32 tgid)
{
	struct rss_peak *p = bpf_map_lookup_elem(&rss_peaks, &tgid);

	if (!p)
		return;
	if (p->open <= 1)
		bpf_map_delete_elem(&rss_peaks, &tgid);
	else
		__sync_fetch_and_add(&p->open, -1); /* clang 14 has no 32-bit atomic sub */
}

/* A process is gone: its peak with it. */
static __always_inline void span_context_forget_process(__u32 tgid)
{
	bpf_map_delete_elem(&rss_peaks, &tgid);
}

/* A span begins on the current thread. */
static __always_inline void span_context_begin(const struct span_context_key *key,
					       __u32 tgid, __u32 tid)
{
	struct span_context_start start = { .tid = tid };

	task_snapshot(current_task(), &start.snap);
	bpf_map_update_elem(&span_starts, key, &start, BPF_ANY);
	rss_peak_open(tgid, start.snap.rss_pages);
}

/* A span ends without a row (unwound, its thread exited, no room in the
 * ring): forget its start. Called once for each span begun, whether or
 * not the LRU still holds its start: the process's open count must come
 * back to 0, or its peak would never be reset. */
static __always_inline void span_context_drop(const struct span_context_key *key, __u32 tgid)
{
	bpf_map_delete_elem(&span_starts, key);
	rss_peak_close(tgid);
}

/* Completes the resource part of E for a span begun (span_context_begin)
 * and ending now on thread TID: its counters now, its counters at the
 * start (when it began on this thread; else unknown: begin = end and the
 * flags say so), and the process's RSS peak in between. */
static __always_inline void span_context_finish(struct span_resource_event *e,
						const struct span_context_key *key,
						__u32 tgid, __u32 tid)
{
	struct span_context_start *start = bpf_map_lookup_elem(&span_starts, key);
	struct rss_peak *p = bpf_map_lookup_elem(&rss_peaks, &tgid);

	task_snapshot(current_task(), &e->end);
	e->flags = 0;
	e->pad = 0;
	if (start && start->tid == tid) {
		e->begin = start->snap;
	} else {
		e->begin = e->end;
		e->flags |= SPAN_RES_NO_BEGIN;
	}
	e->rss_peak_pages = p ? p->peak_pages : 0;
	if (e->begin.rss_pages > e->rss_peak_pages)
		e->rss_peak_pages = e->begin.rss_pages;
	if (e->end.rss_pages > e->rss_peak_pages)
		e->rss_peak_pages = e->end.rss_pages;
	span_context_drop(key, tgid);
}

/* Every change of a process's RSS counters made by the process itself
 * (a page fault, munmap) raises the peak of a process with spans open.
 * Changes made from other contexts (reclaim) only lower RSS, and the
 * peak does not care. Loaded only with resources on. A raw tracepoint:
 * the BTF one would need the kernel's own BTF, not only --btf FILE; its
 * first two arguments are the same before and after 6.2. */
SEC("raw_tp/rss_stat")
int BPF_PROG(span_rss_stat, struct mm_struct *mm, int member)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct rss_peak *p = bpf_map_lookup_elem(&rss_peaks, &tgid);
	__s64 rss;

	if (!p || BPF_CORE_READ(current_task(), mm) != mm)
		return 0;
	rss = mm_rss_pages_approx(mm);
	if (rss > p->peak_pages)
		p->peak_pages = rss;
	return 0;
}

#endif /* PMETRICS_NO_BTF */
#endif
