// SPDX-License-Identifier: MIT
/* Python function spans: finds the interpreter and its hook points (a
 * stripped one too: python_hooks.c), picks the struct layout of its
 * version, loads bpf/pyspan.bpf.c with the probe table as read-only data
 * and attaches where a timed function can be seen:
 *
 *   coroutine steps from C   every version   PyIter_Send (3.10+) or
 *                                            _PyGen_Send; send, throw, close
 *   a throw through awaits   3.8-3.11        _PyGen_FetchStopIterationValue
 *   coroutine creation       3.12+           _Py_MakeCoro
 *   coroutine deallocation   3.12+           gen_dealloc
 *   plain calls (asked for)  every version   _PyFunction_Vectorcall
 */
#include "pyspan.h"
#include "pyspan_config.h"
#include "python_elf.h"
#include "python_hooks.h"
#include "python_probe.h"
#include "pywatch.h"
#include "wall_clock.h"
#include "elf_symbols.h"
#include "percpu_counter.h"
#include "proc_stat.h"
#include "span_engine.h"
#include "test_setting.h"
#include "pyspan.skel.h"
#include "pyspan_nobtf.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define WHAT "the Python span tracer"
/* Processes whose interpreter was checked (pyspan_check_process). */
#define CHECKED_MAX 256

struct pyspan {
	/* One of the two builds of bpf/pyspan.bpf.c: with CO-RE, or for a
	 * kernel without BTF. Everything else goes through obj. */
	struct pyspan_bpf *core;
	struct pyspan_nobtf_bpf *nobtf;
	struct bpf_object *obj;
	struct bpf_links links;
	struct python_interp interp;
	struct python_hooks hooks;
	struct stat interp_id;  /* the hooked file, to tell another one */
	bool plain_calls;
	bool verbose;
	pid_t attach_pid;       /* -1: every process, the traced set filters */
	int n_probes;
	struct py_probe probes[PYSPAN_MAX_PROBES];
	pid_t checked[CHECKED_MAX];
	int n_checked;
	/* --python-hook watch: watchpoints instead of uprobes, on each
	 * program (as a process exec'd it) the timed functions were found in */
	bool watching;
	struct watch_image {
		bool used;
		pid_t pid; /* where it was found; its forked children share it */
		struct python_proc proc;
		struct pywatch watch;
		/* probes found in the main module as its body started: a
		 * module of the same file run later (the main module imported
		 * again under its own name, as uvicorn.run("main:app") does,
		 * whose functions are the ones called) takes their points */
		__u32 provisional;
	} images[PYSPAN_WATCH_IMAGES];
	struct pywatch_search last_find; /* how the last search went (for -v) */
};

/* Offsets read from each version's headers (Include/cpython/funcobject.h,
 * code.h, genobject.h, frameobject.h, internal/pycore_frame.h) with
 * offsetof(); the same on x86-64 and aarch64. */
static const struct {
	int minor;
	struct pyspan_layout layout;
} layouts[] = {
	{ 8, { .func_code = 16, .func_qualname = 104, .gen_frame = 16, .gen_qualname = 56,
	       .frame_code = 32, .frame_lasti = 104, .code_flags = 36, .code_filename = 104,
	       .code_name = 112, .unicode_length = 16, .unicode_state = 32, .unicode_data = 48,
	       .frame_gen = 96 } },
	{ 9, { .func_code = 16, .func_qualname = 104, .gen_frame = 16, .gen_qualname = 56,
	       .frame_code = 32, .frame_lasti = 104, .code_flags = 36, .code_filename = 104,
	       .code_name = 112, .unicode_length = 16, .unicode_state = 32, .unicode_data = 48,
	       .frame_gen = 96 } },
	{ 10, { .func_code = 48, .func_qualname = 40, .gen_frame = 16, .gen_qualname = 48,
		.frame_code = 32, .frame_lasti = 96, .code_flags = 36, .code_filename = 104,
		.code_name = 112, .unicode_length = 16, .unicode_state = 32, .unicode_data = 48,
		.frame_gen = 88 } },
	{ 11, { .func_code = 48, .func_qualname = 40, .gen_iframe = 80, .gen_state = 75,
		.state_created = -2, .gen_qualname = 40, .frame_code = 32, .code_flags = 48,
		.code_filename = 112, .code_name = 120, .unicode_length = 16,
		.unicode_state = 32, .unicode_data = 48 } },
	{ 12, { .func_code = 48, .func_qualname = 40, .gen_iframe = 72, .gen_state = 67,
		.state_created = -2, .gen_qualname = 32, .frame_code = 0, .code_flags = 48,
		.code_filename = 112, .code_name = 120, .unicode_length = 16,
		.unicode_state = 32, .unicode_data = 40, .frame_func = 16 } },
	{ 13, { .func_code = 48, .func_qualname = 40, .gen_iframe = 72, .gen_state = 67,
		.state_created = -3, .gen_qualname = 32, .frame_code = 0, .code_flags = 48,
		.code_filename = 112, .code_name = 120, .unicode_length = 16,
		.unicode_state = 32, .unicode_data = 40, .frame_func = 16 } },
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
	char path[PYSPAN_STR_MAX];

	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->qualname, sizeof(cfg->qualname), "%s", p->qualname);
	snprintf(cfg->name, sizeof(cfg->name), "%s",
		 strrchr(p->qualname, '.') ? strrchr(p->qualname, '.') + 1 : p->qualname);
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

/* ---- which hooks -------------------------------------------------------- */

/* What a hook point is, for messages: its field in struct python_hooks. */
struct hook_use {
	const char *symbol;   /* the function in CPython's source */
	size_t field;         /* offsetof in struct python_hooks */
	/* BPF programs: at entry, at return (NULL for an entry probe), and
	 * both in one for uprobe sessions */
	const char *entry, *ret, *session;
	const char *use;
};

#define HOOK(sym, f, prog, u) \
	{ sym, offsetof(struct python_hooks, f), prog, prog "_return", prog "_session", u }
static const struct hook_use coroutine_hooks[] = {
	HOOK("PyGen_am_send", coro_send, "py_coro_step", "every await and asyncio task step"),
	HOOK("gen_send", gen_send, "py_coro_step", "coroutine.send()"),
	HOOK("gen_throw", gen_throw, "py_coro_step", "coroutine.throw(): cancellation"),
	HOOK("gen_close", gen_close, "py_coro_step", "coroutine.close()"),
};
#define ENTRY_HOOK(sym, f, prog, u) { sym, offsetof(struct python_hooks, f), prog, NULL, NULL, u }
static const struct hook_use dealloc_hook =
	ENTRY_HOOK("gen_dealloc", gen_dealloc, "py_gen_dealloc",
		   "a coroutine freed: the end of one awaited");
static const struct hook_use throw_through_hook =
	ENTRY_HOOK("_PyGen_FetchStopIterationValue", fetch_stop_value, "py_throw_through",
		   "an exception thrown through awaits: the coroutines it ended");
#undef ENTRY_HOOK
static const struct hook_use creation_hook =
	HOOK("_Py_MakeCoro", make_coro, "py_make_coro",
	     "a coroutine made: an await runs it in the eval loop");
static const struct hook_use plain_hook =
	HOOK("_PyFunction_Vectorcall", function_vectorcall, "py_call",
	     "every Python function call (asked for)");
static const struct hook_use iternext_hook =
	HOOK("gen_iternext", gen_iternext, "py_coro_step",
	     "every generator step in a for loop (asked for)");
static const struct hook_use iter_send_hook =
	HOOK("PyIter_Send", iter_send, "py_coro_step", "every await and asyncio task step");
#undef HOOK

