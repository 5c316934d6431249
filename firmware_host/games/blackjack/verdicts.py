"""What each blackjack bet wins: a hand against the dealer (art. 9-11, 15, 18, 19),
the side bets (art. 13, 14), insurance (art. 12); and who decides for a place that
several bettors share (art. 20)."""

from __future__ import annotations

from collections.abc import Sequence

from ..base import Bet
from ..cards import Card
from ..errors import BetError
from ..money import Verdict
from .deal import Hand, Place
from .rules import (
    BLACKJACK_ODDS,
    EVEN_MONEY_ODDS,
    FIVE_CARD_ODDS,
    INSURANCE_ODDS,
    OVER_UNDER_ODDS,
    PAIR_ODDS,
    SEVENS_ODDS,
    SPECIAL_PRIZE_ODDS,
    SURRENDER_LOSS,
    BlackjackRules,
    card_points,
    hand_total,
    is_natural,
)

# -- verdicts ------------------------------------------------------------------------


def hand_verdicts(
    rules: BlackjackRules, dealer: Sequence[Card], hand: Hand
) -> tuple[Verdict, Verdict]:
    """(verdict of the hand's base stake, verdict of its doubled stake).

    The second is only used when ``hand.doubled``.
    """
    st = hand.status
    if st == "special":
        v = Verdict.win(
            SPECIAL_PRIZE_ODDS, reason="suited 6-7-8 or three 7s, paid at once (56/2004 art. 15)"
        )
        return v, v
    if st == "even_money":
        v = Verdict.win(EVEN_MONEY_ODDS, reason="blackjack took even money (56/2004 art. 10 3))")
        return v, v
    if st == "five_card":
        v = Verdict.win(FIVE_CARD_ODDS, reason="five cards, half the stake (56/2004 art. 19 1))")
        return v, v
    if st == "surrendered":
        v = Verdict.lose("surrender: half the stake (56/2004 art. 18 1))", SURRENDER_LOSS)
        return v, v
    total = hand.total
    if st == "bust" or total > 21:
        v = Verdict.lose(f"bust with {total} (56/2004 art. 7 2))")
        return v, v
    dealer_bj = is_natural(dealer)
    if hand.blackjack:
        if dealer_bj:
            v = Verdict.push("blackjack against blackjack (56/2004 art. 11 1))")
        else:
            v = Verdict.win(BLACKJACK_ODDS, reason="blackjack (56/2004 art. 10 2), 5))")
        return v, v
    if dealer_bj:
        v = Verdict.lose(
            "dealer blackjack takes every bet without a blackjack (56/2004 art. 12 2), art. 10 6))"
        )
        if rules.double_loss_limited:
            return v, Verdict.push(
                "dealer blackjack: the doubled stake is returned (56/2004 art. 10 7))"
            )
        return v, v
    d_total = hand_total(dealer)[0]
    if d_total > 21:
        v = Verdict.win(1, reason=f"dealer busts with {d_total} (56/2004 art. 9, art. 7 2))")
    elif total > d_total:
        v = Verdict.win(1, reason=f"{total} against {d_total} (56/2004 art. 9, art. 10 4))")
    elif total == d_total:
        v = Verdict.push(f"{total} against {d_total} (56/2004 art. 11 2))")
    else:
        v = Verdict.lose(f"{total} against {d_total} (56/2004 art. 9)")
    return v, v


def pair_verdict(place: Place) -> Verdict:
    """Any pair: 11:1 for the first two cards and again for each later pair (art. 13 1), 14 1))."""
    if place.pairs:
        return Verdict.win(
            PAIR_ODDS * place.pairs,
            reason=f"{place.pairs} pair(s) x 11:1 (56/2004 art. 13 1), art. 14 1))",
        )
    return Verdict.lose("no pair (56/2004 art. 13 1))")


def sevens_verdict(place: Place) -> Verdict:
    """Sevens: two 7s as the first two cards; three when they are split and the next
    card is a 7; only the highest combination pays (art. 13 2), art. 14 2))."""
    d = place.dealt
    if len(d) < 2 or d[0].rank != 7 or d[1].rank != 7:
        return Verdict.lose("the first two cards are not two 7s (56/2004 art. 13 2))")
    sevens = d[:2]
    if place.opening_split and len(d) >= 3 and d[2].rank == 7:
        sevens = d[:3]
    suited = len({c.suit for c in sevens}) == 1
    odds = SEVENS_ODDS[(len(sevens), suited)]
    kind = "of one suit" if suited else "not all of one suit"
    return Verdict.win(odds, reason=f"{len(sevens)} sevens {kind} (56/2004 art. 14 2))")


def over_under_total(place: Place) -> int:
    """The first two cards' points with an ace counting one (see the docs)."""
    return sum(card_points(c) for c in place.dealt[:2])


def over_under_verdict(place: Place, selection: str) -> Verdict:
    total = over_under_total(place)
    won = total > 13 if selection == "over" else total < 13
    if won:
        return Verdict.win(
            OVER_UNDER_ODDS, reason=f"first two cards {total} (56/2004 art. 13 3), art. 14 3))"
        )
    return Verdict.lose(f"first two cards {total} (56/2004 art. 13 3))")


def insurance_verdict(dealer: Sequence[Card]) -> Verdict:
    if is_natural(dealer):
        return Verdict.win(INSURANCE_ODDS, reason="dealer blackjack (56/2004 art. 12 2))")
    return Verdict.lose("no dealer blackjack (56/2004 art. 12 3))")


# -- art. 20: several bettors on one place --------------------------------------------


def deciders(rules: BlackjackRules, bets: Sequence[Bet]) -> dict[int, str]:
    """Who decides for each place (art. 20 1)), from the main bets on it.

    A main bet's selection is ``null`` for the seated player or ``"standing"`` for
    a bettor standing behind. Standing bettors are taken in the order their bets
    were placed (the floor lists the one closest to the dealer first).
    """
    by_seat: dict[int, list[Bet]] = {}
    for b in bets:
        if b.bet_type == "main":
            by_seat.setdefault(b.seat, []).append(b)
    out: dict[int, str] = {}
    for seat, mains in by_seat.items():
        seated = [b for b in mains if b.selection is None]
        if len(seated) > 1:
            raise BetError(
                f"seat {seat}: {len(seated)} main bets claim the seat; one player sits at a place "
                "(the others are 'standing', 56/2004 art. 20)",
                code="PLACE_TWO_SEATED",
            )
        if rules.shared_place == 2 and len(mains) > rules.place_limit:
            raise BetError(
                f"seat {seat}: {len(mains)} bettors on one place; at most {rules.place_limit} "
                "(56/2004 art. 20 1) (2))",
                code="PLACE_FULL",
            )
        first = seated[0] if seated else mains[0]
        if rules.shared_place == 3:
            top = max(b.stake for b in mains)
            leaders = [b for b in mains if b.stake == top]
            first = next((b for b in leaders if b.selection is None), leaders[0])
        out[seat] = first.bet_id
    return out
