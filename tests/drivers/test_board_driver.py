"""Lit result board: the RS-485 reference driver back to back with simulated boards
(one or two on one bus), link loss and resynchronisation, and the GPIO LED board."""

from __future__ import annotations

import asyncio

import pytest
from gpiozero.pins.mock import MockFactory

from drivers.base import HealthState
from drivers.board.codec import BoardResynced
from drivers.board.driver import BoardDriver, GpioBoardDriver, Unsupported
from drivers.board.layouts import lamp_map
from drivers.board.sim import BoardSimulator
from drivers.reflink.bench import (
    FAST,
    SIM_TIMERS,
    Bench,
    collect,
    driver_kwargs,
    wait_for,
    wait_online,
)
from drivers.testing import Faults
from firmware_host.games import get_game
from firmware_host.games.base import winning_areas


def board_areas(layout: str) -> tuple[str, ...]:
    """The areas of the game whose layout it is (what the table tells a board)."""
    board = get_game(layout).display.board
    assert board is not None
    return board.area_names()


def sicbo_areas(dice: tuple[int, int, int]) -> tuple[str, ...]:
    """What a sic bo result lights: the game's own winning areas."""
    g = get_game("sicbo")
    return winning_areas(g, g.default_rules(), {"dice": list(dice)})


def rig(
    layout: str = "sicbo",
    addresses: tuple[int, ...] = (1,),
    rx: Faults | None = None,
    tx: Faults | None = None,
) -> tuple[BoardSimulator, Bench, list[BoardDriver]]:
    sim = BoardSimulator(addresses, timers=SIM_TIMERS)
    bench = Bench(sim, rx=rx, tx=tx)
    kw = driver_kwargs(bench)
    drvs = [
        BoardDriver(f"board{a}", {"port": "unused", "address": a, "layout": layout, **FAST}, **kw)
        for a in addresses
    ]
    for d in drvs:
        d.use_areas(board_areas(layout))
    return sim, bench, drvs


async def close(bench: Bench, *drvs: BoardDriver) -> None:
    for d in drvs:
        await d.stop()
    await bench.close()


def lamps_of(dice: tuple[int, int, int]) -> list[int]:
    m = lamp_map(board_areas("sicbo"))
    return sorted(m[a] for a in sicbo_areas(dice))


@pytest.mark.parametrize(
    ("rx", "tx"),
    [
        (Faults(chunk_size=1), Faults(chunk_size=1)),
        (Faults(garbage_rate=0.01, seed=1), Faults(garbage_rate=0.01, seed=2)),
        (Faults(drop_rate=0.2, seed=3), Faults(drop_rate=0.2, seed=4)),
    ],
    ids=["byte-at-a-time", "garbage-1pct", "dropped-writes"],
)
async def test_sicbo_results_shown_exactly(rx: Faults, tx: Faults) -> None:
    sim, bench, (drv,) = rig(rx=rx, tx=tx)
    await drv.start()
    try:
        await wait_online(drv)
        for dice in [(1, 2, 3), (6, 6, 6), (2, 2, 5), (4, 6, 5)]:
            ok = await drv.show_areas(sicbo_areas(dice))
            if not ok:  # not acknowledged: kept, and sent again by the resync
                await wait_for(lambda: drv.counters["resyncs"] >= 1 and drv.ref.online)
            await wait_for(lambda d=dice: sim.board(1).lamps == lamps_of(d))  # type: ignore[misc]
        await wait_online(drv)
    finally:
        await close(bench, drv)


async def test_roulette_number_history_road_and_lamp_test() -> None:
    sim, bench, (drv,) = rig(layout="roulette")
    await drv.start()
    try:
        await wait_online(drv)
        for n in (17, 0, 32):
            assert await drv.show_number(n)
        assert sim.board(1).number == ("roulette", 32, (0, 17))
        assert drv.get_status()["board"]["history"] == [0, 17]
        assert await drv.show_road(["B", "P", "Tb", "Bp"])
        assert sim.board(1).road == ("B", "P", "Tb", "Bp")
        assert await drv.lamp_test(200)
        await wait_for(lambda: "LAMP_TEST" in drv.ref.conditions)
        assert drv.health.state is HealthState.ONLINE  # a lamp test is not a fault
        await wait_for(lambda: "LAMP_TEST" not in drv.ref.conditions, 2)
        with pytest.raises(ValueError):
            await drv.show_number(37)
        assert await drv.clear()
        assert sim.board(1).number is None and sim.board(1).road == ()
    finally:
        await close(bench, drv)


async def test_a_silent_board_is_offline_and_resynchronised_when_it_returns() -> None:
    sim, bench, (drv,) = rig(layout="fantan")
    await drv.start()
    try:
        await wait_online(drv)
        sub = drv.events()
        assert await drv.show_number(3)
        bench.opener.rx.silent = True  # the board stops acknowledging
        await wait_for(lambda: drv.health.state is HealthState.OFFLINE)
        assert drv.health.code == "NO_ANSWER"
        assert not await drv.show_number(4)  # kept, not lost
        assert not await drv.show_number(1)
        assert sim.board(1).number == ("fantan", 3, ())
        bench.opener.rx.silent = False
        (ev,) = await collect(sub, BoardResynced, 1)
        assert ev.messages == 2  # CLEAR, then the number layer
        await wait_online(drv)
        assert sim.board(1).number == ("fantan", 1, (4, 3))
    finally:
        await close(bench, drv)


