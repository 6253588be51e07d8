// SPDX-License-Identifier: GPL-2.0
/* CPU and off-CPU samples of the traced processes, with their native
 * user stack, kernel stack and Python stack.
 *
 * On-CPU: a perf_event program on one software CPU clock event per CPU
 * (every task on that CPU is seen; those of untraced processes return
 * at once). Off-CPU: sched_switch; a traced thread going off the CPU is
 * sampled there (its stack says why it waits), and when it comes back a
 * small record gives the interval's end. Both records go into one ring
 * buffer the loader polls on a timer (no wakeup per sample).
 *
 * The Python stack is walked here, at the sample, by the walker of
 * include/python_walk.h, for processes the loader has found an
 * interpreter in (py_procs). Everything else (symbols, Python names and
 * lines, span states) is user space's (user/sampler.c).
 *
 * Processes are followed as the span tracers follow them
 * (bpf/traced_processes.bpf.h): by PID, children through the fork
 * tracepoint, a forked child's interpreter being its parent's. Built
 * twice like the span tracers: with CO-RE, and with PMETRICS_NO_BTF for
 * kernels without BTF, which reads no kernel struct (raw tracepoints,
 * task pointers as plain values). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "GPL";

#define PY_CTX void *
#define PY_INLINE static __always_inline
#define PY_READ(ctx, dst, size, addr) \
	bpf_probe_read_user((dst), (size), (const void *)(unsigned long)(addr))
#include "sampler_event.h"
#include "span_event.h"

/* A sample is built here, then copied into the ring at its true size
 * (most of the Python frame slots are empty). Two per CPU: sched_switch
 * runs with interrupts off, but the two kinds never share one. */
struct sample_scratch {
	struct sampler_sample e;
	__u8 after_py[SAMPLER_AFTER_PY]; /* room for the rest after e.py[n_py] */
	__u8 frame[PY_SCRATCH_BYTES]; /* the walker's read of one frame */
	struct py_code_memo memo[PY_CODE_MEMO];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct sample_scratch);
} scratch SEC(".maps");

/* Set by the loader before load. */
const volatile bool follow_children = true;
/* Wake the loader only once this much is queued (it polls on a timer). */
const volatile __u64 wakeup_bytes = 1 << 20;
/* The kernel has BTF of its own (a --btf file is not enough): the
 * current task's record of its user registers can be reached
 * (bpf_get_current_task_btf). Else a stack copy takes them from a CPU
 * sample's context when it interrupted user code, and the helpers that
 * need that BTF sit in branches the verifier never walks. */
const volatile bool own_btf = false;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20); /* resized by the loader */
} samples SEC(".maps");

/* Set by the loader while it is naming code objects it has not seen
 * (a Python program importing its modules): non-zero wakes it at every
 * record, so that it reads a module's code while the module is still
 * running, before its code and names are freed. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} wake_each_record SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SAMPLER_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* Interpreter processes, filled by the loader. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32); /* tgid */
	__type(value, struct py_proc);
} py_procs SEC(".maps");

/* The thread state last found for a thread (checked at every use), by
 * process and thread: a thread id reused in another process is another
 * thread. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u64); /* bpf_get_current_pid_tgid() */
	__type(value, struct py_thread_cache);
} py_threads SEC(".maps");

/* Threads off the CPU since out_ns, by task pointer: the switch-in side
 * of sched_switch has the task, not its id (without BTF it cannot read
 * one). Not an LRU map: an LRU evicts live entries before it is full
 * (its free nodes sit in per-CPU lists, and a CPU whose list is empty
 * takes from the shared ones by evicting), and a thread whose entry went
 * would never be seen back on the CPU. Every entry leaves at its
 * thread's next switch-in; a thread's switch-outs once it is exiting
 * make none (exiting). A switch-out with no room for its entry is
 * counted and not sampled: its end would never be known. */
struct off_start {
	__u64 out_ns;
	__u32 tid;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct off_start);
} off_starts SEC(".maps");

