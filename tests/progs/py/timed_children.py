# SPDX-License-Identifier: MIT
"""Runs pmtest.timed's scenario in three new interpreters, one after the
other, holding none of its code itself: `python -m pmtest.run_timed`
twice (fork + exec, as subprocess does) and a multiprocessing spawn
child. NEST 18 rows and STEP 33 rows in all, and a reference file per
child in $PMTEST_REFS.

usage: timed_children.py [wait-for PATH]
  wait-for PATH: prints "waiting" and starts once PATH exists (lets a
  test attach with --pid first)."""
import multiprocessing
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from pmtest import run_timed  # noqa: E402


def main(argv):
    if argv[:1] == ["wait-for"]:
        print("waiting", flush=True)
        while not os.path.exists(argv[1]):
            time.sleep(0.01)
    for _ in range(2):
        subprocess.run([sys.executable, "-m", "pmtest.run_timed"], check=True, cwd=HERE)
    child = multiprocessing.get_context("spawn").Process(target=run_timed.main)
    child.start()
    child.join()
    if child.exitcode != 0:
        sys.exit(f"spawn child failed: {child.exitcode}")
    if "pmtest.timed" in sys.modules:
        sys.exit("pmtest.timed was imported here: the test needs it in the children alone")


if __name__ == "__main__":
    main(sys.argv[1:])