static const struct python_hook_point *hook_point(const struct python_hooks *h,
						  const struct hook_use *u)
{
	return (const struct python_hook_point *)((const char *)h + u->field);
}

/* 3.12+ run an awaited coroutine inside the eval loop: only its creation
 * and deallocation reach C. Up to 3.11 every await is a step from C, and
 * only a coroutine ended by an exception thrown into the one awaiting it
 * (a task cancelled at some await depth) has no step return of its own. */
static bool awaits_in_eval_loop(const struct python_interp *interp)
{
	return interp->major == 3 && interp->minor >= 12;
}

/* Where a coroutine's span begins or ends besides its steps, by version:
 * 3.12+ its creation and deallocation, before a throw through awaits.
 * In the order they attach. */
static const struct hook_use *const end_hooks[] = { &creation_hook, &dealloc_hook,
						    &throw_through_hook };

static bool version_needs(const struct python_interp *interp, const struct hook_use *u)
{
	return awaits_in_eval_loop(interp) == (u != &throw_through_hook);
}

#define N_END_HOOKS (sizeof(end_hooks) / sizeof(end_hooks[0]))

/* Up to 3.11 a for loop steps a generator through gen_iternext, which
 * only the calls hook pays for; 3.12+ see generators made and freed. */
static bool needs_iternext_hook(const struct python_interp *interp)
{
	return interp->major == 3 && interp->minor <= 11;
}

/* The step function of this build: 3.10+ PyIter_Send, exported by every
 * build, which calls PyGen_am_send for a coroutine or holds an inlined
 * copy of it (Debian's LTO build, whose PyGen_am_send is never entered);
 * as many traps either way. 3.8/3.9: _PyGen_Send. */
static const struct hook_use *step_hook(const struct python_interp *interp,
					const struct python_hooks *h)
{
	if (interp->minor >= 10 && h->iter_send.vaddr)
		return &iter_send_hook;
	return &coroutine_hooks[0];
}

/* Why a needed hook point is missing, or "" when none is. */
static void missing_hooks(const struct pyspan *p, char *why, size_t len)
{
	const struct hook_use *need[1 + N_END_HOOKS] = { step_hook(&p->interp, &p->hooks) };
	size_t used = 0, n = 1;

	for (size_t i = 0; i < N_END_HOOKS; i++)
		if (version_needs(&p->interp, end_hooks[i]))
			need[n++] = end_hooks[i];
	why[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		const struct python_hook_point *pt = hook_point(&p->hooks, need[i]);

		if (pt && !pt->vaddr && used < len)
			used += (size_t)snprintf(why + used, len - used, "%s%s (%s)", used ? ", " : "",
						 need[i]->symbol, pt->detail);
	}
}

/* ---- attaching -------------------------------------------------------------- */

static int attach_point(struct pyspan *p, const char *prog, enum uprobe_kind kind,
			const char *symbol, uint64_t offset)
{
	struct bpf_program *program = bpf_loader_program(p->obj, prog);
	char what[sizeof(p->interp.name) + 96];

	snprintf(what, sizeof(what), "a %s to %s in %s", uprobe_kind_name(kind), symbol,
		 p->interp.name);
	return bpf_links_uprobe(&p->links, program, kind, p->interp.path, offset, p->attach_pid,
				what);
}

/* The probes of one hook point; one not in this build is skipped. */
static int attach_hook(struct pyspan *p, const struct hook_use *u, uint64_t *done, int *n_done)
{
	const struct python_hook_point *pt = hook_point(&p->hooks, u);
	int rc;

	if (!pt->vaddr)
		return 0;
	/* one function may serve two uses (3.8/3.9: send is _PyGen_Send) */
	for (int i = 0; i < *n_done; i++)
		if (done[i] == pt->offset)
			return 0;
	done[(*n_done)++] = pt->offset;
	if (u->session && bpf_loader_uprobe_session()) {
		rc = attach_point(p, u->session, UPROBE_SESSION, u->symbol, pt->offset);
	} else {
		rc = attach_point(p, u->entry, UPROBE_ENTRY, u->symbol, pt->offset);
		if (!rc && u->ret)
			rc = attach_point(p, u->ret, UPROBE_RETURN, u->symbol, pt->offset);
	}
	if (!rc && p->verbose)
		fprintf(stderr, "pmetrics: Python hook %s at file offset 0x%llx (%s: %s): %s\n",
			u->symbol, (unsigned long long)pt->offset, hook_source_name(pt->source),
			pt->detail, u->use);
	return rc;
}

static int attach_hooks(struct pyspan *p)
{
	uint64_t done[8];
	int n_done = 0, rc = attach_hook(p, step_hook(&p->interp, &p->hooks), done, &n_done);

	for (size_t i = 1; !rc && i < sizeof(coroutine_hooks) / sizeof(coroutine_hooks[0]); i++)
		rc = attach_hook(p, &coroutine_hooks[i], done, &n_done);
	for (size_t i = 0; !rc && i < N_END_HOOKS; i++)
		if (version_needs(&p->interp, end_hooks[i]))
			rc = attach_hook(p, end_hooks[i], done, &n_done);
	if (!rc && p->plain_calls)
		rc = attach_hook(p, &plain_hook, done, &n_done);
	if (!rc && p->plain_calls && needs_iternext_hook(&p->interp))
		rc = attach_hook(p, &iternext_hook, done, &n_done);
	return rc;
}

/* ---- loading ------------------------------------------------------------------ */

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

/* The programs of a hook that load when it is USED: for one with a
 * return side, a session program where the kernel has sessions, else the
 * entry and return pair. */
static void load_hook_programs(struct pyspan *p, const struct hook_use *u, bool used)
{
	bool sessions = u->session && bpf_loader_uprobe_session();
	struct bpf_program *session;

	set_autoload(p, u->entry, used && !sessions);
	if (u->ret)
		set_autoload(p, u->ret, used && !sessions);
	if (!u->session)
		return;
	session = bpf_loader_program(p->obj, u->session);
	bpf_program__set_autoload(session, used && sessions);
	if (used && sessions)
		bpf_loader_prepare_session(session);
}

/* The interpreter's layout and the probe table, read-only for BPF. */
static int set_config(struct pyspan *p, const struct pyspan_layout *layout)
{
	struct bpf_object *o = p->obj;
	__u32 *n_probes = bpf_loader_rodata(o, "n_probes", sizeof(*n_probes));
	struct pyspan_layout *l = bpf_loader_rodata(o, "layout", sizeof(*l));
	struct pyspan_probe_cfg *probes =
		bpf_loader_rodata(o, "probes", PYSPAN_MAX_PROBES * sizeof(*probes));
	bool *any_iterator = bpf_loader_rodata(o, "any_iterator", sizeof(*any_iterator));
	bool *track = bpf_loader_rodata(o, "track_thread_opens", sizeof(*track));

	if (!n_probes || !l || !probes || !any_iterator || !track)
		return -EINVAL;
	*any_iterator = step_hook(&p->interp, &p->hooks) == &iter_send_hook;
	*track = !awaits_in_eval_loop(&p->interp);
	*n_probes = (__u32)p->n_probes;
	*l = *layout;
	for (int i = 0; i < p->n_probes; i++)
		pyspan_probe_cfg_fill(&p->probes[i], &probes[i]);
	return 0;
}

static int own_map_fd(const struct pyspan *p, const char *name);

/* The watch hook's programs besides the watchpoints: where a process
 * forks, execs and ends, and where a module's body runs (a timed
 * function is looked for in a process once its module has run there). */
