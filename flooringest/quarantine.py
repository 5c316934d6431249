"""The quarantine (``floor_quarantine``): every message kept aside with its code
(unknown table, bad or missing signature, not a round, a chain that does not advance, a
seq the table never announced), until the duties or a person release it. A part of the
:class:`~flooringest.store.Store` (``store.quarantine``); a batch's quarantined
messages are kept in the batch's own transaction (:meth:`Quarantine.keep_in_tx`)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from . import messages as m
from .db import Db, count
from .messages import Quarantined, Round
from .tables import TableBook

#: The most bytes of a quarantined message kept whole; beyond (or not UTF-8), its
#: first QUARANTINE_HEAD bytes only (``complete`` 0: it can never be released).
QUARANTINE_MAX = 256 * 1024
QUARANTINE_HEAD = 512


def db_text(value: str) -> str:
    """Text a database takes: PostgreSQL's text refuses U+0000."""
    return value.replace("\x00", "\ufffd") if "\x00" in value else value


def _kept(q: Quarantined) -> tuple[str, int]:
    """What of a quarantined message is kept: ``(text, complete)``."""
    if len(q.payload) <= QUARANTINE_MAX:
        try:
            decoded = q.payload.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            if "\x00" not in decoded:
                return decoded, 1
    return db_text(q.payload[:QUARANTINE_HEAD].decode("utf-8", "replace")), 0


