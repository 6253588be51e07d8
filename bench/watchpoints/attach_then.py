# SPDX-License-Identifier: MIT
"""attach_then.py GO SCRIPT SCALE: loads SCRIPT (bench/async_workload.py)
as a module, so that every function it and its package tree define
exists, prints "waiting", waits until the file GO exists (a tracer
attaches with --pid meanwhile), then runs the workload at SCALE, prints
what it prints (its own CPU time among it) and "finished", and waits
until GO.end exists before it exits (the tracer's counts can be read
while it is still attached)."""
import importlib.util
import os
import sys
import time

spec = importlib.util.spec_from_file_location("async_workload", sys.argv[2])
workload = importlib.util.module_from_spec(spec)
spec.loader.exec_module(workload)
print("waiting", flush=True)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.02)
workload.run(float(sys.argv[3]), False)
print("finished", flush=True)
while not os.path.exists(sys.argv[1] + ".end"):
    time.sleep(0.02)
