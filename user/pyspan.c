// SPDX-License-Identifier: MIT
/* Python function spans: finds the interpreter, picks the struct layout
 * of its version, loads bpf/pyspan.bpf.c with the probe table as
 * read-only data and attaches it to the frame evaluation. */
#include "pyspan.h"
#include "pyspan_config.h"
#include "python_elf.h"
#include "python_probe.h"
#include "percpu_counter.h"
#include "elf_symbols.h"
#include "span_engine.h"
#include "pyspan.skel.h"
#include "pyspan_nobtf.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Generator step functions hooked at most (see gen_step_symbols). */
#define GEN_STEP_MAX 7

#define WHAT "the Python span tracer"

struct pyspan {
	/* One of the two builds of bpf/pyspan.bpf.c: with CO-RE, or for a
	 * kernel without BTF. Everything else goes through obj. */
	struct pyspan_bpf *core;
	struct pyspan_nobtf_bpf *nobtf;
	struct bpf_object *obj;
	struct bpf_links links;
	struct python_interp interp;
	bool gen_hook;          /* coroutine hook on the generator step function */
	bool def_hook;          /* uprobe on PyFunction_NewWithQualName */
	int n_probes;
	struct py_probe probes[PYSPAN_MAX_PROBES];
};

/* Offsets read from each version's headers (Include/cpython/frameobject.h,
 * code.h, genobject.h, internal/pycore_frame.h) with offsetof(). */
static const struct {
	int minor;
	struct pyspan_layout layout;
} layouts[] = {
	{ 8, { .model = PYSPAN_MODEL_FRAMEOBJ_STACKTOP, .frame_arg = 1, .frame_code = 32,
	       .frame_lasti = 104, .frame_gen = 96, .frame_suspend = 72, .gen_qualname = 56, .gen_frame = 16,
	       .frame_back = 24, .frame_valuestack = 64, .func_code = 16, .func_qualname = 104,
	       .code_flags = 36, .code_filename = 104, .code_name = 112,
	       .unicode_length = 16, .unicode_state = 32, .unicode_data = 48 } },
	{ 9, { .model = PYSPAN_MODEL_FRAMEOBJ_STACKTOP, .frame_arg = 2, .frame_code = 32,
	       .frame_lasti = 104, .frame_gen = 96, .frame_suspend = 72, .gen_qualname = 56, .gen_frame = 16,
	       .frame_back = 24, .frame_valuestack = 64, .func_code = 16, .func_qualname = 104,
	       .code_flags = 36, .code_filename = 104, .code_name = 112,
	       .unicode_length = 16, .unicode_state = 32, .unicode_data = 48 } },
	{ 10, { .model = PYSPAN_MODEL_FRAMEOBJ_STATE, .frame_arg = 2, .frame_code = 32,
		.frame_lasti = 96, .frame_gen = 88, .frame_suspend = 108, .gen_qualname = 48, .gen_frame = 16,
		.frame_back = 24, .frame_valuestack = 64, .func_code = 48, .func_qualname = 40,
		.code_flags = 36, .code_filename = 104, .code_name = 112,
		.unicode_length = 16, .unicode_state = 32, .unicode_data = 48 } },
	{ 11, { .model = PYSPAN_MODEL_IFRAME_PREV, .frame_arg = 2, .frame_code = 32,
		.frame_instr = 56, .frame_owner = 69, .gen_iframe = 80, .gen_state = 75,
		.gen_qualname = 40, .code_flags = 48, .code_filename = 112, .code_name = 120,
		.code_qualname = 128, .unicode_length = 16, .unicode_state = 32,
		.unicode_data = 48, .owned_by_generator = 1, .return_generator = 75 } },
	{ 12, { .model = PYSPAN_MODEL_IFRAME_PREV, .frame_arg = 2, .frame_code = 0,
		.frame_instr = 56, .frame_owner = 70, .gen_iframe = 72, .gen_state = 67,
		.gen_qualname = 32, .code_flags = 48, .code_filename = 112, .code_name = 120,
		.code_qualname = 128, .unicode_length = 16, .unicode_state = 32,
		.unicode_data = 40, .owned_by_generator = 1, .return_generator = 75 } },
	{ 13, { .model = PYSPAN_MODEL_IFRAME_NEXT, .frame_arg = 2, .frame_code = 0,
		.frame_instr = 56, .frame_owner = 70, .gen_iframe = 72, .gen_state = 67,
		.gen_qualname = 32, .code_flags = 48, .code_filename = 112, .code_name = 120,
		.code_qualname = 128, .unicode_length = 16, .unicode_state = 32,
		.unicode_data = 40, .owned_by_generator = 1, .return_generator = 35 } },
};

