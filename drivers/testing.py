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
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

from .base import LinkError
from .transport import Connection, Opener

__all__ = [
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
