// SPDX-License-Identifier: MIT
/* User side of bpf/span.bpf.c. */
#include "span_tracer.h"
#include "percpu_counter.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "span.skel.h"

#define MAX_LINKS (2 * SPAN_MAX_PROBES + 2)

struct span_tracer {
	struct span_bpf *skel;
	bool empty_probes;
	bool resources;
	struct bpf_link *links[MAX_LINKS];
	int n_links;
};

/* The per-span resource context: its tables shrink to one entry and its
 * tracepoint is not loaded when off. */
static int set_resources(struct span_tracer *t, bool on)
{
	int err = 0;

	t->resources = on;
	t->skel->rodata->span_resources = on;
	bpf_program__set_autoload(t->skel->progs.span_rss_stat, on);
	if (!on) {
		err = bpf_map__set_max_entries(t->skel->maps.span_snapshots, 1);
		if (!err)
			err = bpf_map__set_max_entries(t->skel->maps.rss_peaks, 1);
	}
	return err;
}

int span_tracer_load(struct span_tracer **out, const struct span_tracer_opts *opts)
{
	struct span_tracer *t = calloc(1, sizeof(*t));
	int err;

	if (!t)
		return -ENOMEM;
	LIBBPF_OPTS(bpf_object_open_opts, open_opts, .btf_custom_path = opts->btf_path);
	t->skel = span_bpf__open_opts(&open_opts);
	if (!t->skel) {
		err = -errno;
		goto fail;
	}
	t->empty_probes = opts->empty_probes;
	bpf_program__set_autoload(t->skel->progs.span_enter_empty, opts->empty_probes);
	bpf_program__set_autoload(t->skel->progs.span_exit_empty, opts->empty_probes);
	t->skel->rodata->follow_children = opts->follow_children;
	err = set_resources(t, opts->resources);
	if (err)
		goto fail;
	/* wake the consumer only once half the ring is used */
	t->skel->rodata->wakeup_bytes = opts->ringbuf_bytes / 2;
	err = bpf_map__set_max_entries(t->skel->maps.spans, (__u32)opts->ringbuf_bytes);
	if (err)
		goto fail;
	err = span_bpf__load(t->skel);
	if (err)
		goto fail;
	*out = t;
	return 0;
fail:
	span_tracer_destroy(t);
	return err ? err : -EINVAL;
}

int span_tracer_add_process(struct span_tracer *t, pid_t pid)
{
	__u32 tgid = (__u32)pid;
	__u8 one = 1;

	if (bpf_map__update_elem(t->skel->maps.traced_tgids, &tgid, sizeof(tgid),
				 &one, sizeof(one), BPF_ANY))
		return -errno;
	return 0;
}

static int keep_link(struct span_tracer *t, struct bpf_link *link)
{
	if (!link)
		return -errno;
	if (t->n_links == MAX_LINKS) {
		bpf_link__destroy(link);
		return -E2BIG;
	}
	t->links[t->n_links++] = link;
	return 0;
}

int span_tracer_attach_tracking(struct span_tracer *t)
{
	int err = keep_link(t, bpf_program__attach(t->skel->progs.span_task_exit));

	if (!err)
		err = keep_link(t, bpf_program__attach(t->skel->progs.span_task_fork));
	if (!err && t->resources)
		err = keep_link(t, bpf_program__attach(t->skel->progs.span_rss_stat));
	return err;
}

int span_tracer_attach_probe(struct span_tracer *t, uint32_t probe_id,
			     const char *path, uint64_t offset, pid_t pid_filter)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = probe_id);
	int err;

	struct bpf_program *enter = t->empty_probes ? t->skel->progs.span_enter_empty
						    : t->skel->progs.span_enter;
	struct bpf_program *exit = t->empty_probes ? t->skel->progs.span_exit_empty
						   : t->skel->progs.span_exit;

	opts.retprobe = false;
	err = keep_link(t, bpf_program__attach_uprobe_opts(enter,
							   pid_filter, path, (size_t)offset, &opts));
	if (err)
		return err;
	opts.retprobe = true;
	return keep_link(t, bpf_program__attach_uprobe_opts(exit,
							    pid_filter, path, (size_t)offset, &opts));
}

int span_tracer_ringbuf_fd(const struct span_tracer *t)
{
	return bpf_map__fd(t->skel->maps.spans);
}

void span_tracer_counters(const struct span_tracer *t, uint64_t out[SPAN_CNT_MAX])
{
	for (__u32 k = 0; k < SPAN_CNT_MAX; k++)
		out[k] = percpu_counter_sum(bpf_map__fd(t->skel->maps.counters), k);
}

/* The value layout of call_stacks, as the skeleton's BTF describes it:
 * depth is its first member. */
uint64_t span_tracer_open_calls(const struct span_tracer *t)
{
	int fd = bpf_map__fd(t->skel->maps.call_stacks);
	size_t value_size = bpf_map__value_size(t->skel->maps.call_stacks);
	__u32 key, next, *value = malloc(value_size);
	uint64_t open_calls = 0;
	void *prev = NULL;

	if (!value)
		return 0;
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		if (bpf_map_lookup_elem(fd, &next, value) == 0)
			open_calls += value[0];
		key = next;
		prev = &key;
	}
	free(value);
	return open_calls;
}

void span_tracer_destroy(struct span_tracer *t)
{
	if (!t)
		return;
	for (int i = t->n_links - 1; i >= 0; i--)
		bpf_link__destroy(t->links[i]);
	span_bpf__destroy(t->skel);
	free(t);
}
