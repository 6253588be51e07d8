#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# timeout: 1500
# Python function spans (py:MODULE:QUALNAME) against tests/progs/py/scenario.py
# under every CPython of platform.md that is installed: pyenv 3.8-3.13, each
# also with its libpython stripped as the robot's image strips it (.dynsym
# only), and Debian's /usr/bin/python3.11. Absent interpreters are reported
# as skipped.
#
# Exactness: pmtest/timed.py's functions time themselves in-process; each
# row must hold that interval and exceed it by at most MAX_EXCESS_US
# (span_refs.py: a tenth of the rows, preempted, by up to ten times
# that), for nested coroutines, tasks, gather, exceptions,
# cancellation, generators and plain calls, in the interpreter and in its
# subprocess, spawn and fork children, launched and with --pid.
#
# The robot preset's analyze times itself the same way (protocol_analyzer.py)
# and is checked the same way.
#
# Expected rows per scenario are in scenario.py's docstrings. Tolerances
# where a function does not time itself:
# - an awaited asyncio.sleep(d) or time.sleep(d) gives a row in
#   [d, d + 80 ms]: the sleep never returns early, the 80 ms covers
#   scheduling on a loaded 2-core VM and the event loop's timer slack;
# - a task cancelled by its parent after the parent's 100 ms sleep: in
#   [90, 180] ms (the task's first step comes just after the parent's
#   sleep began, so it may be a little under 100 ms);
# - the cached analysis returns without suspending: each row < 2 ms;
# - two interleaved analyses start within 10 ms of each other.
source "$ROOT/tests/integration/lib.sh"
source "$ROOT/tests/integration/python_timed.sh"
ANALYZE=ANALYZING_PROTOCOL
CACHED=GETTING_CACHED_ANALYSIS
ROBOT_PROBES=(--preset robot-server --probe CRUNCH=py:pmtest.work:crunch)

# durations STATE FILE: the STATE rows' durations in ms, sorted, one line.
durations() {
	awk -F, -v s="$1" '$1 == s { printf "%d\n", $3 / 1000000 }' "$2" | sort -n | tr '\n' ' '
}

# sleeps_ok FILE STATE SECONDS...: one row per expected sleep, each within
# [d, d + 80 ms] of it (both lists sorted).
sleeps_ok() {
	local file="$1" state="$2"; shift 2
	local want got
	want=$(printf '%s\n' "$@" | sort -n | tr '\n' ' ')
	got=$(awk -F, -v s="$state" '$1 == s { print $3 }' "$file" | sort -n | tr '\n' ' ')
	awk -v want="$want" -v got="$got" 'BEGIN {
		nw = split(want, w, " "); ng = split(got, g, " ")
		if (nw != ng) exit 1
		for (i = 1; i <= nw; i++) {
			lo = w[i] * 1e9; hi = lo + 80e6
			if (g[i] < lo || g[i] > hi) exit 1
		}
	}'
}

# expect_rows NAME FILE STATE N: exactly N rows of STATE.
expect_rows() {
	t_begin "$1"
	local n
	n=$(rows "$2" "$3")
	if [ "$n" -eq "$4" ]; then t_pass; else t_fail "$3: $n rows, want $4 ($(durations "$3" "$2")ms)"; fi
}

# expect_ok NAME DESCRIPTION COMMAND...: passes when COMMAND succeeds.
expect_ok() {
	local name="$1" what="$2"; shift 2
	t_begin "$name"
	if "$@"; then t_pass; else t_fail "$what"; fi
}

# interleaved FILE: the longest analysis (the gathered 300 ms one) started
# within 10 ms of another (the 100 ms one gathered with it).
interleaved() {
	awk -F, -v a="$ANALYZE" '$1 == a { s[++n] = $2; d[n] = $3; if ($3 > d[l]) l = n }
		END { for (i = 1; i <= n; i++) { g = s[l] - s[i]; if (g < 0) g = -g; if (i != l && g < 10e6) ok = 1 }
		      exit !ok }' "$1"
}

