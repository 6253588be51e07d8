#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# pmetrics check, and captures on a kernel without BTF. This machine's
# kernel can do everything (BTF, uprobe events, BPF tracing), so the
# no-BTF cases run with PMETRICS_TEST_NO_BTF=1, which makes pmetrics act
# as on a kernel without BTF: it loads the builds of its BPF objects that
# hold no CO-RE relocation and reads no kernel struct. Kernels that lack
# uprobe events or BTF for real are booted by make test-robot.
source "$ROOT/tests/integration/lib.sh"
need_root || exit 0
SP="$PROGS/spanprog"
CAPS=("native spans" "following children" "span context" "resource series")
# Python spans say how often an untimed step traps: once with uprobe
# sessions (this kernel), twice without
PY_ONCE="ok: an untimed Python step traps once (uprobe sessions)"
PY_TWICE="ok: an untimed Python step traps twice, at entry and return (uprobe sessions need Linux 6.13)"

# cap_line FILE NAME: the state part of capability NAME's line.
cap_line() { sed -n "s/^  $2 *//p" "$1"; }

# ---- this kernel ----------------------------------------------------------
t_begin "check: every capability ok here, exit 0"
"$PMETRICS" check >"$T_TMP/check" 2>"$T_TMP/check.err"; rc=$?
bad=""
for c in "${CAPS[@]}"; do [ "$(cap_line "$T_TMP/check" "$c")" = ok ] || bad+=" [$c]"; done
# sampling has two ways, and says which
[ "$(cap_line "$T_TMP/check" "CPU sampling")" = "ok: bpf" ] || bad+=" [CPU sampling]"
[ "$(cap_line "$T_TMP/check" "Python spans")" = "$PY_ONCE" ] || bad+=" [Python spans]"
if [ $rc -eq 0 ] && [ -z "$bad" ] && grep -q "config: /proc/config.gz, BTF: the kernel's own" "$T_TMP/check"
then t_pass; else t_fail "rc $rc, not ok:$bad: $(cat "$T_TMP/check" "$T_TMP/check.err")"; fi

t_begin "check --json: one object, the same capabilities"
"$PMETRICS" check --json >"$T_TMP/check.json"
if python3 - "$T_TMP/check.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
caps = d["capabilities"]
assert list(caps) == ["native spans", "Python spans", "Python watch hook", "following children", "span context",
                      "resource series", "CPU sampling"], caps
assert caps["CPU sampling"]["detail"] == "bpf", caps
assert caps["Python spans"]["detail"] == "an untimed Python step traps once (uprobe sessions)", caps
assert all(c["state"] == "ok" for n, c in caps.items() if n != "Python watch hook"), caps
assert d["kernel"]["btf"] == "own" and d["kernel"]["config"] == "/proc/config.gz"
PY
then t_pass; else t_fail "$(head -c 400 "$T_TMP/check.json")"; fi

# The watch hook's line agrees with a watchpoint of the test's own
# (bench/watchpoints/watcher.c --self-test): ok where a hit is seen, else
# missing, saying the watchpoints never fire or cannot be had.
t_begin "check: the watch hook's line agrees with whether watchpoints fire here"
watch_line=$(cap_line "$T_TMP/check" "Python watch hook")
if ! gcc -O2 -o "$T_TMP/watcher" "$ROOT/bench/watchpoints/watcher.c"; then
	t_fail "bench/watchpoints/watcher.c does not build"
elif [ "$("$T_TMP/watcher" --self-test 2>/dev/null || echo 0)" -gt 0 ]; then
	if [ "$watch_line" = ok ]; then t_pass; else t_fail "watchpoints fire here, check says '$watch_line'"; fi
else
	case "$watch_line" in
	"missing: this machine's hardware watchpoints never fire (0 of 10 writes seen"*"use --python-hook coroutines") t_pass ;;
	"missing: this kernel gives no hardware watchpoint (perf_event_open: "*"use --python-hook coroutines") t_pass ;;
	*) t_fail "watchpoints never fire here, check says '$watch_line'" ;;
	esac
fi

t_begin "check as without BPF on perf events: sampling degraded to perf_event_open, the rest ok"
PMETRICS_TEST_PERF_FALLBACK=1 "$PMETRICS" check >"$T_TMP/perf" 2>&1; rc=$?
bad=""
for c in "${CAPS[@]}"; do [ "$(cap_line "$T_TMP/perf" "$c")" = ok ] || bad+=" [$c]"; done
[ "$(cap_line "$T_TMP/perf" "Python spans")" = "$PY_ONCE" ] || bad+=" [Python spans]"
if [ $rc -eq 0 ] && [ -z "$bad" ] &&
	[[ "$(cap_line "$T_TMP/perf" "CPU sampling")" == "degraded: perf fallback: perf_event_open in user space"* ]]
