// SPDX-License-Identifier: MIT
/* System resource sampling from BPF; see resources.h.
 *
 * Per poll: one pass of the BPF task iterator gives every thread's CPU
 * accounting and each process's start time, exec generation and RSS. The
 * command line of a process is read from /proc once, when the process (or
 * a new exec of it) is first seen, and cached by (pid, start time, exec
 * id) so a reused PID or an exec never inherits another command line. The
 * only file read at every poll is /proc/meminfo (MemAvailable, for the
 * memory series). */
#include "resources.h"
#include "bpf_loader.h"
#include "resource_procfs.h"
#include "resource_records.h"
#include "resources.skel.h"
#include "wall_clock.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#define NS_PER_SEC 1000000000ULL
#define CACHE_BUCKETS 1024
/* A command longer than this is cut in the CSV so a row always fits
 * CSV_ROW_MAX; matching still sees the whole command line. */
#define COMMAND_CSV_MAX 4096

static const char *const system_resource_header[] = {
	"query_time", "command", "running_since",
	"user_cpu_time", "system_cpu_time", "memory_percent",
};

static const char *const memory_series_header[] = {
	"query_time", "system_uptime_hrs", "system_avail_mem_mb",
	"command", "mem_rss_mb",
};

/* One process as last seen, keyed so PID reuse and exec start afresh. */
struct proc_entry {
	struct proc_entry *next;
	uint32_t tgid;
	uint64_t start_boottime_ns;
	uint64_t exec_id;
	uint64_t seen_poll;
	char *command;      /* NULL: unreadable or vanished when first seen */
	bool matched;       /* command matches a filter */
	struct resource_cputime prev; /* keeps reported times monotonic */
};

struct resource_sampler {
	struct resource_opts opts;
	struct resources_bpf *skel;
	struct bpf_links links;
	struct csv_file *data;
	struct csv_file *series;
	uint64_t next_due_ns;
	uint64_t interval_ns;
	struct resource_clock clock;
	struct proc_entry *cache[CACHE_BUCKETS];
	struct resource_task *tasks;
	size_t n_tasks, cap_tasks;
	struct resource_stats stats;
};

/* ---- small helpers ------------------------------------------------- */

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

static void debug_log(const struct resource_sampler *s, const char *fmt,
		      const char *arg, uint32_t pid)
{
	if (!s->opts.verbose && s->opts.log_level < LOG_DEBUG)
		return;
	fprintf(stderr, "pmetrics: resources: ");
	fprintf(stderr, fmt, arg, pid);
	fputc('\n', stderr);
}

bool resource_command_matches(const struct resource_opts *opts, const char *command)
{
	/* Python's fnmatch: no escapes (a backslash is literal), '*' crosses
	 * '/', a leading '.' is not special, case-sensitive on POSIX. */
	for (int i = 0; i < opts->n_filters; i++)
		if (fnmatch(opts->filters[i], command, FNM_NOESCAPE) == 0)
			return true;
	return false;
}

/* ---- process cache ------------------------------------------------- */

static struct proc_entry **cache_slot(struct resource_sampler *s, uint32_t tgid)
{
	return &s->cache[(tgid * 2654435761u) % CACHE_BUCKETS];
}

static void entry_free(struct proc_entry *e)
{
	free(e->command);
	free(e);
}

static struct proc_entry *entry_create(struct resource_sampler *s,
				       const struct resource_task *leader)
{
	struct proc_entry *e = calloc(1, sizeof(*e));
	char *command = NULL;
	int err;

	if (!e)
		return NULL;
	e->tgid = leader->tgid;
	e->start_boottime_ns = leader->start_boottime_ns;
	e->exec_id = leader->exec_id;
	err = resource_read_command(leader->tgid, leader->start_boottime_ns,
				    s->clock.clk_tck, &command);
	if (err == -ESTALE) {
		s->stats.pid_reused++;
		debug_log(s, "%s pid %u was reused while reading it", "", leader->tgid);
	} else if (err) {
		s->stats.unreadable++;
		debug_log(s, "%s cannot read /proc/%u/cmdline", strerror(-err), leader->tgid);
	}
	e->command = command;
	e->matched = command && command[0] && resource_command_matches(&s->opts, command);
	s->stats.processes_seen++;
	return e;
}

