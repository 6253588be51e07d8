/* SPDX-License-Identifier: MIT */
/* The Python side of a sample: finding a process's CPython interpreter
 * and its _PyRuntime (for the walker of include/python_walk.h, in BPF or
 * here), and turning the walked (code object, instruction) pairs into
 * "qualname (file:line)" by reading the code objects from the process,
 * once each.
 *
 * CPython 3.8-3.13 (not the free-threaded 3.13t), x86-64 and arm64, the
 * interpreter in libpythonX.Y.so or in the executable, stripped or not:
 * _PyRuntime and PyCode_Type are exported data symbols (.dynsym) of every
 * build. Qualified names: 3.11+ code objects carry theirs; on 3.8-3.10 a
 * coroutine's or generator's is its object's (exact), a plain function's
 * is read from its source file (the class and def lines around its
 * co_firstlineno), else it is its bare name. */
#ifndef PMETRICS_PYTHON_STACK_H
#define PMETRICS_PYTHON_STACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "python_walk.h"

/* What is known of one interpreter process. */
struct python_proc {
	pid_t pid;
	int major, minor;
	struct py_proc walk;     /* what the walker needs: _PyRuntime, the layout */
	uint64_t code_type;      /* address of PyCode_Type */
	uint64_t function_type;  /* address of PyFunction_Type (0: not found) */
	uint64_t interp_dev, interp_ino; /* the interpreter's file */
	char interp_name[256];   /* its base name, for messages */
	bool tid_checked;        /* 3.8-3.10: pthread_tid checked on a live thread state */
};

/* Finds the interpreter of running process PID. Returns 0 (OUT filled);
 * -ENOENT when PID is no CPython process (no file it maps defines
 * _PyRuntime: nothing to say); another -errno with a one-line reason in
 * WHY when it is a CPython whose stacks cannot be walked (the version,
 * a free-threaded build). */
int python_proc_find(pid_t pid, struct python_proc *out, char *why, size_t whylen);

/* 3.8-3.10: checks (and if need be finds) the offset of the thread id in
 * glibc's struct pthread on a live thread state of P. Returns true once
 * checked; false while the process has no thread state yet. */
bool python_proc_check_tid(struct python_proc *p);

/* The struct layout of CPython MAJOR.MINOR, or -1 when not supported. */
int python_layout_for(int major, int minor, struct py_layout *out);

/* ---- names ---------------------------------------------------------------- */

struct python_names;

struct python_frame_text {
	const char *qualname; /* valid until the next call */
	const char *file;     /* co_filename */
	unsigned line;        /* 0 when unknown */
};

struct python_names *python_names_new(void);
void python_names_free(struct python_names *n);
/* PID exec'd or exited: its code objects and files are read again. */
void python_names_forget(struct python_names *n, pid_t pid);
/* The text of the str object at ADDR of P, read once; NULL when it
 * cannot be read. */
const char *python_str(struct python_names *n, const struct python_proc *p, uint64_t addr);
/* How many code objects N has read from targets so far: a count that
 * grows while a program runs code it has not run before. */
uint64_t python_names_code_reads(const struct python_names *n);
/* Names frame R of P. Returns 0, or -1 when its code object cannot be
 * read (it was freed, or the process is gone). */
int python_frame_name(struct python_names *n, const struct python_proc *p,
		      const struct py_frame_ref *r, struct python_frame_text *out);

/* Line of the instruction at BYTE_OFFSET (of the code's instructions)
 * from a code object's line table, as each version stores it: 3.8/3.9
 * co_lnotab, 3.10 co_linetable, 3.11+ the location table. 0 when none. */
unsigned python_line_lnotab(const uint8_t *t, size_t len, int firstlineno, uint32_t byte_offset);
unsigned python_line_310(const uint8_t *t, size_t len, int firstlineno, uint32_t byte_offset);
unsigned python_line_311(const uint8_t *t, size_t len, int firstlineno, uint32_t byte_offset);

/* The qualified name of the function NAME whose code starts at line
 * FIRSTLINENO of the Python source SRC (LEN bytes): its enclosing class
 * and def statements, "outer.<locals>.inner", "Class.method". Writes NAME
 * alone when the source does not show it there. */
void python_source_qualname(const char *src, size_t len, int firstlineno, const char *name,
			    char *out, size_t outlen);

/* ---- the walk without BPF ---------------------------------------------- */

/* Walks thread TID of P by reading its memory (python_read_memory), as the
 * BPF sampler does at a sample. THREAD: the thread state found last time
 * for this thread (zeroed: none), checked and updated. Returns the
 * number of frames in OUT (leaf first, at most PY_MAX_FRAMES) and sets
 * *status (enum py_walk_status). */
int python_walk_thread(const struct python_proc *p, pid_t tid, struct py_thread_cache *thread,
		       struct py_frame_ref *out, int *status);

/* Reads SIZE bytes of PID's memory at ADDR. Returns 0, or -1. By
 * process_vm_readv(), or where the kernel lacks it (no
 * CONFIG_CROSS_MEMORY_ATTACH) by /proc/PID/mem. */
int python_read_memory(pid_t pid, void *dst, size_t size, uint64_t addr);
/* Whether reads go by process_vm_readv() (not known missing yet). */
bool python_read_memory_direct(void);
/* Closes what the calling thread keeps open for reads (a thread that
 * read other processes calls it before it ends). */
void python_read_memory_release(void);

#endif
