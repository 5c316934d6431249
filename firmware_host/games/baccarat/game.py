"""Baccarat (Bacará): Despacho Regulamentar Externo 55/2004.

Card values (art. 5): tens and faces count 0, the others their face value, totals
modulo 10. Two cards each, player first, alternately (art. 7 1)); at most one
more card each, player first, by the table of art. 9. The higher total wins (art.
11); equal totals are a tie (art. 12). Bets (art. 13): player and banker 1:1, the
banker's winnings less 5% commission (art. 17 1), art. 18); tie 8:1 (art. 17 2));
player pair and banker pair 11:1 when the side's first two cards have the same rank
(J-J is a pair, J-Q is not; art. 13 4), art. 17 3)).

A shoe drives a coup through :class:`BaccaratDeal`: ``expect()`` says which side
the next card goes to, or that the coup is complete; a card the rules do not allow
raises :class:`Misdeal` with a stable code and the correction art. 10 calls for
(see ``docs/rules/baccarat.md``).

Decisions where the text is silent are listed in ``docs/rules/baccarat.md``; the
main ones: on a tie the player and banker bets are settled as a push and the art.
12 option (``rules.baccarat.tie_bets``) says whether they are returned, kept on the
layout for the next coup, or may be changed/switched there; ``tablectl math``
reports per-coup edges with ties counted as pushes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any, Literal

from ..base import (
    JSON,
    Bet,
    BetResult,
    BetType,
    Deal,
    Expect,
    Game,
    MathLine,
    MathReport,
    Settlement,
    Totals,
    require,
)
from ..cards import RANKS, Card, cards_str, deck, parse_cards
from ..errors import Misdeal, OutcomeError, RoundStateError, RulesError
from ..money import MoneyRules, Verdict, settle_amounts
from ..options import option

Side = Literal["player", "banker"]

#: Art. 18: 5% of the banker's winnings.
COMMISSION = Fraction(5, 100)
#: Art. 17: prizes, "to one".
ODDS: Mapping[str, int] = {"player": 1, "banker": 1, "tie": 8, "player_pair": 11, "banker_pair": 11}

#: Art. 12 options for player/banker bets when a coup ends in a tie.
TIE_OPTIONS: Mapping[str, str] = {
    "withdraw": "returned to the player (55/2004 art. 12 1))",
    "keep": "kept on the layout for the next coup (55/2004 art. 12 2))",
    "change": "kept for the next coup; the player may change the amount, up or down "
    "(55/2004 art. 12 3) (1))",
    "switch": "kept for the next coup; the player may move it between player and banker "
    "(55/2004 art. 12 3) (2))",
}


# -- card values and the drawing rules (art. 5, art. 9) ---------------------------


def card_value(card: Card) -> int:
    """Art. 5: 10, J, Q, K count 0; the others their face value (the ace 1)."""
    return card.rank if card.rank <= 9 else 0


def total(cards: Iterable[Card]) -> int:
    """Art. 5 1): combinations totalling ten count zero, i.e. the total modulo 10."""
    return sum(card_value(c) for c in cards) % 10


def player_draws(player_total: int, banker_total: int) -> bool:
    """Art. 9 1)-2): the player draws on 0-5 unless the banker has a natural (8, 9)."""
    return player_total <= 5 and banker_total <= 7


def banker_draws(banker_total: int, player_total: int, player_third: int | None) -> bool:
    """Art. 9 3)-4): does the banker draw? ``player_third`` is the *value* of the
    player's third card (0 for 10/J/Q/K, which art. 9 writes as "10"), or None when
    the player did not draw. Totals are of the first two cards."""
    if player_total >= 8 or banker_total >= 8:  # art. 9 2), 4) (5)-(6): naturals
        return False
    if player_third is None:  # art. 9 3) (6), 4) (4)-(5)
        return banker_total <= 5
    if banker_total <= 2:  # art. 9 3) (1)
        return True
    if banker_total == 3:  # art. 9 3) (2), 4) (1)
        return player_third != 8
    if banker_total == 4:  # art. 9 3) (3), 4) (2)
        return 2 <= player_third <= 7
    if banker_total == 5:  # art. 9 3) (4), 4) (3)
        return 4 <= player_third <= 7
    if banker_total == 6:  # art. 9 3) (5), 4) (4)
        return player_third in (6, 7)
    return False  # art. 9 4) (5): 7


# -- house options (art. 19) -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BaccaratRules:
    """55/2004 fixes every prize and the commission (art. 17, 18); the house chooses
    among the alternatives of art. 2, 3, 7 and 12 with the DICJ's authorisation
    (art. 19), and the number of decks (art. 1 1))."""

    decks: int = option(8, range=(6, 12), doc="Decks in the shoe", cite="55/2004 art. 1 1)")
    pairs_offered: bool = option(
        True,
        section="pay_table",
        doc="The layout offers the player pair and banker pair bets (11:1)",
        cite="55/2004 art. 13 4), art. 17 3)",
    )
    dealing: str = option(
        "shoe",
        choices=("shoe", "shuffler_dealer"),
        doc="shoe: cards from a shoe after the art. 2 1) burn; shuffler_dealer: an automatic "
        "shuffler-dealer, cards face up, no burn, returned to the machine after each coup",
        cite="55/2004 art. 1 3), art. 2 3), art. 7 2), art. 19",
    )
    burn: str = option(
        "by_decks",
        choices=("by_decks", "first_card"),
        doc="Cards burnt at the start of a shoe: by_decks burns as many cards as there are "
        "decks; first_card turns the first card and burns as many more as its face value "
        "(10, J, Q, K count 10)",
        cite="55/2004 art. 2 1), art. 19",
    )
    demo_coups: int = option(
        0,
        range=(0, 3),
        doc="Demonstration coups at the start of each shoe (no bets)",
        cite="55/2004 art. 2 2), art. 19",
    )
    last_coup: str = option(
        "cut_card_last",
        choices=("cut_card_last", "one_more"),
        doc="When the cut card comes out: cut_card_last, the coup under way is the last; "
        "one_more, one more coup is dealt",
        cite="55/2004 art. 3 1), art. 19",
    )
    burn_each_coup: bool = option(
        False,
        doc="The house burns one card at the start of each coup",
        cite="55/2004 art. 8",
    )
    tie_bets: str = option(
        "withdraw",
        choices=tuple(TIE_OPTIONS),
        doc="Player and banker bets on a tie: withdraw (returned), keep (stay for the next coup), "
        "change (stay; amount may change), switch (stay; may move to the other side)",
        cite="55/2004 art. 12, art. 19",
    )
    card_handling: bool = option(
        False,
        doc="Players may handle (squeeze) the cards: the highest seated bettor of each side",
        cite="55/2004 art. 16",
    )


def burn_count(rules: BaccaratRules, first_card: Card | None = None) -> int:
    """How many cards are burnt at the start of a shoe (art. 2 1), 3)).

    ``first_card`` is the card turned when ``burn = "first_card"``: it is burnt with
    as many more cards as its face value (10, J, Q, K count 10), so the count
    returned includes it. An automatic shuffler-dealer burns nothing (art. 2 3)).
    """
    if rules.dealing == "shuffler_dealer":
        return 0
    if rules.burn == "by_decks":
        return rules.decks
    if first_card is None:
        raise RoundStateError(
            "burn by the first card's value needs the first card (55/2004 art. 2 1))",
            code="BURN_NEEDS_FIRST_CARD",
        )
    return 1 + min(first_card.rank, 10)


def coups_after_cut_card(rules: BaccaratRules) -> int:
    """Art. 3 1): coups still dealt after the one in which the cut card appears."""
    return 1 if rules.last_coup == "one_more" else 0


# -- the deal engine ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BaccaratOutcome:
    """A finished coup: each side's cards in dealing order."""

    player: tuple[Card, ...]
    banker: tuple[Card, ...]

    @property
    def player_total(self) -> int:
        return total(self.player)

    @property
    def banker_total(self) -> int:
        return total(self.banker)

    @property
    def winner(self) -> Literal["player", "banker", "tie"]:
        """Art. 11, 12."""
        p, b = self.player_total, self.banker_total
        return "player" if p > b else "banker" if b > p else "tie"

    @property
    def player_pair(self) -> bool:
        """Art. 13 4): the first two cards have the same rank (suits irrelevant)."""
        return self.player[0].rank == self.player[1].rank

    @property
    def banker_pair(self) -> bool:
        return self.banker[0].rank == self.banker[1].rank

    @property
    def natural(self) -> bool:
        return total(self.player[:2]) >= 8 or total(self.banker[:2]) >= 8


