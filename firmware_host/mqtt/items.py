"""What the link's parts share: what is published (:class:`Item`), what is counted
(:class:`LinkStats`), the table's topics (:class:`TableTopics`), the signature on every
message (:func:`sealer`), the backoff (:class:`Backoff`) and tracebacks logged once per
kind (:class:`OncePerKind`)."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..auth.identity import TableIdentity
from ..jsonio import JSON, dumps
from ..latency import Latency
from ..topics import check_topic
from .settings import MqttSettings


@dataclass(frozen=True, slots=True)
class Item:
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
    refused: int = 0
    #: PUBACKs saying the broker's quota is exceeded (back-pressure, not a refusal).
    throttled: int = 0
    requests: int = 0
    requests_refused_unread: int = 0
    handler_errors: int = 0
    responses_dropped: int = 0
    last_error: str = ""
    connected_since: str | None = None
    puback: Latency = field(default_factory=Latency)


class TableTopics:
    """The table's root, ``<prefix>/tables/<table_id>``, and the topics below it."""

    __slots__ = ("root",)

    def __init__(self, prefix: str, table_id: str) -> None:
        self.root = check_topic(f"{prefix}/tables/{table_id}")

    def topic(self, suffix: str) -> str:
        """Full topic of ``suffix`` (``rounds``, ``devices/wheel``...); refuses wildcards."""
        return check_topic(f"{self.root}/{check_topic(suffix)}")

    def relative(self, full: str) -> str | None:
        """``full`` below the root, or None if it is not the table's."""
        head = self.root + "/"
        return full[len(head) :] if full.startswith(head) else None


#: ``seal(topic, body)``: ``body`` as published on ``topic`` (below the root).
Seal = Callable[[str, Mapping[str, JSON]], bytes]


def sealer(identity: TableIdentity | None) -> Seal:
    """How the link publishes a body it makes itself (snapshots, answers, the will):
    signed with the table's ``identity`` (``auth/evidence.py``), or compact JSON without
    one (library use, tests). The outbox's entries are signed by the journal already."""
    if identity is not None:
        return identity.seal

    def unsigned(topic: str, body: Mapping[str, JSON]) -> bytes:
        return dumps(dict(body)).encode("utf-8")

    return unsigned


class Backoff:
    """Capped exponential backoff with jitter in [50%, 100%] of the step:
    ``reconnect_min_ms`` doubling up to ``reconnect_max_ms``. One for the whole link
    (reconnects, refused topics and subscriptions, back-pressure, the journal's
    storage), drawing from one random generator."""

    __slots__ = ("_rng", "_settings")

    def __init__(self, settings: MqttSettings, rng: random.Random | None = None) -> None:
        self._settings = settings
        self._rng = rng or random.Random()

    def __call__(self, attempt: int) -> float:
        """The delay before try ``attempt`` (0: the first retry), seconds."""
        lo = self._settings.reconnect_min_ms / 1000
        hi = self._settings.reconnect_max_ms / 1000
        step = min(hi, lo * float(1 << min(attempt, 30)))
        return step * (0.5 + 0.5 * self._rng.random())


class OncePerKind:
    """Whether a failure is the first of its kind: a traceback is logged once per kind,
    then only counted (a request that trips a bug cannot flood the log)."""

    __slots__ = ("counts",)

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def __call__(self, kind: str) -> bool:
        n = self.counts.get(kind, 0) + 1
        self.counts[kind] = n
        return n == 1
