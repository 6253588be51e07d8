/* SPDX-License-Identifier: MIT */
/* Native addresses of sampled processes, and of the kernel, to function
 * names. A process's mappings come from /proc/PID/maps, each file is read
 * once (by device and inode, shared by every process mapping it) from
 * the very file mapped (/proc/PID/map_files), and its functions are
 * taken from .symtab, .dynsym and the .symtab inside .gnu_debugdata
 * (MiniDebugInfo) together: a stripped library still names what it
 * exports, and MiniDebugInfo names its static functions. An address no
 * symbol covers stays what it is: its file and offset in the file. */
#ifndef PMETRICS_SYMBOLIZER_H
#define PMETRICS_SYMBOLIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct symbolizer;

/* One address of a process, resolved. */
struct native_frame {
	uint64_t addr;
	bool mapped;           /* in a mapping of the process */
	bool in_file;          /* ... of a file (module, file_offset, dev/ino valid) */
	bool executable;       /* ... that holds code (x in its permissions) */
	/* the file's base name, or the mapping's name ("[vdso]"): a copy, as
	 * the next frame of a sample may read the mappings again */
	char module[256];
	uint64_t file_offset;  /* addr's offset in the file */
	uint64_t dev, ino;     /* the file (makedev of /proc/PID/maps's major:minor) */
	const char *function;  /* NULL when no symbol covers it */
	uint64_t function_offset; /* file offset of the function's first byte */
};

struct symbolizer *symbolizer_new(void);
void symbolizer_free(struct symbolizer *s);

/* Resolves ADDR of PID. RETURN_ADDRESS: ADDR is where a call returns to
 * (every frame but the leaf), so the call itself, one byte before, is
 * what is named. OUT->function stays valid until symbolizer_free(). */
void symbolizer_user(struct symbolizer *s, pid_t pid, uint64_t addr, bool return_address,
		     struct native_frame *out);
/* Reads the kernel's function symbols now, not at the first kernel
 * frame (they take tens of milliseconds: see symbolizer.c). */
void symbolizer_load_kernel(struct symbolizer *s);
/* Takes TEXT (LEN bytes, NUL after them, malloc'ed; NULL for none) in
 * /proc/kallsyms' form as the kernel's symbols: what
 * symbolizer_load_kernel() does with that file. */
void symbolizer_kernel_text(struct symbolizer *s, char *text, size_t len);
/* The kernel function holding ADDR, or NULL (kallsyms unreadable). */
const char *symbolizer_kernel(struct symbolizer *s, uint64_t addr);

/* PID exec'd or exited: its mappings are read again when next needed. */
void symbolizer_forget(struct symbolizer *s, pid_t pid);

/* Text of FRAME in the capture's forms (profile_frame_native() or
 * profile_frame_unresolved()); returns its length. */
size_t symbolizer_format(const struct native_frame *frame, char *buf, size_t size);

/* ---- /proc/PID/maps, for the sampler's other readers ----------------- */

struct proc_map {
	uint64_t start, end, offset;
	uint64_t dev, ino;
	bool readable; /* r in its permissions: PROT_NONE reservations are not */
	bool executable; /* x in its permissions: code */
	char *path;    /* as the process names it; "" for anonymous memory */
};

/* Reads /proc/PID/maps. Returns the number of mappings (*out: an array
 * to free with proc_maps_free()), or -errno. */
int proc_maps_read(pid_t pid, struct proc_map **out);
void proc_maps_free(struct proc_map *maps, int n);
/* A path from which this process can open MAP's file of PID: its
 * map_files entry, else the path inside the process's root. */
void proc_map_file(pid_t pid, const struct proc_map *map, char *buf, size_t size);

#endif
