#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# armed_rounds.sh PMETRICS ROUNDS PYTHON: ROUNDS interleaved runs of
# idle_timed.py (sleeps and system calls, a timed coroutine function it
# never runs), attached to with --pid: untraced; two bare watchpoints on
# addresses it never touches (the binary $WATCHER), of each of its
# threads and of each CPU; pmetrics timing never_awaited by
# --python-hook watch and by the default hook. Prints "RESULT CONFIG
# USER SYS" per run (the program's own CPU seconds), "FAILED CONFIG:
# REASON" when pmetrics failed. Where this machine's watchpoints never
# fire, pmetrics skips its fire test (PMETRICS_TEST_WATCH_UNFIRED=1): no
# hit would come here anyway, the timed function never runs.
set -u
pmetrics=$1 rounds=$2 py=$3
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/pmetrics-armed.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
n=${BENCH_ARMED_ROUNDS_OF_WORK:-40000}

wait_for() { for _ in $(seq 400); do grep -q "$1" "$2" 2>/dev/null && return 0; sleep 0.05; done; return 1; }

one_run() {
	local config=$1 pid tracer=""
	rm -f "$tmp/go" "$tmp/go.end" "$tmp/out" "$tmp/err"
	"$py" "$here/idle_timed.py" "$tmp/go" "$n" >"$tmp/out" 2>&1 &
	pid=$!
	wait_for waiting "$tmp/out"
	case $config in
	thread-watchpoints | cpu-watchpoints)
		"$WATCHER" $([ $config = cpu-watchpoints ] && echo --cpus || echo "$pid") 0x10000 0x10008 \
			>"$tmp/err" 2>&1 &
		tracer=$!
		wait_for WATCHING "$tmp/err" ;;
	watch | coroutines)
		PMETRICS_TEST_WATCH_UNFIRED=1 "$pmetrics" record --python-hook "$config" \
			--probe "IDLE=py:idle_timed:never_awaited" --pid "$pid" -o "$tmp/rec" -v 2>"$tmp/err" &
		tracer=$!
		wait_for "probes live" "$tmp/err" ;;
	esac
	touch "$tmp/go"
	wait_for "^cpu" "$tmp/out"
	touch "$tmp/go.end"
	wait "$pid"
	case $config in
	*-watchpoints) kill "$tracer"; wait "$tracer" ;;
	watch | coroutines)
		if ! wait "$tracer"; then
			echo "FAILED $config: $(grep -v '^libbpf' "$tmp/err" | tail -n 1)"
			return
		fi ;;
	esac
	echo "RESULT $config $(sed -n 's/^cpu //p' "$tmp/out")"
}

for _ in $(seq "$rounds"); do
	for config in untraced thread-watchpoints cpu-watchpoints watch coroutines; do
		one_run $config
	done
done
