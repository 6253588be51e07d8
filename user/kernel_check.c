// SPDX-License-Identifier: MIT
/* Learning what the kernel can do; see kernel_check.h. */
#include "kernel_check.h"
#include "bpf_loader.h"
#include "pywatch.h"
#include "span_engine.h"
#include "test_setting.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <zlib.h>

#include "kernel_probe.skel.h"

/* ---- the kernel's config ------------------------------------------- */

struct option_slot {
	const char *name;
	size_t offset;
};

#define SLOT(field, opt) { opt, offsetof(struct kernel_facts, field) }
static const struct option_slot options[] = {
	SLOT(opt_ftrace, "CONFIG_FTRACE"),
	SLOT(opt_uprobe_events, "CONFIG_UPROBE_EVENTS"),
	SLOT(opt_bpf_events, "CONFIG_BPF_EVENTS"),
	SLOT(opt_bpf_syscall, "CONFIG_BPF_SYSCALL"),
	SLOT(opt_btf, "CONFIG_DEBUG_INFO_BTF"),
	SLOT(opt_debug_info_reduced, "CONFIG_DEBUG_INFO_REDUCED"),
	SLOT(opt_perf_events, "CONFIG_PERF_EVENTS"),
	SLOT(opt_sched_info, "CONFIG_SCHED_INFO"),
	SLOT(opt_schedstats, "CONFIG_SCHEDSTATS"),
};
#define N_OPTIONS (sizeof(options) / sizeof(options[0]))

/* One config line: "CONFIG_X=y", "CONFIG_X=m" or "# CONFIG_X is not set". */
static void config_line(struct kernel_facts *f, const char *line)
{
	for (size_t i = 0; i < N_OPTIONS; i++) {
		size_t n = strlen(options[i].name);
		char *slot = (char *)f + options[i].offset;

		if (strncmp(line, options[i].name, n) == 0 && line[n] == '=')
			*slot = line[n + 1] == 'm' ? 'm' : 'y';
	}
}

/* Reads /proc/config.gz, else /boot/config-RELEASE (both gzip or plain:
 * zlib reads either). Options it does not name are not set. */
static void read_config(struct kernel_facts *f)
{
	char boot[256], line[512];
	const char *source = "/proc/config.gz";
	gzFile gz = gzopen(source, "rb");

	for (size_t i = 0; i < N_OPTIONS; i++)
		*((char *)f + options[i].offset) = '?';
	if (!gz) {
		snprintf(boot, sizeof(boot), "/boot/config-%s", f->release);
		source = boot;
		gz = gzopen(source, "rb");
	}
	if (!gz)
		return;
	snprintf(f->config_source, sizeof(f->config_source), "%s", source);
	for (size_t i = 0; i < N_OPTIONS; i++)
		*((char *)f + options[i].offset) = 'n';
	while (gzgets(gz, line, sizeof(line)))
		config_line(f, line);
	gzclose(gz);
}

/* ---- the probes ----------------------------------------------------- */

static bool may_load_bpf(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];

#define HAS(cap) (data[(cap) / 32].effective & (1u << ((cap) % 32)))
	if (syscall(SYS_capget, &hdr, data) != 0)
		return geteuid() == 0;
	return HAS(CAP_SYS_ADMIN) || (HAS(CAP_BPF) && HAS(CAP_PERFMON));
#undef HAS
}

/* Is this process in the initial user namespace? Its uid_map then maps
 * every id to itself; in another one (a container, unshare -U) it maps a
 * range. The capabilities bpf() needs count only in the initial one. */
static bool in_initial_user_namespace(void)
{
	unsigned long inner, outer, count;
	FILE *f = fopen("/proc/self/uid_map", "re");
	int lines = 0, fields = 0;
	char line[128];

	if (!f)
		return true; /* no user namespaces in this kernel */
	while (fgets(line, sizeof(line), f))
		if (lines++ == 0)
			fields = sscanf(line, "%lu %lu %lu", &inner, &outer, &count);
	fclose(f);
	return lines == 1 && fields == 3 && inner == 0 && outer == 0 && count == 4294967295ul;
}

