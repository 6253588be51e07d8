#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Probes go into the files the target itself sees: a target in its own
# mount namespace (a container, a chroot) with a library or interpreter
# at a path that does not exist outside it, a library replaced on disk
# while the target still maps the old one, and PID namespaces on either
# side; and pmetrics' times in a time namespace of its own. libprog -w GO N K waits for GO, then makes K calls of N ms to
# spanlib_compute in libspanlib.so.1: exactly K rows each time.
source "$ROOT/tests/integration/lib.sh"
need_root || exit 0

LIBPROG="$PROGS/libprog"
SCENARIO_DIR="$ROOT/tests/progs/py"

# nsrun SCRIPT ARGS...: SCRIPT in a private mount namespace, background;
# sets NS_PID to the process it finally execs (it writes its PID first).
nsrun() {
	local pidfile="$T_TMP/ns.pid.$RANDOM"
	unshare -m --propagation private bash "$@" "$pidfile" &
	for _ in $(seq 100); do [ -s "$pidfile" ] && break; sleep 0.05; done
	NS_PID=$(cat "$pidfile" 2>/dev/null)
}

# a library at /mnt/nslib, seen only inside the namespace
cat >"$T_TMP/libprog-ns.sh" <<'SH'
set -e
progs=$1 go=$2 pidfile=$3
mount -t tmpfs pmetrics-test /mnt
mkdir /mnt/nslib
cp "$progs/libprog" "$progs/libspanlib.so.1" /mnt/nslib/
echo $$ >"$pidfile"
exec /mnt/nslib/libprog -w "$go" 5 3
SH

# capture_pid NAME GO PROBE: attaches to NS_PID, releases it, wants 3 rows.
capture_pid() {
	local name="$1" go="$2" probe="$3" out
	out=$(fresh_dir)
	t_begin "$name"
	if [ -z "$NS_PID" ] || [ -e "/mnt/nslib/libprog" ]; then
		t_fail "no namespaced target (or /mnt/nslib is visible outside)"; return
	fi
	if pm_start -o "$out" --pid "$NS_PID" --probe "$probe"; then
		touch "$go"; pm_wait
		if [ "$(rows "$out/robot_context_data" LIB)" -eq 3 ]; then t_pass
		else t_fail "$(rows "$out/robot_context_data" LIB) rows, want 3: $(grep -v '^libbpf' "$PM_ERR" | head -3)"; fi
	else
		t_fail "did not attach: $(grep -v '^libbpf' "$PM_ERR" | head -2)"; touch "$go"
	fi
}

nsrun "$T_TMP/libprog-ns.sh" "$PROGS" "$T_TMP/go1"
capture_pid "mount namespace: a library by soname at a path only the target sees" \
	"$T_TMP/go1" "LIB=libspanlib.so.1:spanlib_compute"
nsrun "$T_TMP/libprog-ns.sh" "$PROGS" "$T_TMP/go2"
capture_pid "mount namespace: a library by its absolute path in the target's view" \
	"$T_TMP/go2" "LIB=/mnt/nslib/libspanlib.so.1:spanlib_compute"
wait

# ---- symlinks inside the target's root -------------------------------------
# An absolute symlink in the target's root is read in that root. The host
# holds a decoy at the path the link names, which must get no probe (it
# would, were the link read in pmetrics' root: 0 rows and no error).
cat >"$T_TMP/symlink-ns.sh" <<'SH'
set -e
progs=$1 dir=$2 go=$3 pidfile=$4
mount -t tmpfs pmetrics-test "$dir"
cp "$progs/libprog" "$progs/libspanlib.so.1" "$dir/"
ln -s "$dir/libspanlib.so.1" "$dir/alias.so"
echo $$ >"$pidfile"
exec "$dir/libprog" -w "$go" 5 3
SH
decoy="$T_TMP/nsroot"
mkdir -p "$decoy" && cp "$PROGS/libspanlib.so.1" "$decoy/"
nsrun "$T_TMP/symlink-ns.sh" "$PROGS" "$decoy" "$T_TMP/go7"
t_begin "mount namespace: an absolute symlink is followed in the target's root, not in ours"
out=$(fresh_dir)
if [ -z "$NS_PID" ] || [ -e "$decoy/alias.so" ]; then
	t_fail "no namespaced target (or its tmpfs is visible outside)"; touch "$T_TMP/go7"
elif pm_start -o "$out" --pid "$NS_PID" --probe "LIB=$decoy/alias.so:spanlib_compute"; then
	touch "$T_TMP/go7"; pm_wait
	n=$(rows "$out/robot_context_data" LIB)
	if [ "$n" -eq 3 ]; then t_pass
	else t_fail "$n rows, want 3: $(grep -v '^libbpf' "$PM_ERR" | head -3)"; fi
