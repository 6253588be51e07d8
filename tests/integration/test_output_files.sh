#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The output directory and its files as other users and accidents leave
# them (symlinks, FIFOs, torn lines, a second writer, closed stdio, size
# limits), against the real pmetrics: each section below is one
# way a capture could be redirected, blocked, torn or forged.
source "$ROOT/tests/integration/lib.sh"
SP="$PROGS/spanprog"

t_begin output_files; need_root || exit 0

# The attacker: a real unprivileged user, in directories it can write to.
chmod 711 "$T_TMP"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
victim="$T_TMP/victim"
printf 'root-owned, precious\n' >"$victim"
victim_sum=$(sha256sum <"$victim")

# pub MODE: a fresh directory with MODE (1777 like /tmp, 0777 without
# the sticky bit), owned by root.
pub() { local d; d=$(mktemp -d "$T_TMP/pub.XXXXXX"); chmod "$1" "$d"; echo "$d"; }
# $span DIR ARGS...: a short span capture into DIR; $res DIR ARGS...: one
# poll of the resource sampler; $opens NAME DIR: the capture that opens
# NAME. (Scripts, so that expect_error can run them.)
span="$T_TMP/span" res="$T_TMP/res" opens="$T_TMP/opens"
cat >"$span" <<EOF
#!/bin/sh
d="\$1"; shift
exec timeout 30 "$PMETRICS" record -o "\$d" --probe EMPTY=:pm_empty "\$@" -- "$SP" calls 3
EOF
cat >"$res" <<EOF
#!/bin/sh
d="\$1"; shift
exec timeout 30 "$PMETRICS" record --resources --duration 1ms --process-filter 'nomatch*' -o "\$d" "\$@"
EOF
cat >"$opens" <<EOF
#!/bin/sh
case "\$1" in
robot_context_data*) exec "$span" "\$2" ;;
robot_activity_data*) exec "$span" "\$2" --layout activity ;;
robot_context_resources*) exec "$span" "\$2" --resources ;;
*) exec "$res" "\$2" ;;
esac
EOF
chmod +x "$span" "$res" "$opens"
victim_untouched() { [ "$(sha256sum <"$victim")" = "$victim_sum" ]; }

# ---- planted files: refused in one line, never written through -------------
# An unprivileged user plants a symlink (or a FIFO, a directory, a file of
# its own) under each name pmetrics opens, in a directory it can write to.
if ! command -v setpriv >/dev/null; then
	t_begin symlink_attack; t_skip "setpriv (util-linux) not installed"
else
	for mode in 1777 0777; do
		for name in robot_context_data robot_activity_data robot_context_resources \
			system_resource_data memory_series_data; do
			d=$(pub "$mode")
			as_nobody ln -s "$victim" "$d/$name"
			expect_error "$mode dir: a symlink planted as $name is refused" 1 \
				"^pmetrics: refusing to write $d/$name: it is a symlink; remove it or pick another directory with -o DIR$" \
				-- "$opens" "$name" "$d"
		done
		for name in robot_context_data_headers robot_context_data_headers.tmp \
			robot_activity_data_headers robot_context_resources_headers \
			system_resource_data_headers memory_series_data_headers; do
			d=$(pub "$mode")
			as_nobody ln -s "$victim" "$d/$name"
			t_begin "$mode dir: a symlink planted as $name is never written through"
			"$opens" "$name" "$d" >/dev/null 2>"$T_TMP/err"
			rc=$?
			case "$name" in
			*.tmp) kept=$([ -L "$d/$name" ] && echo yes) ;;     # not ours: left alone
			*) kept=$([ -f "$d/$name" ] && [ ! -L "$d/$name" ] && echo yes) ;; # replaced
			esac
			if [ $rc -eq 0 ] && victim_untouched && [ "$kept" = yes ]; then t_pass
			else t_fail "rc $rc, $(ls -l "$d/$name"): $(head -c 300 "$T_TMP/err")"; fi
		done
		t_begin "$mode dir: the root-owned file behind the symlinks is unchanged"
		if victim_untouched; then t_pass; else t_fail "$(head -c 200 "$victim")"; fi
	done

	d=$(pub 1777); as_nobody touch "$d/robot_context_data"
	expect_error "a file of another user is refused" 1 \
		"refusing to write $d/robot_context_data: it is owned by uid 65534, not 0" -- "$span" "$d"
	d=$(pub 1777); as_nobody mkfifo "$d/robot_context_data"
	expect_error "a FIFO is refused without blocking" 1 \
		"refusing to write $d/robot_context_data: it is a FIFO" -- "$span" "$d"
	d=$(pub 1777); as_nobody mkdir "$d/system_resource_data"
	expect_error "a directory is refused" 1 \
		"refusing to write $d/system_resource_data: it is a directory" -- "$res" "$d"
