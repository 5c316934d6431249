"""The :class:`Journal`: every part of the journal over one connection.

Each concern is a mixin over :class:`~.connection.Connection` in its own module
(outbox, audit chain and faults, jackpot, raw frames, retention, rounds, bets);
``Journal`` sets the state they share, opens the file, and adds what reads across
them (game recall, the status snapshot).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ..jsonio import JSON
from ..timefmt import utc_now
from .alerts import AlertStore
from .bets import BetRecord, BetStore
from .errors import JournalError
from .frames import RawFrame
from .requests import RequestStore
from .rounds import RoundRecord


@dataclass(frozen=True, slots=True)
class RecalledRound:
    """One round as the console's ``recall`` shows it."""

    round: RoundRecord
    bets: tuple[BetRecord, ...]
    settlement: JSON  # the published payload, or None (in flight, or pruned)
    frames: tuple[RawFrame, ...]

    def to_json(self) -> dict[str, JSON]:
        return {
            "round": self.round.to_json(),
            "bets": [b.to_json() for b in self.bets],
            "settlement": self.settlement,
            "frames": [f.to_json() for f in self.frames],
        }


class Journal(BetStore, RequestStore, AlertStore):
    """The table's journal. Not thread-safe: use it from one thread (the event loop).

    Every public method that writes is one atomic transaction. Methods taking
    ``outbox=`` write those messages in the same transaction, so a lifecycle event
    is published if and only if the change it announces is committed.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        raw_frame_rounds: int = 100,
        full_rounds: int = 10000,
        published_outbox_keep: int = 1000,
        request_keep_hours: int = 24,
        integrity_check: str = "quick",
        clock: Callable[[], datetime] = utc_now,
        readonly: bool = False,
    ) -> None:
        if raw_frame_rounds < 10:
            raise ValueError("raw_frame_rounds must be at least 10 (recall of the last 10 games)")
        if full_rounds < raw_frame_rounds:
            raise ValueError("full_rounds must be at least raw_frame_rounds")
        self.raw_frame_rounds = raw_frame_rounds
        self.full_rounds = full_rounds
        self.published_outbox_keep = published_outbox_keep
        if request_keep_hours < 24:
            raise ValueError("request_keep_hours must be at least 24 (docs/mqtt.md)")
        self.request_keep_hours = request_keep_hours
        self._listeners = []
        super().__init__(path, integrity_check=integrity_check, clock=clock, readonly=readonly)

    def recall(self, n: int = 10) -> list[RecalledRound]:
        """The last ``n`` rounds (newest first) with bets, settlement payload and raw frames."""
        return [
            RecalledRound(
                rnd,
                tuple(self.bets(rnd.round_id)),
                self.settlement(rnd.round_id),
                tuple(self.raw_frames(rnd.round_id)),
            )
            for rnd in self.rounds_summary(n)
        ]

    def _storage_recovered(self, fault: dict[str, JSON]) -> None:
        """A storage fault cleared: the episode goes to the event log (best effort: a
        failure here latches the fault again, which the guard logs)."""
        with contextlib.suppress(JournalError):
            self.append_event("storage_fault_cleared", fault)

    def get_status(self) -> dict[str, JSON]:
        """A snapshot for ``status`` on the console and the daemon's health."""
        return {
            "storage": self.storage.get_status(),
            "path": self.path,
            "schema_version": self.schema_version,
            "outbox_pending": self.outbox_pending_count(),
            "in_flight_rounds": [r.round_id for r in self.in_flight_rounds()],
            "active_faults": [f.code for f in self.active_faults()],
            "commit_latency": self.commit_latency(),
        }
