// SPDX-License-Identifier: MIT
/* The capture session of `pmetrics record`: check -> resolve probes ->
 * load -> attach -> open files -> release target -> poll -> summary. */
#include "record.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>

#include "bpf_loader.h"
#include "cli.h"
#include "kernel_check.h"
#include "elf_symbols.h"
#include "output_dir.h"
#include "profile/capture.h"
#include "profile/report.h"
#include "pyspan.h"
#include "pyspan_config.h"
#include "resources.h"
#include "sampler.h"
#include "sd_notify.h"
#include "span.h"
#include "span_resources.h"
#include "span_stats.h"
#include "target.h"
#include "wall_clock.h"

#define POLL_INTERVAL_MS 100
#define FLUSH_INTERVAL_NS 1000000000ull

struct session {
	const struct record_opts *opts;
	struct target target;
	struct span_tracer *spans;
	struct pyspan *py;          /* NULL without py: probes */
	struct ring_buffer *rb;
	struct csv_file *csv;
	struct csv_file *span_threads; /* PROFILE_SPANS_FILE, with a profile */
	struct wall_clock clock;
	struct span_stats stats[SPAN_MAX_PROBES];
	struct output_dir *out; /* -o DIR, open for the whole session */
	int write_error;
	struct csv_file *failed; /* the file write_error is of, when not csv */
	uint64_t open_at_end;   /* calls still open when the capture ended */
	uint64_t counters[SPAN_CNT_MAX]; /* loss counters at that moment */
	uint64_t spans_seen;
	uint64_t spans_other; /* events with an unknown probe id */
	struct resource_sampler *res; /* --resources */
	struct span_resource_writer *span_res; /* --resources with probes */
	uint64_t span_res_flushed_ns;
	/* What this kernel allows of what was asked (check_kernel()). */
	bool follow_children;
	bool span_context;      /* robot_context_resources */
	bool resources_procfs;  /* the series from /proc, not BPF */
	struct sampler *sampler; /* --sample, --off-cpu */
	bool sampling_bpf;      /* by BPF, else perf_event_open */
};

uint64_t pmetrics_start_ns;

static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
	stop_signal = sig;
}

/* ---- checks before anything is touched ------------------------------ */

static bool has_capability(const struct __user_cap_data_struct data[2], int cap)
{
	return data[cap / 32].effective & (1u << (cap % 32));
}

static int check_privileges(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_capget, &hdr, data) != 0)
		return geteuid() == 0 ? 0 : -1;
	if (has_capability(data, CAP_SYS_ADMIN) ||
	    (has_capability(data, CAP_BPF) && has_capability(data, CAP_PERFMON)))
		return 0;
	cli_error("needs root: loading BPF programs takes CAP_BPF and CAP_PERFMON "
	     "(or CAP_SYS_ADMIN); run it with sudo");
	return -1;
}

/* The BPF loader's settings, once: -v and --btf (a bad file is named). */
static int init_loader(const struct record_opts *o)
{
	struct bpf_loader_settings loader = { .btf_path = o->btf_path, .verbose = o->verbose };

	return bpf_loader_init(&loader);
}

static void say_capability(const struct capability_report *caps, enum capability c)
{
	char line[1024];

	capability_format(&caps[c], line, sizeof(line));
	cli_error("%s: %s", capability_name(c), line);
}

static bool has_probes(const struct record_opts *o, enum probe_kind kind)
{
	for (int i = 0; i < o->n_probes; i++)
		if (o->probes[i].kind == kind)
			return true;
	return false;
}

static bool sampling(const struct record_opts *o)
{
	return o->sample_hz || o->off_cpu;
}

/* --sample, --off-cpu: by BPF, else by perf_event_open (said once). */
static int check_sampling(struct session *s, const struct capability_report *caps)
{
	if (!sampling(s->opts))
		return 0;
	if (caps[CAP_SAMPLING].state == CAPABILITY_MISSING) {
		say_capability(caps, CAP_SAMPLING);
		return -1;
	}
	s->sampling_bpf = caps[CAP_SAMPLING].state == CAPABILITY_OK;
	if (!s->sampling_bpf)
		say_capability(caps, CAP_SAMPLING);
	return 0;
}

/* The check `pmetrics check` prints, in its words: what was asked for
 * and this kernel cannot do fails now; what it can do only in part is
 * said once and done that way. */
