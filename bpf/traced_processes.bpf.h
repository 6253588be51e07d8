/* SPDX-License-Identifier: GPL-2.0 */
/* The set of traced processes: the target, and with children followed
 * its descendants. The native span object (bpf/span.bpf.c) keeps it
 * with its fork and exit tracepoints; the Python span object reads the
 * same maps (the loader hands it the native object's, bpf_map__reuse_fd),
 * so one set serves both; the sampler (bpf/sampler.bpf.c) keeps its own
 * by the same rules. Included after call_stack.bpf.h, a target named in
 * the loader's own PID namespace is recognised too. An object that
 * learns more about a child at adoption defines
 * TRACED_ON_ADOPT(parent_tgid, tgid) before including this. */
#ifndef PMETRICS_TRACED_PROCESSES_BPF_H
#define PMETRICS_TRACED_PROCESSES_BPF_H

#ifndef TRACED_ON_ADOPT
#define TRACED_ON_ADOPT(parent_tgid, tgid) ((void)0)
#endif

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* tgid */
	__type(value, __u8);
} traced_tgids SEC(".maps");

#ifdef PMETRICS_CALL_STACK_BPF_H
/* The targets as the loader named them, when it runs in a PID namespace
 * of its own (engine.pidns_ino): their kernel tgids are learnt at their
 * first probe hit or fork, and then kept in traced_tgids. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u32); /* tgid in the loader's namespace */
	__type(value, __u8);
} ns_targets SEC(".maps");
#endif

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

	if (tgid != parent_tgid) {
		trace_tgid(tgid);
		TRACED_ON_ADOPT(parent_tgid, tgid);
	}
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
	__u32 *parent = bpf_map_lookup_elem(&new_children, &key);

	if (!parent)
		return false;
	TRACED_ON_ADOPT(*parent, tgid);
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

#ifdef PMETRICS_CALL_STACK_BPF_H
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
#else
static __always_inline bool named_by_loader(__u32 tgid)
{
	return false;
}
#endif

/* Is TGID, the current process, traced? */
static __always_inline bool traced(__u32 tgid)
{
	if (bpf_map_lookup_elem(&traced_tgids, &tgid))
		return true;
	return adopted_current(tgid) || named_by_loader(tgid);
}

#endif
