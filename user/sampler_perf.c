// SPDX-License-Identifier: MIT
/* The perf_event_open source of samples, for kernels that run no BPF on
 * perf events (the robot's 5.15: CONFIG_PERF_EVENTS but no
 * CONFIG_BPF_EVENTS); see sampler.h.
 *
 * Per thread of the target and per CPU, a task clock (on-CPU) and a
 * context-switch counter (off-CPU: a sample at every switch-out, and a
 * PERF_RECORD_SWITCH when the thread is back), inherited by the threads
 * and children made later. The events of one CPU share one ring. A
 * sample carries the kernel's frame-pointer callchain, the user
 * registers and the top 8 KiB of the user stack; the thread's Python
 * stack is read from the process as the sample arrives (the thread
 * wakes this one at every sample), so on-CPU it is where the thread is a
 * few microseconds later, off-CPU exactly where it waits. */
#include "sampler_source.h"
#include "array_grow.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bpf_loader.h"
#include "cli.h"
#include "proc_stat.h"
#include "sampler_unwind.h"
#include "wall_clock.h"

#define RING_DATA_PAGES 256
#define STACK_BYTES 8192
#define MAX_USER 127
#define MAX_KERNEL 64
#define TSTATE_SLOTS 1024
/* How long after its time stamp a record may still be on its way into
 * its ring (far more than it takes). */
#define RECORD_WRITE_NS 2000000ull

struct ring {
	int fd;
	struct perf_event_mmap_page *meta;
	uint8_t *data;
	size_t size; /* of the data area, a power of two */
};

struct perf_source {
	struct sample_source base;
	struct sampler *s;
	int ncpu;
	struct ring *rings;       /* per CPU: the first event opened there */
	int *fds;                 /* every event */
	size_t n_fds, cap_fds;
	uint64_t *off_ids;        /* ids of the context-switch events */
	size_t n_off_ids, cap_off_ids;
	struct pollfd *pfds;
	struct { pid_t pid, tid; struct py_thread_cache cache; } tstates[TSTATE_SLOTS];
	uint8_t *copy;            /* a record that wraps around its ring's end */
	struct { pid_t tid; uint64_t time; } *ins; /* switch-ins not handed over yet */
	size_t n_ins, cap_ins;
	struct { pid_t pid; uint64_t time; } *exits; /* processes ended, not let go yet */
	size_t n_exits, cap_exits;
	bool stopped;
	uint64_t last_exec_pid, last_exec_time;
	uint64_t fp[MAX_USER], kernel[MAX_KERNEL];
	struct py_frame_ref py[PY_MAX_FRAMES];
};

/* ---- opening the events ------------------------------------------------- */

static int event_open(struct perf_source *p, pid_t tid, int cpu, bool off_cpu)
{
	const struct sampler_config *c = sampler_config(p->s);
	struct perf_event_attr a = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(a),
		.config = off_cpu ? PERF_COUNT_SW_CONTEXT_SWITCHES : PERF_COUNT_SW_TASK_CLOCK,
		.sample_period = off_cpu ? 1 : sampler_period_ns(p->s),
		.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			       PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER,
		.sample_regs_user = unwind_regs_mask(),
		.sample_stack_user = STACK_BYTES,
		.disabled = 1,
		.inherit = 1,
		.sample_id_all = 1,
		.use_clockid = 1,
		.clockid = CLOCK_MONOTONIC,
		/* woken at every sample, to read the Python stack while the
		 * thread is still where it was sampled: beyond the stack copy
		 * that perf's own DWARF mode also asks for, these wakeups are
		 * what this path costs the program (README: Cost) */
		.wakeup_events = 1,
		.context_switch = off_cpu,
		/* one kind of event says when a process execs, and when a
		 * thread exits (comm alone brings the exits too; task says
		 * that they are wanted) */
		.comm = off_cpu == !c->hz,
		.comm_exec = off_cpu == !c->hz,
		.task = off_cpu == !c->hz,
	};

	return (int)syscall(SYS_perf_event_open, &a, tid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static int map_ring(struct ring *r, int fd)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t len = (size_t)page * (RING_DATA_PAGES + 1);
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (m == MAP_FAILED)
		return -errno;
	r->fd = fd;
	r->meta = m;
	r->data = (uint8_t *)m + page;
	r->size = (size_t)page * RING_DATA_PAGES;
	return 0;
}

