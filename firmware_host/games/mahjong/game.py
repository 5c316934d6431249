"""Mah-jong as a rules-core game: rules options, outcome (the declared win),
settlement (the players' payments and the house's commission), the inspector's
score report, and a ``math`` report that says why there is no house edge.

Settlement mapping (``docs/rules/mahjong.md``): mah-jong takes no bets; the players
play against each other and the house takes a commission from the winner. A
settlement has one :class:`BetResult` per seat playing, bet type ``payment``,
``stake`` 0 (nothing is staked against the house), selection ``{"wind", "role"}``:

- the winner: ``win``, ``payout`` what he receives, ``commission`` the house's,
  ``net`` = payout - commission;
- a payer: ``lose``, ``net`` = minus what he pays; a player relieved by a liable
  discarder: ``push``;
- a false win: the false winner ``lose``, the others ``win`` with no commission.

So the players' nets plus the commission always sum to zero, and the house's net
(``totals.house_net``) is the commission. The full score (reading, patterns, fan,
payments before and after liability and cap) is in ``extras["mahjong"]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..base import (
    JSON,
    Bet,
    BetResult,
    BetType,
    Game,
    Limits,
    MathReport,
    Settlement,
    Totals,
    unit_problems,
)
from ..describe import Demo, Display
from ..errors import RulesError, UnknownBetType
from ..money import Amounts, MoneyRules
from .declared import DeclaredWin, parse_declared_win
from .patterns import Score, score_hand
from .payments import (
    COMMISSION,
    COMMISSION_ARTICLE,
    GRADES,
    Payment,
    PaymentPlan,
    commission_amount,
    effective_table,
    level_text,
    plan,
)
from .report import score_json, score_text
from .rules import MahjongRules
from .tiles import WIND_LETTERS


@dataclass(frozen=True, slots=True)
class Scored:
    """A declared win with its score and payments: what settle and score_report show."""

    win: DeclaredWin
    score: Score
    plan: PaymentPlan


# -- what people see, and how a demonstration plays it ------------------------------------
def _seat(seat: Any) -> str:
    """A seat as people are shown it: from 1 (the payload numbers them from 0, East)."""
    return str(seat + 1) if isinstance(seat, int) else "-" if seat is None else str(seat)


def _words(o: Any) -> str:
    win = o["win"]
    return (
        f"seat {_seat(o['winner'])} wins on {win['tile']} "
        f"({str(win['by']).replace('_', ' ')}), banker seat {_seat(o['banker'])}, "
        f"stake level {o['stake']}"
    )


class Mahjong(Game[MahjongRules, DeclaredWin]):
    game_id = "mahjong"
    title = "Mah-jong"
    regulation = "Portaria 135/91/M"
    rules_type = MahjongRules
    display = Display(words=_words, first_seat=0)
    #: The demo declares the sample wins in turn; no bets, the payments are the results.
    demo = Demo(table={"limits": {"min_stake": 1, "max_stake": 10**9}})

    def money_problems(self, rules: MahjongRules, money: MoneyRules) -> list[str]:
        """Every level's single shares (configured or default) are handed over between
        players as they are (135/91/M art. 7): whole numbers of the payable unit."""
        table = effective_table(rules.variant, rules.amounts, money.minor_digits)
        unit = money.payable_unit
        return unit_problems(
            [
                (f"pay_table.mahjong.amounts.{level_text(level)!r}", bad[0])
                for level, shares in table.items()
                if (bad := [a for a in shares if a % unit])
            ],
            money,
            "the players could not pay it exactly (a level not configured pays its two figures)",
        )

    # -- no bets: the players play each other --------------------------------
    def bet_types(self, rules: MahjongRules) -> Sequence[BetType]:
        return ()

    def canonical_selection(self, rules: MahjongRules, bet_type: str, selection: JSON) -> JSON:
        raise UnknownBetType(_NO_BETS)

    def parse_bet(self, rules: MahjongRules, raw: object, limits: Limits | None = None) -> Bet:
        raise UnknownBetType(_NO_BETS)

    # -- outcome ---------------------------------------------------------------
    def parse_outcome(self, rules: MahjongRules, raw: JSON) -> DeclaredWin:
        return parse_declared_win(raw, rules.variant, COMMISSION[rules.variant])

    def outcome_json(self, outcome: DeclaredWin) -> JSON:
        return outcome.to_json()

    def sample_outcomes(self, rules: MahjongRules) -> list[DeclaredWin]:
        """A few declared wins of the table's variant (contract tests, documentation)."""
        return [self.parse_outcome(rules, raw) for raw in SAMPLES[rules.variant]]

    def evaluate(self, rules: MahjongRules, win: DeclaredWin, money: MoneyRules) -> Scored:
        score = score_hand(win)
        table = effective_table(rules.variant, rules.amounts, money.minor_digits)
        payments = plan(
            win, score, table, money.minor_digits, money.payable_unit, rules.concealed_kong_in_view
        )
        return Scored(win, score, payments)

    def settle(
        self, rules: MahjongRules, outcome: DeclaredWin, bets: Sequence[Bet], money: MoneyRules
    ) -> Settlement:
        if bets:
            raise UnknownBetType(_NO_BETS)
        scored = self.evaluate(rules, outcome, money)
        results = tuple(_result(outcome, scored.plan, p) for p in scored.plan.payments)
        return Settlement(
            self.game_id,
            self.outcome_json(outcome),
            results,
            Totals.of(results),
            {"mahjong": score_json(scored.win, scored.score, scored.plan)},
        )

    def score_report(
        self, rules: MahjongRules, raw: JSON, money: MoneyRules | None = None
    ) -> tuple[dict[str, JSON], str]:
        """``tablectl score mahjong --hand JSON``: the reading, patterns, fan and payments."""
        money = money or MoneyRules()
        scored = self.evaluate(rules, self.parse_outcome(rules, raw), money)
        data = score_json(scored.win, scored.score, scored.plan)
        data["rules"] = self.rules_json(rules)
        return data, score_text(scored.win, scored.score, scored.plan, money)

    # -- math --------------------------------------------------------------------
    def math(self, rules: MahjongRules, **options: Any) -> MathReport:
        if options:
            raise RulesError(
                f"mahjong math takes no options (got {', '.join(sorted(options))}): there is "
                "nothing to simulate",
                code="MATH_OPTION_UNSUPPORTED",
            )
        money = MoneyRules()
        table = effective_table(rules.variant, rules.amounts, money.minor_digits)
        grades = GRADES[rules.variant]
        levels = []
        for level in COMMISSION[rules.variant]:
            shares = table[level]
            commission = commission_amount(rules.variant, level, money.minor_digits)
            # A kai vu won by a player other than the banker, four players: 1 + 1 + 2
            # shares (art. 7), the smallest a conventional win collects.
            smallest = 4 * shares[0]
            levels.append(
                {
                    "stake": level_text(level),
                    "commission": commission,
                    **{g.replace(" ", "_"): a for g, a in zip(grades, shares, strict=True)},
                    "commission_of_kai_vu_win": _per_cent(Fraction(commission, smallest)),
                }
            )
        return MathReport(
            self.game_id,
            self.rules_json(rules),
            "none",
            (),
            {
                "house_edge": None,
                "note": (
                    "mah-jong has no house edge: the players pay each other (art. 7) and the "
                    "house takes no risk; its income is the fixed commission of "
                    f"{COMMISSION_ARTICLE[rules.variant]} taken from the winner of each game. "
                    "Amounts in minor units with 2 decimal digits (MOP)."
                ),
                "commission_table": levels,
            },
        )


