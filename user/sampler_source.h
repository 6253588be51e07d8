/* SPDX-License-Identifier: MIT */
/* Between the sampler (user/sampler.c) and its two sources of samples:
 * BPF (user/sampler_bpf.c) and perf_event_open (user/sampler_perf.c).
 * A source hands over raw samples; the sampler names their frames, finds
 * their span states and writes them. */
#ifndef PMETRICS_SAMPLER_SOURCE_H
#define PMETRICS_SAMPLER_SOURCE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile/capture.h"
#include "python_stack.h"
#include "sampler.h"
#include "sampler_event.h"

struct raw_sample {
	enum profile_kind kind;
	uint64_t mono_ns;   /* CLOCK_MONOTONIC; off-CPU: when it went off */
	uint64_t weight_ns; /* on-CPU: the period; off-CPU: 0 until it is back */
	pid_t pid, tid;
	const uint64_t *user;   /* leaf first: the frame-pointer chain */
	int n_user;             /* < 0: the stack could not be read */
	/* For DWARF unwinding where that chain breaks: the user registers
	 * (sampler_unwind.h's order) and the top of the stack; NULL, 0
	 * when the source has none. */
	const uint64_t *regs;
	const uint8_t *stack;
	size_t stack_len;
	/* The thread's pending uretprobes, innermost first, and the
	 * trampoline that stands for their return addresses in the stack
	 * (include/sampler_event.h); 0, NULL when the source has none. */
	uint64_t trampoline;
	const struct sampler_return *returns;
	int n_returns;
	const uint64_t *kernel; /* leaf first */
	int n_kernel;
	const struct py_frame_ref *py; /* leaf first */
	int n_py;
	int py_status;          /* enum py_walk_status */
};

/* Unpacks BPF's sample record E of SIZE bytes into R, whose arrays then
 * point into E (user/sampler_bpf.c); weight_ns is left 0. */
void sampler_sample_unpack(const struct sampler_sample *e, size_t size, struct raw_sample *r);

/* What the sampler knows of a process. */
enum proc_kind {
	PROC_UNKNOWN,     /* not looked at yet, or not finished loading */
	PROC_PYTHON,      /* py is valid */
	PROC_NATIVE,      /* no interpreter */
	PROC_UNSUPPORTED, /* a CPython that cannot be walked (warned once) */
};

struct proc_state {
	pid_t pid;
	enum proc_kind kind;
	struct python_proc py;
	uint64_t first_seen_ns, last_look_ns;
	/* the kernel's uretprobe trampoline in it ("[uprobes]", mapped at
	 * its first probe hit; 0: not seen yet), and when maps were read */
	uint64_t trampoline, trampoline_look_ns;
};

/* ---- the sampler, for its sources ------------------------------------- */

/* Names the frames of R, finds its span states and writes it (on-CPU),
 * or keeps it until its thread is back (off-CPU). */
void sampler_add(struct sampler *s, const struct raw_sample *r);
/* Thread TID came back on the CPU at IN_NS, ending its off-CPU sample
 * of OUT_NS (BPF), or (OUT_NS 0: perf_event_open, whose switch-in does
 * not say) its latest one before IN_NS. A source without OUT_NS hands
 * switch-ins over in time order, and only once every record up to IN_NS
 * has been read. An older sample of the thread still waiting then lost
 * its switch-in: it is dropped and counted. */
void sampler_back_on_cpu(struct sampler *s, pid_t tid, uint64_t out_ns, uint64_t in_ns);
/* Process PID exec'd at MONO_NS: its program, interpreter and symbols
 * changed. COMM: the new program's name as the exec left it ("" when
 * not known), which names the process when it is gone, or runs another
 * program, by the time its command line is read. */
void sampler_exec(struct sampler *s, pid_t pid, uint64_t mono_ns, const char *comm);
/* Process PID ended, every sample of it handed over: what is known of
 * it (symbols, its DWARF unwinder, Python names) is let go, or a long
 * capture of a program that starts many children would keep it all. */
void sampler_exit(struct sampler *s, pid_t pid);
/* What is known of PID, looked at now if it is not known yet (at most
 * every 50 ms); SEEN_NS: the time of the record that names it. NULL
 * when out of memory. */
struct proc_state *sampler_proc(struct sampler *s, pid_t pid, uint64_t seen_ns);
/* A loss of the source, by the capture's reasons. */
void sampler_lost(struct sampler *s, enum profile_loss reason, uint64_t n);
const struct sampler_config *sampler_config(const struct sampler *s);
/* The on-CPU sampling period (1 s / HZ), 0 without on-CPU sampling. */
uint64_t sampler_period_ns(const struct sampler *s);

/* ---- the sources -------------------------------------------------------- */

struct sample_source;

/* BPF: Returns 0, or -1 after a one-line error. */
int bpf_source_open(struct sample_source **out, struct sampler *s);
/* perf_event_open: the same. */
int perf_source_open(struct sample_source **out, struct sampler *s);

struct sample_source_ops {
	/* Enables sampling. Returns 0 or -1 (error said). */
	int (*start)(struct sample_source *src);
	/* Waits at most TIMEOUT_MS for samples and hands over what is there. */
	void (*poll)(struct sample_source *src, int timeout_ms);
	/* Stops sampling (what is queued is still taken by a last poll). */
	void (*stop)(struct sample_source *src);
	/* The interpreter of PID was found (the BPF source walks it). */
	void (*python_found)(struct sample_source *src, const struct proc_state *p);
	/* Hand over each record at once (EAGER) or in batches: the sampler
	 * is eager while it meets code objects it has not named. NULL for a
	 * source that always does (perf_event_open: a wakeup per sample). */
	void (*eager)(struct sample_source *src, bool eager);
	/* Losses the source counts itself, added to the writer at the end. */
	void (*final_losses)(struct sample_source *src);
	void (*close)(struct sample_source *src);
};

struct sample_source {
	const struct sample_source_ops *ops;
};

#endif
