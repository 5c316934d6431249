"""The shift's accounting and the players' sessions (issue 34 items 2 and 3), against
the floor's request handler: signed requests by role, each step in the audit chain,
every refusal with its code and nothing recorded, dual control, the win, hold, game
result and theoretical win computed apart here from the chips that moved.

Roulette (60/2004): every bet here is on red or black, paying 1:1 (art. 7 16), 17)),
losing on zero (art. 8), so each bet's house edge is 1/37 (18 winning pockets of 37:
1 - 2 * 18/37) and its theoretical win stake/37; the test computes these itself."""

from __future__ import annotations

import json
import sqlite3
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from firmware_host.auth import AuthSettings
from firmware_host.journal import Journal
from firmware_host.schemas import validate
from firmware_host.table.accounts import ShiftAccounts, percent
from firmware_host.table.floor import FloorRequests
from firmware_host.table.sessions import PlayerSessions
from tests.signing import as_published

from .floor_support import Table, make_table

ROULETTE = {
    "table": {"id": "T1", "game": "roulette", "result_source": "manual", "payable_unit": 100},
    "limits": {"min_stake": 100, "max_stake": 1_000_000},
}


def with_accounts(
    t: Table, *, two_person: tuple[str, ...] = ()
) -> tuple[ShiftAccounts, PlayerSessions]:
    """The table's accounts and sessions registered as the daemon does (build_parts)."""
    j = t.journal
    accounts = ShiftAccounts(j.db, j.chain, j.rounds, j.requests, table_id="T1",
                             money=t.engine.cfg.money,
                             round_in_flight=lambda: t.engine.current is not None, clock=t.clock)  # fmt: skip
    sessions = PlayerSessions(j.db, j.chain, j.rounds, table_id="T1", currency="MOP", clock=t.clock)
    auth = t.floor.auth
    if two_person:
        s = auth.settings
        auth.settings = AuthSettings(signatures=True, max_age_s=30, principals=s.principals,
                                     two_person=frozenset(two_person))  # fmt: skip
    t.floor = FloorRequests(t.engine, t.floor.procedure, j, auth=auth)
    accounts.register_commands(t.floor.commands)
    sessions.register_commands(t.floor.commands)
    return accounts, sessions


def cmd(t: Table, who: str, command: str, rid: str | None = None, **args: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"command": command}
    if args:
        body["args"] = args
    r = t.send("commands/request", t.build("commands/request", who, body, rid))
    validate("command_response", as_published("commands/response", r))
    return r


def ok(r: dict[str, Any]) -> dict[str, Any]:
    assert r["status"] == "ok", r
    return r["data"]


def play(t: Table, number: int, bets: list[tuple[str, int, str, int]]) -> dict[str, Any]:
    """One round: ``bets`` (bet id, seat, red/black, stake), the ball on ``number``."""
    assert t.cmd("dealer", "open_betting")["status"] == "ok"
    for bet_id, seat, colour, stake in bets:
        r = t.bet("pos", {"bet_id": bet_id, "seat": seat, "bet_type": colour, "stake": stake})
        assert r["status"] == "accepted", r
    assert t.cmd("dealer", "close_betting")["status"] == "ok"
    r = t.cmd("dealer", "result", args={"outcome": {"number": number}})
    assert r["status"] == "ok", r
    return t.journal.rounds.settlement(r["data"]["round_id"])


RED = {1, 3, 5, 7, 9, 12, 14, 16, 18, 19, 21, 23, 25, 27, 30, 32, 34, 36}


def house_net(number: int, bets: list[tuple[str, int, str, int]]) -> int:
    """60/2004 art. 7 16)-17), art. 8: red/black pay 1:1, lose on zero."""
    out = 0
    for _id, _seat, colour, stake in bets:
        wins = number != 0 and ((number in RED) == (colour == "red"))
        out += -stake if wins else stake
    return out


