/* SPDX-License-Identifier: MIT */
/* Python function spans: times py:MODULE:QUALNAME functions of a CPython
 * process (and, following children, of its children running the same
 * interpreter) from uprobes where a timed function can be: coroutine
 * steps, creations and deallocations, and only when asked for every
 * function call. Emits struct span_event (include/span_event.h) into its
 * span engine's ring buffer, which the record loop drains with the
 * native spans. */
#ifndef PMETRICS_PYSPAN_H
#define PMETRICS_PYSPAN_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "library_resolver.h"
#include "python_elf.h"

struct bpf_object;

struct py_probe {
	unsigned int probe_id; /* span_event.probe_id to emit */
	const char *module;    /* dotted module name, "robot_server.protocols.router" */
	const char *qualname;  /* "create_protocol.<locals>._get_cached_protocol_analysis" */
	bool known_async;      /* known to be async def: no advice for plain functions */
};

struct pyspan_target {
	pid_t pid;            /* traced process (tgid) */
	/* How it sees the file system; a launched command's view is ours,
	 * and its executable the file it will exec, before it has run. */
	const struct target_view *view;
	/* With children followed the uprobes are on the interpreter's file
	 * for every process, and the set of traced processes the native
	 * tracer keeps in TRACED_SET (its object) filters; without, they are
	 * on the target alone. */
	bool follow_children;
	struct bpf_object *traced_set;
	bool verbose;
	/* Time plain functions too: a trap on every Python function call
	 * that goes through _PyFunction_Vectorcall (every call on 3.8-3.10,
	 * calls from C on 3.11+). Coroutines are always timed. */
	bool plain_calls;
	/* Hardware watchpoints on the timed functions' code objects instead
	 * of uprobes (user/pywatch.h): only timed calls trap. */
	bool watch;
	/* PID is a launched command not yet exec'd: nothing to look for in
	 * its memory yet. */
	bool launched;
	/* The watch hook where it can run (tested first), else the
	 * coroutine hooks: the robot preset's choice when no hook is asked
	 * for. */
	bool watch_preferred;
	/* --python-hook was given: a hook that cannot be had is an error. */
	bool hook_explicit;
	/* Each span also carries its thread's scheduling and memory counters
	 * (struct span_resource_event, include/resource_records.h). */
	bool resources;
	/* Size of the span ring buffer (a power of 2). */
	unsigned long long ringbuf_bytes;
};

struct pyspan;

/* Finds the interpreter (executable or libpythonX.Y.so), detects its
 * version, loads and attaches. Returns 0, or a negative errno after
 * printing a one-line error ("not a CPython process", ...). Prints one
 * warning per probe the detected version cannot see. */
int pyspan_open(struct pyspan **out, const struct pyspan_target *target,
		const struct py_probe *probes, int n_probes);
/* The span engine's object: ring buffer, counters, open calls. */
struct bpf_object *pyspan_object(const struct pyspan *p);
/* Per-probe span counts and warnings for functions never seen, and the
 * coroutines still running at the end. */
void pyspan_summary(const struct pyspan *p, FILE *out);
void pyspan_close(struct pyspan *p);

/* The watch hook's requests: a traced process stopped as the module of
 * a timed function not yet watched there ran (struct
 * pyspan_watch_request). -1 when the hook is not in use. */
int pyspan_watch_requests_fd(const struct pyspan *p);
/* Looks for the functions a request names in its process, watches those
 * found (or warns in one line why not), and lets the process go on. For
 * ring_buffer__add(); always 0. */
int pyspan_watch_request(void *p, void *data, size_t size);

/* The capture is over: no process is stopped for the watch hook any
 * more, and every one stopped goes on. */
void pyspan_quiesce(struct pyspan *p);
/* Now and then in the capture: programs whose processes all ended give
 * their watchpoints back (their last end may have gone unheard). */
void pyspan_tick(struct pyspan *p);

/* Warns once per traced process (a followed child) that runs another
 * interpreter than the one hooked: its calls are not seen. */
void pyspan_check_process(struct pyspan *p, pid_t pid);

/* What `pmetrics check --pid` says about a Python target: its
 * interpreter, and each hook point pmetrics would use there, whether the
 * interpreter has it and where it was found. */
#define PYSPAN_REPORT_POINTS 12
struct pyspan_hook_point {
	const char *symbol;  /* the function in CPython's source */
	const char *use;     /* what pmetrics uses it for */
	bool found;
	const char *source;  /* ".symtab", ".dynsym", "type slot", ... */
	char detail[160];
	unsigned long long offset;
};

struct pyspan_report {
	struct python_interp interp;
	bool stripped;      /* no .symtab */
	bool supported;     /* a version whose struct layout pmetrics knows */
	int n_points;
	struct pyspan_hook_point points[PYSPAN_REPORT_POINTS];
};

/* Fills R for the target seen through V. Returns 0, or -errno with a
 * one-line reason in err (not a CPython process, ...). */
int pyspan_report(const struct target_view *v, struct pyspan_report *r, char *err, size_t errlen);

#endif
