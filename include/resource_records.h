/* SPDX-License-Identifier: MIT */
/* Resource sampling: the records bpf/resources.bpf.c hands to
 * user/resources.c, and the per-thread counters a span snapshots.
 *
 * At each poll the loader runs the task iterator once (one read() loop on
 * the iterator fd) and gets one struct resource_task per thread in the
 * system: per-process totals are summed in user space, so no /proc file is
 * read per process per tick. */
#ifndef PMETRICS_RESOURCE_RECORDS_H
#define PMETRICS_RESOURCE_RECORDS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#include "span_event.h"

/* resource_task.flags */
#define RESOURCE_TASK_LEADER 0x1 /* the thread group leader: group_* valid */
#define RESOURCE_TASK_ZOMBIE 0x2 /* leader has exited (exit_state != 0) */
#define RESOURCE_TASK_NO_MM  0x4 /* no address space (exiting): rss unknown */

struct resource_task {
	__u32 tgid;
	__u32 tid;
	__u32 ppid;            /* real_parent's tgid, for --pid + children */
	__u32 flags;
	/* This thread's own accounting (task_struct). utime/stime are tick
	 * samples; runtime is the scheduler's exact on-CPU ns. */
	__u64 utime_ns;
	__u64 stime_ns;
	__u64 runtime_ns;
	/* Leader only: what exited threads left in signal_struct. */
	__u64 group_utime_ns;
	__u64 group_stime_ns;
	__u64 group_runtime_ns;
	/* Leader only. */
	__u64 start_boottime_ns; /* CLOCK_BOOTTIME ns at fork */
	__u64 exec_id;           /* self_exec_id: changes on every execve */
	__s64 rss_pages;         /* file + anon + shmem, as VmRSS counts them */
};

/* Per-thread scheduling and memory counters, read from task_struct by
 * whoever needs a snapshot (a span's entry and exit). A span's cost is
 * the difference of two snapshots of the same thread. */
struct resource_thread_snapshot {
	__u64 oncpu_ns;       /* se.sum_exec_runtime */
	__u64 runq_wait_ns;   /* sched_info.run_delay (CONFIG_SCHED_INFO) */
	__u64 nvcsw;          /* voluntary switches */
	__u64 nivcsw;         /* involuntary switches */
	__u64 migrations;     /* se.nr_migrations */
	__u64 min_flt;
	__u64 maj_flt;
	__s64 rss_pages;      /* the process's RSS at the snapshot */
};

/* With --resources and probes, each completed call is sent as this
 * record instead of a bare span_event, in the same ring: span_event comes
 * first, so the span consumer reads its part unchanged (the CSV row is
 * the same bytes) and the companion file gets the rest. The begin/end
 * snapshots are of the thread that made the call, at entry and return. */
#define SPAN_RES_NO_BEGIN 0x1 /* no entry snapshot (table full): begin = end */

struct span_resource_event {
	struct span_event span;
	struct resource_thread_snapshot begin;
	struct resource_thread_snapshot end;
	__s64 rss_peak_pages; /* the process's highest RSS seen during the call */
	__u32 flags;
	__u32 pad;
};

#endif
