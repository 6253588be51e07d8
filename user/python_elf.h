/* Finding a process's CPython interpreter: the ELF file that holds
 * _PyEval_EvalFrameDefault (libpythonX.Y.so or the executable itself),
 * and the interpreter's version. */
#ifndef PMETRICS_PYTHON_ELF_H
#define PMETRICS_PYTHON_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct python_interp {
	char path[4096]; /* file to place the uprobes in */
	int major, minor; /* 3, 10 */
	bool free_threaded; /* python3.13t: another object layout */
};

/* Parses "X.Y" out of a file name such as libpython3.10.so.1.0,
 * libpython3.7m.so or python3.11, and whether it names a free-threaded
 * build (python3.13t). Returns 0, or -1 when none is there. */
int python_version_from_name(const char *path, int *major, int *minor, bool *free_threaded);

/* Finds the extension-module ABI tag every CPython 3 build carries for
 * its importer (".cpython-310-x86_64-linux-gnu.so", ".cpython-313t-...",
 * ".cpython-37m-...") in the LEN bytes at BYTES and parses its version.
 * Returns 0, or -1 when no tag is there. */
int python_version_from_abi_tag(const char *bytes, size_t len, int *major, int *minor,
				bool *free_threaded);
/* The same, over the whole file at PATH. */
int python_version_from_file(const char *path, int *major, int *minor, bool *free_threaded);

/* Reads PATH's DT_NEEDED entries and returns the first one naming
 * libpython ("libpython3.10.so.1.0") in out. Returns 0 or -1. */
int python_needed_libpython(const char *path, char *out, size_t len);

/* Resolves a DT_NEEDED name the way ld.so would for EXE: its
 * RUNPATH/RPATH ($ORIGIN expanded), LD_LIBRARY_PATH, then the system
 * library directories. Returns 0 with the path in out, or -1. */
int python_resolve_library(const char *exe, const char *needed, char *out, size_t len);

/* The running process PID: the mapped libpython, else its executable. */
int python_interp_of_pid(pid_t pid, struct python_interp *out, char *err, size_t errlen);

/* An executable about to be run (launch mode): its libpython from
 * DT_NEEDED, else the executable itself. */
int python_interp_of_exe(const char *exe, struct python_interp *out, char *err, size_t errlen);

#endif
