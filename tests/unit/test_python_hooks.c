// SPDX-License-Identifier: MIT
/* python_hooks: the hook points of real CPython builds stripped as the
 * robot strips them (strip --strip-unneeded), with MiniDebugInfo added,
 * Debian's static python3.11 and arm64 libpython3.11, and broken files.
 * The addresses to expect come from nm on the unstripped file (or the
 * debug file), never from the code under test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <elf.h>
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "elf_symbols.h"
#include "python_hooks.h"

static char tmp[64];
static char err[512];

/* ---- helpers ---------------------------------------------------------------- */

/* Runs a shell command; returns its exit status (0 when it worked). */
static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
	char cmd[4 * PATH_MAX];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	rc = system(cmd);
	return rc == -1 || !WIFEXITED(rc) ? -1 : WEXITSTATUS(rc);
}

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

static bool have(const char *tool)
{
	return run("command -v %s >/dev/null 2>&1", tool) == 0;
}

static int setup_tmp(void **state)
{
	(void)state;
	snprintf(tmp, sizeof(tmp), "/tmp/pmetrics-hooks-XXXXXX");
	return mkdtemp(tmp) ? 0 : -1;
}

static int remove_tmp(void **state)
{
	(void)state;
	return run("rm -rf '%s'", tmp);
}

/* pyenv's libpython3.MINOR.so.1.0, or skip saying it is not there. */
static bool pyenv_lib(int minor, char *out, size_t len)
{
	const char *root = getenv("PYENV_ROOT") ? getenv("PYENV_ROOT") : "/root/.pyenv";
	char pattern[PATH_MAX];
	glob_t g;
	bool found;

	snprintf(pattern, sizeof(pattern), "%s/versions/3.%d.*/lib/libpython3.%d.so.1.0", root,
		 minor, minor);
	found = glob(pattern, 0, NULL, &g) == 0 && g.gl_pathc > 0;
	if (found)
		snprintf(out, len, "%s", g.gl_pathv[0]);
	else
		print_message("SKIP: no pyenv CPython 3.%d (%s)\n", minor, pattern);
	globfree(&g);
	return found;
}

/* Symbols as nm lists them: the reference addresses. */
#define MAX_REFS 64
struct refs {
	int n;
	struct {
		char name[80];
		uint64_t value, size;
	} s[MAX_REFS];
};

/* The symbols of FILE (-D: .dynsym only) matching the extended regex
 * WANT, read with NM. */
static void nm_refs(const char *nm, const char *file, bool dynamic, const char *want,
		    struct refs *r)
{
	char cmd[2 * PATH_MAX], line[256];
	FILE *p;

	r->n = 0;
	snprintf(cmd, sizeof(cmd), "%s -S --defined-only %s '%s' 2>/dev/null | grep -E ' (%s)$'",
		 nm, dynamic ? "-D" : "", file, want);
	p = popen(cmd, "r");
	assert_non_null(p);
	/* "VALUE [SIZE] TYPE NAME" */
	while (r->n < MAX_REFS && fgets(line, sizeof(line), p)) {
		char *tok[4], *save = NULL;
		int n = 0;

		for (char *t = strtok_r(line, " \n", &save); t && n < 4; t = strtok_r(NULL, " \n", &save))
			tok[n++] = t;
		if (n < 3)
			continue;
		snprintf(r->s[r->n].name, sizeof(r->s[r->n].name), "%s", tok[n - 1]);
		r->s[r->n].value = strtoull(tok[0], NULL, 16);
		r->s[r->n++].size = n == 4 ? strtoull(tok[1], NULL, 16) : 0;
	}
	pclose(p);
}

/* NAME (or NAME.lto_priv.N, NAME.N) in R, NULL if absent. */
static const uint64_t *ref_entry(const struct refs *r, const char *name)
{
	size_t n = strlen(name);

	for (int i = 0; i < r->n; i++)
		if (strncmp(r->s[i].name, name, n) == 0 &&
		    (r->s[i].name[n] == '\0' || r->s[i].name[n] == '.'))
			return &r->s[i].value;
	return NULL;
}

/* NAME's address in R, 0 if absent. */
static uint64_t ref(const struct refs *r, const char *name)
{
	const uint64_t *v = ref_entry(r, name);

	return v ? v[0] : 0;
}

/* NAME's size in R, 0 if absent. */
static uint64_t ref_size(const struct refs *r, const char *name)
{
	const uint64_t *v = ref_entry(r, name);

	return v ? v[1] : 0;
}

#define WANTED_NAMES                                                                           \
	"(_PyEval_EvalFrameDefault|_PyFunction_Vectorcall|PyGen_am_send|_PyGen_Send|"          \
	"PyIter_Send|gen_send|gen_throw|gen_close|gen_dealloc|gen_iternext|_Py_MakeCoro|"      \
	"_PyGen_FetchStopIterationValue|PyEval_EvalCode|make_gen|helper)"                      \
	"(\\.lto_priv\\.[0-9]+)?|opcode_targets(\\.[0-9]+)?"

/* Which hook point is which function, and where a stripped file keeps
 * it when .dynsym does not. */
struct expect {
	const char *field;
	size_t offset; /* in struct python_hooks */
	const char *symbol; /* NULL: not in this version */
	enum hook_source fallback;
};

#define POINT(f) #f, offsetof(struct python_hooks, f)

static int expectations(int minor, struct expect *e)
{
	struct expect all[] = {
		{ POINT(eval_frame), "_PyEval_EvalFrameDefault", HOOK_MISSING },
		{ POINT(function_vectorcall), "_PyFunction_Vectorcall", HOOK_MISSING },
		{ POINT(coro_send), minor >= 10 ? "PyGen_am_send" : "_PyGen_Send",
		  minor >= 10 ? HOOK_TYPE_SLOT : HOOK_MISSING },
		{ POINT(iter_send), minor >= 10 ? "PyIter_Send" : NULL, HOOK_MISSING },
		{ POINT(gen_send), minor >= 10 ? "gen_send" : "_PyGen_Send", HOOK_METHOD_TABLE },
		{ POINT(gen_throw), "gen_throw", HOOK_METHOD_TABLE },
		{ POINT(gen_close), "gen_close", HOOK_METHOD_TABLE },
		{ POINT(gen_dealloc), "gen_dealloc", HOOK_TYPE_SLOT },
		{ POINT(gen_iternext), "gen_iternext", HOOK_TYPE_SLOT },
		{ POINT(make_coro), minor >= 11 ? "_Py_MakeCoro" : NULL, HOOK_OPCODE_CALL },
		{ POINT(fetch_stop_value), minor <= 11 ? "_PyGen_FetchStopIterationValue" : NULL,
		  HOOK_MISSING },
		{ POINT(eval_code), "PyEval_EvalCode", HOOK_MISSING },
	};

	memcpy(e, all, sizeof(all));
	return (int)(sizeof(all) / sizeof(all[0]));
}

