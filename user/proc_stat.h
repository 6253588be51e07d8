/* SPDX-License-Identifier: MIT */
/* The one reader of /proc/PID/stat. */
#ifndef PMETRICS_PROC_STAT_H
#define PMETRICS_PROC_STAT_H

#include <stdint.h>
#include <sys/types.h>

struct proc_stat {
	char state;           /* R, S, D, Z, X, ... */
	pid_t ppid;
	uint64_t start_ticks; /* field 22: clock ticks after boot */
};

/* Reads "stat" in DIRFD, an open /proc/PID directory (which stays bound
 * to that process: reads fail once it is gone, they never reach a new
 * owner of the PID). Returns 0 or -errno (-EINVAL: unparsable). */
int proc_stat_read_at(int dirfd, struct proc_stat *out);
/* The same for /proc/PID/stat. */
int proc_stat_read(pid_t pid, struct proc_stat *out);

#endif
