// SPDX-License-Identifier: MIT
/* ELF files read with libelf: symbols, dynamic entries, and the image
 * view (segments, relocated pointers, function starts, MiniDebugInfo)
 * that finds the hook points of a stripped interpreter. */
#include "elf_symbols.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <lzma.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef SHT_RELR
#define SHT_RELR 19
#endif

struct elf_file {
	int fd; /* -1 for an ELF image in memory */
	Elf *elf;
};

/* Opens PATH for libelf. The file may be the target's (a container's, or
 * one it can rewrite): a FIFO put in its place must not block us (it is
 * refused by type; for a regular file O_NONBLOCK changes nothing). It is
 * mapped, not read: the image view works on the whole file's bytes, and
 * reading a libpython of 25 MB for each question doubled the time and
 * memory of finding its hook points. */
static int elf_file_open(struct elf_file *f, const char *path, char *err, size_t errlen)
{
	struct stat st;

	f->elf = NULL;
	if (elf_version(EV_CURRENT) == EV_NONE) {
		snprintf(err, errlen, "libelf initialisation failed");
		return -EINVAL;
	}
	f->fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (f->fd < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(e));
		return -e;
	}
	if (fstat(f->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s is not a regular file", path);
		close(f->fd);
		return -EINVAL;
	}
	f->elf = elf_begin(f->fd, ELF_C_READ_MMAP, NULL);
	if (!f->elf || elf_kind(f->elf) != ELF_K_ELF) {
		snprintf(err, errlen, "%s is not an ELF file", path);
		if (f->elf)
			elf_end(f->elf);
		close(f->fd);
		return -ENOEXEC;
	}
	return 0;
}

static void elf_file_close(struct elf_file *f)
{
	elf_end(f->elf);
	if (f->fd >= 0)
		close(f->fd);
}

/* ---- the image --------------------------------------------------------- */

struct elf_image {
	struct elf_file f;
	char *memory;             /* the bytes of an image opened in memory */
	const unsigned char *raw; /* the whole file */
	size_t raw_size;
	GElf_Ehdr ehdr;
	struct elf_segment *segs;
	size_t n_segs;
	struct elf_pointer *ptrs; /* read on first use */
	size_t n_ptrs, cap_ptrs;
	bool ptrs_read;
};

uint64_t elf_le64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

