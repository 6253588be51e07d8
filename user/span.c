// SPDX-License-Identifier: MIT
/* User side of bpf/span.bpf.c; see span.h. */
#include "span.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "span.skel.h"
#include "span_nobtf.skel.h"

#define WHAT "the native span tracer"

struct span_tracer {
	/* One of the two builds of bpf/span.bpf.c: with CO-RE, or for a
	 * kernel without BTF. Everything else goes through obj. */
	struct span_bpf *core;
	struct span_nobtf_bpf *nobtf;
	struct bpf_object *obj;
	bool empty_probes;
	struct bpf_links links;
};

static struct bpf_object *open_build(struct span_tracer *t)
{
	if (bpf_loader_btf() != KERNEL_BTF_NONE) {
		t->core = bpf_loader_opened(span_bpf__open_opts(bpf_loader_open_opts()), WHAT);
		return t->core ? t->core->obj : NULL;
	}
	t->nobtf = bpf_loader_opened(span_nobtf_bpf__open_opts(bpf_loader_open_opts()), WHAT);
	return t->nobtf ? t->nobtf->obj : NULL;
}

static int configure(struct span_tracer *t, const struct span_tracer_opts *opts)
{
	struct span_engine_opts engine = {
		.ringbuf_bytes = opts->ringbuf_bytes,
		.resources = opts->resources,
		.returns_need_entry = true,
		.no_spans = opts->no_probes && !opts->empty_probes,
		.call_stacks_on_demand = !opts->sampled,
	};
	struct span_engine_config *config = bpf_loader_rodata(t->obj, "engine", sizeof(*config));
	bool *follow = bpf_loader_rodata(t->obj, "follow_children", sizeof(*follow));

	if (!config || !follow)
		return -EINVAL;
	t->empty_probes = opts->empty_probes;
	bpf_program__set_autoload(bpf_loader_program(t->obj, "span_enter_empty"), opts->empty_probes);
	bpf_program__set_autoload(bpf_loader_program(t->obj, "span_exit_empty"), opts->empty_probes);
	*follow = opts->follow_children;
	return span_engine_configure(t->obj, config, &engine, WHAT);
}

int span_tracer_load(struct span_tracer **out, const struct span_tracer_opts *opts)
{
	struct span_tracer *t = calloc(1, sizeof(*t));
	int err = -ENOMEM;

	if (!t)
		return err;
	t->obj = open_build(t);
	err = t->obj ? configure(t, opts) : -EINVAL;
	if (!err)
		err = bpf_loader_load(t->obj, WHAT);
	if (err) {
		span_tracer_destroy(t);
		return err;
	}
	*out = t;
	return 0;
}

int span_tracer_add_process(struct span_tracer *t, pid_t pid)
{
	struct bpf_map *map = bpf_object__find_map_by_name(t->obj, "traced_tgids");
	uint64_t dev, ino;
	__u32 tgid = (__u32)pid;
	__u8 one = 1;

	/* PIDs of pmetrics' own namespace: BPF learns their kernel PIDs */
	if (span_engine_in_pidns(&dev, &ino))
		map = bpf_object__find_map_by_name(t->obj, "ns_targets");
	if (bpf_map__update_elem(map, &tgid, sizeof(tgid), &one, sizeof(one), BPF_ANY)) {
		fprintf(stderr, "pmetrics: cannot trace process %d: %s\n", pid, strerror(errno));
		return -errno;
	}
	return 0;
}

int span_tracer_attach_tracking(struct span_tracer *t)
{
	int err = bpf_links_attach(&t->links, bpf_loader_program(t->obj, "span_task_exit"),
				   "the thread-exit tracepoint");

	if (!err)
		err = bpf_links_attach(&t->links, bpf_loader_program(t->obj, "span_task_fork"),
				       "the fork tracepoint");
	if (!err)
		err = bpf_links_attach(&t->links, bpf_loader_program(t->obj, "span_task_exec"),
				       "the exec tracepoint");
	if (!err)
		err = span_engine_attach(t->obj, &t->links);
	return err;
}

/* One uprobe or uretprobe, kept; errors are reported by the caller. */
static int attach_uprobe(struct span_tracer *t, const char *prog, bool ret,
			 uint32_t probe_id, const char *path, uint64_t offset, pid_t pid)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = probe_id, .retprobe = ret);
	struct bpf_link *link = bpf_program__attach_uprobe_opts(bpf_loader_program(t->obj, prog),
								pid, path, (size_t)offset, &opts);

	if (!link)
		return -errno;
	return bpf_links_add(&t->links, link, "a uprobe");
}

int span_tracer_attach_probe(struct span_tracer *t, uint32_t probe_id,
			     const char *path, uint64_t offset, pid_t pid_filter)
{
	const char *enter = t->empty_probes ? "span_enter_empty" : "span_enter";
	const char *exit = t->empty_probes ? "span_exit_empty" : "span_exit";
	int err = attach_uprobe(t, enter, false, probe_id, path, offset, pid_filter);

	return err ? err : attach_uprobe(t, exit, true, probe_id, path, offset, pid_filter);
}

void span_tracer_for_each_process(const struct span_tracer *t, void (*fn)(pid_t, void *), void *arg)
{
	int fd = bpf_map__fd(bpf_object__find_map_by_name(t->obj, "traced_tgids"));
	__u32 key, next;
	void *prev = NULL;

	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		fn((pid_t)next, arg);
		key = next;
		prev = &key;
	}
}

int span_tracer_execs_fd(const struct span_tracer *t)
{
	return bpf_map__fd(bpf_object__find_map_by_name(t->obj, "execs"));
}

struct bpf_object *span_tracer_object(const struct span_tracer *t)
{
	return t->obj;
}

void span_tracer_destroy(struct span_tracer *t)
{
	if (!t)
		return;
	bpf_links_destroy(&t->links);
	span_bpf__destroy(t->core);
	span_nobtf_bpf__destroy(t->nobtf);
	free(t);
}