/* Tasks past sched_process_exit, until their task_struct is freed (an
 * address a new task may reuse): their switch-outs, the last one and any
 * preemption before it, are no waits. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, __u8);
} exiting SEC(".maps");

static __always_inline void count(__u32 counter)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &counter);

	if (c)
		*c += 1;
}

/* A forked child has its parent's address space: the same interpreter
 * at the same address (until it execs). */
static __always_inline void adopt_python(__u32 parent_tgid, __u32 tgid)
{
	struct py_proc *p = bpf_map_lookup_elem(&py_procs, &parent_tgid);

	if (p)
		bpf_map_update_elem(&py_procs, &tgid, p, BPF_NOEXIST);
}

#define TRACED_ON_ADOPT(parent_tgid, tgid) adopt_python(parent_tgid, tgid)
#include "traced_processes.bpf.h"

static long find_step(__u32 i, void *ctx)
{
	return py_find_step(NULL, ctx);
}

static long walk_step(__u32 i, void *ctx)
{
	return py_walk_step(NULL, ctx);
}

/* The innermost frame of thread ID (pid and tid) of P into *FRAME (0:
 * the thread runs no Python), from the thread state cached for it while
 * that still is its. PY_WALK_OK, or why there is none. */
static __always_inline __u32 thread_frame(const struct py_proc *p, __u64 id, __u8 *buf,
					  __u64 *frame)
{
	struct py_find find = { .L = &p->layout, .tid = (__u32)id };
	struct py_thread_cache *cached = bpf_map_lookup_elem(&py_threads, &id);
	struct py_thread_cache fresh;

	if (cached && py_cached_frame(NULL, &p->layout, cached, buf, frame) == 0)
		return PY_WALK_OK;
	find.ts = py_first_tstate(NULL, p);
	bpf_loop(PY_MAX_THREADS, find_step, &find, 0);
	if (!find.found)
		return PY_WALK_NO_THREAD;
	if (py_cache_found(NULL, &p->layout, &fresh, find.found, buf, frame))
		return PY_WALK_READ_FAILED;
	bpf_map_update_elem(&py_threads, &id, &fresh, BPF_ANY);
	return PY_WALK_OK;
}

/* The Python frames of thread ID (pid and tid) into S; P: its process's
 * interpreter, NULL when none is known. */
static __always_inline void python_stack(struct sample_scratch *s, const struct py_proc *p,
					 __u64 id)
{
	struct py_walk walk = { .out = s->e.py, .buf = s->frame, .memo = s->memo,
				.status = PY_WALK_OK };

	s->e.n_py = 0;
	if (!p) {
		s->e.py_status = PY_WALK_NOT_PYTHON;
		return;
	}
	s->e.py_status = thread_frame(p, id, s->frame, &walk.frame);
	if (s->e.py_status != PY_WALK_OK)
		return;
	if (!walk.frame) {
		s->e.py_status = PY_WALK_IDLE;
		return;
	}
	walk.L = &p->layout;
	for (int i = 0; i < PY_CODE_MEMO; i++)
		s->memo[i].code = 0;
	bpf_loop(PY_MAX_VISITED, walk_step, &walk, 0);
	if (walk.frame && walk.status == PY_WALK_OK)
		walk.status = PY_WALK_TRUNCATED;
	s->e.n_py = walk.n;
	s->e.py_status = walk.status;
}

static __always_inline __u64 submit_flags(void)
{
	__u32 zero = 0, *each = bpf_map_lookup_elem(&wake_each_record, &zero);

	if (each && *each)
		return BPF_RB_FORCE_WAKEUP;
	return bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) >= wakeup_bytes ? BPF_RB_FORCE_WAKEUP
									  : BPF_RB_NO_WAKEUP;
}

static __always_inline int stack_frames(long bytes)
{
	return bytes < 0 ? (int)bytes : (int)(bytes / sizeof(__u64));
}

