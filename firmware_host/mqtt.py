"""The table's link to the casino floor over MQTT: the only module importing aiomqtt.

:class:`FloorLink` implements the contract in ``docs/mqtt.md``:

- Topics live under ``<prefix>/tables/<table_id>/``; a published topic with a
  wildcard or an empty level is refused (:class:`TopicError`).
- One persistent session under a stable client id (``clean_session=False`` on
  MQTT 3.1.1; clean start off and a session expiry on MQTT 5), so the broker keeps
  our subscriptions and queues requests while we are away.
- Availability: the last will is a retained ``state`` saying ``offline``; on every
  connect a retained ``state`` ``online`` is published, and on a clean shutdown a
  retained ``offline`` before DISCONNECT (which cancels the will).
- Snapshots (``state``, ``devices/<name>``, ``jackpot``) are retained and held in
  memory: only the latest value matters, each is republished after every
  reconnect, and a burst of updates costs one publication.
- Rounds and lifecycle events come from the journal's outbox, drained IN ID ORDER
  with QoS 1. An entry is marked published only after its PUBACK, so a broker or
  network failure loses nothing: unacknowledged entries are sent again after the
  reconnect, and a duplicate is always the same bytes under the same ``round_id``.
  Up to ``max_inflight`` entries are in flight at once; the publisher is woken by
  the journal whenever a commit adds outbox entries, and the round engine never
  waits for it.
- Requests on ``bets/request`` and ``commands/request`` are handed, one at a time
  in arrival order, to the daemon's handler (retained and empty messages are not
  requests and are ignored) ``(topic, payload) -> response``; a
  returned response is published on the matching ``.../response`` topic (QoS 1,
  not retained). Responses are NOT journaled: they go through a bounded in-memory
  queue that survives reconnects but not a restart. A requester that gets no
  answer re-sends with the same id; bets are idempotent by ``bet_id``.
- Reconnects forever with capped, jittered exponential backoff while the table
  keeps playing and journaling.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import os
import random
import socket
import ssl
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import aiomqtt
from paho.mqtt.client import MQTT_CLEAN_START_FIRST_ONLY
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from . import __version__
from .config import FieldSpec, register_section, validate_fields
from .journal import Journal, OutboxEntry
from .jsonio import JSON, dumps
from .latency import Latency
from .schemas import PAYLOAD_SCHEMA_VERSION, response
from .timefmt import iso_utc, utc_now
from .topics import TopicError, check_topic

log = logging.getLogger(__name__)

#: Request topics (relative to the table root) and the response topic of each.
REQUEST_TOPICS: dict[str, str] = {
    "bets/request": "bets/response",
    "commands/request": "commands/response",
}
#: What a request handler may return: a JSON object, raw bytes/str, or None (no response).
Response = Mapping[str, JSON] | bytes | str | None
Handler = Callable[[str, bytes], "Awaitable[Response] | Response"]

MAX_RESPONSES_QUEUED = 10_000
MAX_INCOMING_QUEUED = 10_000


# ---------------------------------------------------------------------------
# configuration


def _file_check(value: str) -> str | None:
    if value and not os.path.isfile(value):
        return f"{value!r} is not a readable file"
    return None


def _prefix_check(value: str) -> str | None:
    try:
        check_topic(value)
    except TopicError as exc:
        return f"not a usable topic prefix: {exc}"
    return None


MQTT_SPECS: dict[str, FieldSpec] = {
    "host": FieldSpec("str", "127.0.0.1", doc="broker host name or address"),
    "port": FieldSpec("int", 1883, doc="broker port (8883 is usual for TLS)", range=(1, 65535)),
    "prefix": FieldSpec(
        "str", "casino", doc="topic prefix: <prefix>/tables/<table_id>/...", check=_prefix_check
    ),
    "client_id": FieldSpec(
        "str", "", doc="MQTT client id (default tablectl-<table_id>); keep it stable"
    ),
    "username": FieldSpec("str", "", doc="MQTT user name (empty: anonymous)"),
    "password_file": FieldSpec("str", "", doc="file holding the MQTT password", check=_file_check),
    "tls": FieldSpec("bool", False, doc="connect over TLS"),
    "tls_ca": FieldSpec(
        "str", "", doc="CA bundle to verify the broker (default: system CAs)", check=_file_check
    ),
    "tls_cert": FieldSpec(
        "str", "", doc="client certificate (PEM) for mutual TLS", check=_file_check
    ),
    "tls_key": FieldSpec(
        "str", "", doc="client private key (PEM) for mutual TLS", check=_file_check
    ),
    "tls_insecure": FieldSpec(
        "bool", False, doc="skip broker certificate verification (tests only)"
    ),
    "keepalive": FieldSpec("int", 30, doc="keepalive interval, seconds", range=(5, 3600)),
    "protocol": FieldSpec("str", "3.1.1", doc="MQTT protocol version", choices=("3.1.1", "5")),
    "session_expiry": FieldSpec(
        "int",
        7 * 24 * 3600,
        doc="MQTT 5 session expiry, seconds (how long the broker keeps our session)",
        range=(0, 2**32 - 1),
    ),
    "reconnect_min_ms": FieldSpec("int", 250, doc="first reconnect delay, ms", range=(10, 600_000)),
    "reconnect_max_ms": FieldSpec(
        "int", 30_000, doc="reconnect delay cap, ms", range=(10, 3_600_000)
    ),
    "max_inflight": FieldSpec(
        "int",
        1,
        doc="QoS 1 publications awaiting PUBACK at once; above 1 only helps with a broker that "
        "sets TCP_NODELAY (mosquitto: set_tcp_nodelay true), else Nagle adds ~40 ms per batch",
        range=(1, 1000),
    ),
    "connect_timeout_ms": FieldSpec(
        "int",
        5_000,
        doc="CONNACK and SUBACK wait before giving up the attempt, ms",
        range=(100, 600_000),
    ),
    "publish_timeout_ms": FieldSpec(
        "int", 10_000, doc="PUBACK wait before reconnecting, ms", range=(100, 600_000)
    ),
    "shutdown_drain_ms": FieldSpec(
        "int",
        2_000,
        doc="on clean shutdown, time allowed to drain the outbox before going offline, ms",
        range=(0, 600_000),
    ),
}


@dataclass(frozen=True, slots=True)
class MqttSettings:
    host: str = "127.0.0.1"
    port: int = 1883
    prefix: str = "casino"
    client_id: str = ""
    username: str = ""
    password_file: str = ""
    tls: bool = False
    tls_ca: str = ""
    tls_cert: str = ""
    tls_key: str = ""
    tls_insecure: bool = False
    keepalive: int = 30
    protocol: str = "3.1.1"
    session_expiry: int = 7 * 24 * 3600
    reconnect_min_ms: int = 250
    reconnect_max_ms: int = 30_000
    max_inflight: int = 1
    connect_timeout_ms: int = 5_000
    publish_timeout_ms: int = 10_000
    shutdown_drain_ms: int = 2_000
    #: Password given directly (tests, ``--broker mqtt://user:pass@host``); wins over password_file.
    password: str | None = field(default=None, repr=False)

    @staticmethod
    def from_url(url: str, **overrides: Any) -> MqttSettings:
        """``mqtt://[user[:pass]@]host[:port]`` or ``mqtts://...`` (TLS) -> settings."""
        scheme, sep, rest = url.partition("://")
        if not sep:
            scheme, rest = "mqtt", url
        if scheme not in ("mqtt", "mqtts", "tcp", "ssl"):
            raise ValueError(f"unsupported broker URL scheme {scheme!r} (mqtt:// or mqtts://)")
        tls = scheme in ("mqtts", "ssl")
        user = password = None
        if "@" in rest:
            cred, rest = rest.rsplit("@", 1)
            user, _, pw = cred.partition(":")
            password = pw or None
        rest = rest.rstrip("/")
        if rest.startswith("["):  # [ipv6]:port
            host, _, tail = rest[1:].partition("]")
            port = tail.lstrip(":")
        else:
            host, _, port = rest.partition(":")
        kw: dict[str, Any] = {
            "host": host,
            "port": int(port) if port else (8883 if tls else 1883),
            "tls": tls,
        }
        if user:
            kw["username"] = user
        if password is not None:
            kw["password"] = password
        kw.update(overrides)
        return MqttSettings(**kw)

    def read_password(self) -> str | None:
        if self.password is not None:
            return self.password
        if self.password_file:
            with open(self.password_file, encoding="utf-8") as f:
                return f.read().rstrip("\r\n")
        return None

    def tls_context(self) -> ssl.SSLContext | None:
        if not self.tls:
            return None
        ctx = ssl.create_default_context(cafile=self.tls_ca or None)
        if self.tls_cert:
            ctx.load_cert_chain(self.tls_cert, self.tls_key or None)
        if self.tls_insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        return ctx


