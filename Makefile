# SPDX-License-Identifier: MIT
# pmetrics: one binary with its BPF objects embedded as bpftool skeletons.
#
#   make            build ./pmetrics
#   make test       install missing Debian packages, then run every test
#   make demo       install missing packages, build, trace the bundled demo
#   make bench      benchmarks (ratios against baselines of the same run)
#   make fuzz       libFuzzer runs of the input readers
#   make robot      one static arm64 pmetrics to copy to the robot (build/robot)
#   make unit       the cmocka tests, plain and under ASan/UBSan
#   make unit-asan  the cmocka tests under ASan/UBSan only
#   V=1             show full commands
#
# This file holds the core build; each feature's extra rules live in
# mk/*.mk (test programs, resources, analyze, other architectures).

ARCH_UNAME := $(shell uname -m)
ARCH := $(patsubst x86_64,x86,$(patsubst aarch64,arm64,$(ARCH_UNAME)))
OUT := build
CLANG ?= clang
BPFTOOL ?= bpftool
LLVM_STRIP ?= llvm-strip
CC := gcc

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

# System include dirs clang would use for the host, so BPF code finds
# <asm/...> headers (libbpf-bootstrap's trick).
CLANG_BPF_SYS_INCLUDES := $(shell $(CLANG) -v -E - </dev/null 2>&1 \
	| sed -n '/<...> search starts here:/,/End of search list./{ s| \(/.*\)|-idirafter \1|p }')

WARN := -Wall -Wextra -Werror
CFLAGS ?= -O2 -g
# Every object records the headers it includes (-MMD), and a removed
# header does not break the build (-MP).
DEPFLAGS = -MMD -MP -MF $(@:.o=.d)
# -ffp-contract=off: no fused multiply-add, so arithmetic rounds the same
# on every architecture (gcc fuses a*b+c on arm64 by default, which moved
# some SVG coordinates by 0.1 against x86's; see test_analyze_arm64.sh).
FP_FLAGS := -ffp-contract=off
PM_CFLAGS := $(CFLAGS) $(WARN) $(FP_FLAGS) -std=gnu11 -D_GNU_SOURCE -Iinclude -Iuser -I$(OUT)
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) $(WARN) \
	-Wno-unused-parameter -Ivmlinux/$(ARCH) -Iinclude $(CLANG_BPF_SYS_INCLUDES)

# Link libbpf, libelf, zlib, liblzma and json-c statically where the .a
# files exist so ./pmetrics can be copied to another machine of the same
# architecture. liblzma reads MiniDebugInfo (.gnu_debugdata, xz) of a
# stripped interpreter.
LIBDIR := /usr/lib/$(ARCH_UNAME)-linux-gnu
STATIC_OK := $(and $(wildcard $(LIBDIR)/libbpf.a),$(wildcard $(LIBDIR)/libelf.a),$(wildcard $(LIBDIR)/libz.a),$(wildcard $(LIBDIR)/liblzma.a),$(wildcard $(LIBDIR)/libjson-c.a))
ifneq ($(STATIC_OK),)
LIBS := -Wl,-Bstatic -lbpf -lelf -ljson-c -llzma -lz -Wl,-Bdynamic -lm -lpthread
else
LIBS := -lbpf -lelf -ljson-c -llzma -lz -lm -lpthread
endif
DYN_LIBS := -lbpf -lelf -ljson-c -llzma -lz -lm -lpthread

BPF_SRCS := $(sort $(wildcard bpf/*.bpf.c))
# The span tracers and the sampler are built a second time with
# PMETRICS_NO_BTF: without a single CO-RE relocation, for kernels with no
# BTF at all (the loader picks the build; see bpf/span.bpf.c).
NOBTF_TRACERS := span pyspan sampler
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(OUT)/bpf/%.bpf.o,$(BPF_SRCS)) \
	$(patsubst %,$(OUT)/bpf/%_nobtf.bpf.o,$(NOBTF_TRACERS))
SKELS := $(patsubst $(OUT)/bpf/%.bpf.o,$(OUT)/%.skel.h,$(BPF_OBJS))
# user/ and its wings (user/analyze/, ...).
USER_SRCS := $(sort $(wildcard user/*.c user/*/*.c))
USER_OBJS := $(patsubst user/%.c,$(OUT)/user/%.o,$(USER_SRCS))
LIB_OBJS := $(filter-out $(OUT)/user/main.o,$(USER_OBJS))
ASAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
ASAN_OBJS := $(patsubst user/%.c,$(OUT)/asan/user/%.o,$(USER_SRCS))
ASAN_LIB_OBJS := $(filter-out $(OUT)/asan/user/main.o,$(ASAN_OBJS))

UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(patsubst tests/unit/%.c,$(OUT)/tests/%,$(UNIT_SRCS))
ASAN_UNIT_BINS := $(patsubst tests/unit/%.c,$(OUT)/asan/tests/%,$(UNIT_SRCS))

.PHONY: all deps test check unit unit-asan integration demo bench fuzz clean

# A compile that fails on a machine short of a build package ends by
# naming the missing packages, instead of a bare "header not found".
OR_NAME_MISSING := || { bash .ci/install-deps --check --build; exit 1; }

