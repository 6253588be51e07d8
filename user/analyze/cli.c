// SPDX-License-Identifier: MIT
/* pmetrics analyze: memory-leak trend analysis of exported
 * resourceMonitorReport events and of pmetrics' own memory series,
 * compatible with upstream's ODD memory usage analysis (formats.md s.3).
 * This file holds the command line: options, inputs, which output. */
#include "analyze.h"
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jsparse.h"
#include "model.h"
#include "readers.h"
#include "report.h"

#define SVG_POINTS_PER_KEY 1500
#define MAX_RULES 64
#define MAX_VERSIONS 256

static void usage(FILE *out)
{
	fputs(
"Usage: pmetrics analyze [options] INPUT...\n"
"\n"
"Does memory grow with system uptime? For every process key, the Pearson\n"
"correlation of (uptime hours, memory MB) over every sample, the mean memory\n"
"in uptime buckets, and whether the trend is significant; and the same for\n"
"the system's available memory (key odd-available-memory).\n"
"\n"
"INPUT is any mix of:\n"
"  FILE          JSON lines of resourceMonitorReport events (a Mixpanel\n"
"                export), plain or gzip-compressed\n"
"  DIR           a pmetrics capture directory: reads DIR/memory_series_data\n"
"                (all of it counts as version \"capture\": captures carry no\n"
"                appVersion)\n"
"  -             standard input (either format, gzip or not)\n"
"\n"
"Options may come before, between or after the inputs; -- ends them (what\n"
"follows is an input, even when it starts with a dash).\n"
"\n"
"Output (default): exactly what upstream's analysis prints, a header line\n"
"and JSON, versions newest first (semantic versions, 8.2.0 > 8.2.0-alpha.1).\n"
"\n"
"Options:\n"
"  --versions V1,V2,...  report these versions, in this order; a version with\n"
"                        no reports prints \"N/A - No data available\"\n"
"  --format json|text    text: a compact table per version, with the slope;\n"
"                        it says when memory or uptime did not vary\n"
"  --svg FILE            also write a chart: one panel per version and key,\n"
"                        points, bucket means and the fitted trend line\n"
"  --extended            add pValue, slopeMbPerHour and its 95% confidence\n"
"                        interval to each key of the JSON\n"
"  --p-value exact       (default) exact one-tailed Student-t p-value\n"
"  --p-value upstream    upstream's approximation 0.5*(df/(df+t^2))^(df/2),\n"
"                        several times too large; reproduces its output\n"
"  --aggregate REGEX=KEY fold process names matching REGEX (POSIX extended)\n"
"                        into KEY; checked in order, before the built-in rules\n"
"  --drop REGEX          leave out process names matching REGEX\n"
"  --no-default-rules    forget the built-in rules: renderer, zygote, utility\n"
"                        and uvicorn aggregation; dropping ^nmcli and\n"
"                        ^/usr/bin/python3\n"
"  --min-samples N       fewest samples for a key or a bucket (default 30)\n"
"  -v, --verbose         name every skipped line (FILE:LINE: reason)\n"
"  -h, --help            this text\n"
"\n"
"Only what upstream's query selects counts: resourceMonitorReport events\n"
"with appMode ODD; other lines are left out and counted on stderr. Lines\n"
"that cannot be used (not JSON to JSON.parse, no uptime) are skipped and\n"
"counted there too, -v names them. The exit status is 1 only when no input\n"
"gave a single usable sample.\n"
"\n"
"Examples:\n"
"  pmetrics analyze reports-*.jsonl.gz\n"
"  pmetrics analyze --versions 8.2.0-alpha.2,8.2.0-alpha.1 export.jsonl\n"
"  pmetrics analyze --format text --svg trends.svg export.jsonl\n"
"  pmetrics analyze export.jsonl --svg trends.svg -- -odd-name.jsonl\n"
"  pmetrics analyze /data/performance_metrics_data\n"
"  pmetrics analyze --p-value upstream export.jsonl | diff - upstream.txt\n"
"  pmetrics analyze --aggregate '^/usr/bin/node=node-processes' --drop '^sshd' x.jsonl\n"
"  zcat old.jsonl.gz | pmetrics analyze -v -\n",
		out);
}