/* One event of TID on CPU, into that CPU's ring. */
static int add_event(struct perf_source *p, pid_t tid, int cpu, bool off_cpu)
{
	int fd = event_open(p, tid, cpu, off_cpu), err;
	uint64_t id;

	if (fd < 0)
		return -errno;
	if (!array_grow((void **)&p->fds, &p->cap_fds, p->n_fds + 1, sizeof(*p->fds))) {
		close(fd);
		return -ENOMEM;
	}
	p->fds[p->n_fds++] = fd;
	if (off_cpu) {
		if (ioctl(fd, PERF_EVENT_IOC_ID, &id) != 0)
			return -errno;
		if (!array_grow((void **)&p->off_ids, &p->cap_off_ids, p->n_off_ids + 1, sizeof(id)))
			return -ENOMEM;
		p->off_ids[p->n_off_ids++] = id;
	}
	if (p->rings[cpu].fd < 0) {
		err = map_ring(&p->rings[cpu], fd);
		return err;
	}
	return ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, p->rings[cpu].fd) == 0 ? 0 : -errno;
}

static int add_thread(struct perf_source *p, pid_t tid)
{
	const struct sampler_config *c = sampler_config(p->s);
	int err;

	for (int cpu = 0; cpu < p->ncpu; cpu++) {
		if (c->hz && (err = add_event(p, tid, cpu, false)) != 0 && err != -ENODEV)
			return err;
		if (c->off_cpu && (err = add_event(p, tid, cpu, true)) != 0 && err != -ENODEV)
			return err;
	}
	return 0;
}

/* Every thread of the target as it is now; those it makes later
 * inherit the events. */
static int add_target(struct perf_source *p, pid_t pid)
{
	char path[64];
	struct dirent *d;
	DIR *dir;
	int err = 0, n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return add_thread(p, pid);
	while (!err && (d = readdir(dir))) {
		long tid = strtol(d->d_name, NULL, 10);

		if (tid <= 0)
			continue;
		err = add_thread(p, (pid_t)tid);
		if (err == -ESRCH)
			err = 0; /* it ended meanwhile */
		n += !err;
	}
	closedir(dir);
	return err ? err : n ? 0 : -ESRCH;
}

/* ---- reading samples ------------------------------------------------------- */

static bool is_off_cpu(const struct perf_source *p, uint64_t id)
{
	for (size_t i = 0; i < p->n_off_ids; i++)
		if (p->off_ids[i] == id)
			return true;
	return false;
}

/* The thread state cached for thread TID of process PID: a thread id
 * reused in another process is another thread. */
static struct py_thread_cache *tstate_of(struct perf_source *p, pid_t pid, pid_t tid)
{
	size_t i = (size_t)tid % TSTATE_SLOTS;

	if (p->tstates[i].tid != tid || p->tstates[i].pid != pid) {
		p->tstates[i].pid = pid;
		p->tstates[i].tid = tid;
		p->tstates[i].cache = (struct py_thread_cache){ 0 };
	}
	return &p->tstates[i].cache;
}

/* Thread TID of PID exited: its id may come back in the same process
 * (the pid space wraps while a long-lived server churns threads), and a
 * thread state before 3.11 names its thread by pthread_t, which glibc
 * hands to the next thread too, so the cache alone would not notice. */
static void forget_tstate(struct perf_source *p, pid_t pid, pid_t tid)
{
	size_t i = (size_t)tid % TSTATE_SLOTS;

	if (p->tstates[i].tid == tid && p->tstates[i].pid == pid)
		p->tstates[i].cache = (struct py_thread_cache){ 0 };
}

