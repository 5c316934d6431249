"""A reconnecting link to a device over a :mod:`drivers.transport` connection.

- :class:`Backoff`: capped exponential backoff with jitter.
- :class:`Link`: keeps a connection open. It opens through an
  :data:`~drivers.transport.Opener`, delivers every chunk read to ``on_data``, reports
  :class:`LinkState` changes to ``on_state``, treats ``silence_timeout`` seconds
  without a byte as a lost link (:class:`LinkSilent`, for protocols that promise
  periodic traffic), closes and reopens with :class:`Backoff` until
  :meth:`Link.stop`. A driver whose protocol is polled calls :meth:`Link.drop` after
  N unanswered polls.

Detection bounds: a port that disappears (USB unplug, pty master closed, TCP peer
gone) is reported down as soon as the read fails, i.e. within one event-loop turn;
a silent port after ``silence_timeout`` seconds. Recovery: the next open attempt
after at most ``backoff.maximum`` seconds once the port is back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from .base import LinkError
from .transport import Connection, Opener, cancel_and_wait

log = logging.getLogger(__name__)

__all__ = ["Backoff", "Link", "LinkSilent", "LinkState", "LinkStats"]


class LinkSilent(LinkError):
    """No byte arrived for longer than the link's ``silence_timeout``."""

    code = "LINK_SILENT"


class Backoff:
    """Capped exponential backoff with jitter.

    The n-th delay (from 0) is ``min(maximum, initial * factor**n)`` scaled by a
    random factor in ``[1 - jitter, 1]``: never above ``maximum``, and many devices
    restarted together do not retry in step.
    """

    def __init__(
        self,
        initial: float = 0.1,
        maximum: float = 5.0,
        factor: float = 2.0,
        jitter: float = 0.5,
        rng: random.Random | None = None,
    ) -> None:
        if not (0 < initial <= maximum) or factor < 1 or not 0 <= jitter < 1:
            raise ValueError("need 0 < initial <= maximum, factor >= 1, 0 <= jitter < 1")
        self.initial = initial
        self.maximum = maximum
        self.factor = factor
        self.jitter = jitter
        self.attempt = 0
        self._rng = rng or random.Random()

    def next(self) -> float:
        base = min(self.maximum, self.initial * self.factor ** min(self.attempt, 64))
        self.attempt += 1
        return base * (1.0 - self.jitter * self._rng.random())

    def reset(self) -> None:
        self.attempt = 0


@dataclass(frozen=True)
class LinkState:
    """Whether a :class:`Link` is usable, and why not."""

    up: bool
    reason: str
    since: float  # time.monotonic() of the change
    code: str = ""  # LinkError code of the last loss ("LINK_DOWN", "LINK_SILENT")


@dataclass
class LinkStats:
    opens: int = 0
    open_failures: int = 0
    losses: int = 0
    silences: int = 0
    bytes_rx: int = 0
    bytes_tx: int = 0
    last_rx: float = 0.0  # monotonic

    def to_json(self) -> dict[str, Any]:
        return {
            "opens": self.opens,
            "open_failures": self.open_failures,
            "losses": self.losses,
            "silences": self.silences,
            "bytes_rx": self.bytes_rx,
            "bytes_tx": self.bytes_tx,
        }


