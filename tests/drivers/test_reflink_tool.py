"""``tablectl sim`` / ``tablectl decode`` entries of the reflink devices."""

from __future__ import annotations

import asyncio
import re

import pytest

from drivers.board.driver import BoardDriver
from drivers.cli import decoders
from drivers.reflink.bench import FAST, collect, wait_for, wait_online
from drivers.shoe.driver import ShoeDriver
from drivers.simulators import run_simulator, simulated
from drivers.testing import parse_faults
from tablecommon.events.shoe import CardDealt


async def _serve(
    name: str, lines: list[str], stop: asyncio.Event, **kw: object
) -> tuple[asyncio.Task[None], str]:
    task = asyncio.create_task(run_simulator(name, out=lines.append, stop=stop, **kw))  # type: ignore[arg-type]
    await wait_for(lambda: bool(lines))
    m = re.search(r'port = "([^"]+)"', lines[0])
    assert m is not None, lines
    return task, m.group(1)


@pytest.mark.parametrize("tcp", [None, 0])
async def test_sim_shoe_deals_to_a_driver(tcp: int | None) -> None:
    lines: list[str] = []
    stop = asyncio.Event()
    task, port = await _serve(
        "shoe-ref",
        lines,
        stop,
        tcp=tcp,
        seed=5,
        interval=0.02,
        faults=parse_faults("garbage=0.01,seed=2"),
        options={"decks": 1},
    )
    drv = ShoeDriver("shoe", {"port": port, "decks": 1, **FAST})
    sub = drv.events()
    await drv.start()
    try:
        await wait_online(drv, 5)
        got = await collect(sub, CardDealt, 5)
        dealt = [ln.split()[-1] for ln in lines if ln.startswith("dealt")]
        # from the first card on: the shoe queued what it dealt before the driver came
        assert [e.card for e in got] == dealt[: len(got)]
        assert "garbage_rate=0.01" in lines[0]
    finally:
        await drv.stop()
        stop.set()
        await task


async def test_sim_board_prints_what_it_shows() -> None:
    lines: list[str] = []
    stop = asyncio.Event()
    task, port = await _serve("board-ref", lines, stop, options={"addresses": "1,2"})
    b2 = BoardDriver("b2", {"port": port, "address": 2, "layout": "roulette", **FAST})
    await b2.start()
    try:
        await wait_online(b2, 5)
        assert await b2.show_number(17)
        await wait_for(lambda: any("address 2" in ln and "17" in ln for ln in lines), 3)
    finally:
        await b2.stop()
        stop.set()
        await task


def test_every_reflink_driver_declares_its_simulator_and_decoder() -> None:
    names = {"shoe-ref", "shoe-ref-usb", "shaker-ref", "board-ref", "sign-ref"}
    assert names <= set(simulated()) and names <= set(decoders())
    assert list(decoders()["sign-ref"].decode(b"", {})) == []
