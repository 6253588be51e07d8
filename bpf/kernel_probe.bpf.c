// SPDX-License-Identifier: GPL-2.0
/* Tiny programs `pmetrics check` (and record, before it starts) loads and
 * attaches one at a time to learn what this kernel can do, instead of
 * guessing from its version: each one needs exactly one kernel feature.
 * No kernel struct is read, so it loads on kernels without BTF too (the
 * Makefile builds it without CO-RE). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

/* [0]: uprobe hits, [1]: the cookie the last hit carried */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} probe_hits SEC(".maps");

static __always_inline void store(__u32 key, __u64 value)
{
	__u64 *v = bpf_map_lookup_elem(&probe_hits, &key);

	if (v)
		*v = value;
}

/* BPF on uprobes: CONFIG_BPF_EVENTS and CONFIG_UPROBE_EVENTS. */
SEC("uprobe")
int probe_uprobe(struct pt_regs *ctx)
{
	__u32 key = 0;
	__u64 *hits = bpf_map_lookup_elem(&probe_hits, &key);

	if (hits)
		__sync_fetch_and_add(hits, 1);
	return 0;
}

/* Attach cookies (5.15): which probe of many a hit belongs to. */
SEC("uprobe")
int probe_cookie(struct pt_regs *ctx)
{
	store(1, bpf_get_attach_cookie(ctx));
	return 0;
}

/* Raw tracepoints: thread exits and forks without the kernel's BTF. */
SEC("raw_tp/sched_process_exit")
int probe_raw_tp(void *ctx)
{
	return 0;
}

/* Task iterators (5.8): need the kernel's own BTF. */
SEC("iter/task")
int probe_task_iter(void *ctx)
{
	return 0;
}

/* BPF on perf events: CPU sampling in the kernel. */
SEC("perf_event")
int probe_perf_event(void *ctx)
{
	return 0;
}
