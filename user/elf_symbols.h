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

/* Whether MATCH returns true for one of PATH's DT_NEEDED names. */
bool elf_needs(const char *path, bool (*match)(const char *needed, void *arg), void *arg);

/* PATH's e_machine (EM_X86_64, EM_AARCH64), or -1 when it is not a
 * regular ELF file. */
int elf_machine(const char *path);
/* The e_machine and class (ELFCLASS32, ELFCLASS64; ELF_CLASS may be
 * NULL) of the ELF file open at FD, read with pread. Returns 0, or -1
 * when it is not ELF. */
int elf_header_fd(int fd, int *machine, int *elf_class);

/* ---- one ELF file opened for many questions ------------------------------
 * What finding a stripped interpreter's hook points needs: symbols with
 * their sizes, the bytes at an address, the pointers the dynamic loader
 * will store (relocations), function starts (.eh_frame_hdr) and the
 * MiniDebugInfo ELF hidden in .gnu_debugdata. */
struct elf_image;

/* Opens PATH. Returns 0, or -errno with a one-line reason in err. */
int elf_image_open(const char *path, struct elf_image **out, char *err, size_t errlen);
/* Opens the xz-compressed ELF in IMG's .gnu_debugdata section. Returns 0,
 * -ENOENT when IMG has none, another -errno (reason in err) when it
 * cannot be read. */
int elf_image_open_debugdata(const struct elf_image *img, struct elf_image **out, char *err,
			     size_t errlen);
void elf_image_close(struct elf_image *img);

/* e_machine and e_type (ET_EXEC: fixed addresses, pointers not relocated). */
int elf_image_machine(const struct elf_image *img);
int elf_image_type(const struct elf_image *img);
/* Whether IMG is 64-bit little-endian, the only kind the image's pointer
 * and byte readers understand. */
bool elf_image_lp64(const struct elf_image *img);
bool elf_image_has_table(const struct elf_image *img, enum elf_symbol_table table);
bool elf_image_has_section(const struct elf_image *img, const char *name);

struct elf_sym {
	const char *name;
	uint64_t value, size;
	unsigned char type, bind; /* STT_*, STB_* */
};
/* Calls FN for every defined, named symbol of TABLE. Returns 0, or
 * -ENOENT when IMG has no such table. */
int elf_image_symbols(const struct elf_image *img, enum elf_symbol_table table,
		      void (*fn)(const struct elf_sym *sym, void *ctx), void *ctx);

/* A PT_LOAD segment and its bytes in the file (filesz of memsz). */
struct elf_segment {
	uint64_t vaddr, memsz, offset;
	const unsigned char *data;
	size_t filesz;
	bool exec;
};
const struct elf_segment *elf_image_segments(const struct elf_image *img, size_t *n);
/* LEN bytes of the file at VADDR, or NULL when they are not all there. */
const unsigned char *elf_image_bytes(const struct elf_image *img, uint64_t vaddr, size_t len);
/* Whether VADDR is inside an executable PT_LOAD segment. */
bool elf_image_in_code(const struct elf_image *img, uint64_t vaddr);
/* The file offset of code at VADDR (what a uprobe wants). Returns 0, or
 * -1 when VADDR is not in an executable segment. */
int elf_image_file_offset(const struct elf_image *img, uint64_t vaddr, uint64_t *offset);
/* Whether a function (an FDE of .eh_frame_hdr's table) starts at VADDR:
 * 1 yes, 0 no, -1 when IMG has no table to tell. */
int elf_image_function_start(const struct elf_image *img, uint64_t vaddr);

/* Little-endian words as stored in the file. */
uint64_t elf_le64(const unsigned char *p);
uint32_t elf_le32(const unsigned char *p);

/* A pointer the dynamic loader leaves at PLACE. */
enum elf_pointer_kind {
	ELF_PTR_RAW,      /* no relocation: the file's own 8 bytes */
	ELF_PTR_RELATIVE, /* a relative relocation (RELA addend or RELR word) */
	ELF_PTR_SYMBOL,   /* a symbol + addend (0 when the symbol is not here) */
};
struct elf_pointer {
	uint64_t place, value;
	enum elf_pointer_kind kind;
	const char *symbol; /* ELF_PTR_SYMBOL: the symbol's name */
};
/* IMG's relative and 64-bit symbolic dynamic relocations (x86-64 and
 * aarch64), sorted by place; NULL with *n = 0 when there are none. */
const struct elf_pointer *elf_image_pointers(struct elf_image *img, size_t *n);
/* The pointer stored at PLACE: its relocation, else the file's 8 bytes
 * (little-endian). Returns 0, or -1 when PLACE is not in the file. */
int elf_image_pointer_at(struct elf_image *img, uint64_t place, struct elf_pointer *out);

#endif
