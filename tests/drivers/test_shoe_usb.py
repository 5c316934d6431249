"""The shoe on USB bulk endpoints: the same reference protocol through pyusb (a fake
backend from drivers.testing), unplug/replug, and a USB reset after repeated timeouts."""

from __future__ import annotations

import asyncio
import contextlib

from drivers.base import HealthState
from drivers.link import Backoff
from drivers.reflink.bench import FAST, SIM_TIMERS, Bench, collect, wait_for, wait_online
from drivers.shoe.driver import UsbShoeDriver
from drivers.shoe.sim import ShoeSimulator
from drivers.testing import FakeUsbBackend, FakeUsbDevice
from drivers.transport import Connection
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


class _SwallowsCancellation(Connection):
    """A USB-like connection whose protocol-timeout hook (``note_timeout``, called by
    the poll loop) loses a cancellation, as 3.11's ``asyncio.wait_for`` did inside a
    USB reset (gh-86296)."""

    def __init__(self, inner: Connection) -> None:
        self.inner = inner
        self.description = inner.description
        self.in_note = asyncio.Event()
        self.swallowed = 0

    async def read(self, max_bytes: int = 4096) -> bytes:
        return await self.inner.read(max_bytes)

    async def write(self, data: bytes) -> None:
        await self.inner.write(data)

    async def close(self) -> None:
        await self.inner.close()

    @property
    def closed(self) -> bool:
        return self.inner.closed

    async def note_timeout(self, what: str = "no answer") -> None:
        self.in_note.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            if self.swallowed:  # only the first one (the test's teardown can still end)
                raise
            self.swallowed += 1  # lost: the caller carries on as if nothing happened


async def test_stop_ends_even_if_a_cancellation_is_lost_below_the_poll_loop() -> None:
    sim = ShoeSimulator(decks=1, seed=9, timers=SIM_TIMERS)
    bench = Bench(sim)
    conns: list[_SwallowsCancellation] = []

    async def opener() -> Connection:
        conns.append(_SwallowsCancellation(await bench.opener()))
        return conns[-1]

    drv = UsbShoeDriver(
        "shoe",
        {"usb": "usb:1209:5348", "decks": 1, **FAST},
        opener=opener,
        backoff=Backoff(0.01, 0.05, jitter=0.1),
    )
    await drv.start()
    try:
        await wait_online(drv, 5)
        sim.faults.silent = True  # polls go unanswered: the poll loop calls note_timeout
        async with asyncio.timeout(5):
            await conns[-1].in_note.wait()
    finally:
        async with asyncio.timeout(5):  # was: stop() waited for the poll loop for ever
            await drv.stop()
        await bench.close()
    assert conns[-1].swallowed == 1  # the cancellation was indeed lost below
    assert drv.health.state is HealthState.OFFLINE