/* Does bpf() load the smallest program (a socket filter returning 0)?
 * 1 yes; 0 no bpf() at all (ENOSYS); else -errno, kept to say why
 * (EPERM: not privileged where it counts). */
static int try_bpf_syscall(void)
{
	int fd = bpf_loader_empty_program(BPF_PROG_TYPE_SOCKET_FILTER, 0, NULL);

	if (fd >= 0) {
		close(fd);
		return 1;
	}
	return fd == -ENOSYS ? 0 : fd;
}

/* libbpf's probes: 1 supported, 0 not, < 0 could not tell. */
static int probed(int r)
{
	return r > 0 ? 1 : r;
}

/* The function a uprobe is placed on to see it fire. */
__attribute__((noinline)) int kernel_check_uprobe_target(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

/* File offset of ADDR in the mapping of /proc/self/exe that holds it. */
static int own_file_offset(uintptr_t addr, uint64_t *off)
{
	char line[4352];
	FILE *f = fopen("/proc/self/maps", "re");
	int ret = -ENOENT;

	while (f && ret && fgets(line, sizeof(line), f)) {
		unsigned long start, end;
		unsigned long long file_off;

		if (sscanf(line, "%lx-%lx %*s %llx", &start, &end, &file_off) == 3 &&
		    addr >= start && addr < end) {
			*off = addr - start + file_off;
			ret = 0;
		}
	}
	if (f)
		fclose(f);
	return ret;
}

/* Opens the probe object with only PROG to load. */
static struct kernel_probe_bpf *open_probe(const char *prog)
{
	struct kernel_probe_bpf *skel = kernel_probe_bpf__open_opts(bpf_loader_open_opts());
	struct bpf_program *p;

	if (!skel)
		return NULL;
	bpf_object__for_each_program(p, skel->obj)
		bpf_program__set_autoload(p, strcmp(bpf_program__name(p), prog) == 0);
	return skel;
}

/* Loads PROG alone (and attaches it where its section says, ATTACH):
 * 1 works, 0 refused. */
static int try_program(const char *prog, bool attach)
{
	struct kernel_probe_bpf *skel = open_probe(prog);
	struct bpf_link *link = NULL;
	int ok = 0;

	if (skel && kernel_probe_bpf__load(skel) == 0) {
		ok = 1;
		if (attach) {
			link = bpf_program__attach(bpf_object__find_program_by_name(skel->obj, prog));
			ok = link != NULL;
		}
	}
	bpf_link__destroy(link);
	kernel_probe_bpf__destroy(skel);
	return ok;
}

/* Removing a uprobe waits for the kernel's grace periods (0.1-0.2 s on
 * this project's machine): the test probe is taken down in a thread of
 * its own, beside the capture's start rather than before it. */
struct uprobe_teardown {
	struct kernel_probe_bpf *skel;
	struct bpf_link *link;
	pthread_t thread;
	bool running;
};
static struct uprobe_teardown teardown;

static void *teardown_run(void *arg)
{
	struct uprobe_teardown *t = arg;

	bpf_link__destroy(t->link);
	kernel_probe_bpf__destroy(t->skel);
	return NULL;
}

/* The thread takes no signal: record waits for SIGINT/SIGTERM in its
 * main thread, which a signal delivered here would not wake. */
static void teardown_start(struct kernel_probe_bpf *skel, struct bpf_link *link)
{
	sigset_t all, old;

	teardown.skel = skel;
	teardown.link = link;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	teardown.running = link && pthread_create(&teardown.thread, NULL, teardown_run, &teardown) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!teardown.running)
		teardown_run(&teardown);
}

void kernel_check_release(void)
{
	if (teardown.running)
		pthread_join(teardown.thread, NULL);
	teardown.running = false;
}

/* An empty program for multi-uprobe links of attach type TYPE. */
static int empty_multi_program(int type)
{
	return bpf_loader_empty_program(BPF_PROG_TYPE_KPROBE, type, "pm_multi_test");
}

