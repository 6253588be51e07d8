// SPDX-License-Identifier: MIT
/* The OT_SYSTEM_RESOURCE_TRACKER_* settings and their flag overrides,
 * with the defaults and rejections of the upstream tracker (formats.md
 * section 2). */
#include "resources.h"
#include "cli.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>

#define ENV_PREFIX "OT_SYSTEM_RESOURCE_TRACKER_"

/* Filters parsed from the environment point into this buffer. */
static char env_filter_text[8192];

/* The interval's range. Upstream's minimum; the maximum because a
 * tracker that polls less than daily is not tracking (and the
 * nanosecond schedule must not overflow: 1e308 s once made it poll in a
 * busy loop). */
#define INTERVAL_MIN_S 1.0
#define INTERVAL_MAX_S 86400.0

static const char *const default_filters[] = { "/opt/opentrons*", "python3*" };

static void set_defaults(struct resource_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->filters[0] = default_filters[0];
	opts->filters[1] = default_filters[1];
	opts->n_filters = 2;
	opts->interval_s = 10.0;
	opts->storage_dir = "/data/performance_metrics_data/";
	opts->enabled = false;
	opts->log_level = LOG_INFO;
	opts->follow_children = true;
	opts->layout = CSV_LAYOUT_CONTEXT;
}

static int parse_enabled(const char *v, struct resource_opts *opts, char *err, size_t errlen)
{
	if (strcasecmp(v, "true") == 0)
		opts->enabled = true;
	else if (strcasecmp(v, "false") == 0)
		opts->enabled = false;
	else {
		snprintf(err, errlen, ENV_PREFIX "ENABLED must be true or false, not \"%s\"", cli_printable(v));
		return -1;
	}
	return 0;
}

static char *trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

static int parse_filters(const char *v, struct resource_opts *opts, char *err, size_t errlen)
{
	char *save = NULL, *item;
	int n = 0;

	if (strlen(v) >= sizeof(env_filter_text)) {
		snprintf(err, errlen, ENV_PREFIX "PROCESS_FILTERS is longer than %zu bytes",
			 sizeof(env_filter_text) - 1);
		return -1;
	}
	strcpy(env_filter_text, v);
	for (item = strtok_r(env_filter_text, ",", &save); item;
	     item = strtok_r(NULL, ",", &save)) {
		item = trim(item);
		if (!*item)
			continue;
		if (n == RESOURCE_MAX_FILTERS) {
			snprintf(err, errlen, ENV_PREFIX "PROCESS_FILTERS has more than %d globs",
				 RESOURCE_MAX_FILTERS);
			return -1;
		}
		opts->filters[n++] = item;
	}
	if (n == 0) {
		snprintf(err, errlen, ENV_PREFIX "PROCESS_FILTERS must be a comma-separated list of globs, not \"%s\"", cli_printable(v));
		return -1;
	}
	opts->n_filters = n;
	opts->filters_set = true;
	return 0;
}

/* Python float(): surrounding whitespace allowed, nothing else after,
 * and no hexadecimal, which strtod() would read but float() refuses. */
static int parse_seconds(const char *v, bool allow_suffix, double *out)
{
	char *end;
	double d;

	while (isspace((unsigned char)*v))
		v++;
	if (!*v || strpbrk(v, "xX"))
		return -1;
	d = strtod(v, &end);
	if (end == v)
		return -1;
	if (allow_suffix && *end == 's')
		end++;
	while (isspace((unsigned char)*end))
		end++;
	if (*end || !isfinite(d))
		return -1;
	*out = d;
	return 0;
}

static int parse_interval(const char *what, const char *v, bool allow_suffix,
			  struct resource_opts *opts, char *err, size_t errlen)
{
	double d;

	if (parse_seconds(v, allow_suffix, &d) != 0) {
		snprintf(err, errlen, "%s must be a number of seconds from 1.0 to 86400 (1 day), "
			 "not \"%s\"", what, cli_printable(v));
		return -1;
	}
	if (d < INTERVAL_MIN_S || d > INTERVAL_MAX_S) {
		snprintf(err, errlen, "%s must be at least 1.0 and at most 86400 seconds "
			 "(1 day), not \"%s\"", what, cli_printable(v));
		return -1;
	}
	opts->interval_s = d;
	return 0;
}

