// SPDX-License-Identifier: GPL-2.0
/* Python function spans: entry and return uprobes on the interpreter's
 * _PyEval_EvalFrameDefault (every call), or on 3.8-3.10 on its generator
 * step functions (coroutine steps only). Each entry looks the frame's
 * code object up in a cache (the hot path: one user read, one hash
 * lookup); only a code object never seen before has its names read and
 * compared. A matched plain call is timed from entry to return; a matched
 * coroutine or generator from its first entry to the return that leaves
 * it finished, across every suspension, keyed by its frame's address.
 * Calls wait for their return on the span engine's per-thread stack
 * (call_stack.bpf.h); the hooks see the returns of untimed calls too. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "call_stack.bpf.h"
#include "pyspan_config.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 targ_tgid = 0;
const volatile __u32 n_probes = 0;
const volatile struct pyspan_layout layout = {};
const volatile struct pyspan_probe_cfg probes[PYSPAN_MAX_PROBES] = {};

#define CODE_GEN_FLAGS 0x2a0 /* CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR */

struct scratch {
	char want[PYSPAN_STR_MAX];
	char got[PYSPAN_STR_MAX];
};

/* A code object's address alone is not an identity: the interpreter
 * frees code objects (a module's body after import, a reloaded module)
 * and reuses the memory for others, which would then inherit a stale
 * verdict. The file and name pointers next to it are read in the same
 * user read and make a reuse by a different function visible. */
struct code_key {
	__u64 code;
	__u64 names[3]; /* co_filename, co_name, and the field after them */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, PYSPAN_CODE_CACHE);
	__type(key, struct code_key);
	__type(value, __u32);
} code_cache SEC(".maps");

/* LRU: a coroutine whose end we never see (closed by a path we do not
 * hook, a lost return) must not fill the table for good. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, PYSPAN_MAX_OPEN_CORO);
	__type(key, __u64);
	__type(value, struct open_coro);
} open_coros SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PYSPAN_MAX_PROBES * PYSPAN_PC_MAX);
	__type(key, __u32);
	__type(value, __u64);
} probe_counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch_buf SEC(".maps");

static __always_inline void count_probe(__u32 idx, __u32 kind)
{
	__u32 key = idx * PYSPAN_PC_MAX + kind;
	__u64 *c = bpf_map_lookup_elem(&probe_counters, &key);
	if (c)
		*c += 1;
}

static __always_inline __u64 read_ptr(__u64 addr)
{
	__u64 v = 0;
	bpf_probe_read_user(&v, sizeof(v), (void *)addr);
	return v;
}

/* Copies a compact-ASCII str object into buf, NUL-terminated. Returns
 * its length, or -1 when it is not compact ASCII or too long. */
static __always_inline int read_str(__u64 obj, char *buf)
{
	__u64 len = 0;
	__u32 state = 0;

	if (!obj)
		return -1;
	bpf_probe_read_user(&len, sizeof(len), (void *)(obj + layout.unicode_length));
	bpf_probe_read_user(&state, sizeof(state), (void *)(obj + layout.unicode_state));
	if ((state & 0x60) != 0x60 || len >= PYSPAN_STR_MAX)
		return -1;
	if (bpf_probe_read_user(buf, len & (PYSPAN_STR_MAX - 1), (void *)(obj + layout.unicode_data)))
		return -1;
	buf[len & (PYSPAN_STR_MAX - 1)] = '\0';
	return (int)len;
}

/* Do GOT and WANT hold the same NUL-terminated string, looking at no more
 * than MAX bytes of either? A loop rather than bpf_strncmp(), which came
 * in 5.17: the robot's kernel may be older (5.15 is enough for the rest).
 * It only runs when the code cache misses. */
static __always_inline bool str_equal(const char *got, const volatile char *want, __u32 max)
{
#pragma clang loop unroll(disable)
	for (__u32 i = 0; i < max; i++) {
		char c = want[i];

		if (got[i] != c)
			return false;
		if (!c)
			return true;
	}
	return false;
}

/* Does the tail of the file name str object equal the suffix (or the
 * whole name equal the suffix without its leading '/')? */
