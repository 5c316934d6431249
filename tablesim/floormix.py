"""A floor as Macau plays it (issue 36): tables of each game at the game's own pace,
rounds of 7 to 60 bets, for the emulated tables (:mod:`tablesim.emulator`).

**The games and their paces** (coups an hour, from the issue: what the floors play):
mini-baccarat 140-200, baccarat about 72, squeeze baccarat about 50, blackjack 50-70,
roulette about 38. Each table draws its own pace in its game's range.

**The share of each game among the tables** is an assumption, stated here and in
``docs/performance.md``: baccarat in its forms dominates a Macau floor (the city's
gaming revenue is mostly baccarat), so the default mix (:data:`MACAU_MIX`) is
mini-baccarat 40%, baccarat 35%, squeeze baccarat 10%, blackjack 10%, roulette 5%.
At these shares a table plays 106 rounds an hour on average: the city's 6,000 tables
about 177 rounds a second, inside the issue's 100-330. Another mix is a list of
:class:`GameShare`.

**Rounds of 7 to 60 bets.** The recorded rounds (``tests/golden``, real settlements
from the demo) carry 4 to 7 bets; a round of ``n`` bets is a recorded one with its bets
repeated (:func:`scaled_round`): copies of a seat's bet are the bets placed behind that
seat's player, or on a fast-action terminal, with their own ids; the totals are the
sums of the bets again, as the table computes them (checked against every recorded
round: ``tests/floor_ingest/test_floormix.py``). The size of each round is drawn
uniformly between 7 and 60 (the issue's range: a 28-position fast-action baccarat table
up to 60 players).
"""

from __future__ import annotations

import copy
import random
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from firmware_host.games.edges import theo_minor
from firmware_host.games.money import fraction_str

#: The fewest and the most bets a round carries (the issue's range).
BETS = (7, 60)


@dataclass(frozen=True, slots=True)
class GameShare:
    """One kind of table in a floor's mix: its name (``mini-baccarat``), the game it
    plays (the recorded rounds used: ``baccarat``), its share of the tables, and its
    pace in coups an hour (each table draws one in the range)."""

    name: str
    game: str
    share: float
    per_hour: tuple[float, float]


#: The default mix (see the module docstring: the shares are an assumption).
MACAU_MIX: tuple[GameShare, ...] = (
    GameShare("mini-baccarat", "baccarat", 0.40, (140.0, 200.0)),
    GameShare("baccarat", "baccarat", 0.35, (72.0, 72.0)),
    GameShare("squeeze-baccarat", "baccarat", 0.10, (50.0, 50.0)),
    GameShare("blackjack", "blackjack", 0.10, (50.0, 70.0)),
    GameShare("roulette", "roulette", 0.05, (38.0, 38.0)),
)


@dataclass(frozen=True, slots=True)
class TablePlan:
    """One emulated table of a floor: its id, its kind (``mini-baccarat``), the game of
    its rounds (``baccarat``) and its pace (rounds an hour)."""

    table_id: str
    kind: str
    game: str
    per_hour: float

    @property
    def period_s(self) -> float:
        return 3600.0 / self.per_hour


def plan_floor(
    n: int,
    mix: Sequence[GameShare] = MACAU_MIX,
    *,
    seed: int = 36,
    prefix: str = "mo",
    per_hour: float | None = None,
) -> list[TablePlan]:
    """``n`` tables in the proportions of ``mix`` (largest remainders: the counts add up
    to ``n``), each with its pace drawn in its game's range (``per_hour``: every table
    at that pace instead, e.g. 200 an hour for the outage of ``docs/performance.md``).
    Ids ``<prefix>-<kind initials>-<nnnnn>``; the same arguments give the same plan."""
    if n < 0:
        raise ValueError(f"a floor of {n} tables")
    total = sum(g.share for g in mix)
    if not mix or total <= 0:
        raise ValueError("an empty mix")
    exact = [n * g.share / total for g in mix]
    counts = [int(x) for x in exact]
    by_remainder = sorted(range(len(mix)), key=lambda i: exact[i] - counts[i], reverse=True)
    for i in by_remainder[: n - sum(counts)]:
        counts[i] += 1
    rng = random.Random(seed)
    plans: list[TablePlan] = []
    for g, count in zip(mix, counts, strict=True):
        tag = "".join(w[0] for w in g.name.split("-")).upper()
        for _ in range(count):
            pace = per_hour if per_hour is not None else rng.uniform(*g.per_hour)
            plans.append(TablePlan(f"{prefix}-{tag}-{len(plans):05d}", g.name, g.game, pace))
    # Interleaved, so that the first tables of a floor are not all of one game.
    rng.shuffle(plans)
    return plans


def rounds_per_second(plans: Sequence[TablePlan]) -> float:
    return sum(p.per_hour for p in plans) / 3600.0


def scaled_round(doc: dict[str, Any], n_bets: int) -> dict[str, Any]:
    """The recorded round ``doc`` with ``n_bets`` bets: its bets repeated in order, each
    copy with its own id (``<id>x<k>``), the totals summed again from the bets (the
    table's own rule: stakes, payout, net, commission, breakage and the exact theoretical
    win are sums, the theoretical win rounded once; the house's
    net is minus the players'). A round of fewer bets keeps its first ``n_bets``."""
    bets = doc.get("bets")
    if not isinstance(bets, list) or not bets:
        raise ValueError("a recorded round without bets")
    if n_bets < 1:
        raise ValueError(f"a round of {n_bets} bets")
    out = copy.deepcopy(doc)
    made: list[dict[str, Any]] = []
    for i in range(n_bets):
        bet = copy.deepcopy(bets[i % len(bets)])
        k = i // len(bets)
        if k:
            bet["bet_id"] = f"{bet['bet_id']}x{k}"
        made.append(bet)
    out["bets"] = made
    out["totals"] = {**(out.get("totals") or {}), **totals_of(out)}
    return out


def totals_of(doc: dict[str, Any]) -> dict[str, Any]:
    """The totals a round's bets add up to (what :func:`scaled_round` writes)."""
    bets = doc["bets"]
    net = sum(int(b["net"]) for b in bets)
    theo: dict[str, Any] = {}
    if any("theo_exact" in b for b in bets):  # payload version 7 (issue 34)
        exact = sum((Fraction(str(b.get("theo_exact", "0"))) for b in bets), Fraction(0))
        theo = {"theo_exact": fraction_str(exact), "theo": theo_minor(exact)}
    return {
        **theo,
        "stakes": sum(int(b["stake"]) for b in bets),
        "payout": sum(int(b["payout"]) for b in bets),
        "net": net,
        "commission": sum(int(b["commission"]) for b in bets),
        "house_net": -net,
        "breakage": str(sum((Fraction(str(b["breakage"])) for b in bets), Fraction(0))),
    }


__all__ = [
    "BETS",
    "MACAU_MIX",
    "GameShare",
    "TablePlan",
    "plan_floor",
    "rounds_per_second",
    "scaled_round",
    "totals_of",
]
