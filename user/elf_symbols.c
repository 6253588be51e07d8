// SPDX-License-Identifier: MIT
/* Symbol lookup with libelf. */
#include "elf_symbols.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct elf_file {
	int fd;
	Elf *elf;
};

static int elf_file_open(struct elf_file *f, const char *path, char *err, size_t errlen)
{
	f->elf = NULL;
	if (elf_version(EV_CURRENT) == EV_NONE) {
		snprintf(err, errlen, "libelf initialisation failed");
		return -EINVAL;
	}
	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(e));
		return -e;
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
	close(f->fd);
}

/* Converts a symbol's virtual address into a file offset through the
 * PT_LOAD segment that holds it. */
static int vaddr_to_offset(Elf *elf, uint64_t vaddr, uint64_t *offset)
{
	size_t n;

	if (elf_getphdrnum(elf, &n) != 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    !(ph.p_flags & PF_X))
			continue;
		if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_memsz) {
			*offset = vaddr - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	}
	return -1;
}

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

/* Looks NAME up in one symbol table section. */
static int search_symtab(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh,
			 const char *name, uint64_t *vaddr, struct suggestions *s)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
	int found = 0;

	for (size_t i = 0; data && i < n; i++) {
		GElf_Sym sym;
		const char *sname;
		int type;

		if (!gelf_getsym(data, (int)i, &sym))
			continue;
		type = GELF_ST_TYPE(sym.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF ||
		    sym.st_value == 0)
			continue;
		sname = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!sname)
			continue;
		if (strcmp(sname, name) == 0) {
			/* prefer a global definition over a local one */
			if (!found || GELF_ST_BIND(sym.st_info) != STB_LOCAL)
				*vaddr = sym.st_value;
			found = 1;
			if (GELF_ST_BIND(sym.st_info) != STB_LOCAL)
				return 1;
		} else if (s) {
			consider(s, name, sname);
		}
	}
	return found;
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
	struct suggestions s = { .n = 0 };
	struct elf_file f;
	uint64_t vaddr = 0;
	int found = 0, ret;
	Elf_Scn *scn = NULL;

	ret = elf_file_open(&f, path, err, errlen);
	if (ret)
		return ret;
	/* .symtab first: it also has static functions. */
	for (int pass = 0; pass < 2 && !found; pass++) {
		Elf64_Word want = pass == 0 ? SHT_SYMTAB : SHT_DYNSYM;
		scn = NULL;
		while (!found && (scn = elf_nextscn(f.elf, scn))) {
			GElf_Shdr sh;
			if (gelf_getshdr(scn, &sh) && sh.sh_type == want)
				found = search_symtab(f.elf, scn, &sh, name, &vaddr, &s);
		}
		if (found && table)
			*table = pass == 0 ? ELF_SYMTAB : ELF_DYNSYM;
	}
	if (!found) {
		format_suggestions(&s, suggest, suggest_len);
		ret = -ENOENT;
	} else if (vaddr_to_offset(f.elf, vaddr, offset) != 0) {
		snprintf(err, errlen, "%s: symbol %s is not in an executable segment", path, name);
		ret = -ENOEXEC;
	}
	elf_file_close(&f);
	return ret;
}

/* The first string of PATH's .dynamic entries of kind TAG that starts
 * with PREFIX ("" for any). Returns 0, or -1 when there is none. */
int elf_symbol_offset(const char *path, const char *name, uint64_t *offset,
		      char *suggest, size_t suggest_len, char *err, size_t errlen)
{
	return elf_symbol_lookup(path, name, offset, NULL, suggest, suggest_len, err, errlen);
}

bool elf_has_symtab(const char *path)
{
	char err[256];
	struct elf_file f;
	Elf_Scn *scn = NULL;
	bool found = false;

	if (elf_file_open(&f, path, err, sizeof(err)))
		return false;
	while (!found && (scn = elf_nextscn(f.elf, scn))) {
		GElf_Shdr sh;

		found = gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB;
	}
	elf_file_close(&f);
	return found;
}

static int dynamic_string(const char *path, Elf64_Sxword tag, const char *prefix,
			  char *out, size_t len)
{
	size_t plen = strlen(prefix);
	char err[256];
	struct elf_file f;
	Elf_Scn *scn = NULL;
	int ret = -1;

	out[0] = '\0';
	if (elf_file_open(&f, path, err, sizeof(err)))
		return -1;
	while (ret && (scn = elf_nextscn(f.elf, scn))) {
		Elf_Data *data;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && i < sh.sh_size / sh.sh_entsize; i++) {
			const char *s;
			GElf_Dyn dyn;

			if (!gelf_getdyn(data, (int)i, &dyn) || dyn.d_tag != tag)
				continue;
			s = elf_strptr(f.elf, sh.sh_link, dyn.d_un.d_val);
			if (s && strncmp(s, prefix, plen) == 0) {
				snprintf(out, len, "%s", s);
				ret = 0;
				break;
			}
		}
	}
	elf_file_close(&f);
	return ret;
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

int elf_machine(const char *path)
{
	char err[256];
	struct elf_file f;
	GElf_Ehdr eh;
	int machine = -1;

	if (elf_file_open(&f, path, err, sizeof(err)))
		return -1;
	if (gelf_getehdr(f.elf, &eh))
		machine = eh.e_machine;
	elf_file_close(&f);
	return machine;
}