uint32_t elf_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The PT_LOAD segments; a truncated file keeps the part that is there. */
static int read_segments(struct elf_image *img)
{
	size_t n;

	if (elf_getphdrnum(img->f.elf, &n) != 0)
		return -1;
	img->segs = calloc(n ? n : 1, sizeof(*img->segs));
	if (!img->segs)
		return -1;
	for (size_t i = 0; i < n; i++) {
		struct elf_segment *s = &img->segs[img->n_segs];
		GElf_Phdr ph;

		if (!gelf_getphdr(img->f.elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		s->vaddr = ph.p_vaddr;
		s->memsz = ph.p_memsz;
		s->offset = ph.p_offset;
		s->exec = ph.p_flags & PF_X;
		if (ph.p_offset < img->raw_size) {
			s->data = img->raw + ph.p_offset;
			s->filesz = ph.p_filesz < img->raw_size - ph.p_offset ?
					    (size_t)ph.p_filesz : img->raw_size - ph.p_offset;
		}
		img->n_segs++;
	}
	return 0;
}

/* Takes over F (and MEMORY, which may be NULL) into a new image. */
static int image_from_file(struct elf_file *f, char *memory, const char *name,
			   struct elf_image **out, char *err, size_t errlen)
{
	struct elf_image *img = calloc(1, sizeof(*img));

	*out = NULL;
	if (!img)
		goto fail;
	img->f = *f;
	img->memory = memory;
	img->raw = (const unsigned char *)elf_rawfile(f->elf, &img->raw_size);
	if (!img->raw || !gelf_getehdr(f->elf, &img->ehdr) || read_segments(img) != 0) {
		snprintf(err, errlen, "%s: malformed ELF file (%s)", name, elf_errmsg(-1));
		goto fail;
	}
	*out = img;
	return 0;
fail:
	if (!img) {
		snprintf(err, errlen, "%s: out of memory", name);
		elf_file_close(f);
		free(memory);
	}
	elf_image_close(img);
	return -ENOEXEC;
}

int elf_image_open(const char *path, struct elf_image **out, char *err, size_t errlen)
{
	struct elf_file f;
	int ret = elf_file_open(&f, path, err, errlen);

	*out = NULL;
	return ret ? ret : image_from_file(&f, NULL, path, out, err, errlen);
}

void elf_image_close(struct elf_image *img)
{
	if (!img)
		return;
	elf_file_close(&img->f);
	free(img->memory);
	free(img->segs);
	free(img->ptrs);
	free(img);
}

int elf_image_machine(const struct elf_image *img)
{
	return img->ehdr.e_machine;
}

int elf_image_type(const struct elf_image *img)
{
	return img->ehdr.e_type;
}

bool elf_image_lp64(const struct elf_image *img)
{
	return img->ehdr.e_ident[EI_CLASS] == ELFCLASS64 && img->ehdr.e_ident[EI_DATA] == ELFDATA2LSB;
}

/* The section called NAME, or NULL. */
static Elf_Scn *section_named(const struct elf_image *img, const char *name, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(img->f.elf, &shstrndx) != 0)
		return NULL;
	while ((scn = elf_nextscn(img->f.elf, scn))) {
		const char *s;

		if (!gelf_getshdr(scn, sh))
			continue;
		s = elf_strptr(img->f.elf, shstrndx, sh->sh_name);
		if (s && strcmp(s, name) == 0)
			return scn;
	}
	return NULL;
}

bool elf_image_has_section(const struct elf_image *img, const char *name)
{
	GElf_Shdr sh;

	return section_named(img, name, &sh) != NULL;
}

static Elf_Scn *table_section(const struct elf_image *img, enum elf_symbol_table table,
			      GElf_Shdr *sh)
{
	Elf64_Word want = table == ELF_SYMTAB ? SHT_SYMTAB : SHT_DYNSYM;
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(img->f.elf, scn)))
		if (gelf_getshdr(scn, sh) && sh->sh_type == want)
			return scn;
	return NULL;
}

bool elf_image_has_table(const struct elf_image *img, enum elf_symbol_table table)
{
	GElf_Shdr sh;

	return table_section(img, table, &sh) != NULL;
}

int elf_image_symbols(const struct elf_image *img, enum elf_symbol_table table,
		      void (*fn)(const struct elf_sym *sym, void *ctx), void *ctx)
{
	GElf_Shdr sh;
	Elf_Scn *scn = table_section(img, table, &sh);
	Elf_Data *data;
	size_t n;

	if (!scn)
		return -ENOENT;
	data = elf_getdata(scn, NULL);
	n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
	for (size_t i = 0; data && i < n; i++) {
		struct elf_sym s;
		GElf_Sym sym;

		if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
			continue;
		s.name = elf_strptr(img->f.elf, sh.sh_link, sym.st_name);
		if (!s.name || !s.name[0])
			continue;
		s.value = sym.st_value;
		s.size = sym.st_size;
		s.type = GELF_ST_TYPE(sym.st_info);
		s.bind = GELF_ST_BIND(sym.st_info);
		fn(&s, ctx);
	}
	return 0;
}

const struct elf_segment *elf_image_segments(const struct elf_image *img, size_t *n)
{
	*n = img->n_segs;
	return img->segs;
}

const unsigned char *elf_image_bytes(const struct elf_image *img, uint64_t vaddr, size_t len)
{
	for (size_t i = 0; i < img->n_segs; i++) {
		const struct elf_segment *s = &img->segs[i];

		if (vaddr >= s->vaddr && vaddr - s->vaddr <= s->filesz &&
		    len <= s->filesz - (vaddr - s->vaddr))
			return s->data + (vaddr - s->vaddr);
	}
	return NULL;
}

