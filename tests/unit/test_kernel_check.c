// SPDX-License-Identifier: MIT
/* What pmetrics check and record say a kernel can do, from the facts its
 * probes learn: each capability's state, and words that name what was
 * refused and why (the probe that failed, the option or privilege it
 * needs), never another one's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "bpf_loader.h"
#include "kernel_check.h"

/* A kernel that can do everything, with its config read. */
static void all_works(struct kernel_facts *f)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->release, sizeof(f->release), "6.13.2");
	snprintf(f->machine, sizeof(f->machine), "aarch64");
	snprintf(f->config_source, sizeof(f->config_source), "/proc/config.gz");
	f->opt_ftrace = f->opt_uprobe_events = f->opt_bpf_events = f->opt_bpf_syscall = 'y';
	f->opt_btf = f->opt_perf_events = f->opt_sched_info = f->opt_schedstats = 'y';
	f->opt_debug_info_reduced = 'n';
	f->bpf_syscall = f->uprobe = f->cookie = f->ringbuf = f->raw_tp = f->task_iter = 1;
	f->perf_event_bpf = f->perf_events = f->bpf_loop = 1;
	f->uprobe_multi = f->uprobe_session = 1;
	f->watchpoints = 1;
	f->btf = KERNEL_BTF_OWN;
	f->root = f->initial_userns = f->initial_pidns = true;
}

static void expect(const struct capability_report *caps, enum capability c,
		   enum capability_state state, const char *says, const char *never)
{
	if (caps[c].state != state)
		fail_msg("%s: state %d, want %d (%s)", capability_name(c), caps[c].state, state,
			 caps[c].why);
	if (says && !strstr(caps[c].why, says))
		fail_msg("%s: '%s' does not say '%s'", capability_name(c), caps[c].why, says);
	if (never && strstr(caps[c].why, never))
		fail_msg("%s: '%s' says '%s'", capability_name(c), caps[c].why, never);
}

static void everything_works(void **state)
{
	struct capability_report caps[CAP_MAX];
	struct kernel_facts f;

	(void)state;
	all_works(&f);
	kernel_check_capabilities(&f, caps);
	for (int c = 0; c < CAP_MAX; c++)
		expect(caps, c, CAPABILITY_OK, NULL, NULL);
}

/* Not root: record refuses to start, so the resource series is missing
 * too, not "read from /proc". */
static void without_root_resources_are_missing(void **state)
{
	struct capability_report caps[CAP_MAX];
	struct kernel_facts f;

	(void)state;
	all_works(&f);
	f.root = false;
	f.task_iter = -EPERM;
	kernel_check_capabilities(&f, caps);
	expect(caps, CAP_RESOURCES, CAPABILITY_MISSING, "needs root", "/proc");
}

/* Root in a user namespace of its own (unshare -U -r, a container): its
 * capabilities do not count for bpf(), which says EPERM. That is not a
 * kernel built without bpf(). */
static void eperm_in_another_user_namespace_names_the_privilege(void **state)
{
	static const char want[] = "bpf() refused (EPERM): pmetrics needs CAP_BPF and CAP_PERFMON "
				   "(or CAP_SYS_ADMIN) in the initial user namespace";
	struct capability_report caps[CAP_MAX];
	struct kernel_facts f;

	(void)state;
	all_works(&f);
	f.initial_userns = false;
	f.bpf_syscall = f.uprobe = f.cookie = f.ringbuf = f.raw_tp = f.task_iter = -EPERM;
	kernel_check_capabilities(&f, caps);
	expect(caps, CAP_NATIVE_SPANS, CAPABILITY_MISSING, want, "CONFIG_BPF_SYSCALL");
	expect(caps, CAP_PYTHON_SPANS, CAPABILITY_MISSING, want, "CONFIG_BPF_SYSCALL");
	expect(caps, CAP_CHILDREN, CAPABILITY_MISSING, "no spans", NULL);
	expect(caps, CAP_RESOURCES, CAPABILITY_DEGRADED, want, "CONFIG_BPF_SYSCALL");
	/* bpf() itself may work there (unprivileged socket filters), the
	 * programs pmetrics loads still not: the same reason, not a config */
	f.bpf_syscall = 1;
	f.uprobe = f.cookie = f.raw_tp = f.task_iter = 0;
	kernel_check_capabilities(&f, caps);
	expect(caps, CAP_NATIVE_SPANS, CAPABILITY_MISSING, "in the initial user namespace",
	       "CONFIG_");
}

