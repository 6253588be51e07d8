// SPDX-License-Identifier: MIT
/* Finding a target's executable and libraries; see library_resolver.h. */
#include "library_resolver.h"
#include "whole_file.h"
#include "elf_symbols.h"

#include <ctype.h>
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#define DELETED_SUFFIX " (deleted)"
#define SEARCH_LIST_MAX 8192

/* Drops the " (deleted)" the kernel appends to the name of a file that
 * was removed or replaced since it was mapped; says whether it did. */
static bool strip_deleted(char *name)
{
	size_t n = strlen(name), k = sizeof(DELETED_SUFFIX) - 1;

	if (n < k || strcmp(name + n - k, DELETED_SUFFIX) != 0)
		return false;
	name[n - k] = '\0';
	return true;
}

int target_view_of_pid(struct target_view *v, pid_t pid)
{
	ssize_t n;

	memset(v, 0, sizeof(*v));
	v->pid = pid;
	snprintf(v->root, sizeof(v->root), "/proc/%d/root", (int)pid);
	snprintf(v->exe, sizeof(v->exe), "/proc/%d/exe", (int)pid);
	n = readlink(v->exe, v->exe_name, sizeof(v->exe_name) - 1);
	if (n < 0)
		return -errno;
	v->exe_name[n] = '\0';
	strip_deleted(v->exe_name);
	return 0;
}

void target_view_own(struct target_view *v, const char *exe)
{
	memset(v, 0, sizeof(*v));
	snprintf(v->exe, sizeof(v->exe), "%s", exe);
	snprintf(v->exe_name, sizeof(v->exe_name), "%s", exe);
}

/* snprintf that says whether all of it fit: a path cut short must never
 * be taken for another file. */
