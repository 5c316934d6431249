"""Issue 28 item 3: an anchor the table cannot overwrite. The floor ingest's signed
record of the table (``<prefix>/floor/records/<table_id>``) is checked at start-up
with the table's own retained ``anchor`` and ``state``; a journal behind the floor
never publishes a retained anchor older than the broker's, and never reuses a ``seq``
the floor has seen, after any number of restores."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from firmware_host.auth import TableIdentity
from firmware_host.auth.evidence import FLOOR_DOMAIN, seal
from firmware_host.config import load_config
from firmware_host.journal import AuditKey, Journal
from firmware_host.journal.rounds import WITHHELD
from firmware_host.table.engine import RoundEngine
from firmware_host.table.floorcheck import BEHIND, FLOOR_RECORD, JournalFloorCheck
from firmware_host.table.state import LatchedFaults

ROOT = Path(__file__).resolve().parents[2]
TABLE = "fantan-01"


def engine(j: Journal) -> RoundEngine:
    return RoundEngine(
        load_config(ROOT / "config" / "fantan.toml"), j, play_stop=LatchedFaults(j.faults).play_stop
    )


def play(e: RoundEngine, n: int, *, leave_open: bool = False) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        e.open_betting()
        assert e.desk.place({"bet_id": f"b{i}", "seat": 1, "bet_type": "fan", "selection": 1,
                            "stake": 10000}).accepted  # fmt: skip
        if leave_open and i == n - 1:
            break
        e.close_betting()
        out.append(dict(e.submit_result({"number": 1 + i % 4})))
    return out


class Floor:
    """What the broker holds for the table: its own retained ``anchor`` (the last one
    published) and the ingest's signed record (the highest round the floor stored)."""

    def __init__(self, ingest_key: Ed25519PrivateKey) -> None:
        self.key = ingest_key
        self.retained: dict[str, bytes] = {}
        self.rounds: dict[int, dict[str, Any]] = {}

    def take(self, j: Journal) -> None:
        """The broker takes what the journal's outbox holds; the ingest stores it."""
        for m in j.outbox.pending(100_000):
            if m.topic == "anchor":
                self.retained["anchor"] = m.payload
            if m.topic == "rounds":
                r = json.loads(m.payload)
                self.rounds.setdefault(r["seq"], r)
        j.outbox.mark_published([m.id for m in j.outbox.pending(100_000)])
        top = self.rounds[max(self.rounds)]
        record = {
            "schema_version": 1, "table_id": TABLE, "seq": top["seq"],
            "round_id": top["round_id"], "chain": top["chain"],
            "at": "2026-11-28T07:00:00.000Z", "principal": "floor-ingest",
        }  # fmt: skip
        self.retained[FLOOR_RECORD] = seal(self.key, "record", record, domain=FLOOR_DOMAIN)

    async def read(self) -> Mapping[str, bytes]:
        return dict(self.retained)


@pytest.fixture
def key(tmp_path: Path) -> AuditKey:
    return AuditKey.create(tmp_path / "audit.key")


def journal(path: Path, key: AuditKey) -> Journal:
    return Journal(path, audit_key=key, identity=TableIdentity.generate())


def copy(src: Path, dst: Path) -> Path:
    with sqlite3.connect(src) as a, sqlite3.connect(dst) as b:
        a.backup(b)
    return dst


async def test_the_floor_record_catches_a_journal_whose_own_anchor_was_rolled_back(
    tmp_path: Path, key: AuditKey
) -> None:
    """The attack of the issue: the table's own retained anchor no longer says how far
    the floor is (a restore overwrote it). The floor's record, which the table cannot
    write, still does."""
    ingest = Ed25519PrivateKey.generate()
    j = journal(tmp_path / "j.sqlite3", key)
    e = engine(j)
    play(e, 2)
    old = copy(tmp_path / "j.sqlite3", tmp_path / "old.sqlite3")
    floor = Floor(ingest)
    play(e, 3)
    floor.take(j)
    j.close()
    pristine = copy(old, tmp_path / "again.sqlite3")
    restored = journal(old, key)
    del floor.retained["anchor"]  # the table's own retained anchor says nothing any more
    check = JournalFloorCheck(restored, TABLE, floor.read, record_keys=[ingest.public_key()])
    assert await check.check_once()
    (fault,) = restored.faults.active()
    assert fault.code == BEHIND
    assert "the floor's record" in fault.message and "Rounds continue from seq 6" in fault.message
    # Without the ingest's key the same record is not the floor's word: not latched.
    again = journal(pristine, key)
    check = JournalFloorCheck(again, TABLE, floor.read, record_keys=[])
    assert await check.check_once()
    assert [f.code for f in again.faults.active()] == []


