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
  with QoS 1. An entry is marked published only once the broker has taken it, so a
  broker or network failure loses nothing: unacknowledged entries are sent again
  after the reconnect, and a duplicate is always the same bytes under the same
  ``round_id``. Up to ``max_inflight`` entries are in flight at once; the publisher
  is woken by the journal whenever a commit adds outbox entries, and the round engine
  never waits for it.
- Refusals are seen (issue 14 item 5). MQTT 5: a PUBACK with a reason code of 0x80
  or above (mosquitto's ACL answers 0x87) leaves the entry unpublished; MQTT 3.1.1
  has no refusal in PUBACK, and mosquitto 2.0 acknowledges a refused publication
  and closes the connection, so there an entry counts as taken only once the
  connection has outlived its PUBACK (:data:`CONFIRM_AFTER_S`, or a later PUBACK),
  and one caught by :data:`DROPS_TO_FAULT` closed connections in a row is refused.
  A refused SUBSCRIBE (SUBACK 0x80, or an MQTT 5 reason code) is retried. Each
  refusal raises a :class:`LinkFault` (``PUBLISH_REFUSED``, ``SUBSCRIBE_REFUSED``):
  one log line when raised and one when cleared, listed in the retained ``state``
  (``link_faults``) and the console's ``status``; the topic is retried with
  backoff, and a refused outbox entry holds back the entries after it (the floor
  gets them in order or not yet), while everything else keeps flowing.
- Requests on ``bets/request`` and ``commands/request`` (retained and empty messages
  are not requests and are ignored) wait in one bounded queue per topic and are
  handed to the daemon's handler ``(topic, payload) -> response`` one at a time,
  **commands first**: a flood of bets never delays a dealer's command. A request
  larger than :data:`~firmware_host.boundedjson.MAX_REQUEST_BYTES`, or arriving
  when its queue is full, is answered at once without being read (``request_id``
  null: ``REQUEST_TOO_LARGE``, ``TABLE_BUSY``); the handler bounds the rest before
  parsing (``firmware_host/boundedjson.py``). A returned response is published on
  the matching ``.../response`` topic (QoS 1, not retained), after the outbox.
  Responses are NOT journaled by the link: they go through a bounded in-memory
  queue that survives reconnects but not a restart.
- A journal that cannot be read or written (full disk, I/O error) is not a broker
  failure: the connection and its backoff are kept, the outbox waits with its own
  backoff, an entry the broker took whose mark cannot be written is remembered and
  not sent again (at most one publication per entry per connection), and marked
  when the journal writes again.
- Reconnects forever with capped, jittered exponential backoff while the table
  keeps playing and journaling; the backoff starts again from its minimum only
  after a connection that held (:data:`STABLE_CONNECTION_S`), so a broker that
  closes every connection at once is retried ever more slowly, never in a storm.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import inspect
import logging
import os
import random
import select
import socket
import ssl
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import aiomqtt
from paho.mqtt.client import MQTT_CLEAN_START_FIRST_ONLY
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

from . import __version__, boundedjson
from .config import FieldSpec, register_section, validate_fields
from .journal import Journal, JournalError, OutboxEntry
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

#: Commands are handled before bets (a flood of bets never delays a dealer's command).
REQUEST_PRIORITY = ("commands/request", "bets/request")
#: Requests waiting to be handled, per topic; above it one is answered ``TABLE_BUSY``
#: unread.
MAX_QUEUED = {"commands/request": 1_000, "bets/request": 10_000}

MAX_RESPONSES_QUEUED = 10_000
MAX_INCOMING_QUEUED = 10_000
#: A connection that held this long (or ``reconnect_max_ms``, if shorter) restarts the
#: reconnect backoff from ``reconnect_min_ms``; a shorter one keeps it growing.
STABLE_CONNECTION_S = 10.0
#: Connections ended in a row with the same outbox entry in flight that raise
#: ``PUBLISH_REFUSED`` (an MQTT 3.1.1 broker closing the connection to refuse it).
DROPS_TO_FAULT = 3
#: Most incoming packets read per wake-up of the socket (then other tasks run).
READ_BURST = 256
#: MQTT 3.1.1: an acknowledged outbox entry counts as taken once the connection has
#: stayed open this long after its PUBACK (or another PUBACK came after it), seconds.
CONFIRM_AFTER_S = 0.5
#: The publisher's safety-net poll when nothing wakes it, seconds.
IDLE_POLL_S = 5.0


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
# the client: aiomqtt, with the broker's refusals made visible

#: The message id of the last publication this task handed to paho (see _AckClient).
_PUBLISH_MID: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "publish_mid", default=None
)


