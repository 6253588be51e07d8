# SPDX-License-Identifier: MIT
# The emulated robot: pmetrics from `make robot` run on arm64 kernels under
# qemu-system-aarch64 (-M virt -cpu cortex-a53, TCG), with static arm64
# builds of the test programs in an initramfs (tests/robot/).
#
#   make test-robot   all three kernels: Debian's arm64 kernel (BTF, uprobe
#                     events), one built here from linux-source-6.1 with
#                     the robot's settings (FTRACE off, reduced debug
#                     info, no BTF), and the same with
#                     dist/kernel/pmetrics.cfg merged in. The two built
#                     kernels are cached outside the checkout
#                     (tests/robot/kernel-lib.sh).
#
# make test runs the cheap parts: tests/integration/test_kernel_fragment.sh
# (Kconfig only, no compiling) and tests/integration/test_robot_kernel.sh
# (Debian's kernel only).

# Debian packages: qemu, cpio for the initramfs, the kernel source and
# what configuring and building it needs (pahole: Kconfig asks it whether
# BTF can be made). make deps installs them; where that cannot be done
# the tests skip with the reason. The arm64 kernel and busybox-static are
# downloaded into the kernel cache (apt-get download), not installed.
ROBOT_PKGS := qemu-system-arm cpio linux-source-6.1 flex bison bc dwarves
CROSS_DEPS := $(if $(CROSS_DEPS),$(CROSS_DEPS);) bash .ci/install-deps $(ROBOT_PKGS) || \
	echo "pmetrics: the emulated robot tests will be skipped"

# Static arm64 builds of the native test programs, for the initramfs:
# spanprog as a static PIE (what a PIE main executable looks like to
# uprobes) and as a plain static executable, the resource burners, and
# the sampler's burner with frame pointers and without (as its tests
# build it).
ROBOT_PROGS := $(ROBOT_OUT)/progs/spanprog $(ROBOT_OUT)/progs/spanprog-nopie \
	$(ROBOT_OUT)/progs/res_burn $(ROBOT_OUT)/progs/res_touch $(ROBOT_OUT)/progs/sample_burn \
	$(ROBOT_OUT)/progs/sample_burn-nofp
$(ROBOT_OUT)/progs/spanprog: tests/progs/spanprog.c
	$(Q)mkdir -p $(@D)
	$(Q)$(ROBOT_TOOLS)gcc $(PROG_CFLAGS) -fPIE -static-pie -o $@ $<
$(ROBOT_OUT)/progs/spanprog-nopie: tests/progs/spanprog.c
	$(Q)mkdir -p $(@D)
	$(Q)$(ROBOT_TOOLS)gcc $(PROG_CFLAGS) -fno-pie -no-pie -static -o $@ $<
$(ROBOT_OUT)/progs/res_%: tests/progs/res_%.c
	$(Q)mkdir -p $(@D)
	$(Q)$(ROBOT_TOOLS)gcc $(PROG_CFLAGS) -static -o $@ $<
$(ROBOT_OUT)/progs/sample_burn: tests/progs/sample_burn.c
	$(Q)mkdir -p $(@D)
	$(Q)$(ROBOT_TOOLS)gcc $(PROG_CFLAGS) -fno-omit-frame-pointer -static -o $@ $<
$(ROBOT_OUT)/progs/sample_burn-nofp: tests/progs/sample_burn.c
	$(Q)mkdir -p $(@D)
	$(Q)$(ROBOT_TOOLS)gcc $(PROG_CFLAGS) -fomit-frame-pointer -static -o $@ $<

# What the guest runs: pmetrics and the programs. In make check only where
# the arm64 cross toolchain is there (else test_robot_kernel.sh skips,
# saying so, as the arm64 stage does).
.PHONY: robot-guest robot-guest-maybe test-robot robot-deps
robot-guest: robot-bin $(ROBOT_PROGS)
robot-guest-maybe:
	$(Q)if [ -z "$(ROBOT_TOOLS)" ] || bash .ci/install-deps --check --arm64-cross >/dev/null 2>&1; then \
		$(MAKE) --no-print-directory robot-guest; fi
CHECK_EXTRA += robot-guest-maybe

# How often watchpoints on a timed Python function fire, per kind of call,
# in the emulated robot with Debian's arm64 python3.11 (the premise of a
# Python hook that traps only timed calls): counts, not times.
BENCH_SCRIPTS += bench/watchpoints.sh
# The robot-server-shaped asyncio workload by the default hook and by the
# watchpoint hook: traps taken per run (and CPU where watchpoints fire).
BENCH_SCRIPTS += bench/python_watch.sh

robot-deps:
	$(Q)bash .ci/install-deps
	$(Q)$(if $(ROBOT_TOOLS),bash .ci/install-deps --arm64-cross)
	$(Q)bash .ci/install-deps $(ROBOT_PKGS)

test-robot: robot-deps
	$(Q)$(MAKE) --no-print-directory robot-guest
	$(Q)bash tests/robot/run.sh $(OUT) debian robot robot-pmetrics robot-nobtf
