/* SPDX-License-Identifier: GPL-2.0 */
/* The highest RSS of a traced process while it has timed calls open, for
 * the per-span resource context of both span tracers (bpf/span.bpf.c and
 * bpf/pyspan.bpf.c; each object gets its own map). Each includer defines
 * a tp_btf/rss_stat program that calls rss_peak_on_change(). Include
 * after vmlinux.h, bpf_helpers.h, resources.h and task_counters.bpf.h. */
#ifndef PMETRICS_RSS_PEAK_BPF_H
#define PMETRICS_RSS_PEAK_BPF_H

/* Per traced process with calls open: the highest RSS since the first of
 * them started (so a nested call's peak may include its outer call's
 * earlier peak). Raised by the rss_stat tracepoint. */
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

/* N calls of TGID closed (returned, unwound or their thread exited). */
static __always_inline void rss_peak_close(__u32 tgid, __u32 n)
{
	struct rss_peak *p = bpf_map_lookup_elem(&rss_peaks, &tgid);

	if (!p)
		return;
	if (p->open <= n)
		bpf_map_delete_elem(&rss_peaks, &tgid);
	else
		__sync_fetch_and_add(&p->open, -n); /* clang 14 has no 32-bit atomic sub */
}

/* Every change of a process's RSS counters, from the process itself (a
 * page fault, munmap): raises the peak of a process with calls open.
 * Changes made from other contexts (reclaim) only lower RSS, and the
 * peak does not care. */
static __always_inline int rss_peak_on_change(struct mm_struct *mm)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct rss_peak *p = bpf_map_lookup_elem(&rss_peaks, &tgid);
	__s64 rss;

	if (!p || bpf_get_current_task_btf()->mm != mm)
		return 0;
	rss = mm_rss_pages_approx(mm);
	if (rss > p->peak_pages)
		p->peak_pages = rss;
	return 0;
}

/* Completes the resource part of E: the calling thread's counters now,
 * BEGIN (its counters at entry, or NULL when unknown: then begin = end
 * and the row says so), and the process's RSS peak in between. The
 * caller closes its call (rss_peak_close) if it opened one. */
static __always_inline void span_context_finish(struct span_resource_event *e,
						const struct resource_thread_snapshot *begin,
						__u32 tgid)
{
	struct rss_peak *p = bpf_map_lookup_elem(&rss_peaks, &tgid);

	task_snapshot(bpf_get_current_task_btf(), &e->end);
	e->flags = 0;
	e->pad = 0;
	if (begin) {
		e->begin = *begin;
	} else {
		e->begin = e->end;
		e->flags |= SPAN_RES_NO_BEGIN;
	}
	e->rss_peak_pages = p ? p->peak_pages : 0;
	if (e->begin.rss_pages > e->rss_peak_pages)
		e->rss_peak_pages = e->begin.rss_pages;
	if (e->end.rss_pages > e->rss_peak_pages)
		e->rss_peak_pages = e->end.rss_pages;
}

#endif