class Quarantine:
    """Messages kept aside, read back, and released, on the store's database
    (``tables``: what the tables announced, which promotes a round kept for lack of it)."""

    def __init__(self, db: Db, tables: TableBook) -> None:
        self.db = db
        self.tables = tables

    async def keep_in_tx(self, items: Sequence[Quarantined], worker: str) -> None:
        """Keep quarantined messages (inside the caller's transaction): one row per
        message (its SHA-256); the same bytes again count as seen again."""
        if not items:
            return
        per_code: dict[str, int] = {}
        for q in items:
            text, complete = _kept(q)
            per_code[q.code] = per_code.get(q.code, 0) + 1
            await self.db.execute(
                "INSERT INTO floor_quarantine (sha256, topic, table_id, seq, round_id, code, "
                "message, payload, complete, received_at, last_seen, seen, worker) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?) "
                "ON CONFLICT (sha256) DO UPDATE SET seen = floor_quarantine.seen + 1, "
                "last_seen = excluded.last_seen, "
                "code = CASE WHEN floor_quarantine.released_at IS NULL THEN excluded.code "
                "ELSE floor_quarantine.code END, "
                "message = CASE WHEN floor_quarantine.released_at IS NULL THEN excluded.message "
                "ELSE floor_quarantine.message END",
                q.sha256,
                db_text(q.topic),
                db_text(q.table_id),
                q.seq,
                None if q.round_id is None else db_text(q.round_id),
                q.code,
                db_text(q.message),
                text,
                complete,
                q.received_at,
                q.received_at,
                worker,
            )
        for code, n in sorted(per_code.items()):
            await count(self.db, f"quarantined:{code}", n)

    async def keep(self, items: Sequence[Quarantined], worker: str) -> None:
        """Keep quarantined messages in a transaction of their own (anchors, states and
        answers that failed their check: nothing to acknowledge after it)."""
        async with self.db.transaction():
            await self.keep_in_tx(items, worker)

    async def messages(
        self,
        *,
        open_only: bool = True,
        table: str | None = None,
        code: str | None = None,
        sha256: str | None = None,
        limit: int = 1000,
    ) -> list[dict[str, Any]]:
        """Quarantined messages, oldest first (``payload`` as kept)."""
        where, args = [], []
        if open_only:
            where.append("released_at IS NULL")
        for col, val in (("table_id", table), ("code", code), ("sha256", sha256)):
            if val is not None:
                where.append(f"{col} = ?")
                args.append(val)
        sql = (
            "SELECT sha256, topic, table_id, seq, round_id, code, message, payload, complete, "
            "received_at, last_seen, seen, worker, released_at, released_by, release_reason "
            "FROM floor_quarantine"
            + (" WHERE " + " AND ".join(where) if where else "")
            + " ORDER BY received_at, sha256 LIMIT ?"
        )
        keys = ("sha256", "topic", "table_id", "seq", "round_id", "code", "message", "payload",
                "complete", "received_at", "last_seen", "seen", "worker", "released_at",
                "released_by", "release_reason")  # fmt: skip
        out = []
        for row in await self.db.fetch(sql, *args, limit):
            d = dict(zip(keys, row, strict=True))
            d["complete"] = bool(d["complete"])
            d["seq"] = None if d["seq"] is None else int(d["seq"])
            d["seen"] = int(d["seen"])
            out.append(d)
        return out

    async def announced_rounds(
        self, announced: dict[str, int], limit: int = 500
    ) -> list[tuple[str, str, bytes, float]]:
        """Open ``SEQ_NOT_ANNOUNCED`` rounds their table has announced since
        (``announced``: per table, with ``floor_announced``): ``(sha256, table,
        original bytes, received_at)``, for the duties to promote."""
        said = {t: a for t, (a, _f, _n, _at) in (await self.tables.announced_all()).items()}
        for t, a in announced.items():
            said[t] = max(a, said.get(t, 0))
        out = []
        for sha, tid, seq, payload, at in await self.db.fetch(
            "SELECT sha256, table_id, seq, payload, received_at FROM floor_quarantine "
            "WHERE released_at IS NULL AND code = ? AND complete = 1 "
            "ORDER BY table_id, seq LIMIT ?",
            m.SEQ_NOT_ANNOUNCED,
            limit * 4,
        ):
            if seq is not None and int(seq) <= said.get(str(tid), 0):
                out.append((str(sha), str(tid), str(payload).encode("utf-8"), float(at)))
                if len(out) >= limit:
                    break
        return out

    async def rounds(self, code: str, limit: int = 200) -> list[tuple[str, str, bytes, float]]:
        """Open quarantined rounds of ``code``, kept whole, in (table, seq) order:
        ``(sha256, table, original bytes, received_at)``."""
        return [
            (str(sha), str(tid), str(payload).encode("utf-8"), float(at))
            for sha, tid, payload, at in await self.db.fetch(
                "SELECT sha256, table_id, payload, received_at FROM floor_quarantine "
                "WHERE released_at IS NULL AND code = ? AND complete = 1 AND topic = 'rounds' "
                "ORDER BY table_id, seq LIMIT ?",
                code,
                limit,
            )
        ]

    async def release(self, sha256: str, by: str, reason: str) -> None:
        """Mark a quarantined message released (stored as a round, or accepted)."""
        await self.db.execute(
            "UPDATE floor_quarantine SET released_at = ?, released_by = ?, release_reason = ? "
            "WHERE sha256 = ? AND released_at IS NULL",
            time.time(),
            by,
            reason,
            sha256,
        )

    async def release_round(self, r: Round, sha256: str, by: str, reason: str) -> str | None:
        """A person accepts a quarantined round after review: stored as the round if its
        slot (round id, table and seq) is free, the release recorded, in one
        transaction. Returns why not, or None when stored."""
        now = time.time()
        async with self.db.transaction():
            rows = await self.db.fetch(
                "SELECT released_at FROM floor_quarantine WHERE sha256 = ?", sha256
            )
            if not rows:
                return f"no quarantined message {sha256}"
            if rows[0][0] is not None:
                return f"{sha256} was released already"
            taken = await self.db.fetch(
                "SELECT round_id, seq FROM floor_round_keys WHERE round_id = ? "
                "OR (table_id = ? AND seq = ?)",
                r.round_id,
                r.table_id,
                r.seq,
            )
            if taken:
                return (
                    f"the slot is not free: round {taken[0][0]} (seq {taken[0][1]}) is stored "
                    f"for table {r.table_id}"
                )
            await self.db.execute(
                "INSERT INTO floor_round_keys (round_id, table_id, seq, sha256, chain_seq, "
                "chain_head, received_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                r.round_id,
                r.table_id,
                r.seq,
                r.sha256,
                r.chain.seq if r.chain else None,
                r.chain.head if r.chain else None,
                r.received_at,
            )
            await self.db.execute(
                "INSERT INTO floor_rounds (round_id, table_id, seq, status, payload, sha256, "
                "chain_seq, chain_head, received_at, committed_at, worker) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                r.round_id,
                r.table_id,
                r.seq,
                r.status,
                r.text,
                r.sha256,
                r.chain.seq if r.chain else None,
                r.chain.head if r.chain else None,
                r.received_at,
                now,
                f"release:{by}",
            )
            await self.db.execute(
                "UPDATE floor_quarantine SET released_at = ?, released_by = ?, "
                "release_reason = ? WHERE sha256 = ?",
                now,
                by,
                reason,
                sha256,
            )
            await count(self.db, "released", 1)
        return None

    async def open_tables(self, code: str) -> list[str]:
        """The tables with a message quarantined under ``code`` and not released."""
        return [
            str(t)
            for (t,) in await self.db.fetch(
                "SELECT DISTINCT table_id FROM floor_quarantine "
                "WHERE released_at IS NULL AND code = ?",
                code,
            )
        ]
