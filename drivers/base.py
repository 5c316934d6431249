"""What every driver shares: typed events, a health record, the raw-frame log.

A driver turns bytes (serial, USB) or pin changes (GPIO) into typed events and
commands. The daemon never sees bytes: it reads :class:`DeviceEvent` objects from a
driver's ``events()`` async iterator (or a callback), reads ``health`` and calls
``get_status()`` for snapshots (console, MQTT ``devices/<name>``). The events, the
health record and :class:`HealthChanged` are the shared ones of
:mod:`tablecommon.events` (each kind of device has its events there, which every
driver of the kind emits); they are re-exported here.

Layers of each device package (``drivers/<device>/``), after bellows/zigpy:

- ``codec.py``: sans-I/O. Bytes in (any chunking), typed frames/events out, and the
  reverse. Raises only :class:`CodecError` subclasses on bad input.
- ``driver.py``: the async driver over a :mod:`drivers.transport` link, with health,
  watchdog and reconnect.
- ``sim.py``: a simulated device speaking the same wire protocol.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Iterator

from tablecommon.errors import CodedError
from tablecommon.events.base import DeviceEvent, Health, HealthChanged, HealthState

__all__ = [
    "CodecError",
    "DeviceEvent",
    "DeviceTimeout",
    "DriverError",
    "FrameLog",
    "Health",
    "HealthChanged",
    "HealthState",
    "LinkError",
]


class DriverError(CodedError):
    """Base of the drivers' error tree: a coded error (``code``, ``message``) like every
    other of the project. Its text is the message alone (device health and logs show
    it), the code is ``code``."""

    code = "DRIVER_ERROR"

    def __init__(self, message: str = "", *, code: str | None = None) -> None:
        super().__init__(message, code=code)

    def __str__(self) -> str:
        return self.message


class CodecError(DriverError, ValueError):
    """A frame that cannot be decoded (bad checksum, bad length, garbage)."""

    code = "CODEC_ERROR"


class LinkError(DriverError, ConnectionError):
    """The link to the device is down (port gone, write failed)."""

    code = "LINK_DOWN"


class DeviceTimeout(DriverError, TimeoutError):
    """The device did not answer in time."""

    code = "DEVICE_TIMEOUT"


class FrameLog:
    """The last N raw frames sent and received on a link, dumped on a fault (Klipper)."""

    def __init__(self, size: int = 64) -> None:
        self._frames: collections.deque[tuple[float, str, bytes]] = collections.deque(maxlen=size)

    def rx(self, frame: bytes) -> None:
        self._frames.append((time.time(), "RX", bytes(frame)))

    def tx(self, frame: bytes) -> None:
        self._frames.append((time.time(), "TX", bytes(frame)))

    def __iter__(self) -> Iterator[tuple[float, str, bytes]]:
        return iter(list(self._frames))

    def __len__(self) -> int:
        return len(self._frames)

    def dump(self) -> list[str]:
        """Lines in the fixture format ``time<TAB>RX|TX<TAB>frame`` (non-printables escaped)."""
        return [
            f"{t:.3f}\t{d}\t{f.decode('latin-1').encode('unicode_escape').decode('ascii')}"
            for t, d, f in self._frames
        ]
