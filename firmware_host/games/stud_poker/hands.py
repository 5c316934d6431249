"""Five-card stud hands (61/2004 art. 4, art. 8): every hand a distinct integer value
consistent with art. 8, the art. 4 order of suits (spades > hearts > clubs >
diamonds) deciding what ranks leave equal, so two hands dealt from one deck never tie;
see ``docs/rules/stud-poker.md`` for how the order is completed between hands that
cannot meet in one deal (they share a card). Also the croupier's qualification (art.
9 1)) and the exact count of each jackpot hand."""

from __future__ import annotations

import itertools
import math as _math
from collections.abc import Sequence

from ..cards import Card, cards_str
from ..errors import OutcomeError

# -- five-card hand values (art. 4, art. 8) -------------------------------------------

#: Categories, lowest first (art. 8 10) .. 1)).
CATEGORIES = (
    "high_card",
    "one_pair",
    "two_pairs",
    "three_of_a_kind",
    "straight",
    "flush",
    "full_house",
    "four_of_a_kind",
    "straight_flush",
    "royal_flush",
)
HIGH_CARD, ONE_PAIR, TWO_PAIRS, THREE_OF_A_KIND, STRAIGHT, FLUSH = range(6)
FULL_HOUSE, FOUR_OF_A_KIND, STRAIGHT_FLUSH, ROYAL_FLUSH = range(6, 10)

#: Art. 4 1): suits in increasing order (index = strength).
SUIT_ORDER = "DCHS"
#: Rank index 0..12 is 2..A (art. 4 2)); card code = rank index * 4 + suit index.
RANK_CHARS = "23456789TJQKA"

_M52 = (1 << 52) - 1
_M39 = (1 << 39) - 1
_CAT_SHIFT = 69
_CLASS_SHIFT = 56
# Each card adds: its own bit (the 52-bit hand mask), 1 to its rank's 3-bit count
# (bits 52..90) and 1 to its suit's 3-bit count (bits 91..102).
_V = tuple((1 << c) | (1 << (52 + 3 * (c >> 2))) | (1 << (91 + 3 * (c & 3))) for c in range(52))
_FLUSH5 = frozenset(5 << (3 * s) for s in range(4))


_RANK_BASE = {rank: ((rank - 2) % 13) * 4 for rank in range(1, 14)}
_SUIT_INDEX = {suit: i for i, suit in enumerate(SUIT_ORDER)}


def card_code(card: Card) -> int:
    """0..51: rank index (2 = 0 .. ace = 12) times 4 plus suit index (D C H S)."""
    return _RANK_BASE[card.rank] + _SUIT_INDEX[card.suit]


def code_card(code: int) -> Card:
    return Card(((code >> 2) + 1) % 13 + 1, SUIT_ORDER[code & 3])


def _is_straight(ranks: Sequence[int]) -> int | None:
    """Highest rank index of a straight of five distinct ranks (desc), or None.
    Art. 4 3): in 5-4-3-2-A the ace is the lowest card, so the five is highest."""
    if ranks[0] - ranks[4] == 4:
        return ranks[0]
    if list(ranks) == [12, 3, 2, 1, 0]:
        return 3
    return None