static bool fits(int n, size_t len)
{
	return n >= 0 && (size_t)n < len;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* "libc.so.6" names libc.so.6; LOOSE: "libfoo.so" also names
 * libfoo.so.1.2 (the file a development symlink points at). */
static bool names_file(const char *base, const char *name, bool loose)
{
	size_t n = strlen(name);

	return strcmp(base, name) == 0 || (loose && strncmp(base, name, n) == 0 && base[n] == '.');
}

/* ---- files inside the target's root ---------------------------------- */

/* A path like /proc/PID/root/usr/lib/libfoo.so enters the target's root
 * through the magic link once; an absolute symlink met after it would
 * restart at pmetrics' own root, and a probe land in the host's file of
 * that name. So every file of the target is resolved here with the
 * target's root as "/", and named by its path without symlinks, which
 * leads from here to the same file. */

#define MAX_SYMLINKS 40 /* the kernel's own limit for one path */
#define MAX_DEPTH 256   /* directories one walk is inside at once */
/* Every file of the target is opened like this: no terminal becomes
 * ours, no fd leaks into a command we launch, and should a FIFO still be
 * opened (one swapped in as we open) it does not block us. */
#define READ_FLAGS (O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)

/* The target's root, open here; -errno when it cannot be. */
static int open_root(const struct target_view *v)
{
	int fd = open(v->root[0] ? v->root : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/* CANON (a path below the target's root) as a path from here. */
static bool view_path(const struct target_view *v, const char *canon, char *out, size_t len)
{
	return fits(snprintf(out, len, "%s%s", v->root, canon), len);
}

static bool is_regular(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
}

/* The file FD (O_PATH, ST its type) opened with FLAGS when it is a
 * regular file: through /proc/self/fd, so it is that very inode, whatever
 * the name leads to by now. Anything else keeps its O_PATH fd, which
 * callers refuse by type: opening a device the target put in its root
 * could act on the device (a watchdog starts when opened). Takes FD. */
static int reopen(int fd, const struct stat *st, int flags)
{
	char self[64];
	int file;

	if (!S_ISREG(st->st_mode))
		return fd;
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	file = open(self, flags);
	file = file < 0 ? -errno : file;
	close(fd);
	return file;
}

/* PATH walked one component at a time below ROOT, the way the kernel does
 * with RESOLVE_IN_ROOT: a symlink's target is read and walked in its
 * turn, an absolute one from ROOT again, and ".." never climbs above
 * ROOT. Each component is opened relative to the directory before it,
 * never through a path, so nothing here leaves ROOT. The file found is
 * opened with FLAGS when it is a regular file or a directory (else its fd
 * is O_PATH, see reopen()); its path without symlinks
 * ("/usr/lib/libc.so.6", "/" for ROOT itself) goes into CANON. Returns the
 * fd, or -errno. */
static int walk_in_root(int root, const char *path, int flags, char *canon, size_t len)
{
	char todo[PATH_MAX], link[PATH_MAX], joined[2 * PATH_MAX + 2];
	int dirs[MAX_DEPTH], depth = 0, links = 0, file = -1, ret = 0;
	size_t at = 0, used = 0;

	if (len < 2 || !fits(snprintf(todo, sizeof(todo), "%s", path), sizeof(todo)))
		return -ENAMETOOLONG;
	dirs[0] = root;
	canon[0] = '\0';
	while (!ret && file < 0) {
		char name[NAME_MAX + 1];
		struct stat st;
		ssize_t k;
		size_t n;
		bool last;
		int fd;

		at += strspn(todo + at, "/");
		n = strcspn(todo + at, "/");
		if (n == 0)
			break;
		if (n > NAME_MAX) {
			ret = -ENAMETOOLONG;
			break;
		}
		memcpy(name, todo + at, n);
		name[n] = '\0';
		at += n;
		last = todo[at + strspn(todo + at, "/")] == '\0';
		if (strcmp(name, ".") == 0)
			continue;
		if (strcmp(name, "..") == 0) {
			if (depth > 0) {
				close(dirs[depth--]);
				used = (size_t)(strrchr(canon, '/') - canon);
				canon[used] = '\0';
			}
			continue;
		}
		fd = openat(dirs[depth], name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) != 0) {
			ret = -errno;
			if (fd >= 0)
				close(fd);
			break;
		}
		if (S_ISLNK(st.st_mode)) {
			/* readlinkat() with "" reads the link an O_PATH fd holds */
			k = readlinkat(fd, "", link, sizeof(link));
			ret = k < 0 ? -errno : 0;
			close(fd);
			if (!ret && ++links > MAX_SYMLINKS)
				ret = -ELOOP;
			else if (!ret && (k == 0 || k == (ssize_t)sizeof(link)))
				ret = k ? -ENAMETOOLONG : -ENOENT;
			else if (!ret && !fits(snprintf(joined, sizeof(joined), "%.*s/%s", (int)k, link,
						       todo + at), sizeof(todo)))
				ret = -ENAMETOOLONG;
			if (ret)
				break;
			memcpy(todo, joined, strlen(joined) + 1);
			at = 0;
			if (link[0] == '/') {
				while (depth > 0)
					close(dirs[depth--]);
				used = 0;
				canon[0] = '\0';
			}
			continue;
		}
		if (!S_ISDIR(st.st_mode) && !last)
			ret = -ENOTDIR;
		else if (used + 1 + n >= len || depth + 1 >= MAX_DEPTH)
			ret = -ENAMETOOLONG;
		if (ret) {
			close(fd);
			break;
		}
		used += (size_t)snprintf(canon + used, len - used, "/%s", name);
		if (S_ISDIR(st.st_mode)) {
			dirs[++depth] = fd;
			continue;
		}
		file = reopen(fd, &st, flags);
		ret = file < 0 ? file : 0;
	}
	if (!ret && file < 0) {
		/* a directory: the one the walk ended in */
		file = openat(dirs[depth], ".", flags);
		ret = file < 0 ? -errno : 0;
	}
	if (!canon[0])
		snprintf(canon, len, "/");
	while (depth > 0)
		close(dirs[depth--]);
	return ret ? ret : file;
}

#ifndef SYS_openat2
#define SYS_openat2 437 /* the same number on every architecture */
#endif

/* Cleared when the kernel has no openat2 (before Linux 5.6, or a seccomp
 * filter that refuses it, as some container runtimes' did). */
static bool have_openat2 = true;

/* PATH looked up by the kernel itself with ROOT as "/": an O_PATH fd
 * (nothing is opened for reading), -ENOSYS when it cannot (no openat2). */
static int kernel_find_in_root(int root, const char *path)
{
	struct open_how how = { .flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT };
	long fd;

	if (!have_openat2)
		return -ENOSYS;
	fd = syscall(SYS_openat2, root, path, &how, sizeof(how));
	if (fd >= 0)
		return (int)fd;
	if (errno != ENOSYS && errno != EPERM)
		return -errno;
	have_openat2 = false;
	return -ENOSYS;
}

/* PATH (absolute, in the target's view) opened with FLAGS inside ROOT
 * as walk_in_root() does, its path without symlinks below ROOT into
 * CANON. Where the kernel has openat2 its RESOLVE_IN_ROOT has the last
 * word: the walk must have found the same inode (else -EXDEV: the target
 * changed the path meanwhile). Returns an fd, or -errno. */
static int open_in_root(int root, const char *path, int flags, char *canon, size_t len)
{
	int walked = walk_in_root(root, path, flags, canon, len), found;
	struct stat a, b;

	if (walked < 0)
		return walked;
	found = kernel_find_in_root(root, path);
	if (found == -ENOSYS)
		return walked;
	if (found < 0 || fstat(found, &a) != 0 || fstat(walked, &b) != 0 ||
	    a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
		close(walked);
		walked = found < 0 ? found : -EXDEV;
	}
	if (found >= 0)
		close(found);
	return walked;
}

int target_open_file(pid_t pid, const char *file)
{
	char dir[64], below[PATH_MAX], canon[PATH_MAX];
	bool absolute = file[0] == '/';
	int top, fd;

	snprintf(dir, sizeof(dir), "/proc/%d/%s", (int)pid, absolute ? "root" : "cwd");
	if (!fits(snprintf(below, sizeof(below), "%s%s", absolute ? "" : "/", file), sizeof(below)))
		return -ENAMETOOLONG;
	top = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (top < 0)
		return -errno;
	fd = open_in_root(top, below, READ_FLAGS, canon, sizeof(canon));
	close(top);
	if (fd >= 0 && !is_regular(fd)) {
		close(fd);
		fd = -EINVAL;
	}
	return fd;
}

/* ---- the process's own mappings ------------------------------------ */

/* A mapped FILE of the process: through map_files when we may (needs
 * CAP_SYS_ADMIN; it is the inode the process maps even if the name now
 * leads elsewhere or nowhere), else by name inside its root. Returns 0,
 * or -errno when neither leads to it. */
static int mapped_file(const struct target_view *v, unsigned long start, unsigned long end,
		       const char *file, bool deleted, struct resolved_file *out)
{
	char canon[PATH_MAX];
	int root, fd;

	if (!fits(snprintf(out->name, sizeof(out->name), "%s", file), sizeof(out->name)))
		return -ENAMETOOLONG;
	out->replaced = deleted;
	snprintf(out->path, sizeof(out->path), "/proc/%d/map_files/%lx-%lx", (int)v->pid, start, end);
	if (access(out->path, R_OK) == 0)
		return 0;
	root = open_root(v);
	fd = root < 0 ? root : open_in_root(root, file, READ_FLAGS, canon, sizeof(canon));
	if (root >= 0)
		close(root);
	if (fd < 0)
		return fd;
	close(fd);
	return view_path(v, canon, out->path, sizeof(out->path)) ? 0 : -ENAMETOOLONG;
}

enum map_match {
	MATCH_NAME,    /* the file's base name is NAME, by names_file()'s loose rule */
	MATCH_PREFIX,  /* its base name starts with NAME */
	MATCH_PATH,    /* its path is NAME (deleted or replaced since, or not) */
};

/* The first mapping whose file matches NAME as HOW says that can be
 * opened. */
static int find_mapping(const struct target_view *v, const char *name, enum map_match how,
			struct resolved_file *out)
{
	char maps[64], line[PATH_MAX + 256];
	int ret = -ENOENT;
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)v->pid);
	f = fopen(maps, "re");
	if (!f)
		return -errno;
	while (ret && fgets(line, sizeof(line), f)) {
		unsigned long start, end;
		const char *base;
		char *file;
		bool deleted;
		int at = 0;

		if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &start, &end, &at) < 2 || !at)
			continue;
		file = line + at;
		file[strcspn(file, "\n")] = '\0';
		if (file[0] != '/')
			continue;
		deleted = strip_deleted(file);
		base = base_name(file);
		if (how == MATCH_PREFIX ? strncmp(base, name, strlen(name)) != 0 :
		    how == MATCH_PATH ? strcmp(file, name) != 0 :
		    !names_file(base, name, true))
			continue;
		ret = mapped_file(v, start, end, file, deleted, out);
	}
	fclose(f);
	return ret;
}

