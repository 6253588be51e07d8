#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The resource sampler against real processes of known behaviour, checked
# against /proc and against the known amounts. Runs the sampler through
# build/progs/res_sample (the same life cycle `pmetrics record --resources`
# drives) and through `pmetrics record --resources` itself.
#
# Tolerances, and why:
# - CPU times vs /proc/PID/stat of the same idle process: equal to the
#   clock tick (0.01 s); both come from the same counters through the same
#   cputime_adjust, the 0.01 allows one tick of rounding drift.
# - CPU times vs the amount burnt: user + system vs the 1.0 s burnt
#   +-0.1 s (the sum is the scheduler's exact runtime, split by
#   cputime_adjust; the burner's start-up and its clock reads). Each part
#   alone +-0.2 s: the kernel splits the exact runtime in the ratio of
#   tick samples, which on this VM drift by up to ~0.15 s per second
#   burnt (/proc shows the same split: checked above to 0.01).
# - RSS vs VmRSS of the same idle process: equal to 8 kB (exact counters
#   on both sides; the percent column carries ~16 significant digits).
source "$ROOT/tests/integration/lib.sh"

SAMPLE="$PROGS/res_sample"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$T_TMP"; }
trap cleanup EXIT

# wait_for FILE TEXT: until FILE holds TEXT (20 s at most).
wait_for() {
	for _ in $(seq 200); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
	return 1
}
# field FILE COMMAND N: column N of the last context-layout row of COMMAND.
field() { awk -F, -v c="$2" -v n="$3" '$2 == c { v = $n } END { print v }' "$1"; }
# near A B TOL: |A - B| <= TOL
near() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && b != "" && d <= t + 1e-9) }'; }
stat_field() { sed 's/.*) //' "/proc/$1/stat" | awk -v n="$2" '{ print $(n - 2) }'; }
clk_tck=$(getconf CLK_TCK)
mem_total_kb=$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)
btime=$(awk '/^btime/ { print $2 }' /proc/stat)

if [ ! -x "$SAMPLE" ]; then
	t_begin resources_driver; t_skip "build/progs/res_sample not built (make check builds it)"
	exit 0
fi
t_begin resources_load; need_root || exit 0

# Command lines unique to this run ($$), so another run of this test on
# the same machine never adds rows to the exact counts below. (res_burn
# and res_touch ignore the extra argument.)
SL="sleep 301.$$"
BURN="$PROGS/res_burn 600 400 $$"

# ---- CPU burner: user and system time -----------------------------------
out=$(fresh_dir)
"$PROGS/res_burn" 600 400 $$ >"$T_TMP/burn.out" & burn=$!; PIDS+=("$burn")
wait_for "$T_TMP/burn.out" done
before=$(now_ns)
"$SAMPLE" --dir "$out" --polls 1 --process-filter "$BURN" 2>"$T_TMP/err"
after=$(now_ns)
cmd="$BURN"
u=$(field "$out/system_resource_data" "$cmd" 4); s=$(field "$out/system_resource_data" "$cmd" 5)
pu=$(awk -v t="$(stat_field "$burn" 14)" -v h="$clk_tck" 'BEGIN { print t / h }')
ps=$(awk -v t="$(stat_field "$burn" 15)" -v h="$clk_tck" 'BEGIN { print t / h }')

t_begin resources_load
if [ -s "$out/system_resource_data" ]; then t_pass; else t_fail "no rows: $(head -c 300 "$T_TMP/err")"; fi
t_begin cpu_user_matches_proc
if near "$u" "$pu" 0.01; then t_pass; else t_fail "user $u vs /proc $pu"; fi
t_begin cpu_system_matches_proc
if near "$s" "$ps" 0.01; then t_pass; else t_fail "system $s vs /proc $ps"; fi
t_begin cpu_total_matches_burnt_1s
if near "$(awk -v u="$u" -v s="$s" 'BEGIN { print u + s }')" 1.0 0.1; then t_pass; else t_fail "user $u + system $s, burnt 1.0"; fi
t_begin cpu_user_matches_burnt_600ms
if near "$u" 0.6 0.2; then t_pass; else t_fail "user $u, burnt 0.6"; fi
t_begin cpu_system_matches_burnt_400ms
if near "$s" 0.4 0.2; then t_pass; else t_fail "system $s, burnt 0.4"; fi
t_begin running_since_matches_proc
want=$(awk -v t="$(stat_field "$burn" 22)" -v h="$clk_tck" -v b="$btime" 'BEGIN { printf "%.2f", t / h + b }')
got=$(field "$out/system_resource_data" "$cmd" 3)
if near "$got" "$want" 0.006; then t_pass; else t_fail "running_since $got vs /proc $want"; fi
t_begin query_time_is_wall_clock_ns
q=$(field "$out/system_resource_data" "$cmd" 1)
if [ -n "$q" ] && [ "$q" -ge "$before" ] && [ "$q" -le "$after" ]; then t_pass; else t_fail "query_time $q outside [$before, $after]"; fi
t_begin header_file_is_one_line_without_newline
if [ "$(cat "$out/system_resource_data_headers")" = "query_time,command,running_since,user_cpu_time,system_cpu_time,memory_percent" ] &&
	[ "$(wc -l <"$out/system_resource_data_headers")" -eq 0 ]; then t_pass; else t_fail "$(cat "$out/system_resource_data_headers")"; fi
