"""The floor link: connect, serve one connection (subscribe, receive requests, publish),
reconnect with backoff."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
import socket
import ssl
import threading
import time
from collections.abc import Sequence

import aiomqtt
from paho.mqtt.client import MQTT_CLEAN_START_FIRST_ONLY
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

from .. import boundedjson
from ..jsonio import JSON
from ..schemas import response
from .client import _AckClient, _refusal
from .core import LinkBase
from .items import Item
from .settings import (
    MARKS_BATCH,
    MAX_INCOMING_QUEUED,
    MAX_QUEUED,
    REQUEST_PRIORITY,
    REQUEST_TOPICS,
    STABLE_CONNECTION_S,
)

#: One logger for the whole link, as before the package was split (logs name it).
log = logging.getLogger("firmware_host.mqtt")


class _Pending:
    """One publication in the window: sent at ``perf_counter()`` ``sent_at``, its
    PUBACK's message id (None if dropped as unpublishable) and its timeout."""

    __slots__ = ("item", "mid", "sent_at", "timer")

    def __init__(self, item: Item) -> None:
        self.item = item
        self.sent_at = time.perf_counter()
        self.mid: int | None = None
        self.timer: asyncio.TimerHandle | None = None


class _Window:
    """The publications in flight on one connection (at most ``max_inflight``): each
    is written to the socket when sent, and the broker's PUBACK answers it through a
    callback (:meth:`_AckClient.send`'s ``on_ack``), not a task awaiting it: no task,
    ``wait_for`` or event per publication. A publication not answered within
    ``timeout`` s (as aiomqtt's own ``publish`` would time out), or an answer the link
    fails to act on, is raised by :meth:`check` in the publisher's next turn (the
    connection is then dropped and made again, as a failed task's exception was)."""

    def __init__(self, link: LinkBase, client: _AckClient, timeout: float) -> None:
        self.link, self.client, self.timeout = link, client, timeout
        self.pending: set[_Pending] = set()
        self.failure: BaseException | None = None
        self._loop = asyncio.get_running_loop()

    def __len__(self) -> int:
        return len(self.pending)

    def send(self, item: Item) -> None:
        """Hand ``item`` to the client; raises :class:`aiomqtt.MqttError` if the
        connection is gone (nothing is then in flight for it)."""
        p = _Pending(item)
        sent = self.link._send(self.client, item, functools.partial(self._answered, p))
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
        link = self.link
        link._released(p.item)
        try:
            link._answered(p.item, refused, p.sent_at)
        except Exception as exc:  # raised in the publisher's turn, as a task's would be
            if self.failure is None:
                self.failure = exc
        link._wake.set()

    def _expired(self, p: _Pending) -> None:
        if p not in self.pending:
            return
        self.pending.discard(p)
        if p.mid is not None:
            self.client.forget(p.mid)
        self.link._released(p.item)
        if self.failure is None:
            self.failure = aiomqtt.MqttError("Operation timed out")
        self.link._wake.set()

    def check(self) -> None:
        """Raise what failed since the last check (a timeout, or the link's own error)."""
        exc, self.failure = self.failure, None
        if exc is not None:
            raise exc

    async def drained(self, timeout: float) -> None:
        """Wait until nothing is in flight (at most ``timeout`` s); raise what failed."""
        wake = self.link._wake  # set by every answer and timeout
        deadline = self._loop.time() + timeout
        while self.pending and self.failure is None:
            left = deadline - self._loop.time()
            if left <= 0:
                break
            wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), left)
        self.check()

    def abandon(self) -> None:
        """The connection is over: what is in flight is no longer waited for. It stays
        in the link's in-flight records, for the connection's end to count its outbox
        entries as caught by a drop (:meth:`LinkBase._count_drops`: how an MQTT 3.1.1
        broker refuses) and send them again on the next connection, which starts
        with no snapshot or response in flight."""
        for p in self.pending:
            if p.timer is not None:
                p.timer.cancel()
            if p.mid is not None:
                self.client.forget(p.mid)
        self.pending.clear()