def _due(player: tuple[Card, ...], banker: tuple[Card, ...]) -> tuple[Side | None, str]:
    """Which side the next card goes to (None: complete), and why."""
    n_p, n_b = len(player), len(banker)
    if n_p + n_b < 4:
        side: Side = "player" if n_p == n_b else "banker"
        return side, "initial cards, one at a time, player first (55/2004 art. 7 1))"
    pt, bt = total(player[:2]), total(banker[:2])
    if n_p == 2 and n_b == 2:
        if pt >= 8 or bt >= 8:
            return None, "a natural: neither side draws (55/2004 art. 9 2), 4) (6))"
        if player_draws(pt, bt):
            return "player", f"player draws on {pt} (55/2004 art. 9 1))"
        if banker_draws(bt, pt, None):
            return "banker", f"player stands on {pt}; banker draws on {bt} (55/2004 art. 9 3) (6))"
        return None, f"player stands on {pt}, banker stands on {bt} (55/2004 art. 9 2), 4) (4)-(5))"
    if n_p == 3 and n_b == 2:
        third = card_value(player[2])
        if banker_draws(bt, pt, third):
            return (
                "banker",
                f"banker draws on {bt} against a player third card of {third} (55/2004 art. 9 3))",
            )
        return (
            None,
            f"banker stands on {bt} against a player third card of {third} (55/2004 art. 9 4))",
        )
    return None, "both sides have drawn (55/2004 art. 9: one additional card at most)"


