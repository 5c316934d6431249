"""The tables the floor knows and what they said: the registry (``floor_registry``:
each table's game, pit and public keys, :mod:`flooringest.registry`) and what each
announced (``floor_announced``: the newest round it announced in a message it signed,
the newest finished one, its last answer to a replay request). A part of the
:class:`~flooringest.store.Store` (``store.tables``)."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from .db import Db
from .registry import Registry, entries_to_rows, from_rows


class TableBook:
    """The registry of tables and what they announced, on the store's database."""

    def __init__(self, db: Db) -> None:
        self.db = db

    async def registry_digest(self) -> str:
        rows = await self.db.fetch("SELECT value FROM floor_meta WHERE name = 'registry_digest'")
        return str(rows[0][0]) if rows else ""

    async def import_registry(self, reg: Registry) -> dict[str, int]:
        """Make ``floor_registry`` hold exactly ``reg``: tables added, changed (game,
        pit or keys), removed (revoked: their messages are ``UNKNOWN_TABLE`` from now
        on). Idempotent: the same registry again changes nothing."""
        now = time.time()
        counts = {"tables": len(reg), "added": 0, "changed": 0, "removed": 0}
        async with self.db.transaction():
            if await self.registry_digest() == reg.digest:
                return counts
            have = {
                str(t): (g, p, k)
                for t, g, p, k in await self.db.fetch(
                    "SELECT table_id, game, pit, keys FROM floor_registry"
                )
            }
            for tid, game, pit, keys, key_ids in entries_to_rows(reg):
                old = have.pop(tid, None)
                if old == (game, pit, keys):
                    continue
                counts["added" if old is None else "changed"] += 1
                await self.db.execute(
                    "INSERT INTO floor_registry (table_id, game, pit, keys, key_ids, imported_at) "
                    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (table_id) DO UPDATE SET "
                    "game = excluded.game, pit = excluded.pit, keys = excluded.keys, "
                    "key_ids = excluded.key_ids, imported_at = excluded.imported_at",
                    tid,
                    game,
                    pit,
                    keys,
                    key_ids,
                    now,
                )
            for tid in have:
                counts["removed"] += 1
                await self.db.execute("DELETE FROM floor_registry WHERE table_id = ?", tid)
            await self.db.execute(
                "INSERT INTO floor_meta (name, value) VALUES ('registry_digest', ?) "
                "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                reg.digest,
            )
        return counts

    async def load_registry(self) -> Registry:
        return from_rows(
            await self.db.fetch("SELECT table_id, game, pit, keys FROM floor_registry")
        )

    async def registry_rows(self) -> list[dict[str, Any]]:
        return [
            {
                "table_id": str(t),
                "game": str(g),
                "pit": p,
                "key_ids": json.loads(k),
                "imported_at": float(at),
            }
            for t, g, p, k, at in await self.db.fetch(
                "SELECT table_id, game, pit, key_ids, imported_at FROM floor_registry "
                "ORDER BY table_id"
            )
        ]

    async def announced_all(self) -> dict[str, tuple[int, int, int | None, float | None]]:
        """Per table: ``(announced, finished, answered, answered_at)``."""
        return {
            str(t): (
                int(a),
                int(f),
                None if n is None else int(n),
                None if at is None else float(at),
            )
            for t, a, f, n, at in await self.db.fetch(
                "SELECT table_id, announced_seq, finished_seq, answered_seq, answered_at "
                "FROM floor_announced"
            )
        }

    async def save_announced(self, rows: Sequence[tuple[str, int, int]]) -> None:
        """``(table, announced, finished)`` a worker verified: each only raised."""
        if not rows:
            return
        now = time.time()
        await self.db.executemany(
            "INSERT INTO floor_announced (table_id, announced_seq, finished_seq, updated_at) "
            "VALUES (?, ?, ?, ?) ON CONFLICT (table_id) DO UPDATE SET "
            "announced_seq = CASE WHEN excluded.announced_seq > floor_announced.announced_seq "
            "THEN excluded.announced_seq ELSE floor_announced.announced_seq END, "
            "finished_seq = CASE WHEN excluded.finished_seq > floor_announced.finished_seq "
            "THEN excluded.finished_seq ELSE floor_announced.finished_seq END, "
            "updated_at = excluded.updated_at",
            [(t, a, f, now) for t, a, f in rows],
        )

    async def save_answer(self, table: str, newest: int) -> None:
        """The table answered a replay request: its newest round is ``newest`` (the
        announced seq may only grow; the finished one follows the table's word)."""
        now = time.time()
        await self.db.execute(
            "INSERT INTO floor_announced (table_id, announced_seq, finished_seq, answered_seq, "
            "answered_at, updated_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (table_id) DO "
            "UPDATE SET announced_seq = CASE WHEN excluded.announced_seq > "
            "floor_announced.announced_seq THEN excluded.announced_seq ELSE "
            "floor_announced.announced_seq END, finished_seq = CASE WHEN "
            "excluded.finished_seq < floor_announced.finished_seq THEN excluded.finished_seq "
            "ELSE floor_announced.finished_seq END, answered_seq = excluded.answered_seq, "
            "answered_at = excluded.answered_at, updated_at = excluded.updated_at",
            table,
            newest,
            newest,
            newest,
            now,
            now,
        )
