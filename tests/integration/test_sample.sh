#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# timeout: 900
# CPU and off-CPU sampling (record --sample, --off-cpu) against programs
# whose profile is known: tests/progs/py/sample_prog.py under pyenv's
# CPython 3.10, 3.12 and 3.13 (absent ones are skipped) and tests/progs/sample_burn
# (C), each by BPF and by the perf_event_open fallback
# (PMETRICS_TEST_PERF_FALLBACK=1, as on a kernel without BPF on perf events).
#
# What is checked, from the capture's own files (sample_check.py):
# - CPU shares: heavy/medium/light burn 60/30/10 % of a 100 ms cycle; each
#   share within TOL points of it (at 99 Hz for 10 s, ~1000 samples: the
#   sampling error of a share is about 1.5 points, the rest is left for a
#   loaded 2-core machine);
# - off-CPU shares: a thread sleeps 300 ms in long_wait and 100 ms in
#   short_wait, 75/25 % of its off-CPU time, within TOL points;
# - a coroutine's await chain outer -> middle -> inner on one stack;
# - span states: samples inside a probed function carry its state, the
#   others none; the timeline shows each span on the thread that ran it;
# - pmetrics report's folded totals equal the samples written;
# - a single-threaded program's on-CPU and off-CPU time add up to its run
#   time; the waits of a launched interpreter have Python stacks from its
#   first one, and an interpreter it starts has Python frames from its
#   first Python code; report names each process in a root frame; the
#   bodies of modules, freed once run, are named right or not at all;
# - native code a Python function calls (zlib's libz) shows under it, and
#   the kernel's frames under a C function whose CPU time is the kernel's;
# - a libpython stripped as the robot's image strips it names the same
#   Python frames; a kernel without process_vm_readv() gives the same
#   Python stacks (read through /proc/PID/mem);
# - bad --sample values: one line, exit 2, nothing created.
# - go tool pprof -top of a real capture ranks the burners as they burn.
source "$ROOT/tests/integration/lib.sh"

CHECK="$ROOT/tests/integration/sample_check.py"
PROG="$ROOT/tests/progs/py/sample_prog.py"
HZ=99
TOL=5
SECONDS_SHARES=10
SECONDS_SHORT=4
# go tool pprof (Debian golang-go) reads the pprof files; installed when missing
GO=$(command -v go || true)
if [ -z "$GO" ] && bash "$ROOT/.ci/install-deps" golang-go >/dev/null 2>&1; then GO=$(command -v go || true); fi

# capture NAME OUT [VAR=VALUE]... -- RECORD-ARGS...: `pmetrics record -v -o
# OUT RECORD-ARGS` with each VAR=VALUE in its environment, as check
# NAME.run, which also wants the summary's samples with Python frames to
# be among its samples; its stderr goes to OUT.err. Returns 1 when
# pmetrics failed.
capture() {
	local name="$1" out="$2" envs=() counts
	shift 2
	while [ "$1" != "--" ]; do envs+=("$1"); shift; done
	shift
	t_begin "$name.run"
	if env ${envs[@]+"${envs[@]}"} "$PMETRICS" record -v -o "$out" "$@" >/dev/null 2>"$out.err"; then
		counts=$(sed -n 's/^ *profile: \([0-9]*\) samples:.* \([0-9]*\) with Python frames.*/\1 \2/p' "$out.err")
		if [ -n "$counts" ] && [ "${counts#* }" -gt "${counts% *}" ]; then
			t_fail "more samples with Python frames than samples: $(grep 'profile:' "$out.err" | head -n 1)"
			return 0
		fi
		t_pass
		sed -n 's/^ *\(profile.*\)/    \1/p' "$out.err"
		return 0
	fi
	t_fail "pmetrics failed: $(grep -v '^libbpf' "$out.err" | tail -n 2)"
	return 1
}

# kernel_at_least MAJOR MINOR: whether this kernel is that version or newer.
kernel_at_least() {
	local v
	v=$(uname -r | awk -F'[.-]' '{ print $1 * 1000 + $2 }')
	[ "$v" -ge $(($1 * 1000 + $2)) ]
}

