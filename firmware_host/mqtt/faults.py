"""The link's parts that keep what the broker refuses: each refusal of a topic is one
:class:`LinkFault` (``PUBLISH_REFUSED``, ``SUBSCRIBE_REFUSED``), raised and cleared
with one log line each, listed in the retained ``state`` (``link_faults``) and the
console's ``status`` (:class:`LinkFaults`); a refused topic waits for its backoff before
it is tried again (:class:`TopicHolds`)."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ..jsonio import JSON

log = logging.getLogger("firmware_host.mqtt")


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


class LinkFaults:
    """What the broker refuses now, by ``(code, topic)``. ``on_change()`` runs after a
    fault is raised or cleared (the retained ``state`` says it); ``now()`` stamps it."""

    def __init__(self, now: Callable[[], str], on_change: Callable[[], None]) -> None:
        self._now, self._on_change = now, on_change
        self.active: dict[tuple[str, str], LinkFault] = {}

    def __bool__(self) -> bool:
        return bool(self.active)

    def __contains__(self, key: object) -> bool:
        return key in self.active

    def __getitem__(self, key: tuple[str, str]) -> LinkFault:
        return self.active[key]

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self.active)

    def values(self) -> list[LinkFault]:
        return list(self.active.values())

    def raise_(self, code: str, topic: str, message: str) -> None:
        """Raised (one log line), or counted again when it is up already."""
        key = (code, topic)
        cur = self.active.get(key)
        if cur is not None:
            self.active[key] = dataclasses.replace(cur, attempts=cur.attempts + 1)
            return
        self.active[key] = LinkFault(code, topic, message, self._now())
        log.error("mqtt: %s on %s: %s; retried with backoff", code, topic, message)
        self._on_change()

    def clear(self, code: str, topic: str) -> None:
        """Cleared (one log line), if it was up."""
        cur = self.active.pop((code, topic), None)
        if cur is None:
            return
        log.warning(
            "mqtt: %s on %s cleared after %d attempt(s): the broker accepts it again",
            code,
            topic,
            cur.attempts,
        )
        self._on_change()


class TopicHolds:
    """The topics the broker refused, each waiting for its backoff (refusals in a row
    grow it) before anything on it is published again; everything else flows."""

    __slots__ = ("_backoff", "active")

    def __init__(self, backoff: Callable[[int], float]) -> None:
        self._backoff = backoff
        #: Topic -> (monotonic time before which it is not retried, refusals in a row).
        self.active: dict[str, tuple[float, int]] = {}

    def hold(self, topic: str) -> None:
        """Nothing more on ``topic`` before its backoff ends (refusals in a row grow it)."""
        _, n = self.active.get(topic, (0.0, 0))
        self.active[topic] = (time.monotonic() + self._backoff(n), n + 1)

    def held(self, topic: str, now: float) -> bool:
        hold = self.active.get(topic)
        return hold is not None and hold[0] > now

    def release(self, topic: str) -> None:
        """The broker took a publication on ``topic``: its hold ends."""
        if topic in self.active:
            del self.active[topic]

    def retry_times(self) -> list[float]:
        """When each hold ends (the publisher's idle wait is no longer)."""
        return [t for t, _ in self.active.values()]


__all__ = ["LinkFault", "LinkFaults", "TopicHolds"]