static void eperm_in_the_initial_namespace_is_a_policy(void **state)
{
	struct capability_report caps[CAP_MAX];
	struct kernel_facts f;

	(void)state;
	all_works(&f);
	f.bpf_syscall = f.uprobe = f.cookie = f.ringbuf = f.raw_tp = f.task_iter = -EPERM;
	kernel_check_capabilities(&f, caps);
	expect(caps, CAP_NATIVE_SPANS, CAPABILITY_MISSING, "a security policy forbids it",
	       "CONFIG_BPF_SYSCALL");
}

static void no_bpf_syscall_names_the_option(void **state)
{
	struct capability_report caps[CAP_MAX];
	struct kernel_facts f;

	(void)state;
	all_works(&f);
	f.opt_bpf_syscall = 'n';
	f.bpf_syscall = f.uprobe = f.cookie = f.ringbuf = f.raw_tp = f.task_iter = 0;
	kernel_check_capabilities(&f, caps);
	expect(caps, CAP_NATIVE_SPANS, CAPABILITY_MISSING,
	       "no bpf() system call: CONFIG_BPF_SYSCALL is not set", NULL);
}

/* Both span tracers attach a raw tracepoint on sched_process_exit: where
 * the kernel refuses one there are no spans at all, and the words say
 * which tracepoint and which option, not the uprobe chain's. */
static void a_refused_raw_tracepoint_means_no_spans(void **state)
{
	struct capability_report caps[CAP_MAX];
	struct kernel_facts f;

	(void)state;
	all_works(&f);
	f.raw_tp = 0;
	f.task_iter = 0;
	kernel_check_capabilities(&f, caps);
	expect(caps, CAP_NATIVE_SPANS, CAPABILITY_MISSING,
	       "the kernel refused a BPF raw tracepoint on sched_process_exit", "uprobe");
	expect(caps, CAP_PYTHON_SPANS, CAPABILITY_MISSING, "raw tracepoint on sched_process_exit",
	       NULL);
	expect(caps, CAP_CHILDREN, CAPABILITY_MISSING, "no spans", NULL);
	expect(caps, CAP_SPAN_CONTEXT, CAPABILITY_MISSING, "no spans", NULL);
	expect(caps, CAP_PYTHON_WATCH, CAPABILITY_MISSING, "no Python spans", NULL);
	expect(caps, CAP_RESOURCES, CAPABILITY_DEGRADED, "raw tracepoint on sched_process_exit",
	       "uprobe");
	/* with the config saying why */
	f.opt_bpf_events = 'n';
	kernel_check_capabilities(&f, caps);
	expect(caps, CAP_NATIVE_SPANS, CAPABILITY_MISSING,
	       "no BPF raw tracepoints: CONFIG_BPF_EVENTS not set (in /proc/config.gz)", NULL);
	expect(caps, CAP_RESOURCES, CAPABILITY_DEGRADED, "CONFIG_BPF_EVENTS not set", "uprobe");
}

static void without_btf_children_are_followed_less_exactly(void **state)
{
	struct capability_report caps[CAP_MAX];
	struct kernel_facts f;

	(void)state;
	all_works(&f);
	f.btf = KERNEL_BTF_NONE;
	f.task_iter = 0;
	kernel_check_capabilities(&f, caps);
	expect(caps, CAP_NATIVE_SPANS, CAPABILITY_OK, NULL, NULL);
	expect(caps, CAP_CHILDREN, CAPABILITY_DEGRADED, "main thread exits", NULL);
	expect(caps, CAP_SPAN_CONTEXT, CAPABILITY_MISSING, "the kernel has no BTF", NULL);
}

/* Before 6.13 (the Flex's 6.6) an untimed Python step traps at its
 * return too: still ok, and said. */
static void without_uprobe_sessions_python_steps_trap_twice(void **state)
{
	struct capability_report caps[CAP_MAX];
	struct kernel_facts f;

	(void)state;
	all_works(&f);
	kernel_check_capabilities(&f, caps);
	expect(caps, CAP_PYTHON_SPANS, CAPABILITY_OK, "traps once (uprobe sessions)", NULL);
	f.uprobe_session = 0;
	kernel_check_capabilities(&f, caps);
	expect(caps, CAP_PYTHON_SPANS, CAPABILITY_OK, "traps twice, at entry and return", NULL);
	expect(caps, CAP_NATIVE_SPANS, CAPABILITY_OK, NULL, NULL);
}

