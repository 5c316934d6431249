"""The link's connection to the broker: connect under the table's persistent session
(its will the retained ``state`` offline), subscribe to the request topics, receive
requests and publish (the outbox pump) on each connection, reconnect forever with
capped, jittered exponential backoff."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
import time
from collections.abc import Callable, Sequence

import aiomqtt
from paho.mqtt.client import MQTT_CLEAN_START_FIRST_ONLY
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

from ..progress import duration
from .client import _AckClient, _refusal
from .faults import LinkFaults
from .items import LinkStats, OncePerKind, TableTopics
from .outbox import OutboxJournal
from .pump import OutboxPump
from .queues import Requests, Responses
from .settings import MAX_INCOMING_QUEUED, REQUEST_TOPICS, STABLE_CONNECTION_S, MqttSettings
from .snapshots import Snapshots
from .window import Wake

log = logging.getLogger("firmware_host.mqtt")


class Connection:
    """One broker, connected again and again until ``stopping`` is set (:meth:`run`).

    On each connection the request topics are subscribed (a refused one raises
    ``SUBSCRIBE_REFUSED`` in ``faults`` and is retried with ``backoff``), incoming
    requests go to ``requests``, and the ``pump`` publishes; ``snapshots`` give the will
    and start again, as ``responses`` do, with nothing in flight. The journal's outbox
    listener is the pump's while it runs. ``connected`` and ``subscribed`` say where it
    stands; ``stats`` count it; an unexpected error is logged once per kind
    (``first_failure``)."""

    def __init__(
        self,
        settings: MqttSettings,
        *,
        client_id: str,
        topics: TableTopics,
        stats: LinkStats,
        journal: OutboxJournal,
        snapshots: Snapshots,
        responses: Responses,
        requests: Requests,
        faults: LinkFaults,
        pump: OutboxPump,
        wake: Wake,
        backoff: Callable[[int], float],
        stopping: asyncio.Event,
        first_failure: OncePerKind,
    ) -> None:
        self.settings, self.client_id, self.topics, self.stats = settings, client_id, topics, stats
        self.journal, self.snapshots, self.responses = journal, snapshots, responses
        self.requests, self.faults, self.pump, self.wake = requests, faults, pump, wake
        self._backoff, self.stopping, self._first_failure = backoff, stopping, first_failure
        self.connected = asyncio.Event()
        #: Since when (monotonic) the broker is out of reach; None while connected.
        self._down_since: float | None = None
        #: Set once the request topics are subscribed on the current connection.
        self.subscribed = asyncio.Event()

    async def run(self) -> None:
        """Connect, serve, reconnect with backoff; returns once ``stopping`` is set.

        The backoff starts again from ``reconnect_min_ms`` only after a connection
        that held for a while (:data:`STABLE_CONNECTION_S`, or ``reconnect_max_ms`` if
        shorter): a broker that accepts the connection and drops it at once is retried
        ever more slowly, never in a storm."""
        self.wake.bind()
        if self.settings.refusals != "visible":
            log.warning(
                "mqtt: MQTT %s: a publication the broker refuses cannot be detected (its "
                'PUBACK has no reason code); use protocol = "5" (docs/mqtt.md)',
                self.settings.protocol,
            )
        self.journal.add_listener(self.pump.outbox_grew)
        worker = asyncio.create_task(self.requests.serve(), name="floor-link-requests")
        stable_after = min(STABLE_CONNECTION_S, self.settings.reconnect_max_ms / 1000)
        attempt = 0
        try:
            while not self.stopping.is_set():
                up_since: float | None = None
                tried = self.pump.clock()
                try:
                    client = self.make_client()
                    async with client:
                        up_since = time.monotonic()
                        self.on_connected()
                        await self.session(client)
                except aiomqtt.MqttError as exc:
                    self.on_error(exc)
                except (OSError, ssl.SSLError) as exc:
                    self.on_error(exc)
                except Exception as exc:  # a bug: log it once per kind, never stop trying
                    if self._first_failure(f"link {type(exc).__name__}"):
                        log.exception("mqtt: unexpected error in the floor link")
                    self.on_error(exc)
                finally:
                    self.subscribed.clear()
                    if self.connected.is_set():
                        self.connected.clear()
                        self.stats.disconnects += 1
                    self.pump.count_drops()
                    if up_since is None:  # the floor was away when this try began
                        self.pump.down_at = tried
                if self.stopping.is_set():
                    break
                if up_since is not None and time.monotonic() - up_since >= stable_after:
                    attempt = 0
                delay = self._backoff(attempt)
                attempt += 1
                # the outage's line said it reconnects; one line says when it is back
                log.debug(
                    "mqtt: reconnecting to %s:%d in %.2fs",
                    self.settings.host,
                    self.settings.port,
                    delay,
                )
                # asyncio.timeout, not wait_for: on 3.11 wait_for swallows a
                # cancellation that races with the stop (gh-86296)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(delay):
                        await self.stopping.wait()
        finally:
            worker.cancel()
            with contextlib.suppress(BaseException):
                await worker
            self.journal.remove_listener(self.pump.outbox_grew)
            self.connected.clear()

    def make_client(self) -> _AckClient:
        s = self.settings
        v5 = s.protocol == "5"
        properties = None
        if v5:
            properties = Properties(PacketTypes.CONNECT)  # type: ignore[no-untyped-call]
            properties.SessionExpiryInterval = s.session_expiry
        will = aiomqtt.Will(
            self.topics.topic("state"),
            self.snapshots.state_payload("offline", reason="connection lost"),
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
            deliver=self.requests.received,
            # Without TCP_NODELAY, Nagle + delayed ACK add ~40 ms to each PUBACK round trip.
            socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
        )
        client.pending_calls_threshold = s.max_inflight + 16  # aiomqtt warns above this
        return client

    def on_connected(self) -> None:
        self.stats.connects += 1
        # Every snapshot again: a restarted broker may have lost retained messages.
        self.stats.connected_since = self.snapshots.connected()
        self.responses.connected()
        self.pump.connected()  # what was in flight on the last connection goes again
        self.connected.set()
        down, self._down_since = self._down_since, None
        after = f" again after {duration(time.monotonic() - down)} without it" if down else ""
        log.info(
            "mqtt: connected to %s:%d as %s%s",
            self.settings.host, self.settings.port, self.client_id, after,
        )  # fmt: skip

    def on_error(self, exc: BaseException) -> None:
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
        if not self.connected.is_set():
            self.stats.connect_failures += 1
        if self._down_since is None:  # an outage begins: one line (and one when it ends)
            log.warning(
                "mqtt: broker %s:%d: %s; reconnecting with backoff up to %.0f s (one line when "
                "it answers)", self.settings.host, self.settings.port, msg,
                self.settings.reconnect_max_ms / 1000,
            )  # fmt: skip
            self._down_since = time.monotonic()
        elif msg != self.stats.last_error:
            log.debug("mqtt: broker %s:%d: %s", self.settings.host, self.settings.port, msg)
        self.stats.last_error = msg

    # -- one connection --------------------------------------------------------------------
    async def session(self, client: _AckClient) -> None:
        # Subscribe, then publish: a SUBACK and a PUBACK in flight together meet Nagle's
        # algorithm on brokers without TCP_NODELAY and cost ~40 ms.
        subscribed = asyncio.Event()
        receiver = asyncio.create_task(self.receive(client, subscribed), name="floor-link-rx")
        publisher = asyncio.create_task(self.pump.serve(client, subscribed), name="floor-link-tx")
        try:
            done, _ = await asyncio.wait({receiver, publisher}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in (receiver, publisher):
                t.cancel()
            results = await asyncio.gather(receiver, publisher, return_exceptions=True)
        for t, r in zip((receiver, publisher), results, strict=True):
            if t in done and isinstance(r, Exception):
                raise r

    async def subscribe(self, client: _AckClient, topics: list[str]) -> list[str]:
        """Subscribe to ``topics`` (relative); the ones the broker refused (SUBACK
        0x80 on MQTT 3.1.1, a reason code of 0x80 or above on MQTT 5)."""
        codes: Sequence[int | ReasonCode] = await client.subscribe(
            [(self.topics.topic(t), 1) for t in topics]
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

    async def receive(self, client: _AckClient, subscribed: asyncio.Event) -> None:
        refused: list[str] = []
        if self.requests.handler is not None:
            refused = await self.subscribe(client, list(REQUEST_TOPICS))
        subscribed.set()
        retry: asyncio.Task[None] | None = None
        if refused:
            retry = asyncio.create_task(self.resubscribe(client, refused), name="floor-link-sub")
        else:
            self.subscribed.set()
        try:
            # Messages are delivered to the request queues by the client as they are
            # read; this iteration only ends (raising) when the connection is lost.
            async for _ in client.messages:
                pass
        finally:
            if retry is not None:
                retry.cancel()
                with contextlib.suppress(BaseException):
                    await retry

    async def resubscribe(self, client: _AckClient, refused: list[str]) -> None:
        """Retry refused subscriptions with backoff, on the same connection."""
        attempt = 0
        while refused:
            await asyncio.sleep(self._backoff(attempt))
            attempt += 1
            refused = await self.subscribe(client, refused)
        self.subscribed.set()


__all__ = ["Connection"]
