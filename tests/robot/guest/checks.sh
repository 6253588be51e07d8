# SPDX-License-Identifier: MIT
# The checks the emulated robot runs, on every kernel (tests/robot/run.sh;
# helpers in tests/robot/guest/lib.sh). One file: add a check here and it
# runs on Debian's kernel (BTF, uprobe events), the robot-like kernel
# (FTRACE off, no BTF), the robot-like kernel with
# dist/kernel/pmetrics.cfg, and that one without BTF. What a kernel
# cannot do must give the error `pmetrics check` names, never zero rows
# with exit 0.

# ---- what this kernel is ---------------------------------------------------
info "kernel $(uname -r), $(grep -c ^processor /proc/cpuinfo) CPUs, $(uname -m)"
info "BTF /sys/kernel/btf/vmlinux: $(has_btf && echo present || echo absent)"
info "/proc/config.gz: $([ -e /proc/config.gz ] && echo present || echo absent); config read from ${KCONFIG_FROM:-nowhere}"
info "uprobe PMU /sys/bus/event_source/devices/uprobe: $(has_uprobe_pmu && echo present || echo absent)"
info "tracefs: $(grep -qw tracefs /proc/filesystems && echo mounted || echo 'not in this kernel'); debugfs: $(grep -qw debugfs /proc/filesystems && echo mounted || echo absent)"
line=""
for sym in BPF_SYSCALL BPF_JIT PERF_EVENTS FTRACE TRACEPOINTS UPROBES UPROBE_EVENTS BPF_EVENTS KPROBES \
	DEBUG_INFO_BTF DEBUG_INFO_REDUCED SCHEDSTATS SCHED_INFO IKCONFIG_PROC CGROUP_BPF PREEMPT; do
	line="$line $sym=$(kconfig $sym)"
done
info "config:$line"
info "pmetrics: $($PMETRICS --version 2>&1 | head -n 1)"

t_begin "guest: pmetrics (make robot) runs"
if "$PMETRICS" --version >/dev/null 2>&1; then t_pass; else t_fail "$($PMETRICS --version 2>&1 | head -c 200)"; fi

# What pmetrics needs, read from what the running kernel shows: spans need
# BPF on uprobes (the uprobe PMU exists only with CONFIG_UPROBE_EVENTS,
# and BPF on it with CONFIG_BPF_EVENTS, both under FTRACE); the span
# context and the BPF task iterator need the kernel's BTF.
SPANS_OK=0
has_uprobe_pmu && [ "$(kconfig BPF_EVENTS)" != n ] && SPANS_OK=1
BTF_OK=0
has_btf && BTF_OK=1
RES_BPF=0
[ $SPANS_OK = 1 ] && [ $BTF_OK = 1 ] && RES_BPF=1
info "expected: spans $([ $SPANS_OK = 1 ] && echo work || echo missing), span context \
$([ $BTF_OK = 1 ] && [ $SPANS_OK = 1 ] && echo works || echo missing), resource series \
$([ $RES_BPF = 1 ] && echo 'by BPF' || echo 'from /proc')"

# ---- pmetrics check ------------------------------------------------------------
"$PMETRICS" check >"$T_TMP/check" 2>&1
check_rc=$?
info_file "  | " "$T_TMP/check"
# cap NAME: the state part of capability NAME's line.
cap() { sed -n "s/^  $1 *//p" "$T_TMP/check"; }
t_begin "pmetrics check: spans as this kernel allows, exit $([ $SPANS_OK = 1 ] && echo 0 || echo 1)"
if [ $SPANS_OK = 1 ]; then
	# the Flex kernels are older than uprobe sessions (Linux 6.13)
	if [ $check_rc -eq 0 ] && [ "$(cap 'native spans')" = ok ] &&
		[ "$(cap 'Python spans')" = "ok: an untimed Python step traps twice, at entry and return (uprobe sessions need Linux 6.13)" ]
	then t_pass; else t_fail "exit $check_rc: $(cat "$T_TMP/check")"; fi
