// SPDX-License-Identifier: GPL-2.0
/* Python function spans, with uprobes on the interpreter where a timed
 * function can be, never on every Python call unless plain functions are
 * asked for:
 * - coroutine steps: the functions that run one step of a coroutine or
 *   generator from C (PyGen_am_send, behind every await on 3.8-3.11 and
 *   every asyncio task step; the coroutine's send, throw and close);
 * - on 3.12+, where an await runs the awaited coroutine inside the eval
 *   loop: the coroutine's creation (_Py_MakeCoro);
 * - every version: its deallocation (gen_dealloc), which for an awaited
 *   coroutine follows its final return at once: the end of one that
 *   finished inside the eval loop (3.12+) or inside another coroutine's
 *   step (a cancellation thrown through a chain of awaits);
 * - plain functions, only when asked for (their cost is every call):
 *   _PyFunction_Vectorcall, which every call of a Python function from
 *   C (and on 3.8-3.10 from Python) goes through.
 * A timed coroutine's span runs from its first step (at the latest its
 * creation) to the step that finishes it, or its deallocation: after its
 * frame was left and its locals freed, as a decorator sees it. A plain
 * call's span is its vectorcall, entry to return (the frame freed too).
 * Code objects are matched once (a cache keyed by the code object); the
 * per-thread call stack is the span engine's (call_stack.bpf.h). Loaded
 * once per interpreter; with children followed the uprobes are on the
 * interpreter's file for every process and the traced set
 * (traced_processes.bpf.h, the native tracer's maps) filters. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "call_stack.bpf.h"
#include "traced_processes.bpf.h"
#include "pyspan_config.h"

#define PY_CTX void *
#define PY_INLINE static __always_inline
#define PY_READ(ctx, dst, size, addr) \
	bpf_probe_read_user((dst), (size), (const void *)(unsigned long)(addr))
#include "python_walk.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 n_probes = 0;
const volatile struct pyspan_layout layout = {};
const volatile struct pyspan_probe_cfg probes[PYSPAN_MAX_PROBES] = {};
/* The step hook is PyIter_Send, which any iterator goes through. */
const volatile bool any_iterator = false;
/* Up to 3.11: keep each thread's open timed coroutines (thread_opens). */
const volatile bool track_thread_opens = false;

#define CODE_GEN_FLAGS 0x2a0 /* CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR */

struct scratch {
	char want[PYSPAN_STR_MAX];
	char got[PYSPAN_STR_MAX];
};

/* A code object's address alone is not an identity: the interpreter
 * frees code objects (a module's body after import, a reloaded module)
 * and reuses the memory for others, which would then inherit a stale
 * verdict. The file and name pointers next to it are read in the same
 * user read and make a reuse by a different function visible; the
 * process, a reuse in another one. */
struct code_key {
	__u64 code;
	__u64 names[3]; /* co_filename, co_name, and the field after them */
	__u32 tgid;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, PYSPAN_CODE_CACHE);
	__type(key, struct code_key);
	__type(value, __u32);
} code_cache SEC(".maps");

/* A coroutine between its first step (or creation) and its end, keyed by
 * the coroutine object in its process (3.8-3.10 release its frame when it
 * finishes, the object stays until freed). LRU: one whose end is never
 * seen (a path no probe covers) must not fill the table for good. */
struct coro_key {
	__u64 gen;
	__u32 tgid;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, PYSPAN_MAX_OPEN_CORO);
	__type(key, struct coro_key);
	__type(value, struct open_coro);
} open_coros SEC(".maps");

/* The timed coroutines each thread opened, by thread id: what a throw
 * through awaits may have ended (py_throw_through), or a step whose
 * return was not seen, is looked for here (thread_end_finished), in a
 * few slots, rather than in all of open_coros. A slot whose coroutine
 * is no longer open there is stale and taken again. */
#define THREAD_OPEN_MAX 16

struct thread_open {
	__u64 gen[THREAD_OPEN_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct thread_open);
} thread_opens SEC(".maps");

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

/* A user read that failed: the page is not mapped in this process yet (a
 * fork child maps its parent's unwritten file pages only when it touches
 * them). Nothing may be concluded, or cached, from it. */
#define UNREADABLE (-2)

/* Copies a compact-ASCII str object into buf, NUL-terminated. Returns
 * its length, -1 when it is not compact ASCII or too long, UNREADABLE. */
static __always_inline int read_str(__u64 obj, char *buf)
{
	__u64 len = 0;
	__u32 state = 0;

	if (!obj)
		return -1;
	if (bpf_probe_read_user(&len, sizeof(len), (void *)(obj + layout.unicode_length)) ||
	    bpf_probe_read_user(&state, sizeof(state), (void *)(obj + layout.unicode_state)))
		return UNREADABLE;
	if ((state & 0x60) != 0x60 || len >= PYSPAN_STR_MAX)
		return -1;
	if (bpf_probe_read_user(buf, len & (PYSPAN_STR_MAX - 1), (void *)(obj + layout.unicode_data)))
		return UNREADABLE;
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
 * whole name equal the suffix without its leading '/')? 1, 0, or
 * UNREADABLE. */
static __always_inline int tail_is(__u64 fname, __u64 flen, __u32 slen,
				   const volatile char *suffix, char *buf)
{
	__u64 data = fname + layout.unicode_data;

	if (slen == 0 || slen >= PYSPAN_STR_MAX)
		return 0;
	if (flen >= slen) {
		if (bpf_probe_read_user(buf, slen & (PYSPAN_STR_MAX - 1), (void *)(data + flen - slen)))
			return UNREADABLE;
		buf[slen & (PYSPAN_STR_MAX - 1)] = '\0';
		return str_equal(buf, suffix, PYSPAN_STR_MAX);
	}
	if (flen + 1 == slen) {
		if (bpf_probe_read_user(buf, flen & (PYSPAN_STR_MAX - 1), (void *)data))
			return UNREADABLE;
		buf[flen & (PYSPAN_STR_MAX - 1)] = '\0';
		return str_equal(buf, suffix + 1, PYSPAN_STR_MAX - 1);
	}
	return 0;
}

static __always_inline int code_key_read(__u64 code, struct code_key *key)
{
	key->code = code;
	key->tgid = bpf_get_current_pid_tgid() >> 32;
	key->pad = 0;
	return bpf_probe_read_user(key->names, sizeof(key->names),
				   (void *)(code + layout.code_filename));
}

/* Index of the probe whose qualified name equals the str object NAME and
 * whose module is the file of the code KEY names, -1, or UNREADABLE. */