t_begin only_matching_processes
n=$(wc -l <"$out/system_resource_data")
if [ "$n" -eq 1 ]; then t_pass; else t_fail "$n rows for one matching process"; fi

# ---- memory toucher: RSS ---------------------------------------------------
out=$(fresh_dir)
"$PROGS/res_touch" 64 $$ >"$T_TMP/touch.out" & touch_pid=$!; PIDS+=("$touch_pid")
wait_for "$T_TMP/touch.out" done
"$SAMPLE" --dir "$out" --polls 1 --process-filter "*/res_touch 64 $$" 2>/dev/null
cmd="$PROGS/res_touch 64 $$"
rss_kb=$(awk '/^VmRSS:/ { print $2 }' "/proc/$touch_pid/status")
pct=$(field "$out/system_resource_data" "$cmd" 6)
got_kb=$(awk -v p="$pct" -v t="$mem_total_kb" 'BEGIN { printf "%.1f", p * t / 100 }')
t_begin rss_matches_vmrss
if near "$got_kb" "$rss_kb" 8; then t_pass; else t_fail "rss ${got_kb} kB vs VmRSS ${rss_kb} kB"; fi
t_begin rss_holds_the_64mib_touched
if awk -v k="$got_kb" 'BEGIN { exit !(k >= 65536 && k <= 65536 + 8192) }'; then t_pass; else t_fail "rss ${got_kb} kB for 64 MiB touched"; fi
t_begin memory_series_header
if [ "$(cat "$out/memory_series_data_headers")" = "query_time,system_uptime_hrs,system_avail_mem_mb,command,mem_rss_mb" ]; then t_pass; else t_fail "$(cat "$out/memory_series_data_headers")"; fi
t_begin memory_series_system_row
sys_row=$(awk -F, '$4 == "" && $5 == ""' "$out/memory_series_data")
up=$(awk '{ print $1 / 3600 }' /proc/uptime)
avail=$(awk '/^MemAvailable:/ { print $2 / 1024 }' /proc/meminfo)
if [ "$(echo "$sys_row" | wc -l)" -eq 1 ] && near "$(echo "$sys_row" | cut -d, -f2)" "$up" 0.01 &&
	near "$(echo "$sys_row" | cut -d, -f3)" "$avail" 256; then t_pass; else t_fail "system row '$sys_row' (uptime $up h, avail $avail MiB)"; fi
t_begin memory_series_process_rss_mib
mib=$(awk -F, -v c="$cmd" '$4 == c { print $5 }' "$out/memory_series_data")
if near "$mib" "$(awk -v k="$rss_kb" 'BEGIN { print k / 1024 }')" 0.01; then t_pass; else t_fail "mem_rss_mb $mib vs VmRSS $rss_kb kB"; fi

# ---- sleeper: idle, still listed ------------------------------------------------
# A sleeping process has no CPU events, but its row is still written, with
# the CPU time its start-up took, as /proc counts it (0.02 s seen on a
# loaded VM).
out=$(fresh_dir)
$SL & sl=$!; PIDS+=("$sl")
sleep 0.2
"$SAMPLE" --dir "$out" --polls 1 --process-filter "$SL" 2>/dev/null
t_begin sleeper_listed_with_its_start_up_cpu
u=$(field "$out/system_resource_data" "$SL" 4); s=$(field "$out/system_resource_data" "$SL" 5)
sl_u=$(awk -v t="$(stat_field "$sl" 14)" -v h="$clk_tck" 'BEGIN { print t / h }')
sl_s=$(awk -v t="$(stat_field "$sl" 15)" -v h="$clk_tck" 'BEGIN { print t / h }')
if [ "$(grep -c "$SL" "$out/system_resource_data")" -eq 1 ] && near "$u" "$sl_u" 0.01 && near "$s" "$sl_s" 0.01; then
	t_pass
