// SPDX-License-Identifier: GPL-2.0
/* Resource sampling, kernel side.
 *
 * One task iterator: user space creates an iterator fd per poll and reads
 * it to the end; every thread in the system becomes one struct
 * resource_task written into the seq_file. That single pass replaces the
 * per-process /proc/PID/{stat,status,statm} reads a psutil tracker does at
 * every tick. No tracepoint, so it works without tracefs. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "resource_records.h"
#include "task_counters.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define PF_KTHREAD 0x00200000

/* Possible CPUs (set before load): the per-CPU parts of a counter. */
const volatile __u32 nr_cpus = 1;

#define MAX_CPUS 512

/* A per-CPU array of one slot, used only to learn where each CPU's copy
 * of per-CPU memory lives: the offset of CPU N's copy of this slot from
 * the slot's per-CPU base is CPU N's per-CPU offset, the same one that
 * turns a percpu_counter's `counters` into CPU N's delta. (The kernel's
 * own __per_cpu_offset is not reachable: no kallsyms for data here.) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} cpu_offset_probe SEC(".maps");

static long cpu_offsets[MAX_CPUS];
static __u32 n_cpu_offsets; /* 0: not learnt (yet, or unsupported) */

/* A pointer's value as a plain number: the verifier refuses arithmetic
 * on map pointers, so the bits are copied out through the stack. */
static __u64 address_of(void *p)
{
	__u64 v = 0;

	bpf_probe_read_kernel(&v, sizeof(v), &p);
	return v;
}

static void learn_cpu_offsets(void)
{
	__u64 array, base = 0;
	__u32 key = 0, cpu;

	/* bpf_map_lookup_percpu_elem() came in 5.19. */
	if (n_cpu_offsets || !bpf_core_enum_value_exists(enum bpf_func_id,
							 BPF_FUNC_map_lookup_percpu_elem))
		return;
	/* The verifier lets a map pointer be read only within struct
	 * bpf_array's fixed part; pptrs[0] (the slot's per-CPU base) lies
	 * past it, so it is read by address. */
	array = address_of(&cpu_offset_probe);
	bpf_probe_read_kernel(&base, sizeof(base),
			      (void *)(array + bpf_core_field_offset(struct bpf_array, pptrs)));
	if (!base)
		return;
	for (cpu = 0; cpu < MAX_CPUS && cpu < nr_cpus; cpu++) {
		char *copy = bpf_map_lookup_percpu_elem(&cpu_offset_probe, &key, cpu);

		if (!copy)
			break;
		cpu_offsets[cpu] = (long)(address_of(copy) - base);
	}
	n_cpu_offsets = cpu;
}

/* The exact value, as /proc/PID/status and statm print it since 6.16
 * ("mm: fix the inaccurate memory statistics issue for users"): the
 * shared count plus every CPU's unfolded delta. (6.2 to 6.15 print the
 * shared count alone; the two differ by less than the counter batch,
 * 32 pages, per CPU. Without the offsets we report the shared count.) */
static __s64 percpu_counter_sum_positive(struct percpu_counter *pc)
{
	__s64 sum = BPF_CORE_READ(pc, count);
	char *counters = (char *)BPF_CORE_READ(pc, counters);

	for (__u32 cpu = 0; cpu < MAX_CPUS && cpu < n_cpu_offsets && counters; cpu++) {
		__s32 delta = 0;

		bpf_probe_read_kernel(&delta, sizeof(delta), counters + cpu_offsets[cpu]);
		sum += delta;
	}
	return counter_positive(sum);
}

/* VmRSS = file + anon + shmem pages (not swap entries). */
static __s64 mm_rss_pages(struct mm_struct *mm)
{
	if (mm_rss_stat_is_atomic())
		return mm_rss_pages_atomic(mm);
	struct mm_struct___new *now = (void *)mm;

	return percpu_counter_sum_positive(&now->rss_stat[MM_FILEPAGES]) +
	       percpu_counter_sum_positive(&now->rss_stat[MM_ANONPAGES]) +
	       percpu_counter_sum_positive(&now->rss_stat[MM_SHMEMPAGES]);
}