fi

# ---- a planted symlink as the output directory ------------------------------
# Another user plants -o DIR itself (or a directory on the way) as a
# symlink to a directory of root's: pmetrics must not write through it.
# A link only root could make (like /var/run -> /run) is still followed.
if command -v setpriv >/dev/null; then
	victim_dir="$T_TMP/victim-dir"; mkdir -p "$victim_dir"
	for mode in 0777 1777; do
		d=$(pub "$mode")
		as_nobody ln -s "$victim_dir" "$d/pm"
		expect_error "$mode dir: a symlink planted as -o DIR is refused, naming it" 1 \
			"^pmetrics: refusing output directory $d/pm: $d/pm is a symlink in a directory others can write to; remove it or give the real directory with -o DIR$" \
			-- "$res" "$d/pm"
		expect_error "$mode dir: a symlink planted on the way to -o DIR is refused" 1 \
			"^pmetrics: refusing output directory $d/pm/sub: $d/pm is a symlink in a directory others can write to" \
			-- "$span" "$d/pm/sub"
	done
	t_check "the directory behind the planted symlinks is still empty" \
		test -z "$(ls -A "$victim_dir")"
fi
t_begin "a symlink only root could make (like /var/run -> /run) is followed"
own=$(mktemp -d "$T_TMP/own.XXXXXX"); chmod 755 "$own"; mkdir "$T_TMP/real-run"
ln -s "$T_TMP/real-run" "$own/run"
"$res" "$own/run/pm" >/dev/null 2>"$T_TMP/err"; rc=$?
if [ $rc -eq 0 ] && [ -s "$T_TMP/real-run/pm/system_resource_data_headers" ]; then t_pass
else t_fail "rc $rc: $(head -c 300 "$T_TMP/err")"; fi

# What protected_hardlinks keeps users from planting, root could leave.
d=$(pub 1777); ln "$victim" "$d/robot_context_data"
expect_error "a hard link is refused" 1 \
	"refusing to write $d/robot_context_data: it has 2 hard links" -- "$span" "$d"
t_check "the hard-linked file is unchanged" victim_untouched
d=$(pub 1777); mknod "$d/memory_series_data" c 1 3
expect_error "a character device is refused" 1 \
	"refusing to write $d/memory_series_data: it is a character device" -- "$res" "$d"
d=$(pub 1777); ln -s /dev/null "$d/robot_context_data"
expect_error "a symlink to /dev/null is refused" 1 \
	"refusing to write $d/robot_context_data: it is a symlink" -- "$span" "$d"

t_begin "a failed start removes only the files it made"
d=$(fresh_dir); printf 'A,1,2\n' >"$d/system_resource_data"; mkdir "$d/robot_context_resources"
"$span" "$d" --resources >/dev/null 2>"$T_TMP/err"
rc=$?
if [ $rc -eq 1 ] && [ "$(ls "$d" | tr '\n' ' ')" = "robot_context_resources system_resource_data " ] &&
	[ "$(cat "$d/system_resource_data")" = "A,1,2" ]; then t_pass
else t_fail "rc $rc, left: $(ls "$d" | tr '\n' ' '): $(head -c 300 "$T_TMP/err")"; fi

# ---- two instances, one directory -----------------------------------------
t_begin "two instances: the resource sampler and a span capture share a directory"
d=$(fresh_dir)
if ! pm_start -o "$d" --probe SLEEP=:pm_sleep_ms -- "$SP" sleep 300 8; then
	t_fail "the span capture did not start: $(head -c 300 "$PM_ERR")"