else
	t_fail "sleep: user '$u' system '$s', /proc $sl_u and $sl_s"
fi

# ---- exec: the same pid with a new command line ----------------------------------
out=$(fresh_dir)
sh -c "sleep 1.5; exec sleep 302.$$" & ex=$!; PIDS+=("$ex")
sleep 0.2
"$SAMPLE" --dir "$out" --polls 2 --interval 2 --process-filter "sh -c sleep 1.5; exec sleep 302.$$" --process-filter "sleep 302.$$" 2>/dev/null
t_begin exec_starts_a_new_command_line
first=$(sed -n 1p "$out/system_resource_data" | cut -d, -f2); second=$(sed -n 2p "$out/system_resource_data" | cut -d, -f2)
if [ "$first" = "sh -c sleep 1.5; exec sleep 302.$$" ] && [ "$second" = "sleep 302.$$" ]; then t_pass; else t_fail "rows: '$first' then '$second'"; fi

# ---- --pid: the target and its children ---------------------------------------------
out=$(fresh_dir)
sh -c "\"$PROGS/res_touch\" 1 & \"$PROGS/res_touch\" 2 & wait" >/dev/null & tree=$!; PIDS+=("$tree")
sleep 0.5
PIDS+=($(pgrep -P "$tree")) # the children outlive a killed shell
"$SAMPLE" --dir "$out" --polls 1 --pid "$tree" 2>/dev/null
t_begin pid_with_children
n=$(wc -l <"$out/system_resource_data")
if [ "$n" -eq 3 ]; then t_pass; else t_fail "$n rows for a shell and its 2 children"; fi
out=$(fresh_dir)
"$SAMPLE" --dir "$out" --polls 1 --pid "$tree" --no-children 2>/dev/null
t_begin pid_without_children
n=$(wc -l <"$out/system_resource_data")
if [ "$n" -eq 1 ]; then t_pass; else t_fail "$n rows for the target alone"; fi
out=$(fresh_dir)
"$SAMPLE" --dir "$out" --polls 1 --pid "$tree" --process-filter '*res_touch 2' 2>/dev/null
t_begin pid_narrowed_by_filter
if [ "$(wc -l <"$out/system_resource_data")" -eq 1 ] && grep -q 'res_touch 2,' "$out/system_resource_data"; then t_pass; else t_fail "$(cat "$out/system_resource_data")"; fi

# ---- activity layout ------------------------------------------------------------------
out=$(fresh_dir)
"$SAMPLE" --dir "$out" --polls 1 --layout activity --process-filter "$SL" 2>/dev/null
t_begin activity_layout_quotes_and_crlf
# (a sleeper may carry one 0.01 s tick from its exec)
if grep -q $'^"[0-9]*","'"$SL"$'","[0-9.]*","0\\.0[0-9]\\?","0\\.0[0-9]\\?","[0-9.e-]*"\r$' "$out/system_resource_data"; then t_pass; else t_fail "$(head -c 200 "$out/system_resource_data" | od -c | head -5)"; fi

# ---- churn: processes start, exec and exit during sampling ---------------------------------
out=$(fresh_dir)
"$PROGS/res_churn" 4 >"$T_TMP/churn.out" & churn=$!; PIDS+=("$churn")
# A command line holding a line break, a comma and quotes, as a `bash -c`
# script run by a CI runner does: the row must stay one CSV record.
odd_script=$'sleep 60; true # first line\n# second, with "quotes"'
bash -c "$odd_script" & odd=$!; PIDS+=("$odd")
"$SAMPLE" --dir "$out" --polls 4 --interval 1 --process-filter '*' 2>"$T_TMP/churn.err"
rc=$?
t_begin churn_never_stops_the_sampler
polls=$(sed -n 's/^resources: \([0-9]*\) polls.*/\1/p' "$T_TMP/churn.err")
if [ $rc -eq 0 ] && [ "$polls" = 4 ]; then t_pass; else t_fail "rc $rc, polls '$polls': $(head -c 300 "$T_TMP/churn.err")"; fi
t_begin churn_rows_are_whole
if ! command -v python3 >/dev/null; then
	t_skip "python3 needed to read the CSV"
