# SPDX-License-Identifier: MIT
"""Stand-in for robot_server.protocols.protocol_analyzer: the preset times
ProtocolAnalyzer.analyze (async def)."""
import asyncio
import threading
from time import perf_counter_ns

from . import engine


class AnalysisFailed(Exception):
    pass


class ProtocolAnalyzer:
    def __init__(self, protocol_id, n_commands, fail_at=None, timings=None):
        self.timings = timings if timings is not None else []
        self.protocol_id = protocol_id
        self.n_commands = n_commands
        self.fail_at = fail_at
        self.result = None

    async def analyze(self):
        """Runs the protocol through a simulating engine: await depth 6+
        below here, tasks and gather for batches of commands, generators
        for the geometry, plenty of plain calls, and a large temporary
        state freed when the frame is left."""
        t_in = perf_counter_ns()  # "inner" reference: first line .. finally
        # A large local, freed only when this frame is left (after the
        # finally below): a span that ends when the frame is left includes it.
        scratch = [engine.Point(i, i, i) for i in range(20000)]
        try:
            return await self._analyze_body(len(scratch))
        finally:
            self.timings.append(("inner:ProtocolAnalyzer.analyze", self.protocol_id, t_in,
                                 perf_counter_ns(), threading.get_native_id()))

    async def _analyze_body(self, n_scratch):
        eng = engine.ProtocolEngine(self.protocol_id)
        await eng.setup()
        done = 0
        for batch_start in range(0, self.n_commands, engine.BATCH):
            n = min(engine.BATCH, self.n_commands - batch_start)
            if batch_start // engine.BATCH % 4 == 3:
                # Every fourth batch: commands in parallel tasks (gather).
                results = await asyncio.gather(
                    *(eng.add_and_execute(batch_start + i) for i in range(n))
                )
            else:
                results = []
                for i in range(n):
                    results.append(await eng.add_and_execute(batch_start + i))
            done += len(results)
            if self.fail_at is not None and done >= self.fail_at:
                raise AnalysisFailed("protocol %s failed at %d" % (self.protocol_id, done))
        await eng.finish()
        self.result = (done, eng.summary(), n_scratch)
        return self.result
