"""Cussec / sic bo: Despacho Regulamentar Externo 57/2004.

The 13 bet types of art. 5 with the prizes of art. 6; Small and Big lose on any
triple (art. 7). The house picks the prize of totals 5/16 (18 to 30 times) and 6/15
(14 to 18 times) within the ranges of art. 6 6) (2)-(3), with the regulator's
authorisation (art. 8).

Decision (art. 7 is silent on them): Even and Odd are decided by the total on a
triple too; only Small and Big are said to lose on three equal faces. By the letter
that makes Even/Odd a zero-edge bet, which ``tablectl math sicbo`` shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations
from typing import Any

from ..base import JSON, Bet, BetType, DiscreteGame, as_int_list, check_derived, require
from ..describe import Area, Board, Demo, Display, Rng
from ..dice import ThreeDice, dice_statistics, parse_dice, throw_space
from ..errors import InvalidSelection
from ..money import Verdict
from ..options import option


@dataclass(frozen=True, slots=True)
class SicboRules:
    total_5: int = option(
        18,
        section="pay_table",
        range=(18, 30),
        doc="prize (times the stake) of totals 5 and 16",
        cite="57/2004 art. 6 6) (2)",
    )
    total_6: int = option(
        14,
        section="pay_table",
        range=(14, 18),
        doc="prize (times the stake) of totals 6 and 15",
        cite="57/2004 art. 6 6) (3)",
    )

    def total_odds(self, total: int) -> int:
        """Art. 6 6): the prize of a total bet on ``total`` (4..17)."""
        return {
            4: 50, 17: 50,
            5: self.total_5, 16: self.total_5,
            6: self.total_6, 15: self.total_6,
            7: 12, 14: 12,
            8: 8, 13: 8,
            9: 6, 10: 6, 11: 6, 12: 6,
        }[total]  # fmt: skip


_BET_TYPES = (
    BetType("small", "Pequeno (total 4-10)", "57/2004 art. 5 1), art. 6 1), art. 7", "1:1, loses on a triple"),
    BetType("big", "Grande (total 11-17)", "57/2004 art. 5 2), art. 6 2), art. 7", "1:1, loses on a triple"),
    BetType("single", "Simples especificado (a face on any die)", "57/2004 art. 5 3), art. 6 3)", "1, 2 or 3 times by dice showing it"),
    BetType("specific_triple", "Tripla especificado", "57/2004 art. 5 4), art. 6 4)", "150:1"),
    BetType("any_triple", "Qualquer tripla", "57/2004 art. 5 5), art. 6 5)", "24:1"),
    BetType("total", "Total de pontos (4-17)", "57/2004 art. 5 6), art. 6 6)", "50/18-30/14-18/12/8/6:1"),
    BetType("even", "Par (even total)", "57/2004 art. 5 7), art. 6 7)", "1:1"),
    BetType("odd", "Ímpar (odd total)", "57/2004 art. 5 8), art. 6 8)", "1:1"),
    BetType("double_single", "Dupla e simples (a given pair and a given single)", "57/2004 art. 5 9), art. 6 9)", "50:1"),
    BetType("three_specified", "Três dados especificado (three given different faces)", "57/2004 art. 5 10), art. 6 10)", "30:1"),
    BetType("two_dice", "Dois dados (two given different faces)", "57/2004 art. 5 11), art. 6 11)", "5:1"),
    BetType("specific_double", "Dupla especificado (a given face on two dice)", "57/2004 art. 5 12), art. 6 12)", "8:1"),
    BetType("four_numbers", "Quatro números (three different faces among four chosen)", "57/2004 art. 5 13), art. 6 13)", "7:1"),
)  # fmt: skip

_FIXED_ODDS = {
    "small": 1, "big": 1, "specific_triple": 150, "any_triple": 24, "even": 1, "odd": 1,
    "double_single": 50, "three_specified": 30, "two_dice": 5, "specific_double": 8,
    "four_numbers": 7,
}  # fmt: skip


def _faces(selection: JSON, bet_type: str, n: int, distinct: bool = True) -> list[int]:
    faces = as_int_list(selection, bet_type)
    require(len(faces) == n, f"{bet_type}: selection must be {n} face(s) 1..6, got {selection!r}")
    require(all(1 <= f <= 6 for f in faces), f"{bet_type}: die faces are 1..6, got {selection!r}")
    if distinct:
        require(
            len(set(faces)) == n, f"{bet_type}: the {n} faces must be different, got {selection!r}"
        )
    return faces


def _face(selection: JSON, bet_type: str) -> int:
    require(
        isinstance(selection, int) and not isinstance(selection, bool) and 1 <= selection <= 6,
        f"{bet_type}: selection must be one die face 1..6, got {selection!r}",
    )
    assert isinstance(selection, int)
    return selection


def wins(rules: SicboRules, throw: ThreeDice, bet_type: str, sel: JSON) -> bool:
    """Whether a bet with canonical selection ``sel`` wins on ``throw`` (art. 5, art. 7)."""
    c = throw.counts
    if bet_type == "small":
        return 4 <= throw.total <= 10 and not throw.is_triple
    if bet_type == "big":
        return 11 <= throw.total <= 17 and not throw.is_triple
    if bet_type == "single":
        return c[sel] >= 1
    if bet_type == "specific_triple":
        return c[sel] == 3
    if bet_type == "any_triple":
        return throw.is_triple
    if bet_type == "total":
        return bool(throw.total == sel)
    if bet_type == "even":
        return throw.total % 2 == 0
    if bet_type == "odd":
        return throw.total % 2 == 1
    if bet_type == "double_single":
        pair, single = sel
        return c[pair] == 2 and c[single] == 1
    if bet_type == "three_specified":
        return all(c[f] == 1 for f in sel)
    if bet_type == "two_dice":
        return all(c[f] >= 1 for f in sel)
    if bet_type == "specific_double":
        return c[sel] >= 2
    if bet_type == "four_numbers":
        return len(c) == 3 and set(c) <= set(sel)
    raise InvalidSelection(f"unknown sic bo bet type {bet_type!r}")  # pragma: no cover


# -- what people see, and how a demonstration plays it ------------------------------------
def _board_areas() -> tuple[Area, ...]:
    """Every area of the sic bo layout, each the bet of art. 5 it shows, in the default
    lamp order. Lit when its bet wins: Even and Odd on a triple too (art. 7 names only
    Small and Big), no total area for 3 or 18 (art. 5 6): 4 to 17)."""
    faces = range(1, 7)
    out = [Area(t, t) for t in ("small", "big", "odd", "even")]
    out += [Area(f"single-{i}", "single", i) for i in faces]
    out += [Area(f"double-{i}", "specific_double", i) for i in faces]
    out += [Area(f"triple-{i}", "specific_triple", i) for i in faces]
    out += [Area("any-triple", "any_triple")]
    out += [Area(f"total-{t}", "total", t) for t in range(4, 18)]
    out += [Area(f"combo-{a}-{b}", "two_dice", [a, b]) for a, b in combinations(faces, 2)]
    out += [
        Area(f"pair-single-{a}-{b}", "double_single", [a, b])
        for a in faces
        for b in faces
        if a != b
    ]
    out += [
        Area("three-{}-{}-{}".format(*c), "three_specified", list(c))
        for c in combinations(faces, 3)
    ]
    out += [
        Area("four-{}-{}-{}-{}".format(*c), "four_numbers", list(c)) for c in combinations(faces, 4)
    ]
    return tuple(out)


_DEMO_KINDS = (
    "small", "big", "small", "big", "single", "total", "even", "odd", "any_triple",
    "specific_triple", "two_dice", "specific_double", "three_specified", "four_numbers",
    "double_single",
)  # fmt: skip


def demo_bet(rules: SicboRules, rng: Rng) -> tuple[str, JSON]:
    """One bet anywhere on the layout, as a player places it."""
    kind = rng.choice(_DEMO_KINDS)
    faces = rng.sample(range(1, 7), 4)
    return kind, {
        "single": faces[0],
        "specific_triple": faces[0],
        "specific_double": faces[0],
        "total": rng.randint(4, 17),
        "two_dice": faces[:2],
        "three_specified": faces[:3],
        "four_numbers": faces,
        "double_single": faces[:2],
    }.get(kind)


def _words(o: Any) -> str:
    dice = " ".join(str(d) for d in o["dice"])
    return f"dice {dice}, total {o['total']} {'triple' if o.get('triple') else ''}".rstrip()


class Sicbo(DiscreteGame[SicboRules, ThreeDice]):
    game_id = "sicbo"
    result_device = "shaker"
    device_kinds = frozenset({"shaker", "board"})
    title = "Cussec / Sic bo"
    regulation = "57/2004"
    rules_type = SicboRules
    display = Display(
        Board("sicbo", _board_areas()),
        dice_statistics,
        words=_words,
        short=lambda o: "".join(map(str, o["dice"])),
    )
    demo = Demo(bet=demo_bet)

    def bet_types(self, rules: SicboRules) -> Sequence[BetType]:
        return _BET_TYPES

    def canonical_selection(self, rules: SicboRules, bet_type: str, selection: JSON) -> JSON:
        if bet_type in ("small", "big", "any_triple", "even", "odd"):
            require(selection is None, f"{bet_type}: takes no selection, got {selection!r}")
            return None
        if bet_type in ("single", "specific_triple", "specific_double"):
            return _face(selection, bet_type)
        if bet_type == "total":
            require(
                isinstance(selection, int)
                and not isinstance(selection, bool)
                and 4 <= selection <= 17,
                f"total: selection must be a total 4..17, got {selection!r}",
            )
            return selection
        if bet_type == "double_single":
            # [face on two dice, face on the third]: order matters, so it is kept.
            return _faces(selection, bet_type, 2)
        if bet_type == "three_specified":
            return sorted(_faces(selection, bet_type, 3))
        if bet_type == "two_dice":
            return sorted(_faces(selection, bet_type, 2))
        if bet_type == "four_numbers":
            return sorted(_faces(selection, bet_type, 4))
        raise InvalidSelection(f"unknown sic bo bet type {bet_type!r}")  # pragma: no cover

    def parse_outcome(self, rules: SicboRules, raw: JSON) -> ThreeDice:
        throw = parse_dice(raw, "sicbo", frozenset({"total", "triple"}))
        check_derived(raw, self.outcome_json(throw), "sicbo")
        return throw

    def same_outcome(self, rules: SicboRules, a: ThreeDice, b: ThreeDice) -> bool:
        # The three dice are not told apart: every bet is decided by the faces shown
        # (57/2004 art. 6-7), whichever die shows them.
        return sorted(a.dice) == sorted(b.dice)

    def outcome_json(self, outcome: ThreeDice) -> JSON:
        return {"dice": list(outcome.dice), "total": outcome.total, "triple": outcome.is_triple}

    def verdict(self, rules: SicboRules, outcome: ThreeDice, bet: Bet) -> Verdict:
        if not wins(rules, outcome, bet.bet_type, bet.selection):
            if bet.bet_type in ("small", "big") and outcome.is_triple:
                return Verdict.lose("triple: small and big lose (57/2004 art. 7)")
            return Verdict.lose()
        if bet.bet_type == "single":
            # Art. 6 3): once, twice or three times the stake by the dice showing the face.
            return Verdict.win(outcome.count(bet.selection))
        if bet.bet_type == "total":
            return Verdict.win(rules.total_odds(bet.selection))
        return Verdict.win(_FIXED_ODDS[bet.bet_type])

    def outcome_space(self, rules: SicboRules) -> Sequence[tuple[ThreeDice, Fraction]]:
        return throw_space()

    def math_bets(self, rules: SicboRules) -> Sequence[tuple[str, Any]]:
        bets: list[tuple[str, Any]] = [("small", None), ("big", None), ("single", 1)]
        bets += [("specific_triple", 1), ("any_triple", None)]
        bets += [("total", t) for t in range(4, 18)]
        bets += [("even", None), ("odd", None), ("double_single", [1, 2])]
        bets += [("three_specified", [1, 2, 3]), ("two_dice", [1, 2]), ("specific_double", 1)]
        bets += [("four_numbers", [1, 2, 3, 4])]
        return bets


GAME = Sicbo()