static __always_inline bool tail_is(__u64 fname, __u64 flen, __u32 slen,
				    const volatile char *suffix, char *buf)
{
	__u64 data = fname + layout.unicode_data;

	if (slen == 0 || slen >= PYSPAN_STR_MAX)
		return false;
	if (flen >= slen) {
		if (bpf_probe_read_user(buf, slen & (PYSPAN_STR_MAX - 1), (void *)(data + flen - slen)))
			return false;
		buf[slen & (PYSPAN_STR_MAX - 1)] = '\0';
		return str_equal(buf, suffix, PYSPAN_STR_MAX);
	}
	if (flen + 1 == slen) {
		if (bpf_probe_read_user(buf, flen & (PYSPAN_STR_MAX - 1), (void *)data))
			return false;
		buf[flen & (PYSPAN_STR_MAX - 1)] = '\0';
		return str_equal(buf, suffix + 1, PYSPAN_STR_MAX - 1);
	}
	return false;
}

static __always_inline int code_key_read(__u64 code, struct code_key *key)
{
	key->code = code;
	return bpf_probe_read_user(key->names, sizeof(key->names),
				   (void *)(code + layout.code_filename));
}

/* Index of the probe whose name (qualname, or the last part when
 * by_last_part) equals the str object `name` and whose module is the
 * file of the code KEY names, or -1. */
static __always_inline int match_names(const struct code_key *key, __u64 name, bool by_last_part)
{
	__u32 zero = 0;
	struct scratch *s = bpf_map_lookup_elem(&scratch_buf, &zero);
	__u64 fname = key->names[0], flen = 0;
	__u32 state = 0;

	if (!s || !fname || read_str(name, s->got) < 0)
		return -1;
	bpf_probe_read_user(&flen, sizeof(flen), (void *)(fname + layout.unicode_length));
	bpf_probe_read_user(&state, sizeof(state), (void *)(fname + layout.unicode_state));
	if ((state & 0x60) != 0x60)
		return -1;
#pragma unroll
	for (__u32 i = 0; i < PYSPAN_MAX_PROBES; i++) {
		if (i >= n_probes)
			break;
		if (!str_equal(s->got, by_last_part ? probes[i].name : probes[i].qualname,
			       PYSPAN_STR_MAX))
			continue;
		if (tail_is(fname, flen, probes[i].file_len, probes[i].file_suffix, s->want) ||
		    tail_is(fname, flen, probes[i].pkg_len, probes[i].pkg_suffix, s->want))
			return i;
	}
	return -1;
}


/* 3.8-3.10: a call made by Python code leaves the called function object
 * on the caller's value stack (CALL_FUNCTION, CALL_METHOD and
 * CALL_FUNCTION_EX all keep it below the arguments). Returns its
 * qualified name, or 0 when the caller is C code. */
static __always_inline __u64 qualname_from_caller(__u64 frame, __u64 code)
{
	__u64 caller = read_ptr(frame + layout.frame_back), stack;

	if (!caller || !layout.frame_valuestack)
		return 0;
	stack = read_ptr(caller + layout.frame_valuestack);
	if (!stack)
		return 0;
	for (int i = 0; i < PYSPAN_CALLER_SLOTS; i++) {
		__u64 obj = read_ptr(stack + i * 8);
		if (obj && read_ptr(obj + layout.func_code) == code)
			return read_ptr(obj + layout.func_qualname);
	}
	return 0;
}