static __always_inline int match_names(const struct code_key *key, __u64 name)
{
	__u32 zero = 0;
	struct scratch *s = bpf_map_lookup_elem(&scratch_buf, &zero);
	__u64 fname = key->names[0], flen = 0;
	__u32 state = 0;
	int len, file, pkg;

	if (!s)
		return -1;
	if (!fname || !name)
		return UNREADABLE; /* every code object has both */
	len = read_str(name, s->got);
	if (len < 0)
		return len;
	if (bpf_probe_read_user(&flen, sizeof(flen), (void *)(fname + layout.unicode_length)) ||
	    bpf_probe_read_user(&state, sizeof(state), (void *)(fname + layout.unicode_state)))
		return UNREADABLE;
	if ((state & 0x60) != 0x60)
		return -1;
#pragma unroll
	for (__u32 i = 0; i < PYSPAN_MAX_PROBES; i++) {
		if (i >= n_probes)
			break;
		if (!str_equal(s->got, probes[i].qualname, PYSPAN_STR_MAX))
			continue;
		file = tail_is(fname, flen, probes[i].file_len, probes[i].file_suffix, s->want);
		pkg = file == 1 ? 0 : tail_is(fname, flen, probes[i].pkg_len, probes[i].pkg_suffix,
					      s->want);
		if (file == 1 || pkg == 1) {
			/* the code's own name too: a functools.wraps wrapper
			 * carries the wrapped function's qualified name */
			/* names[1] is co_name: at code_filename + 8 in
			 * every layout (user/pyspan.c) */
			len = read_str(key->names[1], s->want);
			if (len == UNREADABLE)
				return UNREADABLE;
			return len >= 0 && str_equal(s->want, probes[i].name, PYSPAN_STR_MAX) ? i : -1;
		}
		if (file == UNREADABLE || pkg == UNREADABLE)
			return UNREADABLE;
	}
	return -1;
}

/* Decides, once per code object, whether it is one of the probes: NAME
 * is its qualified name as the function or generator object holds it.
 * What could not be read is decided again next time. */
static __always_inline __u32 classify(const struct code_key *key, __u64 name)
{
	__u32 flags = 0, value;
	int idx;

	if (bpf_probe_read_user(&flags, sizeof(flags), (void *)(key->code + layout.code_flags)))
		return PYSPAN_CODE_NO_MATCH;
	idx = match_names(key, name);
	if (idx == UNREADABLE)
		return PYSPAN_CODE_NO_MATCH;
	value = idx < 0 ? PYSPAN_CODE_NO_MATCH
			: ((__u32)idx | ((flags & CODE_GEN_FLAGS) ? PYSPAN_CODE_IS_GEN : 0));
	bpf_map_update_elem(&code_cache, key, &value, BPF_ANY);
	return value;
}

/* Which probe, if any, CODE is (cached); NAME_AT holds the address of
 * its qualified name, read only on a cache miss. */
static __always_inline __u32 code_verdict(__u64 code, __u64 name_at)
{
	struct code_key key;
	__u32 *cached, value;

	if (!code || code_key_read(code, &key))
		return PYSPAN_CODE_NO_MATCH;
	cached = bpf_map_lookup_elem(&code_cache, &key);
	value = cached ? *cached : classify(&key, read_ptr(name_at));
	if (value != PYSPAN_CODE_NO_MATCH && (value & PYSPAN_CODE_IDX_MASK) >= PYSPAN_MAX_PROBES)
		return PYSPAN_CODE_NO_MATCH;
	return value;
}

/* ---- a generator or coroutine object -------------------------------- */

/* Its frame: the frame object (3.8-3.10, NULL once finished) or the
 * frame embedded in it (3.11+). */
static __always_inline __u64 gen_frame(__u64 gen)
{
	if (layout.gen_iframe)
		return gen + layout.gen_iframe;
	return read_ptr(gen + layout.gen_frame);
}

/* Is OBJ a coroutine or a generator? PyIter_Send is given any iterator
 * (a future's too): its type's tp_name says. PyObject.ob_type and
 * PyTypeObject.tp_name are at the same offsets in every version. */
#define OB_TYPE 8
#define TP_NAME 24
static __always_inline bool name_is(const char *got, const char *want, int n)
{
	for (int i = 0; i < n; i++)
		if (got[i] != want[i])
			return false;
	return true;
}

/* The answer for each iterator type seen, by the type object's address
 * and its tp_name pointer: the name string lies in the interpreter's
 * read-only data, a page a fork child has not mapped until it touches
 * it, while the type object (written at start-up) is copied at fork.
 * So a child answers from its parent's reads; a process with another
 * layout has other pointers. */
struct iter_type_key {
	__u64 type;
	__u64 tp_name;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, struct iter_type_key);
	__type(value, __u8);
} iter_types SEC(".maps");

static __always_inline bool is_coroutine_or_generator(__u64 obj)
{
	struct iter_type_key k = {};
	char name[10] = {};
	__u8 *known, yes;

	k.type = read_ptr(obj + OB_TYPE);
	k.tp_name = read_ptr(k.type + TP_NAME);
	if (!k.tp_name)
		return false;
	known = bpf_map_lookup_elem(&iter_types, &k);
	if (known)
		return *known;
	if (bpf_probe_read_user(name, sizeof(name), (void *)k.tp_name))
		return false; /* unmapped yet: asked again next time */
	/* both with their NUL */
	yes = name_is(name, "coroutine", 10) || name_is(name, "generator", 10);
	bpf_map_update_elem(&iter_types, &k, &yes, BPF_ANY);
	return yes;
}

/* 3.11+: gi_frame_state. A failed read gives 0, executing: neither just
 * created nor finished, so nothing is concluded from it. */
static __always_inline __s8 gen_state(__u64 gen)
{
	__s8 state = 0;

	bpf_probe_read_user(&state, 1, (void *)(gen + layout.gen_state));
	return state;
}

/* Has it never run yet? 1 yes, 0 it has, -1 unreadable (nothing to
 * conclude: a fork child's page read before it is touched). */
static __always_inline int gen_unstarted(__u64 gen, __u64 frame)
{
	__s8 state = 0;
	int lasti = 0;

	if (layout.gen_iframe) {
		if (bpf_probe_read_user(&state, 1, (void *)(gen + layout.gen_state)))
			return -1;
		return state == layout.state_created;
	}
	if (bpf_probe_read_user(&lasti, sizeof(lasti), (void *)(frame + layout.frame_lasti)))
		return -1;
	return lasti == -1;
}

/* Has it finished (returned or raised: its frame left, locals freed)?
 * What cannot be read has not: ending a span is not undone, while an
 * unfinished one is looked at again at the next step or sweep. */