static const struct python_hook_point *point(const struct python_hooks *h, const struct expect *e)
{
	return (const struct python_hook_point *)((const char *)h + e->offset);
}

enum variant { UNSTRIPPED, STRIPPED, MINIDEBUGINFO };

/* Where VARIANT of a build finds E: .symtab when it has one; else the
 * exported ones from .dynsym and the static ones from MiniDebugInfo or
 * their fallback. */
static enum hook_source expected_source(const struct expect *e, const struct refs *dyn,
					enum variant v)
{
	if (!e->symbol)
		return HOOK_MISSING;
	if (v == UNSTRIPPED)
		return HOOK_SYMTAB;
	if (ref(dyn, e->symbol))
		return HOOK_DYNSYM;
	return v == MINIDEBUGINFO ? HOOK_DEBUGDATA : e->fallback;
}

/* Every point of FILE (a variant of LIB) where the reference says. */
static void check_points(const char *file, const char *lib, int minor, enum variant v)
{
	struct refs syms, dyn;
	struct expect e[16];
	struct python_hooks h;
	int n = expectations(minor, e);

	nm_refs("nm", lib, false, WANTED_NAMES, &syms);
	nm_refs("nm", lib, true, WANTED_NAMES, &dyn);
	assert_int_equal(python_hooks_find(file, 3, minor, &h, err, sizeof(err)), 0);
	assert_int_equal(h.stripped, v != UNSTRIPPED);
	assert_int_equal(h.has_debugdata, v == MINIDEBUGINFO);
	for (int i = 0; i < n; i++) {
		const struct python_hook_point *pt = point(&h, &e[i]);
		enum hook_source want = expected_source(&e[i], &dyn, v);
		uint64_t addr = e[i].symbol ? ref(&syms, e[i].symbol) : 0, off;

		if (pt->source != want || pt->vaddr != (want == HOOK_MISSING ? 0 : addr))
			fail_msg("3.%d %s: %s at 0x%llx (%s), want %s at 0x%llx (%s)", minor,
				 e[i].field, hook_source_name(pt->source),
				 (unsigned long long)pt->vaddr, pt->detail, hook_source_name(want),
				 (unsigned long long)addr, e[i].symbol ? e[i].symbol : "-");
		if (want == HOOK_MISSING) {
			assert_true(pt->detail[0]); /* says why */
			continue;
		}
		assert_int_equal(elf_symbol_offset(lib, e[i].symbol, &off, NULL, 0, err,
						   sizeof(err)), 0);
		assert_int_equal(pt->offset, off);
	}
	assert_int_not_equal(h.opcode_table, 0);
	assert_int_equal(h.opcode_table, ref(&syms, "opcode_targets"));
}

/* A copy of LIB as the robot has it: strip --strip-unneeded. */
static void stripped_copy(const char *lib, char *out, size_t len)
{
	snprintf(out, len, "%s/stripped-%s", tmp, strrchr(lib, '/') + 1);
	if (access(out, R_OK) != 0)
		assert_int_equal(run("strip --strip-unneeded -o '%s' '%s'", out, lib), 0);
}

/* ---- pyenv builds, stripped, unstripped, with MiniDebugInfo --------------------- */

static void check_version(int minor, enum variant v);

static void stripped_3_8(void **state) { (void)state; check_version(8, STRIPPED); }
static void stripped_3_9(void **state) { (void)state; check_version(9, STRIPPED); }
static void stripped_3_10(void **state) { (void)state; check_version(10, STRIPPED); }
static void stripped_3_11(void **state) { (void)state; check_version(11, STRIPPED); }
static void stripped_3_12(void **state) { (void)state; check_version(12, STRIPPED); }
static void stripped_3_13(void **state) { (void)state; check_version(13, STRIPPED); }
static void unstripped_3_8(void **state) { (void)state; check_version(8, UNSTRIPPED); }
static void unstripped_3_9(void **state) { (void)state; check_version(9, UNSTRIPPED); }
static void unstripped_3_10(void **state) { (void)state; check_version(10, UNSTRIPPED); }
static void unstripped_3_11(void **state) { (void)state; check_version(11, UNSTRIPPED); }
static void unstripped_3_12(void **state) { (void)state; check_version(12, UNSTRIPPED); }
static void unstripped_3_13(void **state) { (void)state; check_version(13, UNSTRIPPED); }
static void minidebuginfo_3_8(void **state) { (void)state; check_version(8, MINIDEBUGINFO); }
static void minidebuginfo_3_9(void **state) { (void)state; check_version(9, MINIDEBUGINFO); }
static void minidebuginfo_3_10(void **state) { (void)state; check_version(10, MINIDEBUGINFO); }
static void minidebuginfo_3_11(void **state) { (void)state; check_version(11, MINIDEBUGINFO); }
static void minidebuginfo_3_12(void **state) { (void)state; check_version(12, MINIDEBUGINFO); }
static void minidebuginfo_3_13(void **state) { (void)state; check_version(13, MINIDEBUGINFO); }

/* MiniDebugInfo as distributions make it (GDB manual, "MiniDebugInfo"):
 * the function symbols .dynsym lacks, in a symbol-only copy of the debug
 * information, xz-compressed into .gnu_debugdata of the stripped file.
 * SYMBOLS has the symbols (the unstripped file or its debug file); TOOLS
 * prefixes objcopy ("aarch64-linux-gnu-" for an arm64 file). */