struct cli {
	struct analyze_config cfg;
	struct report_opts ropts;
	int text;
	const char *svg;
	int no_default_rules;
	struct analyze_rule user_agg[MAX_RULES], user_drop[MAX_RULES];
	int n_user_agg, n_user_drop;
	struct analyze_rule agg[MAX_RULES + 8], drop[MAX_RULES + 8];
	char *version_buf;
	const char *versions[MAX_VERSIONS];
	const char **inputs; /* in command-line order */
	int n_inputs;
};

static int bad(const char *what, const char *fix)
{
	usage_error("analyze", "%s; %s", what, fix);
	return -1;
}

static int parse_versions(struct cli *c, const char *arg)
{
	char *tok, *save = NULL;

	free(c->version_buf);
	c->version_buf = strdup(arg);
	if (!c->version_buf)
		return bad("out of memory", "try again");
	c->cfg.n_versions = 0;
	for (tok = strtok_r(c->version_buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		while (*tok == ' ')
			tok++;
		if (!*tok)
			continue;
		if (c->cfg.n_versions == MAX_VERSIONS)
			return bad("too many --versions", "give at most 256");
		c->versions[c->cfg.n_versions++] = tok;
	}
	if (!c->cfg.n_versions)
		return bad("--versions is empty", "give a comma-separated list such as 8.2.0,8.1.0");
	c->cfg.versions = c->versions;
	return 0;
}

static int is_utf8(const char *s)
{
	struct jsparse_buf repaired = { 0 };
	int bad_bytes = utf8_repair(s, strlen(s), &repaired);

	jsparse_buf_free(&repaired);
	return !bad_bytes;
}

static int add_rule(struct cli *c, const char *arg, int aggregate)
{
	char err[300];
	struct analyze_rule *rule;
	char *pattern;

	if ((aggregate ? c->n_user_agg : c->n_user_drop) == MAX_RULES)
		return bad("too many rules", "give at most 64 --aggregate and 64 --drop");
	pattern = strdup(arg); /* lives until exit, like the compiled rule */
	if (!pattern)
		return bad("out of memory", "try again");
	rule = aggregate ? &c->user_agg[c->n_user_agg] : &c->user_drop[c->n_user_drop];
	if (aggregate) {
		char *eq = strrchr(pattern, '=');

		if (!eq || eq == pattern || !eq[1]) {
			free(pattern);
			return bad("--aggregate needs REGEX=KEY", "for example --aggregate '^node=node-processes'");
		}
		*eq = '\0';
		if (!is_utf8(eq + 1)) {
			free(pattern);
			return bad("the KEY of --aggregate is not UTF-8 text", "write it in UTF-8, as the report is");
		}
		if (!strcmp(eq + 1, ANALYZE_SYSTEM_KEY)) {
			free(pattern);
			return bad("the KEY of --aggregate cannot be " ANALYZE_SYSTEM_KEY
				   ", which holds the system's available memory", "pick another key name");
		}
		if (analyze_rule_compile(rule, pattern, eq + 1, err, sizeof(err))) {
			free(pattern);
			return bad(err, "write a POSIX extended regular expression");
		}
		c->n_user_agg++;
	} else {
		if (analyze_rule_compile(rule, pattern, NULL, err, sizeof(err))) {
			free(pattern);
			return bad(err, "write a POSIX extended regular expression");
		}
		c->n_user_drop++;
	}
	return 0;
}

static int parse_min_samples(struct cli *c, const char *arg)
{
	char *end;
	unsigned long long v = strtoull(arg, &end, 10);

	if (*arg < '0' || *arg > '9' || *end || v < 1 || v > 1000000000ULL)
		return bad("--min-samples wants a whole number from 1", "for example --min-samples 30");
	c->cfg.min_samples = v;
	c->ropts.min_samples = v;
	return 0;
}

static int build_rules(struct cli *c)
{
	struct analyze_rule *def_agg, *def_drop;
	int n_def_agg = 0, n_def_drop = 0, i;

	if (!c->no_default_rules &&
	    analyze_default_rules(&def_agg, &n_def_agg, &def_drop, &n_def_drop))
		return bad("built-in rules failed to compile", "report this bug");
	for (i = 0; i < c->n_user_agg; i++)
		c->agg[i] = c->user_agg[i];
	for (i = 0; i < n_def_agg; i++)
		c->agg[c->n_user_agg + i] = def_agg[i];
	for (i = 0; i < c->n_user_drop; i++)
		c->drop[i] = c->user_drop[i];
	for (i = 0; i < n_def_drop; i++)
		c->drop[c->n_user_drop + i] = def_drop[i];
	c->cfg.aggregate = c->agg;
	c->cfg.n_aggregate = c->n_user_agg + n_def_agg;
	c->cfg.drop = c->drop;
	c->cfg.n_drop = c->n_user_drop + n_def_drop;
	return 0;
}

enum { OPT_VERSIONS = 256, OPT_FORMAT, OPT_SVG, OPT_EXTENDED, OPT_PVALUE, OPT_AGGREGATE,
       OPT_DROP, OPT_NO_DEFAULTS, OPT_MIN_SAMPLES };

/* Options may come anywhere among the inputs ("x.jsonl --svg o.svg"), as
 * the examples write them, and "--" ends them: what follows is an input
 * even when it starts with a dash. Returns 1 to run, 0 after --help, -1
 * on error. */
static int parse_args(struct cli *c, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "versions", required_argument, NULL, OPT_VERSIONS },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "svg", required_argument, NULL, OPT_SVG },
		{ "extended", no_argument, NULL, OPT_EXTENDED },
		{ "p-value", required_argument, NULL, OPT_PVALUE },
		{ "aggregate", required_argument, NULL, OPT_AGGREGATE },
		{ "drop", required_argument, NULL, OPT_DROP },
		{ "no-default-rules", no_argument, NULL, OPT_NO_DEFAULTS },
		{ "min-samples", required_argument, NULL, OPT_MIN_SAMPLES },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt, rc = 0;

	c->inputs = calloc((size_t)argc, sizeof(*c->inputs));
	if (!c->inputs)
		return bad("out of memory", "try again");
	optind = 0; /* full re-initialisation: main may have used getopt */
	opterr = 0;
	/* A leading "-": every non-option comes back in order as option 1,
	 * whatever POSIXLY_CORRECT says. */
	while (rc == 0 && (opt = getopt_long(argc, argv, "-vh", longopts, NULL)) != -1) {
		switch (opt) {
		case 1: c->inputs[c->n_inputs++] = optarg; break;
		case OPT_VERSIONS: rc = parse_versions(c, optarg); break;
		case OPT_FORMAT:
			if (strcmp(optarg, "json") && strcmp(optarg, "text"))
				rc = bad("--format must be json or text", "for example --format text");
			c->text = strcmp(optarg, "text") == 0;
			break;
		case OPT_SVG: c->svg = optarg; break;
		case OPT_EXTENDED: c->ropts.extended = 1; break;
		case OPT_PVALUE:
			if (strcmp(optarg, "exact") && strcmp(optarg, "upstream"))
				rc = bad("--p-value must be exact or upstream", "for example --p-value upstream");
			c->ropts.p_method = strcmp(optarg, "upstream") ? P_EXACT : P_UPSTREAM;
			break;
		case OPT_AGGREGATE: rc = add_rule(c, optarg, 1); break;
		case OPT_DROP: rc = add_rule(c, optarg, 0); break;
		case OPT_NO_DEFAULTS: c->no_default_rules = 1; break;
		case OPT_MIN_SAMPLES: rc = parse_min_samples(c, optarg); break;
		case 'v': c->cfg.verbose = 1; break;
		case 'h': usage(stdout); return 0;
		default: /* getopt's own message is off: one line, ours */
			usage_error("analyze", "bad option '%s': unknown, or its value is missing",
				    argv[optind - 1]);
			return -1;
		}
	}
	if (rc)
		return -1;
	while (optind < argc) /* after "--" */
		c->inputs[c->n_inputs++] = argv[optind++];
	if (c->n_inputs == 0)
		return bad("no input given", "name export files, a capture directory or - for stdin");
	return build_rules(c) ? -1 : 1;
}