async def test_a_record_not_signed_by_the_floor_ingest_is_ignored(
    tmp_path: Path, key: AuditKey, caplog: pytest.LogCaptureFixture
) -> None:
    """A forged record (another key; a valid record of another table; a record whose
    bytes were changed) never makes the table latch: logged and ignored."""
    ingest, forger = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    j = journal(tmp_path / "j.sqlite3", key)
    play(engine(j), 2)
    floor = Floor(forger)
    floor.take(j)
    far = dict(seq=99, round_id="x", chain={"seq": 9999, "head": "0" * 64}, table_id=TABLE)
    forged = [
        seal(forger, "record", far, domain=FLOOR_DOMAIN),
        seal(ingest, "record", dict(far, table_id="other-table"), domain=FLOOR_DOMAIN),
        seal(ingest, "record", far, domain=FLOOR_DOMAIN).replace(b'"seq":99', b'"seq":98'),
        seal(ingest, "record", far),  # the table's domain, not the floor's
    ]
    caplog.set_level(logging.WARNING, logger="firmware_host.table.floorcheck")
    for raw in forged:
        floor.retained[FLOOR_RECORD] = raw
        check = JournalFloorCheck(j, TABLE, floor.read, record_keys=[ingest.public_key()])
        assert await check.check_once()
        assert j.faults.active() == []
    assert sum("ignoring the floor's record" in r.message for r in caplog.records) == len(forged)


async def test_two_successive_restores_are_both_refused_and_no_seq_is_reused(
    tmp_path: Path, key: AuditKey
) -> None:
    """The table plays rounds 1..6 (the floor holds them). Restored from an old copy
    (after round 2): refused. Then from a newer old copy (round 4 settled, round 5 in
    flight, the anchors of rounds 4 and 5 not yet published): refused again, its round
    in flight voided for the journal only (never published, replayed or announced), its
    stale anchors never published, the broker's retained anchor untouched; new rounds
    continue from seq 7."""
    ingest = Ed25519PrivateKey.generate()
    floor = Floor(ingest)
    path = tmp_path / "j.sqlite3"
    j = journal(path, key)
    e = engine(j)
    play(e, 2)
    floor.take(j)
    old = copy(path, tmp_path / "old.sqlite3")
    play(e, 2)
    play(e, 1, leave_open=True)  # round 5 open, with a bet; nothing published since 2
    newer = copy(path, tmp_path / "newer.sqlite3")
    e.close_betting()
    e.submit_result({"number": 3})
    play(e, 1)
    floor.take(j)
    assert max(floor.rounds) == 6
    broker_anchor = floor.retained["anchor"]
    j.close()
    record_keys = [ingest.public_key()]

    for image, last in ((old, 2), (newer, 4)):
        restored = journal(image, key)
        check = JournalFloorCheck(restored, TABLE, floor.read, record_keys=record_keys)
        assert await check.check_once()
        (fault,) = restored.faults.active()
        assert fault.code == BEHIND, image
        assert "Rounds continue from seq 7" in fault.message
        e2 = engine(restored)
        e2.resume()  # the daemon resolves what was in flight once the check is made
        if image == newer:
            (rnd5,) = [r for r in restored.rounds.summary(10) if r.seq == 5]
            assert rnd5.status == "void"
            row = restored.db.sql.execute(
                "SELECT outbox_id FROM settlements WHERE round_id = ?", (rnd5.round_id,)
            ).fetchone()
            assert row[0] == WITHHELD
            assert restored.rounds.replay_range(TABLE, 5, 5) == []
        # What this journal would publish: no anchor of a round the floor holds, and
        # rounds only as the floor has them (the copy's own settled rounds, same bytes).
        pending = restored.outbox.pending(1000)
        assert [m for m in pending if m.topic == "anchor"] == []
        for m in pending:
            if m.topic == "rounds":
                r = json.loads(m.payload)
                assert r["seq"] <= last and r == floor.rounds[r["seq"]], r["seq"]
        assert restored.rounds.anchor() is None  # state never announces an older anchor
        floor.take(restored)  # the broker gets what it publishes: its anchor untouched
        assert floor.retained["anchor"] == broker_anchor
        restored.faults.clear_fault(BEHIND, by="tech1", reason=f"restored from {image.name}")
        rnd = e2.open_betting()
        assert rnd.seq == 7  # never a seq the floor has seen
        assert restored.audit().ok, str(restored.audit())
        restored.close()
