# SPDX-License-Identifier: MIT
# Helpers for the guest's checks (tests/robot/checks.sh), in busybox sh:
# the same conventions as tests/integration/lib.sh. Each check is one
# `t_begin NAME` followed by exactly one of t_pass, t_fail MSG or t_skip
# REASON; the host (tests/robot/run.sh) reads the PASS/FAIL/SKIP lines off
# the serial console and names the kernel in each. INFO lines are shown
# as they are.

PMETRICS=/robot/pmetrics
PROGS=/robot/progs
T_TMP=/tmp/t
mkdir -p "$T_TMP"
T_NAME=""
MS=1000000

t_begin() { T_NAME="$1"; }
t_pass() { echo "PASS $T_NAME"; }
t_fail() { echo "FAIL $T_NAME: $*"; }
t_skip() { echo "SKIP $T_NAME: $*"; }
info() { echo "INFO $*"; }
# info_file PREFIX FILE: each line of FILE as an INFO line (at most 20).
info_file() { head -n 20 "$2" | while IFS= read -r l; do echo "INFO $1$l"; done; }

# fresh_dir: an empty output directory.
fresh_dir() { mktemp -d "$T_TMP/out.XXXXXX"; }

# rows FILE STATE: number of rows of STATE in a context-layout file.
rows() { awk -F, -v s="$2" '$1 == s { n++ } END { print n + 0 }' "$1" 2>/dev/null || echo 0; }

# durations_within FILE STATE MIN_NS MAX_NS: every STATE row's duration in range.
durations_within() {
	awk -F, -v s="$2" -v lo="$3" -v hi="$4" \
		'$1 == s { n++; if ($3 < lo || $3 > hi) bad++ } END { exit !(n > 0 && bad == 0) }' "$1"
}

# now_ns: wall-clock nanoseconds, to the whole second (busybox's date has
# no %N); starts_within widens the window's end by that second.
now_ns() { echo "$(date +%s)000000000"; }

# starts_within FILE FROM_NS TO_NS: every row's start in [FROM, TO + 1 s).
starts_within() {
	awk -F, -v lo="$2" -v hi="$3" \
		'{ n++; if ($2 < lo || $2 >= hi + 1000000000) bad++ } END { exit !(n > 0 && bad == 0) }' "$1"
}

# ---- what this kernel has ------------------------------------------------
# The kernel's config: /proc/config.gz (IKCONFIG_PROC, as on the robot),
# else /boot/config-RELEASE (as on Debian; the host puts it there).
KCONFIG=""
if [ -r /proc/config.gz ]; then
	zcat /proc/config.gz >"$T_TMP/kconfig" && KCONFIG_FROM=/proc/config.gz KCONFIG="$T_TMP/kconfig"
elif [ -r "/boot/config-$(uname -r)" ]; then
	KCONFIG="/boot/config-$(uname -r)" KCONFIG_FROM=$KCONFIG
fi
# kconfig SYM: y, m, n, or ? when no config can be read.
kconfig() {
	local v
	[ -n "$KCONFIG" ] || { echo "?"; return; }
	v=$(sed -n "s/^CONFIG_$1=//p" "$KCONFIG")
	echo "${v:-n}"
}
# Capabilities, from what the running kernel shows (not from its config):
# the uprobe PMU (UPROBE_EVENTS), BTF, tracepoints (TRACEPOINTS; listed in
# tracefs, which exists only with FTRACE).
has_uprobe_pmu() { [ -d /sys/bus/event_source/devices/uprobe ]; }
has_btf() { [ -e /sys/kernel/btf/vmlinux ]; }
has_tracepoints() { [ -d /sys/kernel/tracing/events/sched/sched_process_exit ]; }

# ---- running pmetrics ----------------------------------------------------
# pm_start ARGS...: `pmetrics record -v ARGS` in the background until its
# probes are live. Sets PM_PID and PM_ERR (its stderr).
pm_start() {
	PM_ERR=$(mktemp "$T_TMP/pm.XXXXXX")
	"$PMETRICS" record -v "$@" 2>"$PM_ERR" &
	PM_PID=$!
	i=0
	while [ $i -lt 3000 ]; do
		grep -q "probes live" "$PM_ERR" && return 0
		kill -0 "$PM_PID" 2>/dev/null || return 1
		sleep 0.02
		i=$((i + 1))
	done
	return 1
}

# pm_wait: waits for the background pmetrics (at most 60 s); its status.
pm_wait() {
	i=0
	while [ $i -lt 600 ] && kill -0 "$PM_PID" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
	kill -0 "$PM_PID" 2>/dev/null && kill -KILL "$PM_PID"
	wait "$PM_PID"
}

# expect_error NAME CODE PATTERN -- COMMAND...: as in
# tests/integration/lib.sh: COMMAND exits CODE and prints exactly one line
# (libbpf's own "libbpf:" lines aside) matching the extended regex
# PATTERN. (No -e/-x here: put `env VAR=VALUE` in COMMAND.)
expect_error() {
	local name="$1" code="$2" pattern="$3" out rc lines
	shift 3
	[ "$1" = "--" ] && shift
	t_begin "$name"
	out="$T_TMP/expect_error.out"
	"$@" >"$out" 2>&1
	rc=$?
	lines=$(grep -vc '^libbpf:' "$out")
	if [ "$rc" -ne "$code" ]; then t_fail "exit $rc, want $code: $(head -c 400 "$out")"
	elif [ "$lines" -ne 1 ]; then t_fail "$lines lines, want 1: $(head -c 400 "$out")"
	elif ! grep -v '^libbpf:' "$out" | grep -Eq -- "$pattern"; then t_fail "no '$pattern' in: $(cat "$out")"
	else t_pass; fi
}
