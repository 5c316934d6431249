"""Fault-injecting transports for tests and for ``tablectl sim --faults``.

Wire a driver back to back with its simulator and put faults in between, after
bellows/zigpy's test transports. Stable API (the other driver helper uses it):

- :class:`Faults`: the knobs for one direction of a byte stream (mutable: a test
  may switch ``silent`` on and off while the link runs).
- :class:`FaultyConnection`: wraps a :class:`~drivers.transport.Connection`;
  ``rx`` faults apply to what it reads, ``tx`` faults to what it writes.
- :class:`FaultyOpener`: wraps an :data:`~drivers.transport.Opener` for a
  :class:`~drivers.transport.Link`; :meth:`FaultyOpener.unplug` kills the open
  connection and makes every open fail until :meth:`FaultyOpener.replug`.
- :func:`mangle`: the byte-level fault function itself (sans-I/O, seeded).
- :func:`parse_faults`: ``"chunk=1,garbage=0.01,drop=0.1,delay=0.01,corrupt=0"``
  (the ``--faults`` syntax of ``tablectl sim``).

Fault kinds: one byte at a time (``chunk_size=1``), random garbage inserted
(``garbage_rate`` per byte; anywhere, or only right after ``frame_end`` =
"between frames"), bytes replaced by random ones (``corrupt_rate``), dropped
writes or reads (``drop_rate`` per chunk), ``delay`` seconds per chunk, ``silent``
(everything discarded), unplug/replug (:class:`FaultyOpener`).

USB: :class:`FakeUsbBackend` is a pyusb backend serving :class:`FakeUsbDevice`
objects, so :mod:`drivers.usb` runs on the real pyusb code without hardware; the
device side is an async connection for a simulator, with unplug and stall knobs.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import queue
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from types import SimpleNamespace
from typing import Any

import usb.core
from usb.backend import IBackend as _IBackend

from .base import LinkError
from .transport import Connection, Opener

__all__ = [
    "FakeUsbBackend",
    "FakeUsbDevice",
    "FaultStats",
    "Faults",
    "FaultyConnection",
    "FaultyOpener",
    "mangle",
    "parse_faults",
]


@dataclass
class FaultStats:
    """What a :class:`Faults` instance actually did (to report and to assert on)."""

    garbage_bytes: int = 0
    corrupted_bytes: int = 0
    dropped_chunks: int = 0
    dropped_bytes: int = 0
    silenced_bytes: int = 0


@dataclass
class Faults:
    """Faults for one direction of a byte stream. All default to off."""

    chunk_size: int | None = None  # deliver at most this many bytes at a time (1: byte by byte)
    garbage_rate: float = 0.0  # probability, per byte, of inserting a random byte before it
    frame_end: bytes | None = None  # if set, insert garbage only right after this sequence
    corrupt_rate: float = 0.0  # probability, per byte, of replacing it by a different byte
    drop_rate: float = 0.0  # probability, per chunk, of silently dropping it
    delay: float = 0.0  # seconds to wait before each chunk
    silent: bool = False  # discard everything (a silent device, a cut RX wire)
    seed: int | None = 0  # RNG seed (None: random)
    garbage_alphabet: bytes | None = None  # bytes to draw garbage from (None: 0..255)
    stats: FaultStats = field(default_factory=FaultStats)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self._tail = b""

    @property
    def active(self) -> bool:
        return bool(
            self.chunk_size
            or self.garbage_rate
            or self.corrupt_rate
            or self.drop_rate
            or self.delay
            or self.silent
        )

    def describe(self) -> str:
        parts = []
        for f in fields(self):
            if f.name in ("stats", "seed", "garbage_alphabet", "frame_end"):
                continue
            v = getattr(self, f.name)
            if v:
                parts.append(f"{f.name}={v}")
        return ", ".join(parts) or "none"


def mangle(data: bytes, faults: Faults) -> bytes:
    """Apply garbage insertion, corruption and silence to ``data`` (no chunking, no delay)."""
    st = faults.stats
    if faults.silent:
        st.silenced_bytes += len(data)
        return b""
    if not (faults.garbage_rate or faults.corrupt_rate):
        return data
    rng = faults.rng
    out = bytearray()
    end = faults.frame_end
    alphabet = faults.garbage_alphabet
    for b in data:
        if (
            faults.garbage_rate
            and rng.random() < faults.garbage_rate
            and (end is None or faults._tail.endswith(end))
        ):
            out.append(rng.choice(alphabet) if alphabet else rng.randrange(256))
            st.garbage_bytes += 1
        if faults.corrupt_rate and rng.random() < faults.corrupt_rate:
            b = (b + rng.randrange(1, 256)) % 256
            st.corrupted_bytes += 1
        out.append(b)
        if end is not None:
            faults._tail = (faults._tail + bytes([b]))[-len(end) :]
    return bytes(out)


def _chunks(data: bytes, size: int | None) -> list[bytes]:
    if not size or size <= 0:
        return [data] if data else []
    return [data[i : i + size] for i in range(0, len(data), size)]


class FaultyConnection(Connection):
    """A connection with faults on its read side (``rx``) and write side (``tx``)."""

    def __init__(
        self, inner: Connection, rx: Faults | None = None, tx: Faults | None = None
    ) -> None:
        self.inner = inner
        self.rx = rx or Faults()
        self.tx = tx or Faults()
        self.description = f"faulty({inner.description})"
        self._pending = bytearray()
        self._killed: str | None = None

    def kill(self, reason: str = "unplugged") -> None:
        """Make the connection fail now (reads and writes raise :class:`LinkError`)."""
        self._killed = reason
        task = asyncio.get_running_loop().create_task(self.inner.close())
        task.add_done_callback(lambda t: t.exception() if not t.cancelled() else None)

    async def read(self, max_bytes: int = 4096) -> bytes:
        while True:
            if self._killed:
                raise LinkError(f"{self.description}: {self._killed}")
            if self._pending:
                if self.rx.delay:
                    await asyncio.sleep(self.rx.delay)  # before taking: cancelling loses nothing
                n = min(max_bytes, self.rx.chunk_size or max_bytes)
                data = bytes(self._pending[:n])
                del self._pending[:n]
                return data
            try:
                raw = await self.inner.read(max_bytes)
            except LinkError:
                if self._killed:
                    raise LinkError(f"{self.description}: {self._killed}") from None
                raise
            if self.rx.drop_rate and self.rx.rng.random() < self.rx.drop_rate:
                self.rx.stats.dropped_chunks += 1
                self.rx.stats.dropped_bytes += len(raw)
                continue
            self._pending += mangle(raw, self.rx)

    async def write(self, data: bytes) -> None:
        if self._killed:
            raise LinkError(f"{self.description}: {self._killed}")
        tx = self.tx
        if tx.drop_rate and tx.rng.random() < tx.drop_rate:
            tx.stats.dropped_chunks += 1
            tx.stats.dropped_bytes += len(data)
            return
        data = mangle(bytes(data), tx)
        for chunk in _chunks(data, tx.chunk_size):
            if tx.delay:
                await asyncio.sleep(tx.delay)
            await self.inner.write(chunk)

    async def close(self) -> None:
        await self.inner.close()

    @property
    def closed(self) -> bool:
        return self._killed is not None or self.inner.closed


class FaultyOpener:
    """An opener whose connections carry faults, and that can be unplugged.

    ``await opener()`` opens through ``inner`` and wraps the result in a
    :class:`FaultyConnection` sharing this opener's ``rx``/``tx`` :class:`Faults`
    (so changing them affects the live connection). ``unplug()`` kills the live
    connection and makes opens raise :class:`LinkError` until ``replug()``.
    """

    def __init__(self, inner: Opener, rx: Faults | None = None, tx: Faults | None = None) -> None:
        self.inner = inner
        self.rx = rx or Faults()
        self.tx = tx or Faults()
        self.plugged = True
        self.current: FaultyConnection | None = None
        self.opens = 0

    async def __call__(self) -> Connection:
        if not self.plugged:
            raise LinkError("unplugged: no such device")
        conn = FaultyConnection(await self.inner(), self.rx, self.tx)
        self.current = conn
        self.opens += 1
        return conn

    def unplug(self) -> None:
        self.plugged = False
        if self.current is not None:
            self.current.kill("device unplugged")

    def replug(self) -> None:
        self.plugged = True


def _truthy(value: str) -> bool:
    return value.lower() in ("1", "true", "yes", "on")


_FAULT_KEYS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "chunk": ("chunk_size", int),
    "garbage": ("garbage_rate", float),
    "corrupt": ("corrupt_rate", float),
    "drop": ("drop_rate", float),
    "delay": ("delay", float),
    "silent": ("silent", _truthy),
    "seed": ("seed", int),
}


def parse_faults(spec: str | None) -> Faults:
    """Parse ``"chunk=1,garbage=0.01,corrupt=0.001,drop=0.05,delay=0.002,silent=0,seed=3"``.

    Also accepts ``between`` (garbage only between CR LF-terminated lines). Raises
    ValueError naming the bad item.
    """
    faults = Faults()
    if not spec:
        return faults
    for item in spec.split(","):
        item = item.strip()
        if not item:
            continue
        if item == "between":
            faults.frame_end = b"\n"
            continue
        key, sep, value = item.partition("=")
        if not sep or key not in _FAULT_KEYS:
            known = ", ".join([*_FAULT_KEYS, "between"])
            raise ValueError(f"bad fault {item!r}; use key=value with key in {known}")
        attr, conv = _FAULT_KEYS[key]
        try:
            setattr(faults, attr, conv(value))
        except ValueError as exc:
            raise ValueError(f"bad fault {item!r}: {exc}") from exc
    rate_attrs = ("garbage_rate", "corrupt_rate", "drop_rate")
    for attr in rate_attrs:
        if not 0.0 <= getattr(faults, attr) <= 1.0:
            raise ValueError(f"{attr} must be between 0 and 1")
    faults.rng = random.Random(faults.seed)
    return faults


# --------------------------------------------------------------------------- fake USB


class FakeUsbDevice:
    """A simulated USB device with one interface and a bulk IN/OUT endpoint pair.

    The host side is reached through :class:`FakeUsbBackend` (real pyusb code runs
    on top of it); the device side is :meth:`device_connection`, an async
    :class:`~drivers.transport.Connection` a simulator serves. Knobs: ``plugged``
    (False: gone from enumeration, transfers fail with ENODEV), ``stall_writes`` /
    ``stall_reads`` (transfers time out), ``resets`` (how many USB resets the host
    did; a reset clears the stalls unless ``stall_survives_reset``).
    """

    EP_IN = 0x81
    EP_OUT = 0x02

    def __init__(
        self,
        vendor_id: int = 0x1209,
        product_id: int = 0x0001,
        serial_number: str = "SIM0001",
        *,
        bus: int = 1,
        address: int = 5,
        max_packet: int = 64,
    ) -> None:
        self.vendor_id = vendor_id
        self.product_id = product_id
        self.serial_number = serial_number
        self.bus = bus
        self.address = address
        self.max_packet = max_packet
        self.plugged = True
        self.stall_writes = False
        self.stall_reads = False
        self.stall_survives_reset = False
        self.resets = 0
        self.claimed = False
        self.configuration: int | None = None
        self.to_host: queue.Queue[bytes] = queue.Queue()
        self.from_host: queue.Queue[bytes] = queue.Queue()
        self._to_host_buf = bytearray()

    def unplug(self) -> None:
        self.plugged = False
        self.claimed = False

    def replug(self) -> None:
        self.plugged = True
        self.configuration = None

    # -- device side
    def device_connection(self) -> Connection:
        """The simulator's end: reads what the host wrote, writes what the host reads."""
        return _FakeUsbDeviceEnd(self)


