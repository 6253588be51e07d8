#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs the unit tests (plain and under ASan/UBSan) and the integration
# tests (those of the user-space commands a second time with pmetrics
# built under ASan/UBSan), and prints one closing total line: "N passed,
# N failed, N skipped".
# Usage: tests/run-all.sh BUILD_DIR [unit|unit-asan|integration|integration-asan]
#
# Each integration test runs in a session of its own under a time limit:
# 600 s, or what a "# timeout: SECONDS" line in the script says. A test
# that overruns is killed with everything it started and counts as one
# failure naming it; the other tests still run. Each test's wall time is
# printed after it, and the slowest ones at the end: CI has a time budget.
set -u
build=$(cd "$1" && pwd)
what=${2:-all}
root=$(cd "$(dirname "$0")/.." && pwd)
passed=0 failed=0 skipped=0
log=$(mktemp /tmp/pmetrics-run.XXXXXX)
times=$(mktemp /tmp/pmetrics-times.XXXXXX)

count_cmocka() {
	# cmocka prints "[  PASSED  ] N test(s)." and "[  FAILED  ] N test(s)..."
	local p f s
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
	s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
	passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0})); skipped=$((skipped + ${s:-0}))
}

# run_unit_dir DIR LABEL [RUNNER]: every test_* in DIR, through RUNNER
# (e.g. qemu-aarch64) when given.
run_unit_dir() {
	local dir="$1" label="$2" runner="${3:-}" bin rc
	for bin in "$dir"/test_*; do
		[ -x "$bin" ] || continue
		echo "== $label $(basename "$bin")"
		# PMETRICS_TESTDATA: downloaded test inputs (make unit);
		# PMETRICS_EMULATED: under qemu-user, so no time limits
		PMETRICS_TESTDATA="$build/testdata" PMETRICS_EMULATED=${runner:+1} \
			ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
			$runner "$bin" >"$log" 2>&1
		rc=$?
		cat "$log"
		count_cmocka
		if [ $rc -ne 0 ] && ! grep -q '^\[  FAILED  \]' "$log"; then
			echo "FAIL $(basename "$bin"): exited $rc"
			failed=$((failed + 1))
		elif ! grep -q '^\[  \(PASSED\|FAILED\)  \]' "$log"; then
			echo "FAIL $(basename "$bin"): no cmocka summary (crashed?)"
			failed=$((failed + 1))
		fi
	done
}

# test_limit SCRIPT: its "# timeout: N" line, else 600 seconds.
test_limit() {
	local n
	n=$(sed -n 's/^# timeout: *\([0-9][0-9]*\) *$/\1/p' "$1" | head -n 1)
	echo "${n:-600}"
}

# run_limited LIMIT LOG CMD...: CMD in a new session, output to LOG;
# after LIMIT seconds the whole session is killed. Returns 124 then.
run_limited() {
	local limit="$1" out="$2" pid waited=0; shift 2
	setsid "$@" >"$out" 2>&1 &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		if [ "$waited" -ge $((limit * 10)) ]; then
			kill -TERM -- "-$pid" 2>/dev/null; sleep 2; kill -KILL -- "-$pid" 2>/dev/null
			wait "$pid" 2>/dev/null
			return 124
		fi
		sleep 0.1
		waited=$((waited + 1))
	done
	wait "$pid"
}

# run_integration [LABEL BINARY TEST...]: every integration test with
# ./pmetrics, or the TESTs named with BINARY (the ASan/UBSan build).
run_integration() {
	local t name limit rc began label=${1:-integration} binary=${2:-$root/pmetrics}
	local -a tests=("$root"/tests/integration/test_*.sh)
	[ $# -gt 2 ] && tests=("${@:3}")
	for t in "${tests[@]}"; do
		[ -f "$t" ] || continue
		name=$(basename "$t")
		limit=$(test_limit "$t")
		echo "== $label $name"
		began=$SECONDS
		PMETRICS="$binary" BUILD="$build" ROOT="$root" \
			ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
			run_limited "$limit" "$log" bash "$t"
		rc=$?
		cat "$log"
		echo "-- $label $name: $((SECONDS - began)) s"
		echo "$((SECONDS - began)) $label $name" >>"$times"
		passed=$((passed + $(grep -c '^PASS ' "$log")))
		failed=$((failed + $(grep -c '^FAIL ' "$log")))
		skipped=$((skipped + $(grep -c '^SKIP ' "$log")))
		if [ "$rc" -eq 124 ]; then
			echo "FAIL $name: timed out after $limit s (killed with everything it started)"
			failed=$((failed + 1))
		fi
	done
}

# The arm64 build of the unit tests (make arm64-build), on x86 only.
run_unit_arm64() {
	local cross="$build/cross-arm64"
	[ "$(uname -m)" = x86_64 ] || return 0
	if [ -f "$cross/skipped" ]; then
		echo "SKIP unit-arm64: $(cat "$cross/skipped")"
		skipped=$((skipped + 1))
	elif [ -d "$cross/tests" ]; then
		run_unit_dir "$cross/tests" unit-arm64 qemu-aarch64
	else
		echo "FAIL unit-arm64: no arm64 build in $cross (make arm64-build)"
		failed=$((failed + 1))
	fi
}

run_units() {
	run_unit_dir "$build/tests" unit
	run_unit_dir "$build/asan/tests" unit-asan
	run_unit_arm64
}

# The commands that work in user space alone (analyze, report, the
# output files and the refusals of record), run again under ASan/UBSan:
# the unit tests do not reach their command lines and file handling.
run_integration_asan() {
	local dir="$root/tests/integration"
	run_integration integration-asan "$build/asan/pmetrics" "$dir/test_analyze.sh" \
		"$dir/test_analyze_svg.sh" "$dir/test_report.sh" "$dir/test_output_files.sh" \
		"$dir/test_record_errors.sh"
}

case "$what" in
unit) run_units ;;
unit-asan) run_unit_dir "$build/asan/tests" unit-asan ;;
integration) run_integration ;;
integration-asan) run_integration_asan ;;
*) run_units; run_integration; run_integration_asan ;;
esac
if [ -s "$times" ]; then
	echo
	echo "slowest integration tests (seconds), of $SECONDS s in all:"
	sort -rn "$times" | head -n 5 | sed 's/^/  /'
fi
rm -f "$log" "$times"
echo
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