then t_pass; else t_fail "rc $rc, not ok:$bad: $(cat "$T_TMP/perf")"; fi

t_begin "check as without bpf_loop() (before Linux 5.17): sampling degraded to perf_event_open, the watch hook missing, naming it"
PMETRICS_TEST_NO_BPF_LOOP=1 "$PMETRICS" check >"$T_TMP/noloop" 2>&1; rc=$?
if [ $rc -eq 0 ] && [ "$(cap_line "$T_TMP/noloop" "CPU sampling")" = "degraded: perf fallback: perf_event_open in user space, Python stacks read just after each sample: the kernel has no bpf_loop(), which the BPF sampler walks Python stacks with (it came in Linux 5.17)" ] &&
	[ "$(cap_line "$T_TMP/noloop" "Python watch hook")" = "missing: the kernel has no bpf_loop(), which the hook finds the thread's Python frame with (it came in Linux 5.17)" ]
then t_pass; else t_fail "rc $rc: $(cat "$T_TMP/noloop")"; fi

t_begin "record --sample as without bpf_loop(): samples taken by perf_event_open"
out=$(fresh_dir)
PMETRICS_TEST_NO_BPF_LOOP=1 "$PMETRICS" record -o "$out" --sample=99 -- "$PROGS/sample_burn" shares 1 \
	>/dev/null 2>"$T_TMP/noloop.err"; rc=$?
n=$(grep -c ',on-cpu,' "$out/profile_samples" 2>/dev/null)
if [ $rc -eq 0 ] && grep -q "taken by perf_event_open" "$T_TMP/noloop.err" && [ "${n:-0}" -ge 50 ]
then t_pass; else t_fail "rc $rc, ${n:-0} samples: $(tail -n 3 "$T_TMP/noloop.err")"; fi

t_begin "check as without uprobe sessions: an untimed Python step traps twice, the rest as before"
PMETRICS_TEST_NO_UPROBE_SESSION=1 "$PMETRICS" check >"$T_TMP/nosession" 2>&1; rc=$?
bad=""
for c in "${CAPS[@]}"; do [ "$(cap_line "$T_TMP/nosession" "$c")" = ok ] || bad+=" [$c]"; done
if [ $rc -eq 0 ] && [ -z "$bad" ] && [ "$(cap_line "$T_TMP/nosession" "Python spans")" = "$PY_TWICE" ]
then t_pass; else t_fail "rc $rc, not ok:$bad: $(cat "$T_TMP/nosession")"; fi

# ---- root of a user namespace of its own ----------------------------------------
# Its capabilities do not count for bpf(), which says EPERM: the words
# must name that privilege, not a kernel built without bpf().
if unshare -U -r true 2>/dev/null; then
	t_begin "check in a user namespace of its own: spans missing for want of privilege there"
	unshare -U -r "$PMETRICS" check >"$T_TMP/userns" 2>&1; rc=$?
	want="needs CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN) in the initial user namespace, and this process is in another one"
	if [ $rc -eq 1 ] && [[ "$(cap_line "$T_TMP/userns" "native spans")" == "missing: "*"$want"* ]] &&
		[[ "$(cap_line "$T_TMP/userns" "Python spans")" == "missing: "*"$want"* ]] &&
		! grep -q "CONFIG_" "$T_TMP/userns"
	then t_pass; else t_fail "rc $rc: $(cat "$T_TMP/userns")"; fi
	expect_error "record in a user namespace of its own: one line naming the privilege" 1 \
		"^pmetrics: native spans: missing: .*in the initial user namespace.*run pmetrics outside it$" \
		-x "$T_TMP/never-userns" -- unshare -U -r "$PMETRICS" record -o "$T_TMP/never-userns" \
		--probe S=:pm_empty -- "$SP" calls 1
else
	t_begin "check in a user namespace of its own"; t_skip "unshare -U is not allowed here"
fi