int resolve_mapped_prefix(const struct target_view *v, const char *prefix,
			  struct resolved_file *out)
{
	return v->pid ? find_mapping(v, prefix, MATCH_PREFIX, out) : -ENOENT;
}

/* ---- the dynamic loader's search ------------------------------------ */

struct search {
	const struct target_view *v;
	const char *name;
	int root;     /* the target's root, open */
	int machine;  /* the executable's e_machine: a library must match */
	bool loose;   /* names_file()'s loose rule */
	bool secure;  /* the target runs with AT_SECURE */
	bool direct;  /* NAME is one of the executable's own DT_NEEDED */
	char origin[PATH_MAX]; /* $ORIGIN: the executable's directory */
	char cwd[PATH_MAX];    /* a command about to start: its working directory */
	struct resolved_file *out;
};

/* Is DIR/FILE (a path in the view) a regular file and a library of the
 * executable's machine? Then it is the answer, named from here by its
 * path without symlinks inside the target's root. */
static bool take(struct search *s, const char *dir, const char *file)
{
	char want[PATH_MAX], canon[PATH_MAX], path[sizeof(s->out->path)];
	int fd, machine;
	bool ok;

	if (!fits(snprintf(want, sizeof(want), "%s/%s", dir, file), sizeof(want)))
		return false;
	fd = open_in_root(s->root, want, READ_FLAGS, canon, sizeof(canon));
	if (fd < 0)
		return false;
	ok = is_regular(fd) &&
	     (s->machine < 0 || (elf_header_fd(fd, &machine, NULL) == 0 && machine == s->machine));
	close(fd);
	if (!ok || !view_path(s->v, canon, path, sizeof(path)))
		return false;
	memcpy(s->out->path, path, sizeof(path));
	memcpy(s->out->name, want, sizeof(want));
	s->out->replaced = false;
	return true;
}