# expect_check NAME CHECK-ARGS...: `sample_check.py CHECK-ARGS` passes; its
# verdict is shown either way.
expect_check() {
	local name="$1" verdict
	shift
	t_begin "$name"
	if verdict=$(python3 "$CHECK" "$@" 2>&1); then
		t_pass
		head -n 1 <<<"$verdict" | cut -c 1-300 | sed 's/^/    /'
	else
		t_fail "$(tail -n 1 <<<"$verdict")"
	fi
}

# expect_source NAME OUT WAY: the capture's summary says it was taken by WAY.
expect_source() {
	t_begin "$1.source"
	if grep -q "taken by $3" "$2.err"; then t_pass; else t_fail "not taken by $3: $(grep 'taken by' "$2.err")"; fi
}

# source_env WAY: the environment that makes pmetrics sample by WAY.
source_env() {
	if [ "$1" = perf ]; then echo PMETRICS_TEST_PERF_FALLBACK=1; else echo PMETRICS_TEST_PERF_FALLBACK=0; fi
}

# source_name WAY: how the summary names WAY.
source_name() {
	if [ "$1" = perf ]; then echo perf_event_open; else echo BPF; fi
}

# folded_equals_samples NAME OUT: pmetrics report's folded counts add up to
# the samples in the capture.
folded_equals_samples() {
	local rep total n
	rep=$(fresh_dir)
	t_begin "$1.folded"
	if ! "$PMETRICS" report "$2" --format folded -o "$rep" >/dev/null 2>"$rep.err"; then
		t_fail "report failed: $(tail -n 1 "$rep.err")"; return
	fi
	total=$(awk '{ n += $NF } END { print n + 0 }' "$rep/profile.folded")
	n=$(wc -l <"$2/profile_samples")
	if [ "$n" -gt 0 ] && [ "$total" -eq "$n" ]; then t_pass; else t_fail "folded total $total, $n samples"; fi
}

# pprof_top NAME OUT: go tool pprof reads the capture's pprof file and
# -top ranks the three burners first, heavy, medium, light.
pprof_top() {
	local rep top
	rep=$(fresh_dir)
	t_begin "$1.pprof"
	if [ -z "$GO" ]; then t_skip "go tool pprof needs Debian's golang-go, not installable here"; return; fi
	if ! "$PMETRICS" report "$2" --format pprof -o "$rep" >/dev/null 2>"$rep.err"; then
		t_fail "report failed: $(tail -n 1 "$rep.err")"; return
	fi
	top=$("$GO" tool pprof -top -nodecount=3 "$rep/profile.pb.gz" 2>"$rep.err" | awk '$2 ~ /%$/ && $NF ~ /^[a-z_]+$/ { print $NF }' | tr '\n' ' ')
	if [ "$top" = "heavy medium light " ]; then t_pass; else t_fail "pprof -top: '$top' $(tail -n 2 "$rep.err")"; fi
}

# time_adds_up NAME OUT: a single-threaded target's on-CPU and off-CPU time
# add up to its run time ("target exited after"), within 10 %: no wait
# counted twice, none left open until the end.
time_adds_up() {
	local ran total
	t_begin "$1.time"
	ran=$(sed -n 's/^pmetrics: target exited after \([0-9.]*\)s.*/\1/p' "$2.err")
	total=$(awk -F, '{ w += $5 } END { printf "%.3f", w / 1e9 }' "$2/profile_samples")
	if [ -n "$ran" ] && awk -v r="$ran" -v t="$total" 'BEGIN { exit !(t > 0.9 * r && t < 1.1 * r) }'
	then t_pass; echo "    on+off ${total}s, ran ${ran}s"
	else t_fail "on+off ${total}s, ran ${ran}s"; fi
}

# ---- Python ----------------------------------------------------------------------
# python_shares TAG PY WAY [LIBDIR]: the 60/30/10 burn, sampled by WAY;
# with LIBDIR the interpreter loads the libpython found there. Leaves the
# capture's directory in LAST_OUT.
python_shares() {
	local tag="$1" py="$2" way="$3" libdir="${4:-}" out
	out=$(fresh_dir)
	LAST_OUT="$out"
	capture "$tag" "$out" "$(source_env "$way")" ${libdir:+LD_LIBRARY_PATH="$libdir"} -- \
		--sample="$HZ" -- "$py" "$PROG" shares "$SECONDS_SHARES" || return 1
	expect_source "$tag" "$out" "$(source_name "$way")"
	expect_check "$tag.shares" shares "$out" on-cpu "$TOL" heavy=60 medium=30 light=10
}

