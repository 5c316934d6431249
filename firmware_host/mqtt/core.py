"""The link's state between connections: snapshots, responses, faults, the outbox's
batches and acknowledgements (see the package docstring for the contract)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from datetime import datetime

import aiomqtt
from paho.mqtt.reasoncodes import ReasonCode

from .. import __version__
from ..auth.identity import TableIdentity
from ..journal import JournalError, Outbox, OutboxEntry
from ..jsonio import JSON, dumps
from ..schemas import PAYLOAD_SCHEMA_VERSION
from ..timefmt import iso_utc, utc_now
from ..topics import TopicError, check_topic
from .client import OnAck, Sent, _AckClient, _refusal
from .faults import LinkFaults
from .items import Item, LinkStats
from .marks import OutboxMarks
from .settings import (
    AFTER_PUBLICATION_MAX_S,
    BACKPRESSURE_CODES,
    CONFIRM_AFTER_S,
    DROPS_TO_FAULT,
    IDLE_POLL_S,
    MAX_RESPONSES_QUEUED,
    REQUEST_TOPICS,
    Handler,
    MqttSettings,
    Response,
)

#: One logger for the whole link, as before the package was split (logs name it).
log = logging.getLogger("firmware_host.mqtt")

# ---------------------------------------------------------------------------
# the link


class LinkBase:
    """The state of the MQTT side of one table and what works on it between
    connections: snapshots, responses, faults, the outbox's batches and marks
    (:class:`~firmware_host.mqtt.link.FloorLink` adds the connection itself).

    Use as ``async with FloorLink(...) as link:`` or ``task = link.start()`` then
    ``await link.stop()``. All methods are called from the event loop's thread,
    except :meth:`notify`, which is safe from any thread.
    """

    def __init__(
        self,
        settings: MqttSettings,
        table_id: str,
        outbox: Outbox,
        *,
        handler: Handler | None = None,
        software_version: str = __version__,
        clock: Callable[[], datetime] = utc_now,
        rng: random.Random | None = None,
        identity: TableIdentity | None = None,
    ) -> None:
        """``identity`` signs what the link publishes itself (snapshots, answers, the
        will: ``auth/evidence.py``; the outbox is signed already); default the outbox's."""
        self.settings = settings
        self.identity = identity if identity is not None else outbox.identity
        self.table_id = table_id
        self.outbox = outbox
        self.handler = handler
        self.software_version = software_version
        self.root = check_topic(f"{settings.prefix}/tables/{table_id}")
        self.client_id = settings.client_id or f"tablectl-{table_id}"
        self.stats = LinkStats()
        self._clock = clock
        self._rng = rng or random.Random()
        #: Whether the broker can say it refuses a publication (``visible``, MQTT 5) or
        #: not (``undetectable``, 3.1.1): part of every ``state`` payload from the start.
        self.refusals = settings.refusals
        self._state: dict[str, JSON] = {"refusals": self.refusals}
        # suffix -> (version, payload); snapshots published are remembered by version.
        self._snapshots: dict[str, tuple[int, Mapping[str, JSON]]] = {}
        self._snap_sent: dict[str, int] = {}
        self._version = 0
        #: Responses waiting: to requests that acted (ok, accepted) first, then refusals
        #: (a flood of malformed requests cannot hold back a dealer's answer).
        self._responses: OrderedDict[int, tuple[str, bytes, int]] = OrderedDict()
        self._refusals: OrderedDict[int, tuple[str, bytes, int]] = OrderedDict()
        self._response_seq = 0
        #: Requests received and not yet handled, one queue per request topic.
        self._requests: dict[str, deque[bytes]] = {t: deque() for t in REQUEST_TOPICS}
        self._request_ready = asyncio.Event()
        #: What the broker refuses now, by (code, topic) (``faults.py``).
        self.faults = LinkFaults(
            lambda: iso_utc(self._clock()), lambda: self._put_snapshot("state", self._state)
        )
        #: Topic -> (monotonic time before which it is not retried, refusals in a row).
        self._holds: dict[str, tuple[float, int]] = {}
        #: The "published" marks of what the broker took, and the journal's storage
        #: faults waited out (``marks.py``).
        self.marks = OutboxMarks(outbox, self._backoff)
        #: Outbox entry id -> connections that ended, in a row, while it was the only
        #: publication in flight or awaiting its proof (see _count_drops).
        self._drops: dict[int, int] = {}
        #: After a connection ended with outbox entries in flight: the next outbox entry
        #: goes alone, with nothing else in flight, until one is proven taken.
        self._careful = False
        #: The outbox entry sent alone while careful, until it is proven taken, refused,
        #: or caught by the connection's end.
        self._probe: int | None = None
        #: While careful: whether the window of snapshots and answers that goes before
        #: each lone entry went.
        self._others_went = False
        #: Back-pressure (a PUBACK saying the broker's quota is exceeded): nothing new is
        #: sent before this monotonic time; such answers in a row.
        self._paused: tuple[float, int] = (0.0, 0)
        #: The window on the current connection: ``max_inflight``, or the broker's
        #: Receive Maximum (MQTT 5 CONNACK) when it is lower.
        self.window = settings.max_inflight
        self._in_flight: dict[int, str] = {}
        #: The highest outbox id handed to the client on this connection: the next read
        #: starts after it (each entry is read once; a refusal moves it back).
        self._outbox_after = 0
        #: Snapshots (suffix -> version) and responses (keys) awaiting their PUBACK.
        self._snap_in_flight: dict[str, int] = {}
        self._resp_in_flight: set[int] = set()
        #: MQTT 3.1.1: outbox entries acknowledged on this connection and not yet known
        #: to have been taken (id -> (acknowledged at, topic)); see _confirm_unconfirmed.
        self._unconfirmed: dict[int, tuple[float, str]] = {}
        #: Whether an acknowledgement counts only once the connection outlived it.
        self._confirm_by_survival = settings.protocol != "5"
        self._handler_failures: dict[str, int] = {}
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._stop = asyncio.Event()
        self._connected = asyncio.Event()
        #: Set once the request topics are subscribed on the current connection.
        self._subscribed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._online_since: str | None = None
        #: Work waiting for the outbox's publications in flight (after_publication)
        #: and the timer that runs it at the latest.
        self._after: list[Callable[[], None]] = []
        self._after_timer: asyncio.TimerHandle | None = None
        #: The publisher's "fill the window" while it runs on a connection: the
        #: outbox's listener calls it (:meth:`_outbox_grew`); returns the room it had.
        self._fill: Callable[[], int] | None = None

    # -- topics ------------------------------------------------------------------
    def topic(self, suffix: str) -> str:
        """Full topic of ``suffix`` (``rounds``, ``devices/wheel``...); refuses wildcards."""
        return check_topic(f"{self.root}/{check_topic(suffix)}")

    def _relative(self, full: str) -> str | None:
        head = self.root + "/"
        return full[len(head) :] if full.startswith(head) else None

    # -- what the daemon calls ---------------------------------------------------------
    def notify(self) -> None:
        """Wake the publisher (the outbox grew). Cheap, never blocks, any thread."""
        loop = self._loop
        if loop is not None and self._loop_thread != threading.get_ident():
            loop.call_soon_threadsafe(self._wake_up)
        else:
            self._wake_up()

    def _wake_up(self) -> None:
        self._idle.clear()
        self._wake.set()

    def _outbox_grew(self) -> None:
        """The journal's outbox listener (after a commit that queued entries): wake the
        publisher and, on the event loop's thread with a connection up and no
        transaction open, hand the new entries to the client now: they are on the wire
        before the code that committed them goes on, not one loop turn later behind it.
        A broken connection is left to the publisher's own turn."""
        self.notify()
        fill = self._fill
        if (
            fill is None
            or self._loop_thread != threading.get_ident()
            or self.outbox.in_transaction  # an outer transaction's entries may roll back
        ):
            return
        with contextlib.suppress(aiomqtt.MqttError):  # gone: the publisher's turn meets it
            fill()

    def after_publication(self, callback: Callable[[], None]) -> None:
        """Run ``callback()`` on the event loop once the outbox's entries committed so
        far are published and acknowledged by the broker (the daemon's deferrer for
        work that belongs after a round's publication: pruning, the extensions'
        hooks): on a live connection, when the publisher has no outbox entry in flight
        left, else at once (next loop turn); at the latest after
        :data:`AFTER_PUBLICATION_MAX_S` (a slow or refusing broker never holds the
        table's own work longer). Callbacks run in the order queued; one that raises
        is logged and the others still run. Event loop's thread only."""
        self._after.append(callback)
        if self._fill is not None:
            self._wake.set()  # a turn of the publisher: it runs them if nothing is in flight
            self._after_later(AFTER_PUBLICATION_MAX_S)
        else:
            self._after_later(0.0)

    def _after_later(self, delay: float) -> None:
        """Run the queued after-publication work in ``delay`` s at the latest."""
        timer = self._after_timer
        if timer is not None:
            if timer.when() <= asyncio.get_running_loop().time() + delay:
                return
            timer.cancel()
        self._after_timer = asyncio.get_running_loop().call_later(delay, self._run_after)

    def _run_after(self) -> None:
        """Run the work queued with :meth:`after_publication` (what it queues in turn
        waits for the next turn)."""
        if self._after_timer is not None:
            self._after_timer.cancel()
            self._after_timer = None
        work, self._after = self._after, []
        for callback in work:
            try:
                callback()
            except Exception:  # as the event loop's own handler: logged, the rest runs
                log.exception("mqtt: work queued after the publication failed")

    def set_state(self, **fields: JSON) -> None:
        """Update the retained ``state`` snapshot (game, phase, round_id, faults...).

        ``schema_version``, ``table_id``, ``availability``, ``software_version``,
        ``refusals``, ``link_faults``, ``since`` and ``updated_at`` are filled in by the
        link.
        """
        self._state.update(fields)
        self._put_snapshot("state", self._state)

    @property
    def state(self) -> Mapping[str, JSON]:
        return dict(self._state)

    def set_device(self, name: str, payload: Mapping[str, JSON]) -> None:
        """Update the retained ``devices/<name>`` snapshot (``device.json``)."""
        if "/" in name:
            raise TopicError(f"device name {name!r} must be a single topic level")
        check_topic(name)
        body = {
            "schema_version": PAYLOAD_SCHEMA_VERSION,
            "table_id": self.table_id,
            "device": name,
            **payload,
        }
        body.setdefault("updated_at", iso_utc(self._clock()))
        self._put_snapshot(f"devices/{name}", body)

    def set_jackpot(self, payload: Mapping[str, JSON]) -> None:
        """Update the retained ``jackpot`` display snapshot (``jackpot.json``)."""
        body = {"schema_version": PAYLOAD_SCHEMA_VERSION, "table_id": self.table_id, **payload}
        body.setdefault("updated_at", iso_utc(self._clock()))
        self._put_snapshot("jackpot", body)

    def set_snapshot(self, suffix: str, payload: Mapping[str, JSON]) -> None:
        """Update another retained display snapshot (``board``, ``stats``: what a table's
        extensions show), with the common head and ``updated_at``."""
        check_topic(suffix)
        body = {"schema_version": PAYLOAD_SCHEMA_VERSION, "table_id": self.table_id, **payload}
        body.setdefault("updated_at", iso_utc(self._clock()))
        self._put_snapshot(suffix, body)

    def _put_snapshot(self, suffix: str, payload: Mapping[str, JSON]) -> None:
        self._version += 1
        self._snapshots[suffix] = (self._version, dict(payload))
        self.notify()

    def respond(self, request_topic: str, payload: Response) -> None:
        """Queue a response to a request received on ``request_topic`` (``bets/request``...)."""
        if payload is None:
            return
        response_topic = REQUEST_TOPICS.get(request_topic)
        if response_topic is None:
            raise TopicError(
                f"{request_topic!r} is not a request topic ({', '.join(REQUEST_TOPICS)})"
            )
        acted = False
        anonymous = False
        if isinstance(payload, bytes):
            body = payload
        elif isinstance(payload, str):
            body = payload.encode("utf-8")
        elif isinstance(payload, Mapping):
            body = self._seal(response_topic, payload)
            acted = payload.get("status") in ("ok", "accepted")
            anonymous = payload.get("request_id") is None or "principal" not in payload
        else:
            raise TypeError(
                f"a response must be a mapping, bytes or str, got {type(payload).__name__}"
            )
        while len(self._responses) + len(self._refusals) >= MAX_RESPONSES_QUEUED:
            (self._refusals or self._responses).popitem(last=False)
            self.stats.responses_dropped += 1
        self._response_seq += 1
        queue = self._responses if acted else self._refusals
        queue[self._response_seq] = (response_topic, body, 0 if anonymous else 1)
        self.notify()

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    async def wait_connected(self, timeout: float | None = None) -> None:
        await asyncio.wait_for(self._connected.wait(), timeout)

    async def wait_subscribed(self, timeout: float | None = None) -> None:
        """Until the request topics are subscribed: requests sent before that, on the
        very first connection of a new session, would not reach the table."""
        await asyncio.wait_for(self._subscribed.wait(), timeout)

    async def wait_idle(self, timeout: float | None = None) -> None:
        """Until everything queued (outbox, snapshots, responses) has been acknowledged."""

        async def idle() -> None:
            while True:
                await self._idle.wait()
                if not self._has_work():
                    return
                self._idle.clear()

        await asyncio.wait_for(idle(), timeout)

    def get_status(self) -> dict[str, JSON]:
        s = self.stats
        try:
            pending: int | None = self.outbox.pending_count()
        except JournalError:
            pending = None
        status: dict[str, JSON] = {
            "broker": f"{self.settings.host}:{self.settings.port}",
            "client_id": self.client_id,
            "root": self.root,
            "protocol": self.settings.protocol,
            "refusals": self.refusals,
            "connected": self.connected,
            "connected_since": s.connected_since,
            "connects": s.connects,
            "connect_failures": s.connect_failures,
            "disconnects": s.disconnects,
            "published": s.published,
            "outbox_published": s.outbox_published,
            "outbox_pending": pending,
            "refused": s.refused,
            "throttled": s.throttled,
            "window": self.window,
            "faults": [f.to_json() for f in self.faults.values()],
            "acked_not_marked": len(self.marks.unmarked),
            "responses_queued": len(self._responses) + len(self._refusals),
            "responses_dropped": s.responses_dropped,
            "requests": s.requests,
            "requests_queued": {t: len(q) for t, q in self._requests.items()},
            "requests_refused_unread": s.requests_refused_unread,
            "handler_errors": s.handler_errors,
            "puback_latency": s.puback.summary(),
            "last_error": s.last_error,
        }
        if self.refusals != "visible":
            status["warning"] = (
                f"MQTT {self.settings.protocol}: a publication the broker refuses cannot be "
                'detected (no reason code in its PUBACK); use [mqtt] protocol = "5"'
            )
        return status

    # -- lifecycle ---------------------------------------------------------------------
    def _backoff(self, attempt: int) -> float:
        """Capped exponential backoff with jitter in [50%, 100%] of the step."""
        lo, hi = self.settings.reconnect_min_ms / 1000, self.settings.reconnect_max_ms / 1000
        step = min(hi, lo * float(1 << min(attempt, 30)))
        return step * (0.5 + 0.5 * self._rng.random())

    def _count_drops(self) -> None:
        """A connection ended with outbox entries in flight, or acknowledged and not yet
        confirmed (MQTT 3.1.1): they were not marked published, and go out again on the
        next connection.

        A broker may refuse a publication by closing the connection: an MQTT 3.1.1 broker
        has no other way to say no (MQTT-3.3.5-2), some close it without a PUBACK, and
        mosquitto 2.0 closes it after the PUBACK of a denied publication in some versions
        and configurations only (``max_queued_messages 0``: docs/mqtt.md). Such an end
        catches the refused entry and whatever was sent around it, which the broker took
        or never read: none of them is blamed (a permitted topic must never be flagged).
        The next outbox entry goes alone instead (``_careful``): nothing else in flight
        until it is proven taken (MQTT 5: its PUBACK; 3.1.1: the connection outliving its
        PUBACK). A connection that ends while that lone entry awaits its proof counts
        against it; :data:`DROPS_TO_FAULT` such ends in a row raise ``PUBLISH_REFUSED``
        on its topic, which then waits for its backoff, so that everything else still
        flows meanwhile."""
        caught = dict(self._in_flight)
        caught.update({i: topic for i, (_, topic) in self._unconfirmed.items()})
        self._in_flight.clear()
        self._unconfirmed.clear()
        probe, self._probe = self._probe, None
        self._others_went = False
        if not caught:
            return
        self._careful = True
        if probe is None or probe not in caught:
            return
        topic = caught[probe]
        n = self._drops.get(probe, 0) + 1
        self._drops[probe] = n
        if n >= DROPS_TO_FAULT:
            self._hold(topic)
            self.faults.raise_(
                "PUBLISH_REFUSED",
                topic,
                f"the broker closed the connection {n} times in a row while outbox entry "
                f"{probe} was the only publication in flight or just acknowledged (how a "
                "broker may refuse a publication without saying so); the entry stays queued "
                "and holds back the outbox after it",
            )

    def _on_connected(self) -> None:
        self.stats.connects += 1
        now = iso_utc(self._clock())
        self.stats.connected_since = now
        self._online_since = now
        self._snap_sent.clear()  # a restarted broker may have lost retained messages
        self._snap_in_flight.clear()
        self._resp_in_flight.clear()
        self._outbox_after = 0  # what was in flight on the last connection goes again
        self._connected.set()
        log.info(
            "mqtt: connected to %s:%d as %s", self.settings.host, self.settings.port, self.client_id
        )

    def _on_error(self, exc: BaseException) -> None:
        msg = f"{type(exc).__name__}: {exc}"
        code: object = getattr(getattr(exc, "rc", None), "value", getattr(exc, "rc", None))
        if (
            isinstance(exc, aiomqtt.MqttCodeError)
            and code == 0x84
            and self.settings.protocol == "5"
        ):
            msg += (
                ' (the broker does not speak MQTT 5: upgrade it, or set [mqtt] protocol = "3.1.1",'
                " where a publication it refuses cannot be detected)"
            )
        if not self._connected.is_set():
            self.stats.connect_failures += 1
        if msg != self.stats.last_error:
            log.warning("mqtt: broker %s:%d: %s", self.settings.host, self.settings.port, msg)
        self.stats.last_error = msg

    def _first_failure(self, kind: str) -> bool:
        """Whether this is the first failure of ``kind`` (a traceback is logged once per
        kind, then only counted: a request that trips a bug cannot flood the log)."""
        n = self._handler_failures.get(kind, 0) + 1
        self._handler_failures[kind] = n
        return n == 1

    def _state_payload(self, availability: str, *, reason: str | None = None) -> bytes:
        now = iso_utc(self._clock())
        body: dict[str, JSON] = {
            "schema_version": PAYLOAD_SCHEMA_VERSION,
            "table_id": self.table_id,
            "availability": availability,
            "software_version": self.software_version,
        }
        body.update({k: v for k, v in self._state.items() if k not in body})
        if self.faults:
            body["link_faults"] = [
                {"code": f.code, "topic": f.topic, "message": f.message, "since": f.since}
                for f in self.faults.values()
            ]
        body["since"] = (
            self._online_since if availability == "online" and self._online_since else now
        )
        body["updated_at"] = now
        if reason:
            body["reason"] = reason
        return self._seal("state", body)

    def _seal(self, topic: str, body: Mapping[str, JSON]) -> bytes:
        """``body`` as published on ``topic`` (signed; compact JSON without identity)."""
        if self.identity is not None:
            return self.identity.seal(topic, body)
        return dumps(dict(body)).encode("utf-8")

    def _idle_timeout(self) -> float:
        now = time.monotonic()
        until = [t for t, _ in self._holds.values()]
        until.extend(self.marks.retry_times())
        if self._paused[0] > now:
            until.append(self._paused[0])
        if self._unconfirmed:
            until.append(min(t for t, _ in self._unconfirmed.values()) + CONFIRM_AFTER_S)
        soonest = min(until, default=now + IDLE_POLL_S)
        return max(0.001, min(IDLE_POLL_S, soonest - now))

    def _has_work(self) -> bool:
        if (
            self._responses
            or self._refusals
            or self.marks.waiting
            or self._unconfirmed
        ):
            return True
        try:
            if self.outbox.pending_count():
                return True
        except JournalError:
            return True
        return any(self._snap_sent.get(k) != v for k, (v, _) in self._snapshots.items())

    def _held(self, topic: str, now: float) -> bool:
        hold = self._holds.get(topic)
        return hold is not None and hold[0] > now

    # -- the journal's storage ---------------------------------------------------------
    def storage_changed(self) -> None:
        """The journal's storage fault was raised or cleared (its guard's listener):
        retry the outbox and the marks now."""
        self.marks.storage_changed()
        self.notify()

    def _next_batch(self, room: int | None = None, *, window_empty: bool = True) -> list[Item]:
        """What to publish next, at most ``room`` items (default: the window), none of
        them already in flight. On a new connection the ``state`` snapshot goes first
        (availability before anything else); after that the journal's outbox (settled
        rounds, lifecycle events) goes before snapshots, which only need their latest
        value, and responses come last: neither a burst of snapshot updates nor a
        stream of requests may hold back the table's own output (answers to requests that
        acted go before refusals). A topic the broker refused waits for its backoff; a
        refused outbox entry holds back every entry after it (the floor gets them in
        order or not at all).

        The outbox is read from the journal after the last entry handed to the client
        on this connection (each entry is read once, by its primary key).

        Careful (after a connection ended with outbox entries in flight, or a refused
        entry: see :meth:`_count_drops`): the next outbox entry goes alone, once the
        window is empty (``window_empty``), and nothing else goes until it is proven
        taken; before each such entry, one window of snapshots and answers goes first,
        so that an entry a broker refuses by closing the connection cannot keep them from
        the floor. While the broker pushes back (a quota exceeded), nothing is sent."""
        now = time.monotonic()
        if room is None:
            room = self.window
        if now < self._paused[0] or (self._careful and self._probe is not None):
            return []
        # Snapshots due (serialised only if they go in the batch: the outbox often fills it).
        due = [
            (suffix, version, body)
            for suffix, (version, body) in self._snapshots.items()
            if self._snap_sent.get(suffix) != version
            and self._snap_in_flight.get(suffix) != version
            and not self._held(suffix, now)
        ]

        def snapshots(n: int) -> list[Item]:
            return [
                Item(
                    "snapshot",
                    suffix,
                    self._state_payload("online")
                    if suffix == "state"
                    else self._seal(suffix, body),
                    1,
                    True,
                    (suffix, version),
                )
                for suffix, version, body in due[: max(n, 0)]
            ]

        announced = "state" in self._snap_sent or "state" not in self._snapshots

        def others(batch: list[Item]) -> list[Item]:
            """``batch`` filled with the snapshots due, then the responses."""
            if announced and len(batch) < room and due:
                batch.extend(snapshots(room - len(batch)))
            for queue in (self._responses, self._refusals):
                for key, (topic, raw, qos) in queue.items():
                    if len(batch) >= room:
                        break
                    if key not in self._resp_in_flight and not self._held(topic, now):
                        batch.append(Item("response", topic, raw, qos, False, key))
            return batch

        batch: list[Item] = [] if announced else snapshots(room)
        if self._careful and not self._others_went:
            self._others_went = True  # once before each lone entry
            if others(batch):
                return batch
        if len(batch) < room and self.marks.ready("read", now):
            skip = self.marks.skip() | self._unconfirmed.keys()
            skip |= self._in_flight.keys()
            # Only those after the cursor can come back in the read (after a refusal
            # moved it back): each entry read is one payload copied out of SQLite.
            ahead = sum(1 for i in skip if i > self._outbox_after)
            wanted = 1 if self._careful else room - len(batch)
            try:
                entries = self.outbox.pending(wanted + ahead, after_id=self._outbox_after)
            except JournalError as exc:
                self.marks.failed("read", exc)
                entries = []
            else:
                self.marks.ok("read")
            for e in entries:
                if e.id in skip:
                    continue
                if self._held(e.topic, now) or len(batch) >= room:
                    break
                if self._careful:
                    # Alone, once what is in flight (the state before it) is answered;
                    # nothing more meanwhile, so that the window drains.
                    if batch or not window_empty:
                        return batch
                    self._probe = e.id
                    self._others_went = False
                    return [self._outbox_item(e)]
                batch.append(self._outbox_item(e))
        return others(batch)

    @staticmethod
    def _outbox_item(e: OutboxEntry) -> Item:
        return Item("outbox", e.topic, e.payload, e.qos, e.retain, e.id)

    def _send(self, client: _AckClient, item: Item, on_ack: OnAck | None = None) -> Sent | None:
        """Hand ``item`` to the client, written to the socket now; None when it cannot be
        published at all (e.g. too large: dropped, never blocking the queue; ``on_ack``
        is then not called). Raises :class:`aiomqtt.MqttError` when the connection is
        gone. ``on_ack``: see :meth:`_AckClient.send`."""
        try:
            sent = client.send(
                self.topic(item.topic),
                item.payload,
                qos=item.qos,
                retain=item.retain,
                on_ack=on_ack,
            )
        except (ValueError, TypeError) as exc:
            log.error(
                "mqtt: dropping unpublishable %s message on %s: %s", item.kind, item.topic, exc
            )
            return None
        if item.kind == "outbox":
            self._in_flight[item.ref] = item.topic
            self._outbox_after = max(self._outbox_after, item.ref)
        elif item.kind == "snapshot" and item.ref is not None:
            self._snap_in_flight[item.ref[0]] = item.ref[1]
        elif item.kind == "response":
            self._resp_in_flight.add(item.ref)
        return sent

    async def _complete(self, client: _AckClient, item: Item, sent: Sent | None) -> None:
        """Wait for ``sent``'s PUBACK and act on it (accepted, or refused)."""
        t0 = time.perf_counter()
        refused: ReasonCode | None = None
        try:
            if sent is not None:
                refused = await client.acked(sent, self.settings.publish_timeout_ms / 1000)
        finally:
            self._released(item)
        self._answered(item, refused, t0)

    def _released(self, item: Item) -> None:
        """``item`` is no longer in flight (answered, timed out or abandoned)."""
        if item.kind == "outbox":
            self._in_flight.pop(item.ref, None)
        elif item.kind == "snapshot" and item.ref is not None:
            if self._snap_in_flight.get(item.ref[0]) == item.ref[1]:
                del self._snap_in_flight[item.ref[0]]
        elif item.kind == "response":
            self._resp_in_flight.discard(item.ref)

    def _answered(self, item: Item, refused: ReasonCode | None, sent_at: float) -> None:
        """The broker's answer to ``item`` (sent at ``perf_counter()`` ``sent_at``):
        accepted, or refused."""
        self.stats.puback.add(time.perf_counter() - sent_at)
        if refused is not None:
            if refused.value in BACKPRESSURE_CODES:
                self._pushed_back(item, refused)
            else:
                self._refused(item, refused)
            return
        self._accepted(item)

    async def _publish(self, client: _AckClient, item: Item) -> None:
        """Send ``item`` and wait for its PUBACK."""
        await self._complete(client, item, self._send(client, item))

    def _refused(self, item: Item, reason: ReasonCode) -> None:
        """The broker refused ``item`` (PUBACK reason code >= 0x80): nothing is marked,
        the topic waits for its backoff, the fault is raised (logged once)."""
        self.stats.refused += 1
        self._hold(item.topic)
        if item.kind == "outbox":  # read again from it (it holds back the entries after it)
            self._outbox_after = min(self._outbox_after, item.ref - 1)
            # Tried again alone when its hold ends, so that the entries after it are not
            # taken ahead of it at every retry (only those already sent with it).
            self._careful = True
            if item.ref == self._probe:
                self._probe = None
        what = {"outbox": "outbox entry", "snapshot": "snapshot", "response": "response"}
        self.faults.raise_(
            "PUBLISH_REFUSED",
            item.topic,
            f"the broker refused the publication: {_refusal(reason)}; the {what[item.kind]} "
            "stays queued"
            + (" and holds back the outbox after it" if item.kind == "outbox" else ""),
        )

    def _pushed_back(self, item: Item, reason: ReasonCode) -> None:
        """The broker did not take ``item`` for want of room (PUBACK 0x97 *Quota
        exceeded*...): not a refusal of its topic, no fault. It stays queued (an outbox
        entry is read again, in order), and nothing new is sent for a backoff that grows
        while the broker keeps pushing back (logged once, until it takes one again)."""
        self.stats.throttled += 1
        if item.kind == "outbox":
            self._outbox_after = min(self._outbox_after, item.ref - 1)
            self._careful = True  # goes again alone, as a refused entry
            if item.ref == self._probe:
                self._probe = None
        _, n = self._paused
        if n == 0:
            log.warning(
                "mqtt: the broker did not take a publication on %s: %s; not a refusal: "
                "publishing pauses and it goes again",
                item.topic,
                _refusal(reason),
            )
        self._paused = (time.monotonic() + self._backoff(n), n + 1)

    def _hold(self, topic: str) -> None:
        """Nothing more on ``topic`` before its backoff ends (refusals in a row grow it)."""
        _, n = self._holds.get(topic, (0.0, 0))
        self._holds[topic] = (time.monotonic() + self._backoff(n), n + 1)

    def _accepted(self, item: Item) -> None:
        self.stats.published += 1
        if self._paused[1]:
            log.info("mqtt: the broker takes publications again")
            self._paused = (0.0, 0)
        if self._unconfirmed:
            # An acknowledgement after them: the connection outlived theirs.
            self._confirm(list(self._unconfirmed))
        if item.kind != "outbox":
            self._taken(item.topic)
        if item.kind == "outbox":
            self.stats.outbox_published += 1
            if self._confirm_by_survival:
                self._unconfirmed[item.ref] = (time.monotonic(), item.topic)
            else:
                self._confirm([item.ref], {item.ref: item.topic})
        elif item.kind == "response":
            if self._responses.pop(item.ref, None) is None:
                self._refusals.pop(item.ref, None)
        elif item.ref is not None:
            suffix, version = item.ref
            if version > self._snap_sent.get(suffix, -1):  # an older one acked after it
                self._snap_sent[suffix] = version

    def _taken(self, topic: str) -> None:
        """The broker took a publication on ``topic``: its hold and fault end."""
        if topic in self._holds:
            del self._holds[topic]
        if self.faults:
            self.faults.clear("PUBLISH_REFUSED", topic)

    def _confirm_unconfirmed(self) -> None:
        """MQTT 3.1.1: entries acknowledged :data:`CONFIRM_AFTER_S` ago on a connection
        still open count as taken. A broker that refuses by closing the connection
        closes it at once after the PUBACK (mosquitto with ``max_queued_messages 0``);
        one that keeps it (mosquitto with a limit) drops a refused publication unseen:
        on 3.1.1 this is all a client can know (``refusals``: ``undetectable``)."""
        if not self._unconfirmed:
            return
        limit = time.monotonic() - CONFIRM_AFTER_S
        done = [i for i, (t, _) in self._unconfirmed.items() if t <= limit]
        if done:
            self._confirm(done)

    def _confirm(self, ids: list[int], topics: dict[int, str] | None = None) -> None:
        """Outbox entries the broker took: marked published in the journal (or, if the
        journal cannot write now, remembered and marked when it can)."""
        topics = dict(topics or {})
        for i in ids:
            entry = self._unconfirmed.pop(i, None)
            if entry is not None:
                topics[i] = entry[1]
            self._drops.pop(i, None)
            if i == self._probe:  # proven taken: the connection delivers, back to the window
                self._probe = None
                self._careful = False
        for topic in set(topics.values()):
            self._taken(topic)
        self.marks.add(ids)
