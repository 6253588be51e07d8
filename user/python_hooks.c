// SPDX-License-Identifier: MIT
/* Hook points of a CPython build, stripped or not; see python_hooks.h.
 *
 * Order of trust: a symbol (.symtab, then MiniDebugInfo, then .dynsym);
 * then a slot or method of the exported PyCoro_Type, read through its
 * relocations; then the first call in an opcode's handler, the handler
 * taken from the computed-goto table (opcode_targets: 256 code pointers,
 * most of them into _PyEval_EvalFrameDefault). A point found no way is
 * marked missing with the reason; a wrong address would put a uprobe in
 * the middle of an instruction of the traced program, so every guess is
 * checked (a type's name, a function start, a single caller). */
#include "python_hooks.h"
#include "elf_symbols.h"

#include <elf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* PyTypeObject, PyAsyncMethods and PyMethodDef on LP64: the same in
 * 3.8-3.13 (offsetof, checked per version). */
#define TP_NAME 24
#define TP_DEALLOC 48
#define TP_AS_ASYNC 80
#define TP_ITERNEXT 224
#define TP_METHODS 232
#define AM_SEND 24
#define METHODDEF_SIZE 32
#define METHODDEF_METH 8
#define MAX_METHODS 64

#define OPCODES 256
/* how far into a handler its first call is looked for */
#define HANDLER_SCAN 128

enum table { T_SYMTAB, T_DEBUGDATA, T_DYNSYM, N_TABLES };
static const enum hook_source table_source[N_TABLES] = { HOOK_SYMTAB, HOOK_DEBUGDATA,
							 HOOK_DYNSYM };

enum sym_id {
	S_EVAL, S_VECTORCALL, S_AM_SEND, S_PYGEN_SEND, S_ITER_SEND, S_GEN_SEND, S_GEN_THROW,
	S_GEN_CLOSE, S_GEN_DEALLOC, S_GEN_ITERNEXT, S_MAKE_CORO, S_FETCH_STOP, S_CORO_TYPE,
	S_GEN_TYPE, S_OPCODE_TARGETS, S_EVAL_CODE, N_SYMS
};

static const struct {
	const char *name;
	unsigned char type;
} sym_names[N_SYMS] = {
	[S_EVAL] = { "_PyEval_EvalFrameDefault", STT_FUNC },
	[S_VECTORCALL] = { "_PyFunction_Vectorcall", STT_FUNC },
	[S_AM_SEND] = { "PyGen_am_send", STT_FUNC },
	[S_PYGEN_SEND] = { "_PyGen_Send", STT_FUNC },
	[S_ITER_SEND] = { "PyIter_Send", STT_FUNC },
	[S_GEN_SEND] = { "gen_send", STT_FUNC },
	[S_GEN_THROW] = { "gen_throw", STT_FUNC },
	[S_GEN_CLOSE] = { "gen_close", STT_FUNC },
	[S_GEN_DEALLOC] = { "gen_dealloc", STT_FUNC },
	[S_GEN_ITERNEXT] = { "gen_iternext", STT_FUNC },
	[S_MAKE_CORO] = { "_Py_MakeCoro", STT_FUNC },
	[S_FETCH_STOP] = { "_PyGen_FetchStopIterationValue", STT_FUNC },
	[S_CORO_TYPE] = { "PyCoro_Type", STT_OBJECT },
	[S_GEN_TYPE] = { "PyGen_Type", STT_OBJECT },
	/* a function's static: "opcode_targets.N" */
	[S_OPCODE_TARGETS] = { "opcode_targets", STT_OBJECT },
	[S_EVAL_CODE] = { "PyEval_EvalCode", STT_FUNC },
};

/* A symbol in one table: state 0 absent, 1 local, 2 global, -1 two
 * locals at different addresses (not to be trusted). */
struct sym_hit {
	uint64_t value, size;
	int state;
	char name[48];
};

