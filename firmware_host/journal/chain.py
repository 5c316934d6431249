"""The audit chain (the keyed, hash-chained event log) and the latched faults it records.

The event log (``events``) is append-only (triggers refuse UPDATE and DELETE) and
chained: each row's ``hash`` is

    HMAC-SHA256(key, prev_hash + canonical_json({"at", "data", "id", "kind"}))

in hex, with ``prev_hash`` the previous row's hash (64 zeros for the first row), the
key the table's audit key (``auditkey.py``: a per-table secret in a file of its own,
never in the journal) and canonical JSON = sorted keys, ``(",", ":")`` separators,
UTF-8, no ASCII escaping (:func:`~firmware_host.jsonio.canonical_json`). Without the
key nobody can recompute the chain after editing the file.

The chain covers everything that moves money: besides the table's events (power,
configuration, faults, privileged actions), every write of a money row appends, in
the row's own transaction, an entry describing it: ``round_opened``, ``bet_placed``,
``bet_cancelled``, ``round_settled`` / ``round_void`` (the outcome as read, the final
timestamps, the totals and the SHA-256 of the published payload), ``jackpot_saved``
(the meter state), ``jackpot_hit``, ``jackpot_paid``, ``rounds_pruned`` (retention);
every answer to a floor request, ``request_answered`` (``requests.py``), and
``requests_pruned`` (retention).
``verify.py`` checks every row against the chain.

A journal created or last written without a key (library use, tests; the daemon always
has one) is chained with plain ``sha256(prev_hash + ...)``. The first time it is opened
with a key, a ``chain_keyed`` entry (the key's id, where the unkeyed rows end) is
appended, and from there on every entry is keyed: that entry's HMAC covers the unkeyed
head, so the rows before it cannot be rewritten either. A journal whose chain is keyed
refuses chain writes without its key (``AUDIT_KEY_REQUIRED``) and refuses another key
(``AUDIT_KEY_MISMATCH``).

A latched fault (``faults``) survives restarts until a technician clears it;
latching and clearing are both events of the chain.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from ..jsonio import JSON, canonical_json, dumps, loads_or_none
from .auditkey import AuditKey, AuditKeyError
from .errors import FaultNotFound
from .outbox import Outbox, OutboxMessage

#: First ``prev_hash`` of the event chain.
GENESIS_HASH = "0" * 64
#: Kind of the entry that starts the keyed part of the chain.
CHAIN_KEYED = "chain_keyed"


def chain_content(event_id: int, at: str, kind: str, data_text: str) -> str:
    """``canonical_json({"at", "data", "id", "kind"})`` of one row, built from the
    canonical text of ``data`` (so a row is serialised once)."""
    return (
        f'{{"at":{json.dumps(at, ensure_ascii=False)},"data":{data_text},'
        f'"id":{int(event_id)},"kind":{json.dumps(kind, ensure_ascii=False)}}}'
    )


def event_hash(
    prev_hash: str, event_id: int, at: str, kind: str, data: JSON, key: AuditKey | None = None
) -> str:
    """Hash of one event-log row: HMAC-SHA256 under ``key``, or plain SHA-256 for an
    unkeyed row (see the module docstring for the exact formula)."""
    message = (prev_hash + chain_content(event_id, at, kind, canonical_json(data))).encode()
    if key is None:
        return hashlib.sha256(message).hexdigest()
    return key.mac(message)


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
    #: Id of the ``chain_keyed`` entry (rows from there on are keyed), or None: unkeyed.
    keyed_from: int | None = None
    #: Id of the last row checked (the head's position).
    head_id: int = 0

    def __str__(self) -> str:
        if self.ok:
            keyed = "unkeyed" if self.keyed_from is None else f"keyed from row {self.keyed_from}"
            return (
                f"event log intact: {self.checked} row(s), {keyed}, "
                f"head {self.head_id}:{self.head_hash}"
            )
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


class ChainWalk:
    """One pass over the chain in id order: checks every link and hash, and hands each
    verified row to ``visit`` (``verify.py`` builds what the rows must hold from it).
    Stops at the first broken row (``report``)."""

    def __init__(self) -> None:
        self.report = ChainReport(True, 0)


def walk_chain(
    db: sqlite3.Connection,
    key: AuditKey | None,
    visit: Callable[[Event], None] | None = None,
    *,
    since: int = 1,
) -> ChainWalk:
    """Walk the chain of ``db``: rows before the ``chain_keyed`` entry are checked as
    SHA-256 links, that entry and every later row as HMACs under ``key``. A keyed chain
    checked without a key, or under another key, fails at its ``chain_keyed`` entry.

    ``since`` > 1 walks only from that entry on, taking the previous entry's hash as
    stored (the start-up check of a journal's recent rows: it proves their consistency,
    not that nothing before them was rewritten)."""
    walk = ChainWalk()
    prev_id, prev_hash, checked, keyed_from = 0, GENESIS_HASH, 0, None
    if since > 1:
        row = db.execute("SELECT id, hash FROM events WHERE id = ?", (since - 1,)).fetchone()
        if row is not None:
            prev_id, prev_hash = int(row[0]), str(row[1])
            marker = db.execute("SELECT value FROM meta WHERE key = 'audit_keyed_from'").fetchone()
            if marker is not None and int(marker[0]) < since:
                keyed_from = int(marker[0])
        else:
            since = 1

    def fail(row_id: int, reason: str) -> ChainWalk:
        walk.report = ChainReport(False, checked, row_id, reason, prev_hash, keyed_from, prev_id)
        return walk

    for row_id, at, kind, data_text, stored_prev, stored_hash in db.execute(
        "SELECT id, at, kind, data, prev_hash, hash FROM events WHERE id >= ? ORDER BY id",
        (since,),
    ):
        if row_id != prev_id + 1:
            missing = (
                f"row {prev_id + 1}"
                if row_id == prev_id + 2
                else f"rows {prev_id + 1}..{row_id - 1}"
            )
            return fail(row_id, f"{missing} missing (deleted?)")
        if stored_prev != prev_hash:
            return fail(
                row_id,
                f"prev_hash {str(stored_prev)[:16]}... does not match the hash of row {prev_id} "
                f"({prev_hash[:16]}...)",
            )
        try:
            data = json.loads(data_text)
        except (TypeError, ValueError):
            return fail(row_id, "data is not valid JSON")
        if canonical_json(data) != data_text:
            return fail(row_id, "data is not in canonical form (edited?)")
        if keyed_from is None and kind == CHAIN_KEYED:
            if key is None:
                return fail(
                    row_id, "the chain is keyed from here: verifying it needs the audit key"
                )
            if not isinstance(data, dict) or data.get("key_id") != key.key_id:
                got = data.get("key_id") if isinstance(data, dict) else None
                return fail(
                    row_id,
                    f"the chain is keyed with audit key {got}, not with the key given "
                    f"({key.key_id})",
                )
            keyed_from = row_id
        message = (prev_hash + chain_content(row_id, at, kind, data_text)).encode("utf-8")
        expect = (
            hashlib.sha256(message).hexdigest()
            if keyed_from is None or key is None
            else key.mac(message)
        )
        if expect != stored_hash:
            return fail(
                row_id,
                "content does not match its HMAC (row edited, or the chain recomputed "
                "without the key)"
                if keyed_from is not None
                else "content does not match its hash (row edited)",
            )
        prev_id, prev_hash = row_id, stored_hash
        checked += 1
        if visit is not None:
            visit(Event(row_id, at, kind, data, stored_prev, stored_hash))
    walk.report = ChainReport(True, checked, None, "", prev_hash, keyed_from, prev_id)
    return walk


class AuditLog(Outbox):
    """Append to and verify the event chain; latch and clear faults."""

    #: The table's audit key (None: an unkeyed journal, library use only).
    _audit_key: AuditKey | None
    #: Id of the key the chain is keyed with (from ``meta``), None while unkeyed.
    _chain_key_id: str | None

    def _init_chain(self) -> None:
        """Read which key the chain is keyed with; key it now if a key is given and the
        chain is not keyed yet (the ``chain_keyed`` entry, see the module docstring)."""
        row = self._db.execute("SELECT value FROM meta WHERE key = 'audit_key_id'").fetchone()
        self._chain_key_id = row[0] if row else None
        if self._chain_key_id is None:
            # ``meta`` is a hint only: the chain itself is the record.
            found = self._db.execute(
                "SELECT data FROM events WHERE kind = ? ORDER BY id LIMIT 1", (CHAIN_KEYED,)
            ).fetchone()
            if found is not None:
                self._chain_key_id = str(json.loads(found[0]).get("key_id"))
        key = self._audit_key
        if key is None or self.readonly:
            return
        if self._chain_key_id is not None:
            if self._chain_key_id != key.key_id:
                raise AuditKeyError(
                    f"{self.path}: this journal is chained with audit key {self._chain_key_id}, "
                    f"not with the key given ({key.key_id}, {key.path or 'in memory'})",
                    code="AUDIT_KEY_MISMATCH",
                )
            return
        with self._tx("chain_keyed") as db:
            unkeyed = db.execute("SELECT COUNT(*) FROM events").fetchone()[0]
            row = db.execute("SELECT value FROM meta WHERE key = 'uncovered_before'").fetchone()
            uncovered = json.loads(row[0]) if row else None
            self._chain_key_id = key.key_id  # the marker below is the first keyed row
            try:
                marker = self._append_event(
                    db,
                    CHAIN_KEYED,
                    {"key_id": key.key_id, "unkeyed_rows": unkeyed, "uncovered_before": uncovered},
                    self._now(),
                )
                db.executemany(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                    [("audit_key_id", key.key_id), ("audit_keyed_from", str(marker.id))],
                )
            except BaseException:
                self._chain_key_id = None
                raise

    @property
    def audit_key_id(self) -> str | None:
        """Id of the key this journal's chain is keyed with (None: not keyed)."""
        return self._chain_key_id

    def _append_event(self, db: sqlite3.Connection, kind: str, data: JSON, now: str) -> Event:
        if not kind:
            raise ValueError("event kind must not be empty")
        key = self._audit_key
        if self._chain_key_id is not None and key is None:
            raise AuditKeyError(
                f"{self.path}: the journal's chain is keyed (key {self._chain_key_id}); "
                "open it with its audit key to write",
                code="AUDIT_KEY_REQUIRED",
            )
        text = canonical_json(data)  # refuses what cannot be hashed canonically (NaN)
        data = json.loads(text)
        row = db.execute("SELECT id, hash FROM events ORDER BY id DESC LIMIT 1").fetchone()
        prev_id, prev_hash = (row[0], row[1]) if row else (0, GENESIS_HASH)
        event_id = prev_id + 1
        message = (prev_hash + chain_content(event_id, now, kind, text)).encode("utf-8")
        h = hashlib.sha256(message).hexdigest() if key is None else key.mac(message)
        db.execute(
            "INSERT INTO events (id, at, kind, data, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?)",
            (event_id, now, kind, text, prev_hash, h),
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
        """Append one event to the audit chain (power up, config change...)."""
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

    def chain_head(self) -> tuple[int, str]:
        """``(id, hash)`` of the last entry of the chain (``(0, GENESIS_HASH)`` if empty)."""
        row = self._db.execute("SELECT id, hash FROM events ORDER BY id DESC LIMIT 1").fetchone()
        return (int(row[0]), str(row[1])) if row else (0, GENESIS_HASH)

    def chain_hash_at(self, event_id: int) -> str | None:
        """The hash of chain entry ``event_id``, or None if the journal has no such entry."""
        row = self._db.execute("SELECT hash FROM events WHERE id = ?", (event_id,)).fetchone()
        return None if row is None else str(row[0])

    def verify_chain(self, key: AuditKey | None = None) -> ChainReport:
        """Recompute the chain (with ``key``, by default the journal's own); report the
        first row that breaks it and why. Only the chain: ``verify.audit_journal``
        also checks every money row against it."""
        return walk_chain(self._db, key if key is not None else self._audit_key).report

    # -- latched faults ------------------------------------------------------------------
    def set_fault(
        self, code: str, message: str, data: JSON = None, *, at: datetime | None = None
    ) -> tuple[Fault, bool]:
        """Latch a fault (it survives restarts until cleared); idempotent: ``(fault, new)``."""
        now = self._now(at)
        with self._tx("set_fault") as db:
            return self._set_fault(db, code, message, data, now)

    def _set_fault(
        self, db: sqlite3.Connection, code: str, message: str, data: JSON, now: str
    ) -> tuple[Fault, bool]:
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

    def last_cleared_fault(self, code: str) -> Fault | None:
        """The latest cleared latch of ``code`` (what a technician acknowledged), or None."""
        row = self._db.execute(
            f"SELECT {_FAULT_COLS} FROM faults WHERE code = ? AND cleared_at IS NOT NULL "
            "ORDER BY id DESC LIMIT 1",
            (code,),
        ).fetchone()
        return None if row is None else _fault(row)

    def active_faults(self) -> list[Fault]:
        return [
            _fault(r)
            for r in self._db.execute(
                f"SELECT {_FAULT_COLS} FROM faults WHERE cleared_at IS NULL ORDER BY id"
            )
        ]
