// SPDX-License-Identifier: MIT
/* Test driver for the resource sampler (user/resources.c) until, and
 * besides, `pmetrics record --resources`: runs the same life cycle the
 * record loop does (env -> flags -> open -> poll when due -> summary).
 *
 *   res_sample [--dir D] [--interval S] [--polls N] [--pid P [--no-children]]
 *              [--process-filter G]... [--layout context|activity] [-v]
 *
 * Stops after N polls, or on SIGINT/SIGTERM. */
#include "resources.h"
#include "sd_notify.h"
#include "bpf_loader.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static unsigned long long mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

static int parse_args(int argc, char **argv, struct resource_opts *o, long *polls)
{
	char err[256] = "";

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "-v") == 0) {
			o->verbose = true;
			continue;
		}
		if (strcmp(a, "--no-children") == 0) {
			o->follow_children = false;
			continue;
		}
		if (!v) {
			fprintf(stderr, "pmetrics: %s needs a value\n", a);
			return -1;
		}
		i++;
		if (strcmp(a, "--dir") == 0)
			o->storage_dir = v;
		else if (strcmp(a, "--interval") == 0 && resource_opts_set_interval(o, v, err, sizeof(err)))
			goto bad;
		else if (strcmp(a, "--process-filter") == 0 && resource_opts_add_filter(o, v, err, sizeof(err)))
			goto bad;
		else if (strcmp(a, "--polls") == 0)
			*polls = strtol(v, NULL, 10);
		else if (strcmp(a, "--pid") == 0)
			o->root_pid = (pid_t)strtol(v, NULL, 10);
		else if (strcmp(a, "--layout") == 0 && csv_layout_parse(v, &o->layout)) {
			snprintf(err, sizeof(err), "--layout must be context or activity");
			goto bad;
		}
	}
	return 0;
bad:
	fprintf(stderr, "pmetrics: %s\n", err);
	return -1;
}

int main(int argc, char **argv)
{
	struct resource_opts opts;
	struct resource_sampler *s = NULL;
	char err[256];
	long polls = 1, done = 0;
	int rc;

	if (resource_opts_from_env(&opts, err, sizeof(err)) != 0) {
		fprintf(stderr, "pmetrics: %s\n", err);
		return 2;
	}
	opts.enabled = true; /* as with --resources */
	if (parse_args(argc, argv, &opts, &polls) != 0)
		return 2;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGXFSZ, SIG_IGN); /* as pmetrics record: EFBIG, not a kill */
	bpf_loader_init(&(struct bpf_loader_settings){ .verbose = opts.verbose });
	if (resource_sampler_open(&s, &opts) != 0)
		return 1;
	sd_notify_ready();
	while (!stop && (polls <= 0 || done < polls)) {
		unsigned long long due = resource_sampler_next_due_ns(s), now = mono_ns();

		if (now < due) {
			struct timespec ts = { 0, (long)((due - now) % 1000000000ULL) };

			ts.tv_sec = (time_t)((due - now) / 1000000000ULL);
			nanosleep(&ts, NULL);
			continue;
		}
		if (resource_sampler_poll(s) != 0)
			break;
		done++;
	}
	resource_sampler_summary(s, stderr);
	rc = resource_sampler_stats(s)->write_errors ? 1 : 0;
	resource_sampler_close(s);
	return rc;
}
