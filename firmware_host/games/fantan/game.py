"""Fantan: Despacho Regulamentar Externo 58/2004.

The croupier counts the covered buttons off four at a time; what remains (1 to 4,
a remainder of 0 counting as 4, art. 3 2)) is the winning number. Chances (art. 6):
Kuoc (two numbers), Fan (one), Nim (one to win, one to push), Nga (two to win, one
to push, the fourth loses) and Sé-Sam-Hong (three numbers). Prizes on top of the
stake (art. 7): Fan 3, Nim 2, Nga 1/2, Sé-Sam-Hong 1/3, Kuoc 1. A push returns the
stake (art. 8). Five per cent of the *prizes* go to the bank (art. 9), never of the
stake.

Decision: Kuoc accepts any two different numbers. The text says only "two
numbers"; layouts place it on the four corners (1-2, 2-3, 3-4, 4-1), and every pair
has the same probability and prize.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..base import JSON, Bet, BetType, DiscreteGame, as_int_list, check_derived, require
from ..describe import Area, Board, Demo, DemoRound, Display, Rng, number_statistics
from ..errors import InvalidSelection, OutcomeError
from ..money import Verdict

NUMBERS = (1, 2, 3, 4)

_BET_TYPES = (
    BetType("fan", "Fan (one number)", "58/2004 art. 6 2) (1), art. 7 1) (1)", "3:1 less 5%"),
    BetType("nim", "Nim (one number wins, one pushes)", "58/2004 art. 6 2) (2), art. 7 1) (2)", "2:1 less 5%"),
    BetType("nga", "Nga (two numbers win, one pushes)", "58/2004 art. 6 2) (3), art. 7 1) (3)", "1:2 less 5%"),
    BetType("sam_hong", "Sé-Sam-Hong (three numbers)", "58/2004 art. 6 2) (4), art. 7 1) (4)", "1:3 less 5%"),
    BetType("kwok", "Kuoc (two numbers)", "58/2004 art. 6 1), art. 7 2)", "1:1 less 5%"),
)  # fmt: skip

_ODDS = {
    "fan": Fraction(3),
    "nim": Fraction(2),
    "nga": Fraction(1, 2),
    "sam_hong": Fraction(1, 3),
    "kwok": Fraction(1),
}


#: Art. 9: five per cent of the prizes revert to the bank.
COMMISSION = Fraction(5, 100)

#: The most covered buttons a count may give. The text leaves the heap's size to
#: chance (art. 2: "um conjunto de botões, à sorte"); a table's heap is a few hundred.
#: Decision: a count above this is a keying error, not a result.
MAX_BUTTONS = 10_000


@dataclass(frozen=True, slots=True)
class FantanRules:
    """58/2004 fixes every prize and the commission; it names no house option."""


@dataclass(frozen=True, slots=True)
class FantanOutcome:
    number: int
    buttons: int | None = None


def _number(v: JSON, what: str) -> int:
    require(
        isinstance(v, int) and not isinstance(v, bool) and v in NUMBERS,
        f"{what} must be a number 1..4, got {v!r}",
    )
    assert isinstance(v, int)
    return v


def _distinct(nums: list[int], bet_type: str) -> None:
    require(len(set(nums)) == len(nums), f"{bet_type}: numbers must be different, got {nums}")


# -- what people see, and how a demonstration plays it ------------------------------------
def statistics(
    outcomes: Sequence[Mapping[str, Any]], *, last: int = 20, hot_cold: int = 2
) -> dict[str, JSON]:
    """``outcomes`` newest first (``{"number": 1..4}``): each number's count, hot and
    cold, odd and even."""
    out = number_statistics(outcomes, range(1, 5), last, hot_cold)
    ns = [int(o["number"]) for o in outcomes]
    out["chances"] = {"odd": sum(n % 2 for n in ns), "even": sum(1 - n % 2 for n in ns)}
    return out


def demo_bet(rules: FantanRules, rng: Rng) -> tuple[str, JSON]:
    """One bet anywhere on the layout, as a player places it."""
    kind = rng.choice(["fan", "nim", "nga", "sam_hong", "kwok"])
    n = rng.sample([1, 2, 3, 4], 4)
    return kind, {
        "fan": n[0],
        "nim": {"win": n[0], "push": n[1]},
        "nga": {"win": n[:2], "push": n[2]},
        "sam_hong": n[:3],
        "kwok": n[:2],
    }[kind]


def demo_count(rules: FantanRules, rng: Rng, rnd: DemoRound) -> tuple[None, JSON]:
    """The croupier's count of the covered buttons (art. 3), entered as the result; the
    players bet on the layout."""
    return None, {"buttons": rng.randint(20, 120)}


def _words(o: Any) -> str:
    return f"number {o['number']}" + (f" ({o['buttons']} buttons)" if "buttons" in o else "")


#: The board: the four numbers, each lit by the Fan on it, and the number shown with the
#: numbers before it (art. 3 2): the remainder, 4 for none).
BOARD = Board("fantan", tuple(Area(str(n), "fan", n) for n in NUMBERS), number="number")


class Fantan(DiscreteGame[FantanRules, FantanOutcome]):
    game_id = "fantan"
    result_device = "keypad"
    device_kinds = frozenset({"keypad", "board"})
    title = "Fantan"
    regulation = "58/2004"
    rules_type = FantanRules
    display = Display(BOARD, statistics, words=_words, short=lambda o: str(o["number"]))
    demo = Demo(bet=demo_bet, declared=demo_count)

    def bet_types(self, rules: FantanRules) -> Sequence[BetType]:
        return _BET_TYPES

    def canonical_selection(self, rules: FantanRules, bet_type: str, selection: JSON) -> JSON:
        if bet_type == "fan":
            return _number(
                selection[0] if isinstance(selection, list) and len(selection) == 1 else selection,
                "fan",
            )
        if bet_type in ("kwok", "sam_hong"):
            n = 2 if bet_type == "kwok" else 3
            nums = as_int_list(selection, bet_type)
            require(
                len(nums) == n, f"{bet_type}: selection must be {n} numbers 1..4, got {selection!r}"
            )
            for v in nums:
                _number(v, bet_type)
            _distinct(nums, bet_type)
            return sorted(nums)
        if bet_type in ("nim", "nga"):
            require(
                isinstance(selection, dict) and set(selection) == {"win", "push"},
                f'{bet_type}: selection must be {{"win": ..., "push": ...}}, got {selection!r}',
            )
            assert isinstance(selection, dict)
            push = _number(selection["push"], f"{bet_type} push")
            if bet_type == "nim":
                win = _number(selection["win"], "nim win")
                _distinct([win, push], bet_type)
                return {"win": win, "push": push}
            wins = as_int_list(selection["win"], "nga win")
            require(len(wins) == 2, f"nga: two winning numbers, got {selection['win']!r}")
            for v in wins:
                _number(v, "nga win")
            _distinct([*wins, push], bet_type)
            return {"win": sorted(wins), "push": push}
        raise InvalidSelection(f"unknown fantan bet type {bet_type!r}")  # pragma: no cover

    def parse_outcome(self, rules: FantanRules, raw: JSON) -> FantanOutcome:
        """``{"number": 1..4}`` (0 is read as 4), or ``{"buttons": N}``: the count of the
        covered buttons, whose remainder by four decides (art. 3)."""
        given = raw
        if isinstance(raw, dict) and "buttons" in raw and set(raw) <= {"buttons", "number"}:
            b = raw["buttons"]
            if isinstance(b, bool) or not isinstance(b, int) or not 1 <= b <= MAX_BUTTONS:
                raise OutcomeError(
                    f"fantan: buttons must be a count of covered buttons 1..{MAX_BUTTONS}, "
                    f"got {b!r}"
                )
            outcome = FantanOutcome(b % 4 or 4, b)
            if raw.get("number") == 0 and not isinstance(raw.get("number"), bool):
                given = {**raw, "number": 4}  # art. 3 2): a result of 0 counts as four
            check_derived(given, self.outcome_json(outcome), "fantan")
            return outcome
        if isinstance(raw, dict) and set(raw) == {"number"}:
            raw = raw["number"]
        if isinstance(raw, bool) or not isinstance(raw, int) or not 0 <= raw <= 4:
            raise OutcomeError(
                f'fantan outcome must be {{"number": 1..4}} (0 counts as 4) or {{"buttons": N}}, '
                f"got {given!r}"
            )
        return FantanOutcome(raw or 4)

    def outcome_json(self, outcome: FantanOutcome) -> JSON:
        out: dict[str, Any] = {"number": outcome.number}
        if outcome.buttons is not None:
            out["buttons"] = outcome.buttons
        return out

    def verdict(self, rules: FantanRules, outcome: FantanOutcome, bet: Bet) -> Verdict:
        n, t, sel = outcome.number, bet.bet_type, bet.selection
        if t == "fan":
            won, push = n == sel, False
        elif t in ("kwok", "sam_hong"):
            won, push = n in sel, False
        elif t == "nim":
            won, push = n == sel["win"], n == sel["push"]
        elif t == "nga":
            won, push = n in sel["win"], n == sel["push"]
        else:  # pragma: no cover
            raise InvalidSelection(f"unknown fantan bet type {t!r}")
        if won:
            return Verdict.win(_ODDS[t], COMMISSION, "5% of the prize to the bank (58/2004 art. 9)")
        if push:
            return Verdict.push("push: the stake is returned (58/2004 art. 8)")
        return Verdict.lose()

    def outcome_space(self, rules: FantanRules) -> Sequence[tuple[FantanOutcome, Fraction]]:
        return [(FantanOutcome(n), Fraction(1, 4)) for n in NUMBERS]

    def math_bets(self, rules: FantanRules) -> Sequence[tuple[str, Any]]:
        return [
            ("fan", 1),
            ("nim", {"win": 1, "push": 2}),
            ("nga", {"win": [1, 2], "push": 3}),
            ("sam_hong", [1, 2, 3]),
            ("kwok", [1, 2]),
        ]


GAME = Fantan()
