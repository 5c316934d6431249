"""Roulette wheel on GPIO, with gpiozero's MockFactory driven by a physical wheel model.

The simulator knows only geometry (sensor positions, the marker, pockets laid out
clockwise in the single-zero order); the driver only its calibration constant
(``index_pocket``, read off the simulated wheel like a technician would) and the
pulse times. Virtual time: many revolutions per test in milliseconds.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from gpiozero.pins.mock import MockFactory

from drivers.base import DeviceEvent, HealthState
from drivers.cammegh.events import GameStateChanged, GameVoided, WheelWarning, WinningNumber
from drivers.gpio_wheel.driver import GpioWheelDriver
from drivers.gpio_wheel.model import pocket_after
from drivers.gpio_wheel.sim import GpioWheelSim, VirtualClock
from firmware_host.games.roulette import WHEEL_ORDER

INDEX, INDEX_B, BALL = 5, 13, 6


class Rig:
    def __init__(self, driver: GpioWheelDriver, sim: GpioWheelSim) -> None:
        self.driver = driver
        self.sim = sim
        self.sub = driver.events()
        self.events: list[DeviceEvent] = []

    def drain(self) -> list[DeviceEvent]:
        while (ev := self.sub.get_nowait()) is not None:
            self.events.append(ev)
        return self.events

    def of(self, cls: type[Any]) -> list[Any]:
        return [e for e in self.drain() if isinstance(e, cls)]

    def numbers(self) -> list[int]:
        return [e.number for e in self.of(WinningNumber)]

    async def ticked(self) -> None:
        """Let the driver's periodic tick see the virtual clock (timeouts without edges)."""
        await asyncio.sleep(0.05)


def health_of(driver: Any) -> HealthState:
    """The driver's health now (a call, so mypy does not narrow it across awaits)."""
    state: HealthState = driver.health.state
    return state


@pytest.fixture
async def make() -> AsyncIterator[Any]:
    rigs: list[Rig] = []

    async def build(second_sensor: bool = True, sim_kw: Any = None, **settings: Any) -> Rig:
        factory = MockFactory()
        clock = VirtualClock()
        sim = GpioWheelSim(
            factory,
            index_pin=INDEX,
            ball_pin=BALL,
            index_b_pin=INDEX_B if second_sensor else None,
            clock=clock,
            seed=3,
            **(sim_kw or {}),
        )
        cfg: dict[str, Any] = {
            "index_pin": INDEX,
            "ball_pin": BALL,
            "index_pocket": sim.calibrate(),
            "arm_delay_ms": 1000,
            **settings,
        }
        if second_sensor:
            cfg["index_b_pin"] = INDEX_B
        driver = GpioWheelDriver(
            "wheel", cfg, pin_factory=factory, clock=clock, tick_interval=0.005
        )
        rig = Rig(driver, sim)
        rigs.append(rig)
        await driver.start()
        await sim.run(5.0)  # the rotor turns: the wheel arms its first game
        return rig

    yield build
    for rig in rigs:
        await rig.driver.stop()


def test_pocket_after_follows_the_wheel_order() -> None:
    # At the index pulse the calibrated pocket is in front of the ball sensor; each
    # 1/37 turn clockwise brings the previous pocket of the clockwise order there.
    k0 = WHEEL_ORDER.index(26)
    assert pocket_after(26, 0.0, "clockwise") == 26
    assert pocket_after(26, 1 / 37, "clockwise") == WHEEL_ORDER[k0 - 1] == 3
    assert pocket_after(26, 1 / 37, "anticlockwise") == WHEEL_ORDER[(k0 + 1) % 37] == 0
    assert pocket_after(0, 0.49 / 37, "clockwise") == 0  # within half a pocket
    assert pocket_after(0, 0.999999, "clockwise") == 0  # a whole turn
    assert pocket_after(0, 10 / 37, "anticlockwise") == WHEEL_ORDER[10]


async def test_every_pocket_both_directions(make: Any) -> None:
    rig = await make()
    expected = []
    for i, number in enumerate(WHEEL_ORDER):
        for direction in ("clockwise", "anticlockwise"):
            rpm = 18 + (i % 5) * 5
            expected.append(await rig.sim.spin(number, rpm=rpm, direction=direction))
            await rig.sim.run(1.5)
    assert rig.numbers() == expected
    wins = rig.of(WinningNumber)
    assert [w.direction for w in wins[:2]] == ["clockwise", "anticlockwise"]
    assert [w.spin for w in wins] == list(range(1, len(expected) + 1))
    assert not rig.of(GameVoided)
    assert health_of(rig.driver) is HealthState.ONLINE


