#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Cost of Python spans, as ratios against baselines measured in this run.
#
# 1. Per operation, for each CPython 3.10-3.13 installed (pyenv), with its
#    libpython as built and stripped as the robot's image strips it
#    (.dynsym only), under each --python-hook:
#      timed await    awaiting a coroutine pmetrics times
#      untimed await  awaiting a coroutine while pmetrics times another one
#      untimed call   calling a plain function while pmetrics times another
#      timed call     calling a plain function pmetrics times (calls hook)
#    Each as nanoseconds added per operation, and as a ratio to (a) what
#    the seed's decorator adds to the same operation and (b) what an empty
#    uprobe+uretprobe pair (no map, no ring buffer) adds to a native call.
# 2. A real asyncio workload (bench/async_workload.py: an analysis server's
#    shape, 226k awaits and 2.2M plain calls at --scale 1): its CPU time
#    with --preset robot-server, and with probes on functions that never
#    run, against the untraced run.
set -u
build=$1
scenario=tests/progs/py/scenario.py
calls=${BENCH_PY_CALLS:-50000}
rounds=${BENCH_ROUNDS:-3}
scale=${BENCH_ASYNC_SCALE:-1}
out=$(mktemp -d /tmp/pmetrics-bench-py.XXXXXX)
trap 'rm -rf "$out"' EXIT

source "$(dirname "$0")/lib.sh"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "-" }'; }
minus() { awk -v a="$1" -v b="$2" 'BEGIN { print a - b }'; }

# stripped_dir PY MINOR: a directory with PY's libpython stripped to .dynsym.
stripped_dir() {
	local lib dir="$out/stripped3$2"
	lib=$(dirname "$(dirname "$1")")/lib/libpython3.$2.so.1.0
	[ -f "$lib" ] || return 1
	mkdir -p "$dir"
	[ -f "$dir/${lib##*/}" ] || strip --strip-unneeded -o "$dir/${lib##*/}" "$lib" || return 1
	echo "$dir"
}

# pm LIBDIR ARGS...: pmetrics record with PY's libpython from LIBDIR (or as built).
pm() {
	local libdir=$1; shift
	if [ -n "$libdir" ]; then LD_LIBRARY_PATH=$libdir ./pmetrics record -o "$out/rec" "$@"
	else ./pmetrics record -o "$out/rec" "$@"; fi
}

# attached PY LIBDIR PROBE KIND: the watch hook (it needs the function
# defined when it attaches): `scenario.py bench KIND` loaded, attached to
# with --pid and PROBE, then run; prints what it prints.
attached() {
	local py=$1 libdir=$2 probe=$3 kind=$4 pid pmp
	rm -f "$out/go" "$out/attached.out" "$out/attached.err"
	env ${libdir:+LD_LIBRARY_PATH=$libdir} "$py" $scenario wait-for "$out/go" bench "$kind" "$calls" \
		>"$out/attached.out" 2>&1 &
	pid=$!
	for _ in $(seq 400); do grep -q waiting "$out/attached.out" && break; sleep 0.05; done
	./pmetrics record -v -o "$out/rec" --python-hook watch --probe "$probe" --pid "$pid" 2>"$out/attached.err" &
	pmp=$!
	for _ in $(seq 1200); do
		grep -q "probes live" "$out/attached.err" && break
		kill -0 "$pmp" 2>/dev/null || break
		sleep 0.05
	done
	touch "$out/go"
	wait "$pid"
	wait "$pmp" && cat "$out/attached.out"
}

# op PY LIBDIR WHAT: ns per operation of one run.
op() {
	local py=$1 libdir=$2 what=$3
	rm -rf "$out/rec"
	case $what in
	untraced-call) "$py" $scenario bench call "$calls" ;;
	untraced-await) "$py" $scenario bench await "$calls" ;;
	decorator-call) "$py" $scenario bench call-decorated "$calls" ;;
	decorator-await) "$py" $scenario bench await-decorated "$calls" ;;
	watch:timed-await) attached "$py" "$libdir" T=py:scenario:tiny_coro await ;;
	watch:untimed-await) attached "$py" "$libdir" O=py:pmtest.work:stepped await ;;
	watch:untimed-call) attached "$py" "$libdir" O=py:pmtest.work:stepped call ;;
	*:timed-await) pm "$libdir" --python-hook "${what%%:*}" --probe T=py:scenario:tiny_coro \
		-- "$py" $scenario bench await "$calls" 2>/dev/null ;;
	*:untimed-await) pm "$libdir" --python-hook "${what%%:*}" --probe O=py:pmtest.work:stepped \
		-- "$py" $scenario bench await "$calls" 2>/dev/null ;;
	*:untimed-call) pm "$libdir" --python-hook "${what%%:*}" --probe O=py:pmtest.work:crunch \
		-- "$py" $scenario bench call "$calls" 2>/dev/null ;;
	*:timed-call) pm "$libdir" --python-hook "${what%%:*}" --probe T=py:scenario:tiny \
		-- "$py" $scenario bench call "$calls" 2>/dev/null ;;
	esac | awk '/^ns_per_call/ { print $2 }'
}

