"""The audit chain: the keyed, hash-chained event log (the journal's ``chain``).

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

A latched fault (``faults.py``) survives restarts until a technician clears it;
latching and clearing are both events of the chain.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from ..jsonio import JSON, canonical_json
from .auditkey import AuditKey, AuditKeyError
from .database import Database
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


class AuditLog:
    """The keyed hash chain: append to it, read and verify it (the journal's ``chain``)."""

    def __init__(self, db: Database, outbox: Outbox, key: AuditKey | None = None) -> None:
        """Reads which key the chain is keyed with, and keys it now if ``key`` is given
        and the chain is not keyed yet (the ``chain_keyed`` entry, see the module
        docstring)."""
        self._db = db
        self._outbox = outbox
        #: The table's audit key (None: an unkeyed journal, library use only).
        self.key = key
        #: Id of the key the chain is keyed with (from ``meta``), None while unkeyed.
        self._key_id: str | None = None
        self._init_chain()

    def _init_chain(self) -> None:
        sql = self._db.sql
        self._key_id = self._db.meta("audit_key_id")
        if self._key_id is None:
            # ``meta`` is a hint only: the chain itself is the record.
            found = sql.execute(
                "SELECT data FROM events WHERE kind = ? ORDER BY id LIMIT 1", (CHAIN_KEYED,)
            ).fetchone()
            if found is not None:
                self._key_id = str(json.loads(found[0]).get("key_id"))
        key = self.key
        if key is None or self._db.readonly:
            return
        if self._key_id is not None:
            if self._key_id != key.key_id:
                raise AuditKeyError(
                    f"{self._db.path}: this journal is chained with audit key {self._key_id}, "
                    f"not with the key given ({key.key_id}, {key.path or 'in memory'})",
                    code="AUDIT_KEY_MISMATCH",
                )
            return
        with self._db.tx("chain_keyed") as db:
            unkeyed = db.execute("SELECT COUNT(*) FROM events").fetchone()[0]
            row = db.execute("SELECT value FROM meta WHERE key = 'uncovered_before'").fetchone()
            uncovered = json.loads(row[0]) if row else None
            self._key_id = key.key_id  # the marker below is the first keyed row
            try:
                marker = self.append_in_tx(
                    db,
                    CHAIN_KEYED,
                    {"key_id": key.key_id, "unkeyed_rows": unkeyed, "uncovered_before": uncovered},
                    self._db.now(),
                )
                db.executemany(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                    [("audit_key_id", key.key_id), ("audit_keyed_from", str(marker.id))],
                )
            except BaseException:
                self._key_id = None
                raise

    @property
    def key_id(self) -> str | None:
        """Id of the key this journal's chain is keyed with (None: not keyed)."""
        return self._key_id

    def append_in_tx(self, db: sqlite3.Connection, kind: str, data: JSON, now: str) -> Event:
        """Append one entry in the open transaction (the row it records is written there)."""
        if not kind:
            raise ValueError("event kind must not be empty")
        key = self.key
        if self._key_id is not None and key is None:
            raise AuditKeyError(
                f"{self._db.path}: the journal's chain is keyed (key {self._key_id}); "
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
        now = self._db.now(at)
        with self._db.tx("append_event") as db:
            ev = self.append_in_tx(db, kind, data, now)
            self._outbox.enqueue_in_tx(db, outbox, now)
            return ev

    def events(self, limit: int = 50, *, after_id: int = 0, kind: str | None = None) -> list[Event]:
        """Events after ``after_id`` in order; with ``after_id=0`` the *last* ``limit`` events."""
        cols = "SELECT id, at, kind, data, prev_hash, hash FROM events"
        where, args = "1 = 1", []
        if kind is not None:
            where += " AND kind = ?"
            args.append(kind)
        sql = self._db.sql
        if after_id:
            rows = sql.execute(
                f"{cols} WHERE {where} AND id > ? ORDER BY id LIMIT ?", [*args, after_id, limit]
            ).fetchall()
        else:
            rows = sql.execute(
                f"{cols} WHERE {where} ORDER BY id DESC LIMIT ?", [*args, limit]
            ).fetchall()[::-1]
        return [Event(r[0], r[1], r[2], json.loads(r[3]), r[4], r[5]) for r in rows]

    def head(self) -> tuple[int, str]:
        """``(id, hash)`` of the last entry of the chain (``(0, GENESIS_HASH)`` if empty)."""
        row = self._db.sql.execute(
            "SELECT id, hash FROM events ORDER BY id DESC LIMIT 1"
        ).fetchone()
        return (int(row[0]), str(row[1])) if row else (0, GENESIS_HASH)

    def hash_at(self, event_id: int) -> str | None:
        """The hash of chain entry ``event_id``, or None if the journal has no such entry."""
        row = self._db.sql.execute("SELECT hash FROM events WHERE id = ?", (event_id,)).fetchone()
        return None if row is None else str(row[0])

    def verify(self, key: AuditKey | None = None) -> ChainReport:
        """Recompute the chain (with ``key``, by default the journal's own); report the
        first row that breaks it and why. Only the chain: ``verify.audit_journal``
        also checks every money row against it."""
        return walk_chain(self._db.sql, key if key is not None else self.key).report