static int parse_storage_dir(const char *v, struct resource_opts *opts, char *err, size_t errlen)
{
	if (v[0] != '/' || cli_has_control_char(v)) {
		snprintf(err, errlen, ENV_PREFIX "STORAGE_DIR must be an absolute path without "
			 "control characters, not \"%s\"", cli_printable(v));
		return -1;
	}
	opts->storage_dir = v;
	return 0;
}

/* Python's logging level names (case-sensitive, as upstream looks them up). */
static int parse_log_level(const char *v, struct resource_opts *opts, char *err, size_t errlen)
{
	static const struct { const char *name; int level; } levels[] = {
		{ "CRITICAL", LOG_CRIT }, { "FATAL", LOG_CRIT }, { "ERROR", LOG_ERR },
		{ "WARNING", LOG_WARNING }, { "WARN", LOG_WARNING }, { "INFO", LOG_INFO },
		{ "DEBUG", LOG_DEBUG }, { "NOTSET", LOG_DEBUG },
	};

	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		if (strcmp(v, levels[i].name) == 0) {
			opts->log_level = levels[i].level;
			return 0;
		}
	}
	snprintf(err, errlen, ENV_PREFIX "LOGGING_LEVEL must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL, not \"%s\"", cli_printable(v));
	return -1;
}

/* The tracker's variables but those a flag replaces (FILTERS_GIVEN,
 * INTERVAL_GIVEN), which are neither read nor judged. */
static int from_env(struct resource_opts *opts, bool filters_given, bool interval_given,
		    char *err, size_t errlen)
{
	const char *v;

	set_defaults(opts);
	if ((v = getenv(ENV_PREFIX "ENABLED")) && parse_enabled(v, opts, err, errlen))
		return -1;
	if (!filters_given && (v = getenv(ENV_PREFIX "PROCESS_FILTERS")) &&
	    parse_filters(v, opts, err, errlen))
		return -1;
	if (!interval_given && (v = getenv(ENV_PREFIX "REFRESH_INTERVAL")) &&
	    parse_interval(ENV_PREFIX "REFRESH_INTERVAL", v, false, opts, err, errlen))
		return -1;
	if ((v = getenv(ENV_PREFIX "STORAGE_DIR")) && parse_storage_dir(v, opts, err, errlen))
		return -1;
	if ((v = getenv(ENV_PREFIX "LOGGING_LEVEL")) && parse_log_level(v, opts, err, errlen))
		return -1;
	return 0;
}

int resource_opts_from_env(struct resource_opts *opts, char *err, size_t errlen)
{
	return from_env(opts, false, false, err, errlen);
}

int resource_opts_add_filter(struct resource_opts *opts, const char *glob,
			     char *err, size_t errlen)
{
	if (!glob || !*glob) {
		snprintf(err, errlen, "--process-filter needs a non-empty glob");
		return -1;
	}
	if (cli_has_control_char(glob)) {
		snprintf(err, errlen, "--process-filter '%s' holds a control character (shown as "
			 "'?'): match it with ? or * instead", cli_printable(glob));
		return -1;
	}
	/* The first flag replaces whatever the environment said. */
	if (!opts->filters_from_flags) {
		opts->filters_from_flags = true;
		opts->n_filters = 0;
	}
	if (opts->n_filters == RESOURCE_MAX_FILTERS) {
		snprintf(err, errlen, "too many --process-filter globs (at most %d)",
			 RESOURCE_MAX_FILTERS);
		return -1;
	}
	opts->filters[opts->n_filters++] = glob;
	opts->filters_set = true;
	return 0;
}

int resource_opts_set_interval(struct resource_opts *opts, const char *text,
			       char *err, size_t errlen)
{
	return parse_interval("--interval", text, true, opts, err, errlen);
}

int resource_opts_for_record(struct resource_opts *opts, const char *const *filters,
			     int n_filters, double interval_s, char *err, size_t errlen)
{
	if (from_env(opts, n_filters > 0, interval_s > 0, err, errlen) != 0)
		return -1;
	opts->enabled = true;
	for (int i = 0; i < n_filters; i++)
		if (resource_opts_add_filter(opts, filters[i], err, errlen) != 0)
			return -1;
	if (interval_s > 0)
		opts->interval_s = interval_s;
	return 0;
}
