/* SPDX-License-Identifier: MIT */
/* How every pmetrics command speaks to its user: the exit codes and the
 * one style of its messages on stderr. A usage error names the command
 * and points to its --help; a run-time error or warning is one line
 * starting with "pmetrics:". */
#ifndef PMETRICS_CLI_H
#define PMETRICS_CLI_H

#include <stdbool.h>

/* Exit codes: 0 success, 1 run-time error, 2 usage error. */
#define EXIT_RUNTIME 1
#define EXIT_USAGE 2

/* "pmetrics COMMAND: MESSAGE (see pmetrics COMMAND --help)"; returns
 * EXIT_USAGE. */
int usage_error(const char *command, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "pmetrics: MESSAGE": an error the caller acts on. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "pmetrics: MESSAGE" when ON (-v). */
void cli_verbose(bool on, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Whether S holds a control character (a newline would split a message
 * or a row; names from the command line with one are refused). */
bool cli_has_control_char(const char *s);
/* S for a one-line message: control characters shown as '?', cut to 255
 * bytes (static buffers, each reused at the fourth call after: up to
 * four uses in one message). */
const char *cli_printable(const char *s);

#endif
