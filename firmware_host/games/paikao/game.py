"""The P'ai Kao game: the outcome's JSON, each place against the banker by the annex
(art. 6-8), the player-banked settlement of :mod:`firmware_host.games.banker`, the
inspector's reading of a hand, and the exact house edge of one place against the
banker."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from ..banker import (
    COMMISSION_RATE,
    DEMO_CAPITAL,
    DEMO_TABLE,
    BankerGame,
    PlaceVerdict,
    declared_round,
    hands_words,
    one_place_lines,
    parse_hands_outcome,
)
from ..base import JSON, Bet, MathLine, MathReport
from ..describe import Demo, DemoRound, Display, Rng
from ..errors import OutcomeError, RulesError
from ..money import MoneyRules, fraction_str
from .deal import PaiKaoDeal, PaiKaoOutcome
from .rules import PLACES, REGULATION, TILES_PER_GAME, PaiKaoRules
from .tiles import FULL_SET, HandValue, Tile, check_set, evaluate, hand_key, parse_tiles


def _why(place: HandValue, banker: HandValue) -> tuple[bool, str]:
    kp, kb = place.key, banker.key
    wins = kp > kb
    who = "place" if wins else "banker"
    vs = f"{place.describe()} against the banker's {banker.describe()}"
    if kp == kb:
        if place.combination is not None:
            return False, f"{vs}: equal combinations, the banker wins (195/92/M art. 8)"
        if place.points == 0:
            return False, f"{vs}: zero against zero, the banker wins (195/92/M art. 8)"
        return False, f"{vs}: equal points and equal high tiles, the banker wins (195/92/M art. 8)"
    if place.combination is not None or banker.combination is not None:
        return wins, f"{vs}: {who} wins (195/92/M art. 6 (a), annex)"
    if kp[1] != kb[1]:
        return wins, f"{vs}: {who} wins (195/92/M art. 6 (b), art. 7)"
    return wins, f"{vs}: equal points, the higher tile wins: {who} (195/92/M art. 7)"


def parse_outcome_json(rules: PaiKaoRules, raw: JSON) -> PaiKaoOutcome:
    what = "paikao outcome"
    data, setup, hands = parse_hands_outcome(
        raw,
        what=what,
        places=PLACES,
        default_casino_capital=rules.casino_co_bank,
        declaration_allowed=False,
        key="tiles",
        noun="tile",
        parse_items=parse_tiles,
        article="195/92/M art. 2 (d)",
        extra_keys=frozenset({"set_game", "first_game_tiles"}),
    )
    set_game = data.get("set_game", 1)
    if set_game not in (1, 2) or isinstance(set_game, bool):
        raise OutcomeError(
            f"{what}: set_game is 1 or 2 (a set serves two games, art. 2 (a)), got {set_game!r}",
            code="SET_GAME_INVALID",
        )
    first: tuple[Tile, ...] = ()
    if "first_game_tiles" in data:
        if set_game != 2:
            raise OutcomeError(
                f"{what}: first_game_tiles only belong to the second game of a set",
                code="SET_GAME_INVALID",
            )
        first = tuple(parse_tiles(data["first_game_tiles"], f"{what}: first_game_tiles"))
        if len(first) != TILES_PER_GAME:
            raise OutcomeError(
                f"{what}: the first game of a set used {TILES_PER_GAME} tiles, got {len(first)}",
                code="SET_GAME_INVALID",
            )
    check_set([*first, *(t for ts in hands for t in ts)], what)
    return PaiKaoOutcome(setup, hands, set_game, first)


def demo_declared(
    rules: PaiKaoRules, rng: Rng, rnd: DemoRound
) -> tuple[list[dict[str, JSON]], JSON]:
    """The first game of a set dealt by hand from the shuffled 32 tiles and declared by
    the inspector, through the game's own deal (the dice shaken, then two tiles a
    place, art. 2 (b)-(d))."""

    def start(banker: int, bets: list[Bet], dice: list[int]) -> PaiKaoDeal:
        return PaiKaoDeal.start(
            rules, banker=banker, banker_capital=DEMO_CAPITAL, casino_capital=0, set_game=1
        )

    return declared_round(GAME, rules, rng, rnd, FULL_SET, start)


class PaiKao(BankerGame[PaiKaoRules, PaiKaoOutcome]):
    game_id = "paikao"
    title = "P'ai Kao de 2 pedras"
    regulation = REGULATION
    rules_type = PaiKaoRules
    display = Display(words=hands_words)
    demo = Demo(table=DEMO_TABLE, declared=demo_declared)
    place_article = "195/92/M art. 5 (c), art. 6-8, art. 9"
    co_bank_article = "195/92/M art. 5 (e), art. 9"

    def places(self, rules: PaiKaoRules) -> int:
        return PLACES

    def parse_outcome(self, rules: PaiKaoRules, raw: JSON) -> PaiKaoOutcome:
        return parse_outcome_json(rules, raw)

    def sample_outcomes(self, rules: Any) -> list[PaiKaoOutcome]:
        """The documented example (docs/rules), for the contract tests."""
        example = {
            "banker": 1,
            "banker_capital": 100000,
            "casino_capital": 0,
            "dice": [1, 2, 3, 3],
            "set_game": 1,
            "hands": {
                "1": ["6/6", "1/6"],
                "2": ["2/4", "1/2"],
                "3": ["3/3", "1/3"],
                "4": ["5/5", "4/6"],
                "5": ["1/1", "3/5"],
                "6": ["4/5", "2/3"],
                "7": ["2/2", "5/6"],
                "8": ["1/5", "3/4"],
            },
        }
        return [self.parse_outcome(rules, example)]

    def outcome_json(self, outcome: PaiKaoOutcome) -> JSON:
        out = outcome.setup.to_json()
        del out["declared"]  # never allowed (art. 2 (c))
        out["set_game"] = outcome.set_game
        if outcome.first_game_tiles:
            out["first_game_tiles"] = [str(t) for t in outcome.first_game_tiles]
        out["hands"] = {str(p): [str(t) for t in h] for p, h in enumerate(outcome.hands, 1)}
        return out

    def place_verdicts(self, rules: PaiKaoRules, outcome: PaiKaoOutcome) -> Sequence[PlaceVerdict]:
        b = evaluate(*outcome.hand(outcome.setup.banker))
        out = []
        for p in range(1, PLACES + 1):
            if p == outcome.setup.banker:
                continue
            v = evaluate(*outcome.hand(p))
            wins, why = _why(v, b)
            out.append(PlaceVerdict(p, wins, why, v.to_json()))
        return out

    def banker_detail(self, rules: PaiKaoRules, outcome: PaiKaoOutcome) -> Mapping[str, JSON]:
        return evaluate(*outcome.hand(outcome.setup.banker)).to_json()

    def score_report(
        self, rules: PaiKaoRules, raw: JSON, money: MoneyRules | None = None
    ) -> tuple[dict[str, JSON], str]:
        """``tablectl score paikao --hand '["2/4", "5/6"]'``: what two tiles are worth."""
        tiles = parse_tiles(raw, "hand")
        if len(tiles) != 2:
            raise OutcomeError(f"a hand is two tiles, got {len(tiles)}", code="HAND_SIZE")
        check_set(tiles, "hand")
        v = evaluate(tiles[0], tiles[1])
        return v.to_json(), f"{tiles[0]} + {tiles[1]}: {v.describe()}"

    def math(self, rules: PaiKaoRules, **options: Any) -> MathReport:
        if options:
            raise RulesError(
                f"paikao math is an exact enumeration of the 32-tile set; it takes no options "
                f"({sorted(options)})",
                code="MATH_OPTION_UNSUPPORTED",
            )
        e = enumerate_one_place()
        (pe, pd), (be, bd) = one_place_lines(e["place"])
        lines = (
            MathLine("place", None, pe, pd,
                     note="a unit on one place against the banker, capital not reached"),
            MathLine("banker", None, be, bd, note="the banker against a unit on one place"),
        )  # fmt: skip
        details: dict[str, JSON] = {
            "enumeration": (
                "every deal of 2 tiles to the banker and 2 to one place from the 32-tile set "
                f"({e['deals']} deals, each equally likely)"
            ),
            "p_place_wins": fraction_str(e["place"]),
            "p_banker_wins": fraction_str(1 - e["place"]),
            "p_banker_wins_equal": fraction_str(e["equal"]),
            "p_banker_wins_zero_zero": fraction_str(e["zero_zero"]),
            "commission_rate": fraction_str(COMMISSION_RATE),
            "note": "the same for the second game of a set: unconditionally its 16 tiles are "
            "16 tiles drawn at random from the set (art. 2 (a))",
        }
        return MathReport(self.game_id, self.rules_json(rules), "exact", lines, details)


def enumerate_one_place() -> dict[str, Any]:
    """Count every deal of two tiles to the banker and two to one place (32-tile set)."""
    idx_pairs = list(itertools.combinations(range(len(FULL_SET)), 2))
    keys = {(i, j): hand_key(FULL_SET[i], FULL_SET[j]) for i, j in idx_pairs}
    win = eq = zz = deals = 0
    for pi, pj in idx_pairs:
        kp = keys[pi, pj]
        for bi, bj in idx_pairs:
            if bi in (pi, pj) or bj in (pi, pj):
                continue
            deals += 1
            kb = keys[bi, bj]
            if kp > kb:
                win += 1
            elif kp == kb:
                eq += 1
                if kp == (0, 0, 0):
                    zz += 1
    return {
        "deals": deals,
        "place": Fraction(win, deals),
        "equal": Fraction(eq, deals),
        "zero_zero": Fraction(zz, deals),
    }


GAME = PaiKao()
