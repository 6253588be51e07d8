// SPDX-License-Identifier: MIT
/* CPython interpreters of sampled processes, their code objects' names
 * and lines; see python_stack.h. */
#include "python_stack.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "elf_symbols.h"
#include "library_resolver.h"
#include "python_elf.h"
#include "symbolizer.h"
#include "test_setting.h"
#include "whole_file.h"

/* Set once process_vm_readv() is known missing (ENOSYS: a kernel built
 * without CONFIG_CROSS_MEMORY_ATTACH, which allnoconfig-based builds
 * leave out), or PMETRICS_TEST_NO_CROSS_MEMORY_ATTACH=1 asks to act so. */
static int cross_memory_attach = -1; /* -1 not known yet, 0 missing, 1 there */

/* Each thread's open /proc/PID/mem, of the last process it read (fd -1
 * with that pid: it could not be opened, and is not tried again until
 * another process is read). */
static __thread struct {
	pid_t pid;
	int fd;
} proc_mem = { 0, -1 };

void python_read_memory_release(void)
{
	if (proc_mem.fd >= 0)
		close(proc_mem.fd);
	proc_mem.fd = -1;
	proc_mem.pid = 0;
}

static void proc_mem_open(pid_t pid)
{
	char path[32];

	python_read_memory_release();
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	proc_mem.fd = open(path, O_RDONLY | O_CLOEXEC);
	proc_mem.pid = pid;
}

/* pread() of /proc/PID/mem: what process_vm_readv() does, one open per
 * process. A process that ended reads as empty (its number may since be
 * another's): the file is opened again once. */
static int read_proc_mem(pid_t pid, void *dst, size_t size, uint64_t addr)
{
	ssize_t n = 0;

	for (int attempt = 0; attempt < 2 && n == 0; attempt++) {
		if (proc_mem.pid != pid || attempt)
			proc_mem_open(pid);
		if (proc_mem.fd < 0)
			return -1;
		n = pread(proc_mem.fd, dst, size, (off_t)addr);
	}
	return n == (ssize_t)size ? 0 : -1;
}

int python_read_memory(pid_t pid, void *dst, size_t size, uint64_t addr)
{
	struct iovec local = { dst, size };
	struct iovec remote = { (void *)(uintptr_t)addr, size };
	int cma = __atomic_load_n(&cross_memory_attach, __ATOMIC_RELAXED);
	ssize_t n;

	if (!addr)
		return -1;
	if (!size)
		return 0;
	if (cma < 0) {
		cma = !test_setting_on("PMETRICS_TEST_NO_CROSS_MEMORY_ATTACH");
		__atomic_store_n(&cross_memory_attach, cma, __ATOMIC_RELAXED);
	}
	if (cma) {
		n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
		if (n >= 0 || errno != ENOSYS)
			return n == (ssize_t)size ? 0 : -1;
		__atomic_store_n(&cross_memory_attach, 0, __ATOMIC_RELAXED);
	}
	return read_proc_mem(pid, dst, size, addr);
}

bool python_read_memory_direct(void)
{
	return __atomic_load_n(&cross_memory_attach, __ATOMIC_RELAXED) != 0;
}

/* The walker of include/python_walk.h, reading another process. */
struct user_reader {
	pid_t pid;
};

#define PY_CTX struct user_reader *
#define PY_INLINE static inline
#define PY_READ(ctx, dst, size, addr) python_read_memory((ctx)->pid, (dst), (size), (addr))
#include "python_walk.h"

/* ---- the layouts ---------------------------------------------------------- */

enum line_format { LINES_LNOTAB, LINES_310, LINES_311 };

/* What naming a code object reads of it. */
struct code_layout {
	uint32_t filename, name, qualname, linetable, firstlineno;
	uint32_t header;       /* bytes of the code object holding the fields */
	uint32_t ascii_size;   /* sizeof(PyASCIIObject): an ASCII str's text */
	uint32_t compact_size; /* sizeof(PyCompactUnicodeObject) */
	enum line_format lines;
};

#define NO PY_NO_FIELD

/* Read with offsetof() from each version's own headers (Include/cpython/
 * and Include/internal/: pystate.h, pycore_interp.h, pycore_runtime.h,
 * frameobject.h or pycore_frame.h, code.h, unicodeobject.h), built with
 * -DPy_BUILD_CORE against the pyenv 3.8.18 ... 3.13.0 installs;
 * tests/progs/py_layout.c prints them for test_python_layout.sh. The
 * same on x86-64 and arm64: none of these sit behind a pthread type. */