# ---- the robot server's preset --------------------------------------------------
# check_robot TAG OUT MINOR HOOK REFS: the robot+sync+threads+loops rows.
# Every version: the analyses at any await depth (each against its own
# timing in REFS), the cached ones, each its own row. Plain functions only
# with the calls hook, as far as the version calls them through C.
check_robot() {
	local tag="$1" out="$2" minor="$3" hook="$4" refs="$5" data="$2/robot_context_data"
	expect_spans "$tag.analyze_rows" "$data" "$refs" $ANALYZE=6
	expect_rows "$tag.cached_rows" "$data" $CACHED 3
	expect_ok "$tag.cached_quick" "a cached analysis took 2 ms or more" \
		awk -F, -v s=$CACHED '$1 == s && $3 >= 2e6 { bad = 1 } END { exit bad }' "$data"
	expect_ok "$tag.interleaved" "the gathered analyses did not start together" interleaved "$data"
	if [ "$hook" = coroutines ]; then
		expect_rows "$tag.sync_rows" "$data" CRUNCH 0
		expect_ok "$tag.plain_warning" "no warning that crunch needs --python-hook calls" \
			grep -q "py:pmtest.work:crunch: no coroutine of it ran during the capture; check the module and qualified name (a plain function needs --python-hook calls" "$out.err"
		expect_ok "$tag.no_inline_warning" "a warning about inlined calls without the calls hook" \
			bash -c "! grep -q 'inlines' '$out.err'"
		return
	fi
	case "$minor" in
	8 | 9 | 10) # every call: 3 from Python, 8 from the pool; Busy.crunch and other.crunch never
		expect_ok "$tag.sync_rows" "crunch rows $(durations CRUNCH "$data")ms, want 11 of 50" \
			sleeps_ok "$data" CRUNCH 0.05 0.05 0.05 0.05 0.05 0.05 0.05 0.05 0.05 0.05 0.05 ;;
	11) # the pool calls through CALL_FUNCTION_EX (enters the eval loop); direct calls are inlined
		expect_ok "$tag.sync_rows" "crunch rows $(durations CRUNCH "$data")ms, want 8 of 50" \
			sleeps_ok "$data" CRUNCH 0.05 0.05 0.05 0.05 0.05 0.05 0.05 0.05 ;;
	*)
		expect_rows "$tag.sync_rows" "$data" CRUNCH 0 ;;
	esac
	if [ "$minor" -ge 11 ]; then
		expect_ok "$tag.inline_warning" "no warning naming Python 3.$minor at start" \
			grep -q "^pmetrics: warning: Python 3.$minor inlines" "$out.err"
	else
		expect_ok "$tag.no_inline_warning" "a warning on a version that sees every call" \
			bash -c "! grep -q 'inlines' '$out.err'"
	fi
}

# check_version MINOR PY TAG HOOK: launch mode, the robot scenarios.
check_version() {
	local minor="$1" py="$2" tag="$3" hook="$4" out refs before after
	t_begin "$tag.launch"
	out=$(fresh_dir); refs=$(mktemp -d "$T_TMP/refs.XXXXXX")
	before=$(now_ns)
	if ! PMTEST_REFS="$refs" "$PMETRICS" record -o "$out" --python-hook "$hook" "${ROBOT_PROBES[@]}" \
		-- "$py" "$SCENARIO" robot sync threads loops >"$out.stdout" 2>"$out.err"; then
		t_fail "pmetrics failed: $(tail -n 3 "$out.err")"
		return
	fi
	after=$(now_ns)
	if starts_within "$out/robot_context_data" "$before" "$after"; then t_pass
	else t_fail "row start times outside the run's wall-clock window"; fi
	check_robot "$tag" "$out" "$minor" "$hook" "$refs"
}

# check_children MINOR PY TAG: the preset in three children, none in the parent.
check_children() {
	local minor="$1" py="$2" tag="$3" out
	out=$(fresh_dir)
	t_begin "$tag.children_run"
	if "$PMETRICS" record -o "$out" --preset robot-server -- "$py" "$SCENARIO" children \
		>/dev/null 2>"$out.err"; then t_pass
	else t_fail "pmetrics failed: $(tail -n 2 "$out.err")"; return; fi
	expect_rows "$tag.children_analyze" "$out/robot_context_data" $ANALYZE 12
	expect_rows "$tag.children_cached" "$out/robot_context_data" $CACHED 9
}