else
	# the config is there (IKCONFIG_PROC, as on the robot): it names the
	# options that are off
	case "$(cap 'native spans')" in
	"missing: no BPF on uprobes: CONFIG_FTRACE, CONFIG_UPROBE_EVENTS, CONFIG_BPF_EVENTS not set (in /proc/config.gz); build the kernel with dist/kernel/pmetrics.cfg")
		if [ $check_rc -eq 1 ]; then t_pass; else t_fail "exit $check_rc"; fi ;;
	*) t_fail "native spans: '$(cap 'native spans')'" ;;
	esac
fi
t_begin "pmetrics check: span context $([ $BTF_OK = 1 ] && [ $SPANS_OK = 1 ] && echo 'ok (or degraded)' || echo 'missing, naming the reason')"
c=$(cap 'span context')
if [ $SPANS_OK = 0 ]; then
	[ "$c" = "missing: no spans" ] && t_pass || t_fail "'$c'"
elif [ $BTF_OK = 1 ]; then
	case "$c" in ok | "degraded: run-queue wait is always 0: CONFIG_SCHED_INFO is not set") t_pass ;; *) t_fail "'$c'" ;; esac
else
	case "$c" in "missing: the kernel has no BTF (CONFIG_DEBUG_INFO_BTF is not set"*"or give --btf FILE") t_pass ;;
	*) t_fail "'$c'" ;; esac
fi
t_begin "pmetrics check: resource series $([ $RES_BPF = 1 ] && echo ok || echo 'degraded, read from /proc')"
c=$(cap 'resource series')
if [ $RES_BPF = 1 ]; then [ "$c" = ok ] && t_pass || t_fail "'$c'"
else
	case "$c" in "degraded: read from /proc, not by the BPF task iterator: "*) t_pass ;; *) t_fail "'$c'" ;; esac
fi

# ---- native spans ------------------------------------------------------------
SP="$PROGS/spanprog"
if [ $SPANS_OK = 1 ]; then
	# Under TCG emulation a sleep overshoots more than on hardware: the
	# upper bounds are loose; the row counts are exact.
	t_begin "spans: 3 calls of pm_sleep_ms(20) in a static PIE give 3 rows of [20, 200) ms"
	out=$(fresh_dir)
	before=$(now_ns)
	"$PMETRICS" record -o "$out" --probe SLEEP=:pm_sleep_ms -- "$SP" sleep 20 3 2>"$T_TMP/err"
	rc=$?
	after=$(now_ns)
	f="$out/robot_context_data"
	if [ $rc -ne 0 ]; then t_fail "exit $rc: $(head -c 400 "$T_TMP/err")"
	elif [ "$(rows "$f" SLEEP)" -ne 3 ]; then t_fail "$(rows "$f" SLEEP) rows, want 3: $(head -c 300 "$T_TMP/err")"
	elif ! durations_within "$f" SLEEP $((20 * MS)) $((200 * MS)); then t_fail "durations: $(cut -d, -f3 "$f" | tr '\n' ' ')"
	else t_pass; fi

	t_begin "spans: start times are wall clock, inside the capture's window"
	if starts_within "$f" "$before" "$after"; then t_pass; else t_fail "starts $(cut -d, -f2 "$f" | tr '\n' ' ') outside [$before, $after]"; fi

	t_begin "spans: 2000 calls of an empty function give 2000 rows, none lost"
	out=$(fresh_dir)
	"$PMETRICS" record -o "$out" --probe EMPTY=:pm_empty -- "$SP" calls 2000 2>"$T_TMP/err"
	n=$(rows "$out/robot_context_data" EMPTY)
	if [ "$n" -eq 2000 ] && grep -q "lost spans: 0" "$T_TMP/err"; then t_pass; else t_fail "$n rows: $(tail -n 3 "$T_TMP/err")"; fi

	t_begin "spans: static non-PIE executable: 3 rows"
	out=$(fresh_dir)
	"$PMETRICS" record -o "$out" --probe SLEEP=:pm_sleep_ms -- "$PROGS/spanprog-nopie" sleep 2 3 2>"$T_TMP/err"
	n=$(rows "$out/robot_context_data" SLEEP)
	if [ "$n" -eq 3 ]; then t_pass; else t_fail "$n rows: $(head -c 300 "$T_TMP/err")"; fi

	t_begin "spans: 2 threads x 20 calls: 40 rows"
	out=$(fresh_dir)
	"$PMETRICS" record -o "$out" --probe WORK=:pm_worker -- "$SP" threads 2 20 2>"$T_TMP/err"
	n=$(rows "$out/robot_context_data" WORK)
	if [ "$n" -eq 40 ]; then t_pass; else t_fail "$n rows: $(tail -n 3 "$T_TMP/err")"; fi

	t_begin "spans: --pid, a child forked after attach is traced (3 parent + 3 child rows)"
	out=$(fresh_dir)
	go="$T_TMP/go.fork"; rm -f "$go"
	"$SP" -w "$go" fork 3 & target=$!
	sleep 0.5
	if pm_start -o "$out" --pid $target --probe PARENT=:pm_worker --probe CHILD=:pm_child_work; then
		touch "$go"; wait $target; pm_wait
		p=$(rows "$out/robot_context_data" PARENT); c=$(rows "$out/robot_context_data" CHILD)
		if [ "$p" -eq 3 ] && [ "$c" -eq 3 ]; then t_pass; else t_fail "parent $p, child $c rows"; fi
	else t_fail "did not start: $(head -c 300 "$PM_ERR")"; kill $target; fi
