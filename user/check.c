// SPDX-License-Identifier: MIT
/* pmetrics check; see check.h and kernel_check.h. */
#include "check.h"
#include "bpf_loader.h"
#include "cli.h"
#include "kernel_check.h"
#include "library_resolver.h"
#include "pyspan.h"
#include "target.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct check_opts {
	pid_t pid;
	bool json;
	bool verbose;
	const char *btf_path;
};

static void check_usage(FILE *out)
{
	fprintf(out,
"Usage: pmetrics check [--pid PID] [--json] [--btf FILE] [-v]\n"
"\n"
"Says what pmetrics can do on this kernel, one line per capability:\n"
"  ok | degraded: WHAT IS LOST | missing: WHY\n"
"where WHY names the kernel options involved, read from the kernel's\n"
"config (/proc/config.gz or /boot/config-RELEASE) when it has one. Every\n"
"answer comes from loading and attaching a small BPF program (a uprobe on\n"
"pmetrics itself, a raw tracepoint, a task iterator), never from the\n"
"kernel's version. pmetrics record runs the same check before it starts.\n"
"\n"
"Capabilities:\n"
"  native spans        uprobes on native functions (--probe STATE=BINARY:SYMBOL)\n"
"  Python spans        py:MODULE:QUALNAME probes and --preset robot-server; says\n"
"                      whether an untimed Python step traps once (uprobe\n"
"                      sessions, Linux 6.13+) or twice (entry and return)\n"
"  Python watch hook   --python-hook watch: Python spans' needs, BPF on perf\n"
"                      events, bpf_loop() (5.17) and hardware watchpoints that\n"
"                      fire (some virtual machines never deliver a hit)\n"
"  following children  the target's child processes traced too\n"
"  span context        robot_context_resources (needs the kernel's struct layout: BTF)\n"
"  resource series     system_resource_data and memory_series_data (--resources)\n"
"  CPU sampling        --sample and --off-cpu: by BPF, or by perf_event_open in\n"
"                      user space where the kernel runs no BPF on perf events\n"
"\n"
"Options:\n"
"  -p, --pid PID   also describe a process: its executable and, for a Python\n"
"                  one, the interpreter, its version, whether it is stripped and\n"
"                  where each function a Python hook uses was found\n"
"      --json      the same as one JSON object on stdout\n"
"      --btf FILE  the BTF to use for a kernel built without it (as record's)\n"
"  -v, --verbose   libbpf's own log while probing\n"
"  -h, --help      this text\n"
"\n"
"Exit status: 0 when native and Python spans and following children work\n"
"(ok or degraded), 1 when one of them is missing or PID cannot be\n"
"described, 2 for a usage error. Needs root, as record does.\n"
"\n"
"Examples:\n"
"  pmetrics check\n"
"  pmetrics check --pid $(pidof -s python3)\n"
"  pmetrics check --json | python3 -m json.tool\n");
}

static int parse_args(int argc, char **argv, struct check_opts *o)
{
	static const struct option long_opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "json", no_argument, NULL, 'j' },
		{ "btf", required_argument, NULL, 'b' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	long v;
	int c;

	memset(o, 0, sizeof(*o));
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":p:vh", long_opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || v <= 0 || v > 4194304)
				return usage_error("check", "bad --pid '%s': give a process ID", optarg);
			o->pid = (pid_t)v;
			break;
		case 'j': o->json = true; break;
		case 'b':
			if (!*optarg)
				return usage_error("check", "empty --btf: give the path of this "
						   "kernel's BTF file");
			o->btf_path = optarg;
			break;
		case 'v': o->verbose = true; break;
		case 'h': check_usage(stdout); return -1;
		default:
			return usage_error("check", "%s %s", c == ':' ? "option needs a value:" :
					   "unknown option", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_error("check", "unexpected argument '%s'", argv[optind]);
	return 0;
}

/* ---- the target ----------------------------------------------------- */

