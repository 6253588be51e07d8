/* SPDX-License-Identifier: MIT */
/* pmetrics record: options and the capture session. */
#ifndef PMETRICS_RECORD_H
#define PMETRICS_RECORD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "cli.h"
#include "csv_writer.h"
#include "probe_spec.h"
#include "span_event.h"

#define DEFAULT_OUTPUT_DIR "/data/performance_metrics_data"
#define DEFAULT_RINGBUF_MB 8

/* Where py: probes see calls (--python-hook). */
enum python_hook {
	PYTHON_HOOK_DEFAULT,    /* not given: coroutines */
	PYTHON_HOOK_CALLS,      /* coroutines, and plain functions at every call */
	PYTHON_HOOK_COROUTINES, /* coroutines (and generators) only */
	PYTHON_HOOK_WATCH,      /* watchpoints on the timed functions' code objects */
};

struct record_opts {
	pid_t pid;                  /* --pid, 0 when launching */
	char **command;             /* after --, NULL-terminated */
	struct probe_spec probes[SPAN_MAX_PROBES];
	int n_probes;
	uint64_t duration_ns;       /* 0: until Ctrl-C/SIGTERM/target exit */
	const char *output_dir;
	enum csv_layout layout;
	bool follow_children;
	bool verbose;
	const char *btf_path;       /* --btf: for kernels without BTF */
	uint64_t ringbuf_bytes;
	enum python_hook python_hook;
	bool preset_robot_server;
	bool bench_floor;           /* --bench-floor: empty probes (make bench) */
	bool resources;             /* --resources: CPU and memory sampling */
	const char *resource_filters[32];
	int n_resource_filters;
	double resource_interval_s; /* 0: from env/default */
	unsigned int sample_hz;     /* --sample[=HZ]: CPU samples per second, 0: off */
	bool off_cpu;               /* --off-cpu */
	const char *report_formats; /* --report[=FORMATS]: "all" when bare; NULL: none */
};

/* Parses argv (argv[0] = "record"). Returns 0, or EXIT_USAGE after
 * printing a one-line error, or -1 when --help was printed. */
int record_parse_args(int argc, char **argv, struct record_opts *opts);
void record_usage(FILE *out);
/* Runs a capture session; returns the exit code. */
int record_run(const struct record_opts *opts);
int record_main(int argc, char **argv);

/* Time pmetrics started, for the attach-latency figure. */
extern uint64_t pmetrics_start_ns;

#endif
