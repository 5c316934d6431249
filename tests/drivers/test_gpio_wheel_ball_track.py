"""The GPIO wheel's ball-track sensor: the ball's revolutions of each spin.

The simulator's ball slows down evenly on the track and passes the track sensor once
a turn; it keeps the pulses it drove (``last_track_passes``, ``last_track_times``):
the reference the driver's count is checked against. The driver knows only the pin.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from itertools import pairwise
from typing import Any

import pytest
from gpiozero.pins.mock import MockFactory

from drivers.base import DeviceEvent, HealthState
from drivers.cammegh.events import WheelWarning, WinningNumber
from drivers.gpio_wheel.driver import GpioWheelDriver
from drivers.gpio_wheel.model import WheelModel
from drivers.gpio_wheel.sim import GpioWheelSim, VirtualClock
from drivers.registry import validate_devices

INDEX, INDEX_B, BALL, TRACK = 5, 13, 6, 19


class Rig:
    def __init__(self, driver: GpioWheelDriver, sim: GpioWheelSim) -> None:
        self.driver = driver
        self.sim = sim
        self.sub = driver.events()
        self.events: list[DeviceEvent] = []

    def of(self, cls: type[Any]) -> list[Any]:
        while (ev := self.sub.get_nowait()) is not None:
            self.events.append(ev)
        return [e for e in self.events if isinstance(e, cls)]

    def warnings(self) -> list[str]:
        return [w.code for w in self.of(WheelWarning)]

    @property
    def model(self) -> WheelModel:
        return self.driver.model


@pytest.fixture
async def make() -> AsyncIterator[Any]:
    rigs: list[Rig] = []

    async def build(seed: int = 3, track: bool = True, sim_kw: Any = None, **settings: Any) -> Rig:
        factory = MockFactory()
        clock = VirtualClock()
        sim = GpioWheelSim(
            factory, index_pin=INDEX, ball_pin=BALL, index_b_pin=INDEX_B,
            ball_track_pin=TRACK if track else None, clock=clock, seed=seed, **(sim_kw or {}),
        )  # fmt: skip
        cfg: dict[str, Any] = {
            "index_pin": INDEX, "index_b_pin": INDEX_B, "ball_pin": BALL,
            "index_pocket": sim.calibrate(), "arm_delay_ms": 1000, **settings,
        }  # fmt: skip
        if track:
            cfg["ball_track_pin"] = TRACK
        driver = GpioWheelDriver("wheel", cfg, pin_factory=factory, clock=clock,
                                 tick_interval=0.005)  # fmt: skip
        rig = Rig(driver, sim)
        rigs.append(rig)
        await driver.start()
        await sim.run(5.0)  # the rotor turns: the wheel arms its first game
        return rig

    yield build
    for rig in rigs:
        await rig.driver.stop()


def intervals_ms(times: list[float]) -> list[int]:
    return [round((b - a) * 1000) for a, b in pairwise(times)]


async def test_each_result_carries_the_revolutions_the_simulator_drove(make: Any) -> None:
    rig = await make()
    expected: list[tuple[int, int | None]] = []
    times: list[list[float]] = []
    for n in (17, 0, 32, 5, 26, 11, 2, 36):
        assert await rig.sim.spin(n) == n
        expected.append((n, rig.sim.last_track_passes))
        times.append(list(rig.sim.last_track_times))
        rig.of(WinningNumber)  # collect as we go (a subscriber's queue is bounded)
    await rig.sim.run(2)
    wins = rig.of(WinningNumber)
    assert [(w.number, w.ball_revs) for w in wins] == expected
    for w, t in zip(wins, times, strict=True):
        assert len(w.ball_rev_ms) == len(t) - 1
        # the driver times pulse centres, the simulator knows them exactly: within 1 ms
        assert all(abs(a - b) <= 1 for a, b in zip(w.ball_rev_ms, intervals_ms(t), strict=True))
        # the ball slows down: every revolution takes longer than the one before
        assert list(w.ball_rev_ms) == sorted(w.ball_rev_ms)
    revs = [r for _, r in expected if r is not None]
    assert len(revs) == 8 and all(5 <= r <= 18 for r in revs)  # mean 11, sd 2
    assert "BALL_REVS_UNKNOWN" not in rig.warnings()
    status = rig.driver.get_status()["wheel"]  # the next game is open, no ball yet
    assert status["state"] == 2 and status["ball_revs"] == 0


@pytest.mark.parametrize("seed", range(12))
async def test_seeded_pulse_trains_with_bounces_chatter_and_strays(make: Any, seed: int) -> None:
    """Fuzzed trains: reflections (a second pulse 20-60 ms after a pass), electrical
    chatter (flickers under 0.5 ms), stray pulses once the ball is in the pockets, and
    the number of revolutions drawn per spin, all from the seed; the count must be the
    simulator's reference count of real passes every time."""
    import random

    rng = random.Random(seed)
    rig = await make(seed=seed, sim_kw={
        "chatter": rng.choice((0, 2, 3)), "track_bounce": rng.uniform(0.0, 0.6),
        "track_after_drop": rng.randrange(4), "ball_revs_mean": rng.uniform(6, 16),
    })  # fmt: skip
    expected, strays = [], 0
    for _ in range(4):
        rpm = rng.uniform(18, 35)
        revs = rng.choice((None, rng.uniform(2, 30)))
        await rig.sim.spin(rpm=rpm, ball_revs=revs, bounces=rng.randrange(4))
        expected.append(rig.sim.last_track_passes)
        strays += rig.sim.last_strays
        rig.of(WinningNumber)  # collect as we go (a subscriber's queue is bounded)
    await rig.sim.run(2)
    assert [w.ball_revs for w in rig.of(WinningNumber)] == expected
    assert rig.model.ignored_track_pulses >= strays