# The empty probe pair on a native call: ns it adds.
sp="$build/progs/spanprog"
declare -A native=()
for _ in $(seq 1 "$rounds"); do
	native[untraced]+="$("$sp" timed 200000) "
	native[floor]+="$(./pmetrics record -o "$out/floor" --bench-floor --probe E=:pm_empty \
		-- "$sp" timed 200000 2>/dev/null | tail -n 1) "
	rm -rf "$out/floor"
done
floor_added=$(minus "$(echo ${native[floor]} | tr ' ' '\n' | median)" \
	"$(echo ${native[untraced]} | tr ' ' '\n' | median)")

echo "Python spans: added cost per operation ($calls operations a run, median of $rounds interleaved rounds)"
echo "  an empty uprobe+uretprobe pair adds $floor_added ns to a native call; the seed's decorator's cost is measured per version"
printf '  %-7s %-9s %-11s %-14s %10s %12s %12s\n' python libpython hook operation "added ns" "x decorator" "x empty pair"
for v in 3.10 3.11 3.12 3.13; do
	py=$(interpreter $v)
	if [ -z "$py" ]; then
		echo "  Python $v: skipped (no pyenv Python $v installed)"
		continue
	fi
	minor=${v#3.}
	strip_dir=$(stripped_dir "$py" "$minor") || strip_dir=""
	declare -A s=()
	whats="untraced-call untraced-await decorator-call decorator-await"
	hooks="coroutines calls"
	[ "$minor" -ge 11 ] && hooks+=" watch"
	for hook in $hooks; do
		for o in timed-await untimed-await untimed-call; do whats+=" $hook:$o"; done
	done
	whats+=" calls:timed-call"
	for _ in $(seq 1 "$rounds"); do
		for w in $whats; do
			s[$w]+="$(op "$py" "" "$w") "
			case $w in *:*) [ -n "$strip_dir" ] && s[stripped/$w]+="$(op "$py" "$strip_dir" "$w") " ;; esac
		done
	done
	for k in "${!s[@]}"; do s[$k]=$(echo ${s[$k]} | tr ' ' '\n' | median); done
	for lib in built stripped; do
		if [ $lib = stripped ] && [ -z "$strip_dir" ]; then
			echo "  Python $v stripped: skipped (no libpython3.$minor.so.1.0 to strip)"
			continue
		fi
		for w in $whats; do
			case $w in *:*) ;; *) continue ;; esac
			kind=${w##*-}
			key=$w
			[ $lib = stripped ] && key=stripped/$w
			added=$(minus "${s[$key]}" "${s[untraced-$kind]}")
			dec=$(minus "${s[decorator-$kind]}" "${s[untraced-$kind]}")
			note=""
			[ "${w%%:*}" = coroutines ] && [ "${w#*:}" = timed-call ] && continue
			if [ -z "${s[$key]}" ]; then
				printf '  %-7s %-9s %-11s %-14s %10s\n' "$v" $lib "${w%%:*}" "${w#*:}" \
					"refused (pmetrics cannot hook this build so; see record -v)"
				continue
			fi
			printf '  %-7s %-9s %-11s %-14s %10.0f %12s %12s%s\n' "$v" $lib "${w%%:*}" "${w#*:}" "$added" \
				"$(ratio "$added" "$dec")" "$(ratio "$added" "$floor_added")" "$note"
		done
	done
	printf '  %-7s %-9s %-11s %-14s %10.0f %12s %12s\n' "$v" built "(decorator)" call \
		"$(minus "${s[decorator-call]}" "${s[untraced-call]}")" 1.00 \
		"$(ratio "$(minus "${s[decorator-call]}" "${s[untraced-call]}")" "$floor_added")"
	printf '  %-7s %-9s %-11s %-14s %10.0f %12s %12s\n' "$v" built "(decorator)" await \
		"$(minus "${s[decorator-await]}" "${s[untraced-await]}")" 1.00 \
		"$(ratio "$(minus "${s[decorator-await]}" "${s[untraced-await]}")" "$floor_added")"
	unset s
done

# ---- the asyncio workload ------------------------------------------------------
# workload PY LIBDIR CONFIG: CPU seconds of the workload's process (its
# own os.times(), all threads, from start to its last line).
workload() {
	local py=$1 libdir=$2 config=$3
	local -a cmd=("$py" bench/async_workload.py --scale "$scale")
	rm -rf "$out/rec"
	case $config in
	untraced) "${cmd[@]}" 2>/dev/null ;;
	preset) pm "$libdir" --preset robot-server -- "${cmd[@]}" 2>/dev/null ;;
	unrun) pm "$libdir" --probe X=py:robot_server.nothing:never \
		--probe Y=py:robot_server.protocols.router:not_a_function -- "${cmd[@]}" 2>/dev/null ;;
	esac | sed -n 's/.*, cpu \([0-9.]*\) s$/\1/p'
}

