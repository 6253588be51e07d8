// SPDX-License-Identifier: MIT
/* Which --btf files the loader accepts: a kernel's BTF of this
 * architecture and layout, and nothing else, each refusal one line
 * naming the file and what is wrong. The files are made here with
 * libbpf's BTF writer, shaped like a kernel's where it matters. */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(a_kernels_btf_of_this_machine_is_taken, setup, teardown),
		cmocka_unit_test_setup_teardown(another_architecture_is_named, setup, teardown),
		cmocka_unit_test_setup_teardown(another_kernels_layout_is_named, setup, teardown),
		cmocka_unit_test_setup_teardown(not_a_kernels_btf, setup, teardown),
		cmocka_unit_test_setup_teardown(not_btf_at_all, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
