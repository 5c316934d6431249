"""The link's retained snapshots: ``state``, ``devices/<name>``, ``jackpot`` and the
display snapshots (``board``, ``stats``, ``alerts``...). Held in memory, the latest
value of each: a burst of updates costs one publication, and each is republished after
every reconnect (a restarted broker may have lost its retained messages). The outbox
pump (``pump.py``) takes those due, and tells which version the broker took."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime

from ..jsonio import JSON
from ..schemas import PAYLOAD_SCHEMA_VERSION
from ..timefmt import iso_utc
from ..topics import TopicError, check_topic
from .faults import LinkFaults, TopicHolds
from .items import Item, Seal

#: A snapshot due: (suffix, version, body).
Due = tuple[str, int, Mapping[str, JSON]]


class Snapshots:
    """The retained snapshots by suffix, each with a version (one counter for all), the
    version the broker took on this connection and the one in flight.

    ``seal`` signs each payload as published; ``faults`` are listed in ``state``
    (``link_faults``); ``notify()`` wakes the publisher after an update; ``clock()``
    stamps ``updated_at``."""

    def __init__(
        self,
        table_id: str,
        *,
        software_version: str,
        refusals: str,
        clock: Callable[[], datetime],
        seal: Seal,
        faults: LinkFaults,
        notify: Callable[[], None],
    ) -> None:
        self.table_id = table_id
        self.software_version = software_version
        self._clock, self._seal, self._faults, self._notify = clock, seal, faults, notify
        #: The fields of ``state`` set by the table; ``refusals`` (whether the broker can
        #: say that it refuses a publication) is part of every ``state`` from the start.
        self._state: dict[str, JSON] = {"refusals": refusals}
        # suffix -> (version, payload); snapshots published are remembered by version.
        self._bodies: dict[str, tuple[int, Mapping[str, JSON]]] = {}
        self._version = 0
        #: Suffix -> the version the broker took (on this connection) / awaiting its PUBACK.
        self.sent: dict[str, int] = {}
        self.in_flight: dict[str, int] = {}
        #: When the current connection came up (``since`` of ``state`` online).
        self.online_since: str | None = None
        #: The backlog paced on this connection (``backlog`` of ``state``), or None.
        self.backlog: dict[str, JSON] | None = None

    # -- what the table sets -------------------------------------------------------------
    def set_state(self, **fields: JSON) -> None:
        """Update the retained ``state`` snapshot (game, phase, round_id, faults...).

        ``schema_version``, ``table_id``, ``availability``, ``software_version``,
        ``refusals``, ``link_faults``, ``since`` and ``updated_at`` are filled in by the
        link.
        """
        self._state.update(fields)
        self.put("state", self._state)

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
        self.put(f"devices/{name}", body)

    def set_jackpot(self, payload: Mapping[str, JSON]) -> None:
        """Update the retained ``jackpot`` display snapshot (``jackpot.json``)."""
        body = {"schema_version": PAYLOAD_SCHEMA_VERSION, "table_id": self.table_id, **payload}
        body.setdefault("updated_at", iso_utc(self._clock()))
        self.put("jackpot", body)

    def set_snapshot(self, suffix: str, payload: Mapping[str, JSON]) -> None:
        """Update another retained display snapshot (``board``, ``stats``: what a table's
        extensions show), with the common head and ``updated_at``."""
        check_topic(suffix)
        body = {"schema_version": PAYLOAD_SCHEMA_VERSION, "table_id": self.table_id, **payload}
        body.setdefault("updated_at", iso_utc(self._clock()))
        self.put(suffix, body)

    def put(self, suffix: str, payload: Mapping[str, JSON]) -> None:
        """``payload`` is the latest value of ``suffix``: published next (once)."""
        self._version += 1
        self._bodies[suffix] = (self._version, dict(payload))
        self._notify()

    def set_backlog(self, to_seq: int | None, per_minute: int = 0) -> None:
        """The link paces the rounds up to ``to_seq`` on this connection, ``per_minute``
        a minute, and publishes those above it as they are made (None: nothing is
        paced, or the backlog is all handed over): ``state``'s ``backlog``, so that the
        floor can tell a round missing among the live ones (asked for at once) from the
        backlog still to come (issue 36)."""
        value: dict[str, JSON] | None = None
        if to_seq is not None:
            value = {"to_seq": to_seq, "per_minute": per_minute}
        if value != self.backlog:
            self.backlog = value
            if "state" in self._bodies:
                self.refresh_state()

    def refresh_state(self) -> None:
        """``state`` again, as it is now (the link's faults changed)."""
        self.put("state", self._state)

    # -- what is published ---------------------------------------------------------------
    def state_payload(self, availability: str, *, reason: str | None = None) -> bytes:
        """The ``state`` message, signed: ``online`` (on every connect, and each update),
        ``offline`` (the will; the goodbye of a clean shutdown, with its ``reason``)."""
        now = iso_utc(self._clock())
        body: dict[str, JSON] = {
            "schema_version": PAYLOAD_SCHEMA_VERSION,
            "table_id": self.table_id,
            "availability": availability,
            "software_version": self.software_version,
        }
        body.update({k: v for k, v in self._state.items() if k not in body})
        if self._faults:
            body["link_faults"] = [
                {"code": f.code, "topic": f.topic, "message": f.message, "since": f.since}
                for f in self._faults.values()
            ]
        if self.backlog is not None and availability == "online":
            body["backlog"] = dict(self.backlog)
        body["since"] = self.online_since if availability == "online" and self.online_since else now
        body["updated_at"] = now
        if reason:
            body["reason"] = reason
        return self._seal("state", body)

    def version(self, suffix: str) -> int:
        """The latest version of ``suffix`` (0 if it was never set)."""
        return self._bodies.get(suffix, (0, {}))[0]

    @property
    def announced(self) -> bool:
        """Whether ``state`` went on this connection (or there is none): availability
        goes before anything else."""
        return "state" in self.sent or "state" not in self._bodies

    @property
    def waiting(self) -> bool:
        """Whether a snapshot's latest version has not been taken by the broker yet."""
        sent = self.sent
        return any(sent.get(k) != v for k, (v, _) in self._bodies.items())

    def due(self, holds: TopicHolds, now: float) -> list[Due]:
        """The snapshots whose latest version is neither taken nor in flight, and whose
        topic is not held at ``now`` (refused, waiting for its backoff)."""
        sent, in_flight = self.sent, self.in_flight
        return [
            (suffix, version, body)
            for suffix, (version, body) in self._bodies.items()
            if sent.get(suffix) != version
            and in_flight.get(suffix) != version
            and not holds.held(suffix, now)
        ]

    def items(self, due: list[Due], n: int) -> list[Item]:
        """The first ``n`` of ``due`` as publications (serialised and signed only now:
        the outbox often fills the batch before them)."""
        return [
            Item(
                "snapshot",
                suffix,
                self.state_payload("online") if suffix == "state" else self._seal(suffix, body),
                1,
                True,
                (suffix, version),
            )
            for suffix, version, body in due[: max(n, 0)]
        ]

    # -- the broker's answers ------------------------------------------------------------
    def sending(self, ref: tuple[str, int]) -> None:
        """Version ``ref`` of its suffix is handed to the client."""
        self.in_flight[ref[0]] = ref[1]

    def released(self, ref: tuple[str, int]) -> None:
        """Version ``ref`` is no longer in flight (answered, timed out or abandoned)."""
        if self.in_flight.get(ref[0]) == ref[1]:
            del self.in_flight[ref[0]]

    def accepted(self, ref: tuple[str, int]) -> None:
        """The broker took version ``ref`` (an older one acknowledged after a newer one
        changes nothing)."""
        suffix, version = ref
        if version > self.sent.get(suffix, -1):
            self.sent[suffix] = version

    def connected(self) -> str:
        """A new connection, up since now (returned, as stamped): every snapshot goes
        again (a restarted broker may have lost retained messages), nothing is in
        flight."""
        self.online_since = since = iso_utc(self._clock())
        self.sent.clear()
        self.in_flight.clear()
        return since


__all__ = ["Due", "Snapshots"]
