"""Bet admission apart from the round lifecycle (issue 31): the round engine runs the
rounds, its bet desk (``firmware_host/table/admission.py``) takes their bets, and
neither names a game. What a game alone refuses is an admission rule registered by
whoever builds the table: the stud poker jackpot's (61/2004 art. 11 1), 4)) is the
jackpot controller's, ``JackpotController.admit``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from firmware_host.config import load_config
from firmware_host.games import GAME_IDS, GAME_MODULES, get_game
from firmware_host.games.base import Bet
from firmware_host.journal import Journal, RoundRecord
from firmware_host.table.admission import Refusal
from firmware_host.table.bets import BetCaps
from firmware_host.table.engine import RoundEngine
from firmware_host.table.jackpot import JackpotController

from .test_import_graph import imports_of, modules

ROOT = Path(__file__).resolve().parents[2]
#: The modules that take every game's bets and rounds, and so may name none.
GENERIC = ("firmware_host.table.engine", "firmware_host.table.admission")
#: The game packages (``firmware_host/games/<folder>``), which only the games import.
GAME_PACKAGES = {f"firmware_host.games.{folder}" for folder in GAME_MODULES.values()}
STUD = load_config(ROOT / "config" / "stud-poker.toml")


def bet_types() -> set[str]:
    """Every game's bet types, by its default rules (the regulations' names)."""
    names: set[str] = set()
    for gid in GAME_IDS:
        game = get_game(gid)
        names.update(bt.name for bt in game.bet_types(game.default_rules()))
    return names


def game_literals(source: str, names: set[str]) -> list[tuple[int, str]]:
    """(line, literal) of every string constant of ``source`` that is one of ``names``."""
    return sorted(
        (node.lineno, node.value)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
    )


def game_imports(name: str, path: Path) -> set[str]:
    """The game packages module ``name`` (at ``path``) imports."""
    return imports_of(name, path, set(modules())) & GAME_PACKAGES


def test_the_checks_see_a_bet_type_a_game_id_and_a_game_package(tmp_path: Path) -> None:
    names = bet_types() | set(GAME_IDS)
    assert {"jackpot", "ante", "raise", "straight", "banker"} <= names  # really read
    src = 'if bet.bet_type == "jackpot":\n    x = ("ante", "a jackpot bet")\ny = "sicbo"\n'
    assert game_literals(src, names) == [(1, "jackpot"), (2, "ante"), (3, "sicbo")]
    fake = tmp_path / "fake.py"
    fake.write_text("from ..games.stud_poker import GAME\nfrom ..games.base import Bet\n")
    assert game_imports("firmware_host.table.fake", fake) == {"firmware_host.games.stud_poker"}


def test_the_engine_and_the_bet_desk_name_no_game() -> None:
    names = bet_types() | set(GAME_IDS)
    found = modules()
    bad = []
    for name in GENERIC:
        path = found[name]
        bad += [f"{name}:{line}: {v!r}" for line, v in game_literals(path.read_text(), names)]
        bad += [f"{name}: imports {m}" for m in sorted(game_imports(name, path))]
    assert not bad, "a game's own rule is an admission rule of its own:\n" + "\n".join(bad)


def test_an_admission_rule_is_given_the_parsed_bet_and_the_round_and_answers_before_the_caps(
    tmp_path: Path,
) -> None:
    seen: list[tuple[Bet, str]] = []

    def seat_7_closed(bet: Bet, rnd: RoundRecord) -> Refusal | None:
        seen.append((bet, rnd.round_id))
        return Refusal("SEAT_CLOSED", f"seat {bet.seat} is closed") if bet.seat == 7 else None

    j = Journal(tmp_path / "j.sqlite3")
    cfg = load_config(ROOT / "config" / "roulette.toml")
    e = RoundEngine(cfg, j, admission=(seat_7_closed,), caps=BetCaps(max_bets_per_round=1))
    rid = e.open_betting().round_id
    refused = e.desk.place({"bet_id": "a", "seat": 7, "bet_type": "red", "stake": 5000})
    assert (refused.accepted, refused.code, refused.message, refused.round_id) == (
        False,
        "SEAT_CLOSED",
        "seat 7 is closed",
        rid,
    )
    assert j.bets.bet(rid, "a") is None and e.desk.bets() == []
    assert seen == [(Bet("a", 7, "red", None, 5000), rid)]
    assert e.desk.place({"bet_id": "b", "seat": 1, "bet_type": "red", "stake": 5000}).accepted
    # the round is full ([bets] max_bets_per_round = 1): the rule still answers first
    assert e.desk.place({"bet_id": "c", "seat": 7, "bet_type": "red", "stake": 5000}).code == (
        "SEAT_CLOSED"
    )
    assert e.desk.place({"bet_id": "d", "seat": 2, "bet_type": "red", "stake": 5000}).code == (
        "ROUND_BET_CAP"
    )
    # a bet the rules core refuses never reaches a rule
    assert e.desk.place({"bet_id": "e", "seat": 7, "bet_type": "basket", "stake": 5000}).code
    assert [b.bet_id for b, _ in seen] == ["a", "b", "c", "d"]


def ante(bet_id: str, seat: int) -> dict[str, object]:
    return {"bet_id": bet_id, "seat": seat, "bet_type": "ante", "stake": 10000}


def jackpot(bet_id: str, seat: int) -> dict[str, object]:
    return {"bet_id": bet_id, "seat": seat, "bet_type": "jackpot", "stake": 2000}


def test_a_place_holding_a_carried_jackpot_bet_is_refused_a_second_one(tmp_path: Path) -> None:
    """61/2004 art. 11 1), 4): the jackpot bets of a void game are carried to the
    place's next game; a second jackpot bet there could never be settled, so it is
    refused when placed (``JACKPOT_ALREADY_CARRIED``), and the carried bet plays."""
    j = Journal(tmp_path / "j.sqlite3")
    params = STUD.rules.jackpot_params()
    assert params is not None
    controller = JackpotController(j.jackpot, j.db, params)
    e = RoundEngine(STUD, j, jackpot=controller, admission=(controller.admit,))
    e.open_betting()
    assert e.desk.place(ante("a1", 3)).accepted and e.desk.place(jackpot("j1", 3)).accepted
    e.close_betting()
    void = e.void_round("test: the dealer voids the deal")
    # the void refunds the ante; the jackpot bet is carried, not refunded
    assert [b["bet_id"] for b in void["bets"]] == ["a1"]
    assert [b["bet_id"] for b in void["jackpot"]["carried"]] == ["j1"]

    rid = e.open_betting().round_id
    assert e.desk.place(ante("a3", 3)).accepted
    refused = e.desk.place(jackpot("j3", 3))
    assert (refused.accepted, refused.code, refused.round_id) == (
        False,
        "JACKPOT_ALREADY_CARRIED",
        rid,
    )
    assert "'j1'" in refused.message and "61/2004 art. 11" in refused.message
    assert j.bets.bet(rid, "j3") is None
    # another place may bet on the jackpot
    assert e.desk.place(ante("a4", 4)).accepted and e.desk.place(jackpot("j4", 4)).accepted
    assert [b.bet_id for b in e.desk.bets()] == ["a3", "a4", "j4"]
    e.close_betting()
    for seat in (3, 4):  # art. 6 6): the raise is twice the ante
        e.desk.add_decision({"bet_id": f"r{seat}", "seat": seat, "bet_type": "raise", "stake": 20000})
    done = e.submit_result(
        {
            "dealer": ["2S", "5H", "7D", "9C", "JS"],
            "seats": {
                "3": {"cards": ["AH", "KH", "QH", "JH", "TH"], "action": "raise"},
                "4": {"cards": ["3C", "4D", "6S", "8C", "QC"], "action": "raise"},
            },
        }
    )
    played = sorted(b["bet_id"] for b in done["bets"] if b["bet_type"] == "jackpot")
    assert played == ["j1", "j4"]  # the carried bet played in place 3's next game
    (hit,) = done["jackpot"]["hits"]
    # art. 10 2) (1): the royal flush takes the pool (the seed and 7/10 of each of the
    # two jackpot bets) or the fixed sum, the larger
    assert hit["bet_id"] == "j1"
    assert hit["prize"] == max(params.seed + 2 * 2000 * 7 // 10, params.royal_flush_fixed)


def test_without_the_rule_the_desk_takes_the_bet_the_engine_knows_no_game(tmp_path: Path) -> None:
    """The refusal is the jackpot's rule, registered by whoever builds the table; the
    engine and its desk do not refuse a second jackpot bet on their own."""
    j = Journal(tmp_path / "j.sqlite3")
    params = STUD.rules.jackpot_params()
    assert params is not None
    e = RoundEngine(STUD, j, jackpot=JackpotController(j.jackpot, j.db, params))
    e.open_betting()
    assert e.desk.place(ante("a1", 3)).accepted and e.desk.place(jackpot("j1", 3)).accepted
    e.close_betting()
    e.void_round("test")
    e.open_betting()
    assert e.desk.place(jackpot("j2", 3)).accepted


def test_a_decision_bet_whose_transaction_rolls_back_is_not_in_play(tmp_path: Path) -> None:
    """A raise (61/2004 art. 6 6)) added inside a transaction that rolls back (a floor
    command whose answer could not be journaled) is neither journaled nor settled: the
    desk reads the bets in play from the journal again."""
    j = Journal(tmp_path / "j.sqlite3")
    e = RoundEngine(STUD, j)
    rid = e.open_betting().round_id
    assert e.desk.place(ante("a1", 1)).accepted
    e.close_betting()
    raise_ = {"bet_id": "r1", "seat": 1, "bet_type": "raise", "stake": 20000}
    with pytest.raises(RuntimeError), j.db.transaction():
        e.desk.add_decision(raise_)
        assert [b.bet_id for b in e.desk.bets()] == ["a1", "r1"]
        raise RuntimeError("the answer could not be journaled")
    assert j.bets.bet(rid, "r1") is None
    assert [b.bet_id for b in e.desk.bets()] == ["a1"]
    e.desk.add_decision(raise_)
    assert [b.bet_id for b in e.desk.bets()] == ["a1", "r1"]