else
	out=$(fresh_dir)
	expect_error "spans: refused in one line naming the kernel options" 1 \
		"^pmetrics: native spans: missing: no BPF on uprobes: .*CONFIG_UPROBE_EVENTS.*dist/kernel/pmetrics.cfg" \
		-- "$PMETRICS" record -o "$out" --probe SLEEP=:pm_sleep_ms -- "$SP" sleep 20 3
	t_begin "spans: nothing written by the refused capture"
	if [ -z "$(ls "$out")" ]; then t_pass; else t_fail "$(ls "$out")"; fi
fi

# ---- Python spans ------------------------------------------------------------
# Debian's arm64 python3.11 (the interpreter static in the executable, LTO,
# stripped to .dynsym: as near the robot's stripped libpython as a Debian
# package comes) running tests/progs/py's timed coroutines: nested 6 deep
# in themselves, tasks, gather, raising, cancelled, thrown through, closed
# (NEST 6, STEP 11 a run), in the interpreter and in its subprocess -m,
# multiprocessing spawn and fork children. Rows are checked against the
# functions' own in-process timing (span_refs.py): each holds its
# interval and exceeds it by at most PY_EXCESS_US (20 ms: the emulated
# CPU is some 30x slower than a Flex; counts are exact).
PY=/usr/bin/python3.11
PY_EXCESS_US=20000
PY_PROBES="--probe NEST=py:pmtest.timed:nest --probe STEP=py:pmtest.timed:step"

# py_spans NAME RUNS ERR: the rows in $out against the references in
# $refs, for RUNS runs of the scenario; ERR is record's stderr.
py_spans() {
	t_begin "$1"
	if "$PY" /robot/py/span_refs.py "$out/robot_context_data" "$refs" $PY_EXCESS_US \
		NEST=$((6 * $2)) STEP=$((11 * $2)) >"$T_TMP/verdict" 2>&1; then
		t_pass; info_file "    " "$T_TMP/verdict"
	else
		t_fail "$(tail -n 1 "$T_TMP/verdict")"
		# which process's rows are missing: the references each wrote,
		# and what record -v said about the processes it followed
		for f in "$refs"/refs.*; do
			echo "${f##*/}: $(grep -c '^NEST,' "$f") NEST, $(grep -c '^STEP,' "$f") STEP"
		done >"$T_TMP/per-pid"
		grep -i "pid\|child\|process" "$3" 2>/dev/null | grep -v '^libbpf' | head -n 10 >>"$T_TMP/per-pid"
		info_file "    " "$T_TMP/per-pid"
	fi
}