else
	t_fail "did not attach: $(grep -v '^libbpf' "$PM_ERR" | head -2)"; touch "$T_TMP/go7"
fi
wait

# ---- a FIFO where the target's ld.so.cache should be ------------------------
# Opening it would wait for a writer forever (and SIGTERM would not end
# that): the resolver passes it over and says the library is not found.
cat >"$T_TMP/fifo-ns.sh" <<'SH'
set -e
fifo=$1 pidfile=$2
mount --bind "$fifo" /etc/ld.so.cache
echo $$ >"$pidfile"
exec sleep 60
SH
mkfifo "$T_TMP/cache.fifo"
nsrun "$T_TMP/fifo-ns.sh" "$T_TMP/cache.fifo"
expect_error "a FIFO over the target's ld.so.cache: not waited on, the library is said missing" 1 \
	"^pmetrics: probe libnothere\.so\.1:f: libnothere\.so\.1 is not mapped by process $NS_PID " \
	-x "$T_TMP/never-fifo" -- timeout -k 5 30 "$PMETRICS" record -o "$T_TMP/never-fifo" \
	--pid "$NS_PID" --probe X=libnothere.so.1:f
kill -KILL "$NS_PID" 2>/dev/null
wait "$NS_PID" 2>/dev/null

# ---- a relative probe path and a target under another root ---------------
# A relative path is read from pmetrics' working directory, which says
# nothing of a chroot's files: refused, naming the form to give.
cat >"$T_TMP/chroot-ns.sh" <<'SH'
set -e
progs=$1 pidfile=$2
root=$(mktemp -d)
mkdir -p "$root/bin"
cp "$progs/spanprog" "$root/bin/"
for lib in $(ldd "$progs/spanprog" | grep -o '/[^ ]*'); do
	mkdir -p "$root$(dirname "$lib")" && cp "$lib" "$root$lib"
done
echo $$ >"$pidfile"
exec chroot "$root" /bin/spanprog loop 10
SH
nsrun "$T_TMP/chroot-ns.sh" "$PROGS"
if [ -n "$NS_PID" ]; then
	(cd "$PROGS" && expect_error "a relative probe path, target under another root: refused, naming the form" 1 \
		"binary ./spanprog: a relative path, and process $NS_PID has another root \(a container\?\): give the path as it sees it, from /" \
		-x "$T_TMP/never-rel" -- "$PMETRICS" record -o "$T_TMP/never-rel" -d 200ms --pid "$NS_PID" --probe S=./spanprog:pm_sleep_ms)
	kill -KILL "$NS_PID" 2>/dev/null
	wait "$NS_PID" 2>/dev/null
else
	t_begin "a relative probe path, target under another root"; t_skip "no chroot could be made"
fi

# ---- a library replaced on disk while mapped ----------------------------
# replaced_library NAME BINARY: a running libprog whose library is renamed
# over after it mapped it; probed by BINARY (a file name, or a path under
# NAME's directory), the mapped file gives its 3 rows, with a warning.
replaced_library() {
	local name="$1" binary="$2" dir="$T_TMP/replaced-$1" out target n
	mkdir -p "$dir"
	cp "$LIBPROG" "$PROGS/libspanlib.so.1" "$dir/"
	"$dir/libprog" -w "$dir/go" 5 3 & target=$!
	for _ in $(seq 100); do grep -q "$dir/libspanlib" "/proc/$target/maps" 2>/dev/null && break; sleep 0.05; done
	cp "$PROGS/libspanlib.so.1" "$dir/new.so" && mv "$dir/new.so" "$dir/libspanlib.so.1"
	out=$(fresh_dir)
	if pm_start -o "$out" --pid "$target" --probe "LIB=${binary//@DIR@/$dir}:spanlib_compute"; then
		touch "$dir/go"; wait "$target"; pm_wait
		n=$(rows "$out/robot_context_data" LIB)
		if [ "$n" -eq 3 ] && grep -q "replaced or deleted on disk since" "$PM_ERR"; then t_pass
		else t_fail "$n rows, want 3 and a warning: $(grep -v '^libbpf' "$PM_ERR" | head -3)"; fi
	else
		t_fail "did not attach: $(grep -v '^libbpf' "$PM_ERR" | head -2)"; kill "$target"
	fi
}
t_begin "a library replaced on disk: the mapped one is probed, and pmetrics says so"
replaced_library name libspanlib.so.1
t_begin "the same library by its absolute path: the mapped one is probed, and pmetrics says so"
replaced_library path @DIR@/libspanlib.so.1

# ---- Python: an interpreter library only the target sees ----------------
py=$(ls -d "$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"/versions/3.10.*/bin/python3.10 2>/dev/null | head -n 1)
t_begin "mount namespace: py: probes find a libpython only the target sees"
if [ -z "$py" ]; then
	t_skip "no pyenv CPython 3.10 here"
