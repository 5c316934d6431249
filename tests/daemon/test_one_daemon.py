"""Issue 29 items 1 and 2: one table, one daemon, one journal.

- A second daemon on the same state directory is refused before it reads anything
  (``STATE_DIR_LOCKED``, naming the holder's pid and the lock's path); the first
  daemon's round is untouched and it keeps running; read-only tools work beside it; a
  SIGKILLed daemon leaves no stale lock.
- A journal knows its table and game: a configuration of another table or game is
  refused in one line naming both; a change of rules options is recorded in the chain.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from firmware_host.journal import (
    Journal,
    JournalOfAnotherTable,
    JournalSettings,
    StateLock,
    StateLocked,
    TableOwner,
)

ROOT = Path(__file__).resolve().parents[2]
TABLECTL = [sys.executable, "-m", "firmware_host"]


def test_the_lock_is_exclusive_names_its_holder_and_dies_with_it(tmp_path: Path) -> None:
    first = StateLock.acquire(tmp_path, table_id="MO-R-07")
    with pytest.raises(StateLocked) as exc:
        StateLock.acquire(tmp_path, table_id="MO-R-07")
    assert exc.value.code == "STATE_DIR_LOCKED"
    assert f"pid {os.getpid()}" in exc.value.message and "MO-R-07" in exc.value.message
    assert str(tmp_path / "tablectl.lock") in exc.value.message
    first.release()
    StateLock.acquire(tmp_path).release()  # free again
    # Held by a process that is SIGKILLed: the kernel releases it.
    child = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from firmware_host.journal import StateLock; "
         f"StateLock.acquire({str(tmp_path)!r}); print('held', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )  # fmt: skip
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        with pytest.raises(StateLocked) as exc:
            StateLock.acquire(tmp_path)
        assert f"pid {child.pid}" in exc.value.message
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        StateLock.acquire(tmp_path).release()
    finally:
        child.kill()
        child.wait(10)


def test_the_journal_holds_the_lock_while_it_is_open_to_be_written(tmp_path: Path) -> None:
    settings = JournalSettings(path=str(tmp_path / "journal.sqlite3"))
    owner = TableOwner("MO-R-07", "roulette", "0" * 64)
    j = settings.open(owner=owner)
    with pytest.raises(StateLocked):
        settings.open(owner=owner)
    # Read-only use beside it is fine (tablectl audit verify, audit events).
    with Journal(tmp_path / "journal.sqlite3", readonly=True) as ro:
        assert any(e.kind == "journal_table" for e in ro.chain.events(10))
    j.close()
    settings.open(owner=owner).close()


def test_a_journal_refuses_another_table_or_game_and_records_a_rules_change(
    tmp_path: Path,
) -> None:
    settings = JournalSettings(path=str(tmp_path / "journal.sqlite3"))
    settings.open(owner=TableOwner("MO-R-07", "roulette", "a" * 64)).close()
    for other in (
        TableOwner("MO-R-07", "sicbo", "a" * 64),
        TableOwner("MO-S-01", "roulette", "a" * 64),
    ):
        with pytest.raises(JournalOfAnotherTable) as exc:
            settings.open(owner=other)
        msg = exc.value.message
        assert "table MO-R-07 (roulette)" in msg and f"table {other.table_id} ({other.game})" in msg
        assert "\n" not in msg
    # The refusal left the lock free and the journal unchanged.
    j = settings.open(owner=TableOwner("MO-R-07", "roulette", "b" * 64))
    kinds = [(e.kind, e.data) for e in j.chain.events(20) if e.kind in ("journal_table", "rules_changed")]
    assert kinds == [
        ("journal_table", {"table_id": "MO-R-07", "game": "roulette", "rules_sha256": "a" * 64}),
        ("rules_changed", {"from": "a" * 64, "to": "b" * 64}),
    ]
    assert j.audit().ok
    j.close()


def test_a_journal_from_before_the_owner_was_recorded_knows_its_table_by_its_rounds(
    tmp_path: Path,
) -> None:
    path = tmp_path / "journal.sqlite3"
    with Journal(path) as j:  # written before issue 29: no owner recorded
        j.rounds.open_round("MO-R-07", "roulette", {})
    with Journal(path) as j:
        with pytest.raises(JournalOfAnotherTable):
            j.claim(TableOwner("MO-R-07", "sicbo", "a" * 64))
        j.claim(TableOwner("MO-R-07", "roulette", "a" * 64))  # its own: recorded
        assert [e.kind for e in j.chain.events(5)][-1] == "journal_table"


def _run(state: Path, config: str, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*TABLECTL, "run", "--config", str(ROOT / "config" / config), "--state-dir",
         str(state), "--runtime-dir", str(state), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


def _wait_for(proc: subprocess.Popen[str], text: str, timeout: float) -> list[str]:
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    os.set_blocking(proc.stdout.fileno(), False)
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line:
            lines.append(line)
            if text in line:
                return lines
        elif proc.poll() is not None:
            break
        else:
            time.sleep(0.05)
    raise AssertionError(f"{text!r} not seen in {timeout} s: {''.join(lines)}")


def test_a_second_daemon_is_refused_and_the_first_one_plays_on(tmp_path: Path) -> None:
    """The issue's reproduction: ``tablectl run --simulate`` twice on one state directory."""
    state = tmp_path / "state"
    first = _run(state, "roulette.toml", "--simulate", "--interval", "2")
    try:
        _wait_for(first, "ready", 60)
        time.sleep(3)  # a game or two of the simulated wheel
        with Journal(state / "journal.sqlite3", readonly=True) as ro:
            opened = [r.round_id for r in ro.rounds.summary(5)]
        second = subprocess.run(
            [*TABLECTL, "run", "--config", str(ROOT / "config" / "roulette.toml"),
             "--state-dir", str(state), "--runtime-dir", str(state), "--simulate"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        out = second.stdout + second.stderr
        assert second.returncode == 3, out
        assert "STATE_DIR_LOCKED" in out and f"pid {first.pid}" in out, out
        assert str(state / "tablectl.lock") in out and "Traceback" not in out, out
        # The first daemon's rounds are as they were: nothing voided by the second.
        with Journal(state / "journal.sqlite3", readonly=True) as ro:
            for r in ro.rounds.summary(20):
                assert "controller restarted" not in (r.void_reason or ""), r
            assert {r.round_id for r in ro.rounds.summary(20)} >= set(opened)
        # Read-only tools beside it.
        audit = subprocess.run(
            [*TABLECTL, "audit", "verify", "--journal", str(state / "journal.sqlite3")],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert audit.returncode == 0, audit.stdout + audit.stderr
        status = subprocess.run(
            [*TABLECTL, "status", "--socket", str(state / "console.sock")],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert status.returncode == 0, status.stdout + status.stderr
        assert first.poll() is None, "the first daemon stopped"
    finally:
        first.send_signal(signal.SIGTERM)
        try:
            rest = first.communicate(timeout=30)[0]
        except subprocess.TimeoutExpired:
            first.kill()
            rest = first.communicate()[0]
    assert "Traceback" not in rest, rest


def test_another_game_s_configuration_on_a_journal_is_refused_in_one_line(
    tmp_path: Path,
) -> None:
    """The issue's reproduction: config/sicbo.toml on a roulette table's state directory
    printed tracebacks (``KeyError: 'dice'``)."""
    state = tmp_path / "state"
    settings = JournalSettings(path=str(state / "journal.sqlite3"))
    settings.open(owner=TableOwner("roulette-01", "roulette", "a" * 64)).close()
    r = subprocess.run(
        [*TABLECTL, "run", "--config", str(ROOT / "config" / "sicbo.toml"),
         "--state-dir", str(state), "--runtime-dir", str(state)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    out = r.stdout + r.stderr
    assert r.returncode == 3, out
    assert "JOURNAL_OTHER_TABLE" in out and "Traceback" not in out, out
    assert "roulette-01 (roulette)" in out and "(sicbo)" in out, out
