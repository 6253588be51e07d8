// SPDX-License-Identifier: MIT
/* The sampler's session: its thread, the processes it has seen, naming
 * frames, span states, the profile writer; see sampler.h. The samples
 * themselves come from a source (sampler_source.h). */
#include "sampler.h"
#include "array_grow.h"
#include "sampler_source.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "cli.h"
#include "elf_symbols.h"
#include "profile/profile_writer.h"
#include "span_event.h"
#include "pyspan_config.h"
#include "proc_stat.h"
#include "python_probe.h"
#include "resource_procfs.h"
#include "sampler_unwind.h"
#include "symbolizer.h"
#include "wall_clock.h"

/* A process without an interpreter after this long is a native one,
 * looked at again this often (a libpython loaded later with dlopen). */
#define PROC_SETTLE_NS 1000000000ull
#define NATIVE_LOOK_AGAIN_NS 5000000000ull
/* How long an exec'd program that needs a libpython is waited for to map
 * it, and how often it is looked at meanwhile. */
#define EXEC_MAP_WAIT_NS 100000000ull
#define EXEC_MAP_LOOK_NS 1000000L
#define PROC_LOOK_EVERY_NS 50000000ull
#define FLUSH_EVERY_NS 1000000000ull
/* How long the source hands over each record at once after the sampler
 * found an interpreter or read a code object it had not seen. */
#define EAGER_FOR_NS 500000000ull
#define FRAME_TEXT 512
#define SPAN_MAX_STATES SPAN_MAX_PROBES
/* and PROFILE_TRUNCATED_FRAME */
#define MAX_FRAMES (SAMPLER_MAX_USER + SAMPLER_MAX_KERNEL + PY_MAX_FRAMES + 1)
/* The largest stacks a source hands over. */
#define SAMPLER_MAX_USER 127
#define SAMPLER_MAX_KERNEL 64
/* A probe as a span state on a stack. */
struct span_match {
	const char *state;
	bool python;
	uint64_t ino, function_offset; /* native */
	struct pyspan_probe_cfg py;    /* python: qualname and file suffixes */
};

/* An off-CPU sample waiting for its thread to come back. */
/* What a built stack holds, counted as its sample is written (so that a
 * dropped off-CPU sample is in no count). */
#define STACK_PYTHON 1u         /* Python frames */
#define STACK_PYTHON_UNNAMED 2u /* some of them could not be named */

struct pending_off {
	pid_t pid, tid;
	uint64_t out_ns, stack_id;
	unsigned python; /* its stack's STACK_PYTHON* bits */
	int n_spans;
	const char *spans[SPAN_MAX_STATES];
};

struct sampler {
	struct sampler_config cfg;
	struct sample_source *src;
	struct profile_writer *w;
	struct symbolizer *sym;
	struct python_names *names;
	struct unwinder *unw;
	struct wall_clock clock;
	uint64_t period_ns;

	struct span_match matches[SPAN_MAX_STATES];
	int n_matches;

	struct proc_state *procs;
	size_t n_procs, cap_procs;

	struct pending_off *pending;
	size_t n_pending, cap_pending;

	pthread_t thread;
	bool running;
	atomic_bool stopping;
	int write_error;
	uint64_t last_flush_ns, stopped_ns;
	/* eager: records handed over one by one, until eager_until_ns */
	uint64_t code_reads_seen, eager_until_ns;
	bool eager;

	/* counts for the summary */
	uint64_t on_cpu, off_cpu, with_python, procs_seen;
	uint64_t python_unnamed; /* samples with Python frames whose names could not be read */
	size_t procs_most; /* processes held at once, the ended let go */

	/* one sample's frames, root first */
	struct native_frame native[SAMPLER_MAX_USER];
	uint64_t dwarf[SAMPLER_MAX_USER];
	/* one sample's chain with the real return addresses of its pending
	 * uretprobes put back; its thread's native calls in progress */
	uint64_t chain[SAMPLER_MAX_USER];
	struct call_stack open_calls;
	struct sampler_return open_returns[SAMPLER_RETURNS];
	char text[MAX_FRAMES][FRAME_TEXT];
	const char *frames[MAX_FRAMES];
};

const struct sampler_config *sampler_config(const struct sampler *s)
{
	return &s->cfg;
}

enum sampler_path sampler_path(const struct sampler *s)
{
	return s->cfg.use_bpf ? SAMPLER_PATH_BPF : SAMPLER_PATH_PERF;
}

/* ---- --sample=HZ ------------------------------------------------------------ */

unsigned int sampler_max_rate(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_max_sample_rate", "re");
	unsigned int rate = SAMPLER_MAX_HZ;

	if (f) {
		if (fscanf(f, "%u", &rate) != 1 || rate > SAMPLER_MAX_HZ)
			rate = SAMPLER_MAX_HZ;
		fclose(f);
	}
	return rate;
}

int sampler_parse_hz(const char *arg, unsigned int max_rate, unsigned int *hz, char *err,
		     size_t errlen)
{
	unsigned long v = 0;
	const char *p = arg;

	for (; *p >= '0' && *p <= '9' && v <= max_rate; p++)
		v = v * 10 + (unsigned long)(*p - '0');
	if (p == arg || (*p && !(*p >= '0' && *p <= '9')) || v == 0 || v > max_rate) {
		snprintf(err, errlen, "bad --sample '%s': give samples per second, a whole number "
			 "from 1 to %u", arg, max_rate);
		return -1;
	}
	*hz = (unsigned int)v;
	return 0;
}

