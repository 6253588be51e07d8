#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make fuzz: runs each analyze libFuzzer harness for a bounded time on a
# small seed corpus written here, and prints how many inputs ran without a
# crash (an input running over 10 s counts as one: a hang).
# Usage: tests/fuzz/run.sh BUILD_DIR   (FUZZ_SECONDS, default 60)
set -u
build=$1
secs=${FUZZ_SECONDS:-60}
work=$(mktemp -d /tmp/pmetrics-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
status=0

seed_jsonl() {
	local d=$work/corpus_jsonl
	mkdir -p "$d"
	printf '%s\n' '{"event":"resourceMonitorReport","properties":{"appVersion":"8.2.0","appMode":"ODD","systemUptimeHrs":"26.00","systemAvailMemMb":"1043.12","processesDetails":[{"name":"python3 -m uvicorn robot_server","memRssMb":"201.55"},{"name":"nmcli","memRssMb":"3"},{"name":"/opt/opentrons-app/opentrons --type=renderer","memRssMb":140.5}]}}' \
		'{"event":"resourceMonitorReport","properties":{"appVersion":"8.2.0-alpha.1","systemUptimeHrs":3,"systemAvailMemMb":900,"processesDetails":[{"name":"a","memRssMb":"1e3"}]}}' >"$d/two_reports"
	printf '%s\n' '{"properties":{"appVersion":"8.1.0","systemUptimeHrs":"NaN"}}' 'not json' '[1,2]' '123' >"$d/bad_lines"
	gzip -c "$d/two_reports" >"$d/two_reports.gz"
	head -c 60 "$d/two_reports.gz" >"$d/truncated.gz"
}

seed_series() {
	local d=$work/corpus_series
	mkdir -p "$d"
	printf '%s\n' '1718739269730290312,26.5,1043.12,,' '1718739269730290312,,,python3 -m uvicorn robot_server,201.55' \
		'1718739269730290312,27.5,,"/opt/x --a=1,2",10' >"$d/context"
	printf '"query_time","command","mem_rss_mb","system_uptime_hrs","system_avail_mem_mb"\0"1","","","3.25","900.5"\r\n"1","say ""hi""","12.5","3.25",""\r\n' >"$d/activity_with_header"
}

seed_jsonl
seed_series
for t in jsonl series; do
	bin=$build/fuzz/fuzz_$t
	mkdir -p "$work/crash_$t"
	"$bin" -max_total_time="$secs" -timeout=10 -max_len=16384 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$work/crash_$t/" "$work/corpus_$t" >"$work/$t.log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t.log" | tail -1)
	if [ $rc -eq 0 ]; then
		echo "PASS fuzz_$t: ${runs:-?} executions in ${secs} s without a crash"
	else
		mkdir -p "$build/fuzz/crashes"
		cp "$work/crash_$t"/* "$build/fuzz/crashes/" 2>/dev/null
		echo "FAIL fuzz_$t: crashed after ${runs:-?} executions; input kept in $build/fuzz/crashes/"
		grep -m 5 -E 'ERROR|SUMMARY|differs' "$work/$t.log"
		status=1
	fi
done
exit $status
