"""USB bulk-endpoint transport (pyusb), for devices that are not USB-serial adapters.

A device is found by vendor/product id (and optionally its serial-number string),
its interface claimed, and its first bulk IN and bulk OUT endpoints used as a byte
stream: a :class:`~drivers.transport.Connection`, so a
:class:`~drivers.transport.Link` reconnects it like any serial port.

pyusb is blocking; every transfer runs in a worker thread. Reads poll with a short
timeout (an idle device is not an error). Write timeouts, and protocol-level
timeouts reported by the driver above (:meth:`UsbBulkConnection.note_timeout`,
e.g. "no ack to a poll"), are counted: after ``reset_after`` in a row the device
is USB-reset (``dev.reset()``, which makes it re-enumerate) and the connection
fails with :class:`~drivers.base.LinkError`, so the link reopens it from scratch.
A device that vanished (unplugged: ENODEV/EIO/ENOENT, or libusb's "no device") fails
the connection at once.

Stable API: :func:`open_usb`, :func:`usb_opener`, :class:`UsbBulkConnection`,
:class:`UsbId`.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
from dataclasses import dataclass
from typing import Any

from .base import DeviceTimeout, LinkError
from .transport import Connection, Opener

log = logging.getLogger(__name__)

__all__ = ["UsbBulkConnection", "UsbId", "open_usb", "usb_opener"]

#: errno values (and libusb error codes) that mean "the device is gone".
_GONE_ERRNOS = {errno.ENODEV, errno.EIO, errno.ENOENT, errno.ENXIO, errno.ESHUTDOWN}
_LIBUSB_NO_DEVICE = -4
_LIBUSB_IO = -1


@dataclass(frozen=True)
class UsbId:
    """Which device to open."""

    vendor_id: int
    product_id: int
    serial_number: str | None = None
    interface: int = 0

    def __str__(self) -> str:
        s = f"usb:{self.vendor_id:04x}:{self.product_id:04x}"
        return f"{s}:{self.serial_number}" if self.serial_number else s


def _is_gone(exc: BaseException) -> bool:
    code = getattr(exc, "backend_error_code", None)
    return getattr(exc, "errno", None) in _GONE_ERRNOS or code in (_LIBUSB_NO_DEVICE, _LIBUSB_IO)


class UsbBulkConnection(Connection):
    """A claimed USB interface used as a byte stream over its bulk endpoints."""

    def __init__(
        self,
        dev: Any,
        ident: UsbId,
        ep_in: Any,
        ep_out: Any,
        *,
        read_size: int = 512,
        read_timeout_ms: int = 100,
        write_timeout_ms: int = 1000,
        reset_after: int = 3,
    ) -> None:
        self.dev = dev
        self.ident = ident
        self.ep_in = ep_in
        self.ep_out = ep_out
        self.read_size = read_size
        self.read_timeout_ms = read_timeout_ms
        self.write_timeout_ms = write_timeout_ms
        self.reset_after = reset_after
        self.description = str(ident)
        self.consecutive_timeouts = 0
        self.resets = 0
        self._closed = False
        self._failed: str | None = None
        self._pending_read: asyncio.Future[bytes | None] | None = None
        self._leftover = bytearray()

    # -- blocking parts (worker thread)
    def _read_once(self) -> bytes | None:
        import usb.core

        try:
            data = self.ep_in.read(self.read_size, self.read_timeout_ms)
        except usb.core.USBTimeoutError:
            return None  # idle
        return bytes(data)

    def _write_all(self, data: bytes) -> None:
        self.ep_out.write(data, self.write_timeout_ms)

    # -- async API
    async def read(self, max_bytes: int = 4096) -> bytes:
        loop = asyncio.get_running_loop()
        while True:
            if self._leftover:
                out = bytes(self._leftover[:max_bytes])
                del self._leftover[:max_bytes]
                return out
            self._check()
            if self._pending_read is None:
                # Kept across cancellations: a transfer already under way is not lost.
                self._pending_read = loop.run_in_executor(None, self._read_once)
            fut: asyncio.Future[bytes | None] = self._pending_read
            try:
                data = await asyncio.shield(fut)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._pending_read = None
                raise self._fail(exc, "read") from exc
            self._pending_read = None
            if data:
                self.consecutive_timeouts = 0
                self._leftover += data

    async def write(self, data: bytes) -> None:
        import usb.core

        self._check()
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(None, self._write_all, bytes(data))
        except usb.core.USBTimeoutError as exc:
            await self._timed_out(f"write timed out after {self.write_timeout_ms} ms")
            raise DeviceTimeout(f"{self.description}: write timed out") from exc
        except Exception as exc:
            raise self._fail(exc, "write") from exc
        self.consecutive_timeouts = 0

    async def note_timeout(self, what: str = "no answer") -> None:
        """Count a protocol-level timeout; resets the device after ``reset_after`` in a row."""
        await self._timed_out(what)

    async def _timed_out(self, what: str) -> None:
        self.consecutive_timeouts += 1
        log.warning("%s: %s (%d in a row)", self.description, what, self.consecutive_timeouts)
        if self.consecutive_timeouts >= self.reset_after:
            n = self.consecutive_timeouts
            await self.reset()
            self._failed = f"USB reset after {n} consecutive timeouts"
            raise LinkError(f"{self.description}: {self._failed}")

    async def reset(self) -> None:
        """USB-reset the device (it re-enumerates); this connection is then unusable."""
        loop = asyncio.get_running_loop()
        self.resets += 1
        self.consecutive_timeouts = 0
        try:
            await loop.run_in_executor(None, self.dev.reset)
        except Exception as exc:  # a device that vanished cannot be reset
            log.warning("%s: USB reset failed: %s", self.description, exc)
        await self.close()

    def _check(self) -> None:
        if self._failed:
            raise LinkError(f"{self.description}: {self._failed}")
        if self._closed:
            raise LinkError(f"{self.description}: closed")

    def _fail(self, exc: BaseException, what: str) -> LinkError:
        if _is_gone(exc):
            self._failed = f"device gone ({exc})"
        else:
            self._failed = f"{what} failed: {exc}"
        return LinkError(f"{self.description}: {self._failed}")

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        import usb.util

        loop = asyncio.get_running_loop()

        def release() -> None:
            with contextlib.suppress(Exception):
                usb.util.release_interface(self.dev, self.ident.interface)
            with contextlib.suppress(Exception):
                usb.util.dispose_resources(self.dev)

        pending, self._pending_read = self._pending_read, None
        try:
            if pending is not None:
                # Let the read transfer under way end first (a reader awaiting it still
                # gets its bytes). asyncio.wait, not wait_for: on Python 3.11 wait_for
                # returns the transfer's result when the closing task is cancelled in
                # the turn the transfer ends, swallowing the cancellation (gh-86296): a
                # poll loop doing a USB reset then never stops, nor does the driver's
                # stop(). wait() neither cancels the transfer nor hides a cancellation.
                await asyncio.wait([pending], timeout=self.read_timeout_ms / 1000 + 1)
                if pending.done() and not pending.cancelled():
                    pending.exception()  # retrieved: a failing last read is no news here
        finally:
            # even when cancelled: the interface is released, not left claimed
            released = loop.run_in_executor(None, release)
        await released

    @property
    def closed(self) -> bool:
        return self._closed or self._failed is not None


def _open_blocking(ident: UsbId, backend: Any, kwargs: dict[str, Any]) -> UsbBulkConnection:
    import usb.core
    import usb.util

    def match(dev: Any) -> bool:
        if ident.serial_number is None:
            return True
        try:
            return bool(usb.util.get_string(dev, dev.iSerialNumber) == ident.serial_number)
        except (usb.core.USBError, ValueError):
            return False

    try:
        dev = usb.core.find(
            idVendor=ident.vendor_id,
            idProduct=ident.product_id,
            custom_match=match,
            backend=backend,
        )
    except usb.core.NoBackendError as exc:
        raise LinkError(f"{ident}: no USB backend (libusb missing?): {exc}") from exc
    if dev is None:
        raise LinkError(f"{ident}: no such USB device")
    try:
        with contextlib.suppress(NotImplementedError, usb.core.USBError):
            if dev.is_kernel_driver_active(ident.interface):
                dev.detach_kernel_driver(ident.interface)
        try:
            cfg = dev.get_active_configuration()
        except usb.core.USBError:
            dev.set_configuration()
            cfg = dev.get_active_configuration()
        intf = cfg[(ident.interface, 0)]

        def bulk(direction: int) -> Any:
            return usb.util.find_descriptor(
                intf,
                custom_match=lambda e: (
                    usb.util.endpoint_direction(e.bEndpointAddress) == direction
                    and usb.util.endpoint_type(e.bmAttributes) == usb.util.ENDPOINT_TYPE_BULK
                ),
            )

        ep_in, ep_out = bulk(usb.util.ENDPOINT_IN), bulk(usb.util.ENDPOINT_OUT)
        if ep_in is None or ep_out is None:
            raise LinkError(
                f"{ident}: interface {ident.interface} has no bulk IN and OUT endpoints"
            )
        usb.util.claim_interface(dev, ident.interface)
    except usb.core.USBError as exc:
        with contextlib.suppress(Exception):
            usb.util.dispose_resources(dev)
        raise LinkError(f"{ident}: cannot open: {exc}") from exc
    return UsbBulkConnection(dev, ident, ep_in, ep_out, **kwargs)


async def open_usb(
    vendor_id: int,
    product_id: int,
    *,
    serial_number: str | None = None,
    interface: int = 0,
    backend: Any = None,
    read_size: int = 512,
    read_timeout_ms: int = 100,
    write_timeout_ms: int = 1000,
    reset_after: int = 3,
) -> UsbBulkConnection:
    """Find the device, claim ``interface`` and return its bulk byte stream.

    ``backend``: a pyusb backend (None: libusb1 as pyusb chooses; tests pass
    :class:`drivers.testing.FakeUsbBackend`). Raises :class:`LinkError`.
    """
    ident = UsbId(vendor_id, product_id, serial_number, interface)
    kwargs = {
        "read_size": read_size,
        "read_timeout_ms": read_timeout_ms,
        "write_timeout_ms": write_timeout_ms,
        "reset_after": reset_after,
    }
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(None, _open_blocking, ident, backend, kwargs)


def usb_opener(vendor_id: int, product_id: int, **kwargs: Any) -> Opener:
    """An :data:`~drivers.transport.Opener` for :class:`~drivers.transport.Link`."""

    async def opener() -> Connection:
        return await open_usb(vendor_id, product_id, **kwargs)

    return opener


def parse_usb_url(url: str) -> UsbId:
    """``usb:VVVV:PPPP[:SERIAL]`` (hex ids) -> :class:`UsbId`; ValueError if malformed."""
    parts = url.split(":")
    if parts[0] != "usb" or len(parts) not in (3, 4):
        raise ValueError(f"{url!r}: expected usb:VVVV:PPPP or usb:VVVV:PPPP:SERIAL")
    try:
        vid, pid = int(parts[1], 16), int(parts[2], 16)
    except ValueError as exc:
        raise ValueError(f"{url!r}: vendor and product ids are 4 hex digits") from exc
    if not (0 <= vid <= 0xFFFF and 0 <= pid <= 0xFFFF):
        raise ValueError(f"{url!r}: ids must be 0000..ffff")
    return UsbId(vid, pid, parts[3] if len(parts) == 4 and parts[3] else None)