/* ---- span states ---------------------------------------------------------- */

/* A native probe's function: its file (inode) and the file offset of
 * its first instruction, which the symbolizer names for a frame. */
static int native_match(struct sampler *s, const struct probe_spec *p, struct span_match *m)
{
	char err[1024], suggest[8];
	struct resolved_file file;
	struct stat st;

	if (!s->cfg.view || resolve_binary(s->cfg.view, p->binary, &file, err, sizeof(err)) != 0 ||
	    elf_symbol_offset(file.path, p->symbol, &m->function_offset, suggest, sizeof(suggest),
			      err, sizeof(err)) != 0 ||
	    stat(file.path, &st) != 0)
		return -1;
	m->ino = st.st_ino;
	return 0;
}

static void setup_matches(struct sampler *s)
{
	for (int i = 0; i < s->cfg.n_probes && s->n_matches < SPAN_MAX_STATES; i++) {
		const struct probe_spec *p = &s->cfg.probes[i];
		struct span_match *m = &s->matches[s->n_matches];

		memset(m, 0, sizeof(*m));
		m->state = p->state;
		if (p->kind == PROBE_PYTHON) {
			struct py_probe py = { .module = p->binary, .qualname = p->symbol };

			m->python = true;
			pyspan_probe_cfg_fill(&py, &m->py);
		} else if (native_match(s, p, m) != 0) {
			continue; /* record's attach says why */
		}
		s->n_matches++;
	}
}

static bool ends_with(const char *s, const char *suffix, size_t n)
{
	size_t len = strlen(s);

	return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

static bool python_matches(const struct span_match *m, const struct python_frame_text *t)
{
	return strcmp(t->qualname, m->py.qualname) == 0 &&
	       (ends_with(t->file, m->py.file_suffix, m->py.file_len) ||
		ends_with(t->file, m->py.pkg_suffix, m->py.pkg_len) ||
		strcmp(t->file, m->py.file_suffix + 1) == 0);
}

/* Adds STATE to the sample's states once, outermost first. */
static void add_state(const char **states, int *n, const char *state)
{
	for (int i = 0; i < *n; i++)
		if (states[i] == state || strcmp(states[i], state) == 0)
			return;
	if (*n < SPAN_MAX_STATES)
		states[(*n)++] = state;
}

/* ---- processes -------------------------------------------------------- */

static struct proc_state *find_proc(struct sampler *s, pid_t pid)
{
	for (size_t i = 0; i < s->n_procs; i++)
		if (s->procs[i].pid == pid)
			return &s->procs[i];
	return NULL;
}

static void look_at(struct sampler *s, struct proc_state *p, uint64_t now)
{
	char why[512];
	int ret;

	p->last_look_ns = now;
	ret = python_proc_find(p->pid, &p->py, why, sizeof(why));
	if (ret == 0) {
		p->kind = PROC_PYTHON;
		python_proc_check_tid(&p->py);
		if (s->src->ops->python_found)
			s->src->ops->python_found(s->src, p);
		s->eager_until_ns = now + EAGER_FOR_NS; /* its imports come */
		cli_verbose(s->cfg.verbose, "process %d runs CPython %d.%d (%s): Python stacks on",
			    (int)p->pid, p->py.major, p->py.minor, p->py.interp_name);
	} else if (ret == -ENOENT || ret == -ESRCH) {
		/* no interpreter (yet: a launched one maps it after exec) */
		if (now - p->first_seen_ns >= PROC_SETTLE_NS)
			p->kind = PROC_NATIVE;
	} else {
		p->kind = PROC_UNSUPPORTED;
		fprintf(stderr, "pmetrics: warning: process %d: %s: its samples have native stacks only\n",
			(int)p->pid, why);
	}
}

/* PID's /proc/PID/cmdline into RAW; its length (<= 0: none). A user
 * process mid-exec (a fork's first sample, read at once) has no command
 * line for a moment: its exec is waited for, 10 ms at most. */
static ssize_t read_cmdline(pid_t pid, char *raw, size_t size)
{
	struct timespec pause = { 0, 1000000 };
	struct proc_stat st;
	char path[64];
	ssize_t len = -1;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	for (int tries = 0; tries < 10; tries++) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			len = read(fd, raw, size);
			close(fd);
		}
		if (len > 0 || proc_stat_read(pid, &st) != 0 || (st.flags & PF_KTHREAD) ||
		    st.state == 'Z' || st.state == 'X')
			break;
		nanosleep(&pause, NULL);
	}
	return len;
}

/* PID's command line RAW[0..LEN) as the resource series' command column
 * has it, else "[comm]" (a kernel thread; a zombie); "" when it is gone. */
static void process_command(pid_t pid, const char *raw, ssize_t len, char *out, size_t size)
{
	struct proc_stat st;

	out[0] = '\0';
	if (len > 0)
		resource_format_command(raw, (size_t)len, out, size);
	if (!out[0] && proc_stat_read(pid, &st) == 0)
		snprintf(out, size, "[%s]", st.comm);
}

/* Whether the base name of argv[0], the start of command line
 * RAW[0..LEN), cut as the kernel cuts a program's name (15 bytes), is
 * COMM. */
