// SPDX-License-Identifier: MIT
/* User side of the span engine; see span_engine.h. */
#include "span_engine.h"
#include "percpu_counter.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#define SPAN_COUNTER_NAME(name, text) [SPAN_CNT_##name] = text,
static const char *const counter_names[SPAN_CNT_MAX] = { SPAN_COUNTERS(SPAN_COUNTER_NAME) };
#undef SPAN_COUNTER_NAME

const char *span_counter_name(enum span_counter c)
{
	return (unsigned)c < SPAN_CNT_MAX ? counter_names[c] : "?";
}

/* The initial PID namespace's inode number (PROC_PID_INIT_INO). */
#define INIT_PIDNS_INO 0xEFFFFFFCu

bool span_engine_in_pidns(uint64_t *dev, uint64_t *ino)
{
	struct stat st;

	if (stat("/proc/self/ns/pid", &st) != 0 || st.st_ino == INIT_PIDNS_INO)
		return false;
	*dev = st.st_dev;
	*ino = st.st_ino;
	return true;
}

static struct bpf_map *engine_map(struct bpf_object *obj, const char *name)
{
	return bpf_object__find_map_by_name(obj, name);
}

static bool preempt_rt(void)
{
	struct utsname u;

	return uname(&u) != 0 || strstr(u.version, "PREEMPT_RT") != NULL ||
	       access("/sys/kernel/realtime", F_OK) == 0;
}

/* Run-time allocated hash maps in tracing programs are safe and silent
 * from Linux 6.1 (the BPF memory allocator). Before, the verifier puts a
 * WARNING with a backtrace in the kernel log and taints the kernel (a
 * panic under panic_on_warn), and a PREEMPT_RT kernel refuses them. The
 * helper bpf_user_ringbuf_drain() came in the same release: whether
 * the kernel has it tells. RT kernels keep preallocated tables. */
static bool runtime_alloc_safe(void)
{
	static int safe = -1;

	if (safe < 0)
		safe = !preempt_rt() && libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE,
								BPF_FUNC_user_ringbuf_drain, NULL) == 1;
	return safe;
}

/* The smallest ring the kernel takes: one page. */
static __u32 ring_floor(void)
{
	long page = sysconf(_SC_PAGESIZE);

	return page > 0 ? (__u32)page : 4096;
}

int span_engine_configure(struct bpf_object *obj, struct span_engine_config *config,
			  const struct span_engine_opts *o, const char *what)
{
	struct bpf_program *rss_stat = bpf_object__find_program_by_name(obj, "span_rss_stat");
	int err;

	/* a build without the resource context (no BTF) has no such program */
	if (o->resources && !rss_stat) {
		fprintf(stderr, "pmetrics: %s cannot give spans their resource context on this "
			"kernel: it reads kernel structs, which needs BTF\n", what);
		return -EOPNOTSUPP;
	}

	uint64_t dev = 0, ino = 0;

	config->resources = o->resources;
	config->returns_need_entry = o->returns_need_entry;
	span_engine_in_pidns(&dev, &ino);
	config->pidns_dev = dev;
	config->pidns_ino = ino;
	/* The consumer polls; wake it early only once half the ring is used. */
	config->wakeup_bytes = o->ringbuf_bytes / 2;
	err = bpf_loader_set_max_entries(engine_map(obj, "spans"),
					 o->no_spans ? ring_floor() : (__u32)o->ringbuf_bytes, what);
	if (!err && (o->no_call_stacks || o->no_spans))
		err = bpf_loader_set_max_entries(engine_map(obj, "call_stacks"), 1, what);
	else if (!err && o->call_stacks_on_demand && runtime_alloc_safe())
		err = bpf_map__set_map_flags(engine_map(obj, "call_stacks"),
					     bpf_map__map_flags(engine_map(obj, "call_stacks")) |
						     BPF_F_NO_PREALLOC);
	if (err || o->resources || !rss_stat)
		return err;
	bpf_program__set_autoload(rss_stat, false);
	err = bpf_loader_set_max_entries(engine_map(obj, "span_starts"), 1, what);
	if (!err)
		err = bpf_loader_set_max_entries(engine_map(obj, "rss_peaks"), 1, what);
	return err;
}

int span_engine_attach(struct bpf_object *obj, struct bpf_links *links)
{
	struct bpf_program *rss_stat = bpf_object__find_program_by_name(obj, "span_rss_stat");

	if (!rss_stat || !bpf_program__autoload(rss_stat))
		return 0;
	return bpf_links_attach(links, rss_stat, "the rss_stat tracepoint");
}

int span_engine_ringbuf_fd(struct bpf_object *obj)
{
	return bpf_map__fd(engine_map(obj, "spans"));
}

int span_engine_call_stacks_fd(struct bpf_object *obj)
{
	return bpf_map__fd(engine_map(obj, "call_stacks"));
}

void span_engine_add_counters(struct bpf_object *obj, uint64_t sums[SPAN_CNT_MAX])
{
	int fd = bpf_map__fd(engine_map(obj, "counters"));

	for (__u32 c = 0; c < SPAN_CNT_MAX; c++)
		sums[c] += percpu_counter_sum(fd, c);
}

/* The value of call_stacks is struct call_stack, whose first member is
 * the depth (a __u32). */
uint64_t span_engine_open_calls(struct bpf_object *obj)
{
	struct bpf_map *map = engine_map(obj, "call_stacks");
	int fd = bpf_map__fd(map);
	__u32 key, next, *value = malloc(bpf_map__value_size(map));
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