static const struct version_layout {
	int minor;
	struct py_layout walk;
	struct code_layout code;
} versions[] = {
	{ 8,
	  { .model = PY_MODEL_FRAMEOBJ, .interp_main = 40, .interp_threads = 8, .tstate_next = 8,
	    .tstate_native_tid = NO, .tstate_thread_id = 176, .tstate_frame = 24,
	    .cframe_current = NO, .frame_back = 24, .frame_code = 32, .frame_instr = 104,
	    .frame_owner = NO, .owner_cstack = NO, .frame_gen = 96, .gen_qualname = 56,
	    .frame_read = 112, .code_firstlineno = 40, .code_filename = 104, .code_name = 112,
	    .code_read = 80, .code_adaptive = 0 },
	  { .filename = 104, .name = 112, .qualname = NO, .linetable = 120, .firstlineno = 40,
	    .header = 128, .ascii_size = 48, .compact_size = 72, .lines = LINES_LNOTAB } },
	{ 9,
	  { .model = PY_MODEL_FRAMEOBJ, .interp_main = 40, .interp_threads = 8, .tstate_next = 8,
	    .tstate_native_tid = NO, .tstate_thread_id = 176, .tstate_frame = 24,
	    .cframe_current = NO, .frame_back = 24, .frame_code = 32, .frame_instr = 104,
	    .frame_owner = NO, .owner_cstack = NO, .frame_gen = 96, .gen_qualname = 56,
	    .frame_read = 112, .code_firstlineno = 40, .code_filename = 104, .code_name = 112,
	    .code_read = 80, .code_adaptive = 0 },
	  { .filename = 104, .name = 112, .qualname = NO, .linetable = 120, .firstlineno = 40,
	    .header = 128, .ascii_size = 48, .compact_size = 72, .lines = LINES_LNOTAB } },
	{ 10,
	  { .model = PY_MODEL_FRAMEOBJ, .interp_main = 40, .interp_threads = 8, .tstate_next = 8,
	    .tstate_native_tid = NO, .tstate_thread_id = 176, .tstate_frame = 24,
	    .cframe_current = NO, .frame_back = 24, .frame_code = 32, .frame_instr = 96,
	    .frame_owner = NO, .owner_cstack = NO, .frame_gen = 88, .gen_qualname = 48,
	    .frame_read = 104, .code_firstlineno = 40, .code_filename = 104, .code_name = 112,
	    .code_read = 80, .code_adaptive = 0 },
	  { .filename = 104, .name = 112, .qualname = NO, .linetable = 120, .firstlineno = 40,
	    .header = 128, .ascii_size = 48, .compact_size = 72, .lines = LINES_310 } },
	{ 11,
	  { .model = PY_MODEL_CFRAME, .interp_main = 48, .interp_threads = 16, .tstate_next = 8,
	    .tstate_native_tid = 160, .tstate_thread_id = 152, .pthread_tid = NO,
	    .tstate_frame = 56, .cframe_current = 8, .frame_back = 48, .frame_code = 32,
	    .frame_instr = 56, .frame_owner = 69, .owner_cstack = NO, .frame_gen = NO,
	    .gen_qualname = NO, .frame_read = 72, .code_firstlineno = 72, .code_filename = 112,
	    .code_name = 128, .code_read = 64, .code_adaptive = 184 },
	  { .filename = 112, .name = 120, .qualname = 128, .linetable = 136, .firstlineno = 72,
	    .header = 144, .ascii_size = 48, .compact_size = 72, .lines = LINES_311 } },
	{ 12,
	  { .model = PY_MODEL_CFRAME, .interp_main = 48, .interp_threads = 72, .tstate_next = 8,
	    .tstate_native_tid = 144, .tstate_thread_id = 136, .pthread_tid = NO,
	    .tstate_frame = 56, .cframe_current = 0, .frame_back = 8, .frame_code = 0,
	    .frame_instr = 56, .frame_owner = 70, .owner_cstack = 3, .frame_gen = NO,
	    .gen_qualname = NO, .frame_read = 72, .code_firstlineno = 68, .code_filename = 112,
	    .code_name = 128, .code_read = 68, .code_adaptive = 192 },
	  { .filename = 112, .name = 120, .qualname = 128, .linetable = 136, .firstlineno = 68,
	    .header = 144, .ascii_size = 40, .compact_size = 56, .lines = LINES_311 } },
	{ 13,
	  { .model = PY_MODEL_IFRAME, .interp_main = 640, .interp_threads = 7344, .tstate_next = 8,
	    .tstate_native_tid = 160, .tstate_thread_id = 152, .pthread_tid = NO,
	    .tstate_frame = 72, .cframe_current = NO, .frame_back = 8, .frame_code = 0,
	    .frame_instr = 56, .frame_owner = 70, .owner_cstack = 3, .frame_gen = NO,
	    .gen_qualname = NO, .frame_read = 72, .code_firstlineno = 68, .code_filename = 112,
	    .code_name = 128, .code_read = 68, .code_adaptive = 200 },
	  { .filename = 112, .name = 120, .qualname = 128, .linetable = 136, .firstlineno = 68,
	    .header = 144, .ascii_size = 40, .compact_size = 56, .lines = LINES_311 } },
};

/* glibc's struct pthread keeps the kernel's thread id after its header,
 * which on x86-64 holds the TCB with its SSE save area; checked on the
 * process's own threads before use (python_proc_check_tid). */
#if defined(__x86_64__)
#define PTHREAD_TID_GUESS 0x2d0
#elif defined(__aarch64__)
#define PTHREAD_TID_GUESS 0xd0
#else
#define PTHREAD_TID_GUESS 0
#endif

static const struct version_layout *version_of(int major, int minor)
{
	if (major != 3)
		return NULL;
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++)
		if (versions[i].minor == minor)
			return &versions[i];
	return NULL;
}

int python_layout_for(int major, int minor, struct py_layout *out)
{
	const struct version_layout *v = version_of(major, minor);

	if (!v)
		return -1;
	*out = v->walk;
	if (out->model == PY_MODEL_FRAMEOBJ)
		out->pthread_tid = PTHREAD_TID_GUESS;
	return 0;
}

/* ---- finding the interpreter ------------------------------------------- */

struct wanted_symbols {
	uint64_t runtime, code_type, function_type;
};

static void want_symbol(const struct elf_sym *sym, void *ctx)
{
	struct wanted_symbols *w = ctx;

	if (sym->type != STT_OBJECT)
		return;
	if (!w->runtime && strcmp(sym->name, "_PyRuntime") == 0)
		w->runtime = sym->value;
	else if (!w->code_type && strcmp(sym->name, "PyCode_Type") == 0)
		w->code_type = sym->value;
	else if (!w->function_type && strcmp(sym->name, "PyFunction_Type") == 0)
		w->function_type = sym->value;
}

