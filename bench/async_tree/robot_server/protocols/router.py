# SPDX-License-Identifier: MIT
"""Stand-in for robot_server.protocols.router: the preset times the local
coroutine create_protocol.<locals>._get_cached_protocol_analysis."""
import asyncio
import threading

from .protocol_analyzer import ProtocolAnalyzer, AnalysisFailed

_CACHE = {}


async def create_protocol(protocol_id, n_commands, timings, fail_at=None, as_task=False):
    from time import perf_counter_ns

    async def _get_cached_protocol_analysis():
        t_in = perf_counter_ns()
        try:
            return await _body()
        finally:
            timings.append(("inner:create_protocol.<locals>._get_cached_protocol_analysis",
                            protocol_id, t_in, perf_counter_ns(), threading.get_native_id()))

    async def _body():
        cached = _CACHE.get(protocol_id)
        if cached is not None:
            await asyncio.sleep(0)
            return cached
        analyzer = ProtocolAnalyzer(protocol_id, n_commands, fail_at, timings)
        t0 = perf_counter_ns()
        try:
            if as_task:
                # As in the robot server, where a task runner starts
                # analyzer.analyze: the task's outermost coroutine.
                result = await asyncio.create_task(analyzer.analyze())
            else:
                result = await analyzer.analyze()
        except AnalysisFailed as e:
            result = ("failed", str(e))
        finally:
            timings.append(("ProtocolAnalyzer.analyze", protocol_id, t0, perf_counter_ns(),
                            threading.get_native_id()))
        _CACHE[protocol_id] = result
        return result

    t0 = perf_counter_ns()
    result = await _get_cached_protocol_analysis()
    timings.append(("create_protocol.<locals>._get_cached_protocol_analysis", protocol_id,
                    t0, perf_counter_ns(), threading.get_native_id()))
    return result