if [ ! -x "$PY" ]; then
	t_begin "python: spans"; t_skip "no arm64 python3.11 in the guest: $(cat /robot/python.why 2>/dev/null)"
elif [ $SPANS_OK = 1 ]; then
	for hook in coroutines calls; do
		t_begin "python: launched, --python-hook $hook: the interpreter and its 3 children run"
		out=$(fresh_dir); refs=$(fresh_dir)
		PMTEST_REFS="$refs" "$PMETRICS" record -v -o "$out" --python-hook $hook $PY_PROBES -- \
			"$PY" /robot/py/scenario.py timed timed-children >/dev/null 2>"$T_TMP/err"
		rc=$?
		if [ $rc -ne 0 ]; then t_fail "exit $rc: $(grep -v '^libbpf' "$T_TMP/err" | tail -n 3)"; continue; fi
		t_pass
		t_begin "python: --python-hook $hook: no hook point from a .symtab the stripped file lacks"
		if grep -q "^pmetrics: Python hook .*(\.symtab" "$T_TMP/err"; then t_fail "$(grep '(\.symtab' "$T_TMP/err" | head -n 2)"
		elif ! grep -q "^pmetrics: Python hook " "$T_TMP/err"; then t_fail "-v names no hook point"
		else t_pass; fi
		py_spans "python: --python-hook $hook: exact rows, each holding the function's own timing" 4 "$T_TMP/err"
	done
	t_begin "python: --pid, attached to a running interpreter"
	out=$(fresh_dir); refs=$(fresh_dir); go="$T_TMP/go.py"; rm -f "$go"
	PMTEST_REFS="$refs" "$PY" /robot/py/scenario.py wait-for "$go" timed >"$T_TMP/py.out" 2>&1 & target=$!
	i=0; while [ $i -lt 600 ] && ! grep -q waiting "$T_TMP/py.out"; do sleep 0.1; i=$((i + 1)); done
	if pm_start -o "$out" $PY_PROBES --pid $target; then
		touch "$go"; wait $target; pm_wait
		t_pass
		py_spans "python: --pid: exact rows, each holding the function's own timing" 1 "$PM_ERR"
	else t_fail "did not start: $(grep -v '^libbpf' "$PM_ERR" | tail -n 3)"; kill $target; fi
	# The watch hook on arm64: watchpoints per CPU, each hit running BPF,
	# which the kernel must step the thread past (Linux 6.6, 6.1.55: all
	# the kernels booted here are 6.1 releases after it; the emulated
	# Cortex-A53 fires watchpoints).
	t_begin "pmetrics check: Python watch hook ok"
	if [ "$(cap 'Python watch hook')" = ok ]; then t_pass; else t_fail "$(cap 'Python watch hook')"; fi
	t_begin "python: --pid, --python-hook watch, attached to a running interpreter"
	if [ $BTF_OK != 1 ]; then
		t_skip "no kernel BTF: the watch hook is not checked without it"
	else
	out=$(fresh_dir); refs=$(fresh_dir); go="$T_TMP/go-watch.py"; rm -f "$go"
	PMTEST_REFS="$refs" "$PY" /robot/py/scenario.py wait-for "$go" timed >"$T_TMP/py.out" 2>&1 & target=$!
	i=0; while [ $i -lt 600 ] && ! grep -q waiting "$T_TMP/py.out"; do sleep 0.1; i=$((i + 1)); done
	if pm_start -o "$out" --python-hook watch $PY_PROBES --pid $target; then
		touch "$go"; wait $target; pm_wait
		t_pass
		py_spans "python: --pid, watch hook: exact rows, each holding the function's own timing" 1 "$PM_ERR"
	else t_fail "did not start: $(grep -v '^libbpf' "$PM_ERR" | tail -n 3)"; kill $target; fi
	fi
