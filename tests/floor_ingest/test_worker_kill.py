"""Issue 36 item 4, acceptance: two ingest workers (child processes) share the load on
one shared subscription into PostgreSQL; both commit; one is SIGKILLed in the middle
of a batch (its INSERT sent, held by a lock the test takes on ``floor_rounds``, its
messages not acknowledged) and started again under its name; afterwards every round
published is stored exactly once, byte for byte, and nothing is stored twice.

Killed mid-batch, the worker's statement is still in PostgreSQL: when the lock goes,
PostgreSQL runs it and commits it (nobody is left to read the answer) or not; either
way the messages were never acknowledged, so the broker delivers them again to the
worker's session when it comes back under its name: duplicates, dropped."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import pytest

from tablesim.emulator import Emulator
from tablesim.postgres import PostgresProcess

from .conftest import new_database
from .support import WorkerProcess, holdings, lag_summary, registry_of, until_stored
from .test_floor_faults import report

TABLES = 40
RATE = 4.0


def socket_ports(pid: int) -> set[int]:
    """The local TCP ports of process ``pid``'s sockets (``/proc``): which PostgreSQL
    backend serves it (``pg_stat_activity.client_port``)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as f:
                lines = f.readlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if len(cols) > 9 and cols[9] in inodes:
                ports.add(int(cols[1].rsplit(":", 1)[1], 16))
    return ports


async def per_worker(conn: Any) -> dict[str, int]:
    rows = await conn.fetch("SELECT worker, COUNT(*) FROM floor_rounds GROUP BY worker")
    return {r[0]: int(r[1]) for r in rows}


async def waiting_inserts(conn: Any) -> dict[int, int]:
    """Backends waiting on a lock with the ingest's batch statement (``flooringest.store``
    ``_PG_INSERT``; pg_stat_activity shows its first 1,024 bytes): client port ->
    backend pid."""
    rows = await conn.fetch(
        "SELECT client_port, pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
        "AND query LIKE '%WITH u AS (%unnest(%'"
    )
    return {int(r[0]): int(r[1]) for r in rows}


@pytest.mark.fault
@pytest.mark.slow
@pytest.mark.mosquitto
@pytest.mark.timeout(600)
async def test_two_workers_one_killed_mid_batch(
    tmp_path: Path,
    postgres: PostgresProcess,
    mosquitto_broker: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import asyncpg

    db = await asyncio.to_thread(new_database, postgres)
    broker = f"mqtt://{mosquitto_broker.host}:{mosquitto_broker.port}"
    emu = Emulator(mosquitto_broker.host, mosquitto_broker.port, TABLES, rate=RATE,
                   client_prefix="kill")  # fmt: skip
    reg = registry_of(emu, tmp_path)
    workers = [WorkerProcess(tmp_path, broker, db, f"w{i}", registry=reg) for i in (1, 2)]
    for w in workers:
        w.start()
    conn = await asyncpg.connect(db.replace("postgresql://", "postgres://"))
    events: list[str] = []
    t0 = time.monotonic()

    def note(what: str) -> None:
        events.append(f"{time.monotonic() - t0:6.1f} s  {what} (rounds made {emu.total_rounds})")

    play: asyncio.Task[None] | None = None
    try:
        await asyncio.sleep(3.0)  # both subscribed
        play = asyncio.create_task(emu.run())  # until paused, however slow the machine
        deadline = time.monotonic() + 60
        while True:  # both workers commit their share
            shares = await per_worker(conn) if await _has_rounds(conn) else {}
            if shares.get("w1", 0) > 20 and shares.get("w2", 0) > 20:
                break
            assert time.monotonic() < deadline, f"both workers should commit: {shares}"
            await asyncio.sleep(0.2)
        note(f"both workers committing: {shares}")
        before_kill = dict(shares)
        # Every batch from now waits on the lock: each worker's INSERT sent, its
        # messages unacknowledged.
        lock = conn.transaction()
        await lock.start()
        await conn.execute("LOCK TABLE floor_rounds IN SHARE MODE")
        assert workers[0].proc is not None
        w1_ports = socket_ports(workers[0].proc.pid)
        deadline = time.monotonic() + 30
        while True:
            waiting = await waiting_inserts(conn)
            w1_backend = next((pid for port, pid in waiting.items() if port in w1_ports), None)
            if w1_backend is not None and len(waiting) >= 2:
                break
            if time.monotonic() > deadline:
                act = await conn.fetch("SELECT pid, client_port, state, wait_event_type, "
                                       "wait_event, left(query, 200) FROM pg_stat_activity")
                raise AssertionError(f"both batches held by the lock: {waiting}; {act}")
            await asyncio.sleep(0.05)
        note(f"both workers mid-batch (INSERT waiting on the lock; w1's backend {w1_backend})")
        workers[0].kill()
        note("ingest worker w1 SIGKILLed mid-batch")
        await asyncio.sleep(1.0)
        await lock.commit()
        note("lock released: w2 commits; w1's orphaned statement runs or not")
        await asyncio.sleep(3.0)
        workers[0].start()
        note("ingest worker w1 started again under its name")
        await asyncio.sleep(3.0)
        emu.pause()
        deadline = time.monotonic() + 120
        while emu.unacknowledged():
            assert time.monotonic() < deadline, emu.unacknowledged()
            await asyncio.sleep(0.1)
        note("the tables stopped playing, every round acknowledged by the broker")
        h = await until_stored(db, emu, 120)
        note("the database holds them")
        emu.stop()
        await play
        shares = await per_worker(conn)
        dup = await conn.fetchrow(
            "SELECT COUNT(*) AS rows, COUNT(DISTINCT round_id) AS ids, "
            "COUNT(DISTINCT (table_id, seq)) AS keys FROM floor_rounds"
        )
        published = sum(len(t.sent) for t in emu.tables.values())
        lines = [
            *events,
            f"tables {TABLES}, pace {RATE}/s each",
            f"rounds published {published}; rows {dup['rows']}, distinct round ids "
            f"{dup['ids']}, distinct (table, seq) {dup['keys']}",
            f"rows per worker at the kill {before_kill}, at the end {shares}",
            f"database: {lag_summary(h)}",
        ]
        report(capsys, "floor ingest: two workers, one SIGKILLed mid-batch", lines)
        assert published == emu.total_rounds > 20 * TABLES
        assert dup["rows"] == dup["ids"] == dup["keys"] == published, lines
        assert h["missing"] == 0 and h["extra"] == 0 and h["differ"] == 0, lines
        assert h["gaps_open"] == 0 and h["conflicts"] == 0 and h["faults_open"] == 0, lines
        assert shares.get("w2", 0) > before_kill["w2"], "w2 carried on"
        assert workers[0].kills == 1
    finally:
        emu.stop()
        if play is not None:
            await asyncio.gather(play, return_exceptions=True)
        await conn.close()
        for w in workers:
            w.stop()
    assert (await holdings(db, emu))["rows"] == emu.total_rounds


async def _has_rounds(conn: Any) -> bool:
    return bool(await conn.fetchval("SELECT to_regclass('floor_rounds') IS NOT NULL"))
