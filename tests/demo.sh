#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
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

# The robot's own case: the robot-server preset on a Python program shaped
# like the robot server (tests/progs/py), with the resource context of
# every span. Needs a CPython 3.8-3.13 with symbols (pyenv's, Debian's).
py=""
for v in 3.10 3.11 3.9 3.8 3.12 3.13; do
	py=$(ls -d "$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"/versions/$v.*/bin/python$v 2>/dev/null | head -n 1)
	[ -n "$py" ] && break
	[ -x "/usr/bin/python$v" ] && py=/usr/bin/python$v && break
done
if [ -z "$py" ]; then
	echo; echo "pmetrics demo: no CPython 3.8-3.13 here: skipping the Python part"
	exit 0
fi
pyout=$(mktemp -d /tmp/pmetrics-demo-py.XXXXXX)
echo
echo "pmetrics demo: the robot-server preset on $py tests/progs/py/scenario.py robot, into $pyout"
./pmetrics record -o "$pyout" --preset robot-server --resources --interval 1 \
	-- "$py" tests/progs/py/scenario.py robot
echo
echo "$pyout/robot_context_data:"
cat "$pyout/robot_context_data"
echo "$pyout/robot_context_resources (the same spans' CPU, scheduling and memory):"
cat "$pyout/robot_context_resources_headers"; echo
cat "$pyout/robot_context_resources"