else
	out=$(fresh_dir)
	expect_error "python: spans refused in one line naming the kernel options" 1 \
		"^pmetrics: .*missing: no BPF on uprobes: .*CONFIG_UPROBE_EVENTS.*dist/kernel/pmetrics.cfg" \
		-- "$PMETRICS" record -o "$out" $PY_PROBES -- "$PY" /robot/py/scenario.py timed
fi

# A 99 Hz profile of a test program: PROG ARGS... into a fresh $out, its
# folded stacks written; $rc is record's exit, stderr is in $T_TMP/err.
profile_of() {
	out=$(fresh_dir)
	prog=$1; shift
	"$PMETRICS" record -o "$out" --sample=99 -- "$PROGS/$prog" "$@" >/dev/null 2>"$T_TMP/err"
	rc=$?
	"$PMETRICS" report "$out" --format folded >/dev/null 2>>"$T_TMP/err"
}

# ---- CPU sampling ----------------------------------------------------------------
# By BPF where the kernel runs BPF on perf events (the sampler's program
# must pass this kernel's verifier), else by perf_event_open in user
# space. A C program burns 60/30/10 % in heavy, medium and light; under
# emulation the shares are looser than the host's test holds them.
SAMPLE_BY=perf_event_open
[ "$(kconfig BPF_EVENTS)" != n ] && SAMPLE_BY=BPF
t_begin "sampling by $SAMPLE_BY: 60/30/10 % burners within 10 points, the summary naming the way"
profile_of sample_burn shares 3
# samples in all, then the percentage inside each burner
counts=$(awk '{ n = $NF; t += n; st = $0; sub(/ [0-9]+$/, "", st)
	if (st ~ /;heavy(;|$)/) h += n; else if (st ~ /;medium(;|$)/) m += n; else if (st ~ /;light(;|$)/) l += n }
	END { if (t) printf "%d %d %d %d\n", t, 100 * h / t, 100 * m / t, 100 * l / t; else print 0 }' \
	"$out/profile.folded" 2>/dev/null)
read -r total heavy medium light <<EOF
$counts
EOF
info "  $total samples: heavy ${heavy:-?} %, medium ${medium:-?} %, light ${light:-?} %"
within() { [ -n "$1" ] && [ "$1" -ge $(($2 - 10)) ] && [ "$1" -le $(($2 + 10)) ]; }
if [ $rc -ne 0 ]; then t_fail "exit $rc: $(head -c 300 "$T_TMP/err")"
elif ! grep -q "taken by $SAMPLE_BY" "$T_TMP/err"; then t_fail "not taken by $SAMPLE_BY: $(head -c 300 "$T_TMP/err")"
elif [ "${total:-0}" -lt 100 ]; then t_fail "${total:-0} samples: $(tail -c 300 "$T_TMP/err")"
elif within "$heavy" 60 && within "$medium" 30 && within "$light" 10; then t_pass
else t_fail "heavy $heavy, medium $medium, light $light %"; fi

