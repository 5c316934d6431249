"""The GPIO wheel under realistic contact chatter, and its "ball in the rim" state.

Chatter (``GpioWheelSim(bounce_ms=...)``): at each make and break of every pulse, a
burst of closures of 0.5-1.2 ms (each longer than a 0.5 ms glitch filter) and
openings of 0.2-0.8 ms, 0.5 ms to ``bounce_ms`` long in all; ``noise_bursts``: such
bursts on the ball pin with nothing passing (the wheel knocked while the ball runs).
Before the debounce (``drivers/gpio_wheel/model.py``, ``_Pulse``) such chatter at 8
rpm lost every result (the index's chatter measured a period of a millisecond) and a
burst alone after the launch closed betting and could cost a result.

The reference is the simulator's: the numbers it rested the ball in, and the real
pulses it drove on each pin (``sim.driven``); the driver's passes must be those, no
more, no fewer.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from gpiozero.pins.mock import MockFactory

from drivers.base import DeviceEvent, HealthState
from drivers.gpio_wheel.driver import GpioWheelDriver
from drivers.gpio_wheel.model import FASTEST_RPM, WheelGeometry, WheelModel, pocket_time
from drivers.gpio_wheel.sim import GpioWheelSim, VirtualClock
from tablecommon.events.wheel import GameStateChanged, GameVoided, WinningNumber

INDEX, INDEX_B, BALL, TRACK = 5, 13, 6, 19


class Rig:
    def __init__(self, driver: GpioWheelDriver, sim: GpioWheelSim) -> None:
        self.driver, self.sim = driver, sim
        self.sub = driver.events()
        self.events: list[DeviceEvent] = []

    def of(self, cls: type[Any]) -> list[Any]:
        while (ev := self.sub.get_nowait()) is not None:
            self.events.append(ev)
        return [e for e in self.events if isinstance(e, cls)]


@pytest.fixture
async def make() -> AsyncIterator[Any]:
    rigs: list[Rig] = []

    async def build(
        seed: int = 3, track: bool = False, sim_kw: Any = None, rpm: float = 30, **settings: Any
    ) -> Rig:
        factory = MockFactory()
        clock = VirtualClock()
        sim = GpioWheelSim(
            factory, index_pin=INDEX, ball_pin=BALL, index_b_pin=INDEX_B,
            ball_track_pin=TRACK if track else None, clock=clock, seed=seed, **(sim_kw or {}),
        )  # fmt: skip
        cfg: dict[str, Any] = {
            "index_pin": INDEX, "index_b_pin": INDEX_B, "ball_pin": BALL,
            "index_pocket": sim.calibrate(), "arm_delay_ms": 1000, "min_rpm": 5, **settings,
        }  # fmt: skip
        if track:
            cfg["ball_track_pin"] = TRACK
        driver = GpioWheelDriver("wheel", cfg, pin_factory=factory, clock=clock,
                                 tick_interval=0.005)  # fmt: skip
        rig = Rig(driver, sim)
        rigs.append(rig)
        await driver.start()
        sim.rpm = rpm
        await sim.run(4 * 60 / rpm)  # the rotor turns: the wheel arms its first game
        return rig

    yield build
    for rig in rigs:
        await rig.driver.stop()


def passes(model: WheelModel) -> dict[str, int]:
    return {name: p.passes for name, p in model.pulses.items() if p.passes}


# ------------------------------------------------------------------ through the pins
@pytest.mark.parametrize("rpm", [8, 12, 35, 55])
@pytest.mark.parametrize("bounce_ms", [0.5, 1.5, 3.0])
async def test_chatter_at_low_and_high_rotor_speeds_changes_no_pass(
    make: Any, rpm: float, bounce_ms: float
) -> None:
    """Every pulse chattering at make and break: each real pulse is one pass (index A,
    index B, ball), every result read, none extra, no void; the chatter was there."""
    rig = await make(rpm=rpm, sim_kw={"bounce_ms": bounce_ms})
    expected = [await rig.sim.spin(rpm=rpm, bounces=0) for _ in range(4)]
    await rig.sim.run(2 * 60 / rpm)
    assert [w.number for w in rig.of(WinningNumber)] == expected
    assert not rig.of(GameVoided)
    assert passes(rig.driver.model) == rig.sim.driven
    # at least a closure a burst (a pass's break chatter is counted once the pass is over:
    # the last pass of each pin may still be open)
    assert rig.driver.model.chatter >= rig.sim.bursts - 2 * len(rig.sim.driven) > 0
    assert rig.driver.health.state is HealthState.ONLINE
    wins = rig.of(WinningNumber)
    assert all(abs(w.speed - rpm * 10) <= 2 for w in wins)  # the period is the rotor's


@pytest.mark.parametrize("rpm", [8, 30, 55])
@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_bursts_with_nothing_passing_and_a_bouncing_ball(
    make: Any, rpm: float, seed: int
) -> None:
    """Bursts alone on the ball pin while the ball runs (4 a spin), the ball bouncing in
    the pockets, chatter on every pulse: the results are the simulator's, no void, and
    no burst closed betting: state 4 once a game, after the launch."""
    rig = await make(seed=seed, rpm=rpm, sim_kw={"bounce_ms": 3.0, "noise_bursts": 4})
    expected = [await rig.sim.spin(rpm=rpm, bounces=3) for _ in range(4)]
    await rig.sim.run(2 * 60 / rpm)
    assert [w.number for w in rig.of(WinningNumber)] == expected
    assert not rig.of(GameVoided)
    states = [e.state for e in rig.of(GameStateChanged)]
    assert states.count(4) == 4 and states.count(5) == 4
    assert rig.sim.bursts > 4 * 4


@pytest.mark.parametrize("rpm", [10, 50])
async def test_ball_in_the_rim_with_chatter_on_the_track_sensor(make: Any, rpm: float) -> None:
    """With a ball-track sensor: 2 -> 3 (the first track pass) -> 4 -> 5 every game,
    state 3 at the simulator's first pass of the running ball, the revolutions the
    simulator's, chatter on every sensor."""
    rig = await make(track=True, rpm=rpm, sim_kw={"bounce_ms": 3.0})
    firsts, revs = [], []
    for _ in range(3):
        await rig.sim.spin(rpm=rpm, bounces=1)
        firsts.append(rig.sim.last_track_times[0])
        revs.append(rig.sim.last_track_passes)
    await rig.sim.run(2 * 60 / rpm)
    changes = rig.of(GameStateChanged)
    states = [e.state for e in changes]
    assert states == [2] + [3, 4, 5, 2] * 3
    rims = [e for e in changes if e.state == 3]
    # announced at the falling edge that makes the first pass (the track sensor takes a
    # closure of 0.5 ms: the ball is over it for only about 4 ms): within its chatter
    assert all(abs(e.monotonic - t) < 0.004 for e, t in zip(rims, firsts, strict=True))
    wins = rig.of(WinningNumber)
    assert [w.ball_revs for w in wins] == revs
    assert all(w.monotonic > e.monotonic for w, e in zip(wins, rims, strict=True))
    assert not rig.of(GameVoided)