static const struct elf_segment *code_segment(const struct elf_image *img, uint64_t vaddr)
{
	for (size_t i = 0; i < img->n_segs; i++) {
		const struct elf_segment *s = &img->segs[i];

		if (s->exec && vaddr >= s->vaddr && vaddr - s->vaddr < s->memsz)
			return s;
	}
	return NULL;
}

bool elf_image_in_code(const struct elf_image *img, uint64_t vaddr)
{
	return code_segment(img, vaddr) != NULL;
}

int elf_image_file_offset(const struct elf_image *img, uint64_t vaddr, uint64_t *offset)
{
	const struct elf_segment *s = code_segment(img, vaddr);

	if (!s)
		return -1;
	*offset = vaddr - s->vaddr + s->offset;
	return 0;
}

/* .eh_frame_hdr as GNU ld and lld write it: version 1, eh_frame_ptr
 * pcrel|sdata4, fde_count udata4, a table of datarel|sdata4 pairs
 * (function start, FDE) sorted by function start. */
#define EH_HDR_PTR_ENC 0x1b
#define EH_HDR_COUNT_ENC 0x03
#define EH_HDR_TABLE_ENC 0x3b

int elf_image_function_start(const struct elf_image *img, uint64_t vaddr)
{
	const unsigned char *hdr = NULL, *table;
	uint64_t base = 0;
	size_t n, lo = 0, hi;
	int64_t want;

	for (size_t i = 0; !hdr && elf_getphdrnum(img->f.elf, &n) == 0 && i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(img->f.elf, (int)i, &ph) && ph.p_type == PT_GNU_EH_FRAME) {
			base = ph.p_vaddr;
			hdr = elf_image_bytes(img, base, 12);
		}
	}
	if (!hdr || hdr[0] != 1 || hdr[1] != EH_HDR_PTR_ENC || hdr[2] != EH_HDR_COUNT_ENC ||
	    hdr[3] != EH_HDR_TABLE_ENC)
		return -1;
	hi = elf_le32(hdr + 8);
	table = elf_image_bytes(img, base + 12, hi * 8);
	if (!table)
		return -1;
	want = (int64_t)(vaddr - base);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int64_t start = (int32_t)elf_le32(table + mid * 8);

		if (start == want)
			return 1;
		if (start < want)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/* ---- relocated pointers -------------------------------------------------- */

static int push_pointer(struct elf_image *img, const struct elf_pointer *p)
{
	if (img->n_ptrs == img->cap_ptrs) {
		size_t cap = img->cap_ptrs ? img->cap_ptrs * 2 : 4096;
		struct elf_pointer *grown = realloc(img->ptrs, cap * sizeof(*grown));

		if (!grown)
			return -1;
		img->ptrs = grown;
		img->cap_ptrs = cap;
	}
	img->ptrs[img->n_ptrs++] = *p;
	return 0;
}

enum reloc_kind { RELOC_OTHER, RELOC_RELATIVE, RELOC_SYMBOL };

static enum reloc_kind reloc_kind(int machine, uint32_t type)
{
	if (machine == EM_X86_64) {
		if (type == R_X86_64_RELATIVE)
			return RELOC_RELATIVE;
		if (type == R_X86_64_64 || type == R_X86_64_GLOB_DAT || type == R_X86_64_JUMP_SLOT)
			return RELOC_SYMBOL;
	} else if (machine == EM_AARCH64) {
		if (type == R_AARCH64_RELATIVE)
			return RELOC_RELATIVE;
		if (type == R_AARCH64_ABS64 || type == R_AARCH64_GLOB_DAT ||
		    type == R_AARCH64_JUMP_SLOT)
			return RELOC_SYMBOL;
	}
	return RELOC_OTHER;
}

