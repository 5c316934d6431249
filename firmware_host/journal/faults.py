"""Latched faults: faults that stop play survive restarts until a technician clears them.

One row of ``faults`` per latch (``code``, message, data, when it was set, and who
cleared it, when and why). Latching and clearing are both entries of the audit chain
(``fault_latched``, ``fault_cleared``) in the transaction that writes the row; at most
one latch of a code is open at a time.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from ..jsonio import JSON, dumps, loads_or_none
from .chain import AuditLog
from .database import Database
from .errors import FaultNotFound


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


class FaultStore:
    """Latch and clear faults (each an entry of the chain); read them back; tell the
    listeners (:meth:`add_listener`) once a latch or a clear is committed."""

    def __init__(self, db: Database, chain: AuditLog) -> None:
        self._db = db
        self._chain = chain
        self._listeners: list[Callable[[], None]] = []

    def add_listener(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` after each commit that latched or cleared a fault (the
        retained ``state`` follows the faults, whoever latched or cleared them)."""
        self._listeners.append(callback)

    def _changed(self) -> None:
        for callback in self._listeners:
            self._db.after_commit(callback)

    def set_fault(
        self, code: str, message: str, data: JSON = None, *, at: datetime | None = None
    ) -> tuple[Fault, bool]:
        """Latch a fault (it survives restarts until cleared); idempotent: ``(fault, new)``."""
        now = self._db.now(at)
        with self._db.tx("set_fault") as db:
            return self.set_in_tx(db, code, message, data, now)

    def set_in_tx(
        self, db: sqlite3.Connection, code: str, message: str, data: JSON, now: str
    ) -> tuple[Fault, bool]:
        """:meth:`set_fault` in the open transaction."""
        row = db.execute(
            f"SELECT {_FAULT_COLS} FROM faults WHERE code = ? AND cleared_at IS NULL", (code,)
        ).fetchone()
        if row is not None:
            return _fault(row), False
        db.execute(
            "INSERT INTO faults (code, message, data, set_at) VALUES (?, ?, ?, ?)",
            (code, message, dumps(data), now),
        )
        self._chain.append_in_tx(
            db, "fault_latched", {"code": code, "message": message, "data": data}, now
        )
        self._changed()
        return Fault(code, message, data, now), True

    def clear_fault(self, code: str, *, by: str, reason: str, at: datetime | None = None) -> Fault:
        """Clear a latched fault; ``by`` and ``reason`` go to the event log."""
        now = self._db.now(at)
        with self._db.tx("clear_fault") as db:
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
            self._chain.append_in_tx(
                db, "fault_cleared", {"code": code, "by": by, "reason": reason}, now
            )
            self._changed()
            f = _fault(row)
            return Fault(f.code, f.message, f.data, f.set_at, now, by, reason)

    def last_cleared(self, code: str) -> Fault | None:
        """The latest cleared latch of ``code`` (what a technician acknowledged), or None."""
        row = self._db.sql.execute(
            f"SELECT {_FAULT_COLS} FROM faults WHERE code = ? AND cleared_at IS NOT NULL "
            "ORDER BY id DESC LIMIT 1",
            (code,),
        ).fetchone()
        return None if row is None else _fault(row)

    def active(self) -> list[Fault]:
        """Every fault latched and not cleared, oldest first."""
        return [
            _fault(r)
            for r in self._db.sql.execute(
                f"SELECT {_FAULT_COLS} FROM faults WHERE cleared_at IS NULL ORDER BY id"
            )
        ]
