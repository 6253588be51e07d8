# SPDX-License-Identifier: MIT
# pmetrics report, the wing in user/profile/ (its C files are built by the
# Makefile's user/*/*.c rule). Its pprof writer uses protobuf-c: the C
# for user/profile/pprof.proto is generated at build time into
# $(OUT)/profile/ (never committed) by protoc-c (Debian
# protobuf-c-compiler) and linked with libprotobuf-c (libprotobuf-c-dev),
# statically where its .a is installed, like the other libraries.
PROFILE_GEN := $(OUT)/profile
PPROF_PB_H := $(PROFILE_GEN)/pprof.pb-c.h
PPROF_PB_OBJ := $(PROFILE_GEN)/pprof.pb-c.o
PPROF_PB_ASAN_OBJ := $(OUT)/asan/profile/pprof.pb-c.o
LIB_OBJS += $(PPROF_PB_OBJ)
ASAN_LIB_OBJS += $(PPROF_PB_ASAN_OBJ)
DEP_EXTRA += $(PPROF_PB_OBJ) $(PPROF_PB_ASAN_OBJ)
ifneq ($(wildcard $(LIBDIR)/libprotobuf-c.a),)
PROTOBUF_C_LINK := -Wl,-Bstatic -lprotobuf-c -Wl,-Bdynamic
else
PROTOBUF_C_LINK := -lprotobuf-c
endif
LIBS += $(PROTOBUF_C_LINK)
DYN_LIBS += -lprotobuf-c

$(PROFILE_GEN)/pprof.pb-c.c $(PPROF_PB_H) &: user/profile/pprof.proto
	$(call msg,PROTOC-C,$@)
	$(Q)mkdir -p $(PROFILE_GEN)
	$(Q)protoc-c --c_out=$(PROFILE_GEN) --proto_path=user/profile $<

# Generated code: built without -Werror (its warnings are protoc-c's).
$(PPROF_PB_OBJ): $(PROFILE_GEN)/pprof.pb-c.c $(PPROF_PB_H)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(FP_FLAGS) -I$(PROFILE_GEN) $(DEPFLAGS) -c $< -o $@
$(PPROF_PB_ASAN_OBJ): $(PROFILE_GEN)/pprof.pb-c.c $(PPROF_PB_H)
	$(call msg,CC-ASAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(FP_FLAGS) $(ASAN_FLAGS) -I$(PROFILE_GEN) $(DEPFLAGS) -c $< -o $@

# The one user object that includes the generated header waits for it.
$(OUT)/user/profile/pprof.o $(OUT)/asan/user/profile/pprof.o: $(PPROF_PB_H)

# Linked wherever the user objects are (the recipes link $^ or $(LIB_OBJS)).
pmetrics $(OUT)/pmetrics $(OUT)/pmetrics.unstripped $(UNIT_BINS) $(OUT)/progs/res_sample: $(PPROF_PB_OBJ)
$(ASAN_UNIT_BINS) $(OUT)/asan/pmetrics: $(PPROF_PB_ASAN_OBJ)

# The capture writer's driver for tests/integration/test_report.sh: the
# sampler's calls, made by a tiny program from a script of samples.
PROFILE_PROGS := $(OUT)/progs/profile_capture
CHECK_EXTRA += $(PROFILE_PROGS)
$(OUT)/progs/profile_capture: tests/progs/profile_capture.c $(LIB_OBJS) | $(OUT)/progs
	$(call msg,LINK,$@)
	$(Q)$(CC) $(PM_CFLAGS) -o $@ $< $(LIB_OBJS) $(LIBS)