async def test_reflections_are_one_pass(make: Any) -> None:
    rig = await make(sim_kw={"track_bounce": 1.0})  # every pass seen twice
    await rig.sim.spin(9, ball_revs=10.5)
    await rig.sim.run(1)
    (win,) = rig.of(WinningNumber)
    assert win.ball_revs == rig.sim.last_track_passes in (10, 11)
    assert rig.model.track_bounces == win.ball_revs


async def test_pulses_after_the_drop_are_not_revolutions(make: Any) -> None:
    rig = await make(sim_kw={"track_after_drop": 6})
    await rig.sim.spin(4, ball_revs=8.2, bounces=2)
    await rig.sim.run(1)
    (win,) = rig.of(WinningNumber)
    assert win.ball_revs == rig.sim.last_track_passes in (8, 9)
    assert rig.model.ignored_track_pulses >= 6


async def test_no_pulse_at_all_is_a_sensor_fault_not_zero_revolutions(make: Any) -> None:
    rig = await make(sim_kw={"track_dead": True})
    await rig.sim.spin(21)
    await rig.sim.run(1)
    (win,) = rig.of(WinningNumber)
    assert win.number == 21 and win.ball_revs is None and win.ball_rev_ms == ()
    assert rig.warnings() == ["BALL_REVS_UNKNOWN"]
    (w,) = rig.of(WheelWarning)
    assert "no pulse" in w.message and w.spin == win.spin
    # the result itself is good: the wheel stays in play
    assert rig.driver.health.state is HealthState.ONLINE


async def test_a_stuck_track_sensor_leaves_that_spin_unknown_and_play_on(make: Any) -> None:
    rig = await make(stuck_ms=1000)
    rig.sim.stick("ball_track")
    await rig.sim.run(2.0)
    assert rig.warnings() == ["BALL_TRACK_SENSOR_STUCK"]
    assert rig.driver.health.state is HealthState.ONLINE  # results are still read
    rig.sim.stick("ball_track", False)  # released: its falling edge is no pass
    await rig.sim.spin(30, ball_revs=9.5)
    await rig.sim.run(1)
    (win,) = rig.of(WinningNumber)
    assert win.number == 30 and win.ball_revs is None
    assert rig.warnings() == [
        "BALL_TRACK_SENSOR_STUCK", "BALL_TRACK_SENSOR_RELEASED", "BALL_REVS_UNKNOWN",
    ]  # fmt: skip
    assert "stuck" in rig.of(WheelWarning)[-1].message
    await rig.sim.spin(8, ball_revs=12.5)  # the next spin is counted again
    await rig.sim.run(1)
    assert rig.of(WinningNumber)[-1].ball_revs == rig.sim.last_track_passes in (12, 13)


async def test_without_the_pin_nothing_changes(make: Any) -> None:
    rig = await make(track=False)
    assert not GpioWheelDriver.reports_ball_revs(rig.driver.settings)
    got = [await rig.sim.spin(n) for n in (3, 14)]
    await rig.sim.run(1)
    wins = rig.of(WinningNumber)
    assert [w.number for w in wins] == got
    assert all(w.ball_revs is None for w in wins)
    assert "BALL_REVS_UNKNOWN" not in rig.warnings()
    assert "ball_revs" not in rig.driver.get_status()["wheel"]


def test_the_pin_is_a_device_setting_and_claims_its_pin() -> None:
    wheel = {"driver": "gpio-wheel", "index_pin": 5, "ball_pin": 6, "direction": "clockwise"}
    errors: list[str] = []
    devices = validate_devices({"wheel": {**wheel, "ball_track_pin": 19}}, "devices", errors)
    assert errors == [] and GpioWheelDriver.reports_ball_revs(devices["wheel"].settings)
    errors = []
    validate_devices({"wheel": {**wheel, "ball_track_pin": 6}}, "devices", errors)
    assert errors and "6" in errors[0]  # the ball sensor's pin claimed twice
    errors = []
    validate_devices({"wheel": {**wheel, "ball_track_pin": 99}}, "devices", errors)
    assert errors and "ball_track_pin" in errors[0]


def test_a_pass_outside_the_running_ball_is_not_counted() -> None:
    """Sans I/O: a pass before the game is armed, or after its result, is ignored."""
    m = WheelModel("w", None)
    m.geo = type(m.geo)(direction="clockwise", ball_track=True)
    for k in range(4):  # the rotor turns at 30 rpm: a game opens
        m.edge("index", True, 2.0 * k)
        m.edge("index", False, 2.0 * k + 0.01)
    assert m.game.state == 2
    before = m.ignored_track_pulses
    m.game.state, m.game.since = 5, 8.0  # a result shown; the croupier launched too early
    m.edge("ball_track", True, 8.1)
    m.edge("ball_track", False, 8.105)
    assert m.ignored_track_pulses == before + 1 and m.game.track == []
