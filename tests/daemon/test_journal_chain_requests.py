"""The audit chain covers the answers to floor requests and who placed each bet (the
merge of issue 14's request journaling with issue 15's chain), and a journal at the
request schema (version 2) migrates to the chain's (version 3)."""

from __future__ import annotations

import shutil
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from _mqtt_support import play_round

from firmware_host.journal import DB_MIGRATIONS, DB_SCHEMA_VERSION, AuditKey, Journal


@pytest.fixture
def key(tmp_path: Path) -> AuditKey:
    return AuditKey.create(tmp_path / "audit.key")


def tamper(path: Path, sql: str, *args: object) -> None:
    """Write behind the journal's back, as an attacker with the file would."""
    db = sqlite3.connect(path, isolation_level=None)
    for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
        db.execute(f"DROP TRIGGER {name}")
    db.execute(sql, args)
    db.close()


ANSWER = {"status": "accepted", "bet_id": "b1", "stake": 500}


def answered_bet(path: Path, key: AuditKey) -> str:
    """A round with one bet placed by ``pos-1`` and its answer, in one transaction (as
    the floor requests write them)."""
    with Journal(path, audit_key=key) as j:
        rnd = j.rounds.open_round("t1", "roulette", {"regulation": "60/2004"})
        with j.db.transaction():
            j.bets.place_bet(
                rnd.round_id,
                {"bet_id": "b1", "seat": 1, "bet_type": "red", "stake": 500},
                principal="pos-1",
            )
            j.requests.record_answer(
                "pos-1", "r1", topic="bets/request", digest="d" * 64, answer=ANSWER,
                round_id=rnd.round_id,
            )  # fmt: skip
        report = j.audit()
        assert report.ok, str(report)
        assert report.checked["requests"] == 1 and report.checked["bets"] == 1
        (entry,) = j.chain.events(5, kind="request_answered")
        assert entry.data["principal"] == "pos-1" and entry.data["request_id"] == "r1"
        (placed,) = j.chain.events(5, kind="bet_placed")
        assert placed.data["principal"] == "pos-1"
        return rnd.round_id


def problems(path: Path, key: AuditKey) -> list[str]:
    with Journal(path, readonly=True) as j:
        return [str(p) for p in j.audit(key).ordered()]


def test_an_answer_rewritten_deleted_or_slipped_in_is_named(tmp_path: Path, key: AuditKey) -> None:
    good = tmp_path / "good.sqlite3"
    answered_bet(good, key)
    for sql, expect in [
        (
            'UPDATE requests SET answer = \'{"status":"rejected"}\'',
            "requests row 1 (pos-1 r1): the answer",
        ),
        ("UPDATE requests SET round_id = 'other'", 'round_id is "other" in the table'),
        ("DELETE FROM requests", "answer to request r1 of pos-1"),
        (
            "INSERT INTO requests (principal, request_id, topic, digest, round_id, verified, "
            "answer, at) VALUES ('pos-9', 'x', 'bets/request', 'd', NULL, 1, '{}', 'now')",
            "requests row 2 (pos-9 x): not in the chain",
        ),
        ("UPDATE bets SET principal = 'pos-2'", 'principal is "pos-2" in the table'),
    ]:
        bad = tmp_path / "bad.sqlite3"
        shutil.copy(good, bad)
        tamper(bad, sql)
        found = problems(bad, key)
        assert found and expect in found[0], (sql, found)
        bad.unlink()
    assert problems(good, key) == []


def test_answers_pruned_by_retention_are_told_from_deleted_ones(
    tmp_path: Path, key: AuditKey
) -> None:
    now = [datetime(2026, 5, 9, 8, 0, tzinfo=UTC)]
    p = tmp_path / "j.sqlite3"
    with Journal(p, audit_key=key, clock=lambda: now[0]) as j:
        for i in range(3):
            j.requests.record_answer("pit-1", f"old-{i}", topic="commands/request", digest="d", answer={})
        now[0] += timedelta(hours=25)  # past request_keep_hours (24)
        j.requests.record_answer("pit-1", "new", topic="commands/request", digest="d", answer={})
        play_round(j)  # retention runs after a finished round
        assert [r.request_id for r in j.requests.recent()] == ["new"]
        (pruned,) = j.chain.events(50, kind="requests_pruned")
        assert pruned.data == {"requests": [["pit-1", f"old-{i}"] for i in range(3)]}
        report = j.audit()
        assert report.ok and report.checked["requests"] == 1, str(report)
    tamper(p, "DELETE FROM requests WHERE request_id = 'new'")
    found = problems(p, key)
    assert found and "answer to request new of pit-1" in found[0], found


def test_a_journal_at_the_request_schema_migrates_to_the_chain_schema(
    tmp_path: Path, key: AuditKey
) -> None:
    """A journal written by main before the chain covered rows (schema version 2: the
    requests table, bets.principal) opens at version 3; its rows are reported as
    written before the chain covered them, not as forged; new rows are chained."""
    path = tmp_path / "v2.sqlite3"
    con = sqlite3.connect(path)
    con.executescript(f"{DB_MIGRATIONS[0]}\n{DB_MIGRATIONS[1]}\nPRAGMA user_version = 2;")
    con.execute(
        "INSERT INTO rounds (round_id, table_id, seq, game, rules, phase, timestamps, "
        "opened_at) VALUES ('t1-1', 't1', 1, 'roulette', '{}', 'open', '{}', 'x')"
    )
    con.execute(
        "INSERT INTO bets (round_id, bet_id, seat, bet_type, selection, stake, status, "
        "placed_at, principal) VALUES ('t1-1', 'b1', 1, 'red', 'null', 100, 'placed', 'x', 'p')"
    )
    con.execute(
        "INSERT INTO requests (principal, request_id, topic, digest, round_id, verified, "
        "answer, at) VALUES ('p', 'r1', 'bets/request', 'd', 't1-1', 1, '{}', 'x')"
    )
    con.commit()
    con.close()
    assert DB_SCHEMA_VERSION >= 3  # migration 3 (the chain covers rows) and later ones
    with Journal(path, audit_key=key) as j:
        assert j.db.schema_version == DB_SCHEMA_VERSION
        assert j.requests.answered("p", "r1") is not None and j.bets.bet("t1-1", "b1") is not None
        j.requests.record_answer("p", "r2", topic="bets/request", digest="d", answer={"ok": 1})
        report = j.audit()
        assert report.ok, str(report)
        assert report.uncovered["requests"] == 1 and report.uncovered["bets"] == 1
        assert report.checked["requests"] == 1