/* The file ARG is read from: itself, or a directory's series. */
static int read_file_stat(const char *arg, struct stat *st)
{
	char path[4096];

	if (strcmp(arg, "-") == 0 || analyze_input_path(arg, path, sizeof(path)) < 0)
		return -1;
	return stat(path, st);
}

/* Whether input I names a file an earlier input named too (the same
 * file, or a directory and its series): read twice, every sample would
 * count twice. Said once per such input. */
static bool given_before(const struct cli *c, int i)
{
	struct stat st, prev;

	/* standard input can be read once only */
	for (int j = 0; j < i && !strcmp(c->inputs[i], "-"); j++)
		if (!strcmp(c->inputs[j], "-")) {
			fprintf(stderr, "pmetrics: analyze: - (standard input) is given twice: read once\n");
			return true;
		}
	if (read_file_stat(c->inputs[i], &st) != 0)
		return false;
	for (int j = 0; j < i; j++) {
		if (read_file_stat(c->inputs[j], &prev) != 0 || prev.st_dev != st.st_dev ||
		    prev.st_ino != st.st_ino)
			continue;
		fprintf(stderr, "pmetrics: analyze: %s is %s again: read once\n",
			cli_printable(c->inputs[i]), cli_printable(c->inputs[j]));
		return true;
	}
	return false;
}

