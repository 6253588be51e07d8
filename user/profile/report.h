/* SPDX-License-Identifier: MIT */
/* pmetrics report: a profile capture into folded stacks, pprof, an SVG
 * flame graph and a trace-event timeline. The wing's one public header:
 * main.c reaches it only through this. */
#ifndef PMETRICS_PROFILE_REPORT_H
#define PMETRICS_PROFILE_REPORT_H

/* argv[0] is "report". Returns the process exit code. */
int report_main(int argc, char **argv);

#endif