static int attach_watch_tracking(struct pyspan *p)
{
	if (bpf_links_attach(&p->links, bpf_loader_program(p->obj, "py_watch_exit"),
			     "the watchpoint hook's process-exit tracepoint") ||
	    bpf_links_attach(&p->links, bpf_loader_program(p->obj, "py_watch_exec"),
			     "the watchpoint hook's exec tracepoint") ||
	    bpf_links_attach(&p->links, bpf_loader_program(p->obj, "py_watch_fork"),
			     "the watchpoint hook's fork tracepoint"))
		return -EINVAL;
	if (attach_point(p, "py_module_run", UPROBE_ENTRY, "PyEval_EvalCode",
			 p->hooks.eval_code.offset) ||
	    attach_point(p, "py_module_ran", UPROBE_RETURN, "PyEval_EvalCode",
			 p->hooks.eval_code.offset) ||
	    bpf_links_commit(&p->links, p->interp.path, p->attach_pid, WHAT))
		return -EINVAL;
	if (p->verbose)
		fprintf(stderr, "pmetrics: Python hook PyEval_EvalCode at file offset 0x%llx (%s: %s): "
			"a module's body run: its timed functions are watched\n",
			(unsigned long long)p->hooks.eval_code.offset,
			hook_source_name(p->hooks.eval_code.source), p->hooks.eval_code.detail);
	return 0;
}

/* The set of traced processes is the native tracer's: its maps, shared. */
static int share_traced_set(struct pyspan *p, struct bpf_object *native)
{
	static const char *const maps[] = { "traced_tgids", "ns_targets", "new_children" };
	int err = 0;

	for (size_t i = 0; !err && i < sizeof(maps) / sizeof(maps[0]); i++) {
		struct bpf_map *mine = bpf_object__find_map_by_name(p->obj, maps[i]);
		struct bpf_map *theirs = native ? bpf_object__find_map_by_name(native, maps[i]) : NULL;

		if (mine && theirs)
			err = bpf_map__reuse_fd(mine, bpf_map__fd(theirs));
	}
	if (err)
		fprintf(stderr, "pmetrics: cannot share the traced processes with %s: %s\n", WHAT,
			strerror(-err));
	return err;
}

/* Read-only data, map sizes and which programs load. */
static int configure(struct pyspan *p, const struct pyspan_target *t,
		     const struct pyspan_layout *layout)
{
	struct span_engine_config *config = bpf_loader_rodata(p->obj, "engine", sizeof(*config));
	struct span_engine_opts engine = {
		.ringbuf_bytes = t->ringbuf_bytes,
		.resources = t->resources,
		/* without uprobe sessions the hooks also see the returns of
		 * steps never timed */
		.returns_need_entry = false,
		/* the watch hook keeps its open calls in open_coros */
		.no_call_stacks = p->watching && !p->plain_calls,
		/* the CPU sampler reads only the native tracer's, and
		 * the watch hook's perf_event program never touches them */
		.call_stacks_on_demand = true,
	};
	int rc = set_config(p, layout);

	if (rc || !config)
		return rc ? rc : -EINVAL;
	/* every step hook's programs (PyIter_Send's are theirs) */
	load_hook_programs(p, &iter_send_hook, !p->watching);
	for (size_t i = 0; i < N_END_HOOKS; i++)
		load_hook_programs(p, end_hooks[i],
				   !p->watching && version_needs(&p->interp, end_hooks[i]));
	load_hook_programs(p, &plain_hook, p->plain_calls);
	set_autoload(p, "py_watch", p->watching);
	set_autoload(p, "py_watch_exit", p->watching);
	set_autoload(p, "py_watch_exec", p->watching);
	set_autoload(p, "py_watch_fork", p->watching);
	set_autoload(p, "py_module_run", p->watching);
	set_autoload(p, "py_module_ran", p->watching);
	rc = share_traced_set(p, t->traced_set);
	return rc ? rc : span_engine_configure(p->obj, config, &engine, WHAT);
}

static int watch_target(struct pyspan *p, const struct pyspan_target *t);

static int load_and_attach(struct pyspan *p, const struct pyspan_target *t,
			   const struct pyspan_layout *layout)
{
	int rc;

	p->obj = open_build(p);
	if (!p->obj)
		return -EINVAL;
	bpf_loader_prepare_uprobes(p->obj);
	if ((rc = configure(p, t, layout)) || (rc = bpf_loader_load(p->obj, WHAT)))
		return rc;
	if (p->watching) {
		rc = attach_watch_tracking(p);
		if (!rc && !t->launched)
			rc = watch_target(p, t);
	} else if (!(rc = attach_hooks(p))) {
		rc = bpf_links_commit(&p->links, p->interp.path, p->attach_pid, WHAT);
	}
	if (rc)
		return rc;
	if ((rc = span_engine_attach(p->obj, &p->links)))
		return rc;
	return bpf_links_attach(&p->links, bpf_loader_program(p->obj, "py_thread_exit"),
				"the thread-exit tracepoint");
}

/* ---- the interpreter ---------------------------------------------------------- */

/* One warning naming what this version does not show, and why. */
static void warn_version_limits(const struct pyspan *p)
{
	if (p->plain_calls && p->interp.minor >= 11)
		fprintf(stderr, "pmetrics: warning: Python 3.%d inlines calls between Python "
			"functions: a plain function is timed only when called from C (callbacks, "
			"map(), a thread's target); coroutines are timed at any await depth\n",
			p->interp.minor);
	if (p->plain_calls)
		fprintf(stderr, "pmetrics: warning: --python-hook calls traps on every Python "
			"function call%s (about 2-10 us each): the timed program runs slower\n",
			p->interp.minor >= 11 ? " made from C" : "");
}

/* The interpreter, its version and its layout, or a one-line error. */
static int find_interp(struct pyspan *p, const struct pyspan_target *t,
		       struct pyspan_layout *layout)
{
	char err[512];

	if (python_interp_of_view(t->view, &p->interp, err, sizeof(err))) {
		fprintf(stderr, "pmetrics: %s\n", err);
		return -ENOEXEC;
	}
	if (p->interp.free_threaded) {
		fprintf(stderr, "pmetrics: %s is a free-threaded CPython (%d.%dt), whose objects py: "
			"probes cannot read; use the default build of Python %d.%d\n", p->interp.name,
			p->interp.major, p->interp.minor, p->interp.major, p->interp.minor);
		return -ENOTSUP;
	}
	if (pyspan_layout_for(p->interp.major, p->interp.minor, layout)) {
		fprintf(stderr, "pmetrics: %s is Python %d.%d, which py: probes do not support "
			"(supported: 3.8 to 3.13)\n", p->interp.name, p->interp.major, p->interp.minor);
		return -ENOTSUP;
	}
	if (stat(p->interp.path, &p->interp_id) != 0)
		memset(&p->interp_id, 0, sizeof(p->interp_id));
	if (python_hooks_find(p->interp.path, p->interp.major, p->interp.minor, &p->hooks, err,
			      sizeof(err))) {
		fprintf(stderr, "pmetrics: %s\n", err);
		return -ENOEXEC;
	}
	return 0;
}

/* Every hook point the capture needs is there, or a one-line error
 * naming the file, the version and what is missing. */
