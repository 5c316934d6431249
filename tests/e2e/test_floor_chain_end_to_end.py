"""Issue 18, the floor end to end, over a real mosquitto: a real table daemon (its
result device simulated, its audit chain keyed, its requests signed) plays rounds;
the floor ingest stores them (SQLite); the floor loses two rounds (its session gone
while it was down) and repairs them with a signed ``replay_rounds`` answered by the
daemon; ``tablectl floor-ingest anchors`` exports the table's rounds as stored;
``tablectl audit verify --anchors`` passes on the table's journal with them. Then the
journal is tampered with, as someone with write access to the file would (a stake
raised; the last round deleted with its chain entries) and the same verify fails,
naming the row or the round (``docs/reliability.md``, "Evidence"; ``docs/floor.md``)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from flooringest.store import open_store
from flooringest.worker import IngestSettings, IngestWorker
from tablesim.demo import DemoTable

pytestmark = pytest.mark.slow

GAME = "roulette"


class Ingest:
    """One ingest worker on this event loop. ``session_expiry_s`` 0: its session ends
    with its connection, so the rounds published while it is down are lost to it (a
    floor whose session expired), and only the table's replay can bring them back."""

    def __init__(self, settings: IngestSettings) -> None:
        self.worker = IngestWorker(settings)
        self.task = asyncio.create_task(self.worker.run())

    async def subscribed(self) -> None:
        await asyncio.wait_for(self.worker.subscribed.wait(), 30)

    async def stop(self) -> None:
        self.worker.stop()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(self.task, 10)


async def stored(db: str, table: str) -> tuple[list[tuple[int, str]], dict[str, Any]]:
    store = await open_store(db)
    try:
        return await store.rounds_of(table), await store.lag()
    finally:
        await store.close()


