/* pmetrics analyze (issue 5): the memory-vs-uptime trend analysis. */
#ifndef PMETRICS_ANALYZE_H
#define PMETRICS_ANALYZE_H

/* argv[0] is "analyze". Returns the process exit code. */
int analyze_main(int argc, char **argv);

#endif