class FloorLink(LinkBase):
    """The MQTT side of one table (see the package docstring).

    Use as ``async with FloorLink(...) as link:`` or ``task = link.start()`` then
    ``await link.stop()``. All methods are called from the event loop's thread,
    except :meth:`notify`, which is safe from any thread.
    """

    def start(self) -> asyncio.Task[None]:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self.run(), name="floor-link")
        return self._task

    async def stop(self, timeout: float | None = None) -> None:
        """Clean shutdown: finish the publication in flight, drain the outbox for up to
        ``shutdown_drain_ms``, publish ``state`` offline, disconnect (the will is not sent)."""
        self._stop.set()
        self._wake.set()
        task = self._task
        if task is None:
            return
        if timeout is None:
            timeout = (
                self.settings.shutdown_drain_ms / 1000 + self.settings.publish_timeout_ms / 1000 + 2
            )
        if not self.connected:
            task.cancel()  # in backoff or connecting: nothing to say goodbye on
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout)
        except (TimeoutError, asyncio.CancelledError):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task

    async def __aenter__(self) -> FloorLink:
        self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def run(self) -> None:
        """Connect, serve, reconnect with backoff; returns after :meth:`stop`.

        The backoff starts again from ``reconnect_min_ms`` only after a connection
        that held for a while (:data:`STABLE_CONNECTION_S`, or ``reconnect_max_ms`` if
        shorter): a broker that accepts the connection and drops it at once is retried
        ever more slowly, never in a storm."""
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        if self.refusals != "visible":
            log.warning(
                "mqtt: MQTT %s: a publication the broker refuses cannot be detected (its "
                'PUBACK has no reason code); use protocol = "5" (docs/mqtt.md)',
                self.settings.protocol,
            )
        self.outbox.add_listener(self._outbox_grew)
        worker = asyncio.create_task(self._serve_requests(), name="floor-link-requests")
        stable_after = min(STABLE_CONNECTION_S, self.settings.reconnect_max_ms / 1000)
        attempt = 0
        try:
            while not self._stop.is_set():
                up_since: float | None = None
                try:
                    client = self._make_client()
                    async with client:
                        up_since = time.monotonic()
                        self._on_connected()
                        await self._session(client)
                except aiomqtt.MqttError as exc:
                    self._on_error(exc)
                except (OSError, ssl.SSLError) as exc:
                    self._on_error(exc)
                except Exception as exc:  # a bug: log it once per kind, never stop trying
                    if self._first_failure(f"link {type(exc).__name__}"):
                        log.exception("mqtt: unexpected error in the floor link")
                    self._on_error(exc)
                finally:
                    self._subscribed.clear()
                    if self._connected.is_set():
                        self._connected.clear()
                        self.stats.disconnects += 1
                    self._count_drops()
                if self._stop.is_set():
                    break
                if up_since is not None and time.monotonic() - up_since >= stable_after:
                    attempt = 0
                delay = self._backoff(attempt)
                attempt += 1
                log.info(
                    "mqtt: reconnecting to %s:%d in %.2fs",
                    self.settings.host,
                    self.settings.port,
                    delay,
                )
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), delay)
        finally:
            worker.cancel()
            with contextlib.suppress(BaseException):
                await worker
            self.outbox.remove_listener(self._outbox_grew)
            self._connected.clear()

    def _make_client(self) -> _AckClient:
        s = self.settings
        v5 = s.protocol == "5"
        properties = None
        if v5:
            properties = Properties(PacketTypes.CONNECT)  # type: ignore[no-untyped-call]
            properties.SessionExpiryInterval = s.session_expiry
        will = aiomqtt.Will(
            self.topic("state"),
            self._state_payload("offline", reason="connection lost"),
            qos=1,
            retain=True,
        )
        client = _AckClient(
            s.host,
            s.port,
            username=s.username or None,
            password=s.read_password(),
            identifier=self.client_id,
            protocol=aiomqtt.ProtocolVersion.V5 if v5 else aiomqtt.ProtocolVersion.V311,
            will=will,
            clean_session=None if v5 else False,
            clean_start=False if v5 else MQTT_CLEAN_START_FIRST_ONLY,  # ignored on 3.1.1
            properties=properties,
            keepalive=s.keepalive,
            timeout=s.connect_timeout_ms / 1000,  # CONNACK, SUBACK; publish passes its own
            tls_context=s.tls_context(),
            max_queued_incoming_messages=MAX_INCOMING_QUEUED,
            deliver=self._received,
            # Without TCP_NODELAY, Nagle + delayed ACK add ~40 ms to each PUBACK round trip.
            socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
        )
        client.pending_calls_threshold = s.max_inflight + 16  # aiomqtt warns above this
        return client

    # -- one connection ------------------------------------------------------------------
    async def _session(self, client: _AckClient) -> None:
        # Subscribe, then publish: a SUBACK and a PUBACK in flight together meet Nagle's
        # algorithm on brokers without TCP_NODELAY and cost ~40 ms.
        subscribed = asyncio.Event()
        receiver = asyncio.create_task(self._receive(client, subscribed), name="floor-link-rx")
        publisher = asyncio.create_task(
            self._publish_loop(client, subscribed), name="floor-link-tx"
        )
        try:
            done, _ = await asyncio.wait({receiver, publisher}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in (receiver, publisher):
                t.cancel()
            results = await asyncio.gather(receiver, publisher, return_exceptions=True)
        for t, r in zip((receiver, publisher), results, strict=True):
            if t in done and isinstance(r, Exception):
                raise r

    async def _subscribe(self, client: _AckClient, topics: list[str]) -> list[str]:
        """Subscribe to ``topics`` (relative); the ones the broker refused (SUBACK
        0x80 on MQTT 3.1.1, a reason code of 0x80 or above on MQTT 5)."""
        codes: Sequence[int | ReasonCode] = await client.subscribe(
            [(self.topic(t), 1) for t in topics]
        )
        refused = []
        for t, code in zip(topics, codes, strict=False):
            why = _refusal(code)
            if why is None:
                self.faults.clear("SUBSCRIBE_REFUSED", t)
            else:
                refused.append(t)
                self.faults.raise_(
                    "SUBSCRIBE_REFUSED",
                    t,
                    f"the broker refused the subscription: {why}; requests on {t} cannot reach "
                    "the table",
                )
        return refused

    async def _receive(self, client: _AckClient, subscribed: asyncio.Event) -> None:
        refused: list[str] = []
        if self.handler is not None:
            refused = await self._subscribe(client, list(REQUEST_TOPICS))
        subscribed.set()
        retry: asyncio.Task[None] | None = None
        if refused:
            retry = asyncio.create_task(self._resubscribe(client, refused), name="floor-link-sub")
        else:
            self._subscribed.set()
        try:
            # Messages are delivered to _received by the client as they are read; this
            # iteration only ends (raising) when the connection is lost.
            async for _ in client.messages:
                pass
        finally:
            if retry is not None:
                retry.cancel()
                with contextlib.suppress(BaseException):
                    await retry

    async def _resubscribe(self, client: _AckClient, refused: list[str]) -> None:
        """Retry refused subscriptions with backoff, on the same connection."""
        attempt = 0
        while refused:
            await asyncio.sleep(self._backoff(attempt))
            attempt += 1
            refused = await self._subscribe(client, refused)
        self._subscribed.set()

    def _received(self, topic: str, payload: bytes, retain: bool) -> None:
        """One incoming message (called by the client as it is read): queued for the
        request worker, or refused at once without being read (too large, queue full).
        Never raises: it runs inside the client's socket reader."""
        try:
            self._take(topic, payload, retain)
        except Exception:
            if self._first_failure("receive"):
                log.exception("mqtt: an incoming message could not be queued")

    def _take(self, topic: str, payload: bytes, retain: bool) -> None:
        rel = self._relative(topic)
        if rel not in REQUEST_TOPICS:
            return
        if retain:
            log.warning("mqtt: ignoring a retained request on %s (requests must be live)", rel)
            return
        if not payload:
            return  # an empty message only clears a retained one: not a request
        self.stats.requests += 1
        queue = self._requests[rel]
        if len(payload) > boundedjson.MAX_REQUEST_BYTES:
            self._refuse_unread(
                rel,
                "REQUEST_TOO_LARGE",
                f"the request is {len(payload)} bytes; the limit is "
                f"{boundedjson.MAX_REQUEST_BYTES} (not read)",
            )
        elif len(queue) >= MAX_QUEUED[rel]:
            self._refuse_unread(
                rel,
                "TABLE_BUSY",
                f"{len(queue)} requests on {rel} are waiting; send again later (not read)",
            )
        else:
            queue.append(payload)
            self._request_ready.set()

    def _refuse_unread(self, rel: str, code: str, message: str) -> None:
        """Answer a request without reading it (``request_id`` null), at once."""
        self.stats.requests_refused_unread += 1
        status = "rejected" if rel == "bets/request" else "error"
        self.respond(rel, response(self.table_id, None, status, code=code, message=message))

    def _next_request(self) -> tuple[str, bytes] | None:
        """Commands before bets: a flood of bets never delays a dealer's command."""
        for rel in REQUEST_PRIORITY:
            queue = self._requests[rel]
            if queue:
                return rel, queue.popleft()
        return None

    async def _serve_requests(self) -> None:
        """Hand queued requests to the handler one at a time, commands first; between
        two, the event loop runs everything else (devices, the publisher)."""
        while True:
            nxt = self._next_request()
            if nxt is None:
                self._request_ready.clear()
                await self._request_ready.wait()
                continue
            await self._dispatch(*nxt)
            await asyncio.sleep(0)

    async def _dispatch(self, rel: str, payload: bytes) -> None:
        if self.handler is None:
            return
        try:
            result = self.handler(rel, payload)
            if inspect.isawaitable(result):
                result = await result
        except Exception as exc:  # a bad request must never stop the link
            self.stats.handler_errors += 1
            if self._first_failure(f"handler {type(exc).__name__}"):
                log.exception("mqtt: request handler failed on %s (logged once per kind)", rel)
            result = self._internal_error(rel, payload, exc)
        try:
            self.respond(rel, result)
        except TypeError:
            self.stats.handler_errors += 1
            log.exception("mqtt: request handler returned an unpublishable response on %s", rel)

    def _internal_error(self, rel: str, payload: bytes, exc: Exception) -> dict[str, JSON]:
        """The answer when the handler itself fails (it should answer every request itself)."""
        return response(
            self.table_id,
            boundedjson.peek_request_id(payload),
            "rejected" if rel == "bets/request" else "error",
            code="INTERNAL_ERROR",
            message=f"internal error: {type(exc).__name__}",
        )

    async def _publish_loop(self, client: _AckClient, subscribed: asyncio.Event) -> None:
        """Keep up to ``max_inflight`` publications in flight: each is written to the
        socket as soon as it is taken (:meth:`_send`), its PUBACK answering it through
        the window (:class:`_Window`); a freed slot or new work wakes the loop, which writes the "published"
        marks of what the broker took in one transaction when the window drains or a
        window's worth is waiting."""
        await subscribed.wait()
        version = self._snapshots.get("state", (0, {}))[0]
        online = self._state_payload("online")
        await self._publish(client, Item("snapshot", "state", online, 1, True, ("state", version)))
        inflight = _Window(self, client, self.settings.publish_timeout_ms / 1000)
        # Never more in flight than the broker takes (MQTT 5 Receive Maximum: a broker may
        # refuse a publication beyond it, 0x97, or close the connection, 0x93).
        window = min(self.settings.max_inflight, client.receive_maximum or 1 << 16)
        window, self.window = self.window, window
        if self.window < self.settings.max_inflight and self.window != window:
            log.info(
                "mqtt: the broker takes at most %d publication(s) in flight (its Receive "
                "Maximum); max_inflight = %d is bounded by it",
                self.window,
                self.settings.max_inflight,
            )

        def fill() -> int:
            """Hand the next batch to the client (written to the socket at once, before
            anything else runs), each PUBACK answered through the window; the room
            there was."""
            room = self.window - len(inflight)
            for item in self._next_batch(room, window_empty=not inflight) if room > 0 else ():
                inflight.send(item)
            return room

        drain_deadline: float | None = None
        self._fill = fill
        try:
            while True:
                inflight.check()
                if self._stop.is_set():
                    if drain_deadline is None:
                        drain_deadline = time.monotonic() + self.settings.shutdown_drain_ms / 1000
                    if time.monotonic() >= drain_deadline:
                        break
                self._wake.clear()
                self._confirm_unconfirmed()
                self.marks.retry()
                room = fill()
                if self._after and room > 0 and not self._in_flight:
                    # The outbox was read this turn (outbox entries go first in a batch)
                    # and none is in flight: what it held when that work was queued is
                    # acknowledged, or held back by a refusal. The work runs now.
                    self._run_after()
                if not inflight or len(self.marks.pending) >= MARKS_BATCH * self.settings.max_inflight:
                    # Together: when the window drains, or MARKS_BATCH windows' worth
                    # wait (until then they are not read or sent again; a crash only
                    # means they are published again, the same bytes under the same id).
                    self.marks.flush()
                if not inflight:
                    if self._stop.is_set():
                        break
                    if not self._wake.is_set():
                        self._idle.set()
                # The poll is a safety net only: commits wake us through the listener,
                # PUBACKs through their tasks; a refused topic or the journal's storage
                # is retried when its backoff ends. (A timer, not wait_for: its inner
                # task would cost a loop iteration at every wake.)
                timer = asyncio.get_running_loop().call_later(self._idle_timeout(), self._wake.set)
                try:
                    await self._wake.wait()
                finally:
                    timer.cancel()
            # Finish the publications in flight (each times out on its own by then).
            await inflight.drained(self.settings.publish_timeout_ms / 1000)
            self.marks.flush()
        finally:
            self._fill = None
            if self._after:  # no publisher left to wait for
                self._after_later(0.0)
            inflight.abandon()
        # Goodbye: retained offline, then DISCONNECT (on leaving ``async with``) cancels the will.
        offline = self._state_payload("offline", reason="shutdown")
        await self._publish(client, Item("snapshot", "state", offline, 1, True, None))
        log.info("mqtt: table marked offline (clean shutdown)")
