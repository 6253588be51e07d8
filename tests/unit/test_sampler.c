// SPDX-License-Identifier: MIT
/* The sampler's pure parts: --sample's rate, the qualified name of a
 * 3.8-3.10 function read from its source, and which of a sample's two
 * native walks is believed; and which switch-out a switch-in ends, and
 * how an exec names its process, on a real sampler of this process
 * (perf_event_open, never started). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "python_stack.h"
#include "sampler.h"
#include "sampler_source.h"
#include "sampler_unwind.h"
#include "symbolizer.h"

static char err[512];

static int parse(const char *arg, unsigned int *hz)
{
	return sampler_parse_hz(arg, 1000, hz, err, sizeof(err));
}

static void rates_in_range(void **state)
{
	unsigned int hz = 0;

	(void)state;
	assert_int_equal(parse("1", &hz), 0);
	assert_int_equal(hz, 1);
	assert_int_equal(parse("99", &hz), 0);
	assert_int_equal(hz, 99);
	assert_int_equal(parse("1000", &hz), 0);
	assert_int_equal(hz, 1000);
}

static void bad_rates_name_the_limit(void **state)
{
	static const char *const bad[] = { "0", "1001", "abc", "99x", "", "-5", "+5", " 5",
					   "99999999999999999999999" };
	unsigned int hz = 7;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i], &hz), -1);
		assert_non_null(strstr(err, "a whole number from 1 to 1000"));
		assert_null(strchr(err, '\n'));
	}
	assert_int_equal(hz, 7);
}

static void the_limit_is_pmetrics_or_the_kernels(void **state)
{
	unsigned int max = sampler_max_rate();

	(void)state;
	assert_true(max >= 1 && max <= SAMPLER_MAX_HZ);
	assert_true(SAMPLER_DEFAULT_HZ <= SAMPLER_MAX_HZ);
}

static const char SRC[] =
	"import asyncio\n"                       /* 1 */
	"\n"                                     /* 2 */
	"class Worker:\n"                        /* 3 */
	"    async def inner(self):\n"           /* 4 */
	"        return 1\n"                     /* 5 */
	"\n"                                     /* 6 */
	"    def outer(self):\n"                 /* 7 */
	"        def helper():\n"                /* 8 */
	"            return 2\n"                 /* 9 */
	"        return helper\n"                /* 10 */
	"\n"                                     /* 11 */
	"def plain():\n"                         /* 12 */
	"    pass\n";                            /* 13 */

static void qualname(int line, const char *name, const char *want)
{
	char out[256];

	python_source_qualname(SRC, sizeof(SRC) - 1, line, name, out, sizeof(out));
	assert_string_equal(out, want);
}

static void qualnames_from_the_source(void **state)
{
	(void)state;
	qualname(4, "inner", "Worker.inner");
	qualname(7, "outer", "Worker.outer");
	qualname(8, "helper", "Worker.outer.<locals>.helper");
	qualname(12, "plain", "plain");
}

static void a_source_that_does_not_show_it_gives_the_name(void **state)
{
	(void)state;
	qualname(5, "inner", "inner");   /* not a def line */
	qualname(40, "gone", "gone");    /* past the end: the file changed */
	qualname(12, "other", "other");  /* another function's line */
}

/* Addresses of one made-up call chain, leaf first: heavy, main,
 * __libc_start_call_main, __libc_start_main, _start. */
enum { HEAVY = 0x1100, MAIN = 0x1200, CALL_MAIN = 0x7100, START_MAIN = 0x7200, START = 0x1010 };

static void dwarf_believed_only_when_it_goes_further(void **state)
{
	const uint64_t fp[] = { HEAVY, MAIN, CALL_MAIN };
	const uint64_t dwarf[] = { HEAVY, MAIN };

	(void)state;
	assert_false(unwind_prefer_dwarf(fp, 3, false, dwarf, 2, false));
	assert_false(unwind_prefer_dwarf(fp, 2, false, dwarf, 2, false));
	assert_true(unwind_prefer_dwarf(fp, 1, false, dwarf, 2, false));
}

/* A chain broken by code without frame pointers (x86: the frame pointer
 * holds anything) ends anywhere, so the longer walk wins even where the
 * two differ. */
static void a_broken_chain_loses_to_a_longer_walk(void **state)
{
	const uint64_t fp[] = { HEAVY, 0xdead0 };
	const uint64_t dwarf[] = { HEAVY, MAIN, CALL_MAIN, START_MAIN, START };

	(void)state;
	assert_true(unwind_prefer_dwarf(fp, 2, false, dwarf, 5, false));
}

/* arm64 code without frame pointers: the chain reaches _start but skips
 * main. DWARF holds all the chain's addresses in order, and more. */