static int check_kernel(struct session *s)
{
	const struct record_opts *o = s->opts;
	struct capability_report caps[CAP_MAX];
	struct kernel_facts f;

	kernel_check_probe(&f);
	kernel_check_capabilities(&f, caps);
	bpf_loader_set_uprobe_multi(f.uprobe_multi == 1);
	bpf_loader_set_uprobe_session(f.uprobe_session == 1);
	if (o->verbose && has_probes(o, PROBE_PYTHON))
		fprintf(stderr, "pmetrics: Python uprobes %s%s\n",
			f.uprobe_multi == 1 ? "in multi-uprobe links (one per program)"
					    : "one link each (no multi-uprobe links here)",
			f.uprobe_session == 1 ? "; uprobe sessions: an untimed call traps once"
					      : "");
	if ((has_probes(o, PROBE_NATIVE) && caps[CAP_NATIVE_SPANS].state == CAPABILITY_MISSING) ||
	    (has_probes(o, PROBE_PYTHON) && caps[CAP_PYTHON_SPANS].state == CAPABILITY_MISSING)) {
		say_capability(caps, has_probes(o, PROBE_NATIVE) ? CAP_NATIVE_SPANS : CAP_PYTHON_SPANS);
		return -1;
	}
	/* a child's end seen a little less exactly needs no warning */
	s->follow_children = o->follow_children && o->n_probes;
	if (s->follow_children && (caps[CAP_CHILDREN].state == CAPABILITY_MISSING || o->verbose))
		if (caps[CAP_CHILDREN].state != CAPABILITY_OK)
			say_capability(caps, CAP_CHILDREN);
	s->follow_children &= caps[CAP_CHILDREN].state != CAPABILITY_MISSING;
	s->span_context = o->resources && o->n_probes;
	if (s->span_context && caps[CAP_SPAN_CONTEXT].state != CAPABILITY_OK) {
		say_capability(caps, CAP_SPAN_CONTEXT);
		s->span_context = caps[CAP_SPAN_CONTEXT].state == CAPABILITY_DEGRADED;
	}
	s->resources_procfs = o->resources && caps[CAP_RESOURCES].state != CAPABILITY_OK;
	if (s->resources_procfs)
		say_capability(caps, CAP_RESOURCES);
	return check_sampling(s, caps);
}

/* Makes and opens the output directory before anything starts, so a bad
 * -o fails first; every file of the session is opened in it. */
static int make_output_dir(struct session *s, const char *dir)
{
	char err[1024];

	s->out = output_dir_open(dir, err, sizeof(err));
	if (!s->out)
		cli_error("%s", err);
	return s->out ? 0 : -1;
}

/* After a failed start: the directories this session made go too. */
static void remove_created_dirs(struct session *s)
{
	output_dir_discard(s->out);
	s->out = NULL;
}

/* ---- probes ---------------------------------------------------------- */

static int attach_native_probe(struct session *s, uint32_t id)
{
	const struct record_opts *o = s->opts;
	const struct probe_spec *p = &o->probes[id];
	char err[1024], suggest[512];
	struct resolved_file file;
	uint64_t offset;
	pid_t filter = s->follow_children ? -1 : s->target.pid;
	int ret;

	if (resolve_binary(&s->target.view, p->binary, &file, err, sizeof(err))) {
		cli_error("probe %s: %s", p->target, err);
		return -1;
	}
	ret = elf_symbol_offset(file.path, p->symbol, &offset, suggest, sizeof(suggest), err, sizeof(err));
	if (ret == -ENOENT) {
		cli_error("probe %s: no function '%s' in %s%s%s", p->target, p->symbol, file.name,
		     suggest[0] ? "; close names: " : " (is it stripped?)", suggest);
		return -1;
	}
	if (ret) {
		cli_error("probe %s: %s", p->target, err);
		return -1;
	}
	ret = span_tracer_attach_probe(s->spans, id, file.path, offset, filter);
	if (ret) {
		cli_error("probe %s: cannot attach uprobe to %s+0x%llx: %s", p->target, file.name,
		     (unsigned long long)offset, strerror(-ret));
		return -1;
	}
	cli_verbose(o->verbose, "attached %s: %s:%s at file offset 0x%llx (%s, via %s)", p->state, file.name,
		p->symbol, (unsigned long long)offset,
		filter > 0 ? "kernel filter on the PID" : "all processes, BPF filter on PIDs", file.path);
	if (file.not_mapped)
		fprintf(stderr, "pmetrics: warning: probe %s: process %d does not map %s: its "
			"calls are timed only once it (or a child) loads that file\n", p->target,
			(int)s->target.pid, file.name);
	if (file.replaced)
		fprintf(stderr, "pmetrics: warning: probe %s: process %d maps %s, which has been "
			"replaced or deleted on disk since; probing the file it maps (processes "
			"started later map the new file and are not traced)\n", p->target,
			(int)s->target.pid, file.name);
	return 0;
}

static int load_tracer(struct session *s)
{
	const struct record_opts *o = s->opts;
	struct span_tracer_opts topts = {
		.follow_children = s->follow_children,
		.ringbuf_bytes = o->ringbuf_bytes,
		.empty_probes = o->bench_floor,
		.resources = s->span_context,
		.no_probes = !has_probes(o, PROBE_NATIVE),
		.sampled = sampling(o),
	};

	if (span_tracer_load(&s->spans, &topts) ||
	    span_tracer_add_process(s->spans, s->target.pid) ||
	    span_tracer_attach_tracking(s->spans))
		return -1;
	return 0;
}

