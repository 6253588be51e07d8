#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# pmetrics analyze vs a plain Python reference of the same computation
# (bench/analyze_ref.py, Debian python3 + json module), same run, same
# generated export: wall time, the ratio, and peak RSS on 100k vs 1M events
# (memory must follow keys and buckets, not events). Prints ratios; asserts
# no timing. Usage: bench/analyze.sh BUILD_DIR
# BENCH_ANALYZE_EVENTS (default 1000000), BENCH_ROUNDS (default 3).
set -u
events=${BENCH_ANALYZE_EVENTS:-1000000}
rounds=${BENCH_ROUNDS:-3}
small=$((events / 10))
pm=./pmetrics
out=$(mktemp -d /tmp/pmetrics-bench-analyze.XXXXXX)
trap 'rm -rf "$out"' EXIT
bash .ci/install-deps time >/dev/null 2>&1 || true
if ! command -v python3 >/dev/null || [ ! -x /usr/bin/time ]; then
	echo "SKIP bench analyze: needs python3 and /usr/bin/time (apt-get install python3 time)"
	exit 0
fi

echo "analyze bench: generating $events events (bench/analyze_gen.py)..."
python3 bench/analyze_gen.py "$events" 1 >"$out/big.jsonl"
head -n "$small" "$out/big.jsonl" >"$out/small.jsonl"
mb=$(( $(stat -c %s "$out/big.jsonl") / 1048576 ))

# run NAME CMD...: one timed run; sets SECS and RSS_KB, output in $out/NAME.out
run() {
	local name=$1; shift
	/usr/bin/time -f '%e %M' -o "$out/time" "$@" >"$out/$name.out" 2>/dev/null
	read -r SECS RSS_KB <"$out/time"
}
source "$(dirname "$0")/lib.sh"

pm_times=()
for _ in $(seq 1 "$rounds"); do
	run pm "$pm" analyze --p-value upstream "$out/big.jsonl"
	pm_times+=("$SECS")
done
pm_secs=$(printf '%s\n' "${pm_times[@]}" | median)
pm_rss_big=$RSS_KB
run pm_small "$pm" analyze --p-value upstream "$out/small.jsonl"
pm_rss_small=$RSS_KB

# The reference takes ~25 s per million events: one round.
run py python3 bench/analyze_ref.py "$out/big.jsonl"
py_secs=$SECS py_rss_big=$RSS_KB
run py_small python3 bench/analyze_ref.py "$out/small.jsonl"
py_rss_small=$RSS_KB

same=no
cmp -s "$out/pm.out" "$out/py.out" && same=yes
ratio=$(awk -v a="$py_secs" -v b="$pm_secs" 'BEGIN { printf "%.1f", (b > 0 ? a / b : 0) }')
per_event=$(awk -v s="$pm_secs" -v n="$events" 'BEGIN { printf "%.2f", s / n * 1e6 }')
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

echo "analyze bench: $events events, $mb MiB of JSON lines, median of $rounds runs for pmetrics"
printf '  %-28s %8s s  %6s us/event  peak RSS %7s MiB (%s events: %s MiB)\n' \
	"pmetrics analyze" "$pm_secs" "$per_event" "$(mib "$pm_rss_big")" "$small" "$(mib "$pm_rss_small")"
printf '  %-28s %8s s  %16s  peak RSS %7s MiB (%s events: %s MiB)\n' \
	"python3 reference" "$py_secs" "" "$(mib "$py_rss_big")" "$small" "$(mib "$py_rss_small")"
echo "  ratio: pmetrics is ${ratio}x faster (goal: 20x); identical output: $same"
echo "  RSS 10x more events: pmetrics $(mib "$pm_rss_small") -> $(mib "$pm_rss_big") MiB," \
	"python $(mib "$py_rss_small") -> $(mib "$py_rss_big") MiB"
