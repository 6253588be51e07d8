// SPDX-License-Identifier: MIT
/* Messages of every command; see cli.h. */
#include "cli.h"

#include <stdarg.h>
#include <stdio.h>

int usage_error(const char *command, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "pmetrics %s: ", command);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, " (see pmetrics %s --help)\n", command);
	va_end(ap);
	return EXIT_USAGE;
}

static void line(const char *fmt, va_list ap)
{
	fprintf(stderr, "pmetrics: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void cli_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	line(fmt, ap);
	va_end(ap);
}

void cli_verbose(bool on, const char *fmt, ...)
{
	va_list ap;

	if (!on)
		return;
	va_start(ap, fmt);
	line(fmt, ap);
	va_end(ap);
}