else
	timeout 30 "$PMETRICS" record --resources --interval 1 --duration 1500ms \
		--process-filter "$SP sleep 300 8" -o "$d" >/dev/null 2>"$T_TMP/res.err"
	res_rc=$?
	expect_error "two instances: a second writer of the same file is refused, naming the first" 1 \
		"^pmetrics: $d/robot_context_data is being written by another pmetrics \(PID $PM_PID\); stop it, or give this capture another directory with -o DIR$" \
		-- "$span" "$d"
	pm_wait; rc=$?
	t_begin "two instances: both captures are whole, no temporary file is left"
	left=$(ls "$d" | grep -v -e '^robot_context_data' -e '^system_resource_data' -e '^memory_series_data')
	if [ $rc -eq 0 ] && [ $res_rc -eq 0 ] && [ "$(rows "$d/robot_context_data" SLEEP)" -eq 8 ] &&
		[ "$(wc -l <"$d/robot_context_data")" -eq 8 ] && [ "$(wc -l <"$d/system_resource_data")" -ge 1 ] &&
		[ -z "$left" ]; then t_pass
	else t_fail "rc $rc/$res_rc, left '$left': $(head -c 300 "$T_TMP/res.err")"; fi
fi

# ---- field values cannot forge rows --------------------------------------------
# A command line holding a comma, quotes, a CR and a LF reads back, with
# Python's csv module, as one field of one row in both files and layouts.
t_begin "commands with , \" CR LF read back whole with Python's csv"
if ! command -v python3 >/dev/null; then t_skip "python3 needed to read the CSV"; else
	odd=$'sleep 61.'$$$'; true # a,"b"\r\n# c'
	bash -c "$odd" 2>/dev/null & odd_pid=$!
	sleep 0.3
	fails=""
	for layout in context activity; do
		d=$(fresh_dir)
		"$res" "$d" --layout "$layout" --process-filter "bash -c sleep 61.$$*" >/dev/null 2>&1
		out=$(python3 - "$d" "bash -c $odd" <<'EOF'
import csv, sys
d, want = sys.argv[1], sys.argv[2]
def check(name, width, col):
    with open(f"{d}/{name}", newline="") as f:
        rows = list(csv.reader(f))
    proc = [r for r in rows if len(r) == width and r[col]]
    ok = len(rows) >= 1 and all(len(r) == width for r in rows) and [r[col] for r in proc] == [want]
    return "" if ok else f"{name}: {rows!r} "
print(check("system_resource_data", 6, 1) + check("memory_series_data", 5, 3), end="")
EOF
		)
		[ -n "$out" ] && fails+="$layout: $out"
	done
	pkill -P "$odd_pid" sleep; wait "$odd_pid" 2>/dev/null # bash ends with its sleep
	if [ -z "$fails" ]; then t_pass; else t_fail "$(head -c 600 <<<"$fails")"; fi
fi

# ---- a torn last line ------------------------------------------------------
t_begin "a torn last line is ended before new rows, and said once"
d=$(fresh_dir); printf 'EMPTY,1,2\nEMPTY,17187' >"$d/robot_context_data"
"$span" "$d" >/dev/null 2>"$T_TMP/err"
rc=$?
said=$(grep -c "^pmetrics: $d/robot_context_data ended in a torn line" "$T_TMP/err")
if [ $rc -eq 0 ] && [ "$(sed -n 2p "$d/robot_context_data")" = "EMPTY,17187" ] &&
	[ "$(tail -n +3 "$d/robot_context_data" | grep -Ec '^EMPTY,[0-9]{19},[0-9]+$')" -eq 3 ] &&
	[ "$(wc -l <"$d/robot_context_data")" -eq 5 ] && [ "$said" -eq 1 ]; then t_pass
else t_fail "rc $rc, said $said: $(head -c 300 "$d/robot_context_data")"; fi

