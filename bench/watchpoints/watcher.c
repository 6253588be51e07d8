// SPDX-License-Identifier: MIT
/* watcher PID ADDR[/LEN]...: counts the user-space reads and writes of
 * each ADDR (LEN bytes, default 8) by every thread of PID with one
 * hardware watchpoint per thread and address (perf_event_open,
 * PERF_TYPE_BREAKPOINT), inherited by threads made later. Prints
 * "WATCHING" once armed; at each SIGUSR1 prints "COUNTS n1 n2 ..." (the
 * accesses since the last print, per address) and starts again from 0;
 * exits at SIGTERM.
 * watcher --cpus ADDR[/LEN]...: the same, with one watchpoint per CPU and
 * address, of every task (pid -1): a CPU's debug registers are written
 * once, a thread's at each of its context switches.
 * watcher --self-test: whether watchpoints fire on this machine at all
 * (some virtual machines accept them and never fire): prints how many of
 * 1000 writes to a variable of its own were seen.
 * watcher --hit-cost: nanoseconds one watchpoint hit adds to a write (the
 * debug exception and perf's counting, no BPF): the floor under any
 * watchpoint-based hook's cost per trap on this machine. */
#include <dirent.h>
#include <errno.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_ADDRS 8
#define MAX_THREADS 256

static volatile sig_atomic_t want_counts, want_exit;
static volatile long self_test_word;

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		want_counts = 1;
	else
		want_exit = 1;
}

/* A watchpoint of thread TID (inherited by its new threads), or with
 * TID -1 of every task on CPU. */
static int watch(pid_t tid, int cpu, uint64_t addr, int len)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_BREAKPOINT;
	a.size = sizeof(a);
	a.bp_type = HW_BREAKPOINT_RW; /* x86 has no read-only watchpoint */
	a.bp_addr = addr;
	a.bp_len = (uint64_t)len;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.inherit = tid >= 0;
	return (int)syscall(SYS_perf_event_open, &a, tid, cpu, -1, 0);
}

static int self_test(void)
{
	long long seen = 0;
	int fd = watch(0, -1, (uintptr_t)&self_test_word, 8);

	if (fd < 0) {
		perror("watcher: perf_event_open of a watchpoint");
		return 1;
	}
	for (int i = 0; i < 1000; i++)
		self_test_word = i;
	if (read(fd, &seen, sizeof(seen)) != sizeof(seen))
		seen = -1;
	printf("%lld\n", seen);
	return 0;
}

/* Wall-clock nanoseconds of n writes to self_test_word. */
static double time_writes(int n)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < n; i++)
		self_test_word = i;
	clock_gettime(CLOCK_MONOTONIC, &b);
	return (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
}

static int hit_cost(void)
{
	const int n = 20000;
	double plain = time_writes(n), watched;
	int fd = watch(0, -1, (uintptr_t)&self_test_word, 8);

	if (fd < 0) {
		perror("watcher: perf_event_open of a watchpoint");
		return 1;
	}
	watched = time_writes(n);
	close(fd);
	printf("%.0f\n", (watched - plain) / n);
	return 0;
}

/* The tasks (or with PER_CPU, the CPUs) to watch, for ADDRS: thread ids
 * from /proc/PID/task, or CPU numbers 0..n-1. Their count, -1 on error. */
static int watch_targets(const char *pid, bool per_cpu, int *ids, int max)
{
	char task_dir[64];
	struct dirent *d;
	DIR *dir;
	int n = 0;

	if (per_cpu) {
		long cpus = sysconf(_SC_NPROCESSORS_CONF); /* offline ones: ENODEV, skipped */

		for (int c = 0; c < cpus && n < max; c++)
			ids[n++] = c;
		return n;
	}
	snprintf(task_dir, sizeof(task_dir), "/proc/%s/task", pid);
	if (!(dir = opendir(task_dir))) {
		perror("watcher: the target's threads");
		return -1;
	}
	while ((d = readdir(dir)) && n < max)
		if (atoi(d->d_name) > 0)
			ids[n++] = atoi(d->d_name);
	closedir(dir);
	return n;
}

int main(int argc, char **argv)
{
	static int fds[MAX_ADDRS][MAX_THREADS];
	int ids[MAX_THREADS], n_ids, n_addrs = argc - 2;
	bool per_cpu = argc > 1 && strcmp(argv[1], "--cpus") == 0;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc == 2 && strcmp(argv[1], "--self-test") == 0)
		return self_test();
	if (argc == 2 && strcmp(argv[1], "--hit-cost") == 0)
		return hit_cost();
	if (argc < 3 || n_addrs > MAX_ADDRS) {
		fprintf(stderr, "usage: watcher PID|--cpus ADDR[/LEN]... (at most %d) | --self-test | "
			"--hit-cost\n", MAX_ADDRS);
		return 2;
	}
	if ((n_ids = watch_targets(argv[1], per_cpu, ids, MAX_THREADS)) < 0)
		return 1;
	for (int i = 0; i < n_addrs; i++) {
		char *slash = strchr(argv[2 + i], '/');
		uint64_t addr = strtoull(argv[2 + i], NULL, 0);
		int len = slash ? atoi(slash + 1) : 8;

		for (int j = 0; j < n_ids; j++) {
			fds[i][j] = per_cpu ? watch(-1, ids[j], addr, len) : watch(ids[j], -1, addr, len);
			if (fds[i][j] < 0 && !(per_cpu && errno == ENODEV)) {
				perror("watcher: perf_event_open of a watchpoint");
				return 1;
			}
		}
	}
	signal(SIGUSR1, on_signal);
	signal(SIGTERM, on_signal);
	printf("WATCHING\n");
	while (!want_exit) {
		pause();
		if (!want_counts)
			continue;
		want_counts = 0;
		printf("COUNTS");
		for (int i = 0; i < n_addrs; i++) {
			long long total = 0, c;

			for (int j = 0; j < n_ids; j++) {
				if (fds[i][j] >= 0 && read(fds[i][j], &c, sizeof(c)) == sizeof(c))
					total += c;
				if (fds[i][j] >= 0)
					ioctl(fds[i][j], PERF_EVENT_IOC_RESET, 0);
			}
			printf(" %lld", total);
		}
		printf("\n");
	}
	return 0;
}