# program_names OUT: the sorted Python frames of sample_prog.py in a capture.
program_names() { python3 "$CHECK" names "$1" | grep '(sample_prog.py)$'; }

python_tests() {
	local minor="$1" py tag out stripped names_full names_stripped way
	py=$(interpreter "3.$minor")
	tag="py3$minor"
	if [ -z "$py" ]; then t_begin "$tag"; t_skip "no pyenv CPython 3.$minor"; return; fi

	for way in bpf perf; do
		python_shares "$tag.$way" "$py" "$way" || continue
		[ "$way" = bpf ] && names_full=$(program_names "$LAST_OUT")
		[ "$way" = bpf ] && folded_equals_samples "$tag.$way" "$LAST_OUT"
		[ "$way" = bpf ] && pprof_top "$tag.$way" "$LAST_OUT"
	done

	stripped=$(stripped_copy "$minor")
	if [ -z "$stripped" ]; then
		t_begin "$tag.stripped"; t_skip "no libpython3.$minor.so.1.0 beside $py to strip"
	elif python_shares "$tag.stripped" "$py" bpf "$stripped"; then
		names_stripped=$(program_names "$LAST_OUT")
		t_begin "$tag.stripped.names"
		if [ -n "$names_full" ] && [ "$names_full" = "$names_stripped" ]; then t_pass
		else t_fail "stripped: $(echo $names_stripped) / not stripped: $(echo $names_full)"; fi
	fi

	for way in bpf perf; do
		out=$(fresh_dir)
		capture "$tag.$way.offcpu" "$out" "$(source_env "$way")" -- --sample="$HZ" --off-cpu -- \
			"$py" "$PROG" block "$SECONDS_SHARES" || continue
		expect_check "$tag.$way.offcpu.shares" shares "$out" off-cpu "$TOL" long_wait=75 short_wait=25
		# the tracing machinery a switch-out is seen through is left out
		[ "$way" = bpf ] && expect_check "$tag.$way.offcpu.leaf" no_frame "$out" off-cpu \
			'^(bpf_prog_|bpf_trace_run|__bpf_trace_|__traceiter_)'
		expect_check "$tag.$way.offcpu.oncpu" shares "$out" on-cpu "$TOL" heavy=60 medium=30 light=10
	done

	# a launched interpreter is known before its Python code runs, so a
	# thread's first sleep (80 ms after start, 300 ms long) has its
	# Python stack too: a wait begun before pmetrics knew the
	# interpreter would have none for all its length
	out=$(fresh_dir)
	if capture "$tag.launch.offcpu" "$out" -- --off-cpu -- "$py" "$PROG" block 2; then
		expect_check "$tag.launch.offcpu.python" with_python "$out" off-cpu 97
	fi

	# native code the interpreter calls (zlib's libz) stays under the
	# Python frame that called it, by both ways
	for way in bpf perf; do
		out=$(fresh_dir)
		capture "$tag.$way.native" "$out" "$(source_env "$way")" -- --sample="$HZ" -- \
			"$py" "$PROG" native "$SECONDS_SHORT" || continue
		expect_check "$tag.$way.native.frames" called_out "$out" squeeze '^zlib_compress$' 85
	done

	out=$(fresh_dir)
	if capture "$tag.coro" "$out" -- --sample="$HZ" -- "$py" "$PROG" coro "$SECONDS_SHORT"; then
		expect_check "$tag.coro.chain" chain "$out" Worker.outer Worker.middle Worker.inner
	fi

	out=$(fresh_dir)
	if capture "$tag.span" "$out" -- --sample="$HZ" --off-cpu --probe IN_SPAN=py:sample_prog:in_span -- \
		"$py" "$PROG" span "$SECONDS_SHORT"; then
		expect_check "$tag.span.states" spans "$out" IN_SPAN in_span outside_span
		time_adds_up "$tag.span" "$out"
	fi
}

