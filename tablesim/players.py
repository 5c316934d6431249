"""Simulated players for ``tablectl demo`` and the benchmarks: random *valid* bets.

Seeded, so a demo run can be replayed. Each bet is the one the game describes a player
placing (``Game.demo.bet``: a bet type and selection drawn with the players' generator),
or else one of its house-edge catalogue (``math_bets``), with a seat and a stake within
the table's limits, checked with the rules core before it is sent, exactly as the floor
would send it over ``bets/request``.
"""

from __future__ import annotations

import random

from firmware_host.config import TableConfig
from firmware_host.games.errors import BetError
from firmware_host.jsonio import JSON


class SimulatedPlayers:
    """Random valid bet requests for one table."""

    def __init__(self, cfg: TableConfig, seed: int = 1, seats: int = 7) -> None:
        self.cfg = cfg
        self.game = cfg.game
        self.rng = random.Random(seed)
        self.seats = seats
        self._n = 0
        self._draw = self.game.demo.bet
        self._catalogue: list[tuple[str, JSON]] = []
        catalogue = getattr(self.game, "math_bets", None)
        if self._draw is None and catalogue is not None:
            self._catalogue = list(catalogue(cfg.rules))

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
            if self._draw is not None:
                bet_type, selection = self._draw(self.cfg.rules, self.rng)
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
