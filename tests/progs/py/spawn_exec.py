# SPDX-License-Identifier: MIT
"""Runs ARGS... with this interpreter in a child (fork, then exec, as a
server starts its analysis process) as soon as it can, and waits for it.
Run with -S, so that its own start takes a few milliseconds:

    python3 -S spawn_exec.py SCRIPT ARGS...
"""
import os
import sys

child = os.fork()
if child == 0:
    os.execv(sys.executable, [sys.executable] + sys.argv[1:])
os.waitpid(child, 0)
