"""Byte links to devices: serial ports named by URL, pseudo-terminals, TCP, and a
reconnecting :class:`Link` with silence detection.

This is the only module of ``drivers/`` that opens ports. Codecs never see it; a
driver owns one :class:`Link` and feeds the bytes it delivers to its codec.

Stable API (other driver packages build on it; do not change signatures):

- :class:`Connection`: an open async byte stream to one device. ``read()`` returns
  at least one byte or raises :class:`~drivers.base.LinkError`; ``write()`` raises
  :class:`~drivers.base.LinkError`; ``close()`` is idempotent and wakes a pending
  ``read()`` (which then raises :class:`~drivers.base.LinkError`).
- :func:`open_connection` / :func:`open_serial` (``url`` → :class:`Connection`) and
  :func:`serial_opener` (``url`` → :data:`Opener`, what a :class:`Link` takes).
  URLs: ``/dev/ttyUSB0``, ``/dev/serial/by-id/...``, any path to a tty (a
  :class:`PtyPair` path too), ``socket://host:port`` (both through
  pyserial-asyncio-fast), ``loop://`` (a loopback: what is written is read back).
- :class:`PtyPair`: a pseudo-terminal; a simulator serves the master side, a
  driver opens :attr:`PtyPair.path` like a serial port. ``unplug()``/``replug()``
  model a USB adapter pulled out and put back (the path disappears, then the same
  path returns when ``link=`` is given).
- :func:`serve_pty` / :func:`serve_tcp`: run a connection handler (a simulator) on
  a pseudo-terminal or a TCP port.
- :func:`pipe_pair`: two in-memory connections wired back to back.
- :class:`Backoff`: capped exponential backoff with jitter.
- :class:`Link`: keeps a connection open. It opens through an :data:`Opener`,
  delivers every chunk read to ``on_data``, reports :class:`LinkState` changes to
  ``on_state``, treats ``silence_timeout`` seconds without a byte as a lost link
  (for protocols that promise periodic traffic), closes and reopens with
  :class:`Backoff` until :meth:`Link.stop`. A driver whose protocol is polled calls
  :meth:`Link.drop` after N unanswered polls.

Detection bounds: a port that disappears (USB unplug, pty master closed, TCP peer
gone) is reported down as soon as the read fails, i.e. within one event-loop turn;
a silent port after ``silence_timeout`` seconds. Recovery: the next open attempt
after at most ``backoff.maximum`` seconds once the port is back.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import errno
import logging
import os
import random
import termios
import time
import tty
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .base import LinkError

log = logging.getLogger(__name__)

__all__ = [
    "Backoff",
    "Connection",
    "FdConnection",
    "Link",
    "LinkSilent",
    "LinkState",
    "LinkStats",
    "LoopbackConnection",
    "Opener",
    "PipeConnection",
    "PtyPair",
    "PtyServer",
    "StreamConnection",
    "TcpServer",
    "cancel_and_wait",
    "is_unplug_error",
    "open_connection",
    "open_serial",
    "pipe_pair",
    "serial_opener",
    "serve_pty",
    "serve_tcp",
]


class LinkSilent(LinkError):
    """No byte arrived for longer than the link's ``silence_timeout``."""

    code = "LINK_SILENT"


# --------------------------------------------------------------------------- helpers


async def cancel_and_wait(*tasks: asyncio.Future[Any] | None, timeout: float | None = None) -> None:
    """Cancel ``tasks`` and wait until they are finished.

    Unlike ``task.cancel(); with suppress(CancelledError): await task``, this never
    swallows the *caller's* own cancellation (``asyncio.wait`` propagates it), and
    marks the tasks' exceptions as retrieved.
    """
    pending: list[asyncio.Future[Any]] = [t for t in tasks if t is not None and not t.done()]
    for t in pending:
        t.cancel()
    if pending:
        await asyncio.wait(pending, timeout=timeout)
    for done in tasks:
        if done is not None and done.done() and not done.cancelled():
            done.exception()


# --------------------------------------------------------------------------- connections


