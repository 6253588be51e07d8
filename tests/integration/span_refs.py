# SPDX-License-Identifier: MIT
"""Compares pmetrics' span rows with the durations the timed functions
measured themselves (tests/progs/py/pmtest/timed.py).

usage: span_refs.py DATA_FILE REFS_DIR MAX_EXCESS_US NAME=COUNT...

For each NAME the capture must hold exactly COUNT rows and, unless COUNT
is 0 (a function the capture cannot see), the reference files exactly
COUNT durations. A function measures itself from its first
line to its finally clause, inside the interval pmetrics times (its first
step to its end), so with both lists sorted each row must be at least its
reference, and longer by at most MAX_EXCESS_US microseconds. The time a
span holds beyond the function's own is microseconds of interpreter work,
unless the kernel preempts the thread inside it: a shared or emulated
machine does that for milliseconds at a time. So a few rows, a tenth of
them (at least one), may exceed MAX_EXCESS_US, but by no more than
OUTLIER_FACTOR times it; a span that ends at the wrong event is off by a
whole sleep of the program, and one that ends at a later one by far more.
(Sorting keeps the per-row bounds: if some pairing satisfies them, the
sorted one does too.) Prints one line per NAME with the median and largest
excess; exits 1 on the first NAME that fails, naming what differs.
"""
import csv
import glob
import os
import statistics
import sys

OUTLIER_FACTOR = 10


def durations(data_file, name):
    with open(data_file, newline="") as f:
        return sorted(int(r[2]) for r in csv.reader(f) if r and r[0] == name)


def references(refs_dir, name):
    out = []
    for path in glob.glob(os.path.join(refs_dir, "refs.*")):
        with open(path) as f:
            for line in f:
                ref_name, ns = line.strip().split(",")
                if ref_name == name:
                    out.append(int(ns))
    return sorted(out)


def check(data_file, refs_dir, max_excess_ns, name, count):
    rows = durations(data_file, name)
    refs = references(refs_dir, name)
    if len(rows) != count:
        return f"{name}: {len(rows)} rows, want {count} (rows ms: {[r // 1000000 for r in rows]})"
    if not count:
        return None  # a function this capture cannot see, whatever the program ran
    if len(refs) != count:
        return f"{name}: the program made {len(refs)} references, want {count}"
    excess = [r - ref for r, ref in zip(rows, refs)]
    print(f"{name}: {count} rows, excess over in-process timing median "
          f"{statistics.median(excess) / 1000:.1f} us, max {max(excess) / 1000:.1f} us")
    for r, ref, e in zip(rows, refs, excess):
        if e < 0 or e > OUTLIER_FACTOR * max_excess_ns:
            return (f"{name}: a row of {r} ns against the function's own {ref} ns (excess "
                    f"{e / 1000:.1f} us, allowed 0 to {OUTLIER_FACTOR * max_excess_ns / 1000:.0f} us)")
    over = [e for e in excess if e > max_excess_ns]
    allowed = max(1, count // 10)
    if len(over) > allowed:
        return (f"{name}: {len(over)} rows exceed the function's own timing by more than "
                f"{max_excess_ns / 1000:.0f} us, allowed {allowed} "
                f"(excess us: {sorted(round(e / 1000) for e in over)})")
    return None


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__.strip().splitlines()[2])
    data_file, refs_dir, max_excess_ns = argv[0], argv[1], int(argv[2]) * 1000
    for spec in argv[3:]:
        name, _, count = spec.partition("=")
        err = check(data_file, refs_dir, max_excess_ns, name, int(count))
        if err:
            print(err)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
