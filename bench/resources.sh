#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Cost of resource sampling, as ratios measured in this run (no timing is
# asserted; the machine is shared and noisy):
# 1. per poll: `pmetrics record --resources` (BPF task iterator), the same
#    reading /proc (its fallback on kernels without BPF tracing or BTF,
#    forced here by PMETRICS_TEST_NO_BTF=1) and bench/psutil_tracker.py
#    (the psutil tracker as seed 002 describes it), side by side on the
#    same process set with the same filter and a 1 s interval: CPU time inside the polls after the first (the first one
#    reads every process's command line, both trackers), whole-process CPU per
#    poll after the first poll (steady state: the loop's wake-ups and
#    the kernel's side included), resident memory then, and peak RSS
#    (pmetrics' peak is libbpf parsing the kernel BTF at load);
# 2. the slowdown of a context-switch-heavy (res_pingpong) and a
#    page-fault-heavy (res_faults) target while pmetrics samples;
# 3. the per-span resource context: cost per traced call, and a
#    page-fault-heavy target inside an open span (rss_stat path).
set -u
build=$1
py=/usr/bin/python3
polls=${BENCH_RES_POLLS:-10}
rounds=${BENCH_ROUNDS:-3}
out=$(mktemp -d /tmp/pmetrics-bench-res.XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$out"' EXIT
bash .ci/install-deps python3-psutil >/dev/null 2>&1 || true

source "$(dirname "$0")/lib.sh"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f", a / b; else print "n/a" }'; }
# cpu_s PID: on-CPU seconds of all of PID's threads so far (schedstat:
# the scheduler's ns, not 10 ms ticks).
cpu_s() { cat /proc/"$1"/task/*/schedstat | awk '{ s += $1 } END { print s / 1e9 }'; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
hwm_kb() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }
wait_rows() { for _ in $(seq 200); do [ -s "$1" ] && return 0; sleep 0.05; done; return 1; }

# The process set: 60 sleepers with distinct command lines; 11 of them
# match 'sleep 86400.1*' (.1 and .10-.19), like the robot's few matching
# processes among many.
for i in $(seq 1 60); do sleep "86400.$i" & pids+=($!); done

# side_by_side NAME GLOB: the three trackers at once, POLLS polls: pmetrics
# with BPF (pm), pmetrics reading /proc (pp), psutil (py).
side_by_side() {
	local name=$1 glob=$2 t
	local -A pid cpu0 cpu hwm rss poll npolls rows
	mkdir -p "$out/$name/pm" "$out/$name/pp" "$out/$name/py"
	./pmetrics record --resources --interval 1 --process-filter "$glob" -o "$out/$name/pm" \
		2>"$out/$name/pm.err" & pid[pm]=$!
	PMETRICS_TEST_NO_BTF=1 ./pmetrics record --resources --interval 1 --process-filter "$glob" \
		-o "$out/$name/pp" 2>"$out/$name/pp.err" & pid[pp]=$!
	"$py" bench/psutil_tracker.py "$out/$name/py" 1 "$glob" 2>"$out/$name/py.err" & pid[py]=$!
	for t in pm pp py; do wait_rows "$out/$name/$t/system_resource_data"; done
	sleep 0.5 # all in the middle of their first interval
	for t in pm pp py; do cpu0[$t]=$(cpu_s ${pid[$t]}); done
	sleep $((polls - 1))
	for t in pm pp py; do
		cpu[$t]=$(cpu_s ${pid[$t]}); hwm[$t]=$(hwm_kb ${pid[$t]}); rss[$t]=$(rss_kb ${pid[$t]})
	done
	kill -TERM ${pid[pm]} ${pid[pp]} ${pid[py]}; wait ${pid[pm]} ${pid[pp]} ${pid[py]}
	for t in pm pp py; do
		poll[$t]=$(sed -n 's/.* \([0-9.]*\) ms CPU per poll after the first.*/\1/p' "$out/$name/$t.err")
		npolls[$t]=$(sed -n 's/^\(resources\|psutil\): \([0-9]*\) polls.*/\2/p' "$out/$name/$t.err")
		rows[$t]=$(wc -l <"$out/$name/$t/system_resource_data")
		whole[$t]=$(awk -v a="${cpu0[$t]}" -v c="${cpu[$t]}" -v n="$polls" 'BEGIN { print (c - a) / (n - 1) * 1e3 }')
	done
	echo "filter '$glob': polls/rows: BPF ${npolls[pm]}/${rows[pm]}, /proc ${npolls[pp]}/${rows[pp]}, psutil ${npolls[py]}/${rows[py]}"
	printf '  %-36s %10s %10s %10s   %s\n' "" "BPF" "/proc" "psutil" "psutil/BPF  psutil//proc  /proc/BPF"
	row() { # LABEL UNIT VALUES...
		printf '  %-36s %8.2f%s %8.2f%s %8.2f%s   %5sx %12sx %9sx\n' "$1" "$3" "$2" "$4" "$2" "$5" "$2" \
			"$(ratio "$5" "$3")" "$(ratio "$5" "$4")" "$(ratio "$4" "$3")"
	}
	row "CPU per poll, inside polls 2..N" ms "${poll[pm]}" "${poll[pp]}" "${poll[py]}"
	row "CPU per poll, steady, whole process" ms "${whole[pm]}" "${whole[pp]}" "${whole[py]}"
	row "resident memory, steady (MiB)" "" "$(awk -v k="${rss[pm]}" 'BEGIN { print k / 1024 }')" \
		"$(awk -v k="${rss[pp]}" 'BEGIN { print k / 1024 }')" "$(awk -v k="${rss[py]}" 'BEGIN { print k / 1024 }')"
	row "peak RSS (MiB)" "" "$(awk -v k="${hwm[pm]}" 'BEGIN { print k / 1024 }')" \
		"$(awk -v k="${hwm[pp]}" 'BEGIN { print k / 1024 }')" "$(awk -v k="${hwm[py]}" 'BEGIN { print k / 1024 }')"
}

declare -A whole
echo "resource sampling: BPF, /proc and the psutil tracker ($polls polls, 1 s interval, side by side,"
echo "$(ls /proc | grep -c '^[0-9]') processes on the machine):"
if ! "$py" -c 'import psutil' 2>/dev/null; then
	echo "  skipped: python3-psutil is not installable here"
else
	side_by_side few 'sleep 86400.1*'
	side_by_side all '*'
fi

# slowdown WORKLOAD ARGS...: median over ROUNDS of (time with pmetrics
# sampling every process each second) / (time without), interleaved.
slowdown() {
	local base on pm r ratios=""
	"$@" >/dev/null # warm-up: page cache, CPU frequency
	for r in $(seq 1 "$rounds"); do
		base=$("$@")
		./pmetrics record --resources --interval 1 --process-filter '*' -o "$out/slow" 2>/dev/null & pm=$!
		wait_rows "$out/slow/system_resource_data"
		on=$("$@")
		kill -TERM $pm; wait $pm; rm -rf "$out/slow"
		ratios+="$(awk -v a="$on" -v b="$base" 'BEGIN { print a / b }') "
	done
	echo $ratios | tr ' ' '\n' | median
}
echo
echo "target slowdown with pmetrics --resources polling every process each second"
echo "(wall time with / without, median of $rounds interleaved rounds):"
printf '  context switches (res_pingpong, 100000 pipe round trips)  %.3fx\n' \
	"$(slowdown "$build/progs/res_pingpong" 100000)"
printf '  page faults (res_faults, 5 x 64 MiB touched)              %.3fx\n' \
	"$(slowdown "$build/progs/res_faults" 5 64)"

# ---- the per-span resource context (--resources with probes) ----------------------------
sp="$build/progs/spanprog"
calls=${BENCH_CALLS:-100000}
# per_call ARGS...: ns per traced pm_empty() call, median over ROUNDS.
per_call() {
	local r v=""
	for r in $(seq 1 "$rounds"); do
		v+="$(./pmetrics record -o "$out/pc" "$@" --probe E=:pm_empty -- "$sp" timed "$calls" 2>/dev/null | tail -n 1) "
		rm -rf "$out/pc"
	done
	echo $v | tr ' ' '\n' | median
}
plain=$(per_call)
with_ctx=$(per_call --resources --interval 10 --process-filter 'none')
echo
echo "per-span resource context ($calls calls of an empty function, median of $rounds):"
printf '  span only %.0f ns/call, span + context %.0f ns/call: %.3fx\n' "$plain" "$with_ctx" \
	"$(awk -v a="$with_ctx" -v b="$plain" 'BEGIN { print a / b }')"
# faults_in_span: res_faults with one span (main) open the whole time, so
# the rss_stat program takes its peak-raising path on every fault.
faults_in_span() {
	./pmetrics record -o "$out/fs" --resources --interval 10 --process-filter 'none' \
		--probe M=:main -- "$build/progs/res_faults" 5 64 2>/dev/null | tail -n 1
	rm -rf "$out/fs"
}
ratios=""
for r in $(seq 1 "$rounds"); do
	base=$("$build/progs/res_faults" 5 64); on=$(faults_in_span)
	ratios+="$(awk -v a="$on" -v b="$base" 'BEGIN { print a / b }') "
done
printf '  page faults inside an open span (res_faults 5 x 64 MiB, rss_stat on every fault)  %.3fx\n' \
	"$(echo $ratios | tr ' ' '\n' | median)"
# The same target untraced while another process is traced with the span
# context: what rss_stat's early exit costs every other process.
ratios=""
for r in $(seq 1 "$rounds"); do
	base=$("$build/progs/res_faults" 5 64)
	./pmetrics record -o "$out/fo" --resources --interval 10 --process-filter 'none' \
		--probe S=:pm_sleep_ms -- "$sp" loop 100 >/dev/null 2>&1 & pm=$!
	wait_rows "$out/fo/system_resource_data_headers"; sleep 0.5
	on=$("$build/progs/res_faults" 5 64)
	kill -TERM $pm; wait $pm; rm -rf "$out/fo"
	ratios+="$(awk -v a="$on" -v b="$base" 'BEGIN { print a / b }') "
done
printf '  page faults of another process meanwhile (rss_stat early exit)                   %.3fx\n' \
	"$(echo $ratios | tr ' ' '\n' | median)"