/* The symbol a relocation names: its address here (0 when undefined). */
static void reloc_symbol(const struct elf_image *img, Elf_Data *syms, size_t strtab,
			 size_t index, struct elf_pointer *p)
{
	GElf_Sym sym;

	if (!syms || !gelf_getsym(syms, (int)index, &sym))
		return;
	p->symbol = elf_strptr(img->f.elf, strtab, sym.st_name);
	if (sym.st_shndx != SHN_UNDEF)
		p->value += sym.st_value;
	else
		p->value = 0;
}

static int read_rela(struct elf_image *img, Elf_Scn *scn, const GElf_Shdr *sh)
{
	Elf_Scn *symscn = elf_getscn(img->f.elf, sh->sh_link);
	Elf_Data *data = elf_getdata(scn, NULL), *syms = symscn ? elf_getdata(symscn, NULL) : NULL;
	size_t n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0, strtab = 0;
	GElf_Shdr symsh;

	if (symscn && gelf_getshdr(symscn, &symsh))
		strtab = symsh.sh_link;
	for (size_t i = 0; data && i < n; i++) {
		enum reloc_kind kind;
		struct elf_pointer p = { 0 };
		GElf_Rela r;

		if (!gelf_getrela(data, (int)i, &r))
			continue;
		kind = reloc_kind(img->ehdr.e_machine, (uint32_t)GELF_R_TYPE(r.r_info));
		if (kind == RELOC_OTHER)
			continue;
		p.place = r.r_offset;
		p.value = (uint64_t)r.r_addend;
		p.kind = kind == RELOC_RELATIVE ? ELF_PTR_RELATIVE : ELF_PTR_SYMBOL;
		if (kind == RELOC_SYMBOL)
			reloc_symbol(img, syms, strtab, GELF_R_SYM(r.r_info), &p);
		if (push_pointer(img, &p) != 0)
			return -1;
	}
	return 0;
}

/* A relative relocation packed by RELR: the addend is the word in place. */
static int push_relr(struct elf_image *img, uint64_t place)
{
	const unsigned char *word = elf_image_bytes(img, place, 8);
	struct elf_pointer p = { .place = place, .kind = ELF_PTR_RELATIVE };

	if (!word)
		return 0;
	p.value = elf_le64(word);
	return push_pointer(img, &p);
}

/* RELR: an even word is a place; an odd one a bitmap of the 63 words
 * after the last place. */
static int read_relr(struct elf_image *img, const GElf_Shdr *sh)
{
	uint64_t next = 0;
	const unsigned char *words = sh->sh_offset <= img->raw_size &&
						     sh->sh_size <= img->raw_size - sh->sh_offset ?
					     img->raw + sh->sh_offset :
					     NULL;

	for (size_t i = 0; words && i + 8 <= sh->sh_size; i += 8) {
		uint64_t w = elf_le64(words + i);

		if (!(w & 1)) {
			if (push_relr(img, w) != 0)
				return -1;
			next = w + 8;
			continue;
		}
		for (int bit = 1; bit < 64; bit++)
			if ((w >> bit & 1) && push_relr(img, next + (uint64_t)(bit - 1) * 8) != 0)
				return -1;
		next += 63 * 8;
	}
	return 0;
}

static int by_place(const void *a, const void *b)
{
	const struct elf_pointer *x = a, *y = b;

	return x->place < y->place ? -1 : x->place > y->place;
}

const struct elf_pointer *elf_image_pointers(struct elf_image *img, size_t *n)
{
	Elf_Scn *scn = NULL;
	int rc = 0;

	while (!img->ptrs_read && !rc && (scn = elf_nextscn(img->f.elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC))
			continue;
		if (sh.sh_type == SHT_RELA)
			rc = read_rela(img, scn, &sh);
		else if (sh.sh_type == SHT_RELR)
			rc = read_relr(img, &sh);
	}
	if (!img->ptrs_read && img->n_ptrs)
		qsort(img->ptrs, img->n_ptrs, sizeof(*img->ptrs), by_place);
	img->ptrs_read = true;
	/* out of memory: answer with what was read, never with a half sort */
	if (rc)
		img->n_ptrs = 0;
	*n = img->n_ptrs;
	return img->n_ptrs ? img->ptrs : NULL;
}

