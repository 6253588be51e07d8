# SPDX-License-Identifier: MIT
"""Plain (non-async) functions: crunch is probed, Busy.crunch is not."""
import time


def crunch(seconds):
    time.sleep(seconds)
    return seconds


class Busy:
    def crunch(self, seconds):
        time.sleep(seconds)


def ticks(n):
    """A generator: n steps of 10 ms."""
    for i in range(n):
        time.sleep(0.01)
        yield i


class _Yield:
    def __await__(self):
        yield


async def stepped(seconds):
    """A coroutine stepped by hand with .send(): sleeps, suspends once,
    sleeps again."""
    time.sleep(seconds)
    await _Yield()
    time.sleep(seconds)


def spin(seconds):
    """Burns CPU for about SECONDS without a Python call inside."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass
