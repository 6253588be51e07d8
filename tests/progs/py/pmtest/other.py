# SPDX-License-Identifier: MIT
"""Same names as the probed functions, in another module: never matched."""
import asyncio
import time


class ProtocolAnalyzer:
    async def analyze(self, seconds, fail=False):
        await asyncio.sleep(seconds)


async def analyze(seconds):
    await asyncio.sleep(seconds)


def crunch(seconds):
    time.sleep(seconds)
