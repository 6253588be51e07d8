# SPDX-License-Identifier: MIT
"""Purpose-built traced program for pmetrics' Python span tests.

usage: scenario.py SCENARIO...
  (robot, sync, threads, spin, held, gens, peaks, from-c, long, loops, children, timed,
   timed-children, wait-for PATH,
   bench call|map|await[-decorated] N)
Each scenario's expected rows are listed in its function's docstring;
tests/integration/test_python.sh checks them.
"""
import asyncio
import os
import sys
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from robot_server.protocols.protocol_analyzer import ProtocolAnalyzer  # noqa: E402
from robot_server.protocols import router  # noqa: E402
from pmtest import other, timed, work  # noqa: E402


async def robot():
    """ANALYZING_PROTOCOL rows: 200 ms (awaited), 300 ms and 100 ms
    (interleaved tasks), 50 ms (raises); GETTING_CACHED_ANALYSIS: 3 quick
    rows. The other module's same-named coroutines give nothing."""
    analyzer = ProtocolAnalyzer()
    await analyzer.analyze(0.2)
    await asyncio.gather(analyzer.analyze(0.3), analyzer.analyze(0.1))
    try:
        await analyzer.analyze(0.05, fail=True)
    except RuntimeError:
        pass
    for _ in range(3):
        await router.create_protocol({"k": 1}, "k")
    await other.ProtocolAnalyzer().analyze(0.05)
    await other.analyze(0.05)


def sync():
    """CRUNCH rows: 3 of 50 ms, called from Python code. Busy.crunch and
    other.crunch give nothing."""
    for _ in range(3):
        work.crunch(0.05)
    work.Busy().crunch(0.05)
    other.crunch(0.05)


