"""Roulette, fantan and dice statistics of the last rounds, as pure functions.

What boards show and pit staff expect over a window of the last settled rounds: the
last results, hot and cold numbers, and the counts behind the percentages (red/black,
odd/even, low/high, dozens and columns for roulette; totals, triples, big/small and
faces for dice). Only counts are computed: a percentage is a display figure, made by
the display from a count and ``rounds`` (the payload stays exact: integers).

The kind of statistics follows the table's result layout (``state.layout_of``): a
roulette, fantan, sic bo or fish-prawn-crab table; baccarat's figures are its roads
(``board`` topic).

Definitions (60/2004 art. 6 for the roulette chances, 57/2004 art. 5 and 7 for sic
bo): red and black as on the wheel (``colour`` in the outcome), zero neither;
odd/even, low (1-18)/high (19-36), dozens (1-12, 13-24, 25-36) and columns (1, 4, 7...;
2, 5, 8...; 3, 6, 9...) leave zero out too. Dice: small is a total of 4 to 10 and big
11 to 17, a triple neither (art. 7); odd/even by the total.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..jsonio import JSON

#: Hot and cold numbers shown.
HOT_COLD = 5


def ranked(
    counts: Mapping[int, int], recency: Mapping[int, int], n: int
) -> tuple[list[int], list[int]]:
    """Hot: the ``n`` numbers hit most (a tie goes to the one hit more recently); cold:
    the ``n`` hit least (a tie goes to the one waiting longest). ``recency``: rounds
    since each number was last hit (absent: not in the window)."""
    never = 10**9
    hot = sorted(counts, key=lambda k: (-counts[k], recency.get(k, never), k))
    cold = sorted(counts, key=lambda k: (counts[k], -recency.get(k, never), k))
    return hot[:n], cold[:n]


def _numbers(
    outcomes: Sequence[Mapping[str, Any]], numbers: range, last: int, hot_cold: int
) -> dict[str, JSON]:
    seen = [int(o["number"]) for o in outcomes]
    counts = Counter({k: 0 for k in numbers})
    counts.update(seen)
    recency: dict[int, int] = {}
    for i, n in enumerate(seen):
        recency.setdefault(n, i)
    hot, cold = ranked(counts, recency, hot_cold)
    return {
        "last": list(seen[:last]),
        "counts": {str(k): counts[k] for k in numbers},
        "hot": list(hot),
        "cold": list(cold),
        "since": {str(k): recency.get(k) for k in numbers},
    }


def roulette(
    outcomes: Sequence[Mapping[str, Any]], *, last: int = 20, hot_cold: int = HOT_COLD
) -> dict[str, JSON]:
    """``outcomes`` newest first (``{"number", "colour"}``)."""
    out = _numbers(outcomes, range(37), last, hot_cold)
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


def fantan(
    outcomes: Sequence[Mapping[str, Any]], *, last: int = 20, hot_cold: int = 2
) -> dict[str, JSON]:
    """``outcomes`` newest first (``{"number": 1..4}``)."""
    out = _numbers(outcomes, range(1, 5), last, hot_cold)
    ns = [int(o["number"]) for o in outcomes]
    out["chances"] = {"odd": sum(n % 2 for n in ns), "even": sum(1 - n % 2 for n in ns)}
    return out


def dice(
    outcomes: Sequence[Mapping[str, Any]], *, last: int = 20, hot_cold: int = HOT_COLD
) -> dict[str, JSON]:
    """``outcomes`` newest first (``{"dice": [a, b, c]}``): sic bo and fish-prawn-crab."""
    throws = [[int(d) for d in o["dice"]] for o in outcomes]
    totals = Counter(sum(t) for t in throws)
    triples = [t[0] for t in throws if len(set(t)) == 1]
    faces = Counter(f for t in throws for f in set(t))  # throws showing each face
    plain = [sum(t) for t in throws if len(set(t)) > 1]
    return {
        "last": [list(t) for t in throws[:last]],
        "totals": {str(k): totals[k] for k in range(3, 19)},
        "triples": {"any": len(triples), **{str(k): triples.count(k) for k in range(1, 7)}},
        "doubles": sum(len(set(t)) == 2 for t in throws),
        "faces": {str(k): faces[k] for k in range(1, 7)},
        "chances": {
            "small": sum(4 <= s <= 10 for s in plain),
            "big": sum(11 <= s <= 17 for s in plain),
            "odd": sum(sum(t) % 2 for t in throws),
            "even": sum(1 - sum(t) % 2 for t in throws),
        },
    }


#: Layout -> its statistics.
KINDS: dict[str, Callable[..., dict[str, JSON]]] = {
    "roulette": roulette,
    "fantan": fantan,
    "sicbo": dice,
    "fish-prawn-crab": dice,
}


def statistics(
    layout: str, outcomes: Sequence[Mapping[str, Any]], *, last: int = 20
) -> dict[str, JSON] | None:
    """The statistics of a ``layout`` table over ``outcomes`` (newest first), or None
    where the layout has none."""
    kind = KINDS.get(layout)
    return None if kind is None else kind(outcomes, last=last)