# ---- as without BTF ---------------------------------------------------------
t_begin "check without BTF: spans ok, span context missing naming the option, series from /proc"
PMETRICS_TEST_NO_BTF=1 "$PMETRICS" check >"$T_TMP/nobtf" 2>&1; rc=$?
ctx=$(cap_line "$T_TMP/nobtf" "span context"); res=$(cap_line "$T_TMP/nobtf" "resource series")
if [ $rc -eq 0 ] && [ "$(cap_line "$T_TMP/nobtf" "native spans")" = ok ] &&
	[ "$(cap_line "$T_TMP/nobtf" "Python spans")" = "$PY_ONCE" ] &&
	[[ "$ctx" == "missing: the kernel has no BTF ("*"CONFIG_DEBUG_INFO_BTF"*"or give --btf FILE" ]] &&
	[[ "$res" == "degraded: read from /proc, not by the BPF task iterator: "* ]] &&
	[[ "$(cap_line "$T_TMP/nobtf" "following children")" == degraded:* ]]
then t_pass; else t_fail "rc $rc: $(cat "$T_TMP/nobtf")"; fi

t_begin "without BTF: 20000 calls give 20000 rows"
out=$(fresh_dir)
PMETRICS_TEST_NO_BTF=1 "$PMETRICS" record -o "$out" --probe EMPTY=:pm_empty -- "$SP" calls 20000 2>"$T_TMP/err"
n=$(rows "$out/robot_context_data" EMPTY)
if [ "$n" -eq 20000 ] && [ "$(grep -vc '^ \|^pmetrics: target exited' "$T_TMP/err")" -eq 0 ]; then t_pass
else t_fail "$n rows: $(cat "$T_TMP/err")"; fi

t_begin "without BTF: a child forked after attach is traced (5 parent + 5 child rows)"
out=$(fresh_dir); rm -f "$T_TMP/go.fork"
"$SP" -w "$T_TMP/go.fork" fork 5 & target=$!
sleep 0.2
if PMETRICS_TEST_NO_BTF=1 pm_start -o "$out" --pid $target --probe PARENT=:pm_worker --probe CHILD=:pm_child_work; then
	touch "$T_TMP/go.fork"; wait $target; pm_wait
	f="$out/robot_context_data"
	if [ "$(rows "$f" PARENT)" -eq 5 ] && [ "$(rows "$f" CHILD)" -eq 5 ]; then t_pass
	else t_fail "parent $(rows "$f" PARENT), child $(rows "$f" CHILD)"; fi
else t_fail "did not start: $(cat "$PM_ERR")"; kill $target; fi

# A thread a traced process made and ended frees its task_struct, which
# the next task may get: that one must not be taken for a traced child.
# Both on CPU 0, where the freed slot is reused soonest.
t_begin "without BTF: 200 processes made after 200 short threads of the target are not traced"
out=$(fresh_dir); rm -f "$T_TMP/go.churn"
taskset -c 0 "$SP" -w "$T_TMP/go.churn" churn 200 30 & target=$!
sleep 0.2
if PMETRICS_TEST_NO_BTF=1 pm_start -o "$out" --pid $target --probe EMPTY=:pm_empty; then
	touch "$T_TMP/go.churn"; sleep 0.5
	for _ in $(seq 200); do taskset -c 0 "$SP" calls 1 >/dev/null; done
	kill -INT "$PM_PID"; pm_wait; kill $target; wait $target 2>/dev/null
	n=$(rows "$out/robot_context_data" EMPTY)
	if [ "$n" -eq 0 ]; then t_pass; else t_fail "$n rows from processes that are not the target's"; fi
else t_fail "did not start: $(cat "$PM_ERR")"; kill $target; fi

t_begin "without BTF: --resources with probes drops the span context in one warning, spans stay exact"
out=$(fresh_dir)
PMETRICS_TEST_NO_BTF=1 "$PMETRICS" record -o "$out" --resources --interval 1 --probe SLEEP=:pm_sleep_ms \
	-- "$SP" sleep 20 5 2>"$T_TMP/err"; rc=$?
if [ $rc -eq 0 ] && [ "$(rows "$out/robot_context_data" SLEEP)" -eq 5 ] && [ ! -e "$out/robot_context_resources" ] &&
	[ "$(grep -c '^pmetrics: span context: missing: the kernel has no BTF' "$T_TMP/err")" -eq 1 ] &&
	[ "$(grep -c '^pmetrics: resource series: degraded: read from /proc' "$T_TMP/err")" -eq 1 ] &&
	grep -q "spanprog sleep 20 5" "$out/system_resource_data"
then t_pass; else t_fail "rc $rc: $(ls "$out"): $(cat "$T_TMP/err")"; fi

