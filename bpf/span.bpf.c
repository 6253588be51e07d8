// SPDX-License-Identifier: GPL-2.0
/* Native function spans: an entry uprobe pushes the call on its thread's
 * call stack, the matching uretprobe pops it and emits its span (the
 * span engine of call_stack.bpf.h). A call is named by its probe, the
 * attach cookie. Processes are traced by PID (traced_tgids), children
 * followed through the fork tracepoint.
 *
 * Built twice: as is, for kernels whose struct layout CO-RE can learn
 * (their own BTF, or --btf FILE); and with PMETRICS_NO_BTF, reading no
 * kernel struct at all, for kernels without BTF. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "call_stack.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the loader before load. */
const volatile bool follow_children = true;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* tgid */
	__type(value, __u8);
} traced_tgids SEC(".maps");

/* The targets as the loader named them, when it runs in a PID namespace
 * of its own (engine.pidns_ino): their kernel tgids are learnt at their
 * first probe hit or fork, and then kept in traced_tgids. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u32); /* tgid in the loader's namespace */
	__type(value, __u8);
} ns_targets SEC(".maps");

static __always_inline void trace_tgid(__u32 tgid)
{
	__u8 one = 1;

	bpf_map_update_elem(&traced_tgids, &tgid, &one, BPF_ANY);
}

#ifndef PMETRICS_NO_BTF
/* A new child of a traced process: traced from now on (a new thread of
 * it needs nothing: same tgid). */
static __always_inline void adopt_child(struct task_struct *child, __u32 parent_tgid)
{
	__u32 tgid = BPF_CORE_READ(child, tgid);

	if (tgid != parent_tgid)
		trace_tgid(tgid);
}

static __always_inline bool adopted_current(__u32 tgid)
{
	return false;
}

static __always_inline void forget_child(struct task_struct *task) {}

/* Has the process of TASK, which is exiting, no thread left? signal->live
 * reaches 0 when its last thread exits (decremented in do_exit before
 * the tracepoint). */
static __always_inline bool last_thread(struct task_struct *task)
{
	return BPF_CORE_READ(task, signal, live.counter) == 0;
}
#else
/* Without the kernel's struct layout a child's tgid cannot be read at
 * fork: its task pointer (a plain value) is remembered instead, and the
 * child is recognised as the current task at its first probe hit or
 * fork. LRU: a task that never gets that far must not keep a slot. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);   /* task_struct address */
	__type(value, __u32); /* parent's tgid */
} new_children SEC(".maps");

static __always_inline void adopt_child(struct task_struct *child, __u32 parent_tgid)
{
	__u64 key = (__u64)child;

	bpf_map_update_elem(&new_children, &key, &parent_tgid, BPF_ANY);
}

/* Is the current task (of TGID) a child adopted at fork? (A new thread of
 * a traced process is one too, and traced already: same tgid.) */
static __always_inline bool adopted_current(__u32 tgid)
{
	__u64 key = bpf_get_current_task();

	if (!bpf_map_lookup_elem(&new_children, &key))
		return false;
	bpf_map_delete_elem(&new_children, &key);
	trace_tgid(tgid);
	return true;
}

static __always_inline void forget_child(struct task_struct *task)
{
	__u64 key = (__u64)task;

	bpf_map_delete_elem(&new_children, &key);
}

/* The process is over when its leader exits: its last thread but for
 * processes whose leader ends first (pthread_exit), whose other threads
 * then lose their spans. */
static __always_inline bool last_thread(struct task_struct *task)
{
	__u64 id = bpf_get_current_pid_tgid();

	return (__u32)id == id >> 32;
}
#endif

/* The target as the loader named it in its own PID namespace: is the
 * current process, TGID to the kernel, that one? Then it is traced. */
static __always_inline bool named_by_loader(__u32 tgid)
{
	__u32 ns_tgid;

	if (!engine.pidns_ino)
		return false;
	ns_tgid = loader_pid_tgid() >> 32;
	if (!ns_tgid || !bpf_map_lookup_elem(&ns_targets, &ns_tgid))
		return false;
	trace_tgid(tgid);
	return true;
}

/* Is TGID, the current process, traced? */
static __always_inline bool traced(__u32 tgid)
{
	if (bpf_map_lookup_elem(&traced_tgids, &tgid))
		return true;
	return adopted_current(tgid) || named_by_loader(tgid);
}

SEC("uprobe")
int BPF_KPROBE(span_enter)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id, depth;
	struct pending_call *call;
	struct call_stack *st;

	if (!traced(tgid))
		return 0;
	st = call_stack_of(tid, tgid);
	if (!st)
		return 0;
	call = call_stack_push(st, PT_REGS_SP(ctx), bpf_ktime_get_ns(), &depth);
	if (!call)
		return 0;
	call->probe = (__u32)bpf_get_attach_cookie(ctx);
	if (engine.resources) {
		struct span_context_key key;

		call->flags = CALL_OWNS_CONTEXT;
		key = call_context_key(call, tid, tgid, depth);
		span_context_begin(&key, tgid, tid);
	}
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(span_exit)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id, depth = 0;
	struct call_stack *st = bpf_map_lookup_elem(&call_stacks, &tid);
	struct span_context_key key;
	struct pending_call *call;

	if (!st)
		return 0;
	call = call_stack_pop(st, entry_sp_of_return(ctx), tid, &depth);
	if (!call)
		return 0;
	key = call_context_key(call, tid, tgid, depth);
	span_emit(call->start_ns, now, call->probe, tgid, tid, &key);
	return 0;
}

/* A thread that exits with calls pending never returns from them. Raw
 * tracepoints, here and below: BTF ones need the kernel's own BTF. */
SEC("raw_tp/sched_process_exit")
int BPF_PROG(span_task_exit, struct task_struct *task)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;

	call_stack_thread_exit((__u32)id);
	/* Every task a traced process creates was remembered at fork,
	 * threads too (without BTF a thread cannot be told from a child
	 * there): its slot goes with it, or a later task reusing its
	 * task_struct would be taken for a child. */
	forget_child(task);
	if (last_thread(task)) {
		bpf_map_delete_elem(&traced_tgids, &tgid);
		if (engine.resources)
			span_context_forget_process(tgid);
	}
	return 0;
}

/* Following children. The parent is the current task. */
SEC("raw_tp/sched_process_fork")
int BPF_PROG(span_task_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 parent_tgid = bpf_get_current_pid_tgid() >> 32;

	if (follow_children && traced(parent_tgid))
		adopt_child(child, parent_tgid);
	return 0;
}

/* The floor for `make bench`: an entry and a return probe that do
 * nothing, attached instead of the real pair with --bench-floor. */
SEC("uprobe")
int BPF_KPROBE(span_enter_empty) { return 0; }

SEC("uretprobe")
int BPF_KRETPROBE(span_exit_empty) { return 0; }
