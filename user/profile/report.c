// SPDX-License-Identifier: MIT
/* pmetrics report DIR: options, the capture read and cut, each output
 * written whole into DIR (or -o OUTDIR) through output_dir.h. */
#include "report.h"
#include "cli.h"
#include "output_dir.h"
#include "outputs.h"
#include "profile_model.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_SPANS 64
#define MAX_PIDS 64
/* Processes a --pid refusal lists */
#define PIDS_LISTED 8

enum report_format {
	FMT_FOLDED = 1 << 0,
	FMT_PPROF = 1 << 1,
	FMT_SVG = 1 << 2,
	FMT_TRACE = 1 << 3,
	FMT_ALL = FMT_FOLDED | FMT_PPROF | FMT_SVG | FMT_TRACE,
};

static const struct {
	const char *name;
	enum report_format fmt;
	const char *file;
} formats[] = {
	{ "folded", FMT_FOLDED, "profile.folded" },
	{ "pprof", FMT_PPROF, "profile.pb.gz" },
	{ "svg", FMT_SVG, "profile.svg" },
	{ "trace", FMT_TRACE, "trace.json" },
};

struct report_opts {
	const char *dir, *out_dir;
	unsigned formats;
	const char *spans[MAX_SPANS];
	size_t n_spans;
	uint32_t pids[MAX_PIDS];
	size_t n_pids;
	int kind;
	int weight; /* a profile_weight, or -1: by what the samples kept are */
	char filter[1024];
};

static void usage(FILE *out)
{
	fprintf(out,
"Usage: pmetrics report DIR [--format FORMAT] [--span STATE]... [--pid PID]...\n"
"                           [--kind KIND] [--weight WEIGHT] [-o OUTDIR]\n"
"\n"
"Turns the profile in capture directory DIR (profile_samples, profile_stacks,\n"
"profile_lost and profile_processes, written by record's sampler) into:\n"
"  profile.folded  folded stacks, one line per stack: root;...;leaf COUNT\n"
"                  (flamegraph.pl, inferno, speedscope)\n"
"  profile.pb.gz   pprof (go tool pprof, pprof viewers): samples, CPU and\n"
"                  off-CPU time, span states as labels\n"
"  profile.svg     an interactive flame graph: hover, click to zoom, search,\n"
"                  span-state filter; self-contained, no network needed\n"
"  trace.json      a Chrome trace-event timeline (Perfetto UI, chrome://tracing):\n"
"                  spans, samples per thread, the resource series as counters\n"
"When the samples kept are of several processes, each stack starts with a\n"
"frame naming its process: \"pid 4242: python3 -m robot_server...\".\n"
"\n"
"Options:\n"
"  --format F     folded, pprof, svg, trace or all (default), or a list: svg,pprof\n"
"  --span STATE   only samples taken inside span STATE (repeatable: inside any)\n"
"  --pid PID      only samples of process PID (repeatable: of any; the root\n"
"                 frames of a report of several processes name their PIDs)\n"
"  --kind K       on-cpu or off-cpu only (default: both)\n"
"  --weight W     what a stack's width in the folded stacks and the flame graph\n"
"                 (and pprof's default view) stands for: samples, or time (an\n"
"                 on-CPU sample its period, an off-CPU one its wait; folded\n"
"                 counts in microseconds). Default: time when off-CPU samples\n"
"                 are kept (a count would make a 1 us wait weigh what a 1 s one\n"
"                 does), else samples\n"
"  -o OUTDIR      write there (created when missing) instead of into DIR\n"
"  -h, --help     this text\n"
"\n"
"Examples:\n"
"  pmetrics report /data/performance_metrics_data\n"
"  pmetrics report DIR --span ANALYZING_PROTOCOL --format svg -o /tmp/analysis\n"
"\n"
"Exit status: 0 written; 1 nothing to report (no samples, none inside the\n"
"--span states) or an unreadable or corrupt capture; 2 usage error.\n");
}

static int parse_formats(struct report_opts *o, const char *arg)
{
	char buf[256], *save = NULL;

	if (strlen(arg) >= sizeof(buf))
		return -1;
	strcpy(buf, arg);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		size_t i;
		if (strcmp(t, "all") == 0) {
			o->formats |= FMT_ALL;
			continue;
		}
		for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
			if (strcmp(t, formats[i].name) == 0)
				break;
		if (i == sizeof(formats) / sizeof(formats[0]))
			return -1;
		o->formats |= formats[i].fmt;
	}
	return o->formats ? 0 : -1;
}