@dataclass(frozen=True, slots=True)
class BaccaratDeal(Deal):
    """The immutable state of one coup as the cards leave the shoe.

    ``set_aside`` holds cards withdrawn as an art. 10 correction (an extra card
    drawn after the coup was complete); ``void_reason`` is set when the error could
    not be corrected and the coup is null (art. 10).
    """

    player: tuple[Card, ...] = ()
    banker: tuple[Card, ...] = ()
    set_aside: tuple[Card, ...] = ()
    void_reason: str | None = None

    @staticmethod
    def start(rules: BaccaratRules | None = None) -> BaccaratDeal:
        return BaccaratDeal()

    @property
    def complete(self) -> bool:
        return self.void_reason is None and _due(self.player, self.banker)[0] is None

    def expect(self) -> Expect:
        if self.void_reason is not None:
            return Expect("void", reason=self.void_reason)
        side, reason = _due(self.player, self.banker)
        if side is None:
            return Expect("complete", reason=reason)
        return Expect("card", side, reason=reason)

    def deal(self, card: Card, to: Side | None = None) -> BaccaratDeal:
        """The next card out of the shoe; ``to`` is where the dealer placed it, if
        the shoe or the layout reports it (a mismatch is a misdeal)."""
        if self.void_reason is not None:
            raise RoundStateError(f"the coup is void: {self.void_reason}", code="ROUND_VOID")
        side, reason = _due(self.player, self.banker)
        if side is None:
            raise Misdeal(
                f"{card} dealt after the coup was complete ({reason})",
                code="MISDEAL_EXTRA_CARD",
                due=None,
                correction="withdraw the card (set_aside); the coup stands (55/2004 art. 10)",
            )
        if to is not None and to != side:
            raise Misdeal(
                f"{card} placed on the {to} side but the next card is the {side}'s ({reason})",
                code="MISDEAL_WRONG_HAND",
                due=side,
                correction=f"move the card to the {side} side: it is the {side}'s card in shoe "
                "order (55/2004 art. 10)",
            )
        if side == "player":
            return BaccaratDeal((*self.player, card), self.banker, self.set_aside)
        return BaccaratDeal(self.player, (*self.banker, card), self.set_aside)

    def set_aside_card(self, card: Card) -> BaccaratDeal:
        """Art. 10 correction: a card drawn in error is withdrawn from the coup."""
        if self.void_reason is not None:
            raise RoundStateError(f"the coup is void: {self.void_reason}", code="ROUND_VOID")
        return BaccaratDeal(self.player, self.banker, (*self.set_aside, card))

    def void(self, reason: str) -> BaccaratDeal:
        """Art. 10: the error cannot be corrected; the coup is null, every bet returned."""
        return BaccaratDeal(
            self.player, self.banker, self.set_aside, reason or "void (55/2004 art. 10)"
        )

    def outcome(self) -> BaccaratOutcome:
        if self.void_reason is not None:
            raise RoundStateError(f"the coup is void: {self.void_reason}", code="ROUND_VOID")
        if not self.complete:
            exp = self.expect()
            raise RoundStateError(
                f"the coup is not complete: the next card goes to the {exp.to} ({exp.reason})",
                code="ROUND_NOT_COMPLETE",
            )
        return BaccaratOutcome(self.player, self.banker)

    def to_json(self) -> dict[str, JSON]:
        return {
            "player": cards_str(self.player),
            "banker": cards_str(self.banker),
            "set_aside": cards_str(self.set_aside),
            "void": self.void_reason,
        }

    @staticmethod
    def from_json(rules: BaccaratRules | None, data: Mapping[str, Any]) -> BaccaratDeal:
        """Rebuild a journalled state, checking it against the rules on the way."""
        if not isinstance(data, Mapping):
            raise OutcomeError(f"a baccarat deal is a JSON object, got {data!r}")
        deal = replay(
            parse_cards(data.get("player", [])), parse_cards(data.get("banker", [])), complete=False
        )
        deal = BaccaratDeal(deal.player, deal.banker, parse_cards(data.get("set_aside", [])))
        reason = data.get("void")
        if reason is not None:
            if not isinstance(reason, str):
                raise OutcomeError(f"void must be a reason string or null, got {reason!r}")
            deal = deal.void(reason)
        return deal


