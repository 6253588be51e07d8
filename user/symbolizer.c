// SPDX-License-Identifier: MIT
/* Native symbolisation of sampled addresses; see symbolizer.h. */
#include "symbolizer.h"
#include "array_grow.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "elf_symbols.h"
#include "profile/capture.h"
#include "wall_clock.h"

/* A process's mappings are read again on a miss at most this often: an
 * address outside every mapping is often a broken frame-pointer chain,
 * not a library loaded since. An address in unnamed anonymous memory
 * counts as a miss too: a library loaded since may sit where such memory
 * was (a freed allocator arena) when the mappings were read, and the
 * frame would stay unnamed, and cut a stack there, to the end. */
#define MAPS_REREAD_NS 250000000ull

struct func_sym {
	uint64_t start, size; /* ELF virtual addresses */
	const char *name;
	int rank; /* which of two symbols at one address names it */
};

struct load_seg {
	uint64_t vaddr, memsz, offset;
};

/* One ELF file's functions. */
struct elf_funcs {
	uint64_t dev, ino;
	struct func_sym *syms;
	size_t n, cap;
	struct load_seg *segs;
	size_t n_segs;
	char **pools; /* the names, copied */
	size_t n_pools, cap_pools, pool_used;
};

struct proc_entry {
	pid_t pid;
	struct proc_map *maps;
	int n;
	struct elf_funcs **files; /* per mapping, NULL until needed */
	uint64_t read_ns;
};

struct kernel_sym {
	uint64_t addr;
	size_t name_at; /* in ksym_names */
};

struct symbolizer {
	struct elf_funcs **files;
	size_t n_files, cap_files;
	struct proc_entry *procs;
	size_t n_procs, cap_procs;
	struct kernel_sym *ksyms;
	char *ksym_names; /* one text, each name NUL-ended */
	size_t n_ksyms;
	bool ksyms_read;
};

/* ---- /proc/PID/maps ---------------------------------------------------- */

int proc_maps_read(pid_t pid, struct proc_map **out)
{
	char path[64], line[4352];
	struct proc_map *maps = NULL;
	size_t n = 0, cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, off, ino;
		unsigned int major, minor;
		int name_at = 0;
		char *name, *nl, perms[8] = "";

		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off, &major,
			   &minor, &ino, &name_at) < 7)
			continue;
		if (!array_grow((void **)&maps, &cap, n + 1, sizeof(*maps)))
			break;
		name = name_at ? line + name_at : line + strlen(line);
		if ((nl = strchr(name, '\n')))
			*nl = '\0';
		maps[n] = (struct proc_map){ .start = start, .end = end, .offset = off,
					     .dev = makedev(major, minor), .ino = ino,
					     .readable = perms[0] == 'r', .executable = perms[2] == 'x',
					     .path = strdup(name) };
		if (!maps[n].path)
			break;
		n++;
	}
	fclose(f);
	*out = maps;
	return (int)n;
}

void proc_maps_free(struct proc_map *maps, int n)
{
	for (int i = 0; i < n; i++)
		free(maps[i].path);
	free(maps);
}

void proc_map_file(pid_t pid, const struct proc_map *map, char *buf, size_t size)
{
	snprintf(buf, size, "/proc/%d/map_files/%llx-%llx", (int)pid, (unsigned long long)map->start,
		 (unsigned long long)map->end);
	if (access(buf, R_OK) == 0)
		return;
	snprintf(buf, size, "/proc/%d/root%s", (int)pid, map->path);
}

/* ---- one file's functions ------------------------------------------------- */

#define POOL_BYTES 65536

/* S copied into F's string pools (blocks of POOL_BYTES, or one of its
 * own for a longer name). */
static const char *pool_copy(struct elf_funcs *f, const char *s)
{
	size_t len = strlen(s) + 1;
	char **pools, *block;

	if (f->n_pools && f->pool_used + len <= POOL_BYTES) {
		block = f->pools[f->n_pools - 1] + f->pool_used;
		f->pool_used += len;
		return memcpy(block, s, len);
	}
	if (!array_grow((void **)&f->pools, &f->cap_pools, f->n_pools + 1, sizeof(*pools)))
		return NULL;
	block = malloc(len > POOL_BYTES ? len : POOL_BYTES);
	if (!block)
		return NULL;
	f->pools[f->n_pools++] = block;
	f->pool_used = len > POOL_BYTES ? POOL_BYTES : len;
	return memcpy(block, s, len);
}

