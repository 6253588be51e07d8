// SPDX-License-Identifier: MIT
/* Page-fault-heavy workload for the overhead bench: ROUNDS times, maps
 * MIB mebibytes, writes one byte per page (one minor fault and one RSS
 * counter update each), unmaps; then prints the wall time in ns.
 *   res_faults ROUNDS MIB */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? strtol(argv[1], NULL, 10) : 20;
	size_t len = (size_t)(argc > 2 ? strtoul(argv[2], NULL, 10) : 64) << 20;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	long long start = now_ns();

	for (long r = 0; r < rounds; r++) {
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			return 1;
		for (size_t off = 0; off < len; off += page)
			p[off] = 1;
		munmap(p, len);
	}
	printf("%lld\n", now_ns() - start);
	return 0;
}