int elf_image_pointer_at(struct elf_image *img, uint64_t place, struct elf_pointer *out)
{
	size_t lo = 0, hi;
	const struct elf_pointer *p = elf_image_pointers(img, &hi);
	const unsigned char *word;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p[mid].place == place) {
			*out = p[mid];
			return 0;
		}
		if (p[mid].place < place)
			lo = mid + 1;
		else
			hi = mid;
	}
	word = elf_image_bytes(img, place, 8);
	if (!word)
		return -1;
	*out = (struct elf_pointer){ .place = place, .value = elf_le64(word), .kind = ELF_PTR_RAW };
	return 0;
}

/* ---- MiniDebugInfo ---------------------------------------------------------- */

/* MiniDebugInfo is a symbol table of a few hundred kilobytes; more than
 * this is not one. */
#define DEBUGDATA_MAX (256u << 20)

/* Decompresses the xz stream IN into a new buffer. Returns it or NULL. */
static char *unxz(const unsigned char *in, size_t len, size_t *out_len, char *err, size_t errlen)
{
	lzma_stream s = LZMA_STREAM_INIT;
	size_t cap = 0;
	char *buf = NULL;
	lzma_ret r = lzma_stream_decoder(&s, DEBUGDATA_MAX, 0);

	s.next_in = in;
	s.avail_in = len;
	while (r == LZMA_OK) {
		if (s.total_out == cap) {
			size_t want = cap ? cap * 2 : len * 4 + 4096;
			char *grown;

			want = want < DEBUGDATA_MAX ? want : DEBUGDATA_MAX;
			grown = want > cap ? realloc(buf, want) : NULL;
			if (!grown) {
				r = LZMA_MEM_ERROR;
				break;
			}
			buf = grown;
			cap = want;
		}
		s.next_out = (uint8_t *)buf + s.total_out;
		s.avail_out = cap - s.total_out;
		r = lzma_code(&s, LZMA_FINISH);
	}
	*out_len = s.total_out;
	lzma_end(&s);
	if (r == LZMA_STREAM_END)
		return buf;
	snprintf(err, errlen, "cannot decompress .gnu_debugdata (liblzma error %d)", (int)r);
	free(buf);
	return NULL;
}

int elf_image_open_debugdata(const struct elf_image *img, struct elf_image **out, char *err,
			     size_t errlen)
{
	GElf_Shdr sh;
	struct elf_file f = { .fd = -1 };
	size_t len;
	char *bytes;

	*out = NULL;
	if (!section_named(img, ".gnu_debugdata", &sh) || sh.sh_type == SHT_NOBITS)
		return -ENOENT;
	if (sh.sh_offset > img->raw_size || sh.sh_size > img->raw_size - sh.sh_offset) {
		snprintf(err, errlen, ".gnu_debugdata is past the end of the file");
		return -ENOEXEC;
	}
	bytes = unxz(img->raw + sh.sh_offset, sh.sh_size, &len, err, errlen);
	if (!bytes)
		return -ENOEXEC;
	f.elf = elf_memory(bytes, len);
	if (!f.elf || elf_kind(f.elf) != ELF_K_ELF) {
		snprintf(err, errlen, ".gnu_debugdata does not hold an ELF file");
		if (f.elf)
			elf_end(f.elf);
		free(bytes);
		return -ENOEXEC;
	}
	return image_from_file(&f, bytes, ".gnu_debugdata", out, err, errlen);
}

/* ---- symbol lookup for probes ------------------------------------------------ */

