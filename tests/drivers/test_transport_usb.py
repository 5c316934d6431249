"""USB bulk transport on the real pyusb code, over a fake pyusb backend (no hardware)."""

from __future__ import annotations

import asyncio
import time

import pytest

from drivers.base import DeviceTimeout, LinkError
from drivers.link import Backoff, Link
from drivers.testing import FakeUsbBackend, FakeUsbDevice
from drivers.usb import UsbId, open_usb, parse_usb_url, usb_opener

VID, PID = 0x1209, 0x5A01


def make() -> tuple[FakeUsbDevice, FakeUsbBackend]:
    dev = FakeUsbDevice(VID, PID, "SHOE-0042")
    other = FakeUsbDevice(VID, PID, "SHOE-0099", address=6)
    return dev, FakeUsbBackend(other, dev)


async def test_found_by_ids_and_serial_bulk_both_ways() -> None:
    dev, backend = make()
    conn = await open_usb(VID, PID, serial_number="SHOE-0042", backend=backend)
    assert dev.claimed and conn.description == "usb:1209:5a01:SHOE-0042"
    device_end = dev.device_connection()
    await conn.write(b"\x00hello\x00")
    assert await device_end.read() == b"\x00hello\x00"
    payload = bytes(range(256)) * 2
    await device_end.write(payload)
    got = b""
    async with asyncio.timeout(5):
        while len(got) < len(payload):
            got += await conn.read()
    assert got == payload  # split in 64-byte packets by the fake, joined back
    await conn.close()
    assert not dev.claimed


async def test_no_such_device() -> None:
    dev, backend = make()
    with pytest.raises(LinkError, match="no such USB device"):
        await open_usb(VID, PID, serial_number="NOPE", backend=backend)
    with pytest.raises(LinkError):
        await open_usb(VID, 0x9999, backend=backend)


async def test_reset_after_consecutive_timeouts() -> None:
    dev, backend = make()
    conn = await open_usb(VID, PID, serial_number="SHOE-0042", backend=backend, reset_after=3)
    dev.stall_writes = True
    for _ in range(2):
        with pytest.raises(DeviceTimeout):
            await conn.write(b"x")
    assert dev.resets == 0
    with pytest.raises(LinkError, match="USB reset after 3 consecutive timeouts"):
        await conn.write(b"x")
    assert dev.resets == 1 and conn.closed
    # a fresh connection works again (the reset cleared the stall)
    conn = await open_usb(VID, PID, serial_number="SHOE-0042", backend=backend, reset_after=3)
    await conn.write(b"ok")
    assert await dev.device_connection().read() == b"ok"


async def test_protocol_timeouts_count_and_success_resets_the_count() -> None:
    dev, backend = make()
    conn = await open_usb(VID, PID, serial_number="SHOE-0042", backend=backend, reset_after=2)
    await conn.note_timeout("no ack to PING")
    assert conn.consecutive_timeouts == 1
    await conn.write(b"ping")  # a transfer that works
    assert conn.consecutive_timeouts == 0
    await conn.note_timeout()
    with pytest.raises(LinkError):
        await conn.note_timeout()
    assert dev.resets == 1


async def test_unplug_is_seen_and_the_link_comes_back() -> None:
    dev, backend = make()
    states: list[bool] = []
    link = Link(
        usb_opener(VID, PID, serial_number="SHOE-0042", backend=backend, read_timeout_ms=20),
        on_data=lambda d: None,
        on_state=lambda s: states.append(s.up),
        backoff=Backoff(0.02, 0.1),
    )
    await link.start()
    try:
        await link.wait_up(5)
        t0 = time.monotonic()
        dev.unplug()
        await link.wait_down(5)
        t_down = time.monotonic() - t0
        assert "gone" in link.state.reason or "no such" in link.state.reason
        await asyncio.sleep(0.2)
        dev.replug()
        t0 = time.monotonic()
        await link.wait_up(5)
        t_up = time.monotonic() - t0
    finally:
        await link.stop()
    assert states[:3] == [True, False, True]
    assert t_down < 1.0
    print(f"usb: unplug -> down {t_down * 1000:.1f} ms; replug -> up {t_up:.3f} s")


def test_usb_url() -> None:
    assert parse_usb_url("usb:1209:5a01") == UsbId(0x1209, 0x5A01)
    assert parse_usb_url("usb:1209:5A01:SHOE-0042").serial_number == "SHOE-0042"
    for bad in ("usb:12:zz", "tty:1:2", "usb:1209"):
        with pytest.raises(ValueError):
            parse_usb_url(bad)


async def test_a_close_cancelled_as_its_pending_read_ends_stays_cancelled() -> None:
    """A reset (or drop) closes the connection while a read transfer is under way, and
    the driver is stopped just as that transfer completes: the closing task must end
    cancelled. On Python 3.11 ``asyncio.wait_for`` returned the transfer's result
    instead (gh-86296), the shoe's poll loop went on polling and ``stop()`` waited for
    it for ever (the hang of test_shoe_over_usb_bulk_with_unplug_and_reset under load)."""
    dev, backend = make()
    conn = await open_usb(VID, PID, serial_number="SHOE-0042", backend=backend)
    reader = asyncio.create_task(conn.read())
    async with asyncio.timeout(5):
        while conn._pending_read is None:  # the read transfer is in a worker thread
            await asyncio.sleep(0)
    transfer = conn._pending_read
    closer = asyncio.create_task(conn.close())
    await asyncio.sleep(0)  # the closer now waits for the transfer under way
    assert not closer.done()
    # stop() cancels the closing task in the very turn the transfer completes
    transfer.add_done_callback(lambda _f: closer.cancel())
    await dev.device_connection().write(b"card")
    async with asyncio.timeout(5):
        await asyncio.wait([closer])
    assert closer.cancelled()  # not swallowed: the task that was closing can stop
    assert await reader == b"card"  # and the bytes of that transfer are not lost
    assert conn.closed
    async with asyncio.timeout(5):  # the cancelled close still released the interface
        while dev.claimed:
            await asyncio.sleep(0.005)
