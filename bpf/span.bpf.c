// SPDX-License-Identifier: GPL-2.0
/* Native function spans: an entry uprobe pushes the call on its thread's
 * call stack, the matching uretprobe pops it and emits its span (the
 * span engine of call_stack.bpf.h). A call is named by its probe, the
 * attach cookie. Processes are traced by PID (traced_processes.bpf.h),
 * children followed through the fork tracepoint here, which keeps that
 * set for the Python tracer too.
 *
 * Built twice: as is, for kernels whose struct layout CO-RE can learn
 * (their own BTF, or --btf FILE); and with PMETRICS_NO_BTF, reading no
 * kernel struct at all, for kernels without BTF. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "call_stack.bpf.h"
#include "traced_processes.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the loader before load. */
const volatile bool follow_children = true;

/* The address the probed function returns to, at its entry: still the
 * real one (the kernel swaps it for its trampoline after the entry's
 * programs ran). x86-64: at the stack pointer; arm64: the link register. */
static __always_inline __u64 entry_return_address(struct pt_regs *ctx)
{
#if defined(__TARGET_ARCH_arm64)
	return PT_REGS_RET(ctx);
#else
	__u64 ret = 0;

	bpf_probe_read_user(&ret, sizeof(ret), (const void *)PT_REGS_SP(ctx));
	return ret;
#endif
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
	call->ret = entry_return_address(ctx);
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
	/* for the CPU sampler, which reads these stacks late (struct
	 * call_stack); Python's engine has no reader of it */
	st->last_return_ns = now;
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

/* A traced process runs a new program: the loader checks what it runs
 * (a Python child on another interpreter than the one hooked is named). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} execs SEC(".maps");

SEC("raw_tp/sched_process_exec")
int BPF_PROG(span_task_exec)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u32 *e;

	if (!traced(tgid))
		return 0;
	e = bpf_ringbuf_reserve(&execs, sizeof(*e), 0);
	if (!e)
		return 0; /* a check missed, not a span */
	*e = (__u32)(loader_pid_tgid() >> 32);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* The floor for `make bench`: an entry and a return probe that do
 * nothing, attached instead of the real pair with --bench-floor. */
SEC("uprobe")
int BPF_KPROBE(span_enter_empty) { return 0; }

SEC("uretprobe")
int BPF_KRETPROBE(span_exit_empty) { return 0; }
