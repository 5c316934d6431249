"""The order of games (135/91/M art. 3) and who takes a disputed discard (art. 5),
as pure helpers: the caller feeds each game's winner and the dice it read.

- A session is, in principle, 16 games in four wind rounds of four (East, South,
  West, North). The banker keeps the bank while he wins; when another player wins
  the bank passes to the player on the banker's right (the next in the order of
  play). A round ends when the bank has passed four times.
- Seats are numbered 0..3 in the order of play: seat ``s + 1`` sits on the right
  of seat ``s``. The banker's place is always East, then South, West, North (art. 3).
- The wall: the banker throws three dice (conventional) or two (simplified); the
  total, counted counter-clockwise from the banker as 1, picks the wall; that many
  stacks are counted from the right end of that wall and the drawing starts with
  the next stack.

Decisions where the text is silent (``docs/rules/mahjong.md``): a game nobody wins
(the wall runs out) leaves the bank where it is ("retém a banca até o jogo ser ganho
por outro parceiro"); in the simplified game the bank also passes to the right and
a round is still four passes of the bank, whatever the number of players; a count
longer than the wall goes on into the next wall in the drawing direction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import OutcomeError, RoundStateError
from .tiles import WIND_LETTERS

#: Stacks of two tiles in each of the four walls, and the dice thrown (art. 2 1), art. 3).
WALL_STACKS = {"conventional": 17, "simplified": 14}
DICE = {"conventional": 3, "simplified": 2}
ROUNDS = 4
PASSES_PER_ROUND = 4


@dataclass(frozen=True, slots=True)
class GameState:
    """Where a session stands before a game is played."""

    seats: tuple[int, ...]
    #: 1-based number of this game in the session (banker repeats count).
    number: int = 1
    #: 0..3: East, South, West, North round.
    round_wind: int = 0
    banker: int = 0
    #: Times the bank has passed in this round (0..3).
    passes: int = 0
    finished: bool = False

    def seat_wind(self, seat: int) -> str:
        """E, S, W or N: the banker is always East (art. 3)."""
        if seat not in self.seats:
            raise RoundStateError(f"seat {seat} is not playing (seats {list(self.seats)})")
        return WIND_LETTERS[(seat - self.banker) % 4]

    def to_json(self) -> dict[str, object]:
        return {
            "game": self.number,
            "round_wind": WIND_LETTERS[self.round_wind],
            "banker": self.banker,
            "passes": self.passes,
            "seat_winds": {str(s): self.seat_wind(s) for s in self.seats},
            "finished": self.finished,
        }


def first_game(seats: Sequence[int] = (0, 1, 2, 3), banker: int | None = None) -> GameState:
    """The first game of a session: East round, ``banker`` (default the first seat) is East."""
    ss = tuple(sorted(set(seats)))
    if not 2 <= len(ss) <= 4 or any(not 0 <= s <= 3 for s in ss):
        raise RoundStateError(f"seats must be 2 to 4 different seats 0..3, got {list(seats)}")
    b = ss[0] if banker is None else banker
    if b not in ss:
        raise RoundStateError(f"banker {b} is not one of the seats {list(ss)}")
    return GameState(ss, banker=b)


def next_game(state: GameState, winner: int | None) -> GameState:
    """The game after ``state`` was won by ``winner`` (``None``: nobody won)."""
    if state.finished:
        raise RoundStateError("the session's four rounds are over (art. 3)")
    if winner is not None and winner not in state.seats:
        raise RoundStateError(f"winner {winner} is not one of the seats {list(state.seats)}")
    number = state.number + 1
    if winner is None or winner == state.banker:
        return GameState(state.seats, number, state.round_wind, state.banker, state.passes)
    order = state.seats
    banker = order[(order.index(state.banker) + 1) % len(order)]
    passes = state.passes + 1
    round_wind = state.round_wind
    if passes == PASSES_PER_ROUND:
        passes = 0
        round_wind += 1
    return GameState(state.seats, number, round_wind, banker, passes, finished=round_wind == ROUNDS)


@dataclass(frozen=True, slots=True)
class WallBreak:
    total: int
    #: The wall the dice point at, as the wind of its owner (E is the banker's own wall).
    wall: str
    #: Where drawing starts: the wall (owner's wind) and the stack number counted from
    #: that wall's right end (1-based).
    start_wall: str
    start_stack: int
    stacks_per_wall: int

    def to_json(self) -> dict[str, object]:
        return {
            "total": self.total,
            "wall": self.wall,
            "start_wall": self.start_wall,
            "start_stack": self.start_stack,
            "stacks_per_wall": self.stacks_per_wall,
        }


def wall_break(variant: str, dice: Sequence[int]) -> WallBreak:
    """Where the wall is opened for the dice thrown by the banker (art. 3 (a), (b)).

    Example of art. 3 (a): 13 points -> the banker's own wall, 13 stacks counted from
    its right, drawing starts at stack 14 (four stacks remain). Example of art. 3 (b):
    9 points -> the banker's wall, drawing starts at stack 10 (five remain).
    """
    n = DICE[variant]
    if len(dice) != n or any(
        isinstance(d, bool) or not isinstance(d, int) or not 1 <= d <= 6 for d in dice
    ):
        raise OutcomeError(
            f"the {variant} game throws {n} dice of 1..6 (135/91/M art. 2 1)), got {list(dice)}",
            code="MAHJONG_DICE",
        )
    total = sum(dice)
    per = WALL_STACKS[variant]
    wall = (total - 1) % 4
    # Walls are consumed right to left, so drawing moves on to the wall of the player
    # on the owner's left: the one before him in the order of play.
    start = (wall - total // per) % 4
    return WallBreak(total, WIND_LETTERS[wall], WIND_LETTERS[start], total % per + 1, per)


def win_priority(
    discarder: int, claimants: Sequence[int], seats: Sequence[int] = (0, 1, 2, 3)
) -> int:
    """Of several players who can win on one discard, the nearest counter-clockwise from
    the discarder (the next in the order of play) takes it («chit vu», art. 5 (a) (6), (b) (5))."""
    order = sorted(seats)
    if (
        discarder not in order
        or not claimants
        or any(c not in order or c == discarder for c in claimants)
    ):
        raise RoundStateError(
            f"claimants {list(claimants)} of seat {discarder}'s discard are not "
            f"other players among {order}"
        )
    i = order.index(discarder)
    for k in range(1, len(order)):
        seat = order[(i + k) % len(order)]
        if seat in claimants:
            return seat
    raise AssertionError("unreachable")  # pragma: no cover