static void a_whole_chain_that_skipped_frames_loses(void **state)
{
	const uint64_t fp[] = { HEAVY, START_MAIN, START };
	const uint64_t dwarf[] = { HEAVY, MAIN, CALL_MAIN, START_MAIN, START };

	(void)state;
	assert_true(unwind_prefer_dwarf(fp, 3, true, dwarf, 5, false));
}

/* A whole chain against a longer walk that left it (a tail read from the
 * live stack after the thread moved on, or CFI that ran astray), or that
 * holds its addresses out of order: the chain stands. */
static void a_whole_chain_stands_against_a_walk_that_left_it(void **state)
{
	const uint64_t fp[] = { HEAVY, MAIN, CALL_MAIN, START_MAIN, START };
	const uint64_t astray[] = { HEAVY, MAIN, 0x1300, 0x1400, 0x1500, 0x1600 };
	const uint64_t shuffled[] = { HEAVY, CALL_MAIN, MAIN, START_MAIN, START, 0x1600 };

	(void)state;
	assert_false(unwind_prefer_dwarf(fp, 5, true, astray, 6, false));
	assert_false(unwind_prefer_dwarf(fp, 5, true, shuffled, 6, false));
}

/* Recursion repeats return addresses: each of the chain's must have a
 * place of its own, in order, in the walk. */
static void repeated_addresses_each_need_their_own_place(void **state)
{
	const uint64_t fp[] = { HEAVY, MAIN, MAIN, START };
	const uint64_t deeper[] = { HEAVY, MAIN, MAIN, MAIN, CALL_MAIN, START };
	const uint64_t shallower[] = { HEAVY, MAIN, CALL_MAIN, START_MAIN, START };

	(void)state;
	assert_true(unwind_prefer_dwarf(fp, 4, true, deeper, 6, false));
	assert_false(unwind_prefer_dwarf(fp, 4, true, shallower, 5, false));
}

/* Recursion deeper than the walk's frame limit: the walk never reaches
 * the chain's root, and is still the better stack. */
static void a_walk_cut_at_its_limit_is_believed(void **state)
{
	uint64_t deep[8] = { HEAVY };
	const uint64_t fp[] = { HEAVY, START_MAIN, START };

	(void)state;
	for (int i = 1; i < 8; i++)
		deep[i] = MAIN;
	assert_true(unwind_prefer_dwarf(fp, 3, true, deep, 8, true));
	assert_false(unwind_prefer_dwarf(fp, 3, true, deep, 8, false));
}

/* The trampoline of pending uretprobes (T) in a DWARF walk, where the
 * kernel's chain has the real return addresses: taken from the chain
 * when the walks agree around it, one slot or a run of them. */
static void trampolines_take_the_chains_returns(void **state)
{
	const uint64_t T = 0x7fffffffe000;
	uint64_t one[] = { 1, T, 3, 4, 5, 6 }, run[] = { 1, T, T, 4, 5 }, astray[] = { 1, T, 9, 4 },
		 two[] = { 1, 7, 8, 4 };
	const uint64_t fp1[] = { 1, 2, 3, 4 }, fp2[] = { 1, 2, 3, 4, 5 };
	(void)state;

	unwind_take_chain_returns(one, 6, fp1, 4, NULL);
	assert_memory_equal(one, ((uint64_t[]){ 1, 2, 3, 4, 5, 6 }), sizeof(one));
	unwind_take_chain_returns(run, 5, fp2, 5, NULL);
	assert_memory_equal(run, fp2, sizeof(run));
	/* no agreement after the run: a walk that went elsewhere is left */
	unwind_take_chain_returns(astray, 4, fp1, 4, NULL);
	assert_memory_equal(astray, ((uint64_t[]){ 1, T, 9, 4 }), sizeof(astray));
	/* two different addresses are two frames the walks disagree on */
	unwind_take_chain_returns(two, 4, fp1, 4, NULL);
	assert_memory_equal(two, ((uint64_t[]){ 1, 7, 8, 4 }), sizeof(two));
	/* the trampoline known: it alone is replaced, never an address the
	 * walk read where the chain (a kernel's fix by list order) differs */
	uint64_t known[] = { 1, 7, 3, 4 }, tramp[] = { 1, T, 3, 4 };
	const struct pending_returns p = { T, NULL, 0 };

	unwind_take_chain_returns(known, 4, fp1, 4, &p);
	assert_memory_equal(known, ((uint64_t[]){ 1, 7, 3, 4 }), sizeof(known));
	unwind_take_chain_returns(tramp, 4, fp1, 4, &p);
	assert_memory_equal(tramp, fp1, sizeof(tramp));
}

#if defined(__aarch64__)
#define TEST_REG_FP 29
#define TEST_REG_SP 31
/* arm64: a function's frame record sits just below its entry stack
 * pointer, so its saved link register is 8 bytes under it */
#define ENTRY_ABOVE_SLOT 8
#else
#define TEST_REG_FP 6
#define TEST_REG_SP 7
/* x86-64: the call pushed the return address at the entry stack pointer */
#define ENTRY_ABOVE_SLOT 0
#endif

