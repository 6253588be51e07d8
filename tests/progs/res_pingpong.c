// SPDX-License-Identifier: MIT
/* Context-switch-heavy workload for the overhead bench: a parent and a
 * child bounce one byte over two pipes ROUNDS times (two blocking
 * switches per round), then the parent prints the wall time in ns.
 *   res_pingpong ROUNDS */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void bounce(int in, int out, long rounds, int first)
{
	char c = 'x';

	for (long i = 0; i < rounds; i++) {
		if (first && write(out, &c, 1) != 1)
			exit(1);
		if (read(in, &c, 1) != 1)
			exit(1);
		if (!first && write(out, &c, 1) != 1)
			exit(1);
	}
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? strtol(argv[1], NULL, 10) : 100000;
	int to_child[2], to_parent[2];
	long long start;
	pid_t pid;

	if (pipe(to_child) || pipe(to_parent))
		return 1;
	start = now_ns();
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		bounce(to_child[0], to_parent[1], rounds, 0);
		_exit(0);
	}
	bounce(to_parent[0], to_child[1], rounds, 1);
	waitpid(pid, NULL, 0);
	printf("%lld\n", now_ns() - start);
	return 0;
}
