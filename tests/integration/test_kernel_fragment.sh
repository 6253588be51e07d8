#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# dist/kernel/pmetrics.cfg against a kernel config with the robot's lines:
# Debian's linux-source-6.1, `allnoconfig` + tests/robot/robot-base.cfg
# (FTRACE off, DEBUG_INFO_REDUCED on, no BTF, no SCHEDSTATS; BPF_SYSCALL,
# BPF_JIT, PERF_EVENTS, CGROUP_BPF, IKCONFIG_PROC, DEBUG_FS, PREEMPT,
# KALLSYMS_ALL on), the fragment merged by the kernel's own
# scripts/kconfig/merge_config.sh and then `make olddefconfig`, as a Yocto
# kernel build does it. Every line of the fragment must come out with its
# value: a dependency that silently drops an option fails, naming it.
# No compiling: a few seconds once the source is unpacked (about 25 s the
# first time, into the kernel cache: see tests/robot/kernel-lib.sh).
# timeout: 600
source "$ROOT/tests/integration/lib.sh"
source "$ROOT/tests/robot/kernel-lib.sh"

FRAG="$ROOT/dist/kernel/pmetrics.cfg"
BASE_CFG="$ROOT/tests/robot/robot-base.cfg"

t_begin "kernel fragment: base config (the robot's lines) from linux-source-6.1"
if ! kernel_config "$T_TMP/base"; then
	t_skip "$KERNEL_WHY"
	exit 0
fi
lost=$(kernel_config_lost "$BASE_CFG" "$T_TMP/base/.config")
if [ -n "$lost" ]; then t_fail "robot-base.cfg lines lost: $(echo "$lost" | tr '\n' ';')"; else t_pass; fi

# What platform.md infers from toradex_defconfig, checked by Kconfig: with
# FTRACE off none of these can be on.
t_begin "kernel fragment: the base has no uprobe events, BPF events, tracepoints or BTF"
on=$(grep -E '^CONFIG_(UPROBE_EVENTS|UPROBES|BPF_EVENTS|TRACEPOINTS|TRACING|DEBUG_INFO_BTF|SCHEDSTATS|KPROBES)=' \
	"$T_TMP/base/.config")
if [ -z "$on" ]; then t_pass; else t_fail "on in the base: $(echo "$on" | tr '\n' ' ')"; fi

t_begin "kernel fragment: every line of pmetrics.cfg survives merge_config.sh + olddefconfig"
if ! kernel_config "$T_TMP/merged" "$FRAG"; then
	t_fail "$KERNEL_WHY"
else
	lost=$(kernel_config_lost "$FRAG" "$T_TMP/merged/.config")
	if [ -z "$lost" ]; then t_pass
	else t_fail "dropped or changed by Kconfig: $(echo "$lost" | tr '\n' ';')"; fi
fi

# The fragment must say something about each option pmetrics depends on
# (an edit that deletes one fails here rather than on a robot).
t_begin "kernel fragment: names every option pmetrics needs"
missing=""
for sym in BPF_SYSCALL BPF_JIT PERF_EVENTS FTRACE UPROBES UPROBE_EVENTS BPF_EVENTS DEBUG_INFO_BTF \
	DEBUG_INFO_REDUCED SCHEDSTATS SCHED_INFO IKCONFIG IKCONFIG_PROC CGROUP_BPF; do
	grep -qE "^(# )?CONFIG_$sym[= ]" "$FRAG" || missing+=" CONFIG_$sym"
done
if [ -z "$missing" ]; then t_pass; else t_fail "not in $FRAG:$missing"; fi

t_begin "kernel fragment: each option has a comment saying why"
bare=$(awk '/^(# )?CONFIG_/ { if (!comment) print; next } { comment = /^#/ && !/^# CONFIG_/ }' "$FRAG")
if [ -z "$bare" ]; then t_pass; else t_fail "no comment before: $(echo "$bare" | tr '\n' ';')"; fi