/* NAME in DIR; in the loose pass, a file NAME.* in it. */
static bool search_dir(struct search *s, const char *dir)
{
	char canon[PATH_MAX];
	struct dirent *de;
	bool found = false;
	DIR *d = NULL;
	int fd;

	if (!s->loose)
		return take(s, dir, s->name);
	fd = open_in_root(s->root, dir, READ_FLAGS | O_DIRECTORY, canon, sizeof(canon));
	if (fd >= 0 && !(d = fdopendir(fd)))
		close(fd);
	while (d && !found && (de = readdir(d)))
		found = names_file(de->d_name, s->name, true) && take(s, dir, de->d_name);
	if (d)
		closedir(d);
	return found;
}

/* The length of the dynamic string token $NAME or ${NAME} at P (N bytes
 * of an entry), or 0 when there is none there ("$ORIGINAL" is not one). */
static size_t token_at(const char *p, size_t n, const char *name)
{
	size_t k = strlen(name);

	if (p[0] != '$' || n < 1 + k)
		return 0;
	if (p[1] == '{')
		return n >= 3 + k && strncmp(p + 2, name, k) == 0 && p[2 + k] == '}' ? 3 + k : 0;
	if (strncmp(p + 1, name, k) != 0)
		return 0;
	return n == 1 + k || !(isalnum((unsigned char)p[1 + k]) || p[1 + k] == '_') ? 1 + k : 0;
}