static bool argv0_is(const char *raw, ssize_t len, const char *comm)
{
	const char *argv0 = raw, *end, *base;
	size_t n;

	if (len <= 0)
		return false;
	end = memchr(raw, '\0', (size_t)len); /* argv[0] ends at its NUL */
	n = end ? (size_t)(end - raw) : (size_t)len;
	base = memrchr(argv0, '/', n);
	base = base ? base + 1 : argv0;
	n -= (size_t)(base - argv0);
	return strlen(comm) >= 15 ? n >= 15 && strncmp(base, comm, 15) == 0
				  : n == strlen(comm) && strncmp(base, comm, n) == 0;
}

/* Whether PID, whose command line is RAW[0..LEN), still runs the
 * program an exec named COMM: its name is still that, or, for a program
 * that renamed itself (prctl PR_SET_NAME), its argv[0] says so. A later
 * exec of another program changes both; a process gone has neither. */
static bool still_runs(pid_t pid, const char *raw, ssize_t len, const char *comm)
{
	struct proc_stat st;

	if (proc_stat_read(pid, &st) != 0)
		return false;
	return strcmp(st.comm, comm) == 0 || argv0_is(raw, len, comm);
}

/* A profile_processes row: PID runs what it runs now from MONO_NS on;
 * EXEC_COMM: the program an exec at MONO_NS started ("" for none, or
 * not known), "[EXEC_COMM]" when PID no longer runs it. */
static void note_process(struct sampler *s, pid_t pid, uint64_t mono_ns, const char *exec_comm)
{
	char command[PROFILE_COMMAND_MAX + 1], raw[PROFILE_COMMAND_MAX];
	ssize_t len;

	if (s->cfg.held && pid == s->cfg.pid)
		return; /* still pmetrics, before the exec */
	len = read_cmdline(pid, raw, sizeof(raw));
	process_command(pid, raw, len, command, sizeof(command));
	if (exec_comm[0] && !still_runs(pid, raw, len, exec_comm))
		snprintf(command, sizeof(command), "[%s]", exec_comm);
	if (command[0])
		profile_writer_process(s->w, wall_clock_from_mono(&s->clock, mono_ns),
				       (uint32_t)pid, command);
}

/* A new process, not looked at yet, first seen at SEEN_NS (its first
 * sample's or exec's time: its profile_processes row's, so that a pid
 * used again gets the new program's row for all its samples); EXEC_COMM
 * as note_process() has it. NULL without memory. */
static struct proc_state *new_proc(struct sampler *s, pid_t pid, uint64_t now, uint64_t seen_ns,
				    const char *exec_comm)
{
	struct proc_state *p;

	if (!array_grow((void **)&s->procs, &s->cap_procs, s->n_procs + 1, sizeof(*s->procs)))
		return NULL;
	p = &s->procs[s->n_procs++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->first_seen_ns = now;
	note_process(s, pid, seen_ns, exec_comm);
	s->procs_seen++;
	if (s->n_procs > s->procs_most)
		s->procs_most = s->n_procs;
	return p;
}

/* P just exec'd. A program that needs a libpython (a launcher such as
 * /usr/bin/python3.12) has its dynamic loader map it before main: wait
 * for that here, so the BPF side knows the interpreter before any
 * Python code runs. Else it is learnt only with the first samples the
 * sampler thread gets to (up to its poll interval later, or more while
 * it symbolizes the first native stacks), and a wait begun meanwhile (a
 * thread's first sleep) would have no Python stack for all its length.
 * Other programs are looked at as their samples come. */
static void look_after_exec(struct sampler *s, struct proc_state *p)
{
	struct timespec pause = { 0, EXEC_MAP_LOOK_NS };
	uint64_t start = monotonic_ns();
	char exe[64], needed[256];

	look_at(s, p, start);
	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)p->pid);
	if (p->kind != PROC_UNKNOWN || elf_needed(exe, "libpython", needed, sizeof(needed)) != 0)
		return;
	while (p->kind == PROC_UNKNOWN && monotonic_ns() - start < EXEC_MAP_WAIT_NS) {
		nanosleep(&pause, NULL);
		look_at(s, p, monotonic_ns());
	}
}

struct proc_state *sampler_proc(struct sampler *s, pid_t pid, uint64_t seen_ns)
{
	struct proc_state *p = find_proc(s, pid);
	uint64_t now = monotonic_ns();

	if (!p) {
		p = new_proc(s, pid, now, seen_ns, "");
		if (!p)
			return NULL;
		look_at(s, p, now);
	} else if ((p->kind == PROC_UNKNOWN && now - p->last_look_ns >= PROC_LOOK_EVERY_NS) ||
		   (p->kind == PROC_NATIVE && now - p->last_look_ns >= NATIVE_LOOK_AGAIN_NS)) {
		look_at(s, p, now);
	}
	return p;
}

void sampler_exit(struct sampler *s, pid_t pid)
{
	struct proc_state *p = find_proc(s, pid);

	symbolizer_forget(s->sym, pid);
	python_names_forget(s->names, pid);
	unwinder_forget(s->unw, pid);
	if (p)
		*p = s->procs[--s->n_procs];
}

