/* SPDX-License-Identifier: MIT */
/* CPU and off-CPU sampling for `pmetrics record --sample[=HZ]` and
 * `--off-cpu`: samples of the target and its followed children, each
 * with its stack (native, kernel and Python frames) and the span states
 * active on its thread, written to the capture's profile files
 * (user/profile/profile_writer.h) for `pmetrics report`.
 *
 * Two ways to take samples, picked at open:
 *   - BPF (bpf/sampler.bpf.c): a perf_event program on a CPU clock per
 *     CPU and sched_switch; stacks are taken in the kernel at the sample
 *     (native frames by frame pointers, Python frames by the walker of
 *     include/python_walk.h);
 *   - perf_event_open alone, where the kernel runs no BPF on perf events
 *     (no CONFIG_BPF_EVENTS): the kernel copies registers and the top of
 *     the user stack into a ring, native frames come from the frame
 *     pointer chain or, where it breaks, DWARF call frame information
 *     (libdw), and the Python stack is read from the process
 *     (process_vm_readv, else /proc/PID/mem) as soon as the sample
 *     arrives.
 *
 * The span states of a sample come from its stack: a state is active
 * when its probed function is on it (native probes by function, py:
 * probes by their Python frame). A coroutine's frame is on its thread's
 * stack only while one of its steps runs, so a suspended coroutine's
 * off-CPU time is not its own: the thread's wait is the event loop's.
 *
 * The sampler runs in a thread of its own from sampler_start() to
 * sampler_stop(): samples of the perf path are read while the thread is
 * still where the sample found it. */
#ifndef PMETRICS_SAMPLER_H
#define PMETRICS_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "library_resolver.h"
#include "probe_spec.h"

#define SAMPLER_DEFAULT_HZ 99
/* Above this the sampler costs more than it tells. On a 2-core VM at
 * 100 kHz (the kernel's default perf_event_max_sample_rate) /bin/true took
 * 2.8 s and 98 % of its samples were lost to a full ring; at 10 kHz a
 * CPU-bound C program lost 0.3 % (each sample with its 8 KiB stack copy),
 * a Python one none. */
#define SAMPLER_MAX_HZ 10000

enum sampler_path { SAMPLER_PATH_BPF, SAMPLER_PATH_PERF };

struct sampler_config {
	unsigned int hz;           /* on-CPU samples per second; 0: none */
	bool off_cpu;              /* off-CPU intervals */
	pid_t pid;                 /* the target */
	bool held;                 /* a launched target not exec'd yet: its
				    * samples count from its exec on */
	const struct target_view *view; /* for the native probes' files */
	bool follow_children;
	const struct probe_spec *probes; /* the capture's probes: span states */
	int n_probes;
	const char *output_dir;
	unsigned long long ringbuf_bytes;
	bool verbose;
	/* BPF on perf events works here (pmetrics check's "CPU sampling"
	 * capability); else the perf_event_open path. */
	bool use_bpf;
	/* The native probes' calls in progress (the span engine's
	 * call_stacks map: struct call_stack by thread ID), whose return
	 * addresses name a probed function's caller where the kernel
	 * leaves its trampoline in a sample's stack and says nothing more;
	 * 0 or below: none. */
	int call_stacks_fd;
};

struct sampler;

/* Opens the profile files, loads and attaches by the path C->use_bpf
 * picks (nothing is sampled before sampler_start()).
 * Returns 0, or -1 after a one-line error. */
int sampler_open(struct sampler **out, const struct sampler_config *c);
/* Starts the sampling thread. Returns 0 or -1 (error said). */
int sampler_start(struct sampler *s);
/* Stops sampling, takes what is queued, writes the rest. Returns 0, or
 * -errno of the first write error. */
int sampler_stop(struct sampler *s);
/* After sampler_stop(): the summary lines (samples, losses). */
void sampler_summary(const struct sampler *s, FILE *out);
void sampler_close(struct sampler *s);
/* After a failed start: closes and removes the files it created. */
void sampler_discard(struct sampler *s);

enum sampler_path sampler_path(const struct sampler *s);

/* Parses --sample's HZ: a whole number from 1 to MAX_RATE. Returns 0,
 * or -1 with a one-line reason naming the limit. */
int sampler_parse_hz(const char *arg, unsigned int max_rate, unsigned int *hz, char *err,
		     size_t errlen);
/* The highest --sample: SAMPLER_MAX_HZ, or the kernel's
 * perf_event_max_sample_rate when lower. */
unsigned int sampler_max_rate(void);

#endif