/* One entry (N bytes at ENTRY) of a search list as a directory of the
 * target's view, into DIR: $ORIGIN or ${ORIGIN}, wherever it is in the
 * entry, is the executable's directory, as ld.so expands it. False for
 * an entry ld.so would search but that is skipped here:
 * - $LIB or $PLATFORM: their values are built into the target's ld.so;
 * - $ORIGIN in a secure target: ld.so expands it there only into its
 *   trusted system directories, which are searched last anyway;
 * - empty (ld.so reads it as ".") or relative, in a running process: it
 *   names a directory below the working directory the process has when
 *   the library is loaded, which pmetrics cannot know (a library it
 *   already has is found by its mappings first). For a command about to
 *   start it is pmetrics' own, which the command inherits. */
static bool expand_entry(const struct search *s, const char *entry, size_t n, char *dir, size_t len)
{
	char rel[PATH_MAX];
	size_t used = 0, k;

	dir[0] = '\0';
	for (size_t i = 0; i < n; i += k) {
		const char *add = entry + i;
		size_t add_len = 1;

		k = token_at(entry + i, n - i, "ORIGIN");
		if (k) {
			if (s->secure)
				return false;
			add = s->origin;
			add_len = strlen(s->origin);
		} else if (token_at(entry + i, n - i, "LIB") || token_at(entry + i, n - i, "PLATFORM")) {
			return false;
		} else {
			k = 1;
		}
		if (used + add_len >= len)
			return false;
		memcpy(dir + used, add, add_len);
		used += add_len;
		dir[used] = '\0';
	}
	if (dir[0] == '/')
		return true;
	if (s->v->pid || !s->cwd[0])
		return false;
	/* relative to the working directory the command will start in */
	memcpy(rel, dir, used + 1);
	return fits(snprintf(dir, len, "%s%s%s", s->cwd, used ? "/" : "", rel), len);
}

/* Each directory of the LIST, its entries separated by any of SEPS. */
static bool search_list(struct search *s, const char *list, const char *seps)
{
	char dir[PATH_MAX];

	while (list && *list) {
		size_t n = strcspn(list, seps);

		if (expand_entry(s, list, n, dir, sizeof(dir)) && search_dir(s, dir))
			return true;
		list += n + (list[n] != '\0');
	}
	return false;
}

/* LD_LIBRARY_PATH as the target has it: ours for a command we start,
 * else from its environment. */
static void library_path_env(const struct target_view *v, char *out, size_t len)
{
	static const char key[] = "LD_LIBRARY_PATH=";
	char path[64], *env = NULL, *at;
	size_t size = 0;
	FILE *f;

	out[0] = '\0';
	if (!v->pid) {
		snprintf(out, len, "%s", getenv("LD_LIBRARY_PATH") ? getenv("LD_LIBRARY_PATH") : "");
		return;
	}
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)v->pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (getdelim(&env, &size, '\0', f) > 0) {
		at = env;
		if (strncmp(at, key, sizeof(key) - 1) == 0) {
			snprintf(out, len, "%s", at + sizeof(key) - 1);
			break;
		}
	}
	free(env);
	fclose(f);
}

/* Whether a running process has AT_SECURE in its auxiliary vector; its
 * entries are words of the executable's class. */
