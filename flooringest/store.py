"""The floor's records: rounds exactly once, per-table sequence tracking, gaps, anchors.

Two backends behind one interface (:class:`Store`): PostgreSQL through asyncpg
(``postgresql://...``), what a casino's back office runs, and SQLite
(``sqlite:///path`` or a plain path), the embedded default for a single pit. The SQL
is written once in the subset both speak (``?`` placeholders, rewritten to ``$n`` for
PostgreSQL; ``ON CONFLICT``; ``RETURNING``).

The schema (``docs/floor.md``, "Schema"):

- ``floor_rounds``: one row per round, the payload exactly as received (UTF-8 text),
  keyed by ``round_id`` and unique by ``(table_id, seq)``; its SHA-256, its chain
  anchor (``chain_seq``, ``chain_head``), when it was received and committed, and by
  which worker;
- ``floor_conflicts``: a payload that differs from the stored one under the same
  ``round_id`` or ``(table_id, seq)`` (the table promises it never happens: evidence);
- ``floor_rejects``: a message on ``rounds`` that is not a round (kept, acknowledged);
- ``floor_tables``: per table, the first seq seen, the contiguous seq (every round up
  to it is stored), the last seq seen, the rounds stored, the last anchor checked;
- ``floor_gaps``: the ranges missing below the last seq seen, when first seen and
  when a replay was last asked for;
- ``floor_anchor_faults``: rounds whose anchor failed :func:`flooringest.anchor.check`;
- ``floor_lease``: which worker runs the duties; ``floor_counters``: duplicates and
  repaired gaps, per worker.

A batch is one transaction (:meth:`Store.ingest`); the worker acknowledges its
messages only after it returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import re
import sqlite3
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import anchor

SCHEMA_VERSION = 1

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
CREATE TABLE IF NOT EXISTS floor_rejects (
    sha256 TEXT PRIMARY KEY,
    topic TEXT NOT NULL,
    reason TEXT NOT NULL,
    head TEXT NOT NULL,
    received_at DOUBLE PRECISION NOT NULL,
    worker TEXT NOT NULL
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

#: The most bytes of a rejected message kept (its head, for a person to look at).
REJECT_HEAD = 512


class StoreError(Exception):
    """The database cannot be reached or refused a statement (retried by the worker)."""


@dataclass(frozen=True, slots=True)
class Incoming:
    """One message from ``<prefix>/tables/<table>/rounds``."""

    table: str
    payload: bytes
    received_at: float


@dataclass(frozen=True, slots=True)
class Round:
    round_id: str
    table_id: str
    seq: int
    status: str
    text: str
    sha256: str
    chain: anchor.ChainPoint | None
    received_at: float


@dataclass
class Outcome:
    """What one batch did."""

    stored: list[Round] = field(default_factory=list)
    duplicates: int = 0
    conflicts: int = 0
    rejects: int = 0


@dataclass(frozen=True, slots=True)
class Gap:
    """Rounds ``from_seq..to_seq`` of a table are missing; ``to_seq`` None: a *tail*,
    the table announced a finished round (its retained ``state``) that is not stored,
    and nothing after ``from_seq - 1`` arrived (up to the table's newest round)."""

    table_id: str
    from_seq: int
    to_seq: int | None


def parse(msg: Incoming) -> Round | str:
    """The round a message carries, or why it is not one."""
    try:
        text = msg.payload.decode("utf-8")
        doc = json.loads(text)
    except (UnicodeDecodeError, ValueError) as exc:
        return f"not JSON: {exc}"
    if not isinstance(doc, dict):
        return "not a JSON object"
    rid, tid, seq, status = (doc.get(k) for k in ("round_id", "table_id", "seq", "status"))
    if not isinstance(rid, str) or not rid:
        return "no round_id"
    if tid != msg.table:
        return f"table_id {tid!r} is not the topic's table {msg.table!r}"
    if isinstance(seq, bool) or not isinstance(seq, int) or seq < 1:
        return f"seq must be an integer >= 1, got {seq!r}"
    if status not in ("settled", "void"):
        return f"status must be settled or void, got {status!r}"
    point = anchor.parse_chain(doc)
    return Round(
        rid,
        tid,
        seq,
        status,
        text,
        hashlib.sha256(msg.payload).hexdigest(),
        point if isinstance(point, anchor.ChainPoint) else None,
        msg.received_at,
    )


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
                        "ON CONFLICT (name) DO NOTHING",
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
    async def ingest(self, batch: Iterable[Incoming], topic: str, worker: str) -> Outcome:
        """Store a batch of messages in ONE transaction: each round once (a duplicate
        of a stored round, same bytes, is counted and dropped; different bytes under
        its round id or its ``(table, seq)`` are kept in ``floor_conflicts``), and what
        is not a round in ``floor_rejects``. Raises :class:`StoreError` when nothing
        was committed."""
        out = Outcome()
        rounds: list[Round] = []
        rejects: list[tuple[Incoming, str]] = []
        for msg in batch:
            r = parse(msg)
            if isinstance(r, str):
                rejects.append((msg, r))
            else:
                rounds.append(r)
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
            else:
                others.append(r)
        now = time.time()
        fresh = list(first.values())
        inserted: set[str] = set()
        pg = self.db.dialect == "postgresql"
        if pg:
            # The batch in ONE statement outside any explicit transaction: atomic, and
            # durable when it returns (synchronous_commit), in one round trip instead of
            # three (BEGIN, INSERT, COMMIT): this machine's syscalls are the ingest's cost.
            # One statement per batch, always the same text (prepared once): arrays.
            rows = await self.db.fetch(
                "INSERT INTO floor_rounds (round_id, table_id, seq, status, payload, sha256, "
                "chain_seq, chain_head, received_at, committed_at, worker) "
                "SELECT u.*, ?::double precision, ?::text FROM unnest(?::text[], ?::text[], "
                "?::bigint[], ?::text[], ?::text[], ?::text[], ?::bigint[], ?::text[], "
                "?::double precision[]) AS u ON CONFLICT DO NOTHING RETURNING round_id",
                now,
                worker,
                [r.round_id for r in fresh],
                [r.table_id for r in fresh],
                [r.seq for r in fresh],
                [r.status for r in fresh],
                [r.text for r in fresh],
                [r.sha256 for r in fresh],
                [r.chain.seq if r.chain else None for r in fresh],
                [r.chain.head if r.chain else None for r in fresh],
                [r.received_at for r in fresh],
            )
            inserted.update(str(row[0]) for row in rows)

        async def rest() -> None:
            if not pg:
                for r in fresh:
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
                    if n == 1:
                        inserted.add(r.round_id)

            out.stored = [r for r in fresh if r.round_id in inserted]
            for r in [r for r in fresh if r.round_id not in inserted] + others:
                same = await self.db.fetch(
                    "SELECT round_id FROM floor_rounds WHERE round_id = ? AND sha256 = ? "
                    "AND table_id = ? AND seq = ?",
                    r.round_id,
                    r.sha256,
                    r.table_id,
                    r.seq,
                )
                if same:
                    out.duplicates += 1
                    continue
                other = await self.db.fetch(
                    "SELECT round_id FROM floor_rounds WHERE round_id = ? "
                    "OR (table_id = ? AND seq = ?)",
                    r.round_id,
                    r.table_id,
                    r.seq,
                )
                out.conflicts += 1
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
            for msg, reason in rejects:
                out.rejects += 1
                await self.db.execute(
                    "INSERT INTO floor_rejects (sha256, topic, reason, head, received_at, worker) "
                    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                    hashlib.sha256(msg.payload).hexdigest(),
                    f"{topic}:{msg.table}",
                    reason,
                    msg.payload[:REJECT_HEAD].decode("utf-8", "replace"),
                    msg.received_at,
                    worker,
                )
            if out.duplicates:
                await self._count(f"duplicates:{worker}", out.duplicates)

        leftovers = len(inserted) < len(fresh) or others or rejects or out.duplicates
        if not pg or leftovers:
            async with self.db.transaction():
                await rest()
        else:
            out.stored = [r for r in fresh if r.round_id in inserted]
        return out

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
        self, grace_s: float, announced: dict[str, str] | None = None
    ) -> tuple[list[Gap], int]:
        """Bring ``floor_tables`` and ``floor_gaps`` up to date; return the gaps open
        longer than ``grace_s`` (a round in another worker's batch is not a gap yet)
        and the number of gaps filled since the last scan.

        ``announced``: per table, the last finished round its retained ``state`` names
        (``last_round_id`` while ``idle``): when it is not stored, the rounds after
        the table's last stored seq are a *tail* gap (no later round will show it)."""
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
            if announced:
                gaps_now.update(await self._tails(announced))
            known = {
                (str(t), int(f)): (None if to is None else int(to), float(found), req)
                for t, f, to, found, req in await self.db.fetch(
                    "SELECT table_id, from_seq, to_seq, found_at, requested_at FROM floor_gaps"
                )
            }
            filled = 0
            for key, (to, _found, _req) in known.items():
                if key not in gaps_now or gaps_now[key] != to:
                    await self.db.execute(
                        "DELETE FROM floor_gaps WHERE table_id = ? AND from_seq = ?", *key
                    )
                    if key not in gaps_now:
                        filled += 1
            for (tid, frm), to in gaps_now.items():
                if (tid, frm) not in known or known[(tid, frm)][0] != to:
                    await self.db.execute(
                        "INSERT INTO floor_gaps (table_id, from_seq, to_seq, found_at) "
                        "VALUES (?, ?, ?, ?)",
                        tid,
                        frm,
                        to,
                        known[(tid, frm)][1] if (tid, frm) in known else now,
                    )
            if filled:
                await self._count("gaps_repaired", filled)
            old = await self.db.fetch(
                "SELECT table_id, from_seq, to_seq FROM floor_gaps WHERE found_at <= ? "
                "ORDER BY table_id, from_seq",
                now - grace_s,
            )
        return [Gap(str(t), int(f), None if to is None else int(to)) for t, f, to in old], filled

    async def _tails(self, announced: dict[str, str]) -> dict[tuple[str, int], int | None]:
        """Tail gaps: tables whose announced last round is not stored."""
        out: dict[tuple[str, int], int | None] = {}
        items = sorted(announced.items())
        for i in range(0, len(items), 200):
            chunk = items[i : i + 200]
            marks = ", ".join("?" for _ in chunk)
            stored = {
                str(r[0])
                for r in await self.db.fetch(
                    f"SELECT round_id FROM floor_rounds WHERE round_id IN ({marks})",
                    *(rid for _, rid in chunk),
                )
            }
            missing = [tid for tid, rid in chunk if rid not in stored]
            if not missing:
                continue
            marks = ", ".join("?" for _ in missing)
            for tid, last in await self.db.fetch(
                f"SELECT table_id, last_seq FROM floor_tables WHERE table_id IN ({marks})",
                *missing,
            ):
                out[(str(tid), int(last) + 1)] = None
        return out

    async def claim_replays(self, gaps: Sequence[Gap], retry_s: float) -> list[Gap]:
        """The gaps to ask a replay for now (never asked, or asked ``retry_s`` ago),
        marked asked."""
        now = time.time()
        due: list[Gap] = []
        async with self.db.transaction():
            for g in gaps:
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
                    due.append(g)
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
        """Per table: last seq seen, contiguous seq, gaps open, last anchor; totals."""
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
                "gaps": [],
            }
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
        counters = dict(await self.db.fetch("SELECT name, value FROM floor_counters"))
        (rounds,) = (await self.db.fetch("SELECT COUNT(*) FROM floor_rounds"))[0]
        (conflicts,) = (await self.db.fetch("SELECT COUNT(*) FROM floor_conflicts"))[0]
        (rejects,) = (await self.db.fetch("SELECT COUNT(*) FROM floor_rejects"))[0]
        (faults,) = (await self.db.fetch("SELECT COUNT(*) FROM floor_anchor_faults"))[0]
        lease = await self.db.fetch("SELECT holder, until FROM floor_lease WHERE name = 'duties'")
        return {
            "schema_version": 1,
            "at": time.time(),
            "rounds": int(rounds),
            "tables": tables,
            "gaps_open": len(gaps),
            "gaps_repaired": int(counters.get("gaps_repaired", 0)),
            "duplicates": sum(int(v) for k, v in counters.items() if k.startswith("duplicates:")),
            "conflicts": int(conflicts),
            "rejects": int(rejects),
            "anchor_faults": int(faults),
            "duties": {"holder": lease[0][0], "until": float(lease[0][1])} if lease else None,
        }

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
    "Round",
    "Store",
    "StoreError",
    "open_store",
    "parse",
]
