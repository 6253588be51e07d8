#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# pmetrics analyze on generated exports whose results are known by hand
# (tests/integration/gen_reports.py: memory linear in uptime).
source "$ROOT/tests/integration/lib.sh"
GEN="$ROOT/tests/integration/gen_reports.py"
PY=$(command -v python3 || true)
if [ -z "$PY" ]; then t_begin analyze; t_skip "python3 needed to generate the inputs"; exit 0; fi

NA='"N/A - Not enough data available."'
# bucket_block INDENT 0-20 20-40 ... 240+ : the averageMemoryMbByUptime object
buckets() {
	local labels=(0-20hrs 20-40hrs 40-60hrs 60-80hrs 80-120hrs 120-240hrs 240+hrs) i=0 v sep
	for v in "$@"; do
		sep=,; [ $i -eq 6 ] && sep=
		[ "$v" = - ] && v=$NA || v="\"$v\""
		printf '        "%s": %s%s\n' "${labels[$i]}" "$v" "$sep"; i=$((i + 1))
	done
}
key() { # NAME r n interpretation buckets... ; LAST=1 for no trailing comma
	local name=$1 r=$2 n=$3 interp=$4; shift 4
	printf '    "%s": {\n      "correlation": "%s",\n      "sampleSize": %s,\n      "interpretation": "%s",\n      "averageMemoryMbByUptime": {\n' "$name" "$r" "$n" "$interp"
	buckets "$@"
	printf '      }\n    }%s\n' "${LAST:+}$([ -z "${LAST:-}" ] && echo ,)"
}
HEADER='ODD Available Memory and Processes with Increasing Memory Trend or Selectively Observed by Version (Rolling 1 Month Analysis Window):'
POS="Strong positive correlation (>0.7)"; NEG="Strong negative correlation (>0.7)"

"$PY" "$GEN" 40 0.5 >"$T_TMP/d.jsonl"
{
	echo "$HEADER"; echo '{'; echo '  "8.2.0": {'
	key robot-server-uvicorn-processes 1.0000 40 "$POS" 109.75 - - - - - -
	key app-renderer-processes -1.0000 40 "$NEG" 48.05 - - - - - -
	LAST=1 key odd-available-memory -1.0000 40 "$NEG" 980.50 - - - - - -
	echo '  },'; echo '  "8.1.0": "N/A - No data available"'; echo '}'
} >"$T_TMP/want"

t_begin "upstream JSON byte for byte: aggregation, dropped names, negative filter, version with no data"
"$PMETRICS" analyze --versions 8.2.0,8.1.0 "$T_TMP/d.jsonl" >"$T_TMP/got" 2>"$T_TMP/err"
if cmp -s "$T_TMP/got" "$T_TMP/want"; then t_pass; else t_fail "$(diff "$T_TMP/want" "$T_TMP/got" | head -10)"; fi

t_begin "gzip input and stdin give the same bytes"
gzip -c "$T_TMP/d.jsonl" >"$T_TMP/d.jsonl.gz"
"$PMETRICS" analyze --versions 8.2.0,8.1.0 "$T_TMP/d.jsonl.gz" >"$T_TMP/gz" 2>/dev/null
"$PMETRICS" analyze --versions 8.2.0,8.1.0 - <"$T_TMP/d.jsonl" >"$T_TMP/stdin" 2>/dev/null
if cmp -s "$T_TMP/gz" "$T_TMP/want" && cmp -s "$T_TMP/stdin" "$T_TMP/want"; then t_pass; else t_fail "differs"; fi

t_begin "gzip: a bad checksum keeps every decoded line; members in a row and zero padding read as gzip does"
"$PY" -c 'import sys; d = open(sys.argv[1], "rb").read(); open(sys.argv[2], "wb").write(d[:-8] + bytes(4) + d[-4:])' \
	"$T_TMP/d.jsonl.gz" "$T_TMP/crc.gz"
"$PMETRICS" analyze --versions 8.2.0,8.1.0 "$T_TMP/crc.gz" >"$T_TMP/crc" 2>"$T_TMP/crc.err"; rc=$?
{ cat "$T_TMP/d.jsonl.gz" "$T_TMP/d.jsonl.gz"; printf '\0\0\0\0'; } >"$T_TMP/two.gz"
cat "$T_TMP/d.jsonl" "$T_TMP/d.jsonl" >"$T_TMP/two.jsonl"
"$PMETRICS" analyze "$T_TMP/two.gz" >"$T_TMP/two.out" 2>"$T_TMP/two.err"
"$PMETRICS" analyze "$T_TMP/two.jsonl" >"$T_TMP/two.want" 2>/dev/null
if [ $rc -eq 0 ] && cmp -s "$T_TMP/crc" "$T_TMP/want" &&
	grep -q "crc.gz: read stopped early (incorrect data check)" "$T_TMP/crc.err" &&
	cmp -s "$T_TMP/two.out" "$T_TMP/two.want" && [ ! -s "$T_TMP/two.err" ]
