"""The shoe driver back to back with its simulator, over fault-injecting transports.

Acceptance (issue 5): one byte at a time, random garbage, dropped writes, silence,
unplug and replug; under garbage at 1% of bytes no wrong card is ever emitted
(each accepted card equals what the simulator dealt, in order) and the driver
recovers.
"""

from __future__ import annotations

import asyncio

import pytest

from drivers.base import HealthState
from drivers.reflink.bench import (
    FAST,
    SIM_TIMERS,
    Bench,
    collect,
    drain,
    driver_kwargs,
    wait_for,
    wait_online,
)
from drivers.reflink.driver import CommandRefused
from drivers.shoe.driver import ShoeDriver
from drivers.shoe.sim import ShoeSimulator
from drivers.testing import Faults
from tablecommon.events.shoe import (
    CardDealt,
    CardMisread,
    DeckChecked,
    DoorClosed,
    DoorOpened,
    DuplicateCard,
    SequenceGap,
    ShoeFault,
    ShoeJam,
    ShuffleFinished,
)


async def rig(
    decks: int = 1,
    seed: int = 11,
    rx: Faults | None = None,
    tx: Faults | None = None,
    **settings: object,
) -> tuple[ShoeSimulator, Bench, ShoeDriver]:
    sim = ShoeSimulator(decks=decks, seed=seed, timers=SIM_TIMERS)
    bench = Bench(sim, rx=rx, tx=tx)
    drv = ShoeDriver(
        "shoe", {"port": "unused", "decks": decks, **FAST, **settings}, **driver_kwargs(bench)
    )
    return sim, bench, drv


async def deal_all(sim: ShoeSimulator, drv: ShoeDriver, n: int) -> list[CardDealt]:
    sub = drv.events()
    for _ in range(n):
        await sim.deal()
    got = await collect(sub, CardDealt, n, timeout=20)
    sub.close()
    return got


@pytest.mark.parametrize(
    ("name", "rx", "tx"),
    [
        ("clean", Faults(), Faults()),
        ("byte-at-a-time", Faults(chunk_size=1), Faults(chunk_size=1)),
        ("garbage-1pct", Faults(garbage_rate=0.01, seed=1), Faults(garbage_rate=0.01, seed=2)),
        ("corrupt-1pct", Faults(corrupt_rate=0.01, seed=3), Faults(corrupt_rate=0.01, seed=4)),
        ("dropped-writes", Faults(drop_rate=0.2, seed=5), Faults(drop_rate=0.2, seed=6)),
        ("delay", Faults(delay=0.002), Faults(delay=0.002)),
    ],
)
async def test_a_whole_shoe_arrives_exactly(name: str, rx: Faults, tx: Faults) -> None:
    sim, bench, drv = await rig(rx=rx, tx=tx)
    sub = drv.events()
    await drv.start()
    try:
        await wait_online(drv)
        await drv.shuffle()
        await collect(sub, ShuffleFinished, 1)
        got = await deal_all(sim, drv, 52)
        assert [(e.seq, e.card) for e in got] == sim.sent_cards  # every card, once, in order
        assert not [e for e in drain(sub) if isinstance(e, DuplicateCard | SequenceGap)]
        await wait_online(drv)  # recovered (a lost exchange may have made it blink offline)
        if name.startswith(("garbage", "corrupt")):
            assert (
                drv.get_status()["link"]["bad_frames"] + sim.unit().endpoint.counters.bad_frames > 0
            )
    finally:
        await drv.stop()
        await bench.close()


async def test_garbage_at_1pct_many_seeds_never_a_wrong_card() -> None:
    """Several shoes, garbage both ways at 1% of bytes: every accepted card is the one dealt."""
    for seed in range(3):
        sim, bench, drv = await rig(
            decks=1,
            seed=100 + seed,
            rx=Faults(garbage_rate=0.01, seed=seed),
            tx=Faults(garbage_rate=0.01, seed=50 + seed),
        )
        sim.faults.garbage_rate = 0.01  # and the simulator adds its own on what it sends
        sub = drv.events()
        await drv.start()
        try:
            await wait_online(drv)
            await sim.shuffle()
            got = await deal_all(sim, drv, 52)
            assert [(e.seq, e.card) for e in got] == sim.sent_cards
            assert not [e for e in drain(sub) if isinstance(e, ShoeFault)]
        finally:
            await drv.stop()
            await bench.close()


async def test_silence_is_reported_offline_and_nothing_is_lost() -> None:
    sim, bench, drv = await rig()
    await drv.start()
    try:
        await wait_online(drv)
        await sim.shuffle()
        bench.opener.rx.silent = True  # nothing from the shoe reaches the host
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        await wait_for(lambda: drv.health.state is HealthState.OFFLINE, 2.0)
        # bound: one poll period plus offline_after polls of (retries + 1) ack timeouts, plus slack
        bound = (FAST["poll_ms"] + 2 * (FAST["retries"] + 1) * FAST["ack_timeout_ms"]) / 1000
        assert loop.time() - t0 < bound + 0.3
        assert drv.health.code == "NO_ANSWER"
        sub = drv.events()
        for _ in range(3):
            await sim.deal()  # dealt while the host hears nothing
        bench.opener.rx.silent = False
        await wait_online(drv)
        got = await collect(sub, CardDealt, 3)
        assert [(e.seq, e.card) for e in got] == sim.sent_cards[-3:]
    finally:
        await drv.stop()
        await bench.close()