static bool auxv_secure(const struct target_view *v)
{
	unsigned char buf[8192];
	char path[64];
	int fd, machine, elf_class = 0;
	size_t word, got = 0;
	ssize_t n;
	bool secure = false;

	fd = open(v->exe, READ_FLAGS);
	if (fd >= 0) {
		if (elf_header_fd(fd, &machine, &elf_class) != 0)
			elf_class = 0;
		close(fd);
	}
	word = elf_class == ELFCLASS32 ? 4 : 8;
	snprintf(path, sizeof(path), "/proc/%d/auxv", (int)v->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	while (got < sizeof(buf) && (n = read(fd, buf + got, sizeof(buf) - got)) > 0)
		got += (size_t)n;
	close(fd);
	for (size_t i = 0; i + 2 * word <= got; i += 2 * word) {
		uint64_t type = 0, value = 0;

		if (word == 4) {
			uint32_t t, x;

			memcpy(&t, buf + i, 4);
			memcpy(&x, buf + i + 4, 4);
			type = t;
			value = x;
		} else {
			memcpy(&type, buf + i, 8);
			memcpy(&value, buf + i + 8, 8);
		}
		if (type == AT_NULL)
			break;
		if (type == AT_SECURE)
			secure = value != 0;
	}
	return secure;
}

/* Does the target run with AT_SECURE (set-user-ID, set-group-ID or file
 * capabilities gained at exec)? ld.so then ignores LD_LIBRARY_PATH. A
 * running process's auxiliary vector says; for a command about to start,
 * what execve will decide from its file and our ids. */
static bool target_secure(const struct target_view *v)
{
	struct statvfs fs;
	struct stat st;
	uid_t euid;
	gid_t egid;

	if (v->pid)
		return auxv_secure(v);
	if (stat(v->exe, &st) != 0 || (statvfs(v->exe, &fs) == 0 && (fs.f_flag & ST_NOSUID)))
		return false;
	euid = st.st_mode & S_ISUID ? st.st_uid : geteuid();
	/* S_ISGID without group execute is mandatory locking, not set-group-ID */
	egid = (st.st_mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP) ? st.st_gid : getegid();
	if (euid != getuid() || egid != getgid())
		return true;
	/* file capabilities raise a user other than root */
	return getuid() != 0 && getxattr(v->exe, "security.capability", NULL, 0) > 0;
}

static bool take_cached(const char *path, void *arg)
{
	struct search *s = arg;
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');

	if (!slash || !fits(snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path), sizeof(dir)))
		return false;
	return take(s, dir, slash + 1);
}

#define CACHE_MAX (64u << 20) /* far more than any real ld.so.cache */

/* The target's /etc/ld.so.cache (whole_file_read: it is the target's to
 * change under us). */
static bool search_cache(struct search *s)
{
	char canon[PATH_MAX], *buf;
	bool found = false;
	size_t got;
	int fd = open_in_root(s->root, "/etc/ld.so.cache", READ_FLAGS, canon, sizeof(canon));

	if (fd < 0)
		return false;
	buf = whole_file_read(fd, CACHE_MAX, &got);
	if (buf)
		found = ld_cache_lookup(buf, got, s->name, take_cached, s) == 0;
	free(buf);
	close(fd);
	return found;
}

/* Where ld.so looks last, for the executable's machine. */
static const char *default_dirs(int machine)
{
	if (machine == EM_X86_64)
		return "/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu:/lib64:/usr/lib64:/lib:/usr/lib";
	if (machine == EM_AARCH64)
		return "/lib/aarch64-linux-gnu:/usr/lib/aarch64-linux-gnu:/lib64:/usr/lib64:/lib:/usr/lib";
	return "/lib64:/usr/lib64:/lib:/usr/lib";
}

/* One pass of ld.so's order: the executable's DT_RPATH (when it has no
 * DT_RUNPATH: it applies to every library loaded), LD_LIBRARY_PATH
 * (split at ':' and ';', as ld.so does; not for a secure target), its
 * DT_RUNPATH (only for its own DT_NEEDED: a library another one needs is
 * searched in that one's), the cache, the defaults. ld.so never reads
 * /etc/ld.so.conf: a directory named there but missing from a stale
 * cache is not searched. */
