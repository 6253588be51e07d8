#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# timeout: 1500
# Python spans on an older kernel: Debian's 6.1 amd64 kernel booted under
# qemu TCG with this machine's own files (tests/robot/tcg-x86.sh). Its
# verifier gives up sooner than this machine's (a program it cannot walk
# in a million instructions is refused, where a newer one prunes it), and
# it has neither multi-uprobe links nor uprobe sessions, so every hook
# point is a link of its own with a separate return probe: the path the
# robot's 5.15 and 6.6 take. Every installed pyenv CPython 3.8-3.13 is
# timed there with the default hook and with --python-hook calls, and a
# stripped copy of 3.10 and 3.12 with the default hook, and 3.8 and 3.11
# with --resources (the span context makes the largest programs), each
# launched, the rows checked exactly as test_python.sh checks them
# (span_refs.py), and with --resources one span context row per span,
# with the slack the emulated CPU needs. The interpreter's subprocess,
# spawn and fork children are timed too for 3.11 and 3.12, the last
# version of each way of ending coroutines; for the others it would
# double the run (18 min seen on a busy host) and test nothing new.
#
# The emulated CPU runs some 30x slower than this one: a row may exceed
# the function's in-process interval by up to 10 ms there (3 ms natively).
source "$ROOT/tests/integration/lib.sh"
source "$ROOT/tests/integration/python_timed.sh"

t_begin kernel61_root; need_root || exit 0

if [ -n "${PMETRICS_IN_TCG:-}" ]; then
	MAX_EXCESS_US=10000
	t_begin kernel61.kernel
	case "$(uname -r)" in
	6.1.*) t_pass ;;
	*) t_fail "the guest runs $(uname -r), want Debian's 6.1" ;;
	esac
	for minor in 8 9 10 11 12 13; do
		py=$(interpreter "3.$minor")
		if [ -z "$py" ]; then t_begin "kernel61.py3$minor"; t_skip "no pyenv Python 3.$minor installed"; continue; fi
		# the children only for the last version of each way of ending
		# coroutines (3.11: a throw through awaits; 3.12: deallocation)
		children=no
		case $minor in 11 | 12) children=yes ;; esac
		TIMED_CHILDREN=$children check_timed "kernel61.py3$minor.coroutines" "$py" "$minor" launch coroutines
		t_begin "kernel61.py3$minor.one_link_each"
		if grep -q "^pmetrics: Python uprobes one link each" "$TIMED_ERR"; then t_pass
		else t_fail "-v does not say the uprobes are one link each on $(uname -r)"; fi
		TIMED_CHILDREN=$children check_timed "kernel61.py3$minor.calls" "$py" "$minor" launch calls
	done
	for minor in 10 12; do
		py=$(interpreter "3.$minor")
		lib=$(stripped_copy "$minor")
		if [ -z "$py" ] || [ -z "$lib" ]; then
			t_begin "kernel61.py3$minor.stripped"; t_skip "no pyenv Python 3.$minor libpython to strip"; continue
		fi
		TIMED_CHILDREN=no check_timed "kernel61.py3$minor.stripped" "$py" "$minor" launch coroutines "$lib"
	done
	# --resources adds the span context to the step programs, the
	# largest this verifier is given: 3.8 (a finished coroutine's frame
	# pointer) and 3.11 (its state byte, the throw through awaits)
	for minor in 8 11; do
		py=$(interpreter "3.$minor")
		[ -n "$py" ] || continue
		TIMED_CHILDREN=no TIMED_ARGS="--resources --interval 1" \
			check_timed "kernel61.py3$minor.resources" "$py" "$minor" launch coroutines
		t_begin "kernel61.py3$minor.resources.context_rows"
		spans=$(wc -l <"$TIMED_OUT/robot_context_data" 2>/dev/null || echo 0)
		ctx=$(wc -l <"$TIMED_OUT/robot_context_resources" 2>/dev/null || echo 0)
		if [ "$spans" -gt 0 ] && [ "$ctx" -eq "$spans" ]; then t_pass
		else t_fail "$ctx span context rows for $spans spans"; fi
	done
	exit 0
fi

rerun_in_tcg_x86 kernel61 "$ROOT/tests/integration/test_python_kernel61.sh" || exit 0
sed -n '/^\(PASS\|FAIL\|SKIP\) kernel61\./p; /^    /p' "$T_TMP/guest.log"
t_begin kernel61.emulated_ran
if grep -q '^PASS kernel61\.py31[0-3]\.coroutines\.spans' "$T_TMP/guest.log"; then t_pass
else t_fail "the emulated run checked nothing: $(tail -n 3 "$T_TMP/guest.log" | tr '\n' ' ')"; fi
