"""Round engine: phases, bets intake, results only in the right phase, voids with
refunds, resume after a crash — checked against the rules core on the same inputs."""

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from firmware_host.auth import Authenticator, AuthSettings
from firmware_host.config import load_config
from firmware_host.games.errors import OutcomeError
from firmware_host.journal import Journal
from firmware_host.table.engine import Phase, RoundEngine, RoundFault
from firmware_host.table.floor import FloorRequests
from firmware_host.table.procedures import ManualProcedure, ProcedureContext
from tablesim.players import SimulatedPlayers

ROOT = Path(__file__).resolve().parents[2]


def engine(tmp_path: Path, game: str = "roulette") -> RoundEngine:
    return engine_and_journal(tmp_path, game)[0]


def engine_and_journal(tmp_path: Path, game: str = "roulette") -> tuple[RoundEngine, Journal]:
    cfg = load_config(ROOT / "config" / f"{game}.toml")
    j = Journal(tmp_path / "j.sqlite3")
    return RoundEngine(cfg, j), j


def bet(bet_id: str, bet_type: str, selection: object, stake: int) -> dict:
    return {
        "bet_id": bet_id,
        "seat": 1,
        "bet_type": bet_type,
        "selection": selection,
        "stake": stake,
    }


def test_full_round_settles_like_the_rules_core(tmp_path: Path) -> None:
    e = engine(tmp_path)
    e.open_betting()
    assert e.desk.place(bet("a", "straight", [17], 2500)).accepted
    assert e.desk.place(bet("b", "red", None, 5000)).accepted
    e.close_betting()
    payload = e.submit_result({"number": 17})
    assert payload["status"] == "settled" and e.phase is Phase.IDLE
    expected = e.game.settle(
        e.rules,
        e.game.parse_outcome(e.rules, 17),
        e.game.parse_bets(e.rules, [bet("a", "straight", [17], 2500), bet("b", "red", None, 5000)]),
        e.cfg.money,
    ).to_json()
    assert payload["bets"] == expected["bets"] and payload["totals"] == expected["totals"]
    assert set(payload["timestamps"]) == {"opened", "closed", "result", "settled"}


def test_result_in_the_wrong_phase_is_refused_never_settled(tmp_path: Path) -> None:
    e, j = engine_and_journal(tmp_path)
    with pytest.raises(RoundFault, match="phase 'idle'"):
        e.submit_result({"number": 3})
    e.open_betting()
    with pytest.raises(RoundFault, match="phase 'open'"):
        e.submit_result({"number": 3})
    e.close_betting()
    with pytest.raises(OutcomeError):
        e.submit_result({"number": 40})
    assert e.phase is Phase.CLOSED  # a garbled result changes nothing
    e.submit_result({"number": 3})
    assert j.outbox.pending_count() > 0


def test_bets_after_close_and_bad_bets_are_answered_not_raised(tmp_path: Path) -> None:
    e = engine(tmp_path)
    assert e.desk.place(bet("a", "red", None, 5000)).code == "NO_ROUND"
    e.open_betting()
    answers = [
        e.desk.place(bet("n", "red", None, -5)),
        e.desk.place(bet("f", "red", None, 2500.5)),
        e.desk.place(bet("u", "basket", None, 2500)),
        e.desk.place(bet("s", "split", [1, 9], 2500)),
        e.desk.place({"bet_id": "x", "bet_type": "red", "stake": 2500, "colour": "red"}),
        e.desk.place(bet("lo", "red", None, 100)),
    ]
    assert [a.code for a in answers] == [
        "BET_INVALID_STAKE",
        "BET_INVALID_STAKE",
        "BET_UNKNOWN_TYPE",
        "BET_INVALID_SELECTION",
        "BET_UNKNOWN_FIELD",
        "BET_STAKE_OUT_OF_LIMITS",
    ]
    e.close_betting()
    late = e.desk.place(bet("late", "red", None, 5000))
    assert (late.accepted, late.code) == (False, "BETTING_CLOSED")
    assert e.desk.cancel("a").code == "BETTING_CLOSED"


def test_bets_are_idempotent_by_id(tmp_path: Path) -> None:
    e = engine(tmp_path)
    e.open_betting()
    assert e.desk.place(bet("a", "red", None, 5000)).accepted
    assert e.desk.place(bet("a", "red", None, 5000)).accepted  # re-delivered request
    assert e.desk.place(bet("a", "black", None, 5000)).code == "BET_ID_CONFLICT"
    assert len(e.desk.bets()) == 1
    assert e.desk.cancel("a").accepted and e.desk.cancel("a").accepted
    assert e.desk.bets() == []


def test_a_cancelled_bet_id_is_not_answered_accepted_again(tmp_path: Path) -> None:
    # The journal keeps a cancelled bet under its id; placing the same id again must not
    # be answered "accepted" while the bet stays cancelled (it would not be settled).
    e = engine(tmp_path)
    e.open_betting()
    assert e.desk.place(bet("a", "red", None, 5000)).accepted
    assert e.desk.cancel("a").accepted
    again = e.desk.place(bet("a", "red", None, 5000))
    assert (again.accepted, again.code) == (False, "BET_ID_CANCELLED")
    assert e.desk.place(bet("a2", "red", None, 5000)).accepted
    e.close_betting()
    payload = e.submit_result({"number": 1})
    assert [b["bet_id"] for b in payload["bets"]] == ["a2"]


