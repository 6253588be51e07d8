// SPDX-License-Identifier: MIT
/* Which --btf files the loader accepts: a kernel's BTF of this
 * architecture and layout, and nothing else, each refusal one line
 * naming the file and what is wrong. The files are made here with
 * libbpf's BTF writer, shaped like a kernel's where it matters. And the
 * release an ELF vmlinux's banner names, wherever it is in the file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <bpf/btf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpf_loader.h"

static char path[64];
static char err[1024];

/* A BTF shaped like an ARCH kernel's ("x86_64", "aarch64", or NULL for
 * no kernel at all): struct task_struct of TASK_SIZE bytes, the register
 * structs of its architecture and a do_exit function. */
static struct btf *kernel_like(const char *arch, __u32 task_size)
{
	struct btf *btf = btf__new_empty();
	int i = btf__add_int(btf, "int", 4, BTF_INT_SIGNED);

	btf__add_struct(btf, "task_struct", task_size);
	btf__add_field(btf, "pid", i, 0, 0);
	if (!arch)
		return btf;
	btf__add_func(btf, "do_exit", BTF_FUNC_GLOBAL, btf__add_func_proto(btf, i));
	if (strcmp(arch, "aarch64") == 0) {
		btf__add_struct(btf, "user_pt_regs", 272);
		btf__add_field(btf, "sp", i, 0, 0);
	} else {
		btf__add_struct(btf, "pt_regs", 168);
		btf__add_field(btf, "di", i, 0, 0);
		btf__add_struct(btf, "fregs_state", 112);
		btf__add_field(btf, "cwd", i, 0, 0);
	}
	return btf;
}

/* Writes BTF raw to the test file. */
static void write_btf(const struct btf *btf)
{
	__u32 size;
	const void *raw = btf__raw_data(btf, &size);
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(raw, 1, size, f), size);
	fclose(f);
}

static int setup(void **state)
{
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "/tmp/pmetrics-btf.XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return unlink(path);
}

static void a_kernels_btf_of_this_machine_is_taken(void **state)
{
	struct btf *file = kernel_like("x86_64", 9000), *own = kernel_like("x86_64", 9000);

	(void)state;
	write_btf(file);
	assert_int_equal(btf_file_check(path, "6.1.0", "x86_64", NULL, err, sizeof(err)), 0);
	assert_int_equal(btf_file_check(path, "6.1.0", "x86_64", own, err, sizeof(err)), 0);
	btf__free(file);
	btf__free(own);
}

static void another_architecture_is_named(void **state)
{
	struct btf *file = kernel_like("aarch64", 9000);

	(void)state;
	write_btf(file);
	assert_int_equal(btf_file_check(path, "6.1.0", "x86_64", NULL, err, sizeof(err)), -1);
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, "BTF of an aarch64 kernel, and this one is x86_64"));
	assert_int_equal(btf_file_check(path, "6.1.0", "aarch64", NULL, err, sizeof(err)), 0);
	btf__free(file);
}

static void another_kernels_layout_is_named(void **state)
{
	struct btf *file = kernel_like("x86_64", 9000), *own = kernel_like("x86_64", 9216);

	(void)state;
	write_btf(file);
	assert_int_equal(btf_file_check(path, "6.1.0", "x86_64", own, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "from another kernel (struct task_struct has 9000 bytes in it, "
				    "9216 in this kernel's own BTF)"));
	btf__free(file);
	btf__free(own);
}

static void not_a_kernels_btf(void **state)
{
	struct btf *program = kernel_like(NULL, 9000);

	(void)state;
	write_btf(program);
	assert_int_equal(btf_file_check(path, "6.1.0", "x86_64", NULL, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not a kernel's BTF"));
	btf__free(program);
}

static void not_btf_at_all(void **state)
{
	static const char junk[] = "this is not BTF\n";
	FILE *f = fopen(path, "wb");

	(void)state;
	fwrite(junk, 1, sizeof(junk), f);
	fclose(f);
	assert_int_equal(btf_file_check(path, "6.1.0", "x86_64", NULL, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "it is not BTF"));
	assert_int_equal(btf_file_check("/no/such.btf", "6.1.0", "x86_64", NULL, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "cannot read --btf /no/such.btf: No such file"));
	assert_null(strchr(err, '\n'));
}

/* Writes an ELF-looking file of SIZE bytes (zeros) with TEXT at POS. */
static void write_with(size_t size, size_t pos, const char *text)
{
	char *file = calloc(1, size);
	FILE *f = fopen(path, "wb");

	assert_non_null(file);
	assert_non_null(f);
	memcpy(file, "\177ELF", 4);
	memcpy(file + pos, text, strlen(text));
	assert_int_equal(fwrite(file, 1, size, f), size);
	fclose(f);
	free(file);
}

/* The banner's release wherever it is, also cut by the 64 KiB read
 * window's end (the release was taken as cut short there, and read past
 * the valid bytes). */
static void a_banner_across_a_read_window_is_read_whole(void **state)
{
	static const char release[] = "6.1.0-13-arm64-averyveryverylongrelease0123456789";
	char banner[128], got[64];

	(void)state;
	snprintf(banner, sizeof(banner), "Linux version %s (gcc-12) #1 SMP", release);
	for (size_t edge = 65536; edge <= 2 * 65536; edge += 65536)
		for (size_t pos = edge - 120; pos < edge + 40; pos++) {
			write_with(3 * 65536, pos, banner);
			vmlinux_banner_release(path, got, sizeof(got));
			if (strcmp(got, release) != 0)
				fail_msg("banner at %zu: read '%s'", pos, got);
		}
	/* at the file's very end, with nothing after it: not known whole */
	write_with(70000, 70000 - strlen("Linux version 6.1.0"), "Linux version 6.1.0");
	vmlinux_banner_release(path, got, sizeof(got));
	assert_string_equal(got, "");
}

static void what_is_no_release_is_passed_over(void **state)
{
	char got[64], text[256];

	(void)state;
	/* longer than a release can be, then the real banner */
	snprintf(text, sizeof(text), "Linux version %070d Linux version 5.15.77-toradex (oe)", 0);
	write_with(4096, 100, text);
	vmlinux_banner_release(path, got, sizeof(got));
	assert_string_equal(got, "5.15.77-toradex");
	/* raw BTF, not ELF: no banner to read */
	write_with(4096, 100, "Linux version 6.1.0 (gcc)");
	memcpy(text, "BTF!", 4);
	{
		FILE *f = fopen(path, "r+b");

		assert_non_null(f);
		fwrite(text, 1, 4, f);
		fclose(f);
	}
	vmlinux_banner_release(path, got, sizeof(got));
	assert_string_equal(got, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(a_kernels_btf_of_this_machine_is_taken, setup, teardown),
		cmocka_unit_test_setup_teardown(another_architecture_is_named, setup, teardown),
		cmocka_unit_test_setup_teardown(another_kernels_layout_is_named, setup, teardown),
		cmocka_unit_test_setup_teardown(not_a_kernels_btf, setup, teardown),
		cmocka_unit_test_setup_teardown(not_btf_at_all, setup, teardown),
		cmocka_unit_test_setup_teardown(a_banner_across_a_read_window_is_read_whole, setup,
						teardown),
		cmocka_unit_test_setup_teardown(what_is_no_release_is_passed_over, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
