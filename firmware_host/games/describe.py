"""What a game says of itself beside its rules, so that nothing outside ``games/`` has to
know it by its id.

- :class:`Display` (``Game.display``): what people see of a table of the game: its lit
  result board (:class:`Board`: the areas of its layout, each the bet it shows, lit
  when that bet wins, by the game's own verdict: ``base.winning_areas``; a number with
  its history; the roads of the shoe), its statistics (a pure function of the last
  outcomes: :func:`number_statistics` and ``dice.dice_statistics`` are the shared
  ones), its outcome in words and as a board's history shows it, and how its payloads
  number the seats;
- :class:`Demo` (``Game.demo``): how a demonstration plays it (``tablectl demo``, the
  benchmarks): the table file's sections that show it off, the bets its simulated
  players place, the bets made at the seats of a dealt game, a player's decision, and
  for a game whose result people declare, the round they declare. Each draws with the
  caller's random number generator (:class:`Rng`, made from the demo's seed): the rules
  core holds none, and the same seed plays the same rounds.

A game that says nothing is still shown and played: no board, no statistics, its
outcome as JSON; its players bet from its house-edge catalogue (``math_bets``) and its
croupier enters its results as the demo finds them (``sample_outcomes``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, MutableSequence, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from .errors import RulesError

if TYPE_CHECKING:
    from .base import JSON, Deal, Expect, Game

__all__ = [
    "Area",
    "Board",
    "Demo",
    "DemoRound",
    "Display",
    "Rng",
    "number_statistics",
    "ranked",
    "sample_outcome",
]

T = TypeVar("T")

#: Hot and cold numbers shown by default.
HOT_COLD = 5


class Rng(Protocol):
    """What a demonstration draws with (``random.Random`` has it): the caller's, seeded."""

    def random(self) -> float: ...

    def randint(self, a: int, b: int) -> int: ...

    def choice(self, seq: Sequence[T]) -> T: ...

    def sample(self, population: Sequence[T], k: int) -> list[T]: ...

    def shuffle(self, x: MutableSequence[Any]) -> None: ...


# -- what people see -------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Area:
    """One area of a board's layout: its name (a lamp of the board) and the bet whose
    win lights it."""

    name: str
    bet_type: str
    selection: JSON = None


@dataclass(frozen=True)
class Board:
    """A game's lit result board.

    ``layout`` names it (a board device's ``layout`` must say the same); ``areas`` are
    its areas in the default lamp order (area ``i`` is lamp ``i`` unless the device maps
    them); ``number`` is the outcome's key of the number shown with its history
    (roulette, fantan), ``roads`` whether it shows the shoe's roads (baccarat).
    """

    layout: str
    areas: tuple[Area, ...]
    number: str | None = None
    roads: bool = False

    def area_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.areas)


@dataclass(frozen=True)
class Display:
    """What people see of a table of the game (``Game.display``)."""

    board: Board | None = None
    #: ``statistics(outcomes, last=N)``: the figures of the retained ``stats`` topic over
    #: the outcomes as published, newest first (counts only); None: no statistics.
    statistics: Callable[..., dict[str, JSON]] | None = None
    #: The published outcome in words (one line); None: shown as JSON.
    words: Callable[[Any], str] | None = None
    #: The published outcome as a board's history shows it (``17R``, ``245``); None:
    #: the game has no such history.
    short: Callable[[Any], str] | None = None
    #: The number of the first seat in the game's payloads (mah-jong numbers its four
    #: seats from 0, East); people are shown seats from 1 in every game.
    first_seat: int = 1


def ranked(
    counts: Mapping[int, int], recency: Mapping[int, int], n: int
) -> tuple[list[int], list[int]]:
    """Hot: the ``n`` numbers hit most (a tie goes to the one hit more recently); cold:
    the ``n`` hit least (a tie goes to the one waiting longest). ``recency``: rounds
    since each number was last hit (absent: not in the window)."""
    never = 10**9
    hot = sorted(counts, key=lambda k: (-counts[k], recency.get(k, never), k))
    cold = sorted(counts, key=lambda k: (counts[k], -recency.get(k, never), k))
    return hot[:n], cold[:n]


def number_statistics(
    outcomes: Sequence[Mapping[str, Any]], numbers: range, last: int, hot_cold: int
) -> dict[str, JSON]:
    """The statistics of a game whose outcome is a ``number`` of ``numbers`` (roulette,
    fantan), newest first: the last ones, each number's count and rounds since it came,
    hot and cold numbers."""
    seen = [int(o["number"]) for o in outcomes]
    counts = Counter({k: 0 for k in numbers})
    counts.update(seen)
    recency: dict[int, int] = {}
    for i, n in enumerate(seen):
        recency.setdefault(n, i)
    hot, cold = ranked(counts, recency, hot_cold)
    return {
        "last": list(seen[:last]),
        "counts": {str(k): counts[k] for k in numbers},
        "hot": list(hot),
        "cold": list(cold),
        "since": {str(k): recency.get(k) for k in numbers},
    }


# -- how a demonstration plays it ----------------------------------------------------------
@dataclass(frozen=True, slots=True)
class DemoRound:
    """The round a demonstration is about to play: how many came before it (``index``),
    the tag its bet ids start with, how many bets it asked for."""

    index: int
    tag: str
    bets: int


@dataclass(frozen=True)
class Demo:
    """How a demonstration plays the game (``Game.demo``)."""

    #: Sections of the demo's table file for this game beside the demo's own (limits the
    #: players bet within, the house options that show the game off).
    table: Mapping[str, Any] = field(default_factory=dict)
    #: ``bet(rules, rng)``: one bet anywhere on the layout, ``(bet type, selection)``;
    #: the simulated players add the seat and the stake. None: from ``math_bets``.
    bet: Callable[[Any, Rng], tuple[str, JSON]] | None = None
    #: ``seated(rules, rng, round)``: the bets of a dealt round, made seat by seat (the
    #: croupier seats the players: blackjack's main and pair bets, stud's ante and
    #: jackpot); None: the players bet on the layout.
    seated: Callable[[Any, Rng, DemoRound], list[dict[str, JSON]]] | None = None
    #: ``decide(rules, rng, expect, deal)``: a player's decision on what the deal expects
    #: (``Expect.allowed``), as ``Game.decide`` takes it.
    decide: Callable[[Any, Rng, Expect, Deal], dict[str, JSON]] | None = None
    #: ``declared(rules, rng, round)``: a round whose result people declare (no device
    #: reads it in the demo): the bets made at the seats (None: the players bet on the
    #: layout) and the outcome declared. None: a sample outcome of the game, in turn.
    declared: Callable[[Any, Rng, DemoRound], tuple[list[dict[str, JSON]] | None, JSON]] | None = (
        None
    )


def sample_outcome(game: Game[Any, Any], rules: Any, index: int) -> JSON:
    """The outcome a demonstration declares for a game that says nothing: its sample
    outcomes in turn (``sample_outcomes``), as published."""
    samples = getattr(game, "sample_outcomes", None)
    if samples is None:
        raise RulesError(
            f"{game.game_id} says no outcome a demonstration could declare", code="NOT_SUPPORTED"
        )
    found = [game.outcome_json(o) for o in samples(rules)]
    return found[index % len(found)]
