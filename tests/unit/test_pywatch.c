// SPDX-License-Identifier: MIT
/* Where the watchpoint hook watches a coroutine's first step
 * (user/pywatch.c): the instruction after the code's prologue, in code
 * units as CPython 3.10-3.13 lay them out (opcode, argument); the
 * check of a function object a first call hands over; and the words for
 * a watchpoint the kernel refuses. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "pywatch.h"

/* 3.11 and 3.12: RETURN_GENERATOR 75, POP_TOP 1, MAKE_CELL 135,
 * COPY_FREE_VARS 149, RESUME 151; 3.13: RETURN_GENERATOR 35, POP_TOP 32,
 * MAKE_CELL 94, COPY_FREE_VARS 62, RESUME 149 (as each version's
 * dis.opmap has them). */
static void a_plain_coroutine_steps_first_at_its_resume(void **state)
{
	const uint8_t v311[] = { 75, 0, 1, 0, 151, 0, 100, 1 };
	const uint8_t v313[] = { 35, 0, 32, 0, 149, 0, 81, 1 };

	(void)state;
	assert_int_equal(pywatch_first_step(v311, 4, 11), 2);
	assert_int_equal(pywatch_first_step(v311, 4, 12), 2);
	assert_int_equal(pywatch_first_step(v313, 4, 13), 2);
}

/* A coroutine that closes over variables, or holds cells, sets them up
 * before it becomes a coroutine. */
static void cells_and_free_variables_come_first(void **state)
{
	const uint8_t v312[] = { 135, 0, 149, 1, 75, 0, 1, 0, 151, 0 };
	const uint8_t v313[] = { 94, 0, 62, 1, 35, 0, 32, 0, 207, 0 }; /* RESUME_CHECK */

	(void)state;
	assert_int_equal(pywatch_first_step(v312, 5, 12), 4);
	assert_int_equal(pywatch_first_step(v313, 5, 13), 4);
}

/* No RETURN_GENERATOR: a plain function's code, not a coroutine's. */
static void a_plain_function_has_no_first_step(void **state)
{
	const uint8_t plain[] = { 151, 0, 100, 1, 83, 0 };
	const uint8_t prologue_only[] = { 75, 0, 1, 0 };

	(void)state;
	assert_int_equal(pywatch_first_step(plain, 3, 12), -1);
	assert_int_equal(pywatch_first_step(prologue_only, 2, 12), -1);
}

/* 3.10 (GEN_START 129): a coroutine's code starts with GEN_START, which
 * its first step alone runs; a plain function's does not. */
static void a_310_coroutine_steps_first_at_its_gen_start(void **state)
{
	const uint8_t coroutine[] = { 129, 2, 100, 1, 83, 0 };
	const uint8_t plain[] = { 100, 1, 83, 0 };

	(void)state;
	assert_int_equal(pywatch_first_step(coroutine, 3, 10), 0);
	assert_int_equal(pywatch_first_step(plain, 2, 10), -1);
	assert_int_equal(pywatch_first_step(coroutine, 0, 10), -1);
}

static void other_versions_have_none(void **state)
{
	const uint8_t v311[] = { 75, 0, 1, 0, 151, 0 };

	(void)state;
	assert_int_equal(pywatch_first_step(v311, 3, 9), -1);
	assert_int_equal(pywatch_first_step(v311, 3, 14), -1);
}

/* The hook knows where a coroutine's first step shows, and its frame:
 * 3.10 to 3.13; any other version is refused naming the interpreter and
 * the other hook. */
static void only_versions_whose_first_step_is_known_are_watched(void **state)
{
	char err[256];

	(void)state;
	for (int minor = 10; minor <= 13; minor++)
		assert_int_equal(pywatch_version_check(3, minor, "python3", err, sizeof(err)), 0);
	assert_int_equal(pywatch_version_check(3, 9, "libpython3.9.so.1.0", err, sizeof(err)),
			 -ENOTSUP);
	assert_non_null(strstr(err, "libpython3.9.so.1.0 is 3.9"));
	assert_non_null(strstr(err, "use --python-hook coroutines"));
	assert_int_equal(pywatch_version_check(3, 14, "python3.14", err, sizeof(err)), -ENOTSUP);
	assert_int_equal(pywatch_version_check(2, 7, "python2.7", err, sizeof(err)), -ENOTSUP);
}

