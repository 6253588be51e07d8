// SPDX-License-Identifier: MIT
/* Command line of `pmetrics record`. */
#include "record.h"
#include "cli.h"
#include "resources.h"
#include "profile/report.h"
#include "python_probe.h"
#include "sampler.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void record_usage(FILE *out)
{
	fprintf(out,
"Usage: pmetrics record [OPTIONS] --pid PID\n"
"       pmetrics record [OPTIONS] -- COMMAND [ARGS...]\n"
"       pmetrics record --resources [OPTIONS] [--pid PID | -- COMMAND...]\n"
"\n"
"Times function calls of a running process (or a command it starts) from\n"
"the kernel, with uprobes, and appends one CSV row per completed call:\n"
"state name, wall-clock start (ns since the epoch), duration (ns). The\n"
"traced program needs no change and no restart.\n"
"\n"
"Target (one is required, except with --resources alone):\n"
"  -p, --pid PID            attach to a running process: all its threads,\n"
"                           also threads and child processes created later\n"
"  -- COMMAND [ARGS...]     start COMMAND with the probes already in place\n"
"                           (a call first thing in main is seen); the\n"
"                           capture ends when it exits\n"
"      --no-children        trace only the target process, not children it\n"
"                           forks after attach (probes then trap only in the\n"
"                           target: cheaper for other processes)\n"
"\n"
"Probes:\n"
"  -P, --probe STATE=TARGET  time calls of TARGET as rows named STATE;\n"
"                           repeatable. TARGET is BINARY:SYMBOL where BINARY\n"
"                           is a path, a file name or soname the\n"
"                           target maps (libc.so.6), or empty for the main\n"
"                           executable (:SYMBOL); or py:MODULE:QUALNAME for a\n"
"                           Python function (at most 8 py: probes).\n"
"                           STATE: letters, digits and _.\n"
"      --preset robot-server  the robot server's two probes:\n"
"                           ANALYZING_PROTOCOL and GETTING_CACHED_ANALYSIS;\n"
"                           alone, with --python-hook watch where it can run\n"
"                           (-v says which hook and why)\n"
"  Python (py:MODULE:QUALNAME, CPython 3.8-3.13, found and version-detected\n"
"  in the executable or its libpythonX.Y.so, stripped or not): MODULE is\n"
"  the dotted module (matched against the code's file name, so\n"
"  site-packages and zips work), QUALNAME is Class.method or\n"
"  outer.<locals>.inner. A coroutine gives one row from its first step to\n"
"  its final return or raise, at any await depth, on every version; a\n"
"  task, a gathered or cancelled one too. Children are followed as for\n"
"  native probes.\n"
"      --python-hook HOOK   coroutines (default): only where coroutines run,\n"
"                           are made and freed; plain calls cost nothing and\n"
"                           plain functions are not timed. calls: also every\n"
"                           Python function call made through C (3.8-3.10:\n"
"                           every call) and, up to 3.11, generators in for\n"
"                           loops; each such call pays a uprobe trap, timed\n"
"                           or not. 3.11+ inline calls between Python\n"
"                           functions: there a plain function is timed only\n"
"                           when called from C (map(), callbacks, threads)\n"
"                           watch: hardware watchpoints on each timed\n"
"                           function's own code object (CPython 3.10+,\n"
"                           async def, at most 2 functions), set in each\n"
"                           process once the function's module has run:\n"
"                           only timed calls trap; untimed code costs\n"
"                           nothing. Needs watchpoints that fire (not every\n"
"                           virtual machine's do: pmetrics checks)\n"

"\n"
"Resources (system_resource_data, as the psutil tracker service wrote it):\n"
"      --resources          also sample per-process CPU time and memory from\n"
"                           BPF: one row per matching process per interval,\n"
"                           the first at once. Without a target or probes it\n"
"                           watches the whole system; with --pid or a COMMAND,\n"
"                           the target and its children (all of them, or\n"
"                           those matching --process-filter). Also writes\n"
"                           memory_series_data (uptime, MemAvailable, RSS).\n"
"                           With probes, every span also gets a row in\n"
"                           robot_context_resources: its thread's on-CPU,\n"
"                           run-queue and blocked time, context switches,\n"
"                           migrations, page faults, RSS at start/end/peak\n"
"      --interval SECONDS   time between polls, from 1 to 86400 (1 day):\n"
"                           10, 2.5, 10s; default 10 or\n"
"                           $OT_SYSTEM_RESOURCE_TRACKER_REFRESH_INTERVAL\n"
"      --process-filter GLOB  keep processes whose command line matches GLOB\n"
"                           (fnmatch: * also matches /); repeatable; replaces\n"
"                           $OT_SYSTEM_RESOURCE_TRACKER_PROCESS_FILTERS\n"
"                           (default '/opt/opentrons*,python3*')\n"
"                           With --resources the tracker's other variables\n"
"                           are read too (never without it):\n"
"                           ..._STORAGE_DIR (used when -o is not given; must\n"
"                           be absolute, so must -o be with --resources) and\n"
"                           ..._LOGGING_LEVEL. Flags override the environment.\n"
"                           Under systemd (Type=notify) READY=1 is sent once\n"
"                           everything is attached.\n"
"\n"
"Profile (profile_stacks, profile_samples, profile_lost, profile_processes,\n"
"  profile_spans: pmetrics report DIR):\n"
"      --sample[=HZ]        sample the target and its followed children on the\n"
"                           CPU, HZ times a second per CPU (default %d, at most\n"
"                           %d or the kernel's perf_event_max_sample_rate if\n"
"                           lower): native, kernel and Python stacks (CPython\n"
"                           3.8-3.13), each with the span states whose probed\n"
"                           function (native or py:) is on it. BPF where the\n"
"                           kernel runs it on perf events, else perf_event_open\n"
"                           (pmetrics check: CPU sampling). Probes are optional\n"
"      --off-cpu            also record the time threads wait off the CPU, with\n"
"                           the stack where they went off (a suspended\n"
"                           coroutine's wait is its event loop's, not its own)\n"
"      --report[=FORMATS]   when the capture ends, write its profile's outputs\n"
"                           into the -o DIR as pmetrics report DIR does:\n"
"                           folded, pprof, svg, trace or all (the default),\n"
"                           or a list: --report=svg,pprof\n"
"\n"
"Session:\n"
"  -d, --duration TIME      stop after TIME (500ms, 30s, 5m, 1h), from 1ms\n"
"                           to 8760h (1 year); default: until Ctrl-C,\n"
"                           SIGTERM or the target exits. A started COMMAND\n"
"                           still running then gets SIGTERM (named if it\n"
"                           outlives it by a second)\n"
"  -o, --output-dir DIR     where the CSV files go, created if missing\n"
"                           (default " DEFAULT_OUTPUT_DIR ")\n"
"      --layout LAYOUT      context (robot_context_data, default) or\n"
"                           activity (robot_activity_data, quoted, CRLF)\n"
"      --ringbuf-size MB    kernel-to-loader buffer, native and py: spans and\n"
"                           samples each (default %d, power of 2); raise it\n"
"                           when the summary counts ringbuf_full losses\n"
"      --btf FILE           this kernel's BTF, for a kernel built without it\n"
"                           (spans work without; their resource context\n"
"                           needs it)\n"
"  -v, --verbose            libbpf's log, attach details and timings, and\n"
"                           the kernel memory the capture's BPF maps lock\n"
"  -h, --help               this text\n"
"\n"
"Files (appended to, never truncated; header file rewritten):\n"
"  DIR/robot_context_data          ANALYZING_PROTOCOL,1718739269730290312,14028043893\n"
"  DIR/robot_context_data_headers  state_name,function_start_time,duration\n"
"  DIR/system_resource_data        query_time,command,running_since,\n"
"                                  user_cpu_time,system_cpu_time,memory_percent\n"
"  DIR/memory_series_data          query_time,system_uptime_hrs,\n"
"                                  system_avail_mem_mb,command,mem_rss_mb\n"
"  DIR/robot_context_resources     state_name,function_start_time,duration,\n"
"                                  oncpu_ns,runq_wait_ns,blocked_ns,\n"
"                                  voluntary_switches,involuntary_switches,\n"
"                                  migrations,minor_faults,major_faults,\n"
"                                  rss_start_kb,rss_end_kb,rss_peak_kb\n"
"\n"
"Examples:\n"
"  pmetrics record --pid 4242 \\\n"
"      --probe ANALYZING_PROTOCOL=/opt/app/bin/server:analyze_protocol \\\n"
"      --probe GETTING_CACHED_ANALYSIS=libanalysis.so:get_cached_analysis \\\n"
"      --duration 60s -o /data/performance_metrics_data\n"
"  pmetrics record --probe ANALYZING_PROTOCOL=:analyze -- ./server --port 31950\n"
"  pmetrics record --pid $(pidof -s python3) --preset robot-server --duration 10m\n"
"  pmetrics record --resources --interval 10s \\\n"
"      --process-filter '/opt/opentrons*' --process-filter 'python3*'\n"
"  pmetrics record --resources --interval 1 --pid 4242 --duration 5m\n"
"  pmetrics record --resources --probe ANALYZING_PROTOCOL=:analyze -- ./server\n"
"\n"
"On exit a summary goes to stderr: per state the count and min/mean/max\n"
"duration, spans lost, and calls still open that gave no row. Needs root\n"
"(CAP_BPF and CAP_PERFMON) and a kernel with BPF on uprobes; `pmetrics\n"
"check` says what this kernel allows, and record runs the same check first.\n",
		SAMPLER_DEFAULT_HZ, SAMPLER_MAX_HZ, DEFAULT_RINGBUF_MB);
}

