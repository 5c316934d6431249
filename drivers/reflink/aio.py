"""Reflink over asyncio: the host end on a reconnecting :class:`drivers.transport.Link`
and the device end (simulators) on any :class:`drivers.transport.Connection`.

Both wrap the sans-I/O :class:`~drivers.reflink.link.LinkEndpoint` with a
:class:`Pump`: bytes read are fed to it, its output frames are written in order
by one writer task, and one timer task drives its retransmissions.

Several drivers may share one host end (boards on one RS-485 bus): :func:`acquire_host`
hands out one :class:`ReflinkHost` per port, reference-counted, and each driver
attaches at its own address.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable, Hashable, Iterable
from typing import Protocol

from ..base import DeviceTimeout, FrameLog, LinkError
from ..link import Backoff, Link, LinkState
from ..transport import Connection, Opener, cancel_and_wait
from .device import DeviceModel
from .frame import FrameError
from .link import (
    Acked,
    FrameRejected,
    LinkEndpoint,
    LinkEvent,
    LinkTimers,
    PeerRestarted,
    Received,
    Role,
    SendFailed,
)

log = logging.getLogger(__name__)

Writer = Callable[[bytes], Awaitable[None]]


def new_session(rng: random.Random | None = None) -> int:
    """A random non-zero 16-bit session number (chosen anew on every start)."""
    return (rng or random.SystemRandom()).randrange(1, 0x10000)


async def wait_event(event: asyncio.Event, timeout: float) -> bool:
    """Wait for ``event`` at most ``timeout`` seconds; True if it was set.

    ``asyncio.timeout`` rather than ``wait_for``: on Python 3.11 ``wait_for`` can
    swallow a cancellation that races with its timeout, and a task that loops on
    it then never stops.
    """
    try:
        async with asyncio.timeout(timeout):
            await event.wait()
    except TimeoutError:
        return False
    return True


class Pump:
    """Moves one endpoint's frames: feed bytes in, write frames out, fire timers."""

    def __init__(
        self,
        endpoint: LinkEndpoint,
        on_event: Callable[[LinkEvent], None],
        on_tx: Callable[[int, bytes], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.endpoint = endpoint
        self.on_event = on_event
        self.on_tx = on_tx
        self.clock = clock
        self.writer: Writer | None = None
        self._queue: asyncio.Queue[bytes] = asyncio.Queue()
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self.write_errors = 0

    def start(self) -> None:
        if not self._tasks:
            self._tasks = [
                asyncio.create_task(self._timer(), name="reflink timer"),
                asyncio.create_task(self._write_loop(), name="reflink writer"),
            ]

    async def stop(self) -> None:
        tasks, self._tasks = self._tasks, []
        await cancel_and_wait(*tasks)  # never swallows the caller's own cancellation

    def feed(self, data: bytes) -> None:
        self.endpoint.feed(data, self.clock())
        self.step()

    def send(self, payload: bytes, address: int | None = None) -> int:
        token = self.endpoint.send(payload, self.clock(), address=address)
        self.step()
        return token

    def step(self) -> None:
        """Queue the endpoint's output, hand out its events, re-arm the timer."""
        for address, wire in self.endpoint.take_output():
            if self.on_tx is not None:
                self.on_tx(address, wire)
            self._queue.put_nowait(wire)
        for ev in self.endpoint.take_events():
            try:
                self.on_event(ev)
            except Exception:
                log.exception("reflink event handler failed on %r", ev)
        self._wake.set()

    def discard_output(self) -> None:
        while not self._queue.empty():
            self._queue.get_nowait()

    async def _timer(self) -> None:
        while True:
            deadline = self.endpoint.next_deadline()
            self._wake.clear()
            if deadline is None:
                await self._wake.wait()
            else:
                delay = deadline - self.clock()
                if delay > 0:
                    await wait_event(self._wake, delay)
            self.endpoint.tick(self.clock())
            self.step()
            self._wake.clear()

    async def _write_loop(self) -> None:
        while True:
            wire = await self._queue.get()
            writer = self.writer
            if writer is None:
                continue  # no connection: the frame is lost, like on a cut wire
            try:
                await writer(wire)
            except Exception as exc:  # LinkError, a USB write timeout...: the frame is lost, the
                self.write_errors += 1  # link layer retransmits it; the writer must live on
                log.debug("write failed: %s", exc)


class Attachment(Protocol):
    """What a driver attached to a :class:`ReflinkHost` at one address receives."""

    frames: FrameLog

    def on_reflink_message(self, payload: bytes, wire: bytes) -> None: ...
    def on_reflink_peer_restarted(self) -> None: ...
    def on_reflink_link_state(self, state: LinkState) -> None: ...


class ReflinkHost:
    """The host end of one port: one link, one endpoint, any number of device addresses."""

    def __init__(
        self,
        opener: Opener,
        *,
        name: str = "reflink",
        timers: LinkTimers | None = None,
        backoff: Backoff | None = None,
        session: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.endpoint = LinkEndpoint(
            Role.HOST,
            session if session is not None else new_session(),
            timers=timers or LinkTimers(),
        )
        self.pump = Pump(self.endpoint, self._on_event, self._on_tx, clock)
        self.link = Link(
            opener,
            on_data=self._on_data,
            on_state=self._on_state,
            backoff=backoff or Backoff(0.05, 2.0),
            name=name,
        )
        self.pump.writer = self.link.write
        self._futures: dict[int, asyncio.Future[bytes]] = {}
        self._attached: dict[int, Attachment] = {}
        self._started = False
        self.rejected = 0

    def attach(self, address: int, who: Attachment) -> None:
        if address in self._attached:
            raise ValueError(f"{self.name}: two devices at address {address}")
        self._attached[address] = who

    def detach(self, address: int) -> None:
        self._attached.pop(address, None)

    @property
    def attached(self) -> int:
        return len(self._attached)

    async def start(self) -> None:
        if not self._started:
            self._started = True
            self.pump.start()
            await self.link.start()

    async def stop(self) -> None:
        if self._started:
            self._started = False
            await self.link.stop()
            await self.pump.stop()
            self.endpoint.abort_all("stopped")
            self.pump.step()

    @property
    def up(self) -> bool:
        return self.link.up

    async def request(self, payload: bytes, address: int) -> bytes:
        """Send one DATA frame and wait for its ACK: return the ACK's payload.

        Raises :class:`DeviceTimeout` when every retransmission went unanswered and
        :class:`LinkError` when the port is down.
        """
        if not self.link.connected:
            raise LinkError(f"{self.name}: link down ({self.link.state.reason})")
        fut: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        token = self.pump.send(payload, address)
        self._futures[token] = fut
        self.pump.step()
        return await fut

    # -- callbacks ---------------------------------------------------------------------
    def _on_data(self, data: bytes) -> None:
        self.pump.feed(data)

    def _on_tx(self, address: int, wire: bytes) -> None:
        who = self._attached.get(address)
        if who is not None:
            who.frames.tx(wire)

    def _on_state(self, state: LinkState) -> None:
        if not state.up:
            self.pump.discard_output()
            self.endpoint.abort_all(f"link down: {state.reason}")
            self.pump.step()
        for who in list(self._attached.values()):
            who.on_reflink_link_state(state)

    def _on_event(self, ev: LinkEvent) -> None:
        if isinstance(ev, Acked):
            who = self._attached.get(ev.address)
            if who is not None:
                who.frames.rx(ev.wire)
            fut = self._futures.pop(ev.token, None)
            if fut is not None and not fut.done():
                fut.set_result(ev.reply)
        elif isinstance(ev, SendFailed):
            fut = self._futures.pop(ev.token, None)
            if fut is not None and not fut.done():
                if ev.reason.startswith("link down") or ev.reason == "stopped":
                    fut.set_exception(LinkError(f"{self.name}: {ev.reason}"))
                else:
                    fut.set_exception(
                        DeviceTimeout(
                            f"{self.name}: address {ev.address} did not acknowledge "
                            f"({self.endpoint.timers.max_retries} retransmissions)"
                        )
                    )
        elif isinstance(ev, Received):
            who = self._attached.get(ev.address)
            if who is not None:
                who.frames.rx(ev.wire)
                who.on_reflink_message(ev.payload, ev.wire)
        elif isinstance(ev, PeerRestarted):
            who = self._attached.get(ev.address)
            if who is not None:
                who.on_reflink_peer_restarted()
        elif isinstance(ev, FrameRejected):
            self.rejected += 1
            if ev.error.raw:
                for who in self._attached.values():
                    who.frames.rx(b"\x00" + ev.error.raw + b"\x00")
            log.debug("%s: rejected frame: %s", self.name, ev.error)


_HOSTS: dict[Hashable, ReflinkHost] = {}


def acquire_host(key: Hashable, factory: Callable[[], ReflinkHost]) -> ReflinkHost:
    """The shared :class:`ReflinkHost` of a port (created by ``factory`` on first use)."""
    host = _HOSTS.get(key)
    if host is None:
        host = _HOSTS[key] = factory()
    return host


async def release_host(key: Hashable, host: ReflinkHost) -> None:
    """Stop and forget the port's host once no driver is attached to it."""
    if host.attached == 0:
        if _HOSTS.get(key) is host:
            del _HOSTS[key]
        await host.stop()


class SimUnit:
    """One simulated device on a connection: a model behind a DEVICE endpoint."""

    def __init__(
        self,
        model: DeviceModel,
        *,
        address: int = 0,
        timers: LinkTimers | None = None,
        session: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.model = model
        self.address = address
        self.timers = timers or LinkTimers()
        self.clock = clock
        self.frames = FrameLog(256)
        self._kick_pending = False
        self.endpoint = self._new_endpoint(session)
        self.pump = Pump(self.endpoint, self._on_event, lambda _a, w: self.frames.tx(w), clock)
        model.on_output = self.kick_soon

    def _new_endpoint(self, session: int | None) -> LinkEndpoint:
        return LinkEndpoint(
            Role.DEVICE,
            session if session is not None else new_session(),
            address=self.address,
            timers=self.timers,
            responder=self.model.handle,
        )

    def reboot(self, session: int | None = None) -> None:
        """Power-cycle the device's link: new session, nothing pending, no memory of the host."""
        self.endpoint = self._new_endpoint(session)
        self.pump.endpoint = self.endpoint
        self.pump.discard_output()
        self.model.take_outbox()

    def kick(self) -> None:
        """Move the model's queued messages to the link."""
        self._kick_pending = False
        for payload in self.model.take_outbox():
            self.pump.send(payload)
        self.pump.step()

    def kick_soon(self) -> None:
        if not self._kick_pending:
            self._kick_pending = True
            asyncio.get_running_loop().call_soon(self.kick)

    def _on_event(self, ev: LinkEvent) -> None:
        if isinstance(ev, Received | Acked):
            self.frames.rx(ev.wire)


class SimRunner:
    """Serves simulated device units on whatever connection it is handed (pty, TCP, pipe).

    The units keep their state and their queued events across connections, so an
    unplug/replug loses nothing the device had to say.
    """

    def __init__(self, units: Iterable[SimUnit]) -> None:
        self.units = list(units)
        self.connection: Connection | None = None
        self.connections = 0

    def start(self) -> None:
        for u in self.units:
            u.pump.start()

    async def stop(self) -> None:
        for u in self.units:
            await u.pump.stop()
        if self.connection is not None:
            await self.connection.close()

    async def serve(self, conn: Connection) -> None:
        """A :data:`drivers.transport.Handler`: run until the connection ends."""
        self.start()
        self.connection = conn
        self.connections += 1
        for u in self.units:
            u.pump.writer = conn.write
            u.kick()
        try:
            while True:
                try:
                    data = await conn.read()
                except LinkError:
                    return
                for u in self.units:
                    u.pump.feed(data)
        finally:
            for u in self.units:
                if u.pump.writer == conn.write:
                    u.pump.writer = None
            if self.connection is conn:
                self.connection = None


def frame_error_text(exc: FrameError) -> str:
    return f"{exc.code}: {exc}"
