"""The floor's records: rounds exactly once, per-table sequence tracking, gaps, anchors,
the registry of tables and the quarantine.

Two backends behind one interface (:class:`Store`): PostgreSQL through asyncpg
(``postgresql://...``), what a casino's back office runs, and SQLite
(``sqlite:///path`` or a plain path), the embedded default for a single pit. The SQL
is written once in the subset both speak (``?`` placeholders, rewritten to ``$n`` for
PostgreSQL; ``ON CONFLICT``; ``RETURNING``).

The schema (``docs/floor.md``, "Schema"):

- ``floor_rounds``: one row per round, the payload exactly as received (UTF-8 text),
  keyed by ``round_id`` and unique by ``(table_id, seq)``; its SHA-256, its chain
  anchor (``chain_seq``, ``chain_head``), when it was received and committed, and by
  which worker. Only rounds signed by their table (:mod:`flooringest.verify`);
- ``floor_conflicts``: a verified payload that differs from the stored one under the
  same ``round_id`` or ``(table_id, seq)`` (the table promises it never happens);
- ``floor_quarantine``: every message kept aside with its code (unknown table, bad or
  missing signature, not a round, a chain that does not advance, a seq the table never
  announced), until the duties or a person release it (``released_at``, ``_by``);
- ``floor_registry``: the tables the floor knows and their public keys
  (:mod:`flooringest.registry`);
- ``floor_announced``: per table, the newest round it announced in a message it
  signed, the newest finished one, and its last answer to a replay request;
- ``floor_tables``: per table, the first seq seen, the contiguous seq (every round up
  to it is stored), the last seq seen, the rounds stored, the last anchor checked;
- ``floor_gaps``: the ranges missing below the last seq seen, when first seen and
  when a replay was last asked for;
- ``floor_anchor_faults``: rounds whose anchor failed :func:`flooringest.anchor.check`;
- ``floor_lease``: which worker runs the duties; ``floor_counters``: duplicates,
  repaired gaps, quarantined messages per code.

A batch is one transaction (:meth:`Store.ingest`); the worker acknowledges its
messages only after it returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sqlite3
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import anchor
from . import messages as m
from .messages import Incoming, Quarantined, Round
from .registry import Registry, entries_to_rows, from_rows

SCHEMA_VERSION = 2

_DDL = """
CREATE TABLE IF NOT EXISTS floor_rounds (
    round_id TEXT PRIMARY KEY,
    table_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    status TEXT NOT NULL,
    payload TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    chain_seq BIGINT,
    chain_head TEXT,
    received_at DOUBLE PRECISION NOT NULL,
    committed_at DOUBLE PRECISION NOT NULL,
    worker TEXT NOT NULL,
    UNIQUE (table_id, seq)
);
CREATE TABLE IF NOT EXISTS floor_conflicts (
    round_id TEXT NOT NULL,
    table_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    sha256 TEXT NOT NULL,
    payload TEXT NOT NULL,
    stored_round_id TEXT,
    received_at DOUBLE PRECISION NOT NULL,
    worker TEXT NOT NULL,
    PRIMARY KEY (round_id, sha256)
);
CREATE TABLE IF NOT EXISTS floor_quarantine (
    sha256 TEXT PRIMARY KEY,
    topic TEXT NOT NULL,
    table_id TEXT NOT NULL,
    seq BIGINT,
    round_id TEXT,
    code TEXT NOT NULL,
    message TEXT NOT NULL,
    payload TEXT NOT NULL,
    complete INTEGER NOT NULL,
    received_at DOUBLE PRECISION NOT NULL,
    last_seen DOUBLE PRECISION NOT NULL,
    seen BIGINT NOT NULL,
    worker TEXT NOT NULL,
    released_at DOUBLE PRECISION,
    released_by TEXT,
    release_reason TEXT
);
CREATE INDEX IF NOT EXISTS floor_quarantine_open ON floor_quarantine (table_id, code)
    WHERE released_at IS NULL;