else
	read -r bad odd_rows < <(python3 "$ROOT/tests/integration/resource_csv_check.py" \
		"$out/system_resource_data" "bash -c $odd_script")
	# The odd command line is sampled at each of the 4 polls.
	if [ "$bad" -eq 0 ] && [ "$odd_rows" -eq 4 ]; then t_pass
	else t_fail "$bad rows not whole, $odd_rows rows of the multi-line command (want 4)"; fi
fi
pkill -P "$odd" sleep 2>/dev/null
wait "$churn" "$odd" 2>/dev/null

# ---- bad input ------------------------------------------------------------------------------
# bad_env NAME VAR VALUE TEXT: the sampler driver refuses the variable
# with exit 2 and one "pmetrics: ...TEXT..." line, creating nothing.
bad_env() {
	expect_error "$1" 2 "^pmetrics: .*$4" -x "$T_TMP/never" -e "OT_SYSTEM_RESOURCE_TRACKER_$2=$3" \
		-- "$SAMPLE" --dir "$T_TMP/never" --polls 1
}
bad_env env_interval_below_1s REFRESH_INTERVAL 0.5 "at least 1.0"
bad_env env_interval_not_a_number REFRESH_INTERVAL abc "must be a number"
bad_env env_relative_storage_dir STORAGE_DIR data/pm "absolute path"
bad_env env_enabled_not_bool ENABLED yes "true or false"
bad_env env_empty_filters PROCESS_FILTERS " , " "comma-separated"
bad_env env_bad_log_level LOGGING_LEVEL loud "LOGGING_LEVEL"
expect_error flag_interval_below_1s 2 "^pmetrics: --interval must be at least 1\.0" \
	-- "$SAMPLE" --dir "$T_TMP/never" --interval 0.2
expect_error flag_empty_filter 2 "non-empty glob" -- "$SAMPLE" --dir "$T_TMP/never" --process-filter ''

# ---- through pmetrics record --resources ------------------------------------------------------
# res_rows FILE COMMAND: number of rows of COMMAND in a context-layout file.
res_rows() { awk -F, -v c="$2" '$2 == c { n++ } END { print n + 0 }' "$1" 2>/dev/null; }
# rec ARGS...: pmetrics record with stderr in $T_TMP/rec.err; sets rc.
rec() { timeout 30 "$PMETRICS" record "$@" >/dev/null 2>"$T_TMP/rec.err"; rc=$?; }

t_begin record_whole_system_by_filter
out=$(fresh_dir)
rec --resources --interval 1 --duration 2500ms --process-filter "$SL" -o "$out"
n=$(res_rows "$out/system_resource_data" "$SL")
others=$(awk -F, -v c="$SL" '$2 != c' "$out/system_resource_data" 2>/dev/null | wc -l)
series=$(awk -F, -v c="$SL" '$4 == c' "$out/memory_series_data" 2>/dev/null | wc -l)
if [ $rc -eq 0 ] && [ "$n" -ge 2 ] && [ "$others" -eq 0 ] && [ "$series" -eq "$n" ]; then t_pass
else t_fail "rc $rc, $n rows, $others others, $series series rows: $(head -c 300 "$T_TMP/rec.err")"; fi

# Section 3 of the issue: pmetrics analyze reads the capture's memory
# series; its available-memory key has one sample per poll.
t_begin memory_series_feeds_analyze
polls=$(awk -F, '$4 == "" && $5 == ""' "$out/memory_series_data" 2>/dev/null | wc -l)
json=$("$PMETRICS" analyze "$out" 2>&1); arc=$?
if [ $arc -eq 0 ] && [ "$polls" -ge 2 ] && grep -q "\"sampleSize\": $polls," <<<"$json"; then t_pass
else t_fail "rc $arc, $polls polls: $(head -c 300 <<<"$json")"; fi

# the directory and its series file name one input: read once
t_begin memory_series_given_twice_is_read_once
json=$("$PMETRICS" analyze "$out" "$out/memory_series_data" 2>"$T_TMP/twice.err"); arc=$?
if [ $arc -eq 0 ] && grep -q "\"sampleSize\": $polls," <<<"$json" && grep -q "again: read once" "$T_TMP/twice.err"
then t_pass; else t_fail "rc $arc: $(cat "$T_TMP/twice.err"; head -c 300 <<<"$json")"; fi

