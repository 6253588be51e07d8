// SPDX-License-Identifier: MIT
/* The BPF source of samples: bpf/sampler.bpf.c on a CPU clock per CPU
 * and on sched_switch, drained from its ring buffer; see sampler.h. */
#include "sampler_source.h"
#include "sampler_unwind.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stddef.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bpf_loader.h"
#include "cli.h"
#include "percpu_counter.h"
#include "sampler_event.h"
#include "sampler.skel.h"
#include "sampler_nobtf.skel.h"

#define WHAT "the CPU sampler"

struct bpf_source {
	struct sample_source base;
	struct sampler *s;
	/* one of the two builds of bpf/sampler.bpf.c, as for the span tracers */
	struct sampler_bpf *core;
	struct sampler_nobtf_bpf *nobtf;
	struct bpf_object *obj;
	struct bpf_links links;      /* tracepoints */
	struct bpf_links perf_links; /* the CPU clocks (each owns its perf event) */
	struct ring_buffer *rb;
};

/* Takes *N items of SIZE bytes from the packed part of a sample at *AT,
 * bounded by END. NULL when there are none (*N kept: a negative count
 * is an error to pass on) or when they overrun the record (*N 0, and
 * nothing after them is taken either). */
static const void *take_packed(const uint8_t **at, const uint8_t *end, int *n, size_t size)
{
	const uint8_t *p = *at;

	if (*n <= 0)
		return NULL;
	if ((size_t)(end - p) / size < (size_t)*n) {
		*n = 0;
		*at = end; /* what follows cannot be found either */
		return NULL;
	}
	*at = p + (size_t)*n * size;
	return p;
}

/* Unpacks a sample record (include/sampler_event.h) of SIZE bytes into
 * R, its arrays pointing into the record. Counts the record cannot
 * hold are cut to what it holds; what follows an overrun is dropped. */
void sampler_sample_unpack(const struct sampler_sample *e, size_t size, struct raw_sample *r)
{
	const uint8_t *at = (const uint8_t *)e->py, *end = (const uint8_t *)e + size;
	int n_py = e->n_py > PY_MAX_FRAMES ? PY_MAX_FRAMES : (int)e->n_py;
	int n_user = e->n_user > SAMPLER_USER_FRAMES ? SAMPLER_USER_FRAMES : e->n_user;
	int n_kernel = e->n_kernel > SAMPLER_KERNEL_FRAMES ? SAMPLER_KERNEL_FRAMES : e->n_kernel;
	int n_regs = e->n_regs > SAMPLER_REGS ? 0 : (int)e->n_regs, n_stack = (int)e->stack_len;
	/* more returns than BPF sends: a record of another layout */
	int n_returns = e->n_returns > SAMPLER_RETURNS ? 0 : (int)e->n_returns;

	*r = (struct raw_sample){
		.kind = e->kind == SAMPLER_OFF_CPU ? PROFILE_OFF_CPU : PROFILE_ON_CPU,
		.mono_ns = e->time_ns,
		.pid = (pid_t)e->pid,
		.tid = (pid_t)e->tid,
		.py_status = (int)e->py_status,
		.trampoline = e->trampoline,
	};
	r->py = take_packed(&at, end, &n_py, sizeof(*r->py));
	r->user = take_packed(&at, end, &n_user, sizeof(*r->user));
	r->kernel = take_packed(&at, end, &n_kernel, sizeof(*r->kernel));
	r->returns = take_packed(&at, end, &n_returns, sizeof(*r->returns));
	if (e->n_returns > SAMPLER_RETURNS)
		at = end; /* nothing after them can be found */
	r->regs = take_packed(&at, end, &n_regs, sizeof(*r->regs));
	r->stack = take_packed(&at, end, &n_stack, 1);
	r->n_py = n_py;
	r->n_user = n_user;
	r->n_kernel = n_kernel;
	r->n_returns = r->returns ? n_returns : 0;
	/* the unwinder reads every register of this architecture */
	if (!r->regs || !r->stack || n_regs != unwind_regs_count())
		r->regs = NULL, r->stack = NULL, n_stack = 0;
	r->stack_len = (size_t)n_stack;
}

static void on_sample(struct bpf_source *b, const struct sampler_sample *e, size_t size)
{
	struct raw_sample r;

	sampler_sample_unpack(e, size, &r);
	r.weight_ns = sampler_period_ns(b->s);
	sampler_add(b->s, &r);
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct bpf_source *b = ctx;
	const __u32 *type = data;

	if (size < sizeof(*type))
		return 0;
	if (*type == SAMPLER_REC_SAMPLE && size >= offsetof(struct sampler_sample, py)) {
		on_sample(b, data, size);
	} else if (*type == SAMPLER_REC_SWITCH_IN && size >= sizeof(struct sampler_switch_in)) {
		const struct sampler_switch_in *e = data;

		sampler_back_on_cpu(b->s, (pid_t)e->tid, e->out_ns, e->in_ns);
	} else if (*type == SAMPLER_REC_EXEC && size >= sizeof(struct sampler_process)) {
		const struct sampler_process *e = data;

		char comm[sizeof(e->comm) + 1];

		snprintf(comm, sizeof(comm), "%.*s", (int)sizeof(e->comm), e->comm);
		sampler_exec(b->s, (pid_t)e->pid, e->mono_ns, comm);
	} else if (*type == SAMPLER_REC_EXIT && size >= sizeof(struct sampler_process)) {
		const struct sampler_process *e = data;

		sampler_exit(b->s, (pid_t)e->pid);
	}
	return 0;
}

