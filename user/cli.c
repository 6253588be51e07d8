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

bool cli_has_control_char(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

const char *cli_printable(const char *s)
{
	static _Thread_local char bufs[4][256];
	static _Thread_local unsigned next;
	char *buf = bufs[next++ % 4];
	size_t i;

	for (i = 0; s[i] && i < sizeof(bufs[0]) - 1; i++)
		buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	buf[i] = '\0';
	return buf;
}