static __always_inline bool gen_finished(__u64 gen)
{
	__u64 frame = 0;

	if (layout.gen_iframe)
		return gen_state(gen) >= PYSPAN_FRAME_COMPLETED;
	if (bpf_probe_read_user(&frame, sizeof(frame), (void *)(gen + layout.gen_frame)))
		return false;
	return frame == 0;
}

static __always_inline __u32 gen_verdict(__u64 gen, __u64 code)
{
	return code_verdict(code, gen + layout.gen_qualname);
}

/* ---- emitting -------------------------------------------------------- */

/* A coroutine's span context key: the object, in its process (it may
 * end on another thread than it began on). */
static __always_inline struct span_context_key coro_context_key(__u64 gen)
{
	struct span_context_key k = { .id = gen, .owner = bpf_get_current_pid_tgid() >> 32 };

	return k;
}

static __always_inline struct coro_key coro_key_of(__u64 gen)
{
	struct coro_key k = { .gen = gen, .tgid = bpf_get_current_pid_tgid() >> 32 };

	return k;
}

/* Does GEN have an open entry of thread TID in this process? */
static __always_inline bool open_on_thread(__u64 gen, __u32 tid)
{
	struct coro_key k = coro_key_of(gen);
	struct open_coro *open = bpf_map_lookup_elem(&open_coros, &k);

	return open && open->tid == tid;
}

/* GEN, just opened on thread TID, goes in a free or stale slot of it
 * (none left: a throw through awaits will not end it, its deallocation
 * is not hooked there; the row is then lost, as with any missed end). */
static __always_inline void thread_open_add(__u32 tid, __u64 gen)
{
	struct thread_open fresh = {}, *t = bpf_map_lookup_elem(&thread_opens, &tid);

	if (!t) {
		fresh.gen[0] = gen;
		bpf_map_update_elem(&thread_opens, &tid, &fresh, BPF_ANY);
		return;
	}
	for (int i = 0; i < THREAD_OPEN_MAX; i++) {
		if (t->gen[i] == gen)
			return;
		if (!t->gen[i] || !open_on_thread(t->gen[i], tid)) {
			t->gen[i] = gen;
			return;
		}
	}
	count(SPAN_CNT_CORO_TABLE_FULL);
}

static __always_inline void thread_open_remove(__u32 tid, __u64 gen)
{
	struct thread_open *t = bpf_map_lookup_elem(&thread_opens, &tid);

	if (!t)
		return;
	for (int i = 0; i < THREAD_OPEN_MAX; i++)
		if (t->gen[i] == gen)
			t->gen[i] = 0;
}

/* A timed coroutine freed or replaced before its end: the start
 * snapshot of one begun goes (one that started before attach has none). */
static __always_inline void span_context_drop_coro(__u64 gen, const struct open_coro *open)
{
	struct span_context_key ck = coro_context_key(gen);

	if (engine.resources && open->start_ns)
		span_context_drop(&ck, ck.owner);
}

/* A timed coroutine is known from NOW (its creation, or its first step);
 * an entry left at its address by an earlier one is replaced. */
static __always_inline void coro_open(__u64 gen, __u32 idx, __u32 tid, __u64 now, __u64 code)
{
	struct open_coro c = { .start_ns = now, .code = code, .idx = idx, .tid = tid };
	struct coro_key k = coro_key_of(gen);
	struct span_context_key ck = coro_context_key(gen);
	struct open_coro *old = bpf_map_lookup_elem(&open_coros, &k);

	if (old)
		span_context_drop_coro(gen, old);
	if (bpf_map_update_elem(&open_coros, &k, &c, BPF_ANY)) {
		count(SPAN_CNT_CORO_TABLE_FULL);
		return;
	}
	count_probe(idx, PYSPAN_PC_ENTRIES);
	if (track_thread_opens)
		thread_open_add(tid, gen);
	if (engine.resources)
		span_context_begin(&ck, ck.owner, tid);
}

/* OPEN, the entry of GEN under K, ends now: its row (if it was seen
 * begin) goes out and the entry goes; its thread slot is the caller's. */
static __always_inline void coro_end(__u64 gen, const struct coro_key *k,
				     const struct open_coro *open, __u64 now)
{
	struct span_context_key ck = coro_context_key(gen);

	if (open->start_ns) {
		span_emit(open->start_ns, now, probes[open->idx & (PYSPAN_MAX_PROBES - 1)].probe_id,
			  k->tgid, open->tid, &ck);
		count_probe(open->idx, PYSPAN_PC_SPANS);
	}
	bpf_map_delete_elem(&open_coros, k);
}

/* A timed coroutine's span ends now, if it is one we saw begin. */
static __always_inline void coro_close(__u64 gen, __u64 now)
{
	struct coro_key k = coro_key_of(gen);
	struct open_coro *open = bpf_map_lookup_elem(&open_coros, &k);

	if (!open) {
		count(SPAN_CNT_CORO_NO_START);
		return;
	}
	if (track_thread_opens)
		thread_open_remove(open->tid, gen);
	coro_end(gen, &k, open, now);
}

/* Is slot SLOT of the pending calls ST a step of GEN, still running? */
static __always_inline bool step_pending_at(const struct call_stack *st, __u32 slot, __u64 gen)
{
	const struct pending_call *call;

	if (!st || slot >= st->depth || slot >= SPAN_MAX_DEPTH)
		return false;
	call = &st->calls[slot & (SPAN_MAX_DEPTH - 1)];
	return (call->flags & CALL_CORO_STEP) && call->aux == gen;
}

/* The coroutine whose step thread TID runs innermost of its pending
 * calls, or 0. */
static __always_inline __u64 pending_step_gen(__u32 tid)
{
	struct call_stack *st = bpf_map_lookup_elem(&call_stacks, &tid);
	__u32 d;

	if (!st)
		return 0;
	d = st->depth;
	if (d == 0 || d > SPAN_MAX_DEPTH)
		return 0;
	if (!(st->calls[(d - 1) & (SPAN_MAX_DEPTH - 1)].flags & CALL_CORO_STEP))
		return 0;
	return st->calls[(d - 1) & (SPAN_MAX_DEPTH - 1)].aux;
}

/* Every timed coroutine thread TID has open that has finished ends at
 * NOW: ones whose end no step return showed (a throw through awaits, or
 * a step return the kernel did not report). Up to 3.11 only: later
 * versions end them at deallocation. One pass, each slot ended in place:
 * a coroutine has one slot, so ending it frees no other. (A nested
 * search of the slots per ended one is more than a 6.1 verifier walks.)
 * A coroutine whose step is still running beneath this one is left to
 * that step's own return: it may have finished and be clearing its
 * frame, whose locals' finalisers run hooked steps (a suspended
 * coroutine freed there is closed, and may free another). Should that
 * return never be seen, it is ended by a later sweep once the stack has
 * unwound past its slot. */
