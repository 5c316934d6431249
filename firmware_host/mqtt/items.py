"""What the link publishes (:class:`Item`: a snapshot, an answer, an outbox entry) and
what it counts (:class:`LinkStats`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..latency import Latency


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