/* The cached entry of LEADER's process, created on first sight. */
static struct proc_entry *cache_lookup(struct resource_sampler *s,
				       const struct resource_task *leader)
{
	struct proc_entry **slot = cache_slot(s, leader->tgid), *e;

	for (e = *slot; e; e = e->next)
		if (e->tgid == leader->tgid &&
		    e->start_boottime_ns == leader->start_boottime_ns &&
		    e->exec_id == leader->exec_id)
			return e;
	e = entry_create(s, leader);
	if (e) {
		e->next = *slot;
		*slot = e;
	}
	return e;
}

/* Drops entries of processes that were not in this poll's pass. */
static void cache_sweep(struct resource_sampler *s, uint64_t poll)
{
	for (int b = 0; b < CACHE_BUCKETS; b++) {
		struct proc_entry **p = &s->cache[b];

		while (*p) {
			struct proc_entry *e = *p;

			if (e->seen_poll == poll) {
				p = &e->next;
				continue;
			}
			*p = e->next;
			entry_free(e);
		}
	}
}

/* ---- one pass of the task iterator --------------------------------- */

static int tasks_reserve(struct resource_sampler *s, size_t want)
{
	struct resource_task *grown;
	size_t cap = s->cap_tasks ? s->cap_tasks : 1024;

	if (want <= s->cap_tasks)
		return 0;
	while (cap < want)
		cap *= 2;
	grown = realloc(s->tasks, cap * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	s->tasks = grown;
	s->cap_tasks = cap;
	return 0;
}

/* Reads every thread's record. The seq_file hands out whole records, but
 * read() may end anywhere, so bytes are gathered and cut into records. */
static int read_tasks(struct resource_sampler *s)
{
	int fd = bpf_iter_create(bpf_link__fd(s->links.links[0]));
	size_t bytes = 0;
	int err = 0;

	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t n;

		err = tasks_reserve(s, bytes / sizeof(struct resource_task) + 256);
		if (err)
			break;
		n = read(fd, (char *)s->tasks + bytes,
			 s->cap_tasks * sizeof(struct resource_task) - bytes);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			break;
		}
		if (n == 0)
			break;
		bytes += (size_t)n;
	}
	close(fd);
	s->n_tasks = bytes / sizeof(struct resource_task);
	/* BPF reads the kernel's boot clock; /proc, btime and psutil give
	 * start times as pmetrics' time namespace sees them */
	for (size_t i = 0; i < s->n_tasks; i++)
		s->tasks[i].start_boottime_ns = boottime_as_seen_here(s->tasks[i].start_boottime_ns);
	return err;
}

/* The same records from /proc, where BPF cannot read tasks: one per
 * process, its leader, whose group totals are /proc/PID/stat's (all
 * threads, living and dead; already cut to clock ticks and split the
 * way /proc does, so the adjustment later leaves them as they are). */
static int read_tasks_procfs(struct resource_sampler *s)
{
	DIR *proc = opendir("/proc");
	struct dirent *de;
	int err = 0;

	if (!proc)
		return -errno;
	s->n_tasks = 0;
	while (!err && (de = readdir(proc))) {
		char *end;
		unsigned long pid = strtoul(de->d_name, &end, 10);

		if (!pid || *end)
			continue;
		err = tasks_reserve(s, s->n_tasks + 1);
		if (!err && resource_procfs_task((uint32_t)pid, s->clock.clk_tck,
						 &s->tasks[s->n_tasks]) == 0)
			s->n_tasks++;
	}
	closedir(proc);
	return err;
}

static int by_tgid_then_tid(const void *a, const void *b)
{
	const struct resource_task *x = a, *y = b;

	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return 0;
}

/* The leader record of TGID in the sorted pass, or NULL. */
static const struct resource_task *find_leader(const struct resource_sampler *s,
					       uint32_t tgid)
{
	struct resource_task key = { .tgid = tgid, .tid = tgid };

	return bsearch(&key, s->tasks, s->n_tasks, sizeof(key), by_tgid_then_tid);
}

/* With --pid: the target itself, and its descendants when following. */
static bool in_target_tree(const struct resource_sampler *s,
			   const struct resource_task *leader)
{
	const struct resource_task *t = leader;
	uint32_t root = (uint32_t)s->opts.root_pid;

	if (leader->tgid == root)
		return true;
	if (!s->opts.follow_children)
		return false;
	for (int depth = 0; t && depth < 64; depth++) {
		if (t->ppid == root)
			return true;
		if (t->ppid == t->tgid || t->ppid <= 1)
			return false;
		t = find_leader(s, t->ppid);
	}
	return false;
}