static const uint64_t T = 0x7ffff7ff9000, SP = 0x7ffd0000;

/* A trampoline read from a stack slot is the return of the function
 * whose slot it is: x86-64 exactly its entry stack pointer (an entry a
 * longjmp left behind matches nothing); arm64 the lowest entry above the
 * slot, never a callee's that entered right at it. */
static void a_slot_names_its_own_return(void **state)
{
	const struct sampler_return ret[] = {
		{ SP + 0x18 + ENTRY_ABOVE_SLOT, 0xa1 },
		{ SP + 0x28, 0xdead }, /* no slot of x86-64 holds it */
		{ SP + 0x40 + ENTRY_ABOVE_SLOT, 0xc3 },
	};
	const struct pending_returns p = { T, ret, 3 };

	(void)state;
	assert_int_equal(unwind_return_at(&p, SP + 0x18), 0xa1);
	assert_int_equal(unwind_return_at(&p, SP + 0x40), 0xc3);
	assert_int_equal(unwind_return_at(&p, SP + 0x80), 0);
	assert_true(unwind_is_trampoline(&p, T));
	assert_false(unwind_is_trampoline(&p, T + 8));
	assert_false(unwind_is_trampoline(NULL, T));
#if defined(__aarch64__)
	/* a callee that entered at the slot is not the slot's function */
	assert_int_equal(unwind_return_at(&p, SP + 0x20), 0xdead);
	/* saved by code with pointer authentication: signed */
	assert_true(unwind_is_trampoline(&p, T | (0x2bull << 48)));
#else
	assert_int_equal(unwind_return_at(&p, SP + 0x30), 0);
	assert_false(unwind_is_trampoline(&p, T | (0x2bull << 48)));
#endif
}

/* Writes a frame record at ADDR of the stack copy W (from SP): the
 * caller's record NEXT and the return RET. */
static void frame_record(uint64_t *w, uint64_t addr, uint64_t next, uint64_t ret)
{
	w[(addr - SP) / 8] = next;
	w[(addr - SP) / 8 + 1] = ret;
}

/* Kernels before 6.11 leave the trampoline in the chain: each chain
 * entry gets the return of the slot it was read from, found by
 * following the frame records through the stack copy. A probed function
 * built without frame pointers (B) is on the list but not in the chain,
 * and must not shift the returns of those above it. */
static void chain_returns_go_by_slot(void **state)
{
	const struct sampler_return ret[] = {
		{ SP + 0x18 + ENTRY_ABOVE_SLOT, 0xa1 }, /* A: record at SP+0x10 */
		{ SP + 0x48, 0xb9 },                    /* B: no frame record */
		{ SP + 0x58 + ENTRY_ABOVE_SLOT, 0xc3 }, /* C: record at SP+0x50 */
	};
	const struct pending_returns p = { T, ret, 3 };
	uint64_t regs[40] = { 0 }, words[16] = { 0 }, chain[] = { 0x10, T, 0x77, T };

	(void)state;
	regs[TEST_REG_SP] = SP;
	regs[TEST_REG_FP] = SP + 0x10;
	frame_record(words, SP + 0x10, SP + 0x30, T);
	frame_record(words, SP + 0x30, SP + 0x50, 0x77);
	frame_record(words, SP + 0x50, 0, T);
	unwind_restore_chain(chain, 4, regs, &(struct stack_view){ SP, (const uint8_t *)words,
								sizeof(words), NULL, NULL }, &p);
	assert_memory_equal(chain, ((uint64_t[]){ 0x10, 0xa1, 0x77, 0xc3 }), sizeof(chain));
}

/* The words of the test's live stack past a copy: ARG is the whole
 * stack from SP, 64 words. */
static bool read_test_stack(uint64_t addr, uint64_t *word, void *arg)
{
	if (addr < SP || addr - SP > 63 * 8)
		return false;
	*word = ((const uint64_t *)arg)[(addr - SP) / 8];
	return true;
}

/* A kernel from 6.11 puts returns back in its chain by the list's order
 * alone: a chained entry (G, a tail call from probed F into probed G,
 * repeating F's stack and return) gives H's slot F's return. The
 * slots, still holding the trampoline, say whose each is; the records
 * are followed past the copy (here 32 bytes) in the live stack. */