static int check_hooks(const struct pyspan *p, const struct pyspan_target *t)
{
	char missing[768];

	missing_hooks(p, missing, sizeof(missing));
	if (missing[0]) {
		fprintf(stderr, "pmetrics: %s (Python %d.%d%s) has no %s: pmetrics cannot find "
			"where its coroutines run%s\n", p->interp.name, p->interp.major,
			p->interp.minor, p->hooks.stripped ? ", stripped" : "", missing,
			t->hook_explicit ? "; --python-hook coroutines cannot be honoured" : "");
		return -ENOENT;
	}
	if (p->plain_calls && needs_iternext_hook(&p->interp) && !p->hooks.gen_iternext.vaddr) {
		fprintf(stderr, "pmetrics: %s (Python %d.%d%s) has no gen_iternext (%s): "
			"--python-hook calls cannot be honoured; use --python-hook coroutines\n",
			p->interp.name, p->interp.major, p->interp.minor,
			p->hooks.stripped ? ", stripped" : "", p->hooks.gen_iternext.detail);
		return -ENOENT;
	}
	if (p->plain_calls && !p->hooks.function_vectorcall.vaddr) {
		fprintf(stderr, "pmetrics: %s (Python %d.%d%s) has no _PyFunction_Vectorcall: "
			"--python-hook calls cannot be honoured (plain functions cannot be timed in "
			"this build); use --python-hook coroutines\n", p->interp.name,
			p->interp.major, p->interp.minor, p->hooks.stripped ? ", stripped" : "");
		return -ENOENT;
	}
	return 0;
}

/* Whether this machine's watchpoints fire, the step test aside.
 * PMETRICS_TEST_WATCH_UNFIRED=1 takes them as firing where they do not,
 * so that a benchmark can measure what armed watchpoints cost a program
 * with no timed call trapping (on a virtual machine that drops hits); the
 * kernel must still step past a hit. */
static int watch_hits_arrive(char *err, size_t len)
{
	if (test_setting_on("PMETRICS_TEST_WATCH_UNFIRED"))
		return 0;
	return pywatch_hits_arrive(err, len);
}

/* What the hook needs of the interpreter: CPython 3.10+ and
 * PyEval_EvalCode. 0, or -errno with a one-line reason in WHY. */
static int watch_interp_check(const struct pyspan *p, char *why, size_t len)
{
	int rc = pywatch_version_check(p->interp.major, p->interp.minor, p->interp.name, why, len);

	if (rc || p->hooks.eval_code.vaddr)
		return rc;
	snprintf(why, len, "%.200s (Python %d.%d) has no PyEval_EvalCode (%s), where pmetrics sees a "
		 "module run: use --python-hook coroutines", p->interp.name, p->interp.major,
		 p->interp.minor, p->hooks.eval_code.detail);
	return -ENOENT;
}

/* The watchpoint hook can run here with this interpreter, or a one-line
 * error. */
static int check_watches(const struct pyspan *p)
{
	char err[512] = "";
	int rc;

	if ((rc = pywatch_step_check(err, sizeof(err))) ||
	    (rc = watch_hits_arrive(err, sizeof(err))) ||
	    (rc = watch_interp_check(p, err, sizeof(err))))
		fprintf(stderr, "pmetrics: --python-hook watch: %s\n", err);
	return rc;
}

/* Whether the watch hook can run for this capture, all tested before
 * anything is attached: at most two functions, what it needs of the
 * interpreter, bpf_loop(), a kernel that runs a BPF program on a
 * watchpoint and moves the thread past its hit, and watchpoints that
 * fire. Else WHY says what is missing. */
static bool watch_usable(const struct pyspan *p, char *why, size_t len)
{
	int steps;

	if (2 * p->n_probes > PYSPAN_MAX_WATCHES) {
		snprintf(why, len, "%d functions, two watchpoints each, and a CPU has %d", p->n_probes,
			 PYSPAN_MAX_WATCHES);
		return false;
	}
	if (watch_interp_check(p, why, len))
		return false;
	if (libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_loop, NULL) <= 0 ||
	    test_setting_on("PMETRICS_TEST_NO_BPF_LOOP")) {
		snprintf(why, len, "the kernel has no bpf_loop() (Linux 5.17), which the hook's "
			 "program finds a thread's frame with");
		return false;
	}
	steps = pywatch_steps_past_bpf_hits();
	if (steps < 0) {
		snprintf(why, len, "no BPF program runs on a watchpoint here (%s; CONFIG_BPF_EVENTS)",
			 strerror(-steps));
		return false;
	}
	return pywatch_steps_verdict(steps, why, len) == 0 && watch_hits_arrive(why, len) == 0;
}

/* The preset's hook where none is asked for: watch where it can run
 * (only the two functions' own calls trap), else coroutines. -v says
 * which, and why. */
static bool choose_watch(const struct pyspan *p)
{
	char why[512] = "", *advice;
	bool watch = watch_usable(p, why, sizeof(why));

	if ((advice = strstr(why, ": use --python-hook"))) /* taken already */
		*advice = '\0';
	if (p->verbose && watch)
		fprintf(stderr, "pmetrics: --preset robot-server: --python-hook watch (hardware "
			"watchpoints: only the two functions' calls trap)\n");
	else if (p->verbose)
		fprintf(stderr, "pmetrics: --preset robot-server: --python-hook coroutines (the watch "
			"hook cannot run here: %s)\n", why);
	return watch;
}

/* ---- the watch hook's programs ------------------------------------------------ */

/* Points holding a debug register on every CPU: all but those lent. */
static int points_in_use(const struct pyspan *p)
{
	int n = 0;

	for (int i = 0; i < PYSPAN_WATCH_IMAGES; i++)
		for (int j = 0; p->images[i].used && j < p->images[i].watch.n_points; j++)
			n += p->images[i].watch.points[j].lent_to < 0;
	return n;
}

/* Points other programs than SLOT hold for the probes in WANT: the
 * registers SLOT may borrow for its own points of those probes. */
static int points_lendable(const struct pyspan *p, int slot, __u32 want)
{
	int n = 0;

	for (int i = 0; i < PYSPAN_WATCH_IMAGES; i++)
		for (int j = 0; i != slot && p->images[i].used && j < p->images[i].watch.n_points; j++)
			n += p->images[i].watch.points[j].lent_to < 0 &&
			     (want & (1u << p->images[i].watch.points[j].idx));
	return n;
}

/* The program other than SLOT that watches ADDR, or -1. */
static int watcher_of(const struct pyspan *p, int slot, uint64_t addr)
{
	for (int i = 0; i < PYSPAN_WATCH_IMAGES; i++)
		for (int j = 0; i != slot && p->images[i].used && j < p->images[i].watch.n_points; j++)
			if (p->images[i].watch.points[j].addr == addr)
				return i;
	return -1;
}

/* The points of program SLOT from FIRST on: one another program
 * watches already (its process may have the same layout) cannot be
 * told apart. */
static int check_clashes(const struct pyspan *p, int slot, int first, char *err, size_t len)
{
	const struct pywatch *w = &p->images[slot].watch;
	int other;

	for (int k = first; k < w->n_points; k++)
		if ((other = watcher_of(p, slot, w->points[k].addr)) >= 0) {
			snprintf(err, len, "process %d would watch %#llx, which process %d watches "
				 "already", (int)p->images[slot].pid,
				 (unsigned long long)w->points[k].addr, (int)p->images[other].pid);
			return -EEXIST;
		}
	return 0;
}

/* What point I of program SLOT is, for py_watch. */
static int point_entry(struct pyspan *p, int slot, int i)
{
	const struct pywatch_point *pt = &p->images[slot].watch.points[i];
	struct pyspan_watch v = { pt->code, pt->idx, pt->kind, (__u32)slot, pt->flags };
	__u64 addr = pt->addr;

	return bpf_map_update_elem(own_map_fd(p, "watches"), &addr, &v, BPF_ANY) ? -errno : 0;
}

/* Point I of program SLOT, for py_watch; then its watchpoints. */
static int point_watch(struct pyspan *p, int slot, int i)
{
	int rc = point_entry(p, slot, i);

	return rc ? rc : pywatch_attach(&p->images[slot].watch, i, i + 1,
					bpf_loader_program(p->obj, "py_watch"));
}

/* Point I of program SLOT no longer watched: its watchpoints closed. */
static void point_unwatch(struct pyspan *p, int slot, int i)
{
	__u64 addr = p->images[slot].watch.points[i].addr;

	pywatch_park(&p->images[slot].watch, i);
	bpf_map_delete_elem(own_map_fd(p, "watches"), &addr);
}

