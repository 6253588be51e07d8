# pmetrics: one binary with its BPF objects embedded as bpftool skeletons.
#
#   make            build ./pmetrics
#   make test       install missing Debian packages, then run every test
#   make demo       install missing packages, build, trace the bundled demo
#   make bench      benchmarks (ratios against baselines of the same run)
#   make fuzz       libFuzzer runs of the input readers
#   make robot      one static arm64 pmetrics to copy to the robot (build/robot)
#   V=1             show full commands

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
# -ffp-contract=off: no fused multiply-add, so arithmetic rounds the same
# on every architecture (gcc fuses a*b+c on arm64 by default, which moved
# some SVG coordinates by 0.1 against x86's; see test_analyze_arm64.sh).
FP_FLAGS := -ffp-contract=off
PM_CFLAGS := $(CFLAGS) $(WARN) $(FP_FLAGS) -std=gnu11 -D_GNU_SOURCE -Iinclude -Iuser -I$(OUT) -DMULTIARCH=\"$(ARCH_UNAME)-linux-gnu\"
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) $(WARN) \
	-Wno-unused-parameter -Ivmlinux/$(ARCH) -Iinclude $(CLANG_BPF_SYS_INCLUDES)

# Link libbpf, libelf, zlib and json-c statically where the .a files exist
# so ./pmetrics can be copied to another machine of the same architecture.
LIBDIR := /usr/lib/$(ARCH_UNAME)-linux-gnu
STATIC_OK := $(and $(wildcard $(LIBDIR)/libbpf.a),$(wildcard $(LIBDIR)/libelf.a),$(wildcard $(LIBDIR)/libz.a),$(wildcard $(LIBDIR)/libjson-c.a))
ifneq ($(STATIC_OK),)
LIBS := -Wl,-Bstatic -lbpf -lelf -ljson-c -lz -Wl,-Bdynamic -lm -lpthread
else
LIBS := -lbpf -lelf -ljson-c -lz -lm -lpthread
endif
DYN_LIBS := -lbpf -lelf -ljson-c -lz -lm -lpthread

