"""One ingest worker: a shared subscription to every table's ``rounds``, each round
verified against the registry of tables, batches committed before they are
acknowledged, and (while it holds the lease) the duties.

**Verified, or quarantined.** Every message on ``rounds`` is checked before anything
is stored (:class:`flooringest.verify.Verifier`): a table the registry knows, the
message signed by one of its keys in its one signed spelling, a round, whose ``seq``
the table announced. What fails is quarantined with its reason (``floor_quarantine``),
counted, logged at a bounded rate, raised as a floor fault on the retained topic
``<prefix>/floor/ingest/<group>/faults``, and acknowledged like a stored round: it
never blocks the subscription. The worker follows every table's retained ``anchor``
and ``state`` (not shared, small) for what each table announced, verified lazily
(:class:`flooringest.verify.Announcements`).

**Commit, then PUBACK.** paho's ``manual_ack`` (set on aiomqtt's paho client before it
connects, so that not even the session's queued messages are acknowledged early)
holds each PUBACK until the batch holding the message is committed. A worker killed
before its commit leaves its messages unacknowledged in its persistent session: the
broker sends them again when it comes back (same client id, ``clean_start`` false,
session expiry ``session_expiry_s``), and the store drops what it already has. A
database that is down holds the batch: it is retried with backoff and nothing is
acknowledged meanwhile (the broker stops sending at the client's Receive Maximum).
A broker that restarts drops the connection: the batch in hand is committed anyway;
its PUBACKs are lost with the connection, so the broker sends those messages again,
and they are duplicates.

**The live lane** (``livelane.py``): as the worker starts, and before each later
connection of the session, a second, clean connection subscribes to what is published
from then on; its rounds are committed ahead of what the broker queued for the session
(a priority queue), each acknowledged on its own connection; the session's copies of
them are duplicates.

**Shared subscription.** ``$share/<group>/<prefix>/tables/+/rounds``: the broker
hands each message to one worker of the group. One table's rounds are spread over the
workers, so sequence gaps are found in the database (``Duties.scan``), after a grace
period, not in a worker's memory. A floor with one worker may take them through a plain
subscription (``shared=False``), which a restarted mosquitto keeps for the offline
session (it drops what comes for a shared one until a member is back).

**The duties** (one worker at a time, a lease in the database): gaps found and asked
again with the table's ``replay_rounds`` (never beyond what the table announced, and
not again once the table answered it has nothing there), the anchor check, the
promotion of quarantined rounds their table has since announced, the lag and faults
topics, and the floor's signed record of each table (``<prefix>/floor/records/
<table>``, retained: what the floor holds, which the table reads and cannot write;
``notices.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import aiomqtt
import orjson
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from firmware_host.cliargs import redact_url
from firmware_host.progress import LinkWatch, Since, every
from firmware_host.sdnotify import Notifier

from . import messages as m
from .earnings import EARNINGS_TOPICS, on_message
from .gate import QuarantineGate
from .livelane import LiveLane
from .messages import RECORD_SCHEMA_VERSION, Incoming, Quarantined, Round, record_message
from .notices import FloorNotices
from .registry import Registry, RegistryError, load_file
from .settings import IngestSettings, WorkerStats
from .store import Gap, Store, StoreError, open_store
from .verify import Announcements, Verifier, replay_answer
from .wire import FAULTS_SCHEMA_VERSION, _end_tasks, _puback_all

__all__ = [
    "FAULTS_SCHEMA_VERSION",
    "RECORD_SCHEMA_VERSION",
    "IngestSettings",
    "IngestWorker",
    "WorkerStats",
    "record_message",
    "run_worker",
]

log = logging.getLogger("flooringest")

#: A round received: its connection, its message id, the message.
Received = tuple[aiomqtt.Client, int, Incoming]

#: Distinct tables counted as seen by a worker's progress line, at most (a flood of
#: forged table ids must not grow it).
TABLES_SEEN_MAX = 10000
#: How soon the worker tries the broker again after losing it, and again after each
#: failed try (the ``_mqtt`` loop's comment: why so soon).
RETRY_S = 0.05
#: How long at most between tries while the broker answers and refuses the connection.
REFUSED_MAX_S = 5.0


class IngestWorker:
    """Run with :meth:`run` until cancelled (or :meth:`stop`)."""

    def __init__(
        self,
        settings: IngestSettings,
        *,
        on_stored: Callable[[int], None] | None = None,
    ) -> None:
        self.s = settings
        self.stats = WorkerStats()
        self.store: Store | None = None
        #: The duties' own connection: a database connection runs one statement at a
        #: time, and the commits must not wait behind a scan.
        self.duty_store: Store | None = None
        #: The rounds to commit, each with its connection and message id: the live
        #: lane's (priority 0) ahead of the session's (1), each in its order.
        self._queue: asyncio.PriorityQueue[tuple[int, int, Received]] = asyncio.PriorityQueue()
        self._order = itertools.count()
        self._client: aiomqtt.Client | None = None
        self._stop = asyncio.Event()
        self._on_stored = on_stored
        self.lease_holder = False
        #: The tables the floor knows (refreshed from the database), what each
        #: announced, and the check of every round.
        self.registry = Registry()
        self._failed: list[Quarantined] = []
        self.announcements = Announcements(on_failure=self._failed.append)
        self.verifier = Verifier(self.registry, self.announcements)
        #: Replay requests this worker made: request id -> (table, from, to, sent at).
        self.requests: dict[str, tuple[str, int, int | None, float]] = {}
        self._answers: list[tuple[str, int]] = []
        #: The records, lag and faults published while holding the duties.
        self.notices = FloorNotices(settings, self.stats)
        #: Per table, the highest seq stored, as of the last duty round; since when the
        #: table announced a finished round beyond it.
        self._last_seqs: dict[str, int] = {}
        self._tails: dict[str, float] = {}
        #: Bounded logging and keeping of quarantined messages.
        self.gate = QuarantineGate(settings, self.stats)
        self.live = LiveLane(settings, self.stats, self._take_live, self._offer, self._taking,
                             self._queue.qsize)  # fmt: skip
        #: systemd's ``Type=notify``: READY=1 once rounds played are taken (:meth:`_taking`).
        self.notifier = Notifier()
        self._told_ready = False
        self._quick: list[int] = []
        self._quick_client: aiomqtt.Client | None = None
        #: The registry file as last imported (mtime, size).
        self._file_sig: tuple[int, int] | None = None
        #: Set once the shared subscription is in place (each connection).
        self.subscribed = asyncio.Event()
        #: The broker's and the database's connection lines in the log, the tables
        #: whose rounds this worker received, and the progress line's counters.
        who = f"floor-ingest {settings.worker}"
        self.broker = LinkWatch(log, who, f"broker {settings.host}:{settings.port}")
        self.database = LinkWatch(log, who, f"database {redact_url(settings.db)}")
        self.tables_seen: set[str] = set()
        self._grew = Since()

    async def _open_store(self) -> Store:
        delay = 0.1
        while True:
            try:
                store = await open_store(self.s.db)
            except StoreError as exc:
                self.database.down(str(exc))
                await asyncio.sleep(delay)
                delay = min(2.0, delay * 2)
                continue
            self.database.up()
            return store

    async def run(self) -> None:
        """Until :meth:`stop` (or cancelled): the connection, the commits and the
        duties as three tasks; one failing stops the others and its error is raised.

        Not an ``asyncio.TaskGroup``: a group cancels its tasks once, and waits for
        them however long they take; when its own task is cancelled meanwhile it does
        not cancel them again. A task can miss that one cancellation: on Python 3.11,
        ``asyncio.wait_for`` (under aiomqtt's publish, subscribe and disconnect) returns
        the result instead of raising ``CancelledError`` when what it waited for
        completed in the same turn of the event loop (CPython gh-86296, fixed in 3.12).
        The duties task was seen doing so (its only such wait is aiomqtt's publish of
        the lag or of a replay request, whose PUBACK then came as the stop did), and
        the stop waited for ever (a test's ``stop`` hung, about 1 run in 15).
        :func:`_end_tasks` cancels again whatever is still running.

        A registry file that cannot be used raises :class:`RegistryError` before
        anything is committed (or acknowledged)."""
        if self.s.live_lane:  # open while the store and the registry load (issue 36):
            self.live.start(early=True)  # what is played meanwhile is not only queued
        try:
            self.store = await self._open_store()
            self.duty_store = await self._open_store()
            if self.s.registry_file:
                await self._import_file(startup=True)
            await self._refresh_registry(force=True)
            for tid, (a, f, _n, _at) in (await self.store.tables.announced_all()).items():
                if tid in self.registry:
                    self.announcements.merge(tid, a, f)
        except BaseException:
            await self.live.close()
            for store in (self.store, self.duty_store):
                if store is not None:
                    await store.close()
            raise
        self.live.release()
        if not len(self.registry):
            log.warning(
                "floor-ingest %s: the registry knows no table: every round will be "
                "quarantined UNKNOWN_TABLE (floor-ingest registry import FILE, or run "
                "--registry FILE)",
                self.s.worker,
            )
        tasks = [
            asyncio.create_task(self._mqtt(), name="ingest-mqtt"),
            asyncio.create_task(self._commits(), name="ingest-commits"),
            asyncio.create_task(self._duties(), name="ingest-duties"),
            asyncio.create_task(
                every(self.s.progress_s, self.progress_line, log), name="ingest-progress"
            ),
        ]
        stopped = asyncio.create_task(self._stop.wait(), name="ingest-stop")
        try:
            pending: set[asyncio.Task[Any]] = {*tasks, stopped}
            while not stopped.done():
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for t in done:
                    error = None if t is stopped or t.cancelled() else t.exception()
                    if error is not None:
                        raise error
        finally:
            self.notifier.stopping()
            await _end_tasks([*tasks, stopped])
            await self.live.close()
            self.notifier.close()
            self._write_stats()
            await self.store.close()
            await self.duty_store.close()

    def stop(self) -> None:
        self._stop.set()

    def _taking(self) -> None:
        """A subscription that takes the rounds played from now on is in place (the
        live lane's, or else the session's): the worker is back, and tells systemd
        (``READY=1``, once). A round played before this reached no subscriber of the
        worker's but its session's queue, and is part of the backlog."""
        if self._told_ready:
            return
        self._told_ready = True
        how = "the live lane" if self.live.open else "the session"
        self.notifier.ready(f"taking the rounds played ({how})")
        log.info("floor-ingest %s: taking the rounds played (%s)", self.s.worker, how)

    # -- the registry ----------------------------------------------------------------------
    async def _import_file(self, *, startup: bool = False) -> None:
        """Import the registry file when it changed (at start: always; a file that
        cannot be used then raises, later it is logged and the database's kept)."""
        path = self.s.registry_file
        assert path is not None and self.duty_store is not None
        try:
            st = os.stat(path)
            sig = (st.st_mtime_ns, st.st_size)
        except OSError:
            sig = None
        if not startup and sig == self._file_sig:
            return
        self._file_sig = sig
        try:
            reg = load_file(path)
        except RegistryError as exc:
            if startup:
                raise
            for line in exc.lines:
                log.error("floor-ingest %s: registry not imported: %s", self.s.worker, line)
            return
        counts = await self.duty_store.tables.import_registry(reg)
        if counts["added"] or counts["changed"] or counts["removed"]:
            log.info(
                "floor-ingest %s: registry %s imported: %d tables (%d added, %d changed, "
                "%d removed)", self.s.worker, path, counts["tables"], counts["added"],
                counts["changed"], counts["removed"],
            )  # fmt: skip

    async def _refresh_registry(self, *, force: bool = False) -> None:
        store = self.duty_store
        assert store is not None
        digest = await store.tables.registry_digest()
        if not force and (digest == self.registry.digest or (not digest and not self.registry)):
            return  # unchanged (a database never given a registry has no digest)
        reg = await store.tables.load_registry()
        self.registry = reg
        self.verifier.registry = reg
        self.announcements.forget(reg)
        log.info("floor-ingest %s: registry of %d tables", self.s.worker, len(reg))

    # -- MQTT ---------------------------------------------------------------------------
    def _client_for(self) -> aiomqtt.Client:
        props = Properties(PacketTypes.CONNECT)  # type: ignore[no-untyped-call]
        props.SessionExpiryInterval = self.s.session_expiry_s
        props.ReceiveMaximum = self.s.receive_maximum
        client = aiomqtt.Client(
            self.s.host,
            self.s.port,
            identifier=self.s.client_id,
            username=self.s.username,
            password=self.s.password,
            protocol=aiomqtt.ProtocolVersion.V5,
            clean_start=False,
            properties=props,
            keepalive=10,
        )
        # Before it connects: the session's queued messages arrive at once.
        client._client.manual_ack_set(True)
        paho = client._client
        on_connect: Any = paho.on_connect  # aiomqtt's (set when it was made)

        def connack(*args: Any) -> None:  # (client, userdata, flags, reason, properties)
            if not getattr(args[2], "session_present", True):
                self.live.stop("the session is new: the broker queued nothing for it")
            on_connect(*args)

        paho.on_connect = connack
        return client

    async def _mqtt(self) -> None:
        root = f"{self.s.prefix}/tables/"
        n = len(root)
        first = True
        refused_wait = 0.0
        while True:
            client = self._client_for()
            connected = False
            if self.s.live_lane:  # what is published from now on, ahead of the queue
                if not (first and self.live.open):  # (the one opened at the start: kept)
                    self.live.start()
                first = False
                with contextlib.suppress(TimeoutError):  # a lane refused: no wait
                    async with asyncio.timeout(2.0):
                        await self.live.ready.wait()
            try:
                async with client:
                    connected = True
                    refused_wait = 0.0
                    self._client = client
                    self.stats.connects += 1
                    # Records published on a connection that went may not have reached
                    # the broker: the duty holder publishes them all again.
                    self.notices.records.clear()
                    await client.subscribe(self.s.subscription, qos=1)
                    # Then the other form goes, if the session switched (both: every
                    # round twice; in the other order a round between the two was lost).
                    other = (self.s.plain_subscription if self.s.shared
                             else self.s.shared_subscription)  # fmt: skip
                    await client.unsubscribe(other)
                    # Every worker follows every table's anchor and state (small,
                    # retained: what each table announced) and the answers to the
                    # ingest's replay requests.
                    await client.subscribe(f"{root}+/anchor", qos=1)
                    await client.subscribe(f"{root}+/state", qos=1)
                    await client.subscribe(f"{root}+/commands/response", qos=1)
                    for earned in EARNINGS_TOPICS:  # shifts and sessions (earnings.py)
                        await client.subscribe(f"{root}+/{earned}", qos=1)
                    self.subscribed.set()
                    self.broker.up(f"subscribed to {self.s.subscription}")
                    self._taking()
                    async for msg in client.messages:
                        topic = msg.topic.value
                        raw = msg.payload
                        payload = raw if isinstance(raw, bytes) else str(raw).encode()
                        if not topic.startswith(root):
                            self._ack_soon(client, msg.mid)
                            continue
                        table, _, kind = topic[n:].partition("/")
                        if kind == "rounds":
                            self.stats.received += 1
                            if len(self.tables_seen) < TABLES_SEEN_MAX:
                                self.tables_seen.add(table)
                            self.live.saw(table, payload)
                            item = (client, msg.mid, Incoming(table, payload, time.time()))
                            self._queue.put_nowait((1, next(self._order), item))
                            continue
                        if kind in ("anchor", "state"):
                            self._offer(table, kind, payload)
                        elif kind == "commands/response":
                            self._answer(table, payload)
                        elif kind in EARNINGS_TOPICS and self.store is not None:
                            keys = self.registry.keys(table)
                            if not await on_message(self.store, keys, table, kind, payload,
                                                    self.s.worker):  # fmt: skip
                                continue  # not committed: no PUBACK, sent again
                        self._ack_soon(client, msg.mid)
            except aiomqtt.MqttError as exc:
                task = asyncio.current_task()
                if self._stop.is_set() or (task is not None and task.cancelling()):
                    # Stopping: aiomqtt's graceful disconnect, run while the task was
                    # being cancelled, can time out and raise MqttError in place of the
                    # CancelledError; reconnecting then would keep the worker alive
                    # (a test's stop waited 30 s for it, 1 run in about 20).
                    return
                self.broker.down(str(exc) or type(exc).__name__)
                if not connected and isinstance(exc, aiomqtt.MqttCodeError):
                    # The broker answered and refused (a wrong password, the ACL):
                    # trying again 20 times a second would only fill its log.
                    refused_wait = min(REFUSED_MAX_S, max(0.5, 2 * refused_wait))
            finally:
                self._client = None
                self.subscribed.clear()
            # Back within 0.05 s of the broker (issue 36: a restarted mosquitto drops
            # what comes for a shared subscription before its worker is back, and the
            # tables try again spread over their backoff's cap: with 300 tables at a
            # 0.5 s cap, a worker back within 0.2 s still saw 1,013 rounds dropped and
            # replayed). A failed try against a broker that is away costs little.
            await asyncio.sleep(refused_wait or RETRY_S)

    def _ack_soon(self, client: aiomqtt.Client, mid: int) -> None:
        """Acknowledge a message that is not a round (nothing to commit) soon: the
        PUBACKs of one turn of the event loop in one write."""
        if self._quick and self._quick_client is not client:
            self._flush_acks()
        self._quick.append(mid)
        if len(self._quick) == 1:
            self._quick_client = client
            asyncio.get_running_loop().call_soon(self._flush_acks)

    def _flush_acks(self) -> None:
        mids, self._quick = self._quick, []
        client, self._quick_client = self._quick_client, None
        if mids and client is not None and client is self._client:
            with contextlib.suppress(Exception):  # the connection went: sent again
                _puback_all(client, mids)

    def _answer(self, table: str, raw: bytes) -> None:
        """A ``commands/response``: only an answer to a request this worker made is
        read (its id is looked for before anything is parsed or verified)."""
        if not self.requests or self.s.client_id.encode() not in raw:
            return
        try:
            rid = orjson.loads(raw).get("request_id")
        except (orjson.JSONDecodeError, AttributeError):
            return
        req = self.requests.get(rid) if isinstance(rid, str) else None
        if req is None or req[0] != table:
            return
        keys = self.registry.keys(table)
        if keys is None:
            return
        t0 = time.process_time()
        doc, bad = replay_answer(raw, table, keys, rid)
        self.stats.verify_announcements_cpu_s += time.process_time() - t0
        if bad is not None:
            self._failed.append(bad)
            return
        assert doc is not None
        del self.requests[rid]
        self.stats.answers += 1
        data = doc.get("data")
        newest = data.get("newest_seq") if isinstance(data, dict) else None
        if doc.get("status") == "ok" and isinstance(newest, int) and not isinstance(newest, bool):
            newest = max(0, newest)
            self.announcements.answered(table, newest)
            self._answers.append((table, newest))
            if newest < req[1]:
                log.warning(
                    "floor-ingest %s: table %s answers that its newest round is %d: "
                    "nothing from seq %d to ask for",
                    self.s.worker, table, newest, req[1],
                )  # fmt: skip

    # -- batches -------------------------------------------------------------------------
    async def _commits(self) -> None:
        assert self.store is not None
        while True:
            prio, _, first = await self._queue.get()
            batch = [first]
            deadline = time.monotonic() + self.s.batch_wait_s
            while len(batch) < self.s.batch_max:
                try:
                    got = self._queue.get_nowait()
                except asyncio.QueueEmpty:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    # asyncio.timeout, not wait_for: on 3.11 wait_for swallows a
                    # cancellation racing with a message's arrival (gh-86296), and the
                    # worker's stop hangs
                    try:
                        async with asyncio.timeout(left):
                            got = await self._queue.get()
                    except TimeoutError:
                        break
                if got[0] != prio:  # the lane's rounds in batches of their own, not
                    self._queue.put_nowait(got)  # filled up with the queue's (issue 36)
                    break
                batch.append(got[2])
            await self._commit(batch)

    def _take_live(self, client: aiomqtt.Client, mid: int, msg: Incoming) -> None:
        """A round of the live lane (``livelane.py``): committed ahead of the queue."""
        self.stats.received += 1
        self._queue.put_nowait((0, next(self._order), (client, mid, msg)))

    def _offer(self, table: str, kind: str, payload: bytes) -> None:
        """A table's ``anchor`` or ``state``, from either connection."""
        if table in self.registry:
            self.announcements.offer(table, kind, payload, time.time())

    async def _commit(self, batch: list[Received]) -> None:
        assert self.store is not None
        v0, a0 = self.verifier.cpu_s, self.announcements.cpu_s
        items = self.gate.keep(self.verifier.batch([msg for _, _, msg in batch]))
        self.stats.verify_rounds_cpu_s += self.verifier.cpu_s - v0
        self.stats.verify_announcements_cpu_s += self.announcements.cpu_s - a0
        delay = 0.05
        while True:
            try:
                out = await self.store.ingest(items, worker=self.s.worker)
                break
            except Exception as exc:  # StoreError, or anything a driver raises: retried
                self.stats.commit_retries += 1
                self.database.down(f"a commit failed ({exc}); the batch is held")
                await asyncio.sleep(delay)
                delay = min(2.0, delay * 2)
        self.database.up()
        if self.s.latency_log and out.stored:
            done = time.time()
            with open(self.s.latency_log, "a", encoding="utf-8") as f:
                f.write("".join(f"{r.round_id}\t{done:.6f}\n" for r in out.stored))
        self.stats.batches += 1
        self.stats.stored += len(out.stored)
        self.stats.duplicates += out.duplicates
        self.stats.conflicts += out.conflicts
        self.gate.noted(out.quarantined)
        # Committed: now, and only now, the PUBACKs, in the order the messages came, on
        # the connection each came on (the session's, or the live lane's) if it is up.
        alive = {id(c): c for c in (self._client, self.live.client) if c is not None}
        mids: dict[int, list[int]] = {}
        for client, mid, _ in batch:
            if id(client) in alive:
                mids.setdefault(id(client), []).append(mid)
        # A connection gone: the broker sends those again (duplicates).
        self.stats.acks_lost += len(batch) - sum(map(len, mids.values()))
        for cid, current in mids.items():
            try:
                _puback_all(alive[cid], current)
                self.stats.acks += len(current)
            except Exception:  # the connection went meanwhile: sent again, duplicates
                self.stats.acks_lost += len(current)
        if self._on_stored is not None:
            self._on_stored(len(out.stored))

    # -- duties ---------------------------------------------------------------------------
    async def _duties(self) -> None:
        store = self.duty_store
        assert store is not None
        last_lag = last_registry = last_stats = last_save = 0.0
        last_summary = time.monotonic()
        while True:
            await asyncio.sleep(self.s.duty_interval_s)
            try:
                now = time.monotonic()
                if now - last_stats >= 1.0:
                    last_stats = now
                    self._write_stats()
                if now - last_summary >= self.s.log_summary_s:
                    last_summary = now
                    self.gate.summary()
                if now - last_registry >= self.s.registry_refresh_s:
                    last_registry = now
                    if self.s.registry_file:
                        await self._import_file()
                    await self._refresh_registry()
                await self._flush_side(store)
                held = self.lease_holder
                self.lease_holder = await store.duties.take_lease(self.s.worker, self.s.lease_s)
                self.database.up()  # it answers (the one line after an outage)
                if not self.lease_holder:
                    continue
                if not held:  # (re)gained: everything published again
                    self.notices.again()
                    last_lag = 0.0
                await self._duty_round(store)
                if now - last_save >= self.s.announce_save_s:
                    last_save = now
                    await store.tables.save_announced(self.announcements.dirty())
                if now - last_lag >= self.s.lag_interval_s:
                    last_lag = now
                    await self.notices.publish_lag(self._client, store)
            except StoreError as exc:
                self.database.down(f"the duties failed ({exc})")
            except aiomqtt.MqttError as exc:
                log.info("floor-ingest %s: cannot publish: %s", self.s.worker, exc)
            except Exception:  # a worker must never stop over one failed duty round
                log.exception("floor-ingest %s: duties failed", self.s.worker)

    async def _flush_side(self, store: Store) -> None:
        """What every worker saves besides its batches: the anchors, states and
        answers that failed their check (quarantined), the replay answers."""
        if self._failed:
            failed, self._failed[:] = list(self._failed), []
            kept = [x for x in self.gate.keep(list(failed)) if isinstance(x, Quarantined)]
            await store.quarantine.keep(kept, self.s.worker)
            self.gate.noted(kept)
        while self._answers:
            table, newest = self._answers[0]
            await store.tables.save_answer(table, newest)
            self._answers.pop(0)
        cutoff = time.time() - 300
        for rid in [r for r, v in self.requests.items() if v[3] < cutoff]:
            del self.requests[rid]

    async def _duty_round(self, store: Store) -> None:
        # Tail gaps: the tables whose finished round announced is beyond the last stored
        # one (as of the last duty round; a new table is tracked from its first), and
        # has been for the grace period: a table's anchor comes just before its round,
        # which may be in a batch being committed.
        last = self._last_seqs
        now = time.monotonic()
        finished: dict[str, int] = {}
        for t, said in self.announcements.tables.items():
            if not said.finished or said.finished <= last.get(t, said.finished):
                self._tails.pop(t, None)
                continue
            since = self._tails.setdefault(t, now)
            if now - since >= self.s.gap_grace_s:
                finished[t] = said.finished
        paced = self.announcements.paced(self.registry.keys)  # where backlogs end (issue 36)
        gaps, _filled = await store.duties.scan(self.s.gap_grace_s, finished, paced)
        if gaps:
            announced = {t: s.announced for t, s in self.announcements.tables.items()}
            for g in await store.duties.claim_replays(gaps, self.s.replay_retry_s, announced):
                await self._ask_replay(g)
        await store.duties.verify_anchors()
        await store.partitions.ensure()  # the days ahead (once an hour)
        await self._promote(store)
        await self._recheck_chains(store)
        last = self._last_seqs = await store.last_seqs()
        self._settle_claims(last)
        await self.notices.publish_records(self._client, store, last)

    def _settle_claims(self, last: dict[str, int]) -> None:
        """Verify the anchors and states (received more than the grace ago) that claim
        a finished round beyond the table's last stored one: a tail gap, for the next
        scan. Nothing is verified for a table whose rounds keep arriving."""
        cutoff = time.time() - self.s.gap_grace_s
        t0 = time.process_time()
        for tid, said in self.announcements.tables.items():
            if not said.raw or min(at for _, at in said.raw.values()) > cutoff:
                continue
            if tid not in last:
                continue  # tracked from its first stored round
            if self.announcements.pending_claim(tid) > max(last[tid], said.finished):
                self.announcements.settle(tid, self.registry.keys(tid))
        self.stats.verify_announcements_cpu_s += time.process_time() - t0

    async def _promote(self, store: Store) -> None:
        """Quarantined rounds (``SEQ_NOT_ANNOUNCED``) their table has announced since:
        checked again from their original bytes and stored."""
        waiting = await store.quarantine.open_tables(m.SEQ_NOT_ANNOUNCED)
        if not waiting:
            return
        said = await store.tables.announced_all()
        for tid in waiting:
            if tid in said:
                self.announcements.merge(tid, said[tid][0], said[tid][1])
            keys = self.registry.keys(tid)
            if keys is not None:
                self.announcements.settle(tid, keys)
        announced = {t: self.announcements.announced(t) for t in waiting}
        for sha, tid, raw, at in await store.quarantine.announced_rounds(announced):
            item = self.verifier.round(Incoming(tid, raw, at))
            out = await store.ingest([item], worker=self.s.worker)
            fate = out.fate.get(sha, "")
            if fate in ("stored", "duplicate", "conflict"):
                await store.quarantine.release(
                    sha, "floor-ingest", f"announced by the table since; {fate} as a round"
                )
                self.stats.promoted += 1
                log.info(
                    "floor-ingest %s: round of table %s announced since: %s (%s)",
                    self.s.worker, tid, fate, sha[:12],
                )  # fmt: skip

    async def _recheck_chains(self, store: Store) -> None:
        """Quarantined rounds (``CHAIN_NOT_ADVANCING``) whose chain now lies between
        their stored neighbours': a person released the round before them (a journal
        restored, reconciled by a technician) and they continue its chain. Checked
        without a change first: a round still out of order is left as it is."""
        for sha, tid, raw, at in await store.quarantine.rounds(m.CHAIN_NOT_ADVANCING):
            item = self.verifier.round(Incoming(tid, raw, at))
            if not isinstance(item, Round) or await store.chain_ok(item) is not None:
                continue
            out = await store.ingest([item], worker=self.s.worker)
            fate = out.fate.get(sha, "")
            if fate in ("stored", "duplicate", "conflict"):
                await store.quarantine.release(
                    sha, "floor-ingest", f"its chain follows the rounds stored before it; {fate}"
                )
                self.stats.promoted += 1
                log.info(
                    "floor-ingest %s: round of table %s now follows its chain: %s (%s)",
                    self.s.worker, tid, fate, sha[:12],
                )  # fmt: skip

    async def _ask_replay(self, gap: Gap) -> None:
        client = self._client
        if client is None:
            return
        rid = f"{self.s.client_id}-{secrets.token_hex(6)}"
        body: dict[str, Any] = {
            "request_id": rid,
            "command": "replay_rounds",
            "args": {"from_seq": gap.from_seq},
        }
        if gap.to_seq is not None:
            body["args"]["to_seq"] = gap.to_seq
        if self.s.signer is not None:
            body = self.s.signer.sign("commands/request", gap.table_id, body)
        else:
            body["table_id"] = gap.table_id
        topic = f"{self.s.prefix}/tables/{gap.table_id}/commands/request"
        log.warning(
            "floor-ingest: table %s is missing seq %d..%s: asking for a replay",
            gap.table_id,
            gap.from_seq,
            "its newest" if gap.to_seq is None else gap.to_seq,
        )
        self.requests[rid] = (gap.table_id, gap.from_seq, gap.to_seq, time.time())
        await client.publish(topic, json.dumps(body), qos=1)
        self.stats.replays_asked += 1

    def progress_line(self) -> str:
        """The worker's progress in one line (``floor-ingest run --progress``)."""
        st, n = self.stats, self._grew.text
        seen = len(self.tables_seen)
        return (
            f"floor-ingest {self.s.worker}: progress: {self.broker.state()}; "
            f"{self.database.state()}; rounds received {n('received', st.received)}, stored "
            f"{n('stored', st.stored)}, duplicates {n('duplicates', st.duplicates)}, "
            f"quarantined {n('quarantined', st.quarantined)}; tables seen "
            f"{seen}{'+' if seen >= TABLES_SEEN_MAX else ''}; registry {len(self.registry)} "
            f"tables; duties {'held' if self.lease_holder else 'not held'}"
        )

    def _write_stats(self) -> None:
        path = self.s.stats_file
        if not path:
            return
        doc = {
            "worker": self.s.worker,
            "at": time.time(),
            "process_cpu_s": time.process_time(),
            "lease_holder": self.lease_holder,
            "rounds_verified": self.verifier.rounds,
            "announcements_verified": self.announcements.verified,
            **{k: v for k, v in asdict(self.stats).items() if k != "extra"},
        }
        tmp = Path(f"{path}.tmp")
        with contextlib.suppress(OSError):
            tmp.write_text(json.dumps(doc), encoding="utf-8")
            tmp.replace(path)


async def run_worker(settings: IngestSettings) -> None:
    worker = IngestWorker(settings)
    with contextlib.suppress(asyncio.CancelledError):
        await worker.run()