def test_a_shift_balances_to_the_minor_unit(tmp_path: Path) -> None:
    t = make_table(tmp_path, doc=ROULETTE)
    accounts, _ = with_accounts(t)
    opener = 5_000_000
    r = ok(cmd(t, "pit", "shift_open", shift_id="2026-05-09-day", amount=opener))
    assert (r["status"], r["opener"], r["recorded"]) == ("open", opener, True)
    # the tray, counted apart: players buy chips with cash (which goes to the drop box)
    tray, cash = opener, 0
    tray -= 300_000
    cash += 300_000
    rounds = [
        (17, [("a1", 1, "red", 10_000), ("a2", 2, "black", 25_000)]),
        (0, [("b1", 1, "red", 20_000), ("b2", 3, "black", 5_000)]),
        (8, [("c1", 2, "black", 40_000)]),
        (3, [("d1", 1, "black", 10_000), ("d2", 1, "red", 10_000)]),
    ]
    net = 0
    stakes = 0
    for number, bets in rounds:
        payload = play(t, number, bets)
        assert payload["totals"]["house_net"] == house_net(number, bets)
        net += house_net(number, bets)
        stakes += sum(b[3] for b in bets)
        tray += house_net(number, bets)
    # a void round moves nothing
    assert t.cmd("dealer", "open_betting")["status"] == "ok"
    assert (
        t.bet("pos", {"bet_id": "v1", "seat": 1, "bet_type": "red", "stake": 5000})["status"]
        == "accepted"
    )
    assert t.cmd("pit", "void_round", args={"reason": "ball off the wheel"})["status"] == "ok"
    ok(cmd(t, "pit", "fill", slip="F-001", amount=1_000_000))
    tray += 1_000_000
    ok(cmd(t, "pit", "credit", slip="C-001", amount=200_000))
    tray -= 200_000
    ok(cmd(t, "pit", "drop", slip="BOX-1", amount=200_000))
    ok(cmd(t, "pit", "drop", slip="BOX-2", amount=cash - 200_000))
    closed = ok(cmd(t, "pit", "shift_close", amount=tray))
    win = tray - opener + 200_000 - 1_000_000 + cash
    theo = Fraction(stakes, 37)
    assert closed["status"] == "closed"
    assert (closed["win"], closed["game_result"], closed["difference"]) == (win, net, 0)
    assert win == net  # every chip accounted for
    assert (closed["fills_total"], closed["credits_total"], closed["drop"]) == (
        1_000_000,
        200_000,
        cash,
    )
    assert (closed["rounds"], closed["voids"]) == (4, 1)
    assert closed["theo_exact"] == f"{theo.numerator}/{theo.denominator}"
    assert closed["theo"] == round(theo) and closed["variance"] == win - round(theo)
    assert closed["hold"] == f"{Fraction(win, cash).numerator}/{Fraction(win, cash).denominator}"
    assert closed["hold_pct"] == percent(Fraction(win, cash))
    # the chain holds every step; the published shift is the last retained `shift`
    kinds = [e.kind for e in t.journal.chain.events(200) if e.kind.startswith("shift_")]
    assert kinds == ["shift_opened", "shift_fill", "shift_credit", "shift_drop", "shift_drop",
                     "shift_closed"]  # fmt: skip
    published = [m for m in t.journal.outbox.pending(10_000) if m.topic == "shift"]
    assert len(published) == 6 and all(m.retain for m in published)
    last = json.loads(bytes(published[-1].payload))
    validate("shift", last)
    assert last["win"] == win and last["status"] == "closed"
    # read back after a restart: the same shift
    again = ShiftAccounts(t.journal.db, t.journal.chain, t.journal.rounds, t.journal.requests,
                          table_id="T1", money=t.engine.cfg.money, round_in_flight=lambda: False)  # fmt: skip
    assert again.report() == accounts.report()
    # a fill after the close
    r = cmd(t, "pit", "fill", slip="F-002", amount=100)
    assert (r["status"], r["code"]) == ("error", "SHIFT_CLOSED")


def test_percent_is_half_to_even() -> None:
    assert percent(Fraction(1, 8)) == "12.50"
    assert percent(Fraction(123_45, 1_000_000) / 100 * 100) == "1.23"  # 1.2345 -> 1.23
    assert percent(Fraction(12355, 1_000_000)) == "1.24"  # 1.2355 -> 1.24 (even)
    assert percent(Fraction(-1, 3)) == "-33.33"


def steps(t: Table) -> list[str]:
    return [e.kind for e in t.journal.chain.events(500) if e.kind.startswith("shift_")]


