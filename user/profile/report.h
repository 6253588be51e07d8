/* SPDX-License-Identifier: MIT */
/* pmetrics report: a profile capture into folded stacks, pprof, an SVG
 * flame graph and a trace-event timeline. The wing's one public header:
 * main.c reaches it only through this. */
#ifndef PMETRICS_PROFILE_REPORT_H
#define PMETRICS_PROFILE_REPORT_H

#include <stdbool.h>

/* argv[0] is "report". Returns the process exit code. */
int report_main(int argc, char **argv);
/* Whether FORMATS is what --format takes: "svg,pprof", "all". */
bool report_formats_valid(const char *formats);
/* pmetrics report DIR --format FORMATS, for record --report: the same
 * files, lines and exit code. */
int report_capture(const char *dir, const char *formats);

#endif