static void fill_leader(struct resource_task *rec, struct task_struct *task)
{
	struct signal_struct *sig = task->signal;
	struct mm_struct *mm = task->mm;

	rec->flags |= RESOURCE_TASK_LEADER;
	if (task->exit_state)
		rec->flags |= RESOURCE_TASK_ZOMBIE;
	rec->group_utime_ns = BPF_CORE_READ(sig, utime);
	rec->group_stime_ns = BPF_CORE_READ(sig, stime);
	rec->group_runtime_ns = BPF_CORE_READ(sig, sum_sched_runtime);
	rec->start_boottime_ns = task->start_boottime;
	rec->exec_id = task->self_exec_id;
	if (mm)
		rec->rss_pages = mm_rss_pages(mm);
	else
		rec->flags |= RESOURCE_TASK_NO_MM;
}

/* The loader's PID namespace, whose numbers its /proc shows (record
 * refuses to run with a /proc of another), found from the loader, the
 * current task while it reads the iterator: its depth (0 for the
 * initial namespace) and identity. The iterator walks the tasks of that
 * namespace only. */
struct loader_pidns {
	__u32 level;
	struct pid_namespace *ns;
};

static void loader_pidns_of_current(struct loader_pidns *out)
{
	struct pid *pid = BPF_CORE_READ((struct task_struct *)bpf_get_current_task(), thread_pid);
	__u32 level = BPF_CORE_READ(pid, level) & 31;
	struct upid upid = {};


	/* (the index in a local: inside bpf_core_read() every member
	 * access is relocated, a field of our own struct too) */
	bpf_core_read(&upid, sizeof(upid), &pid->numbers[level]);
	out->level = level;
	out->ns = upid.ns;
}

/* PID's number in the loader's namespace, the one its /proc knows; 0
 * when the process is not in that namespace. */
static __u32 pid_nr_seen(struct pid *pid, const struct loader_pidns *loader)
{
	__u32 level = loader->level & 31;
	struct upid upid;

	if (!pid || BPF_CORE_READ(pid, level) < level)
		return 0;
	if (bpf_core_read(&upid, sizeof(upid), &pid->numbers[level]))
		return 0;
	return upid.ns == loader->ns ? (__u32)upid.nr : 0;
}

/* The task's ids as the loader sees them: the kernel's own when it runs
 * in the initial namespace; false for a task its namespace hides. */
static bool ids_seen(struct task_struct *task, struct resource_task *rec)
{
	struct loader_pidns loader;

	loader_pidns_of_current(&loader);
	if (!loader.level) {
		rec->tgid = task->tgid;
		rec->tid = task->pid;
		rec->ppid = BPF_CORE_READ(task, real_parent, tgid);
		return true;
	}
	rec->tgid = pid_nr_seen(BPF_CORE_READ(task, group_leader, thread_pid), &loader);
	rec->tid = pid_nr_seen(BPF_CORE_READ(task, thread_pid), &loader);
	/* 0, as /proc says, for the namespace's first process */
	rec->ppid = pid_nr_seen(BPF_CORE_READ(task, real_parent, group_leader, thread_pid), &loader);
	return rec->tgid && rec->tid;
}

SEC("iter/task")
int resource_tasks(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct resource_task rec = {};

	if (!task || (task->flags & PF_KTHREAD))
		return 0;
	learn_cpu_offsets();
	if (!ids_seen(task, &rec))
		return 0;
	rec.utime_ns = task->utime;
	rec.stime_ns = task->stime;
	rec.runtime_ns = task->se.sum_exec_runtime;
	if (rec.tid == rec.tgid)
		fill_leader(&rec, task);
	/* When the record does not fit, the iterator shows this task again
	 * at the next read(): nothing is lost. */
	bpf_seq_write(ctx->meta->seq, &rec, sizeof(rec));
	return 0;
}