class _AckClient(aiomqtt.Client):
    """aiomqtt's client, telling which publications the broker refused.

    MQTT 5 lets a broker refuse a QoS 1 publication in its PUBACK (reason code 0x80 or
    above, e.g. 0x87 *Not authorized* from mosquitto's ACL). paho-mqtt 2.x passes that
    reason code to ``on_publish`` (callback API 2), but aiomqtt 2.x (``_on_publish``)
    drops it and ``publish()`` returns as if the message had been accepted. This
    subclass keeps the refusals by message id and :meth:`publish_checked` returns the
    refusal of its own publication. It depends on two private hooks of aiomqtt 2.x
    (``_on_publish`` and ``_pending_call``, pinned by ``aiomqtt<3``); the tests in
    ``tests/daemon/test_mqtt_refusals.py`` fail if an upgrade breaks it.

    It also reads incoming packets in bursts (:meth:`_read_bursts`) and hands each
    message to ``deliver`` as it is read (:meth:`_on_message`), so that requests reach
    the link's queues as soon as they arrive (``tests/daemon/test_mqtt_requests.py``).
    """

    def __init__(
        self,
        *args: Any,
        deliver: Callable[[str, bytes, bool], None] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.refused: dict[int, ReasonCode] = {}
        self._deliver = deliver

    def _on_message(self, client: Any, userdata: Any, message: Any) -> None:
        """Incoming messages go straight to ``deliver(topic, payload, retain)`` (the
        link's queues), on the packet's arrival: aiomqtt's message iterator hands them
        over one per few event-loop iterations, so a burst would wait there in arrival
        order, a dealer's command behind every bet before it."""
        if self._deliver is None:
            super()._on_message(client, userdata, message)
            return
        self._deliver(message.topic, bytes(message.payload), bool(message.retain))

    def _on_publish(
        self,
        client: Any,
        userdata: Any,
        mid: int,
        reason_code: ReasonCode,
        properties: Any,
    ) -> None:
        if reason_code.is_failure:
            self.refused[mid] = reason_code
        super()._on_publish(client, userdata, mid, reason_code, properties)

    @contextlib.contextmanager
    def _pending_call(self, mid: int, value: Any, pending_dict: dict[int, Any]) -> Iterator[None]:
        if pending_dict is self._pending_publishes:
            self.refused.pop(mid, None)  # a stale refusal of an earlier use of this id
            _PUBLISH_MID.set(mid)
        with super()._pending_call(mid, value, pending_dict):
            yield

    def _on_socket_open(self, client: Any, userdata: Any, sock: Any) -> None:
        super()._on_socket_open(client, userdata, sock)
        # Runs after aiomqtt's own add_reader (call_soon_threadsafe keeps the order).
        self._loop.call_soon_threadsafe(self._read_bursts, sock)

    def _read_bursts(self, sock: Any) -> None:
        """Read every packet waiting on the socket at each wake-up, not one.

        aiomqtt's reader reads one packet per event-loop iteration (paho's
        ``loop_read`` reads one when nothing of ours is in flight), so a burst of
        requests sits in the socket in arrival order and a dealer's command behind
        a flood of bets is read only after every bet before it was handled: the
        separate queues could not put it first. Reading the socket dry (up to
        :data:`READ_BURST` packets per wake-up) moves the requests into the link's
        queues at once."""
        try:
            fd = sock.fileno()
        except OSError:
            return
        if fd < 0:
            return
        self._loop.remove_reader(fd)
        self._loop.add_reader(fd, self._read_burst, sock)

    def _read_burst(self, sock: Any) -> None:
        paho = self._client
        try:
            for _ in range(READ_BURST):
                paho.loop_read()
                current: Any = paho.socket()
                if current is None or current.fileno() != sock.fileno():
                    break  # closed meanwhile
                if hasattr(current, "pending") and current.pending() > 0:
                    continue  # TLS: decrypted bytes already buffered
                if not select.select([current], [], [], 0)[0]:
                    break
        except Exception as exc:  # as aiomqtt's reader: the connection is broken
            if not self._disconnected.done():
                self._disconnected.set_exception(exc)

    async def publish_checked(
        self, topic: str, payload: bytes, *, qos: int, retain: bool, timeout: float
    ) -> ReasonCode | None:
        """Publish and wait for the acknowledgement; the broker's refusal, or None."""
        token = _PUBLISH_MID.set(None)
        try:
            await self.publish(topic, payload, qos=qos, retain=retain, timeout=timeout)
            mid = _PUBLISH_MID.get()
        finally:
            _PUBLISH_MID.reset(token)
        return self.refused.pop(mid, None) if mid is not None else None


def _refusal(code: int | ReasonCode) -> str | None:
    """The text of a refusing SUBACK/PUBACK code, or None if it grants.

    MQTT 3.1.1 SUBACK says 0x80 for a refused filter; MQTT 5 has reason codes 0x80 and
    above (0x87 Not authorized...). paho gives ints or ReasonCodes depending on the
    protocol and callback API."""
    if isinstance(code, ReasonCode):
        return f"{code.getName()} (0x{code.value:02x})" if code.is_failure else None
    return f"refused (0x{code:02x})" if code >= 0x80 else None


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


@dataclass(frozen=True, slots=True)
class LinkFault:
    """Something the broker refuses: a publication (``PUBLISH_REFUSED``) or a
    subscription (``SUBSCRIBE_REFUSED``) on one topic (relative to the table's root).
    Raised and cleared by the link; shown in ``state`` (``link_faults``), the console
    (``status``) and the log (one line when raised, one when cleared)."""

    code: str
    topic: str
    message: str
    since: str
    attempts: int = 1

    def to_json(self) -> dict[str, JSON]:
        return {
            "code": self.code,
            "topic": self.topic,
            "message": self.message,
            "since": self.since,
            "attempts": self.attempts,
        }


@dataclass
class LinkStats:
    connects: int = 0
    connect_failures: int = 0
    disconnects: int = 0
    published: int = 0
    outbox_published: int = 0
    refused: int = 0
    requests: int = 0
    requests_refused_unread: int = 0
    handler_errors: int = 0
    responses_dropped: int = 0
    marks_deferred: int = 0
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
        #: Responses waiting: to requests that acted (ok, accepted) first, then refusals
        #: (a flood of malformed requests cannot hold back a dealer's answer).
        self._responses: OrderedDict[int, tuple[str, bytes]] = OrderedDict()
        self._refusals: OrderedDict[int, tuple[str, bytes]] = OrderedDict()
        self._response_seq = 0
        #: Requests received and not yet handled, one queue per request topic.
        self._requests: dict[str, deque[bytes]] = {t: deque() for t in REQUEST_TOPICS}
        self._request_ready = asyncio.Event()
        #: What the broker refuses now, by (code, topic).
        self.faults: dict[tuple[str, str], LinkFault] = {}
        #: Topic -> (monotonic time before which it is not retried, refusals in a row).
        self._holds: dict[str, tuple[float, int]] = {}
        #: Outbox entries the broker acknowledged whose "published" mark the journal
        #: could not write (full disk, I/O error): not sent again, marked when it writes.
        self._acked_unmarked: dict[int, None] = {}
        #: While the journal cannot be read ("read") or its marks written ("mark"):
        #: (retry at, failures in a row). A failing mark does not stop publishing.
        self._storage_holds: dict[str, tuple[float, int]] = {}
        #: Outbox entry id -> connections that ended while it was in flight, in a row.
        self._drops: dict[int, int] = {}
        self._in_flight: dict[int, str] = {}
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
        ``link_faults``, ``since`` and ``updated_at`` are filled in by the link.
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
        if isinstance(payload, bytes):
            body = payload
        elif isinstance(payload, str):
            body = payload.encode("utf-8")
        elif isinstance(payload, Mapping):
            body = dumps(dict(payload)).encode("utf-8")
            acted = payload.get("status") in ("ok", "accepted")
        else:
            raise TypeError(
                f"a response must be a mapping, bytes or str, got {type(payload).__name__}"
            )
        while len(self._responses) + len(self._refusals) >= MAX_RESPONSES_QUEUED:
            (self._refusals or self._responses).popitem(last=False)
            self.stats.responses_dropped += 1
        self._response_seq += 1
        queue = self._responses if acted else self._refusals
        queue[self._response_seq] = (response_topic, body)
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
            pending: int | None = self.journal.outbox_pending_count()
        except JournalError:
            pending = None
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
            "outbox_pending": pending,
            "refused": s.refused,
            "faults": [f.to_json() for f in self.faults.values()],
            "acked_not_marked": len(self._acked_unmarked),
            "responses_queued": len(self._responses) + len(self._refusals),
            "responses_dropped": s.responses_dropped,
            "requests": s.requests,
            "requests_queued": {t: len(q) for t, q in self._requests.items()},
            "requests_refused_unread": s.requests_refused_unread,
            "handler_errors": s.handler_errors,
            "puback_latency": s.puback.summary(),
            "last_error": s.last_error,
        }

    # -- faults: what the broker refuses ------------------------------------------------
    def _raise_fault(self, code: str, topic: str, message: str) -> None:
        key = (code, topic)
        cur = self.faults.get(key)
        if cur is not None:
            self.faults[key] = dataclasses.replace(cur, attempts=cur.attempts + 1)
            return
        self.faults[key] = LinkFault(code, topic, message, iso_utc(self._clock()))
        log.error("mqtt: %s on %s: %s; retried with backoff", code, topic, message)
        self._put_snapshot("state", self._state)  # the floor sees it (if state gets through)

    def _clear_fault(self, code: str, topic: str) -> None:
        cur = self.faults.pop((code, topic), None)
        if cur is None:
            return
        log.warning(
            "mqtt: %s on %s cleared after %d attempt(s): the broker accepts it again",
            code,
            topic,
            cur.attempts,
        )
        self._put_snapshot("state", self._state)

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
        """Connect, serve, reconnect with backoff; returns after :meth:`stop`.

        The backoff starts again from ``reconnect_min_ms`` only after a connection
        that held for a while (:data:`STABLE_CONNECTION_S`, or ``reconnect_max_ms`` if
        shorter): a broker that accepts the connection and drops it at once is retried
        ever more slowly, never in a storm."""
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self.journal.add_outbox_listener(self.notify)
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
            self.journal.remove_outbox_listener(self.notify)
            self._connected.clear()

    def _backoff(self, attempt: int) -> float:
        """Capped exponential backoff with jitter in [50%, 100%] of the step."""
        lo, hi = self.settings.reconnect_min_ms / 1000, self.settings.reconnect_max_ms / 1000
        step = min(hi, lo * float(1 << min(attempt, 30)))
        return step * (0.5 + 0.5 * self._rng.random())

    def _count_drops(self) -> None:
        """A connection ended with outbox entries in flight or acknowledged but not
        confirmed. An MQTT 3.1.1 broker cannot say no to a publication (MQTT-3.3.5-2):
        it acknowledges it or closes the connection, and mosquitto 2.0 does both (a
        PUBACK, then the connection closed). Such entries were not marked published:
        they go out again on the next connection. The same entry caught by
        :data:`DROPS_TO_FAULT` ends in a row raises ``PUBLISH_REFUSED`` on its topic
        and waits for its backoff, so that everything else still flows meanwhile."""
        caught = dict(self._in_flight)
        caught.update({i: topic for i, (_, topic) in self._unconfirmed.items()})
        self._in_flight.clear()
        self._unconfirmed.clear()
        for entry_id, topic in caught.items():
            n = self._drops.get(entry_id, 0) + 1
            self._drops[entry_id] = n
            if n >= DROPS_TO_FAULT:
                self._hold(topic)
                self._raise_fault(
                    "PUBLISH_REFUSED",
                    topic,
                    f"the broker closed the connection {n} times in a row just after outbox "
                    f"entry {entry_id} was sent (how an MQTT 3.1.1 broker refuses a "
                    "publication); the entry stays queued and holds back the outbox after it",
                )

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
            log.warning("mqtt: broker %s:%d: %s", self.settings.host, self.settings.port, msg)
        self.stats.last_error = msg

    def _first_failure(self, kind: str) -> bool:
        """Whether this is the first failure of ``kind`` (a traceback is logged once per
        kind, then only counted: a request that trips a bug cannot flood the log)."""
        n = self._handler_failures.get(kind, 0) + 1
        self._handler_failures[kind] = n
        return n == 1

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
        return dumps(body).encode("utf-8")

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
                self._clear_fault("SUBSCRIBE_REFUSED", t)
            else:
                refused.append(t)
                self._raise_fault(
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
            self._confirm_unconfirmed()
            self._retry_marks()
            batch = self._next_batch()
            if not batch:
                if self._stop.is_set():
                    break
                self._wake.clear()
                batch = self._next_batch()  # anything that arrived before the clear
                if not batch:
                    self._idle.set()
                    with contextlib.suppress(TimeoutError):
                        # The poll is a safety net only: commits wake us through the
                        # listener; a refused topic or the journal's storage is retried
                        # when its backoff ends.
                        await asyncio.wait_for(self._wake.wait(), self._idle_timeout())
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

    def _idle_timeout(self) -> float:
        now = time.monotonic()
        until = [t for t, _ in self._holds.values()]
        until.extend(t for t, _ in self._storage_holds.values())
        if self._unconfirmed:
            until.append(min(t for t, _ in self._unconfirmed.values()) + CONFIRM_AFTER_S)
        soonest = min(until, default=now + IDLE_POLL_S)
        return max(0.001, min(IDLE_POLL_S, soonest - now))

    def _has_work(self) -> bool:
        if self._responses or self._refusals or self._acked_unmarked or self._unconfirmed:
            return True
        try:
            if self.journal.outbox_pending_count():
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
        for which, (_, n) in list(self._storage_holds.items()):
            self._storage_holds[which] = (0.0, n)
        self.notify()

    def _storage_failed(self, which: str, exc: JournalError) -> None:
        """The journal could not be read (``read``: the outbox waits) or a mark could
        not be written (``mark``: publishing goes on, the marks are retried): retried
        with backoff, keeping the connection and its backoff (a journal failure is not
        a broker failure). Logged once, when the first hold begins."""
        if not self._storage_holds:
            log.warning("mqtt: the journal fails (%s); connection kept, retried with backoff", exc)
        _, n = self._storage_holds.get(which, (0.0, 0))
        self._storage_holds[which] = (time.monotonic() + self._backoff(n), n + 1)

    def _storage_ok(self, which: str) -> None:
        hold = self._storage_holds.pop(which, None)
        if hold is not None and not self._storage_holds:
            log.info("mqtt: the journal answers again after %d failure(s)", hold[1])

    def _storage_ready(self, which: str, now: float) -> bool:
        hold = self._storage_holds.get(which)
        return hold is None or hold[0] <= now

    def _retry_marks(self) -> None:
        """Write the "published" marks the journal could not write before."""
        if not self._acked_unmarked or not self._storage_ready("mark", time.monotonic()):
            return
        try:
            self.journal.outbox_mark_published(list(self._acked_unmarked))
        except JournalError as exc:
            self._storage_failed("mark", exc)
            return
        self._acked_unmarked.clear()
        self._storage_ok("mark")

    def _next_batch(self) -> list[_Item]:
        """What to publish next. On a new connection the ``state`` snapshot goes first
        (availability before anything else); after that the journal's outbox (settled
        rounds, lifecycle events) goes before snapshots, which only need their latest
        value, and responses come last: neither a burst of snapshot updates nor a
        stream of requests may hold back the table's own output (answers to requests that
        acted go before refusals). A topic the broker
        refused waits for its backoff; a refused outbox entry holds back every entry
        after it (the floor gets them in order or not at all)."""
        now = time.monotonic()
        room = self.settings.max_inflight
        snapshots: list[_Item] = []
        for suffix, (version, body) in list(self._snapshots.items()):
            if self._snap_sent.get(suffix) == version or self._held(suffix, now):
                continue
            if suffix == "state":
                payload = self._state_payload("online")
            else:
                payload = dumps(body).encode("utf-8")
            snapshots.append(_Item("snapshot", suffix, payload, 1, True, (suffix, version)))
        announced = "state" in self._snap_sent or "state" not in self._snapshots
        batch: list[_Item] = [] if announced else snapshots
        if len(batch) < room and self._storage_ready("read", now):
            try:
                entries = self.journal.outbox_pending(
                    room - len(batch) + len(self._acked_unmarked) + len(self._unconfirmed)
                )
            except JournalError as exc:
                self._storage_failed("read", exc)
                entries = []
            else:
                self._storage_ok("read")
            for e in entries:
                if e.id in self._acked_unmarked or e.id in self._unconfirmed:
                    continue
                if self._held(e.topic, now) or len(batch) >= room:
                    break
                batch.append(self._outbox_item(e))
        if announced and len(batch) < room:
            batch.extend(snapshots[: room - len(batch)])
        for queue in (self._responses, self._refusals):
            for key, (topic, raw) in queue.items():
                if len(batch) >= room:
                    break
                if not self._held(topic, now):
                    batch.append(_Item("response", topic, raw, 1, False, key))
        return batch

    @staticmethod
    def _outbox_item(e: OutboxEntry) -> _Item:
        return _Item("outbox", e.topic, e.payload, e.qos, e.retain, e.id)

    async def _publish(self, client: _AckClient, item: _Item) -> None:
        topic = self.topic(item.topic)
        t0 = time.perf_counter()
        refused: ReasonCode | None = None
        if item.kind == "outbox":
            self._in_flight[item.ref] = item.topic
        try:
            refused = await client.publish_checked(
                topic,
                item.payload,
                qos=item.qos,
                retain=item.retain,
                timeout=self.settings.publish_timeout_ms / 1000,
            )
        except (ValueError, TypeError) as exc:
            # Unpublishable (e.g. a payload too large): never let it block the queue.
            log.error("mqtt: dropping unpublishable %s message on %s: %s", item.kind, topic, exc)
        if item.kind == "outbox":
            self._in_flight.pop(item.ref, None)
        self.stats.puback.add(time.perf_counter() - t0)
        if refused is not None:
            self._refused(item, refused)
            return
        self._accepted(item)

    def _refused(self, item: _Item, reason: ReasonCode) -> None:
        """The broker refused ``item`` (PUBACK reason code >= 0x80): nothing is marked,
        the topic waits for its backoff, the fault is raised (logged once)."""
        self.stats.refused += 1
        self._hold(item.topic)
        what = {"outbox": "outbox entry", "snapshot": "snapshot", "response": "response"}
        self._raise_fault(
            "PUBLISH_REFUSED",
            item.topic,
            f"the broker refused the publication: {_refusal(reason)}; the {what[item.kind]} "
            "stays queued"
            + (" and holds back the outbox after it" if item.kind == "outbox" else ""),
        )

    def _hold(self, topic: str) -> None:
        """Nothing more on ``topic`` before its backoff ends (refusals in a row grow it)."""
        _, n = self._holds.get(topic, (0.0, 0))
        self._holds[topic] = (time.monotonic() + self._backoff(n), n + 1)

    def _accepted(self, item: _Item) -> None:
        self.stats.published += 1
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
            self._snap_sent[suffix] = version

    def _taken(self, topic: str) -> None:
        """The broker took a publication on ``topic``: its hold and fault end."""
        if topic in self._holds:
            del self._holds[topic]
        if self.faults:
            self._clear_fault("PUBLISH_REFUSED", topic)

    def _confirm_unconfirmed(self) -> None:
        """MQTT 3.1.1: entries acknowledged :data:`CONFIRM_AFTER_S` ago on a connection
        still open were taken (mosquitto closes the connection at once after
        acknowledging a publication it refused)."""
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
        for topic in set(topics.values()):
            self._taken(topic)
        if self._acked_unmarked or not self._storage_ready("mark", time.monotonic()):
            for i in ids:
                self._defer_mark(i)
            return
        try:
            self.journal.outbox_mark_published(ids)
        except JournalError as exc:
            for i in ids:
                self._defer_mark(i)
            self._storage_failed("mark", exc)

    def _defer_mark(self, entry_id: int) -> None:
        """Acknowledged by the broker, not marked in the journal: remembered, so it is
        not published again while the process lives, and marked when the journal
        writes again."""
        self.stats.marks_deferred += 1
        self._acked_unmarked[entry_id] = None

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
