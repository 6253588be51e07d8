# SPDX-License-Identifier: MIT
"""A program with a known profile, for the sampler's tests
(tests/integration/test_sample.sh).

    sample_prog.py shares SECONDS   heavy/medium/light burn 60/30/10 % of the CPU
    sample_prog.py block SECONDS    a thread sleeps in long_wait (75 %) and
                                    short_wait (25 %) while main burns
    sample_prog.py coro SECONDS     outer awaits middle awaits inner, which burns
    sample_prog.py span SECONDS     in_span and outside_span burn half each
    sample_prog.py burn SECONDS     one CPU-bound loop
    sample_prog.py native SECONDS   squeeze calls zlib.compress (libz) in a loop
    sample_prog.py deep SECONDS     descend recurses 200 calls deep, then deep_burn
                                    burns (below the walk's 256 frames)
    sample_prog.py deeper SECONDS   the same 300 calls deep (past them)

Each part burns in its own loop (no shared helper), so a sample's leaf
Python frame says which part the CPU time is spent in.
"""
import asyncio
import os
import sys
import threading
import time

CYCLE = 0.1


def heavy(until):
    n = 0
    while time.perf_counter() < until:
        n += 1
    return n


def medium(until):
    n = 0
    while time.perf_counter() < until:
        n += 1
    return n


def light(until):
    n = 0
    while time.perf_counter() < until:
        n += 1
    return n


def shares(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        t = time.perf_counter()
        heavy(t + 0.6 * CYCLE)
        medium(t + 0.9 * CYCLE)
        light(t + CYCLE)


def long_wait():
    time.sleep(0.3)


def short_wait():
    time.sleep(0.1)


def waiter(end):
    while time.perf_counter() < end:
        long_wait()
        short_wait()


def block(seconds):
    end = time.perf_counter() + seconds
    t = threading.Thread(target=waiter, args=(end,), name="waiter")
    t.start()
    shares(seconds)
    t.join()


class Worker:
    async def inner(self, until):
        n = 0
        while time.perf_counter() < until:
            n += 1
        await asyncio.sleep(0)
        return n

    async def middle(self, until):
        return await self.inner(until)

    async def outer(self, seconds):
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            await self.middle(time.perf_counter() + CYCLE)


def coro(seconds):
    asyncio.run(Worker().outer(seconds))


def in_span(until):
    n = 0
    while time.perf_counter() < until:
        n += 1
    return n


def outside_span(until):
    n = 0
    while time.perf_counter() < until:
        n += 1
    return n


def span(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        t = time.perf_counter()
        in_span(t + CYCLE / 2)
        outside_span(t + CYCLE)


def burn(seconds):
    end = time.perf_counter() + seconds
    total = 0
    while time.perf_counter() < end:
        total += sum(i * i for i in range(1000))
    return total


def squeeze(seconds):
    import zlib

    data = os.urandom(1 << 16) * 4
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        zlib.compress(data, 9)


def deep_burn(until):
    total = 0
    while time.perf_counter() < until:
        total += sum(i * i for i in range(1000))
    return total


def descend(depth, until):
    if depth == 0:
        return deep_burn(until)
    return descend(depth - 1, until)


def main():
    mode, seconds = sys.argv[1], float(sys.argv[2])
    if mode in ("deep", "deeper"):
        sys.setrecursionlimit(1000)
        descend(200 if mode == "deep" else 300, time.perf_counter() + seconds)
        return
    {"shares": shares, "block": block, "coro": coro, "span": span, "burn": burn,
     "native": squeeze}[mode](seconds)


if __name__ == "__main__":
    main()
