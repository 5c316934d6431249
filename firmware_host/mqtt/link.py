"""The floor link: the MQTT side of one table, composed of its parts (see the package
docstring):

- :class:`~.snapshots.Snapshots`: the retained snapshots (``state``, devices, jackpot,
  display snapshots);
- :class:`~.queues.Requests` and :class:`~.queues.Responses`: the request queues,
  commands first, and the answers waiting for the broker;
- :class:`~.pump.OutboxPump`: the outbox pump, with its publication window
  (``window.py``), the outbox's marks and storage holds (``marks.py``) and the refused
  topics' holds (``faults.py``);
- :class:`~.faults.LinkFaults`: what the broker refuses;
- :class:`~.connection.Connection`: connect, subscribe, reconnect with backoff.

Each part is given what it uses when it is made; :class:`FloorLink` makes them, wires
them, and is what the daemon and the tests call."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Callable, Mapping
from datetime import datetime

from .. import __version__
from ..auth.identity import TableIdentity
from ..journal import JournalError
from ..jsonio import JSON
from ..timefmt import iso_utc, utc_now
from .connection import Connection
from .faults import LinkFaults, TopicHolds
from .items import Backoff, LinkStats, OncePerKind, TableTopics, sealer
from .marks import OutboxMarks
from .outbox import OutboxJournal
from .pump import OutboxPump
from .queues import Requests, Responses
from .settings import Handler, MqttSettings, Response
from .snapshots import Snapshots
from .window import AfterPublication


class FloorLink:
    """The MQTT side of one table (see the package docstring).

    Use as ``async with FloorLink(...) as link:`` or ``task = link.start()`` then
    ``await link.stop()``. All methods are called from the event loop's thread,
    except :meth:`notify`, which is safe from any thread.
    """

    def __init__(
        self,
        settings: MqttSettings,
        table_id: str,
        outbox: OutboxJournal,
        *,
        handler: Handler | None = None,
        software_version: str = __version__,
        clock: Callable[[], datetime] = utc_now,
        rng: random.Random | None = None,
        identity: TableIdentity | None = None,
        after: AfterPublication | None = None,
    ) -> None:
        """``identity`` signs what the link publishes itself (snapshots, answers, the
        will: ``auth/evidence.py``; the outbox is signed already); default the outbox's.
        ``outbox``: the journal's outbox part (``Journal.outbox``). ``after``: the work
        that waits for the outbox's publications (:meth:`after_publication`), made
        before the journal that defers to it (the daemon's); default one of its own."""
        self.settings = settings
        self.table_id = table_id
        self._outbox = outbox
        self.topics = TableTopics(settings.prefix, table_id)
        self.root = self.topics.root
        self.client_id = settings.client_id or f"tablectl-{table_id}"
        self.stats = LinkStats()
        #: Whether the broker can say it refuses a publication (``visible``, MQTT 5) or
        #: not (``undetectable``, 3.1.1): part of every ``state`` payload from the start.
        self.refusals = settings.refusals
        self.backoff = Backoff(settings, rng)
        seal = sealer(identity if identity is not None else outbox.identity)
        #: Work waiting for the outbox's publications; its ``wake`` is the publisher's.
        self.after = after if after is not None else AfterPublication()
        self.wake = self.after.wake
        #: What the broker refuses now, by (code, topic); the retained ``state`` lists it.
        self.faults = LinkFaults(lambda: iso_utc(clock()), lambda: self.snapshots.refresh_state())
        self.snapshots = Snapshots(
            table_id,
            software_version=software_version,
            refusals=self.refusals,
            clock=clock,
            seal=seal,
            faults=self.faults,
            notify=self.wake.notify,
        )
        self.responses = Responses(self.stats, seal, self.wake.notify)
        failures = OncePerKind()
        self.requests = Requests(
            table_id,
            handler,
            topics=self.topics,
            stats=self.stats,
            respond=self.responses.respond,
            first_failure=failures,
        )
        #: The "published" marks of what the broker took, and the journal's storage
        #: faults waited out.
        self.marks = OutboxMarks(outbox, self.backoff)
        stopping = self._stopping = asyncio.Event()
        self.pump = OutboxPump(
            settings,
            outbox,
            topics=self.topics,
            stats=self.stats,
            snapshots=self.snapshots,
            responses=self.responses,
            faults=self.faults,
            holds=TopicHolds(self.backoff),
            marks=self.marks,
            backoff=self.backoff,
            wake=self.wake,
            after=self.after,
            stopping=stopping,
            clock=clock,
        )
        self.connection = Connection(
            settings,
            client_id=self.client_id,
            topics=self.topics,
            stats=self.stats,
            journal=outbox,
            snapshots=self.snapshots,
            responses=self.responses,
            requests=self.requests,
            faults=self.faults,
            pump=self.pump,
            wake=self.wake,
            backoff=self.backoff,
            stopping=stopping,
            first_failure=failures,
        )
        self._task: asyncio.Task[None] | None = None

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> asyncio.Task[None]:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self.run(), name="floor-link")
        return self._task

    async def run(self) -> None:
        """Connect, serve, reconnect with backoff; returns after :meth:`stop`."""
        await self.connection.run()

    async def stop(self, timeout: float | None = None) -> None:
        """Clean shutdown: finish the publication in flight, drain the outbox for up to
        ``shutdown_drain_ms``, publish ``state`` offline, disconnect (the will is not sent)."""
        self._stopping.set()
        self.wake.event.set()
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

    # -- what the daemon calls -----------------------------------------------------------
    def topic(self, suffix: str) -> str:
        """Full topic of ``suffix`` (``rounds``, ``devices/wheel``...); refuses wildcards."""
        return self.topics.topic(suffix)

    def notify(self) -> None:
        """Wake the publisher (the outbox grew). Cheap, never blocks, any thread."""
        self.wake.notify()

    def storage_changed(self) -> None:
        """The journal's storage fault was raised or cleared (its guard's listener):
        retry the outbox and the marks now."""
        self.marks.storage_changed()
        self.wake.notify()

    def after_publication(self, callback: Callable[[], None]) -> None:
        """Run ``callback()`` on the event loop once the outbox's entries committed so
        far are published and acknowledged by the broker (the daemon's deferrer for
        work that belongs after a round's publication: pruning, the extensions'
        hooks): on a live connection, when the publisher has no outbox entry in flight
        left, else at once (next loop turn); at the latest after
        :data:`~.settings.AFTER_PUBLICATION_MAX_S` (a slow or refusing broker never
        holds the table's own work longer). Callbacks run in the order queued; one that
        raises is logged and the others still run. Event loop's thread only."""
        self.after.queue(callback)

    def set_state(self, **fields: JSON) -> None:
        """Update the retained ``state`` snapshot (game, phase, round_id, faults...).

        ``schema_version``, ``table_id``, ``availability``, ``software_version``,
        ``refusals``, ``link_faults``, ``since`` and ``updated_at`` are filled in by the
        link.
        """
        self.snapshots.set_state(**fields)

    @property
    def state(self) -> Mapping[str, JSON]:
        return self.snapshots.state

    def set_device(self, name: str, payload: Mapping[str, JSON]) -> None:
        """Update the retained ``devices/<name>`` snapshot (``device.json``)."""
        self.snapshots.set_device(name, payload)

    def set_jackpot(self, payload: Mapping[str, JSON]) -> None:
        """Update the retained ``jackpot`` display snapshot (``jackpot.json``)."""
        self.snapshots.set_jackpot(payload)

    def set_snapshot(self, suffix: str, payload: Mapping[str, JSON]) -> None:
        """Update another retained display snapshot (``board``, ``stats``: what a table's
        extensions show), with the common head and ``updated_at``."""
        self.snapshots.set_snapshot(suffix, payload)

    def respond(self, request_topic: str, payload: Response) -> None:
        """Queue a response to a request received on ``request_topic`` (``bets/request``...)."""
        self.responses.respond(request_topic, payload)

    # -- where it stands -----------------------------------------------------------------
    @property
    def connected(self) -> bool:
        return self.connection.connected.is_set()

    @property
    def window(self) -> int:
        """Publications in flight at most: ``max_inflight``, or the broker's Receive
        Maximum (MQTT 5 CONNACK) when it is lower."""
        return self.pump.window

    async def wait_connected(self, timeout: float | None = None) -> None:
        await asyncio.wait_for(self.connection.connected.wait(), timeout)

    async def wait_subscribed(self, timeout: float | None = None) -> None:
        """Until the request topics are subscribed: requests sent before that, on the
        very first connection of a new session, would not reach the table."""
        await asyncio.wait_for(self.connection.subscribed.wait(), timeout)

    async def wait_idle(self, timeout: float | None = None) -> None:
        """Until everything queued (outbox, snapshots, responses) has been acknowledged."""
        idle_event, pump = self.wake.idle, self.pump

        async def idle() -> None:
            while True:
                await idle_event.wait()
                if not pump.has_work():
                    return
                idle_event.clear()

        await asyncio.wait_for(idle(), timeout)

    def get_status(self) -> dict[str, JSON]:
        s = self.stats
        try:
            pending: int | None = self._outbox.pending_count()
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
            "responses_queued": len(self.responses),
            "responses_dropped": s.responses_dropped,
            "requests": s.requests,
            "requests_queued": self.requests.queued(),
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


__all__ = ["FloorLink"]