static bool minidebuginfo_copy(const char *symbols, const char *stripped, const char *tools,
			       char *out, size_t len)
{
	const char *base = strrchr(stripped, '/') + 1;
	char objcopy[64];

	snprintf(objcopy, sizeof(objcopy), "%sobjcopy", tools);
	if (!have("xz") || !have(objcopy) || !have("comm")) {
		print_message("SKIP: MiniDebugInfo needs xz, %s and comm\n", objcopy);
		return false;
	}
	snprintf(out, len, "%s/mini-%s", tmp, base);
	assert_int_equal(run("set -e; cd '%s'; "
			     "nm -D --defined-only --format=posix '%s' | awk '{print $1}' | sort >%s.dyn; "
			     "nm --defined-only --format=posix '%s' | awk '$2 ~ /^[Tt]$/ {print $1}' "
			     "| sort >%s.func; comm -13 %s.dyn %s.func >%s.keep; "
			     "%s --only-keep-debug '%s' %s.debug; "
			     "%s -S --remove-section .gdb_index --remove-section .comment "
			     "--keep-symbols=%s.keep %s.debug %s.mini; xz -f %s.mini; "
			     "cp '%s' '%s'; %s --add-section .gnu_debugdata=%s.mini.xz '%s'",
			     tmp, stripped, base, symbols, base, base, base, base, objcopy, symbols,
			     base, objcopy, base, base, base, base, stripped, out, objcopy, base, out),
			 0);
	return true;
}

static void check_version(int minor, enum variant v)
{
	char lib[PATH_MAX], stripped[PATH_MAX], mini[PATH_MAX];

	if (!pyenv_lib(minor, lib, sizeof(lib)))
		skip();
	if (v == UNSTRIPPED) {
		check_points(lib, lib, minor, v);
		return;
	}
	stripped_copy(lib, stripped, sizeof(stripped));
	if (v == STRIPPED) {
		check_points(stripped, lib, minor, v);
		return;
	}
	if (!minidebuginfo_copy(lib, stripped, "", mini, sizeof(mini)))
		skip();
	check_points(mini, lib, minor, v);
}

/* RETURN_GENERATOR's handler calls _Py_MakeCoro first: directly in 3.11
 * and 3.12, through the PLT in 3.13 (where it is exported). */
static void opcode_call_finds_make_coro(void **state)
{
	const int opcode[] = { [11] = 75, [12] = 75, [13] = 35 };
	char lib[PATH_MAX], stripped[PATH_MAX], why[160];
	int tested = 0;

	(void)state;
	for (int minor = 11; minor <= 13; minor++) {
		struct python_hooks h;
		struct refs syms;
		uint64_t eval, handler;

		if (!pyenv_lib(minor, lib, sizeof(lib)))
			continue;
		stripped_copy(lib, stripped, sizeof(stripped));
		nm_refs("nm", lib, false, WANTED_NAMES, &syms);
		assert_int_equal(python_hooks_find(stripped, 3, minor, &h, err, sizeof(err)), 0);
		eval = ref(&syms, "_PyEval_EvalFrameDefault");
		handler = python_hooks_opcode_handler(stripped, &h, opcode[minor]);
		assert_in_range(handler, eval, eval + ref_size(&syms, "_PyEval_EvalFrameDefault") - 1);
		assert_int_equal(python_hooks_opcode_call(stripped, &h, opcode[minor], why, sizeof(why)),
				 ref(&syms, "_Py_MakeCoro"));
		assert_int_equal(python_hooks_opcode_handler(stripped, &h, 256), 0);
		tested++;
	}
	if (!tested)
		skip();
}

/* .eh_frame_hdr says where functions start: a static one (what a call
 * in a handler may go to), not an address inside one (a handler). */
static void function_starts_from_eh_frame_hdr(void **state)
{
	char lib[PATH_MAX], stripped[PATH_MAX];
	struct elf_image *img;
	struct python_hooks h;
	struct refs syms;
	uint64_t make_coro;

	(void)state;
	if (!pyenv_lib(12, lib, sizeof(lib)))
		skip();
	stripped_copy(lib, stripped, sizeof(stripped));
	nm_refs("nm", lib, false, WANTED_NAMES, &syms);
	make_coro = ref(&syms, "_Py_MakeCoro");
	assert_int_equal(python_hooks_find(stripped, 3, 12, &h, err, sizeof(err)), 0);
	assert_int_equal(elf_image_open(stripped, &img, err, sizeof(err)), 0);
	assert_int_equal(elf_image_function_start(img, make_coro), 1);
	assert_int_equal(elf_image_function_start(img, ref(&syms, "gen_dealloc")), 1);
	assert_int_equal(elf_image_function_start(img, make_coro + 1), 0);
	assert_int_equal(elf_image_function_start(img, make_coro - 1), 0);
	assert_int_equal(
		elf_image_function_start(img, python_hooks_opcode_handler(stripped, &h, 75)), 0);
	elf_image_close(img);
}

