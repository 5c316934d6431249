"""A physical model of a wheel driving gpiozero MockFactory pins.

The rotor turns at a given rpm and direction; a marker passes the index sensor
(and, ``index_b_offset`` pockets clockwise, the second index sensor); a ball
resting in pocket ``n`` passes the ball sensor. Positions are in pockets, measured
clockwise; pocket ``WHEEL_ORDER[k]`` sits ``k`` pockets clockwise of the marker.
The simulator computes when each sensor sees what from this geometry alone, and
drives the mock pins in time order, advancing a :class:`VirtualClock` (as fast as
the CPU goes) or sleeping (``realtime=True``, for demos).

``calibrate()`` says which pocket is in front of the ball sensor when the index
fires: what a technician reads off the wheel to set ``index_pocket``.

Faults: ``spin(..., bounces=n)`` (ball bouncing before it rests), ``no_ball=True``
(the ball never settles), ``stop_rotor()``, ``reverse_during=True`` (the rotor
reverses once the ball is bouncing in the pockets),
``stick("ball"|"index")`` (a sensor held active), ``chatter`` (each pulse
bounces electrically before it settles).
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass
from typing import Any

from firmware_host.games.roulette import WHEEL_ORDER

__all__ = ["GpioWheelSim", "VirtualClock"]

POCKETS = len(WHEEL_ORDER)


class VirtualClock:
    """A clock the simulator moves forward; pass ``clock`` to the driver."""

    def __init__(self, start: float = 1000.0) -> None:
        self.t = start

    def __call__(self) -> float:
        return self.t


@dataclass(order=True)
class _Edge:
    t: float
    order: int
    pin: str
    level: bool


class GpioWheelSim:
    """Drives ``index``, ``index_b`` and ``ball`` mock pins of a MockFactory."""

    def __init__(
        self,
        factory: Any,
        *,
        index_pin: int,
        ball_pin: int,
        index_b_pin: int | None = None,
        active_high: bool = False,
        clock: VirtualClock | None = None,
        realtime: bool = False,
        seed: int | None = 0,
        index_sensor_at: float = 3.25,  # absolute position of the index sensor (pockets)
        ball_sensor_at: float = 20.0,  # absolute position of the ball sensor
        marker_at: float = 0.0,  # where on the rotor the index marker is
        index_b_offset: float = 1.0,  # second index sensor this many pockets clockwise of A
        index_width: float = 0.3,  # pulse widths, in pockets
        ball_width: float = 0.6,
        chatter: int = 0,  # extra on/off flickers at each pulse start
    ) -> None:
        self.factory = factory
        self.pins = {"index": factory.pin(index_pin), "ball": factory.pin(ball_pin)}
        if index_b_pin is not None:
            self.pins["index_b"] = factory.pin(index_b_pin)
        self.active_high = active_high
        self.clock = clock or VirtualClock()
        self.realtime = realtime
        self.rng = random.Random(seed)
        self.index_at = index_sensor_at
        self.ball_at = ball_sensor_at
        self.marker = marker_at
        self.b_offset = index_b_offset
        self.index_width = index_width
        self.ball_width = ball_width
        self.chatter = chatter
        self.position = 0.0  # rotor position (pockets, clockwise) at ``self.clock()``
        self.rpm = 30.0
        self.direction = "clockwise"
        self.ball: int | None = None  # pocket the ball rests in (None: not in a pocket)
        self.results: list[int] = []
        self._order = 0
        for pin in self.pins.values():
            self._level(pin, False)

    # ------------------------------------------------------------------ geometry
    def calibrate(self) -> int:
        """The pocket in front of the ball sensor at the moment the index fires."""
        rotor_at_index = self.index_at - self.marker  # rotor position when the marker is at A
        k = round(self.ball_at - rotor_at_index) % POCKETS
        return WHEEL_ORDER[k]

    def _velocity(self) -> float:
        v = POCKETS * self.rpm / 60.0
        return v if self.direction == "clockwise" else -v

    def _times(self, target: float, t0: float, t1: float) -> list[float]:
        """When the rotor point at rotor-relative ``target`` passes absolute 0 in [t0, t1)."""
        v = self._velocity()
        if v == 0:
            return []
        # absolute position of the point: self.position + target + v * (t - t0) == m * 37
        start = self.position + target
        out = []
        lo, hi = sorted((start, start + v * (t1 - t0)))
        m = int(lo // POCKETS)
        while m * POCKETS <= hi + POCKETS:
            t = t0 + (m * POCKETS - start) / v
            if t0 <= t < t1:
                out.append(t)
            m += 1
        return sorted(out)

    def _pulses(self, pin: str, rel: float, width: float, t0: float, t1: float) -> list[_Edge]:
        """Edges of a sensor at absolute position ``at`` seeing rotor point ``rel``."""
        dur = width / abs(self._velocity())
        edges = []
        for tc in self._times(rel, t0, t1):
            on, off = tc - dur / 2, tc + dur / 2
            for i in range(self.chatter):
                a = on - dur * 0.05 * (self.chatter - i)
                edges += [self._edge(a, pin, True), self._edge(a + dur * 0.01, pin, False)]
            edges += [self._edge(on, pin, True), self._edge(off, pin, False)]
        return edges

    def _edge(self, t: float, pin: str, level: bool) -> _Edge:
        self._order += 1
        return _Edge(t, self._order, pin, level)

    # ------------------------------------------------------------------ driving pins
    def _level(self, pin: Any, active: bool) -> None:
        if active == self.active_high:
            pin.drive_high()
        else:
            pin.drive_low()

    async def _advance_to(self, t: float) -> None:
        dt = t - self.clock.t
        if dt <= 0:
            return
        if self.realtime:
            await asyncio.sleep(dt)
        self.position += self._velocity() * dt
        self.clock.t = t
        if not self.realtime:
            await asyncio.sleep(0)

    async def run(self, seconds: float, ball_extra: list[float] | None = None) -> None:
        """Turn the rotor for ``seconds``, driving every pulse in time order."""
        t0 = self.clock.t
        t1 = t0 + seconds
        edges: list[_Edge] = []
        if self._velocity() != 0:
            # the index sensor is at self.index_at: the marker passes it when
            # position + marker == index_at (mod 37), i.e. rotor point marker - index_at at 0
            edges += self._pulses("index", self.marker - self.index_at, self.index_width, t0, t1)
            if "index_b" in self.pins:
                rel = self.marker - self.index_at - self.b_offset
                edges += self._pulses("index_b", rel, self.index_width, t0, t1)
            if self.ball is not None:
                k = WHEEL_ORDER.index(self.ball)
                edges += self._pulses("ball", k - self.ball_at, self.ball_width, t0, t1)
        for tb in ball_extra or ():
            if t0 <= tb < t1:
                dur = self.ball_width / max(abs(self._velocity()), 1e-6)
                edges += [self._edge(tb, "ball", True), self._edge(tb + dur, "ball", False)]
        # A pulse centred before t1 is driven whole (its falling edge may be just after).
        for e in sorted(edges):
            await self._advance_to(e.t)
            self._level(self.pins[e.pin], e.level)
            await asyncio.sleep(0)
        await self._advance_to(t1)

    async def spin(
        self,
        number: int | None = None,
        *,
        rpm: float | None = None,
        direction: str | None = None,
        launch_revs: float = 4.0,
        bounces: int = 2,
        settle_revs: float = 4.0,
        no_ball: bool = False,
        reverse_during: bool = False,
    ) -> int | None:
        """One game: the old ball is taken away, the ball runs, bounces, rests in ``number``."""
        if rpm is not None:
            self.rpm = rpm
        if direction is not None:
            self.direction = direction
        if number is None:
            number = WHEEL_ORDER[self.rng.randrange(POCKETS)]
        period = 60.0 / self.rpm
        self.ball = None  # the croupier picks the ball up and launches it
        await self.run(launch_revs * period)
        t = self.clock.t
        bounce_times = sorted(t + self.rng.uniform(0, period * 1.5) for _ in range(bounces))
        await self.run(period * 1.6, ball_extra=bounce_times)
        if reverse_during:  # the rotor reversed with the ball already in the pockets
            self.direction = "anticlockwise" if self.direction == "clockwise" else "clockwise"
        if no_ball:
            await self.run(settle_revs * period)
            return None
        self.ball = number
        self.results.append(number)
        await self.run(settle_revs * period)
        return number

    async def stop_rotor(self, seconds: float = 5.0) -> None:
        rpm, self.rpm = self.rpm, 0.0
        await self.run(seconds)
        self.rpm = rpm

    def stick(self, pin: str, active: bool = True) -> None:
        self._level(self.pins[pin], active)

    def now(self) -> float:
        return self.clock.t if not self.realtime else time.monotonic()
