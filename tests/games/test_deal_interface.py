"""One deal for every game dealt card by card or tile by tile (issue 13).

Every game whose table deals from a shoe starts its round through ``Game.start_deal``,
and what it returns is the one ``Deal`` of ``games/base.py``: fed the cards in the
order they leave a fresh deck and its players' decisions, it reaches ``complete``,
its outcome settles, and every card it refuses raises the one ``Misdeal`` with a
stable code that the game's rules page documents. P'ai Kao's tiles (entered by an
inspector, never read from a shoe) go through the same interface.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from firmware_host.games import GAME_IDS, MoneyRules, get_game
from firmware_host.games.base import Bet, Deal, Expect
from firmware_host.games.cards import deck
from firmware_host.games.errors import Misdeal, RulesError
from firmware_host.games.paikao import FULL_SET, PaiKaoDeal, PaiKaoRules

ROOT = Path(__file__).resolve().parents[2]
GAMES = ROOT / "firmware_host" / "games"

#: The games a shoe deals (``result_device == "shoe"``), each with the bets of one round
#: and the setup its deal needs before the first card.
DEALT: dict[str, tuple[list[dict[str, Any]], Mapping[str, Any] | None]] = {
    "baccarat": ([{"bet_id": "b", "bet_type": "banker", "stake": 100}], None),
    "blackjack": (
        [
            {"bet_id": "m1", "seat": 1, "bet_type": "main", "stake": 100},
            {"bet_id": "m4", "seat": 4, "bet_type": "main", "stake": 100},
        ],
        None,
    ),
    "stud-poker": (
        [
            {"bet_id": "a2", "seat": 2, "bet_type": "ante", "stake": 100},
            {"bet_id": "a5", "seat": 5, "bet_type": "ante", "stake": 100},
        ],
        None,
    ),
    # 261/96/M art. 2, 5: the banker's place and capital, the dice before the cards
    "super-pan-9": (
        [{"bet_id": "p3", "seat": 3, "bet_type": "place", "selection": 3, "stake": 100}],
        {"banker": 1, "banker_capital": 100000, "dice": [1, 2, 3, 4]},
    ),
}


def test_every_game_a_shoe_deals_is_covered() -> None:
    shoe = {gid for gid in GAME_IDS if get_game(gid).result_device == "shoe"}
    assert shoe == set(DEALT)


def _choose(e: Expect) -> str:
    """A player's decision: stand (blackjack) or raise (stud poker) where allowed."""
    for action in ("stand", "raise"):
        if action in e.allowed:
            return action
    return e.allowed[0]


def _play(game_id: str) -> tuple[Any, Any, list[Bet], Deal, int]:
    """Deal one round of ``game_id`` from a fresh deck in its fixed order; returns the
    game, its rules, the round's bets (those the decisions created too), the complete
    deal and how many cards it took."""
    game = get_game(game_id)
    rules = game.default_rules()
    raw, setup = DEALT[game_id]
    bets = game.parse_bets(rules, raw)
    deal = game.start_deal(rules, bets, setup)
    cards = list(deck())
    used = 0
    for _ in range(200):
        assert isinstance(deal, Deal)
        e = deal.expect()
        assert isinstance(e, Expect)
        if e.kind == "complete":
            break
        if e.kind == "card":
            deal = deal.deal(cards[used])
            used += 1
        elif e.kind == "decision":
            assert e.seat is not None and e.allowed
            action = _choose(e)
            decision: dict[str, Any] = {"seat": e.seat, "action": action}
            if e.hand is not None:
                decision["hand"] = e.hand
            created = game.decision_bets(rules, deal, e.seat, action, bets)
            deal = game.decide(rules, deal, decision)
            bets += game.parse_bets(rules, created)
        else:
            pytest.fail(f"{game_id}: unexpected {e.to_json()}")
    assert deal.complete and deal.expect().kind == "complete"
    return game, rules, bets, deal, used