# share_of WHAT MIN PCT ALL PART: of the samples of $out's folded stacks
# that match the regex ALL (WHAT says which), at least MIN, at least PCT %
# must also match PART. A pass or a failure, after a line with the counts.
share_of() {
	local what=$1 min=$2 pct=$3 total part
	read -r total part <<EOF
$(awk -v all="$4" -v part="$5" '{ n = $NF; st = $0; sub(/ [0-9]+$/, "", st)
	if (st ~ all) { t += n; if (st ~ part) p += n } } END { printf "%d %d\n", t, p }' \
	"$out/profile.folded" 2>/dev/null)
EOF
	info "  ${total:-?} samples$what, ${part:-?} of them matching $5"
	if [ $rc -ne 0 ]; then t_fail "exit $rc: $(head -c 300 "$T_TMP/err")"
	elif [ "${total:-0}" -lt "$min" ]; then t_fail "${total:-0} samples$what: $(tail -c 300 "$T_TMP/err")"
	elif [ $((part * 100)) -ge $((total * pct)) ]; then t_pass
	else t_fail "$part of $total samples$what match $5; most of the others: $(awk -v all="$4" -v part="$5" \
		'{ st = $0; sub(/ [0-9]+$/, "", st); if (st ~ all && st !~ part) print $NF, st }' \
		"$out/profile.folded" | sort -n | tail -n 1)"; fi
}

# Built without frame pointers, the burner unwinds back to main only by
# DWARF from a copy of its stack: by BPF (the task's saved registers with
# BTF, a CPU sample's own without) or by perf_event_open.
t_begin "sampling by $SAMPLE_BY: a program without frame pointers unwinds back to main"
profile_of sample_burn-nofp shares 2
share_of " in heavy" 30 90 ';heavy(;|$)' '(^|;)main;'

