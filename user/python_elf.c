// SPDX-License-Identifier: MIT
/* Interpreter discovery for Python spans: which file holds the frame
 * evaluation function, and which CPython version it is. */
#include "python_elf.h"
#include "whole_file.h"
#include "elf_symbols.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int python_version_from_name(const char *path, int *major, int *minor, bool *free_threaded)
{
	const char *base = strrchr(path, '/');
	const char *p;

	base = base ? base + 1 : path;
	for (p = strstr(base, "python"); p; p = strstr(p + 1, "python")) {
		int ma, mi, used = 0;
		if (sscanf(p, "python%d.%d%n", &ma, &mi, &used) == 2 && used > 0 && ma >= 2) {
			*major = ma;
			*minor = mi;
			*free_threaded = p[used] == 't';
			return 0;
		}
	}
	return -1;
}

int python_version_from_abi_tag(const char *bytes, size_t len, int *major, int *minor,
				bool *free_threaded)
{
	static const char tag[] = ".cpython-3"; /* then the minor: 1 or 2 digits */
	const char *end = bytes + len, *p = bytes;

	while ((p = memmem(p, (size_t)(end - p), tag, sizeof(tag) - 1))) {
		const char *d = p + sizeof(tag) - 1;
		int mi = 0, digits = 0;
		bool threads = false;

		for (; d < end && digits < 2 && *d >= '0' && *d <= '9'; d++, digits++)
			mi = mi * 10 + (*d - '0');
		/* The digits end at '-' or ABI flags: 't' free-threaded,
		 * 'd' debug, 'm' pymalloc (3.7 and older). */
		for (; d < end && (*d == 't' || *d == 'd' || *d == 'm'); d++)
			threads |= *d == 't';
		if (digits > 0 && d < end && *d == '-') {
			*major = 3;
			*minor = mi;
			*free_threaded = threads;
			return 0;
		}
		p++;
	}
	return -1;
}

/* The interpreter may be the target's own file (a container's, one it can
 * rewrite): read as whole_file_read() reads. */
#define INTERP_MAX (1u << 30) /* far more than any libpython */

int python_version_from_file(const char *path, int *major, int *minor, bool *free_threaded)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC), rc = -1;
	size_t got;
	char *buf;

	if (fd < 0)
		return -1;
	buf = whole_file_read(fd, INTERP_MAX, &got);
	if (buf)
		rc = python_version_from_abi_tag(buf, got, major, minor, free_threaded);
	free(buf);
	close(fd);
	return rc;
}

int python_needed_libpython(const char *path, char *out, size_t len)
{
	return elf_needed(path, "libpython", out, len);
}

/* Is FILE (NAME to the target) an interpreter we can hook: does it define
 * the frame evaluation? */
static int check_cpython(const char *file, const char *name, char *err, size_t errlen)
{
	char suggest[8], why[512], shebang[256];
	uint64_t off;
	int rc, major, minor;
	bool ft, cr;

	if (whole_file_shebang(file, shebang, sizeof(shebang), &cr)) {
		/* a Python script: run by its interpreter, named on the command
		 * line; else a wrapper (a pyenv shim), whose Python is elsewhere */
		if (strstr(shebang, "python"))
			snprintf(err, errlen, "%s is a script (#!%s), not a CPython binary: launch its "
				 "interpreter with it: -- %s %s ...", name, shebang,
				 strncmp(shebang, "/usr/bin/env ", 13) ? shebang : shebang + 13, name);
		else
			snprintf(err, errlen, "%s is a script (#!%s), not a CPython binary: launch the "
				 "Python interpreter itself (for a pyenv shim, the path `pyenv which "
				 "python3` prints)", name, shebang);
		return -ENOEXEC;
	}
	rc = elf_symbol_offset(file, "_PyEval_EvalFrameDefault", &off, suggest, sizeof(suggest),
			       why, sizeof(why));
	/* Python 2 has no _PyEval_EvalFrameDefault: its name says what it is */
	if (rc == -ENOENT && python_version_from_name(name, &major, &minor, &ft) == 0 && major < 3)
		snprintf(err, errlen, "%s is Python %d.%d, which py: probes do not support "
			 "(supported: 3.8 to 3.13)", name, major, minor);
	else if (rc == -ENOENT)
		snprintf(err, errlen, "%s is not a CPython interpreter (no _PyEval_EvalFrameDefault "
			 "symbol): py: probes need a CPython process", name);
	else if (rc)
		snprintf(err, errlen, "%s", why);
	return rc;
}

/* Fills OUT for the interpreter in FILE; NAME_HINT is another file name
 * that may carry the version. */
static int interp_from_file(const struct resolved_file *file, const char *name_hint,
			    struct python_interp *out, char *err, size_t errlen)
{
	int rc;

	if ((rc = check_cpython(file->path, file->name, err, errlen)))
		return rc;
	snprintf(out->path, sizeof(out->path), "%s", file->path);
	snprintf(out->name, sizeof(out->name), "%s", file->name);
	if (python_version_from_name(file->name, &out->major, &out->minor, &out->free_threaded) == 0)
		return 0;
	if (name_hint &&
	    python_version_from_name(name_hint, &out->major, &out->minor, &out->free_threaded) == 0)
		return 0;
	/* A renamed or copied interpreter: its own ABI tag says. */
	if (python_version_from_file(file->path, &out->major, &out->minor, &out->free_threaded) == 0)
		return 0;
	snprintf(err, errlen, "cannot tell the CPython version of %s: its name has no "
		 "pythonX.Y and it holds no .cpython-XY- ABI tag; is it CPython 3?", file->name);
	return -ENOEXEC;
}

/* A command about to start: the libpython its executable needs. */
static int interp_to_start(const struct target_view *v, struct python_interp *out,
			   char *err, size_t errlen)
{
	struct resolved_file file = { 0 };
	char needed[256];

	if (python_needed_libpython(v->exe, needed, sizeof(needed)) == 0) {
		if (resolve_needed(v, needed, &file) != 0) {
			snprintf(err, errlen, "%s needs %s, which is not in its RPATH, LD_LIBRARY_PATH, "
				 "RUNPATH, ld.so.cache or the system library directories", v->exe_name,
				 needed);
			return -ENOENT;
		}
		return interp_from_file(&file, needed, out, err, errlen);
	}
	snprintf(file.path, sizeof(file.path), "%s", v->exe);
	snprintf(file.name, sizeof(file.name), "%s", v->exe_name);
	return interp_from_file(&file, NULL, out, err, errlen);
}

int python_interp_of_view(const struct target_view *v, struct python_interp *out,
			  char *err, size_t errlen)
{
	struct resolved_file file = { 0 };

	if (!v->pid)
		return interp_to_start(v, out, err, errlen);
	if (resolve_mapped_prefix(v, "libpython", &file) != 0) {
		snprintf(file.path, sizeof(file.path), "%s", v->exe);
		snprintf(file.name, sizeof(file.name), "%s", v->exe_name);
	}
	return interp_from_file(&file, NULL, out, err, errlen);
}

int python_interp_of_exe(const char *exe, struct python_interp *out, char *err, size_t errlen)
{
	char real[PATH_MAX];
	struct target_view v;

	if (!realpath(exe, real)) {
		snprintf(err, errlen, "%s: %s", exe, strerror(errno));
		return -errno;
	}
	target_view_own(&v, real);
	return interp_to_start(&v, out, err, errlen);
}