# The burner is still running: its counters are still, so they must
# equal /proc's exactly, up to one tick of rounding (0.01 s).
t_begin record_cpu_matches_proc
out=$(fresh_dir)
rec --resources --duration 500ms --process-filter "$BURN" -o "$out"
cmd="$BURN"
u=$(field "$out/system_resource_data" "$cmd" 4); s=$(field "$out/system_resource_data" "$cmd" 5)
if near "$u" "$pu" 0.01 && near "$s" "$ps" 0.01; then t_pass; else t_fail "user $u system $s vs /proc $pu $ps"; fi

# With a 60 s interval, a row written at all proves the first poll is
# immediate; SIGTERM then ends it cleanly.
t_begin record_first_poll_at_once_then_sigterm
out=$(fresh_dir)
"$PMETRICS" record --resources --interval 60 --process-filter "$SL" -o "$out" 2>"$T_TMP/rec.err" &
rp=$!
wait_for "$out/system_resource_data" "$SL"
kill -TERM "$rp"; wait "$rp"; rc=$?
n=$(res_rows "$out/system_resource_data" "$SL")
if [ $rc -eq 0 ] && [ "$n" -eq 1 ] && grep -q '^pmetrics: terminated' "$T_TMP/rec.err"; then t_pass
else t_fail "rc $rc, $n rows: $(head -c 300 "$T_TMP/rec.err")"; fi

t_begin record_launched_command_and_children
out=$(fresh_dir)
rec --resources --interval 1 -o "$out" -- sh -c "\"$PROGS/res_touch\" 3 >/dev/null & sleep 1.5; kill \$!"
t=$(res_rows "$out/system_resource_data" "$PROGS/res_touch 3")
sh_rows=$(grep -c '^[0-9]*,"\?sh -c ' "$out/system_resource_data") # quoted: it holds '"' 
unrelated=$(res_rows "$out/system_resource_data" "$SL")
if [ $rc -eq 0 ] && [ "$t" -ge 1 ] && [ "$sh_rows" -ge 1 ] && [ "$unrelated" -eq 0 ] &&
	grep -q '^pmetrics: target exited' "$T_TMP/rec.err"; then t_pass
else t_fail "rc $rc, child $t rows, shell $sh_rows, unrelated $unrelated: $(head -c 300 "$T_TMP/rec.err")"; fi

t_begin record_pid_target_only
out=$(fresh_dir)
rec --resources --duration 1500ms --pid "$sl" -o "$out"
n=$(wc -l <"$out/system_resource_data")
if [ $rc -eq 0 ] && [ "$n" -ge 1 ] && [ "$(res_rows "$out/system_resource_data" "$SL")" -eq "$n" ]; then t_pass
else t_fail "rc $rc, $n rows: $(head -c 300 "$out/system_resource_data")"; fi

t_begin record_probes_and_resources_together
out=$(fresh_dir)
rec --resources --interval 1 --probe SLEEP=:pm_sleep_ms -o "$out" -- "$PROGS/spanprog" sleep 300 5
spans=$(rows "$out/robot_context_data" SLEEP)
res=$(res_rows "$out/system_resource_data" "$PROGS/spanprog sleep 300 5")
if [ $rc -eq 0 ] && [ "$spans" -eq 5 ] && [ "$res" -ge 1 ] &&
	[ "$(awk -F, 'NF != 3' "$out/robot_context_data" | wc -l)" -eq 0 ]; then t_pass
else t_fail "rc $rc, $spans spans, $res resource rows: $(head -c 300 "$T_TMP/rec.err")"; fi

# Upstream's variables, with --resources forcing ENABLED: the storage
# dir when -o is absent, the filters and the interval (60 s: one poll).
t_begin record_reads_the_tracker_environment
out=$(fresh_dir)
OT_SYSTEM_RESOURCE_TRACKER_ENABLED=false OT_SYSTEM_RESOURCE_TRACKER_STORAGE_DIR="$out" \
	OT_SYSTEM_RESOURCE_TRACKER_PROCESS_FILTERS=" nomatch* , $SL ," \
	OT_SYSTEM_RESOURCE_TRACKER_REFRESH_INTERVAL=60 rec --resources --duration 1500ms
if [ $rc -eq 0 ] && [ "$(wc -l <"$out/system_resource_data")" -eq 1 ] &&
	[ "$(res_rows "$out/system_resource_data" "$SL")" -eq 1 ]; then t_pass
else t_fail "rc $rc: $(head -c 300 "$out/system_resource_data" 2>&1) $(head -c 300 "$T_TMP/rec.err")"; fi