/* A PERF_RECORD_SAMPLE of our sample_type, LEN bytes after the header. */
static void on_sample(struct perf_source *p, const uint8_t *b, size_t len)
{
	const uint8_t *end = b + len;
	uint64_t id, time, nr, abi = 0, stack_size = 0;
	const uint64_t *ips, *regs = NULL;
	const uint8_t *stack = NULL;
	uint32_t pid, tid;
	int n_fp = 0, n_kernel = 0, n_regs = unwind_regs_count();
	bool user = false;
	struct proc_state *ps;
	struct raw_sample r = { 0 };

	if (len < 32)
		return;
	memcpy(&id, b, 8);
	memcpy(&pid, b + 8, 4);
	memcpy(&tid, b + 12, 4);
	memcpy(&time, b + 16, 8);
	memcpy(&nr, b + 24, 8);
	b += 32;
	if ((size_t)(end - b) < nr * 8)
		return;
	ips = (const uint64_t *)b;
	b += nr * 8;
	for (uint64_t i = 0; i < nr; i++) {
		if (ips[i] >= (uint64_t)PERF_CONTEXT_MAX) {
			user = ips[i] == (uint64_t)PERF_CONTEXT_USER;
			continue;
		}
		if (user && n_fp < MAX_USER)
			p->fp[n_fp++] = ips[i];
		else if (!user && n_kernel < MAX_KERNEL)
			p->kernel[n_kernel++] = ips[i];
	}
	if (end - b >= 8) {
		memcpy(&abi, b, 8);
		b += 8;
		if (abi != PERF_SAMPLE_REGS_ABI_NONE && (size_t)(end - b) >= (size_t)n_regs * 8) {
			regs = (const uint64_t *)b;
			b += n_regs * 8;
		}
	}
	if (end - b >= 8) {
		memcpy(&stack_size, b, 8);
		b += 8;
		if (stack_size && (size_t)(end - b) >= stack_size + 8) {
			uint64_t dyn;

			stack = b;
			memcpy(&dyn, b + stack_size, 8);
			stack_size = dyn < stack_size ? dyn : stack_size;
		} else {
			stack_size = 0;
		}
	}
	r.kind = is_off_cpu(p, id) ? PROFILE_OFF_CPU : PROFILE_ON_CPU;
	r.mono_ns = time;
	r.weight_ns = r.kind == PROFILE_ON_CPU ? sampler_period_ns(p->s) : 0;
	r.pid = (pid_t)pid;
	r.tid = (pid_t)tid;
	r.kernel = p->kernel;
	r.n_kernel = n_kernel;
	r.py_status = PY_WALK_NOT_PYTHON;
	ps = sampler_proc(p->s, r.pid, r.mono_ns);
	if (ps && ps->kind == PROC_PYTHON) {
		r.py = p->py;
		r.n_py = python_walk_thread(&ps->py, r.tid, tstate_of(p, r.pid, r.tid), p->py, &r.py_status);
	}
	r.user = p->fp;
	r.n_user = n_fp;
	r.regs = stack ? regs : NULL;
	r.stack = regs ? stack : NULL;
	r.stack_len = regs && stack ? stack_size : 0;
	sampler_add(p->s, &r);
}

/* sample_id_all's trailer of a non-sample record: pid, tid, time, id. */
static bool trailer(const uint8_t *b, size_t len, uint32_t *pid, uint32_t *tid, uint64_t *time)
{
	if (len < 24)
		return false;
	b += len - 24;
	memcpy(pid, b, 4);
	memcpy(tid, b + 4, 4);
	memcpy(time, b + 8, 8);
	return true;
}

