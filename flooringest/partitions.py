"""Years of rounds (issue 36): the rounds by day, their keys apart, and the archive.

- ``floor_round_keys``: one narrow row per round stored (``round_id`` primary key,
  unique ``(table_id, seq)``, its SHA-256, its chain anchor, when it was received):
  what makes a round stored once, and what the chain checks, the duties and the floor's
  records read. Kept for every round ever stored (a redelivery of an archived round
  is a duplicate, never a second copy), in both databases.
- ``floor_rounds`` (the payloads, what a back office reads): on PostgreSQL, a new
  database makes it a table **partitioned by day** of ``received_at`` (UTC), one
  partition per day (``floor_rounds_YYYYMMDD``) made ahead of time by every worker at
  start and by the duty holder once an hour (today to today + 3), and a default
  partition for a row outside them (a clock far off; never an insert that fails).
  A query of one table's day names the day's range of ``received_at`` and reads one
  partition. A database made before keeps its table as it was (not partitioned); on
  SQLite it is one table.
- **Archive** (:meth:`Partitions.archive`, ``tablectl floor-ingest archive``): every
  day before a date written to ``floor_rounds-YYYY-MM-DD.jsonl`` (each round's
  payload as received, one a line, by table and seq: what ``anchors`` writes, what
  ``tablectl audit verify --anchors`` takes) with its SHA-256 in
  ``floor_rounds-YYYY-MM-DD.jsonl.sha256``, written and synced before the day leaves
  the database: its partition detached and dropped (PostgreSQL), its rows deleted
  (otherwise). The keys stay.
"""

from __future__ import annotations

import hashlib
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .db import Db, StoreError

DAY = 86400
#: Days of partitions made ahead of today (a day's partition is made while the day
#: before is today: a round of yesterday, from a clock a little behind, finds it).
AHEAD, BEHIND = 3, 0

KEYS_DDL = """
CREATE TABLE IF NOT EXISTS floor_round_keys (
    round_id TEXT PRIMARY KEY,
    table_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    sha256 TEXT NOT NULL,
    chain_seq BIGINT,
    chain_head TEXT,
    received_at DOUBLE PRECISION NOT NULL,
    UNIQUE (table_id, seq)
);
CREATE INDEX IF NOT EXISTS floor_round_keys_received ON floor_round_keys (received_at)
"""

#: The keys of the rounds a database made before issue 36 holds (once).
FILL_KEYS = (
    "INSERT INTO floor_round_keys (round_id, table_id, seq, sha256, chain_seq, chain_head, "
    "received_at) SELECT round_id, table_id, seq, sha256, chain_seq, chain_head, received_at "
    "FROM floor_rounds WHERE true ON CONFLICT DO NOTHING"
)


def partitioned_ddl(generic: str) -> list[str]:
    """PostgreSQL's partitioned ``floor_rounds`` from the generic statement (the same
    columns): the primary key ``(round_id, received_at)`` (a partitioned table's keys
    hold its partition key; ``floor_round_keys`` keeps a round once), an index by
    ``(table_id, seq)`` in every partition, and the default partition."""
    ddl = generic.replace("round_id TEXT PRIMARY KEY", "round_id TEXT NOT NULL")
    ddl = ddl.replace("UNIQUE (table_id, seq)", "PRIMARY KEY (round_id, received_at)")
    if ddl == generic:
        raise AssertionError("floor_rounds' statement changed: partitioned_ddl follows it")
    return [
        ddl.rstrip() + " PARTITION BY RANGE (received_at)",
        "CREATE INDEX IF NOT EXISTS floor_rounds_table_seq ON floor_rounds (table_id, seq)",
        "CREATE TABLE IF NOT EXISTS floor_rounds_default PARTITION OF floor_rounds DEFAULT",
    ]