# check_gens MINOR PY TAG HOOK: coroutines driven by .send() and .close().
check_gens() {
	local minor="$1" py="$2" tag="$3" hook="$4" out data
	out=$(fresh_dir)
	data="$out/robot_context_data"
	t_begin "$tag.gens_run"
	if "$PMETRICS" record -o "$out" --python-hook "$hook" --preset robot-server \
		--probe TICKS=py:pmtest.work:ticks --probe STEPPED=py:pmtest.work:stepped \
		-- "$py" "$SCENARIO" gens >/dev/null 2>"$out.err"; then t_pass
	else t_fail "pmetrics failed: $(tail -n 2 "$out.err")"; return; fi
	if [ "$minor" -ge 12 ] || [ "$hook" = calls ]; then
		expect_ok "$tag.generator" "TICKS rows $(durations TICKS "$data")ms, want 30" \
			sleeps_ok "$data" TICKS 0.03
	else
		expect_rows "$tag.generator" "$data" TICKS 0
	fi
	expect_ok "$tag.send_close" "STEPPED rows $(durations STEPPED "$data")ms, want 10 20" \
		sleeps_ok "$data" STEPPED 0.01 0.02
	expect_ok "$tag.cancelled" "analyze rows $(durations $ANALYZE "$data")ms, want one of 90-180" \
		awk -F, -v a=$ANALYZE '$1 == a { n++; if ($3 < 90e6 || $3 > 180e6) bad = 1 }
			END { exit !(n == 1 && !bad) }' "$data"
}

# check_held PY TAG: a timed coroutine that returns holding another,
# suspended, in a local (and one holding one that holds a third): the
# held one is closed as the first's frame is cleared, inside its last
# step. Each gets its row (all 20 ms of time.sleep), and no end is
# counted as one whose start was lost.
held_rows_ok() { sleeps_ok "$1" HOLDING 0.02 0.02 0.02 && sleeps_ok "$1" STEPPED 0.02 0.02; }
check_held() {
	local py="$1" tag="$2" out
	out=$(fresh_dir)
	t_begin "$tag.held_run"
	if "$PMETRICS" record -o "$out" --probe HOLDING=py:pmtest.work:holding \
		--probe STEPPED=py:pmtest.work:stepped -- "$py" "$SCENARIO" held >/dev/null 2>"$out.err"; then t_pass
	else t_fail "pmetrics failed: $(tail -n 2 "$out.err")"; return; fi
	expect_ok "$tag.held_rows" "rows $(durations HOLDING "$out/robot_context_data") / $(durations STEPPED "$out/robot_context_data")ms, want 20 20 20 / 20 20" \
		held_rows_ok "$out/robot_context_data"
	expect_ok "$tag.held_no_lost" "spans counted lost: $(grep 'spans lost' "$out.err" | grep -v ' 0 (ring')" \
		bash -c "! grep -q '^pmetrics: python spans lost' '$out.err'"
}

# check_pid MINOR PY TAG: attach to a running interpreter, then let it run.
check_pid() {
	local minor="$1" py="$2" tag="$3" out refs go pypid
	out=$(fresh_dir); refs=$(mktemp -d "$T_TMP/refs.XXXXXX")
	go="$T_TMP/go.$tag"
	PMTEST_REFS="$refs" "$py" "$SCENARIO" wait-for "$go" robot >"$T_TMP/py.$tag.out" 2>&1 &
	pypid=$!
	for _ in $(seq 100); do grep -q waiting "$T_TMP/py.$tag.out" && break; sleep 0.05; done
	t_begin "$tag.pid_attach"
	if ! pm_start -o "$out" --preset robot-server --pid "$pypid"; then
		t_fail "pmetrics did not attach: $(tail -n 2 "$PM_ERR")"
		kill "$pypid" 2>/dev/null; wait "$pypid" 2>/dev/null
		return
	fi
	touch "$go"
	wait "$pypid"
	if pm_wait; then t_pass; else t_fail "pmetrics exited non-zero: $(tail -n 2 "$PM_ERR")"; fi
	expect_spans "$tag.pid_rows" "$out/robot_context_data" "$refs" $ANALYZE=4
	expect_rows "$tag.pid_cached" "$out/robot_context_data" $CACHED 3
}

t_begin python_root; need_root || exit 0

