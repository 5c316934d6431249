"""What a game says of itself (issue 31): which areas of its board a result lights (the
game's own verdicts, no second computation), the board's default lamp order, its demo's
bets and words, for every game.

The expected sets are written out by hand from the articles (they were the board
layouts' until the board asked the game).
"""

from __future__ import annotations

import itertools
import random

import pytest

from drivers.board.layouts import lamp_map
from firmware_host.games import GAME_IDS, get_game
from firmware_host.games.base import DiscreteGame, winning_areas
from firmware_host.games.describe import DemoRound, sample_outcome
from firmware_host.games.errors import OutcomeError


def sicbo_areas(dice: tuple[int, ...]) -> tuple[str, ...]:
    g = get_game("sicbo")
    return winning_areas(g, g.default_rules(), {"dice": list(dice)})


def fpc_areas(dice: tuple[int, ...]) -> tuple[str, ...]:
    g = get_game("fish-prawn-crab")
    return winning_areas(g, g.default_rules(), {"dice": list(dice)})


def areas_of(game: str) -> tuple[str, ...]:
    board = get_game(game).display.board
    assert board is not None
    return board.area_names()


SICBO = {
    # 57/2004 art. 7: a triple takes small and big; no total area for 3 (art. 5 6): 4..17)
    (1, 1, 1): {"odd", "single-1", "double-1", "triple-1", "any-triple"},
    (6, 6, 6): {"even", "single-6", "double-6", "triple-6", "any-triple"},
    # art. 5 1), 3), 6), 9), 11), 12)
    (2, 2, 5): {
        "small",
        "odd",
        "single-2",
        "single-5",
        "double-2",
        "total-9",
        "combo-2-5",
        "pair-single-2-5",
    },
    # art. 5 10) three dice specified, 13) four numbers (three of the four shown)
    (1, 2, 3): {
        "small",
        "even",
        "single-1",
        "single-2",
        "single-3",
        "total-6",
        "combo-1-2",
        "combo-1-3",
        "combo-2-3",
        "three-1-2-3",
        "four-1-2-3-4",
        "four-1-2-3-5",
        "four-1-2-3-6",
    },
    (4, 6, 5): {
        "big",
        "odd",
        "single-4",
        "single-5",
        "single-6",
        "total-15",
        "combo-4-5",
        "combo-4-6",
        "combo-5-6",
        "three-4-5-6",
        "four-1-4-5-6",
        "four-2-4-5-6",
        "four-3-4-5-6",
    },
}


@pytest.mark.parametrize(("dice", "want"), SICBO.items())
def test_sicbo_winning_areas_57_2004_art_5_and_7(
    dice: tuple[int, int, int], want: set[str]
) -> None:
    assert set(sicbo_areas(dice)) == want


FPC = {
    # 59/2004 art. 1: 1 fish red, 2 prawn green, 3 gourd blue, 4 coin blue, 5 crab green, 6 rooster red
    # art. 7: three alike take small and big
    (1, 1, 1): {"fish", "three-red", "any-three-colour", "triple-fish", "any-triple"},
    # art. 5 4), 5): exactly one / exactly two of the colour
    (3, 4, 2): {"small", "prawn", "gourd", "coin", "one-green", "two-blue", "total-9"},
    (1, 6, 5): {"big", "fish", "crab", "rooster", "two-red", "one-green", "total-12"},
    # art. 5 7): three of one colour without three alike
    (3, 4, 4): {"big", "gourd", "coin", "three-blue", "any-three-colour", "total-11"},
}


@pytest.mark.parametrize(("dice", "want"), FPC.items())
def test_fish_prawn_crab_winning_areas_59_2004_art_5_and_7(
    dice: tuple[int, int, int], want: set[str]
) -> None:
    assert set(fpc_areas(dice)) == want


@pytest.mark.parametrize("dice", list(itertools.product(range(1, 7), repeat=3)))
def test_every_throw_lights_known_areas_and_one_of_small_big_unless_a_triple(
    dice: tuple[int, int, int],
) -> None:
    for areas, layout in ((sicbo_areas(dice), "sicbo"), (fpc_areas(dice), "fish-prawn-crab")):
        assert set(areas) <= set(areas_of(layout))
        assert len(areas) == len(set(areas))
        triple = len(set(dice)) == 1
        assert ("small" in areas) + ("big" in areas) == (0 if triple else 1)
        if not triple:
            assert ("small" in areas) == (sum(dice) <= 10)


def test_bad_dice_are_refused() -> None:
    for bad in [(0, 1, 2), (1, 2), (1, 2, 7), (1, 2, True)]:
        with pytest.raises(OutcomeError):
            sicbo_areas(bad)


def test_default_lamp_maps_number_the_areas_in_order() -> None:
    m = lamp_map(areas_of("sicbo"))
    assert m["small"] == 0 and m["big"] == 1 and m["odd"] == 2 and m["even"] == 3
    assert lamp_map(areas_of("roulette"))["17"] == 17
    assert sorted(m.values()) == list(range(len(m)))
    assert areas_of("fantan") == ("1", "2", "3", "4")
    assert areas_of("baccarat") == ("banker", "player", "tie", "banker-pair", "player-pair")


@pytest.mark.parametrize(("game", "outcome", "lit"), [
    ("roulette", {"number": 17}, ("17",)),
    ("roulette", {"number": 0}, ("0",)),
    ("fantan", {"number": 4}, ("4",)),
    # 55/2004 art. 12: on a tie the player and banker bets push: the tie alone is lit
    ("baccarat", {"player": ["9S", "KD"], "banker": ["9H", "KC"]}, ("tie",)),
    ("baccarat", {"player": ["2S", "2D"], "banker": ["9H", "KC"]}, ("banker", "player-pair")),
])  # fmt: skip
def test_number_and_card_boards(game: str, outcome: dict, lit: tuple[str, ...]) -> None:
    g = get_game(game)
    assert winning_areas(g, g.default_rules(), outcome) == lit


@pytest.mark.parametrize("game", GAME_IDS)
def test_every_game_describes_itself_soundly(game: str) -> None:
    g = get_game(game)
    rules = g.default_rules()
    board = g.display.board
    if board is not None:  # every area is a bet the layout takes, each area once
        for a in board.areas:
            g.canonical_selection(rules, a.bet_type, a.selection)
        assert len(set(board.area_names())) == len(board.areas)
    rng = random.Random(7)
    if g.demo.bet is not None:  # the players' bets are valid bets of the game
        for _ in range(200):
            bet_type, selection = g.demo.bet(rules, rng)
            g.parse_bet(rules, {"bet_type": bet_type, "selection": selection, "stake": 100})
    rnd = DemoRound(0, "r1", 5)
    if g.demo.seated is not None:
        g.parse_bets(rules, g.demo.seated(rules, rng, rnd))
    if g.demo.declared is not None:
        bets, outcome = g.demo.declared(rules, rng, rnd)
        g.parse_bets(rules, bets or [])
        g.parse_outcome(rules, outcome)
    elif g.result_device is None:
        g.parse_outcome(rules, sample_outcome(g, rules, 0))
    if g.display.words is not None and hasattr(g, "sample_outcomes"):
        for o in g.sample_outcomes(rules):
            assert g.display.words(g.outcome_json(o))
    if isinstance(g, DiscreteGame) and g.display.words is not None:
        for o, _p in list(g.outcome_space(rules))[:20]:
            published = g.outcome_json(o)
            assert g.display.words(published)
            if g.display.short is not None:
                assert g.display.short(published)