static bool search_all(struct search *s)
{
	char rpath[SEARCH_LIST_MAX], runpath[SEARCH_LIST_MAX], list[SEARCH_LIST_MAX];
	bool has_runpath = elf_runpath(s->v->exe, runpath, sizeof(runpath)) == 0;

	if (!has_runpath && elf_rpath(s->v->exe, rpath, sizeof(rpath)) == 0 &&
	    search_list(s, rpath, ":"))
		return true;
	if (!s->secure) {
		library_path_env(s->v, list, sizeof(list));
		if (search_list(s, list, ":;"))
			return true;
	}
	if (has_runpath && s->direct && search_list(s, runpath, ":"))
		return true;
	return search_cache(s) || search_list(s, default_dirs(s->machine), ":");
}

static bool is_wanted(const char *needed, void *arg)
{
	const struct search *s = arg;

	return names_file(needed, s->name, s->loose);
}

int resolve_needed(const struct target_view *v, const char *name, struct resolved_file *out)
{
	struct search s = { .v = v, .name = name, .out = out };
	bool found = false;
	char *slash;

	if (strchr(name, '/'))
		return -ENOENT;
	s.root = open_root(v);
	if (s.root < 0)
		return -ENOENT;
	s.machine = elf_machine(v->exe);
	s.secure = target_secure(v);
	snprintf(s.origin, sizeof(s.origin), "%s", v->exe_name);
	slash = strrchr(s.origin, '/');
	if (slash)
		*slash = '\0';
	if (v->pid || !getcwd(s.cwd, sizeof(s.cwd)))
		s.cwd[0] = '\0';
	/* exact names in ld.so's order first, then libfoo.so for libfoo.so.N */
	for (int pass = 0; pass < 2 && !found; pass++) {
		s.loose = pass == 1;
		s.direct = elf_needs(v->exe, is_wanted, &s);
		found = search_all(&s);
	}
	close(s.root);
	return found ? 0 : -ENOENT;
}

/* ---- a probe's binary ----------------------------------------------- */

/* An absolute BINARY in the target's view, resolved inside its root;
 * CANON (PATH_MAX bytes) gets its path there with no symlink. */
static int resolve_absolute(const struct target_view *v, const char *binary,
			    struct resolved_file *out, char *canon, char *err, size_t errlen)
{
	int root = open_root(v), fd;
	bool regular;

	fd = root < 0 ? root : open_in_root(root, binary, READ_FLAGS, canon, PATH_MAX);
	if (root >= 0)
		close(root);
	if (fd < 0) {
		snprintf(err, errlen, "binary %s: %s", binary, strerror(-fd));
		return -1;
	}
	regular = is_regular(fd);
	close(fd);
	if (!regular) {
		snprintf(err, errlen, "binary %s is not a regular file: give the executable or "
			 "library file itself", binary);
		return -1;
	}
	if (!view_path(v, canon, out->path, sizeof(out->path)) ||
	    !fits(snprintf(out->name, sizeof(out->name), "%s", binary), sizeof(out->name))) {
		snprintf(err, errlen, "binary %s: its path is too long", binary);
		return -1;
	}
	return 0;
}

/* An absolute BINARY; for a running target, the file it maps at that
 * path, even one deleted or replaced on disk since (a redeploy under a
 * running server: the mapped file is the one its calls run). */
static int resolve_path(const struct target_view *v, const char *binary,
			struct resolved_file *out, char *err, size_t errlen)
{
	char canon[PATH_MAX];
	struct resolved_file mapped = { 0 };
	int found = resolve_absolute(v, binary, out, canon, err, errlen), mapping;

	if (!v->pid)
		return found;
	mapping = find_mapping(v, found == 0 ? canon : binary, MATCH_PATH, &mapped);
	if (mapping == 0 && mapped.replaced) {
		*out = mapped;
		return 0;
	}
	out->not_mapped = mapping != 0;
	return found;
}