# A kernel without process_vm_readv() (built without
# CONFIG_CROSS_MEMORY_ATTACH, as allnoconfig leaves it) reads the target
# through /proc/PID/mem instead: the same shares, every sample with its
# Python frames.
no_cross_memory_attach() {
	local py out
	py=$(interpreter 3.12)
	if [ -z "$py" ]; then t_begin py312.proc_mem; t_skip "no pyenv CPython 3.12"; return; fi
	out=$(fresh_dir)
	capture py312.proc_mem "$out" PMETRICS_TEST_PERF_FALLBACK=1 PMETRICS_TEST_NO_CROSS_MEMORY_ATTACH=1 -- \
		--sample="$HZ" -- "$py" "$PROG" shares "$SECONDS_SHARES" || return
	expect_check py312.proc_mem.shares shares "$out" on-cpu "$TOL" heavy=60 medium=30 light=10
	expect_check py312.proc_mem.python with_python "$out" on-cpu 97
}

# ---- native ----------------------------------------------------------------------
native_tests() {
	local bin out way
	for bin in sample_burn sample_burn-nofp; do
		for way in bpf perf; do
			out=$(fresh_dir)
			capture "$bin.$way" "$out" "$(source_env "$way")" -- --sample="$HZ" -- \
				"$PROGS/$bin" shares "$SECONDS_SHARES" || continue
			expect_source "$bin.$way" "$out" "$(source_name "$way")"
			expect_check "$bin.$way.shares" shares "$out" on-cpu "$TOL" heavy=60 medium=30 light=10
			expect_check "$bin.$way.rooted" above "$out" heavy main 95
		done
	done
	folded_equals_samples "sample_burn.perf" "$out"

	# Without the kernel's BTF a CPU sample that interrupted user code
	# copies the stack with the registers of its context: a program
	# without frame pointers still unwinds back to main (by DWARF)
	out=$(fresh_dir)
	if capture "sample_burn-nofp.nobtf" "$out" PMETRICS_TEST_PERF_FALLBACK=0 PMETRICS_TEST_NO_BTF=1 -- \
		--sample="$HZ" -- "$PROGS/sample_burn-nofp" shares "$SECONDS_SHORT"; then
		expect_check "sample_burn-nofp.nobtf.rooted" above "$out" heavy main 95
	fi
	# the same with a --btf file: the CO-RE object, which reaches a
	# task's saved registers only with the kernel's own BTF, takes them
	# from the CPU sample then
	if [ -e /sys/kernel/btf/vmlinux ]; then
		out=$(fresh_dir)
		capture "sample_burn-nofp.btf-file" "$out" PMETRICS_TEST_PERF_FALLBACK=0 PMETRICS_TEST_NO_BTF=1 -- \
			--btf /sys/kernel/btf/vmlinux --sample="$HZ" -- "$PROGS/sample_burn-nofp" shares "$SECONDS_SHORT" &&
			expect_check "sample_burn-nofp.btf-file.rooted" above "$out" heavy main 95
	fi

	# CPU time the kernel spends for the program (reads of /dev/zero):
	# its samples carry the kernel's frames under the program's
	for way in bpf perf; do
		out=$(fresh_dir)
		capture "sample_burn.$way.kernel" "$out" "$(source_env "$way")" -- --sample="$HZ" -- \
			"$PROGS/sample_burn" kernel "$SECONDS_SHORT" || continue
		expect_check "sample_burn.$way.kernel.frames" called_out "$out" in_kernel '_\[k\]$' 50
	done

	# --off-cpu alone: the waits, no CPU samples
	out=$(fresh_dir)
	if capture "sample_burn.offcpu" "$out" -- --off-cpu -- "$PROGS/sample_burn" block "$SECONDS_SHORT"; then
		expect_check "sample_burn.offcpu.shares" shares "$out" off-cpu "$TOL" long_wait=75 short_wait=25
		t_begin "sample_burn.offcpu.only"
		if ! grep -q ',on-cpu,' "$out/profile_samples"; then t_pass; else t_fail "on-CPU samples without --sample"; fi
	fi

	out=$(fresh_dir)
	if capture "sample_burn.span" "$out" -- --sample="$HZ" --off-cpu --probe "IN_SPAN=$PROGS/sample_burn:in_span" -- \
		"$PROGS/sample_burn" span "$SECONDS_SHORT"; then
		expect_check "sample_burn.span.states" spans "$out" IN_SPAN in_span outside_span
		# the probe's pending return swaps in_span's return address for
		# the kernel's trampoline: its caller must still show. By BPF
		# with BTF a sample carries the thread's pending returns, which
		# put the real address back on any kernel
		if { [ -e /sys/kernel/btf/vmlinux ] && grep -q "taken by BPF" "$out.err"; } ||
			kernel_at_least 6 11; then
			expect_check "sample_burn.span.caller" above "$out" in_span span 95
		else
			t_begin "sample_burn.span.caller"
			t_skip "not sampled by BPF with the kernel's BTF, and Linux $(uname -r) leaves the uretprobe trampoline in its frame-pointer chain (before 6.11)"
		fi
		time_adds_up "sample_burn.span" "$out"
		# the timeline puts each span on its thread (profile_spans)
		if "$PMETRICS" report "$out" --format trace -o "$out/report" >/dev/null 2>"$out.report.err"; then
			expect_check "sample_burn.span.timeline" timeline_spans "$out" "$out/report/trace.json" IN_SPAN
		else
			t_begin "sample_burn.span.timeline"; t_fail "report failed: $(tail -n 1 "$out.report.err")"
		fi
	fi
	# Two probed functions, one inside the other, built without frame
	# pointers: a sample's DWARF walk meets the trampoline in both
	# return slots. BPF without the kernel's BTF sends the span engine's
	# record of the probed calls (their return addresses read at entry);
	# perf_event_open reads that record as it handles the sample, a
	# moment later (a call that returned since is missing, and only a
	# kernel from 6.11 has the address in its chain: a looser share)
	local way how pct
	for way in nobtf perf; do
		out=$(fresh_dir)
		if [ $way = nobtf ]; then how=PMETRICS_TEST_NO_BTF=1 pct=90; else how=$(source_env perf) pct=80; fi
		capture "sample_burn-nofp.nested.$way" "$out" "$how" -- --sample="$HZ" \
			--probe "IN_SPAN=$PROGS/sample_burn-nofp:in_span" --probe "SPAN=$PROGS/sample_burn-nofp:span" \
			-- "$PROGS/sample_burn-nofp" span "$SECONDS_SHORT" || continue
		expect_check "sample_burn-nofp.nested.$way.caller" above "$out" in_span span "$pct"
		expect_check "sample_burn-nofp.nested.$way.main" above "$out" in_span main "$pct"
	done

	# in a PID namespace the BPF sampler's numbers are the whole
	# system's: sampling goes by perf_event_open, which uses pmetrics'
	t_begin "sample_burn.pidns: samples in a PID namespace of pmetrics' own"
	if unshare --pid --fork --mount-proc true 2>/dev/null; then
		out=$(fresh_dir)
		unshare --pid --fork --mount-proc "$PMETRICS" record --sample="$HZ" -o "$out" -- \
			"$PROGS/sample_burn" span 1 >"$T_TMP/pidns.log" 2>&1
		n=$(grep -c ',on-cpu,' "$out/profile_samples" 2>/dev/null)
		if [ "${n:-0}" -ge 10 ] && grep -q "taken by perf_event_open" "$T_TMP/pidns.log" &&
			grep -q "runs in a PID namespace" "$T_TMP/pidns.log"
		then t_pass; else t_fail "${n:-0} samples: $(grep -E 'profile|sampling' "$T_TMP/pidns.log")"; fi
	else t_skip "unshare --pid is not allowed here"; fi
}