static int cpu_clock(int cpu, uint64_t period_ns)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = period_ns,
	};

	return (int)syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* One CPU clock per CPU, each running on_cpu_sample. */
static int attach_clocks(struct bpf_source *b)
{
	struct bpf_program *prog = bpf_loader_program(b->obj, "on_cpu_sample");
	int ncpu = libbpf_num_possible_cpus(), attached = 0;

	for (int cpu = 0; cpu < ncpu; cpu++) {
		int fd = cpu_clock(cpu, sampler_period_ns(b->s));
		struct bpf_link *link;

		if (fd < 0) {
			if (errno == ENODEV)
				continue; /* offline */
			cli_error("cannot open a CPU clock perf event on CPU %d: %s", cpu, strerror(errno));
			return -1;
		}
		link = bpf_program__attach_perf_event(prog, fd);
		if (!link)
			close(fd);
		if (bpf_links_add(&b->perf_links, link, "the CPU sampler to a CPU clock"))
			return -1;
		attached++;
	}
	if (!attached) {
		cli_error("no CPU to sample: no CPU clock perf event could be opened");
		return -1;
	}
	return 0;
}

static int bpf_start(struct sample_source *src)
{
	struct bpf_source *b = (struct bpf_source *)src;

	return sampler_config(b->s)->hz ? attach_clocks(b) : 0;
}

static void bpf_poll(struct sample_source *src, int timeout_ms)
{
	struct bpf_source *b = (struct bpf_source *)src;

	if (timeout_ms)
		ring_buffer__poll(b->rb, timeout_ms);
	ring_buffer__consume(b->rb);
}

static void bpf_stop(struct sample_source *src)
{
	struct bpf_source *b = (struct bpf_source *)src;

	bpf_links_destroy(&b->perf_links);
	bpf_links_destroy(&b->links);
}

static void bpf_python_found(struct sample_source *src, const struct proc_state *p)
{
	struct bpf_source *b = (struct bpf_source *)src;
	__u32 tgid = (__u32)p->pid;

	if (bpf_map__update_elem(bpf_object__find_map_by_name(b->obj, "py_procs"), &tgid,
				 sizeof(tgid), &p->py.walk, sizeof(p->py.walk), BPF_ANY))
		cli_verbose(sampler_config(b->s)->verbose, "cannot hand process %d's interpreter to "
			    "the sampler: %s", (int)p->pid, strerror(errno));
}

static void bpf_eager(struct sample_source *src, bool eager)
{
	struct bpf_source *b = (struct bpf_source *)src;
	__u32 zero = 0, each = eager;

	if (bpf_map__update_elem(bpf_object__find_map_by_name(b->obj, "wake_each_record"), &zero,
				 sizeof(zero), &each, sizeof(each), BPF_ANY))
		cli_verbose(sampler_config(b->s)->verbose, "cannot set the sampler's wakeups: %s",
			    strerror(errno));
}

static void bpf_final_losses(struct sample_source *src)
{
	struct bpf_source *b = (struct bpf_source *)src;
	int fd = bpf_map__fd(bpf_object__find_map_by_name(b->obj, "counters"));

	sampler_lost(b->s, PROFILE_LOSS_RINGBUF_FULL, percpu_counter_sum(fd, SAMPLER_CNT_RINGBUF_FULL));
	sampler_lost(b->s, PROFILE_LOSS_OFF_CPU_UNTRACKED,
		     percpu_counter_sum(fd, SAMPLER_CNT_SWITCH_TABLE_FULL));
}

static void bpf_close(struct sample_source *src)
{
	struct bpf_source *b = (struct bpf_source *)src;

	bpf_links_destroy(&b->perf_links);
	bpf_links_destroy(&b->links);
	ring_buffer__free(b->rb);
	if (b->core)
		sampler_bpf__destroy(b->core);
	if (b->nobtf)
		sampler_nobtf_bpf__destroy(b->nobtf);
	free(b);
}

static const struct sample_source_ops bpf_ops = {
	.start = bpf_start,
	.poll = bpf_poll,
	.stop = bpf_stop,
	.python_found = bpf_python_found,
	.eager = bpf_eager,
	.final_losses = bpf_final_losses,
	.close = bpf_close,
};

