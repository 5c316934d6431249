"""The live lane: the rounds published now, taken ahead of a session's queue (issue 36).

A worker's session is persistent (``clean_start`` false): while the worker is away
(stopped, restarted, its connection down) the broker queues every round for it, and
gives them back in order when it returns. That keeps every round, but a queue is FIFO
with no priority: after ten minutes away from 1,000 tables, 33,000 rounds come first
and a round played on the worker's return waits behind all of them (tens of seconds).

So as the worker starts (before its database and registry are loaded: what is played
meanwhile is not only queued), and again before each later connection of its session,
it opens a *live lane*: a second connection with a clean session, subscribed to the
rounds through a shared group of its own (``$share/<group>-live/...``: each live round
goes to one worker's live lane), and to the tables' ``anchor`` and ``state`` (a live
round is covered by its own anchor).
A clean session gets only what is published from then on: the live rounds, at once.
The worker commits them ahead of the queue's (a priority queue), and acknowledges each
on the connection it came on once committed.

Nothing is stored twice and nothing is lost by it: each round published while the lane
is open reaches the worker's session too (later, after the queue), where the store
drops it as a duplicate, and a round the lane took and did not commit (the lane
closed, the worker died) is still in the session. The lane closes once it is not
needed: once the session delivers a round the lane had less than a second before (its
queue is then nearly current; a few duplicates on a reconnection that found no
queue) and the worker holds at most a batch of rounds not yet committed; at once when
the session is new (the worker's CONNACK hook); or when the broker ends it. The cost:
each round of the lane's lifetime is checked twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

import aiomqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from .messages import Incoming
from .settings import IngestSettings, WorkerStats
from .wire import _puback_all, read_all_waiting

log = logging.getLogger("flooringest")

#: Rounds remembered per connection while the lane is open, at most (past that, the
#: lane closes: the session is then far behind, and the lane's memory must stay small).
SEEN_MAX = 200_000
#: The lane closes once the session delivers a round the lane had this recently: the
#: session's queue is then nearly current (closing at the first round seen on both
#: would leave every round of the lane's lifetime queued in the session ahead of the
#: next live ones).
CLOSE_WITHIN_S = 1.0
#: Anchors and states a lane opened at the worker's start keeps until the worker's
#: registry is loaded, at most (past that they are dropped: they are retained, and the
#: session's own subscriptions bring them again).
HELD_MAX = 20_000
#: How much of a round's end identifies it: its signature (the last member), or for an
#: unsigned round its chain position and head.
TAIL = 128

Key = tuple[str, int, bytes]
#: Where a round taken by the lane goes: (client, mid, message), ahead of the queue's.
Put = Callable[[aiomqtt.Client, int, Incoming], None]
#: Where an anchor or state taken by the lane goes: (table, kind, payload).
Offer = Callable[[str, str, bytes], None]


def key_of(table: str, payload: bytes) -> Key:
    """What tells a round from another without parsing it."""
    return table, len(payload), payload[-TAIL:]


class LiveLane:
    """One worker's live lane (module docstring). :meth:`start` after each connection
    of the worker's session; :meth:`saw` for each round the session delivers."""

    def __init__(self, settings: IngestSettings, stats: WorkerStats, put: Put,
                 offer: Offer, on_open: Callable[[], None] | None = None,
                 waiting: Callable[[], int] = lambda: 0) -> None:  # fmt: skip
        self.s, self.stats, self._put, self._offer = settings, stats, put, offer
        #: Called each time the lane's subscriptions are in place.
        self._on_open = on_open
        #: How many rounds the worker holds delivered and not yet committed.
        self._waiting = waiting
        self.client: aiomqtt.Client | None = None
        self._task: asyncio.Task[None] | None = None
        #: The lane's rounds, each with when it came (monotonic).
        self._from_lane: dict[Key, float] = {}
        self._from_session: set[Key] = set()
        self._opened = 0.0
        self._taken = 0
        #: Set once the lane's subscriptions are in place (each :meth:`start`).
        self.ready = asyncio.Event()
        #: Anchors and states kept until :meth:`release` (a lane opened ``early``).
        self._held: list[tuple[str, str, bytes]] | None = None

    @property
    def _root(self) -> str:
        return f"{self.s.prefix}/tables/"

    @property
    def subscription(self) -> str:
        return f"$share/{self.s.group}-live/{self.s.prefix}/tables/+/rounds"

    @property
    def open(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self, *, early: bool = False) -> None:
        """Open the lane (again): the worker's session is about to connect (the lane
        subscribes first: every round published from then on reaches it). ``early``:
        the worker is starting, its registry not loaded yet: the anchors and states the
        lane takes are kept until :meth:`release` (its rounds wait in the worker's queue
        anyway: nothing is committed before the registry is loaded)."""
        self.stop("the session connects again")
        self._held = [] if early else None
        self.ready.clear()
        self._from_lane.clear()
        self._from_session.clear()
        self._opened, self._taken = time.monotonic(), 0
        self._task = asyncio.create_task(self._run(), name="ingest-live-lane")

    def stop(self, why: str) -> None:
        if self._task is None:
            return
        task, self._task, self.client = self._task, None, None
        task.cancel()
        if self._taken:  # a lane that took nothing: nothing to say
            log.info(
                "floor-ingest %s: live lane closed after %.1f s, %d round(s) taken "
                "ahead of the session's queue: %s", self.s.worker,
                time.monotonic() - self._opened, self._taken, why,
            )  # fmt: skip
        self._from_lane.clear()
        self._from_session.clear()

    def release(self) -> None:
        """The worker's registry is loaded: what the lane kept is offered, in order."""
        held, self._held = self._held, None
        for table, kind, payload in held or ():
            self._offer(table, kind, payload)

    async def close(self) -> None:
        """At the worker's end: the lane's task ended."""
        task = self._task
        self.stop("the worker stops")
        if task is not None:
            with contextlib.suppress(BaseException):
                await task

    def saw(self, table: str, payload: bytes) -> None:
        """The session delivered this round: once the lane had it too, less than
        :data:`CLOSE_WITHIN_S` ago, the session's queue is caught up, and once the
        worker's own queue is short too (:meth:`_caught_up`), the lane closes."""
        if not self.open:
            return
        k = key_of(table, payload)
        at = self._from_lane.get(k)
        if at is not None:
            if time.monotonic() - at < CLOSE_WITHIN_S and self._caught_up():
                self.stop("the session's queue is caught up")
        elif len(self._from_session) < SEEN_MAX:
            self._from_session.add(k)
        else:
            self.stop("the session is too far behind to remember")

    def _caught_up(self) -> bool:
        """Whether the rounds delivered and not yet committed are at most a batch: the
        session's delivery being current is not enough (issue 36's drain: the worker
        held 2,000-4,000 rounds read ahead of its commits, and the live rounds after
        the lane closed waited behind them, 3.1 s)."""
        return self._waiting() <= self.s.batch_max

    def _client(self) -> aiomqtt.Client:
        props = Properties(PacketTypes.CONNECT)  # type: ignore[no-untyped-call]
        props.SessionExpiryInterval = 0
        props.ReceiveMaximum = self.s.receive_maximum
        client = aiomqtt.Client(
            self.s.host, self.s.port, identifier=f"{self.s.client_id}-live",
            username=self.s.username, password=self.s.password,
            protocol=aiomqtt.ProtocolVersion.V5, clean_start=True, properties=props,
            keepalive=10,
        )  # fmt: skip
        client._client.manual_ack_set(True)  # acknowledged once committed
        read_all_waiting(client)  # every packet waiting at each turn, not one
        return client

    async def _run(self) -> None:
        client = self._client()
        try:
            async with client:
                self.client = client
                # The anchors first: a round of the lane then always follows its own
                # anchor on the lane (the table publishes it first), and is covered.
                await client.subscribe(f"{self._root}+/anchor", qos=1)
                await client.subscribe(f"{self._root}+/state", qos=1)
                await client.subscribe(self.subscription, qos=1)
                # From now on each message is taken in paho's callback, in the turn of
                # the event loop that read it (with every other packet waiting:
                # ``read_all_waiting``), not through aiomqtt's iterator: that costs each
                # message a task of its own and two to three turns of the event loop,
                # and a drain's turns are long (issue 36: the lane's rounds waited
                # 0.5-2.2 s to be taken, 10-20 turns a second). Only now: taken so
                # during the subscriptions too, the rounds' SUBACK came 0.5-1.2 s late
                # in a worker's start with the tables playing (the test of the rounds
                # played while the worker starts failed; the cause is not found: the
                # PUBACKs deferred to the next turn were as late).
                client._client.on_message = lambda _c, _u, m: self._take(
                    client, m.topic, m.payload, m.mid
                )
                self.ready.set()
                self.stats.extra["live_lane_opened"] = (
                    int(self.stats.extra.get("live_lane_opened", 0)) + 1
                )
                if self._on_open is not None:
                    self._on_open()
                # What came during the subscriptions, then none: until the lane ends.
                async for msg in client.messages:
                    self._take(client, msg.topic.value, msg.payload, msg.mid)
        except aiomqtt.MqttError as exc:  # the broker away: the session's own line says so
            log.log(logging.INFO if self.ready.is_set() else logging.DEBUG,
                    "floor-ingest %s: live lane ended: %s", self.s.worker, exc)  # fmt: skip
        finally:
            self.ready.set()  # nothing to wait for
            if self.client is client:
                self.client = None

    def _take(self, client: aiomqtt.Client, topic: str, raw: Any, mid: int) -> None:
        """One message of the lane, as it is read."""
        if self.client is not client:  # the lane closed meanwhile: the session has it
            return
        root = self._root
        payload = raw if isinstance(raw, bytes) else str(raw).encode()
        table, _, kind = (
            topic[len(root) :].partition("/") if topic.startswith(root) else ("", "", "")
        )
        if kind == "rounds":
            if self._lane_round(table, payload):
                self._put(client, mid, Incoming(table, payload, time.time()))
                return
        elif kind in ("anchor", "state"):
            if self._held is None:
                self._offer(table, kind, payload)
            elif len(self._held) < HELD_MAX:
                self._held.append((table, kind, payload))
        with contextlib.suppress(Exception):  # nothing to commit: at once
            _puback_all(client, [mid])

    def _lane_round(self, table: str, payload: bytes) -> bool:
        """Whether the lane takes this round (False: the session had it already and
        the worker's queue is short: the lane closes; while that queue is long, the
        lane takes it ahead of it, and the session's copy is a duplicate)."""
        k = key_of(table, payload)
        if k in self._from_session and self._caught_up():
            self.stop("the session's queue is caught up")
            return False
        if len(self._from_lane) >= SEEN_MAX:
            self.stop("the session is too far behind to remember")
            return False
        self._from_lane[k] = time.monotonic()
        self._taken += 1
        self.stats.extra["live_lane_rounds"] = int(self.stats.extra.get("live_lane_rounds", 0)) + 1
        return True


__all__ = ["LiveLane", "key_of"]
