"""The table's extension point: what follows the rounds without taking part in them.

An extension (the jackpot display today, the result board next) subclasses
:class:`TableExtension`, overrides the hooks it needs and registers itself with the
table's :class:`TableExtensions` (passed to its constructor). The round engine calls
the hooks after each committed change; the daemon calls :meth:`TableExtension.tick`
periodically. A hook runs on the event loop and must not block; one that raises is
logged and never stops the table (a display is never a reason to refuse a round).

Hooks:

- :meth:`~TableExtension.phase_changed` ``(phase, round)``: after every phase change
  (betting open, closed, a round finished -> ``idle``);
- :meth:`~TableExtension.round_settled` ``(payload)``: a round settled, with the
  payload published on ``rounds`` (``docs/mqtt.md``: outcome, bets, totals, jackpot);
- :meth:`~TableExtension.round_voided` ``(payload)``: a round voided, its bets refunded
  (``void_reason`` in the payload);
- :meth:`~TableExtension.bet_placed` ``(round_id, bet)``: a bet was journaled; called
  INSIDE the transaction that journals it (what the hook journals commits or rolls back
  with the bet, and from the floor with the request's answer: a retried request never
  calls it again); a storage error it meets refuses the bet;
- :meth:`~TableExtension.new_shoe` ``(data)``: a new shoe (the shoe's shuffle, or the
  ``new_shoe`` command): ``after_seq`` is the last round of the previous shoe;
- :meth:`~TableExtension.resumed` ``(resolved, history)``: after a restart, once the
  rounds a crash left unfinished are resolved (``resolved``: their payloads);
  ``history.recall(n)`` gives the journal's last ``n`` rounds, newest first, each with
  the payload it published (``settlement``), to rebuild what the extension shows;
- :meth:`~TableExtension.tick` ``()``: every :data:`TICK_SECONDS` (rate-limited
  displays flush here).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from ..games.base import Bet
from ..journal import RecalledRound, RoundRecord, StorageError
from ..jsonio import JSON
from .phase import Phase

log = logging.getLogger(__name__)

#: Interval of :meth:`TableExtension.tick`, seconds.
TICK_SECONDS = 0.25


class RoundHistory(Protocol):
    """The journal's rounds, newest first, each with the payload it published
    (``settlement``; None for a round in flight)."""

    def recall(self, n: int = 10) -> Sequence[RecalledRound]: ...


class TableExtension:
    """Base of an extension: every hook does nothing until overridden."""

    #: Names the extension in logs.
    name = "extension"

    def phase_changed(self, phase: Phase, rnd: RoundRecord | None) -> None:
        """The round's phase changed (``rnd`` is None when ``phase`` is idle)."""

    def round_settled(self, payload: Mapping[str, JSON]) -> None:
        """A round settled: ``payload`` as published on ``rounds``."""

    def round_voided(self, payload: Mapping[str, JSON]) -> None:
        """A round voided, every bet refunded: ``payload`` as published on ``rounds``."""

    def bet_placed(self, round_id: str, bet: Bet) -> None:
        """A bet was journaled in ``round_id`` (inside its transaction: see above)."""

    def new_shoe(self, data: Mapping[str, JSON]) -> None:
        """A new shoe: ``data`` as journaled (``after_seq``, ``source``, ``shuffle``)."""

    def resumed(self, resolved: Sequence[Mapping[str, JSON]], history: RoundHistory) -> None:
        """The table came back after a restart; ``resolved`` are the payloads of the
        rounds a crash left unfinished (voided), ``history`` the journal's rounds."""

    def tick(self) -> None:
        """Called every :data:`TICK_SECONDS` on the event loop."""


class TableExtensions:
    """The table's registered extensions, and the calls of their hooks."""

    def __init__(self, extensions: Iterable[TableExtension] = ()) -> None:
        self._items: list[TableExtension] = list(extensions)

    def add(self, extension: TableExtension) -> None:
        """Register ``extension`` (an extension calls this from its own constructor)."""
        self._items.append(extension)

    def __iter__(self) -> Iterable[TableExtension]:
        return iter(list(self._items))

    def _each(self, hook: str, *args: Any) -> None:
        for ext in list(self._items):
            try:
                getattr(ext, hook)(*args)
            except Exception:  # a display must never stop the table
                log.exception("extension %s: %s failed", ext.name, hook)

    def phase_changed(self, phase: Phase, rnd: RoundRecord | None) -> None:
        self._each("phase_changed", phase, rnd)

    def round_settled(self, payload: Mapping[str, JSON]) -> None:
        self._each("round_settled", payload)

    def round_voided(self, payload: Mapping[str, JSON]) -> None:
        self._each("round_voided", payload)

    def bet_placed(self, round_id: str, bet: Bet) -> None:
        for ext in list(self._items):
            try:
                ext.bet_placed(round_id, bet)
            except StorageError:
                raise  # the transaction cannot commit: the bet is refused, nothing acted
            except Exception:
                log.exception("extension %s: bet_placed failed", ext.name)

    def new_shoe(self, data: Mapping[str, JSON]) -> None:
        self._each("new_shoe", data)

    def resumed(self, resolved: Sequence[Mapping[str, JSON]], history: RoundHistory) -> None:
        self._each("resumed", resolved, history)

    def tick(self) -> None:
        self._each("tick")

    async def run_ticks(self, interval: float = TICK_SECONDS) -> None:
        """Call every extension's :meth:`~TableExtension.tick` until cancelled."""
        while True:
            await asyncio.sleep(interval)
            self.tick()
