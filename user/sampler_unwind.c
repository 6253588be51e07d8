// SPDX-License-Identifier: MIT
/* DWARF unwinding of sampled user stacks with libdw; see sampler_unwind.h. */
#include "sampler_unwind.h"
#include "array_grow.h"

#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>

#include "python_stack.h"
#include "symbolizer.h"
#include "wall_clock.h"

/* A process's modules are reported again, when a pc is in none of
 * them: at once when the pc is in a file mapped since (a library loaded
 * after the report, such as an extension module imported late), which
 * is looked up at most every MAPS_AGAIN_NS; else (a failed report, a
 * pc in anonymous memory such as JIT code) at most every
 * REPORT_AGAIN_NS. */
#define REPORT_AGAIN_NS 1000000000ull
#define MAPS_AGAIN_NS 10000000ull

#if defined(__x86_64__)
/* perf's x86-64 user registers AX..IP (bits 0-8) and R8..R15 (16-23). */
#define REGS_MASK (((1ull << 9) - 1) | (0xffull << 16))
#define REGS_COUNT 17
#define REG_FP 6
#define REG_SP 7
#define REG_IP 8
#elif defined(__aarch64__)
/* X0..X30, SP, PC: perf's order is the DWARF numbering. */
#define REGS_MASK ((1ull << 33) - 1)
#define REGS_COUNT 33
#define REG_FP 29
#define REG_LR 30
#define REG_SP 31
#define REG_IP 32
#else
#define REGS_MASK 0
#define REGS_COUNT 0
#define REG_FP 0
#define REG_SP 0
#define REG_IP 0
#endif

uint64_t unwind_regs_mask(void)
{
	return REGS_MASK;
}

int unwind_regs_count(void)
{
	return REGS_COUNT;
}

uint64_t unwind_regs_sp(const uint64_t *regs)
{
	return REGS_COUNT ? regs[REG_SP] : 0;
}

/* The bits of an address in WORD, as P's trampoline is compared with it.
 * arm64: code built with pointer authentication saves a return address
 * with its signature in the bits above the user address, whose width
 * (48 bits, or 52) the trampoline's own address bounds from below. */
static uint64_t address_bits(const struct pending_returns *p, uint64_t word)
{
#if defined(__aarch64__)
	int bits = 64 - __builtin_clzll(p->trampoline | 1);

	if (bits < 48)
		bits = 48;
	return bits >= 64 ? word : word & ((1ull << bits) - 1);
#else
	(void)p;
	return word;
#endif
}

bool unwind_is_trampoline(const struct pending_returns *p, uint64_t word)
{
	return p && p->trampoline && address_bits(p, word) == p->trampoline;
}

/* The pending return with the lowest entry stack pointer at or above
 * ADDR; NULL: none. */
static const struct sampler_return *lowest_from(const struct pending_returns *p, uint64_t addr)
{
	const struct sampler_return *best = NULL;

	for (int i = 0; i < p->n; i++)
		if (p->ret[i].stack >= addr && (!best || p->ret[i].stack < best->stack))
			best = &p->ret[i];
	return best;
}

/* The pending return whose trampoline sits in stack slot SLOT. x86-64:
 * the call pushed the return address at the entry stack pointer, so
 * exactly there (a stale entry, left by a longjmp, matches no slot).
 * arm64: the function saved its link register in its own frame, below
 * its entry stack pointer, and anything it called entered at or below
 * that slot: the lowest entry strictly above it. */
static const struct sampler_return *return_in_slot(const struct pending_returns *p, uint64_t slot)
{
	const struct sampler_return *r;

#if defined(__aarch64__)
	r = slot == UINT64_MAX ? NULL : lowest_from(p, slot + 1);
#else
	r = lowest_from(p, slot);
	if (r && r->stack != slot)
		r = NULL;
#endif
	return r;
}

uint64_t unwind_return_at(const struct pending_returns *p, uint64_t slot)
{
	const struct sampler_return *r = p ? return_in_slot(p, slot) : NULL;

	return r ? r->ret : 0;
}

/* The word at ADDR of a stack copy COPY, LEN bytes from SP up; false
 * when it is not in the copy (no sum that can wrap: a sample's sp may be
 * anything). */
