/* SPDX-License-Identifier: MIT */
/* DWARF unwinding of a sampled user stack with libdw (elfutils): the
 * perf_event_open sampler's way through code built without frame
 * pointers (CPython, glibc, most of a distribution). The sample brings
 * the user registers and a copy of the top of the stack; the call frame
 * information (.eh_frame, .debug_frame) of each mapped file says where
 * every caller's return address and registers are. */
#ifndef PMETRICS_SAMPLER_UNWIND_H
#define PMETRICS_SAMPLER_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sampler_event.h"

struct unwinder;

/* The registers a sample must carry (perf_event_attr.sample_regs_user)
 * on this architecture, and how many there are. */
uint64_t unwind_regs_mask(void);
int unwind_regs_count(void);
/* The stack pointer among REGS (in mask order). */
uint64_t unwind_regs_sp(const uint64_t *regs);

struct unwinder *unwinder_new(void);
void unwinder_free(struct unwinder *u);
/* PID exec'd or exited: its modules are reported again when needed. */
void unwinder_forget(struct unwinder *u, pid_t pid);

/* A function under a uretprobe (the return side of a probe, pending)
 * returns to the kernel's trampoline, which stands for its real return
 * address in the stack, and on kernels before 6.11 in the frame-pointer
 * chain too: no walk got past it to the probed function's caller
 * without the thread's list of its pending returns (include/
 * sampler_event.h): TRAMPOLINE stands for the real return address of
 * RET[0..N-1], innermost first. */
struct pending_returns {
	uint64_t trampoline;
	const struct sampler_return *ret;
	int n;
};

/* Walks thread TID of PID from REGS (unwind_regs_count() values, in
 * mask order) with STACK, SIZE bytes copied from the stack pointer up,
 * reading a pending uretprobe's real return address wherever RETURNS'
 * trampoline stands for it (NULL: none known). Fills OUT leaf first
 * (the leaf's pc, then return addresses), at most MAX; STOP(pc, ARG),
 * when given, ends the walk after a frame it returns true for. Returns
 * the number of frames. */
int unwinder_walk(struct unwinder *u, pid_t pid, pid_t tid, const uint64_t *regs,
		  const uint8_t *stack, size_t size, const struct pending_returns *returns,
		  uint64_t *out, int max, bool (*stop)(uint64_t pc, void *arg), void *arg);

/* From Linux 6.11 the kernel puts the real return addresses back in
 * the frame-pointer chain it walks, but the stack copy DWARF reads
 * holds the trampoline. Where the two walks agree on the frames around
 * a run of differing ones that are one and the same address (the
 * trampoline: P's, when P is given, never an address the walk read
 * right where the chain has another), DWARF's (N_DWARF, leaf first)
 * take the chain's (FP, N_FP). */
void unwind_take_chain_returns(uint64_t *dwarf, int n_dwarf, const uint64_t *fp, int n_fp,
			       const struct pending_returns *p);

/* Whether WORD, read from a stack or a register, is P's trampoline (on
 * arm64 also as code with pointer authentication saved it, signed). */
bool unwind_is_trampoline(const struct pending_returns *p, uint64_t word);
/* The real return address of the trampoline read from stack slot SLOT;
 * 0: no pending return of P has its address there. */
uint64_t unwind_return_at(const struct pending_returns *p, uint64_t slot);
/* A sampled stack: COPY, LEN bytes from the stack pointer SP up, and
 * READ(addr, &word, ARG) for the words past it (NULL: none). */
struct stack_view {
	uint64_t sp;
	const uint8_t *copy;
	size_t len;
	bool (*read)(uint64_t addr, uint64_t *word, void *arg);
	void *arg;
};

/* Puts P's real return addresses back in a frame-pointer chain (CHAIN,
 * N_CHAIN addresses, leaf first) where the trampoline stood: by the
 * slot each entry was read from, found by following the frame records
 * from REGS (NULL: none) through the stack V (NULL: none), else in the
 * list's order. */
void unwind_restore_chain(uint64_t *chain, int n_chain, const uint64_t *regs,
			  const struct stack_view *v, const struct pending_returns *p);

/* Whether DWARF's walk (N_DWARF addresses, leaf first) of a sample is to
 * be believed over its frame-pointer chain FP (N_FP): when it goes
 * further, and, if the chain ends in a thread's first function
 * (FP_WHOLE), holds every address of the chain in the chain's order (a
 * walk stopped at its frame limit, DWARF_CUT, need only start at the
 * chain's leaf: the chain's outer addresses may lie past it). Such a chain skips frames built without frame
 * pointers but shows no false one, while DWARF past the stack copy reads
 * the live stack, which the thread may have left since the sample: a
 * walk that disagrees with a whole chain went astray. */
bool unwind_prefer_dwarf(const uint64_t *fp, int n_fp, bool fp_whole, const uint64_t *dwarf,
			 int n_dwarf, bool dwarf_cut);

#endif