# ---- bad input ---------------------------------------------------------------------
bad_input() {
	local v n=0
	for v in 0 100000 abc 99x '' -5; do
		n=$((n + 1))
		expect_error "bad --sample='$v'" 2 "bad --sample '$v': give samples per second, a whole number from 1 to [0-9]+ \(see pmetrics record --help\)$" \
			-x "$T_TMP/never.$n" -- "$PMETRICS" record -o "$T_TMP/never.$n" --sample="$v" -- /bin/true
	done
	expect_error "--sample without a target" 2 "no target" -x "$T_TMP/never.target" -- \
		"$PMETRICS" record -o "$T_TMP/never.target" --sample
	expect_error "--report without --sample or --off-cpu" 2 "--report writes the profile of --sample or --off-cpu" \
		-x "$T_TMP/never.report" -- "$PMETRICS" record -o "$T_TMP/never.report" --report -- /bin/true
	expect_error "--report=bogus" 2 "unknown --report format 'bogus': use folded, pprof, svg, trace or all" \
		-x "$T_TMP/never.bogus" -- "$PMETRICS" record -o "$T_TMP/never.bogus" --sample --report=bogus -- /bin/true
	expect_error "--report svg apart" 2 "--report takes its formats after '=': --report=svg" \
		-x "$T_TMP/never.apart" -- "$PMETRICS" record -o "$T_TMP/never.apart" --sample --report svg -- /bin/true
}

