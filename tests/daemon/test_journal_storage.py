"""Storage faults of the journal (issue 15 item 4): a full disk, an I/O error and a
damaged file, each turned into the journal's documented coded error with a one-line
reason, never a raw ``sqlite3`` exception or a traceback; a full disk or an I/O error
latched calmly (one log line when raised, one when cleared, not one per attempt).

A full disk is made real without a small filesystem: ``PRAGMA max_page_count`` makes
SQLite itself answer ``SQLITE_FULL`` once the file reaches that many pages, and
raising it again is "space returned" (the whole-daemon test on a real full tmpfs is
``tests/fault/test_disk_full.py``). An I/O error is injected under the journal's
cursor (``SQLITE_IOERR_WRITE``, as SQLite reports a failed write(2)). Damage is random
garbage written over pages and at random offsets of a real journal file.
"""

from __future__ import annotations

import logging
import os
import random
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _mqtt_support import play_round

from firmware_host.auth import TableIdentity
from firmware_host.journal import (
    AuditKey,
    Journal,
    JournalCorrupt,
    JournalError,
    JournalFull,
    JournalIOError,
    OutboxMessage,
    StorageGuard,
)
from firmware_host.journal import storage as storage_mod
from firmware_host.journal.storage import GuardedCursor, translate

SEED = int(os.environ.get("TABLECTL_FAULT_SEED", "20260508"))
GARBAGE_TRIALS = int(os.environ.get("TABLECTL_GARBAGE_TRIALS", "300"))


def sqlite_error(cls: type[sqlite3.Error], code: int, name: str, text: str) -> sqlite3.Error:
    exc = cls(text)
    exc.sqlite_errorcode = code  # type: ignore[attr-defined]
    exc.sqlite_errorname = name  # type: ignore[attr-defined]
    return exc


# -- translation ----------------------------------------------------------------------


def test_sqlite_errors_become_the_journals_coded_errors() -> None:
    full = translate(
        sqlite_error(sqlite3.OperationalError, 13, "SQLITE_FULL", "database or disk is full"), "/j"
    )
    assert isinstance(full, JournalFull) and full.code == "DISK_FULL"
    io = translate(
        sqlite_error(sqlite3.OperationalError, 778, "SQLITE_IOERR_WRITE", "disk I/O error"), "/j"
    )
    assert (
        isinstance(io, JournalIOError)
        and io.code == "JOURNAL_IO"
        and "SQLITE_IOERR_WRITE" in io.message
    )
    ro = translate(
        sqlite_error(
            sqlite3.OperationalError, 8, "SQLITE_READONLY", "attempt to write a readonly database"
        ),
        "/j",
    )
    assert isinstance(ro, JournalIOError)
    bad = translate(
        sqlite_error(
            sqlite3.DatabaseError, 11, "SQLITE_CORRUPT", "database disk image is malformed"
        ),
        "/j",
    )
    assert isinstance(bad, JournalCorrupt) and bad.code == "JOURNAL_CORRUPT"
    notadb = translate(
        sqlite_error(sqlite3.DatabaseError, 26, "SQLITE_NOTADB", "file is not a database"), "/j"
    )
    assert isinstance(notadb, JournalCorrupt)
    # The sqlite3 module's own decoding error quotes the damaged bytes: left out.
    text = "Could not decode to UTF-8 column 'payload' with text '\x07\x1b[2J\xff'"
    dec = translate(sqlite3.OperationalError(text), "/j")
    assert isinstance(dec, JournalCorrupt) and "'payload'" in dec.message
    assert "\x1b" not in dec.message and "\x07" not in dec.message
    # A constraint or a bug is not a storage problem: the caller re-raises it as is.
    assert (
        translate(
            sqlite_error(sqlite3.IntegrityError, 2067, "SQLITE_CONSTRAINT_UNIQUE", "UNIQUE"), "/j"
        )
        is None
    )
    assert translate(ValueError("x"), "/j") is None  # fmt: skip


# -- a full disk ----------------------------------------------------------------------


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[Journal]:
    j = Journal(tmp_path / "j.sqlite3")
    try:
        yield j
    finally:
        j.close()


def fill(journal: Journal) -> None:
    """No page more: the next write that needs one fails with SQLITE_FULL, and the
    filesystem shows no free space (what statvfs says of a full disk)."""
    pages = journal.db.sql.execute("PRAGMA page_count").fetchone()[0]
    journal.db.sql.execute(f"PRAGMA max_page_count = {pages}")
    journal.db.storage._free_bytes = lambda: 0


def make_room(journal: Journal) -> None:
    journal.db.sql.execute("PRAGMA max_page_count = 1073741823")
    journal.db.storage._free_bytes = lambda: 10**9