struct search {
	struct elf_image *img;
	int minor;
	struct sym_hit hits[N_TABLES][N_SYMS];
	uint64_t coro_type;         /* PyCoro_Type, checked by its tp_name */
	uint64_t gen_type;          /* PyGen_Type, likewise */
	uint64_t table;             /* opcode_targets */
	uint64_t targets[OPCODES];  /* its entries */
	char table_why[160];        /* why there is no table */
	char why[160];              /* why the last fallback failed */
};

static void why(struct search *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void why(struct search *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->why, sizeof(s->why), fmt, ap);
	va_end(ap);
}

/* ---- symbols ------------------------------------------------------------- */

struct table_pass {
	struct search *s;
	enum table t;
};

/* NAME, or NAME.SUFFIX: the name of a static that LTO made unique
 * ("gen_send.lto_priv.0": the same function) or of a function's static
 * ("opcode_targets.3"). Not .isra/.constprop/.part: those are copies
 * with other arguments. */
static bool name_is(const char *sym, const char *name, const char *suffix)
{
	size_t n = strlen(name), k = strlen(suffix);

	if (strncmp(sym, name, n) != 0)
		return false;
	if (!sym[n])
		return true;
	if (strncmp(sym + n, suffix, k) != 0 || !sym[n + k])
		return false;
	return strspn(sym + n + k, "0123456789") == strlen(sym + n + k);
}

static bool sym_matches(enum sym_id id, const struct elf_sym *sym)
{
	if (sym->type != sym_names[id].type)
		return false;
	if (id == S_OPCODE_TARGETS)
		return sym->size == OPCODES * 8 && name_is(sym->name, "opcode_targets", ".");
	return name_is(sym->name, sym_names[id].name, ".lto_priv.");
}

static void note_symbol(const struct elf_sym *sym, void *ctx)
{
	struct table_pass *pass = ctx;

	for (int id = 0; id < N_SYMS; id++) {
		struct sym_hit *h = &pass->s->hits[pass->t][id];

		if (!sym_matches(id, sym) || sym->value == 0)
			continue;
		if (sym->bind != STB_LOCAL || h->state == 0) {
			h->value = sym->value;
			h->size = sym->size;
			h->state = sym->bind != STB_LOCAL ? 2 : 1;
			snprintf(h->name, sizeof(h->name), "%s", sym->name);
		} else if (h->state == 1 && h->value != sym->value) {
			h->state = -1;
		}
	}
}

/* Reads every symbol table once: .symtab, MiniDebugInfo's, .dynsym. */
static void read_symbols(struct search *s, struct python_hooks *out)
{
	struct table_pass symtab = { s, T_SYMTAB }, dynsym = { s, T_DYNSYM },
			  mini = { s, T_DEBUGDATA };
	struct elf_image *debugdata;
	char err[160];
	int rc;

	elf_image_symbols(s->img, ELF_SYMTAB, note_symbol, &symtab);
	elf_image_symbols(s->img, ELF_DYNSYM, note_symbol, &dynsym);
	rc = elf_image_open_debugdata(s->img, &debugdata, err, sizeof(err));
	out->has_debugdata = rc != -ENOENT;
	if (rc == 0) {
		elf_image_symbols(debugdata, ELF_SYMTAB, note_symbol, &mini);
		elf_image_close(debugdata);
	} else if (rc != -ENOENT) {
		snprintf(out->note, sizeof(out->note), "%s", err);
	}
}