static void on_record(struct perf_source *p, const struct perf_event_header *h)
{
	const uint8_t *b = (const uint8_t *)(h + 1);
	size_t len = h->size - sizeof(*h);
	uint32_t pid, tid;
	uint64_t time, lost;

	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		on_sample(p, b, len);
		break;
	case PERF_RECORD_LOST:
		if (len >= 16) {
			memcpy(&lost, b + 8, 8);
			sampler_lost(p->s, PROFILE_LOSS_PERF_LOST, lost);
		}
		break;
	case PERF_RECORD_SWITCH:
		if (!(h->misc & PERF_RECORD_MISC_SWITCH_OUT) && trailer(b, len, &pid, &tid, &time) &&
		    array_grow((void **)&p->ins, &p->cap_ins, p->n_ins + 1, sizeof(*p->ins))) {
			p->ins[p->n_ins].tid = (pid_t)tid;
			p->ins[p->n_ins++].time = time;
		}
		break;
	case PERF_RECORD_EXIT: /* pid, ppid, tid, ptid, time */
		if (len >= 24) {
			memcpy(&pid, b, 4);
			memcpy(&tid, b + 8, 4);
			memcpy(&time, b + 16, 8);
			forget_tstate(p, (pid_t)pid, (pid_t)tid);
			/* the process's main thread: once every record up to
			 * its time has been read, the process is let go */
			if (pid == tid && array_grow((void **)&p->exits, &p->cap_exits, p->n_exits + 1,
						     sizeof(*p->exits))) {
				p->exits[p->n_exits].pid = (pid_t)pid;
				p->exits[p->n_exits++].time = time;
			}
		}
		break;
	case PERF_RECORD_COMM:
		/* the same exec comes once per CPU's inherited event */
		if ((h->misc & PERF_RECORD_MISC_COMM_EXEC) && len >= 8) {
			memcpy(&pid, b, 4);
			if (trailer(b, len, &pid, &tid, &time) &&
			    (p->last_exec_pid != pid || p->last_exec_time != time)) {
				char comm[16] = "";

				p->last_exec_pid = pid;
				p->last_exec_time = time;
				/* pid, tid, the name NUL-terminated, the trailer */
				if (len > 8 + 24)
					snprintf(comm, sizeof(comm), "%.*s", (int)(len - 8 - 24),
						 (const char *)b + 8);
				sampler_exec(p->s, (pid_t)pid, time, comm);
			}
		}
		break;
	default:
		break;
	}
}

static void read_ring(struct perf_source *p, struct ring *r)
{
	uint64_t head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = r->meta->data_tail;

	while (tail < head) {
		size_t at = (size_t)(tail & (r->size - 1));
		struct perf_event_header *h = (struct perf_event_header *)(r->data + at);
		size_t size = h->size;

		if (size < sizeof(*h) || size > head - tail) {
			/* not a record the kernel writes: what is left of
			 * the ring cannot be parsed; dropped, counted */
			sampler_lost(p->s, PROFILE_LOSS_PERF_LOST, 1);
			tail = head;
			break;
		}
		if (at + size > r->size) {
			/* wraps around: put it together */
			memcpy(p->copy, r->data + at, r->size - at);
			memcpy(p->copy + (r->size - at), r->data, size - (r->size - at));
			h = (struct perf_event_header *)p->copy;
		}
		on_record(p, h);
		tail += size;
	}
	__atomic_store_n(&r->meta->data_tail, tail, __ATOMIC_RELEASE);
}

/* Whether every thread of process PID has ended: gone, or left as a
 * zombie for its parent. Its main thread's exit record alone does not
 * say so (pthread_exit() in main, an exec from another thread). */