/* User registers R, in perf's order, into OUT. */
static __always_inline __u32 user_regs(struct pt_regs *r, __u64 *out)
{
#if defined(__TARGET_ARCH_x86)
	out[0] = r->ax, out[1] = r->bx, out[2] = r->cx, out[3] = r->dx;
	out[4] = r->si, out[5] = r->di, out[6] = r->bp, out[7] = r->sp, out[8] = r->ip;
	out[9] = r->r8, out[10] = r->r9, out[11] = r->r10, out[12] = r->r11;
	out[13] = r->r12, out[14] = r->r13, out[15] = r->r14, out[16] = r->r15;
	return 17;
#elif defined(__TARGET_ARCH_arm64)
	/* unrolled: R may be the context, which the verifier lets be read
	 * only at constant offsets from its start */
#pragma unroll
	for (int i = 0; i < 31; i++)
		out[i] = r->regs[i];
	out[31] = r->sp;
	out[32] = r->pc;
	return 33;
#else
	return 0;
#endif
}

/* The most a sample's packed part holds before its pending returns: the
 * Python frames and both stacks. The bound the verifier needs on AT
 * before the returns and the stack copy are written after it. */
#define PACKED_STACKS \
	(PY_MAX_FRAMES * sizeof(struct py_frame_ref) + 8 * (SAMPLER_USER_FRAMES + SAMPLER_KERNEL_FRAMES))

/* The user registers REGS (NULL: none to be had) and as much of
 * SAMPLER_STACK_COPY of the user stack as is mapped above their stack
 * pointer, written at S's packed offset AT. Returns the bytes written. */
static __always_inline __u32 copy_stack(struct sample_scratch *s, __u32 at, struct pt_regs *regs)
{
	__u8 *dst = (__u8 *)s->e.py;
	__u64 *out, sp;
	__u32 n;

	if (!regs || at > PACKED_STACKS + sizeof(struct sampler_return) * SAMPLER_RETURNS)
		return 0;
	out = (__u64 *)(dst + at);
	n = user_regs(regs, out);
	sp = out[SAMPLER_REGS_SP];
	s->e.n_regs = n;
	dst += at + n * 8;
	for (__u32 len = SAMPLER_STACK_COPY; len >= 1024; len /= 2) {
		if (bpf_probe_read_user(dst, len, (const void *)sp) == 0) {
			s->e.stack_len = len;
			return n * 8 + len;
		}
	}
	return n * 8;
}

/* Where the current task left its user code, from the top of its user
 * stack: the way without the task's own record of its registers. */
static __always_inline __u64 user_leaf_by_stack(void *ctx)
{
	__u64 ip = 0;

	bpf_get_stack(ctx, &ip, sizeof(ip), BPF_F_USER_STACK);
	return ip;
}

#ifndef PMETRICS_NO_BTF
/* The registers the current task's user code left with, from the task's
 * own record of them: there for every sample (with the kernel's own
 * BTF; else those of a CPU sample that interrupted user code). */
static __always_inline struct pt_regs *saved_user_regs(struct pt_regs *interrupted)
{
	if (!own_btf)
		return interrupted;
	return (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
}

/* Where the current task left its user code (it is in the kernel). */
static __always_inline __u64 user_leaf(void *ctx)
{
	if (!own_btf)
		return user_leaf_by_stack(ctx);
	return PT_REGS_IP((struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf()));
}
#else
/* Without BTF the task's record cannot be reached: only a CPU sample
 * that interrupted user code has the registers, in its context. */
static __always_inline struct pt_regs *saved_user_regs(struct pt_regs *interrupted)
{
	return interrupted;
}

static __always_inline __u64 user_leaf(void *ctx)
{
	return user_leaf_by_stack(ctx);
}
#endif

/* The native probes' calls in progress, by thread: the span engine's
 * map, shared by the loader (else empty), each call with the return
 * address read at its entry. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* the span engine's size when shared */
	__type(key, __u32);
	__type(value, struct call_stack);
} call_stacks SEC(".maps");