static bool copied_word(const uint8_t *copy, size_t len, uint64_t sp, uint64_t addr, uint64_t *word)
{
	if (addr < sp || addr - sp >= len || len - (addr - sp) < sizeof(*word))
		return false;
	memcpy(word, copy + (addr - sp), sizeof(*word));
	return true;
}

/* The sample being unwound: what the callbacks read. */
struct walk {
	pid_t pid, tid;
	const uint64_t *regs;
	const uint8_t *stack;
	size_t size;
	uint64_t sp;
	uint64_t *out;
	int n, max;
	bool (*stop)(uint64_t pc, void *arg);
	void *arg;
	const struct pending_returns *returns; /* NULL: none */
};

struct proc_dwfl {
	pid_t pid;
	Dwfl *dwfl;
	uint64_t reported_ns;
	uint64_t maps_read_ns; /* when its maps were last looked up for a pc */
};

struct unwinder {
	struct proc_dwfl *procs;
	size_t n, cap;
	struct walk walk;
};

/* ---- the thread callbacks: one thread, the sample's -------------------- */

static pid_t next_thread(Dwfl *dwfl, void *dwfl_arg, void **thread_argp)
{
	struct walk *w = dwfl_arg;

	(void)dwfl;
	if (*thread_argp)
		return 0;
	*thread_argp = w;
	return w->tid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *dwfl_arg, void **thread_argp)
{
	struct walk *w = dwfl_arg;

	(void)dwfl;
	*thread_argp = w;
	return tid == w->tid;
}

/* The stack copy first; anything else (a pointer in a data segment
 * some CFI refers to) from the live process. */
static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *dwfl_arg)
{
	struct walk *w = dwfl_arg;
	uint64_t real;

	(void)dwfl;
	/* below the stack pointer the live stack has moved on; past the
	 * copy are the older frames, which a thread still inside its call
	 * (or blocked: an off-CPU sample) has not touched */
	if (!copied_word(w->stack, w->size, w->sp, addr, result) &&
	    ((addr < w->sp && addr >= w->sp - 65536) ||
	     python_read_memory(w->pid, result, sizeof(*result), addr) != 0))
		return false;
	/* a pending uretprobe's trampoline: the real return address */
	if (unwind_is_trampoline(w->returns, *result) && (real = unwind_return_at(w->returns, addr)))
		*result = real;
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
	struct walk *w = thread_arg;
#if defined(__x86_64__)
	/* DWARF's order: rax rdx rcx rbx rsi rdi rbp rsp r8-r15; perf's:
	 * ax bx cx dx si di bp sp ip r8-r15 */
	Dwarf_Word d[16] = {
		w->regs[0], w->regs[3], w->regs[2], w->regs[1], w->regs[4], w->regs[5],
		w->regs[6], w->regs[7], w->regs[9], w->regs[10], w->regs[11], w->regs[12],
		w->regs[13], w->regs[14], w->regs[15], w->regs[16],
	};

	return dwfl_thread_state_registers(thread, 0, 16, d) &&
	       (dwfl_thread_state_register_pc(thread, w->regs[REG_IP]), true);
#elif defined(__aarch64__)
	const struct sampler_return *r;
	Dwarf_Word d[32];

	for (int i = 0; i < 32; i++)
		d[i] = w->regs[i];
	/* in a probed function before it saved its link register: that of
	 * the innermost return pending at or above the stack pointer */
	if (unwind_is_trampoline(w->returns, d[REG_LR]) && (r = lowest_from(w->returns, w->sp)))
		d[REG_LR] = r->ret;
	return dwfl_thread_state_registers(thread, 0, 32, d) &&
	       (dwfl_thread_state_register_pc(thread, w->regs[REG_IP]), true);
#else
	(void)thread;
	(void)w;
	return false;
#endif
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

/* ---- one Dwfl per process -------------------------------------------------- */

static char *debuginfo_path;
static const Dwfl_Callbacks dwfl_callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &debuginfo_path,
};

static void drop(struct proc_dwfl *p)
{
	if (p->dwfl)
		dwfl_end(p->dwfl);
	p->dwfl = NULL;
}

