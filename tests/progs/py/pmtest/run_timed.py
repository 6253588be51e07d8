# SPDX-License-Identifier: MIT
"""Runs pmtest.timed's scenario, importing pmtest.timed only when main()
runs: a process that starts this module (python -m pmtest.run_timed, or
a spawn child whose target is main) holds none of pmtest.timed's code
until then, and pmtest.timed is an imported module, not the main one."""


def main():
    from pmtest import timed

    timed.run()


if __name__ == "__main__":
    main()
