// SPDX-License-Identifier: GPL-2.0
/* Native function spans: an entry uprobe pushes the call on a per-thread
 * stack, the matching uretprobe pops it and emits one span_event.
 *
 * Cost matters more than anything here (platform.md: an empty
 * uprobe+uretprobe pair is ~5.5 us, a wakeup per event doubles it), so
 * entry writes no event at all, exit writes one 32-byte record, and the
 * consumer is only woken when the ring is filling up. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "span.h"
#include "resources.h"
#include "task_counters.bpf.h"
#include "rss_peak.bpf.h"
#include "return_sp.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the loader before load. */
const volatile bool follow_children = true;
const volatile __u64 wakeup_bytes = 1 << 20;
/* --resources with probes: each span also carries its thread's
 * scheduling and memory counters (struct span_resource_event). Off, the
 * verifier drops every branch on it and the span path is unchanged. */
const volatile bool span_resources = false;

struct pending_call {
	__u64 start_ns;
	__u64 entry_sp;
	__u32 probe_id;
	__u32 pad;
};

struct call_stack {
	__u32 depth;
	__u32 tgid;
	struct pending_call calls[SPAN_MAX_DEPTH];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32); /* tid */
	__type(value, struct call_stack);
} call_stacks SEC(".maps");

/* An all-zero call_stack to insert from: too big for the BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct call_stack);
} empty_stack SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* tgid */
	__type(value, __u8);
} traced_tgids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20); /* resized by the loader */
} spans SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SPAN_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* ---- per-span resource context (span_resources) ---- */

struct span_snapshot_key {
	__u32 tid;
	__u32 depth;
};

/* The entry snapshot of each open call; 1 entry when off (loader). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct span_snapshot_key);
	__type(value, struct resource_thread_snapshot);
} span_snapshots SEC(".maps");

static __always_inline void count(__u32 which, __u64 n)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &which);

	if (c)
		*c += n;
}

static __always_inline void resources_enter(__u32 tid, __u32 tgid, __u32 depth)
{
	struct span_snapshot_key key = { .tid = tid, .depth = depth };
	struct resource_thread_snapshot snap;

	task_snapshot(bpf_get_current_task_btf(), &snap);
	bpf_map_update_elem(&span_snapshots, &key, &snap, BPF_ANY);
	rss_peak_open(tgid, snap.rss_pages);
}

static __always_inline struct call_stack *stack_of(__u32 tid, __u32 tgid)
{
	struct call_stack *st = bpf_map_lookup_elem(&call_stacks, &tid);
	__u32 zero = 0;

	if (st)
		return st;
	st = bpf_map_lookup_elem(&empty_stack, &zero);
	if (!st)
		return NULL;
	st->tgid = tgid;
	bpf_map_update_elem(&call_stacks, &tid, st, BPF_NOEXIST);
	return bpf_map_lookup_elem(&call_stacks, &tid);
}

SEC("uprobe")
int BPF_KPROBE(span_enter)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct call_stack *st;
	__u32 depth;

	if (!bpf_map_lookup_elem(&traced_tgids, &tgid))
		return 0;
	st = stack_of(tid, tgid);
	if (!st) {
		count(SPAN_CNT_STACK_FULL, 1);
		return 0;
	}
	depth = st->depth;
	/* The kernel installs no return probe past this depth either. */
	if (depth >= SPAN_MAX_DEPTH) {
		count(SPAN_CNT_DEPTH_OVERFLOW, 1);
		return 0;
	}
	struct pending_call *call = &st->calls[depth & (SPAN_MAX_DEPTH - 1)];
	call->start_ns = bpf_ktime_get_ns();
	call->entry_sp = PT_REGS_SP(ctx);
	call->probe_id = (__u32)bpf_get_attach_cookie(ctx);
	st->depth = depth + 1;
	if (span_resources)
		resources_enter(tid, tgid, depth);
	return 0;
}

static __always_inline void fill_span(struct span_event *e, const struct pending_call *call,
				      __u64 now, __u32 tgid, __u32 tid)
{
	e->start_ns = call->start_ns;
	e->duration_ns = now - call->start_ns;
	e->probe_id = call->probe_id;
	e->tgid = tgid;
	e->tid = tid;
	e->pad = 0;
}

/* No wakeup unless the ring is filling up. */
static __always_inline __u64 submit_flags(void)
{
	if (bpf_ringbuf_query(&spans, BPF_RB_AVAIL_DATA) >= wakeup_bytes)
		return BPF_RB_FORCE_WAKEUP;
	return BPF_RB_NO_WAKEUP;
}

