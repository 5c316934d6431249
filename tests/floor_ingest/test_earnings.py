"""The floor's side of what the tables earn (issue 34 item 4): closed shifts and players'
sessions stored exactly once, verified like rounds; the shift report per table and per
pit, text and CSV, its totals and hold computed here apart from the report's code.
On SQLite and on PostgreSQL (a server of the test's own, ``conftest.py``); end to end
with the real daemon, mosquitto and the ingest worker on PostgreSQL."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.serialization import load_pem_public_key

from firmware_host.auth import TableIdentity
from firmware_host.schemas import PAYLOAD_SCHEMA_VERSION
from flooringest.earnings import amount, keep, on_message, report_csv, report_text, shift_rows
from flooringest.registry import load_file
from flooringest.store import open_store

from .conftest import new_database

KEYS: dict[str, TableIdentity] = {}


def identity(tmp: Path, table: str) -> TableIdentity:
    if table not in KEYS:
        KEYS[table] = TableIdentity.generate()
    return KEYS[table]


def public(tmp: Path, table: str) -> list[Any]:
    return [load_pem_public_key(identity(tmp, table).public_pem())]


def shift(table: str, shift_id: str, *, opener: int, fills: int, credits: int, drop: int,
          closer: int, game_result: int, theo_exact: str, rounds: int = 10,
          status: str = "closed") -> dict[str, Any]:  # fmt: skip
    win = closer - opener + credits - fills + drop
    theo = round(Fraction(theo_exact))
    return {
        "schema_version": PAYLOAD_SCHEMA_VERSION, "table_id": table, "shift_id": shift_id, "status": status,
        "currency": "MOP", "minor_digits": 2, "opened_at": "2026-05-09T06:00:00.000Z",
        "opened_by": "pit", "closed_at": "2026-05-09T14:00:00.000Z", "closed_by": "pit",
        "opener": opener, "fills": [], "credits": [], "drops": [], "fills_total": fills,
        "credits_total": credits, "drop": drop, "closer": closer, "win": win,
        "hold": None, "hold_pct": None, "rounds": rounds, "voids": 0, "first_seq": 1,
        "last_seq": rounds, "game_result": game_result, "theo_exact": theo_exact,
        "theo": theo, "variance": win - theo, "difference": win - game_result,
    }  # fmt: skip


async def registry(store: Any, tmp: Path, pits: dict[str, str]) -> None:
    lines = []
    for table, pit in pits.items():
        ident = identity(tmp, table)
        pub = tmp / f"{table}.pub"
        pub.write_bytes(ident.public_pem())
        lines.append(f'[tables."{table}"]\ngame = "roulette"\nkeys = ["{pub}"]\npit = "{pit}"\n')
    (tmp / "tables.toml").write_text("\n".join(lines))
    await store.tables.import_registry(load_file(str(tmp / "tables.toml")))


def signed(tmp: Path, table: str, topic: str, doc: dict[str, Any]) -> bytes:
    return identity(tmp, table).seal(topic, doc)


async def test_shifts_and_sessions_stored_once_and_verified(db_url: str, tmp_path: Path) -> None:
    KEYS.clear()
    store = await open_store(db_url)
    try:
        await registry(store, tmp_path, {"MO-R-07": "P1", "MO-R-08": "P1", "MO-B-01": "P2"})
        reg = await store.tables.registry_rows()
        assert {r["table_id"] for r in reg} == {"MO-R-07", "MO-R-08", "MO-B-01"}
        pub = {t: public(tmp_path, t) for t in KEYS}
        s1 = shift("MO-R-07", "day-1", opener=5_000_000, fills=1_000_000, credits=200_000,
                   drop=300_000, closer=5_550_000, game_result=50_000, theo_exact="120000/37")  # fmt: skip
        raw = signed(tmp_path, "MO-R-07", "shift", s1)
        assert (await keep(store.db, pub["MO-R-07"], "MO-R-07", "shift", raw, "w1"))[0] == "stored"
        assert (await keep(store.db, pub["MO-R-07"], "MO-R-07", "shift", raw, "w1"))[
            0
        ] == "duplicate"
        # another payload under the same shift: refused, the first stays
        other = signed(tmp_path, "MO-R-07", "shift", {**s1, "closer": 1})
        assert (await keep(store.db, pub["MO-R-07"], "MO-R-07", "shift", other, "w1"))[
            0
        ] == "conflict"
        # an open shift is not stored; a forgery and an unknown table are quarantined
        opened = signed(tmp_path, "MO-R-07", "shift", {**s1, "shift_id": "day-2", "status": "open"})
        assert (await keep(store.db, pub["MO-R-07"], "MO-R-07", "shift", opened, "w1"))[0] == "open"
        forged = signed(tmp_path, "MO-B-01", "shift", {**s1, "shift_id": "day-3"})
        outcome, bad = await keep(store.db, pub["MO-R-07"], "MO-R-07", "shift", forged, "w1")
        assert outcome == "quarantined" and bad is not None and bad.code == "BAD_SIGNATURE"
        outcome, bad = await keep(store.db, None, "MO-X-99", "shift", raw, "w1")
        assert bad is not None and bad.code == "UNKNOWN_TABLE"
        # as a worker receives it: the forgery kept aside in the quarantine, acknowledged
        assert await on_message(store, pub["MO-R-07"], "MO-R-07", "shift", forged, "w1")
        kept = await store.quarantine.messages(table="MO-R-07")
        assert [(q["topic"], q["code"]) for q in kept] == [("shift", "BAD_SIGNATURE")]
        wrong_table = signed(tmp_path, "MO-R-07", "shift", {**s1, "table_id": "MO-R-08"})
        outcome, bad = await keep(store.db, pub["MO-R-07"], "MO-R-07", "shift", wrong_table, "w1")
        assert bad is not None and bad.code == "MALFORMED"
        # sessions
        ses = {"schema_version": PAYLOAD_SCHEMA_VERSION, "table_id": "MO-R-07", "session_id": "RT-1",
               "player": "P-7c1e", "seat": 1, "currency": "MOP",
               "opened_at": "2026-05-09T07:00:00.000Z", "closed_at": "2026-05-09T07:30:00.000Z",
               "seconds": 1800, "first_seq": 1, "last_seq": 9, "rounds": 9,
               "rounds_unavailable": 0, "stakes": 90_000, "average_stake": 10_000,
               "average_stake_exact": "10000", "player_net": -5_000, "house_win": 5_000,
               "theo_exact": "90000/37", "theo": 2432}  # fmt: skip
        sraw = signed(tmp_path, "MO-R-07", "sessions", ses)
        assert (await keep(store.db, pub["MO-R-07"], "MO-R-07", "sessions", sraw, "w1"))[
            0
        ] == "stored"
        assert (await keep(store.db, pub["MO-R-07"], "MO-R-07", "sessions", sraw, "w1"))[
            0
        ] == "duplicate"
        # a session message signed for the shift topic does not verify as a session
        outcome, bad = await keep(store.db, pub["MO-R-07"], "MO-R-07", "sessions", raw, "w1")
        assert outcome == "quarantined"
        rows = await store.db.fetch("SELECT table_id, shift_id, closer, win FROM floor_shifts")
        assert [tuple(r) for r in rows] == [("MO-R-07", "day-1", 5_550_000, 50_000)]
        srows = await store.db.fetch("SELECT session_id, player, stakes, theo FROM floor_sessions")
        assert [tuple(r) for r in srows] == [("RT-1", "P-7c1e", 90_000, 2432)]
    finally:
        await store.close()


async def test_the_shift_report_per_table_and_per_pit(db_url: str, tmp_path: Path) -> None:
    KEYS.clear()
    store = await open_store(db_url)
    try:
        await registry(store, tmp_path, {"MO-R-07": "P1", "MO-R-08": "P1", "MO-B-01": "P2"})
        shifts = [
            shift("MO-R-07", "day-1", opener=5_000_000, fills=1_000_000, credits=200_000,
                  drop=300_000, closer=5_550_000, game_result=50_000, theo_exact="120000/37"),
            shift("MO-R-08", "day-1", opener=2_000_000, fills=0, credits=0, drop=100_000,
                  closer=1_930_000, game_result=30_000, theo_exact="1/2"),
            shift("MO-B-01", "day-1", opener=9_000_000, fills=500_000, credits=0,
                  drop=2_000_000, closer=8_700_000, game_result=1_200_000,
                  theo_exact="2500001/2"),
        ]  # fmt: skip
        for s in shifts:
            keys = public(tmp_path, s["table_id"])
            raw = signed(tmp_path, s["table_id"], "shift", s)
            assert (await keep(store.db, keys, s["table_id"], "shift", raw, "w1"))[0] == "stored"
        rows = await shift_rows(store.db)
        p1 = await shift_rows(store.db, pit="P1")
        assert [r["table"] for r in p1] == ["MO-R-07", "MO-R-08"]
        assert await shift_rows(store.db, since="2026-05-10") == []
        assert len(await shift_rows(store.db, until="2026-05-10")) == 3
    finally:
        await store.close()
    # the CSV: each shift, each pit's total, the floor's total, figures computed here
    got = list(csv.DictReader(io.StringIO(report_csv(rows))))
    by = {(r["pit"], r["table"]): r for r in got}
    r07 = by[("P1", "MO-R-07")]
    # win = closer - opener + credits - fills + drop
    assert (
        r07["win"] == "500.00" == amount(5_550_000 - 5_000_000 + 200_000 - 1_000_000 + 300_000, 2)
    )
    assert r07["hold %"] == "16.67"  # 50,000 / 300,000
    assert r07["theo win"] == "32.43" and r07["variance"] == "467.57"  # 120000/37 = 3243.2
    assert r07["difference"] == "0.00"
    p1 = by[("P1", "pit P1 total")]
    assert p1["win"] == "800.00" and p1["drop"] == "4000.00"  # 50,000 + 30,000; 400,000
    assert p1["hold %"] == "20.00"
    # the pit's theoretical win: 120000/37 + 1/2 = 240037/74 = 3243.74... rounded once
    assert p1["theo win"] == amount(round(Fraction(120000, 37) + Fraction(1, 2)), 2) == "32.44"
    floor = by[("", "all tables total")]
    assert floor["win"] == amount(50_000 + 30_000 + 1_200_000, 2, grouped=False) == "12800.00"
    assert floor["drop"] == "24000.00" and floor["hold %"] == "53.33"  # 1,280,000/2,400,000
    assert floor["rounds"] == "30"
    text = report_text(rows)
    assert "pit P1 total" in text and "all tables total" in text and "12,800.00" in text


def test_amounts_are_exact() -> None:
    assert amount(-123456, 2) == "-1,234.56" and amount(5, 2) == "0.05"
    assert amount(10**18 + 1, 2, grouped=False) == "10000000000000000.01"
    assert amount(7, 0) == "7"


# -- end to end -------------------------------------------------------------------------


@pytest.fixture
def pg_db(postgres: Any) -> str:
    return new_database(postgres)


@pytest.mark.mosquitto
async def test_a_shift_through_the_daemon_and_the_ingest_reaches_the_report(
    tmp_path: Path, mosquitto_broker: Any, pg_db: str
) -> None:
    from .test_daemon_evidence import TABLE, Site, until

    db = pg_db
    site = Site(tmp_path, mosquitto_broker, db)
    await site.start()
    await site.start_ingest()
    try:
        async with site.floor() as floor:

            async def ok(command: str, **args: Any) -> dict[str, Any]:
                r = await floor.command(command, **args)
                assert r["status"] == "ok", r
                return r["data"]

            await ok("shift_open", shift_id="e2e-1", amount=1_000_000)
            await ok("session_open", session_id="S-e2e", seat=1, player="P-e2e")
            net = 0
            for number in (1, 2, 3):
                rnd = await site.play(floor, number)
                net += rnd["totals"]["house_net"]
            await ok("fill", slip="F-1", amount=200_000)
            await ok("drop", slip="B-1", amount=50_000)
            await ok("session_close", session_id="S-e2e")
            # the chips: the cash bought 50,000 of chips from the tray
            closer = 1_000_000 - 50_000 + net + 200_000
            closed = await ok("shift_close", amount=closer)
            assert closed["difference"] == 0

            async def stored() -> bool:
                store = await open_store(db)
                try:
                    got = await store.db.fetch("SELECT COUNT(*) FROM floor_shifts")
                    ses = await store.db.fetch("SELECT COUNT(*) FROM floor_sessions")
                    return int(got[0][0]) == 1 and int(ses[0][0]) == 1
                except Exception:
                    return False
                finally:
                    await store.close()

            await until(stored, 30, "the shift and the session stored")
    finally:
        if site.ingest is not None:
            await site.ingest.stop()
        await site.stop()
    out = subprocess.run(
        [sys.executable, "-m", "firmware_host", "floor-ingest", "report", "--db", db,
         "--format", "csv"], capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    row = next(r for r in rows if r["table"] == TABLE)
    assert row["win"] == amount(net, 2) == row["game result"]
    assert row["difference"] == "0.00" and row["rounds"] == "3"
    assert row["drop"] == "500.00" and row["fills"] == "2000.00"
    assert json.loads(json.dumps(row))  # plain strings, a CSV an accountant opens
