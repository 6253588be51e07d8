# SPDX-License-Identifier: MIT
# Resource sampler test programs (tests/progs/res_*.c): processes with a
# known CPU/memory/churn behaviour, and res_sample, a driver running the
# sampler's life cycle on its own (tests/integration/test_resources.sh).
RES_PROGS := $(OUT)/progs/res_burn $(OUT)/progs/res_touch $(OUT)/progs/res_churn $(OUT)/progs/res_spans \
	$(OUT)/progs/res_sample
CHECK_EXTRA += $(RES_PROGS)

$(OUT)/progs/res_%: tests/progs/res_%.c | $(OUT)/progs
	$(Q)$(CC) $(PROG_CFLAGS) -o $@ $<
$(OUT)/progs/res_sample: tests/progs/res_sample.c $(LIB_OBJS) | $(OUT)/progs
	$(call msg,LINK,$@)
	$(Q)$(CC) $(PM_CFLAGS) -o $@ $< $(LIB_OBJS) $(LIBS)

# make bench: the resource sampler against a psutil tracker, and the
# slowdown of a context-switch-heavy and a page-fault-heavy target.
BENCH_EXTRA += $(OUT)/progs/res_pingpong $(OUT)/progs/res_faults
BENCH_SCRIPTS += bench/resources.sh