static bool selected(const struct resource_sampler *s,
		     const struct resource_task *leader, const struct proc_entry *e)
{
	if (!e->command || !e->command[0])
		return false;
	if (s->opts.root_pid <= 0)
		return e->matched;
	if (!in_target_tree(s, leader))
		return false;
	/* A target given by --pid/command is sampled whatever its command
	 * line, unless the user asked for filters too. */
	return !s->opts.filters_set || e->matched;
}

/* ---- rows ---------------------------------------------------------- */

/* The command in a CSV field, cut so a row always fits CSV_ROW_MAX; the
 * quoting is csv_row_str's, the one rule for every field. */
void resource_csv_command(struct csv_row *row, const char *command)
{
	char cut[COMMAND_CSV_MAX + 1];
	size_t len = strnlen(command, COMMAND_CSV_MAX);

	if (command[len] == '\0') {
		csv_row_str(row, command);
		return;
	}
	memcpy(cut, command, len);
	cut[len] = '\0';
	csv_row_str(row, cut);
}

static int append_row(struct resource_sampler *s, struct csv_file *f,
		      struct csv_row *row)
{
	int err;

	if (csv_row_end(row) < 0) {
		s->stats.rows_too_long++;
		return 0;
	}
	err = csv_file_append(f, row);
	if (err)
		s->stats.write_errors++;
	return err;
}

static int write_process_row(struct resource_sampler *s, uint64_t query_ns,
			     const struct proc_entry *e, const struct resource_cputime *cpu,
			     int64_t rss_pages)
{
	struct csv_row row;
	double rss_bytes = (double)rss_pages * (double)s->clock.page_size;

	csv_row_begin(&row, s->opts.layout);
	csv_row_u64(&row, query_ns);
	resource_csv_command(&row, e->command);
	csv_row_pyfloat(&row, resource_start_seconds(&s->clock, e->start_boottime_ns));
	csv_row_pyfloat(&row, resource_ticks_seconds(&s->clock, cpu->utime_ns));
	csv_row_pyfloat(&row, resource_ticks_seconds(&s->clock, cpu->stime_ns));
	/* psutil: rss / total * 100, in this order, in doubles. */
	csv_row_pyfloat(&row, rss_bytes / (double)s->clock.mem_total_bytes * 100);
	return append_row(s, s->data, &row);
}

static double round_to(double v, double scale)
{
	return round(v * scale) / scale;
}

static void series_row_begin(struct resource_sampler *s, struct csv_row *row,
			     uint64_t query_ns, double uptime_hrs)
{
	csv_row_begin(row, s->opts.layout);
	csv_row_u64(row, query_ns);
	csv_row_pyfloat(row, round_to(uptime_hrs, 1e4));
}

static int write_series_system_row(struct resource_sampler *s, uint64_t query_ns,
				   double uptime_hrs)
{
	struct csv_row row;
	uint64_t avail = 0;

	series_row_begin(s, &row, query_ns, uptime_hrs);
	if (resource_read_mem_available(&avail) == 0)
		csv_row_pyfloat(&row, round_to((double)avail / (1024.0 * 1024.0), 100));
	else
		csv_row_str(&row, "");
	csv_row_str(&row, "");
	csv_row_str(&row, "");
	return append_row(s, s->series, &row);
}

static int write_series_process_row(struct resource_sampler *s, uint64_t query_ns,
				    double uptime_hrs, const struct proc_entry *e,
				    int64_t rss_pages)
{
	struct csv_row row;
	double mib = (double)rss_pages * (double)s->clock.page_size / (1024.0 * 1024.0);

	series_row_begin(s, &row, query_ns, uptime_hrs);
	csv_row_str(&row, "");
	resource_csv_command(&row, e->command);
	csv_row_pyfloat(&row, round_to(mib, 100));
	return append_row(s, s->series, &row);
}

/* ---- poll ---------------------------------------------------------- */

/* Sums one process's threads (tasks[first..end)) into CPU times. */
static void group_cputime(const struct resource_task *leader,
			  const struct resource_task *first,
			  const struct resource_task *end, struct resource_cputime *out)
{
	out->utime_ns = leader->group_utime_ns;
	out->stime_ns = leader->group_stime_ns;
	out->runtime_ns = leader->group_runtime_ns;
	for (const struct resource_task *t = first; t < end; t++) {
		out->utime_ns += t->utime_ns;
		out->stime_ns += t->stime_ns;
		out->runtime_ns += t->runtime_ns;
	}
}

