// SPDX-License-Identifier: MIT
/* The library resolver against a fake target root: ld.so's search order
 * (RPATH, LD_LIBRARY_PATH, RUNPATH, ld.so.cache, the default directories,
 * never ld.so.conf), $ORIGIN, secure targets, the machine check, the
 * libfoo.so -> libfoo.so.N rule, symlinks that must stay inside the root
 * (with and without openat2), FIFOs that must not block, and the
 * ld.so.cache reader on well-formed, real and broken images. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "library_resolver.h"

static char root[32]; /* fits struct target_view.root */

/* Writes LEN bytes of DATA to ROOT/REL, making its directories. */
static void put(const char *rel, const void *data, size_t len)
{
	char path[PATH_MAX + 64];
	FILE *f;

	snprintf(path, sizeof(path), "%s%s", root, rel);
	for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

/* A copy of this test's own executable: an ELF of this machine. */
static void put_elf(const char *rel)
{
	struct stat st;
	int fd = open("/proc/self/exe", O_RDONLY);
	void *map;

	assert_true(fd >= 0 && fstat(fd, &st) == 0);
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	assert_true(map != MAP_FAILED);
	put(rel, map, (size_t)st.st_size);
	munmap(map, (size_t)st.st_size);
	close(fd);
}

/* An ELF header of another machine: must never be taken. */
static void put_foreign_elf(const char *rel)
{
	Elf64_Ehdr eh = { 0 };

	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_DYN;
	eh.e_machine = EM_RISCV;
	eh.e_version = EV_CURRENT;
	eh.e_ehsize = sizeof(eh);
	put(rel, &eh, sizeof(eh));
}

/* An ld.so.cache image in glibc's format naming KEY -> VALUE pairs. */
static size_t make_cache(char *buf, size_t cap, const char *const *pairs, int n)
{
	size_t strings = 48 + (size_t)n * 24, at = strings;

	memset(buf, 0, cap);
	memcpy(buf, "glibc-ld.so.cache1.1", 20);
	memcpy(buf + 20, &(uint32_t){ (uint32_t)n }, 4);
	for (int i = 0; i < n; i++) {
		char *entry = buf + 48 + (size_t)i * 24;
		uint32_t key, value;

		memcpy(entry, &(int32_t){ 0x0303 }, 4);
		key = (uint32_t)at;
		at += (size_t)sprintf(buf + at, "%s", pairs[2 * i]) + 1;
		value = (uint32_t)at;
		at += (size_t)sprintf(buf + at, "%s", pairs[2 * i + 1]) + 1;
		memcpy(entry + 4, &key, 4);
		memcpy(entry + 8, &value, 4);
	}
	memcpy(buf + 24, &(uint32_t){ (uint32_t)(at - strings) }, 4);
	return at;
}

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/pmetrics-resolver.XXXXXX");
	assert_non_null(mkdtemp(root));
	put_elf("/opt/app/bin/app");
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

/* The fake root as a target's view, running /opt/app/bin/app. */
static void view(struct target_view *v)
{
	memset(v, 0, sizeof(*v));
	snprintf(v->root, sizeof(v->root), "%s", root);
	snprintf(v->exe, sizeof(v->exe), "%s/opt/app/bin/app", root);
	snprintf(v->exe_name, sizeof(v->exe_name), "/opt/app/bin/app");
}

static void found_in_default_dirs(void **state)
{
	struct resolved_file f;
	struct target_view v;

	(void)state;
	put_elf("/usr/lib/libplain.so.1");
	view(&v);
	assert_int_equal(resolve_needed(&v, "libplain.so.1", &f), 0);
	assert_string_equal(f.name, "/usr/lib/libplain.so.1");
	assert_true(strncmp(f.path, root, strlen(root)) == 0);
	assert_int_equal(resolve_needed(&v, "libnothere.so.1", &f), -ENOENT);
}

static void the_cache_comes_before_the_default_dirs(void **state)
{
	static const char *const pairs[] = { "libcached.so.2", "/opt/cached/libcached.so.2" };
	static char cache[4096];
	struct resolved_file f;
	struct target_view v;
	size_t len = make_cache(cache, sizeof(cache), pairs, 1);

	(void)state;
	put_elf("/opt/cached/libcached.so.2");
	put_elf("/usr/lib/libcached.so.2");
	put("/etc/ld.so.cache", cache, len);
	view(&v);
	assert_int_equal(resolve_needed(&v, "libcached.so.2", &f), 0);
	assert_string_equal(f.name, "/opt/cached/libcached.so.2");
}

/* ld.so reads only the cache ldconfig makes from ld.so.conf, never the
 * conf itself: a directory missing from the cache is not searched. */
static void ld_so_conf_is_not_read_at_run_time(void **state)
{
	static const char conf[] = "# comment\ninclude /etc/ld.so.conf.d/*.conf\n";
	static const char extra[] = "/opt/conf/lib\n";
	struct resolved_file f;
	struct target_view v;

	(void)state;
	put("/etc/ld.so.conf", conf, sizeof(conf) - 1);
	put("/etc/ld.so.conf.d/extra.conf", extra, sizeof(extra) - 1);
	put_elf("/opt/conf/lib/libconf.so.3");
	view(&v);
	assert_int_equal(resolve_needed(&v, "libconf.so.3", &f), -ENOENT);
}

static void another_machine_is_never_taken(void **state)
{
	struct resolved_file f;
	struct target_view v;

	(void)state;
	put_foreign_elf("/lib64/libtwice.so.1");
	put_elf("/usr/lib/libtwice.so.1");
	view(&v);
	assert_int_equal(resolve_needed(&v, "libtwice.so.1", &f), 0);
	assert_string_equal(f.name, "/usr/lib/libtwice.so.1");
	put_foreign_elf("/usr/lib/libforeign.so.1");
	assert_int_equal(resolve_needed(&v, "libforeign.so.1", &f), -ENOENT);
}

static void a_development_name_finds_the_versioned_file(void **state)
{
	struct resolved_file f;
	struct target_view v;

	(void)state;
	put_elf("/usr/lib/libdev.so.4.1");
	view(&v);
	assert_int_equal(resolve_needed(&v, "libdev.so", &f), 0);
	assert_string_equal(f.name, "/usr/lib/libdev.so.4.1");
	/* but libdev.so.4 is not libdev.so.41 */
	put_elf("/usr/lib/libdig.so.41");
	assert_int_equal(resolve_needed(&v, "libdig.so.4", &f), -ENOENT);
}

static void a_probe_binary_in_the_targets_view(void **state)
{
	char err[512];
	struct resolved_file f;
	struct target_view v;

	(void)state;
	view(&v);
	assert_int_equal(resolve_binary(&v, "", &f, err, sizeof(err)), 0);
	assert_string_equal(f.name, "/opt/app/bin/app");
	assert_int_equal(resolve_binary(&v, "/opt/app/bin/app", &f, err, sizeof(err)), 0);
	assert_true(strncmp(f.path, root, strlen(root)) == 0);
	assert_int_equal(resolve_binary(&v, "/opt/app/bin/nothere", &f, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "binary /opt/app/bin/nothere: No such file"));
	assert_int_equal(resolve_binary(&v, "libmissing.so", &f, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "libmissing.so is not a library found for /opt/app/bin/app"));
}

/* The parent directories of ROOT/REL. */
static void make_parents(const char *rel)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s%s", root, rel);
	for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
}