def _classes() -> tuple[dict[int, tuple[int, int]], dict[int, tuple[int, int]]]:
    """Build the lookup tables: rank-count key -> (value base, shift of the nibble
    whose suits decide first), for non-flush and flush hands."""
    entries: list[tuple[int, tuple[int, ...], bool, int, int]] = []
    for combo in itertools.combinations_with_replacement(range(12, -1, -1), 5):
        counts: dict[int, int] = {}
        for r in combo:
            counts[r] = counts.get(r, 0) + 1
        if max(counts.values()) > 4:
            continue
        key = sum(1 << (3 * r) for r in combo)
        groups = sorted(counts.items(), key=lambda rc: (-rc[1], -rc[0]))
        order = tuple(r for r, _ in groups)
        shape = tuple(n for _, n in groups)
        if len(shape) == 5:  # five ranks, already in decreasing order
            high = _is_straight(combo)
            if high is not None:
                entries.append((STRAIGHT, (high,), False, key, high))
                sf = ROYAL_FLUSH if high == 12 else STRAIGHT_FLUSH
                entries.append((sf, (high,), True, key, high))
            else:
                entries.append((HIGH_CARD, order, False, key, order[0]))
                entries.append((FLUSH, order, True, key, order[0]))
            continue
        cat = {
            (4, 1): FOUR_OF_A_KIND,
            (3, 2): FULL_HOUSE,
            (3, 1, 1): THREE_OF_A_KIND,
            (2, 2, 1): TWO_PAIRS,
            (2, 1, 1, 1): ONE_PAIR,
        }[shape]
        entries.append((cat, order, False, key, order[0]))
    entries.sort(key=lambda e: (e[0], e[1]))
    plain: dict[int, tuple[int, int]] = {}
    flush: dict[int, tuple[int, int]] = {}
    for index, (cat, _order, is_flush, key, first) in enumerate(entries):
        base = (cat << _CAT_SHIFT) | (index << _CLASS_SHIFT)
        (flush if is_flush else plain)[key] = (base, 4 * first)
    return plain, flush


_PLAIN, _FLUSH = _classes()


def hand_value_codes(a: int, b: int, c: int, d: int, e: int) -> int:
    """The value of five distinct card codes: higher is better, never equal for two
    different hands. Bits: category (69+), rank class (56..68), the suits of the
    deciding card or group (52..55), then the hand's card mask (0..51)."""
    s = _V[a] + _V[b] + _V[c] + _V[d] + _V[e]
    mask = s & _M52
    if (s >> 91) in _FLUSH5:
        base, sh = _FLUSH[(s >> 52) & _M39]
    else:
        base, sh = _PLAIN[(s >> 52) & _M39]
    return base | (((mask >> sh) & 15) << 52) | mask


def hand_value(cards: Sequence[Card]) -> int:
    """Value of a five-card hand (art. 8), see :func:`hand_value_codes`."""
    if len(cards) == 5:
        a, b, c, d, e = (_RANK_BASE[x.rank] + _SUIT_INDEX[x.suit] for x in cards)
        if len({a, b, c, d, e}) == 5:
            return hand_value_codes(a, b, c, d, e)
    raise OutcomeError(
        f"a stud hand is five different cards, got {cards_str(cards)}", code="HAND_INVALID"
    )


def category(value: int) -> int:
    return value >> _CAT_SHIFT


def category_name(value: int) -> str:
    return CATEGORIES[value >> _CAT_SHIFT]


def compare(a: Sequence[Card], b: Sequence[Card]) -> int:
    """1 if hand ``a`` beats ``b``, -1 if it loses, 0 only for the same cards."""
    va, vb = hand_value(a), hand_value(b)
    return (va > vb) - (va < vb)


#: Art. 9 1): the croupier opens with at least ace-king (A-K-4-3-2 is the lowest).
QUALIFY = _PLAIN[(1 << 36) + (1 << 33) + (1 << 6) + (1 << 3) + 1][0]


def qualifies(value: int) -> bool:
    return value >= QUALIFY


def describe(cards: Sequence[Card]) -> str:
    v = hand_value(cards)
    return f"{category_name(v).replace('_', ' ')} ({' '.join(cards_str(cards))})"


def hand_counts() -> dict[str, int]:
    """Exact number of five-card hands of each jackpot category out of C(52, 5)."""
    c = _math.comb
    straights = 10
    return {
        "royal_flush": 4,
        "straight_flush": 4 * (straights - 1),
        "four_of_a_kind": 13 * 48,
        "full_house": 13 * c(4, 3) * 12 * c(4, 2),
        "flush": 4 * c(13, 5) - 4 * straights,
    }