for minor in 8 9 10 11 12 13; do
	py=$(interpreter "3.$minor")
	if [ -z "$py" ]; then
		t_begin "py3$minor"; t_skip "no pyenv Python 3.$minor installed"
		continue
	fi
	tag="py3$minor"
	check_timed "$tag.timed.launch" "$py" "$minor" launch coroutines
	check_timed "$tag.timed.pid" "$py" "$minor" pid coroutines
	check_timed "$tag.timed.calls" "$py" "$minor" launch calls
	stripped=$(stripped_copy "$minor")
	if [ -n "$stripped" ]; then
		check_timed "$tag.stripped.launch" "$py" "$minor" launch coroutines "$stripped"
		check_timed "$tag.stripped.pid" "$py" "$minor" pid coroutines "$stripped"
		if [ "$minor" -ge 13 ]; then
			# 3.13 keeps _PyFunction_Vectorcall static: a stripped
			# build cannot time plain functions, and says so
			expect_error "$tag.stripped.calls_refused" 1 "has no _PyFunction_Vectorcall: --python-hook calls cannot be honoured" \
				-x "$T_TMP/never.calls13" -e LD_LIBRARY_PATH="$stripped" -- "$PMETRICS" record \
				-o "$T_TMP/never.calls13" --python-hook calls "${TIMED_PROBES[@]}" -- "$py" -c pass
		else
			check_timed "$tag.stripped.calls" "$py" "$minor" launch calls "$stripped"
		fi
	else
		t_begin "$tag.stripped"; t_skip "no libpython3.$minor.so.1.0 beside $py to strip"
	fi
	check_version "$minor" "$py" "$tag" coroutines
	check_version "$minor" "$py" "$tag.calls" calls
	check_gens "$minor" "$py" "$tag" coroutines
	check_gens "$minor" "$py" "$tag.calls" calls
	check_held "$py" "$tag"
	check_pid "$minor" "$py" "$tag"
	check_children "$minor" "$py" "$tag"
done

# expect_said NAME MAJOR MINOR WHAT PATTERN: on a kernel of at least
# MAJOR.MINOR, `record -v` of a Python capture says PATTERN (that it uses
# WHAT).
read -r kmaj kmin < <(uname -r | awk -F. '{ print $1, $2 + 0 }')
expect_said() {
	local name="$1" maj="$2" min="$3" what="$4" pattern="$5" py
	t_begin "$name"
	py=$(interpreter 3.10)
	if [ -z "$py" ]; then t_skip "no pyenv Python 3.10 installed"
	elif [ "$kmaj" -lt "$maj" ] || { [ "$kmaj" -eq "$maj" ] && [ "$kmin" -lt "$min" ]; }; then
		t_skip "kernel $(uname -r): $what need $maj.$min+"
	elif "$PMETRICS" record -v -o "$(fresh_dir)" --preset robot-server -- "$py" -c pass 2>&1 |
		grep -q "$pattern"; then t_pass
	else t_fail "-v does not say the Python uprobes use $what on kernel $(uname -r)"; fi
}

# Where the kernel has multi-uprobe links that filter by process (6.10,
# and 6.6-6.9 with the fix), pmetrics uses them; where it has uprobe
# sessions (6.13) an untimed call traps once: the entry program asks for
# the return only of a timed call.
expect_said python.multi_links 6 10 "multi-uprobe links that filter by process" \
	"^pmetrics: Python uprobes in multi-uprobe links"
expect_said python.sessions 6 13 "uprobe sessions" "uprobe sessions: an untimed call traps once"

# Kernels with multi-uprobe links but no sessions (6.6-6.12, the robot's
# 6.6 among them) put an entry and a return probe on each hook point: the
# same rows either way, with either hook.
for minor in 10 12; do
	py=$(interpreter "3.$minor")
	[ -n "$py" ] || continue
	PMETRICS_TEST_NO_UPROBE_SESSION=1 check_timed "py3$minor.return_probes" "$py" "$minor" launch coroutines
	PMETRICS_TEST_NO_UPROBE_SESSION=1 check_timed "py3$minor.return_probes.calls" "$py" "$minor" launch calls
	expect_ok "py3$minor.return_probes.said" "-v does not say the uprobes go without sessions" \
		grep -qE "^pmetrics: Python uprobes (in multi-uprobe links \(one per program\)|one link each \(no multi-uprobe links here\))$" \
		"$TIMED_ERR"