t_begin "without BTF: the resource series from /proc matches /proc/PID/stat"
# res_burn burns 600 ms of user and 300 ms of system time, says "done",
# then sleeps with its counters still until it is killed.
"$PROGS/res_burn" 600 300 >"$T_TMP/burn.out" & burner=$!
for _ in $(seq 100); do grep -q done "$T_TMP/burn.out" && break; sleep 0.05; done
out=$(fresh_dir)
PMETRICS_TEST_NO_BTF=1 "$PMETRICS" record -o "$out" --resources --interval 1 --duration 1500ms --pid $burner 2>"$T_TMP/err"
ticks=$(sed 's/.*) //' "/proc/$burner/stat" | awk '{ print $12 + $13 }')
kill $burner; wait $burner 2>/dev/null
cpu=$(awk -F, 'END { print $4 + $5 }' "$out/system_resource_data")
# the same clock ticks: equal to the tick, 0.01 s (USER_HZ 100)
if awk -v c="$cpu" -v t="$ticks" 'BEGIN { d = c - t / 100; if (d < 0) d = -d; exit !(c >= 0.8 && d <= 0.0101) }'
then t_pass; else t_fail "csv cpu $cpu s vs /proc ticks $ticks: $(cat "$T_TMP/err")"; fi

t_begin "with --btf FILE and no BTF of its own: span context works, the series reads /proc"
cp /sys/kernel/btf/vmlinux "$T_TMP/own.btf"
out=$(fresh_dir)
PMETRICS_TEST_NO_BTF=1 "$PMETRICS" record -o "$out" --btf "$T_TMP/own.btf" --resources --interval 1 \
	--probe SLEEP=:pm_sleep_ms -- "$SP" sleep 20 5 2>"$T_TMP/err"; rc=$?
if [ $rc -eq 0 ] && [ "$(rows "$out/robot_context_resources" SLEEP)" -eq 5 ] &&
	[ "$(grep -c '^pmetrics: resource series: degraded: .*the kernel has no BTF' "$T_TMP/err")" -eq 1 ]
then t_pass; else t_fail "rc $rc: $(cat "$T_TMP/err")"; fi

# ---- --btf files that cannot be used --------------------------------------
: >"$T_TMP/empty.btf"
head -c 1000 /sys/kernel/btf/vmlinux >"$T_TMP/cut.btf"
head -c 4096 /dev/urandom >"$T_TMP/random.btf"
expect_error "--btf empty file" 1 "cannot use --btf $T_TMP/empty.btf: it is not BTF" -- "$PMETRICS" check --btf "$T_TMP/empty.btf"
expect_error "--btf truncated" 1 "cannot use --btf $T_TMP/cut.btf: it is not BTF" -- "$PMETRICS" check --btf "$T_TMP/cut.btf"
expect_error "--btf random bytes" 1 "cannot use --btf $T_TMP/random.btf: it is not BTF" -- "$PMETRICS" check --btf "$T_TMP/random.btf"
expect_error "--btf a directory" 1 "cannot use --btf $T_TMP: it is a directory, not a file" -- "$PMETRICS" check --btf "$T_TMP"
expect_error "--btf an ELF file without BTF" 1 "cannot use --btf /bin/true: it is not BTF" -- "$PMETRICS" check --btf /bin/true
expect_error "--btf a BPF program's BTF" 1 "it is not a kernel's BTF" -- "$PMETRICS" check --btf "$BUILD/bpf/span.bpf.o"
# A vmlinux of another release: this kernel's BTF in an ELF whose banner says 5.15.77.
printf 'Linux version 5.15.77-toradex (oe-user@oe-host) #1 SMP PREEMPT\0' >"$T_TMP/banner"
if objcopy --add-section .BTF="$T_TMP/own.btf" --add-section .banner="$T_TMP/banner" /bin/true "$T_TMP/vmlinux-other" 2>/dev/null; then
	expect_error "--btf from another release" 1 "it is from Linux 5.15.77-toradex, and this kernel is $(uname -r)" \
		-- "$PMETRICS" record --btf "$T_TMP/vmlinux-other" -o "$T_TMP/never" --probe S=:pm_empty -- "$SP" calls 1
else
	t_begin "--btf from another release"; t_skip "objcopy cannot add sections here"
fi

# ---- check --pid -------------------------------------------------------------
expect_error "check --pid of no process" 1 "no process with PID 4194000" -- "$PMETRICS" check --pid 4194000
expect_error "check --pid of a kernel thread" 1 "process 2 \(kthreadd\) is a kernel thread: it has no executable to probe" \
	-- "$PMETRICS" check --pid 2
expect_error "check: unknown option" 2 "^pmetrics check: unknown option --frob" -- "$PMETRICS" check --frob
expect_error "check: bad --pid" 2 "^pmetrics check: bad --pid 'x1'" -- "$PMETRICS" check --pid x1
expect_error "check: --pid without its value" 2 "^pmetrics check: option needs a value: --pid" -- "$PMETRICS" check --pid