static void append_filter(struct report_opts *o, const char *opt, const char *val)
{
	size_t len = strlen(o->filter);

	snprintf(o->filter + len, sizeof(o->filter) - len, "%s%s %s", len ? " " : "", opt, val);
}

/* Returns 1 to go on, 0 after --help, or EXIT_USAGE. */
static int parse_args(struct report_opts *o, int argc, char **argv)
{
	bool options = true;

	o->kind = -1;
	o->weight = -1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;
		const char *eq = options && strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL;
		char name[16];
		bool joined = false;

		/* --format=svg as well as --format svg */
		if (eq && eq > a + 2 && (size_t)(eq - a) < sizeof(name)) {
			snprintf(name, sizeof(name), "%.*s", (int)(eq - a), a);
			a = name;
			val = eq + 1;
			joined = true;
		}

		if (options && !joined && (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)) {
			usage(stdout);
			return 0;
		}
		if (eq && eq == a + 2) /* "--=x" names no option */
			return usage_error("report", "unknown option '%s'", cli_printable(a));
		if (options && strcmp(a, "--") == 0) {
			options = false;
			continue;
		}
		if (!options || a[0] != '-' || a[1] == '\0') {
			if (o->dir)
				return usage_error("report", "one capture directory only: '%s' and '%s'",
						   cli_printable(o->dir), cli_printable(a));
			o->dir = a;
			continue;
		}
		bool takes = strcmp(a, "--format") == 0 || strcmp(a, "--span") == 0 ||
			     strcmp(a, "--pid") == 0 || strcmp(a, "--kind") == 0 ||
			     strcmp(a, "--weight") == 0 || strcmp(a, "-o") == 0;
		if (!takes)
			return usage_error("report", "unknown option '%s'", cli_printable(a));
		if (!val)
			return usage_error("report", "%s needs a value", a);
		i += !joined;
		if (strcmp(a, "--format") == 0) {
			if (parse_formats(o, val))
				return usage_error("report", "unknown --format '%s': use folded, pprof, "
						   "svg, trace or all", cli_printable(val));
		} else if (strcmp(a, "--span") == 0) {
			if (!profile_state_name_ok(val, strlen(val)))
				return usage_error("report", "bad --span '%s': a span state is letters, "
						   "digits and _, e.g. ANALYZING_PROTOCOL",
						   cli_printable(val));
			if (o->n_spans == MAX_SPANS)
				return usage_error("report", "at most %d --span", MAX_SPANS);
			o->spans[o->n_spans++] = val;
			append_filter(o, "--span", val);
		} else if (strcmp(a, "--pid") == 0) {
			uint64_t pid;

			if (profile_decimal_parse(val, strlen(val), INT32_MAX, &pid) || pid == 0)
				return usage_error("report", "bad --pid '%s': give a process ID, e.g. "
						   "--pid 4242", cli_printable(val));
			if (o->n_pids == MAX_PIDS)
				return usage_error("report", "at most %d --pid", MAX_PIDS);
			o->pids[o->n_pids++] = (uint32_t)pid;
			append_filter(o, "--pid", val);
		} else if (strcmp(a, "--kind") == 0) {
			enum profile_kind k;
			if (profile_kind_parse(val, strlen(val), &k))
				return usage_error("report", "unknown --kind '%s': use on-cpu or off-cpu",
						   cli_printable(val));
			o->kind = (int)k;
			append_filter(o, "--kind", val);
		} else if (strcmp(a, "--weight") == 0) {
			if (strcmp(val, "samples") == 0)
				o->weight = PROFILE_WEIGHT_SAMPLES;
			else if (strcmp(val, "time") == 0)
				o->weight = PROFILE_WEIGHT_TIME;
			else
				return usage_error("report", "unknown --weight '%s': use samples or time",
						   cli_printable(val));
		} else {
			if (!*val || cli_has_control_char(val))
				return usage_error("report", "bad -o '%s'", cli_printable(val));
			o->out_dir = val;
		}
	}
	if (!o->dir)
		return usage_error("report", "which capture directory? e.g. pmetrics report "
				   "/data/performance_metrics_data");
	if (!o->formats)
		o->formats = FMT_ALL;
	return 1;
}