/* Edit distance, capped: only used to rank suggestions. */
static int distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	int row[64];

	if (la >= 63 || lb >= 63)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		int prev = row[0];
		row[0] = (int)i;
		for (size_t j = 1; j <= lb; j++) {
			int cur = row[j];
			int sub = prev + (a[i - 1] != b[j - 1]);
			int best = row[j] + 1 < row[j - 1] + 1 ? row[j] + 1 : row[j - 1] + 1;
			row[j] = sub < best ? sub : best;
			prev = cur;
		}
	}
	return row[lb];
}

#define MAX_SUGGEST 5

struct suggestions {
	char names[MAX_SUGGEST][64];
	int scores[MAX_SUGGEST];
	int n;
};

static void consider(struct suggestions *s, const char *want, const char *name)
{
	int score, worst = 0;

	if (strlen(name) >= 64)
		return;
	score = strstr(name, want) ? 0 : distance(want, name);
	if (score > (int)strlen(want) / 2 + 1)
		return;
	for (int i = 0; i < s->n; i++) {
		if (strcmp(s->names[i], name) == 0)
			return;
		if (s->scores[i] > s->scores[worst])
			worst = i;
	}
	if (s->n < MAX_SUGGEST)
		worst = s->n++;
	else if (s->scores[worst] <= score)
		return;
	snprintf(s->names[worst], sizeof(s->names[worst]), "%s", name);
	s->scores[worst] = score;
}

/* One name searched for in a symbol table, with near misses noted. */
struct symbol_search {
	const char *name;
	uint64_t vaddr;
	int found; /* 0, 1 local, 2 global */
	struct suggestions s;
};

static void match_function(const struct elf_sym *sym, void *ctx)
{
	struct symbol_search *q = ctx;

	if ((sym->type != STT_FUNC && sym->type != STT_GNU_IFUNC) || sym->value == 0)
		return;
	if (strcmp(sym->name, q->name) != 0) {
		consider(&q->s, q->name, sym->name);
		return;
	}
	/* prefer a global definition over a local one, else the first */
	if (q->found == 2 || (q->found && sym->bind == STB_LOCAL))
		return;
	q->vaddr = sym->value;
	q->found = sym->bind == STB_LOCAL ? 1 : 2;
}

static void format_suggestions(const struct suggestions *s, char *out, size_t len)
{
	size_t used = 0;

	if (!out || !len)
		return;
	out[0] = '\0';
	for (int i = 0; i < s->n && used < len; i++)
		used += (size_t)snprintf(out + used, len - used, "%s%s", i ? ", " : "", s->names[i]);
}

int elf_symbol_lookup(const char *path, const char *name, uint64_t *offset,
		      enum elf_symbol_table *table, char *suggest, size_t suggest_len,
		      char *err, size_t errlen)
{
	struct symbol_search q = { .name = name };
	enum elf_symbol_table t = ELF_SYMTAB;
	struct elf_image *img;
	int ret = elf_image_open(path, &img, err, errlen);

	if (ret)
		return ret;
	/* .symtab first: it also has static functions. */
	elf_image_symbols(img, ELF_SYMTAB, match_function, &q);
	if (!q.found) {
		t = ELF_DYNSYM;
		elf_image_symbols(img, ELF_DYNSYM, match_function, &q);
	}
	if (!q.found) {
		format_suggestions(&q.s, suggest, suggest_len);
		ret = -ENOENT;
	} else if (elf_image_file_offset(img, q.vaddr, offset) != 0) {
		snprintf(err, errlen, "%s: symbol %s is not in an executable segment", path, name);
		ret = -ENOEXEC;
	} else if (table) {
		*table = t;
	}
	elf_image_close(img);
	return ret;
}

int elf_symbol_offset(const char *path, const char *name, uint64_t *offset,
		      char *suggest, size_t suggest_len, char *err, size_t errlen)
{
	return elf_symbol_lookup(path, name, offset, NULL, suggest, suggest_len, err, errlen);
}

