// SPDX-License-Identifier: MIT
/* Process churn: forks children that exit at once, some after an exec of
 * /bin/true, for SECONDS seconds, then exits with the number of forks
 * modulo 256 kept out of the way (prints it).   res_churn SECONDS */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	time_t end = time(NULL) + (argc > 1 ? atoi(argv[1]) : 3);
	unsigned long forks = 0;

	while (time(NULL) < end) {
		pid_t pid = fork();

		if (pid == 0) {
			if (forks % 4 == 0)
				execl("/bin/true", "true", (char *)NULL);
			_exit(0);
		}
		if (pid > 0) {
			forks++;
			waitpid(pid, NULL, 0);
		}
	}
	printf("forks=%lu\n", forks);
	return 0;
}