/* Whether --svg's directory takes a new file: checked before any input is
 * read, so a mistyped path is not found only after the analysis. */
static bool svg_dir_writable(const char *svg)
{
	char dir[4096];
	const char *slash = strrchr(svg, '/');

	if (!slash)
		return access(".", W_OK) == 0;
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - svg) + (slash == svg), svg);
	return access(dir, W_OK) == 0;
}

/* Whether PATH names a directory: by its last component ("out/", ".",
 * "..") or as it is now. */
static bool names_directory(const char *path)
{
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
	struct stat st;

	return !*base || !strcmp(base, ".") || !strcmp(base, "..") ||
	       (lstat(path, &st) == 0 && S_ISDIR(st.st_mode));
}

static int run(struct cli *c)
{
	struct version_result *results = NULL;
	struct analysis *a;
	int i, rc = 0;

	if (c->svg && names_directory(c->svg)) {
		fprintf(stderr, "pmetrics: analyze: --svg %s names a directory: give a file name, "
			"such as trends.svg\n", cli_printable(c->svg));
		return 1;
	}
	if (c->svg && !svg_dir_writable(c->svg)) {
		fprintf(stderr, "pmetrics: analyze: cannot write --svg %s: %s (its directory must "
			"exist and be writable)\n", cli_printable(c->svg), strerror(errno));
		return 1;
	}
	c->cfg.points_per_key = c->svg ? SVG_POINTS_PER_KEY : 0;
	a = analysis_new(&c->cfg);
	for (i = 0; i < c->n_inputs; i++)
		if (!given_before(c, i))
			analyze_read_input(a, c->inputs[i]);
	analysis_print_skips(a, stderr);
	/* Reports that were all of other versions than --versions names
	 * still answer: each named version has no data. */
	if (a->samples == 0 && !a->left_out[LEFT_OTHER_VERSION]) {
		fprintf(stderr, "pmetrics: analyze: no usable samples in the input; check that it holds resourceMonitorReport events with appMode ODD, or a memory series (-v names skipped lines)\n");
		analysis_free(a);
		return 1;
	}
	analysis_order_versions(a);
	if (report_compute(a, &c->ropts, &results)) {
		analysis_free(a);
		bad("out of memory", "analyse fewer inputs at once");
		return 2;
	}
	if (c->text)
		report_write_text(stdout, results, a->n_versions, &c->ropts);
	else
		report_write_json(stdout, results, a->n_versions, &c->ropts);
	if (c->svg && report_write_svg(c->svg, results, a->n_versions, &c->ropts))
		rc = 1;
	if (fflush(stdout) != 0) {
		perror("pmetrics: analyze: writing the output");
		rc = 1;
	}
	report_free(results, a->n_versions);
	analysis_free(a);
	return rc;
}

static void cli_free(struct cli *c)
{
	int i;

	for (i = 0; i < c->n_user_agg; i++) {
		regfree(&c->user_agg[i].re);
		free((char *)c->user_agg[i].pattern);
	}
	for (i = 0; i < c->n_user_drop; i++) {
		regfree(&c->user_drop[i].re);
		free((char *)c->user_drop[i].pattern);
	}
	free(c->version_buf);
	free(c->inputs);
}

int analyze_main(int argc, char **argv)
{
	struct cli c;
	int rc;

	memset(&c, 0, sizeof(c));
	c.cfg.min_samples = 30;
	c.ropts.min_samples = 30;
	c.ropts.p_method = P_EXACT;
	rc = parse_args(&c, argc, argv);
	if (rc <= 0) {
		cli_free(&c);
		return rc == 0 ? 0 : 2;
	}
	rc = run(&c);
	cli_free(&c);
	return rc;
}