t_begin record_flags_override_the_environment
out=$(fresh_dir)
OT_SYSTEM_RESOURCE_TRACKER_PROCESS_FILTERS='nomatch*' OT_SYSTEM_RESOURCE_TRACKER_REFRESH_INTERVAL=60 \
	rec --resources --interval 1 --duration 1500ms --process-filter "$SL" -o "$out"
n=$(res_rows "$out/system_resource_data" "$SL")
if [ $rc -eq 0 ] && [ "$n" -ge 2 ]; then t_pass; else t_fail "rc $rc, $n rows"; fi

t_begin record_names_filters_that_match_nothing
rec --resources --interval 1 --duration 1500ms --process-filter 'nomatch*' --process-filter 'nor*this' -o "$(fresh_dir)"
if [ $rc -eq 0 ] && grep -q "^resources: none of the [0-9]* processes seen matched the filters (nomatch\*,nor\*this): give --process-filter GLOB" "$T_TMP/rec.err"
then t_pass; else t_fail "rc $rc: $(cat "$T_TMP/rec.err")"; fi

# notify_listen SOCK OUT: plays systemd's notify socket at SOCK; the first
# datagram goes to OUT. Sets np to the listener's pid.
notify_listen() {
	rm -f "$1"
	python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.bind(sys.argv[1]); s.settimeout(30)
print(s.recv(256).decode(), flush=True)' "$1" >"$2" & np=$!; PIDS+=("$np")
	for _ in $(seq 100); do [ -S "$1" ] && break; sleep 0.05; done
}

t_begin record_notifies_systemd_ready
if ! command -v python3 >/dev/null; then
	t_skip "python3 not installed (plays systemd's notify socket)"
else
	notify_listen "$T_TMP/notify.sock" "$T_TMP/notify.out"
	NOTIFY_SOCKET="$T_TMP/notify.sock" rec --resources --duration 1s --process-filter "$SL" -o "$(fresh_dir)"
	wait "$np"
	if [ $rc -eq 0 ] && [ "$(cat "$T_TMP/notify.out")" = "READY=1" ]; then t_pass
	else t_fail "rc $rc, notify got '$(cat "$T_TMP/notify.out")'"; fi
fi

t_begin record_churn_never_stops_it
out=$(fresh_dir)
"$PROGS/res_churn" 3 >/dev/null & churn=$!; PIDS+=("$churn")
rec --resources --interval 1 --duration 3s --process-filter '*' -o "$out"
polls=$(sed -n 's/^resources: \([0-9]*\) polls.*/\1/p' "$T_TMP/rec.err")
if [ $rc -eq 0 ] && [ "${polls:-0}" -ge 3 ]; then t_pass; else t_fail "rc $rc, polls '$polls': $(head -c 300 "$T_TMP/rec.err")"; fi
wait "$churn" 2>/dev/null

# bad_rec NAME WANT [VAR=VALUE...] -- ARGS...: exit 2, one line, nothing made.
bad_rec() {
	local name="$1" want="$2" envs=()
	shift 2
	while [ "$1" != "--" ]; do envs+=(-e "$1"); shift; done
	shift
	expect_error "$name" 2 "^pmetrics record: .*$want" -x "$T_TMP/never" ${envs[@]+"${envs[@]}"} \
		-- "$PMETRICS" record "$@"
}
never="$T_TMP/never"
bad_rec record_interval_below_1s "at least 1.0" -- --resources --interval 0.5 -o "$never"
bad_rec record_interval_not_a_number "must be a number" -- --resources --interval 1x -o "$never"
bad_rec record_empty_filter "non-empty glob" -- --resources --process-filter '' -o "$never"
bad_rec record_filter_without_resources "need --resources" -- --process-filter 'x*' --pid 1 -P A=:f -o "$never"
bad_rec record_relative_output_dir "absolute path" -- --resources -o rel/dir
bad_rec record_env_relative_storage_dir "absolute path" OT_SYSTEM_RESOURCE_TRACKER_STORAGE_DIR=data/pm -- --resources
bad_rec record_env_enabled_not_bool "true or false" OT_SYSTEM_RESOURCE_TRACKER_ENABLED=yes -- --resources -o "$never"
bad_rec record_env_interval_below_1s "at least 1.0" OT_SYSTEM_RESOURCE_TRACKER_REFRESH_INTERVAL=0.9 -- --resources -o "$never"
bad_rec record_env_empty_filters "comma-separated" OT_SYSTEM_RESOURCE_TRACKER_PROCESS_FILTERS=', ,' -- --resources -o "$never"
bad_rec record_env_bad_log_level "LOGGING_LEVEL" OT_SYSTEM_RESOURCE_TRACKER_LOGGING_LEVEL=info -- --resources -o "$never"
bad_rec record_probes_need_a_target "no target" -- --resources -P A=:f -o "$never"

