# SPDX-License-Identifier: MIT
# pmetrics analyze, the wing in user/analyze/ (its C files are built by
# the Makefile's user/*/*.c rule). Its JSON lines reader has a simdjson
# fast path in C++ (user/analyze/jsonl_simdjson.cpp), built when
# libsimdjson-dev is installed: about 15x less parse time than json-c
# alone. ANALYZE_SIMDJSON=0 builds json-c only (no libsimdjson/libstdc++
# needed at run time).
ANALYZE_SIMDJSON ?= $(if $(wildcard /usr/include/simdjson.h),1,0)
ifeq ($(ANALYZE_SIMDJSON),1)
CXX := g++
PM_CXXFLAGS = $(CFLAGS) $(WARN) $(FP_FLAGS) -std=c++17 -fno-exceptions -fno-rtti -Iinclude -Iuser
ANALYZE_SIMD_OBJ := $(OUT)/user/analyze/jsonl_simdjson.o
ANALYZE_ASAN_SIMD_OBJ := $(OUT)/asan/user/analyze/jsonl_simdjson.o
PM_CFLAGS += -DPM_HAVE_SIMDJSON
SIMDJSON_LINK ?= -lsimdjson
LIBS += $(SIMDJSON_LINK) -lstdc++
DYN_LIBS += $(SIMDJSON_LINK) -lstdc++
LIB_OBJS += $(ANALYZE_SIMD_OBJ)
DEP_EXTRA += $(ANALYZE_SIMD_OBJ) $(ANALYZE_ASAN_SIMD_OBJ)

$(ANALYZE_SIMD_OBJ): user/analyze/jsonl_simdjson.cpp
	$(call msg,CXX,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CXX) $(PM_CXXFLAGS) $(DEPFLAGS) -c $< -o $@
$(ANALYZE_ASAN_SIMD_OBJ): user/analyze/jsonl_simdjson.cpp
	$(call msg,CXX-ASAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CXX) $(PM_CXXFLAGS) $(ASAN_FLAGS) $(DEPFLAGS) -c $< -o $@
# Linked wherever the C objects are (the recipes link $^ or $(LIB_OBJS)).
pmetrics $(OUT)/pmetrics $(UNIT_BINS) $(OUT)/progs/res_sample: $(ANALYZE_SIMD_OBJ)
$(ASAN_UNIT_BINS) $(OUT)/asan/pmetrics: $(ANALYZE_ASAN_SIMD_OBJ)
endif
BENCH_SCRIPTS += bench/analyze.sh

# make fuzz: libFuzzer harnesses of the readers (tests/fuzz), the analyze
# sources rebuilt with clang's coverage and ASan/UBSan.
ANALYZE_FUZZ_FLAGS := -g -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer $(WARN) -D_GNU_SOURCE -Iinclude -Iuser
ANALYZE_FUZZ_OBJS := $(patsubst user/%.c,$(OUT)/fuzz/user/%.o,$(wildcard user/analyze/*.c))
ANALYZE_FUZZ_LIBS := -ljson-c -lz -lm
ifeq ($(ANALYZE_SIMDJSON),1)
ANALYZE_FUZZ_FLAGS += -DPM_HAVE_SIMDJSON
ANALYZE_FUZZ_OBJS += $(OUT)/fuzz/user/analyze/jsonl_simdjson.o
ANALYZE_FUZZ_LIBS += -lsimdjson
endif
FUZZ_TARGETS += $(OUT)/fuzz/fuzz_jsonl $(OUT)/fuzz/fuzz_series
FUZZ_SCRIPTS += tests/fuzz/run.sh

.PHONY: analyze-fuzz-deps
analyze-fuzz-deps:
	$(Q)bash .ci/install-deps libclang-rt-14-dev
$(OUT)/fuzz/user/%.o: user/%.c | analyze-fuzz-deps
	$(call msg,CC-FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(ANALYZE_FUZZ_FLAGS) $(DEPFLAGS) -std=gnu11 -c $< -o $@
$(OUT)/fuzz/user/analyze/jsonl_simdjson.o: user/analyze/jsonl_simdjson.cpp | analyze-fuzz-deps
	$(call msg,CXX-FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG)++ $(ANALYZE_FUZZ_FLAGS) $(DEPFLAGS) -std=c++17 -fno-exceptions -fno-rtti -c $< -o $@
DEP_EXTRA += $(ANALYZE_FUZZ_OBJS)
$(OUT)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_common.h $(ANALYZE_FUZZ_OBJS) | analyze-fuzz-deps
	$(call msg,FUZZ,$@)
	$(Q)$(CLANG) $(ANALYZE_FUZZ_FLAGS) -std=gnu11 -c $< -o $@.o
	$(Q)$(CLANG)++ -fsanitize=fuzzer,address,undefined -o $@ $@.o $(ANALYZE_FUZZ_OBJS) $(ANALYZE_FUZZ_LIBS)