def test_a_full_disk_is_latched_once_refuses_with_its_code_and_clears_when_space_returns(
    journal: Journal, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    heard: list[str | None] = []
    journal.db.storage.add_listener(
        lambda: heard.append(journal.db.storage.fault and journal.db.storage.fault.code)
    )
    journal.db.storage.probe_interval = 0.0
    play_round(journal)
    fill(journal)
    failures = 0
    for i in range(40):  # a table trying again and again
        try:
            journal.outbox.enqueue(OutboxMessage("events", {"n": i, "pad": "x" * 3000}))
        except JournalFull as exc:
            failures += 1
            assert exc.code == "DISK_FULL" and "\n" not in exc.message
    assert failures >= 30
    fault = journal.db.storage.fault
    assert fault is not None and fault.code == "DISK_FULL" and fault.failures >= failures
    blocked = journal.db.storage.blocked()
    assert blocked is not None and blocked.code == "DISK_FULL"
    raised = [r for r in caplog.records if "storage fault DISK_FULL" in r.getMessage()]
    assert len(raised) == 1, "one log line when the fault is raised, not one per attempt"

    make_room(journal)
    assert journal.db.storage.blocked() is None  # the probe write succeeded: cleared
    assert journal.db.storage.fault is None
    play_round(journal)
    cleared = [r for r in caplog.records if "DISK_FULL cleared" in r.getMessage()]
    assert len(cleared) == 1
    assert heard == ["DISK_FULL", None]
    recorded = journal.chain.events(5, kind="storage_fault_cleared")
    assert recorded and recorded[-1].data["code"] == "DISK_FULL"  # type: ignore[index]


def test_the_probe_is_rate_limited(journal: Journal) -> None:
    probes: list[float] = []
    now = [100.0]
    guard = StorageGuard("/j", probe=lambda: probes.append(now[0]), monotonic=lambda: now[0],
                         free_bytes=lambda: 10**9, probe_interval=1.0)  # fmt: skip
    guard.failed(JournalFull("/j: the disk is full"))
    for _ in range(50):
        assert guard.blocked() is not None
        now[0] += 0.05  # 50 refusals in 2.5 s
    assert len(probes) == 2, probes  # one per probe_interval, not one per refusal


def test_a_full_disk_does_not_clear_while_the_filesystem_is_still_nearly_full() -> None:
    free = [0]
    guard = StorageGuard("/j", probe=lambda: None, free_bytes=lambda: free[0], min_free_bytes=1000)
    guard.failed(JournalFull("/j: full"))
    assert guard.succeeded() is None and guard.fault is not None  # fits in old WAL space
    free[0] = 5000
    assert guard.succeeded() is not None and guard.fault is None


# -- an I/O error ---------------------------------------------------------------------


@pytest.fixture
def failing_writes(monkeypatch: pytest.MonkeyPatch) -> Callable[[bool], None]:
    """Switch on and off an I/O error under every statement that writes."""
    state = {"on": False}
    real = GuardedCursor.execute

    def execute(self: GuardedCursor, sql: str, params: Any = ()) -> Any:
        head = sql.lstrip().split(None, 1)[0].upper()
        writes = head in ("INSERT", "UPDATE", "DELETE", "COMMIT") or "user_version =" in sql
        if state["on"] and writes:
            raise sqlite_error(
                sqlite3.OperationalError, 778, "SQLITE_IOERR_WRITE", "disk I/O error"
            )
        return real(self, sql, params)  # fmt: skip

    monkeypatch.setattr(GuardedCursor, "execute", execute)
    return lambda on: state.update(on=on)


def test_an_io_error_is_latched_and_clears_at_the_next_write(
    journal: Journal, failing_writes: Callable[[bool], None], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    journal.db.storage.probe_interval = 0.0
    failing_writes(True)
    for _ in range(20):
        with pytest.raises(JournalIOError) as exc:
            play_round(journal)
        assert exc.value.code == "JOURNAL_IO"
    assert journal.db.storage.fault is not None and journal.db.storage.fault.code == "JOURNAL_IO"
    assert journal.db.storage.blocked() is not None  # the probe fails too
    assert journal.rounds.in_flight("t1") == []  # nothing half-written
    failing_writes(False)
    assert journal.db.storage.blocked() is None
    play_round(journal)
    msgs = [r.getMessage() for r in caplog.records if "JOURNAL_IO" in r.getMessage()]
    assert len(msgs) == 2, msgs  # raised once, cleared once


# -- a damaged file ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def good_journal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("good") / "journal.sqlite3"
    with Journal(p) as j:
        for i in range(40):
            play_round(j, stakes=(100 + i,) * 8)
        j.chain.append_event("power_up", {"version": "test"})
        j.faults.set_fault("TEST_FAULT", "a latched fault to read back")
        j.db.sql.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return p


def start_up_reads(j: Journal) -> None:
    """What the daemon reads of its journal while starting, and a little play."""
    j.faults.active()
    j.rounds.in_flight("t1")
    j.rounds.next_seq("t1")
    j.chain.events(1, kind="config_loaded")
    j.jackpot.state("progressive")
    j.outbox.pending(100)
    j.recall(10)
    j.get_status()
    play_round(j)


def damage(data: bytearray, rng: random.Random) -> None:
    page = 4096
    for _ in range(rng.randint(1, 3)):
        kind = rng.random()
        if kind < 0.4:  # a whole page of garbage
            off, n = rng.randrange(len(data) // page) * page, page
        elif kind < 0.8:  # a run of garbage anywhere
            off, n = rng.randrange(len(data)), rng.randint(2, 600)
        else:  # one printable byte changed: SQLite cannot see it, the value may
            off, n = rng.randrange(len(data)), 1
        for i in range(off, min(off + n, len(data))):
            data[i] = rng.randrange(32, 127) if n == 1 else rng.randrange(256)


def test_garbage_in_the_file_is_refused_with_the_documented_error_never_a_traceback(
    good_journal: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = random.Random(SEED)
    good = good_journal.read_bytes()
    outcomes: dict[str, int] = {}
    for trial in range(GARBAGE_TRIALS):
        p = tmp_path / f"t{trial % 4}.sqlite3"
        data = bytearray(good)
        damage(data, rng)
        p.write_bytes(bytes(data))
        for extra in (p.with_name(p.name + "-wal"), p.with_name(p.name + "-shm")):
            extra.unlink(missing_ok=True)
        try:
            with Journal(p) as j:
                start_up_reads(j)
        except JournalError as exc:
            assert exc.code in ("JOURNAL_CORRUPT", "JOURNAL_IO"), exc
            text = str(exc)
            assert "\n" not in text and text.isprintable() and len(text) < 400, text
            outcomes[exc.code] = outcomes.get(exc.code, 0) + 1
        else:
            outcomes["opened"] = outcomes.get("opened", 0) + 1  # garbage on free space
    with capsys.disabled():
        print(f"\n  garbage in the journal, {GARBAGE_TRIALS} trials: {outcomes}")
    assert outcomes.get("JOURNAL_CORRUPT", 0) > GARBAGE_TRIALS // 4


def test_a_file_that_is_not_a_journal_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "j.sqlite3"
    p.write_bytes(b"this is not a database" * 200)
    with pytest.raises(JournalCorrupt) as exc:
        Journal(p)
    assert "\n" not in str(exc.value)


def test_a_stored_value_that_is_not_json_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "j.sqlite3"
    with Journal(p) as j:
        rid = play_round(j)
    db = sqlite3.connect(p)
    db.execute("UPDATE rounds SET outcome = '{\"number\": 1' WHERE round_id = ?", (rid,))
    db.commit()
    db.close()
    with Journal(p) as j, pytest.raises(JournalCorrupt):
        j.rounds.round(rid)


def test_the_daemon_refuses_a_damaged_journal_in_one_line(tmp_path: Path) -> None:
    """``tablectl run`` on a damaged journal: exit status 3 and one log line naming the
    code, no traceback."""
    import subprocess
    import sys

    state = tmp_path / "state"
    state.mkdir()
    (state / "journal.sqlite3").write_bytes(b"\x00garbage" * 5000)
    AuditKey.create(state / "audit.key")  # its keys are there: the file itself is refused
    TableIdentity.create(state / "identity.key")
    cfg = tmp_path / "t.toml"
    cfg.write_text(
        'version = 1\n[table]\nid = "t-damaged"\ngame = "roulette"\npayable_unit = 100\n'
        '[devices.wheel]\ndriver = "cammegh-ss2"\nport = "socket://127.0.0.1:9"\n'
        '[auth]\nsignatures = false\n[mqtt]\nhost = "127.0.0.1"\nport = 9\n'
    )
    r = subprocess.run(
        [sys.executable, "-m", "firmware_host", "run", "--config", str(cfg), "--state-dir", str(state)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 3, r.stderr
    assert "Traceback" not in r.stderr
    bad = [ln for ln in r.stderr.splitlines() if "JOURNAL_CORRUPT" in ln]
    assert len(bad) == 1, r.stderr


def test_storage_module_has_no_stray_names() -> None:
    # The journal's loader of stored JSON is the one the journal's parts use.
    from firmware_host.journal import bets, jackpot, rounds

    for mod in (rounds, bets, jackpot):
        assert mod.loads_or_none is storage_mod.loads_or_none


def test_tablectl_on_a_damaged_journal_says_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from firmware_host.cli import main

    p = tmp_path / "j.sqlite3"
    p.write_bytes(b"garbage" * 3000)
    AuditKey.create(tmp_path / "audit.key")  # the table's key, beside its journal
    assert main(["audit", "verify", "--journal", str(p)]) == 1  # the audit fails
    err = capsys.readouterr().err.strip()
    assert "JOURNAL_CORRUPT: " in err and "\n" not in err and "Traceback" not in err, err
