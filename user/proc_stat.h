/* SPDX-License-Identifier: MIT */
/* The one reader of /proc/PID/stat. */
#ifndef PMETRICS_PROC_STAT_H
#define PMETRICS_PROC_STAT_H

#include <stdint.h>
#include <sys/types.h>

/* flags: the task is a kernel thread (include/linux/sched.h) */
#define PF_KTHREAD 0x00200000u

struct proc_stat {
	char comm[64];        /* field 2, without its parentheses */
	char state;           /* R, S, D, Z, X, ... */
	pid_t ppid;
	unsigned int flags;   /* PF_* (PF_KTHREAD: a kernel thread) */
	uint64_t utime_ticks; /* fields 14, 15: the process's CPU time */
	uint64_t stime_ticks;
	uint64_t start_ticks; /* field 22: clock ticks after boot */
	int64_t rss_pages;    /* field 24 */
};

/* Reads "stat" in DIRFD, an open /proc/PID directory (which stays bound
 * to that process: reads fail once it is gone, they never reach a new
 * owner of the PID). Returns 0 or -errno (-EINVAL: unparsable). */
int proc_stat_read_at(int dirfd, struct proc_stat *out);
/* The same for /proc/PID/stat. */
int proc_stat_read(pid_t pid, struct proc_stat *out);

#endif