/* ROOT/REL as a symlink to TARGET (read inside the fake root when
 * absolute, as the target would). */
static void put_link(const char *rel, const char *target)
{
	char path[PATH_MAX + 64];

	make_parents(rel);
	snprintf(path, sizeof(path), "%s%s", root, rel);
	assert_int_equal(symlink(target, path), 0);
}

/* A copy of the file at FROM as ROOT/REL, mode MODE. */
static void put_copy(const char *rel, const char *from, mode_t mode)
{
	char path[PATH_MAX + 64];
	struct stat st;
	int fd = open(from, O_RDONLY);
	void *map;

	assert_true(fd >= 0 && fstat(fd, &st) == 0);
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	assert_true(map != MAP_FAILED);
	put(rel, map, (size_t)st.st_size);
	munmap(map, (size_t)st.st_size);
	close(fd);
	snprintf(path, sizeof(path), "%s%s", root, rel);
	assert_int_equal(chmod(path, mode), 0);
}

/* An executable of this machine holding only the dynamic entries the
 * resolver reads: DT_NEEDED for each of the N_NEEDED names, and TAG
 * (DT_RPATH or DT_RUNPATH; 0 for neither) with SEARCH. */
static void put_dynamic_exe(const char *rel, const char *const *needed, int n_needed, long tag,
			    const char *search)
{
	static unsigned char file[4096];
	char strings[1024] = "";
	Elf64_Dyn dyn[8] = { 0 };
	Elf64_Shdr sh[3] = { 0 };
	Elf64_Ehdr eh = { 0 };
	unsigned char self[EI_NIDENT + 4];
	size_t str_len = 1, dyn_off, sh_off;
	int n = 0, fd = open("/proc/self/exe", O_RDONLY);

	assert_true(fd >= 0 && pread(fd, self, sizeof(self), 0) == (ssize_t)sizeof(self));
	close(fd);
	for (int i = 0; i < n_needed; i++) {
		dyn[n].d_tag = DT_NEEDED;
		dyn[n++].d_un.d_val = str_len;
		str_len += (size_t)sprintf(strings + str_len, "%s", needed[i]) + 1;
	}
	if (tag) {
		dyn[n].d_tag = tag;
		dyn[n++].d_un.d_val = str_len;
		str_len += (size_t)sprintf(strings + str_len, "%s", search) + 1;
	}
	dyn[n++].d_tag = DT_NULL;
	dyn_off = (sizeof(eh) + str_len + 7) & ~(size_t)7;
	sh_off = dyn_off + (size_t)n * sizeof(dyn[0]);
	memcpy(eh.e_ident, self, EI_NIDENT);
	eh.e_type = ET_EXEC;
	memcpy(&eh.e_machine, self + EI_NIDENT + 2, 2); /* this test's own e_machine */
	eh.e_version = EV_CURRENT;
	eh.e_ehsize = sizeof(eh);
	eh.e_shoff = sh_off;
	eh.e_shentsize = sizeof(sh[0]);
	eh.e_shnum = 3;
	sh[1].sh_type = SHT_STRTAB;
	sh[1].sh_offset = sizeof(eh);
	sh[1].sh_size = str_len;
	sh[2].sh_type = SHT_DYNAMIC;
	sh[2].sh_offset = dyn_off;
	sh[2].sh_size = (size_t)n * sizeof(dyn[0]);
	sh[2].sh_link = 1;
	sh[2].sh_entsize = sizeof(dyn[0]);
	sh[2].sh_addralign = 8;
	memset(file, 0, sizeof(file));
	memcpy(file, &eh, sizeof(eh));
	memcpy(file + sizeof(eh), strings, str_len);
	memcpy(file + dyn_off, dyn, (size_t)n * sizeof(dyn[0]));
	memcpy(file + sh_off, sh, sizeof(sh));
	put(rel, file, sh_off + sizeof(sh));
}