void sampler_exec(struct sampler *s, pid_t pid, uint64_t mono_ns, const char *comm)
{
	struct proc_state *p = find_proc(s, pid);

	if (pid == s->cfg.pid)
		s->cfg.held = false;
	symbolizer_forget(s->sym, pid);
	python_names_forget(s->names, pid);
	unwinder_forget(s->unw, pid);
	if (p)
		note_process(s, pid, mono_ns, comm);
	else
		p = new_proc(s, pid, monotonic_ns(), mono_ns, comm);
	if (!p)
		return;
	p->kind = PROC_UNKNOWN;
	p->first_seen_ns = monotonic_ns();
	look_after_exec(s, p);
}

/* Whether return address PC of PID is in a thread's first function
 * (_start, start_thread, clone...): a frame-pointer chain that reaches
 * it has not lost its way, though it may have skipped frames. */
static bool is_root_frame(struct sampler *s, pid_t pid, uint64_t pc)
{
	static const char *const roots[] = { "_start", "__libc_start_main", "__libc_start_main_impl",
					     "__libc_start_call_main", "start_thread", "clone",
					     "clone3", "__clone", "__clone3", "thread_start" };
	struct native_frame f;

	symbolizer_user(s->sym, pid, pc, true, &f);
	for (size_t i = 0; f.function && i < sizeof(roots) / sizeof(roots[0]); i++)
		if (strcmp(f.function, roots[i]) == 0)
			return true;
	return false;
}

/* ---- one sample --------------------------------------------------------- */

static const char *put_frame(struct sampler *s, int *n)
{
	s->frames[*n] = s->text[*n];
	return s->text[(*n)++];
}

/* The Python frames of R (root first), their span states; returns the
 * STACK_PYTHON* bits they make. */
static unsigned python_frames(struct sampler *s, const struct proc_state *p,
			      const struct raw_sample *r, int *n, const char **states, int *n_states)
{
	unsigned held = STACK_PYTHON;

	for (int i = r->n_py - 1; i >= 0 && *n < MAX_FRAMES; i--) {
		struct python_frame_text t;
		char *buf = (char *)put_frame(s, n);

		if (python_frame_name(s->names, &p->py, &r->py[i], &t) != 0) {
			profile_frame_native(buf, FRAME_TEXT, "[unknown Python frame]");
			held |= STACK_PYTHON_UNNAMED;
			continue;
		}
		profile_frame_python(buf, FRAME_TEXT, t.qualname, t.file, t.line);
		for (int k = 0; k < s->n_matches; k++)
			if (s->matches[k].python && python_matches(&s->matches[k], &t))
				add_state(states, n_states, s->matches[k].state);
	}
	return held;
}

struct in_interpreter {
	struct sampler *s;
	const struct proc_state *p;
};

/* Whether PC is in P's interpreter's own code (libpython or the python
 * executable). */
static bool in_interpreter(uint64_t pc, void *arg)
{
	struct in_interpreter *at = arg;
	struct native_frame f;

	symbolizer_user(at->s->sym, at->p->pid, pc, true, &f);
	return f.in_file && f.dev == at->p->py.interp_dev && f.ino == at->p->py.interp_ino;
}

/* One word of process *ARG's memory. */
static bool read_live_word(uint64_t addr, uint64_t *word, void *arg)
{
	return python_read_memory(*(const pid_t *)arg, word, sizeof(*word), addr) == 0;
}

/* R's frame-pointer chain with the real return addresses of its pending
 * uretprobes where the kernel left its trampoline: S's copy of it then. */
static const uint64_t *chain_with_returns(struct sampler *s, const struct raw_sample *r,
					  const struct pending_returns *returns)
{
	pid_t pid = r->pid;
	struct stack_view v = { r->regs ? unwind_regs_sp(r->regs) : 0, r->stack, r->stack_len,
				read_live_word, &pid };

	if (!returns->n || r->n_user <= 1 || r->n_user > SAMPLER_MAX_USER)
		return r->user;
	memcpy(s->chain, r->user, (size_t)r->n_user * sizeof(*s->chain));
	unwind_restore_chain(s->chain, r->n_user, r->regs, r->regs ? &v : NULL, returns);
	return s->chain;
}

/* P's uretprobe trampoline: the "[uprobes]" page, mapped at the first
 * probe hit in P, looked for at most once a second until then. */
static uint64_t trampoline_of(struct proc_state *p, uint64_t now)
{
	struct proc_map *maps = NULL;
	int n;

	if (!p || p->trampoline || (p->trampoline_look_ns && now - p->trampoline_look_ns < 1000000000ull))
		return p ? p->trampoline : 0;
	p->trampoline_look_ns = now;
	n = proc_maps_read(p->pid, &maps);
	for (int i = 0; i < n && !p->trampoline; i++)
		if (maps[i].path && strcmp(maps[i].path, "[uprobes]") == 0)
			p->trampoline = maps[i].start;
	if (n >= 0)
		proc_maps_free(maps, n);
	return p->trampoline;
}

/* Whether a return slot names its own call exactly (x86-64: at the
 * entry stack pointer), so that a list missing that call matches the
 * slot to nothing rather than to an outer call (arm64: the lowest entry
 * above the slot). */
#if defined(__x86_64__)
#define ENTRY_MATCHES_ITS_SLOT 1
#else
#define ENTRY_MATCHES_ITS_SLOT 0
#endif

/* The pending returns of R's thread: the kernel's list when the sample
 * brings it; else its native probed calls in progress, innermost first, each
 * with the return address read at its entry (the span engine's
 * call_stacks), taken with the sample by BPF, or read here as the
 * sample is handled, a moment after it was taken. A call that returned
 * since is missing then: where its slot would be matched to an outer
 * call instead, the record is used only if no call returned since the
 * sample. */