/* It runs when recording starts: well under 100 ms on a stripped 3.12. */
static void stripped_3_12_is_fast(void **state)
{
	char lib[PATH_MAX], stripped[PATH_MAX];
	double best = 1e9;

	(void)state;
	if (!pyenv_lib(12, lib, sizeof(lib)))
		skip();
	stripped_copy(lib, stripped, sizeof(stripped));
	for (int i = 0; i < 3; i++) {
		struct timespec a, b;
		struct python_hooks h;

		clock_gettime(CLOCK_MONOTONIC, &a);
		assert_int_equal(python_hooks_find(stripped, 3, 12, &h, err, sizeof(err)), 0);
		clock_gettime(CLOCK_MONOTONIC, &b);
		if ((b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6 < best)
			best = (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
	}
	print_message("python_hooks_find on a stripped 3.12: %.1f ms (best of 3)\n", best);
#if !defined(__SANITIZE_ADDRESS__)
	/* emulated (qemu-user) runs are several times slower: no bound there */
	if (!getenv("PMETRICS_EMULATED"))
		assert_true(best < 100);
#endif
}

/* ---- Debian's static python3.11 and arm64 libpython3.11 ------------------------- */

/* The executable PT_LOAD ranges of FILE as readelf lists them. */
static int code_ranges(const char *file, uint64_t (*r)[2], int max)
{
	char cmd[PATH_MAX + 64], line[256];
	FILE *p;
	int n = 0;

	snprintf(cmd, sizeof(cmd), "readelf -lW '%s'", file);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (n < max && fgets(line, sizeof(line), p)) {
		unsigned long long off, va, pa, fs, ms;
		char flags[8] = "";

		if (sscanf(line, " LOAD %llx %llx %llx %llx %llx %7[RWE ]", &off, &va, &pa, &fs, &ms,
			   flags) == 6 && strchr(flags, 'E')) {
			r[n][0] = va;
			r[n++][1] = va + ms;
		}
	}
	pclose(p);
	return n;
}

static bool in_ranges(uint64_t a, uint64_t (*r)[2], int n)
{
	for (int i = 0; i < n; i++)
		if (a >= r[i][0] && a < r[i][1])
			return true;
	return false;
}

/* Non-PIE, no relative relocations: the table is found among the raw
 * words of its data; its LTO build inlined _Py_MakeCoro, so the first
 * call in RETURN_GENERATOR's handler is make_gen(), called from three
 * places, and must not be taken for it. */
static void debian_static_python(void **state)
{
	const char *exe = "/usr/bin/python3.11";
	uint64_t code[8][2], call;
	struct python_hooks h;
	struct refs dyn;
	char why[160], hex[32];
	int n;

	(void)state;
	if (access(exe, R_OK) != 0 || elf_machine(exe) != EM_X86_64) {
		print_message("SKIP: no x86-64 %s\n", exe);
		skip();
	}
	assert_int_equal(python_hooks_find(exe, 3, 11, &h, err, sizeof(err)), 0);
	nm_refs("nm", exe, true, "_PyEval_EvalFrameDefault", &dyn);
	n = code_ranges(exe, code, 8);
	assert_true(n > 0);
	assert_true(h.stripped);
	assert_int_not_equal(h.opcode_table, 0);
	for (int op = 0; op < 256; op++)
		assert_true(in_ranges(python_hooks_opcode_handler(exe, &h, op), code, n));
	assert_in_range(python_hooks_opcode_handler(exe, &h, 75), ref(&dyn, "_PyEval_EvalFrameDefault"),
			ref(&dyn, "_PyEval_EvalFrameDefault") +
				ref_size(&dyn, "_PyEval_EvalFrameDefault") - 1);
	assert_int_equal(h.gen_dealloc.source, HOOK_TYPE_SLOT);
	assert_int_equal(h.gen_send.source, HOOK_METHOD_TABLE);
	assert_int_equal(h.coro_send.source, HOOK_TYPE_SLOT);
	assert_true(in_ranges(h.gen_send.vaddr, code, n) && in_ranges(h.coro_send.vaddr, code, n));
	call = python_hooks_opcode_call(exe, &h, 75, why, sizeof(why));
	assert_true(in_ranges(call, code, n));
	assert_int_equal(h.make_coro.source, HOOK_MISSING);
	snprintf(hex, sizeof(hex), "0x%llx, which 3 places", (unsigned long long)call);
	assert_non_null(strstr(h.make_coro.detail, hex));
}

/* LIB and DEBUG: PATH_MAX bytes each */
static bool arm64_python(char *lib, char *debug)
{
	const char *data = getenv("PMETRICS_TESTDATA") ? getenv("PMETRICS_TESTDATA") : "build/testdata";
	char skipped[PATH_MAX], why[256] = "not downloaded (make unit fetches it)", path[PATH_MAX];
	FILE *f;

	/* absolute: the MiniDebugInfo recipe runs in another directory */
	snprintf(path, sizeof(path), "%s/arm64-python/libpython3.11.so.1.0", data);
	if (realpath(path, lib)) {
		snprintf(path, sizeof(path), "%s/arm64-python/libpython3.11.debug", data);
		if (realpath(path, debug))
			return true;
	}
	snprintf(skipped, sizeof(skipped), "%s/arm64-python/skipped", data);
	f = fopen(skipped, "r");
	if (f) {
		if (!fgets(why, sizeof(why), f))
			snprintf(why, sizeof(why), "an empty skipped file");
		fclose(f);
	}
	print_message("SKIP: Debian's arm64 libpython3.11: %s\n", why);
	return false;
}

/* aarch64: R_AARCH64_RELATIVE relocations, bl decoding, an LTO build
 * (static functions are NAME.lto_priv.0 in its debug file). */
static void debian_arm64_libpython(void **state)
{
	char lib[PATH_MAX], debug[PATH_MAX], why[160];
	struct python_hooks h;
	struct refs syms;

	(void)state;
	if (!arm64_python(lib, debug))
		skip();
	nm_refs("nm", debug, false, WANTED_NAMES, &syms);
	assert_int_equal(python_hooks_find(lib, 3, 11, &h, err, sizeof(err)), 0);
	assert_true(h.stripped);
	assert_int_equal(h.opcode_table, ref(&syms, "opcode_targets"));
	assert_int_equal(h.eval_frame.vaddr, ref(&syms, "_PyEval_EvalFrameDefault"));
	assert_int_equal(h.coro_send.source, HOOK_TYPE_SLOT);
	assert_int_equal(h.coro_send.vaddr, ref(&syms, "PyGen_am_send"));
	assert_int_equal(h.gen_dealloc.source, HOOK_TYPE_SLOT);
	assert_int_equal(h.gen_dealloc.vaddr, ref(&syms, "gen_dealloc"));
	assert_int_equal(h.gen_send.source, HOOK_METHOD_TABLE);
	assert_int_equal(h.gen_send.vaddr, ref(&syms, "gen_send"));
	assert_int_equal(h.gen_throw.vaddr, ref(&syms, "gen_throw"));
	assert_int_equal(h.gen_close.vaddr, ref(&syms, "gen_close"));
	/* bl decoded: make_gen, called from three places, is not _Py_MakeCoro */
	assert_int_equal(python_hooks_opcode_call(lib, &h, 75, why, sizeof(why)),
			 ref(&syms, "make_gen"));
	assert_int_equal(h.make_coro.source, HOOK_MISSING);
}

/* MiniDebugInfo of an LTO build: "gen_send.lto_priv.0" is gen_send. */
static void debian_arm64_minidebuginfo(void **state)
{
	char lib[PATH_MAX], debug[PATH_MAX], mini[PATH_MAX];
	struct python_hooks h;
	struct refs syms;

	(void)state;
	if (!arm64_python(lib, debug) ||
	    !minidebuginfo_copy(debug, lib, "aarch64-linux-gnu-", mini, sizeof(mini)))
		skip();
	nm_refs("nm", debug, false, WANTED_NAMES, &syms);
	assert_int_equal(python_hooks_find(mini, 3, 11, &h, err, sizeof(err)), 0);
	assert_true(h.has_debugdata);
	assert_int_equal(h.gen_send.source, HOOK_DEBUGDATA);
	assert_string_equal(h.gen_send.detail, "gen_send.lto_priv.0 (local)");
	assert_int_equal(h.gen_send.vaddr, ref(&syms, "gen_send"));
	assert_int_equal(h.coro_send.source, HOOK_DEBUGDATA);
	assert_int_equal(h.coro_send.vaddr, ref(&syms, "PyGen_am_send"));
}

/* ---- a synthetic interpreter, for shapes no real build here has --------------------- */

/* A computed-goto loop shaped like CPython's: 256 handlers, 75
 * (RETURN_GENERATOR in 3.12) calling CALL75 first; -DTWIN adds a second
 * table of the same handlers; -DSTRAY puts the byte of an x86 call (e8)
 * inside an instruction before that call. And a PyCoro_Type whose
 * tp_name is TPNAME, with tp_dealloc, tp_as_async->am_send and
 * tp_methods where CPython has them. */
static void write_synthetic(const char *path)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fprintf(f, "__attribute__((noinline, visibility(\"hidden\"))) void *helper(void *f)\n"
		   "{ return (char *)f + 7; }\n"
		   "__attribute__((noinline, visibility(MAKE_VIS))) void *_Py_MakeCoro(void *f)\n"
		   "{ return (char *)f + 1; }\n"
		   "#ifndef TPNAME\n#define TPNAME \"coroutine\"\n#endif\n"
		   "#define STATIC __attribute__((noinline, visibility(\"hidden\")))\n"
		   "STATIC void *gen_send(void *s, void *a) { return (char *)s + 2; }\n"
		   "STATIC void gen_dealloc(void *s) { *(char *)s = 0; }\n"
		   "STATIC int PyGen_am_send(void *a, void *b, void **c) { *c = b; return 1; }\n"
		   "static void *as_async[4] = { 0, 0, 0, (void *)PyGen_am_send };\n"
		   "static struct { const char *name; void *meth; int flags; const char *doc; }\n"
		   "methods[] = { { \"throw\", (void *)helper, 1, 0 }, { \"send\", (void *)gen_send, 1, 0 },\n"
		   "\t{ 0, 0, 0, 0 } };\n"
		   "void *PyCoro_Type[52] = { [3] = TPNAME, [6] = (void *)gen_dealloc, [10] = as_async,\n"
		   "\t[29] = methods };\n"
		   "long _PyEval_EvalFrameDefault(const unsigned char *code, void *f)\n{\n"
		   "\tlong r = 0;\n\tstatic void *opcode_targets[256] = {");
	for (int i = 0; i < 256; i++)
		fprintf(f, "%s&&op_%d", i ? ", " : "", i);
	/* in another order: GCC would merge two tables just alike */
	fprintf(f, "};\n#ifdef TWIN\n\tstatic void *twin[256] = {");
	for (int i = 0; i < 256; i++)
		fprintf(f, "%s&&op_%d", i ? ", " : "", 255 - i);
	fprintf(f, "};\n\tif (f == code)\n\t\tgoto *twin[*code++];\n#endif\n"
		   "\tgoto *opcode_targets[*code++];\n");
	for (int i = 0; i < 256; i++)
		fprintf(f, "op_%d:\n\t%s;\n\tif (!*code)\n\t\treturn r;\n"
			   "\tgoto *opcode_targets[*code++];\n", i,
			i == 75 ? "\n#ifdef STRAY\n\tr ^= 0x00000010e8000000L;\n#endif\n"
				  "\tr += (long)CALL75(f)" :
			i == 76 ? "r += (long)helper(f)" : "r = r * 3 + 1");
	fprintf(f, "}\n");
	fclose(f);
}

/* Builds the synthetic interpreter with TOOLS (a gcc prefix) and FLAGS
 * into OUT (unstripped) and its strip --strip-unneeded copy OUT.s. */
static bool build_synthetic(const char *tools, const char *name, const char *flags, char *out,
			    size_t len, char *stripped)
{
	char src[PATH_MAX];

	snprintf(src, sizeof(src), "%s/other.c", tmp);
	/* another file's static of the same name: two local gen_dealloc */
	if (access(src, R_OK) != 0) {
		const char *other = "static void gen_dealloc(void *s) { *(char *)s = 1; }\n"
				    "void *other_dealloc = (void *)gen_dealloc;\n";

		write_file(src, other, strlen(other));
	}
	snprintf(src, sizeof(src), "%s/synthetic.c", tmp);
	if (access(src, R_OK) != 0)
		write_synthetic(src);
	snprintf(out, len, "%s/%s%s.so", tmp, tools, name);
	snprintf(stripped, len, "%s.s", out);
	return run("%sgcc -O2 -shared -fPIC %s -o '%s' '%s' 2>/dev/null && "
		   "%sstrip --strip-unneeded -o '%s' '%s'", tools, flags, out, src, tools, stripped,
		   out) == 0;
}

static void synthetic_interpreter(const char *tools, int machine)
{
	char so[PATH_MAX], s[PATH_MAX], path[PATH_MAX], why[160];
	struct python_hooks h;
	struct refs syms;

	if (!build_synthetic(tools, "hidden", "-DMAKE_VIS='\"hidden\"' -DCALL75=_Py_MakeCoro", so,
			     sizeof(so), s)) {
		print_message("SKIP: cannot build with %sgcc\n", tools);
		skip();
	}
	assert_int_equal(elf_machine(s), machine);
	/* static _Py_MakeCoro, stripped: the opcode path, found */
	nm_refs("nm", so, false, WANTED_NAMES, &syms);
	assert_int_equal(python_hooks_find(s, 3, 12, &h, err, sizeof(err)), 0);
	assert_int_equal(h.opcode_table, ref(&syms, "opcode_targets"));
	assert_int_equal(h.make_coro.source, HOOK_OPCODE_CALL);
	assert_int_equal(h.make_coro.vaddr, ref(&syms, "_Py_MakeCoro"));
	assert_int_equal(h.gen_dealloc.source, HOOK_TYPE_SLOT);
	assert_int_equal(h.gen_dealloc.vaddr, ref(&syms, "gen_dealloc"));
	assert_int_equal(h.coro_send.source, HOOK_TYPE_SLOT);
	assert_int_equal(h.coro_send.vaddr, ref(&syms, "PyGen_am_send"));
	assert_int_equal(h.gen_send.source, HOOK_METHOD_TABLE);
	assert_int_equal(h.gen_send.vaddr, ref(&syms, "gen_send"));
	assert_int_equal(h.gen_throw.vaddr, ref(&syms, "helper"));
	assert_int_equal(h.gen_close.source, HOOK_MISSING);
	/* not the coroutine type: its slots are not used */
	assert_true(build_synthetic(tools, "generator",
				    "-DTPNAME='\"generator\"' -DMAKE_VIS='\"hidden\"' -DCALL75=_Py_MakeCoro",
				    so, sizeof(so), s));
	assert_int_equal(python_hooks_find(s, 3, 12, &h, err, sizeof(err)), 0);
	assert_int_equal(h.gen_dealloc.source, HOOK_MISSING);
	assert_int_equal(h.gen_send.source, HOOK_MISSING);
	assert_int_equal(h.make_coro.source, HOOK_OPCODE_CALL);
	/* exported: called through the PLT */
	assert_true(build_synthetic(tools, "exported", "-DMAKE_VIS='\"default\"' -DCALL75=_Py_MakeCoro",
				    so, sizeof(so), s));
	nm_refs("nm", so, false, WANTED_NAMES, &syms);
	assert_int_equal(python_hooks_find(s, 3, 12, &h, err, sizeof(err)), 0);
	assert_int_equal(python_hooks_opcode_call(s, &h, 75, why, sizeof(why)),
			 ref(&syms, "_Py_MakeCoro"));
	/* MiniDebugInfo with every symbol: it comes before .dynsym */
	assert_int_equal(run("cd '%s' && %sobjcopy --only-keep-debug '%s' all.debug && "
			     "%sobjcopy --strip-debug all.debug all.mini && xz -f all.mini && "
			     "cp '%s' all.so && %sobjcopy --add-section .gnu_debugdata=all.mini.xz all.so",
			     tmp, tools, so, tools, s, tools), 0);
	snprintf(path, sizeof(path), "%s/all.so", tmp);
	assert_int_equal(python_hooks_find(path, 3, 12, &h, err, sizeof(err)), 0);
	assert_int_equal(h.make_coro.source, HOOK_DEBUGDATA);
	assert_int_equal(h.make_coro.vaddr, ref(&syms, "_Py_MakeCoro"));
	assert_int_equal(h.gen_dealloc.source, HOOK_DEBUGDATA);
	/* two static gen_dealloc in .symtab: neither trusted, the slot is */
	snprintf(path, sizeof(path), "-DMAKE_VIS='\"hidden\"' -DCALL75=_Py_MakeCoro '%s/other.c'",
		 tmp);
	assert_true(build_synthetic(tools, "twodeallocs", path, so, sizeof(so), s));
	assert_int_equal(python_hooks_find(so, 3, 12, &h, err, sizeof(err)), 0);
	assert_int_equal(h.gen_dealloc.source, HOOK_TYPE_SLOT);
	assert_int_equal(h.gen_send.source, HOOK_SYMTAB);
	/* the first call goes to a function two handlers call: refused */
	assert_true(build_synthetic(tools, "shared", "-DMAKE_VIS='\"hidden\"' -DCALL75=helper", so,
				    sizeof(so), s));
	assert_int_equal(python_hooks_find(s, 3, 12, &h, err, sizeof(err)), 0);
	assert_int_equal(h.make_coro.source, HOOK_MISSING);
	assert_non_null(strstr(h.make_coro.detail, "which 2 places call"));
	/* two tables of the same handlers: neither is taken */
	assert_true(build_synthetic(tools, "twin",
				    "-DTWIN -DMAKE_VIS='\"hidden\"' -DCALL75=_Py_MakeCoro", so,
				    sizeof(so), s));
	assert_int_equal(python_hooks_find(s, 3, 12, &h, err, sizeof(err)), 0);
	assert_int_equal(h.opcode_table, 0);
	assert_non_null(strstr(h.note, "such windows"));
	assert_int_equal(h.make_coro.source, HOOK_MISSING);
}

static void synthetic_x86_64(void **state)
{
	char so[PATH_MAX], s[PATH_MAX], why[160];
	struct python_hooks h;
	struct refs syms;

	(void)state;
	synthetic_interpreter("x86_64-linux-gnu-", EM_X86_64);
	/* a PLT for indirect branch tracking: endbr64 first */
	if (!build_synthetic("x86_64-linux-gnu-", "ibt",
			     "-fcf-protection=full -Wl,-z,ibtplt -DMAKE_VIS='\"default\"' "
			     "-DCALL75=_Py_MakeCoro", so, sizeof(so), s))
		skip();
	nm_refs("nm", so, false, WANTED_NAMES, &syms);
	assert_int_equal(python_hooks_find(s, 3, 12, &h, err, sizeof(err)), 0);
	assert_int_equal(python_hooks_opcode_call(s, &h, 75, why, sizeof(why)),
			 ref(&syms, "_Py_MakeCoro"));
	/* movabs $0x10e8000000: "e8 10 00 00 00" would be a call into the
	 * handler itself, no function start: passed over */
	assert_true(build_synthetic("x86_64-linux-gnu-", "stray",
				    "-DSTRAY -DMAKE_VIS='\"hidden\"' -DCALL75=_Py_MakeCoro", so,
				    sizeof(so), s));
	nm_refs("nm", so, false, WANTED_NAMES, &syms);
	assert_int_equal(python_hooks_find(s, 3, 12, &h, err, sizeof(err)), 0);
	assert_int_equal(h.make_coro.source, HOOK_OPCODE_CALL);
	assert_int_equal(h.make_coro.vaddr, ref(&syms, "_Py_MakeCoro"));
}

static void synthetic_aarch64(void **state)
{
	(void)state;
	synthetic_interpreter("aarch64-linux-gnu-", EM_AARCH64);
}

/* ---- relocations packed as RELR ------------------------------------------------- */

static void relr_pointers(void **state)
{
	char src[PATH_MAX], so[PATH_MAX];
	struct elf_image *img;
	struct elf_pointer p;
	struct refs syms;
	uint64_t table, f, g;

	(void)state;
	snprintf(src, sizeof(src), "%s/relr.c", tmp);
	snprintf(so, sizeof(so), "%s/relr.so", tmp);
	/* static: pointers to them are relative relocations, not symbolic */
	if (run("printf 'static void f(void){}\\nstatic void g(void){}\\n"
		"void *table[70] = { f, g, [69] = f };\\n' "
		">'%s' && cc -shared -fPIC -Wl,-z,pack-relative-relocs -o '%s' '%s' 2>/dev/null && "
		"readelf -SW '%s' | grep -q RELR", src, so, src, so) != 0) {
		print_message("SKIP: no C compiler and linker that pack relocations as RELR\n");
		skip();
	}
	nm_refs("nm", so, false, "f|g|table", &syms);
	table = ref(&syms, "table");
	f = ref(&syms, "f");
	g = ref(&syms, "g");
	assert_int_equal(elf_image_open(so, &img, err, sizeof(err)), 0);
	assert_int_equal(elf_image_pointer_at(img, table, &p), 0);
	assert_int_equal(p.kind, ELF_PTR_RELATIVE);
	assert_int_equal(p.value, f);
	assert_int_equal(elf_image_pointer_at(img, table + 8, &p), 0);
	assert_int_equal(p.value, g);
	/* 69 words on: past one RELR bitmap (63 words) */
	assert_int_equal(elf_image_pointer_at(img, table + 69 * 8, &p), 0);
	assert_int_equal(p.kind, ELF_PTR_RELATIVE);
	assert_int_equal(p.value, f);
	assert_int_equal(elf_image_pointer_at(img, table + 16, &p), 0);
	assert_int_equal(p.kind, ELF_PTR_RAW);
	assert_int_equal(p.value, 0);
	elf_image_close(img);
}

/* ---- broken files ------------------------------------------------------------------ */

static int find_in(const char *path, struct python_hooks *h)
{
	err[0] = '\0';
	return python_hooks_find(path, 3, 12, h, err, sizeof(err));
}

static void not_elf_or_missing(void **state)
{
	char path[PATH_MAX];
	struct python_hooks h;

	(void)state;
	snprintf(path, sizeof(path), "%s/text", tmp);
	write_file(path, "#!/bin/sh\necho hello\n", 21);
	assert_int_equal(find_in(path, &h), -ENOEXEC);
	assert_non_null(strstr(err, "not an ELF file"));
	snprintf(path, sizeof(path), "%s/absent", tmp);
	assert_int_equal(find_in(path, &h), -ENOENT);
	assert_non_null(strstr(err, "absent"));
}

/* A bare ELF header: no sections, so no .dynsym; and a 32-bit one. */
static void elf_without_symbols(void **state)
{
	Elf64_Ehdr eh = { .e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64, ELFDATA2LSB,
				       EV_CURRENT },
			  .e_type = ET_DYN, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
			  .e_ehsize = sizeof(Elf64_Ehdr) };
	Elf32_Ehdr eh32 = { .e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS32,
					 ELFDATA2LSB, EV_CURRENT },
			    .e_type = ET_DYN, .e_machine = EM_386, .e_version = EV_CURRENT,
			    .e_ehsize = sizeof(Elf32_Ehdr) };
	char path[PATH_MAX];
	struct python_hooks h;
	struct elf_image *img;

	(void)state;
	snprintf(path, sizeof(path), "%s/bare.so", tmp);
	write_file(path, &eh, sizeof(eh));
	assert_int_equal(find_in(path, &h), -ENOEXEC);
	assert_non_null(strstr(err, "no symbol table (.dynsym or .symtab)"));
	/* no .eh_frame_hdr: no answer about function starts */
	assert_int_equal(elf_image_open(path, &img, err, sizeof(err)), 0);
	assert_int_equal(elf_image_function_start(img, 0x1000), -1);
	elf_image_close(img);
	write_file(path, &eh32, sizeof(eh32));
	assert_int_equal(find_in(path, &h), -ENOEXEC);
	assert_non_null(strstr(err, "not a 64-bit"));
}