def _validate_section(data: Any, path: str, errors: list[str]) -> MqttSettings | None:
    n = len(errors)
    vals = validate_fields(MQTT_SPECS, data, path, errors)
    if len(errors) > n:
        return None
    for key in ("tls_ca", "tls_cert", "tls_key", "tls_insecure"):
        if vals[key] and not vals["tls"]:
            errors.append(f"{path}.{key}: set, but tls = false (add tls = true or remove it)")
    if bool(vals["tls_cert"]) != bool(vals["tls_key"]):
        errors.append(
            f"{path}.tls_cert/tls_key: a client certificate needs both the certificate and its key"
        )
    if vals["password_file"] and not vals["username"]:
        errors.append(f"{path}.password_file: a password needs a username")
    if vals["reconnect_min_ms"] > vals["reconnect_max_ms"]:
        errors.append(
            f"{path}.reconnect_min_ms: {vals['reconnect_min_ms']} is above reconnect_max_ms"
        )
    if vals["client_id"]:
        err = _prefix_check(vals["client_id"])
        if err or "/" in vals["client_id"]:
            errors.append(f"{path}.client_id: letters, digits, '-', '_', '.' only")
    if len(errors) > n:
        return None
    return MqttSettings(**vals)


register_section("mqtt", _validate_section)


