/* SPDX-License-Identifier: MIT */
/* The read-only configuration bpf/pyspan.bpf.c gets from user/pyspan.c
 * before load: the CPython struct layout of the traced interpreter and
 * the probe table; plus the per-probe counters the summary reports. The
 * spans themselves are struct span_event (span_event.h), and the loss
 * counters are the span engine's. */
#ifndef PMETRICS_PYSPAN_CONFIG_H
#define PMETRICS_PYSPAN_CONFIG_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Python probes one process can carry; the BPF matcher is unrolled over
 * them, so keep it small. */
#define PYSPAN_MAX_PROBES 8
/* Longest qualified name / module file suffix compared in BPF, with NUL. */
#define PYSPAN_STR_MAX 128
/* Longest dotted module: "/" MODULE "/__init__.py" must fit. */
#define PYSPAN_MODULE_MAX (PYSPAN_STR_MAX - 1 - 13)
/* Code objects whose match result is cached (LRU). */
#define PYSPAN_CODE_CACHE 16384
/* Coroutines/generators between first entry and final return. */
#define PYSPAN_MAX_OPEN_CORO 8192

/* Value of the code cache: probe index in the low bits, flags above. */
#define PYSPAN_CODE_NO_MATCH 0xffffffffu
#define PYSPAN_CODE_IS_GEN 0x10000u /* coroutine, generator, async gen */
#define PYSPAN_CODE_IDX_MASK 0xffffu

/* Watchpoints on timed code objects (--python-hook watch): x86-64 and
 * the Flex's Cortex-A53 have 4 per thread, two per timed function. */
#define PYSPAN_MAX_WATCHES 4
/* Timed coroutines the watchpoints keep open at once, per capture. */
#define PYSPAN_WATCH_OPEN_MAX 256

enum pyspan_watch_kind {
	PYSPAN_WATCH_FIRST_STEP, /* the code's first instruction: a coroutine's first step */
	PYSPAN_WATCH_REFS,       /* a reference count each frame of the code takes and drops */
};

/* Programs the watch hook arms at once: a program as one process
 * exec'd it (the attached one, a launched command, an exec'd child),
 * shared by the children it forks, which have its addresses. */
#define PYSPAN_WATCH_IMAGES 8
/* No image yet: nothing of the process is watched. */
#define PYSPAN_WATCH_NO_IMAGE 0xffffffffu

/* What a watched address is (the watches map, keyed by the address). */
struct pyspan_watch {
	__u64 code;  /* the timed function's code object */
	__u32 idx;   /* its probe's index */
	__u32 kind;  /* enum pyspan_watch_kind */
	__u32 image; /* the program whose address it is */
	__u32 flags; /* PYSPAN_WATCH_ASK_FUNCTION */
};

/* On a first step: the function's references point is its code object's
 * for want of a function object (3.12+, whose coroutines let go of their
 * code only as they are freed, late for a task's): the first call asks
 * user space to watch the function object its frame holds instead. */
#define PYSPAN_WATCH_ASK_FUNCTION 1u

/* What the watch hook knows of a process (the watch_images map, keyed by
 * its tgid; a forked child gets its parent's). */
struct pyspan_watch_proc {
	__u32 image; /* its program's watched points, PYSPAN_WATCH_NO_IMAGE */
	__u32 found; /* the probes whose functions were looked for there, a bit each */
};

/* Why a process was stopped for user space. */
enum pyspan_watch_ask {
	PYSPAN_ASK_MODULE_RETURNS, /* a module's body returns (any but the main one) */
	PYSPAN_ASK_MODULE_STARTS,  /* a module's body starts (the main one matters) */
	PYSPAN_ASK_FUNCTION,       /* a first step that found its function object */
	PYSPAN_ASK_ENDED,          /* no stop: a process of a watched program ended */
};

/* A traced process runs the module of a probe not yet watched there and
 * was stopped (SIGSTOP) as the module's body starts, and again as it
 * returns: user space finds the functions, watches them, and lets it go
 * on (SIGCONT). At the start only the program's main module is looked
 * into (its body is the whole program, so its end is too late); at the
 * return, any other. Or a first step asks for its function object to be
 * watched (PYSPAN_WATCH_ASK_FUNCTION). With no probes: a process of a
 * watched program ended (what its program held may go back). */
