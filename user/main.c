// SPDX-License-Identifier: MIT
/* pmetrics: function spans and resource use of a process, from BPF. */
#include <stdio.h>
#include <string.h>

#include "analyze/analyze.h"
#include "record.h"
#include "wall_clock.h"

#define PMETRICS_VERSION "0.1.0"




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
"\n"
"  pmetrics COMMAND --help   shows the options and examples of a command\n"
"  pmetrics --version\n");
}

int main(int argc, char **argv)
{
	pmetrics_start_ns = monotonic_ns();
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "record") == 0)
		return record_main(argc - 1, argv + 1);
	if (strcmp(argv[1], "analyze") == 0)
		return analyze_main(argc - 1, argv + 1);
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("pmetrics %s\n", PMETRICS_VERSION);
		return 0;
	}
	fprintf(stderr, "pmetrics: unknown command '%s': use record or analyze "
		"(see pmetrics --help)\n", argv[1]);
	return EXIT_USAGE;
}
