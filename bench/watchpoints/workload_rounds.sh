#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# workload_rounds.sh PMETRICS ROUNDS SCALE PYTHON...: for each PYTHON,
# ROUNDS interleaved runs of bench/async_workload.py at SCALE, loaded
# first and then attached to with --pid: untraced, with --preset
# robot-server by the default hook (coroutines) and by --python-hook
# watch, and with two bare watchpoints (bench/watchpoints/watcher.c, the
# binary $WATCHER) on addresses the program never touches: what armed
# debug registers alone cost it, with no trap and no pmetrics. Prints
# "RESULT PYTHON-VERSION CONFIG CPU-SECONDS ROWS TRAPS" per run: the
# workload's own CPU time, the rows pmetrics wrote, and how many times
# pmetrics' Python programs ran in it (each run is one trap: a uprobe's,
# or a watchpoint's), read with the kernel's BPF run counts; "FAILED
# CONFIG under PYTHON: REASON" when pmetrics failed.
set -u
pmetrics=$1 rounds=$2 scale=$3; shift 3
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/pmetrics-watch-rounds.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

one_run() {
	local py=$1 config=$2 pid pm="" cpu rows=0 traps=0
	rm -rf "$tmp/go" "$tmp/go.end" "$tmp/rec" "$tmp/out"
	"$py" "$here/attach_then.py" "$tmp/go" "$here/../async_workload.py" "$scale" >"$tmp/out" 2>&1 &
	pid=$!
	for _ in $(seq 400); do grep -q waiting "$tmp/out" && break; sleep 0.05; done
	if [ "$config" = watchpoints ]; then
		"$WATCHER" "$pid" 0x10000 0x10008 >"$tmp/err" 2>&1 &
		pm=$!
		for _ in $(seq 100); do grep -q WATCHING "$tmp/err" && break; sleep 0.05; done
		if ! grep -q WATCHING "$tmp/err"; then
			echo "FAILED watchpoints under $py: $(tail -n 1 "$tmp/err")"
			touch "$tmp/go" "$tmp/go.end"; wait "$pid"; return
		fi
	elif [ "$config" != untraced ]; then
		"$pmetrics" record -v --python-hook "$config" --preset robot-server --pid "$pid" \
			-o "$tmp/rec" 2>"$tmp/err" &
		pm=$!
		for _ in $(seq 1200); do grep -q "probes live" "$tmp/err" && break; sleep 0.05; done
	fi
	touch "$tmp/go"
	for _ in $(seq 12000); do grep -q finished "$tmp/out" && break; sleep 0.05; done
	[ -n "$pm" ] && traps=$(python_program_runs)
	touch "$tmp/go.end"
	wait "$pid"
	[ "$config" = watchpoints ] && { kill "$pm"; wait "$pm"; pm=""; }
	if [ -n "$pm" ] && ! wait "$pm"; then
		echo "FAILED $config under $py: $(grep -v '^libbpf' "$tmp/err" | tail -n 1)"
		return
	fi
	cpu=$(sed -n 's/.*, cpu \([0-9.]*\) s$/\1/p' "$tmp/out")
	[ -f "$tmp/rec/robot_context_data" ] && rows=$(wc -l <"$tmp/rec/robot_context_data")
	echo "RESULT $("$py" -c 'import sys; print(sys.version.split()[0])') $config ${cpu:-none} $rows $traps"
}

# How many times the loaded py_* BPF programs ran (kernel.bpf_stats_enabled).
python_program_runs() {
	bpftool -j prog show 2>/dev/null | python3 -c '
import json, sys
print(sum(p.get("run_cnt", 0) for p in json.load(sys.stdin) if p.get("name", "").startswith("py_")))'
}

sysctl -q -w kernel.bpf_stats_enabled=1 2>/dev/null

for py in "$@"; do
	for _ in $(seq 1 "$rounds"); do
		for config in untraced watchpoints coroutines watch; do
			one_run "$py" $config
		done
	done
done