struct target_facts {
	struct target_view view;
	struct pyspan_report python;
	char python_error[512]; /* why it is not a Python target we can hook */
};

/* Fills T for PID. Returns 0, or -1 after a one-line error. */
static int describe_target(pid_t pid, struct target_facts *t)
{
	char why[512];

	memset(t, 0, sizeof(*t));
	if (target_check_pid(pid, &t->view, why, sizeof(why))) {
		cli_error("%s", why);
		return -1;
	}
	if (pyspan_report(&t->view, &t->python, t->python_error, sizeof(t->python_error)) != 0 &&
	    !t->python_error[0])
		snprintf(t->python_error, sizeof(t->python_error), "not a CPython process");
	return 0;
}

/* ---- text ---------------------------------------------------------- */

static const char *btf_name(int btf)
{
	return btf == KERNEL_BTF_OWN ? "the kernel's own" : btf == KERNEL_BTF_FILE ? "from --btf" : "none";
}

static void print_text(const struct kernel_facts *f, const struct capability_report *caps,
		       pid_t pid, const struct target_facts *t)
{
	char line[1024];

	printf("pmetrics check: Linux %s (%s), config: %s, BTF: %s\n", f->release, f->machine,
	       f->config_source[0] ? f->config_source : "none found", btf_name(f->btf));
	for (int c = 0; c < CAP_MAX; c++) {
		capability_format(&caps[c], line, sizeof(line));
		printf("  %-20s %s\n", capability_name(c), line);
	}
	if (!pid)
		return;
	printf("target %d: %s\n", pid, t->view.exe_name);
	if (t->python_error[0]) {
		printf("  not a Python target: %s; native probes go into its executable and libraries\n",
		       t->python_error);
		return;
	}
	printf("  interpreter   %s: CPython %d.%d%s, %s\n", t->python.interp.name,
	       t->python.interp.major, t->python.interp.minor,
	       t->python.supported ? "" : " (not supported: pmetrics knows 3.8 to 3.13)",
	       t->python.stripped ? "stripped (.dynsym only)" : "with symbols (.symtab)");
	for (int i = 0; i < t->python.n_points; i++) {
		const struct pyspan_hook_point *pt = &t->python.points[i];

		if (pt->found)
			printf("  hook point    %-24s %s at file offset 0x%llx (%s)\n", pt->symbol,
			       pt->source, pt->offset, pt->detail);
		else
			printf("  hook point    %-24s missing: %s\n", pt->symbol, pt->detail);
	}
}

/* ---- JSON ------------------------------------------------------------ */

/* The length of the valid UTF-8 sequence at S (RFC 3629: shortest form,
 * no surrogate, nothing above U+10FFFF), or 0 when there is none there;
 * then *BAD is how many bytes to pass over as one invalid sequence (its
 * longest start that could have been valid, at least 1). A NUL is never
 * a continuation byte, so nothing past the string is read. */
static size_t utf8_sequence(const unsigned char *s, size_t *bad)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		n = 0;
	if (s[0] == 0xe0)
		lo = 0xa0; /* shorter forms are overlong */
	else if (s[0] == 0xed)
		hi = 0x9f; /* beyond are the surrogates */
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f; /* beyond is past U+10FFFF */
	for (size_t i = 1; i < n; i++) {
		if (s[i] < (i == 1 ? lo : 0x80) || s[i] > (i == 1 ? hi : 0xbf)) {
			*bad = i;
			return 0;
		}
	}
	*bad = 1;
	return n;
}

/* S as a JSON string. Names come from the system (a process's executable,
 * a library's path) and need not be UTF-8: an invalid sequence becomes
 * U+FFFD, so the output is always valid JSON; valid UTF-8 passes as is. */
static void json_string(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	putchar('"');
	while (*p) {
		size_t bad, n = utf8_sequence(p, &bad);

		if (!n) {
			fputs("\\ufffd", stdout);
			p += bad;
		} else if (*p == '"' || *p == '\\') {
			printf("\\%c", *p++);
		} else if (*p < 0x20) {
			printf("\\u%04x", *p++);
		} else {
			fwrite(p, 1, n, stdout);
			p += n;
		}
	}
	putchar('"');
}

