/* SPDX-License-Identifier: MIT */
/* The watchpoint hook of Python spans (--python-hook watch): hardware
 * watchpoints on each timed coroutine function's own code object, so
 * that only its calls trap, where the uprobe hooks trap on every
 * coroutine step whether timed or not. The code objects are found in the
 * running process's memory; bpf/pyspan.bpf.c's py_watch turns the hits
 * into spans.
 *
 * Per timed function two watchpoints: its first instruction after the
 * prologue (RESUME on 3.11+, GEN_START on 3.10: the first step of each
 * of its coroutines) and a reference count each of its frames takes and
 * lets go of as it is cleared (its function object's, else its code
 * object's; on 3.12+ a function found before its function object
 * existed has that object handed over by its first call): where a
 * finished coroutine ends. A CPU has 4 (x86-64, the
 * Flex's Cortex-A53), so two functions at most. CPython 3.10+,
 * `async def` functions,
 * looked for when pmetrics attaches and again in a process whenever a
 * module of a function not yet found there has run. */
#ifndef PMETRICS_PYWATCH_H
#define PMETRICS_PYWATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf_loader.h"
#include "pyspan_config.h"
#include "python_stack.h"

struct py_probe;

struct pywatch_point {
	uint64_t addr;
	uint32_t len;  /* bytes watched */
	uint32_t kind; /* enum pyspan_watch_kind */
	uint64_t code; /* the code object */
	uint32_t idx;  /* the probe's index */
	int lent_to;   /* not watched while another program has its registers, or -1 */
	uint32_t flags; /* PYSPAN_WATCH_ASK_FUNCTION (the first step's) */
};

/* How a search for the timed functions went. */
struct pywatch_search {
	bool by_module;      /* from a module's code and globals */
	bool main_module;    /* that module is the program's main one */
	uint64_t scan_bytes; /* heap read */
};

struct pywatch {
	struct pywatch_point points[PYSPAN_MAX_WATCHES];
	int n_points;
	/* each point's links, one per CPU, each owning its perf event */
	struct bpf_links links[PYSPAN_MAX_WATCHES];
	struct pywatch_search last; /* how the last pywatch_find went */
};

/* A module whose body has just run in the process: its code object and
 * its globals (the dict). */
struct pywatch_module {
	uint64_t code, globals;
	/* its body only starts: its functions are not defined yet, their
	 * code is (its constants) */
	bool at_start;
};

/* Whether the module whose globals dict is GLOBALS in process P (of
 * which only the pid and version are read) is the program's main one
 * (its __name__ is "__main__"). */
bool pywatch_is_main_module(const struct python_proc *p, uint64_t globals);

/* 0 when the kernel moves a thread past a BPF-handled watchpoint hit (or
 * that cannot be tested), else -ENOTSUP with a one-line reason in WHY:
 * the hook must not run there, whatever else it is told. */
int pywatch_step_check(char *why, size_t len);
/* The same on the answer STEPS of pywatch_steps_past_bpf_hits(). */
int pywatch_steps_verdict(int steps, char *why, size_t len);

/* Whether a watchpoint on a word of this process fires at its writes,
 * the step test aside: 0, or -errno with a one-line reason in WHY. */
int pywatch_hits_arrive(char *why, size_t len);

/* Whether this machine's hardware watchpoints fire: some virtual
 * machines accept them and never deliver a hit; pywatch_step_check first.
 * 0, or -errno with a one-line reason in WHY. */
int pywatch_fire_check(char *why, size_t len);

/* Whether the kernel moves a thread past the access a watchpoint caught
 * when the hit runs a BPF program: arm64 reports a watchpoint before the
 * access and must step over it, and until Linux 6.6 (6.1.55 in the 6.1
 * series) did so only for perf's own handler, so the access trapped
 * again forever. A release number cannot tell (Debian's 6.1.0-57 is
 * 6.1.192), so a child process watches a word of its own with an empty
 * BPF program and writes it once, killed after 2 s. 1 when it got past,
 * 0 when it trapped on, -errno when it could not be tested (no BPF, no
 * watchpoints). */
int pywatch_steps_past_bpf_hits(void);

/* Why perf_event_open refused a watchpoint with ERR (an errno), and the
 * fix, in one line in WHY: no permission, every debug register held by
 * another user (a debugger), settings the CPU cannot watch, or a kernel
 * without watchpoints. */
void pywatch_refusal(int err, char *why, size_t len);

/* 0 when the hook knows CPython MAJOR.MINOR's coroutines (3.10+: where
 * the first step shows, the frame's layout), else -ENOTSUP with a
 * one-line reason naming NAME in ERR. */
int pywatch_version_check(int major, int minor, const char *name, char *err, size_t errlen);

/* Finds the code object of each probe in WANT (a bit per index of the
 * N PROBES) in process P (their modules' files and qualified names, as
 * the uprobe hooks match them) and adds the addresses to watch in each
 * to W, which may hold points already: MAX_POINTS in all. With MODULE,
 * whose body has just run, from its code's constants and its globals
 * (a few hundred small reads); else, or when that does not find a
 * function object it needs, by scanning the process's heap for code and
 * function objects (some 100 ms for a large program). *FOUND gets the
 * probes found; one not found is no error (its module may not have run
 * yet). 0, or -errno with a one-line reason in ERR (not a coroutine
 * function, more than the watchpoints allow, memory not readable). */
int pywatch_find(struct pywatch *w, const struct python_proc *p, const struct py_probe *probes,
		 int n, const struct pywatch_module *module, uint32_t want, int max_points,
		 uint32_t *found, char *err, size_t errlen);

/* Watches W's points FIRST to LAST (not included) on every CPU, each
 * hit running PROG. Per CPU, not per thread: a watchpoint of a thread is
 * written into the debug registers at each of its context switches,
 * which under a hypervisor costs a trap to it each time; one of a CPU is
 * written once. Every task that touches a point traps, so PROG keeps the traced
 * processes' hits alone (new threads and forked children have the same
 * addresses and are caught unasked). 0, or -errno after a one-line
 * error. */
int pywatch_attach(struct pywatch *w, int first, int last, struct bpf_program *prog);
/* Point I of W is no longer watched (its registers go to another). */
void pywatch_park(struct pywatch *w, int i);
void pywatch_close(struct pywatch *w);

/* Whether FUNCTION, in process P, is a function object running code
 * object CODE. */
bool pywatch_function_runs(const struct python_proc *p, uint64_t function, uint64_t code);

/* The first instruction of a coroutine's body in code units CODE (N of
 * them, as the interpreter holds them) of CPython 3.MINOR: past the
 * cells, free variables and RETURN_GENERATOR with its POP_TOP (3.11+),
 * or its GEN_START (3.10). Its index, or -1 when the code is no
 * coroutine's. */
int pywatch_first_step(const uint8_t *code, int n, int minor);

#endif
