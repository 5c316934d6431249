"""Roulette wheel on two (or three) GPIO sensors, sans I/O: pulses in, events out.

Sensors ([docs/protocols/gpio-wheel.md]):

- **rotor index** (A): a marker on the rotor passes a fixed sensor once per
  revolution. The time between two index pulses is the rotor period ``T``.
- optional **second index** (B), a little clockwise of A: A-then-B means the rotor
  turns clockwise, B-then-A anticlockwise. Without it the direction is configured.
- **ball at rest**: a fixed sensor under the pocket ring. A ball resting in a pocket
  turns with the rotor and passes it once per revolution; a ball still running on
  the track or bouncing does not pass it regularly.
- optional **ball track**: a sensor in the ball track (the rim the ball runs in);
  the running ball passes it once per revolution. Its pulses from the game's
  opening (state 2) to the drop (state 4, the first pass of the ball sensor) are
  the spin's ball revolutions, reported with the result (``ball_revs``,
  ``ball_rev_ms``); pulses after the drop are ignored. A spin with a result and no
  track pulse at all (or the sensor stuck during it) has unknown revolutions
  (``BALL_REVS_UNKNOWN``): a sensor fault, never a spin of 0 revolutions.

Calibration: ``index_pocket`` is the pocket in front of the ball sensor at the
moment the index pulse fires. Pockets are laid out clockwise in the single-zero
order :data:`~tablecommon.wheel.WHEEL_ORDER`; if the rotor turns clockwise
by ``φ`` of a revolution after the index pulse, the pocket in front of the ball
sensor is ``WHEEL_ORDER[k0 - 37 φ]`` (``k0`` the index of ``index_pocket``);
anticlockwise, ``k0 + 37 φ``. Each pulse is timed at its centre (mean of its rising
and falling edges), so the pulse width does not bias the phase.

Game cycle (states numbered like the Cammegh SS2 so round logic treats both wheels
alike): 6 rotor stopped -> 2 armed, betting (the previous ball must be gone for
``launch_quiet_revs`` revolutions before a new result may be read) -> 3 ball in the
rim (the first pass of the ball-track sensor; without that sensor the wheel cannot
see the running ball and goes from 2 to 4) -> 4 first ball pulse (the ball is
dropping into the pockets) -> 5 result: ``settle_revs`` consecutive ball pulses
about one period apart in the same pocket -> after ``arm_delay`` back to 2 with the
next spin number.

Contact chatter: each sensor's edges are debounced into passes (:class:`_Pulse`)
with limits derived from the fastest rotor the driver reads (:data:`FASTEST_RPM`,
120 rpm, the ceiling of ``max_rpm``; one pocket passes in 13.5 ms there). A pass
must be closed a quarter pocket at that speed (3.4 ms: the marker and a resting
ball cover more than that at any speed the driver reads, a chatter burst of 0.5-3 ms
never does), and edges within half a pocket (6.8 ms) of the last falling edge are
the same pass (its make or break chatter; two real passes of one sensor are a turn,
at least 0.5 s, apart). gpiozero's ``bounce_time`` is not used: it drops the edges
after the first for a fixed time, so the pass would be timed at the burst's first
closure and a burst alone would still count; the model keeps every edge, with its
own timestamp, and decides on the whole pass.

Faults: rotor stopped (no index pulse for ``stall_revs`` periods), speed outside
``[min_rpm, max_rpm]``, direction reversed during a game, the wrong direction for
the configured one, no ball settled within ``ball_timeout``, a sensor stuck active.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise

from tablecommon.events.wheel import (
    STATE_NAMES,
    GameStateChanged,
    GameVoided,
    WheelEvent,
    WheelWarning,
    WinningNumber,
)
from tablecommon.wheel import WHEEL_ORDER

__all__ = ["POCKETS", "WheelGeometry", "WheelModel", "pocket_after"]

POCKETS = len(WHEEL_ORDER)  # 37
#: The states of a game in play: armed (2), ball in the rim (3), no more bets (4).
IN_PLAY = (2, 3, 4)
CLOCKWISE, ANTICLOCKWISE = "clockwise", "anticlockwise"


def pocket_after(index_pocket: int, phase: float, direction: str) -> int:
    """The pocket at the ball sensor ``phase`` revolutions after the index pulse."""
    k0 = WHEEL_ORDER.index(index_pocket)
    step = -POCKETS * phase if direction == CLOCKWISE else POCKETS * phase
    return WHEEL_ORDER[round(k0 + step) % POCKETS]


@dataclass(frozen=True)
class WheelGeometry:
    """Calibration and limits (seconds, rpm)."""

    index_pocket: int = 0
    direction: str = "auto"  # "auto" (needs index B), "clockwise", "anticlockwise"
    min_rpm: float = 10.0
    max_rpm: float = 60.0
    settle_revs: int = 2
    launch_quiet_revs: float = 1.5
    period_tolerance: float = 0.15  # a resting ball passes every T * (1 +/- this)
    stall_revs: float = 2.5  # no index pulse for this many periods: rotor stopped
    stall_min: float = 3.0  # ... and at least this many seconds
    ball_timeout: float = 90.0  # armed this long without a settled ball: "no ball"
    arm_delay: float = 5.0  # result shown this long before the next game is armed
    auto_arm: bool = True
    stuck_after: float = 2.0  # a sensor active this long is stuck
    min_pulse: float = 0.0005  # shorter pulses are electrical glitches (the track sensor)
    min_cover: float = 0.25  # the marker and the resting ball cover at least this (pockets)
    min_index_gap: float = 0.5  # index pulses closer than this many periods: chatter
    ball_track: bool = False  # a ball-track sensor is wired: count the ball's revolutions
    track_min_gap: float = 0.15  # track pulses closer than this (s) are one pass bouncing
    track_gap_ratio: float = 0.5  # ... or closer than this share of the last revolution


#: The fastest rotor the driver reads at all (the ceiling of ``max_rpm``; a rotor
#: above the configured ``max_rpm`` is still read, to report ``ROTOR_SPEED``).
FASTEST_RPM = 120.0


def pocket_time(rpm: float) -> float:
    """Seconds one pocket takes to pass a fixed point at ``rpm``."""
    return 60.0 / (rpm * POCKETS)


@dataclass
class _Pulse:
    """One sensor's line, debounced into *passes* (what passed the sensor once).

    Contact chatter (a reed or micro switch, a loose connector) is a burst of short
    closures and openings, 0.5-3 ms in all, at each make and break, and sometimes
    alone (the wheel knocked, nothing passing). Each closure of 0.5 ms or more beats
    an electrical glitch filter, so a burst must not be read as passes:

    - edges closer than ``merge`` to the previous falling edge belong to the same pass
      (a burst's openings are well under it);
    - a pass counts once its closures add up to ``min_width`` (a burst alone never
      does), at the falling edge that reaches it; what follows within ``merge`` is
      that pass's break chatter (``chatter`` counts the closures not taken as a pass);
    - the pass is timed at the centroid of its closed time, so a burst at one end
      moves it by a fraction of a millisecond, not by the burst's length.

    :class:`WheelGeometry` derives both limits from :data:`FASTEST_RPM`; the model's
    docstring says why they hold.
    """

    min_width: float = 0.0005
    merge: float = 0.0
    start: float | None = None
    stuck: bool = False
    last_fall: float | None = None
    taken: bool = False  # the current pass was reported
    closed: float = 0.0  # closed time of the current pass so far
    moment: float = 0.0  # sum of each closure's centre times its length
    pieces: int = 0  # closures of the current pass
    chatter: int = 0  # closures not taken as passes (merged, or a burst alone)
    passes: int = 0  # passes taken

    def rise(self, now: float) -> None:
        if self.last_fall is None or now - self.last_fall >= self.merge:
            self._close_pass()
        self.start = now

    def fall(self, now: float) -> float | None:
        """The pass's time if this falling edge completes one, else None."""
        if self.start is None:
            return None  # a falling edge without its rising edge (started mid-pulse)
        width = now - self.start
        self.closed += width
        self.moment += width * (self.start + now) / 2
        self.pieces += 1
        self.start, self.last_fall = None, now
        if self.taken or self.closed < self.min_width:
            return None
        self.taken = True
        self.passes += 1
        return self.moment / self.closed

    def settle(self, now: float) -> None:
        """The line quiet for ``merge`` since the last falling edge: the pass is over."""
        if self.start is None and self.last_fall is not None and now - self.last_fall >= self.merge:
            self._close_pass()

    def _close_pass(self) -> None:
        self.chatter += self.pieces - 1 if self.taken else self.pieces
        self.taken, self.closed, self.moment, self.pieces = False, 0.0, 0.0, 0


@dataclass
class _Rotor:
    last_index: float | None = None
    period: float | None = None
    direction: str | None = None
    last_a: float | None = None
    last_b: float | None = None
    stopped: bool = True
    speed_fault: str = ""
    speed_kind: str = ""  # "", "slow", "fast"
    fresh: bool = True  # the next index pulse starts a new period measurement


@dataclass
class _Game:
    spin: int = 0
    state: int = 6
    since: float = 0.0
    armed_at: float = 0.0
    quiet_since: float | None = None  # last ball pulse after arming (None: none yet)
    launched: bool = False
    direction: str | None = None
    hits: list[tuple[float, int]] = field(default_factory=list)
    result: int | None = None
    voided: str = ""
    track: list[float] = field(default_factory=list)  # ball-track passes (pulse centres)
    track_fault: str = ""  # why this spin's revolutions are not known


class WheelModel:
    """The GPIO wheel's behaviour; the driver feeds it pin edges with their times."""

    def __init__(self, device: str = "", geometry: WheelGeometry | None = None) -> None:
        self.device = device
        self.geo = geometry or WheelGeometry()
        if self.geo.index_pocket not in WHEEL_ORDER:
            raise ValueError(f"index_pocket {self.geo.index_pocket} is not a pocket")
        self.rotor = _Rotor()
        self.game = _Game()
        # Debounce limits from the fastest rotor (FASTEST_RPM, 120 rpm: one pocket in
        # 13.5 ms): the rotor's marker and the ball resting in a pocket cover at least
        # a quarter pocket, so a real pass is closed >= 3.4 ms even there, longer than
        # a whole chatter burst (<= 3 ms, its closures less); two passes of one sensor
        # are a turn apart (>= 0.5 s), so edges within half a pocket (6.8 ms) of the
        # last falling edge are the same pass. The ball on the track is faster than
        # the rotor (2.2 turns a second on a longer path, about 3.6 ms over the
        # sensor): the track sensor keeps the 0.5 ms glitch filter, and its passes
        # are at least 150 ms apart anyway (track_min_gap).
        pt = pocket_time(FASTEST_RPM)
        width, merge = self.geo.min_cover * pt, 0.5 * pt
        self.pulses = {
            "index": _Pulse(width, merge),
            "index_b": _Pulse(width, merge),
            "ball": _Pulse(width, merge),
            "ball_track": _Pulse(self.geo.min_pulse, merge),
        }
        self.fault: tuple[str, str] | None = None
        self.ignored_ball_pulses = 0
        self.ignored_track_pulses = 0  # outside a game's running ball (after the drop...)
        self.track_bounces = 0  # second pulses of one pass
        self.glitches = 0
        self.results = 0

    # ------------------------------------------------------------------ helpers
    @property
    def chatter(self) -> int:
        """Closures of the sensors' lines not taken as passes (contact chatter)."""
        return sum(p.chatter for p in self.pulses.values())

    @property
    def rpm(self) -> float | None:
        p = self.rotor.period
        return None if p is None or self.rotor.stopped else 60.0 / p

    def _speed10(self) -> int:
        rpm = self.rpm
        return round(rpm * 10) if rpm is not None else 0

    def _direction(self) -> str | None:
        if self.geo.direction in (CLOCKWISE, ANTICLOCKWISE):
            return self.geo.direction
        return self.rotor.direction

    def _warn(self, code: str, message: str, action: str = "warn") -> WheelWarning:
        return WheelWarning(
            device=self.device,
            code=code,
            message=message,
            flags=0,
            flag_names=(),
            state=self.game.state,
            spin=self.game.spin,
            action=action,
            source="gpio-wheel",
        )

    def _set_state(self, state: int, now: float) -> list[WheelEvent]:
        g = self.game
        if state == g.state:
            return []
        prev, g.state, g.since = g.state, state, now
        return [
            GameStateChanged(
                device=self.device,
                state=state,
                state_name=STATE_NAMES[state],
                previous=prev,
                spin=g.spin,
                speed=self._speed10(),
                direction=self._direction() or "unknown",
                monotonic=now,  # the edge's time: the spin's time is timed from state 3
            )
        ]

    def _void(self, reason: str, message: str) -> list[WheelEvent]:
        g = self.game
        if g.voided or g.state not in IN_PLAY:
            return []
        g.voided = reason
        return [
            self._warn(reason, message, "void"),
            GameVoided(
                device=self.device,
                spin=g.spin,
                reason=reason,
                message=message,
                restart_required=False,
                source="gpio-wheel",
            ),
        ]

    # ------------------------------------------------------------------ commands
    def arm(self, now: float) -> list[WheelEvent]:
        """Start a new game (state 2): the next settled ball is its result."""
        if self.rotor.stopped:
            return [self._warn("ROTOR_STOPPED", "cannot start a game: the rotor is not turning")]
        g = self.game
        spin = g.spin + 1
        self.game = _Game(spin=spin, state=g.state, since=now, armed_at=now)
        self.game.direction = self._direction()
        if self.pulses["ball_track"].stuck:
            self.game.track_fault = "the ball-track sensor is stuck active"
        out = self._set_state(2, now)
        if self.geo.direction == "auto" and self.rotor.direction is None:
            out.append(self._warn("DIRECTION_UNKNOWN", "no second index sensor reading yet"))
        return out

    # ------------------------------------------------------------------ sensor edges
    def edge(self, sensor: str, level: bool, now: float) -> list[WheelEvent]:
        """A raw edge of ``sensor`` ("index", "index_b", "ball", "ball_track")."""
        p = self.pulses[sensor]
        out = self.tick(now)  # timeouts first, in the edge's own time base
        if level:
            p.rise(now)
            return out
        was_stuck = p.stuck and p.start is not None
        centre = p.fall(now)
        if was_stuck:
            p.stuck = False
            out.append(
                self._warn(f"{sensor.upper()}_SENSOR_RELEASED", f"{sensor} sensor works again")
            )
            self._refresh_fault()
            if sensor == "ball_track":
                return out  # the end of the stuck pulse is no pass of the ball
        if centre is None:
            return out  # chatter, or a pass not complete yet
        if sensor == "ball_track":
            out += self._track(centre, now)
        elif sensor == "index":
            out += self._index(centre, now)
        elif sensor == "index_b":
            self._index_b(centre)
        else:
            out += self._ball(centre, now)
        return out

    def _pair_gap(self) -> float:
        return 0.25 * self.rotor.period if self.rotor.period else 1.0

    def _index_b(self, t: float) -> None:
        """B shortly after A: clockwise (A is anticlockwise of B)."""
        r = self.rotor
        r.last_b = t
        if r.last_a is not None and 0 < t - r.last_a < self._pair_gap():
            r.direction = CLOCKWISE

    def _index(self, t: float, now: float) -> list[WheelEvent]:
        r = self.rotor
        out: list[WheelEvent] = []
        if (
            r.last_index is not None
            and r.period is not None
            and t - r.last_index < self.geo.min_index_gap * r.period
        ):
            self.glitches += 1  # a second pulse within half a turn: chatter, not a revolution
            return out
        if r.fresh:
            r.period = None  # (re)starting: the time since the last pulse is not a period
            r.fresh = False
        elif r.last_index is not None:
            period = t - r.last_index
            if period > 0:
                r.period = period
        r.last_index = t
        r.last_a = t
        if r.last_b is not None and 0 < t - r.last_b < self._pair_gap():
            r.direction = ANTICLOCKWISE  # B shortly before A
        if r.period is None:
            return out
        was_stopped = r.stopped
        r.stopped = False
        rpm = 60.0 / r.period
        fault = kind = ""
        if rpm < self.geo.min_rpm:
            kind, fault = "slow", f"rotor at {rpm:.1f} rpm, below {self.geo.min_rpm:g}"
        elif rpm > self.geo.max_rpm:
            kind, fault = "fast", f"rotor at {rpm:.1f} rpm, above {self.geo.max_rpm:g}"
        if kind and kind != r.speed_kind:
            out.append(self._warn("ROTOR_SPEED", fault))
        r.speed_fault, r.speed_kind = fault, kind
        g = self.game
        d = self._direction()
        if d and g.direction and d != g.direction and g.state in (3, 4):
            # Reversing the rotor between games (state 2) is normal; with the ball
            # running in the rim or dropping into the pockets it is not.
            where = "in the rim" if g.state == 3 else "in the pockets"
            out += self._void(
                "DIRECTION_CHANGED",
                f"the rotor reversed ({g.direction} -> {d}) with the ball {where}",
            )
        if g.state in IN_PLAY and g.result is None:
            g.direction = d
        if was_stopped:
            if self.geo.direction not in ("auto", d) and d is not None:
                out.append(self._warn("WRONG_DIRECTION", f"rotor turns {d}"))
            if self.geo.auto_arm and g.state in (5, 6):
                out += self.arm(now)
        self._refresh_fault()
        return out

    def _track(self, t: float, now: float) -> list[WheelEvent]:
        """A pass of the ball-track sensor: one revolution of the running ball, counted
        from the game's opening until the ball drops (state 4). The first is the ball
        in the rim (state 3): from there to the result is the spin's time, which the
        integrity monitor bounds (``spin_min_ms``, ``spin_max_ms``)."""
        g = self.game
        if not self.geo.ball_track or g.state not in (2, 3) or g.result is not None:
            self.ignored_track_pulses += 1  # after the drop, after the result, no game
            return []
        if g.track:
            last = t - g.track[-1]
            prev = g.track[-1] - g.track[-2] if len(g.track) > 1 else 0.0
            if last < max(self.geo.track_min_gap, self.geo.track_gap_ratio * prev):
                self.track_bounces += 1  # the same pass seen twice (reflection, bounce)
                return []
        g.track.append(t)
        return self._set_state(3, now) if g.state == 2 else []

    def _ball(self, t: float, now: float) -> list[WheelEvent]:
        g = self.game
        out: list[WheelEvent] = []
        if g.state not in IN_PLAY or g.result is not None:
            self.ignored_ball_pulses += 1  # the ball resting after a result, or no game
            return out
        if not g.launched:
            # the previous ball is still in its pocket (or the croupier holds it)
            g.quiet_since = t
            self.ignored_ball_pulses += 1
            return out
        if g.state in (2, 3):
            out += self._set_state(4, now)  # the ball is dropping into the pockets
        r = self.rotor
        d = self._direction()
        if r.period is None or r.last_index is None or d is None or r.stopped:
            return out
        phase = ((t - r.last_index) / r.period) % 1.0
        pocket = pocket_after(self.geo.index_pocket, phase, d)
        tol = self.geo.period_tolerance * r.period
        if g.hits and abs((t - g.hits[-1][0]) - r.period) <= tol and g.hits[-1][1] == pocket:
            g.hits.append((t, pocket))
        else:
            g.hits = [(t, pocket)]  # a bounce, or the first pass of a resting ball
        if len(g.hits) >= self.geo.settle_revs:
            g.result = pocket
            self.results += 1
            revs, rev_ms = self._revolutions()
            if self.geo.ball_track and revs is None:
                why = g.track_fault or "the ball-track sensor gave no pulse"
                out.append(
                    self._warn("BALL_REVS_UNKNOWN", f"spin {g.spin}: revolutions unknown: {why}")
                )
            out += self._set_state(5, now)
            out.append(
                WinningNumber(
                    device=self.device,
                    number=pocket,
                    pocket=str(pocket),
                    spin=g.spin,
                    direction=d,
                    speed=self._speed10(),
                    confirmed_by=f"{len(g.hits)} passes",
                    void_reason=g.voided,
                    ball_revs=revs,
                    ball_rev_ms=rev_ms,
                    monotonic=now,
                )
            )
        return out

    def _revolutions(self) -> tuple[int | None, tuple[int, ...]]:
        """The spin's ball revolutions (passes of the track sensor) and the time of each
        revolution after the first pass, ms; None when not known (no sensor, none seen,
        the sensor stuck during the spin)."""
        g = self.game
        if not self.geo.ball_track or g.track_fault or not g.track:
            return None, ()
        ms = tuple(round((b - a) * 1000) for a, b in pairwise(g.track))
        return len(g.track), ms

    # ------------------------------------------------------------------ time
    def tick(self, now: float) -> list[WheelEvent]:
        """Timeouts: call regularly (the driver does, every 100 ms)."""
        out: list[WheelEvent] = []
        r, g, geo = self.rotor, self.game, self.geo
        for name, p in self.pulses.items():
            p.settle(now)
            if p.start is not None and not p.stuck and now - p.start > geo.stuck_after:
                p.stuck = True
                track = name == "ball_track"  # the result is still read: not a wheel fault
                out.append(
                    self._warn(
                        f"{name.upper()}_SENSOR_STUCK",
                        f"{name} sensor stuck active",
                        "warn" if track else "fault",
                    )
                )
                if track and g.state in IN_PLAY and g.result is None:
                    g.track_fault = "the ball-track sensor stuck active during the spin"
                if name == "ball":
                    out += self._void("BALL_SENSOR_STUCK", "the ball sensor is stuck active")
        if r.last_index is not None and not r.stopped:
            limit = max(geo.stall_min, geo.stall_revs * (r.period or geo.stall_min))
            if now - r.last_index > limit:
                r.stopped = r.fresh = True
                out.append(
                    self._warn("ROTOR_STOPPED", f"no index pulse for {limit:.1f} s", "fault")
                )
                out += self._void("ROTOR_STOPPED", "the rotor stopped during the game")
                out += self._set_state(6, now)
        if g.state in (2, 3) and not g.launched and r.period is not None:
            quiet_from = g.quiet_since if g.quiet_since is not None else g.armed_at
            if now - quiet_from >= geo.launch_quiet_revs * r.period:
                g.launched = True
        if g.state in IN_PLAY and g.result is None and now - g.armed_at > geo.ball_timeout:
            out += self._void("NO_BALL", f"no ball settled within {geo.ball_timeout:g} s")
        if g.state == 5 and geo.auto_arm and now - g.since >= geo.arm_delay and not r.stopped:
            out += self.arm(now)
        self._refresh_fault()
        return out

    def _refresh_fault(self) -> None:
        stuck = [n for n, p in self.pulses.items() if p.stuck and n != "ball_track"]
        if stuck:
            self.fault = (f"{stuck[0].upper()}_SENSOR_STUCK", f"{stuck[0]} sensor stuck active")
        elif self.rotor.stopped and self.rotor.period is not None:
            self.fault = ("ROTOR_STOPPED", "the rotor is not turning")
        elif self.rotor.speed_fault:
            self.fault = ("ROTOR_SPEED", self.rotor.speed_fault)
        else:
            self.fault = None

    def snapshot(self) -> dict[str, object]:
        g = self.game
        track: dict[str, object] = {}
        if self.geo.ball_track:
            track = {
                "ball_revs": len(g.track),
                "ignored_track_pulses": self.ignored_track_pulses,
                "track_bounces": self.track_bounces,
            }
        return {
            "state": g.state,
            "state_name": STATE_NAMES[g.state],
            "spin": g.spin,
            "rpm": round(self.rpm, 2) if self.rpm is not None else None,
            "direction": self._direction(),
            "launched": g.launched,
            "result": g.result,
            "void_reason": g.voided,
            "results": self.results,
            "ignored_ball_pulses": self.ignored_ball_pulses,
            "glitches": self.glitches,
            "chatter": self.chatter,
            **track,
        }