static __always_inline void thread_end_finished(__u32 tid, __u64 now)
{
	struct call_stack *st;
	struct thread_open *t;

	if (!track_thread_opens)
		return;
	t = bpf_map_lookup_elem(&thread_opens, &tid);
	if (!t)
		return;
	st = bpf_map_lookup_elem(&call_stacks, &tid);
	for (int i = 0; i < THREAD_OPEN_MAX; i++) {
		__u64 gen = t->gen[i];
		struct coro_key k = coro_key_of(gen);
		struct open_coro *open;

		if (!gen)
			continue;
		open = bpf_map_lookup_elem(&open_coros, &k);
		if (!open || open->tid != tid || step_pending_at(st, open->step_slot, gen) ||
		    !gen_finished(gen))
			continue;
		t->gen[i] = 0;
		coro_end(gen, &k, open, now);
	}
}

/* ---- coroutine steps from C ------------------------------------------- */

/* The step of GEN about to run: its first one opens its span (or moves
 * a span opened at creation to it: a task's coroutine runs later than it
 * was made); any other step of a coroutine never seen begin is
 * remembered so its end gives no row. Returns whether to wait for the
 * step's return. */
static __always_inline bool step_begins(__u64 gen, __u64 frame, __u64 code, __u32 idx, __u32 tid,
					__u64 now)
{
	struct coro_key k = coro_key_of(gen);
	struct open_coro *open, c = { .code = code, .idx = idx, .tid = tid };
	int unstarted = gen_unstarted(gen, frame);

	open = bpf_map_lookup_elem(&open_coros, &k);
	if (unstarted > 0) {
		/* made earlier (3.12+): its span starts now, on this thread
		 * (coro_open replaces the entry made at creation) */
		coro_open(gen, idx, tid, now, code);
		return true;
	}
	if (open && open->code == code)
		return true;
	/* A stale entry, of a coroutine that used the same memory, ends no
	 * row of this one. */
	if (open)
		span_context_drop_coro(gen, open);
	if (unstarted < 0) {
		/* first step or not, unknown: nothing is filed */
		if (open)
			bpf_map_delete_elem(&open_coros, &k);
		return false;
	}
	/* Started before pmetrics attached: its start is unknown. */
	if (bpf_map_update_elem(&open_coros, &k, &c, BPF_ANY) == 0)
		count(SPAN_CNT_MID_CORO);
	return true;
}

/* Remembers in GEN's open entry which pending-call slot its step took,
 * for the sweep to leave it alone while the step runs. */
static __always_inline void note_step_slot(__u64 gen, __u32 slot)
{
	struct coro_key k = coro_key_of(gen);
	struct open_coro *open = bpf_map_lookup_elem(&open_coros, &k);

	if (open)
		open->step_slot = slot;
}

/* Several hooked functions may run one step (gen_send calling the step
 * function the compiler did not inline): the outermost one times it. */
static __always_inline bool step_already_pending(__u32 tid, __u64 gen)
{
	return pending_step_gen(tid) == gen;
}

/* Remembers a matched call until the return probe with the same stack
 * pointer sees it end; NULL when it cannot (counted). *DEPTH gets its
 * slot. */
static __always_inline struct pending_call *push_pending(struct pt_regs *ctx, __u32 tid, __u64 aux,
							  __u64 now, __u32 idx, __u32 flags,
							  __u32 *depth)
{
	struct call_stack *st = call_stack_of(tid, bpf_get_current_pid_tgid() >> 32);
	struct pending_call *call;

	if (!st)
		return NULL;
	/* At the depth limit a coroutine keeps its start and may still
	 * finish in a later step. */
	call = call_stack_push(st, PT_REGS_SP(ctx), now, depth);
	if (!call)
		return NULL;
	call->aux = aux;
	call->probe = idx;
	call->flags = flags;
	return call;
}

/* The returning call of this thread's stack, if it was one we timed. */
static __always_inline struct pending_call *pop_pending(struct pt_regs *ctx, __u32 tid)
{
	struct call_stack *st = bpf_map_lookup_elem(&call_stacks, &tid);
	__u32 depth;

	if (!st)
		return NULL;
	return call_stack_pop(st, entry_sp_of_return(ctx), tid, &depth);
}

static __always_inline bool traced_current(void)
{
	return traced(bpf_get_current_pid_tgid() >> 32);
}

/* ---- uprobe sessions ----------------------------------------------------- */

/* With uprobe sessions (Linux 6.13) one program sees a call's entry and,
 * only when that returned 0, its return: an untimed call traps once
 * instead of twice. Which side runs: at a return the kernel has already
 * set the instruction pointer to the return address, at the entry it is
 * the probed address, the one bpf_get_func_ip() gives on both sides. */
static __always_inline bool session_at_return(struct pt_regs *ctx)
{
	return PT_REGS_IP(ctx) != bpf_get_func_ip(ctx);
}

/* An entry's answer to the session: 0 asks for the return, 1 skips it. */
static __always_inline int session_wants_return(bool wanted)
{
	return wanted ? 0 : 1;
}

/* The three programs of a hook with a return side: NAME at the entry
 * and NAME_return at the return, or NAME_session for both. ENTRY says
 * whether the return matters; EXIT handles it. */
#define HOOK_PROGRAMS(name, entry, exit)                                  \
	SEC("uprobe")                                                     \
	int name(struct pt_regs *ctx)                                     \
	{                                                                 \
		entry(ctx);                                               \
		return 0;                                                 \
	}                                                                 \
	SEC("uretprobe")                                                  \
	int name##_return(struct pt_regs *ctx)                            \
	{                                                                 \
		exit(ctx);                                                \
		return 0;                                                 \
	}                                                                 \
	SEC("uprobe")                                                     \
	int name##_session(struct pt_regs *ctx)                           \
	{                                                                 \
		if (session_at_return(ctx)) {                             \
			exit(ctx);                                        \
			return 0;                                         \
		}                                                         \
		return session_wants_return(entry(ctx));                  \
	}

/* A step of the object in the first argument is about to run: whether
 * its return matters (a timed coroutine's step, remembered). */
static __always_inline bool coro_step_entry(struct pt_regs *ctx)
{
	__u64 gen = PT_REGS_PARM1(ctx), frame, code, now;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u32 value, idx, depth;

	if (!gen || !traced_current())
		return false;
	if (any_iterator && !is_coroutine_or_generator(gen))
		return false;
	frame = gen_frame(gen);
	if (!frame || gen_finished(gen))
		return false; /* finished: the call raises, nothing runs */
	if (step_already_pending(tid, gen))
		return false;
	code = read_ptr(frame + layout.frame_code);
	value = gen_verdict(gen, code);
	if (value == PYSPAN_CODE_NO_MATCH || !(value & PYSPAN_CODE_IS_GEN))
		return false;
	idx = value & PYSPAN_CODE_IDX_MASK;
	now = bpf_ktime_get_ns();
	if (!step_begins(gen, frame, code, idx, tid, now) ||
	    !push_pending(ctx, tid, gen, now, idx, CALL_CORO_STEP, &depth))
		return false;
	note_step_slot(gen, depth);
	return true;
}

