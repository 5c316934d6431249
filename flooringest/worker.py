"""One ingest worker: a shared subscription to every table's ``rounds``, batches
committed before they are acknowledged, and (while it holds the lease) the duties.

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

**Shared subscription.** ``$share/<group>/<prefix>/tables/+/rounds``: the broker
hands each message to one worker of the group. One table's rounds are spread over the
workers, so sequence gaps are found in the database (``Store.scan``), after a grace
period, not in a worker's memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiomqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from .store import Gap, Incoming, Store, StoreError, open_store

log = logging.getLogger("flooringest")


@dataclass
class IngestSettings:
    host: str = "127.0.0.1"
    port: int = 1883
    username: str | None = None
    password: str | None = None
    prefix: str = "casino"
    #: The shared subscription's group: the workers that split the load.
    group: str = "floor-ingest"
    #: This worker's name: its MQTT client id is ``<group>-<worker>`` (a restarted
    #: worker must keep it, to get its session's unacknowledged messages back).
    worker: str = "w1"
    db: str = "floor.sqlite3"
    #: The most messages in one transaction, and how long the first waits for more.
    batch_max: int = 200
    batch_wait_s: float = 0.005
    #: MQTT 5 Receive Maximum: unacknowledged messages the broker may send at once.
    receive_maximum: int = 1000
    session_expiry_s: int = 7 * 24 * 3600
    #: The duties: how often, the lease, the grace before a gap is repaired, how often
    #: a replay is asked again, how often the lag is published.
    duty_interval_s: float = 0.5
    lease_s: float = 5.0
    gap_grace_s: float = 2.0
    replay_retry_s: float = 10.0
    lag_interval_s: float = 2.0
    #: Signs replay requests (None: unsigned, for tables with ``signatures = false``).
    signer: Any = None
    #: A file to append ``round_id <tab> commit time`` to after each commit (the
    #: benchmark's publish -> committed latency; time.time(), after COMMIT returned).
    latency_log: str | None = None

    @property
    def client_id(self) -> str:
        return f"{self.group}-{self.worker}"

    @property
    def subscription(self) -> str:
        return f"$share/{self.group}/{self.prefix}/tables/+/rounds"

    @property
    def lag_topic(self) -> str:
        return f"{self.prefix}/floor/ingest/{self.group}/lag"


@dataclass
class WorkerStats:
    received: int = 0
    stored: int = 0
    duplicates: int = 0
    conflicts: int = 0
    rejects: int = 0
    batches: int = 0
    commit_retries: int = 0
    acks: int = 0
    acks_lost: int = 0
    connects: int = 0
    replays_asked: int = 0
    duty_rounds: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


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
        self._queue: asyncio.Queue[tuple[aiomqtt.Client, int, Incoming]] = asyncio.Queue()
        self._client: aiomqtt.Client | None = None
        self._stop = asyncio.Event()
        self._on_stored = on_stored
        self.lease_holder = False
        #: Per table, the last finished round its retained ``state`` names (a tail
        #: gap when it is not stored: ``Store.scan``).
        self.announced: dict[str, str] = {}
        #: Set once the shared subscription is in place (each connection).
        self.subscribed = asyncio.Event()

    async def _open_store(self) -> Store:
        delay = 0.1
        while True:
            try:
                return await open_store(self.s.db)
            except StoreError as exc:
                log.warning("floor-ingest %s: database not ready: %s", self.s.worker, exc)
                await asyncio.sleep(delay)
                delay = min(2.0, delay * 2)

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
        :func:`_end_tasks` cancels again whatever is still running."""
        self.store = await self._open_store()
        self.duty_store = await self._open_store()
        tasks = [
            asyncio.create_task(self._mqtt(), name="ingest-mqtt"),
            asyncio.create_task(self._commits(), name="ingest-commits"),
            asyncio.create_task(self._duties(), name="ingest-duties"),
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
            await _end_tasks([*tasks, stopped])
            await self.store.close()
            await self.duty_store.close()

    def stop(self) -> None:
        self._stop.set()

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
        return client

    async def _mqtt(self) -> None:
        delay = 0.1
        root = f"{self.s.prefix}/tables/"
        while True:
            client = self._client_for()
            try:
                async with client:
                    self._client = client
                    self.stats.connects += 1
                    delay = 0.1
                    await client.subscribe(self.s.subscription, qos=1)
                    # Every worker follows every table's state (small, retained): the
                    # duty holder, whichever it is, knows each table's last round.
                    await client.subscribe(f"{root}+/state", qos=1)
                    self.subscribed.set()
                    async for m in client.messages:
                        topic = m.topic.value
                        table = topic[len(root) : -len("/rounds")] if topic.startswith(root) else ""
                        raw = m.payload
                        payload = raw if isinstance(raw, bytes) else str(raw).encode()
                        if topic.endswith("/state"):
                            self._state(topic[len(root) : -len("/state")], payload)
                            client._client.ack(m.mid, 1)
                            continue
                        self.stats.received += 1
                        await self._queue.put(
                            (client, m.mid, Incoming(table, payload, time.time()))
                        )
            except aiomqtt.MqttError as exc:
                task = asyncio.current_task()
                if self._stop.is_set() or (task is not None and task.cancelling()):
                    # Stopping: aiomqtt's graceful disconnect, run while the task was
                    # being cancelled, can time out and raise MqttError in place of the
                    # CancelledError; reconnecting then would keep the worker alive
                    # (a test's stop waited 30 s for it, 1 run in about 20).
                    return
                log.info("floor-ingest %s: broker connection lost: %s", self.s.worker, exc)
            finally:
                self._client = None
                self.subscribed.clear()
            await asyncio.sleep(delay)
            delay = min(2.0, delay * 2)

    def _state(self, table: str, payload: bytes) -> None:
        try:
            doc = json.loads(payload)
        except ValueError:
            return
        if not isinstance(doc, dict):
            return
        last = doc.get("last_round_id")
        if doc.get("phase") == "idle" and isinstance(last, str) and last:
            self.announced[table] = last

    # -- batches -------------------------------------------------------------------------
    async def _commits(self) -> None:
        assert self.store is not None
        while True:
            first = await self._queue.get()
            batch = [first]
            deadline = time.monotonic() + self.s.batch_wait_s
            while len(batch) < self.s.batch_max:
                try:
                    batch.append(self._queue.get_nowait())
                    continue
                except asyncio.QueueEmpty:
                    pass
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                try:
                    batch.append(await asyncio.wait_for(self._queue.get(), left))
                except TimeoutError:
                    break
            await self._commit(batch)

    async def _commit(self, batch: list[tuple[aiomqtt.Client, int, Incoming]]) -> None:
        assert self.store is not None
        delay = 0.05
        while True:
            try:
                out = await self.store.ingest(
                    [m for _, _, m in batch], topic="rounds", worker=self.s.worker
                )
                break
            except Exception as exc:  # StoreError, or anything a driver raises: retried
                self.stats.commit_retries += 1
                log.warning("floor-ingest %s: commit failed, retrying: %s", self.s.worker, exc)
                await asyncio.sleep(delay)
                delay = min(2.0, delay * 2)
        if self.s.latency_log and out.stored:
            done = time.time()
            with open(self.s.latency_log, "a", encoding="utf-8") as f:
                f.write("".join(f"{r.round_id}\t{done:.6f}\n" for r in out.stored))
        self.stats.batches += 1
        self.stats.stored += len(out.stored)
        self.stats.duplicates += out.duplicates
        self.stats.conflicts += out.conflicts
        self.stats.rejects += out.rejects
        # Committed: now, and only now, the PUBACKs, in the order the messages came.
        current = [mid for client, mid, _ in batch if client is self._client]
        # That connection is gone: the broker sends those again (duplicates).
        self.stats.acks_lost += len(batch) - len(current)
        if current:
            assert self._client is not None
            try:
                _puback_all(self._client, current)
                self.stats.acks += len(current)
            except Exception:  # the connection went meanwhile: sent again, duplicates
                self.stats.acks_lost += len(current)
        if self._on_stored is not None:
            self._on_stored(len(out.stored))

    # -- duties ---------------------------------------------------------------------------
    async def _duties(self) -> None:
        store = self.duty_store
        assert store is not None
        last_lag = 0.0
        while True:
            await asyncio.sleep(self.s.duty_interval_s)
            try:
                self.lease_holder = await store.take_lease(self.s.worker, self.s.lease_s)
                if not self.lease_holder:
                    continue
                gaps, _filled = await store.scan(self.s.gap_grace_s, dict(self.announced))
                if gaps:
                    for g in await store.claim_replays(gaps, self.s.replay_retry_s):
                        await self._ask_replay(g)
                await store.verify_anchors()
                self.stats.duty_rounds += 1
                if time.monotonic() - last_lag >= self.s.lag_interval_s:
                    last_lag = time.monotonic()
                    await self._publish_lag()
            except StoreError as exc:
                log.warning("floor-ingest %s: duties failed: %s", self.s.worker, exc)
            except aiomqtt.MqttError as exc:
                log.info("floor-ingest %s: cannot publish: %s", self.s.worker, exc)
            except Exception:  # a worker must never stop over one failed duty round
                log.exception("floor-ingest %s: duties failed", self.s.worker)

    async def _ask_replay(self, gap: Gap) -> None:
        client = self._client
        if client is None:
            return
        body: dict[str, Any] = {
            "request_id": f"{self.s.client_id}-{secrets.token_hex(6)}",
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
        await client.publish(topic, json.dumps(body), qos=1)
        self.stats.replays_asked += 1

    async def _publish_lag(self) -> None:
        assert self.duty_store is not None
        client = self._client
        if client is None:
            return
        lag = await self.duty_store.lag()
        lag["group"] = self.s.group
        lag["published_by"] = self.s.worker
        await client.publish(self.s.lag_topic, json.dumps(lag), qos=1, retain=True)


async def _end_tasks(tasks: list[asyncio.Task[Any]], every_s: float = 0.5) -> None:
    """Cancel ``tasks`` and return once every one has ended, cancelling again every
    ``every_s`` those still running (one that swallowed its cancellation, :meth:`run`).
    A cancellation of the caller meanwhile does not cut this short (the tasks would be
    left running): it is raised once they have ended."""
    cancelled: asyncio.CancelledError | None = None
    pending = {t for t in tasks if not t.done()}
    while pending:
        for t in pending:
            t.cancel()
        try:
            _, pending = await asyncio.wait(pending, timeout=every_s)
        except asyncio.CancelledError as exc:
            cancelled = exc
            pending = {t for t in pending if not t.done()}
    for t in tasks:  # retrieved: no "exception was never retrieved" for those ended
        if not t.cancelled():
            t.exception()
    if cancelled is not None:
        raise cancelled


_PUBACK = 0x40


def _puback_all(client: aiomqtt.Client, mids: list[int]) -> None:
    """PUBACK each of ``mids``, in order, in ONE write to the socket.

    paho's ``ack`` queues one 4-byte packet per message and writes each with its own
    ``send``: at a thousand rounds a second those sends were the worker's largest cost
    (a profile: 37,000 sends, 5.7 s of 18 s of CPU in 20 s). A PUBACK of a QoS 1
    message with reason Success and no properties is the same 4 bytes in MQTT 3.1.1
    and 5 (fixed header 0x40, remaining length 2, packet id: MQTT 5 section 3.4.2.1,
    a Remaining Length of 2 means Success), so the batch's PUBACKs are joined and
    queued as one write, through the same queue paho's ``ack`` uses (in order, after
    what is queued already). Where paho lacks that queue (another version), each is
    acknowledged with ``ack``."""
    paho = client._client
    queue = getattr(paho, "_packet_queue", None)
    if queue is None or not getattr(paho, "_manual_ack", False):
        for mid in mids:
            paho.ack(mid, 1)
        return
    packet = b"".join(struct.pack("!BBH", _PUBACK, 2, mid) for mid in mids)
    queue(_PUBACK, packet, 0, 1)


async def run_worker(settings: IngestSettings) -> None:
    worker = IngestWorker(settings)
    with contextlib.suppress(asyncio.CancelledError):
        await worker.run()