int resolve_binary(const struct target_view *v, const char *binary, struct resolved_file *out,
		   char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (binary[0] == '\0') {
		snprintf(out->path, sizeof(out->path), "%s", v->exe);
		snprintf(out->name, sizeof(out->name), "%s", v->exe_name);
		return 0;
	}
	if (binary[0] == '/')
		return resolve_path(v, binary, out, err, errlen);
	/* a relative path is taken from here, as a shell would: only
	 * where the target sees the same root */
	if (strchr(binary, '/')) {
		char abs[PATH_MAX];
		struct stat ours, theirs;

		if (v->pid && (stat("/", &ours) != 0 || stat(v->root, &theirs) != 0 ||
			       ours.st_dev != theirs.st_dev || ours.st_ino != theirs.st_ino)) {
			snprintf(err, errlen, "binary %s: a relative path, and process %d has another "
				 "root (a container?): give the path as it sees it, from /", binary,
				 (int)v->pid);
			return -1;
		}
		if (!realpath(binary, abs)) {
			snprintf(err, errlen, "binary %s: %s (a relative path is taken from the "
				 "working directory)", binary, strerror(errno));
			return -1;
		}
		return resolve_path(v, abs, out, err, errlen);
	}
	if (v->pid && find_mapping(v, binary, MATCH_NAME, out) == 0)
		return 0;
	/* a command about to start maps nothing yet; its executable by name */
	if (!v->pid && names_file(base_name(v->exe_name), binary, false)) {
		snprintf(out->path, sizeof(out->path), "%s", v->exe);
		snprintf(out->name, sizeof(out->name), "%s", v->exe_name);
		return 0;
	}
	if (resolve_needed(v, binary, out) == 0) {
		out->not_mapped = v->pid != 0;
		return 0;
	}
	if (v->pid)
		snprintf(err, errlen, "%s is not mapped by process %d (%s), nor found where ld.so "
			 "would look for it: give its absolute path", binary, (int)v->pid, v->exe_name);
	else
		snprintf(err, errlen, "%s is not a library found for %s (RPATH, LD_LIBRARY_PATH, "
			 "RUNPATH, ld.so.cache, the system directories): give its absolute path",
			 binary, v->exe_name);
	return -1;
}

/* ---- /etc/ld.so.cache ------------------------------------------------- */

/* glibc's cache format since 2.x ("glibc-ld.so.cache1.1"), alone or after
 * the old libc5 one: a header, then fixed entries whose key (the soname)
 * and value (the path) are offsets from the header. */
#define CACHE_MAGIC "glibc-ld.so.cache1.1"
#define CACHE_HEADER 48 /* magic 20, nlibs 4, len_strings 4, flags etc. 20 */
#define CACHE_ENTRY 24  /* flags 4, key 4, value 4, osversion 4, hwcap 8 */

static uint32_t u32_at(const char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* The NUL-terminated string at OFF of the LEN bytes at BASE, or NULL. */
static const char *string_at(const char *base, size_t len, uint32_t off)
{
	if (off >= len || !memchr(base + off, '\0', len - off))
		return NULL;
	return base + off;
}

int ld_cache_lookup(const char *file, size_t len, const char *name,
		    bool (*found)(const char *path, void *arg), void *arg)
{
	const char *hdr = memmem(file, len, CACHE_MAGIC, sizeof(CACHE_MAGIC) - 1);
	size_t avail, nlibs;

	if (!hdr || (size_t)(file + len - hdr) < CACHE_HEADER)
		return -EINVAL;
	avail = (size_t)(file + len - hdr);
	nlibs = u32_at(hdr + 20);
	if (nlibs > (avail - CACHE_HEADER) / CACHE_ENTRY)
		return -EINVAL;
	for (size_t i = 0; i < nlibs; i++) {
		const char *entry = hdr + CACHE_HEADER + i * CACHE_ENTRY;
		const char *key = string_at(hdr, avail, u32_at(entry + 4));
		const char *value = string_at(hdr, avail, u32_at(entry + 8));

		if (key && value && strcmp(key, name) == 0 && found(value, arg))
			return 0;
	}
	return -ENOENT;
}
