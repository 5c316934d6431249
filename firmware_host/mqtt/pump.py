"""The outbox pump: what the link publishes on a connection, in what order, and what the
broker's answers do (see the package docstring and ``docs/mqtt.md``, "Delivery
guarantees and ordering", "Refusals are seen").

:class:`OutboxPump` reads the journal's outbox in id order after the last entry handed
to the client, composes each batch (``state`` first on a new connection, then the
outbox, the snapshots due, the answers), keeps a window of publications in flight
answered from the client's PUBACK callback (``window.py``), marks what the broker took
(``marks.py``), holds back a refused topic (``faults.py``), pauses on back-pressure, and
after a connection ended with outbox entries in flight sends the next one alone
(careful) until one is proven taken. After a reconnection with more than a window
waiting, the entries made since go first and that backlog beside them at the
``backlog_per_minute`` pace (``pace.py``: :class:`BacklogPace`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from datetime import datetime, timedelta

import aiomqtt
from paho.mqtt.reasoncodes import ReasonCode

from ..journal import JournalError, OutboxEntry, seq_of_round_id
from ..timefmt import iso_utc, utc_now
from .client import OnAck, Sent, _AckClient, _refusal
from .faults import LinkFaults, TopicHolds
from .items import Item, LinkStats, TableTopics
from .marks import OutboxMarks
from .outbox import OutboxReader
from .pace import BacklogPace
from .queues import Responses
from .settings import (
    BACKPRESSURE_CODES,
    CONFIRM_AFTER_S,
    DROPS_TO_FAULT,
    IDLE_POLL_S,
    MARKS_BATCH,
    MqttSettings,
)
from .snapshots import Snapshots
from .window import AfterPublication, Wake, Window

log = logging.getLogger("firmware_host.mqtt")

#: The outbox's topic whose backlog entries each wait for the pace (a round); the other
#: entries of the backlog (its anchors, events) go with them, in order.
PACED_TOPIC = "rounds"
#: Entries of the backlog read at most in a turn (a round and its anchors and events).
BACKLOG_READ = 8


def newest_pending(journal: OutboxReader, first: int) -> int:
    """The highest id of an entry not marked published, ``first`` being one: found with
    single-entry reads (a doubling search, then halving), never reading the backlog."""
    last, step = first, 64
    while nxt := journal.pending(1, after_id=last + step):
        last, step = nxt[0].id, step * 2
    hi = last + step  # nothing waits above it
    while last < hi:
        mid = (last + hi + 1) // 2
        nxt = journal.pending(1, after_id=mid - 1)
        if nxt and nxt[0].id <= hi:
            last = nxt[0].id
        else:
            hi = mid - 1
    return last


def round_seq_at(journal: OutboxReader, top: int, first: int) -> int | None:
    """The seq of the round of the entry ``top`` (not marked published), or of the
    nearest one below it down to ``first`` that names a round: a few single-entry
    reads (None: none of the last few names one)."""
    for ref in range(top, max(first, top - 8) - 1, -1):
        got = journal.pending(1, after_id=ref - 1)
        if got and got[0].id <= top and (seq := seq_of_round_id(got[0].round_id)):
            return seq
    return None


def last_made_before(journal: OutboxReader, first: OutboxEntry, top: int, stamp: str) -> int:
    """The highest id, up to ``top``, of an entry not marked published and made before
    ``stamp`` (the journal's ISO time; entries are made in id order), 0 if ``first``
    (the first such entry) is not: found by halving, with single-entry reads."""
    if not first.created_at < stamp:
        return 0
    lo, hi = first.id, top
    while lo < hi:
        mid = (lo + hi + 1) // 2
        nxt = journal.pending(1, after_id=mid - 1)
        if nxt and nxt[0].id <= hi and nxt[0].created_at < stamp:
            lo = nxt[0].id
        else:
            hi = mid - 1
    return lo


class OutboxPump:
    """The publications of the link: the outbox (``journal``), the ``snapshots`` and the
    ``responses``, in flight at most ``window`` at once, and what the broker's answers
    do: counted in ``stats``, marked in ``marks``, refusals raised in ``faults`` and held
    back in ``holds`` (each retried after ``backoff(n)``). :meth:`serve` runs it on one
    connection, woken through ``wake``, until ``stopping`` is set; the work queued in
    ``after`` runs once the outbox's publications are acknowledged."""

    def __init__(
        self,
        settings: MqttSettings,
        journal: OutboxReader,
        *,
        topics: TableTopics,
        stats: LinkStats,
        snapshots: Snapshots,
        responses: Responses,
        faults: LinkFaults,
        holds: TopicHolds,
        marks: OutboxMarks,
        backoff: Callable[[int], float],
        wake: Wake,
        after: AfterPublication,
        stopping: asyncio.Event,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.settings, self.journal, self.topics, self.stats = settings, journal, topics, stats
        self.snapshots, self.responses = snapshots, responses
        self.faults, self.holds, self.marks, self._backoff = faults, holds, marks, backoff
        self.wake, self.after, self.stopping = wake, after, stopping
        #: Outbox entry id -> connections that ended, in a row, while it was the only
        #: publication in flight or awaiting its proof (see count_drops).
        self.drops: dict[int, int] = {}
        #: After a connection ended with outbox entries in flight: the next outbox entry
        #: goes alone, with nothing else in flight, until one is proven taken.
        self.careful = False
        #: The outbox entry sent alone while careful, until it is proven taken, refused,
        #: or caught by the connection's end.
        self.probe: int | None = None
        #: While careful: whether the window of snapshots and answers that goes before
        #: each lone entry went.
        self.others_went = False
        #: Back-pressure (a PUBACK saying the broker's quota is exceeded): nothing new is
        #: sent before this monotonic time; such answers in a row.
        self.paused: tuple[float, int] = (0.0, 0)
        #: The window on the current connection: ``max_inflight``, or the broker's
        #: Receive Maximum (MQTT 5 CONNACK) when it is lower.
        self.window = settings.max_inflight
        #: Outbox entries handed to the client and not answered: id -> topic.
        self.in_flight: dict[int, str] = {}
        #: The highest outbox id handed to the client on this connection: the next read
        #: starts after it (each entry is read once; a refusal moves it back).
        self.outbox_after = 0
        #: MQTT 3.1.1: outbox entries acknowledged on this connection and not yet known
        #: to have been taken (id -> (acknowledged at, topic)); see confirm_unconfirmed.
        self.unconfirmed: dict[int, tuple[float, str]] = {}
        #: Whether an acknowledgement counts only once the connection outlived it.
        self.confirm_by_survival = settings.protocol != "5"
        #: "Fill the window" while :meth:`serve` runs on a connection: the outbox's
        #: listener calls it (:meth:`outbox_grew`); returns the room it had.
        self.fill: Callable[[], int] | None = None
        #: The backlog's pace (see the module docstring); entries up to
        #: ``backlog_top`` were waiting when the connection came up. While it is paced
        #: the live entries are read after ``backlog_top`` (``outbox_after``) and the
        #: backlog from its own cursor ``backlog_after``; ``backlog_found``: whether this
        #: connection's backlog was looked at.
        self.pace = BacklogPace(
            settings.backlog_per_minute, settings.max_inflight, settings.reconnect_max_ms / 1000
        )
        #: The journal's clock (what it stamps its entries with).
        self.clock = clock
        self.backlog_top = 0
        self.backlog_after = 0
        self.backlog_found = False
        #: When the last try to connect that failed began (the journal's clock; None:
        #: none since the last connection): what was made before it was made while the
        #: floor was away (the backlog), what was made after it may be after the
        #: floor's return (live), however long the connection then took to come up.
        self.down_at: datetime | None = None
        #: The highest outbox id handed over per retained topic, and at each connection
        #: the journal's newest (published or not): an older entry of the topic (a
        #: backlog's anchor after a live one) goes without the retain flag, so that the
        #: broker's retained message never goes back.
        self.retained_sent: dict[str, int] = {}

    @property
    def publishing(self) -> bool:
        """Whether the pump serves a connection now."""
        return self.fill is not None

    def connected(self) -> None:
        """A new connection: what was in flight on the last one goes again."""
        self.outbox_after = 0
        self.backlog_after = self.backlog_top = 0
        self.backlog_found = False
        self.pace.end()
        with contextlib.suppress(JournalError):
            # The newest retained entry of each topic, published or not, from the journal
            # (not only this process's memory: after a restart mid-backlog, an older
            # anchor of the backlog must not replace the newer one the broker holds).
            for topic, newest in self.journal.newest_retained().items():
                self.retained_sent[topic] = max(self.retained_sent.get(topic, 0), newest)
        with contextlib.suppress(JournalError):  # else looked at before the first read
            self.find_backlog(time.monotonic())

    def find_backlog(self, now: float) -> None:
        """On a new connection, before the first read: whether what waits is a backlog
        to pace and, if so, where it ends (the live entries are read after it): what
        was made before the last ``recent_s`` (``BacklogPace``) and before the last
        failed try began (:attr:`down_at`), if more than a window."""
        waiting, unpaced = self.journal.pending_count(), self.pace.unpaced
        top, backlog = 0, 0
        paced = self.pace.per_minute > 0 and waiting > unpaced
        first = self.journal.pending(1, after_id=0) if paced else []
        down_at = self.down_at
        if first:
            since = self.clock() - timedelta(seconds=self.pace.recent_s)
            stamp = iso_utc(since if down_at is None else min(since, down_at))
            top = last_made_before(
                self.journal, first[0], newest_pending(self.journal, first[0].id), stamp
            )
            # More than a window made before then? (By ids: what waits after an outage
            # is contiguous; nothing is read for it.)
            backlog = top - first[0].id + 1 if top else 0
        self.backlog_found, self.down_at = True, None
        if not self.pace.begin(backlog, now):
            self.snapshots.set_backlog(None)
            return
        self.backlog_top = top
        self.outbox_after = max(self.outbox_after, top)
        # Said in ``state``: the rounds above it go live, and the floor asks at once for
        # a hole among them (issue 36; a hole in the backlog is only the pace).
        self.snapshots.set_backlog(
            round_seq_at(self.journal, top, first[0].id), self.pace.per_minute
        )
        log.info(
            "mqtt: %d entries waiting; those up to id %d, made more than %g s ago, are "
            "published beside the live ones, %d round(s) a minute",
            waiting,
            top,
            self.pace.recent_s,
            self.pace.per_minute,
        )

    def rewind(self, ref: int) -> None:
        """Outbox entry ``ref`` was not taken: its cursor goes back before it."""
        if self.pace.active and ref <= self.backlog_top:
            self.backlog_after = min(self.backlog_after, ref - 1)
        else:
            self.outbox_after = min(self.outbox_after, ref - 1)

    # -- the outbox's listener -------------------------------------------------------------
    def outbox_grew(self) -> None:
        """The journal's outbox listener (after a commit that queued entries): wake the
        publisher and, on the event loop's thread with a connection up and no
        transaction open, hand the new entries to the client now: they are on the wire
        before the code that committed them goes on, not one loop turn later behind it.
        A broken connection is left to the publisher's own turn."""
        self.wake.notify()
        fill = self.fill
        if (
            fill is None
            or not self.wake.on_loop_thread()
            or self.journal.in_transaction  # an outer transaction's entries may roll back
        ):
            return
        with contextlib.suppress(aiomqtt.MqttError):  # gone: the publisher's turn meets it
            fill()

    # -- what goes next --------------------------------------------------------------------
    def idle_timeout(self) -> float:
        """How long the publisher may rest: until the first hold or pause ends, or an
        acknowledgement is confirmed (MQTT 3.1.1); :data:`IDLE_POLL_S` at most."""
        now = time.monotonic()
        until = self.holds.retry_times()
        until.extend(self.marks.retry_times())
        if self.paused[0] > now:
            until.append(self.paused[0])
        if self.pace.active and (wait := self.pace.wait(now)) > 0:
            until.append(now + wait)
        if self.unconfirmed:
            until.append(min(t for t, _ in self.unconfirmed.values()) + CONFIRM_AFTER_S)
        soonest = min(until, default=now + IDLE_POLL_S)
        return max(0.001, min(IDLE_POLL_S, soonest - now))

    def has_work(self) -> bool:
        """Whether anything queued is not yet acknowledged (and marked)."""
        if self.responses or self.marks.waiting or self.unconfirmed:
            return True
        try:
            if self.journal.pending_count():
                return True
        except JournalError:
            return True
        return self.snapshots.waiting

    def next_batch(self, room: int | None = None, *, window_empty: bool = True) -> list[Item]:
        """What to publish next, at most ``room`` items (default: the window), none of
        them already in flight. On a new connection the ``state`` snapshot goes first
        (availability before anything else); after that the journal's outbox (settled
        rounds, lifecycle events) goes before snapshots, which only need their latest
        value, and responses come last: neither a burst of snapshot updates nor a
        stream of requests may hold back the table's own output (answers to requests that
        acted go before refusals). A topic the broker refused waits for its backoff; a
        refused outbox entry holds back every entry after it in its stream (the floor
        gets them in order or not at all).

        After a reconnection that found more than a window waiting (:meth:`find_backlog`),
        the outbox is two streams, each in id order: what was committed since the
        connection came up goes first, and the backlog beside it, each entry waiting for
        the pace (``pace.py``), each round spending it.

        The outbox is read from the journal after the last entry handed to the client
        on this connection (each entry is read once, by its primary key).

        Careful (after a connection ended with outbox entries in flight, or a refused
        entry: see :meth:`count_drops`): the next outbox entry goes alone, once the
        window is empty (``window_empty``), and nothing else goes until it is proven
        taken; before each such entry, one window of snapshots and answers goes first,
        so that an entry a broker refuses by closing the connection cannot keep them from
        the floor. While the broker pushes back (a quota exceeded), nothing is sent."""
        now = time.monotonic()
        if room is None:
            room = self.window
        if now < self.paused[0] or (self.careful and self.probe is not None):
            return []
        snapshots, holds = self.snapshots, self.holds
        # Snapshots due (serialised only if they go in the batch: the outbox often fills it).
        due = snapshots.due(holds, now)
        announced = snapshots.announced

        def others(batch: list[Item]) -> list[Item]:
            """``batch`` filled with the snapshots due, then the responses."""
            if announced and len(batch) < room and due:
                batch.extend(snapshots.items(due, room - len(batch)))
            self.responses.fill(batch, room, holds, now)
            return batch

        batch: list[Item] = [] if announced else snapshots.items(due, room)
        if self.careful and not self.others_went:
            self.others_went = True  # once before each lone entry
            if others(batch):
                return batch
        if len(batch) < room and self.marks.ready("read", now):
            skip = self.marks.skip() | self.unconfirmed.keys()
            skip |= self.in_flight.keys()
            wanted = 1 if self.careful else room - len(batch)
            try:
                if not self.backlog_found:
                    self.find_backlog(now)
                live = self._read(self.outbox_after, wanted, skip)
                backlog = None  # read only when its next entry may go, a few at a time
                if self.pace.active and self.pace.allowed(now):
                    backlog = self._read(self.backlog_after, min(wanted, BACKLOG_READ), skip)
            except JournalError as exc:
                self.marks.failed("read", exc)
                live, backlog = [], None
            else:
                self.marks.ok("read")
                if backlog is not None and not any(e.id <= self.backlog_top for e in backlog):
                    # The backlog is all handed over: one cursor again (from the
                    # backlog's, for an entry of it the broker may still refuse).
                    self.pace.end()
                    self.outbox_after = min(self.outbox_after, self.backlog_after)
                    self.snapshots.set_backlog(None)
                    log.info("mqtt: the backlog is handed over")
            entries = [(e, False) for e in live]
            entries += [(e, True) for e in backlog or () if e.id <= self.backlog_top]
            stopped: set[bool] = set()
            for e, paced in entries:
                if paced in stopped:
                    continue
                if len(batch) >= room:
                    break
                if holds.held(e.topic, now) or (paced and not self.pace.allowed(now)):
                    stopped.add(paced)  # that stream waits (in order), the other goes on
                    continue
                if self.careful:
                    # Alone, once what is in flight (the state before it) is answered;
                    # nothing more meanwhile, so that the window drains.
                    if batch or not window_empty:
                        return batch
                    self.probe = e.id
                    self.others_went = False
                    return [self._outbox_item(e, paced, now)]
                batch.append(self._outbox_item(e, paced, now))
        return others(batch)

    def _read(self, after: int, wanted: int, skip: set[int]) -> list[OutboxEntry]:
        """At most ``wanted`` entries not marked published after ``after``, by id, none
        of ``skip``. Only those after the cursor can come back in the read (after a
        refusal moved it back): each entry read is one payload copied out of SQLite."""
        ahead = sum(1 for i in skip if i > after)
        return [e for e in self.journal.pending(wanted + ahead, after_id=after) if e.id not in skip]

    def _outbox_item(self, e: OutboxEntry, paced: bool, now: float) -> Item:
        """``e`` as handed over (``paced``: the backlog's, a round spends the pace); an
        entry older than one already handed over on its retained topic goes unretained."""
        if paced and e.topic == PACED_TOPIC:
            self.pace.spend(now)
        retain = e.retain
        if retain:
            newest = self.retained_sent.get(e.topic, 0)
            retain = e.id >= newest
            self.retained_sent[e.topic] = max(newest, e.id)
        return Item("outbox", e.topic, e.payload, e.qos, retain, e.id)

    # -- handing over and answers ----------------------------------------------------------
    def send(self, client: _AckClient, item: Item, on_ack: OnAck | None = None) -> Sent | None:
        """Hand ``item`` to the client, written to the socket now; None when it cannot be
        published at all (e.g. too large: dropped, never blocking the queue; ``on_ack``
        is then not called). Raises :class:`aiomqtt.MqttError` when the connection is
        gone. ``on_ack``: see :meth:`_AckClient.send`."""
        try:
            sent = client.send(
                self.topics.topic(item.topic),
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
            self.in_flight[item.ref] = item.topic
            if self.pace.active and item.ref <= self.backlog_top:
                self.backlog_after = max(self.backlog_after, item.ref)
            else:
                self.outbox_after = max(self.outbox_after, item.ref)
        elif item.kind == "snapshot" and item.ref is not None:
            self.snapshots.sending(item.ref)
        elif item.kind == "response":
            self.responses.sending(item.ref)
        return sent

    async def publish(self, client: _AckClient, item: Item) -> None:
        """Send ``item`` and wait for its PUBACK (outside the window: the first and the
        last ``state`` of a connection), then act on it (accepted, or refused)."""
        sent = self.send(client, item)
        t0 = time.perf_counter()
        refused: ReasonCode | None = None
        try:
            if sent is not None:
                refused = await client.acked(sent, self.settings.publish_timeout_ms / 1000)
        finally:
            self.released(item)
        self.answered(item, refused, t0)

    def released(self, item: Item) -> None:
        """``item`` is no longer in flight (answered, timed out or abandoned)."""
        if item.kind == "outbox":
            self.in_flight.pop(item.ref, None)
        elif item.kind == "snapshot" and item.ref is not None:
            self.snapshots.released(item.ref)
        elif item.kind == "response":
            self.responses.released(item.ref)

    def answered(self, item: Item, refused: ReasonCode | None, sent_at: float) -> None:
        """The broker's answer to ``item`` (sent at ``perf_counter()`` ``sent_at``):
        accepted, or refused."""
        self.stats.puback.add(time.perf_counter() - sent_at)
        if refused is not None:
            if refused.value in BACKPRESSURE_CODES:
                self.pushed_back(item, refused)
            else:
                self.refused(item, refused)
            return
        self.accepted(item)

    def refused(self, item: Item, reason: ReasonCode) -> None:
        """The broker refused ``item`` (PUBACK reason code >= 0x80): nothing is marked,
        the topic waits for its backoff, the fault is raised (logged once)."""
        self.stats.refused += 1
        self.holds.hold(item.topic)
        if item.kind == "outbox":  # read again from it (it holds back the entries after it)
            self.rewind(item.ref)
            # Tried again alone when its hold ends, so that the entries after it are not
            # taken ahead of it at every retry (only those already sent with it).
            self.careful = True
            if item.ref == self.probe:
                self.probe = None
        what = {"outbox": "outbox entry", "snapshot": "snapshot", "response": "response"}
        self.faults.raise_(
            "PUBLISH_REFUSED",
            item.topic,
            f"the broker refused the publication: {_refusal(reason)}; the {what[item.kind]} "
            "stays queued"
            + (" and holds back the outbox after it" if item.kind == "outbox" else ""),
        )

    def pushed_back(self, item: Item, reason: ReasonCode) -> None:
        """The broker did not take ``item`` for want of room (PUBACK 0x97 *Quota
        exceeded*...): not a refusal of its topic, no fault. It stays queued (an outbox
        entry is read again, in order), and nothing new is sent for a backoff that grows
        while the broker keeps pushing back (logged once, until it takes one again)."""
        self.stats.throttled += 1
        if item.kind == "outbox":
            self.rewind(item.ref)
            self.careful = True  # goes again alone, as a refused entry
            if item.ref == self.probe:
                self.probe = None
        _, n = self.paused
        if n == 0:
            log.warning(
                "mqtt: the broker did not take a publication on %s: %s; not a refusal: "
                "publishing pauses and it goes again",
                item.topic,
                _refusal(reason),
            )
        self.paused = (time.monotonic() + self._backoff(n), n + 1)

    def accepted(self, item: Item) -> None:
        """The broker took ``item``."""
        self.stats.published += 1
        if self.paused[1]:
            log.info("mqtt: the broker takes publications again")
            self.paused = (0.0, 0)
        if self.unconfirmed:
            # An acknowledgement after them: the connection outlived theirs.
            self.confirm(list(self.unconfirmed))
        if item.kind != "outbox":
            self.taken(item.topic)
        if item.kind == "outbox":
            self.stats.outbox_published += 1
            if self.confirm_by_survival:
                self.unconfirmed[item.ref] = (time.monotonic(), item.topic)
            else:
                self.confirm([item.ref], {item.ref: item.topic})
        elif item.kind == "response":
            self.responses.accepted(item.ref)
        elif item.ref is not None:
            self.snapshots.accepted(item.ref)

    def taken(self, topic: str) -> None:
        """The broker took a publication on ``topic``: its hold and fault end."""
        self.holds.release(topic)
        if self.faults:
            self.faults.clear("PUBLISH_REFUSED", topic)

    def confirm_unconfirmed(self) -> None:
        """MQTT 3.1.1: entries acknowledged :data:`CONFIRM_AFTER_S` ago on a connection
        still open count as taken. A broker that refuses by closing the connection
        closes it at once after the PUBACK (mosquitto with ``max_queued_messages 0``);
        one that keeps it (mosquitto with a limit) drops a refused publication unseen:
        on 3.1.1 this is all a client can know (``refusals``: ``undetectable``)."""
        if not self.unconfirmed:
            return
        limit = time.monotonic() - CONFIRM_AFTER_S
        done = [i for i, (t, _) in self.unconfirmed.items() if t <= limit]
        if done:
            self.confirm(done)

    def confirm(self, ids: list[int], topics: dict[int, str] | None = None) -> None:
        """Outbox entries the broker took: marked published in the journal (or, if the
        journal cannot write now, remembered and marked when it can)."""
        topics = dict(topics or {})
        for i in ids:
            entry = self.unconfirmed.pop(i, None)
            if entry is not None:
                topics[i] = entry[1]
            self.drops.pop(i, None)
            if i == self.probe:  # proven taken: the connection delivers, back to the window
                self.probe = None
                self.careful = False
        for topic in set(topics.values()):
            self.taken(topic)
        self.marks.add(ids)

    def count_drops(self) -> None:
        """A connection ended with outbox entries in flight, or acknowledged and not yet
        confirmed (MQTT 3.1.1): they were not marked published, and go out again on the
        next connection.

        A broker may refuse a publication by closing the connection: an MQTT 3.1.1 broker
        has no other way to say no (MQTT-3.3.5-2), some close it without a PUBACK, and
        mosquitto 2.0 closes it after the PUBACK of a denied publication in some versions
        and configurations only (``max_queued_messages 0``: docs/mqtt.md). Such an end
        catches the refused entry and whatever was sent around it, which the broker took
        or never read: none of them is blamed (a permitted topic must never be flagged).
        The next outbox entry goes alone instead (``careful``): nothing else in flight
        until it is proven taken (MQTT 5: its PUBACK; 3.1.1: the connection outliving its
        PUBACK). A connection that ends while that lone entry awaits its proof counts
        against it; :data:`DROPS_TO_FAULT` such ends in a row raise ``PUBLISH_REFUSED``
        on its topic, which then waits for its backoff, so that everything else still
        flows meanwhile."""
        caught = dict(self.in_flight)
        caught.update({i: topic for i, (_, topic) in self.unconfirmed.items()})
        self.in_flight.clear()
        self.unconfirmed.clear()
        probe, self.probe = self.probe, None
        self.others_went = False
        if not caught:
            return
        self.careful = True
        if probe is None or probe not in caught:
            return
        topic = caught[probe]
        n = self.drops.get(probe, 0) + 1
        self.drops[probe] = n
        if n >= DROPS_TO_FAULT:
            self.holds.hold(topic)
            self.faults.raise_(
                "PUBLISH_REFUSED",
                topic,
                f"the broker closed the connection {n} times in a row while outbox entry "
                f"{probe} was the only publication in flight or just acknowledged (how a "
                "broker may refuse a publication without saying so); the entry stays queued "
                "and holds back the outbox after it",
            )

    # -- one connection --------------------------------------------------------------------
    async def serve(self, client: _AckClient, subscribed: asyncio.Event) -> None:
        """Publish on one connection until it ends or ``stopping`` is set: keep up to
        the window's publications in flight, each written to the socket as soon as it is
        taken (:meth:`send`), its PUBACK answering it through the window (:class:`Window`);
        a freed slot or new work wakes the loop, which writes the "published" marks of
        what the broker took in one transaction when the window drains or
        :data:`MARKS_BATCH` windows' worth wait. Begins with ``state`` online (once the
        request topics are ``subscribed``), ends with ``state`` offline when stopping."""
        await subscribed.wait()
        snapshots, wake, after, marks = self.snapshots, self.wake, self.after, self.marks
        version = snapshots.version("state")
        online = snapshots.state_payload("online")
        await self.publish(client, Item("snapshot", "state", online, 1, True, ("state", version)))
        inflight = Window(self, client, self.settings.publish_timeout_ms / 1000, wake.event)
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
            for item in self.next_batch(room, window_empty=not inflight) if room > 0 else ():
                inflight.send(item)
            return room

        drain_deadline: float | None = None
        self.fill = fill
        after.publishing = True
        try:
            while True:
                inflight.check()
                if self.stopping.is_set():
                    if drain_deadline is None:
                        drain_deadline = time.monotonic() + self.settings.shutdown_drain_ms / 1000
                    if time.monotonic() >= drain_deadline:
                        break
                wake.event.clear()
                self.confirm_unconfirmed()
                marks.retry()
                room = fill()
                if after and room > 0 and not self.in_flight:
                    # The outbox was read this turn (outbox entries go first in a batch)
                    # and none is in flight: what it held when that work was queued is
                    # acknowledged, or held back by a refusal. The work runs now.
                    after.run()
                if not inflight or len(marks.pending) >= MARKS_BATCH * self.settings.max_inflight:
                    # Together: when the window drains, or MARKS_BATCH windows' worth
                    # wait (until then they are not read or sent again; a crash only
                    # means they are published again, the same bytes under the same id).
                    marks.flush()
                if not inflight:
                    if self.stopping.is_set():
                        break
                    if not wake.event.is_set():
                        wake.idle.set()
                # The poll is a safety net only: commits wake us through the listener,
                # PUBACKs through the window; a refused topic or the journal's storage
                # is retried when its backoff ends. (A timer, not wait_for: its inner
                # task would cost a loop iteration at every wake.)
                timer = asyncio.get_running_loop().call_later(self.idle_timeout(), wake.event.set)
                try:
                    await wake.event.wait()
                finally:
                    timer.cancel()
            # Finish the publications in flight (each times out on its own by then).
            await inflight.drained(self.settings.publish_timeout_ms / 1000)
            marks.flush()
        finally:
            self.fill = None
            after.publishing = False
            if after:  # no publisher left to wait for
                after.later(0.0)
            inflight.abandon()
        # Goodbye: retained offline, then DISCONNECT (on leaving ``async with``) cancels the will.
        offline = snapshots.state_payload("offline", reason="shutdown")
        await self.publish(client, Item("snapshot", "state", offline, 1, True, None))
        log.info("mqtt: table marked offline (clean shutdown)")


__all__ = ["OutboxPump"]