/* A timed step returns: its coroutine ends if it finished. So does any
 * other of the thread found finished: should a step's return have been
 * missed, its coroutine's row ends here, not at the next throw. */
static __always_inline void coro_step_exit(struct pt_regs *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 now = bpf_ktime_get_ns();
	struct pending_call *call = pop_pending(ctx, tid);

	if (!call || !(call->flags & CALL_CORO_STEP))
		return;
	if (gen_finished(call->aux))
		coro_close(call->aux, now);
	thread_end_finished(tid, now);
}

/* Every function that runs a coroutine or generator step from C, with
 * the object as its first argument. */
HOOK_PROGRAMS(py_coro_step, coro_step_entry, coro_step_exit)

/* ---- 3.12+: creation and deallocation ----------------------------------- */

/* _Py_MakeCoro(func): a coroutine or generator object is made for the
 * function about to be called; its first step follows in the eval loop
 * (an await), or later from C (a task). Whether it is a timed one. */
static __always_inline bool make_coro_entry(struct pt_regs *ctx)
{
	__u64 func = PT_REGS_PARM1(ctx), code;
	__u32 value, depth;

	if (!func || !traced_current())
		return false;
	code = read_ptr(func + layout.func_code);
	value = code_verdict(code, func + layout.func_qualname);
	if (value == PYSPAN_CODE_NO_MATCH || !(value & PYSPAN_CODE_IS_GEN))
		return false;
	return push_pending(ctx, (__u32)bpf_get_current_pid_tgid(), code, bpf_ktime_get_ns(),
			    value & PYSPAN_CODE_IDX_MASK, CALL_CREATION, &depth);
}

/* Its return value is the new object: its span is known from here. */
static __always_inline void make_coro_exit(struct pt_regs *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct pending_call *call = pop_pending(ctx, tid);
	__u64 gen = PT_REGS_RC(ctx);

	/* the code is kept to tell this coroutine from a later one made at
	 * the same address */
	if (call && (call->flags & CALL_CREATION) && gen)
		coro_open(gen, call->probe, tid, call->start_ns, call->aux);
}

HOOK_PROGRAMS(py_make_coro, make_coro_entry, make_coro_exit)

/* gen_dealloc(gen): a timed coroutine that finished inside the eval loop
 * ends here (its awaiter dropped it right after its return). One freed
 * while suspended is closed next (its finaliser calls gen_close, a
 * hooked step): its span ends there. One never stepped gives no row. */
SEC("uprobe")
int py_gen_dealloc(struct pt_regs *ctx)
{
	__u64 gen = PT_REGS_PARM1(ctx), now = bpf_ktime_get_ns();
	struct open_coro *open;
	struct coro_key k;

	if (!gen || !traced_current())
		return 0;
	k = coro_key_of(gen);
	open = bpf_map_lookup_elem(&open_coros, &k);
	if (!open)
		return 0;
	if (gen_finished(gen)) {
		coro_close(gen, now);
		return 0;
	}
	if (gen_state(gen) == layout.state_created) {
		count(SPAN_CNT_CORO_UNSTARTED);
		span_context_drop_coro(gen, open);
		bpf_map_delete_elem(&open_coros, &k);
	}
	return 0;
}

/* ---- 3.8-3.11: an exception thrown through awaits -------------------------- */

/* _PyGen_FetchStopIterationValue(): an exception thrown into a coroutine
 * (coroutine.throw(): a task cancelled) is passed down to the one it
 * awaits, and so on; when one of those finished (raised, or returned
 * after catching it) the one awaiting it drops it and calls this, before
 * going on. That coroutine had no step return of its own: every finished
 * open coroutine of the thread ends now. Also called when some other
 * iterator finishes; there is then nothing to end. */
SEC("uprobe")
int py_throw_through(struct pt_regs *ctx)
{
	if (traced_current())
		thread_end_finished((__u32)bpf_get_current_pid_tgid(), bpf_ktime_get_ns());
	return 0;
}

/* ---- plain functions (only when asked for) -------------------------------- */

/* _PyFunction_Vectorcall(func, ...): a Python function is called. A
 * coroutine or generator function only makes its object here: those are
 * timed by their steps. Whether it is a timed one. */
static __always_inline bool call_entry(struct pt_regs *ctx)
{
	__u64 func = PT_REGS_PARM1(ctx);
	__u32 tid = (__u32)bpf_get_current_pid_tgid(), value, idx;
	struct pending_call *call;
	__u32 depth;

	if (!func || !traced_current())
		return false;
	value = code_verdict(read_ptr(func + layout.func_code), func + layout.func_qualname);
	if (value == PYSPAN_CODE_NO_MATCH || (value & PYSPAN_CODE_IS_GEN))
		return false;
	idx = value & PYSPAN_CODE_IDX_MASK;
	count_probe(idx, PYSPAN_PC_ENTRIES);
	call = push_pending(ctx, tid, 0, bpf_ktime_get_ns(), idx, CALL_OWNS_CONTEXT, &depth);
	if (call && engine.resources) {
		__u32 tgid = bpf_get_current_pid_tgid() >> 32;
		struct span_context_key k = call_context_key(call, tid, tgid, depth);

		span_context_begin(&k, tgid, tid);
	}
	return call;
}

static __always_inline void call_exit(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 tid = (__u32)bpf_get_current_pid_tgid(), tgid = bpf_get_current_pid_tgid() >> 32;
	struct call_stack *st = bpf_map_lookup_elem(&call_stacks, &tid);
	struct span_context_key k;
	struct pending_call *call;
	__u32 depth = 0;

	if (!st)
		return;
	call = call_stack_pop(st, entry_sp_of_return(ctx), tid, &depth);
	if (!call || !(call->flags & CALL_OWNS_CONTEXT))
		return;
	k = call_context_key(call, tid, tgid, depth);
	span_emit(call->start_ns, now, probes[call->probe & (PYSPAN_MAX_PROBES - 1)].probe_id,
		  tgid, tid, &k);
	count_probe(call->probe, PYSPAN_PC_SPANS);
}

HOOK_PROGRAMS(py_call, call_entry, call_exit)

/* ---- hardware watchpoints on timed code objects ---------------------- */

