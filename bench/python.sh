#!/usr/bin/env bash
# Cost of Python spans per Python call, as ratios measured in this run, on
# each of CPython 3.10 (the robot's) and 3.11 that is installed:
#   untraced       tiny() called N times, nothing attached
#   decorator      tiny() wrapped by the seed's decorator (two clock reads
#                  and a list append per call): what pmetrics replaces
#   hook           pmetrics attached with a py: probe on another function:
#                  what every Python call that enters the eval loop pays
#   traced         pmetrics timing tiny() itself: one row per call
# "call" is a call from Python code, "map" a call from C (map()). On 3.11
# a call from Python is inlined and never enters the eval loop, so the
# hook costs it nothing and it cannot be traced either.
set -u
build=$1
scenario=tests/progs/py/scenario.py
calls=${BENCH_PY_CALLS:-100000}
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
	local py=$1 method=$2 kind=$3
	case $method in
	untraced) "$py" $scenario bench "$kind" "$calls" ;;
	decorator) "$py" $scenario bench decorated "$calls" ;;
	hook) ./pmetrics record -o "$out" --probe OTHER=py:pmtest.work:crunch -- \
		"$py" $scenario bench "$kind" "$calls" 2>/dev/null ;;
	traced) ./pmetrics record -o "$out" --probe TINY=py:scenario:tiny -- \
		"$py" $scenario bench "$kind" "$calls" 2>/dev/null ;;
	esac | awk '/^ns_per_call/ { print $2 }'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

echo "Python spans: cost per Python call ($calls calls, median of $rounds interleaved rounds)"
for v in 3.10 3.11; do
	py=$(interpreter $v)
	if [ -z "$py" ]; then
		echo "  Python $v: skipped (no pyenv Python $v installed)"
		continue
	fi
	for kind in call map; do
		declare -A s=()
		for _ in $(seq 1 "$rounds"); do
			for m in untraced decorator hook traced; do s[$m]+="$(run "$py" $m $kind) "; done
		done
		for m in untraced decorator hook traced; do
			s[$m]=$(echo ${s[$m]} | tr ' ' '\n' | median)
		done
		base=${s[untraced]}
		added_dec=$(awk -v a="${s[decorator]}" -v b="$base" 'BEGIN { print a - b }')
		added_hook=$(awk -v a="${s[hook]}" -v b="$base" 'BEGIN { print a - b }')
		added_traced=$(awk -v a="${s[traced]}" -v b="$base" 'BEGIN { print a - b }')
		echo "  Python $v, $kind:"
		printf '    untraced   %9.1f ns/call\n' "$base"
		printf '    decorator  %9.1f ns/call  (+%.0f ns per timed call)\n' "${s[decorator]}" "$added_dec"
		printf '    hook       %9.1f ns/call  (+%.0f ns per untimed call = %sx untraced)\n' \
			"${s[hook]}" "$added_hook" "$(ratio "${s[hook]}" "$base")"
		if awk -v a="$added_traced" -v d="$added_dec" 'BEGIN { exit !(a < d / 10) }'; then
			printf '    traced     %9.1f ns/call  (this version inlines the call: nothing timed, nothing paid)\n' \
				"${s[traced]}"
		else
			printf '    traced     %9.1f ns/call  (+%.0f ns per timed call = %sx the decorator'"'"'s cost)\n' \
				"${s[traced]}" "$added_traced" "$(ratio "$added_traced" "$added_dec")"
		fi
		unset s
	done
done
