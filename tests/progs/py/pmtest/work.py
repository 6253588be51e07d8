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


async def holding(seconds, levels=1, suspend=False):
    """Starts a stepped(seconds) coroutine (with levels=2, a holding one
    that started its own and suspended) and returns while it is still
    suspended in a local: clearing this frame frees it, which closes it
    (its finaliser), inside this coroutine's last step."""
    if levels > 1:
        held = holding(seconds, levels - 1, suspend=True)
    else:
        held = stepped(seconds)
    held.send(None)
    if suspend:
        await _Yield()
    time.sleep(seconds)


def spin(seconds):
    """Burns CPU for about SECONDS without a Python call inside."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def recurse(n):
    """n nested calls of itself."""
    return 0 if n == 0 else 1 + recurse(n - 1)


def grow_and_free(mb):
    """Touches MB megabytes, then frees them: RSS up and back down."""
    block = bytearray(mb * 1024 * 1024)
    for i in range(0, len(block), 4096):
        block[i] = 1
    del block