static void chain_returns_by_slot_over_the_kernels_order(void **state)
{
	const struct sampler_return ret[] = {
		{ SP + 0x18 + ENTRY_ABOVE_SLOT, 0xf1 }, /* G, chained: F's slot and return */
		{ SP + 0x18 + ENTRY_ABOVE_SLOT, 0xf1 }, /* F */
		{ SP + 0x58 + ENTRY_ABOVE_SLOT, 0x41 }, /* H: record at SP+0x50, past the copy */
	};
	const struct pending_returns p = { T, ret, 3 };
	uint64_t regs[40] = { 0 }, words[64] = { 0 }, chain[] = { 0x10, 0xf1, 0xf1, 0x99 };

	(void)state;
	regs[TEST_REG_SP] = SP;
	regs[TEST_REG_FP] = SP + 0x10;
	frame_record(words, SP + 0x10, SP + 0x50, T);
	frame_record(words, SP + 0x50, SP + 0x70, T);
	frame_record(words, SP + 0x70, 0, 0x99);
	unwind_restore_chain(chain, 4, regs, &(struct stack_view){ SP, (const uint8_t *)words, 32,
								read_test_stack, words }, &p);
	assert_memory_equal(chain, ((uint64_t[]){ 0x10, 0xf1, 0x41, 0x99 }), sizeof(chain));
}

/* Without the slots (no stack copy, or records past it) the returns go
 * in the list's order: a chained entry (a tail call into a probed
 * function: the kernel's second entry repeats the first's stack and
 * return) counts once, and a function whose entry is at or below the
 * frame pointer has not made its frame record, so is not in the chain. */
static void chain_returns_in_order_without_slots(void **state)
{
	const struct sampler_return chained[] = { { SP + 0x18, 0xf1 }, { SP + 0x18, 0xf1 },
						  { SP + 0x58, 0x41 } };
	const struct sampler_return prologue[] = { { SP + 0x08, 0xa0 }, { SP + 0x200, 0xb0 } };
	const struct pending_returns p1 = { T, chained, 3 }, p2 = { T, prologue, 2 };
	uint64_t one[] = { 0x10, T, T }, two[] = { 0x10, T }, regs[40] = { 0 }, words[4] = { 0 };

	(void)state;
	unwind_restore_chain(one, 3, NULL, NULL, &p1);
	assert_memory_equal(one, ((uint64_t[]){ 0x10, 0xf1, 0x41 }), sizeof(one));
	regs[TEST_REG_SP] = SP;
	regs[TEST_REG_FP] = SP + 0x100; /* past the 32-byte copy */
	unwind_restore_chain(two, 2, regs, &(struct stack_view){ SP, (const uint8_t *)words,
							      sizeof(words), NULL, NULL }, &p2);
	assert_memory_equal(two, ((uint64_t[]){ 0x10, 0xb0 }), sizeof(two));
	/* no trampoline known: nothing changes */
	two[1] = T;
	unwind_restore_chain(two, 2, NULL, NULL, &(struct pending_returns){ 0, prologue, 2 });
	assert_int_equal(two[1], T);
}

static void went_off(struct sampler *s, pid_t tid, uint64_t out_ns)
{
	struct raw_sample r = { .kind = PROFILE_OFF_CPU, .mono_ns = out_ns, .pid = getpid(),
				.tid = tid, .py_status = PY_WALK_NOT_PYTHON };

	sampler_add(s, &r);
}

/* The weights of the off-CPU rows of DIR's profile_samples, in file
 * order, into W; returns how many. */
static int off_cpu_weights(const char *dir, unsigned long long *w, int max)
{
	char path[256], line[512];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/profile_samples", dir);
	f = fopen(path, "r");
	assert_non_null(f);
	while (n < max && fgets(line, sizeof(line), f))
		if (sscanf(line, "%*[^,],%*[^,],%*[^,],off-cpu,%llu", &w[n]) == 1)
			n++;
	fclose(f);
	return n;
}

/* A sampler of this process writing into a new DIR (a mkdtemp
 * template), never started; the test is skipped where it cannot be
 * opened. */
static struct sampler *open_in(char *dir)
{
	struct sampler_config c = { .off_cpu = true, .pid = getpid(), .output_dir = dir };
	struct sampler *s;

	assert_non_null(mkdtemp(dir));
	if (sampler_open(&s, &c) != 0) {
		rmdir(dir);
		skip(); /* perf_event_open refused (not root?); said on stderr */
	}
	return s;
}

