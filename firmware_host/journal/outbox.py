"""The transactional outbox: messages queued in the transaction whose change they announce.

The journal knows nothing of MQTT except that outbox entries carry a topic
*relative to the table's root* (``rounds``, ``events``, ``jackpot``...), a QoS and
a retain flag; the publisher (``firmware_host/mqtt/``) adds
``<prefix>/tables/<table_id>/``, drains the entries in id order and marks each one
published after the broker's PUBACK.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from ..auth.identity import TableIdentity
from ..jsonio import JSON, dumps
from ..topics import check_relative_topic
from .database import Database

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class OutboxMessage:
    """A message to publish, written to the outbox in the caller's transaction.

    ``topic`` is relative to the table's root (``events``, ``rounds``...). A mapping
    payload is signed with the table's identity (``auth/evidence.py``: its canonical
    JSON with the signature as its last member; compact JSON without an identity);
    bytes and str are stored as is (a round's body, sealed by the journal itself).
    """

    topic: str
    payload: JSON | bytes | str
    qos: int = 1
    retain: bool = False
    round_id: str | None = None


@dataclass(frozen=True, slots=True)
class OutboxEntry:
    id: int
    topic: str
    payload: bytes
    qos: int
    retain: bool
    round_id: str | None
    created_at: str
    published_at: str | None


_OUTBOX_COLS = "id, topic, payload, qos, retain, round_id, created_at, published_at"
#: An entry without its "published" mark (a row of ``outbox_published``, schema 5).
_UNMARKED = "NOT EXISTS (SELECT 1 FROM outbox_published p WHERE p.id = e.id)"


def _payload_bytes(
    topic: str, payload: JSON | bytes | str, identity: TableIdentity | None
) -> bytes:
    if isinstance(payload, bytes | bytearray):
        return bytes(payload)
    if isinstance(payload, str):
        return payload.encode("utf-8")
    if identity is not None and isinstance(payload, Mapping):
        return identity.seal(topic, payload)
    return dumps(payload).encode("utf-8")


def _outbox(row: sqlite3.Row) -> OutboxEntry:
    return OutboxEntry(row[0], row[1], bytes(row[2]), row[3], bool(row[4]), row[5], row[6], row[7])


class Outbox:
    """Queue messages inside journal transactions; hand them to the publisher in order.

    The parts taking ``outbox=`` write those messages in their own transaction
    (:meth:`enqueue_in_tx`), so a lifecycle event is published if and only if the change
    it announces is committed.
    """

    def __init__(self, db: Database, identity: TableIdentity | None = None) -> None:
        self._db = db
        #: Signs what the outbox holds (None: unsigned, library use and tests).
        self.identity = identity
        #: Called after each commit that queued outbox entries.
        self._listeners: list[Callable[[], None]] = []

    @property
    def in_transaction(self) -> bool:
        """Whether a journal transaction is open: entries queued now may still roll back."""
        return self._db.in_transaction

    def add_listener(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` after each commit that queued outbox entries (wakes publishers)."""
        self._listeners.append(callback)

    def remove_listener(self, callback: Callable[[], None]) -> None:
        with contextlib.suppress(ValueError):
            self._listeners.remove(callback)

    def _wake_listeners(self) -> None:
        for cb in list(self._listeners):
            try:
                cb()
            except Exception:  # a listener must never undo a committed transaction
                log.exception("outbox listener failed")

    def enqueue_in_tx(
        self, db: sqlite3.Connection, messages: Iterable[OutboxMessage], now: str
    ) -> list[int]:
        """Write ``messages`` in the open transaction; the listeners run after its commit."""
        ids = []
        for m in messages:
            check_relative_topic(m.topic)
            if m.qos not in (0, 1, 2):
                raise ValueError(f"qos must be 0, 1 or 2, got {m.qos!r}")
            cur = db.execute(
                "INSERT INTO outbox_entries (topic, payload, qos, retain, round_id, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (
                    m.topic,
                    _payload_bytes(m.topic, m.payload, self.identity),
                    m.qos,
                    int(m.retain),
                    m.round_id,
                    now,
                ),
            )
            ids.append(int(cur.lastrowid or 0))
        if ids:
            self._db.once_after_commit(self._wake_listeners)
        return ids

    def enqueue(self, *messages: OutboxMessage) -> list[int]:
        """Queue messages for publication on their own (one transaction); return their ids."""
        now = self._db.now()
        with self._db.tx("enqueue") as db:
            return self.enqueue_in_tx(db, messages, now)

    def pending(self, limit: int = 100, *, after_id: int = 0) -> list[OutboxEntry]:
        """Unpublished entries in publication order (ascending id)."""
        return [
            _outbox(r)
            for r in self._db.sql.execute(
                "SELECT e.id, e.topic, e.payload, e.qos, e.retain, e.round_id, e.created_at, "
                f"NULL FROM outbox_entries e WHERE e.id > ? AND {_UNMARKED} ORDER BY e.id LIMIT ?",
                (after_id, limit),
            )
        ]

    def newest_retained(self) -> dict[str, int]:
        """Per topic, the id of the newest retained entry the outbox holds, published or
        not (what the broker's retained message of the topic is, or will be)."""
        return {
            str(topic): int(newest)
            for topic, newest in self._db.sql.execute(
                "SELECT topic, MAX(id) FROM outbox_entries WHERE retain = 1 GROUP BY topic"
            )
        }

    def pending_count(self) -> int:
        return int(
            self._db.sql.execute(
                f"SELECT COUNT(*) FROM outbox_entries e WHERE {_UNMARKED}"
            ).fetchone()[0]
        )

    def mark_published(self, ids: int | Iterable[int], *, at: datetime | None = None) -> int:
        """Mark entries published (after the broker's PUBACK); returns how many changed.

        Committed without its own fsync: losing a mark on power failure only means
        the entry is published again, which consumers handle (dedupe by id). A mark is a
        small row of its own (``outbox_published``): the entry, payload included, is
        never written again.
        """
        id_list = [ids] if isinstance(ids, int) else list(ids)
        if not id_list:
            return 0
        now = self._db.now(at)
        with self._db.tx("outbox_mark_published", durable=False) as db:
            return db.execute(
                "INSERT OR IGNORE INTO outbox_published (id, published_at) SELECT id, ? "
                "FROM outbox_entries WHERE id IN (SELECT value FROM json_each(?))",
                (now, json.dumps([int(i) for i in id_list])),
            ).rowcount

    def entry(self, entry_id: int) -> OutboxEntry | None:
        row = self._db.sql.execute(
            f"SELECT {_OUTBOX_COLS} FROM outbox WHERE id = ?", (entry_id,)
        ).fetchone()
        return None if row is None else _outbox(row)
