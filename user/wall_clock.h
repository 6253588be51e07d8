/* SPDX-License-Identifier: MIT */
/* The kernel's CLOCK_MONOTONIC (what bpf_ktime_get_ns() and perf's
 * clockid read) and its conversion to CLOCK_REALTIME. The offset between
 * the two only moves when the wall clock is stepped, so it is
 * re-measured on every drain rather than once at start.
 *
 * pmetrics may run in a time namespace of its own (a container, a
 * restored checkpoint: Linux 5.6+). Its CLOCK_MONOTONIC and
 * CLOCK_BOOTTIME are then the kernel's plus that namespace's offsets,
 * and so are the times /proc shows it (a process's start, btime), while
 * BPF sees the kernel's own: the offsets are taken out here, once. */
#ifndef PMETRICS_WALL_CLOCK_H
#define PMETRICS_WALL_CLOCK_H

#include <stdint.h>

struct wall_clock {
	int64_t offset_ns; /* realtime - monotonic */
};

/* What a time namespace adds to the kernel's clocks, in ns. */
struct time_ns_offsets {
	int64_t monotonic_ns;
	int64_t boottime_ns;
};

/* Reads /proc/self/timens_offsets TEXT ("monotonic SEC NSEC" and
 * "boottime SEC NSEC" lines) into OUT; a clock it does not name keeps 0.
 * -EINVAL when a line does not parse. */
int time_ns_parse_offsets(const char *text, struct time_ns_offsets *out);
/* pmetrics' own namespace's offsets, read once (0 without time
 * namespaces, or in the initial one). */
const struct time_ns_offsets *time_ns_offsets(void);

/* The kernel's CLOCK_MONOTONIC: BPF's and perf's clock. */
uint64_t monotonic_ns(void);
uint64_t realtime_ns(void);
/* A kernel CLOCK_BOOTTIME time (a task's start_boottime, read by BPF) as
 * this namespace's /proc tells it. */
uint64_t boottime_as_seen_here(uint64_t kernel_boottime_ns);
/* Measures the offset, bracketing the realtime read between two
 * monotonic reads and keeping the tightest of a few tries. */
void wall_clock_sync(struct wall_clock *c);
uint64_t wall_clock_from_mono(const struct wall_clock *c, uint64_t mono_ns);

#endif
