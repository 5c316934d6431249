"""The publisher's small parts: its wake-up (:class:`Wake`), the publication window
answered from the client's PUBACK callback without a task (:class:`Window`), and the
table's work deferred until the outbox's publications are acknowledged
(:class:`AfterPublication`)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol

import aiomqtt
from paho.mqtt.reasoncodes import ReasonCode

from .client import OnAck, Sent, _AckClient
from .items import Item
from .settings import AFTER_PUBLICATION_MAX_S

log = logging.getLogger("firmware_host.mqtt")


class Wake:
    """The publisher's wake-up (``event``: new work, an answer, a freed slot) and its
    rest (``idle``: set by the publisher when nothing is in flight and nothing woke it),
    on the event loop the link runs on (:meth:`bind`). :meth:`notify` is safe from any
    thread."""

    __slots__ = ("event", "idle", "loop", "thread")

    def __init__(self) -> None:
        self.event = asyncio.Event()
        self.idle = asyncio.Event()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread: int | None = None

    def bind(self) -> None:
        """The running event loop is the link's (called as the link starts)."""
        self.loop = asyncio.get_running_loop()
        self.thread = threading.get_ident()

    def on_loop_thread(self) -> bool:
        return self.thread == threading.get_ident()

    def notify(self) -> None:
        """Wake the publisher (the outbox grew). Cheap, never blocks, any thread."""
        loop = self.loop
        if loop is not None and self.thread != threading.get_ident():
            loop.call_soon_threadsafe(self.up)
        else:
            self.up()

    def up(self) -> None:
        """New work: not idle, and the publisher wakes (event loop's thread)."""
        self.idle.clear()
        self.event.set()


class Publishing(Protocol):
    """What the window tells of each publication (the outbox pump, ``pump.py``)."""

    def send(self, client: _AckClient, item: Item, on_ack: OnAck | None = None) -> Sent | None:
        """Hand ``item`` to the client, noted in flight; None if it cannot be published."""
        ...

    def released(self, item: Item) -> None:
        """``item`` is no longer in flight."""
        ...

    def answered(self, item: Item, refused: ReasonCode | None, sent_at: float) -> None:
        """The broker's answer to ``item``: accepted (None), or its refusal."""
        ...


class _Pending:
    """One publication in the window: sent at ``perf_counter()`` ``sent_at``, its
    PUBACK's message id (None if dropped as unpublishable) and its timeout."""

    __slots__ = ("item", "mid", "sent_at", "timer")

    def __init__(self, item: Item) -> None:
        self.item = item
        self.sent_at = time.perf_counter()
        self.mid: int | None = None
        self.timer: asyncio.TimerHandle | None = None


