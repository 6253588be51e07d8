/* SPDX-License-Identifier: MIT */
/* The one resolver of the files a probe goes into: the executable and
 * shared libraries of a target, found the way the target itself sees
 * them. A running process's own mappings come first (the very inode it
 * maps, through /proc/PID/map_files, even if the file was replaced or
 * deleted on disk since); otherwise a name is searched the way ld.so
 * would for the target's executable (DT_RPATH, LD_LIBRARY_PATH,
 * DT_RUNPATH, its /etc/ld.so.cache, the default directories; never
 * ld.so.conf, which ld.so does not read), always inside the target's
 * root (/proc/PID/root), so a target in another mount namespace (a
 * container, a chroot) gets its own files. Symlinks are followed inside
 * that root too, an absolute one included, and a file is named by its
 * path without symlinks, so a probe never lands in a file of pmetrics'
 * own root. Only regular files are taken, and none is read in a way that
 * could block (a FIFO) or fault (a file truncated under us). Native and
 * py: probes alike go through here. */
#ifndef PMETRICS_LIBRARY_RESOLVER_H
#define PMETRICS_LIBRARY_RESOLVER_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* How one target sees the file system. */
struct target_view {
	pid_t pid;               /* its process; 0 for a command not yet started */
	char root[32];           /* prefix turning its paths into ours: "/proc/PID/root" or "" */
	char exe[PATH_MAX];      /* its executable, openable from here */
	char exe_name[PATH_MAX]; /* the executable's path in its view ($ORIGIN) */
};

/* A running process's view. Returns 0, or -errno (gone, kernel thread). */
int target_view_of_pid(struct target_view *v, pid_t pid);
/* The view of a command pmetrics starts itself: its own; EXE is the
 * absolute path of the file it will run. */
void target_view_own(struct target_view *v, const char *exe);

/* A file of the target. */
struct resolved_file {
	char path[PATH_MAX]; /* opens it from here, with no symlink after the
			      * target's root; what uprobes attach to */
	char name[PATH_MAX]; /* what the target calls it (/usr/lib/libfoo.so.1) */
	bool replaced;       /* mapped, but deleted or replaced on disk since */
	bool not_mapped;     /* a running target does not map it (yet) */
};

/* A probe's BINARY: "" is the executable; an absolute path is that path
 * in the target's view (for a running target, the file it maps there,
 * even one replaced on disk since); a relative path is taken from the
 * working directory, where the target has our root; else a file name
 * or soname ("libc.so.6", or "libfoo.so" for libfoo.so.1.2), or a
 * command's own executable name, first among the process's mappings,
 * then where ld.so would find it. Sets not_mapped for a running target
 * that does not map the file. Returns 0, or -1 with a one-line reason
 * in err. */
int resolve_binary(const struct target_view *v, const char *binary, struct resolved_file *out,
		   char *err, size_t errlen);

/* FILE as process PID names it (absolute: below its root; relative: below
 * its working directory) opened for reading, every symlink followed
 * inside that directory as for a probe's file: the fd of a regular file,
 * or -errno. What a target's own data names (a Python frame's source
 * file) is opened this way, so it never leads to one of pmetrics' own
 * files. */
int target_open_file(pid_t pid, const char *file);

/* The first file the process maps whose name starts with PREFIX
 * ("libpython"). Returns 0, or -ENOENT. */
int resolve_mapped_prefix(const struct target_view *v, const char *prefix,
			  struct resolved_file *out);

/* NAME (a DT_NEEDED entry, or a file name) as ld.so would find it for
 * the target's executable. Returns 0, or -ENOENT. */
int resolve_needed(const struct target_view *v, const char *name, struct resolved_file *out);

/* The ld.so.cache entries of FILE (an /etc/ld.so.cache image of LEN
 * bytes) named NAME: calls FOUND with each path until it returns true.
 * Returns 0 when FOUND accepted one, -ENOENT when none, -EINVAL when the
 * image is not a cache glibc 2.x writes. */
int ld_cache_lookup(const char *file, size_t len, const char *name,
		    bool (*found)(const char *path, void *arg), void *arg);

#endif
