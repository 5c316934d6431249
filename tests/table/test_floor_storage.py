"""A floor request while the journal cannot write (issue 15 item 4 meets issue 14 item 2).

A request acts and journals its answer in ONE transaction, so on a full disk the
failure can come at its ``COMMIT`` (the savepoints before it live in SQLite's page
cache; on a real full tmpfs the WAL append of the commit is what fails,
``tests/fault/test_disk_full.py``). Either way the request is answered with the
storage code (``DISK_FULL``, ``JOURNAL_IO``: ``docs/mqtt.md``, "Error codes"), under its
request id, nothing acted and nothing journaled, and no traceback per request; a retry
once the journal writes again acts once.

Found by the disk-full fault test after the request and storage work were merged:
every request on the full disk was answered ``INTERNAL_ERROR`` with a traceback.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from firmware_host.journal import JournalFull
from firmware_host.journal.storage import GuardedCursor
from firmware_host.table.engine import Phase

from .floor_support import Table, make_table, red

#: (code, SQLite error code, its name, the message) of the two storage faults.
FAULTS = {
    "DISK_FULL": (13, "SQLITE_FULL", "database or disk is full"),
    "JOURNAL_IO": (778, "SQLITE_IOERR_WRITE", "disk I/O error"),
}


def _error(code: int, name: str, text: str) -> sqlite3.Error:
    exc = sqlite3.OperationalError(text)
    exc.sqlite_errorcode = code  # type: ignore[attr-defined]
    exc.sqlite_errorname = name  # type: ignore[attr-defined]
    return exc


@pytest.fixture
def failing(monkeypatch: pytest.MonkeyPatch) -> Callable[[str | None, bool], None]:
    """``failing(code, commit_only)``: the journal's writes fail with ``code`` (every
    writing statement, or only ``COMMIT``); ``failing(None, ...)``: they work again."""
    state: dict[str, Any] = {"code": None, "commit_only": False}
    real = GuardedCursor.execute

    def execute(self: GuardedCursor, sql: str, params: Any = ()) -> Any:
        head = sql.lstrip().split(None, 1)[0].upper()
        writes = (
            head == "COMMIT"
            if state["commit_only"]
            else head in ("INSERT", "UPDATE", "DELETE", "COMMIT") or "user_version =" in sql
        )
        if state["code"] is not None and writes:
            raise _error(*FAULTS[state["code"]])
        return real(self, sql, params)  # fmt: skip

    monkeypatch.setattr(GuardedCursor, "execute", execute)

    def switch(code: str | None, commit_only: bool = True) -> None:
        state.update(code=code, commit_only=commit_only)

    return switch


def _tracebacks(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.exc_info]


@pytest.mark.parametrize("code", sorted(FAULTS))
@pytest.mark.parametrize("commit_only", [True, False], ids=["at-commit", "every-write"])
def test_a_request_the_journal_cannot_write_is_answered_with_the_storage_code_and_acts_once_later(
    tmp_path: Path,
    failing: Callable[[str | None, bool], None],
    caplog: pytest.LogCaptureFixture,
    code: str,
    commit_only: bool,
) -> None:
    caplog.set_level(logging.INFO)
    t: Table = make_table(tmp_path)
    t.journal.db.storage.probe_interval = 0.0
    opened = t.cmd("dealer", "open_betting")
    assert opened["status"] == "ok", opened
    assert t.bet("pos", red("b1"), rid="bet-1")["status"] == "accepted"

    failing(code, commit_only)
    bet = t.bet("pos", red("b2"), rid="bet-2")
    close = t.cmd("dealer", "close_betting", rid="close-1")
    again = t.bet("pos", red("b3"), rid="bet-3")  # the fault is latched by now
    for answer, request_id, status in (
        (bet, "bet-2", "rejected"),
        (close, "close-1", "error"),
        (again, "bet-3", "rejected"),
    ):
        assert (answer["status"], answer["code"], answer["request_id"]) == (
            status,
            code,
            request_id,
        ), answer
        assert answer["principal"] in ("pos", "dealer")
        assert "\n" not in answer["message"]
    assert bet["action"] == "place" and close["command"] == "close_betting"
    assert not _tracebacks(caplog), _tracebacks(caplog)
    raised = [r for r in caplog.records if f"storage fault {code}" in r.getMessage()]
    assert len(raised) == 1, "one log line for the fault, none per request"

    failing(None)
    # Nothing acted, nothing journaled: the round is as it was, the answers not kept.
    assert t.engine.phase is Phase.OPEN
    assert [b.bet_id for b in t.engine.desk.bets()] == ["b1"]
    for request_id, who in (("bet-2", "pos"), ("close-1", "dealer"), ("bet-3", "pos")):
        assert t.journal.requests.answered(who, request_id) is None
    # The sender retries (same request ids) once the journal writes again: each acts once.
    retried = t.retry("bet-2")
    assert retried["status"] == "accepted", (retried["code"], retried["message"])
    assert t.retry("close-1")["status"] == "ok"
    assert t.engine.phase is Phase.CLOSED
    assert t.retry("bet-3")["code"] == "BETTING_CLOSED"
    assert t.retry("bet-2")["status"] == "accepted"  # the journaled answer, acting nothing
    assert sorted(b.bet_id for b in t.engine.desk.bets()) == ["b1", "b2"]
    assert t.journal.db.storage.fault is None


def test_a_storage_refusal_is_never_the_journaled_answer_a_retry_gets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One write fails (a transient I/O error on the bet's own row) and the journal
    # writes again at once: the answer to that request could be committed, but it
    # says nothing acted; journaled, every retry of the request id would get it forever.
    t: Table = make_table(tmp_path)
    t.journal.db.storage.probe_interval = 0.0
    assert t.cmd("dealer", "open_betting")["status"] == "ok"
    real = GuardedCursor.execute
    left = {"n": 1}

    def execute(self: GuardedCursor, sql: str, params: Any = ()) -> Any:
        if left["n"] and sql.lstrip().startswith("INSERT INTO bets"):
            left["n"] -= 1
            raise _error(*FAULTS["JOURNAL_IO"])
        return real(self, sql, params)  # fmt: skip

    monkeypatch.setattr(GuardedCursor, "execute", execute)
    first = t.bet("pos", red("b1"), rid="bet-1")
    assert (first["status"], first["code"], first["request_id"]) == (
        "rejected",
        "JOURNAL_IO",
        "bet-1",
    )
    assert t.journal.requests.answered("pos", "bet-1") is None
    assert t.engine.desk.bets() == []
    retried = t.retry("bet-1")
    assert retried["status"] == "accepted", retried
    assert [b.bet_id for b in t.engine.desk.bets()] == ["b1"]
    assert t.journal.db.storage.fault is None


def test_a_full_disk_at_the_answer_refuses_the_request_with_its_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    t = make_table(tmp_path)
    opened = t.cmd("dealer", "open_betting")
    assert opened["status"] == "ok", opened
    rid = opened["data"]["round_id"]

    def full(*args: Any, **kwargs: Any) -> Any:
        raise JournalFull("journal.sqlite3: the disk is full (SQLITE_FULL); nothing was written")

    monkeypatch.setattr(t.journal.requests, "record_answer", full)
    caplog.set_level(logging.INFO)
    bet = t.bet("pos", red("b1"))
    assert (bet["status"], bet["code"]) == ("rejected", "DISK_FULL"), bet
    close = t.cmd("dealer", "close_betting")
    assert (close["status"], close["code"]) == ("error", "DISK_FULL"), close
    # Nothing acted (the bet and the close rolled back with their answers), no traceback.
    assert t.journal.bets.bets(rid) == [] and t.journal.rounds.round(rid).phase == "open"
    assert not [r for r in caplog.records if r.exc_info], [r.getMessage() for r in caplog.records]
    monkeypatch.undo()
    assert t.bet("pos", red("b1"))["status"] == "accepted"  # space returned: play resumes
