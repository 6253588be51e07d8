/* SPDX-License-Identifier: MIT */
/* The walk of a CPython thread's frames, from the interpreter's
 * _PyRuntime to the innermost frame, written once for both samplers:
 * bpf/sampler.bpf.c runs it in the kernel at the sample, and
 * user/python_stack.c runs it with process_vm_readv() (else a read of
 * /proc/PID/mem) where there is no BPF on perf events. The includer
 * defines, before including:
 *
 *   PY_CTX                 the type of the reader's context
 *   PY_READ(ctx, dst, size, addr)  copies SIZE bytes of the target's
 *                          memory at ADDR to DST; 0 on success
 *   PY_INLINE              how the functions are inlined
 *
 * and runs the walk in steps (py_find_step, py_walk_step) in a loop of
 * its own: bpf_loop() in BPF, where a plain loop of a hundred frames
 * would have the verifier follow every branch of every iteration. A
 * frame is read into a buffer at once (BPF: map memory, where a field
 * can be taken out at an offset known only at run time).
 *
 * The walk collects, per frame, the code object, the instruction and
 * the code's name and file (pointers to str objects: their text is read
 * by user space, user/python_stack.c, once per string).
 *
 * Which thread state belongs to a thread: 3.11+ store the kernel's thread
 * id (native_thread_id); 3.8-3.10 only the pthread_t, which on glibc is
 * the address of the thread's struct pthread, whose tid field the loader
 * finds once per process (pthread_tid). The GIL holder
 * (gilstate.tstate_current) would name one thread only, and a thread
 * blocked in a sleep or a read, which gave the GIL up, would lose its
 * Python stack, which is what off-CPU time wants most. */
