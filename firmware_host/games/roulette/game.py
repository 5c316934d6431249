"""Roulette, single zero: Despacho Regulamentar Externo 60/2004.

Bet types (art. 6), pay table (art. 7), zero (art. 8). The Portuguese text of the
file we have stops at art. 6; art. 7-9 are read from the Chinese text, which is
equally official.

Decisions where the text is silent (see ``docs/rules/roulette.md``):

- The nine-number "sector" (art. 6 6)) does not list its numbers: sectors are layout
  data (``pay_table.roulette.sectors9``); the default is the wheel split into four
  quarters of nine pockets clockwise from zero, zero excluded.
- Whether the layout offers combinations that include zero (0-1 split, 0-1-2
  street, first four) is ``rules.roulette.zero_combinations`` (default false). When
  offered, art. 8 is applied to the letter: on zero only a *straight* on zero wins
  (art. 8 says "the bet on 0 wins and every other bet loses"), so those
  combinations lose on zero and ``tablectl math`` shows their much larger edge.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from tablecommon.wheel import WHEEL_ORDER

from ..base import JSON, Bet, BetType, DiscreteGame, as_int_list, check_derived, require
from ..describe import HOT_COLD, Area, Board, Demo, Display, Rng, number_statistics
from ..errors import InvalidSelection, OutcomeError
from ..money import Verdict
from ..options import option

RED: frozenset[int] = frozenset({1, 3, 5, 7, 9, 12, 14, 16, 18, 19, 21, 23, 25, 27, 30, 32, 34, 36})
BLACK: frozenset[int] = frozenset(range(1, 37)) - RED

#: The two twelve-number sectors named by art. 6 7), in the order the article lists them.
SECTORS12: tuple[frozenset[int], frozenset[int]] = (
    frozenset({1, 3, 5, 13, 15, 17, 20, 22, 24, 32, 34, 36}),
    frozenset({2, 4, 6, 14, 16, 18, 19, 21, 23, 31, 33, 35}),
)

DEFAULT_SECTORS9: dict[str, list[int]] = {
    "A": list(WHEEL_ORDER[1:10]),
    "B": list(WHEEL_ORDER[10:19]),
    "C": list(WHEEL_ORDER[19:28]),
    "D": list(WHEEL_ORDER[28:37]),
}


def _check_sectors9(value: dict[str, tuple[int, ...]]) -> str | None:
    for name, nums in value.items():
        if len(nums) != 9 or len(set(nums)) != 9:
            return f"sector {name!r} must list nine different numbers, got {list(nums)}"
        bad = [n for n in nums if not 0 <= n <= 36]
        if bad:
            return f"sector {name!r} has numbers outside 0..36: {bad}"
    return None


@dataclass(frozen=True, slots=True)
class RouletteRules:
    sectors9: dict[str, tuple[int, ...]] = option(
        DEFAULT_SECTORS9,
        section="pay_table",
        doc="Nine-number sectors offered on the layout (name -> nine numbers); empty: none offered",
        cite="60/2004 art. 6 6)",
        check=_check_sectors9,
    )
    zero_combinations: bool = option(
        False,
        doc="Layout offers splits, streets and the corner that include zero; they lose on zero",
        cite="60/2004 art. 8",
    )
    betting_procedure: int = option(
        1,
        choices=(1, 2),
        doc="1: bets close at the bell before the launch; 2: bets allowed while the ball spins "
        "until 'no more bets'",
        cite="60/2004 art. 3 2)",
    )

    def __hash__(self) -> int:  # dict field: hash by content
        return hash((tuple(sorted(self.sectors9.items())), self.zero_combinations))


@dataclass(frozen=True, slots=True)
class RouletteOutcome:
    number: int


# Bet type -> (numbers covered, art. 7 odds, article of art. 6, art. 7 item).
_ODDS = {
    "straight": 35,
    "split": 17,
    "street": 11,
    "corner": 8,
    "line": 5,
    "sector9": 3,
    "sector12": 2,
    "column": 2,
    "dozen": 2,
    "even": 1,
    "odd": 1,
    "low": 1,
    "high": 1,
    "red": 1,
    "black": 1,
}

_BET_TYPES = (
    BetType("straight", "Pleno (one number)", "60/2004 art. 6 1), art. 7 1)", "35:1"),
    BetType("split", "Cavalo (two adjacent numbers)", "60/2004 art. 6 2), art. 7 2)", "17:1"),
    BetType("street", "Rua (three numbers of a row)", "60/2004 art. 6 3), art. 7 3)", "11:1"),
    BetType("corner", "Quadro (four numbers)", "60/2004 art. 6 4), art. 7 4)", "8:1"),
    BetType("line", "Linha (six numbers, two rows)", "60/2004 art. 6 5), art. 7 5)", "5:1"),
    BetType("sector9", "Sector (nine numbers)", "60/2004 art. 6 6), art. 7 6)", "3:1"),
    BetType("sector12", "Sector of twelve numbers", "60/2004 art. 6 7), art. 7 7)", "2:1"),
    BetType("column", "Coluna (twelve numbers)", "60/2004 art. 6 8), art. 7 7)", "2:1"),
    BetType("dozen", "Pequeno / médio / grande (1-12, 13-24, 25-36)", "60/2004 art. 6 9)-11), art. 7 7)", "2:1"),
    BetType("even", "Par (even numbers)", "60/2004 art. 6 12), art. 7 8)", "1:1"),
    BetType("odd", "Ímpar (odd numbers)", "60/2004 art. 6 13), art. 7 8)", "1:1"),
    BetType("low", "Menor (1-18)", "60/2004 art. 6 14), art. 7 8)", "1:1"),
    BetType("high", "Maior (19-36)", "60/2004 art. 6 15), art. 7 8)", "1:1"),
    BetType("red", "Encarnado (red)", "60/2004 art. 6 16), art. 7 8)", "1:1"),
    BetType("black", "Preto (black)", "60/2004 art. 6 17), art. 7 8)", "1:1"),
)  # fmt: skip


def _pos(n: int) -> tuple[int, int]:
    """(row, column) of a number on the layout: rows of three, 1-2-3 first."""
    return (n - 1) // 3, (n - 1) % 3


def _adjacent(a: int, b: int) -> bool:
    (ra, ca), (rb, cb) = _pos(a), _pos(b)
    return (ra == rb and abs(ca - cb) == 1) or (ca == cb and abs(ra - rb) == 1)


_ZERO_SPLITS = {(0, 1), (0, 2), (0, 3)}
_ZERO_STREETS = {(0, 1, 2), (0, 2, 3)}
_ZERO_CORNER = (0, 1, 2, 3)


def numbers_covered(rules: RouletteRules, bet_type: str, selection: JSON) -> frozenset[int]:
    """The numbers a canonical selection covers (a bet wins when one of them comes)."""
    if bet_type in ("straight", "split", "street", "corner", "line"):
        nums = frozenset(selection)
        if bet_type == "line":
            return frozenset(range(selection[0], selection[0] + 6))
        return nums
    if bet_type == "sector9":
        return frozenset(rules.sectors9[selection])
    if bet_type == "sector12":
        return SECTORS12[selection - 1]
    if bet_type == "column":
        return frozenset(range(selection, 37, 3))
    if bet_type == "dozen":
        return frozenset(range(12 * (selection - 1) + 1, 12 * selection + 1))
    return {
        "even": frozenset(range(2, 37, 2)),
        "odd": frozenset(range(1, 37, 2)),
        "low": frozenset(range(1, 19)),
        "high": frozenset(range(19, 37)),
        "red": RED,
        "black": BLACK,
    }[bet_type]


# -- what people see, and how a demonstration plays it ------------------------------------
def statistics(
    outcomes: Sequence[Mapping[str, Any]], *, last: int = 20, hot_cold: int = HOT_COLD
) -> dict[str, JSON]:
    """``outcomes`` newest first (``{"number", "colour"}``): the numbers' counts, hot and
    cold, and the chances of 60/2004 art. 6: red and black as on the wheel (``colour``),
    zero neither; odd/even, low (1-18)/high (19-36), dozens (1-12, 13-24, 25-36) and
    columns (1, 4, 7...; 2, 5, 8...; 3, 6, 9...) leave zero out too."""
    out = number_statistics(outcomes, range(37), last, hot_cold)
    ns = [int(o["number"]) for o in outcomes]
    colours = Counter(str(o.get("colour")) for o in outcomes)
    nz = [n for n in ns if n]
    out["chances"] = {
        "red": colours["red"],
        "black": colours["black"],
        "zero": len(ns) - len(nz),
        "odd": sum(n % 2 for n in nz),
        "even": sum(1 - n % 2 for n in nz),
        "low": sum(n <= 18 for n in nz),
        "high": sum(n >= 19 for n in nz),
    }
    out["dozens"] = [sum(12 * d < n <= 12 * (d + 1) for n in nz) for d in range(3)]
    out["columns"] = [sum(n % 3 == (c + 1) % 3 for n in nz) for c in range(3)]
    return out


_DEMO_KINDS = (
    "straight", "split", "street", "corner", "line", "column", "dozen",
    "red", "black", "even", "odd", "low", "high", "sector12",
)  # fmt: skip


def demo_bet(rules: RouletteRules, rng: Rng) -> tuple[str, JSON]:
    """One bet anywhere on the layout, as a player places it."""
    kind = rng.choice(_DEMO_KINDS)
    n = rng.randint(1, 36)
    if kind == "straight":
        return kind, [rng.randint(0, 36)]
    if kind == "split":
        if n % 3 and rng.random() < 0.5:
            return kind, [n, n + 1]
        return kind, [n, n + 3] if n <= 33 else [n - 3, n]
    if kind == "street":
        a = 3 * rng.randint(0, 11) + 1
        return kind, [a, a + 1, a + 2]
    if kind == "corner":
        a = 3 * rng.randint(0, 10) + rng.randint(1, 2)
        return kind, [a, a + 1, a + 3, a + 4]
    if kind == "line":
        a = 3 * rng.randint(0, 10) + 1
        return kind, list(range(a, a + 6))
    if kind in ("column", "dozen"):
        return kind, rng.randint(1, 3)
    if kind == "sector12":
        return kind, rng.randint(1, 2)
    return kind, None


#: The board: every number's area, lit by the straight bet on it (the winning number's
#: alone), and the number shown with the numbers before it.
BOARD = Board("roulette", tuple(Area(str(n), "straight", [n]) for n in range(37)), number="number")


class Roulette(DiscreteGame[RouletteRules, RouletteOutcome]):
    game_id = "roulette"
    result_device = "wheel"
    device_kinds = frozenset({"wheel", "board"})
    title = "Roulette (single zero)"
    regulation = "60/2004"
    rules_type = RouletteRules
    display = Display(
        BOARD,
        statistics,
        words=lambda o: f"{o['number']} {o['colour']}",
        short=lambda o: f"{o['number']}{str(o['colour'])[:1].upper()}",
    )
    demo = Demo(bet=demo_bet)

    def bet_types(self, rules: RouletteRules) -> Sequence[BetType]:
        if not rules.sectors9:
            return tuple(bt for bt in _BET_TYPES if bt.name != "sector9")
        return _BET_TYPES

    def canonical_selection(self, rules: RouletteRules, bet_type: str, selection: JSON) -> JSON:
        zc = rules.zero_combinations
        if bet_type == "straight":
            nums = as_int_list(selection, "straight")
            require(
                len(nums) == 1 and 0 <= nums[0] <= 36,
                f"straight: one number 0..36, got {selection!r}",
            )
            return nums
        if bet_type == "split":
            nums = sorted(as_int_list(selection, "split"))
            require(
                len(nums) == 2 and all(0 <= n <= 36 for n in nums),
                f"split: two numbers 0..36, got {selection!r}",
            )
            a, b = nums
            if a == 0:
                require(
                    zc,
                    "split: combinations with zero are not offered on this layout (rules.roulette.zero_combinations)",
                )
                require(
                    (a, b) in _ZERO_SPLITS, f"split: {a} and {b} are not adjacent on the layout"
                )
            else:
                require(_adjacent(a, b), f"split: {a} and {b} are not adjacent on the layout")
            return nums
        if bet_type == "street":
            nums = sorted(as_int_list(selection, "street"))
            require(
                len(nums) == 3 and all(0 <= n <= 36 for n in nums),
                f"street: three numbers 0..36, got {selection!r}",
            )
            if nums[0] == 0:
                require(
                    zc,
                    "street: combinations with zero are not offered on this layout (rules.roulette.zero_combinations)",
                )
                require(
                    tuple(nums) in _ZERO_STREETS, f"street: {nums} is not a street of the layout"
                )
            else:
                require(
                    nums[0] % 3 == 1 and nums == [nums[0], nums[0] + 1, nums[0] + 2],
                    f"street: {nums} is not a row of the layout",
                )
            return nums
        if bet_type == "corner":
            nums = sorted(as_int_list(selection, "corner"))
            require(
                len(nums) == 4 and all(0 <= n <= 36 for n in nums),
                f"corner: four numbers 0..36, got {selection!r}",
            )
            if nums[0] == 0:
                require(
                    zc,
                    "corner: combinations with zero are not offered on this layout (rules.roulette.zero_combinations)",
                )
                require(
                    tuple(nums) == _ZERO_CORNER, f"corner: {nums} is not a corner of the layout"
                )
            else:
                a = nums[0]
                require(
                    a % 3 != 0 and nums == [a, a + 1, a + 3, a + 4],
                    f"corner: {nums} is not a square of the layout",
                )
            return nums
        if bet_type == "line":
            nums = sorted(as_int_list(selection, "line"))
            require(
                len(nums) == 6 and 1 <= nums[0] <= 31,
                f"line: six numbers of two adjacent rows, got {selection!r}",
            )
            a = nums[0]
            require(
                a % 3 == 1 and nums == list(range(a, a + 6)),
                f"line: {nums} is not two adjacent rows",
            )
            return nums
        if bet_type == "sector9":
            require(
                isinstance(selection, str) and selection in rules.sectors9,
                f"sector9: selection must be one of {sorted(rules.sectors9)}, got {selection!r}",
            )
            return selection
        if bet_type in ("sector12", "column", "dozen"):
            top = 2 if bet_type == "sector12" else 3
            require(
                isinstance(selection, int)
                and not isinstance(selection, bool)
                and 1 <= selection <= top,
                f"{bet_type}: selection must be an integer 1..{top}, got {selection!r}",
            )
            return selection
        if bet_type in ("even", "odd", "low", "high", "red", "black"):
            require(selection is None, f"{bet_type}: takes no selection, got {selection!r}")
            return None
        raise InvalidSelection(f"unknown roulette bet type {bet_type!r}")  # pragma: no cover

    def parse_outcome(self, rules: RouletteRules, raw: JSON) -> RouletteOutcome:
        """``{"number": n}`` or ``n``; the published form (with ``colour``) is accepted
        back if its colour agrees."""
        given = raw
        if isinstance(raw, dict) and set(raw) in ({"number"}, {"number", "colour"}):
            raw = raw["number"]
        if isinstance(raw, bool) or not isinstance(raw, int) or not 0 <= raw <= 36:
            raise OutcomeError(f'roulette outcome must be {{"number": 0..36}}, got {given!r}')
        outcome = RouletteOutcome(raw)
        check_derived(given, self.outcome_json(outcome), "roulette")
        return outcome

    def outcome_json(self, outcome: RouletteOutcome) -> JSON:
        n = outcome.number
        colour = "green" if n == 0 else ("red" if n in RED else "black")
        return {"number": n, "colour": colour}

    def verdict(self, rules: RouletteRules, outcome: RouletteOutcome, bet: Bet) -> Verdict:
        n = outcome.number
        if n == 0:
            if bet.bet_type == "straight" and bet.selection == [0]:
                return Verdict.win(35, reason="straight on 0 (60/2004 art. 7 1), art. 8)")
            return Verdict.lose("zero: only a straight on 0 wins (60/2004 art. 8)")
        if n in numbers_covered(rules, bet.bet_type, bet.selection):
            return Verdict.win(_ODDS[bet.bet_type])
        return Verdict.lose()

    def outcome_space(self, rules: RouletteRules) -> Sequence[tuple[RouletteOutcome, Fraction]]:
        return [(RouletteOutcome(n), Fraction(1, 37)) for n in range(37)]

    def math_bets(self, rules: RouletteRules) -> Sequence[tuple[str, Any]]:
        bets: list[tuple[str, Any]] = [
            ("straight", [0]),
            ("straight", [17]),
            ("split", [17, 20]),
            ("street", [16, 17, 18]),
            ("corner", [17, 18, 20, 21]),
            ("line", [13, 14, 15, 16, 17, 18]),
        ]
        bets += [("sector9", name) for name in rules.sectors9]
        bets += [("sector12", 1), ("sector12", 2), ("column", 1), ("dozen", 1)]
        bets += [(t, None) for t in ("even", "odd", "low", "high", "red", "black")]
        if rules.zero_combinations:
            bets += [("split", [0, 1]), ("street", [0, 1, 2]), ("corner", [0, 1, 2, 3])]
        return bets


GAME = Roulette()