async def test_unplug_and_replug() -> None:
    sim, bench, drv = await rig()
    await drv.start()
    try:
        await wait_online(drv)
        await sim.shuffle()
        await deal_all(sim, drv, 2)
        bench.unplug()
        await wait_for(lambda: drv.health.state is HealthState.OFFLINE)
        assert drv.health.code == "LINK_DOWN"
        sub = drv.events()
        await sim.deal()
        await sim.deal()
        await asyncio.sleep(0.1)
        assert not [e for e in drain(sub) if isinstance(e, CardDealt)]
        bench.replug()
        await wait_online(drv)
        got = await collect(sub, CardDealt, 2)
        assert [(e.seq, e.card) for e in got] == sim.sent_cards[2:4]
        assert drv.get_status()["port"]["opens"] >= 2
    finally:
        await drv.stop()
        await bench.close()


async def test_each_fault_gives_its_event_and_health() -> None:
    sim, bench, drv = await rig()
    sub = drv.events()
    await drv.start()
    try:
        await wait_online(drv)
        await sim.shuffle()
        await sim.inject("jam")
        (jam,) = await collect(sub, ShoeJam, 1)
        assert jam.fault == "JAM"
        await wait_for(lambda: drv.health.state is HealthState.FAULT and drv.health.code == "JAM")
        assert drv.get_status()["fault_frames"]  # the last frames were dumped with the fault
        with pytest.raises(CommandRefused):
            await drv.deal()  # a jammed shoe refuses
        await sim.inject("unjam")
        await wait_online(drv)

        await sim.inject("door_open")
        await collect(sub, DoorOpened, 1)
        await wait_for(lambda: drv.health.code == "DOOR_OPEN")
        with pytest.raises(CommandRefused):
            await drv.shuffle()
        await sim.inject("door_close")
        await collect(sub, DoorClosed, 1)
        await wait_online(drv)

        await sim.inject("misread")
        (mis,) = await collect(sub, CardMisread, 1)
        assert mis.seq == 1 and mis.card is None
        await wait_for(lambda: drv.health.code == "MISREAD")
        await drv.clear_fault("MISREAD")
        await wait_online(drv)

        await sim.deal()
        (card,) = await collect(sub, CardDealt, 1)
        assert card.seq == 2
        await sim.inject("duplicate", card.card)
        (dup,) = await collect(sub, DuplicateCard, 1)
        assert (dup.card, dup.seq) == (card.card, 3)
        await drv.clear_fault()
        await wait_online(drv)
    finally:
        await drv.stop()
        await bench.close()


async def test_deck_check_on_request_names_the_cards() -> None:
    sim, bench, drv = await rig(decks=2)
    sub = drv.events()
    await drv.start()
    try:
        await wait_online(drv)
        await sim.inject("missing_card", "JD")
        await sim.inject("extra_card", "2C")
        await drv.request_deck_check()
        (ev,) = await collect(sub, DeckChecked, 1)
        assert (ev.missing, ev.extra, ev.ok) == (("JD",), ("2C",), False)
        assert drv.get_status()["shoe"]["last_deck_check"] == {
            "ok": False,
            "missing": ["JD"],
            "extra": ["2C"],
        }
    finally:
        await drv.stop()
        await bench.close()


async def test_dealing_machine_deals_on_request() -> None:
    sim, bench, drv = await rig()
    sub = drv.events()
    await drv.start()
    try:
        await wait_online(drv)
        await drv.shuffle()
        for pos in (1, 2, 1, 2):
            await drv.deal(pos)
        got = await collect(sub, CardDealt, 4)
        assert [(e.seq, e.card) for e in got] == sim.sent_cards
        assert [e.position for e in got] == [1, 2, 1, 2]
    finally:
        await drv.stop()
        await bench.close()


async def test_a_restarted_shoe_is_identified_again() -> None:
    sim, bench, drv = await rig()
    sub = drv.events()
    await drv.start()
    try:
        await wait_online(drv)
        sim.reboot()
        await sim.shuffle()
        await sim.deal()
        (card,) = await collect(sub, CardDealt, 1)
        assert (card.seq, card.card) == sim.sent_cards[-1]
        await wait_for(lambda: drv.counters["device_restarts"] >= 1)
        await wait_online(drv)
    finally:
        await drv.stop()
        await bench.close()


async def test_start_returns_promptly_without_a_device_and_stop_is_idempotent() -> None:
    sim, bench, drv = await rig()
    bench.unplug()
    await asyncio.wait_for(drv.start(), 0.5)
    await asyncio.sleep(0.05)
    assert drv.health.state is HealthState.OFFLINE
    bench.replug()
    await wait_online(drv)
    await drv.stop()
    await drv.stop()
    await bench.close()


@pytest.mark.parametrize("via", ["pty", "tcp"])
async def test_over_a_real_serial_path(via: str) -> None:
    """The real opener: a pseudo-terminal opened by path, or socket://, through pyserial."""
    sim = ShoeSimulator(decks=1, seed=3, timers=SIM_TIMERS)
    server = await (sim.serve_pty() if via == "pty" else sim.serve_tcp())
    port = server.path if via == "pty" else server.url  # type: ignore[union-attr]
    drv = ShoeDriver("shoe", {"port": port, "decks": 1, **FAST})
    sub = drv.events()
    await drv.start()
    try:
        await wait_online(drv, 5)
        await sim.shuffle()
        for _ in range(5):
            await sim.deal()
        got = await collect(sub, CardDealt, 5)
        assert [(e.seq, e.card) for e in got] == sim.sent_cards
    finally:
        await drv.stop()
        await sim.close()