def day_of(t: float) -> int:
    return int(t // DAY)


def day_name(day: int) -> str:
    return datetime.fromtimestamp(day * DAY, UTC).strftime("%Y-%m-%d")


class Partitions:
    """The rounds by day on one database: partitions made ahead, listed, archived."""

    def __init__(self, db: Db) -> None:
        self.db = db
        self._next_check = 0.0

    async def is_partitioned(self) -> bool:
        if self.db.dialect != "postgresql":
            return False
        rows = await self.db.fetch(
            "SELECT relkind = 'p' FROM pg_class WHERE relname = 'floor_rounds' "
            "AND relnamespace = current_schema()::regnamespace"
        )
        return bool(rows) and rows[0][0] is True

    async def ensure(self, now: float | None = None, *, force: bool = False) -> list[str]:
        """Make the partitions of today to today + 3 where missing (PostgreSQL, a
        partitioned table; at most once an hour unless ``force``); the ones made."""
        now = time.time() if now is None else now
        if not force and now < self._next_check:
            return []
        self._next_check = now + 3600
        if not await self.is_partitioned():
            return []
        made = []
        have = {name for name, _lo, _hi in await self._partitions()}
        for day in range(day_of(now) - BEHIND, day_of(now) + AHEAD + 1):
            name = "floor_rounds_" + day_name(day).replace("-", "")
            if name in have:
                continue
            try:
                await self.db.execute(
                    f"CREATE TABLE IF NOT EXISTS {name} PARTITION OF floor_rounds "
                    f"FOR VALUES FROM ({day * DAY}) TO ({(day + 1) * DAY})"
                )
                made.append(name)
            except StoreError:
                # another worker made it meanwhile, or the default partition holds rows
                # of that day (the day stays in the default partition)
                self._next_check = now + 60
        return made

    async def _partitions(self) -> list[tuple[str, float | None, float | None]]:
        """PostgreSQL: each partition of floor_rounds, with its range (None: default)."""
        out: list[tuple[str, float | None, float | None]] = []
        for name, bound in await self.db.fetch(
            "SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i "
            "JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent "
            "WHERE p.relname = 'floor_rounds' AND p.relnamespace = current_schema()::regnamespace"
        ):
            text = str(bound)
            if "FROM (" in text:
                lo = float(text.split("FROM (", 1)[1].split(")", 1)[0].strip("'"))
                hi = float(text.split("TO (", 1)[1].split(")", 1)[0].strip("'"))
                out.append((str(name), lo, hi))
            else:
                out.append((str(name), None, None))
        return sorted(out, key=lambda p: (p[1] is None, p[1] or 0.0))

    async def days(self) -> list[dict[str, Any]]:
        """The days the database holds rounds of: day, rounds, and the partition (or
        None)."""
        parts = await self._partitions() if await self.is_partitioned() else []
        by_day = {day_of(lo): name for name, lo, hi in parts if lo is not None}
        rows = await self.db.fetch(
            "SELECT CAST(FLOOR(received_at / 86400) AS BIGINT) AS d, COUNT(*) FROM floor_rounds "
            "GROUP BY d ORDER BY d"
        )
        return [
            {"day": day_name(int(d)), "rounds": int(n), "partition": by_day.get(int(d))}
            for d, n in rows
        ]

    async def archive(self, before: float, directory: Path, *, page: int = 5000) -> list[dict[str, Any]]:
        """Every day wholly before ``before`` (epoch seconds) out of the database, each
        into its file first (module docstring). What was archived, per day."""
        directory.mkdir(parents=True, exist_ok=True)
        parts = await self._partitions() if await self.is_partitioned() else []
        by_day = {day_of(lo): name for name, lo, hi in parts if lo is not None}
        days = [
            int(d)
            for (d,) in await self.db.fetch(
                "SELECT DISTINCT CAST(FLOOR(received_at / 86400) AS BIGINT) FROM floor_rounds "
                "WHERE received_at < ?",
                float(day_of(before) * DAY),
            )
        ]
        # A day whose partition is empty is dropped too (made ahead, never used).
        days = sorted(set(days) | {d for d in by_day if (d + 1) * DAY <= day_of(before) * DAY})
        done = []
        for d in days:
            lo, hi = float(d * DAY), float((d + 1) * DAY)
            path = directory / f"floor_rounds-{day_name(d)}.jsonl"
            n, digest = await self._write_day(lo, hi, path, page)
            async with self.db.transaction():
                name = by_day.get(d)
                if name is not None:
                    await self.db.execute(f"ALTER TABLE floor_rounds DETACH PARTITION {name}")
                    await self.db.execute(f"DROP TABLE {name}")
                # rows of the day in the default partition, or in a table not partitioned
                await self.db.execute(
                    "DELETE FROM floor_rounds WHERE received_at >= ? AND received_at < ?", lo, hi
                )
            done.append({"day": day_name(d), "rounds": n, "file": str(path), "sha256": digest,
                         "partition": name})  # fmt: skip
        return done

    async def _write_day(self, lo: float, hi: float, path: Path, page: int) -> tuple[int, str]:
        """The day's rounds into ``path`` (by table and seq), synced, and its SHA-256
        beside it; how many and the digest. A file there already is replaced."""
        tmp = path.with_name(path.name + ".part")
        h = hashlib.sha256()
        n = 0
        after: tuple[str, int] = ("", -1)
        with open(tmp, "wb") as f:
            while True:
                rows = await self.db.fetch(
                    "SELECT table_id, seq, payload FROM floor_rounds WHERE received_at >= ? "
                    "AND received_at < ? AND (table_id > ? OR (table_id = ? AND seq > ?)) "
                    "ORDER BY table_id, seq LIMIT ?",
                    lo, hi, after[0], after[0], after[1], page,
                )  # fmt: skip
                for tid, seq, payload in rows:
                    line = str(payload).encode("utf-8") + b"\n"
                    f.write(line)
                    h.update(line)
                    n += 1
                    after = (str(tid), int(seq))
                if len(rows) < page:
                    break
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        side = path.with_name(path.name + ".sha256")
        side.write_text(f"{h.hexdigest()}  {path.name}\n", encoding="utf-8")
        with open(side, "rb") as f:
            os.fsync(f.fileno())
        fd = os.open(directory_of(path), os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        return n, h.hexdigest()


def directory_of(path: Path) -> str:
    return str(path.parent)


__all__ = ["DAY", "FILL_KEYS", "KEYS_DDL", "Partitions", "day_name", "day_of", "partitioned_ddl"]