def threads():
    """CRUNCH rows: 8 of 50 ms, from a pool of 4 threads."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(work.crunch, [0.05] * 8))


async def long():
    """ANALYZING_PROTOCOL rows: 2 s (prints "long started" as it begins:
    a test attaches during it), then 100 ms."""
    analyzer = ProtocolAnalyzer()
    print("long started", flush=True)
    await analyzer.analyze(2.0)
    await analyzer.analyze(0.1)


def held():
    """HOLDING: 3 rows of 20 ms (a task's coroutine; then one holding
    another), STEPPED: 2 rows of 20 ms, each closed by being freed as the
    frame holding it is cleared."""
    asyncio.run(work.holding(0.01))
    asyncio.run(work.holding(0.01, levels=2))


def gens():
    """TICKS: 1 row of 30 ms (a generator run by a for loop). STEPPED: 2
    rows, 20 ms (driven by .send() to the end) and 10 ms (.close() at its
    suspension). ANALYZING_PROTOCOL: 1 row of 100 ms (a task cancelled
    mid-analysis)."""
    for _ in work.ticks(3):
        pass
    c = work.stepped(0.01)
    c.send(None)
    try:
        c.send(None)
    except StopIteration:
        pass
    c = work.stepped(0.01)
    c.send(None)
    c.close()

    async def cancel():
        task = asyncio.ensure_future(ProtocolAnalyzer().analyze(1.0))
        await asyncio.sleep(0.1)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
    asyncio.run(cancel())


def spin():
    """SPIN: 1 row of 200 ms on CPU; CRUNCH: 1 row of 50 ms asleep."""
    work.spin(0.2)
    work.crunch(0.05)


def peaks():
    """CRUNCH: 2 rows of 50 ms, RECURSE: calls 80 deep (deeper than
    pmetrics' 64 open calls a thread), then 200 MB touched and freed
    between the two CRUNCH rows, none of it while one runs: the second
    CRUNCH row's RSS peak is its own, not the 200 MB."""
    sys.setrecursionlimit(10000)
    work.crunch(0.05)
    work.recurse(80)
    work.grow_and_free(200)
    work.crunch(0.05)


def from_c():
    """CRUNCH rows: 5 of 10 ms, each called from C with no Python frame
    of its caller to name it: 2 through contextvars' Context.run (as
    anyio's worker threads and asyncio's callbacks call), 1 as an event
    loop callback, 2 at exit (atexit)."""
    import atexit
    import contextvars

    for _ in range(2):
        contextvars.copy_context().run(work.crunch, 0.01)

    async def callback():
        done = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(
            lambda: (work.crunch(0.01), done.set_result(None)))
        await done
    asyncio.run(callback())
    atexit.register(work.crunch, 0.01)
    atexit.register(work.crunch, 0.01)


def loops():
    """ANALYZING_PROTOCOL rows: 2 of 100 ms, one per thread, each thread
    running its own event loop with analyze as the task's coroutine."""
    import threading

    analyzer = ProtocolAnalyzer()
    ts = [threading.Thread(target=asyncio.run, args=(analyzer.analyze(0.1),))
          for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def run_robot():
    asyncio.run(robot())


def children(module, target):
    """Runs a scenario once in each of three children, none in this
    process: a `python -m MODULE` interpreter started with subprocess
    (fork + exec), then TARGET in a multiprocessing spawn child (a new
    interpreter) and in a fork child (this interpreter's memory, no
    exec). With the robot scenario: ANALYZING_PROTOCOL 12 rows and
    GETTING_CACHED_ANALYSIS 9 rows; with pmtest.timed, three times its
    rows and reference files."""
    import multiprocessing
    import subprocess

    import time

    here = os.path.dirname(os.path.abspath(__file__))
    subprocess.run([sys.executable, "-m", module], check=True, cwd=here)
    for method in ("spawn", "fork"):
        # a pause after each child: a tracer gives back what a child
        # held (watch hook: watchpoints lent by this process) once it
        # has seen the child end, milliseconds later
        time.sleep(0.5)
        child = multiprocessing.get_context(method).Process(target=target)
        child.start()
        child.join()
        if child.exitcode != 0:
            sys.exit(f"{method} child failed: {child.exitcode}")


def wait_for(path):
    """No rows: polls until PATH exists (lets a test attach with --pid)."""
    import time

    print("waiting", flush=True)
    while not os.path.exists(path):
        time.sleep(0.01)


def tiny(x):
    """The benchmarked call: does nothing."""
    return x


async def tiny_coro(x):
    """The benchmarked coroutine: returns at once."""
    return x


def track(state, store):
    """The seed's decorator approach: wall-clock start, a monotonic
    duration, one list append per call (awaited for a coroutine)."""
    import inspect
    import time

    def wrap(func):
        if inspect.iscoroutinefunction(func):
            async def tracked_coro(*args, **kwargs):
                start = time.time_ns()
                t0 = time.perf_counter_ns()
                try:
                    return await func(*args, **kwargs)
                finally:
                    store.append((state, start, time.perf_counter_ns() - t0))
            return tracked_coro

        def tracked(*args, **kwargs):
            start = time.time_ns()
            t0 = time.perf_counter_ns()
            try:
                return func(*args, **kwargs)
            finally:
                store.append((state, start, time.perf_counter_ns() - t0))
        return tracked
    return wrap


def bench(kind, n):
    """n calls of tiny from Python ("call") or from C ("map"), or n awaits
    of tiny_coro ("await"); "-decorated" wraps them in the decorator.
    Prints ns per call."""
    import time

    store = []
    base, _, decorated = kind.partition("-")
    fn, coro = tiny, tiny_coro
    if decorated:
        fn, coro = track("TINY", store)(tiny), track("TINY", store)(tiny_coro)

    async def awaits():
        for i in range(n):
            await coro(i)

    t0 = time.perf_counter_ns()
    if base == "map":
        for _ in map(fn, range(n)):
            pass
    elif base == "await":
        asyncio.run(awaits())
    else:
        for i in range(n):
            fn(i)
    t1 = time.perf_counter_ns()
    print(f"ns_per_call {(t1 - t0) / n:.1f}")


def main(argv):
    i = 0
    while i < len(argv):
        name = argv[i]
        if name == "robot":
            asyncio.run(robot())
        elif name == "sync":
            sync()
        elif name == "threads":
            threads()
        elif name == "spin":
            spin()
        elif name == "held":
            held()
        elif name == "gens":
            gens()
        elif name == "long":
            asyncio.run(long())
        elif name == "peaks":
            peaks()
        elif name == "from-c":
            from_c()
        elif name == "loops":
            loops()
        elif name == "children":
            children("pmtest.robot_child", run_robot)
        elif name == "timed":
            timed.run()
        elif name == "timed-children":
            children("pmtest.timed", timed.run)
        elif name == "wait-for":
            i += 1
            wait_for(argv[i])
        elif name == "bench":
            bench(argv[i + 1], int(argv[i + 2]))
            i += 2
        else:
            sys.exit(f"unknown scenario {name}")
        i += 1


if __name__ == "__main__":
    main(sys.argv[1:])
