#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The BPF objects built for the architectures this machine is not (make
# other-arch-bpf, from vmlinux/ARCH/vmlinux.h): the robot is arm64, so its
# objects must exist, read the registers where arm64 keeps them, and carry
# the CO-RE flavours that let one object run on kernels of either
# mm->rss_stat layout. Nothing here loads them: this machine cannot.
source "$ROOT/tests/integration/lib.sh"

host=$(uname -m)
[ "$host" = x86_64 ] && host=x86
[ "$host" = aarch64 ] && host=arm64

# reads_ctx OBJ PROG OFFSET: PROG loads a u64 from its context (struct
# pt_regs) at OFFSET on some path. Copies of the context, in registers
# and stack slots, are followed along the jumps (bpf_ctx_reads.py), so
# loads from map values never count.
reads_ctx() { python3 "$ROOT/tests/integration/bpf_ctx_reads.py" "$@"; }

for dir in "$ROOT"/vmlinux/*/; do
	arch=$(basename "$dir")
	[ "$arch" = "$host" ] && continue
	objs="$BUILD/arch/$arch"
	t_begin "${arch}_objects_and_skeletons_built"
	missing=""
	for src in "$ROOT"/bpf/*.bpf.c; do
		name=$(basename "$src" .bpf.c)
		[ -s "$objs/bpf/$name.bpf.o" ] && [ -s "$objs/$name.skel.h" ] || missing+=" $name"
	done
	if [ -z "$missing" ]; then t_pass; else t_fail "not built:$missing (make other-arch-bpf)"; fi

	# Both rss_stat layouts (before and since 6.2) are in every object that
	# reads RSS, whatever the age of the vmlinux.h it was built from.
	t_begin "${arch}_objects_carry_both_rss_layouts"
	bad=""
	for name in span pyspan resources; do
		btf=$(bpftool btf dump file "$objs/bpf/$name.bpf.o" 2>&1)
		grep -q "STRUCT 'mm_struct___old'" <<<"$btf" && grep -q "STRUCT 'mm_struct___new'" <<<"$btf" ||
			bad+=" $name"
	done
	if [ -z "$bad" ]; then t_pass; else t_fail "missing a flavour in:$bad"; fi
done

# arm64's struct user_pt_regs is regs[31] (x0..x30), then sp: the first
# argument is at offset 0, the second at 8, the stack pointer at 248.
# (x86 would read di at 112, si at 104, sp at 152.)
arm="$BUILD/arch/arm64/bpf"
if [ "$host" != arm64 ] && [ -d "$ROOT/vmlinux/arm64" ]; then
	t_begin arm64_span_return_matches_by_sp
	if reads_ctx "$arm/span.bpf.o" span_enter 248 && reads_ctx "$arm/span.bpf.o" span_exit 248; then t_pass
	else t_fail "span_enter/span_exit do not read user_pt_regs.sp (offset 248)"; fi
	t_begin arm64_python_step_reads_x0_and_sp
	# and not x86's sp (152) or di (112)
	if reads_ctx "$arm/pyspan.bpf.o" py_coro_step 0 && reads_ctx "$arm/pyspan.bpf.o" py_coro_step 248 &&
		! reads_ctx "$arm/pyspan.bpf.o" py_coro_step 152 && ! reads_ctx "$arm/pyspan.bpf.o" py_coro_step 112; then t_pass
	else t_fail "py_coro_step does not read x0 (the coroutine, offset 0) and sp (offset 248)"; fi
	t_begin arm64_python_return_matches_by_sp
	if reads_ctx "$arm/pyspan.bpf.o" py_coro_step_return 248; then t_pass
	else t_fail "py_coro_step_return does not read user_pt_regs.sp (offset 248)"; fi
	t_begin arm64_python_creation_return_reads_x0
	if reads_ctx "$arm/pyspan.bpf.o" py_make_coro_return 0 && reads_ctx "$arm/pyspan.bpf.o" py_make_coro_return 248; then t_pass
	else t_fail "py_make_coro_return does not read x0 (the new coroutine) and sp"; fi
fi