static int sample_group(struct resource_sampler *s, const struct resource_task *first,
			const struct resource_task *end, uint64_t query_ns,
			double uptime_hrs)
{
	const struct resource_task *leader = find_leader(s, first->tgid);
	struct resource_cputime raw, cpu;
	struct proc_entry *e;
	int err;

	if (!leader) {
		s->stats.no_leader++;
		return 0;
	}
	if (leader->flags & (RESOURCE_TASK_ZOMBIE | RESOURCE_TASK_NO_MM)) {
		s->stats.zombies++;
		return 0;
	}
	e = cache_lookup(s, leader);
	if (!e)
		return -ENOMEM;
	e->seen_poll = s->stats.polls;
	if (!selected(s, leader, e))
		return 0;
	group_cputime(leader, first, end, &raw);
	resource_cputime_adjust(&e->prev, &raw, &cpu);
	err = write_process_row(s, query_ns, e, &cpu, leader->rss_pages);
	if (!err)
		err = write_series_process_row(s, query_ns, uptime_hrs, e, leader->rss_pages);
	s->stats.rows++;
	return err;
}

static int sample_all(struct resource_sampler *s, uint64_t query_ns, double uptime_hrs)
{
	size_t i = 0;
	int err = write_series_system_row(s, query_ns, uptime_hrs);

	while (!err && i < s->n_tasks) {
		size_t j = i;

		while (j < s->n_tasks && s->tasks[j].tgid == s->tasks[i].tgid)
			j++;
		err = sample_group(s, &s->tasks[i], &s->tasks[j], query_ns, uptime_hrs);
		i = j;
	}
	return err;
}

int resource_sampler_poll(struct resource_sampler *s)
{
	uint64_t cpu_before = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	uint64_t now = monotonic_ns();
	uint64_t query_ns, boot_ns;
	int err;

	if (s->stats.polls == 0) /* the schedule starts at the first poll */
		s->next_due_ns = now;
	s->next_due_ns += s->interval_ns;
	if (s->next_due_ns <= now) /* late (suspend, slow disk): skip ahead */
		s->next_due_ns = now + s->interval_ns;
	if (!s->opts.enabled)
		return 0;
	s->stats.polls++;
	query_ns = clock_ns(CLOCK_REALTIME);
	boot_ns = clock_ns(CLOCK_BOOTTIME);
	err = s->opts.procfs ? read_tasks_procfs(s) : read_tasks(s);
	if (err) {
		fprintf(stderr, "pmetrics: resources: reading the task iterator failed: %s\n",
			strerror(-err));
		s->stats.failed_polls++;
		return 0; /* a lost poll is not fatal; try again next time */
	}
	qsort(s->tasks, s->n_tasks, sizeof(*s->tasks), by_tgid_then_tid);
	err = sample_all(s, query_ns, (double)boot_ns / 3600e9);
	cache_sweep(s, s->stats.polls);
	if (!err)
		err = csv_file_flush(s->data);
	if (!err)
		err = csv_file_flush(s->series);
	s->stats.threads_last = s->n_tasks;
	cpu_before = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu_before;
	s->stats.poll_cpu_ns += cpu_before;
	if (s->stats.polls == 1)
		s->stats.first_poll_cpu_ns = cpu_before;
	if (err && err != -ENOMEM)
		s->stats.write_errors++;
	return err == -ENOMEM ? err : 0;
}

uint64_t resource_sampler_next_due_ns(const struct resource_sampler *s)
{
	return s->next_due_ns;
}

const struct resource_stats *resource_sampler_stats(const struct resource_sampler *s)
{
	return &s->stats;
}

/* ---- open / close -------------------------------------------------- */

#define WHAT "the resource sampler"

static int load_bpf(struct resource_sampler *s)
{
	int cpus = libbpf_num_possible_cpus(), err;

	s->skel = bpf_loader_opened(resources_bpf__open_opts(bpf_loader_open_opts()), WHAT);
	if (!s->skel)
		return -EINVAL;
	s->skel->rodata->nr_cpus = cpus > 0 ? (__u32)cpus : 1;
	err = bpf_loader_load(s->skel->obj, WHAT);
	if (!err)
		err = bpf_links_attach(&s->links, s->skel->progs.resource_tasks, "the task iterator");
	return err;
}