class Connection(abc.ABC):
    """An open byte stream to one device (or, for a simulator, to one host)."""

    description: str = "connection"

    @abc.abstractmethod
    async def read(self, max_bytes: int = 4096) -> bytes:
        """Wait for and return 1..``max_bytes`` bytes.

        Raises :class:`LinkError` when the stream ends, fails or is closed. Cancelling
        a pending read loses no data.
        """

    @abc.abstractmethod
    async def write(self, data: bytes) -> None:
        """Send ``data`` (waits while the peer's buffers are full); :class:`LinkError` if down."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Close; idempotent. A pending :meth:`read` raises :class:`LinkError`."""

    @property
    @abc.abstractmethod
    def closed(self) -> bool:
        """True once closed (by us or by the other end)."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.description}>"


class StreamConnection(Connection):
    """A connection over an asyncio (reader, writer) pair: serial ports and TCP sockets."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, description: str
    ) -> None:
        self._reader = reader
        self._writer = writer
        self.description = description
        self._closed = False

    async def read(self, max_bytes: int = 4096) -> bytes:
        if self._closed:
            raise LinkError(f"{self.description}: closed")
        try:
            data = await self._reader.read(max_bytes)
        except (OSError, EOFError) as exc:
            raise LinkError(f"{self.description}: read failed: {exc}") from exc
        except Exception as exc:  # serial.SerialException is an IOError, but be safe
            raise LinkError(f"{self.description}: read failed: {exc}") from exc
        if not data:
            self._closed = True
            raise LinkError(f"{self.description}: closed by the other end")
        return data

    async def write(self, data: bytes) -> None:
        if self._closed or self._writer.transport.is_closing():
            raise LinkError(f"{self.description}: closed")
        try:
            self._writer.write(data)
            await self._writer.drain()
        except Exception as exc:
            raise LinkError(f"{self.description}: write failed: {exc}") from exc

    async def close(self) -> None:
        self._closed = True
        if not self._writer.transport.is_closing():
            # abort, not close: a graceful close flushes (tcdrain) in an executor
            # thread, which never returns on a line whose other end stopped reading.
            self._writer.transport.abort()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._writer.wait_closed(), 2.0)

    @property
    def closed(self) -> bool:
        return self._closed or self._writer.transport.is_closing()


class _ByteQueue:
    """An async byte buffer with end-of-stream, safe to cancel readers on."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._event = asyncio.Event()
        self._eof: str | None = None

    def feed(self, data: bytes) -> None:
        if self._eof is None and data:
            self._buf += data
            self._event.set()

    def feed_eof(self, reason: str) -> None:
        if self._eof is None:
            self._eof = reason
        self._event.set()

    @property
    def eof(self) -> bool:
        return self._eof is not None

    async def read(self, max_bytes: int, description: str) -> bytes:
        while not self._buf:
            if self._eof is not None:
                raise LinkError(f"{description}: {self._eof}")
            self._event.clear()
            await self._event.wait()
        data = bytes(self._buf[:max_bytes])
        del self._buf[:max_bytes]
        return data


class PipeConnection(Connection):
    """One end of an in-memory pipe (see :func:`pipe_pair`)."""

    def __init__(self, inbox: _ByteQueue, description: str) -> None:
        self._inbox = inbox
        self._peer: PipeConnection | None = None
        self.description = description
        self._closed = False

    async def read(self, max_bytes: int = 4096) -> bytes:
        if self._closed:
            raise LinkError(f"{self.description}: closed")
        return await self._inbox.read(max_bytes, self.description)

    async def write(self, data: bytes) -> None:
        peer = self._peer
        if self._closed or peer is None or peer._closed:
            raise LinkError(f"{self.description}: closed")
        peer._inbox.feed(bytes(data))
        await asyncio.sleep(0)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._inbox.feed_eof("closed")
        if self._peer is not None:
            self._peer._inbox.feed_eof("closed by the other end")

    @property
    def closed(self) -> bool:
        return self._closed or self._inbox.eof


def pipe_pair(name: str = "pipe") -> tuple[PipeConnection, PipeConnection]:
    """Two connections wired back to back: what one writes, the other reads.

    Returns ``(host_end, device_end)``; the names only differ in ``description``.
    Closing either end ends both.
    """
    a = PipeConnection(_ByteQueue(), f"{name}:host")
    b = PipeConnection(_ByteQueue(), f"{name}:device")
    a._peer, b._peer = b, a
    return a, b


class LoopbackConnection(Connection):
    """``loop://``: what is written is read back (pyserial's loopback, natively async)."""

    def __init__(self) -> None:
        self._q = _ByteQueue()
        self.description = "loop://"
        self._closed = False

    async def read(self, max_bytes: int = 4096) -> bytes:
        if self._closed:
            raise LinkError("loop://: closed")
        return await self._q.read(max_bytes, self.description)

    async def write(self, data: bytes) -> None:
        if self._closed:
            raise LinkError("loop://: closed")
        self._q.feed(bytes(data))
        await asyncio.sleep(0)

    async def close(self) -> None:
        self._closed = True
        self._q.feed_eof("closed")

    @property
    def closed(self) -> bool:
        return self._closed