# record --report writes the outputs pmetrics report would, once the
# capture is closed: the same bytes.
record_reports() {
	local out
	out=$(fresh_dir)
	capture "record_report" "$out" -- --sample="$HZ" --off-cpu --report=folded,svg,pprof -- \
		"$PROGS/sample_burn" shares 1 || return
	t_begin "record_report.same_as_report"
	mkdir -p "$out/again"
	if [ -s "$out/profile.folded" ] && [ -s "$out/profile.svg" ] && [ -s "$out/profile.pb.gz" ] &&
		[ ! -e "$out/trace.json" ] &&
		"$PMETRICS" report "$out" --format folded,svg,pprof -o "$out/again" >/dev/null 2>&1 &&
		cmp -s "$out/profile.folded" "$out/again/profile.folded" &&
		cmp -s "$out/profile.pb.gz" "$out/again/profile.pb.gz" && cmp -s "$out/profile.svg" "$out/again/profile.svg"
	then t_pass; else t_fail "$(ls "$out"; tail -n 3 "$out.err")"; fi
}

# A native process that loads a libpython with dlopen() after the sampler
# took it for a native one (1.5 s of C, then 7 s of Python): its Python
# frames show once it is looked at again (every 5 s).
python_found_late() {
	local py lib out
	py=$(interpreter 3.12)
	lib="${py%/bin/*}/lib/libpython3.12.so.1.0"
	t_begin "py_late"
	if [ -z "$py" ] || [ ! -e "$lib" ]; then t_skip "no pyenv CPython 3.12 with its libpython"; return; fi
	out=$(fresh_dir)
	capture "py_late" "$out" "PYTHONHOME=${py%/bin/*}" -- --sample="$HZ" -- \
		"$PROGS/py_late" "$lib" 1.5 7 || return
	expect_check "py_late.found" above "$out" late_work "<module>" 95
}

# An interpreter started at once by the launched one (spawn_exec.py: fork
# and exec, as a server starts its analysis process), at 999 Hz: its
# Python code has Python frames from the start, at most 20 samples (20
# ms) of it without. The BPF walk learns of the new interpreter when the
# sampler thread reads the exec; a sampler that read the kernel's symbols
# at its first sample (84 ms here) read it late: 52-89 such samples.
# Report then gives each process a root frame naming it.
exec_child_python() {
	local py out
	py=$(interpreter 3.12)
	if [ -z "$py" ]; then t_begin "py_exec_child"; t_skip "no pyenv CPython 3.12"; return; fi
	out=$(fresh_dir)
	capture "py_exec_child" "$out" -- --sample=999 -- \
		"$py" -S "$ROOT/tests/progs/py/spawn_exec.py" "$PROG" burn 1 || return
	expect_check "py_exec_child.python" evaluating "$out" 20
	process_roots "py_exec_child" "$out" \
		"$(basename "$py") -S $ROOT/tests/progs/py/spawn_exec.py $PROG burn 1" \
		"$(basename "$py") $PROG burn 1"
}

# process_roots NAME OUT PARENT CHILD: report's folded stacks of a capture
# of a parent and the child it started begin with a root frame per
# process, "pid N: PARENT" and "pid N: CHILD" (their command lines, the
# program by its file name), and the timeline names them so.
process_roots() {
	local name="$1" out="$2" parent="$3" child="$4" roots names want
	t_begin "$name.roots: a root frame names each process"
	if ! "$PMETRICS" report "$out" --format folded,trace -o "$out/report" >/dev/null 2>"$out/report.err"; then
		t_fail "report failed: $(tail -n 1 "$out/report.err")"; return
	fi
	want=$(printf 'pid N: %s\npid N: %s\n' "$parent" "$child" | sort | tr '\n' '|')
	roots=$(cut -d';' -f1 "$out/report/profile.folded" | sed 's/^pid [0-9]*: /pid N: /' | sort -u | tr '\n' '|')
	names=$(grep -o '"process_name","pid":[0-9]*,"tid":0,"args":{"name":"pid [0-9]*: [^"]*"' "$out/report/trace.json" |
		sed 's/.*"name":"pid [0-9]*: /pid N: /; s/"$//' | sort -u | tr '\n' '|')
	if [ "$roots" = "$want" ] && [ "$names" = "$want" ]; then t_pass
	else t_fail "roots: $roots; timeline: $names; want $want"; fi
}

