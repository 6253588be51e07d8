// SPDX-License-Identifier: MIT
/* Calls spanlib_compute() from libspanlib.so: libprog [-w GOFILE] MS COUNT */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int spanlib_compute(int ms);

int main(int argc, char **argv)
{
	int a = 1, total = 0;

	if (argc > 2 && strcmp(argv[1], "-w") == 0) {
		while (access(argv[2], F_OK) != 0)
			usleep(1000);
		a = 3;
	}
	if (a + 1 >= argc)
		return 2;
	for (int i = 0; i < atoi(argv[a + 1]); i++)
		total += spanlib_compute(atoi(argv[a]));
	return total < 0;
}