static bool report(struct unwinder *u, struct proc_dwfl *p)
{
	drop(p);
	p->reported_ns = monotonic_ns();
	p->dwfl = dwfl_begin(&dwfl_callbacks);
	if (!p->dwfl)
		return false;
	if (dwfl_linux_proc_report(p->dwfl, p->pid) != 0 ||
	    dwfl_report_end(p->dwfl, NULL, NULL) != 0 ||
	    !dwfl_attach_state(p->dwfl, NULL, p->pid, &thread_callbacks, &u->walk)) {
		drop(p);
		return false;
	}
	return true;
}

static struct proc_dwfl *proc_of(struct unwinder *u, pid_t pid)
{
	for (size_t i = 0; i < u->n; i++)
		if (u->procs[i].pid == pid)
			return &u->procs[i];
	if (!array_grow((void **)&u->procs, &u->cap, u->n + 1, sizeof(*u->procs)))
		return NULL;
	u->procs[u->n] = (struct proc_dwfl){ .pid = pid };
	return &u->procs[u->n++];
}

static int on_frame(Dwfl_Frame *frame, void *arg)
{
	struct walk *w = arg;
	Dwarf_Addr pc;

	if (!dwfl_frame_pc(frame, &pc, NULL) || !pc)
		return DWARF_CB_ABORT;
	w->out[w->n++] = pc;
	if (w->n >= w->max || (w->stop && w->stop(pc, w->arg)))
		return DWARF_CB_ABORT;
	return DWARF_CB_OK;
}

/* Whether PC of P's process is in a file it maps that a report would
 * find (by path; not a memfd, not a deleted file), read now, at most
 * every MAPS_AGAIN_NS. */
static bool pc_in_mapped_file(struct proc_dwfl *p, uint64_t pc, uint64_t now)
{
	struct proc_map *maps;
	bool found = false;
	int n;

	if (now - p->maps_read_ns < MAPS_AGAIN_NS)
		return false;
	p->maps_read_ns = now;
	n = proc_maps_read(p->pid, &maps);
	for (int i = 0; i < n && !found; i++)
		found = pc >= maps[i].start && pc < maps[i].end && maps[i].ino &&
			maps[i].path[0] == '/' && strncmp(maps[i].path, "/memfd:", 7) != 0 &&
			!strstr(maps[i].path, " (deleted)");
	if (n >= 0)
		proc_maps_free(maps, n);
	return found;
}

/* Whether P's modules are to be reported again for a walk from PC. */
static bool report_again(struct proc_dwfl *p, uint64_t pc, uint64_t now)
{
	if (!p->dwfl)
		return !p->reported_ns || now - p->reported_ns >= REPORT_AGAIN_NS;
	if (dwfl_addrmodule(p->dwfl, pc))
		return false;
	return now - p->reported_ns >= REPORT_AGAIN_NS || pc_in_mapped_file(p, pc, now);
}

int unwinder_walk(struct unwinder *u, pid_t pid, pid_t tid, const uint64_t *regs,
		  const uint8_t *stack, size_t size, const struct pending_returns *returns,
		  uint64_t *out, int max, bool (*stop)(uint64_t pc, void *arg), void *arg)
{
	struct proc_dwfl *p = proc_of(u, pid);

	if (!p || !REGS_COUNT || max <= 0)
		return 0;
	if (report_again(p, regs[REG_IP], monotonic_ns()) && !report(u, p))
		return 0;
	if (!p->dwfl)
		return 0; /* the last report failed: not again yet */
	u->walk = (struct walk){ .pid = pid, .tid = tid, .regs = regs, .stack = stack,
				 .size = size, .sp = regs[REG_SP], .out = out, .max = max,
				 .stop = stop, .arg = arg, .returns = returns };
	dwfl_getthread_frames(p->dwfl, tid, on_frame, &u->walk);
	return u->walk.n;
}

bool unwind_prefer_dwarf(const uint64_t *fp, int n_fp, bool fp_whole, const uint64_t *dwarf,
			 int n_dwarf, bool dwarf_cut)
{
	int seen = 0;

	if (n_dwarf <= n_fp)
		return false;
	if (!fp_whole)
		return true;
	for (int i = 0; i < n_dwarf && seen < n_fp; i++)
		seen += dwarf[i] == fp[seen];
	/* a walk cut at its limit (deep recursion) cannot reach the chain's
	 * outer addresses, so it is only asked to start where the chain does */
	return seen == n_fp || (dwarf_cut && seen > 0);
}

