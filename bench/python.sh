#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Cost of Python spans per Python call, as ratios measured in this run, on
# each of CPython 3.10 (the robot's) and 3.11 that is installed. Kinds of
# call: "call" (a plain function called from Python code), "map" (called
# from C), "await" (a coroutine awaited from a coroutine). Methods:
#   untraced          nothing attached
#   decorator         the seed's decorator on the function (two clock reads
#                     and a list append per call): what pmetrics replaces
#   hook:H            pmetrics attached with --python-hook H and a probe on
#                     another function: what an untimed call pays
#   traced:H          pmetrics timing the benchmarked function itself
# H = calls (every call into the eval loop traps) or coroutines (3.8-3.10:
# only coroutine and generator steps trap). On 3.11 a plain call from
# Python is inlined: it never enters the eval loop, costs nothing and
# cannot be timed; coroutines falls back to the eval-loop hook there.
set -u
build=$1
scenario=tests/progs/py/scenario.py
calls=${BENCH_PY_CALLS:-50000}
rounds=${BENCH_ROUNDS:-3}
out=$(mktemp -d /tmp/pmetrics-bench-py.XXXXXX)
trap 'rm -rf "$out"' EXIT
: "$build"

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
interpreter() {
	local root
	root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
	ls -d "$root"/versions/"$1".*/bin/python"$1" 2>/dev/null | head -n 1
}

# run PY METHOD KIND: ns per call of one run.
run() {
	local py=$1 method=$2 kind=$3 fn=tiny
	[ "$kind" = await ] && fn=tiny_coro
	case $method in
	untraced) "$py" $scenario bench "$kind" "$calls" ;;
	decorator) "$py" $scenario bench "$kind-decorated" "$calls" ;;
	hook:*) ./pmetrics record -o "$out" --python-hook "${method#hook:}" \
		--probe OTHER=py:pmtest.work:crunch -- "$py" $scenario bench "$kind" "$calls" 2>/dev/null ;;
	traced:*) ./pmetrics record -o "$out" --python-hook "${method#traced:}" \
		--probe TINY=py:scenario:$fn -- "$py" $scenario bench "$kind" "$calls" 2>"$out/err" ;;
	esac | awk '/^ns_per_call/ { print $2 }'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
minus() { awk -v a="$1" -v b="$2" 'BEGIN { print a - b }'; }

methods="untraced decorator hook:calls hook:coroutines traced:calls traced:coroutines"
echo "Python spans: cost per Python call ($calls calls, median of $rounds interleaved rounds)"
for v in 3.10 3.11; do
	py=$(interpreter $v)
	if [ -z "$py" ]; then
		echo "  Python $v: skipped (no pyenv Python $v installed)"
		continue
	fi
	echo "  Python $v         ns/call    added ns   x untraced   added vs decorator's"
	for kind in call map await; do
		declare -A s=()
		for _ in $(seq 1 "$rounds"); do
			for m in $methods; do s[$m]+="$(run "$py" $m $kind) "; done
		done
		for m in $methods; do s[$m]=$(echo ${s[$m]} | tr ' ' '\n' | median); done
		base=${s[untraced]}
		dec=$(minus "${s[decorator]}" "$base")
		for m in $methods; do
			added=$(minus "${s[$m]}" "$base")
			note=""
			case $m in
			traced:*) awk -v a="$added" -v d="$dec" 'BEGIN { exit !(a < d / 10) }' &&
				note="  (not seen: inlined or not a coroutine step; nothing timed)" ;;
			esac
			printf '    %-6s %-18s %9.1f %10.0f %10sx %10sx%s\n' "$kind" "$m" "${s[$m]}" "$added" \
				"$(ratio "${s[$m]}" "$base")" "$(ratio "$added" "$dec")" "$note"
		done
		unset s
	done
done