/* Point I of program SLOT (found in process PID) moves to ADDR, for
 * WHY: watched there unless it is lent (then there once given back);
 * said with -v, warned when it cannot be watched. */
static void point_move(struct pyspan *p, int slot, int i, uint64_t addr, pid_t pid,
		       const char *why)
{
	struct pywatch_point *pt = &p->images[slot].watch.points[i];
	const struct py_probe *probe = &p->probes[pt->idx];
	bool lent = pt->lent_to >= 0;

	if (!lent)
		point_unwatch(p, slot, i);
	pt->addr = addr;
	if (!lent && point_watch(p, slot, i))
		fprintf(stderr, "pmetrics: warning: --python-hook watch: process %d: py:%s:%s cannot "
			"be watched at %#llx (%s): its calls give no row\n", (int)pid, probe->module,
			probe->qualname, (unsigned long long)addr, why);
	else if (p->verbose)
		fprintf(stderr, "pmetrics: watching %#llx in process %d instead (py:%s:%s: %s)\n",
			(unsigned long long)addr, (int)pid, probe->module, probe->qualname, why);
}

/* Coroutines of the probes in MASK that program SLOT's processes opened:
 * their end cannot be seen while its points are lent, so they give no
 * row (they count as still running at the end). */
static void forget_opens(struct pyspan *p, int slot, __u32 mask)
{
	int opens = own_map_fd(p, "watch_opens"), coros = own_map_fd(p, "open_coros");
	int images = own_map_fd(p, "watch_images");
	struct { __u64 gen; __u32 tgid, pad; } key, next;
	struct pyspan_watch_proc proc;
	struct open_coro coro;
	void *prev = NULL;

	while (bpf_map_get_next_key(opens, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(images, &next.tgid, &proc) == 0 && (int)proc.image == slot &&
		    bpf_map_lookup_elem(coros, &next, &coro) == 0 && (mask & (1u << coro.idx))) {
			bpf_map_delete_elem(opens, &next);
			prev = NULL; /* the walk starts again: the key it stood on is gone */
		}
	}
}

/* A point of another program that one borrowed the registers of. */
struct borrowed {
	int image, point;
};

/* NEED registers for program TO's new points of the probes in FOUND,
 * taken from other programs' points of the same probes: the process
 * that has just run a timed function's module is taken to be the one
 * about to call it (the robot server runs its analysis in a child it
 * starts for it). The points come back when TO's processes end. Each
 * point taken goes into OUT (room for PYSPAN_MAX_WATCHES); how many. */
static int borrow(struct pyspan *p, int to, __u32 found, int need, struct borrowed *out)
{
	int n = 0;

	for (int i = 0; i < PYSPAN_WATCH_IMAGES && need > 0; i++) {
		struct pywatch *w = &p->images[i].watch;
		__u32 taken = 0;

		for (int j = 0; i != to && p->images[i].used && j < w->n_points && need > 0; j++)
			if (w->points[j].lent_to < 0 && (found & (1u << w->points[j].idx))) {
				point_unwatch(p, i, j);
				w->points[j].lent_to = to;
				taken |= 1u << w->points[j].idx;
				out[n++] = (struct borrowed){ i, j };
				need--;
			}
		if (taken)
			forget_opens(p, i, taken);
		for (int k = 0; k < p->n_probes; k++)
			if (taken & (1u << k))
				fprintf(stderr, "pmetrics: warning: --python-hook watch: process %d ran the "
					"module of py:%s:%s: process %d's watchpoints for it are its while it "
					"runs (a CPU has %d); process %d's calls of it are not timed meanwhile\n",
					(int)p->images[to].pid, p->probes[k].module, p->probes[k].qualname,
					(int)p->images[i].pid, PYSPAN_MAX_WATCHES, (int)p->images[i].pid);
	}
	return n;
}

/* What program SLOT borrowed goes back to the programs it came from. */
static void give_back(struct pyspan *p, int slot)
{
	for (int i = 0; i < PYSPAN_WATCH_IMAGES; i++) {
		struct pywatch *w = &p->images[i].watch;

		for (int j = 0; p->images[i].used && j < w->n_points; j++) {
			if (w->points[j].lent_to != slot)
				continue;
			w->points[j].lent_to = -1;
			if (point_watch(p, i, j))
				fprintf(stderr, "pmetrics: warning: --python-hook watch: process %d's "
					"watchpoint at %#llx could not be set again: its calls of py:%s:%s "
					"are no longer timed\n", (int)p->images[i].pid,
					(unsigned long long)w->points[j].addr,
					p->probes[w->points[j].idx].module,
					p->probes[w->points[j].idx].qualname);
			else if (p->verbose)
				fprintf(stderr, "pmetrics: watching %#llx in process %d again\n",
					(unsigned long long)w->points[j].addr, (int)p->images[i].pid);
		}
	}
}

/* Program SLOT's points closed, and those it borrowed given back. */
static void release_image(struct pyspan *p, int slot)
{
	struct watch_image *img = &p->images[slot];

	for (int i = 0; i < img->watch.n_points; i++)
		if (img->watch.points[i].lent_to < 0)
			point_unwatch(p, slot, i);
	pywatch_close(&img->watch);
	memset(img, 0, sizeof(*img));
	give_back(p, slot);
}

/* Marks in USED the programs some process of MAP (keyed by KEY_SIZE
 * bytes) still runs. */
static void images_held(int fd, size_t key_size, bool *used)
{
	__u64 key[2], next[2];
	struct pyspan_watch_proc v;
	void *prev = NULL;

	while (bpf_map_get_next_key(fd, prev, next) == 0) {
		if (bpf_map_lookup_elem(fd, next, &v) == 0 && v.image < PYSPAN_WATCH_IMAGES)
			used[v.image] = true;
		memcpy(key, next, key_size);
		prev = key;
	}
}

/* Programs no process runs any more give their watchpoints back. */
static void release_ended_images(struct pyspan *p)
{
	bool held[PYSPAN_WATCH_IMAGES] = { false };

	images_held(own_map_fd(p, "watch_images"), sizeof(__u32), held);
	images_held(own_map_fd(p, "watch_children"), sizeof(__u64), held);
	images_held(own_map_fd(p, "watch_ns_targets"), sizeof(__u32), held);
	for (int i = 0; i < PYSPAN_WATCH_IMAGES; i++)
		if (p->images[i].used && !held[i])
			release_image(p, i);
}

/* Program SLOT's interpreter, for py_watch; then its points from FIRST
 * on, with registers borrowed for them where the CPU has too few free. */
static int arm_image(struct pyspan *p, int slot, int first, __u32 found, int free)
{
	struct watch_image *img = &p->images[slot];
	struct borrowed taken[PYSPAN_MAX_WATCHES];
	__u32 key = (__u32)slot;
	int rc = 0, i, n = 0;

	if (bpf_map_update_elem(own_map_fd(p, "watch_proc"), &key, &img->proc.walk, BPF_ANY))
		return -errno;
	if (img->watch.n_points - first > free)
		n = borrow(p, slot, found, img->watch.n_points - first - free, taken);
	for (i = first; !rc && i < img->watch.n_points; i++)
		rc = point_watch(p, slot, i);
	while (rc && i-- > first)
		point_unwatch(p, slot, i);
	/* not armed: what was borrowed for it goes back at once */
	while (rc && n-- > 0) {
		p->images[taken[n].image].watch.points[taken[n].point].lent_to = -1;
		point_watch(p, taken[n].image, taken[n].point);
	}
	return rc;
}

