# SPDX-License-Identifier: MIT
# Helpers sourced by tests/integration/test_*.sh.
#
# run-all.sh exports PMETRICS (the binary), BUILD (build dir, absolute),
# ROOT (repository root). Each check is one `t_begin NAME` followed by
# exactly one of t_pass, t_fail MSG or t_skip REASON; the script prints one
# line per check and run-all.sh totals them.

set -u
: "${PMETRICS:?run through tests/run-all.sh}"
PROGS="$BUILD/progs"
T_NAME=""
T_TMP=$(mktemp -d /tmp/pmetrics-test.XXXXXX)
trap 'rm -rf "$T_TMP"' EXIT

t_begin() { T_NAME="$1"; }
t_pass() { echo "PASS $T_NAME"; }
t_fail() { echo "FAIL $T_NAME: $*"; }
t_skip() { echo "SKIP $T_NAME: $*"; }

# t_check NAME CONDITION-COMMAND... : pass when the command succeeds.
t_check() {
	local name="$1"; shift
	t_begin "$name"
	if "$@"; then t_pass; else t_fail "check failed: $*"; fi
}

# need_root: prints a skip for the current check and returns 1 when not root.
need_root() {
	if [ "$(id -u)" -ne 0 ]; then t_skip "needs root"; return 1; fi
	return 0
}

# fresh_dir: an empty output directory under the test's temp dir.
fresh_dir() { local d; d=$(mktemp -d "$T_TMP/out.XXXXXX"); echo "$d"; }

# rows FILE STATE: number of rows of STATE in a context-layout file.
rows() { awk -F, -v s="$2" '$1 == s { n++ } END { print n + 0 }' "$1" 2>/dev/null; }

now_ns() { date +%s%N; }

# pm_start ARGS...: runs `pmetrics record -v ARGS` in the background and
# waits until its probes are live. Sets PM_PID and PM_ERR (its stderr).
pm_start() {
	PM_ERR=$(mktemp "$T_TMP/pm.XXXXXX")
	"$PMETRICS" record -v "$@" 2>"$PM_ERR" &
	PM_PID=$!
	for _ in $(seq 1 1000); do
		grep -q "probes live" "$PM_ERR" && return 0
		kill -0 "$PM_PID" 2>/dev/null || return 1
		sleep 0.01
	done
	return 1
}

# pm_wait: waits for the background pmetrics (at most 30 s); returns its status.
pm_wait() {
	local i
	for i in $(seq 1 300); do
		kill -0 "$PM_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$PM_PID" 2>/dev/null && kill -KILL "$PM_PID"
	wait "$PM_PID"
}

# durations_within FILE STATE MIN_NS MAX_NS: every STATE row's duration in range.
durations_within() {
	awk -F, -v s="$2" -v lo="$3" -v hi="$4" \
		'$1 == s { n++; if ($3 < lo || $3 > hi) bad++ } END { exit !(n > 0 && bad == 0) }' "$1"
}

# starts_within FILE FROM_NS TO_NS: every row's start time inside the window.
starts_within() {
	awk -F, -v lo="$2" -v hi="$3" \
		'{ n++; if ($2 < lo || $2 > hi) bad++ } END { exit !(n > 0 && bad == 0) }' "$1"
}