/* Multi-uprobe links that filter by process. Asked of the kernel without
 * placing a uprobe: a link on "/" (a directory) fails with EBADF where
 * the attach type exists; the first kernels with it (6.6-6.9 before a
 * fix) filtered by thread rather than by process, and only fixed ones
 * refuse an impossible PID (-1) with EINVAL. A thread filter would lose
 * every other thread's calls, so such a kernel counts as without. */
static int try_uprobe_multi(void)
{
	const __u64 offset = 0;
	int prog, ok;

	if (test_setting_on("PMETRICS_TEST_NO_UPROBE_MULTI") || (prog = empty_multi_program(48)) < 0)
		return 0;
	ok = bpf_uprobe_multi_link(prog, "/", &offset, 1, UPROBE_ENTRY, 0) == -EBADF &&
	     bpf_uprobe_multi_link(prog, "/", &offset, 1, UPROBE_ENTRY, (__u32)-1) == -EINVAL;
	close(prog);
	return ok;
}

/* Uprobe sessions, asked the same way: a kernel without them refuses the
 * attach type (EINVAL) before it looks at the path. */
static int try_uprobe_session(void)
{
	const __u64 offset = 0;
	int prog, ok;

	if (test_setting_on("PMETRICS_TEST_NO_UPROBE_SESSION") || (prog = empty_multi_program(57)) < 0)
		return 0;
	ok = bpf_uprobe_multi_link(prog, "/", &offset, 1, UPROBE_SESSION, 0) == -EBADF;
	close(prog);
	return ok;
}

/* A uprobe on kernel_check_uprobe_target, in this process only: does it
 * load, attach and fire? */
static int try_uprobe(void)
{
	struct kernel_probe_bpf *skel = open_probe("probe_uprobe");
	struct bpf_link *link = NULL;
	uint64_t off, hits = 0;
	__u32 key = 0;
	int ok = 0;

	if (skel && own_file_offset((uintptr_t)kernel_check_uprobe_target, &off) == 0 &&
	    kernel_probe_bpf__load(skel) == 0)
		link = bpf_program__attach_uprobe(skel->progs.probe_uprobe, false, 0,
						  "/proc/self/exe", (size_t)off);
	if (link) {
		kernel_check_uprobe_target(1);
		bpf_map__lookup_elem(skel->maps.probe_hits, &key, sizeof(key), &hits,
				     sizeof(hits), 0);
		ok = hits > 0;
	}
	teardown_start(skel, link);
	return ok;
}

/* Can this process open a perf event (software clock) on itself? */
static int try_perf_events(void)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_TASK_CLOCK,
		.disabled = 1,
	};
	int fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);

	if (fd < 0)
		return errno == ENOENT || errno == ENOSYS ? 0 : -errno;
	close(fd);
	return 1;
}

/* A BPF program on a perf event (a CPU clock of this process): loads and
 * attaches where the kernel has CONFIG_BPF_EVENTS. */
static int try_perf_event_program(void)
{
	struct kernel_probe_bpf *skel = open_probe("probe_perf_event");
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = 10000000,
		.disabled = 1,
	};
	struct bpf_link *link = NULL;
	int fd = -1, ok = 0;

	if (skel && kernel_probe_bpf__load(skel) == 0)
		fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd >= 0) {
		link = bpf_program__attach_perf_event(skel->progs.probe_perf_event, fd);
		ok = link != NULL;
		if (!link)
			close(fd);
	}
	bpf_link__destroy(link);
	kernel_probe_bpf__destroy(skel);
	return ok;
}

static int try_bpf_loop(void)
{
	if (test_setting_on("PMETRICS_TEST_NO_BPF_LOOP"))
		return 0;
	return probed(libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_loop, NULL));
}

void kernel_check_probe_watchpoints(struct kernel_facts *f)
{
	f->watchpoints = pywatch_fire_check(f->watch_why, sizeof(f->watch_why));
	if (f->watchpoints == 0)
		f->watchpoints = 1;
}