# ---------------------------------------------------------------------------
# the link


@dataclass(frozen=True, slots=True)
class _Item:
    kind: Literal["snapshot", "response", "outbox"]
    topic: str  # relative to the root
    payload: bytes
    qos: int
    retain: bool
    ref: Any  # snapshot: (suffix, version); response: key; outbox: entry id


@dataclass
class LinkStats:
    connects: int = 0
    connect_failures: int = 0
    disconnects: int = 0
    published: int = 0
    outbox_published: int = 0
    requests: int = 0
    handler_errors: int = 0
    responses_dropped: int = 0
    last_error: str = ""
    connected_since: str | None = None
    puback: Latency = field(default_factory=Latency)


class FloorLink:
    """The MQTT side of one table (see the module docstring).

    Use as ``async with FloorLink(...) as link:`` or ``task = link.start()`` then
    ``await link.stop()``. All methods are called from the event loop's thread,
    except :meth:`notify`, which is safe from any thread.
    """

    def __init__(
        self,
        settings: MqttSettings,
        table_id: str,
        journal: Journal,
        *,
        handler: Handler | None = None,
        software_version: str = __version__,
        clock: Callable[[], datetime] = utc_now,
        rng: random.Random | None = None,
    ) -> None:
        self.settings = settings
        self.table_id = table_id
        self.journal = journal
        self.handler = handler
        self.software_version = software_version
        self.root = check_topic(f"{settings.prefix}/tables/{table_id}")
        self.client_id = settings.client_id or f"tablectl-{table_id}"
        self.stats = LinkStats()
        self._clock = clock
        self._rng = rng or random.Random()
        self._state: dict[str, JSON] = {}
        # suffix -> (version, payload); snapshots published are remembered by version.
        self._snapshots: dict[str, tuple[int, Mapping[str, JSON]]] = {}
        self._snap_sent: dict[str, int] = {}
        self._version = 0
        self._responses: OrderedDict[int, tuple[str, bytes]] = OrderedDict()
        self._response_seq = 0
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

    def set_state(self, **fields: JSON) -> None:
        """Update the retained ``state`` snapshot (game, phase, round_id, faults...).

        ``schema_version``, ``table_id``, ``availability``, ``software_version``,
        ``since`` and ``updated_at`` are filled in by the link.
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
        if isinstance(payload, bytes):
            body = payload
        elif isinstance(payload, str):
            body = payload.encode("utf-8")
        elif isinstance(payload, Mapping):
            body = dumps(dict(payload)).encode("utf-8")
        else:
            raise TypeError(
                f"a response must be a mapping, bytes or str, got {type(payload).__name__}"
            )
        while len(self._responses) >= MAX_RESPONSES_QUEUED:
            self._responses.popitem(last=False)
            self.stats.responses_dropped += 1
        self._response_seq += 1
        self._responses[self._response_seq] = (response_topic, body)
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
        return {
            "broker": f"{self.settings.host}:{self.settings.port}",
            "client_id": self.client_id,
            "root": self.root,
            "connected": self.connected,
            "connected_since": s.connected_since,
            "connects": s.connects,
            "connect_failures": s.connect_failures,
            "disconnects": s.disconnects,
            "published": s.published,
            "outbox_published": s.outbox_published,
            "outbox_pending": self.journal.outbox_pending_count(),
            "responses_queued": len(self._responses),
            "responses_dropped": s.responses_dropped,
            "requests": s.requests,
            "handler_errors": s.handler_errors,
            "puback_latency": s.puback.summary(),
            "last_error": s.last_error,
        }

    # -- lifecycle ---------------------------------------------------------------------
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
        """Connect, serve, reconnect with backoff; returns after :meth:`stop`."""
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self.journal.add_outbox_listener(self.notify)
        attempt = 0
        try:
            while not self._stop.is_set():
                try:
                    client = self._make_client()
                    async with client:
                        attempt = 0
                        self._on_connected()
                        await self._session(client)
                except aiomqtt.MqttError as exc:
                    self._on_error(exc)
                except (OSError, ssl.SSLError) as exc:
                    self._on_error(exc)
                except Exception as exc:  # a bug or a journal error: log it, never stop trying
                    log.exception("mqtt: unexpected error in the floor link")
                    self._on_error(exc)
                finally:
                    self._subscribed.clear()
                    if self._connected.is_set():
                        self._connected.clear()
                        self.stats.disconnects += 1
                if self._stop.is_set():
                    break
                delay = self._backoff(attempt)
                attempt += 1
                log.info("mqtt: reconnecting in %.2fs", delay)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), delay)
        finally:
            self.journal.remove_outbox_listener(self.notify)
            self._connected.clear()

    def _backoff(self, attempt: int) -> float:
        """Capped exponential backoff with jitter in [50%, 100%] of the step."""
        lo, hi = self.settings.reconnect_min_ms / 1000, self.settings.reconnect_max_ms / 1000
        step = min(hi, lo * float(1 << min(attempt, 30)))
        return step * (0.5 + 0.5 * self._rng.random())

    def _on_connected(self) -> None:
        self.stats.connects += 1
        now = iso_utc(self._clock())
        self.stats.connected_since = now
        self._online_since = now
        self._snap_sent.clear()  # a restarted broker may have lost retained messages
        self._connected.set()
        log.info(
            "mqtt: connected to %s:%d as %s", self.settings.host, self.settings.port, self.client_id
        )

    def _on_error(self, exc: BaseException) -> None:
        msg = f"{type(exc).__name__}: {exc}"
        if not self._connected.is_set():
            self.stats.connect_failures += 1
        if msg != self.stats.last_error:
            log.warning("mqtt: %s", msg)
        self.stats.last_error = msg

    def _make_client(self) -> aiomqtt.Client:
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
        client = aiomqtt.Client(
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
            # Without TCP_NODELAY, Nagle + delayed ACK add ~40 ms to each PUBACK round trip.
            socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
        )
        client.pending_calls_threshold = s.max_inflight + 16  # aiomqtt warns above this
        return client

    def _state_payload(self, availability: str, *, reason: str | None = None) -> bytes:
        now = iso_utc(self._clock())
        body: dict[str, JSON] = {
            "schema_version": PAYLOAD_SCHEMA_VERSION,
            "table_id": self.table_id,
            "availability": availability,
            "software_version": self.software_version,
        }
        body.update({k: v for k, v in self._state.items() if k not in body})
        body["since"] = (
            self._online_since if availability == "online" and self._online_since else now
        )
        body["updated_at"] = now
        if reason:
            body["reason"] = reason
        return dumps(body).encode("utf-8")

    # -- one connection ------------------------------------------------------------------
    async def _session(self, client: aiomqtt.Client) -> None:
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

    async def _receive(self, client: aiomqtt.Client, subscribed: asyncio.Event) -> None:
        if self.handler is not None:
            await client.subscribe([(self.topic(t), 1) for t in REQUEST_TOPICS])
        subscribed.set()
        self._subscribed.set()
        async for message in client.messages:
            rel = self._relative(message.topic.value)
            if rel not in REQUEST_TOPICS:
                continue
            if message.retain:
                log.warning("mqtt: ignoring a retained request on %s (requests must be live)", rel)
                continue
            raw = message.payload
            payload = bytes(raw) if isinstance(raw, bytes | bytearray) else str(raw or "").encode()
            if not payload:
                continue  # an empty message only clears a retained one: not a request
            await self._dispatch(rel, payload)

    async def _dispatch(self, rel: str, payload: bytes) -> None:
        self.stats.requests += 1
        assert self.handler is not None
        try:
            result = self.handler(rel, payload)
            if inspect.isawaitable(result):
                result = await result
        except Exception as exc:  # a bad request must never stop the link
            self.stats.handler_errors += 1
            log.exception("mqtt: request handler failed on %s", rel)
            result = self._internal_error(rel, payload, exc)
        try:
            self.respond(rel, result)
        except TypeError:
            self.stats.handler_errors += 1
            log.exception("mqtt: request handler returned an unpublishable response on %s", rel)

    def _internal_error(self, rel: str, payload: bytes, exc: Exception) -> dict[str, JSON]:
        """The answer when the handler itself fails (it should answer every request itself)."""
        request_id = None
        with contextlib.suppress(Exception):
            doc = json.loads(payload)
            if isinstance(doc, dict) and isinstance(doc.get("request_id"), str):
                request_id = doc["request_id"]
        return response(
            self.table_id,
            request_id,
            "rejected" if rel == "bets/request" else "error",
            code="INTERNAL_ERROR",
            message=f"internal error: {type(exc).__name__}",
        )

    async def _publish_loop(self, client: aiomqtt.Client, subscribed: asyncio.Event) -> None:
        await subscribed.wait()
        version = self._snapshots.get("state", (0, {}))[0]
        online = self._state_payload("online")
        await self._publish(client, _Item("snapshot", "state", online, 1, True, ("state", version)))
        drain_deadline: float | None = None
        while True:
            if self._stop.is_set():
                if drain_deadline is None:
                    drain_deadline = time.monotonic() + self.settings.shutdown_drain_ms / 1000
                if time.monotonic() >= drain_deadline:
                    break
            batch = self._next_batch()
            if not batch:
                if self._stop.is_set():
                    break
                self._wake.clear()
                batch = self._next_batch()  # anything that arrived before the clear
                if not batch:
                    self._idle.set()
                    with contextlib.suppress(TimeoutError):
                        # The poll is a safety net only: commits wake us through the listener.
                        await asyncio.wait_for(self._wake.wait(), 5.0)
                    continue
            results = await asyncio.gather(
                *(self._publish(client, it) for it in batch), return_exceptions=True
            )
            for r in results:
                if isinstance(r, BaseException):
                    raise r
        # Goodbye: retained offline, then DISCONNECT (on leaving ``async with``) cancels the will.
        offline = self._state_payload("offline", reason="shutdown")
        await self._publish(client, _Item("snapshot", "state", offline, 1, True, None))
        log.info("mqtt: table marked offline (clean shutdown)")

    def _has_work(self) -> bool:
        if self._responses or self.journal.outbox_pending_count():
            return True
        return any(self._snap_sent.get(k) != v for k, (v, _) in self._snapshots.items())

    def _next_batch(self) -> list[_Item]:
        """What to publish next. On a new connection the ``state`` snapshot goes first
        (availability before anything else); after that the journal's outbox (settled
        rounds, lifecycle events) goes before snapshots, which only need their latest
        value, and responses come last: neither a burst of snapshot updates nor a
        stream of requests may hold back the table's own output."""
        room = self.settings.max_inflight
        snapshots: list[_Item] = []
        for suffix, (version, body) in list(self._snapshots.items()):
            if self._snap_sent.get(suffix) == version:
                continue
            if suffix == "state":
                payload = self._state_payload("online")
            else:
                payload = dumps(body).encode("utf-8")
            snapshots.append(_Item("snapshot", suffix, payload, 1, True, (suffix, version)))
        announced = "state" in self._snap_sent or "state" not in self._snapshots
        batch: list[_Item] = [] if announced else snapshots
        if len(batch) < room:
            for e in self.journal.outbox_pending(room - len(batch)):
                batch.append(self._outbox_item(e))
        if announced and len(batch) < room:
            batch.extend(snapshots[: room - len(batch)])
        for key, (topic, raw) in list(self._responses.items())[: max(0, room - len(batch))]:
            batch.append(_Item("response", topic, raw, 1, False, key))
        return batch

    @staticmethod
    def _outbox_item(e: OutboxEntry) -> _Item:
        return _Item("outbox", e.topic, e.payload, e.qos, e.retain, e.id)

    async def _publish(self, client: aiomqtt.Client, item: _Item) -> None:
        topic = self.topic(item.topic)
        t0 = time.perf_counter()
        try:
            await client.publish(
                topic,
                item.payload,
                qos=item.qos,
                retain=item.retain,
                timeout=self.settings.publish_timeout_ms / 1000,
            )
        except (ValueError, TypeError) as exc:
            # Unpublishable (e.g. a payload too large): never let it block the queue.
            log.error("mqtt: dropping unpublishable %s message on %s: %s", item.kind, topic, exc)
        self.stats.puback.add(time.perf_counter() - t0)
        self.stats.published += 1
        if item.kind == "outbox":
            self.journal.outbox_mark_published(item.ref)
            self.stats.outbox_published += 1
        elif item.kind == "response":
            self._responses.pop(item.ref, None)
        elif item.ref is not None:
            suffix, version = item.ref
            self._snap_sent[suffix] = version