BPF_SRCS := $(sort $(wildcard bpf/*.bpf.c))
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(OUT)/bpf/%.bpf.o,$(BPF_SRCS))
SKELS := $(patsubst bpf/%.bpf.c,$(OUT)/%.skel.h,$(BPF_SRCS))
USER_SRCS := $(sort $(wildcard user/*.c))
USER_OBJS := $(patsubst user/%.c,$(OUT)/user/%.o,$(USER_SRCS))
LIB_OBJS := $(filter-out $(OUT)/user/main.o,$(USER_OBJS))
ASAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
ASAN_OBJS := $(patsubst user/%.c,$(OUT)/asan/user/%.o,$(USER_SRCS))
ASAN_LIB_OBJS := $(filter-out $(OUT)/asan/user/main.o,$(ASAN_OBJS))

UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(patsubst tests/unit/%.c,$(OUT)/tests/%,$(UNIT_SRCS))
ASAN_UNIT_BINS := $(patsubst tests/unit/%.c,$(OUT)/asan/tests/%,$(UNIT_SRCS))

.PHONY: all deps test check unit unit-asan integration demo bench fuzz clean

# Hooks filled by the feature blocks below.
CHECK_EXTRA :=
BENCH_EXTRA :=
BENCH_SCRIPTS := bench/spans.sh bench/python.sh
FUZZ_TARGETS :=
FUZZ_SCRIPTS :=
.DELETE_ON_ERROR:
.SECONDARY:

all: pmetrics

# ./pmetrics; $(OUT)/pmetrics[.unstripped] is the same link inside a
# build tree of its own (the arm64 and robot builds below).
pmetrics $(OUT)/pmetrics $(OUT)/pmetrics.unstripped: $(USER_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(PM_CFLAGS) $(PM_LDFLAGS) -o $@ $^ $(LIBS)

$(OUT)/bpf/%.bpf.o: bpf/%.bpf.c $(wildcard include/*.h) $(wildcard bpf/*.h) vmlinux/$(ARCH)/vmlinux.h | $(OUT)/bpf
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@
	$(Q)$(LLVM_STRIP) -g $@

$(OUT)/%.skel.h: $(OUT)/bpf/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst -,_,$*)_bpf > $@

$(OUT)/user/%.o: user/%.c $(wildcard include/*.h) $(wildcard user/*.h) $(SKELS) | $(OUT)/user
	$(call msg,CC,$@)
	$(Q)$(CC) $(PM_CFLAGS) -c $< -o $@

$(OUT)/asan/user/%.o: user/%.c $(wildcard include/*.h) $(wildcard user/*.h) $(SKELS) | $(OUT)/asan/user
	$(call msg,CC-ASAN,$@)
	$(Q)$(CC) $(PM_CFLAGS) $(ASAN_FLAGS) -c $< -o $@

$(OUT)/tests/test_%: tests/unit/test_%.c $(LIB_OBJS) | $(OUT)/tests
	$(call msg,UNIT,$@)
	$(Q)$(CC) $(PM_CFLAGS) -o $@ $^ -lcmocka $(DYN_LIBS)

$(OUT)/asan/tests/test_%: tests/unit/test_%.c $(ASAN_LIB_OBJS) | $(OUT)/asan/tests
	$(call msg,UNIT-ASAN,$@)
	$(Q)$(CC) $(PM_CFLAGS) $(ASAN_FLAGS) -o $@ $^ -lcmocka $(DYN_LIBS)

$(OUT)/bpf $(OUT)/user $(OUT)/asan/user $(OUT)/tests $(OUT)/asan/tests $(OUT)/progs:
	$(Q)mkdir -p $@

# ---- traced test programs (tests/progs) --------------------------------
PROG_CFLAGS := -O1 -g -fno-inline -fno-optimize-sibling-calls -Wall -Wextra -Werror -pthread
PROGS := $(OUT)/progs/spanprog $(OUT)/progs/spanprog-nopie $(OUT)/progs/libspanlib.so.1 \
	$(OUT)/progs/libprog $(OUT)/progs/demo

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


# ---- BEGIN resources ----
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
# ---- END resources ----

# ---- BEGIN analyze ----
# pmetrics analyze (issue 5). The JSON lines reader has a simdjson fast
# path in C++ (user/analyze_jsonl_simd.cpp), built when libsimdjson-dev is
# installed: about 15x less parse time than json-c alone. ANALYZE_SIMDJSON=0
# builds json-c only (no libsimdjson/libstdc++ needed at run time).
ANALYZE_SIMDJSON ?= $(if $(wildcard /usr/include/simdjson.h),1,0)
ifeq ($(ANALYZE_SIMDJSON),1)
CXX := g++
PM_CXXFLAGS = $(CFLAGS) $(WARN) $(FP_FLAGS) -std=c++17 -fno-exceptions -fno-rtti -Iinclude -Iuser
ANALYZE_SIMD_OBJ := $(OUT)/user/analyze_jsonl_simd.o
ANALYZE_ASAN_SIMD_OBJ := $(OUT)/asan/user/analyze_jsonl_simd.o
PM_CFLAGS += -DPM_HAVE_SIMDJSON
SIMDJSON_LINK ?= -lsimdjson
LIBS += $(SIMDJSON_LINK) -lstdc++
DYN_LIBS += $(SIMDJSON_LINK) -lstdc++
LIB_OBJS += $(ANALYZE_SIMD_OBJ)

$(ANALYZE_SIMD_OBJ): user/analyze_jsonl_simd.cpp $(wildcard user/*.h) | $(OUT)/user
	$(call msg,CXX,$@)
	$(Q)$(CXX) $(PM_CXXFLAGS) -c $< -o $@
$(ANALYZE_ASAN_SIMD_OBJ): user/analyze_jsonl_simd.cpp $(wildcard user/*.h) | $(OUT)/asan/user
	$(call msg,CXX-ASAN,$@)
	$(Q)$(CXX) $(PM_CXXFLAGS) $(ASAN_FLAGS) -c $< -o $@
# Linked wherever the C objects are (the recipes link $^ or $(LIB_OBJS)).
pmetrics $(OUT)/pmetrics $(UNIT_BINS) $(OUT)/progs/res_sample: $(ANALYZE_SIMD_OBJ)
$(ASAN_UNIT_BINS): $(ANALYZE_ASAN_SIMD_OBJ)
endif
BENCH_SCRIPTS += bench/analyze.sh

# make fuzz: libFuzzer harnesses of the readers (tests/fuzz), the analyze
# sources rebuilt with clang's coverage and ASan/UBSan.
ANALYZE_FUZZ_FLAGS := -g -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer $(WARN) -D_GNU_SOURCE -Iinclude -Iuser
ANALYZE_FUZZ_OBJS := $(patsubst user/%.c,$(OUT)/fuzz/user/%.o,$(wildcard user/analyze*.c))
ANALYZE_FUZZ_LIBS := -ljson-c -lz -lm
ifeq ($(ANALYZE_SIMDJSON),1)
ANALYZE_FUZZ_FLAGS += -DPM_HAVE_SIMDJSON
ANALYZE_FUZZ_OBJS += $(OUT)/fuzz/user/analyze_jsonl_simd.o
ANALYZE_FUZZ_LIBS += -lsimdjson
endif
FUZZ_TARGETS += $(OUT)/fuzz/fuzz_jsonl $(OUT)/fuzz/fuzz_series
FUZZ_SCRIPTS += tests/fuzz/run.sh

.PHONY: analyze-fuzz-deps
analyze-fuzz-deps:
	$(Q)bash .ci/install-deps libclang-rt-14-dev
$(OUT)/fuzz/user:
	$(Q)mkdir -p $@
$(OUT)/fuzz/user/%.o: user/%.c $(wildcard user/*.h) | $(OUT)/fuzz/user analyze-fuzz-deps
	$(call msg,CC-FUZZ,$@)
	$(Q)$(CLANG) $(ANALYZE_FUZZ_FLAGS) -std=gnu11 -c $< -o $@
$(OUT)/fuzz/user/analyze_jsonl_simd.o: user/analyze_jsonl_simd.cpp $(wildcard user/*.h) | $(OUT)/fuzz/user analyze-fuzz-deps
	$(call msg,CXX-FUZZ,$@)
	$(Q)$(CLANG)++ $(ANALYZE_FUZZ_FLAGS) -std=c++17 -fno-exceptions -fno-rtti -c $< -o $@
$(OUT)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_common.h $(ANALYZE_FUZZ_OBJS) | analyze-fuzz-deps
	$(call msg,FUZZ,$@)
	$(Q)$(CLANG) $(ANALYZE_FUZZ_FLAGS) -std=gnu11 -c $< -o $@.o
	$(Q)$(CLANG)++ -fsanitize=fuzzer,address,undefined -o $@ $@.o $(ANALYZE_FUZZ_OBJS) $(ANALYZE_FUZZ_LIBS)
# ---- END analyze ----

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
UNIT_EXTRA := arm64-build
# Not fatal: without them the arm64 stage is reported as skipped.
CROSS_DEPS := bash .ci/install-deps --arm64-cross || \
	echo "pmetrics: the arm64 cross stage of make check will be skipped"
endif

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
		ANALYZE_SIMDJSON=0 PM_LDFLAGS=-static LIBS="-lbpf -lelf -ljson-c -lz -lm -lpthread" \
		$(ROBOT_OUT)/pmetrics.unstripped
	$(Q)$(ROBOT_TOOLS)objcopy --only-keep-debug $(ROBOT_OUT)/pmetrics.unstripped $(ROBOT_OUT)/pmetrics.debug
	$(Q)$(ROBOT_TOOLS)strip -o $(ROBOT_OUT)/pmetrics $(ROBOT_OUT)/pmetrics.unstripped
	$(Q)$(ROBOT_TOOLS)objcopy --add-gnu-debuglink=$(ROBOT_OUT)/pmetrics.debug $(ROBOT_OUT)/pmetrics
	$(Q)cd $(ROBOT_OUT) && sha256sum pmetrics >pmetrics.sha256

# ---- entry points ------------------------------------------------------
deps:
	$(Q)bash .ci/install-deps
	$(Q)$(CROSS_DEPS)

test: deps
	$(Q)$(MAKE) --no-print-directory check

check: pmetrics $(UNIT_BINS) $(ASAN_UNIT_BINS) $(PROGS) $(CHECK_EXTRA)
	$(Q)bash tests/run-all.sh $(OUT)

unit: $(UNIT_BINS) $(ASAN_UNIT_BINS) $(UNIT_EXTRA)
	$(Q)bash tests/run-all.sh $(OUT) unit

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