/* Every cut of a real ELF file: an error or missing points, never a
 * crash (this test matters most under ASan). */
static void truncated_elf(void **state)
{
	char lib[PATH_MAX], src[PATH_MAX], path[PATH_MAX];
	struct python_hooks h;
	struct stat st;

	(void)state;
	if (pyenv_lib(12, lib, sizeof(lib)))
		stripped_copy(lib, src, sizeof(src));
	else
		snprintf(src, sizeof(src), "/proc/self/exe");
	assert_int_equal(stat(src, &st), 0);
	snprintf(path, sizeof(path), "%s/cut", tmp);
	for (off_t cut = 0; cut < st.st_size; cut = cut < 4096 ? cut * 2 + 16 : cut + st.st_size / 7) {
		int rc;

		assert_int_equal(run("head -c %lld '%s' >'%s'", (long long)cut, src, path), 0);
		rc = find_in(path, &h);
		if (rc != 0 && !err[0])
			fail_msg("cut at %lld: error %d without a reason", (long long)cut, rc);
		if (cut < 4096 && rc == 0)
			fail_msg("cut at %lld: no error", (long long)cut);
	}
	/* the end of a file cut short of its last byte */
	assert_int_equal(run("head -c %lld '%s' >'%s'", (long long)st.st_size - 1, src, path), 0);
	find_in(path, &h);
}