_ops = st.lists(
    st.tuples(
        st.sampled_from(["place", "place", "cancel", "conflict", "restart"]),
        st.integers(0, 6),
        st.integers(1, 4),
    ),
    max_size=40,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=_ops, number=st.integers(0, 36))
def test_bets_in_play_are_the_journaled_ones_through_any_sequence(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, int, int]], number: int
) -> None:
    # The engine keeps the round's bets in memory to settle without reading them back;
    # whatever the order of places, re-deliveries, conflicts, cancels and restarts, the
    # bets settled are exactly the journal's bets in play, in the order placed. (A
    # restart voids the round it finds in flight, as the daemon does, and play goes on
    # in a new round.)
    d = tmp_path_factory.mktemp("bets")
    e, j = engine_and_journal(d)
    e.open_betting()
    for op, i, k in ops:
        if op == "restart":
            j = Journal(d / "j.sqlite3")
            e = RoundEngine(e.cfg, j)
            assert e.current is None and len(e.resume()) == 1
            e.open_betting()
        elif op == "cancel":
            e.desk.cancel(f"b{i}")
        elif op == "conflict":
            e.desk.place(bet(f"b{i}", "black", None, 2500 * k))
        else:
            answer = e.desk.place(bet(f"b{i}", "straight", [i + k], 2500 * k))
            assert answer.accepted or answer.code in ("BET_ID_CONFLICT", "BET_ID_CANCELLED")
        journaled = [
            r.to_bet() for r in j.bets.bets(e.current.round_id, include_cancelled=False)
        ]
        assert e.desk.bets() == journaled
    e.close_betting()
    expected = [r.bet_id for r in j.bets.bets(e.current.round_id, include_cancelled=False)]
    payload = e.submit_result({"number": number})
    assert [b["bet_id"] for b in payload["bets"]] == expected


def test_void_refunds_every_bet(tmp_path: Path) -> None:
    # 60/2004 art. 2 2): the croupier declares the spin null; here the dealer voids the round.
    e = engine(tmp_path)
    e.open_betting()
    e.desk.place(bet("a", "red", None, 5000))
    e.desk.place(bet("b", "straight", [0], 2500))
    e.close_betting()
    p = e.void_round("chip fell into the wheel")
    assert p["status"] == "void" and p["void_reason"] == "chip fell into the wheel"
    assert [b["result"] for b in p["bets"]] == ["refund", "refund"]
    assert all(b["net"] == 0 for b in p["bets"]) and p["totals"]["stakes"] == 7500
    with pytest.raises(RoundFault):
        e.void_round("again")


def test_dice_throw_void_keeps_bets_and_reopens(tmp_path: Path) -> None:
    # 57/2004 art. 3 3)-4): dice stacked or tilted: the throw is void, bets stay, new bets allowed.
    e = engine(tmp_path, "sicbo")
    e.open_betting()
    e.desk.place(bet("a", "small", None, 5000))
    e.close_betting()
    e.reopen_betting("dice tilted")
    assert e.phase is Phase.OPEN
    assert e.desk.place(bet("b", "big", None, 5000)).accepted
    e.close_betting()
    p = e.submit_result({"dice": [1, 2, 3]})
    assert [b["result"] for b in p["bets"]] == ["win", "lose"]


def test_resume_voids_every_unfinished_round_and_never_settles_twice(tmp_path: Path) -> None:
    # A result is journaled only in the transaction that settles it, so a round left in
    # flight by a crash never has a result: the restart voids it, every bet refunded,
    # with the reason recorded. (A journal row that claims an outcome without a
    # settlement cannot come from this controller; it is voided like any other.)
    cfg = load_config(ROOT / "config" / "fantan.toml")
    j = Journal(tmp_path / "j.sqlite3")
    e = RoundEngine(cfg, j)
    e.open_betting()
    e.desk.place(bet("a", "fan", 2, 10000))
    e.close_betting()
    rnd = e.current
    j.rounds.set_phase(rnd.round_id, "result", outcome={"number": 2})
    j.close()
    j2 = Journal(tmp_path / "j.sqlite3")
    e2 = RoundEngine(cfg, j2)
    (p,) = e2.resume()
    assert p["status"] == "void" and "restarted" in p["void_reason"]
    assert p["bets"][0]["result"] == "refund" and p["bets"][0]["net"] == 0
    # a round that never saw its result is voided with a reason
    e2.open_betting()
    e2.desk.place(bet("b", "fan", 1, 10000))
    j2.close()
    e3 = RoundEngine(cfg, Journal(tmp_path / "j.sqlite3"))
    (v,) = e3.resume()
    assert v["status"] == "void" and "restarted" in v["void_reason"]
    assert v["bets"][0]["result"] == "refund"
    assert e3.resume() == []  # nothing settled twice