/* With --python-hook watch no uprobe is set: user space puts hardware
 * watchpoints (perf events, one per CPU, for every task: py_watch keeps
 * the traced processes' hits) on each timed coroutine function's code
 * object, found in the running process, and this program runs when one
 * fires:
 * - at its first instruction (3.11+ the first RESUME, 3.10 GEN_START),
 *   fetched when a coroutine of it takes its first step: the thread's
 *   current frame is that coroutine's (3.11+ embedded in the coroutine
 *   object, 3.10 naming it), whose span opens;
 * - at a reference count every frame of the code takes and lets go of
 *   as it is cleared, after its locals (3.11+ the function object's, or
 *   where that is not one object, a closure, the code object's, which
 *   3.12+ frames let go of only when the coroutine object is freed; 3.10
 *   the code object's, dropped as a finished coroutine's frame is
 *   freed): the open coroutines of the process that have finished end.
 * Nothing else traps: untimed code never touches these addresses. */

/* The interpreter of each watched program, by image (its forked
 * children share it). A map, not read-only data: the walk takes its
 * fields through pointers, through which the compiler would fold a
 * constant global to zeros. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PYSPAN_WATCH_IMAGES);
	__type(key, __u32);
	__type(value, struct py_proc);
} watch_proc SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PYSPAN_MAX_WATCHES);
	__type(key, __u64); /* the watched address */
	__type(value, struct pyspan_watch);
} watches SEC(".maps");

/* Which program each traced process runs, as far as the hook knows. A
 * process that exec'd is dropped: another program lies at the watched
 * addresses there. LRU: an exit never seen must not fill it. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* tgid */
	__type(value, struct pyspan_watch_proc);
} watch_images SEC(".maps");

/* A task forked by a process in watch_images, by its task_struct
 * address (its tgid cannot be read at fork without the kernel's BTF):
 * it takes its parent's entry at its first hit. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct pyspan_watch_proc);
} watch_children SEC(".maps");

/* The attached process as pmetrics numbers it, when it runs in a PID
 * namespace of its own: its entry moves to watch_images at its first
 * hit, under the tgid the kernel knows it by. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u32); /* tgid in the loader's namespace */
	__type(value, struct pyspan_watch_proc);
} watch_ns_targets SEC(".maps");

/* What the current process (TGID) is to the hook, NULL when unknown. */
static __always_inline struct pyspan_watch_proc *watch_proc_of(__u32 tgid)
{
	struct pyspan_watch_proc *w = bpf_map_lookup_elem(&watch_images, &tgid);
	__u32 ns_tgid;
	__u64 task;

	if (w)
		return w;
	task = bpf_get_current_task();
	w = bpf_map_lookup_elem(&watch_children, &task);
	if (w) {
		bpf_map_update_elem(&watch_images, &tgid, w, BPF_NOEXIST);
		bpf_map_delete_elem(&watch_children, &task);
		return bpf_map_lookup_elem(&watch_images, &tgid);
	}
	if (!engine.pidns_ino)
		return NULL;
	ns_tgid = (__u32)(loader_pid_tgid() >> 32);
	w = ns_tgid ? bpf_map_lookup_elem(&watch_ns_targets, &ns_tgid) : NULL;
	if (!w)
		return NULL;
	bpf_map_update_elem(&watch_images, &tgid, w, BPF_NOEXIST);
	bpf_map_delete_elem(&watch_ns_targets, &ns_tgid);
	return bpf_map_lookup_elem(&watch_images, &tgid);
}

/* The coroutines the watchpoints opened, to look at when one may have
 * ended: few at once (each is a timed call in progress), each with when
 * it was opened. Those of a process are dropped when it ends; LRU, so
 * that an end never seen cannot fill the table for good. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, PYSPAN_WATCH_OPEN_MAX);
	__type(key, struct coro_key);
	__type(value, __u64);
} watch_opens SEC(".maps");

/* The thread state last found for a thread, checked at every use. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64); /* bpf_get_current_pid_tgid() */
	__type(value, struct py_thread_cache);
} watch_threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u8[PY_SCRATCH_BYTES]);
} watch_scratch SEC(".maps");

static long watch_find_step(__u32 i, void *ctx)
{
	return py_find_step(NULL, ctx);
}

/* The current thread's innermost Python frame in a process of program
 * IMAGE, 0 when unknown; *OUT its interpreter. */
static __always_inline __u64 watch_current_frame(__u32 image, const struct py_proc **out)
{
	__u64 id = bpf_get_current_pid_tgid(), frame = 0;
	__u32 zero = 0;
	const struct py_proc *p = bpf_map_lookup_elem(&watch_proc, &image);
	struct py_thread_cache *cached = bpf_map_lookup_elem(&watch_threads, &id);
	__u8 *buf = bpf_map_lookup_elem(&watch_scratch, &zero);
	struct py_thread_cache fresh;
	struct py_find find;

	if (!buf || !p)
		return 0;
	*out = p;
	find = (struct py_find){ .L = &p->layout, .tid = (__u32)id };
	if (cached && py_cached_frame(NULL, &p->layout, cached, buf, &frame) == 0)
		return frame;
	find.ts = py_first_tstate(NULL, p);
	bpf_loop(PY_MAX_THREADS, watch_find_step, &find, 0);
	if (!find.found || py_cache_found(NULL, &p->layout, &fresh, find.found, buf, &frame))
		return 0;
	bpf_map_update_elem(&watch_threads, &id, &fresh, BPF_ANY);
	return frame;
}

/* What user space is told: a process to look for timed functions in
 * (stopped meanwhile), or one of a watched program that ended, whose
 * watchpoints may go back (no probes). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} watch_requests SEC(".maps");

/* Set by user space as the capture ends: no process is stopped any
 * more (none would be let go on). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} watch_closing_flag SEC(".maps");

static __always_inline bool watch_closing(void)
{
	__u32 zero = 0, *closing = bpf_map_lookup_elem(&watch_closing_flag, &zero);

	return !closing || *closing;
}

/* Processes stopped for a request not yet answered: what user space lets
 * go on when it closes, whatever happened to the request. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);  /* tgid in the loader's PID namespace */
	__type(value, __u8);
} watch_stopped SEC(".maps");

#define PYSPAN_SIGSTOP 19 /* the same on x86-64 and arm64 */

/* The current process is stopped (SIGSTOP) and user space asked what
 * ASK says, about PROBES, at CODE, GLOBALS, FUNCTION and COROUTINE (see
 * struct pyspan_watch_request); it lets the process go on (SIGCONT).
 * 0: asked; 1: not to be asked (the capture ends, or the process is not
 * visible in pmetrics' PID namespace, which could not let it go on);
 * -1: could not be asked (ring full, or the stop refused), not stopped. */