/* Decides, once per code object, whether it is one of the probes. */
static __always_inline __u32 classify(const struct code_key *key, __u64 frame)
{
	__u64 code = key->code;
	__u32 flags = 0, value;
	bool is_gen;
	int idx;

	bpf_probe_read_user(&flags, sizeof(flags), (void *)(code + layout.code_flags));
	is_gen = flags & CODE_GEN_FLAGS;
	if (layout.code_qualname) {
		idx = match_names(key, read_ptr(code + layout.code_qualname), false);
	} else if (is_gen) {
		/* 3.8-3.10: no co_qualname, but the generator has one. */
		__u64 gen = read_ptr(frame + layout.frame_gen);
		if (!gen)
			return PYSPAN_CODE_NO_MATCH; /* not cached: try again */
		idx = match_names(key, read_ptr(gen + layout.gen_qualname), false);
	} else {
		/* 3.8-3.10 plain function: the code has no qualname; the def
		 * statement (py_make_function) or the function object on the
		 * caller's stack has it. Only a same-named function in the
		 * probe's file gets that far. */
		idx = match_names(key, key->names[1], true); /* co_name */
		if (idx >= 0) {
			__u64 qualname = qualname_from_caller(frame, code);
			if (!qualname) {
				/* called from C: maybe ours, not cached, counted */
				count_probe(idx, PYSPAN_PC_UNRESOLVED);
				return PYSPAN_CODE_NO_MATCH;
			}
			idx = match_names(key, qualname, false);
		}
	}
	value = idx < 0 ? PYSPAN_CODE_NO_MATCH : ((__u32)idx | (is_gen ? PYSPAN_CODE_IS_GEN : 0));
	bpf_map_update_elem(&code_cache, key, &value, BPF_ANY);
	return value;
}

/* A Python span's context key: its frame, in its process (a coroutine
 * may end on another thread than it began on). */
static __always_inline struct span_context_key frame_context_key(__u64 frame)
{
	struct span_context_key k = { .id = frame, .owner = bpf_get_current_pid_tgid() >> 32 };

	return k;
}

/* A timed call or coroutine begins on this thread. */
static __always_inline void context_begin(__u64 frame, __u32 tid)
{
	struct span_context_key k = frame_context_key(frame);

	if (engine.resources)
		span_context_begin(&k, k.owner, tid);
}

/* The span of probe IDX, begun by thread TID, ends now. */
static __always_inline void emit(__u64 start_ns, __u64 end_ns, __u32 idx, __u32 tid, __u64 frame)
{
	struct span_context_key k = frame_context_key(frame);

	span_emit(start_ns, end_ns, probes[idx & (PYSPAN_MAX_PROBES - 1)].probe_id, k.owner, tid, &k);
	count_probe(idx, PYSPAN_PC_SPANS);
}

/* Coroutine state at entry: is this the first instruction ever run? */
static __always_inline bool first_entry(__u64 frame)
{
	__u64 instr;
	__u8 op = 0;
	int lasti = 0;

	switch (layout.model) {
	case PYSPAN_MODEL_FRAMEOBJ_STACKTOP:
	case PYSPAN_MODEL_FRAMEOBJ_STATE:
		bpf_probe_read_user(&lasti, sizeof(lasti), (void *)(frame + layout.frame_lasti));
		return lasti == -1;
	case PYSPAN_MODEL_IFRAME_PREV:
		/* prev_instr still points at the RETURN_GENERATOR that made it. */
		instr = read_ptr(frame + layout.frame_instr);
		bpf_probe_read_user(&op, 1, (void *)instr);
		return op == layout.return_generator;
	default:
		/* 3.13 stepped instr_ptr past RETURN_GENERATOR. */
		instr = read_ptr(frame + layout.frame_instr);
		bpf_probe_read_user(&op, 1, (void *)(instr - 2));
		return op == layout.return_generator;
	}
}

/* Coroutine state at return: did it yield (true) or finish? */
static __always_inline bool suspended(__u64 frame)
{
	__s8 state = 0;

	switch (layout.model) {
	case PYSPAN_MODEL_FRAMEOBJ_STACKTOP:
		return read_ptr(frame + layout.frame_suspend) != 0;
	case PYSPAN_MODEL_FRAMEOBJ_STATE:
		bpf_probe_read_user(&state, 1, (void *)(frame + layout.frame_suspend));
		return state < 0;
	default:
		bpf_probe_read_user(&state, 1,
				    (void *)(frame - layout.gen_iframe + layout.gen_state));
		return state < 0;
	}
}

/* A coroutine entry: records the start at the first one. Returns false
 * when this entry must not be tracked. */
