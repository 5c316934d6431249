"""The floor's records: rounds exactly once, per-table sequence tracking, gaps, anchors,
the registry of tables and the quarantine.

Two backends behind one interface (:mod:`flooringest.db`): PostgreSQL through asyncpg
(``postgresql://...``), what a casino's back office runs, and SQLite
(``sqlite:///path`` or a plain path), the embedded default for a single pit. The
:class:`Store` holds the rounds and, over the same database, its parts: the tables the
floor knows and what they announced (:mod:`flooringest.tables`), the quarantine
(:mod:`flooringest.quarantine`) and the duties (:mod:`flooringest.duties`).

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
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import messages as m
from .db import Db, PostgresDb, SqliteDb, StoreError, count, is_postgres
from .duties import Duties, Gap
from .messages import Incoming, Quarantined, Round
from .partitions import FILL_KEYS, KEYS_DDL, Partitions, partitioned_ddl
from .quarantine import Quarantine
from .tables import TableBook

SCHEMA_VERSION = 3

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

#: The most open faults the lag and faults documents list (``faults_open`` counts all).
FAULTS_SHOWN = 500
#: Codes of what ``floor_rejects`` held before the quarantine (the lag's ``rejects``).
REJECT_CODES = (m.NOT_JSON, m.NOT_A_ROUND)


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
        (SELECT r.chain_seq FROM floor_round_keys r WHERE r.table_id = u.table_id
            AND r.seq < u.seq AND r.chain_seq IS NOT NULL ORDER BY r.seq DESC LIMIT 1) AS prev_c,
        (SELECT r.chain_seq FROM floor_round_keys r WHERE r.table_id = u.table_id
            AND r.seq > u.seq AND r.chain_seq IS NOT NULL ORDER BY r.seq LIMIT 1) AS next_c
    FROM u
), v AS (
    SELECT c.*, (c.chain_seq IS NULL OR ((c.prev_c IS NULL OR c.chain_seq > c.prev_c)
                 AND (c.next_c IS NULL OR c.chain_seq < c.next_c))) AS ok
    FROM c
), ins AS (
    INSERT INTO floor_round_keys (round_id, table_id, seq, sha256, chain_seq, chain_head,
                                  received_at)
    SELECT round_id, table_id, seq, sha256, chain_seq, chain_head, received_at
    FROM v WHERE ok
    ON CONFLICT DO NOTHING RETURNING round_id
), payloads AS (
    INSERT INTO floor_rounds (round_id, table_id, seq, status, payload, sha256, chain_seq,
                              chain_head, received_at, committed_at, worker)
    SELECT v.round_id, v.table_id, v.seq, v.status, v.payload, v.sha256, v.chain_seq,
           v.chain_head, v.received_at, ?::double precision, ?::text
    FROM v JOIN ins ON ins.round_id = v.round_id
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


# -- the store --------------------------------------------------------------------------
class Store:
    """The floor's records on one database (:func:`open_store`): the rounds, and the
    parts that share the database: the tables the floor knows and what they announced
    (``tables``), the quarantine (``quarantine``) and the duties (``duties``). A batch
    is one transaction across them (:meth:`ingest`)."""

    def __init__(self, db: Db, url: str) -> None:
        self.db = db
        self.url = url
        self.tables = TableBook(db)
        self.quarantine = Quarantine(db, self.tables)
        self.duties = Duties(db, self.tables)
        self.partitions = Partitions(db)

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
                        if "TABLE IF NOT EXISTS floor_rounds " in stmt and await self._new_pg():
                            for part in partitioned_ddl(stmt):  # issue 36: by day
                                await self.db.execute(part)
                        elif stmt.strip():
                            await self.db.execute(stmt)
                    for stmt in KEYS_DDL.split(";"):
                        await self.db.execute(stmt)
                    if not await self.db.fetch(
                        "SELECT 1 FROM floor_meta WHERE name = 'round_keys'"
                    ):  # a database made before the keys: theirs, once
                        await self.db.execute(FILL_KEYS)
                        await self.db.execute(
                            "INSERT INTO floor_meta (name, value) VALUES ('round_keys', '1')"
                        )
                    await self.db.execute(
                        "INSERT INTO floor_meta (name, value) VALUES ('schema_version', ?) "
                        "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                        str(SCHEMA_VERSION),
                    )
                    await self.db.execute(
                        "INSERT INTO floor_lease (name, holder, until) VALUES ('duties', '', 0) "
                        "ON CONFLICT (name) DO NOTHING"
                    )
                await self.partitions.ensure(force=True)
                return
            except StoreError:
                if attempt == 2:
                    raise
                await asyncio.sleep(0.2)

    async def _new_pg(self) -> bool:
        """PostgreSQL, and no floor_rounds yet: made partitioned by day."""
        return self.db.dialect == "postgresql" and not (
            await self.db.fetch("SELECT to_regclass('floor_rounds')")
        )[0][0]

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
                "INSERT INTO floor_round_keys (round_id, table_id, seq, sha256, chain_seq, "
                "chain_head, received_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                r.round_id,
                r.table_id,
                r.seq,
                r.sha256,
                r.chain.seq if r.chain else None,
                r.chain.head if r.chain else None,
                r.received_at,
            )
            if n != 1:
                return False
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
                    "SELECT round_id FROM floor_round_keys WHERE round_id = ? "
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
            await self.quarantine.keep_in_tx(quarantine, worker)
            out.quarantined = quarantine
            for q in quarantine:
                out.fate[q.sha256] = q.code
            if out.duplicates:
                await count(self.db, f"duplicates:{worker}", out.duplicates)

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
                "SELECT round_id FROM floor_round_keys WHERE round_id = ? AND sha256 = ? "
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
                "LEFT JOIN LATERAL (SELECT r.seq, r.chain_seq FROM floor_round_keys r "
                "WHERE r.table_id = u.t AND r.seq < u.s AND r.chain_seq IS NOT NULL "
                "ORDER BY r.seq DESC LIMIT 1) p ON true "
                "LEFT JOIN LATERAL (SELECT r.seq, r.chain_seq FROM floor_round_keys r "
                "WHERE r.table_id = u.t AND r.seq > u.s AND r.chain_seq IS NOT NULL "
                "ORDER BY r.seq LIMIT 1) n ON true ORDER BY u.i",
                [r.table_id for r in chained],
                [r.seq for r in chained],
            )
            near = [(ps, pc, ns, nc) for _i, ps, pc, ns, nc in rows]
        else:
            for r in chained:
                before = await self.db.fetch(
                    "SELECT seq, chain_seq FROM floor_round_keys WHERE table_id = ? AND seq < ? "
                    "AND chain_seq IS NOT NULL ORDER BY seq DESC LIMIT 1",
                    r.table_id,
                    r.seq,
                )
                after = await self.db.fetch(
                    "SELECT seq, chain_seq FROM floor_round_keys WHERE table_id = ? AND seq > ? "
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
        for tid, (a, _f, _ans, _at) in (await self.tables.announced_all()).items():
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
        (rounds,) = (await self.db.fetch("SELECT COUNT(*) FROM floor_round_keys"))[0]
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

    async def chain_ok(self, r: Round) -> str | None:
        """Why ``r``'s chain does not lie between its stored neighbours' (None: it does).
        Changes nothing."""
        return (await self._chain_check([r])).get(r.round_id)

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
                "FROM floor_tables t JOIN floor_round_keys r ON r.table_id = t.table_id "
                f"AND r.seq = t.last_seq WHERE t.table_id IN ({marks})",
                *chunk,
            ):
                out.append((str(t), int(s), str(rid), None if cs is None else int(cs),
                            None if ch is None else str(ch)))  # fmt: skip
        return out


def _fault(source: str, tid: Any, code: Any, n: Any, first: Any, last: Any) -> dict[str, Any]:
    return {
        "table_id": str(tid),
        "code": str(code),
        "source": source,
        "count": int(n),
        "first_seen": float(first),
        "last_seen": float(last),
    }


async def open_store(url: str) -> Store:
    """``postgresql://user@host:port/db`` or ``sqlite:///path`` (or a plain path)."""
    if is_postgres(url):
        pg = PostgresDb(url)
        await pg.connect()
        store = Store(pg, url)
    else:
        path = url[len("sqlite://") :] if url.startswith("sqlite://") else url
        store = Store(SqliteDb(path), url)
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
    "is_postgres",
    "open_store",
]