/* The ELF address of file offset OFF of IMG (through its PT_LOAD). */
static bool image_vaddr(const struct elf_image *img, uint64_t off, uint64_t *vaddr)
{
	size_t n;
	const struct elf_segment *segs = elf_image_segments(img, &n);

	for (size_t i = 0; i < n; i++) {
		if (off >= segs[i].offset && off < segs[i].offset + segs[i].memsz) {
			*vaddr = off - segs[i].offset + segs[i].vaddr;
			return true;
		}
	}
	return false;
}

/* Does the file of MAPS[I] define _PyRuntime? Then OUT gets its
 * addresses in the process. */
static bool interp_in_file(pid_t pid, const struct proc_map *maps, int n, int i,
			   struct python_proc *out)
{
	struct wanted_symbols w = { 0, 0, 0 };
	struct elf_image *img = NULL;
	char path[4352], err[256];
	uint64_t vaddr, bias = 0;
	bool found = false;

	proc_map_file(pid, &maps[i], path, sizeof(path));
	if (elf_image_open(path, &img, err, sizeof(err)) != 0)
		return false;
	elf_image_symbols(img, ELF_DYNSYM, want_symbol, &w);
	if (!w.runtime || !w.code_type)
		elf_image_symbols(img, ELF_SYMTAB, want_symbol, &w);
	/* the load bias, from the file's first mapping */
	for (int k = 0; k < n && w.runtime; k++) {
		if (maps[k].dev != maps[i].dev || maps[k].ino != maps[i].ino)
			continue;
		if (image_vaddr(img, maps[k].offset, &vaddr)) {
			bias = maps[k].start - vaddr;
			found = true;
		}
		break;
	}
	elf_image_close(img);
	if (!found)
		return false;
	out->walk.runtime = bias + w.runtime;
	out->code_type = w.code_type ? bias + w.code_type : 0;
	out->function_type = w.function_type ? bias + w.function_type : 0;
	out->interp_dev = maps[i].dev;
	out->interp_ino = maps[i].ino;
	out->walk.interp_start = UINT64_MAX;
	out->walk.interp_end = 0;
	for (int k = 0; k < n; k++) {
		if (maps[k].dev != maps[i].dev || maps[k].ino != maps[i].ino)
			continue;
		if (maps[k].start < out->walk.interp_start)
			out->walk.interp_start = maps[k].start;
		if (maps[k].end > out->walk.interp_end)
			out->walk.interp_end = maps[k].end;
	}
	snprintf(out->interp_name, sizeof(out->interp_name), "%s",
		 strrchr(maps[i].path, '/') ? strrchr(maps[i].path, '/') + 1 : maps[i].path);
	return true;
}

/* The interpreter's file among PID's mappings: a libpython first, else
 * the executable. Returns its index, or -1. */
static int find_interp_map(pid_t pid, const struct proc_map *maps, int n, struct python_proc *out)
{
	char link[64], exe[4096];
	ssize_t len;

	for (int i = 0; i < n; i++) {
		const char *base = strrchr(maps[i].path, '/');

		if (base && strncmp(base + 1, "libpython", 9) == 0 && maps[i].ino &&
		    (i == 0 || maps[i - 1].ino != maps[i].ino) && interp_in_file(pid, maps, n, i, out))
			return i;
	}
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	len = readlink(link, exe, sizeof(exe) - 1);
	if (len <= 0)
		return -1;
	exe[len] = '\0';
	for (int i = 0; i < n; i++)
		if (strcmp(maps[i].path, exe) == 0)
			return interp_in_file(pid, maps, n, i, out) ? i : -1;
	return -1;
}

/* 3.13+ describe their own layout at the start of _PyRuntime
 * (_Py_DebugOffsets, cookie "xdebugpy"): where a build moved a field,
 * that wins over the table. */
static void apply_debug_offsets(struct python_proc *p)
{
	uint64_t d[64];
	struct py_layout copy = p->walk.layout, *L = &copy;

	if (python_read_memory(p->pid, d, sizeof(d), p->walk.runtime) != 0 ||
	    memcmp(d, "xdebugpy", 8) != 0 || (d[1] >> 16) != 0x030d)
		return;
	for (int i = 3; i < 44; i++)
		if (d[i] > 65536)
			return; /* not the struct this reads */
	/* cookie, version, free_threaded, then runtime_state {size,
	 * finalizing, interpreters_head}, interpreter_state {size, id, next,
	 * threads_head, ...13 fields}, thread_state {size, prev, next,
	 * interp, current_frame, thread_id, native_thread_id, ...9 fields},
	 * interpreter_frame {size, previous, executable, instr_ptr,
	 * localsplus, owner} */
	L->interp_main = (uint32_t)d[3 + 2] + 8; /* head, then main */
	L->interp_threads = (uint32_t)d[3 + 3 + 3];
	L->tstate_next = (uint32_t)d[3 + 3 + 13 + 2];
	L->tstate_frame = (uint32_t)d[3 + 3 + 13 + 4];
	L->tstate_native_tid = (uint32_t)d[3 + 3 + 13 + 6];
	L->frame_back = (uint32_t)d[3 + 3 + 13 + 9 + 1];
	L->frame_code = (uint32_t)d[3 + 3 + 13 + 9 + 2];
	L->frame_instr = (uint32_t)d[3 + 3 + 13 + 9 + 3];
	L->frame_owner = (uint32_t)d[3 + 3 + 13 + 9 + 5];
	/* code_object {size, filename, name, qualname, linetable, firstlineno,
	 * argcount, localsplusnames, localspluskinds, co_code_adaptive} */
	L->code_filename = (uint32_t)d[34 + 1];
	L->code_name = (uint32_t)d[34 + 3];
	L->code_firstlineno = (uint32_t)d[34 + 5];
	L->code_adaptive = (uint32_t)d[34 + 9];
	L->code_read = L->code_name + 8 - L->code_firstlineno;
	if (L->code_name >= L->code_firstlineno && L->code_filename >= L->code_firstlineno &&
	    L->code_read < PY_SCRATCH_BYTES && L->frame_owner + 1 <= L->frame_read &&
	    L->frame_back + 8 <= L->frame_read && L->frame_instr + 8 <= L->frame_read &&
	    L->frame_code + 8 <= L->frame_read)
		p->walk.layout = copy;
}

