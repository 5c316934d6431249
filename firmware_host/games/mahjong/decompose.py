"""Is a hand complete (135/91/M art. 4), and every way it can be read.

``is_complete`` is the fast check (it is benchmarked): the tiles of each suit are
tested once per distinct suit pattern, the answer memoised, and the pair can only
sit in the one suit (or the honours) whose tile count is 2 modulo 3. The exact
greedy test of a suit takes, from its lowest tile, a pung when there are three or
more and then as many chows as tiles are left: three chows 1-2-3 use the same
tiles as pungs of 1, 2 and 3, so nothing is lost by preferring the pung.

``decompositions`` lists every reading of the concealed tiles into sets and a
pair; the scorer picks the best one (art. 6 counts sets, so readings can differ).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from .tiles import N_KINDS, ORPHANS

Kind = Literal["chow", "pung", "kong"]


@dataclass(frozen=True, slots=True, order=True)
class Group:
    """One set of a hand: a chow (``tile`` is its lowest), a pung or a kong.

    ``exposed``: laid open on the table after claiming a discard (chow, pung, open
    kong). ``declared``: laid on the table at all (exposed sets and concealed kongs);
    a set read out of the concealed tiles is neither. ``source`` is the seat whose
    discard completed an exposed set, when known.
    """

    kind: Kind
    tile: int
    exposed: bool = False
    declared: bool = False
    source: int | None = None

    def tiles(self) -> tuple[int, ...]:
        if self.kind == "chow":
            return (self.tile, self.tile + 1, self.tile + 2)
        return (self.tile,) * (4 if self.kind == "kong" else 3)

    @property
    def is_triplet(self) -> bool:
        """A pung or a kong ("qualquer conjunto de 4 pedras iguais é considerado como
        sendo conjunto de 3", art. 5 (a) (5))."""
        return self.kind != "chow"


@dataclass(frozen=True, slots=True)
class Reading:
    """One way to read the concealed tiles: a pair and sets (none for 13 orphans)."""

    pair: int | None
    sets: tuple[Group, ...]
    thirteen_orphans: bool = False


@lru_cache(maxsize=1 << 16)
def _suit_sets(key: tuple[int, ...]) -> bool:
    """The nine counts of one suit split exactly into pungs and chows."""
    c = list(key)
    for i in range(9):
        n = c[i]
        if n >= 3:
            n -= 3
        if n:
            if i > 6 or c[i + 1] < n or c[i + 2] < n:
                return False
            c[i + 1] -= n
            c[i + 2] -= n
    return True


@lru_cache(maxsize=1 << 16)
def _suit_sets_pair(key: tuple[int, ...]) -> bool:
    """The nine counts of one suit split exactly into sets and one pair."""
    for i in range(9):
        if key[i] >= 2:
            c = list(key)
            c[i] -= 2
            if _suit_sets(tuple(c)):
                return True
    return False


def is_complete(counts: Sequence[int], n_sets: int) -> bool:
    """``n_sets`` sets and one pair exactly (art. 4 (a) with 4, (b) with 1)."""
    pair_seen = False
    for t in range(27, N_KINDS):
        n = counts[t]
        if n == 2:
            if pair_seen:
                return False
            pair_seen = True
        elif n not in (0, 3):
            return False
    total = 0
    for base in (0, 9, 18):
        key = tuple(counts[base : base + 9])
        s = sum(key)
        total += s
        r = s % 3
        if r == 0:
            if s and not _suit_sets(key):
                return False
        elif r == 2:
            if pair_seen or not _suit_sets_pair(key):
                return False
            pair_seen = True
        else:
            return False
    total += sum(counts[27:N_KINDS])
    return pair_seen and total == 3 * n_sets + 2


def is_thirteen_orphans(counts: Sequence[int]) -> bool:
    """One of each terminal and honour plus a second of any of them (art. 6 (a) (3))."""
    if sum(counts) != 14:
        return False
    return all(counts[t] >= 1 for t in ORPHANS) and sum(counts[t] for t in ORPHANS) == 14


def decompositions(counts: Sequence[int]) -> list[Reading]:
    """Every distinct reading of ``counts`` as sets and exactly one pair."""
    found: set[tuple[int | None, tuple[Group, ...]]] = set()
    work = list(counts)

    def walk(start: int, pair: int | None, sets: list[Group]) -> None:
        i = start
        while i < N_KINDS and work[i] == 0:
            i += 1
        if i == N_KINDS:
            if pair is not None:
                found.add((pair, tuple(sorted(sets))))
            return
        if pair is None and work[i] >= 2:
            work[i] -= 2
            walk(i, i, sets)
            work[i] += 2
        if work[i] >= 3:
            work[i] -= 3
            sets.append(Group("pung", i))
            walk(i, pair, sets)
            sets.pop()
            work[i] += 3
        if i < 27 and i % 9 <= 6 and work[i + 1] and work[i + 2]:
            for t in (i, i + 1, i + 2):
                work[t] -= 1
            sets.append(Group("chow", i))
            walk(i, pair, sets)
            sets.pop()
            for t in (i, i + 1, i + 2):
                work[t] += 1

    walk(0, None, [])
    return [Reading(pair, sets) for pair, sets in sorted(found, key=_order)]


def _order(item: tuple[int | None, tuple[Group, ...]]) -> tuple[int, tuple[tuple[str, int], ...]]:
    pair, sets = item
    return (pair if pair is not None else -1, tuple((g.kind, g.tile) for g in sets))


def counts_of(tiles: Sequence[int]) -> list[int]:
    counts = [0] * N_KINDS
    for t in tiles:
        counts[t] += 1
    return counts
