// SPDX-License-Identifier: MIT
#include "target.h"
#include "bpf_loader.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "proc_stat.h"
#include "whole_file.h"

static int open_pidfd(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	errno = ENOSYS;
	return -1;
#endif
}

/* The state letter of PID, or 0 when it cannot be read (gone). */
static char process_state(pid_t pid)
{
	struct proc_stat st;

	return proc_stat_read(pid, &st) == 0 ? st.state : 0;
}

static void target_init(struct target *t)
{
	memset(t, 0, sizeof(*t));
	t->release_fd = t->exec_error_fd = t->pidfd = -1;
}

/* The process (thread group) PID belongs to; 0 when unknown. */
static pid_t thread_group_of(pid_t pid)
{
	char path[64], line[256];
	pid_t tgid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(f);
	return tgid;
}

int target_check_pid(pid_t pid, struct target_view *view, char *err, size_t errlen)
{
	struct proc_stat st;
	pid_t tgid;

	if (pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH) || proc_stat_read(pid, &st) != 0) {
		snprintf(err, errlen, "no process with PID %d: check the PID (pidof NAME)", pid);
		return -1;
	}
	/* its own probes would fire on the calls it makes to record them */
	if (pid == getpid()) {
		snprintf(err, errlen, "--pid %d is this pmetrics itself: give the target's PID", pid);
		return -1;
	}
	if (st.state == 'Z' || st.state == 'X') {
		snprintf(err, errlen, "process %d has exited (state %c)", pid, st.state);
		return -1;
	}
	if (st.flags & PF_KTHREAD) {
		snprintf(err, errlen, "process %d (%s) is a kernel thread: it has no executable "
			 "to probe", pid, st.comm);
		return -1;
	}
	tgid = thread_group_of(pid);
	if (tgid > 0 && tgid != pid) {
		snprintf(err, errlen, "%d is a thread of process %d (%s), not a process: give "
			 "--pid %d, which traces all its threads", pid, tgid, st.comm, tgid);
		return -1;
	}
	if (target_view_of_pid(view, pid) != 0 || access(view->exe, R_OK) != 0) {
		snprintf(err, errlen, "cannot read the executable of process %d (%s): %s", pid,
			 st.comm, strerror(errno));
		return -1;
	}
	return 0;
}

int target_attach_pid(struct target *t, pid_t pid, char *err, size_t errlen)
{
	target_init(t);
	t->pid = pid;
	if (target_check_pid(pid, &t->view, err, errlen))
		return -1;
	snprintf(t->exe, sizeof(t->exe), "/proc/%d/exe", pid);
	t->pidfd = open_pidfd(pid);
	return 0;
}

/* Why FILE cannot be run; NULL when it can. */
static const char *not_runnable(const char *file)
{
	struct stat st;

	if (stat(file, &st) != 0)
		return strerror(errno);
	if (S_ISDIR(st.st_mode))
		return "it is a directory";
	if (!S_ISREG(st.st_mode))
		return "it is not a regular file";
	if (access(file, X_OK) != 0)
		return "it is not executable (chmod +x?)";
	return NULL;
}

/* Why exec of FILE failed with E, in ERR. ENOENT for a file that is
 * there means what runs it is missing: its #! interpreter, or the
 * dynamic loader an executable for another system names. */
static void exec_error(const char *file, int e, char *err, size_t errlen)
{
	char shebang[256];
	bool cr, script;

	if (e != ENOENT || access(file, F_OK) != 0) {
		snprintf(err, errlen, "cannot run %s: %s", file, strerror(e));
		return;
	}
	script = whole_file_shebang(file, shebang, sizeof(shebang), &cr);
	if (script && cr)
		snprintf(err, errlen, "cannot run %s: its first line ends in a carriage return "
			 "(DOS line ends), which the kernel takes as part of the interpreter's "
			 "name: convert it with dos2unix", file);
	else if (script)
		snprintf(err, errlen, "cannot run %s: the interpreter its first line names "
			 "(#!%s) does not exist", file, shebang);
	else
		snprintf(err, errlen, "cannot run %s: the dynamic loader it names does not exist "
			 "(built for another system? file %s says which)", file, file);
}