@pytest.mark.parametrize(
    ("command", "args", "code"),
    [
        ("fill", {"slip": "F1", "amount": -100}, "AMOUNT_NEGATIVE"),
        ("fill", {"slip": "F1", "amount": 150}, "AMOUNT_NOT_WHOLE_UNIT"),
        ("fill", {"slip": "F1", "amount": 12.5}, "AMOUNT_MALFORMED"),
        ("fill", {"slip": "F1", "amount": "100"}, "AMOUNT_MALFORMED"),
        ("fill", {"slip": "F1", "amount": True}, "AMOUNT_MALFORMED"),
        ("fill", {"slip": "F1", "amount": 0}, "AMOUNT_ZERO"),
        ("credit", {"slip": "C1", "amount": 10**16}, "AMOUNT_TOO_LARGE"),
        ("drop", {"slip": "has space", "amount": 100}, "BAD_IDENTIFIER"),
        ("shift_close", {"amount": -1}, "AMOUNT_NEGATIVE"),
    ],
)
def test_a_bad_amount_is_refused_with_its_code(tmp_path: Path, command, args, code) -> None:
    t = make_table(tmp_path, doc=ROULETTE)
    with_accounts(t)
    ok(cmd(t, "pit", "shift_open", shift_id="S1", amount=1000))
    r = cmd(t, "pit", command, **args)
    assert (r["status"], r["code"]) == ("error", code), r
    assert steps(t) == ["shift_opened"]


def test_steps_out_of_order_are_refused(tmp_path: Path) -> None:
    t = make_table(tmp_path, doc=ROULETTE)
    with_accounts(t)
    for command, args in [("fill", {"slip": "F1", "amount": 100}),
                          ("credit", {"slip": "C1", "amount": 100}),
                          ("drop", {"slip": "D1", "amount": 100}),
                          ("shift_close", {"amount": 100})]:  # fmt: skip
        r = cmd(t, "pit", command, **args)
        assert (r["status"], r["code"]) == ("error", "NO_SHIFT_OPEN"), r
    ok(cmd(t, "pit", "shift_open", shift_id="S1", amount=1000))
    r = cmd(t, "pit", "shift_open", shift_id="S2", amount=1000)
    assert r["code"] == "SHIFT_ALREADY_OPEN"
    ok(cmd(t, "pit", "fill", slip="F1", amount=100))
    assert cmd(t, "pit", "fill", slip="F1", amount=100)["code"] == "SLIP_ALREADY_RECORDED"
    assert cmd(t, "pit", "drop", slip="F1", amount=100)["code"] == "SLIP_ALREADY_RECORDED"
    # the inventory is counted between rounds
    assert t.cmd("dealer", "open_betting")["status"] == "ok"
    assert cmd(t, "pit", "shift_close", amount=1100)["code"] == "ROUND_IN_PROGRESS"
    assert t.cmd("pit", "void_round", args={"reason": "count"})["status"] == "ok"
    ok(cmd(t, "pit", "shift_close", amount=1100))
    assert cmd(t, "pit", "shift_close", amount=1100)["code"] == "SHIFT_CLOSED"
    assert cmd(t, "pit", "shift_open", shift_id="S1", amount=1000)["code"] == "SHIFT_ID_TAKEN"
    assert steps(t) == ["shift_opened", "shift_fill", "shift_closed"]
    ok(cmd(t, "pit", "shift_open", shift_id="S2", amount=1100))


def test_unsigned_and_the_wrong_role_are_refused(tmp_path: Path) -> None:
    t = make_table(tmp_path, doc=ROULETTE)
    with_accounts(t)
    for who in ("dealer", "pos", "watcher", "ingest"):
        r = cmd(t, who, "shift_open", shift_id="S1", amount=1000)
        assert (r["status"], r["code"]) == ("error", "NOT_PERMITTED"), r
    unsigned = {"request_id": "u1", "command": "fill", "args": {"slip": "F", "amount": 100}}
    r = t.send("commands/request", unsigned)
    assert (r["status"], r["code"]) == ("error", "UNSIGNED"), r
    # a forged signature: the pit's request signed by the dealer's key
    req = t.build("commands/request", "dealer", {"command": "shift_open",
                                                 "args": {"shift_id": "S1", "amount": 1000}})  # fmt: skip
    req["principal"] = "pit"
    r = t.send("commands/request", req)
    assert r["status"] == "error" and r["code"] == "BAD_SIGNATURE", r
    assert steps(t) == []


def test_dual_control_where_the_policy_says(tmp_path: Path) -> None:
    t = make_table(tmp_path, doc=ROULETTE)
    with_accounts(t, two_person=("fill", "shift_open"))
    first = ok(cmd(t, "pit", "shift_open", shift_id="S1", amount=1000))
    assert first["recorded"] is False and first["confirmed_by"] == ["pit"]
    r = cmd(t, "pit", "shift_open", shift_id="S1", amount=1000)
    assert r["code"] == "SECOND_PRINCIPAL_REQUIRED"
    # a second confirmation of another amount is another step: nothing recorded
    assert ok(cmd(t, "pit2", "shift_open", shift_id="S1", amount=900))["recorded"] is False
    done = ok(cmd(t, "pit2", "shift_open", shift_id="S1", amount=1000))
    assert done["recorded"] is True and done["opened_by"] == ["pit", "pit2"]
    ok(cmd(t, "pit", "credit", slip="C1", amount=100))  # not in two_person: at once
    assert ok(cmd(t, "pit", "fill", slip="F1", amount=500))["recorded"] is False
    assert ok(cmd(t, "pit2", "fill", slip="F1", amount=500))["fills"][0]["by"] == ["pit", "pit2"]
    assert steps(t) == ["shift_opened", "shift_credit", "shift_fill"]


