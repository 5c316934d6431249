"""Issue 36 item 3: years of rounds. On PostgreSQL a new database keeps the payloads
partitioned by day (``floor_rounds_YYYYMMDD``, made ahead; a default partition for a
stray clock); each round is kept once by its key (``floor_round_keys``), whatever day
a redelivery arrives on; ``archive`` writes every day before a date to a file (the
payloads as received, by table and seq, with its SHA-256) before taking it out of the
database, and the keys stay; a database made before the keys gets them at its next
opening (``flooringest/partitions.py``)."""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import time
from pathlib import Path

import pytest

from flooringest.cli import cmd_archive
from flooringest.messages import Incoming
from flooringest.partitions import DAY, day_name
from flooringest.store import Store, open_store
from tablesim.postgres import PostgresProcess

from .conftest import new_database
from .signing import Tables, verified


def today() -> int:
    """The UTC day number now (not at import: a suite run crossed midnight and the
    store's partitions, made when it opened, were the next day's)."""
    return int(time.time() // DAY)


@pytest.fixture
def tables() -> Tables:
    return Tables("T1", "T2")


@pytest.fixture
def postgres_url(postgres: PostgresProcess) -> str:
    return new_database(postgres)


def at(tables: Tables, table: str, seq: int, day: int, second: float = 3600.0) -> Incoming:
    """Round ``seq`` of ``table`` received on ``day`` (days since the epoch)."""
    return Incoming(table, tables.round(table, seq), day * DAY + second + seq)


async def put(store: Store, tables: Tables, msgs: list[Incoming]) -> tuple[int, int]:
    out = await store.ingest(verified(tables, msgs), "w1")
    return len(out.stored), out.duplicates


async def where(store: Store) -> dict[str, str]:
    """PostgreSQL: the partition holding each round."""
    rows = await store.db.fetch("SELECT round_id, tableoid::regclass::text FROM floor_rounds")
    return {str(r): str(p) for r, p in rows}


async def test_postgres_keeps_the_rounds_by_day_each_once(postgres_url: str, tables: Tables) -> None:
    now_day = today()
    store = await open_store(postgres_url)
    try:
        assert await store.partitions.is_partitioned()
        names = {d for (d,) in await store.db.fetch(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = 'floor_rounds'")}  # fmt: skip
        want = {"floor_rounds_" + day_name(d).replace("-", "") for d in range(now_day, now_day + 4)}
        assert want | {"floor_rounds_default"} == names
        t = tables
        assert await put(store, t, [at(t, "T1", 1, now_day), at(t, "T1", 2, now_day + 1),
                                    at(t, "T2", 1, now_day - 400)]) == (3, 0)  # fmt: skip
        parts = await where(store)
        rid = {json.loads(t.round("T1", s))["round_id"]: s for s in (1, 2)}
        by_seq = {rid[r]: p for r, p in parts.items() if r in rid}
        assert by_seq == {1: "floor_rounds_" + day_name(now_day).replace("-", ""),
                          2: "floor_rounds_" + day_name(now_day + 1).replace("-", "")}  # fmt: skip
        assert "floor_rounds_default" in parts.values(), "a stray clock's round: the default"
        # The same round received again on another day (a redelivery after an outage,
        # a replay): its key is taken; a duplicate, not a second row in another partition.
        assert await put(store, t, [at(t, "T1", 1, now_day + 2)]) == (0, 1)
        (n,) = (await store.db.fetch("SELECT COUNT(*) FROM floor_rounds"))[0]
        assert n == 3
        # A query of one table's day reads that day's partition only.
        plan = await store.db.fetch(
            "EXPLAIN SELECT payload FROM floor_rounds WHERE table_id = ? AND received_at >= ? "
            "AND received_at < ?", "T1", float(now_day * DAY), float((now_day + 1) * DAY))
        text = "\n".join(str(r[0]) for r in plan)
        assert "floor_rounds_" + day_name(now_day).replace("-", "") in text
        assert "floor_rounds_" + day_name(now_day + 1).replace("-", "") not in text, text
        # made ahead: the day after the last partition, once the clock gets there
        made = await store.partitions.ensure(float((now_day + 2) * DAY), force=True)
        assert made == ["floor_rounds_" + day_name(d).replace("-", "") for d in (now_day + 4, now_day + 5)]
        assert await store.partitions.ensure(float((now_day + 2) * DAY)) == [], "once an hour"
    finally:
        await store.close()


async def test_archive_writes_each_day_then_takes_it_out(
    db_url: str, tables: Tables, tmp_path: Path
) -> None:
    now_day = today()
    store = await open_store(db_url)
    t = tables
    days = (now_day - 2, now_day - 1, now_day)
    msgs = [at(t, tid, 3 * i + k + 1, d, second=60.0 * k)
            for i, d in enumerate(days) for tid in ("T1", "T2") for k in range(3)]  # fmt: skip
    try:
        # the partitions of two days ago on (made then, had the floor run then)
        await store.partitions.ensure(float((now_day - 2) * DAY), force=True)
        assert (await put(store, t, msgs))[0] == len(msgs)
        held = await store.partitions.days()
        assert [(d["day"], d["rounds"]) for d in held] == [(day_name(d), 6) for d in days]
        if store.dialect == "postgresql":
            assert all(d["partition"] for d in held)
    finally:
        await store.close()
    # Every day before today, through the command.
    out = tmp_path / "archive"
    before = float(now_day * DAY)
    args = argparse.Namespace(db=db_url, before=before, dir=str(out))
    assert await asyncio.to_thread(cmd_archive, args) == 0
    for i, d in enumerate(days[:2]):
        f = out / f"floor_rounds-{day_name(d)}.jsonl"
        data = f.read_bytes()
        # the payloads as received (the signed bytes), by table and seq: written from
        # the messages themselves, not read back through the code under test
        want = b"".join(m.payload + b"\n" for m in sorted(
            (m for m in msgs if int(m.received_at // DAY) == d), key=lambda m: (m.table, m.received_at)))  # fmt: skip
        assert data == want, day_name(d)
        side = (out / f"floor_rounds-{day_name(d)}.jsonl.sha256").read_text()
        assert side == f"{hashlib.sha256(data).hexdigest()}  {f.name}\n"
        assert i < 2
    assert not (out / f"floor_rounds-{day_name(days[2])}.jsonl").exists()
    store = await open_store(db_url)
    try:
        assert [(d["day"], d["rounds"]) for d in await store.partitions.days()] == [
            (day_name(days[2]), 6)
        ]
        (keys,) = (await store.db.fetch("SELECT COUNT(*) FROM floor_round_keys"))[0]
        assert keys == len(msgs), "the keys stay"
        # an archived round delivered again: a duplicate, not stored again
        assert await put(store, t, [msgs[0]]) == (0, 1)
        if store.dialect == "postgresql":
            gone = "floor_rounds_" + day_name(days[0]).replace("-", "")
            assert not (await store.db.fetch(f"SELECT to_regclass('{gone}')"))[0][0]
    finally:
        await store.close()
    # Archiving again: nothing left before that day.
    assert await asyncio.to_thread(cmd_archive, args) == 0
    assert len(list(out.glob("*.jsonl"))) == 2


async def test_a_database_made_before_the_keys_gets_them(tmp_path: Path, tables: Tables) -> None:
    """Schema 2 (one floor_rounds table): opened, its rounds' keys are made once, and
    a redelivery of one of its rounds is a duplicate."""
    now_day = today()
    url = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    store = await open_store(url)
    t = tables
    try:
        assert (await put(store, t, [at(t, "T1", 1, now_day), at(t, "T1", 2, now_day)]))[0] == 2
        await store.db.execute("DROP TABLE floor_round_keys")
        await store.db.execute("DELETE FROM floor_meta WHERE name = 'round_keys'")
    finally:
        await store.close()
    store = await open_store(url)
    try:
        (keys,) = (await store.db.fetch("SELECT COUNT(*) FROM floor_round_keys"))[0]
        assert keys == 2
        assert await put(store, t, [at(t, "T1", 2, now_day + 1), at(t, "T1", 3, now_day)]) == (1, 1)
    finally:
        await store.close()


def test_days_and_archive_refuse_clearly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from firmware_host.cli import main

    missing = tmp_path / "none.sqlite3"
    assert main(["floor-ingest", "days", "--db", str(missing)]) == 2
    assert main(["floor-ingest", "archive", "--db", str(missing), "--before", "2026-11-01",
                 "--dir", str(tmp_path)]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert "tablectl floor-ingest days: error:" in err and "Traceback" not in err
    assert main(["floor-ingest", "archive", "--before", "1 Nov", "--db", str(missing),
                 "--dir", str(tmp_path)]) == 2  # fmt: skip
    assert "'1 Nov' is not a day (YYYY-MM-DD)" in capsys.readouterr().err