class FdConnection(Connection):
    """A connection over a non-blocking file descriptor (a pty master). Owns the fd."""

    def __init__(self, fd: int, description: str) -> None:
        os.set_blocking(fd, False)
        self._fd = fd
        self.description = description
        self._closed = False
        self._waiters: set[asyncio.Future[None]] = set()

    async def _wait(self, writable: bool) -> None:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()

        def ready() -> None:
            if not fut.done():
                fut.set_result(None)

        add, remove = (
            (loop.add_writer, loop.remove_writer)
            if writable
            else (
                loop.add_reader,
                loop.remove_reader,
            )
        )
        add(self._fd, ready)
        self._waiters.add(fut)
        try:
            await fut
        finally:
            self._waiters.discard(fut)
            if not self._closed:
                remove(self._fd)

    async def read(self, max_bytes: int = 4096) -> bytes:
        while True:
            if self._closed:
                raise LinkError(f"{self.description}: closed")
            try:
                data = os.read(self._fd, max_bytes)
            except BlockingIOError:
                await self._wait(writable=False)
                continue
            except OSError as exc:
                raise LinkError(f"{self.description}: read failed: {exc}") from exc
            if not data:
                raise LinkError(f"{self.description}: end of file")
            return data

    async def write(self, data: bytes) -> None:
        view = memoryview(bytes(data))
        while view:
            if self._closed:
                raise LinkError(f"{self.description}: closed")
            try:
                n = os.write(self._fd, view)
            except BlockingIOError:
                await self._wait(writable=True)
                continue
            except OSError as exc:
                raise LinkError(f"{self.description}: write failed: {exc}") from exc
            view = view[n:]

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        loop = asyncio.get_running_loop()
        with contextlib.suppress(Exception):
            loop.remove_reader(self._fd)
        with contextlib.suppress(Exception):
            loop.remove_writer(self._fd)
        for fut in list(self._waiters):
            if not fut.done():
                fut.set_exception(LinkError(f"{self.description}: closed"))
        with contextlib.suppress(OSError):
            os.close(self._fd)

    @property
    def closed(self) -> bool:
        return self._closed


# --------------------------------------------------------------------------- opening by URL

#: Something that opens a fresh connection to the device (a :class:`Link` calls it
#: again after every loss). It raises :class:`LinkError` (or OSError) on failure.
Opener = Callable[[], Awaitable[Connection]]


async def open_connection(
    url: str,
    *,
    baudrate: int = 9600,
    bytesize: int = 8,
    parity: str = "N",
    stopbits: float = 1,
    rtscts: bool = False,
    xonxoff: bool = False,
    exclusive: bool = True,
    **serial_kwargs: Any,
) -> Connection:
    """Open the port named by ``url`` and return a :class:`Connection`.

    ``exclusive`` locks a tty against a second reader (the real SS2 capture shows
    two programs reading one port and tearing each other's lines apart). Every
    failure is raised as :class:`LinkError`.
    """
    if url.startswith("loop://"):
        return LoopbackConnection()
    import serial
    import serial_asyncio_fast

    kwargs: dict[str, Any] = dict(serial_kwargs)
    if not url.startswith("socket://"):
        kwargs.update(
            baudrate=baudrate,
            bytesize=bytesize,
            parity=parity,
            stopbits=stopbits,
            rtscts=rtscts,
            xonxoff=xonxoff,
            exclusive=exclusive,
        )
    try:
        reader, writer = await serial_asyncio_fast.open_serial_connection(url=url, **kwargs)
    except (OSError, serial.SerialException, ValueError) as exc:
        raise LinkError(f"{url}: cannot open: {exc}") from exc
    return StreamConnection(reader, writer, url)


#: Alias kept for readers of the driver contract (``open_serial(url, baudrate, ...)``).
open_serial = open_connection


def serial_opener(url: str, baudrate: int = 9600, **kwargs: Any) -> Opener:
    """An :data:`Opener` for :class:`Link` that opens ``url`` with these settings."""

    async def opener() -> Connection:
        return await open_connection(url, baudrate=baudrate, **kwargs)

    return opener


# --------------------------------------------------------------------------- pty and TCP


