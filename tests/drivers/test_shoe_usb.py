"""The shoe on USB bulk endpoints: the same reference protocol through pyusb (a fake
backend from drivers.testing), unplug/replug, and a USB reset after repeated timeouts."""

from __future__ import annotations

import asyncio
import contextlib

from drivers.base import HealthState
from drivers.link import Backoff
from drivers.reflink.bench import FAST, SIM_TIMERS, collect, wait_for, wait_online
from drivers.shoe.driver import UsbShoeDriver
from drivers.shoe.sim import ShoeSimulator
from drivers.testing import FakeUsbBackend, FakeUsbDevice
from tablecommon.events.shoe import CardDealt


async def test_shoe_over_usb_bulk_with_unplug_and_reset() -> None:
    dev = FakeUsbDevice(0x1209, 0x5348, "SHOE0001")
    sim = ShoeSimulator(decks=1, seed=9, timers=SIM_TIMERS)
    serving = asyncio.create_task(sim.serve(dev.device_connection()))
    drv = UsbShoeDriver(
        "shoe",
        {
            "usb": "usb:1209:5348:SHOE0001",
            "decks": 1,
            **FAST,
            "ack_timeout_ms": 40,
            "reset_after": 3,
        },
        usb_backend=FakeUsbBackend(dev),
        backoff=Backoff(0.01, 0.05, jitter=0.1),
    )
    sub = drv.events()
    await drv.start()
    try:
        await wait_online(drv, 5)
        await sim.shuffle()
        for _ in range(10):
            await sim.deal()
        got = await collect(sub, CardDealt, 10)
        assert [(e.seq, e.card) for e in got] == sim.sent_cards

        dev.unplug()  # pulled out: transfers fail at once
        await wait_for(lambda: drv.health.state is HealthState.OFFLINE, 5)
        await sim.deal()
        dev.replug()
        await wait_online(drv, 5)
        (card,) = await collect(sub, CardDealt, 1)
        assert (card.seq, card.card) == sim.sent_cards[-1]

        dev.stall_writes = True  # the device stops taking transfers: polls go unanswered
        await wait_for(lambda: dev.resets >= 1, 8)  # reset after reset_after timeouts in a row
        await wait_online(drv, 5)  # the reset cleared the stall; the link reopened
        await sim.deal()
        (card,) = await collect(sub, CardDealt, 1)
        assert (card.seq, card.card) == sim.sent_cards[-1]
    finally:
        await drv.stop()
        serving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await serving
        await sim.close()
