#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Per-call cost of a traced native call, as ratios measured in this run:
# untraced vs the empty uprobe+uretprobe pair (the floor) vs pmetrics vs
# bpftrace and libbpf-tools' funclatency on the same function. Then the
# loader's CPU time and peak RSS while it writes 10,000 spans/s.
set -u
build=$1
sp="$build/progs/spanprog"
calls=${BENCH_CALLS:-200000}
rounds=${BENCH_ROUNDS:-3}
out=$(mktemp -d /tmp/pmetrics-bench.XXXXXX)
trap 'rm -rf "$out"' EXIT
bash .ci/install-deps time >/dev/null 2>&1 || true
bash .ci/install-deps bpftrace >/dev/null 2>&1 || true
bash .ci/install-deps libbpf-tools >/dev/null 2>&1 || true

source "$(dirname "$0")/lib.sh"

run() { # prints ns per call for one method
	case $1 in
	untraced) "$sp" timed "$calls" ;;
	floor) ./pmetrics record -o "$out" --bench-floor --probe E=:pm_empty -- "$sp" timed "$calls" 2>/dev/null ;;
	pmetrics) ./pmetrics record -o "$out" --probe E=:pm_empty -- "$sp" timed "$calls" 2>/dev/null ;;
	bpftrace)
		"$sp" -w "$out/go" timed "$calls" >"$out/bt.out" & local t=$!
		bpftrace -p $t -e "uprobe:$sp:pm_empty { @s[tid] = nsecs; } uretprobe:$sp:pm_empty /@s[tid]/ { @h = hist(nsecs - @s[tid]); delete(@s[tid]); }" >/dev/null 2>&1 & local b=$!
		sleep 3; touch "$out/go"; wait $t; kill -INT $b; wait $b 2>/dev/null; rm -f "$out/go"
		cat "$out/bt.out" ;;
	funclatency)
		"$sp" -w "$out/go" timed "$calls" >"$out/fl.out" & local t=$!
		funclatency -p $t "$sp:pm_empty" >/dev/null 2>&1 & local f=$!
		sleep 2; touch "$out/go"; wait $t; kill -INT $f 2>/dev/null; wait $f 2>/dev/null; rm -f "$out/go"
		cat "$out/fl.out" ;;
	esac
}

methods="untraced floor pmetrics"
command -v bpftrace >/dev/null && methods="$methods bpftrace"
command -v funclatency >/dev/null && methods="$methods funclatency"
declare -A samples
for r in $(seq 1 "$rounds"); do
	for m in $methods; do samples[$m]+="$(run $m | tail -n 1) "; done
done
echo "per traced call of an empty function ($calls calls, median of $rounds rounds, interleaved):"
floor=$(echo ${samples[floor]} | tr ' ' '\n' | median)
for m in $methods; do
	v=$(echo ${samples[$m]} | tr ' ' '\n' | median)
	if [ "$m" != untraced ] && awk -v a="$v" -v b="$floor" 'BEGIN { exit !(a < b / 2) }'; then
		echo "  $m: did not attach here (call cost $v ns = untraced), no figure"; continue
	fi
	printf '  %-12s %9.1f ns/call   %6.3fx the empty-probe floor\n' "$m" "$v" "$(awk -v a="$v" -v b="$floor" 'BEGIN { print a / b }')"
done
for m in bpftrace funclatency; do command -v $m >/dev/null || echo "  $m: skipped (not installable here)"; done

# bystander MODE...: pmetrics traces one spanprog (by --pid, MODE flags);
# prints the per-call cost of ANOTHER spanprog, not its descendant,
# running the same binary meanwhile.
bystander() {
	rm -f "$out/hold"
	"$sp" -w "$out/hold" calls 1 >/dev/null & local t=$!
	./pmetrics record -v -o "$out" --pid $t "$@" --probe E=:pm_empty 2>"$out/err" & local p=$!
	for _ in $(seq 1 500); do grep -q "probes live" "$out/err" && break; sleep 0.01; done
	"$sp" timed "$calls" | tail -n 1
	touch "$out/hold"; wait $t; wait $p 2>/dev/null
}
declare -A by
for r in $(seq 1 "$rounds"); do
	by[follow]+="$(bystander) "
	by[nochildren]+="$(bystander --no-children) "
