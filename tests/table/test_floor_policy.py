"""Issue 29, against the request handler: who signs in is who signed; one reading of a
request; refusals that cannot grow the journal; the request id on an authentication
refusal (``tests/e2e/test_floor_attacks.py`` repeats the sign-in and the duplicated
member over a real mosquitto)."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path
from typing import Any

from firmware_host.integrity.pace import DealerRoster
from firmware_host.schemas import validate
from firmware_host.table.floor import FloorRequests
from firmware_host.table.refusals import MAX_CLAIMED_NAMES, WINDOW_S
from tests.signing import as_published

from .floor_support import Table, make_table, red


def open_round(t: Table) -> str:
    r = t.cmd("dealer", "open_betting")
    assert r["status"] == "ok", r
    return str(r["data"]["round_id"])


def with_roster(t: Table) -> DealerRoster:
    roster = DealerRoster(t.journal.chain, auth=t.floor.auth.settings)
    t.floor = FloorRequests(t.engine, t.floor.procedure, t.journal, auth=t.floor.auth)
    roster.register_commands(t.floor.commands)  # as the daemon does
    t.engine._dealer = roster.current  # as the daemon builds it: RoundEngine(dealer=...)
    return roster


def sign_in(t: Table, who: str, dealer: str | None = None) -> dict[str, Any]:
    args = {"dealer": dealer} if dealer is not None else {}
    body = {"command": "dealer_sign_in", **({"args": args} if args else {})}
    return t.send("commands/request", t.build("commands/request", who, body))


# -- 4. who signs in is who signed -----------------------------------------------------
def test_a_dealer_cannot_sign_in_as_another_dealer(tmp_path: Path) -> None:
    # The finding: dealer-01 signed dealer_sign_in for dealer-02 and got ok, so the
    # dealer on duty in every round payload could be false.
    t = make_table(tmp_path, dealers={"dealer": "D-0042"})
    roster = with_roster(t)
    r = sign_in(t, "dealer", "D-0099")
    assert (r["status"], r["code"]) == ("error", "DEALER_NOT_BOUND"), r
    assert "D-0042" in r["message"] and roster.current() is None
    validate("command_response", as_published("commands/response", r))
    # as itself (named, or by default): its bound dealer, not its principal's name
    assert sign_in(t, "dealer")["data"]["dealer"] == "D-0042"
    assert sign_in(t, "dealer", "D-0042")["status"] == "ok"
    # a supervisor signs another dealer in, and the chain says who signed in whom
    r = sign_in(t, "pit", "D-0099")
    assert r["status"] == "ok" and roster.current() == "D-0099"
    ins = [e.data for e in t.journal.chain.events(50, kind="dealer_signed_in")]
    assert [(d["dealer"], d["by"], d["authority"]) for d in ins] == [
        ("D-0042", "mqtt:dealer", "bound"),
        ("D-0042", "mqtt:dealer", "bound"),
        ("D-0099", "mqtt:pit", "supervisor"),
    ]
    # the round payload names the dealer who is on duty
    open_round(t)
    assert t.cmd("dealer", "close_betting")["status"] == "ok"
    settled = t.cmd("dealer", "result", args={"outcome": {"number": 1}})
    payload = t.journal.rounds.settlement(settled["data"]["round_id"])
    assert payload["dealer"] == "D-0099", payload
    # the refusal acted nothing and is the journaled answer to that request (authorised
    # to send dealer_sign_in, refused for whom it named)
    assert [a.answer["code"] for a in t.journal.requests.recent(50)
            if a.answer.get("code")] == ["DEALER_NOT_BOUND"]  # fmt: skip


def test_an_unbound_principal_signs_in_only_as_its_own_name(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    roster = with_roster(t)
    assert sign_in(t, "dealer", "pit")["code"] == "DEALER_NOT_BOUND"
    assert sign_in(t, "dealer")["data"]["dealer"] == "dealer"
    # a roster given no policy signs in nobody but the principal's own name
    bare = DealerRoster(t.journal.chain)
    t.floor = FloorRequests(t.engine, t.floor.procedure, t.journal, auth=t.floor.auth)
    bare.register_commands(t.floor.commands)
    assert sign_in(t, "pit", "dealer-9")["code"] == "DEALER_NOT_BOUND"
    assert roster.current() == "dealer"


# -- 5. one reading of a request -------------------------------------------------------
def duplicated_stake(t: Table, rid: str, first: int, last: int) -> bytes:
    """A bet signed over ``last`` (what a last-wins parser reads), with ``"stake":
    first`` put before it in the text (what a first-wins parser reads)."""
    req = t.build(
        "bets/request", "pos",
        {"action": "place", "round_id": t.engine.current.round_id, "bet": red("b1", last)},
        rid,
    )  # fmt: skip
    text = json.dumps(req)
    marker = f'"stake": {last}'
    assert text.count(marker) == 1
    return text.replace(marker, f'"stake": {first}, {marker}').encode()


def test_a_request_with_a_duplicated_member_is_refused_before_anything_reads_it(
    tmp_path: Path,
) -> None:
    # The finding: "stake":10000,"stake":90000 was journaled at 90000 (last wins); a
    # floor system logging with a first-wins parser recorded another stake.
    t = make_table(tmp_path)
    open_round(t)
    before = len(t.journal.requests.recent(1000))
    r = t.floor.answer("bets/request", duplicated_stake(t, "dup-1", 10000, 90000))
    assert (r["status"], r["code"], r["request_id"]) == ("rejected", "DUPLICATE_MEMBER", None)
    assert "principal" not in r and "90000" not in r["message"]
    validate("bet_response", as_published("bets/response", r))
    assert t.engine.desk.bets() == []
    assert len(t.journal.requests.recent(1000)) == before  # nothing journaled
    # at any depth, and in a command too
    cmd = t.build("commands/request", "pit", {"command": "void_round",
                  "round_id": t.engine.current.round_id, "args": {"reason": "x"}})  # fmt: skip
    text = json.dumps(cmd).replace('"reason": "x"', '"reason": "x", "reason": "y"')
    r = t.floor.answer("commands/request", text.encode())
    assert r["code"] == "DUPLICATE_MEMBER" and t.engine.current is not None
    # the same bet sent once, as signed: accepted at its one stake
    ok = t.bet("pos", red("b1", 90000))
    assert ok["status"] == "accepted" and t.engine.desk.bets()[0].stake == 90000


# -- 8. the request id of an authentication refusal ------------------------------------
def test_an_authentication_refusal_carries_the_request_id_and_nothing_else(
    tmp_path: Path,
) -> None:
    # The finding: a refusal answered request_id null even when the id could be read.
    t = make_table(tmp_path)
    rnd = open_round(t)
    void = {"command": "void_round", "round_id": rnd, "args": {"reason": "x"}}
    forged = dict(t.build("commands/request", "pit", void, rid="pit-77"), principal="dealer")
    r = t.send("commands/request", forged)
    assert (r["code"], r["request_id"]) == ("BAD_SIGNATURE", "pit-77")
    assert set(r) == {"schema_version", "table_id", "request_id", "status", "code", "message"}
    assert "dealer" not in r["message"] and "pit" not in r["message"]
    validate("command_response", as_published("commands/response", r))
    cases = {
        "UNKNOWN_PRINCIPAL": dict(forged, principal="stranger"),
        "WRONG_TABLE": t.signer("pit").sign("commands/request", "OTHER\x1b[2J", {
            "request_id": "pit-78", **void}),
        "UNSIGNED": {k: v for k, v in forged.items() if k != "signature"},
    }  # fmt: skip
    for code, req in cases.items():
        r = t.send("commands/request", req)
        assert r["code"] == code and r["request_id"] in ("pit-77", "pit-78"), r
        assert "principal" not in r
        for member in ("stranger", "OTHER", "\x1b"):
            assert member not in r["message"], (code, r["message"])
    # an id not in the identifier form is not echoed (nor quoted in the message)
    bad = dict(forged, request_id="pit\x1b[2J")
    r = t.send("commands/request", bad)
    assert r["request_id"] is None and "\x1b" not in r["message"]
    # nothing of it is journaled, and the real requester's request still acts once
    assert t.journal.requests.answered("pit", "pit-77") is None
    real = t.cmd("pit", "void_round", rid="pit-77", args={"reason": "x"})
    assert real["status"] == "ok" and real["principal"] == "pit"
    assert t.retry("pit-77") == real


# -- 6. refusals cannot grow the journal without bound ---------------------------------
def _journal_bytes(path: Path) -> int:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        pages = con.execute("PRAGMA page_count").fetchone()[0]
        size = con.execute("PRAGMA page_size").fetchone()[0]
        return int(pages) * int(size)
    finally:
        con.close()


def _chain_entries(path: Path) -> int:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return int(con.execute("SELECT count(*) FROM events").fetchone()[0])
    finally:
        con.close()


def test_an_observer_s_refused_requests_are_counted_not_journaled(tmp_path: Path) -> None:
    # The finding: 2,000 NOT_PERMITTED requests from an observer added 2,000 request
    # rows and 2,000 chain entries.
    t = make_table(tmp_path)
    rnd = open_round(t)
    answered = len(t.journal.requests.recent(10_000))
    for i in range(200):
        r = t.cmd("watcher", "void_round", rid=f"w-{i}", round_id=rnd, args={"reason": "x"})
        assert (r["code"], r["principal"], r["request_id"]) == (
            "NOT_PERMITTED",
            "watcher",
            f"w-{i}",
        )
        assert r["command"] == "void_round"
    # a command it cannot name, and a bet: refused the same way, before the journal
    assert t.cmd("watcher", "no_such_command")["code"] == "NOT_PERMITTED"
    assert t.bet("watcher", red("w1"))["code"] == "NOT_PERMITTED"
    assert t.cmd("watcher", "status")["status"] == "ok"  # what it may do
    assert len(t.journal.requests.recent(10_000)) == answered
    assert t.journal.chain.events(10, kind="requests_refused") == []
    # the counts are visible at once, and kept as one chain entry at the window's end
    snap = t.floor.refusals.snapshot()
    assert snap["total"] == 202
    by = {(b["principal"], b["code"]): b["count"] for b in snap["by"]}
    assert by == {("watcher", "NOT_PERMITTED"): 202}
    t.clock.advance(WINDOW_S)
    t.engine.extensions.tick()
    [entry] = t.journal.chain.events(10, kind="requests_refused")
    assert entry.data["total"] == 202
    assert entry.data["counts"] == [
        {"principal": "watcher", "verified": True, "code": "NOT_PERMITTED", "count": 202}
    ]
    # an authorised principal's refusals are still journaled, and answered again
    late = t.cmd("dealer", "open_betting", rid="d-1", after=None)
    assert late["code"] == "STALE_ROUND" and t.retry("d-1") == late
    assert t.journal.requests.answered("dealer", "d-1") is not None


def test_ten_thousand_refused_requests_grow_the_journal_by_a_bounded_amount(
    tmp_path: Path, capsys: Any
) -> None:
    """The measure of issue 29 item 6: 10,000 refused requests, mixed (an observer's
    NOT_PERMITTED, bad signatures, unknown principals under ever new names, unsigned
    ones), over 10 minutes of the table's clock: no request row, one chain entry per
    minute, a few KiB in all. Printed for docs/security.md."""
    t = make_table(tmp_path)
    rnd = open_round(t)
    path = tmp_path / "journal.sqlite3"
    rows0, events0, bytes0 = len(t.journal.requests.recent(100_000)), _chain_entries(path), \
        _journal_bytes(path)  # fmt: skip
    rng = random.Random(29)
    void = {"command": "void_round", "round_id": rnd, "args": {"reason": "flood"}}
    n = 10_000
    step = 600.0 / n  # ten minutes of the table's clock
    for i in range(n):
        kind = i % 4
        if kind == 0:
            r = t.cmd("watcher", "void_round", rid=f"o-{i}", args={"reason": "flood"})
            assert r["code"] == "NOT_PERMITTED"
        elif kind == 1:
            req = dict(t.build("commands/request", "pos", void, rid=f"f-{i}"), principal="pit")
            assert t.send("commands/request", req)["code"] == "BAD_SIGNATURE"
        elif kind == 2:
            name = f"intruder-{rng.randrange(10**9)}"
            req = dict(t.build("commands/request", "pos", void, rid=f"u-{i}"), principal=name)
            assert t.send("commands/request", req)["code"] == "UNKNOWN_PRINCIPAL"
        else:
            assert t.send("commands/request", {"request_id": f"s-{i}", **void})["code"] == (
                "UNSIGNED"
            )
        t.clock.advance(step)
    t.engine.extensions.tick()
    t.floor.refusals.flush()  # what the daemon does when it stops
    rows = len(t.journal.requests.recent(100_000)) - rows0
    entries = _chain_entries(path) - events0
    grown = _journal_bytes(path) - bytes0
    summaries = t.journal.chain.events(100, kind="requests_refused")
    with capsys.disabled():
        print(
            f"\n10,000 refused requests over 600 s of the table's clock: {rows} request rows, "
            f"{entries} chain entries ({len(summaries)} requests_refused), journal +{grown} "
            f"bytes; largest entry {max(len(json.dumps(e.data)) for e in summaries)} bytes"
        )
    assert rows == 0
    assert entries == len(summaries) <= 600 / WINDOW_S + 1
    assert sum(int(e.data["total"]) for e in summaries) == n
    assert grown <= 64 * 1024, grown
    # bounded whatever names are invented: the table's principals, 8 claimed, "other"
    names = {c["principal"] for e in summaries for c in e.data["counts"]}
    assert {"watcher", "pit", "unsigned", "other"} <= names
    assert len(names) <= 4 + MAX_CLAIMED_NAMES
    snap = t.floor.refusals.snapshot()
    assert snap["total"] == n and len(snap["by"]) <= 4 + MAX_CLAIMED_NAMES
    assert t.engine.current is not None and t.engine.current.round_id == rnd  # nothing acted


def test_a_window_that_cannot_be_journaled_is_kept_for_the_next_try() -> None:
    from datetime import UTC, datetime, timedelta

    from firmware_host.journal import JournalFull
    from firmware_host.table.refusals import RefusalLedger

    class Chain:
        def __init__(self) -> None:
            self.full = True
            self.entries: list[Any] = []

        def append_event(self, kind: str, data: Any) -> None:
            if self.full:
                raise JournalFull("disk full")
            self.entries.append((kind, data))

    now = [datetime(2026, 5, 9, 7, 0, tzinfo=UTC)]
    j = Chain()
    ledger = RefusalLedger(j, known=["pos"], clock=lambda: now[0])
    ledger.count("pos", False, "BAD_SIGNATURE")
    now[0] += timedelta(seconds=WINDOW_S)
    ledger.tick()  # the disk is full: nothing journaled, nothing lost
    ledger.count(None, False, "UNSIGNED")
    assert j.entries == [] and ledger.total == 2
    j.full = False
    ledger.tick()
    [(kind, data)] = j.entries
    assert kind == "requests_refused" and data["total"] == 2
    assert [(c["principal"], c["code"]) for c in data["counts"]] == [
        ("pos", "BAD_SIGNATURE"),
        ("unsigned", "UNSIGNED"),
    ]
    assert ledger.flush() is True and len(j.entries) == 1  # an empty window: nothing
