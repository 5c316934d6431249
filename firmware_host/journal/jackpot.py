"""Jackpot state and hits, kept in the journal beside the rounds that feed them.

The state of each jackpot (meters, parameters...) is saved in the same transaction
as the round that changed it (``settle_round(jackpot_state=...)``), so a meter can
never be ahead of or behind the settled rounds. A hit is paid in two steps: recorded
(:meth:`JackpotStore.record_hit`, or within the winning round's settlement)
and then confirmed paid (:meth:`JackpotStore.confirm_payment`); hits recorded
but unpaid are finished after a restart.

Every write here appends its entry to the audit chain in the same transaction: the
state saved (``jackpot_saved``, the whole state: meters and parameters), a hit
recorded (``jackpot_hit``) and a payment confirmed (``jackpot_paid``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..jsonio import JSON, canonical_json, dumps
from .chain import AuditLog
from .database import Database
from .errors import JackpotHitConflict, JackpotHitNotFound
from .outbox import Outbox, OutboxMessage
from .storage import loads_or_none

#: Jackpot name used when a table has one progressive (the usual case).
DEFAULT_JACKPOT = "progressive"


@dataclass(frozen=True, slots=True)
class JackpotHit:
    """A jackpot hit to record (step 1 of 2; :meth:`JackpotStore.confirm_payment` is 2)."""

    hit_id: str
    amount: int
    round_id: str | None = None
    details: JSON = None
    name: str = DEFAULT_JACKPOT


@dataclass(frozen=True, slots=True)
class JackpotHitRecord:
    hit_id: str
    name: str
    round_id: str | None
    amount: int
    details: JSON
    recorded_at: str
    paid_at: str | None
    payment: JSON

    @property
    def paid(self) -> bool:
        return self.paid_at is not None

    def to_json(self) -> dict[str, JSON]:
        return {
            "hit_id": self.hit_id,
            "name": self.name,
            "round_id": self.round_id,
            "amount": self.amount,
            "details": self.details,
            "recorded_at": self.recorded_at,
            "paid_at": self.paid_at,
            "payment": self.payment,
        }


_HIT_COLS = "hit_id, name, round_id, amount, details, recorded_at, paid_at, payment"


def _hit(row: sqlite3.Row) -> JackpotHitRecord:
    return JackpotHitRecord(
        row[0], row[1], row[2], row[3], loads_or_none(row[4]), row[5], row[6], loads_or_none(row[7])
    )


class JackpotStore:
    """Save jackpot states; record hits and their payments (each an event of the chain)."""

    def __init__(self, db: Database, chain: AuditLog, outbox: Outbox) -> None:
        self._db = db
        self._chain = chain
        self._outbox = outbox

    def save_in_tx(
        self,
        db: sqlite3.Connection,
        name: str,
        state: Mapping[str, JSON],
        round_id: str | None,
        now: str,
    ) -> None:
        db.execute(
            "INSERT INTO jackpot (name, state, round_id, updated_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(name) DO UPDATE SET state = excluded.state, round_id = excluded.round_id, "
            "updated_at = excluded.updated_at",
            (name, dumps(dict(state)), round_id, now),
        )
        self._chain.append_in_tx(
            db, "jackpot_saved", {"name": name, "round_id": round_id, "state": dict(state)}, now
        )

    def record_hit_in_tx(
        self, db: sqlite3.Connection, hit: JackpotHit, now: str
    ) -> JackpotHitRecord:
        if isinstance(hit.amount, bool) or not isinstance(hit.amount, int) or hit.amount < 0:
            raise ValueError(
                f"jackpot hit amount must be a non-negative integer, got {hit.amount!r}"
            )
        row = db.execute(
            f"SELECT {_HIT_COLS} FROM jackpot_hits WHERE hit_id = ?", (hit.hit_id,)
        ).fetchone()
        if row is not None:
            existing = _hit(row)
            same = (
                existing.name,
                existing.round_id,
                existing.amount,
                canonical_json(existing.details),
            ) == (
                hit.name,
                hit.round_id,
                hit.amount,
                canonical_json(hit.details),
            )
            if not same:
                raise JackpotHitConflict(
                    f"jackpot hit {hit.hit_id!r} already recorded with other content"
                )
            return existing
        db.execute(
            "INSERT INTO jackpot_hits (hit_id, name, round_id, amount, details, recorded_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (hit.hit_id, hit.name, hit.round_id, hit.amount, dumps(hit.details), now),
        )
        self._chain.append_in_tx(
            db,
            "jackpot_hit",
            {
                "hit_id": hit.hit_id,
                "name": hit.name,
                "round_id": hit.round_id,
                "amount": hit.amount,
                "details": hit.details,
            },
            now,
        )
        return JackpotHitRecord(
            hit.hit_id, hit.name, hit.round_id, hit.amount, hit.details, now, None, None
        )

    def state(self, name: str = DEFAULT_JACKPOT) -> JSON:
        """The last saved state (meters, parameters...) of jackpot ``name``, or None."""
        row = self._db.sql.execute("SELECT state FROM jackpot WHERE name = ?", (name,)).fetchone()
        return None if row is None else loads_or_none(row[0])

    def save_state(
        self,
        state: Mapping[str, JSON],
        *,
        name: str = DEFAULT_JACKPOT,
        events: Sequence[tuple[str, JSON]] = (),
        outbox: Sequence[OutboxMessage] = (),
        at: datetime | None = None,
    ) -> None:
        """Save a jackpot state on its own (parameter change, adjustment), with its events."""
        now = self._db.now(at)
        with self._db.tx("save_jackpot_state") as db:
            self.save_in_tx(db, name, state, None, now)
            for kind, data in events:
                self._chain.append_in_tx(db, kind, data, now)
            self._outbox.enqueue_in_tx(db, outbox, now)

    def record_hit(
        self,
        hit: JackpotHit,
        *,
        state: Mapping[str, JSON] | None = None,
        outbox: Sequence[OutboxMessage] = (),
        at: datetime | None = None,
    ) -> JackpotHitRecord:
        """Step 1 of a hit: record it (and the meter reset in ``state``) atomically.

        Idempotent by ``hit_id`` (same content: returns the existing record).
        """
        now = self._db.now(at)
        with self._db.tx("record_jackpot_hit") as db:
            rec = self.record_hit_in_tx(db, hit, now)
            if rec.recorded_at == now and state is not None:
                self.save_in_tx(db, hit.name, state, hit.round_id, now)
            self._outbox.enqueue_in_tx(db, outbox, now)
            return rec

    def confirm_payment(
        self,
        hit_id: str,
        payment: JSON = None,
        *,
        state: Mapping[str, JSON] | None = None,
        outbox: Sequence[OutboxMessage] = (),
        at: datetime | None = None,
    ) -> tuple[JackpotHitRecord, bool]:
        """Step 2 of a hit: payment confirmed. Idempotent: returns ``(record, changed)``."""
        now = self._db.now(at)
        with self._db.tx("confirm_jackpot_payment") as db:
            row = db.execute(
                f"SELECT {_HIT_COLS} FROM jackpot_hits WHERE hit_id = ?", (hit_id,)
            ).fetchone()
            if row is None:
                raise JackpotHitNotFound(f"no jackpot hit {hit_id!r}")
            existing = _hit(row)
            if existing.paid:
                return existing, False
            db.execute(
                "UPDATE jackpot_hits SET paid_at = ?, payment = ? WHERE hit_id = ?",
                (now, dumps(payment), hit_id),
            )
            if state is not None:
                self.save_in_tx(db, existing.name, state, existing.round_id, now)
            self._chain.append_in_tx(
                db,
                "jackpot_paid",
                {"hit_id": hit_id, "amount": existing.amount, "payment": payment},
                now,
            )
            self._outbox.enqueue_in_tx(db, outbox, now)
            row = db.execute(
                f"SELECT {_HIT_COLS} FROM jackpot_hits WHERE hit_id = ?", (hit_id,)
            ).fetchone()
            return _hit(row), True

    def hit(self, hit_id: str) -> JackpotHitRecord | None:
        """One recorded hit by its id, or None."""
        row = self._db.sql.execute(
            f"SELECT {_HIT_COLS} FROM jackpot_hits WHERE hit_id = ?", (hit_id,)
        ).fetchone()
        return None if row is None else _hit(row)

    def hits(self, limit: int = 25, *, name: str | None = None) -> list[JackpotHitRecord]:
        """The last ``limit`` hits, newest first."""
        sql = f"SELECT {_HIT_COLS} FROM jackpot_hits"
        args: list[Any] = []
        if name is not None:
            sql += " WHERE name = ?"
            args.append(name)
        args.append(limit)
        return [_hit(r) for r in self._db.sql.execute(sql + " ORDER BY id DESC LIMIT ?", args)]

    def unpaid_hits(self) -> list[JackpotHitRecord]:
        """Hits recorded but not confirmed paid, oldest first (to finish after a restart)."""
        return [
            _hit(r)
            for r in self._db.sql.execute(
                f"SELECT {_HIT_COLS} FROM jackpot_hits WHERE paid_at IS NULL ORDER BY id"
            )
        ]
