"""Years of rounds (issue 36 item 3): one table's rounds for a day, as the rows held grow.

A new floor database (``flooringest.store``: keys apart, the payloads partitioned by day
on PostgreSQL) is filled in bulk, day after day, with ``tables`` tables at a real pace
(2,544 rounds a table a day: 106 an hour, the Macau mix's mean) and payloads of
``payload`` bytes; at each size of ``steps`` (days held) the bench times, on the data
as it stands:

- **a day of one table**: ``SELECT seq, payload FROM floor_rounds WHERE table_id = $1
  AND received_at`` in that day ``ORDER BY seq`` (2,544 rows), for random tables and days;
- **the chain check's neighbour lookup** at ingest, on ``floor_round_keys``;
- **the duties' look for new tables** (``flooringest.duties``), every half second on
  the duty holder.

Each as the median of its repeats, and as a ratio to the first step's (the baseline,
measured in the same run): flat means the partitions and indexes keep it independent of
the years held. The rows are made by SQL (``generate_series``), not through the ingest:
100 million rounds through the ingest would take this machine days; the rows have the
ingest's layout and indexes. Without PostgreSQL the section is skipped.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .common import Figure
from .floorrig import Database

SECTION = "floor scale"
PER_DAY = 2544  # rounds a table plays in a day at 106 an hour
JSON = Any


async def _fill_day(conn: Any, day: int, tables: int, payload: int) -> None:
    lo, hi = day * PER_DAY + 1, (day + 1) * PER_DAY
    gen = (
        f"FROM generate_series(0, {tables - 1}) t, generate_series({lo}, {hi}) s"
    )
    tid = "'bulk-' || lpad(t::text, 5, '0')"
    rid = f"{tid} || '-' || lpad(s::text, 9, '0')"
    at = f"({day} * 86400 + (s - {lo}) * (86400.0 / {PER_DAY}) + t * 0.001)"
    await conn.execute(
        "INSERT INTO floor_round_keys (round_id, table_id, seq, sha256, chain_seq, chain_head, "
        f"received_at) SELECT {rid}, {tid}, s, md5({rid}), 3 * s, md5({tid}), {at} {gen}"
    )
    await conn.execute(
        "INSERT INTO floor_rounds (round_id, table_id, seq, status, payload, sha256, chain_seq, "
        f"chain_head, received_at, committed_at, worker) SELECT {rid}, {tid}, s, 'settled', "
        f"repeat(md5({rid}), {max(1, payload // 32)}), md5({rid}), 3 * s, md5({tid}), {at}, "
        f"{at}, 'bulk' {gen}"
    )


async def _time(conn: Any, sql: str, argsets: Sequence[tuple[Any, ...]]) -> dict[str, float]:
    times = []
    rows = 0
    for args in argsets:
        t0 = time.perf_counter()
        got = await conn.fetch(sql, *args)
        times.append(time.perf_counter() - t0)
        rows += len(got)
    return {"median_ms": 1000 * statistics.median(times),
            "p90_ms": 1000 * sorted(times)[int(0.9 * (len(times) - 1))],
            "rows_per_query": rows / len(argsets)}  # fmt: skip


async def grow(
    url: str, steps: Sequence[int], tables: int, payload: int, log: Callable[[str], None]
) -> list[dict[str, JSON]]:
    import asyncpg

    from flooringest.duties import NEW_TABLES, NEW_TABLES_S
    from flooringest.store import open_store

    first = int(time.time() // 86400) - max(steps)  # the days held end today
    store = await open_store(url)
    conn = await asyncpg.connect(url.replace("postgresql://", "postgres://"))
    out: list[dict[str, JSON]] = []
    rng = random.Random(36)
    try:
        held = 0
        for step in steps:
            t0 = time.monotonic()
            while held < step:
                await store.partitions.ensure(float((first + held) * 86400), force=True)
                await _fill_day(conn, first + held, tables, payload)
                held += 1
            await conn.execute("ANALYZE floor_rounds")
            await conn.execute("ANALYZE floor_round_keys")
            fill_s = time.monotonic() - t0
            picks = [(f"bulk-{rng.randrange(tables):05d}", first + rng.randrange(held))
                     for _ in range(40)]  # fmt: skip
            day = await _time(
                conn,
                "SELECT seq, payload FROM floor_rounds WHERE table_id = $1 AND received_at >= $2 "
                "AND received_at < $3 ORDER BY seq",
                [(t, float(d * 86400), float((d + 1) * 86400)) for t, d in picks],
            )
            near = await _time(
                conn,
                "SELECT chain_seq FROM floor_round_keys WHERE table_id = $1 AND seq < $2 "
                "AND chain_seq IS NOT NULL ORDER BY seq DESC LIMIT 1",
                [(t, (d - first) * PER_DAY + rng.randrange(1, PER_DAY)) for t, d in picks],
            )
            new = await _time(
                conn,
                NEW_TABLES.replace("?", "$1"),
                [(NEW_TABLES_S,)] * 5,
            )
            size = int(await conn.fetchval("SELECT pg_database_size(current_database())"))
            rows = held * tables * PER_DAY
            r = {"days": held, "tables": tables, "rows": rows, "payload_bytes": payload,
                 "database_bytes": size, "fill_s": fill_s, "day_of_a_table": day,
                 "chain_neighbour": near, "new_tables_scan": new}  # fmt: skip
            out.append(r)
            log(f"    {held} days, {rows:,} rounds ({size / 2**30:.1f} GiB): a table's day "
                f"{day['median_ms']:.1f} ms ({day['rows_per_query']:.0f} rows), chain "
                f"neighbour {near['median_ms']:.2f} ms, new tables {new['median_ms']:.0f} ms "
                f"(filled in {fill_s:.0f} s)")  # fmt: skip
    finally:
        await conn.close()
        await store.close()
    return out


def run(
    db: Database, d: Path, steps: Sequence[int], tables: int, payload: int,
    log: Callable[[str], None],
) -> tuple[list[Figure], list[dict[str, JSON]]]:  # fmt: skip
    if db.pg is None:
        log("  years of rounds: skipped (no PostgreSQL)")
        return [], []
    log(f"  years of rounds: {tables} tables, {PER_DAY} rounds a table a day, payloads of "
        f"{payload} bytes, days held {list(steps)}...")  # fmt: skip
    url = asyncio.run(db.new("parts"))
    levels = asyncio.run(grow(url, steps, tables, payload, log))
    base = levels[0]
    figs = []
    for r in levels:
        ratio = {k: r[k]["median_ms"] / base[k]["median_ms"] if base[k]["median_ms"] else None
                 for k in ("day_of_a_table", "chain_neighbour", "new_tables_scan")}  # fmt: skip
        figs.append(Figure(
            SECTION, f"years of rounds, {r['rows']:,} rounds held ({r['days']} days): a table's day",
            r["day_of_a_table"]["median_ms"], "ms (median)", r,
            note=(f"{r['rows'] / base['rows']:.0f}x the rows of the first step, "
                  f"{ratio['day_of_a_table']:.2f}x its time; chain neighbour lookup "
                  f"{r['chain_neighbour']['median_ms']:.2f} ms ({ratio['chain_neighbour']:.2f}x), "
                  f"the duties' new-table look {r['new_tables_scan']['median_ms']:.0f} ms "
                  f"({ratio['new_tables_scan']:.2f}x); database {r['database_bytes'] / 2**30:.1f} "
                  "GiB; rows made in bulk (SQL), the ingest's layout"),
        ))  # fmt: skip
    return figs, levels


#: Schema 2's statement (before issue 36: one unpartitioned table, its primary key and
#: unique (table_id, seq) keep a round once): the baseline of :func:`insert_cost`.
OLD_PG_INSERT = """
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