/* The current thread TID's native probed calls in progress as pending
 * returns, innermost first, at S's packed offset AT: where the kernel's
 * own list cannot be read (no BTF), the span engine's record of the
 * same returns, as of this moment. The trampoline is left for user
 * space to find ("[uprobes]" in the process's maps). Returns the bytes
 * written. */
static __always_inline __u32 open_call_returns(struct sample_scratch *s, __u32 at, __u32 tid)
{
	struct call_stack *st = bpf_map_lookup_elem(&call_stacks, &tid);
	struct sampler_return *out;
	__u32 n = 0, depth;

	if (!st || at > PACKED_STACKS)
		return 0;
	out = (struct sampler_return *)((__u8 *)s->e.py + at);
	depth = st->depth;
	/* every call taken as it is, one path through the loop for the
	 * verifier (a call whose return was not read has ret 0: user space
	 * passes it over) */
	for (; n < SAMPLER_RETURNS && n < depth; n++) {
		struct pending_call *c = &st->calls[(depth - 1 - n) & (SPAN_MAX_DEPTH - 1)];

		out[n].stack = c->entry_sp;
		out[n].ret = c->ret;
	}
	s->e.n_returns = n;
	return n * sizeof(*out);
}

#ifndef PMETRICS_NO_BTF
/* The current thread's pending uretprobes, innermost first (the kernel's
 * list order), written at S's packed offset AT, with the trampoline
 * they return to; include/sampler_event.h says why. Returns the bytes
 * written. */
static __always_inline __u32 pending_returns(struct sample_scratch *s, __u32 at, __u32 tid)
{
	/* not bpf_get_current_task_btf(): with --btf the kernel has none */
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct sampler_return *out;
	struct return_instance *ri;
	__u32 n;

	if (!bpf_core_field_exists(task->utask))
		return open_call_returns(s, at, tid);
	if (at > PACKED_STACKS)
		return 0;
	ri = BPF_CORE_READ(task, utask, return_instances);
	if (!ri)
		return open_call_returns(s, at, tid);
	s->e.trampoline = BPF_CORE_READ(task, mm, uprobes_state.xol_area, vaddr);
	out = (struct sampler_return *)((__u8 *)s->e.py + at);
	for (n = 0; n < SAMPLER_RETURNS && ri; n++) {
		out[n].stack = BPF_CORE_READ(ri, stack);
		out[n].ret = BPF_CORE_READ(ri, orig_ret_vaddr);
		ri = BPF_CORE_READ(ri, next);
	}
	s->e.n_returns = n;
	return n * sizeof(*out);
}
#else
/* Without BTF the kernel's record of them cannot be found. */
static __always_inline __u32 pending_returns(struct sample_scratch *s, __u32 at, __u32 tid)
{
	return open_call_returns(s, at, tid);
}
#endif

/* Whether user address IP is in interpreter P. */
static __always_inline bool in_interpreter(__u64 ip, const struct py_proc *p)
{
	return p && ip >= p->interp_start && ip < p->interp_end;
}

/* Stack BYTES as bpf_get_stack() returned them (< 0: an error), bounded
 * by MAX for the verifier. */
static __always_inline __u32 stack_bytes(long bytes, __u32 max)
{
	__u64 n = bytes < 0 ? 0 : (__u64)bytes;

	asm volatile("" : "+r"(n));
	return n > max ? max : (__u32)n;
}

/* The registers of the user code a CPU sample interrupted, in its
 * context; NULL when it interrupted the kernel. A sample in user mode
 * has no kernel stack (bpf_get_stack() would find an empty one, at a
 * cost), and its user leaf is the context's pc: no stack walk is needed
 * for a leaf alone. On x86-64 and arm64 user addresses have the top bit
 * clear, kernel ones set; the context's registers are read whole (the
 * verifier takes no narrower load of them). */
static __always_inline struct pt_regs *interrupted_user(struct bpf_perf_event_data *ctx)
{
	struct pt_regs *regs = (struct pt_regs *)&ctx->regs;

	return PT_REGS_IP(regs) < (1ull << 63) ? regs : NULL;
}