void unwind_take_chain_returns(uint64_t *dwarf, int n_dwarf, const uint64_t *fp, int n_fp,
			       const struct pending_returns *p)
{
	int n = n_dwarf < n_fp ? n_dwarf : n_fp, end;

	for (int i = 1; i < n; i = end + 1) {
		end = i;
		if (dwarf[i] == fp[i] || dwarf[i - 1] != fp[i - 1] ||
		    (p && p->trampoline && !unwind_is_trampoline(p, dwarf[i])))
			continue;
		while (end < n && dwarf[end] != fp[end] && dwarf[end] == dwarf[i])
			end++;
		if (end < n && dwarf[end] == fp[end])
			memcpy(dwarf + i, fp + i, (size_t)(end - i) * sizeof(*dwarf));
	}
}

/* The next pending return in the list's order whose entry stack pointer
 * is above ABOVE, a chained one (a tail call into a probed function: the
 * kernel's second entry, with the first's stack and return) passed over.
 * 0: none left. */
static uint64_t next_in_order(const struct pending_returns *p, int *next, uint64_t *above)
{
	const struct sampler_return *r;

	for (; *next < p->n; (*next)++) {
		r = &p->ret[*next];
		if (r->stack <= *above)
			continue;
		*above = r->stack;
		(*next)++;
		return r->ret;
	}
	return 0;
}

/* The word at ADDR of sampled stack V: from its copy, else (V's READ)
 * from the live process, never below the stack pointer. */
static bool stack_word(const struct stack_view *v, uint64_t addr, uint64_t *word)
{
	if (addr < v->sp)
		return false;
	return copied_word(v->copy, v->len, v->sp, addr, word) ||
	       (v->read && v->read(addr, word, v->arg));
}

void unwind_restore_chain(uint64_t *chain, int n_chain, const uint64_t *regs,
			  const struct stack_view *v, const struct pending_returns *p)
{
	uint64_t fp = regs && REGS_COUNT ? regs[REG_FP] : 0, above = fp, word = 0, real;
	const struct sampler_return *r;
	bool slots_known = regs && REGS_COUNT && v && v->sp == regs[REG_SP];
	int next = 0;

	if (!p || !p->trampoline || p->n <= 0)
		return;
	/* The chain is the leaf's pc, then the return address beside each
	 * frame record from the frame pointer up (x86-64 and arm64 alike:
	 * [fp] the caller's record, [fp + 8] the return). Followed through
	 * the stack, each entry's slot is known while the stack holds there
	 * what the chain does, or the trampoline (a kernel from 6.11 puts
	 * returns in its chain by the list's order alone, which a chained
	 * entry or a probed function without a frame record misleads): the
	 * slot's own return is taken. Where the records cannot be followed
	 * the list's order is all there is, those of functions whose frame
	 * record is not made yet (entry at or below the frame pointer) and
	 * those matched to slots below left out. */
	for (int i = 1; i < n_chain; i++) {
		slots_known = slots_known && fp <= UINT64_MAX - 16 && stack_word(v, fp + 8, &word) &&
			      (address_bits(p, word) == address_bits(p, chain[i]) ||
			       unwind_is_trampoline(p, word));
		if (slots_known) {
			r = unwind_is_trampoline(p, word) ? return_in_slot(p, fp + 8) : NULL;
			if (r)
				chain[i] = r->ret;
			if ((r ? r->stack : fp + 8) > above)
				above = r ? r->stack : fp + 8;
			real = fp;
			slots_known = stack_word(v, fp, &fp) && fp > real;
		} else if (unwind_is_trampoline(p, chain[i]) &&
			   (real = next_in_order(p, &next, &above))) {
			chain[i] = real;
		}
	}
}

void unwinder_forget(struct unwinder *u, pid_t pid)
{
	for (size_t i = 0; i < u->n; i++) {
		if (u->procs[i].pid != pid)
			continue;
		drop(&u->procs[i]);
		u->procs[i] = u->procs[--u->n];
		return;
	}
}

struct unwinder *unwinder_new(void)
{
	return calloc(1, sizeof(struct unwinder));
}

void unwinder_free(struct unwinder *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->n; i++)
		drop(&u->procs[i]);
	free(u->procs);
	free(u);
}