t_begin "check --pid of a native process: not Python, native probes only"
sleep 30 & sleeper=$!
"$PMETRICS" check --pid $sleeper >"$T_TMP/pid" 2>&1; rc=$?
kill $sleeper; wait $sleeper 2>/dev/null
if [ $rc -eq 0 ] && grep -q "^target $sleeper: .*sleep" "$T_TMP/pid" &&
	grep -q "not a Python target: .*native probes go into its executable" "$T_TMP/pid"
then t_pass; else t_fail "rc $rc: $(cat "$T_TMP/pid")"; fi

t_begin "check --json --pid of a program whose name is not UTF-8: valid JSON, each bad sequence U+FFFD"
# a lone Latin-1 byte, a surrogate, an overlong '/', a cut sequence; and
# valid UTF-8, which passes as is
name=$'sl\xe9ep-\xc3\xa9-\xed\xa0\x80-\xc0\xaf-\xe2\x82'
cp "$(command -v sleep)" "$T_TMP/$name"
"$T_TMP/$name" 30 & odd=$!
sleep 0.2
"$PMETRICS" check --json --pid $odd >"$T_TMP/odd.json" 2>"$T_TMP/odd.err"; rc=$?
kill $odd; wait $odd 2>/dev/null
if python3 - "$T_TMP/odd.json" "$T_TMP/$name" <<'PY'
import json, os, sys
d = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))  # strict: fails on invalid UTF-8
want = os.fsencode(sys.argv[2]).decode("utf-8", "replace")
assert d["target"]["executable"] == want, (d["target"]["executable"], want)
assert "\u00e9" in want and want.count("\ufffd") == 7, want
PY
then t_pass; else t_fail "rc $rc: $(head -c 400 "$T_TMP/odd.json" | od -c | head -5) $(cat "$T_TMP/odd.err")"; fi

py=$(ls -d "$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"/versions/3.10.*/bin/python3.10 2>/dev/null | head -n 1)
t_begin "check --pid of CPython 3.10: the interpreter, its version and every hook point's table"
if [ -z "$py" ]; then t_skip "no pyenv CPython 3.10 here"; else
	"$py" -c 'import time; time.sleep(30)' & pypid=$!
	sleep 0.5
	"$PMETRICS" check --pid $pypid >"$T_TMP/py" 2>&1
	if grep -q "interpreter   .*libpython3.10.so.1.0: CPython 3.10, with symbols (.symtab)" "$T_TMP/py" &&
		grep -Eq "hook point +PyIter_Send +\.symtab at file offset 0x[0-9a-f]+" "$T_TMP/py" &&
		grep -Eq "hook point +gen_throw +\.symtab at file offset 0x[0-9a-f]+ \(gen_throw \(local\)\)" "$T_TMP/py" &&
		grep -Eq "hook point +_PyGen_FetchStopIterationValue +\.symtab at file offset 0x[0-9a-f]+" "$T_TMP/py"
	then t_pass; else t_fail "$(cat "$T_TMP/py")"; fi
	kill $pypid; wait $pypid 2>/dev/null

	t_begin "check --pid of a stripped libpython (strip --strip-unneeded, as the robot's): .dynsym only"
	mkdir -p "$T_TMP/stripped"
	cp "$(dirname "$py")/../lib/libpython3.10.so.1.0" "$T_TMP/stripped/"
	strip --strip-unneeded "$T_TMP/stripped/libpython3.10.so.1.0"
	LD_LIBRARY_PATH="$T_TMP/stripped" "$py" -c 'import time; time.sleep(30)' & pypid=$!
	sleep 0.5
	"$PMETRICS" check --pid $pypid >"$T_TMP/pys" 2>&1
	if grep -q "interpreter   $T_TMP/stripped/libpython3.10.so.1.0: CPython 3.10, stripped (.dynsym only)" "$T_TMP/pys" &&
		grep -Eq "hook point +PyIter_Send +\.dynsym at file offset 0x[0-9a-f]+" "$T_TMP/pys" &&
		grep -Eq "hook point +_PyGen_FetchStopIterationValue +\.dynsym at file offset 0x[0-9a-f]+" "$T_TMP/pys" &&
		grep -Eq "hook point +gen_send +method table at file offset 0x[0-9a-f]+ \(PyCoro_Type\.tp_methods\[\"send\"\]" "$T_TMP/pys"
	then t_pass; else t_fail "$(cat "$T_TMP/pys")"; fi
	kill $pypid; wait $pypid 2>/dev/null
fi