done

# Kernels without multi-uprobe links (before 6.6, as Debian's 6.1) get
# one link per uprobe: the same rows either way.
for minor in 10 12; do
	py=$(interpreter "3.$minor")
	[ -n "$py" ] || continue
	PMETRICS_TEST_NO_UPROBE_MULTI=1 check_timed "py3$minor.single_links" "$py" "$minor" launch coroutines
	expect_ok "py3$minor.single_links.said" "-v does not say the uprobes are one link each" \
		grep -q "^pmetrics: Python uprobes one link each" "$TIMED_ERR"
done

# Debian's own interpreter: static, stripped, non-PIE, no libpython,
# built with LTO (its coroutine steps go through PyIter_Send).
if [ -x /usr/bin/python3.11 ]; then
	check_version 11 /usr/bin/python3.11 debian311 coroutines
	check_timed debian311.timed.launch /usr/bin/python3.11 11 launch coroutines
	check_timed debian311.timed.pid /usr/bin/python3.11 11 pid coroutines
else
	t_begin debian311; t_skip "no /usr/bin/python3.11 (Debian package python3.11)"
fi

# A copy whose name carries no version (as an embedding or vendored
# interpreter may be): the version comes from the ABI tag in its bytes.
if [ -x /usr/bin/python3.11 ]; then
	cp /usr/bin/python3.11 "$T_TMP/robot-interpreter"
	check_pid 11 "$T_TMP/robot-interpreter" renamed311
	expect_ok renamed311.version "-v does not name Python 3.11" \
		grep -q "^pmetrics: Python 3.11 interpreter .*/robot-interpreter " "$PM_ERR"
else
	t_begin renamed311; t_skip "no /usr/bin/python3.11 (Debian package python3.11)"
fi

# ---- functools.wraps: one row per call, the wrapped function's ------------
# The wrapper carries the wrapped function's qualified name; its code's own
# name (wrapper) tells it apart, so a call is one row, never two.
for minor in 8 9 10 11 12 13; do
	py=$(interpreter "3.$minor")
	[ -n "$py" ] || continue
	out=$(fresh_dir)
	hook=coroutines
	[ "$minor" -le 10 ] && hook=calls # plain calls from Python are seen up to 3.10
	(cd "$ROOT/tests/progs/py" && "$PMETRICS" record -o "$out" --python-hook "$hook" \
		--probe DEC=py:pmtest.decorated:dec --probe PDEC=py:pmtest.decorated:pdec \
		-- "$py" -m pmtest.decorated) >/dev/null 2>"$T_TMP/deco.err"
	expect_ok "py3$minor.decorated_once" "dec rows $(durations DEC "$out/robot_context_data")ms, want 3 of 20 ms" \
		sleeps_ok "$out/robot_context_data" DEC 0.02 0.02 0.02
	if [ "$hook" = calls ]; then
		expect_ok "py3$minor.decorated_plain_once" "pdec rows $(durations PDEC "$out/robot_context_data")ms, want 2 of 10 ms" \
			sleeps_ok "$out/robot_context_data" PDEC 0.01 0.01
	fi
done

# ---- plain functions whose def ran before attach (3.8-3.10) --------------
# The qualified name comes from the function object on the caller's value
# stack: direct calls and the pool's fn(*args) are timed; Busy.crunch and
# other.crunch are not. Calls from C with no Python caller (atexit) stay
# unresolved and are counted in a warning.
for minor in 8 9 10; do
	py=$(interpreter "3.$minor")
	[ -n "$py" ] || continue
	out=$(fresh_dir)
	go="$T_TMP/go.sync$minor"
	"$py" "$SCENARIO" wait-for "$go" sync threads >"$T_TMP/py.sync.out" 2>&1 &
	pypid=$!
	for _ in $(seq 100); do grep -q waiting "$T_TMP/py.sync.out" && break; sleep 0.05; done
	t_begin "py3$minor.pid_sync_attach"
	if pm_start -o "$out" --probe CRUNCH=py:pmtest.work:crunch --python-hook calls --pid "$pypid"; then
		touch "$go"; wait "$pypid"
		if pm_wait; then t_pass; else t_fail "pmetrics exited non-zero: $(tail -n 2 "$PM_ERR")"; fi
		expect_ok "py3$minor.pid_sync_rows" "crunch rows $(durations CRUNCH "$out/robot_context_data")ms, want 11 of 50" \
			sleeps_ok "$out/robot_context_data" CRUNCH 0.05 0.05 0.05 0.05 0.05 0.05 0.05 0.05 0.05 0.05 0.05
	else
		t_fail "pmetrics did not attach: $(tail -n 2 "$PM_ERR")"; kill "$pypid"; wait "$pypid"
	fi
