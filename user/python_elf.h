/* SPDX-License-Identifier: MIT */
/* Finding a process's CPython interpreter: the ELF file that holds
 * _PyEval_EvalFrameDefault (libpythonX.Y.so or the executable itself),
 * and the interpreter's version. Files are found by the library resolver,
 * in the target's own view of the file system. */
#ifndef PMETRICS_PYTHON_ELF_H
#define PMETRICS_PYTHON_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "library_resolver.h"

struct python_interp {
	char path[4096]; /* file to place the uprobes in (openable from here) */
	char name[4096]; /* what the target calls it, for messages */
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

/* The interpreter of the target seen through V: for a running process
 * the libpython it maps, else its executable; for a command not started
 * yet, the libpython its executable needs (found as ld.so would), else
 * the executable. Returns 0, or -errno with a one-line reason in err. */
int python_interp_of_view(const struct target_view *v, struct python_interp *out,
			  char *err, size_t errlen);

/* The same for an executable about to be run by pmetrics. */
int python_interp_of_exe(const char *exe, struct python_interp *out, char *err, size_t errlen);

#endif
