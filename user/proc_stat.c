// SPDX-License-Identifier: MIT
/* /proc/PID/stat; see proc_stat.h. */
#include "proc_stat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The line is "PID (COMM) STATE PPID ...": COMM may hold spaces and
 * parentheses, so fields are counted from the last ')'. */
static int parse(char *buf, struct proc_stat *out)
{
	char *open = strchr(buf, '('), *at = strrchr(buf, ')');

	if (!open || !at || at < open || at[1] != ' ' || !at[2])
		return -EINVAL;
	snprintf(out->comm, sizeof(out->comm), "%.*s", (int)(at - open - 1), open + 1);
	at += 2;
	out->state = *at;
	/* state is field 3; the loop stands on field N + 1 after step N */
	for (int field = 3; field < 24; field++) {
		at = strchr(at, ' ');
		if (!at)
			return -EINVAL;
		at++;
		switch (field + 1) {
		case 4: out->ppid = (pid_t)strtol(at, NULL, 10); break;
		case 9: out->flags = (unsigned int)strtoul(at, NULL, 10); break;
		case 14: out->utime_ticks = strtoull(at, NULL, 10); break;
		case 15: out->stime_ticks = strtoull(at, NULL, 10); break;
		case 22: out->start_ticks = strtoull(at, NULL, 10); break;
		case 24: out->rss_pages = strtoll(at, NULL, 10); break;
		}
	}
	return 0;
}

int proc_stat_read_at(int dirfd, struct proc_stat *out)
{
	char buf[4096];
	int fd = openat(dirfd, "stat", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	do
		n = read(fd, buf, sizeof(buf) - 1);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	close(fd);
	buf[n] = '\0';
	return parse(buf, out);
}

int proc_stat_read(pid_t pid, struct proc_stat *out)
{
	char path[32];
	int dirfd, err;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return -errno;
	err = proc_stat_read_at(dirfd, out);
	close(dirfd);
	return err;
}
