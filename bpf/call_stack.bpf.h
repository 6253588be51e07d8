/* SPDX-License-Identifier: GPL-2.0 */
/* The span engine, shared by every span tracer (native uprobes in
 * bpf/span.bpf.c, Python frames in bpf/pyspan.bpf.c): a per-thread stack
 * of calls entered and not yet returned, matched to their return probes
 * by stack pointer; the loss counters; and the ring buffer of finished
 * spans, with a lazy consumer wakeup.
 *
 * Cost matters more than anything here (platform.md: an empty
 * uprobe+uretprobe pair is ~5.5 us, a wakeup per event doubles it), so
 * an entry writes no event at all, a return writes one 32-byte record,
 * and the consumer is only woken when the ring is filling up.
 *
 * A tracer decides what a call is (its probe, and for Python its frame)
 * and when its span ends; the engine does the rest, under the same
 * names on both sides: call_stacks, counters, spans, span_starts. Include
 * after vmlinux.h, bpf_helpers.h, bpf_tracing.h and bpf_core_read.h. */
#ifndef PMETRICS_CALL_STACK_BPF_H
#define PMETRICS_CALL_STACK_BPF_H

#include "span_event.h"
#include "span_context.bpf.h"

/* Set by the loader before load (user/span_engine.c). */
const volatile struct span_engine_config engine = {
	.wakeup_bytes = 1 << 20,
	.returns_need_entry = 1,
};

/* The call's span begins and ends with it: its resource context (if any)
 * is dropped when the call is unwound or its thread exits. */
#define CALL_OWNS_CONTEXT 0x1
/* A step of a Python coroutine or generator, whose span covers steps. */
#define CALL_CORO_STEP 0x2
/* The making of a Python coroutine or generator object. */
#define CALL_CREATION 0x4


/* Threads with a call stack: created at a thread's first traced entry,
 * deleted when it exits; kept to what a traced program plausibly has, a
 * thread beyond it (or one the kernel had no memory for) counted.
 * Preallocated as compiled, which a perf_event program reading it (the
 * CPU sampler) needs, and kernels before 6.1 too (run-time allocation
 * from a tracing program puts a WARNING in their log); elsewhere the
 * loader asks for run-time allocation (user/span_engine.c): 3 KB a
 * thread then, not 13 MB at load. */
#define SPAN_MAX_THREADS 4096

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SPAN_MAX_THREADS);
	__type(key, __u32); /* tid */
	__type(value, struct call_stack);
} call_stacks SEC(".maps");

/* An all-zero call_stack to insert from: too big for the BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct call_stack);
} empty_call_stack SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SPAN_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20); /* sized by the loader */
} spans SEC(".maps");

static __always_inline void count_n(__u32 which, __u64 n)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &which);

	if (c)
		*c += n;
}

static __always_inline void count(__u32 which)
{
	count_n(which, 1);
}

/* The current thread's tgid << 32 | tid as the loader numbers them: in
 * pmetrics' PID namespace when it runs in one (0 when the thread is not
 * visible there), else the kernel's own. */
static __always_inline __u64 loader_pid_tgid(void)
{
	struct bpf_pidns_info ns = {};

	if (!engine.pidns_ino)
		return bpf_get_current_pid_tgid();
	if (bpf_get_ns_current_pid_tgid(engine.pidns_dev, engine.pidns_ino, &ns, sizeof(ns)))
		return 0;
	return (__u64)ns.tgid << 32 | ns.pid;
}

/* How far the stack pointer moves between a function's first instruction
 * and the instruction after its return: x86's `ret` pops the return
 * address the entry saw on top of the stack; arm64 keeps it in the link
 * register and returns with the entry's sp. */
#if defined(__TARGET_ARCH_x86)
#define RETURN_SP_DELTA 8
#else
#define RETURN_SP_DELTA 0
#endif

/* In a return probe: the stack pointer the returning call had at entry. */
static __always_inline __u64 entry_sp_of_return(struct pt_regs *ctx)
{
	return PT_REGS_SP(ctx) - RETURN_SP_DELTA;
}

/* The thread's call stack, made at its first traced entry. */
static __always_inline struct call_stack *call_stack_of(__u32 tid, __u32 tgid)
{
	struct call_stack *st = bpf_map_lookup_elem(&call_stacks, &tid);
	__u32 zero = 0;

	if (st)
		return st;
	st = bpf_map_lookup_elem(&empty_call_stack, &zero);
	if (!st)
		return NULL;
	st->tgid = tgid;
	bpf_map_update_elem(&call_stacks, &tid, st, BPF_NOEXIST);
	st = bpf_map_lookup_elem(&call_stacks, &tid);
	if (!st)
		count(SPAN_CNT_STACK_FULL);
	return st;
}

