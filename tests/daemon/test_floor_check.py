"""Issue 15 item 3: at start-up the journal is compared with what the table last
published (its retained ``anchor`` and ``state``). A journal behind the floor latches
``JOURNAL_BEHIND_FLOOR``, never reuses a sequence number, and opens no round until a
technician clears it with a reason; an unreachable broker latches
``JOURNAL_UNCHECKED`` until the check succeeds (or a technician clears it)."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from firmware_host.config import load_config, validate_document
from firmware_host.daemon import TableDaemon
from firmware_host.journal import AuditKey, Journal, JournalFull
from firmware_host.mqtt import MqttSettings
from firmware_host.table.engine import RoundEngine, RoundFault
from firmware_host.table.floorcheck import BEHIND, UNCHECKED, JournalFloorCheck
from firmware_host.table.state import LatchedFaults
from tablesim.principals import make_principals

ROOT = Path(__file__).resolve().parents[2]


def engine(j: Journal) -> RoundEngine:
    """A fantan table's engine, stopped by latched faults as the daemon's is."""
    return RoundEngine(
        load_config(ROOT / "config" / "fantan.toml"), j, play_stop=LatchedFaults(j.faults).play_stop
    )


def play(e: RoundEngine, n: int) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        e.open_betting()
        assert e.desk.place({"bet_id": f"b{i}", "seat": 1, "bet_type": "fan", "selection": 1,
                            "stake": 10000}).accepted  # fmt: skip
        e.close_betting()
        out.append(dict(e.submit_result({"number": 1 + i % 4})))
    return out


class Floor:
    """What the broker retains for the table: the last ``anchor`` published."""

    def __init__(self, j: Journal) -> None:
        self.retained: dict[str, bytes] = {}
        self.fail: Exception | None = None
        self.take(j)

    def take(self, j: Journal) -> None:
        for m in j.outbox.pending(100_000):
            if m.topic == "anchor":
                self.retained["anchor"] = m.payload
        j.outbox.mark_published([m.id for m in j.outbox.pending(100_000)])

    async def read(self) -> Mapping[str, bytes]:
        if self.fail is not None:
            raise self.fail
        return dict(self.retained)


@pytest.fixture
def key(tmp_path: Path) -> AuditKey:
    return AuditKey.create(tmp_path / "audit.key")


def backup(src: Path, dst: Path) -> None:
    with sqlite3.connect(src) as a, sqlite3.connect(dst) as b:
        a.backup(b)


async def test_a_journal_that_holds_everything_passes(tmp_path: Path, key: AuditKey) -> None:
    j = Journal(tmp_path / "j.sqlite3", audit_key=key)
    play(engine(j), 3)
    floor = Floor(j)
    check = JournalFloorCheck(j, "fantan-01", floor.read)
    assert await check.check_once() and check.findings == []
    assert j.faults.active() == []


async def test_a_restored_backup_is_caught_and_no_seq_is_reused(
    tmp_path: Path, key: AuditKey
) -> None:
    path = tmp_path / "j.sqlite3"
    j = Journal(path, audit_key=key)
    e = engine(j)
    play(e, 2)
    backup(path, tmp_path / "backup.sqlite3")
    later = play(e, 3)  # rounds 3..5: the floor has them
    floor = Floor(j)
    j.close()
    restored = Journal(tmp_path / "backup.sqlite3", audit_key=key)
    changed: list[int] = []
    restored.faults.add_listener(lambda: changed.append(1))  # the retained state follows
    check = JournalFloorCheck(restored, "fantan-01", floor.read)
    assert await check.check_once()
    (fault,) = restored.faults.active()
    assert fault.code == BEHIND and changed
    assert "chain entries 11..19 missing" in fault.message or "chain entries" in fault.message
    assert "rounds 3..5 (3 round(s)) the floor holds are not in the journal" in fault.message
    assert "Rounds continue from seq 6" in fault.message
    e2 = engine(restored)
    with pytest.raises(RoundFault) as exc:
        e2.open_betting()
    assert exc.value.code == "PLAY_STOPPED" and BEHIND in exc.value.message
    restored.faults.clear_fault(BEHIND, by="tech1", reason="rounds 3-5 reconciled with the floor's copy")
    # A restart before the next round: the broker still holds the floor's anchor, which
    # the technician acknowledged; it is not latched again.
    assert await JournalFloorCheck(restored, "fantan-01", floor.read).check_once()
    assert restored.faults.active() == []
    rnd = e2.open_betting()
    assert rnd.seq == 6 and rnd.seq > max(r["seq"] for r in later)  # never reused
    assert rnd.round_id not in {r["round_id"] for r in later}
    kinds = [ev.kind for ev in restored.chain.events(20)]
    assert "fault_latched" in kinds and "fault_cleared" in kinds
    assert restored.audit().ok, str(restored.audit())


async def test_another_journal_with_as_many_entries_is_caught(
    tmp_path: Path, key: AuditKey
) -> None:
    """A swapped card with another journal as long as this one: same position, other hash."""
    a = Journal(tmp_path / "a.sqlite3", audit_key=key)
    play(engine(a), 2)
    floor = Floor(a)
    b = Journal(tmp_path / "b.sqlite3", audit_key=key)
    play(engine(b), 2)
    assert b.chain.head()[0] == a.chain.head()[0]
    check = JournalFloorCheck(b, "fantan-01", floor.read)
    assert await check.check_once()
    (fault,) = b.faults.active()
    assert fault.code == BEHIND and "not the journal the floor heard from" in fault.message


async def test_an_unreachable_broker_stops_play_until_the_check_succeeds(
    tmp_path: Path, key: AuditKey
) -> None:
    j = Journal(tmp_path / "j.sqlite3", audit_key=key)
    e = engine(j)
    play(e, 1)
    floor = Floor(j)
    floor.fail = ConnectionError("broker down")
    check = JournalFloorCheck(j, "fantan-01", floor.read, retry_min=0.01, retry_max=0.02)
    assert not await check.check_once()
    assert [f.code for f in j.faults.active()] == [UNCHECKED]
    with pytest.raises(RoundFault):
        e.open_betting()
    task = asyncio.create_task(check.until_checked())
    await asyncio.sleep(0.1)
    assert not task.done() and [f.code for f in j.faults.active()] == [UNCHECKED]
    floor.fail = None  # the broker is back
    await asyncio.wait_for(task, 5)
    assert j.faults.active() == [] and check.checked
    cleared = j.chain.events(5, kind="fault_cleared")[-1]
    assert cleared.data["code"] == UNCHECKED and cleared.data["by"] == "table"
    e.open_betting()


async def test_a_simulated_table_plays_while_the_broker_is_unreachable_and_is_checked_later(
    tmp_path: Path, key: AuditKey
) -> None:
    """``tablectl run --simulate`` without a broker (README): a warning, not a latched
    fault; the check is still made once the broker answers, and a journal behind the
    floor is still latched then."""
    j = Journal(tmp_path / "j.sqlite3", audit_key=key)
    e = engine(j)
    play(e, 2)
    floor = Floor(j)
    backup(tmp_path / "j.sqlite3", tmp_path / "old.sqlite3")
    play(e, 1)
    floor.take(j)  # the floor holds the third round's anchor; the backup lacks it
    j.close()
    old = Journal(tmp_path / "old.sqlite3", audit_key=key)
    floor.fail = ConnectionError("broker down")
    check = JournalFloorCheck(
        old, "fantan-01", floor.read, retry_min=0.01, retry_max=0.02, simulated=True
    )
    assert not await check.check_once()
    assert old.faults.active() == []  # plays meanwhile
    engine(old).open_betting()
    floor.fail = None
    await asyncio.wait_for(check.until_checked(), 5)
    assert [f.code for f in old.faults.active()] == [BEHIND]


async def test_a_full_disk_during_the_retries_does_not_end_them(
    tmp_path: Path, key: AuditKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The journal cannot write when the broker comes back (DISK_FULL): the retries go
    on (the link starts only after them), and the check is made once it writes again."""
    j = Journal(tmp_path / "j.sqlite3", audit_key=key)
    play(engine(j), 1)
    floor = Floor(j)
    floor.fail = ConnectionError("broker down")
    check = JournalFloorCheck(j, "fantan-01", floor.read, retry_min=0.01, retry_max=0.02)
    assert not await check.check_once()
    full = {"on": True}
    clear = j.faults.clear_fault

    def clear_or_full(*args: Any, **kwargs: Any) -> Any:
        if full["on"]:
            raise JournalFull("the disk is full (test)")
        return clear(*args, **kwargs)

    monkeypatch.setattr(j.faults, "clear_fault", clear_or_full)
    floor.fail = None  # the broker is back, the disk is full
    task = asyncio.create_task(check.until_checked())
    await asyncio.sleep(0.2)
    assert not task.done() and [f.code for f in j.faults.active()] == [UNCHECKED]
    full["on"] = False
    await asyncio.wait_for(task, 5)
    assert j.faults.active() == [] and check.checked