async def until(pred: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not await pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        await asyncio.sleep(0.1)


def attacker(path: Path) -> sqlite3.Connection:
    """Someone with write access to the journal file: the append-only triggers dropped."""
    db = sqlite3.connect(path, isolation_level=None)
    for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
        db.execute(f"DROP TRIGGER {name}")
    return db


def copy_journal(src: Path, dst: Path) -> Path:
    dst.mkdir()
    for f in src.parent.glob(src.name + "*"):  # the database and any -wal / -shm beside it
        shutil.copy2(f, dst / f.name)
    return dst / src.name


async def tablectl(*args: str) -> tuple[int, str]:
    """The real entry point, in a child process (its commands run their own event loop)."""
    proc = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "firmware_host", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc.returncode, proc.stdout + proc.stderr


async def verify(journal: Path, key: Path, anchors: Path) -> tuple[int, str]:
    return await tablectl("audit", "verify", "--journal", str(journal), "--key", str(key),
                          "--anchors", str(anchors))  # fmt: skip


async def test_daemon_to_ingest_to_anchors_to_audit_verify(
    tmp_path: Path, mosquitto_broker: Any
) -> None:
    db = f"sqlite:///{tmp_path / 'floor.sqlite3'}"
    broker = f"mqtt://{mosquitto_broker.host}:{mosquitto_broker.port}"
    t = DemoTable(GAME, broker=broker, speed=8.0, seed=18, bets=4)
    await t.start()
    ingest: Ingest | None = None
    try:
        assert t.daemon is not None and t.floor is not None
        table = t.cfg.table_id
        # The floor knows the table by its identity key (issue 28: every round signed).
        registry = tmp_path / "tables.toml"
        registry.write_text(
            f'[tables."{table}"]\ngame = "{GAME}"\nkeys = ["{t.tmp / "identity.pub"}"]\n'
        )

        def settings() -> IngestSettings:
            return IngestSettings(
                host=mosquitto_broker.host,
                port=mosquitto_broker.port,
                db=db,
                group="e2e",
                worker="w1",
                session_expiry_s=0,
                duty_interval_s=0.2,
                gap_grace_s=0.5,
                replay_retry_s=3.0,
                lag_interval_s=0.5,
                # The floor system's principal signs the replays (role floor_system).
                signer=t.principals.signer("floor"),
                registry_file=str(registry),
            )

        ingest = Ingest(settings())
        await ingest.subscribed()
        await t.play(4)

        async def holds(n: int) -> bool:
            rows, lag = await stored(db, table)
            return len(rows) == n

        await until(lambda: holds(4), 30, "the ingest to store 4 rounds")

        # The floor goes down and its session with it: two rounds never reach it.
        await ingest.stop()
        await t.play(2)
        ingest = Ingest(settings())
        await ingest.subscribed()
        await t.play(1)

        async def repaired() -> bool:
            rows, lag = await stored(db, table)
            tl = lag["tables"].get(table, {})
            return (
                len(rows) == 7
                and lag["gaps_open"] == 0
                and tl.get("anchored_seq") == tl.get("last_seq")
            )

        await until(repaired, 60, "the lost rounds replayed, stored and anchored")
        rows, lag = await stored(db, table)
        assert ingest.worker.stats.replays_asked >= 1  # the gap was repaired by a replay
        assert lag["gaps_repaired"] >= 1 and lag["conflicts"] == 0 and lag["anchor_faults"] == 0
        assert lag["rejects"] == 0
        assert [s for s, _ in rows] == list(range(rows[0][0], rows[0][0] + 7))
        # Each stored round is, byte for byte, what the table published.
        published = {json.loads(m.payload)["round_id"]: m.payload for m in t.floor.messages
                     if m.topic == "rounds"}  # fmt: skip
        for _, text in rows:
            rid = json.loads(text)["round_id"]
            assert published[rid] == text.encode(), rid
        assert all("chain" in json.loads(text) for _, text in rows)
        await ingest.stop()
        ingest = None

        # The table stops: its journal is closed and complete.
        journal = Path(t.tmp) / "journal.sqlite3"
        key = Path(t.tmp) / "audit.key"
        await t.daemon.stop("end of the test's play")
        t.daemon = None

        anchors = tmp_path / f"{table}.jsonl"
        rc, out = await tablectl(
            "floor-ingest", "anchors", "--db", db, "--table", table, "-o", str(anchors)
        )
        assert rc == 0, out
        lines = anchors.read_text().splitlines()
        assert [json.loads(x)["seq"] for x in lines] == [s for s, _ in rows]

        rc, out = await verify(journal, key, anchors)
        assert rc == 0, out
        assert out.startswith("audit OK") and "7 floor round(s) match" in out, out

        # A stake raised in the journal (a bet of the third round): named.
        victim = json.loads(rows[2][1])
        bet = victim["bets"][0]
        bad = attacker(copy_journal(journal, tmp_path / "raised"))
        bad.execute(
            "UPDATE bets SET stake = stake * 100 WHERE round_id = ? AND bet_id = ?",
            (victim["round_id"], bet["bet_id"]),
        )
        bad.close()
        rc, out = await verify(tmp_path / "raised" / journal.name, key, anchors)
        assert rc == 1, out
        first = out.splitlines()[0]
        assert "FAILED" in first and f"bet {bet['bet_id']}" in first, first
        assert victim["round_id"] in first and f"stake is {bet['stake'] * 100}" in first, first

        # The last round deleted with every chain entry from its opening on: the chain
        # left is consistent; the floor's copy names the round.
        last = json.loads(rows[-1][1])
        path = copy_journal(journal, tmp_path / "dropped")
        bad = attacker(path)
        (opened,) = bad.execute(
            "SELECT id FROM events WHERE kind = 'round_opened' AND data LIKE ?",
            (f"%{last['round_id']}%",),
        ).fetchone()
        for tbl in ("bets", "settlements", "outbox_entries", "raw_frames", "rounds"):
            bad.execute(f"DELETE FROM {tbl} WHERE round_id = ?", (last["round_id"],))
        bad.execute("DELETE FROM events WHERE id >= ?", (opened,))
        bad.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = 'events'", (opened - 1,))
        bad.close()
        rc, out = await verify(path, key, anchors)
        assert rc == 1, out
        assert "FAILED" in out.splitlines()[0], out
        assert f"round {last['round_id']} (seq {last['seq']}" in out, out
        assert "the floor holds this round; the journal does not" in out, out
    finally:
        if ingest is not None:
            await ingest.stop()
        await t.stop()