@pytest.mark.parametrize("game_id", sorted(DEALT))
def test_a_started_deal_fed_a_deck_reaches_complete_and_settles(game_id: str) -> None:
    game, rules, bets, deal, used = _play(game_id)
    outcome = deal.outcome()
    published = game.outcome_json(outcome)
    # what the table publishes parses back to the same outcome (a restart settles it)
    assert game.outcome_json(game.parse_outcome(rules, published)) == published
    settlement = game.settle(rules, outcome, bets, MoneyRules())
    assert {r.bet.bet_id for r in settlement.results} >= {b.bet_id for b in bets}
    assert used >= 4  # at least two cards a hand were dealt


@pytest.mark.parametrize("game_id", sorted(DEALT))
def test_a_card_after_the_deal_is_complete_is_the_one_misdeal(game_id: str) -> None:
    _, _, _, deal, used = _play(game_id)
    extra = list(deck())[used]
    with pytest.raises(Misdeal) as exc:
        deal.deal(extra)
    code = exc.value.code
    assert code.startswith("MISDEAL_") and code != "MISDEAL"
    doc = (ROOT / "docs" / "rules" / f"{game_id}.md").read_text(encoding="utf-8")
    assert f"`{code}`" in doc, f"{game_id}: {code} is not documented"
    # the deal refused the card and stays as it was
    assert deal.complete


def test_super_pan_9_refuses_a_card_dealt_twice_with_the_one_misdeal() -> None:
    # 261/96/M art. 1 1): one 52-card deck
    game = get_game("super-pan-9")
    rules = game.default_rules()
    raw, setup = DEALT["super-pan-9"]
    deal = game.start_deal(rules, game.parse_bets(rules, raw), setup).deal("AS")
    with pytest.raises(Misdeal) as exc:
        deal.deal("AS")
    assert exc.value.code == "MISDEAL_DUPLICATE_CARD"


def test_paikao_deals_tile_by_tile_through_the_same_interface() -> None:
    # 195/92/M art. 2 (b)-(d): the dice, then two tiles for each of the eight places
    deal: Deal = PaiKaoDeal.start(PaiKaoRules(), banker=1, banker_capital=100000)
    assert deal.expect() == Expect("dice")
    with pytest.raises(Misdeal) as exc:
        deal.deal(FULL_SET[0])
    assert exc.value.code == "MISDEAL_BEFORE_DICE"
    deal = deal.shake([1, 2, 3, 3])
    tiles = iter(FULL_SET)
    while deal.expect().kind == "tile":
        deal = deal.deal(next(tiles))
    assert deal.complete
    with pytest.raises(Misdeal) as exc:
        deal.deal(next(tiles))
    assert exc.value.code == "MISDEAL_EXTRA_TILE"
    game = get_game("paikao")
    rules = game.default_rules()
    outcome = game.parse_outcome(rules, game.outcome_json(deal.outcome()))
    assert game.outcome_json(outcome) == game.outcome_json(deal.outcome())


def test_a_deal_of_a_game_without_dice_refuses_them() -> None:
    game = get_game("baccarat")
    deal = game.start_deal(game.default_rules(), [])
    with pytest.raises(RulesError) as exc:
        deal.shake([1, 2, 3, 4])
    assert exc.value.code == "DICE_NOT_DUE"


def _class_names(name: str) -> list[str]:
    return [
        str(p.relative_to(GAMES))
        for p in sorted(GAMES.rglob("*.py"))
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef) and node.name == name
    ]


def test_one_expect_and_one_misdeal_for_every_game() -> None:
    assert _class_names("Expect") == ["base.py"]
    assert _class_names("Misdeal") == ["errors.py"]


def test_every_misdeal_code_is_stable_and_documented() -> None:
    """Every code a deal raises a Misdeal with is a literal the rules pages document
    (the one built from the banker deal's noun is checked above, card and tile)."""
    docs = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "docs" / "rules").glob("*.md"))
    codes = set()
    for p in GAMES.rglob("*.py"):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("Misdeal", "_misdeal")
            ):
                for kw in node.keywords:
                    if kw.arg == "code" and isinstance(kw.value, ast.Constant):
                        codes.add(kw.value.value)
    assert len(codes) >= 10  # the scan really finds them
    missing = sorted(c for c in codes if f"`{c}`" not in docs)
    assert missing == []
