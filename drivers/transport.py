"""Byte connections to devices: serial ports named by URL, pseudo-terminals, TCP.

This and :mod:`drivers.link` (the reconnecting :class:`~drivers.link.Link` over these
connections) are the only modules of ``drivers/`` that open ports. Codecs never see
them; a driver owns one ``Link`` and feeds the bytes it delivers to its codec.

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
- :func:`cancel_and_wait`: cancel tasks and wait for them without swallowing the
  caller's own cancellation.

A port that disappears (USB unplug, pty master closed, TCP peer gone) makes the
pending ``read()`` fail at once with :class:`~drivers.base.LinkError`.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import logging
import os
import termios
import tty
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .base import LinkError

log = logging.getLogger(__name__)

__all__ = [
    "Connection",
    "FdConnection",
    "LoopbackConnection",
    "Opener",
    "PipeConnection",
    "PtyPair",
    "PtyServer",
    "StreamConnection",
    "TcpServer",
    "cancel_and_wait",
    "open_connection",
    "open_serial",
    "pipe_pair",
    "serial_opener",
    "serve_pty",
    "serve_tcp",
]


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
        # asyncio.timeout, not wait_for: on 3.11 wait_for swallows a cancellation that
        # races with the close completing (gh-86296); the caller's stop would then hang.
        with contextlib.suppress(Exception):
            async with asyncio.timeout(2.0):
                await self._writer.wait_closed()

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
            with contextlib.suppress(Exception):  # asyncio.timeout: as close() above
                async with asyncio.timeout(2.0):
                    await self.server.wait_closed()


async def serve_tcp(handler: Handler, host: str = "127.0.0.1", port: int = 0) -> TcpServer:
    """Serve ``handler(connection)`` to each TCP client; returns once listening.

    A driver connects to ``server.url`` (``socket://host:port``). Port 0 picks a
    free port (read it from ``server.port``).
    """
    srv = TcpServer(handler, host)
    srv.server = await asyncio.start_server(srv._on_client, host, port)
    srv.port = int(srv.server.sockets[0].getsockname()[1])
    return srv
