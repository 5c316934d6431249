"""The audit chain (the hash-chained event log) and the latched faults it records.

The event log (``events``) is append-only (triggers refuse UPDATE and DELETE) and
hash-chained: each row's ``hash`` is
``sha256(prev_hash + canonical_json({"at", "data", "id", "kind"}))`` with
``prev_hash`` the previous row's hash in hex (64 zeros for the first row) and
canonical JSON = sorted keys, ``(",", ":")`` separators, UTF-8, no ASCII escaping
(:func:`~firmware_host.jsonio.canonical_json`). :meth:`AuditLog.verify_chain`
recomputes it and names the first broken row.

A latched fault (``faults``) survives restarts until a technician clears it;
latching and clearing are both events of the chain.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from ..jsonio import JSON, canonical_json, dumps, loads_or_none
from .errors import FaultNotFound
from .outbox import Outbox, OutboxMessage

#: First ``prev_hash`` of the event chain.
GENESIS_HASH = "0" * 64


def event_hash(prev_hash: str, event_id: int, at: str, kind: str, data: JSON) -> str:
    """Hash of one event-log row (see the module docstring for the exact formula)."""
    content = canonical_json({"id": event_id, "at": at, "kind": kind, "data": data})
    return hashlib.sha256((prev_hash + content).encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Event:
    id: int
    at: str
    kind: str
    data: JSON
    prev_hash: str
    hash: str

    def to_json(self) -> dict[str, JSON]:
        return {
            "id": self.id,
            "at": self.at,
            "kind": self.kind,
            "data": self.data,
            "prev_hash": self.prev_hash,
            "hash": self.hash,
        }


@dataclass(frozen=True, slots=True)
class ChainReport:
    ok: bool
    checked: int
    #: Id of the first row that breaks the chain (None when ``ok``).
    first_bad_id: int | None = None
    reason: str = ""
    head_hash: str = GENESIS_HASH

    def __str__(self) -> str:
        if self.ok:
            return f"event log intact: {self.checked} row(s), head {self.head_hash}"
        return f"event log broken at row {self.first_bad_id}: {self.reason}"


@dataclass(frozen=True, slots=True)
class Fault:
    code: str
    message: str
    data: JSON
    set_at: str
    cleared_at: str | None = None
    cleared_by: str | None = None
    clear_reason: str | None = None

    def to_json(self) -> dict[str, JSON]:
        return {
            "code": self.code,
            "message": self.message,
            "data": self.data,
            "set_at": self.set_at,
            "cleared_at": self.cleared_at,
            "cleared_by": self.cleared_by,
            "clear_reason": self.clear_reason,
        }


_FAULT_COLS = "code, message, data, set_at, cleared_at, cleared_by, clear_reason"


def _fault(row: sqlite3.Row) -> Fault:
    return Fault(row[0], row[1], loads_or_none(row[2]), row[3], row[4], row[5], row[6])


class AuditLog(Outbox):
    """Append to and verify the event chain; latch and clear faults."""

    def _append_event(self, db: sqlite3.Connection, kind: str, data: JSON, now: str) -> Event:
        if not kind:
            raise ValueError("event kind must not be empty")
        data = json.loads(canonical_json(data))  # refuses what cannot be hashed canonically
        row = db.execute("SELECT id, hash FROM events ORDER BY id DESC LIMIT 1").fetchone()
        prev_id, prev_hash = (row[0], row[1]) if row else (0, GENESIS_HASH)
        event_id = prev_id + 1
        h = event_hash(prev_hash, event_id, now, kind, data)
        db.execute(
            "INSERT INTO events (id, at, kind, data, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?)",
            (event_id, now, kind, canonical_json(data), prev_hash, h),
        )
        return Event(event_id, now, kind, data, prev_hash, h)

    def append_event(
        self,
        kind: str,
        data: JSON = None,
        *,
        at: datetime | None = None,
        outbox: Sequence[OutboxMessage] = (),
    ) -> Event:
        """Append one event to the hash-chained audit log (power up, config change...)."""
        now = self._now(at)
        with self._tx("append_event") as db:
            ev = self._append_event(db, kind, data, now)
            self._enqueue(db, outbox, now)
            return ev

    def events(self, limit: int = 50, *, after_id: int = 0, kind: str | None = None) -> list[Event]:
        """Events after ``after_id`` in order; with ``after_id=0`` the *last* ``limit`` events."""
        cols = "SELECT id, at, kind, data, prev_hash, hash FROM events"
        where, args = "1 = 1", []
        if kind is not None:
            where += " AND kind = ?"
            args.append(kind)
        if after_id:
            sql = f"{cols} WHERE {where} AND id > ? ORDER BY id LIMIT ?"
            rows = self._db.execute(sql, [*args, after_id, limit]).fetchall()
        else:
            sql = f"{cols} WHERE {where} ORDER BY id DESC LIMIT ?"
            rows = self._db.execute(sql, [*args, limit]).fetchall()[::-1]
        return [Event(r[0], r[1], r[2], json.loads(r[3]), r[4], r[5]) for r in rows]

    def verify_chain(self) -> ChainReport:
        """Recompute the event chain; report the first row that breaks it and why."""
        prev_id, prev_hash, checked = 0, GENESIS_HASH, 0
        for row_id, at, kind, data_text, stored_prev, stored_hash in self._db.execute(
            "SELECT id, at, kind, data, prev_hash, hash FROM events ORDER BY id"
        ):
            if row_id != prev_id + 1:
                missing = (
                    f"row {prev_id + 1}"
                    if row_id == prev_id + 2
                    else f"rows {prev_id + 1}..{row_id - 1}"
                )
                return ChainReport(
                    False, checked, row_id, f"{missing} missing (deleted?)", prev_hash
                )
            if stored_prev != prev_hash:
                return ChainReport(
                    False,
                    checked,
                    row_id,
                    f"prev_hash {stored_prev[:16]}... does not match the hash of row {prev_id} "
                    f"({prev_hash[:16]}...)",
                    prev_hash,
                )
            try:
                data = json.loads(data_text)
            except (TypeError, ValueError):
                return ChainReport(False, checked, row_id, "data is not valid JSON", prev_hash)
            if canonical_json(data) != data_text:
                return ChainReport(
                    False, checked, row_id, "data is not in canonical form (edited?)", prev_hash
                )
            expect = event_hash(prev_hash, row_id, at, kind, data)
            if expect != stored_hash:
                return ChainReport(
                    False,
                    checked,
                    row_id,
                    "content does not match its hash (row edited)",
                    prev_hash,
                )
            prev_id, prev_hash = row_id, stored_hash
            checked += 1
        return ChainReport(True, checked, None, "", prev_hash)

    # -- latched faults ------------------------------------------------------------------
    def set_fault(
        self, code: str, message: str, data: JSON = None, *, at: datetime | None = None
    ) -> tuple[Fault, bool]:
        """Latch a fault (it survives restarts until cleared); idempotent: ``(fault, new)``."""
        now = self._now(at)
        with self._tx("set_fault") as db:
            row = db.execute(
                f"SELECT {_FAULT_COLS} FROM faults WHERE code = ? AND cleared_at IS NULL", (code,)
            ).fetchone()
            if row is not None:
                return _fault(row), False
            db.execute(
                "INSERT INTO faults (code, message, data, set_at) VALUES (?, ?, ?, ?)",
                (code, message, dumps(data), now),
            )
            self._append_event(
                db, "fault_latched", {"code": code, "message": message, "data": data}, now
            )
            return Fault(code, message, data, now), True

    def clear_fault(self, code: str, *, by: str, reason: str, at: datetime | None = None) -> Fault:
        """Clear a latched fault; ``by`` and ``reason`` go to the event log."""
        now = self._now(at)
        with self._tx("clear_fault") as db:
            row = db.execute(
                f"SELECT {_FAULT_COLS} FROM faults WHERE code = ? AND cleared_at IS NULL", (code,)
            ).fetchone()
            if row is None:
                raise FaultNotFound(f"no latched fault {code!r}")
            db.execute(
                "UPDATE faults SET cleared_at = ?, cleared_by = ?, clear_reason = ? "
                "WHERE code = ? AND cleared_at IS NULL",
                (now, by, reason, code),
            )
            self._append_event(db, "fault_cleared", {"code": code, "by": by, "reason": reason}, now)
            f = _fault(row)
            return Fault(f.code, f.message, f.data, f.set_at, now, by, reason)

    def active_faults(self) -> list[Fault]:
        return [
            _fault(r)
            for r in self._db.execute(
                f"SELECT {_FAULT_COLS} FROM faults WHERE cleared_at IS NULL ORDER BY id"
            )
        ]