int python_proc_find(pid_t pid, struct python_proc *out, char *why, size_t whylen)
{
	struct proc_map *maps;
	char path[4352];
	bool free_threaded = false;
	int n = proc_maps_read(pid, &maps), i, ret = 0;

	memset(out, 0, sizeof(*out));
	out->pid = pid;
	if (n < 0) {
		snprintf(why, whylen, "cannot read /proc/%d/maps: %s", (int)pid, strerror(-n));
		return n;
	}
	i = find_interp_map(pid, maps, n, out);
	if (i < 0) {
		proc_maps_free(maps, n);
		return -ENOENT;
	}
	proc_map_file(pid, &maps[i], path, sizeof(path));
	if (python_version_from_name(maps[i].path, &out->major, &out->minor, &free_threaded) != 0 &&
	    python_version_from_file(path, &out->major, &out->minor, &free_threaded) != 0) {
		snprintf(why, whylen, "%s defines _PyRuntime but its CPython version cannot be told "
			 "(no pythonX.Y in its name, no ABI tag in it)", out->interp_name);
		ret = -ENOEXEC;
	} else if (free_threaded) {
		snprintf(why, whylen, "%s is a free-threaded CPython %d.%dt, whose frames pmetrics "
			 "cannot walk", out->interp_name, out->major, out->minor);
		ret = -ENOTSUP;
	} else if (python_layout_for(out->major, out->minor, &out->walk.layout) != 0) {
		snprintf(why, whylen, "%s is CPython %d.%d; Python stacks need 3.8 to 3.13",
			 out->interp_name, out->major, out->minor);
		ret = -ENOTSUP;
	}
	proc_maps_free(maps, n);
	if (ret == 0 && out->minor >= 13)
		apply_debug_offsets(out);
	return ret;
}

static bool thread_of(pid_t pid, uint32_t tid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/task/%u", (int)pid, tid);
	return tid && stat(path, &st) == 0;
}

bool python_proc_check_tid(struct python_proc *p)
{
	struct py_layout *L = &p->walk.layout;
	struct user_reader r = { .pid = p->pid };
	uint64_t interp, ts, pthread;
	uint32_t tid;

	if (p->tid_checked || L->tstate_native_tid != PY_NO_FIELD) {
		p->tid_checked = true;
		return true;
	}
	interp = py_read_ptr(&r, p->walk.runtime + L->interp_main);
	ts = interp ? py_read_ptr(&r, interp + L->interp_threads) : 0;
	pthread = ts ? py_read_ptr(&r, ts + L->tstate_thread_id) : 0;
	if (!pthread)
		return false;
	if (python_read_memory(p->pid, &tid, sizeof(tid), pthread + L->pthread_tid) == 0 &&
	    thread_of(p->pid, tid)) {
		p->tid_checked = true;
		return true;
	}
	/* another libc layout: the first word that is one of its threads */
	for (uint32_t off = 0; off < 2048; off += 4) {
		if (python_read_memory(p->pid, &tid, sizeof(tid), pthread + off) == 0 &&
		    tid > 1 && thread_of(p->pid, tid)) {
			L->pthread_tid = off;
			break;
		}
	}
	p->tid_checked = true;
	return true;
}

int python_walk_thread(const struct python_proc *p, pid_t tid, struct py_thread_cache *thread,
		       struct py_frame_ref *out, int *status)
{
	struct user_reader r = { .pid = p->pid };
	const struct py_layout *L = &p->walk.layout;
	uint8_t buf[PY_SCRATCH_BYTES];
	struct py_code_memo memo[PY_CODE_MEMO] = { 0 };
	struct py_walk w = { .L = L, .out = out, .buf = buf, .memo = memo, .status = PY_WALK_OK };

	if (py_cached_frame(&r, L, thread, buf, &w.frame)) {
		struct py_find f = { .L = L, .tid = (uint32_t)tid, .ts = py_first_tstate(&r, &p->walk) };

		for (int i = 0; i < PY_MAX_THREADS && !py_find_step(&r, &f); i++)
			;
		if (py_cache_found(&r, L, thread, f.found, buf, &w.frame)) {
			*status = f.found ? PY_WALK_READ_FAILED : PY_WALK_NO_THREAD;
			return 0;
		}
	}
	if (!w.frame) {
		*status = PY_WALK_IDLE;
		return 0;
	}
	for (int i = 0; i < PY_MAX_VISITED && !py_walk_step(&r, &w); i++)
		;
	if (w.frame && w.status == PY_WALK_OK)
		w.status = PY_WALK_TRUNCATED;
	*status = (int)w.status;
	return (int)w.n;
}

