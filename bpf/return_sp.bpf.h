/* SPDX-License-Identifier: GPL-2.0 */
/* Matching a uretprobe to the entry it returns from, by stack pointer:
 * shared by the native (bpf/span.bpf.c) and Python (bpf/pyspan.bpf.c)
 * span programs. Include after vmlinux.h and <bpf/bpf_tracing.h>. */
#ifndef PMETRICS_RETURN_SP_BPF_H
#define PMETRICS_RETURN_SP_BPF_H

/* How far the stack pointer moves between a function's first instruction
 * and the instruction after its return: x86's `ret` pops the return
 * address the entry saw on top of the stack; arm64 keeps it in the link
 * register and returns with the entry's sp. */
#if defined(__TARGET_ARCH_x86)
#define RETURN_SP_DELTA 8
#else
#define RETURN_SP_DELTA 0
#endif

/* In a uretprobe: the stack pointer the returning call had at its entry. */
static __always_inline __u64 entry_sp_of_return(struct pt_regs *ctx)
{
	return PT_REGS_SP(ctx) - RETURN_SP_DELTA;
}

#endif