static __always_inline int stop_and_ask(__u32 probes, __u32 ask, __u64 code, __u64 globals,
					__u64 function, __u64 coroutine)
{
	struct pyspan_watch_request *r;
	__u32 tgid;
	__u8 yes = 1;

	/* a map key from the stack: kernels before 6.2 refuse one in ring
	 * buffer memory */
	tgid = (__u32)(loader_pid_tgid() >> 32);
	if (!tgid || watch_closing())
		return 1;
	r = bpf_ringbuf_reserve(&watch_requests, sizeof(*r), 0);
	if (!r)
		return -1;
	r->tgid = tgid;
	r->kernel_tgid = (__u32)(bpf_get_current_pid_tgid() >> 32);
	r->probes = probes;
	r->ask = ask;
	r->code = code;
	r->globals = globals;
	r->function = function;
	r->coroutine = coroutine;
	/* stopped before user space can hear of it: its SIGCONT then cancels
	 * the stop whenever it comes (a watchpoint's hit, with interrupts
	 * off, has the signal sent a moment later: user space waits for the
	 * stop before it answers) */
	bpf_map_update_elem(&watch_stopped, &tgid, &yes, BPF_ANY);
	if (bpf_send_signal(PYSPAN_SIGSTOP)) {
		bpf_map_delete_elem(&watch_stopped, &tgid);
		bpf_ringbuf_discard(r, 0);
		return -1;
	}
	bpf_ringbuf_submit(r, 0);
	return 0;
}

/* The coroutine whose frame FRAME, current on this thread, is taking its
 * first step as its code's first instruction, at ADDR, is touched; 0
 * when it is past that (a later step). 3.11+: the frame lies inside the
 * coroutine, and its instruction pointer is not yet past ADDR (the
 * interpreter quickens a code's instructions in place, so a write may
 * come during a later step). 3.10: f_lasti is -1 (a check before the
 * first fetch) or 0 (the fetch of GEN_START, which no jump targets). */
static __always_inline __u64 watch_first_step(const struct py_proc *p, __u64 frame, __u64 addr)
{
	int lasti = 1;

	if (layout.gen_iframe)
		return read_ptr(frame + p->layout.frame_instr) > addr ? 0 : frame - layout.gen_iframe;
	if (bpf_probe_read_user(&lasti, sizeof(lasti), (void *)(frame + layout.frame_lasti)) ||
	    lasti > 0)
		return 0;
	return read_ptr(frame + layout.frame_gen);
}

/* The first instruction of W's code, at ADDR, was touched on this
 * thread now: a coroutine of it takes its first step unless it is past
 * it already or was opened before (3.12 reads the instruction's two
 * bytes apart; 3.10 may read it twice). The first such step of a
 * function whose references are watched at its code object (3.12+,
 * found before its function object existed) hands that object, which
 * its frame holds, to user space, once. */
static __always_inline void watch_start(struct pyspan_watch *w, __u64 addr, __u64 now)
{
	const struct py_proc *p = NULL;
	__u64 frame = watch_current_frame(w->image, &p), gen;
	struct coro_key k;

	if (!frame || !p || read_ptr(frame + layout.frame_code) != w->code ||
	    !(gen = watch_first_step(p, frame, addr)))
		return;
	k = coro_key_of(gen);
	if (bpf_map_lookup_elem(&watch_opens, &k))
		return;
	if (bpf_map_update_elem(&watch_opens, &k, &now, BPF_NOEXIST)) {
		count(SPAN_CNT_CORO_TABLE_FULL);
		return;
	}
	coro_open(gen, w->idx, (__u32)bpf_get_current_pid_tgid(), now, w->code);
	/* once: the flag goes before another thread's step sees it, and
	 * comes back for a later first call when this one could not ask */
	if ((w->flags & PYSPAN_WATCH_ASK_FUNCTION) && layout.frame_func) {
		w->flags &= ~PYSPAN_WATCH_ASK_FUNCTION;
		if (stop_and_ask(1u << w->idx, PYSPAN_ASK_FUNCTION, w->code, 0,
				 read_ptr(frame + layout.frame_func), gen) < 0)
			w->flags |= PYSPAN_WATCH_ASK_FUNCTION;
	}
}

struct watch_end {
	__u64 now;
	__u32 tgid;
	__u32 pad;
};

static long watch_end_one(struct bpf_map *map, struct coro_key *k, __u64 *v, struct watch_end *e)
{
	if (k->tgid == e->tgid && gen_finished(k->gen)) {
		coro_close(k->gen, e->now);
		bpf_map_delete_elem(map, k);
	}
	return 0;
}

SEC("perf_event")
int py_watch(struct bpf_perf_event_data *ctx)
{
	__u64 addr = ctx->addr, now = bpf_ktime_get_ns();
	struct watch_end end = { now, (__u32)(bpf_get_current_pid_tgid() >> 32), 0 };
	struct pyspan_watch_proc *proc;
	struct pyspan_watch *w;

	/* the watchpoints are the CPU's: any task touching the address
	 * traps; only a traced process running the program whose address
	 * it is counts */
	if (!traced_current() || !(proc = watch_proc_of(end.tgid)) ||
	    !(w = bpf_map_lookup_elem(&watches, &addr)) || w->image != proc->image)
		return 0;
	if (w->kind == PYSPAN_WATCH_FIRST_STEP)
		watch_start(w, addr, now);
	else
		bpf_for_each_map_elem(&watch_opens, watch_end_one, &end, 0);
	return 0;
}

static __always_inline void say_ended(__u32 tgid)
{
	struct pyspan_watch_request *r = bpf_ringbuf_reserve(&watch_requests, sizeof(*r), 0);

	if (!r)
		return; /* given back at the next request instead */
	r->tgid = (__u32)(loader_pid_tgid() >> 32);
	r->kernel_tgid = tgid;
	r->probes = 0;
	r->ask = PYSPAN_ASK_ENDED;
	r->code = 0;
	r->globals = 0;
	r->function = 0;
	r->coroutine = 0;
	bpf_ringbuf_submit(r, 0);
}

static long watch_forget_one(struct bpf_map *map, struct coro_key *k, __u64 *v, __u32 *tgid)
{
	if (k->tgid == *tgid)
		bpf_map_delete_elem(map, k);
	return 0;
}

/* A task of a process the hook knows forks: the child runs the same
 * program at the same addresses (a new thread needs nothing: same
 * tgid). */