# ---------------------------------------------------------------------------
# the table's own retained messages, read once at start-up


class BrokerUnreachable(ConnectionError):
    """The broker could not be reached (or refused us) while reading retained messages."""


async def read_retained(
    settings: MqttSettings,
    table_id: str,
    suffixes: tuple[str, ...],
    *,
    quiet: float = 0.5,
) -> dict[str, bytes]:
    """The table's own retained messages on ``suffixes`` (relative to its root), read
    once, before the floor link publishes anything (the daemon compares its journal with
    them at start-up: ``firmware_host/table/floorcheck.py``).

    A separate connection with a clean session under ``<client_id>-check``, so the
    link's persistent session is not touched. After the SUBACK it waits until every
    suffix has arrived, or until ``quiet`` seconds pass without one (a suffix the broker
    holds nothing for is absent from the result). Raises :class:`BrokerUnreachable`.
    """
    root = check_topic(f"{settings.prefix}/tables/{table_id}")
    wanted = {f"{root}/{check_topic(s)}": s for s in suffixes}
    v5 = settings.protocol == "5"
    client = aiomqtt.Client(
        settings.host,
        settings.port,
        username=settings.username or None,
        password=settings.read_password(),
        identifier=f"{settings.client_id or f'tablectl-{table_id}'}-check",
        protocol=aiomqtt.ProtocolVersion.V5 if v5 else aiomqtt.ProtocolVersion.V311,
        clean_session=None if v5 else True,
        keepalive=settings.keepalive,
        timeout=settings.connect_timeout_ms / 1000,
        tls_context=settings.tls_context(),
        socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
    )
    got: dict[str, bytes] = {}
    try:
        async with client:
            await client.subscribe([(t, 1) for t in wanted])
            messages = aiter(client.messages)
            while len(got) < len(wanted):
                try:
                    message = await asyncio.wait_for(anext(messages), quiet)
                except (TimeoutError, StopAsyncIteration):
                    break
                suffix = wanted.get(message.topic.value)
                if suffix is None or not message.retain:
                    continue
                raw = message.payload
                got[suffix] = (
                    bytes(raw) if isinstance(raw, bytes | bytearray) else str(raw).encode()
                )
    except (aiomqtt.MqttError, OSError, ssl.SSLError) as exc:
        raise BrokerUnreachable(f"{settings.host}:{settings.port}: {exc}") from exc
    return got
