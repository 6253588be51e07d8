/* SPDX-License-Identifier: MIT */
/* The traced process: an existing PID or a command pmetrics launches. */
#ifndef PMETRICS_TARGET_H
#define PMETRICS_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "library_resolver.h"

struct target {
	pid_t pid;
	bool launched;      /* we forked it; it waits for target_release() */
	int release_fd;     /* launched: write end the child waits on */
	int exec_error_fd;  /* launched: carries errno if exec fails */
	int pidfd;          /* readable once the process has exited */
	char exe[4096];     /* main executable, as a path uprobes accept */
	int exit_status;    /* launched: wait status once reaped */
	struct target_view view; /* how it sees the file system */
};

/* Whether PID can be a --pid target: a live process other than this
 * one, not a kernel thread, not one thread of a process, its executable
 * readable (VIEW filled from it). Returns 0, or -1 with the reason and
 * what to give instead in ERR. */
int target_check_pid(pid_t pid, struct target_view *view, char *err, size_t errlen);
/* target_check_pid(), then holds PID for tracing. */
int target_attach_pid(struct target *t, pid_t pid, char *err, size_t errlen);
/* Forks ARGV stopped before exec; resolves the executable via PATH. */
int target_launch(struct target *t, char *const argv[], char *err, size_t errlen);
/* Lets a launched child exec. Returns 0, or -errno when exec failed. */
int target_release(struct target *t, char *err, size_t errlen);
/* Kills a launched child that never got released. */
void target_abort(struct target *t);
bool target_alive(const struct target *t);
/* Reaps a launched child (non-blocking); returns true once it exited. */
bool target_reap(struct target *t);
void target_close(struct target *t);

#endif