async def test_without_a_track_sensor_there_is_no_state_3(make: Any) -> None:
    rig = await make(sim_kw={"bounce_ms": 1.0})
    await rig.sim.spin(17)
    await rig.sim.run(2)
    assert [e.state for e in rig.of(GameStateChanged)][:3] == [2, 4, 5]
    assert not GpioWheelDriver.reports_ball_in_rim({"ball_track_pin": None})
    assert GpioWheelDriver.reports_ball_in_rim({"ball_track_pin": 19})


async def test_the_spin_time_checks_run_on_the_gpio_wheel(make: Any, tmp_path: Any) -> None:
    """The integrity monitor times the spin from the GPIO wheel's state 3: a band the
    simulated spins fall outside raises SPIN_TOO_FAST, then SPIN_TOO_SLOW, each with
    the time the simulator ran (first track pass to the result)."""
    from firmware_host.auth import TableIdentity
    from firmware_host.integrity.alerts import Alerts
    from firmware_host.integrity.monitor import IntegrityMonitor
    from firmware_host.integrity.settings import IntegritySettings
    from firmware_host.journal import Journal
    from firmware_host.table.extension import TableExtensions

    def monitor(**settings: Any) -> tuple[IntegrityMonitor, Journal]:
        path = tmp_path / f"j{len(list(tmp_path.iterdir()))}.sqlite3"
        j = Journal(path, identity=TableIdentity.generate())
        mon = IntegrityMonitor(
            TableExtensions(), alerts=Alerts(j.alerts, j.db), chain=j.chain, table_id="T1",
            result_device="wheel", settings=IntegritySettings(**settings), wheel_name="wheel",
        )  # fmt: skip
        return mon, j

    rig = await make(track=True, sim_kw={"bounce_ms": 2.0})
    await rig.sim.spin(rpm=25, bounces=1, ball_revs=12)
    await rig.sim.run(3)
    rim = next(e for e in rig.of(GameStateChanged) if e.state == 3)
    win = rig.of(WinningNumber)[0]
    took = round((win.monotonic - rim.monotonic) * 1000)
    assert 5000 < took < 20000  # 12 revolutions slowing from 2 to 0.7 a second, then rest
    for band, code in (({"spin_min_ms": took + 500}, "SPIN_TOO_FAST"),
                       ({"spin_max_ms": took - 500}, "SPIN_TOO_SLOW"),
                       ({"spin_min_ms": took - 500, "spin_max_ms": took + 500}, None)):  # fmt: skip
        mon, j = monitor(**band)
        for ev in rig.of(GameStateChanged) + rig.of(WinningNumber):
            await mon.on_device_event("wheel", ev)
        found = [a for a in j.alerts.active() if a.code.startswith("SPIN_")]
        assert [a.code for a in found] == ([code] if code else [])
        if code:
            assert found[0].evidence["ms"] == took


