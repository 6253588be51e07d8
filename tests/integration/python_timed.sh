# SPDX-License-Identifier: MIT
# The timed-coroutine check shared by the Python tests (sourced after
# lib.sh): pmtest.timed (tests/progs/py) run under an interpreter, launched
# or attached to, its rows checked against the functions' own in-process
# timing (span_refs.py) and the hook points `record -v` named.

SCENARIO="$ROOT/tests/progs/py/scenario.py"

# ---- what a capture must say about the hooks ---------------------------------
# hook_points ERRFILE: the hook points `record -v` attached, "SYMBOL=SOURCE" each.
hook_points() {
	sed -n 's/^pmetrics: Python hook \([A-Za-z_]*\) at file offset 0x[0-9a-f]* (\([a-z .-]*\):.*/\1=\2/p' "$1" |
		sort -u | tr '\n' ' '
}

# expect_hooks TAG ERRFILE MINOR HOOK STRIPPED: the capture used the hook
# points this version needs, none of them a fallback: the coroutine step
# function; up to 3.11 where a throw through awaits ends coroutines, on
# 3.12+ the coroutine's creation and deallocation; and with
# --python-hook calls the function call; on a stripped file none of them
# from a symbol table it does not have.
expect_hooks() {
	local tag="$1" err="$2" minor="$3" hook="$4" stripped="$5" got want
	got=$(hook_points "$err")
	want="_PyGen_FetchStopIterationValue"
	[ "$minor" -ge 12 ] && want="_Py_MakeCoro gen_dealloc"
	[ "$hook" = calls ] && want+=" _PyFunction_Vectorcall"
	[ "$hook" = calls ] && [ "$minor" -le 11 ] && want+=" gen_iternext"
	t_begin "$tag.hooks"
	local sym missing=""
	for sym in $want; do
		grep -q "\(^\| \)$sym=" <<<"$got" || missing+=" $sym"
	done
	# the step function, or the exported function a build inlined it into
	grep -q "\(^\| \)\(PyGen_am_send\|PyIter_Send\)=" <<<"$got" || missing+=" PyGen_am_send"
	if [ -n "$missing" ]; then t_fail "hook points missing:$missing (attached: $got)"; return; fi
	if [ "$stripped" = yes ] && grep -q "=symtab" <<<"$got"; then
		t_fail "a stripped file's hook point came from .symtab: $got"; return
	fi
	t_pass
}

# ---- exact spans against the functions' own timing ---------------------------
TIMED_PROBES=(--probe NEST=py:pmtest.timed:nest --probe STEP=py:pmtest.timed:step
	--probe TICKS=py:pmtest.timed:ticks --probe PLAIN=py:pmtest.timed:plain)
# A row may exceed the function's own measurement by the time from its
# first step to its first line and from its finally clause to its end:
# microseconds, at most 3 ms here; when the loaded 2-core VM preempts the
# thread there, a tenth of the rows may exceed it by up to ten times that
# (span_refs.py; 4.3 ms seen once in 24 rows).
MAX_EXCESS_US=${MAX_EXCESS_US:-3000}

# timed_counts MINOR HOOK RUNS: the NAME=COUNT list span_refs.py checks
# for RUNS runs of pmtest.timed.run(): nested coroutines 6 deep, tasks,
# gather, an exception, cancellations, closes (NEST 6, STEP 11 a run); the
# generator a for loop runs (3.12+ always: made and freed in C; before,
# only with --python-hook calls, which hooks gen_iternext); plain calls
# from map() only with --python-hook calls.
timed_counts() {
	local minor="$1" hook="$2" runs="$3" ticks=0 plain=0
	if [ "$minor" -ge 12 ] || [ "$hook" = calls ]; then ticks=$runs; fi
	[ "$hook" = calls ] && plain=$((3 * runs))
	echo "NEST=$((6 * runs)) STEP=$((11 * runs)) TICKS=$ticks PLAIN=$plain"
}

# check_timed TAG PY MINOR MODE HOOK [LIBDIR]: pmtest.timed in the
# interpreter and in three children of it (subprocess -m, multiprocessing
# spawn and fork), launched by pmetrics or attached to with --pid; with
# LIBDIR, the interpreter loads the libpython found there. With
# TIMED_CHILDREN=no, in the interpreter alone: a quarter of the time,
# where an emulated CPU makes each interpreter start cost seconds.
# TIMED_ARGS: more record options, as words. Leaves the capture's
# directory in TIMED_OUT and pmetrics' messages in TIMED_ERR.
check_timed() {
	local tag="$1" py="$2" minor="$3" mode="$4" hook="$5" libdir="${6:-}" out refs err go pypid
	local -a env=() scenarios=(timed timed-children)
	local runs=4
	[ "${TIMED_CHILDREN:-yes}" = no ] && scenarios=(timed) runs=1
	local -a extra=()
	read -ra extra <<<"${TIMED_ARGS:-}"
	out=$(fresh_dir)
	TIMED_OUT="" TIMED_ERR=""
	refs=$(mktemp -d "$T_TMP/refs.XXXXXX")
	[ -n "$libdir" ] && env=(LD_LIBRARY_PATH="$libdir")
	t_begin "$tag.run"
	if [ "$mode" = launch ]; then
		err="$out.err"
		if ! env "${env[@]}" PMTEST_REFS="$refs" "$PMETRICS" record -v -o "$out" --python-hook "$hook" \
			"${TIMED_PROBES[@]}" "${extra[@]}" -- "$py" "$SCENARIO" "${scenarios[@]}" >/dev/null 2>"$err"; then
			t_fail "pmetrics failed: $(grep -v '^libbpf' "$err" | tail -n 2)"; return
		fi
	else
		go="$T_TMP/go.$tag"
		env "${env[@]}" PMTEST_REFS="$refs" "$py" "$SCENARIO" wait-for "$go" "${scenarios[@]}" \
			>"$out.py" 2>&1 &
		pypid=$!
		for _ in $(seq 200); do grep -q waiting "$out.py" && break; sleep 0.05; done
		if ! pm_start -o "$out" --python-hook "$hook" "${TIMED_PROBES[@]}" "${extra[@]}" --pid "$pypid"; then
			t_fail "pmetrics did not attach: $(grep -v '^libbpf' "$PM_ERR" | tail -n 2)"
			kill "$pypid" 2>/dev/null; wait "$pypid" 2>/dev/null; return
		fi
		touch "$go"
		wait "$pypid"
		if ! pm_wait; then t_fail "pmetrics exited non-zero: $(tail -n 2 "$PM_ERR")"; return; fi
		err="$PM_ERR"
	fi
	t_pass
	TIMED_OUT=$out TIMED_ERR=$err
	expect_hooks "$tag" "$err" "$minor" "$hook" "$([ -n "$libdir" ] && echo yes || echo no)"
	# shellcheck disable=SC2046 # one NAME=COUNT word each
	expect_spans "$tag.spans" "$out/robot_context_data" "$refs" $(timed_counts "$minor" "$hook" "$runs")
}

