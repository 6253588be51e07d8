// SPDX-License-Identifier: MIT
/* A native program that loads a libpython with dlopen() part way through
 * its life and runs Python code in it: a sampler that took it for a
 * native process must still find the interpreter.
 *
 * Usage: py_late LIBPYTHON NATIVE_SECONDS PYTHON_SECONDS
 * (PYTHONHOME names the interpreter's prefix when it is not found from
 * this program's path). The Python code spins in late_work(). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void __attribute__((noinline)) native_work(double seconds)
{
	volatile unsigned long sum = 0;

	for (double end = now() + seconds; now() < end;)
		for (int i = 0; i < 100000; i++)
			sum += (unsigned long)i;
}

int main(int argc, char **argv)
{
	void (*init)(void);
	int (*run)(const char *);
	char code[256];
	void *lib;

	if (argc != 4) {
		fprintf(stderr, "usage: py_late LIBPYTHON NATIVE_SECONDS PYTHON_SECONDS\n");
		return 2;
	}
	native_work(atof(argv[2]));
	lib = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
	if (!lib) {
		fprintf(stderr, "py_late: %s\n", dlerror());
		return 1;
	}
	*(void **)&init = dlsym(lib, "Py_Initialize");
	*(void **)&run = dlsym(lib, "PyRun_SimpleString");
	if (!init || !run) {
		fprintf(stderr, "py_late: %s has no Py_Initialize or PyRun_SimpleString\n", argv[1]);
		return 1;
	}
	init();
	snprintf(code, sizeof(code),
		 "import time\n"
		 "def late_work(end):\n"
		 "    n = 0\n"
		 "    while time.monotonic() < end:\n"
		 "        n += 1\n"
		 "late_work(time.monotonic() + %g)\n", atof(argv[3]));
	return run(code) == 0 ? 0 : 1;
}