static void runpath_is_for_the_executables_own_libraries(void **state)
{
	static const char *const needed[] = { "libdirect.so.1" };
	struct resolved_file f;
	struct target_view v;

	(void)state;
	put_dynamic_exe("/opt/app/bin/app", needed, 1, DT_RUNPATH, "/opt/rp");
	put_elf("/opt/rp/libdirect.so.1");
	put_elf("/opt/rp/libindirect.so.1");
	view(&v);
	assert_int_equal(resolve_needed(&v, "libdirect.so.1", &f), 0);
	assert_string_equal(f.name, "/opt/rp/libdirect.so.1");
	assert_int_equal(resolve_needed(&v, "libdirect.so", &f), 0);
	assert_string_equal(f.name, "/opt/rp/libdirect.so.1");
	/* a library one of its libraries needs is searched in that one's */
	assert_int_equal(resolve_needed(&v, "libindirect.so.1", &f), -ENOENT);
}

static void rpath_is_for_every_library(void **state)
{
	static const char *const needed[] = { "libdirect.so.1" };
	struct resolved_file f;
	struct target_view v;

	(void)state;
	put_dynamic_exe("/opt/app/bin/app", needed, 1, DT_RPATH, "/opt/rp");
	put_elf("/opt/rp/libindirect.so.1");
	view(&v);
	assert_int_equal(resolve_needed(&v, "libindirect.so.1", &f), 0);
	assert_string_equal(f.name, "/opt/rp/libindirect.so.1");
}