def replay(
    player: Sequence[Card], banker: Sequence[Card], *, complete: bool = True
) -> BaccaratDeal:
    """Deal ``player`` and ``banker`` (each in dealing order) through the engine.

    Raises OutcomeError ``OUTCOME_DRAW_RULES`` when the cards could not have been
    dealt by art. 7 and art. 9 (a third card where the rules say stand, a missing
    one where they say draw); with ``complete`` the coup must be finished.
    """
    deal = BaccaratDeal()
    p, b = list(player), list(banker)
    while p or b:
        side, reason = _due(deal.player, deal.banker)
        src = p if side == "player" else b
        if side is None or not src:
            why = reason if side is None else f"the next card must go to the {side}"
            raise OutcomeError(
                f"player {cards_str(player)} / banker {cards_str(banker)} cannot be dealt by the "
                f"rules: {why}",
                code="OUTCOME_DRAW_RULES",
            )
        deal = deal.deal(src.pop(0), side)
    if complete and not deal.complete:
        exp = deal.expect()
        raise OutcomeError(
            f"player {cards_str(player)} / banker {cards_str(banker)} is not a finished coup: "
            f"the {exp.to} must draw ({exp.reason})",
            code="OUTCOME_DRAW_RULES",
        )
    return deal


def deal_coup(cards: Sequence[Card], start: int = 0) -> tuple[BaccaratOutcome, int]:
    """Deal one coup from ``cards`` (shoe order) from index ``start``; returns the
    outcome and the index of the next card. Raises OutcomeError if the shoe runs out."""
    deal, i = BaccaratDeal(), start
    while not deal.complete:
        if i >= len(cards):
            raise OutcomeError("the shoe ran out in the middle of a coup", code="SHOE_EMPTY")
        deal = deal.deal(cards[i])
        i += 1
    return deal.outcome(), i


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


class Baccarat(Game[BaccaratRules, BaccaratOutcome]):
    game_id = "baccarat"
    result_device = "shoe"
    device_kinds = frozenset({"shoe", "board"})
    title = "Baccarat"
    regulation = "55/2004"
    rules_type = BaccaratRules

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