# ---- the systemd unit in dist/ ------------------------------------------------------------------
unit="$ROOT/dist/pmetrics-resources.service"
t_begin dist_unit_verifies
if ! command -v systemd-analyze >/dev/null; then
	t_skip "systemd-analyze not installed"
else
	sed "s|/usr/bin/pmetrics|$PMETRICS|" "$unit" >"$T_TMP/pmetrics-resources.service"
	err=$(systemd-analyze verify "$T_TMP/pmetrics-resources.service" 2>&1)
	if [ $? -eq 0 ] && [ -z "$err" ]; then t_pass; else t_fail "$err"; fi
fi

# The unit's on/off switch behaves as the tracker's ENABLED: true in any case.
t_begin dist_unit_condition_follows_enabled
cond=$(sed -n "s/^ExecCondition=\/bin\/sh -c '\(.*\)'$/\1/p" "$unit" | sed 's/\$\$/$/g')
v=OT_SYSTEM_RESOURCE_TRACKER_ENABLED
if [ -n "$cond" ] && env "$v=True" sh -c "$cond" && ! env "$v=false" sh -c "$cond" &&
	! env "$v=yes" sh -c "$cond" && ! env -u "$v" sh -c "$cond"; then t_pass; else t_fail "condition '$cond'"; fi

# ExecStart with the unit's own environment (storage dir and filters
# pointed at this test) runs, notifies READY=1 and writes the rows.
t_begin dist_unit_runs_as_the_tracker
if ! command -v python3 >/dev/null; then
	t_skip "python3 not installed (plays systemd's notify socket)"
else
	out=$(fresh_dir)
	mapfile -t envs < <(sed -n 's/^Environment=//p' "$unit" | sed 's/^"\(.*\)"$/\1/')
	read -r -a cmd <<<"$(sed -n 's/^ExecStart=//p' "$unit")"
	cmd[0]="$PMETRICS"
	notify_listen "$T_TMP/unit.sock" "$T_TMP/unit.out"
	env -i PATH="$PATH" "${envs[@]}" NOTIFY_SOCKET="$T_TMP/unit.sock" \
		OT_SYSTEM_RESOURCE_TRACKER_STORAGE_DIR="$out/" OT_SYSTEM_RESOURCE_TRACKER_PROCESS_FILTERS="$SL" \
		timeout 20 "${cmd[@]}" --duration 1500ms >/dev/null 2>"$T_TMP/unit.err"
	rc=$?
	wait "$np"
	if [ $rc -eq 0 ] && [ "$(cat "$T_TMP/unit.out")" = "READY=1" ] &&
		[ "$(res_rows "$out/system_resource_data" "$SL")" -eq 1 ]; then t_pass
	else t_fail "rc $rc, notify '$(cat "$T_TMP/unit.out")': $(head -c 300 "$T_TMP/unit.err")"; fi
fi

# ---- per-span resource context (--resources with probes) -------------------------------------------
# res_spans calls, once each: a 200 ms sleep, a 200 ms CPU-time spin,
# 64 MiB faulted in and kept, 64 MiB faulted in and unmapped. Tolerances:
# - on-CPU: the scheduler's sum_exec_runtime lags by up to a tick (4 ms at
#   HZ=250) at each end, plus the probes' own traps: spin 200 ms in
#   [190, 220] ms, sleep under 20 ms.
# - on-CPU + run-queue wait + blocked = duration exactly (blocked is the
#   rest, by definition), unless the two counters' update lag (a tick
#   each) makes them overshoot the duration: then blocked is 0 and the
#   overshoot at most 8 ms.
# - sleep: blocked in [190 ms, duration]; at least one voluntary switch.
# - faults: 16384 4-KiB pages (huge pages off for the mapping) -> minor
#   faults in [16384, 16384 + 64] (the call's own stack and libc).
# - RSS: the counters' shared part, within 32 pages per CPU of exact:
#   +-1 MiB on the 64 MiB steps.
t_begin span_context_rows_match_the_span_rows
out=$(fresh_dir)
rec --resources --interval 10 -o "$out" -P SLEEP=:pm_res_sleep -P SPIN=:pm_res_spin \
	-P FAULT=:pm_res_fault -P FAULT_FREE=:pm_res_fault_free -- "$PROGS/res_spans"