#define usage(...) usage_error("record", __VA_ARGS__)

static int add_probe(struct record_opts *o, const char *arg)
{
	struct probe_spec *p;
	char err[1024];

	if (o->n_probes == SPAN_MAX_PROBES)
		return usage("too many --probe options (at most 64): %s", arg);
	p = &o->probes[o->n_probes];
	if (probe_spec_parse(arg, p, err, sizeof(err)) != 0)
		return usage("%s", err);
	if (p->kind == PROBE_PYTHON) {
		struct py_probe py = { .module = p->binary, .qualname = p->symbol };
		int n_python = 1;
		if (pyspan_probe_check(&py, err, sizeof(err)))
			return usage("%s", err);
		for (int i = 0; i < o->n_probes; i++)
			n_python += o->probes[i].kind == PROBE_PYTHON;
		if (n_python > PYSPAN_MAX_PROBES)
			return usage("too many py: probes (at most 8 per capture): %s", arg);
	}
	for (int i = 0; i < o->n_probes; i++)
		if (strcmp(o->probes[i].state, p->state) == 0 &&
		    strcmp(o->probes[i].target, p->target) == 0)
			return usage("--probe %s given twice: drop one", arg);
	o->n_probes++;
	return 0;
}

static int add_preset(struct record_opts *o, const char *name)
{
	static const char *const robot_server[] = {
		"ANALYZING_PROTOCOL=py:robot_server.protocols.protocol_analyzer:ProtocolAnalyzer.analyze",
		"GETTING_CACHED_ANALYSIS=py:robot_server.protocols.router:"
		"create_protocol.<locals>._get_cached_protocol_analysis",
	};
	int ret = 0;

	if (strcmp(name, "robot-server") != 0)
		return usage("unknown preset '%s': the only preset is robot-server", name);
	for (size_t i = 0; i < 2 && !ret; i++) {
		ret = add_probe(o, robot_server[i]);
		if (!ret)
			o->probes[o->n_probes - 1].known_async = true;
	}
	o->preset_robot_server = true;
	return ret;
}

