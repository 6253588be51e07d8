/* SPDX-License-Identifier: MIT */
/* What the CPU sampler's BPF object (bpf/sampler.bpf.c) tells the
 * loader (user/sampler.c) through its ring buffer: samples with their
 * stacks, the ends of off-CPU intervals, and execs of traced processes.
 * Every record starts with its type. */
#ifndef PMETRICS_SAMPLER_EVENT_H
#define PMETRICS_SAMPLER_EVENT_H

#include "python_walk.h"

/* bpf_get_stack()'s limits: the kernel's own default for
 * perf_event_max_stack is 127. */
#define SAMPLER_USER_FRAMES 127
#define SAMPLER_KERNEL_FRAMES 48
/* The top of the user stack copied with the user registers, for DWARF
 * unwinding in user space where the frame-pointer chain breaks (code
 * built without frame pointers: glibc, CPython). Not for a thread whose
 * Python stack was walked: there the native frames matter little. */
#define SAMPLER_STACK_COPY 8192
/* User registers in perf's order (x86-64: ax bx cx dx si di bp sp ip
 * r8-r15; arm64: x0-x30 sp pc). */
#define SAMPLER_REGS 33
#if defined(__TARGET_ARCH_arm64) || defined(__aarch64__)
#define SAMPLER_REGS_SP 31
#else
#define SAMPLER_REGS_SP 7
#endif

enum sampler_record {
	SAMPLER_REC_SAMPLE = 1, /* struct sampler_sample */
	SAMPLER_REC_SWITCH_IN,  /* struct sampler_switch_in */
	SAMPLER_REC_EXEC,       /* struct sampler_process */
	SAMPLER_REC_EXIT,       /* struct sampler_process */
};

enum sampler_kind { SAMPLER_ON_CPU, SAMPLER_OFF_CPU };

struct sampler_sample {
	__u32 type;           /* SAMPLER_REC_SAMPLE */
	__u32 kind;           /* enum sampler_kind */
	__u64 time_ns;        /* CLOCK_MONOTONIC; off-CPU: when it went off */
	__u32 pid, tid;       /* as the kernel's initial PID namespace names them */
	__s32 n_user;         /* user frames, or -errno from bpf_get_stack() */
	__s32 n_kernel;
	__u32 py_status;      /* enum py_walk_status */
	__u32 n_py;
	__u32 stack_len;      /* bytes of stack copied */
	__u32 n_regs;         /* user registers, 0 without a stack copy */
	__u32 n_returns;      /* struct sampler_return: pending uretprobes */
	__u32 unused;
	__u64 trampoline;     /* where they return to instead, 0 if none */
	/* Then, one after the other, as many as the counts above say (a
	 * negative count: none): n_py Python frames, leaf first; n_user
	 * user and n_kernel kernel addresses, leaf first; n_returns
	 * pending returns, innermost first; n_regs user registers;
	 * stack_len bytes of the user stack from its pointer up.
	 * A sample is a few hundred bytes where a fixed layout would send
	 * every array whole. The Python frames come first: the walk writes
	 * them in place before the other counts are known. */
	struct py_frame_ref py[PY_MAX_FRAMES];
};

/* A function under a uretprobe (a probe's return side, pending) returns
 * to the kernel's trampoline: the kernel swapped its return address on
 * the stack (or, on arm64, in the link register, which the function
 * then saves) for the trampoline's, and keeps the real one. Kernels
 * before 6.11 leave the trampoline in the frame-pointer chain they
 * walk, and every stack copy holds it: the caller of a probed function
 * is lost to both walks without the kernel's record, sent as these.
 * STACK is the stack pointer at the function's entry: the slot of the
 * swapped address on x86-64 is there, on arm64 just below. */
struct sampler_return {
	__u64 stack;
	__u64 ret;            /* the real return address */
};

/* How many of a thread's pending returns a sample takes (the kernel
 * allows 64 at once). */
#define SAMPLER_RETURNS 16

/* Room for what follows the Python frames of a full sample. */
#define SAMPLER_AFTER_PY                                                                  \
	(8 * (SAMPLER_USER_FRAMES + SAMPLER_KERNEL_FRAMES + SAMPLER_REGS) +                \
	 sizeof(struct sampler_return) * SAMPLER_RETURNS + SAMPLER_STACK_COPY)

/* A thread seen going off the CPU came back: the off-CPU sample of the
 * same thread with this time_ns lasted in_ns - out_ns. */
struct sampler_switch_in {
	__u32 type;
	__u32 tid;
	__u64 out_ns, in_ns;
};

/* A traced process ran execve (its old address space, interpreter and
 * symbols are gone), or its last thread exited. */
struct sampler_process {
	__u32 type;           /* SAMPLER_REC_EXEC or SAMPLER_REC_EXIT */
	__u32 pid;
	__u64 mono_ns;        /* when (bpf_ktime_get_ns()) */
	/* an exec: the program's name as the kernel has it then (the file's
	 * base name, 15 bytes at most), for a process gone, or exec'd again,
	 * by the time the loader reads its command line */
	char comm[16];
};

/* Loss counters of the BPF side, per CPU: X(NAME, what they are). */
#define SAMPLER_COUNTERS(X)                                  \
	X(RINGBUF_FULL, "ring buffer full")                  \
	X(SWITCH_TABLE_FULL, "off-CPU intervals not tracked (table full)")

#define SAMPLER_CNT_ENUM(id, text) SAMPLER_CNT_##id,
enum sampler_counter { SAMPLER_COUNTERS(SAMPLER_CNT_ENUM) SAMPLER_CNT_MAX };
#undef SAMPLER_CNT_ENUM

#endif
