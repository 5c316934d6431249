"""Issue 18, acceptance: 200 emulated tables and 3 ingest workers (child processes)
through a pit -> floor mosquitto bridge into PostgreSQL; during play the floor broker
and the pit broker are SIGKILLed and restarted, the bridge link is cut and restored,
an ingest worker is SIGKILLed (and started again under its name) and PostgreSQL is
killed and restarted. Afterwards the database holds every round published, exactly
once, byte for byte, in per-table seq order (1..N, no hole), and reports no open gap.
Counts printed."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from tablesim.emulator import Emulator
from tablesim.floornet import PitAndFloor
from tablesim.postgres import PostgresProcess

from .conftest import new_database
from .support import WorkerProcess, holdings, lag_summary, registry_of, until_stored

TABLES = int(os.environ.get("TABLECTL_FLOOR_TABLES", "200"))
ROUNDS = int(os.environ.get("TABLECTL_FLOOR_ROUNDS", "20"))
RATE = float(os.environ.get("TABLECTL_FLOOR_RATE", "0.5"))


def report(capsys: pytest.CaptureFixture[str], title: str, lines: list[str]) -> None:
    with capsys.disabled():
        print(f"\n  [fault] {title}")
        for line in lines:
            print(f"    {line}")


@pytest.mark.fault
@pytest.mark.slow
@pytest.mark.mosquitto
@pytest.mark.timeout(900)
async def test_floor_ingest_through_every_fault(
    tmp_path: Path, postgres: PostgresProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    db = await asyncio.to_thread(new_database, postgres)
    # Saved once a second: a broker SIGKILLed loses what it acknowledged in the last
    # second, which the ingest must then repair from the tables (replay_rounds).
    net = PitAndFloor(tmp_path, save_every_change=False)
    net.start()
    broker = f"mqtt://{net.floor.host}:{net.floor.port}"
    emu = Emulator(net.pit.host, net.pit.port, TABLES, rate=RATE, client_prefix="emu")
    reg = registry_of(emu, tmp_path)
    workers = [
        WorkerProcess(tmp_path, broker, db, f"w{i}", gap_grace=2.0, registry=reg) for i in (1, 2, 3)
    ]
    for w in workers:
        w.start()
    events: list[str] = []
    t0 = time.monotonic()

    def note(what: str) -> None:
        events.append(f"{time.monotonic() - t0:6.1f} s  {what} (rounds made {emu.total_rounds})")

    try:
        await asyncio.sleep(3.0)  # workers subscribed on the floor, bridge up
        play = asyncio.create_task(emu.run(rounds_per_table=ROUNDS))
        step = ROUNDS / RATE / 7  # the faults spread over the play
        await asyncio.sleep(step)
        await asyncio.to_thread(net.floor.restart, hard=True, down_for=0.5)
        note("floor broker SIGKILLed, restarted after 0.5 s")
        await asyncio.sleep(step)
        net.cable.cut()
        note("pit -> floor link cut")
        await asyncio.sleep(3.0)
        net.cable.restore()
        note("link restored")
        await asyncio.sleep(step)
        workers[1].kill()
        note("ingest worker w2 SIGKILLed")
        await asyncio.sleep(2.0)
        workers[1].start()
        note("ingest worker w2 started again")
        await asyncio.sleep(step)
        await asyncio.to_thread(postgres.restart, hard=True, down_for=1.0)
        note("PostgreSQL SIGKILLed, restarted after 1 s (crash recovery)")
        await asyncio.sleep(step)
        await asyncio.to_thread(net.pit.restart, hard=True, down_for=0.5)
        note("pit broker SIGKILLed, restarted after 0.5 s")
        assert await emu.finished(ROUNDS / RATE * 4 + 120), (
            f"the tables could not publish everything: {emu.unacknowledged()} unacknowledged"
        )
        note("every table played its rounds, every round acknowledged by the pit broker")
        h = await until_stored(db, emu, 240)
        note("the database holds them")
        emu.stop()
        await play
        published = sum(len(t.sent) for t in emu.tables.values())
        lines = [
            *events,
            f"tables {TABLES}, rounds per table {ROUNDS}, pace {RATE}/s each",
            f"rounds published {published} (first publications {len(emu.published)}, "
            f"sent again after a reconnect {emu.stats.resent}, replays asked "
            f"{emu.stats.replays} -> rounds replayed {emu.stats.replayed})",
            f"database: {lag_summary(h)}",
            f"kills: floor broker {net.floor.kills}, pit broker {net.pit.kills}, link cuts "
            f"{net.cable.cuts}, ingest workers {sum(w.kills for w in workers)}, "
            f"PostgreSQL {postgres.kills}",
        ]
        report(capsys, "floor ingest: 200 tables, pit -> floor bridge, every fault", lines)
        assert h["rows"] == published == TABLES * ROUNDS, lines
        assert h["missing"] == 0 and h["extra"] == 0 and h["differ"] == 0, lines
        assert h["gaps_open"] == 0 and h["conflicts"] == 0 and h["anchor_faults"] == 0, lines
        assert h["faults_open"] == 0, h["lag"]["faults"]
        for tid, t in h["lag"]["tables"].items():
            assert t["contiguous_seq"] == t["last_seq"] == ROUNDS, (tid, t)
    finally:
        emu.stop()
        for w in workers:
            w.stop()
        net.close()
        tail = "\n".join(f"--- {w.name}\n{w.log_tail(8)}" for w in workers)
        with capsys.disabled():
            print(f"\n  ingest logs (tails):\n{tail}")
    # The holdings check again, after everything stopped (nothing moved since).
    h2 = await holdings(db, emu)
    assert h2["rows"] == TABLES * ROUNDS