static void origin_anywhere_in_an_entry(void **state)
{
	static const char *const needed[] = { "libo.so.1", "libp.so.1", "libq.so.1" };
	struct resolved_file f;
	struct target_view v;

	(void)state;
	put_dynamic_exe("/opt/app/bin/app", needed, 3, DT_RUNPATH,
			"/nothere:/opt/mirror$ORIGIN:/opt/x${ORIGIN}/sub:/opt/y/$ORIGINAL");
	put_elf("/opt/mirror/opt/app/bin/libo.so.1");
	put_elf("/opt/x/opt/app/bin/sub/libp.so.1");
	put_elf("/opt/y/$ORIGINAL/libq.so.1"); /* not a token: taken as written */
	view(&v);
	assert_int_equal(resolve_needed(&v, "libo.so.1", &f), 0);
	assert_string_equal(f.name, "/opt/mirror/opt/app/bin/libo.so.1");
	assert_int_equal(resolve_needed(&v, "libp.so.1", &f), 0);
	assert_string_equal(f.name, "/opt/x/opt/app/bin/sub/libp.so.1");
	assert_int_equal(resolve_needed(&v, "libq.so.1", &f), 0);
	assert_string_equal(f.name, "/opt/y/$ORIGINAL/libq.so.1");
}

static void library_path_splits_at_colons_and_semicolons(void **state)
{
	struct resolved_file f;
	struct target_view v;
	int ret;

	(void)state;
	put_elf("/opt/llp/libllp.so.1");
	view(&v);
	setenv("LD_LIBRARY_PATH", "/nothere;/opt/llp", 1);
	ret = resolve_needed(&v, "libllp.so.1", &f);
	unsetenv("LD_LIBRARY_PATH");
	assert_int_equal(ret, 0);
	assert_string_equal(f.name, "/opt/llp/libllp.so.1");
}

/* A command about to start inherits our working directory: an empty
 * entry ("." to ld.so) and a relative one are below it. */
static void empty_and_relative_entries_of_a_command_to_start(void **state)
{
	char exe[PATH_MAX], dir[PATH_MAX], was[PATH_MAX], want1[PATH_MAX + 32], want2[PATH_MAX + 32];
	char got1[PATH_MAX] = "", got2[PATH_MAX] = "";
	struct resolved_file f;
	struct target_view v;
	int r1, r2;

	(void)state;
	put_elf("/opt/cwd/libcwd.so.1");
	put_elf("/opt/cwd/sub/librel.so.1");
	snprintf(exe, sizeof(exe), "%s/opt/app/bin/app", root);
	snprintf(dir, sizeof(dir), "%s/opt/cwd", root);
	target_view_own(&v, exe);
	assert_non_null(getcwd(was, sizeof(was)));
	assert_int_equal(chdir(dir), 0);
	setenv("LD_LIBRARY_PATH", "/nothere::sub", 1);
	r1 = resolve_needed(&v, "libcwd.so.1", &f);
	snprintf(got1, sizeof(got1), "%s", f.name);
	r2 = resolve_needed(&v, "librel.so.1", &f);
	snprintf(got2, sizeof(got2), "%s", f.name);
	unsetenv("LD_LIBRARY_PATH");
	assert_int_equal(chdir(was), 0);
	assert_int_equal(r1, 0);
	assert_int_equal(r2, 0);
	snprintf(want1, sizeof(want1), "%s/libcwd.so.1", dir);
	snprintf(want2, sizeof(want2), "%s/sub/librel.so.1", dir);
	assert_string_equal(got1, want1);
	assert_string_equal(got2, want2);
}