/* All py: probes of the target share one interpreter hook. */
static int attach_python_probes(struct session *s)
{
	const struct record_opts *o = s->opts;
	struct py_probe py[PYSPAN_MAX_PROBES];
	struct pyspan_target t = {
		.pid = s->target.pid,
		.view = &s->target.view,
		.follow_children = s->follow_children,
		.traced_set = span_tracer_object(s->spans),
		.verbose = o->verbose,
		.plain_calls = o->python_hook == PYTHON_HOOK_CALLS,
		.watch = o->python_hook == PYTHON_HOOK_WATCH,
		.launched = s->target.launched,
		.watch_preferred = o->preset_robot_server && o->python_hook == PYTHON_HOOK_DEFAULT,
		.hook_explicit = o->python_hook != PYTHON_HOOK_DEFAULT,
		.resources = s->span_context,
		.ringbuf_bytes = o->ringbuf_bytes,
	};
	int n = 0;

	for (int i = 0; i < o->n_probes; i++) {
		if (o->probes[i].kind != PROBE_PYTHON)
			continue;
		if (n == PYSPAN_MAX_PROBES) {
			cli_error("too many py: probes: at most %d per capture", PYSPAN_MAX_PROBES);
			return -1;
		}
		py[n++] = (struct py_probe){ .probe_id = (unsigned int)i,
					     .module = o->probes[i].binary,
					     .qualname = o->probes[i].symbol,
					     .known_async = o->probes[i].known_async };
	}
	if (n == 0)
		return 0;
	return pyspan_open(&s->py, &t, py, n) ? -1 : 0;
}

static int attach_probes(struct session *s)
{
	for (int i = 0; i < s->opts->n_probes; i++) {
		if (s->opts->probes[i].kind == PROBE_NATIVE && attach_native_probe(s, (uint32_t)i))
			return -1;
	}
	return attach_python_probes(s);
}

/* ---- rows ------------------------------------------------------------ */

/* The companion row of a span that carries its resource context: the
 * same state name and start time as its row in the span file. */
static void span_resources_row(struct session *s, const struct span_resource_event *e)
{
	int err;

	if (!s->span_res)
		return;
	err = span_resource_writer_add(s->span_res, s->opts->probes[e->span.probe_id].state,
				       wall_clock_from_mono(&s->clock, e->span.start_ns), e);
	if (err && !s->write_error)
		s->write_error = -err;
}

/* The span E with its thread, for the timeline of a profile. */
static void span_thread_row(struct session *s, const struct span_event *e)
{
	struct csv_row row;
	int err;

	csv_row_begin(&row, CSV_LAYOUT_CONTEXT);
	csv_row_u64(&row, wall_clock_from_mono(&s->clock, e->start_ns));
	csv_row_u64(&row, e->tgid);
	csv_row_u64(&row, e->tid);
	csv_row_str(&row, s->opts->probes[e->probe_id].state);
	csv_row_u64(&row, e->duration_ns);
	csv_row_end(&row);
	err = csv_file_append(s->span_threads, &row);
	if (err && !s->write_error) {
		s->write_error = -err;
		s->failed = s->span_threads;
	}
}

/* Flushes the span files; returns 0 or -errno, the file in s->failed. */
static int flush_span_files(struct session *s)
{
	int ret = csv_file_flush(s->csv);

	if (ret == 0 && s->span_threads && (ret = csv_file_flush(s->span_threads)) != 0 &&
	    !s->write_error)
		s->failed = s->span_threads;
	return ret;
}

static int on_span(void *ctx, void *data, size_t size)
{
	struct session *s = ctx;
	const struct span_event *e = data;
	struct csv_row row;

	if (size < sizeof(*e) || e->probe_id >= (uint32_t)s->opts->n_probes) {
		s->spans_other++;
		return 0;
	}
	s->spans_seen++;
	span_stats_add(&s->stats[e->probe_id], e->duration_ns);
	csv_row_begin(&row, s->opts->layout);
	csv_row_str(&row, s->opts->probes[e->probe_id].state);
	csv_row_u64(&row, wall_clock_from_mono(&s->clock, e->start_ns));
	csv_row_u64(&row, e->duration_ns);
	csv_row_end(&row);
	if (!s->write_error)
		s->write_error = -csv_file_append(s->csv, &row);
	else
		csv_file_append(s->csv, &row); /* counted as dropped */
	if (s->span_threads)
		span_thread_row(s, e);
	if (size >= sizeof(struct span_resource_event))
		span_resources_row(s, data);
	return 0;
}

static void check_python_child(pid_t pid, void *arg)
{
	pyspan_check_process(arg, pid);
}

/* A traced process exec'd: is it a Python the hooks do not cover? */
static int on_exec(void *ctx, void *data, size_t size)
{
	struct session *s = ctx;

	if (size >= sizeof(__u32) && s->py)
		pyspan_check_process(s->py, (pid_t)*(__u32 *)data);
	return 0;
}