static void say_watched(const struct pyspan *p, const struct watch_image *img, int first)
{
	for (int i = first; p->verbose && i < img->watch.n_points; i++) {
		const struct pywatch_point *w = &img->watch.points[i];

		fprintf(stderr, "pmetrics: watching %#llx in process %d (%s of py:%s:%s, code object "
			"%#llx)\n", (unsigned long long)w->addr, (int)img->pid,
			w->kind == PYSPAN_WATCH_FIRST_STEP ? "first step" : "references",
			p->probes[w->idx].module, p->probes[w->idx].qualname,
			(unsigned long long)w->code);
	}
}

/* The two points of probe IDX in W, at *FS and *REFS; false unless it
 * has exactly those. */
static bool probe_points(struct pywatch *w, __u32 idx, int *fs, int *refs)
{
	int n = 0;

	for (int i = 0; i < w->n_points; i++)
		if (w->points[i].idx == idx) {
			n++;
			*(w->points[i].kind == PYSPAN_WATCH_FIRST_STEP ? fs : refs) = i;
		}
	return n == 2;
}

/* Program SLOT's provisional probes in MASK found again in MODULE, a
 * module of their file that has just run: their points move there.
 * Which moved. */
static __u32 retake_provisional(struct pyspan *p, int slot, const struct pywatch_module *module,
				__u32 mask)
{
	struct watch_image *img = &p->images[slot];
	struct pywatch fresh;
	__u32 found = 0;
	char err[512];

	memset(&fresh, 0, sizeof(fresh));
	if (pywatch_find(&fresh, &img->proc, p->probes, p->n_probes, module, mask,
			 PYSPAN_MAX_WATCHES, &found, err, sizeof(err)))
		return 0;
	for (__u32 i = 0; i < (__u32)p->n_probes; i++) {
		int old[2] = { -1, -1 }, now[2] = { -1, -1 };

		if (!(found & (1u << i)) || !probe_points(&img->watch, i, &old[0], &old[1]) ||
		    !probe_points(&fresh, i, &now[0], &now[1])) {
			found &= ~(1u << i);
			continue;
		}
		for (int k = 0; k < 2; k++) {
			struct pywatch_point *pt = &img->watch.points[old[k]];

			pt->flags = fresh.points[now[k]].flags;
			if (pt->addr == fresh.points[now[k]].addr) {
				if (pt->lent_to < 0) /* the main module's own end */
					point_entry(p, slot, old[k]);
				continue;
			}
			pt->code = fresh.points[now[k]].code;
			point_move(p, slot, old[k], fresh.points[now[k]].addr, img->pid,
				   "its module imported again after the main module");
		}
	}
	img->provisional &= ~found;
	return found;
}

/* A program for process PID: the one it runs already, or a free one. */
static int image_for(struct pyspan *p, pid_t pid, const struct pyspan_watch_proc *known,
		     char *err, size_t len)
{
	if (known->image < PYSPAN_WATCH_IMAGES) {
		if (p->images[known->image].pid == pid)
			return (int)known->image;
		/* forked from the process it was found in, whose memory it
		 * no longer shares for what came after the fork */
		snprintf(err, len, "process %d was forked from process %d before the module ran "
			 "there: its own functions are not watched", (int)pid,
			 (int)p->images[known->image].pid);
		return -EBUSY;
	}
	for (int i = 0; i < PYSPAN_WATCH_IMAGES; i++)
		if (!p->images[i].used) {
			memset(&p->images[i], 0, sizeof(p->images[i]));
			return i;
		}
	snprintf(err, len, "process %d is not watched: %d programs are watched already, the most "
		 "pmetrics follows at once", (int)pid, PYSPAN_WATCH_IMAGES);
	return -ENOSPC;
}

/* Looks for the functions of the probes in WANT in process PID (kernel
 * tgid KTGID) and watches those found; *FOUND says which. MODULE: their
 * module, which has just run there, so one not found there never will
 * be. 0, or -errno with a one-line reason in ERR. */
static int watch_program(struct pyspan *p, pid_t pid, __u32 ktgid, __u32 want,
			 const struct pywatch_module *module, __u32 *found, char *err, size_t len)
{
	int fd = own_map_fd(p, "watch_images"), slot, first = 0, rc = 0, free;
	struct pyspan_watch_proc known = { PYSPAN_WATCH_NO_IMAGE, 0 };
	struct watch_image *img = NULL;
	__u32 moved = 0, again;

	*found = 0;
	memset(&p->last_find, 0, sizeof(p->last_find));
	release_ended_images(p);
	bpf_map_lookup_elem(fd, &ktgid, &known);
	want &= ~known.found;
	if (!want)
		return 0;
	slot = rc = image_for(p, pid, &known, err, len);
	if (slot >= 0) {
		img = &p->images[slot];
		first = img->watch.n_points;
		if (!img->used && (rc = python_proc_find(pid, &img->proc, err, len)) == -ENOENT &&
		    !err[0])
			snprintf(err, len, "process %d runs no CPython", (int)pid);
	}
	again = img && !rc && module && !module->at_start ? want & img->provisional : 0;
	if (again) {
		moved = retake_provisional(p, slot, module, again);
		want &= ~again; /* watched already, moved or not */
	}
	free = PYSPAN_MAX_WATCHES - points_in_use(p);
	if (img && !rc && want) {
		img->pid = pid;
		rc = pywatch_find(&img->watch, &img->proc, p->probes, p->n_probes, module, want,
				  first + free + points_lendable(p, slot, want), found, err, len);
		p->last_find = img->watch.last;
	}
	if (img && !rc && img->watch.n_points - first > free + points_lendable(p, slot, *found)) {
		snprintf(err, len, "--python-hook watch needs %d hardware watchpoints for these functions "
			 "in process %d (2 per code object) besides those other processes hold, and a "
			 "CPU has %d: time fewer functions, or use --python-hook coroutines",
			 img->watch.n_points - first, (int)pid, PYSPAN_MAX_WATCHES);
		rc = -E2BIG;
	}
	if (img && !rc && img->watch.n_points > first &&
	    !(rc = check_clashes(p, slot, first, err, len)) &&
	    !(rc = arm_image(p, slot, first, *found, free))) {
		img->used = true;
		known.image = (__u32)slot;
		say_watched(p, img, first);
	}
	if (img && rc) {
		img->watch.n_points = first;
		if (!img->used)
			release_image(p, slot);
	}
	if (module && module->at_start) { /* looked for again as modules of their file run */
		if (img && img->used && !rc)
			img->provisional |= *found;
	} else
		known.found |= (module ? want : *found) | moved;
	*found |= moved;
	bpf_map_update_elem(fd, &ktgid, &known, BPF_ANY);
	/* one that ended meanwhile would hold its program's registers */
	if (kill(pid, 0) && errno == ESRCH)
		bpf_map_delete_elem(fd, &ktgid);
	return rc;
}

/* The target, when pmetrics attaches to it: its functions not defined
 * yet are looked for as their modules run. */
static int watch_target(struct pyspan *p, const struct pyspan_target *t)
{
	__u32 all = (1u << p->n_probes) - 1, found;
	char err[512] = "";
	int rc = watch_program(p, t->pid, (__u32)t->pid, all, NULL, &found, err, sizeof(err));
	int images = own_map_fd(p, "watch_images");
	struct pyspan_watch_proc entry;
	__u32 key = (__u32)t->pid;
	uint64_t dev, ino;

	if (rc) {
		fprintf(stderr, "pmetrics: --python-hook watch: %s\n", err);
		return rc;
	}
	/* in a PID namespace of pmetrics' own, PID is not what the kernel
	 * calls it: BPF moves the entry over at the target's first hit */
	if (span_engine_in_pidns(&dev, &ino) && bpf_map_lookup_elem(images, &key, &entry) == 0) {
		bpf_map_delete_elem(images, &key);
		bpf_map_update_elem(own_map_fd(p, "watch_ns_targets"), &key, &entry, BPF_ANY);
	}
	for (int i = 0; i < p->n_probes; i++)
		if (!(found & (1u << i)))
			fprintf(stderr, "pmetrics: py:%s:%s is not defined in process %d yet: it is "
				"watched once its module has run there\n", p->probes[i].module,
				p->probes[i].qualname, (int)t->pid);
	return 0;
}