/* Fills PT with the function at VADDR; -1 when VADDR is not code. */
static int set_point(struct search *s, struct python_hook_point *pt, uint64_t vaddr,
		     enum hook_source source, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static int set_point(struct search *s, struct python_hook_point *pt, uint64_t vaddr,
		     enum hook_source source, const char *fmt, ...)
{
	va_list ap;

	if (!vaddr || elf_image_file_offset(s->img, vaddr, &pt->offset) != 0) {
		why(s, "0x%llx is not in an executable segment", (unsigned long long)vaddr);
		return -1;
	}
	pt->vaddr = vaddr;
	pt->source = source;
	va_start(ap, fmt);
	vsnprintf(pt->detail, sizeof(pt->detail), fmt, ap);
	va_end(ap);
	return 0;
}

/* The first table that has ID and says where it is unambiguously. */
static const struct sym_hit *symbol(const struct search *s, enum sym_id id, enum table *t)
{
	for (int i = 0; i < N_TABLES; i++) {
		if (s->hits[i][id].state > 0) {
			if (t)
				*t = (enum table)i;
			return &s->hits[i][id];
		}
	}
	return NULL;
}

static int from_symbol(struct search *s, struct python_hook_point *pt, enum sym_id id)
{
	enum table t;
	const struct sym_hit *h = symbol(s, id, &t);

	if (!h) {
		why(s, "%s: not in .symtab, .gnu_debugdata or .dynsym", sym_names[id].name);
		return -1;
	}
	return set_point(s, pt, h->value, table_source[t], "%s%s", h->name,
			 h->state == 1 ? " (local)" : "");
}

/* ---- PyCoro_Type's slots and methods ------------------------------------------ */

/* The pointer stored at PLACE (0 when none); HOW says how it got there. */
static uint64_t pointer_at(struct search *s, uint64_t place, char *how, size_t len)
{
	struct elf_pointer p;

	if (elf_image_pointer_at(s->img, place, &p) != 0)
		return 0;
	if (how && p.kind == ELF_PTR_SYMBOL)
		snprintf(how, len, "symbol %s", p.symbol ? p.symbol : "?");
	else if (how)
		snprintf(how, len, "%s", p.kind == ELF_PTR_RELATIVE ? "relocation" : "raw pointer");
	return p.value;
}

/* Whether the C string at VADDR is WANT. */
static bool string_is(struct search *s, uint64_t vaddr, const char *want)
{
	const unsigned char *b = vaddr ? elf_image_bytes(s->img, vaddr, strlen(want) + 1) : NULL;

	return b && memcmp(b, want, strlen(want) + 1) == 0;
}

/* A type object's address, when its tp_name says it is the type: a
 * build whose PyObject header differs (Py_TRACE_REFS) fails here, not
 * later. */
static uint64_t find_type(struct search *s, enum sym_id id, const char *tp_name)
{
	const struct sym_hit *h = symbol(s, id, NULL);

	if (h && string_is(s, pointer_at(s, h->value + TP_NAME, NULL, 0), tp_name))
		return h->value;
	return 0;
}

static void find_coro_type(struct search *s)
{
	s->coro_type = find_type(s, S_CORO_TYPE, "coroutine");
	s->gen_type = find_type(s, S_GEN_TYPE, "generator");
}

/* The function in the slot at PLACE of TYPE (named TYPE_NAME). */
static int from_type_slot(struct search *s, struct python_hook_point *pt, uint64_t type,
			  const char *type_name, uint64_t place, const char *what)
{
	char how[96];
	uint64_t fn;

	if (!type || !place) {
		why(s, "%s is not exported, not a type of this layout, or has no %s", type_name,
		    what);
		return -1;
	}
	fn = pointer_at(s, place, how, sizeof(how));
	if (!fn) {
		why(s, "%s is empty", what);
		return -1;
	}
	return set_point(s, pt, fn, HOOK_TYPE_SLOT, "%s (%s)", what, how);
}

static int from_slot(struct search *s, struct python_hook_point *pt, uint64_t place,
		     const char *what)
{
	return from_type_slot(s, pt, s->coro_type, "PyCoro_Type", place, what);
}

static int from_method(struct search *s, struct python_hook_point *pt, const char *name)
{
	uint64_t methods = s->coro_type ? pointer_at(s, s->coro_type + TP_METHODS, NULL, 0) : 0;

	for (int i = 0; methods && i < MAX_METHODS; i++) {
		uint64_t def = methods + (uint64_t)i * METHODDEF_SIZE, fn;
		uint64_t ml_name = pointer_at(s, def, NULL, 0);
		char how[96];

		if (!ml_name)
			break;
		if (!string_is(s, ml_name, name))
			continue;
		fn = pointer_at(s, def + METHODDEF_METH, how, sizeof(how));
		return set_point(s, pt, fn, HOOK_METHOD_TABLE, "PyCoro_Type.tp_methods[\"%s\"] (%s)",
				 name, how);
	}
	why(s, "no method \"%s\" in PyCoro_Type.tp_methods", name);
	return -1;
}

/* ---- the opcode table ------------------------------------------------------------ */

struct window {
	uint64_t place;
	int inside, ties;
};

/* Slides a 256-entry window over a run of consecutive code pointers,
 * keeping the one with the most targets inside [LO, HI). */
static void scan_run(const struct elf_pointer *w, size_t n, uint64_t lo, uint64_t hi,
		     struct window *best)
{
	int inside = 0;

	for (size_t i = 0; i < n; i++) {
		inside += w[i].value >= lo && w[i].value < hi;
		if (i >= OPCODES)
			inside -= w[i - OPCODES].value >= lo && w[i - OPCODES].value < hi;
		if (i + 1 < OPCODES)
			continue;
		if (inside > best->inside)
			*best = (struct window){ w[i + 1 - OPCODES].place, inside, 1 };
		else if (inside == best->inside)
			best->ties++;
	}
}

struct pointer_list {
	struct elf_pointer *p;
	size_t n, cap;
};

static int push(struct pointer_list *l, uint64_t place, uint64_t value)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 4096;
		struct elf_pointer *grown = realloc(l->p, cap * sizeof(*grown));

		if (!grown)
			return -1;
		l->p = grown;
		l->cap = cap;
	}
	l->p[l->n++] = (struct elf_pointer){ .place = place, .value = value };
	return 0;
}

