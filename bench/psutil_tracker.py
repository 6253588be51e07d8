#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The psutil-based system resource tracker, written the way the upstream
service is described (seed 002): list the running processes with psutil,
keep those whose command line matches a filter glob, take each one's CPU
times and memory percent, append the rows to system_resource_data. It is
the baseline of bench/resources.sh, not part of pmetrics.

    psutil_tracker.py DIR INTERVAL GLOB...

Runs until SIGTERM/SIGINT, then prints to stderr:
    psutil: POLLS polls, ROWS rows, CPU_MS ms CPU per poll after the first (first MS ms)
CPU per poll is this process's CPU time (user + system) spent inside the
polls, as pmetrics' summary counts its sampler thread's."""
import csv
import fnmatch
import os
import signal
import sys
import time

import psutil

HEADER = ["query_time", "command", "running_since", "user_cpu_time",
          "system_cpu_time", "memory_percent"]


def command_of(proc):
    return " ".join(arg.strip() for arg in proc.cmdline()).strip()


def snapshot(proc, filters):
    """One row for PROC, or None when it does not match or vanished."""
    try:
        with proc.oneshot():
            command = command_of(proc)
            if not command or not any(fnmatch.fnmatch(command, f) for f in filters):
                return None
            times = proc.cpu_times()
            return [time.time_ns(), command, proc.create_time(), times.user,
                    times.system, proc.memory_percent()]
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None


def poll(filters, writer):
    rows = [row for row in (snapshot(p, filters) for p in psutil.process_iter())
            if row is not None]
    writer.writerows(rows)
    return len(rows)


def main():
    out_dir, interval, filters = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    with open(os.path.join(out_dir, "system_resource_data_headers"), "w") as f:
        f.write(",".join(HEADER))
    polls = rows = 0
    cpu = first = 0.0
    with open(os.path.join(out_dir, "system_resource_data"), "a", newline="") as f:
        writer = csv.writer(f, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
        next_due = time.monotonic()
        while not stop:
            before = time.process_time()
            rows += poll(filters, writer)
            f.flush()
            cpu += time.process_time() - before
            polls += 1
            if polls == 1:
                first = cpu
            next_due += interval
            while not stop and time.monotonic() < next_due:
                time.sleep(min(0.1, max(0.0, next_due - time.monotonic())))
    after_first = (cpu - first) / (polls - 1) if polls > 1 else 0.0
    print(f"psutil: {polls} polls, {rows} rows, {after_first * 1e3:.3f} ms CPU per poll"
          f" after the first (first {first * 1e3:.3f} ms)", file=sys.stderr)


if __name__ == "__main__":
    main()
