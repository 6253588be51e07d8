// SPDX-License-Identifier: MIT
/* Reading another process's memory (user/python_stack.c), as the Python
 * stack and watch-hook readers do: by process_vm_readv(), and by
 * /proc/PID/mem where the kernel has no process_vm_readv() (built
 * without CONFIG_CROSS_MEMORY_ATTACH; PMETRICS_TEST_NO_CROSS_MEMORY_ATTACH=1
 * acts so). Each way: the bytes read are the bytes there, an unmapped
 * address and a process that is gone fail. The second way runs in a
 * child, since the first read fixes the way for the process; where the
 * system has no process_vm_readv() (ENOSYS), the first way must turn
 * into the second by itself. */
#include <setjmp.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "python_stack.h"

static const char pattern[] = "the bytes a reader must find, 0123456789";

/* 0 when every check holds, else the number of the first that failed. */
static int check_reads(void)
{
	char got[sizeof(pattern)] = "";
	pid_t gone = fork();

	if (gone == 0)
		_exit(0);
	if (gone < 0 || waitpid(gone, NULL, 0) != gone)
		return 1;
	if (python_read_memory(getpid(), got, sizeof(got), (uintptr_t)pattern) != 0)
		return 2;
	if (memcmp(got, pattern, sizeof(got)) != 0)
		return 3;
	/* a second read of the same process (by /proc/PID/mem: its file
	 * kept open), and one of nothing */
	memset(got, 0, sizeof(got));
	if (python_read_memory(getpid(), got, 8, (uintptr_t)pattern + 4) != 0 ||
	    memcmp(got, pattern + 4, 8) != 0 || python_read_memory(getpid(), got, 0, 1) != 0)
		return 6;
	/* the first page is never mapped */
	if (python_read_memory(getpid(), got, sizeof(got), 0x100) != -1)
		return 4;
	if (python_read_memory(gone, got, sizeof(got), (uintptr_t)pattern) != -1)
		return 5;
	/* and back to this process after another's */
	if (python_read_memory(getpid(), got, sizeof(got), (uintptr_t)pattern) != 0 ||
	    memcmp(got, pattern, sizeof(got)) != 0)
		return 7;
	python_read_memory_release();
	return 0;
}

/* Whether this system has process_vm_readv() (qemu-user, which runs the
 * arm64 build of these tests, has not: ENOSYS, as such a kernel). */
static bool has_process_vm_readv(void)
{
	char from = 1, to = 0;
	struct iovec local = { &to, 1 }, remote = { &from, 1 };

	return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == 1 || errno != ENOSYS;
}

/* process_vm_readv() where there is one; where not, /proc/PID/mem
 * without being asked. */
static void reads_by_process_vm_readv(void **state)
{
	(void)state;
	unsetenv("PMETRICS_TEST_NO_CROSS_MEMORY_ATTACH");
	assert_int_equal(check_reads(), 0);
	assert_int_equal(python_read_memory_direct(), has_process_vm_readv());
}

static void reads_by_proc_pid_mem_without_it(void **state)
{
	int status = -1;
	pid_t child = fork();

	(void)state;
	assert_true(child >= 0);
	if (child == 0) {
		int failed;

		setenv("PMETRICS_TEST_NO_CROSS_MEMORY_ATTACH", "1", 1);
		failed = check_reads();
		_exit(failed ? failed : python_read_memory_direct() ? 10 : 0);
	}
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reads_by_proc_pid_mem_without_it),
		cmocka_unit_test(reads_by_process_vm_readv),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