async def test_a_technicians_clear_is_not_undone_by_the_retries(
    tmp_path: Path, key: AuditKey
) -> None:
    j = Journal(tmp_path / "j.sqlite3", audit_key=key)
    floor = Floor(j)
    floor.fail = ConnectionError("broker down")
    check = JournalFloorCheck(j, "fantan-01", floor.read, retry_min=0.01, retry_max=0.02)
    assert not await check.check_once()
    j.faults.clear_fault(UNCHECKED, by="tech1", reason="broker room flooded; playing without the floor")
    task = asyncio.create_task(check.until_checked())
    await asyncio.sleep(0.1)
    assert j.faults.active() == []
    task.cancel()


async def test_an_unreadable_retained_anchor_is_ignored(tmp_path: Path, key: AuditKey) -> None:
    j = Journal(tmp_path / "j.sqlite3", audit_key=key)
    play(engine(j), 1)
    floor = Floor(j)
    floor.retained = {"anchor": b"{not json", "state": b'{"table_id": "other", "anchor": null}'}
    assert await JournalFloorCheck(j, "fantan-01", floor.read).check_once()
    assert j.faults.active() == []


# -- the daemon, with a broker ---------------------------------------------------------------


def fantan(tmp_path: Path) -> Any:
    """fantan without its keypad: results entered by people, who sign their commands."""
    return validate_document(
        {
            "table": {"id": "fc-1", "game": "fantan", "result_source": "manual"},
            "auth": make_principals(tmp_path / "keys").auth_section(),
        }
    )


