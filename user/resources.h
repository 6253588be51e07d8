/* System resource sampling from BPF (issue 4): system_resource_data rows,
 * the memory series, and (later) per-span resource context.
 *
 * Life cycle, driven by the record loop in user/record.c:
 *   resource_opts_from_env() -> flags override -> resource_sampler_open()
 *   -> resource_sampler_poll() whenever resource_sampler_next_due_ns()
 *   has passed (first poll immediately) -> resource_sampler_close(). */
#ifndef PMETRICS_RESOURCES_H
#define PMETRICS_RESOURCES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "csv_writer.h"

#define RESOURCE_MAX_FILTERS 32

struct resource_opts {
	const char *filters[RESOURCE_MAX_FILTERS]; /* fnmatch globs */
	int n_filters;
	double interval_s;     /* >= 1.0 */
	const char *storage_dir;
	bool enabled;          /* OT_SYSTEM_RESOURCE_TRACKER_ENABLED */
	int log_level;         /* LOG_DEBUG..LOG_CRIT from <syslog.h> */
	pid_t root_pid;        /* 0: whole system; else target + children */
	bool follow_children;
	enum csv_layout layout;
	bool verbose;
};

/* Fills OPTS with upstream defaults overridden by the
 * OT_SYSTEM_RESOURCE_TRACKER_* environment variables. Returns 0, or -1
 * with a one-line reason in err (the same rejections as upstream). */
int resource_opts_from_env(struct resource_opts *opts, char *err, size_t errlen);

struct resource_sampler;

/* Loads and attaches the sampler's BPF programs and opens its CSV files.
 * Returns 0, or a negative errno after printing a one-line error. */
int resource_sampler_open(struct resource_sampler **out,
			  const struct resource_opts *opts);
/* CLOCK_MONOTONIC ns at which the next poll is due. */
uint64_t resource_sampler_next_due_ns(const struct resource_sampler *s);
/* Samples every matching process once and writes the rows. */
int resource_sampler_poll(struct resource_sampler *s);
void resource_sampler_summary(const struct resource_sampler *s, FILE *out);
void resource_sampler_close(struct resource_sampler *s);

#endif
