#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Bad input: one clear line, the right exit code (usage 2, run time 1),
# and no files left behind by a failed start.
source "$ROOT/tests/integration/lib.sh"
SP="$PROGS/spanprog"

# err NAME CODE PATTERN ARGS...: pmetrics ARGS fails with one line.
err() { local n="$1" c="$2" p="$3"; shift 3; expect_error "$n" "$c" "$p" -- "$PMETRICS" "$@"; }

out="$T_TMP/never-created/sub"
err "malformed --probe" 2 "bad --probe 'NOEQUALS': expected STATE=TARGET" record -o "$out" --probe NOEQUALS -- true
err "bad state name" 2 "bad state name 'BAD-STATE'" record -o "$out" --probe BAD-STATE=:f -- true
err "malformed target" 2 "expected BINARY:SYMBOL" record -o "$out" --probe S=nocolon -- true
err "malformed py: spec" 2 "expected py:MODULE:QUALNAME" record -o "$out" --probe S=py:mod -- true
err "bad --duration" 2 "bad --duration '10': use a number with a unit" record -o "$out" --duration 10 --probe S=:f -- true
err "duplicate STATE/TARGET" 2 "given twice" record -o "$out" --probe S=:f --probe S=:f -- true
err "no target" 2 "no target: give --pid PID or -- COMMAND" record -o "$out" --probe S=:f
err "no probes" 2 "no probes" record -o "$out" -- true
err "--sample beside --resources without a target" 2 "no target: .*--sample and --off-cpu need a target" \
	record -o "$out" --resources --sample
err "--no-children without a target" 2 "--no-children needs a target" record -o "$out" --resources --no-children
err "--pid twice" 2 "--pid given twice \\(1, then 2\\): one capture traces one process" record -o "$out" --pid 1 --pid 2 --probe S=:f
err "both --pid and a command" 2 "either --pid or a command" record -o "$out" --pid 1 --probe S=:f -- true
err "unknown option" 2 "unknown option --frobnicate" record --frobnicate
err "a flag given a value" 2 "option --off-cpu takes no value: --off-cpu=yes" record -o "$out" --off-cpu=yes -- true
err "an option without its value" 2 "option --pid needs a value" record -o "$out" --pid
err "a --pid that is not all digits" 2 "bad --pid '\\+1'" record -o "$out" --pid +1 --probe S=:f
err "--python-hook without a py: probe" 2 "--python-hook chooses what py: probes trap, and none is given" \
	record -o "$out" --python-hook calls --probe S=:f -- true
err "empty --btf" 2 "empty --btf" record -o "$out" --btf "" --probe S=:f -- true
err "--sample's rate apart" 2 "--sample takes its rate after '=': --sample=99 \\(apart, 99 is read as another argument" \
	record -o "$out" --sample 99 -- true
err "unknown command" 2 "unknown command 'recrod'" recrod

t_begin "usage errors create no output directory"
if [ ! -e "$T_TMP/never-created" ]; then t_pass; else t_fail "directory created"; fi

if [ "$(id -u)" -ne 0 ]; then
	t_begin "run-time errors"; t_skip "need root to reach the BPF stage"; exit 0
fi

err "no such PID" 1 "no process with PID 4194000" record -o "$out" --pid 4194000 --probe S=:f
# A thread ID is no process: its own probes would never match the PID
# filter, so it is refused, naming the process to give.
"$SP" threads 1 5000 >/dev/null &
threads_pid=$!
for _ in $(seq 50); do [ "$(ls /proc/$threads_pid/task 2>/dev/null | wc -l)" -ge 2 ] && break; sleep 0.1; done
tid=$(ls /proc/$threads_pid/task | grep -vx "$threads_pid" | head -n 1)
err "--pid of a thread names its process" 1 "$tid is a thread of process $threads_pid \(spanprog\), not a process: give --pid $threads_pid" \
	record -o "$out" --pid "$tid" --probe W=:pm_worker
err "check --pid of a thread names its process" 1 "$tid is a thread of process $threads_pid" check --pid "$tid"
kill "$threads_pid" 2>/dev/null; wait "$threads_pid" 2>/dev/null
expect_error "--pid of pmetrics itself" 1 "--pid [0-9]+ is this pmetrics itself" \
	-- bash -c 'exec "$0" record -o "$1" --duration 2s --probe S=libc.so.6:clock_gettime --pid $$' \
	"$PMETRICS" "$out"
err "symbol not found lists close names" 1 "no function 'pm_sleep' in .*close names: .*pm_sleep_ms" \
	record -o "$out" --probe S=:pm_sleep -- "$SP" first
err "binary not mapped by the target" 1 "libnothere.so is not a library found for" \
	record -o "$out" --probe S=libnothere.so:f -- "$SP" first
err "absolute binary missing" 1 "binary /no/such/bin: No such file" \
	record -o "$out" --probe S=/no/such/bin:f -- "$SP" first