# A program importing 30 modules, each a body that burns 10 ms and calls
# nothing, by both ways at 999 Hz: a module's code object and its names
# are freed once it has run, so its samples are named only if the
# sampler reads them before that. Every frame of those files must be
# named <module> (never another string that took the freed name's
# memory), and at most 10 % of the samples in them unnamed. On a sampler
# that read its records in batches 100 ms apart, 40-65 % were unnamed
# and some named after other strings.
import_names() {
	local py out way dir
	py=$(interpreter 3.12)
	if [ -z "$py" ]; then t_begin "py_imports"; t_skip "no pyenv CPython 3.12"; return; fi
	dir="$T_TMP/imports"
	mkdir -p "$dir"
	for i in $(seq -w 0 29); do
		printf 'import time\nend = time.perf_counter() + 0.01\nwhile time.perf_counter() < end:\n    pass\n' \
			>"$dir/burnmod_$i.py"
	done
	for way in bpf perf; do
		out=$(fresh_dir)
		capture "py_imports.$way" "$out" "$(source_env "$way")" -- --sample=999 -- "$py" -c \
			"import sys; sys.path.insert(0, '$dir'); [__import__('burnmod_%02d' % i) for i in range(30)]" || continue
		expect_check "py_imports.$way.named" modules "$out" burnmod_ 10
		unnamed_counted "py_imports.$way" "$out"
	done
}

# A shell that runs 30 short burners one after another, by both ways: each
# child is let go when it ends, so pmetrics holds the shell, the running
# child and at most a few not yet let go (it held all 31 when it kept
# every process to the end of the capture).
ended_processes_let_go() {
	local way out seen most
	for way in bpf perf; do
		out=$(fresh_dir)
		capture "ended.$way" "$out" "$(source_env "$way")" -- --sample=999 -- \
			sh -c "for i in \$(seq 30); do '$PROGS/sample_burn' span 0.05; done" || continue
		t_begin "ended.$way.let_go: 30 children, at most 5 held at once"
		read -r seen most < <(sed -n 's/.* \([0-9]*\) processes seen, at most \([0-9]*\) held.*/\1 \2/p' "$out.err")
		if [ "${seen:-0}" -ge 25 ] && [ "${most:-99}" -le 5 ]; then t_pass
		else t_fail "seen ${seen:-?}, held at once ${most:-?}: $(grep 'profile:' "$out.err" | tr '\n' ' ')"; fi
	done
}

# A 1 MiB ring at 10 kHz (or the kernel's most): when it fills, the summary says which flag
# helps; when it does not (a quiet moment), no such line.
ring_full_named() {
	local out lost hz
	hz=$(cat /proc/sys/kernel/perf_event_max_sample_rate 2>/dev/null || echo 1000)
	[ "$hz" -gt 10000 ] && hz=10000
	out=$(fresh_dir)
	capture "ring_small" "$out" -- --sample="$hz" --ringbuf-size 1 -- "$PROGS/sample_burn" shares 2 || return
	t_begin "ring_small.named: ringbuf_full losses name --ringbuf-size, and only they"
	lost=$(sed -n 's/^ *profile samples lost:.* \([0-9]*\) ringbuf_full.*/\1/p' "$out.err")
	if { [ "${lost:-0}" -gt 0 ] && grep -q "profile: the ring buffer (1 MiB) filled faster than it was read: give a larger --ringbuf-size or a lower --sample rate" "$out.err"; } ||
		{ [ "${lost:-0}" -eq 0 ] && ! grep -q "filled faster" "$out.err"; }
	then t_pass; else t_fail "$(grep 'profile' "$out.err" | tr '\n' ' ')"; fi
}