static struct pending_returns sample_returns(struct sampler *s, struct proc_state *p,
					     const struct raw_sample *r)
{
	struct pending_returns none = { 0 };
	__u32 tid = (__u32)r->tid;
	int n = 0, depth;

	if (r->n_returns && r->trampoline)
		return (struct pending_returns){ r->trampoline, r->returns, r->n_returns };
	if (r->n_returns) {
		/* the span engine's record, taken with the sample by BPF */
		for (int i = 0; i < r->n_returns && n < SAMPLER_RETURNS; i++)
			if (r->returns[i].ret)
				s->open_returns[n++] = r->returns[i];
	} else if (s->cfg.call_stacks_fd > 0 && !s->cfg.use_bpf &&
		   bpf_map_lookup_elem(s->cfg.call_stacks_fd, &tid, &s->open_calls) == 0 &&
		   (ENTRY_MATCHES_ITS_SLOT || s->open_calls.last_return_ns <= r->mono_ns)) {
		depth = s->open_calls.depth < SPAN_MAX_DEPTH ? (int)s->open_calls.depth
							      : SPAN_MAX_DEPTH;
		for (int i = depth - 1; i >= 0 && n < SAMPLER_RETURNS; i--)
			if (s->open_calls.calls[i].ret &&
			    s->open_calls.calls[i].start_ns <= r->mono_ns)
				s->open_returns[n++] = (struct sampler_return){
					s->open_calls.calls[i].entry_sp, s->open_calls.calls[i].ret };
	}
	if (!n || !trampoline_of(p, monotonic_ns()))
		return none;
	return (struct pending_returns){ p->trampoline, s->open_returns, n };
}

/* The user frames of R, leaf first: DWARF from the registers and stack
 * copy when unwind_prefer_dwarf() believes it over the frame-pointer
 * chain. A chain that reaches a thread's first function is not proof of
 * a whole stack: code built without frame pointers leaves the frame
 * pointer as its caller set it (always so on arm64), and the chain then
 * skips every frame down to that caller's. With a Python stack only the
 * frames outside the interpreter are wanted. */
static const uint64_t *user_frames(struct sampler *s, struct proc_state *p,
				   const struct raw_sample *r, bool with_python, int *n)
{
	struct in_interpreter at = { s, p };
	struct pending_returns returns = sample_returns(s, p, r);
	const uint64_t *chain = chain_with_returns(s, r, &returns);
	int n_fp = r->n_user, n_dwarf;
	bool whole;

	*n = n_fp;
	if (!r->regs || !r->stack_len)
		return chain;
	n_dwarf = unwinder_walk(s->unw, r->pid, r->tid, r->regs, r->stack, r->stack_len,
				returns.n ? &returns : NULL, s->dwarf, SAMPLER_MAX_USER,
				with_python ? in_interpreter : NULL, &at);
	/* a trampoline the list had no entry for (a call that returned
	 * before its sample was read) from a kernel chain that has it */
	unwind_take_chain_returns(s->dwarf, n_dwarf, chain, n_fp, returns.n ? &returns : NULL);
	whole = !with_python && n_dwarf > n_fp && n_fp > 0 &&
		is_root_frame(s, r->pid, chain[n_fp - 1]);
	if ((with_python && n_dwarf > 0) ||
	    unwind_prefer_dwarf(chain, n_fp, whole, s->dwarf, n_dwarf, n_dwarf >= SAMPLER_MAX_USER)) {
		*n = n_dwarf;
		return s->dwarf;
	}
	return chain;
}

/* Whether F can be no return address: one in the first page, the heap,
 * a stack or a file's data is a frame-pointer chain gone astray, and
 * nothing after it is a frame. Anonymous memory not executable when the
 * mappings were read is kept: a JIT may have made it code since. */
static bool not_code(const struct native_frame *f)
{
	if (f->addr < 4096)
		return true;
	if (!f->mapped || f->executable)
		return false;
	return f->in_file || strcmp(f->module, "[heap]") == 0 || strncmp(f->module, "[stack", 6) == 0;
}

/* How many of R's native frames (from the leaf) to keep: up to the first
 * that is no return address (in data, or the first page). With a Python
 * stack: those the thread called outside the interpreter (libc, an
 * extension), up to the first of the interpreter's own frames, or the
 * first that is in no file (a frame-pointer chain broken by code built
 * without frame pointers, as CPython is). */
static int native_kept(struct sampler *s, struct proc_state *p, const struct raw_sample *r,
		       bool with_python, struct native_frame *nf)
{
	int keep = 0, n;
	const uint64_t *user = user_frames(s, p, r, with_python, &n);

	for (int i = 0; i < n && i < SAMPLER_MAX_USER; i++) {
		symbolizer_user(s->sym, r->pid, user[i], i > 0, &nf[i]);
		if (i > 0 && not_code(&nf[i]))
			break;
		if (with_python && (!nf[i].in_file || (nf[i].dev == p->py.interp_dev &&
						       nf[i].ino == p->py.interp_ino)))
			break;
		keep = i + 1;
	}
	return keep;
}

/* An off-CPU sample's kernel stack is taken inside the sched_switch
 * tracepoint, so its leaf frames are the tracing machinery's (the BPF
 * program, bpf_trace_run4, on some kernels __bpf_trace_sched_switch or
 * __traceiter_sched_switch): how many, to leave them out. */
