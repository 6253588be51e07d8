#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# pmetrics report on a capture made here by the capture writer (through
# tests/progs/profile_capture, the calls the sampler makes), with spans
# and resource series written as record writes them. Known counts:
#   60 on-CPU  main;serve;ProtocolAnalyzer.analyze;parse_protocol   inside ANALYZING_PROTOCOL
#    5 off-CPU main;serve;ProtocolAnalyzer.analyze;read_[k];schedule_[k]  inside ANALYZING_PROTOCOL
#   30 on-CPU  main;serve;_get_cached_protocol_analysis;json_load   inside GETTING_CACHED_ANALYSIS
#   10 on-CPU  main;idle_loop;libfoo.so.1+0x1a2b                    outside any span
# 105 samples; 4 lost (ring buffer full).
# timeout: 900
source "$ROOT/tests/integration/lib.sh"
WRITER="$BUILD/progs/profile_capture"
PERIOD=10101010 # 99 Hz

CAP=$(fresh_dir)
A='ProtocolAnalyzer.analyze (robot_server/protocols/protocol_analyzer.py:42)'
G='_get_cached_protocol_analysis (robot_server/protocols/router.py:88)'
T0=1718739269000000000
{
	printf 'stack\tA\tmain\tserve\t%s\tparse_protocol (robot_server/protocols/parse.py:7)\n' "$A"
	printf 'stack\tD\tmain\tserve\t%s\tread_[k]\tschedule_[k]\n' "$A"
	printf 'stack\tG\tmain\tserve\t%s\tjson_load\n' "$G"
	printf 'stack\tI\tmain\tidle_loop\tlibfoo.so.1+0x1a2b\n'
	for i in $(seq 0 59); do
		printf 'sample\t%d\t4242\t4243\ton-cpu\t%d\tANALYZING_PROTOCOL\tA\n' $((T0 + i * PERIOD)) $PERIOD
	done
	for i in $(seq 0 4); do
		printf 'sample\t%d\t4242\t4244\toff-cpu\t2000000\tANALYZING_PROTOCOL\tD\n' $((T0 + 5000000 + i * 100000000))
	done
	echo flush
	for i in $(seq 0 29); do
		printf 'sample\t%d\t4242\t4243\ton-cpu\t%d\tGETTING_CACHED_ANALYSIS\tG\n' $((T0 + (60 + i) * PERIOD)) $PERIOD
	done
	for i in $(seq 0 9); do
		printf 'sample\t%d\t4242\t4245\ton-cpu\t%d\t-\tI\n' $((T0 + i * PERIOD)) $PERIOD
	done
	printf 'lost\tringbuf_full\t4\n'
} >"$T_TMP/script"
# spans and resource series as pmetrics record writes them
printf 'ANALYZING_PROTOCOL,%d,%d\nGETTING_CACHED_ANALYSIS,%d,%d\n' $T0 $((60 * PERIOD)) \
	$((T0 + 60 * PERIOD)) $((30 * PERIOD)) >"$CAP/robot_context_data"
printf 'state_name,function_start_time,duration' >"$CAP/robot_context_data_headers"
printf '%d,0.2548,23636.98,,\n%d,0.2548,,python3 -m robot_server,181.75\n%d,0.2551,23630.10,,\n%d,0.2551,,python3 -m robot_server,190.5\n' \
	$T0 $T0 $((T0 + 1000000000)) $((T0 + 1000000000)) >"$CAP/memory_series_data"
printf '%d,python3 -m robot_server,1718739000,1.5,0.5,2.1\n%d,python3 -m robot_server,1718739000,2.0,0.5,2.2\n' \
	$T0 $((T0 + 1000000000)) >"$CAP/system_resource_data"

t_begin "capture: the writer makes the stacks, samples and losses files"
out=$("$WRITER" "$CAP" <"$T_TMP/script" 2>&1)
if [ "$out" = "stacks 4 samples 105" ] && [ "$(wc -l <"$CAP/profile_samples")" -eq 105 ] &&
	[ "$(cat "$CAP/profile_samples_headers")" = "time_ns,pid,tid,kind,weight_ns,spans,stack_id" ] &&
	grep -q ',ringbuf_full,4$' "$CAP/profile_lost"; then t_pass; else t_fail "$out"; fi

