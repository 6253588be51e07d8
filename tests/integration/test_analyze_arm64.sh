#!/usr/bin/env bash
# pmetrics analyze built for arm64 (the robot's architecture; make
# arm64-build) and run under qemu-user gives the same bytes as this
# machine's build, on a generated export with noise, reboots and four
# versions: JSON in both p-value modes, --extended, text, SVG, gzip input.
# Same bytes means a report made on the robot and one made on a laptop
# can be compared with diff.
source "$ROOT/tests/integration/lib.sh"

CROSS="$BUILD/cross-arm64"
ARM="$CROSS/pmetrics"
t_begin analyze_arm64
if [ "$(uname -m)" != x86_64 ]; then
	t_skip "this machine is not x86-64: the other tests already run its native build"; exit 0
fi
if [ -f "$CROSS/skipped" ]; then t_skip "$(cat "$CROSS/skipped")"; exit 0; fi
if ! command -v python3 >/dev/null; then t_skip "python3 needed to generate the export"; exit 0; fi
if [ ! -x "$ARM" ] || ! command -v qemu-aarch64 >/dev/null; then
	t_fail "no arm64 build at $ARM or no qemu-aarch64: make arm64-build"; exit 0
fi
t_pass

python3 "$ROOT/bench/analyze_gen.py" 20000 3 >"$T_TMP/export.jsonl"
gzip -c "$T_TMP/export.jsonl" >"$T_TMP/export.jsonl.gz"

# same_bytes NAME ARGS...: both builds, same arguments, same stdout and
# exit status (SVG files compared by the caller).
same_bytes() {
	local name="$1" rc_x rc_a; shift
	t_begin "arm64_$name"
	"$PMETRICS" analyze "$@" >"$T_TMP/x86.out" 2>/dev/null; rc_x=$?
	qemu-aarch64 "$ARM" analyze "$@" >"$T_TMP/arm64.out" 2>/dev/null; rc_a=$?
	if [ $rc_x -eq 0 ] && [ $rc_a -eq 0 ] && [ -s "$T_TMP/x86.out" ] && cmp -s "$T_TMP/x86.out" "$T_TMP/arm64.out"
	then t_pass; else t_fail "rc $rc_x/$rc_a: $(diff "$T_TMP/x86.out" "$T_TMP/arm64.out" | head -4)"; fi
}
same_bytes json "$T_TMP/export.jsonl"
same_bytes json_upstream_p --p-value upstream "$T_TMP/export.jsonl"
same_bytes json_extended --extended "$T_TMP/export.jsonl"
same_bytes text --format text "$T_TMP/export.jsonl"
same_bytes gzip_input "$T_TMP/export.jsonl.gz"

t_begin arm64_svg
"$PMETRICS" analyze --svg "$T_TMP/x86.svg" "$T_TMP/export.jsonl" >/dev/null 2>&1
qemu-aarch64 "$ARM" analyze --svg "$T_TMP/arm64.svg" "$T_TMP/export.jsonl" >/dev/null 2>&1
if [ -s "$T_TMP/x86.svg" ] && cmp -s "$T_TMP/x86.svg" "$T_TMP/arm64.svg"; then t_pass
else t_fail "$(diff "$T_TMP/x86.svg" "$T_TMP/arm64.svg" 2>&1 | head -4)"; fi
