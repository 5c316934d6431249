"""Integrity alerts held until an operator acknowledges them (issue 19).

One row of ``alerts`` per alert: its ``code`` and ``subject`` (what it is about: a
pocket, a wheel's serial number, a file; ``""`` for the table itself), severity,
message, the evidence the detector gave, first and last seen, how many times it was
raised, whether its condition still holds, and who acknowledged it, when and why.

The life of an alert, every step an event of the audit chain (``alert_raised``,
``alert_acknowledged``, ``alert_cleared``, in the transaction that changes the row):

- :meth:`AlertStore.raise_alert`: a new alert, or one more occurrence of an alert not
  yet cleared (``count`` + 1, ``last_seen``, the newest evidence); a *momentary*
  alert (a spin too fast, a misfire) has no condition that lasts; a *condition* alert
  (a wheel out of its bands, a clock unsynchronised) holds until
  :meth:`AlertStore.end_condition` says it no longer does;
- :meth:`AlertStore.acknowledge_alert`: an operator, with a reason;
- cleared as soon as it is both acknowledged and its condition is over (whichever
  comes last): it leaves the list of active alerts, its row stays.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from datetime import datetime

from ..jsonio import JSON, canonical_json
from .chain import AuditLog
from .database import Database
from .errors import JournalError

#: Severities, least to most severe.
SEVERITIES = ("info", "warning", "critical")


class AlertNotFound(JournalError, LookupError):
    code = "ALERT_NOT_FOUND"


class AlertAcknowledged(JournalError):
    code = "ALERT_ALREADY_ACKNOWLEDGED"


@dataclass(frozen=True, slots=True)
class AlertRecord:
    id: int
    code: str
    subject: str
    severity: str
    message: str
    evidence: JSON
    first_seen: str
    last_seen: str
    count: int
    #: ``True`` while the condition behind it holds (a momentary alert: never).
    condition: bool
    acknowledged_at: str | None
    acknowledged_by: str | None
    ack_reason: str | None
    cleared_at: str | None

    @property
    def state(self) -> str:
        """``raised``, ``acknowledged`` (its condition still holds) or ``cleared``."""
        if self.cleared_at is not None:
            return "cleared"
        return "acknowledged" if self.acknowledged_at is not None else "raised"

    def to_json(self) -> dict[str, JSON]:
        return {
            "id": self.id,
            "code": self.code,
            "subject": self.subject,
            "severity": self.severity,
            "message": self.message,
            "evidence": self.evidence,
            "first_seen": self.first_seen,
            "last_seen": self.last_seen,
            "count": self.count,
            "state": self.state,
            "condition": "active" if self.condition else "ended",
            "acknowledged_at": self.acknowledged_at,
            "acknowledged_by": self.acknowledged_by,
            "ack_reason": self.ack_reason,
            "cleared_at": self.cleared_at,
        }


_COLS = (
    "id, code, subject, severity, message, evidence, first_seen, last_seen, count, "
    "condition, acknowledged_at, acknowledged_by, ack_reason, cleared_at"
)


def _alert(r: sqlite3.Row) -> AlertRecord:
    return AlertRecord(
        int(r[0]),
        str(r[1]),
        str(r[2]),
        str(r[3]),
        str(r[4]),
        json.loads(str(r[5])),
        str(r[6]),
        str(r[7]),
        int(r[8]),
        bool(r[9]),
        r[10] if r[10] is None else str(r[10]),
        r[11] if r[11] is None else str(r[11]),
        r[12] if r[12] is None else str(r[12]),
        r[13] if r[13] is None else str(r[13]),
    )


class AlertStore:
    """The ``alerts`` table and its events in the audit chain."""

    def __init__(self, db: Database, chain: AuditLog) -> None:
        self._db = db
        self._chain = chain

    def _open_alert(self, db: sqlite3.Connection, code: str, subject: str) -> AlertRecord | None:
        row = db.execute(
            f"SELECT {_COLS} FROM alerts WHERE code = ? AND subject = ? AND cleared_at IS NULL",
            (code, subject),
        ).fetchone()
        return _alert(row) if row is not None else None

    def raise_alert(
        self,
        code: str,
        message: str,
        *,
        severity: str = "warning",
        subject: str = "",
        evidence: JSON = None,
        momentary: bool = True,
        at: datetime | None = None,
    ) -> tuple[AlertRecord, bool]:
        """Raise ``code`` about ``subject``: ``(alert, new)``; one more occurrence of an
        alert not cleared yet counts on the same row."""
        if severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {', '.join(SEVERITIES)}")
        if not code:
            raise ValueError("alert code must not be empty")
        evidence = json.loads(canonical_json(evidence))
        now = self._db.now(at)
        with self._db.tx("raise_alert") as db:
            old = self._open_alert(db, code, subject)
            if old is None:
                cur = db.execute(
                    "INSERT INTO alerts (code, subject, severity, message, evidence, first_seen, "
                    "last_seen, count, condition) VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?)",
                    (code, subject, severity, message, canonical_json(evidence), now, now,
                     int(not momentary)),
                )  # fmt: skip
                alert_id, count = int(cur.lastrowid or 0), 1
            else:
                alert_id, count = old.id, old.count + 1
                db.execute(
                    "UPDATE alerts SET severity = ?, message = ?, evidence = ?, last_seen = ?, "
                    "count = ?, condition = ? WHERE id = ?",
                    (severity, message, canonical_json(evidence), now, count,
                     int(not momentary), alert_id),
                )  # fmt: skip
            self._chain.append_in_tx(
                db,
                "alert_raised",
                {"alert_id": alert_id, "code": code, "subject": subject, "severity": severity,
                 "message": message, "evidence": evidence, "count": count},
            now)  # fmt: skip
            rec = self._open_alert(db, code, subject)
            assert rec is not None
            return rec, old is None

    def acknowledge_alert(
        self, alert_id: int, *, by: str, reason: str, at: datetime | None = None
    ) -> AlertRecord:
        """An operator acknowledges alert ``alert_id`` (``by`` and ``reason`` go to the
        audit chain); cleared at once if its condition is over."""
        if not reason.strip():
            raise ValueError("acknowledging an alert needs a reason")
        now = self._db.now(at)
        with self._db.tx("acknowledge_alert") as db:
            row = db.execute(f"SELECT {_COLS} FROM alerts WHERE id = ?", (alert_id,)).fetchone()
            if row is None or row[13] is not None:
                raise AlertNotFound(f"no active alert {alert_id}")
            old = _alert(row)
            if old.acknowledged_at is not None:
                raise AlertAcknowledged(
                    f"alert {alert_id} was acknowledged by {old.acknowledged_by} at "
                    f"{old.acknowledged_at}; it clears when its condition ends"
                )
            db.execute(
                "UPDATE alerts SET acknowledged_at = ?, acknowledged_by = ?, ack_reason = ? "
                "WHERE id = ?",
                (now, by, reason, alert_id),
            )
            self._chain.append_in_tx(
                db,
                "alert_acknowledged",
                {"alert_id": alert_id, "code": old.code, "subject": old.subject, "by": by,
                 "reason": reason},
                now,
            )  # fmt: skip
            if not old.condition:
                self._clear_alert(db, old, now, "acknowledged; its condition is over")
            return _alert(
                db.execute(f"SELECT {_COLS} FROM alerts WHERE id = ?", (alert_id,)).fetchone()
            )

    def end_condition(
        self, code: str, subject: str = "", *, evidence: JSON = None, at: datetime | None = None
    ) -> AlertRecord | None:
        """The condition behind ``code`` about ``subject`` is over: the alert clears if it
        was acknowledged, else it waits for its acknowledgement. None: no such alert."""
        now = self._db.now(at)
        with self._db.tx("end_alert_condition") as db:
            old = self._open_alert(db, code, subject)
            if old is None or not old.condition:
                return old
            db.execute("UPDATE alerts SET condition = 0 WHERE id = ?", (old.id,))
            if old.acknowledged_at is not None:
                self._clear_alert(db, old, now, "its condition is over", evidence)
            return _alert(
                db.execute(f"SELECT {_COLS} FROM alerts WHERE id = ?", (old.id,)).fetchone()
            )

    def _clear_alert(
        self, db: sqlite3.Connection, old: AlertRecord, now: str, why: str, evidence: JSON = None
    ) -> None:
        db.execute("UPDATE alerts SET cleared_at = ? WHERE id = ?", (now, old.id))
        data: dict[str, JSON] = {"alert_id": old.id, "code": old.code, "subject": old.subject,
                                 "why": why}  # fmt: skip
        if evidence is not None:
            data["evidence"] = json.loads(canonical_json(evidence))
        self._chain.append_in_tx(db, "alert_cleared", data, now)

    def active(self) -> list[AlertRecord]:
        """Every alert not cleared yet, oldest first."""
        return [
            _alert(r)
            for r in self._db.sql.execute(
                f"SELECT {_COLS} FROM alerts WHERE cleared_at IS NULL ORDER BY id"
            )
        ]

    def get(self, alert_id: int) -> AlertRecord | None:
        row = self._db.sql.execute(
            f"SELECT {_COLS} FROM alerts WHERE id = ?", (alert_id,)
        ).fetchone()
        return _alert(row) if row is not None else None
