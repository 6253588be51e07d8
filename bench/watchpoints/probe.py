# SPDX-License-Identifier: MIT
"""How often hardware watchpoints on one async function's objects fire,
per kind of call: the premise of timing a Python function by watchpoints
(only its own calls trap) instead of uprobes on the interpreter (every
coroutine step traps, timed or not).

    python3 probe.py WATCHER CALLS

WATCHER is bench/watchpoints/watcher.c built for this machine; it is
started on this process with four addresses of `timed`: its code
object's reference count, the first RESUME and the first RETURN_VALUE
of its bytecode (where the interpreter fetches them), and its function
object's reference count. Each phase runs CALLS calls of one kind and
prints "PHASE name calls n1 n2 n3 n4": the accesses each watchpoint saw.
"""
import asyncio
import ctypes
import dis
import os
import signal
import subprocess
import sys


async def timed(steps, fail):
    held = [0] * 10
    for _ in range(steps):
        await asyncio.sleep(0)
    if fail:
        raise ValueError("failed as asked")
    return len(held)


async def untimed():
    return 1


def plain():
    return 2


def bytecode_offset(code):
    """Where the interpreter's own copy of CODE's bytecode starts, from
    the code object's address (co_code is a copy; the first 8 bytes of
    the two agree before any instruction ran)."""
    at = ctypes.string_at(id(code), 512).find(code.co_code[:8])
    if at < 0:
        sys.exit("probe.py: cannot find the bytecode inside the code object")
    return at


def watch_addresses():
    code = timed.__code__
    ops = [dis.opname[code.co_code[i]] for i in range(0, len(code.co_code), 2)]
    first_resume = 2 * ops.index("RESUME")
    first_return = 2 * next(i for i, op in enumerate(ops) if op in ("RETURN_VALUE", "RETURN_CONST"))
    base = id(code) + bytecode_offset(code)
    return ["%#x/8" % id(code), "%#x/2" % (base + first_resume),
            "%#x/2" % (base + first_return), "%#x/8" % id(timed)]


def main():
    calls = int(sys.argv[2])
    watcher = subprocess.Popen([sys.argv[1], str(os.getpid())] + watch_addresses(),
                               stdout=subprocess.PIPE, text=True)
    if watcher.stdout.readline().strip() != "WATCHING":
        sys.exit("probe.py: the watcher did not start")

    def phase(name, n):
        watcher.send_signal(signal.SIGUSR1)
        counts = watcher.stdout.readline().split()[1:]
        print("PHASE", name, n, *counts, flush=True)

    async def phases():
        phase("setup", 0)
        for _ in range(calls):
            await timed(3, False)
        phase("returns", calls)
        for _ in range(calls):
            try:
                await timed(3, True)
            except ValueError:
                pass
        phase("raises", calls)
        tasks = [asyncio.ensure_future(timed(100, False)) for _ in range(calls)]
        await asyncio.sleep(0)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        del tasks
        phase("cancelled-tasks", calls)
        await asyncio.gather(*[timed(3, False) for _ in range(calls)])
        phase("gather", calls)
        for _ in range(calls * 50):
            await untimed()
            plain()
        phase("untimed", calls * 50)

    asyncio.run(phases())
    watcher.terminate()
    watcher.wait()


if __name__ == "__main__":
    print("VERSION", sys.version.split()[0], flush=True)
    main()