/* The words that may be table entries: code addresses stored in data,
 * as relative relocations (PIE, shared library) or, in an executable
 * at fixed addresses, as plain words of its data segments. Returns 0 or
 * -1 (out of memory). */
static int code_pointers(struct search *s, struct pointer_list *l)
{
	size_t n_rel = 0, n_seg;
	const struct elf_pointer *rel = elf_image_pointers(s->img, &n_rel);
	const struct elf_segment *seg = elf_image_segments(s->img, &n_seg);
	int rc = 0;

	if (elf_image_type(s->img) != ET_EXEC) {
		for (size_t i = 0; !rc && i < n_rel; i++)
			if (rel[i].kind == ELF_PTR_RELATIVE && elf_image_in_code(s->img, rel[i].value))
				rc = push(l, rel[i].place, rel[i].value);
		return rc;
	}
	for (size_t i = 0; !rc && i < n_seg; i++) {
		size_t first = (size_t)(-seg[i].vaddr & 7);

		for (size_t off = first; !rc && !seg[i].exec && off + 8 <= seg[i].filesz; off += 8) {
			uint64_t v = elf_le64(seg[i].data + off);

			if (elf_image_in_code(s->img, v))
				rc = push(l, seg[i].vaddr + off, v);
		}
	}
	return rc;
}

/* The computed-goto table, by its shape: among the runs of consecutive
 * code pointers, the 256-entry window with the most targets inside
 * _PyEval_EvalFrameDefault. Not "the longest run inside it": GCC moves
 * unreachable handlers (CACHE, RESERVED) to .cold code outside the
 * function, and a PGO build puts a third of the entries there. */
static uint64_t search_table(struct search *s)
{
	const struct sym_hit *eval = symbol(s, S_EVAL, NULL);
	struct window best = { 0, 0, 0 };
	struct pointer_list w = { 0 };
	size_t start = 0;

	if (!eval || !eval->size) {
		why(s, "no _PyEval_EvalFrameDefault with a size to search the opcode table by");
		return 0;
	}
	if (code_pointers(s, &w) != 0)
		w.n = 0;
	for (size_t i = 1; i <= w.n; i++) {
		if (i < w.n && w.p[i].place == w.p[i - 1].place + 8)
			continue;
		if (i - start >= OPCODES)
			scan_run(w.p + start, i - start, eval->value, eval->value + eval->size, &best);
		start = i;
	}
	free(w.p);
	if (best.inside * 2 <= OPCODES || best.ties > 1) {
		why(s, "no opcode table: the best 256 code pointers have %d of 256 inside "
		       "_PyEval_EvalFrameDefault (%d such windows)", best.inside, best.ties);
		return 0;
	}
	return best.place;
}