done
# Calls from C, with no Python caller whose frame names the function
# (Context.run, a loop callback, atexit), attached after the def ran:
# the function object itself names them.
py=$(interpreter 3.10)
if [ -n "$py" ]; then
	out=$(fresh_dir)
	"$py" "$SCENARIO" wait-for "$T_TMP/go.map" from-c >"$T_TMP/py.map.out" 2>&1 &
	pypid=$!
	for _ in $(seq 100); do grep -q waiting "$T_TMP/py.map.out" && break; sleep 0.05; done
	t_begin py310.from_c_attached_late
	if pm_start -o "$out" --probe CRUNCH=py:pmtest.work:crunch --python-hook calls --pid "$pypid"; then
		touch "$T_TMP/go.map"; wait "$pypid"; pm_wait
		if sleeps_ok "$out/robot_context_data" CRUNCH 0.01 0.01 0.01 0.01 0.01; then t_pass
		else t_fail "crunch rows $(durations CRUNCH "$out/robot_context_data")ms, want 5 of 10"; fi
	else
		t_fail "pmetrics did not attach: $(tail -n 2 "$PM_ERR")"; kill "$pypid"; wait "$pypid"
	fi
fi

# ---- coroutines cut by the capture's start or end (3.10) -------------------
py=$(interpreter 3.10)
if [ -n "$py" ]; then
	# attached in the middle of a 2 s analysis: that one gives no row
	out=$(fresh_dir)
	"$py" "$SCENARIO" long >"$T_TMP/py.long.out" 2>&1 &
	pypid=$!
	for _ in $(seq 100); do grep -q "long started" "$T_TMP/py.long.out" && break; sleep 0.02; done
	t_begin py310.started_before_attach
	if pm_start -o "$out" --preset robot-server --pid "$pypid"; then
		wait "$pypid"; pm_wait
		if ! sleeps_ok "$out/robot_context_data" $ANALYZE 0.1; then
			t_fail "rows $(durations $ANALYZE "$out/robot_context_data")ms, want only the 100 ms one"
		elif ! grep -q "python spans lost: 1 (coroutines started before pmetrics attached)" "$PM_ERR"; then
			t_fail "the cut coroutine is not counted: $(tail -n 3 "$PM_ERR")"
		else
			t_pass
		fi
	else
		t_fail "pmetrics did not attach: $(tail -n 2 "$PM_ERR")"; kill "$pypid"; wait "$pypid"
	fi
	# capture ends in the middle of it: no row, counted as running
	out=$(fresh_dir)
	t_begin py310.running_at_end
	"$PMETRICS" record -o "$out" --preset robot-server -d 1s -- "$py" "$SCENARIO" long \
		>/dev/null 2>"$T_TMP/end.err"
	if [ "$(rows "$out/robot_context_data" $ANALYZE)" -ne 0 ]; then
		t_fail "a row for a coroutine that had not finished"
	elif ! grep -q "open at the end: 1 coroutine(s) still running" "$T_TMP/end.err"; then
		t_fail "not counted as running at the end: $(tail -n 3 "$T_TMP/end.err")"
	else
		t_pass
	fi
fi

