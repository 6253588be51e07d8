/* Function symbols of ELF files, for placing uprobes. */
#ifndef PMETRICS_ELF_SYMBOLS_H
#define PMETRICS_ELF_SYMBOLS_H

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

/* Reads PATH's DT_SONAME into out (empty when absent). Returns 0 or -1. */
int elf_soname(const char *path, char *out, size_t len);

/* Reads PATH's DT_RUNPATH (or DT_RPATH) into out. Returns 0 or -1. */
int elf_runpath(const char *path, char *out, size_t len);

#endif