static void a_switch_in_ends_the_latest_switch_out(void **state)
{
	char dir[] = "/tmp/pmetrics-unit-sampler.XXXXXX", cmd[128], lost[256] = "";
	unsigned long long w[8];
	struct sampler *s;
	FILE *f;
	(void)state;

	s = open_in(dir);
	/* perf (no out time): two switch-outs, one switch-in after both:
	 * it ends the second; the first lost its switch-in */
	went_off(s, 11, 1000);
	went_off(s, 11, 3000);
	sampler_back_on_cpu(s, 11, 0, 4000);
	/* a switch-in before any switch-out of its thread ends nothing */
	went_off(s, 12, 5000);
	sampler_back_on_cpu(s, 12, 0, 4500);
	sampler_back_on_cpu(s, 12, 0, 7000);
	/* BPF names the switch-out */
	went_off(s, 13, 8000);
	went_off(s, 13, 9000);
	sampler_back_on_cpu(s, 13, 8000, 8500);
	sampler_back_on_cpu(s, 13, 9000, 9900);
	assert_int_equal(sampler_stop(s), 0);
	sampler_close(s);
	assert_int_equal(off_cpu_weights(dir, w, 8), 4);
	assert_int_equal(w[0], 1000);
	assert_int_equal(w[1], 2000);
	assert_int_equal(w[2], 500);
	assert_int_equal(w[3], 900);
	snprintf(cmd, sizeof(cmd), "%s/profile_lost", dir);
	f = fopen(cmd, "r");
	assert_non_null(f);
	assert_int_equal(fread(lost, 1, sizeof(lost) - 1, f) > 0, 1);
	fclose(f);
	assert_non_null(strstr(lost, ",off_cpu_end_unseen,1\n"));
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/* A process ID no process has now (no fork: under qemu-user a forked
 * child of this test does not end). */
static pid_t unused_pid(pid_t below)
{
	for (pid_t pid = below - 1; pid > 1; pid--)
		if (kill(pid, 0) != 0 && errno == ESRCH)
			return pid;
	fail_msg("no unused process ID below %d", (int)below);
	return -1;
}

/* An exec names its process by the command line read as the record is
 * handled, unless the process no longer runs the program the exec
 * started (it exec'd again, or ended): then by that program's name. A
 * program that renamed itself still runs what its argv[0] names. */
static void an_exec_names_the_program_it_started(void **state)
{
	char dir[] = "/tmp/pmetrics-unit-sampler.XXXXXX", path[128], rows[2048] = "", want[256];
	pid_t gone = unused_pid(4000000), unknown = unused_pid(gone);
	struct sampler *s;
	FILE *f;
	(void)state;

	s = open_in(dir);
	sampler_exec(s, getpid(), 1000, "test_sampler"); /* runs it: its command line */
	sampler_exec(s, getpid(), 2000, "env");          /* exec'd again since */
	assert_int_equal(prctl(PR_SET_NAME, "renamed"), 0);
	sampler_exec(s, getpid(), 2500, "test_sampler"); /* renamed since: argv[0] */
	assert_int_equal(prctl(PR_SET_NAME, "test_sampler"), 0);
	sampler_exec(s, gone, 3000, "short");            /* ended since */
	sampler_exec(s, unknown, 4000, "");              /* gone, name unknown: no row */
	assert_int_equal(sampler_stop(s), 0);
	sampler_close(s);
	snprintf(path, sizeof(path), "%s/profile_processes", dir);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_true(fread(rows, 1, sizeof(rows) - 1, f) > 0);
	fclose(f);
	snprintf(want, sizeof(want), ",%d,%s", (int)getpid(), "[env]\n");
	assert_non_null(strstr(rows, want));
	snprintf(want, sizeof(want), ",%d,[short]\n", (int)gone);
	assert_non_null(strstr(rows, want));
	snprintf(want, sizeof(want), ",%d,", (int)unknown);
	assert_null(strstr(rows, want));
	/* the first row: this program's command line, which holds its path */
	snprintf(want, sizeof(want), ",%d,", (int)getpid());
	assert_non_null(strstr(rows, want));
	assert_non_null(strstr(strstr(rows, want), "test_sampler"));
	assert_null(strstr(rows, "[test_sampler]"));
	/* this process's rows: its first sight as the target, then the
	 * three execs' (command line, [env], command line) */
	snprintf(want, sizeof(want), ",%d,", (int)getpid());
	int mine = 0;
	for (const char *at = strstr(rows, want); at; at = strstr(at + 1, want))
		mine++;
	assert_int_equal(mine, 4);
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	assert_int_equal(system(path), 0);
}

/* A word of this program's data: a file's mapping, not executable. */
static uint64_t data_word = 1;

/* A frame-pointer chain that goes astray into data (a file's data, an
 * address in the first page) is cut there: nothing from it on is a
 * frame. The leaf and the frame before the stray one stay. */
static void a_chain_gone_astray_is_cut_where_it_leaves_code(void **state)
{
	char dir[] = "/tmp/pmetrics-unit-sampler.XXXXXX", path[256], line[1024] = "", cmd[128];
	const uint64_t code = (uint64_t)(uintptr_t)went_off + 8;
	uint64_t into_data[] = { code, code, (uint64_t)(uintptr_t)&data_word, code, code },
		 into_page0[] = { code, code, code, 0x6, code };
	struct raw_sample r = { .kind = PROFILE_ON_CPU, .weight_ns = 10, .pid = getpid(),
				.tid = getpid(), .py_status = PY_WALK_NOT_PYTHON, .n_user = 5 };
	struct sampler *s;
	FILE *f;
	int rows = 0;
	(void)state;

	s = open_in(dir);
	r.user = into_data;
	sampler_add(s, &r);
	r.user = into_page0;
	sampler_add(s, &r);
	assert_int_equal(sampler_stop(s), 0);
	sampler_close(s);
	snprintf(path, sizeof(path), "%s/profile_stacks", dir);
	f = fopen(path, "r");
	assert_non_null(f);
	/* id,frames root first: 2 frames, then 3, none of them data */
	while (fgets(line, sizeof(line), f)) {
		const char *frames = strchr(line, ',') + 1;
		int n = 1;

		for (const char *p = frames; *p; p++)
			n += *p == ';';
		assert_true(n == 2 || n == 3);
		assert_null(strstr(frames, "+0x6"));
		rows++;
	}
	fclose(f);
	assert_int_equal(rows, 2);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/* ---- BPF's sample records ---------------------------------------------- */

/* A sample record as BPF packs it: the header, then each count's items
 * one after the other (include/sampler_event.h), built in BUF. */
struct packed_record {
	union {
		struct sampler_sample header; /* for its size and alignment */
		uint8_t buf[sizeof(struct sampler_sample) + 4096];
	};
	size_t len;
};

static struct sampler_sample *record_start(struct packed_record *pr)
{
	memset(pr, 0, sizeof(*pr));
	pr->len = offsetof(struct sampler_sample, py);
	return &pr->header;
}

/* Appends N items of SIZE bytes, item i filled with bytes of value
 * FIRST + i, and returns where they went. */
static const uint8_t *record_add(struct packed_record *pr, int n, size_t size, uint8_t first)
{
	uint8_t *at = pr->buf + pr->len;

	for (int i = 0; i < n; i++)
		memset(at + (size_t)i * size, first + i, size);
	pr->len += (size_t)n * size;
	assert_true(pr->len <= sizeof(pr->buf));
	return at;
}

static void every_part_is_found_where_it_was_packed(void **state)
{
	struct packed_record pr;
	struct sampler_sample *e = record_start(&pr);
	int n_regs = unwind_regs_count();
	const uint8_t *py, *user, *kernel, *returns, *regs, *stack;
	struct raw_sample r;

	(void)state;
	*e = (struct sampler_sample){ .type = SAMPLER_REC_SAMPLE, .kind = SAMPLER_OFF_CPU,
				      .time_ns = 77, .pid = 10, .tid = 11, .n_user = 3, .n_kernel = 1,
				      .py_status = 2, .n_py = 2, .stack_len = 24, .n_regs = (__u32)n_regs,
				      .n_returns = 2, .trampoline = 0x7000 };
	py = record_add(&pr, 2, sizeof(struct py_frame_ref), 1);
	user = record_add(&pr, 3, 8, 10);
	kernel = record_add(&pr, 1, 8, 20);
	returns = record_add(&pr, 2, sizeof(struct sampler_return), 30);
	regs = record_add(&pr, n_regs, 8, 40);
	stack = record_add(&pr, 24, 1, 100);
	sampler_sample_unpack(e, pr.len, &r);
	assert_int_equal(r.kind, PROFILE_OFF_CPU);
	assert_int_equal(r.mono_ns, 77);
	assert_int_equal(r.weight_ns, 0);
	assert_int_equal(r.pid, 10);
	assert_int_equal(r.tid, 11);
	assert_int_equal(r.py_status, 2);
	assert_int_equal(r.trampoline, 0x7000);
	assert_ptr_equal(r.py, py);
	assert_int_equal(r.n_py, 2);
	assert_ptr_equal(r.user, user);
	assert_int_equal(r.n_user, 3);
	assert_ptr_equal(r.kernel, kernel);
	assert_int_equal(r.n_kernel, 1);
	assert_ptr_equal(r.returns, returns);
	assert_int_equal(r.n_returns, 2);
	assert_int_equal(r.returns[1].ret, 0x1f1f1f1f1f1f1f1full); /* the second, byte 31 */
	assert_ptr_equal(r.regs, regs);
	assert_ptr_equal(r.stack, stack);
	assert_int_equal(r.stack_len, 24);
}

static void a_failed_stack_read_takes_no_room(void **state)
{
	struct packed_record pr;
	struct sampler_sample *e = record_start(&pr);
	const uint8_t *kernel;
	struct raw_sample r;

	(void)state;
	*e = (struct sampler_sample){ .type = SAMPLER_REC_SAMPLE, .n_user = -14, .n_kernel = 2 };
	kernel = record_add(&pr, 2, 8, 1);
	sampler_sample_unpack(e, pr.len, &r);
	assert_int_equal(r.kind, PROFILE_ON_CPU);
	assert_null(r.user);
	assert_int_equal(r.n_user, -14); /* the error is passed on */
	assert_ptr_equal(r.kernel, kernel);
	assert_int_equal(r.n_kernel, 2);
	assert_null(r.returns);
	assert_int_equal(r.n_returns, 0);
	assert_null(r.regs);
	assert_null(r.stack);
	assert_int_equal(r.stack_len, 0);
}

/* A record cut short: the part that overruns it, and everything after,
 * is dropped; what came before stands. */
static void what_overruns_the_record_is_dropped_with_what_follows(void **state)
{
	struct packed_record pr;
	struct sampler_sample *e = record_start(&pr);
	const uint8_t *user;
	struct raw_sample r;

	(void)state;
	*e = (struct sampler_sample){ .type = SAMPLER_REC_SAMPLE, .n_user = 2, .n_returns = 3,
				      .n_regs = (__u32)unwind_regs_count(), .stack_len = 8 };
	user = record_add(&pr, 2, 8, 1);
	record_add(&pr, 1, sizeof(struct sampler_return), 5); /* one of the three */
	sampler_sample_unpack(e, pr.len, &r);
	assert_ptr_equal(r.user, user);
	assert_int_equal(r.n_user, 2);
	assert_null(r.returns);
	assert_int_equal(r.n_returns, 0);
	assert_null(r.regs);
	assert_null(r.stack);
	assert_int_equal(r.stack_len, 0);
}

/* More returns than BPF ever sends: the record is not of this layout,
 * so no part after them can be placed. */
static void too_many_returns_mean_another_layout(void **state)
{
	struct packed_record pr;
	struct sampler_sample *e = record_start(&pr);
	struct raw_sample r;

	(void)state;
	*e = (struct sampler_sample){ .type = SAMPLER_REC_SAMPLE, .n_user = 1,
				      .n_returns = SAMPLER_RETURNS + 1,
				      .n_regs = (__u32)unwind_regs_count(), .stack_len = 8 };
	record_add(&pr, 1, 8, 1);
	record_add(&pr, SAMPLER_RETURNS + 1, sizeof(struct sampler_return), 2);
	record_add(&pr, unwind_regs_count(), 8, 3);
	record_add(&pr, 8, 1, 4);
	sampler_sample_unpack(e, pr.len, &r);
	assert_int_equal(r.n_user, 1);
	assert_null(r.returns);
	assert_int_equal(r.n_returns, 0);
	assert_null(r.regs);
	assert_null(r.stack);
}

/* The unwinder reads every register of this architecture: a record with
 * fewer gives no stack copy to unwind. */
static void a_short_register_set_gives_no_stack_copy(void **state)
{
	struct packed_record pr;
	struct sampler_sample *e = record_start(&pr);
	struct raw_sample r;

	(void)state;
	*e = (struct sampler_sample){ .type = SAMPLER_REC_SAMPLE, .n_user = 1,
				      .n_regs = (__u32)unwind_regs_count() - 1, .stack_len = 8 };
	record_add(&pr, 1, 8, 1);
	record_add(&pr, unwind_regs_count() - 1, 8, 3);
	record_add(&pr, 8, 1, 4);
	sampler_sample_unpack(e, pr.len, &r);
	assert_int_equal(r.n_user, 1);
	assert_null(r.regs);
	assert_null(r.stack);
	assert_int_equal(r.stack_len, 0);
}

/* Kernel function symbols as /proc/kallsyms lists them, read here the
 * plain way (sscanf): every text symbol's address and the byte after it
 * name it or another symbol at that address (aliases), in the kernel's
 * modules too. Needs root: addresses read as 0 otherwise. */
struct listed_sym {
	unsigned long long addr;
	char *name;
};

static int by_listed_addr(const void *a, const void *b)
{
	const struct listed_sym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static bool listed_at(const struct listed_sym *l, size_t n, unsigned long long addr, const char *name)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (l[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < n && l[lo].addr == addr; lo++)
		if (strcmp(l[lo].name, name) == 0)
			return true;
	return false;
}

static void kernel_symbols_as_kallsyms_lists_them(void **state)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	struct listed_sym *l = NULL;
	size_t n = 0, cap = 0, in_modules = 0;
	struct symbolizer *sym;
	char line[1024];
	(void)state;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long addr;
		char type, name[600];

		/* a BPF program may come or go between the two reads */
		if (sscanf(line, "%llx %c %599s", &addr, &type, name) != 3 || !addr ||
		    strchr("tTwW", type) == NULL || strstr(line, "[bpf]"))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 4096;
			l = realloc(l, cap * sizeof(*l));
			assert_non_null(l);
		}
		l[n].addr = addr;
		l[n].name = strdup(name);
		assert_non_null(l[n++].name);
		in_modules += strchr(line, '[') != NULL;
	}
	fclose(f);
	if (n == 0)
		skip(); /* addresses hidden: not root */
	qsort(l, n, sizeof(*l), by_listed_addr);
	sym = symbolizer_new();
	assert_non_null(sym);
	symbolizer_load_kernel(sym);
	for (size_t i = 0; i < n; i++) {
		const char *at = symbolizer_kernel(sym, l[i].addr);

		assert_non_null(at);
		if (!listed_at(l, n, l[i].addr, at))
			fail_msg("0x%llx: %s, kallsyms lists %s there", l[i].addr, at, l[i].name);
		if (i + 1 < n && l[i + 1].addr > l[i].addr + 1)
			assert_ptr_equal(symbolizer_kernel(sym, l[i].addr + 1), at);
	}
	assert_null(symbolizer_kernel(sym, l[0].addr - 1));
	print_message("%zu kernel function symbols, %zu of modules\n", n, in_modules);
	symbolizer_free(sym);
	for (size_t i = 0; i < n; i++)
		free(l[i].name);
	free(l);
}