/* A function object as 3.12 and 3.13 lay one out, in this process's own
 * memory: its type at 8, its code at 48. */
static void a_function_object_is_checked_by_type_and_code(void **state)
{
	uint64_t function[16] = { 1 }, type = 0x1000, code = 0x2000;
	struct python_proc p = { .pid = getpid(), .major = 3, .minor = 12, .function_type = type };

	(void)state;
	function[1] = type;
	function[6] = code;
	assert_true(pywatch_function_runs(&p, (uint64_t)(uintptr_t)function, code));
	p.minor = 13;
	assert_true(pywatch_function_runs(&p, (uint64_t)(uintptr_t)function, code));
	assert_false(pywatch_function_runs(&p, (uint64_t)(uintptr_t)function, code + 8));
	function[1] = type + 8; /* another type: no function */
	assert_false(pywatch_function_runs(&p, (uint64_t)(uintptr_t)function, code));
	function[1] = type;
	assert_false(pywatch_function_runs(&p, 0, code));
	p.function_type = 0; /* PyFunction_Type not found in the interpreter */
	assert_false(pywatch_function_runs(&p, (uint64_t)(uintptr_t)function, code));
	p.function_type = type;
	p.minor = 7; /* a version without a layout */
	assert_false(pywatch_function_runs(&p, (uint64_t)(uintptr_t)function, code));
}

/* A refused watchpoint is blamed on what refused it, with its fix. */
static void a_refusal_names_its_cause(void **state)
{
	char why[256];

	(void)state;
	pywatch_refusal(EACCES, why, sizeof(why));
	assert_non_null(strstr(why, "not permitted (perf_event_open: Permission denied)"));
	assert_non_null(strstr(why, "CAP_PERFMON"));
	pywatch_refusal(EPERM, why, sizeof(why));
	assert_non_null(strstr(why, "not permitted"));
	pywatch_refusal(ENOSPC, why, sizeof(why));
	assert_non_null(strstr(why, "no debug register is free"));
	assert_non_null(strstr(why, "a debugger"));
	assert_null(strstr(why, "this kernel gives no"));
	pywatch_refusal(EINVAL, why, sizeof(why));
	assert_non_null(strstr(why, "an address or length this CPU cannot watch"));
	assert_null(strstr(why, "this kernel gives no"));
	pywatch_refusal(ENOENT, why, sizeof(why));
	assert_non_null(strstr(why, "this kernel gives no hardware watchpoint"));
	assert_non_null(strstr(why, "CONFIG_HAVE_HW_BREAKPOINT): use --python-hook coroutines"));
	pywatch_refusal(EACCES, why, 16);
	assert_int_equal(strlen(why), 15);
}

/* This kernel moves a thread past a BPF-handled watchpoint hit (x86
 * reports after the access; where BPF or watchpoints are not to be had,
 * as unprivileged or under qemu-user, the test cannot tell). */
static void a_watched_write_gets_past_its_bpf_hit(void **state)
{
	int rc = pywatch_steps_past_bpf_hits();

	(void)state;
	if (rc < 0) {
		print_message("skipped: no BPF program or watchpoint to be had here (%s)\n",
			      strerror(-rc));
		skip();
	}
	assert_int_equal(rc, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_plain_coroutine_steps_first_at_its_resume),
		cmocka_unit_test(cells_and_free_variables_come_first),
		cmocka_unit_test(a_plain_function_has_no_first_step),
		cmocka_unit_test(a_310_coroutine_steps_first_at_its_gen_start),
		cmocka_unit_test(other_versions_have_none),
		cmocka_unit_test(only_versions_whose_first_step_is_known_are_watched),
		cmocka_unit_test(a_function_object_is_checked_by_type_and_code),
		cmocka_unit_test(a_refusal_names_its_cause),
		cmocka_unit_test(a_watched_write_gets_past_its_bpf_hit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
