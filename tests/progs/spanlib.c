// SPDX-License-Identifier: MIT
/* A shared library with a traced function (soname libspanlib.so.1). */
#include <time.h>

__attribute__((noinline)) int spanlib_compute(int ms)
{
	struct timespec ts = { 0, (long)ms * 1000000L };

	nanosleep(&ts, NULL);
	return ms;
}