#ifndef PMETRICS_PYTHON_WALK_H
#define PMETRICS_PYTHON_WALK_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Frames kept per stack (a power of two; the root end is cut past it,
 * and the stack then starts with PROFILE_TRUNCATED_FRAME) and thread
 * states looked at per interpreter. Imports nest deep: each adds six
 * frames of importlib and the module's, so a real program's start
 * (Opentrons' analysis: 20 and more imports deep) passes 128. */
#define PY_MAX_FRAMES 256
#define PY_MAX_THREADS 64
/* Frames walked: shim frames of 3.12+ (one per entry from C, so one
 * per module body) are walked, not kept. */
#define PY_MAX_VISITED 320
/* Bytes read at once: a frame's fields the walk takes, a code object's,
 * a thread state's from its frame pointer to the field naming its
 * thread (3.8-3.10: 24 to 184). */
#define PY_SCRATCH_BYTES 256
#define PY_NO_FIELD 0xffffffffu

/* Code objects remembered during one walk (a power of two). */
#define PY_CODE_MEMO 8

/* How frames hang together, by version. */
enum py_model {
	PY_MODEL_NONE,
	PY_MODEL_FRAMEOBJ,  /* 3.8-3.10: tstate->frame, PyFrameObject.f_back */
	PY_MODEL_CFRAME,    /* 3.11, 3.12: tstate->cframe->current_frame, iframe->previous */
	PY_MODEL_IFRAME,    /* 3.13: tstate->current_frame, iframe->previous */
};

/* Offsets into the interpreter's structs (user/python_stack.c has them
 * per version; every one was read with offsetof() from that version's
 * headers). PY_NO_FIELD where the version has no such field. */
struct py_layout {
	__u32 model;
	__u32 interp_main;       /* _PyRuntime.interpreters.main */
	__u32 interp_threads;    /* interp->tstate_head (3.8-3.10), threads.head */
	__u32 tstate_next;
	__u32 tstate_native_tid; /* 3.11+ */
	__u32 tstate_thread_id;  /* pthread_t */
	__u32 pthread_tid;       /* struct pthread's tid (3.8-3.10; per process) */
	__u32 tstate_frame;      /* ->frame, ->cframe or ->current_frame */
	__u32 cframe_current;    /* _PyCFrame.current_frame (3.11, 3.12) */
	__u32 frame_back;        /* f_back or previous */
	__u32 frame_code;        /* f_code or f_executable */
	__u32 frame_instr;       /* f_lasti (an int) or prev_instr/instr_ptr */
	__u32 frame_owner;       /* 3.11+: a byte */
	__u32 owner_cstack;      /* 3.12+: the owner value of a shim frame */
	__u32 frame_gen;         /* 3.8-3.10: f_gen */
	__u32 gen_qualname;      /* 3.8-3.10: gi_qualname */
	__u32 frame_read;        /* bytes of a frame that hold the fields above */
	__u32 code_firstlineno;  /* the first of the code object's fields read */
	__u32 code_filename;
	__u32 code_name;         /* co_qualname (3.11+), co_name (3.8-3.10) */
	__u32 code_read;         /* bytes from code_firstlineno holding them all */
	__u32 code_adaptive;     /* 3.11+: where the instructions start */
};

/* One interpreter process: where its _PyRuntime is, and its layout. */
struct py_proc {
	__u64 runtime;
	/* The addresses the interpreter's file is mapped at. A sample with a
	 * Python stack whose user leaf is in there keeps no native frame
	 * (user/sampler.c keeps only those the interpreter called out to),
	 * so the BPF sampler walks no native user stack for it. */
	__u64 interp_start, interp_end;
	struct py_layout layout;
};

/* One frame: the code object it runs, where in it, and the names the
 * code object holds at the sample: a code object that runs once (a
 * module's body, during its import) may be freed before user space
 * looks, the strings it names live on (interned, or held by the other
 * code of its module). */
struct py_frame_ref {
	__u64 code;
	__u64 filename;  /* co_filename, a str */
	__u64 name;      /* co_qualname (3.11+), co_name (3.8-3.10) */
	/* 3.8-3.10: the generator's or coroutine's gi_qualname (a str) when
	 * the frame belongs to one, else 0 (those versions' code objects
	 * have no qualified name). */
	__u64 qualname;
	/* The instruction's byte offset in the code (3.8-3.10: f_lasti as
	 * stored: bytes in 3.8/3.9, code units in 3.10). */
	__u32 instr;
	/* The code object's co_firstlineno at the sample: a code object
	 * freed and another made at its address is told apart. */
	__s32 firstlineno;
};

/* The thread state last found for a thread, and the value then of its
 * field naming the thread (native_thread_id, or the pthread_t before
 * 3.11): while that field holds the same value, the thread state is
 * still the thread's. */
struct py_thread_cache {
	__u64 tstate;
	__u64 key;
};

/* Why a thread got no Python frames, or how its walk ended. */
enum py_walk_status {
	PY_WALK_NOT_PYTHON,    /* not an interpreter process (or not yet known) */
	PY_WALK_OK,
	PY_WALK_NO_THREAD,     /* no thread state of this thread: a native thread */
	PY_WALK_IDLE,          /* a thread state with no frame: not running Python */
	PY_WALK_READ_FAILED,   /* memory that should be there could not be read */
	PY_WALK_TRUNCATED,     /* more frames than PY_MAX_FRAMES: the root end is cut */
};

#endif

/* The walk itself, where the includer has defined the reader. */
#if defined(PY_READ) && !defined(PMETRICS_PYTHON_WALK_FUNCS)
#define PMETRICS_PYTHON_WALK_FUNCS

PY_INLINE __u64 py_read_ptr(PY_CTX ctx, __u64 addr)
{
	__u64 v = 0;

	if (PY_READ(ctx, &v, sizeof(v), addr))
		return 0;
	return v;
}

/* The kernel's id of the thread whose state TS is; 0 when unreadable. */
PY_INLINE __u32 py_tstate_tid(PY_CTX ctx, const struct py_layout *L, __u64 ts)
{
	__u64 pthread;
	__u32 tid = 0;

	if (L->tstate_native_tid != PY_NO_FIELD) {
		/* an unsigned long: its low half, little-endian */
		if (PY_READ(ctx, &tid, sizeof(tid), ts + L->tstate_native_tid))
			return 0;
		return tid;
	}
	pthread = py_read_ptr(ctx, ts + L->tstate_thread_id);
	if (!pthread || L->pthread_tid == PY_NO_FIELD ||
	    PY_READ(ctx, &tid, sizeof(tid), pthread + L->pthread_tid))
		return 0;
	return tid;
}

/* The search for a thread's state, one thread state per step (the BPF
 * side runs the steps with bpf_loop(): one step is verified, not
 * PY_MAX_THREADS of them). */
struct py_find {
	const struct py_layout *L;
	__u64 ts;    /* the thread state to look at next */
	__u64 found; /* the one of tid, once found */
	__u32 tid;
	__u32 pad;
};

/* The first thread state of P's main interpreter, to start a search at. */
PY_INLINE __u64 py_first_tstate(PY_CTX ctx, const struct py_proc *p)
{
	__u64 interp = py_read_ptr(ctx, p->runtime + p->layout.interp_main);

	return interp ? py_read_ptr(ctx, interp + p->layout.interp_threads) : 0;
}

/* One step: 1 when the search is over. */
PY_INLINE int py_find_step(PY_CTX ctx, struct py_find *f)
{
	if (!f->ts)
		return 1;
	if (py_tstate_tid(ctx, f->L, f->ts) == f->tid) {
		f->found = f->ts;
		return 1;
	}
	f->ts = py_read_ptr(ctx, f->ts + f->L->tstate_next);
	return 0;
}


/* A field of the frame in BUF; out of the buffer reads as 0. A code
 * object is read from its co_firstlineno on, so its pointers sit at 4
 * bytes past an 8-byte boundary: BPF loads them as they are (x86-64 and
 * arm64 allow it), C copies them, as it may not load a misaligned
 * pointer. */
#ifdef __VMLINUX_H__
#define PY_LOAD(type, p) (*(const type *)(p))
#else
#define PY_LOAD(type, p) ({ type v_; __builtin_memcpy(&v_, (p), sizeof(v_)); v_; })
#endif

/* Hides X's origin from the compiler, so that BPF code tests the register
 * it then uses (the verifier bounds a read's size by the test it saw). */
#ifdef __VMLINUX_H__
#define PY_OPAQUE(x) asm volatile("" : "+r"(x))
#else
#define PY_OPAQUE(x) ((void)0)
#endif

PY_INLINE __u64 py_field64(const __u8 *buf, __u32 off)
{
	if (off > PY_SCRATCH_BYTES - 8)
		return 0;
	return PY_LOAD(__u64, buf + off);
}

PY_INLINE __u32 py_field32(const __u8 *buf, __u32 off)
{
	if (off > PY_SCRATCH_BYTES - 4)
		return 0;
	return PY_LOAD(__u32, buf + off);
}

PY_INLINE __u32 py_field8(const __u8 *buf, __u32 off)
{
	if (off > PY_SCRATCH_BYTES - 1)
		return PY_NO_FIELD;
	return buf[off];
}

/* Thread state TS's frame pointer (->frame, ->cframe or ->current_frame)
 * and its field naming the thread, in one read where they sit within
 * PY_SCRATCH_BYTES of each other (every known layout): each read of
 * another process's memory has a cost of its own, beyond its bytes.
 * 0 on success. */
PY_INLINE int py_tstate_head(PY_CTX ctx, const struct py_layout *L, __u64 ts, __u8 *buf,
			     __u64 *frame, __u64 *key)
{
	__u32 key_at = L->tstate_native_tid != PY_NO_FIELD ? L->tstate_native_tid
							   : L->tstate_thread_id;
	__u32 lo = key_at < L->tstate_frame ? key_at : L->tstate_frame;
	__u32 hi = (key_at > L->tstate_frame ? key_at : L->tstate_frame) + 8;
	__u64 size = (__u64)hi - lo;

	PY_OPAQUE(size);
	if (size >= PY_SCRATCH_BYTES) {
		if (PY_READ(ctx, frame, sizeof(*frame), ts + L->tstate_frame))
			return -1;
		return PY_READ(ctx, key, sizeof(*key), ts + key_at);
	}
	if (PY_READ(ctx, buf, size, ts + lo))
		return -1;
	*frame = py_field64(buf, L->tstate_frame - lo);
	*key = py_field64(buf, key_at - lo);
	return 0;
}

/* The innermost frame from a thread state's frame pointer, 0 when none. */
PY_INLINE __u64 py_innermost_frame(PY_CTX ctx, const struct py_layout *L, __u64 frame)
{
	if (frame && L->cframe_current != PY_NO_FIELD)
		frame = py_read_ptr(ctx, frame + L->cframe_current);
	return frame;
}

/* The innermost frame of thread TID whose state C caches, with C checked
 * (one read when it holds) and, when it no longer holds, emptied: the
 * caller searches then. *FRAME: the frame, 0 when the thread runs no
 * Python. 0 when C is TID's. */
PY_INLINE int py_cached_frame(PY_CTX ctx, const struct py_layout *L, struct py_thread_cache *c,
			      __u8 *buf, __u64 *frame)
{
	__u64 key = 0;

	if (c->tstate && !py_tstate_head(ctx, L, c->tstate, buf, frame, &key) && key &&
	    key == c->key) {
		*frame = py_innermost_frame(ctx, L, *frame);
		return 0;
	}
	c->tstate = c->key = 0;
	return -1;
}

/* C set to thread state TS, which a search found to be its thread's;
 * *FRAME as py_cached_frame() gives it. 0 on success. */
PY_INLINE int py_cache_found(PY_CTX ctx, const struct py_layout *L, struct py_thread_cache *c,
			     __u64 ts, __u8 *buf, __u64 *frame)
{
	c->tstate = ts;
	if (!ts || py_tstate_head(ctx, L, ts, buf, frame, &c->key) || !c->key) {
		c->tstate = c->key = 0;
		return -1;
	}
	*frame = py_innermost_frame(ctx, L, *frame);
	return 0;
}

/* A code object's fields as one walk read them. Within a walk they stay
 * true: the frame that led to the code object holds a reference to it,
 * and the thread is stopped (BPF) or was a moment ago (user space). A
 * recursive call chain, a common shape of a deep stack, then reads each
 * code object once instead of once per frame. Never kept from one walk
 * to the next: a code object freed in between (a module's body after
 * its import) may be replaced by another at the same address. */
struct py_code_memo {
	__u64 code; /* 0: an empty slot */
	__u64 filename;
	__u64 name;
	__s32 firstlineno;
	__u32 pad;
};

/* The walk of a thread's frames from its innermost outwards, one frame
 * per step (bpf_loop() on the BPF side). */
struct py_walk {
	const struct py_layout *L;
	__u64 frame;             /* the frame to read next, 0 at the end */
	struct py_frame_ref *out; /* PY_MAX_FRAMES slots, leaf first */
	__u8 *buf;               /* PY_SCRATCH_BYTES */
	struct py_code_memo *memo; /* PY_CODE_MEMO slots, emptied before the walk */
	__u32 n;                 /* frames in out */
	__u32 status;            /* enum py_walk_status */
};

/* The memo slot of a code object (they are 16-byte aligned). */
PY_INLINE struct py_code_memo *py_memo_slot(struct py_walk *w, __u64 code)
{
	return &w->memo[((code >> 4) ^ (code >> 9)) & (PY_CODE_MEMO - 1)];
}

/* R's code fields: from the memo, else read from the code object (into
 * W's buffer) and remembered. */
PY_INLINE void py_code_fields(PY_CTX ctx, struct py_walk *w, struct py_frame_ref *r)
{
	const struct py_layout *L = w->L;
	struct py_code_memo *m = py_memo_slot(w, r->code);
	__u32 size = L->code_read & (PY_SCRATCH_BYTES - 1);

	if (r->code && m->code == r->code) {
		r->firstlineno = m->firstlineno;
		r->filename = m->filename;
		r->name = m->name;
		return;
	}
	r->firstlineno = -1;
	r->filename = r->name = 0;
	if (!size || L->code_filename < L->code_firstlineno || L->code_name < L->code_firstlineno ||
	    PY_READ(ctx, w->buf, size, r->code + L->code_firstlineno))
		return;
	r->firstlineno = (__s32)py_field32(w->buf, 0);
	r->filename = py_field64(w->buf, L->code_filename - L->code_firstlineno);
	r->name = py_field64(w->buf, L->code_name - L->code_firstlineno);
	m->code = r->code;
	m->firstlineno = r->firstlineno;
	m->filename = r->filename;
	m->name = r->name;
}

/* One step: 1 when the walk is over. */
PY_INLINE int py_walk_step(PY_CTX ctx, struct py_walk *w)
{
	const struct py_layout *L = w->L;
	__u32 size = L->frame_read & (PY_SCRATCH_BYTES - 1);
	struct py_frame_ref *r;
	__u64 code, instr;

	if (!w->frame)
		return 1;
	if (!size || PY_READ(ctx, w->buf, size, w->frame)) {
		w->status = PY_WALK_READ_FAILED;
		return 1;
	}
	code = py_field64(w->buf, L->frame_code);
	w->frame = py_field64(w->buf, L->frame_back);
	if (L->frame_owner != PY_NO_FIELD && py_field8(w->buf, L->frame_owner) == L->owner_cstack)
		return 0; /* a shim frame of the C stack: no code of its own */
	/* only a frame with code past the last slot cuts the stack (a
	 * stack's root is a shim frame on 3.12+) */
	if (w->n >= PY_MAX_FRAMES) {
		w->status = PY_WALK_TRUNCATED;
		return 1;
	}
	r = &w->out[w->n & (PY_MAX_FRAMES - 1)];
	r->code = code;
	r->qualname = 0;
	if (L->model == PY_MODEL_FRAMEOBJ) {
		__u64 gen = py_field64(w->buf, L->frame_gen);

		r->instr = py_field32(w->buf, L->frame_instr);
		if (gen)
			r->qualname = py_read_ptr(ctx, gen + L->gen_qualname);
	} else {
		instr = py_field64(w->buf, L->frame_instr);
		r->instr = instr > code + L->code_adaptive ?
				   (__u32)(instr - code - L->code_adaptive) : 0;
	}
	/* the frame's fields are taken: the buffer may now hold the code's */
	py_code_fields(ctx, w, r);
	w->n++;
	return 0;
}

#endif