class Link:
    """Keeps one connection to a device open, reconnecting forever with backoff.

    - ``on_data(chunk)`` is called (on the loop) with every chunk read.
    - ``on_state(state)`` is called when the link goes up or down.
    - ``silence_timeout``: seconds without a byte that count as a lost link; the
      connection is then closed and reopened. With it set, the link only counts as
      up once a byte has arrived ("the device talks"); without it, as soon as the
      port is open.
    - ``on_connect``: coroutine started after each open (e.g. identify the device,
      switch on automatic status); cancelled when the connection is lost.

    :meth:`write` works whenever a connection is open (polled protocols must be
    able to poll before the first byte arrives).
    """

    def __init__(
        self,
        opener: Opener,
        *,
        on_data: Callable[[bytes], None],
        on_state: Callable[[LinkState], None] | None = None,
        on_connect: Callable[[], Awaitable[None]] | None = None,
        silence_timeout: float | None = None,
        backoff: Backoff | None = None,
        open_timeout: float = 5.0,
        name: str = "link",
    ) -> None:
        self._opener = opener
        self._on_data = on_data
        self._on_state = on_state
        self._on_connect = on_connect
        self.silence_timeout = silence_timeout
        self.backoff = backoff or Backoff()
        self.open_timeout = open_timeout
        self.name = name
        self.stats = LinkStats()
        self.state = LinkState(False, "not started", time.monotonic())
        self._conn: Connection | None = None
        self._task: asyncio.Task[None] | None = None
        self._connect_task: asyncio.Task[None] | None = None
        self._stopping = False
        self._drop_reason: str | None = None
        self._up_event = asyncio.Event()
        self._down_event = asyncio.Event()
        self._down_event.set()

    # -- public API
    @property
    def up(self) -> bool:
        return self.state.up

    @property
    def connected(self) -> bool:
        return self._conn is not None and not self._conn.closed

    @property
    def connection(self) -> Connection | None:
        return self._conn

    async def start(self) -> None:
        """Start connecting in the background; returns at once."""
        if self._task is None or self._task.done():
            self._stopping = False
            self._task = asyncio.create_task(self._run(), name=f"link {self.name}")

    async def stop(self) -> None:
        """Stop reconnecting and close the connection; idempotent."""
        self._stopping = True
        task, self._task = self._task, None
        await cancel_and_wait(task)
        await self._close_conn()
        if self.state.up or self.state.reason != "stopped":
            self._set_state(False, "stopped", "")

    async def write(self, data: bytes) -> None:
        """Write to the open connection; :class:`LinkError` if there is none or it fails."""
        conn = self._conn
        if conn is None or conn.closed:
            raise LinkError(f"{self.name}: link down ({self.state.reason})")
        try:
            await conn.write(data)
        except LinkError as exc:
            self.drop(f"write failed: {exc}")
            raise
        self.stats.bytes_tx += len(data)

    def drop(self, reason: str) -> None:
        """Close the current connection and reconnect (e.g. after N unanswered polls)."""
        conn = self._conn
        if conn is None:
            return
        self._drop_reason = reason
        task = asyncio.get_running_loop().create_task(conn.close())
        task.add_done_callback(lambda t: t.exception() if not t.cancelled() else None)

    async def wait_up(self, timeout: float | None = None) -> None:
        async with asyncio.timeout(timeout):
            await self._up_event.wait()

    async def wait_down(self, timeout: float | None = None) -> None:
        async with asyncio.timeout(timeout):
            await self._down_event.wait()

    # -- internals
    def _set_state(self, up: bool, reason: str, code: str) -> None:
        changed = up != self.state.up
        self.state = LinkState(up, reason, time.monotonic(), code)
        if up:
            self._up_event.set()
            self._down_event.clear()
        else:
            self._up_event.clear()
            self._down_event.set()
        if changed or self.stats.opens + self.stats.open_failures <= 1:
            log.log(
                logging.INFO if up else logging.WARNING,
                "%s: %s (%s)",
                self.name,
                "up" if up else "down",
                reason,
            )
        if changed and self._on_state is not None:
            try:
                self._on_state(self.state)
            except Exception:  # a buggy observer must not kill the link
                log.exception("%s: on_state callback failed", self.name)

    async def _close_conn(self) -> None:
        task, self._connect_task = self._connect_task, None
        await cancel_and_wait(task)
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close()

    async def _run(self) -> None:
        while not self._stopping:
            try:
                async with asyncio.timeout(self.open_timeout):
                    conn = await self._opener()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # LinkError, OSError, TimeoutError, a bug in the opener
                self.stats.open_failures += 1
                if isinstance(exc, LinkError):
                    reason = str(exc)
                else:
                    reason = f"cannot open: {exc or type(exc).__name__}"
                if self.state.up or self.state.reason != reason:
                    self._set_state(False, reason, getattr(exc, "code", LinkError.code))
                await asyncio.sleep(self.backoff.next())
                continue
            self._conn = conn
            self._drop_reason = None
            self.stats.opens += 1
            if self.silence_timeout is None:
                self._set_state(True, f"open: {conn.description}", "")
                self.backoff.reset()
            if self._on_connect is not None:
                self._connect_task = asyncio.create_task(self._run_on_connect())
            code = LinkError.code
            try:
                await self._read_loop(conn)
                reason = "closed"
            except LinkSilent as exc:
                self.stats.silences += 1
                reason, code = str(exc), exc.code
            except LinkError as exc:
                reason = self._drop_reason or str(exc)
            self.stats.losses += 1
            await self._close_conn()
            self._set_state(False, reason, code)
            if self._stopping:
                break
            await asyncio.sleep(self.backoff.next())

    async def _run_on_connect(self) -> None:
        assert self._on_connect is not None
        try:
            await self._on_connect()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("%s: on_connect failed: %s", self.name, exc)

    async def _read_loop(self, conn: Connection) -> None:
        timeout = self.silence_timeout
        while not self._stopping:
            if timeout is None:
                data = await conn.read()
            else:
                try:
                    # asyncio.timeout, not wait_for: on 3.11 wait_for swallows a
                    # cancellation that races with a completed read (gh-86296), and
                    # stop() would then wait for ever.
                    async with asyncio.timeout(timeout):
                        data = await conn.read()
                except TimeoutError:
                    raise LinkSilent(f"silent for {timeout:g} s") from None
            self.stats.bytes_rx += len(data)
            self.stats.last_rx = time.monotonic()
            if not self.state.up:
                self._set_state(True, f"receiving: {conn.description}", "")
                self.backoff.reset()
            try:
                self._on_data(data)
            except Exception:  # a codec bug must not take the link down silently
                log.exception("%s: on_data failed", self.name)