int pyspan_watch_requests_fd(const struct pyspan *p)
{
	return p && p->watching ? own_map_fd(p, "watch_requests") : -1;
}

static double ms_between(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) * 1e3 + (double)(b->tv_nsec - a->tv_nsec) / 1e6;
}

/* Whether request R's module, whose body starts, is its program's main
 * one: its functions are looked for now, the end of its body being the
 * program's. Any other is looked into as its body returns. */
static bool starts_main_module(const struct pyspan *p, const struct pyspan_watch_request *r)
{
	struct python_proc proc = { .pid = (pid_t)r->tgid, .major = p->interp.major,
				    .minor = p->interp.minor };

	return python_layout_for(proc.major, proc.minor, &proc.walk.layout) == 0 &&
	       pywatch_is_main_module(&proc, r->globals);
}

/* The first call of R's function, whose process is held for it, starts
 * as the process goes on: the hold is pmetrics', not the function's. */
static void start_after_hold(struct pyspan *p, const struct pyspan_watch_request *r)
{
	struct { __u64 gen; __u32 tgid, pad; } key = { r->coroutine, r->kernel_tgid, 0 };
	int coros = own_map_fd(p, "open_coros");
	struct open_coro coro;

	if (bpf_map_lookup_elem(coros, &key, &coro) || !coro.start_ns)
		return;
	coro.start_ns = monotonic_ns(); /* BPF's clock, as its start was */
	bpf_map_update_elem(coros, &key, &coro, BPF_EXIST);
}

/* A first call of a function watched at its code object's references
 * (3.12+, found before its function object existed: as the main
 * module's body started) found its function object, R->function, in its
 * frame: that object's references end its calls as soon as they return,
 * where the code's are dropped only as the coroutine is freed. The point
 * moves there, for every process of the program (a function defined
 * once: the module's own); the coroutine open now ends there too (its
 * frame holds the function). */
static void watch_function(struct pyspan *p, const struct pyspan_watch_request *r)
{
	struct pyspan_watch_proc known;
	struct python_proc asking;
	struct watch_image *img;
	int idx = __builtin_ffs((int)r->probes) - 1, fs = -1, refs = -1;
	const char *why = NULL;

	if (bpf_map_lookup_elem(own_map_fd(p, "watch_images"), &r->kernel_tgid, &known) ||
	    known.image >= PYSPAN_WATCH_IMAGES || !p->images[known.image].used || idx < 0)
		return;
	img = &p->images[known.image];
	if (!probe_points(&img->watch, (__u32)idx, &fs, &refs))
		return;
	img->watch.points[fs].flags = 0; /* as py_watch has it now */
	if (img->watch.points[refs].addr != r->code)
		return; /* moved already: another thread asked too */
	asking = img->proc; /* the process that asked: a forked child may */
	asking.pid = (pid_t)r->tgid;
	if (!pywatch_function_runs(&asking, r->function, r->code))
		why = "its frame held no function object of its code";
	else if (watcher_of(p, (int)known.image, r->function) >= 0)
		why = "another program watches the same address";
	if (why) {
		fprintf(stderr, "pmetrics: warning: --python-hook watch: process %d: py:%s:%s: %s: "
			"its calls end when their coroutine is freed\n", (int)r->tgid,
			p->probes[idx].module, p->probes[idx].qualname, why);
		return;
	}
	point_move(p, (int)known.image, refs, r->function, (pid_t)r->tgid,
		   "its function object's references, from its first call");
}

/* Waits up to 100 ms for process PID to be stopped: a stop asked for by
 * a watchpoint's hit is sent a moment after it (the hit runs with
 * interrupts off), and a SIGCONT before it would not cancel it. */
static void wait_stopped(pid_t pid)
{
	struct proc_stat st;
	struct timespec pause = { 0, 200000 };

	for (int i = 0; i < 500; i++) {
		if (proc_stat_read(pid, &st) || st.state == 'T' || st.state == 't')
			return;
		nanosleep(&pause, NULL);
	}
}

/* Process TGID, stopped for a request, goes on. */
static void let_go(const struct pyspan *p, __u32 tgid)
{
	/* first: once going on, it may be stopped for another request */
	bpf_map_delete_elem(own_map_fd(p, "watch_stopped"), &tgid);
	kill((pid_t)tgid, SIGCONT);
}

