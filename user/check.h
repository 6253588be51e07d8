/* SPDX-License-Identifier: MIT */
/* pmetrics check: what this kernel (and, with --pid, a target) lets
 * pmetrics do, one line per capability. */
#ifndef PMETRICS_CHECK_H
#define PMETRICS_CHECK_H

int check_main(int argc, char **argv);

#endif