static __always_inline void emit(const struct pending_call *call, __u64 now,
				 __u32 tgid, __u32 tid)
{
	struct span_event *e = bpf_ringbuf_reserve(&spans, sizeof(*e), 0);

	if (!e) {
		count(SPAN_CNT_RINGBUF_FULL, 1);
		return;
	}
	fill_span(e, call, now, tgid, tid);
	bpf_ringbuf_submit(e, submit_flags());
}

/* The span plus its thread's counters at entry (saved by
 * resources_enter) and now, and the process's RSS peak in between. */
static __always_inline void emit_with_resources(const struct pending_call *call, __u64 now,
						__u32 tgid, __u32 tid, __u32 depth)
{
	struct span_snapshot_key key = { .tid = tid, .depth = depth };
	struct resource_thread_snapshot *begin = bpf_map_lookup_elem(&span_snapshots, &key);
	struct span_resource_event *e = bpf_ringbuf_reserve(&spans, sizeof(*e), 0);

	if (!e) {
		count(SPAN_CNT_RINGBUF_FULL, 1);
		rss_peak_close(tgid, 1);
		return;
	}
	fill_span(&e->span, call, now, tgid, tid);
	span_context_finish(e, begin, tgid);
	rss_peak_close(tgid, 1);
	bpf_ringbuf_submit(e, submit_flags());
}

SEC("uretprobe")
int BPF_KRETPROBE(span_exit)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	__u64 sp = entry_sp_of_return(ctx);
	struct call_stack *st = bpf_map_lookup_elem(&call_stacks, &tid);
	struct pending_call *call = NULL;
	__u32 depth = 0;

	if (!st)
		return 0;
	/* Calls left by longjmp or unwinding sit above this one with a
	 * lower entry sp; the kernel drops their return probes, we drop
	 * them here, counted. */
	for (int i = 0; i < SPAN_MAX_DEPTH; i++) {
		depth = st->depth;
		if (depth == 0 || depth > SPAN_MAX_DEPTH)
			break;
		call = &st->calls[(depth - 1) & (SPAN_MAX_DEPTH - 1)];
		if (call->entry_sp >= sp)
			break;
		st->depth = depth - 1;
		count(SPAN_CNT_UNWOUND, 1);
		if (span_resources)
			rss_peak_close((__u32)(id >> 32), 1);
		call = NULL;
	}
	if (!call || depth == 0 || call->entry_sp != sp) {
		count(SPAN_CNT_NO_ENTRY, 1);
		return 0;
	}
	st->depth = depth - 1;
	if (span_resources)
		emit_with_resources(call, now, (__u32)(id >> 32), tid, depth - 1);
	else
		emit(call, now, (__u32)(id >> 32), tid);
	return 0;
}

/* A thread that exits with calls pending never returns from them. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(span_task_exit, struct task_struct *task)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct call_stack *st = bpf_map_lookup_elem(&call_stacks, &tid);

	if (st) {
		count(SPAN_CNT_THREAD_EXIT, st->depth);
		if (span_resources)
			rss_peak_close(tgid, st->depth);
		bpf_map_delete_elem(&call_stacks, &tid);
	}
	/* signal->live reaches 0 when the last thread of the process
	 * exits (decremented in do_exit before this tracepoint). */
	if (BPF_CORE_READ(task, signal, live.counter) == 0) {
		bpf_map_delete_elem(&traced_tgids, &tgid);
		if (span_resources)
			bpf_map_delete_elem(&rss_peaks, &tgid);
	}
	return 0;
}

/* Attached only with span_resources (see bpf/rss_peak.bpf.h). */
SEC("tp_btf/rss_stat")
int BPF_PROG(span_rss_stat, struct mm_struct *mm, int member)
{
	return rss_peak_on_change(mm);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(span_task_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 parent_tgid = BPF_CORE_READ(parent, tgid);
	__u32 child_tgid = BPF_CORE_READ(child, tgid);
	__u8 one = 1;

	if (!follow_children || child_tgid == parent_tgid)
		return 0;
	if (bpf_map_lookup_elem(&traced_tgids, &parent_tgid))
		bpf_map_update_elem(&traced_tgids, &child_tgid, &one, BPF_ANY);
	return 0;
}

/* The floor for `make bench`: an entry and a return probe that do
 * nothing, attached instead of the real pair with --bench-floor. */
SEC("uprobe")
int BPF_KPROBE(span_enter_empty) { return 0; }

SEC("uretprobe")
int BPF_KRETPROBE(span_exit_empty) { return 0; }