/* Finds the table (its symbol, else by shape) and reads its entries,
 * every one of which must be code. */
static void find_table(struct search *s)
{
	enum table t;
	const struct sym_hit *h = symbol(s, S_OPCODE_TARGETS, &t);
	uint64_t table = h && t != T_DYNSYM ? h->value : search_table(s);

	for (int i = 0; table && i < OPCODES; i++) {
		s->targets[i] = pointer_at(s, table + 8 * (uint64_t)i, NULL, 0);
		if (!elf_image_in_code(s->img, s->targets[i])) {
			why(s, "opcode table at 0x%llx: entry %d is not code",
			    (unsigned long long)table, i);
			table = 0;
		}
	}
	s->table = table;
	if (!table)
		snprintf(s->table_why, sizeof(s->table_why), "%s", s->why);
}

/* ---- the first call in a handler ------------------------------------------------ */

static int64_t sext(uint64_t v, int bits)
{
	uint64_t sign = 1ull << (bits - 1);

	return (int64_t)((v & ((sign << 1) - 1)) ^ sign) - (int64_t)sign;
}

/* Where the call or jump at PC with encoding CODE goes, for a call
 * (x86-64 e8 rel32, aarch64 bl) or, with JUMPS, also a jump (e9, b).
 * Returns 0 when CODE is neither. */
static uint64_t branch_target(int machine, const unsigned char *code, uint64_t pc, bool jumps)
{
	if (machine == EM_X86_64) {
		if (code[0] == 0xe8 || (jumps && code[0] == 0xe9))
			return pc + 5 + (uint64_t)(int64_t)(int32_t)elf_le32(code + 1);
	} else if (machine == EM_AARCH64) {
		uint32_t insn = elf_le32(code);

		if ((insn & 0xfc000000) == 0x94000000 || (jumps && (insn & 0xfc000000) == 0x14000000))
			return pc + (uint64_t)(sext(insn & 0x03ffffff, 26) * 4);
	}
	return 0;
}

/* Where the next call may start, and how long a call is. */
static int insn_step(int machine)
{
	return machine == EM_AARCH64 ? 4 : 1;
}

static int call_length(int machine)
{
	return machine == EM_AARCH64 ? 4 : 5;
}

/* What a PLT stub at STUB jumps to: the function its GOT slot's
 * JUMP_SLOT relocation names, when it is defined here; else 0.
 * x86-64: [endbr64] [bnd] jmp *slot(%rip); aarch64: adrp x16; ldr x17,
 * [x16, #off]. */
static uint64_t through_plt(struct search *s, uint64_t stub)
{
	const unsigned char *c = elf_image_bytes(s->img, stub, 16);
	uint64_t slot = 0;
	struct elf_pointer p;

	if (c && elf_image_machine(s->img) == EM_X86_64) {
		size_t k = memcmp(c, "\xf3\x0f\x1e\xfa", 4) == 0 ? 4 : 0;

		k += c[k] == 0xf2;
		if (c[k] == 0xff && c[k + 1] == 0x25)
			slot = stub + k + 6 + (uint64_t)(int64_t)(int32_t)elf_le32(c + k + 2);
	} else if (c && elf_image_machine(s->img) == EM_AARCH64) {
		uint32_t adrp = elf_le32(c), ldr = elf_le32(c + 4);

		if ((adrp & 0x9f00001f) == 0x90000010 && (ldr & 0xffc003ff) == 0xf9400211) {
			uint64_t imm = (adrp >> 29 & 3) | (uint64_t)(adrp >> 5 & 0x7ffff) << 2;

			slot = (stub & ~0xfffull) + (uint64_t)(sext(imm, 21) * 4096) +
			       (uint64_t)(ldr >> 10 & 0xfff) * 8;
		}
	}
	if (!slot || elf_image_pointer_at(s->img, slot, &p) != 0 || p.kind != ELF_PTR_SYMBOL)
		return 0;
	return p.value;
}