t_begin "report: all four outputs, the summary with the losses"
"$PMETRICS" report "$CAP" >"$T_TMP/report.out" 2>"$T_TMP/report.err"
rc=$?
if [ $rc -eq 0 ] && [ ! -s "$T_TMP/report.err" ] && grep -qx "105 samples (on-cpu 100, off-cpu 5) in 4 stacks" "$T_TMP/report.out" &&
	grep -q '^lost: 4 ringbuf_full' "$T_TMP/report.out" &&
	grep -qxF 'weighed by time: on-cpu 1.010 s, off-cpu 0.010 s (folded counts are microseconds; pmetrics report --weight samples counts samples instead)' "$T_TMP/report.out" &&
	[ -s "$CAP/profile.folded" ] && [ -s "$CAP/profile.pb.gz" ] && [ -s "$CAP/profile.svg" ] && [ -s "$CAP/trace.json" ]
then t_pass; else t_fail "rc $rc: $(cat "$T_TMP/report.out" "$T_TMP/report.err")"; fi

# ---- folded ----------------------------------------------------------------
folded_total() { awk '{ n += $NF } END { print n + 0 }' "$1"; }
# With off-CPU samples kept the widths are time: 60 x 10101.01 us is
# 606060.6 us, rounded per stack.
t_begin "folded: weighed by time when off-CPU samples are kept, microseconds per stack"
if [ "$(cat "$CAP/profile.folded")" = "main;idle_loop;libfoo.so.1+0x1a2b 101010
main;serve;$A;parse_protocol (robot_server/protocols/parse.py:7) 606061
main;serve;$A;read_[k];schedule_[k] 10000
main;serve;$G;json_load 303030" ]
then t_pass; else t_fail "$(cat "$CAP/profile.folded")"; fi

t_begin "folded: --weight samples: totals equal the sample count, one line per stack"
OUT=$(fresh_dir)/count
"$PMETRICS" report "$CAP" --format folded --weight samples -o "$OUT" >"$T_TMP/count.out" 2>&1
total=$(folded_total "$OUT/profile.folded")
if [ "$total" -eq "$(wc -l <"$CAP/profile_samples")" ] && [ "$total" -eq 105 ] &&
	[ "$(wc -l <"$OUT/profile.folded")" -eq 4 ] && ! grep -q weighed "$T_TMP/count.out" &&
	grep -qxF "main;serve;$A;parse_protocol (robot_server/protocols/parse.py:7) 60" "$OUT/profile.folded" &&
	grep -qxF "main;idle_loop;libfoo.so.1+0x1a2b 10" "$OUT/profile.folded"
then t_pass; else t_fail "total $total: $(cat "$T_TMP/count.out" "$OUT/profile.folded")"; fi

t_begin "folded: only on-CPU samples kept: counted, no weight said"
"$PMETRICS" report "$CAP" --format folded --kind on-cpu -o "$OUT" >"$T_TMP/count.out" 2>&1
if [ "$(folded_total "$OUT/profile.folded")" -eq 100 ] && ! grep -q weighed "$T_TMP/count.out"
then t_pass; else t_fail "$(cat "$T_TMP/count.out" "$OUT/profile.folded")"; fi

t_begin "folded: --span ANALYZING_PROTOCOL keeps its 65 samples, -o writes elsewhere"
OUT=$(fresh_dir)/cut
"$PMETRICS" report "$CAP" --format folded --weight=samples --span ANALYZING_PROTOCOL -o "$OUT" >"$T_TMP/cut.out" 2>&1
rc=$?
if [ $rc -eq 0 ] && [ "$(folded_total "$OUT/profile.folded")" -eq 65 ] && [ "$(ls "$OUT")" = profile.folded ] &&
	! grep -q json_load "$OUT/profile.folded"
then t_pass; else t_fail "rc $rc: $(cat "$T_TMP/cut.out" "$OUT/profile.folded" 2>&1)"; fi

t_begin "options also take their value after '=': --format=folded --span=ANALYZING_PROTOCOL"
OUT2=$(fresh_dir)/cut
"$PMETRICS" report "$CAP" --format=folded --weight samples --span=ANALYZING_PROTOCOL -o "$OUT2" >"$T_TMP/cut2.out" 2>&1
rc=$?
if [ $rc -eq 0 ] && cmp -s "$OUT/profile.folded" "$OUT2/profile.folded" && [ "$(ls "$OUT2")" = profile.folded ]
then t_pass; else t_fail "rc $rc: $(cat "$T_TMP/cut2.out")"; fi

t_begin "folded: --kind off-cpu keeps the 5 off-CPU samples, their 10 ms in microseconds"
"$PMETRICS" report "$CAP" --format folded --kind off-cpu -o "$OUT" >/dev/null 2>&1
if [ "$(cat "$OUT/profile.folded")" = "main;serve;$A;read_[k];schedule_[k] 10000" ]; then t_pass
else t_fail "$(cat "$OUT/profile.folded")"; fi

# ---- pprof -----------------------------------------------------------------
t_begin "pprof: go tool pprof -top shows the functions with their counts"
GO=$(command -v go || true)
if [ -z "$GO" ] && bash "$ROOT/.ci/install-deps" golang-go >"$T_TMP/go-install" 2>&1; then
	GO=$(command -v go || true)
fi
if [ -z "$GO" ]; then
	t_skip "go tool pprof needs Debian's golang-go, which could not be installed: $(tail -n 1 "$T_TMP/go-install")"
else
	export HOME=${HOME:-$T_TMP} GOCACHE="$T_TMP/gocache" GOFLAGS=-mod=mod
	pprof() { "$GO" tool pprof "$@" 2>"$T_TMP/pprof.err"; }
	# "flat flat% sum% cum cum% NAME": NAME -> flat
	pprof -top -nodecount=50 -sample_index=samples "$CAP/profile.pb.gz" >"$T_TMP/top"
	flat() { awk -v n="$1" '{ name = $6; for (i = 7; i <= NF; i++) name = name " " $i } name == n { print $1 }' "$2"; }
	got="$(flat parse_protocol "$T_TMP/top") $(flat json_load "$T_TMP/top") $(flat libfoo.so.1+0x1a2b "$T_TMP/top") $(flat schedule "$T_TMP/top")"
	if [ "$got" = "60 30 10 5" ] && grep -q 'Total samples = 105' "$T_TMP/top" &&
		grep -q '^Type: samples' "$T_TMP/top"; then t_pass
	else t_fail "flat counts '$got': $(cat "$T_TMP/top" "$T_TMP/pprof.err")"; fi

	t_begin "pprof: its default view is the report's weight: wall time, or samples"
	pprof -top "$CAP/profile.pb.gz" >"$T_TMP/wall"
	OUTW=$(fresh_dir)
	"$PMETRICS" report "$CAP" --format pprof --weight samples -o "$OUTW" >/dev/null 2>&1
	pprof -top "$OUTW/profile.pb.gz" >"$T_TMP/counted"
	if grep -q '^Type: wall' "$T_TMP/wall" && grep -q 'Total samples = 1.02s' "$T_TMP/wall" &&
		grep -Eq '^ *0\.61s +59\.41% .* parse_protocol$' "$T_TMP/wall" &&
		grep -q '^Type: samples' "$T_TMP/counted" && grep -q 'Total samples = 105' "$T_TMP/counted"
	then t_pass; else t_fail "$(cat "$T_TMP/wall" "$T_TMP/counted" "$T_TMP/pprof.err")"; fi

	t_begin "pprof: CPU and off-CPU time, Python file and line, span labels, the losses"
	pprof -top -sample_index=cpu -unit=ms "$CAP/profile.pb.gz" >"$T_TMP/cpu"
	pprof -top -sample_index=off_cpu -unit=ms "$CAP/profile.pb.gz" >"$T_TMP/off"
	pprof -top -lines "$CAP/profile.pb.gz" >"$T_TMP/lines"
	pprof -top -sample_index=samples -tagfocus=span=GETTING_CACHED_ANALYSIS "$CAP/profile.pb.gz" >"$T_TMP/tag"
	pprof -raw "$CAP/profile.pb.gz" >"$T_TMP/raw"
	# 60 samples of 10.10101 ms = 606.06 ms; 5 x 2 ms off-CPU
	if grep -Eq '^ *606\.06ms .* parse_protocol$' "$T_TMP/cpu" && grep -Eq '^ *10ms .* schedule$' "$T_TMP/off" &&
		grep -q 'parse_protocol robot_server/protocols/parse.py:7$' "$T_TMP/lines" &&
		grep -q 'Showing nodes accounting for 30, 28.57% of 105 total' "$T_TMP/tag" && [ "$(flat json_load "$T_TMP/tag")" = 30 ] &&
		grep -q 'span:\[ANALYZING_PROTOCOL\]' "$T_TMP/raw" && grep -q 'lost: 4 ringbuf_full' "$T_TMP/raw" &&
		grep -q 'Period: 10101010' "$T_TMP/raw"
	then t_pass; else t_fail "$(cat "$T_TMP/cpu" "$T_TMP/off" "$T_TMP/lines" "$T_TMP/tag" "$T_TMP/pprof.err"; head -30 "$T_TMP/raw")"; fi
fi

# ---- trace -----------------------------------------------------------------
t_begin "trace: valid JSON (json.tool) with spans, samples, counters and names"
if ! python3 -m json.tool "$CAP/trace.json" >/dev/null 2>"$T_TMP/json.err"; then
	t_fail "json.tool: $(cat "$T_TMP/json.err")"
elif python3 - "$CAP/trace.json" >"$T_TMP/trace.check" 2>&1 <<'PY'; then t_pass; else t_fail "$(cat "$T_TMP/trace.check")"; fi
import json, sys
doc = json.load(open(sys.argv[1]))
ev = doc["traceEvents"]
problems = []
def need(cond, what):
    if not cond:
        problems.append(what)
for e in ev:
    need(e.get("ph") in ("M", "X", "i", "C"), f"phase {e}")
    need(isinstance(e.get("pid"), int) and isinstance(e.get("tid"), int), f"pid/tid {e}")
    if e["ph"] != "M":
        need(isinstance(e.get("ts"), (int, float)) and e["ts"] >= 0, f"ts {e}")
        need(isinstance(e.get("name"), str) and e["name"], f"name {e}")
by = lambda ph: [e for e in ev if e["ph"] == ph]
X, I, C, M = by("X"), by("i"), by("C"), by("M")
need(len(X) == 2 and {e["name"] for e in X} == {"ANALYZING_PROTOCOL", "GETTING_CACHED_ANALYSIS"}, f"spans {X}")
need(all(isinstance(e.get("dur"), (int, float)) for e in X), "span durations")
need(abs(X[0]["dur"] - 60 * 10101.010) < 0.001, f"span duration {X[0]}")
need(len(I) == 105 and all(e.get("s") == "t" for e in I), f"{len(I)} samples")
need(sum(1 for e in I if e["tid"] == 4243) == 90 and sum(1 for e in I if e["tid"] == 4244) == 5, "samples per thread")
need(sum(1 for e in I if e["name"] == "json_load" and e["args"]["spans"] == "GETTING_CACHED_ANALYSIS") == 30, "json_load samples")
need(sum(1 for e in I if e["cat"] == "off-cpu" and e["args"]["weight_ns"] == 2000000) == 5, "off-cpu samples")
need([e["ts"] for e in I] == sorted(e["ts"] for e in I), "samples in time order")
names = {(e["name"], e["args"]["name"]) for e in M}
need(("thread_name", "tid 4243") in names and ("process_name", "pid 4242") in names, f"names {names}")
need(("thread_name", "ANALYZING_PROTOCOL") in names and ("process_name", "resources") in names, f"names {names}")
mem = [e for e in C if e["name"] == "MemAvailable MiB"]
rss = [e for e in C if e["name"] == "RSS MiB: python3 -m robot_server"]
cpu = [e for e in C if e["name"] == "CPU %: python3 -m robot_server"]
need([e["args"]["MiB"] for e in mem] == [23636.98, 23630.10] and [e["args"]["MiB"] for e in rss] == [181.75, 190.5], f"memory {mem} {rss}")
need(len(cpu) == 1 and abs(cpu[0]["args"]["percent"] - 50.0) < 1e-9, f"cpu {cpu}")
need(doc["otherData"]["wall_clock_ns_at_ts_0"] == "1718739269000000000", f"otherData {doc['otherData']}")
need(doc["otherData"].get("lost_ringbuf_full") == "4", "losses in otherData")
print("\n".join(problems[:5]))
sys.exit(1 if problems else 0)
PY

t_begin "trace: a span time past 2^63 ns is a malformed row, not a slice 584 years long"
BIG=$(fresh_dir)
cp -r "$CAP"/. "$BIG"/
first_start=$(sed -n 2p "$BIG/robot_context_data" | cut -d, -f2)
echo "ANALYZING_PROTOCOL,$first_start,99999999999999999999999" >>"$BIG/robot_context_data"
echo "ANALYZING_PROTOCOL,$first_start,9223372036854775808" >>"$BIG/robot_context_data"
"$PMETRICS" report "$BIG" --format trace >"$T_TMP/big.out" 2>"$T_TMP/big.err"; rc=$?
if [ $rc -eq 0 ] && grep -q "2 malformed rows of its span and resource files left out" "$T_TMP/big.err" &&
	python3 -c 'import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
sys.exit(0 if len([e for e in ev if e["ph"] == "X"]) == 2 and max(e["dur"] for e in ev if e["ph"] == "X") < 1e9 else 1)' "$BIG/trace.json"
then t_pass; else t_fail "exit $rc; $(cat "$T_TMP/big.err" | head -c 400)"; fi

# profile_spans (record writes it with a profile) names each span's thread.
# ANALYZING_PROTOCOL ran on 4243; two coroutine spans on 4246 interleave
# (C2 starts inside C1 and ends after it), so C2 cannot be a slice on
# that thread; GETTING_CACHED_ANALYSIS has no profile_spans row; OTHER
# ran in another process, which --pid 4242 leaves out.
t_begin "trace: spans on the threads that ran them; what cannot nest, or has no thread, on the span tracks"
THR=$(fresh_dir)
cp -r "$CAP"/. "$THR"/
printf 'CORO,%d,10000000\nCORO,%d,10000000\nOTHER,%d,7000\n' $((T0 + 1000000)) $((T0 + 5000000)) \
	$((T0 + 2000000)) >>"$THR/robot_context_data"
printf '%d,4242,4243,ANALYZING_PROTOCOL,%d\n%d,4242,4246,CORO,10000000\n%d,4242,4246,CORO,10000000\n%d,4300,4301,OTHER,7000\n' \
	$T0 $((60 * PERIOD)) $((T0 + 1000000)) $((T0 + 5000000)) $((T0 + 2000000)) >"$THR/profile_spans"
printf 'time_ns,pid,tid,state,duration_ns' >"$THR/profile_spans_headers"
"$PMETRICS" report "$THR" --format trace >"$T_TMP/thr.out" 2>&1 &&
	"$PMETRICS" report "$THR" --format trace --span ANALYZING_PROTOCOL -o "$THR/one" >>"$T_TMP/thr.out" 2>&1 &&
	"$PMETRICS" report "$THR" --format trace --pid 4242 -o "$THR/pid" >>"$T_TMP/thr.out" 2>&1
rc=$?
if [ $rc -eq 0 ] && python3 - "$THR/trace.json" "$THR/one/trace.json" "$THR/pid/trace.json" >"$T_TMP/thr.check" 2>&1 <<'PY'; then t_pass; else t_fail "exit $rc: $(cat "$T_TMP/thr.out" "$T_TMP/thr.check")"; fi
import json, sys
SPANS = 4194305
def slices(path):
    doc = json.load(open(path))
    ev = doc["traceEvents"]
    got = sorted((e["name"], e["pid"], e["tid"] if e["pid"] != SPANS else "track", e["ts"]) for e in ev if e["ph"] == "X")
    names = {(e["name"], e["pid"], e["tid"], e["args"]["name"]) for e in ev if e["ph"] == "M"}
    return got, names, doc["otherData"]["spans"]
got, names, note = slices(sys.argv[1])
want = [("ANALYZING_PROTOCOL", 4242, 4243, 0.0), ("CORO", 4242, 4246, 1000.0),
        ("CORO", SPANS, "track", 5000.0), ("GETTING_CACHED_ANALYSIS", SPANS, "track", 606060.6),
        ("OTHER", 4300, 4301, 2000.0)]
problems = []
if got != want:
    problems.append(f"slices {got}")
if ("thread_name", 4242, 4246, "tid 4246") not in names or \
        ("process_name", SPANS, 0, "spans (one track per state)") not in names or \
        ("process_name", 4300, 0, "pid 4300") not in names:
    problems.append(f"names {sorted(names)}")
if not note.startswith("3 on their threads (from profile_spans); 2 in process 'spans'"):
    problems.append(f"note {note}")
got, names, note = slices(sys.argv[2])
if got != [("ANALYZING_PROTOCOL", 4242, 4243, 0.0)] or any(n[1] == SPANS for n in names) or \
        note != "1 on their threads (from profile_spans)":
    problems.append(f"--span: {got} {note}")
got, names, note = slices(sys.argv[3])
if [g for g in got if g[0] == "OTHER"] or any(n[1] == 4300 for n in names):
    problems.append(f"--pid 4242: {got} {sorted(names)}")
print("\n".join(problems))
sys.exit(1 if problems else 0)
PY

# ---- SVG -------------------------------------------------------------------
t_begin "svg: well-formed, self-contained, the same bytes from the same capture"
cp "$CAP/profile.svg" "$T_TMP/first.svg"
"$PMETRICS" report "$CAP" --format svg >/dev/null 2>&1
if python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "$CAP/profile.svg" 2>"$T_TMP/xml" &&
	cmp -s "$CAP/profile.svg" "$T_TMP/first.svg" && ! grep -Eq '(src|href)="(https?:|//)' "$CAP/profile.svg" &&
	grep -qF '<title>all (1.02 s, 100.00%, off-CPU 10.00 ms)</title>' "$CAP/profile.svg" &&
	grep -qF '<title>idle_loop (101.01 ms, 9.90%)</title>' "$CAP/profile.svg"
then t_pass; else t_fail "$(cat "$T_TMP/xml"; grep -o '<title>[^<]*</title>' "$CAP/profile.svg" | head -3)"; fi

t_begin "svg in Chromium: renders, search, zoom, span filter"
PW="$BUILD/npm-playwright"
if [ ! -x /usr/bin/chromium ]; then
	t_skip "Debian's chromium is not installed"
elif ! command -v npm >/dev/null; then
	t_skip "npm is not installed (playwright-core comes from npm)"
elif [ ! -d "$PW/node_modules/playwright-core" ] &&
	! { mkdir -p "$PW" && timeout 300 npm install --prefix "$PW" --no-audit --no-fund \
		playwright-core@1.65.1 >"$T_TMP/npm.log" 2>&1; }; then
	t_skip "npm could not install playwright-core: $(tail -n 1 "$T_TMP/npm.log")"
else
	# weighed by time (the default here: off-CPU samples are kept), and counted
	SVGN=$(fresh_dir)
	"$PMETRICS" report "$CAP" --format svg --weight samples -o "$SVGN" >/dev/null 2>&1
	svg_bad=
	for weight in time samples; do
		file=$CAP/profile.svg
		[ $weight = samples ] && file=$SVGN/profile.svg
		timeout 120 node "$ROOT/tests/integration/report_svg.js" "$PW" "$file" $weight >"$T_TMP/svg.check" 2>&1
		if grep -q '^not ok' "$T_TMP/svg.check" || [ "$(grep -c '^ok ' "$T_TMP/svg.check")" -ne 7 ]; then
			svg_bad="--weight $weight: $(grep -v '^ok ' "$T_TMP/svg.check" | head -c 1500)"
		fi
		sed "s/^/  $weight: /" "$T_TMP/svg.check"
	done
	if [ -z "$svg_bad" ]; then t_pass; else t_fail "$svg_bad"; fi
fi

# ---- bad input ---------------------------------------------------------------
EMPTY=$(fresh_dir)
expect_error "no samples file: one line, exit 1" 1 "has no profile_samples" -- "$PMETRICS" report "$EMPTY"
: >"$EMPTY/profile_samples"
: >"$EMPTY/profile_stacks"
expect_error "no sample in it: one line, exit 1, nothing written" 1 "holds no sample.*nothing written" \
	-x "$EMPTY/profile.svg" -- "$PMETRICS" report "$EMPTY"
BAD=$(fresh_dir)
cp "$CAP"/profile_stacks "$CAP"/profile_samples "$BAD"/
sed -i '7s/,[0-9a-f]\{16\}$/,0123456789abcdef/' "$BAD/profile_samples"
expect_error "corrupt stack id: one line, exit 1" 1 "profile_samples line 7: stack id 0123456789abcdef is not in profile_stacks" \
	-x "$BAD/profile.folded" -- "$PMETRICS" report "$BAD"
t_begin "a report that fails on its last input leaves an earlier report's files, all four"
HALF=$(fresh_dir)
cp -r "$CAP"/. "$HALF"/
"$PMETRICS" report "$HALF" >/dev/null 2>&1
sums() { (cd "$HALF" && sha256sum profile.folded profile.pb.gz profile.svg trace.json); }
sums >"$T_TMP/sums.before" 2>&1
rm "$HALF/robot_context_data"
ln -s /etc/hostname "$HALF/robot_context_data"
"$PMETRICS" report "$HALF" --span ANALYZING_PROTOCOL >"$T_TMP/half.out" 2>"$T_TMP/half.err"
rc=$?
if [ $rc -eq 1 ] && grep -q "symbolic link" "$T_TMP/half.err" && ! grep -q wrote "$T_TMP/half.out" &&
	[ "$(wc -l <"$T_TMP/sums.before")" -eq 4 ] && sums | cmp -s - "$T_TMP/sums.before"
then t_pass; else t_fail "exit $rc; $(cat "$T_TMP/half.out" "$T_TMP/half.err" | head -c 600)"; fi
t_begin "a report with one output it cannot write (a directory there) replaces none of them"
rm -f "$HALF/robot_context_data"
cp "$CAP/robot_context_data" "$HALF/"
rm "$HALF/profile.pb.gz" && mkdir "$HALF/profile.pb.gz"
"$PMETRICS" report "$HALF" --span ANALYZING_PROTOCOL >"$T_TMP/dir.out" 2>"$T_TMP/dir.err"
rc=$?
sums_but_pprof() { (cd "$HALF" && sha256sum profile.folded profile.svg trace.json); }
if [ $rc -eq 1 ] && [ "$(wc -l <"$T_TMP/dir.err")" -eq 1 ] &&
	grep -q "refusing to write .*profile.pb.gz: it is a directory" "$T_TMP/dir.err" &&
	! grep -q wrote "$T_TMP/dir.out" && ! ls "$HALF" | grep -q '\.tmp-' &&
	sums_but_pprof | cmp -s - <(grep -v profile.pb.gz "$T_TMP/sums.before")
then t_pass; else t_fail "exit $rc; $(cat "$T_TMP/dir.out" "$T_TMP/dir.err" | head -c 600)"; fi
# Two processes: a server (4242) and the analysis process it started
# (4300, which exec'd a shell first): a root frame per process, the
# program by its file name; --pid keeps one, whose stacks are then as
# captured.
TWO=$(fresh_dir)
{
	printf 'stack\tS\tmain\tserve\n'
	printf 'stack\tA\t<module> (run.py:1)\t%s\n' "$A"
	printf 'process\t%d\t4242\t/usr/bin/python3 -m robot_server\n' $T0
	printf 'process\t%d\t4300\t/bin/sh -c analyze\n' $((T0 + 10 * PERIOD))
	printf 'process\t%d\t4300\t/usr/bin/python3 -m robot_server.runs.run_process_entry_point\n' $((T0 + 12 * PERIOD))
	for i in $(seq 0 19); do
		printf 'sample\t%d\t4242\t4242\ton-cpu\t%d\t-\tS\n' $((T0 + i * PERIOD)) $PERIOD
	done
	printf 'sample\t%d\t4300\t4300\ton-cpu\t%d\t-\tS\n' $((T0 + 11 * PERIOD)) $PERIOD
	for i in $(seq 12 19); do
		printf 'sample\t%d\t4300\t4300\ton-cpu\t%d\tANALYZING_PROTOCOL\tA\n' $((T0 + i * PERIOD)) $PERIOD
	done
} | "$WRITER" "$TWO" >/dev/null
t_begin "two processes: a root frame names each, and what each ran"
"$PMETRICS" report "$TWO" --format folded,trace >"$T_TMP/two.out" 2>"$T_TMP/two.err"
want="pid 4242: python3 -m robot_server;main;serve 20
pid 4300: python3 -m robot_server.runs.run_process_entry_point;<module> (run.py:1);$A 8
pid 4300: sh -c analyze;main;serve 1"
if [ "$(cat "$TWO/profile.folded")" = "$want" ] &&
	grep -qx "29 samples (on-cpu 29, off-cpu 0) in 3 stacks under 3 root frames naming processes" "$T_TMP/two.out" &&
	grep -q '"process_name","pid":4300,"tid":0,"args":{"name":"pid 4300: python3 -m robot_server.runs.run_process_entry_point"}' "$TWO/trace.json"
then t_pass; else t_fail "$(cat "$TWO/profile.folded" "$T_TMP/two.err")"; fi
t_begin "--pid 4300 keeps the analysis process's 9 samples, stacks as captured"
"$PMETRICS" report "$TWO" --pid 4300 --format folded -o "$TWO/one" >"$T_TMP/one.out" 2>&1
if [ "$(cat "$TWO/one/profile.folded")" = "<module> (run.py:1);$A 8
main;serve 1" ] && grep -qx "9 samples (on-cpu 9, off-cpu 0) in 2 stacks, --pid 4300" "$T_TMP/one.out"
then t_pass; else t_fail "$(cat "$TWO/one/profile.folded" "$T_TMP/one.out")"; fi
expect_error "--pid of no sample: one line naming the processes there, exit 1" 1 \
	"--pid 4301: no sample in .* is of process 4301 \(processes there: pid 4242: python3 -m robot_server, pid 4300: python3 -m robot_server.runs.run_process_entry_point\)$" \
	-x "$T_TMP/none3" -- "$PMETRICS" report "$TWO" --pid 4301 -o "$T_TMP/none3"
t_begin "an unreadable profile_processes: said in one line, processes named by pid"
NOPROC=$(fresh_dir)
cp "$TWO"/profile_stacks* "$TWO"/profile_samples* "$TWO"/profile_lost* "$NOPROC/"
mkdir "$NOPROC/profile_processes"
"$PMETRICS" report "$NOPROC" --format folded >"$T_TMP/noproc.out" 2>"$T_TMP/noproc.err"
rc=$?
if [ $rc -eq 0 ] && [ "$(wc -l <"$T_TMP/noproc.err")" -eq 1 ] &&
	grep -q "processes named by pid alone: cannot read .*profile_processes" "$T_TMP/noproc.err" &&
	[ "$(cut -d';' -f1 "$NOPROC/profile.folded" | sort -u | tr '\n' ' ')" = "pid 4242 pid 4300 " ]
then t_pass; else t_fail "exit $rc: $(cat "$T_TMP/noproc.err" "$NOPROC/profile.folded" 2>&1 | head -c 400)"; fi
expect_error "bad --pid: exit 2" 2 "bad --pid '42x': give a process ID, e.g. --pid 4242" -- "$PMETRICS" report "$TWO" --pid 42x
expect_error "unknown --weight: exit 2, naming the choices" 2 "unknown --weight 'bytes': use samples or time" -- "$PMETRICS" report "$CAP" --weight bytes
expect_error "unknown --format: exit 2" 2 "pmetrics report: unknown --format 'flame'" -- "$PMETRICS" report "$CAP" --format flame
expect_error "unknown --span: one line naming the states there, exit 1" 1 \
	"--span ANALYSING: no sample in .* was taken inside ANALYSING \(states there: ANALYZING_PROTOCOL, GETTING_CACHED_ANALYSIS\)" \
	-- "$PMETRICS" report "$CAP" --span ANALYSING -o "$T_TMP/none"
expect_error "nothing left after --span and --kind: exit 1" 1 "none of its 105 samples is left after --span GETTING_CACHED_ANALYSIS --kind off-cpu" \
	-x "$T_TMP/none2" -- "$PMETRICS" report "$CAP" --span GETTING_CACHED_ANALYSIS --kind off-cpu -o "$T_TMP/none2"
expect_error "bad --span name: exit 2" 2 "bad --span 'a-b'" -- "$PMETRICS" report "$CAP" --span a-b
expect_error "a capture directory that does not exist: named with the fix, exit 1" 1 \
	"/nonexistent/cap is not a capture directory \(No such file or directory\): give the -o DIR of a pmetrics record --sample" \
	-- "$PMETRICS" report /nonexistent/cap
expect_error "no directory: exit 2" 2 "which capture directory" -- "$PMETRICS" report
expect_error "two directories: both named, exit 2" 2 "one capture directory only: '/tmp/a1' and '/tmp/b2'" \
	-- "$PMETRICS" report /tmp/a1 /tmp/b2
