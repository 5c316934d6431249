"""Roulette, fantan and dice statistics (issue 16 item 3): counts only, checked against
counts made here by hand or by a plain loop over the definitions. Each game says what
its statistics are (``Game.display.statistics``); the face publishes them."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from firmware_host.face import stats
from firmware_host.games import get_game


def figures(game: str, outcomes: list[dict], last: int = 20) -> dict:
    found = stats.statistics(game, outcomes, last=last)
    assert found is not None
    return found


RED = {1, 3, 5, 7, 9, 12, 14, 16, 18, 19, 21, 23, 25, 27, 30, 32, 34, 36}  # 60/2004, the wheel


def spins(*numbers: int) -> list[dict]:
    """Newest first, as the extension passes them."""
    return [
        {"number": n, "colour": "green" if n == 0 else ("red" if n in RED else "black")}
        for n in numbers
    ]


def test_roulette_chances_dozens_and_columns() -> None:
    s = figures("roulette", spins(36, 13, 0, 12, 1))
    # 36 red even high 3rd dozen col 3; 13 black odd low 2nd dozen col 1; 0 none;
    # 12 red even low 1st dozen col 3; 1 red odd low 1st dozen col 1
    assert s["chances"] == {
        "red": 3, "black": 1, "zero": 1, "odd": 2, "even": 2, "low": 3, "high": 1,
    }  # fmt: skip
    assert s["dozens"] == [2, 1, 1]
    assert s["columns"] == [2, 0, 2]
    assert s["last"] == [36, 13, 0, 12, 1]


def test_hot_and_cold_ties_by_recency() -> None:
    s = figures("roulette", spins(7, 5, 7, 5, 9), last=3)
    assert s["last"] == [7, 5, 7]
    # 7 and 5 twice each: 7 came last -> first; then 9 (once)
    assert s["hot"][:3] == [7, 5, 9]
    # cold: the numbers never hit, lowest first among equals (never waiting the same)
    assert s["cold"][:2] == [0, 1]
    assert s["since"]["7"] == 0 and s["since"]["9"] == 4 and s["since"]["0"] is None


def test_sicbo_totals_triples_and_chances() -> None:
    throws = [{"dice": d} for d in ([2, 2, 2], [1, 2, 3], [6, 5, 6], [4, 4, 1])]
    s = figures("sicbo", throws)
    assert figures("fish-prawn-crab", throws) == s  # the same three dice
    assert s["totals"]["6"] == 2 and s["totals"]["17"] == 1 and s["totals"]["9"] == 1
    assert s["triples"]["any"] == 1 and s["triples"]["2"] == 1
    assert s["doubles"] == 2
    # 57/2004 art. 7: a triple is neither small nor big; 1-2-3 (6), 4-4-1 (9) small;
    # 6-5-6 (17) big
    assert s["chances"] == {"small": 2, "big": 1, "odd": 2, "even": 2}
    assert s["faces"] == {"1": 2, "2": 2, "3": 1, "4": 1, "5": 1, "6": 1}


def test_fantan_counts() -> None:
    s = figures("fantan", [{"number": n} for n in (4, 4, 1, 3)])
    assert s["counts"] == {"1": 1, "2": 0, "3": 1, "4": 2}
    assert s["hot"] == [4, 1] and s["cold"] == [2, 3]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 36), max_size=200))
def test_roulette_counts_add_up(numbers: list[int]) -> None:
    s = figures("roulette", spins(*numbers))
    c = s["chances"]
    zero = numbers.count(0)
    assert c["red"] + c["black"] + c["zero"] == len(numbers)
    assert c["odd"] + c["even"] == c["low"] + c["high"] == len(numbers) - zero
    assert sum(s["dozens"]) == sum(s["columns"]) == len(numbers) - zero
    assert sum(s["counts"].values()) == len(numbers)
    for n in range(37):
        assert s["counts"][str(n)] == numbers.count(n)
    assert c["red"] == sum(n in RED for n in numbers)


def test_only_the_games_with_statistics_have_them() -> None:
    with_figures = {"roulette", "fantan", "sicbo", "fish-prawn-crab"}
    for game in ("roulette", "fantan", "sicbo", "fish-prawn-crab", "baccarat", "mahjong"):
        assert stats.applies(game) == (game in with_figures)
        assert (get_game(game).display.statistics is None) == (game not in with_figures)
    assert stats.statistics("baccarat", []) is None  # its figures are its roads
