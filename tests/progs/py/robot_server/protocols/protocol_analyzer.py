# SPDX-License-Identifier: MIT
"""Shaped like the robot server's analyzer: an async analyze that awaits."""
import asyncio


class ProtocolAnalyzer:
    async def analyze(self, seconds, fail=False):
        # Two suspensions, one through another coroutine of ours.
        await asyncio.sleep(seconds / 2)
        await self._wait(seconds / 2)
        if fail:
            raise RuntimeError("analysis failed")
        return "ok"

    async def _wait(self, seconds):
        await asyncio.sleep(seconds)
