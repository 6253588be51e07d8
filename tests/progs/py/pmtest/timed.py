# SPDX-License-Identifier: MIT
"""Functions timed twice at once: by pmetrics from outside, and by
themselves from inside, with time.perf_counter_ns() at their first line
and in a finally clause. pmetrics' span begins before the first line and
ends after the finally clause, so each of its rows holds the function's
own interval: a test pairs them and checks the difference.

run() drives every shape a timed coroutine can have (see its docstring)
and writes the functions' own durations to $PMTEST_REFS/refs.PID as
"NAME,NANOSECONDS" lines, NAME being the probe name a test gives the
function (NEST for nest, and so on).
"""
import asyncio
import os
import time

DEPTH = 6  # nest() awaits itself this deep
STEP = 0.02  # seconds each nest() level sleeps

_refs = []


def _done(name, start):
    _refs.append((name, time.perf_counter_ns() - start))


async def nest(level, seconds):
    """Sleeps, then awaits itself one level less: DEPTH rows, the
    outermost about DEPTH * seconds."""
    start = time.perf_counter_ns()
    try:
        await asyncio.sleep(seconds)
        if level > 1:
            await nest(level - 1, seconds)
    finally:
        _done("NEST", start)


async def step(seconds, fail=False):
    """Sleeps; raises if asked. Run as a task, gathered, cancelled."""
    start = time.perf_counter_ns()
    try:
        await asyncio.sleep(seconds)
        if fail:
            raise RuntimeError("step failed on purpose")
    finally:
        _done("STEP", start)


def ticks(n, seconds):
    """A generator, run by a for loop: n items, seconds apart."""
    start = time.perf_counter_ns()
    try:
        for i in range(n):
            time.sleep(seconds)
            yield i
    finally:
        _done("TICKS", start)


def plain(seconds):
    """A plain function, called from C by map()."""
    start = time.perf_counter_ns()
    try:
        time.sleep(seconds)
    finally:
        _done("PLAIN", start)


async def _all():
    await nest(DEPTH, STEP)  # NEST: 6 rows, 20 to 120 ms
    tasks = [asyncio.ensure_future(step(s)) for s in (0.03, 0.05, 0.07)]
    for t in tasks:  # STEP: 3 tasks
        await t
    await asyncio.gather(step(0.04), step(0.06), step(0.08))  # STEP: 3 gathered
    try:  # STEP: 1 that raises after 10 ms
        await step(0.01, fail=True)
    except RuntimeError:
        pass
    victim = asyncio.ensure_future(step(1.0))  # STEP: 1 cancelled at about 50 ms
    await asyncio.sleep(0.05)
    victim.cancel()
    try:
        await victim
    except asyncio.CancelledError:
        pass
    # STEP: 1 cancelled at about 30 ms two awaits down in a task: the
    # cancellation is thrown through holder() into it
    victim = asyncio.ensure_future(holder(step(1.0)))
    await asyncio.sleep(0.03)
    victim.cancel()
    try:
        await victim
    except asyncio.CancelledError:
        pass
    # STEP: 2 closed while suspended, by close() and by being freed
    for explicit in (True, False):
        coro = step(1.0)
        coro.send(None)
        await asyncio.sleep(0.01)
        if explicit:
            coro.close()
        del coro


async def holder(coro):
    """Awaits CORO; not timed."""
    return await coro


def run():
    """NEST 6 rows, STEP 11 rows (3 tasks, 3 gathered, 1 raising, 2
    cancelled, 2 closed), TICKS 1 row (a generator a for loop runs: 3 x 10 ms),
    PLAIN 3 rows (map() calls, 5 ms each)."""
    _refs.clear()
    asyncio.run(_all())
    for _ in ticks(3, 0.01):
        pass
    list(map(plain, [0.005] * 3))
    out = os.environ.get("PMTEST_REFS")
    if out:
        with open(os.path.join(out, f"refs.{os.getpid()}"), "w") as f:
            f.writelines(f"{name},{ns}\n" for name, ns in _refs)


if __name__ == "__main__":
    if os.environ.get("PMTEST_RUN_IMPORTED"):
        # as uvicorn.run("main:app") does: this file imported again
        # under its own name, whose functions are the ones that run
        import pmtest.timed

        pmtest.timed.run()
    else:
        run()
