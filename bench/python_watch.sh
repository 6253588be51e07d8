#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The asyncio workload shaped like the robot server (bench/async_workload.py,
# 21 timed calls) attached to with --preset robot-server by the default
# hook and by --python-hook watch, against the same workload untraced, in
# the same run (bench/watchpoints/workload_rounds.sh): the workload's CPU
# time, the rows, and how many traps pmetrics took (its Python BPF
# programs' run counts). Where this machine's watchpoints never fire the
# rounds run on an emulated x86 CPU (tests/robot/tcg-x86.sh): the trap
# counts hold there as anywhere, the CPU ratios do not (an emulated trap
# costs nothing like a real one), so only the counts are the result
# there. Then, natively, what the hooks cost while no timed function runs:
# bare watchpoints of each thread and of each CPU, and pmetrics.
set -u
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
rounds=${BENCH_ROUNDS:-3}
out=$(mktemp -d /tmp/pmetrics-bench-pywatch.XXXXXX)
trap 'rm -rf "$out"' EXIT
source "$here/lib.sh"

pythons=()
for v in 3.10 3.11 3.12 3.13; do
	py=$(interpreter $v)
	[ -n "$py" ] && pythons+=("$py")
done
[ ${#pythons[@]} -gt 0 ] || { echo "python watch bench skipped: no pyenv CPython 3.10-3.13"; exit 0; }
gcc -O2 -o "$out/watcher" "$here/watchpoints/watcher.c" || exit 1
# Scale 1 natively (at 0.2 the CPU time is a few 10 ms ticks); 0.2 on the
# emulated CPU, some 30x slower, where only the counts are the result.
native=0
[ "$("$out/watcher" --self-test 2>/dev/null || echo 0)" -gt 0 ] && native=1
scale=${BENCH_WATCH_SCALE:-$([ $native = 1 ] && echo 1 || echo 0.2)}
rounds_cmd=(env WATCHER="$out/watcher" bash "$here/watchpoints/workload_rounds.sh" "$root/pmetrics" "$rounds" "$scale" "${pythons[@]}")
echo "Asyncio workload (bench/async_workload.py --scale $scale, 21 timed calls), --preset robot-server"
echo "attached with --pid: the workload's CPU, rows, and traps pmetrics took; median of $rounds interleaved rounds"
if [ $native = 1 ]; then
	where="this machine"
	"${rounds_cmd[@]}" >"$out/rounds.log"
else
	where="an emulated x86 CPU (this machine's watchpoints never fire): CPU ratios there are not real costs"
	bash "$root/.ci/install-deps" qemu-system-x86 cpio >/dev/null 2>&1 || true
	source "$root/tests/robot/tcg-x86.sh"
	printf '%q ' "${rounds_cmd[@]}" >"$out/guest.sh"
	tcg_x86_run "$out/guest.sh" >"$out/rounds.log" || { where=""; echo "  skipped: $TCG_WHY"; }
fi
[ -n "$where" ] && echo "  on $where"
[ "$where" = "this machine" ] &&
	echo "  one watchpoint hit adds $("$out/watcher" --hit-cost) ns to a write here (the debug exception alone: no BPF, no pmetrics)"
[ -n "$where" ] && printf '  %-8s %-12s %8s %11s %6s %10s %14s\n' python hook "CPU s" "x untraced" rows traps "traps per row"
[ -n "$where" ] && python3 - "$out/rounds.log" <<'TABLE'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 6 and f[0] == "RESULT" and f[3] != "none":
        runs.setdefault((f[1], f[2]), []).append((float(f[3]), int(f[4]), int(f[5])))
for (version, hook), r in sorted(runs.items()):
    cpu = statistics.median(x[0] for x in r)
    rows = statistics.median(x[1] for x in r)
    traps = statistics.median(x[2] for x in r)
    base = runs.get((version, "untraced"))
    ratio = "%.3fx" % (cpu / statistics.median(x[0] for x in base)) if base else "-"
    per = "%.1f" % (traps / rows) if rows else "-"
    print("  %-8s %-12s %8.3f %11s %6d %10d %14s" % (version, hook, cpu, ratio, rows, traps, per))
for line in sorted(set(open(sys.argv[1]))):
    if line.startswith("FAILED "):
        print("  pmetrics " + line.strip())
TABLE

# While no timed function runs, natively whether or not watchpoints fire
# here (nothing would fire: the timed function never runs).
armed_rounds=${BENCH_ARMED_ROUNDS:-7}
echo "While no timed function runs: an asyncio program that sleeps and makes system calls"
echo "(bench/watchpoints/idle_timed.py), its own CPU, median of $armed_rounds interleaved rounds on this machine"
printf '  %-8s %-18s %8s %11s %8s %11s\n' python config "CPU s" "x untraced" "sys s" "x untraced"
for py in "${pythons[@]}"; do
	WATCHER="$out/watcher" bash "$here/watchpoints/armed_rounds.sh" "$root/pmetrics" "$armed_rounds" "$py" |
		sed "s/^/$("$py" -c 'import sys; print(sys.version.split()[0])') /"
done >"$out/armed.log"
python3 - "$out/armed.log" <<'TABLE'
import statistics, sys
runs, order = {}, []
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 5 and f[1] == "RESULT":
        key = (f[0], f[2])
        if key not in runs:
            order.append(key)
        runs.setdefault(key, []).append((float(f[3]) + float(f[4]), float(f[4])))
for version, config in order:
    r = runs[(version, config)]
    base = runs.get((version, "untraced"))
    cpu, sys_ = statistics.median(x[0] for x in r), statistics.median(x[1] for x in r)
    ratio = lambda v, i: "%.3fx" % (v / statistics.median(x[i] for x in base)) if base else "-"
    print("  %-8s %-18s %8.3f %11s %8.3f %11s" % (version, config, cpu, ratio(cpu, 0), sys_, ratio(sys_, 1)))
for line in sorted(set(open(sys.argv[1]))):
    if " FAILED " in line:
        print("  pmetrics " + line.strip())
TABLE
