#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The cheap part of make test-robot: pmetrics from make robot on Debian's
# arm64 kernel (BTF, uprobe events) under qemu-system-aarch64 -M virt
# -cpu cortex-a53 (TCG), with the guest checks of
# tests/robot/guest/checks.sh. About 2.5 min with a warm cache; the first
# run also downloads the kernel package (60 MB) and busybox-static.
# The kernels built from linux-source-6.1 (the robot's settings, with and
# without dist/kernel/pmetrics.cfg) take a kernel build each and run in
# make test-robot only.
# timeout: 420
source "$ROOT/tests/integration/lib.sh"

PMETRICS_ROBOT_TIMEOUT=300 bash "$ROOT/tests/robot/run.sh" --no-total "$BUILD" debian
t_begin "robot kernels built from linux-source-6.1 (robot, robot + pmetrics.cfg)"
t_skip "a kernel build each (see README); run: make test-robot"
