"""The link's request queues: requests on ``bets/request`` and ``commands/request`` wait
in one bounded queue per topic and are handed to the daemon's handler one at a time,
commands first (:class:`Requests`); answers wait in bounded queues of their own, those
to requests that acted before refusals, until the outbox pump publishes them
(:class:`Responses`). See "Requests: bounds and order" in ``docs/mqtt.md``."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping

from .. import boundedjson
from ..jsonio import JSON
from ..schemas import response
from ..topics import TopicError
from .faults import TopicHolds
from .items import Item, LinkStats, OncePerKind, Seal, TableTopics
from .settings import (
    MAX_QUEUED,
    MAX_RESPONSES_QUEUED,
    REQUEST_PRIORITY,
    REQUEST_TOPICS,
    Handler,
    Response,
)

log = logging.getLogger("firmware_host.mqtt")


class Responses:
    """Answers waiting for the broker: to requests that acted (``ok``, ``accepted``)
    first, then refusals (a flood of malformed requests cannot hold back a dealer's
    answer), at most :data:`MAX_RESPONSES_QUEUED` together (the oldest refusal, else
    the oldest answer, dropped and counted). Not journaled: they survive reconnects,
    not a restart. ``seal`` signs an answer given as a mapping; ``notify()`` wakes the
    publisher."""

    def __init__(self, stats: LinkStats, seal: Seal, notify: Callable[[], None]) -> None:
        self._stats, self._seal, self._notify = stats, seal, notify
        #: key -> (response topic, payload, qos), in the order queued.
        self.acted: OrderedDict[int, tuple[str, bytes, int]] = OrderedDict()
        self.refusals: OrderedDict[int, tuple[str, bytes, int]] = OrderedDict()
        self._seq = 0
        #: Keys awaiting their PUBACK on this connection.
        self.in_flight: set[int] = set()

    def __len__(self) -> int:
        return len(self.acted) + len(self.refusals)

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
        while len(self.acted) + len(self.refusals) >= MAX_RESPONSES_QUEUED:
            (self.refusals or self.acted).popitem(last=False)
            self._stats.responses_dropped += 1
        self._seq += 1
        queue = self.acted if acted else self.refusals
        queue[self._seq] = (response_topic, body, 0 if anonymous else 1)
        self._notify()

    def fill(self, batch: list[Item], room: int, holds: TopicHolds, now: float) -> None:
        """``batch`` filled up to ``room`` with the answers not in flight whose topic is
        not held at ``now``, those that acted first."""
        for queue in (self.acted, self.refusals):
            for key, (topic, raw, qos) in queue.items():
                if len(batch) >= room:
                    break
                if key not in self.in_flight and not holds.held(topic, now):
                    batch.append(Item("response", topic, raw, qos, False, key))

    def sending(self, key: int) -> None:
        """The answer ``key`` is handed to the client."""
        self.in_flight.add(key)

    def released(self, key: int) -> None:
        """The answer ``key`` is no longer in flight (answered, timed out or abandoned)."""
        self.in_flight.discard(key)

    def accepted(self, key: int) -> None:
        """The broker took the answer ``key``: done."""
        if self.acted.pop(key, None) is None:
            self.refusals.pop(key, None)

    def connected(self) -> None:
        """A new connection: nothing in flight (what was goes again)."""
        self.in_flight.clear()


class Requests:
    """Requests received and not yet handled, one bounded queue per request topic
    (:data:`MAX_QUEUED`), handed to ``handler(topic, payload)`` one at a time by
    :meth:`serve`, commands first (:data:`REQUEST_PRIORITY`); each answer goes to
    ``respond(topic, answer)``. A request too large, or arriving to a full queue, is
    answered at once without being read (``request_id`` null)."""

    def __init__(
        self,
        table_id: str,
        handler: Handler | None,
        *,
        topics: TableTopics,
        stats: LinkStats,
        respond: Callable[[str, Response], None],
        first_failure: OncePerKind,
    ) -> None:
        self.table_id, self.handler, self._topics, self._stats = table_id, handler, topics, stats
        self._respond, self._first_failure = respond, first_failure
        self.queues: dict[str, deque[bytes]] = {t: deque() for t in REQUEST_TOPICS}
        self._ready = asyncio.Event()

    def queued(self) -> dict[str, JSON]:
        """Requests waiting, by topic (the console's ``status``)."""
        return {t: len(q) for t, q in self.queues.items()}

    def received(self, topic: str, payload: bytes, retain: bool) -> None:
        """One incoming message (called by the client as it is read): queued for
        :meth:`serve`, or refused at once without being read (too large, queue full).
        Never raises: it runs inside the client's socket reader."""
        try:
            self._take(topic, payload, retain)
        except Exception:
            if self._first_failure("receive"):
                log.exception("mqtt: an incoming message could not be queued")

    def _take(self, topic: str, payload: bytes, retain: bool) -> None:
        rel = self._topics.relative(topic)
        if rel not in REQUEST_TOPICS:
            return
        if retain:
            log.warning("mqtt: ignoring a retained request on %s (requests must be live)", rel)
            return
        if not payload:
            return  # an empty message only clears a retained one: not a request
        self._stats.requests += 1
        queue = self.queues[rel]
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
            self._ready.set()

    def _refuse_unread(self, rel: str, code: str, message: str) -> None:
        """Answer a request without reading it (``request_id`` null), at once."""
        self._stats.requests_refused_unread += 1
        status = "rejected" if rel == "bets/request" else "error"
        self._respond(rel, response(self.table_id, None, status, code=code, message=message))

    def next(self) -> tuple[str, bytes] | None:
        """Commands before bets: a flood of bets never delays a dealer's command."""
        for rel in REQUEST_PRIORITY:
            queue = self.queues[rel]
            if queue:
                return rel, queue.popleft()
        return None

    async def serve(self) -> None:
        """Hand queued requests to the handler one at a time, commands first; between
        two, the event loop runs everything else (devices, the publisher)."""
        while True:
            nxt = self.next()
            if nxt is None:
                self._ready.clear()
                await self._ready.wait()
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
            self._stats.handler_errors += 1
            if self._first_failure(f"handler {type(exc).__name__}"):
                log.exception("mqtt: request handler failed on %s (logged once per kind)", rel)
            result = self._internal_error(rel, payload, exc)
        try:
            self._respond(rel, result)
        except TypeError:
            self._stats.handler_errors += 1
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


__all__ = ["Requests", "Responses"]