void kernel_check_probe(struct kernel_facts *f)
{
	struct utsname u;

	memset(f, 0, sizeof(*f));
	if (uname(&u) == 0) {
		snprintf(f->release, sizeof(f->release), "%s", u.release);
		snprintf(f->machine, sizeof(f->machine), "%s", u.machine);
	}
	read_config(f);
	f->btf = bpf_loader_btf();
	f->root = may_load_bpf();
	f->initial_userns = in_initial_user_namespace();
	f->initial_pidns = !span_engine_in_pidns(&(uint64_t){ 0 }, &(uint64_t){ 0 });
	f->perf_events = try_perf_events();
	if (!f->root) {
		f->bpf_syscall = f->uprobe = f->cookie = f->ringbuf = f->raw_tp = f->task_iter =
			f->perf_event_bpf = -EPERM;
		return;
	}
	f->bpf_syscall = try_bpf_syscall();
	if (f->bpf_syscall != 1) {
		f->uprobe = f->cookie = f->ringbuf = f->raw_tp = f->task_iter = f->perf_event_bpf =
			f->bpf_syscall;
		return;
	}
	f->ringbuf = probed(libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL));
	f->perf_event_bpf = try_perf_event_program();
	f->bpf_loop = f->perf_event_bpf == 1 ? try_bpf_loop() : 0;
	kernel_check_release();
	f->uprobe = try_uprobe();
	f->uprobe_multi = f->uprobe == 1 ? try_uprobe_multi() : 0;
	f->uprobe_session = f->uprobe_multi == 1 ? try_uprobe_session() : 0;
	f->cookie = try_program("probe_cookie", false);
	f->raw_tp = try_program("probe_raw_tp", true);
	f->task_iter = f->btf == KERNEL_BTF_OWN ? try_program("probe_task_iter", true) : 0;
}

/* ---- what it means ---------------------------------------------------- */

const char *capability_name(enum capability c)
{
	static const char *const names[CAP_MAX] = {
		[CAP_NATIVE_SPANS] = "native spans",
		[CAP_PYTHON_SPANS] = "Python spans",
		[CAP_PYTHON_WATCH] = "Python watch hook",
		[CAP_CHILDREN] = "following children",
		[CAP_SPAN_CONTEXT] = "span context",
		[CAP_RESOURCES] = "resource series",
		[CAP_SAMPLING] = "CPU sampling",
	};

	return (unsigned)c < CAP_MAX ? names[c] : "?";
}

/* Appends to OUT the options of NAMES that the config says are off. */
static void unset_options(const struct kernel_facts *f, const char *const *names, int n,
			  char *out, size_t len)
{
	size_t used = strlen(out);

	for (int i = 0; i < n; i++)
		for (size_t k = 0; k < N_OPTIONS; k++)
			if (strcmp(options[k].name, names[i]) == 0 &&
			    *((const char *)f + options[k].offset) == 'n' && used < len)
				used += (size_t)snprintf(out + used, len - used, "%s%s",
							 used ? ", " : "", names[i]);
}

#define NEEDED_CAPS "CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN)"

/* Why a program was refused in another user namespace than the initial
 * one: the capabilities it takes count only there. */
static void userns_why(const struct kernel_facts *f, char *out, size_t len)
{
	snprintf(out, len, "%sneeds " NEEDED_CAPS " in the initial user namespace, and this "
		 "process is in another one (a container, unshare -U): run pmetrics outside it",
		 f->bpf_syscall == -EPERM ? "bpf() refused (EPERM): pmetrics " : "pmetrics ");
}

/* Why BPF on uprobes does not work here. */
static void uprobe_why(const struct kernel_facts *f, char *out, size_t len)
{
	static const char *const chain[] = { "CONFIG_FTRACE", "CONFIG_UPROBE_EVENTS", "CONFIG_BPF_EVENTS" };
	char off[256] = "";

	if (!f->initial_userns)
		return userns_why(f, out, len);
	if (f->config_source[0])
		unset_options(f, chain, 3, off, sizeof(off));
	if (off[0])
		snprintf(out, len, "no BPF on uprobes: %s not set (in %s); build the kernel with "
			 "dist/kernel/pmetrics.cfg", off, f->config_source);
	else
		snprintf(out, len, "the kernel refused a BPF uprobe program (it needs "
			 "CONFIG_BPF_EVENTS and CONFIG_UPROBE_EVENTS, both under CONFIG_FTRACE); "
			 "see dist/kernel/pmetrics.cfg");
}