# A probe's pending return swaps the probed function's return address
# for the kernel's trampoline, and this kernel (before 6.11) leaves the
# trampoline in its own frame-pointer chain too. A BPF sample carries the
# thread's pending returns (the kernel's list with BTF, else the span
# engine's record of the probed calls), which put the real addresses
# back: two probed functions, one inside the other, with frame pointers
# (the chain) and without (DWARF from the stack copy, the link register
# saved wherever the compiler put it) show main;span;in_span.
# By perf_event_open (the way of a 5.15 built with the fragment, which
# has no bpf_loop()) the record is read as the sample is handled, a
# moment after it was taken, and on arm64 used only if no probed call
# returned since (a slot of a missing call would be matched to an outer
# one): a caller is then right or unknown, never wrong.
for prog in sample_burn sample_burn-nofp perf:sample_burn perf:sample_burn-nofp; do
	[ $SPANS_OK = 1 ] && [ $SAMPLE_BY = BPF ] || break
	how=BPF
	case $prog in perf:*) prog=${prog#perf:} how=perf_event_open ;; esac
	t_begin "sampling by $how: probed functions' callers show under their pending returns ($prog)"
	out=$(fresh_dir)
	PMETRICS_TEST_PERF_FALLBACK=$([ $how = BPF ] && echo 0 || echo 1) "$PMETRICS" record -o "$out" \
		--sample=99 --probe "IN_SPAN=$PROGS/$prog:in_span" --probe "SPAN=$PROGS/$prog:span" -- \
		"$PROGS/$prog" span 3 >/dev/null 2>"$T_TMP/err"
	rc=$?
	"$PMETRICS" report "$out" --format folded >/dev/null 2>>"$T_TMP/err"
	if [ $how = BPF ]; then
		share_of " in in_span" 30 90 ';in_span(;|$)' ';main;span;in_span(;|$)'
	else
		share_of " in in_span" 30 25 ';in_span(;|$)' ';main;span;in_span(;|$)'
		# a slot given an outer call's return would show main calling
		# in_span (a chain through code without frame pointers skips
		# frames up to libc, which is no such claim)
		t_begin "sampling by $how: no probed function shown called by its caller's caller ($prog)"
		bad=$(awk '{ st = $0; sub(/ [0-9]+$/, "", st); if (st ~ /;main;in_span(;|$)/) n += $NF }
			END { print n + 0 }' "$out/profile.folded" 2>/dev/null)
		if [ "${bad:-1}" -eq 0 ] && [ -s "$out/profile.folded" ]; then t_pass
		else t_fail "${bad:-?} samples show main calling in_span"; fi
	fi
done

# A sample taken while the kernel works for the program (reads of
# /dev/zero) has the kernel's frames: a user-code sample is told from a
# kernel one by its address, which differs by architecture.
t_begin "sampling by $SAMPLE_BY: CPU time spent in the kernel keeps its kernel frames"
profile_of sample_burn kernel 2
# (all samples: without BTF the user stack under a kernel one stops in
# libc, which has no frame pointers: the BPF path copies no stack for a
# sample taken in the kernel there, so nothing unwinds it by DWARF; a
# kernel frame ends in _[k])
share_of "" 50 50 '' '_[[]k[]]$'

# ---- resource series -----------------------------------------------------------
"$PROGS/res_burn" 300 200 >"$T_TMP/burn.out" & burn=$!
i=0; while [ $i -lt 300 ] && ! grep -q "done" "$T_TMP/burn.out"; do sleep 0.1; i=$((i + 1)); done
# Rows match /proc by either path: the BPF iterator, or /proc itself.
t_begin "resources: a row for a process that burnt 0.5 s of CPU, matching /proc$([ $RES_BPF = 1 ] || echo ', read from /proc and said so')"
out=$(fresh_dir)
"$PMETRICS" record --resources --duration 1500ms --interval 1 --process-filter "$PROGS/res_burn*" \
	-o "$out" 2>"$T_TMP/err"
rc=$?
f="$out/system_resource_data"
# user + system seconds in the last row vs /proc/PID/stat's utime + stime
got=$(awk -F, 'END { print $4 + $5 }' "$f" 2>/dev/null)
want=$(sed 's/.*) //' /proc/$burn/stat | awk -v h=100 '{ print ($12 + $13) / h }')
said=$(grep -c "^pmetrics: resource series: degraded: read from /proc" "$T_TMP/err")
if [ $rc -ne 0 ]; then t_fail "exit $rc: $(head -c 300 "$T_TMP/err")"
elif [ ! -s "$f" ]; then t_fail "no rows: $(head -c 300 "$T_TMP/err")"
elif ! awk -v a="$got" -v b="$want" 'BEGIN { d = a - b; exit !(d <= 0.02 && d >= -0.02) }'; then
	t_fail "cpu $got s vs /proc $want s"
elif [ "$said" -ne "$((1 - RES_BPF))" ]; then t_fail "$said lines saying /proc: $(head -c 300 "$T_TMP/err")"
else t_pass; fi

if [ $SPANS_OK = 1 ]; then
	out=$(fresh_dir)
	"$PMETRICS" record --resources --interval 1 -o "$out" --probe SLEEP=:pm_sleep_ms -- "$SP" sleep 50 4 2>"$T_TMP/err"
	s=$(rows "$out/robot_context_data" SLEEP); r=$(rows "$out/robot_context_resources" SLEEP)
	if [ $BTF_OK = 1 ]; then
		t_begin "resources + spans: every span gets a robot_context_resources row"
		if [ "$s" -eq 4 ] && [ "$r" -eq 4 ]; then t_pass; else t_fail "$s spans, $r resource rows: $(tail -n 3 "$T_TMP/err")"; fi
		info "  robot_context_resources (runq_wait_ns is column 5; 0 without CONFIG_SCHED_INFO):"
		info_file "    | " "$out/robot_context_resources"
	else
		t_begin "resources + spans without BTF: 4 spans, the span context dropped in one warning"
		if [ "$s" -eq 4 ] && [ ! -e "$out/robot_context_resources" ] &&
			[ "$(grep -c '^pmetrics: span context: missing: the kernel has no BTF' "$T_TMP/err")" -eq 1 ]
		then t_pass; else t_fail "$s spans: $(tail -n 4 "$T_TMP/err")"; fi
	fi
fi
kill $burn 2>/dev/null; wait $burn 2>/dev/null