static void warn_damage(const struct report_opts *o, const struct profile *p)
{
	if (p->bad_rows)
		cli_error("%s: %" PRIu64 " malformed row%s skipped", o->dir, p->bad_rows,
			  p->bad_rows == 1 ? "" : "s");
	if (p->bad_stack_rows)
		cli_error("%s: %" PRIu64 " %s row%s whose frames do not match the id skipped "
			  "(damaged by a crash)", o->dir, p->bad_stack_rows, PROFILE_STACKS_FILE,
			  p->bad_stack_rows == 1 ? "" : "s");
	if (p->repaired_stack_rows)
		cli_error("%s: %" PRIu64 " %s row%s with a control character or an empty frame "
			  "(not written by pmetrics) shown with '?' or %s", o->dir,
			  p->repaired_stack_rows, PROFILE_STACKS_FILE,
			  p->repaired_stack_rows == 1 ? "" : "s", PROFILE_NO_STACK);
	if (p->torn_rows)
		cli_error("%s: %" PRIu64 " file%s ended in a torn row (cut back)", o->dir,
			  p->torn_rows, p->torn_rows == 1 ? "" : "s");
	if (p->processes_error[0])
		cli_error("%s: processes named by pid alone: %s", o->dir, p->processes_error);
}

/* A --span state no sample was taken in: one line naming those that are. */
static int check_spans(const struct report_opts *o, const struct profile *p)
{
	char have[1024] = "";

	for (size_t i = 0; i < o->n_spans; i++) {
		if (intern_find(&p->states, o->spans[i], strlen(o->spans[i])) >= 0)
			continue;
		for (size_t s = 0; s < p->states.n; s++) {
			size_t len = strlen(have);
			snprintf(have + len, sizeof(have) - len, "%s%s", len ? ", " : "",
				 p->states.str[s]);
		}
		cli_error("--span %s: no sample in %s was taken inside %s (%s%s)", o->spans[i],
			  o->dir, o->spans[i], *have ? "states there: " : "no sample is inside any span",
			  have);
		return EXIT_RUNTIME;
	}
	return 0;
}