/* Can this test make a set-user-ID file run as another user here? */
static bool setuid_works(void)
{
	struct statvfs fs;

	return getuid() == 0 && statvfs(root, &fs) == 0 && !(fs.f_flag & ST_NOSUID);
}

/* ld.so drops LD_LIBRARY_PATH for a set-user-ID program: a command about
 * to start, judged from its file. */
static void a_secure_command_ignores_library_path(void **state)
{
	char exe[PATH_MAX + 32];
	struct resolved_file f;
	struct target_view v;
	int plain, secure;

	(void)state;
	if (!setuid_works()) {
		skip(); /* not root, or a nosuid file system */
		return;
	}
	put_elf("/opt/llp/libllp.so.1");
	view(&v);
	setenv("LD_LIBRARY_PATH", "/opt/llp", 1);
	plain = resolve_needed(&v, "libllp.so.1", &f);
	snprintf(exe, sizeof(exe), "%s/opt/app/bin/app", root);
	assert_int_equal(chown(exe, 65534, 65534), 0);
	assert_int_equal(chmod(exe, 04755), 0);
	secure = resolve_needed(&v, "libllp.so.1", &f);
	unsetenv("LD_LIBRARY_PATH");
	assert_int_equal(plain, 0);
	assert_int_equal(secure, -ENOENT);
}

/* Is the executable at EXE (a /proc/PID/exe) the sleeper? */
static bool runs(const char *exe, char *link, size_t len)
{
	ssize_t n = readlink(exe, link, len - 1);

	if (n <= 0)
		return false;
	link[n] = '\0';
	return strstr(link, "sleeper") != NULL;
}

/* Does process PID's environment hold the LD_LIBRARY_PATH it was given? */
static bool has_env(pid_t pid)
{
	char path[64], env[4096];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return false;
	n = read(fd, env, sizeof(env) - 1);
	close(fd);
	if (n <= 0)
		return false;
	return memmem(env, (size_t)n, "LD_LIBRARY_PATH=/opt/llp", 24) != NULL;
}

/* The same for a running process, whose auxiliary vector says AT_SECURE:
 * a set-user-ID copy of sleep(1) started by root runs as nobody. */
static int resolve_in_running_sleeper(bool setuid)
{
	char exe[PATH_MAX + 32], link[PATH_MAX];
	struct resolved_file f;
	struct target_view v;
	pid_t pid;
	int ret;

	snprintf(exe, sizeof(exe), "%s/opt/app/bin/sleeper", root);
	if (setuid) {
		assert_int_equal(chown(exe, 65534, 65534), 0);
		assert_int_equal(chmod(exe, 04755), 0);
	}
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		setenv("LD_LIBRARY_PATH", "/opt/llp", 1);
		execl(exe, "sleeper", "30", (char *)NULL);
		_exit(127);
	}
	memset(&v, 0, sizeof(v));
	v.pid = pid;
	snprintf(v.root, sizeof(v.root), "%s", root);
	snprintf(v.exe, sizeof(v.exe), "/proc/%d/exe", (int)pid);
	snprintf(v.exe_name, sizeof(v.exe_name), "/opt/app/bin/sleeper");
	/* until its exec is through: the executable is switched before the
	 * new environment and auxiliary vector are in place */
	for (int i = 0; i < 500 && !(runs(v.exe, link, sizeof(link)) && has_env(pid)); i++)
		usleep(10000);
	ret = resolve_needed(&v, "libllp.so.1", &f);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return ret;
}

