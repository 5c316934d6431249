"""Mah-jong 135/91/M art. 3 (games, rounds, the bank, the wall) and art. 5 (priority)."""

from __future__ import annotations

import pytest

from firmware_host.games.errors import OutcomeError, RoundStateError
from firmware_host.games.mahjong.sequence import first_game, next_game, wall_break, win_priority


def test_sixteen_games_in_four_wind_rounds_art_3_a() -> None:
    # When the bank passes at every game: 16 games, four of each round, each seat banker once a round.
    g = first_game()
    seen = []
    while not g.finished:
        seen.append((g.round_wind, g.banker))
        g = next_game(g, winner=(g.banker + 1) % 4)
    assert len(seen) == 16
    assert [r for r, _ in seen] == [0] * 4 + [1] * 4 + [2] * 4 + [3] * 4
    assert [b for _, b in seen] == [0, 1, 2, 3] * 4


def test_banker_keeps_the_bank_while_he_wins_art_3_a() -> None:
    g = first_game()
    g2 = next_game(g, winner=0)
    assert (g2.banker, g2.round_wind, g2.passes, g2.number) == (0, 0, 0, 2)


def test_bank_passes_to_the_right_when_another_wins_art_3_a() -> None:
    g = next_game(first_game(), winner=2)
    assert g.banker == 1 and g.passes == 1


def test_banker_wins_lengthen_the_session_art_3_a() -> None:
    g = first_game()
    g = next_game(g, 0)
    g = next_game(g, 0)
    n = 2
    while not g.finished:
        g = next_game(g, (g.banker + 1) % 4)
        n += 1
    assert n == 18


def test_game_nobody_wins_keeps_the_bank_decision_art_3() -> None:
    g = next_game(first_game(), winner=None)
    assert g.banker == 0 and g.passes == 0


def test_banker_is_always_east_art_3() -> None:
    g = next_game(first_game(), winner=3)  # the bank passes to seat 1
    assert [g.seat_wind(s) for s in range(4)] == ["N", "E", "S", "W"]


def test_no_game_after_the_north_round_art_3() -> None:
    g = first_game()
    while not g.finished:
        g = next_game(g, (g.banker + 1) % 4)
    with pytest.raises(RoundStateError):
        next_game(g, 0)


def test_simplified_two_players_art_3_b() -> None:
    g = first_game(seats=[0, 2])
    g = next_game(g, winner=2)
    assert g.banker == 2 and g.seat_wind(2) == "E" and g.seat_wind(0) == "W"


def test_wall_example_of_art_3_a() -> None:
    # 13 points: the banker's own wall, 13 stacks counted, drawing from the four left.
    w = wall_break("conventional", [6, 4, 3])
    assert (w.wall, w.start_wall, w.start_stack) == ("E", "E", 14)
    assert w.stacks_per_wall - w.start_stack + 1 == 4


def test_wall_example_of_art_3_b() -> None:
    w = wall_break("simplified", [4, 5])
    assert (w.wall, w.start_wall, w.start_stack) == ("E", "E", 10)
    assert w.stacks_per_wall - w.start_stack + 1 == 5


@pytest.mark.parametrize(
    ("total", "wall"), [(2, "S"), (3, "W"), (4, "N"), (5, "E"), (6, "S"), (12, "N")]
)
def test_wall_counted_counter_clockwise_banker_first_art_3(total: int, wall: str) -> None:
    dice = [total - 1, 1] if total <= 7 else [6, total - 6]
    assert wall_break("simplified", dice).wall == wall


def test_count_beyond_the_wall_goes_on_to_the_next_decision_art_3_a() -> None:
    w = wall_break("conventional", [6, 6, 6])  # 18: South's wall, 17 stacks, one more
    assert (w.wall, w.start_wall, w.start_stack) == ("S", "E", 2)
    w = wall_break("conventional", [6, 6, 5])  # 17: the whole East wall
    assert (w.wall, w.start_wall, w.start_stack) == ("E", "N", 1)


@pytest.mark.parametrize(
    ("variant", "dice"),
    [("conventional", [1, 2]), ("simplified", [1, 2, 3]), ("conventional", [1, 2, 7])],
)
def test_dice_count_three_conventional_two_simplified_art_2_1(
    variant: str, dice: list[int]
) -> None:
    with pytest.raises(OutcomeError) as e:
        wall_break(variant, dice)
    assert e.value.code == "MAHJONG_DICE"


def test_nearest_counter_clockwise_takes_the_discard_art_5_a_6() -> None:
    assert win_priority(1, [3, 2]) == 2
    assert win_priority(3, [2, 1]) == 1
    assert win_priority(0, [3]) == 3
    with pytest.raises(RoundStateError):
        win_priority(0, [0])
