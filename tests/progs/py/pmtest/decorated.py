# SPDX-License-Identifier: MIT
"""Functions behind functools.wraps decorators. The wrapper takes the
wrapped function's qualified name (dec, pdec), not its code: one row per
call is the wrapped function's, never a second one for the wrapper.
Run: python -m pmtest.decorated (3 dec calls of 20 ms, 2 pdec of 10 ms)."""
import asyncio
import functools
import time


def coroutine_decorator(f):
    @functools.wraps(f)
    async def wrapper(*args):
        return await f(*args)
    return wrapper


def plain_decorator(f):
    @functools.wraps(f)
    def wrapper(*args):
        return f(*args)
    return wrapper


@coroutine_decorator
async def dec(seconds):
    await asyncio.sleep(seconds)


@plain_decorator
def pdec(seconds):
    time.sleep(seconds)


async def main():
    for _ in range(3):
        await dec(0.02)
    for _ in range(2):
        pdec(0.01)


if __name__ == "__main__":
    asyncio.run(main())