else
	cat >"$T_TMP/py-ns.sh" <<'SH'
set -e
py=$1 dir=$2 go=$3 pidfile=$4
mount -t tmpfs pmetrics-test /mnt
mkdir /mnt/nspy
cp "$(dirname "$py")/../lib/libpython3.10.so.1.0" /mnt/nspy/
cd "$dir"
echo $$ >"$pidfile"
LD_LIBRARY_PATH=/mnt/nspy exec "$py" scenario.py wait-for "$go" robot >/dev/null 2>&1
SH
	nsrun "$T_TMP/py-ns.sh" "$py" "$SCENARIO_DIR" "$T_TMP/go4"
	for _ in $(seq 100); do grep -q /mnt/nspy/libpython "/proc/$NS_PID/maps" 2>/dev/null && break; sleep 0.05; done
	out=$(fresh_dir)
	if pm_start -o "$out" --pid "$NS_PID" --preset robot-server; then
		touch "$T_TMP/go4"; pm_wait
		a=$(rows "$out/robot_context_data" ANALYZING_PROTOCOL)
		c=$(rows "$out/robot_context_data" GETTING_CACHED_ANALYSIS)
		if [ "$a" -eq 4 ] && [ "$c" -eq 3 ] && grep -q "interpreter /mnt/nspy/libpython3.10" "$PM_ERR"
		then t_pass; else t_fail "$a + $c rows, want 4 + 3 (scenario.py robot): $(grep -v '^libbpf' "$PM_ERR" | head -3)"; fi
	else
		t_fail "did not attach: $(grep -v '^libbpf' "$PM_ERR" | head -2)"; touch "$T_TMP/go4"
	fi
	wait
fi

# ---- PID namespaces --------------------------------------------------------
t_begin "a target in its own PID namespace, attached by the PID pmetrics sees"
unshare -p -f --mount-proc "$LIBPROG" -w "$T_TMP/go5" 5 3 &
for _ in $(seq 100); do target=$(pgrep -f "libprog -w $T_TMP/go5" | tail -n 1); [ -n "$target" ] && break; sleep 0.05; done
out=$(fresh_dir)
if pm_start -o "$out" --pid "$target" --probe LIB=libspanlib.so.1:spanlib_compute; then
	touch "$T_TMP/go5"; pm_wait
	n=$(rows "$out/robot_context_data" LIB)
	if [ "$n" -eq 3 ]; then t_pass; else t_fail "$n rows, want 3"; fi
else
	t_fail "did not attach: $(grep -v '^libbpf' "$PM_ERR" | head -2)"; touch "$T_TMP/go5"
fi
wait

# pmetrics itself in a PID namespace (run from a container): the PIDs it
# knows are that namespace's, not the kernel's that BPF sees.
cat >"$T_TMP/inside.sh" <<'SH'
pm=$1 progs=$2 tmp=$3
"$progs/libprog" -w "$tmp/go6" 5 3 &
target=$!
"$pm" record -o "$tmp/in-pid" --pid "$target" --probe LIB=libspanlib.so.1:spanlib_compute 2>"$tmp/in-pid.err" &
pm=$!
for _ in $(seq 100); do [ -s "$tmp/in-pid/robot_context_data_headers" ] && break; sleep 0.05; done
sleep 0.2; touch "$tmp/go6"; wait "$pm"
"$1" record -o "$tmp/in-launch" --probe LIB=libspanlib.so:spanlib_compute -- "$progs/libprog" 5 3 2>"$tmp/in-launch.err"
"$1" record -o "$tmp/in-res" --resources --interval 1 -- "$progs/spanprog" sleep 500 5 2>"$tmp/in-res.err"
SH
unshare -p -f --mount-proc bash "$T_TMP/inside.sh" "$PMETRICS" "$PROGS" "$T_TMP"
t_begin "pmetrics in its own PID namespace: --pid"
n=$(rows "$T_TMP/in-pid/robot_context_data" LIB)
if [ "$n" -eq 3 ]; then t_pass; else t_fail "$n rows, want 3: $(head -c 300 "$T_TMP/in-pid.err")"; fi
t_begin "pmetrics in its own PID namespace: a launched command"
n=$(rows "$T_TMP/in-launch/robot_context_data" LIB)
if [ "$n" -eq 3 ]; then t_pass; else t_fail "$n rows, want 3: $(head -c 300 "$T_TMP/in-launch.err")"; fi
# the task iterator walks the namespace's tasks; their PIDs must be the
# namespace's too, or /proc (the namespace's own) has none of them
t_begin "pmetrics in its own PID namespace: the resource series (2.5 s, 1 s apart: 3 rows)"
n=$(grep -c "spanprog sleep 500 5" "$T_TMP/in-res/system_resource_data" 2>/dev/null)
if [ "$n" -eq 3 ]; then t_pass; else t_fail "$n rows, want 3: $(grep -v '^libbpf' "$T_TMP/in-res.err" | tail -n 2)"; fi
# a PID namespace without a /proc of its own: refused, nothing written
expect_error "pmetrics in a PID namespace with the parent's /proc" 1 "/proc belongs to another PID namespace" \
	-x "$T_TMP/no-proc" -- unshare -p -f "$PMETRICS" record -o "$T_TMP/no-proc" --resources -- /bin/true