/* ---- line tables ------------------------------------------------------------ */

unsigned python_line_lnotab(const uint8_t *t, size_t len, int firstlineno, uint32_t byte_offset)
{
	int line = firstlineno;
	uint32_t addr = 0;

	for (size_t i = 0; i + 1 < len; i += 2) {
		addr += t[i];
		if (addr > byte_offset)
			break;
		line += (int8_t)t[i + 1];
	}
	return line > 0 ? (unsigned)line : 0;
}

unsigned python_line_310(const uint8_t *t, size_t len, int firstlineno, uint32_t byte_offset)
{
	int line = firstlineno, range_line = -1;
	uint32_t start, end = 0;

	for (size_t i = 0; i + 1 < len; i += 2) {
		int8_t delta = (int8_t)t[i + 1];

		start = end;
		end = start + t[i];
		if (delta == -128) {
			range_line = -1;
		} else {
			line += delta;
			range_line = line;
		}
		if (byte_offset >= start && byte_offset < end)
			return range_line > 0 ? (unsigned)range_line : 0;
	}
	return 0;
}

static uint32_t read_varint(const uint8_t *t, size_t len, size_t *i)
{
	uint32_t val, shift = 0;
	uint8_t b;

	if (*i >= len)
		return 0;
	b = t[(*i)++];
	val = b & 63;
	while ((b & 64) && *i < len && shift < 24) {
		b = t[(*i)++];
		shift += 6;
		val |= (uint32_t)(b & 63) << shift;
	}
	return val;
}

static int read_svarint(const uint8_t *t, size_t len, size_t *i)
{
	uint32_t u = read_varint(t, len, i);

	return u & 1 ? -(int)(u >> 1) : (int)(u >> 1);
}

unsigned python_line_311(const uint8_t *t, size_t len, int firstlineno, uint32_t byte_offset)
{
	uint32_t unit = byte_offset / 2, addr = 0;
	int line = firstlineno;
	size_t i = 0;

	while (i < len) {
		uint8_t first = t[i++];
		int code = (first >> 3) & 15, entry_line;
		uint32_t units = (uint32_t)(first & 7) + 1;

		if (!(first & 0x80))
			continue; /* not at an entry: skip to the next one */
		if (code == 14 || code == 13)
			line += read_svarint(t, len, &i);
		else if (code >= 10 && code <= 12)
			line += code - 10;
		entry_line = code == 15 ? 0 : line;
		if (unit < addr + units)
			return entry_line > 0 ? (unsigned)entry_line : 0;
		addr += units;
		while (i < len && !(t[i] & 0x80))
			i++;
	}
	return 0;
}

/* ---- qualified names from source (3.8-3.10) ---------------------------- */

/* Where each logical line starts: a line that begins inside a bracket,
 * a triple-quoted string or after a backslash continues the previous
 * one. Marks START[l] for 0-based line l. */
static void logical_lines(const char *src, size_t len, char *start, size_t n_lines)
{
	int depth = 0;
	char quote = 0; /* ' or " while in a string */
	bool triple = false, cont = false;
	size_t line = 0;

	if (n_lines)
		start[0] = 1;
	for (size_t i = 0; i < len; i++) {
		char c = src[i];

		if (c == '\n') {
			if (quote && !triple)
				quote = 0; /* an unterminated string ends with its line */
			line++;
			if (line < n_lines)
				start[line] = !quote && depth == 0 && !cont;
			cont = false;
			continue;
		}
		if (quote) {
			if (c == '\\') {
				i++;
				if (i < len && src[i] == '\n' && ++line < n_lines)
					start[line] = 0;
			} else if (c == quote && (!triple || (i + 2 < len && src[i + 1] == quote &&
							      src[i + 2] == quote))) {
				i += triple ? 2 : 0;
				quote = 0;
			}
			continue;
		}
		cont = false;
		if (c == '#') {
			while (i + 1 < len && src[i + 1] != '\n')
				i++;
		} else if (c == '\'' || c == '"') {
			quote = c;
			triple = i + 2 < len && src[i + 1] == c && src[i + 2] == c;
			i += triple ? 2 : 0;
		} else if (c == '(' || c == '[' || c == '{') {
			depth++;
		} else if ((c == ')' || c == ']' || c == '}') && depth > 0) {
			depth--;
		} else if (c == '\\' && i + 1 < len && src[i + 1] == '\n') {
			cont = true;
		}
	}
}

/* The indent of a line (tabs to the next multiple of 8, as the
 * tokenizer), or -1 for a blank or comment-only line. */
static int indent_of(const char *line, const char *end)
{
	int col = 0;

	for (; line < end; line++) {
		if (*line == ' ')
			col++;
		else if (*line == '\t')
			col = (col / 8 + 1) * 8;
		else if (*line == '\f')
			col = 0;
		else
			return *line == '\n' || *line == '#' || *line == '\r' ? -1 : col;
	}
	return -1;
}

/* If LINE is `def NAME`, `async def NAME` or `class NAME`, copies NAME
 * and returns 'd' or 'c'; else 0. */
static int statement_name(const char *line, const char *end, char *name, size_t size)
{
	const char *p = line;
	size_t n = 0;
	int kind;

	while (p < end && (*p == ' ' || *p == '\t' || *p == '\f'))
		p++;
	if (end - p > 6 && strncmp(p, "async", 5) == 0 && (p[5] == ' ' || p[5] == '\t')) {
		p += 5;
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
	}
	if (end - p > 4 && strncmp(p, "def", 3) == 0 && (p[3] == ' ' || p[3] == '\t'))
		kind = 'd', p += 3;
	else if (end - p > 6 && strncmp(p, "class", 5) == 0 && (p[5] == ' ' || p[5] == '\t'))
		kind = 'c', p += 5;
	else
		return 0;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	while (p < end && (isalnum((unsigned char)*p) || *p == '_' || (unsigned char)*p >= 0x80) &&
	       n + 1 < size)
		name[n++] = *p++;
	name[n] = '\0';
	return n ? kind : 0;
}