CREATE TABLE IF NOT EXISTS floor_registry (
    table_id TEXT PRIMARY KEY,
    game TEXT NOT NULL,
    pit TEXT,
    keys TEXT NOT NULL,
    key_ids TEXT NOT NULL,
    imported_at DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS floor_announced (
    table_id TEXT PRIMARY KEY,
    announced_seq BIGINT NOT NULL,
    finished_seq BIGINT NOT NULL,
    answered_seq BIGINT,
    answered_at DOUBLE PRECISION,
    updated_at DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS floor_tables (
    table_id TEXT PRIMARY KEY,
    first_seq BIGINT NOT NULL,
    contiguous_seq BIGINT NOT NULL,
    last_seq BIGINT NOT NULL,
    anchored_seq BIGINT NOT NULL,
    chain_seq BIGINT,
    chain_head TEXT,
    without_chain BIGINT NOT NULL DEFAULT 0,
    updated_at DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS floor_gaps (
    table_id TEXT NOT NULL,
    from_seq BIGINT NOT NULL,
    to_seq BIGINT,
    found_at DOUBLE PRECISION NOT NULL,
    requested_at DOUBLE PRECISION,
    requests INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (table_id, from_seq)
);
CREATE TABLE IF NOT EXISTS floor_anchor_faults (
    table_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    round_id TEXT NOT NULL,
    code TEXT NOT NULL,
    message TEXT NOT NULL,
    found_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (table_id, seq)
);
CREATE TABLE IF NOT EXISTS floor_lease (
    name TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    until DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS floor_counters (
    name TEXT PRIMARY KEY,
    value BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS floor_meta (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
)
"""

#: The most bytes of a quarantined message kept whole; beyond (or not UTF-8), its
#: first QUARANTINE_HEAD bytes only (``complete`` 0: it can never be released).
QUARANTINE_MAX = 256 * 1024
QUARANTINE_HEAD = 512
#: The most open faults the lag and faults documents list (``faults_open`` counts all).
FAULTS_SHOWN = 500
#: Codes of what ``floor_rejects`` held before the quarantine (the lag's ``rejects``).
REJECT_CODES = (m.NOT_JSON, m.NOT_A_ROUND)


class StoreError(Exception):
    """The database cannot be reached or refused a statement (retried by the worker)."""


@dataclass
class Outcome:
    """What one batch did. ``fate``: per message (its SHA-256), ``stored``,
    ``duplicate``, ``conflict`` or the quarantine code it was kept under."""

    stored: list[Round] = field(default_factory=list)
    duplicates: int = 0
    conflicts: int = 0
    quarantined: list[Quarantined] = field(default_factory=list)
    fate: dict[str, str] = field(default_factory=dict)

    @property
    def rejects(self) -> int:
        return sum(1 for q in self.quarantined if q.code in REJECT_CODES)


@dataclass(frozen=True, slots=True)
class Gap:
    """Rounds ``from_seq..to_seq`` of a table are missing. A *tail* gap (nothing after
    ``from_seq - 1`` arrived) ends at the newest round the table announced finished
    (``to_seq`` None only in a database of an earlier version)."""

    table_id: str
    from_seq: int
    to_seq: int | None
    found_at: float = field(default=0.0, compare=False)


def _text(value: str) -> str:
    """Text a database takes: PostgreSQL's text refuses U+0000."""
    return value.replace("\x00", "\ufffd") if "\x00" in value else value


def _kept(q: Quarantined) -> tuple[str, int]:
    """What of a quarantined message is kept: ``(text, complete)``."""
    if len(q.payload) <= QUARANTINE_MAX:
        try:
            text = q.payload.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            if "\x00" not in text:
                return text, 1
    return _text(q.payload[:QUARANTINE_HEAD].decode("utf-8", "replace")), 0


#: The batch's insert on PostgreSQL, in one statement: each round checked against the
#: chain positions of its table's nearest stored rounds before and after it (by seq),
#: those that pass inserted; answers ``('i', round_id)`` per round inserted and
#: ``('b', round_id, prev, next)`` per round whose chain goes back.
_PG_INSERT = """
WITH u AS (
    SELECT * FROM unnest(?::text[], ?::text[], ?::bigint[], ?::text[], ?::text[], ?::text[],
                         ?::bigint[], ?::text[], ?::double precision[])
        AS u(round_id, table_id, seq, status, payload, sha256, chain_seq, chain_head,
             received_at)
), c AS (
    SELECT u.*,
        (SELECT r.chain_seq FROM floor_rounds r WHERE r.table_id = u.table_id
            AND r.seq < u.seq AND r.chain_seq IS NOT NULL ORDER BY r.seq DESC LIMIT 1) AS prev_c,
        (SELECT r.chain_seq FROM floor_rounds r WHERE r.table_id = u.table_id
            AND r.seq > u.seq AND r.chain_seq IS NOT NULL ORDER BY r.seq LIMIT 1) AS next_c
    FROM u
), v AS (
    SELECT c.*, (c.chain_seq IS NULL OR ((c.prev_c IS NULL OR c.chain_seq > c.prev_c)
                 AND (c.next_c IS NULL OR c.chain_seq < c.next_c))) AS ok
    FROM c
), ins AS (
    INSERT INTO floor_rounds (round_id, table_id, seq, status, payload, sha256, chain_seq,
                              chain_head, received_at, committed_at, worker)
    SELECT round_id, table_id, seq, status, payload, sha256, chain_seq, chain_head,
           received_at, ?::double precision, ?::text
    FROM v WHERE ok
    ON CONFLICT DO NOTHING RETURNING round_id
)
SELECT 'i', round_id, NULL::bigint, NULL::bigint FROM ins
UNION ALL
SELECT 'b', round_id, prev_c, next_c FROM v WHERE NOT ok
"""


def _in_batch_order(rounds: list[Round]) -> tuple[list[Round], list[Round]]:
    """Split rounds sorted by (table, seq): those whose chain follows the batch's round
    of their table before them, and those whose chain does not (checked alone, later)."""
    ok: list[Round] = []
    later: list[Round] = []
    last: tuple[str, int] | None = None
    for r in rounds:
        if r.chain is not None:
            if last is not None and last[0] == r.table_id and r.chain.seq <= last[1]:
                later.append(r)
                continue
            last = (r.table_id, r.chain.seq)
        ok.append(r)
    return ok, later


def _backwards(r: Round, prev_c: Any, next_c: Any) -> str:
    assert r.chain is not None
    if prev_c is not None and r.chain.seq <= int(prev_c):
        return (
            f"chain at {r.chain.seq}, not beyond {int(prev_c)} of the table's round before it: "
            "the table's journal went back (restored or replaced?)"
        )
    return f"chain at {r.chain.seq}, not before {next_c} of the table's round stored after it"


# -- the two databases ----------------------------------------------------------------
class _Db:
    """The few calls the store makes, the same on both databases."""

    dialect = "?"

    async def execute(self, sql: str, *args: Any) -> int:
        raise NotImplementedError

    async def fetch(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """``sql`` once per row of arguments (PostgreSQL: pipelined, not a round trip
        per row: the duties update a row per table, a thousand tables every half
        second)."""
        raise NotImplementedError

    def transaction(self) -> contextlib.AbstractAsyncContextManager[None]:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError


class _Sqlite(_Db):
    """SQLite in WAL mode, ``synchronous=FULL`` (a commit is on disk). Statements run on
    the event loop: a pit's load commits in milliseconds."""

    dialect = "sqlite"

    def __init__(self, path: str) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path, isolation_level=None, timeout=30.0)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self._lock = asyncio.Lock()

    def _run(self, sql: str, args: Sequence[Any]) -> sqlite3.Cursor:
        try:
            return self.db.execute(sql, tuple(args))
        except (sqlite3.OperationalError, sqlite3.DatabaseError) as exc:
            raise StoreError(f"sqlite: {exc}") from exc

    async def execute(self, sql: str, *args: Any) -> int:
        return self._run(sql, args).rowcount

    async def fetch(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in self._run(sql, args).fetchall()]

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        try:
            self.db.executemany(sql, [tuple(r) for r in rows])
        except (sqlite3.OperationalError, sqlite3.DatabaseError) as exc:
            raise StoreError(f"sqlite: {exc}") from exc

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        async with self._lock:
            self._run("BEGIN IMMEDIATE", ())
            try:
                yield
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    self.db.execute("ROLLBACK")
                raise
            self._run("COMMIT", ())

    async def script(self, sql: str) -> None:
        self.db.executescript(sql)

    async def close(self) -> None:
        self.db.close()


_QMARK = re.compile(r"\?")


def _dollars(sql: str) -> str:
    n = 0

    def sub(_m: re.Match[str]) -> str:
        nonlocal n
        n += 1
        return f"${n}"

    return _QMARK.sub(sub, sql)


class _Postgres(_Db):
    """PostgreSQL through one asyncpg connection (each worker has its own)."""

    dialect = "postgresql"

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.conn: Any = None
        self._lock = asyncio.Lock()
        self._tx: Any = None

    async def connect(self, timeout: float = 10.0) -> None:
        import asyncpg

        try:
            self.conn = await asyncpg.connect(self.dsn, timeout=timeout)
        except Exception as exc:  # refused, unreachable, starting up, timed out
            raise StoreError(f"postgresql: cannot connect: {exc}") from exc

    async def _ensure(self) -> Any:
        if self.conn is None or self.conn.is_closed():
            await self.connect()
        return self.conn

    @staticmethod
    def _error(exc: BaseException) -> StoreError:
        return StoreError(f"postgresql: {type(exc).__name__}: {exc}")

    @contextlib.asynccontextmanager
    async def _turn(self) -> AsyncIterator[None]:
        """One statement at a time on the connection (inside a transaction, the
        transaction holds the lock already)."""
        if self._tx is not None:
            yield
        else:
            async with self._lock:
                yield

    async def execute(self, sql: str, *args: Any) -> int:

        try:
            async with self._turn():
                conn = await self._ensure()
                status = await conn.execute(_dollars(sql), *args)
        except Exception as exc:  # asyncpg's errors, OSError, its internal state errors
            await self._drop()
            raise self._error(exc) from exc
        tail = str(status).rsplit(" ", 1)[-1]
        return int(tail) if tail.isdigit() else 0

    async def fetch(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:

        try:
            async with self._turn():
                conn = await self._ensure()
                rows = await conn.fetch(_dollars(sql), *args)
        except Exception as exc:  # asyncpg's errors, OSError, its internal state errors
            await self._drop()
            raise self._error(exc) from exc
        return [tuple(r) for r in rows]

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        try:
            async with self._turn():
                conn = await self._ensure()
                await conn.executemany(_dollars(sql), rows)
        except Exception as exc:  # asyncpg's errors, OSError, its internal state errors
            await self._drop()
            raise self._error(exc) from exc

    async def _drop(self) -> None:
        if self.conn is not None and self._tx is None:
            with contextlib.suppress(Exception):
                self.conn.terminate()
            self.conn = None

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:

        async with self._lock:
            conn = await self._ensure()
            tx = conn.transaction()
            try:
                await tx.start()
            except Exception as exc:  # asyncpg's errors, OSError, its internal state errors
                await self._drop()
                raise self._error(exc) from exc
            self._tx = tx
            try:
                yield
            except BaseException:
                self._tx = None
                with contextlib.suppress(Exception):
                    await tx.rollback()
                await self._drop()
                raise
            self._tx = None
            try:
                await tx.commit()
            except Exception as exc:  # asyncpg's errors, OSError, its internal state errors
                await self._drop()
                raise self._error(exc) from exc

    async def close(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(Exception):
                await self.conn.close(timeout=5)
            self.conn = None


# -- the store --------------------------------------------------------------------------
class Store:
    """The floor's records on one database (:func:`open_store`)."""

    def __init__(self, db: _Db, url: str) -> None:
        self.db = db
        self.url = url

    @property
    def dialect(self) -> str:
        return self.db.dialect

    async def init(self) -> None:
        """Create the schema where it is missing (idempotent; several workers may race:
        PostgreSQL's concurrent ``CREATE TABLE IF NOT EXISTS`` is retried once)."""
        for attempt in (1, 2):
            try:
                async with self.db.transaction():
                    for stmt in _DDL.split(";"):
                        if stmt.strip():
                            await self.db.execute(stmt)
                    await self.db.execute(
                        "INSERT INTO floor_meta (name, value) VALUES ('schema_version', ?) "
                        "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                        str(SCHEMA_VERSION),
                    )
                    await self.db.execute(
                        "INSERT INTO floor_lease (name, holder, until) VALUES ('duties', '', 0) "
                        "ON CONFLICT (name) DO NOTHING"
                    )
                return
            except StoreError:
                if attempt == 2:
                    raise
                await asyncio.sleep(0.2)

    async def close(self) -> None:
        await self.db.close()

    # -- one batch, one transaction --------------------------------------------------
    async def ingest(self, items: Iterable[Round | Quarantined], worker: str) -> Outcome:
        """Store a batch of verified rounds and quarantined messages (what
        :class:`flooringest.verify.Verifier` made of the messages received) in ONE
        transaction: each round once (a duplicate of a stored round, same bytes, is
        counted and dropped; different bytes under its round id or its ``(table,
        seq)`` are kept in ``floor_conflicts``); a round whose chain position is not
        between those of the table's nearest stored rounds before and after it (by
        ``seq``) is quarantined ``CHAIN_NOT_ADVANCING``; every quarantined message is
        kept in ``floor_quarantine``. Raises :class:`StoreError` when nothing was
        committed."""
        out = Outcome()
        rounds: list[Round] = []
        quarantine: list[Quarantined] = []
        for x in items:
            if isinstance(x, Round):
                rounds.append(x)
            else:
                quarantine.append(x)
        # One order for every worker: two transactions never wait on each other in a circle.
        rounds.sort(key=lambda r: (r.table_id, r.seq, r.round_id))
        # The same round twice in one batch (a redelivery beside the first): once; the
        # same round id with other bytes: checked against the stored one below.
        first: dict[str, Round] = {}
        others: list[Round] = []
        for r in rounds:
            if r.round_id not in first:
                first[r.round_id] = r
            elif first[r.round_id].sha256 == r.sha256:
                out.duplicates += 1
                out.fate[r.sha256] = "duplicate"
            else:
                others.append(r)
        now = time.time()
        fresh = list(first.values())
        #: Rounds whose chain goes back: quarantined, with why.
        held: list[tuple[Round, str]] = []
        #: PostgreSQL: rounds whose chain does not follow the round of this batch before
        #: them; checked again, alone, once the others are stored.
        later: list[Round] = []
        inserted: set[str] = set()
        pg = self.db.dialect == "postgresql"
        if pg and fresh:
            fresh, later = _in_batch_order(fresh)
            # The batch in ONE statement outside any explicit transaction: atomic, and
            # durable when it returns (synchronous_commit), in one round trip instead of
            # three (BEGIN, INSERT, COMMIT): this machine's syscalls are the ingest's cost.
            # One statement per batch, always the same text (prepared once): arrays. The
            # chain check against the table's nearest stored rounds is in it (the duties'
            # anchor step, flooringest/anchor.py, stays the second line for two workers
            # storing neighbours at once).
            rows = await self.db.fetch(
                _PG_INSERT,
                [r.round_id for r in fresh],
                [r.table_id for r in fresh],
                [r.seq for r in fresh],
                [r.status for r in fresh],
                [r.text for r in fresh],
                [r.sha256 for r in fresh],
                [r.chain.seq if r.chain else None for r in fresh],
                [r.chain.head if r.chain else None for r in fresh],
                [r.received_at for r in fresh],
                now,
                worker,
            )
            by_id = {r.round_id: r for r in fresh}
            bad: set[str] = set()
            for kind, rid, prev_c, next_c in rows:
                if kind == "i":
                    inserted.add(str(rid))
                else:
                    r = by_id[str(rid)]
                    bad.add(r.round_id)
                    held.append((r, _backwards(r, prev_c, next_c)))
            if bad:
                fresh = [r for r in fresh if r.round_id not in bad]

        async def insert(r: Round) -> bool:
            n = await self.db.execute(
                "INSERT INTO floor_rounds (round_id, table_id, seq, status, payload, "
                "sha256, chain_seq, chain_head, received_at, committed_at, worker) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
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
                worker,
            )
            return n == 1

        async def rest() -> None:
            nonlocal fresh
            if not pg:
                backwards = await self._chain_check(fresh)
                if backwards:
                    held.extend(
                        (r, backwards[r.round_id]) for r in fresh if r.round_id in backwards
                    )
                    fresh = [r for r in fresh if r.round_id not in backwards]
                for r in fresh:
                    if await insert(r):
                        inserted.add(r.round_id)
            for r in later:  # PostgreSQL: after the batch's other rounds, alone
                why = (await self._chain_check([r])).get(r.round_id)
                if why is not None:
                    held.append((r, why))
                    continue
                fresh.append(r)
                if await insert(r):
                    inserted.add(r.round_id)

            out.stored = [r for r in fresh if r.round_id in inserted]
            for r in out.stored:
                out.fate[r.sha256] = "stored"
            for r in [r for r in fresh if r.round_id not in inserted] + others:
                if await self._same(r):
                    out.duplicates += 1
                    out.fate[r.sha256] = "duplicate"
                    continue
                other = await self.db.fetch(
                    "SELECT round_id FROM floor_rounds WHERE round_id = ? "
                    "OR (table_id = ? AND seq = ?)",
                    r.round_id,
                    r.table_id,
                    r.seq,
                )
                out.conflicts += 1
                out.fate[r.sha256] = "conflict"
                await self.db.execute(
                    "INSERT INTO floor_conflicts (round_id, table_id, seq, sha256, payload, "
                    "stored_round_id, received_at, worker) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT DO NOTHING",
                    r.round_id,
                    r.table_id,
                    r.seq,
                    r.sha256,
                    r.text,
                    other[0][0] if other else None,
                    r.received_at,
                    worker,
                )
            for r, why in held:
                if await self._same(r):  # a redelivery of a stored round: not a new fault
                    out.duplicates += 1
                    out.fate[r.sha256] = "duplicate"
                    continue
                quarantine.append(
                    Quarantined(
                        "rounds", r.table_id, r.raw or r.text.encode("utf-8"),
                        m.CHAIN_NOT_ADVANCING, why, r.received_at, r.seq, r.round_id, r.sha256,
                    )
                )  # fmt: skip
            await self._quarantine(quarantine, worker)
            out.quarantined = quarantine
            for q in quarantine:
                out.fate[q.sha256] = q.code
            if out.duplicates:
                await self._count(f"duplicates:{worker}", out.duplicates)

        leftovers = (
            len(inserted) < len(fresh) or others or quarantine or held or later or out.duplicates
        )
        if not pg or leftovers:
            async with self.db.transaction():
                await rest()
        else:
            out.stored = [r for r in fresh if r.round_id in inserted]
            for r in out.stored:
                out.fate[r.sha256] = "stored"
        return out

    async def _same(self, r: Round) -> bool:
        """Whether ``r``, the same bytes, is stored already (a duplicate)."""
        return bool(
            await self.db.fetch(
                "SELECT round_id FROM floor_rounds WHERE round_id = ? AND sha256 = ? "
                "AND table_id = ? AND seq = ?",
                r.round_id,
                r.sha256,
                r.table_id,
                r.seq,
            )
        )

    async def _chain_check(self, rounds: Sequence[Round]) -> dict[str, str]:
        """The rounds (by round id) whose chain position does not lie strictly between
        those of the table's nearest rounds before and after them (by ``seq``, among the
        stored rounds and the rounds of this batch that passed before them), with why."""
        chained = [r for r in rounds if r.chain is not None]
        if not chained:
            return {}
        near: list[tuple[Any, Any, Any, Any]] = []
        if self.db.dialect == "postgresql":
            rows = await self.db.fetch(
                "SELECT u.i, p.seq, p.chain_seq, n.seq, n.chain_seq "
                "FROM unnest(?::text[], ?::bigint[]) WITH ORDINALITY AS u(t, s, i) "
                "LEFT JOIN LATERAL (SELECT r.seq, r.chain_seq FROM floor_rounds r "
                "WHERE r.table_id = u.t AND r.seq < u.s AND r.chain_seq IS NOT NULL "
                "ORDER BY r.seq DESC LIMIT 1) p ON true "
                "LEFT JOIN LATERAL (SELECT r.seq, r.chain_seq FROM floor_rounds r "
                "WHERE r.table_id = u.t AND r.seq > u.s AND r.chain_seq IS NOT NULL "
                "ORDER BY r.seq LIMIT 1) n ON true ORDER BY u.i",
                [r.table_id for r in chained],
                [r.seq for r in chained],
            )
            near = [(ps, pc, ns, nc) for _i, ps, pc, ns, nc in rows]
        else:
            for r in chained:
                before = await self.db.fetch(
                    "SELECT seq, chain_seq FROM floor_rounds WHERE table_id = ? AND seq < ? "
                    "AND chain_seq IS NOT NULL ORDER BY seq DESC LIMIT 1",
                    r.table_id,
                    r.seq,
                )
                after = await self.db.fetch(
                    "SELECT seq, chain_seq FROM floor_rounds WHERE table_id = ? AND seq > ? "
                    "AND chain_seq IS NOT NULL ORDER BY seq LIMIT 1",
                    r.table_id,
                    r.seq,
                )
                near.append((*(before[0] if before else (None, None)),
                             *(after[0] if after else (None, None))))  # fmt: skip
        bad: dict[str, str] = {}
        # The rounds of this batch that passed, per table: (seq, chain seq), in seq order.
        passed: dict[str, tuple[int, int]] = {}
        for r, (ps, pc, ns, nc) in zip(chained, near, strict=True):
            assert r.chain is not None
            prev = None if ps is None else (int(ps), int(pc))
            mine = passed.get(r.table_id)
            if mine is not None and mine[0] < r.seq and (prev is None or mine[0] > prev[0]):
                prev = mine
            if prev is not None and r.chain.seq <= prev[1]:
                bad[r.round_id] = (
                    f"chain at {r.chain.seq}, not beyond {prev[1]} of the table's round "
                    f"seq {prev[0]}: the table's journal went back (restored or replaced?)"
                )
                continue
            if ns is not None and r.chain.seq >= int(nc):
                bad[r.round_id] = (
                    f"chain at {r.chain.seq}, not before {int(nc)} of the table's round "
                    f"seq {int(ns)} stored already"
                )
                continue
            passed[r.table_id] = (r.seq, r.chain.seq)
        return bad

    async def _quarantine(self, items: Sequence[Quarantined], worker: str) -> None:
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
                _text(q.topic),
                _text(q.table_id),
                q.seq,
                None if q.round_id is None else _text(q.round_id),
                q.code,
                _text(q.message),
                text,
                complete,
                q.received_at,
                q.received_at,
                worker,
            )
        for code, n in sorted(per_code.items()):
            await self._count(f"quarantined:{code}", n)

    async def quarantine(self, items: Sequence[Quarantined], worker: str) -> None:
        """Keep quarantined messages in a transaction of their own (anchors, states and
        answers that failed their check: nothing to acknowledge after it)."""
        async with self.db.transaction():
            await self._quarantine(items, worker)

    async def _count(self, name: str, n: int) -> None:
        await self.db.execute(
            "INSERT INTO floor_counters (name, value) VALUES (?, ?) "
            "ON CONFLICT (name) DO UPDATE SET value = floor_counters.value + excluded.value",
            name,
            n,
        )

    # -- the duties: one worker at a time ---------------------------------------------
    async def take_lease(self, holder: str, seconds: float) -> bool:
        """Whether ``holder`` runs the duties for the next ``seconds`` (it held the
        lease, or the lease ran out)."""
        now = time.time()
        async with self.db.transaction():
            n = await self.db.execute(
                "UPDATE floor_lease SET holder = ?, until = ? "
                "WHERE name = 'duties' AND (holder = ? OR until < ?)",
                holder,
                now + seconds,
                holder,
                now,
            )
        return n == 1

    async def scan(
        self, grace_s: float, finished: dict[str, int] | None = None
    ) -> tuple[list[Gap], int]:
        """Bring ``floor_tables`` and ``floor_gaps`` up to date; return the gaps open
        longer than ``grace_s`` (a round in another worker's batch is not a gap yet)
        and the number of gaps filled since the last scan.

        ``finished``: per table, the newest round it announced finished, in a message
        it signed (its ``anchor``, its ``state``: :class:`flooringest.verify.
        Announcements`): when it is beyond the table's last stored seq, the rounds
        between are a *tail* gap (no later round will show it)."""
        now = time.time()
        async with self.db.transaction():
            # Tables seen for the first time: tracked from the first round seen.
            await self.db.execute(
                "INSERT INTO floor_tables (table_id, first_seq, contiguous_seq, last_seq, "
                "anchored_seq, updated_at) "
                "SELECT table_id, MIN(seq), MIN(seq) - 1, MIN(seq) - 1, MIN(seq) - 1, ? "
                "FROM floor_rounds WHERE table_id NOT IN (SELECT table_id FROM floor_tables) "
                "GROUP BY table_id",
                now,
            )
            rows = await self.db.fetch(
                "SELECT t.table_id, t.contiguous_seq, t.last_seq, r.seq FROM floor_tables t "
                "JOIN floor_rounds r ON r.table_id = t.table_id AND r.seq > t.contiguous_seq "
                "ORDER BY t.table_id, r.seq"
            )
            above: dict[str, tuple[int, int, list[int]]] = {}
            for tid, contig, last, seq in rows:
                above.setdefault(tid, (int(contig), int(last), []))[2].append(int(seq))
            gaps_now: dict[tuple[str, int], int | None] = {}
            updates: list[tuple[int, int, float, str]] = []
            for tid, (contig, last, seqs) in above.items():
                c = contig
                for s in seqs:
                    if s == c + 1:
                        c = s
                    else:
                        break
                expected = c + 1
                for s in seqs:
                    if s <= c:
                        continue
                    if s > expected:
                        gaps_now[(tid, expected)] = s - 1
                    expected = s + 1
                updates.append((c, max(last, seqs[-1]), now, tid))
            await self.db.executemany(
                "UPDATE floor_tables SET contiguous_seq = ?, last_seq = ?, updated_at = ? "
                "WHERE table_id = ?",
                updates,
            )
            if finished:
                gaps_now.update(await self._tails(finished))
            known = {
                (str(t), int(f)): (None if to is None else int(to), float(found), req, int(n))
                for t, f, to, found, req, n in await self.db.fetch(
                    "SELECT table_id, from_seq, to_seq, found_at, requested_at, requests "
                    "FROM floor_gaps"
                )
            }
            filled = 0
            for key, (to, _found, _req, _n) in known.items():
                if key not in gaps_now or gaps_now[key] != to:
                    await self.db.execute(
                        "DELETE FROM floor_gaps WHERE table_id = ? AND from_seq = ?", *key
                    )
                    if key not in gaps_now:
                        filled += 1
            for (tid, frm), to in gaps_now.items():
                if (tid, frm) not in known or known[(tid, frm)][0] != to:
                    await self.db.execute(
                        "INSERT INTO floor_gaps (table_id, from_seq, to_seq, found_at, "
                        "requested_at, requests) VALUES (?, ?, ?, ?, ?, ?)",
                        tid,
                        frm,
                        to,
                        known[(tid, frm)][1] if (tid, frm) in known else now,
                        known[(tid, frm)][2] if (tid, frm) in known else None,
                        known[(tid, frm)][3] if (tid, frm) in known else 0,
                    )
            if filled:
                await self._count("gaps_repaired", filled)
            old = await self.db.fetch(
                "SELECT table_id, from_seq, to_seq, found_at FROM floor_gaps WHERE found_at <= ? "
                "ORDER BY table_id, from_seq",
                now - grace_s,
            )
        return [
            Gap(str(t), int(f), None if to is None else int(to), float(fa)) for t, f, to, fa in old
        ], filled

    async def _tails(self, finished: dict[str, int]) -> dict[tuple[str, int], int | None]:
        """Tail gaps: tables whose newest finished round announced is beyond the last
        stored one."""
        out: dict[tuple[str, int], int | None] = {}
        items = sorted((t, n) for t, n in finished.items() if n > 0)
        for i in range(0, len(items), 500):
            chunk = dict(items[i : i + 500])
            marks = ", ".join("?" for _ in chunk)
            for tid, last in await self.db.fetch(
                f"SELECT table_id, last_seq FROM floor_tables WHERE table_id IN ({marks})",
                *chunk,
            ):
                if chunk[str(tid)] > int(last):
                    out[(str(tid), int(last) + 1)] = chunk[str(tid)]
        return out

    async def claim_replays(
        self, gaps: Sequence[Gap], retry_s: float, announced: dict[str, int] | None = None
    ) -> list[Gap]:
        """The gaps to ask a replay for now (never asked, or asked ``retry_s`` ago),
        marked asked, each cut at the newest round its table announced (``announced``,
        with what ``floor_announced`` holds): nothing beyond it is ever asked, and a
        gap beyond the newest round the table answered it has (after the gap was
        found) is not asked again."""
        now = time.time()
        due: list[Gap] = []
        async with self.db.transaction():
            said = await self.announced_all()
            for g in gaps:
                a, _f, answered, answered_at = said.get(g.table_id, (0, 0, None, None))
                newest = max(a, (announced or {}).get(g.table_id, 0))
                if (
                    answered is not None
                    and answered_at is not None
                    and answered_at >= g.found_at
                    and g.from_seq > answered
                ):
                    continue  # the table said it has nothing from there: asking is vain
                if g.from_seq > newest:
                    continue  # beyond anything the table announced: never asked
                to = newest if g.to_seq is None else min(g.to_seq, newest)
                held = await self.db.fetch(
                    "SELECT COUNT(DISTINCT seq) FROM floor_quarantine WHERE table_id = ? "
                    "AND released_at IS NULL AND complete = 1 AND topic = 'rounds' "
                    "AND code IN (?, ?) AND seq BETWEEN ? AND ?",
                    g.table_id,
                    m.SEQ_NOT_ANNOUNCED,
                    m.CHAIN_NOT_ADVANCING,
                    g.from_seq,
                    to,
                )
                if held and int(held[0][0]) == to - g.from_seq + 1:
                    continue  # the floor holds them, signed, awaiting a decision: not asked
                n = await self.db.execute(
                    "UPDATE floor_gaps SET requested_at = ?, requests = requests + 1 "
                    "WHERE table_id = ? AND from_seq = ? "
                    "AND (requested_at IS NULL OR requested_at <= ?)",
                    now,
                    g.table_id,
                    g.from_seq,
                    now - retry_s,
                )
                if n:
                    due.append(Gap(g.table_id, g.from_seq, to, g.found_at))
        return due

    async def verify_anchors(self, limit: int = 5000) -> int:
        """The anchor step (:mod:`flooringest.anchor`): check, in ``seq`` order, the
        rounds each table holds contiguously beyond the last one checked; record the
        faults; returns the rounds checked."""
        now = time.time()
        checked = 0
        async with self.db.transaction():
            # A round's anchor, when well formed, is in its own columns (parse() put it
            # there): its payload is read (and parsed again) only when it has none, to
            # tell a malformed anchor from an absent one. check() reads nothing else.
            rows = await self.db.fetch(
                "SELECT t.table_id, t.chain_seq, t.chain_head, r.seq, r.round_id, "
                "r.chain_seq, r.chain_head, CASE WHEN r.chain_seq IS NULL THEN r.payload END "
                "FROM floor_tables t JOIN floor_rounds r ON r.table_id = t.table_id "
                "AND r.seq > t.anchored_seq AND r.seq <= t.contiguous_seq "
                "ORDER BY t.table_id, r.seq LIMIT ?",
                limit,
            )
            state: dict[str, tuple[anchor.ChainPoint | None, int, int]] = {}
            for tid, cseq, chead, seq, rid, rseq, rhead, payload in rows:
                prev, _last, without = state.get(
                    tid,
                    (anchor.ChainPoint(int(cseq), str(chead)) if cseq is not None else None, 0, 0),
                )
                doc: Any
                if rseq is not None:
                    doc = {"chain": {"seq": int(rseq), "head": str(rhead)}}
                else:
                    try:
                        doc = json.loads(payload)
                    except (TypeError, ValueError):  # stored rounds are JSON (parse() checked)
                        doc = None
                v = anchor.check(prev, doc)
                if v.fault:
                    await self.db.execute(
                        "INSERT INTO floor_anchor_faults (table_id, seq, round_id, code, message, "
                        "found_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                        tid,
                        seq,
                        rid,
                        v.code,
                        v.message,
                        now,
                    )
                state[tid] = (
                    v.point if v.point is not None else prev,
                    int(seq),
                    without + (1 if v.code == anchor.ABSENT else 0),
                )
                checked += 1
            await self.db.executemany(
                "UPDATE floor_tables SET anchored_seq = ?, chain_seq = ?, chain_head = ?, "
                "without_chain = without_chain + ? WHERE table_id = ?",
                [
                    (last, point.seq if point else None, point.head if point else None, w, tid)
                    for tid, (point, last, w) in state.items()
                ],
            )
        return checked

    # -- what the status shows ----------------------------------------------------------
    async def lag(self) -> dict[str, Any]:
        """Per table: last seq seen, contiguous seq, gaps open, last anchor, what the
        table announced; totals; the open faults."""
        tables: dict[str, dict[str, Any]] = {}
        for tid, first, contig, last, anchored, cseq, chead, without in await self.db.fetch(
            "SELECT table_id, first_seq, contiguous_seq, last_seq, anchored_seq, chain_seq, "
            "chain_head, without_chain FROM floor_tables ORDER BY table_id"
        ):
            tables[str(tid)] = {
                "first_seq": int(first),
                "contiguous_seq": int(contig),
                "last_seq": int(last),
                "anchored_seq": int(anchored),
                "anchor": None if cseq is None else f"{int(cseq)}:{chead}",
                "without_chain": int(without),
                "announced_seq": None,
                "gaps": [],
            }
        for tid, (a, _f, _ans, _at) in (await self.announced_all()).items():
            if tid in tables:
                tables[tid]["announced_seq"] = a
        gaps = await self.db.fetch(
            "SELECT table_id, from_seq, to_seq, requests FROM floor_gaps ORDER BY table_id, from_seq"
        )
        for tid, frm, to, req in gaps:
            if str(tid) in tables:
                tables[str(tid)]["gaps"].append(
                    {
                        "from_seq": int(frm),
                        "to_seq": None if to is None else int(to),
                        "replays_asked": int(req),
                    }
                )
        # The faults before the counters: a fault shown is counted (the counters are
        # written in the transaction that quarantines).
        open_faults = await self.faults()
        counters = dict(await self.db.fetch("SELECT name, value FROM floor_counters"))
        (rounds,) = (await self.db.fetch("SELECT COUNT(*) FROM floor_rounds"))[0]
        (conflicts,) = (await self.db.fetch("SELECT COUNT(*) FROM floor_conflicts"))[0]
        (faults,) = (await self.db.fetch("SELECT COUNT(*) FROM floor_anchor_faults"))[0]
        marks = ", ".join("?" for _ in REJECT_CODES)
        (rejects,) = (
            await self.db.fetch(
                f"SELECT COUNT(*) FROM floor_quarantine WHERE code IN ({marks})", *REJECT_CODES
            )
        )[0]
        lease = await self.db.fetch("SELECT holder, until FROM floor_lease WHERE name = 'duties'")
        return {
            "schema_version": 2,
            "at": time.time(),
            "rounds": int(rounds),
            "tables": tables,
            "gaps_open": len(gaps),
            "gaps_repaired": int(counters.get("gaps_repaired", 0)),
            "duplicates": sum(int(v) for k, v in counters.items() if k.startswith("duplicates:")),
            "conflicts": int(conflicts),
            "rejects": int(rejects),
            "anchor_faults": int(faults),
            "quarantined": {
                k.split(":", 1)[1]: int(v)
                for k, v in sorted(counters.items())
                if k.startswith("quarantined:")
            },
            "quarantine_open": sum(f["count"] for f in open_faults if f["source"] == "quarantine"),
            "faults_open": len(open_faults),
            # The first FAULTS_SHOWN (by table and code): a flood of fake tables must not
            # make the lag and faults topics grow without bound; faults_open counts all.
            "faults": open_faults[:FAULTS_SHOWN],
            "registry_tables": int(
                (await self.db.fetch("SELECT COUNT(*) FROM floor_registry"))[0][0]
            ),
            "duties": {"holder": lease[0][0], "until": float(lease[0][1])} if lease else None,
        }

    async def faults(self) -> list[dict[str, Any]]:
        """The floor's open faults, per table and code: quarantined messages not
        released, anchor faults, conflicts; each with its count and when it was first
        and last seen (epoch seconds)."""
        out: list[dict[str, Any]] = []
        for tid, code, n, first, last in await self.db.fetch(
            "SELECT table_id, code, COUNT(*), MIN(received_at), MAX(last_seen) "
            "FROM floor_quarantine WHERE released_at IS NULL GROUP BY table_id, code"
        ):
            out.append(_fault("quarantine", tid, code, n, first, last))
        for tid, code, n, first, last in await self.db.fetch(
            "SELECT table_id, code, COUNT(*), MIN(found_at), MAX(found_at) "
            "FROM floor_anchor_faults GROUP BY table_id, code"
        ):
            out.append(_fault("anchor", tid, code, n, first, last))
        for tid, n, first, last in await self.db.fetch(
            "SELECT table_id, COUNT(*), MIN(received_at), MAX(received_at) "
            "FROM floor_conflicts GROUP BY table_id"
        ):
            out.append(_fault("conflict", tid, "CONFLICT", n, first, last))
        out.sort(key=lambda f: (f["table_id"], f["code"]))
        return out

    async def rounds_of(self, table_id: str) -> list[tuple[int, str]]:
        """``(seq, payload)`` of a table's rounds in ``seq`` order, payloads as received."""
        return [
            (int(s), str(p))
            for s, p in await self.db.fetch(
                "SELECT seq, payload FROM floor_rounds WHERE table_id = ? ORDER BY seq",
                table_id,
            )
        ]

    async def anchor_faults(self) -> list[dict[str, Any]]:
        return [
            {"table_id": t, "seq": int(s), "round_id": r, "code": c, "message": m}
            for t, s, r, c, m in await self.db.fetch(
                "SELECT table_id, seq, round_id, code, message FROM floor_anchor_faults "
                "ORDER BY table_id, seq"
            )
        ]

    # -- the registry -----------------------------------------------------------------------
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

    # -- what the tables announced ---------------------------------------------------------
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

    # -- the quarantine ------------------------------------------------------------------------
    async def quarantined(
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
        said = {t: a for t, (a, _f, _n, _at) in (await self.announced_all()).items()}
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

    async def quarantined_rounds(
        self, code: str, limit: int = 200
    ) -> list[tuple[str, str, bytes, float]]:
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

    async def chain_ok(self, r: Round) -> str | None:
        """Why ``r``'s chain does not lie between its stored neighbours' (None: it does).
        Changes nothing."""
        return (await self._chain_check([r])).get(r.round_id)

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
                "SELECT round_id, seq FROM floor_rounds WHERE round_id = ? "
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
            await self._count("released", 1)
        return None

    # -- the floor's record of each table ---------------------------------------------------
    async def last_seqs(self) -> dict[str, int]:
        """Per table, the highest seq stored (``floor_tables.last_seq``, brought up to
        date by :meth:`scan`)."""
        return {
            str(t): int(last)
            for t, last in await self.db.fetch("SELECT table_id, last_seq FROM floor_tables")
        }

    async def records(
        self, known: dict[str, int], last: dict[str, int] | None = None
    ) -> list[tuple[str, int, str, int | None, str | None]]:
        """The tables whose highest stored seq (``last``, or :meth:`last_seqs`) is not
        ``known[table]``: ``(table, seq, round_id, chain_seq, chain_head)`` of that
        round."""
        if last is None:
            last = await self.last_seqs()
        changed = [t for t, s in last.items() if known.get(t) != s]
        out: list[tuple[str, int, str, int | None, str | None]] = []
        for i in range(0, len(changed), 500):
            chunk = changed[i : i + 500]
            marks = ", ".join("?" for _ in chunk)
            for t, s, rid, cs, ch in await self.db.fetch(
                "SELECT t.table_id, r.seq, r.round_id, r.chain_seq, r.chain_head "
                "FROM floor_tables t JOIN floor_rounds r ON r.table_id = t.table_id "
                f"AND r.seq = t.last_seq WHERE t.table_id IN ({marks})",
                *chunk,
            ):
                out.append((str(t), int(s), str(rid), None if cs is None else int(cs),
                            None if ch is None else str(ch)))  # fmt: skip
        return out

    async def open_quarantine_tables(self, code: str) -> list[str]:
        """The tables with a message quarantined under ``code`` and not released."""
        return [
            str(t)
            for (t,) in await self.db.fetch(
                "SELECT DISTINCT table_id FROM floor_quarantine "
                "WHERE released_at IS NULL AND code = ?",
                code,
            )
        ]


def _fault(source: str, tid: Any, code: Any, n: Any, first: Any, last: Any) -> dict[str, Any]:
    return {
        "table_id": str(tid),
        "code": str(code),
        "source": source,
        "count": int(n),
        "first_seen": float(first),
        "last_seen": float(last),
    }


def is_postgres(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://"))


async def open_store(url: str) -> Store:
    """``postgresql://user@host:port/db`` or ``sqlite:///path`` (or a plain path)."""
    if is_postgres(url):
        pg = _Postgres(url)
        await pg.connect()
        store = Store(pg, url)
    else:
        path = url[len("sqlite://") :] if url.startswith("sqlite://") else url
        store = Store(_Sqlite(path), url)
    await store.init()
    return store


__all__ = [
    "Gap",
    "Incoming",
    "Outcome",
    "Quarantined",
    "Round",
    "Store",
    "StoreError",
    "open_store",
]
