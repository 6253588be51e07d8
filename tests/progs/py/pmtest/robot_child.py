# SPDX-License-Identifier: MIT
"""Run as `python -m pmtest.robot_child` from tests/progs/py: the robot
scenario in a child interpreter, as the robot server starts its analysis
process (`python3 -m robot_server.runs.run_process_entry_point`)."""
import asyncio

from scenario import robot

if __name__ == "__main__":
    asyncio.run(robot())