/* execvp's PATH search, done up front so probes can be placed on the
 * file before the child runs (like execvp, a directory or a file that
 * cannot be run is passed over). 0, or -1 with the reason in ERR. */
static int find_in_path(const char *cmd, char *out, size_t len, char *err, size_t errlen)
{
	const char *path = getenv("PATH"), *why;
	char dir[4096];

	if (!*cmd) {
		snprintf(err, errlen, "empty command after --: give the program to run");
		return -1;
	}
	if (strchr(cmd, '/')) {
		why = not_runnable(cmd);
		if (why || !realpath(cmd, out)) {
			snprintf(err, errlen, "cannot run %s: %s", cli_printable(cmd),
				 why ? why : strerror(errno));
			return -1;
		}
		return 0;
	}
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");
		snprintf(dir, sizeof(dir), "%.*s/%s", (int)n, n ? path : ".", cmd);
		if (!not_runnable(dir) && realpath(dir, out) && strlen(out) < len)
			return 0;
		path += n + (path[n] == ':');
	}
	snprintf(err, errlen, "command not found: %s (give a path or check PATH)", cli_printable(cmd));
	return -1;
}

static void child_wait_and_exec(int release_rd, int error_wr, char *const argv[])
{
	char go;
	int e;

	if (read(release_rd, &go, 1) != 1)
		_exit(127); /* pmetrics gave up before release */
	close(release_rd);
	bpf_loader_restore_fd_limit(); /* raised for pmetrics' own descriptors */
	execvp(argv[0], argv);
	e = errno;
	if (write(error_wr, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

int target_launch(struct target *t, char *const argv[], char *err, size_t errlen)
{
	int release[2], exec_error[2];

	target_init(t);
	t->launched = true;
	if (find_in_path(argv[0], t->exe, sizeof(t->exe), err, errlen) != 0)
		return -1;
	target_view_own(&t->view, t->exe);
	if (pipe2(release, O_CLOEXEC) != 0 || pipe2(exec_error, O_CLOEXEC) != 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -1;
	}
	t->pid = fork();
	if (t->pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		return -1;
	}
	if (t->pid == 0) {
		close(release[1]);
		close(exec_error[0]);
		child_wait_and_exec(release[0], exec_error[1], argv);
	}
	close(release[0]);
	close(exec_error[1]);
	t->release_fd = release[1];
	t->exec_error_fd = exec_error[0];
	t->pidfd = open_pidfd(t->pid);
	return 0;
}

int target_release(struct target *t, char *err, size_t errlen)
{
	int e = 0;
	ssize_t n;

	if (write(t->release_fd, "g", 1) != 1) {
		snprintf(err, errlen, "cannot start the command: %s", strerror(errno));
		return -EIO;
	}
	close(t->release_fd);
	t->release_fd = -1;
	/* EOF: exec succeeded and closed the CLOEXEC pipe */
	n = read(t->exec_error_fd, &e, sizeof(e));
	close(t->exec_error_fd);
	t->exec_error_fd = -1;
	if (n == (ssize_t)sizeof(e)) {
		exec_error(t->exe, e, err, errlen);
		waitpid(t->pid, NULL, 0);
		t->pid = 0;
		return -e;
	}
	return 0;
}

void target_abort(struct target *t)
{
	if (!t->launched || t->pid <= 0)
		return;
	if (t->release_fd >= 0) {
		close(t->release_fd); /* child reads EOF and exits */
		t->release_fd = -1;
	}
	waitpid(t->pid, &t->exit_status, 0);
	t->pid = 0;
}

bool target_alive(const struct target *t)
{
	char state;

	if (t->pid <= 0)
		return false;
	state = process_state(t->pid);
	return state != 0 && state != 'Z' && state != 'X';
}

bool target_reap(struct target *t)
{
	if (!t->launched)
		return !target_alive(t);
	if (t->pid <= 0)
		return true;
	if (waitpid(t->pid, &t->exit_status, WNOHANG) == t->pid) {
		t->pid = 0;
		return true;
	}
	return false;
}

void target_close(struct target *t)
{
	if (t->release_fd >= 0)
		close(t->release_fd);
	if (t->exec_error_fd >= 0)
		close(t->exec_error_fd);
	if (t->pidfd >= 0)
		close(t->pidfd);
	t->release_fd = t->exec_error_fd = t->pidfd = -1;
}