static void a_secure_process_ignores_library_path(void **state)
{
	(void)state;
	if (!setuid_works() || access("/bin/sleep", X_OK) != 0) {
		skip(); /* not root, a nosuid file system, or no sleep(1) */
		return;
	}
	/* the library is a copy too: of the sleeper's machine, as it must be */
	put_copy("/opt/app/bin/sleeper", "/bin/sleep", 0755);
	put_copy("/opt/llp/libllp.so.1", "/bin/sleep", 0755);
	assert_int_equal(resolve_in_running_sleeper(false), 0);
	assert_int_equal(resolve_in_running_sleeper(true), -ENOENT);
}

/* BINARY, resolved in V, opens ROOT/WANT and keeps its own name. */
static bool resolves_to(const struct target_view *v, const char *binary, const char *want)
{
	char path[PATH_MAX + 64], err[512];
	struct resolved_file f;

	snprintf(path, sizeof(path), "%s%s", root, want);
	if (resolve_binary(v, binary, &f, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s: %s\n", binary, err);
		return false;
	}
	if (strcmp(f.path, path) != 0 || strcmp(f.name, binary) != 0) {
		fprintf(stderr, "%s: path %s, name %s\n", binary, f.path, f.name);
		return false;
	}
	return true;
}

static void put_symlinked_tree(void)
{
	put_elf("/opt/real/libreal.so.1");
	put_link("/opt/app/lib/alias.so", "/opt/real/libreal.so.1");
	put_link("/opt/linkdir", "/opt/real");
	put_link("/opt/up", "../../../../../../opt/real"); /* ".." stops at the root */
	put_link("/opt/loop", "/opt/loop");
}

/* The symlinks of put_symlinked_tree() all resolve inside the root. */
static bool symlinks_stay_inside(const struct target_view *v)
{
	char err[512];
	struct resolved_file f;

	return resolves_to(v, "/opt/app/lib/alias.so", "/opt/real/libreal.so.1") &&
	       resolves_to(v, "/opt/linkdir/libreal.so.1", "/opt/real/libreal.so.1") &&
	       resolves_to(v, "/opt/up/libreal.so.1", "/opt/real/libreal.so.1") &&
	       resolve_binary(v, "/opt/loop/x", &f, err, sizeof(err)) == -1 &&
	       strstr(err, "binary /opt/loop/x: Too many levels of symbolic links") != NULL;
}

static void absolute_symlinks_stay_inside_the_root(void **state)
{
	struct resolved_file f;
	struct target_view v;
	char want[PATH_MAX + 64];

	(void)state;
	put_symlinked_tree();
	view(&v);
	assert_true(symlinks_stay_inside(&v));
	/* by soname, in a default directory that is a symlink in the root */
	put_elf("/usr/lib/libinroot.so.7");
	put_link("/lib", "/usr/lib");
	assert_int_equal(resolve_needed(&v, "libinroot.so.7", &f), 0);
	assert_string_equal(f.name, "/lib/libinroot.so.7");
	snprintf(want, sizeof(want), "%s/usr/lib/libinroot.so.7", root);
	assert_string_equal(f.path, want);
}

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

/* Makes openat2 fail with ENOSYS, as on a kernel before 5.6. False when
 * no seccomp filter can be installed (qemu-user refuses them). */
static bool refuse_openat2(void)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(code) / sizeof(code[0]), .filter = code };

	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
	       prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0 &&
	       syscall(SYS_openat2, AT_FDCWD, "/", NULL, 0) == -1 && errno == ENOSYS;
}

/* The same symlinks without openat2, in a child (a seccomp filter is for
 * good): the resolver's own walk keeps them inside the root. */
