// SPDX-License-Identifier: MIT
/* The watchpoint hook of Python spans; see pywatch.h. */
#include "pywatch.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "array_grow.h"
#include "pyspan.h"
#include "python_probe.h"
#include "symbolizer.h"

#define CO_COROUTINE 0x80
#define SCAN_CHUNK (1u << 20)
/* Bytes of a code or function object read to match it: past every field
 * taken (the offsets are checked against it; 3.13 takes them from the
 * interpreter's own _Py_DebugOffsets). */
#define CODE_HEAD 320
/* Code units read to find a coroutine's first step. */
#define PROLOGUE_UNITS 32

/* A watchpoint on ADDR: of thread TID on any CPU, or (TID -1) of every
 * task on CPU. */
static int watchpoint_open(pid_t tid, int cpu, uint64_t addr, uint32_t len)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_BREAKPOINT;
	a.size = sizeof(a);
	a.bp_type = HW_BREAKPOINT_RW; /* x86 has no read-only watchpoint */
	a.bp_addr = addr;
	a.bp_len = len;
	a.sample_period = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	return (int)syscall(SYS_perf_event_open, &a, tid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

void pywatch_refusal(int err, char *why, size_t len)
{
	if (err == EACCES || err == EPERM)
		snprintf(why, len, "a hardware watchpoint is not permitted (perf_event_open: %s): "
			 "run pmetrics as root, with CAP_PERFMON and CAP_SYS_PTRACE", strerror(err));
	else if (err == EINVAL)
		snprintf(why, len, "the kernel refused the watchpoint's settings (perf_event_open: %s; "
			 "an address or length this CPU cannot watch): use --python-hook coroutines",
			 strerror(err));
	else if (err == ENOSPC || err == EBUSY)
		snprintf(why, len, "no debug register is free for a hardware watchpoint "
			 "(perf_event_open: %s; a debugger or another watchpoint holds them): detach it, "
			 "or use --python-hook coroutines", strerror(err));
	else
		snprintf(why, len, "this kernel gives no hardware watchpoint (perf_event_open: %s; "
			 "CONFIG_HAVE_HW_BREAKPOINT): use --python-hook coroutines", strerror(err));
}

static volatile uint64_t step_test_word;

/* The child of the step test: one write to a word it watches with PROG
 * on the hit. Exits 0 once past it, 2 when the watchpoint or the
 * program was refused. */
static void step_test_child(int prog)
{
	int fd = watchpoint_open(0, -1, (uintptr_t)&step_test_word, HW_BREAKPOINT_LEN_8);

	if (fd < 0 || ioctl(fd, PERF_EVENT_IOC_SET_BPF, prog))
		_exit(2);
	step_test_word = 1;
	_exit(0);
}

int pywatch_steps_past_bpf_hits(void)
{
	int prog = bpf_loader_empty_program(BPF_PROG_TYPE_PERF_EVENT, 0, "pm_step_test");
	int status = 0, rc = -ETIMEDOUT;
	pid_t child;

	if (prog < 0)
		return prog;
	child = fork();
	if (child == 0)
		step_test_child(prog);
	close(prog);
	if (child < 0)
		return -errno;
	for (int i = 0; i < 100 && rc == -ETIMEDOUT; i++) {
		pid_t r = waitpid(child, &status, WNOHANG);

		if (r == child)
			rc = WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 1 : -EOPNOTSUPP;
		else if (r < 0)
			rc = -errno;
		else
			usleep(20 * 1000);
	}
	if (rc != -ETIMEDOUT)
		return rc;
	kill(child, SIGKILL); /* trapping on its write for 2 s */
	waitpid(child, &status, 0);
	return 0;
}

static volatile uint64_t fire_check_word;

int pywatch_steps_verdict(int steps, char *why, size_t len)
{
	if (steps != 0)
		return 0;
	snprintf(why, len, "this kernel does not move a thread past a watchpoint hit that runs a BPF "
		 "program (a test write trapped for 2 s; arm64 before the fix of Linux 6.6): the traced "
		 "program would trap forever: use --python-hook coroutines");
	return -ENOTSUP;
}

int pywatch_step_check(char *why, size_t len)
{
	return pywatch_steps_verdict(pywatch_steps_past_bpf_hits(), why, len);
}

int pywatch_hits_arrive(char *why, size_t len)
{
	long long seen = 0;
	int fd, err;

	fd = watchpoint_open(0, -1, (uintptr_t)&fire_check_word, HW_BREAKPOINT_LEN_8);
	if (fd < 0) {
		err = errno;
		pywatch_refusal(err, why, len);
		return -err;
	}
	for (int i = 0; i < 10; i++)
		fire_check_word = (uint64_t)i;
	if (read(fd, &seen, sizeof(seen)) != sizeof(seen))
		seen = 0;
	close(fd);
	if (seen > 0)
		return 0;
	snprintf(why, len, "this machine's hardware watchpoints never fire (0 of 10 writes seen: a "
		 "virtual machine that does not pass debug exceptions on): use --python-hook coroutines");
	return -ENOTSUP;
}

int pywatch_fire_check(char *why, size_t len)
{
	int err = pywatch_step_check(why, len);

	return err ? err : pywatch_hits_arrive(why, len);
}

/* ---- a coroutine's first step --------------------------------------------- */

/* The opcodes a 3.11+ coroutine's code starts with before its first RESUME. */
struct prologue_ops {
	int minor;
	uint8_t return_generator, pop_top, make_cell, copy_free_vars, nop;
};

static const struct prologue_ops prologues[] = {
	{ 11, 75, 1, 135, 149, 9 },
	{ 12, 75, 1, 135, 149, 9 },
	{ 13, 35, 32, 94, 62, 30 },
};

/* 3.10's GEN_START: a coroutine's code starts with it, and no jump
 * leads back to it. */
#define GEN_START_310 129

int pywatch_first_step(const uint8_t *code, int n, int minor)
{
	const struct prologue_ops *ops = NULL;
	bool generator = false;

	if (minor == 10)
		return n > 0 && code[0] == GEN_START_310 ? 0 : -1;
	for (size_t i = 0; i < sizeof(prologues) / sizeof(prologues[0]); i++)
		if (prologues[i].minor == minor)
			ops = &prologues[i];
	for (int i = 0; ops && i < n; i++) {
		uint8_t op = code[2 * i];

		if (op == ops->return_generator)
			generator = true;
		else if (op != ops->pop_top && op != ops->make_cell && op != ops->copy_free_vars &&
			 op != ops->nop)
			return generator ? i : -1;
	}
	return -1;
}

/* ---- finding the code objects ---------------------------------------------- */

/* A live function object, its code and its __qualname__ (a str). */
struct seen_function {
	uint64_t function, code, qualname;
};

struct scan {
	const struct python_proc *p;
	struct pyspan_layout obj; /* co_flags, func_code, func_qualname */
	struct python_names *names;
	const struct pyspan_probe_cfg *cfg;
	int n_probes;
	uint64_t found[PYSPAN_MAX_PROBES][PYSPAN_MAX_WATCHES];
	int n_found[PYSPAN_MAX_PROBES];
	bool not_coroutine[PYSPAN_MAX_PROBES];
	/* every function object: which ones run a found code is known only
	 * once the scan is over */
	struct seen_function *functions;
	size_t n_functions, cap_functions;
	struct pywatch_search how;
};

static bool ends_with(const char *s, const char *suffix, size_t n)
{
	size_t len = strlen(s);

	return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

static uint64_t word_at(const uint8_t *head, uint32_t off)
{
	uint64_t v;

	memcpy(&v, head + off, sizeof(v));
	return v;
}

/* A live function object at FUNCTION whose first CODE_HEAD bytes are
 * HEAD, kept with its code. */
static void scan_function(struct scan *s, uint64_t function, const uint8_t *head)
{
	uint64_t refs = word_at(head, 0);

	if (refs == 0 || refs > (1ull << 40))
		return;
	if (array_grow((void **)&s->functions, &s->cap_functions, s->n_functions + 1,
		       sizeof(*s->functions)))
		s->functions[s->n_functions++] = (struct seen_function){
			function, word_at(head, s->obj.func_code), word_at(head, s->obj.func_qualname) };
}

/* Whether probe I has found CODE already (found by two ways). */
static bool found_already(const struct scan *s, int i, uint64_t code)
{
	for (int j = 0; j < s->n_found[i]; j++)
		if (s->found[i][j] == code)
			return true;
	return false;
}

/* A live code object at CODE whose first CODE_HEAD bytes are HEAD: which
 * probe it is, if any. Its qualified name is its own on 3.11+; 3.10 code
 * has only its plain name, which a method or a function inside another
 * may share, and QUALNAME is what the walk that found it knows (NULL,
 * from the heap scan: matched later, through the function objects). */
static void scan_code(struct scan *s, uint64_t code, const uint8_t *head, const char *qualname)
{
	const struct py_layout *L = &s->p->walk.layout;
	uint64_t refs = word_at(head, 0);
	const char *file;
	uint32_t flags;

	if (refs == 0 || refs > (1ull << 40))
		return; /* a freed block whose type word is stale */
	if (s->p->minor >= 11)
		qualname = python_str(s->names, s->p, word_at(head, L->code_name));
	if (!qualname)
		return;
	for (int i = 0; i < s->n_probes; i++) {
		const struct pyspan_probe_cfg *c = &s->cfg[i];

		if (strcmp(qualname, c->qualname) != 0 || found_already(s, i, code))
			continue;
		file = python_str(s->names, s->p, word_at(head, L->code_filename));
		if (!file || !(ends_with(file, c->file_suffix, c->file_len) ||
			       ends_with(file, c->pkg_suffix, c->pkg_len)))
			continue;
		memcpy(&flags, head + s->obj.code_flags, sizeof(flags));
		if (!(flags & CO_COROUTINE))
			s->not_coroutine[i] = true;
		else if (s->n_found[i] < PYSPAN_MAX_WATCHES)
			s->found[i][s->n_found[i]++] = code;
	}
}

/* Every object in [START, END) of the process whose type is PyCode_Type
 * or PyFunction_Type. */
static void scan_range(struct scan *s, uint8_t *buf, uint64_t start, uint64_t end)
{
	uint8_t head[CODE_HEAD];

	for (uint64_t at = start; at < end; at += SCAN_CHUNK) {
		size_t len = end - at < SCAN_CHUNK ? (size_t)(end - at) : SCAN_CHUNK;

		if (python_read_memory(s->p->pid, buf, len, at))
			continue; /* a guard page, or unmapped meanwhile */
		s->how.scan_bytes += len;
		for (size_t off = 0; off + 8 <= len; off += 8) {
			uint64_t type = word_at(buf, (uint32_t)off), obj = at + off - 8;

			if ((type != s->p->code_type && (!type || type != s->p->function_type)) ||
			    obj < start)
				continue;
			if (off >= 8 && off - 8 + CODE_HEAD <= len)
				memcpy(head, buf + off - 8, CODE_HEAD);
			else if (python_read_memory(s->p->pid, head, CODE_HEAD, obj))
				continue;
			if (type == s->p->code_type)
				scan_code(s, obj, head, NULL);
			else
				scan_function(s, obj, head);
		}
	}
}

static int scan_process(struct scan *s)
{
	struct proc_map *maps = NULL;
	uint8_t *buf = malloc(SCAN_CHUNK);
	int n = proc_maps_read(s->p->pid, &maps);

	if (!buf || n < 0) {
		free(buf);
		return n < 0 ? n : -ENOMEM;
	}
	for (int i = 0; i < n; i++)
		/* objects live in the heap and anonymous memory (pymalloc's
		 * arenas, large blocks); reserved, unreadable memory (a malloc
		 * arena's tail, guard pages) holds none, and /proc/PID/mem
		 * would read it */
		if (maps[i].readable &&
		    (!maps[i].path || !maps[i].path[0] || strcmp(maps[i].path, "[heap]") == 0))
			scan_range(s, buf, maps[i].start, maps[i].end);
	proc_maps_free(maps, n);
	free(buf);
	return 0;
}

/* ---- finding them from a module that has just run ------------------------ */

/* Layouts read where a module's body has just run (LP64; 3.10 from its
 * headers and Objects/dict-common.h, 3.11-3.13 from pycore_dict.h). */
#define TUPLE_SIZE 16      /* PyVarObject.ob_size */
#define TUPLE_ITEMS 24
#define TYPE_DICT 264      /* PyTypeObject.tp_dict: set for every class */
#define DICT_KEYS 32       /* PyDictObject.ma_keys */
#define DICT_VALUES 40     /* PyDictObject.ma_values: NULL unless split */
/* 3.11+ */
#define CODE_CONSTS 24     /* PyCodeObject.co_consts, a tuple */
#define KEYS_LOG2_INDEX 9  /* PyDictKeysObject.dk_log2_index_bytes */
#define KEYS_KIND 10       /* dk_kind: 0 any keys (hash, key, value), else str keys */
#define KEYS_NENTRIES 24
#define KEYS_INDICES 32
/* 3.10 */
#define CODE_CONSTS_310 56
#define CODE_CODE_310 48   /* PyCodeObject.co_code, a bytes object */
#define BYTES_DATA 32      /* PyBytesObject.ob_sval */
#define KEYS_SIZE_310 8    /* dk_size, the number of index slots */
#define KEYS_NENTRIES_310 32
#define KEYS_INDICES_310 40 /* one byte a slot up to 0xff slots, two to 0xffff, ... */
/* How far the walk goes: code objects nested in code objects (a method
 * in a class body in a module is two deep), and code objects in all. */
#define NESTING_MAX 8
#define MODULE_CODES_MAX 8192
#define CONSTS_MAX 65536

#define CO_OPTIMIZED 0x1 /* a function's code; a class body's lacks it */

static void walk_consts(struct scan *s, uint64_t code, const char *prefix, int depth, int *budget);

/* The code objects among the N constants in ITEMS, each named under
 * PREFIX. */
static void walk_items(struct scan *s, const uint64_t *items, uint64_t n, const char *prefix,
		       int depth, int *budget)
{
	uint64_t type;

	for (uint64_t i = 0; i < n && *budget > 0; i++)
		if (items[i] && !python_read_memory(s->p->pid, &type, sizeof(type), items[i] + 8) &&
		    type == s->p->code_type)
			walk_consts(s, items[i], prefix, depth + 1, budget);
}

/* CODE and the code objects in its constants (its functions, classes'
 * bodies, and theirs), each matched as the heap scan matches them. On
 * 3.10, which keeps no qualified name in code, its own is PREFIX and its
 * name, as the compiler makes it (a module's body, at DEPTH 0, has
 * none; a function its outer one declares `global`, named by its own
 * name alone, is not matched by this walk). */
static void walk_consts(struct scan *s, uint64_t code, const char *prefix, int depth, int *budget)
{
	uint8_t head[CODE_HEAD];
	char own[PYSPAN_STR_MAX], inner[PYSPAN_STR_MAX] = "";
	uint64_t consts, n, *items;
	const char *name;
	uint32_t flags;

	if (depth > NESTING_MAX || (*budget)-- <= 0 ||
	    python_read_memory(s->p->pid, head, CODE_HEAD, code))
		return;
	if (s->p->minor >= 11) {
		scan_code(s, code, head, NULL); /* its own co_qualname */
	} else if (depth) {
		name = python_str(s->names, s->p, word_at(head, s->p->walk.layout.code_name));
		if (!name || snprintf(own, sizeof(own), "%s%s", prefix, name) >= (int)sizeof(own))
			return;
		scan_code(s, code, head, own);
		memcpy(&flags, head + s->obj.code_flags, sizeof(flags));
		if (snprintf(inner, sizeof(inner), "%s%s", own,
			     flags & CO_OPTIMIZED ? ".<locals>." : ".") >= (int)sizeof(inner))
			return; /* longer than any probe's name */
	}
	consts = word_at(head, s->p->minor == 10 ? CODE_CONSTS_310 : CODE_CONSTS);
	if (!consts || python_read_memory(s->p->pid, &n, sizeof(n), consts + TUPLE_SIZE) ||
	    n > CONSTS_MAX || !(items = malloc(n * sizeof(*items) + 1)))
		return;
	if (!python_read_memory(s->p->pid, items, n * sizeof(*items), consts + TUPLE_ITEMS))
		walk_items(s, items, n, inner, depth, budget);
	free(items);
}

/* Where the dict keys object KEYS (its head HEAD) holds its entries, how
 * many (*N) and of how many words each (*WIDTH); 0 when not sound. */
static uint64_t dict_entries(const struct scan *s, uint64_t keys, const uint8_t *head,
			     uint64_t *n, size_t *width)
{
	uint64_t slots, slot_bytes;

	if (s->p->minor == 10) {
		*n = word_at(head, KEYS_NENTRIES_310);
		*width = 3; /* hash, key, value */
		slots = word_at(head, KEYS_SIZE_310);
		slot_bytes = slots <= 0xff ? 1 : slots <= 0xffff ? 2 : slots <= 0xffffffffull ? 4 : 8;
		return slots > (1ull << 32) ? 0 : keys + KEYS_INDICES_310 + slots * slot_bytes;
	}
	*n = word_at(head, KEYS_NENTRIES);
	*width = head[KEYS_KIND] == 0 ? 3 : 2; /* str keys: key, value */
	return head[KEYS_LOG2_INDEX] > 32 ? 0 : keys + KEYS_INDICES + (1ull << head[KEYS_LOG2_INDEX]);
}

/* The value dict DICT holds under the str key NAME, 0 when none: its
 * entries looked at in turn (a module's or a class's dict is small, and
 * not split). */
static uint64_t dict_get(struct scan *s, uint64_t dict, const char *name)
{
	uint8_t head[KEYS_INDICES_310];
	uint64_t keys, values, n, at, found = 0, *entries;
	size_t width;
	const char *key;

	if (python_read_memory(s->p->pid, &keys, sizeof(keys), dict + DICT_KEYS) ||
	    python_read_memory(s->p->pid, &values, sizeof(values), dict + DICT_VALUES) || !keys ||
	    values || python_read_memory(s->p->pid, head, sizeof(head), keys))
		return 0;
	at = dict_entries(s, keys, head, &n, &width);
	if (!at || n > CONSTS_MAX || !(entries = malloc(n * width * 8 + 1)))
		return 0;
	if (python_read_memory(s->p->pid, entries, n * width * 8, at))
		n = 0;
	for (uint64_t i = 0; i < n && !found; i++) {
		const uint64_t *e = entries + i * width + (width - 2);

		key = e[0] ? python_str(s->names, s->p, e[0]) : NULL;
		if (key && strcmp(key, name) == 0)
			found = e[1];
	}
	free(entries);
	return found;
}

/* The object GLOBALS names by QUALNAME ("f", "Class.method",
 * "Outer.Inner.method"), through the classes' dicts; 0 when none. */
static uint64_t named_in(struct scan *s, uint64_t globals, const char *qualname)
{
	char part[PYSPAN_STR_MAX];
	uint64_t dict = globals, obj;

	for (const char *at = qualname;;) {
		const char *dot = strchr(at, '.');
		size_t n = dot ? (size_t)(dot - at) : strlen(at);

		if (n >= sizeof(part))
			return 0;
		memcpy(part, at, n);
		part[n] = '\0';
		obj = dict_get(s, dict, part);
		if (!obj || !dot)
			return obj;
		if (python_read_memory(s->p->pid, &dict, sizeof(dict), obj + TYPE_DICT) || !dict)
			return 0;
		at = dot + 1;
	}
}

/* Each found probe's function object, from the module's globals: kept
 * as the heap scan keeps them. False when one (not "<locals>", which
 * needs none) is not there as a plain function of that code. */
static bool functions_by_name(struct scan *s, uint64_t globals, uint32_t want)
{
	uint8_t head[CODE_HEAD];
	uint64_t function;

	for (int i = 0; i < s->n_probes; i++) {
		if (!(want & (1u << i)) || !s->n_found[i] || strstr(s->cfg[i].qualname, "<locals>"))
			continue;
		function = named_in(s, globals, s->cfg[i].qualname);
		if (s->n_found[i] != 1 || !function ||
		    python_read_memory(s->p->pid, head, CODE_HEAD, function) ||
		    word_at(head, 8) != s->p->function_type ||
		    word_at(head, s->obj.func_code) != s->found[i][0])
			return false;
		scan_function(s, function, head);
	}
	return true;
}

/* Whether the module of globals dict GLOBALS is named "__main__". */
static bool names_main(struct scan *s, uint64_t globals)
{
	uint64_t name = dict_get(s, globals, "__name__");
	const char *str = name ? python_str(s->names, s->p, name) : NULL;

	return str && strcmp(str, "__main__") == 0;
}

bool pywatch_is_main_module(const struct python_proc *p, uint64_t globals)
{
	struct scan s = { .p = p, .names = python_names_new() };
	bool main = s.names && names_main(&s, globals);

	python_names_free(s.names);
	return main;
}

/* The probes' code from a module's code: no heap scan. As its body
 * returns, their function objects from its globals; as it starts, none
 * is defined yet, and their frames' references are their code's. False
 * when that does not find all it must (the caller scans then). */
static bool scan_module(struct scan *s, const struct pywatch_module *m, uint32_t want)
{
	int budget = MODULE_CODES_MAX;

	s->how.main_module = names_main(s, m->globals);
	walk_consts(s, m->code, "", 0, &budget);
	return budget > 0 && (m->at_start || functions_by_name(s, m->globals, want));
}

/* Whether probe qualified name WANT is QUALNAME or lies in its locals. */
static bool leads_to(const char *want, const char *qualname)
{
	size_t n = strlen(qualname);

	return strncmp(want, qualname, n) == 0 &&
	       (want[n] == '\0' || strncmp(want + n, ".<locals>.", 10) == 0);
}

/* 3.10, after a heap scan: the probes' code, which does not know its
 * qualified name, found from the live function objects, which do: one
 * named as a probe is, or the one a probe is defined in, its code
 * walked with that name. */
static void walk_functions(struct scan *s)
{
	int budget = MODULE_CODES_MAX;

	for (size_t f = 0; f < s->n_functions && budget > 0; f++) {
		const char *q = python_str(s->names, s->p, s->functions[f].qualname), *dot;
		char prefix[PYSPAN_STR_MAX];
		uint64_t type = 0;
		bool wanted = false;

		for (int i = 0; q && i < s->n_probes && !wanted; i++)
			wanted = leads_to(s->cfg[i].qualname, q);
		/* the scan ran on while the process did: a function object
		 * freed meanwhile may name a block that is no code any more */
		if (!wanted || python_read_memory(s->p->pid, &type, sizeof(type),
						  s->functions[f].code + 8) ||
		    type != s->p->code_type)
			continue;
		dot = strrchr(q, '.');
		snprintf(prefix, sizeof(prefix), "%.*s", dot ? (int)(dot - q + 1) : 0, q);
		walk_consts(s, s->functions[f].code, prefix, 1, &budget);
	}
}

/* The scan's findings forgotten, for another way of finding them. */
static void scan_reset(struct scan *s)
{
	memset(s->found, 0, sizeof(s->found));
	memset(s->n_found, 0, sizeof(s->n_found));
	memset(s->not_coroutine, 0, sizeof(s->not_coroutine));
	s->n_functions = 0;
}

/* Where the frames of CODE take and drop a reference: 3.11+ its
 * function object when there is one alone and there will be no other
 * (every frame holds it, and lets go of it as it is cleared, after its
 * locals), else the code object: a function defined inside another
 * ("<locals>") is a new function object at each definition, and 3.12+
 * frames let go of the code only when the coroutine is freed. 3.10
 * frames hold the code alone, and drop it as they are freed, after
 * their locals; a finished coroutine frees its frame. *ASK: on 3.12+,
 * no function object is there yet (a main module's body only starts),
 * so the first call hands over the one its frame holds, taken to be the
 * only one (the function is no "<locals>" one: its def runs once). */
static uint64_t references_of(const struct scan *s, int probe, uint64_t code, bool *ask)
{
	uint64_t function = 0;
	size_t n = 0;

	*ask = false;
	if (s->p->minor == 10 || strstr(s->cfg[probe].qualname, "<locals>"))
		return code;
	for (size_t i = 0; i < s->n_functions; i++)
		if (s->functions[i].code == code) {
			function = s->functions[i].function;
			n++;
		}
	*ask = n == 0 && s->p->minor >= 12;
	return n == 1 ? function : code;
}

bool pywatch_function_runs(const struct python_proc *p, uint64_t function, uint64_t code)
{
	struct pyspan_layout obj;
	uint8_t head[CODE_HEAD];

	/* its head up to its code, in one read */
	return function && p->function_type && pyspan_layout_for(p->major, p->minor, &obj) == 0 &&
	       obj.func_code + 8 <= sizeof(head) &&
	       python_read_memory(p->pid, head, obj.func_code + 8, function) == 0 &&
	       word_at(head, 8) == p->function_type && word_at(head, obj.func_code) == code;
}

/* Where code object CODE's instructions start: 3.11+ inside it, 3.10 in
 * its co_code bytes object; 0 when unreadable. */
static uint64_t bytecode_of(const struct python_proc *p, uint64_t code)
{
	uint64_t bytes = 0;

	if (p->minor != 10)
		return code + p->walk.layout.code_adaptive;
	if (python_read_memory(p->pid, &bytes, sizeof(bytes), code + CODE_CODE_310) || !bytes)
		return 0;
	return bytes + BYTES_DATA;
}

/* The two points of code object CODE of probe IDX, into W. */
static int add_points(struct pywatch *w, const struct scan *s, uint64_t code, uint32_t idx,
		      char *err, size_t errlen)
{
	const struct python_proc *p = s->p;
	uint8_t units[2 * PROLOGUE_UNITS];
	uint64_t bytecode = bytecode_of(p, code), refs;
	int first;
	bool ask;

	/* 3.10: the first unit alone, which even the shortest code has */
	if (!bytecode || python_read_memory(p->pid, units, p->minor == 10 ? 2 : sizeof(units),
					    bytecode)) {
		snprintf(err, errlen, "cannot read the bytecode of the code object at %#llx",
			 (unsigned long long)code);
		return -EIO;
	}
	first = pywatch_first_step(units, p->minor == 10 ? 1 : PROLOGUE_UNITS, p->minor);
	if (first < 0) {
		snprintf(err, errlen, "the code object at %#llx does not start as a coroutine's does",
			 (unsigned long long)code);
		return -ENOEXEC;
	}
	/* 3.10 merges a module's identical bytecode into one object */
	for (int i = 0; i < w->n_points; i++)
		if (w->points[i].addr == bytecode + 2 * (uint64_t)first && w->points[i].code != code) {
			snprintf(err, errlen, "two timed functions in process %d, %s and another, have "
				 "the same bytecode, which CPython %d.%d keeps once: the watch hook cannot "
				 "tell their first steps apart: use --python-hook coroutines",
				 (int)p->pid, s->cfg[idx].qualname, p->major, p->minor);
			return -EEXIST;
		}
	refs = references_of(s, (int)idx, code, &ask);
	w->points[w->n_points++] = (struct pywatch_point){
		bytecode + 2 * (uint64_t)first, HW_BREAKPOINT_LEN_2, PYSPAN_WATCH_FIRST_STEP, code,
		idx, -1, ask ? PYSPAN_WATCH_ASK_FUNCTION : 0 };
	w->points[w->n_points++] = (struct pywatch_point){
		refs, HW_BREAKPOINT_LEN_8, PYSPAN_WATCH_REFS, code, idx, -1, 0 };
	return 0;
}

/* The probes of WANT found, where the watchpoints allow: at most
 * MAX_POINTS in W, the ones it holds already counted. */
static int take_found(struct pywatch *w, const struct scan *s, const struct py_probe *probes,
		      uint32_t want, int max_points, uint32_t *found, char *err, size_t errlen)
{
	int more = 0, rc;

	for (int i = 0; i < s->n_probes; i++) {
		const struct py_probe *pr = &probes[i];

		if (!(want & (1u << i)))
			continue;
		if (!s->n_found[i] && s->not_coroutine[i]) {
			snprintf(err, errlen, "py:%s:%s is not an async def function in process %d: "
				 "--python-hook watch times coroutines only; time it with the default hook "
				 "or --python-hook calls", pr->module, pr->qualname, (int)s->p->pid);
			return -ENOTSUP;
		}
		more += 2 * s->n_found[i];
	}
	if (w->n_points + more > max_points) {
		snprintf(err, errlen, "--python-hook watch needs %s%d hardware watchpoints for these "
			 "functions in process %d (2 per code object)%s, and a CPU has %d: time fewer "
			 "functions, or use --python-hook coroutines",
			 more > 2 * PYSPAN_MAX_WATCHES - 2 ? "at least " : "", more, (int)s->p->pid,
			 max_points < PYSPAN_MAX_WATCHES ? " besides those other processes hold" : "",
			 PYSPAN_MAX_WATCHES);
		return -E2BIG;
	}
	*found = 0;
	for (int i = 0; i < s->n_probes; i++) {
		if (!(want & (1u << i)) || !s->n_found[i])
			continue;
		*found |= 1u << i;
		for (int j = 0; j < s->n_found[i]; j++)
			if ((rc = add_points(w, s, s->found[i][j], (uint32_t)i, err, errlen)))
				return rc;
	}
	return 0;
}

/* Every field the scan takes lies within the CODE_HEAD bytes it reads. */
static bool fields_fit(const struct py_layout *L, const struct pyspan_layout *obj)
{
	uint32_t offs[] = { L->code_name, L->code_filename, obj->code_flags, obj->func_code };

	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++)
		if (offs[i] + 8 > CODE_HEAD)
			return false;
	return true;
}

int pywatch_version_check(int major, int minor, const char *name, char *err, size_t errlen)
{
	struct pyspan_layout obj;

	if (major == 3 && minor >= 10 && pyspan_layout_for(major, minor, &obj) == 0)
		return 0;
	snprintf(err, errlen, "--python-hook watch needs CPython 3.10 or newer (it watches the "
		 "instruction only a coroutine's first step runs, and those layouts are known); %s is "
		 "%d.%d: use --python-hook coroutines", name, major, minor);
	return -ENOTSUP;
}

int pywatch_find(struct pywatch *w, const struct python_proc *p, const struct py_probe *probes,
		 int n, const struct pywatch_module *module, uint32_t want, int max_points,
		 uint32_t *found, char *err, size_t errlen)
{
	struct pyspan_probe_cfg cfg[PYSPAN_MAX_PROBES];
	struct scan s = { .p = p, .cfg = cfg, .n_probes = n };
	int rc;

	*found = 0;
	if ((rc = pywatch_version_check(p->major, p->minor, p->interp_name, err, errlen)) ||
	    pyspan_layout_for(p->major, p->minor, &s.obj))
		return rc ? rc : -ENOTSUP;
	if (!fields_fit(&p->walk.layout, &s.obj)) {
		snprintf(err, errlen, "--python-hook watch: %s %d.%d lays its code objects out past "
			 "what pmetrics reads of them: use --python-hook coroutines", p->interp_name,
			 p->major, p->minor);
		return -ENOTSUP;
	}
	if (n > PYSPAN_MAX_PROBES)
		n = s.n_probes = PYSPAN_MAX_PROBES;
	for (int i = 0; i < n; i++)
		pyspan_probe_cfg_fill(&probes[i], &cfg[i]);
	if (!(s.names = python_names_new()))
		return -ENOMEM;
	if (module && module->code && p->function_type && scan_module(&s, module, want)) {
		s.how.by_module = true;
	} else {
		scan_reset(&s);
		rc = scan_process(&s);
		if (!rc && !s.how.scan_bytes)
			rc = -EPERM;
		if (!rc && p->minor == 10)
			walk_functions(&s);
	}
	python_names_free(s.names);
	w->last = s.how;
	if (!rc)
		rc = take_found(w, &s, probes, want, max_points, found, err, errlen);
	else
		snprintf(err, errlen, "cannot read the memory of process %d (%s): it ended, or "
			 "pmetrics lacks CAP_SYS_PTRACE over it", (int)p->pid, strerror(-rc));
	free(s.functions);
	return rc;
}

/* ---- watching ------------------------------------------------------------------ */

/* W's points on CPU, each hit running PROG. 1 when the CPU is offline
 * (one brought online later is not watched). */
static int watch_cpu(struct pywatch *w, int first, int last, int cpu, struct bpf_program *prog)
{
	for (int i = first; i < last; i++) {
		int fd = watchpoint_open(-1, cpu, w->points[i].addr, w->points[i].len), err = errno;
		struct bpf_link *link;

		if (fd < 0 && err == ENODEV)
			return 1; /* offline, or gone offline meanwhile */
		if (fd < 0) {
			char why[256];

			pywatch_refusal(err, why, sizeof(why));
			fprintf(stderr, "pmetrics: CPU %d: %s\n", cpu, why);
			return -err;
		}
		link = bpf_program__attach_perf_event(prog, fd);
		err = errno;
		if (!link)
			close(fd);
		errno = err;
		if (bpf_links_add(&w->links[i], link, "the Python watchpoint hook (CONFIG_BPF_EVENTS)"))
			return -EINVAL;
	}
	return 0;
}

int pywatch_attach(struct pywatch *w, int first, int last, struct bpf_program *prog)
{
	int ncpu = libbpf_num_possible_cpus(), watched = 0, rc = 0;

	if (ncpu < 0) {
		fprintf(stderr, "pmetrics: cannot count this machine's CPUs: %s\n", strerror(-ncpu));
		return ncpu;
	}
	bpf_loader_raise_fd_limit(); /* two per point and CPU: the event, its link */
	for (int cpu = 0; cpu < ncpu && rc >= 0; cpu++)
		if ((rc = watch_cpu(w, first, last, cpu, prog)) == 0)
			watched++;
	if (rc >= 0 && !watched) {
		fprintf(stderr, "pmetrics: no CPU took a watchpoint: every one is offline\n");
		rc = -ENODEV;
	}
	return rc < 0 ? rc : 0;
}

void pywatch_park(struct pywatch *w, int i)
{
	bpf_links_destroy(&w->links[i]);
}

void pywatch_close(struct pywatch *w)
{
	for (int i = 0; i < PYSPAN_MAX_WATCHES; i++)
		bpf_links_destroy(&w->links[i]);
}
