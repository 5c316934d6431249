"""Fish-prawn-crab (Peixe-camarão-caranguejo): Despacho Regulamentar Externo 59/2004.

Faces and colours of art. 1 1): fish red 1, prawn green 2, gourd blue 3, coin blue
4, crab green 5, rooster red 6. Bet types of art. 5, prizes of art. 6; Small and Big
lose when the three dice show the same figure (art. 7). The Portuguese text of art. 6
9)-10) is printed at the head of the file we were given; it agrees with the Chinese.

Colour bets are "exactly": one and only one die of the colour (art. 5 4), the Chinese
note: one, three or none lose), two and only two (art. 5 5)).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..base import JSON, Bet, BetType, DiscreteGame, check_derived, require
from ..describe import Area, Board, Demo, Display, Rng
from ..dice import ThreeDice, dice_statistics, parse_dice, throw_space
from ..errors import InvalidSelection, OutcomeError
from ..money import Verdict

#: Art. 1 1): figure -> (face number, colour).
FIGURES: dict[str, tuple[int, str]] = {
    "fish": (1, "red"),
    "prawn": (2, "green"),
    "gourd": (3, "blue"),
    "coin": (4, "blue"),
    "crab": (5, "green"),
    "rooster": (6, "red"),
}
#: Every name a die may be read by (art. 1 1)): the API names, and the figures as the
#: Portuguese and the Chinese texts print them. Latin names are read without regard to
#: case. Numbers 1..6 (art. 1 1) "Número") are read as they are.
FIGURE_NAMES: dict[str, int] = {
    **{name: n for name, (n, _) in FIGURES.items()},
    "peixe": 1, "camarão": 2, "camarao": 2, "cabaço": 3, "cabaco": 3, "moeda": 4,
    "caranguejo": 5, "galo": 6,
    "魚": 1, "蝦": 2, "葫蘆": 3, "金錢": 4, "蟹": 5, "雞": 6,
}  # fmt: skip
FACE_FIGURE = {n: name for name, (n, _) in FIGURES.items()}
FACE_COLOUR = {n: colour for _, (n, colour) in FIGURES.items()}
COLOURS = ("red", "green", "blue")

#: Art. 6 10): prize of a total bet.
TOTAL_ODDS = {4: 50, 17: 50, 5: 18, 16: 18, 6: 14, 15: 14, 7: 12, 14: 12, 8: 8, 13: 8,
              9: 6, 10: 6, 11: 6, 12: 6}  # fmt: skip


@dataclass(frozen=True, slots=True)
class FishPrawnCrabRules:
    """59/2004 fixes every prize; its only house options (art. 8) concern the
    material and the initial operation (art. 1-2), which the rules core does not see."""


_BET_TYPES = (
    BetType("small", "Pequeno (total 4-10)", "59/2004 art. 5 1), art. 6 1), art. 7", "1:1, loses on three equal figures"),
    BetType("big", "Grande (total 11-17)", "59/2004 art. 5 2), art. 6 2), art. 7", "1:1, loses on three equal figures"),
    BetType("figure", "Figura (a chosen figure on any die)", "59/2004 art. 5 3), art. 6 3)", "1, 2 or 3 times by dice showing it"),
    BetType("one_colour", "Um dado da cor escolhida (exactly one)", "59/2004 art. 5 4), art. 6 4)", "1:1"),
    BetType("two_colour", "Dois dados da cor escolhida (exactly two)", "59/2004 art. 5 5), art. 6 5)", "3:1"),
    BetType("three_colour", "Três dados da cor escolhida", "59/2004 art. 5 6), art. 6 6)", "20:1"),
    BetType("any_three_colour", "Três dados da mesma cor (any colour)", "59/2004 art. 5 7), art. 6 7)", "7:1"),
    BetType("specific_triple", "Três dados com a figura escolhida", "59/2004 art. 5 8), art. 6 8)", "150:1"),
    BetType("any_triple", "Três dados com igual figura (any figure)", "59/2004 art. 5 9), art. 6 9)", "24:1"),
    BetType("total", "Números (total 4-17)", "59/2004 art. 5 10), art. 6 10)", "50/18/14/12/8/6:1"),
)  # fmt: skip

_FIXED_ODDS = {"small": 1, "big": 1, "one_colour": 1, "two_colour": 3, "three_colour": 20,
               "any_three_colour": 7, "specific_triple": 150, "any_triple": 24}  # fmt: skip


def _figure(selection: JSON, bet_type: str) -> str:
    require(
        isinstance(selection, str) and selection in FIGURES,
        f"{bet_type}: selection must be a figure ({', '.join(FIGURES)}), got {selection!r}",
    )
    assert isinstance(selection, str)
    return selection


def normalize_fpc_outcome(raw: JSON) -> JSON:
    """The outcome with every die read by its figure's name turned into its number.

    ``{"dice": ["fish", "crab", "rooster"]}``, ``["peixe", 5, "galo"]`` and
    ``{"dice": [1, 5, 6]}`` are the same throw (59/2004 art. 1 1)). This is the one
    place an outcome's figures are read, whatever door it came through (CLI, MQTT, the
    shaker's faces, the journal's published form)."""
    dice = raw.get("dice") if isinstance(raw, dict) else raw
    if not isinstance(dice, list) or not any(isinstance(d, str) for d in dice):
        return raw
    faces: list[JSON] = []
    unknown = []
    for d in dice:
        if isinstance(d, str):
            n = FIGURE_NAMES.get(d.strip().lower(), FIGURE_NAMES.get(d.strip()))
            if n is None:
                unknown.append(d)
            faces.append(n)
        else:
            faces.append(d)
    if unknown:
        raise OutcomeError(
            f"fish-prawn-crab: unknown figure(s) {unknown}; a die is a number 1..6 or one of "
            f"{', '.join(FIGURES)} (59/2004 art. 1 1); the Portuguese and Chinese names too)"
        )
    return dict(raw, dice=faces) if isinstance(raw, dict) else faces


def parse_fpc_outcome(raw: JSON) -> ThreeDice:
    """Dice as faces 1..6 or figure names: ``{"dice": [1, 5, 6]}`` or ``["fish", "crab", "rooster"]``."""
    return parse_dice(
        normalize_fpc_outcome(raw), "fish-prawn-crab", frozenset({"figures", "colours", "total"})
    )


# -- what people see, and how a demonstration plays it ------------------------------------
def _board_areas() -> tuple[Area, ...]:
    """Every area of the layout, each the bet of art. 5 it shows, in the default lamp
    order (59/2004 art. 1 1): the figures in the order of their numbers)."""
    out = [Area("small", "small"), Area("big", "big")]
    out += [Area(f, "figure", f) for f in FIGURES]
    out += [Area(f"{w}-{c}", f"{w}_colour", c) for c in COLOURS for w in ("one", "two", "three")]
    out += [Area("any-three-colour", "any_three_colour")]
    out += [Area(f"triple-{f}", "specific_triple", f) for f in FIGURES]
    out += [Area("any-triple", "any_triple")]
    out += [Area(f"total-{t}", "total", t) for t in range(4, 18)]
    return tuple(out)


_DEMO_KINDS = (
    "small", "big", "figure", "figure", "figure", "one_colour", "two_colour", "three_colour",
    "any_three_colour", "specific_triple", "any_triple", "total",
)  # fmt: skip


def demo_bet(rules: FishPrawnCrabRules, rng: Rng) -> tuple[str, JSON]:
    """One bet anywhere on the layout, as a player places it."""
    figures = list(FIGURES)
    kind = rng.choice(_DEMO_KINDS)
    return kind, {
        "figure": rng.choice(figures),
        "specific_triple": rng.choice(figures),
        "total": rng.randint(4, 17),
        "one_colour": rng.choice(COLOURS),
        "two_colour": rng.choice(COLOURS),
        "three_colour": rng.choice(COLOURS),
    }.get(kind)


def _words(o: Any) -> str:
    dice = " ".join(str(d) for d in o["dice"])
    return f"dice {dice}, total {o['total']} {' '.join(o.get('figures', []))}".rstrip()


class FishPrawnCrab(DiscreteGame[FishPrawnCrabRules, ThreeDice]):
    game_id = "fish-prawn-crab"
    result_device = "shaker"
    device_kinds = frozenset({"shaker", "board"})
    title = "Fish-prawn-crab"
    regulation = "59/2004"
    rules_type = FishPrawnCrabRules
    display = Display(
        Board("fish-prawn-crab", _board_areas()),
        dice_statistics,
        words=_words,
        short=lambda o: "/".join(o["figures"]),
    )
    demo = Demo(bet=demo_bet)

    def bet_types(self, rules: FishPrawnCrabRules) -> Sequence[BetType]:
        return _BET_TYPES

    def canonical_selection(
        self, rules: FishPrawnCrabRules, bet_type: str, selection: JSON
    ) -> JSON:
        if bet_type in ("small", "big", "any_three_colour", "any_triple"):
            require(selection is None, f"{bet_type}: takes no selection, got {selection!r}")
            return None
        if bet_type in ("figure", "specific_triple"):
            return _figure(selection, bet_type)
        if bet_type in ("one_colour", "two_colour", "three_colour"):
            require(
                isinstance(selection, str) and selection in COLOURS,
                f"{bet_type}: selection must be a colour ({', '.join(COLOURS)}), got {selection!r}",
            )
            return selection
        if bet_type == "total":
            require(
                isinstance(selection, int)
                and not isinstance(selection, bool)
                and 4 <= selection <= 17,
                f"total: selection must be a total 4..17, got {selection!r}",
            )
            return selection
        raise InvalidSelection(f"unknown fish-prawn-crab bet type {bet_type!r}")  # pragma: no cover

    def parse_outcome(self, rules: FishPrawnCrabRules, raw: JSON) -> ThreeDice:
        given = normalize_fpc_outcome(raw)
        throw = parse_dice(given, "fish-prawn-crab", frozenset({"figures", "colours", "total"}))
        check_derived(given, self.outcome_json(throw), "fish-prawn-crab")
        return throw

    def same_outcome(self, rules: FishPrawnCrabRules, a: ThreeDice, b: ThreeDice) -> bool:
        # The three dice are not told apart: every bet is decided by the faces shown
        # (59/2004 art. 5-6), whichever die shows them.
        return sorted(a.dice) == sorted(b.dice)

    def outcome_json(self, outcome: ThreeDice) -> JSON:
        return {
            "dice": list(outcome.dice),
            "figures": [FACE_FIGURE[d] for d in outcome.dice],
            "colours": [FACE_COLOUR[d] for d in outcome.dice],
            "total": outcome.total,
        }

    def verdict(self, rules: FishPrawnCrabRules, outcome: ThreeDice, bet: Bet) -> Verdict:
        t, sel = bet.bet_type, bet.selection
        colours = [FACE_COLOUR[d] for d in outcome.dice]
        if t in ("small", "big"):
            if outcome.is_triple:
                return Verdict.lose("three equal figures: small and big lose (59/2004 art. 7)")
            lo, hi = (4, 10) if t == "small" else (11, 17)
            return Verdict.win(1) if lo <= outcome.total <= hi else Verdict.lose()
        if t == "figure":
            n = outcome.count(FIGURES[sel][0])
            return Verdict.win(n) if n else Verdict.lose()
        if t in ("one_colour", "two_colour", "three_colour"):
            want = {"one_colour": 1, "two_colour": 2, "three_colour": 3}[t]
            return Verdict.win(_FIXED_ODDS[t]) if colours.count(sel) == want else Verdict.lose()
        if t == "any_three_colour":
            return Verdict.win(7) if len(set(colours)) == 1 else Verdict.lose()
        if t == "specific_triple":
            return Verdict.win(150) if outcome.count(FIGURES[sel][0]) == 3 else Verdict.lose()
        if t == "any_triple":
            return Verdict.win(24) if outcome.is_triple else Verdict.lose()
        if t == "total":
            return Verdict.win(TOTAL_ODDS[sel]) if outcome.total == sel else Verdict.lose()
        raise InvalidSelection(f"unknown fish-prawn-crab bet type {t!r}")  # pragma: no cover

    def outcome_space(self, rules: FishPrawnCrabRules) -> Sequence[tuple[ThreeDice, Fraction]]:
        return throw_space()

    def math_bets(self, rules: FishPrawnCrabRules) -> Sequence[tuple[str, Any]]:
        bets: list[tuple[str, Any]] = [("small", None), ("big", None), ("figure", "fish")]
        bets += [(t, "red") for t in ("one_colour", "two_colour", "three_colour")]
        bets += [("any_three_colour", None), ("specific_triple", "crab"), ("any_triple", None)]
        bets += [("total", t) for t in range(4, 18)]
        return bets


GAME = FishPrawnCrab()
