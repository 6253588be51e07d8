# SPDX-License-Identifier: MIT
# The robot's architecture (arm64): its BPF objects, the unit tests and
# pmetrics built as arm64 code on x86, and make robot.

# ---- the other architectures' BPF objects ------------------------------
# The robot is arm64. The BPF objects and skeletons of every vmlinux/ARCH
# other than this machine's are built too (BPF code is compiled, not run,
# for a foreign target), so a kernel field or register use that only
# builds for one architecture fails here rather than on the robot.
OTHER_ARCHES := $(filter-out $(ARCH),$(patsubst vmlinux/%/vmlinux.h,%,$(wildcard vmlinux/*/vmlinux.h)))
.PHONY: bpf-skeletons other-arch-bpf
bpf-skeletons: $(SKELS)
other-arch-bpf:
	$(Q)set -e; for a in $(OTHER_ARCHES); do \
		$(MAKE) --no-print-directory OUT=$(OUT)/arch/$$a ARCH=$$a bpf-skeletons; done
CHECK_EXTRA += other-arch-bpf

# ---- arm64 code on an x86 machine ---------------------------------------
# The robot is arm64: its char is unsigned, its long double is 128-bit,
# simdjson takes its NEON path there. On x86, make check also cross-builds
# the cmocka tests and pmetrics itself for arm64 into build/cross-arm64;
# tests/run-all.sh runs the tests under qemu-user and
# tests/integration/test_analyze_arm64.sh compares the arm64 binaries'
# analyze output with this machine's, byte for byte. make deps installs
# the toolchain and arm64 libraries (.ci/install-deps --arm64-cross);
# where they are missing (not root, no mirror) the tests report the stage
# as skipped with the reason, kept in build/cross-arm64/skipped. A build
# failure is a failure.
.PHONY: test-bins arm64-build
test-bins: $(UNIT_BINS) $(OUT)/pmetrics
ifeq ($(ARCH_UNAME),x86_64)
CROSS_OUT := $(OUT)/cross-arm64
SIMDJSON_SONAME = $(shell objdump -p $(LIBDIR)/libsimdjson.so 2>/dev/null | sed -n 's/^ *SONAME *//p')
arm64-build:
	$(Q)mkdir -p $(CROSS_OUT) && rm -f $(CROSS_OUT)/skipped
	$(Q)if why=$$(bash .ci/install-deps --check --arm64-cross 2>&1); then \
		$(MAKE) --no-print-directory OUT=$(CROSS_OUT) ARCH_UNAME=aarch64 \
			CC=aarch64-linux-gnu-gcc CXX=aarch64-linux-gnu-g++ \
			SIMDJSON_LINK=-l:$(SIMDJSON_SONAME) test-bins && \
		$(MAKE) --no-print-directory robot-bin; \
	else \
		echo "no arm64 cross toolchain: $$why" >$(CROSS_OUT)/skipped; \
	fi
CHECK_EXTRA += arm64-build
UNIT_EXTRA += arm64-build
# Not fatal: without them the arm64 stage is reported as skipped.
CROSS_DEPS := bash .ci/install-deps --arm64-cross || \
	echo "pmetrics: the arm64 cross stage of make check will be skipped"
endif

# ---- an arm64 CPython for the unit tests ------------------------------------
# test_python_hooks checks the aarch64 paths of python_hooks.c (relative
# relocations, bl) on Debian's arm64 libpython3.11 and its debug file,
# downloaded once with apt-get download (nothing installed). Where that
# cannot be done the tests skip, saying why ($(PY_ARM64)/skipped).
PY_ARM64 := $(OUT)/testdata/arm64-python
.PHONY: arm64-python
arm64-python:
	$(Q)bash tests/unit/fetch-arm64-python.sh $(PY_ARM64)
UNIT_EXTRA += arm64-python
CHECK_EXTRA += arm64-python

# ---- make robot: the one file to copy to the robot ----------------------
# A static, stripped arm64 pmetrics, built on a machine of either
# architecture: nothing to install on the robot (its image has neither
# libbpf nor json-c) and no glibc version to match. Its JSON reader is
# json-c's: Debian's simdjson has no static library. Beside it: the
# debug symbols (pmetrics.debug, for gdb or perf on a copy of a crash)
# and its SHA-256.
ROBOT_OUT := $(OUT)/robot
ROBOT_TOOLS := $(if $(filter x86_64,$(ARCH_UNAME)),aarch64-linux-gnu-)
.PHONY: robot robot-bin
robot: deps
	$(Q)$(MAKE) --no-print-directory robot-bin
	$(Q)if command -v qemu-aarch64 >/dev/null && [ -n "$(ROBOT_TOOLS)" ]; then \
		qemu-aarch64 $(ROBOT_OUT)/pmetrics --version; fi
	@echo "copy $(ROBOT_OUT)/pmetrics to the robot (e.g. scp it to /usr/local/bin/), then run it as root"
robot-bin:
	$(Q)$(MAKE) --no-print-directory OUT=$(ROBOT_OUT) ARCH_UNAME=aarch64 CC=$(ROBOT_TOOLS)gcc \
		ANALYZE_SIMDJSON=0 PM_LDFLAGS=-static LIBS="-lbpf -ldw -lelf -ljson-c -lprotobuf-c -llzma -lbz2 -lz -lm -lpthread" \
		$(ROBOT_OUT)/pmetrics.unstripped
	$(Q)$(ROBOT_TOOLS)objcopy --only-keep-debug $(ROBOT_OUT)/pmetrics.unstripped $(ROBOT_OUT)/pmetrics.debug
	$(Q)$(ROBOT_TOOLS)strip -o $(ROBOT_OUT)/pmetrics $(ROBOT_OUT)/pmetrics.unstripped
	$(Q)$(ROBOT_TOOLS)objcopy --add-gnu-debuglink=$(ROBOT_OUT)/pmetrics.debug $(ROBOT_OUT)/pmetrics
	$(Q)cd $(ROBOT_OUT) && sha256sum pmetrics >pmetrics.sha256