static __always_inline bool coro_entry(__u64 frame, __u32 idx, __u32 tid, __u64 now)
{
	struct open_coro c = { .start_ns = now, .idx = idx, .tid = tid };
	struct open_coro *open;
	__u8 owner = 0;

	c.code = read_ptr(frame + layout.frame_code);
	if (layout.frame_owner) {
		/* A thread-owned frame of coroutine code only runs
		 * RETURN_GENERATOR to create the coroutine object. */
		bpf_probe_read_user(&owner, 1, (void *)(frame + layout.frame_owner));
		if (owner != layout.owned_by_generator)
			return false;
	}
	if (first_entry(frame)) {
		if (bpf_map_update_elem(&open_coros, &frame, &c, BPF_ANY)) {
			count(SPAN_CNT_CORO_TABLE_FULL);
			return false;
		}
		count_probe(idx, PYSPAN_PC_ENTRIES);
		context_begin(frame, tid);
		return true;
	}
	open = bpf_map_lookup_elem(&open_coros, &frame);
	if (!open || open->code != c.code) {
		/* Started before attach (or a stale entry of a coroutine
		 * that used the same memory): its start is unknown.
		 * Remember it once so its end gives no row. */
		c.start_ns = 0;
		if (bpf_map_update_elem(&open_coros, &frame, &c, BPF_ANY) == 0)
			count(SPAN_CNT_MID_CORO);
	}
	return true;
}

/* The hot path: which probe, if any, the frame's code is (cached). */
static __always_inline __u32 frame_verdict(__u64 frame)
{
	__u64 code = read_ptr(frame + layout.frame_code);
	struct code_key key;
	__u32 *cached, value;

	if (!code || code_key_read(code, &key))
		return PYSPAN_CODE_NO_MATCH;
	cached = bpf_map_lookup_elem(&code_cache, &key);
	value = cached ? *cached : classify(&key, frame);
	if (value != PYSPAN_CODE_NO_MATCH && (value & PYSPAN_CODE_IDX_MASK) >= PYSPAN_MAX_PROBES)
		return PYSPAN_CODE_NO_MATCH;
	return value;
}

/* Remembers a matched call until the return probe with the same stack
 * pointer sees it end. A plain call's span is the call itself; a
 * coroutine step is one piece of its coroutine's span. */
static __always_inline void push_pending(struct pt_regs *ctx, __u32 tid, __u64 frame, __u64 gen,
					 __u64 now, __u32 idx, bool is_gen)
{
	struct call_stack *st = call_stack_of(tid, bpf_get_current_pid_tgid() >> 32);
	struct pending_call *call;
	__u32 depth;

	if (!st)
		return;
	/* At the depth limit a coroutine keeps its start and may still
	 * finish in a later step. */
	call = call_stack_push(st, PT_REGS_SP(ctx), now, &depth);
	if (!call)
		return;
	call->key = frame;
	call->aux = gen;
	call->probe = idx;
	call->flags = is_gen ? CALL_CORO_STEP : CALL_OWNS_CONTEXT;
}

SEC("uprobe")
int py_entry(struct pt_regs *ctx)
{
	__u64 arg1 = PT_REGS_PARM1(ctx), arg2 = PT_REGS_PARM2(ctx);
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u32 value, idx;
	bool is_gen;
	__u64 now, frame;

	/* Both loads first: clang would otherwise pick the ctx offset at
	 * run time, which the verifier rejects. */
	asm volatile("" : "+r"(arg1), "+r"(arg2));
	frame = layout.frame_arg == 1 ? arg1 : arg2;
	value = frame_verdict(frame);
	if (value == PYSPAN_CODE_NO_MATCH)
		return 0;
	idx = value & PYSPAN_CODE_IDX_MASK;
	is_gen = value & PYSPAN_CODE_IS_GEN;
	now = bpf_ktime_get_ns();
	if (is_gen) {
		if (!coro_entry(frame, idx, tid, now))
			return 0;
	} else {
		count_probe(idx, PYSPAN_PC_ENTRIES);
		context_begin(frame, tid);
	}
	push_pending(ctx, tid, frame, 0, now, idx, is_gen);
	return 0;
}

