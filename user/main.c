// SPDX-License-Identifier: MIT
/* pmetrics: function spans and resource use of a process, from BPF. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "analyze/analyze.h"
#include "check.h"
#include "cli.h"
#include "profile/report.h"
#include "record.h"
#include "wall_clock.h"

#define PMETRICS_VERSION "0.1.0"

/* Started with stdin, stdout or stderr closed (`2>&-`), the first file
 * opened would take that number, and the summary printed to stderr would
 * land in a data file. Each closed one gets /dev/null instead; returns -1
 * when that cannot be done. */
static int open_standard_fds(void)
{
	for (int fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		if (open("/dev/null", O_RDWR) != fd)
			return -1;
	}
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out,
"Usage: pmetrics COMMAND [OPTIONS]\n"
"\n"
"Measures a program from the kernel side, with no change to it:\n"
"function durations from uprobes, CPU and memory from BPF, written in the\n"
"CSV layouts the robot's performance-metrics tooling reads.\n"
"\n"
"Commands:\n"
"  record     trace a running PID or a command into CSV files\n"
"  analyze    memory-vs-uptime trend analysis of exported reports or captures\n"
"  check      what this kernel (and a target, with --pid) lets pmetrics do\n"
"  report     a capture's CPU/off-CPU profile as folded stacks, pprof, a flame\n"
"             graph and a timeline\n"
"\n"
"  pmetrics COMMAND --help   shows the options and examples of a command\n"
"  pmetrics --version\n");
}

/* ARGV[0] as a command with its arguments; -1 when it names none. */
static int run_command(int argc, char **argv)
{
	if (strcmp(argv[0], "record") == 0)
		return record_main(argc, argv);
	if (strcmp(argv[0], "analyze") == 0)
		return analyze_main(argc, argv);
	if (strcmp(argv[0], "check") == 0)
		return check_main(argc, argv);
	if (strcmp(argv[0], "report") == 0)
		return report_main(argc, argv);
	return -1;
}

int main(int argc, char **argv)
{
	int rc;

	if (open_standard_fds())
		return 1;
	pmetrics_start_ns = monotonic_ns();
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	rc = run_command(argc - 1, argv + 1);
	if (rc >= 0)
		return rc;
	/* help COMMAND: that command's own help */
	if (strcmp(argv[1], "help") == 0 && argc > 2) {
		char help[] = "--help";

		rc = run_command(2, (char *[]){ argv[2], help, NULL });
		if (rc >= 0)
			return rc;
		fprintf(stderr, "pmetrics: no command '%s' to help with: use record, check, "
			"analyze or report\n", cli_printable(argv[2]));
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("pmetrics %s\n", PMETRICS_VERSION);
		return 0;
	}
	fprintf(stderr, "pmetrics: unknown command '%s': use record, check, analyze or report "
		"(see pmetrics --help)\n", argv[1]);
	return EXIT_USAGE;
}