/* The function OPCODE's handler calls first: the first call from the
 * handler up to the next one (at most HANDLER_SCAN bytes) that goes to a
 * function start (an FDE of .eh_frame_hdr), directly or through a PLT
 * stub (*CALL: the address called). x86-64 is read byte by byte, so a
 * stray e8 inside another instruction is met too; its target is no
 * function start, which is how it is told from a call. */
static uint64_t opcode_call(struct search *s, int opcode, uint64_t *call)
{
	int machine = elf_image_machine(s->img), step = insn_step(machine), len = call_length(machine);
	uint64_t handler = s->targets[opcode], end = handler + HANDLER_SCAN;
	const unsigned char *code;

	for (int i = 0; i < OPCODES; i++)
		if (s->targets[i] > handler && s->targets[i] < end)
			end = s->targets[i];
	code = elf_image_bytes(s->img, handler, end - handler);
	for (uint64_t off = 0; code && off + (uint64_t)len <= end - handler; off += (uint64_t)step) {
		uint64_t t = branch_target(machine, code + off, handler + off, false), fn;

		if (!t || !elf_image_in_code(s->img, t))
			continue;
		fn = through_plt(s, t);
		fn = fn ? fn : t;
		if (elf_image_function_start(s->img, fn) == 1) {
			*call = t;
			return fn;
		}
	}
	why(s, "no call to a known function start (.eh_frame_hdr) in opcode %d's handler at 0x%llx",
	    opcode, (unsigned long long)handler);
	return 0;
}

/* How many calls and jumps in the code go to TARGET. */
static int count_callers(struct search *s, uint64_t target)
{
	int machine = elf_image_machine(s->img), n = 0;
	size_t n_seg, step = (size_t)insn_step(machine), len = (size_t)call_length(machine);
	const struct elf_segment *seg = elf_image_segments(s->img, &n_seg);

	for (size_t i = 0; i < n_seg; i++) {
		for (size_t off = 0; seg[i].exec && off + len <= seg[i].filesz; off += step)
			n += branch_target(machine, seg[i].data + off, seg[i].vaddr + off, true) ==
			     target;
	}
	return n;
}

/* _Py_MakeCoro(func) is called from RETURN_GENERATOR's handler and
 * nowhere else. A build that inlined it (LTO) calls make_gen() there
 * instead, from several places: not the same function, so refused. */
static int from_opcode_call(struct search *s, struct python_hook_point *pt, int opcode,
			    const char *name)
{
	uint64_t call, fn = s->table ? opcode_call(s, opcode, &call) : 0;
	int callers = fn ? count_callers(s, call) : 0;

	if (!s->table)
		why(s, "%s", s->table_why);
	if (!fn)
		return -1;
	if (callers != 1) {
		why(s, "the first call in %s's handler goes to 0x%llx, which %d places call: not "
		       "_Py_MakeCoro (inlined?)", name, (unsigned long long)fn, callers);
		return -1;
	}
	return set_point(s, pt, fn, HOOK_OPCODE_CALL,
			 "first call in %s's handler%s (opcode %d, table at 0x%llx)", name,
			 call != fn ? " through the PLT" : "", opcode, (unsigned long long)s->table);
}

/* ---- the hook points --------------------------------------------------------------- */

static void missing(struct search *s, struct python_hook_point *pt)
{
	memset(pt, 0, sizeof(*pt));
	snprintf(pt->detail, sizeof(pt->detail), "%s", s->why);
}

static void not_in_version(struct python_hook_point *pt, const char *name, int since)
{
	memset(pt, 0, sizeof(*pt));
	snprintf(pt->detail, sizeof(pt->detail), "%s: 3.%d+ only", name, since);
}