static bool is_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

static int parse_pid(const char *arg, pid_t *pid)
{
	char *end;
	long v;

	/* digits only: strtol would also take " 1" and "+1" */
	if (!is_digits(arg))
		return -1;
	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v <= 0 || v > 4194304)
		return -1;
	*pid = (pid_t)v;
	return 0;
}

static int parse_ringbuf(const char *arg, uint64_t *bytes)
{
	char *end;
	unsigned long mb = strtoul(arg, &end, 10);

	if (end == arg || *end || mb == 0 || mb > 1024 || (mb & (mb - 1)))
		return -1;
	*bytes = (uint64_t)mb << 20;
	return 0;
}

enum { OPT_NO_CHILDREN = 256, OPT_LAYOUT, OPT_PRESET, OPT_BTF, OPT_RINGBUF,
       OPT_RESOURCES, OPT_INTERVAL, OPT_FILTER, OPT_BENCH_FLOOR, OPT_PYTHON_HOOK,
       OPT_SAMPLE, OPT_OFF_CPU, OPT_REPORT };

static const struct option long_opts[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "probe", required_argument, NULL, 'P' },
	{ "duration", required_argument, NULL, 'd' },
	{ "output-dir", required_argument, NULL, 'o' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "no-children", no_argument, NULL, OPT_NO_CHILDREN },
	{ "layout", required_argument, NULL, OPT_LAYOUT },
	{ "preset", required_argument, NULL, OPT_PRESET },
	{ "python-hook", required_argument, NULL, OPT_PYTHON_HOOK },
	{ "btf", required_argument, NULL, OPT_BTF },
	{ "ringbuf-size", required_argument, NULL, OPT_RINGBUF },
	{ "resources", no_argument, NULL, OPT_RESOURCES },
	{ "interval", required_argument, NULL, OPT_INTERVAL },
	{ "process-filter", required_argument, NULL, OPT_FILTER },
	{ "bench-floor", no_argument, NULL, OPT_BENCH_FLOOR }, /* bench only */
	{ "sample", optional_argument, NULL, OPT_SAMPLE },
	{ "off-cpu", no_argument, NULL, OPT_OFF_CPU },
	{ "report", optional_argument, NULL, OPT_REPORT },
	{ NULL, 0, NULL, 0 },
};

