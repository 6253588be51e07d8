#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# pmetrics built for arm64, the robot's architecture, run under qemu-user:
# the cross build (make arm64-build: simdjson reader) and the static file
# made to be copied to the robot (make robot: json-c reader) both give
# the same bytes as this machine's build on a generated export with noise,
# reboots and four versions: JSON in both p-value modes, --extended, text,
# SVG, gzip input. Same bytes means a report made on the robot and one
# made on a laptop can be compared with diff.
source "$ROOT/tests/integration/lib.sh"

CROSS="$BUILD/cross-arm64"
t_begin analyze_arm64
if [ "$(uname -m)" != x86_64 ]; then
	t_skip "this machine is not x86-64: the other tests already run its native build"; exit 0
fi
if [ -f "$CROSS/skipped" ]; then t_skip "$(cat "$CROSS/skipped")"; exit 0; fi
if ! command -v python3 >/dev/null; then t_skip "python3 needed to generate the export"; exit 0; fi
if ! command -v qemu-aarch64 >/dev/null; then t_fail "no qemu-aarch64: make arm64-build"; exit 0; fi
t_pass

python3 "$ROOT/bench/analyze_gen.py" 20000 3 >"$T_TMP/export.jsonl"
gzip -c "$T_TMP/export.jsonl" >"$T_TMP/export.jsonl.gz"

# same_bytes BIN NAME ARGS...: this machine's pmetrics and BIN under qemu,
# same arguments: same stdout, both exit 0.
same_bytes() {
	local bin="$1" name="$2" rc_x rc_a; shift 2
	t_begin "$name"
	"$PMETRICS" analyze "$@" >"$T_TMP/x86.out" 2>/dev/null; rc_x=$?
	qemu-aarch64 "$bin" analyze "$@" >"$T_TMP/arm64.out" 2>/dev/null; rc_a=$?
	if [ $rc_x -eq 0 ] && [ $rc_a -eq 0 ] && [ -s "$T_TMP/x86.out" ] && cmp -s "$T_TMP/x86.out" "$T_TMP/arm64.out"
	then t_pass; else t_fail "rc $rc_x/$rc_a: $(diff "$T_TMP/x86.out" "$T_TMP/arm64.out" | head -4)"; fi
}

# check_binary BIN TAG: every output mode of one arm64 build.
check_binary() {
	local bin="$1" tag="$2"
	same_bytes "$bin" "${tag}_json" "$T_TMP/export.jsonl"
	same_bytes "$bin" "${tag}_json_upstream_p" --p-value upstream "$T_TMP/export.jsonl"
	same_bytes "$bin" "${tag}_json_extended" --extended "$T_TMP/export.jsonl"
	same_bytes "$bin" "${tag}_text" --format text "$T_TMP/export.jsonl"
	same_bytes "$bin" "${tag}_gzip_input" "$T_TMP/export.jsonl.gz"
	t_begin "${tag}_svg"
	rm -f "$T_TMP/x86.svg" "$T_TMP/arm64.svg"
	"$PMETRICS" analyze --svg "$T_TMP/x86.svg" "$T_TMP/export.jsonl" >/dev/null 2>&1
	qemu-aarch64 "$bin" analyze --svg "$T_TMP/arm64.svg" "$T_TMP/export.jsonl" >/dev/null 2>&1
	if [ -s "$T_TMP/x86.svg" ] && cmp -s "$T_TMP/x86.svg" "$T_TMP/arm64.svg"; then t_pass
	else t_fail "$(diff "$T_TMP/x86.svg" "$T_TMP/arm64.svg" 2>&1 | head -4)"; fi
}

for variant in "$CROSS/pmetrics arm64" "$BUILD/robot/pmetrics robot"; do
	read -r bin tag <<<"$variant"
	t_begin "${tag}_built"
	if [ -x "$bin" ]; then t_pass; else t_fail "no $bin: make arm64-build"; continue; fi
	check_binary "$bin" "$tag"
done

# The file for the robot needs nothing there: an arm64 executable with no
# program interpreter and no shared library.
t_begin robot_binary_is_static_arm64
bin="$BUILD/robot/pmetrics"
if readelf -h "$bin" 2>/dev/null | grep -q 'Machine: *AArch64' &&
	! readelf -l "$bin" 2>/dev/null | grep -q INTERP && ! readelf -d "$bin" 2>/dev/null | grep -q NEEDED
then t_pass; else t_fail "$(readelf -hld "$bin" 2>&1 | grep -E 'Machine|INTERP|NEEDED' | head -4)"; fi