/* Why nothing at all: not root, not privileged where it counts, no
 * bpf(). Empty when none of them. kernel.unprivileged_bpf_disabled is
 * never the answer: it lets unprivileged users load socket filters, not
 * the uprobe and tracing programs pmetrics loads. */
static void basic_why(const struct kernel_facts *f, char *out, size_t len)
{
	out[0] = '\0';
	if (!f->root)
		snprintf(out, len, "needs root (CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN)");
	else if (f->bpf_syscall != 1 && !f->initial_userns)
		userns_why(f, out, len);
	else if (f->bpf_syscall == -EPERM)
		snprintf(out, len, "bpf() refused (EPERM): pmetrics needs " NEEDED_CAPS " in the "
			 "initial user namespace, and has them, so a security policy forbids it "
			 "(SELinux, AppArmor, a seccomp filter)");
	else if (f->bpf_syscall == 0)
		snprintf(out, len, "no bpf() system call: CONFIG_BPF_SYSCALL%s",
			 f->opt_bpf_syscall == 'n' ? " is not set" : " is off or disabled");
	else if (f->bpf_syscall != 1)
		snprintf(out, len, "bpf() failed: %s", strerror(-f->bpf_syscall));
}

/* Why BPF on raw tracepoints does not work here. Both span tracers
 * attach one on sched_process_exit (threads that end with calls
 * pending), the native one also on sched_process_fork (children). */
static void raw_tp_why(const struct kernel_facts *f, char *out, size_t len)
{
	if (!f->initial_userns)
		userns_why(f, out, len);
	else if (f->config_source[0] && f->opt_bpf_events == 'n')
		snprintf(out, len, "no BPF raw tracepoints: CONFIG_BPF_EVENTS not set (in %s); build "
			 "the kernel with dist/kernel/pmetrics.cfg", f->config_source);
	else
		snprintf(out, len, "the kernel refused a BPF raw tracepoint on sched_process_exit "
			 "(it needs CONFIG_BPF_EVENTS, Linux 4.17 or newer)");
}

static void set(struct capability_report *r, enum capability_state s, const char *why)
{
	r->state = s;
	snprintf(r->why, sizeof(r->why), "%s", why);
}

static void spans_report(const struct kernel_facts *f, struct capability_report *r)
{
	char why[512];

	basic_why(f, why, sizeof(why));
	if (why[0])
		return set(r, CAPABILITY_MISSING, why);
	if (f->uprobe != 1) {
		uprobe_why(f, why, sizeof(why));
		return set(r, CAPABILITY_MISSING, why);
	}
	if (f->cookie != 1)
		return set(r, CAPABILITY_MISSING, "no BPF attach cookies (they came in Linux 5.15)");
	if (f->ringbuf != 1)
		return set(r, CAPABILITY_MISSING, "no BPF ring buffer (it came in Linux 5.8)");
	if (f->raw_tp != 1) {
		raw_tp_why(f, why, sizeof(why));
		return set(r, CAPABILITY_MISSING, why);
	}
	set(r, CAPABILITY_OK, "");
}

/* Python spans need what native ones do; what the kernel adds is how
 * much an untimed Python step costs: with uprobe sessions its entry
 * program declines the return, so it traps once, else twice. */
static void python_spans_report(const struct kernel_facts *f,
				const struct capability_report *spans,
				struct capability_report *r)
{
	*r = *spans;
	if (r->state != CAPABILITY_OK)
		return;
	if (f->uprobe_session == 1)
		set(r, CAPABILITY_OK, "an untimed Python step traps once (uprobe sessions)");
	else
		set(r, CAPABILITY_OK, "an untimed Python step traps twice, at entry and return "
		    "(uprobe sessions need Linux 6.13)");
}