def test_a_round_left_in_flight_takes_nothing_until_resumed(tmp_path: Path) -> None:
    # After a restart the table may have to wait for the floor's check before it may
    # void what a crash left in flight (a restored journal could reuse a seq the floor
    # holds). Meanwhile the old round is nobody's to act on: a result read by the wheel,
    # a bet or a close for it is refused and nothing is settled; the next open voids it
    # first, in the same step.
    cfg = load_config(ROOT / "config" / "fantan.toml")
    j = Journal(tmp_path / "j.sqlite3")
    e = RoundEngine(cfg, j)
    e.open_betting()
    assert e.desk.place(bet("a", "fan", 2, 10000)).accepted
    e.close_betting()
    old = e.current
    assert old is not None
    j.close()
    j2 = Journal(tmp_path / "j.sqlite3")
    e2 = RoundEngine(cfg, j2)
    assert e2.phase is Phase.IDLE and e2.current is None
    with pytest.raises(RoundFault) as refused:
        e2.submit_result({"number": 2})
    assert refused.value.code == "WRONG_PHASE"
    with pytest.raises(RoundFault):
        e2.close_betting()
    late = e2.desk.place(bet("b", "fan", 2, 10000), round_id=old.round_id)
    assert not late.accepted and late.code == "STALE_ROUND"
    assert j2.rounds.settlement(old.round_id) is None
    new = e2.open_betting()
    assert new.round_id != old.round_id
    voided = j2.rounds.settlement(old.round_id)
    assert voided is not None and voided["status"] == "void"
    assert voided["bets"][0]["result"] == "refund"  # type: ignore[index]
    assert e2.resume() == []  # nothing voided twice


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 10**6), n=st.integers(0, 30), number=st.integers(0, 36))
def test_random_valid_bets_settle_as_the_rules_core_says(
    tmp_path: Path, seed: int, n: int, number: int
) -> None:
    e, j = engine_and_journal(tmp_path / str(seed) / str(n) / str(number))
    players = SimulatedPlayers(e.cfg, seed)
    e.open_betting()
    raws = players.many(n, "r")
    for raw in raws:
        assert e.desk.place(raw).accepted
    e.close_betting()
    p = e.submit_result({"number": number})
    ref = e.game.settle(
        e.rules,
        e.game.parse_outcome(e.rules, number),
        e.game.parse_bets(e.rules, raws),
        e.cfg.money,
    )
    assert p["totals"] == ref.to_json()["totals"]
    j.close()


def test_floor_requests_always_answer(tmp_path: Path) -> None:
    # An unsigned table (signatures are tests/table/test_floor_trust.py's subject): every
    # request is answered, none raises.
    e, j = engine_and_journal(tmp_path)
    f = FloorRequests(
        e,
        ManualProcedure(ProcedureContext(e)),
        j,
        auth=Authenticator(AuthSettings(signatures=False), e.cfg.table_id),
    )
    bad = [
        b"",
        b"{",
        b"[]",
        b"\xff\xfe",
        b'{"request_id": "n", "action": "place", "bet": {"stake": NaN}}',
        b"[" * 100_000,
        json.dumps({"request_id": "1", "action": "fly"}).encode(),
        json.dumps({"action": "place"}).encode(),
        json.dumps({"request_id": "2", "action": "place", "bet": {}, "x": 1}).encode(),
        b"x" * 70000,
    ]
    for payload in bad:
        r = f.handle_bet_request(payload)
        assert r["status"] == "rejected" and r["code"], payload[:20]
    ok = f.handle_command_request(
        json.dumps({"request_id": "c1", "command": "open_betting", "after_round_id": None}).encode()
    )
    assert ok["status"] == "ok" and ok["request_id"] == "c1"
    rid = ok["data"]["round_id"]
    r = f.handle_bet_request(
        json.dumps(
            {"request_id": "3", "action": "place", "round_id": rid,
             "bet": bet("a", "red", None, 5000)}
        ).encode()
    )  # fmt: skip
    assert r["status"] == "accepted" and r["request_id"] == "3"
    for cmd, code in [
        ({"request_id": "c2", "command": "result", "round_id": rid, "args": {"outcome": 1}},
         "WRONG_PHASE"),
        ({"request_id": "c3", "command": "void_round", "round_id": rid}, "MALFORMED_REQUEST"),
        ({"request_id": "c4", "command": "reboot"}, "UNKNOWN_COMMAND"),
        ({"request_id": "c5", "command": "status", "args": {"x": 1}}, "UNKNOWN_FIELD"),
        ({"request_id": "c6", "command": "close_betting"}, "BAD_IDENTIFIER"),
        ({"request_id": "c7", "command": "close_betting", "round_id": "other"}, "STALE_ROUND"),
    ]:  # fmt: skip
        r = f.handle_command_request(json.dumps(cmd).encode())
        assert (r["status"], r["code"]) == ("error", code)