def daemon(tmp_path: Path, broker: Any, journal_dir: Path) -> TableDaemon:
    cfg = fantan(tmp_path)
    return TableDaemon(
        cfg,
        state_dir=journal_dir,
        runtime_dir=tmp_path,
        mqtt=MqttSettings(host=broker.host, port=broker.port, protocol=broker.protocol, reconnect_min_ms=20,
                          reconnect_max_ms=200),
    )  # fmt: skip


async def retained(broker: Any, topic: str, until: Any = lambda doc: True) -> dict[str, Any]:
    """The table's message on ``topic`` (the retained one, then updates) that ``until``."""
    async with aiomqtt.Client(broker.host, broker.port, identifier="probe") as c:
        await c.subscribe(f"casino/tables/fc-1/{topic}", qos=1)
        async with asyncio.timeout(10):
            async for m in c.messages:
                doc = dict(json.loads(bytes(m.payload)))  # type: ignore[arg-type]
                if until(doc):
                    return doc
    raise AssertionError("unreachable")


async def wait_for(pred: Any, timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not pred():
            await asyncio.sleep(0.02)


async def test_the_daemon_latches_a_restored_journal_and_says_what_is_missing(
    tmp_path: Path, amqtt_broker: Any
) -> None:
    live = tmp_path / "live"
    d = daemon(tmp_path, amqtt_broker, live)
    await d.start()
    assert d.parts.engine is not None and d.journal is not None and d.parts.link is not None
    play(d.parts.engine, 2)
    await d.parts.link.wait_idle(10)
    await d.stop()
    backup(live / "journal.sqlite3", tmp_path / "backup.sqlite3")

    d = daemon(tmp_path, amqtt_broker, live)
    await d.start()
    assert d.parts.engine is not None and d.parts.link is not None
    assert d.journal is not None and d.journal.faults.active() == []  # the same journal
    play(d.parts.engine, 3)
    await d.parts.link.wait_idle(10)
    anchor = await retained(amqtt_broker, "anchor", lambda a: a["seq"] == 5)
    assert anchor["phase"] == "settled"
    await d.stop()

    # The SD card comes back with yesterday's copy (the key is the table's own).
    (live / "journal.sqlite3").unlink()
    backup(tmp_path / "backup.sqlite3", live / "journal.sqlite3")
    d = daemon(tmp_path, amqtt_broker, live)
    await d.start()
    try:
        assert d.parts.engine is not None and d.journal is not None and d.parts.link is not None
        (fault,) = d.journal.faults.active()
        assert fault.code == BEHIND and fault.data["seq_floor"] == 5, fault
        assert "rounds 3..5" in fault.message
        with pytest.raises(RoundFault):
            d.parts.engine.open_betting()
        await d.parts.link.wait_connected(10)
        state = await retained(amqtt_broker, "state", lambda s: s.get("faults"))
        assert state["faults"] == [BEHIND] and state["availability"] == "online"
        assert state["fault_details"][0]["message"] == fault.message
        assert d.parts.console_backend is not None
        d.parts.console_backend.clear_fault(BEHIND, "floor copy of rounds 3-5 filed", "tech1")
        assert d.parts.engine.open_betting().seq == 6
    finally:
        await d.stop()


async def test_the_daemon_waits_for_an_unreachable_broker_then_checks(tmp_path: Path) -> None:
    from tablesim.broker import EmbeddedBroker, free_port

    port = free_port()
    cfg = fantan(tmp_path)
    d = TableDaemon(
        cfg, state_dir=tmp_path, runtime_dir=tmp_path,
        mqtt=MqttSettings(
            port=port, protocol=EmbeddedBroker.protocol, reconnect_min_ms=20, reconnect_max_ms=100
        ),
    )  # fmt: skip
    await d.start()
    broker = EmbeddedBroker(port=port)
    try:
        assert d.journal is not None and d.parts.engine is not None and d.parts.link is not None
        assert [f.code for f in d.journal.faults.active()] == [UNCHECKED]
        with pytest.raises(RoundFault):
            d.parts.engine.open_betting()
        assert not d.parts.link.connected
        await broker.start()
        await wait_for(lambda: d.journal is not None and d.journal.faults.active() == [])
        await d.parts.link.wait_connected(10)
        d.parts.engine.open_betting()
    finally:
        await d.stop()
        await broker.stop()


async def test_rows_the_journals_own_recent_chain_lost_are_caught_without_the_floor(
    tmp_path: Path, key: AuditKey
) -> None:
    """A checkpoint lost on lying storage: the newest entries survive (the floor's anchor
    matches), a page of settlements does not. The journal's own chain names it, even
    with the broker down."""
    j = Journal(tmp_path / "j.sqlite3", audit_key=key)
    rounds = play(engine(j), 4)
    floor = Floor(j)
    floor.fail = ConnectionError("broker down")
    lost = rounds[1]["round_id"]
    j.db.sql.execute("DELETE FROM settlements WHERE round_id = ?", (lost,))
    check = JournalFloorCheck(j, "fantan-01", floor.read)
    assert not await check.check_once()
    codes = sorted(f.code for f in j.faults.active())
    assert codes == [BEHIND, UNCHECKED]
    (behind,) = [f for f in j.faults.active() if f.code == BEHIND]
    assert f"settlement of round {lost}" in behind.message and "missing" in behind.message


async def test_damage_a_technician_acknowledged_is_not_latched_again_at_every_start(
    tmp_path: Path, key: AuditKey
) -> None:
    j = Journal(tmp_path / "j.sqlite3", audit_key=key)
    e = engine(j)
    rounds = play(e, 3)
    j.db.sql.execute("DELETE FROM settlements WHERE round_id = ?", (rounds[0]["round_id"],))
    floor = Floor(j)
    assert await JournalFloorCheck(j, "fantan-01", floor.read).check_once()
    assert [f.code for f in j.faults.active()] == [BEHIND]
    j.faults.clear_fault(BEHIND, by="tech1", reason="round 1's payload restored from the floor's copy")
    # The next start finds the same damage: acknowledged, not latched again...
    assert await JournalFloorCheck(j, "fantan-01", floor.read).check_once()
    assert j.faults.active() == []
    # ...but new damage is.
    j.db.sql.execute("DELETE FROM settlements WHERE round_id = ?", (rounds[2]["round_id"],))
    check = JournalFloorCheck(j, "fantan-01", floor.read)
    assert await check.check_once()
    (fault,) = j.faults.active()
    assert rounds[2]["round_id"] in fault.message and rounds[0]["round_id"] not in fault.message


def page_of(path: Path, name: str) -> tuple[int, int]:
    """Where the root page of the b-tree ``name`` lies in the file: its offset and size
    (a table or index of a few rows has no other page)."""
    with sqlite3.connect(path) as db:
        (root,) = db.execute(
            "SELECT rootpage FROM sqlite_schema WHERE name = ?", (name,)
        ).fetchone()
        (size,) = db.execute("PRAGMA page_size").fetchone()
    return (root - 1) * size, size


def mixed_image(tmp_path: Path, key: AuditKey, index_from: str) -> tuple[Path, list[str]]:
    """A journal of five rounds whose settlements' index page is from another instant:
    ``"before"`` (after round 3: the index lacks rounds 4 and 5, which the table holds)
    or ``"after"`` (the table after round 3, its index after round 5). What a power
    cut leaves when storage lied about flushing a page of a checkpoint: every page is
    whole, the open's quick check passes, and the chain (the floor's anchor) is intact.
    Returns the image and the ids of rounds 4 and 5."""
    path = tmp_path / "j.sqlite3"
    j = Journal(path, audit_key=key)
    play(engine(j), 3)
    j.close()  # checkpointed: the main file holds every page
    early = tmp_path / "early.sqlite3"
    shutil.copyfile(path, early)
    j = Journal(path, audit_key=key)
    late = [r["round_id"] for r in play(engine(j), 2)]
    j.close()
    base, donor = (path, early) if index_from == "before" else (early, path)
    image = tmp_path / "image.sqlite3"
    shutil.copyfile(base, image)
    offset, size = page_of(path, "sqlite_autoindex_settlements_1")
    with open(donor, "rb") as f:
        f.seek(offset)
        page = f.read(size)
    with open(image, "r+b") as f:
        f.seek(offset)
        f.write(page)
    return image, late


async def test_an_index_page_older_than_its_table_is_caught_and_the_rows_named(
    tmp_path: Path, key: AuditKey
) -> None:
    """Power loss (seen once in the crash-image test): the settlements of the last two
    rounds are in their table, but its index page is a checkpoint older. The journal
    cannot find them by their round (``settlement()`` reads None: the floor's rounds are
    missing), yet a scan of the table sees them, so the audit and the start-up check
    (the whole chain when it is shorter than the window) passed it. Both name them now,
    and the start-up check latches the fault even though the floor's anchor matches."""
    image, late = mixed_image(tmp_path, key, "before")
    j = Journal(image, audit_key=key)
    assert [j.rounds.settlement(rid) for rid in late] == [None, None]  # what the journal can read
    floor = Floor(j)  # the floor's anchor matches the journal's chain
    assert j.check_against_floor([]) == []
    report = j.audit()
    assert not report.ok
    named = [str(p) for p in report.ordered()]
    for rid in late:
        assert any(f"settlement of round {rid}" in p and "missing from its index" in p
                   for p in named), named  # fmt: skip
    assert report.first is not None and late[0] in report.first.row
    check = JournalFloorCheck(j, "fantan-01", floor.read)
    assert await check.check_once()
    assert check.findings == []  # the anchor alone sees nothing
    (fault,) = j.faults.active()
    assert fault.code == BEHIND
    assert late[0] in fault.message and late[1] in fault.message


def test_an_index_with_entries_its_table_lacks_is_named_by_the_audit(
    tmp_path: Path, key: AuditKey
) -> None:
    """The other way round: the index page is newer than the table's (it has rounds 4
    and 5, the table not). A lookup of such a round meets the damage (refused with the
    documented code); the audit names the index."""
    image, late = mixed_image(tmp_path, key, "after")
    j = Journal(image, audit_key=key)
    report = j.audit()
    assert not report.ok
    assert any("settlements" in p.row and "sqlite_autoindex_settlements_1" in p.reason
               for p in report.problems), str(report)  # fmt: skip
    assert not j.check_recent().ok