async def insert_cost(
    url_old: str, url_new: str, batches: int, size: int, payload: int
) -> dict[str, JSON]:
    """The ingest's statement for a batch of ``size`` rounds (one a table), timed on
    this layout (keys apart, payloads by day: ``flooringest.store``) and on schema 2's
    (one table), the two taking turns: the ratio is the layout's cost per batch."""
    import asyncpg

    from flooringest import store as st
    from flooringest.db import _dollars
    from flooringest.store import open_store

    new_store = await open_store(url_new)
    await new_store.close()
    old = await asyncpg.connect(url_old.replace("postgresql://", "postgres://"))
    new = await asyncpg.connect(url_new.replace("postgresql://", "postgres://"))
    generic = next(s for s in st._DDL.split(";") if "TABLE IF NOT EXISTS floor_rounds " in s)
    await old.execute(generic)
    sql_old, sql_new = _dollars(OLD_PG_INSERT), _dollars(st._PG_INSERT)
    body = "x" * payload
    times: dict[str, list[float]] = {"schema 2": [], "keys and partitions": []}
    try:
        for b in range(batches):
            now = time.time()
            tids = [f"bench-{t:05d}" for t in range(size)]
            args = (
                [f"{t}-{b + 1:09d}" for t in tids], tids, [b + 1] * size, ["settled"] * size,
                [body] * size, [f"{b:064d}"] * size, [3 * (b + 1)] * size, ["h" * 64] * size,
                [now] * size, now, "w0",
            )  # fmt: skip
            turns = [("schema 2", old, sql_old), ("keys and partitions", new, sql_new)]
            if b % 2:
                turns.reverse()
            for label, conn, sql in turns:
                t0 = time.perf_counter()
                await conn.fetch(sql, *args)
                times[label].append(time.perf_counter() - t0)
    finally:
        await old.close()
        await new.close()
    med = {k: 1000 * statistics.median(v) for k, v in times.items()}
    return {"batches": batches, "rounds_per_batch": size, "payload_bytes": payload,
            "median_ms": med, "ratio": med["keys and partitions"] / med["schema 2"]}  # fmt: skip


def run_insert(db: Database, log: Callable[[str], None]) -> list[Figure]:
    if db.pg is None:
        return []
    batches, size, payload = 60, 200, 4096
    log(f"  the ingest's INSERT, {batches} batches of {size} rounds of {payload} bytes, this "
        "layout against schema 2's in turns...")  # fmt: skip
    r = asyncio.run(insert_cost(asyncio.run(db.new("ins2")), asyncio.run(db.new("ins3")),
                                batches, size, payload))  # fmt: skip
    m = r["median_ms"]
    log(f"    keys and partitions {m['keys and partitions']:.1f} ms a batch, schema 2 "
        f"{m['schema 2']:.1f} ms: {r['ratio']:.2f}x")  # fmt: skip
    return [Figure(
        SECTION, "the ingest's INSERT of a batch, keys apart and payloads by day",
        m["keys and partitions"], "ms (median)", r,
        note=(f"{r['ratio']:.2f}x schema 2's one-table statement ({m['schema 2']:.1f} ms), "
              f"measured in turns in the same run; {size} rounds of {payload} bytes a batch, "
              f"{batches} batches, each statement durable when it returns"),
    )]  # fmt: skip