# ---- resource context of Python spans (--resources) ------------------------
# One companion row per span row, same state and start. Tolerances: a
# 200 ms spin is on CPU or waiting for one for >= 180 ms and blocked
# < 20 ms; a 50 ms sleep is blocked >= 45 ms and on CPU < 10 ms (on-CPU
# time lags by up to a tick at each end).
for minor in 10 11; do
	py=$(interpreter "3.$minor")
	[ -n "$py" ] || continue
	out=$(fresh_dir)
	t_begin "py3$minor.resources_run"
	if "$PMETRICS" record --resources -o "$out" --python-hook calls --probe SPIN=py:pmtest.work:spin \
		--probe CRUNCH=py:pmtest.work:crunch --preset robot-server \
		-- "$py" "$SCENARIO" spin robot >/dev/null 2>"$out.err"; then t_pass
	else t_fail "pmetrics failed: $(tail -n 2 "$out.err")"; continue; fi
	res="$out/robot_context_resources"
	expect_ok "py3$minor.resources_rows" "context rows do not match span rows one to one" \
		cmp -s <(cut -d, -f1,2 "$out/robot_context_data" | sort) <(cut -d, -f1,2 "$res" | sort)
	if [ "$minor" -le 10 ]; then # 3.11 inlines these plain calls: no span, no row
		expect_ok "py3$minor.resources_spin" "spin row: $(grep ^SPIN "$res")" \
			awk -F, '$1 == "SPIN" { n++; if ($4 + $5 < 180e6 || $6 > 20e6) bad = 1 } END { exit !(n == 1 && !bad) }' "$res"
		expect_ok "py3$minor.resources_sleep" "crunch row: $(grep ^CRUNCH "$res")" \
			awk -F, '$1 == "CRUNCH" { n++; if ($6 < 45e6 || $4 > 10e6) bad = 1 } END { exit !(n == 1 && !bad) }' "$res"
	fi
	# a coroutine: its event-loop thread's time, mostly blocked in the loop's poll
	expect_ok "py3$minor.resources_coroutine" "analyze rows: $(grep ^ANALYZING "$res" | tr '\n' ' ')" \
		awk -F, '$1 == "ANALYZING_PROTOCOL" { n++; if (($4 + $5 + $6 != $3 && $6 != 0) || $6 < $3 / 2) bad = 1 }
			END { exit !(n == 4 && !bad) }' "$res"
done

# A span's RSS peak is its own: calls deeper than the 64 a thread can
# have open, and 200 MB touched and freed between two spans, leave the
# second span's peak at most 4 MB over its start and end.
py=$(interpreter 3.10)
if [ -n "$py" ]; then
	out=$(fresh_dir)
	t_begin py310.resources_peak_own
	if "$PMETRICS" record --resources -o "$out" --python-hook calls --probe CRUNCH=py:pmtest.work:crunch \
		--probe RECURSE=py:pmtest.work:recurse -- "$py" "$SCENARIO" peaks >/dev/null 2>"$out.err"; then
		last=$(grep ^CRUNCH "$out/robot_context_resources" | tail -n 1)
		if awk -F, '{ m = $12 > $13 ? $12 : $13; exit !(NF == 14 && $14 - m <= 4096) }' <<<"$last"; then t_pass
		else t_fail "the second CRUNCH row's rss_peak_kb is not its own: $last"; fi
	else
		t_fail "pmetrics failed: $(tail -n 2 "$out.err")"
	fi
fi

# ---- bad input -------------------------------------------------------------
# py_error NAME CODE TEXT ARGS...: pmetrics record ARGS exits CODE with
# one line holding TEXT, and leaves no output directory behind.
py_error() {
	local name="$1" code="$2" text="$3" out; shift 3
	out="$T_TMP/never.$name"
	expect_error "$name" "$code" "$text" -x "$out" -- "$PMETRICS" record -o "$out" "$@"
}

