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
``stick("ball"|"index"|"ball_track")`` (a sensor held active), ``chatter`` (each
pulse bounces electrically before it settles, flickers under 0.5 ms), ``bounce_ms``
(contact chatter: a burst of closures of 0.5 ms or more, up to ``bounce_ms`` in all,
at each make and break of every pulse), ``noise_bursts`` (such bursts on the ball
pin with nothing passing, while the ball runs). ``driven`` counts the real pulses
driven on each pin: the reference for the driver's passes.

Ball track (``ball_track_pin``): the launched ball runs on the track slowing down
evenly (constant deceleration) from ``launch_rps`` to ``drop_rps`` revolutions a
second, over a seeded number of revolutions (normal around ``ball_revs_mean``, sd
``ball_revs_sd``), passing the track sensor once a turn from a random start; then it
drops. ``last_track_passes`` is the pulse count the simulator drove (the reference
count). Faults: ``track_bounce`` (the chance a pass gives a second pulse, a
reflection, 20-60 ms later), ``track_dead`` (no pulse at all), ``track_after_drop``
(stray pulses after the ball sensor first saw the ball, before the result; with
``bounces`` only).
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass
from typing import Any

from tablecommon.wheel import WHEEL_ORDER

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
        bounce_ms: float = 0.0,  # contact chatter: a burst up to this long at each make and break
        noise_bursts: int = 0,  # chatter bursts with nothing passing, a spin (ball pin)
        ball_track_pin: int | None = None,
        ball_revs_mean: float = 11.0,  # revolutions of the ball on the track, mean
        ball_revs_sd: float = 2.0,
        launch_rps: float = 2.0,  # ball revolutions a second at the launch (+/- 10 %)
        drop_rps: float = 0.7,  # ... when it leaves the track (+/- 5 %)
        track_bounce: float = 0.0,  # chance a pass gives a second pulse
        track_dead: bool = False,  # the track sensor gives no pulse
        track_after_drop: int = 0,  # stray track pulses once the ball is in the pockets
    ) -> None:
        self.factory = factory
        self.pins = {"index": factory.pin(index_pin), "ball": factory.pin(ball_pin)}
        if index_b_pin is not None:
            self.pins["index_b"] = factory.pin(index_b_pin)
        if ball_track_pin is not None:
            self.pins["ball_track"] = factory.pin(ball_track_pin)
        # the ball's own draws: adding the sensor leaves the other draws as they were
        self.track_rng = random.Random(None if seed is None else seed + 7919)
        self.ball_revs_mean = ball_revs_mean
        self.ball_revs_sd = ball_revs_sd
        self.launch_rps = launch_rps
        self.drop_rps = drop_rps
        self.track_bounce = track_bounce
        self.track_dead = track_dead
        self.track_after_drop = track_after_drop
        self.last_track_passes: int | None = None  # pulses driven in the last spin
        self.last_track_times: list[float] = []  # their centres
        self.last_strays = 0  # stray pulses driven after the drop in the last spin
        self.active_high = active_high
        self.clock = clock or VirtualClock()
        self.realtime = realtime
        self.rng = random.Random(seed)
        self._real: list[float] = []  # the real passes of the last ball run
        self.index_at = index_sensor_at
        self.ball_at = ball_sensor_at
        self.marker = marker_at
        self.b_offset = index_b_offset
        self.index_width = index_width
        self.ball_width = ball_width
        self.chatter = chatter
        self.bounce_ms = bounce_ms
        self.noise_bursts = noise_bursts
        self.bounce_rng = random.Random(None if seed is None else seed + 104729)
        self.bursts = 0  # contact-chatter bursts driven (make, break and noise)
        self.driven: dict[str, int] = {}  # real pulses driven, by pin (chatter aside)
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
            edges += self._pulse(pin, tc, dur)
        return edges

    def _pulse(self, pin: str, tc: float, dur: float) -> list[_Edge]:
        """One pulse centred at ``tc``, ``dur`` long (after ``chatter`` flickers)."""
        edges = []
        self.driven[pin] = self.driven.get(pin, 0) + 1
        on, off = tc - dur / 2, tc + dur / 2
        for i in range(self.chatter):
            a = on - dur * 0.05 * (self.chatter - i)
            # electrical flickers: under the driver's 0.5 ms glitch filter at any speed
            flick = min(dur * 0.01, 0.0003)
            edges += [self._edge(a, pin, True), self._edge(a + flick, pin, False)]
        if self.bounce_ms:
            make, steady = self._burst(pin, on)
            edges += make
            if steady < off:  # the contact settles closed, then opens with a burst
                reopen = off + self.bounce_rng.uniform(0.0002, 0.0008)
                edges += [self._edge(steady, pin, True), self._edge(off, pin, False)]
                edges += self._burst(pin, reopen)[0]
            return edges
        edges += [self._edge(on, pin, True), self._edge(off, pin, False)]
        return edges

    def _burst(self, pin: str, t: float) -> tuple[list[_Edge], float]:
        """Contact chatter from ``t``: a burst 0.5 ms to ``bounce_ms`` long of closures
        0.5-1.2 ms (each longer than the 0.5 ms glitch filter) and openings 0.2-0.8 ms,
        ending open; returns its edges and its end (where a make settles closed)."""
        rng = self.bounce_rng
        self.bursts += 1
        end = t + rng.uniform(0.0005, max(self.bounce_ms / 1000, 0.0005))
        edges, at = [], t
        while at < end:
            closed = min(at + rng.uniform(0.0005, 0.0012), end)
            edges += [self._edge(at, pin, True), self._edge(closed, pin, False)]
            at = closed + rng.uniform(0.0002, 0.0008)
        return edges, max(at, end)

    def _noise(self, t0: float, t1: float) -> list[_Edge]:
        """``noise_bursts`` bursts of chatter on the ball pin in [t0, t1), nothing passing."""
        out: list[_Edge] = []
        for _ in range(self.noise_bursts):
            out += self._burst("ball", self.bounce_rng.uniform(t0, t1))[0]
        return out

    def _ball_run(self, revs: float | None) -> tuple[float, list[tuple[float, float]]]:
        """The launched ball on the track: how long it runs, and its passes of the track
        sensor (centre after the launch, pulse length), bounces included."""
        rng = self.track_rng
        self._real = []
        n = revs if revs is not None else rng.gauss(self.ball_revs_mean, self.ball_revs_sd)
        n = min(max(n, 1.0), 60.0)
        w0 = self.launch_rps * rng.uniform(0.9, 1.1)
        wd = self.drop_rps * rng.uniform(0.95, 1.05)
        a = (w0 * w0 - wd * wd) / (2 * n)  # even slowing: w0^2 - wd^2 = 2 a n
        run = (w0 - wd) / a
        start = rng.random()  # of a turn from the launch point to the sensor
        passes: list[tuple[float, float]] = []
        j = 0
        while start + j <= n:  # theta(t) = w0 t - a t^2 / 2 = start + j
            t = (w0 - (w0 * w0 - 2 * a * (start + j)) ** 0.5) / a
            dur = 0.008 / (w0 - a * t)  # the ball (about 2 cm) over the sensor
            passes.append((t, dur))
            self._real.append(t)
            if rng.random() < self.track_bounce:
                passes.append((t + rng.uniform(0.02, 0.06), 0.001))
            j += 1
        self.last_track_passes = 0 if self.track_dead else j
        return run, [] if self.track_dead else passes

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

    async def run(
        self,
        seconds: float,
        ball_extra: list[float] | None = None,
        track: list[tuple[float, float]] | None = None,
        extra: list[_Edge] | None = None,
    ) -> None:
        """Turn the rotor for ``seconds``, driving every pulse in time order (``track``:
        ball-track pulses, centre and length)."""
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
                edges += self._pulse("ball", tb + dur / 2, dur)
        for tc, dur in track or ():
            if t0 <= tc < t1 and "ball_track" in self.pins:
                edges += self._pulse("ball_track", tc, dur)
        edges += [e for e in extra or () if t0 <= e.t < t1]
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
        ball_revs: float | None = None,
    ) -> int | None:
        """One game: the old ball is taken away, the ball runs, bounces, rests in ``number``.

        With a ball-track sensor the ball runs ``ball_revs`` revolutions (default: drawn)
        and the running phase lasts at least that long."""
        if rpm is not None:
            self.rpm = rpm
        if direction is not None:
            self.direction = direction
        if number is None:
            number = WHEEL_ORDER[self.rng.randrange(POCKETS)]
        period = 60.0 / self.rpm
        self.ball = None  # the croupier picks the ball up and launches it
        running = launch_revs * period
        track: list[tuple[float, float]] = []
        if "ball_track" in self.pins:
            self.last_track_times = []
            ran, passes = self._ball_run(ball_revs)
            # launched at the end of the quiet time the wheel needs after the old ball
            launch = self.clock.t + 1.6 * period
            track = [(launch + t, dur) for t, dur in passes]
            self.last_track_times = [] if self.track_dead else [launch + t for t in self._real]
            running = max(running, 1.6 * period + ran)
        noise = self._noise(self.clock.t, self.clock.t + running) if self.noise_bursts else []
        await self.run(running, track=track, extra=noise)
        t = self.clock.t
        bounce_times = sorted(t + self.rng.uniform(0, period * 1.5) for _ in range(bounces))
        # stray track pulses once the ball sensor has seen the ball in the pockets (the
        # drop), before the result
        stray = [
            (self.track_rng.uniform(bounce_times[0] + 0.1, t + period * 1.6), 0.005)
            for _ in range(self.track_after_drop if bounce_times else 0)
        ]
        self.last_strays = len(stray)
        await self.run(period * 1.6, ball_extra=bounce_times, track=stray)
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