# Hooks filled by mk/*.mk.
CHECK_EXTRA :=
BENCH_EXTRA :=
BENCH_SCRIPTS := bench/spans.sh bench/python.sh
FUZZ_TARGETS :=
FUZZ_SCRIPTS :=
UNIT_EXTRA :=
DEP_EXTRA :=
.DELETE_ON_ERROR:
.SECONDARY:

all: pmetrics

# ./pmetrics; $(OUT)/pmetrics[.unstripped] is the same link inside a
# build tree of its own (the arm64 and robot builds in mk/arch.mk).
pmetrics $(OUT)/pmetrics $(OUT)/pmetrics.unstripped: $(USER_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(PM_CFLAGS) $(PM_LDFLAGS) -o $@ $^ $(LIBS)

$(OUT)/bpf/%.bpf.o: bpf/%.bpf.c vmlinux/$(ARCH)/vmlinux.h
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) $(DEPFLAGS) -c $< -o $@ $(OR_NAME_MISSING)
	$(Q)$(LLVM_STRIP) -g $@

# The kernel feature probes must load where there is no BTF: no CO-RE.
$(OUT)/bpf/kernel_probe.bpf.o: BPF_CFLAGS += -DBPF_NO_PRESERVE_ACCESS_INDEX

$(OUT)/bpf/%_nobtf.bpf.o: bpf/%.bpf.c vmlinux/$(ARCH)/vmlinux.h
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -DPMETRICS_NO_BTF -DBPF_NO_PRESERVE_ACCESS_INDEX $(DEPFLAGS) -c $< -o $@ $(OR_NAME_MISSING)
	$(Q)$(LLVM_STRIP) -g $@

$(OUT)/%.skel.h: $(OUT)/bpf/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst -,_,$*)_bpf > $@ $(OR_NAME_MISSING)

# The skeletons are made before any user object is compiled (order
# only); the .d files then say which object includes which.
$(OUT)/user/%.o: user/%.c | $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(PM_CFLAGS) $(DEPFLAGS) -c $< -o $@ $(OR_NAME_MISSING)

$(OUT)/asan/user/%.o: user/%.c | $(SKELS)
	$(call msg,CC-ASAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(PM_CFLAGS) $(ASAN_FLAGS) $(DEPFLAGS) -c $< -o $@

# pmetrics itself under ASan/UBSan, for the integration tests that run it
# that way (tests/run-all.sh, integration-asan).
$(OUT)/asan/pmetrics: $(ASAN_OBJS)
	$(call msg,LINK-ASAN,$@)
	$(Q)$(CC) $(PM_CFLAGS) $(ASAN_FLAGS) -o $@ $^ $(DYN_LIBS)

$(OUT)/tests/test_%: tests/unit/test_%.c $(LIB_OBJS)
	$(call msg,UNIT,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(PM_CFLAGS) -o $@ $^ -lcmocka $(DYN_LIBS)

$(OUT)/asan/tests/test_%: tests/unit/test_%.c $(ASAN_LIB_OBJS)
	$(call msg,UNIT-ASAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(PM_CFLAGS) $(ASAN_FLAGS) -o $@ $^ -lcmocka $(DYN_LIBS)

include mk/progs.mk mk/resources.mk mk/analyze.mk mk/profile.mk mk/sampler.mk mk/arch.mk mk/robot.mk

# ---- entry points ------------------------------------------------------
deps:
	$(Q)bash .ci/install-deps
	$(Q)$(CROSS_DEPS)

test: deps
	$(Q)$(MAKE) --no-print-directory check

check: pmetrics $(OUT)/asan/pmetrics $(UNIT_BINS) $(ASAN_UNIT_BINS) $(PROGS) $(CHECK_EXTRA)
	$(Q)bash tests/run-all.sh $(OUT)

unit: $(UNIT_BINS) $(ASAN_UNIT_BINS) $(UNIT_EXTRA)
	$(Q)bash tests/run-all.sh $(OUT) unit

unit-asan: $(ASAN_UNIT_BINS)
	$(Q)bash tests/run-all.sh $(OUT) unit-asan

integration: pmetrics $(PROGS) $(CHECK_EXTRA)
	$(Q)bash tests/run-all.sh $(OUT) integration

demo:
	$(Q)bash .ci/install-deps
	$(Q)$(MAKE) --no-print-directory pmetrics $(OUT)/progs/demo
	$(Q)bash tests/demo.sh $(OUT)

bench: deps
	$(Q)$(MAKE) --no-print-directory pmetrics $(PROGS) $(CHECK_EXTRA) $(BENCH_EXTRA)
	$(Q)set -e; for s in $(BENCH_SCRIPTS); do bash $$s $(OUT); done

fuzz: $(FUZZ_TARGETS)
	$(Q)set -e; for s in $(FUZZ_SCRIPTS); do bash $$s $(OUT); done

clean:
	$(Q)rm -rf $(OUT) pmetrics

-include $(wildcard $(patsubst %.o,%.d,$(USER_OBJS) $(ASAN_OBJS) $(BPF_OBJS) $(DEP_EXTRA)))