then t_pass; else t_fail "rc $rc: $(cat "$T_TMP/crc.err" "$T_TMP/two.err" | head -3; diff "$T_TMP/want" "$T_TMP/crc" | head -3)"; fi

# A stream whose last inflate() fills the reader's 1 MiB buffer exactly:
# the end of the member must still be seen as the end of the file.
t_begin "gzip: a file of exactly 1 MiB decoded reads whole, with no error"
"$PY" -c 'import sys
line = open(sys.argv[1]).readline()
body = line * (1048576 // len(line))
open(sys.argv[2], "w").write(body + " " * (1048576 - len(body) - 1) + "\n")' "$T_TMP/d.jsonl" "$T_TMP/mib.jsonl"
gzip -kf "$T_TMP/mib.jsonl"
"$PMETRICS" analyze "$T_TMP/mib.jsonl" >"$T_TMP/mib.want" 2>/dev/null
"$PMETRICS" analyze "$T_TMP/mib.jsonl.gz" >"$T_TMP/mib.got" 2>"$T_TMP/mib.err"; rc=$?
if [ "$(stat -c %s "$T_TMP/mib.jsonl")" -eq 1048576 ] && [ $rc -eq 0 ] && [ ! -s "$T_TMP/mib.err" ] &&
	cmp -s "$T_TMP/mib.want" "$T_TMP/mib.got"
then t_pass; else t_fail "rc $rc: $(cat "$T_TMP/mib.err")"; fi

t_begin "a file given twice (or by another name) is read once, and said"
ln -sf "$T_TMP/d.jsonl" "$T_TMP/d-link.jsonl"
"$PMETRICS" analyze --versions 8.2.0,8.1.0 "$T_TMP/d.jsonl" "$T_TMP/d-link.jsonl" "$T_TMP/d.jsonl" \
	>"$T_TMP/twice" 2>"$T_TMP/twice.err"
if cmp -s "$T_TMP/twice" "$T_TMP/want" && [ "$(grep -c 'again: read once' "$T_TMP/twice.err")" -eq 2 ]
then t_pass; else t_fail "$(cat "$T_TMP/twice.err"; diff "$T_TMP/want" "$T_TMP/twice" | head -5)"; fi

t_begin "standard input given twice is read once, and said"
"$PMETRICS" analyze --versions 8.2.0,8.1.0 - - <"$T_TMP/d.jsonl" >"$T_TMP/stdin2" 2>"$T_TMP/stdin2.err"
if cmp -s "$T_TMP/stdin2" "$T_TMP/want" && grep -qx "pmetrics: analyze: - (standard input) is given twice: read once" "$T_TMP/stdin2.err"
then t_pass; else t_fail "$(cat "$T_TMP/stdin2.err")"; fi

t_begin "n = 29: process keys with fewer than 30 samples are dropped; n = 30 kept"
"$PY" "$GEN" 29 0.5 >"$T_TMP/d29.jsonl"; "$PY" "$GEN" 30 0.5 >"$T_TMP/d30.jsonl"
"$PMETRICS" analyze "$T_TMP/d29.jsonl" >"$T_TMP/o29" 2>/dev/null
"$PMETRICS" analyze "$T_TMP/d30.jsonl" >"$T_TMP/o30" 2>/dev/null
if ! grep -q uvicorn "$T_TMP/o29" && grep -q '"sampleSize": 30' "$T_TMP/o30" && grep -q uvicorn "$T_TMP/o30"
then t_pass; else t_fail "$(head -5 "$T_TMP/o29")"; fi

t_begin "bucket edges: uptime 20.0 counts in 20-40hrs, 240.0 in 240+hrs"
"$PY" "$GEN" 30 0.5 20.0 >"$T_TMP/e20.jsonl"; "$PY" "$GEN" 30 0.5 240.0 >"$T_TMP/e240.jsonl"
"$PMETRICS" analyze "$T_TMP/e20.jsonl" >"$T_TMP/o20" 2>/dev/null
"$PMETRICS" analyze "$T_TMP/e240.jsonl" >"$T_TMP/o240" 2>/dev/null
if grep -A3 '"robot-server' "$T_TMP/o20" >/dev/null && grep -q '"0-20hrs": "N/A' "$T_TMP/o20" &&
	grep -q '"20-40hrs": "127.25"' "$T_TMP/o20" && grep -q '"240+hrs": "347.25"' "$T_TMP/o240" &&
	grep -q '"120-240hrs": "N/A' "$T_TMP/o240"
then t_pass; else t_fail "$(grep -E '20-40|240\+' "$T_TMP/o20" "$T_TMP/o240" | head -4)"; fi

t_begin "malformed lines and a truncated gzip: skipped and counted, the usable data still analysed"
{ head -c 300 "$T_TMP/d.jsonl"; echo; echo 'not json'; echo '{"event":"resourceMonitorReport","properties":{"systemUptimeHrs":"NaNx"}}'; cat "$T_TMP/d.jsonl"; } >"$T_TMP/bad.jsonl"
head -c 2000 "$T_TMP/d.jsonl.gz" >"$T_TMP/trunc.gz"
"$PMETRICS" analyze --versions 8.2.0,8.1.0 "$T_TMP/bad.jsonl" >"$T_TMP/ob" 2>"$T_TMP/eb"; rc1=$?
"$PMETRICS" analyze "$T_TMP/trunc.gz" >/dev/null 2>"$T_TMP/et"; rc2=$?
if [ $rc1 -eq 0 ] && cmp -s "$T_TMP/ob" "$T_TMP/want" && [ -s "$T_TMP/eb" ] && [ $rc2 -le 1 ]; then t_pass
else t_fail "rc $rc1/$rc2: $(cat "$T_TMP/eb" "$T_TMP/et" | head -3)"; fi

t_begin "a binary file (plain or gzip) is refused by name, beside usable input; leading NULs are not binary"
gzip -c "$PMETRICS" >"$T_TMP/bin.gz"
"$PMETRICS" analyze "$PMETRICS" >/dev/null 2>"$T_TMP/bin.err"; rc1=$?
"$PMETRICS" analyze --versions 8.2.0,8.1.0 "$T_TMP/bin.gz" "$T_TMP/d.jsonl" >"$T_TMP/bin.out" 2>"$T_TMP/bin2.err"; rc2=$?
# NULs a crash left at the start of a file are passed over, not binary
{ head -c 4096 /dev/zero; cat "$T_TMP/d.jsonl"; } >"$T_TMP/zeros.jsonl"
"$PMETRICS" analyze --versions 8.2.0,8.1.0 "$T_TMP/zeros.jsonl" >"$T_TMP/zeros.out" 2>/dev/null; rc3=$?
if [ $rc1 -eq 1 ] && grep -q "$PMETRICS holds binary data, not JSON lines nor a memory series: give an export" "$T_TMP/bin.err" &&
	[ $rc2 -eq 0 ] && cmp -s "$T_TMP/bin.out" "$T_TMP/want" && grep -q "bin.gz holds binary data" "$T_TMP/bin2.err" &&
	[ $rc3 -eq 0 ] && cmp -s "$T_TMP/zeros.out" "$T_TMP/want"
then t_pass; else t_fail "rc $rc1/$rc2/$rc3: $(cat "$T_TMP/bin.err" "$T_TMP/bin2.err" | head -4)"; fi

t_begin "nothing usable: exit 1 with a one-line reason"
printf 'garbage\n' >"$T_TMP/g.jsonl"; : >"$T_TMP/empty.jsonl"
"$PMETRICS" analyze "$T_TMP/g.jsonl" >/dev/null 2>"$T_TMP/eg"; rc1=$?
"$PMETRICS" analyze "$T_TMP/empty.jsonl" >/dev/null 2>/dev/null; rc2=$?
if [ $rc1 -eq 1 ] && [ $rc2 -eq 1 ] && grep -q "no usable samples" "$T_TMP/eg"; then t_pass; else t_fail "rc $rc1/$rc2"; fi

t_begin "--format text: slope and 95% CI per key; --extended adds them to the JSON, the rest unchanged"
"$PMETRICS" analyze --format text "$T_TMP/d.jsonl" >"$T_TMP/text" 2>/dev/null
"$PMETRICS" analyze --extended --versions 8.2.0,8.1.0 "$T_TMP/d.jsonl" >"$T_TMP/ext" 2>/dev/null
grep -v -e '"pValue' -e '"slope' -e '^        [0-9-]' -e '^      \]' "$T_TMP/ext" | sed 's/^      },$/      }/' >"$T_TMP/ext_stripped"
if grep -qE '^  robot-server-uvicorn-processes +40 +1\.0000 .*\+1\.0000 \[\+1\.0000, \+1\.0000\]' "$T_TMP/text" &&
	grep -qE '^  odd-available-memory +40 +-1\.0000 .*-2\.0000 \[-2\.0000, -2\.0000\]' "$T_TMP/text" &&
	grep -q '"slopeMbPerHour": -0.2,' "$T_TMP/ext" && cmp -s "$T_TMP/ext_stripped" "$T_TMP/want"
then t_pass; else t_fail "$(head -6 "$T_TMP/text"; diff "$T_TMP/want" "$T_TMP/ext_stripped" | head -5)"; fi

t_begin "--versions naming only versions with no reports: each says no data, exit 0"
"$PMETRICS" analyze --versions 9.9.9,9.9.8 "$T_TMP/d.jsonl" >"$T_TMP/na" 2>"$T_TMP/na.err"; rc=$?
printf '{\n  "9.9.9": "N/A - No data available",\n  "9.9.8": "N/A - No data available"\n}\n' >"$T_TMP/na.want"
if [ $rc -eq 0 ] && tail -n +2 "$T_TMP/na" | cmp -s - "$T_TMP/na.want" &&
	grep -q "of versions not asked for with --versions" "$T_TMP/na.err"
then t_pass; else t_fail "exit $rc; $(cat "$T_TMP/na" "$T_TMP/na.err" | head -c 400)"; fi

t_begin "-v names each skipped line as FILE:LINE"
{ cat "$T_TMP/d.jsonl"; echo 'not json'; } >"$T_TMP/v.jsonl"
"$PMETRICS" analyze -v "$T_TMP/v.jsonl" >/dev/null 2>"$T_TMP/ev"
if grep -qx "pmetrics: analyze: $T_TMP/v.jsonl:41: skipped: malformed (not parseable)" "$T_TMP/ev"; then t_pass
else t_fail "$(head -3 "$T_TMP/ev")"; fi

t_begin "-v on a capture directory names its series file, and one skip reads in the singular"
mkdir -p "$T_TMP/cap"
printf 'query_time,system_uptime_hrs,system_avail_mem_mb,command,mem_rss_mb' >"$T_TMP/cap/memory_series_data_headers"
printf '1796227250085492861,0.5,2000.19,,\n1796227250085492861,x,2000.19,,\n' >"$T_TMP/cap/memory_series_data"
"$PMETRICS" analyze -v "$T_TMP/cap" >/dev/null 2>"$T_TMP/ecap"
"$PMETRICS" analyze "$T_TMP/cap" >/dev/null 2>"$T_TMP/ecap2"
if grep -qx "pmetrics: analyze: $T_TMP/cap/memory_series_data:2: skipped: uptime missing or not a number" "$T_TMP/ecap" &&
	grep -qx "pmetrics: analyze: skipped 1 of 2 lines: 1 uptime missing or not a number" "$T_TMP/ecap" &&
	grep -qx "pmetrics: analyze: skipped 1 of 2 lines: 1 uptime missing or not a number; -v names each line" "$T_TMP/ecap2"
then t_pass; else t_fail "$(cat "$T_TMP/ecap" "$T_TMP/ecap2" | head -4)"; fi

# Bad options: exit 2 with one line naming the fix.
expect_error "bad option: --min-samples 0" 2 'for example --min-samples 30' -- \
	"$PMETRICS" analyze --min-samples 0 "$T_TMP/d.jsonl"
expect_error "bad option: --aggregate without a key" 2 'REGEX=KEY' -- \
	"$PMETRICS" analyze --aggregate 'nokey' "$T_TMP/d.jsonl"
expect_error "bad option: --aggregate into the system's key" 2 'cannot be odd-available-memory' -- \
	"$PMETRICS" analyze --aggregate '^x=odd-available-memory' "$T_TMP/d.jsonl"
expect_error "bad option: --drop with a bad regular expression" 2 "bad regular expression '\\('" -- \
	"$PMETRICS" analyze --drop '(' "$T_TMP/d.jsonl"
expect_error "bad option: no input" 2 'no input given' -- "$PMETRICS" analyze
expect_error "--svg into a missing directory: said before any analysis is printed" 1 \
	'cannot write --svg /nonexistent/t.svg' -- "$PMETRICS" analyze --svg /nonexistent/t.svg "$T_TMP/d.jsonl"

t_begin "options after the inputs are options, even with POSIXLY_CORRECT set"
rm -f "$T_TMP/after.svg"
"$PMETRICS" analyze "$T_TMP/d.jsonl" --versions 8.2.0,8.1.0 --svg "$T_TMP/after.svg" >"$T_TMP/after" 2>"$T_TMP/after.err"; rc1=$?
POSIXLY_CORRECT=1 "$PMETRICS" analyze "$T_TMP/d.jsonl" --versions 8.2.0,8.1.0 >"$T_TMP/posix" 2>/dev/null; rc2=$?
if [ "$rc1$rc2" = 00 ] && cmp -s "$T_TMP/after" "$T_TMP/want" && cmp -s "$T_TMP/posix" "$T_TMP/want" &&
	[ -s "$T_TMP/after.svg" ] && ! grep -q 'cannot open' "$T_TMP/after.err"
then t_pass; else t_fail "rc $rc1$rc2: $(head -3 "$T_TMP/after.err"; diff "$T_TMP/want" "$T_TMP/after" | head -4)"; fi

t_begin "-- ends the options: a file named like one is an input"
cp "$T_TMP/d.jsonl" "$T_TMP/--svg"
(cd "$T_TMP" && "$PMETRICS" analyze --versions 8.2.0,8.1.0 -- --svg) >"$T_TMP/dashdash" 2>/dev/null; rc=$?
if [ $rc -eq 0 ] && cmp -s "$T_TMP/dashdash" "$T_TMP/want"; then t_pass
else t_fail "rc $rc: $(diff "$T_TMP/want" "$T_TMP/dashdash" | head -4)"; fi

expect_error "bad option after an input: one line of ours, not getopt's" 2 \
	"^pmetrics analyze: bad option '--bogus': .*\(see pmetrics analyze --help\)$" -- "$PMETRICS" analyze "$T_TMP/d.jsonl" --bogus
expect_error "an option missing its value at the end" 2 "^pmetrics analyze: bad option '--svg'" -- \
	"$PMETRICS" analyze "$T_TMP/d.jsonl" --svg

t_begin "upstream's query: other events, no appMode, appMode not ODD are left out and counted"
R='"systemUptimeHrs":"1","systemAvailMemMb":"1","processesDetails":[{"name":"python3 -m uvicorn x","memRssMb":"1"}]'
{ cat "$T_TMP/d.jsonl"
  echo "{\"event\":\"appStart\",\"properties\":{\"appVersion\":\"8.2.0\",\"appMode\":\"ODD\",$R}}"
  echo "{\"properties\":{\"appVersion\":\"8.2.0\",\"appMode\":\"ODD\",$R}}"
  echo "{\"event\":\"resourceMonitorReport\",\"properties\":{\"appVersion\":\"8.2.0\",$R}}"
  echo "{\"event\":\"resourceMonitorReport\",\"properties\":{\"appVersion\":\"8.1.0\",\"appMode\":\"OT2\",$R}}"
} >"$T_TMP/q.jsonl"
"$PMETRICS" analyze --versions 8.2.0,8.1.0 "$T_TMP/q.jsonl" >"$T_TMP/q.out" 2>"$T_TMP/q.err"; rc=$?
if [ $rc -eq 0 ] && cmp -s "$T_TMP/q.out" "$T_TMP/want" &&
	grep -qx "pmetrics: analyze: left out 4 lines that upstream's query does not select: 2 other events (not resourceMonitorReport); 1 without appMode; 1 appMode not ODD" "$T_TMP/q.err"
then t_pass; else t_fail "rc $rc: $(cat "$T_TMP/q.err"; diff "$T_TMP/want" "$T_TMP/q.out" | head -4)"; fi

t_begin "-v names an infinite value with its number; the rest of its line is used"
{ cat "$T_TMP/d.jsonl"
  echo '{"event":"resourceMonitorReport","properties":{"appVersion":"8.2.0","appMode":"ODD","systemUptimeHrs":"1","processesDetails":[{"name":"x","memRssMb":"1e999"}]}}'
} >"$T_TMP/inf.jsonl"
"$PMETRICS" analyze -v "$T_TMP/inf.jsonl" >/dev/null 2>"$T_TMP/inf.err"; rc=$?
if [ $rc -eq 0 ] && grep -qx "pmetrics: analyze: $T_TMP/inf.jsonl:41: skipped value: memRssMb \"1e999\" is infinite; the rest of the line is used" "$T_TMP/inf.err" &&
	grep -q "skipped 2 values that were not finite numbers, 1 of them infinite" "$T_TMP/inf.err"
then t_pass; else t_fail "rc $rc: $(cat "$T_TMP/inf.err")"; fi