static struct bpf_object *open_build(struct bpf_source *b)
{
	if (bpf_loader_btf() != KERNEL_BTF_NONE) {
		b->core = bpf_loader_opened(sampler_bpf__open_opts(bpf_loader_open_opts()), WHAT);
		return b->core ? b->core->obj : NULL;
	}
	b->nobtf = bpf_loader_opened(sampler_nobtf_bpf__open_opts(bpf_loader_open_opts()), WHAT);
	return b->nobtf ? b->nobtf->obj : NULL;
}

/* sched_switch as a BTF tracepoint needs the kernel's own BTF; the raw
 * one reads nothing a kernel without BTF hides from it. */
static const char *switch_program(bool off_cpu)
{
	if (!off_cpu)
		return NULL;
	return bpf_loader_btf() == KERNEL_BTF_OWN ? "off_cpu_btf" : "off_cpu_raw";
}

static int configure(struct bpf_source *b)
{
	const struct sampler_config *c = sampler_config(b->s);
	bool *follow = bpf_loader_rodata(b->obj, "follow_children", sizeof(*follow));
	__u64 *wakeup = bpf_loader_rodata(b->obj, "wakeup_bytes", sizeof(*wakeup));
	bool *own_btf = bpf_loader_rodata(b->obj, "own_btf", sizeof(*own_btf));
	const char *sw = switch_program(c->off_cpu);
	struct bpf_program *prog;

	if (!follow || !wakeup)
		return -EINVAL;
	*follow = c->follow_children;
	*wakeup = c->ringbuf_bytes / 4;
	/* the CO-RE object reaches a task's registers through the kernel's
	 * own BTF only, not a --btf file's; else it takes a CPU sample's,
	 * as the object built without BTF always does */
	if (own_btf)
		*own_btf = b->core && bpf_loader_btf() == KERNEL_BTF_OWN;
	bpf_object__for_each_program(prog, b->obj) {
		const char *name = bpf_program__name(prog);
		bool on = strncmp(name, "sampler_task_", 13) == 0 ||
			  (c->hz && strcmp(name, "on_cpu_sample") == 0) || (sw && strcmp(name, sw) == 0);

		bpf_program__set_autoload(prog, on);
	}
	/* the native probes' calls in progress, where the span tracer runs */
	if (c->call_stacks_fd > 0 &&
	    bpf_map__reuse_fd(bpf_object__find_map_by_name(b->obj, "call_stacks"), c->call_stacks_fd)) {
		cli_error("cannot share the span tracer's call stacks with the sampler");
		return -EINVAL;
	}
	return bpf_loader_set_max_entries(bpf_object__find_map_by_name(b->obj, "samples"),
					  (__u32)c->ringbuf_bytes, WHAT);
}

static int attach_tracepoints(struct bpf_source *b)
{
	static const char *const tracking[][2] = {
		{ "sampler_task_exit", "the thread-exit tracepoint" },
		{ "sampler_task_fork", "the fork tracepoint" },
		{ "sampler_task_exec", "the exec tracepoint" },
		{ "sampler_task_free", "the task-free tracepoint" },
	};
	const char *sw = switch_program(sampler_config(b->s)->off_cpu);

	for (size_t i = 0; i < sizeof(tracking) / sizeof(tracking[0]); i++)
		if (bpf_links_attach(&b->links, bpf_loader_program(b->obj, tracking[i][0]), tracking[i][1]))
			return -1;
	if (sw && bpf_links_attach(&b->links, bpf_loader_program(b->obj, sw), "the sched_switch tracepoint"))
		return -1;
	return 0;
}

int bpf_source_open(struct sample_source **out, struct sampler *s)
{
	struct bpf_source *b = calloc(1, sizeof(*b));
	const struct sampler_config *c = sampler_config(s);
	__u32 tgid = (__u32)c->pid;
	__u8 one = 1;

	if (!b) {
		cli_error("out of memory");
		return -1;
	}
	b->base.ops = &bpf_ops;
	b->s = s;
	b->obj = open_build(b);
	if (!b->obj || configure(b) || bpf_loader_load(b->obj, WHAT))
		goto fail;
	if (bpf_map__update_elem(bpf_object__find_map_by_name(b->obj, "traced_tgids"), &tgid,
				 sizeof(tgid), &one, sizeof(one), BPF_ANY)) {
		cli_error("cannot sample process %d: %s", (int)c->pid, strerror(errno));
		goto fail;
	}
	if (attach_tracepoints(b))
		goto fail;
	b->rb = ring_buffer__new(bpf_map__fd(bpf_object__find_map_by_name(b->obj, "samples")),
				 on_record, b, NULL);
	if (!b->rb) {
		cli_error("cannot open the sampler's ring buffer: %s", strerror(errno));
		goto fail;
	}
	*out = &b->base;
	return 0;
fail:
	bpf_close(&b->base);
	return -1;
}