struct collect {
	struct elf_funcs *f;
	int rank;
};

static void collect_function(const struct elf_sym *sym, void *ctx)
{
	struct collect *c = ctx;
	struct elf_funcs *f = c->f;
	const char *name;

	if ((sym->type != STT_FUNC && sym->type != STT_GNU_IFUNC) || !sym->value)
		return;
	if (!array_grow((void **)&f->syms, &f->cap, f->n + 1, sizeof(*f->syms)))
		return;
	name = pool_copy(f, sym->name);
	if (!name)
		return;
	/* at one address: a global name over a local one, then the table
	 * read first (.symtab's full names over .dynsym's) */
	f->syms[f->n++] = (struct func_sym){ .start = sym->value, .size = sym->size, .name = name,
					     .rank = c->rank * 2 + (sym->bind == STB_LOCAL) };
}

static int by_start(const void *a, const void *b)
{
	const struct func_sym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	return strcmp(x->name, y->name);
}

/* Sorted, one symbol per address. */
static void sort_functions(struct elf_funcs *f)
{
	size_t kept = 0;

	qsort(f->syms, f->n, sizeof(*f->syms), by_start);
	for (size_t i = 0; i < f->n; i++) {
		if (kept && f->syms[kept - 1].start == f->syms[i].start) {
			if (!f->syms[kept - 1].size)
				f->syms[kept - 1].size = f->syms[i].size;
			continue;
		}
		f->syms[kept++] = f->syms[i];
	}
	f->n = kept;
}

static void read_segments(struct elf_funcs *f, const struct elf_image *img)
{
	size_t n;
	const struct elf_segment *segs = elf_image_segments(img, &n);

	f->segs = calloc(n ? n : 1, sizeof(*f->segs));
	if (!f->segs)
		return;
	for (size_t i = 0; i < n; i++)
		f->segs[f->n_segs++] = (struct load_seg){ segs[i].vaddr, segs[i].memsz, segs[i].offset };
}

/* Reads PATH's functions. A file that cannot be read gives an empty
 * table: its addresses stay file+offset. */
static struct elf_funcs *load_file(const char *path, uint64_t dev, uint64_t ino)
{
	struct elf_funcs *f = calloc(1, sizeof(*f));
	struct elf_image *img = NULL, *mini = NULL;
	char err[256];

	if (!f)
		return NULL;
	f->dev = dev;
	f->ino = ino;
	if (elf_image_open(path, &img, err, sizeof(err)) != 0)
		return f;
	read_segments(f, img);
	elf_image_symbols(img, ELF_SYMTAB, collect_function, &(struct collect){ f, 0 });
	elf_image_symbols(img, ELF_DYNSYM, collect_function, &(struct collect){ f, 2 });
	if (elf_image_open_debugdata(img, &mini, err, sizeof(err)) == 0) {
		elf_image_symbols(mini, ELF_SYMTAB, collect_function, &(struct collect){ f, 1 });
		elf_image_close(mini);
	}
	elf_image_close(img);
	sort_functions(f);
	return f;
}

static void free_file(struct elf_funcs *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n_pools; i++)
		free(f->pools[i]);
	free(f->pools);
	free(f->syms);
	free(f->segs);
	free(f);
}

/* The ELF address of file offset OFF (through the PT_LOAD holding it). */
static bool offset_to_vaddr(const struct elf_funcs *f, uint64_t off, uint64_t *vaddr)
{
	for (size_t i = 0; i < f->n_segs; i++) {
		const struct load_seg *s = &f->segs[i];

		if (off >= s->offset && off < s->offset + s->memsz) {
			*vaddr = off - s->offset + s->vaddr;
			return true;
		}
	}
	return false;
}

static bool vaddr_to_offset(const struct elf_funcs *f, uint64_t vaddr, uint64_t *off)
{
	for (size_t i = 0; i < f->n_segs; i++) {
		const struct load_seg *s = &f->segs[i];

		if (vaddr >= s->vaddr && vaddr < s->vaddr + s->memsz) {
			*off = vaddr - s->vaddr + s->offset;
			return true;
		}
	}
	return false;
}

/* Assembly without a size still names the first bytes after it. */
#define UNSIZED_REACH 4096