static void json_target(pid_t pid, const struct target_facts *t)
{
	printf(",\"target\":{\"pid\":%d,\"executable\":", pid);
	json_string(t->view.exe_name);
	if (t->python_error[0]) {
		printf(",\"python\":null,\"python_error\":");
		json_string(t->python_error);
		printf("}");
		return;
	}
	printf(",\"python\":{\"interpreter\":");
	json_string(t->python.interp.name);
	printf(",\"version\":\"%d.%d\",\"stripped\":%s,\"supported\":%s,\"hook_points\":[",
	       t->python.interp.major, t->python.interp.minor, t->python.stripped ? "true" : "false",
	       t->python.supported ? "true" : "false");
	for (int i = 0; i < t->python.n_points; i++) {
		const struct pyspan_hook_point *pt = &t->python.points[i];

		printf("%s{\"symbol\":", i ? "," : "");
		json_string(pt->symbol);
		printf(",\"use\":");
		json_string(pt->use);
		if (pt->found) {
			printf(",\"found\":true,\"source\":");
			json_string(pt->source);
			printf(",\"detail\":");
			json_string(pt->detail);
			printf(",\"offset\":%llu}", pt->offset);
		} else {
			printf(",\"found\":false,\"why\":");
			json_string(pt->detail);
			printf("}");
		}
	}
	printf("]}}");
}

static void print_json(const struct kernel_facts *f, const struct capability_report *caps,
		       pid_t pid, const struct target_facts *t)
{
	static const char *const states[] = { "ok", "degraded", "missing" };

	printf("{\"kernel\":{\"release\":");
	json_string(f->release);
	printf(",\"machine\":");
	json_string(f->machine);
	printf(",\"config\":");
	if (f->config_source[0])
		json_string(f->config_source);
	else
		printf("null");
	printf(",\"btf\":\"%s\"},\"capabilities\":{",
	       f->btf == KERNEL_BTF_OWN ? "own" : f->btf == KERNEL_BTF_FILE ? "file" : "none");
	for (int c = 0; c < CAP_MAX; c++) {
		printf("%s", c ? "," : "");
		json_string(capability_name(c));
		printf(":{\"state\":\"%s\",\"detail\":", states[caps[c].state]);
		json_string(caps[c].why);
		printf("}");
	}
	printf("}");
	if (pid)
		json_target(pid, t);
	printf("}\n");
}

int check_main(int argc, char **argv)
{
	struct bpf_loader_settings loader = { 0 };
	struct capability_report caps[CAP_MAX];
	struct target_facts *t = NULL;
	struct kernel_facts f;
	struct check_opts o;
	int ret = parse_args(argc, argv, &o);

	if (ret)
		return ret < 0 ? 0 : ret;
	loader.btf_path = o.btf_path;
	loader.verbose = o.verbose;
	if (bpf_loader_init(&loader))
		return EXIT_RUNTIME;
	if (o.pid) {
		t = calloc(1, sizeof(*t));
		if (!t || describe_target(o.pid, t)) {
			free(t);
			return EXIT_RUNTIME;
		}
	}
	kernel_check_probe(&f);
	kernel_check_probe_watchpoints(&f);
	kernel_check_capabilities(&f, caps);
	if (o.json)
		print_json(&f, caps, o.pid, t);
	else
		print_text(&f, caps, o.pid, t);
	ret = caps[CAP_NATIVE_SPANS].state == CAPABILITY_MISSING ||
	      caps[CAP_PYTHON_SPANS].state == CAPABILITY_MISSING ||
	      caps[CAP_CHILDREN].state == CAPABILITY_MISSING ? EXIT_RUNTIME : 0;
	kernel_check_release();
	free(t);
	return ret;
}