int pyspan_layout_for(int major, int minor, struct pyspan_layout *out)
{
	if (major != 3)
		return -1;
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		if (layouts[i].minor == minor) {
			*out = layouts[i].layout;
			return 0;
		}
	}
	return -1;
}

static bool is_identifier(const char *s, size_t n)
{
	if (n == 0 || isdigit((unsigned char)s[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_')
			return false;
	return true;
}

/* "<locals>", "<lambda>", "<genexpr>": compiler-made qualname parts. */
static bool is_angle_part(const char *s, size_t n)
{
	if (n < 3 || s[0] != '<' || s[n - 1] != '>')
		return false;
	return is_identifier(s + 1, n - 2);
}

static bool dotted_ok(const char *s, bool allow_angle)
{
	const char *part = s;

	if (!s || !*s)
		return false;
	for (const char *p = s;; p++) {
		if (*p == '.' || *p == '\0') {
			size_t n = (size_t)(p - part);
			if (!is_identifier(part, n) && !(allow_angle && is_angle_part(part, n)))
				return false;
			if (*p == '\0')
				return true;
			part = p + 1;
		}
	}
}

int pyspan_probe_check(const struct py_probe *p, char *err, size_t errlen)
{
	if (!dotted_ok(p->module, false)) {
		snprintf(err, errlen, "bad module '%s' in py:MODULE:QUALNAME: expected a dotted "
			 "module name such as robot_server.protocols.router", p->module ? p->module : "");
		return -EINVAL;
	}
	if (!dotted_ok(p->qualname, true)) {
		snprintf(err, errlen, "bad qualified name '%s' in py:MODULE:QUALNAME: expected "
			 "function, Class.method or outer.<locals>.inner", p->qualname ? p->qualname : "");
		return -EINVAL;
	}
	if (strlen(p->module) > PYSPAN_MODULE_MAX || strlen(p->qualname) >= PYSPAN_STR_MAX) {
		snprintf(err, errlen, "py:%s:%s is too long: the module may have at most %d characters, "
			 "the qualified name %d", p->module, p->qualname, PYSPAN_MODULE_MAX,
			 PYSPAN_STR_MAX - 1);
		return -ENAMETOOLONG;
	}
	return 0;
}

void pyspan_probe_cfg_fill(const struct py_probe *p, struct pyspan_probe_cfg *cfg)
{
	const char *last = strrchr(p->qualname, '.');
	char path[PYSPAN_STR_MAX];

	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->qualname, sizeof(cfg->qualname), "%s", p->qualname);
	snprintf(cfg->name, sizeof(cfg->name), "%s", last ? last + 1 : p->qualname);
	snprintf(path, sizeof(path), "%s", p->module);
	for (char *c = path; *c; c++)
		if (*c == '.')
			*c = '/';
	/* pyspan_probe_check() made sure both fit */
	snprintf(cfg->file_suffix, sizeof(cfg->file_suffix), "/%.*s.py", PYSPAN_MODULE_MAX, path);
	snprintf(cfg->pkg_suffix, sizeof(cfg->pkg_suffix), "/%.*s/__init__.py", PYSPAN_MODULE_MAX, path);
	cfg->file_len = (__u32)strlen(cfg->file_suffix);
	cfg->pkg_len = (__u32)strlen(cfg->pkg_suffix);
	cfg->probe_id = p->probe_id;
}

/* One warning naming the probes this version may not see, and why. */
static void warn_version_limits(const struct pyspan *p)
{
	char names[1024] = "";
	size_t used = 0;

	if (p->interp.minor < 11)
		return;
	for (int i = 0; i < p->n_probes; i++)
		used += (size_t)snprintf(names + used, used < sizeof(names) ? sizeof(names) - used : 0,
				 "%spy:%s:%s", i ? ", " : "", p->probes[i].module, p->probes[i].qualname);
	if (p->interp.minor == 11)
		fprintf(stderr, "pmetrics: warning: Python 3.11 inlines calls between Python functions: "
			"%s are timed only if they are coroutines (every await is seen) or called "
			"from C; a plain function called from Python code records nothing\n", names);
	else
		fprintf(stderr, "pmetrics: warning: Python 3.%d inlines Python-to-Python calls and awaits: "
			"%s are timed only when entered from C (a task's outermost coroutine, "
			"callbacks, map()); awaited coroutines and plain calls from Python "
			"record nothing\n", p->interp.minor, names);
}

static int find_interp(const struct pyspan_target *t, struct python_interp *out)
{
	char err[512];
	int ret;

	ret = python_interp_of_view(t->view, out, err, sizeof(err));
	if (ret)
		fprintf(stderr, "pmetrics: %s\n", err);
	return ret;
}

/* The file offset of SYM in the interpreter. -ENOENT is reported only
 * when REQUIRED (an optional hook point may not exist in this build). */
static int symbol_offset(const struct pyspan *p, const char *sym, bool required, uint64_t *off)
{
	char suggest[8] = "", err[512] = "";
	int rc = elf_symbol_offset(p->interp.path, sym, off, suggest, sizeof(suggest), err, sizeof(err));

	if (rc == -ENOENT && required)
		fprintf(stderr, "pmetrics: %s has no symbol %s: not a CPython interpreter, or a "
			"stripped one; use a CPython with its symbols (e.g. a pyenv build)\n",
			p->interp.name, sym);
	else if (rc && rc != -ENOENT)
		fprintf(stderr, "pmetrics: %s\n", err);
	return rc;
}

static int attach_uprobe(struct pyspan *p, const char *prog, bool ret_probe,
			 pid_t pid, const char *sym, uint64_t off)
{
	struct bpf_program *program = bpf_loader_program(p->obj, prog);
	char what[128];

	snprintf(what, sizeof(what), "a %s to %s", ret_probe ? "uretprobe" : "uprobe", sym);
	return bpf_links_add(&p->links, bpf_program__attach_uprobe(program, ret_probe, pid,
								    p->interp.path, (size_t)off), what);
}

/* The functions that run a generator or coroutine step on 3.8-3.10, each
 * taking the generator as its first argument. The step function
 * (gen_send_ex, 3.10 gen_send_ex2) is required; the others hold inlined
 * copies of it in the builds we know (3.10's PyGen_am_send, the path of
 * await and of asyncio's task step; gen_iternext for `for` loops;
 * gen_send, _gen_throw, gen_close for .send(), .throw(), cancellation and
 * .close()) and are hooked when present. Returns how many are in syms;
 * the first is the required one. */
static int gen_step_symbols(const struct python_interp *interp, const char *syms[GEN_STEP_MAX])
{
	static const char *const v38[] = { "gen_send_ex", "_PyGen_Send", "gen_iternext",
					   "_gen_throw", "gen_close" };
	static const char *const v310[] = { "gen_send_ex2", "PyGen_am_send", "gen_send",
					    "_PyGen_Send", "gen_iternext", "_gen_throw", "gen_close" };
	const char *const *list = interp->minor == 10 ? v310 : v38;
	int n = interp->minor == 10 ? 7 : 5;

	if (interp->major != 3 || interp->minor < 8 || interp->minor > 10)
		return 0;
	for (int i = 0; i < n; i++)
		syms[i] = list[i];
	return n;
}

static bool has_symbol(const struct pyspan *p, const char *name)
{
	uint64_t off;

	return symbol_offset(p, name, false, &off) == 0;
}

/* A copy of the step function that the compiler specialised (.isra,
 * .constprop, .part) may take other arguments or hide steps we would not
 * see: then only the eval loop hook is exact. (.cold is only the cold
 * half of the same function: harmless.) */
static bool has_specialised_copy(const struct pyspan *p, const char *sym)
{
	static const char *const suffixes[] = { ".isra.0", ".constprop.0", ".part.0" };
	char name[128];

	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		snprintf(name, sizeof(name), "%s%s", sym, suffixes[i]);
		if (has_symbol(p, name))
			return true;
	}
	return false;
}

/* Whether the coroutine hook can be used: asked for, a version where
 * known functions run every generator step, and the step function in the
 * interpreter's symbol table (a stripped build keeps only exports). */
static bool use_gen_hook(const struct pyspan *p, const struct pyspan_target *t)
{
	const char *syms[GEN_STEP_MAX];
	int n = gen_step_symbols(&p->interp, syms);

	if (!t->coroutine_hook)
		return false;
	if (n == 0) {
		if (t->verbose)
			fprintf(stderr, "pmetrics: Python %d.%d has no single generator step function: "
				"hooking the eval loop (it inlines plain calls, so they cost nothing)\n",
				p->interp.major, p->interp.minor);
		return false;
	}
	if (!has_symbol(p, syms[0]) || has_specialised_copy(p, syms[0])) {
		fprintf(stderr, "pmetrics: warning: %s has no plain symbol %s (stripped or "
			"specialised build): hooking every Python call instead of coroutine steps, "
			"which costs a trap per call\n", p->interp.name, syms[0]);
		return false;
	}
	return true;
}

/* Entry and return probes at SYM, looked up once. An optional SYM that
 * this build does not have is skipped. */
static int attach_pair(struct pyspan *p, const struct pyspan_target *t, const char *entry,
		       const char *ret, const char *sym, bool required)
{
	uint64_t off;
	int rc = symbol_offset(p, sym, required, &off);

	if (rc == -ENOENT && !required)
		return 0;
	if (rc == 0)
		rc = attach_uprobe(p, entry, false, t->pid, sym, off);
	if (rc == 0)
		rc = attach_uprobe(p, ret, true, t->pid, sym, off);
	if (rc == 0 && t->verbose)
		fprintf(stderr, "pmetrics: Python calls seen at %s (%s)\n", sym,
			p->gen_hook ? "coroutine and generator steps only" : "every call into the eval loop");
	return rc;
}

static int attach_hooks(struct pyspan *p, const struct pyspan_target *t)
{
	const char *syms[GEN_STEP_MAX];
	int n, rc = 0;

	if (!p->gen_hook)
		return attach_pair(p, t, "py_entry", "py_return", "_PyEval_EvalFrameDefault", true);
	n = gen_step_symbols(&p->interp, syms);
	for (int i = 0; i < n && rc == 0; i++)
		rc = attach_pair(p, t, "py_gen_entry", "py_gen_return", syms[i], i == 0);
	return rc;
}

/* 3.8-3.10 plain functions learn their qualname at the def statement. */
static int attach_def_hook(struct pyspan *p, const struct pyspan_target *t)
{
	const char *sym = "PyFunction_NewWithQualName";
	uint64_t off;
	int rc = symbol_offset(p, sym, true, &off);

	return rc ? rc : attach_uprobe(p, "py_make_function", false, t->pid, sym, off);
}

static struct bpf_object *open_build(struct pyspan *p)
{
	if (bpf_loader_btf() != KERNEL_BTF_NONE) {
		p->core = bpf_loader_opened(pyspan_bpf__open_opts(bpf_loader_open_opts()), WHAT);
		return p->core ? p->core->obj : NULL;
	}
	p->nobtf = bpf_loader_opened(pyspan_nobtf_bpf__open_opts(bpf_loader_open_opts()), WHAT);
	return p->nobtf ? p->nobtf->obj : NULL;
}

static void set_autoload(struct pyspan *p, const char *prog, bool on)
{
	bpf_program__set_autoload(bpf_loader_program(p->obj, prog), on);
}

/* The interpreter's layout and the probe table, read-only for BPF. */
static int set_config(struct pyspan *p, const struct pyspan_target *t,
		      const struct pyspan_layout *layout)
{
	struct bpf_object *o = p->obj;
	__u32 *tgid = bpf_loader_rodata(o, "targ_tgid", sizeof(*tgid));
	__u32 *n_probes = bpf_loader_rodata(o, "n_probes", sizeof(*n_probes));
	struct pyspan_layout *l = bpf_loader_rodata(o, "layout", sizeof(*l));
	struct pyspan_probe_cfg *probes =
		bpf_loader_rodata(o, "probes", PYSPAN_MAX_PROBES * sizeof(*probes));

	if (!tgid || !n_probes || !l || !probes)
		return -EINVAL;
	*tgid = (__u32)t->pid;
	*n_probes = (__u32)p->n_probes;
	*l = *layout;
	for (int i = 0; i < p->n_probes; i++)
		pyspan_probe_cfg_fill(&p->probes[i], &probes[i]);
	return 0;
}

/* Read-only data, map sizes and which programs load. */
static int configure(struct pyspan *p, const struct pyspan_target *t,
		     const struct pyspan_layout *layout)
{
	struct span_engine_config *config = bpf_loader_rodata(p->obj, "engine", sizeof(*config));
	struct span_engine_opts engine = {
		.ringbuf_bytes = t->ringbuf_bytes,
		.resources = t->resources,
		/* the hooks also see the returns of calls never timed */
		.returns_need_entry = false,
	};
	int rc = set_config(p, t, layout);

	if (rc || !config)
		return rc ? rc : -EINVAL;
	p->gen_hook = use_gen_hook(p, t);
	/* 3.8-3.10 plain functions learn their qualname at the def statement;
	 * the coroutine hook times no plain function, so it pays no trap
	 * per def, lambda or closure either. */
	p->def_hook = layout->code_qualname == 0 && !p->gen_hook;
	set_autoload(p, "py_make_function", p->def_hook);
	set_autoload(p, "py_entry", !p->gen_hook);
	set_autoload(p, "py_return", !p->gen_hook);
	set_autoload(p, "py_gen_entry", p->gen_hook);
	set_autoload(p, "py_gen_return", p->gen_hook);
	return span_engine_configure(p->obj, config, &engine, WHAT);
}

static int load_and_attach(struct pyspan *p, const struct pyspan_target *t,
			   const struct pyspan_layout *layout)
{
	int rc;

	p->obj = open_build(p);
	if (!p->obj)
		return -EINVAL;
	if ((rc = configure(p, t, layout)) || (rc = bpf_loader_load(p->obj, WHAT)))
		return rc;
	if ((rc = attach_hooks(p, t)))
		return rc;
	if (p->def_hook && (rc = attach_def_hook(p, t)))
		return rc;
	if ((rc = span_engine_attach(p->obj, &p->links)))
		return rc;
	return bpf_links_attach(&p->links, bpf_loader_program(p->obj, "py_thread_exit"),
				"the thread-exit tracepoint");
}

int pyspan_open(struct pyspan **out, const struct pyspan_target *target,
		const struct py_probe *probes, int n_probes)
{
	struct pyspan_layout layout;
	struct pyspan *p;
	char err[512];
	int rc;

	*out = NULL;
	if (n_probes <= 0 || n_probes > PYSPAN_MAX_PROBES) {
		fprintf(stderr, "pmetrics: between 1 and %d py: probes per process, not %d\n",
			PYSPAN_MAX_PROBES, n_probes);
		return -EINVAL;
	}
	for (int i = 0; i < n_probes; i++) {
		if ((rc = pyspan_probe_check(&probes[i], err, sizeof(err)))) {
			fprintf(stderr, "pmetrics: %s\n", err);
			return rc;
		}
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->n_probes = n_probes;
	memcpy(p->probes, probes, sizeof(*probes) * (size_t)n_probes);
	rc = find_interp(target, &p->interp);
	if (rc)
		goto fail;
	if (p->interp.free_threaded) {
		fprintf(stderr, "pmetrics: %s is a free-threaded CPython (%d.%dt), whose objects py: "
			"probes cannot read; use the default build of Python %d.%d\n", p->interp.name,
			p->interp.major, p->interp.minor, p->interp.major, p->interp.minor);
		rc = -ENOTSUP;
		goto fail;
	}
	if (pyspan_layout_for(p->interp.major, p->interp.minor, &layout)) {
		fprintf(stderr, "pmetrics: %s is Python %d.%d, which py: probes do not support "
			"(supported: 3.8 to 3.13)\n", p->interp.name, p->interp.major, p->interp.minor);
		rc = -ENOTSUP;
		goto fail;
	}
	if (target->verbose)
		fprintf(stderr, "pmetrics: Python %d.%d interpreter %s (opened as %s)\n",
			p->interp.major, p->interp.minor, p->interp.name, p->interp.path);
	rc = load_and_attach(p, target, &layout);
	if (rc)
		goto fail;
	warn_version_limits(p);
	*out = p;
	return 0;
fail:
	pyspan_close(p);
	return rc;
}

struct bpf_object *pyspan_object(const struct pyspan *p)
{
	return p->obj;
}

/* A map of the Python tracer's own (not the engine's). */
static int own_map_fd(const struct pyspan *p, const char *name)
{
	return bpf_map__fd(bpf_object__find_map_by_name(p->obj, name));
}

__u64 pyspan_probe_counter(const struct pyspan *p, int idx, __u32 kind)
{
	return percpu_counter_sum(own_map_fd(p, "probe_counters"),
			  (__u32)idx * PYSPAN_PC_MAX + kind);
}

static void summary_probe(const struct pyspan *p, int i, FILE *out)
{
	const struct py_probe *pr = &p->probes[i];
	__u64 spans = pyspan_probe_counter(p, i, PYSPAN_PC_SPANS);
	__u64 unresolved = pyspan_probe_counter(p, i, PYSPAN_PC_UNRESOLVED);
	bool seen = spans || pyspan_probe_counter(p, i, PYSPAN_PC_ENTRIES);

	fprintf(out, "pmetrics: py:%s:%s: %llu spans\n", pr->module, pr->qualname,
		(unsigned long long)spans);
	if (p->gen_hook && !seen)
		fprintf(out, "pmetrics: warning: py:%s:%s was never seen; if it is a plain function, "
			"the coroutine hook cannot time it: use --python-hook calls\n",
			pr->module, pr->qualname);
	else if (unresolved)
		fprintf(out, "pmetrics: warning: py:%s:%s: %llu calls of a plain function named like it "
			"were not timed: they came from C code, and on Python %d.%d its qualified name "
			"is then known only if its def ran after pmetrics attached; start the program "
			"under pmetrics\n",
			pr->module, pr->qualname, (unsigned long long)unresolved,
			p->interp.major, p->interp.minor);
	else if (!seen)
		fprintf(out, "pmetrics: warning: py:%s:%s was never seen during the capture%s\n",
			pr->module, pr->qualname,
			p->interp.minor >= 11 ? " (it may be a call this Python version inlines)"
					      : " (check the module and qualified name)");
}

/* Coroutines that started under pmetrics and have not finished. */
static __u64 open_coroutines(const struct pyspan *p)
{
	struct open_coro value;
	int fd = own_map_fd(p, "open_coros");
	__u64 key, next, n = 0;
	void *prev = NULL;

	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		if (bpf_map_lookup_elem(fd, &next, &value) == 0 && value.start_ns)
			n++;
		key = next;
		prev = &key;
	}
	return n;
}

void pyspan_summary(const struct pyspan *p, FILE *out)
{
	__u64 n;

	if (!p)
		return;
	for (int i = 0; i < p->n_probes; i++)
		summary_probe(p, i, out);
	if (p->interp.minor >= 11)
		fprintf(out, "pmetrics: Python %d.%d: %d py: probe(s) see only %s\n",
			p->interp.major, p->interp.minor, p->n_probes,
			p->interp.minor == 11 ? "coroutines and calls from C"
					      : "calls from C and tasks' outermost coroutines");
	n = open_coroutines(p);
	if (n)
		fprintf(out, "pmetrics: python spans open at the end: %llu coroutine(s) still running "
			"(no row)\n", (unsigned long long)n);
}

void pyspan_close(struct pyspan *p)
{
	if (!p)
		return;
	bpf_links_destroy(&p->links);
	pyspan_bpf__destroy(p->core);
	pyspan_nobtf_bpf__destroy(p->nobtf);
	free(p);
}

/* Whether and where the interpreter has SYM: one line of the report. */
static void report_point(struct pyspan_report *r, const char *sym)
{
	struct pyspan_hook_point *pt = &r->points[r->n_points];
	char suggest[8], err[256];
	enum elf_symbol_table table;
	uint64_t off = 0;

	if (r->n_points == PYSPAN_REPORT_POINTS)
		return;
	r->n_points++;
	pt->symbol = sym;
	pt->found = elf_symbol_lookup(r->interp.path, sym, &off, &table, suggest, sizeof(suggest),
				      err, sizeof(err)) == 0;
	pt->in_dynsym = pt->found && table == ELF_DYNSYM;
	pt->offset = off;
}

int pyspan_report(const struct target_view *v, struct pyspan_report *r, char *err, size_t errlen)
{
	struct pyspan_layout layout;
	const char *syms[GEN_STEP_MAX];
	int rc, n;

	memset(r, 0, sizeof(*r));
	rc = python_interp_of_view(v, &r->interp, err, errlen);
	if (rc)
		return rc;
	r->stripped = !elf_has_symtab(r->interp.path);
	r->supported = !r->interp.free_threaded &&
		       pyspan_layout_for(r->interp.major, r->interp.minor, &layout) == 0;
	report_point(r, "_PyEval_EvalFrameDefault");
	if (r->interp.major == 3 && r->interp.minor <= 10)
		report_point(r, "PyFunction_NewWithQualName");
	n = gen_step_symbols(&r->interp, syms);
	for (int i = 0; i < n; i++)
		report_point(r, syms[i]);
	return 0;
}