static int machinery_frames(struct sampler *s, const struct raw_sample *r)
{
	static const char *const prefixes[] = { "bpf_prog_", "bpf_trace_run", "__bpf_trace_",
						"__traceiter_" };
	int n = 0;

	for (; n < r->n_kernel && n < SAMPLER_MAX_KERNEL; n++) {
		const char *name = symbolizer_kernel(s->sym, r->kernel[n] - (n > 0));
		bool machinery = false;

		for (size_t k = 0; name && k < sizeof(prefixes) / sizeof(prefixes[0]); k++)
			machinery |= strncmp(name, prefixes[k], strlen(prefixes[k])) == 0;
		if (!machinery)
			break;
	}
	return n;
}

/* Builds the frames of R (root first) into s->frames; returns how many,
 * with the span states in STATES and its STACK_PYTHON* bits in *PYTHON. */
static int build_stack(struct sampler *s, const struct raw_sample *r, const char **states,
		       int *n_states, unsigned *python)
{
	struct native_frame *nf = s->native;
	struct proc_state *p = sampler_proc(s, r->pid, r->mono_ns);
	bool with_python = p && p->kind == PROC_PYTHON && r->n_py > 0;
	int n = 0, keep, first_kernel = machinery_frames(s, r);

	*n_states = 0;
	/* 3.8-3.10 name a thread by its pthread: the tid's place in it is
	 * checked once the process has a thread state */
	if (p && p->kind == PROC_PYTHON && r->py_status == PY_WALK_NO_THREAD && !p->py.tid_checked &&
	    python_proc_check_tid(&p->py) && s->src->ops->python_found)
		s->src->ops->python_found(s->src, p);
	if (with_python && r->py_status == PY_WALK_TRUNCATED) {
		snprintf((char *)put_frame(s, &n), FRAME_TEXT, "%s", PROFILE_TRUNCATED_FRAME);
		profile_writer_lost(s->w, PROFILE_LOSS_STACK_TRUNCATED, 1);
	}
	*python = with_python ? python_frames(s, p, r, &n, states, n_states) : 0;
	keep = native_kept(s, p, r, with_python, nf);
	for (int i = keep - 1; i >= 0 && n < MAX_FRAMES; i--) {
		symbolizer_format(&nf[i], (char *)put_frame(s, &n), FRAME_TEXT);
		for (int k = 0; k < s->n_matches; k++)
			if (!s->matches[k].python && nf[i].function && nf[i].ino == s->matches[k].ino &&
			    nf[i].function_offset == s->matches[k].function_offset)
				add_state(states, n_states, s->matches[k].state);
	}
	for (int i = (r->n_kernel < SAMPLER_MAX_KERNEL ? r->n_kernel : SAMPLER_MAX_KERNEL) - 1;
	     i >= first_kernel && n < MAX_FRAMES; i--) {
		uint64_t addr = r->kernel[i] - (i > 0);
		const char *name = symbolizer_kernel(s->sym, addr);
		char *buf = (char *)put_frame(s, &n);

		if (name)
			profile_frame_kernel(buf, FRAME_TEXT, name);
		else
			profile_frame_unresolved(buf, FRAME_TEXT, "[kernel]", r->kernel[i]);
	}
	return n;
}

/* Writes one sample row; PYTHON: its stack's STACK_PYTHON* bits. */
static void write_sample(struct sampler *s, pid_t pid, pid_t tid, enum profile_kind kind,
			 uint64_t mono_ns, uint64_t weight_ns, const char *const *states, int n_states,
			 uint64_t stack_id, unsigned python)
{
	struct profile_sample row = {
		.time_ns = wall_clock_from_mono(&s->clock, mono_ns),
		.pid = (uint32_t)pid,
		.tid = (uint32_t)tid,
		.kind = kind,
		.weight_ns = weight_ns,
		.spans = states,
		.n_spans = (size_t)n_states,
		.stack_id = stack_id,
	};

	profile_writer_sample(s->w, &row);
	s->with_python += (python & STACK_PYTHON) != 0;
	s->python_unnamed += (python & STACK_PYTHON_UNNAMED) != 0;
	if (kind == PROFILE_ON_CPU)
		s->on_cpu++;
	else
		s->off_cpu++;
}

static void keep_pending(struct sampler *s, const struct raw_sample *r, const char **states,
			 int n_states, uint64_t stack_id, unsigned python)
{
	struct pending_off *p;

	if (!array_grow((void **)&s->pending, &s->cap_pending, s->n_pending + 1, sizeof(*s->pending))) {
		profile_writer_lost(s->w, PROFILE_LOSS_ROWS_NOT_WRITTEN, 1);
		return;
	}
	p = &s->pending[s->n_pending++];
	*p = (struct pending_off){ .pid = r->pid, .tid = r->tid, .out_ns = r->mono_ns,
				   .stack_id = stack_id, .python = python, .n_spans = n_states };
	memcpy(p->spans, states, (size_t)n_states * sizeof(*states));
}

/* Thread TID was seen on the CPU at SEEN_NS, so an off-CPU sample of it
 * from before that still waiting for its return will never get it: it
 * is dropped and counted, as its weight is not known. BPF: the thread
 * was sampled again, on the CPU or going off it once more (its one ring
 * keeps a thread's records in order); that happens when the kernel fires
 * no sched_switch for the switch back (seen on a VM whose host agent
 * thread is never seen leaving the CPU, in tracefs's own events too).
 * Both paths: a later switch-out of the thread got its switch-in, so an
 * earlier one lost its own. */