def test_spin_bounds_need_a_wheel_that_sees_the_ball_in_the_rim(tmp_path: Any) -> None:
    """check-config: spin_min_ms / spin_max_ms with a gpio-wheel without a ball-track
    sensor could never fire: an error naming the device; with the sensor, none."""
    from drivers.registry import DeviceConfig
    from firmware_host.integrity.settings import IntegritySettings, spin_time_problems

    def wheel(**extra: Any) -> DeviceConfig:
        settings = {"index_pin": 5, "index_b_pin": 13, "ball_pin": 6, **extra}
        return DeviceConfig(name="wheel", kind="wheel", driver="gpio-wheel", settings=settings)

    bound = IntegritySettings(spin_min_ms=15000)
    (problem,) = spin_time_problems(bound, [wheel()])
    assert problem.startswith("integrity.spin_min_ms:") and "devices.wheel (gpio-wheel)" in problem
    assert spin_time_problems(bound, [wheel(ball_track_pin=19)]) == []
    assert spin_time_problems(IntegritySettings(), [wheel()]) == []
    ss2 = DeviceConfig(name="w", kind="wheel", driver="cammegh-ss2", settings={"port": "x"})
    assert spin_time_problems(bound, [ss2]) == []


# ------------------------------------------------------------------ sans I/O
def _model() -> WheelModel:
    m = WheelModel("w", WheelGeometry(direction="clockwise", ball_track=True, min_rpm=5))
    return m


def _burst(m: WheelModel, sensor: str, t: float, closures: list[tuple[float, float]]) -> list[Any]:
    out = []
    for on, off in closures:
        out += m.edge(sensor, True, t + on)
        out += m.edge(sensor, False, t + off)
    return out


def test_the_limits_follow_from_the_fastest_rotor() -> None:
    """A quarter pocket at 120 rpm (3.38 ms) is more than a 3 ms burst; half a pocket
    (6.76 ms) is less than the time between two passes of one sensor at that speed."""
    pt = 60 / (FASTEST_RPM * 37)
    assert pocket_time(FASTEST_RPM) == pytest.approx(pt) == pytest.approx(0.013514, abs=1e-6)
    ball = WheelModel("w").pulses["ball"]
    assert ball.min_width == pytest.approx(pt / 4) and ball.min_width > 0.003
    assert ball.merge == pytest.approx(pt / 2) and ball.merge < 60 / FASTEST_RPM


