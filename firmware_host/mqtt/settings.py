"""The link's configuration (``[mqtt]``), its limits, and the request topics."""

from __future__ import annotations

import os
import ssl
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tablecommon.settings import FieldSpec, register_section, validate_fields

from ..jsonio import JSON
from ..topics import TopicError, check_topic

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
#: Connections ended in a row, each while the same outbox entry was the only publication
#: in flight (or acknowledged and not yet confirmed), that raise ``PUBLISH_REFUSED`` on
#: its topic (a broker closing the connection to refuse it: see ``OutboxPump.count_drops``).
DROPS_TO_FAULT = 3
#: Most incoming packets read per wake-up of the socket (then other tasks run).
READ_BURST = 256
#: MQTT 3.1.1: an acknowledged outbox entry counts as taken once the connection has
#: stayed open this long after its PUBACK (or another PUBACK came after it), seconds.
CONFIRM_AFTER_S = 0.5
#: PUBACK reason codes (MQTT 5) that are back-pressure, not a refusal of the topic: the
#: publication is not taken, everything waits a backoff and goes again (0x97 Quota
#: exceeded; 0x91 Packet Identifier in use, a message id the broker still holds).
BACKPRESSURE_CODES = frozenset({0x97, 0x91})
#: The publisher's safety-net poll when nothing wakes it, seconds.
IDLE_POLL_S = 5.0
#: Work queued with ``after_publication`` waits at most this long for the outbox's
#: publications before it (a slow broker never holds the table's own work longer).
AFTER_PUBLICATION_MAX_S = 0.05
#: The "published" marks are written when the window drains, or once this many
#: windows' worth wait (one transaction each time). Until written, an entry is not
#: read or sent again; after a crash it is published again, the same bytes under the
#: same id (the floor dedupes). Four windows: a drained backlog writes a quarter of the
#: transactions it did with one (issue 20), and a crash repeats at most 64 entries.
MARKS_BATCH = 4


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
    "protocol": FieldSpec(
        "str",
        "5",
        doc="MQTT protocol version: on 5 the broker's PUBACK says when it refuses a "
        "publication; on 3.1.1 it cannot, and a broker may acknowledge a publication it "
        "drops without the table knowing (check-config warns)",
        choices=("3.1.1", "5"),
    ),
    "session_expiry": FieldSpec(
        "int",
        7 * 24 * 3600,
        doc="MQTT 5 session expiry, seconds (how long the broker keeps our session)",
        range=(0, 2**32 - 1),
    ),
    "reconnect_min_ms": FieldSpec("int", 250, doc="first reconnect delay, ms", range=(10, 600_000)),
    "reconnect_max_ms": FieldSpec(
        "int",
        3_000,
        doc="reconnect delay cap, ms (each delay drawn in 50-100% of its step: a floor's "
        "tables never return at once)",
        range=(10, 3_600_000),
    ),
    "backlog_per_minute": FieldSpec(
        "int",
        60,
        doc="after a reconnection, the backlog's rounds published per minute beside the "
        "live ones, which go first (a backlog of one window or less goes at once; 0: the "
        "backlog at full speed, in order)",
        range=(0, 60_000),
    ),
    "max_inflight": FieldSpec(
        "int",
        16,
        doc="QoS 1 publications awaiting PUBACK at once (each written as soon as it is queued; "
        "a round and its anchor go out together; never more than the broker's MQTT 5 "
        "Receive Maximum)",
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
    protocol: str = "5"
    session_expiry: int = 7 * 24 * 3600
    reconnect_min_ms: int = 250
    reconnect_max_ms: int = 3_000
    backlog_per_minute: int = 60
    max_inflight: int = 16
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

    @property
    def refusals(self) -> str:
        """``visible``: the broker can say that it refuses a publication (MQTT 5, a PUBACK
        reason code); ``undetectable``: it cannot (MQTT 3.1.1, whose PUBACK has no reason
        code), and a broker that acknowledges a publication and drops it, keeping the
        connection, loses it without the table knowing. In the retained ``state`` and the
        console's ``status``."""
        return "visible" if self.protocol == "5" else "undetectable"

    def warnings(self) -> list[str]:
        """What ``tablectl check-config`` warns about in ``[mqtt]`` (the table runs)."""
        if self.protocol == "5":
            return []
        return [
            'mqtt.protocol = "3.1.1": the table cannot detect a publication the broker '
            "refuses (a 3.1.1 PUBACK has no reason code, and a broker such as mosquitto 2.0 "
            "may acknowledge a publication its ACL denies and drop it, keeping the "
            'connection): a settled round can be lost unseen. Use protocol = "5" '
            '(docs/mqtt.md, "Refusals are seen")'
        ]

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