static bool threads_ended(pid_t pid)
{
	char path[64];
	struct dirent *d;
	bool ended = true;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return true;
	while (ended && (d = readdir(dir))) {
		struct proc_stat st;
		int fd;

		if (d->d_name[0] == '.')
			continue;
		fd = openat(dirfd(dir), d->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		ended = fd < 0 || proc_stat_read_at(fd, &st) != 0 || st.state == 'Z' ||
			st.state == 'X';
		if (fd >= 0)
			close(fd);
	}
	closedir(dir);
	return ended;
}

static int by_time(const void *a, const void *b)
{
	const struct { pid_t tid; uint64_t time; } *x = a, *y = b;

	return x->time < y->time ? -1 : x->time > y->time;
}

static void perf_poll(struct sample_source *src, int timeout_ms)
{
	struct perf_source *p = (struct perf_source *)src;
	int n = 0;

	for (int cpu = 0; cpu < p->ncpu; cpu++)
		if (p->rings[cpu].fd >= 0)
			p->pfds[n++] = (struct pollfd){ .fd = p->rings[cpu].fd, .events = POLLIN };
	uint64_t upto;
	size_t i;

	if (timeout_ms && n)
		poll(p->pfds, (nfds_t)n, timeout_ms);
	/* Every record stamped before now is in its ring by now (a record
	 * is written where it is stamped, with interrupts off), give or take
	 * RECORD_WRITE_NS; once stopped, every record is. */
	upto = p->stopped ? UINT64_MAX : monotonic_ns() - RECORD_WRITE_NS;
	for (int cpu = 0; cpu < p->ncpu; cpu++)
		if (p->rings[cpu].fd >= 0)
			read_ring(p, &p->rings[cpu]);
	/* The samples first, then the switch-ins up to UPTO in time order:
	 * a thread's switch-in sits in the ring of the CPU it came back on,
	 * which may have been read before the ring holding its switch-out,
	 * and then a later switch-in of it in a ring read after. A later
	 * one waits for the next read. */
	if (p->n_ins)
		qsort(p->ins, p->n_ins, sizeof(*p->ins), by_time);
	for (i = 0; i < p->n_ins && p->ins[i].time <= upto; i++)
		sampler_back_on_cpu(p->s, p->ins[i].tid, 0, p->ins[i].time);
	if (i) {
		memmove(p->ins, p->ins + i, (p->n_ins - i) * sizeof(*p->ins));
		p->n_ins -= i;
	}
	for (i = 0; i < p->n_exits;) {
		if (p->exits[i].time > upto) {
			i++;
			continue;
		}
		if (threads_ended(p->exits[i].pid))
			sampler_exit(p->s, p->exits[i].pid);
		p->exits[i] = p->exits[--p->n_exits];
	}
}

/* ---- life cycle ------------------------------------------------------------ */

static int perf_start(struct sample_source *src)
{
	struct perf_source *p = (struct perf_source *)src;

	for (size_t i = 0; i < p->n_fds; i++) {
		if (ioctl(p->fds[i], PERF_EVENT_IOC_ENABLE, 0) != 0) {
			cli_error("cannot start perf event sampling: %s", strerror(errno));
			return -1;
		}
	}
	return 0;
}

static void perf_stop(struct sample_source *src)
{
	struct perf_source *p = (struct perf_source *)src;

	for (size_t i = 0; i < p->n_fds; i++)
		ioctl(p->fds[i], PERF_EVENT_IOC_DISABLE, 0);
	p->stopped = true;
}

static void perf_close(struct sample_source *src)
{
	struct perf_source *p = (struct perf_source *)src;
	long page = sysconf(_SC_PAGESIZE);

	for (int cpu = 0; p->rings && cpu < p->ncpu; cpu++)
		if (p->rings[cpu].meta)
			munmap(p->rings[cpu].meta, (size_t)page * (RING_DATA_PAGES + 1));
	for (size_t i = 0; i < p->n_fds; i++)
		close(p->fds[i]);
	free(p->fds);
	free(p->off_ids);
	free(p->rings);
	free(p->pfds);
	free(p->copy);
	free(p->ins);
	free(p->exits);
	free(p);
}

static const struct sample_source_ops perf_ops = {
	.start = perf_start,
	.poll = perf_poll,
	.stop = perf_stop,
	.close = perf_close,
};

int perf_source_open(struct sample_source **out, struct sampler *s)
{
	struct perf_source *p = calloc(1, sizeof(*p));
	const struct sampler_config *c = sampler_config(s);
	int err;

	if (!p) {
		cli_error("out of memory");
		return -1;
	}
	p->base.ops = &perf_ops;
	p->s = s;
	p->ncpu = (int)sysconf(_SC_NPROCESSORS_CONF);
	p->rings = calloc((size_t)(p->ncpu > 0 ? p->ncpu : 1), sizeof(*p->rings));
	p->pfds = calloc((size_t)(p->ncpu > 0 ? p->ncpu : 1), sizeof(*p->pfds));
	p->copy = malloc(65536);
	if (p->ncpu <= 0 || !p->rings || !p->pfds || !p->copy) {
		cli_error("out of memory");
		perf_close(&p->base);
		return -1;
	}
	for (int cpu = 0; cpu < p->ncpu; cpu++)
		p->rings[cpu].fd = -1;
	bpf_loader_raise_fd_limit(); /* events per thread and CPU */
	err = add_target(p, c->pid);
	if (err) {
		cli_error("cannot sample process %d with perf_event_open: %s%s", (int)c->pid,
			  strerror(-err), err == -EACCES || err == -EPERM ?
			  " (needs CAP_PERFMON, or kernel.perf_event_paranoid <= 1)" :
			  bpf_loader_fd_hint(err));
		perf_close(&p->base);
		return -1;
	}
	*out = &p->base;
	return 0;
}