# expect_error NAME CODE PATTERN [-x PATH] [-e VAR=VALUE]... -- COMMAND...
# The one shape of every bad-input check: COMMAND (with each VAR=VALUE in
# its environment) exits CODE and prints exactly one line, stdout and
# stderr together (libbpf's own "libbpf:" log lines aside), matching the
# extended regex PATTERN; PATH, when given, does not exist afterwards (a
# failed start leaves nothing behind).
expect_error() {
	local name="$1" code="$2" pattern="$3" absent="" envs=() out rc lines
	shift 3
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do
		case "$1" in
		-x) absent="$2"; shift 2 ;;
		-e) envs+=("$2"); shift 2 ;;
		*) echo "expect_error: bad argument $1" >&2; return 2 ;;
		esac
	done
	shift
	t_begin "$name"
	out="$T_TMP/expect_error.out"
	env ${envs[@]+"${envs[@]}"} "$@" >"$out" 2>&1
	rc=$?
	lines=$(grep -vc '^libbpf:' "$out")
	if [ "$rc" -ne "$code" ]; then t_fail "exit $rc, want $code: $(head -c 400 "$out")"
	elif [ "$lines" -ne 1 ]; then t_fail "$lines lines, want 1: $(head -c 400 "$out")"
	elif ! grep -v '^libbpf:' "$out" | grep -Eq -- "$pattern"; then t_fail "no '$pattern' in: $(cat "$out")"
	elif [ -n "$absent" ] && [ -e "$absent" ]; then t_fail "left $absent behind"
	else t_pass; fi
}

# ---- Python interpreters (test_python.sh, test_sample.sh) --------------------
# interpreter VERSION: path of the pyenv interpreter, empty when absent.
interpreter() {
	local root
	root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
	ls -d "$root"/versions/"$1".*/bin/python"$1" 2>/dev/null | head -n 1
}

# stripped_copy MINOR: a directory holding the pyenv libpython3.MINOR
# stripped as the robot's image strips it (.dynsym only), or empty.
stripped_copy() {
	local minor="$1" py lib dir
	py=$(interpreter "3.$minor")
	lib=$(dirname "$(dirname "$py")")/lib/libpython3.$minor.so.1.0
	[ -f "$lib" ] || return 0
	dir="$T_TMP/stripped3$minor"
	mkdir -p "$dir"
	strip --strip-unneeded -o "$dir/libpython3.$minor.so.1.0" "$lib" || return 0
	echo "$dir"
}

# expect_spans NAME DATA REFS NAME=COUNT...: DATA's rows for each NAME are
# exactly COUNT and each holds a duration the function measured itself in
# REFS, exceeding it by at most $MAX_EXCESS_US (span_refs.py); prints the
# median and largest excess under the PASS line.
expect_spans() {
	local name="$1" data="$2" refs="$3" verdict; shift 3
	t_begin "$name"
	if verdict=$(python3 "$ROOT/tests/integration/span_refs.py" "$data" "$refs" "$MAX_EXCESS_US" "$@"); then
		t_pass; sed 's/^/    /' <<<"$verdict"
	else
		t_fail "$(tail -n 1 <<<"$verdict")"
	fi
}

# ---- an emulated x86-64 CPU (test_python_watch.sh, test_python_kernel61.sh) --
# rerun_in_tcg_x86 NAME SCRIPT: the test SCRIPT run again, with
# PMETRICS_IN_TCG=1, under Debian's amd64 kernel on an emulated CPU
# (tests/robot/tcg-x86.sh); the guest's output goes to $T_TMP/guest.log.
# When the guest cannot run it, NAME.emulated is skipped (no emulator to
# be had) or failed, and the return is 1.
rerun_in_tcg_x86() {
	local name="$1" script="$2" guest="$T_TMP/guest.sh"
	bash "$ROOT/.ci/install-deps" qemu-system-x86 cpio >/dev/null 2>&1 || true
	source "$ROOT/tests/robot/tcg-x86.sh"
	printf 'PMETRICS_IN_TCG=1 PMETRICS=%q BUILD=%q ROOT=%q bash %q\n' "$PMETRICS" "$BUILD" "$ROOT" \
		"$script" >"$guest"
	tcg_x86_run "$guest" >"$T_TMP/guest.log" && return 0
	t_begin "$name.emulated"
	case "$TCG_WHY" in
	"no qemu"* | "no cpio"* | "apt knows no"* | "cannot download"*)
		t_skip "no emulated x86 CPU: $TCG_WHY" ;;
	*) t_fail "$TCG_WHY" ;;
	esac
	return 1
}
