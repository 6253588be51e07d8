#!/usr/bin/env bash
# Runs the unit tests (plain and under ASan/UBSan) and the integration
# tests, and prints one closing total line: "N passed, N failed, N skipped".
# Usage: tests/run-all.sh BUILD_DIR [unit|integration]
set -u
build=$(cd "$1" && pwd)
what=${2:-all}
root=$(cd "$(dirname "$0")/.." && pwd)
passed=0 failed=0 skipped=0
log=$(mktemp /tmp/pmetrics-run.XXXXXX)

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

run_integration() {
	local t
	for t in "$root"/tests/integration/test_*.sh; do
		[ -f "$t" ] || continue
		echo "== integration $(basename "$t")"
		PMETRICS="$root/pmetrics" BUILD="$build" ROOT="$root" bash "$t" 2>&1 | tee "$log"
		passed=$((passed + $(grep -c '^PASS ' "$log")))
		failed=$((failed + $(grep -c '^FAIL ' "$log")))
		skipped=$((skipped + $(grep -c '^SKIP ' "$log")))
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

case "$what" in
unit) run_units ;;
integration) run_integration ;;
*) run_units; run_integration ;;
esac
rm -f "$log"
echo
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