static bool has_pid(const struct profile *p, uint32_t pid)
{
	for (size_t i = 0; i < p->n_samples; i++)
		if (p->samples[i].pid == pid)
			return true;
	return false;
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The processes of P's samples, the first PIDS_LISTED by pid as their
 * root frames show them, into HAVE. */
static void list_processes(const struct profile *p, char *have, size_t size)
{
	uint32_t *pids = malloc((p->n_samples ? p->n_samples : 1) * sizeof(*pids));
	char frame[PROFILE_PROCESS_FRAME_MAX];
	size_t n = 0, len = 0, listed = 0;

	have[0] = '\0';
	if (!pids)
		return;
	for (size_t i = 0; i < p->n_samples; i++)
		pids[n++] = p->samples[i].pid;
	if (n)
		qsort(pids, n, sizeof(*pids), u32_cmp);
	for (size_t i = 0, flen; i < n; i++) {
		if (i > 0 && pids[i] == pids[i - 1])
			continue;
		if (listed++ == PIDS_LISTED)
			break;
		profile_process_frame(p, pids[i], profile_process_at(p, pids[i], UINT64_MAX), frame,
				      &flen);
		snprintf(have + len, size - len, "%s%s", len ? ", " : "", frame);
		len += strlen(have + len);
	}
	if (listed > PIDS_LISTED)
		snprintf(have + len, size - len, ", ...");
	free(pids);
}

/* A --pid of which no sample was taken: one line naming the processes
 * that are there. */
static int check_pids(const struct report_opts *o, const struct profile *p)
{
	char have[PIDS_LISTED * (PROFILE_PROCESS_FRAME_MAX + 2) + 8];

	for (size_t i = 0; i < o->n_pids; i++) {
		if (has_pid(p, o->pids[i]))
			continue;
		list_processes(p, have, sizeof(have));
		cli_error("--pid %" PRIu32 ": no sample in %s is of process %" PRIu32 " (%s%s)",
			  o->pids[i], o->dir, o->pids[i], *have ? "processes there: " : "no sample at all",
			  have);
		return EXIT_RUNTIME;
	}
	return 0;
}

static int build(unsigned fmt, const struct profile *p, const struct report_view *v,
		 struct out_buf *b, uint64_t *rows_skipped, char *err, size_t errlen)
{
	int rc;

	switch (fmt) {
	case FMT_FOLDED:
		rc = profile_folded(p, v, b);
		break;
	case FMT_PPROF:
		return profile_pprof(p, v, b, err, errlen);
	case FMT_SVG:
		rc = profile_svg(p, v, b);
		break;
	default:
		return profile_trace(p, v, b, rows_skipped, err, errlen);
	}
	if (rc)
		snprintf(err, errlen, "out of memory");
	return rc;
}

/* Every output is built and staged before any file is replaced, so
 * input that one of them cannot take (a span file the timeline cannot
 * read), or a file that cannot be written, leaves an earlier report's
 * files as they were, all of them. Only a rename failing after others
 * (a same-directory rename: not seen in practice) would leave a mix. */
static int write_outputs(const struct report_opts *o, const struct profile *p,
			 enum profile_weight weight)
{
	enum { N = sizeof(formats) / sizeof(formats[0]) };
	struct report_view v = { .source = o->dir, .filter = o->filter, .states = o->spans,
				 .n_states = o->n_spans, .pids = o->pids, .n_pids = o->n_pids,
				 .weight = weight };
	char err[512], path[4352], tmp[N][PATH_MAX];
	struct out_buf b[N] = { 0 };
	bool staged[N] = { false };
	uint64_t skipped = 0;
	struct output_dir *d = output_dir_open(o->out_dir ? o->out_dir : o->dir, err, sizeof(err));
	int rc = 0;

	if (!d) {
		cli_error("%s", err);
		return EXIT_RUNTIME;
	}
	for (size_t i = 0; i < N && rc == 0; i++)
		if ((o->formats & formats[i].fmt) &&
		    build(formats[i].fmt, p, &v, &b[i], &skipped, err, sizeof(err)))
			rc = EXIT_RUNTIME;
	if (skipped)
		cli_error("%s: %" PRIu64 " malformed row%s of its span and resource files left out "
			  "of the timeline", o->dir, skipped, skipped == 1 ? "" : "s");
	for (size_t i = 0; i < N && rc == 0; i++) {
		struct stat id;

		if (!(o->formats & formats[i].fmt))
			continue;
		if (output_dir_stage(d, formats[i].file, b[i].s ? b[i].s : "", b[i].len, &id,
				     tmp[i], sizeof(tmp[i]), err, sizeof(err)))
			rc = EXIT_RUNTIME;
		staged[i] = rc == 0;
	}
	for (size_t i = 0; i < N; i++) {
		bool was_new;

		if (!staged[i])
			continue;
		if (rc) {
			output_dir_unstage(d, tmp[i]);
			continue;
		}
		if (output_dir_commit(d, tmp[i], formats[i].file, &was_new, err, sizeof(err))) {
			rc = EXIT_RUNTIME;
			continue;
		}
		output_dir_file_path(d, formats[i].file, path, sizeof(path));
		printf("wrote %s\n", path);
	}
	if (rc)
		cli_error("%s", err);
	for (size_t i = 0; i < N; i++)
		out_free(&b[i]);
	output_dir_close(d);
	return rc;
}

static void print_seconds(const char *what, uint64_t ns)
{
	printf("%s %.3f s", what, (double)ns / 1e9);
}

/* How the widths were weighed, when by time, and how to have the other. */
static void print_weight(const struct report_opts *o, const struct profile *p,
			 enum profile_weight weight)
{
	if (weight != PROFILE_WEIGHT_TIME || !(o->formats & (FMT_FOLDED | FMT_SVG | FMT_PPROF)))
		return;
	printf("weighed by time:");
	if (p->kept_count[PROFILE_ON_CPU])
		print_seconds(" on-cpu", p->kept_weight[PROFILE_ON_CPU]);
	if (p->kept_count[PROFILE_OFF_CPU])
		print_seconds(p->kept_count[PROFILE_ON_CPU] ? ", off-cpu" : " off-cpu",
			      p->kept_weight[PROFILE_OFF_CPU]);
	printf(" (folded counts are microseconds%s)\n",
	       o->weight < 0 ? "; pmetrics report --weight samples counts samples instead" : "");
}

static void print_summary(const struct report_opts *o, const struct profile *p,
			  enum profile_weight weight)
{
	char roots_said[64] = "";
	size_t stacks = 0, roots = 0;

	/* sorted by stack text: one root's stacks are adjacent */
	for (size_t i = 0; i < p->n_aggs; i++) {
		const struct profile_stack *s = &p->stacks[p->aggs[i].stack];

		stacks += i == 0 || p->aggs[i].stack != p->aggs[i - 1].stack;
		roots += i == 0 || s->frames[0] != p->stacks[p->aggs[i - 1].stack].frames[0];
	}
	if (p->by_process)
		snprintf(roots_said, sizeof(roots_said), " under %zu root frames naming processes", roots);
	printf("%" PRIu64 " sample%s (on-cpu %" PRIu64 ", off-cpu %" PRIu64 ") in %zu stack%s%s%s%s\n",
	       p->kept, p->kept == 1 ? "" : "s", p->kept_count[PROFILE_ON_CPU],
	       p->kept_count[PROFILE_OFF_CPU], stacks, stacks == 1 ? "" : "s", roots_said,
	       *o->filter ? ", " : "", o->filter);
	for (size_t i = 0; i < p->n_losses; i++) {
		const char *text = profile_loss_text(p->losses[i].reason);
		printf("lost: %" PRIu64 " %s%s%s%s\n", p->losses[i].count, p->losses[i].reason,
		       text ? " (" : "", text ? text : "", text ? ")" : "");
	}
	print_weight(o, p, weight);
}

static int run(const struct report_opts *o)
{
	struct profile_filter f = { .states = o->spans, .n_states = o->n_spans, .pids = o->pids,
				    .n_pids = o->n_pids, .kind = o->kind };
	enum profile_weight weight = PROFILE_WEIGHT_SAMPLES;
	struct profile p;
	char err[768];
	struct stat st;
	int missing = stat(o->dir, &st), rc;

	/* The capture directory, named with what report wants in it. */
	if (missing || !S_ISDIR(st.st_mode)) {
		cli_error("%s is not a capture directory (%s): give the -o DIR of a pmetrics "
			  "record --sample or --off-cpu", o->dir,
			  missing ? strerror(errno) : "not a directory");
		return EXIT_RUNTIME;
	}
	rc = profile_load(o->dir, &p, err, sizeof(err));
	if (rc) {
		cli_error("%s", err);
		profile_free(&p);
		return EXIT_RUNTIME;
	}
	warn_damage(o, &p);
	rc = check_spans(o, &p);
	if (rc == 0)
		rc = check_pids(o, &p);
	if (rc == 0 && profile_select(&p, &f)) {
		cli_error("out of memory");
		rc = EXIT_RUNTIME;
	}
	if (rc == 0 && p.n_samples == 0) {
		cli_error("%s: %s holds no sample (an idle target, or a capture without "
			  "--sample): nothing written", o->dir, PROFILE_SAMPLES_FILE);
		rc = EXIT_RUNTIME;
	} else if (rc == 0 && p.kept == 0) {
		cli_error("%s: none of its %zu samples is left after %s: nothing written", o->dir,
			  p.n_samples, o->filter);
		rc = EXIT_RUNTIME;
	}
	if (rc == 0)
		weight = o->weight >= 0 ? (enum profile_weight)o->weight
		       : p.kept_count[PROFILE_OFF_CPU] ? PROFILE_WEIGHT_TIME : PROFILE_WEIGHT_SAMPLES;
	if (rc == 0)
		rc = write_outputs(o, &p, weight);
	if (rc == 0)
		print_summary(o, &p, weight);
	profile_free(&p);
	return rc;
}

bool report_formats_valid(const char *formats)
{
	struct report_opts o;

	memset(&o, 0, sizeof(o));
	return parse_formats(&o, formats) == 0;
}

int report_capture(const char *dir, const char *formats)
{
	struct report_opts o;

	memset(&o, 0, sizeof(o));
	o.dir = dir;
	o.kind = -1;
	o.weight = -1;
	if (parse_formats(&o, formats))
		return EXIT_USAGE;
	return run(&o);
}

int report_main(int argc, char **argv)
{
	struct report_opts o;
	int rc;

	memset(&o, 0, sizeof(o));
	rc = parse_args(&o, argc, argv);
	if (rc != 1)
		return rc;
	return run(&o);
}
