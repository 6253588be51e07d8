#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A self-contained asyncio workload shaped like the Opentrons robot server
analysing protocols (standard library only; runs on CPython 3.8-3.13).

The two functions pmetrics' robot-server preset times are real coroutine
functions in a package tree next to this file (async_tree/):
  robot_server.protocols.protocol_analyzer : ProtocolAnalyzer.analyze
  robot_server.protocols.router : create_protocol.<locals>._get_cached_protocol_analysis
Each call of them is timed in process twice with perf_counter_ns:
  TIMING <qualname> <protocol> <start_ns> <duration_ns> <native thread id>
  TIMING inner:<qualname> <protocol> <start_ns> <duration_ns> <native thread id>
"outer" (no prefix) is measured by the caller around its await: it
includes frame creation, the freeing of the frame's locals
(ProtocolAnalyzer.analyze holds a 20,000-object list, ~2 ms to free) and,
for a task, the wake-up of the awaiting caller. "inner" runs from the
function's first line to its `finally`: it excludes the freeing of its
locals. A span with the decorator's semantics (first step until the frame
is left, locals freed) lies between the two. start_ns is
time.perf_counter_ns() (CLOCK_MONOTONIC on Linux, the clock
bpf_ktime_get_ns() reads), so spans can be matched.

Shape (scale 1; the default is 6x): 10 analyses of 300-1500 commands; per command an await
chain of depth 6 below ProtocolAnalyzer.analyze (add_and_execute ->
execute -> aspirate/dispense -> move_to -> _wait_motion -> sleep(0)),
every 4th batch of 8 commands runs as gathered tasks, generators for
well iteration, ~60 plain calls per command in `validate` and ~40 in
geometry; a cached second request; one analysis that raises; two
analyses interleaved on one loop; one analysis on a second thread with
its own event loop; two analyses where ProtocolAnalyzer.analyze runs as a
task's outermost coroutine (as the robot server's task runner starts it);
a background poller task cancelled at the end.

Usage: async_workload.py [--scale F] [--count]
  --scale F   multiply the number of commands (default 6.0: about 6 s on pyenv 3.10)
  --count     count Python-level events with sys.setprofile (slow; for
              checking the shape, not for timing)
"""
import asyncio
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "async_tree"))

from robot_server.protocols import router  # noqa: E402

PROTOCOLS = [  # (id, commands, fail_at)
    ("p-serial-1", 1500, None),
    ("p-serial-2", 1200, None),
    ("p-failing", 1000, 600),
    ("p-pair-a", 1000, None),
    ("p-pair-b", 1000, None),
    ("p-thread", 1000, None),
    ("p-small-1", 300, None),
    ("p-small-2", 300, None),
    ("p-serial-3", 1200, None),
    ("p-serial-4", 1500, None),
]


async def poller(stop):
    """A background task like the server's status poller: many cheap awaits."""
    n = 0
    try:
        while True:
            await asyncio.sleep(0)
            n += 1
    except asyncio.CancelledError:
        stop.append(n)
        raise


def run_thread_analysis(pid, n, timings):
    asyncio.run(router.create_protocol(pid, n, timings))


async def main(scale, timings):
    proto = {p: (max(1, int(n * scale)), f) for p, n, f in PROTOCOLS}
    stop = []
    poll = asyncio.create_task(poller(stop))
    th = threading.Thread(target=run_thread_analysis,
                          args=("p-thread", proto["p-thread"][0], timings), name="analysis-thread")
    th.start()
    for pid in ("p-serial-1", "p-serial-2", "p-failing"):
        n, fail = proto[pid]
        await router.create_protocol(pid, n, timings, fail)
    # The same protocol again: served from the cache.
    await router.create_protocol("p-serial-1", 0, timings)
    # Two analyses interleaved on this loop.
    await asyncio.gather(
        router.create_protocol("p-pair-a", proto["p-pair-a"][0], timings),
        router.create_protocol("p-pair-b", proto["p-pair-b"][0], timings),
    )
    # Some as tasks.
    tasks = [asyncio.create_task(router.create_protocol(pid, proto[pid][0], timings))
             for pid in ("p-small-1", "p-small-2")]
    await asyncio.wait(tasks)
    # Two where ProtocolAnalyzer.analyze is a task's outermost coroutine
    # (the robot server hands it to a task runner).
    for pid in ("p-serial-3", "p-serial-4"):
        await router.create_protocol(pid, proto[pid][0], timings, as_task=True)
    th.join()
    poll.cancel()
    try:
        await poll
    except asyncio.CancelledError:
        pass
    return stop[0] if stop else 0


def count_events(fn):
    """Counts profile events: Python calls by kind, coroutine steps."""
    import collections
    CO_GEN, CO_CORO = 0x20, 0x80
    c = collections.Counter()

    def prof(frame, event, arg):
        if event == "call":
            fl = frame.f_code.co_flags
            kind = "coroutine_step" if fl & CO_CORO else "generator_step" if fl & CO_GEN else "plain_call"
            c[kind] += 1
            if frame.f_code.co_name in ("analyze", "_get_cached_protocol_analysis") and \
                    "/robot_server/protocols/" in frame.f_code.co_filename:
                c["steps:" + frame.f_code.co_name] += 1
        elif event == "c_call":
            c["c_call"] += 1
    sys.setprofile(prof)
    threading.setprofile(prof)
    try:
        return fn(), c
    finally:
        sys.setprofile(None)
        threading.setprofile(None)


def run(scale, count):
    timings = []
    t0 = time.perf_counter_ns()
    if count:
        polls, c = count_events(lambda: asyncio.run(main(scale, timings)))
    else:
        polls, c = asyncio.run(main(scale, timings)), None
    t1 = time.perf_counter_ns()
    for name, pid, a, b, tid in sorted(timings, key=lambda t: t[2]):
        print("TIMING %s %s %d %d %d" % (name, pid, a, b - a, tid))
    if c is not None:
        for k in sorted(c):
            print("COUNT %s %d" % (k, c[k]))
    cpu = os.times()
    print("python %s: %d timed calls, poller awaits %d, wall %.3f s, cpu %.3f s"
          % (sys.version.split()[0], len(timings), polls, (t1 - t0) / 1e9,
             cpu.user + cpu.system))


if __name__ == "__main__":
    args = sys.argv[1:]
    scale = float(args[args.index("--scale") + 1]) if "--scale" in args else 6.0
    run(scale, "--count" in args)