static void drop_unseen_ends(struct sampler *s, pid_t tid, uint64_t seen_ns)
{
	for (size_t i = 0; i < s->n_pending;) {
		if (s->pending[i].tid != tid || s->pending[i].out_ns >= seen_ns) {
			i++;
			continue;
		}
		profile_writer_lost(s->w, PROFILE_LOSS_OFF_CPU_END_UNSEEN, 1);
		s->pending[i] = s->pending[--s->n_pending];
	}
}

void sampler_add(struct sampler *s, const struct raw_sample *r)
{
	const char *states[SPAN_MAX_STATES];
	int n_states, n;
	unsigned python;
	uint64_t id;

	if (s->cfg.held && r->pid == s->cfg.pid)
		return; /* pmetrics' own code before the target's exec */
	if (s->cfg.use_bpf)
		drop_unseen_ends(s, r->tid, r->mono_ns);
	if (r->n_user < 0 && r->n_kernel <= 0 && r->n_py <= 0)
		profile_writer_lost(s->w, PROFILE_LOSS_STACK_UNREADABLE, 1);
	n = build_stack(s, r, states, &n_states, &python);
	if (profile_writer_stack(s->w, s->frames, (size_t)n, &id) != 0)
		return; /* counted by the writer */
	if (r->kind == PROFILE_OFF_CPU)
		keep_pending(s, r, states, n_states, id, python);
	else
		write_sample(s, r->pid, r->tid, r->kind, r->mono_ns, r->weight_ns, states, n_states, id,
			     python);
}

void sampler_back_on_cpu(struct sampler *s, pid_t tid, uint64_t out_ns, uint64_t in_ns)
{
	size_t best = SIZE_MAX;
	struct pending_off *p;

	for (size_t i = 0; i < s->n_pending; i++) {
		p = &s->pending[i];
		if (p->tid != tid || p->out_ns > in_ns || (out_ns && p->out_ns != out_ns))
			continue;
		if (best == SIZE_MAX || p->out_ns > s->pending[best].out_ns)
			best = i;
	}
	if (best == SIZE_MAX)
		return; /* its switch-out was lost (counted there), or came before the capture */
	p = &s->pending[best];
	out_ns = p->out_ns;
	write_sample(s, p->pid, p->tid, PROFILE_OFF_CPU, out_ns, in_ns - out_ns, p->spans, p->n_spans,
		     p->stack_id, p->python);
	*p = s->pending[--s->n_pending];
	/* an older switch-out of the thread still waiting lost its own
	 * switch-in (perf: a PERF_RECORD_LOST) */
	drop_unseen_ends(s, tid, out_ns);
}

/* Threads still off the CPU at the end: off until then. */
static void finish_pending(struct sampler *s)
{
	for (size_t i = 0; i < s->n_pending; i++) {
		struct pending_off *p = &s->pending[i];

		write_sample(s, p->pid, p->tid, PROFILE_OFF_CPU, p->out_ns,
			     s->stopped_ns > p->out_ns ? s->stopped_ns - p->out_ns : 0, p->spans,
			     p->n_spans, p->stack_id, p->python);
	}
	s->n_pending = 0;
}

void sampler_lost(struct sampler *s, enum profile_loss reason, uint64_t n)
{
	if (n)
		profile_writer_lost(s->w, reason, n);
}

/* ---- the thread ----------------------------------------------------------- */

static void flush(struct sampler *s)
{
	int err = profile_writer_flush(s->w);

	if (err && !s->write_error)
		s->write_error = err;
	s->last_flush_ns = monotonic_ns();
}

/* A module's code object, and its names, are freed once the module has
 * run: a sample of an import is named only if the sampler reads it
 * before then. So while code objects it has not seen come (a program
 * starting, importing), the source hands over each record at once
 * rather than in batches up to 100 ms apart. */
static void update_eager(struct sampler *s)
{
	uint64_t reads = python_names_code_reads(s->names), now = monotonic_ns();
	bool eager;

	if (!s->src->ops->eager)
		return; /* a source that hands each record over at once anyway */
	if (reads != s->code_reads_seen) {
		s->code_reads_seen = reads;
		s->eager_until_ns = now + EAGER_FOR_NS;
	}
	eager = now < s->eager_until_ns;
	if (eager != s->eager)
		s->src->ops->eager(s->src, eager);
	s->eager = eager;
}

static void *run(void *arg)
{
	struct sampler *s = arg;

	while (!atomic_load(&s->stopping)) {
		update_eager(s);
		s->src->ops->poll(s->src, s->eager ? 10 : 100);
		wall_clock_sync(&s->clock);
		if (monotonic_ns() - s->last_flush_ns >= FLUSH_EVERY_NS)
			flush(s);
	}
	python_read_memory_release();
	return NULL;
}

int sampler_start(struct sampler *s)
{
	int err;

	wall_clock_sync(&s->clock);
	s->last_flush_ns = monotonic_ns();
	if (s->src->ops->start(s->src) != 0)
		return -1;
	err = pthread_create(&s->thread, NULL, run, s);
	if (err) {
		cli_error("cannot start the sampling thread: %s", strerror(err));
		return -1;
	}
	s->running = true;
	return 0;
}