static const struct func_sym *find_function(const struct elf_funcs *f, uint64_t vaddr)
{
	size_t lo = 0, hi = f->n;
	const struct func_sym *s;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->syms[mid].start <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	s = &f->syms[lo - 1];
	if (s->size ? vaddr < s->start + s->size : vaddr - s->start < UNSIZED_REACH)
		return s;
	return NULL;
}

static struct elf_funcs *file_funcs(struct symbolizer *s, pid_t pid, const struct proc_map *map)
{
	char path[4352];
	struct elf_funcs *f;

	for (size_t i = 0; i < s->n_files; i++)
		if (s->files[i]->dev == map->dev && s->files[i]->ino == map->ino)
			return s->files[i];
	if (!array_grow((void **)&s->files, &s->cap_files, s->n_files + 1, sizeof(*s->files)))
		return NULL;
	proc_map_file(pid, map, path, sizeof(path));
	f = load_file(path, map->dev, map->ino);
	if (f)
		s->files[s->n_files++] = f;
	return f;
}

/* ---- processes ------------------------------------------------------------ */

static void drop_maps(struct proc_entry *p)
{
	proc_maps_free(p->maps, p->n);
	free(p->files);
	p->maps = NULL;
	p->files = NULL;
	p->n = 0;
}

static void read_maps(struct proc_entry *p)
{
	struct proc_map *maps;
	int n = proc_maps_read(p->pid, &maps);

	p->read_ns = monotonic_ns();
	if (n < 0)
		return;
	drop_maps(p);
	p->files = calloc(n ? (size_t)n : 1, sizeof(*p->files));
	if (!p->files) {
		proc_maps_free(maps, n);
		return;
	}
	p->maps = maps;
	p->n = n;
}

static struct proc_entry *proc_of(struct symbolizer *s, pid_t pid)
{
	for (size_t i = 0; i < s->n_procs; i++)
		if (s->procs[i].pid == pid)
			return &s->procs[i];
	if (!array_grow((void **)&s->procs, &s->cap_procs, s->n_procs + 1, sizeof(*s->procs)))
		return NULL;
	s->procs[s->n_procs] = (struct proc_entry){ .pid = pid };
	read_maps(&s->procs[s->n_procs]);
	return &s->procs[s->n_procs++];
}