/* A timed call or coroutine step returned. */
static __always_inline void finish(const struct pending_call *c, __u32 tid, __u64 now)
{
	struct open_coro *open;
	__u64 frame = c->key;

	if (!(c->flags & CALL_CORO_STEP)) {
		emit(c->start_ns, now, c->probe, tid, frame);
		return;
	}
	/* The step function releases a finished generator's frame. */
	if (c->aux ? read_ptr(c->aux + layout.gen_frame) != 0 : suspended(frame))
		return;
	open = bpf_map_lookup_elem(&open_coros, &frame);
	if (!open) {
		count(SPAN_CNT_CORO_NO_START);
		return;
	}
	if (open->start_ns)
		emit(open->start_ns, now, open->idx, open->tid, frame);
	bpf_map_delete_elem(&open_coros, &frame);
}

static __always_inline int pop_pending(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 tid = (__u32)bpf_get_current_pid_tgid(), depth;
	struct call_stack *st = bpf_map_lookup_elem(&call_stacks, &tid);
	struct pending_call *call;

	if (!st)
		return 0;
	call = call_stack_pop(st, entry_sp_of_return(ctx), tid, &depth);
	if (call)
		finish(call, tid, now);
	return 0;
}

SEC("uretprobe")
int py_return(struct pt_regs *ctx)
{
	return pop_pending(ctx);
}

/* Several hooked functions may run one step (gen_send calling a
 * gen_send_ex2 the compiler did not inline): the outermost one times it. */
static __always_inline bool step_already_pending(__u32 tid, __u64 gen)
{
	struct call_stack *st = bpf_map_lookup_elem(&call_stacks, &tid);
	__u32 d;

	if (!st)
		return false;
	d = st->depth;
	if (d == 0 || d > SPAN_MAX_DEPTH)
		return false;
	return st->calls[(d - 1) & (SPAN_MAX_DEPTH - 1)].aux == gen;
}

/* Coroutine hook (3.8-3.10): every step of a generator or coroutine goes
 * through the interpreter's gen_send_ex(2)(gen, ...); plain calls never do. */
SEC("uprobe")
int py_gen_entry(struct pt_regs *ctx)
{
	__u64 gen = PT_REGS_PARM1(ctx), frame, now;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u32 value, idx;

	frame = gen ? read_ptr(gen + layout.gen_frame) : 0;
	if (!frame)
		return 0; /* finished: the call raises, nothing runs */
	if (step_already_pending(tid, gen))
		return 0;
	value = frame_verdict(frame);
	if (value == PYSPAN_CODE_NO_MATCH || !(value & PYSPAN_CODE_IS_GEN))
		return 0;
	idx = value & PYSPAN_CODE_IDX_MASK;
	now = bpf_ktime_get_ns();
	if (coro_entry(frame, idx, tid, now))
		push_pending(ctx, tid, frame, gen, now, idx, true);
	return 0;
}

SEC("uretprobe")
int py_gen_return(struct pt_regs *ctx)
{
	return pop_pending(ctx);
}

/* 3.8-3.10: the def statement passes code and qualname together. */
SEC("uprobe")
int py_make_function(struct pt_regs *ctx)
{
	__u64 code = PT_REGS_PARM1(ctx), qualname = PT_REGS_PARM3(ctx);
	struct code_key key;
	__u32 flags = 0, value;
	int idx;

	if (!code || code_key_read(code, &key))
		return 0;
	if (!qualname)
		qualname = key.names[1]; /* co_name */
	idx = match_names(&key, qualname, false);
	bpf_probe_read_user(&flags, sizeof(flags), (void *)(code + layout.code_flags));
	/* A miss is cached too: a same-named method in the probe's file
	 * (Busy.crunch next to crunch) is then never taken for it. */
	value = idx < 0 ? PYSPAN_CODE_NO_MATCH
			: (__u32)idx | ((flags & CODE_GEN_FLAGS) ? PYSPAN_CODE_IS_GEN : 0);
	bpf_map_update_elem(&code_cache, &key, &value, BPF_ANY);
	return 0;
}

/* A thread of the target that exits with calls pending never returns
 * from them. A raw tracepoint: a BTF one needs the kernel's own BTF. */
SEC("raw_tp/sched_process_exit")
int BPF_PROG(py_thread_exit, struct task_struct *task)
{
	/* the target as the loader named it, in its PID namespace */
	if ((loader_pid_tgid() >> 32) == targ_tgid)
		call_stack_thread_exit((__u32)bpf_get_current_pid_tgid());
	return 0;
}