done
echo "a bystander (same binary, not a descendant of the target) while pmetrics traces another process:"
for k in follow nochildren; do
	v=$(echo ${by[$k]} | tr ' ' '\n' | median)
	u=$(echo ${samples[untraced]} | tr ' ' '\n' | median)
	printf '  %-36s %9.1f ns/call   %6.3fx the floor, %+8.1f ns over untraced\n' \
		"$([ $k = follow ] && echo "following children (the default):" || echo "--no-children:")" \
		"$v" "$(awk -v a="$v" -v b="$floor" 'BEGIN { print a / b }')" "$(awk -v a="$v" -v b="$u" 'BEGIN { print a - b }')"
done
echo "  (following children puts the probes on the file system-wide and filters by PID in BPF,"
echo "   so a bystander pays the trap pair, the floor, and one map lookup; --no-children"
echo "   lets the kernel filter by PID: the bystander pays nothing)"

echo
# loader_run NAME ARGS...: spanprog ARGS traced by --pid (so the target's
# own CPU time is not counted as the loader's); prints spans, CPU s, RSS KiB, lost
loader_run() {
	rm -f "$out/go" "$out/robot_context_data"
	"$sp" -w "$out/go" "$@" & local t=$!
	/usr/bin/time -f '%U %S %M' -o "$out/time" ./pmetrics record -v -o "$out" --pid $t \
		--probe S=:pm_empty 2>"$out/err" & local p=$!
	for _ in $(seq 1 500); do grep -q "probes live" "$out/err" && break; sleep 0.01; done
	touch "$out/go"; wait $t; wait $p
	read -r u s rss <"$out/time"
	echo "$(wc -l <"$out/robot_context_data") $(awk -v u="$u" -v s="$s" 'BEGIN { print u + s }') $rss $(grep -o '[0-9]* (ring buffer full)' "$out/err" | cut -d' ' -f1)"
}
if [ -x /usr/bin/time ]; then
	echo "loader during a capture of about 10,000 spans/s for 5 s (--pid):"
	read -r n cpu rss lost < <(loader_run rate 10000 5)
	printf '  %s spans; loader CPU %.2f s = %.1f%% of one core; peak RSS %d KiB; lost %s\n' \
		"$n" "$cpu" "$(awk -v c="$cpu" 'BEGIN { print c / 5 * 100 }')" "$rss" "$lost"
	echo "drain: a burst of 1,000,000 calls as fast as the target can make them:"
	read -r n cpu rss lost < <(loader_run calls 1000000)
	printf '  %s rows, lost %s; loader CPU %.2f s = %.0f spans per CPU-second; peak RSS %d KiB\n' \
		"$n" "$lost" "$cpu" "$(awk -v n="$n" -v c="$cpu" 'BEGIN { print n / (c > 0 ? c : 1) }')" "$rss"
	echo "  default ring (8 MiB, 40 bytes a span) holds a burst of $(( (8 << 20) / 40 )) spans while the loader sleeps"
else
	echo "  loader figures skipped: /usr/bin/time (Debian time) not installable"
fi
echo "  binary size: $(stat -c %s pmetrics) bytes ($(ldd pmetrics | grep -cE 'libbpf|libelf|libz|json') of libbpf/libelf/zlib/json-c linked dynamically)"

# Attach latency with --pid: from pmetrics' start to probes live (-v), 5 runs.
attach_ms=()
for _ in 1 2 3 4 5; do
	rm -f "$out/go"
	"$sp" -w "$out/go" calls 1 >/dev/null & t=$!
	./pmetrics record -v -o "$out" --pid $t --probe S=:pm_empty --duration 200ms 2>"$out/err" >/dev/null
	attach_ms+=("$(sed -n 's/.*probes live \([0-9.]*\) ms.*/\1/p' "$out/err")")
	touch "$out/go"; wait $t
done
echo "attach (--pid): probes live $(printf '%s\n' "${attach_ms[@]}" | median) ms after pmetrics starts (median of 5; goal < 300 ms)"