void python_source_qualname(const char *src, size_t len, int firstlineno, const char *name,
			    char *out, size_t outlen)
{
	size_t n_lines = 1, at;
	const char **lines;
	char *start, prefix[1024] = "", part[256], tmp[1024];
	int def = -1, indent;

	snprintf(out, outlen, "%s", name);
	for (size_t i = 0; i < len; i++)
		n_lines += src[i] == '\n';
	if (firstlineno < 1 || (size_t)firstlineno > n_lines)
		return;
	lines = calloc(n_lines + 1, sizeof(*lines));
	start = calloc(n_lines, 1);
	if (!lines || !start)
		goto out;
	at = 0;
	lines[0] = src;
	for (size_t i = 0; i < len; i++)
		if (src[i] == '\n')
			lines[++at] = src + i + 1;
	lines[n_lines] = src + len;
	logical_lines(src, len, start, n_lines);
	/* the def itself: at firstlineno, or after its decorators */
	for (int l = firstlineno - 1; l < (int)n_lines && l < firstlineno + 64; l++) {
		int kind = start[l] ? statement_name(lines[l], lines[l + 1], part, sizeof(part)) : 0;

		if (kind && strcmp(part, name) == 0) {
			def = l;
			break;
		}
		if (kind || (start[l] && indent_of(lines[l], lines[l + 1]) >= 0 &&
			     *(lines[l] + strspn(lines[l], " \t\f")) != '@'))
			break;
	}
	if (def < 0 && name[0] != '<')
		goto out;
	if (def < 0)
		def = firstlineno - 1; /* a lambda or comprehension: where it is */
	indent = indent_of(lines[def], lines[def + 1]);
	for (int l = def - 1; l >= 0 && indent > 0; l--) {
		int in, kind;

		if (!start[l] || (in = indent_of(lines[l], lines[l + 1])) < 0 || in >= indent)
			continue;
		indent = in;
		kind = statement_name(lines[l], lines[l + 1], part, sizeof(part));
		if (!kind)
			continue;
		snprintf(tmp, sizeof(tmp), "%s%s.%s", part, kind == 'd' ? ".<locals>" : "", prefix);
		snprintf(prefix, sizeof(prefix), "%s", tmp);
	}
	snprintf(out, outlen, "%s%s", prefix, name);
out:
	free(lines);
	free(start);
}

/* ---- reading code objects ---------------------------------------------------- */

/* A table keyed by (pid, address). */
struct slot {
	uint64_t pid, addr;
	void *value;
};

struct table {
	struct slot *slots;
	size_t cap, n;
	void (*free_value)(void *);
};

static uint64_t mix(uint64_t pid, uint64_t addr)
{
	uint64_t h = addr * 0x9e3779b97f4a7c15ull ^ pid * 0xc2b2ae3d27d4eb4full;

	return h ^ (h >> 29);
}

static bool table_grow(struct table *t)
{
	struct table bigger = { .cap = t->cap ? t->cap * 2 : 256, .free_value = t->free_value };

	bigger.slots = calloc(bigger.cap, sizeof(*bigger.slots));
	if (!bigger.slots)
		return false;
	for (size_t i = 0; i < t->cap; i++) {
		struct slot *s = &t->slots[i];

		if (!s->value)
			continue;
		for (size_t j = mix(s->pid, s->addr) & (bigger.cap - 1);; j = (j + 1) & (bigger.cap - 1)) {
			if (!bigger.slots[j].value) {
				bigger.slots[j] = *s;
				break;
			}
		}
	}
	free(t->slots);
	bigger.n = t->n;
	*t = bigger;
	return true;
}

/* The slot of (PID, ADDR): its value is NULL when it is new. NULL when
 * out of memory. */
static struct slot *table_slot(struct table *t, uint64_t pid, uint64_t addr)
{
	if ((t->n + 1) * 2 > t->cap && !table_grow(t))
		return NULL;
	for (size_t j = mix(pid, addr) & (t->cap - 1);; j = (j + 1) & (t->cap - 1)) {
		struct slot *s = &t->slots[j];

		if (!s->value) {
			s->pid = pid;
			s->addr = addr;
			return s;
		}
		if (s->pid == pid && s->addr == addr)
			return s;
	}
}

static void table_set(struct table *t, struct slot *s, void *value)
{
	if (!s->value && value)
		t->n++;
	s->value = value;
}

/* Drops PID's entries (all when PID is 0). */
static void table_forget(struct table *t, pid_t pid)
{
	struct table kept = { .free_value = t->free_value };

	for (size_t i = 0; i < t->cap; i++) {
		struct slot *s = &t->slots[i], *k;

		if (!s->value)
			continue;
		if (!pid || s->pid == (uint64_t)pid) {
			t->free_value(s->value);
			continue;
		}
		k = table_slot(&kept, s->pid, s->addr);
		if (k)
			table_set(&kept, k, s->value);
		else
			t->free_value(s->value);
	}
	free(t->slots);
	*t = kept;
}

/* What a code object holds beyond the names its frames carry: its
 * line table. Checked against each frame by the fields the frame read
 * at the sample (a code object freed and another made at its address
 * is told apart). */