async def test_a_rebooted_board_and_a_board_that_lost_its_state_get_everything_again() -> None:
    sim, bench, (drv,) = rig()
    await drv.start()
    try:
        await wait_online(drv)
        # ONLINE comes before the first contact's resync; on a loaded machine that resync
        # reached the subscription below and was taken for the reboot's
        await wait_for(lambda: drv.counters.get("resyncs", 0) >= 1)
        sub = drv.events()
        assert await drv.show_areas(sicbo_areas((1, 2, 3)))
        sim.reboot(1)  # power cycle: blank, new link session
        assert sim.board(1).lamps == []
        (ev,) = await collect(sub, BoardResynced, 1)
        assert ev.reason == "device restarted"
        assert sim.board(1).lamps == lamps_of((1, 2, 3))
        sim.board(1).reboot()  # the display lost its state, the link did not notice
        (ev,) = await collect(sub, BoardResynced, 1)
        assert ev.reason == "device reports its state lost"
        assert sim.board(1).lamps == lamps_of((1, 2, 3))
        sim.board(1).lamp_failure = True
        await wait_for(
            lambda: drv.health.state is HealthState.FAULT and drv.health.code == "LAMP_FAILURE"
        )
    finally:
        await close(bench, drv)


async def test_two_boards_on_one_bus() -> None:
    sim, bench, (b1, b2) = rig(layout="sicbo", addresses=(1, 2))
    await b1.start()
    await b2.start()
    try:
        await wait_online(b1)
        await wait_online(b2)
        assert bench.opener.opens == 1  # one port for the bus
        assert await b1.show_areas(sicbo_areas((1, 1, 1)))
        assert await b2.show_areas(sicbo_areas((3, 4, 5)))
        assert sim.board(1).lamps == lamps_of((1, 1, 1))
        assert sim.board(2).lamps == lamps_of((3, 4, 5))
        sim.reboot(2)
        await wait_for(lambda: b2.counters["resyncs"] >= 2)
        assert sim.board(2).lamps == lamps_of((3, 4, 5))
        assert b1.counters["resyncs"] == 1  # board 1 was not disturbed
        await b2.stop()
        assert await b1.show_areas(sicbo_areas((2, 2, 2)))  # the bus stays open for board 1
        assert sim.board(1).lamps == lamps_of((2, 2, 2))
    finally:
        await close(bench, b1, b2)


async def test_unplugged_bus_and_back() -> None:
    sim, bench, (drv,) = rig(layout="roulette")
    await drv.start()
    try:
        await wait_online(drv)
        bench.unplug()
        await wait_for(lambda: drv.health.code == "LINK_DOWN")
        assert not await drv.show_number(7)
        bench.replug()
        await wait_online(drv)
        await wait_for(lambda: sim.board(1).number == ("roulette", 7, ()))
    finally:
        await close(bench, drv)


async def test_gpio_led_board() -> None:
    factory = MockFactory()
    pins = [5, 6, 13, 19]
    drv = GpioBoardDriver(
        "lamps", {"pins": pins, "layout": "fantan", "blink_ms": 50}, pin_factory=factory
    )
    drv.use_areas(board_areas("fantan"))
    await drv.start()
    try:
        assert drv.health.state is HealthState.ONLINE

        def lit() -> list[int]:
            return [i for i, p in enumerate(pins) if factory.pin(p).state]

        assert await drv.show_number(3)
        assert lit() == [2]  # area "3" is lamp 2 in the default fantan order
        assert await drv.show_number(1)
        assert lit() == [0] and drv.get_status()["board"]["history"] == [3]
        assert await drv.lamp_test(100)
        assert lit() == [0, 1, 2, 3]
        await asyncio.sleep(0.2)
        assert lit() == [0]
        assert await drv.show_areas(["2", "4"], blink=True)
        seen: set[tuple[int, ...]] = set()
        for _ in range(30):
            seen.add(tuple(lit()))
            await asyncio.sleep(0.01)
        assert seen >= {(1, 3), ()}  # blinking
        with pytest.raises(Unsupported):
            await drv.show_road(["B"])
        assert await drv.clear()
        assert lit() == []
    finally:
        await drv.stop()


def test_gpio_board_settings_checks() -> None:
    assert GpioBoardDriver.check_settings(
        {"pins": [1, 2], "layout": "fantan", "lamps": {"1": 0, "4": 5}}
    )
    assert not GpioBoardDriver.check_settings(
        {"pins": [1, 2, 3, 4], "layout": "fantan", "lamps": {}}
    )
    assert BoardDriver.check_settings({"layout": "sicbo", "lamps": {"small": -1}})
    assert list(GpioBoardDriver.used_pins({"pins": (5, 6)})) == [("pins[0]", 5), ("pins[1]", 6)]
