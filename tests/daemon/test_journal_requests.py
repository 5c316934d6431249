"""The journal's side of issue 14: transactions grouping several operations (each a
savepoint), the answers to floor requests by (principal, request_id) and how long
they are kept, and two-person approvals."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from _mqtt_support import play_round

from firmware_host.journal import Journal, RequestIdTaken, RoundFinished


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 5, 9, 7, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def test_a_grouped_transaction_commits_all_or_nothing(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.sqlite3")
    seen: list[str] = []
    with j.db.transaction():
        rnd = j.rounds.open_round("t1", "roulette", {"regulation": "60/2004"})
        j.db.after_commit(lambda: seen.append("committed"))
        assert seen == [] and j.db.in_transaction
        # an operation that fails inside is undone alone (its savepoint)...
        j.rounds.void_round(rnd.round_id, "first", {"round_id": rnd.round_id, "status": "void"})
        with pytest.raises(RoundFinished):
            j.rounds.void_round(rnd.round_id, "again", {"round_id": rnd.round_id, "status": "void"})
        j.requests.record_answer("p", "r1", topic="commands/request", digest="d", answer={"ok": 1})
    assert seen == ["committed"] and not j.db.in_transaction
    assert j.rounds.round(rnd.round_id).void_reason == "first"
    assert j.requests.answered("p", "r1").answer == {"ok": 1}
    # ... and a block that raises undoes everything in it, telling who asked
    undone: list[str] = []
    with pytest.raises(RuntimeError), j.db.transaction():
        rnd2 = j.rounds.open_round("t1", "roulette", {"regulation": "60/2004"})
        j.db.on_rollback(lambda: undone.append("rolled back"))
        j.db.after_commit(lambda: seen.append("never"))
        raise RuntimeError("power cut")
    assert undone == ["rolled back"] and seen == ["committed"]
    assert [r.round_id for r in j.rounds.in_flight()] == []
    assert rnd2.round_id not in {r.round_id for r in j.rounds.summary(10)}
    j.db.after_commit(lambda: seen.append("now"))  # no transaction open: at once
    assert seen[-1] == "now"


def test_a_request_id_is_answered_once_per_principal(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.sqlite3")
    j.requests.record_answer("pos-1", "r1", topic="bets/request", digest="a", answer={"n": 1})
    with pytest.raises(RequestIdTaken):
        j.requests.record_answer("pos-1", "r1", topic="bets/request", digest="b", answer={"n": 2})
    j.requests.record_answer("pos-2", "r1", topic="bets/request", digest="b", answer={"n": 2})
    assert j.requests.answered("pos-1", "r1").answer == {"n": 1}
    assert j.requests.answered("pos-2", "r1").digest == "b"
    assert j.requests.answered("pos-3", "r1") is None


def test_answers_are_kept_24_hours_and_while_their_round_keeps_its_bets(tmp_path: Path) -> None:
    clock = Clock()
    j = Journal(tmp_path / "j.sqlite3", raw_frame_rounds=10, full_rounds=10, clock=clock)
    with pytest.raises(ValueError, match="at least 24"):
        Journal(tmp_path / "k.sqlite3", request_keep_hours=23)
    first = play_round(j)
    j.requests.record_answer("p", "old-no-round", topic="commands/request", digest="x", answer={})
    j.requests.record_answer("p", "old-round", topic="bets/request", digest="x", answer={}, round_id=first)
    clock.now += timedelta(hours=23)
    j.requests.record_answer("p", "recent", topic="commands/request", digest="x", answer={})
    clock.now += timedelta(hours=2)  # the first two are 25 hours old now
    play_round(j)  # a finished round runs retention
    assert j.requests.answered("p", "old-no-round") is None
    assert j.requests.answered("p", "old-round") is not None  # its round still keeps its bets
    assert j.requests.answered("p", "recent") is not None
    for _ in range(10):
        play_round(j)
    assert j.rounds.round(first).detail == "summary"
    assert j.requests.answered("p", "old-round") is None
    assert j.requests.answered("p", "recent") is not None  # 2 hours old


def test_approvals_of_two_person_actions(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.sqlite3")
    assert j.requests.approve("jackpot_paid", "hit-1", "pit-1", "r1") == ["pit-1"]
    assert j.requests.approve("jackpot_paid", "hit-1", "pit-1", "r2") == ["pit-1"]  # idempotent
    assert j.requests.approve("jackpot_paid", "hit-1", "pit-2", "r3") == ["pit-1", "pit-2"]
    assert j.requests.approvals("jackpot_paid", "hit-2") == []
    j.requests.clear_approvals("jackpot_paid", "hit-1")
    assert j.requests.approvals("jackpot_paid", "hit-1") == []


def test_a_journal_of_schema_1_is_upgraded_with_its_bets_kept(tmp_path: Path) -> None:
    import sqlite3

    from firmware_host.journal import DB_MIGRATIONS

    path = tmp_path / "old.sqlite3"
    con = sqlite3.connect(path)
    con.executescript(DB_MIGRATIONS[0] + "\nPRAGMA user_version = 1;")
    con.execute(
        "INSERT INTO rounds (round_id, table_id, seq, game, rules, phase, timestamps, "
        "opened_at) VALUES ('t1-1', 't1', 1, 'roulette', '{}', 'open', '{}', 'x')"
    )
    con.execute(
        "INSERT INTO bets (round_id, bet_id, seat, bet_type, selection, stake, status, "
        "placed_at) VALUES ('t1-1', 'b1', 1, 'red', 'null', 100, 'placed', 'x')"
    )
    con.commit()
    con.close()
    j = Journal(path)
    assert j.db.schema_version == len(DB_MIGRATIONS)
    bet = j.bets.bet("t1-1", "b1")
    assert bet is not None and bet.principal is None and bet.stake == 100