bool elf_has_symtab(const char *path)
{
	char err[256];
	struct elf_image *img;
	bool found;

	if (elf_image_open(path, &img, err, sizeof(err)))
		return false;
	found = elf_image_has_table(img, ELF_SYMTAB);
	elf_image_close(img);
	return found;
}

/* Calls FN with each string of PATH's .dynamic entries of kind TAG, in
 * their order, until it returns true. Returns 0 when one did, -1 when
 * none did or PATH is not a readable ELF file. */
static int dynamic_each(const char *path, Elf64_Sxword tag,
			bool (*fn)(const char *s, void *arg), void *arg)
{
	char err[256];
	struct elf_file f;
	Elf_Scn *scn = NULL;
	int ret = -1;

	if (elf_file_open(&f, path, err, sizeof(err)))
		return -1;
	while (ret && (scn = elf_nextscn(f.elf, scn))) {
		Elf_Data *data;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && ret && i < sh.sh_size / sh.sh_entsize; i++) {
			const char *s;
			GElf_Dyn dyn;

			if (!gelf_getdyn(data, (int)i, &dyn) || dyn.d_tag != tag)
				continue;
			s = elf_strptr(f.elf, sh.sh_link, dyn.d_un.d_val);
			if (s && fn(s, arg))
				ret = 0;
		}
	}
	elf_file_close(&f);
	return ret;
}

struct prefix_match {
	const char *prefix;
	char *out;
	size_t len;
};

static bool copy_if_prefix(const char *s, void *arg)
{
	struct prefix_match *m = arg;

	if (strncmp(s, m->prefix, strlen(m->prefix)) != 0)
		return false;
	snprintf(m->out, m->len, "%s", s);
	return true;
}

/* The first string of PATH's .dynamic entries of kind TAG that starts
 * with PREFIX ("" for any), into OUT. Returns 0, or -1 when there is none. */
static int dynamic_string(const char *path, Elf64_Sxword tag, const char *prefix,
			  char *out, size_t len)
{
	struct prefix_match m = { prefix, out, len };

	out[0] = '\0';
	return dynamic_each(path, tag, copy_if_prefix, &m);
}

int elf_soname(const char *path, char *out, size_t len)
{
	return dynamic_string(path, DT_SONAME, "", out, len);
}

int elf_rpath(const char *path, char *out, size_t len)
{
	return dynamic_string(path, DT_RPATH, "", out, len);
}

int elf_runpath(const char *path, char *out, size_t len)
{
	return dynamic_string(path, DT_RUNPATH, "", out, len);
}

int elf_needed(const char *path, const char *prefix, char *out, size_t len)
{
	return dynamic_string(path, DT_NEEDED, prefix, out, len);
}

bool elf_needs(const char *path, bool (*match)(const char *needed, void *arg), void *arg)
{
	return dynamic_each(path, DT_NEEDED, match, arg) == 0;
}

int elf_header_fd(int fd, int *machine, int *elf_class)
{
	unsigned char h[20];

	if (pread(fd, h, sizeof(h), 0) != (ssize_t)sizeof(h) || memcmp(h, ELFMAG, SELFMAG) != 0 ||
	    (h[EI_CLASS] != ELFCLASS32 && h[EI_CLASS] != ELFCLASS64) ||
	    (h[EI_DATA] != ELFDATA2LSB && h[EI_DATA] != ELFDATA2MSB))
		return -1;
	/* e_machine: a 16-bit field at offset 18 in both classes, in the
	 * file's own byte order */
	*machine = h[EI_DATA] == ELFDATA2LSB ? h[18] | h[19] << 8 : h[18] << 8 | h[19];
	if (elf_class)
		*elf_class = h[EI_CLASS];
	return 0;
}

int elf_machine(const char *path)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC), machine = -1;
	struct stat st;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || elf_header_fd(fd, &machine, NULL) != 0)
		machine = -1;
	close(fd);
	return machine;
}