static int map_index(const struct proc_entry *p, uint64_t addr)
{
	int lo = 0, hi = p->n;

	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;

		if (p->maps[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < p->n && p->maps[lo].start <= addr ? lo : -1;
}

/* Whether M maps a file (not anonymous memory, the stack, [vdso]...). */
static bool in_file(const struct proc_map *m)
{
	return m->path[0] == '/' && m->ino;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

void symbolizer_user(struct symbolizer *s, pid_t pid, uint64_t addr, bool return_address,
		     struct native_frame *out)
{
	struct proc_entry *p = proc_of(s, pid);
	uint64_t look = return_address && addr ? addr - 1 : addr, vaddr;
	const struct proc_map *m;
	const struct func_sym *fn;
	struct elf_funcs *f;
	int i;

	memset(out, 0, sizeof(*out));
	out->addr = addr;
	snprintf(out->module, sizeof(out->module), "[unknown]");
	if (!p)
		return;
	i = map_index(p, look);
	if ((i < 0 || !p->maps[i].path[0]) && monotonic_ns() - p->read_ns >= MAPS_REREAD_NS) {
		read_maps(p);
		i = map_index(p, look);
	}
	if (i < 0)
		return;
	m = &p->maps[i];
	out->mapped = true;
	out->executable = m->executable;
	snprintf(out->module, sizeof(out->module), "%s", m->path[0] ? base_name(m->path) : "[anon]");
	if (!in_file(m))
		return;
	out->in_file = true;
	out->dev = m->dev;
	out->ino = m->ino;
	out->file_offset = addr - m->start + m->offset;
	if (!p->files[i])
		p->files[i] = file_funcs(s, pid, m);
	f = p->files[i];
	if (!f || !offset_to_vaddr(f, look - m->start + m->offset, &vaddr))
		return;
	fn = find_function(f, vaddr);
	if (!fn)
		return;
	out->function = fn->name;
	if (!vaddr_to_offset(f, fn->start, &out->function_offset))
		out->function_offset = fn->start;
}

void symbolizer_forget(struct symbolizer *s, pid_t pid)
{
	for (size_t i = 0; i < s->n_procs; i++) {
		if (s->procs[i].pid != pid)
			continue;
		drop_maps(&s->procs[i]);
		s->procs[i] = s->procs[--s->n_procs];
		return;
	}
}

size_t symbolizer_format(const struct native_frame *f, char *buf, size_t size)
{
	if (f->function)
		return profile_frame_native(buf, size, f->function);
	return profile_frame_unresolved(buf, size, f->module, f->in_file ? f->file_offset : f->addr);
}

/* ---- the kernel ----------------------------------------------------------- */

static int by_addr(const void *a, const void *b)
{
	const struct kernel_sym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* /proc/kallsyms in one buffer: it reports size 0, so it is read to its
 * end in growing chunks. NULL (*LEN 0) when it cannot be read whole: a
 * table cut short would name every address past the cut after the last
 * symbol before it. */
static char *read_proc_text(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t cap = 0, n = 0;
	char *buf = NULL;
	ssize_t got = 1;

	*len = 0;
	if (fd < 0)
		return NULL;
	while (got > 0) {
		if (cap - n < 65536 && !array_grow((void **)&buf, &cap, n + 1 + 65536, 1)) {
			got = -1;
			break;
		}
		do
			got = read(fd, buf + n, cap - n - 1);
		while (got < 0 && errno == EINTR);
		n += got > 0 ? (size_t)got : 0;
	}
	close(fd);
	if (got < 0) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

/* The function symbols of the kernel text, read before the first kernel
 * frame needs one, as the sampler opens: over 100k lines take
 * tens of milliseconds even so (a Cortex-A53 several times that), and a
 * sampler busy reading them is late for a traced process's exec, whose
 * new interpreter the BPF walk must be told. Parsed by hand, every kept
 * name moved to the front of the one buffer that was read: no sscanf()
 * and no allocation per symbol. */
void symbolizer_kernel_text(struct symbolizer *s, char *text, size_t len)
{
	size_t cap = 0, packed = 0;
	char *line = text, *names;

	s->ksyms_read = true;
	while (line && line < text + len) {
		char *end = strchr(line, '\n'), *name, *name_end, *after;
		unsigned long long addr = strtoull(line, &after, 16);
		/* "ADDRESS TYPE NAME[\t[MODULE]]" */
		char type = after[0] == ' ' && after[1] && after[2] == ' ' ? after[1] : 0;

		end = end ? end : text + len;
		name = after + 3;
		name_end = name < end ? name + strcspn(name, " \t\n") : name;
		if (after == line || !addr || name_end == name ||
		    (type != 't' && type != 'T' && type != 'w' && type != 'W')) {
			line = end + 1;
			continue;
		}
		if (!array_grow((void **)&s->ksyms, &cap, s->n_ksyms + 1, sizeof(*s->ksyms))) {
			packed = 0; /* a part would name what it lacks after what it has */
			break;
		}
		s->ksyms[s->n_ksyms].addr = addr;
		s->ksyms[s->n_ksyms++].name_at = packed;
		memmove(text + packed, name, (size_t)(name_end - name));
		packed += (size_t)(name_end - name);
		text[packed++] = '\0';
		line = end + 1;
	}
	if (!packed) {
		free(text);
		free(s->ksyms);
		s->ksyms = NULL;
		s->n_ksyms = 0;
		return;
	}
	names = realloc(text, packed);
	s->ksym_names = names ? names : text;
	qsort(s->ksyms, s->n_ksyms, sizeof(*s->ksyms), by_addr);
}

void symbolizer_load_kernel(struct symbolizer *s)
{
	size_t len;
	char *text;

	if (s->ksyms_read)
		return;
	text = read_proc_text("/proc/kallsyms", &len);
	symbolizer_kernel_text(s, text, len);
}

const char *symbolizer_kernel(struct symbolizer *s, uint64_t addr)
{
	size_t lo = 0, hi;

	symbolizer_load_kernel(s);
	hi = s->n_ksyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->ksyms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? s->ksym_names + s->ksyms[lo - 1].name_at : NULL;
}

/* ---- life cycle ----------------------------------------------------------- */

struct symbolizer *symbolizer_new(void)
{
	return calloc(1, sizeof(struct symbolizer));
}

void symbolizer_free(struct symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_files; i++)
		free_file(s->files[i]);
	free(s->files);
	for (size_t i = 0; i < s->n_procs; i++)
		drop_maps(&s->procs[i]);
	free(s->procs);
	free(s->ksym_names);
	free(s->ksyms);
	free(s);
}