/* --resources, --interval, --process-filter: the resource sampler. */
static int parse_resource_option(struct record_opts *o, int c, const char *arg)
{
	struct resource_opts scratch = { 0 };
	char err[512];

	if (c == OPT_RESOURCES) {
		o->resources = true;
		return 0;
	}
	if (c == OPT_INTERVAL) {
		if (resource_opts_set_interval(&scratch, arg, err, sizeof(err)))
			return usage("%s", err);
		o->resource_interval_s = scratch.interval_s;
		return 0;
	}
	if (resource_opts_add_filter(&scratch, arg, err, sizeof(err)))
		return usage("%s", err);
	if (o->n_resource_filters == (int)(sizeof(o->resource_filters) / sizeof(o->resource_filters[0])))
		return usage("too many --process-filter globs: %s", arg);
	o->resource_filters[o->n_resource_filters++] = arg;
	return 0;
}

/* With --resources the tracker's environment is checked now, with the
 * flags over it, so a bad value is a usage error before anything starts;
 * its storage dir serves when -o is not given. */
static int check_resource_options(struct record_opts *o)
{
	struct resource_opts ro;
	char err[512];

	if (!o->resources) {
		if (o->n_resource_filters || o->resource_interval_s > 0)
			return usage("--interval and --process-filter need --resources");
		return 0;
	}
	if (resource_opts_for_record(&ro, o->resource_filters, o->n_resource_filters,
				     o->resource_interval_s, err, sizeof(err)))
		return usage("%s", err);
	if (!o->output_dir && getenv("OT_SYSTEM_RESOURCE_TRACKER_STORAGE_DIR"))
		o->output_dir = ro.storage_dir;
	if (o->output_dir && o->output_dir[0] != '/')
		return usage("--output-dir must be an absolute path with --resources, "
				   "as the tracker's storage dir, not '%s'", o->output_dir);
	return 0;
}

static int parse_one(struct record_opts *o, int c, const char *arg)
{
	char err[256];

	switch (c) {
	case 'p':
		/* one process per capture: a second --pid is no second target */
		if (o->pid)
			return usage("--pid given twice (%d, then %s): one capture traces one process "
				     "and its children; run one pmetrics per process", (int)o->pid, arg);
		if (parse_pid(arg, &o->pid))
			return usage("bad --pid '%s': give a process ID, e.g. --pid $(pidof -s server)", arg);
		return 0;
	case 'P':
		return add_probe(o, arg);
	case 'd':
		if (duration_option_parse(arg, &o->duration_ns, err, sizeof(err)))
			return usage("%s", err);
		return 0;
	case 'o':
		if (!*arg)
			return usage("empty --output-dir");
		o->output_dir = arg;
		return 0;
	case 'v':
		o->verbose = true;
		return 0;
	case OPT_NO_CHILDREN:
		o->follow_children = false;
		return 0;
	case OPT_LAYOUT:
		if (csv_layout_parse(arg, &o->layout))
			return usage("bad --layout '%s': use context or activity", arg);
		return 0;
	case OPT_PRESET:
		return add_preset(o, arg);
	case OPT_PYTHON_HOOK:
		if (strcmp(arg, "calls") == 0)
			o->python_hook = PYTHON_HOOK_CALLS;
		else if (strcmp(arg, "coroutines") == 0)
			o->python_hook = PYTHON_HOOK_COROUTINES;
		else if (strcmp(arg, "watch") == 0)
			o->python_hook = PYTHON_HOOK_WATCH;
		else
			return usage("bad --python-hook '%s': use coroutines, calls or watch", arg);
		return 0;
	case OPT_BTF:
		if (!*arg)
			return usage("empty --btf: give the path of this kernel's BTF file");
		o->btf_path = arg;
		return 0;
	case OPT_RINGBUF:
		if (parse_ringbuf(arg, &o->ringbuf_bytes))
			return usage("bad --ringbuf-size '%s': MiB, a power of two from 1 to 1024", arg);
		return 0;
	case OPT_BENCH_FLOOR:
		o->bench_floor = true;
		return 0;
	case OPT_SAMPLE:
		o->sample_hz = SAMPLER_DEFAULT_HZ;
		if (arg && sampler_parse_hz(arg, sampler_max_rate(), &o->sample_hz, err, sizeof(err)))
			return usage("%s", err);
		return 0;
	case OPT_OFF_CPU:
		o->off_cpu = true;
		return 0;
	case OPT_REPORT:
		o->report_formats = arg ? arg : "all";
		if (!report_formats_valid(o->report_formats))
			return usage("unknown --report format '%s': use folded, pprof, svg, trace or "
				     "all, or a list: --report=svg,pprof", cli_printable(o->report_formats));
		return 0;
	case OPT_RESOURCES:
	case OPT_INTERVAL:
	case OPT_FILTER:
		return parse_resource_option(o, c, arg);
	default:
		return usage("unknown option");
	}
}

