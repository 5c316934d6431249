"""Issue 14: every command and bet acts once, on the round it names, from someone
allowed to send it. Each attack of the issue, against the floor's request handler
(``tests/e2e/test_floor_attacks.py`` repeats them over a real mosquitto)."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from firmware_host.table.engine import BetCaps, Phase
from firmware_host.table.floor import FloorRequests
from firmware_host.table.procedures import Device

from .floor_support import Table, make_table, red


def open_round(t: Table) -> str:
    r = t.cmd("dealer", "open_betting")
    assert r["status"] == "ok", r
    return r["data"]["round_id"]


def settle(t: Table, number: int = 1) -> dict:
    assert t.cmd("dealer", "close_betting")["status"] == "ok"
    r = t.cmd("dealer", "result", args={"outcome": {"number": number}})
    assert r["status"] == "ok", r
    return r


def test_a_retried_void_after_the_next_round_opened_acts_nothing(tmp_path: Path) -> None:
    # The attack: void_round retried with its request_id (as docs/mqtt.md tells a
    # requester to do) voided the NEXT round.
    t = make_table(tmp_path)
    first = open_round(t)
    void = t.cmd("pit", "void_round", rid="void-1", args={"reason": "ball left the wheel"})
    assert void["status"] == "ok" and void["data"]["round_id"] == first
    second = open_round(t)
    assert t.bet("pos", red("b1"))["status"] == "accepted"
    again = t.retry("void-1")
    assert again == void  # the original answer, byte for byte
    assert t.engine.current is not None and t.engine.current.round_id == second
    assert t.engine.phase is Phase.OPEN and len(t.engine.desk.bets()) == 1
    # A NEW void naming the old round is refused, naming the round in progress.
    stale = t.cmd("pit", "void_round", round_id=first, args={"reason": "late"})
    assert (stale["status"], stale["code"], stale["round_id"]) == ("error", "STALE_ROUND", second)
    assert second in stale["message"]
    assert len(t.journal.chain.events(100, kind="round_void")) == 1


def test_a_retried_result_after_the_next_round_opened_settles_nothing(tmp_path: Path) -> None:
    # The attack: result {"number": 4} retried settled the next round with 4, and a
    # player was paid on it.
    t = make_table(tmp_path)
    first = open_round(t)
    assert t.cmd("dealer", "close_betting")["status"] == "ok"
    res = t.cmd("dealer", "result", rid="res-1", args={"outcome": {"number": 4}})
    assert res["status"] == "ok" and res["data"]["round_id"] == first
    second = open_round(t)
    assert (
        t.bet(
            "pos",
            {"bet_id": "s4", "seat": 2, "bet_type": "straight", "selection": [4], "stake": 1000},
        )["status"]
        == "accepted"
    )
    assert t.cmd("dealer", "close_betting")["status"] == "ok"
    assert t.retry("res-1") == res
    assert t.engine.current is not None and t.engine.current.round_id == second
    assert t.engine.phase is Phase.CLOSED  # still waiting for ITS result
    stale = t.cmd("dealer", "result", round_id=first, args={"outcome": {"number": 4}})
    assert (stale["code"], stale["round_id"]) == ("STALE_ROUND", second)
    assert t.journal.rounds.settlement(second) is None


def test_a_retried_accepted_bet_is_accepted_in_every_phase(tmp_path: Path) -> None:
    # The attack: a bet accepted, re-sent after close, was answered BETTING_CLOSED
    # though it stood and was settled; a cashier trusting that refunds a live bet.
    t = make_table(tmp_path)
    rnd = open_round(t)
    placed = t.bet("pos", red("b1"), rid="bet-1")
    assert placed["status"] == "accepted"
    assert t.cmd("dealer", "close_betting")["status"] == "ok"
    for phase in ("closed", "settled", "next round open"):
        # the same request again (its answer), and a NEW request for the same bet
        assert t.retry("bet-1") == placed, phase
        again = t.bet("pos", red("b1"), round_id=rnd)
        assert (again["status"], again["round_id"], again["bet"]) == (
            "accepted",
            rnd,
            placed["bet"],
        ), phase
        if phase == "closed":
            t.cmd("dealer", "result", args={"outcome": {"number": 1}})  # red 1: b1 wins
        elif phase == "settled":
            open_round(t)
    settled = t.journal.rounds.settlement(rnd)
    assert [b["bet_id"] for b in settled["bets"]] == ["b1"] and settled["bets"][0][
        "result"
    ] == "win"
    # Other content under the same bet id is a conflict, never "accepted".
    other = t.bet("pos", red("b1", stake=2000), round_id=rnd)
    assert other["code"] == "BET_ID_CONFLICT"


def test_a_cancelled_bet_is_answered_as_cancelled_in_every_phase(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    rnd = open_round(t)
    assert t.bet("pos", red("b1"))["status"] == "accepted"
    cancel = t.cancel("pos", "b1", rid="cancel-1")
    assert cancel["status"] == "accepted"
    settle(t)
    assert t.retry("cancel-1") == cancel
    again = t.cancel("pos", "b1", round_id=rnd)
    assert again["status"] == "accepted"  # still cancelled: the answer says so
    placed = t.bet("pos", red("b1"), round_id=rnd)
    assert placed["code"] == "BET_ID_CANCELLED"  # never "accepted": it is not settled
    assert t.journal.rounds.settlement(rnd)["bets"] == []


def test_past_the_window_a_bet_is_never_answered_rejected_as_if_it_had_not_been(
    tmp_path: Path,
) -> None:
    # Once the journal keeps only a summary of a round (beyond [journal] full_rounds),
    # the table cannot tell whether a bet was in it: it says so, never "not placed".
    from firmware_host.journal import Journal

    j = Journal(tmp_path / "j.sqlite3", raw_frame_rounds=10, full_rounds=10)
    t = make_table(tmp_path, journal=j)
    first = open_round(t)
    assert t.bet("pos", red("b1"))["status"] == "accepted"
    settle(t)
    for _ in range(10):
        open_round(t)
        settle(t)
    assert t.journal.rounds.round(first).detail == "summary"
    r = t.bet("pos", red("b1"), round_id=first)
    assert (r["status"], r["code"]) == ("rejected", "ROUND_PRUNED")
    assert "floor's copy" in r["message"]


def test_a_bet_for_another_round_is_not_placed_in_this_one(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    first = open_round(t)
    settle(t)
    open_round(t)
    late = t.bet("pos", red("b9"), round_id=first)
    assert (late["status"], late["code"]) == ("rejected", "STALE_ROUND")
    assert t.engine.desk.bets() == []
    # closed betting: a placed bet cannot be cancelled, and the answer says it stands
    assert t.bet("pos", red("b1"))["status"] == "accepted"
    assert t.cmd("dealer", "close_betting")["status"] == "ok"
    refused = t.cancel("pos", "b1")
    assert (
        refused["code"] == "BETTING_CLOSED" and "stands and will be settled" in refused["message"]
    )


def test_unsigned_forged_replayed_expired_and_wrong_role_requests(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    rnd = open_round(t)
    void = {"command": "void_round", "round_id": rnd, "args": {"reason": "x"}}
    unsigned = {"request_id": "u1", **void}
    r = t.send("commands/request", unsigned)
    # its request id echoed (issue 29), no principal: an answer nobody can take for its own
    assert (r["status"], r["code"], r["request_id"]) == ("error", "UNSIGNED", "u1")
    assert "principal" not in r
    # the dealer's name on a request signed with the pit's key
    forged = dict(t.build("commands/request", "pit", void), principal="dealer")  # pit's key
    assert t.send("commands/request", forged)["code"] == "BAD_SIGNATURE"
    altered = dict(t.build("commands/request", "pit", void), round_id="T1-000009-ffffffff")
    assert t.send("commands/request", altered)["code"] == "BAD_SIGNATURE"
    other_table = t.signer("pit").sign("commands/request", "T2", {"request_id": "x", **void})
    assert t.send("commands/request", other_table)["code"] == "WRONG_TABLE"
    wrong_role = t.cmd("dealer", "void_round", args={"reason": "dealer may not void"})
    assert (wrong_role["code"], wrong_role["principal"]) == ("NOT_PERMITTED", "dealer")
    assert t.cmd("pos", "close_betting")["code"] == "NOT_PERMITTED"
    assert t.bet("dealer", red("d1"))["code"] == "NOT_PERMITTED"
    old = t.build("commands/request", "pit", void)
    t.clock.advance(31)
    expired = t.send("commands/request", old)
    assert (expired["code"], expired["request_id"]) == ("REQUEST_EXPIRED", old["request_id"])
    ahead = t.clock.now + timedelta(seconds=31)
    assert (
        t.send("commands/request", t.build("commands/request", "pit", void, at=ahead))["code"]
        == "REQUEST_FROM_FUTURE"
    )
    assert t.engine.phase is Phase.OPEN  # none of them acted
    # A captured request replayed byte for byte: its answer again, nothing acted twice.
    close = t.cmd("dealer", "close_betting", rid="close-1")
    assert close["status"] == "ok"
    assert t.replay("close-1") == close
    settle_r = t.cmd("dealer", "result", args={"outcome": {"number": 3}})
    assert settle_r["status"] == "ok"
    open_round(t)
    assert t.replay("close-1") == close and t.engine.phase is Phase.OPEN
    # ... and once outside the freshness window: its answer still, never an action.
    t.clock.advance(3600)
    assert t.replay("close-1") == close and t.engine.phase is Phase.OPEN


def test_a_request_id_reused_for_another_request_is_a_conflict(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    open_round(t)
    assert t.bet("pos", red("b1"), rid="same")["status"] == "accepted"
    r = t.bet("pos", red("b2"), rid="same")
    assert (r["status"], r["code"]) == ("rejected", "REQUEST_ID_CONFLICT")
    assert [b.bet_id for b in t.engine.desk.bets()] == ["b1"]
    # Request ids are each principal's own: another principal may use the same one.
    assert t.bet("pos2", red("b3"), rid="same")["status"] == "accepted"


def test_only_the_principal_that_placed_a_bet_may_cancel_it(tmp_path: Path) -> None:
    # The attack: anyone who could publish bets could cancel anyone's bet.
    t = make_table(tmp_path)
    open_round(t)
    assert t.bet("pos", red("b1"))["status"] == "accepted"
    r = t.cancel("pos2", "b1")
    assert (r["status"], r["code"]) == ("rejected", "BET_NOT_OWNER")
    assert [b.bet_id for b in t.engine.desk.bets()] == ["b1"]
    # nor take its bet id with the same content
    assert t.bet("pos2", red("b1"))["code"] == "BET_ID_CONFLICT"
    assert t.cancel("pos", "b1")["status"] == "accepted"
    assert t.journal.bets.bet(t.engine.current.round_id, "b1").principal == "pos"


def test_commands_name_their_round_and_opening_names_the_one_it_follows(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    no_round = t.cmd("dealer", "close_betting", round_id=None)
    assert no_round["code"] == "BAD_IDENTIFIER"
    first = t.cmd("dealer", "open_betting", rid="open-1", after=None)
    assert first["status"] == "ok"
    # opening again (a new request, as after a lost answer) names the same last round:
    # refused, naming the round it would have followed
    twice = t.cmd("dealer", "open_betting", after=None)
    assert (twice["code"], twice["round_id"]) == ("STALE_ROUND", first["data"]["round_id"])
    assert t.retry("open-1") == first
    assert t.cmd("dealer", "open_betting", round_id="x")["code"] == "MALFORMED_REQUEST"
    settle(t)
    assert t.cmd("dealer", "open_betting", after=None)["code"] == "STALE_ROUND"
    assert t.cmd("dealer", "open_betting")["status"] == "ok"  # names the last round
    status = t.cmd("dealer", "status")
    assert status["status"] == "ok" and status["data"]["last_round_id"] == t.engine.last_round_id()


def test_identifiers_are_printable_ascii(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    open_round(t)
    for bet_id in ("bad\x1b[2Jid", "tab\tid", "spa ce", "é", "x" * 65):
        r = t.bet("pos", red(bet_id))
        assert r["code"] == "BAD_IDENTIFIER", bet_id
    r = t.send(
        "bets/request",
        t.build(
            "bets/request",
            "pos",
            {"action": "place", "round_id": t.engine.current.round_id, "bet": red("ok")},
            rid="new\nline",
        ),
    )
    assert (r["code"], r["request_id"]) == ("BAD_IDENTIFIER", None)
    assert t.cmd("pit", "void_round", args={"reason": "bell\x07"})["code"] == "MALFORMED_REQUEST"
    assert t.engine.desk.bets() == []


def test_caps_on_bets_and_stakes_per_round_and_seat(tmp_path: Path) -> None:
    caps = BetCaps(
        max_bets_per_round=3, max_bets_per_seat=2, max_round_stakes=10_000, max_seat_stakes=6_000
    )
    t = make_table(tmp_path, caps=caps)
    open_round(t)
    assert t.bet("pos", red("a1", 3000, seat=1))["status"] == "accepted"
    assert t.bet("pos", red("a2", 3000, seat=1))["status"] == "accepted"
    assert t.bet("pos", red("a3", 100, seat=1))["code"] == "SEAT_BET_CAP"
    assert t.bet("pos", red("b1", 5000, seat=2))["code"] == "ROUND_EXPOSURE_LIMIT"
    assert t.bet("pos", red("b1", 4000, seat=2))["status"] == "accepted"
    assert t.bet("pos", red("c1", 100, seat=3))["code"] == "ROUND_BET_CAP"
    seat = make_table(tmp_path / "s", caps=BetCaps(max_seat_stakes=6_000))
    open_round(seat)
    assert seat.bet("pos", red("a1", 6000))["status"] == "accepted"
    r = seat.bet("pos", red("a2", 100))
    assert r["code"] == "SEAT_EXPOSURE_LIMIT" and "6100" in r["message"]
    # a retry of an accepted bet is never refused by a cap it already counts in
    assert seat.bet("pos", red("a1", 6000))["status"] == "accepted"


def test_a_device_table_refuses_results_whoever_sends_them(tmp_path: Path) -> None:
    doc = {
        "table": {"id": "T1", "game": "roulette"},
        "devices": {"wheel": {"driver": "cammegh-ss2", "port": "/dev/null"}},
    }
    t = make_table(tmp_path, doc=doc, devices=(Device("wheel", "wheel", object()),))
    open_round(t)
    t.cmd("dealer", "close_betting")
    assert t.cmd("dealer", "result", args={"outcome": {"number": 4}})["code"] == (
        "RESULT_FROM_DEVICE_ONLY"
    )


def test_the_audit_names_the_verified_principal(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    rnd = open_round(t)
    t.cmd("pit", "void_round", args={"reason": "test"})
    by = t.journal.chain.events(10, kind="round_void_by")
    assert by[-1].data == {"round_id": rnd, "source": "mqtt:pit"}
    done = t.journal.chain.events(10, kind="floor_command")
    assert [(e.data["command"], e.data["principal"], e.data["verified"]) for e in done] == [
        ("open_betting", "dealer", True),
        ("void_round", "pit", True),
    ]
    assert done[-1].data["key"].startswith("ed25519:") and done[-1].data["round_id"] == rnd
    answers = t.journal.requests.recent(10)
    assert {(a.principal, a.verified) for a in answers} == {("dealer", True), ("pit", True)}
    unsigned = make_table(tmp_path / "u", signatures=False)
    r = unsigned.send(
        "commands/request",
        {
            "request_id": "o1",
            "command": "open_betting",
            "after_round_id": None,
            "principal": "someone",
        },
    )
    assert r["status"] == "ok"
    ev = unsigned.journal.outbox.pending(10)
    opened = [json.loads(e.payload) for e in ev if e.topic == "events"][-1]
    assert opened["data"]["source"] == "mqtt:unverified:someone"
    assert unsigned.journal.requests.recent(1)[0].verified is False


def test_an_unexpected_failure_rolls_everything_back_and_a_retry_acts_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A failure between acting and journaling the answer: nothing of it commits, the
    # engine takes the round back from the journal, and the retry acts once.
    t = make_table(tmp_path)
    rnd = open_round(t)
    assert t.bet("pos", red("b1"))["status"] == "accepted"
    real = t.journal.requests.record_answer

    def boom(*a: object, **k: object) -> object:
        raise OSError("disk I/O error")

    monkeypatch.setattr(t.journal.requests, "record_answer", boom)
    r = t.cmd("pit", "void_round", rid="void-x", args={"reason": "test"})
    assert (r["status"], r["code"]) == ("error", "INTERNAL_ERROR")
    assert t.journal.rounds.round(rnd).status is None  # not voided: rolled back with the answer
    assert t.engine.current is not None and t.engine.current.round_id == rnd
    assert [b.bet_id for b in t.engine.desk.bets()] == ["b1"]
    monkeypatch.setattr(t.journal.requests, "record_answer", real)
    again = t.retry("void-x")
    assert again["status"] == "ok" and t.journal.rounds.round(rnd).status == "void"
    assert t.retry("void-x") == again
    assert len(t.journal.chain.events(100, kind="round_void")) == 1


def test_a_jackpot_payment_needs_two_different_principals(tmp_path: Path) -> None:
    from firmware_host.journal import JackpotHit
    from firmware_host.table.jackpot import JackpotController

    doc = {
        "table": {"id": "S1", "game": "stud-poker", "result_source": "manual"},
        "pay_table": {"stud-poker": {"jackpot_offered": True}},
    }
    t = make_table(tmp_path, doc=doc)
    params = t.engine.game.jackpot_params(t.engine.rules)
    assert params is not None
    jackpot = JackpotController(t.journal.jackpot, t.journal.db, params)
    t.floor = FloorRequests(t.engine, t.floor.procedure, t.journal, auth=t.floor.auth, jackpot=jackpot)
    rnd = open_round(t)
    t.cmd("pit", "void_round", args={"reason": "hit recorded by hand for this test"})
    t.journal.jackpot.record_hit(JackpotHit("hit-1", 50_000, rnd, {"seat": 1}))
    first = t.cmd("pit", "jackpot_paid", round_id=rnd, args={"hit_id": "hit-1"})
    assert first["status"] == "ok" and first["data"]["paid"] is False
    assert first["data"]["confirmed_by"] == ["pit"]
    same = t.cmd("pit", "jackpot_paid", round_id=rnd, args={"hit_id": "hit-1"})
    assert same["code"] == "SECOND_PRINCIPAL_REQUIRED"
    assert t.cmd("pos", "jackpot_paid", round_id=rnd, args={"hit_id": "hit-1"})["code"] == (
        "NOT_PERMITTED"
    )
    wrong = t.cmd("pit2", "jackpot_paid", round_id="S1-000009-00", args={"hit_id": "hit-1"})
    assert wrong["code"] == "STALE_ROUND"
    second = t.cmd("pit2", "jackpot_paid", round_id=rnd, args={"hit_id": "hit-1"})
    assert second["status"] == "ok" and second["data"]["paid"] is True
    assert second["data"]["confirmed_by"] == ["pit", "pit2"]
    paid = t.journal.chain.events(10, kind="jackpot_paid")[-1]
    assert paid.data["payment"]["by"] == ["pit", "pit2"]


# -- property: a sequence of requests, retries and replays never acts twice -----------
_steps = st.lists(
    st.one_of(
        st.tuples(
            st.just("new"),
            st.sampled_from(["open", "bet", "cancel", "close", "result", "void"]),
            st.integers(0, 3),
        ),
        st.tuples(st.just("retry"), st.integers(0, 30), st.integers(0, 0)),
        st.tuples(st.just("replay"), st.integers(0, 30), st.integers(0, 0)),
        st.tuples(st.just("wait"), st.integers(1, 40), st.integers(0, 0)),
    ),
    max_size=40,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=_steps)
def test_retries_and_replays_never_act_twice(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, object, int]]
) -> None:
    t = make_table(tmp_path_factory.mktemp("prop"))
    first: dict[str, dict] = {}  # request id -> its first answer
    order: list[str] = []
    for kind, what, n in steps:
        if kind == "wait":
            t.clock.advance(int(what))  # type: ignore[arg-type]
            continue
        if kind in ("retry", "replay"):
            if not order:
                continue
            rid = order[int(what) % len(order)]  # type: ignore[arg-type]
            answer = t.retry(rid) if kind == "retry" else t.replay(rid)
            if answer.get("code") != "REQUEST_EXPIRED":
                assert answer == first[rid], (kind, rid)
            continue
        rid = t.new_id()
        if what == "open":
            a = t.cmd("dealer", "open_betting", rid=rid)
        elif what == "bet":
            a = t.bet("pos", red(f"b{n}"), rid=rid)
        elif what == "cancel":
            a = t.cancel("pos", f"b{n}", rid=rid)
        elif what == "close":
            a = t.cmd("dealer", "close_betting", rid=rid)
        elif what == "result":
            a = t.cmd("dealer", "result", rid=rid, args={"outcome": {"number": n}})
        else:
            a = t.cmd("pit", "void_round", rid=rid, args={"reason": "p"})
        first[rid] = a
        order.append(rid)
    # Every change in the journal answers exactly one request answered ok/accepted.
    ok = [r for r, a in first.items() if a.get("status") in ("ok", "accepted")]
    commands = [t.sent[r].get("command") for r in ok]
    rounds = t.journal.rounds.summary(1000)
    assert len(rounds) == commands.count("open_betting")
    finished = [r for r in rounds if r.status is not None]
    assert len([r for r in finished if r.status == "void"]) == commands.count("void_round")
    assert len([r for r in finished if r.status == "settled"]) == commands.count("result")
    placed = [r for r in ok if t.sent[r].get("action") == "place"]
    journaled = [b for rnd in rounds for b in t.journal.bets.bets(rnd.round_id)]
    # a place answered accepted for a bet already journaled adds nothing
    assert len(journaled) == len(
        {(t.sent[r]["round_id"], t.sent[r]["bet"]["bet_id"]) for r in placed}
    )
    t.journal.close()
