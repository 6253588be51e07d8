#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Cost of CPU sampling to the sampled program, as ratios against the same
# program unsampled in this run: pmetrics --sample by BPF and by its
# perf_event_open fallback, `perf record -g` at the same rate, perf
# copying the same registers and 8 KB of user stack per sample for DWARF
# unwinding (what the fallback asks of the kernel but for the user
# frame-pointer chain, so its closest baseline), and
# austin (Debian) where it reads the interpreter. The workload is a fixed amount
# of CPU-bound Python (bench/cpu_workload.py), which prints its own CPU
# time, so the tool's own work is not counted; the tool's CPU is shown
# beside it, and the CPU added per sample. Median of BENCH_ROUNDS
# interleaved rounds.
set -u
rounds=${BENCH_ROUNDS:-5}
out=$(mktemp -d /tmp/pmetrics-bench-sampling.XXXXXX)
trap 'rm -rf "$out"' EXIT

source "$(dirname "$0")/lib.sh"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b > 0) printf "%.3fx", a / b; else printf "-" }'; }

# run PY METHOD HZ: "workload-cpu-s tool-cpu-s" of one run, or nothing.
run() {
	local py=$1 method=$2 hz=$3 work=(bench/cpu_workload.py) t="$out/time"
	rm -rf "$out/rec" "$out/perf.data" "$out/austin.out"
	case $method in
	untraced) /usr/bin/time -f '%U %S' -o "$t" "$py" "${work[@]}" ;;
	pmetrics-bpf) PMETRICS_TEST_PERF_FALLBACK=0 /usr/bin/time -f '%U %S' -o "$t" \
		./pmetrics record -o "$out/rec" --sample="$hz" -- "$py" "${work[@]}" 2>/dev/null ;;
	pmetrics-perf) PMETRICS_TEST_PERF_FALLBACK=1 /usr/bin/time -f '%U %S' -o "$t" \
		./pmetrics record -o "$out/rec" --sample="$hz" -- "$py" "${work[@]}" 2>/dev/null ;;
	perf) /usr/bin/time -f '%U %S' -o "$t" perf record -q -F "$hz" -g -o "$out/perf.data" \
		-- "$py" "${work[@]}" 2>/dev/null ;;
	perf-dwarf) /usr/bin/time -f '%U %S' -o "$t" perf record -q -F "$hz" --call-graph dwarf,8192 \
		-o "$out/perf.data" -- "$py" "${work[@]}" 2>/dev/null ;;
	austin) /usr/bin/time -f '%U %S' -o "$t" austin -i $((1000000 / hz)) -o "$out/austin.out" \
		"$py" "${work[@]}" 2>/dev/null ;;
	esac | awk -v t="$t" '/^cpu_s/ { w = $2 } END {
		if (w == "") exit
		# the tool and the program it waited for; austin does not wait
		# for its program, so its figure is its own
		getline line < t; split(line, a, " "); tool = a[1] + a[2]
		printf "%s %.3f\n", w, (tool >= w ? tool - w : tool) }'
}

# samples_taken METHOD: the CPU samples the last run of METHOD recorded
# (0: none, so no figure); untraced: 1.
samples_taken() {
	case $1 in
	pmetrics-*) grep -c ',on-cpu,' "$out/rec/profile_samples" 2>/dev/null || true ;;
	perf*) perf report -i "$out/perf.data" --stats 2>/dev/null |
		awk '$1 == "SAMPLE" { print $3; exit }' ;;
	austin) grep -c . "$out/austin.out" 2>/dev/null || true ;;
	*) echo 1 ;;
	esac
}

bash .ci/install-deps time >/dev/null 2>&1 || true
bash .ci/install-deps linux-perf >/dev/null 2>&1 || true
bash .ci/install-deps austin >/dev/null 2>&1 || true
[ -x /usr/bin/time ] || { echo "sampling bench skipped: /usr/bin/time (Debian time) not installable"; exit 0; }

methods="pmetrics-bpf pmetrics-perf"
command -v perf >/dev/null && methods+=" perf perf-dwarf"
command -v austin >/dev/null && methods+=" austin"
echo "CPU sampling: the sampled program's own CPU time (a fixed CPU-bound Python workload),"
echo "sampled against unsampled, median of $rounds interleaved rounds; the tool's own CPU beside it."
echo "At 9999 Hz the cost rises above this machine's noise: us/sample (CPU added to the program"
echo "per CPU sample) times the rate is the cost at any rate, e.g. 99 Hz x 20 us = 0.2 %."
printf '  %-7s %-5s %-14s %10s %12s %12s %9s %10s\n' python Hz method "CPU s" "x untraced" "tool CPU s" samples "us/sample"
for v in 3.10 3.12; do
	py=$(interpreter $v)
	if [ -z "$py" ]; then echo "  Python $v: skipped (no pyenv Python $v installed)"; continue; fi
	for hz in 99 999 9999; do
		declare -A w=() tool=() n=()
		for _ in $(seq 1 "$rounds"); do
			for m in untraced $methods; do
				read -r a b < <(run "$py" $m $hz) || true
				c=$(samples_taken $m)
				[ "${c:-0}" -gt 0 ] || a=""
				w[$m]+="${a:-} "; tool[$m]+="${b:-} "; n[$m]+="${a:+$c} "
				a=""; b=""
			done
		done
		base=$(echo ${w[untraced]} | tr ' ' '\n' | median)
		for m in untraced $methods; do
			cpu=$(echo ${w[$m]} | tr ' ' '\n' | median)
			if [ -z "$cpu" ]; then
				printf '  %-7s %-5s %-14s %10s\n' "$v" "$hz" "$m" "no figure (it ran nothing or recorded no sample of this interpreter here)"
				continue
			fi
			samples=$(echo ${n[$m]} | tr ' ' '\n' | median)
			per=$(awk -v c="$cpu" -v b="$base" -v n="$samples" -v m="$m" \
				'BEGIN { if (m == "untraced" || n <= 0) print "-"; else printf "%.1f", (c - b) / n * 1e6 }')
			[ "$hz" -ge 9999 ] || per="-" # below the noise at lower rates
			printf '  %-7s %-5s %-14s %10.3f %12s %12s %9s %10s\n' "$v" "$hz" "$m" "$cpu" "$(ratio "$cpu" "$base")" \
				"$(echo ${tool[$m]} | tr ' ' '\n' | median)" "${samples:--}" "$per"
		done
		unset w tool n
	done
done