/* One sample of the current thread, of a traced process TGID.
 * INTERRUPTED: the registers of the user code the sample interrupted
 * when the context has them (a CPU sample in user mode), else NULL. A
 * CPU sample in user mode has no kernel stack; every other one is taken
 * with its kernel stack. */
static __always_inline int take_sample(void *ctx, __u32 kind, __u64 now, __u64 id,
				       struct pt_regs *interrupted)
{
	__u32 tgid = id >> 32, tid = (__u32)id, n_py, at;
	struct sample_scratch *s = bpf_map_lookup_elem(&scratch, &kind);
	struct py_proc *py = bpf_map_lookup_elem(&py_procs, &tgid);
	__u64 user_ip = interrupted ? PT_REGS_IP(interrupted) : 0;
	bool native_stack = false;
	__u64 size, leaf;
	__u8 *packed;
	long n;

	if (!s)
		return -1;
	s->e.type = SAMPLER_REC_SAMPLE;
	s->e.kind = kind;
	s->e.time_ns = now;
	s->e.pid = tgid;
	s->e.tid = tid;
	s->e.stack_len = 0;
	s->e.n_regs = 0;
	s->e.n_returns = 0;
	s->e.trampoline = 0;
	python_stack(s, py, id);
	n_py = s->e.n_py;
	if (n_py > PY_MAX_FRAMES)
		n_py = PY_MAX_FRAMES;
	at = n_py * sizeof(struct py_frame_ref);
	packed = (__u8 *)s->e.py;
	/* Under a Python stack user space keeps only the native frames the
	 * interpreter called out to (user/sampler.c). With the leaf in the
	 * interpreter that is none: the leaf alone is taken. Otherwise the
	 * native stack, and its copy for DWARF: an extension or library
	 * built without frame pointers breaks the chain on its way back to
	 * the interpreter. */
	leaf = user_ip ? user_ip : n_py ? user_leaf(ctx) : 0;
	if (n_py && leaf && in_interpreter(leaf, py)) {
		*(__u64 *)(packed + at) = leaf;
		s->e.n_user = 1;
		at += 8;
	} else {
		n = bpf_get_stack(ctx, packed + at, 8 * SAMPLER_USER_FRAMES, BPF_F_USER_STACK);
		s->e.n_user = stack_frames(n);
		at += stack_bytes(n, 8 * SAMPLER_USER_FRAMES);
		native_stack = true;
	}
	if (!user_ip) {
		n = bpf_get_stack(ctx, packed + at, 8 * SAMPLER_KERNEL_FRAMES, 0);
		s->e.n_kernel = stack_frames(n);
		at += stack_bytes(n, 8 * SAMPLER_KERNEL_FRAMES);
	} else {
		s->e.n_kernel = 0;
	}
	if (native_stack) {
		at += pending_returns(s, at, tid);
		at += copy_stack(s, at, saved_user_regs(interrupted));
	}
	size = offsetof(struct sampler_sample, py) + at;
	/* the bound the verifier needs, on the register it checks */
	asm volatile("" : "+r"(size));
	if (size > sizeof(s->e) + SAMPLER_AFTER_PY)
		return -1;
	if (bpf_ringbuf_output(&samples, &s->e, size, submit_flags())) {
		count(SAMPLER_CNT_RINGBUF_FULL);
		return -1;
	}
	return 0;
}

SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;

	if (!tgid || !traced(tgid))
		return 0;
	take_sample(ctx, SAMPLER_ON_CPU, bpf_ktime_get_ns(), id, interrupted_user(ctx));
	return 0;
}