class PtyPair:
    """A pseudo-terminal for a simulator: serve :attr:`master`, point a driver at :attr:`path`.

    The pair keeps its own handle on the slave side open, so a driver may close and
    reopen :attr:`path` without the simulator seeing an end of file. Both sides are
    raw (no echo, no CR/LF translation).

    ``link``: also create a symlink at this path (like ``/dev/serial/by-id/...``);
    :meth:`unplug` removes it and closes the pty (the driver's reads fail, like a
    pulled USB adapter), :meth:`replug` makes a fresh pty behind the same link.
    """

    def __init__(self, link: str | Path | None = None) -> None:
        self.link = Path(link) if link is not None else None
        self.master: FdConnection
        self.slave_name = ""
        self._slave_fd = -1
        self._open()

    def _open(self) -> None:
        master_fd, slave_fd = os.openpty()
        tty.setraw(slave_fd, termios.TCSANOW)
        tty.setraw(master_fd, termios.TCSANOW)
        self._slave_fd = slave_fd
        self.slave_name = os.ttyname(slave_fd)
        self.master = FdConnection(master_fd, f"pty master of {self.slave_name}")
        if self.link is not None:
            with contextlib.suppress(FileNotFoundError):
                self.link.unlink()
            self.link.symlink_to(self.slave_name)

    @property
    def path(self) -> str:
        """Where a driver opens the device: the symlink if any, else the slave tty."""
        return str(self.link) if self.link is not None else self.slave_name

    @property
    def plugged(self) -> bool:
        return not self.master.closed

    async def unplug(self) -> None:
        """Close the pty (drivers see a read error) and remove the link."""
        await self.master.close()
        if self._slave_fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._slave_fd)
            self._slave_fd = -1
        if self.link is not None:
            with contextlib.suppress(FileNotFoundError):
                self.link.unlink()

    def replug(self) -> None:
        """A new pty behind the same :attr:`link` (the old master must be unplugged)."""
        if self.plugged:
            raise RuntimeError("replug() before unplug()")
        self._open()

    async def close(self) -> None:
        await self.unplug()

    async def __aenter__(self) -> PtyPair:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


Handler = Callable[[Connection], Awaitable[None]]


@dataclass
class PtyServer:
    """A handler served on a :class:`PtyPair`; see :func:`serve_pty`."""

    pty: PtyPair
    handler: Handler
    task: asyncio.Task[None] | None = None

    @property
    def path(self) -> str:
        return self.pty.path

    def _start(self) -> None:
        self.task = asyncio.create_task(self._serve(self.pty.master), name=f"pty {self.path}")

    async def _serve(self, conn: Connection) -> None:
        with contextlib.suppress(LinkError):
            await self.handler(conn)

    async def unplug(self) -> None:
        await self.pty.unplug()
        if self.task is not None:
            await asyncio.wait([self.task], timeout=2.0)
            if not self.task.done():
                await cancel_and_wait(self.task)

    def replug(self) -> None:
        self.pty.replug()
        self._start()

    async def close(self) -> None:
        await cancel_and_wait(self.task)
        await self.pty.close()


async def serve_pty(handler: Handler, link: str | Path | None = None) -> PtyServer:
    """Serve ``handler(connection)`` on a new pseudo-terminal; returns at once.

    Point a driver at ``server.path``. ``unplug()``/``replug()`` end and restart the
    service (the handler is called again with the new master).
    """
    server = PtyServer(PtyPair(link), handler)
    server._start()
    return server


class TcpServer:
    """A handler served to TCP clients; see :func:`serve_tcp`."""

    def __init__(self, handler: Handler, host: str) -> None:
        self.handler = handler
        self.host = host
        self.port = 0
        self.server: asyncio.Server | None = None
        self._clients: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        """What a driver opens: ``socket://host:port``."""
        return f"socket://{self.host}:{self.port}"

    async def _on_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        conn = StreamConnection(reader, writer, f"tcp client {peer}")
        task = asyncio.current_task()
        if task is not None:
            self._clients.add(task)
        try:
            await self.handler(conn)
        except (LinkError, asyncio.CancelledError):
            pass  # client gone, or server closing: this task is the connection's top level
        finally:
            if task is not None:
                self._clients.discard(task)
            await conn.close()

    async def close(self) -> None:
        """Stop listening and end every client's handler."""
        if self.server is not None:
            self.server.close()
        for task in list(self._clients):
            task.cancel()
        if self._clients:
            await asyncio.wait(list(self._clients), timeout=2.0)
        if self.server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.server.wait_closed(), 2.0)


async def serve_tcp(handler: Handler, host: str = "127.0.0.1", port: int = 0) -> TcpServer:
    """Serve ``handler(connection)`` to each TCP client; returns once listening.

    A driver connects to ``server.url`` (``socket://host:port``). Port 0 picks a
    free port (read it from ``server.port``).
    """
    srv = TcpServer(handler, host)
    srv.server = await asyncio.start_server(srv._on_client, host, port)
    srv.port = int(srv.server.sockets[0].getsockname()[1])
    return srv


# --------------------------------------------------------------------------- reconnecting link


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


#: What a vanished tty or USB device raises (a pty slave read once the master is gone
#: gives EIO; pyserial wraps it in SerialException, we in LinkError).
_UNPLUG_ERRNOS = (errno.EIO, errno.ENXIO, errno.ENODEV)


def is_unplug_error(exc: BaseException) -> bool:
    """True for the OSErrors a vanished tty or USB device raises."""
    cur: BaseException | None = exc
    while cur is not None:
        if isinstance(cur, OSError) and cur.errno in _UNPLUG_ERRNOS:
            return True
        cur = cur.__cause__
    return False