int pyspan_watch_request(void *ctx, void *data, size_t size)
{
	const struct pyspan_watch_request *r = data;
	struct pyspan *p = ctx;
	char err[512] = "";
	__u32 found = 0;
	struct timespec t0, t1;
	struct pywatch_module module;

	if (size < sizeof(*r))
		return 0;
	if (r->ask == PYSPAN_ASK_ENDED) { /* a watched process ended */
		release_ended_images(p);
		return 0;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (r->ask == PYSPAN_ASK_FUNCTION) {
		watch_function(p, r);
		wait_stopped((pid_t)r->tgid);
		start_after_hold(p, r);
		let_go(p, r->tgid);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (p->verbose)
			fprintf(stderr, "pmetrics: process %d held %.3f ms at a first call\n",
				(int)r->tgid, ms_between(&t0, &t1));
		return 0;
	}
	if (r->ask == PYSPAN_ASK_MODULE_STARTS && !starts_main_module(p, r)) {
		let_go(p, r->tgid);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (p->verbose)
			fprintf(stderr, "pmetrics: process %d held %.3f ms as a module of a timed "
				"function started (not the main module: looked into as it returns)\n",
				(int)r->tgid, ms_between(&t0, &t1));
		return 0;
	}
	module = (struct pywatch_module){ r->code, r->globals, r->ask == PYSPAN_ASK_MODULE_STARTS };
	if (watch_program(p, (pid_t)r->tgid, r->kernel_tgid, r->probes, &module, &found, err,
			  sizeof(err)))
		fprintf(stderr, "pmetrics: warning: --python-hook watch: %s\n", err);
	for (int i = 0; i < p->n_probes; i++)
		if ((r->probes & ~found) & (1u << i))
			fprintf(stderr, "pmetrics: warning: the module of py:%s:%s ran in process %d "
				"and did not define it%s\n", p->probes[i].module, p->probes[i].qualname,
				(int)r->tgid, err[0] ? "" : ": check the qualified name");
		else if (found & (1u << i) && p->last_find.main_module && !module.at_start)
			fprintf(stderr, "pmetrics: warning: py:%s:%s is in process %d's main module, "
				"whose body is the whole program: --python-hook watch found it only as that "
				"ended, and timed no call of it; time functions of imported modules, or use "
				"the default hook\n", p->probes[i].module, p->probes[i].qualname,
				(int)r->tgid);
	let_go(p, r->tgid);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (p->verbose)
		fprintf(stderr, "pmetrics: process %d held %.1f ms while its functions were looked for "
			"(%s%.1f MB)\n", (int)r->tgid, ms_between(&t0, &t1),
			p->last_find.by_module ? "in the module's code and globals, heap read: "
						    : "heap read: ",
			(double)p->last_find.scan_bytes / 1e6);
	return 0;
}

/* Every process stopped for a request not answered goes on. */
static void let_stopped_go(const struct pyspan *p);

void pyspan_quiesce(struct pyspan *p)
{
	__u32 zero = 0, one = 1;

	if (!p || !p->watching || !p->obj)
		return;
	bpf_map_update_elem(own_map_fd(p, "watch_closing_flag"), &zero, &one, BPF_ANY);
	let_stopped_go(p);
}

void pyspan_tick(struct pyspan *p)
{
	if (p && p->watching && p->obj)
		release_ended_images(p);
}

static void let_stopped_go(const struct pyspan *p)
{
	int fd = own_map_fd(p, "watch_stopped");
	__u32 key, next;
	void *prev = NULL;

	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		kill((pid_t)next, SIGCONT);
		key = next;
		prev = &key;
	}
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
	p->plain_calls = target->plain_calls;
	p->verbose = target->verbose;
	p->attach_pid = target->follow_children ? -1 : target->pid;
	p->watching = target->watch;
	if ((rc = find_interp(p, target, &layout)))
		goto fail;
	if (target->watch_preferred)
		p->watching = choose_watch(p);
	else if (target->verbose)
		fprintf(stderr, "pmetrics: py: probes: --python-hook %s (%s)\n",
			p->watching ? "watch" : p->plain_calls ? "calls" : "coroutines",
			target->hook_explicit ? "as given" : "the default; --python-hook calls "
			"times plain functions too, at a cost named at start");
	if ((rc = p->watching ? (target->watch_preferred ? 0 : check_watches(p))
			      : check_hooks(p, target)))
		goto fail;
	if (target->verbose)
		fprintf(stderr, "pmetrics: Python %d.%d interpreter %s (%s; opened as %s)\n",
			p->interp.major, p->interp.minor, p->interp.name,
			p->hooks.stripped ? "stripped" : "with symbols", p->interp.path);
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

/* ---- children running another interpreter ---------------------------------- */

void pyspan_check_process(struct pyspan *p, pid_t pid)
{
	struct resolved_file file;
	struct target_view view;
	char needed[256];
	struct stat st;

	if (!p || p->attach_pid > 0)
		return;
	for (int i = 0; i < p->n_checked; i++)
		if (p->checked[i] == pid)
			return;
	if (p->n_checked == CHECKED_MAX || target_view_of_pid(&view, pid) != 0)
		return;
	p->checked[p->n_checked++] = pid;
	/* just exec'd, it may not map its libpython yet: its executable
	 * names it (DT_NEEDED) */
	if (resolve_mapped_prefix(&view, "libpython", &file) != 0 &&
	    (elf_needed(view.exe, "libpython", needed, sizeof(needed)) != 0 ||
	     resolve_needed(&view, needed, &file) != 0)) {
		snprintf(file.path, sizeof(file.path), "%s", view.exe);
		snprintf(file.name, sizeof(file.name), "%s", view.exe_name);
	}
	if (stat(file.path, &st) != 0 ||
	    (st.st_dev == p->interp_id.st_dev && st.st_ino == p->interp_id.st_ino))
		return;
	if (!strstr(file.name, "python"))
		return; /* not a Python at all: nothing to miss */
	fprintf(stderr, "pmetrics: warning: child process %d runs another interpreter (%s), "
		"not the hooked %s: its py: calls are not seen; trace it with another pmetrics "
		"record --pid %d\n", (int)pid, file.name, p->interp.name, (int)pid);
}

/* ---- the summary --------------------------------------------------------------- */

static void summary_probe(const struct pyspan *p, int i, FILE *out)
{
	const struct py_probe *pr = &p->probes[i];
	__u64 spans = pyspan_probe_counter(p, i, PYSPAN_PC_SPANS);
	bool seen = spans || pyspan_probe_counter(p, i, PYSPAN_PC_ENTRIES);

	fprintf(out, "pmetrics: py:%s:%s: %llu span%s\n", pr->module, pr->qualname,
		(unsigned long long)spans, spans == 1 ? "" : "s");
	if (seen)
		return;
	if (p->watching)
		fprintf(out, "pmetrics: warning: py:%s:%s was never seen: no coroutine of it took a "
			"first step while watched\n", pr->module, pr->qualname);
	else if (!p->plain_calls)
		fprintf(out, "pmetrics: warning: py:%s:%s: no coroutine of it ran during the "
			"capture%s%s\n", pr->module, pr->qualname, pr->known_async ? "" :
			"; check the module and qualified name (a plain function needs "
			"--python-hook calls", pr->known_async ? "" : p->interp.minor >= 12 ? ")" :
			"; async generators are timed from Python 3.12 on)");
	else
		fprintf(out, "pmetrics: warning: py:%s:%s was never seen during the capture%s\n",
			pr->module, pr->qualname, pr->known_async ? "" :
			p->interp.minor >= 11 ? " (a plain function called from Python is inlined "
						"by this version)" : " (check the module and qualified name)");
}

/* Coroutines that started under pmetrics and have not finished. */
static __u64 open_coroutines(const struct pyspan *p)
{
	struct { __u64 gen; __u32 tgid, pad; } key, next;
	int fd = own_map_fd(p, "open_coros");
	struct open_coro value;
	void *prev = NULL;
	__u64 n = 0;

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
	n = open_coroutines(p);
	if (n)
		fprintf(out, "pmetrics: python spans open at the end: %llu coroutine(s) still running "
			"(no row)\n", (unsigned long long)n);
}

void pyspan_close(struct pyspan *p)
{
	if (!p)
		return;
	/* the module probes go first: no process is stopped after the last
	 * one is let go on */
	bpf_links_destroy(&p->links);
	if (p->watching && p->obj) {
		let_stopped_go(p);
		for (int i = 0; i < PYSPAN_WATCH_IMAGES; i++)
			pywatch_close(&p->images[i].watch);
	}
	pyspan_bpf__destroy(p->core);
	pyspan_nobtf_bpf__destroy(p->nobtf);
	free(p);
}

/* ---- pmetrics check --pid ---------------------------------------------------- */

static void report_point(struct pyspan_report *r, const struct python_hooks *h,
			 const struct hook_use *u)
{
	const struct python_hook_point *pt = hook_point(h, u);
	struct pyspan_hook_point *out;

	if (r->n_points == PYSPAN_REPORT_POINTS)
		return;
	out = &r->points[r->n_points++];
	out->symbol = u->symbol;
	out->use = u->use;
	out->found = pt->vaddr != 0;
	out->source = hook_source_name(pt->source);
	snprintf(out->detail, sizeof(out->detail), "%s", pt->detail);
	out->offset = pt->offset;
}

int pyspan_report(const struct target_view *v, struct pyspan_report *r, char *err, size_t errlen)
{
	struct pyspan_layout layout;
	struct python_hooks h;
	int rc;

	memset(r, 0, sizeof(*r));
	rc = python_interp_of_view(v, &r->interp, err, errlen);
	if (rc)
		return rc;
	rc = python_hooks_find(r->interp.path, r->interp.major, r->interp.minor, &h, err, errlen);
	if (rc)
		return rc;
	r->stripped = h.stripped;
	r->supported = !r->interp.free_threaded &&
		       pyspan_layout_for(r->interp.major, r->interp.minor, &layout) == 0;
	for (size_t i = 0; i < sizeof(coroutine_hooks) / sizeof(coroutine_hooks[0]); i++)
		report_point(r, &h, &coroutine_hooks[i]);
	if (r->interp.minor >= 10)
		report_point(r, &h, &iter_send_hook);
	for (size_t i = 0; i < N_END_HOOKS; i++)
		if (version_needs(&r->interp, end_hooks[i]))
			report_point(r, &h, end_hooks[i]);
	report_point(r, &h, &plain_hook);
	if (needs_iternext_hook(&r->interp))
		report_point(r, &h, &iternext_hook);
	return 0;
}