/* PREV (the current task) goes off the CPU, NEXT comes on. */
static __always_inline int on_switch(void *ctx, __u64 prev, __u64 next)
{
	__u64 now = bpf_ktime_get_ns(), id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct off_start *back = bpf_map_lookup_elem(&off_starts, &next);
	struct off_start st = { .out_ns = now, .tid = (__u32)id };

	if (back) {
		struct sampler_switch_in *r = bpf_ringbuf_reserve(&samples, sizeof(*r), 0);

		if (r) {
			r->type = SAMPLER_REC_SWITCH_IN;
			r->tid = back->tid;
			r->out_ns = back->out_ns;
			r->in_ns = now;
			bpf_ringbuf_submit(r, submit_flags());
		} else {
			count(SAMPLER_CNT_RINGBUF_FULL);
		}
		bpf_map_delete_elem(&off_starts, &next);
	}
	if (!tgid || !traced(tgid))
		return 0;
	if (bpf_map_lookup_elem(&exiting, &prev))
		return 0;
	if (bpf_map_update_elem(&off_starts, &prev, &st, BPF_ANY)) {
		count(SAMPLER_CNT_SWITCH_TABLE_FULL);
		return 0;
	}
	if (take_sample(ctx, SAMPLER_OFF_CPU, now, id, NULL))
		bpf_map_delete_elem(&off_starts, &prev);
	return 0;
}

/* sched_switch(bool preempt, struct task_struct *prev, struct task_struct *next):
 * the BTF tracepoint where the kernel has BTF, else the raw one. */
#ifndef PMETRICS_NO_BTF
SEC("tp_btf/sched_switch")
int BPF_PROG(off_cpu_btf, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(ctx, (__u64)prev, (__u64)next);
}
#endif

SEC("raw_tp/sched_switch")
int off_cpu_raw(struct bpf_raw_tracepoint_args *ctx)
{
	return on_switch(ctx, ctx->args[1], ctx->args[2]);
}

/* Tells the loader that process TGID exec'd or ended (TYPE). */
static __always_inline void say_process(__u32 type, __u32 tgid)
{
	struct sampler_process *r = bpf_ringbuf_reserve(&samples, sizeof(*r), 0);

	if (!r) {
		count(SAMPLER_CNT_RINGBUF_FULL);
		return;
	}
	r->type = type;
	r->pid = tgid;
	r->mono_ns = bpf_ktime_get_ns();
	if (type != SAMPLER_REC_EXEC || bpf_get_current_comm(r->comm, sizeof(r->comm)))
		__builtin_memset(r->comm, 0, sizeof(r->comm));
	bpf_ringbuf_submit(r, BPF_RB_FORCE_WAKEUP);
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(sampler_task_exit, struct task_struct *task)
{
	__u64 id = bpf_get_current_pid_tgid(), key = (__u64)task;
	__u32 tgid = id >> 32;
	__u8 one = 1;

	bpf_map_delete_elem(&py_threads, &id);
	forget_child(task);
	if (!bpf_map_lookup_elem(&traced_tgids, &tgid))
		return 0;
	bpf_map_update_elem(&exiting, &key, &one, BPF_ANY);
	if (last_thread(task)) {
		bpf_map_delete_elem(&traced_tgids, &tgid);
		bpf_map_delete_elem(&py_procs, &tgid);
		say_process(SAMPLER_REC_EXIT, tgid);
	}
	return 0;
}

SEC("raw_tp/sched_process_free")
int BPF_PROG(sampler_task_free, struct task_struct *task)
{
	__u64 key = (__u64)task;

	bpf_map_delete_elem(&exiting, &key);
	/* a final switch-out that went unmarked (its mark evicted): a new
	 * task at this address must not end it */
	bpf_map_delete_elem(&off_starts, &key);
	return 0;
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(sampler_task_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 parent_tgid = bpf_get_current_pid_tgid() >> 32;

	if (follow_children && traced(parent_tgid))
		adopt_child(child, parent_tgid);
	return 0;
}

/* A traced process replaced its program: its interpreter (if any) is
 * gone; the loader looks at it again. */
SEC("raw_tp/sched_process_exec")
int BPF_PROG(sampler_task_exec)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (!traced(tgid))
		return 0;
	bpf_map_delete_elem(&py_procs, &tgid);
	say_process(SAMPLER_REC_EXEC, tgid);
	return 0;
}
