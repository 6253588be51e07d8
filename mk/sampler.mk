# SPDX-License-Identifier: MIT
# The CPU sampler (user/sampler*.c, bpf/sampler.bpf.c). Its perf_event_open
# path, for kernels without BPF on perf events, unwinds stacks built
# without frame pointers by their DWARF call frame information with libdw
# (elfutils: Debian libdw-dev), linked statically where its .a exists,
# like the other libraries (libdw.a needs libelf, zlib, liblzma, libbz2).
ifneq ($(wildcard $(LIBDIR)/libdw.a),)
SAMPLER_LINK := -Wl,-Bstatic -ldw -lelf -llzma -lbz2 -lz -Wl,-Bdynamic
else
SAMPLER_LINK := -ldw
endif
LIBS += $(SAMPLER_LINK)
DYN_LIBS += -ldw

# The programs the sampler's tests and benchmark sample (tests/progs/sample_*).
SAMPLE_PROGS := $(OUT)/progs/sample_burn $(OUT)/progs/sample_burn-nofp $(OUT)/progs/py_late
CHECK_EXTRA += $(SAMPLE_PROGS)
BENCH_EXTRA += $(SAMPLE_PROGS)
$(OUT)/progs/sample_burn: tests/progs/sample_burn.c | $(OUT)/progs
	$(Q)$(CC) $(PROG_CFLAGS) -fno-omit-frame-pointer -o $@ $<
$(OUT)/progs/sample_burn-nofp: tests/progs/sample_burn.c | $(OUT)/progs
	$(Q)$(CC) $(PROG_CFLAGS) -fomit-frame-pointer -o $@ $<
$(OUT)/progs/py_late: tests/progs/py_late.c | $(OUT)/progs
	$(Q)$(CC) $(PROG_CFLAGS) -o $@ $< -ldl

# make bench: what sampling costs the sampled program, against perf and austin.
BENCH_SCRIPTS += bench/sampling.sh