/* Why CO-RE cannot read kernel structs, or why there is no task
 * iterator (OWN_ONLY: a --btf file does not do). */
static void btf_why(const struct kernel_facts *f, bool own_only, char *out, size_t len)
{
	const char *reduced = f->opt_debug_info_reduced == 'y' ? " (CONFIG_DEBUG_INFO_REDUCED=y "
								  "rules it out)" : "";

	snprintf(out, len, "the kernel has no BTF (%s%s)%s",
		 f->opt_btf == 'n' ? "CONFIG_DEBUG_INFO_BTF is not set"
				   : "no /sys/kernel/btf/vmlinux: CONFIG_DEBUG_INFO_BTF", reduced,
		 own_only ? "" : "; or give --btf FILE");
}

static void context_report(const struct kernel_facts *f, const struct capability_report *spans,
			   struct capability_report *r)
{
	char why[600];

	if (spans->state == CAPABILITY_MISSING)
		return set(r, CAPABILITY_MISSING, "no spans");
	if (f->btf == KERNEL_BTF_NONE) {
		btf_why(f, false, why, sizeof(why));
		return set(r, CAPABILITY_MISSING, why);
	}
	if (f->opt_sched_info == 'n')
		return set(r, CAPABILITY_DEGRADED, "run-queue wait is always 0: CONFIG_SCHED_INFO is not set");
	set(r, CAPABILITY_OK, "");
}

static void resources_report(const struct kernel_facts *f, struct capability_report *r)
{
	char why[600] = "";

	if (f->task_iter == 1)
		return set(r, CAPABILITY_OK, "");
	/* record refuses to start without root, /proc path or not */
	if (!f->root)
		return set(r, CAPABILITY_MISSING, "needs root (CAP_BPF and CAP_PERFMON, or "
			   "CAP_SYS_ADMIN), as record does");
	basic_why(f, why, sizeof(why));
	if (!why[0] && f->btf != KERNEL_BTF_OWN)
		btf_why(f, true, why, sizeof(why));
	if (!why[0] && f->raw_tp != 1)
		raw_tp_why(f, why, sizeof(why));
	if (!why[0] && !f->initial_userns)
		userns_why(f, why, sizeof(why));
	if (!why[0])
		snprintf(why, sizeof(why), "the kernel refused a BPF task iterator (Linux 5.8 or newer)");
	r->state = CAPABILITY_DEGRADED;
	snprintf(r->why, sizeof(r->why), "read from /proc, not by the BPF task iterator: %s", why);
}

/* Why a BPF program on a perf event was refused: the config's options
 * that are off, else what it needs. */
static void no_perf_event_bpf_why(const struct kernel_facts *f, char *why, size_t len)
{
	static const char *const chain[] = { "CONFIG_FTRACE", "CONFIG_BPF_EVENTS" };
	char off[256] = "";

	if (f->config_source[0])
		unset_options(f, chain, 2, off, sizeof(off));
	if (off[0])
		snprintf(why, len, "no BPF on perf events: %s not set (in %s)", off, f->config_source);
	else
		snprintf(why, len, "the kernel refused a BPF program on a perf event "
			 "(it needs CONFIG_BPF_EVENTS)");
}

/* BPF on perf events where the kernel runs it (PMETRICS_TEST_PERF_FALLBACK=1
 * makes pmetrics act as where it does not, for the tests); else
 * perf_event_open alone, if the kernel has perf events at all. */
