# SPDX-License-Identifier: MIT
"""idle_timed.py GO ROUNDS: an asyncio program that sleeps and makes
system calls (the robot server's shape between requests) and defines a
timed coroutine function, never_awaited, that it never runs. Prints
"waiting", waits until the file GO exists (a tracer attaches with --pid
meanwhile), then runs ROUNDS rounds of an awaited coroutine that reads a
little and computes a little, and every eighth round a 0.2 ms
asyncio.sleep (a task step), and prints
"cpu USER SYS" (its own CPU seconds for them). Waits for GO.end before
it exits. What a Python hook costs a program while no timed function
runs: under a hypervisor, every context switch of a thread whose own
debug registers are armed costs an exit, and this program switches
often."""
import asyncio
import os
import resource
import sys
import time


async def never_awaited():
    return 0


async def one_round(fd):
    os.pread(fd, 512, 0)
    return sum(range(200))


async def work(rounds):
    fd = os.open("/proc/self/stat", os.O_RDONLY)
    for i in range(rounds):
        await one_round(fd)
        if i % 8 == 0:
            await asyncio.sleep(0.0002)
    os.close(fd)


def main():
    go, rounds = sys.argv[1], int(sys.argv[2])
    print("waiting", flush=True)
    while not os.path.exists(go):
        time.sleep(0.01)
    before = resource.getrusage(resource.RUSAGE_SELF)
    asyncio.run(work(rounds))
    after = resource.getrusage(resource.RUSAGE_SELF)
    print("cpu %.4f %.4f" % (after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime),
          flush=True)
    while not os.path.exists(go + ".end"):
        time.sleep(0.01)


main()