/* Pushes a call entered at SP; the caller fills in what the call is.
 * NULL when the stack is as deep as the kernel's pending return probes
 * (none is installed past that either): counted. *DEPTH gets its slot. */
static __always_inline struct pending_call *call_stack_push(struct call_stack *st, __u64 sp,
							     __u64 now, __u32 *depth)
{
	struct pending_call *call;
	__u32 d = st->depth;

	if (d >= SPAN_MAX_DEPTH) {
		count(SPAN_CNT_DEPTH_OVERFLOW);
		return NULL;
	}
	call = &st->calls[d & (SPAN_MAX_DEPTH - 1)];
	call->start_ns = now;
	call->entry_sp = sp;
	call->key = 0;
	call->aux = 0;
	call->ret = 0;
	call->probe = 0;
	call->flags = 0;
	st->depth = d + 1;
	*depth = d;
	return call;
}

/* The context key of a call that owns its span context: the tracer's
 * key, or for native calls (key 0) the thread and stack slot. */
static __always_inline struct span_context_key call_context_key(const struct pending_call *call,
								 __u32 tid, __u32 tgid, __u32 depth)
{
	struct span_context_key k = { .id = call->key, .owner = tgid };

	if (!call->key) {
		k.id = depth;
		k.owner = tid;
	}
	return k;
}

/* A call leaves the stack without a span: drops what it owns. */
static __always_inline void call_dropped(const struct pending_call *call, __u32 tid, __u32 tgid,
					 __u32 depth)
{
	struct span_context_key k;

	if (!engine.resources || !(call->flags & CALL_OWNS_CONTEXT))
		return;
	k = call_context_key(call, tid, tgid, depth);
	span_context_drop(&k, tgid);
}

/* Pops the call that the return at SP belongs to. Calls above it (deeper
 * entries whose return was never seen: longjmp, exception unwinding, a
 * lost return probe) are popped first and counted, never mispaired. NULL
 * when no entry matches; counted where every return has one. *DEPTH
 * gets the returned call's slot. */
static __always_inline struct pending_call *call_stack_pop(struct call_stack *st, __u64 sp,
							    __u32 tid, __u32 *depth)
{
	struct pending_call *call;

	for (int i = 0; i < SPAN_MAX_DEPTH; i++) {
		__u32 d = st->depth;

		if (d == 0 || d > SPAN_MAX_DEPTH)
			break;
		call = &st->calls[(d - 1) & (SPAN_MAX_DEPTH - 1)];
		if (call->entry_sp > sp)
			break; /* a shallower call: this return has no entry */
		st->depth = d - 1;
		*depth = d - 1;
		if (call->entry_sp == sp)
			return call;
		count(SPAN_CNT_UNWOUND);
		call_dropped(call, tid, st->tgid, d - 1);
	}
	if (engine.returns_need_entry)
		count(SPAN_CNT_NO_ENTRY);
	return NULL;
}

/* No wakeup unless the ring is filling up. */
static __always_inline __u64 span_submit_flags(void)
{
	if (bpf_ringbuf_query(&spans, BPF_RB_AVAIL_DATA) >= engine.wakeup_bytes)
		return BPF_RB_FORCE_WAKEUP;
	return BPF_RB_NO_WAKEUP;
}

/* Sends the span of PROBE_ID from START_NS to END_NS, made by thread TID
 * of TGID; with resources, with the context begun under KEY. */
static __always_inline void span_emit(__u64 start_ns, __u64 end_ns, __u32 probe_id, __u32 tgid,
				      __u32 tid, const struct span_context_key *key)
{
	__u32 size = engine.resources ? sizeof(struct span_resource_event) : sizeof(struct span_event);
	struct span_event *e = bpf_ringbuf_reserve(&spans, size, 0);

	if (!e) {
		count(SPAN_CNT_RINGBUF_FULL);
		if (engine.resources)
			span_context_drop(key, tgid);
		return;
	}
	e->start_ns = start_ns;
	e->duration_ns = end_ns - start_ns;
	e->probe_id = probe_id;
	e->tgid = tgid;
	e->tid = tid;
	e->pad = 0;
	if (engine.resources)
		span_context_finish((struct span_resource_event *)e, key, tgid,
				    (__u32)bpf_get_current_pid_tgid());
	bpf_ringbuf_submit(e, span_submit_flags());
}

/* A thread exits: the calls still open on it never return. */
static __always_inline void call_stack_thread_exit(__u32 tid)
{
	struct call_stack *st = bpf_map_lookup_elem(&call_stacks, &tid);
	__u32 depth;

	if (!st)
		return;
	depth = st->depth;
	count_n(SPAN_CNT_THREAD_EXIT, depth);
	for (__u32 d = 0; engine.resources && d < SPAN_MAX_DEPTH && d < depth; d++)
		call_dropped(&st->calls[d], tid, st->tgid, d);
	bpf_map_delete_elem(&call_stacks, &tid);
}

#endif