class _FakeUsbDeviceEnd(Connection):
    def __init__(self, dev: FakeUsbDevice) -> None:
        self.dev = dev
        self.description = f"fake usb device {dev.vendor_id:04x}:{dev.product_id:04x}"
        self._closed = False

    async def read(self, max_bytes: int = 4096) -> bytes:
        while True:
            if self._closed:
                raise LinkError(f"{self.description}: closed")
            try:
                return self.dev.from_host.get_nowait()
            except queue.Empty:
                await asyncio.sleep(0.002)

    async def write(self, data: bytes) -> None:
        if self._closed:
            raise LinkError(f"{self.description}: closed")
        self.dev.to_host.put(bytes(data))

    async def close(self) -> None:
        self._closed = True

    @property
    def closed(self) -> bool:
        return self._closed


class FakeUsbBackend(_IBackend):  # type: ignore[misc]
    """A pyusb backend (a ``usb.backend.IBackend``) serving :class:`FakeUsbDevice` s.

    Pass it as ``backend=`` to :func:`drivers.usb.open_usb` or ``usb.core.find``.
    """

    def __init__(self, *devices: FakeUsbDevice) -> None:
        self.devices = list(devices)

    # -- errors
    @staticmethod
    def _gone() -> Exception:
        exc: Exception = usb.core.USBError(
            "No such device (it may have been disconnected)", -4, errno.ENODEV
        )
        return exc

    @staticmethod
    def _timeout() -> Exception:
        exc: Exception = usb.core.USBTimeoutError("Operation timed out", -7, errno.ETIMEDOUT)
        return exc

    # -- enumeration and descriptors
    def enumerate_devices(self) -> Any:
        return [d for d in self.devices if d.plugged]

    def get_parent(self, dev: FakeUsbDevice) -> None:
        return None

    def get_device_descriptor(self, dev: FakeUsbDevice) -> Any:
        return SimpleNamespace(
            bLength=18,
            bDescriptorType=1,
            bcdUSB=0x0200,
            bDeviceClass=0xFF,
            bDeviceSubClass=0,
            bDeviceProtocol=0,
            bMaxPacketSize0=64,
            idVendor=dev.vendor_id,
            idProduct=dev.product_id,
            bcdDevice=0x0100,
            iManufacturer=1,
            iProduct=2,
            iSerialNumber=3,
            bNumConfigurations=1,
            address=dev.address,
            bus=dev.bus,
            port_number=1,
            port_numbers=(1,),
            speed=3,
        )

    def get_configuration_descriptor(self, dev: FakeUsbDevice, config: int) -> Any:
        return SimpleNamespace(
            bLength=9,
            bDescriptorType=2,
            wTotalLength=32,
            bNumInterfaces=1,
            bConfigurationValue=1,
            iConfiguration=0,
            bmAttributes=0x80,
            bMaxPower=50,
            extra_descriptors=[],
        )

    def get_interface_descriptor(self, dev: FakeUsbDevice, intf: int, alt: int, config: int) -> Any:
        if intf != 0 or alt != 0:
            raise IndexError("no such interface")
        return SimpleNamespace(
            bLength=9,
            bDescriptorType=4,
            bInterfaceNumber=0,
            bAlternateSetting=0,
            bNumEndpoints=2,
            bInterfaceClass=0xFF,
            bInterfaceSubClass=0,
            bInterfaceProtocol=0,
            iInterface=0,
            extra_descriptors=[],
        )

    def get_endpoint_descriptor(
        self, dev: FakeUsbDevice, ep: int, intf: int, alt: int, config: int
    ) -> Any:
        if ep not in (0, 1):
            raise IndexError("no such endpoint")
        return SimpleNamespace(
            bLength=7,
            bDescriptorType=5,
            bEndpointAddress=dev.EP_IN if ep == 0 else dev.EP_OUT,
            bmAttributes=0x02,  # bulk
            wMaxPacketSize=dev.max_packet,
            bInterval=0,
            bRefresh=0,
            bSynchAddress=0,
            extra_descriptors=[],
        )

    # -- handles
    def open_device(self, dev: FakeUsbDevice) -> FakeUsbDevice:
        if not dev.plugged:
            raise self._gone()
        return dev

    def close_device(self, dev_handle: FakeUsbDevice) -> None:
        pass

    def set_configuration(self, dev_handle: FakeUsbDevice, config_value: int) -> None:
        if not dev_handle.plugged:
            raise self._gone()
        dev_handle.configuration = config_value

    def get_configuration(self, dev_handle: FakeUsbDevice) -> int:
        if not dev_handle.plugged:
            raise self._gone()
        if dev_handle.configuration is None:
            raise usb.core.USBError("Configuration not set", -9, None)
        return dev_handle.configuration

    def set_interface_altsetting(self, dev_handle: FakeUsbDevice, intf: int, alt: int) -> None:
        pass

    def claim_interface(self, dev_handle: FakeUsbDevice, intf: int) -> None:
        if not dev_handle.plugged:
            raise self._gone()
        dev_handle.claimed = True

    def release_interface(self, dev_handle: FakeUsbDevice, intf: int) -> None:
        dev_handle.claimed = False

    def is_kernel_driver_active(self, dev_handle: FakeUsbDevice, intf: int) -> bool:
        return False

    def detach_kernel_driver(self, dev_handle: FakeUsbDevice, intf: int) -> None:
        pass

    def attach_kernel_driver(self, dev_handle: FakeUsbDevice, intf: int) -> None:
        pass

    def clear_halt(self, dev_handle: FakeUsbDevice, ep: int) -> None:
        pass

    def reset_device(self, dev_handle: FakeUsbDevice) -> None:
        if not dev_handle.plugged:
            raise self._gone()
        dev_handle.resets += 1
        dev_handle.configuration = None
        dev_handle.claimed = False
        if not dev_handle.stall_survives_reset:
            dev_handle.stall_reads = dev_handle.stall_writes = False

    # -- transfers
    def bulk_write(
        self, dev_handle: FakeUsbDevice, ep: int, intf: int, data: Any, timeout: int
    ) -> int:
        if not dev_handle.plugged:
            raise self._gone()
        if dev_handle.stall_writes:
            time.sleep(min(timeout, 50) / 1000)
            raise self._timeout()
        payload = bytes(data)
        dev_handle.from_host.put(payload)
        return len(payload)

    def bulk_read(
        self, dev_handle: FakeUsbDevice, ep: int, intf: int, buff: Any, timeout: int
    ) -> int:
        if not dev_handle.plugged:
            raise self._gone()
        buf = dev_handle._to_host_buf
        if dev_handle.stall_reads:
            time.sleep(min(timeout, 100) / 1000)
            raise self._timeout()
        if not buf:
            with contextlib.suppress(queue.Empty):
                buf += dev_handle.to_host.get(timeout=min(timeout, 100) / 1000)
        if not dev_handle.plugged:
            raise self._gone()
        if not buf:
            raise self._timeout()
        n = min(len(buff), len(buf), dev_handle.max_packet)
        for i in range(n):
            buff[i] = buf[i]
        del buf[:n]
        return n

    def ctrl_transfer(
        self,
        dev_handle: FakeUsbDevice,
        bmRequestType: int,
        bRequest: int,
        wValue: int,
        wIndex: int,
        data: Any,
        timeout: int,
    ) -> int:
        if not dev_handle.plugged:
            raise self._gone()
        if bmRequestType & 0x80 and bRequest == 6 and wValue >> 8 == 3:  # GET_DESCRIPTOR string
            index = wValue & 0xFF
            if index == 0:
                desc = bytes([4, 3, 0x09, 0x04])  # langid en-US
            else:
                text = {
                    1: "Table Controller Sim",
                    2: "Fake USB device",
                    3: dev_handle.serial_number,
                }
                body = text.get(index, "").encode("utf-16-le")
                desc = bytes([2 + len(body), 3]) + body
            n = min(len(data), len(desc))
            for i in range(n):
                data[i] = desc[i]
            return n
        return 0
