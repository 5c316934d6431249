"""Jackpot sign: amounts in integer minor units, hit message, the amount alternating
with a fault message while faulted, and link loss with resynchronisation."""

from __future__ import annotations

import pytest

from drivers.base import HealthState
from drivers.reflink.bench import (
    FAST,
    SIM_TIMERS,
    Bench,
    collect,
    driver_kwargs,
    wait_for,
    wait_online,
)
from drivers.sign.codec import SignResynced, format_amount
from drivers.sign.driver import SignDriver
from drivers.sign.model import SignModel
from drivers.sign.sim import SignSimulator
from drivers.testing import Faults


@pytest.mark.parametrize(
    ("amount", "digits", "text"),
    [
        (0, 2, "MOP 0.00"),
        (5, 2, "MOP 0.05"),
        (123456789, 2, "MOP 1,234,567.89"),
        (1000, 0, "MOP 1,000"),
        (10**18 + 1, 2, "MOP 10,000,000,000,000,000.01"),
    ],
)
def test_amounts_are_formatted_from_integers(amount: int, digits: int, text: str) -> None:
    assert format_amount(amount, digits, "MOP") == text


def test_the_sign_alternates_amount_and_fault_message() -> None:
    t = [100.0]
    m = SignModel(clock=lambda: t[0])
    m.handle(
        0, m.profile.encode("AMOUNT", amount=250000, digits=2, currency="HKD", label="JACKPOT")
    )
    assert m.display() == "JACKPOT HKD 2,500.00"
    m.handle(0, m.profile.encode("FAULT", text="JACKPOT OFFLINE", period_ms=2000))
    shown = [m.display(100.0 + 0.5 * i) for i in range(9)]
    assert shown == ["JACKPOT HKD 2,500.00"] * 4 + ["JACKPOT OFFLINE"] * 4 + [
        "JACKPOT HKD 2,500.00"
    ]
    m.handle(
        0,
        m.profile.encode("HIT", amount=250000, digits=2, currency="HKD", text="WINNER", seconds=10),
    )
    assert m.display(101.0) == "WINNER HKD 2,500.00"
    assert m.display(111.0) in ("JACKPOT HKD 2,500.00", "JACKPOT OFFLINE")
    m.handle(0, m.profile.encode("FAULT_CLEAR"))
    assert m.display(112.0) == "JACKPOT HKD 2,500.00"
    t[0] = 112.0
    m.handle(0, m.profile.encode("PING"))
    # nothing from the host for more than 10 s: the sign alternates its own NO LINK
    # (docs/protocols/sign.md: after 10 s, NO LINK and the amount 2 s each, NO LINK first)
    assert [m.display(112.0 + s) for s in (9.5, 10.5, 11.5, 12.5, 13.5, 14.5)] == [
        "JACKPOT HKD 2,500.00",
        "NO LINK",
        "NO LINK",
        "JACKPOT HKD 2,500.00",
        "JACKPOT HKD 2,500.00",
        "NO LINK",
    ]


async def rig(
    rx: Faults | None = None, tx: Faults | None = None
) -> tuple[SignSimulator, Bench, SignDriver]:
    sim = SignSimulator(timers=SIM_TIMERS)
    bench = Bench(sim, rx=rx, tx=tx)
    drv = SignDriver(
        "sign",
        {"port": "unused", "currency": "MOP", "label": "JACKPOT", **FAST},
        **driver_kwargs(bench),
    )
    return sim, bench, drv


@pytest.mark.parametrize(
    ("rx", "tx"),
    [
        (Faults(chunk_size=1), Faults(chunk_size=1)),
        (Faults(garbage_rate=0.01, seed=1), Faults(garbage_rate=0.01, seed=2)),
        (Faults(drop_rate=0.2, seed=3), Faults(drop_rate=0.2, seed=4)),
    ],
    ids=["byte-at-a-time", "garbage-1pct", "dropped-writes"],
)
async def test_amounts_reach_the_sign(rx: Faults, tx: Faults) -> None:
    sim, bench, drv = await rig(rx, tx)
    await drv.start()
    try:
        await wait_online(drv)
        for amount in range(100_000, 100_000 + 20 * 137, 137):
            await drv.show_amount(amount)
        want = f"JACKPOT {format_amount(amount, 2, 'MOP')}"
        await wait_for(lambda: sim.display() == want)
        await wait_online(drv)
    finally:
        await drv.stop()
        await bench.close()


async def test_hit_fault_and_resync_after_link_loss() -> None:
    sim, bench, drv = await rig()
    await drv.start()
    try:
        await wait_online(drv)
        assert await drv.show_amount(987_654)
        assert sim.display() == "JACKPOT MOP 9,876.54"
        assert await drv.show_hit(500_000, "JACKPOT SEAT 3", seconds=0)
        assert sim.display() == "JACKPOT SEAT 3 MOP 5,000.00"
        assert await drv.show_amount(100_000)  # a hit "until the next amount" ends
        assert sim.display() == "JACKPOT MOP 1,000.00"
        assert await drv.set_fault("SYSTEM FAULT")
        assert sim.model.fault is not None and sim.model.fault[0] == "SYSTEM FAULT"

        bench.opener.rx.silent = True
        await wait_for(lambda: drv.health.state is HealthState.OFFLINE)
        assert not await drv.show_amount(100_500)
        sim.reboot()  # and the sign was power-cycled meanwhile
        assert sim.display() == "----"
        # subscribe only now: the resync of the first connection may be emitted late on a
        # loaded machine, and it is not the one this test is about
        sub = drv.events()
        bench.opener.rx.silent = False
        (ev,) = await collect(sub, SignResynced, 1)
        assert ev.messages == 2  # amount, fault
        assert sim.model.amount is not None and sim.model.amount[0] == 100_500
        assert sim.model.fault is not None and sim.model.fault[0] == "SYSTEM FAULT"
        assert await drv.clear_fault()
        assert sim.display() == "JACKPOT MOP 1,005.00"
        with pytest.raises(ValueError):
            await drv.show_amount(-1)
        assert drv.get_status()["sign"]["text"] == "MOP 1,005.00"
        # the jackpot controller passes its currency along: show_amount(pool, currency)
        assert await drv.show_amount(250, "HKD")
        assert sim.display() == "JACKPOT HKD 2.50"
        with pytest.raises(ValueError):
            await drv.show_amount(1, "hk")
    finally:
        await drv.stop()
        await bench.close()


async def test_unplug_replug_resends() -> None:
    sim, bench, drv = await rig()
    await drv.start()
    try:
        await wait_online(drv)
        bench.unplug()
        await wait_for(lambda: drv.health.code == "LINK_DOWN")
        assert not await drv.show_amount(42)
        bench.replug()
        await wait_for(lambda: sim.display() == "JACKPOT MOP 0.42")
    finally:
        await drv.stop()
        await bench.close()
