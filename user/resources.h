/* SPDX-License-Identifier: MIT */
/* System resource sampling from BPF: system_resource_data rows and the
 * memory series (memory_series_data).
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
	/* Read /proc instead of the BPF task iterator (a kernel without
	 * BTF or without BPF tracing programs). */
	bool procfs;
	enum csv_layout layout;
	bool verbose;
	/* Filters came from the environment or --process-filter. With a
	 * root_pid they then narrow the target tree; without, the whole tree
	 * is sampled whatever its command lines. */
	bool filters_set;
	bool filters_from_flags; /* set by resource_opts_add_filter() */
};

/* Fills OPTS with upstream defaults overridden by the
 * OT_SYSTEM_RESOURCE_TRACKER_* environment variables. Returns 0, or -1
 * with a one-line reason in err (the same rejections as upstream). */
int resource_opts_from_env(struct resource_opts *opts, char *err, size_t errlen);

/* --process-filter GLOB: the first call drops the filters from the
 * environment (flags override), later calls add. GLOB must outlive OPTS.
 * Returns 0, or -1 with a one-line reason in err. */
int resource_opts_add_filter(struct resource_opts *opts, const char *glob,
			     char *err, size_t errlen);
/* --interval SECONDS: a number >= 1.0, optionally followed by "s"
 * ("10", "2.5", "10s"). Returns 0, or -1 with a one-line reason in err. */
int resource_opts_set_interval(struct resource_opts *opts, const char *text,
			       char *err, size_t errlen);
/* The options of `pmetrics record --resources`: the environment's, then
 * the flags over them (FILTERS replace the environment's filters when
 * N_FILTERS > 0, INTERVAL_S > 0 replaces the interval); enabled whatever
 * OT_SYSTEM_RESOURCE_TRACKER_ENABLED says, since the flag asked for it.
 * Returns 0, or -1 with a one-line reason in err. */
int resource_opts_for_record(struct resource_opts *opts, const char *const *filters,
			     int n_filters, double interval_s, char *err, size_t errlen);
/* Whether COMMAND matches one of the filters (Python fnmatch semantics). */
bool resource_command_matches(const struct resource_opts *opts, const char *command);

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

/* What the sampler did so far (the summary prints it). */
struct resource_stats {
	uint64_t polls;
	uint64_t rows;            /* system_resource_data rows */
	uint64_t processes_seen;  /* distinct (pid, start, exec) seen */
	uint64_t unreadable;      /* command line could not be read: skipped */
	uint64_t pid_reused;      /* pid changed hands while reading: skipped */
	uint64_t zombies;         /* process-polls skipped as zombie/exiting */
	uint64_t no_leader;       /* threads whose leader was not in the pass */
	uint64_t rows_too_long;
	uint64_t write_errors;
	uint64_t failed_polls;    /* iterator read failed: poll lost */
	uint64_t poll_cpu_ns;     /* sampler thread CPU time over all polls */
	uint64_t first_poll_cpu_ns; /* of it, the first poll (reads every command line) */
	uint64_t threads_last;    /* threads in the last pass */
};
const struct resource_stats *resource_sampler_stats(const struct resource_sampler *s);

/* The command field: cut to 4096 bytes, quoted by csv_row_str's rule. */
void resource_csv_command(struct csv_row *row, const char *command);
void resource_sampler_close(struct resource_sampler *s);
/* Closes S after a failed start: the CSV files it created are removed. */
void resource_sampler_discard(struct resource_sampler *s);

#endif
