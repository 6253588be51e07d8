# SPDX-License-Identifier: MIT
"""Shaped like the robot server's analyzer: an async analyze that awaits.

analyze also times itself from its first line to its finally clause, as
pmtest.timed's functions do: with $PMTEST_REFS set, each call appends
"ANALYZING_PROTOCOL,NANOSECONDS" (the preset's name for it) to
$PMTEST_REFS/refs.PID.analyzer, so a test can tell a late row from an
event loop that woke the coroutine late. One append per call, because
the calls may come from several threads and from forked children that
never run atexit handlers; it runs after the measurement and inside the
span, the few hundred microseconds most of a row's excess is.
"""
import asyncio
import os
import time


def _record(start):
    out = os.environ.get("PMTEST_REFS")
    if out:
        line = f"ANALYZING_PROTOCOL,{time.perf_counter_ns() - start}\n"
        with open(os.path.join(out, f"refs.{os.getpid()}.analyzer"), "a") as f:
            f.write(line)


class ProtocolAnalyzer:
    async def analyze(self, seconds, fail=False):
        start = time.perf_counter_ns()
        try:
            # Two suspensions, one through another coroutine of ours.
            await asyncio.sleep(seconds / 2)
            await self._wait(seconds / 2)
            if fail:
                raise RuntimeError("analysis failed")
            return "ok"
        finally:
            _record(start)

    async def _wait(self, seconds):
        await asyncio.sleep(seconds)