echo
echo "Asyncio workload (bench/async_workload.py --scale $scale: 21 timed calls, about $((226 * ${scale%.*}))k awaits"
echo "and $((22 * ${scale%.*}))00k plain calls): CPU seconds of the workload, median of $rounds interleaved rounds"
printf '  %-7s %-9s %-34s %8s %8s\n' python libpython "pmetrics" "CPU s" "x untraced"
for v in 3.10 3.11 3.12 3.13; do
	py=$(interpreter $v)
	[ -n "$py" ] || continue
	minor=${v#3.}
	strip_dir=$(stripped_dir "$py" "$minor") || strip_dir=""
	declare -A w=()
	for _ in $(seq 1 "$rounds"); do
		w[untraced]+="$(workload "$py" "" untraced) "
		for c in preset unrun; do
			w[built/$c]+="$(workload "$py" "" $c) "
			[ -n "$strip_dir" ] && w[stripped/$c]+="$(workload "$py" "$strip_dir" $c) "
		done
	done
	for k in "${!w[@]}"; do w[$k]=$(echo ${w[$k]} | tr ' ' '\n' | median); done
	printf '  %-7s %-9s %-34s %8s %8s\n' "$v" - "untraced" "${w[untraced]}" 1.00
	for lib in built stripped; do
		[ -n "${w[$lib/preset]:-}" ] || continue
		printf '  %-7s %-9s %-34s %8s %8s\n' "$v" $lib "--preset robot-server" "${w[$lib/preset]}" \
			"$(ratio "${w[$lib/preset]}" "${w[untraced]}")"
		printf '  %-7s %-9s %-34s %8s %8s\n' "$v" $lib "probes on functions that never run" "${w[$lib/unrun]}" \
			"$(ratio "${w[$lib/unrun]}" "${w[untraced]}")"
	done
	unset w
done

# ---- detaching --------------------------------------------------------------------
# exit_lag PY LIBDIR HOOK: ms from the target's last line (its wall clock
# as it exits) to pmetrics' own exit, or to the shell's when untraced.
exit_lag() {
	local py=$1 libdir=$2 hook=$3 last end
	local -a cmd=("$py" -c 'import time; print(repr(time.time()), flush=True)')
	rm -rf "$out/rec"
	if [ "$hook" = untraced ]; then last=$("${cmd[@]}")
	else last=$(pm "$libdir" --python-hook "$hook" --preset robot-server -- "${cmd[@]}" 2>/dev/null); fi
	end=$(date +%s.%N)
	awk -v a="$last" -v b="$end" 'BEGIN { printf "%.0f", (b - a) * 1000 }'
}

echo
echo "Exit after the target: ms from its last line to pmetrics' exit (median of $rounds; untraced: to the shell's)"
for v in 3.10 3.12; do
	py=$(interpreter $v)
	[ -n "$py" ] || continue
	declare -A e=()
	for _ in $(seq 1 "$rounds"); do
		for h in untraced coroutines calls; do e[$h]+="$(exit_lag "$py" "" $h) "; done
	done
	printf '  %-7s' "$v"
	for h in untraced coroutines calls; do
		printf '  %s %s ms' "$h" "$(echo ${e[$h]} | tr ' ' '\n' | median)"
	done
	echo
	unset e
done