SEC("raw_tp/sched_process_fork")
int BPF_PROG(py_watch_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct pyspan_watch_proc *w;
	__u64 key = (__u64)child;

#ifndef PMETRICS_NO_BTF
	/* a new thread: its process's entry is its own (without the
	 * kernel's BTF it cannot be told apart, and its entry goes when it
	 * exits) */
	if ((__u32)BPF_CORE_READ(child, tgid) == tgid)
		return 0;
#endif
	/* the parent may be a forked child not yet seen at a hit */
	w = watch_proc_of(tgid);
	if (w)
		bpf_map_update_elem(&watch_children, &key, w, BPF_ANY);
	return 0;
}

/* A process's main thread ends: its coroutines still open will not end
 * (they are counted as open at exit by the engine's table). */
SEC("raw_tp/sched_process_exit")
int BPF_PROG(py_watch_exit, struct task_struct *task)
{
	__u64 id = bpf_get_current_pid_tgid(), key = bpf_get_current_task();
	__u32 tgid = (__u32)(id >> 32);
	struct pyspan_watch_proc *w;

	bpf_map_delete_elem(&watch_children, &key);
	if ((__u32)id != tgid)
		return 0;
	bpf_for_each_map_elem(&watch_opens, watch_forget_one, &tgid, 0);
	w = bpf_map_lookup_elem(&watch_images, &tgid);
	if (w && w->image != PYSPAN_WATCH_NO_IMAGE)
		say_ended(tgid);
	bpf_map_delete_elem(&watch_images, &tgid);
	return 0;
}

/* A traced process runs a new program: what lies at the watched
 * addresses now is something else, so it is no longer any image's; its
 * timed modules are looked for afresh as they run. Its coroutines still
 * open will not end, and its thread's cached frame lookup is of the old
 * program. */
SEC("raw_tp/sched_process_exec")
int BPF_PROG(py_watch_exec)
{
	__u64 id = bpf_get_current_pid_tgid(), task = bpf_get_current_task();
	__u32 tgid = (__u32)(id >> 32);

	/* a child that execs before its first hit has its parent's entry
	 * waiting too, traced or not */
	bpf_map_delete_elem(&watch_children, &task);
	if (!traced(tgid))
		return 0;
	bpf_map_delete_elem(&watch_images, &tgid);
	bpf_for_each_map_elem(&watch_opens, watch_forget_one, &tgid, 0);
	bpf_map_delete_elem(&watch_threads, &id);
	return 0;
}

/* ---- arming the watchpoints of a program as its modules run ------------ */

/* A timed function is looked for in a process when its module's body
 * has run there (PyEval_EvalCode, which every import and the main
 * module go through, returns): the function object exists then and
 * nothing has called it yet, unless the module is the program's main
 * one, whose body runs the program. The process is stopped at that
 * return (SIGSTOP), user space finds the function and watches it, and
 * lets the process go on (SIGCONT): no call is missed. Only the modules
 * of probes not yet watched there stop it, each once per program. */

/* A module run that will stop its process at its return: by thread and
 * the stack pointer at its entry (an import inside a module's body runs
 * another module in the same thread); the probes it holds, its code and
 * globals. */
struct module_run_key {
	__u64 sp;
	__u32 tid;
	__u32 pad;
};

struct module_run {
	__u64 code, globals;
	__u32 probes;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, struct module_run_key);
	__type(value, struct module_run);
} module_runs SEC(".maps");

/* The probes among WANT whose module file the code object CODE (a
 * module's body) was compiled from. */
static __always_inline __u32 module_probes(__u64 code, __u32 want)
{
	__u32 zero = 0, state = 0, mask = 0;
	struct scratch *s = bpf_map_lookup_elem(&scratch_buf, &zero);
	__u64 fname = read_ptr(code + layout.code_filename), flen = 0;

	if (!s || !fname ||
	    bpf_probe_read_user(&flen, sizeof(flen), (void *)(fname + layout.unicode_length)) ||
	    bpf_probe_read_user(&state, sizeof(state), (void *)(fname + layout.unicode_state)) ||
	    (state & 0x60) != 0x60)
		return 0;
#pragma unroll
	for (__u32 i = 0; i < PYSPAN_MAX_PROBES; i++) {
		if (i >= n_probes)
			break;
		if (!(want & (1u << i)))
			continue;
		if (tail_is(fname, flen, probes[i].file_len, probes[i].file_suffix, s->want) == 1 ||
		    tail_is(fname, flen, probes[i].pkg_len, probes[i].pkg_suffix, s->want) == 1)
			mask |= 1u << i;
	}
	return mask;
}

/* The probes among WANT not yet looked for in process TGID. */
static __always_inline __u32 not_found_yet(__u32 tgid, __u32 want)
{
	struct pyspan_watch_proc *w = watch_proc_of(tgid);

	return want & ~(w ? w->found : 0);
}

/* PyEval_EvalCode(code, globals, locals) */
SEC("uprobe")
int BPF_KPROBE(py_module_run, __u64 code, __u64 globals)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct module_run_key k = { PT_REGS_SP(ctx), (__u32)id, 0 };
	struct module_run run = { code, globals, 0, 0 };
	__u32 all = n_probes >= 32 ? ~0u : (1u << n_probes) - 1;

	if (!code || !traced_current())
		return 0;
	run.probes = module_probes(code, not_found_yet((__u32)(id >> 32), all));
	if (!run.probes)
		return 0;
	bpf_map_update_elem(&module_runs, &k, &run, BPF_ANY);
	if (stop_and_ask(run.probes, PYSPAN_ASK_MODULE_STARTS, code, globals, 0, 0) < 0)
		count(SPAN_CNT_WATCH_UNASKED); /* never looked into: said at the end */
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(py_module_ran)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct module_run_key k = { entry_sp_of_return(ctx), (__u32)id, 0 };
	struct module_run *run = bpf_map_lookup_elem(&module_runs, &k);
	__u32 probes;

	if (!run)
		return 0;
	/* those found as the body started (the main module's) are watched */
	probes = not_found_yet((__u32)(id >> 32), run->probes);
	if (probes &&
	    stop_and_ask(probes, PYSPAN_ASK_MODULE_RETURNS, run->code, run->globals, 0, 0) < 0)
		count(SPAN_CNT_WATCH_UNASKED);
	bpf_map_delete_elem(&module_runs, &k);
	return 0;
}

/* A thread of a traced process that exits with calls pending never
 * returns from them. A raw tracepoint: a BTF one needs the kernel's own
 * BTF. (With the native tracer loaded, its own exit program cleans the
 * traced set; this one only the Python call stacks.) */
SEC("raw_tp/sched_process_exit")
int BPF_PROG(py_thread_exit, struct task_struct *task)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();

	call_stack_thread_exit(tid);
	if (track_thread_opens)
		bpf_map_delete_elem(&thread_opens, &tid);
	return 0;
}