static bool has_python_probe(const struct record_opts *o)
{
	for (int i = 0; i < o->n_probes; i++)
		if (o->probes[i].kind == PROBE_PYTHON)
			return true;
	return false;
}

/* The option getopt refused (BAD, as given): unknown, missing its value,
 * or given a value it takes none of. */
static int bad_option(const char *bad)
{
	for (const struct option *l = long_opts; optopt && l->name; l++) {
		if (l->val != optopt)
			continue;
		if (l->has_arg == no_argument)
			return usage("option --%s takes no value: %s", l->name, cli_printable(bad));
		return usage("option %s needs a value", cli_printable(bad));
	}
	return usage("unknown option %s", cli_printable(bad));
}

int record_parse_args(int argc, char **argv, struct record_opts *o)
{
	int c, ret;

	memset(o, 0, sizeof(*o));
	o->follow_children = true;
	o->ringbuf_bytes = (uint64_t)DEFAULT_RINGBUF_MB << 20;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+p:P:d:o:vh", long_opts, NULL)) != -1) {
		if (c == 'h') {
			record_usage(stdout);
			return -1;
		}
		if (c == '?' || c == ':')
			return bad_option(argv[optind - 1]);
		/* a rate given apart would start the command to run */
		if (c == OPT_SAMPLE && !optarg && optind < argc && is_digits(argv[optind]))
			return usage("--sample takes its rate after '=': --sample=%s (apart, %s is "
				     "read as another argument: the command to run, or an "
				     "unexpected one)", cli_printable(argv[optind]),
				     cli_printable(argv[optind]));
		if (c == OPT_REPORT && !optarg && optind < argc && report_formats_valid(argv[optind]))
			return usage("--report takes its formats after '=': --report=%s (apart, %s "
				     "is read as the command to run)", cli_printable(argv[optind]),
				     cli_printable(argv[optind]));
		ret = parse_one(o, c, optarg);
		if (ret)
			return ret;
	}
	if (optind < argc)
		o->command = &argv[optind];
	if (o->pid && o->command)
		return usage("give either --pid or a command after --, not both");
	if (!o->pid && !o->command && (!o->resources || o->n_probes || o->sample_hz || o->off_cpu))
		return usage("no target: give --pid PID or -- COMMAND [ARGS...]%s",
			     o->resources && (o->sample_hz || o->off_cpu) ?
			     " (--resources alone samples the whole machine; --sample and "
			     "--off-cpu need a target)" : "");
	if (!o->pid && !o->command && !o->follow_children)
		return usage("--no-children needs a target (--pid or a command): without one, "
			     "--resources samples every process anyway");
	if (o->report_formats && !o->sample_hz && !o->off_cpu)
		return usage("--report writes the profile of --sample or --off-cpu (flame graph, "
			     "pprof, timeline): add one of them");
	if (o->n_probes == 0 && !o->resources && !o->sample_hz && !o->off_cpu)
		return usage("no probes: add --probe STATE=BINARY:SYMBOL or --preset robot-server");
	if (o->python_hook != PYTHON_HOOK_DEFAULT && !has_python_probe(o))
		return usage("--python-hook chooses what py: probes trap, and none is given: add "
			     "--probe STATE=py:MODULE:QUALNAME or drop --python-hook");
	ret = check_resource_options(o);
	if (!o->output_dir)
		o->output_dir = DEFAULT_OUTPUT_DIR;
	return ret;
}