static int open_files(struct resource_sampler *s)
{
	char err[512];

	/* csv_file_open makes the directory, or shares the one already open. */
	s->data = csv_file_open(s->opts.storage_dir, "system_resource_data",
				system_resource_header, 6, s->opts.layout, err, sizeof(err));
	if (s->data)
		s->series = csv_file_open(s->opts.storage_dir, "memory_series_data",
					  memory_series_header, 5, s->opts.layout,
					  err, sizeof(err));
	if (!s->data || !s->series) {
		fprintf(stderr, "pmetrics: %s\n", err);
		csv_file_discard(s->data); /* a failed start leaves nothing it made */
		s->data = NULL;
		return -EIO;
	}
	return 0;
}

int resource_sampler_open(struct resource_sampler **out, const struct resource_opts *opts)
{
	struct resource_sampler *s = calloc(1, sizeof(*s));
	int err;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->opts = *opts;
	s->interval_ns = (uint64_t)(opts->interval_s * 1e9);
	s->next_due_ns = monotonic_ns(); /* first poll at once */
	err = resource_clock_init(&s->clock);
	if (err)
		fprintf(stderr, "pmetrics: cannot read boot time and memory size from /proc (%s)\n",
			strerror(-err));
	if (!err && opts->enabled && !opts->procfs)
		err = load_bpf(s);
	if (!err && opts->enabled)
		err = open_files(s);
	if (err) {
		resource_sampler_close(s);
		return err;
	}
	*out = s;
	return 0;
}

void resource_sampler_summary(const struct resource_sampler *s, FILE *out)
{
	const struct resource_stats *st = &s->stats;

	if (!s->opts.enabled)
		return;
	/* The first poll reads every process's command line; the others
	 * only those of new processes, so they are shown apart. */
	fprintf(out, "resources: %" PRIu64 " poll%s, %" PRIu64 " row%s, %" PRIu64
		" processes seen, ", st->polls, st->polls == 1 ? "" : "s", st->rows,
		st->rows == 1 ? "" : "s", st->processes_seen);
	if (st->polls > 1)
		fprintf(out, "%.3f ms CPU per poll after the first (first ",
			(double)(st->poll_cpu_ns - st->first_poll_cpu_ns) / (double)(st->polls - 1) / 1e6);
	else
		fprintf(out, "one poll (");
	fprintf(out, "%.3f ms, %zu threads last pass)\n", (double)st->first_poll_cpu_ns / 1e6,
		(size_t)st->threads_last);
	if (st->unreadable || st->pid_reused || st->zombies || st->rows_too_long ||
	    st->write_errors || st->failed_polls)
		fprintf(out, "resources: skipped %" PRIu64 " unreadable, %" PRIu64
			" reused pids, %" PRIu64 " zombie samples; %" PRIu64
			" rows too long, %" PRIu64 " write errors, %" PRIu64 " failed polls\n",
			st->unreadable, st->pid_reused, st->zombies, st->rows_too_long,
			st->write_errors, st->failed_polls);
	/* filters that matched nothing read like an idle machine: say so */
	if (st->polls && !st->rows && st->processes_seen &&
	    (!s->opts.root_pid || s->opts.filters_set)) {
		fprintf(out, "resources: none of the %" PRIu64 " processes seen matched the filters (",
			st->processes_seen);
		for (int i = 0; i < s->opts.n_filters; i++)
			fprintf(out, "%s%s", i ? "," : "", s->opts.filters[i]);
		fprintf(out, "): give --process-filter GLOB, matched against the whole command "
			"line\n");
	}
	if (s->data && (csv_file_dropped(s->data) || csv_file_dropped(s->series)))
		fprintf(out, "resources: %" PRIu64 " rows written to %s and %" PRIu64 " lost; %"
			PRIu64 " written to %s and %" PRIu64 " lost\n",
			csv_file_rows_written(s->data), csv_file_path(s->data), csv_file_dropped(s->data),
			csv_file_rows_written(s->series), csv_file_path(s->series),
			csv_file_dropped(s->series));
}

void resource_sampler_close(struct resource_sampler *s)
{
	if (!s)
		return;
	if (s->data)
		csv_file_close(s->data);
	if (s->series)
		csv_file_close(s->series);
	bpf_links_destroy(&s->links);
	resources_bpf__destroy(s->skel);
	for (int b = 0; b < CACHE_BUCKETS; b++)
		while (s->cache[b]) {
			struct proc_entry *e = s->cache[b];

			s->cache[b] = e->next;
			entry_free(e);
		}
	free(s->tasks);
	free(s);
}

void resource_sampler_discard(struct resource_sampler *s)
{
	if (!s)
		return;
	csv_file_discard(s->data);
	csv_file_discard(s->series);
	s->data = s->series = NULL;
	resource_sampler_close(s);
}