/* Adds GROW to the p_filesz of every PT_LOAD of PATH, and moves the
 * read-only ones' p_offset to MOVE when it is not 0. */
static void patch_segments(const char *path, uint64_t grow, uint64_t move)
{
	FILE *f = fopen(path, "r+");
	Elf64_Ehdr eh;

	assert_non_null(f);
	assert_int_equal(fread(&eh, sizeof(eh), 1, f), 1);
	for (int i = 0; i < eh.e_phnum; i++) {
		long at = (long)(eh.e_phoff + (uint64_t)i * eh.e_phentsize);
		Elf64_Phdr ph;

		assert_int_equal(fseek(f, at, SEEK_SET), 0);
		assert_int_equal(fread(&ph, sizeof(ph), 1, f), 1);
		if (ph.p_type != PT_LOAD)
			continue;
		ph.p_filesz += grow;
		if (move && !(ph.p_flags & (PF_W | PF_X)))
			ph.p_offset = move;
		assert_int_equal(fseek(f, at, SEEK_SET), 0);
		assert_int_equal(fwrite(&ph, sizeof(ph), 1, f), 1);
	}
	fclose(f);
}

/* Segments that say they hold more of the file than it has: read up to
 * its end and no further. */
static void segments_beyond_the_file(void **state)
{
	char lib[PATH_MAX], stripped[PATH_MAX], path[PATH_MAX];
	struct python_hooks h;

	(void)state;
	if (!pyenv_lib(12, lib, sizeof(lib)))
		skip();
	stripped_copy(lib, stripped, sizeof(stripped));
	snprintf(path, sizeof(path), "%s/longsegments.so", tmp);
	assert_int_equal(run("cp '%s' '%s'", stripped, path), 0);
	patch_segments(path, 1ull << 30, 0);
	assert_int_equal(find_in(path, &h), 0);
	assert_int_equal(h.gen_dealloc.source, HOOK_TYPE_SLOT);
	assert_int_equal(h.make_coro.source, HOOK_OPCODE_CALL);
	/* read-only data past the end: no tp_name to check the type by, no
	 * .eh_frame_hdr to check a call target by */
	assert_int_equal(run("cp '%s' '%s'", stripped, path), 0);
	patch_segments(path, 0, 1ull << 40);
	assert_int_equal(find_in(path, &h), 0);
	assert_int_equal(h.gen_dealloc.source, HOOK_MISSING);
	assert_int_equal(h.make_coro.source, HOOK_MISSING);
	assert_int_equal(h.eval_frame.source, HOOK_DYNSYM);
}