/* Where PyCoro_Type.tp_as_async->am_send is, 0 when there is no such. */
static uint64_t am_send_place(struct search *s)
{
	uint64_t as_async = s->coro_type ? pointer_at(s, s->coro_type + TP_AS_ASYNC, NULL, 0) : 0;

	return as_async ? as_async + AM_SEND : 0;
}

static void find_coroutine_points(struct search *s, struct python_hooks *out)
{
	static const struct {
		enum sym_id id;
		size_t field;
		const char *method;
	} methods[] = {
		{ S_GEN_SEND, offsetof(struct python_hooks, gen_send), "send" },
		{ S_GEN_THROW, offsetof(struct python_hooks, gen_throw), "throw" },
		{ S_GEN_CLOSE, offsetof(struct python_hooks, gen_close), "close" },
	};

	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		struct python_hook_point *pt =
			(struct python_hook_point *)((char *)out + methods[i].field);
		/* 3.8/3.9: coroutine.send() is the exported _PyGen_Send */
		enum sym_id id = methods[i].id == S_GEN_SEND && s->minor < 10 ? S_PYGEN_SEND :
										 methods[i].id;

		if (from_symbol(s, pt, id) && from_method(s, pt, methods[i].method))
			missing(s, pt);
	}
	if (from_symbol(s, &out->gen_dealloc, S_GEN_DEALLOC) &&
	    from_slot(s, &out->gen_dealloc, s->coro_type ? s->coro_type + TP_DEALLOC : 0,
		      "PyCoro_Type.tp_dealloc"))
		missing(s, &out->gen_dealloc);
	/* a generator's step in a for loop (the same function for every
	 * generator object) */
	if (from_symbol(s, &out->gen_iternext, S_GEN_ITERNEXT) &&
	    from_type_slot(s, &out->gen_iternext, s->gen_type, "PyGen_Type",
			   s->gen_type ? s->gen_type + TP_ITERNEXT : 0, "PyGen_Type.tp_iternext"))
		missing(s, &out->gen_iternext);
	if (s->minor < 10) {
		if (from_symbol(s, &out->coro_send, S_PYGEN_SEND))
			missing(s, &out->coro_send);
		return;
	}
	if (from_symbol(s, &out->coro_send, S_AM_SEND) &&
	    from_slot(s, &out->coro_send, am_send_place(s), "PyCoro_Type.tp_as_async->am_send"))
		missing(s, &out->coro_send);
}

/* RETURN_GENERATOR's number: 75 in 3.11 and 3.12, 35 in 3.13. */
static int return_generator_opcode(int minor)
{
	return minor == 13 ? 35 : minor >= 11 && minor <= 12 ? 75 : -1;
}

static void find_make_coro(struct search *s, struct python_hooks *out)
{
	int opcode = return_generator_opcode(s->minor);

	if (s->minor < 11) {
		not_in_version(&out->make_coro, "_Py_MakeCoro", 11);
		return;
	}
	if (!from_symbol(s, &out->make_coro, S_MAKE_CORO))
		return;
	if (opcode < 0)
		why(s, "_Py_MakeCoro: not in a symbol table, and RETURN_GENERATOR's number in "
		       "3.%d is not known", s->minor);
	if (opcode < 0 || from_opcode_call(s, &out->make_coro, opcode, "RETURN_GENERATOR"))
		missing(s, &out->make_coro);
}

static void find_points(struct search *s, struct python_hooks *out)
{
	if (from_symbol(s, &out->eval_frame, S_EVAL))
		missing(s, &out->eval_frame);
	if (from_symbol(s, &out->function_vectorcall, S_VECTORCALL))
		missing(s, &out->function_vectorcall);
	if (s->minor < 10)
		not_in_version(&out->iter_send, "PyIter_Send", 10);
	else if (from_symbol(s, &out->iter_send, S_ITER_SEND))
		missing(s, &out->iter_send);
	/* exported by every build: a module's body runs through it */
	if (from_symbol(s, &out->eval_code, S_EVAL_CODE))
		missing(s, &out->eval_code);
	find_coroutine_points(s, out);
	find_make_coro(s, out);
	/* exported by every build; 3.12+ end a coroutine at its deallocation
	 * instead */
	if (s->minor >= 12)
		snprintf(out->fetch_stop_value.detail, sizeof(out->fetch_stop_value.detail),
			 "_PyGen_FetchStopIterationValue: not used from 3.12");
	else if (from_symbol(s, &out->fetch_stop_value, S_FETCH_STOP))
		missing(s, &out->fetch_stop_value);
}

