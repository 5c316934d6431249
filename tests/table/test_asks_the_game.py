"""Procedures ask the game, never switch on it (issue 13): the deal, the decisions and
the bets a decision creates live in the rules core; the procedure is chosen by the kind
of device that carries the game's result."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from drivers.registry import kinds
from firmware_host.config import validate_document
from firmware_host.games import GAME_IDS, get_game
from firmware_host.games.base import Bet
from firmware_host.games.errors import RulesError
from firmware_host.journal import Journal
from firmware_host.table.engine import RoundEngine
from firmware_host.table.procedures import (
    PROCEDURES,
    Device,
    DiceProcedure,
    KeypadProcedure,
    ManualProcedure,
    ProcedureContext,
    ShoeProcedure,
    WheelProcedure,
    make_procedure,
)

ROOT = Path(__file__).resolve().parents[2]


def test_the_stud_raise_is_twice_the_ante() -> None:
    # 61/2004 art. 6 6): "A aposta adicional deve ser de montante igual ao dobro do
    # montante da aposta inicial" (the raise is twice the ante): 2 x 15000.
    g = get_game("stud-poker")
    rules = g.default_rules()
    bets = [Bet("a7", 7, "ante", None, 15000), Bet("a3", 3, "ante", None, 10000)]
    deal = g.start_deal(rules, bets)
    assert g.decision_bets(rules, deal, 7, "raise", bets) == [
        {"bet_id": "a7.raise", "seat": 7, "bet_type": "raise", "stake": 30000}
    ]
    assert g.decision_bets(rules, deal, 7, "fold", bets) == []


def test_a_game_not_dealt_from_a_shoe_says_so() -> None:
    for gid in ("roulette", "sicbo", "fantan", "mahjong", "paikao"):
        g = get_game(gid)
        with pytest.raises(RulesError) as exc:
            g.start_deal(g.default_rules(), [])
        assert exc.value.code == "NOT_SUPPORTED", gid


def test_player_decisions_only_where_the_game_takes_them() -> None:
    g = get_game("baccarat")
    deal = g.start_deal(g.default_rules(), [])
    with pytest.raises(RulesError) as exc:
        g.decide(g.default_rules(), deal, {"seat": 1, "action": "hit"})
    assert exc.value.code == "NOT_SUPPORTED"


def test_super_pan_9_needs_its_setup_before_the_cards() -> None:
    # 261/96/M art. 2, 5: the banker, the capital and the dice come before the deal.
    g = get_game("super-pan-9")
    assert g.deal_setup_keys >= {"banker", "banker_capital", "dice"}
    with pytest.raises(RulesError) as exc:
        g.start_deal(g.default_rules(), [])
    assert exc.value.code == "SETUP_REQUIRED"
    deal = g.start_deal(
        g.default_rules(), [], {"banker": 1, "banker_capital": 100000, "dice": [1, 2, 3, 4]}
    )
    assert deal.expect().kind == "card"
    assert not get_game("baccarat").deal_setup_keys


EXPECTED = {
    "wheel": WheelProcedure,
    "shaker": DiceProcedure,
    "keypad": KeypadProcedure,
    "shoe": ShoeProcedure,
}


@pytest.mark.parametrize("game_id", GAME_IDS)
def test_the_procedure_is_chosen_by_the_result_device_kind(game_id: str, tmp_path: Path) -> None:
    assert set(PROCEDURES) <= kinds()
    cfg = validate_document({"table": {"id": "t-1", "game": game_id}})
    engine = RoundEngine(cfg, Journal(tmp_path / "j.sqlite3"))
    kind = cfg.game.result_device
    # without its result device, a table enters results by command only if it says so
    # (issue 14: no silent manual table)
    if kind is not None:
        with pytest.raises(RulesError) as exc:
            make_procedure(ProcedureContext(engine))
        assert exc.value.code == "RESULT_DEVICE_MISSING"
    manual = validate_document({"table": {"id": "t-1", "game": game_id, "result_source": "manual"}})
    manual_engine = RoundEngine(manual, Journal(tmp_path / "m.sqlite3"))
    assert type(make_procedure(ProcedureContext(manual_engine))) is ManualProcedure
    devices = [Device("board", "board", object())]
    if kind is not None:
        devices.append(Device("it", kind, object()))
    proc = make_procedure(ProcedureContext(engine, devices=tuple(devices)))
    assert type(proc) is EXPECTED.get(kind or "", ManualProcedure)
    if kind is not None:
        assert proc.device is not None and proc.device.name == "it"


def _game_id_comparisons(path: Path) -> list[str]:
    """``x == "roulette"``, ``gid in ("sicbo", ...)``, ``{"fantan": ...}``-keyed dispatch:
    every place a module compares something with a game id string."""
    ids = set(GAME_IDS)
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Compare):
            for c in [node.left, *node.comparators]:
                for sub in ast.walk(c):
                    if isinstance(sub, ast.Constant) and sub.value in ids:
                        out.append(f"{path.relative_to(ROOT)}:{node.lineno}: {sub.value!r}")
        elif isinstance(node, ast.Match):
            for case in node.cases:
                for sub in ast.walk(case.pattern):
                    if isinstance(sub, ast.Constant) and sub.value in ids:
                        out.append(f"{path.relative_to(ROOT)}:{case.pattern.lineno}: {sub.value!r}")
    return out


#: The rules core is where games are told apart (the demo, which plays every game on
#: purpose, lives in ``tablesim/``, outside ``firmware_host``).
ALLOWED = ("firmware_host/games/",)


def test_no_game_id_comparison_outside_the_rules_core() -> None:
    found = [
        hit
        for p in sorted((ROOT / "firmware_host").rglob("*.py"))
        if not str(p.relative_to(ROOT)).startswith(ALLOWED)
        for hit in _game_id_comparisons(p)
    ]
    assert found == []


def test_the_checker_sees_a_game_switch(tmp_path: Path) -> None:
    global ROOT
    src = tmp_path / "m.py"
    src.write_text('if gid == "roulette":\n    pass\nelif gid in ("sicbo", "x"):\n    pass\n')
    root, ROOT = ROOT, tmp_path
    try:
        assert _game_id_comparisons(src) == ["m.py:1: 'roulette'", "m.py:3: 'sicbo'"]
    finally:
        ROOT = root
