# SPDX-License-Identifier: MIT
"""A fixed amount of CPU-bound Python for bench/sampling.sh: recursion,
loops and dict work in a few functions, so a profile has several frames.
Prints its own CPU time ("cpu_s SECONDS") so a sampler's cost to it can
be told from the sampler's own work."""
import sys
import time


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def tally(n):
    counts = {}
    for i in range(n):
        key = i % 97
        counts[key] = counts.get(key, 0) + i
    return len(counts)


def work(scale):
    total = 0
    for _ in range(scale):
        total += fib(22) + tally(40000)
    return total


if __name__ == "__main__":
    scale = int(sys.argv[1]) if len(sys.argv) > 1 else 160
    start = time.process_time()
    work(scale)
    print("cpu_s %.3f" % (time.process_time() - start))
