"""Issue 18 item 1: ``replay_rounds``, a signed command asking the table to publish its
finished rounds again from a sequence number, answered from the journal with the bytes
first published, rate-limited (``tests/e2e/test_replay_rounds.py`` checks the bytes as
they arrive over mosquitto)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from firmware_host.table.replay import REPLAY_MAX_ROUNDS, REPLAY_ROUNDS_PER_MINUTE

from .floor_support import Table, make_table, red


def play(t: Table, n: int) -> list[str]:
    ids = []
    for i in range(n):
        r = t.cmd("dealer", "open_betting")
        assert r["status"] == "ok", r
        assert t.bet("pos", red(f"b{i}"))["status"] == "accepted"
        assert t.cmd("dealer", "close_betting")["status"] == "ok"
        r = t.cmd("dealer", "result", args={"outcome": {"number": 1 + i % 36}})
        assert r["status"] == "ok", r
        ids.append(r["data"]["round_id"])
    return ids


def replay(t: Table, who: str, rid: str | None = None, **args: Any) -> dict[str, Any]:
    req = t.build("commands/request", who, {"command": "replay_rounds", "args": args}, rid)
    t.sent[req["request_id"]] = req
    return t.send("commands/request", req)


def published(t: Table) -> dict[str, bytes]:
    """Every round payload in the outbox so far, marked published (the broker took it)."""
    out = {
        e.round_id or "": e.payload for e in t.journal.outbox.pending(10_000) if e.topic == "rounds"
    }
    t.journal.outbox.mark_published([e.id for e in t.journal.outbox.pending(10_000)])
    return out


def test_replay_queues_the_journaled_bytes_again_in_seq_order(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    ids = play(t, 6)
    first = published(t)
    assert list(first) == ids
    r = replay(t, "ingest", from_seq=3, to_seq=5)
    assert r["status"] == "ok", r
    assert r["data"] == {
        "from_seq": 3,
        "to_seq": 5,
        "queued": 3,
        "first_seq": 3,
        "last_seq": 5,
        "newest_seq": 6,
        "more": False,
    }
    again = [e for e in t.journal.outbox.pending(100) if e.topic == "rounds"]
    assert [e.round_id for e in again] == ids[2:5]
    assert [e.payload for e in again] == [first[i] for i in ids[2:5]]  # byte for byte
    # Open-ended: from seq 5 to the newest finished round.
    published(t)
    r = replay(t, "pos", from_seq=5)
    assert r["status"] == "ok" and r["data"]["queued"] == 2 and r["data"]["last_seq"] == 6
    # Beyond the newest: nothing queued, and said so.
    published(t)
    r = replay(t, "ingest", from_seq=7)
    assert r["status"] == "ok" and r["data"]["queued"] == 0 and r["data"]["first_seq"] is None


def test_replay_is_answered_once_by_request_id(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    play(t, 2)
    published(t)
    first = replay(t, "ingest", rid="rp-1", from_seq=1)
    assert first["data"]["queued"] == 2
    published(t)
    assert t.retry("rp-1") == first  # the journaled answer, and nothing queued again
    assert published(t) == {}


def test_replay_needs_the_permission_and_names_no_round(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    play(t, 1)
    published(t)
    r = replay(t, "dealer", from_seq=1)
    assert r["status"] == "error" and r["code"] == "NOT_PERMITTED", r
    req = t.build(
        "commands/request",
        "ingest",
        {"command": "replay_rounds", "round_id": "x", "args": {"from_seq": 1}},
    )
    r = t.send("commands/request", req)
    assert r["code"] == "MALFORMED_REQUEST", r
    for bad in (
        {},
        {"from_seq": 0},
        {"from_seq": "1"},
        {"from_seq": True},
        {"from_seq": 3, "to_seq": 2},
    ):
        r = replay(t, "ingest", **bad)
        assert r["status"] == "error" and r["code"] == "MALFORMED_REQUEST", (bad, r)
    r = replay(t, "ingest", from_seq=1, upto=3)
    assert r["code"] == "UNKNOWN_FIELD", r
    assert published(t) == {}


def test_replay_is_rate_limited_per_request_and_per_minute(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    # Few rounds, many replays: the minute's budget is counted in rounds queued.
    play(t, 3)
    published(t)
    per_request = REPLAY_MAX_ROUNDS
    assert per_request < REPLAY_ROUNDS_PER_MINUTE
    asks = REPLAY_ROUNDS_PER_MINUTE // 3
    for i in range(asks):
        r = replay(t, "ingest", from_seq=1)
        assert r["status"] == "ok" and r["data"]["queued"] == 3, (i, r)
    budget_left = REPLAY_ROUNDS_PER_MINUTE - 3 * asks
    r = replay(t, "ingest", rid="late", from_seq=1)
    if budget_left:
        assert r["data"]["queued"] == budget_left and r["data"]["more"] is True, r
        r = replay(t, "ingest", rid="later", from_seq=1)
    assert r["status"] == "error" and r["code"] == "REPLAY_RATE_LIMITED", r
    assert 0 < r["retry_after_s"] <= 60
    n_before = len(t.journal.outbox.pending(100_000))
    # A minute later the same request, re-signed, acts (the refusal was not journaled).
    t.clock.advance(61)
    again = t.retry(r["request_id"])
    assert again["status"] == "ok" and again["data"]["queued"] == 3, again
    assert len(t.journal.outbox.pending(100_000)) == n_before + 3


def test_budgets_are_per_principal_the_ingest_is_never_starved(tmp_path: Path) -> None:
    """Issue 28: a point-of-sale principal (role floor_system, allowed replay_rounds)
    spends its whole minute's budget; the floor ingest's one-round repair that follows
    is answered, and the point of sale alone waits."""
    t = make_table(tmp_path)
    play(t, 3)
    published(t)
    for i in range(REPLAY_ROUNDS_PER_MINUTE // 3 + 2):
        r = replay(t, "pos", from_seq=1)
        if r["status"] == "error":
            break
        assert r["data"]["queued"] >= 1, (i, r)
    assert r["code"] == "REPLAY_RATE_LIMITED" and "pos" in r["message"], r
    repair = replay(t, "ingest", from_seq=2, to_seq=2)
    assert repair["status"] == "ok", repair
    assert (repair["data"]["queued"], repair["data"]["first_seq"]) == (1, 2), repair
    # And the other way round: the ingest spending its own leaves pos2's untouched.
    for _ in range(REPLAY_ROUNDS_PER_MINUTE // 3 + 2):
        if replay(t, "ingest", from_seq=1)["status"] == "error":
            break
    assert replay(t, "ingest", from_seq=1)["code"] == "REPLAY_RATE_LIMITED"
    assert replay(t, "pos2", from_seq=3, to_seq=3)["status"] == "ok"


def test_one_request_queues_at_most_the_per_request_limit(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    n = REPLAY_MAX_ROUNDS + 20
    # Rounds straight through the journal (the request path is not what is measured).
    for i in range(n):
        r = t.engine.open_betting(source="test")
        t.engine.close_betting(source="test")
        t.engine.submit_result({"number": i % 37}, source="test")
    published(t)
    r = replay(t, "ingest", from_seq=1)
    d = r["data"]
    assert d["queued"] == REPLAY_MAX_ROUNDS and d["last_seq"] == REPLAY_MAX_ROUNDS
    assert d["more"] is True and d["newest_seq"] == n
    published(t)
    r = replay(t, "ingest", from_seq=d["last_seq"] + 1)
    assert r["data"]["queued"] == 20 and r["data"]["more"] is False
