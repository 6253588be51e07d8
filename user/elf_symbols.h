/* SPDX-License-Identifier: MIT */
/* Function symbols of ELF files, for placing uprobes, and the dynamic
 * section entries the library resolver needs. */
#ifndef PMETRICS_ELF_SYMBOLS_H
#define PMETRICS_ELF_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Finds function NAME in PATH's .symtab, then .dynsym, and stores the
 * file offset of its first instruction (what a uprobe wants) in
 * *offset. Works for PIE, non-PIE and shared objects. Returns 0;
 * -ENOENT when the symbol is not there (close names, if any, are written
 * to suggest as "a, b, c"); another -errno when PATH is not a readable
 * ELF file (reason in err). */
int elf_symbol_offset(const char *path, const char *name, uint64_t *offset,
		      char *suggest, size_t suggest_len, char *err, size_t errlen);

/* Where elf_symbol_lookup() found a symbol. */
enum elf_symbol_table { ELF_SYMTAB, ELF_DYNSYM };

/* elf_symbol_offset() that also says which table held the symbol. */
int elf_symbol_lookup(const char *path, const char *name, uint64_t *offset,
		      enum elf_symbol_table *table, char *suggest, size_t suggest_len,
		      char *err, size_t errlen);

/* Whether PATH has a .symtab (not stripped to .dynsym). */
bool elf_has_symtab(const char *path);

/* Reads PATH's DT_SONAME into out (empty when absent). Returns 0 or -1. */
int elf_soname(const char *path, char *out, size_t len);

/* Reads PATH's DT_RPATH, DT_RUNPATH into out. Returns 0, or -1 when
 * absent (the dynamic loader uses DT_RPATH only without DT_RUNPATH). */
int elf_rpath(const char *path, char *out, size_t len);
int elf_runpath(const char *path, char *out, size_t len);

/* The first DT_NEEDED name of PATH starting with PREFIX ("libpython").
 * Returns 0, or -1 when there is none. */
int elf_needed(const char *path, const char *prefix, char *out, size_t len);

/* PATH's e_machine (EM_X86_64, EM_AARCH64), or -1 when not ELF. */
int elf_machine(const char *path);

#endif