def test_a_burst_alone_is_no_pass_and_a_chattering_pass_is_one_timed_at_its_centre() -> None:
    m = _model()
    for k in range(4):  # the rotor at 8 rpm (7.5 s a turn): a game opens
        _burst(m, "index", 7.5 * k, [(0.0, 0.0006), (0.0009, 0.0016), (0.002, 0.12)])
    m.tick(30.0)
    assert m.game.state == 2 and m.rpm == pytest.approx(8.0, abs=0.01)
    m.game.launched = True
    # a burst of three 0.8-0.9 ms closures, 2.9 ms in all, nothing passing
    out = _burst(m, "ball", 31.0, [(0.0, 0.0008), (0.0011, 0.002), (0.0021, 0.0029)])
    out += m.tick(31.1)
    assert m.game.state == 2 and not out and m.pulses["ball"].passes == 0
    assert m.pulses["ball"].chatter == 3
    # a pass 100 ms long with 2 ms of chatter at its make and its break: one pass
    before = m.ignored_ball_pulses
    closures = [(0.0, 0.0006), (0.001, 0.0017), (0.002, 0.100), (0.1004, 0.1011), (0.1015, 0.1021)]
    out = _burst(m, "ball", 32.0, closures)
    assert [e.state for e in out if isinstance(e, GameStateChanged)] == [4]
    assert m.pulses["ball"].passes == 1 and m.ignored_ball_pulses == before
    (hit,) = m.game.hits
    assert hit[0] == pytest.approx(32.05, abs=0.0005)  # the centroid, not the burst's start


def test_edges_of_one_pass_are_merged_only_within_half_a_pocket_at_120_rpm() -> None:
    """Two real closures 8 ms apart (more than the merge window) are two candidates;
    the second alone is long enough to be a pass, so exactly one pass is taken."""
    m = _model()
    _burst(m, "ball", 1.0, [(0.0, 0.002), (0.010, 0.020)])
    assert m.pulses["ball"].passes == 1 and m.pulses["ball"].chatter == 1


def test_a_stuck_sensor_still_releases_with_chatter() -> None:
    m = _model()
    m.edge("ball", True, 1.0)
    out = m.tick(3.5)
    assert any(getattr(e, "code", "") == "BALL_SENSOR_STUCK" for e in out)
    out = m.edge("ball", False, 3.6)  # released, chattering
    out += _burst(m, "ball", 3.6, [(0.0004, 0.0011), (0.0015, 0.0021)])
    codes = [getattr(e, "code", "") for e in out]
    assert codes.count("BALL_SENSOR_RELEASED") == 1
    assert m.fault is None or m.fault[0] != "BALL_SENSOR_STUCK"


def test_the_reference_counts_of_the_simulator() -> None:
    """The simulator's own counts (the reference) are of real pulses, chatter aside."""

    async def run() -> GpioWheelSim:
        sim = GpioWheelSim(MockFactory(), index_pin=INDEX, ball_pin=BALL, clock=VirtualClock(),
                           bounce_ms=3.0)  # fmt: skip
        sim.rpm = 30
        await sim.run(10.0)  # 5 turns
        return sim

    sim = asyncio.run(run())
    assert sim.driven == {"index": 5} and sim.bursts == 10


async def test_the_rotor_reversed_with_the_ball_in_the_rim_voids(make: Any) -> None:
    """State 3 is in play: a reversal then voids the game, as in state 4 (in state 2,
    between games, it is normal)."""
    rig = await make(track=True, sim_kw={"bounce_ms": 1.0})
    t = rig.sim.clock.t
    await rig.sim.run(1.0, track=[(t + 0.5, 0.004)])  # the ball launched: one track pass
    assert [e.state for e in rig.of(GameStateChanged)][-1] == 3
    rig.sim.direction = "anticlockwise"
    await rig.sim.run(6.0)
    (void,) = rig.of(GameVoided)
    assert void.reason == "DIRECTION_CHANGED" and "in the rim" in void.message


@pytest.mark.parametrize("seed", range(12))
async def test_seeded_sessions_with_chatter_at_every_speed(make: Any, seed: int) -> None:
    """Longer sessions: a rotor speed drawn per session (6-58 rpm), bursts up to 3 ms on
    every pulse and alone while the ball runs, the ball bouncing, 12 spins: every result
    the simulator's, every real pulse one pass, no void."""
    import random

    rng = random.Random(seed)
    rpm = rng.uniform(6, 58)
    rig = await make(seed=seed, rpm=rpm, sim_kw={"bounce_ms": rng.uniform(0.5, 3.0),
                                                 "noise_bursts": rng.randrange(0, 4)})  # fmt: skip
    expected = []
    for _ in range(12):
        expected.append(await rig.sim.spin(rpm=rpm, bounces=rng.randrange(0, 4)))
        rig.of(WinningNumber)  # collect as we go (a subscriber's queue is bounded)
    await rig.sim.run(2 * 60 / rpm)
    assert [w.number for w in rig.of(WinningNumber)] == expected
    assert not rig.of(GameVoided)