struct pyspan_watch_request {
	__u32 tgid;        /* in the loader's PID namespace */
	__u32 kernel_tgid; /* the watch_images key */
	__u32 probes;      /* the probes of that module (a bit each), or the one called; 0: ended */
	__u32 ask;         /* enum pyspan_watch_ask */
	__u64 code;        /* the module's code object (its functions' code is in
			    * co_consts), or the function's */
	__u64 globals;     /* the module's globals: its functions and classes by name */
	__u64 function;    /* PYSPAN_ASK_FUNCTION: the function object */
	__u64 coroutine;   /* PYSPAN_ASK_FUNCTION: the coroutine whose first step it is */
};

/* gi_frame_state at and above which a 3.11+ coroutine has finished. */
#define PYSPAN_FRAME_COMPLETED 1

/* Byte offsets inside the traced interpreter's objects (x86-64 and
 * aarch64 agree: both are LP64). 0 means "not on this version". */
struct pyspan_layout {
	__u32 func_code;      /* PyFunctionObject.func_code */
	__u32 func_qualname;  /* PyFunctionObject.func_qualname */
	__u32 gen_frame;      /* 3.8-3.10: PyGenObject.gi_frame, NULL once finished */
	__u32 gen_iframe;     /* 3.11+: offset of the frame embedded in PyGenObject */
	__u32 gen_state;      /* 3.11+: int8 gi_frame_state */
	__s32 state_created;  /* 3.11+: gi_frame_state before the first step */
	__u32 gen_qualname;   /* PyGenObject.gi_qualname */
	__u32 frame_code;     /* frame -> code object */
	__u32 frame_lasti;    /* 3.8-3.10: int f_lasti, -1 before the first instruction */
	__u32 code_flags;
	__u32 code_filename;
	__u32 code_name;
	__u32 unicode_length; /* PyASCIIObject.length */
	__u32 unicode_state;
	__u32 unicode_data;   /* sizeof(PyASCIIObject): compact ASCII text */
	__u32 frame_gen;      /* 3.8-3.10: PyFrameObject.f_gen, its coroutine or generator */
	__u32 frame_func;     /* 3.12+: _PyInterpreterFrame.f_funcobj, a reference held */
	__u32 pad;
};

/* One py:MODULE:QUALNAME probe as the BPF matcher sees it. */
struct pyspan_probe_cfg {
	char qualname[PYSPAN_STR_MAX];   /* "Class.method" */
	/* "method": its code object's own name. A functools.wraps wrapper
	 * takes the wrapped function's qualified name, not its code. */
	char name[PYSPAN_STR_MAX];
	char file_suffix[PYSPAN_STR_MAX]; /* "/a/b/c.py" */
	char pkg_suffix[PYSPAN_STR_MAX];  /* "/a/b/c/__init__.py" */
	__u32 file_len;                   /* strlen(file_suffix) */
	__u32 pkg_len;
	__u32 probe_id;                   /* span_event.probe_id */
	__u32 pad;
};

/* A coroutine between its first step (or creation) and its end (the
 * open_coros map, keyed by the coroutine object; the summary counts
 * those still open). */
struct open_coro {
	__u64 start_ns; /* 0: started before attach, gives no row */
	__u64 code;     /* an address reused by another coroutine differs here */
	__u32 idx;
	__u32 tid;
	/* the thread's pending-call slot its latest step from C took: the
	 * step is still running while that slot below the stack's top holds
	 * it (up to 3.11; 0 until a step) */
	__u32 step_slot;
	__u32 pad;
};

/* Per-probe counters (per-CPU array, key = idx * PYSPAN_PC_MAX + kind). */
enum pyspan_probe_counter {
	PYSPAN_PC_ENTRIES,    /* timed calls and coroutines begun */
	PYSPAN_PC_SPANS,      /* span events submitted */
	PYSPAN_PC_MAX,
};

#endif