struct code_entry {
	int firstlineno;
	uint64_t filename, name; /* the str objects it held */
	bool bad;
	uint8_t *lines;
	size_t n_lines;
	char *source_qualname; /* 3.8-3.10, found once */
};

static void free_code(void *v)
{
	struct code_entry *e = v;

	free(e->lines);
	free(e->source_qualname);
	free(e);
}

struct source_file {
	char *text;
	size_t len;
};

static void free_source(void *v)
{
	struct source_file *f = v;

	free(f->text);
	free(f);
}

struct python_names {
	struct table code, strings, sources;
	char qualname[1024];
	uint64_t code_reads;
};

struct python_names *python_names_new(void)
{
	struct python_names *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->code.free_value = free_code;
	n->strings.free_value = free;
	n->sources.free_value = free_source;
	return n;
}

void python_names_forget(struct python_names *n, pid_t pid)
{
	if (!n)
		return;
	table_forget(&n->code, pid);
	table_forget(&n->strings, pid);
	table_forget(&n->sources, pid);
}

void python_names_free(struct python_names *n)
{
	if (!n)
		return;
	python_names_forget(n, 0);
	free(n);
}

/* Appends code point CP as UTF-8. */
static size_t put_utf8(char *out, uint32_t cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 63));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | (cp >> 6 & 63));
		out[2] = (char)(0x80 | (cp & 63));
		return 3;
	}
	out[0] = (char)(0xf0 | cp >> 18);
	out[1] = (char)(0x80 | (cp >> 12 & 63));
	out[2] = (char)(0x80 | (cp >> 6 & 63));
	out[3] = (char)(0x80 | (cp & 63));
	return 4;
}

/* Names and file names longer than this are cut. */
#define STR_MAX 1024

/* A str object of PID as UTF-8 (compact strings only: every name and
 * file name a code object holds is one). NULL when unreadable. */
/* A str's LENGTH code points (KIND bytes each) as UTF-8 into OUT. A
 * lone surrogate (a file name decoded with surrogateescape) becomes
 * U+FFFD. Returns -1 when one is no character at all (past U+10FFFF, or
 * not ASCII in a str that says it is): the memory is no str any more, as
 * when a module's code was freed between a sample and this read. */
static int decode_str(const uint8_t *data, int64_t length, uint32_t kind, bool ascii, char *out)
{
	size_t at = 0;

	for (int64_t i = 0; i < length; i++) {
		uint32_t cp = kind == 1 ? data[i] : kind == 2 ? ((const uint16_t *)data)[i]
							    : ((const uint32_t *)data)[i];

		if (cp > 0x10ffff || (ascii && cp >= 0x80))
			return -1;
		at += put_utf8(out + at, cp >= 0xd800 && cp <= 0xdfff ? 0xfffd : cp);
	}
	out[at] = '\0';
	return 0;
}

static char *read_str(pid_t pid, uint64_t addr, const struct code_layout *c)
{
	uint8_t head[80], *data;
	int64_t length;
	uint32_t state, kind;
	char *out;

	if (c->compact_size > sizeof(head) ||
	    python_read_memory(pid, head, c->ascii_size, addr) != 0)
		return NULL;
	memcpy(&length, head + 16, sizeof(length));
	memcpy(&state, head + 32, sizeof(state));
	kind = state >> 2 & 7;
	if (!(state >> 5 & 1) || length < 0 || (kind != 1 && kind != 2 && kind != 4))
		return NULL;
	if (length > STR_MAX)
		length = STR_MAX;
	data = malloc((size_t)length * kind + 1);
	out = malloc((size_t)length * 4 + 1);
	if (!data || !out ||
	    python_read_memory(pid, data, (size_t)length * kind,
			       addr + (state >> 6 & 1 ? c->ascii_size : c->compact_size)) != 0 ||
	    decode_str(data, length, kind, state >> 6 & 1, out) != 0) {
		free(data);
		free(out);
		return NULL;
	}
	free(data);
	return out;
}

/* A bytes object's contents (a line table). */
#define LINES_MAX (1u << 20)

static uint8_t *read_bytes(pid_t pid, uint64_t addr, size_t *len)
{
	int64_t size;
	uint8_t *out;

	if (python_read_memory(pid, &size, sizeof(size), addr + 16) != 0 || size < 0 ||
	    (uint64_t)size > LINES_MAX)
		return NULL;
	out = malloc((size_t)size + 1);
	if (out && python_read_memory(pid, out, (size_t)size, addr + 32) != 0) {
		free(out);
		return NULL;
	}
	*len = (size_t)size;
	return out;
}

