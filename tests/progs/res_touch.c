// SPDX-License-Identifier: MIT
/* Touches MIB mebibytes of anonymous memory (one write per page), writes
 * "done" to stdout and sleeps until killed.   res_touch MIB */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64, len = mib << 20;
	long page = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return 1;
	for (size_t off = 0; off < len; off += (size_t)page)
		p[off] = 1;
	printf("done\n");
	fflush(stdout);
	for (;;)
		pause();
}