/* The forms of kallsyms' lines, and lines of no form. */
static void kallsyms_lines(void **state)
{
	static const char lines[] =
		"ffffffff81000000 T _stext\n"
		"ffffffff81000000 T _text\n"     /* an alias */
		"\n"
		" \n"
		"ffffffff81000100 t local_fn\n"
		"ffffffff81000200 D some_data\n" /* data: no frame is there */
		"ffffffff81000300 W weak_fn\n"
		"0000000000000000 T hidden\n"    /* not root: no address */
		"ffffffff81000400 tt two_letters\n"
		"ffffffff81000500 T\n"
		"ffffffff81000600 t\tafter_tab\n"
		"ffffffffc0001000 t mod_fn\t[some_mod]\n"
		"ffffffffc0002000 t bpf_prog_0123456789abcdef_probe\t[bpf]\n"
		"ffffffffc0003000 T last_no_newline";
	struct symbolizer *sym = symbolizer_new();
	char *text = strdup(lines);
	(void)state;

	assert_non_null(sym);
	assert_non_null(text);
	symbolizer_kernel_text(sym, text, strlen(text));
	assert_null(symbolizer_kernel(sym, 0xffffffff80ffffffull));
	assert_true(strcmp(symbolizer_kernel(sym, 0xffffffff81000000ull), "_stext") == 0 ||
		    strcmp(symbolizer_kernel(sym, 0xffffffff81000000ull), "_text") == 0);
	assert_string_equal(symbolizer_kernel(sym, 0xffffffff81000150ull), "local_fn");
	assert_string_equal(symbolizer_kernel(sym, 0xffffffff81000250ull), "local_fn");
	assert_string_equal(symbolizer_kernel(sym, 0xffffffff81000300ull), "weak_fn");
	assert_string_equal(symbolizer_kernel(sym, 0xffffffff81000700ull), "weak_fn");
	assert_string_equal(symbolizer_kernel(sym, 0xffffffffc0001004ull), "mod_fn");
	assert_string_equal(symbolizer_kernel(sym, 0xffffffffc0002010ull),
			    "bpf_prog_0123456789abcdef_probe");
	assert_string_equal(symbolizer_kernel(sym, 0xffffffffc0003001ull), "last_no_newline");
	symbolizer_free(sym);

	sym = symbolizer_new();
	assert_non_null(sym);
	symbolizer_kernel_text(sym, NULL, 0); /* unreadable */
	assert_null(symbolizer_kernel(sym, 0xffffffff81000000ull));
	symbolizer_free(sym);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rates_in_range),
		cmocka_unit_test(an_exec_names_the_program_it_started),
		cmocka_unit_test(bad_rates_name_the_limit),
		cmocka_unit_test(the_limit_is_pmetrics_or_the_kernels),
		cmocka_unit_test(qualnames_from_the_source),
		cmocka_unit_test(a_source_that_does_not_show_it_gives_the_name),
		cmocka_unit_test(dwarf_believed_only_when_it_goes_further),
		cmocka_unit_test(a_broken_chain_loses_to_a_longer_walk),
		cmocka_unit_test(a_whole_chain_that_skipped_frames_loses),
		cmocka_unit_test(a_whole_chain_stands_against_a_walk_that_left_it),
		cmocka_unit_test(repeated_addresses_each_need_their_own_place),
		cmocka_unit_test(a_walk_cut_at_its_limit_is_believed),
		cmocka_unit_test(a_switch_in_ends_the_latest_switch_out),
		cmocka_unit_test(trampolines_take_the_chains_returns),
		cmocka_unit_test(a_slot_names_its_own_return),
		cmocka_unit_test(chain_returns_go_by_slot),
		cmocka_unit_test(chain_returns_by_slot_over_the_kernels_order),
		cmocka_unit_test(chain_returns_in_order_without_slots),
		cmocka_unit_test(a_chain_gone_astray_is_cut_where_it_leaves_code),
		cmocka_unit_test(every_part_is_found_where_it_was_packed),
		cmocka_unit_test(a_failed_stack_read_takes_no_room),
		cmocka_unit_test(what_overruns_the_record_is_dropped_with_what_follows),
		cmocka_unit_test(too_many_returns_mean_another_layout),
		cmocka_unit_test(a_short_register_set_gives_no_stack_copy),
		cmocka_unit_test(kernel_symbols_as_kallsyms_lists_them),
		cmocka_unit_test(kallsyms_lines),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