ctx="$out/robot_context_resources"
if [ $rc -eq 0 ] && [ "$(wc -l <"$ctx")" -eq 4 ] &&
	[ "$(cut -d, -f1-3 "$ctx")" = "$(cat "$out/robot_context_data")" ] &&
	[ "$(awk -F, 'NF != 3' "$out/robot_context_data" | wc -l)" -eq 0 ]; then t_pass
else t_fail "rc $rc: $(head -c 400 "$ctx" 2>&1) $(head -c 300 "$T_TMP/rec.err")"; fi
t_begin span_context_header
if [ "$(cat "$ctx"_headers)" = "state_name,function_start_time,duration,oncpu_ns,runq_wait_ns,blocked_ns,voluntary_switches,involuntary_switches,migrations,minor_faults,major_faults,rss_start_kb,rss_end_kb,rss_peak_kb" ]; then t_pass
else t_fail "$(cat "$ctx"_headers)"; fi
# col STATE N: column N of STATE's row in the span context file.
col() { awk -F, -v s="$1" -v n="$2" '$1 == s { print $n }' "$ctx"; }
between() { awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v != "" && v >= lo && v <= hi) }'; }
# blocked is the rest of the duration; the two counters may overshoot it
# by their update lag (one tick each, 8 ms), and blocked is then 0.
t_begin span_context_parts_sum_to_duration
bad=$(awk -F, '{ rest = $3 - $4 - $5 } rest >= 0 && $6 != rest || rest < 0 && ($6 != 0 || rest < -8000000)' "$ctx")
if [ -z "$bad" ]; then t_pass; else t_fail "oncpu + runq + blocked != duration: $bad"; fi
t_begin span_context_sleep_is_blocked
if between "$(col SLEEP 4)" 0 20000000 && between "$(col SLEEP 6)" 190000000 "$(col SLEEP 3)" &&
	between "$(col SLEEP 7)" 1 1000; then t_pass
else t_fail "oncpu $(col SLEEP 4) blocked $(col SLEEP 6) of $(col SLEEP 3), nvcsw $(col SLEEP 7)"; fi
t_begin span_context_spin_is_on_cpu
if between "$(col SPIN 4)" 190000000 220000000 && between "$(col SPIN 7)" 0 2; then t_pass
else t_fail "oncpu $(col SPIN 4), voluntary switches $(col SPIN 7)"; fi
t_begin span_context_fault_counts_pages
if between "$(col FAULT 10)" 16384 16448 && between "$(col FAULT_FREE 10)" 16384 16448 &&
	[ "$(col FAULT 11)" -eq 0 ] && between "$(col SLEEP 10)" 0 64; then t_pass
else t_fail "minor faults $(col FAULT 10) / $(col FAULT_FREE 10) / sleep $(col SLEEP 10), major $(col FAULT 11)"; fi
t_begin span_context_rss_kept_64mib
d=$(( $(col FAULT 13) - $(col FAULT 12) )); p=$(( $(col FAULT 14) - $(col FAULT 13) ))
if between "$d" $((65536 - 1024)) $((65536 + 1024)) && between "$p" 0 1024; then t_pass
else t_fail "rss start $(col FAULT 12) end $(col FAULT 13) peak $(col FAULT 14) kB"; fi
t_begin span_context_rss_peak_of_unmapped_64mib
d=$(( $(col FAULT_FREE 13) - $(col FAULT_FREE 12) )); p=$(( $(col FAULT_FREE 14) - $(col FAULT_FREE 12) ))
if between "$d" -1024 1024 && between "$p" $((65536 - 1024)) $((65536 + 1024)); then t_pass
else t_fail "rss start $(col FAULT_FREE 12) end $(col FAULT_FREE 13) peak $(col FAULT_FREE 14) kB"; fi
t_begin span_context_only_with_resources
out=$(fresh_dir)
rec -o "$out" -P SLEEP=:pm_res_sleep -- "$PROGS/res_spans"
if [ $rc -eq 0 ] && [ "$(rows "$out/robot_context_data" SLEEP)" -eq 1 ] && [ ! -e "$out/robot_context_resources" ]; then t_pass
else t_fail "rc $rc: $(ls "$out")"; fi