def test_a_fill_changed_in_the_journal_breaks_the_audit(tmp_path: Path) -> None:
    from firmware_host.journal import AuditKey

    key = AuditKey.create(tmp_path / "audit.key")
    j = Journal(tmp_path / "j.sqlite3", audit_key=key)
    t = make_table(tmp_path, doc=ROULETTE, journal=j)
    with_accounts(t)
    ok(cmd(t, "pit", "shift_open", shift_id="S1", amount=1000))
    ok(cmd(t, "pit", "fill", slip="F1", amount=500))
    assert j.chain.verify().ok
    j.close()
    db = sqlite3.connect(tmp_path / "j.sqlite3")
    for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
        db.execute(f"DROP TRIGGER {name}")
    db.execute("UPDATE events SET data = replace(data, '\"amount\":500', '\"amount\":50') "
               "WHERE kind = 'shift_fill'")  # fmt: skip
    db.commit()
    db.close()
    j2 = Journal(tmp_path / "j.sqlite3", audit_key=key)
    report = j2.chain.verify()
    assert not report.ok
    j2.close()


# -- player sessions ---------------------------------------------------------------
def test_a_players_session(tmp_path: Path) -> None:
    t = make_table(tmp_path, doc=ROULETTE)
    _, sessions = with_accounts(t)
    play(t, 5, [("x0", 1, "red", 9_900)])  # before the session: not counted
    r = ok(cmd(t, "pos", "session_open", session_id="SES-1", seat=1, player="P-8f3a"))
    assert r["seat"] == 1
    assert (
        cmd(t, "pos", "session_open", session_id="SES-2", seat=1, player="P-x")["code"]
        == "SEAT_SESSION_OPEN"
    )
    assert (
        cmd(t, "pos", "session_open", session_id="SES-1", seat=2, player="P-x")["code"]
        == "SESSION_ID_TAKEN"
    )
    assert (
        cmd(t, "pos", "session_open", session_id="S3", seat=0, player="P-x")["code"]
        == "MALFORMED_REQUEST"
    )
    assert (
        cmd(t, "dealer", "session_open", session_id="S3", seat=2, player="P-x")["code"]
        == "NOT_PERMITTED"
    )
    games = [
        (17, [("a1", 1, "red", 10_000), ("a2", 2, "black", 25_000)]),  # seat 1 loses
        (0, [("b1", 2, "red", 20_000)]),  # seat 1 did not play
        (3, [("c1", 1, "red", 30_000), ("c2", 1, "black", 5_000)]),  # wins 30,000, loses 5,000
    ]
    for number, bets in games:
        play(t, number, bets)
    t.clock.advance(1800)
    done = ok(cmd(t, "pos", "session_close", session_id="SES-1"))
    assert (done["rounds"], done["stakes"], done["seconds"]) == (2, 45_000, 1800)
    assert done["player_net"] == -10_000 + 30_000 - 5_000 == -done["house_win"]
    theo = Fraction(45_000, 37)
    assert done["theo_exact"] == f"{theo.numerator}/{theo.denominator}" and done["theo"] == round(
        theo
    )
    assert done["average_stake"] == 22_500 and done["player"] == "P-8f3a"
    published = [json.loads(bytes(m.payload)) for m in t.journal.outbox.pending(10_000)
                 if m.topic == "sessions"]  # fmt: skip
    assert len(published) == 1 and published[0]["session_id"] == "SES-1"
    validate("session", published[0])
    assert cmd(t, "pos", "session_close", session_id="SES-1")["code"] == "SESSION_NOT_OPEN"
    # the seat is free again; a restart reads the open sessions back
    ok(cmd(t, "pos", "session_open", session_id="SES-4", seat=1, player="P-8f3a"))
    again = PlayerSessions(t.journal.db, t.journal.chain, t.journal.rounds, table_id="T1",
                           currency="MOP")  # fmt: skip
    assert set(again.open) == {"SES-4"} and "SES-1" in again.used
    assert sessions.open.keys() == again.open.keys()