static uint64_t word_at(const uint8_t *b, uint32_t off)
{
	uint64_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

/* Reads the code object at ADDR of P. */
static struct code_entry *read_code(const struct python_proc *p, uint64_t addr)
{
	const struct code_layout *c = &version_of(p->major, p->minor)->code;
	struct code_entry *e = calloc(1, sizeof(*e));
	uint8_t head[256];
	int32_t first;

	if (!e)
		return NULL;
	e->bad = true;
	if (c->header > sizeof(head) || python_read_memory(p->pid, head, c->header, addr) != 0)
		return e;
	if (p->code_type && word_at(head, 8) != p->code_type)
		return e; /* not a code object (any more) */
	memcpy(&first, head + c->firstlineno, sizeof(first));
	e->firstlineno = first;
	e->filename = word_at(head, c->filename);
	e->name = word_at(head, c->qualname != PY_NO_FIELD ? c->qualname : c->name);
	e->lines = read_bytes(p->pid, word_at(head, c->linetable), &e->n_lines);
	e->bad = false;
	return e;
}

static bool code_is(const struct code_entry *e, const struct py_frame_ref *r)
{
	return !e->bad && e->firstlineno == r->firstlineno && e->filename == r->filename &&
	       e->name == r->name;
}

/* The str at ADDR of P, read once. */
static const char *str_at(struct python_names *n, const struct python_proc *p, uint64_t addr)
{
	struct slot *s;

	if (!addr || !(s = table_slot(&n->strings, (uint64_t)p->pid, addr)))
		return NULL;
	if (!s->value)
		table_set(&n->strings, s, read_str(p->pid, addr, &version_of(p->major, p->minor)->code));
	return s->value;
}

const char *python_str(struct python_names *n, const struct python_proc *p, uint64_t addr)
{
	return str_at(n, p, addr);
}

uint64_t python_names_code_reads(const struct python_names *n)
{
	return n->code_reads;
}

/* Reads the str at ADDR of P anew when a text is cached for it: that may
 * be the text of a string freed since, whose memory now holds another
 * (a module's code and names are freed once it has run). One that
 * cannot be read now is cached as "", which names nothing. */
static void str_reread(struct python_names *n, const struct python_proc *p, uint64_t addr)
{
	struct slot *s = addr ? table_slot(&n->strings, (uint64_t)p->pid, addr) : NULL;
	char *text;

	if (!s || !s->value)
		return; /* not read yet: str_at() reads it */
	text = read_str(p->pid, addr, &version_of(p->major, p->minor)->code);
	if (!text)
		text = strdup("");
	if (!text)
		return; /* out of memory */
	free(s->value);
	s->value = text;
}

#define SOURCE_MAX (64u << 20) /* a larger source goes unread */

/* The source of FILE as P sees it (its root, its working directory for a
 * relative name); NULL when it cannot be read. */
static struct source_file *source_of(struct python_names *n, const struct python_proc *p,
				     const char *file)
{
	uint64_t key = 1469598103934665603ull;
	struct source_file *f;
	struct slot *s;
	int fd;

	for (const char *c = file; *c; c++)
		key = (key ^ (uint8_t)*c) * 1099511628211ull;
	s = table_slot(&n->sources, (uint64_t)p->pid, key);
	if (!s)
		return NULL;
	if (s->value)
		return s->value;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	fd = target_open_file((pid_t)p->pid, file);
	if (fd >= 0) {
		f->text = whole_file_read(fd, SOURCE_MAX, &f->len);
		close(fd);
	}
	table_set(&n->sources, s, f);
	return f;
}

/* 3.8-3.10: a generator's own qualified name, else from the source. */
static const char *qualname_of(struct python_names *n, const struct python_proc *p,
			       struct code_entry *e, const struct py_frame_ref *r, const char *name,
			       const char *file)
{
	const char *q = str_at(n, p, r->qualname);
	struct source_file *src;

	if (q)
		return q;
	if (e && e->source_qualname)
		return e->source_qualname;
	src = source_of(n, p, file);
	if (src && src->text)
		python_source_qualname(src->text, src->len, r->firstlineno, name, n->qualname,
				       sizeof(n->qualname));
	else
		snprintf(n->qualname, sizeof(n->qualname), "%s", name);
	if (e)
		e->source_qualname = strdup(n->qualname);
	return n->qualname;
}

/* The code entry of R, read again when the one cached is not R's code
 * object; NULL when the code object is not there any more (freed since
 * the sample, its memory perhaps another's). */
static struct code_entry *code_of(struct python_names *n, const struct python_proc *p,
				  const struct py_frame_ref *r)
{
	struct slot *s = table_slot(&n->code, (uint64_t)p->pid, r->code);
	struct code_entry *e;

	if (!s)
		return NULL;
	e = s->value;
	if (e && code_is(e, r))
		return e;
	e = read_code(p, r->code);
	if (!e)
		return NULL;
	n->code_reads++;
	if (s->value)
		free_code(s->value);
	table_set(&n->code, s, e);
	if (!code_is(e, r))
		return NULL;
	/* alive, and holding its names: their texts are theirs now */
	str_reread(n, p, r->name);
	str_reread(n, p, r->filename);
	return e;
}

int python_frame_name(struct python_names *n, const struct python_proc *p,
		      const struct py_frame_ref *r, struct python_frame_text *out)
{
	const struct version_layout *v = version_of(p->major, p->minor);
	/* A code object freed before it was first named (a module's, once
	 * it has run) is not named: the texts at its names' addresses may be
	 * other strings' by now, and a wrong name is worse than none. */
	struct code_entry *e = v ? code_of(n, p, r) : NULL;
	const char *name = e ? str_at(n, p, r->name) : NULL;
	const char *file = name && *name ? str_at(n, p, r->filename) : NULL;
	uint32_t off = r->instr;

	if (!file || !*file)
		return -1;
	out->file = file;
	out->qualname = v->code.qualname != PY_NO_FIELD ? name : qualname_of(n, p, e, r, name, file);
	if ((int32_t)off < 0)
		off = 0; /* a frame not started yet */
	switch (v->code.lines) {
	case LINES_LNOTAB:
		out->line = python_line_lnotab(e->lines, e->n_lines, e->firstlineno, off);
		break;
	case LINES_310:
		out->line = python_line_310(e->lines, e->n_lines, e->firstlineno, off * 2);
		break;
	default:
		out->line = python_line_311(e->lines, e->n_lines, e->firstlineno, off);
	}
	return 0;
}
