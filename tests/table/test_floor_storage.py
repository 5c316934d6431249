"""A floor request whose transaction meets a storage fault is refused with the fault's
code, calmly (docs/reliability.md, bug 4 of the fault tests): the change and its answer
are one transaction (issue 14), and a full disk there is DISK_FULL, not INTERNAL_ERROR."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from firmware_host.journal import JournalFull

from .floor_support import make_table, red


def test_a_full_disk_at_the_answer_refuses_the_request_with_its_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    t = make_table(tmp_path)
    opened = t.cmd("dealer", "open_betting")
    assert opened["status"] == "ok", opened
    rid = opened["data"]["round_id"]

    def full(*args: Any, **kwargs: Any) -> Any:
        raise JournalFull("journal.sqlite3: the disk is full (SQLITE_FULL); nothing was written")

    monkeypatch.setattr(t.journal, "record_answer", full)
    caplog.set_level(logging.INFO)
    bet = t.bet("pos", red("b1"))
    assert (bet["status"], bet["code"]) == ("rejected", "DISK_FULL"), bet
    close = t.cmd("dealer", "close_betting")
    assert (close["status"], close["code"]) == ("error", "DISK_FULL"), close
    # Nothing acted (the bet and the close rolled back with their answers), no traceback.
    assert t.journal.bets(rid) == [] and t.journal.round(rid).phase == "open"
    assert not [r for r in caplog.records if r.exc_info], [r.getMessage() for r in caplog.records]
    monkeypatch.undo()
    assert t.bet("pos", red("b1"))["status"] == "accepted"  # space returned: play resumes
