# SPDX-License-Identifier: MIT
# The traced test programs (tests/progs): small, deterministic native
# programs the integration tests and benchmarks put probes on.
PROG_CFLAGS := -O1 -g -fno-inline -fno-optimize-sibling-calls -Wall -Wextra -Werror -pthread
PROGS := $(OUT)/progs/spanprog $(OUT)/progs/spanprog-nopie $(OUT)/progs/libspanlib.so.1 \
	$(OUT)/progs/libprog $(OUT)/progs/demo

$(OUT)/progs:
	$(Q)mkdir -p $@
$(OUT)/progs/spanprog: tests/progs/spanprog.c | $(OUT)/progs
	$(Q)$(CC) $(PROG_CFLAGS) -fPIE -pie -o $@ $<
$(OUT)/progs/spanprog-nopie: tests/progs/spanprog.c | $(OUT)/progs
	$(Q)$(CC) $(PROG_CFLAGS) -fno-pie -no-pie -o $@ $<
$(OUT)/progs/libspanlib.so.1: tests/progs/spanlib.c | $(OUT)/progs
	$(Q)$(CC) $(PROG_CFLAGS) -fPIC -shared -Wl,-soname,libspanlib.so.1 -o $@ $<
	$(Q)ln -sf libspanlib.so.1 $(OUT)/progs/libspanlib.so
$(OUT)/progs/libprog: tests/progs/libprog.c $(OUT)/progs/libspanlib.so.1 | $(OUT)/progs
	$(Q)$(CC) $(PROG_CFLAGS) -o $@ $< -L$(OUT)/progs -lspanlib -Wl,-rpath,'$$ORIGIN'
$(OUT)/progs/demo: tests/progs/demo.c | $(OUT)/progs
	$(Q)$(CC) $(PROG_CFLAGS) -o $@ $<
