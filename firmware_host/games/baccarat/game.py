"""The baccarat game: bet types (art. 13), the outcome (a finished coup, :mod:`.deal`),
settlement (art. 11, 12, 17, 18) and the exact house edges, by enumeration over the
shoe's card values.

On a tie the player and banker bets are settled as a push and the art. 12 option
(``rules.baccarat.tie_bets``) says whether they are returned, kept on the layout for
the next coup, or may be changed/switched there; ``tablectl math`` reports per-coup
edges with ties counted as pushes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from functools import lru_cache
from typing import Any, ClassVar

from ..base import (
    JSON,
    Bet,
    BetResult,
    BetType,
    Game,
    MathLine,
    MathReport,
    Settlement,
    Totals,
    require,
)
from ..cards import RANKS, cards_str, deck, parse_cards
from ..describe import Area, Board, Demo, Display, Rng
from ..edges import EdgeBasis, Verdicts, merge_verdicts
from ..errors import OutcomeError, RulesError
from ..money import MoneyRules, Verdict, settle_amounts
from .deal import BaccaratDeal, BaccaratOutcome, banker_draws, deal_coup, replay
from .rules import COMMISSION, ODDS, TIE_OPTIONS, BaccaratRules

# -- the game ------------------------------------------------------------------------

_BET_TYPES = (
    BetType("player", "Player (jogador)", "55/2004 art. 13 1), art. 17 1)", "1:1"),
    BetType("banker", "Banker (banqueiro)", "55/2004 art. 13 2), art. 17 1), art. 18",
            "1:1 less 5% of the win"),
    BetType("tie", "Tie (empate)", "55/2004 art. 13 3), art. 17 2)", "8:1"),
    BetType("player_pair", "Player pair", "55/2004 art. 13 4), art. 17 3)", "11:1"),
    BetType("banker_pair", "Banker pair", "55/2004 art. 13 4), art. 17 3)", "11:1"),
)  # fmt: skip

_OUTCOME_KEYS = frozenset({"player", "banker"})
_DERIVED_KEYS = frozenset(
    {"player_total", "banker_total", "winner", "player_pair", "banker_pair", "natural"}
)

# -- what people see, and how a demonstration plays it ------------------------------------
#: The board: the winner's area (a tie lights the tie alone: the player and banker bets
#: push, art. 12) and the pairs' (art. 13 4)); the roads of the shoe beside it.
BOARD = Board(
    "baccarat",
    (
        Area("banker", "banker"),
        Area("player", "player"),
        Area("tie", "tie"),
        Area("banker-pair", "banker_pair"),
        Area("player-pair", "player_pair"),
    ),
    roads=True,
)


def demo_bet(rules: BaccaratRules, rng: Rng) -> tuple[str, JSON]:
    """One bet on the layout, as a player places it (the banker and the player most)."""
    kinds = ["player", "banker", "player", "banker", "tie", "player_pair", "banker_pair"]
    return rng.choice(kinds), None


def _words(o: Any) -> str:
    return (
        f"player {' '.join(o['player'])} ({o['player_total']})  banker {' '.join(o['banker'])} "
        f"({o['banker_total']})  -> {o['winner']}"
    )


class Baccarat(Game[BaccaratRules, BaccaratOutcome]):
    game_id = "baccarat"
    math_options = frozenset({"decks"})
    result_device = "shoe"
    device_kinds = frozenset({"shoe", "board"})
    title = "Baccarat"
    regulation = "55/2004"
    rules_type = BaccaratRules
    display = Display(BOARD, words=_words)
    demo = Demo(bet=demo_bet)
    edge_basis: ClassVar[EdgeBasis] = "exact"

    def bet_types(self, rules: BaccaratRules) -> Sequence[BetType]:
        return _BET_TYPES if rules.pairs_offered else _BET_TYPES[:3]

    def start_deal(
        self, rules: BaccaratRules, bets: Sequence[Bet], setup: Mapping[str, JSON] | None = None
    ) -> BaccaratDeal:
        return BaccaratDeal.start(rules)

    def canonical_selection(self, rules: BaccaratRules, bet_type: str, selection: JSON) -> JSON:
        require(selection is None, f"{bet_type}: takes no selection, got {selection!r}")
        return None

    def parse_outcome(self, rules: BaccaratRules, raw: JSON) -> BaccaratOutcome:
        """``{"player": [...], "banker": [...]}``, each side's cards in dealing order.
        The derived keys of :meth:`outcome_json` are accepted when they agree."""
        if not isinstance(raw, Mapping) or not set(raw) >= _OUTCOME_KEYS:
            raise OutcomeError(
                'baccarat outcome must be {"player": ["9S", "KD"], "banker": ["5H", "2C", "TD"]}, '
                f"got {raw!r}"
            )
        unknown = set(raw) - _OUTCOME_KEYS - _DERIVED_KEYS
        if unknown:
            raise OutcomeError(f"unknown key(s) in baccarat outcome: {', '.join(sorted(unknown))}")
        for side in ("player", "banker"):
            if not isinstance(raw[side], list) or not 2 <= len(raw[side]) <= 3:
                raise OutcomeError(
                    f"{side}: two or three cards (55/2004 art. 7, 9), got {raw[side]!r}"
                )
        outcome = replay(parse_cards(raw["player"]), parse_cards(raw["banker"])).outcome()
        derived = self.outcome_json(outcome)
        for key in _DERIVED_KEYS & set(raw):
            if raw[key] != derived[key]:
                raise OutcomeError(
                    f"{key}: {raw[key]!r} does not match the cards ({derived[key]!r})"
                )
        return outcome

    def outcome_json(self, outcome: BaccaratOutcome) -> JSON:
        return {
            "player": cards_str(outcome.player),
            "banker": cards_str(outcome.banker),
            "player_total": outcome.player_total,
            "banker_total": outcome.banker_total,
            "winner": outcome.winner,
            "player_pair": outcome.player_pair,
            "banker_pair": outcome.banker_pair,
            "natural": outcome.natural,
        }

    def sample_outcomes(self, rules: BaccaratRules) -> list[BaccaratOutcome]:
        """Coups dealt from one deck in its fixed order (for contract tests)."""
        cards, i, out = deck(), 0, []
        while i <= len(cards) - 6:
            outcome, i = deal_coup(cards, i)
            out.append(outcome)
        return out

    def verdict(self, rules: BaccaratRules, outcome: BaccaratOutcome, bet: Bet) -> Verdict:
        t, winner = bet.bet_type, outcome.winner
        if t in ("player", "banker"):
            if winner == "tie":
                return Verdict.push(f"tie: the bet is {TIE_OPTIONS[rules.tie_bets]}")
            if winner != t:
                return Verdict.lose()
            if t == "banker":
                return Verdict.win(
                    ODDS[t], COMMISSION, "5% commission on the banker's win (55/2004 art. 18)"
                )
            return Verdict.win(ODDS[t])
        if t == "tie":
            return Verdict.win(ODDS[t]) if winner == "tie" else Verdict.lose()
        if t in ("player_pair", "banker_pair"):
            pair = outcome.player_pair if t == "player_pair" else outcome.banker_pair
            return Verdict.win(ODDS[t]) if pair else Verdict.lose()
        raise RulesError(
            f"unknown baccarat bet type {t!r}", code="BET_UNKNOWN_TYPE"
        )  # pragma: no cover

    def settle(
        self, rules: BaccaratRules, outcome: BaccaratOutcome, bets: Sequence[Bet], money: MoneyRules
    ) -> Settlement:
        results = []
        for bet in bets:
            v = self.verdict(rules, outcome, bet)
            results.append(BetResult(bet, settle_amounts(bet.stake, v, money), v.reason))
        extras: dict[str, JSON] = {}
        if outcome.winner == "tie":
            extras["tie"] = {
                "rule": rules.tie_bets,
                "meaning": TIE_OPTIONS[rules.tie_bets],
                "bets_staying": []
                if rules.tie_bets == "withdraw"
                else [r.bet.bet_id for r in results if r.bet.bet_type in ("player", "banker")],
            }
        return Settlement(
            self.game_id, self.outcome_json(outcome), tuple(results), Totals.of(results), extras
        )

    def bet_edge(
        self, rules: BaccaratRules, bet: Bet, money: MoneyRules, *, jackpot_pool: int | None = None
    ) -> Fraction | None:
        """Exact, per coup, off the top of the table's full shoe (``rules.decks``): the
        coup's winner and pairs with their probabilities (:func:`main_probabilities`,
        :func:`pair_probability`), each given the game's own verdict, settled at the
        bet's stake (a tie pushes a player or banker bet, whatever art. 12 option keeps
        it on the layout for the next coup)."""
        return _bet_edge(self, rules, bet.bet_type, bet.stake, money)

    def math(self, rules: BaccaratRules, **options: Any) -> MathReport:
        """Exact house edges by enumeration over the rank counts of the shoe
        (``decks`` option overrides ``rules.decks``; 6 to 12, art. 1 1))."""
        unknown = set(options) - {"decks"}
        if unknown:
            raise RulesError(
                f"baccarat math is exact and takes only --decks, not {', '.join(sorted(unknown))}",
                code="MATH_OPTION",
            )
        decks = options.get("decks") or rules.decks
        if not isinstance(decks, int) or not 6 <= decks <= 12:
            raise RulesError(
                f"baccarat is dealt from 6 to 12 decks (55/2004 art. 1 1)), got {decks!r}",
                code="MATH_OPTION",
            )
        p_player, p_banker, p_tie = main_probabilities(decks)
        p_pair = pair_probability(decks)
        banker_net = ODDS["banker"] * (1 - COMMISSION)
        lines = [
            _line(
                "banker",
                ((banker_net, p_banker), (Fraction(0), p_tie), (Fraction(-1), p_player)),
                "ties push",
            ),
            _line(
                "player",
                ((Fraction(1), p_player), (Fraction(0), p_tie), (Fraction(-1), p_banker)),
                "ties push",
            ),
            _line("tie", ((Fraction(ODDS["tie"]), p_tie), (Fraction(-1), 1 - p_tie))),
        ]
        if rules.pairs_offered:
            for side in ("player_pair", "banker_pair"):
                lines.append(
                    _line(side, ((Fraction(ODDS[side]), p_pair), (Fraction(-1), 1 - p_pair)))
                )
        resolved = 1 - p_tie
        details = {
            "decks": decks,
            "probabilities": {
                "player": _fs(p_player),
                "banker": _fs(p_banker),
                "tie": _fs(p_tie),
                "pair": _fs(p_pair),
            },
            "edge_per_resolved_bet": {
                "banker": _fs(-(banker_net * p_banker - p_player) / resolved),
                "player": _fs(-(p_player - p_banker) / resolved),
            },
        }
        return MathReport(
            self.game_id, self.rules_json(rules) | {"decks": decks}, "exact", tuple(lines), details
        )


#: A coup of each kind the verdicts tell apart, as the game's outcome: who wins, and
#: whether a side's first two cards pair.
_COUPS = {
    "player": ("9S KS", "KH QH"),
    "banker": ("KH QH", "9S KS"),
    "tie": ("9S KS", "9H KH"),
    "pairs": ("4S 4H", "2D 2C"),
    "no_pairs": ("4S 5H", "2D 3C"),
}


@lru_cache(maxsize=4096)
def _bet_edge(
    game: Baccarat, rules: BaccaratRules, bet_type: str, stake: int, money: MoneyRules
) -> Fraction:
    """The edge of a bet of ``bet_type`` and ``stake`` (a table's stakes repeat)."""
    return _bet_verdicts(game, rules, bet_type).edge(stake, money)


@lru_cache(maxsize=64)
def _bet_verdicts(game: Baccarat, rules: BaccaratRules, bet_type: str) -> Verdicts:
    """The verdicts of a bet of ``bet_type`` with their exact probabilities."""
    coups = {k: BaccaratOutcome(tuple(parse_cards(p)), tuple(parse_cards(b)))
             for k, (p, b) in _COUPS.items()}  # fmt: skip
    bet = Bet("edge", 0, bet_type, None, 1)
    weights: tuple[tuple[str, Fraction], ...]
    if bet_type in ("player_pair", "banker_pair"):
        p = pair_probability(rules.decks)
        weights = (("pairs", p), ("no_pairs", 1 - p))
    else:
        p_player, p_banker, p_tie = main_probabilities(rules.decks)
        weights = (("player", p_player), ("banker", p_banker), ("tie", p_tie))
    return merge_verdicts((game.verdict(rules, coups[k], bet), p) for k, p in weights)


def _fs(x: Fraction) -> str:
    return f"{x.numerator}/{x.denominator}"


def _line(bet: str, outcomes: tuple[tuple[Fraction, Fraction], ...], note: str = "") -> MathLine:
    assert sum(p for _, p in outcomes) == 1
    edge = -sum((n * p for n, p in outcomes), Fraction(0))
    return MathLine(bet, None, edge, tuple(sorted(outcomes, reverse=True)), note)


# -- exact enumeration ----------------------------------------------------------------


def _shoe_values(decks: int) -> list[int]:
    """Cards of each baccarat value 0..9 in the shoe (art. 5: sixteen zeros a deck)."""
    return [16 * decks] + [4 * decks] * 9


@lru_cache(maxsize=16)
def main_probabilities(decks: int) -> tuple[Fraction, Fraction, Fraction]:
    """Exact (player wins, banker wins, tie) for a full shoe of ``decks`` decks.

    Enumerates the card *values* in dealing order with their counts. The weight of
    the four initial cards depends only on their multiset, so each side's two cards
    are taken unordered (times 2 when different). Every weight is scaled to six
    cards drawn, so all results share the denominator N(N-1)...(N-5).
    """
    counts = _shoe_values(decks)
    n = sum(counts)
    r4, r5 = n - 4, n - 5
    # (outcome index of (player final, banker final)): 0 player, 1 banker, 2 tie
    cmp = [[0 if p > b else 1 if b > p else 2 for b in range(10)] for p in range(10)]
    acc = [0, 0, 0]
    pairs = [(a, b, 1 if a == b else 2) for a in range(10) for b in range(a, 10)]
    c = counts[:]
    for p1, p2, mp in pairs:
        w = c[p1]
        c[p1] -= 1
        w *= c[p2] * mp
        c[p2] -= 1
        pt = (p1 + p2) % 10
        for b1, b2, mb in pairs:
            wb = w * c[b1]
            c[b1] -= 1
            wb *= c[b2] * mb
            c[b2] -= 1
            bt = (b1 + b2) % 10
            if wb:
                _third_cards(c, pt, bt, wb, r4, r5, cmp, acc)
            c[b2] += 1
            c[b1] += 1
        c[p2] += 1
        c[p1] += 1
    denom = n * (n - 1) * (n - 2) * (n - 3) * r4 * r5
    assert sum(acc) == denom
    return Fraction(acc[0], denom), Fraction(acc[1], denom), Fraction(acc[2], denom)


def _third_cards(
    c: list[int], pt: int, bt: int, w: int, r4: int, r5: int, cmp: list[list[int]], acc: list[int]
) -> None:
    """Add the weights of every way the coup ends from two-card totals ``pt``, ``bt``
    (``c`` holds the counts left in the shoe; ``w`` the weight of the four cards)."""
    if pt >= 8 or bt >= 8 or (pt >= 6 and bt >= 6):
        acc[cmp[pt][bt]] += w * r4 * r5
        return
    if pt >= 6:  # player stands on 6-7; banker (0-5) draws: art. 9 3) (6)
        for z in range(10):
            if c[z]:
                acc[cmp[pt][(bt + z) % 10]] += w * c[z] * r5
        return
    for x in range(10):  # player draws: art. 9 1)
        cx = c[x]
        if not cx:
            continue
        wx = w * cx
        pf = (pt + x) % 10
        if banker_draws(bt, pt, x):
            c[x] -= 1
            row = cmp[pf]
            for z in range(10):
                if c[z]:
                    acc[row[(bt + z) % 10]] += wx * c[z]
            c[x] += 1
        else:
            acc[cmp[pf][bt]] += wx * r5


@lru_cache(maxsize=16)
def pair_probability(decks: int) -> Fraction:
    """Exact probability that a side's first two cards have the same rank (art. 13 4)).

    Either side's two cards are, before anything is seen, two cards drawn from the
    full shoe, so the sum over the thirteen ranks of n_r (n_r - 1) / (N (N - 1)).
    """
    per_rank = [4 * decks] * len(RANKS)
    n = sum(per_rank)
    return Fraction(sum(k * (k - 1) for k in per_rank), n * (n - 1))


GAME = Baccarat()