/* A 5.15 built with BPF on perf events has no bpf_loop(), which the BPF
 * sampler needs: sampling falls back to perf_event_open, saying why. */
static void without_bpf_loop_sampling_falls_back(void **state)
{
	struct capability_report caps[CAP_MAX];
	struct kernel_facts f;

	(void)state;
	all_works(&f);
	f.bpf_loop = 0;
	kernel_check_capabilities(&f, caps);
	expect(caps, CAP_SAMPLING, CAPABILITY_DEGRADED, "no bpf_loop()", "CONFIG_");
	expect(caps, CAP_SAMPLING, CAPABILITY_DEGRADED, "Linux 5.17", NULL);
	expect(caps, CAP_NATIVE_SPANS, CAPABILITY_OK, NULL, NULL);
}

/* The watch hook needs what Python spans need, BPF on perf events with
 * bpf_loop(), and watchpoints that fire: each missing piece named, and
 * none of them touches the other capabilities. */
static void the_watch_hook_names_what_it_lacks(void **state)
{
	static const char never_fire[] = "this machine's hardware watchpoints never fire (0 of 10 "
					 "writes seen)";
	struct capability_report caps[CAP_MAX];
	struct kernel_facts f;

	(void)state;
	all_works(&f);
	f.watchpoints = -ENOTSUP;
	snprintf(f.watch_why, sizeof(f.watch_why), "%s", never_fire);
	kernel_check_capabilities(&f, caps);
	expect(caps, CAP_PYTHON_WATCH, CAPABILITY_MISSING, never_fire, NULL);
	expect(caps, CAP_PYTHON_SPANS, CAPABILITY_OK, NULL, NULL);
	expect(caps, CAP_SAMPLING, CAPABILITY_OK, NULL, NULL);
	all_works(&f);
	f.bpf_loop = 0;
	kernel_check_capabilities(&f, caps);
	expect(caps, CAP_PYTHON_WATCH, CAPABILITY_MISSING, "no bpf_loop()", "watchpoints");
	expect(caps, CAP_PYTHON_WATCH, CAPABILITY_MISSING, "Linux 5.17", NULL);
	all_works(&f);
	f.perf_event_bpf = 0;
	f.opt_bpf_events = 'n';
	kernel_check_capabilities(&f, caps);
	expect(caps, CAP_PYTHON_WATCH, CAPABILITY_MISSING,
	       "no BPF on perf events: CONFIG_BPF_EVENTS not set (in /proc/config.gz)", NULL);
	f.config_source[0] = '\0';
	kernel_check_capabilities(&f, caps);
	expect(caps, CAP_PYTHON_WATCH, CAPABILITY_MISSING, "it needs CONFIG_BPF_EVENTS", NULL);
	/* the fire test is not part of every probe: untested is not "ok" */
	all_works(&f);
	f.watchpoints = 0;
	kernel_check_capabilities(&f, caps);
	expect(caps, CAP_PYTHON_WATCH, CAPABILITY_MISSING, "not tested", NULL);
}

/* In a PID namespace the BPF sampler's numbers (the whole system's)
 * are not pmetrics' own: perf_event_open names processes as pmetrics
 * does, so sampling goes that way, saying why. */
static void in_a_pid_namespace_sampling_uses_perf_event_open(void **state)
{
	struct capability_report caps[CAP_MAX];
	struct kernel_facts f;

	(void)state;
	all_works(&f);
	f.initial_pidns = false;
	kernel_check_capabilities(&f, caps);
	expect(caps, CAP_SAMPLING, CAPABILITY_DEGRADED, "runs in a PID namespace", NULL);
	expect(caps, CAP_NATIVE_SPANS, CAPABILITY_OK, NULL, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(everything_works),
		cmocka_unit_test(without_root_resources_are_missing),
		cmocka_unit_test(eperm_in_another_user_namespace_names_the_privilege),
		cmocka_unit_test(eperm_in_the_initial_namespace_is_a_policy),
		cmocka_unit_test(no_bpf_syscall_names_the_option),
		cmocka_unit_test(a_refused_raw_tracepoint_means_no_spans),
		cmocka_unit_test(without_btf_children_are_followed_less_exactly),
		cmocka_unit_test(without_uprobe_sessions_python_steps_trap_twice),
		cmocka_unit_test(without_bpf_loop_sampling_falls_back),
		cmocka_unit_test(in_a_pid_namespace_sampling_uses_perf_event_open),
		cmocka_unit_test(the_watch_hook_names_what_it_lacks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
