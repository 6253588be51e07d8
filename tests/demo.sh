#!/usr/bin/env bash
# make demo: trace the bundled demo program (tests/progs/demo.c, a stand-in
# for the robot server) for a timed capture and show the result.
set -eu
build=$1
out=$(mktemp -d /tmp/pmetrics-demo.XXXXXX)
echo "pmetrics demo: tracing $build/progs/demo for 3 s into $out"
./pmetrics record -o "$out" --duration 3s \
	--probe ANALYZING_PROTOCOL=:analyze_protocol \
	--probe GETTING_CACHED_ANALYSIS=:get_cached_analysis \
	-- "$build/progs/demo" 10
echo
echo "$out/robot_context_data_headers:"
cat "$out/robot_context_data_headers"; echo
echo "$out/robot_context_data (first rows of $(wc -l <"$out/robot_context_data")):"
head -n 8 "$out/robot_context_data"