/* A .gnu_debugdata that is not xz, or xz of something not ELF: noted,
 * the other sources still used. */
static void broken_debugdata(void **state)
{
	char lib[PATH_MAX], stripped[PATH_MAX], path[PATH_MAX];
	struct python_hooks h;

	(void)state;
	if (!pyenv_lib(12, lib, sizeof(lib)) || !have("xz") || !have("objcopy"))
		skip();
	stripped_copy(lib, stripped, sizeof(stripped));
	snprintf(path, sizeof(path), "%s/baddebugdata.so", tmp);
	assert_int_equal(run("cd '%s' && printf 'not xz at all' >junk && cp '%s' '%s' && "
			     "objcopy --add-section .gnu_debugdata=junk '%s'",
			     tmp, stripped, path, path), 0);
	assert_int_equal(find_in(path, &h), 0);
	assert_true(h.has_debugdata);
	assert_non_null(strstr(h.note, "cannot decompress .gnu_debugdata"));
	assert_int_equal(h.gen_send.source, HOOK_METHOD_TABLE);
	assert_int_equal(h.make_coro.source, HOOK_OPCODE_CALL);
	assert_int_equal(run("cd '%s' && printf 'not ELF' | xz >junk.xz && cp '%s' '%s' && "
			     "objcopy --add-section .gnu_debugdata=junk.xz '%s'",
			     tmp, stripped, path, path), 0);
	assert_int_equal(find_in(path, &h), 0);
	assert_non_null(strstr(h.note, "does not hold an ELF file"));
	assert_int_equal(h.gen_dealloc.source, HOOK_TYPE_SLOT);
}

