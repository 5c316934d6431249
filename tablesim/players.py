"""Simulated players for ``tablectl demo`` and the benchmarks: random *valid* bets.

Seeded, so a demo run can be replayed. Each bet is built from the game's own
catalogue (every bet type with a sample selection) and checked with the rules core
before it is sent, exactly as the floor would send it over ``bets/request``.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from firmware_host.config import TableConfig
from firmware_host.games.errors import BetError
from firmware_host.jsonio import JSON


def _roulette(rng: random.Random) -> tuple[str, JSON]:
    kind = rng.choice(
        [
            "straight",
            "split",
            "street",
            "corner",
            "line",
            "column",
            "dozen",
            "red",
            "black",
            "even",
            "odd",
            "low",
            "high",
            "sector12",
        ]
    )
    n = rng.randint(1, 36)
    if kind == "straight":
        return kind, [rng.randint(0, 36)]
    if kind == "split":
        if n % 3 and rng.random() < 0.5:
            return kind, [n, n + 1]
        return kind, [n, n + 3] if n <= 33 else [n - 3, n]
    if kind == "street":
        a = 3 * rng.randint(0, 11) + 1
        return kind, [a, a + 1, a + 2]
    if kind == "corner":
        a = 3 * rng.randint(0, 10) + rng.randint(1, 2)
        return kind, [a, a + 1, a + 3, a + 4]
    if kind == "line":
        a = 3 * rng.randint(0, 10) + 1
        return kind, list(range(a, a + 6))
    if kind in ("column", "dozen"):
        return kind, rng.randint(1, 3)
    if kind == "sector12":
        return kind, rng.randint(1, 2)
    return kind, None


def _sicbo(rng: random.Random) -> tuple[str, JSON]:
    kind = rng.choice(
        [
            "small",
            "big",
            "small",
            "big",
            "single",
            "total",
            "even",
            "odd",
            "any_triple",
            "specific_triple",
            "two_dice",
            "specific_double",
            "three_specified",
            "four_numbers",
            "double_single",
        ]
    )
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


def _fish_prawn_crab(rng: random.Random) -> tuple[str, JSON]:
    figures = ["fish", "prawn", "gourd", "coin", "crab", "rooster"]
    colours = ["red", "green", "blue"]
    kind = rng.choice(
        [
            "small",
            "big",
            "figure",
            "figure",
            "figure",
            "one_colour",
            "two_colour",
            "three_colour",
            "any_three_colour",
            "specific_triple",
            "any_triple",
            "total",
        ]
    )
    return kind, {
        "figure": rng.choice(figures),
        "specific_triple": rng.choice(figures),
        "total": rng.randint(4, 17),
        "one_colour": rng.choice(colours),
        "two_colour": rng.choice(colours),
        "three_colour": rng.choice(colours),
    }.get(kind)


def _fantan(rng: random.Random) -> tuple[str, JSON]:
    kind = rng.choice(["fan", "nim", "nga", "sam_hong", "kwok"])
    n = rng.sample([1, 2, 3, 4], 4)
    return kind, {
        "fan": n[0],
        "nim": {"win": n[0], "push": n[1]},
        "nga": {"win": n[:2], "push": n[2]},
        "sam_hong": n[:3],
        "kwok": n[:2],
    }[kind]


def _baccarat(rng: random.Random) -> tuple[str, JSON]:
    return rng.choice(
        ["player", "banker", "player", "banker", "tie", "player_pair", "banker_pair"]
    ), None


SAMPLERS: dict[str, Callable[[random.Random], tuple[str, JSON]]] = {
    "roulette": _roulette,
    "sicbo": _sicbo,
    "fish-prawn-crab": _fish_prawn_crab,
    "fantan": _fantan,
    "baccarat": _baccarat,
}


class SimulatedPlayers:
    """Random valid bet requests for one table."""

    def __init__(self, cfg: TableConfig, seed: int = 1, seats: int = 7) -> None:
        self.cfg = cfg
        self.game = cfg.game
        self.rng = random.Random(seed)
        self.seats = seats
        self._n = 0
        self._catalogue: list[tuple[str, JSON]] = []
        sample_bets = getattr(self.game, "demo_bets", None) or getattr(self.game, "math_bets", None)
        if sample_bets is not None:
            self._catalogue = list(sample_bets(cfg.rules))

    def _stake(self, bet_type: str) -> int:
        lim = self.cfg.limits
        lo, hi = lim.per_bet_type.get(bet_type, (lim.min_stake, lim.max_stake))
        unit = self.cfg.money.payable_unit
        hi = min(hi or lo * 20, lo * 20)
        lo_units = -(-lo // unit)
        hi_units = max(lo_units, hi // unit)
        return self.rng.randint(lo_units, hi_units) * unit

    def one(self, round_tag: str = "") -> dict[str, JSON]:
        """One bet (as the ``bet`` object of a ``bets/request``), valid for this table."""
        for _ in range(100):
            sampler = SAMPLERS.get(self.cfg.game_id)
            if sampler is not None:
                bet_type, selection = sampler(self.rng)
            elif self._catalogue:
                bet_type, selection = self.rng.choice(self._catalogue)
            else:
                raise BetError(f"no bet catalogue for {self.cfg.game_id}", code="NOT_SUPPORTED")
            self._n += 1
            raw = {
                "bet_id": f"{round_tag}p{self._n}",
                "seat": self.rng.randint(1, self.seats),
                "bet_type": bet_type,
                "selection": selection,
                "stake": self._stake(bet_type),
            }
            try:
                self.game.parse_bet(self.cfg.rules, raw, self.cfg.limits)
            except BetError:
                continue
            return raw
        raise BetError(f"could not draw a valid bet for {self.cfg.game_id}", code="NOT_SUPPORTED")

    def many(self, n: int, round_tag: str = "") -> list[dict[str, JSON]]:
        return [self.one(round_tag) for _ in range(n)]
