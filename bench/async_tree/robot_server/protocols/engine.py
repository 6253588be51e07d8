# SPDX-License-Identifier: MIT
"""A toy protocol engine shaped like Opentrons' (commands -> executor ->
handler -> hardware -> geometry), all in plain Python."""
import asyncio

BATCH = 8


class Point:
    __slots__ = ("x", "y", "z")

    def __init__(self, x, y, z):
        self.x = x
        self.y = y
        self.z = z

    def add(self, other):
        return Point(self.x + other.x, self.y + other.y, self.z + other.z)

    def scale(self, f):
        return Point(self.x * f, self.y * f, self.z * f)


def well_offset(row, col):
    return Point(col * 9.0, row * -9.0, 0.0)


def clamp(v, lo, hi):
    return lo if v < lo else hi if v > hi else v


def iter_wells(n_rows, n_cols):
    """A generator, as labware well iteration is."""
    for c in range(n_cols):
        for r in range(n_rows):
            yield r, c


def plan_move(origin, target, speed):
    # Plain calls only: 4 + 3 per axis.
    d = target.add(origin.scale(-1.0))
    s = clamp(speed, 1.0, 400.0)
    return (clamp(d.x, -500.0, 500.0) / s, clamp(d.y, -500.0, 500.0) / s,
            clamp(d.z, -200.0, 200.0) / s)


class Hardware:
    def __init__(self):
        self.pos = Point(0.0, 0.0, 0.0)
        self.moves = 0

    async def _wait_motion(self, t):
        # The deepest await; every 4th move really suspends (the event loop
        # runs other tasks), the others complete without suspending.
        self.moves += 1
        if self.moves % 4 == 0:
            await asyncio.sleep(0)
        return t

    async def move_to(self, target, speed):
        t = plan_move(self.pos, target, speed)
        self.pos = target
        return await self._wait_motion(sum(t))


class Geometry:
    def __init__(self):
        self.origin = Point(10.0, 20.0, 30.0)

    def well_position(self, well, depth):
        r, c = well
        return self.origin.add(well_offset(r, c)).add(Point(0.0, 0.0, -depth))

    def path(self, wells, depth):
        return [self.well_position(w, depth) for w in wells]


class Handler:
    def __init__(self, hw, geo):
        self.hw = hw
        self.geo = geo

    async def aspirate(self, index):
        wells = list(iter_wells(2, 2 + index % 3))
        total = 0.0
        for p in self.geo.path(wells, 1.0 + index % 5):
            total += await self.hw.move_to(p, 100.0 + index % 50)
        return total

    async def dispense(self, index):
        p = self.geo.well_position((index % 8, index % 12), 2.0)
        return await self.hw.move_to(p, 200.0)


class Executor:
    def __init__(self, handler):
        self.handler = handler
        self.done = 0

    async def execute(self, index):
        a = await self.handler.aspirate(index)
        b = await self.handler.dispense(index)
        self.done += 1
        return validate(index, a + b)


def validate(index, value):
    # Some pure computation per command, like pydantic validation.
    acc = 0
    for k in range(60):
        acc += clamp(k * index % 97, 3, 90)
    return (index, round(value, 3), acc)


class ProtocolEngine:
    def __init__(self, protocol_id):
        self.protocol_id = protocol_id
        self.executor = Executor(Handler(Hardware(), Geometry()))
        self.log = []

    async def setup(self):
        await asyncio.sleep(0)

    async def add_and_execute(self, index):
        result = await self.executor.execute(index)
        self.log.append(result)
        return result

    async def finish(self):
        await asyncio.sleep(0)

    def summary(self):
        return sum(r[2] for r in self.log)