t_begin "a launched command that fails: the last line says so, the capture exits 0"
"$PMETRICS" record -o "$T_TMP/failed" --probe S=:pm_sleep_ms -- "$SP" sleep 1 2 >/dev/null 2>"$T_TMP/ok.err"; rc1=$?
"$PMETRICS" record -o "$T_TMP/failed" --probe "S=$SP:pm_sleep_ms" -- sh -c "\"$SP\" sleep 1 2; exit 3" \
	>/dev/null 2>"$T_TMP/failed.err"; rc2=$?
if [ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && ! grep -q "command failed" "$T_TMP/ok.err" &&
	[ "$(tail -n 1 "$T_TMP/failed.err")" = "pmetrics: warning: the command failed (exit status 3): the capture holds only what it did until then" ]
then t_pass; else t_fail "rc $rc1/$rc2: $(tail -n 2 "$T_TMP/failed.err")"; fi
printf '#!/no/such/interpreter\n' >"$T_TMP/badbang.sh"; chmod +x "$T_TMP/badbang.sh"
err "a script whose #! interpreter is missing" 1 "cannot run $T_TMP/badbang.sh: the interpreter its first line names \(#!/no/such/interpreter\) does not exist" \
	record -o "$out" --probe S=libc.so.6:nanosleep -- "$T_TMP/badbang.sh"
err "command not found" 1 "command not found: no-such-command-xyz" \
	record -o "$out" --probe S=:f -- no-such-command-xyz
: >"$T_TMP/not-executable"
err "command not executable" 1 "cannot run .*/not-executable: it is not executable" \
	record -o "$out" --probe S=:f -- "$T_TMP/not-executable"
err "command is a directory" 1 "cannot run /tmp: it is a directory" record -o "$out" --probe S=:f -- /tmp
err "empty command" 1 "empty command after --" record -o "$out" --probe S=:f -- ""
err "--btf file missing" 1 "cannot read --btf /no/btf" \
	record -o "$out" --btf /no/btf --probe S=:pm_first -- "$SP" first

t_begin "failed starts leave no files or directories behind"
if [ ! -e "$T_TMP/never-created" ]; then t_pass; else t_fail "$(find "$T_TMP/never-created")"; fi

t_begin "a failed start in an existing capture directory keeps its data"
keep=$(fresh_dir); printf 'A,1,2\n' >"$keep/robot_context_data"
"$PMETRICS" record -o "$keep" --probe S=:nosuchfn -- "$SP" first 2>/dev/null
if [ "$(cat "$keep/robot_context_data")" = "A,1,2" ] && [ ! -e "$keep/robot_context_data_headers" ]; then t_pass
else t_fail "$(ls "$keep")"; fi

err "output directory not writable (read-only file)" 1 "cannot create output directory .*pick another with -o" \
	record -o /proc/version/sub --probe S=:pm_first -- "$SP" first

t_begin "not root: a clear error naming the capabilities"
if command -v setpriv >/dev/null; then
	setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
		"$PMETRICS" record -o "$T_TMP/nr" --probe S=:pm_first -- "$SP" first 2>"$T_TMP/err" >/dev/null
	rc=$?
	if [ $rc -eq 1 ] && grep -q "needs root: .*CAP_BPF and CAP_PERFMON" "$T_TMP/err" && [ ! -e "$T_TMP/nr" ]; then t_pass
	else t_fail "rc $rc: $(cat "$T_TMP/err")"; fi
else t_skip "setpriv (util-linux) not installed"; fi

t_begin "disk full while writing: reported, exit 1, the file holds whole rows only"
mnt="$T_TMP/small"; mkdir -p "$mnt"
if mount -t tmpfs -o size=64k tmpfs "$mnt" 2>/dev/null; then
	"$PMETRICS" record -o "$mnt" --probe EMPTY=:pm_empty -- "$SP" calls 20000 2>"$T_TMP/err"
	rc=$?
	f="$mnt/robot_context_data"
	total=$(wc -l <"$f"); whole=$(grep -Ec '^EMPTY,[0-9]{19},[0-9]+$' "$f")
	if [ $rc -eq 1 ] && grep -q "No space left on device" "$T_TMP/err" && [ "$total" -gt 100 ] &&
		[ "$total" -eq "$whole" ] && [ "$(tail -c 1 "$f" | od -An -c | tr -d ' ')" = '\n' ]
	then t_pass; else t_fail "rc $rc, $total lines, $whole whole: $(grep pmetrics "$T_TMP/err" | tail -1)"; fi
	umount "$mnt"
else t_skip "cannot mount a tmpfs here"; fi

t_begin "how a started command ended is in the summary: exit status, signal"
"$PMETRICS" record -o "$T_TMP/st" --probe S=libc.so.6:getpid -- sh -c 'exit 7' 2>"$T_TMP/err1" >/dev/null
"$PMETRICS" record -o "$T_TMP/st" --probe S=libc.so.6:getpid -- sh -c 'kill -SEGV $$' 2>"$T_TMP/err2" >/dev/null
if grep -q "target exited (exit status 7) after" "$T_TMP/err1" &&
	grep -q "target exited (killed by signal 11, " "$T_TMP/err2"
then t_pass; else t_fail "$(head -n 1 "$T_TMP/err1") / $(head -n 1 "$T_TMP/err2")"; fi

t_begin "a started command that ignores SIGTERM is named, not left silently"
"$PMETRICS" record -o "$T_TMP/st" --duration 200ms --probe S=libc.so.6:getpid -- \
	bash -c 'trap "" TERM; sleep 5 & wait' 2>"$T_TMP/err" >/dev/null
left=$(sed -n 's/.*the command (PID \([0-9]*\)) is still running 1 s after SIGTERM: left running.*/\1/p' "$T_TMP/err")
if [ -n "$left" ] && kill -0 "$left" 2>/dev/null; then t_pass; else t_fail "$(cat "$T_TMP/err")"; fi
[ -n "$left" ] && kill -KILL "$left" 2>/dev/null

# BPF maps are charged to the loader's memory cgroup (Linux 5.11+): a
# service's MemoryMax= can refuse them. A 256 MiB span ring in a 64 MiB
# cgroup: far more than the limit, while pmetrics' own pages fit. (Where
# the tables stay preallocated the figure is about 268 MiB.)
# mem_cgroup BYTES: a memory cgroup of the test's own with that limit,
# its directory in CG (empty where none can be made). MEM_ENABLED: the
# memory controller was turned on for the root's children here.
MEM_ENABLED="" CG=""
mem_cgroup() {
	local dir
	if grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
		if ! grep -qw memory /sys/fs/cgroup/cgroup.subtree_control; then
			echo +memory >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null && MEM_ENABLED=1
		fi
		dir=/sys/fs/cgroup/pmetrics-test.$$
		mkdir "$dir" 2>/dev/null && echo "$1" >"$dir/memory.max" 2>/dev/null && CG=$dir
	elif [ -d /sys/fs/cgroup/memory ]; then
		dir=/sys/fs/cgroup/memory/pmetrics-test.$$
		mkdir "$dir" 2>/dev/null && echo "$1" >"$dir/memory.limit_in_bytes" 2>/dev/null && CG=$dir
	fi
	[ -n "$CG" ] || rmdir "$dir" 2>/dev/null
}
# 128 MiB: room for pmetrics itself (16 MiB resident, 57 MiB under ASan)
# and its other maps, never for a 512 MiB ring.
mem_cgroup $((128 * 1024 * 1024))
cg=$CG
t_begin "maps a memory cgroup refuses: the limit and --ringbuf-size named, nothing made"
if [ -n "$cg" ]; then
	bash -c 'echo $$ >"$1/cgroup.procs" && exec "$2" record -o "$3" --ringbuf-size 512 \
		--probe X=:pm_sleep_ms -- "$4" sleep 5 2' - "$cg" "$PMETRICS" "$T_TMP/cg-out" \
		"$PROGS/spanprog" >"$T_TMP/cg.err" 2>&1
	rc=$?
	line=$(grep -v '^libbpf:' "$T_TMP/cg.err")
	want="^pmetrics: cannot load the native span tracer: the kernel refused about 5[12][0-9]\.[0-9] MiB for its BPF maps \(Cannot allocate memory\): raise the memory limit of pmetrics' cgroup \(systemd: MemoryMax=\) or give a smaller --ringbuf-size$"
	if [ $rc -eq 0 ]; then
		t_skip "the kernel charged no BPF memory to the cgroup (before 5.11, or cgroup.memory=nokmem)"
	elif [ $rc -eq 1 ] && [ "$(printf '%s\n' "$line" | wc -l)" -eq 1 ] &&
		printf '%s\n' "$line" | grep -Eq -- "$want" && [ ! -e "$T_TMP/cg-out" ]; then
		t_pass
	else t_fail "exit $rc: $(head -c 400 "$T_TMP/cg.err")"; fi
	rmdir "$cg" 2>/dev/null
	[ -n "$MEM_ENABLED" ] && echo -memory >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null
else
	t_skip "no memory cgroup can be made here"
fi

# Too few descriptors to start: named at once. Left to run, the kernel
# check's probes would fail for want of descriptors and read as features
# the kernel lacks ("no BPF attach cookies").
expect_error "an open-files limit below what pmetrics needs to start" 1 \
	"^pmetrics: the open-files limit is 16, below the 32 descriptors pmetrics needs to start \(raise the open-files limit: ulimit -Hn, or LimitNOFILE= for a systemd service\)$" \
	-x "$T_TMP/fd-out" -- bash -c 'ulimit -n 16 && ulimit -Hn 16 && exec "$1" record -o "$2" \
	--probe X=:pm_sleep_ms -- "$3" sleep 5 2' - "$PMETRICS" "$T_TMP/fd-out" "$PROGS/spanprog"
