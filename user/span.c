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

#define WHAT "the native span tracer"

struct span_tracer {
	struct span_bpf *skel;
	bool empty_probes;
	struct bpf_links links;
};

static int configure(struct span_tracer *t, const struct span_tracer_opts *opts)
{
	struct span_engine_opts engine = {
		.ringbuf_bytes = opts->ringbuf_bytes,
		.resources = opts->resources,
		.returns_need_entry = true,
	};

	t->empty_probes = opts->empty_probes;
	bpf_program__set_autoload(t->skel->progs.span_enter_empty, opts->empty_probes);
	bpf_program__set_autoload(t->skel->progs.span_exit_empty, opts->empty_probes);
	t->skel->rodata->follow_children = opts->follow_children;
	return span_engine_configure(t->skel->obj, &t->skel->rodata->engine, &engine, WHAT);
}

int span_tracer_load(struct span_tracer **out, const struct span_tracer_opts *opts)
{
	struct span_tracer *t = calloc(1, sizeof(*t));
	int err = -ENOMEM;

	if (!t)
		return err;
	t->skel = bpf_loader_opened(span_bpf__open_opts(bpf_loader_open_opts()), WHAT);
	err = t->skel ? configure(t, opts) : -EINVAL;
	if (!err)
		err = bpf_loader_load(t->skel->obj, WHAT);
	if (err) {
		span_tracer_destroy(t);
		return err;
	}
	*out = t;
	return 0;
}

int span_tracer_add_process(struct span_tracer *t, pid_t pid)
{
	struct bpf_map *map = t->skel->maps.traced_tgids;
	uint64_t dev, ino;
	__u32 tgid = (__u32)pid;
	__u8 one = 1;

	/* PIDs of pmetrics' own namespace: BPF learns their kernel PIDs */
	if (span_engine_in_pidns(&dev, &ino))
		map = t->skel->maps.ns_targets;
	if (bpf_map__update_elem(map, &tgid, sizeof(tgid), &one, sizeof(one), BPF_ANY)) {
		fprintf(stderr, "pmetrics: cannot trace process %d: %s\n", pid, strerror(errno));
		return -errno;
	}
	return 0;
}

int span_tracer_attach_tracking(struct span_tracer *t)
{
	int err = bpf_links_attach(&t->links, t->skel->progs.span_task_exit,
				   "the thread-exit tracepoint");

	if (!err)
		err = bpf_links_attach(&t->links, t->skel->progs.span_task_fork,
				       "the fork tracepoint");
	if (!err)
		err = span_engine_attach(t->skel->obj, &t->links);
	return err;
}

/* One uprobe or uretprobe, kept; errors are reported by the caller. */
static int attach_uprobe(struct span_tracer *t, struct bpf_program *prog, bool ret,
			 uint32_t probe_id, const char *path, uint64_t offset, pid_t pid)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = probe_id, .retprobe = ret);
	struct bpf_link *link = bpf_program__attach_uprobe_opts(prog, pid, path, (size_t)offset, &opts);

	if (!link)
		return -errno;
	return bpf_links_add(&t->links, link, "a uprobe");
}

int span_tracer_attach_probe(struct span_tracer *t, uint32_t probe_id,
			     const char *path, uint64_t offset, pid_t pid_filter)
{
	struct bpf_program *enter = t->empty_probes ? t->skel->progs.span_enter_empty
						    : t->skel->progs.span_enter;
	struct bpf_program *exit = t->empty_probes ? t->skel->progs.span_exit_empty
						   : t->skel->progs.span_exit;
	int err = attach_uprobe(t, enter, false, probe_id, path, offset, pid_filter);

	return err ? err : attach_uprobe(t, exit, true, probe_id, path, offset, pid_filter);
}

struct bpf_object *span_tracer_object(const struct span_tracer *t)
{
	return t->skel->obj;
}

void span_tracer_destroy(struct span_tracer *t)
{
	if (!t)
		return;
	bpf_links_destroy(&t->links);
	span_bpf__destroy(t->skel);
	free(t);
}