int sampler_stop(struct sampler *s)
{
	if (s->running) {
		atomic_store(&s->stopping, true);
		pthread_join(s->thread, NULL);
		s->running = false;
	}
	s->stopped_ns = monotonic_ns();
	s->src->ops->stop(s->src);
	s->src->ops->poll(s->src, 0);
	finish_pending(s);
	if (s->src->ops->final_losses)
		s->src->ops->final_losses(s->src);
	flush(s);
	return s->write_error;
}

/* ---- open, summary, close ------------------------------------------------ */

int sampler_open(struct sampler **out, const struct sampler_config *c)
{
	struct sampler *s = calloc(1, sizeof(*s));
	char err[1024];
	int ret;

	*out = NULL;
	if (!s) {
		cli_error("out of memory");
		return -1;
	}
	s->cfg = *c;
	s->period_ns = c->hz ? 1000000000ull / c->hz : 0;
	s->sym = symbolizer_new();
	s->names = python_names_new();
	s->unw = unwinder_new();
	if (!s->sym || !s->names || !s->unw) {
		cli_error("out of memory");
		sampler_close(s);
		return -1;
	}
	s->w = profile_writer_open(c->output_dir, err, sizeof(err));
	if (!s->w) {
		cli_error("%s", err);
		sampler_close(s);
		return -1;
	}
	setup_matches(s);
	ret = c->use_bpf ? bpf_source_open(&s->src, s) : perf_source_open(&s->src, s);
	if (ret) {
		sampler_discard(s);
		return -1;
	}
	/* before the target runs (the sampler's first moments are when a
	 * launched program's children exec), after the source's programs
	 * are loaded (an off-CPU stack's leaf frames are the sampler's
	 * own, left out by their names) */
	symbolizer_load_kernel(s->sym);
	/* the target as it is now (a launched one is looked at after exec) */
	wall_clock_sync(&s->clock);
	if (c->pid > 0)
		sampler_proc(s, c->pid, monotonic_ns());
	*out = s;
	return 0;
}

uint64_t sampler_period_ns(const struct sampler *s)
{
	return s->period_ns;
}

/* Whether loss reason R counts samples written all the same (their
 * stack unread or cut), not samples lost. */
static bool kept_damaged(int r)
{
	return r == PROFILE_LOSS_STACK_UNREADABLE || r == PROFILE_LOSS_STACK_TRUNCATED;
}

void sampler_summary(const struct sampler *s, FILE *out)
{
	uint64_t lost = 0;

	fprintf(out, "  profile: %llu samples: %llu on-CPU", (unsigned long long)(s->on_cpu + s->off_cpu),
		(unsigned long long)s->on_cpu);
	if (s->cfg.hz)
		fprintf(out, " (%u Hz)", s->cfg.hz);
	if (s->cfg.off_cpu)
		fprintf(out, ", %llu off-CPU", (unsigned long long)s->off_cpu);
	fprintf(out, ", %llu with Python frames; taken by %s\n", (unsigned long long)s->with_python,
		s->cfg.use_bpf ? "BPF" : "perf_event_open");
	if (s->python_unnamed)
		fprintf(out, "  profile: %llu samples with [unknown Python frame]s: their code was "
			"freed before it was named (a module's, once it has run; a process shorter "
			"than about 1 s, or its last moments), or could not be read\n",
			(unsigned long long)s->python_unnamed);
	if (s->procs_seen > 1)
		fprintf(out, "  profile: %llu processes seen, at most %zu held at once (an ended one is let go)\n",
			(unsigned long long)s->procs_seen, s->procs_most);
	for (int r = 0; r < PROFILE_LOSS_MAX; r++)
		lost += kept_damaged(r) ? 0 : profile_writer_lost_count(s->w, r);
	fprintf(out, "  profile samples lost: %llu", (unsigned long long)lost);
	for (int pass = 0; pass < 2; pass++) {
		const char *sep = pass ? "; kept with a damaged stack: " : ", ";

		for (int r = 0; r < PROFILE_LOSS_MAX; r++) {
			uint64_t n = profile_writer_lost_count(s->w, r);

			if (!n || kept_damaged(r) != pass)
				continue;
			fprintf(out, "%s%llu %s", sep, (unsigned long long)n, profile_loss_name(r));
			sep = ", ";
		}
	}
	fprintf(out, "\n");
	if (profile_writer_lost_count(s->w, PROFILE_LOSS_RINGBUF_FULL))
		fprintf(out, "  profile: the ring buffer (%llu MiB) filled faster than it was read: "
			"give a larger --ringbuf-size or a lower --sample rate\n",
			(unsigned long long)(s->cfg.ringbuf_bytes >> 20));
}

static void close_common(struct sampler *s)
{
	if (s->src)
		s->src->ops->close(s->src);
	symbolizer_free(s->sym);
	python_names_free(s->names);
	unwinder_free(s->unw);
	free(s->procs);
	free(s->pending);
	free(s);
}

void sampler_close(struct sampler *s)
{
	if (!s)
		return;
	if (s->running)
		sampler_stop(s);
	if (s->w)
		profile_writer_close(s->w);
	close_common(s);
}

void sampler_discard(struct sampler *s)
{
	if (!s)
		return;
	if (s->running)
		sampler_stop(s);
	profile_writer_discard(s->w);
	close_common(s);
}
