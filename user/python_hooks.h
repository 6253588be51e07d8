/* SPDX-License-Identifier: MIT */
/* Where a CPython build's hook points are: the functions pmetrics puts
 * uprobes on, found from its symbols when it has them and otherwise from
 * what a stripped build (strip --strip-unneeded: .dynsym only) still
 * holds: the exported PyCoro_Type's and PyGen_Type's slots, the former's
 * method table, and the computed-goto opcode table of
 * _PyEval_EvalFrameDefault. */
#ifndef PMETRICS_PYTHON_HOOKS_H
#define PMETRICS_PYTHON_HOOKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where a hook point was found, most trusted first. */
enum hook_source {
	HOOK_MISSING,
	HOOK_SYMTAB,       /* .symtab */
	HOOK_DEBUGDATA,    /* the .symtab of .gnu_debugdata (MiniDebugInfo) */
	HOOK_DYNSYM,       /* .dynsym: exported */
	HOOK_TYPE_SLOT,    /* a slot of PyCoro_Type */
	HOOK_METHOD_TABLE, /* an entry of PyCoro_Type.tp_methods */
	HOOK_OPCODE_CALL,  /* the first call in an opcode's handler */
};

struct python_hook_point {
	uint64_t vaddr;  /* 0 when missing */
	uint64_t offset; /* file offset of the first instruction (uprobe) */
	enum hook_source source;
	char detail[160]; /* the symbol or the way it was found; when missing, why */
};

struct python_hooks {
	struct python_hook_point eval_frame,  /* _PyEval_EvalFrameDefault */
		function_vectorcall,          /* _PyFunction_Vectorcall */
		coro_send,                    /* 3.10+ PyGen_am_send, 3.8/3.9 _PyGen_Send */
		iter_send,                    /* PyIter_Send, 3.10+ */
		gen_send, gen_throw, gen_close, /* coroutine.send(), .throw(), .close() */
		gen_dealloc,                  /* PyCoro_Type.tp_dealloc */
		gen_iternext,                 /* PyGen_Type.tp_iternext */
		make_coro,                    /* _Py_MakeCoro, 3.11+ */
		fetch_stop_value,             /* _PyGen_FetchStopIterationValue, to 3.11 */
		eval_code;                    /* PyEval_EvalCode: a module's body */
	uint64_t opcode_table; /* vaddr of opcode_targets, 0 when not found */
	bool stripped;         /* no .symtab */
	bool has_debugdata;    /* .gnu_debugdata present */
	char note[160];        /* why .gnu_debugdata or the opcode table was not usable, or "" */
};

/* Finds the hook points of the CPython MAJOR.MINOR interpreter in PATH
 * (a libpython or an executable). Returns 0 (missing points are marked
 * so: no error), or -errno with a one-line reason in err when PATH is not
 * a readable 64-bit ELF file with a symbol table. */
int python_hooks_find(const char *path, int major, int minor, struct python_hooks *out,
		      char *err, size_t errlen);

/* ".symtab", ".gnu_debugdata", ".dynsym", "type slot", "method table",
 * "opcode handler" ("missing" for HOOK_MISSING). */
const char *hook_source_name(enum hook_source s);

/* The handler address of OPCODE in H's opcode table (0 if none). */
uint64_t python_hooks_opcode_handler(const char *path, const struct python_hooks *h, int opcode);

/* The function the first direct call in OPCODE's handler goes to (what
 * the PLT stub leads to when it goes through one), checked to be a
 * function start; 0 with the reason in why when there is none to trust. */
uint64_t python_hooks_opcode_call(const char *path, const struct python_hooks *h, int opcode,
				  char *why, size_t whylen);

#endif