static int open_csv(struct session *s)
{
	static const char *const context_header[] = { "state_name", "function_start_time", "duration" };
	static const char *const activity_header[] = { "state", "func_start", "duration" };
	bool ctx = s->opts->layout == CSV_LAYOUT_CONTEXT;
	char err[1024];

	s->csv = csv_file_open(s->opts->output_dir, ctx ? "robot_context_data" : "robot_activity_data",
			       ctx ? context_header : activity_header, 3, s->opts->layout,
			       err, sizeof(err));
	if (!s->csv) {
		cli_error("%s", err);
		return -1;
	}
	if (sampling(s->opts)) {
		static const char *const header[] = { "time_ns", "pid", "tid", "state", "duration_ns" };

		s->span_threads = csv_file_open(s->opts->output_dir, PROFILE_SPANS_FILE, header, 5,
						CSV_LAYOUT_CONTEXT, err, sizeof(err));
		if (!s->span_threads) {
			cli_error("%s", err);
			return -1;
		}
	}
	s->rb = ring_buffer__new(span_engine_ringbuf_fd(span_tracer_object(s->spans)), on_span, s, NULL);
	if (!s->rb || (s->py && ring_buffer__add(s->rb, span_engine_ringbuf_fd(pyspan_object(s->py)),
						 on_span, s)) ||
	    ring_buffer__add(s->rb, span_tracer_execs_fd(s->spans), on_exec, s) ||
	    (pyspan_watch_requests_fd(s->py) >= 0 &&
	     ring_buffer__add(s->rb, pyspan_watch_requests_fd(s->py), pyspan_watch_request, s->py))) {
		cli_error("cannot open the span ring buffer: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* ---- the capture loop ------------------------------------------------- */

static void report_write_error(struct session *s)
{
	struct csv_file *f = s->failed ? s->failed : s->csv;

	cli_error("writing %s failed: %s; %llu rows are in the file, %llu were not written: %s",
		  csv_file_path(f), strerror(s->write_error),
		  (unsigned long long)csv_file_rows_written(f),
		  (unsigned long long)csv_file_dropped(f),
		  s->write_error == EFBIG ? "raise the file size limit (ulimit -f) or pick another -o DIR"
					  : "free space and start again");
}

static void drain(struct session *s)
{
	wall_clock_sync(&s->clock);
	ring_buffer__consume(s->rb);
}

static bool target_done(struct session *s)
{
	if (s->target.pidfd >= 0) {
		struct pollfd pfd = { .fd = s->target.pidfd, .events = POLLIN };
		if (poll(&pfd, 1, 0) == 1) {
			target_reap(&s->target);
			return true;
		}
		return false;
	}
	return target_reap(&s->target);
}

/* ---- resource sampling ------------------------------------------------ */

/* Opens the sampler (BPF iterator + its CSV files) for --resources: the
 * whole system, or the target and its children. */
static int resources_start(struct session *s)
{
	const struct record_opts *o = s->opts;
	struct resource_opts ro;
	char err[512];

	if (!o->resources)
		return 0;
	if (resource_opts_for_record(&ro, o->resource_filters, o->n_resource_filters,
				     o->resource_interval_s, err, sizeof(err))) {
		cli_error("%s", err);
		return -1;
	}
	ro.storage_dir = o->output_dir;
	ro.root_pid = s->target.pid;
	ro.follow_children = o->follow_children;
	ro.procfs = s->resources_procfs;
	ro.layout = o->layout;
	ro.verbose = o->verbose;
	if (resource_sampler_open(&s->res, &ro))
		return -1;
	if (s->span_context && span_resource_writer_open(&s->span_res, o->output_dir, o->layout,
						     err, sizeof(err))) {
		cli_error("%s", err);
		return -1;
	}
	cli_verbose(o->verbose, "resource sampler attached: %s, every %.3g s",
		ro.root_pid > 0 ? "the target and its children" : "the whole system", ro.interval_s);
	return 0;
}

/* Polls when a poll is due. Returns -1 when sampling cannot go on (out of
 * memory, rows not written). */
static int resources_tick(struct session *s)
{
	uint64_t now = monotonic_ns();

	if (s->span_res && now - s->span_res_flushed_ns >= FLUSH_INTERVAL_NS) {
		int err = span_resource_writer_flush(s->span_res);

		if (err && !s->write_error)
			s->write_error = -err;
		s->span_res_flushed_ns = now;
	}
	if (!s->res || now < resource_sampler_next_due_ns(s->res))
		return 0;
	if (resource_sampler_poll(s->res))
		return -1;
	return resource_sampler_stats(s->res)->write_errors ? -1 : 0;
}

/* Once everything is attached and a launched command runs its own
 * program: the first poll, then READY=1 for systemd. */
static void resources_begin(struct session *s)
{
	if (!s->opts->resources)
		return;
	resources_tick(s);
	sd_notify_ready();
}

/* Summary and close; returns 1 when rows were lost, else 0. */
static int resources_finish(struct session *s)
{
	int ret = 0;

	if (s->span_res) {
		ret = span_resource_writer_flush(s->span_res) ? 1 : 0;
		fprintf(stderr, "resources: %llu span context rows\n",
			(unsigned long long)span_resource_writer_rows(s->span_res));
		if (span_resource_writer_close(s->span_res) || ret) {
			cli_error("writing the span resource rows in %s failed", s->opts->output_dir);
			ret = 1;
		}
		s->span_res = NULL;
	}
	if (!s->res)
		return ret;
	resource_sampler_summary(s->res, stderr);
	if (resource_sampler_stats(s->res)->write_errors) {
		cli_error("writing the resource rows in %s failed: free space (or raise the "
			  "file size limit, ulimit -f) and start again",
		     s->opts->output_dir);
		ret = 1;
	}
	resource_sampler_close(s->res);
	s->res = NULL;
	return ret;
}

static void resources_discard(struct session *s)
{
	span_resource_writer_discard(s->span_res);
	s->span_res = NULL;
	resource_sampler_discard(s->res);
	s->res = NULL;
}

/* The wait for the next poll: POLL_INTERVAL_MS, or less to stop at END. */
static int poll_wait_ms(uint64_t end)
{
	uint64_t now = monotonic_ns(), left_ms;

	if (!end)
		return POLL_INTERVAL_MS;
	left_ms = end > now ? (end - now + 999999) / 1000000 : 0;
	return left_ms < POLL_INTERVAL_MS ? (int)left_ms : POLL_INTERVAL_MS;
}

/* Waits up to WAIT_MS for the rings' data or the target's end, whichever
 * comes first: a target that exits is noticed at once, not at the next
 * tick. The rings are drained by the caller either way. */
static void wait_for_work(struct session *s, int wait_ms)
{
	struct pollfd pfd[2] = {
		{ .fd = s->rb ? ring_buffer__epoll_fd(s->rb) : -1, .events = POLLIN },
		{ .fd = s->target.pidfd, .events = POLLIN },
	};

	poll(pfd, s->target.pidfd >= 0 ? 2 : 1, wait_ms);
}

static const char *capture_loop(struct session *s)
{
	uint64_t start = monotonic_ns(), last_flush = start;
	uint64_t end = s->opts->duration_ns ? start + s->opts->duration_ns : 0;

	for (;;) {
		wait_for_work(s, poll_wait_ms(end));
		drain(s);
		uint64_t now = monotonic_ns();
		if (now - last_flush >= FLUSH_INTERVAL_NS) {
			int ret = flush_span_files(s);
			if (ret && !s->write_error)
				s->write_error = -ret;
			last_flush = now;
			/* a followed child on another Python is said once */
			if (s->py)
				span_tracer_for_each_process(s->spans, check_python_child, s->py);
			pyspan_tick(s->py);
		}
		if (s->write_error)
			return "write error";
		if (stop_signal)
			return stop_signal == SIGINT ? "interrupted" : "terminated";
		if (end && now >= end)
			return "duration reached";
		if (target_done(s))
			return "target exited";
		if (resources_tick(s))
			return "resource sampling failed";
	}
}

/* ---- summary --------------------------------------------------------- */

static void print_state_summary(const struct session *s)
{
	const struct record_opts *o = s->opts;
	char mn[32], mean[32], mx[32];
	int width = 28; /* the state column, widened for a longer name */

	for (int i = 0; i < o->n_probes; i++)
		if ((int)strlen(o->probes[i].state) > width)
			width = (int)strlen(o->probes[i].state);
	fprintf(stderr, "  %-*s %8s %10s %10s %10s\n", width, "STATE", "COUNT", "MIN", "MEAN", "MAX");
	for (int i = 0; i < o->n_probes; i++) {
		struct span_stats total = { 0 };
		bool first = true;
		for (int j = 0; j < i && first; j++)
			first = strcmp(o->probes[j].state, o->probes[i].state) != 0;
		if (!first)
			continue;
		for (int j = i; j < o->n_probes; j++) {
			const struct span_stats *st = &s->stats[j];
			if (strcmp(o->probes[j].state, o->probes[i].state) || !st->count)
				continue;
			if (!total.count || st->min_ns < total.min_ns)
				total.min_ns = st->min_ns;
			if (st->max_ns > total.max_ns)
				total.max_ns = st->max_ns;
			total.count += st->count;
			total.sum_ns += st->sum_ns;
		}
		format_duration(mn, sizeof(mn), total.min_ns);
		format_duration(mean, sizeof(mean), span_stats_mean_ns(&total));
		format_duration(mx, sizeof(mx), total.max_ns);
		if (!total.count)
			snprintf(mn, sizeof(mn), "-"), snprintf(mean, sizeof(mean), "-"),
				snprintf(mx, sizeof(mx), "-");
		fprintf(stderr, "  %-*s %8llu %10s %10s %10s\n", width, o->probes[i].state,
			(unsigned long long)total.count, mn, mean, mx);
	}
}

/* The span engines' counters: the native tracer's and the Python one's,
 * summed, then what only Python spans count. */
static void print_losses(const struct session *s)
{
	const uint64_t *c = s->counters;

	fprintf(stderr, "  lost spans: %llu (%s), %llu (%s), %llu (rows not written)\n",
		(unsigned long long)c[SPAN_CNT_RINGBUF_FULL], span_counter_name(SPAN_CNT_RINGBUF_FULL),
		(unsigned long long)c[SPAN_CNT_DEPTH_OVERFLOW], span_counter_name(SPAN_CNT_DEPTH_OVERFLOW),
		(unsigned long long)csv_file_dropped(s->csv));
	fprintf(stderr, "  open calls discarded: %llu (still running at end), %llu (%s), %llu (%s)\n",
		(unsigned long long)s->open_at_end,
		(unsigned long long)c[SPAN_CNT_THREAD_EXIT], span_counter_name(SPAN_CNT_THREAD_EXIT),
		(unsigned long long)c[SPAN_CNT_UNWOUND], span_counter_name(SPAN_CNT_UNWOUND));
	if (c[SPAN_CNT_STACK_FULL] || c[SPAN_CNT_NO_ENTRY] || s->spans_other)
		fprintf(stderr, "  other: %llu %s, %llu %s, %llu malformed events\n",
			(unsigned long long)c[SPAN_CNT_STACK_FULL], span_counter_name(SPAN_CNT_STACK_FULL),
			(unsigned long long)c[SPAN_CNT_NO_ENTRY], span_counter_name(SPAN_CNT_NO_ENTRY),
			(unsigned long long)s->spans_other);
	for (int k = SPAN_CNT_CORO_TABLE_FULL; k < SPAN_CNT_MAX; k++)
		if (c[k])
			fprintf(stderr, "pmetrics: python spans lost: %llu (%s)\n",
				(unsigned long long)c[k], span_counter_name(k));
}

static void print_summary(const struct session *s, const char *why, uint64_t elapsed_ns)
{
	uint64_t rows = csv_file_rows_written(s->csv);

	fprintf(stderr, "pmetrics: %s after %.2fs: %llu row%s appended to %s\n", why,
		(double)elapsed_ns / 1e9, (unsigned long long)rows, rows == 1 ? "" : "s",
		csv_file_path(s->csv));
	print_state_summary(s);
	print_losses(s);
	pyspan_summary(s->py, stderr);
}

/* Calls still open and the loss counters, over every span engine, at
 * the end of the capture. */
static void read_engines(struct session *s)
{
	s->open_at_end = span_engine_open_calls(span_tracer_object(s->spans));
	span_engine_add_counters(span_tracer_object(s->spans), s->counters);
	if (s->py) {
		s->open_at_end += span_engine_open_calls(pyspan_object(s->py));
		span_engine_add_counters(pyspan_object(s->py), s->counters);
	}
}

/* ---- CPU sampling ----------------------------------------------------- */

/* Opens and starts the sampler before a launched command is let go, so
 * its first instructions are sampled too. */
static int sampling_start(struct session *s)
{
	const struct record_opts *o = s->opts;
	struct sampler_config c = {
		.hz = o->sample_hz,
		.off_cpu = o->off_cpu,
		.pid = s->target.pid,
		.held = s->target.launched,
		.view = &s->target.view,
		.follow_children = o->follow_children,
		.probes = o->probes,
		.n_probes = o->n_probes,
		.output_dir = o->output_dir,
		.ringbuf_bytes = o->ringbuf_bytes,
		.verbose = o->verbose,
		.use_bpf = s->sampling_bpf,
		.call_stacks_fd = s->spans ? span_engine_call_stacks_fd(span_tracer_object(s->spans))
					   : -1,
	};

	if (!sampling(o))
		return 0;
	return sampler_open(&s->sampler, &c) || sampler_start(s->sampler) ? -1 : 0;
}

/* Stops the sampler and says what it took; returns 1 when rows were
 * not written, else 0. */
static int sampling_finish(struct session *s)
{
	int err;

	if (!s->sampler)
		return 0;
	err = sampler_stop(s->sampler);
	sampler_summary(s->sampler, stderr);
	if (err)
		cli_error("writing the profile in %s failed: %s", s->opts->output_dir, strerror(-err));
	sampler_close(s->sampler);
	s->sampler = NULL;
	return err ? 1 : 0;
}

static void sampling_discard(struct session *s)
{
	sampler_discard(s->sampler);
	s->sampler = NULL;
}

/* ---- session --------------------------------------------------------- */

static int start_target(struct session *s)
{
	const struct record_opts *o = s->opts;
	char err[1024];
	int ret;

	if (o->command)
		ret = target_launch(&s->target, o->command, err, sizeof(err));
	else
		ret = target_attach_pid(&s->target, o->pid, err, sizeof(err));
	if (ret)
		cli_error("%s", err);
	return ret;
}

static void install_signal_handlers(void)
{
	struct sigaction sa = { .sa_handler = on_stop_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* Past a file size limit write() then fails with EFBIG, handled as a
	 * full disk (whole rows kept, losses counted), instead of a kill. */
	signal(SIGXFSZ, SIG_IGN);
}

/* -v: what the capture takes of the machine's RAM besides pmetrics' own pages. */
static void say_kernel_memory(const struct record_opts *o)
{
	double kib;

	if (!o->verbose)
		return;
	kib = (double)bpf_loader_maps_memory() / 1024.0;
	if (kib >= 1024)
		cli_verbose(true, "BPF maps: %.1f MiB of locked kernel memory", kib / 1024.0);
	else
		cli_verbose(true, "BPF maps: %.0f KiB of locked kernel memory", kib);
}

static int setup(struct session *s)
{
	const struct record_opts *o = s->opts;
	char err[1024];

	if (check_privileges() || init_loader(o) || check_kernel(s) ||
	    make_output_dir(s, o->output_dir) || start_target(s) || load_tracer(s) || attach_probes(s))
		return -1;
	if (!s->target.launched && !target_alive(&s->target)) {
		cli_error("process %d exited while the probes were being attached", s->target.pid);
		return -1;
	}
	wall_clock_sync(&s->clock);
	if (open_csv(s) || resources_start(s) || sampling_start(s))
		return -1;
	cli_verbose(o->verbose, "probes live %.1f ms after start",
		(double)(monotonic_ns() - pmetrics_start_ns) / 1e6);
	say_kernel_memory(o);
	if (s->target.launched && target_release(&s->target, err, sizeof(err))) {
		cli_error("%s", err);
		return -1;
	}
	return 0;
}

static void teardown(struct session *s)
{
	ring_buffer__free(s->rb);
	pyspan_close(s->py);
	span_tracer_destroy(s->spans);
	if (s->target.launched && s->target.pid > 0 && s->target.release_fd >= 0)
		target_abort(&s->target);
	target_close(&s->target);
}

static void stop_launched_command(struct session *s)
{
	if (!s->target.launched || s->target.pid <= 0 || target_reap(&s->target))
		return;
	kill(s->target.pid, SIGTERM);
	for (int i = 0; i < 50 && !target_reap(&s->target); i++)
		usleep(20000);
	if (s->target.pid > 0)
		cli_error("the command (PID %d) is still running 1 s after SIGTERM: left running "
			  "(kill -KILL %d ends it)", s->target.pid, s->target.pid);
}

/* How a launched command whose exit ended the capture failed ("exit
 * status 2", "killed by signal 9, Killed"); NULL when it exited 0 or
 * the capture ended otherwise (then pmetrics stopped it). */
static const char *command_failure(const struct session *s, const char *why)
{
	static char buf[80];
	int st = s->target.exit_status;

	if (strcmp(why, "target exited") != 0 || !s->target.launched || s->target.pid != 0)
		return NULL;
	if (WIFSIGNALED(st))
		snprintf(buf, sizeof(buf), "killed by signal %d, %s", WTERMSIG(st),
			 strsignal(WTERMSIG(st)));
	else if (WIFEXITED(st) && WEXITSTATUS(st))
		snprintf(buf, sizeof(buf), "exit status %d", WEXITSTATUS(st));
	else
		return NULL;
	return buf;
}

/* WHY the capture ended, with how a launched command failed when that
 * was why. */
static const char *ended_why(const struct session *s, const char *why)
{
	static char buf[128];
	const char *how = command_failure(s, why);

	if (!how)
		return why;
	snprintf(buf, sizeof(buf), "%s (%s)", why, how);
	return buf;
}

struct live_children {
	pid_t target;
	int n;
	char pids[96];
};

static void count_live_child(pid_t pid, void *arg)
{
	struct live_children *c = arg;
	size_t used = strlen(c->pids);

	if (pid == c->target || (kill(pid, 0) != 0 && errno == ESRCH))
		return;
	if (c->n++ < 4)
		snprintf(c->pids + used, sizeof(c->pids) - used, "%s%d", used ? ", " : "", (int)pid);
}

/* When the target's exit ended the capture, children it left running
 * are no longer traced: a launched wrapper or supervisor that exits
 * before its workers would otherwise lose their calls silently. */
static void note_live_children(const struct session *s, const char *why)
{
	struct live_children c = { .target = s->target.pid };

	if (!s->follow_children || strcmp(why, "target exited") != 0)
		return;
	span_tracer_for_each_process(s->spans, count_live_child, &c);
	if (c.n)
		fprintf(stderr, "pmetrics: note: %d child process%s of the target still run%s "
			"(%s%s) and %s no longer traced: trace %s with pmetrics record --pid\n",
			c.n, c.n == 1 ? "" : "es", c.n == 1 ? "s" : "", c.pids, c.n > 4 ? ", ..." : "",
			c.n == 1 ? "is" : "are", c.n == 1 ? "it" : "them");
}

/* The last line when the launched command failed: a capture of a
 * command that did not run as meant is easy to take for a measurement. */
static void warn_command_failed(const struct session *s, const char *why)
{
	const char *how = command_failure(s, why);

	if (how)
		fprintf(stderr, "pmetrics: warning: the command failed (%s): the capture holds "
			"only what it did until then\n", how);
}

/* ---- --resources without probes: no span tracer at all --------------- */

static bool has_target(const struct session *s)
{
	return s->opts->pid || s->opts->command;
}

static int setup_resources_only(struct session *s)
{
	const struct record_opts *o = s->opts;
	char err[1024];

	if (check_privileges() || init_loader(o) || check_kernel(s) ||
	    make_output_dir(s, o->output_dir) || (has_target(s) && start_target(s)) ||
	    resources_start(s) || sampling_start(s))
		return -1;
	say_kernel_memory(o);
	if (s->target.launched && target_release(&s->target, err, sizeof(err))) {
		cli_error("%s", err);
		return -1;
	}
	return 0;
}

/* Sleeps until the next poll, the end of the capture or the target's
 * exit, whichever comes first: one wake-up per interval. The stop signals
 * are blocked outside this wait (UNBLOCKED is the mask inside it), so one
 * arriving just before it still cuts it short. */
static void wait_for_next_poll(struct session *s, uint64_t end, const sigset_t *unblocked)
{
	uint64_t now = monotonic_ns(), until = s->res ? resource_sampler_next_due_ns(s->res) : UINT64_MAX;
	struct pollfd pfd = { .fd = s->target.pidfd, .events = POLLIN };
	struct timespec ts = { 0, 0 };

	if (end && end < until)
		until = end;
	if (until > now) {
		ts.tv_sec = (time_t)((until - now) / 1000000000ull);
		ts.tv_nsec = (long)((until - now) % 1000000000ull);
	}
	ppoll(&pfd, pfd.fd >= 0 ? 1 : 0, &ts, unblocked);
}

static const char *resources_only_loop(struct session *s)
{
	uint64_t end = s->opts->duration_ns ? monotonic_ns() + s->opts->duration_ns : 0;
	sigset_t stops, unblocked;

	sigemptyset(&stops);
	sigaddset(&stops, SIGINT);
	sigaddset(&stops, SIGTERM);
	sigaddset(&stops, SIGHUP);
	sigprocmask(SIG_BLOCK, &stops, &unblocked);
	for (;;) {
		if (resources_tick(s))
			return "resource sampling failed";
		if (stop_signal)
			return stop_signal == SIGINT ? "interrupted" : "terminated";
		if (end && monotonic_ns() >= end)
			return "duration reached";
		if (has_target(s) && target_done(s))
			return "target exited";
		wait_for_next_poll(s, end, &unblocked);
	}
}

static int run_resources_only(struct session *s)
{
	uint64_t started, elapsed;
	const char *why;

	if (setup_resources_only(s)) {
		sampling_discard(s);
		resources_discard(s);
		remove_created_dirs(s);
		return 1;
	}
	started = monotonic_ns();
	resources_begin(s);
	why = resources_only_loop(s);
	elapsed = monotonic_ns() - started;
	stop_launched_command(s);
	fprintf(stderr, "pmetrics: %s after %.2fs\n", ended_why(s, why), (double)elapsed / 1e9);
	int ret = resources_finish(s) | sampling_finish(s);
	warn_command_failed(s, why);
	return ret;
}

int record_run(const struct record_opts *opts)
{
	struct session *s = calloc(1, sizeof(*s));
	const char *why;
	uint64_t started, elapsed;
	int ret = 1;

	if (!s) {
		cli_error("out of memory");
		return 1;
	}
	s->opts = opts;
	s->target.pidfd = s->target.release_fd = s->target.exec_error_fd = -1;
	install_signal_handlers();
	if (opts->n_probes == 0) {
		ret = run_resources_only(s);
		goto out;
	}
	if (setup(s)) {
		ret = 1;
		sampling_discard(s);
		csv_file_discard(s->csv);
		s->csv = NULL;
		if (s->span_threads)
			csv_file_discard(s->span_threads);
		s->span_threads = NULL;
		resources_discard(s);
		remove_created_dirs(s);
		goto out;
	}
	resources_begin(s);
	started = monotonic_ns();
	why = capture_loop(s);
	elapsed = monotonic_ns() - started;
	pyspan_quiesce(s->py);
	drain(s);
	/* before a launched command is stopped, whose open calls would
	 * otherwise count as dying with their thread */
	read_engines(s);
	stop_launched_command(s);
	int flushed = flush_span_files(s);
	if (flushed && !s->write_error)
		s->write_error = -flushed;
	print_summary(s, ended_why(s, why), elapsed);
	note_live_children(s, why);
	if (s->write_error)
		report_write_error(s);
	ret = s->write_error ? 1 : 0;
	if (resources_finish(s) | sampling_finish(s))
		ret = 1;
	warn_command_failed(s, why);
	csv_file_close(s->csv);
	if (s->span_threads)
		csv_file_close(s->span_threads);
out:
	output_dir_close(s->out);
	teardown(s);
	kernel_check_release();
	free(s);
	return ret;
}

/* /proc numbers processes as the PID namespace it was mounted for sees
 * them, and pmetrics names them (its --pid, its children) as its own
 * namespace does: the two must agree, or every /proc read would be of
 * some other process. They differ when a PID namespace was made without
 * a /proc of its own. */
static int check_proc_matches_pidns(void)
{
	char self[32];
	ssize_t n = readlink("/proc/self", self, sizeof(self) - 1);

	if (n <= 0)
		return 0; /* no /proc at all: the first read will say so */
	self[n] = '\0';
	if (strtol(self, NULL, 10) == (long)getpid())
		return 0;
	cli_error("/proc belongs to another PID namespace than pmetrics (it calls pmetrics %s, "
		  "pmetrics is %d): mount a /proc for this namespace (unshare --pid --fork "
		  "--mount-proc, or mount -t proc proc /proc)", self, (int)getpid());
	return 1;
}

/* The capture is over: a stop signal ends pmetrics again, as it does
 * any command (the report made after the capture, for one). */
static void default_stop_signals(void)
{
	static const int stops[] = { SIGINT, SIGTERM, SIGHUP };
	sigset_t set;

	sigemptyset(&set);
	for (size_t i = 0; i < sizeof(stops) / sizeof(stops[0]); i++) {
		signal(stops[i], SIG_DFL);
		sigaddset(&set, stops[i]);
	}
	sigprocmask(SIG_UNBLOCK, &set, NULL);
}

int record_main(int argc, char **argv)
{
	struct record_opts *opts = calloc(1, sizeof(*opts));
	int ret;

	if (!opts) {
		cli_error("out of memory");
		return 1;
	}
	ret = record_parse_args(argc, argv, opts);
	if (ret == 0)
		ret = check_proc_matches_pidns();
	if (ret == 0) {
		ret = record_run(opts);
		/* the capture is whole and closed: its profile into the outputs */
		if (ret == 0 && opts->report_formats) {
			default_stop_signals();
			ret = report_capture(opts->output_dir, opts->report_formats);
		}
	} else if (ret < 0) {
		ret = 0; /* --help */
	}
	free(opts);
	return ret;
}