# unnamed_counted NAME OUT: record's summary counts exactly the samples
# of OUT whose stack shows an [unknown Python frame], and says nothing
# when there is none.
unnamed_counted() {
	local name="$1" out="$2" want said
	t_begin "$name.unnamed_counted: the summary counts the samples shown unnamed"
	want=$(awk -F, 'NR == FNR { if ($0 ~ /\[unknown Python frame\]/) bad[$1] = 1; next }
		bad[$NF] { n++ } END { print n + 0 }' "$out/profile_stacks" "$out/profile_samples")
	said=$(sed -n 's/^ *profile: \([0-9]*\) samples with \[unknown Python frame\]s.*/\1/p' "$out.err")
	if { [ "$want" -eq 0 ] && [ -z "$said" ]; } || { [ "$want" -gt 0 ] && [ "${said:-0}" -eq "$want" ]; }
	then t_pass; echo "    $want unnamed"
	else t_fail "summary says ${said:-nothing}, $want samples have unnamed frames"; fi
}

# A Python process of a tenth of a second, which may end before its last
# samples are read (then its frames cannot be named).
# A process that execs again at once (a wrapper: sh, env, bash, sleep) has
# a profile_processes row per exec, each naming the program that exec
# started: its command line when it still runs it as the record is
# handled, else "[name]" (the name the exec gave it), never the command
# line of a later program. By BPF and by perf_event_open, which reads an
# exec's record later.
exec_chain_named() {
	local way out got
	for way in bpf perf; do
		out=$(fresh_dir)
		capture "exec_chain.$way" "$out" "$(source_env "$way")" -- --sample=999 -- \
			sh -c 'exec env bash -c "exec sleep 0.3; true"' || continue
		t_begin "exec_chain.$way.named"
		got=$(cut -d, -f3- "$out/profile_processes" | sed 's/^"//; s/ .*//; s/^\[\(.*\)\]$/\1/' | tr '\n' ' ')
		if [ "$got" = "sh env bash sleep " ]; then t_pass; sed 's/^/    /' "$out/profile_processes"
		else t_fail "programs named: $got; rows: $(tr '\n' '|' <"$out/profile_processes")"; fi
	done
}

# Python stacks deeper than the walk goes: a recursion 200 calls deep
# (nested imports reach that) is whole, back to <module>; one 300 deep
# starts with [truncated], counted as stack_truncated, never with a
# frame from its middle posing as its root. By BPF and by perf_event_open,
# on the robot's two versions.
deep_stacks() {
	local minor py out way
	for minor in 10 12; do
		py=$(interpreter "3.$minor")
		if [ -z "$py" ]; then t_begin "py3$minor.deep"; t_skip "no pyenv CPython 3.$minor"; continue; fi
		for way in bpf perf; do
			out=$(fresh_dir)
			if capture "py3$minor.$way.deep" "$out" "$(source_env "$way")" -- --sample="$HZ" -- \
				"$py" "$PROG" deep 2; then
				expect_check "py3$minor.$way.deep.whole" above "$out" deep_burn '<module>' 95
			fi
			out=$(fresh_dir)
			capture "py3$minor.$way.deeper" "$out" "$(source_env "$way")" -- --sample="$HZ" -- \
				"$py" "$PROG" deeper 2 || continue
			expect_check "py3$minor.$way.deeper.cut" above "$out" deep_burn '[truncated]' 95
			t_begin "py3$minor.$way.deeper.counted"
			if grep -Eq 'kept with a damaged stack: [0-9]+ stack_truncated' "$out.err"; then t_pass
			else t_fail "no stack_truncated in: $(grep 'samples lost' "$out.err")"; fi
		done
	done
}

short_python_unnamed() {
	local py out
	py=$(interpreter 3.12)
	if [ -z "$py" ]; then t_begin "py_short"; t_skip "no pyenv CPython 3.12"; return; fi
	out=$(fresh_dir)
	capture "py_short" "$out" -- --sample=999 -- "$py" -c 'sum(range(5 * 10**6))' || return
	unnamed_counted "py_short" "$out"
}

bad_input
if [ "$(id -u)" -ne 0 ]; then t_begin sampling; t_skip "needs root"; exit 0; fi
if [ ! -x "$PROGS/sample_burn" ]; then t_fail "no $PROGS/sample_burn: make check builds it"; exit 0; fi
record_reports
native_tests
ended_processes_let_go
python_found_late
exec_child_python
import_names
short_python_unnamed
exec_chain_named
deep_stacks
ring_full_named
python_tests 10
python_tests 12
python_tests 13
no_cross_memory_attach
