// SPDX-License-Identifier: MIT
/* Purpose-built target for the span tests: every traced function does a
 * known thing a known number of times.
 *
 *   spanprog [-w GOFILE] sleep MS COUNT     pm_sleep_ms(MS) COUNT times
 *   spanprog [-w GOFILE] recurse DEPTH      pm_recurse(DEPTH) -> DEPTH calls
 *   spanprog [-w GOFILE] threads N CALLS    N threads, CALLS pm_worker() each
 *   spanprog [-w GOFILE] fork CALLS         parent and child, CALLS each
 *   spanprog [-w GOFILE] churn N SECONDS    N short threads, then asleep
 *   spanprog [-w GOFILE] first              pm_first() first thing in main
 *   spanprog [-w GOFILE] loop MS            pm_sleep_ms(MS) until killed
 *   spanprog [-w GOFILE] exitmid MS         exit() while pm_block() runs
 *   spanprog [-w GOFILE] calls N            N calls of the empty pm_empty()
 *   spanprog [-w GOFILE] timed N            the same, printing ns per call
 *   spanprog [-w GOFILE] rate N SECONDS     N pm_empty() calls a second
 *
 * With -w the work starts only once GOFILE exists, so a test can attach
 * first and then let it go. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

NOINLINE void pm_first(void) { asm volatile("" ::: "memory"); }

NOINLINE void pm_empty(void) { asm volatile("" ::: "memory"); }

NOINLINE void pm_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0)
		;
}

NOINLINE int pm_recurse(int depth)
{
	if (depth <= 1)
		return 1;
	return 1 + pm_recurse(depth - 1);
}

NOINLINE void pm_worker(void) { pm_sleep_ms(1); }

NOINLINE void pm_child_work(void) { pm_sleep_ms(1); }

NOINLINE void pm_block(int ms) { pm_sleep_ms(ms); }

static int calls_per_thread;

static void *thread_main(void *arg)
{
	(void)arg;
	for (int i = 0; i < calls_per_thread; i++)
		pm_worker();
	return NULL;
}

static void run_threads(int n, int calls)
{
	pthread_t tids[64];

	calls_per_thread = calls;
	for (int i = 0; i < n && i < 64; i++)
		pthread_create(&tids[i], NULL, thread_main, NULL);
	for (int i = 0; i < n && i < 64; i++)
		pthread_join(tids[i], NULL);
}

static void *thread_noop(void *arg)
{
	return arg;
}

/* N short threads one after another, none calling a probed function,
 * then SECONDS asleep: their task_structs are freed for reuse. */
static void run_churn(int n, int seconds)
{
	for (int i = 0; i < n; i++) {
		pthread_t t;

		pthread_create(&t, NULL, thread_noop, NULL);
		pthread_join(t, NULL);
	}
	sleep((unsigned)seconds);
}

static void run_fork(int calls)
{
	pid_t child = fork();

	for (int i = 0; i < calls; i++)
		child ? pm_worker() : pm_child_work();
	if (child == 0)
		_exit(0);
	waitpid(child, NULL, 0);
}

static void *exit_soon(void *arg)
{
	pm_sleep_ms(*(int *)arg);
	exit(0);
}

static void wait_for(const char *file)
{
	while (access(file, F_OK) != 0)
		usleep(1000);
}

int main(int argc, char **argv)
{
	pm_first();
	int a = 1;
	if (argc > 2 && strcmp(argv[1], "-w") == 0) {
		wait_for(argv[2]);
		a = 3;
	}
	if (a >= argc) {
		fprintf(stderr, "usage: spanprog [-w GOFILE] MODE ARGS (see source)\n");
		return 2;
	}
	const char *mode = argv[a];
	int x = a + 1 < argc ? atoi(argv[a + 1]) : 0;
	int y = a + 2 < argc ? atoi(argv[a + 2]) : 0;

	if (strcmp(mode, "sleep") == 0)
		for (int i = 0; i < y; i++)
			pm_sleep_ms(x);
	else if (strcmp(mode, "recurse") == 0)
		printf("%d\n", pm_recurse(x));
	else if (strcmp(mode, "threads") == 0)
		run_threads(x, y);
	else if (strcmp(mode, "fork") == 0)
		run_fork(x);
	else if (strcmp(mode, "churn") == 0)
		run_churn(x, y);
	else if (strcmp(mode, "loop") == 0)
		for (;;)
			pm_sleep_ms(x);
	else if (strcmp(mode, "exitmid") == 0) {
		pthread_t t;
		pthread_create(&t, NULL, exit_soon, &x);
		pm_block(60000);
	} else if (strcmp(mode, "calls") == 0)
		for (int i = 0; i < x; i++)
			pm_empty();
	else if (strcmp(mode, "timed") == 0) {
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (int i = 0; i < x; i++)
			pm_empty();
		clock_gettime(CLOCK_MONOTONIC, &t1);
		printf("%.1f\n", ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / (x ? x : 1));
	} else if (strcmp(mode, "rate") == 0) {
		for (int ms = 0; ms < y * 1000; ms++) {
			for (int i = 0; i < x / 1000; i++)
				pm_empty();
			pm_sleep_ms(1);
		}
	} else if (strcmp(mode, "first") != 0)
		return 2;
	return 0;
}