# ---- times out of range: one line naming the range, before anything starts ----
never="$T_TMP/never"
# bad NAME CODE PATTERN [VAR=VALUE...] -- ARGS...: pmetrics record fails in one line, makes nothing.
bad() {
	local name="$1" code="$2" want="$3" envs=()
	shift 3
	while [ "$1" != "--" ]; do envs+=(-e "$1"); shift; done
	shift
	expect_error "$name" "$code" "$want" -x "$never" ${envs[@]+"${envs[@]}"} \
		-- timeout 10 "$PMETRICS" record "$@"
}
range="at least 1\.0 and at most 86400 seconds \(1 day\)"
bad "--interval 2e10 is out of range" 2 "--interval must be $range" -- --resources --interval 2e10 -o "$never"
bad "--interval 1e308 is out of range" 2 "--interval must be $range" -- --resources --interval 1e308 -o "$never"
bad "--interval inf is not a number" 2 "--interval must be a number of seconds from 1\.0 to 86400" -- --resources --interval inf -o "$never"
bad "the environment's interval 2e10 is out of range" 2 "REFRESH_INTERVAL must be $range" \
	OT_SYSTEM_RESOURCE_TRACKER_REFRESH_INTERVAL=2e10 -- --resources -o "$never"
bad "--duration 1e308h is out of range" 2 "bad --duration '1e308h': it must be from 1ms to 8760h \(1 year\)" \
	-- --resources --duration 1e308h -o "$never"
bad "--duration 250us is under 1 ms" 2 "bad --duration '250us': it must be from 1ms to 8760h" \
	-- --resources --duration 250us --process-filter 'nomatch*' -o "$never"

# ---- names with control characters: refused, so no line can be forged ----------
bad "a --process-filter with a line break" 2 "--process-filter 'a\?b' holds a control character" \
	-- --resources --process-filter $'a\nb' -o "$never"
bad "a storage directory with a line break" 2 "STORAGE_DIR must be an absolute path without control characters" \
	"OT_SYSTEM_RESOURCE_TRACKER_STORAGE_DIR=$never/a"$'\n'"b" -- --resources
expect_error "an output directory with a line break" 1 "output directory name .* control character" \
	-x "$never" -- "$PMETRICS" record -o "$never/a"$'\n'"b" --probe EMPTY=:pm_empty -- "$SP" calls 1

# ---- stdout and stderr closed ---------------------------------------------
t_begin "stdout and stderr closed: the data files hold only rows"
d=$(fresh_dir)
timeout 30 "$PMETRICS" record --resources --interval 1 --duration 1500ms --process-filter 'nomatch*' \
	-o "$d" 1>&- 2>&-
rc=$?
"$span" "$d" 1>&- 2>&-
rc2=$?
bad=$(grep -Evc '^[0-9]{19},[0-9.]+,' "$d/memory_series_data")
bad2=$(grep -Evc '^EMPTY,[0-9]{19},[0-9]+$' "$d/robot_context_data")
if [ $rc -eq 0 ] && [ $rc2 -eq 0 ] && [ "$bad" -eq 0 ] && [ "$bad2" -eq 0 ]; then t_pass
else t_fail "rc $rc/$rc2, $bad and $bad2 lines that are not rows: $(grep -v '^[0-9]' "$d/memory_series_data" | head -c 200)"; fi

# ---- a file size limit (SIGXFSZ) ----------------------------------------------
t_begin "a file size limit: exit 1, whole rows only, written and lost rows counted"
d=$(fresh_dir)
(ulimit -f 8; exec "$PMETRICS" record -o "$d" --probe EMPTY=:pm_empty -- "$SP" calls 20000) 2>"$T_TMP/err" >/dev/null
rc=$?
f="$d/robot_context_data"
total=$(wc -l <"$f"); whole=$(grep -Ec '^EMPTY,[0-9]{19},[0-9]+$' "$f")
written=$(sed -n 's/.*: \([0-9]*\) rows\? appended to .*/\1/p' "$T_TMP/err")
lost=$(sed -n 's/.*, \([0-9]*\) (rows not written)$/\1/p' "$T_TMP/err")
if [ $rc -eq 1 ] && grep -q "File too large" "$T_TMP/err" && [ "$total" -gt 10 ] && [ "$total" -eq "$whole" ] &&
	[ "$(tail -c 1 "$f" | od -An -c | tr -d ' ')" = '\n' ] && [ "$written" = "$total" ] && [ "${lost:-0}" -gt 0 ]
then t_pass; else t_fail "rc $rc, $total lines, $whole whole, summary $written written, $lost lost: $(tail -n 3 "$T_TMP/err")"; fi
