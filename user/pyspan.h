/* SPDX-License-Identifier: MIT */
/* Python function spans: times py:MODULE:QUALNAME functions of a CPython
 * process from uprobes on the interpreter's frame evaluation. Emits
 * struct span_event (include/span_event.h) into its span engine's ring
 * buffer, which the record loop drains with the native spans. */
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
};

struct pyspan_target {
	pid_t pid;            /* traced process (tgid) */
	/* How it sees the file system; a launched command's view is ours,
	 * and its executable the file it will exec, before it has run. */
	const struct target_view *view;
	bool follow_children;
	bool verbose;
	/* Hook coroutine/generator steps instead of every call where the
	 * version allows (3.8-3.10): plain calls then cost nothing, and
	 * only coroutines and generators are timed. */
	bool coroutine_hook;
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

/* What `pmetrics check --pid` says about a Python target: its
 * interpreter, and for each function a hook may go into, whether the
 * interpreter has it and in which symbol table. */
#define PYSPAN_REPORT_POINTS 12
struct pyspan_hook_point {
	const char *symbol;
	bool found;
	bool in_dynsym;     /* found only in .dynsym (what a stripped file keeps) */
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
