// SPDX-License-Identifier: MIT
#include "probe_spec.h"
#include "cli.h"

#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool all_chars(const char *s, size_t n, const char *extra)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' && !strchr(extra, s[i]))
			return false;
	return true;
}

static int copy_part(char *dst, size_t size, const char *src, size_t n)
{
	if (n >= size)
		return -1;
	memcpy(dst, src, n);
	dst[n] = '\0';
	return 0;
}

static int parse_python(const char *target, struct probe_spec *out, char *err, size_t errlen)
{
	const char *rest = target + 3, *colon = strchr(rest, ':');

	out->kind = PROBE_PYTHON;
	if (!colon || !all_chars(rest, (size_t)(colon - rest), ".") ||
	    !all_chars(colon + 1, strlen(colon + 1), ".<>") ||
	    copy_part(out->binary, sizeof(out->binary), rest, (size_t)(colon - rest)) ||
	    copy_part(out->symbol, sizeof(out->symbol), colon + 1, strlen(colon + 1))) {
		snprintf(err, errlen, "bad Python probe '%s': expected py:MODULE:QUALNAME, "
			 "e.g. py:robot_server.protocols.protocol_analyzer:ProtocolAnalyzer.analyze",
			 target);
		return -1;
	}
	/* code objects carry their file, not the name the module ran under */
	if (strcmp(out->binary, "__main__") == 0) {
		snprintf(err, errlen, "bad Python probe '%s': name the main module as its file "
			 "or -m name says (py:server:%s for server.py, py:pkg.app:%s for "
			 "-m pkg.app), not __main__", target, out->symbol, out->symbol);
		return -1;
	}
	size_t n = strlen(out->symbol);
	if (n >= 8 && strcmp(out->symbol + n - 8, "<locals>") == 0) {
		snprintf(err, errlen, "bad Python probe '%s': QUALNAME ends in <locals>; name the "
			 "function defined there, e.g. %s.inner", target, out->symbol);
		return -1;
	}
	return 0;
}

static int parse_native(const char *target, struct probe_spec *out, char *err, size_t errlen)
{
	const char *colon = strrchr(target, ':');
	const char *sym = colon ? colon + 1 : NULL;

	out->kind = PROBE_NATIVE;
	if (!colon || !all_chars(sym, strlen(sym), ".$@") ||
	    copy_part(out->binary, sizeof(out->binary), target, (size_t)(colon - target)) ||
	    copy_part(out->symbol, sizeof(out->symbol), sym, strlen(sym))) {
		snprintf(err, errlen, "bad probe target '%s': expected BINARY:SYMBOL "
			 "(e.g. /usr/bin/server:analyze, libc.so.6:malloc, :main_func) "
			 "or py:MODULE:QUALNAME", target);
		return -1;
	}
	return 0;
}

int probe_spec_parse(const char *arg, struct probe_spec *out, char *err, size_t errlen)
{
	const char *eq = strchr(arg, '=');

	memset(out, 0, sizeof(*out));
	/* first: every message below shows ARG as given */
	if (cli_has_control_char(arg)) {
		snprintf(err, errlen, "bad --probe '%s': it holds a control character (shown as ?)",
			 cli_printable(arg));
		return -1;
	}
	if (!eq) {
		snprintf(err, errlen, "bad --probe '%s': expected STATE=TARGET, "
			 "e.g. ANALYZING_PROTOCOL=/opt/app/bin/server:analyze_protocol", arg);
		return -1;
	}
	if (!all_chars(arg, (size_t)(eq - arg), "") ||
	    copy_part(out->state, sizeof(out->state), arg, (size_t)(eq - arg))) {
		snprintf(err, errlen, "bad state name '%.*s' in --probe '%s': use letters, "
			 "digits and _ only (at most %d), e.g. ANALYZING_PROTOCOL",
			 (int)(eq - arg), arg, arg, PROBE_STATE_MAX - 1);
		return -1;
	}
	if (copy_part(out->target, sizeof(out->target), eq + 1, strlen(eq + 1))) {
		snprintf(err, errlen, "probe target too long in --probe '%s'", arg);
		return -1;
	}
	if (strncmp(eq + 1, "py:", 3) == 0)
		return parse_python(eq + 1, out, err, errlen);
	return parse_native(eq + 1, out, err, errlen);
}

/* "1.5s" -> 1.5e9: a number and one unit, in nanoseconds as a double so
 * that nothing overflows before the caller's range check. -1 when not. */
static int duration_value(const char *arg, double *ns)
{
	static const struct { const char *suffix; double ns; } units[] = {
		{ "ms", 1e6 }, { "us", 1e3 }, { "s", 1e9 }, { "m", 60e9 }, { "h", 3600e9 },
	};
	char *end;
	double v;

	if (!isdigit((unsigned char)arg[0]) && arg[0] != '.')
		return -1;
	v = strtod(arg, &end);
	if (end == arg || !isfinite(v) || v <= 0)
		return -1;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].suffix) == 0) {
			*ns = v * units[i].ns;
			return 0;
		}
	}
	return -1;
}

int duration_parse(const char *arg, uint64_t *ns)
{
	double v;

	if (duration_value(arg, &v) || v < 1 || v > 1e19)
		return -1;
	*ns = (uint64_t)v;
	return 0;
}

int duration_option_parse(const char *arg, uint64_t *ns, char *err, size_t errlen)
{
	double v;

	if (duration_value(arg, &v)) {
		snprintf(err, errlen, "bad --duration '%s': use a number with a unit (500ms, 30s, "
			 "5m, 1h), from 1ms to 8760h (1 year)", arg);
		return -1;
	}
	if (v < (double)DURATION_MIN_NS || v > (double)DURATION_MAX_NS) {
		snprintf(err, errlen, "bad --duration '%s': it must be from 1ms to 8760h (1 year)", arg);
		return -1;
	}
	*ns = (uint64_t)v;
	return 0;
}