static void absolute_symlinks_stay_inside_without_openat2(void **state)
{
	struct target_view v;
	int status;
	pid_t pid;

	(void)state;
	put_symlinked_tree();
	view(&v);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(!refuse_openat2() ? 77 : symlinks_stay_inside(&v) ? 0 : 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77) {
		skip(); /* no seccomp here */
		return;
	}
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void on_alarm(int sig)
{
	(void)sig;
	fail_msg("a FIFO blocked the resolver");
}

/* CONTENT of FD (closed), or "" when FD is an error. */
static const char *read_all(int fd, char *buf, size_t len)
{
	ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : -1;

	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

/* A file a process names itself (a Python frame's source file) is read
 * inside that process's root: an absolute symlink and ".." lead to the
 * root's files, never to pmetrics' own, and a relative name starts at its
 * working directory. Needs a chrooted child (root). */
static void a_targets_own_file_is_read_inside_its_root(void **state)
{
	char buf[64], ready = 0;
	int sync[2], status;
	pid_t pid;

	(void)state;
	put("/src/mod.py", "inside\n", 7);
	put_link("/src/link.py", "/src/mod.py");
	put_link("/src/climb.py", "../../../../../../src/mod.py");
	put_link("/src/ours.py", "/etc/passwd"); /* only pmetrics' root has it */
	assert_int_equal(pipe(sync), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* gone with the test, even one that fails half-way */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		ready = chroot(root) == 0 && chdir("/src") == 0 ? 'y' : 'n';
		if (write(sync[1], &ready, 1) != 1 || ready != 'y')
			_exit(1);
		pause();
		_exit(0);
	}
	close(sync[1]);
	if (read(sync[0], &ready, 1) != 1 || ready != 'y') {
		close(sync[0]);
		waitpid(pid, &status, 0);
		skip(); /* not root: no chroot */
		return;
	}
	close(sync[0]);
	assert_string_equal(read_all(target_open_file(pid, "/src/mod.py"), buf, sizeof(buf)), "inside\n");
	assert_string_equal(read_all(target_open_file(pid, "/src/link.py"), buf, sizeof(buf)), "inside\n");
	assert_string_equal(read_all(target_open_file(pid, "/src/climb.py"), buf, sizeof(buf)), "inside\n");
	assert_string_equal(read_all(target_open_file(pid, "mod.py"), buf, sizeof(buf)), "inside\n");
	assert_int_equal(target_open_file(pid, "/src/ours.py"), -ENOENT);
	assert_int_equal(target_open_file(pid, "/src"), -EINVAL);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
}

/* A FIFO where the cache or a library should be is passed over without
 * waiting for a writer. */
static void fifos_never_block(void **state)
{
	char path[PATH_MAX + 64], err[512];
	struct resolved_file f;
	struct target_view v;

	(void)state;
	make_parents("/etc/ld.so.cache");
	snprintf(path, sizeof(path), "%s/etc/ld.so.cache", root);
	assert_int_equal(mkfifo(path, 0644), 0);
	make_parents("/usr/lib/libfifo.so.1");
	snprintf(path, sizeof(path), "%s/usr/lib/libfifo.so.1", root);
	assert_int_equal(mkfifo(path, 0644), 0);
	put_elf("/usr/lib/libafter.so.1");
	view(&v);
	signal(SIGALRM, on_alarm);
	alarm(10);
	assert_int_equal(resolve_needed(&v, "libafter.so.1", &f), 0);
	assert_int_equal(resolve_needed(&v, "libfifo.so.1", &f), -ENOENT);
	assert_int_equal(resolve_binary(&v, "/usr/lib/libfifo.so.1", &f, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "binary /usr/lib/libfifo.so.1 is not a regular file"));
	alarm(0);
}

static bool take_first(const char *path, void *arg)
{
	snprintf(arg, PATH_MAX, "%s", path);
	return true;
}

static bool take_none(const char *path, void *arg)
{
	(void)path;
	(*(int *)arg)++;
	return false;
}

static void cache_reader_on_this_machine(void **state)
{
	char path[PATH_MAX] = "";
	struct stat st;
	void *map;
	int fd = open("/etc/ld.so.cache", O_RDONLY);

	(void)state;
	if (fd < 0) {
		skip(); /* a system without a cache: nothing to read */
		return;
	}
	assert_int_equal(fstat(fd, &st), 0);
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	assert_true(map != MAP_FAILED);
	assert_int_equal(ld_cache_lookup(map, (size_t)st.st_size, "libc.so.6", take_first, path), 0);
	assert_int_equal(access(path, R_OK), 0);
	assert_non_null(strstr(path, "libc.so.6"));
	munmap(map, (size_t)st.st_size);
	close(fd);
}

/* Every prefix of a valid image, and images whose offsets point outside
 * it, are refused or read without a byte past the end (ASan checks). */
static void cache_reader_never_reads_past_the_image(void **state)
{
	static const char *const pairs[] = { "liba.so.1", "/lib/liba.so.1", "libb.so.2", "/lib/libb.so.2" };
	static char cache[4096];
	size_t len = make_cache(cache, sizeof(cache), pairs, 2);
	int calls;

	(void)state;
	for (size_t cut = 0; cut < len; cut++) {
		char *copy = malloc(cut ? cut : 1);

		memcpy(copy, cache, cut);
		calls = 0;
		assert_true(ld_cache_lookup(copy, cut, "libb.so.2", take_none, &calls) < 0);
		free(copy);
	}
	calls = 0;
	assert_int_equal(ld_cache_lookup(cache, len, "libb.so.2", take_none, &calls), -ENOENT);
	assert_int_equal(calls, 1);
	memcpy(cache + 48 + 8, &(uint32_t){ 0xfffffff0u }, 4); /* value out of range */
	calls = 0;
	assert_int_equal(ld_cache_lookup(cache, len, "liba.so.1", take_none, &calls), -ENOENT);
	assert_int_equal(calls, 0);
	memcpy(cache + 20, &(uint32_t){ 0x7fffffffu }, 4); /* more entries than bytes */
	assert_int_equal(ld_cache_lookup(cache, len, "liba.so.1", take_none, &calls), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(found_in_default_dirs, setup, teardown),
		cmocka_unit_test_setup_teardown(the_cache_comes_before_the_default_dirs, setup, teardown),
		cmocka_unit_test_setup_teardown(ld_so_conf_is_not_read_at_run_time, setup, teardown),
		cmocka_unit_test_setup_teardown(another_machine_is_never_taken, setup, teardown),
		cmocka_unit_test_setup_teardown(a_development_name_finds_the_versioned_file, setup, teardown),
		cmocka_unit_test_setup_teardown(a_probe_binary_in_the_targets_view, setup, teardown),
		cmocka_unit_test_setup_teardown(runpath_is_for_the_executables_own_libraries, setup,
						teardown),
		cmocka_unit_test_setup_teardown(rpath_is_for_every_library, setup, teardown),
		cmocka_unit_test_setup_teardown(origin_anywhere_in_an_entry, setup, teardown),
		cmocka_unit_test_setup_teardown(library_path_splits_at_colons_and_semicolons, setup,
						teardown),
		cmocka_unit_test_setup_teardown(empty_and_relative_entries_of_a_command_to_start, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_secure_command_ignores_library_path, setup, teardown),
		cmocka_unit_test_setup_teardown(a_secure_process_ignores_library_path, setup, teardown),
		cmocka_unit_test_setup_teardown(absolute_symlinks_stay_inside_the_root, setup, teardown),
		cmocka_unit_test_setup_teardown(absolute_symlinks_stay_inside_without_openat2, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_targets_own_file_is_read_inside_its_root, setup,
						teardown),
		cmocka_unit_test_setup_teardown(fifos_never_block, setup, teardown),
		cmocka_unit_test(cache_reader_on_this_machine),
		cmocka_unit_test(cache_reader_never_reads_past_the_image),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
