// SPDX-License-Identifier: MIT
/* Burns a known CPU time: USER_MS in user space, then SYS_MS in system
 * calls (reads of /dev/zero), then writes "done" to stdout and sleeps
 * until killed, so its counters stay still while it is sampled.
 *   res_burn USER_MS SYS_MS */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double cpu_ms(int who_sys)
{
	struct rusage ru;
	struct timeval *tv = who_sys ? &ru.ru_stime : &ru.ru_utime;

	getrusage(RUSAGE_SELF, &ru);
	return tv->tv_sec * 1e3 + tv->tv_usec / 1e3;
}

static double process_cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static volatile unsigned long sink;

int main(int argc, char **argv)
{
	double user_ms = argc > 1 ? atof(argv[1]) : 500, sys_ms = argc > 2 ? atof(argv[2]) : 500;
	static char buf[1 << 16];
	double start = process_cpu_ms();
	int fd = open("/dev/zero", O_RDONLY);

	while (process_cpu_ms() - start < user_ms)
		for (int i = 0; i < 100000; i++)
			sink += (unsigned long)i * 2654435761u;
	start = process_cpu_ms();
	while (process_cpu_ms() - start < sys_ms)
		if (read(fd, buf, sizeof(buf)) < 0)
			return 1;
	printf("done user_ms=%.0f sys_ms=%.0f\n", cpu_ms(0), cpu_ms(1));
	fflush(stdout);
	for (;;)
		pause();
}
