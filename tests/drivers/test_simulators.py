"""``drivers.simulators``: one runner for every device simulator (``tablectl sim``,
``tablectl demo`` and tests serve them the same way)."""

from __future__ import annotations

import asyncio
import os

import pytest

from drivers.cammegh.codec import GameState
from drivers.registry import declarations
from drivers.simulators import serve_simulator, simulated

#: Drivers wired to Raspberry Pi pins: nothing to serve on a serial line.
GPIO_DRIVERS = {"gpio-wheel", "keypad-gpio", "board-gpio"}


def test_every_serial_driver_has_a_simulator() -> None:
    assert set(simulated()) == set(declarations()) - GPIO_DRIVERS


@pytest.mark.parametrize("name", sorted(simulated()))
async def test_each_simulator_is_served_on_a_pty_and_closed(name: str) -> None:
    served = await serve_simulator(name, seed=3)
    try:
        assert served.where.startswith("/dev/") and os.path.exists(served.where)
        await served.start()
    finally:
        await served.close()


async def test_the_wheel_powers_on_when_asked() -> None:
    """``power=on`` (the demo): the wheel leaves state 6 without a host's ``*P 1``."""
    served = await serve_simulator("cammegh-ss2", options={"power": "on", "speed": 100})
    try:
        assert served.sim.state == GameState.CLOSE_TABLE
        await served.start()
        await asyncio.sleep(0.01)
        assert served.sim.state != GameState.CLOSE_TABLE
    finally:
        await served.close()


async def test_a_driver_without_simulator_is_named() -> None:
    with pytest.raises(ValueError, match=r"gpio-wheel.*known: cammegh-ss2"):
        await serve_simulator("gpio-wheel")


async def test_options_reach_the_simulator() -> None:
    served = await serve_simulator("shoe-ref", seed=1, options={"decks": 2})
    try:
        assert served.sim.model.decks == 2
    finally:
        await served.close()