# ---- time namespaces ---------------------------------------------------------
# pmetrics in a time namespace of its own (a container, a restored
# checkpoint): its CLOCK_MONOTONIC and CLOCK_BOOTTIME are the kernel's
# plus the namespace's offsets, while BPF and perf read the kernel's own.
# The times it writes must still be the wall clock's (span starts,
# samples) and a process's start time what /proc says, or each would be
# off by the offset, and the resource series would take every process
# for a reused PID and write none of it.
# in_time_ns NAME MONO BOOT: spans, then samples and the resource
# series, each captured in a namespace whose monotonic clock is MONO
# seconds off the kernel's and its boot clock BOOT (two values, so that
# one offset taken for the other shows).
in_time_ns() {
	local name="$1" mono="$2" boot="$3" out before after bad n
	out=$(fresh_dir)
	before=$(now_ns)
	unshare --time --monotonic "$mono" --boottime "$boot" --fork "$PMETRICS" record -o "$out" \
		--probe LIB=libspanlib.so:spanlib_compute -- "$LIBPROG" 5 3 2>"$T_TMP/timens.err"
	after=$(now_ns)
	t_begin "$name: span starts are wall-clock times (3 rows)"
	n=$(rows "$out/robot_context_data" LIB)
	bad=$(awk -F, -v a="$before" -v b="$after" '$1 == "LIB" && ($2 < a || $2 > b)' \
		"$out/robot_context_data" | head -n 1)
	if [ "$n" -eq 3 ] && [ -z "$bad" ]; then t_pass
	else t_fail "$n rows, want 3, all between $before and $after; first outside: ${bad:-none} ($(grep -v '^libbpf' "$T_TMP/timens.err" | tail -n 1))"; fi

	out=$(fresh_dir)
	before=$(now_ns)
	unshare --time --monotonic "$mono" --boottime "$boot" --fork env PMETRICS_TEST_PERF_FALLBACK=1 \
		"$PMETRICS" record -o "$out" --resources --interval 1 --sample --off-cpu \
		-- "$PROGS/sample_burn" block 2 2>"$T_TMP/timens.err"
	after=$(now_ns)
	t_begin "$name: CPU and off-CPU samples by perf_event_open are wall-clock times"
	bad=$(awk -F, -v a="$before" -v b="$after" 'NR > 0 && ($1 < a || $1 > b)' \
		"$out/profile_samples" | head -n 1)
	n=$(grep -c ',off-cpu,' "$out/profile_samples" 2>/dev/null)
	if [ "$(grep -c ',on-cpu,' "$out/profile_samples" 2>/dev/null)" -gt 0 ] && [ "$n" -gt 0 ] && [ -z "$bad" ]; then
		t_pass
	else t_fail "$n off-CPU samples; first outside $before..$after: ${bad:-none} ($(grep -v '^libbpf' "$T_TMP/timens.err" | tail -n 1))"; fi
	t_begin "$name: the resource series has the process, started when it started"
	bad=$(awk -F, -v a="$before" -v b="$after" '/sample_burn block/ {
		n++; if ($3 * 1e9 < a - 2e9 || $3 * 1e9 > b) print $3 }' \
		"$out/system_resource_data" | head -n 1)
	n=$(grep -c 'sample_burn block' "$out/system_resource_data" 2>/dev/null)
	if [ "$n" -ge 2 ] && [ -z "$bad" ]; then t_pass
	else t_fail "$n rows, want 2 or more; a start time outside the run: ${bad:-none} ($(grep -v '^libbpf' "$T_TMP/timens.err" | grep resources | tail -n 1))"; fi
}

if unshare --time --monotonic 1 true 2>/dev/null; then
	in_time_ns "pmetrics 10 and 20 days ahead in a time namespace" 864000 1728000
	up=$(cut -d. -f1 /proc/uptime)
	if [ "$up" -gt 150 ]; then
		in_time_ns "pmetrics 60 and 90 s behind in a time namespace" -60 -90
	else
		t_begin "pmetrics behind in a time namespace"
		t_skip "up only $up s: a clock set back 90 s would be before boot"
	fi
else
	t_begin "pmetrics in a time namespace"; t_skip "unshare --time is not allowed here (a kernel without CONFIG_TIME_NS, or util-linux before 2.36)"
fi
