/* SPDX-License-Identifier: MIT */
/* What this kernel can do for pmetrics, learnt by loading and attaching
 * tiny programs (bpf/kernel_probe.bpf.c) rather than from its version,
 * and explained with the kernel options involved, read from its config
 * (/proc/config.gz or /boot/config-RELEASE) when it has one. `pmetrics
 * check` prints it; `pmetrics record` runs the same probe first and
 * fails early with the same words. */
#ifndef PMETRICS_KERNEL_CHECK_H
#define PMETRICS_KERNEL_CHECK_H

#include <stdbool.h>
#include <stdio.h>

enum capability {
	CAP_NATIVE_SPANS,
	CAP_PYTHON_SPANS,
	CAP_PYTHON_WATCH,  /* --python-hook watch */
	CAP_CHILDREN,      /* following the target's children */
	CAP_SPAN_CONTEXT,  /* robot_context_resources */
	CAP_RESOURCES,     /* system_resource_data, memory_series_data */
	CAP_SAMPLING,      /* --sample, --off-cpu: BPF, or the perf_event_open fallback */
	CAP_MAX,
};

enum capability_state { CAPABILITY_OK, CAPABILITY_DEGRADED, CAPABILITY_MISSING };

struct capability_report {
	enum capability_state state;
	char why[768]; /* degraded: what is lost; missing: why, naming options;
			* ok: which way, where there are two ("bpf") */
};

/* A kernel option as its config says: 'y', 'm', 'n' (not set), or '?'
 * when there is no config to read. */
struct kernel_facts {
	char release[128], machine[128];
	char config_source[256]; /* "" when none was found */
	char opt_ftrace, opt_uprobe_events, opt_bpf_events, opt_bpf_syscall, opt_btf,
	     opt_debug_info_reduced, opt_perf_events, opt_sched_info, opt_schedstats;
	/* Probes: 1 works, 0 refused by the kernel, negative -errno when
	 * bpf() failed so (EPERM: not privileged where it counts) or it could
	 * not be tried (not root). */
	int bpf_syscall, uprobe, cookie, ringbuf, raw_tp, task_iter, perf_event_bpf, perf_events;
	/* multi-uprobe links (6.6) and uprobe sessions (6.13);
	 * PMETRICS_TEST_NO_UPROBE_MULTI=1 and _NO_UPROBE_SESSION=1 say no */
	int uprobe_multi, uprobe_session;
	/* bpf_loop() (5.17), which the BPF sampler walks Python stacks with;
	 * PMETRICS_TEST_NO_BPF_LOOP=1 says no */
	int bpf_loop;
	/* hardware watchpoints: 1 they fire, else -errno with the one-line
	 * reason in watch_why (some virtual machines accept them and never
	 * deliver a hit); 0 not tested: only kernel_check_probe_watchpoints
	 * tests, as it takes debug exceptions */
	int watchpoints;
	char watch_why[256];
	int btf;               /* enum kernel_btf (bpf_loader.h) */
	bool root;             /* may load BPF (CAP_BPF+CAP_PERFMON or CAP_SYS_ADMIN) */
	bool initial_userns;   /* in the initial user namespace, where those count */
	bool initial_pidns;    /* in the initial PID namespace, whose numbers BPF sees */
};

/* Probes the kernel; bpf_loader_init() must have run. The test uprobe
 * is removed in the background; kernel_check_release() waits for that. */
void kernel_check_probe(struct kernel_facts *f);
/* Whether hardware watchpoints fire, into F (about ten debug exceptions,
 * so only where the answer is shown). */
void kernel_check_probe_watchpoints(struct kernel_facts *f);
void kernel_check_release(void);
/* What each capability is on these facts. */
void kernel_check_capabilities(const struct kernel_facts *f, struct capability_report out[CAP_MAX]);
/* "native spans", ... */
const char *capability_name(enum capability c);
/* "ok", "degraded: WHAT", "missing: WHY" */
void capability_format(const struct capability_report *r, char *out, size_t len);

#endif
