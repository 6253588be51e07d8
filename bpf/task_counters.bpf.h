/* SPDX-License-Identifier: GPL-2.0 */
/* CO-RE shims for reading a task's own scheduling and memory counters,
 * shared by the resource sampler (bpf/resources.bpf.c) and the per-span
 * resource context (bpf/span_context.bpf.h). Include after vmlinux.h and
 * include/resource_records.h. */
#ifndef PMETRICS_TASK_COUNTERS_BPF_H
#define PMETRICS_TASK_COUNTERS_BPF_H

#include <bpf/bpf_core_read.h>

/* Before 6.2 ("mm: convert mm's rss stats into percpu_counter") rss_stat
 * was a struct of atomic counters; since then it is an array of
 * percpu_counter. Both layouts are spelled out as flavours, so the code
 * compiles against a vmlinux.h of either age (vmlinux/arm64 is 6.1,
 * vmlinux/x86 is 6.18) and CO-RE picks the one the running kernel has. */
struct mm_rss_stat___old {
	atomic_long_t count[4];
} __attribute__((preserve_access_index));

struct mm_struct___old {
	struct mm_rss_stat___old rss_stat;
} __attribute__((preserve_access_index));

struct mm_struct___new {
	struct percpu_counter rss_stat[4];
} __attribute__((preserve_access_index));

/* Without CONFIG_SCHED_INFO there is no run-queue accounting. */
struct task_struct___sched_info {
	struct sched_info sched_info;
} __attribute__((preserve_access_index));

/* Whether the running kernel keeps rss_stat as the old struct of atomic
 * counters. Asked of the field rather than of the type's name: CO-RE never
 * matches a struct with an array, so a kernel that still defines struct
 * mm_rss_stat but holds the per-CPU array reads the array. */
static __always_inline bool mm_rss_stat_is_atomic(void)
{
	return bpf_core_field_exists(((struct mm_struct___old *)0)->rss_stat);
}

/* The current task, read through CO-RE (bpf_get_current_task_btf()
 * would need the kernel's own BTF; CO-RE reads also work with --btf). */
static __always_inline struct task_struct *current_task(void)
{
	return (struct task_struct *)bpf_get_current_task();
}

static __always_inline __s64 counter_positive(__s64 v)
{
	return v < 0 ? 0 : v;
}

/* Before 6.2: file + anon + shmem pages from the atomic counters, exact.
 * Only to be called where mm_rss_stat_is_atomic(). */
static __always_inline __s64 mm_rss_pages_atomic(struct mm_struct *mm)
{
	struct mm_struct___old *old = (void *)mm;

	return counter_positive(BPF_CORE_READ(old, rss_stat.count[MM_FILEPAGES].counter)) +
	       counter_positive(BPF_CORE_READ(old, rss_stat.count[MM_ANONPAGES].counter)) +
	       counter_positive(BPF_CORE_READ(old, rss_stat.count[MM_SHMEMPAGES].counter));
}

/* The process's RSS in pages (file + anon + shmem), from the counters'
 * shared part: what the rss_stat tracepoint reports and /proc printed
 * from 6.2 to 6.15 (within 32 pages per CPU of the exact sum; exact
 * before 6.2). Cheap enough for a probe that runs on every call. */
static __always_inline __s64 mm_rss_pages_approx(struct mm_struct *mm)
{
	if (!mm)
		return 0;
	if (mm_rss_stat_is_atomic())
		return mm_rss_pages_atomic(mm);
	struct mm_struct___new *now = (void *)mm;

	return counter_positive(BPF_CORE_READ(now, rss_stat[MM_FILEPAGES].count)) +
	       counter_positive(BPF_CORE_READ(now, rss_stat[MM_ANONPAGES].count)) +
	       counter_positive(BPF_CORE_READ(now, rss_stat[MM_SHMEMPAGES].count));
}

/* TASK's own counters now (TASK is normally current_task()).
 * On-CPU time is the scheduler's sum_exec_runtime, brought up to date at
 * the last tick or switch: it lags the truth by at most one tick. */
static __always_inline void task_snapshot(struct task_struct *task,
					  struct resource_thread_snapshot *out)
{
	struct task_struct___sched_info *si = (void *)task;

	out->oncpu_ns = BPF_CORE_READ(task, se.sum_exec_runtime);
	out->runq_wait_ns = 0;
	if (bpf_core_field_exists(si->sched_info))
		out->runq_wait_ns = BPF_CORE_READ(si, sched_info.run_delay);
	out->nvcsw = BPF_CORE_READ(task, nvcsw);
	out->nivcsw = BPF_CORE_READ(task, nivcsw);
	out->migrations = BPF_CORE_READ(task, se.nr_migrations);
	out->min_flt = BPF_CORE_READ(task, min_flt);
	out->maj_flt = BPF_CORE_READ(task, maj_flt);
	out->rss_pages = mm_rss_pages_approx(BPF_CORE_READ(task, mm));
}

#endif