SAMPLES: dict[str, list[dict[str, Any]]] = {
    "conventional": [
        {
            "stake": "25/50",
            "banker": 0,
            "winner": 1,
            "round_wind": "E",
            "concealed": "12m 456p 789s 222p 55m",
            "win": {"tile": "3m", "by": "discard", "from": 3},
        },
        {
            "stake": "100/200",
            "banker": 2,
            "winner": 2,
            "round_wind": "S",
            "concealed": "23m 99m",
            "melds": [
                {"tiles": "111m", "from": 0},
                {"tiles": "555m", "from": 3},
                {"tiles": "8m8m8m8m", "concealed": True},
            ],
            "win": {"tile": "4m", "by": "kong_replacement"},
            "capital": 500000,
        },
        {
            "stake": "25/50",
            "banker": 0,
            "winner": 3,
            "round_wind": "E",
            "concealed": "1m 9m 1p 9p 1s 9s E S W N RD GD WD",
            "win": {"tile": "9p", "by": "self_drawn"},
        },
        {
            "stake": "50/100",
            "banker": 0,
            "winner": 1,
            "round_wind": "E",
            "concealed": "12m 456p 789s 222p 56m",
            "win": {"tile": "3m", "by": "discard", "from": 2},
        },
    ],
    "simplified": [
        {
            "stake": "100/200",
            "seats": [0, 1, 2],
            "banker": 0,
            "winner": 2,
            "round_wind": "E",
            "concealed": "123m GD",
            "win": {"tile": "GD", "by": "discard", "from": 1, "tile_seen": True},
        },
        {
            "stake": "500/1000",
            "banker": 1,
            "winner": 1,
            "round_wind": "W",
            "concealed": "5p",
            "melds": [{"tiles": "7s7s7s7s", "concealed": True}],
            "win": {"tile": "5p", "by": "kong_replacement"},
        },
    ],
}

_NO_BETS = (
    "mah-jong takes no bets: the outcome is the declared win and the payments follow "
    "135/91/M art. 7; settle it with --bets '[]'"
)


def _per_cent(f: Fraction) -> str:
    """An exact ratio as a percentage with one decimal, rounded down (display only)."""
    tenths = f.numerator * 1000 // f.denominator
    return f"{tenths // 10}.{tenths % 10}%"


def _result(win: DeclaredWin, p: PaymentPlan, pay: Payment) -> BetResult:
    seat = pay.seat
    bet = Bet(
        f"seat-{seat}",
        seat,
        "payment",
        {"wind": WIND_LETTERS[win.wind_of(seat)], "role": pay.role},
        0,
    )
    if pay.amount > 0:
        commission = p.commission if pay.role == "winner" else 0
        amounts = Amounts("win", pay.amount, commission, pay.amount - commission, Fraction(0))
    elif pay.amount < 0:
        amounts = Amounts("lose", 0, 0, pay.amount, Fraction(0))
    else:
        amounts = Amounts("push", 0, 0, 0, Fraction(0))
    return BetResult(bet, amounts, pay.role)


GAME = Mahjong()
