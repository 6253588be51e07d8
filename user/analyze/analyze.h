// SPDX-License-Identifier: MIT
/* pmetrics analyze: the memory-vs-uptime trend analysis. The wing's one
 * public header: main.c reaches analyze only through it. */
#ifndef PMETRICS_ANALYZE_H
#define PMETRICS_ANALYZE_H

/* argv[0] is "analyze". Returns the process exit code. */
int analyze_main(int argc, char **argv);

#endif