static void source_names(void **state)
{
	(void)state;
	assert_string_equal(hook_source_name(HOOK_SYMTAB), ".symtab");
	assert_string_equal(hook_source_name(HOOK_DEBUGDATA), ".gnu_debugdata");
	assert_string_equal(hook_source_name(HOOK_DYNSYM), ".dynsym");
	assert_string_equal(hook_source_name(HOOK_TYPE_SLOT), "type slot");
	assert_string_equal(hook_source_name(HOOK_METHOD_TABLE), "method table");
	assert_string_equal(hook_source_name(HOOK_OPCODE_CALL), "opcode handler");
	assert_string_equal(hook_source_name(HOOK_MISSING), "missing");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(stripped_3_8),
		cmocka_unit_test(stripped_3_9),
		cmocka_unit_test(stripped_3_10),
		cmocka_unit_test(stripped_3_11),
		cmocka_unit_test(stripped_3_12),
		cmocka_unit_test(stripped_3_13),
		cmocka_unit_test(unstripped_3_8),
		cmocka_unit_test(unstripped_3_9),
		cmocka_unit_test(unstripped_3_10),
		cmocka_unit_test(unstripped_3_11),
		cmocka_unit_test(unstripped_3_12),
		cmocka_unit_test(unstripped_3_13),
		cmocka_unit_test(minidebuginfo_3_8),
		cmocka_unit_test(minidebuginfo_3_9),
		cmocka_unit_test(minidebuginfo_3_10),
		cmocka_unit_test(minidebuginfo_3_11),
		cmocka_unit_test(minidebuginfo_3_12),
		cmocka_unit_test(minidebuginfo_3_13),
		cmocka_unit_test(opcode_call_finds_make_coro),
		cmocka_unit_test(function_starts_from_eh_frame_hdr),
		cmocka_unit_test(stripped_3_12_is_fast),
		cmocka_unit_test(debian_static_python),
		cmocka_unit_test(debian_arm64_libpython),
		cmocka_unit_test(debian_arm64_minidebuginfo),
		cmocka_unit_test(synthetic_x86_64),
		cmocka_unit_test(synthetic_aarch64),
		cmocka_unit_test(relr_pointers),
		cmocka_unit_test(not_elf_or_missing),
		cmocka_unit_test(elf_without_symbols),
		cmocka_unit_test(truncated_elf),
		cmocka_unit_test(segments_beyond_the_file),
		cmocka_unit_test(broken_debugdata),
		cmocka_unit_test(source_names),
	};

	return cmocka_run_group_tests(tests, setup_tmp, remove_tmp);
}