py_error py_bad_spec 2 "expected py:MODULE:QUALNAME" --probe X=py:nocolon -- /bin/true
py_error py_bad_module 2 "bad Python probe 'py:a-b:f'" --probe X=py:a-b:f -- /bin/true
py_error py_bad_qualname 2 "bad qualified name 'f..g'" --probe X=py:a.b:f..g -- /bin/true
py_error py_not_cpython 1 "not a CPython interpreter" --probe X=py:a.b:f -- /bin/sleep 1
sleep 5 & sleeper=$!
py_error py_pid_not_cpython 1 "not a CPython interpreter" --probe X=py:a.b:f --pid "$sleeper"
kill "$sleeper" 2>/dev/null
# Versions py: probes do not support: named, with the supported range.
for unsupported in py_unsupported:3.7 py_python2:2.7; do
	name=${unsupported%%:*} version=${unsupported#*:}
	old=$(interpreter "$version")
	if [ -n "$old" ]; then
		py_error "$name" 1 "Python $version, which py: probes do not support \(supported: 3.8 to 3.13\)" \
			--probe X=py:a.b:f -- "$old" -c pass
	else
		t_begin "$name"; t_skip "no pyenv Python $version to try an unsupported version on"
	fi
done
printf '#!/bin/sh\nexec true\n' >"$T_TMP/script.sh"; chmod +x "$T_TMP/script.sh"
py_error py_script 1 "script.sh is a script \(#!/bin/sh\), not a CPython binary: launch the Python interpreter itself" \
	--probe X=py:a.b:f -- "$T_TMP/script.sh"
printf '#!/usr/bin/env python3\npass\n' >"$T_TMP/script.py"; chmod +x "$T_TMP/script.py"
py_error py_python_script 1 "script.py is a script \(#!/usr/bin/env python3\), not a CPython binary: launch its interpreter with it: -- python3 .*script.py" \
	--probe X=py:a.b:f -- "$T_TMP/script.py"

# A function never seen: named in the summary, exit 0.
py=$(interpreter 3.10)
if [ -n "$py" ]; then
	out=$(fresh_dir)
	t_begin py_never_seen
	"$PMETRICS" record -o "$out" --probe X=py:pmtest.work:nothing_like_it -- "$py" -c pass 2>"$T_TMP/never.err"
	rc=$?
	if [ $rc -eq 0 ] && grep -q "py:pmtest.work:nothing_like_it: no coroutine of it ran during the capture" "$T_TMP/never.err"; then t_pass
	else t_fail "exit $rc: $(cat "$T_TMP/never.err")"; fi
	# The preset's functions are async def: no advice for plain functions.
	t_begin py_never_seen_preset
	"$PMETRICS" record -o "$out" --preset robot-server -- "$py" -c pass 2>"$T_TMP/never.err"
	rc=$?
	if [ $rc -eq 0 ] && grep -q "warning: py:robot_server.protocols.protocol_analyzer:ProtocolAnalyzer.analyze.*never seen\|warning: py:robot_server.protocols.protocol_analyzer:ProtocolAnalyzer.analyze: no coroutine" "$T_TMP/never.err" &&
		! grep -q "plain function" "$T_TMP/never.err"; then t_pass
	else t_fail "exit $rc: $(cat "$T_TMP/never.err")"; fi
fi

# -v names the kernel memory the capture's BPF maps lock. With py:
# probes alone the native tracer is still loaded (it follows the
# target's children) but keeps no span ring (8 MiB); without sampling
# no table of call stacks is preallocated (12.4 MiB each for 4096
# threads). Either left full size would exceed the bounds below (about
# 13 and 21 MiB on Linux 6.18). Kernels before 6.4 count a table
# allocated as it fills at its full size, and before 6.1 (or on
# PREEMPT_RT) the tables stay preallocated: the bounds hold from 6.4.
kernel_mib() {
	"$PMETRICS" record -v -o "$(fresh_dir)" "$@" 2>&1 |
		sed -n 's/.*BPF maps: \([0-9.]*\) MiB of locked kernel memory$/\1/p'
}
t_begin "locked kernel memory: py: probes alone under 17 MiB, with a native probe under 25 MiB"
py=$(interpreter 3.12)
kernel=$(uname -r | cut -d- -f1)
if [ -z "$py" ]; then
	t_skip "no pyenv Python 3.12"
elif ! printf '6.4\n%s\n' "$kernel" | sort -V -C || [ -e /sys/kernel/realtime ]; then
	t_skip "Linux $kernel: before 6.4, or PREEMPT_RT, the kernel counts every table at full size"
else
	alone=$(kernel_mib --probe X=py:pmtest.work:nothing_like_it -- "$py" -c pass)
	with=$(kernel_mib --probe X=py:pmtest.work:nothing_like_it \
		--probe N=libc.so.6:clock_nanosleep -- "$py" -c pass)
	if [ -n "$alone" ] && [ -n "$with" ] &&
		awk -v a="$alone" -v w="$with" 'BEGIN { exit !(a < 17 && w < 25 && w - a >= 7) }'
	then t_pass; else t_fail "${alone:-?} MiB with py: probes alone, ${with:-?} MiB with a native probe too"; fi
fi