async def test_fixed_direction_without_second_sensor(make: Any) -> None:
    rig = await make(second_sensor=False, direction="anticlockwise")
    rig.sim.direction = "anticlockwise"
    got = [await rig.sim.spin(n, direction="anticlockwise") for n in (0, 32, 3, 26)]
    await rig.sim.run(2)
    assert rig.numbers() == got


async def test_game_cycle_states_and_one_result_per_game(make: Any) -> None:
    rig = await make()
    await rig.sim.spin(17)
    await rig.sim.run(30.0)  # the ball stays in pocket 17 for many more turns
    assert rig.numbers() == [17]
    states = [e.state for e in rig.of(GameStateChanged)]
    # 6 -> 2 when the rotor turns, 4 when the ball drops, 5 on the result, 2 again
    assert states[:4] == [2, 4, 5, 2]
    # the resting ball of the last game does not settle the new one
    assert rig.driver.model.game.state == 2 and rig.driver.model.game.result is None
    await rig.sim.spin(5)
    await rig.sim.run(2)
    assert rig.numbers() == [17, 5]


async def test_ball_bounces_and_electrical_chatter(make: Any) -> None:
    rig = await make(sim_kw={"chatter": 3})
    got = [await rig.sim.spin(n, bounces=8) for n in (9, 22, 0, 36)]
    await rig.sim.run(2)
    assert rig.numbers() == got
    assert rig.driver.model.chatter > 0


async def test_no_ball_voids_the_game(make: Any) -> None:
    rig = await make(ball_timeout_ms=8000)
    await rig.sim.spin(no_ball=True, settle_revs=8)
    await rig.sim.run(5)
    voids = rig.of(GameVoided)
    assert [v.reason for v in voids] == ["NO_BALL"]
    assert not rig.of(WinningNumber)


async def test_rotor_stop_is_a_fault_and_voids_then_recovers(make: Any) -> None:
    rig = await make()
    await rig.sim.stop_rotor(8.0)
    await rig.ticked()
    assert health_of(rig.driver) is HealthState.FAULT
    assert rig.driver.health.code == "ROTOR_STOPPED"
    assert [v.reason for v in rig.of(GameVoided)] == ["ROTOR_STOPPED"]
    assert rig.of(GameStateChanged)[-1].state == 6
    await rig.sim.run(5)
    assert health_of(rig.driver) is HealthState.ONLINE
    assert rig.of(GameStateChanged)[-1].state == 2
    assert await rig.sim.spin(14) == 14
    await rig.sim.run(1)
    assert rig.numbers() == [14]


async def test_speed_out_of_range(make: Any) -> None:
    rig = await make(min_rpm=15, max_rpm=40)
    rig.sim.rpm = 55
    await rig.sim.run(4)
    assert health_of(rig.driver) is HealthState.FAULT
    assert rig.driver.health.code == "ROTOR_SPEED"
    rig.sim.rpm = 25
    await rig.sim.run(4)
    assert health_of(rig.driver) is HealthState.ONLINE
    assert [w.code for w in rig.of(WheelWarning)] == ["ROTOR_SPEED"]


async def test_rotor_reversing_with_the_ball_in_the_pockets_voids(make: Any) -> None:
    rig = await make()
    await rig.sim.spin(11, reverse_during=True)
    await rig.sim.run(1)
    assert [v.reason for v in rig.of(GameVoided)] == ["DIRECTION_CHANGED"]
    wins = rig.of(WinningNumber)
    assert wins and wins[0].void_reason == "DIRECTION_CHANGED"


async def test_stuck_ball_sensor(make: Any) -> None:
    rig = await make(stuck_ms=500)
    rig.sim.stick("ball")
    await rig.sim.run(2)
    assert rig.driver.health.code == "BALL_SENSOR_STUCK"
    rig.sim.stick("ball", False)
    await asyncio.sleep(0)
    await rig.sim.run(2)
    assert health_of(rig.driver) is HealthState.ONLINE
    codes = [(w.code, w.action) for w in rig.of(WheelWarning)]
    assert codes[0] == ("BALL_SENSOR_STUCK", "fault")
    assert ("BALL_SENSOR_RELEASED", "warn") in codes


def test_settings_need_a_direction_source() -> None:
    problems = GpioWheelDriver.check_settings(
        {"direction": "auto", "index_b_pin": None, "index_pocket": 0, "min_rpm": 10, "max_rpm": 60}
    )
    assert problems and problems[0].startswith("direction:")
    assert (
        GpioWheelDriver.check_settings(
            {
                "direction": "clockwise",
                "index_b_pin": None,
                "index_pocket": 0,
                "min_rpm": 10,
                "max_rpm": 60,
            }
        )
        == []
    )
