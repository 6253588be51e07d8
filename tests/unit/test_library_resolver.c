// SPDX-License-Identifier: MIT
/* The library resolver against a fake target root: ld.so's search order
 * (RUNPATH, ld.so.cache, ld.so.conf with includes, the default
 * directories), the machine check, the libfoo.so -> libfoo.so.N rule,
 * and the ld.so.cache reader on well-formed, real and broken images. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
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

static void ld_so_conf_and_its_includes(void **state)
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
	assert_int_equal(resolve_needed(&v, "libconf.so.3", &f), 0);
	assert_string_equal(f.name, "/opt/conf/lib/libconf.so.3");
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
		cmocka_unit_test_setup_teardown(ld_so_conf_and_its_includes, setup, teardown),
		cmocka_unit_test_setup_teardown(another_machine_is_never_taken, setup, teardown),
		cmocka_unit_test_setup_teardown(a_development_name_finds_the_versioned_file, setup, teardown),
		cmocka_unit_test_setup_teardown(a_probe_binary_in_the_targets_view, setup, teardown),
		cmocka_unit_test(cache_reader_on_this_machine),
		cmocka_unit_test(cache_reader_never_reads_past_the_image),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