static void sampling_report(const struct kernel_facts *f, struct capability_report *r)
{
	char why[600] = "";

	if (f->perf_events != 1) {
		if (f->opt_perf_events == 'n')
			snprintf(why, sizeof(why), "no perf events: CONFIG_PERF_EVENTS is not set (in %s)",
				 f->config_source);
		else
			snprintf(why, sizeof(why), "perf_event_open refused a software clock: %s",
				 f->perf_events < 0 ? strerror(-f->perf_events) : "not supported");
		return set(r, CAPABILITY_MISSING, why);
	}
	if (test_setting_on("PMETRICS_TEST_PERF_FALLBACK")) {
		snprintf(why, sizeof(why), "PMETRICS_TEST_PERF_FALLBACK=1");
	} else if (!f->initial_pidns) {
		/* its events carry the numbers of the namespace that opened them */
		snprintf(why, sizeof(why), "pmetrics runs in a PID namespace, and the BPF sampler "
			 "names processes as the whole system does");
	} else if (f->perf_event_bpf == 1 && f->bpf_loop == 1) {
		return set(r, CAPABILITY_OK, "bpf");
	} else if (f->perf_event_bpf == 1) {
		snprintf(why, sizeof(why), "the kernel has no bpf_loop(), which the BPF sampler walks "
			 "Python stacks with (it came in Linux 5.17)");
	} else {
		basic_why(f, why, sizeof(why));
		if (!why[0])
			no_perf_event_bpf_why(f, why, sizeof(why));
	}
	r->state = CAPABILITY_DEGRADED;
	snprintf(r->why, sizeof(r->why), "perf fallback: perf_event_open in user space, Python "
		 "stacks read just after each sample: %s", why);
}

/* --python-hook watch: what Python spans need, a BPF program on perf
 * events that finds the thread's frame with bpf_loop(), and hardware
 * watchpoints that fire. */
static void watch_report(const struct kernel_facts *f, const struct capability_report *python,
			 struct capability_report *r)
{
	char why[600] = "";

	if (python->state == CAPABILITY_MISSING)
		return set(r, CAPABILITY_MISSING, "no Python spans");
	if (f->perf_event_bpf != 1) {
		no_perf_event_bpf_why(f, why, sizeof(why));
		return set(r, CAPABILITY_MISSING, why);
	}
	if (f->bpf_loop != 1)
		return set(r, CAPABILITY_MISSING, "the kernel has no bpf_loop(), which the hook finds "
			   "the thread's Python frame with (it came in Linux 5.17)");
	if (f->watchpoints == 0)
		return set(r, CAPABILITY_MISSING, "not tested: `pmetrics check` tests it");
	if (f->watchpoints != 1)
		return set(r, CAPABILITY_MISSING, f->watch_why);
	set(r, CAPABILITY_OK, "");
}

void kernel_check_capabilities(const struct kernel_facts *f, struct capability_report out[CAP_MAX])
{
	/* both tracers need the same: uprobes, cookies, the ring buffer and
	 * a raw tracepoint on sched_process_exit */
	spans_report(f, &out[CAP_NATIVE_SPANS]);
	python_spans_report(f, &out[CAP_NATIVE_SPANS], &out[CAP_PYTHON_SPANS]);
	watch_report(f, &out[CAP_PYTHON_SPANS], &out[CAP_PYTHON_WATCH]);
	/* children are followed through a raw tracepoint on
	 * sched_process_fork, of the kind spans already need */
	if (out[CAP_NATIVE_SPANS].state == CAPABILITY_MISSING)
		set(&out[CAP_CHILDREN], CAPABILITY_MISSING, "no spans");
	else if (f->btf == KERNEL_BTF_NONE)
		set(&out[CAP_CHILDREN], CAPABILITY_DEGRADED, "a process is over when its main thread "
		    "exits (no BTF to read how many threads are left)");
	else
		set(&out[CAP_CHILDREN], CAPABILITY_OK, "");
	context_report(f, &out[CAP_NATIVE_SPANS], &out[CAP_SPAN_CONTEXT]);
	resources_report(f, &out[CAP_RESOURCES]);
	sampling_report(f, &out[CAP_SAMPLING]);
}

void capability_format(const struct capability_report *r, char *out, size_t len)
{
	static const char *const states[] = { "ok", "degraded", "missing" };

	if (r->state == CAPABILITY_OK)
		snprintf(out, len, r->why[0] ? "ok: %s" : "ok", r->why);
	else
		snprintf(out, len, "%s: %s", states[r->state], r->why);
}