class Window:
    """The publications in flight on one connection (at most the pump's window): each
    is written to the socket when sent, and the broker's PUBACK answers it through a
    callback (:meth:`_AckClient.send`'s ``on_ack``), not a task awaiting it: no task,
    ``wait_for`` or event per publication. A publication not answered within
    ``timeout`` s (as aiomqtt's own ``publish`` would time out), or an answer the pump
    fails to act on, is raised by :meth:`check` in the publisher's next turn (the
    connection is then dropped and made again, as a failed task's exception was).
    Every answer and timeout sets ``wake``."""

    def __init__(
        self, pump: Publishing, client: _AckClient, timeout: float, wake: asyncio.Event
    ) -> None:
        self.pump, self.client, self.timeout, self.wake = pump, client, timeout, wake
        self.pending: set[_Pending] = set()
        self.failure: BaseException | None = None
        self._loop = asyncio.get_running_loop()

    def __len__(self) -> int:
        return len(self.pending)

    def send(self, item: Item) -> None:
        """Hand ``item`` to the client; raises :class:`aiomqtt.MqttError` if the
        connection is gone (nothing is then in flight for it)."""
        p = _Pending(item)
        sent = self.pump.send(self.client, item, functools.partial(self._answered, p))
        self.pending.add(p)
        if sent is None:  # unpublishable, dropped: taken as answered (never blocks the queue)
            self._loop.call_soon(self._answered, p, None)
            return
        p.mid = sent.mid
        p.timer = self._loop.call_later(self.timeout, self._expired, p)

    def _answered(self, p: _Pending, refused: ReasonCode | None) -> None:
        if p not in self.pending:
            return  # timed out or abandoned meanwhile
        self.pending.discard(p)
        if p.timer is not None:
            p.timer.cancel()
        pump = self.pump
        pump.released(p.item)
        try:
            pump.answered(p.item, refused, p.sent_at)
        except Exception as exc:  # raised in the publisher's turn, as a task's would be
            if self.failure is None:
                self.failure = exc
        self.wake.set()

    def _expired(self, p: _Pending) -> None:
        if p not in self.pending:
            return
        self.pending.discard(p)
        if p.mid is not None:
            self.client.forget(p.mid)
        self.pump.released(p.item)
        if self.failure is None:
            self.failure = aiomqtt.MqttError("Operation timed out")
        self.wake.set()

    def check(self) -> None:
        """Raise what failed since the last check (a timeout, or the pump's own error)."""
        exc, self.failure = self.failure, None
        if exc is not None:
            raise exc

    async def drained(self, timeout: float) -> None:
        """Wait until nothing is in flight (at most ``timeout`` s); raise what failed."""
        wake = self.wake  # set by every answer and timeout
        deadline = self._loop.time() + timeout
        while self.pending and self.failure is None:
            left = deadline - self._loop.time()
            if left <= 0:
                break
            wake.clear()
            with contextlib.suppress(TimeoutError):  # asyncio.timeout: not wait_for (gh-86296)
                async with asyncio.timeout(left):
                    await wake.wait()
        self.check()

    def abandon(self) -> None:
        """The connection is over: what is in flight is no longer waited for. It stays
        in the pump's in-flight records, for the connection's end to count its outbox
        entries as caught by a drop (:meth:`OutboxPump.count_drops`: how an MQTT 3.1.1
        broker refuses) and send them again on the next connection, which starts
        with no snapshot or response in flight."""
        for p in self.pending:
            if p.timer is not None:
                p.timer.cancel()
            if p.mid is not None:
                self.client.forget(p.mid)
        self.pending.clear()


class AfterPublication:
    """Work waiting for the outbox's publications in flight (the daemon's deferrer:
    pruning, the extensions' hooks), and the timer that runs it at the latest. The
    publisher runs it (:meth:`run`) in a turn where it read the outbox and has no outbox
    entry in flight; event loop's thread only.

    Made before the journal and the link, both given it: the journal defers its work
    here (``Journal(defer=after.queue)``) and the link publishes through ``wake`` (its
    publisher's wake-up) and says whether it is ``publishing``."""

    __slots__ = ("_timer", "publishing", "wake", "work")

    def __init__(self, wake: Wake | None = None) -> None:
        #: The link's publisher's wake-up (the link takes this one).
        self.wake = wake if wake is not None else Wake()
        #: Whether a publisher serves a connection now (set by the link's pump).
        self.publishing = False
        self.work: list[Callable[[], None]] = []
        self._timer: asyncio.TimerHandle | None = None

    def __bool__(self) -> bool:
        return bool(self.work)

    def queue(self, callback: Callable[[], None]) -> None:
        """Queue ``callback``: with a publisher :attr:`publishing` on a connection, for
        its next turn (woken now) and :data:`AFTER_PUBLICATION_MAX_S` at the latest; else
        for the next loop turn."""
        self.work.append(callback)
        if self.publishing:
            self.wake.event.set()  # a turn of the publisher: it runs them if nothing is in flight
            self.later(AFTER_PUBLICATION_MAX_S)
        else:
            self.later(0.0)

    def later(self, delay: float) -> None:
        """Run the queued work in ``delay`` s at the latest."""
        timer = self._timer
        if timer is not None:
            if timer.when() <= asyncio.get_running_loop().time() + delay:
                return
            timer.cancel()
        self._timer = asyncio.get_running_loop().call_later(delay, self.run)

    def run(self) -> None:
        """Run the queued work (what it queues in turn waits for the next turn)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        work, self.work = self.work, []
        for callback in work:
            try:
                callback()
            except Exception:  # as the event loop's own handler: logged, the rest runs
                log.exception("mqtt: work queued after the publication failed")


__all__ = ["AfterPublication", "Publishing", "Wake", "Window"]
