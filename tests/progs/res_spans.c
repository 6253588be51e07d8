// SPDX-License-Identifier: MIT
/* Calls of known resource behaviour for the per-span resource context:
 *   pm_res_sleep(200)      sleeps 200 ms: blocked, next to no CPU
 *   pm_res_spin(200)       burns 200 ms of its own CPU time in user space
 *   pm_res_fault(64)       faults in 64 MiB and keeps it: RSS +64 MiB
 *   pm_res_fault_free(64)  faults in 64 MiB and unmaps it: RSS back, peak +64 MiB
 * each once, in this order, then exits.   res_spans */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile unsigned long sink;

static double thread_cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

NOINLINE void pm_res_sleep(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0)
		;
}

NOINLINE void pm_res_spin(int ms)
{
	double start = thread_cpu_ms();

	while (thread_cpu_ms() - start < ms)
		for (int i = 0; i < 100000; i++)
			sink += (unsigned long)i * 2654435761u;
}

/* One write per 4 KiB page of MIB fresh mebibytes, no huge pages: one
 * minor fault each. */
static char *touch(size_t mib)
{
	size_t len = mib << 20, page = (size_t)sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		exit(1);
	madvise(p, len, MADV_NOHUGEPAGE);
	for (size_t off = 0; off < len; off += page)
		p[off] = 1;
	return p;
}

static char *kept;

NOINLINE void pm_res_fault(int mib)
{
	kept = touch((size_t)mib);
}

NOINLINE void pm_res_fault_free(int mib)
{
	munmap(touch((size_t)mib), (size_t)mib << 20);
}

int main(void)
{
	pm_res_sleep(200);
	pm_res_spin(200);
	pm_res_fault(64);
	pm_res_fault_free(64);
	printf("done %p\n", (void *)kept);
	return 0;
}