static int check_file(struct search *s, const char *path, char *err, size_t errlen)
{
	int type = elf_image_type(s->img);

	if (!elf_image_lp64(s->img)) {
		snprintf(err, errlen, "%s: not a 64-bit little-endian ELF file", path);
		return -ENOEXEC;
	}
	if (type != ET_DYN && type != ET_EXEC) {
		snprintf(err, errlen, "%s: not an executable or shared library (ELF type %d)", path,
			 type);
		return -ENOEXEC;
	}
	if (!elf_image_has_table(s->img, ELF_DYNSYM) && !elf_image_has_table(s->img, ELF_SYMTAB)) {
		snprintf(err, errlen, "%s: no symbol table (.dynsym or .symtab)", path);
		return -ENOEXEC;
	}
	return 0;
}

int python_hooks_find(const char *path, int major, int minor, struct python_hooks *out,
		      char *err, size_t errlen)
{
	struct search *s = calloc(1, sizeof(*s));
	int rc = s ? elf_image_open(path, &s->img, err, errlen) : -ENOMEM;

	memset(out, 0, sizeof(*out));
	if (!s)
		snprintf(err, errlen, "out of memory");
	if (!rc)
		rc = check_file(s, path, err, errlen);
	if (!rc) {
		s->minor = major == 3 ? minor : -1;
		out->stripped = !elf_image_has_table(s->img, ELF_SYMTAB);
		read_symbols(s, out);
		find_coro_type(s);
		find_table(s);
		out->opcode_table = s->table;
		if (!s->table && !out->note[0])
			snprintf(out->note, sizeof(out->note), "%s", s->table_why);
		find_points(s, out);
	}
	if (s)
		elf_image_close(s->img);
	free(s);
	return rc;
}

const char *hook_source_name(enum hook_source s)
{
	static const char *const names[] = { "missing", ".symtab", ".gnu_debugdata", ".dynsym",
					     "type slot", "method table", "opcode handler" };

	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

/* ---- later questions about a table found before ----------------------------- */

/* A search over PATH that knows H's opcode table again. */
static int reopen(struct search *s, const char *path, const struct python_hooks *h, int opcode)
{
	char err[256];

	memset(s, 0, sizeof(*s));
	if (!h || !h->opcode_table || opcode < 0 || opcode >= OPCODES) {
		why(s, "no opcode table, or opcode %d out of range", opcode);
		return -1;
	}
	if (elf_image_open(path, &s->img, err, sizeof(err)) != 0) {
		why(s, "%s", err);
		return -1;
	}
	for (int i = 0; i < OPCODES; i++)
		s->targets[i] = pointer_at(s, h->opcode_table + 8 * (uint64_t)i, NULL, 0);
	s->table = h->opcode_table;
	return 0;
}

uint64_t python_hooks_opcode_handler(const char *path, const struct python_hooks *h, int opcode)
{
	struct search *s = calloc(1, sizeof(*s));
	uint64_t handler = s && reopen(s, path, h, opcode) == 0 ? s->targets[opcode] : 0;

	if (s)
		elf_image_close(s->img);
	free(s);
	return handler;
}

uint64_t python_hooks_opcode_call(const char *path, const struct python_hooks *h, int opcode,
				  char *whybuf, size_t whylen)
{
	struct search *s = calloc(1, sizeof(*s));
	uint64_t fn = 0, call;

	if (s && reopen(s, path, h, opcode) == 0)
		fn = opcode_call(s, opcode, &call);
	snprintf(whybuf, whylen, "%s", s ? s->why : "out of memory");
	if (s)
		elf_image_close(s->img);
	free(s);
	return fn;
}
