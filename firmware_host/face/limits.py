"""The table's limits, as its players must see them: the retained ``limits`` topic.

Every result board casinos buy shows the table's minimum and maximum per bet type with
the currency. The table knows them (``[limits]``, ``docs/configuration.md``) and, until
now, said them to nobody: a display had to be configured twice. :class:`TableLimits`
publishes them once at start-up, and again when they changed (a ``SIGHUP`` reload
applies new limits to the next bet: they are published when the next round opens).

What is published is the table's own reading of its limits, bet type by bet type, in
the order the game lists its bet types (``Game.bet_types``), each with the regulation's
title and article and what it pays, so that a display needs no copy of the rules: the
minimum and maximum a bet of that type is accepted with (``Limits.check``: the bet
type's own, else the table's), in minor units of the table's currency; and the rules in
force as every round carries them (``rules``: the roulette's sectors, the pay table), so
that a screen can show what the regulation leaves to the house.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from ..games.base import Game, Limits
from ..games.money import MoneyRules
from ..journal import RoundRecord
from ..jsonio import JSON
from ..table.extension import TableExtension, TableExtensions
from ..table.phase import Phase

log = logging.getLogger(__name__)


def limits_body(
    game: Game[Any, Any], rules: Any, limits: Limits, money: MoneyRules, name: str = ""
) -> dict[str, JSON]:
    """The ``limits`` topic's body (``limits.json`` without its common head)."""
    rows: list[JSON] = []
    for bt in game.bet_types(rules):
        lo, hi = limits.per_bet_type.get(bt.name, (limits.min_stake, limits.max_stake))
        rows.append(
            {
                "bet_type": bt.name,
                "title": bt.title,
                "article": bt.article,
                "pays": bt.pays,
                "min": lo,
                "max": hi,
            }
        )
    return {
        "game": game.game_id,
        "name": name,
        "currency": money.currency,
        "minor_digits": money.minor_digits,
        "payable_unit": money.payable_unit,
        "min_stake": limits.min_stake,
        "max_stake": limits.max_stake,
        "bet_types": rows,
        "rules": game.rules_json(rules),
    }


class TableLimits(TableExtension):
    """Publishes the table's limits (``publish``: the ``limits`` topic's body) now, and
    when betting opens if they changed since (``limits``: the limits in force)."""

    name = "limits"

    def __init__(
        self,
        extensions: TableExtensions,
        *,
        game: Game[Any, Any],
        rules: Any,
        money: MoneyRules,
        limits: Callable[[], Limits],
        publish: Callable[[Mapping[str, JSON]], None],
        name: str = "",
    ) -> None:
        self.game, self.rules, self.money, self.table_name = game, rules, money, name
        self.limits = limits
        self.publish = publish
        self.shown: Limits | None = None
        self._show()
        extensions.add(self)

    def _show(self) -> None:
        now = self.limits()
        if now == self.shown:
            return
        try:
            self.publish(limits_body(self.game, self.rules, now, self.money, self.table_name))
        except Exception:  # a display must never stop the table
            log.exception("limits: publishing failed")
            return
        self.shown = now

    def phase_changed(self, phase: Phase, rnd: RoundRecord | None) -> None:
        if phase is Phase.OPEN:
            self._show()
